"""debezium-json -> ``unwrap`` -> debezium-json natively, against the Python path: byte for byte.

The same-format Debezium writer copies the image ``unwrap`` keeps (a delete's ``before``,
else ``after``) flat, with the row's Connect schema under ``schemas_enable``, and the
tombstone ``delete_handling`` cuts for a delete. Only an ``unwrap`` that leaves values as
read qualifies (no ``add_fields``, ``add_headers`` or ``rewrite``, which type the row: those
chains stay Python's). Inputs: hand-made events with and without the schema part, every
``delete_handling``/``drop_tombstones`` pair, the row-keeping transforms around ``unwrap``,
hypothesis streams in every Connect mode, malformed events among good ones, the corpus.
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


@pytest.mark.parametrize(
    "options",
    [
        unwrap(add_fields=["op"]),
        unwrap(add_headers=["table"]),
        unwrap(delete_handling="rewrite"),
        unwrap(delete_handling="rewrite-with-tombstone"),
    ],
    ids=["add_fields", "add_headers", "rewrite", "rewrite-with-tombstone"],
)
def test_unwraps_that_type_the_row_are_pythons(options: dict[str, Any]) -> None:
    """They re-write typed values (and the added ones): the chain has no plan, output Python's."""
    assert make_chain({}, {}, [options], "debezium-json").native is None
    assert make_chain({}, {}, [unwrap()], "debezium-json").native.name == native.DEBEZIUM_TO_DEBEZIUM
    assert make_chain({}, {"decimal_handling_mode": "string"}, [unwrap()], "debezium-json").native is None


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
