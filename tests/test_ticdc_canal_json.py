"""ticdc-canal-json: what TiCDC does differently from official Canal.

Expectations come from the TiCDC Canal-JSON protocol document (003_*.txt in
../shared/formats) and TiCDC's encoder (``pkg/sink/codec/canal``).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from cdc_smt import schemas
from cdc_smt.transforms.changelog import replay
from cdc_smt.transforms.errors import DecodeError, EncodeError
from cdc_smt.transforms.formats.ticdc_canal_json import TICDC_TEXT, TicdcCanalJson, ticdc_type_name
from cdc_smt.transforms.model import ChangeEvent, Column, Op, Record, SourcePosition, TableSchema
from cdc_smt.transforms.types import Kind, parse_type, set_bits_from_labels
from tests.strategies import change_streams, essence

VALIDATOR = schemas.validator("ticdc-canal-json")
TSO = 429918007904436226


def message(**fields) -> dict:
    """The TiCDC doc's tp_int example (as UPDATE/INSERT/DELETE per ``type``)."""
    row = {
        "c_bigint": "9223372036854775807", "c_int": "2147483647", "c_mediumint": "8388607", "c_smallint": "32767",
        "c_tinyint": "127", "id": "2",
    }  # fmt: skip
    base = {
        "id": 0, "database": "test", "table": "tp_int", "pkNames": ["id"], "isDdl": False, "type": "INSERT",
        "es": 1639633141221, "ts": 1639633142960, "sql": "",
        "sqlType": {"c_bigint": -5, "c_int": 4, "c_mediumint": 4, "c_smallint": 5, "c_tinyint": -6, "id": 4},
        "mysqlType": {
            "c_bigint": "bigint", "c_int": "int", "c_mediumint": "mediumint", "c_smallint": "smallint",
            "c_tinyint": "tinyint", "id": "int",
        },
        "old": None, "data": [row],
    }  # fmt: skip
    base.update(fields)
    return base


UPDATED = {
    "c_bigint": "9223372036854775807",
    "c_int": "0",
    "c_mediumint": "8388607",
    "c_smallint": "32767",
    "c_tinyint": "0",
    "id": "2",
}


def decode(obj: dict, codec: TicdcCanalJson | None = None) -> list[ChangeEvent]:
    return (codec or TicdcCanalJson()).decode(Record(value=orjson.dumps(obj)))


def encoded(codec: TicdcCanalJson, events: list[ChangeEvent]) -> list[dict]:
    out = [orjson.loads(r.value) for r in codec.encode_batch(events)]
    for m in out:
        VALIDATOR.validate(m)
    return out


# ---------------------------------------------------------------------------
# rows
# ---------------------------------------------------------------------------


def test_update_old_carries_all_columns_and_changed_is_computed():
    # The doc's example: `update tp_int set c_int = 0, c_tinyint = 0`.
    [e] = decode(message(type="UPDATE", data=[UPDATED], old=message()["data"]))
    assert e.op is Op.UPDATE
    assert e.changed == ("c_int", "c_tinyint")
    e.typed()
    assert e.before["c_int"] == 2147483647 and e.after["c_int"] == 0
    assert e.before["c_bigint"] == e.after["c_bigint"] == 9223372036854775807


def test_only_changed_columns_in_old_are_also_understood():
    # content-compatible / only-output-updated-columns
    [e] = decode(message(type="UPDATE", data=[UPDATED], old=[{"c_int": "2147483647", "c_tinyint": "127"}]))
    assert e.changed == ("c_int", "c_tinyint")
    assert e.before == message()["data"][0]


def test_delete_has_null_old_and_the_row_in_data():
    [e] = decode(message(type="DELETE"))
    assert e.op is Op.DELETE and e.before == message()["data"][0] and e.after is None


def test_delete_before_v5_4_repeated_the_row_in_old_and_is_reproduced():
    obj = message(type="DELETE", old=message()["data"])
    [e] = decode(obj)
    assert e.before == obj["data"][0]
    assert encoded(TicdcCanalJson(), [e]) == [obj]


def test_tidb_extension_commit_ts_and_es():
    [e] = decode(message(_tidb={"commitTs": TSO}))
    assert e.source.commit_ts == TSO and e.source.db_type == "tidb"
    assert e.ts_ms == 1639633141221


def test_column_order_follows_sql_type_when_mysql_type_is_in_map_order():
    mysql_types = {
        "id": "int", "c_tinyint": "tinyint", "c_bigint": "bigint", "c_int": "int", "c_mediumint": "mediumint",
        "c_smallint": "smallint",
    }  # fmt: skip
    [e] = decode(message(mysqlType=mysql_types))
    assert e.schema.names == ("c_bigint", "c_int", "c_mediumint", "c_smallint", "c_tinyint", "id")


def test_schema_cache_ignores_mysql_type_order():
    codec = TicdcCanalJson()
    [a] = decode(message(), codec)
    [b] = decode(message(mysqlType=dict(reversed(list(message()["mysqlType"].items())))), codec)
    assert a.schema is b.schema


# ---------------------------------------------------------------------------
# types without parameters
# ---------------------------------------------------------------------------

PARAMLESS = {
    "id": "int", "e": "enum", "s": "set", "b": "bit", "d": "decimal", "du": "decimal unsigned", "bin": "varbinary",
    "f": "float", "y": "year", "u": "bigint unsigned",
}  # fmt: skip


def _paramless(**row) -> dict:
    codes = {"id": 4, "e": 4, "s": -7, "b": -7, "d": 3, "du": 3, "bin": 2004, "f": 7, "y": 12, "u": -5}
    return message(mysqlType=PARAMLESS, sqlType=codes, data=[row], pkNames=["id"])


def test_parameterless_types_are_typed_without_guessing():
    [e] = decode(
        _paramless(
            id="1", e="2", s="5", b="65", d="123.4560", du="1", bin="\x00\xff", f="0.1", y="0", u="18446744073709551615"
        )
    )
    assert e.schema.column("b").type == "bit(64)"  # BIT alone would read as BIT(1): a boolean
    assert e.schema.column("d").type == "decimal(65,30)"  # DECIMAL alone would be DECIMAL(10,0): rounded
    assert e.schema.column("du").type == "decimal(65,30) unsigned"
    e.typed()
    assert e.after == {
        "id": 1, "e": "2", "s": "5", "b": 65, "d": Decimal("123.4560"), "du": Decimal("1"), "bin": b"\x00\xff",
        "f": 0.10000000149011612, "y": 0, "u": 18446744073709551615,
    }  # fmt: skip


def test_parameterless_temporal_types_keep_their_fractional_seconds():
    # RisingWave's debezium_timestamp file through TiCDC: `datetime` alone would be DATETIME(0),
    # and a Debezium encoder writes DATETIME(0-3) as whole milliseconds (989360 us -> 989000).
    from cdc_smt.transforms.formats.debezium_json import DebeziumJsonCodec

    types = {"id": "int", "ts": "datetime", "at": "timestamp", "t": "time"}
    obj = message(mysqlType=types, sqlType={"id": 4, "ts": 93, "at": 93, "t": 92},
                  data=[{"id": "1", "ts": "2022-10-14 23:55:31.989360", "at": "2022-10-14 23:55:31.5",
                         "t": "23:55:31.989360"}])  # fmt: skip
    [e] = decode(obj)
    assert [e.schema.column(n).type for n in ("ts", "at", "t")] == ["datetime(6)", "timestamp(6)", "time(6)"]
    [r] = DebeziumJsonCodec({"schemas_enable": True}).encode(e)
    [back] = DebeziumJsonCodec().decode(r)
    assert back.typed().after["ts"] == dt.datetime(2022, 10, 14, 23, 55, 31, 989360)


def test_parameterless_types_take_the_catalog_types_when_the_base_type_matches():
    from cdc_smt.transforms.catalog import SchemaCatalog

    cat = SchemaCatalog()
    cat.apply_ddl(
        "test",
        "CREATE TABLE tp_int (id int NOT NULL, e enum('x','y','z'), s set('a','b','c'), b bit(1), "
        "d decimal(7,4), du decimal(5,0) unsigned, bin varbinary(8), f float, y year, u int, PRIMARY KEY (id))",
    )
    row = dict(id="1", e="2", s="5", b="1", d="123.4560", du="1", bin="\x00\xff", f="0.1", y="0", u="7")
    [e] = decode(_paramless(**row), TicdcCanalJson(catalog=cat))
    types = {c.name: c.type for c in e.schema.columns}
    assert types["e"] == "enum('x','y','z')" and types["s"] == "set('a','b','c')" and types["b"] == "bit(1)"
    assert types["d"] == "decimal(7,4)" and types["du"] == "decimal(5,0) unsigned"
    assert types["u"] == "bigint unsigned"  # the catalog's int is another base type: the message wins
    assert e.schema.column("id").nullable is False
    e.typed()
    assert (e.after["e"], e.after["s"], e.after["b"], e.after["d"]) == ("y", "a,c", True, Decimal("123.4560"))
    # a table the catalog does not know: the documented behaviour without one
    [other] = decode(_paramless(**row) | {"table": "elsewhere"}, TicdcCanalJson(catalog=cat))
    assert other.schema.column("b").type == "bit(64)" and other.typed().after["e"] == "2"


def test_parameterless_values_are_written_back_as_tidb_prints_them():
    obj = _paramless(
        id="1", e="2", s="5", b="65", d="123.4560", du="1", bin="\x00\xff", f="0.1", y="0", u="18446744073709551615"
    )
    [e] = decode(obj)
    e.typed()
    [out] = encoded(TicdcCanalJson(), [e])
    assert out["data"] == obj["data"]
    assert out["mysqlType"] == obj["mysqlType"]


def test_content_compatible_messages_have_full_types_and_labels():
    types = {"id": "int(11)", "e": "enum('a','b','c')", "s": "set('a','b','c')", "b": "bit(64)", "d": "decimal(10,4)"}
    codes = {"id": 4, "e": 4, "s": -7, "b": -7, "d": 3}
    obj = message(mysqlType=types, sqlType=codes, data=[{"id": "1", "e": "1", "s": "3", "b": "65", "d": "123.4560"}])
    [e] = decode(obj)
    e.typed()
    assert e.after == {"id": 1, "e": "a", "s": "a,b", "b": 65, "d": Decimal("123.4560")}


# ---------------------------------------------------------------------------
# encoding
# ---------------------------------------------------------------------------

SCHEMA = TableSchema(
    columns=tuple(
        Column(n, t, nullable=n != "id", primary_key=n == "id")
        for n, t in [
            ("id", "int(11)"), ("tu", "tinyint unsigned"), ("su", "smallint(5) unsigned"), ("mu", "mediumint unsigned"),
            ("iu", "int unsigned zerofill"), ("bu", "bigint(20) unsigned"), ("dec", "decimal(10,4)"),
            ("e", "enum('a','b','c')"), ("s", "set('a','b','c')"), ("bit", "bit(1)"), ("y", "year(4)"), ("txt", "text"),
            ("blb", "blob"), ("bin", "binary(2)"), ("j", "json"), ("c", "char(3)"), ("f", "float"), ("d", "double"),
        ]
    ),
    primary_key=("id",),
)  # fmt: skip


def _event(op: Op = Op.INSERT, **values) -> ChangeEvent:
    row = {"id": 1, **values}
    return ChangeEvent(
        op=op, source=SourcePosition(database="db", table="t"), after=row if op is not Op.DELETE else None,
        before=row if op is not Op.INSERT else None, schema=SCHEMA, pk=("id",), ts_ms=1700000000000,
    )  # fmt: skip


def test_mysql_type_without_parameters_and_sql_type_by_value():
    e = _event(tu=200, su=40000, mu=16777215, iu=2147483648, bu=2**63, dec=Decimal("1.5"), e="c", s="a,c", bit=True,
               y=2023, txt="t", blb=b"b", bin=b"\x01\x02", j="{}", c="abc", f=0.1, d=1e21)  # fmt: skip
    [out] = encoded(TicdcCanalJson(), [e])
    assert out["mysqlType"] == {
        "id": "int", "tu": "tinyint unsigned", "su": "smallint unsigned", "mu": "mediumint unsigned",
        "iu": "int unsigned zerofill", "bu": "bigint unsigned", "dec": "decimal", "e": "enum", "s": "set", "bit": "bit",
        "y": "year", "txt": "text", "blb": "blob", "bin": "binary", "j": "json", "c": "char", "f": "float",
        "d": "double",
    }  # fmt: skip
    # The doc's tables: unsigned integers above the signed range move up; TEXT 2005, BLOB/BINARY 2004, SET -7, JSON 12.
    assert out["sqlType"] == {
        "id": 4, "tu": 5, "su": 4, "mu": 4, "iu": -5, "bu": 3, "dec": 3, "e": 4, "s": -7, "bit": -7, "y": 12,
        "txt": 2005, "blb": 2004, "bin": 2004, "j": 12, "c": 1, "f": 7, "d": 8,
    }  # fmt: skip
    assert out["data"] == [
        {"id": "1", "tu": "200", "su": "40000", "mu": "16777215", "iu": "2147483648", "bu": "9223372036854775808",
         "dec": "1.5", "e": "3", "s": "5", "bit": "1", "y": "2023", "txt": "t", "blb": "b", "bin": "\x01\x02",
         "j": "{}", "c": "abc", "f": "0.1", "d": "1000000000000000000000"}
    ]  # fmt: skip
    assert (out["id"], out["isDdl"], out["old"], out["es"], out["sql"]) == (0, False, None, 1700000000000, "")
    assert "_tidb" not in out


def test_sql_type_of_null_unsigned_values_is_the_signed_code():
    [out] = encoded(TicdcCanalJson(), [_event(tu=None, bu=None)])
    assert (out["sqlType"]["tu"], out["sqlType"]["bu"]) == (-6, -5)


def test_update_writes_every_column_in_old():
    e = _event(Op.UPDATE, tu=1)
    e.after = {"id": 1, "tu": 2}
    e.before = {"id": 1, "tu": 1}
    [out] = encoded(TicdcCanalJson(), [e])
    assert out["old"] == [{"id": "1", "tu": "1"}] and out["data"] == [{"id": "1", "tu": "2"}]


def test_content_compatible_writes_full_types_and_changed_old_only():
    e = _event(Op.UPDATE)
    e.before, e.after = {"id": 1, "tu": 1, "e": "a"}, {"id": 1, "tu": 2, "e": "a"}
    [out] = encoded(TicdcCanalJson({"content_compatible": True}), [e])
    assert out["old"] == [{"tu": "1"}]
    assert out["mysqlType"] == {"id": "int(11)", "tu": "tinyint unsigned", "e": "enum('a','b','c')"}


def test_content_compatible_overrides_a_decoded_message_shape():
    [e] = decode(message(type="UPDATE", data=[UPDATED], old=message()["data"]))
    [out] = encoded(TicdcCanalJson({"content_compatible": True}), [e])
    assert out["old"] == [{"c_int": "2147483647", "c_tinyint": "127"}]


def test_enable_tidb_extension_adds_commit_ts():
    e = _event()
    [out] = encoded(TicdcCanalJson({"enable_tidb_extension": True}), [e])
    assert out["_tidb"] == {"commitTs": 1700000000000 << 18}  # no TSO known: physical time, logical 0
    e.source.commit_ts = TSO
    e.ts_ms = None
    [out] = encoded(TicdcCanalJson({"enable_tidb_extension": True}), [e])
    assert out["_tidb"] == {"commitTs": TSO} and out["es"] == TSO >> 18


def test_snapshot_reads_are_written_as_inserts():
    [out] = encoded(TicdcCanalJson(), [_event(Op.READ)])
    assert out["type"] == "INSERT"


def test_timestamps_are_written_in_the_changefeed_zone():
    schema = TableSchema(columns=(Column("id", "int"), Column("ts", "timestamp(6)")), primary_key=("id",))
    e = ChangeEvent(op=Op.INSERT, source=SourcePosition(database="d", table="t"),
                    after={"id": 1, "ts": dt.datetime(2024, 1, 1, 0, 0, 0, 5)},
                    schema=schema, pk=("id",), ts_ms=1, timezone="UTC")  # fmt: skip
    [out] = encoded(TicdcCanalJson({"source_timezone": "Asia/Shanghai"}), [e])
    assert out["data"] == [{"id": "1", "ts": "2024-01-01 08:00:00.000005"}]
    [back] = decode(out, TicdcCanalJson({"source_timezone": "Asia/Shanghai"}))
    assert back.timezone == "Asia/Shanghai"


def test_ticdc_type_name():
    for text, name in [("int(8) unsigned zerofill", "int unsigned zerofill"), ("bit(3)", "bit"), ("year(4)", "year"),
                       ("decimal(10,2) unsigned", "decimal unsigned"), ("BOOL", "tinyint"),
                       ("varchar(20)", "varchar")]:  # fmt: skip
        assert ticdc_type_name(parse_type(text)) == name


# ---------------------------------------------------------------------------
# watermarks, partial rows
# ---------------------------------------------------------------------------

WATERMARK = {
    "id": 0, "database": "", "table": "", "pkNames": None, "isDdl": False, "type": "TIDB_WATERMARK",
    "es": 1640007049196, "ts": 1640007050284, "sql": "", "sqlType": None, "mysqlType": None, "data": None, "old": None,
    "_tidb": {"watermarkTs": TSO},
}  # fmt: skip


def test_watermark_messages_become_watermark_events():
    [e] = decode(WATERMARK)
    assert e.op is Op.WATERMARK and e.source.commit_ts == TSO and e.ts_ms == 1640007049196
    assert e.source.database is None and e.source.table is None
    assert encoded(TicdcCanalJson(), [e]) == [WATERMARK]


def test_watermarks_are_written_only_with_the_extension():
    e = ChangeEvent(op=Op.WATERMARK, source=SourcePosition(commit_ts=TSO), ts_ms=5, processing_ts_ms=6)
    assert TicdcCanalJson().encode(e) == []
    [out] = encoded(TicdcCanalJson({"enable_tidb_extension": True}), [e])
    assert (out["type"], out["_tidb"], out["es"], out["database"]) == ("TIDB_WATERMARK", {"watermarkTs": TSO}, 5, "")


def test_watermark_without_watermark_ts_is_an_error():
    with pytest.raises(DecodeError, match="watermarkTs"):
        decode({**WATERMARK, "_tidb": {}})


def test_handle_key_only_messages_are_partial():
    ext = {"commitTs": TSO, "onlyHandleKey": True}
    obj = message(type="DELETE", data=[{"id": "2"}], sqlType={"id": 4}, mysqlType={"id": "int"}, _tidb=ext)
    [e] = decode(obj)
    assert e.partial and e.before == {"id": "2"}
    assert encoded(TicdcCanalJson(), [e]) == [obj]


def test_claim_check_messages_with_the_key_are_partial():
    obj = message(data=[{"id": "2"}], sqlType={"id": 4}, mysqlType={"id": "int"},
                  _tidb={"commitTs": TSO, "claimCheckLocation": "s3://bucket/x.json"})  # fmt: skip
    [e] = decode(obj)
    assert e.partial
    assert encoded(TicdcCanalJson(), [e]) == [obj]


def test_bare_claim_check_reference_is_an_error_saying_where_the_row_is():
    with pytest.raises(DecodeError, match="s3://bucket/x.json"):
        decode({"_tidb": {"claimCheckLocation": "s3://bucket/x.json"}})
    assert VALIDATOR.is_valid({"_tidb": {"claimCheckLocation": "s3://bucket/x.json"}})


def test_partial_events_need_the_extension_to_be_written():
    e = _event()
    e.partial = True
    with pytest.raises(EncodeError, match="enable_tidb_extension"):
        TicdcCanalJson().encode(e)
    [out] = encoded(TicdcCanalJson({"enable_tidb_extension": True}), [e])
    assert out["_tidb"]["onlyHandleKey"] is True


# ---------------------------------------------------------------------------
# DDL, errors
# ---------------------------------------------------------------------------


def test_ddl_message_shape():
    src = SourcePosition(database="test", commit_ts=TSO)
    e = ChangeEvent(op=Op.DDL, source=src, ddl="drop database if exists test", ts_ms=1639633094670)
    [out] = encoded(TicdcCanalJson({"enable_tidb_extension": True}), [e])
    assert out == {
        "id": 0, "database": "test", "table": "", "pkNames": None, "isDdl": True, "type": "QUERY", "es": 1639633094670,
        "ts": out["ts"], "sql": "drop database if exists test", "sqlType": None, "mysqlType": None, "old": None,
        "data": None, "_tidb": {"commitTs": TSO},
    }  # fmt: skip


@pytest.mark.parametrize(
    "obj,match",
    [
        (message(type="INSERTED"), "unknown type 'INSERTED'"),
        ({"data": None}, "missing field 'type'"),
        (message(_tidb=[1]), "'_tidb' must be an object"),
        (message(type="UPDATE", old=[{}, {}]), "'old' has 2 rows"),
    ],
)
def test_bad_messages(obj, match):
    with pytest.raises(DecodeError, match=match):
        decode(obj)


def test_sniff():
    assert TicdcCanalJson.sniff(WATERMARK) and TicdcCanalJson.sniff(message(_tidb={"commitTs": 1}))
    assert TicdcCanalJson.sniff(message())  # no extension: field set, id 0, parameterless types
    assert not TicdcCanalJson.sniff(message(mysqlType={"id": "int(11)"}))  # official Canal keeps parameters
    assert not TicdcCanalJson.sniff({"type": "INSERT", "data": []})


# ---------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------

_PROPS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _roundtrip(events: list[ChangeEvent], codec: TicdcCanalJson) -> list[ChangeEvent]:
    out: list[ChangeEvent] = []
    for rec in codec.encode_batch(events):
        VALIDATOR.validate(orjson.loads(rec.value))
        out.extend(codec.decode(rec))
    return out


def _without_labels(e: ChangeEvent) -> tuple:
    """The documented loss without content-compatible: enum/set values are their index/bitmask text."""
    labelled = {c.name: c.mysql for c in e.schema.columns if c.mysql.kind in (Kind.ENUM, Kind.SET)}

    def view(image):
        if image is None:
            return None
        out = dict(image)
        for name, t in labelled.items():
            v = out.get(name)
            if v is not None:
                out[name] = str(t.values.index(v) + 1 if t.kind is Kind.ENUM else set_bits_from_labels(t, v))
        return out

    op, db, table, before, after, pk = essence(e)
    return (op, db, table, view(before), view(after), pk)


@_PROPS
@given(change_streams())
def test_decode_of_encode_preserves_events_up_to_enum_and_set_labels(events):
    expected = [_without_labels(e) for e in events]
    decoded = _roundtrip(events, TicdcCanalJson({"enable_tidb_extension": True}))
    assert all(e.values is TICDC_TEXT for e in decoded)
    assert [essence(e) for e in decoded] == expected


@_PROPS
@given(change_streams())
def test_content_compatible_round_trip_is_lossless(events):
    expected = [essence(e) for e in events]
    decoded = _roundtrip(events, TicdcCanalJson({"content_compatible": True}))
    assert [essence(e) for e in decoded] == expected
    assert replay(decoded) == replay(events)
