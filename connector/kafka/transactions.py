"""Transactional producers: one per transactional id, and the probe that a cluster supports them.

Exactly-once topic to topic rests on Kafka transactions: outputs and the
consumer group's source offsets commit together (``send_offsets_to_transaction``)
or not at all, and read_committed consumers never see an aborted write. A
producer with a ``transactional_id`` fences every older producer with the same
id when it starts (InitProducerId bumps the epoch and aborts the old one's open
transaction), which is how a restarted or rebalanced worker shuts out a zombie.

aiokafka (0.14) has no KIP-447 group-metadata fencing, so callers use one
transactional id per input partition (Kafka Streams' eos-alpha, Faust's own
``exactly_once``): :func:`transactional_id`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Any

from cdc_smt.connector.kafka.settings import KafkaSettings, producer_kwargs
from cdc_smt.transforms.errors import CdcSmtError

if TYPE_CHECKING:
    from cdc_smt.connector.jobconfig import ProducerSettings

#: Seconds the start-up probe waits for the cluster to hand out a transactional producer id.
PROBE_TIMEOUT_S = 15.0


class TransactionsUnsupported(CdcSmtError):
    """The cluster cannot run Kafka transactions (exactly-once is refused at start-up)."""


def transactional_id(app: str, group: str, topic: str, partition: int) -> str:
    """``<app>-<group>-<topic>-<partition>``: stable across restarts, unique per input partition."""
    return f"{app}-{group}-{topic}-{partition}"


def fatal_errors() -> tuple[type[BaseException], ...]:
    """Transaction errors after which the producer is unusable: another producer took over its
    transactional id (fenced), or the cluster refuses it. Anything else aborts and retries."""
    from aiokafka import errors as E

    return (
        E.ProducerFenced,
        E.OutOfOrderSequenceNumber,
        E.TransactionalIdAuthorizationFailed,
        E.UnsupportedVersionError,
        E.InvalidProducerEpoch,
        E.InvalidTxnState,
        E.InvalidProducerIdMapping,
        E.TransactionCoordinatorFenced,
        E.IllegalOperation,
    )


def new_transactional_producer(
    kafka: KafkaSettings, producer: ProducerSettings, txn_id: str, *, transaction_timeout_ms: int
) -> Any:
    """An unstarted aiokafka producer for ``txn_id`` (``start()`` fences older producers of it)."""
    from aiokafka import AIOKafkaProducer

    kwargs = producer_kwargs(producer)
    kwargs["acks"] = "all"  # idempotence, which transactions imply, needs acks=all
    producer = AIOKafkaProducer(
        **kafka.aiokafka_kwargs(),
        **kwargs,
        transactional_id=txn_id,
        transaction_timeout_ms=transaction_timeout_ms,
    )
    return retry_coordinator_lookups(producer)


def retry_coordinator_lookups(producer: Any) -> Any:
    """``producer`` (an unstarted ``AIOKafkaProducer``), its coordinator lookups retried while no broker answers.

    aiokafka (0.14) retries a ``FindCoordinator`` that fails with an error code, but one that cannot
    reach a broker (a broker restarting: connection refused or closed) ends its sender task, and with
    it every later transaction step: a commit under way when the broker went down never ended, and
    its open transaction held every read_committed reader of the partitions it wrote (a CI failure of
    the exactly-once backfill). Java's client retries such a lookup; so does this wrapper, with the
    client's backoff, for as long as the caller waits (the caller bounds every step).
    Producers of other aiokafka versions are returned as they are.
    """
    import aiokafka
    from aiokafka import errors as E

    sender: Any = getattr(producer, "_sender", None)
    lookup = getattr(sender, "_find_coordinator", None)
    if lookup is None or not aiokafka.__version__.startswith(CHECKED_AIOKAFKA):
        return producer

    async def find_coordinator(coordinator_type: Any, coordinator_key: Any) -> Any:
        while True:
            try:
                return await lookup(coordinator_type, coordinator_key)
            except E.KafkaError as exc:
                if not isinstance(exc.__cause__, E.KafkaConnectionError | E.NodeNotReadyError):
                    raise
            await asyncio.sleep(sender._retry_backoff)  # noqa: SLF001 - the client's retry_backoff_ms

    sender._find_coordinator = find_coordinator  # noqa: SLF001 - the sender looks it up on itself
    return producer


#: aiokafka releases whose producer internals were checked: the sender's coordinator lookup
#: (:func:`retry_coordinator_lookups`) and the accumulator's batches (``produce.NativeBatch``).
CHECKED_AIOKAFKA = ("0.14.",)


async def probe(kafka: KafkaSettings, producer: ProducerSettings, *, timeout: float = PROBE_TIMEOUT_S) -> None:
    """Raise :class:`TransactionsUnsupported` unless the cluster runs one (empty) transaction.

    A broker without a transaction coordinator either answers InitProducerId
    with an error or never answers it (aiokafka keeps retrying): both end here
    within ``timeout`` seconds, as one clear line.
    """
    txn_id = f"cdc-smt-probe-{uuid.uuid4().hex[:12]}"
    p = new_transactional_producer(kafka, producer, txn_id, transaction_timeout_ms=60_000)
    quiet = logging.getLogger("aiokafka.producer.sender")  # its own line about the refusal: ours says it
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)
    try:
        try:
            await asyncio.wait_for(_one_transaction(p), timeout)
        except TimeoutError:
            cause = f"no transactional producer id within {timeout:g} s"
        except Exception as exc:  # noqa: BLE001 - any refusal means: no transactions here
            cause = f"it refused a transactional producer id: {type(exc).__name__}"
        else:
            return
    finally:
        try:
            await asyncio.wait_for(p.stop(), 5)
        except Exception:  # noqa: BLE001 - a producer that never started has nothing to flush
            pass
        quiet.setLevel(level)
    raise TransactionsUnsupported(
        f"worker.processing_guarantee: exactly_once needs Kafka transactions, and the cluster at "
        f"{kafka.bootstrap} does not provide them ({cause}); use Apache Kafka (or another broker "
        "with transactions), or set worker.processing_guarantee: at_least_once"
    )


async def _one_transaction(p: Any) -> None:
    await p.start()
    await p.begin_transaction()
    await p.commit_transaction()


__all__ = [
    "CHECKED_AIOKAFKA",
    "PROBE_TIMEOUT_S",
    "TransactionsUnsupported",
    "fatal_errors",
    "new_transactional_producer",
    "probe",
    "retry_coordinator_lookups",
    "transactional_id",
]
