"""ckafka-json through a chain: the catalog-following native plans against the Python path.

ckafka-json's decoder owns a schema catalog (Canal-shaped CREATE/ALTER DDL in the
stream types the format-1 rows after it); its plans to canal-json and debezium-json
(``transforms/native_catalog.py``) read the rows natively, typed by the catalog, and
leave the DDL to Python, closing the batch there. The tests pin the behaviour the plans
keep (issue #13): rows after an ALTER in the middle of a batch are typed by the new
schema, a batch gives what one record at a time gives, a table without a schema keeps
strings and warns once, and malformed messages are dead letters that lose nothing.
Each test runs the chain as built (native) against its Python twin, byte for byte
(Canal's current-time ``ts`` compared by the run's time window: both paths write it),
and counts the records the plan converted itself.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt.transforms.catalog import SchemaCatalog
from cdc_smt.transforms.chain import Chain, ChainResult
from cdc_smt.transforms.config import build_transforms
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import Column, Record, TableSchema
from cdc_smt.transforms.native import CKAFKA_TO_CANAL, CKAFKA_TO_DEBEZIUM, TDSQL_TO_CANAL, TDSQL_TO_DEBEZIUM
from tests.strategies import change_streams, table_schemas
from tests.test_ckafka_json import ddl, dml
from tests.test_native import NATIVE_SUITE, corpus_files, corpus_messages, dead_letters, records_of
from tests.test_native_maxwell_in import _timed_outputs

pytestmark = NATIVE_SUITE

FMT = "ckafka-json"
SINKS = ["canal-json", "debezium-json"]
SOURCE = {"source_timezone": "Asia/Shanghai"}
CREATE = "CREATE TABLE `scores` (`id` int NOT NULL, `score` int, `note` varchar(20), PRIMARY KEY (`id`))"


def row(i: int, score: str | None = "7", note: str | None = "n") -> dict[str, str | None]:
    return {"id": str(i), "score": score, "note": note}


def insert(i: int, **values: Any) -> bytes:
    return orjson.dumps(dml("I", new=row(i, **values), TABLE="scores"))


#: The native plan of each (source, sink); the other formats' chains with a catalog have none.
PLANS = {
    (FMT, "canal-json"): CKAFKA_TO_CANAL,
    (FMT, "debezium-json"): CKAFKA_TO_DEBEZIUM,
    ("tdsql-binlog-json", "canal-json"): TDSQL_TO_CANAL,
    ("tdsql-binlog-json", "debezium-json"): TDSQL_TO_DEBEZIUM,
}


def plan_name(chain: Chain) -> str | None:
    return chain.native.name if chain.native is not None else None


@dataclass(slots=True)
class Compared(ChainResult):
    """The Python path's result, and how many records the native plan converted itself."""

    handled: int = 0


def now_ms() -> int:
    return int(time.time() * 1000)


def run_chains(
    fmt: str,
    sink: str,
    values: list[bytes | None],
    catalog: SchemaCatalog | None = None,
    source: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
) -> Compared:
    """``fmt`` -> ``sink`` as built (its native plan) and its Python twin agree on ``values``,
    each chain with its own copy of ``catalog``; returns the Python result (``handled``:
    how many records the plan converted itself, for the tests to check)."""

    def make() -> Chain:
        cat = None if catalog is None else SchemaCatalog.from_dict(catalog.to_dict())
        steps = build_transforms([dict(t) for t in transforms or ()])
        return Chain(get_codec(fmt, source or {}, catalog=cat), get_codec(sink, {}), steps, "all")

    fast, slow = make(), make()
    assert plan_name(fast) == PLANS.get((fmt, sink))
    slow.native = None
    records = records_of(values)
    python_calls: list[Record] = []
    one = fast._one
    fast._one = lambda record, result: (python_calls.append(record), one(record, result))  # type: ignore[method-assign]
    start = now_ms()
    native_result, python_result = fast.process_batch(records), slow.process_batch(records)
    end = now_ms()
    assert _timed_outputs(native_result, start, end) == _timed_outputs(python_result, start, end)
    assert dead_letters(native_result) == dead_letters(python_result)
    return Compared(python_result.outputs, python_result.dead_letters, len(records) - len(python_calls))


def assert_batch_is_one_at_a_time(fmt: str, sink: str, values: list[bytes | None], source: dict[str, Any]) -> None:
    """One batch of ``values`` gives what they give one record at a time (the catalog
    carries over between batches as within one)."""
    start = now_ms()
    whole = run_chains(fmt, sink, values, source=source)
    chain = Chain(get_codec(fmt, source), get_codec(sink, {}), [], "all")
    assert plan_name(chain) == PLANS.get((fmt, sink))
    one_by_one = ChainResult()
    for record in records_of(values):
        one_by_one.outputs += chain.process_batch([record]).outputs
    end = now_ms()
    assert _timed_outputs(whole, start, end) == _timed_outputs(one_by_one, start, end)


def run(sink: str, values: list[bytes | None], catalog: SchemaCatalog | None = None) -> Compared:
    return run_chains(FMT, sink, values, catalog, SOURCE)


def after(result: ChainResult, sink: str) -> list[dict[str, Any] | None]:
    """The after image (debezium) or first data row (canal) of each output message."""
    rows = []
    for r in result.outputs:
        obj = orjson.loads(r.value) if r.value is not None else None
        if obj is None:
            rows.append(None)
        elif sink == "debezium-json":
            rows.append(obj.get("after"))
        else:
            rows.append(None if obj.get("isDdl") else obj["data"][0])
    return rows


@pytest.mark.parametrize("sink", SINKS)
def test_plan_for_gives_ckafka_chains_their_catalog_plan_and_other_catalog_chains_none(sink: str) -> None:
    """Issue #13: a ckafka-json chain (its decoder's own catalog) has a plan; every other
    chain with a catalog stays on the Python path, as does ckafka with a catalog the
    decoder does not use."""
    chain = Chain(get_codec(FMT, SOURCE), get_codec(sink, {}), [], "all")
    assert chain.catalog is not None
    assert plan_name(chain) == PLANS[FMT, sink]
    canal = Chain(get_codec("canal-json", {}, catalog=SchemaCatalog()), get_codec(sink, {}), [], "all")
    assert canal.catalog is not None and canal.native is None
    other = Chain(get_codec(FMT, SOURCE), get_codec(sink, {}), [], "all", catalog=SchemaCatalog())
    assert other.native is None


@pytest.mark.parametrize("sink", SINKS)
def test_an_alter_in_the_middle_of_a_batch_types_the_rows_after_it(sink: str) -> None:
    values = [
        orjson.dumps(ddl(CREATE, "scores", "CREATE")),
        insert(1),
        orjson.dumps(ddl("ALTER TABLE `scores` MODIFY `score` varchar(10)", "scores", "ALTER")),
        insert(2),
        orjson.dumps(ddl("ALTER TABLE `scores` ADD COLUMN `extra` decimal(4,1)", "scores", "ALTER")),
        orjson.dumps(dml("I", new={**row(3), "extra": "1.5"}, TABLE="scores")),
    ]
    result = run(sink, values)
    assert not result.dead_letters
    assert result.handled == 3  # the rows; the DDL is Python's
    rows = [r for r in after(result, sink) if r is not None]
    if sink == "debezium-json":
        assert rows[0]["score"] == 7  # int before the ALTER
        assert rows[1]["score"] == "7"  # varchar after it
        assert rows[2]["extra"] == "Dw=="  # decimal(4,1): 15 unscaled, base64 (the default precise mode)
    else:
        assert [m["mysqlType"]["score"] for m in _canal_dml(result)] == ["int", "varchar(10)", "varchar(10)"]
        assert _canal_dml(result)[2]["mysqlType"]["extra"] == "decimal(4,1)"
        assert rows[2]["extra"] == "1.5"


def _canal_dml(result: ChainResult) -> list[dict[str, Any]]:
    return [m for m in (orjson.loads(r.value) for r in result.outputs if r.value) if not m.get("isDdl")]


@pytest.mark.parametrize("sink", SINKS)
def test_a_batch_gives_what_one_record_at_a_time_gives(sink: str) -> None:
    values = [
        orjson.dumps(ddl(CREATE, "scores", "CREATE")),
        insert(1),
        orjson.dumps(ddl("ALTER TABLE `scores` MODIFY `score` bigint unsigned", "scores", "ALTER")),
        insert(2, score="18446744073709551615"),
        orjson.dumps(dml("U", new=row(2, score="1"), old=row(2, score="18446744073709551615"), TABLE="scores")),
        orjson.dumps(dml("D", old=row(1), TABLE="scores")),
    ]
    assert_batch_is_one_at_a_time(FMT, sink, values, SOURCE)


@pytest.mark.parametrize("sink", SINKS)
def test_a_table_without_a_schema_keeps_strings_and_warns_once(sink: str, caplog: pytest.LogCaptureFixture) -> None:
    values = [insert(1), insert(2), orjson.dumps(ddl(CREATE, "scores", "CREATE")), insert(3)]
    with caplog.at_level(logging.WARNING, logger="cdc_smt.transforms.formats.ckafka_json"):
        result = run(sink, values)
    warnings = [r for r in caplog.records if "no schema for table inventory.scores" in r.getMessage()]
    assert len(warnings) == 2  # once per chain: the chain as built and its Python twin
    assert result.handled == 1  # the row after CREATE TABLE
    rows = [r for r in after(result, sink) if r is not None]
    assert rows[0]["score"] == "7" and rows[1]["score"] == "7"  # untyped: strings
    if sink == "debezium-json":
        assert rows[2]["score"] == 7  # typed once CREATE TABLE came


@pytest.mark.parametrize("sink", SINKS)
def test_a_schema_file_catalog_types_every_row(sink: str) -> None:
    catalog = SchemaCatalog()
    schema = TableSchema(
        (Column("id", "int", primary_key=True), Column("score", "double"), Column("note", "text")), ("id",)
    )
    catalog.put("inventory", "scores", schema)
    result = run(sink, [insert(1, score="2.5"), insert(2, score=None), insert(3, note="数据 🎉")], catalog)
    assert result.handled == 3
    rows = after(result, sink)
    if sink == "debezium-json":
        assert [r["score"] for r in rows if r] == [2.5, None, 7.0]
    assert rows[2] is not None and rows[2]["note"] == "数据 🎉"


MALFORMED: list[bytes | None] = [
    b'{"TYPE": "I", "TIME": "2022',
    b"[]",
    orjson.dumps(dml("X", new=row(1), TABLE="scores")),
    orjson.dumps(dml("I", new={"id": 1}, TABLE="scores")),
    orjson.dumps(dml("I", new=row(1), old=row(1), TABLE="scores")),
    orjson.dumps(dml("I", new=row(1), TABLE="scores", TIME="2022-01-01")),
    orjson.dumps(dml("I", new=row(1), TABLE="scores", TIME="20221345000000")),
    orjson.dumps(dml("I", new=row(1), TABLE=7)),
    orjson.dumps(dml("U", new=row(1), TABLE="scores")),
    orjson.dumps({"isDdl": False, "type": "INSERT", "data": [row(1)]}),
    None,
]


@pytest.mark.parametrize("sink", SINKS)
def test_malformed_messages_among_good_ones(sink: str) -> None:
    good = [orjson.dumps(ddl(CREATE, "scores", "CREATE")), insert(1)]
    values = good + [m for bad in MALFORMED for m in (bad, insert(2))]
    result = run(sink, values)
    assert [d.record.value for d in result.dead_letters] == MALFORMED  # each one kept as it came (a tombstone too)
    assert "unknown TYPE 'X'" in result.dead_letters[2].message
    assert result.handled == 1 + len(MALFORMED)  # the good rows


@pytest.mark.parametrize("sink", SINKS)
def test_corpus_files(sink: str, corpus: Path) -> None:
    # the DDL messages first (their tables' schemas), then the DML
    run_corpus(corpus, FMT, lambda stream: run(sink, sorted(stream, key=lambda m: b'"isDdl"' not in m)))


@pytest.mark.parametrize("sink", SINKS)
def test_corpus_rows_typed_by_a_schema_file(sink: str, corpus: Path) -> None:
    """The corpus's DML (Debezium's tutorial ``inventory.customers``, its columns not in the
    table's order) typed by a schema file: every row natively."""
    catalog = SchemaCatalog()
    catalog.apply_ddl(
        "inventory",
        "CREATE TABLE `customers` (`id` int NOT NULL, `first_name` varchar(255) NOT NULL, "
        "`last_name` varchar(255) NOT NULL, `email` varchar(255) NOT NULL, PRIMARY KEY (`id`))",
    )
    files = corpus_files(corpus, FMT)
    rows = [m for messages in corpus_messages(files) for m in messages if m is not None and b'"isDdl"' not in m]
    if not rows:
        pytest.skip("the corpus has no ckafka-json DML")
    result = run(sink, rows, catalog)
    assert not result.dead_letters
    assert result.handled == len(rows)


def run_corpus(corpus: Path, fmt: str, run_stream: Callable[[list[bytes | None]], object]) -> None:
    """``run_stream`` over the corpus's ``fmt`` messages as one stream, then file by file."""
    files = corpus_files(corpus, fmt)
    if not files:
        pytest.skip(f"the corpus has no {fmt} files")
    run_stream([m for messages in corpus_messages(files) for m in messages])
    for messages in corpus_messages(files):
        run_stream(list(messages))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), sink=st.sampled_from(SINKS))
def test_random_streams_with_every_mysql_type(data: st.DataObject, sink: str) -> None:
    """Python-encoded ckafka-json of hypothesis change streams (every MySQL type, NULLs,
    unicode, wide decimals, zero dates, max unsigned bigint, bytes), typed by a schema file."""
    schema = data.draw(table_schemas())
    events = data.draw(change_streams(schema=schema, max_events=6, database="inventory", table="t"))
    catalog = SchemaCatalog()
    catalog.put("inventory", "t", schema)
    enc = get_codec(FMT, SOURCE, catalog=catalog)
    values: list[bytes | None] = []
    for e in events:
        e.ts_ms -= e.ts_ms % 1000  # TIME has whole seconds
        values += [r.value for r in enc.encode(e)]
    run(sink, values, catalog)


WIDE = (
    "CREATE TABLE `wide` (`id` bigint unsigned NOT NULL, `d` decimal(10,2), `f` double, `s` varchar(20), "
    "`dt` datetime(3), `ts` timestamp(6), `dd` date, `t` time, `j` json, `e` enum('a','b'), `st` set('x','y'), "
    "`b` varbinary(8), `bit` bit(1), `y` year, PRIMARY KEY (`id`))"
)
WIDE_ROWS: list[dict[str, str | None]] = [
    {"id": "18446744073709551615", "d": "-12.50", "f": "1.5", "s": "数据 🎉", "dt": "2024-02-29 23:59:59.123",
     "ts": "2021-03-14 03:30:00.000001", "dd": "2024-01-01", "t": "-838:59:59", "j": '{"a": [1, 2]}', "e": "b",
     "st": "x,y", "b": "ab", "bit": "1", "y": "2024"},
    {"id": "1", "d": None, "f": None, "s": None, "dt": None, "ts": None, "dd": None, "t": None, "j": None,
     "e": None, "st": None, "b": None, "bit": None, "y": None},
]  # fmt: skip


def wide(typ: str, new: dict[str, str | None] | None = None, old: dict[str, str | None] | None = None) -> bytes:
    return orjson.dumps(dml(typ, new=new, old=old, TABLE="wide", GLOBAL_ID="uuid:7", EVENT_SERVER_ID=3))


@pytest.mark.parametrize("sink", SINKS)
def test_regular_rows_of_every_common_type_are_converted_natively(sink: str) -> None:
    first, nulls = WIDE_ROWS
    values = [
        orjson.dumps(ddl(WIDE, "wide", "CREATE")),
        wide("I", new=first),
        wide("I", new=nulls),
        wide("U", new={**first, "s": "changed", "d": "1.00"}, old=first),
        wide("D", old=nulls),
    ]
    result = run(sink, values)
    assert not result.dead_letters
    # to Canal, labelled SETs (Canal writes bitmasks) and TIMESTAMPs between zones are Python's
    assert result.handled == (4 if sink == "debezium-json" else 2)


@pytest.mark.parametrize("sink", SINKS)
def test_rows_in_another_order_or_with_columns_the_catalog_lacks(sink: str) -> None:
    """Python writes the row's order, and so do both writers (the table compiled from a probe
    in the catalog's order, values looked up by name); columns the catalog lacks are longtext."""
    reordered = {"note": "n", "id": "4", "score": "9"}
    values = [
        orjson.dumps(ddl(CREATE, "scores", "CREATE")),
        orjson.dumps(dml("I", new=reordered, TABLE="scores")),
        orjson.dumps(dml("U", new={**reordered, "note": "m"}, old=reordered, TABLE="scores")),
        orjson.dumps(dml("I", new={**row(5), "unknown": "x"}, TABLE="scores")),
        orjson.dumps(dml("I", new={"id": "6", "score": "1"}, TABLE="scores")),  # a partial row
        orjson.dumps(dml("U", new=row(6), old={"id": "6"}, TABLE="scores")),  # images naming other columns
    ]
    result = run(sink, values)
    assert not result.dead_letters
    assert result.handled == 4  # all but the update whose images name other columns (Python's)


@pytest.mark.parametrize("zone", ["UTC", "Asia/Shanghai", "America/New_York", "Europe/Dublin"])
@pytest.mark.parametrize("sink", SINKS)
def test_times_in_every_zone_and_edge(sink: str, zone: str) -> None:
    """``TIME`` in ``source_timezone``: wall clocks a zone skips or repeats, far years and
    impossible dates agree with Python (or are its)."""
    times = [
        "20210314023000", "20211107013000", "20240229120000", "00010101000000", "99991231235959",
        "19000101000000", "20380119031408", "20230230000000", "00000101000000", "２０２１０３１４０２３０００",
    ]  # fmt: skip
    values = [orjson.dumps(ddl(CREATE, "scores", "CREATE"))]
    values += [orjson.dumps(dml("I", new=row(i), TABLE="scores", TIME=t)) for i, t in enumerate(times)]
    result = run_chains(FMT, sink, values, source={"source_timezone": zone})
    assert result.handled >= 1  # 2024-02-29 everywhere; far years, skipped and repeated wall clocks are Python's


@pytest.mark.parametrize("sink", SINKS)
def test_the_worker_path_leaves_a_closed_batch_to_python_and_follows_the_catalog(sink: str) -> None:
    """``NativePlan.convert_values`` (the worker's): from a DDL message on every record is
    Python's; the next batch is typed by the catalog Python changed meanwhile."""
    fast = Chain(get_codec(FMT, SOURCE), get_codec(sink, {}), [], "all")
    slow = Chain(get_codec(FMT, SOURCE), get_codec(sink, {}), [], "all")
    slow.native = None
    assert fast.native is not None
    alter = orjson.dumps(ddl("ALTER TABLE `scores` MODIFY `score` varchar(10)", "scores", "ALTER"))
    batches = [[orjson.dumps(ddl(CREATE, "scores", "CREATE")), insert(1)], [insert(2), alter, insert(3)], [insert(4)]]
    counts_seen = []
    for batch in batches:
        start = now_ms()
        counts, values, keys, _ = fast.native.convert_values(batch)
        counts_seen.append(counts)
        native_out: list[tuple[bytes | None, bytes | None]] = []
        at = 0
        for record, n in zip(records_of(batch), counts, strict=True):
            if n < 0:  # the worker's Python path for this record
                by_python = ChainResult()
                fast._one(record, by_python)
                native_out += [(r.value, r.key) for r in by_python.outputs]
            else:
                native_out += list(zip(values[at : at + n], keys[at : at + n], strict=True))
                at += n
        python = slow.process_batch(records_of(batch))
        end = now_ms()
        as_compared = Compared([Record(value=v, key=k) for v, k in native_out])
        assert _timed_outputs(as_compared, start, end) == _timed_outputs(
            Compared([Record(value=r.value, key=r.key) for r in python.outputs]), start, end
        )
    assert counts_seen == [[-1, -1], [1, -1, -1], [1]]


#: Example chains' transforms the plans run (to Canal only the row-keeping ones).
TRANSFORMS: dict[str, list[list[dict[str, Any]]]] = {
    "canal-json": [
        [{"type": "filter", "tables": [r"inventory\.scores"], "exclude_ops": ["delete"]}],
        [
            {"type": "route", "topic": "cdc.{database}.{table}"},
            {"type": "insert_header", "header": "table", "value": "{database}.{table}", "replace": True},
        ],
    ],
    "debezium-json": [
        [{"type": "unwrap", "delete_handling": "rewrite-with-tombstone", "add_fields": ["op", "source_ts_ms"]}],
        [
            {"type": "replace_field", "renames": {"score": "points"}},
            {"type": "mask_field", "fields": ["note"], "mode": "hash", "salt": "s"},
            {"type": "insert_field", "static": {"_region": "east"}, "metadata": {"_es": "source_ts_ms"}},
        ],
        [{"type": "value_to_key", "fields": ["score"]}],
    ],
}


@pytest.mark.parametrize(
    ("sink", "transforms"), [(sink, t) for sink, chains in TRANSFORMS.items() for t in chains], ids=str
)
def test_example_chains_with_transforms(sink: str, transforms: list[dict[str, Any]]) -> None:
    values = [
        orjson.dumps(ddl(CREATE, "scores", "CREATE")),
        insert(1),
        insert(2, score=None, note="数据"),
        orjson.dumps(dml("U", new=row(2, score="3"), old=row(2, score=None), TABLE="scores")),
        orjson.dumps(dml("D", old=row(1), TABLE="scores", GLOBAL_ID="g:1", EVENT_SERVER_ID=9)),
        orjson.dumps(dml("I", new={"note": "r", "score": "5", "id": "7"}, TABLE="scores")),  # another order
        orjson.dumps(
            dml(
                "U",
                new={"score": "6", "note": "r", "id": "7"},
                old={"score": "5", "note": "r", "id": "7"},
                TABLE="scores",
            )
        ),
    ]
    result = run_chains(FMT, sink, values, source=SOURCE, transforms=transforms)
    assert not result.dead_letters
    assert result.handled == 6
