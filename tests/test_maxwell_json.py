"""maxwell-json: Maxwell's row, DDL and marker messages; typing with and without a catalog."""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from cdc_smt import schemas
from cdc_smt.transforms.errors import DecodeError, EncodeError
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import ChangeEvent, Column, Op, Record, SourcePosition, TableSchema
from cdc_smt.transforms.types import InvalidTemporal
from tests.messages import Catalog
from tests.strategies import change_streams, essence


def codec(catalog=None, **options):
    return get_codec("maxwell-json", options, catalog=catalog)


def decode(c, obj) -> list[ChangeEvent]:
    return c.decode(Record(value=orjson.dumps(obj)))


def encoded(c, event) -> list[dict]:
    return [orjson.loads(r.value) for r in c.encode(event)]


INSERT = {
    "database": "shop",
    "table": "orders",
    "type": "insert",
    "ts": 1477053217,
    "xid": 23396,
    "commit": True,
    "position": "master.000006:800911",
    "server_id": 23042,
    "thread_id": 108,
    "primary_key_columns": ["id"],
    "data": {"id": 1, "amount": 4.25, "note": "first", "created": "2016-10-21 05:33:37.523000"},
}


# -- decoding ---------------------------------------------------------------


def test_insert_maps_envelope_fields():
    (e,) = decode(codec(), INSERT)
    assert e.op is Op.INSERT
    assert (e.database, e.table) == ("shop", "orders")
    assert e.ts_ms == 1477053217000  # row messages carry seconds
    assert e.source.txid == "23396"
    assert (e.source.binlog_file, e.source.binlog_pos) == ("master.000006", 800911)
    assert e.source.server_id == 23042
    assert e.pk == ("id",)
    assert e.before is None
    assert e.extra["thread_id"] == 108 and e.extra["commit"] is True


def test_update_before_is_data_overlaid_with_old():
    msg = dict(INSERT, type="update", data={"id": 1, "amount": 5.5, "note": "first"}, old={"amount": 4.25, "gone": "x"})
    (e,) = decode(codec(), msg)
    e.typed()
    assert e.after == {"id": 1, "amount": 5.5, "note": "first"}
    # unchanged columns come from data; a column only in old is still part of the before row
    assert e.before == {"id": 1, "amount": 4.25, "note": "first", "gone": "x"}
    assert e.changed == ("amount", "gone")


def test_update_without_old_has_an_unchanged_before_image():
    (e,) = decode(codec(), dict(INSERT, type="update"))
    assert e.before == e.after and e.changed == ()


def test_delete_data_is_the_removed_row():
    (e,) = decode(codec(), dict(INSERT, type="delete"))
    assert e.op is Op.DELETE and e.after is None and e.before["id"] == 1


def test_ticdc_deletes_with_the_row_in_old():
    msg = {"database": "d", "table": "t", "type": "delete", "ts": 1, "old": {"id": 3}}
    c = codec()
    (e,) = decode(c, msg)
    assert e.op is Op.DELETE and e.before == {"id": 3} and e.after is None
    assert encoded(c, e) == [msg]


def test_primary_key_values_without_names_are_kept():
    msg = dict(INSERT, primary_key=[1])
    del msg["primary_key_columns"]
    (e,) = decode(codec(), msg)
    assert e.pk == () and encoded(codec(), e) == [msg]


def test_bootstrap_rows_are_snapshot_reads_and_markers_round_trip():
    c = codec()
    (row,) = decode(c, dict(INSERT, type="bootstrap-insert"))
    assert row.op is Op.READ
    marker = {"database": "shop", "table": "orders", "type": "bootstrap-start", "ts": 1477053217, "data": {}}
    (m,) = decode(c, marker)
    assert m.op is Op.HEARTBEAT
    assert encoded(c, m) == [marker]


def test_ddl_carries_statement_kind_and_table_definition():
    msg = {
        "type": "table-create",
        "database": "shop",
        "table": "e",
        "def": {
            "database": "shop",
            "table": "e",
            "columns": [
                {"type": "int", "name": "id", "signed": False},
                {"type": "timestamp", "name": "c", "column-length": 6},
                {"type": "enum", "name": "size", "enum-values": ["s", "m"]},
            ],
            "primary-key": ["id"],
        },
        "ts": 1477053126000,
        "sql": "create table shop.e (id int unsigned primary key, c timestamp(6), size enum('s','m'))",
        "position": "master.000006:800050",
    }
    (e,) = decode(codec(), msg)
    assert e.op is Op.DDL and e.ddl_kind == "table-create" and e.ddl.startswith("create table")
    assert e.ts_ms == 1477053126000  # DDL messages carry milliseconds
    assert [(c.name, c.type) for c in e.schema.columns] == [
        ("id", "int unsigned"),
        ("c", "timestamp(6)"),
        ("size", "enum('s','m')"),
    ]
    assert e.schema.primary_key == ("id",)
    assert encoded(codec(), e) == [msg]


def test_types_are_inferred_from_json_values_without_a_catalog():
    msg = dict(INSERT, data={"id": 1, "f": 1.5, "s": "x", "j": {"a": [1]}, "b": True, "n": None, "big": 2**64 - 1})
    (e,) = decode(codec(), msg)
    types = {c.name: c.type for c in e.schema.columns}
    assert types == {
        "id": "bigint",
        "f": "double",
        "s": "longtext",
        "j": "json",
        "b": "bit(1)",
        "n": "longtext",
        "big": "bigint unsigned",
    }
    e.typed()
    assert e.after["j"] == '{"a":[1]}' and e.after["b"] is True


def test_catalog_types_convert_maxwell_value_forms():
    schema = TableSchema(
        (
            Column("id", "int", False, True),
            Column("price", "decimal(10,2)"),
            Column("tags", "set('a','b','c')"),
            Column("doc", "json"),
            Column("img", "blob"),
            Column("at", "datetime(3)"),
            Column("dur", "time"),
            Column("d", "date"),
            Column("flag", "bit(1)"),
        ),
        ("id",),
    )
    data = {
        "id": 7,
        "price": "12.30",
        "tags": ["a", "c"],
        "doc": {"k": "v"},
        "img": base64.b64encode(b"\x00\xff").decode(),
        "at": "2020-01-02 03:04:05.678",
        "dur": "-01:02:03",
        "d": "0000-00-00",
        "flag": True,
    }
    c = codec(Catalog({("shop", "t"): schema}))
    (e,) = decode(c, {"database": "shop", "table": "t", "type": "insert", "ts": 1, "data": data})
    assert e.schema == schema and e.pk == ("id",)
    e.typed()
    assert e.after == {
        "id": 7,
        "price": Decimal("12.30"),
        "tags": "a,c",
        "doc": '{"k":"v"}',
        "img": b"\x00\xff",
        "at": dt.datetime(2020, 1, 2, 3, 4, 5, 678000),
        "dur": -dt.timedelta(hours=1, minutes=2, seconds=3),
        "d": InvalidTemporal("0000-00-00"),
        "flag": True,
    }
    # written back in Maxwell's own forms: DECIMAL as a JSON number, with its scale
    (out,) = encoded(c, e)
    assert out["data"] == dict(data, price=12.3)
    assert b'"price":12.30,' in c.encode(e)[0].value


# -- encoding ---------------------------------------------------------------


def _event(op, before=None, after=None, **kw) -> ChangeEvent:
    schema = TableSchema(
        (Column("id", "int", False, True), Column("v", "varchar(10)"), Column("ts", "timestamp")), ("id",)
    )
    return ChangeEvent(
        op=op,
        source=SourcePosition(database="d", table="t"),
        before=before,
        after=after,
        schema=schema,
        pk=("id",),
        ts_ms=1_600_000_000_999,
        **kw,
    )


def test_old_holds_only_changed_columns_when_encoding_other_formats():
    e = _event(Op.UPDATE, before={"id": 1, "v": "a", "ts": None}, after={"id": 1, "v": "b", "ts": None})
    (out,) = encoded(codec(), e)
    assert out["type"] == "update" and out["old"] == {"v": "a"} and out["ts"] == 1_600_000_000
    assert out["data"] == {"id": 1, "v": "b", "ts": None}
    assert out["primary_key_columns"] == ["id"]


def test_timestamps_are_rebased_to_the_encoder_zone():
    e = _event(Op.INSERT, after={"id": 1, "v": "a", "ts": dt.datetime(2020, 1, 1, 8, 0)}, timezone="Asia/Shanghai")
    (out,) = encoded(codec(), e)
    assert out["data"]["ts"] == "2020-01-01 00:00:00"  # 08:00 in Shanghai is 00:00 UTC
    (out,) = encoded(codec(source_timezone="Asia/Shanghai"), e)
    assert out["data"]["ts"] == "2020-01-01 08:00:00"


def test_lone_before_half_is_written_as_a_delete():
    e = _event(Op.UPDATE, before={"id": 1, "v": "a", "ts": None}, partial=True)
    (out,) = encoded(codec(), e)
    assert out["type"] == "delete" and out["data"]["id"] == 1


def test_control_events_have_no_maxwell_message_and_truncate_is_an_error():
    c = codec()
    for op in (Op.BEGIN, Op.COMMIT, Op.HEARTBEAT, Op.WATERMARK):
        assert c.encode(ChangeEvent(op=op)) == []
    with pytest.raises(EncodeError, match="TRUNCATE"):
        c.encode(ChangeEvent(op=Op.TRUNCATE, source=SourcePosition(database="d", table="t")))


def test_ddl_from_other_formats_gets_a_maxwell_type_from_the_statement():
    c = codec(output_ddl=True)
    for sql, kind in [
        ("CREATE TABLE t (id int)", "table-create"),
        ("drop table t", "table-drop"),
        ("CREATE DATABASE d", "database-create"),
        ("ALTER TABLE t ADD c int", "table-alter"),
        ("CREATE INDEX i ON t (c)", "table-alter"),
        ("/* flyway */ DROP SCHEMA d", "database-drop"),
        ("-- v2\nCREATE TEMPORARY TABLE t (id int)", "table-create"),
    ]:
        (out,) = encoded(c, ChangeEvent(op=Op.DDL, ddl=sql, source=SourcePosition(database="d", table="t")))
        assert out["type"] == kind and out["sql"] == sql


def test_ddl_from_other_formats_is_written_only_when_asked_and_to_the_ddl_topic():
    ddl = ChangeEvent(op=Op.DDL, ddl="CREATE TABLE t (id int)", source=SourcePosition(database="d", table="t"))
    assert codec().encode(ddl) == []  # Maxwell's default: output_ddl off
    assert codec(output_ddl=False).encode(ddl) == []
    (rec,) = codec(output_ddl=True, ddl_topic="maxwell_ddl").encode(ddl)
    assert rec.topic == "maxwell_ddl" and b'"table-create"' in rec.value
    (rec,) = codec(output_ddl=True).encode(ddl)
    assert rec.topic is None


def test_reencoding_reproduces_the_message():
    c = codec()
    for msg in (
        INSERT,
        dict(INSERT, type="update", old={"note": None}),
        dict(INSERT, type="delete", xoffset=3, commit=None),
    ):
        msg = {k: v for k, v in msg.items() if v is not None}
        raw = orjson.dumps(msg)
        (e,) = c.decode(Record(value=raw))
        assert [r.value for r in c.encode(e)] == [raw]


# -- bad input --------------------------------------------------------------


@pytest.mark.parametrize(
    "value, reason",
    [
        (b"not json", "malformed JSON"),
        (b"[1, 2]", "expected a JSON object"),
        (orjson.dumps({"database": "d", "data": {}}), "missing field 'type'"),
        (orjson.dumps({"type": 3, "data": {}}), "field 'type' must be a string"),
        (orjson.dumps({"type": "upsert", "data": {}}), "unknown type 'upsert'"),
        (orjson.dumps({"type": "INSERT", "data": {}}), "unknown type 'INSERT'"),
        (orjson.dumps({"type": "insert"}), "missing field 'data'"),
        (orjson.dumps({"type": "insert", "data": [1]}), "field 'data' must be an object"),
        (orjson.dumps({"type": "update", "data": {}, "old": "x"}), "field 'old' must be an object"),
        (orjson.dumps({"type": "insert", "data": {}, "ts": "soon"}), "field 'ts' must be an integer"),
        (orjson.dumps({"type": "insert", "data": {}, "position": "nowhere"}), "field 'position'"),
        (orjson.dumps({"type": "insert", "data": {}, "primary_key_columns": [1]}), "primary_key_columns"),
        (orjson.dumps({"type": "insert", "encrypted": {"iv": "x", "bytes": "y"}}), "encrypted"),
        (
            orjson.dumps({"type": "table-create", "def": {"columns": [{"name": "a"}]}, "sql": "x"}),
            "'name' and a 'type'",
        ),
    ],
)
def test_bad_input_is_a_clear_decode_error(value, reason):
    with pytest.raises(DecodeError, match=reason):
        codec().decode(Record(value=value))


def test_sniff():
    from cdc_smt.transforms.formats.maxwell_json import MaxwellJson

    assert MaxwellJson.sniff(INSERT)
    assert MaxwellJson.sniff({"type": "table-alter", "sql": "x"})
    assert not MaxwellJson.sniff({"type": "INSERT", "data": [{"id": "1"}], "isDdl": False})  # Canal
    assert not MaxwellJson.sniff({"op_type": "I", "after": {}})  # OGG
    assert not MaxwellJson.sniff(b"\x00")


# -- properties -------------------------------------------------------------


def _catalog_for(events) -> Catalog:
    e = events[0]
    return Catalog({(e.database, e.table): e.schema})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(change_streams())
def test_round_trip_with_a_catalog_is_lossless(events):
    """Maxwell carries every value exactly once the catalog supplies the types
    (decimals are written as strings, so no digits are lost)."""
    catalog = _catalog_for(events)
    enc, dec = codec(), codec(catalog)
    validate = schemas.validator("maxwell-json").validate
    for e in events:
        (record,) = enc.encode(e)
        validate(orjson.loads(record.value))
        (back,) = dec.decode(record)
        want = essence(e)
        got = essence(back)
        assert got == want
        assert back.ts_ms == e.ts_ms // 1000 * 1000  # Maxwell's ts is in seconds


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(change_streams())
def test_reencoding_decoded_messages_is_exact(events):
    enc, c = codec(), codec()
    for e in events:
        (record,) = enc.encode(e)
        (back,) = c.decode(record)
        assert [r.value for r in c.encode(back)] == [record.value]


def test_numbers_a_double_cannot_hold_are_exact_both_ways():
    """Maxwell writes DECIMAL as a JSON number; a decimal(24,4) amount has 24 digits."""
    text = (
        b'{"database":"shop","table":"t","type":"insert","ts":1,'
        b'"data":{"id":1,"amt":12345678901234567890.1234,"j":{"x":0.10000000000000000001}}}'
    )
    schema = TableSchema(
        columns=(Column("id", "int", primary_key=True), Column("amt", "decimal(24,4)"), Column("j", "json")),
        primary_key=("id",),
    )
    c = get_codec("maxwell-json", catalog=Catalog({("shop", "t"): schema}))
    (e,) = c.decode(Record(value=text))
    assert [r.value for r in c.encode(e)] == [text]
    after = e.typed().after
    assert after["amt"] == Decimal("12345678901234567890.1234")
    assert after["j"] == '{"x":0.10000000000000000001}'  # JSON documents keep them too
    debezium = get_codec("debezium-json", {"decimal_handling_mode": "string", "schemas_enable": False})
    assert orjson.loads(debezium.encode(e)[0].value)["after"]["amt"] == "12345678901234567890.1234"


def test_decimal65_values_written_as_bare_integers_round_trip_exactly():
    """orjson reads a 65-digit JSON integer as a float (1e+65) and cannot write one back."""
    big = 10**65 - 1
    text = b'{"database":"shop","table":"t","type":"insert","ts":1,"data":{"id":1,"n":%d}}' % big
    schema = TableSchema(
        columns=(Column("id", "int", primary_key=True), Column("n", "decimal(65,0)")), primary_key=("id",)
    )
    c = get_codec("maxwell-json", catalog=Catalog({("shop", "t"): schema}))
    (e,) = c.decode(Record(value=text))
    assert [r.value for r in c.encode(e)] == [text]
    assert e.typed().after["n"] == Decimal(big)
    assert [r.value for r in c.encode(e)] == [text]  # typed, written as Maxwell writes DECIMAL
