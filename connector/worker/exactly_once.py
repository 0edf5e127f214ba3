"""Exactly-once: each converted batch and its source offset commit in one Kafka transaction.

With ``worker.processing_guarantee: exactly_once`` every source partition the
worker owns gets its own transactional producer
(:func:`~connector.kafka.transactions.transactional_id`
``cdc-smt-<job>-<topic>-<partition>``). A batch's outputs, its dead letters,
its chain-state changelog record and the partition's next source offset
(``send_offsets_to_transaction`` to the job's consumer group) go out in one
transaction: a read_committed reader sees all of them, or, after a crash,
none, and the restarted worker resumes at exactly the offset the last
committed transaction recorded.

Fencing. Starting the producer of a partition (InitProducerId) bumps the
epoch of its transactional id: any older producer of it (a worker that was
SIGKILLed, or one that lost the partition in a rebalance but still runs) can
no longer write or commit, and its open transaction is aborted. Only after
that does the new owner read the partition's committed offset (a zombie's
last commit could otherwise land after the read); records before it are
skipped, so nothing is processed twice.

Cost. A step that reaches its partition's high watermark (the worker keeps
up) commits at once: a read_committed reader sees it a commit later. Under a
backlog a partition's transaction takes steps for
``worker.transaction_interval_ms`` (default 500) before it commits: a commit
costs a few round trips to the transaction coordinator and a marker per
partition written. Steps convert while the previous transaction commits (they
queue for the next one). Faust's periodic offset commit is not used for these
partitions.

Errors. A fenced producer (another worker owns the partition now) and the
other fatal transaction errors stop the worker with one line; anything else
aborts the transaction and sends the same steps again in a new one (the
converted records are kept until their commit: the same as converting again
from the last committed offset, without rewinding the chain), a few times,
before stopping.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from cdc_smt.connector import kafka as K
from cdc_smt.connector.jobconfig import JobConfig
from cdc_smt.connector.kafka import transactions as T

log = logging.getLogger("cdc_smt.worker")

#: Attempts of one batch's transaction (aborted and sent again in between) before the worker stops.
MAX_ATTEMPTS = 5
#: Seconds between attempts (doubling).
RETRY_BACKOFF_S = 0.5
#: Converted steps of a partition that may wait for its commit before the worker waits too.
MAX_QUEUED_STEPS = 4

#: Rows of a batch: (topic, partition) -> [(key, value, timestamp, headers)].
Groups = dict[tuple[str, int], list[tuple[bytes | None, bytes | None, int | None, list]]]


class TransactionFailed(Exception):
    """A partition's transaction cannot be committed: the message says why and what happens next."""


#: What a step's caller hears when its transaction ended: ``None`` (committed) or why not.
OnDone = Callable[[BaseException | None], None]


@dataclass(slots=True)
class OpenTransaction:
    """The steps sent in a partition's current transaction, kept until it commits (an abort sends them again)."""

    began: float
    next_offset: int = 0
    steps: list[tuple[Groups, OnDone]] = field(default_factory=list)
    futures: list[asyncio.Future] = field(default_factory=list)
    timer: asyncio.TimerHandle | None = None


@dataclass(slots=True)
class PartitionProducer:
    txn_id: str
    producer: Any  # aiokafka.AIOKafkaProducer with transactional_id
    #: Held while a step is sent into the transaction and while it commits: never both at once.
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    open: OpenTransaction | None = None
    committing: asyncio.Task | None = None
    #: Steps waiting for the commit in progress: (groups, next_offset, on_done, commit_now).
    queued: list[tuple[Groups, int, OnDone, bool]] = field(default_factory=list)


class Transactions:
    """The transactional producers of the partitions this worker owns, and their commits."""

    def __init__(self, job: JobConfig, build: Callable[[Any, Groups], list[tuple[str, int, Any, int]]]) -> None:
        self.job = job
        self.group_id = job.id  # Faust's consumer group is the app id, which is the job id
        self.interval = job.worker.transaction_interval_ms / 1000
        self._build = build  # Pipeline.build_batches: rows -> aiokafka batches
        self._producers: dict[Any, PartitionProducer] = {}
        #: Per partition: the task that fenced it and read its committed offset (shared by prepare and open).
        self._opening: dict[Any, asyncio.Future] = {}
        # AssertionError: aiokafka checks its transaction state with asserts (a state we cannot continue from)
        self._fatal: tuple[type[BaseException], ...] = (*T.fatal_errors(), AssertionError)
        #: How long a broken producer is re-created while the broker is away (a restart).
        self.renew_deadline_s = max(60.0, job.worker.transaction_timeout_ms / 1000)

    def transactional_id(self, tp: Any) -> str:
        return T.transactional_id("cdc-smt", self.job.id, tp.topic, tp.partition)

    async def prepare(self, tps: Iterable[Any]) -> None:
        """:meth:`open` the newly assigned partitions together (their first batches then start at once)."""
        new = [tp for tp in tps if tp not in self._producers and tp not in self._opening]
        if new:
            await asyncio.shield(self._opening_task(new))

    async def open(self, tp: Any) -> int | None:
        """Fence older producers of ``tp``'s transactional id; then the committed offset to resume from.

        One producer per partition, ever: a first batch that comes while :meth:`prepare`
        is still opening its partition waits for that, and takes its result.
        """
        task = self._opening.get(tp)
        if task is None or (task.done() and (task.cancelled() or task.exception() is not None)):
            task = self._opening_task([tp])  # none yet, or prepare's failed (it logged why): try again
        return (await asyncio.shield(task)).get(tp)

    def _opening_task(self, tps: list[Any]) -> asyncio.Future:
        task = asyncio.ensure_future(self._open_all(tps))
        for tp in tps:
            self._opening[tp] = task
        return task

    async def _open_all(self, tps: list[Any]) -> dict[Any, int | None]:
        await asyncio.gather(*(self._start(tp) for tp in tps))
        committed = await K.committed_offsets(
            self.job.kafka.aiokafka_kwargs(), self.group_id, sorted({tp.topic for tp in tps})
        )
        return {tp: committed.get((tp.topic, tp.partition)) for tp in tps}

    async def _start(self, tp: Any) -> None:
        if tp in self._producers:
            return
        txn_id = self.transactional_id(tp)
        self._producers[tp] = PartitionProducer(txn_id, await self._started_producer(txn_id))

    async def _started_producer(self, txn_id: str) -> Any:
        producer = T.new_transactional_producer(
            self.job.kafka,
            self.job.producer,
            txn_id,
            transaction_timeout_ms=self.job.worker.transaction_timeout_ms,
        )
        try:
            await producer.start()  # InitProducerId: fences, and ends the zombie's open transaction
        except T.fatal_errors() as exc:
            await _stop(producer)
            raise TransactionFailed(_fatal_message(txn_id, exc)) from None
        except BaseException:
            await _stop(producer)
            raise
        return producer

    async def _renew(self, tp: Any, slot: PartitionProducer) -> Any:
        """A producer whose transaction state broke (aiokafka's sender failed mid-request, e.g. the broker
        went away) cannot go on: stop it and start another with the same transactional id, which
        aborts the broken transaction once the broker answers. Retried until ``renew_deadline_s``."""
        await _stop(slot.producer)
        deadline = time.monotonic() + self.renew_deadline_s
        backoff = RETRY_BACKOFF_S
        while True:
            try:
                slot.producer = await self._started_producer(slot.txn_id)
            except TransactionFailed:
                raise
            except Exception as exc:  # noqa: BLE001 - the broker is still away: try again until the deadline
                if time.monotonic() + backoff > deadline:
                    raise TransactionFailed(
                        f"{tp.topic}[{tp.partition}]: no new producer for {slot.txn_id} within "
                        f"{self.renew_deadline_s:.0f} s ({type(exc).__name__}: {exc}); nothing uncommitted is visible"
                    ) from None
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            log.warning(
                "%s[%d]: transactional producer %s re-created after a broken transaction; its records go out again",
                tp.topic,
                tp.partition,
                slot.txn_id,
                extra={"event": "producer_renewed"},
            )
            return slot.producer

    async def send(self, tp: Any, groups: Groups, next_offset: int, on_done: OnDone, *, commit_now: bool) -> None:
        """Send one converted step of ``tp`` into its open transaction (begun if none is).

        The transaction commits at once when ``commit_now`` (the partition is caught
        up: latency first), else when it has been open ``worker.transaction_interval_ms``
        (a backlog: fewer, larger transactions). ``on_done`` reports the end of the
        transaction that holds this step. While the partition's previous transaction
        commits, the step waits in a short queue (the next transaction takes it), so
        the worker converts on instead of waiting for the commit.
        """
        step = (groups, next_offset, on_done, commit_now)
        slot = self._producers[tp]
        if slot.lock.locked() and len(slot.queued) < MAX_QUEUED_STEPS:
            slot.queued.append(step)
            return
        async with slot.lock:
            slot.queued.append(step)
            due = await self._send_queued(tp, slot)
        if due:
            self._commit_soon(tp)

    async def _send_queued(self, tp: Any, slot: PartitionProducer) -> bool:
        """Send the queued steps into the open transaction (holding ``slot.lock``); is its commit due?"""
        due = False
        while slot.queued:
            groups, next_offset, on_done, commit_now = slot.queued.pop(0)
            producer = slot.producer
            try:
                if slot.open is None:
                    await producer.begin_transaction()
                    slot.open = OpenTransaction(began=time.monotonic())
                    slot.open.timer = asyncio.get_running_loop().call_later(self.interval, self._commit_soon, tp)
                txn = slot.open
                for topic, p, builder, _ in self._build(producer, groups):
                    if commit_now:
                        builder.close()  # no linger: it commits now
                    txn.futures.append(await producer.send_batch(builder, topic, partition=p))
            except self._fatal as exc:
                failure = TransactionFailed(_fatal_message(slot.txn_id, exc))
                on_done(failure)
                for *_, queued_done, _ in slot.queued:
                    queued_done(failure)
                slot.queued.clear()
                return False
            txn.steps.append((groups, on_done))
            txn.next_offset = next_offset
            due = due or commit_now or time.monotonic() - txn.began >= self.interval
        return due

    def _commit_soon(self, tp: Any) -> None:
        """Start committing ``tp``'s open transaction unless a commit (which will take it) is under way."""
        slot = self._producers.get(tp)
        if slot is None or slot.open is None:
            return
        running = slot.committing
        if running is None or running.done() or running is asyncio.current_task():
            slot.committing = asyncio.ensure_future(self._commit(tp, slot))

    def commit_all(self) -> None:
        """Start committing every open transaction (before a rebalance or a stop)."""
        for tp in list(self._producers):
            self._commit_soon(tp)

    async def _commit(self, tp: Any, slot: PartitionProducer) -> None:
        async with slot.lock:
            txn, slot.open = slot.open, None
            if txn is None:
                return
            if txn.timer is not None:
                txn.timer.cancel()
            failure = await self._finish(tp, slot, txn)
            for _, on_done in txn.steps:
                on_done(failure)
            if failure is not None:  # the worker stops: nothing after it commits either
                for *_, queued_done, _ in slot.queued:
                    queued_done(failure)
                slot.queued.clear()
            # Steps that arrived during the commit start the next transaction.
            due = await self._send_queued(tp, slot)
        if due:
            self._commit_soon(tp)

    async def _finish(self, tp: Any, slot: PartitionProducer, txn: OpenTransaction) -> BaseException | None:
        """Commit ``txn`` (steps, then the source offset); abort and send it again on a passing error."""
        from aiokafka import TopicPartition

        producer = slot.producer
        backoff = RETRY_BACKOFF_S
        futures = txn.futures
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                if attempt > 1:
                    await producer.begin_transaction()
                    futures = [
                        await producer.send_batch(builder, topic, partition=p)
                        for groups, _ in txn.steps
                        for topic, p, builder, _ in self._build(producer, groups)
                    ]
                for result in await asyncio.gather(*futures, return_exceptions=True):
                    if isinstance(result, BaseException):
                        raise result
                # aiokafka's own TopicPartition: after a rebalance Faust may hand over its TP tuples.
                offsets = {TopicPartition(tp.topic, tp.partition): txn.next_offset}
                await producer.send_offsets_to_transaction(offsets, self.group_id)
                await producer.commit_transaction()
                return None
            except asyncio.CancelledError:
                return TransactionFailed(f"{slot.txn_id}: the transaction was cancelled")
            except AssertionError as exc:  # aiokafka's transaction state broke (not fenced): a new producer
                if attempt == MAX_ATTEMPTS:
                    return TransactionFailed(_fatal_message(slot.txn_id, exc))
                try:
                    producer = await self._renew(tp, slot)
                except TransactionFailed as failed:
                    return failed
                continue
            except self._fatal as exc:
                return TransactionFailed(_fatal_message(slot.txn_id, exc))
            except Exception as exc:  # noqa: BLE001 - abortable: the same steps go out again
                if attempt == MAX_ATTEMPTS:
                    return TransactionFailed(
                        f"the transaction of {tp.topic}[{tp.partition}] (up to offset {txn.next_offset}) failed "
                        f"{attempt} times, last: {type(exc).__name__}: {exc}; nothing of it was committed"
                    )
                log.warning(
                    "%s[%d]: transaction aborted (%s: %s); sending its records again (attempt %d of %d)",
                    tp.topic,
                    tp.partition,
                    type(exc).__name__,
                    exc,
                    attempt + 1,
                    MAX_ATTEMPTS,
                    extra={"event": "transaction_aborted"},
                )
                try:
                    await producer.abort_transaction()
                except AssertionError:  # the producer's transaction state broke: a new producer
                    try:
                        producer = await self._renew(tp, slot)
                    except TransactionFailed as failed:
                        return failed
                except self._fatal as abort_exc:
                    return TransactionFailed(_fatal_message(slot.txn_id, abort_exc))
                except Exception:  # noqa: BLE001 - the next begin_transaction reports a lasting failure
                    pass
                await asyncio.sleep(backoff)
                backoff *= 2
        return TransactionFailed(f"{slot.txn_id}: no attempt left")  # not reached: the last attempt returns

    async def wait(self, tps: Iterable[Any] | None = None) -> None:
        """Commit the open transactions (of ``tps``, default all) and wait until they ended."""
        chosen = list(self._producers) if tps is None else [tp for tp in tps if tp in self._producers]
        while True:  # a commit may leave the steps queued meanwhile in a new transaction
            for tp in chosen:
                self._commit_soon(tp)
            running = [t for tp in chosen if (t := self._producers[tp].committing) is not None and not t.done()]
            if not running:
                return
            await asyncio.wait(running)

    async def close(self, tps: Iterable[Any] | None = None) -> None:
        """Stop the producers of ``tps`` (default all): partitions revoked, or the worker stopping."""
        given = list(self._producers) if tps is None else list(tps)
        for tp in given:  # a partition still being opened: let that finish, then close it too
            opening = self._opening.pop(tp, None)
            if opening is not None and not opening.done():
                await asyncio.wait([opening])
        chosen = [tp for tp in given if tp in self._producers]
        await self.wait(chosen)
        for tp in chosen:
            await _stop(self._producers.pop(tp).producer)


async def _stop(producer: Any) -> None:
    try:
        await asyncio.wait_for(producer.stop(), 10)
    except Exception as exc:  # noqa: BLE001 - closing; a fenced producer may refuse to flush
        log.debug("closing a transactional producer: %s", exc)


def _fatal_message(txn_id: str, exc: BaseException) -> str:
    from aiokafka import errors as E

    if isinstance(exc, E.ProducerFenced | E.InvalidProducerEpoch):
        return (
            f"another producer took over transactional id {txn_id} (a second worker with job id and "
            "partition, or a rebalance this worker missed): this worker is fenced and stops; "
            "nothing it had not committed is visible to read_committed readers"
        )
    return f"transaction of {txn_id} failed for good ({type(exc).__name__}: {exc}); nothing uncommitted is visible"


__all__ = ["MAX_ATTEMPTS", "TransactionFailed", "Transactions"]
