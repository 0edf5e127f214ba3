"""The native core with transforms in the chain, against the Python path: byte for byte.

Chains of the transforms the planner lets the native plan do (filter by
database/table/op, route templates, drop_tombstones, replace_field, mask_field
(every mode), insert_field static and per-row metadata, value_to_key,
merge_shards, insert_header, drop_headers, table predicates) run the same
records natively and on the Python path: outputs (value, key, topic, headers,
order), dead letters and the transforms' missing-column counts must be equal.
Inputs: hypothesis change streams, the edge values of the fast paths,
malformed messages, a column a transform names missing from a table. Each
chain also checks that the plan handles its regular rows (a plan that handled
nothing would pass trivially), and chains with anything else get no plan.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.config import build_transforms
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import ChangeEvent, Column, Record, TableSchema
from tests.strategies import change_streams, table_schemas
from tests.test_native import (
    BASE,
    GOOD,
    MALFORMED,
    MUTATIONS,
    NATIVE_SUITE,
    _message,
    canal_stream,
    corpus_files,
    corpus_messages,
    dead_letters,
    edge_messages,
    outputs,
    records_of,
)

pytestmark = NATIVE_SUITE


#: The bench's five-transform chain (bench/chain.py), with per-row metadata the plan writes.
FIVE: list[dict[str, Any]] = [
    {"type": "filter", "tables": [r"shop\.(t|orders)"], "exclude_ops": ["heartbeat"]},
    {"type": "replace_field", "exclude": ["dt0"]},
    {"type": "mask_field", "fields": ["v"], "mode": "hash", "salt": "bench-salt"},
    {"type": "route", "topic": "cdc.{database}.{table}"},
    {"type": "insert_field", "static": {"_source": "mysql-east"}, "metadata": {"_source_ts_ms": "source_ts_ms"}},
]

#: Chains over the fast paths' table (TYPES: id, i, v, d2, dt0, dt3, ...), by name.
CHAINS: dict[str, list[dict[str, Any]]] = {
    "five": FIVE,
    "filter-tables": [{"type": "filter", "tables": [r"shop\.t"], "exclude_ops": ["delete"]}],
    "filter-drops-all": [{"type": "filter", "databases": ["other"]}],
    "filter-action-drop": [{"type": "filter", "ops": ["update", "read"], "action": "drop"}],
    "route": [{"type": "route", "topic": "cdc.{database}.{table}.{op}"}],
    "route-regex": [{"type": "route", "topic": "{database}-{table}", "regex": r"(\w+)-t", "replacement": "$1.tt"}],
    "drop-tombstones": [{"type": "drop_tombstones"}],
    "replace-exclude": [{"type": "replace_field", "exclude": ["v", "dt0", "f"]}],
    "replace-include-rename": [
        {"type": "replace_field", "include": ["id", "i", "v", "d2", "ts3"], "renames": {"id": "key_id", "v": "name"}}
    ],
    "replace-drops-pk": [{"type": "replace_field", "exclude": ["id"]}],
    "mask-hash": [{"type": "mask_field", "fields": ["v"], "mode": "hash", "salt": "pepper"}],
    "mask-null": [{"type": "mask_field", "fields": ["d2", "dt3", "v"], "mode": "null"}],
    "mask-empty": [
        {
            "type": "mask_field",
            "fields": "id i ti y d2 dw db v e s b1 b8 dt3 ts3 da tm j".split(),
            "mode": "empty",
        },
        {"type": "mask_field", "fields": ["bl", "dt0", "ts0", "dt6", "f"]},
    ],
    "mask-replace": [
        {"type": "mask_field", "fields": ["v"], "mode": "replace", "replacement": "***"},
        {"type": "mask_field", "fields": ["i", "id"], "mode": "replace", "replacement": "42"},
        {"type": "mask_field", "fields": ["d2", "db"], "mode": "replace", "replacement": "-1.5"},
        {"type": "mask_field", "fields": ["dt3", "ts3"], "mode": "replace", "replacement": "2024-02-29 12:34:56.789"},
        {"type": "mask_field", "fields": ["e"], "mode": "replace", "replacement": "PAID"},
        {"type": "mask_field", "fields": ["j"], "mode": "replace", "replacement": '{"masked": true}'},
        {"type": "mask_field", "fields": ["bl"], "mode": "replace", "replacement": "é"},
    ],
    "mask-hash-key": [
        {"type": "value_to_key", "fields": ["v"]},
        {"type": "mask_field", "fields": ["v"], "mode": "hash", "salt": "s"},
    ],
    "insert-field": [
        {
            "type": "insert_field",
            "static": {"_s": "east", "_n": 5, "_f": 1.5, "_b": True, "_z": None, "_u": 'é\n"x'},
            "metadata": {
                "_es": "source_ts_ms",
                "_ts": "processing_ts_ms",
                "_row": "row_index",
                "_op": "op",
                "_tbl": "qualified_table",
            },
        }
    ],
    "value-to-key": [{"type": "value_to_key", "fields": ["i", "v"]}],
    "value-to-key-renamed": [
        {"type": "value_to_key", "fields": ["i"]},
        {"type": "replace_field", "renames": {"i": "ii"}, "exclude": ["dt0"]},
    ],
    "merge-shards": [{"type": "merge_shards", "pattern": r"(sh)op\.(t)", "database": "$1_all", "table": "$2_x"}],
    "headers": [
        {"type": "insert_header", "header": "src", "value": "east"},
        {"type": "insert_header", "header": "table", "value": "{database}.{table}", "replace": True},
        {"type": "drop_headers", "headers": ["h"]},
    ],
    "predicate": [
        {
            "type": "replace_field",
            "exclude": ["v"],
            "predicate": {"type": "table_matches", "pattern": r"shop\.t"},
        },
        {
            "type": "mask_field",
            "fields": ["v"],
            "mode": "hash",
            "salt": "x",
            "predicate": {"type": "table_matches", "pattern": r"other\.t"},
        },
    ],
    "mixed": [
        {"type": "merge_shards", "pattern": r"shop\.(t)", "table": "$1_all"},
        {"type": "mask_field", "fields": ["v"], "mode": "hash", "salt": "s"},
        {"type": "replace_field", "exclude": ["dt0", "f"], "renames": {"i": "qty"}},
        {"type": "insert_field", "static": {"_region": "eu"}, "metadata": {"_op": "op"}},
        {"type": "route", "topic": "x.{database}.{table}"},
        {"type": "insert_header", "header": "op", "value": "{op}"},
        {"type": "filter", "ops": ["insert", "update", "delete"]},
    ],
}

#: Regular messages a chain leaves to Python by design: "mixed" filters INIT rows out after
#: transforms that type rows (and could fail on one); "replace-drops-pk" pins a key whose
#: column is then dropped (its Connect schema would be inferred from values).
TO_PYTHON = {"mixed": 1, "replace-drops-pk": 6}

SINKS: list[dict[str, Any]] = [{}, {"schemas_enable": True}]


def chains(
    transforms: list[dict[str, Any]], sink: dict[str, Any], source: dict[str, Any] | None = None
) -> tuple[Chain, Chain]:
    """(native chain, Python chain) of canal-json -> ``transforms`` -> debezium-json."""

    def make() -> Chain:
        return Chain(
            get_codec("canal-json", source or {}), get_codec("debezium-json", sink), build_transforms(transforms), "all"
        )

    fast = make()
    assert fast.native is not None, f"no native plan for {transforms}"
    slow = make()
    slow.native = None
    return fast, slow


def assert_same(
    records: list[Record], transforms: list[dict[str, Any]], sink: dict[str, Any], source: dict[str, Any] | None = None
) -> int:
    """Both paths give the same records, dead letters and missing-column counts; returns
    how many records the plan handled itself."""
    fast, slow = chains(transforms, sink, source)
    native_result = fast.process_batch(records)
    python_result = slow.process_batch(records)
    assert outputs(native_result) == outputs(python_result)
    assert dead_letters(native_result) == dead_letters(python_result)
    assert [t.missing_counts for t in fast.transforms] == [t.missing_counts for t in slow.transforms]
    fast.native.plan.clear()
    counts = fast.native.plan.convert([r.value for r in records])[0]
    return sum(n >= 0 for n in counts)


SECOND = {**BASE, "id": "2", "v": "zweite Zeile é"}
REGULAR = [
    _message(k, [BASE, SECOND], old=[{"v": "x"}, {"i": None}] if k == "UPDATE" else None)
    for k in ("INSERT", "UPDATE", "DELETE", "INIT")
] + [_message("INSERT", [{**BASE, "v": None}]), _message("INSERT", [BASE], es=None, ts=None)]


@pytest.mark.parametrize("sink", SINKS, ids=["schemaless", "schemas"])
@pytest.mark.parametrize("name", sorted(CHAINS))
def test_regular_rows_are_handled_natively_and_identical(name: str, sink: dict[str, Any]) -> None:
    records = records_of(REGULAR)
    assert assert_same(records, CHAINS[name], sink) == len(records) - TO_PYTHON.get(name, 0)


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_edge_values(name: str) -> None:
    for sink in SINKS:
        assert_same(records_of(edge_messages()), CHAINS[name], sink, {"source_timezone": "Asia/Shanghai"})


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_malformed_and_unusual_messages(name: str) -> None:
    values = [v for bad in MALFORMED for v in (GOOD, bad)]
    handled = assert_same(records_of(values), CHAINS[name], {})
    assert handled >= (len(MALFORMED) if name not in TO_PYTHON else 1)


def test_other_tables_and_layouts_between_messages() -> None:
    other = {"id": "bigint", "name": "varchar(10)"}
    values = [
        GOOD,
        _message("INSERT", [{"id": "5", "name": "x"}], types=other, table="orders"),
        _message("INSERT", [{"id": "5", "name": "x"}], types=other, database="other"),
        GOOD,
        _message("DELETE", [{"id": "5", "name": "x"}], types=other, table="u"),
    ]
    for name, transforms in CHAINS.items():
        for sink in SINKS:
            assert_same(records_of(values), transforms, sink), name


#: A transform naming a column the table lacks: every on_missing rule gives Python's result
#: (warn counts, error dead letters); the plan leaves that table to Python.
@pytest.mark.parametrize("on_missing", ["warn", "ignore", "error"])
@pytest.mark.parametrize(
    "transform",
    [
        {"type": "replace_field", "exclude": ["nope"]},
        {"type": "mask_field", "fields": ["nope"], "mode": "hash", "salt": "s"},
        {"type": "replace_field", "renames": {"nope": "x"}},
    ],
)
def test_missing_columns_behave_as_in_python(transform: dict[str, Any], on_missing: str) -> None:
    other = {"id": "bigint", "nope": "varchar(10)"}
    values = [GOOD, _message("INSERT", [{"id": "5", "nope": "x"}], types=other), GOOD, *REGULAR]
    handled = assert_same(records_of(values), [{**transform, "on_missing": on_missing}], {})
    assert handled == 1  # the table that has the column


@pytest.mark.parametrize("sink", SINKS, ids=["schemaless", "schemas"])
def test_a_replacement_the_column_cannot_hold_is_pythons_dead_letter(sink: dict[str, Any]) -> None:
    """``replace`` with a text the column's type cannot read fails on every non-null value:
    the table is Python's, whose dead letters (and rows with the column null) stay its own."""
    bad = [{"type": "mask_field", "fields": ["i"], "mode": "replace", "replacement": "not a number"}]
    values = [GOOD, _message("INSERT", [{**BASE, "i": None}]), *REGULAR]
    fast, _ = chains(bad, sink)
    assert [d.stage for d in fast.process_batch(records_of(values)).dead_letters] == ["transform"] * (len(values) - 1)
    assert assert_same(records_of(values), bad, sink) == 0


def test_masked_constants_are_the_encoders_own_rendering() -> None:
    """Each ``empty`` constant is written as the Python encoder writes the typed value (the
    plan asks the encoder, it does not know the renderings): regular rows native, with the
    masked key."""
    values = [_message("INSERT", [BASE]), _message("DELETE", [SECOND])]
    for sink in SINKS:
        assert assert_same(records_of(values), CHAINS["mask-empty"], sink) == len(values)
    fast, _ = chains(CHAINS["mask-empty"], {})
    assert outputs(fast.process_batch(records_of(values[:1])))[0][1] == b'{"id":0}'


def test_value_to_key_on_a_row_without_the_column_is_pythons_dead_letter() -> None:
    row = {k: v for k, v in BASE.items() if k != "v"}
    values = [GOOD, _message("INSERT", [row]), GOOD]
    assert assert_same(records_of(values), CHAINS["value-to-key"], {}) == 2


def test_a_typing_transform_sees_values_of_columns_dropped_later() -> None:
    """mask_field types the whole row: a value Python cannot read in a column replace_field
    drops afterwards is still Python's dead letter, natively too."""
    chain = [
        {"type": "mask_field", "fields": ["v"], "mode": "hash", "salt": "s"},
        {"type": "replace_field", "exclude": ["i"]},
        {"type": "filter", "ops": ["insert"]},
    ]
    bad = {**BASE, "i": "x1"}
    values = [GOOD, _message("INSERT", [bad]), _message("DELETE", [bad]), GOOD]
    fast, _ = chains(chain, {})
    result = fast.process_batch(records_of(values))
    assert [d.stage for d in result.dead_letters] == ["transform", "transform"]
    assert assert_same(records_of(values), chain, {}) == 2


@st.composite
def named_streams(draw: st.DrawFn) -> list[ChangeEvent]:
    """Change streams on tables with ``name`` and ``email`` columns besides random ones."""
    extra = draw(table_schemas(max_columns=5))
    columns = (
        Column("id", extra.columns[0].type, nullable=False, primary_key=True),
        Column("name", "varchar(64)", nullable=True),
        Column("email", "varchar(255)", nullable=True),
        *extra.columns[1:],
    )
    return draw(change_streams(schema=TableSchema(columns, ("id",)), max_events=8))


STREAM_CHAINS: list[list[dict[str, Any]]] = [
    [{"type": "filter", "tables": [r"shop\.t"], "exclude_ops": ["delete"]}, {"type": "route", "topic": "a.{table}"}],
    [{"type": "replace_field", "exclude": ["name"], "renames": {"email": "mail"}}],
    [{"type": "replace_field", "exclude": ["id"]}],
    [{"type": "mask_field", "fields": ["email", "name"], "mode": "hash", "salt": "pepper"}],
    [{"type": "mask_field", "fields": ["email"], "mode": "null"}, {"type": "value_to_key", "fields": ["name"]}],
    [{"type": "mask_field", "fields": ["id", "email"], "mode": "empty"}],
    [
        {"type": "mask_field", "fields": ["name"], "mode": "replace", "replacement": "***"},
        {"type": "mask_field", "fields": ["id"], "mode": "replace", "replacement": "7", "on_missing": "ignore"},
    ],
    [{"type": "insert_field", "static": {"_x": 1}, "metadata": {"_es": "source_ts_ms", "_row": "row_index"}}],
    [{"type": "merge_shards", "pattern": r"shop\.t", "table": "all"}, {"type": "drop_tombstones"}],
    [{"type": "insert_header", "header": "t", "value": "{table}"}, {"type": "drop_headers", "headers": ["h"]}],
]
#: ``unwrap`` chains (tests/test_native_unwrap.py has the rest of its suite).
UNWRAP_STREAM_CHAINS: list[list[dict[str, Any]]] = [
    [{"type": "unwrap"}],
    [
        {
            "type": "unwrap",
            "delete_handling": "rewrite-with-tombstone",
            "add_fields": ["op", "source_ts_ms", "row_index"],
        }
    ],
    [
        {"type": "mask_field", "fields": ["email"], "mode": "hash", "salt": "p"},
        {"type": "unwrap", "delete_handling": "drop"},
    ],
    [
        {"type": "unwrap", "delete_handling": "rewrite", "add_headers": ["table"]},
        {"type": "replace_field", "exclude": ["name"]},
    ],
    [{"type": "value_to_key", "fields": ["name"]}, {"type": "unwrap", "prefix": "_"}],
    [
        {"type": "mask_field", "fields": ["id", "name"], "mode": "empty"},
        {"type": "unwrap", "delete_handling": "rewrite"},
    ],
]
STREAM_CHAINS += UNWRAP_STREAM_CHAINS


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=named_streams(),
    transforms=st.sampled_from(STREAM_CHAINS),
    sink=st.sampled_from(SINKS),
    merge=st.lists(st.booleans(), min_size=1, max_size=4),
)
def test_random_streams_are_byte_identical(
    stream: list[ChangeEvent], transforms: list[dict[str, Any]], sink: dict[str, Any], merge: list[bool]
) -> None:
    values = canal_stream(stream, "UTC", merge)
    assert_same(records_of(values), transforms, sink)


@pytest.mark.parametrize(
    "transforms",
    [
        [{"type": "filter", "condition": "row.id > 1"}],
        [{"type": "route", "routes": [{"when": "row.id > 1", "topic": "x"}]}],
        [{"type": "route", "regex": "a", "replacement": "b"}],
        [{"type": "route", "topic": "{row.id}"}],
        [{"type": "insert_field", "metadata": {"_o": "offset"}}],
        [{"type": "header_from", "fields": ["v"], "headers": ["v"]}],
        [{"type": "merge_shards", "pattern": "x", "table": "y", "key_field": "k"}],
        [{"type": "replace_field", "exclude": ["v"], "predicate": {"type": "has_header", "name": "h"}}],
        [{"type": "drop_tombstones"}, {"type": "timezone_convert", "to": "UTC"}],
    ],
    ids=lambda t: t[-1]["type"],
)
def test_chains_with_other_steps_are_pythons(transforms: list[dict[str, Any]]) -> None:
    chain = Chain(get_codec("canal-json"), get_codec("debezium-json"), build_transforms(transforms), "all")
    assert chain.native is None


def test_five_transform_chain_is_native() -> None:
    from bench.chain import CHAIN

    chain = Chain(get_codec("canal-json"), get_codec("debezium-json"), build_transforms(CHAIN), "all")
    assert chain.native is not None


def test_corpus_canal_files_through_the_chains(corpus: Path) -> None:
    values = [v for messages in corpus_messages(corpus_files(corpus, "canal-json")) for v in messages]
    assert values
    for name in ("five", "mixed", "headers", "insert-field"):
        for sink in SINKS:
            assert_same(records_of(values), CHAINS[name], sink, {"source_timezone": "Asia/Shanghai"})


@settings(max_examples=150, deadline=None)
@given(
    **MUTATIONS,
    name=st.sampled_from(sorted(CHAINS)),
)
def test_mutated_messages(at: int, insert: bytes, cut: int, name: str) -> None:
    """Bytes flipped anywhere in a good message, through every chain: always Python's answer."""
    assert_same(records_of([GOOD[:at] + insert + GOOD[at + cut :], GOOD]), CHAINS[name], {})
