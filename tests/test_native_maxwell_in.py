"""The native Maxwell reader against the Python path: byte for byte.

maxwell-json -> canal-json and -> debezium-json: the reader types columns from the
JSON values as the Python decoder does without a catalog (booleans, integers,
numbers with a fraction, strings, nulls), takes the before-image of an update as
``data`` overlaid with ``old``, ``ts`` in seconds and the key from
``primary_key_columns``; the Canal writer re-writes each value as Canal text, the
Debezium writer converts it to its Connect representation. Inputs: hypothesis streams
(every MySQL type, written by the Python Maxwell encoder), hand-made values and fields,
the corpus, malformed and mutated messages, the transforms the plans take. Outputs
(values, keys, topics, headers) and dead letters must be equal, and the plan must
handle the regular messages itself.

Maxwell events carry no processing time, so the Canal encoder writes the current time
as ``ts`` on both paths: the comparisons check that it lies within the run and then
compare the rest byte for byte.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
    NATIVE_SUITE,
    ZONES,
    corpus_files,
    corpus_messages,
    dead_letters,
    outputs,
    records_of,
)

pytestmark = NATIVE_SUITE

#: The plan of each (reader, writer).
PLANS = {
    ("maxwell-json", "canal-json"): native.MAXWELL_TO_CANAL,
    ("maxwell-json", "debezium-json"): native.MAXWELL_TO_DEBEZIUM,
    ("ogg-json", "canal-json"): native.OGG_TO_CANAL,
    ("ogg-json", "debezium-json"): native.OGG_TO_DEBEZIUM,
}
#: The writers and their options.
WRITERS: list[tuple[str, dict[str, Any]]] = [
    ("canal-json", {}),
    ("debezium-json", {}),
    ("debezium-json", {"schemas_enable": True, "tombstones_on_delete": False}),
]
WRITER_IDS = ["canal", "debezium", "debezium-schemas"]

#: Transforms over the hand-made tables' columns (id, v, i, f, b): those both plans take
#: (row-keeping), those only the Debezium writer takes, those neither takes.
KEEPING: list[list[dict[str, Any]]] = [
    [{"type": "filter", "tables": [r"shop\.t"], "exclude_ops": ["delete"]}],
    [{"type": "filter", "databases": ["other"]}],
    [{"type": "route", "topic": "cdc.{database}.{table}.{op}"}],
    [
        {"type": "insert_header", "header": "table", "value": "{database}.{table}", "replace": True},
        {"type": "drop_headers", "headers": ["h"]},
    ],
]
DEBEZIUM_ONLY: list[list[dict[str, Any]]] = [
    [{"type": "replace_field", "exclude": ["f"], "renames": {"id": "key_id"}}],
    [{"type": "mask_field", "fields": ["v"], "mode": "hash", "salt": "pepper"}],
    [
        {
            "type": "insert_field",
            "static": {"_s": "east"},
            "metadata": {"_es": "source_ts_ms", "_ts": "processing_ts_ms"},
        }
    ],
    [{"type": "value_to_key", "fields": ["i"]}],
    [{"type": "replace_field", "exclude": ["nope"]}],  # a column the tables lack: Python's
]
PYTHON_ONLY: list[dict[str, Any]] = [{"type": "filter", "condition": "after.i > 1"}]

_CANAL_TS = re.compile(rb',"ts":(-?\d+),"type":')


def make_chain(
    decoder: str, encoder: str, source: dict[str, Any], sink: dict[str, Any], transforms: list[dict[str, Any]]
) -> Chain:
    return Chain(get_codec(decoder, source), get_codec(encoder, sink), build_transforms(transforms), "all")


def _timed_outputs(result: ChainResult, start: int, end: int) -> list[tuple]:
    """The outputs with Canal ``ts`` values inside ``[start, end]`` (the run's current
    time, written for events without a processing time) as 0."""

    def clock(m: re.Match[bytes]) -> bytes:
        return b',"ts":0,"type":' if start <= int(m.group(1)) <= end else m.group(0)

    out = []
    for value, *rest in outputs(result):
        out.append((_CANAL_TS.sub(clock, value, count=1) if value is not None else None, *rest))
    return out


def assert_same(
    decoder: str,
    encoder: str,
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
) -> int:
    """Both paths give the same records, dead letters and missing-column counts; returns
    how many records the plan handled itself."""
    fast = make_chain(decoder, encoder, source or {}, sink or {}, transforms or [])
    slow = make_chain(decoder, encoder, source or {}, sink or {}, transforms or [])
    assert fast.native is not None and fast.native.name == PLANS[(decoder, encoder)]
    return assert_timed_agreement(fast, slow, records)


def assert_timed_agreement(fast: Chain, slow: Chain, records: list[Record]) -> int:
    """``fast`` (its native plan) and ``slow`` (run on the Python path) give the same records
    (Canal's current-time ``ts`` compared by the run's time window: the plan writes it too),
    dead letters and missing-column counts; returns how many records the plan handled itself."""
    assert fast.native is not None
    slow.native = None
    start = int(time.time() * 1000)
    native_result, python_result = fast.process_batch(records), slow.process_batch(records)
    end = int(time.time() * 1000)
    assert _timed_outputs(native_result, start, end) == _timed_outputs(python_result, start, end)
    assert dead_letters(native_result) == dead_letters(python_result)
    assert [t.missing_counts for t in fast.transforms] == [t.missing_counts for t in slow.transforms]
    fast.native.plan.clear()
    counts = fast.native.convert_values([r.value for r in records])[0]
    return sum(n >= 0 for n in counts)


def encoded(fmt: str, events: list[ChangeEvent], tz: str) -> list[bytes]:
    """The events as ``fmt``'s Python encoder writes them."""
    codec = get_codec(fmt, {"source_timezone": tz})
    out: list[bytes] = []
    for event in events:
        event.timezone = tz
        out.extend(r.value for r in codec.encode(event) if r.value is not None)
    return out


def dumps(message: dict[str, Any]) -> bytes:
    """JSON of a hand-made message (integers past 64 bits as their digits)."""
    from cdc_smt.transforms.formats._schemaless import SchemalessJson

    return SchemalessJson.dumps(message)


# ---------------------------------------------------------------------------
# the plan
# ---------------------------------------------------------------------------


def test_the_plans_are_chosen_only_for_what_they_read_and_write() -> None:
    for (decoder, encoder), name in PLANS.items():
        assert make_chain(decoder, encoder, {}, {}, []).native.name == name
        assert name in native.status()["plans"] and name in native.plans_of(decoder)
        for transforms in KEEPING:
            assert make_chain(decoder, encoder, {}, {}, transforms).native is not None
        for transforms in DEBEZIUM_ONLY:
            assert (make_chain(decoder, encoder, {}, {}, transforms).native is not None) == (encoder != "canal-json")
        assert make_chain(decoder, encoder, {}, {}, PYTHON_ONLY).native is None
        assert make_chain(decoder, "canal-json", {}, {"batch": "transaction"}, []).native is None
        plan = make_chain(decoder, encoder, {}, {}, []).native
        assert not plan.needs_keys
    assert make_chain("maxwell-json", "ogg-json", {}, {}, []).native is None


# ---------------------------------------------------------------------------
# generated streams
# ---------------------------------------------------------------------------


def streams(test: Callable[..., None]) -> Callable[..., None]:
    """``test(stream, tz, writer, transforms)`` over hypothesis streams (every MySQL type)."""
    return settings(
        max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
    )(
        given(
            stream=change_streams(max_events=10),
            tz=st.sampled_from(ZONES),
            writer=st.sampled_from(WRITERS),
            transforms=st.sampled_from([[], *KEEPING]),
        )(test)
    )


def check_stream(
    fmt: str, stream: list[ChangeEvent], tz: str, writer: tuple[str, dict[str, Any]], transforms: list[dict[str, Any]]
) -> None:
    """The stream as ``fmt``'s Python encoder writes it, through both paths."""
    encoder, sink = writer
    assert_same(fmt, encoder, records_of(encoded(fmt, stream, tz)), {"source_timezone": tz}, sink, transforms)


@streams
def test_random_streams_are_byte_identical(
    stream: list[ChangeEvent], tz: str, writer: tuple[str, dict[str, Any]], transforms: list[dict[str, Any]]
) -> None:
    check_stream("maxwell-json", stream, tz, writer, transforms)


# ---------------------------------------------------------------------------
# hand-made messages
# ---------------------------------------------------------------------------

ROW = {"id": 1, "v": "x", "i": 7, "f": 1.5, "b": True}


def maxwell(kind: str = "insert", data: Any = ROW, **fields: Any) -> bytes:
    message = {"database": "shop", "table": "t", "type": kind, "ts": 1_700_000_000, "xid": 7, "commit": True}
    message["data"] = data
    message.update(fields)
    message.setdefault("primary_key_columns", ["id"])
    return dumps(message)


#: Regular messages: the plan converts every one of them.
REGULAR = [
    maxwell(),
    maxwell("update", old={"v": "y", "i": 6}),
    maxwell("update", old={"v": "x"}),  # an unchanged "old" value
    maxwell("update", old={}),
    maxwell("update", old=None),
    maxwell("delete"),
    maxwell(data={**ROW, "v": None, "f": None}),
    maxwell("update", data={**ROW, "v": None}, old={"v": "y"}),  # the kind from old
    maxwell(data={**ROW, "v": 'é\n"\\ \u2028 \U0001f600', "i": -(1 << 63), "f": -0.0}),
    maxwell(data={**ROW, "i": (1 << 63) - 1, "f": 1234567.125, "b": False}),
    maxwell(primary_key_columns=[]),
    maxwell(primary_key_columns=None),
    maxwell(primary_key_columns=["id", "v"]),
    maxwell(xid="abc", xoffset=3, primary_key=[1], extra={"a": [1, 2.5]}),
    maxwell(ts=None),
    maxwell(ts=-5),
]
#: Numbers the Debezium writer converts and the Canal writer leaves to Python (DOUBLE
#: text outside Java's plain range, exponents).
NUMBERS = [
    maxwell(data={**ROW, "f": 1e300}),
    maxwell(data={**ROW, "f": 1e-7}),
    b'{"database":"shop","table":"t","type":"insert","ts":1,"data":{"id":1,"f":0.1000,"g":1.10,"h":4500000001.512456777,'
    b'"e":1E5,"z":0e-400,"u":"\\u00e9\\ud83d\\ude00"},"primary_key_columns":["id"]}',
]

#: Unusual messages: Python's (or the plan's where it is certain), with Python's answer.
UNUSUAL = [
    maxwell("bootstrap-insert"),
    maxwell("bootstrap-start", data=None),
    maxwell("table-create", data=None, sql="create table t (id int)", **{"def": {"columns": []}}),
    maxwell("nope"),
    maxwell("delete", data=None, old=ROW),  # TiCDC's delete in old
    maxwell("insert", old={"v": "y"}),
    maxwell("delete", old={"v": "y"}),
    maxwell("update", old={"extra": 1}),  # a column only in old
    maxwell("update", old={"i": "seven"}),  # kinds differ
    maxwell("update", old={"i": 1.5}),  # bigint vs double
    maxwell(data={**ROW, "i": 1 << 63}),
    maxwell(data={**ROW, "i": 1 << 64}),
    maxwell(data={**ROW, "j": {"a": 1}}),
    maxwell(data={**ROW, "s": ["a", "b"]}),
    maxwell(data={**ROW, "f": 1.0}),  # a float orjson writes as 1.0
    maxwell(data={}),
    maxwell(data=None),
    maxwell(data=[1]),
    maxwell(data="x"),
    maxwell(old=[1]),
    maxwell(ts=1.5),
    maxwell(ts="1"),
    maxwell(ts=True),
    maxwell(ts=(1 << 62)),
    maxwell(xid=True),
    maxwell(xid=1.5),
    maxwell(xid=[1]),
    maxwell(primary_key_columns=[1]),
    maxwell(primary_key_columns="id"),
    maxwell(primary_key_columns=["nope"]),
    maxwell(primary_key_columns=["id", "id"]),
    maxwell(position="binlog.000001:4"),
    maxwell(position="nope"),
    maxwell(server_id=1),
    maxwell(gtid="x:1"),
    maxwell(encrypted={"iv": "x"}),
    maxwell(database=None),
    maxwell(database=1),
    maxwell(table=None),
    maxwell(type=None),
    b'{"database":"shop","table":"t","type":"insert","ts":1,"data":{"id":1,"z":1e-400}}',
    b'{"database":"shop","table":"t","type":"insert","ts":1,"data":{"id":1,"z":1e400}}',
    b'{"database":"shop","table":"t","type":"insert","ts":1,"data":{"id":1,"id":2}}',
    b'{"database":"shop","table":"t","type":"insert","type":"delete","ts":1,"data":{"id":1}}',
    b'{"database":"shop","table":"t","type":"insert","ts":1,"data":{"id":1},"extra":[1e999]}',
    b'{"database":"shop","table":"t","type":"insert","ts":1,"data":{"id":1,"v":"\\ud800"}}',
    b'{"database":"shop","table":"t","type":"insert","ts":1,"data":{"id":1}',
    b'[{"database":"shop"}]',
    b"",
    b"\xff",
    b"  ",
]


def check_regular(fmt: str, regular: list[bytes], writer: tuple[str, dict[str, Any]]) -> None:
    """The plan converts every regular message itself, as Python does."""
    assert assert_same(fmt, writer[0], records_of(regular), {}, writer[1]) == len(regular)


@pytest.mark.parametrize("writer", WRITERS, ids=WRITER_IDS)
def test_regular_messages_are_all_handled_natively(writer: tuple[str, dict[str, Any]]) -> None:
    check_regular("maxwell-json", REGULAR, writer)
    encoder, sink = writer
    numbers = assert_same("maxwell-json", encoder, records_of(NUMBERS), {}, sink)
    assert numbers == (0 if encoder == "canal-json" else len(NUMBERS))


def check_unusual(fmt: str, good: bytes, unusual: list[bytes], writer: tuple[str, dict[str, Any]]) -> None:
    """Each unusual message after a good one: the plan handles the good ones at least."""
    values = [v for bad in unusual for v in (good, bad)]
    assert assert_same(fmt, writer[0], records_of(values), {}, writer[1]) >= len(unusual)


@pytest.mark.parametrize("writer", WRITERS, ids=WRITER_IDS)
def test_unusual_messages_among_regular_ones(writer: tuple[str, dict[str, Any]]) -> None:
    check_unusual("maxwell-json", REGULAR[0], UNUSUAL, writer)


def transform_cases(test: Callable[..., None]) -> Callable[..., None]:
    """``test(writer, transforms, tz)`` for each writer, the transforms the plans take, two zones."""
    test = pytest.mark.parametrize("tz", ["UTC", "Asia/Shanghai"])(test)
    test = pytest.mark.parametrize("writer", WRITERS, ids=WRITER_IDS)(test)
    return pytest.mark.parametrize("transforms", [*KEEPING, *DEBEZIUM_ONLY], ids=lambda t: t[0]["type"])(test)


def check_transforms(
    fmt: str,
    messages: list[bytes],
    other: list[bytes],
    writer: tuple[str, dict[str, Any]],
    transforms: list[dict[str, Any]],
    tz: str,
) -> None:
    """``messages`` of the table the transforms name and ``other`` ones of another database."""
    encoder, sink = writer
    if encoder == "canal-json" and transforms in DEBEZIUM_ONLY:
        pytest.skip("the Canal writer keeps rows as they are: Python's")
    zone = {"source_timezone": tz}
    assert_same(fmt, encoder, records_of(messages + other), zone, {**sink, **zone}, transforms)


@transform_cases
def test_transforms(writer: tuple[str, dict[str, Any]], transforms: list[dict[str, Any]], tz: str) -> None:
    other = [v.replace(b'"database":"shop"', b'"database":"other"') for v in REGULAR[:6]]
    check_transforms("maxwell-json", REGULAR, other, writer, transforms, tz)


def mutations(good: bytes) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """``test(at, insert, cut, writer)``: ``good`` with bytes inserted ``at`` a place, replacing ``cut``."""
    return lambda test: settings(max_examples=150, deadline=None)(
        given(
            at=st.integers(0, len(good) - 1),
            insert=st.binary(max_size=3)
            | st.sampled_from([b'"', b"\\", b"{", b"]", b",", b"null", b"1e999", b"\xc3", b"T", b"."]),
            cut=st.integers(0, 3),
            writer=st.sampled_from(WRITERS),
        )(test)
    )


def check_mutated(fmt: str, good: bytes, at: int, insert: bytes, cut: int, writer: tuple[str, dict[str, Any]]) -> None:
    """Bytes flipped anywhere in a regular message: never a crash, always Python's answer."""
    assert_same(fmt, writer[0], records_of([good[:at] + insert + good[at + cut :], good]), {}, writer[1])


@mutations(REGULAR[1])
def test_mutated_messages(at: int, insert: bytes, cut: int, writer: tuple[str, dict[str, Any]]) -> None:
    check_mutated("maxwell-json", REGULAR[1], at, insert, cut, writer)


def check_corpus(corpus: Path, fmt: str, writer: tuple[str, dict[str, Any]]) -> None:
    """The corpus's ``fmt`` messages through both paths; the plan handles most of them."""
    total = handled = 0
    for values in corpus_messages(corpus_files(corpus, fmt)):
        handled += assert_same(fmt, writer[0], records_of(values), {}, writer[1])
        total += len(values)
    assert total and handled >= total // 2, (handled, total)


@pytest.mark.parametrize("writer", WRITERS, ids=WRITER_IDS)
def test_corpus(corpus: Path, writer: tuple[str, dict[str, Any]]) -> None:
    check_corpus(corpus, "maxwell-json", writer)


def test_max_message_bytes_is_the_decoders() -> None:
    for encoder, sink in WRITERS:
        assert assert_same("maxwell-json", encoder, records_of(REGULAR), {"max_message_bytes": 150}, sink) < len(
            REGULAR
        )
