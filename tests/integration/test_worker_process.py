"""The worker as a process: SIGKILL and restart, SIGTERM drain, two workers in one group.

Input keeps arriving while the workers run (a background producer), so kills
and rebalances really happen mid-stream.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections import Counter

import pytest

from cdc_smt.connector import kafka as K
from cdc_smt.transforms.model import Record
from tests.integration.helpers import (
    KafkaCluster,
    canal,
    committed,
    consume,
    debezium_rows,
    job_doc,
    partition_sizes,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

PARTITIONS = 4


class Feed(threading.Thread):
    """Produces ``chunks`` x ``per_chunk`` inserts (ids 1..N), pausing between chunks."""

    def __init__(self, kafka: KafkaCluster, topic: str, chunks: int, per_chunk: int, pause: float) -> None:
        super().__init__(daemon=True)
        self.kafka, self.topic = kafka, topic
        self.chunks, self.per_chunk, self.pause = chunks, per_chunk, pause
        self.records = [
            Record(value=canal(i, 0, "INSERT"), key=b'{"id":%d}' % i) for i in range(1, chunks * per_chunk + 1)
        ]
        self.error: BaseException | None = None

    @property
    def total(self) -> int:
        return len(self.records)

    def run(self) -> None:
        try:
            for c in range(self.chunks):
                chunk = self.records[c * self.per_chunk : (c + 1) * self.per_chunk]
                asyncio.run(K.produce_records(self.kafka.bootstrap, self.topic, chunk))
                time.sleep(self.pause)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc


def _create(kafka: KafkaCluster, topic: str) -> None:
    asyncio.run(K.create_topics(kafka.bootstrap, {topic: PARTITIONS}))


def _committed_total(kafka: KafkaCluster, group: str, topic: str) -> int:
    return sum(committed(kafka, group, topic).values())


def _ids(kafka: KafkaCluster, topic: str, n: int) -> Counter:
    return Counter(i for i, _, _ in debezium_rows(consume(kafka, topic, min_records=n, timeout=90, idle=2.0)))


#: The consumer in Faust's thread (the default) with worker.fetch_ahead off and on, and on the worker's
#: loop (worker.consumer_thread: false): a fetch pending across a kill or a rebalance loses nothing.
FETCH_PATHS = pytest.mark.parametrize(
    "fetch_path",
    [{}, {"fetch_ahead": True}, {"consumer_thread": False}],
    ids=["thread", "thread-fetch_ahead", "loop"],
)


@FETCH_PATHS
def test_sigkill_mid_stream_then_restart_loses_nothing(
    kafka: KafkaCluster, names, workers, record_property, fetch_path: dict[str, bool]
) -> None:
    src, out, group = names("crash.canal"), names("crash.debezium"), names("crash")
    _create(kafka, src)
    worker = {"create_topics": True, "batch_size": 200, "commit_interval_ms": 200, **fetch_path}
    job = job_doc(kafka, group, src, out, worker=worker)
    # Production outpaces conversion, so at the kill there is a backlog and work in flight.
    feed = Feed(kafka, src, chunks=4, per_chunk=10000, pause=0.1)
    first = workers(job, "first").start()
    first.wait_running()
    feed.start()
    wait_for(lambda: _committed_total(kafka, group, src) >= 6000, 90, "the first commits", interval=0.05)
    first.send_signal(signal.SIGKILL)
    assert first.wait(10) == -signal.SIGKILL
    at_kill = _committed_total(kafka, group, src)
    assert at_kill < feed.total  # the kill really happened mid-stream

    second = workers(job, "second").start()
    second.wait_running(90)
    feed.join(60)
    assert feed.error is None
    sizes = partition_sizes(feed.records, PARTITIONS)
    wait_for(lambda: committed(kafka, group, src) == sizes, 120, "the restarted worker to catch up")
    second.send_signal(signal.SIGTERM)
    assert second.wait(60) == 0

    ids = _ids(kafka, out, feed.total)
    missing = set(range(1, feed.total + 1)) - set(ids)
    duplicates = sum(n - 1 for n in ids.values())
    record_property("committed_at_kill", at_kill)
    record_property("duplicates", duplicates)
    print(f"SIGKILL after {at_kill} committed of {feed.total}: {duplicates} duplicates, {len(missing)} missing")
    assert not missing  # at-least-once: nothing lost
    assert set(ids) == set(range(1, feed.total + 1))


def test_sigterm_drains_commits_and_restart_has_no_duplicates(kafka: KafkaCluster, names, workers) -> None:
    src, out, group = names("drain.canal"), names("drain.debezium"), names("drain")
    _create(kafka, src)
    job = job_doc(kafka, group, src, out, worker={"create_topics": True, "batch_size": 200, "commit_interval_ms": 5000})
    feed = Feed(kafka, src, chunks=6, per_chunk=4000, pause=0.5)
    first = workers(job, "first").start()
    first.wait_running()
    feed.start()
    # Stop while records are still arriving, and well before the 5 s commit interval
    # has committed everything: the drain on SIGTERM must do the final commit.
    wait_for(lambda: first.has_event("assigned") and _seen_output(kafka, out), 60, "output to appear")
    partition_lines = [rec["msg"] for rec in first.logs() if rec.get("msg", "").startswith("partitions ")]
    assert partition_lines and not any("__assignor" in line for line in partition_lines), partition_lines
    first.send_signal(signal.SIGTERM)
    assert first.wait(60) == 0, first.text()
    assert first.has_event("stopped")
    at_stop = committed(kafka, group, src)
    assert 0 < sum(at_stop.values())

    second = workers(job, "second").start()
    second.wait_running(90)
    feed.join(60)
    assert feed.error is None
    sizes = partition_sizes(feed.records, PARTITIONS)
    wait_for(lambda: committed(kafka, group, src) == sizes, 120, "the second worker to finish")
    second.send_signal(signal.SIGTERM)
    assert second.wait(60) == 0

    ids = _ids(kafka, out, feed.total)
    assert set(ids) == set(range(1, feed.total + 1))
    # Everything processed before SIGTERM was committed, so nothing was processed twice.
    assert max(ids.values()) == 1, f"{sum(n - 1 for n in ids.values())} duplicates after a graceful stop"


def _seen_output(kafka: KafkaCluster, topic: str) -> bool:
    try:
        return bool(asyncio.run(K.consume_all(kafka.bootstrap, topic, min_records=1, timeout=2, idle=0)))
    except Exception:  # noqa: BLE001 - the topic may not exist yet
        return False


@FETCH_PATHS
def test_two_workers_share_the_partitions_and_the_output_is_complete(
    kafka: KafkaCluster, names, workers, record_property, fetch_path: dict[str, bool]
) -> None:
    src, out, group = names("pair.canal"), names("pair.debezium"), names("pair")
    _create(kafka, src)
    worker = {"create_topics": True, "batch_size": 200, "commit_interval_ms": 300, **fetch_path}
    job = job_doc(kafka, group, src, out, worker=worker)
    feed = Feed(kafka, src, chunks=8, per_chunk=3000, pause=0.6)
    a = workers(job, "a").start()
    a.wait_running()
    feed.start()
    b = workers(job, "b").start()
    b.wait_running(90)

    def source_partitions(w) -> set[int]:
        latest: set[int] = set()
        for rec in w.logs():
            if rec.get("event") == "assigned":
                parts = [p for p in rec["msg"].split(": ", 1)[1].split(", ") if p.startswith(src + "[")]
                latest = {int(p[len(src) + 1 : -1]) for p in parts}
        return latest

    wait_for(lambda: source_partitions(a) and source_partitions(b), 90, "both workers to own partitions")
    assert source_partitions(a).isdisjoint(source_partitions(b))
    assert source_partitions(a) | source_partitions(b) == set(range(PARTITIONS))

    feed.join(60)
    assert feed.error is None
    sizes = partition_sizes(feed.records, PARTITIONS)
    wait_for(lambda: committed(kafka, group, src) == sizes, 120, "the pair to finish")
    for w in (a, b):
        w.send_signal(signal.SIGTERM)
    assert a.wait(60) == 0 and b.wait(60) == 0

    ids = _ids(kafka, out, feed.total)
    duplicates = sum(n - 1 for n in ids.values())
    record_property("duplicates", duplicates)
    print(f"two workers: {duplicates} duplicates over {feed.total} records")
    assert set(ids) == set(range(1, feed.total + 1))
