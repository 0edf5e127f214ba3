"""Small aiokafka helpers shared by the worker, the demo, the tests and the benchmark.

``conn`` everywhere is either a bootstrap string (``"127.0.0.1:9092"``) or the
keyword arguments of an aiokafka client (``KafkaSettings.aiokafka_kwargs()``),
so SASL/SSL settings flow through unchanged.

Producing uses aiokafka's batch API (``create_batch``/``send_batch``), several
times faster than one ``send()`` per message, with partitions chosen the way the
Java client chooses them (murmur2 of the key), so keyed output lands where any
Kafka producer would put it.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections import defaultdict
from typing import Any, Iterable, Mapping, Sequence

from cdc_smt.transforms.model import Record

Conn = str | Mapping[str, Any]

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF
_WORDS: dict[int, Any] = {}


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (``org.apache.kafka.common.utils.Utils.murmur2``), unsigned.

    Twice as fast as aiokafka's pure-Python version: words are unpacked with one
    ``struct`` call; the result is identical.
    """
    length = len(data)
    h = 0x9747B28C ^ length
    n4 = length >> 2
    if n4:
        unpack = _WORDS.get(n4)
        if unpack is None:
            unpack = _WORDS[n4] = struct.Struct(f"<{n4}I").unpack_from
        for k in unpack(data):
            k = (k * _M) & _MASK
            k ^= k >> 24
            k = (k * _M) & _MASK
            h = ((h * _M) & _MASK) ^ k
    rest = length & 3
    if rest:
        base = length & ~3
        if rest == 3:
            h ^= data[base + 2] << 16
        if rest >= 2:
            h ^= data[base + 1] << 8
        h ^= data[base]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h


def partition_for(key: bytes | None, partitions: int, keyless: int = 0) -> int:
    """The Java client's partition for ``key``; ``keyless % partitions`` for a null key."""
    if key is None:
        return keyless % partitions
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def client_kwargs(conn: Conn) -> dict[str, Any]:
    if isinstance(conn, str):
        return {"bootstrap_servers": conn}
    return dict(conn)


def _admin_kwargs(conn: Conn) -> dict[str, Any]:
    kw = client_kwargs(conn)
    kw.pop("client_id", None)
    return kw


async def wait_until_ready(conn: Conn, timeout: float = 30.0) -> None:
    """Return once the cluster answers a metadata request (raises ``TimeoutError``)."""
    from aiokafka.admin import AIOKafkaAdminClient

    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        admin = AIOKafkaAdminClient(**_admin_kwargs(conn), request_timeout_ms=5000)
        try:
            await admin.start()
            await admin.list_topics()
            return
        except Exception as exc:  # noqa: BLE001 - retried until the deadline
            last = exc
            await asyncio.sleep(0.25)
        finally:
            await admin.close()
    raise TimeoutError(f"Kafka at {client_kwargs(conn).get('bootstrap_servers')} not ready after {timeout:.0f}s: {last}")


async def list_topics(conn: Conn) -> set[str]:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(**_admin_kwargs(conn))
    await admin.start()
    try:
        return set(await admin.list_topics())
    finally:
        await admin.close()


async def partition_counts(conn: Conn, topics: Iterable[str]) -> dict[str, int]:
    """Partitions per existing topic (missing topics are left out)."""
    from aiokafka.admin import AIOKafkaAdminClient

    names = sorted(set(topics))
    if not names:
        return {}
    admin = AIOKafkaAdminClient(**_admin_kwargs(conn))
    await admin.start()
    try:
        out = {}
        for desc in await admin.describe_topics(names):
            if desc.get("error_code", 0) == 0 and desc.get("partitions"):
                out[desc["topic"]] = len(desc["partitions"])
        return out
    finally:
        await admin.close()


async def create_topics(
    conn: Conn,
    topics: Mapping[str, int],
    *,
    replication_factor: int = 1,
    config: Mapping[str, str] | None = None,
) -> list[str]:
    """Create the topics (name -> partitions) that do not exist yet; return those created."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.errors import TopicAlreadyExistsError

    admin = AIOKafkaAdminClient(**_admin_kwargs(conn))
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        wanted = [
            NewTopic(name, n, replication_factor, topic_configs=dict(config or {}))
            for name, n in topics.items()
            if name not in existing
        ]
        if not wanted:
            return []
        try:
            resp = await admin.create_topics(wanted)
        except TopicAlreadyExistsError:
            return []
        created = []
        for name, code, *rest in getattr(resp, "topic_errors", []):
            if code == 0:
                created.append(name)
            elif code != TopicAlreadyExistsError.errno:
                msg = rest[0] if rest else ""
                raise RuntimeError(f"cannot create topic {name}: error {code} {msg or ''}".strip())
        return created
    finally:
        await admin.close()


async def produce_records(
    conn: Conn,
    topic: str,
    records: Iterable[Record],
    *,
    partition: int | None = None,
    max_batch_bytes: int = 1_000_000,
    producer: Any = None,
) -> int:
    """Produce ``records`` to ``topic`` with the batch API and wait for every ack.

    Partition: ``partition`` if given, else ``record.partition`` if set, else
    murmur2 of the key (null keys: partition 0). Returns the number produced.
    """
    from aiokafka import AIOKafkaProducer

    own = producer is None
    if own:
        producer = AIOKafkaProducer(**client_kwargs(conn), acks="all", max_batch_size=max_batch_bytes, linger_ms=5)
        await producer.start()
    try:
        n_parts = len(await producer.partitions_for(topic))
        batches: dict[int, Any] = {}
        futures: list[asyncio.Future] = []
        count = 0
        for r in records:
            p = partition if partition is not None else r.partition if r.partition is not None else partition_for(r.key, n_parts)
            batch = batches.get(p)
            if batch is None:
                batch = batches[p] = producer.create_batch()
            headers = [(k, v) for k, v in r.headers] if r.headers else None
            if batch.append(key=r.key, value=r.value, timestamp=r.timestamp, headers=headers or []) is None:
                futures.append(await producer.send_batch(batch, topic, partition=p))
                batch = batches[p] = producer.create_batch()
                if batch.append(key=r.key, value=r.value, timestamp=r.timestamp, headers=headers or []) is None:
                    raise ValueError(f"record of {len(r.value or b'')} bytes does not fit in a batch of {max_batch_bytes}")
            count += 1
        for p, batch in batches.items():
            if batch.record_count():
                futures.append(await producer.send_batch(batch, topic, partition=p))
        if futures:
            await asyncio.gather(*futures)
        return count
    finally:
        if own:
            await producer.stop()


def _to_record(msg: Any) -> Record:
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
                out[tp.partition].extend(_to_record(m) for m in msgs)
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
                if all(pos >= ends[tp] for pos, tp in zip(positions, tps)):
                    break
            elif count >= min_records and time.monotonic() - last_new >= idle:
                break
        return [r for p in sorted(out) for r in out[p]]
    finally:
        await consumer.stop()


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
        await consumer.stop()


__all__ = [
    "client_kwargs",
    "committed_offsets",
    "consume_all",
    "create_topics",
    "list_topics",
    "murmur2",
    "partition_counts",
    "partition_for",
    "produce_records",
    "wait_until_ready",
]
