"""debezium-json -> ``unwrap`` -> debezium-json natively, against the Python path: byte for byte.

The same-format Debezium writer copies the image ``unwrap`` keeps (a delete's ``before``,
else ``after``) flat, with the row's Connect schema under ``schemas_enable``, and the
tombstone ``delete_handling`` cuts for a delete. An ``unwrap`` with ``add_fields`` (``op``,
``database``, ``schema``, ``table``, ``source_ts_ms``, ``processing_ts_ms``) or ``rewrite``
(``__deleted``) or ``add_headers`` (the table's fields) types the row: the plan copies it where
the types are the values' JSON kinds (no schema part in), appends the added fields and edits the
headers per table and op; the other fields (row index, positions) and typed rows under a schema
part stay Python's. Inputs: hand-made events with
and without the schema part, every ``delete_handling``/``drop_tombstones`` pair, the row-keeping
transforms around ``unwrap``, hypothesis streams in every Connect mode, malformed events among
good ones, the corpus.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt.transforms import native
from cdc_smt.transforms.model import ChangeEvent
from tests.strategies import change_streams
from tests.test_native import NATIVE_SUITE, ZONES, _example, corpus_files, corpus_messages
from tests.test_native_debezium import (
    CHAINS,
    KEEPING,
    KEY,
    MALFORMED,
    ROW,
    assert_same,
    debezium_records,
    event,
    good,
    keyed,
    make_chain,
    with_schema,
)
from tests.test_native_debezium_connect import MODES

pytestmark = NATIVE_SUITE


def unwrap(**options: Any) -> dict[str, Any]:
    return {"type": "unwrap", **options}


#: Every ``unwrap`` the plan follows: ``delete_handling`` that keeps values as read, with and
#: without ``drop_tombstones``, another prefix (it names only added columns, of which there are none).
PLAIN = [
    unwrap(delete_handling=mode, drop_tombstones=drop, prefix=prefix)
    for mode in ("tombstone", "drop")
    for drop in (True, False)
    for prefix in ("__", "m_")
]
#: The writer's options: schemaless, with the schema part, without delete tombstones.
SINKS = [{}, {"schemas_enable": True}, {"tombstones_on_delete": False}]


def rows(pairs: list[tuple[bytes | None, bytes | None]]) -> int:
    """The events among ``pairs`` (tombstones are the reader's to count: Python's)."""
    return sum(value is not None for value, _ in pairs)


@pytest.mark.parametrize("sink", SINKS, ids=["schemaless", "schemas", "no-tombstones"])
@pytest.mark.parametrize("options", PLAIN, ids=lambda o: "-".join(str(v) for v in list(o.values())[1:]))
def test_every_plain_unwrap_is_native_and_identical(options: dict[str, Any], sink: dict[str, Any]) -> None:
    """Creates, reads, updates (changed or not) and deletes, with and without the schema part
    in: both paths equal, every event the plan's (but schemaless events into a schema part,
    which Python infers from the values)."""
    for pairs, wrapped in ((good(), False), (with_schema(good()), True)):
        count = assert_same(keyed(pairs), {}, sink, [options], "debezium-json")
        native_ = wrapped or not sink.get("schemas_enable")
        assert count == (rows(pairs) if native_ else 0), (options, sink, wrapped, count)


#: ``unwrap``s that type the row and add fields the plan writes: per table and op (``op``,
#: ``database``, ``schema``, ``table``, ``rewrite``'s ``deleted``) and per row (the two times).
TYPING = [
    unwrap(add_fields=["op"]),
    unwrap(add_fields=["op", "database", "schema", "table"], prefix="m_"),
    unwrap(add_fields=["source_ts_ms", "processing_ts_ms"]),
    unwrap(add_fields=["ts_ms", "op"], delete_handling="drop"),
    unwrap(delete_handling="rewrite"),
    unwrap(delete_handling="rewrite-with-tombstone", drop_tombstones=True),
    unwrap(add_fields=["table", "source_ts"], delete_handling="rewrite-with-tombstone"),
    unwrap(add_headers=["table", "op"]),
    unwrap(add_headers=["database"], add_fields=["op"], delete_handling="rewrite-with-tombstone", prefix="h_"),
]
#: Fields the chain's plan leaves to Python here (the row's index differs row by row; the
#: positions leave the whole chain to Python).
PER_ROW = [unwrap(add_fields=["row_index"]), unwrap(add_fields=["op", "row_index"], delete_handling="rewrite")]


def test_add_headers_of_other_fields_are_pythons() -> None:
    """Headers that differ row by row (positions, times): the chain has no plan, output Python's."""
    assert make_chain({}, {}, [unwrap(add_headers=["source_ts_ms"])], "debezium-json").native is None
    assert make_chain({}, {}, [unwrap(add_headers=["op"])], "debezium-json").native.name == native.DEBEZIUM_TO_DEBEZIUM
    assert make_chain({}, {"decimal_handling_mode": "string"}, [unwrap()], "debezium-json").native is None


@pytest.mark.parametrize("sink", SINKS, ids=["schemaless", "schemas", "no-tombstones"])
@pytest.mark.parametrize("options", TYPING + PER_ROW, ids=repr)
def test_unwraps_that_type_the_row(options: dict[str, Any], sink: dict[str, Any]) -> None:
    """Both paths equal; every event the plan's without the schema part in or out (the row's
    types are then the JSON kinds), none of those under a schema part (typed from Connect's
    representations, re-written: Python's) or with fields that differ row by row."""
    for pairs, wrapped in ((good(), False), (with_schema(good()), True)):
        count = assert_same(keyed(pairs), {}, sink, [options], "debezium-json")
        native_ = not wrapped and not sink.get("schemas_enable") and options in TYPING
        assert count == (rows(pairs) if native_ else 0), (options, sink, wrapped, count)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(stream=change_streams(max_events=10), tz=st.sampled_from(["UTC", *ZONES]), chain=st.sampled_from(TYPING))
def test_typing_unwraps_over_streams(stream: list[ChangeEvent], tz: str, chain: dict[str, Any]) -> None:
    """Every MySQL type as schemaless Debezium JSON (typed by JSON kinds) through a typing ``unwrap``."""
    records = debezium_records(stream, tz, {"schemas_enable": False})
    assert_same(records, {"source_timezone": tz}, {"source_timezone": tz}, [chain], "debezium-json")


@pytest.mark.parametrize("options", TYPING[:3], ids=repr)
def test_typing_unwraps_on_malformed_events_one_at_a_time_and_in_one_batch(options: dict[str, Any]) -> None:
    """Dead letters and readings for malformed events as Python's, the good ones the plan's; a
    metadata name that is a row column (the table Python's), events without ``ts_ms``; the
    records alone handled as in one batch."""
    clash = {**ROW, "__op": 1, "m_table": "x"}
    unusual = [
        event("c", after=clash),
        event("c", after=ROW, drop_ts_ms=None),
        event("c", after=ROW, source={"db": "shop", "table": "t", "ts_ms": None}),
        event("d", before=None),
    ]
    values = [pair for bad in [*MALFORMED, *unusual] for pair in ((event("c", after=ROW), KEY), (bad, KEY))]
    whole = assert_same(keyed(values), {}, {}, [options], "debezium-json")
    assert whole >= len(MALFORMED)
    alone = sum(assert_same(keyed([p]), {}, {}, [options], "debezium-json") for p in values)
    assert whole == alone


@pytest.mark.parametrize("name", KEEPING)
@pytest.mark.parametrize("after", [False, True], ids=["before-unwrap", "after-unwrap"])
def test_row_keeping_transforms_around_unwrap(name: str, after: bool) -> None:
    """Filters, routes and header edits before or after ``unwrap`` (on its tombstones too)."""
    chain = [unwrap(), *CHAINS[name]] if after else [*CHAINS[name], unwrap()]
    source = {"db": "shop", "table": "orders"}
    pairs = [
        *good(),
        *[
            (event(op, before=ROW if op in "ud" else None, after=None if op == "d" else ROW, source=source), KEY)
            for op in "cudr"
        ],
    ]
    for sink in SINKS[:2]:
        for values in (pairs, with_schema(pairs)):
            assert_same(keyed(values), {}, sink, chain, "debezium-json")


def test_regular_events_are_handled_natively() -> None:
    """The plan converts the events itself (a plan handing them to Python fails this)."""
    pairs = good() * 3
    assert assert_same(keyed(pairs), {}, {}, [unwrap()], "debezium-json") == rows(pairs)


def test_malformed_and_unusual_events_among_good_ones() -> None:
    """Python's dead letters and readings for them, the good ones still the plan's; events
    without the image ``unwrap`` keeps (Python passes them on as they are) among them."""
    unusual = [event("c", after=None), event("u", before=ROW, after=None), event("d", before=None)]
    values = [pair for bad in [*MALFORMED, *unusual] for pair in ((event("c", after=ROW), KEY), (bad, KEY))]
    for sink in SINKS:
        count = assert_same(keyed(values), {}, sink, [unwrap()], "debezium-json")
        assert count >= (len(MALFORMED) if not sink.get("schemas_enable") else 0)


def test_objects_in_rows_are_pythons() -> None:
    """A nested value (an object orjson may re-write): Python's, with or without the schema part."""
    values = [(event("c", after={**ROW, "v": {"b": 1, "a": [1.50]}}), KEY), (event("c", after=ROW), KEY)]
    assert assert_same(keyed(values), {}, {}, [unwrap()], "debezium-json") == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    options=MODES,
    tz=st.sampled_from(["UTC", *ZONES]),
    chain=st.sampled_from(PLAIN),
    schemas=st.booleans(),
)
def test_streams_in_every_mode(
    stream: list[ChangeEvent], options: dict[str, Any], tz: str, chain: dict[str, Any], schemas: bool
) -> None:
    """Every MySQL type through Debezium's Connect options, the schema part in (and out or not)."""
    records = debezium_records(stream, tz, options)
    modes = {k: v for k, v in options.items() if k != "schemas_enable"}
    source = {"source_timezone": tz, **modes}
    assert_same(records, source, {**source, "schemas_enable": schemas}, [chain], "debezium-json")


def test_generated_streams_are_mostly_handled_natively() -> None:
    total = count = 0
    for seed in range(20):
        for options in ({}, {"schemas_enable": True}):
            records = [r for r in debezium_records(_example(seed), "UTC", options) if r.value is not None]
            total += len(records)
            count += assert_same(records, {}, options, [unwrap()], "debezium-json")
    assert count >= total * 0.6, (count, total)


def test_one_record_at_a_time_and_one_batch_agree() -> None:
    pairs = with_schema(good()) + good()
    whole = assert_same(keyed(pairs), {}, {"schemas_enable": True}, [unwrap()], "debezium-json")
    alone = sum(assert_same(keyed([p]), {}, {"schemas_enable": True}, [unwrap()], "debezium-json") for p in pairs)
    assert whole == alone


def test_corpus_debezium_files(corpus: Path) -> None:
    values = [v for messages in corpus_messages(corpus_files(corpus, "debezium-json")) for v in messages]
    assert values
    for key in (None, b'{"id":101}'):
        for sink in SINKS[:2]:
            assert_same(keyed([(v, key) for v in values]), {}, sink, [unwrap()], "debezium-json")
    wrapped = [v for v in values if v.lstrip().startswith(b'{"schema"') and b'"op":"' in v]
    count = assert_same(
        keyed([(v, b'{"id":101}') for v in wrapped]), {}, {"schemas_enable": True}, [unwrap()], "debezium-json"
    )
    assert count >= len(wrapped) // 2, (count, len(wrapped))
    plain = [v for v in values if not v.lstrip().startswith(b'{"schema"')]
    for options in TYPING:
        assert_same(keyed([(v, b'{"id":101}') for v in plain]), {}, {}, [options], "debezium-json")
