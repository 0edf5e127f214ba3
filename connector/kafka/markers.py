"""Commit markers: which writer committed which unit of work, in the same Kafka transaction as its output.

A transactional writer (a backfill stream's share of a micro-batch) sends one
marker record to a commit topic as the last record of its transaction, so the
marker is visible exactly when the output is. Before writing a unit again after
a crash, the writer reads the markers of its key with ``read_committed`` and
skips a unit that is already there.

The key is the writer's identity (``<run>/<stream>``), the value a JSON object
(the unit and what it wrote). The topic is compacted: the newest marker per
writer is what a re-run needs, since a writer's units commit in order.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import orjson

from cdc_smt.connector.kafka.consume import stop_consumer
from cdc_smt.connector.kafka.partitioner import partition_for
from cdc_smt.connector.kafka.settings import Conn, client_kwargs
from cdc_smt.transforms.model import Record

#: Topic configuration of a commit topic the connector creates.
COMMIT_TOPIC_CONFIG = {"cleanup.policy": "compact"}


def marker_record(topic: str, partitions: int, key: str, value: Mapping[str, Any]) -> Record:
    """The marker of ``key`` (partitioned by key, as the Java client would)."""
    raw = key.encode()
    return Record(key=raw, value=orjson.dumps(dict(value)), topic=topic, partition=partition_for(raw, partitions))


async def metadata_within(consumer: Any, deadline: float, *, pause: float = 0.2) -> None:
    """Update ``consumer``'s cluster metadata, asking again while no broker answers, until ``deadline``
    (``time.monotonic()``). A failed update leaves the cluster's topics unknown: a broker restarting
    under a backfill made its commit topic look missing, and the run stopped (a CI failure)."""
    while not await consumer._client.force_metadata_update():  # noqa: SLF001 - aiokafka's only way to refresh
        if time.monotonic() >= deadline:
            raise RuntimeError("no broker answered a metadata request in time")
        await asyncio.sleep(pause)


async def read_markers(conn: Conn, topic: str, key: str, *, timeout: float = 60.0) -> list[dict[str, Any]]:
    """Every committed marker of ``key`` on ``topic``, oldest first.

    Read with ``read_committed`` up to the high watermark seen at the start: a
    transaction still open below it (a concurrent writer between its marker and
    its commit) is waited for, so a committed marker is never missed. Raises
    ``RuntimeError`` when ``topic`` does not exist or the read takes longer than
    ``timeout`` (a transaction left open: see :func:`connector.kafka.produce.fence`).
    """
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(
        **client_kwargs(conn),
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    await consumer.start()
    try:
        deadline = time.monotonic() + timeout
        await metadata_within(consumer, deadline)  # the topic may be brand new
        parts = consumer.partitions_for_topic(topic)
        if not parts:
            raise RuntimeError(f"commit topic {topic!r} does not exist")
        raw = key.encode()
        p = partition_for(raw, len(parts))  # the only partition that can hold the key's markers
        tp = TopicPartition(topic, p)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        found: list[dict[str, Any]] = []
        target: int | None = None
        while True:
            batch = await consumer.getmany(tp, timeout_ms=200, max_records=10_000)
            found.extend(orjson.loads(m.value) for m in batch.get(tp, ()) if m.key == raw and m.value is not None)
            if target is None:
                target = consumer.highwater(tp)  # known after the first fetch answer
            if target is not None and await consumer.position(tp) >= target:
                return found
            if time.monotonic() >= deadline:
                lso = consumer.last_stable_offset(tp)
                raise RuntimeError(
                    f"commit topic {topic}[{p}]: committed records end at {lso} below offset {target} "
                    f"after {timeout:g} s (a transaction left open)"
                )
            await asyncio.sleep(0)
    finally:
        await stop_consumer(consumer)


__all__ = ["COMMIT_TOPIC_CONFIG", "marker_record", "metadata_within", "read_markers"]
