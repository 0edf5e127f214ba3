"""tdsql-binlog-json through a chain: the catalog-following native plans against the Python path.

Rows are positional arrays of SQL literals: names and types both come from the
schema catalog (a schema file, or QUERY events' DDL in the stream). The plans to
canal-json and debezium-json (``native/src/tdsql_in.rs``, ``transforms/native_catalog.py``)
read the literals they are certain of natively and leave DDL to Python, closing the
batch there. The tests pin what the plans keep (issue #13): rows after an ALTER in
the middle of a batch are named and typed by the new schema, a batch gives what one
record at a time gives, ``unknown_table`` decides rows of tables the catalog lacks,
malformed messages are dead letters that lose nothing, and every literal form reads
as Python reads it. Each test runs the chain as built (native) against its Python
twin, byte for byte, and most count the records the plan converted itself.
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
from cdc_smt.transforms.model import Record
from cdc_smt.transforms.native import TDSQL_TO_CANAL, TDSQL_TO_DEBEZIUM
from cdc_smt.transforms.sqltext import quote_string
from tests.messages import tdsql_message
from tests.strategies import change_streams, table_schemas
from tests.test_native import NATIVE_SUITE, corpus_files, corpus_messages, dead_letters, records_of
from tests.test_native_ckafka import Compared, assert_batch_is_one_at_a_time, plan_name, run_chains, run_corpus

pytestmark = NATIVE_SUITE

FMT = "tdsql-binlog-json"
SINKS = ["canal-json", "debezium-json"]
CREATE = "create table items (id int primary key, name varchar(20), price decimal(10,2))"


def msg(kind: str, code: int, **fields: Any) -> bytes:
    return orjson.dumps(tdsql_message(kind, code, **fields))


def insert(*literals: str, code: int = 23, **fields: Any) -> bytes:
    return msg("insert", code, where=[], field=list(literals), **fields)


def run(sink: str, values: list[bytes | None], catalog: SchemaCatalog | None = None, **source: Any) -> Compared:
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


@pytest.mark.parametrize(("sink", "plan"), [("canal-json", TDSQL_TO_CANAL), ("debezium-json", TDSQL_TO_DEBEZIUM)])
def test_plan_for_gives_tdsql_chains_their_catalog_plan(sink: str, plan: str) -> None:
    """Issue #13: a tdsql-binlog-json chain with its decoder's own catalog has a plan; with a
    catalog the decoder does not use, or to canal-json under ``batch: transaction``, none."""
    chain = Chain(get_codec(FMT, {}), get_codec(sink, {}), [], "all")
    assert chain.catalog is not None
    assert plan_name(chain) == plan
    other = Chain(get_codec(FMT, {}), get_codec(sink, {}), [], "all", catalog=SchemaCatalog())
    assert other.native is None
    if sink == "canal-json":
        grouped = Chain(get_codec(FMT, {}), get_codec(sink, {"batch": "transaction"}), [], "all")
        assert grouped.native is None


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
    assert result.handled == 3  # the rows; the DDL is Python's
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
    assert failing.handled == positional.handled == 0  # no schema: Python's


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
    assert result.handled == 1 + len(MALFORMED)  # the good rows (the plan resumes after the unreadable object)


@pytest.mark.parametrize("sink", SINKS)
def test_compressed_mariadb_events(sink: str) -> None:
    values = [msg("query", 165, sql=CREATE)] + [insert("1", "'a'", "1.00", code=c) for c in (166, 169)]
    result = run(sink, values)
    assert len(dml_rows(result, sink)) == 2
    assert result.handled == 2


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


WIDE = (
    "create table wide (id bigint unsigned primary key, d decimal(10,2), f double, s varchar(20), dt datetime(3), "
    "ts timestamp(6), dd date, t time, j json, e enum('a','b'), st set('x','y'), b varbinary(8), bt bit(1), y year)"
)
WIDE_ROW = [
    "18446744073709551615", "-12.50", "1.5", "'数据 🎉'", "'2024-02-29 23:59:59.123'", "'2021-03-14 03:30:00.000001'",
    "'2024-01-01'", "'-838:59:59'", '\'{"a": [1, 2]}\'', "'b'", "'x,y'", "X'6162'", "b'1'", "2024",
]  # fmt: skip
NULL_ROW = ["1"] + ["NULL"] * 13


def wide(kind: str, code: int, where: list[str], field: list[str], **fields: Any) -> bytes:
    return msg(kind, code, table="wide", where=where, field=field, **fields)


def wide_stream() -> list[bytes | None]:
    """The wide table's DDL, then an insert of every common type, one of NULLs, an update, a delete
    (a MySQL GTID, none, MariaDB's)."""
    changed = ["18446744073709551615", "1.00"] + WIDE_ROW[2:3] + ["'changed'"] + WIDE_ROW[4:]
    return [
        msg("query", 2, sql=WIDE, table="wide"),
        wide("insert", 30, [], WIDE_ROW),
        wide("insert", 23, [], NULL_ROW, gtid="3E11FA47-71CA-11E1-9E33-C80AA9429562:23"),
        wide("update", 31, WIDE_ROW, changed, gtid=None),
        wide("delete", 32, NULL_ROW, []),
    ]


@pytest.mark.parametrize("sink", SINKS)
def test_regular_rows_of_every_common_type_are_converted_natively(sink: str) -> None:
    result = run(sink, wide_stream())
    assert not result.dead_letters
    # to Canal, labelled SETs (Canal writes bitmasks) are Python's: the rows holding one
    assert result.handled == (4 if sink == "debezium-json" else 2)


@pytest.mark.parametrize("sink", SINKS)
def test_gtid_and_xid_events_leave_the_batch_open(sink: str) -> None:
    """Transaction markers are Python's without closing the batch (they never change the
    catalog); a QUERY does close it, and the plan resumes after it."""
    values = [
        msg("query", 2, sql=CREATE),
        msg("gtid", 33),
        insert("1", "'a'", "1.00"),
        msg("xid", 16, xid="7"),
        msg("gtid", 162, gtid="0-1-9"),
        msg("query", 2, sql="BEGIN"),
        insert("2", "'b'", "2.00", gtid="0-1-9"),
        msg("query", 2, sql="COMMIT"),
        insert("3", "'c'", "3.00", gtid="uuid:1"),
    ]
    result = run(sink, values)
    assert not result.dead_letters
    assert result.handled == 3


#: Literal forms of one value, and ones the reader leaves to Python (or Python rejects).
INT_FORMS = [
    "7",
    "-0",
    "007",
    "+7",
    " 7 ",
    "7.0",
    "7e0",
    "b'111'",
    "0b111",
    "0x07",
    "X'07'",
    "'7'",
    "TRUE",
    "NULL",
    "null",
]
DECIMAL_FORMS = ["1.50", "-0.00", "1", "1.", ".5", "1e1", "'1.5'", "0x01", "b'1'", "NULL", "9" * 9 + ".99"]
TEXT_FORMS = [
    "'it''s'", '"it\\"s"', "'a\\nb\\tc\\\\d\\%\\_\\Z\\0\\q'", "N'n'", "_utf8mb4'数据 🎉'", "_latin1 'x'", "_binary'x'",
    "'unterminated", "'a' 'b'", "0x616263", "X'616263'", "42", "'é\\é'", "'\\", "_ 'x'", "_utf8mb4 0x41",
]  # fmt: skip
BYTES_FORMS = ["X'00FF'", "0xABC", "x''", "'bytes é'", "_binary'b'", "X'0'", "b'1'", "7", "NULL", "0x"]
FORMS_TABLE = (
    "create table forms (id int primary key, n int, d decimal(12,2), s varchar(40), b varbinary(8), "
    "e enum('a','b'), dt datetime)"
)


@pytest.mark.parametrize("sink", SINKS)
def test_every_literal_form_reads_as_python_reads_it(sink: str) -> None:
    rows = (
        [[f"{i}", form, "1.00", "'s'", "NULL", "'a'", "NULL"] for i, form in enumerate(INT_FORMS)]
        + [["100", "1", form, "'s'", "NULL", "'a'", "NULL"] for form in DECIMAL_FORMS]
        + [["200", "1", "1.00", form, "NULL", "'b'", "'2024-01-01 00:00:00'"] for form in TEXT_FORMS]
        + [["300", "1", "1.00", "'s'", form, "NULL", "NULL"] for form in BYTES_FORMS]
        + [["400", "1", "1.00", "'s'", "NULL", e, dt] for e in ("1", "0", "'c'") for dt in ("20240101", "0x41")]
    )
    values = [msg("query", 2, sql=FORMS_TABLE, table="forms")]
    values += [msg("insert", 23, table="forms", where=[], field=row) for row in rows]
    result = run(sink, values)
    # each literal column in every form: the ones the reader is certain of natively (more than half)
    assert result.handled * 2 > len(rows) - len(result.dead_letters)


@pytest.mark.parametrize("sink", SINKS)
def test_updates_whose_literals_differ_where_their_values_do_not(sink: str) -> None:
    """Python's changed columns compare the raw literals (``'a'`` and ``"a"`` differ): such
    updates are Python's, the others native."""
    values = [
        msg("query", 2, sql=CREATE),
        msg("update", 24, where=["1", "'a'", "1.00"], field=["1", '"a"', "1.00"]),
        msg("update", 24, where=["1", "'a'", "1.00"], field=["1", "'a'", "1.0"]),
        msg("update", 24, where=["1", "NULL", "1.00"], field=["1", None, "1.00"]),
        msg("update", 24, where=["1", "'a'", "1.00"], field=["1", "'b'", "1.00"]),
        msg("update", 24, where=["1", "'a'", "1.00"], field=["2", "'a'", "1.00"]),
    ]
    result = run(sink, values)
    assert not result.dead_letters
    assert result.handled == 3  # '1.00' -> '1.0' (texts differ too), 'a' -> 'b', the key


#: Text rich in what literals escape or quote (quotes, backslashes, escape letters).
literal_text = st.text(
    st.sampled_from(list("''\"\\ nZ0%_bé数"))
    | st.sampled_from("'\"\\")
    | st.characters(codec="utf-8", exclude_categories=("Cs",)),
    max_size=8,
)


def _string_literal(text: str, style: int) -> str:
    """``text`` as a MySQL string literal in one of several spellings."""
    if style == 0:
        return quote_string(text)
    if style == 1:
        return "'" + text.replace("'", "''") + "'"
    if style == 2:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return ("_utf8mb4", "N", "_binary ", " ")[style - 3] + quote_string(text)


any_literal = st.one_of(
    st.integers(-(2**64), 2**65).map(str),
    st.decimals(allow_nan=False, allow_infinity=False, places=3).map(str),
    st.builds(_string_literal, literal_text, st.integers(0, 6)),
    st.binary(max_size=6)
    .map(lambda b: st.sampled_from([f"X'{b.hex()}'", f"0x{b.hex()}", f"b'{b.hex()}'"]))
    .flatmap(lambda s: s),
    st.sampled_from(["NULL", "null", "TRUE", "1e3", "'", "_binary 0x41", "b'101'", "0b1"]),
    literal_text,
    st.none(),
)


#: A row of the forms table whose every literal suits its column (the reader's own, mostly).
suited_row = st.tuples(
    st.integers(-(2**31), 2**31 - 1).map(str),
    st.one_of(st.integers(-(2**31), 2**31 - 1).map(str), st.integers(0, 255).map(lambda n: f"b'{n:b}'")),
    st.decimals(-(10**9), 10**9, allow_nan=False, places=2).map(str),
    st.builds(_string_literal, literal_text, st.sampled_from([0, 1, 2, 3, 4, 6])),
    st.binary(max_size=6).map(lambda b: f"X'{b.hex()}'") | st.builds(_string_literal, literal_text, st.integers(0, 6)),
    st.sampled_from(["'a'", '"b"', "_utf8mb4'a'", "NULL"]),
    st.sampled_from(["'2024-02-29 12:00:00'", "NULL", None]),
).map(list)


#: A row of any literals (mostly Python's, many malformed).
random_row = st.lists(any_literal, min_size=7, max_size=7)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    rows=st.lists(st.one_of(suited_row, suited_row, suited_row, random_row), min_size=1, max_size=6),
    sink=st.sampled_from(SINKS),
)
def test_random_literals_in_every_column(rows: list[list[str | None]], sink: str) -> None:
    """Hypothesis literals (numbers of any width, strings in every quoting, hexadecimal and
    bit values, words, junk, JSON null) in columns of every literal class, inserts and updates."""
    values = [msg("query", 2, sql=FORMS_TABLE, table="forms")]
    for i, row in enumerate(rows):
        values.append(msg("insert", 23, table="forms", where=[], field=row))
        if i:
            values.append(msg("update", 31, table="forms", where=rows[i - 1], field=row))
    run(sink, values)


@pytest.mark.parametrize("sink", SINKS)
def test_the_worker_path_leaves_a_closed_batch_to_python(sink: str) -> None:
    """``NativePlan.convert_values`` (the worker's): from a QUERY on every record of the batch is
    Python's; the next batch is typed by the catalog Python changed meanwhile."""
    fast = Chain(get_codec(FMT, {}), get_codec(sink, {}), [], "all")
    assert fast.native is not None
    alter = msg("query", 2, sql="alter table items modify price varchar(10)")
    batches = [
        [msg("query", 2, sql=CREATE), insert("1", "'a'", "1.00")],
        [insert("2", "'b'", "2.00"), alter, insert("3", "'c'", "'x'")],
        [insert("4", "'d'", "'y'")],
    ]
    counts_seen = []
    for batch in batches:
        counts, _, _, _ = fast.native.convert_values(batch)
        counts_seen.append(counts)
        for value, n in zip(batch, counts, strict=True):
            if n < 0:
                fast.process_batch([Record(value=value)])
    assert counts_seen == [[-1, -1], [1, -1, -1], [1]]


DEBEZIUM_OPTIONS: list[dict[str, Any]] = [
    {"schemas_enable": True},
    {"schemas_enable": True, "decimal_handling_mode": "string", "time_precision_mode": "connect"},
    {"decimal_handling_mode": "double", "binary_handling_mode": "hex", "tombstones_on_delete": False},
    {"bigint_unsigned_handling_mode": "precise", "topic_prefix": "tdsql"},
]


@pytest.mark.parametrize("options", DEBEZIUM_OPTIONS, ids=str)
def test_debezium_options_and_the_schema_part(options: dict[str, Any]) -> None:
    """To Debezium with its schema part and the other modes: the plan writes what Python
    writes (columns a mode leaves to Python go there), byte for byte."""

    def chain() -> Chain:
        return Chain(get_codec(FMT, {}), get_codec("debezium-json", options), [], "all")

    values = [
        *wide_stream(),
        msg("query", 2, sql=CREATE),
        insert("1", "'a'", "9.50"),
        msg("delete", 25, where=["1", "'a'", "9.50"], field=[]),
    ]
    fast, slow = chain(), chain()
    assert plan_name(fast) == TDSQL_TO_DEBEZIUM
    slow.native = None
    python_calls: list[Record] = []
    one = fast._one
    fast._one = lambda record, result: (python_calls.append(record), one(record, result))  # type: ignore[method-assign]
    records = records_of(values)
    native_result, python_result = fast.process_batch(records), slow.process_batch(records)
    assert [(r.value, r.key, r.topic, r.headers) for r in native_result.outputs] == [
        (r.value, r.key, r.topic, r.headers) for r in python_result.outputs
    ]
    assert dead_letters(native_result) == dead_letters(python_result) == []
    # every row; under other decimal modes the wide table's (its DECIMAL column's) are Python's
    assert len(records) - len(python_calls) == (2 if "decimal_handling_mode" in options else 6)


def _raw_insert(head: str) -> bytes:
    """An items insert whose leading fields are ``head`` (raw JSON text: repeated keys, odd numbers)."""
    return (
        '{"logtype":"mysqlbinlog","eventtype":23,' + head + ',"db":"shop","table":"items","begintime":1511350073,'
        '"where":[],"field":["1","\'a\'","1.00"]}'
    ).encode()


UNUSUAL: list[bytes | None] = [
    *(insert("1", "'a'", "1.00", gtid=g) for g in ("0-1-2", "0-1-2\n", "٠-1-2", "0-1", "", "0-1-2-3", "a-b-c", None)),
    *(insert("1", "'a'", "1.00", begintime=t) for t in (0, -5, None, 1.5, True, "1511350073")),
    *(insert("1", "'a'", "1.00", eventtype=c) for c in (23.0, "23", True, 30, 169, 24)),
    msg("insert", 23, where=None, field=["1", "'a'", "1.00"]),
    insert("1", "'a'", "1.00", extra={"x": [1, 2.5]}, localport="3306"),
    insert("1", "'a'", "1.00", logtype=None),
    b'{"logtype":"mysqlbinlog","eventtype":23,"eventtypestr":"insert","db":"shop","table":"items",'
    b'"begintime":1511350073,"where":[],"field":["1","\\u0027a\\u0027","1.00"]}',
    _raw_insert('"eventtypestr":"query","eventtypestr":"insert"'),
    _raw_insert('"eventtypestr":"insert","begintime":99999999999999999999999'),
    _raw_insert(
        '"eventtypestr":"insert","eventtypestr":"query","eventtype":2,"sql":"alter table items add column q int"'
    ),
    insert("1", "'a'", "1.00", "4"),  # the ALTER above made the table four columns wide
]


@pytest.mark.parametrize("sink", SINKS)
def test_unusual_messages_among_good_ones(sink: str) -> None:
    """GTIDs the MariaDB pattern judges (other scripts' digits, a final newline), odd
    ``begintime``/``eventtype`` values, repeated keys (the last one counts: a QUERY
    hidden behind an insert closes the batch), escaped literals, unknown fields."""
    values = [msg("query", 2, sql=CREATE), *UNUSUAL]
    result = run(sink, values)
    # natively: six GTIDs (not the newline's or other digits'), begintime 0 and -5, eventtype 30 and
    # 169, null where, unknown fields, escaped JSON, and the insert after the hidden QUERY
    assert result.handled == 14


#: Transforms the plans run (to Canal only the row-keeping ones), over the items table.
TRANSFORMS: dict[str, list[list[dict[str, Any]]]] = {
    "canal-json": [
        [{"type": "filter", "tables": [r"shop\.items"], "exclude_ops": ["delete"]}],
        [
            {"type": "route", "topic": "cdc.{database}.{table}"},
            {"type": "insert_header", "header": "table", "value": "{database}.{table}", "replace": True},
        ],
    ],
    "debezium-json": [
        [{"type": "unwrap", "delete_handling": "rewrite-with-tombstone", "add_fields": ["op", "source_ts_ms"]}],
        [
            {"type": "replace_field", "renames": {"price": "cost"}},
            {"type": "mask_field", "fields": ["name"], "mode": "hash", "salt": "s"},
            {"type": "insert_field", "static": {"_region": "east"}, "metadata": {"_es": "source_ts_ms"}},
        ],
        [{"type": "value_to_key", "fields": ["name"]}],
    ],
}


@pytest.mark.parametrize(
    ("sink", "transforms"), [(sink, t) for sink, chains in TRANSFORMS.items() for t in chains], ids=str
)
def test_chains_with_transforms(sink: str, transforms: list[dict[str, Any]]) -> None:
    values = [
        msg("query", 2, sql=CREATE),
        insert("1", "'a'", "1.00"),
        insert("2", "NULL", "NULL", gtid="0-1-2"),
        msg("update", 31, where=["2", "NULL", "NULL"], field=["2", "'数据'", "3.50"]),
        msg("delete", 32, where=["1", "'a'", "1.00"], field=[]),
    ]
    result = run_chains(FMT, sink, values, source={}, transforms=transforms)
    assert not result.dead_letters
    assert result.handled == 4


@pytest.mark.parametrize("sink", SINKS)
def test_corpus_transaction_with_its_ddl_and_the_documented_row(sink: str, corpus: Path) -> None:
    """The vendor document's GTID, QUERY (``create table test_table1``) and XID events, with the
    document's insert row (``"1"``, ``"'name1'"``) into the table the QUERY creates between
    them: the row natively, typed by the DDL the stream carried."""
    by_kind: dict[str, bytes] = {}
    for messages in corpus_messages(corpus_files(corpus, FMT)):
        for m in messages:
            by_kind.setdefault(orjson.loads(m)["eventtypestr"], m)
    if not {"gtid", "query", "xid"} <= by_kind.keys():
        pytest.skip("the corpus lacks the tdsql-binlog-json gtid, query and xid examples")
    query = orjson.loads(by_kind["query"])
    row = tdsql_message("insert", 23, db=query["db"], table="test_table1", where=[], field=["1", "'name1'"])
    values = [by_kind["gtid"], by_kind["query"], orjson.dumps(row), by_kind["xid"]]
    result = run(sink, values)
    assert not result.dead_letters
    assert result.handled == 1


#: DOUBLE literals in Java's plain range (1e-3 <= |v| < 1e7, and zero): the plan's own. The Canal
#: writer copies those that already are their double's shortest digits (plain, no trailing zero,
#: at most 15 significant digits) and converts the rest; around them, texts it must not copy.
PLAIN_DOUBLES = [
    "0.001", "-0.001", "0.5", "-0.5", "1.5", "1.50", "1.0", "1", "0.0", "-0.0", "9999999.5",
    "1234567.89012345", "1234567.890123456", "0.123456789012345", "0.1234567890123456",
    "0.12345678901234567", "0.30000000000000004", "0.0010", "100.25",
]  # fmt: skip
OTHER_DOUBLES = ["0.0009", "0.000999", "10000000.5", "123456789.5", "00.5", "-00.5", "1.", ".5", "'0.25'", "2.5e-3"]
DBL_TABLE = "create table dbl (id int primary key, v double)"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    texts=st.lists(
        st.one_of(
            st.sampled_from(PLAIN_DOUBLES + OTHER_DOUBLES),
            st.builds(
                lambda sign, whole, frac: f"{sign}{whole}.{frac}",
                st.sampled_from(["", "-"]),
                st.sampled_from(["0", "00"]) | st.integers(1, 10**9).map(str),
                st.text("0123456789", min_size=1, max_size=18),
            ),
            st.floats(allow_nan=False, allow_infinity=False).map(repr),
        ),
        min_size=1,
        max_size=8,
    ),
    sink=st.sampled_from(SINKS),
)
def test_double_literals_of_every_decimal_form(texts: list[str], sink: str) -> None:
    """DOUBLE literals of every decimal form (digits past what a double holds, leading and
    trailing zeros, both sides of Java's plain range): the writers give Python's bytes."""
    values = [msg("query", 2, sql=DBL_TABLE, table="dbl")]
    values += [insert(str(i), text, table="dbl") for i, text in enumerate(texts)]
    run(sink, values)


@pytest.mark.parametrize("sink", SINKS)
def test_plain_doubles_are_converted_natively(sink: str) -> None:
    """Every DOUBLE in Java's plain range is the plan's own (one that hands them to Python fails),
    and converted as Python converts it."""
    values = [msg("query", 2, sql=DBL_TABLE, table="dbl")]
    values += [insert(str(i), text, table="dbl") for i, text in enumerate(PLAIN_DOUBLES)]
    assert run(sink, values).handled == len(PLAIN_DOUBLES)
