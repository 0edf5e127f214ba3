"""What the worker does for its tail latency, outside the data path (no timing assertions)."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

from aiokafka import AIOKafkaConsumer

from cdc_smt.connector.jobconfig import load_job
from cdc_smt.connector.kafka.settings import consumer_kwargs
from cdc_smt.connector.worker.app import settle_heap


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
