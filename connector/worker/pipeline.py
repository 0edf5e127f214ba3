"""The worker's hot path: convert one fetched batch of one source partition and produce it.

This is deliberately independent of Faust's per-event machinery (Events,
Streams, per-message acks cost ~100 µs a record there). The Faust consumer in
:mod:`connector.worker.app` hands whole per-partition record lists to
:meth:`Pipeline.process`; output goes out through aiokafka's batch API; and
the offset to commit for a partition advances only when every record produced
from the batches before it has been acknowledged (at-least-once).

Per source partition the pipeline keeps one :class:`~transforms.chain.Chain`
(codecs may hold per-stream state) and a queue of in-flight batches in
source order. A batch is *done* when all its produce futures resolved; the
commit offset is the ``next_offset`` of the last done batch with no unfinished
batch before it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import orjson

from cdc_smt.connector import kafka as K
from cdc_smt.connector.jobconfig import JobConfig
from cdc_smt.connector.kafka.partitioner import partition_for, partitions
from cdc_smt.connector.kafka.produce import NativeBatch, native_batches
from cdc_smt.connector.metrics import LATENCY_SAMPLES, WorkerMetrics
from cdc_smt.connector.worker.batching import BatchSizer
from cdc_smt.connector.worker.exactly_once import Transactions
from cdc_smt.transforms.chain import Chain, ChainHalted, DeadLetter
from cdc_smt.transforms.model import Record
from cdc_smt.transforms.native import NativePlan, edit_headers, row_placer

log = logging.getLogger("cdc_smt.worker")

#: Dead letters logged one by one per batch before switching to a summary line.
DEAD_LETTER_LOG_LIMIT = 5


class WorkerFailed(Exception):
    """The worker must stop: the message says why; nothing past the failure is committed."""


#: One output record as the batch builders take it: (key, value, timestamp, headers).
Row = tuple[bytes | None, bytes | None, int | None, list]


@dataclass(slots=True)
class Converted:
    """One batch after the chain: records to produce, grouped by (topic, partition) in order."""

    groups: dict[tuple[str, int], list[tuple[bytes | None, bytes | None, int | None, list]]] = field(
        default_factory=dict
    )
    dead_letters: list[DeadLetter] = field(default_factory=list)
    #: Rows for topics whose partition count was not known yet (set by a routing transform).
    deferred: list[tuple[str, bytes | None, bytes | None, int | None, list]] = field(default_factory=list)
    n_in: int = 0
    n_out: int = 0
    next_offset: int = 0
    #: Source timestamps of a sample of the batch, for the latency histogram.
    timestamps: list[int] = field(default_factory=list)
    #: The chain's serialized state after this batch, when the batch changed it.
    state: bytes | None = None


@dataclass(slots=True)
class InFlight:
    """A produced batch waiting for acks."""

    next_offset: int
    remaining: int
    timestamps: list[int]
    error: BaseException | None = None

    @property
    def done(self) -> bool:
        return self.remaining == 0


@dataclass(slots=True)
class PartitionState:
    chain: Chain | None = None  # built on first use (in a child process with a pool)
    started: bool = False  # first batch seen (chain state restored, with a state store)
    committed: int | None = None  # last offset committed for this partition
    next_offset: int | None = None  # next source offset to process
    committable: int | None = None  # offset safe to commit (all output before it acked)
    pending: deque = field(default_factory=deque)


class Converter:
    """decode -> chain -> encode -> (topic, partition) groups, without any Kafka I/O.

    Shared by the worker and by ``bench/worker.py``'s in-process ceiling, so the
    benchmark measures exactly the conversion the worker runs.
    """

    def __init__(self, job: JobConfig, partition_counts: dict[str, int]) -> None:
        self.job = job
        self.partition_counts = partition_counts
        self.dead_letter_topic = job.errors.dead_letter_topic
        self._sink_topics: dict[str, str] = {}
        #: Per (topic, partition): the chain's state marker after the last batch.
        self._states: dict[tuple[str, int], Any] = {}

    def restore(self, chain: Chain, topic: str, partition: int, blob: bytes) -> None:
        """Continue ``chain`` from a stored state snapshot (see :mod:`connector.worker.state`)."""
        chain.restore_state(orjson.loads(blob))
        self._states[(topic, partition)] = chain.state_marker()

    def forget(self, keys: Iterable[tuple[str, int]]) -> None:
        for key in keys:
            self._states.pop(key, None)

    def _changed_state(self, chain: Chain, topic: str, partition: int) -> bytes | None:
        """The chain's serialized state when this batch changed it (the whole catalog is
        serialized only then: most batches change nothing)."""
        if not chain.stateful:
            return None
        marker = chain.state_marker()
        key = (topic, partition)
        if self._states.get(key) == marker:
            return None
        self._states[key] = marker
        return orjson.dumps(chain.state())

    def sink_topic(self, source_topic: str) -> str:
        name = self._sink_topics.get(source_topic)
        if name is None:
            name = self._sink_topics[source_topic] = self.job.sink.topic_for(source_topic)
        return name

    def convert(self, chain: Chain, topic: str, partition: int, messages: Sequence[Any]) -> Converted:
        """Run the chain over ``messages`` (aiokafka ``ConsumerRecord``-like) of one partition.

        With a native plan the whole batch's values go to the plan in one call (and its
        output keys to the native partitioner); the records it leaves to Python go through
        ``chain.process`` in order, as every record does without a plan.

        Raises :class:`~transforms.chain.ChainHalted` (tolerance ``none``) with
        nothing of this batch produced.
        """
        out = Converted(n_in=len(messages))
        if chain.native is not None and messages:
            self._convert_native(chain, chain.native, out, topic, partition, messages)
        else:
            self._convert_records(chain, out, topic, partition, messages)
        step = max(1, len(messages) // LATENCY_SAMPLES)
        out.timestamps = [m.timestamp for m in messages[::step] if m.timestamp is not None and m.timestamp > 0]
        if out.dead_letters:
            dlq = self.dead_letter_topic
            assert dlq is not None  # dead letters need tolerance: all, which the job config pairs with a topic
            for dl in out.dead_letters:
                r = dl.to_record(dlq)
                out.deferred.append((dlq, r.key, r.value, r.timestamp, r.headers))
        out.next_offset = messages[-1].offset + 1 if messages else 0
        out.state = self._changed_state(chain, topic, partition)
        return out

    @staticmethod
    def _record(m: Any, topic: str, partition: int) -> Record:
        """The chain's view of a fetched message (a missing timestamp, ``-1``, is ``None``)."""
        ts = m.timestamp
        return Record(
            value=m.value,
            key=m.key,
            topic=topic,
            partition=partition,
            offset=m.offset,
            timestamp=None if ts is not None and ts < 0 else ts,
            headers=list(m.headers) if m.headers else [],
        )

    def _convert_records(
        self, chain: Chain, out: Converted, topic: str, partition: int, messages: Sequence[Any]
    ) -> None:
        """Record by record through ``chain.process`` (chains without a native plan)."""
        groups = out.groups
        default_topic = self.sink_topic(topic)
        n_parts = self.partition_counts
        deferred = out.deferred
        process = chain.process
        make = self._record
        for m in messages:
            record = make(m, topic, partition)
            ts = record.timestamp
            result = process(record)
            if result.dead_letters:
                out.dead_letters.extend(result.dead_letters)
            for o in result.outputs:
                t = o.topic or default_topic
                key = o.key
                n = n_parts.get(t)
                if n is None:
                    deferred.append((t, key, o.value, ts, o.headers))
                    out.n_out += 1
                    continue
                p = partition_for(key, n, partition)
                g = groups.get((t, p))
                if g is None:
                    g = groups[(t, p)] = []
                g.append((key, o.value, ts, o.headers))
                out.n_out += 1

    def _convert_native(
        self, chain: Chain, plan: NativePlan, out: Converted, topic: str, partition: int, messages: Sequence[Any]
    ) -> None:
        """The whole batch through the native plan in one call; the records it does not
        handle through ``chain.process``, at their place in the batch's order.

        Output keys are hashed to partitions in one native call per partition count; rows
        go straight into per-(topic, partition) lists, so per output the Python left is
        one tuple and one append.
        """
        counts, values, keys, variants = plan.convert_values(
            [m.value for m in messages], [m.key for m in messages] if plan.needs_keys else None
        )
        default_topic = self.sink_topic(topic)
        n_parts = self.partition_counts
        #: per output topic with a known partition count: one row list per partition
        lists: dict[str, list[list[Row]]] = {}
        #: per partition count: the partition of every native output
        hashed: dict[int, list[int]] = {}
        #: per variant: (topic, rows per partition or None: deferred, partitions, header edits)
        info: list[tuple[str, list[list[Row]] | None, list[int], tuple | None]] = []
        for variant_topic, edits in plan.variants:
            t = variant_topic or default_topic
            n = n_parts.get(t)
            if n is None:
                info.append((t, None, [], edits))
                continue
            rows = lists.get(t)
            if rows is None:
                rows = lists[t] = [[] for _ in range(n)]
            parts = hashed.get(n)
            if parts is None:
                parts = hashed[n] = partitions(keys, n, partition) if keys else []
            info.append((t, rows, parts, edits))
        if keys and min(counts) >= 0:
            single = self._single_destination(info, variants)
            if single is not None:  # the common case: all handled natively, one topic, no header edits
                self._place_all(single[0], single[1], messages, counts, keys, values)
                out.n_out += len(keys)
                self._group(out, lists)
                return
        deferred = out.deferred
        i = 0
        n_out = 0
        for m, c in zip(messages, counts, strict=True):
            if c <= 0:
                if c < 0:
                    n_out += self._convert_one(chain, out, lists, m, topic, partition, default_topic)
                continue
            ts = m.timestamp
            if ts is not None and ts < 0:
                ts = None
            source_headers = m.headers
            for j in range(i, i + c):
                t, rows, parts, edits = info[variants[j]]
                headers = list(source_headers) if source_headers else []
                if edits is not None:
                    headers = edit_headers(headers, edits)
                if rows is None:
                    deferred.append((t, keys[j], values[j], ts, headers))
                else:
                    rows[parts[j]].append((keys[j], values[j], ts, headers))
            i += c
            n_out += c
        out.n_out += n_out
        self._group(out, lists)

    @staticmethod
    def _single_destination(
        info: list[tuple[str, list[list[Row]] | None, list[int], tuple | None]], variants: list[int]
    ) -> tuple[list[list[Row]], list[int]] | None:
        """The row lists and partitions shared by every output, when all go to one topic
        whose partition count is known, without header edits; else ``None``."""
        single = None
        for v in set(variants):
            _, rows, parts, edits = info[v]
            if rows is None or edits is not None or (single is not None and single[0] is not rows):
                return None
            single = (rows, parts)
        return single

    @staticmethod
    def _place_all(
        rows: list[list[Row]], parts: list[int], messages: Sequence[Any], counts: list[int], keys: list, values: list
    ) -> None:
        """Every output into its partition's rows, with its message's timestamp and a copy
        of its headers: in one native call (``place_rows``), else with comprehensions and
        one zip (the cheapest per-output Python)."""
        place = row_placer()
        if place is not None:
            place(rows, parts, messages, counts, keys, values)
            return
        sources = (
            messages
            if len(keys) == len(messages)
            else [m for m, c in zip(messages, counts, strict=True) for _ in range(c)]
        )
        stamps = [None if m.timestamp is not None and m.timestamp < 0 else m.timestamp for m in sources]
        headers = [list(m.headers) if m.headers else [] for m in sources]
        for row, p in zip(zip(keys, values, stamps, headers, strict=True), parts, strict=True):
            rows[p].append(row)

    @staticmethod
    def _group(out: Converted, lists: dict[str, list[list[Row]]]) -> None:
        groups = out.groups
        for t, per_partition in lists.items():
            for p, partition_rows in enumerate(per_partition):
                if partition_rows:
                    groups[(t, p)] = partition_rows

    def _convert_one(
        self,
        chain: Chain,
        out: Converted,
        lists: dict[str, list[list[Row]]],
        m: Any,
        topic: str,
        partition: int,
        default_topic: str,
    ) -> int:
        """One record the plan left to Python, through ``chain.process``; its outputs join
        the batch's row lists in order. Returns how many it gave."""
        record = self._record(m, topic, partition)
        ts = record.timestamp
        result = chain.process(record)
        if result.dead_letters:
            out.dead_letters.extend(result.dead_letters)
        for o in result.outputs:
            t = o.topic or default_topic
            n = self.partition_counts.get(t)
            if n is None:
                out.deferred.append((t, o.key, o.value, ts, o.headers))
                continue
            rows = lists.get(t)
            if rows is None:
                rows = lists[t] = [[] for _ in range(n)]
            rows[partition_for(o.key, n, partition)].append((o.key, o.value, ts, o.headers))
        return len(result.outputs)

    def place(self, batch: Converted, partition: int) -> None:
        """Group the deferred rows once their topics' partition counts are known (the keys
        of each topic hashed in one batch call)."""
        rows = batch.deferred
        if not rows:
            return
        placed: list[int] = [0] * len(rows)
        by_topic: dict[str, list[int]] = {}
        for i, row in enumerate(rows):
            by_topic.setdefault(row[0], []).append(i)
        for t, index in by_topic.items():
            parts = partitions([rows[i][1] for i in index], self.partition_counts[t], partition)
            for i, p in zip(index, parts, strict=True):
                placed[i] = p
        groups = batch.groups
        for (t, key, value, ts, headers), p in zip(rows, placed, strict=True):
            g = groups.get((t, p))
            if g is None:
                g = groups[(t, p)] = []
            g.append((key, value, ts, headers))
        batch.deferred = []


class Pipeline:
    """Per-partition chains, batch produce, ack tracking and the commit offsets."""

    def __init__(
        self,
        job: JobConfig,
        metrics: WorkerMetrics,
        *,
        producer: Callable[[], Any],
        on_fatal: Callable[[BaseException], None],
        chain_factory: Callable[[], Chain] | None = None,
        pool: Any = None,
        state_store: Any = None,
    ) -> None:
        self.job = job
        #: connector.worker.state.StateStore, or None: chain state lives in memory only.
        self.state_store = state_store
        self.pool = pool  # connector.worker.pool.ConversionPool, or None: convert in this thread
        self.metrics = metrics
        self._producer = producer  # -> aiokafka.AIOKafkaProducer (Faust's, once started)
        self._on_fatal = on_fatal
        self._chain_factory = chain_factory or job.build_chain
        self.states: dict[Any, PartitionState] = {}
        self.partition_counts: dict[str, int] = {}
        self.converter = Converter(job, self.partition_counts)
        self.fatal: BaseException | None = None
        self.busy = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._acked = asyncio.Event()
        self.last_batch_at: float | None = None
        self.source_topics: set[str] = set()
        #: How much of a fetch is converted in one step (small while caught up, large under lag).
        self.sizer = BatchSizer(max_step=job.worker.batch_size)
        #: The consumer's high watermark of a source partition (set by the app): is a partition caught up?
        self.highwater: Callable[[Any], int | None] | None = None
        #: exactly_once: the partitions' transactional producers; None: at-least-once (acks + commits).
        self.transactions: Transactions | None = (
            Transactions(job, self.build_batches) if job.worker.exactly_once else None
        )
        #: The last batch handed to the producer per output partition, and its delivery future:
        #: later records join it until the producer takes it (see :meth:`_produce`).
        self.open_batches: dict[tuple[str, int], tuple[Any, asyncio.Future]] = {}

    # -- topics --------------------------------------------------------------------------
    def owns(self, topic: str) -> bool:
        return topic in self.source_topics

    async def _ensure_partitions(self, topics: Iterable[str], source_topic: str) -> None:
        """Learn the partition counts of output topics; with ``worker.create_topics``,
        create missing ones first (also those named by routing transforms or by the
        sink format, such as Debezium's schema-change topic)."""
        missing = sorted({t for t in topics if t not in self.partition_counts})
        if not missing:
            return
        producer = self._producer()
        creation = self.job.worker.create_topics
        if creation is not None:
            conn = self.job.kafka.aiokafka_kwargs()
            existing = await K.partition_counts(conn, missing + [source_topic])
            default = creation.partitions or existing.get(source_topic, 1)
            wanted = {t: default for t in missing if t not in existing}
            if wanted:
                created = await K.create_topics(conn, wanted, replication_factor=creation.replication_factor)
                if created:
                    log.info("created topics: %s", ", ".join(created))
        for t in missing:
            # Track the topic in the producer's metadata. Without this, aiokafka keeps
            # only topics it was asked about while unknown: a later lookup of another
            # new topic refreshes metadata for that one alone, the others' leaders
            # vanish, and their pending batches expire (NotLeaderForPartitionError).
            await producer.client.add_topic(t)
            try:
                parts = await producer.partitions_for(t)
            except Exception as exc:  # noqa: BLE001 - reported as a clear stop reason
                raise WorkerFailed(
                    f"cannot get partitions of output topic {t!r} ({type(exc).__name__}: {exc}); "
                    "create it or set worker.create_topics: true"
                ) from exc
            self.partition_counts[t] = len(parts)

    # -- processing ---------------------------------------------------------------------
    @property
    def parallel(self) -> bool:
        """Can batches of different partitions be converted at the same time?"""
        return self.pool is not None

    def state(self, tp: Any) -> PartitionState:
        st = self.states.get(tp)
        if st is None:
            st = self.states[tp] = PartitionState()
        return st

    async def process(self, tp: Any, messages: Sequence[Any]) -> None:
        """Convert and produce one batch of ``tp``; returns once it is enqueued (not acked)."""
        if self.fatal is not None:
            return
        self.busy += 1
        self._idle.clear()
        started = time.perf_counter()
        try:
            await self._process(tp, messages)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - every failure stops the worker cleanly
            self._fail(exc)
        finally:
            self.busy -= 1
            if self.busy == 0:
                self._idle.set()
            self.last_batch_at = time.time()
            self.metrics.batch_seconds.observe(time.perf_counter() - started)

    async def process_group(self, group: Sequence[tuple[Any, Sequence[Any]]]) -> None:
        """:meth:`process` each ``(partition, records)`` step in turn, with no turn of the loop for
        the producer in between: their outputs join the same open batches and go out together."""
        for tp, messages in group:
            await self.process(tp, messages)

    async def _process(self, tp: Any, messages: Sequence[Any]) -> None:
        st = self.state(tp)
        if self.transactions is not None and not st.started and st.next_offset is None:
            # Fence older producers of this partition first; only then is its committed offset final.
            resume = await self.transactions.open(tp)
            if resume is not None:
                st.next_offset = resume
        if st.next_offset is not None and messages and messages[0].offset < st.next_offset:
            # Already processed in this assignment (a seek back re-delivered them):
            # they are in flight or acked, and will be committed. (A partition's
            # offsets increase: when the first is new, all are.)
            messages = [m for m in messages if m.offset >= st.next_offset]
        if not messages:
            return
        topic, partition = tp.topic, tp.partition
        self.metrics.count_in(topic, len(messages))
        conv = self.converter
        sink = conv.sink_topic(topic)
        needed = [sink] + ([conv.dead_letter_topic] if conv.dead_letter_topic else [])
        if any(t not in self.partition_counts for t in needed):
            await self._ensure_partitions(needed, topic)
        restore = None
        if not st.started:
            st.started = True
            if self.state_store is not None:
                restore = self.state_store.restore(topic, partition, messages[0].offset)
        if self.pool is not None:
            batch = await self.pool.convert(topic, partition, messages, dict(self.partition_counts), restore)
            if not isinstance(batch, Converted):  # Halted
                raise self._halted(batch.where, batch.describe, messages[0].offset)
        else:
            if st.chain is None:
                st.chain = self._chain_factory()
            if restore is not None:
                conv.restore(st.chain, topic, partition, restore)
            try:
                batch = conv.convert(st.chain, topic, partition, messages)
                self.metrics.observe_missing(st.chain.transforms)
            except ChainHalted as exc:
                dl = exc.dead_letter
                raise self._halted(dl.record.where(), dl.describe(), messages[0].offset) from None
        if batch.deferred:
            await self._ensure_partitions({row[0] for row in batch.deferred}, topic)
            conv.place(batch, partition)
        st.next_offset = batch.next_offset
        if batch.state is not None and self.state_store is not None:
            row = self.state_store.update(topic, partition, batch.next_offset, batch.state, st.committed)
            if row is not None:  # goes out (and is acknowledged) with the batch it describes
                changelog, key, value = row
                batch.groups.setdefault((changelog, partition), []).append((key, value, None, []))
        self._report_dead_letters(batch.dead_letters)
        if self.transactions is not None:
            await self._produce_transactional(tp, st, batch)
        else:
            await self._produce(st, batch)

    @staticmethod
    def _halted(where: str, describe: str, batch_start: int) -> WorkerFailed:
        return WorkerFailed(
            f"stopping at {where} (errors.tolerance=none): {describe}. "
            f"Offsets are committed only up to before this batch (offset {batch_start}); "
            "fix the input or the chain, or set errors.tolerance: all with a dead_letter_topic"
        )

    def _report_dead_letters(self, dead: list[DeadLetter]) -> None:
        if not dead:
            return
        for i, dl in enumerate(dead):
            self.metrics.dead_letters.labels(dl.stage).inc()
            if i < DEAD_LETTER_LOG_LIMIT:
                log.warning(
                    "dead letter %s: %s",
                    dl.record.where(),
                    dl.describe(),
                    extra={
                        "event": "dead_letter",
                        "stage": dl.stage,
                        "topic": dl.record.topic,
                        "partition": dl.record.partition,
                        "offset": dl.record.offset,
                    },
                )
        if len(dead) > DEAD_LETTER_LOG_LIMIT:
            log.warning("%d more dead letters in this batch", len(dead) - DEAD_LETTER_LOG_LIMIT)

    @staticmethod
    def build_batches(producer: Any, groups: dict) -> list[tuple[str, int, Any, int]]:
        """``(topic, partition, aiokafka batch, records)`` for the rows of ``groups``, split where a
        batch is full (``producer.batch_size``): Kafka batch bytes written natively, a row list
        per call (:class:`~connector.kafka.produce.NativeBatch`), where the producer allows;
        else aiokafka's own builder, record by record."""
        make = native_batches(producer)
        if make is not None:
            return Pipeline._native_batches(make, groups)
        sends: list[tuple[str, int, Any, int]] = []
        for (topic, p), rows in groups.items():
            builder = producer.create_batch()
            count = 0
            for key, value, ts, headers in rows:
                if builder.append(key=key, value=value, timestamp=ts, headers=headers) is None:
                    if count == 0:
                        raise WorkerFailed(
                            f"a record of {len(value or b'')} bytes for {topic} exceeds producer.batch_size"
                        )
                    sends.append((topic, p, builder, count))
                    builder = producer.create_batch()
                    count = 0
                    if builder.append(key=key, value=value, timestamp=ts, headers=headers) is None:
                        raise WorkerFailed(
                            f"a record of {len(value or b'')} bytes for {topic} exceeds producer.batch_size"
                        )
                count += 1
            if count:
                sends.append((topic, p, builder, count))
        return sends

    @staticmethod
    def _native_batches(make: Callable[[], Any], groups: dict) -> list[tuple[str, int, Any, int]]:
        sends: list[tuple[str, int, Any, int]] = []
        for (topic, p), rows in groups.items():
            start, n = 0, len(rows)
            while start < n:
                builder = make()
                end = builder.append_rows(rows, start)  # the first row always fits, as in aiokafka
                sends.append((topic, p, builder, end - start))
                start = end
        return sends

    async def _produce(self, st: PartitionState, batch: Converted) -> None:
        """Hand the batch's records to the producer; :meth:`_on_ack` settles them.

        aiokafka keeps one produce request in flight per broker and takes one
        batch per partition into each request; a new batch for a partition that
        still has one waiting makes ``send_batch`` wait until the request in
        flight is answered. So a step's records first join the batch still
        waiting for its partition (:attr:`open_batches`, if the producer has not
        taken it yet): the conversion never waits for an acknowledgement, and
        while a request is in flight the next steps' records gather into the next
        one, which is what makes batches grow with the load.
        """
        producer = self._producer()
        flight = InFlight(next_offset=batch.next_offset, remaining=0, timestamps=batch.timestamps)
        st.pending.append(flight)
        joined = self._join_open_batches(batch.groups)
        rest = {key: rows[joined[key] :] for key, rows in batch.groups.items() if joined[key] < len(rows)}
        sends = self.build_batches(producer, rest)
        flight.remaining = sum(1 for n in joined.values() if n) + len(sends)
        if not flight.remaining:
            self._settle(st)
            return
        for (topic, p), n in joined.items():
            if n:
                self.open_batches[(topic, p)][1].add_done_callback(partial(self._on_ack, st, flight, topic, n))
        for topic, p, builder, count in sends:
            fut = await producer.send_batch(builder, topic, partition=p)
            self.open_batches[(topic, p)] = (builder, fut)
            fut.add_done_callback(partial(self._on_ack, st, flight, topic, count))
            fut.add_done_callback(partial(self._close_open_batch, (topic, p), builder))

    def _close_open_batch(self, key: tuple[str, int], builder: Any, _: asyncio.Future) -> None:
        """An acknowledged batch takes no more records: let it go (it holds its encoded bytes)."""
        entry = self.open_batches.get(key)
        if entry is not None and entry[0] is builder:
            del self.open_batches[key]

    def _join_open_batches(self, groups: dict) -> dict[tuple[str, int], int]:
        """Append each group's leading rows to its partition's open batch while it takes them;
        how many rows of each group joined one (the rest need new batches)."""
        joined: dict[tuple[str, int], int] = {}
        for key, rows in groups.items():
            n = 0
            entry = self.open_batches.get(key)
            if entry is not None and not entry[1].done():
                builder = entry[0]
                if isinstance(builder, NativeBatch):
                    joined[key] = builder.append_rows(rows)
                    continue
                for k, value, ts, headers in rows:
                    if builder.append(key=k, value=value, timestamp=ts, headers=headers) is None:
                        break  # taken by the producer (closed) or full
                    n += 1
            joined[key] = n
        return joined

    async def _produce_transactional(self, tp: Any, st: PartitionState, batch: Converted) -> None:
        """exactly_once: the batch and its source offset in one transaction (connector.worker.exactly_once)."""
        assert self.transactions is not None
        flight = InFlight(next_offset=batch.next_offset, remaining=1, timestamps=batch.timestamps)
        st.pending.append(flight)
        counts: dict[str, int] = {}
        for (topic, _), rows in batch.groups.items():
            counts[topic] = counts.get(topic, 0) + len(rows)

        def done(exc: BaseException | None) -> None:
            flight.remaining = 0
            if exc is not None:
                flight.error = exc
                self._fail(WorkerFailed(str(exc)))
            else:
                for topic, n in counts.items():
                    self.metrics.count_out(topic, n)
                self.metrics.observe_latency(flight.timestamps)
                st.committed = flight.next_offset
                while st.pending and st.pending[0].done and st.pending[0].error is None:
                    st.pending.popleft()
            self._acked.set()

        await self.transactions.send(tp, batch.groups, batch.next_offset, done, commit_now=self._caught_up(tp, batch))

    def _caught_up(self, tp: Any, batch: Converted) -> bool:
        """Has this batch reached the partition's high watermark (nothing more waits to be read)?"""
        if self.highwater is None:
            return not self.sizer.behind
        try:
            hw = self.highwater(tp)
        except Exception:  # noqa: BLE001 - not known (yet): commit now, latency first
            return True
        return hw is None or hw < 0 or batch.next_offset >= hw

    def _on_ack(self, st: PartitionState, flight: InFlight, topic: str, count: int, fut: asyncio.Future) -> None:
        flight.remaining -= 1
        if fut.cancelled():
            exc: BaseException | None = asyncio.CancelledError("produce cancelled")
        else:
            exc = fut.exception()
        if exc is not None:
            flight.error = flight.error or exc
            self._fail(WorkerFailed(f"producing to {topic} failed: {type(exc).__name__}: {exc}"))
        else:
            self.metrics.count_out(topic, count)
        if flight.done:
            if flight.error is None:
                self.metrics.observe_latency(flight.timestamps)
            self._settle(st)
            self._acked.set()

    @staticmethod
    def _settle(st: PartitionState) -> None:
        """Advance the commit offset over the leading batches that are fully acknowledged."""
        pending = st.pending
        while pending and pending[0].done:
            flight = pending[0]
            if flight.error is not None:
                return  # never commit past a batch whose output was not acknowledged
            pending.popleft()
            st.committable = flight.next_offset

    def _fail(self, exc: BaseException) -> None:
        if self.fatal is None:
            self.fatal = exc
            self._on_fatal(exc)

    # -- commits and draining -----------------------------------------------------------
    def committable(self, tp: Any) -> int | None:
        """The offset Faust may commit for ``tp`` (never under exactly_once: transactions commit offsets)."""
        st = self.states.get(tp)
        return st.committable if st is not None else None

    def on_committed(self, offsets: dict[Any, int]) -> None:
        """Offsets committed to Kafka (state snapshots before them are no longer needed)."""
        for tp, offset in offsets.items():
            st = self.states.get(tp)
            if st is not None:
                st.committed = offset

    def committable_tps(self) -> list[Any]:
        return [tp for tp, st in self.states.items() if st.committable is not None]

    def in_flight(self) -> int:
        return sum(len(st.pending) for st in self.states.values())

    async def drain(self, timeout: float | None = None) -> bool:
        """Wait until no batch is being converted and every produced batch is settled.

        Returns ``False`` on timeout. Failed batches count as settled (they will
        not be committed).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self.transactions is not None:
                self.transactions.commit_all()  # open transactions commit now, not at their interval
            if self.busy == 0 and all(f.done for st in self.states.values() for f in st.pending):
                return True
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return False
            self._acked.clear()
            waits = [asyncio.ensure_future(self._acked.wait()), asyncio.ensure_future(self._idle.wait())]
            try:
                await asyncio.wait(
                    waits,
                    timeout=min(1.0, remaining) if remaining is not None else 1.0,
                    return_when=asyncio.FIRST_COMPLETED,
                )
            finally:
                for w in waits:
                    w.cancel()

    def forget(self, tps: Iterable[Any]) -> None:
        """Drop the state of partitions this worker no longer owns (after their final commit)."""
        tps = list(tps)
        for tp in tps:
            self.states.pop(tp, None)
        keys = [(tp.topic, tp.partition) for tp in tps]
        self.converter.forget(keys)
        if self.state_store is not None:
            self.state_store.forget(keys)
        if self.pool is not None:
            self.pool.forget([(tp.topic, tp.partition) for tp in tps])

    def positions(self) -> dict[Any, int]:
        return {tp: st.next_offset for tp, st in self.states.items() if st.next_offset is not None}


__all__ = ["Converted", "Converter", "Pipeline", "WorkerFailed"]
