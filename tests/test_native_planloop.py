"""``NativePlan.run``: placing a native plan's outputs as ``Record`` objects (the Python side
of every native conversion: the extension's ``place_records``), against the Python path.

Every shape the loop places is converted natively and on the Python path (``chain.native =
None``), and the outputs compared field for field, types included (value, key, topic,
partition, offset, timestamp, headers as a list of ``(str, bytes)`` tuples), in order, and the
dead letters by their record (the very input object), stage, class, message and transform:
one output per input (one topic, or several: a variant per table), several (rows split,
Debezium's delete tombstones), none (filtered), header edits (``insert_header``,
``drop_headers``, ``unwrap``'s ``add_headers``), keys in (the Debezium reader) and out,
records handed to Python among native ones, empty batches, one record at a time. Each
output's headers are a list of its own (a host may mutate them), never a source record's.
Each case also counts what the plan handled itself, so that a plan handing everything to
Python fails it.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt.transforms.chain import Chain, ChainResult
from cdc_smt.transforms.config import build_transforms
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import ChangeEvent, Record
from tests.strategies import change_streams
from tests.test_native import BASE, MALFORMED, NATIVE_SUITE, _message, canal_stream, records_of

pytestmark = NATIVE_SUITE

SECOND = {**BASE, "id": "2", "v": "zweite Zeile é"}
#: Regular messages of two tables: one row and two rows each, every op.
REGULAR = [
    _message(kind, rows, old=[{"v": "x"}] * len(rows) if kind == "UPDATE" else None, table=table)
    for table in ("t", "u")
    for kind in ("INSERT", "UPDATE", "DELETE", "INIT")
    for rows in ([BASE], [BASE, SECOND])
]

#: Chains by name: (decoder, encoder options, transforms), each a shape of the loop.
CHAINS: dict[str, tuple[str, dict[str, Any], list[dict[str, Any]]]] = {
    "canal-one-each": ("canal-json", {}, []),
    "canal-variant-per-table": ("canal-json", {}, [{"type": "route", "topic": "cdc.{database}.{table}"}]),
    "canal-filtered": ("canal-json", {}, [{"type": "filter", "tables": [r"shop\.t"]}]),
    "canal-transaction": ("canal-json", {"batch": "transaction"}, []),
    "canal-header-edits": (
        "canal-json",
        {},
        [
            {"type": "insert_header", "header": "src", "value": "east"},
            {"type": "insert_header", "header": "table", "value": "{database}.{table}", "replace": True},
            {"type": "drop_headers", "headers": ["h"]},
        ],
    ),
    "debezium-tombstones": ("debezium-json", {}, []),
    "debezium-routed-headers": (
        "debezium-json",
        {"schemas_enable": True},
        [
            {"type": "route", "topic": "x.{table}.{op}"},
            {"type": "insert_header", "header": "op", "value": "{op}"},
        ],
    ),
    "unwrap-headers": (
        "debezium-json",
        {},
        [{"type": "unwrap", "add_headers": ["op", "table"], "delete_handling": "rewrite-with-tombstone"}],
    ),
}


def make_chain(decoder: str, encoder: str, sink: dict[str, Any], transforms: list[dict[str, Any]]) -> Chain:
    return Chain(get_codec(decoder, {}), get_codec(encoder, sink), build_transforms(transforms), "all")


def canal_chains(name: str) -> tuple[Chain, Chain]:
    """(native chain, Python chain) of canal-json into the named chain's encoder."""
    encoder, sink, transforms = CHAINS[name]
    fast, slow = (
        make_chain("canal-json", encoder, sink, transforms),
        make_chain("canal-json", encoder, sink, transforms),
    )
    assert fast.native is not None, f"no native plan for {name}"
    slow.native = None
    return fast, slow


def debezium_records(values: list[bytes | None], schemas: bool) -> list[Record]:
    """``values`` (Canal messages) as Debezium records with keys, coordinates and headers:
    the input of a plan that reads keys (converted on the Python path)."""
    chain = make_chain("canal-json", "debezium-json", {"schemas_enable": schemas}, [])
    chain.native = None
    converted = chain.process_batch(records_of(values))
    return [
        Record(value=r.value, key=r.key, topic="in", partition=1, offset=i, timestamp=5 + i, headers=list(r.headers))
        for i, r in enumerate(converted.outputs)
    ]


def assert_same_records(native: list[Record], python: list[Record], inputs: list[Record]) -> None:
    """The same records field for field, types included; each native output's headers a
    list of its own, none of them an input's."""
    assert len(native) == len(python)
    for a, b in zip(native, python, strict=True):
        assert type(a) is type(b) is Record
        for name in Record.__struct_fields__:
            x, y = getattr(a, name), getattr(b, name)
            assert type(x) is type(y) and x == y, (name, x, y)
        assert all(type(h) is tuple and type(h[0]) is str and type(h[1]) is bytes for h in a.headers)
    lists = {id(r.headers) for r in native}
    assert len(lists) == len(native), "outputs share a headers list"
    assert not lists & {id(r.headers) for r in inputs}, "an output holds a source record's headers list"


def assert_same_dead_letters(native: ChainResult, python: ChainResult) -> None:
    def letters(result: ChainResult) -> list[tuple]:
        return [(id(d.record), d.stage, d.error_class, d.message, d.transform) for d in result.dead_letters]

    assert letters(native) == letters(python)


def handled(chain: Chain, records: list[Record]) -> int:
    """How many of ``records`` the chain's plan converts itself (the rest are Python's)."""
    plan = chain.native
    plan.plan.clear()
    keys = [r.key for r in records] if plan.needs_keys else None
    return sum(n >= 0 for n in plan.plan.convert([r.value for r in records], keys)[0])


def assert_loop_agrees(fast: Chain, slow: Chain, records: list[Record]) -> int:
    """Both chains give the same records and dead letters for ``records`` as one batch;
    returns how many records the plan handled itself."""
    native_result, python_result = fast.process_batch(records), slow.process_batch(records)
    assert_same_records(native_result.outputs, python_result.outputs, records)
    assert_same_dead_letters(native_result, python_result)
    return handled(fast, records)


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_regular_rows_are_placed_as_python_places_them(name: str) -> None:
    fast, slow = canal_chains(name)
    records = records_of(REGULAR)
    assert assert_loop_agrees(fast, slow, records) == len(records)


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_records_handed_to_python_among_native_ones(name: str) -> None:
    """Malformed messages (Python's, dead letters) before, between and after regular ones:
    each placed at its own position, the native runs between them by the loop."""
    fast, slow = canal_chains(name)
    values: list[bytes | None] = [MALFORMED[3], *REGULAR[:5], *MALFORMED[:3], *REGULAR[5:], MALFORMED[4]]
    records = records_of(values)
    assert assert_loop_agrees(fast, slow, records) == len(REGULAR)


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_one_record_at_a_time_and_empty_batches(name: str) -> None:
    fast, slow = canal_chains(name)
    assert fast.process_batch([]).outputs == [] == slow.process_batch([]).outputs
    records = records_of([*REGULAR, MALFORMED[3]])
    one_by_one = [r for record in records for r in fast.process(record).outputs]
    assert_same_records(one_by_one, slow.process_batch(records).outputs, records)


def test_every_shape_is_met() -> None:
    """The regular records do give the shapes the chains are named for (else the tests
    above would not exercise them): several outputs, none, several variants, header edits."""
    counts = {}
    for name in CHAINS:
        fast, _ = canal_chains(name)
        records = records_of(REGULAR)
        plan_counts, _, _, variants = fast.native.plan.convert([r.value for r in records], None)
        counts[name] = (max(plan_counts), min(plan_counts), len(set(variants)))
        edits = [e for _, e in fast.native.variants if e is not None]
        assert bool(edits) == ("header" in name), name
    assert counts["canal-one-each"] == (2, 1, 1)  # two-row messages split per row
    assert counts["canal-transaction"] == (1, 1, 1)  # one output each
    assert counts["canal-filtered"][1] == 0  # table u filtered out
    assert counts["canal-variant-per-table"][2] == 2  # a topic per table
    assert counts["debezium-tombstones"][0] == 4  # two deleted rows, each with its tombstone


KEYED: list[tuple[bool, list[dict[str, Any]]]] = [
    (False, []),
    (True, []),
    (False, [{"type": "route", "topic": "k.{table}"}, {"type": "drop_headers", "headers": ["h"]}]),
    (True, [{"type": "filter", "tables": [r"shop\.u"]}]),
]


@pytest.mark.parametrize(("schemas", "transforms"), KEYED)
def test_keys_in_debezium_to_canal(schemas: bool, transforms: list[dict[str, Any]]) -> None:
    """The Debezium reader reads the records' keys (``needs_keys``): keys in, keys out,
    the records Python's where a key or value is malformed."""
    records = debezium_records(REGULAR, schemas)
    records[2:2] = [Record(value=b"{", key=b"k", headers=[("h", b"1")]), Record(value=records[0].value, key=b"[")]
    fast = make_chain("debezium-json", "canal-json", {}, transforms)
    slow = make_chain("debezium-json", "canal-json", {}, transforms)
    assert fast.native is not None and fast.native.needs_keys
    slow.native = None
    tombstones = sum(r.value is None for r in records)  # Python's: the decoder counts them
    assert assert_loop_agrees(fast, slow, records) == len(records) - tombstones - 2


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    name=st.sampled_from(sorted(CHAINS)),
    merge=st.lists(st.booleans(), min_size=1, max_size=5),
    bad=st.lists(st.tuples(st.integers(0, 20), st.sampled_from(MALFORMED)), max_size=3),
)
def test_random_streams(
    stream: list[ChangeEvent], name: str, merge: list[bool], bad: list[tuple[int, bytes | None]]
) -> None:
    """Generated change streams of every MySQL type, malformed messages among them."""
    values: list[bytes | None] = list(canal_stream(stream, "UTC", merge))
    for at, value in bad:
        values.insert(min(at, len(values)), value)
    fast, slow = canal_chains(name)
    assert_loop_agrees(fast, slow, records_of(values))


def test_counts_that_do_not_add_up_are_an_error_not_a_silent_drop() -> None:
    """The extension's loop checks the plan's answer: a count per record, the counts adding
    up to the outputs (a plan that got them wrong would lose or invent records)."""
    from cdc_smt.transforms import native

    assert native._native is not None
    result = ChainResult()
    records = records_of([b"a", b"b"])
    place = native._native.place_records
    with pytest.raises(ValueError, match="add up"):
        place(Record, records, [1, 1], [b"x"] * 3, [None] * 3, [(None, None)], [0] * 3, None, None, result)
    with pytest.raises(ValueError, match="one count per record"):
        place(Record, records, [1], [b"x"], [None], [(None, None)], [0], None, None, result)
    with pytest.raises(ValueError, match="variant"):
        place(Record, records, [1, 1], [b"x"] * 2, [None] * 2, [(None, None)], [0, 1], None, None, result)


HEADERS = st.lists(st.tuples(st.sampled_from(["h", "src", "table", "x"]), st.binary(max_size=4)), max_size=3)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(CHAINS)),
    headers=st.lists(HEADERS, min_size=len(REGULAR), max_size=len(REGULAR)),
    as_tuple=st.booleans(),
)
def test_source_headers_of_any_content(name: str, headers: list[list[tuple[str, bytes]]], as_tuple: bool) -> None:
    """Each record's own headers (repeated names, the names the chains edit, none; as a
    tuple where a host passes one) copied and edited as Python does."""
    records = [
        Record(value=v, key=b"k", headers=tuple(h) if as_tuple else h)  # type: ignore[arg-type]  # a host's tuple
        for v, h in zip(REGULAR, headers, strict=True)
    ]
    fast, slow = canal_chains(name)
    assert assert_loop_agrees(fast, slow, records) == len(records)
