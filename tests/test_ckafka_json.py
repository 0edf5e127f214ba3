"""ckafka-json: official format 1 DML (strings, yyyyMMddHHmmss TIME) and Canal-shaped DDL."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt import schemas
from cdc_smt.transforms.catalog import SchemaCatalog
from cdc_smt.transforms.errors import DecodeError
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import ChangeEvent, Column, Op, Record, SourcePosition, TableSchema
from tests.strategies import change_streams, essence, table_schemas

FMT = "ckafka-json"
SCHEMA = TableSchema(
    (
        Column("id", "int", nullable=False, primary_key=True),
        Column("first_name", "varchar(255)"),
        Column("last_name", "varchar(255)"),
        Column("email", "varchar(255)"),
    ),
    ("id",),
)
ROW = {"last_name": "Kretchmar", "id": "1004", "first_name": "Anne", "email": "annek@noanswer.org"}


def dml(typ: str, new=None, old=None, **fields) -> dict:
    """A format-1 message shaped like the document's examples (000_*.txt)."""
    msg = {
        "BINLOG_NAME": "mysql-bin.000003", "BINLOG_POS": 154, "DATABASE": "inventory", "EVENT_SERVER_ID": None,
        "GLOBAL_ID": None, "GROUP_ID": None, "NEW_VALUES": new, "OLD_VALUES": old, "TABLE": "customers",
        "TIME": "19700101080000", "TYPE": typ,
    }  # fmt: skip
    msg.update(fields)
    return msg


def ddl(sql: str, table: str, typ: str, database: str = "inventory") -> dict:
    return {
        "data": None, "database": database, "es": 1655812326, "id": 0, "isDdl": True, "mysqlType": None, "old": None,
        "pkNames": None, "sql": sql, "sqlType": None, "table": table, "ts": 1655812326, "type": typ,
    }  # fmt: skip


def codec(catalog: SchemaCatalog | None = None, **options):
    return get_codec(FMT, {"source_timezone": "Asia/Shanghai", **options}, catalog=catalog)


def with_schema() -> SchemaCatalog:
    cat = SchemaCatalog()
    cat.put("inventory", "customers", SCHEMA)
    return cat


def decode(c, msg: dict) -> list[ChangeEvent]:
    return c.decode(Record(value=orjson.dumps(msg)))


def test_time_is_wall_clock_in_the_source_zone():
    # The document's insert has TIME 19700101080000: the epoch, printed in UTC+8.
    [e] = decode(codec(), dml("I", new=ROW))
    assert e.ts_ms == 0 and e.timezone == "Asia/Shanghai"
    [e] = decode(get_codec(FMT), dml("I", new=ROW))
    assert e.ts_ms == 8 * 3600 * 1000


def test_values_typed_through_the_catalog():
    [e] = decode(
        codec(with_schema()),
        dml(
            "U",
            new={**ROW, "first_name": "Anne Marie"},
            old=ROW,
            BINLOG_POS=484,
            GLOBAL_ID="uuid:12",
            EVENT_SERVER_ID=7,
        ),
    )
    assert e.op is Op.UPDATE and e.changed == ("first_name",)
    assert e.pk == ("id",) and e.schema is SCHEMA
    assert e.typed().after["id"] == 1004 and e.before["first_name"] == "Anne"
    src = e.source
    assert (src.binlog_file, src.binlog_pos, src.gtid, src.server_id, src.database, src.table) == (
        "mysql-bin.000003",
        484,
        "uuid:12",
        7,
        "inventory",
        "customers",
    )


def test_without_a_schema_values_stay_strings():
    [e] = decode(codec(), dml("D", old=ROW))
    assert e.op is Op.DELETE and e.after is None
    assert e.before == ROW and e.schema is None and e.values is None and e.pk == ()


def test_create_table_ddl_in_the_stream_types_later_rows():
    pytest.importorskip("cdc_smt.transforms.formats.canal_json")
    c = codec()
    create = ddl(
        "CREATE TABLE `customers` (\n`id` int NOT NULL AUTO_INCREMENT,\n`first_name` varchar(255) NOT NULL,\n"
        "`last_name` varchar(255) NOT NULL,\n`email` varchar(255) NOT NULL,\nPRIMARY KEY (`id`)\n) ENGINE=InnoDB",
        "customers",
        "CREATE",
    )
    [d] = decode(c, create)
    assert (d.op, d.ddl_kind, d.origin) == (Op.DDL, "CREATE", FMT)
    assert d.ts_ms == 1655812326000  # es in seconds in the document's DDL
    [row] = decode(c, dml("I", new=ROW))
    assert row.pk == ("id",) and row.typed().after["id"] == 1004
    decode(c, ddl("alter table customers add column score decimal(4,1) null", "customers", "ALTER"))
    [row2] = decode(c, dml("I", new={**ROW, "score": "9.5"}))
    assert row2.typed().after["score"] == Decimal("9.5")
    assert row.schema.names == ("id", "first_name", "last_name", "email")  # earlier row: schema before the ALTER


def test_columns_the_catalog_lacks_stay_text():
    [e] = decode(codec(with_schema()), dml("I", new={**ROW, "extra": "x"}))
    assert e.schema.column("extra").type == "longtext"
    assert e.typed().after["extra"] == "x" and e.after["id"] == 1004


def test_canal_ddl_es_in_milliseconds_is_kept():
    pytest.importorskip("cdc_smt.transforms.formats.canal_json")
    msg = ddl("rename table test to t_test", "t_test", "RENAME", database="testDB")
    msg["es"] = msg["ts"] = 1656300979748
    [e] = decode(codec(), msg)
    assert e.ts_ms == 1656300979748


@pytest.mark.parametrize(
    "msg,reason",
    [
        (dml("X", new=ROW), "unknown TYPE 'X' (expected I, U or D)"),
        (dml(None, new=ROW), "unknown TYPE None"),
        (dml("I", new=ROW, TIME="2016-06-11 02:05"), "TIME '2016-06-11 02:05' is not yyyyMMddHHmmss"),
        (dml("I", new=ROW, TIME="20161311020502"), "not a valid date and time"),
        (dml("I", new=ROW, TIME=20160611020502), "is not yyyyMMddHHmmss"),
        (dml("I"), "TYPE I needs NEW_VALUES"),
        (dml("U", new=ROW), "TYPE U needs OLD_VALUES"),
        (dml("D", new=ROW, old=ROW), "a delete has no new row"),
        (dml("I", new=ROW, old=ROW), "an insert has no old row"),
        (dml("I", new=["1004"]), "NEW_VALUES must be an object"),
        (dml("I", new={"id": 1004}), "NEW_VALUES.id must be a string or null"),
        (dml("I", new=ROW, BINLOG_POS="154"), "field 'BINLOG_POS' must be a integer"),
        (dml("I", new=ROW, DATABASE=None), "field 'DATABASE' must be a string"),
        ({k: v for k, v in dml("I", new=ROW).items() if k != "TIME"}, "missing field 'TIME'"),
        ({"isDdl": False, "type": "INSERT", "data": [ROW]}, "Canal-shaped DML is not part of ckafka-json"),
        ({"op": "c", "after": ROW}, "neither a format-1 DML message"),
    ],
)
def test_bad_input(msg, reason):
    with pytest.raises(DecodeError) as info:
        decode(codec(), msg)
    assert reason in str(info.value)


def test_not_json_and_not_an_object():
    c = codec()
    with pytest.raises(DecodeError, match="malformed JSON"):
        c.decode(Record(value=b"{nope"))
    with pytest.raises(DecodeError, match="expected a JSON object"):
        c.decode(Record(value=b"[1]"))


def test_same_format_reproduces_dml_bytes():
    c = codec(with_schema())
    for msg in [
        dml("I", new=ROW),
        dml("U", new=ROW, old={**ROW, "email": None}, GLOBAL_ID="g:1", GROUP_ID="grp"),
        dml("D", old=ROW, EVENT_SERVER_ID="srv-a"),
    ]:
        raw = orjson.dumps(msg)
        [e] = c.decode(Record(value=raw))
        assert c.encode(e)[0].value == raw


def test_same_format_reproduces_ddl():
    pytest.importorskip("cdc_smt.transforms.formats.canal_json")
    c = codec()
    msg = ddl("DROP TABLE IF EXISTS `dip_test`.`customers`", "customers", "ERASE", database="dip_test")
    [e] = decode(c, msg)
    assert orjson.loads(c.encode(e)[0].value) == msg


def test_encode_foreign_events():
    c = codec()
    schema = TableSchema(
        (Column("id", "bigint"), Column("at", "timestamp(3)"), Column("raw", "varbinary(4)"), Column("ok", "bit(1)")),
        ("id",),
    )
    e = ChangeEvent(
        op=Op.READ,
        source=SourcePosition(database="d", table="t"),
        after={"id": 5, "at": dt.datetime(2020, 1, 1, 0, 0, 0, 123000), "raw": b"\x00\xff", "ok": True},
        schema=schema,
        ts_ms=1_600_000_000_000,
        timezone="UTC",
    )
    obj = orjson.loads(c.encode(e)[0].value)
    assert obj["TYPE"] == "I" and obj["OLD_VALUES"] is None
    # TIMESTAMP shown in the encoder's zone; bytes one char per byte; TIME from ts_ms in Asia/Shanghai.
    assert obj["NEW_VALUES"] == {"id": "5", "at": "2020-01-01 08:00:00.123", "raw": "\x00\xff", "ok": "1"}
    assert obj["TIME"] == "20200913202640"  # 2020-09-13 12:26:40 UTC
    assert obj["BINLOG_NAME"] is None and obj["GLOBAL_ID"] is None
    assert not list(schemas.validator(FMT).iter_errors(obj))
    assert c.encode(ChangeEvent(op=Op.BEGIN)) == [] and c.encode(ChangeEvent(op=Op.HEARTBEAT)) == []


def test_encode_without_any_time_is_an_error():
    from cdc_smt.transforms.errors import EncodeError

    with pytest.raises(EncodeError, match="no event time"):
        codec().encode(ChangeEvent(op=Op.INSERT, after={"a": "1"}))


def test_sniff():
    from cdc_smt.transforms.formats.ckafka_json import CKafkaJson

    assert CKafkaJson.sniff(dml("I", new=ROW))
    assert CKafkaJson.sniff(ddl("drop table t", "t", "ERASE"))
    assert not CKafkaJson.sniff({"type": "INSERT", "isDdl": False, "data": []})
    assert not CKafkaJson.sniff({"logtype": "mysqlbinlog"})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_round_trip_with_the_schema_in_the_catalog(data):
    schema = data.draw(table_schemas(max_columns=6))
    events = data.draw(change_streams(schema=schema, max_events=6, database="inventory", table="t"))
    cat = SchemaCatalog()
    cat.put("inventory", "t", schema)
    enc, dec = get_codec(FMT, catalog=cat), get_codec(FMT, catalog=cat)
    validator = schemas.validator(FMT)
    for e in events:
        e.ts_ms -= e.ts_ms % 1000  # TIME has whole seconds
        want = essence(e)
        [rec] = enc.encode(e)
        assert not list(validator.iter_errors(orjson.loads(rec.value)))
        [back] = dec.decode(rec)
        assert essence(back) == want and back.ts_ms == e.ts_ms
        assert enc.encode(back)[0].value == rec.value


def test_encode_foreign_ddl_in_canal_shape():
    pytest.importorskip("cdc_smt.transforms.formats.canal_json")
    e = ChangeEvent(
        op=Op.DDL,
        source=SourcePosition(database="d", table="t"),
        ddl="alter table t add c int",
        ts_ms=1_600_000_000_000,
    )
    obj = orjson.loads(codec().encode(e)[0].value)
    assert (obj["isDdl"], obj["sql"], obj["type"], obj["database"], obj["table"], obj["es"]) == (
        True,
        e.ddl,
        "ALTER",
        "d",
        "t",
        1_600_000_000_000,
    )
    assert not list(schemas.validator(FMT).iter_errors(obj))
