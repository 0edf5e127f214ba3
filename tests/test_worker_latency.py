"""What the worker does for its tail latency, outside the data path (no timing assertions)."""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from cdc_smt.connector.jobconfig import load_job
from cdc_smt.connector.kafka.settings import consumer_kwargs
from cdc_smt.connector.worker.app import (
    CdcConsumerThread,
    FetchedRecords,
    LoopConsumerThread,
    build_app,
    current_assignment,
    fetched_in_earlier_assignment,
    set_switch_interval,
    settle_heap,
)
from cdc_smt.transforms.errors import ConfigError


def job(**sections: Any) -> Any:
    return load_job(
        {
            "id": "job-1",
            "kafka": {"bootstrap_servers": "127.0.0.1:9092"},
            "source": {"topics": ["in"], "format": "canal-json"},
            "sink": {"topic": "out", "format": "debezium-json"},
            **sections,
        }
    )


def test_settle_heap_puts_what_start_up_built_out_of_the_collectors_reach() -> None:
    survivor = [{"built": "at start-up"}]  # a container the collector tracks
    try:
        settle_heap()
        assert gc.get_freeze_count() > 0
        assert not any(o is survivor for o in gc.get_objects())  # frozen: no collection walks it
        later = [{"allocated": "after start-up"}]
        assert any(o is later for o in gc.get_objects())  # the data path's objects are still collected
    finally:
        gc.unfreeze()


def test_consumer_kwargs_carry_the_jobs_fetch_settings_to_a_real_aiokafka_consumer() -> None:
    settings = job(consumer={"fetch_max_wait_ms": 7, "max_partition_fetch_bytes": 65536}).consumer
    kwargs = consumer_kwargs(settings, max_poll_records=123)
    assert kwargs["fetch_max_wait_ms"] == 7 and kwargs["max_partition_fetch_bytes"] == 65536
    assert kwargs["enable_auto_commit"] is False  # the host commits what was acknowledged, nothing else

    async def made() -> dict[str, Any]:  # every key is one aiokafka takes (it refuses unknown ones)
        consumer = AIOKafkaConsumer(bootstrap_servers="127.0.0.1:9092", **kwargs)
        try:
            return vars(consumer)
        finally:
            await consumer.stop()

    seen = asyncio.run(made())
    assert seen["_fetch_max_wait_ms"] == 7 and seen["_max_partition_fetch_bytes"] == 65536
    assert seen["_max_poll_records"] == 123 and seen["_enable_auto_commit"] is False


def test_a_fetch_received_after_a_reassignment_is_told_from_one_of_the_current_assignment() -> None:
    """A fetch asked for ahead is received a whole conversion after aiokafka returned it: its
    records are processed only if no rebalance replaced the assignment they were fetched in."""
    tp = TopicPartition("in", 0)

    async def seen() -> list[bool]:
        consumer = AIOKafkaConsumer(bootstrap_servers="127.0.0.1:9092")  # never started: assignments only
        try:
            consumer.assign([tp])
            fetched = FetchedRecords({tp: []}, current_assignment(consumer))
            before = fetched_in_earlier_assignment(fetched, consumer)
            consumer.assign([tp])  # a rebalance: the same partition, a new assignment
            after = fetched_in_earlier_assignment(fetched, consumer)
            again = fetched_in_earlier_assignment(FetchedRecords({tp: []}, current_assignment(consumer)), consumer)
            return [before, after, again, fetched_in_earlier_assignment({tp: []}, consumer)]
        finally:
            await consumer.stop()

    assert asyncio.run(seen()) == [False, True, False, False]


def test_fetch_ahead_is_off_unless_the_job_turns_it_on() -> None:
    assert job().worker.fetch_ahead is False
    assert job(worker={"fetch_ahead": True}).worker.fetch_ahead is True
    with pytest.raises(ConfigError, match="fetch_ahead"):
        job(worker={"fetch_ahead": "sometimes"})


def test_the_consumer_runs_in_fausts_thread_unless_the_job_asks_for_the_workers_loop(tmp_path) -> None:
    async def consumer_of(settings: dict[str, Any]) -> tuple[type, bool]:
        app = build_app(job(worker={"data_dir": str(tmp_path), **settings}))
        thread = app.consumer._thread
        try:
            return type(thread), thread.thread_loop is asyncio.get_running_loop()
        finally:
            if thread.thread_loop is not asyncio.get_running_loop():
                thread.thread_loop.close()  # the thread's own loop (never started here)

    assert asyncio.run(consumer_of({})) == (LoopConsumerThread, True)  # the default: the worker's loop
    assert asyncio.run(consumer_of({"consumer_thread": True})) == (CdcConsumerThread, False)
    assert asyncio.run(consumer_of({"consumer_thread": False})) == (LoopConsumerThread, True)
    assert job().worker.consumer_thread is False
    with pytest.raises(ConfigError, match="consumer_thread"):
        job(worker={"consumer_thread": "yes"})


def test_a_call_into_the_loop_consumer_runs_in_the_callers_thread_and_task(tmp_path) -> None:
    """Faust's calls into its consumer (fetch, seek, commit) are plain awaits: no queue, no other thread."""

    async def where() -> tuple[int, Any]:
        return threading.get_ident(), asyncio.current_task()

    async def seen() -> tuple[bool, bool]:
        thread = build_app(job(worker={"data_dir": str(tmp_path), "consumer_thread": False})).consumer._thread
        ident, task = await thread.call_thread(where)
        return ident == threading.get_ident(), task is asyncio.current_task()

    assert asyncio.run(seen()) == (True, True)


def test_the_worker_sets_the_interpreters_switch_interval_only_when_told_to() -> None:
    """``worker.switch_interval_ms`` bounds how long the consumer thread waits for the lock (Python's is 5 ms)."""
    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)
        assert job().worker.switch_interval_ms == 0
        assert set_switch_interval(job().worker.switch_interval_ms) == pytest.approx(0.005)
        assert sys.getswitchinterval() == pytest.approx(0.005)  # the default leaves Python's
        set_switch_interval(job(worker={"switch_interval_ms": 0.5}).worker.switch_interval_ms)
        assert sys.getswitchinterval() == pytest.approx(0.0005)
        assert set_switch_interval(2) == pytest.approx(0.0005)  # returns the one before, to put back
        assert sys.getswitchinterval() == pytest.approx(0.002)
    finally:
        sys.setswitchinterval(before)
    with pytest.raises(ConfigError, match="switch_interval_ms"):
        job(worker={"switch_interval_ms": -1})


def test_a_stop_that_outlasts_the_shutdown_timeout_is_given_up() -> None:
    """Faust's stop has no deadline: ``worker.shutdown_timeout_s`` bounds it (the worker then exits 1)."""
    from cdc_smt.connector.worker.app import stop_within

    async def outcomes() -> tuple[bool, bool, bool]:
        hung = asyncio.get_running_loop().create_future()

        async def hangs() -> None:
            await hung

        async def stops() -> None:
            await asyncio.sleep(0)

        gave_up = await stop_within(hangs(), 0.05)
        await asyncio.sleep(0)  # the cancellation reaches the abandoned stop
        return gave_up, await stop_within(stops(), 30), hung.cancelled()

    assert asyncio.run(outcomes()) == (False, True, True)
    with pytest.raises(RuntimeError, match="broke"):

        async def breaks() -> None:
            raise RuntimeError("broke")

        asyncio.run(stop_within(breaks(), 30))
    assert job().worker.shutdown_timeout_s == 60
    assert job(worker={"shutdown_timeout_s": 5}).worker.shutdown_timeout_s == 5
    with pytest.raises(ConfigError, match="shutdown_timeout_s"):
        job(worker={"shutdown_timeout_s": 0})
