"""Exactly-once topic to topic (``worker.processing_guarantee: exactly_once``) on Apache Kafka.

Workers are SIGKILLed at random points and restarted, a second worker joins
mid-run (a rebalance), and the broker itself is killed and restarted: a
read_committed consumer of the output still sees every source record's output
exactly once, and replaying the output rebuilds the source's tables. Each
source record is one change ``(row id, version)`` of ``row_changes``, so each
output names the source record it came from.

The embedded broker (Tansu) has no transactions: the worker refuses
exactly_once there at start-up with one error line and exit code 2.
"""

from __future__ import annotations

import asyncio
import random
import signal
import time
from collections import Counter
from typing import Any

import pytest

from cdc_smt.connector.exitcodes import ExitCode
from cdc_smt.connector.kafka.consume import to_record
from cdc_smt.transforms.model import Record
from tests.integration.helpers import (
    KafkaCluster,
    committed,
    consume,
    debezium_rows,
    job_doc,
    partition_sizes,
    produce,
    row_changes,
    wait_for,
)
from tests.integration.test_broker_faults import tables

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

PARTITIONS = 4
#: The SIGKILL test: one kill at a random point of each input chunk, at least KILLS kills of
#: which at least MID_STREAM land before the chunk is committed; more chunks (up to STAGES)
#: when a loaded machine lets a worker finish a chunk before the kill reaches it.
KILLS, MID_STREAM, STAGES = 7, 5, 10
EXACTLY_ONCE = {"processing_guarantee": "exactly_once", "create_topics": True, "batch_size": 2000}


def consume_committed(kafka: KafkaCluster, topic: str, *, count: int, timeout: float = 120.0) -> list[Record]:
    """Everything a ``read_committed`` consumer reads from ``topic``: until ``count`` records
    arrived and then nothing more for 2 s (so duplicates past the count show up too)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def go() -> list[Record]:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=kafka.bootstrap,
            isolation_level="read_committed",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        await consumer.start()
        try:
            await consumer._client.force_metadata_update()  # noqa: SLF001 - no subscription: fetch metadata
            tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
            assert tps, f"{topic} has no partitions"
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            out: list[Record] = []
            deadline = time.monotonic() + timeout
            last_new = time.monotonic()
            while time.monotonic() < deadline:
                batch = await consumer.getmany(timeout_ms=200, max_records=20_000)
                for msgs in batch.values():
                    out.extend(to_record(m) for m in msgs)
                if any(batch.values()):
                    last_new = time.monotonic()
                elif len(out) >= count and time.monotonic() - last_new >= 2.0:
                    break
            return out
        finally:
            await consumer.stop()

    return asyncio.run(go())


def changes(records: list[Record]) -> Counter:
    """How often each source change ``(row id, version)`` appears among Debezium outputs."""
    return Counter((row_id, version) for row_id, version, _ in debezium_rows(records))


def assert_exactly_once(kafka: KafkaCluster, src: str, out: str, expected: list[Record], record_property: Any) -> None:
    output = consume_committed(kafka, out, count=len(expected))
    seen = changes(output)
    wanted = changes_of_source(expected)
    missing = sum(1 for c in wanted if c not in seen)
    duplicates = sum(n - 1 for n in seen.values())
    uncommitted = len(consume(kafka, out, min_records=len(expected), timeout=120, idle=2.0))
    record_property("outputs_read_committed", len(output))
    record_property("outputs_read_uncommitted", uncommitted)
    print(
        f"{len(expected)} source records: read_committed sees {len(output)} outputs "
        f"({missing} lost, {duplicates} duplicates); read_uncommitted sees {uncommitted}"
    )
    assert missing == 0 and duplicates == 0
    assert set(seen) == set(wanted) and len(output) == len(expected)
    # The replay of the output rebuilds the source's tables, row for row.
    source = consume(kafka, src, min_records=len(expected), timeout=120)
    assert tables("debezium-json", output) == tables("canal-json", source)


def changes_of_source(records: list[Record]) -> set[tuple[int, int]]:
    import orjson

    out = set()
    for r in records:
        row = orjson.loads(r.value)["data"][0]
        out.add((int(row["id"]), int(row["version"])))
    return out


def _progress(kafka: KafkaCluster, group: str, src: str) -> int:
    return sum(committed(kafka, group, src).values())


def _mid_stream(kills: list[tuple[int, int]]) -> int:
    """The kills that found records produced but not yet committed."""
    return sum(1 for done, available in kills if done < available)


def test_sigkills_and_a_rebalance_lose_nothing_and_duplicate_nothing(
    apache: KafkaCluster, names, workers, record_property
) -> None:
    src, out, group = names("eos.canal"), names("eos.debezium"), names("eos")
    records = row_changes(rows=72_000, updates=3)  # 288,000 changes of 72,000 rows
    total = len(records)
    # The input arrives in chunks, one more after each kill, so a kill lands mid-stream
    # (a worker converts a chunk in about a second; the kills follow each other every few seconds).
    chunk = total // STAGES
    chunks = [records[i * chunk : (i + 1) * chunk if i < STAGES - 1 else total] for i in range(STAGES)]
    produce(apache, src, chunks[0], partitions=PARTITIONS)
    produced = len(chunks[0])
    # Short transactions in small batches: the committed offset advances in small steps, so a
    # kill at a point inside a chunk finds it half done on a fast machine too (with the default
    # 500 ms a worker converts and commits a whole chunk at once and the kill comes after it).
    job = job_doc(apache, group, src, out, worker={**EXACTLY_ONCE, "batch_size": 250, "transaction_interval_ms": 20})
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    record_property("seed", seed)

    running = [workers(job, "w0").start()]
    running[0].wait_running(90)
    started = 1
    kills: list[tuple[int, int]] = []  # (committed right after the kill, produced by then)
    for stage in range(STAGES):
        if stage == 2:  # a second worker joins: a rebalance mid-run
            running.append(workers(job, f"w{started}").start())
            started += 1
        size = len(chunks[stage])
        point = produced - size + int(size * rng.uniform(0.1, 0.6))
        wait_for(lambda p=point: _progress(apache, group, src) >= p, 180, f"{point} records committed", interval=0.05)
        victim = running.pop(rng.randrange(len(running)))
        victim.send_signal(signal.SIGKILL)
        assert victim.wait(10) == -signal.SIGKILL
        kills.append((_progress(apache, group, src), produced))
        assert "worker_failed" not in victim.text(), victim.text()[-3000:]
        running.append(workers(job, f"w{started}").start())  # restarted at once
        started += 1
        enough = len(kills) >= KILLS and _mid_stream(kills) >= MID_STREAM
        rest = chunks[stage + 1 :] if enough else chunks[stage + 1 : stage + 2]
        for c in rest:  # the next chunk, or all that is left once the kills are enough
            produce(apache, src, c, partitions=PARTITIONS)
            produced += len(c)
        running[-1].wait_running(90)
        if enough:
            break
    record_property("committed_at_kills", kills)
    print(f"kills at (committed, produced): {kills}")
    mid = _mid_stream(kills)
    assert mid >= MID_STREAM, f"kills at (committed, produced) {kills}: {mid} mid-stream, fewer than {MID_STREAM}"

    sizes = partition_sizes(records, PARTITIONS)
    wait_for(lambda: committed(apache, group, src) == sizes, 240, "the workers to finish")
    for w in running:
        w.wait_running(90)  # signal handlers installed: SIGTERM is a clean stop
        w.send_signal(signal.SIGTERM)
    for w in running:
        assert w.wait(60) == 0, w.text()[-3000:]
        assert "Traceback" not in w.text()
    print(f"seed {seed}: SIGKILLs at (committed, produced) {kills} of {total}; {started} worker processes")
    assert_exactly_once(apache, src, out, records, record_property)


def test_a_broker_restart_mid_run_loses_nothing_and_duplicates_nothing(
    apache: KafkaCluster, names, workers, record_property
) -> None:
    src, out, group = names("eos-outage.canal"), names("eos-outage.debezium"), names("eos-outage")
    # Enough input that the outage comes mid-run on an idle machine too (40,000 changes were
    # all committed before the kill once: the worker converts them in about a second).
    records = row_changes(rows=50_000, updates=3)
    produce(apache, src, records, partitions=PARTITIONS)
    # The producer must outlast the outage plus the broker's start-up (see test_broker_faults).
    job = job_doc(apache, group, src, out, worker=EXACTLY_ONCE, producer={"request_timeout_ms": 120_000})
    worker = workers(job, "worker").start()
    worker.wait_running(90)
    wait_for(lambda: _progress(apache, group, src) >= len(records) // 10, 120, "the first commits", interval=0.05)
    apache.server.stop(kill=True)  # SIGKILL: transactions in flight stay open
    try:
        time.sleep(8.0)
        alive = worker.proc.poll() is None
    finally:
        apache.server.start()
    assert alive, f"the worker exited while the broker was down:\n{worker.text()[-3000:]}"
    at_restart = _progress(apache, group, src)
    assert at_restart < len(records), "the fault came after the work was done"
    wait_for(
        lambda: committed(apache, group, src) == partition_sizes(records, PARTITIONS),
        240,
        "the worker to catch up after the outage",
    )
    assert worker.proc.poll() is None, "the worker was restarted"
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(60) == 0, worker.text()[-3000:]
    record_property("committed_at_broker_restart", at_restart)
    assert_exactly_once(apache, src, out, records, record_property)


def test_the_embedded_broker_refuses_exactly_once_with_one_error_line(kafka: KafkaCluster, names, workers) -> None:
    if kafka.backend != "embedded":
        pytest.skip("the refusal is for brokers without transactions (the embedded broker)")
    src, out, group = names("eos-refused.canal"), names("eos-refused.debezium"), names("eos-refused")
    produce(kafka, src, row_changes(rows=10, updates=0), partitions=1)
    worker = workers(job_doc(kafka, group, src, out, worker=EXACTLY_ONCE), "worker").start()
    assert worker.wait(60) == ExitCode.USAGE, worker.text()
    text = worker.text()
    errors = [line for line in text.splitlines() if line.startswith("cdc-smt: error:")]
    assert len(errors) == 1, text
    assert "exactly_once needs Kafka transactions" in errors[0] and "at_least_once" in errors[0]
    assert "Traceback" not in text
    assert not committed(kafka, group, src), "nothing was consumed"
