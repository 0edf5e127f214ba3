"""Vendor-document samples in ../shared/corpus: ckafka-json, tdsql-binlog-json, cloudcanal-json.

Expected values are the ones the documents show (000_*, 001_*, 002_*.txt in
../shared/formats). Deviations of the samples from their own documents are
asserted explicitly, so a fixed sample makes its test fail and get updated.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from zoneinfo import ZoneInfo

import orjson
import pytest

from cdc_smt import schemas
from cdc_smt.transforms.catalog import SchemaCatalog
from cdc_smt.transforms.errors import DecodeError
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import Op, Record
from tests.corpus import read_messages, strip_comments

pytestmark = pytest.mark.corpus

ANNE = {"last_name": "Kretchmar", "id": "1004", "first_name": "Anne", "email": "annek@noanswer.org"}
ANNE_MARIE = {**ANNE, "first_name": "Anne Marie"}
# The CREATE TABLE of the CKafka document's own DDL example (000_*.txt).
CUSTOMERS_DDL = (
    "CREATE TABLE `customers` (`id` int NOT NULL AUTO_INCREMENT, `first_name` varchar(255) NOT NULL, "
    "`last_name` varchar(255) NOT NULL, `email` varchar(255) NOT NULL, PRIMARY KEY (`id`), "
    "UNIQUE KEY `email` (`email`), KEY `ix_id` (`id`)) ENGINE=InnoDB AUTO_INCREMENT=1041 DEFAULT CHARSET=utf8"
)


def one(path: Path) -> bytes:
    [msg] = read_messages(path)
    return msg


def shanghai_ms(*parts: int) -> int:
    return int(dt.datetime(*parts, tzinfo=ZoneInfo("Asia/Shanghai")).timestamp()) * 1000


def assert_valid(name: str, raw: bytes) -> None:
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in schemas.validator(name).iter_errors(orjson.loads(raw))]
    assert errors == []


# ---------------------------------------------------------------------------
# ckafka-json (000_*.txt)
# ---------------------------------------------------------------------------


@pytest.fixture
def ckafka():
    cat = SchemaCatalog()
    cat.apply_ddl("inventory", CUSTOMERS_DDL)
    return get_codec("ckafka-json", {"source_timezone": "Asia/Shanghai"}, catalog=cat)


@pytest.mark.parametrize(
    "name,op,pos,before,after,ts",
    [
        # TIME 19700101080000 is the epoch in UTC+8: the document's zone.
        ("ckafka-format1-dml-insert.json", Op.INSERT, 154, None, ANNE, 0),
        ("ckafka-format1-dml-update.json", Op.UPDATE, 484, ANNE, ANNE_MARIE, shanghai_ms(2016, 6, 11, 1, 50, 29)),
        ("ckafka-format1-dml-delete.json", Op.DELETE, 805, ANNE_MARIE, None, shanghai_ms(2016, 6, 11, 2, 5, 2)),
    ],
)
def test_ckafka_dml(corpus, ckafka, name, op, pos, before, after, ts):
    raw = one(corpus / "ckafka-json" / name)
    assert_valid("ckafka-json", raw)
    [e] = ckafka.decode(Record(value=raw))
    src = e.source
    assert (e.op, src.database, src.table, src.binlog_file, src.binlog_pos, src.gtid, src.server_id) == (
        op, "inventory", "customers", "mysql-bin.000003", pos, None, None,
    )  # fmt: skip
    assert (e.before, e.after, e.ts_ms) == (before, after, ts)
    assert ckafka.encode(e)[0].value == raw  # same format: byte for byte
    e.typed()
    assert (e.row["id"], e.pk) == (1004, ("id",))


@pytest.mark.parametrize(
    "name,kind,database,table,sql,ts",
    [
        (
            "ckafka-format1-ddl-alter-table.json",
            "ALTER",
            "test",
            "user",
            "ALTER TABLE `user` ADD COLUMN `createtime` datetime NULL DEFAULT CURRENT_TIMESTAMP",
            1655782153000,
        ),
        (
            "ckafka-format1-ddl-create-database.json",
            "QUERY",
            "dip_test",
            None,
            "CREATE DATABASE `dip_test` CHARSET utf8mb4 COLLATE utf8mb4_0900_ai_ci",
            1655812326000,
        ),
        (
            "ckafka-format1-ddl-drop-table.json",
            "ERASE",
            "dip_test",
            "customers",
            "DROP TABLE IF EXISTS `dip_test`.`customers`",
            1655812326000,
        ),
        # This one has es/ts in milliseconds; the others in seconds.
        (
            "ckafka-format1-ddl-rename-table.json",
            "RENAME",
            "testDB",
            "t_test",
            "rename table test to t_test",
            1656300979748,
        ),
    ],
)
def test_ckafka_ddl(corpus, name, kind, database, table, sql, ts):
    pytest.importorskip("cdc_smt.transforms.formats.canal_json")
    raw = one(corpus / "ckafka-json" / name)
    assert_valid("ckafka-json", raw)
    c = get_codec("ckafka-json", {"source_timezone": "Asia/Shanghai"})
    [e] = c.decode(Record(value=raw))
    assert (e.op, e.ddl_kind, e.source.database, e.source.table, e.ddl, e.ts_ms) == (
        Op.DDL,
        kind,
        database,
        table,
        sql,
        ts,
    )
    assert orjson.loads(c.encode(e)[0].value) == orjson.loads(raw)


def test_ckafka_ddl_stream_drives_the_catalog(corpus):
    pytest.importorskip("cdc_smt.transforms.formats.canal_json")
    cat = SchemaCatalog()
    cat.apply_ddl("dip_test", CUSTOMERS_DDL)
    cat.apply_ddl("test", "create table user (id int primary key)")
    cat.apply_ddl("testDB", "create table test (id int)")
    c = get_codec("ckafka-json", catalog=cat)
    for name in [
        "ckafka-format1-ddl-alter-table.json",
        "ckafka-format1-ddl-drop-table.json",
        "ckafka-format1-ddl-rename-table.json",
    ]:
        c.decode(Record(value=one(corpus / "ckafka-json" / name)))
    assert cat.get("test", "user").names == ("id", "createtime")
    assert cat.get("dip_test", "customers") is None
    assert (cat.get("testDB", "test"), cat.get("testDB", "t_test").names) == (None, ("id",))


# ---------------------------------------------------------------------------
# tdsql-binlog-json (002_*.txt)
# ---------------------------------------------------------------------------

TDSQL = "tdsql-binlog-json"


def repaired_insert_sample(path: Path) -> bytes:
    """The DML sample with the document's two typos fixed: a block comment opened
    as ``/ *`` and the redacted port written ``0000`` (not JSON)."""
    text = path.read_text(encoding="utf-8").replace("/ *Event type", "/*Event type")
    text = re.sub(r'("localport":)0000', r"\g<1>0", text)
    return orjson.dumps(orjson.loads(strip_comments(text)))


def test_tdsql_insert_sample_deviates_from_json(corpus):
    path = corpus / "tdsql-binlog-json" / "tencent-docs-tdsql-dml-insert-event.jsonc"
    with pytest.raises(ValueError):
        read_messages(path)


def test_tdsql_insert_sample(corpus):
    raw = repaired_insert_sample(corpus / "tdsql-binlog-json" / "tencent-docs-tdsql-dml-insert-event.jsonc")
    assert_valid(TDSQL, raw)
    with pytest.raises(DecodeError, match=r"testdb\.testtable is not in the schema catalog"):
        get_codec(TDSQL).decode(Record(value=raw))
    [e] = get_codec(TDSQL, {"unknown_table": "positional"}).decode(Record(value=raw))
    assert e.after == {"@1": 1, "@2": "name1"}
    cat = SchemaCatalog()
    cat.apply_ddl("testdb", "create table testtable (id int primary key, name varchar(20))")
    c = get_codec(TDSQL, catalog=cat)
    [e] = c.decode(Record(value=raw))
    assert (e.op, e.source.database, e.source.table, e.source.gtid, e.ts_ms) == (
        Op.INSERT,
        "testdb",
        "testtable",
        "0-2670193178-726233561",
        1511350073000,
    )
    assert e.before is None and e.typed().after == {"id": 1, "name": "name1"}
    assert e.extra["event_index"] == "4"
    [e] = c.decode(Record(value=raw))
    assert c.encode(e)[0].value == raw


def test_tdsql_transaction_and_query_samples(corpus):
    c = get_codec(TDSQL)
    d = corpus / "tdsql-binlog-json"
    raws = [one(d / f"tencent-docs-tdsql-{k}-event.jsonc") for k in ("query", "gtid", "xid")]
    for raw in raws:
        assert_valid(TDSQL, raw)
    query, gtid, xid = (c.decode(Record(value=r))[0] for r in raws)
    assert (query.op, query.ddl, query.ddl_kind, query.source.database) == (
        Op.DDL, "create table test_table1 (id int primary key,name varchar(20))", "CREATE", "testsummer",
    )  # fmt: skip
    assert (gtid.op, gtid.source.gtid, gtid.source.database, gtid.ts_ms) == (
        Op.BEGIN,
        "35be190b-d019-11e7-ab7a-a0423f32c225:469",
        "sysdb",
        1511419963000,
    )
    assert (xid.op, xid.source.txid, xid.source.gtid) == (Op.COMMIT, "11866", gtid.source.gtid)  # same transaction
    schema = c.catalog.get("testsummer", "test_table1")  # the query event fed the codec's own catalog
    assert [(col.name, col.type) for col in schema.columns] == [("id", "int"), ("name", "varchar(20)")]
    assert schema.primary_key == ("id",)
    for raw, e in zip(raws, (query, gtid, xid), strict=True):
        assert c.encode(e)[0].value == raw


# ---------------------------------------------------------------------------
# cloudcanal-json (001_*.txt)
# ---------------------------------------------------------------------------

CC = "cloudcanal-json"


def test_cloudcanal_dml_sample_action_is_a_placeholder(corpus):
    raw = one(corpus / "cloudcanal-json" / "cloudcanal-docs-dml-example.jsonc")
    errors = list(schemas.validator(CC).iter_errors(orjson.loads(raw)))
    assert [list(e.absolute_path) for e in errors] == [["action"]]
    with pytest.raises(DecodeError, match="unknown action 'INSERT/DELETE/UPDATE'"):
        get_codec(CC).decode(Record(value=raw))


def test_cloudcanal_dml_sample_as_the_update_its_comment_describes(corpus):
    obj = orjson.loads(one(corpus / "cloudcanal-json" / "cloudcanal-docs-dml-example.jsonc"))
    obj["action"] = "UPDATE"  # the sample's `before` is commented "UPDATE 的 before 字段"
    raw = orjson.dumps(obj)
    assert_valid(CC, raw)
    c = get_codec(CC)
    [e] = c.decode(Record(value=raw))
    assert (e.op, e.source.database, e.source.table, e.ts_ms, e.processing_ts_ms) == (
        Op.UPDATE,
        "db_test",
        "table_test",
        1669789152000,
        1669789153377,
    )
    assert e.before == {"col1": "22", "col2": "22", "col_pk": "22"}
    assert e.after == {"col1": "11", "col2": "11", "col_pk": "11"}
    assert [(col.name, col.type) for col in e.schema.columns] == [
        ("col1", "varchar(22)"),
        ("col2", "varchar(22)"),
        ("col_pk", "varchar(22)"),
    ]
    assert e.pk == ()  # pks is [] in the sample
    assert c.encode(e)[0].value == raw


@pytest.mark.parametrize(
    "name,db,table,sql,columns,pk,ts",
    [
        (
            "cloudcanal-docs-ddl-example.jsonc",
            "db_test",
            "table_test",
            "alter table table_test add col2 varchar(22) null",
            ["col1", "col2", "col_pk"],
            ("col_pk",),
            1669789188000,
        ),
        # A consumed message: the DDL flag is spelled "ddl", as in the Chinese document.
        (
            "cloudcanal-blog-consumed-ddl-alter.json",
            "alltype_mysql",
            "aaa",
            "alter table aaa add c int null",
            ["a", "b", "c"],
            (),
            1669880624000,
        ),
    ],
)
def test_cloudcanal_ddl_samples(corpus, name, db, table, sql, columns, pk, ts):
    raw = one(corpus / "cloudcanal-json" / name)
    assert_valid(CC, raw)
    c = get_codec(CC)
    [e] = c.decode(Record(value=raw))
    assert (e.op, e.ddl_kind, e.source.database, e.source.table, e.ddl, e.ts_ms) == (
        Op.DDL,
        "ALTER",
        db,
        table,
        sql,
        ts,
    )
    assert list(e.schema.names) == columns and e.schema.primary_key == pk
    assert c.encode(e)[0].value == raw
    cat = SchemaCatalog()
    cat.observe(e)
    assert list(cat.get(db, table).names) == columns
