"""The transform base: options, predicates and negate, scope, the batch loop, the registry.

Also home of the small event builders the other ``test_smt_*`` modules import.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest

from cdc_smt.transforms.config import build_transforms
from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.model import ChangeEvent, Column, Op, Record, SourcePosition, TableSchema
from cdc_smt.transforms.smt import builtins, transform_class
from cdc_smt.transforms.smt.base import TOMBSTONE, Transform, tombstone_for
from cdc_smt.transforms.types import from_text

SCHEMA = TableSchema(
    (
        Column("id", "bigint", False, True),
        Column("email", "varchar(255)"),
        Column("amount", "decimal(10,2)"),
        Column("status", "varchar(16)"),
        Column("created", "datetime(3)"),
        Column("updated", "timestamp(3)"),
    ),
    ("id",),
)


class TextForm:
    """A raw value form like Canal's: every value is MySQL text."""

    name = "test-text"

    def to_python(self, column: Column, raw: Any) -> Any:
        return from_text(column.mysql, raw)


def row(i: int = 1, **over: Any) -> dict[str, Any]:
    r = {
        "id": i,
        "email": f"user{i}@example.com",
        "amount": Decimal("12.50"),
        "status": "new",
        "created": dt.datetime(2024, 3, 1, 9, 15, 2, 120000),
        "updated": dt.datetime(2024, 3, 1, 9, 15, 2),
    }
    r.update(over)
    return r


def ev(
    op: str | Op = "insert",
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    *,
    db: str | None = "shop",
    table: str | None = "orders",
    schema: TableSchema | None = SCHEMA,
    **kw: Any,
) -> ChangeEvent:
    """An event; row ops get a default image for the side they need."""
    op = Op(op)
    if op in (Op.INSERT, Op.READ, Op.UPDATE) and after is None:
        after = row()
    if op in (Op.DELETE, Op.UPDATE) and before is None:
        before = row()
    pk = kw.pop("pk", ("id",) if schema is not None and op.is_row else ())
    return ChangeEvent(
        op=op,
        source=SourcePosition(database=db, table=table, binlog_file="mysql-bin.000003", binlog_pos=4096),
        before=before,
        after=after,
        schema=schema if op.is_row else None,
        pk=pk,
        ts_ms=kw.pop("ts_ms", 1709255740000),
        **kw,
    )


def control(op: str) -> ChangeEvent:
    if op == "ddl":
        return ev("ddl", ddl="ALTER TABLE orders ADD COLUMN x int")
    return ev(op, db=None, table=None)


def build(spec: dict[str, Any], predicates: dict[str, Any] | None = None) -> Transform:
    return build_transforms([spec], predicates=predicates)[0]


def run(spec: dict[str, Any] | Transform, events: list[ChangeEvent]) -> list[ChangeEvent]:
    t = spec if isinstance(spec, Transform) else build(spec)
    return t.apply_batch(list(events))


def config_error(spec: dict[str, Any], predicates: dict[str, Any] | None = None) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        build(spec, predicates)
    return info.value


# -- the tests of the base -----------------------------------------------------------


class Upper(Transform):
    """Upper-cases the status (a test transform)."""

    name = "test_upper"

    def apply(self, event: ChangeEvent):
        event.after["status"] = event.after["status"].upper()
        return event


class Twice(Transform):
    """Emits each event twice, or drops deletes."""

    name = "test_twice"
    scope = "all"

    def apply(self, event: ChangeEvent):
        if event.op is Op.DELETE:
            return None
        return [event, event]


def test_every_builtin_is_registered_with_declared_options_and_a_summary() -> None:
    found = builtins()
    expected = {
        "filter", "route", "merge_shards", "replace_field", "mask_field", "insert_field", "cast",
        "timestamp_convert", "timezone_convert", "value_to_key", "extract_field", "flatten", "hoist_field",
        "unwrap", "split_updates", "drop_tombstones", "explode_rows", "batch_rows", "insert_header",
        "drop_headers", "header_from",
    }  # fmt: skip
    assert expected <= set(found)
    for name, cls in found.items():
        assert cls.summary(), f"{name} has no docstring"
        assert cls.known_as, f"{name} does not say what users know it as"
        for opt in cls.options:
            assert opt.doc, f"{name}.{opt.name} has no doc"


def test_apply_results_one_many_or_none() -> None:
    out = run(Twice({}, path="t"), [ev("insert"), ev("delete"), ev("update")])
    assert [e.op for e in out] == [Op.INSERT, Op.INSERT, Op.UPDATE, Op.UPDATE]


def test_row_transforms_pass_control_events_and_tombstones_untouched() -> None:
    t = Upper({}, path="t")
    events = [control("ddl"), control("heartbeat"), control("watermark"), control("begin"), control("commit")]
    tomb = tombstone_for(ev("delete"))
    out = t.apply_batch([*events, tomb, ev("insert")])
    assert out[:6] == [*events, tomb]
    assert out[6].after["status"] == "NEW"


def test_predicate_inline_and_negate() -> None:
    orders = ev("insert", table="orders")
    users = ev("insert", table="users")
    t = Upper({"predicate": {"type": "table_matches", "pattern": r"shop\.orders"}}, path="t")
    out = t.apply_batch([orders, users])
    assert [e.after["status"] for e in out] == ["NEW", "new"]
    orders2, users2 = ev("insert", table="orders"), ev("insert", table="users")
    neg = Upper({"predicate": {"type": "table_matches", "pattern": r"shop\.orders"}, "negate": True}, path="t")
    out = neg.apply_batch([orders2, users2])
    assert [e.after["status"] for e in out] == ["new", "NEW"]


def test_named_predicate_from_the_predicates_section() -> None:
    t = build(
        {"type": "filter", "action": "drop", "predicate": "ddl"},
        predicates={"ddl": {"type": "is_ddl"}},
    )
    out = t.apply_batch([control("ddl"), ev("insert")])
    assert [e.op for e in out] == [Op.INSERT]


def test_negate_without_predicate_is_a_config_error() -> None:
    err = config_error({"type": "filter", "negate": True})
    assert err.path == "transforms[0].negate"


def test_unknown_named_predicate_names_the_path() -> None:
    err = config_error({"type": "filter", "predicate": "nope"}, predicates={"yes": {"type": "is_ddl"}})
    assert err.path == "transforms[0].predicate"
    assert "known: yes" in str(err)


def test_bad_predicate_option_names_the_predicates_path() -> None:
    err = config_error({"type": "filter", "predicate": "p"}, predicates={"p": {"type": "table_matches"}})
    assert err.path == "predicates.p.pattern"


def test_option_errors_name_the_yaml_path() -> None:
    with pytest.raises(ConfigError) as info:
        build_transforms([{"type": "filter"}, {"type": "route", "topic": "x"}, {"type": "mask_field", "fieldz": []}])
    assert info.value.path == "transforms[2].fieldz"
    with pytest.raises(ConfigError) as info:
        build_transforms([{"type": "mask_field"}])
    assert info.value.path == "transforms[0].fields"
    assert "missing required option" in str(info.value)


def test_name_labels_the_transform_and_defaults_to_its_type() -> None:
    a, b = build_transforms([{"type": "route", "topic": "x"}, {"type": "route", "topic": "y", "name": "second"}])
    assert (a.name, b.name) == ("route", "second")
    assert a.path == "transforms[0]"


def test_reserved_option_names_cannot_be_declared() -> None:
    from cdc_smt.transforms.options import Option

    with pytest.raises(TypeError, match="reserved"):

        class Bad(Transform):  # noqa: F811 - defined only to fail
            name = "bad"
            options = (Option("predicate", str, None, "x"),)


def test_transform_class_by_dotted_path_and_errors() -> None:
    assert transform_class("tests.test_smt_base.Upper") is Upper
    assert transform_class("tests.test_smt_base:Upper") is Upper
    with pytest.raises(ConfigError, match="not a transform"):
        transform_class("tests.test_smt_base.row", "transforms[0].type")
    with pytest.raises(ConfigError, match="has no"):
        transform_class("tests.test_smt_base.Nope")
    with pytest.raises(ConfigError, match="unknown transform type 'filtr'"):
        transform_class("filtr")


def test_dotted_class_in_a_chain() -> None:
    t = build({"type": "tests.test_smt_base.Upper"})
    assert t.apply_batch([ev("insert")])[0].after["status"] == "NEW"


def test_tombstone_for_keeps_only_the_key() -> None:
    e = ev("delete", before=row(7))
    t = tombstone_for(e)
    assert t.op is Op.DELETE and t.after is None
    assert t.before == {"id": 7}
    assert t.key_values() == {"id": 7}
    assert t.extra == {TOMBSTONE: True}
    assert e.before["email"] == "user7@example.com"  # the original is untouched


def test_raw_values_are_typed_before_values_are_read() -> None:
    e = ev(
        "insert", after={"id": "5", "email": "a@b.c", "amount": "3.10", "status": "x", "created": None, "updated": None}
    )
    e.values = TextForm()
    out = run({"type": "mask_field", "fields": ["email"], "mode": "empty"}, [e])
    assert out[0].values is None
    assert out[0].after["id"] == 5 and out[0].after["amount"] == Decimal("3.10")
    assert out[0].after["email"] == ""


def test_record_is_available_to_transforms() -> None:
    e = ev("insert")
    e.record = Record(value=b"{}", topic="src", partition=3, offset=99)
    out = run({"type": "insert_field", "metadata": {"_offset": "offset", "_topic": "topic"}}, [e])
    assert out[0].after["_offset"] == 99 and out[0].after["_topic"] == "src"
