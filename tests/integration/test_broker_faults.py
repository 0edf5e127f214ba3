"""Broker faults on Apache Kafka: the broker dies in the middle of a worker run and comes back
on the same data directory 10-20 s later. The worker recovers without being restarted, and
the output is complete: replaying it rebuilds the same tables as replaying the input
(at-least-once: duplicates allowed, nothing lost).

An outage longer than the producer's ``request_timeout_ms`` stops the worker instead (its
in-flight batches expire; nothing past them is committed): the second test shows it exits
with an error and a restarted worker still loses nothing.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections import defaultdict
from typing import Any

import pytest

from cdc_smt.transforms.changelog import replay
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import Record
from tests.integration.helpers import (
    KafkaCluster,
    committed,
    consume,
    job_doc,
    partition_sizes,
    produce,
    row_changes,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

PARTITIONS = 4
DOWN_SECONDS = 12.0


def tables(fmt: str, records: list[Record]) -> dict[Any, dict[Any, tuple[Any, ...]]]:
    """Replay ``records`` (in partition, then offset order, as a consumer of each key sees them);
    rows as (id, version, name): schemaless Debezium JSON carries DECIMAL as bytes."""
    codec = get_codec(fmt)
    by_partition: dict[int, list[Record]] = defaultdict(list)
    for r in records:
        by_partition[r.partition].append(r)
    events = [
        e
        for p in sorted(by_partition)
        for r in sorted(by_partition[p], key=lambda r: r.offset)
        for e in codec.decode(r)
    ]
    return {
        t: {k: (row["id"], row["version"], row["name"]) for k, row in rows.items()}
        for t, rows in replay(events).items()
    }


ROWS = 30_000


def test_worker_rides_out_a_broker_outage_and_the_output_replays_to_the_same_tables(
    apache: KafkaCluster, names, workers, record_property
) -> None:
    src, out, group = names("outage.canal"), names("outage.debezium"), names("outage")
    # 90,000 changes: a backlog the worker (~60k msgs/s on an idle machine) is still busy with at the fault
    before = row_changes(rows=ROWS, updates=2)
    produce(apache, src, before, partitions=PARTITIONS)
    job = job_doc(
        apache,
        group,
        src,
        out,
        worker={"create_topics": True, "batch_size": 200, "commit_interval_ms": 200},
        # A batch not acknowledged within the producer's request timeout fails the worker (its
        # offsets stay uncommitted). The outage seen by clients is the down time plus the broker's
        # start-up (about 10-15 s here), so the timeout must exceed both, as Java's
        # delivery.timeout.ms (120 s) does.
        producer={"request_timeout_ms": 120_000},
    )
    worker = workers(job, "worker").start()
    worker.wait_running(90)
    wait_for(lambda: sum(committed(apache, group, src).values()) >= 3000, 120, "the first commits", interval=0.05)

    apache.server.stop(kill=True)  # SIGKILL: no controlled shutdown
    stopped_at = time.monotonic()
    try:
        time.sleep(DOWN_SECONDS)
        alive = worker.proc.poll() is None
    finally:
        apache.server.start()  # same data directory, same ports (and the next tests need it)
    down = time.monotonic() - stopped_at
    assert alive, f"the worker exited while the broker was down:\n{worker.text()[-3000:]}"
    at_restart = sum(committed(apache, group, src).values())
    assert at_restart < len(before), "the fault came after the work was done"

    after = [
        Record(value=r.value, key=r.key) for r in row_changes(rows=ROWS, updates=3)[3 * ROWS :]
    ]  # one more update per row
    produce(apache, src, after, partitions=PARTITIONS)
    everything = before + after
    sizes = partition_sizes(everything, PARTITIONS)
    wait_for(lambda: committed(apache, group, src) == sizes, 240, "the worker to catch up after the outage")
    assert worker.proc.poll() is None, "the worker was restarted"
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(60) == 0, worker.text()[-3000:]

    source = consume(apache, src, min_records=len(everything), timeout=120)
    output = consume(apache, out, min_records=len(everything), timeout=120, idle=2.0)
    duplicates = len(output) - len(everything)
    record_property("broker_down_seconds", round(down, 1))
    record_property("duplicates", duplicates)
    print(f"broker down {down:.1f}s with {at_restart} of {len(before)} committed: {duplicates} duplicates")
    assert duplicates >= 0
    expected = tables("canal-json", source)
    assert len(expected[("shop", "items")]) == ROWS
    assert tables("debezium-json", output) == expected


def test_an_outage_past_the_producer_timeout_stops_the_worker_and_a_restart_loses_nothing(
    apache: KafkaCluster, names, workers
) -> None:
    src, out, group = names("long-outage.canal"), names("long-outage.debezium"), names("long-outage")
    # A backlog the worker is still converting when the broker goes: with nothing left to
    # send, an idle worker rightly waits for the broker instead of failing.
    records = row_changes(rows=30000, updates=1)
    produce(apache, src, records, partitions=PARTITIONS)
    job = job_doc(
        apache,
        group,
        src,
        out,
        worker={"create_topics": True, "batch_size": 200, "commit_interval_ms": 200},
        producer={"request_timeout_ms": 5000},
    )
    # On the Python path (several times slower than the native plan) the worker is surely still
    # converting the backlog when the broker goes: the native one can have produced all of it by
    # then (only its commits still due), and then rightly waits for the broker instead of failing.
    first = workers(job, "first", env={"CDC_SMT_NATIVE": "0"}).start()
    first.wait_running(90)
    wait_for(lambda: sum(committed(apache, group, src).values()) >= 2000, 120, "the first commits", interval=0.05)
    before_stop = sum(committed(apache, group, src).values())
    apache.server.stop(kill=True)
    assert before_stop < len(records), "the worker had finished before the outage: nothing was in flight"
    try:
        # The in-flight batches expire after 5 s and fail the worker ...
        wait_for(lambda: first.has_event("worker_failed") or first.proc.poll() is not None, 60, "the worker to fail")
        time.sleep(max(0.0, DOWN_SECONDS - 5))
    finally:
        apache.server.start()
    code = first.wait(90)  # ... which then stops by itself
    assert code != 0
    assert first.has_event("worker_failed"), first.text()[-3000:]
    assert "Traceback" not in first.text()

    second = workers(job, "second").start()
    second.wait_running(90)
    wait_for(
        lambda: committed(apache, group, src) == partition_sizes(records, PARTITIONS),
        180,
        "the restarted worker to finish",
    )
    second.send_signal(signal.SIGTERM)
    assert second.wait(60) == 0
    source = consume(apache, src, min_records=len(records), timeout=120)
    output = consume(apache, out, min_records=len(records), timeout=120, idle=2.0)
    assert tables("debezium-json", output) == tables("canal-json", source)


def test_a_consumer_stopped_while_the_broker_is_away_stops_without_raising(
    apache: KafkaCluster, names, caplog: pytest.LogCaptureFixture
) -> None:
    """aiokafka's own ``stop()`` re-raises the cancellation of a fetch sleeping in its retry
    back-off (aio-libs/aiokafka#647): in the worker that killed Faust's consumer thread with a
    traceback and held its exit for a minute. ``K.stop_consumer`` completes the stop."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    from cdc_smt.connector import kafka as K

    topic = names("stop-while-away")
    produce(apache, topic, row_changes(rows=10, updates=0), partitions=1)

    async def run() -> None:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=apache.bootstrap, enable_auto_commit=False, retry_backoff_ms=60_000
        )
        await consumer.start()
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        while not (await consumer.getmany(timeout_ms=500)).get(tp):
            pass
        apache.server.stop(kill=True)
        deadline = time.monotonic() + 30
        # The fetch in flight fails and its task sleeps out the 60 s back-off.
        while not any("Failed fetch messages" in r.getMessage() for r in caplog.records):
            assert time.monotonic() < deadline, "no fetch failed after the broker went away"
            await asyncio.sleep(0.1)
        assert consumer._fetcher._pending_tasks, "no fetch task pending in its back-off"  # noqa: SLF001
        await asyncio.wait_for(K.stop_consumer(consumer), 20)

    caplog.set_level(logging.ERROR, logger="aiokafka")
    try:
        asyncio.run(run())
    finally:
        apache.server.start()


def test_a_commit_under_way_when_the_group_coordinator_closes_is_given_up(apache: KafkaCluster, names) -> None:
    """A rebalance while the worker stops (a broker outage outlasting the session) makes Faust
    close the consumer's group coordinator. aiokafka's commit under way then retries
    ``GroupCoordinatorNotAvailable`` for ever (no coordinator is looked up once it closes): the
    failed worker never exited (a CI failure). ``K.unless_coordinator_closes`` gives it up."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    from cdc_smt.connector import kafka as K

    topic, group = names("commit-closing"), names("commit-closing")
    produce(apache, topic, row_changes(rows=10, updates=0), partitions=1)
    tp = TopicPartition(topic, 0)

    async def run() -> tuple[bool, bool]:
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=apache.bootstrap,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        await consumer.start()
        try:
            while not (await consumer.getmany(timeout_ms=500)).get(tp):
                pass  # joined, partition assigned
            await asyncio.wait_for(K.unless_coordinator_closes(consumer, consumer.commit({tp: 3})), 30)
            committed_while_open = await consumer.committed(tp) == 3
            coordinator = consumer._coordinator  # noqa: SLF001
            apache.server.stop(kill=True)
            coordinator.coordinator_dead()  # as the first failed request marks it
            own = asyncio.ensure_future(consumer.commit({tp: 5}))  # aiokafka's own ...
            guarded = asyncio.ensure_future(K.unless_coordinator_closes(consumer, consumer.commit({tp: 5})))
            await asyncio.sleep(1.0)  # both looking for a coordinator
            assert not own.done() and not guarded.done()
            await coordinator.close()  # Faust's close (a rebalance while the app stops)
            with pytest.raises(K.CoordinatorClosed):
                await asyncio.wait_for(guarded, 10)
            done, _ = await asyncio.wait({own}, timeout=3)  # ... retries for ever
            own.cancel()
            return committed_while_open, not done
        finally:
            await K.stop_consumer(consumer)

    try:
        committed_while_open, own_still_retrying = asyncio.run(run())
    finally:
        apache.server.start()
    assert committed_while_open  # the guard leaves a commit that can finish alone
    assert own_still_retrying, "aiokafka's commit ends by itself now: K.unless_coordinator_closes may go"


def test_cluster_metadata_is_asked_for_again_while_the_broker_restarts(apache: KafkaCluster, names) -> None:
    """A backfill's exactly-once sink reads its commit topic's markers: a metadata update that
    failed (the broker restarting) left the topic unknown, and the run stopped with "commit topic
    ... does not exist" (a CI failure). ``metadata_within`` asks again until its deadline.
    The client runs in a thread of its own: the broker is restarted from this (the test's) thread,
    since a broker dies with the thread that started it."""
    import threading

    from aiokafka import AIOKafkaConsumer

    from cdc_smt.connector import kafka as K
    from cdc_smt.connector.kafka.markers import metadata_within

    topic = names("metadata-again")
    produce(apache, topic, row_changes(rows=3, updates=0), partitions=2)
    broker_away = threading.Event()

    async def run() -> tuple[bool, Any]:
        consumer = AIOKafkaConsumer(bootstrap_servers=apache.bootstrap, enable_auto_commit=False)
        await consumer.start()  # knows the broker, not yet the topic
        try:
            apache.server.stop(kill=True)
            failed_while_away = not await consumer._client.force_metadata_update()  # noqa: SLF001
            broker_away.set()
            await metadata_within(consumer, time.monotonic() + 120)
            return failed_while_away, consumer.partitions_for_topic(topic)
        finally:
            await K.stop_consumer(consumer)

    outcome: dict[str, Any] = {}

    def client() -> None:
        try:
            outcome["value"] = asyncio.run(run())
        except BaseException as exc:  # noqa: BLE001 - re-raised below, in the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=client, daemon=True)
    thread.start()
    try:
        broker_away.wait(60)
        time.sleep(1.0)
    finally:
        if not apache.server.running:
            apache.server.start()
    thread.join(180)
    assert not thread.is_alive(), "metadata_within did not return after the broker came back"
    if "error" in outcome:
        raise outcome["error"]
    failed_while_away, partitions = outcome["value"]
    assert failed_while_away  # what made the topic look missing
    assert partitions == {0, 1}
