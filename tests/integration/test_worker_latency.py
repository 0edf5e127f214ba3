"""The worker's adaptive batching against a real broker: a trickle goes out record by
record, a backlog in large batches.

No timing assertions: the trickle test asserts causality (each record's output
is on the output topic before the next record is produced; the bound is a
generous 30 s), and both assert on the batching decisions the worker made.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
import time

import orjson
import pytest
from aiokafka.producer.sender import Sender
from mode.threads import WorkerThread

from cdc_smt.connector import kafka as K
from cdc_smt.connector.jobconfig import load_job
from cdc_smt.connector.worker.app import EXIT_OK, WorkerRuntime
from cdc_smt.transforms.model import Record
from tests.integration.helpers import KafkaCluster, canal, debezium_rows, job_doc, partition_sizes, produce, row_changes
from tests.integration.test_worker import all_acked, run_worker

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def test_a_trickle_is_converted_record_by_record_before_the_next_arrives(kafka: KafkaCluster, names) -> None:
    src, out = names("trickle.canal"), names("trickle.debezium")
    job = job_doc(kafka, names("trickle"), src, out, worker={"create_topics": {"partitions": 1}, "batch_size": 2000})
    n = 5

    frozen: list[int] = []

    async def go() -> tuple[WorkerRuntime, int, list[int]]:
        await K.create_topics(kafka.bootstrap, {src: 1})
        runtime = WorkerRuntime(load_job(job))
        task = asyncio.ensure_future(runtime.run(install_signals=False))
        seen: list[int] = []
        try:
            while runtime.state != "running":
                assert not task.done(), "the worker stopped before running"
                await asyncio.sleep(0.1)
            frozen.append(gc.get_freeze_count())  # start-up's objects are out of the collector's reach
            for i in range(1, n + 1):
                await K.produce_records(
                    kafka.bootstrap, src, [Record(value=canal(i, 0, "INSERT"), key=orjson.dumps({"id": i}))]
                )
                # The next record is produced only once this one's output is on the broker.
                deadline = time.monotonic() + 30
                while True:
                    got = await K.consume_all(kafka.bootstrap, out)
                    if len(got) >= i:
                        seen.append(len(got))
                        break
                    assert time.monotonic() < deadline, f"record {i} was not converted while nothing followed it"
                    await asyncio.sleep(0.05)
        finally:
            runtime.request_stop()
            code = await asyncio.wait_for(task, timeout=60)
        return runtime, code, seen

    try:
        runtime, code, seen = asyncio.run(go())
    finally:
        gc.unfreeze()
    assert frozen and frozen[0] > 0
    assert code == EXIT_OK
    assert seen == list(range(1, n + 1))  # exactly one new output per input, none waiting for company
    stats = runtime.pipeline.sizer.stats
    assert stats.records == n and stats.batches == n and stats.largest == 1


def test_a_backlog_is_converted_in_large_batches(kafka: KafkaCluster, names) -> None:
    src, out = names("backlog.canal"), names("backlog.debezium")
    records = row_changes(rows=3000, updates=1)  # 6,000 changes waiting before the worker starts
    produce(kafka, src, records, partitions=1)
    sizes = partition_sizes(records, 1)
    job = job_doc(kafka, names("backlog"), src, out, worker={"create_topics": {"partitions": 1}, "batch_size": 2000})

    runtime, code, reached = run_worker(job, all_acked(src, sizes))
    assert reached and code == EXIT_OK
    stats = runtime.pipeline.sizer.stats
    assert stats.records == len(records)
    assert stats.largest >= 1024, f"largest batch {stats.largest}"
    assert stats.at_least(512) >= 2
    assert stats.batches < len(records) // 100
    got = debezium_rows(asyncio.run(K.consume_all(kafka.bootstrap, out)))
    assert [(i, v) for i, v, _ in got] == [(i, v) for v in range(2) for i in range(1, 3001)]


@pytest.mark.parametrize("consumer_thread", [False, True], ids=["loop", "thread"])
def test_the_consumer_fetches_in_fausts_thread_or_on_the_workers_loop(
    kafka: KafkaCluster, names, consumer_thread: bool
) -> None:
    src, out = names("loop.canal"), names("loop.debezium")
    records = row_changes(rows=200, updates=1)
    produce(kafka, src, records, partitions=2)
    sizes = partition_sizes(records, 2)
    worker = {"create_topics": {"partitions": 2}, "consumer_thread": consumer_thread, "switch_interval_ms": 0.5}
    job = job_doc(kafka, names("loop"), src, out, worker=worker)
    seen: dict[str, object] = {}

    def done(rt: WorkerRuntime) -> bool:
        if not all_acked(src, sizes)(rt):
            return False
        aiokafka_consumer = rt.app.consumer._thread._consumer
        seen["fetcher_loop"] = aiokafka_consumer._fetcher._fetch_task.get_loop()
        seen["worker_loop"] = asyncio.get_running_loop()
        seen["threads"] = [t for t in threading.enumerate() if isinstance(t, WorkerThread)]
        seen["switch_interval"] = sys.getswitchinterval()
        return True

    before = sys.getswitchinterval()
    runtime, code, reached = run_worker(job, done)
    assert reached and code == EXIT_OK
    assert seen["switch_interval"] == pytest.approx(0.0005)  # worker.switch_interval_ms while running
    assert sys.getswitchinterval() == before  # and Python's again once stopped
    assert (seen["fetcher_loop"] is seen["worker_loop"]) is not consumer_thread
    assert bool(seen["threads"]) is consumer_thread  # mode's consumer thread only when asked for
    assert not any(isinstance(t, WorkerThread) and t.is_alive() for t in threading.enumerate())  # stopped
    got = debezium_rows(asyncio.run(K.consume_all(kafka.bootstrap, out)))
    assert sorted((i, v) for i, v, _ in got) == sorted((i, v) for v in range(2) for i in range(1, 201))


@pytest.mark.parametrize("consumer_thread", [False, True], ids=["loop", "thread"])
def test_a_small_fetch_of_several_partitions_goes_out_in_one_produce_request(
    kafka: KafkaCluster, names, monkeypatch: pytest.MonkeyPatch, consumer_thread: bool
) -> None:
    """A few records waiting in each of four partitions come in one fetch: their outputs go out in
    one produce request, not the first partition's alone and the rest after its acknowledgement."""
    src, out = names("onereq.canal"), names("onereq.debezium")
    records = row_changes(rows=12, updates=0)  # 12 records over 4 partitions, before the worker starts
    produce(kafka, src, records, partitions=4)
    sizes = partition_sizes(records, 4)
    assert sum(1 for n in sizes.values() if n) >= 2  # the fetch spans several partitions
    job = job_doc(
        kafka,
        names("onereq"),
        src,
        out,
        worker={"create_topics": {"partitions": 4}, "consumer_thread": consumer_thread},
    )
    requests: list[int] = []
    send = Sender._send_produce_req

    async def counted(self: Sender, node_id: int, batches: dict) -> None:
        outputs = sum(b.record_count for tp, b in batches.items() if tp.topic == out)
        if outputs:
            requests.append(outputs)
        await send(self, node_id, batches)

    monkeypatch.setattr(Sender, "_send_produce_req", counted)
    runtime, code, reached = run_worker(job, all_acked(src, sizes))
    assert reached and code == EXIT_OK
    assert runtime.pipeline.sizer.stats.records == len(records)
    assert requests == [len(records)]  # every output of the fetch in the one request
