"""Producing with aiokafka's batch API (``create_batch``/``send_batch``), several times
faster than one ``send()`` per message; partitions chosen as the Java client chooses them.

:class:`BlockingProducer` drives a producer from synchronous code (Spark tasks)
on a private event loop, riding out a broker restart for a bounded time, and
optionally in Kafka transactions (:func:`supports_transactions` probes a
cluster for them, :func:`fence` ends what killed producers left open).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from cdc_smt.connector.kafka.admin import bootstrap_addresses, wait_until_ready
from cdc_smt.connector.kafka.errors import KafkaUnavailable
from cdc_smt.connector.kafka.partitioner import partition_for
from cdc_smt.connector.kafka.settings import Conn, client_kwargs, producer_kwargs
from cdc_smt.connector.kafka.transactions import CHECKED_AIOKAFKA, retry_coordinator_lookups
from cdc_smt.transforms import native
from cdc_smt.transforms.errors import CdcSmtError
from cdc_smt.transforms.model import Record

if TYPE_CHECKING:
    from cdc_smt.connector.jobconfig import ProducerSettings


async def produce_records(
    conn: Conn | None,
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
        if conn is None:
            raise TypeError("produce_records needs conn (a bootstrap string or settings) when no producer is given")
        producer = AIOKafkaProducer(**client_kwargs(conn), acks="all", max_batch_size=max_batch_bytes, linger_ms=5)
        await producer.start()
    try:
        n_parts = len(await producer.partitions_for(topic))
        batches: dict[int, Any] = {}
        futures: list[asyncio.Future] = []
        count = 0
        for r in records:
            p = (
                partition
                if partition is not None
                else r.partition
                if r.partition is not None
                else partition_for(r.key, n_parts)
            )
            batch = batches.get(p)
            if batch is None:
                batch = batches[p] = producer.create_batch()
            headers = [(k, v) for k, v in r.headers] if r.headers else None
            if batch.append(key=r.key, value=r.value, timestamp=r.timestamp, headers=headers or []) is None:
                futures.append(await producer.send_batch(batch, topic, partition=p))
                batch = batches[p] = producer.create_batch()
                if batch.append(key=r.key, value=r.value, timestamp=r.timestamp, headers=headers or []) is None:
                    raise ValueError(
                        f"record of {len(r.value or b'')} bytes does not fit in a batch of {max_batch_bytes}"
                    )
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


async def produce_parts(producer: Any, parts: Sequence[Any], make_batch: Callable[[], NativeBatch]) -> int:
    """Produce each native ``ArrowPart`` (one topic partition's records of an Arrow batch,
    ``native.arrow_parts``) as whole batches from ``make_batch`` (:func:`native_batches`), the
    partitions side by side, and wait for every ack; the number produced. A partition's batches
    go in order, as :func:`produce_records` sends them."""

    async def one(part: Any) -> list[asyncio.Future]:
        futures: list[asyncio.Future] = []
        start = 0
        while start < len(part):
            batch = make_batch()
            start = batch.append_rows(part, start)
            futures.append(await producer.send_batch(batch, part.topic, partition=part.partition))
        return futures

    sent = await asyncio.gather(*(one(part) for part in parts))
    acks = [future for futures in sent for future in futures]
    if acks:
        await asyncio.gather(*acks)
    return sum(len(part) for part in parts)


class NativeBatch:
    """A record batch aiokafka's producer sends as it is (``send_batch`` takes it where it
    takes a ``BatchBuilder``): the records are written into Kafka's v2 batch bytes in Rust
    (``native/src/kafka_batch.rs``), a whole row list per call, byte for byte as aiokafka's
    builder writes them; no Python per record.

    It answers what aiokafka's accumulator and sender ask of a builder. The header is
    written when the sender builds the request, after an idempotent or transactional
    producer stamped its producer id, epoch and base sequence (``_set_producer_state``);
    a stamped batch takes no more records (its sequence range is fixed).
    """

    __slots__ = ("_batch", "_buffer", "_closed", "_producer_state")

    def __init__(self, writer: Any, batch_size: int, transactional: bool) -> None:
        self._batch = writer(batch_size, transactional)
        self._closed = False
        self._buffer: bytes | None = None
        self._producer_state = (-1, -1, 0)

    def append_rows(self, rows: list[tuple[Any, ...]], start: int = 0) -> int:
        """Append ``rows[start:]`` (``(key, value, timestamp_ms, headers)``, or a native
        ``ArrowPart``) while they fit; the index of the first row not taken. A full batch
        closes, as aiokafka's does."""
        if self._closed:
            return start
        end: int = self._batch.append(rows, start)
        if end < len(rows):
            self._closed = True
        return end

    def append(self, **_: Any) -> None:
        """aiokafka's ``send()`` appends one record to a partition's last pending batch: a
        native batch takes none (``None``: full), so the producer starts a batch of its own
        after it."""
        return None

    def close(self) -> None:
        self._closed = True

    def closed(self) -> bool:
        return self._closed

    def record_count(self) -> int:
        count: int = self._batch.record_count()
        return count

    def size(self) -> int:
        if self._buffer is not None:
            return len(self._buffer)
        size: int = self._batch.size()
        return size

    def _set_producer_state(self, producer_id: int, producer_epoch: int, base_sequence: int) -> None:
        self._closed = True
        self._producer_state = (producer_id, producer_epoch, base_sequence)

    def _build(self) -> bytes:
        self._closed = True
        if self._buffer is None:
            self._buffer = self._batch.build(*self._producer_state)
        return self._buffer


def native_batches(producer: Any) -> Callable[[], NativeBatch] | None:
    """A maker of :class:`NativeBatch` es for ``producer`` (an ``AIOKafkaProducer``), or ``None``
    when its batches must come from its own ``create_batch``: the native core is off, the
    producer compresses or serializes, or its aiokafka is not one whose internals were checked."""
    writer = native.kafka_batch()
    accumulator = getattr(producer, "_message_accumulator", None)
    if writer is None or accumulator is None or not _batches_checked(producer):
        return None
    if accumulator._compression_type != 0:  # noqa: SLF001 - only uncompressed batches are written natively
        return None
    if producer._key_serializer is not None or producer._value_serializer is not None:  # noqa: SLF001
        return None
    txn = accumulator._txn_manager  # noqa: SLF001
    transactional = txn is not None and txn.transactional_id is not None
    return partial(NativeBatch, writer, accumulator._batch_size, transactional)  # noqa: SLF001


def _batches_checked(producer: Any) -> bool:
    """Is ``producer`` an aiokafka whose accumulator drives batches as :class:`NativeBatch`
    expects (``record_count``, ``closed``, ``_set_producer_state``, ``_build``)?"""
    import aiokafka

    return aiokafka.__version__.startswith(CHECKED_AIOKAFKA) and hasattr(producer, "create_batch")


#: Seconds a send, start or transaction step may ride out an unreachable broker by default.
DEFAULT_DELIVERY_TIMEOUT_S = 60.0
#: Seconds one transaction may stay open by default (the broker's default ``transaction.max.timeout.ms``).
DEFAULT_TRANSACTION_TIMEOUT_S = 900


class KafkaDeliveryError(CdcSmtError):
    """Records could not be delivered within the delivery timeout: which broker, why, what to change."""

    def __init__(self, address: str, cause: str, *, waited: float, setting: str) -> None:
        self.address, self.cause, self.waited = address, cause, waited
        super().__init__(f"cannot deliver to Kafka at {address}: {cause} (retried for {waited:g} s; see {setting})")


class BlockingProducer:
    """An aiokafka producer for synchronous callers, on a private event loop.

    Started at the first use; :meth:`send` returns once every record is
    acknowledged. Partition counts of output topics are looked up once.

    An unreachable broker (a restart) is ridden out for ``delivery_timeout_s``:
    starting is retried, unacknowledged batches are kept and re-sent in order
    by aiokafka (their expiry is raised to the timeout), and past it one
    :class:`KafkaDeliveryError` names the broker and the cause.

    With ``transactional_id`` the producer is transactional (idempotent,
    ``acks=all``): starting it fences any older producer of the same id and
    ends that one's open transaction; :meth:`begin`, :meth:`commit` and
    :meth:`abort` drive one transaction at a time.
    """

    def __init__(
        self,
        conn: Conn,
        settings: ProducerSettings,
        *,
        delivery_timeout_s: float = DEFAULT_DELIVERY_TIMEOUT_S,
        transactional_id: str | None = None,
        transaction_timeout_s: int = DEFAULT_TRANSACTION_TIMEOUT_S,
        timeout_setting: str = "backfill.sink.delivery_timeout_s",
    ) -> None:
        self._conn = conn
        self._kwargs = client_kwargs(conn)
        self._settings = settings
        self._timeout = delivery_timeout_s
        self._transactional_id = transactional_id
        self._transaction_timeout_s = transaction_timeout_s
        self._timeout_setting = timeout_setting
        self._loop = asyncio.new_event_loop()
        self._producer: Any = None
        self._counts: dict[str, int] = {}
        self._failed = False  # a step failed: closing does not wait for the broker again

    @property
    def address(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in bootstrap_addresses(self._kwargs))

    def _run(self, coro: Any) -> Any:
        return self._loop.run_until_complete(coro)

    def _producer_kwargs(self) -> dict[str, Any]:
        kwargs = {**self._kwargs, **producer_kwargs(self._settings)}
        # Batches not acknowledged within the request timeout expire: keep them through an outage.
        kwargs["request_timeout_ms"] = max(kwargs["request_timeout_ms"], int(self._timeout * 1000))
        if self._transactional_id is not None:
            kwargs.update(
                acks="all",
                enable_idempotence=True,
                transactional_id=self._transactional_id,
                transaction_timeout_ms=self._transaction_timeout_s * 1000,
            )
        return kwargs

    async def _started(self) -> Any:
        if self._producer is None:
            self._producer = await self._bounded(self._start(), "starting the producer")
        return self._producer

    async def _start(self) -> Any:
        """A started producer (transactional: older ones fenced), retried while the broker is down."""
        from aiokafka import AIOKafkaProducer

        deadline = time.monotonic() + self._timeout
        while True:
            producer = retry_coordinator_lookups(AIOKafkaProducer(**self._producer_kwargs()))
            try:
                await producer.start()
                if self._transactional_id is not None:
                    await producer._txn_manager.wait_for_pid()  # noqa: SLF001 - init_transactions, as Java's
                return producer
            except Exception:
                await producer.stop()
                if time.monotonic() >= deadline:
                    raise
                # The broker is restarting: wait until it answers (or the deadline names why it does not).
                await wait_until_ready(
                    self._conn, max(deadline - time.monotonic(), 0.1), timeout_setting=self._timeout_setting
                )

    async def _bounded(self, coro: Any, what: str) -> Any:
        """``coro`` within the delivery timeout; past it, or on a failure, one :class:`KafkaDeliveryError`."""
        try:
            return await asyncio.wait_for(coro, self._timeout)
        except KafkaDeliveryError:
            self._failed = True
            raise
        except KafkaUnavailable as down:  # the broker did not come back while starting
            self._failed = True
            raise KafkaDeliveryError(
                self.address, f"{down.cause} ({what})", waited=self._timeout, setting=self._timeout_setting
            ) from None
        except Exception as exc:  # noqa: BLE001 - aiokafka's errors become one line naming the broker
            self._failed = True
            raise await self._failure(exc, what) from None

    async def _failure(self, exc: BaseException, what: str) -> KafkaDeliveryError:
        """Why ``what`` failed: the broker's state if it does not answer, else aiokafka's error."""
        cause = f"{what} failed: {type(exc).__name__}"
        if str(exc):
            cause += f": {exc}"
        if isinstance(exc, TimeoutError):
            cause = f"{what} timed out"
        try:
            await wait_until_ready(self._conn, 1.0)
        except KafkaUnavailable as down:
            cause = f"{down.cause} ({what})"
        return KafkaDeliveryError(self.address, cause, waited=self._timeout, setting=self._timeout_setting)

    def start(self) -> None:
        """Start now (a transactional producer: fence older producers of its id)."""
        self._run(self._started())

    def partitions(self, topic: str) -> int:
        """How many partitions ``topic`` has (a ``RuntimeError`` naming it when it is missing)."""
        n = self._counts.get(topic)
        if n is None:
            n = self._counts[topic] = self._run(self._partition_count(topic))
        return n

    async def _partition_count(self, topic: str) -> int:
        producer = await self._started()
        try:
            parts = await asyncio.wait_for(producer.partitions_for(topic), self._timeout)
        except Exception as exc:  # noqa: BLE001 - one clear line instead of a client traceback
            raise RuntimeError(
                f"cannot get the partitions of output topic {topic!r}: {type(exc).__name__}: {exc}"
            ) from None
        if not parts:
            raise RuntimeError(f"output topic {topic!r} does not exist")
        return len(parts)

    def send(self, records: Iterable[Record]) -> None:
        """Produce each record to its ``topic`` (and ``partition``, when set) and wait for the acks."""
        by_topic: dict[str, list[Record]] = {}
        for record in records:
            if record.topic is None:
                raise ValueError("a record to produce needs a topic")
            by_topic.setdefault(record.topic, []).append(record)
        if by_topic:
            self._run(self._send(by_topic))

    async def _send(self, by_topic: dict[str, list[Record]]) -> None:
        producer = await self._started()
        batch = self._settings.batch_size
        sends = asyncio.gather(
            *(produce_records(None, t, recs, producer=producer, max_batch_bytes=batch) for t, recs in by_topic.items())
        )
        await self._bounded(sends, "sending")

    def send_arrow(self, records: Any, partitions: Any) -> None:
        """:meth:`send` of an Arrow record batch (``topic``, ``key``, ``value``, ``headers``,
        ``timestamp`` columns) to the ``partitions`` given (an int32 array): written into record
        batches in Rust (:func:`produce_parts`), no Python object per record; one ``Record``
        each where the producer's batches must be its own (:func:`native_batches`)."""
        if len(records) and not self._run(self._send_arrow(records, partitions)):
            self.send(_arrow_records(records, partitions))

    async def _send_arrow(self, records: Any, partitions: Any) -> bool:
        """Send natively; ``False`` (nothing sent) when the producer's batches must be its own."""
        producer = await self._started()
        make_batch, group = native_batches(producer), native.arrow_parts()
        if make_batch is None or group is None:
            return False
        await self._bounded(produce_parts(producer, group(records, partitions), make_batch), "sending")
        return True

    # -- transactions --------------------------------------------------------------------------
    def begin(self) -> None:
        """Start a transaction (the producer is started, and older ones fenced, first)."""
        self._run(self._begin())

    async def _begin(self) -> None:
        producer = await self._started()
        await producer.begin_transaction()

    def commit(self) -> None:
        """Commit the open transaction: everything sent in it becomes visible to read_committed readers."""
        self._run(self._bounded(self._producer.commit_transaction(), "committing the transaction"))

    def abort(self) -> None:
        """Abort the open transaction, if any (best effort: a fenced or unreachable producer is left to time out)."""
        producer = self._producer
        if producer is None or self._failed or not producer._txn_manager.is_in_transaction():  # noqa: SLF001
            return  # nothing open, or the broker is gone: the next start of this id (or the timeout) aborts it
        self._run(self._bounded(producer.abort_transaction(), "aborting the transaction"))

    def close(self) -> None:
        """Stop the producer (it sends what it still holds) and close the loop."""
        try:
            if self._producer is not None:
                # After a failure, what the producer still holds is lost anyway: do not wait for the broker again.
                self._run(asyncio.wait_for(self._producer.stop(), 5.0 if self._failed else self._timeout))
        except TimeoutError:
            if not self._failed:
                raise
        finally:
            self._loop.close()


def _arrow_records(records: Any, partitions: Any) -> list[Record]:
    """The records of an Arrow batch (:meth:`BlockingProducer.send_arrow`) as ``Record`` s."""
    columns = records.select(["topic", "key", "value", "headers", "timestamp"]).to_pydict()
    return [
        Record(value=value, key=key, topic=topic, partition=partition, timestamp=timestamp,
               headers=[(h["key"], h["value"]) for h in headers] if headers else [])
        for topic, key, value, headers, timestamp, partition in zip(
            *columns.values(), partitions.to_pylist(), strict=True
        )
    ]  # fmt: skip


async def supports_transactions(conn: Conn, transactional_id: str, timeout: float = 15.0) -> str | None:
    """``None`` when the cluster grants ``transactional_id`` a producer id, else why not (one phrase).

    A broker without transactions (Tansu) fails ``FindCoordinator``/``InitProducerId``
    or never answers them; either is reported after at most ``timeout`` seconds.
    """
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(**client_kwargs(conn), transactional_id=transactional_id, enable_idempotence=True)
    try:
        await producer.start()
        await asyncio.wait_for(producer._txn_manager.wait_for_pid(), timeout)  # noqa: SLF001 - init_transactions
        return None
    except TimeoutError:
        return f"no producer id for a transactional producer within {timeout:g} s"
    except Exception as exc:  # noqa: BLE001 - the reason is the answer
        return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    finally:
        await producer.stop()


async def fence(conn: Conn, transactional_ids: Iterable[str], *, timeout: float = 60.0, parallel: int = 16) -> None:
    """Fence the producers of ``transactional_ids`` and end their open transactions (Java's ``initTransactions``).

    Run before tasks that read commit markers with read_committed: a transaction
    a killed process left open would otherwise hold back every later marker
    until it times out.
    """
    from aiokafka import AIOKafkaProducer

    gate = asyncio.Semaphore(parallel)

    async def one(tid: str) -> None:
        async with gate:
            producer = AIOKafkaProducer(**client_kwargs(conn), transactional_id=tid, enable_idempotence=True)
            retry_coordinator_lookups(producer)
            try:
                await producer.start()
                await asyncio.wait_for(producer._txn_manager.wait_for_pid(), timeout)  # noqa: SLF001
            finally:
                await producer.stop()

    await asyncio.gather(*(one(t) for t in transactional_ids))


__all__ = [
    "DEFAULT_DELIVERY_TIMEOUT_S",
    "DEFAULT_TRANSACTION_TIMEOUT_S",
    "BlockingProducer",
    "KafkaDeliveryError",
    "NativeBatch",
    "fence",
    "native_batches",
    "produce_parts",
    "produce_records",
    "supports_transactions",
]
