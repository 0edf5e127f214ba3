"""tdsql-binlog-json through a chain: the reference a catalog-following native plan must match.

Rows are positional arrays of SQL literals: names and types both come from the
schema catalog (a schema file, or QUERY events' DDL in the stream), so
``plan_for`` gives no plan today and these chains run on the Python path. The
tests pin what a plan must keep (issue #13): rows after an ALTER in the middle of
a batch are named and typed by the new schema, a batch gives what one record at a
time gives, ``unknown_table`` decides rows of tables the catalog lacks, and
malformed messages are dead letters that lose nothing. Each test also runs the
chain as built (native when a plan exists) against its Python twin, byte for byte.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt.transforms.catalog import SchemaCatalog
from cdc_smt.transforms.chain import Chain, ChainResult
from cdc_smt.transforms.formats import get_codec
from tests.messages import tdsql_message
from tests.strategies import change_streams, table_schemas
from tests.test_native_ckafka import assert_batch_is_one_at_a_time, run_chains, run_corpus

FMT = "tdsql-binlog-json"
SINKS = ["canal-json", "debezium-json"]
CREATE = "create table items (id int primary key, name varchar(20), price decimal(10,2))"


def msg(kind: str, code: int, **fields: Any) -> bytes:
    return orjson.dumps(tdsql_message(kind, code, **fields))


def insert(*literals: str, code: int = 23, **fields: Any) -> bytes:
    return msg("insert", code, where=[], field=list(literals), **fields)


def run(sink: str, values: list[bytes | None], catalog: SchemaCatalog | None = None, **source: Any) -> ChainResult:
    return run_chains(FMT, sink, values, catalog, source)


def dml_rows(result: ChainResult, sink: str) -> list[dict[str, Any]]:
    """The after image (debezium) or first data row (canal) of each row message."""
    rows = []
    for r in result.outputs:
        if r.value is None:
            continue
        obj = orjson.loads(r.value)
        if sink == "debezium-json" and obj.get("op") in ("c", "u", "r"):
            rows.append(obj["after"])
        elif sink == "canal-json" and obj.get("isDdl") is False and obj.get("data"):
            rows.append(obj["data"][0])
    return rows


def test_plan_for_leaves_catalog_chains_to_python_today() -> None:
    """The starting point of issue #13's catalog plans (when this fails, a plan exists:
    the other tests compare it with Python)."""
    chain = Chain(get_codec(FMT, {}), get_codec("debezium-json", {}), [], "all")
    assert chain.catalog is not None
    assert chain.native is None


@pytest.mark.parametrize("sink", SINKS)
def test_an_alter_in_the_middle_of_a_batch_names_and_types_the_rows_after_it(sink: str) -> None:
    values = [
        msg("query", 2, sql=CREATE),
        insert("1", "'a'", "9.50"),
        msg("query", 2, sql="alter table items add column qty int"),
        insert("2", "'b'", "1.00", "3", code=30),
        msg("query", 2, sql="alter table items modify price varchar(10)"),
        insert("3", "'c'", "'cheap'", "NULL"),
    ]
    result = run(sink, values)
    assert not result.dead_letters
    rows = dml_rows(result, sink)
    assert [sorted(r) for r in rows] == [
        ["id", "name", "price"],
        ["id", "name", "price", "qty"],
        ["id", "name", "price", "qty"],
    ]
    if sink == "debezium-json":
        assert rows[1]["qty"] == 3 and rows[2]["price"] == "cheap"


@pytest.mark.parametrize("sink", SINKS)
def test_a_batch_gives_what_one_record_at_a_time_gives(sink: str) -> None:
    values = [
        msg("gtid", 33),
        msg("query", 2, sql=CREATE),
        insert("1", "_utf8mb4'数据 🎉'", "-0.01"),
        msg("update", 31, where=["1", "'x'", "NULL"], field=["1", "'y'", "99999999.99"]),
        msg("query", 2, sql="alter table items drop column name"),
        msg("delete", 25, where=["1", "1.00"], field=[]),
        msg("xid", 16, xid="7"),
    ]
    assert_batch_is_one_at_a_time(FMT, sink, values, {})


@pytest.mark.parametrize("sink", SINKS)
def test_unknown_tables(sink: str) -> None:
    values = [insert("1", "'x'", "2.5", "NULL", "0x0A", table="other"), insert("2", "'y'", table="other")]
    failing = run(sink, values)
    assert len(failing.dead_letters) == 2 and "is not in the schema catalog" in failing.dead_letters[0].message
    positional = run(sink, values, unknown_table="positional")
    assert not positional.dead_letters and len(positional.outputs) >= 2


MALFORMED: list[bytes | None] = [
    b'{"logtype": "mysqlbinlog", "eventtype": 23',
    b"[]",
    msg("insert", 23, logtype="binlog", where=[], field=["1", "'a'", "1"]),
    msg("replace", 23, where=[], field=["1", "'a'", "1"]),
    msg("insert", 25, where=[], field=["1", "'a'", "1"]),
    msg("insert", 23, where=[], field=["1", "'a'"]),
    msg("insert", 23, where=[], field=["'not a number'", "'a'", "1"]),
    msg("insert", 23, where=[], field=["1", "'unterminated", "1"]),
    msg("insert", 23, where=[], field="1, 'a', 1"),
    msg("update", 24, where=[], field=["1", "'a'", "1"]),
    None,
]


@pytest.mark.parametrize("sink", SINKS)
def test_malformed_messages_among_good_ones(sink: str) -> None:
    good = insert("2", "'b'", "2.00")
    values = [msg("query", 2, sql=CREATE), good] + [m for bad in MALFORMED for m in (bad, good)]
    result = run(sink, values)
    assert [d.record.value for d in result.dead_letters] == MALFORMED  # each one kept as it came (a tombstone too)


@pytest.mark.parametrize("sink", SINKS)
def test_compressed_mariadb_events(sink: str) -> None:
    values = [msg("query", 165, sql=CREATE)] + [insert("1", "'a'", "1.00", code=c) for c in (166, 169)]
    assert len(dml_rows(run(sink, values), sink)) == 2


@pytest.mark.parametrize("sink", SINKS)
def test_corpus_files(sink: str, corpus: Path) -> None:
    run_corpus(corpus, FMT, lambda stream: run(sink, stream, unknown_table="positional"))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), sink=st.sampled_from(SINKS))
def test_random_streams_with_every_mysql_type(data: st.DataObject, sink: str) -> None:
    """Python-encoded tdsql-binlog-json of hypothesis change streams (every MySQL type,
    NULLs, unicode, wide decimals, zero dates, max unsigned bigint, bytes), named and
    typed by a schema file."""
    schema = data.draw(table_schemas(max_columns=6))
    events = data.draw(change_streams(schema=schema, max_events=6))
    catalog = SchemaCatalog()
    catalog.put("shop", "t", schema)
    enc = get_codec(FMT, catalog=catalog)
    values: list[bytes | None] = [r.value for e in events for r in enc.encode(e)]
    run(sink, values, catalog)
