"""Native Kafka record batches (``native/src/kafka_batch.rs``, ``connector.kafka.produce.NativeBatch``)
against aiokafka's own ``BatchBuilder``: the same rows give the same batch bytes, split at the
same places, with the producer state an idempotent or transactional producer stamps."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pyarrow as pa
import pytest
from aiokafka.producer.message_accumulator import BatchBuilder
from aiokafka.record.default_records import DefaultRecordBatch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt.connector.kafka.produce import NativeBatch, native_batches
from cdc_smt.transforms import native

writer = native.kafka_batch()
pytestmark = pytest.mark.skipif(writer is None, reason="the native core is not built or is off (CDC_SMT_NATIVE=0)")

Row = tuple[Any, Any, Any, Any]

payload = st.one_of(st.none(), st.just(b""), st.binary(max_size=300), st.binary(min_size=3000, max_size=20_000))
header = st.tuples(st.text(max_size=12), st.one_of(st.none(), st.binary(max_size=40)))
row = st.tuples(
    payload,
    payload,
    st.integers(min_value=0, max_value=2**41),
    st.one_of(st.just([]), st.lists(header, max_size=4)),
)
producer_state = st.one_of(
    st.just((-1, -1, 0)),
    st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 2**15 - 1), st.integers(0, 2**31 - 1)),
)


def aiokafka_batches(rows: list[Row], batch_size: int, transactional: bool, state: tuple[int, int, int]) -> list[bytes]:
    """aiokafka's builder, record by record, a new batch whenever one is full (as the worker did)."""
    out = []
    builder = BatchBuilder(batch_size, 0, is_transactional=transactional)
    for key, value, ts, headers in rows:
        if builder.append(key=key, value=value, timestamp=ts, headers=headers) is None:
            builder._set_producer_state(*state)
            out.append(bytes(builder._build()))
            builder = BatchBuilder(batch_size, 0, is_transactional=transactional)
            assert builder.append(key=key, value=value, timestamp=ts, headers=headers) is not None
    if builder.record_count():
        builder._set_producer_state(*state)
        out.append(bytes(builder._build()))
    return out


def native_batches_of(
    rows: list[Row], batch_size: int, transactional: bool, state: tuple[int, int, int]
) -> list[bytes]:
    out = []
    start = 0
    while start < len(rows):
        batch = NativeBatch(writer, batch_size, transactional)
        end = batch.append_rows(rows, start)
        assert end > start
        assert batch.record_count() == end - start
        assert batch.closed() == (end < len(rows))
        batch._set_producer_state(*state)
        out.append(batch._build())
        start = end
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    rows=st.lists(row, min_size=1, max_size=40),
    batch_size=st.sampled_from([1, 200, 1000, 16_384, 1_000_000]),
    transactional=st.booleans(),
    state=producer_state,
)
def test_native_batches_equal_aiokafkas(rows: list[Row], batch_size: int, transactional: bool, state: Any) -> None:
    assert native_batches_of(rows, batch_size, transactional, state) == aiokafka_batches(
        rows, batch_size, transactional, state
    )


@pytest.mark.parametrize("headers", [[], [("a", b"")], [("\U0001f44d\U0001f3fb", None), ("b", b"xyz")]])
def test_a_record_reaching_the_batch_size_exactly_starts_the_next_batch_as_in_aiokafka(headers: list) -> None:
    rows: list[Row] = [(b"k", b"x" * 40, 1, []), (b"k", b"y" * 10, 2, headers)]
    (whole,) = native_batches_of(rows, 1_000_000, False, (-1, -1, 0))
    for batch_size in range(len(whole) - 2, len(whole) + 3):
        got = native_batches_of(rows, batch_size, False, (-1, -1, 0))
        assert got == aiokafka_batches(rows, batch_size, False, (-1, -1, 0))
        assert len(got) == (1 if batch_size > len(whole) else 2)


def test_records_read_back_with_aiokafkas_reader() -> None:
    rows: list[Row] = [
        (b"k1", b"v1", 1_700_000_000_000, [("h", b"x"), ("empty", None)]),
        (None, b"tombstone-less value", 1_700_000_000_500, []),
        (b"key", None, 1_699_999_999_000, [("\u00e9t\u00e9", b"\xff")]),  # an earlier timestamp: negative delta
        (b"", b"", 1_700_000_000_001, []),
    ]
    batch = NativeBatch(writer, 1_000_000, False)
    assert batch.append_rows(rows) == len(rows)
    read = DefaultRecordBatch(batch._build())
    assert read.validate_crc()
    assert (read.first_timestamp, read.max_timestamp) == (1_700_000_000_000, 1_700_000_000_500)
    got = [(r.key, r.value, r.timestamp, list(r.headers)) for r in read]
    assert got == [(k, v, ts, list(h)) for k, v, ts, h in rows]
    assert [r.offset for r in DefaultRecordBatch(batch._build())] == [0, 1, 2, 3]


def test_a_missing_timestamp_is_the_time_of_writing() -> None:
    batch = NativeBatch(writer, 1_000_000, False)
    before = int(time.time() * 1000)
    batch.append_rows([(b"k", b"v", None, [])])
    after = int(time.time() * 1000)
    (record,) = list(DefaultRecordBatch(batch._build()))
    assert before <= record.timestamp <= after


def test_a_stamped_batch_takes_no_more_records() -> None:
    """Its producer sequence range is fixed when the producer drains it."""
    batch = NativeBatch(writer, 1_000_000, True)
    assert batch.append_rows([(b"k", b"v", 1, [])]) == 1
    batch._set_producer_state(7, 1, 42)
    assert batch.closed()
    assert batch.append_rows([(b"k", b"v", 2, [])]) == 0
    read = DefaultRecordBatch(batch._build())
    assert (read.producer_id, read.producer_epoch, read.base_sequence, read.is_transactional) == (7, 1, 42, True)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ((b"k", "text", 1, []), "Not supported type for value: str"),
        ((1, b"v", 1, []), "Not supported type for key: int"),
        ((b"k", b"v", 1, [(b"name", b"x")]), "a header's name is a str"),
        ((b"k", b"v", 1, [("name",)]), "a header is a (name, value) pair"),
        ((b"k", b"v"), "a row is a (key, value, timestamp, headers) tuple"),
    ],
)
def test_bad_rows_are_refused_with_the_reason(bad: Any, message: str) -> None:
    batch = NativeBatch(writer, 1_000_000, False)
    with pytest.raises(TypeError, match=message.replace("(", r"\(").replace(")", r"\)")):
        batch.append_rows([(b"ok", b"ok", 1, []), bad])
    assert batch.record_count() == 1  # the good row before it is kept; nothing of the bad one


def test_an_empty_batch_is_not_built() -> None:
    with pytest.raises(ValueError, match="empty batch"):
        NativeBatch(writer, 100, False)._build()


def producer_of(**kwargs: Any) -> Any:
    from aiokafka import AIOKafkaProducer

    async def make() -> Any:
        return AIOKafkaProducer(bootstrap_servers="127.0.0.1:9", **kwargs)

    return asyncio.run(make())


def test_native_batches_only_where_aiokafka_would_write_the_same() -> None:
    plain = native_batches(producer_of(max_batch_size=4096))
    assert plain is not None
    made = plain()
    assert isinstance(made, NativeBatch)
    assert made.append_rows([(b"k", b"v" * 5000, 1, []), (b"k", b"v" * 5000, 1, [])]) == 1  # the producer's batch size
    assert native_batches(producer_of(compression_type="gzip")) is None
    assert native_batches(producer_of(value_serializer=lambda v: v)) is None


# -- the worker's use: Pipeline.build_batches and the open batches ------------------------------


def pipeline() -> Any:
    from cdc_smt.connector.jobconfig import load_job
    from cdc_smt.connector.metrics import WorkerMetrics
    from cdc_smt.connector.worker.pipeline import Pipeline

    job = load_job(
        {
            "id": "job-batches",
            "kafka": {"bootstrap_servers": "127.0.0.1:9092"},
            "source": {"topics": ["in"], "format": "canal-json"},
            "sink": {"topic": "out", "format": "debezium-json"},
        }
    )
    return Pipeline(job, WorkerMetrics(job.id, "canal-json", "debezium-json"), producer=lambda: None, on_fatal=print)


def worker_rows(n: int, size: int) -> list[Row]:
    return [
        (b"k%d" % i, b"v" * size, 1_700_000_000_000 + i, [("h", b"%d" % i)] if i % 3 == 0 else []) for i in range(n)
    ]


def test_the_worker_sends_the_bytes_aiokafkas_builder_would(monkeypatch: pytest.MonkeyPatch) -> None:
    from cdc_smt.connector.worker.pipeline import Pipeline

    async def go() -> None:
        from aiokafka import AIOKafkaProducer

        producer = AIOKafkaProducer(bootstrap_servers="127.0.0.1:9", max_batch_size=16_384)
        groups = {("out", 0): worker_rows(300, 120), ("out", 2): worker_rows(7, 10), ("dlq", 1): worker_rows(1, 40_000)}
        sends = Pipeline.build_batches(producer, groups)
        assert all(isinstance(b, NativeBatch) for _, _, b, _ in sends)
        with monkeypatch.context() as m:
            m.setenv(native.ENV, "0")
            assert native.kafka_batch() is None
            reference = Pipeline.build_batches(producer, groups)
        assert not any(isinstance(b, NativeBatch) for _, _, b, _ in reference)
        assert [(t, p, n) for t, p, _, n in sends] == [(t, p, n) for t, p, _, n in reference]
        assert len(sends) > len(groups)  # the 300 rows did not fit in one batch
        assert [b._build() for _, _, b, _ in sends] == [bytes(b._build()) for _, _, b, _ in reference]

    asyncio.run(go())


def test_rows_join_an_open_native_batch_until_the_producer_takes_it() -> None:
    async def go() -> None:
        loop = asyncio.get_running_loop()
        p = pipeline()
        open_batch = NativeBatch(writer, 1_000_000, False)
        open_batch.append_rows(worker_rows(2, 10))
        p.open_batches[("out", 0)] = (open_batch, loop.create_future())
        assert p._join_open_batches({("out", 0): worker_rows(5, 10), ("out", 1): worker_rows(3, 10)}) == {
            ("out", 0): 5,
            ("out", 1): 0,
        }
        assert open_batch.record_count() == 7

        small = NativeBatch(writer, 1024, False)
        p.open_batches[("out", 0)] = (small, loop.create_future())
        n = p._join_open_batches({("out", 0): worker_rows(100, 100)})[("out", 0)]
        assert 0 < n < 100 and small.record_count() == n and small.closed()

        taken = NativeBatch(writer, 1_000_000, False)
        taken.append_rows(worker_rows(1, 10))
        taken._build()
        p.open_batches[("out", 0)] = (taken, loop.create_future())
        assert p._join_open_batches({("out", 0): worker_rows(4, 10)}) == {("out", 0): 0}

    asyncio.run(go())


# -- the backfill's Kafka sink: batches written from Arrow columns (arrow_parts) -------------------

group = native.arrow_parts()
HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
topic_name = st.sampled_from(["out", "dlq", "r.\u00e9"])


def arrow_records(rows: list[Row], topics: list[str], partitions: list[int], *, large: bool = True) -> pa.RecordBatch:
    """``rows`` as the backfill hands converted records to its Kafka sink (``process.KAFKA_OUTPUT_SCHEMA``;
    ``large``: its large_binary keys and values, else binary)."""
    binary = pa.large_binary() if large else pa.binary()
    return pa.RecordBatch.from_arrays(
        [
            pa.array(topics, pa.string()),
            pa.array([r[0] for r in rows], binary),
            pa.array([r[1] for r in rows], binary),
            pa.array([[{"key": k, "value": v} for k, v in r[3]] for r in rows], HEADERS),
            pa.array([r[2] for r in rows], pa.int64()),
            pa.array(partitions, pa.int32()),
        ],
        names=["topic", "key", "value", "headers", "timestamp", "source_partition"],
    )


def part_batches(part: Any, batch_size: int, transactional: bool, state: tuple[int, int, int]) -> list[bytes]:
    """A part's records as the backfill's producer sends them (``produce_parts``): batch after batch."""
    out = []
    start = 0
    while start < len(part):
        batch = NativeBatch(writer, batch_size, transactional)
        end = batch.append_rows(part, start)
        assert end > start and batch.record_count() == end - start and batch.closed() == (end < len(part))
        batch._set_producer_state(*state)
        out.append(batch._build())
        start = end
    return out


def grouped(rows: list[Row], topics: list[str], partitions: list[int]) -> dict[tuple[str, int], list[Row]]:
    """The rows of each topic partition, in order, the partitions in the order of their first rows."""
    out: dict[tuple[str, int], list[Row]] = {}
    for r, t, p in zip(rows, topics, partitions, strict=True):
        out.setdefault((t, p), []).append(r)
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    data=st.lists(st.tuples(row, topic_name, st.integers(0, 3)), min_size=1, max_size=40),
    batch_size=st.sampled_from([1, 200, 1000, 16_384, 1_000_000]),
    transactional=st.booleans(),
    state=producer_state,
    large=st.booleans(),
    cut=st.integers(0, 5),
)
def test_batches_from_arrow_columns_equal_aiokafkas(
    data: list[tuple[Row, str, int]], batch_size: int, transactional: bool, state: Any, large: bool, cut: int
) -> None:
    """Per topic partition, the batches written from the Arrow columns are aiokafka's builder's
    batches of that partition's rows (split at the same places); a sliced batch reads its own rows."""
    rows, topics, partitions = [d[0] for d in data], [d[1] for d in data], [d[2] for d in data]
    padded = [(b"pad", b"pad", 0, [("pad", b"")])] * cut
    records = arrow_records(padded + rows, ["pad"] * cut + topics, [9] * cut + partitions, large=large).slice(cut)
    parts = group(records, pa.array(partitions, pa.int32()).slice(0))
    expected = grouped(rows, topics, partitions)
    assert [(p.topic, p.partition, len(p)) for p in parts] == [(t, p, len(r)) for (t, p), r in expected.items()]
    for part in parts:
        assert part_batches(part, batch_size, transactional, state) == aiokafka_batches(
            expected[(part.topic, part.partition)], batch_size, transactional, state
        )


def test_arrow_records_read_back_with_aiokafkas_reader() -> None:
    """Null keys, values, header values and header lists; a null timestamp is the time of writing."""
    rows: list[Row] = [
        (b"k1", b"v1", 1_700_000_000_000, [("h", b"x"), ("empty", None)]),
        (None, b"v", 1_700_000_000_500, []),
        (b"key", None, 1_699_999_999_000, [("\u00e9t\u00e9", b"\xff")]),
        (b"", b"", None, []),
    ]
    records = arrow_records(rows, ["t"] * 4, [0] * 4)
    records = records.set_column(3, "headers", pa.array([[{"key": "h", "value": b"x"}, {"key": "empty", "value": None}],
                                                         None, [{"key": "\u00e9t\u00e9", "value": b"\xff"}], []],
                                                        HEADERS))  # fmt: skip
    (part,) = group(records, pa.array([0] * 4, pa.int32()))
    batch = NativeBatch(writer, 1_000_000, False)
    before = int(time.time() * 1000)
    assert batch.append_rows(part) == 4
    after = int(time.time() * 1000)
    read = list(DefaultRecordBatch(batch._build()))
    assert [(r.key, r.value, list(r.headers)) for r in read] == [(k, v, list(h)) for k, v, _, h in rows]
    assert [r.timestamp for r in read[:3]] == [r[2] for r in rows[:3]]
    assert before <= read[3].timestamp <= after


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        (lambda b: b.set_column(0, "topic", pa.array([None, "t"], pa.string())), ValueError, "needs a topic"),
        (lambda b: b.set_column(0, "topic", pa.array([b"t", b"t"], pa.binary())), TypeError, '"topic" column'),
        (lambda b: b.drop_columns(["headers"]), TypeError, 'no "headers" column'),
        (lambda b: b.set_column(4, "timestamp", pa.array([1, 2], pa.int32())), TypeError, '"timestamp" column'),
        (lambda b: b.set_column(1, "key", pa.array(["a", "b"], pa.string())), TypeError, "binary"),
    ],
)
def test_arrow_records_the_writer_cannot_take_are_refused_with_the_reason(
    change: Any, error: type, message: str
) -> None:
    records = change(arrow_records([(b"k", b"v", 1, []), (b"k", b"v", 2, [])], ["t", "t"], [0, 0]))
    with pytest.raises(error, match=message):
        group(records, pa.array([0, 0], pa.int32()))


def test_partitions_are_one_int32_per_record() -> None:
    records = arrow_records([(b"k", b"v", 1, []), (b"k", b"v", 2, [])], ["t", "t"], [0, 0])
    with pytest.raises(ValueError, match="one partition per record"):
        group(records, pa.array([0], pa.int32()))
    with pytest.raises(ValueError, match="needs a partition"):
        group(records, pa.array([0, None], pa.int32()))
    with pytest.raises(TypeError, match="int32"):
        group(records, pa.array([0, 0], pa.int64()))


def test_a_header_without_a_name_is_refused() -> None:
    records = arrow_records([(b"k", b"v", 1, [])], ["t"], [0])
    records = records.set_column(3, "headers", pa.array([[{"key": None, "value": b"x"}]], HEADERS))
    (part,) = group(records, pa.array([0], pa.int32()))
    with pytest.raises(TypeError, match="a header's name is a str"):
        NativeBatch(writer, 1_000_000, False).append_rows(part)
