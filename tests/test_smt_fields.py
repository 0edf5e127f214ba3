"""Column transforms: replace_field, mask_field, insert_field, cast, value_to_key."""

from __future__ import annotations

import datetime as dt
import hashlib
from decimal import Decimal

import pytest

from cdc_smt.transforms.errors import TransformError
from cdc_smt.transforms.model import Op, Record
from cdc_smt.transforms.smt.base import tombstone_for
from tests.test_smt_base import SCHEMA, TextForm, config_error, control, ev, row, run

# -- replace_field -----------------------------------------------------------------


def test_exclude_drops_columns_from_images_and_schema() -> None:
    e = ev("update", before=row(1), after=row(1, status="paid"), changed=("status", "email"))
    out = run({"type": "replace_field", "exclude": ["email", "missing"]}, [e])[0]
    assert "email" not in out.before and "email" not in out.after
    assert "email" not in out.schema.names
    assert out.changed == ("status",)
    assert SCHEMA.column("email") is not None  # the shared schema object is not modified


def test_include_and_renames_follow_pk_schema_and_key() -> None:
    e = ev("insert", after=row(3))
    out = run({"type": "replace_field", "include": ["id", "status"], "renames": {"id": "order_id"}}, [e])[0]
    assert out.after == {"order_id": 3, "status": "new"}
    assert out.pk == ("order_id",)
    assert out.schema.primary_key == ("order_id",) and out.schema.names == ("order_id", "status")
    assert out.key_values() == {"order_id": 3}


def test_renames_in_kafka_connect_list_form() -> None:
    out = run({"type": "replace_field", "renames": ["email:mail", "status:state"]}, [ev()])[0]
    assert "mail" in out.after and "state" in out.after and "email" not in out.after


def test_excluding_the_primary_key_pins_the_kafka_key() -> None:
    out = run({"type": "replace_field", "exclude": ["id"]}, [ev("insert", after=row(9))])[0]
    assert "id" not in out.after and out.pk == ()
    assert out.key_values() == {"id": 9}


def test_works_on_raw_values_without_converting_them() -> None:
    e = ev("insert", after={"id": "5", "email": "x", "amount": "1.00", "status": "s", "created": None, "updated": None})
    e.values = TextForm()
    out = run({"type": "replace_field", "exclude": ["email"]}, [e])[0]
    assert out.values is not None and out.after["id"] == "5"
    assert out.typed().after["id"] == 5


def test_rename_collision_is_an_event_error() -> None:
    with pytest.raises(TransformError, match="collides"):
        run({"type": "replace_field", "renames": {"email": "status"}}, [ev()])


def test_replace_field_config_errors() -> None:
    assert config_error({"type": "replace_field", "renames": ["a-b"]}).path == "transforms[0].renames"
    assert config_error({"type": "replace_field", "renames": {"a": "x", "b": "x"}}).path == "transforms[0].renames"
    assert config_error({"type": "replace_field", "include": ["a"], "exclude": ["a"]}).path == "transforms[0].exclude"


def test_ddl_and_heartbeats_pass_untouched() -> None:
    ddl, hb = control("ddl"), control("heartbeat")
    assert run({"type": "replace_field", "exclude": ["id"]}, [ddl, hb]) == [ddl, hb]


# -- mask_field --------------------------------------------------------------------------


def test_mask_empty_uses_the_type_empty_value() -> None:
    e = ev("update", before=row(1), after=row(1, status=None))
    out = run({"type": "mask_field", "fields": ["email", "amount", "created", "status"]}, [e])[0]
    assert out.after["email"] == "" and out.after["amount"] == Decimal(0)
    assert out.after["created"] == dt.datetime(1970, 1, 1)
    assert out.after["status"] is None  # nulls stay null
    assert out.before["email"] == ""


def test_mask_null_and_replace() -> None:
    out = run({"type": "mask_field", "fields": ["email"], "mode": "null"}, [ev()])[0]
    assert out.after["email"] is None and out.schema.column("email").nullable
    out = run({"type": "mask_field", "fields": ["amount"], "mode": "replace", "replacement": "0.01"}, [ev()])[0]
    assert out.after["amount"] == Decimal("0.01")
    with pytest.raises(TransformError, match="not a valid decimal"):
        run({"type": "mask_field", "fields": ["amount"], "mode": "replace", "replacement": "n/a"}, [ev()])


def test_mask_hash_is_salted_sha256_of_the_mysql_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_PII_SALT", "s3cret")
    spec = {"type": "mask_field", "fields": ["email", "amount"], "mode": "hash", "salt_env": "TEST_PII_SALT"}
    out = run(spec, [ev(after=row(1, email="ann@example.com", amount=Decimal("12.5")))])[0]
    assert out.after["email"] == hashlib.sha256(b"s3cret" + b"ann@example.com").hexdigest()
    # decimals hash as MySQL prints them: padded to the column scale
    assert out.after["amount"] == hashlib.sha256(b"s3cret" + b"12.50").hexdigest()
    assert out.schema.column("email").type == "char(64)"


def test_mask_hash_is_the_same_for_raw_and_typed_input() -> None:
    typed = ev(after=row(1, amount=Decimal("3.10")))
    raw = ev(
        after={
            "id": "1",
            "email": "user1@example.com",
            "amount": "3.10",
            "status": "new",
            "created": None,
            "updated": None,
        }
    )
    raw.values = TextForm()
    spec = {"type": "mask_field", "fields": ["email", "amount"], "mode": "hash", "salt": "x"}
    a, b = run(spec, [typed])[0], run(spec, [raw])[0]
    assert a.after["email"] == b.after["email"] and a.after["amount"] == b.after["amount"]


def test_mask_hash_of_a_key_column_masks_the_explicit_key() -> None:
    e = ev(after=row(4))
    e.key = {"email": "user4@example.com"}
    out = run({"type": "mask_field", "fields": ["email"], "mode": "hash", "salt": "k"}, [e])[0]
    assert out.key["email"] == out.after["email"] != "user4@example.com"


def test_mask_field_config_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TEST_NO_SUCH_SALT", raising=False)
    assert (
        config_error({"type": "mask_field", "fields": ["a"], "mode": "hash", "salt_env": "TEST_NO_SUCH_SALT"}).path
        == "transforms[0].salt_env"
    )
    assert config_error({"type": "mask_field", "fields": ["a"], "mode": "replace"}).path == "transforms[0].replacement"
    assert config_error({"type": "mask_field", "fields": ["a"], "salt": "x"}).path == "transforms[0].salt"
    assert config_error({"type": "mask_field", "fields": []}).path == "transforms[0].fields"


def test_mask_leaves_tombstones_and_ddl() -> None:
    tomb, ddl = tombstone_for(ev("delete")), control("ddl")
    assert run({"type": "mask_field", "fields": ["id"]}, [tomb, ddl]) == [tomb, ddl]
    assert tomb.before == {"id": 1}


# -- insert_field ----------------------------------------------------------------------------


def test_insert_static_and_metadata() -> None:
    e = ev("insert", ts_ms=1709255740000, timezone="Asia/Shanghai")
    e.record = Record(value=b"", topic="src", partition=2, offset=42, timestamp=1709255741000)
    spec = {
        "type": "insert_field",
        "static": {"_source": "mysql-east", "_version": 3},
        "metadata": {
            "_topic": "topic",
            "_part": "partition",
            "_off": "offset",
            "_pos": "position",
            "_ts": "source_ts",
            "_op": "op",
        },
    }
    out = run(spec, [e])[0]
    assert out.after["_source"] == "mysql-east" and out.after["_version"] == 3
    assert (out.after["_topic"], out.after["_part"], out.after["_off"]) == ("src", 2, 42)
    assert out.after["_pos"] == "mysql-bin.000003:4096"
    assert out.after["_ts"] == dt.datetime(2024, 3, 1, 9, 15, 40)  # 01:15:40Z shown in Asia/Shanghai
    assert out.after["_op"] == "insert"
    types = {c.name: c.type for c in out.schema.columns}
    assert types["_version"] == "bigint" and types["_off"] == "bigint" and types["_ts"] == "timestamp(3)"


def test_insert_goes_to_the_before_image_of_deletes_and_missing_metadata_is_null() -> None:
    out = run({"type": "insert_field", "metadata": {"_off": "offset"}}, [ev("delete")])[0]
    assert out.before["_off"] is None and out.after is None


def test_insert_field_config_errors() -> None:
    assert config_error({"type": "insert_field"}).path == "transforms[0]"
    assert config_error({"type": "insert_field", "metadata": {"x": "bogus"}}).path == "transforms[0].metadata"
    assert config_error({"type": "insert_field", "static": {"x": [1]}}).path == "transforms[0].static"


# -- cast --------------------------------------------------------------------------------


def test_cast_numbers_strings_and_times() -> None:
    e = ev(after=row(1, amount=Decimal("12.55"), status="42", created=dt.datetime(2024, 1, 2, 3, 4, 5)))
    spec = {"type": "cast", "spec": {"amount": "int64", "status": "decimal(6,1)", "created": "date", "id": "string"}}
    out = run(spec, [e])[0]
    assert out.after["amount"] == 13  # half away from zero, as MySQL CAST
    assert out.after["status"] == Decimal("42.0")
    assert out.after["created"] == dt.date(2024, 1, 2)
    assert out.after["id"] == "1"
    types = {c.name: c.type for c in out.schema.columns}
    assert types["amount"] == "bigint" and types["id"] == "longtext"


def test_cast_list_form_and_nulls() -> None:
    out = run({"type": "cast", "spec": ["amount:float64", "status:boolean"]}, [ev(after=row(1, status=None))])[0]
    assert out.after["amount"] == 12.5 and out.after["status"] is None


def test_cast_failure_names_the_column() -> None:
    with pytest.raises(TransformError, match="'status'"):
        run({"type": "cast", "spec": {"status": "int"}}, [ev(after=row(1, status="abc"))])


def test_cast_config_errors() -> None:
    assert config_error({"type": "cast", "spec": {"a": "notatype"}}).path == "transforms[0].spec"
    assert config_error({"type": "cast", "spec": {"a": "blob"}}).path == "transforms[0].spec"
    assert config_error({"type": "cast", "spec": {}}).path == "transforms[0].spec"


# -- value_to_key ------------------------------------------------------------------------


def test_value_to_key() -> None:
    out = run(
        {"type": "value_to_key", "fields": ["status", "id"]}, [ev("insert", after=row(3)), ev("delete", before=row(4))]
    )
    assert out[0].key_values() == {"status": "new", "id": 3}
    assert out[1].key_values() == {"status": "new", "id": 4}


def test_value_to_key_missing_column_is_an_event_error_and_null_is_kept() -> None:
    with pytest.raises(TransformError, match="no column 'tenant'"):
        run({"type": "value_to_key", "fields": ["tenant"]}, [ev()])
    out = run({"type": "value_to_key", "fields": ["status"]}, [ev(after=row(1, status=None))])[0]
    assert out.key == {"status": None}


def test_schemaless_events_are_handled() -> None:
    e = ev(schema=None, after={"id": 1, "email": "a"}, pk=("id",))
    out = run({"type": "replace_field", "renames": {"email": "mail"}}, [e])[0]
    assert out.after == {"id": 1, "mail": "a"} and out.schema is None
    e = ev(schema=None, after={"id": 1, "email": "a"}, pk=("id",))
    out = run({"type": "insert_field", "static": {"x": 1}}, [e])[0]
    assert out.after["x"] == 1 and out.schema is None
    assert out.op is Op.INSERT
