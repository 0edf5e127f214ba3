"""The topic-to-topic rewriter: a Faust app that runs a job's chain between Kafka topics.

Faust hosts the worker: consumer group membership and rebalancing (group =
job id), partition assignment, seeking to committed offsets, the periodic
commit, graceful shutdown on SIGTERM, and the aiokafka producer. What Faust
does *not* do here is deliver records one event at a time: its per-event
path (Message -> Event -> Stream, per-message ack and task hops) costs around
100 µs a record, more than the conversion itself. :class:`CdcConsumer`
replaces the fetch loop so each fetched partition batch goes straight to
:class:`~connector.worker.pipeline.Pipeline` (decode, chain, encode, batch
produce), and supplies the commit offsets from the pipeline's ack tracking.
Other topics (table changelogs) still take Faust's normal path. Faust's
consumer service runs on the worker's own event loop
(:class:`LoopConsumerThread`, the default: lower latency measured idle), or
with ``worker.consumer_thread: true`` in Faust's thread of its own, and gets
the fetch settings Faust does not expose (see :class:`CdcConsumerThread`).

Delivery guarantee (``worker.processing_guarantee``): at-least-once by default;
exactly-once commits each batch with its source offset in a Kafka transaction
(:mod:`connector.worker.exactly_once`), and the consumer then reads
``read_committed``. At-least-once: a source offset is committed only after
every record produced from it (output and dead letters) is acknowledged. On
SIGTERM the worker stops fetching, waits for in-flight batches to be
acknowledged, commits, and exits. After a crash (SIGKILL, OOM, power loss)
the records after the last commit are processed again: the duplicate window
is at most what was processed since the last commit (``commit_interval_ms``
worth of throughput, plus the in-flight batches).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import faust
from faust.transport.drivers import aiokafka as faust_aiokafka
from mode.utils.futures import maybe_async

from cdc_smt.connector import kafka as K
from cdc_smt.connector.jobconfig import JobConfig
from cdc_smt.connector.kafka import transactions
from cdc_smt.connector.metrics import MetricsServer, WorkerMetrics
from cdc_smt.connector.worker.batching import sends, steps
from cdc_smt.connector.worker.pipeline import Pipeline, WorkerFailed

log = logging.getLogger("cdc_smt.worker")

#: Exit codes of :func:`run`.
EXIT_OK = 0
EXIT_FAILED = 1


#: Loop turns after a fetch before its conversion, with the consumer on the worker's loop: the
#: records handed over wake aiokafka's fetcher routine (one turn), which starts the next fetch
#: task (two), which sends the request (three). Without them the next fetch leaves only after
#: the whole fetch is converted, and what arrives meanwhile waits for it.
FETCHER_TURNS = 3


class CdcConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):
    """Faust's consumer thread with the fetch settings Faust does not expose.

    Faust hard-codes ``fetch_max_wait_ms=1500``. aiokafka keeps one fetch in
    flight per broker, so a long poll for partitions that are caught up holds
    back fetches for partitions that still have data: up to 1.5 s of stall
    each time a partition runs dry. The job's ``consumer.fetch_max_wait_ms``
    (default 5) bounds that.
    """

    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        pipeline = getattr(self.consumer, "pipeline", None)
        if pipeline is not None:  # private attributes: read by AIOKafkaConsumer.start() to build its fetcher
            settings = pipeline.job.consumer
            consumer._fetch_max_wait_ms = settings.fetch_max_wait_ms
            consumer._fetch_max_bytes = settings.fetch_max_bytes
            if pipeline.job.worker.exactly_once:  # never read what an aborted transaction wrote
                consumer._isolation_level = "read_committed"
        return consumer

    async def _fetch_records(
        self,
        consumer: Any,
        active_partitions: Any,
        timeout: float | None = None,
        max_records: int | None = None,
    ) -> FetchedRecords:
        records = await super()._fetch_records(consumer, active_partitions, timeout=timeout, max_records=max_records)
        # No await since aiokafka handed the records over: they belong to this assignment.
        return FetchedRecords(records, current_assignment(consumer))

    async def _commit(self, offsets: Mapping[Any, int]) -> bool:
        """Faust's commit, given up when the consumer's group coordinator closes meanwhile.

        A rebalance while the app stops (a broker outage outlasting the session) makes
        Faust close the coordinator; aiokafka's commit under way then retried for ever,
        and the failed worker never exited (:func:`K.unless_coordinator_closes`). The
        offsets stay uncommitted: their records are processed again at the next start.
        """
        try:
            return await K.unless_coordinator_closes(self._ensure_consumer(), super()._commit(offsets))
        except K.CoordinatorClosed as exc:
            log.warning(
                "offsets not committed: %s (a rebalance while stopping)", exc, extra={"event": "commit_abandoned"}
            )
            return False

    async def on_thread_stop(self) -> None:
        """Faust's, with the aiokafka consumer stopped by :func:`K.stop_consumer`: a broker
        gone at shutdown must not kill the thread (and hold the worker's exit a minute)."""
        await super(faust_aiokafka.AIOKafkaConsumerThread, self).on_thread_stop()  # the method queue
        if self._consumer is not None:
            await K.stop_consumer(self._consumer)

    async def rewind(self, assignment: Any, offsets: Mapping[Any, int]) -> dict[Any, int]:
        """Undo fetches whose records were not processed: seek each partition back to ``offsets[tp]``.

        Runs where the consumer runs (its thread, or the worker's loop), so it is ordered
        with Faust's own seeks. Only while the fetching assignment is still the current one
        and the position is still past the offset: a new assignment starts from the committed
        offset anyway, and a seek (to the committed offset) since the fetch already went back
        at least as far.
        Returns the partitions sought back.
        """
        return await self.call_thread(seek_back, self._ensure_consumer(), assignment, offsets)


class LoopConsumerThread(CdcConsumerThread):
    """Faust's consumer service on the worker's own event loop: no thread, no hop on the data path.

    Faust runs its aiokafka consumer in a thread with a loop of its own, and
    every fetch, seek and commit crosses to it and back through mode's method
    queues. Both threads share one interpreter lock: a fetch response can
    wait for the converting thread to give it up (up to the 5 ms switch
    interval), and the records wait again for the worker's loop to wake,
    which costs CPU besides (measured: docs/operations.md). Here the service's
    tasks (aiokafka's fetcher, heartbeat and coordinator included) run on the
    worker's loop, a call into it is a plain ``await``, and the rebalance
    callbacks call the consumer directly. Group membership, the generation,
    seeks, commits and shutdown stay Faust's, in the same order.
    """

    def __init__(self, consumer: Any, *, loop: asyncio.AbstractEventLoop | None = None, **kwargs: Any) -> None:
        loop = loop or asyncio.get_event_loop_policy().get_event_loop()
        super().__init__(consumer, loop=loop, thread_loop=loop, **kwargs)
        self._serving: asyncio.Future | None = None

    async def start(self) -> None:
        """Serve as a task of this loop (mode would start a thread running a loop of its own)."""
        assert not self._thread_started.is_set()
        self._thread_started.set()
        self._thread_running = self.parent_loop.create_future()
        self._serving = asyncio.ensure_future(self._serve())
        try:
            if not self.should_stop:
                await self._thread_running  # set once started; raises what start-up raised
        finally:
            self._thread_running = None

    async def on_thread_started(self) -> None:
        """No method queue: :meth:`call_thread` calls directly."""

    async def call_thread(self, fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await maybe_async(fun(*args, **kwargs))  # Faust calls coroutines and plain methods alike

    async def cast_thread(self, fun: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        asyncio.ensure_future(maybe_async(fun(*args, **kwargs)))

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self.consumer.on_partitions_revoked(revoked)

    async def on_partitions_assigned(self, assigned: Any, generation_id: int = 0) -> None:
        await self.consumer.on_partitions_assigned(assigned, generation_id)

    async def _gather_remaining_tasks(self) -> None:
        """mode cancels every task left on the thread's loop here: this loop is the worker's own."""


def current_assignment(consumer: Any) -> Any:
    """The aiokafka consumer's current assignment (a new object at each rebalance), or ``None``."""
    subscription = consumer._subscription.subscription
    return subscription.assignment if subscription is not None else None


async def seek_back(consumer: Any, assignment: Any, offsets: Mapping[Any, int]) -> dict[Any, int]:
    """Seek each partition back to ``offsets[tp]`` if ``assignment`` is still current and the
    position is past it; returns the partitions sought back. Call it in the consumer's loop."""
    if assignment is None or current_assignment(consumer) is not assignment or not assignment.active:
        return {}
    rewound = {}
    for tp, offset in offsets.items():
        if tp not in assignment.tps:
            continue
        state = assignment.state_value(tp)
        if state.has_valid_position and state.position > offset:
            consumer.seek(tp, offset)
            rewound[tp] = offset
    return rewound


def fetched_in_earlier_assignment(records: Mapping[Any, Sequence[Any]], consumer: Any) -> bool:
    """Whether ``records`` (:class:`FetchedRecords`) were fetched in an aiokafka assignment that
    is no longer ``consumer``'s current one: a rebalance came in between, whatever the generation
    Faust shows by now (a fetch asked for ahead is received a whole conversion after it returned)."""
    assignment = getattr(records, "assignment", None)
    return assignment is not None and consumer is not None and assignment is not current_assignment(consumer)


class FetchedRecords(dict):
    """One fetch's records per partition, with the aiokafka assignment they were fetched in."""

    def __init__(self, records: Mapping[Any, Sequence[Any]], assignment: Any) -> None:
        super().__init__(records)
        self.assignment = assignment


class CdcConsumer(faust_aiokafka.Consumer):
    """Faust's aiokafka consumer with a batch fast path for the job's source topics."""

    pipeline: Pipeline | None = None
    _thread: CdcConsumerThread
    #: Partitions sought back by :meth:`_fetch_again`: the assignment and offset (until a fetch starts there).
    _sought_back: dict[Any, tuple[Any, int]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._sought_back = {}
        super().__init__(*args, **kwargs)

    def _new_consumer_thread(self) -> CdcConsumerThread:
        if getattr(self.app, "consumer_thread", False):  # CdcApp's setting: Faust's design, a thread of its own
            return CdcConsumerThread(self, loop=self.loop, beacon=self.beacon)
        return LoopConsumerThread(self, loop=self.loop, beacon=self.beacon)

    async def _drain_messages(self, fetcher: Any) -> None:  # pragma: no cover - exercised by the integration tests
        pipeline = self.pipeline
        assert pipeline is not None, "CdcConsumer.pipeline must be set before the app starts"
        callback = self.callback
        consumer_should_stop = self._stopped.is_set
        fetcher_should_stop = fetcher._stopped.is_set
        get_read_offset = self._read_offset.__getitem__
        set_read_offset = self._read_offset.__setitem__
        fetch_ahead = pipeline.job.worker.fetch_ahead
        turns = FETCHER_TURNS if isinstance(self._thread, LoopConsumerThread) else 1
        ahead: asyncio.Future | None = None  # the next fetch, asked for while this one converts
        try:
            while not (consumer_should_stop() or fetcher_should_stop()):
                if ahead is None:
                    records, active = await self._wait_next_records(1.0)
                else:
                    next_fetch, ahead = ahead, None
                    records, active = await next_fetch
                for _ in range(turns):  # on this loop: let aiokafka ask for these partitions again first
                    await asyncio.sleep(0)
                if not records or self.should_stop:
                    continue
                generation = self.app.consumer_generation_id
                if fetched_in_earlier_assignment(records, self._thread._consumer):  # a rebalance came in between
                    generation = -1
                owned: list[tuple[Any, Sequence[Any]]] = []
                unprocessed: dict[Any, int] = {}  # partition -> first offset received and not processed
                handled: set[Any] = set()  # partitions that went Faust's per-message path
                for tp, recs in records.items():
                    if not recs:
                        continue
                    if self._sought_back and self._fetched_before_seek_back(records, tp, recs):
                        unprocessed[tp] = self._sought_back[tp][1]
                        continue
                    if not self.flow_active or self.app.consumer_generation_id != generation:
                        # Rebalancing (or fetched before one): nothing more of this fetch is processed.
                        for t, r in records.items():
                            if r and t not in handled:
                                unprocessed.setdefault(t, r[0].offset)
                        owned = []
                        break
                    if active is not None and tp not in active and tp not in self._buffered_partitions:
                        unprocessed[tp] = recs[0].offset  # paused since the fetch began
                        continue
                    if pipeline.owns(tp.topic):
                        owned.append((tp, recs))
                        continue
                    for rec in recs:  # Faust's own per-message path (table changelogs)
                        r_offset = get_read_offset(tp)
                        if r_offset is not None and rec.offset < r_offset:
                            continue
                        await self.wait_first(callback(self._to_message(tp, rec)), self.suspend_flow.wait())
                        set_read_offset(tp, rec.offset)
                    handled.add(tp)
                if owned and fetch_ahead and self.flow_active:
                    ahead = asyncio.ensure_future(self._wait_next_records(1.0))
                # Shielded: a shutdown that cancels the fetcher must not cut a batch in
                # half; wait_empty() waits for it and for its acks.
                if pipeline.parallel:  # partitions convert at once, in their child processes
                    await asyncio.shield(asyncio.gather(*(pipeline.process(tp, batch) for tp, batch in owned)))
                    for tp, batch in owned:
                        set_read_offset(tp, batch[-1].offset)
                else:
                    # What the fetch returned goes to conversion at once, in steps that stay small
                    # while the worker keeps up and grow under a backlog; a small fetch's steps are
                    # converted together, so their outputs go out in one request (connector.worker.batching).
                    pending = {tp: batch[0].offset for tp, batch in owned}  # next offset not yet processed
                    for group in sends(steps(pipeline.sizer, owned)):
                        if not self.flow_active or self.app.consumer_generation_id != generation:
                            # A rebalance began while converting: the rest is not processed.
                            unprocessed.update((t, o) for t, o in pending.items() if o <= records[t][-1].offset)
                            break
                        await asyncio.shield(pipeline.process_group(group))
                        for tp, step in group:
                            set_read_offset(tp, step[-1].offset)
                            pending[tp] = step[-1].offset + 1
                        await asyncio.sleep(0)  # let the producer send this group while the next converts
                if unprocessed:
                    await self._fetch_again(records, unprocessed)
        except self.consumer_stopped_errors:
            if self.transport.app.should_stop:
                return
            raise
        except asyncio.CancelledError:
            if self.transport.app.should_stop:
                return
            raise
        finally:
            if ahead is not None:  # stopping: what it fetched is not processed, nor committed
                ahead.cancel()

    async def _fetch_again(self, records: Mapping[Any, Sequence[Any]], offsets: Mapping[Any, int]) -> None:
        """Make the records this loop received and did not process be fetched again.

        Returning records advanced aiokafka's position past them. A rebalance resets
        positions (the new assignment starts from the committed offsets, and Faust
        seeks to them before it resumes the flow), but records fetched after that
        reset and received while the flow is still suspended would be skipped for
        good: so the fetch is undone, where the consumer runs, wherever no reset came
        after it (:meth:`CdcConsumerThread.rewind`).
        """
        assignment = getattr(records, "assignment", None)
        rewound = await self._thread.rewind(assignment, offsets)
        self._sought_back.update((tp, (assignment, offset)) for tp, offset in rewound.items())
        if rewound:
            log.info(
                "records received during a rebalance are fetched again: %s",
                ", ".join(f"{tp.topic}[{tp.partition}] from {offset}" for tp, offset in sorted(rewound.items())),
                extra={"event": "fetch_again"},
            )

    def _fetched_before_seek_back(self, records: Mapping[Any, Sequence[Any]], tp: Any, recs: Sequence[Any]) -> bool:
        """Whether ``recs`` continue past an offset ``tp`` was sought back to: fetched before the seek.

        Only a fetch that was pending while the seek ran can return those; they are not
        processed (the partition is fetched again from the offset sought back to).
        """
        sought = self._sought_back.get(tp)
        if sought is None:
            return False
        assignment, offset = sought
        if assignment is getattr(records, "assignment", None) and recs[0].offset > offset:
            return True
        del self._sought_back[tp]  # the fetch starts there again, or a new assignment started over
        return False

    # -- commits: offsets come from the pipeline's ack tracking ------------------------
    def _filter_tps_with_pending_acks(self, topics: Any = None) -> Iterator[Any]:
        seen = set()
        for tp in super()._filter_tps_with_pending_acks(topics):
            seen.add(tp)
            yield tp
        if self.pipeline is not None:
            for tp in self.pipeline.committable_tps():
                if tp not in seen and (topics is None or tp in topics or tp.topic in topics):
                    yield tp

    def _new_offset(self, tp: Any) -> int | None:
        if self.pipeline is not None and self.pipeline.owns(tp.topic):
            return self.pipeline.committable(tp)
        return super()._new_offset(tp)

    async def _commit_offsets(self, offsets: Mapping[Any, int], start_new_transaction: bool = True) -> bool:
        did = await super()._commit_offsets(offsets, start_new_transaction=start_new_transaction)
        if did and self.pipeline is not None and any(self.pipeline.owns(tp.topic) for tp in offsets):
            self.pipeline.metrics.commits.inc()
            self.pipeline.on_committed({tp: o for tp, o in offsets.items() if self.pipeline.owns(tp.topic)})
            log.debug("committed %s", {f"{tp.topic}[{tp.partition}]": o for tp, o in offsets.items()})
        return did

    async def wait_empty(self) -> None:
        """Before Faust's final commit (rebalance or stop): let in-flight batches finish and be acked."""
        if self.pipeline is not None:
            if not await self.pipeline.drain(timeout=self.app.conf.broker_session_timeout * 0.8):
                log.warning("in-flight batches not acknowledged in time; their offsets are not committed")
        await super().wait_empty()

    async def on_partitions_revoked(self, revoked: set) -> None:
        await super().on_partitions_revoked(revoked)  # waits, commits (see wait_empty)
        if self.pipeline is not None:
            if self.pipeline.transactions is not None:
                await self.pipeline.transactions.close(revoked)
            self.pipeline.forget(revoked)
        log.info("partitions revoked: %s", describe_partitions(revoked))

    async def on_partitions_assigned(self, assigned: set, generation_id: int = 0) -> None:
        await super().on_partitions_assigned(assigned, generation_id)
        if self.pipeline is not None and self.pipeline.transactions is not None:
            # Fence older producers of these partitions now, all at once (not at each first batch).
            try:
                await self.pipeline.transactions.prepare(tp for tp in assigned if self.pipeline.owns(tp.topic))
            except Exception as exc:  # noqa: BLE001 - the first batch of each partition tries again, and reports
                log.warning("preparing transactions of the assigned partitions: %s: %s", type(exc).__name__, exc)
        log.info(
            "partitions assigned: %s",
            describe_partitions(assigned),
            extra={"event": "assigned", "generation": generation_id},
        )


class CdcTransport(faust_aiokafka.Transport):
    Consumer = CdcConsumer


class CdcApp(faust.App):
    """A Faust app whose consumer is :class:`CdcConsumer`."""

    #: ``worker.consumer_thread``: Faust's consumer in a thread of its own, not on the worker's loop.
    consumer_thread: bool = False

    def _new_transport(self) -> Any:
        return CdcTransport(self.conf.broker_consumer, self)


#: Faust's leader-election topic is ``<app id>-__assignor-__leader``: Faust assigns it to
#: every worker; it carries nothing of the job's, so logs leave it out.
LEADER_TOPIC_SUFFIX = "-__assignor-__leader"


def describe_partitions(tps: Iterable[Any]) -> str:
    """``topic[partition], ...`` for a log line, without Faust's internal leader-election topic."""
    names = (f"{tp.topic}[{tp.partition}]" for tp in tps if not tp.topic.endswith(LEADER_TOPIC_SUFFIX))
    return ", ".join(sorted(names)) or "none"


# -- building the app -------------------------------------------------------------------
def build_app(job: JobConfig, *, data_dir: str | None = None) -> CdcApp:
    """The Faust app for ``job`` (consumer group = ``job.id``)."""
    c, p, w = job.consumer, job.producer, job.worker
    data_dir = data_dir or w.data_dir or os.path.join(tempfile.gettempdir(), "cdc-smt", job.id)
    Path(data_dir).mkdir(parents=True, exist_ok=True)
    settings: dict[str, Any] = dict(
        K.faust_client_settings(job.kafka, c, p),
        store="memory://",
        web_enabled=False,
        autodiscover=False,
        datadir=data_dir,
        table_standby_replicas=0,
        stream_wait_empty=True,
        broker_max_poll_records=w.batch_size,
        broker_commit_interval=w.commit_interval_ms / 1000,
        broker_commit_every=2**62,  # commits are driven by acks and the interval, not by counts
        logging_config=None,
    )
    app = CdcApp(job.id, **settings)
    app.consumer_thread = w.consumer_thread
    return app


class _HostWorker(faust.Worker):
    """``faust.Worker`` without its logging takeover; signals only when asked."""

    def __init__(self, app: faust.App, *, on_signal: Callable[[signal.Signals], None] | None, **kwargs: Any) -> None:
        self._on_signal = on_signal
        super().__init__(app, quiet=True, override_logging=False, redirect_stdouts=False, daemon=False, **kwargs)
        self.spinner = None  # it writes terminal control codes to stdout

    def install_signal_handlers(self) -> None:
        if self._on_signal is None:
            return
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.loop.add_signal_handler(sig, self._on_signal, sig)

    def _setproctitle(self, info: str, **kwargs: Any) -> None:  # keep the process title (ps shows cdc-smt)
        return


class WorkerRuntime:
    """One running job: app, pipeline, metrics, and the stop/fail bookkeeping."""

    def __init__(self, job: JobConfig) -> None:
        self.job = job
        self.metrics = WorkerMetrics(job.id, job.source.format, job.sink.format)
        self.app = build_app(job)
        self.stop_requested = asyncio.Event()
        self.failure: BaseException | None = None
        self.stop_timed_out = False
        self.state = "starting"
        self.pool = None
        if job.worker.processes > 1:
            from cdc_smt.connector.worker.pool import ConversionPool

            self.pool = ConversionPool(job, job.worker.processes)
        self.pipeline = Pipeline(
            job,
            self.metrics,
            producer=self._aiokafka_producer,
            on_fatal=self._on_fatal,
            chain_factory=lambda: job.build_chain(catalog=job.new_catalog()),
            pool=self.pool,
        )
        self.server: MetricsServer | None = None
        self._source_channel: Any = None

    # -- wiring -------------------------------------------------------------------------------
    def _aiokafka_producer(self) -> Any:
        """The aiokafka producer inside Faust's producer service (batch API access)."""
        producer = self.app.producer
        if not isinstance(producer, faust_aiokafka.Producer):  # the transport the worker configures
            raise WorkerFailed(f"the worker needs Faust's aiokafka producer, got {type(producer).__name__}")
        return producer._ensure_producer()  # noqa: SLF001 - Faust exposes no public handle

    def _on_fatal(self, exc: BaseException) -> None:
        if self.failure is None:
            self.failure = exc
            log.error("%s", exc, extra={"event": "worker_failed"})
            self.app.consumer.stop_flow()  # fetch no more; what is in flight still settles
            self.stop_requested.set()

    def request_stop(self, sig: signal.Signals | None = None) -> None:
        if not self.stop_requested.is_set():
            log.info("stop requested%s: draining in-flight batches, then committing", f" ({sig.name})" if sig else "")
        self.stop_requested.set()

    def lag(self) -> dict[tuple[str, int], int]:
        consumer = self.app.consumer
        out = {}
        for tp, next_offset in self.pipeline.positions().items():
            try:
                hw = consumer.highwater(tp)
            except Exception:  # noqa: BLE001 - not assigned any more
                continue
            if hw is not None and hw >= 0:
                out[(tp.topic, tp.partition)] = max(0, hw - next_offset)
        return out

    def health(self) -> tuple[bool, dict[str, Any]]:
        ok = self.state == "running" and self.failure is None
        last = self.pipeline.last_batch_at
        info = {
            "status": "failed" if self.failure else self.state,
            "job": self.job.id,
            "assigned": sorted(f"{tp.topic}[{tp.partition}]" for tp in self.pipeline.states),
            "in_flight_batches": self.pipeline.in_flight(),
            "last_batch_age_s": None if last is None else round(time.time() - last, 3),
        }
        if self.failure is not None:
            info["error"] = str(self.failure)
        return ok, info

    # -- start-up steps -----------------------------------------------------------------------
    async def resolve_sources(self) -> list[str]:
        """Source topics: the configured list, or the cluster's topics matching the pattern."""
        src = self.job.source
        conn = self.job.kafka.aiokafka_kwargs()
        if src.topics:
            existing = await K.list_topics(conn)
            for t in src.topics:
                if t not in existing:
                    log.warning("source topic %s does not exist (yet); the worker waits for it", t)
            return list(src.topics)
        candidates = {t for t in await K.list_topics(conn) if src.matches(t)}
        # Never consume our own output: that would be a loop.
        outputs = {self.job.sink.topic_for(t) for t in candidates} | {self.job.errors.dead_letter_topic}
        matched = sorted(candidates - outputs)
        if not matched:
            log.warning("no topic matches source.pattern %r yet", src.pattern)
        return matched

    async def create_topics(self, sources: list[str]) -> None:
        creation = self.job.worker.create_topics
        if creation is None:
            return
        conn = self.job.kafka.aiokafka_kwargs()
        counts = await K.partition_counts(conn, sources)
        wanted: dict[str, int] = {}
        for t in sources:
            n = creation.partitions or counts.get(t, 1)
            name = self.job.sink.topic_for(t)
            wanted[name] = max(wanted.get(name, 0), n)
        if self.job.errors.dead_letter_topic:
            wanted.setdefault(self.job.errors.dead_letter_topic, creation.partitions or max(counts.values(), default=1))
        created = await K.create_topics(conn, wanted, replication_factor=creation.replication_factor)
        if created:
            log.info("created topics: %s", ", ".join(created))

    async def check_outputs(self, sources: list[str]) -> None:
        """Fail at start-up, not at the first record, when an output topic is missing."""
        names = {self.job.sink.topic_for(t) for t in sources}
        if self.job.errors.dead_letter_topic:
            names.add(self.job.errors.dead_letter_topic)
        found = await K.partition_counts(self.job.kafka.aiokafka_kwargs(), names)
        missing = sorted(names - set(found))
        if missing:
            raise WorkerFailed(
                f"output topic{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                "do not exist: create them, or set worker.create_topics: true"
            )

    async def define_state(self, sources: list[str]) -> None:
        """Changelog-backed Faust tables for the chain's state, when the chain keeps any
        (see :mod:`connector.worker.state`); stateless chains get no tables."""
        if not self.job.build_chain(catalog=self.job.new_catalog()).stateful:
            return
        from cdc_smt.connector.worker.state import StateStore

        counts = await K.partition_counts(self.job.kafka.aiokafka_kwargs(), sources)
        self.pipeline.state_store = StateStore(self.app, counts)
        log.info("chain state kept in tables %s", ", ".join(t.name for t in self.pipeline.state_store.tables.values()))

    def subscribe(self, topics: Iterable[str]) -> None:
        """Register source topics with Faust's conductor (it subscribes; we consume in batches)."""
        new = [t for t in topics if t not in self.pipeline.source_topics]
        if not new:
            return
        self.pipeline.source_topics.update(new)
        # acks=False: Faust's stream livelock checks do not apply to the batch path.
        channel = self.app.topic(*new, acks=False, value_serializer="raw", key_serializer="raw")
        self.app.topics.add(channel)

    async def _refresh_pattern(self) -> None:
        """Pick up new topics matching ``source.pattern`` (Faust subscribes by name only)."""
        interval = self.job.worker.pattern_refresh_s
        while not self.stop_requested.is_set():
            try:
                await asyncio.wait_for(self.stop_requested.wait(), timeout=interval)
                return
            except TimeoutError:
                pass
            try:
                new = [t for t in await self.resolve_sources() if t not in self.pipeline.source_topics]
            except Exception as exc:  # noqa: BLE001 - retried at the next interval
                log.warning("pattern refresh failed: %s", exc)
                continue
            if new:
                log.info("new source topics match the pattern: %s", ", ".join(new))
                await self.create_topics(new)
                if self.pipeline.state_store is not None:
                    self.pipeline.state_store.add_topics(
                        await K.partition_counts(self.job.kafka.aiokafka_kwargs(), new)
                    )
                self.subscribe(new)

    # -- run ----------------------------------------------------------------------------------
    async def run(self, *, install_signals: bool = True, ready: Callable[[WorkerRuntime], None] | None = None) -> int:
        job = self.job
        log.info("starting job %s", job.id, extra={"event": "start", "job": job.describe()})
        job.check()  # formats, options, transforms: fail before touching Kafka
        # KafkaUnavailable (address and cause) goes to the command line as its one error line.
        await K.wait_until_ready(
            job.kafka,
            timeout_setting="kafka.connect_timeout_s / --connect-timeout",
            address_setting="kafka.bootstrap_servers / --bootstrap",
        )
        if job.worker.exactly_once:
            # TransactionsUnsupported (the embedded broker): one error line, exit 2.
            await transactions.probe(job.kafka, job.producer)
            log.info("exactly-once: one Kafka transaction per batch and source partition")
        sources = await self.resolve_sources()
        await self.create_topics(sources)
        await self.check_outputs(sources)
        await self.define_state(sources)
        consumer = self.app.consumer
        assert isinstance(consumer, CdcConsumer)
        consumer.pipeline = self.pipeline
        self.pipeline.highwater = consumer.highwater
        self.subscribe(sources)
        if job.worker.metrics_port is not None:
            self.server = MetricsServer(
                self.metrics, self.health, job.worker.metrics_host, job.worker.metrics_port
            ).start()
            self.metrics.set_lag_source(self.lag)
            log.info("metrics on http://%s:%d/metrics, health on /health", self.server.host, self.server.port)
        host = _HostWorker(
            self.app, on_signal=self.request_stop if install_signals else None, loop=asyncio.get_running_loop()
        )
        refresher = None
        switch_interval = set_switch_interval(job.worker.switch_interval_ms)
        try:
            if self.pool is not None:
                await self.pool.start()
                log.info("converting in %d child processes", self.pool.size)
            await host.start()
            settle_heap()
            self.state = "running"
            log.info(
                "worker running: %s -> %s",
                ", ".join(sources) or job.source.pattern,
                job.sink.topic,
                extra={"event": "running"},
            )
            if ready is not None:
                ready(self)
            if job.source.pattern and job.worker.pattern_refresh_s > 0:
                refresher = asyncio.ensure_future(self._refresh_pattern())
            await self.stop_requested.wait()
        finally:
            self.state = "stopping"
            if refresher is not None:
                refresher.cancel()
            if not await stop_within(host.stop(), job.worker.shutdown_timeout_s):
                self.stop_timed_out = True
                log.error(
                    "the worker did not stop within worker.shutdown_timeout_s (%gs): exiting without its last "
                    "commit; the records after the last commit are processed again at the next start",
                    job.worker.shutdown_timeout_s,
                    extra={"event": "stop_timeout"},
                )
            if self.pipeline.transactions is not None:
                await self.pipeline.transactions.close()
            if self.pool is not None:
                self.pool.shutdown()
            if self.server is not None:
                self.server.stop()
            sys.setswitchinterval(switch_interval)
            self.state = "stopped"
        if self.failure is not None or self.stop_timed_out:
            return EXIT_FAILED
        log.info("worker stopped cleanly", extra={"event": "stopped"})
        return EXIT_OK


async def stop_within(stopping: Awaitable[Any], timeout: float) -> bool:
    """Await ``stopping`` for at most ``timeout`` seconds; ``False`` if it took longer (it is then
    cancelled, not awaited: a stop that hangs must not hold the process). Faust's stop has no
    deadline of its own: like Kafka Connect's ``task.shutdown.graceful.timeout.ms``, the worker
    gives up its graceful stop rather than never exit (at-least-once: nothing is lost)."""
    task = asyncio.ensure_future(stopping)
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if task in done:
        task.result()
        return True
    task.cancel()
    return False


def settle_heap() -> None:
    """Move everything start-up built (Faust, aiokafka, codecs, chains) out of the garbage
    collector's reach.

    A full (generation 2) collection walks every tracked object: in a started
    worker that is hundreds of thousands of long-lived objects, and the pause
    (tens of ms on an idle core, hundreds under load, measured by
    ``bench/latency.py --stages``) holds back every record arriving meanwhile:
    at 10,000 msgs/s one such pause every few seconds is the p99. Frozen objects
    are never walked again; what the data path allocates is still collected.
    """
    gc.collect()
    gc.freeze()


def set_switch_interval(ms: float) -> float:
    """Set the interpreter's thread switch interval to ``ms`` (0: leave it); returns the one before.

    Faust's consumer thread and the converting loop share one interpreter lock. A
    thread that wants it back (a fetch answered, records handed over) waits until
    the holder blocks or the switch interval (Python's: 5 ms) forces a switch. A
    shorter one bounds that wait (``worker.switch_interval_ms``; measured no better
    on a loaded machine, where the slow hops waited for the OS to run the thread).
    """
    before = sys.getswitchinterval()
    if ms > 0:
        sys.setswitchinterval(ms / 1000)
    return before


def run(job: JobConfig, *, install_signals: bool = True) -> int:
    """Run ``job`` until SIGTERM/SIGINT (exit 0) or a failure (exit 1, reason logged)."""

    async def main() -> int:
        return await WorkerRuntime(job).run(install_signals=install_signals)

    try:
        return asyncio.run(main())
    except WorkerFailed as exc:
        log.error("%s", exc)
        return EXIT_FAILED


__all__ = [
    "CdcApp",
    "CdcConsumer",
    "EXIT_FAILED",
    "EXIT_OK",
    "WorkerRuntime",
    "build_app",
    "describe_partitions",
    "run",
]
