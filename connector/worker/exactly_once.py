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

Cost. One transaction per converted step; the commit of step n runs while
step n+1 converts (the next step of a partition waits for the previous
commit before it begins its own transaction). Faust's periodic offset commit
is not used for these partitions.

Errors. A fenced producer (another worker owns the partition now) and the
other fatal transaction errors stop the worker with one line; anything else
aborts the transaction and sends the same batch again in a new one (the
converted records are kept until their commit), a few times, before stopping.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from cdc_smt.connector import kafka as K
from cdc_smt.connector.jobconfig import JobConfig
from cdc_smt.connector.kafka import transactions as T

log = logging.getLogger("cdc_smt.worker")

#: Attempts of one batch's transaction (aborted and sent again in between) before the worker stops.
MAX_ATTEMPTS = 5
#: Seconds between attempts (doubling).
RETRY_BACKOFF_S = 0.5

#: Rows of a batch: (topic, partition) -> [(key, value, timestamp, headers)].
Groups = dict[tuple[str, int], list[tuple[bytes | None, bytes | None, int | None, list]]]


class TransactionFailed(Exception):
    """A partition's transaction cannot be committed: the message says why and what happens next."""


@dataclass(slots=True)
class PartitionProducer:
    txn_id: str
    producer: Any  # aiokafka.AIOKafkaProducer with transactional_id
    committing: asyncio.Task | None = None


class Transactions:
    """The transactional producers of the partitions this worker owns, and their commits."""

    def __init__(
        self,
        job: JobConfig,
        build: Callable[[Any, Groups], list[tuple[str, int, Any, int]]],
    ) -> None:
        self.job = job
        self.group_id = job.id  # Faust's consumer group is the app id, which is the job id
        self._build = build  # Pipeline.build_batches: rows -> aiokafka batches
        self._producers: dict[Any, PartitionProducer] = {}

    def transactional_id(self, tp: Any) -> str:
        return T.transactional_id("cdc-smt", self.job.id, tp.topic, tp.partition)

    async def open(self, tp: Any) -> int | None:
        """Fence older producers of ``tp``'s transactional id; then the committed offset to resume from."""
        if tp not in self._producers:
            txn_id = self.transactional_id(tp)
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
            self._producers[tp] = PartitionProducer(txn_id, producer)
        committed = await K.committed_offsets(self.job.kafka.aiokafka_kwargs(), self.group_id, [tp.topic])
        return committed.get((tp.topic, tp.partition))

    async def commit(
        self,
        tp: Any,
        groups: Groups,
        next_offset: int,
        on_done: Callable[[BaseException | None], None],
    ) -> None:
        """Start the transaction of one batch of ``tp`` once its previous one has committed.

        Returns when the batch's transaction has begun (``on_done`` reports its end).
        """
        slot = self._producers[tp]
        if slot.committing is not None:
            await asyncio.shield(slot.committing)
        slot.committing = asyncio.ensure_future(self._commit(tp, slot, groups, next_offset, on_done))

    async def _commit(
        self,
        tp: Any,
        slot: PartitionProducer,
        groups: Groups,
        next_offset: int,
        on_done: Callable[[BaseException | None], None],
    ) -> None:
        producer = slot.producer
        backoff = RETRY_BACKOFF_S
        # AssertionError: aiokafka checks its transaction state with asserts (a state we cannot continue from)
        fatal: tuple[type[BaseException], ...] = (*T.fatal_errors(), AssertionError)
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                await producer.begin_transaction()
                futures = [
                    await producer.send_batch(builder, topic, partition=p)
                    for topic, p, builder, _ in self._build(producer, groups)
                ]
                await asyncio.gather(*futures)
                await producer.send_offsets_to_transaction({tp: next_offset}, self.group_id)
                await producer.commit_transaction()
            except asyncio.CancelledError:
                on_done(TransactionFailed(f"{slot.txn_id}: the transaction was cancelled"))
                raise
            except fatal as exc:
                on_done(TransactionFailed(_fatal_message(slot.txn_id, exc)))
                return
            except Exception as exc:  # noqa: BLE001 - abortable: the same batch goes out again
                if attempt == MAX_ATTEMPTS:
                    on_done(
                        TransactionFailed(
                            f"the transaction of {tp.topic}[{tp.partition}] (up to offset {next_offset}) failed "
                            f"{attempt} times, last: {type(exc).__name__}: {exc}; nothing of it was committed"
                        )
                    )
                    return
                log.warning(
                    "%s[%d]: transaction aborted (%s: %s); sending the batch again (attempt %d of %d)",
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
                except fatal as abort_exc:
                    on_done(TransactionFailed(_fatal_message(slot.txn_id, abort_exc)))
                    return
                except Exception:  # noqa: BLE001 - the next begin_transaction reports a lasting failure
                    pass
                await asyncio.sleep(backoff)
                backoff *= 2
            else:
                on_done(None)
                return

    async def wait(self, tps: Iterable[Any] | None = None) -> None:
        """Until the running commits (of ``tps``, default all) have ended."""
        slots = (
            [self._producers[tp] for tp in tps if tp in self._producers]
            if tps is not None
            else list(self._producers.values())
        )
        running = [s.committing for s in slots if s.committing is not None and not s.committing.done()]
        if running:
            await asyncio.wait(running)

    async def close(self, tps: Iterable[Any] | None = None) -> None:
        """Stop the producers of ``tps`` (default all): partitions revoked, or the worker stopping."""
        chosen = list(self._producers) if tps is None else [tp for tp in tps if tp in self._producers]
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
