"""The table schema catalog: DDL parsing, versions, learning from messages, schema files."""

from __future__ import annotations

import json

import orjson
import pytest

from cdc_smt.transforms.catalog import SchemaCatalog, classify_ddl, split_statements
from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import ChangeEvent, Column, Op, Record, SourcePosition, TableSchema


def catalog_with(database: str, *ddl: str) -> SchemaCatalog:
    cat = SchemaCatalog()
    for sql in ddl:
        assert cat.apply_ddl(database, sql) == [], sql
    return cat


def cols(cat: SchemaCatalog, db: str, table: str) -> list[tuple[str, str, bool]]:
    schema = cat.get(db, table)
    assert schema is not None, f"{db}.{table} unknown"
    return [(c.name, c.type, c.nullable) for c in schema.columns]


# ---------------------------------------------------------------------------
# CREATE TABLE
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "definition,type_text",
    [
        ("int(11) unsigned", "int(11) unsigned"),
        ("INT UNSIGNED ZEROFILL", "int unsigned zerofill"),
        ("decimal(10,2)", "decimal(10,2)"),
        ("DECIMAL(10, 2) UNSIGNED", "decimal(10,2) unsigned"),
        ("numeric(5)", "decimal(5,0)"),
        ("enum('a','b')", "enum('a','b')"),
        ("enum('it''s','x,y')", "enum('it''s','x,y')"),
        ("set('red','green')", "set('red','green')"),
        ("datetime(3)", "datetime(3)"),
        ("timestamp(6) NULL", "timestamp(6)"),
        ("time", "time"),
        ("varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", "varchar(255)"),
        ("char(1) charset latin1", "char(1)"),
        ("bit(1)", "bit(1)"),
        ("tinyint(1)", "tinyint(1)"),
        ("bool", "tinyint(1)"),
        ("REAL", "double"),  # MySQL REAL is DOUBLE (sqlglot maps it to FLOAT)
        ("double precision", "double"),
        ("float unsigned", "float unsigned"),  # sqlglot rejects it; repaired
        ("point", "point"),  # geometry subtypes: sqlglot rejects them; repaired
        ("json", "json"),
        ("varbinary(64)", "varbinary(64)"),
        ("year(4)", "year(4)"),
        ("mediumtext", "mediumtext"),
    ],
)
def test_create_table_column_types(definition, type_text):
    cat = catalog_with("d", f"CREATE TABLE t (id int, c {definition})")
    assert cols(cat, "d", "t")[1][:2] == ("c", type_text)


def test_create_table_from_the_ckafka_document():
    # 000_*.txt, "create table": NOT NULL columns, a PRIMARY KEY table constraint,
    # UNIQUE and plain keys that do not change the key, table options.
    sql = (
        "CREATE TABLE `customers` (\n`id` int NOT NULL AUTO_INCREMENT,\n`first_name` varchar(255) NOT NULL,\n"
        "`last_name` varchar(255) NOT NULL,\n`email` varchar(255) NOT NULL,\nPRIMARY KEY (`id`),\n"
        "UNIQUE KEY `email` (`email`),\nKEY `ix_id` (`id`)\n) ENGINE=InnoDB AUTO_INCREMENT=1041 DEFAULT CHARSET=utf8"
    )
    cat = catalog_with("dip_test", sql)
    schema = cat.get("dip_test", "customers")
    assert schema.names == ("id", "first_name", "last_name", "email")
    assert schema.primary_key == ("id",)
    assert all(not c.nullable for c in schema.columns)
    assert schema.column("id").primary_key and not schema.column("email").primary_key


def test_create_table_from_the_tdsql_document():
    # 002_*.txt query event: inline PRIMARY KEY.
    cat = catalog_with("testsummer", "create table test_table1 (id int primary key,name varchar(20))")
    schema = cat.get("testsummer", "test_table1")
    assert cols(cat, "testsummer", "test_table1") == [("id", "int", False), ("name", "varchar(20)", True)]
    assert schema.primary_key == ("id",)


def test_composite_primary_key_keeps_its_order_and_prefix_lengths():
    cat = catalog_with("d", "create table t (a int, b varchar(10), c int, constraint pk primary key (c, b(5)))")
    schema = cat.get("d", "t")
    assert schema.primary_key == ("c", "b")
    assert [c.primary_key for c in schema.columns] == [False, True, True]
    assert [c.nullable for c in schema.columns] == [True, False, False]  # key columns are NOT NULL


def test_defaults_comments_and_explicit_null():
    cat = catalog_with(
        "d",
        "create table t (a int not null default 3, b varchar(5) null default 'x' comment 'the b', "
        "c datetime default current_timestamp, d int default null)",
    )
    a, b, c, d = cat.get("d", "t").columns
    assert (a.nullable, a.default) == (False, "3")
    assert (b.nullable, b.default, b.comment) == (True, "x", "the b")
    assert c.default == "CURRENT_TIMESTAMP"
    assert d.default is None


def test_qualified_names_and_table_options_sqlglot_cannot_parse():
    cat = catalog_with("other", "CREATE TABLE `shop`.`orders` (id bigint) PARTITION BY HASH(id) PARTITIONS 4")
    assert cat.get("shop", "orders").names == ("id",)
    assert cat.get("other", "orders") is None


def test_create_if_not_exists_keeps_the_existing_table_and_like_copies():
    cat = catalog_with("d", "create table t (a int)", "create table if not exists t (b int)", "create table u like t")
    assert cat.get("d", "t").names == ("a",)
    assert cat.get("d", "u") == cat.get("d", "t")


# ---------------------------------------------------------------------------
# ALTER / RENAME / DROP / TRUNCATE
# ---------------------------------------------------------------------------


def test_alter_from_the_ckafka_document_adds_a_nullable_column_with_default():
    cat = catalog_with("test", "create table user (id int primary key)")
    assert (
        cat.apply_ddl("test", "ALTER TABLE `user` ADD COLUMN `createtime` datetime NULL DEFAULT CURRENT_TIMESTAMP")
        == []
    )
    col = cat.get("test", "user").column("createtime")
    assert (col.type, col.nullable, col.default) == ("datetime", True, "CURRENT_TIMESTAMP")


def test_alter_add_first_after_drop_modify_change_rename():
    cat = catalog_with("d", "create table t (a int, b int, c int)")
    assert (
        cat.apply_ddl(
            "d",
            "alter table t add column z int first, add y varchar(3) after a, drop column b, "
            "modify c bigint not null, change column a aa decimal(5,1), rename column z to zz",
        )
        == []
    )
    assert cols(cat, "d", "t") == [
        ("zz", "int", True),
        ("aa", "decimal(5,1)", True),
        ("y", "varchar(3)", True),
        ("c", "bigint", False),
    ]


def test_modify_with_position_moves_the_column():
    cat = catalog_with("d", "create table t (a int, b int, c int)", "alter table t modify c int first")
    assert cat.get("d", "t").names == ("c", "a", "b")
    cat.apply_ddl("d", "ALTER TABLE t CHANGE `c` `cc` int(10) unsigned NOT NULL AFTER b")
    assert cols(cat, "d", "t")[-1] == ("cc", "int(10) unsigned", False)


def test_column_names_in_ddl_are_case_insensitive():
    cat = catalog_with("d", "create table t (Name varchar(3), id int)", "alter table t drop column NAME")
    assert cat.get("d", "t").names == ("id",)


def test_primary_key_follows_renames_drops_and_key_changes():
    cat = catalog_with("d", "create table t (a int, b int, primary key (a))")
    cat.apply_ddl("d", "alter table t change a a2 int")
    assert cat.get("d", "t").primary_key == ("a2",)
    cat.apply_ddl("d", "alter table t drop primary key")
    assert cat.get("d", "t").primary_key == ()
    cat.apply_ddl("d", "alter table t add primary key (b, a2)")
    assert cat.get("d", "t").primary_key == ("b", "a2")
    cat.apply_ddl("d", "alter table t drop column b")
    assert cat.get("d", "t").primary_key == ("a2",)


def test_alter_column_default_and_index_changes():
    cat = catalog_with("d", "create table t (a int default 1, b int)")
    cat.apply_ddl("d", "alter table t alter column a set default 5, add index ix (b), add unique key uk (a)")
    assert cat.get("d", "t").column("a").default == "5"
    cat.apply_ddl("d", "alter table t alter column a drop default")
    assert cat.get("d", "t").column("a").default is None
    assert cat.get("d", "t").primary_key == ()


def test_rename_table_from_the_ckafka_document():
    cat = catalog_with("testDB", "create table test (id int)")
    assert cat.apply_ddl("testDB", "rename table test to t_test") == []
    assert cat.get("testDB", "test") is None
    assert cat.get("testDB", "t_test").names == ("id",)


def test_rename_several_tables_across_databases_and_alter_rename():
    cat = catalog_with("a", "create table t1 (x int)", "create table t2 (y int)")
    cat.apply_ddl("a", "RENAME TABLE t1 TO `b`.`u1`, a.t2 TO t3")
    assert cat.get("b", "u1").names == ("x",)
    assert cat.get("a", "t3").names == ("y",)
    cat.apply_ddl("a", "alter table t3 rename to t4")
    assert (cat.get("a", "t3"), cat.get("a", "t4").names) == (None, ("y",))


def test_drop_table_from_the_ckafka_document_keeps_history():
    cat = catalog_with("dip_test", "create table customers (id int)")
    before = cat.get("dip_test", "customers")
    assert cat.apply_ddl("dip_test", "DROP TABLE IF EXISTS `dip_test`.`customers`") == []
    assert cat.get("dip_test", "customers") is None
    assert cat.versions("dip_test", "customers")[0].schema == before
    assert ("dip_test", "customers") not in cat


def test_drop_database_drops_its_tables():
    cat = catalog_with("d", "create table t (a int)", "create table e.u (b int)")
    cat.apply_ddl(None, "DROP DATABASE IF EXISTS `d`")
    assert cat.tables() == [("e", "u")]


def test_truncate_and_non_table_statements_change_nothing():
    cat = catalog_with("d", "create table t (a int)")
    v = cat.version
    for sql in [
        "truncate table t",
        "CREATE DATABASE `dip_test` CHARSET utf8mb4",
        "create index ix on t (a)",
        "grant select on d.* to x",
        "insert into t values (1)",
    ]:
        assert cat.apply_ddl("d", sql) == [], sql
    assert cat.version == v


def test_several_statements_with_semicolons_in_strings():
    assert split_statements("create table t (a varchar(3) default ';'); alter table t add b int;") == [
        "create table t (a varchar(3) default ';')",
        "alter table t add b int",
    ]
    cat = catalog_with("d", "create table t (a varchar(3) default ';'); alter table t add b int;")
    assert cat.get("d", "t").names == ("a", "b")


@pytest.mark.parametrize(
    "sql,kind",
    [
        ("CREATE TABLE t (a int)", "CREATE"),
        ("/* c */ alter table t add b int", "ALTER"),
        ("DROP TABLE IF EXISTS `dip_test`.`customers`", "ERASE"),
        ("rename table test to t_test", "RENAME"),
        ("truncate t", "TRUNCATE"),
        ("create unique index ix on t (a)", "CINDEX"),
        ("drop index ix on t", "DINDEX"),
        ("CREATE DATABASE `dip_test`", "QUERY"),
        ("CREATE TABLE /*!32312 IF NOT EXISTS*/ `t` (a int)", "CREATE"),
        ("/*!40000 ALTER TABLE `t` DISABLE KEYS */", "ALTER"),
        ("CREATE /* tool */ TABLE t (a int)", "CREATE"),
        ("-- migration 12\nDROP TABLE t", "ERASE"),
        ("/*!50001 CREATE ALGORITHM=UNDEFINED */ /*!50001 VIEW v AS select 1 */", "QUERY"),
    ],
)
def test_classify_ddl_uses_canal_types(sql, kind):
    assert classify_ddl(sql) == kind


# ---------------------------------------------------------------------------
# DDL the catalog cannot apply: warn, keep the last known schema
# ---------------------------------------------------------------------------


def test_unparseable_ddl_warns_and_keeps_the_schema():
    cat = catalog_with("d", "create table t (a int)")
    warnings = cat.apply_ddl("d", "alter table t add (q int, w int)")
    assert len(warnings) == 1 and "could not parse" in warnings[0] and "keeping the last known schema" in warnings[0]
    assert cat.get("d", "t").names == ("a",)


def test_alter_of_unknown_table_and_unknown_column_warn():
    cat = catalog_with("d", "create table t (a int)")
    assert "not in the catalog" in cat.apply_ddl("d", "alter table nope add x int")[0]
    assert "not in the catalog" in cat.apply_ddl("d", "alter table t modify zz int")[0]
    assert cat.get("d", "t").names == ("a",)


def test_unparseable_ddl_event_passes_through_the_codec_with_a_warning(caplog):
    codec = get_codec("tdsql-binlog-json")
    msg = {
        "logtype": "mysqlbinlog", "eventtype": 2, "eventtypestr": "query", "db": "d", "table": "t",
        "begintime": 1, "gtid": "g:1", "event_index": "1", "sql": "ALTER TABLE t ADD (q int, w int)",
    }  # fmt: skip
    codec.catalog.apply_ddl("d", "create table t (a int)")
    with caplog.at_level("WARNING", logger="cdc_smt.catalog"):
        [event] = codec.decode(Record(value=orjson.dumps(msg)))
    assert event.op is Op.DDL and event.ddl == msg["sql"]
    assert "could not parse" in caplog.text
    assert codec.catalog.get("d", "t").names == ("a",)


# ---------------------------------------------------------------------------
# versions
# ---------------------------------------------------------------------------


def test_versions_and_schema_in_force_at_a_version():
    cat = catalog_with("d", "create table t (a int)")
    v1 = cat.version
    cat.apply_ddl("d", "alter table t add b int")
    v2 = cat.version
    assert cat.at("d", "t", v1).names == ("a",)
    assert cat.at("d", "t", v2).names == ("a", "b")
    assert cat.at("d", "t", 0) is None
    assert [v.origin for v in cat.versions("d", "t")] == ["ddl", "ddl"]
    assert cat.versions("d", "t")[1].ddl == "alter table t add b int"


def test_max_versions_keeps_the_newest():
    cat = SchemaCatalog(max_versions=2)
    cat.apply_ddl("d", "create table t (a int)")
    for c in "bcd":
        cat.apply_ddl("d", f"alter table t add {c} int")
    kept = cat.versions("d", "t")
    assert len(kept) == 2 and kept[-1].schema.names == ("a", "b", "c", "d")


def test_rows_before_an_alter_decode_with_the_schema_in_force_before_it():
    codec = get_codec("tdsql-binlog-json")  # no catalog given: its own, fed by the stream

    def msg(kind, code, **fields):
        return Record(
            value=orjson.dumps(
                {"logtype": "mysqlbinlog", "eventtype": code, "eventtypestr": kind, "db": "d", "table": "t", **fields}
            )
        )

    stream = [
        msg("query", 2, sql="create table t (id int primary key, name varchar(10))"),
        msg("insert", 23, where=[], field=["1", "'a'"]),
        msg("query", 2, sql="alter table t add column score decimal(5,2) after id"),
        msg("insert", 23, where=[], field=["2", "9.50", "'b'"]),
    ]
    events = [e for r in stream for e in codec.decode(r)]
    first, second = events[1].typed(), events[3].typed()
    assert first.after == {"id": 1, "name": "a"}
    assert second.after == {"id": 2, "score": pytest.approx(9.5), "name": "b"}
    assert str(second.after["score"]) == "9.50"
    assert first.schema.names == ("id", "name")  # unchanged by the later ALTER


def test_observe_applies_a_ddl_event_once():
    cat = catalog_with("d", "create table t (a int)")
    event = ChangeEvent(op=Op.DDL, source=SourcePosition(database="d", table="t"), ddl="alter table t add b int")
    assert cat.observe(event) == []
    assert cat.observe(event) == []  # the codec and the chain may both observe it
    assert cat.get("d", "t").names == ("a", "b")
    assert len(cat.versions("d", "t")) == 2


# ---------------------------------------------------------------------------
# learning from typed messages
# ---------------------------------------------------------------------------


def _row(schema: TableSchema, origin: str | None = None, table: str = "t") -> ChangeEvent:
    return ChangeEvent(
        op=Op.INSERT, source=SourcePosition(database="d", table=table), after={}, schema=schema, origin=origin
    )


def test_learns_unknown_tables_and_type_changes_from_typed_messages():
    cat = SchemaCatalog()
    s1 = TableSchema((Column("id", "int(11)"), Column("n", "varchar(5)")), ("id",))
    cat.observe(_row(s1, "canal-json"))
    assert cat.get("d", "t") == s1
    s2 = TableSchema((Column("id", "int(11)"), Column("n", "varchar(50)")), ("id",))
    cat.observe(_row(s2, "canal-json"))
    assert cat.get("d", "t").column("n").type == "varchar(50)"
    assert [v.origin for v in cat.versions("d", "t")] == ["message", "message"]


def test_learning_keeps_ddl_details_when_types_agree():
    cat = catalog_with("d", "create table t (id int not null, n varchar(5) default 'x' comment 'c', primary key (id))")
    # Canal prints int(11) for int and has no nullability or defaults.
    cat.observe(_row(TableSchema((Column("id", "int(11)"), Column("n", "varchar(5)")), ("id",)), "canal-json"))
    n = cat.get("d", "t").column("n")
    assert (n.default, n.comment) == ("x", "c")
    assert len(cat.versions("d", "t")) == 1


def test_formats_without_exact_types_teach_nothing():
    cat = SchemaCatalog()
    cat.observe(_row(TableSchema((Column("id", "longtext"),)), "ckafka-json"))
    assert cat.get("d", "t") is None


def test_ddl_event_carrying_the_new_schema_is_taken_as_is():
    cat = SchemaCatalog()
    schema = TableSchema((Column("a", "int"), Column("b", "int"), Column("c", "int")))
    event = ChangeEvent(
        op=Op.DDL, source=SourcePosition(database="alltype_mysql", table="aaa"), ddl="alter table aaa add c int null",
        schema=schema, origin="cloudcanal-json",
    )  # fmt: skip
    assert cat.observe(event) == []  # the table was unknown, but the message says what it is now
    assert cat.get("alltype_mysql", "aaa") == schema


# ---------------------------------------------------------------------------
# schema files and persistence
# ---------------------------------------------------------------------------

SCHEMA_YAML = """
tables:
  shop.orders:
    columns:
      - {name: id, type: bigint unsigned, nullable: false}
      - {name: amount, type: "decimal(10,2)"}
      - {name: status, type: "enum('new','paid')", default: new}
    primary_key: [id]
  shop.customers:
    columns: {id: int, name: varchar(255)}
    primary_key: [id]
ddl:
  - database: shop
    sql: |
      CREATE TABLE items (id int PRIMARY KEY, sku varchar(32) NOT NULL);
      ALTER TABLE items ADD COLUMN price decimal(10,2);
"""


def test_schema_file_yaml(tmp_path):
    path = tmp_path / "catalog.yaml"
    path.write_text(SCHEMA_YAML)
    cat = SchemaCatalog()
    cat.load_file(path)
    assert cols(cat, "shop", "orders") == [
        ("id", "bigint unsigned", False),
        ("amount", "decimal(10,2)", True),
        ("status", "enum('new','paid')", True),
    ]
    assert cat.get("shop", "orders").primary_key == ("id",)
    assert cat.get("shop", "orders").column("status").default == "new"
    assert cat.get("shop", "customers").names == ("id", "name")
    assert cat.get("shop", "items").names == ("id", "sku", "price")
    assert {v.origin for v in cat.versions("shop", "orders")} == {"file"}


def test_schema_file_json(tmp_path):
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps({"tables": {"d.t": {"columns": [{"name": "a", "type": "int", "primary_key": True}]}}}))
    cat = SchemaCatalog()
    cat.load_file(path)
    assert cat.get("d", "t").primary_key == ("a",)


@pytest.mark.parametrize(
    "content,where,what",
    [
        (
            {"tables": {"d.t": {"columns": [{"name": "a", "type": "frobnicate"}]}}},
            "columns[0].type",
            "unknown MySQL type",
        ),
        ({"tables": {"t": {"columns": {"a": "int"}}}}, "tables['t']", "database.table"),
        ({"tables": {"d.t": {"columns": {"a": "int"}, "primary_key": ["b"]}}}, "primary_key", "not among the columns"),
        (
            {"tables": {"d.t": {"columns": [{"name": "a", "type": "int", "nullabel": False}]}}},
            "columns[0]",
            "unknown key 'nullabel'",
        ),
        ({"tabels": {}}, "", "unknown key 'tabels'"),
        ({"ddl": [{"database": "d", "sql": "alter table nope add x int"}]}, "ddl[0]", "not in the catalog"),
    ],
)
def test_schema_file_errors_name_the_place(tmp_path, content, where, what):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(content))
    with pytest.raises(ConfigError) as info:
        SchemaCatalog().load_file(path)
    assert where in str(info.value) and what in str(info.value)


def test_missing_or_malformed_schema_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        SchemaCatalog().load_file(tmp_path / "none.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("tables: [unclosed")
    with pytest.raises(ConfigError, match="malformed YAML"):
        SchemaCatalog().load_file(bad)


def test_to_dict_from_dict_round_trip_is_json():
    cat = catalog_with(
        "d",
        "create table t (a int not null default 1 comment 'x', b varchar(3), primary key (a))",
        "alter table t add c int",
        "drop table t",
    )
    cat.apply_ddl("d", "create table u (z json)")
    data = json.loads(json.dumps(cat.to_dict()))
    back = SchemaCatalog.from_dict(data)
    assert back.version == cat.version
    assert back.tables() == [("d", "u")]
    assert [v.schema for v in back.versions("d", "t")] == [v.schema for v in cat.versions("d", "t")]
    back.apply_ddl("d", "alter table u add y int")
    assert back.version == cat.version + 1
