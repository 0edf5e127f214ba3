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
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
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


@dataclass(frozen=True)
class OpenMarker:
    """The marker of the oldest transaction still open on a commit partition: the writer holding
    ``read_committed`` readers back. Its first record on the partition is its marker (a writer
    sends one record there, last), at the partition's last stable offset."""

    offset: int
    key: bytes | None
    value: dict[str, Any] | None


#: Decides, given the writer holding a marker read back and how long it has held it (seconds),
#: whether to end its transaction; ``True`` when it did (the read goes on), ``False`` to keep waiting.
OnStall = Callable[[OpenMarker, float], Awaitable[bool]]

#: Seconds a marker read waits on an open transaction before it asks ``on_stall`` about its writer.
STALL_S = 5.0


async def open_marker(conn: Conn, tp: Any, offset: int, *, timeout: float = 10.0) -> OpenMarker | None:
    """The record at ``offset`` of ``tp`` read with ``read_uncommitted`` (the first record of the
    transaction that holds the last stable offset there), or ``None`` when it is not there (the
    transaction ended meanwhile, or no broker answered within ``timeout``)."""
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(**client_kwargs(conn), enable_auto_commit=False, isolation_level="read_uncommitted")
    await consumer.start()
    try:
        consumer.assign([tp])
        consumer.seek(tp, offset)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            batch = await consumer.getmany(tp, timeout_ms=200, max_records=1)
            for m in batch.get(tp, ()):
                if m.offset != offset:
                    return None  # a control record there: the transaction has ended
                return OpenMarker(offset, m.key, _json_object(m.value))
        return None
    finally:
        await stop_consumer(consumer)


def _json_object(raw: bytes | None) -> dict[str, Any] | None:
    """A marker's value as an object (``None`` when it is not one: not a marker this module wrote)."""
    try:
        value = orjson.loads(raw) if raw is not None else None
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


async def read_markers(
    conn: Conn,
    topic: str,
    key: str,
    *,
    timeout: float = 60.0,
    on_stall: OnStall | None = None,
    stall_s: float = STALL_S,
) -> list[dict[str, Any]]:
    """Every committed marker of ``key`` on ``topic``, oldest first.

    Read with ``read_committed`` up to the high watermark seen at the start: a
    transaction still open below it (a concurrent writer between its marker and
    its commit) is waited for, so a committed marker is never missed. Once one
    has held the read for ``stall_s``, ``on_stall`` is asked (again every
    ``stall_s``) about its writer (:class:`OpenMarker`): it may end a transaction
    no live writer will finish (:func:`connector.kafka.produce.fence`: the
    transaction is aborted, or completes if its commit had begun), and the read
    goes on. Raises ``RuntimeError`` when ``topic`` does not exist or the read
    takes longer than ``timeout`` (a transaction left open).
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
        stall = _Stall(stall_s)
        while True:
            batch = await consumer.getmany(tp, timeout_ms=200, max_records=10_000)
            found.extend(_markers_of(batch, tp, raw))
            if target is None:
                target = consumer.highwater(tp)  # known after the first fetch answer
            position = await consumer.position(tp)
            if target is not None and position >= target:
                return found
            lso = consumer.last_stable_offset(tp)
            if time.monotonic() >= deadline:
                held = stall.holder.key if stall.holder is not None else None
                holder = f" by the writer of {held.decode(errors='replace')}" if held else ""
                raise RuntimeError(
                    f"commit topic {topic}[{p}]: committed records end at {lso} below offset {target} "
                    f"after {timeout:g} s (a transaction left open{holder})"
                )
            if on_stall is not None and lso is not None and position >= lso and stall.due(lso):
                stall.holder = await open_marker(conn, tp, lso, timeout=max(min(deadline - time.monotonic(), 10), 1))
                if stall.holder is not None and await _still_held(consumer, tp, lso, found, raw):
                    if await on_stall(stall.holder, stall.held()):
                        stall.ended()
            await asyncio.sleep(0)
    finally:
        await stop_consumer(consumer)


def _markers_of(batch: Mapping[Any, Any], tp: Any, raw: bytes) -> list[dict[str, Any]]:
    """The markers of key ``raw`` in a ``getmany`` answer."""
    return [orjson.loads(m.value) for m in batch.get(tp, ()) if m.key == raw and m.value is not None]


async def _still_held(consumer: Any, tp: Any, lso: int, found: list[dict[str, Any]], raw: bytes) -> bool:
    """Is the read still held at ``lso`` (a fresh fetch answer), so the holder looked up there is the
    one holding it now? Markers of ``raw`` fetched meanwhile are kept in ``found``."""
    batch = await consumer.getmany(tp, timeout_ms=200, max_records=10_000)
    found.extend(_markers_of(batch, tp, raw))
    return consumer.last_stable_offset(tp) == lso


class _Stall:
    """How long a marker read has been held at one last stable offset, and when to ask about it again."""

    def __init__(self, every: float) -> None:
        self.every = every
        self.offset: int | None = None
        self.since = self.asked = time.monotonic()
        self.holder: OpenMarker | None = None

    def due(self, lso: int) -> bool:
        """Has the read waited at ``lso`` for another ``every`` seconds?"""
        now = time.monotonic()
        if lso != self.offset:  # progress (or the first wait): start timing this offset
            self.offset, self.since, self.asked, self.holder = lso, now, now, None
            return False
        if now - self.asked < self.every:
            return False
        self.asked = now
        return True

    def held(self) -> float:
        return time.monotonic() - self.since

    def ended(self) -> None:
        """The holder's transaction was ended: give its abort (or commit) marker time to arrive."""
        self.asked = time.monotonic()


__all__ = [
    "COMMIT_TOPIC_CONFIG",
    "STALL_S",
    "OnStall",
    "OpenMarker",
    "marker_record",
    "metadata_within",
    "open_marker",
    "read_markers",
]
