"""canal-json: quirks of official Canal flat messages, value conventions, errors, properties.

Expectations come from Canal's own code (``FlatMessage``, ``LogEventConvert``,
``RowsLogBuffer``: see the codec's docstring) and the CloudCanal / Tencent
format documents, not from this codec's output.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt import schemas
from cdc_smt.transforms.changelog import replay
from cdc_smt.transforms.errors import DecodeError, EncodeError
from cdc_smt.transforms.formats import get_codec, registry
from cdc_smt.transforms.formats.canal_json import (
    CANAL_TEXT,
    CanalJson,
    canal_sql_type,
    ddl_type,
    go_float_text,
    java_float_text,
)
from cdc_smt.transforms.model import TOMBSTONE, UNWRAPPED, ChangeEvent, Column, Op, Record, SourcePosition, TableSchema
from cdc_smt.transforms.smt.base import tombstone_for
from cdc_smt.transforms.types import InvalidTemporal, parse_type
from tests.strategies import change_streams, essence

VALIDATOR = schemas.validator("canal-json")

PRODUCT_TYPES = {"id": "int(11)", "name": "varchar(255)", "description": "varchar(512)", "weight": "float"}
PRODUCT_CODES = {"id": 4, "name": 12, "description": 12, "weight": 7}


def message(**fields) -> dict:
    """A Canal DML message for mydb.product (Flink's test data), overridable per field."""
    base = {
        "data": [{"id": "106", "name": "hammer", "description": "18oz carpenter hammer", "weight": "1.0"}],
        "database": "mydb",
        "es": 1598944202000,
        "id": 2,
        "isDdl": False,
        "mysqlType": dict(PRODUCT_TYPES),
        "old": None,
        "pkNames": ["id"],
        "sql": "",
        "sqlType": dict(PRODUCT_CODES),
        "table": "product",
        "ts": 1598944202218,
        "type": "INSERT",
    }
    base.update(fields)
    return base


def decode(obj: dict, codec: CanalJson | None = None) -> list[ChangeEvent]:
    return (codec or CanalJson()).decode(Record(value=orjson.dumps(obj)))


def encoded(codec: CanalJson, events: list[ChangeEvent]) -> list[dict]:
    out = [orjson.loads(r.value) for r in codec.encode_batch(events)]
    for m in out:
        VALIDATOR.validate(m)
    return out


# ---------------------------------------------------------------------------
# rows
# ---------------------------------------------------------------------------


def test_update_old_holds_changed_columns_and_null_means_old_null():
    [e] = decode(message(type="UPDATE", old=[{"description": None}]))
    assert e.op is Op.UPDATE
    assert e.changed == ("description",)
    e.typed()
    assert e.before == {"id": 106, "name": "hammer", "description": None, "weight": 1.0}  # NULL, not "unchanged"
    assert e.after["description"] == "18oz carpenter hammer"


def test_update_before_image_is_data_overlaid_with_old():
    row = {"id": "7", "name": "a", "description": "d", "weight": "5.1"}
    [e] = decode(message(type="UPDATE", data=[row], old=[{"weight": "5.3", "id": "6"}]))
    assert e.before == {"id": "6", "name": "a", "description": "d", "weight": "5.3"}
    assert e.after == row
    assert e.changed == ("weight", "id")


def test_multi_row_message_keeps_order_and_pairs_old_rows():
    rows = [{"id": str(i), "name": f"n{i}", "description": None, "weight": "1.5"} for i in (3, 1, 2)]
    olds = [{"name": "x3"}, {"name": "x1"}, {"weight": "2.5"}]
    events = decode(message(type="UPDATE", data=rows, old=olds))
    assert [e.after["id"] for e in events] == ["3", "1", "2"]
    assert [e.before["name"] for e in events] == ["x3", "x1", "n2"]
    assert [e.before["weight"] for e in events] == ["1.5", "1.5", "2.5"]
    assert [e.source.row for e in events] == [0, 1, 2]
    assert all(e.ts_ms == 1598944202000 and e.processing_ts_ms == 1598944202218 for e in events)


def test_delete_and_insert_images():
    [d] = decode(message(type="DELETE"))
    assert d.op is Op.DELETE and d.after is None and d.before["id"] == "106"
    [i] = decode(message())
    assert i.op is Op.INSERT and i.before is None and i.after["id"] == "106"
    assert i.pk == ("id",) and i.source.database == "mydb" and i.source.table == "product"
    assert i.source.db_type == "mysql"


def test_init_rows_are_snapshot_reads_and_reencode_as_init():
    events = decode(message(type="INIT"))
    assert [e.op for e in events] == [Op.READ]
    [out] = encoded(CanalJson(), events)
    assert out["type"] == "INIT"


def test_schema_from_mysql_type_keeps_parameters_and_key():
    [e] = decode(message())
    assert [(c.name, c.type, c.primary_key, c.nullable) for c in e.schema.columns] == [
        ("id", "int(11)", True, False),
        ("name", "varchar(255)", False, True),
        ("description", "varchar(512)", False, True),
        ("weight", "float", False, True),
    ]
    assert e.schema.primary_key == ("id",)


def test_schema_is_cached_for_repeated_type_maps():
    codec = CanalJson()
    [a] = decode(message(), codec)
    [b] = decode(message(type="DELETE"), codec)
    assert a.schema is b.schema
    [c] = decode(message(mysqlType={**PRODUCT_TYPES, "weight": "double"}), codec)
    assert c.schema is not a.schema and c.schema.column("weight").type == "double"


def test_columns_missing_from_mysql_type_stay_text():
    # Flink's canal-data-with-init.txt: row 1 carries "other", which mysqlType lacks.
    [e] = decode(message(data=[{"id": "1", "name": "n", "description": None, "weight": "1.0", "other": "val1"}]))
    assert e.schema.column("other") is None
    e.typed()
    assert e.after["other"] == "val1" and e.after["id"] == 1


def test_messages_without_types_get_types_from_json_values():
    # Flink's canal-json serializer writes only data and type, with JSON numbers.
    [e] = decode({"data": [{"id": 101, "name": "scooter", "weight": 3.14, "ok": True}], "type": "INSERT"})
    assert e.source.database is None and e.ts_ms is None
    assert {c.name: c.type for c in e.schema.columns} == {
        "id": "bigint",
        "name": "longtext",
        "weight": "double",
        "ok": "tinyint(1)",
    }
    e.typed()
    assert e.after == {"id": 101, "name": "scooter", "weight": 3.14, "ok": 1}


def test_unparseable_mysql_type_falls_back_and_is_reproduced():
    obj = message(mysqlType={**PRODUCT_TYPES, "name": "vector(3)"})
    [e] = decode(obj)
    assert e.schema.column("name").type == "varchar(65535)"  # from sqlType 12
    [out] = encoded(CanalJson(), [e])
    assert out == obj


_UNTYPED = {**PRODUCT_TYPES, "name": "demo"}


@pytest.mark.parametrize("fmt", ["canal-json", "ticdc-canal-json"])
@pytest.mark.parametrize(
    "earlier",
    [
        {**PRODUCT_CODES, "name": 4},  # the same texts, another code for the untyped column
        None,  # the same texts, no sqlType (the fallback type)
        {**PRODUCT_CODES, "name": 12, "weight": 8},  # another code for a typed column only
    ],
    ids=["other-code", "no-codes", "typed-column-code"],
)
@pytest.mark.parametrize("codes", [dict(PRODUCT_CODES), None], ids=["codes", "no-codes"])
def test_the_same_message_converts_the_same_whatever_came_before(fmt, earlier, codes):
    """A column whose mysqlType names no type is typed from its sqlType code: the schema cache
    (schema_key and the last message's schema) once keyed by the texts alone, so a message
    took the type of an earlier message's code (a differential fuzz finding, native vs Python)."""
    obj = message(mysqlType=_UNTYPED, sqlType=codes, data=[{**message()["data"][0], "name": "6"}])
    fresh = get_codec(fmt, {})
    [alone] = fresh.decode(Record(value=orjson.dumps(obj)))
    for warm in (True, False):  # the last message's schema, then the schema_key cache
        codec = get_codec(fmt, {})
        codec.decode(Record(value=orjson.dumps(message(mysqlType=_UNTYPED, sqlType=earlier))))
        if not warm:
            codec.decode(Record(value=orjson.dumps(message())))
        [after] = codec.decode(Record(value=orjson.dumps(obj)))
        assert after.schema == alone.schema
        maxwell = get_codec("maxwell-json", {})
        assert maxwell.encode(after)[0].value == maxwell.encode(alone)[0].value


def test_schema_with_untyped_columns_is_still_cached_per_code():
    """Keying by the untyped columns' codes keeps the cache: the same texts and codes give the
    same schema object (from the last message and from the schema_key cache)."""
    codec = CanalJson()
    untyped = message(mysqlType=_UNTYPED, sqlType={**PRODUCT_CODES, "name": 4})
    [a] = decode(untyped, codec)
    [b] = decode({**untyped, "type": "DELETE"}, codec)
    [c] = decode(message(mysqlType=_UNTYPED), codec)
    [d] = decode(untyped, codec)
    assert a.schema is b.schema is d.schema and c.schema is not a.schema
    assert a.schema.column("name").type != c.schema.column("name").type


# ---------------------------------------------------------------------------
# DDL
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["CREATE", "ALTER", "ERASE", "RENAME", "QUERY", "CINDEX", "DINDEX"])
def test_ddl_types_become_ddl_events(kind):
    obj = message(type=kind, isDdl=True, data=None, mysqlType=None, sqlType=None, pkNames=None, sql="x DDL")
    [e] = decode(obj)
    assert (e.op, e.ddl_kind, e.ddl) == (Op.DDL, kind, "x DDL")
    assert e.before is None and e.after is None
    assert encoded(CanalJson(), [e]) == [obj]


def test_truncate_is_a_truncate_event_carrying_its_statement():
    obj = message(
        type="TRUNCATE", isDdl=True, data=None, mysqlType=None, sqlType=None, pkNames=None, sql="TRUNCATE TABLE product"
    )
    [e] = decode(obj)
    assert (e.op, e.ddl, e.ddl_kind) == (Op.TRUNCATE, "TRUNCATE TABLE product", "TRUNCATE")
    assert encoded(CanalJson(), [e]) == [obj]


@pytest.mark.parametrize(
    "sql,kind",
    [
        ("CREATE TABLE t (id int)", "CREATE"),
        ("/* c */ create temporary table t (id int)", "CREATE"),
        ("ALTER TABLE t ADD COLUMN c int", "ALTER"),
        ("DROP TABLE IF EXISTS `db`.`t`", "ERASE"),
        ("rename table a to b", "RENAME"),
        ("TRUNCATE TABLE t", "TRUNCATE"),
        ("CREATE UNIQUE INDEX i ON t (c)", "CINDEX"),
        ("DROP INDEX i ON t", "DINDEX"),
        ("CREATE DATABASE d", "QUERY"),
        ("DROP DATABASE IF EXISTS d", "QUERY"),
    ],
)
def test_ddl_from_other_formats_gets_canal_type_from_statement(sql, kind):
    assert ddl_type(sql) == kind
    e = ChangeEvent(op=Op.DDL, source=SourcePosition(database="db", table="t"), ddl=sql, ts_ms=5)
    [out] = encoded(CanalJson(), [e])
    assert (out["type"], out["sql"], out["isDdl"], out["es"], out["data"]) == (kind, sql, True, 5, None)


def test_cloudcanal_ddl_table_changes_become_the_schema_and_are_reproduced():
    obj = {
        "data": [], "database": "db_test", "es": 1669790951000, "id": 0, "isDdl": True,
        "mysqlType": {"col1": "varchar(22)", "col_pk": "varchar(22)"}, "old": [], "pkNames": [],
        "sql": "alter table table_test add col2 varchar(22) null", "sqlType": {"col1": 12, "col_pk": 12},
        "table": "table_test", "ts": 1669790952584, "type": "ALTER",
        "tableChanges": {
            "table": {
                "columns": [
                    {"jdbcType": 12, "name": "col_pk", "position": 2, "typeExpression": "varchar(22)",
                     "typeName": "varchar"},
                    {"jdbcType": 12, "name": "col1", "position": 0, "typeExpression": "varchar(22)",
                     "typeName": "varchar"},
                    {"jdbcType": 4, "name": "col2", "position": 1, "typeExpression": "int(11)", "typeName": "int"},
                ],
                "primaryKeyColumnNames": ["col_pk"],
            },
            "type": "ALTER",
        },
    }  # fmt: skip
    [e] = decode(obj)
    assert [(c.name, c.type) for c in e.schema.columns] == [
        ("col1", "varchar(22)"),
        ("col2", "int(11)"),
        ("col_pk", "varchar(22)"),
    ]
    assert e.schema.primary_key == ("col_pk",)
    assert encoded(CanalJson(), [e]) == [obj]


# ---------------------------------------------------------------------------
# batching
# ---------------------------------------------------------------------------


def _rows_message() -> dict:
    rows = [{"id": str(i), "name": "n", "description": None, "weight": "1.0"} for i in range(3)]
    return message(type="DELETE", data=rows)


def test_batching_reproduces_a_multi_row_message():
    obj = _rows_message()
    assert encoded(CanalJson({"batch": "transaction"}), decode(obj)) == [obj]


def test_default_writes_one_row_per_message():
    out = encoded(CanalJson(), decode(_rows_message()))
    assert [m["data"] for m in out] == [[r] for r in _rows_message()["data"]]
    assert all(m["type"] == "DELETE" and m["database"] == "mydb" for m in out)


def test_batching_keeps_message_boundaries_even_when_ids_repeat():
    # flink-canal-data-filter-table.txt has two INSERT messages with the same id, es and ts.
    a, b = message(), message(data=[{"id": "111", "name": "s", "description": None, "weight": "5.18"}])
    assert encoded(CanalJson({"batch": "transaction"}), decode(a) + decode(b)) == [a, b]


def _foreign(op: Op, key: int, table: str = "t", gtid: str | None = "uuid:1") -> ChangeEvent:
    schema = TableSchema(
        columns=(Column("id", "int", nullable=False, primary_key=True), Column("v", "varchar(10)")), primary_key=("id",)
    )
    row = {"id": key, "v": f"v{key}"}
    return ChangeEvent(
        op=op, source=SourcePosition(database="db", table=table, gtid=gtid), after=row if op is not Op.DELETE else None,
        before=row if op is Op.DELETE else None, schema=schema, pk=("id",), ts_ms=10,
    )  # fmt: skip


def test_batching_groups_rows_of_one_table_op_and_transaction():
    events = [
        _foreign(Op.INSERT, 1),
        _foreign(Op.INSERT, 2),
        _foreign(Op.INSERT, 3, table="u"),
        _foreign(Op.DELETE, 4, table="u"),
        _foreign(Op.INSERT, 5, table="u", gtid="uuid:2"),
    ]
    out = encoded(CanalJson({"batch": "transaction"}), events)
    assert [(m["table"], m["type"], [r["id"] for r in m["data"]]) for m in out] == [
        ("t", "INSERT", ["1", "2"]),
        ("u", "INSERT", ["3"]),
        ("u", "DELETE", ["4"]),
        ("u", "INSERT", ["5"]),
    ]


def test_rows_without_transaction_identity_are_not_batched():
    out = encoded(
        CanalJson({"batch": "transaction"}), [_foreign(Op.INSERT, 1, gtid=None), _foreign(Op.INSERT, 2, gtid=None)]
    )
    assert len(out) == 2


def test_batched_message_key_is_shared_only_when_rows_share_it():
    codec = CanalJson({"batch": "transaction"})
    [rec] = codec.encode_batch([_foreign(Op.INSERT, 1), _foreign(Op.INSERT, 2)])
    assert rec.key is None
    [single] = codec.encode_batch([_foreign(Op.INSERT, 1)])
    assert orjson.loads(single.key) == {"id": 1}


# ---------------------------------------------------------------------------
# encoding events from other formats
# ---------------------------------------------------------------------------

ALL = TableSchema(
    columns=tuple(
        Column(n, t, nullable=n != "id", primary_key=n == "id")
        for n, t in [
            ("id", "bigint unsigned"), ("e", "enum('a','b','c')"), ("s", "set('x','y','z')"), ("b1", "bit(1)"),
            ("b8", "bit(8)"), ("bin", "varbinary(8)"), ("f", "float"), ("d", "double"), ("dec", "decimal(10,4)"),
            ("y", "year"), ("dt", "datetime(3)"), ("ts", "timestamp"), ("tm", "time(2)"), ("z", "date"), ("j", "json"),
        ]
    ),
    primary_key=("id",),
)  # fmt: skip


def _typed_event(**values) -> ChangeEvent:
    row = {"id": 18446744073709551615, **values}
    return ChangeEvent(
        op=Op.INSERT, source=SourcePosition(database="db", table="t"), after=row, schema=ALL, pk=("id",), ts_ms=1
    )


def test_values_follow_canal_text_conventions():
    e = _typed_event(
        e="b", s="x,z", b1=True, b8=5, bin=b"\x00\xff\x80A", f=3.140000104904175, d=1e10, dec=Decimal("1.5"),
        y=0, dt=dt.datetime(2023, 3, 24, 14, 30, 5, 120000), ts=dt.datetime(2023, 1, 1),
        tm=-dt.timedelta(hours=838, seconds=1),
        z=InvalidTemporal("0000-00-00"), j='{"a": 1}',
    )  # fmt: skip
    [out] = encoded(CanalJson(), [e])
    assert out["data"] == [
        {
            "id": "18446744073709551615", "e": "2", "s": "5", "b1": "1", "b8": "5", "bin": "\x00\xff\x80A", "f": "3.14",
            "d": "1.0E10", "dec": "1.5000", "y": "0000", "dt": "2023-03-24 14:30:05.120", "ts": "2023-01-01 00:00:00",
            "tm": "-838:00:01.00", "z": "0000-00-00", "j": '{"a": 1}',
        }
    ]  # fmt: skip
    assert out["mysqlType"] == {c.name: c.type for c in ALL.columns}
    # value-dependent codes: bigint unsigned above 2^63-1 -> DECIMAL, set -> BIT, non-null binary -> BLOB,
    # JSON -> VARCHAR
    assert out["sqlType"] == {
        "id": 3, "e": 4, "s": -7, "b1": -7, "b8": -7, "bin": 2004, "f": 7, "d": 8, "dec": 3, "y": 12, "dt": 93,
        "ts": 93, "tm": 92, "z": 91, "j": 12,
    }  # fmt: skip
    [back] = decode(out)
    back.typed()
    assert back.after == {**e.after, "b1": True}


def test_enum_and_set_values_are_decoded_from_index_and_bitmask():
    obj = message(
        data=[{"id": "1", "e": "3", "s": "6", "z": "0"}],
        mysqlType={"id": "int", "e": "enum('a','b','c')", "s": "set('x','y','z')", "z": "enum('a')"},
        sqlType={"id": 4, "e": 4, "s": -7, "z": 4},
    )
    [e] = decode(obj)
    e.typed()
    assert e.after == {"id": 1, "e": "c", "s": "y,z", "z": ""}


def test_out_of_range_enum_index_names_the_column():
    obj = message(data=[{"id": "1", "e": "9"}], mysqlType={"id": "int", "e": "enum('a')"}, sqlType={"id": 4, "e": 4})
    [e] = decode(obj)
    with pytest.raises(ValueError, match="'e'"):
        e.typed()


def test_unknown_enum_label_is_an_encode_error():
    with pytest.raises(EncodeError, match="'q' is not a label"):
        CanalJson().encode(_typed_event(e="q"))


def test_float_columns_are_typed_as_32_bit_floats():
    [e] = decode(message(data=[{"id": "1", "name": None, "description": None, "weight": "3.14"}]))
    e.typed()
    assert e.after["weight"] == 3.140000104904175  # MySQL FLOAT holds the float32 nearest 3.14


@pytest.mark.parametrize(
    "value,single,text",
    [
        (1.0, False, "1.0"), (100.0, False, "100.0"), (0.001, False, "0.001"), (1e7, False, "1.0E7"),
        (1.0e-4, False, "1.0E-4"), (123456789.0, False, "1.23456789E8"), (-2.5e-10, False, "-2.5E-10"),
        (0.0, False, "0.0"), (-0.0, False, "-0.0"), (5e-324, False, "4.9E-324"),
        (1.7976931348623157e308, False, "1.7976931348623157E308"),
        (3.140000104904175, True, "3.14"), (22.200000762939453, True, "22.2"), (1.401298464324817e-45, True, "1.4E-45"),
        (3.4028234663852886e38, True, "3.4028235E38"), (16777216.0, True, "1.6777216E7"),
    ],
)  # fmt: skip
def test_java_float_text_matches_java_to_string(value, single, text):
    # Expected strings are what Java's Float/Double.toString print for these values.
    assert java_float_text(value, single) == text


@pytest.mark.parametrize(
    "value,single,text",
    [
        (1e10, False, "10000000000"),
        (0.1, False, "0.1"),
        (1e-7, False, "0.0000001"),
        (3.140000104904175, True, "3.14"),
        (-0.0, False, "-0"),
        (2.0, False, "2"),
    ],  # fmt: skip
)
def test_go_float_text_matches_strconv_format_float(value, single, text):
    assert go_float_text(value, single) == text


def test_timestamps_are_converted_to_the_encoder_zone_and_datetimes_are_not():
    schema = TableSchema(
        columns=(Column("id", "int"), Column("ts", "timestamp"), Column("dt", "datetime")), primary_key=("id",)
    )
    row = {"id": 1, "ts": dt.datetime(2023, 3, 23, 15, 0, 10), "dt": dt.datetime(2023, 3, 23, 15, 0, 10)}
    e = ChangeEvent(
        op=Op.INSERT, source=SourcePosition(database="d", table="t"), after=row, schema=schema, pk=("id",),
        timezone="Asia/Shanghai", ts_ms=1,
    )  # fmt: skip
    [out] = encoded(CanalJson(), [e])  # source_timezone UTC
    assert out["data"] == [{"id": "1", "ts": "2023-03-23 07:00:10", "dt": "2023-03-23 15:00:10"}]


def test_decoder_tags_events_with_its_zone_and_canal_to_canal_rebases_only_timestamps():
    obj = message(
        data=[{"id": "1", "ts": "2023-03-23 15:00:10.123", "dt": "2023-03-23 15:00:10"}],
        mysqlType={"id": "int", "ts": "timestamp(3)", "dt": "datetime"},
        sqlType={"id": 4, "ts": 93, "dt": 93},
    )
    [e] = decode(obj, CanalJson({"source_timezone": "Asia/Shanghai"}))
    assert e.timezone == "Asia/Shanghai"
    [same] = encoded(CanalJson({"source_timezone": "Asia/Shanghai"}), [e])
    assert same == obj
    [utc] = encoded(CanalJson({"source_timezone": "UTC"}), [e])
    assert utc["data"] == [{"id": "1", "ts": "2023-03-23 07:00:10.123", "dt": "2023-03-23 15:00:10"}]


def test_update_from_a_typed_source_writes_the_differing_columns_as_old():
    schema = TableSchema(
        columns=(Column("id", "int"), Column("a", "int"), Column("b", "varchar(5)")), primary_key=("id",)
    )
    e = ChangeEvent(
        op=Op.UPDATE, source=SourcePosition(database="d", table="t"), before={"id": 1, "a": 2, "b": None},
        after={"id": 1, "a": 3, "b": None}, schema=schema, pk=("id",), ts_ms=1,
    )  # fmt: skip
    [out] = encoded(CanalJson(), [e])
    assert out["old"] == [{"a": "2"}] and out["data"] == [{"id": "1", "a": "3", "b": None}]


def test_update_with_identical_images_has_null_old():
    [e] = decode(message(type="UPDATE", old=None))
    assert e.changed == () and e.before == e.after
    [out] = encoded(CanalJson(), [e])
    assert out["old"] is None


def test_partial_events_cannot_be_written():
    e = _typed_event()
    e.partial = True
    with pytest.raises(EncodeError, match="partial"):
        CanalJson().encode(e)


def test_control_events_have_no_canal_message():
    for op in (Op.HEARTBEAT, Op.WATERMARK, Op.BEGIN, Op.COMMIT):
        assert CanalJson().encode(ChangeEvent(op=op)) == []


def test_canal_sql_type_depends_on_nullness_like_log_event_convert():
    # RowsLogBuffer.mysqlToJavaType (NULL) vs LogEventConvert's BLOB/CLOB for values.
    cases = {
        "tinytext": (-3, 2005), "text": (-4, 2005), "longtext": (-4, 2005), "binary(4)": (-2, 2004),
        "varbinary(4)": (-3, 2004), "tinyblob": (-3, 2004), "blob": (-4, 2004), "point": (-2, 2004),
        "set('a')": (-2, -7), "json": (1111, 12), "enum('a')": (4, 4), "char(3)": (1, 1), "varchar(3)": (12, 12),
        "year": (12, 12), "bit(3)": (-7, -7), "float": (7, 7), "double": (8, 8), "decimal(4,2)": (3, 3),
    }  # fmt: skip
    for text, (null_code, value_code) in cases.items():
        t = parse_type(text)
        assert (canal_sql_type(t, None), canal_sql_type(t, "1")) == (null_code, value_code), text
    unsigned = {"tinyint unsigned": ("127", -6, "128", 5), "smallint unsigned": ("32767", 5, "32768", 4),
                "mediumint unsigned": ("1", 4, "16777215", 4), "int unsigned": ("2147483647", 4, "2147483648", -5),
                "bigint unsigned": ("9223372036854775807", -5, "9223372036854775808", 3)}  # fmt: skip
    for text, (small, small_code, big, big_code) in unsigned.items():
        t = parse_type(text)
        assert (canal_sql_type(t, small), canal_sql_type(t, big), canal_sql_type(t, None)) == (
            small_code,
            big_code,
            small_code,
        ), text


def test_value_form_passes_raw_values_to_canal_untouched():
    obj = message(data=[{"id": "106", "name": "hammer", "description": None, "weight": "1.00"}])  # not Java's "1.0"
    [e] = decode(obj)
    assert e.values is CANAL_TEXT
    [out] = encoded(CanalJson(), [e])
    assert out["data"] == obj["data"]


def test_raw_values_that_read_as_null_are_written_as_null():
    # TDSQL binlog JSON keeps SQL literals (sqltext.SqlLiteralForm): NULL there is the text
    # 'NULL', a raw value that is not None but types to None. The per-column writers once
    # handed that None to the DATE writer (AttributeError: 'NoneType' has no 'year').
    from cdc_smt.transforms.sqltext import SqlLiteralForm

    schema = TableSchema(
        columns=(
            Column("id", "int", nullable=False, primary_key=True),
            Column("born", "date"),
            Column("created", "datetime(3)"),
            Column("balance", "decimal(12,2)"),
            Column("name", "varchar(8)"),
        ),
        primary_key=("id",),
    )
    after = {"id": "3", "born": "NULL", "created": "'2024-02-29 23:59:59.123'", "balance": "NULL", "name": "NULL"}
    e = ChangeEvent(op=Op.INSERT, source=SourcePosition(database="d", table="t"), after=after, schema=schema,
                    pk=("id",), values=SqlLiteralForm())  # fmt: skip
    [out] = encoded(CanalJson(), [e])
    assert out["data"] == [
        {"id": "3", "born": None, "created": "2024-02-29 23:59:59.123", "balance": None, "name": None}
    ]


def test_decode_message_and_encode_message_work_on_objects():
    # The ckafka-json codec delegates Canal-shaped DDL this way.
    codec = CanalJson()
    obj = message(
        type="QUERY",
        isDdl=True,
        data=None,
        mysqlType=None,
        sqlType=None,
        pkNames=None,
        sql="CREATE DATABASE x",
        table="",
    )
    [e] = codec.decode_message(obj, Record(value=None))
    assert e.source.table is None and e.ddl_kind == "QUERY"
    assert codec.encode_message(e) == obj


def test_sniff():
    assert CanalJson.sniff(message())
    assert not CanalJson.sniff({"database": "d", "table": "t", "type": "insert", "data": {}})  # Maxwell
    assert not CanalJson.sniff({"payload": {"op": "c"}})


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "obj,match",
    [
        (message(type="UPSERT"), "unknown type 'UPSERT'"),
        ({k: v for k, v in message().items() if k != "type"}, "missing field 'type'"),
        (message(type=3), "'type' must be a string"),
        ({k: v for k, v in message().items() if k != "data"}, "missing field 'data'"),
        (message(data={"id": "1"}), "'data' must be a non-empty list"),
        (message(data=[]), "'data' must be a non-empty list"),
        (message(data=["1"]), "row 0 of 'data' must be an object"),
        (message(type="UPDATE", old={"id": "1"}), "'old' must be a list"),
        (message(type="UPDATE", old=[{}, {}]), "'old' has 2 rows but 'data' has 1"),
        (message(type="UPDATE", old=[3]), "row 0 of 'old' must be an object"),
        (message(mysqlType=["int"]), "'mysqlType' must be an object"),
        (message(mysqlType={"id": 4}), "mysqlType of column 'id' must be a string"),
        (message(pkNames="id"), "'pkNames' must be a list"),
        (message(es="yesterday"), "'es' must be epoch milliseconds"),
        (message(database=1), "'database' must be a string"),
        (message(type="CREATE", isDdl=True, sql=5), "'sql' must be a string"),
    ],
)
def test_bad_messages_are_decode_errors_naming_the_problem(obj, match):
    with pytest.raises(DecodeError, match=match):
        decode(obj)


@pytest.mark.parametrize("raw,match", [(b"{not json", "malformed JSON"), (b"[1]", "expected a JSON object")])
def test_non_messages_are_decode_errors(raw, match):
    with pytest.raises(DecodeError, match=match):
        CanalJson().decode(Record(value=raw))


def test_encoding_rows_without_images_is_an_error():
    e = ChangeEvent(op=Op.DELETE, source=SourcePosition(database="d", table="t"))
    with pytest.raises(EncodeError, match="without a before-image"):
        CanalJson().encode(e)


# ---------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------

_PROPS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _roundtrip(events: list[ChangeEvent], codec: CanalJson) -> list[ChangeEvent]:
    out: list[ChangeEvent] = []
    for rec in codec.encode_batch(events):
        VALIDATOR.validate(orjson.loads(rec.value))
        out.extend(codec.decode(rec))
    return out


@_PROPS
@given(change_streams())
def test_decode_of_encode_preserves_every_event(events):
    expected = [essence(e) for e in events]
    decoded = _roundtrip(events, CanalJson())
    assert [essence(e) for e in decoded] == expected


_ZONED = st.sampled_from(["UTC", "Asia/Shanghai", "America/New_York"]).flatmap(
    lambda z: st.tuples(st.just(z), change_streams(timezone=z))
)


@_PROPS
@given(_ZONED)
def test_replay_of_decoded_equals_replay_of_original(zoned):
    zone, events = zoned
    decoded = _roundtrip(events, CanalJson({"source_timezone": zone}))
    assert all(e.timezone == zone for e in decoded)
    assert replay(decoded) == replay(events)


@_PROPS
@given(change_streams())
def test_timestamps_survive_a_trip_through_another_zone(events):
    # UTC+8 without DST: every wall-clock time there is unambiguous.
    there = _roundtrip(events, CanalJson({"source_timezone": "Etc/GMT-8"}))
    back = _roundtrip(there, CanalJson())
    assert [essence(e) for e in back] == [essence(e) for e in events]


@_PROPS
@given(change_streams(max_events=8))
def test_batched_messages_decode_to_the_same_rows(events):
    for e in events:
        e.source.gtid = "uuid:7"  # one transaction: consecutive rows of one op share a message
    codec = CanalJson({"batch": "transaction"})
    decoded = _roundtrip(events, codec)
    assert [essence(e) for e in decoded] == [essence(e) for e in events]


# ---------------------------------------------------------------------------
# what every JSON codec shares (transforms.formats.base.JsonCodec): event markers, headers
# ---------------------------------------------------------------------------

_JSON_FORMATS = sorted(n for n, cls in registry().items() if not cls.binary)
_MARKED = TableSchema(
    columns=(
        Column("id", "int", nullable=False, primary_key=True),
        Column("amount", "decimal(6,2)"),
        Column("day", "date"),
        Column("at", "timestamp(3)"),
        Column("raw", "varbinary(4)"),
        Column("flag", "bit(1)"),
        Column("note", "varchar(8)"),
    ),
    primary_key=("id",),
)


def _marked_event(**more) -> ChangeEvent:
    row = {"id": 1, "amount": Decimal("1.50"), "day": dt.date(2024, 1, 2), "at": dt.datetime(2024, 1, 2, 8, 0, 0, 5000),
           "raw": b"\x00\xff", "flag": True, "note": None}  # fmt: skip
    return ChangeEvent(op=Op.INSERT, source=SourcePosition(db_type="mysql", database="d", table="t"), after=row,
                       schema=_MARKED, pk=("id",), ts_ms=1_700_000_000_000, **more)  # fmt: skip


@pytest.mark.parametrize("fmt", _JSON_FORMATS)
def test_tombstone_marker_is_a_null_value_with_the_key(fmt):
    from cdc_smt.transforms.smt.base import TOMBSTONE as REEXPORTED

    assert REEXPORTED is TOMBSTONE
    tomb = tombstone_for(_marked_event())
    assert tomb.extra == {TOMBSTONE: True}
    [r] = get_codec(fmt).encode(tomb)
    assert r.value is None and orjson.loads(r.key) == {"id": 1}


@pytest.mark.parametrize("fmt", [f for f in _JSON_FORMATS if f != "debezium-json"])  # Debezium: its own representation
def test_unwrapped_marker_is_the_flat_row_as_json_values(fmt):
    e = _marked_event(timezone="Asia/Shanghai", extra={UNWRAPPED: True})
    [r] = get_codec(fmt).encode(e)  # source_timezone UTC: the TIMESTAMP is re-shown there
    assert orjson.loads(r.value) == {"id": 1, "amount": "1.50", "day": "2024-01-02", "at": "2024-01-02 00:00:00.005",
                                     "raw": "AP8=", "flag": True, "note": None}  # fmt: skip
    assert orjson.loads(r.key) == {"id": 1}


@pytest.mark.parametrize("fmt", _JSON_FORMATS)
def test_encoders_keep_the_source_records_headers_unless_the_event_sets_its_own(fmt):
    source = Record(value=b"{}", headers=[("trace", b"abc")])
    [r] = get_codec(fmt).encode(_marked_event(record=source))[:1]
    assert r.headers == [("trace", b"abc")]
    [r] = get_codec(fmt).encode(_marked_event(record=source, headers=[("x", b"1")]))[:1]
    assert r.headers == [("x", b"1")]
    [r] = get_codec(fmt).encode(_marked_event(record=source, headers=[]))[:1]  # a transform dropped them all
    assert r.headers == []


def test_the_before_image_is_declared_full():
    # `old` holds only the changed columns, but the decoder rebuilds the whole before-image.
    from cdc_smt.transforms.capabilities import losses

    assert CanalJson.capabilities.before_image == "full"
    [e] = decode(message(type="UPDATE", data=[{"id": "106", "name": "hammer", "description": "new", "weight": "1.0"}],
                         old=[{"description": "old"}]))  # fmt: skip
    assert e.before == {"id": "106", "name": "hammer", "description": "old", "weight": "1.0"}
    assert not any("before-image" in loss for loss in losses("debezium-json", "canal-json"))
