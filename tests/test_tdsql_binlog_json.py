"""tdsql-binlog-json: positional SQL-literal rows named by the catalog, GTID/XID/QUERY events."""

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
from cdc_smt.transforms.sqltext import (
    LiteralError,
    LiteralKind,
    literal_value,
    parse_literal,
    scan_literals,
    to_literal,
)
from cdc_smt.transforms.types import InvalidTemporal, parse_type
from tests.messages import tdsql_message
from tests.strategies import COLUMN_TYPES, change_streams, essence, table_schemas, value_strategy

FMT = "tdsql-binlog-json"


# ---------------------------------------------------------------------------
# the literal scanner (MySQL manual, "Literal Values")
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,kind,value",
    [
        ("'it''s'", LiteralKind.STRING, "it's"),
        (r"'a\'b'", LiteralKind.STRING, "a'b"),
        (r"'\n\t\r\0\Z\\'", LiteralKind.STRING, "\n\t\r\0\x1a\\"),
        (r"'\%\_'", LiteralKind.STRING, "\\%\\_"),  # LIKE escapes keep their backslash
        (r"'\q'", LiteralKind.STRING, "q"),  # any other escaped char is itself
        ('"dq ""x"""', LiteralKind.STRING, 'dq "x"'),
        ("''", LiteralKind.STRING, ""),
        ("'数据库 🎉'", LiteralKind.STRING, "数据库 🎉"),
        ("_utf8mb4'x'", LiteralKind.STRING, "x"),
        ("N'x'", LiteralKind.STRING, "x"),
        ("_binary'ab'", LiteralKind.HEX, b"ab"),
        ("NULL", LiteralKind.NULL, None),
        ("null", LiteralKind.NULL, None),
        ("1", LiteralKind.INT, "1"),
        ("-42", LiteralKind.INT, "-42"),
        ("+7", LiteralKind.INT, "+7"),
        ("3.14", LiteralKind.DECIMAL, "3.14"),
        (".5", LiteralKind.DECIMAL, ".5"),
        ("-1.5e3", LiteralKind.FLOAT, "-1.5e3"),
        ("1E-2", LiteralKind.FLOAT, "1E-2"),
        ("0x0A", LiteralKind.HEX, b"\n"),
        ("0xABC", LiteralKind.HEX, b"\x0a\xbc"),  # 0x.. is left-padded to whole bytes
        ("X'0A'", LiteralKind.HEX, b"\n"),
        ("x''", LiteralKind.HEX, b""),
        ("b'101'", LiteralKind.BITS, 5),
        ("0b11", LiteralKind.BITS, 3),
        ("TRUE", LiteralKind.BOOL, 1),
        ("  'padded'  ", LiteralKind.STRING, "padded"),
    ],
)
def test_parse_literal(text, kind, value):
    lit = parse_literal(text)
    assert (lit.kind, lit.value) == (kind, value)


@pytest.mark.parametrize(
    "text", ["'open", "X'0'", "X'zz'", "b'102'", "1.2.3", "12abc", "frob", "", "'a' 'b'", "1e", "-"]
)
def test_bad_literals(text):
    with pytest.raises(LiteralError):
        parse_literal(text)


def test_scan_a_values_list():
    lits = list(scan_literals("1, 'a,b', NULL,X'FF' , -2.5"))
    assert [lit.value for lit in lits] == ["1", "a,b", None, b"\xff", "-2.5"]
    with pytest.raises(LiteralError):
        list(scan_literals("1 2"))
    with pytest.raises(LiteralError):
        list(scan_literals("1,"))


@pytest.mark.parametrize(
    "text,type_text,value",
    [
        ("1", "int", 1),
        ("18446744073709551615", "bigint unsigned", 18446744073709551615),
        ("'12'", "int", 12),
        ("9.50", "decimal(5,2)", Decimal("9.50")),
        ("-1.5e3", "decimal(10,1)", Decimal("-1500")),
        ("-1.5e3", "double", -1500.0),
        ("2", "enum('a','b','c')", "b"),  # the binlog stores the 1-based index
        ("'c'", "enum('a','b','c')", "c"),
        ("5", "set('r','g','b')", "r,b"),  # ... and the set bitmask
        ("b'1'", "bit(1)", True),
        ("b'101'", "bit(8)", 5),
        ("0x0A", "bit(8)", 10),
        ("X'00FF'", "varbinary(4)", b"\x00\xff"),
        ("'ab'", "binary(2)", b"ab"),
        ("X'6869'", "varchar(5)", "hi"),
        ("'2020-02-29'", "date", dt.date(2020, 2, 29)),
        ("'0000-00-00'", "date", InvalidTemporal("0000-00-00")),
        ("'2020-02-29 01:02:03.5'", "datetime(1)", dt.datetime(2020, 2, 29, 1, 2, 3, 500000)),
        ("'-838:59:59'", "time", -dt.timedelta(hours=838, minutes=59, seconds=59)),
        ("2024", "year", 2024),
        ("'{\"a\": 1}'", "json", '{"a": 1}'),
        ("TRUE", "tinyint(1)", 1),
    ],
)
def test_literal_typed_by_column(text, type_text, value):
    assert literal_value(parse_literal(text), parse_type(type_text)) == value


def test_numeric_timestamp_is_epoch_seconds_in_the_source_zone():
    ts = parse_type("timestamp")
    assert literal_value(parse_literal("0"), ts, "UTC") == dt.datetime(1970, 1, 1)
    assert literal_value(parse_literal("0"), ts, "Asia/Shanghai") == dt.datetime(1970, 1, 1, 8)
    assert literal_value(parse_literal("'2020-01-01 00:00:00'"), ts, "Asia/Shanghai") == dt.datetime(2020, 1, 1)


def test_literal_that_does_not_fit_the_column_is_an_error():
    with pytest.raises(ValueError):
        literal_value(parse_literal("1.5"), parse_type("int"))
    with pytest.raises(ValueError):
        literal_value(parse_literal("3"), parse_type("date"))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_to_literal_round_trips_every_type(data):
    type_text = data.draw(st.sampled_from(COLUMN_TYPES))
    value = data.draw(value_strategy(type_text))
    mtype = parse_type(type_text)
    assert literal_value(parse_literal(to_literal(value, mtype)), mtype) == value


def test_string_literals_escape_what_mysql_escapes():
    assert to_literal('it\'s \\ \n \0 \x1a "q"', parse_type("text")) == "'it\\'s \\\\ \\n \\0 \\Z \\\"q\\\"'"
    assert to_literal(b"\x00\xff", parse_type("blob")) == "X'00FF'"
    assert to_literal(True, parse_type("bit(1)")) == "b'1'"
    assert to_literal(None, parse_type("int")) == "NULL"


# ---------------------------------------------------------------------------
# decoding
# ---------------------------------------------------------------------------

SCHEMA = TableSchema(
    (
        Column("id", "int", nullable=False, primary_key=True),
        Column("name", "varchar(20)"),
        Column("price", "decimal(10,2)"),
    ),
    ("id",),
)


def codec(**options) -> object:
    cat = SchemaCatalog()
    cat.put("shop", "items", SCHEMA)
    return get_codec(FMT, options, catalog=cat)


message = tdsql_message


def decode(c, msg: dict) -> list[ChangeEvent]:
    return c.decode(Record(value=orjson.dumps(msg)))


def test_insert_update_delete_named_and_typed_by_the_catalog():
    c = codec()
    [ins] = decode(c, message("insert", 23, where=[], field=["1", "'it''s'", "9.50"]))
    assert ins.op is Op.INSERT and ins.before is None
    assert ins.typed().after == {"id": 1, "name": "it's", "price": Decimal("9.50")}
    assert ins.pk == ("id",) and ins.schema is SCHEMA
    assert ins.ts_ms == 1511350073000
    assert ins.source.gtid == "0-2670193178-726233561" and ins.source.db_type == "mariadb"
    [upd] = decode(c, message("update", 31, where=["1", "'a'", "NULL"], field=["1", "'b'", "NULL"]))
    assert upd.op is Op.UPDATE and upd.changed == ("name",)
    assert upd.typed().before == {"id": 1, "name": "a", "price": None}
    [dele] = decode(c, message("delete", 25, where=["1", "'b'", "1.00"], field=[]))
    assert dele.op is Op.DELETE and dele.after is None and dele.typed().before["price"] == Decimal("1.00")


def test_gtid_and_xid_are_transaction_markers():
    c = codec()
    [begin] = decode(c, message("gtid", 33, gtid="35be190b-d019-11e7-ab7a-a0423f32c225:469"))
    assert begin.op is Op.BEGIN and begin.source.gtid.endswith(":469") and begin.source.db_type == "mysql"
    [commit] = decode(c, message("xid", 16, xid="11866"))
    assert commit.op is Op.COMMIT and commit.source.txid == "11866"


def test_query_events():
    c = codec()
    [ddl] = decode(c, message("query", 2, sql="alter table items add column qty int"))
    assert (ddl.op, ddl.ddl_kind) == (Op.DDL, "ALTER")
    assert c.catalog.get("shop", "items").names == ("id", "name", "price", "qty")
    [trunc] = decode(c, message("query", 2, sql="TRUNCATE TABLE items"))
    assert trunc.op is Op.TRUNCATE and trunc.ddl == "TRUNCATE TABLE items"
    [begin] = decode(c, message("query", 2, sql="BEGIN"))
    assert begin.op is Op.BEGIN and begin.ddl is None
    [db] = decode(c, message("query", 2, sql="CREATE DATABASE x"))
    assert (db.op, db.ddl_kind) == (Op.DDL, "QUERY")


def test_query_compressed_and_row_event_codes_v2_and_mariadb():
    c = codec()
    for code in (23, 30, 166, 169):
        assert decode(c, message("insert", code, where=[], field=["1", "NULL", "NULL"]))[0].op is Op.INSERT
    assert decode(c, message("query", 165, sql="create table z (a int)"))[0].op is Op.DDL
    assert decode(c, message("gtid", 162))[0].op is Op.BEGIN


def test_unknown_table_is_an_error_by_default():
    with pytest.raises(DecodeError, match=r"table shop\.other is not in the schema catalog.*unknown_table: positional"):
        decode(codec(), message("insert", 23, table="other", where=[], field=["1", "'x'"]))


def test_unknown_table_positional():
    [e] = decode(
        codec(unknown_table="positional"),
        message("insert", 23, table="other", where=[], field=["1", "'x'", "2.5", "NULL", "0x0A"]),
    )
    assert e.after == {"@1": 1, "@2": "x", "@3": Decimal("2.5"), "@4": None, "@5": b"\n"}
    assert e.schema is None and e.values is None


def test_ddl_in_the_stream_names_later_rows_without_a_catalog():
    c = get_codec(FMT)
    decode(
        c, message("query", 2, table="statustableforhb", sql="create table items (id int primary key,name varchar(20))")
    )
    [e] = decode(c, message("insert", 23, where=[], field=["1", "'name1'"]))
    assert e.typed().after == {"id": 1, "name": "name1"} and e.pk == ("id",)


def test_shared_catalog_sees_the_ddl_once():
    cat = SchemaCatalog()
    c = get_codec(FMT, catalog=cat)
    [e] = decode(c, message("query", 2, sql="create table items (id int); alter table items add b int"))
    assert cat.observe(e) == []  # the chain observing the same event again changes nothing
    assert [v.schema.names for v in cat.versions("shop", "items")] == [("id",), ("id", "b")]


@pytest.mark.parametrize(
    "change,reason",
    [
        ({"logtype": "binlog"}, "logtype is 'binlog', expected 'mysqlbinlog'"),
        ({"eventtypestr": "replace"}, "unknown eventtypestr 'replace'"),
        ({"eventtype": 2}, "eventtype 2 does not match eventtypestr 'insert'"),
        ({"eventtype": "23"}, "eventtype '23' does not match"),
        ({"db": 5}, "field 'db' must be a string"),
        ({"begintime": "1511350073"}, "begintime must be epoch seconds"),
        ({"field": "1,2"}, "'field' must be an array"),
        ({"field": [1, {"x": 1}, 3]}, "field[1] must be a SQL literal"),
        ({"field": []}, "an insert needs values in 'field'"),
        ({"where": ["1", "NULL", "NULL"]}, "none in 'where'"),
        ({"field": ["1", "'x'"]}, "has 3 columns in the schema catalog but the message has 2 values"),
        ({"field": ["1", "'unterminated", "NULL"]}, "field[1]: unterminated string literal"),
        ({"field": ["1", "'x'", "12abc"]}, "field[2]: bad number"),
    ],
)
def test_bad_messages(change, reason):
    msg = message("insert", 23, where=[], field=["1", "'x'", "NULL"])
    msg.update(change)
    with pytest.raises(DecodeError) as info:
        decode(codec(), msg)
    assert reason in str(info.value)


def test_a_literal_that_does_not_fit_its_column_names_the_column_when_typed():
    [e] = decode(codec(), message("insert", 23, where=[], field=["1", "'x'", "'abc'"]))
    with pytest.raises(ValueError, match="column 'price'"):
        e.typed()


@pytest.mark.parametrize(
    "msg,reason",
    [
        (
            message("update", 24, where=["1", "'a'", "NULL"], field=["1", "'b'"]),
            "as many values in 'where' as in 'field'",
        ),
        (message("delete", 25, where=[], field=["1", "'b'", "NULL"]), "a delete needs values in 'where'"),
        (message("xid", 16), "missing field 'xid'"),
        (message("query", 2), "missing field 'sql'"),
        ({"eventtypestr": "insert"}, "missing field 'logtype'"),
    ],
)
def test_missing_parts(msg, reason):
    with pytest.raises(DecodeError, match=reason):
        decode(codec(), msg)


def test_update_decodes_with_missing_eventtype_reports_it():
    msg = message("update", 24, where=["1", "'a'", "NULL"], field=["1", "'b'", "NULL"])
    del msg["eventtype"]
    with pytest.raises(DecodeError, match="missing field 'eventtype'"):
        decode(codec(), msg)


# ---------------------------------------------------------------------------
# encoding
# ---------------------------------------------------------------------------


def foreign(op: Op, before=None, after=None, **kw) -> ChangeEvent:
    return ChangeEvent(
        op=op,
        source=SourcePosition(database="shop", table="items", gtid="g:1"),
        before=before,
        after=after,
        schema=SCHEMA,
        pk=("id",),
        ts_ms=1_600_000_000_999,
        **kw,
    )


def test_encode_typed_events_in_column_order():
    c = codec()
    [rec] = c.encode(foreign(Op.INSERT, after={"price": Decimal("1.50"), "name": "o'k", "id": 7}))
    obj = orjson.loads(rec.value)
    assert obj["field"] == ["7", "'o\\'k'", "1.50"] and obj["where"] == []
    assert (obj["eventtype"], obj["eventtypestr"], obj["begintime"], obj["gtid"]) == (
        23,
        "insert",
        1_600_000_000,
        "g:1",
    )
    assert "localip" not in obj  # not invented for events from elsewhere
    assert not list(schemas.validator(FMT).iter_errors(obj))


def test_encode_row_event_version_2_and_controls():
    c = codec(row_event_version=2)
    obj = orjson.loads(c.encode(foreign(Op.DELETE, before={"id": 1, "name": None, "price": None}))[0].value)
    assert (obj["eventtype"], obj["where"], obj["field"]) == (32, ["1", "NULL", "NULL"], [])
    obj = orjson.loads(
        c.encode(ChangeEvent(op=Op.COMMIT, source=SourcePosition(database="shop", table="items", txid="99")))[0].value
    )
    assert (obj["eventtype"], obj["eventtypestr"], obj["xid"]) == (16, "xid", "99")
    obj = orjson.loads(
        c.encode(ChangeEvent(op=Op.DDL, source=SourcePosition(database="shop", table="items"), ddl="drop table items"))[
            0
        ].value
    )
    assert (obj["eventtype"], obj["sql"]) == (2, "drop table items")
    assert c.encode(ChangeEvent(op=Op.HEARTBEAT)) == []


def test_encode_update_with_changed_columns_only_fills_the_rest_from_after():
    c = codec()
    e = foreign(Op.UPDATE, before={"name": "a"}, after={"id": 1, "name": "b", "price": None})
    obj = orjson.loads(c.encode(e)[0].value)
    assert obj["where"] == ["1", "'a'", "NULL"] and obj["field"] == ["1", "'b'", "NULL"]


def test_encode_timestamp_in_the_encoder_zone():
    schema = TableSchema((Column("id", "int"), Column("at", "timestamp")), ("id",))
    c = get_codec(FMT, {"source_timezone": "Asia/Shanghai"})
    e = ChangeEvent(
        op=Op.INSERT,
        source=SourcePosition(database="d", table="t"),
        after={"id": 1, "at": dt.datetime(2020, 1, 1)},
        schema=schema,
        timezone="UTC",
    )
    assert orjson.loads(c.encode(e)[0].value)["field"] == ["1", "'2020-01-01 08:00:00'"]


def test_same_format_reproduces_the_message():
    c = codec()
    for msg in [
        message("insert", 30, where=[], field=["1", "'it''s'", "9.50"], extra_field={"x": 1}),
        message("update", 24, where=["1", "_utf8mb4'a'", "NULL"], field=["1", "'b'", "0x0A"]),
        message("delete", 171, where=["1", "'b'", "1.00"], field=[]),
        message("gtid", 33),
        message("xid", 16, xid=11866),
        message("query", 2, sql="COMMIT"),
        message("query", 2, sql="truncate items"),
    ]:
        raw = orjson.dumps(msg)
        [e] = c.decode(Record(value=raw))
        assert c.encode(e)[0].value == raw


# ---------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_round_trip_with_the_schema_in_the_catalog(data):
    schema = data.draw(table_schemas(max_columns=6))
    events = data.draw(change_streams(schema=schema, max_events=6))
    cat = SchemaCatalog()
    cat.put("shop", "t", schema)
    enc, dec = get_codec(FMT, catalog=cat), get_codec(FMT, catalog=cat)
    validator = schemas.validator(FMT)
    for e in events:
        want = essence(e)
        [rec] = enc.encode(e)
        assert not list(validator.iter_errors(orjson.loads(rec.value)))
        [back] = dec.decode(rec)
        assert essence(back) == want
        [again] = enc.encode(back)
        assert again.value == rec.value  # re-encoding a decoded message reproduces it
