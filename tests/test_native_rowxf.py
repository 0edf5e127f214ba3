"""The row-changing transforms on the native Canal writer (canal-json -> canal-json), against
the Python path: byte for byte.

``replace_field``, ``mask_field`` (every mode), ``insert_field`` (static, metadata),
``value_to_key`` and ``merge_shards`` change what the Canal encoder writes: the columns and
their names, the values (re-written as Canal text once a transform typed the row), the type
maps (copied, or computed per written column), ``old``, ``pkNames``, the table and the key
(typed values). Every chain and option combination runs the same records natively and on the
Python path: outputs (values, keys, topics, headers), dead letters and missing-column counts
equal, and the regular messages handled natively (a plan that handled nothing would pass
trivially). Inputs: regular messages, hypothesis streams, the fast paths' edge values,
malformed and mutated messages, missing columns under every ``on_missing``, the corpus and
the examples' data.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt.transforms import native
from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.config import build_transforms
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import ChangeEvent
from tests.strategies import change_streams
from tests.test_native import (
    BASE,
    GOOD,
    MALFORMED,
    MUTATIONS,
    NATIVE_SUITE,
    ROOT,
    _example,
    _message,
    assert_plan_agrees,
    canal_stream,
    corpus_files,
    corpus_messages,
    dead_letters,
    edge_messages,
    handled,
    outputs,
    records_of,
)
from tests.test_native_transforms import CHAINS, REGULAR

pytestmark = NATIVE_SUITE

#: Canal encoder options: per row (natively) and per transaction (several rows: Python's).
SINKS: list[dict[str, Any]] = [{}, {"batch": "transaction"}]
#: The chains of ``test_native_transforms`` that change rows (``unwrap`` aside).
_KEEPING = {"filter", "route", "drop_tombstones", "insert_header", "drop_headers"}
ROW_CHAINS = sorted(n for n, t in CHAINS.items() if any(s["type"] not in _KEEPING for s in t))
#: Regular messages a chain leaves to Python by design (besides the one without ``ts``):
#: "mixed" drops INIT rows after typing them, "replace-drops-pk" pins a key it then drops.
TO_PYTHON = {"mixed": 1, "replace-drops-pk": 5}


EXAMPLE_DATA = ["orders.canal.jsonl", "demo-shop.canal.jsonl", "chains-pii.jsonl"]


def assert_same(
    records: list[Any],
    transforms: list[dict[str, Any]],
    sink: dict[str, Any] | None = None,
    source: dict[str, Any] | None = None,
) -> int:
    """Both paths give the same records, dead letters and missing-column counts; returns how
    many records the plan handled itself."""
    return assert_plan_agrees("canal-json", "canal-json", native.CANAL_TO_CANAL, records, source, sink, transforms)


def test_row_changing_chains_get_the_canal_plan() -> None:
    canal = lambda **o: get_codec("canal-json", o)  # noqa: E731
    ticdc = get_codec("ticdc-canal-json", {})
    for name in ROW_CHAINS:
        chain = Chain(canal(), canal(), build_transforms(CHAINS[name]), "all")
        assert chain.native is not None and chain.native.name == native.CANAL_TO_CANAL, name
        assert Chain(ticdc, canal(), build_transforms(CHAINS[name]), "all").native is None, name
    # unwrap and the options the plan does not implement stay Python's
    for transforms in (
        [{"type": "unwrap"}],
        [{"type": "merge_shards", "pattern": "(shop)", "database": "$1", "key_field": "k"}],
        [{"type": "insert_field", "metadata": {"_f": "binlog_file"}}],
        [_mask("hash", ["v"], salt="s"), {"type": "filter", "condition": "after.id > 1"}],
    ):
        assert Chain(canal(), canal(), build_transforms(transforms), "all").native is None, transforms


@pytest.mark.parametrize("name", ROW_CHAINS)
def test_regular_rows_are_handled_natively_and_identical(name: str) -> None:
    records = records_of(REGULAR)
    assert assert_same(records, CHAINS[name]) == len(records) - 1 - TO_PYTHON.get(name, 0)


@pytest.mark.parametrize("name", ROW_CHAINS)
def test_transaction_batches_are_identical(name: str) -> None:
    """Several rows per message under ``batch: transaction`` are Python's; one-row ones native."""
    values = [_message(k, [BASE]) for k in ("INSERT", "UPDATE", "DELETE")] + REGULAR
    handled = assert_same(records_of(values), CHAINS[name], {"batch": "transaction"})
    assert handled >= (3 if name not in TO_PYTHON else 0)


def _mask(mode: str, fields: list[str], **more: Any) -> dict[str, Any]:
    return {"type": "mask_field", "fields": fields, "mode": mode, **more}


#: Each transform and option the plan follows, alone and in pairs (the order matters).
SINGLE: dict[str, dict[str, Any]] = {
    "exclude": {"type": "replace_field", "exclude": ["dt0", "e"]},
    "include": {"type": "replace_field", "include": ["id", "v", "s", "j"]},
    "rename": {"type": "replace_field", "renames": {"v": "name", "e": "state"}},
    "rename-pk": {"type": "replace_field", "renames": {"id": "key_id"}},
    "rename-swap": {"type": "replace_field", "renames": {"v": "j", "j": "v"}},
    "hash": _mask("hash", ["v"], salt="pepper"),
    "hash-unsalted": _mask("hash", ["v"]),
    "null": _mask("null", ["d2", "dt3", "e", "s", "bl"]),
    "null-pk": _mask("null", ["id"]),
    "empty": _mask("empty", "i ti y d2 dw db v e s b1 b8 dt3 ts3 da tm j".split()),
    "empty-more": _mask("empty", ["bl", "dt0", "ts0", "dt6", "f", "d0"]),
    "empty-pk": _mask("empty", ["id"]),
    "replace": _mask("replace", ["v", "j"], replacement='{"x": "é"}'),
    "replace-int": _mask("replace", ["i", "ti", "d2", "db"], replacement="42"),
    "replace-temporal": _mask("replace", ["dt3", "ts3", "dt0"], replacement="2024-02-29 12:34:56.5"),
    "replace-enum": _mask("replace", ["e"], replacement="PAID"),
    "replace-pk": _mask("replace", ["id"], replacement="18446744073709551615"),
    "static": {"type": "insert_field", "static": {"_s": "east", "_n": 5, "_f": 1.5, "_b": True, "_z": None}},
    "metadata": {
        "type": "insert_field",
        "metadata": {"_es": "source_ts_ms", "_row": "row_index", "_op": "op", "_db": "database", "_t": "table"},
    },
    "metadata-ts": {"type": "insert_field", "metadata": {"_ts": "processing_ts_ms", "_q": "qualified_table"}},
    "value-to-key": {"type": "value_to_key", "fields": ["v", "id"]},
    "value-to-key-int": {"type": "value_to_key", "fields": ["i"]},
    "merge": {"type": "merge_shards", "pattern": r"(shop)\.(t)", "database": "$1_all", "table": "$2_all"},
    "merge-table": {"type": "merge_shards", "pattern": r"shop\.(t)", "table": "$1_x"},
}
PAIRS = list(
    itertools.permutations(
        ["exclude", "rename-pk", "hash", "null-pk", "empty-pk", "replace", "static", "value-to-key", "merge"], 2
    )
)
#: Pairs whose second step names the column the first renamed: the table is Python's (on_missing).
#: And pairs masking one column twice (the second mask reads the first's output): Python's.
RENAMED_AWAY = {
    ("rename-pk", "null-pk"),
    ("rename-pk", "empty-pk"),
    ("rename-pk", "value-to-key"),
    ("hash", "replace"),
    ("replace", "hash"),
    ("null-pk", "empty-pk"),
    ("empty-pk", "null-pk"),
}


@pytest.mark.parametrize("sink", SINKS, ids=["row", "transaction"])
@pytest.mark.parametrize("name", sorted(SINGLE))
def test_every_transform_and_option(name: str, sink: dict[str, Any]) -> None:
    records = records_of(REGULAR)
    handled = assert_same(records, [SINGLE[name]], sink)
    if not sink:
        assert handled == len(records) - 1


@pytest.mark.parametrize("pair", PAIRS, ids="+".join)
def test_transforms_in_pairs(pair: tuple[str, str]) -> None:
    records = records_of(REGULAR + edge_messages()[:30])
    handled = assert_same(records, [SINGLE[pair[0]], SINGLE[pair[1]]])
    assert handled == 0 if pair in RENAMED_AWAY else handled > len(records) // 2


@pytest.mark.parametrize("name", ROW_CHAINS + sorted(SINGLE))
def test_edge_values(name: str) -> None:
    transforms = CHAINS[name] if name in CHAINS else [SINGLE[name]]
    values = edge_messages()
    zone = {"source_timezone": "Asia/Shanghai"}
    handled = assert_same(records_of(values), transforms, zone, zone)
    assert_same(records_of(values), transforms, {}, zone)  # TIMESTAMPs re-based: Python's
    if name not in TO_PYTHON:
        assert handled >= len(values) // 2


def test_updates_old_as_python_reproduces_it() -> None:
    """``old``: the message's changed columns still written (renamed away ones only when their
    text differs), then every written column whose text differs, masked alike."""
    olds = [
        [{"v": "x"}],
        [{"v": ""}],  # the same text as the row's: kept (Canal said it changed)
        [{"i": None, "e": "1", "id": "7"}],
        [{"j": '{"a": 2}', "dt3": None, "d2": "1.5"}],
        [{}],
        [],
        None,
    ]
    values = [_message("UPDATE", [BASE], old=o) for o in olds]
    for transforms in (
        [SINGLE["rename"]],
        [SINGLE["rename-swap"]],
        [SINGLE["hash"]],
        [SINGLE["null"]],
        CHAINS["mixed"],
    ):
        assert assert_same(records_of(values), transforms) == len(values), transforms


def test_deletes_and_tombstones() -> None:
    values = [
        _message("DELETE", [BASE]),
        _message("DELETE", [BASE], old=[BASE]),
        _message("DELETE", [{**BASE, "id": "2"}]),
    ]
    for transforms in ([SINGLE["hash"]], [SINGLE["value-to-key"], {"type": "drop_tombstones"}], CHAINS["five"]):
        assert assert_same(records_of(values), transforms) == 2


@pytest.mark.parametrize("on_missing", ["warn", "ignore", "error"])
@pytest.mark.parametrize(
    "transform",
    [
        {"type": "replace_field", "exclude": ["nope"]},
        {"type": "replace_field", "renames": {"nope": "x"}},
        _mask("hash", ["nope"], salt="s"),
        _mask("null", ["nope"]),
    ],
)
def test_missing_columns_behave_as_in_python(transform: dict[str, Any], on_missing: str) -> None:
    """A transform naming a column the table lacks: every ``on_missing`` rule gives Python's
    result (counts, transform-named dead letters); the plan leaves that table to Python."""
    other = {"id": "bigint", "nope": "varchar(10)"}
    values = [GOOD, _message("INSERT", [{"id": "5", "nope": "x"}], types=other), GOOD, *REGULAR]
    assert assert_same(records_of(values), [{**transform, "on_missing": on_missing}]) == 1


def test_rows_without_a_column_and_unreadable_values_are_pythons() -> None:
    chain = [_mask("hash", ["v"], salt="s"), {"type": "replace_field", "exclude": ["i"]}]
    without = {k: v for k, v in BASE.items() if k != "v"}
    values = [GOOD, _message("INSERT", [without]), _message("INSERT", [{**BASE, "i": "x1"}]), GOOD]
    assert assert_same(records_of(values), chain) == 2


@pytest.mark.parametrize("name", ["five", "mixed", "mask-hash", "replace-include-rename", "value-to-key"])
def test_malformed_and_mutated_messages(name: str) -> None:
    values = [v for bad in MALFORMED for v in (GOOD, bad)]
    assert assert_same(records_of(values), CHAINS[name]) >= len(MALFORMED)


@settings(max_examples=60, deadline=None)
@given(**MUTATIONS, name=st.sampled_from(ROW_CHAINS))
def test_mutations(at: int, insert: bytes, cut: int, name: str) -> None:
    assert_same(records_of([GOOD[:at] + insert + GOOD[at + cut :], GOOD]), CHAINS[name])


#: Chains over any table (the columns they name are the streams' first one, ``id`` of the
#: strategies' tables, or added).
STREAM_CHAINS: list[list[dict[str, Any]]] = [
    [_mask("null", ["id"], on_missing="ignore")],
    [_mask("empty", ["id"], on_missing="ignore")],
    [_mask("replace", ["id"], replacement="7", on_missing="ignore")],
    [{"type": "insert_field", "static": {"_s": "x", "_n": -3}, "metadata": {"_es": "source_ts_ms", "_r": "row_index"}}],
    [{"type": "merge_shards", "pattern": r"(\w+)\.(\w+)", "table": "$2_all"}, {"type": "route", "topic": "m.{table}"}],
    [{"type": "value_to_key", "fields": ["id"]}],
    [{"type": "replace_field", "renames": {"id": "rid"}, "on_missing": "ignore"}],
]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    sink=st.sampled_from(SINKS),
    merge=st.lists(st.booleans(), min_size=1, max_size=5),
    transforms=st.sampled_from(STREAM_CHAINS),
)
def test_random_streams_are_byte_identical(
    stream: list[ChangeEvent], sink: dict[str, Any], merge: list[bool], transforms: list[dict[str, Any]]
) -> None:
    tz = "Asia/Shanghai"
    values = canal_stream(stream, tz, merge)
    assert_same(records_of(values), transforms, sink, {"source_timezone": tz})


def test_generated_streams_are_mostly_handled_natively() -> None:
    total = handled = 0
    for seed in range(20):
        values = canal_stream(_example(seed), "Asia/Shanghai", [False])
        for transforms in STREAM_CHAINS:
            total += len(values)
            handled += assert_same(records_of(values), transforms, {}, {"source_timezone": "Asia/Shanghai"})
    assert handled >= total * 0.6, (handled, total)


#: ``same(records, transforms, sink, source)``: a suite's differential check, its handled count.
Same = Callable[[list[Any], list[dict[str, Any]], dict[str, Any], dict[str, Any]], int]


def corpus_agrees(corpus: Path, same: Same) -> None:
    """The corpus's Canal files through :data:`STREAM_CHAINS` and the five-transform chain."""
    total = count = 0
    for values in corpus_messages(corpus_files(corpus, "canal-json")):
        for transforms in STREAM_CHAINS + [CHAINS["five"]]:
            count += same(records_of(values), transforms, {}, {})
            total += len(values)
    assert total > 0 and count > 0, (count, total)


def examples_agree(name: str, same: Same) -> None:
    """An example data file through PII masking and :data:`STREAM_CHAINS` (Shanghai time)."""
    lines = [line for line in (ROOT / "examples" / "data" / name).read_bytes().splitlines() if line.strip()]
    zone = {"source_timezone": "Asia/Shanghai"}
    pii = [_mask("hash", ["email", "phone"], salt="s"), {"type": "replace_field", "exclude": ["password_hash"]}]
    assert sum(same(records_of(lines), t, zone, zone) for t in (pii, *STREAM_CHAINS)) > 0


def test_corpus_canal_files(corpus: Path) -> None:
    corpus_agrees(corpus, assert_same)


@pytest.mark.parametrize("name", EXAMPLE_DATA)
def test_example_data(name: str) -> None:
    examples_agree(name, assert_same)


def test_pii_masking_example_runs_natively() -> None:
    """``examples/chains/pii-masking.yaml`` (hash, replace, replace_field under a predicate)
    over its data: Python's records and dead letters, every message converted natively."""
    import os

    from cdc_smt.transforms.config import build_chain, load_config

    os.environ.setdefault("CDC_SMT_PII_SALT", "test-pepper")
    config = load_config(ROOT / "examples" / "chains" / "pii-masking.yaml")
    fast, slow = build_chain(config), build_chain(config)
    assert fast.native is not None and fast.native.name == native.CANAL_TO_CANAL
    slow.native = None
    lines = [line for line in (ROOT / "examples" / "data" / "chains-pii.jsonl").read_bytes().splitlines() if line]
    records = records_of(lines)
    native_result, python_result = fast.process_batch(records), slow.process_batch(records)
    assert outputs(native_result) == outputs(python_result)
    assert dead_letters(native_result) == dead_letters(python_result)
    assert handled(fast, records) == len(records)


#: A DECIMAL text the key writes as it is: ``format(Decimal(text), "f")`` is the text.
PLAIN_DECIMAL = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?")


def decimal_keys_agree(
    column: str, same: Callable[[list[Any], list[dict[str, Any]]], int], row: dict[str, Any]
) -> None:
    """Rows of ``row`` with each edge text of the fast paths in the DECIMAL ``column``, keyed
    by it (typed: ``format(Decimal(text), "f")``, the plain texts as they are, the others
    Python's): identical (``same``), and as native as the same rows keyed by the integer id
    but for the texts that are not plain; a masked one (its constant's text may be padded)
    Python's."""
    from tests.test_fastpath import EDGES

    texts = EDGES[column]
    records = records_of([_message("INSERT", [{**row, column: t}]) for t in texts])
    by_id = same(records, [{"type": "value_to_key", "fields": ["id"]}])
    not_plain = sum(not PLAIN_DECIMAL.fullmatch(t) for t in texts)
    assert by_id > not_plain, (by_id, not_plain)  # the checks below can fail
    for transforms in (
        [{"type": "value_to_key", "fields": [column, "id"]}],
        [{"type": "replace_field", "renames": {column: "k"}}, {"type": "value_to_key", "fields": ["k"]}],
        [{"type": "value_to_key", "fields": [column]}, SINGLE["hash"]],
    ):
        assert same(records, transforms) >= by_id - not_plain, transforms
    masked = [{"type": "value_to_key", "fields": [column]}, _mask("replace", [column], replacement="42")]
    assert same(records, masked) == 0


@pytest.mark.parametrize("sink", SINKS, ids=["row", "transaction"])
@pytest.mark.parametrize("column", ["d2", "d0", "dw"])
def test_decimal_key_columns(column: str, sink: dict[str, Any]) -> None:
    """A typed DECIMAL key column: the key writes the message's plain text, whatever the Canal
    writer re-writes as the value (:func:`decimal_keys_agree`)."""
    decimal_keys_agree(column, lambda records, transforms: assert_same(records, transforms, sink), BASE)
