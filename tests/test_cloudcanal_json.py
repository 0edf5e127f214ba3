"""cloudcanal-json: batched rows with dbValType/jdbcType, DDL with tableChanges, TRANSACTIONEND."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from cdc_smt import schemas
from cdc_smt.transforms.catalog import SchemaCatalog
from cdc_smt.transforms.errors import DecodeError
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import ChangeEvent, Column, Op, Record, SourcePosition, TableSchema
from tests.strategies import change_streams, essence

FMT = "cloudcanal-json"
TYPES = {"col1": "varchar(22)", "col2": "varchar(22)", "col_pk": "varchar(22)"}
JDBC = {"col1": 12, "col2": 12, "col_pk": 12}


def dml(action: str, data: list, before: list | None = None, **fields) -> dict:
    """A message shaped like the document's DML example (001_*.txt)."""
    msg = {
        "action": action, "before": before or [], "bid": 0, "data": data, "db": "db_test", "dbValType": TYPES,
        "isDdl": False, "entryType": "ROWDATA", "execTs": 1669789152000, "jdbcType": JDBC, "pks": ["col_pk"],
        "schema": "db_test", "sendTs": 1669789153377, "sql": "", "table": "table_test",
    }  # fmt: skip
    msg.update(fields)
    return msg


ROW_NEW = {"col1": "11", "col2": "11", "col_pk": "11"}
ROW_OLD = {"col1": "22", "col2": "22", "col_pk": "22"}


def decode(c, msg: dict) -> list[ChangeEvent]:
    return c.decode(Record(value=orjson.dumps(msg)))


def test_insert_update_delete():
    c = get_codec(FMT)
    [ins] = decode(c, dml("INSERT", [ROW_NEW]))
    assert ins.op is Op.INSERT and ins.after == ROW_NEW and ins.before is None
    assert ins.schema.names == ("col1", "col2", "col_pk") and ins.pk == ("col_pk",)
    assert (ins.ts_ms, ins.processing_ts_ms) == (1669789152000, 1669789153377)
    assert (ins.source.database, ins.source.table, ins.source.schema, ins.source.sequence_id) == (
        "db_test",
        "table_test",
        None,
        "0",
    )
    [upd] = decode(c, dml("UPDATE", [ROW_NEW], [ROW_OLD]))
    assert (upd.before, upd.after, upd.changed) == (ROW_OLD, ROW_NEW, ("col1", "col2", "col_pk"))
    [dele] = decode(c, dml("DELETE", [ROW_OLD]))
    assert dele.op is Op.DELETE and dele.before == ROW_OLD and dele.after is None


def test_values_are_typed_by_dbvaltype_and_may_be_json_numbers():
    types = {"id": "bigint unsigned", "amount": "decimal(10,2)", "at": "datetime(3)", "flag": "bit(1)", "doc": "json"}
    msg = dml(
        "INSERT",
        [
            {
                "id": 18446744073709551615,
                "amount": "12.30",
                "at": "2022-12-01 10:00:00.500",
                "flag": True,
                "doc": {"a": 1},
            }
        ],
        dbValType=types,
        jdbcType={},
        pks=["id"],
    )
    [e] = decode(get_codec(FMT), msg)
    assert e.typed().after == {
        "id": 18446744073709551615,
        "amount": Decimal("12.30"),
        "at": dt.datetime(2022, 12, 1, 10, 0, 0, 500000),
        "flag": True,
        "doc": '{"a":1}',
    }


def test_a_batch_becomes_one_event_per_row():
    events = decode(
        get_codec(FMT), dml("UPDATE", [ROW_NEW, {**ROW_NEW, "col_pk": "12"}], [ROW_OLD, {**ROW_OLD, "col_pk": "12"}])
    )
    assert [e.source.row for e in events] == [0, 1]
    assert [e.after["col_pk"] for e in events] == ["11", "12"]
    assert [e.before["col_pk"] for e in events] == ["22", "12"]


def test_delete_rows_in_before_are_accepted():
    [e] = decode(get_codec(FMT), dml("DELETE", [], [ROW_OLD]))
    assert e.before == ROW_OLD
    assert orjson.loads(get_codec(FMT).encode(e)[0].value)["before"] == [ROW_OLD]


def test_primary_key_from_the_catalog_when_pks_is_empty():
    cat = SchemaCatalog()
    cat.apply_ddl(
        "db_test", "create table table_test (col1 varchar(22), col2 varchar(22), col_pk varchar(22) primary key)"
    )
    [e] = decode(get_codec(FMT, catalog=cat), dml("INSERT", [ROW_NEW], pks=[]))
    assert e.pk == ("col_pk",)
    assert orjson.loads(get_codec(FMT).encode(e)[0].value)["pks"] == []  # reproduced as sent


def test_transactionend_is_a_commit():
    c = get_codec(FMT)
    msg = {
        "action": "COMMIT",
        "bid": 3,
        "db": "db_test",
        "entryType": "TRANSACTIONEND",
        "execTs": 1669789152000,
        "isDdl": False,
        "schema": "db_test",
        "table": "table_test",
    }
    [e] = decode(c, msg)
    assert e.op is Op.COMMIT and e.source.sequence_id == "3" and e.ts_ms == 1669789152000
    assert orjson.loads(c.encode(e)[0].value) == msg


def test_ddl_with_table_changes_and_the_ddl_spelling():
    msg = {
        "action": "ALTER", "before": [], "bid": 0, "data": [], "db": "alltype_mysql",
        "dbValType": {"a": "int", "b": "int", "c": "int"},
        "ddl": True, "entryType": "ROWDATA", "execTs": 1669880624000, "jdbcType": {"a": 4, "b": 4, "c": 4}, "pks": [],
        "schema": "alltype_mysql", "sendTs": 1669880625842, "sql": "alter table aaa add c int null", "table": "aaa",
        "tableChanges": {"table": {"columns": [
            {"jdbcType": 4, "name": "c", "position": 2, "typeExpression": "int", "typeName": "int"},
            {"jdbcType": 4, "name": "a", "position": 0, "typeExpression": "int", "typeName": "int"},
            {"jdbcType": 4, "name": "b", "position": 1, "typeExpression": "int", "typeName": "int"},
        ], "primaryKeyColumnNames": ["a"]}, "type": "ALTER"},
    }  # fmt: skip
    c = get_codec(FMT)
    [e] = decode(c, msg)
    assert (e.op, e.ddl, e.ddl_kind) == (Op.DDL, "alter table aaa add c int null", "ALTER")
    assert e.schema.names == ("a", "b", "c") and e.schema.primary_key == ("a",)  # ordered by position
    assert orjson.loads(c.encode(e)[0].value) == msg


def test_ddl_feeds_the_catalog_through_observe():
    cat = SchemaCatalog()
    msg = dml("ALTER", [], isDdl=True, sql="alter table table_test add col2 varchar(22) null", dbValType=TYPES)
    [e] = decode(get_codec(FMT, catalog=cat), msg)
    cat.observe(e)
    assert cat.get("db_test", "table_test").names == ("col1", "col2", "col_pk")


@pytest.mark.parametrize(
    "change,reason",
    [
        (
            {"action": "INSERT/DELETE/UPDATE"},
            "unknown action 'INSERT/DELETE/UPDATE' (expected INSERT, UPDATE or DELETE)",
        ),
        ({"action": 1}, "action must be a string"),
        ({"entryType": "TRANSACTIONBEGIN"}, "unknown entryType 'TRANSACTIONBEGIN'"),
        ({"isDdl": "false"}, "isDdl must be true or false"),
        ({"data": []}, "insert message without rows in 'data'"),
        ({"data": {"col1": "1"}}, "'data' must be a list of row objects"),
        ({"before": [ROW_OLD]}, "insert message with rows in 'before'"),
        ({"dbValType": {"col1": "frobnicate(3)"}}, "dbValType of 'col1': unknown MySQL type 'frobnicate(3)'"),
        ({"dbValType": ["varchar"]}, "dbValType must map column names"),
        ({"jdbcType": {"col1": "12"}}, "jdbcType must map column names to JDBC type codes"),
        ({"execTs": "1669789152000"}, "field 'execTs' must be a number"),
        ({"pks": "col_pk"}, "pks must be a list"),
        ({"db": None, "table": 3}, "field 'table' must be a string"),
    ],
)
def test_bad_input(change, reason):
    msg = dml("INSERT", [ROW_NEW])
    msg.update(change)
    with pytest.raises(DecodeError) as info:
        decode(get_codec(FMT), msg)
    assert reason in str(info.value)


def test_missing_fields():
    for field in ("entryType", "action"):
        msg = dml("INSERT", [ROW_NEW])
        del msg[field]
        with pytest.raises(DecodeError, match=f"missing field '{field}'"):
            decode(get_codec(FMT), msg)
    with pytest.raises(DecodeError, match="needs its statement in 'sql'"):
        decode(get_codec(FMT), dml("ALTER", [], isDdl=True, sql=""))
    with pytest.raises(DecodeError, match="UPDATE with 1 rows in 'data' but 0 in 'before'"):
        decode(get_codec(FMT), dml("UPDATE", [ROW_NEW]))


def test_encode_foreign_typed_events():
    schema = TableSchema(
        (
            Column("id", "int unsigned", nullable=False, primary_key=True),
            Column("at", "timestamp"),
            Column("b", "varbinary(4)"),
        ),
        ("id",),
    )
    e = ChangeEvent(
        op=Op.UPDATE,
        source=SourcePosition(database="shop", table="t"),
        before={"id": 1, "at": dt.datetime(2020, 1, 1), "b": None},
        after={"id": 4294967295, "at": dt.datetime(2020, 1, 1, 1), "b": b"\x01"},
        schema=schema,
        pk=("id",),
        ts_ms=5,
        timezone="Asia/Shanghai",
    )
    obj = orjson.loads(get_codec(FMT).encode(e)[0].value)
    assert obj["action"] == "UPDATE" and obj["entryType"] == "ROWDATA" and obj["isDdl"] is False
    assert obj["before"] == [{"id": "1", "at": "2019-12-31 16:00:00", "b": None}]  # TIMESTAMP into UTC
    assert obj["data"] == [{"id": "4294967295", "at": "2019-12-31 17:00:00", "b": "\x01"}]
    assert obj["dbValType"] == {"id": "int unsigned", "at": "timestamp", "b": "varbinary(4)"}
    assert obj["jdbcType"] == {"id": 4, "at": 93, "b": 2004}
    assert (obj["pks"], obj["db"], obj["schema"], obj["execTs"], obj["sendTs"]) == (["id"], "shop", "shop", 5, 5)
    assert not list(schemas.validator(FMT).iter_errors(obj))


def test_commits_are_written_only_when_asked_or_reproduced():
    commit = ChangeEvent(op=Op.COMMIT, source=SourcePosition(database="d", table="t"), ts_ms=1)
    assert get_codec(FMT).encode(commit) == []
    obj = orjson.loads(get_codec(FMT, {"transaction_end": True}).encode(commit)[0].value)
    assert obj["entryType"] == "TRANSACTIONEND"
    assert not list(schemas.validator(FMT).iter_errors(obj))
    assert get_codec(FMT).encode(ChangeEvent(op=Op.BEGIN)) == []


def test_encode_ddl_from_elsewhere_builds_table_changes():
    schema = TableSchema((Column("a", "int"), Column("b", "varchar(3)")), ("a",))
    e = ChangeEvent(
        op=Op.DDL,
        source=SourcePosition(database="d", table="t"),
        ddl="alter table t add b varchar(3)",
        schema=schema,
        ts_ms=1,
    )
    obj = orjson.loads(get_codec(FMT).encode(e)[0].value)
    assert obj["action"] == "ALTER" and obj["isDdl"] is True and obj["sql"] == e.ddl
    assert obj["tableChanges"]["table"]["columns"][1] == {
        "jdbcType": 12,
        "name": "b",
        "position": 1,
        "typeExpression": "varchar(3)",
        "typeName": "varchar",
    }
    assert obj["tableChanges"]["table"]["primaryKeyColumnNames"] == ["a"]
    assert not list(schemas.validator(FMT).iter_errors(obj))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(change_streams(max_events=6))
def test_round_trip(events):
    enc, dec = get_codec(FMT), get_codec(FMT)
    validator = schemas.validator(FMT)
    for e in events:
        want = essence(e)
        [rec] = enc.encode(e)
        assert not list(validator.iter_errors(orjson.loads(rec.value)))
        [back] = dec.decode(rec)
        assert essence(back) == want
        assert [(c.name, c.type) for c in back.schema.columns] == [(c.name, c.type) for c in e.schema.columns]
        assert enc.encode(back)[0].value == rec.value


def test_ddl_without_a_schema_takes_the_table_from_the_catalog():
    cat = SchemaCatalog()
    e = ChangeEvent(
        op=Op.DDL,
        source=SourcePosition(database="d", table="t"),
        ddl="create table t (id int primary key, n varchar(3))",
        ts_ms=1,
    )
    cat.observe(e)  # as the chain does before encoding
    obj = orjson.loads(get_codec(FMT, catalog=cat).encode(e)[0].value)
    assert obj["dbValType"] == {"id": "int", "n": "varchar(3)"} and obj["jdbcType"] == {"id": 4, "n": 12}
    assert [c["name"] for c in obj["tableChanges"]["table"]["columns"]] == ["id", "n"]
    assert obj["tableChanges"]["table"]["primaryKeyColumnNames"] == ["id"]
