"""dts-avro: DTS subscription Records (schemaless Avro) with typed union values."""

from __future__ import annotations

import datetime as dt
import io
from decimal import Decimal

import fastavro
import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from cdc_smt import schemas
from cdc_smt.transforms.errors import DecodeError
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.formats.dts_avro import DtsAvro
from cdc_smt.transforms.model import ChangeEvent, Column, Op, Record, SourcePosition, TableSchema
from cdc_smt.transforms.types import InvalidTemporal
from tests.messages import Catalog
from tests.strategies import change_streams, essence

NS = "com.alibaba.dts.formats.avro."
SCHEMA = fastavro.parse_schema(schemas.load_avro("dts-avro"))


def codec(catalog=None, **options):
    return get_codec("dts-avro", options, catalog=catalog)


def avro(obj: dict, born: bool = True) -> bytes:
    """Avro bytes written by fastavro directly (not by the codec)."""
    buf = io.BytesIO()
    schema = SCHEMA
    if not born:
        short = schemas.load_avro("dts-avro")
        schema = fastavro.parse_schema(dict(short, fields=short["fields"][:-1]))
        obj = {k: v for k, v in obj.items() if k != "bornTimestamp"}
    fastavro.schemaless_writer(buf, schema, obj)
    return buf.getvalue()


def record(operation="INSERT", fields=(), before=None, after=None, **kw) -> dict:
    out = {
        "version": 1,
        "id": 42,
        "sourceTimestamp": 1_600_000_000,
        "sourcePosition": "2196@4",
        "safeSourcePosition": "2000@4",
        "sourceTxid": "88",
        "source": {"sourceType": "MySQL", "version": "8.0.28"},
        "operation": operation,
        "objectName": "shop.items",
        "processTimestamps": None,
        "tags": {"pk_uk_info": '{"PRIMARY":["id"]}', "thread_id": "7"},
        "fields": [{"name": n, "dataTypeNumber": c} for n, c in fields] if fields else None,
        "beforeImages": before,
        "afterImages": after,
        "bornTimestamp": 1_600_000_000_250,
    }
    out.update(kw)
    return out


def I(v, p=11):  # noqa: E743 - Integer union value
    return (NS + "Integer", {"precision": p, "value": str(v)})


def C(s, charset="utf8mb4"):
    return (NS + "Character", {"charset": charset, "value": s if isinstance(s, bytes) else s.encode("utf-8")})


def DT(**parts):
    d = dict.fromkeys(("year", "month", "day", "hour", "minute", "second", "millis"))
    d.update(parts)
    return (NS + "DateTime", d)


def decode(c, obj, born=True) -> list[ChangeEvent]:
    return c.decode(Record(value=avro(obj, born)))


# -- decoding ---------------------------------------------------------------


def test_insert_envelope():
    (e,) = decode(codec(), record(fields=[("id", 3), ("name", 253)], after=[I(1), C("scooter")]))
    assert e.op is Op.INSERT and (e.database, e.table) == ("shop", "items")
    assert e.pk == ("id",)  # from tags.pk_uk_info
    assert e.source.txid == "88" and e.source.db_type == "mysql" and e.source.sequence_id == "42"
    assert e.ts_ms == 1_600_000_000_250  # bornTimestamp agrees with sourceTimestamp: ms precision kept
    assert e.typed().after == {"id": 1, "name": "scooter"}
    assert [(c.name, c.type) for c in e.schema.columns] == [("id", "int"), ("name", "varchar(65535)")]


def test_source_timestamp_seconds_when_born_timestamp_is_absent_or_unrelated():
    (e,) = decode(codec(), record(fields=[("id", 3)], after=[I(1)]), born=False)
    assert e.ts_ms == 1_600_000_000_000
    (e,) = decode(codec(), record(fields=[("id", 3)], after=[I(1)], bornTimestamp=5))
    assert e.ts_ms == 1_600_000_000_000


def test_update_and_delete_images():
    c = codec()
    (u,) = decode(c, record("UPDATE", [("id", 3), ("n", 253)], before=[I(1), C("a")], after=[I(1), C("b")]))
    assert u.op is Op.UPDATE and u.typed().before == {"id": 1, "n": "a"} and u.after == {"id": 1, "n": "b"}
    (d,) = decode(c, record("DELETE", [("id", 3)], before=[I(1)]))
    assert d.op is Op.DELETE and d.after is None and d.typed().before == {"id": 1}


def test_object_names_with_escaped_dots_and_schemas():
    (e,) = decode(codec(), record(fields=[("id", 3)], after=[I(1)], objectName="my\\u002Edb.t\\u002E1"))
    assert (e.database, e.table) == ("my.db", "t.1")
    (e,) = decode(
        codec(),
        record(
            fields=[("id", 3)],
            after=[I(1)],
            objectName="db.sch.tbl",
            source={"sourceType": "PostgreSQL", "version": "13"},
        ),
    )
    assert (e.database, e.source.schema, e.table, e.source.db_type) == ("db", "sch", "tbl", "postgres")


def test_value_kinds():
    fields = [
        ("tiny", 1), ("ubig", 8), ("dec", 246), ("f", 4), ("d", 5), ("ts", 7), ("dt", 12), ("date", 10), ("time", 11),
        ("year", 13), ("zero", 12), ("zdate", 10), ("latin", 254), ("gbk", 253), ("bin", 254), ("txt", 252),
        ("blob", 252), ("json", 245), ("enum", 247), ("set", 248), ("geo", 255), ("bit", 16), ("nul", 3),
        ("nul2", 3),
    ]  # fmt: skip
    after = [
        I(-5, 4),
        I(2**64 - 1, 20),
        (NS + "Decimal", {"value": "12.340", "precision": 10, "scale": 3}),
        (NS + "Float", {"value": 1.5, "precision": 12, "scale": 31}),
        (NS + "Float", {"value": 0.1, "precision": 22, "scale": 31}),
        (NS + "Timestamp", {"timestamp": 1_577_836_800, "millis": 123456}),
        DT(year=2020, month=2, day=29, hour=23, minute=59, second=58, millis=999999),
        DT(year=2020, month=1, day=2),
        DT(hour=-838, minute=-59, second=-59, millis=0),
        DT(year=2024),
        DT(year=0, month=0, day=0, hour=0, minute=0, second=0, millis=0),
        DT(year=2023, month=0, day=10),
        C(b"caf\xe9", "latin1"),
        C("数据".encode("gbk"), "gbk"),
        C(b"\x00\x01", "binary"),
        (NS + "BinaryObject", {"type": "TEXT", "value": "长文本".encode()}),
        (NS + "BinaryObject", {"type": "BLOB", "value": b"\xff\x00"}),
        (NS + "TextObject", {"type": "JSON", "value": '{"a": 1}'}),
        (NS + "TextObject", {"type": "ENUM", "value": "small"}),
        (NS + "TextObject", {"type": "SET", "value": "a,b"}),
        (NS + "BinaryGeometry", {"type": "POINT", "value": b"\x00\x00\x00\x00\x01"}),
        I(5, 3),
        None,
        "NULL",
    ]
    (e,) = decode(codec(), record(fields=fields, after=after))
    types = {c.name: c.type for c in e.schema.columns}
    assert types["tiny"] == "tinyint" and types["ubig"] == "bigint unsigned" and types["dec"] == "decimal(10,3)"
    assert (types["latin"], types["bin"], types["txt"], types["blob"]) == ("char(255)", "binary(255)", "text", "blob")
    assert e.typed().after == {
        "tiny": -5,
        "ubig": 2**64 - 1,
        "dec": Decimal("12.340"),
        "f": 1.5,
        "d": 0.1,
        "ts": dt.datetime(2020, 1, 1, 0, 0, 0, 123456),  # epoch instant shown in UTC (source_timezone)
        "dt": dt.datetime(2020, 2, 29, 23, 59, 58, 999999),  # DateTime.millis holds microseconds
        "date": dt.date(2020, 1, 2),
        "time": -dt.timedelta(hours=838, minutes=59, seconds=59),
        "year": 2024,
        "zero": InvalidTemporal("0000-00-00 00:00:00"),
        "zdate": InvalidTemporal("2023-00-10"),
        "latin": "café",
        "gbk": "数据",
        "bin": b"\x00\x01",
        "txt": "长文本",
        "blob": b"\xff\x00",
        "json": '{"a": 1}',
        "enum": "small",
        "set": "a,b",
        "geo": b"\x00\x00\x00\x00\x01",
        "bit": 5,
        "nul": None,
        "nul2": None,
    }


def test_timestamps_are_shown_in_source_timezone():
    obj = record(fields=[("ts", 7)], after=[(NS + "Timestamp", {"timestamp": 1_577_836_800, "millis": 0})])
    (e,) = decode(codec(source_timezone="Asia/Shanghai"), obj)
    assert e.timezone == "Asia/Shanghai" and e.typed().after["ts"] == dt.datetime(2020, 1, 1, 8, 0)


def test_timestamp_with_time_zone_and_non_mysql_sources():
    tz = (
        NS + "TimestampWithTimeZone",
        {
            "value": DT(year=2020, month=1, day=1, hour=8, minute=0, second=0, millis=500_000_000)[1],
            "timezone": "+08:00",
        },
    )
    obj = record(
        fields=[("n", 2), ("t", 93), ("s", 12)],
        after=[I(7), tz, C("x")],
        source={"sourceType": "Oracle", "version": "19"},
    )
    (e,) = decode(codec(), obj)
    # Oracle codes are not MySQL's: types come from the values; DateTime.millis is nanoseconds there
    assert [c.type for c in e.schema.columns] == ["bigint", "timestamp(6)", "longtext"]
    assert e.typed().after == {"n": 7, "t": dt.datetime(2020, 1, 1, 0, 0, 0, 500000), "s": "x"}


def test_missing_columns_make_a_partial_image():
    (e,) = decode(codec(), record("UPDATE", [("id", 3), ("n", 253)], before=[I(1), "NONE"], after=[I(1), C("b")]))
    assert e.partial and e.before == {"id": I(1)}


def test_catalog_types_win():
    schema = TableSchema(
        (Column("id", "int unsigned", False, True), Column("flag", "bit(1)"), Column("doc", "json")), ("id",)
    )
    obj = record(
        fields=[("id", 3), ("flag", 16), ("doc", 245)],
        after=[I(3_000_000_000), I(1, 1), (NS + "TextObject", {"type": "JSON", "value": "[]"})],
    )
    (e,) = decode(codec(Catalog({("shop", "items"): schema})), obj)
    assert e.schema == schema and e.typed().after == {"id": 3_000_000_000, "flag": True, "doc": "[]"}
    (e,) = decode(codec(), obj)
    assert e.typed().after["flag"] == 1 and e.schema.column("flag").type == "bit(64)"  # no catalog: width unknown


def test_ddl_truncate_and_control_records():
    c = codec()
    (ddl,) = decode(c, record("DDL", afterImages="ALTER TABLE items ADD c int", objectName="shop"))
    assert ddl.op is Op.DDL and ddl.ddl == "ALTER TABLE items ADD c int" and ddl.database == "shop"
    (t,) = decode(c, record("DDL", afterImages="truncate table items"))
    assert t.op is Op.TRUNCATE and t.table == "items"
    for operation, op in [
        ("BEGIN", Op.BEGIN),
        ("COMMIT", Op.COMMIT),
        ("HEARTBEAT", Op.HEARTBEAT),
        ("CHECKPOINT", Op.HEARTBEAT),
        ("ROLLBACK", Op.HEARTBEAT),
    ]:
        obj = record(operation, objectName=None, tags={})
        raw = avro(obj)
        (e,) = c.decode(Record(value=raw))
        assert e.op is op
        assert [r.value for r in c.encode(e)] == [raw]  # reproduced, original operation included


# -- reproduction -----------------------------------------------------------


@pytest.mark.parametrize("born", [True, False])
def test_reencoding_reproduces_the_bytes(born):
    c = codec()
    objs = [
        record(
            fields=[("id", 3), ("n", 253), ("ts", 7)],
            after=[I(1), C("é", "utf8"), (NS + "Timestamp", {"timestamp": 5, "millis": 7})],
        ),
        record("UPDATE", [("id", 3), ("n", 253)], before=[I(1, 99), "NONE"], after=[I(1, 99), C("b", "gbk")]),
        record("DDL", afterImages="CREATE TABLE t (id int)", tags={"x": "y"}),
    ]
    for obj in objs:
        raw = avro(obj, born)
        (e,) = c.decode(Record(value=raw, key=b"k"))
        e.record = Record(value=raw, key=b"k")
        (out,) = c.encode(e)
        assert out.value == raw and out.key == b"k"


# -- encoding ---------------------------------------------------------------


def test_encoding_typed_values_uses_mysql_codes_and_union_branches():
    schema = TableSchema(
        (
            Column("id", "bigint unsigned", False, True),
            Column("name", "varchar(20)"),
            Column("body", "mediumtext"),
            Column("bin", "varbinary(4)"),
            Column("price", "decimal(6,2)"),
            Column("ts", "timestamp(6)"),
            Column("dur", "time"),
            Column("flag", "bit(1)"),
            Column("kind", "enum('a','b')"),
        ),
        ("id",),
    )
    e = ChangeEvent(
        op=Op.INSERT,
        source=SourcePosition(database="db", table="t", binlog_file="mysql-bin.000004", binlog_pos=2196),
        after={
            "id": 2**64 - 1,
            "name": "n",
            "body": "b",
            "bin": b"\x01",
            "price": Decimal("1.5"),
            "ts": dt.datetime(2020, 1, 1, 8, 0, 0, 1),
            "dur": dt.timedelta(hours=-1, seconds=-1),
            "flag": True,
            "kind": "b",
        },
        schema=schema,
        pk=("id",),
        ts_ms=1_600_000_000_250,
        timezone="Asia/Shanghai",
    )
    (r,) = codec().encode(e)
    obj = fastavro.schemaless_reader(io.BytesIO(r.value), SCHEMA, None, True)
    assert obj["operation"] == "INSERT" and obj["objectName"] == "db.t"
    assert obj["sourceTimestamp"] == 1_600_000_000 and obj["bornTimestamp"] == 1_600_000_000_250
    assert obj["sourcePosition"] == "2196@4"
    assert orjson.loads(obj["tags"]["pk_uk_info"]) == {"PRIMARY": ["id"]}
    assert [(f["name"], f["dataTypeNumber"]) for f in obj["fields"]] == [
        ("id", 8), ("name", 253), ("body", 250), ("bin", 253), ("price", 246), ("ts", 7), ("dur", 11), ("flag", 16),
        ("kind", 247),
    ]  # fmt: skip
    assert obj["afterImages"] == [
        I(2**64 - 1, 20),
        C("n"),
        (NS + "BinaryObject", {"type": "TEXT", "value": b"b"}),
        C(b"\x01", "binary"),
        (NS + "Decimal", {"value": "1.50", "precision": 6, "scale": 2}),
        (NS + "Timestamp", {"timestamp": 1_577_836_800, "millis": 1}),  # 08:00 Shanghai = 00:00 UTC
        DT(hour=-1, minute=0, second=-1, millis=0),
        I(1, 1),
        (NS + "TextObject", {"type": "ENUM", "value": "b"}),
    ]
    assert orjson.loads(r.key) == {"id": 2**64 - 1}


def test_lone_halves_and_unsupported_events():
    c = codec()
    src = SourcePosition(database="d", table="t")
    schema = TableSchema((Column("id", "int", False, True),), ("id",))
    (r,) = c.encode(ChangeEvent(op=Op.UPDATE, source=src, before={"id": 1}, schema=schema, pk=("id",), partial=True))
    assert fastavro.schemaless_reader(io.BytesIO(r.value), SCHEMA)["operation"] == "DELETE"
    (r,) = c.encode(ChangeEvent(op=Op.UPDATE, source=src, after={"id": 1}, schema=schema, pk=("id",), partial=True))
    assert fastavro.schemaless_reader(io.BytesIO(r.value), SCHEMA)["operation"] == "INSERT"
    (r,) = c.encode(ChangeEvent(op=Op.TRUNCATE, source=src))
    obj = fastavro.schemaless_reader(io.BytesIO(r.value), SCHEMA)
    assert (obj["operation"], obj["afterImages"]) == ("DDL", "TRUNCATE TABLE `d`.`t`")
    assert c.encode(ChangeEvent(op=Op.WATERMARK)) == []


# -- bad input --------------------------------------------------------------


def test_truncated_messages_are_decode_errors():
    obj = record(fields=[("id", 3), ("n", 253)], after=[I(1), C("abc")])
    raw = avro(obj)
    short = len(avro(obj, born=False))
    for n in range(len(raw)):
        if n == short:
            # cut exactly before bornTimestamp: indistinguishable from the SDK's short form
            assert codec().decode(Record(value=raw[:n]))[0].ts_ms == 1_600_000_000_000
            continue
        with pytest.raises(DecodeError, match="truncated|malformed|without|values for"):
            codec().decode(Record(value=raw[:n]))


def test_truncated_avro_names_the_problem():
    raw = avro(record(fields=[("id", 3)], after=[I(1)]))
    with pytest.raises(DecodeError, match="truncated Avro record"):
        codec().decode(Record(value=raw[:20]))


@pytest.mark.parametrize(
    "value, reason",
    [
        (None, "tombstone"),
        (b"", "truncated"),
        (b'{"type":"insert","data":{}}', "malformed Avro record|truncated"),
        (b"\x02" * 3 + b"\xff" * 40, "malformed|truncated"),
    ],
)
def test_wrong_format_is_a_decode_error(value, reason):
    with pytest.raises(DecodeError, match=reason):
        codec().decode(Record(value=value))


@pytest.mark.parametrize(
    "obj, reason",
    [
        (record(fields=None, after=[I(1)]), "without a fields array"),
        (record(fields=[("id", 3)], after=None), "without afterImages"),
        (record(fields=[("id", 3), ("x", 3)], after=[I(1)]), "1 values for 2 fields"),
        (record("UPDATE", [("id", 3)], after=[I(1)]), "without beforeImages"),
        (record(fields=[("id", 3)], after="not an image"), "must be an array"),
        (record(fields=[("id", 3)], after=[I("x")]), "bad Integer value"),
        (record(fields=[("n", 253)], after=[C("x", "klingon")]), "bad Character value"),
        (record(fields=[("id", 3)], after=[I(1)], tags={"pk_uk_info": "{oops"}), "pk_uk_info"),
        (record("DDL", afterImages=None), "DDL record without its statement"),
        (record(fields=[("id", 3)], after=[I(1)], objectName="a.b.c.d"), "more than db.schema.table"),
    ],
)
def test_bad_records_are_decode_errors(obj, reason):
    with pytest.raises(DecodeError, match=reason):
        codec().decode(Record(value=avro(obj)))


def test_trailing_bytes_are_an_error():
    raw = avro(record(fields=[("id", 3)], after=[I(1)]))
    with pytest.raises(DecodeError, match="trailing bytes"):
        codec().decode(Record(value=raw + b"\x00"))


def test_sniff():
    assert DtsAvro.sniff(avro(record(fields=[("id", 3)], after=[I(1)])))
    assert not DtsAvro.sniff(b'{"type":"insert"}')
    assert not DtsAvro.sniff({"op": "c"})


# -- properties -------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(change_streams())
def test_round_trip_is_lossless(events):
    """DTS carries every typed value exactly, with or without a catalog (a
    catalog only restores type details: lengths, signedness, labels)."""
    e0 = events[0]
    enc, plain, typed = codec(), codec(), codec(Catalog({(e0.database, e0.table): e0.schema}))
    for e in events:
        (r,) = enc.encode(e)
        (back,) = typed.decode(r)
        assert back.schema == e0.schema
        assert essence(back) == essence(e)
        (back,) = plain.decode(r)
        assert essence(back) == essence(e)
        assert back.ts_ms == e.ts_ms


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(change_streams(timezone="Asia/Shanghai"))
def test_timestamps_survive_a_zone_change(events):
    enc, dec = codec(), codec(source_timezone="America/New_York")
    for e in events:
        (back,) = dec.decode(enc.encode(e)[0])
        assert back.timezone == "America/New_York"
        rebased = ChangeEvent(
            op=back.op,
            source=back.source,
            before=back.before,
            after=back.after,
            schema=back.schema,
            pk=back.pk,
            values=back.values,
            timezone=back.timezone,
        )
        (again,) = codec(source_timezone="Asia/Shanghai").decode(codec().encode(rebased)[0])
        assert essence(again) == essence(e)
