"""A consumer group's committed offsets."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

from cdc_smt.connector.kafka.consume import stop_consumer
from cdc_smt.connector.kafka.settings import Conn, client_kwargs


async def committed_offsets(conn: Conn, group: str, topics: Sequence[str]) -> dict[tuple[str, int], int]:
    """(topic, partition) -> committed offset of ``group``; partitions without a commit are left out.

    Asks the group coordinator through a consumer that never joins the group
    (OffsetFetch), which every broker we test against supports.
    """
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(**client_kwargs(conn), group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        # A consumer without a subscription holds no topic metadata on Apache Kafka (Tansu
        # returns every topic anyway): fetch it, or no partition is found.
        await consumer._client.force_metadata_update()  # noqa: SLF001
        out: dict[tuple[str, int], int] = {}
        for topic in topics:
            for p in sorted(consumer.partitions_for_topic(topic) or ()):
                off = await consumer.committed(TopicPartition(topic, p))
                if off is not None and off >= 0:
                    out[(topic, p)] = off
        return out
    finally:
        await stop_consumer(consumer)


T = TypeVar("T")


class CoordinatorClosed(Exception):
    """A commit given up because the consumer's group coordinator closed meanwhile."""


async def unless_coordinator_closes(consumer: Any, commit: Awaitable[T]) -> T:
    """``commit`` (a commit through ``consumer``), given up once ``consumer``'s group coordinator closes.

    aiokafka retries a commit for as long as the error is retriable, and once its
    coordinator is closing it no longer looks one up: a commit under way when the
    coordinator closes with the coordinator marked dead (the broker was away) retries
    ``GroupCoordinatorNotAvailable`` for ever, without a log line. Faust closes the
    coordinator when a rebalance comes while the app stops, so a worker failing in a
    broker outage never exited. Raises :class:`CoordinatorClosed` then (the offsets
    stay uncommitted); the commit is cancelled.
    """
    task = asyncio.ensure_future(commit)
    closing = getattr(getattr(consumer, "_coordinator", None), "_closing", None)  # noqa: SLF001
    if not isinstance(closing, asyncio.Future):  # no group (manual assignment)
        return await task
    try:
        if not closing.done():
            await asyncio.wait({task, closing}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    if task.done():
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    raise CoordinatorClosed(f"the group coordinator of {getattr(consumer, '_group_id', None)!r} closed")


__all__ = ["CoordinatorClosed", "committed_offsets", "unless_coordinator_closes"]
