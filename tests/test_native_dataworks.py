"""The native DataWorks reader against the Python path: byte for byte, state for state.

dataworks-json -> debezium-json and -> canal-json: the reader types the declared
columns as the Python decoder does without a catalog (the six types; a DOUBLE with a
string value as ``decimal(65, scale)``), converts DATE epoch milliseconds to the wall
clock in ``source_timezone`` and BYTES from base64, and pairs an ``UPDATE_BEFOR`` with the
``UPDATE_AFTER`` right after it in the same batch. Whatever would touch the codec's
pending half is Python's, and the Python state after every batch must be the Python
path's. Inputs: hypothesis streams (every MySQL type, written by the Python DataWorks
encoder, split and single updates, lone halves, cut into batches anywhere), hand-made
messages, the corpus, malformed and mutated messages; through ``Chain.process_batch``,
``Chain.process`` and the worker's ``NativePlan.convert_values``.
"""

from __future__ import annotations

import time
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
from tests.test_native import NATIVE_SUITE, ZONES, corpus_files, corpus_messages, dead_letters, outputs, records_of
from tests.test_native_maxwell_in import _timed_outputs

pytestmark = NATIVE_SUITE

PLANS = {"debezium-json": native.DATAWORKS_TO_DEBEZIUM, "canal-json": native.DATAWORKS_TO_CANAL}
WRITERS: list[tuple[str, dict[str, Any]]] = [
    ("canal-json", {}),
    ("debezium-json", {}),
    ("debezium-json", {"schemas_enable": True, "tombstones_on_delete": False}),
]
#: Transforms both plans take (they keep rows as they are).
KEEPING: list[list[dict[str, Any]]] = [
    [{"type": "filter", "tables": [r"shop\.t"], "exclude_ops": ["delete"]}],
    [{"type": "route", "topic": "cdc.{database}.{table}.{op}"}],
    [{"type": "insert_header", "header": "table", "value": "{database}.{table}", "replace": True}],
]
#: Transforms only the Debezium plan takes.
DEBEZIUM_ONLY: list[dict[str, Any]] = [{"type": "replace_field", "exclude": ["v"], "renames": {"id": "key_id"}}]


def make_chain(encoder: str, source: dict[str, Any], sink: dict[str, Any], transforms: list[dict[str, Any]]) -> Chain:
    return Chain(get_codec("dataworks-json", source), get_codec(encoder, sink), build_transforms(transforms), "all")


def twins(
    encoder: str,
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
) -> tuple[Chain, Chain]:
    """(native chain, Python chain)."""
    fast = make_chain(encoder, source or {}, sink or {}, transforms or [])
    slow = make_chain(encoder, source or {}, sink or {}, transforms or [])
    assert fast.native is not None and fast.native.name == PLANS[encoder]
    slow.native = None
    return fast, slow


def assert_same(
    encoder: str,
    batches: list[list[Record]],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
) -> int:
    """Both paths give the same records and dead letters batch by batch, and hold the same
    pending half after each batch (and after the end of the stream); returns how many
    records the plan converted itself (the first batch, from a fresh chain)."""
    fast, slow = twins(encoder, source, sink, transforms)
    for batch in batches:
        start = int(time.time() * 1000)
        native_result, python_result = fast.process_batch(batch), slow.process_batch(batch)
        end = int(time.time() * 1000)
        assert _timed_outputs(native_result, start, end) == _timed_outputs(python_result, start, end)
        assert dead_letters(native_result) == dead_letters(python_result)
        assert fast.state() == slow.state()
    assert outputs(fast.flush()) == outputs(slow.flush())
    counts = twins(encoder, source, sink, transforms)[0].native.convert_values([r.value for r in batches[0]])[0]
    return sum(n >= 0 for n in counts)


def worker_outputs(chain: Chain, batch: list[Record]) -> list[tuple]:
    """The worker's way: ``convert_values`` over the batch, ``Chain.process`` for the records
    it leaves to Python, the outputs placed at their records (value, key, variant's topic)."""
    plan = chain.native
    counts, values, keys, variants = plan.convert_values([r.value for r in batch])
    out: list[tuple] = []
    start = 0
    for record, n in zip(batch, counts, strict=True):
        if n < 0:
            out.extend((r.value, r.key, r.topic) for r in chain.process(record).outputs)
            continue
        out.extend((values[i], keys[i], plan.variants[variants[i]][0]) for i in range(start, start + n))
        start += n
    return out


def encoded(events: list[ChangeEvent], tz: str, update_as: str) -> list[bytes]:
    """The events as the Python DataWorks encoder writes them."""
    codec = get_codec("dataworks-json", {"source_timezone": tz, "update_as": update_as})
    out: list[bytes] = []
    for event in events:
        event.timezone = tz
        out.extend(r.value for r in codec.encode(event) if r.value is not None)
    return out


def cut(records: list[Record], at: list[int]) -> list[list[Record]]:
    """``records`` as batches cut at the given places."""
    places = sorted({0, len(records), *(min(a, len(records)) for a in at)})
    return [records[a:b] for a, b in zip(places, places[1:], strict=False) if b > a] or [[]]


# ---------------------------------------------------------------------------
# hand-made messages
# ---------------------------------------------------------------------------

COLUMNS = [
    {"name": "id", "type": "LONG"},
    {"name": "v", "type": "STRING"},
    {"name": "d", "type": "DOUBLE"},
    {"name": "m", "type": "DOUBLE"},
    {"name": "t", "type": "DATE"},
    {"name": "b", "type": "BYTES"},
    {"name": "ok", "type": "BOOLEAN"},
]
ROW = {"id": 1, "v": "x", "d": 1.5, "m": "12.50", "t": 1_700_000_000_123, "b": "AAEC/w==", "ok": True}
ROW2 = {**ROW, "v": "y é\n\U0001f600", "m": "3.125", "t": -1000, "ok": False}


def dw(op: str, before: Any = None, after: Any = None, seq: Any = "1700000000000000001", **fields: Any) -> bytes:
    schema = {
        "dataColumn": fields.pop("columns", COLUMNS),
        "primaryKey": fields.pop("pk", ["id"]),
        "source": fields.pop("source", {"dbType": "MySQL", "dbName": "shop", "tableName": "t"}),
    }
    payload = {
        "before": None if before is None else {"dataColumn": before},
        "after": None if after is None else {"dataColumn": after},
        "sequenceId": seq,
        "timestamp": fields.pop("timestamp", {"eventTime": 1_700_000_000_000, "systemTime": 1_700_000_000_500}),
        "op": op,
    }
    payload.update(fields.pop("payload", {}))
    message = {"schema": schema, "payload": payload, "version": "0.0.1", **fields}
    return orjson.dumps(message)


#: Messages the plan converts itself (a split update's two halves adjacent).
REGULAR = [
    dw("INSERT", after=ROW),
    dw("UPDATE_BEFOR", before=ROW),
    dw("UPDATE_AFTER", after=ROW2),
    dw("UPDATE_AFTER", before=ROW, after=ROW2),  # "one record per update"
    dw("DELETE", before=ROW2),
    dw("INSERT", after={**ROW, "v": None, "d": None, "m": None, "t": None, "b": None, "ok": None}),
    dw("INSERT", after={**ROW, "id": -(1 << 63), "d": -0.0, "m": "-0.5", "b": ""}, seq=17),
    dw("INSERT", after={**ROW, "id": (1 << 63) - 1, "m": "1" * 35 + "." + "9" * 30}),
    dw("INSERT", after=ROW, pk=[], source={"dbType": "MySQL", "dbName": "shop", "schemaName": "s", "tableName": "t"}),
    dw("INSERT", after=ROW, pk=["id", "v"], source={"dbName": "shop", "tableName": "u"}),
]
#: Messages (or pairs) whose pending state or values are Python's.
UNUSUAL = [
    dw("UPDATE_BEFOR", before=ROW),  # a lone before-half: released by the next message
    dw("INSERT", after=ROW),
    dw("UPDATE_AFTER", after=ROW2),  # a lone after-half
    dw("UPDATE_BEFOR", before=ROW, seq="7"),
    dw("UPDATE_AFTER", after=ROW2, seq="8"),  # another sequence: two lone halves
    dw("UPDATE_BEFOR", before=ROW, seq=None),
    dw("UPDATE_AFTER", after=ROW2, seq=None),
    dw("UPDATE_BEFOR", before=ROW, seq=5),
    dw("UPDATE_AFTER", after=ROW2, seq="5"),  # str(5) == "5": a pair (Python's)
    dw("UPDATE_BEFOR", before=ROW),
    dw("UPDATE_AFTER", after=ROW2, source={"dbName": "shop", "tableName": "other"}),  # another table
    dw("UPDATE_BEFOR", before=ROW),
    dw("UPDATE_AFTER", after={**ROW2, "d": "2.5"}),  # DOUBLE typed by the other half's text
    dw("UPDATE_BEFOR", before=ROW),
    b"not json",  # the half stays pending across a broken message
    dw("UPDATE_AFTER", after=ROW2),
    dw("UPDATE_BEFOR", before=ROW),
    dw("TRANSACTION_END", seq=None),
    dw("INSERT", after={**ROW, "d": 3}),  # an integer in a DOUBLE column
    dw("INSERT", after={**ROW, "m": "1e5"}),
    dw("INSERT", after={**ROW, "m": " 1.5"}),
    dw("INSERT", after={**ROW, "m": "00.5"}),
    dw("INSERT", after={**ROW, "m": "1_0"}),
    dw("INSERT", after={**ROW, "m": "1." + "0" * 31}),
    dw("INSERT", after={**ROW, "m": "NaN"}),
    dw("INSERT", after={**ROW, "b": "AB="}),
    dw("INSERT", after={**ROW, "b": "AB=="}),  # non-canonical trailing bits
    dw("INSERT", after={**ROW, "t": 1 << 60}),
    dw("INSERT", after={**ROW, "t": -62_135_596_800_001}),
    dw("INSERT", after={**ROW, "id": True}),
    dw("INSERT", after={**ROW, "id": 1.0}),
    dw("INSERT", after={**ROW, "v": 5}),
    dw("INSERT", after={**ROW, "ok": 1}),
    dw("INSERT", after={**ROW, "x": 1}),  # an undeclared column
    dw("INSERT", after={k: v for k, v in ROW.items() if k != "v"}),
    dw("INSERT", after=dict(reversed(ROW.items()))),
    dw("INSERT", after=ROW, columns=[*COLUMNS, {"name": "id", "type": "LONG"}]),
    dw("INSERT", after=ROW, columns=[*COLUMNS[:-1], {"name": "ok", "type": "BIT"}]),
    dw("INSERT", after=ROW, columns=None),
    dw("INSERT", after=ROW, pk=[1]),
    dw("INSERT", after=ROW, timestamp={"eventTime": -1, "systemTime": 5}),
    dw("INSERT", after=ROW, timestamp={"eventTime": 5}),  # no systemTime: Canal's ts is the current time
    dw("INSERT", after=ROW, timestamp=None),
    dw("INSERT", after=ROW, timestamp={"eventTime": 5, "systemTime": 6, "checkpointTime": "x"}),
    dw("INSERT", after=ROW, payload={"scn": 5.5}),
    dw("INSERT", after=ROW, payload={"scn": "77", "ddl": None, "extra": [1, {"a": 2}]}),
    dw("INSERT", before=ROW, after=ROW),
    dw("DELETE", before=ROW, after=ROW),
    dw("INSERT", after=None),
    dw("DELETE", before=None),
    dw("UPDATE_BEFOR", before=ROW, after=ROW2),
    dw("UPDATE_BEFOR", before=None),
    dw("CREATE", seq=None, payload={"ddl": {"text": "create table t (id int)"}}),
    dw("NOPE", after=ROW),
    dw("INSERT", after=ROW, seq=[1]),
    dw("INSERT", after=ROW, seq=1.5),
    dw("INSERT", after=ROW, source={"dbName": 5, "tableName": "t"}),
    dw("UPDATE_BEFOR", before=ROW),
    dw("UPDATE_AFTER", after=ROW2, seq="SEQ").replace(b'"SEQ"', str(1 << 70).encode()),
    dw("INSERT", after=ROW).replace(b'"op"', b'"op":"DELETE","op"'),  # a repeated field: Python's
    dw("INSERT", after=ROW)[:-5],  # truncated
    b'{"schema":null,"payload":{"op":"INSERT","after":{"dataColumn":{"id":1}}}}',
    b'{"payload":{"op":"UPDATE_BEFOR"}}',
    b"[]",
    b"",
    None,
    dw("UPDATE_BEFOR", before=ROW),  # pending at the end of the stream
]


def test_the_plans_are_chosen_only_for_what_they_read_and_write() -> None:
    for encoder, name in PLANS.items():
        chain = make_chain(encoder, {}, {}, [])
        assert chain.native is not None and chain.native.name == name
        assert name in native.status()["plans"] and name in native.plans_of("dataworks-json")
        assert not chain.native.needs_keys
        for transforms in KEEPING:
            assert make_chain(encoder, {}, {}, transforms).native is not None
        assert (make_chain(encoder, {}, {}, DEBEZIUM_ONLY).native is not None) == (encoder == "debezium-json")
        assert make_chain(encoder, {}, {}, [{"type": "filter", "condition": "after.id > 1"}]).native is None
    assert make_chain("canal-json", {}, {"batch": "transaction"}, []).native is None
    assert make_chain("maxwell-json", {}, {}, []).native is None


@pytest.mark.parametrize(("encoder", "sink"), WRITERS, ids=["canal", "debezium", "debezium-schemas"])
@pytest.mark.parametrize("tz", ["UTC", "Asia/Shanghai", "America/New_York"])
def test_regular_messages_are_the_plans(encoder: str, sink: dict[str, Any], tz: str) -> None:
    records = records_of(REGULAR)
    handled = assert_same(encoder, [records], {"source_timezone": tz}, sink)
    assert handled == len(REGULAR)


@pytest.mark.parametrize(("encoder", "sink"), WRITERS, ids=["canal", "debezium", "debezium-schemas"])
def test_unusual_messages_are_pythons(encoder: str, sink: dict[str, Any]) -> None:
    records = records_of([*REGULAR, *UNUSUAL, *REGULAR])
    assert_same(encoder, [records], {}, sink)
    for at in range(0, len(records), 7):  # halves and held state across batch boundaries
        assert_same(encoder, cut(records, [at, at + 3, at + 20]), {}, sink)


@pytest.mark.parametrize("encoder", list(PLANS))
def test_one_record_at_a_time_and_the_workers_batches(encoder: str) -> None:
    # (inserts without a processing time left out: Canal's ts is then the current time)
    steady = [v for v in [*REGULAR, *UNUSUAL, *REGULAR] if not v or b"systemTime" in v or b'"INSERT"' not in v]
    records = records_of(steady)
    fast, slow = twins(encoder)
    for record in records:
        native_result, python_result = fast.process(record), slow.process(record)
        assert outputs(native_result) == outputs(python_result)
        assert dead_letters(native_result) == dead_letters(python_result)
        assert fast.state() == slow.state()
    for at in (1, 2, 9, 30):
        fast, slow = twins(encoder)
        for batch in cut(records, list(range(at, len(records), at))):
            expected = [(r.value, r.key, r.topic) for r in slow.process_batch(batch).outputs]
            assert worker_outputs(fast, batch) == expected
            assert fast.state() == slow.state()


@pytest.mark.parametrize("encoder", list(PLANS))
def test_a_restored_pending_half(encoder: str) -> None:
    """A half held by the previous run (restored state) pairs with the first record in Python."""
    first, second = records_of([dw("UPDATE_BEFOR", before=ROW), dw("UPDATE_AFTER", after=ROW2)])
    python = twins(encoder)[1]
    python.process_batch([first])
    state = python.state()
    fast, slow = twins(encoder)
    fast.restore_state(state)
    slow.restore_state(state)
    batch = [second, *records_of(REGULAR)]
    assert outputs(fast.process_batch(batch)) == outputs(slow.process_batch(batch))
    assert fast.state() == slow.state()


@pytest.mark.parametrize("encoder", list(PLANS))
@pytest.mark.parametrize("transforms", [*KEEPING, DEBEZIUM_ONLY])
def test_transforms(encoder: str, transforms: list[dict[str, Any]]) -> None:
    if encoder == "canal-json" and transforms is DEBEZIUM_ONLY:
        return
    records = records_of([*REGULAR, *UNUSUAL])
    assert_same(encoder, [records], {}, {}, transforms)


# ---------------------------------------------------------------------------
# generated streams
# ---------------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    tz=st.sampled_from(ZONES),
    writer=st.sampled_from(WRITERS),
    update_as=st.sampled_from(["split", "single"]),
    at=st.lists(st.integers(0, 20), max_size=3),
    drop=st.lists(st.integers(0, 20), max_size=2),
)
def test_random_streams_are_byte_identical(
    stream: list[ChangeEvent],
    tz: str,
    writer: tuple[str, dict[str, Any]],
    update_as: str,
    at: list[int],
    drop: list[int],
) -> None:
    """Streams of every MySQL type in both update styles, some halves dropped (lone halves),
    cut into batches anywhere (halves across batch boundaries)."""
    values = encoded(stream, tz, update_as)
    values = [v for i, v in enumerate(values) if i not in drop]
    encoder, sink = writer
    assert_same(encoder, cut(records_of(values), at), {"source_timezone": tz}, sink)


MUTATED = dw("UPDATE_BEFOR", before=ROW)


@settings(max_examples=200, deadline=None)
@given(
    at=st.integers(0, len(MUTATED) - 1),
    insert=st.binary(max_size=3) | st.sampled_from([b'"', b"\\", b"{", b"]", b",", b"null", b"1e999", b"\xc3"]),
    length=st.integers(0, 3),
    encoder=st.sampled_from(list(PLANS)),
)
def test_mutated_messages(at: int, insert: bytes, length: int, encoder: str) -> None:
    """Bytes flipped anywhere in a before-half: never a crash, always Python's answer and state."""
    bad = MUTATED[:at] + insert + MUTATED[at + length :]
    assert_same(encoder, [records_of([bad, dw("UPDATE_AFTER", after=ROW2), REGULAR[0]])])


# ---------------------------------------------------------------------------
# the corpus
# ---------------------------------------------------------------------------


def test_corpus_dataworks_files(corpus: Path) -> None:
    values = [v for messages in corpus_messages(corpus_files(corpus, "dataworks-json")) for v in messages]
    assert values
    handled = 0
    for encoder, sink in WRITERS:
        handled += assert_same(encoder, [records_of(values)], {}, sink)
        assert_same(encoder, [records_of([v]) for v in values], {}, sink)
    assert handled > 0


def test_tolerance_none_halts_on_the_same_dead_letter() -> None:
    from cdc_smt.transforms.chain import ChainHalted

    values = [REGULAR[0], dw("UPDATE_BEFOR", before=ROW), b"broken", REGULAR[0]]
    for encoder in PLANS:
        halts = []
        for chain in twins(encoder):
            chain.tolerance = "none"
            with pytest.raises(ChainHalted) as halt:
                chain.process_batch(records_of(values))
            halts.append(ChainResult(dead_letters=[halt.value.dead_letter]))
        assert dead_letters(halts[0]) == dead_letters(halts[1])
