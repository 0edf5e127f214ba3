"""The native canal-json / ticdc-canal-json -> dataworks-json plans against the Python path:
byte for byte.

The DataWorks writer writes one message per row (an UPDATE as ``UPDATE_BEFOR`` and
``UPDATE_AFTER`` sharing one ``sequenceId``, or one ``UPDATE_AFTER`` under ``update_as:
single``), each value ``DataWorksJson._value`` of the typed value, the key the raw key texts
(an ``UPDATE_BEFOR``'s those of its before-image), and numbers rows with the encoder's counter
(``_next_seq``): a batch is the plan's up to its first record for Python, and the counter goes
on across batches and Python's records. Inputs: hypothesis streams, the edge values, the
corpus, malformed and mutated messages, unusual field sets; both update shapes, zones, the
transforms that keep rows; through ``Chain.process_batch``, the worker's ``convert_values`` and
one record per batch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt.transforms import native
from cdc_smt.transforms.chain import Chain, ChainResult
from cdc_smt.transforms.config import build_transforms
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import ChangeEvent, Record
from tests.strategies import change_streams
from tests.test_native import (
    BASE,
    GOOD,
    MALFORMED,
    MUTATIONS,
    NATIVE_SUITE,
    ZONES,
    _example,
    _message,
    canal_stream,
    corpus_files,
    corpus_messages,
    dead_letters,
    edge_messages,
    outputs,
    records_of,
)
from tests.test_native_canal_out import UNUSUAL, keeping_messages, ticdc_text_messages
from tests.test_native_cloudcanal_out import assert_both_agree, regular_messages, update_messages
from tests.test_native_debezium import INPUTS, KEY, ROW, SOURCE, debezium_records, event, good, keyed
from tests.test_native_debezium import MALFORMED as DEBEZIUM_MALFORMED
from tests.test_native_maxwell import CHANGING, KEEPING
from tests.test_native_ticdc import ENCODERS as TICDC_ENCODERS
from tests.test_native_ticdc import ticdc_stream
from tests.test_native_transforms import CHAINS

pytestmark = NATIVE_SUITE

OUT = "dataworks-json"
#: The encoder's update shapes (unset: ``split``).
SHAPES: list[dict[str, Any]] = [{}, {"update_as": "split"}, {"update_as": "single"}]


def assert_same(
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
    ticdc: bool = False,
) -> int:
    """Both paths give the same records and dead letters (one batch, the worker's
    ``convert_values``, one record per batch); returns how many the worker's path handled."""
    decoder = "ticdc-canal-json" if ticdc else "canal-json"
    plan = native.TICDC_TO_DATAWORKS if ticdc else native.CANAL_TO_DATAWORKS
    handled = assert_both_agree(decoder, plan, records, source, sink, transforms, OUT)
    assert_one_per_batch(decoder, records, source, sink, transforms)
    return handled


def chain_of(
    decoder: str = "canal-json",
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
) -> Chain:
    codecs = get_codec(decoder, source or {}), get_codec(OUT, sink or {})
    return Chain(codecs[0], codecs[1], build_transforms(transforms or []), "all")


def assert_one_per_batch(
    decoder: str,
    records: list[Record],
    source: dict[str, Any] | None,
    sink: dict[str, Any] | None,
    transforms: list[dict[str, Any]] | None,
) -> None:
    """The plan given one record per batch writes what Python writes for them all in one."""
    fast, slow = chain_of(decoder, source, sink, transforms), chain_of(decoder, source, sink, transforms)
    slow.native = None
    results = [fast.process_batch([r]) for r in records]
    expected = slow.process_batch(records)
    assert [o for r in results for o in outputs(r)] == outputs(expected)
    assert [d for r in results for d in dead_letters(r)] == dead_letters(expected)


def alone(chain: Chain, values: list[bytes]) -> int:
    """How many of ``values`` the chain's plan converts, each in a batch of its own (in a
    batch the records after one for Python are Python's)."""
    assert chain.native is not None
    return sum(chain.native.convert_values([v])[0][0] >= 0 for v in values)


def sequences(result: ChainResult) -> list[str]:
    return [orjson.loads(r.value)["payload"]["sequenceId"] for r in result.outputs]


def test_the_plan_is_chosen_only_for_what_it_writes() -> None:
    assert chain_of().native.name == native.CANAL_TO_DATAWORKS
    assert chain_of("ticdc-canal-json").native.name == native.TICDC_TO_DATAWORKS
    for name in KEEPING:
        assert chain_of(transforms=CHAINS[name]).native is not None, name
    for name in CHANGING:  # the row-changing transforms: the shaped plan (test_native_rowxf_writers)
        assert chain_of(transforms=CHAINS[name]).native.name == native.CANAL_TO_DATAWORKS, name
    for plan in (native.CANAL_TO_DATAWORKS, native.TICDC_TO_DATAWORKS):
        assert plan in native.status()["plans"] and plan in native.plans_of(OUT)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    tz=st.sampled_from(ZONES),
    sink_tz=st.sampled_from([None, "UTC", "Asia/Shanghai"]),
    shape=st.sampled_from(SHAPES),
    merge=st.lists(st.booleans(), min_size=1, max_size=5),
    transforms=st.sampled_from([[], *(CHAINS[n] for n in KEEPING)]),
)
def test_random_streams_are_byte_identical(
    stream: list[ChangeEvent],
    tz: str,
    sink_tz: str | None,
    shape: dict[str, Any],
    merge: list[bool],
    transforms: list[dict[str, Any]],
) -> None:
    values = canal_stream(stream, tz, merge)
    sink = {"source_timezone": sink_tz or tz, **shape}
    assert_same(records_of(values), {"source_timezone": tz}, sink, transforms)


def test_generated_streams_are_mostly_handled_natively() -> None:
    total = handled = 0
    zone = {"source_timezone": "Asia/Shanghai"}
    for seed in range(20):
        values = canal_stream(_example(seed), "Asia/Shanghai", [True, False])
        total += len(values)
        handled += alone(chain_of("canal-json", zone, zone), values)
        assert_same(records_of(values), zone, zone)
    assert handled >= total * 0.6, (handled, total)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("tz", ["UTC", "Asia/Shanghai", "America/New_York"])
def test_every_edge_value(tz: str, shape: dict[str, Any]) -> None:
    values = edge_messages(rows=2)
    zone = {"source_timezone": tz}
    assert_same(records_of(values), zone, {**zone, **shape})
    assert_same(records_of(values), zone, {"source_timezone": "UTC", **shape})
    assert alone(chain_of("canal-json", zone, zone), values) >= len(values) // 3


@pytest.mark.parametrize("shape", SHAPES)
def test_updates_write_the_row_overlaid_with_old(shape: dict[str, Any]) -> None:
    assert_same(records_of(update_messages({"id": "77"})), {}, shape)  # the key changed too


def test_regular_messages_are_all_handled() -> None:
    values = regular_messages([{"v": "a"}, {"id": "9"}, {"v": None, "i": "9"}])
    values.append(_message("INSERT", [BASE], ts=None))
    chain = chain_of()
    assert chain.native.convert_values(values)[0] == [3, 6, 6, 3, 3, 3, 3, 3, 3, 3, 3, 1]
    assert_same(records_of(values))
    result = chain_of().process_batch(records_of(values[1:2]))
    written = [orjson.loads(r.value)["payload"] for r in result.outputs]
    assert [p["op"] for p in written] == ["UPDATE_BEFOR", "UPDATE_AFTER"] * 3
    assert written[2]["before"]["dataColumn"]["id"] == 9 and result.outputs[2].key == b'{"id":"9"}'
    assert result.outputs[3].key == b'{"id":"2"}'


def test_sequences_go_on_across_python_records_and_batches() -> None:
    ddl = _message("QUERY", [BASE], sql="ALTER TABLE t ADD c int")
    values = [GOOD, GOOD, ddl, GOOD, b"not json", GOOD, _message("UPDATE", [BASE], old=[{"v": "a"}])]
    records = records_of(values)
    assert_same(records)
    chain = chain_of()
    first = sequences(chain.process_batch(records))
    assert len(first) == 7 and len(set(first)) == 6  # the DDL is numbered too; the update's halves share one
    again = sequences(chain.process_batch(records_of([GOOD])))
    slow = chain_of()
    slow.native = None
    assert first + again == sequences(slow.process_batch(records_of([*values, GOOD])))

    seen: list[Record] = []

    def python(record: Record, result: ChainResult) -> None:
        seen.append(record)
        chain._one(record, result)

    assert chain.native is not None
    chain.native.run(records, python, ChainResult())
    assert [r.value for r in seen] == [ddl, b"not json"]  # only what the plan cannot convert


def test_a_batch_is_the_plans_up_to_its_first_record_for_python() -> None:
    chain = chain_of()
    assert chain.native is not None
    assert chain.native.convert_values([GOOD, b"x", GOOD])[0] == [1, -1, -1]
    assert chain.encoder._next_seq == 1  # the plan's row, numbered; Python numbers the rest
    assert chain.native.convert_values([GOOD, GOOD])[0] == [1, 1]
    assert chain.encoder._next_seq == 3


def test_the_counter_wraps_at_a_million() -> None:
    fast, slow = chain_of(), chain_of()
    slow.native = None
    for chain in (fast, slow):
        chain.encoder._next_seq = 999_998
    records = records_of([GOOD, GOOD, GOOD])
    assert sequences(fast.process_batch(records)) == sequences(slow.process_batch(records))
    assert fast.encoder._next_seq == slow.encoder._next_seq == 1


def test_unusual_fields() -> None:
    values = [v for odd in UNUSUAL for v in (GOOD, odd)]
    values += [
        _message("INSERT", [dict(reversed(BASE.items()))]),  # another column order
        _message("INSERT", [{k: v for k, v in BASE.items() if k != "i"}]),  # a column missing
        _message("INSERT", [BASE], pkNames=["id", "id"]),
    ]
    assert_same(records_of(values))


def test_malformed_messages_among_good_ones() -> None:
    values = [v for bad in MALFORMED for v in (GOOD, bad)]
    assert_same(records_of(values))


@settings(max_examples=100, deadline=None)
@given(**MUTATIONS)
def test_mutated_messages(at: int, insert: bytes, cut: int) -> None:
    assert_same(records_of([GOOD[:at] + insert + GOOD[at + cut :], GOOD]))


@pytest.mark.parametrize("name", KEEPING)
def test_chains_that_keep_rows(name: str) -> None:
    values = keeping_messages()
    assert assert_same(records_of(values), {}, {}, CHAINS[name]) > 0


@pytest.mark.parametrize(
    "key_type,texts",
    [
        ("bigint(20) unsigned", ["1", "18446744073709551615", "-1", "01"]),
        ("varchar(10)", ["a", "", "ü"]),
        ("enum('a','b')", ["1", "2", "0", "a", "9"]),
        ("decimal(10,2)", ["1.5", "1.50"]),
        ("datetime", ["2020-01-01 00:00:00"]),
    ],
)
def test_keys_of_every_kind(key_type: str, texts: list[str]) -> None:
    types = {"id": key_type, "v": "varchar(5)"}
    values = [_message("INSERT", [{"id": t, "v": "x"}], types=types) for t in texts]
    values.append(_message("DELETE", [{"id": None, "v": "x"}], types=types))
    values.append(_message("UPDATE", [{"id": texts[0], "v": "x"}], old=[{"id": texts[-1]}], types=types))
    assert_same(records_of(values))


def test_corpus_canal_files(corpus: Path) -> None:
    total = count = 0
    for values in corpus_messages(corpus_files(corpus, "canal-json")):
        assert_same(records_of(values))
        count += alone(chain_of(), values)
        total += len(values)
    assert total > 0 and count > total // 2, (count, total)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=8),
    tz=st.sampled_from(ZONES),
    encoder=st.sampled_from(TICDC_ENCODERS),
    shape=st.sampled_from(SHAPES),
)
def test_ticdc_random_streams_are_byte_identical(
    stream: list[ChangeEvent], tz: str, encoder: dict[str, Any], shape: dict[str, Any]
) -> None:
    values = ticdc_stream(stream, tz, encoder)
    zone = {"source_timezone": tz}
    assert_same(records_of(values), zone, {**zone, **shape}, ticdc=True)


def test_ticdc_texts() -> None:
    values = ticdc_text_messages(null_old=False)
    assert assert_same(records_of(values), ticdc=True) > 0


def test_the_arrow_path_leaves_every_record_to_python() -> None:
    """Outside ``convert`` (the backfill's Arrow path) the counter is Python's: no record is the plan's."""
    pa = pytest.importorskip("pyarrow")
    from cdc_smt import _native

    chain = chain_of()
    assert chain.native is not None
    counts, *_ = _native.convert_arrow(chain.native.plan, pa.array([GOOD, GOOD], pa.binary()))
    assert pa.array(counts).to_pylist() == [-1, -1] and chain.encoder._next_seq == 0


# ---------------------------------------------------------------------------
# from debezium-json
# ---------------------------------------------------------------------------


def assert_debezium(
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
) -> int:
    """As :func:`assert_same`, for the Debezium reader (which reads the records' keys)."""
    handled = assert_both_agree("debezium-json", native.DEBEZIUM_TO_DATAWORKS, records, source, sink, transforms, OUT)
    assert_one_per_batch("debezium-json", records, source, sink, transforms)
    return handled


def test_the_debezium_plan_is_chosen_only_for_what_it_writes() -> None:
    plan = chain_of("debezium-json").native
    assert plan is not None and plan.name == native.DEBEZIUM_TO_DATAWORKS and plan.needs_keys
    assert native.DEBEZIUM_TO_DATAWORKS in native.plans_of(OUT)
    for name in KEEPING:
        assert chain_of("debezium-json", transforms=CHAINS[name]).native is not None, name
    for name in CHANGING:  # the row-changing ones re-shape the rows (test_native_dbz_rowxf.py)
        assert chain_of("debezium-json", transforms=CHAINS[name]).native.name == native.DEBEZIUM_TO_DATAWORKS, name


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    options=st.sampled_from(INPUTS),
    tz=st.sampled_from(ZONES),
    sink_tz=st.sampled_from([None, "UTC"]),
    shape=st.sampled_from(SHAPES),
    transforms=st.sampled_from([[], *(CHAINS[n] for n in KEEPING)]),
)
def test_debezium_random_streams_are_byte_identical(
    stream: list[ChangeEvent],
    options: dict[str, Any],
    tz: str,
    sink_tz: str | None,
    shape: dict[str, Any],
    transforms: list[dict[str, Any]],
) -> None:
    records = debezium_records(stream, tz, options)
    assert_debezium(records, {"source_timezone": tz}, {"source_timezone": sink_tz or tz, **shape}, transforms)


def test_debezium_streams_are_mostly_handled_natively() -> None:
    total = count = 0
    zone = {"source_timezone": "Asia/Shanghai"}
    for seed in range(20):
        records = [r for r in debezium_records(_example(seed), "Asia/Shanghai", {}) if r.value is not None]
        total += len(records)
        assert_debezium(records, zone, zone)
        plan = chain_of("debezium-json", zone, zone).native
        assert plan is not None
        count += sum(plan.convert_values([r.value], [r.key])[0][0] >= 0 for r in records)
    assert count >= total * 0.6, (count, total)


@pytest.mark.parametrize("shape", SHAPES)
def test_debezium_regular_events_and_updates_of_the_key(shape: dict[str, Any]) -> None:
    values = [(v, k) for v, k in good() if v is not None]
    values += [
        (event("u", before={**ROW, "id": 2}, after=ROW), KEY),  # the key changed: the halves' keys differ
        (event("u", before={**ROW, "v": None}, after={**ROW, "v": "y"}), KEY),
        (event("d", before=ROW), None),
    ]
    records = keyed(values)
    assert assert_debezium(records, {}, shape) == len(values)
    result = chain_of("debezium-json", {}, shape).process_batch(records[len(values) - 3 : len(values) - 2])
    if shape.get("update_as") != "single":
        assert [r.key for r in result.outputs] == [b'{"id":2}', b'{"id":1}']


def test_debezium_sources_the_writer_leaves_to_python() -> None:
    """An empty ``db`` or ``table`` is written as it is (Canal's are read as null), an ``scn``
    per event, a ``schema`` as ``schemaName``, another connector as its ``dbType``: Python's."""
    values = [(bad, KEY) for bad in DEBEZIUM_MALFORMED]
    values += [
        (event("c", after=ROW, source={**SOURCE, **fields}), KEY)
        for fields in ({"db": ""}, {"table": ""}, {"scn": "123"}, {"scn": 5}, {"schema": "public"},
                       {"connector": "oracle"}, {"connector": None}, {"ts_ms": -1})
    ]  # fmt: skip
    values.append((event("c", after=ROW).replace(b'"db":"shop"', b'"db":"shop","scn":"9"'), KEY))
    assert_debezium(keyed(values))
    plan = chain_of("debezium-json").native
    assert plan is not None
    assert [plan.convert_values([v], [k])[0][0] for v, k in values[-9:]][:4] == [-1, -1, -1, -1]


@pytest.mark.parametrize("name", KEEPING)
def test_debezium_chains_that_keep_rows(name: str) -> None:
    values = [
        (event(op, before=ROW if op in "ud" else None, after=None if op == "d" else ROW, source=source), KEY)
        for op in "cudr"
        for source in (SOURCE, {**SOURCE, "table": "orders"}, {**SOURCE, "db": "other"})
    ]
    assert assert_debezium(keyed(values), {}, {}, CHAINS[name]) > 0
