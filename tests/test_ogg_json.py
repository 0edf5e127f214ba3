"""ogg-json: GoldenGate JSON as Flink reads it (op types, table names, UTC timestamps)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from cdc_smt import schemas
from cdc_smt.transforms.errors import DecodeError, EncodeError
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import ChangeEvent, Column, Op, Record, SourcePosition, TableSchema
from tests.messages import Catalog
from tests.strategies import change_streams, essence


def codec(catalog=None, **options):
    return get_codec("ogg-json", options, catalog=catalog)


def decode(c, obj):
    return c.decode(Record(value=orjson.dumps(obj)))


def encoded(c, event):
    return [orjson.loads(r.value) for r in c.encode(event)]


UPDATE = {
    "table": "INV.PRODUCTS",
    "op_type": "U",
    "op_ts": "2021-03-04 05:06:07.123456",
    "current_ts": "2021-03-04T05:06:08.500000",
    "pos": "00000000010000002345",
    "primary_keys": ["ID"],
    "tokens": {"csn": "1234"},
    "before": {"ID": 1, "NAME": "a", "PRICE": 1.5},
    "after": {"ID": 1, "NAME": "b", "PRICE": 2},
}


def test_update_maps_images_names_keys_and_position():
    (e,) = decode(codec(), UPDATE)
    assert e.op is Op.UPDATE
    assert (e.database, e.source.schema, e.table) == ("INV", None, "PRODUCTS")
    assert e.pk == ("ID",)
    assert e.source.sequence_id == "00000000010000002345"
    assert e.before == {"ID": 1, "NAME": "a", "PRICE": 1.5} and e.after["NAME"] == "b"
    assert e.extra["tokens"] == {"csn": "1234"}


def test_timestamps_are_read_as_utc():
    # The values Flink's OggJsonSerDeSchemaTest expects for its metadata (SOURCES.md).
    (e,) = decode(
        codec(),
        {
            "op_type": "I",
            "after": {"id": 1},
            "op_ts": "2020-05-13 15:40:06.000000",
            "current_ts": "2020-05-13T13:39:35.766000",
        },
    )
    assert e.ts_ms == 1589384406000
    assert e.processing_ts_ms == 1589377175766
    # source_timezone is about row values, not OGG's own timestamps
    (e,) = decode(
        codec(source_timezone="Asia/Shanghai"), {"op_type": "I", "after": {"id": 1}, "op_ts": "2020-05-13 15:40:06"}
    )
    assert e.ts_ms == 1589384406000


@pytest.mark.parametrize(
    "name, parts",
    [("T", (None, None, "T")), ("S.T", ("S", None, "T")), ("C.S.T", ("C", "S", "T"))],
)
def test_table_names(name, parts):
    (e,) = decode(codec(), {"table": name, "op_type": "I", "after": {"id": 1}})
    assert (e.database, e.source.schema, e.table) == parts
    (out,) = encoded(codec(), e)
    assert out["table"] == name


def test_insert_delete_truncate():
    c = codec()
    (i,) = decode(c, {"table": "S.T", "op_type": "I", "after": {"id": 1}})
    (d,) = decode(c, {"table": "S.T", "op_type": "D", "before": {"id": 1}, "after": None})
    (t,) = decode(c, {"table": "S.T", "op_type": "T"})
    assert (i.op, i.before, i.after) == (Op.INSERT, None, {"id": 1})
    assert (d.op, d.before, d.after) == (Op.DELETE, {"id": 1}, None)
    assert t.op is Op.TRUNCATE and t.table == "T"


def test_update_without_before_image_is_accepted():
    # Flink rejects it (REPLICA IDENTITY hint); we keep the after-image rather than drop the row.
    (e,) = decode(codec(), {"table": "S.T", "op_type": "U", "after": {"id": 1}})
    assert e.op is Op.UPDATE and e.before is None and e.after == {"id": 1}


def test_catalog_types_convert_values():
    schema = TableSchema(
        (Column("ID", "bigint", False, True), Column("PRICE", "decimal(8,2)"), Column("AT", "datetime(6)")), ("ID",)
    )
    c = codec(Catalog({("INV", "PRODUCTS"): schema}))
    (e,) = decode(
        c,
        {
            "table": "INV.PRODUCTS",
            "op_type": "I",
            "after": {"ID": 1, "PRICE": "3.10", "AT": "2020-01-01 00:00:00.000001"},
        },
    )
    e.typed()
    assert e.after == {"ID": 1, "PRICE": Decimal("3.10"), "AT": dt.datetime(2020, 1, 1, 0, 0, 0, 1)}


def test_reencoding_reproduces_the_message_exactly():
    c = codec()
    for msg in (
        UPDATE,
        dict(UPDATE, op_type="D", after=None),
        {"before": None, "after": {"id": 1}, "op_type": "I"},
        dict(UPDATE, source={"x": 1}),
    ):
        raw = orjson.dumps(msg)
        (e,) = c.decode(Record(value=raw))
        assert [r.value for r in c.encode(e)] == [raw]


def test_encoding_other_formats():
    schema = TableSchema(
        (Column("id", "int", False, True), Column("p", "decimal(5,2)"), Column("ts", "timestamp(3)")), ("id",)
    )
    e = ChangeEvent(
        op=Op.UPDATE,
        source=SourcePosition(database="db", table="t"),
        before={"id": 1, "p": Decimal("1.50"), "ts": dt.datetime(2020, 1, 1, 8, 0, 0, 123000)},
        after={"id": 1, "p": None, "ts": None},
        schema=schema,
        pk=("id",),
        ts_ms=1589384406123,
        processing_ts_ms=1589384407000,
        timezone="Asia/Shanghai",
    )
    (out,) = encoded(codec(), e)
    assert out == {
        "table": "db.t",
        "op_type": "U",
        "op_ts": "2020-05-13 15:40:06.123000",
        "current_ts": "2020-05-13T15:40:07.000000",
        "primary_keys": ["id"],
        "before": {"id": 1, "p": 1.5, "ts": "2020-01-01 00:00:00.123"},
        "after": {"id": 1, "p": None, "ts": None},
    }
    assert (
        b'"p":1.50,' in codec().encode(e)[0].value
    )  # DECIMAL as a JSON number with its scale, as GoldenGate writes it
    schemas.validator("ogg-json").validate(out)


def test_snapshot_reads_are_inserts_lone_before_halves_deletes_and_control_events_nothing():
    c = codec()
    read = ChangeEvent(op=Op.READ, source=SourcePosition(database="d", table="t"), after={"id": 1})
    assert encoded(c, read)[0]["op_type"] == "I"
    lone = ChangeEvent(op=Op.UPDATE, source=SourcePosition(database="d", table="t"), before={"id": 1}, partial=True)
    (out,) = encoded(c, lone)
    assert out["op_type"] == "D" and out["before"] == {"id": 1} and "after" not in out
    for op in (Op.DDL, Op.BEGIN, Op.COMMIT, Op.HEARTBEAT, Op.WATERMARK):
        assert c.encode(ChangeEvent(op=op, ddl="CREATE TABLE t (id int)")) == []
    with pytest.raises(EncodeError, match="before-image"):
        c.encode(ChangeEvent(op=Op.DELETE, source=SourcePosition(database="d", table="t")))


@pytest.mark.parametrize(
    "obj, reason",
    [
        ({"table": "S.T", "after": {}}, "missing field 'op_type'"),
        ({"op_type": 1, "after": {}}, "field 'op_type' must be a string"),
        ({"op_type": "X", "after": {}}, "unknown op_type 'X'"),
        ({"op_type": "c", "after": {}}, "unknown op_type 'c'"),
        ({"op_type": "I"}, "needs an 'after' image"),
        ({"op_type": "U", "before": {}}, "needs an 'after' image"),
        ({"op_type": "D", "before": None}, "needs a 'before' image"),
        ({"op_type": "I", "after": [1]}, "field 'after' must be an object"),
        ({"op_type": "I", "after": {}, "table": "A.B.C.D"}, "SCHEMA.TABLE"),
        ({"op_type": "I", "after": {}, "op_ts": "yesterday"}, "not a timestamp"),
        ({"op_type": "I", "after": {}, "primary_keys": "id"}, "field 'primary_keys' must be an array"),
    ],
)
def test_bad_input_is_a_clear_decode_error(obj, reason):
    with pytest.raises(DecodeError, match=reason):
        decode(codec(), obj)


def test_sniff():
    from cdc_smt.transforms.formats.ogg_json import OggJson

    assert OggJson.sniff(UPDATE)
    assert not OggJson.sniff({"op": "c", "after": {}})  # Debezium
    assert not OggJson.sniff({"type": "insert", "data": {}})  # Maxwell


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(change_streams())
def test_round_trip_with_a_catalog_is_lossless(events):
    e0 = events[0]
    enc, dec = codec(), codec(Catalog({(e0.database, e0.table): e0.schema}))
    validate = schemas.validator("ogg-json").validate
    for e in events:
        (record,) = enc.encode(e)
        validate(orjson.loads(record.value))
        (back,) = dec.decode(record)
        assert back.ts_ms == e.ts_ms
        assert essence(back) == essence(e)


def test_numbers_a_double_cannot_hold_are_exact_both_ways():
    """A decimal(24,4) amount has 24 digits; through a double it would be rounded."""
    text = (
        b'{"table":"INV.PRODUCTS","op_type":"I","op_ts":"2021-03-04 05:06:07.123456",'
        b'"current_ts":"2021-03-04T05:06:08.500000","pos":"00000000010000002345","primary_keys":["ID"],'
        b'"after":{"ID":1,"PRICE":12345678901234567890.1234,"RATE":1.5}}'
    )
    price = Column("PRICE", "decimal(24,4)")
    schema = TableSchema(
        columns=(Column("ID", "int", primary_key=True), price, Column("RATE", "double")), primary_key=("ID",)
    )
    c = codec(Catalog({("INV", "PRODUCTS"): schema}))
    (e,) = c.decode(Record(value=text))
    assert [r.value for r in c.encode(e)] == [text]  # raw values: the same number text
    after = e.typed().after
    assert after["PRICE"] == Decimal("12345678901234567890.1234") and after["RATE"] == 1.5
    assert float(after["PRICE"]) != after["PRICE"]  # not representable as a double
