"""The worker's adaptive batching: a trickle is converted record by record at once, a backlog in large batches."""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka.producer.message_accumulator import BatchBuilder

from cdc_smt.connector.jobconfig import load_job
from cdc_smt.connector.metrics import WorkerMetrics
from cdc_smt.connector.worker.batching import MIN_STEP, BatchSizer, BatchStats, sends, steps
from cdc_smt.connector.worker.pipeline import Pipeline


def fetch(*sizes: int) -> list[tuple[str, list[int]]]:
    """One fetch: partition ``p<i>`` with ``sizes[i]`` records (offsets 0..n-1)."""
    return [(f"p{i}", list(range(n))) for i, n in enumerate(sizes)]


def test_a_single_available_record_is_converted_at_once_not_after_filling_batch_size() -> None:
    sizer = BatchSizer(max_step=2000)
    assert list(steps(sizer, fetch(1))) == [("p0", [0])]
    assert sizer.stats.largest == 1


def test_a_trickle_keeps_the_step_small_and_hands_over_every_fetch_whole() -> None:
    sizer = BatchSizer(max_step=2000)
    for _ in range(50):
        out = list(steps(sizer, fetch(3, 0, 2)))
        assert out == [("p0", [0, 1, 2]), ("p2", [0, 1])]
    assert sizer.step == MIN_STEP and not sizer.behind  # outputs are sent at once, without linger
    assert sizer.stats.batches == 100 and sizer.stats.largest == 3


def test_a_backlog_grows_the_step_to_batch_size() -> None:
    sizer = BatchSizer(max_step=2000)
    sizes = []
    for _ in range(10):  # each fetch: 4 partitions of 2000 records waiting
        sizes += [len(chunk) for _, chunk in steps(sizer, fetch(2000, 2000, 2000, 2000))]
    assert sizes[0] == MIN_STEP  # the first outputs go out after a small step ...
    assert sizer.step == 2000  # ... then the steps grow to worker.batch_size
    assert sizer.behind  # the worker knows it is working off a backlog
    assert sizer.stats.at_least(1024) > len(sizes) // 2
    assert sizer.stats.records == 80_000


def test_steps_shrink_again_once_the_worker_keeps_up() -> None:
    sizer = BatchSizer(max_step=2000)
    list(steps(sizer, fetch(5000)))
    assert sizer.step == 2000
    for _ in range(10):
        list(steps(sizer, fetch(10)))
    assert sizer.step == MIN_STEP


def test_steps_cover_every_record_once_in_order_round_robin_over_partitions() -> None:
    sizer = BatchSizer(max_step=300, min_step=100)
    out = list(steps(sizer, fetch(450, 120, 0, 1)))
    for name, n in (("p0", 450), ("p1", 120), ("p3", 1)):
        got = [r for tp, chunk in out if tp == name for r in chunk]
        assert got == list(range(n))
    # round robin: p1's first records do not wait for all of p0
    assert [tp for tp, _ in out[:3]] == ["p0", "p1", "p3"]
    assert all(len(chunk) <= 300 for _, chunk in out)


def test_min_step_never_exceeds_batch_size() -> None:
    sizer = BatchSizer(max_step=10)
    assert [len(c) for _, c in steps(sizer, fetch(25))] == [10, 10, 5]


def test_a_small_fetch_is_converted_whole_before_the_producer_sends() -> None:
    """A caught-up fetch of a few records per partition: one group, so its outputs go out in one
    request, not the first partition's alone and the rest after that request's acknowledgement."""
    sizer = BatchSizer(max_step=2000)
    groups = list(sends(steps(sizer, fetch(5, 3, 0, 7))))
    assert groups == [[("p0", list(range(5))), ("p1", list(range(3))), ("p3", list(range(7)))]]


def test_under_a_backlog_each_large_step_is_sent_while_the_next_converts() -> None:
    sizer = BatchSizer(max_step=2000)
    stepped = list(steps(sizer, fetch(2000, 2000)))
    groups = list(sends(iter(stepped)))
    assert [len(g) for g in groups] == [1] * len(stepped)  # every step reaches MIN_STEP on its own
    assert [s for g in groups for s in g] == stepped


def test_groups_close_at_min_records_and_keep_every_step_once_in_order() -> None:
    stepped = [("p0", [0, 1]), ("p1", [0]), ("p2", [0, 1, 2]), ("p0", [2]), ("p1", [1, 2, 3, 4])]
    groups = list(sends(iter(stepped), min_records=3))
    assert groups == [[("p0", [0, 1]), ("p1", [0])], [("p2", [0, 1, 2])], [("p0", [2]), ("p1", [1, 2, 3, 4])]]
    assert list(sends(iter([]))) == []


def test_stats_count_batches_by_size_class() -> None:
    stats = BatchStats()
    for n in (1, 3, 700, 1500, 2000):
        stats.add(n)
    assert stats.at_least(1024) == 2
    assert stats.at_least(512) == 3
    assert stats.at_least(1) == 5
    assert stats.largest == 2000 and stats.records == 4204


# -- the produce side: a step's records join the batch still waiting for their partition -------
def pipeline_with_open_batch(builder: Any, fut: asyncio.Future) -> Pipeline:
    job = load_job(
        {
            "id": "job-1",
            "kafka": {"bootstrap_servers": "127.0.0.1:9092"},
            "source": {"topics": ["in"], "format": "canal-json"},
            "sink": {"topic": "out", "format": "debezium-json"},
        }
    )
    pipeline = Pipeline(
        job, WorkerMetrics(job.id, "canal-json", "debezium-json"), producer=lambda: None, on_fatal=print
    )
    pipeline.open_batches[("out", 0)] = (builder, fut)
    return pipeline


def rows(n: int, size: int = 10) -> list[tuple[bytes, bytes, int, list]]:
    return [(b"k%d" % i, b"v" * size, 1_700_000_000_000 + i, []) for i in range(n)]


def test_records_join_the_open_batch_of_their_partition_instead_of_waiting_for_a_new_request() -> None:
    async def go() -> None:
        builder = BatchBuilder(1_000_000, 0)
        fut = asyncio.get_running_loop().create_future()
        pipeline = pipeline_with_open_batch(builder, fut)
        joined = pipeline._join_open_batches({("out", 0): rows(5), ("out", 1): rows(3)})
        assert joined == {("out", 0): 5, ("out", 1): 0}  # partition 1 has no open batch: a new one
        assert builder.record_count() == 5

    asyncio.run(go())


def test_no_record_joins_a_batch_the_producer_took_or_that_is_full() -> None:
    async def go() -> None:
        loop = asyncio.get_running_loop()
        taken = BatchBuilder(1_000_000, 0)
        taken._build()  # what the producer does when the batch goes into a request: closed
        pipeline = pipeline_with_open_batch(taken, loop.create_future())
        assert pipeline._join_open_batches({("out", 0): rows(4)}) == {("out", 0): 0}

        small = BatchBuilder(1024, 0)
        pipeline = pipeline_with_open_batch(small, loop.create_future())
        n = pipeline._join_open_batches({("out", 0): rows(100, size=100)})[("out", 0)]
        assert 0 < n < 100 and small.record_count() == n  # the rest goes into a new batch, in order

        acked = loop.create_future()
        acked.set_result(None)
        pipeline = pipeline_with_open_batch(BatchBuilder(1_000_000, 0), acked)
        assert pipeline._join_open_batches({("out", 0): rows(2)}) == {("out", 0): 0}

    asyncio.run(go())


def test_an_acknowledged_batch_is_let_go() -> None:
    async def go() -> None:
        builder = BatchBuilder(1_000_000, 0)
        fut = asyncio.get_running_loop().create_future()
        pipeline = pipeline_with_open_batch(builder, fut)
        pipeline._close_open_batch(("out", 0), BatchBuilder(1_000_000, 0), fut)  # another batch's ack
        assert ("out", 0) in pipeline.open_batches
        pipeline._close_open_batch(("out", 0), builder, fut)
        assert ("out", 0) not in pipeline.open_batches

    asyncio.run(go())
