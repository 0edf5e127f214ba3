"""Reading a topic back: from the beginning, to its end or until enough records arrived."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from typing import Any

from cdc_smt.connector.kafka.settings import Conn, client_kwargs
from cdc_smt.transforms.model import Record


async def stop_consumer(consumer: Any) -> None:
    """``consumer.stop()``, completed when aiokafka's own stop breaks off.

    aiokafka's ``Fetcher.close`` cancels each pending fetch task and awaits it; a
    fetch sleeping in its retry back-off (the broker went away) re-raises that
    cancellation out of ``stop()`` (aio-libs/aiokafka#647), which then skips the
    other pending fetches and the client's connections. In the worker that killed
    Faust's consumer thread with a traceback and held its shutdown for a minute.
    A cancellation of the caller itself still propagates.
    """
    try:
        await consumer.stop()
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        fetcher = getattr(consumer, "_fetcher", None)
        pending = list(getattr(fetcher, "_pending_tasks", ()))
        for fetch in pending:
            fetch.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await consumer._client.close()  # noqa: SLF001 - the step aiokafka's stop() skipped


def to_record(msg: Any) -> Record:
    """An aiokafka ``ConsumerRecord`` as the model's :class:`Record` (null header values as empty bytes)."""
    return Record(
        value=msg.value,
        key=msg.key,
        topic=msg.topic,
        partition=msg.partition,
        offset=msg.offset,
        timestamp=msg.timestamp,
        headers=[(k, bytes(v) if v is not None else b"") for k, v in (msg.headers or ())],
    )


async def consume_all(
    conn: Conn,
    topic: str,
    *,
    min_records: int | None = None,
    timeout: float = 30.0,
    idle: float = 1.0,
) -> list[Record]:
    """Read ``topic`` from the beginning.

    Without ``min_records``: up to the end offsets seen at the start. With it:
    until at least that many records arrived and nothing new came for ``idle``
    seconds (so duplicates past the count are seen too), or until ``timeout``.
    Records come back ordered by partition, then offset.
    """
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(**client_kwargs(conn), enable_auto_commit=False, auto_offset_reset="earliest")
    await consumer.start()
    out: dict[int, list[Record]] = defaultdict(list)
    try:
        deadline = time.monotonic() + timeout
        parts = None
        while parts is None and time.monotonic() < deadline:
            await consumer._client.force_metadata_update()  # noqa: SLF001 - the topic may be brand new
            parts = consumer.partitions_for_topic(topic)
            if parts is None:
                await asyncio.sleep(0.2)
        if not parts:
            return []
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps) if min_records is None else None
        count = 0
        last_new = time.monotonic()
        while time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=200, max_records=10_000)
            got = 0
            for tp, msgs in batch.items():
                out[tp.partition].extend(to_record(m) for m in msgs)
                got += len(msgs)
            count += got
            if got:
                last_new = time.monotonic()
                continue
            if ends is not None:
                # Drained past the end offsets seen at the start. (Nothing new came
                # in this poll: some brokers report the end as the last batch's
                # base offset + 1, so reaching it alone is not enough.)
                positions = [await consumer.position(tp) for tp in tps]
                if all(pos >= ends[tp] for pos, tp in zip(positions, tps, strict=True)):
                    break
            elif min_records is not None and count >= min_records and time.monotonic() - last_new >= idle:
                break
        return [r for p in sorted(out) for r in out[p]]
    finally:
        await stop_consumer(consumer)


__all__ = ["consume_all", "stop_consumer", "to_record"]
