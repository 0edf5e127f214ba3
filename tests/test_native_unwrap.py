"""``unwrap`` inside the native plans to debezium-json, against the Python path: byte for byte.

canal-json (and TiCDC's dialect) -> ``unwrap`` -> debezium-json is the usual chain into a
flat sink topic. Every option combination of ``unwrap`` (delete handling, source
tombstones, metadata columns and headers, prefix), with the transforms ``_Shape`` follows
before and after it, runs the same records natively and on the Python path: outputs
(values, keys, topics, headers, tombstones, order), dead letters and missing-column counts
equal. Inputs: the regular messages (each chain must handle them natively: a plan that
handled nothing would pass trivially), hypothesis streams, the fast paths' edge values,
malformed and mutated messages, the corpus and the examples' data. Options the plan
cannot follow (per-row source positions as headers) get no plan.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.config import build_transforms
from cdc_smt.transforms.formats import get_codec
from tests.test_native import (
    BASE,
    GOOD,
    MALFORMED,
    MUTATIONS,
    NATIVE_SUITE,
    ROOT,
    _message,
    assert_plan_agrees,
    corpus_files,
    corpus_messages,
    edge_messages,
    records_of,
)
from tests.test_native import SINKS as ALL_SINKS
from tests.test_native_transforms import REGULAR, SINKS, UNWRAP_STREAM_CHAINS, assert_same

pytestmark = NATIVE_SUITE

MODES = ["tombstone", "drop", "rewrite", "rewrite-with-tombstone"]
#: ``add_fields``: none, the lakehouse example's, every per-row and per-table field (aliases too).
FIELDS: list[list[str]] = [[], ["op", "table", "source_ts_ms"], ["database", "schema", "processing_ts_ms", "row_index"]]
HEADERS: list[list[str]] = [[], ["op", "table"]]


def unwrap(**options: Any) -> dict[str, Any]:
    return {"type": "unwrap", **options}


#: Every option combination of ``unwrap`` the plan follows.
COMBINATIONS = [
    unwrap(delete_handling=mode, drop_tombstones=drop, add_fields=fields, add_headers=headers, prefix=prefix)
    for mode, drop, fields, headers, prefix in itertools.product(MODES, [True, False], FIELDS, HEADERS, ["__", "m_"])
]


@pytest.mark.parametrize("sink", SINKS, ids=["schemaless", "schemas"])
@pytest.mark.parametrize("options", COMBINATIONS, ids=lambda o: "-".join(str(v) for v in list(o.values())[1:]))
def test_every_option_combination_is_native_and_identical(options: dict[str, Any], sink: dict[str, Any]) -> None:
    records = records_of(REGULAR)
    assert assert_same(records, [options], sink) == len(records)


#: ``unwrap`` with other transforms before and after it, and the messages each leaves to
#: Python by design: a row transform after a delete's tombstone was cut (the plan writes the
#: tombstone's key from the row), rows dropped after unwrap typed them (typing could fail).
CHAINS: dict[str, tuple[list[dict[str, Any]], int]] = {
    "lakehouse": (
        [
            {"type": "filter", "ops": ["row"]},
            unwrap(delete_handling="rewrite", add_fields=["op", "table", "source_ts_ms"]),
            {"type": "route", "topic": "lake.{database}.{table}"},
        ],
        0,
    ),
    "mask-before": (
        [
            {"type": "mask_field", "fields": ["v"], "mode": "hash", "salt": "s"},
            unwrap(),
            {"type": "route", "topic": "t"},
        ],
        0,
    ),
    "rename-pk-before": (
        [{"type": "replace_field", "renames": {"id": "key_id"}, "exclude": ["dt0"]}, unwrap(delete_handling="rewrite")],
        0,
    ),
    "value-to-key-before": ([{"type": "value_to_key", "fields": ["i", "v"]}, unwrap()], 0),
    "value-to-key-after": ([unwrap(), {"type": "value_to_key", "fields": ["v"]}], 1),
    "value-to-key-after-rewrite": ([unwrap(delete_handling="rewrite"), {"type": "value_to_key", "fields": ["v"]}], 0),
    "replace-after": (
        [unwrap(delete_handling="rewrite", add_fields=["op"]), {"type": "replace_field", "exclude": ["v", "__op"]}],
        0,
    ),
    "insert-field-around": (
        [
            {"type": "insert_field", "static": {"_region": "eu"}},
            unwrap(delete_handling="rewrite-with-tombstone", add_fields=["op"]),
            {"type": "insert_field", "metadata": {"_es": "source_ts_ms"}},
        ],
        1,
    ),
    "headers-and-tombstones-after": (
        [
            unwrap(delete_handling="rewrite-with-tombstone", add_headers=["op"]),
            {"type": "insert_header", "header": "t", "value": "{table}"},
            {"type": "drop_headers", "headers": ["h"]},
            {"type": "route", "topic": "flat.{op}"},
        ],
        0,
    ),
    "drop-tombstones-after": ([unwrap(), {"type": "drop_tombstones"}], 0),
    "filter-deletes-after": ([unwrap(delete_handling="rewrite"), {"type": "filter", "exclude_ops": ["delete"]}], 1),
    "merge-shards-before": (
        [{"type": "merge_shards", "pattern": r"(sh)op\.(t)", "table": "$2_x"}, unwrap(add_fields=["table"])],
        0,
    ),
    "predicate": (
        [unwrap(predicate={"type": "table_matches", "pattern": r"shop\.t"}, add_fields=["op"])],
        0,
    ),
    "predicate-other-table": ([unwrap(predicate={"type": "table_matches", "pattern": r"other\.t"})], 0),
}


@pytest.mark.parametrize("sink", SINKS, ids=["schemaless", "schemas"])
@pytest.mark.parametrize("name", sorted(CHAINS))
def test_chains_with_unwrap_are_native_and_identical(name: str, sink: dict[str, Any]) -> None:
    transforms, to_python = CHAINS[name]
    records = records_of(REGULAR)
    assert assert_same(records, transforms, sink) == len(records) - to_python


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_edge_values(name: str) -> None:
    for sink in SINKS:
        assert_same(records_of(edge_messages()), CHAINS[name][0], sink, {"source_timezone": "Asia/Shanghai"})


@pytest.mark.parametrize("options", COMBINATIONS[::5], ids=lambda o: str(list(o.values())[1:]))
def test_edge_values_every_mode(options: dict[str, Any]) -> None:
    assert_same(records_of(edge_messages(rows=2)), [options], {}, {"source_timezone": "Asia/Shanghai"})


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_malformed_and_unusual_messages(name: str) -> None:
    values = [v for bad in MALFORMED for v in (GOOD, bad)]
    assert assert_same(records_of(values), CHAINS[name][0], {}) >= len(MALFORMED)


def test_rows_lacking_or_reordering_columns() -> None:
    """The flat row's schema part names the row's own columns (the probe's has them all)."""
    types = {"id": "bigint", "v": "varchar(5)", "n": "int"}
    rows = [[{"id": "1"}], [{"n": "3", "id": "2", "v": "x"}], [{"id": "4", "v": None, "n": "5"}]]
    values = [_message(kind, row, types=types) for row in rows for kind in ("INSERT", "DELETE", "UPDATE")]
    for options in COMBINATIONS[::4]:
        for sink in SINKS:
            assert assert_same(records_of(values), [options], sink) > 0


def test_a_value_python_cannot_type_in_an_updates_old_is_its_dead_letter() -> None:
    """``add_fields`` types the whole event, the before-image too: an unreadable ``old``
    value is Python's dead letter, natively too; without typing, Python never reads it."""
    bad = _message("UPDATE", [BASE], old=[{"i": "x1"}])
    values = [GOOD, bad, GOOD]
    assert assert_same(records_of(values), [unwrap(add_fields=["op"])], {}) == 2
    assert assert_same(records_of(values), [unwrap()], {}) >= 2


#: A transform naming a column the table lacks, before unwrap: every on_missing rule gives
#: Python's result; an added column that collides with a row column leaves the table to Python.
@pytest.mark.parametrize("on_missing", ["warn", "ignore", "error"])
def test_missing_columns_behave_as_in_python(on_missing: str) -> None:
    other = {"id": "bigint", "nope": "varchar(10)"}
    values = [GOOD, _message("INSERT", [{"id": "5", "nope": "x"}], types=other), GOOD, *REGULAR]
    transforms = [{"type": "replace_field", "exclude": ["nope"], "on_missing": on_missing}, unwrap()]
    assert assert_same(records_of(values), transforms, {}) == 1


def test_a_metadata_column_named_as_a_row_column_is_pythons() -> None:
    types = {"id": "bigint", "__op": "varchar(10)"}
    values = [_message("INSERT", [{"id": "5", "__op": "x"}], types=types), GOOD]
    assert assert_same(records_of(values), [unwrap(add_fields=["op"])], {}) == 1


def test_a_second_unwrap_is_pythons() -> None:
    records = records_of(REGULAR)
    assert assert_same(records, [unwrap(delete_handling="rewrite"), unwrap()], {}) == 0


@pytest.mark.parametrize(
    "options",
    [
        {"add_fields": ["position"]},
        {"add_fields": ["gtid"]},
        {"add_headers": ["source_ts_ms"]},
        {"add_headers": ["row_index"]},
    ],
    ids=str,
)
def test_fields_the_plan_does_not_follow_leave_the_chain_to_python(options: dict[str, Any]) -> None:
    chain = Chain(get_codec("canal-json"), get_codec("debezium-json"), build_transforms([unwrap(**options)]), "all")
    assert chain.native is None


#: The hypothesis streams of tests/test_native_transforms.py run unwrap chains too
#: (``UNWRAP_STREAM_CHAINS`` there).


@settings(max_examples=100, deadline=None)
@given(**MUTATIONS, options=st.sampled_from(COMBINATIONS))
def test_mutated_messages(at: int, insert: bytes, cut: int, options: dict[str, Any]) -> None:
    """Bytes flipped anywhere in a good message, through every option combination: always Python's answer."""
    assert_same(records_of([GOOD[:at] + insert + GOOD[at + cut :], GOOD]), [options], {})


def test_ticdc_dialect() -> None:
    from cdc_smt.transforms.native import TICDC_TO_DEBEZIUM

    values = [_message(k, [BASE], old=[{"v": "x"}] if k == "UPDATE" else None, id=0) for k in ("INSERT", "UPDATE")]
    values += [_message("DELETE", [BASE], id=0)]
    for options in COMBINATIONS[::3]:
        for sink in SINKS:
            handled = assert_plan_agrees(
                "ticdc-canal-json",
                "debezium-json",
                TICDC_TO_DEBEZIUM,
                records_of(values),
                sink=sink,
                transforms=[options],
            )
            assert handled == len(values)


def test_the_backfill_example_chain_is_native() -> None:
    """examples/jobs/backfill-parquet.yaml's chain (unwrap, route) over the examples' Canal data."""
    import yaml

    job = yaml.safe_load((ROOT / "examples" / "jobs" / "backfill-parquet.yaml").read_text())
    lines = [
        line
        for name in ("demo-shop.canal.jsonl", "chains-lakehouse.jsonl", "orders.canal.jsonl")
        for line in (ROOT / "examples" / "data" / name).read_bytes().splitlines()
        if line.strip()
    ]
    assert_same(records_of(lines), job["transforms"], job["sink"]["options"], job["source"]["options"])
    # decimal_handling_mode string is Python's per value (every decimal there): the default mode's plan
    assert assert_same(records_of(lines), job["transforms"], {}, job["source"]["options"]) > len(lines) // 2


def test_the_lakehouse_example_without_its_timezone_step() -> None:
    """examples/chains/unwrap-for-lakehouse.yaml re-bases DATETIMEs (Python's); the rest of it is native."""
    import yaml

    os.environ.setdefault("CDC_SMT_PII_SALT", "test-pepper")
    chain = yaml.safe_load((ROOT / "examples" / "chains" / "unwrap-for-lakehouse.yaml").read_text())
    transforms = [t for t in chain["transforms"] if t["type"] != "timezone_convert"]
    lines = [
        line
        for line in (ROOT / "examples" / "data" / "chains-lakehouse.jsonl").read_bytes().splitlines()
        if line.strip()
    ]
    assert_same(records_of(lines), transforms, chain["sink"]["options"], chain["source"]["options"])
    assert assert_same(records_of(lines), transforms, {}, chain["source"]["options"]) > len(lines) // 2


def test_corpus_canal_files(corpus: Path) -> None:
    values = [v for messages in corpus_messages(corpus_files(corpus, "canal-json")) for v in messages]
    assert values
    for transforms in ([unwrap()], CHAINS["lakehouse"][0], UNWRAP_STREAM_CHAINS[1]):
        for sink in SINKS:
            assert_same(records_of(values), transforms, sink, {"source_timezone": "Asia/Shanghai"})


#: The other readers the Debezium writer's transforms follow (their own regular messages).
OTHER_READERS = ["maxwell-json", "ogg-json", "cloudcanal-json"]


@pytest.mark.parametrize("sink", SINKS, ids=["schemaless", "schemas"])
@pytest.mark.parametrize("reader", OTHER_READERS)
def test_the_other_readers_to_debezium(reader: str, sink: dict[str, Any]) -> None:
    from tests import test_native_cloudcanal, test_native_maxwell_in, test_native_ogg_in

    if reader == "cloudcanal-json":
        cc = test_native_cloudcanal.cloudcanal_message
        rows = [{**BASE, "id": "2"}]
        regular = [cc("INSERT", rows), cc("UPDATE", rows, before=[BASE]), cc("DELETE", rows)]
    else:
        regular = (test_native_maxwell_in if reader == "maxwell-json" else test_native_ogg_in).REGULAR
    records = records_of(regular)
    handled = {}
    for options in [unwrap(), *COMBINATIONS[::3], *(c[0] for c in CHAINS.values())]:
        transforms = options if isinstance(options, list) else [options]
        if reader == "cloudcanal-json":
            count = test_native_cloudcanal.assert_same(records, {}, sink, transforms)
        else:
            count = test_native_maxwell_in.assert_same(reader, "debezium-json", records, {}, sink, transforms)
        handled[str(transforms)] = count
    # A metadata field the reader does not set where the plan reads it (Maxwell's row index) is Python's.
    assert handled[str([unwrap()])] == len(records)
    assert sum(n == len(records) for n in handled.values()) > len(handled) // 2


@pytest.mark.parametrize("sink", ALL_SINKS, ids=lambda s: ",".join(s) or "defaults")
def test_every_debezium_option(sink: dict[str, Any]) -> None:
    """The encoder's options (no tombstones on delete, other Connect modes: their columns'
    values go to Python) under each delete handling."""
    records = records_of([*REGULAR, *edge_messages()])
    for options in COMBINATIONS[::7]:
        handled = assert_same(records, [options], sink, {"source_timezone": "Asia/Shanghai"})
        assert handled > 0 or sink in ALL_SINKS[3:]  # other modes: every row has such a value
