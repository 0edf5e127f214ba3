"""The worker's batch path (``Converter.convert`` with a native plan) against its
per-record path (the same chain on the Python path, ``CDC_SMT_NATIVE=0``).

With a native plan the worker hands a fetched batch's values to the plan in one
call, hashes the output keys to partitions in one native call, and sends the
records the plan leaves to Python through ``chain.process`` at their place in
the batch. Every test converts the same fetched batches both ways and asserts
the same output rows per (topic, partition): key, value, timestamp, headers
and order, dead-letter records included, and the same halt with tolerance
``none``. Also: the native murmur2 partitioner against the Python reference
(``connector.kafka.partitioner.partition_for``).
"""

from __future__ import annotations

import os
from collections import namedtuple
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.codec import canal_messages
from cdc_smt.connector.jobconfig import load_job
from cdc_smt.connector.kafka.partitioner import murmur2, partition_for, partitions
from cdc_smt.connector.worker.pipeline import Converter
from cdc_smt.transforms import native
from cdc_smt.transforms.chain import Chain, ChainHalted
from cdc_smt.transforms.config import build_transforms
from cdc_smt.transforms.formats import get_codec
from tests.test_native import GOOD, MALFORMED, REQUIRED
from tests.test_native_transforms import CHAINS, REGULAR, TO_PYTHON, edge_messages

pytestmark = pytest.mark.skipif(
    not native.available() and not REQUIRED, reason="the native extension is not built (no Rust toolchain at install)"
)

#: What the converter reads of an aiokafka ``ConsumerRecord``.
Msg = namedtuple("Msg", "topic partition offset timestamp key value headers")

SOURCE, SINK, DLQ, PARTITION = "in", "out", "dlq", 3


@contextmanager
def core(on: bool) -> Iterator[None]:
    """``CDC_SMT_NATIVE`` for building a chain and converting with it (the partitioner
    reads it per batch too)."""
    before = os.environ.get(native.ENV)
    os.environ[native.ENV] = "1" if on else "0"
    try:
        yield
    finally:
        if before is None:
            del os.environ[native.ENV]
        else:
            os.environ[native.ENV] = before


def job(tolerance: str) -> Any:
    doc: dict[str, Any] = {
        "id": "job-native",
        "kafka": {"bootstrap_servers": "127.0.0.1:9092"},
        "source": {"topics": [SOURCE], "format": "canal-json"},
        "sink": {"topic": SINK, "format": "debezium-json"},
        "errors": {"tolerance": tolerance, **({"dead_letter_topic": DLQ} if tolerance == "all" else {})},
    }
    return load_job(doc)


def chain(transforms: list[dict[str, Any]], tolerance: str, sink: dict[str, Any], on: bool) -> Chain:
    with core(on):
        c = Chain(
            get_codec("canal-json", {}), get_codec("debezium-json", sink), build_transforms(transforms), tolerance
        )
    assert (c.native is not None) == on, f"native plan {'missing' if on else 'present'} for {transforms}"
    return c


def fetched(values: list[bytes | None], start: int = 0) -> list[Msg]:
    """Messages as a fetch returns them: keys (some null), timestamps (some missing: -1),
    headers on some."""
    out = []
    for i, v in enumerate(values, start):
        key = None if i % 5 == 4 else b'{"id":%d}' % i
        ts = -1 if i % 7 == 6 else 1_700_000_000_000 + i
        headers = [("h", str(i).encode()), ("trace", b"t")] if i % 3 == 1 else []
        out.append(Msg(SOURCE, PARTITION, 100 + i, ts, key, v, headers))
    return out


def partition_count(topic: str) -> int:
    """Topics a route names get their partition counts once known (1..5, by name)."""
    return 1 + sum(topic.encode()) % 5


def run(c: Chain, tolerance: str, batches: list[list[Msg]], on: bool) -> list[tuple]:
    """Each batch through a worker's Converter as the pipeline runs it: convert, learn the
    partition counts of topics first seen (deferred rows), place. Per batch: the rows per
    (topic, partition) in order, the output count and the dead letters."""
    counts = {SINK: 4, DLQ: 2, "x.shop.t_all": 3}
    converter = Converter(job(tolerance), counts)
    seen = []
    with core(on):
        for batch in batches:
            conv = converter.convert(c, SOURCE, PARTITION, batch)
            for row in conv.deferred:
                counts.setdefault(row[0], partition_count(row[0]))
            converter.place(conv, PARTITION)
            dead = [(d.record, d.stage, d.error_class, d.message, d.transform) for d in conv.dead_letters]
            seen.append((conv.groups, conv.n_in, conv.n_out, conv.next_offset, dead))
    seen.append(([t.missing_counts for t in c.transforms], 0, 0, 0, []))  # what the worker's metrics report
    return seen


def assert_same(
    name: str | list[dict[str, Any]], values: list[bytes | None], sink: dict[str, Any], batch: int = 7
) -> list[tuple]:
    msgs = fetched(values)
    batches = [msgs[i : i + batch] for i in range(0, len(msgs), batch)]
    transforms = CHAINS[name] if isinstance(name, str) else name
    fast = run(chain(transforms, "all", sink, True), "all", batches, True)
    slow = run(chain(transforms, "all", sink, False), "all", batches, False)
    assert len(fast) == len(slow)
    for got, want in zip(fast, slow, strict=True):
        assert got[0] == want[0]  # every (topic, partition)'s rows, in order
        assert got[1:] == want[1:]
    return fast


def handled(name: str | list[dict[str, Any]], values: list[bytes | None], sink: dict[str, Any]) -> int:
    c = chain(CHAINS[name] if isinstance(name, str) else name, "all", sink, True)
    assert c.native is not None
    return sum(n >= 0 for n in c.native.convert_values(values)[0])


MIXED: list[bytes | None] = [v for bad in MALFORMED for v in (GOOD, bad)] + REGULAR * 3


@pytest.mark.parametrize("sink", [{}, {"schemas_enable": True}], ids=["schemaless", "schemas"])
@pytest.mark.parametrize("name", sorted(CHAINS))
def test_batches_give_the_rows_of_the_per_record_path(name: str, sink: dict[str, Any]) -> None:
    """Regular, multi-row and malformed messages (dead letters), headers, null keys,
    missing timestamps, routes to topics whose partition counts are learnt later."""
    seen = assert_same(name, MIXED, sink)
    assert sum(s[2] for s in seen) > 0 or name == "filter-drops-all"
    assert any(s[4] for s in seen)  # the malformed ones are dead letters, through Python
    assert handled(name, REGULAR, sink) == len(REGULAR) - TO_PYTHON.get(name, 0)  # the plan did the regular ones


@pytest.mark.parametrize("name", ["five", "headers", "route", "value-to-key", "mixed"])
def test_edge_values_and_whole_fetches(name: str) -> None:
    for batch in (1, 64, 10_000):
        assert_same(name, edge_messages(), {}, batch)


#: bench/worker.py's stream (shop.orders) through a few transforms the plan does.
ORDERS: list[dict[str, Any]] = [
    {"type": "route", "topic": "cdc.{database}.{table}"},
    {"type": "mask_field", "fields": ["address"], "mode": "hash", "salt": "s"},
    {"type": "insert_header", "header": "table", "value": "{table}"},
]


@pytest.mark.parametrize("transforms", [[], ORDERS], ids=["bare", "orders"])
def test_a_realistic_stream_in_worker_sized_batches(transforms: list[dict[str, Any]]) -> None:
    values: list[bytes | None] = list(canal_messages(3_000))
    seen = assert_same(transforms, values, {}, 500)[:-1]  # the batches
    rows = [row for s in seen for group in s[0].values() for row in group]
    assert sum(row[1] is not None for row in rows) == 3_000  # and a tombstone per delete
    assert {t for s in seen for t, _ in s[0]} == ({"cdc.shop.orders"} if transforms else {SINK})
    assert handled(transforms, values, {}) == 3_000


@pytest.mark.parametrize("name", ["five", "headers", "route"])
def test_tolerance_none_halts_at_the_same_record_with_nothing_of_the_batch(name: str) -> None:
    msgs = fetched(REGULAR + [GOOD, b'{"data": 1}', GOOD] + REGULAR)
    halts = []
    for on in (True, False):
        c = chain(CHAINS[name], "none", {}, on)
        counts = {SINK: 4}
        converter = Converter(job("none"), counts)
        with core(on), pytest.raises(ChainHalted) as info:
            converter.convert(c, SOURCE, PARTITION, msgs)
        dl = info.value.dead_letter
        halts.append((dl.record, dl.stage, dl.error_class, dl.message, str(info.value)))
        # the chain goes on with the next batch (after the operator's fix) as before
        with core(on):
            after = converter.convert(c, SOURCE, PARTITION, fetched(REGULAR, start=50))
            for row in after.deferred:
                counts.setdefault(row[0], partition_count(row[0]))
            converter.place(after, PARTITION)
        halts.append((after.groups, after.n_out))
    assert halts[0] == halts[2] and halts[1] == halts[3]
    assert halts[0][0].offset == 100 + len(REGULAR) + 1


def test_an_empty_batch() -> None:
    c = chain(CHAINS["five"], "all", {}, True)
    conv = Converter(job("all"), {SINK: 1}).convert(c, SOURCE, PARTITION, [])
    assert conv.groups == {} and conv.n_out == 0 and conv.deferred == []


# -- the partitioner ---------------------------------------------------------------------------
#: Kafka's UtilsTest.testMurmur2 (Java's signed ints).
JAVA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.fixture(scope="module")
def extension() -> Any:
    with core(True):
        assert native.partitioner() is not None
    import cdc_smt._native as ext

    return ext


def test_murmur2_is_the_java_clients_natively_and_in_python(extension: Any) -> None:
    for data, want in JAVA_MURMUR2.items():
        assert extension.murmur2(data) == murmur2(data) == want & 0xFFFFFFFF


@settings(max_examples=400, deadline=None)
@given(
    keys=st.lists(st.one_of(st.none(), st.just(b""), st.binary(max_size=80)), max_size=40),
    n=st.integers(min_value=1, max_value=10_000),
    keyless=st.integers(min_value=0, max_value=2**31 - 1),
)
def test_native_partitions_agree_with_partition_for(
    extension: Any, keys: list[bytes | None], n: int, keyless: int
) -> None:
    want = [partition_for(k, n, keyless) for k in keys]
    assert extension.partitions(keys, n, keyless) == want
    with core(True):
        assert partitions(keys, n, keyless) == want
    with core(False):
        assert native.partitioner() is None
        assert partitions(tuple(keys), n, keyless) == want


def test_a_topic_without_partitions_or_a_key_that_is_not_bytes_is_an_error(extension: Any) -> None:
    with pytest.raises(ValueError, match="at least one partition"):
        extension.partitions([b"k"], 0, 0)
    with pytest.raises(TypeError):
        extension.partitions(["text"], 3, 0)
