"""The worker's end-to-end latency curve, against the broker's own floor, in one run.

    .venv/bin/python -m bench.latency [--rates 1000,10000,50%,90%] [--seconds 10]

On the embedded broker (Tansu), Apache Kafka (``--apache-kafka``) or any cluster (``--bootstrap``):

1. **max throughput**: a backlog of ``--count`` Canal JSON messages is
   produced first; a ``cdc-smt worker`` (a separate process, as deployed)
   converts it canal-json -> debezium-json; msgs/s from its first consumed
   record to its last acknowledged output (as ``bench.worker`` (a));
2. per offered rate (absolute, or a percentage of 1.), for ``--seconds``:

   - **floor**: a raw aiokafka producer -> broker -> raw consumer, no worker:
     the broker's own produce->consume latency on this machine;
   - **worker**: the same producer -> the worker -> the same consumer;
   - **raw pipe** (unless ``--no-pipe``): the same producer -> a separate
     process with a plain aiokafka consumer (the job's group and fetch
     settings), the worker's own conversion (``Converter``: the chain's native
     plan per fetched partition batch) and a plain aiokafka producer (the
     job's producer settings), on one asyncio loop, no Faust, offsets
     committed by a timer off the data path (:func:`run_raw_pipe`) -> the same
     consumer: two broker hops like the worker, i.e. the best a Python-hosted
     pipe does on this machine. The worker's distance to it is what Faust and
     the worker's own design add.

Each input carries its *scheduled* send time (a ``bench-sent-ns`` header,
and the record timestamp, which the worker carries over to its output), so a
producer that falls behind its schedule counts against the latency, not
silently lowers the rate (no coordinated omission). Latency = arrival at the
consumer minus scheduled send. Percentiles come from a log-bucketed histogram
(HDR-style: ~1 % relative precision at every scale). Each run also prints the
load generator's own figures (how late its ticks reached its producer, its
process's CPU), the latency counted from that hand-over instead (a second
header: the generator's lateness left out), and the worker's CPU and context
switches per record.

The floor, the worker and the pipe run interleaved in the same minute, and with
``--baseline`` all stay up and each rate runs floor, worker, floor,
baseline, floor, pipe in turn, so load from anything else on the machine hits all of them
alike: compare the worker to the floor and to the baseline, not to absolute
figures measured on another day. ``--stages`` times each stage inside this
checkout's worker (:func:`install_probe`).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import platform
import re
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from bench.codec import DEBEZIUM_TYPED_NO_SCHEMA, canal_messages, cpu_model
from bench.worker import IN, OUT, ROOT, WorkerProcess, keyed, worker_throughput
from cdc_smt.connector import kafka as K
from cdc_smt.connector.tuning import tune_allocator

FLOOR = "bench.floor"
SENT_HEADER = "bench-sent-ns"
#: When the generator actually handed the record to its producer (ns): latency from there leaves
#: out the generator's own lateness (and so undercounts a stalled path: coordinated omission).
HANDED_HEADER = "bench-handed-ns"
#: How often the fixed-rate producer sends (each tick sends the records scheduled since the last).
TICK_S = 0.002
#: The measuring consumer's fetch wait (it is part of the floor and of the worker's figures alike).
CONSUMER_WAIT_MS = 5
QUANTILES = (0.50, 0.90, 0.99, 0.999)


class Histogram:
    """Log-bucketed latency histogram (HDR-style): bucket width is 1/``SUB`` of an octave,
    so every percentile is within ~1 % of the true value, however long the tail."""

    SUB = 64

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.count = 0
        self.max = 0.0

    def record(self, ms: float) -> None:
        us = max(ms * 1000.0, 1.0)
        b = int(math.log2(us) * self.SUB)
        self.counts[b] = self.counts.get(b, 0) + 1
        self.count += 1
        self.max = max(self.max, ms)

    def percentile(self, q: float) -> float:
        """The value (ms) at quantile ``q``: the upper edge of its bucket, capped by the max."""
        if not self.count:
            return float("nan")
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for b in sorted(self.counts):
            seen += self.counts[b]
            if seen >= rank:
                return min(self.max, 2 ** ((b + 1) / self.SUB) / 1000.0)
        return self.max

    def summary(self) -> dict[str, float]:
        out = {f"p{q * 100:g}": self.percentile(q) for q in QUANTILES}
        out["max"] = self.max
        return out


def job_doc(
    bootstrap: str,
    source: str,
    sink: str,
    partitions: int,
    args: argparse.Namespace,
    settings: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The benchmark job: the worker's own defaults unless a setting is given on the command line."""
    consumer: dict[str, Any] = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000}
    producer: dict[str, Any] = {"acks": "all"}
    worker: dict[str, Any] = {"metrics_port": 0, "create_topics": {"partitions": partitions}}
    if args.fetch_wait_ms is not None:
        consumer["fetch_max_wait_ms"] = args.fetch_wait_ms
    if args.linger_ms is not None:
        producer["linger_ms"] = args.linger_ms
    if args.batch_size is not None:
        worker["batch_size"] = args.batch_size
    for section, values in (settings or {}).items():
        {"consumer": consumer, "producer": producer, "worker": worker}[section].update(values)
    return {
        "id": f"bench-latency-{source}",
        "kafka": {"bootstrap_servers": bootstrap},
        "source": {"topics": [source], "format": "canal-json"},
        # no tombstones: exactly one output per input, so the backlog run knows when it is done
        "sink": {
            "topic": sink,
            "format": "debezium-json",
            "options": {**DEBEZIUM_TYPED_NO_SCHEMA, "tombstones_on_delete": False},
        },
        "errors": {"tolerance": "all", "dead_letter_topic": "bench.dlq"},
        "producer": producer,
        "consumer": consumer,
        "worker": worker,
    }


class OpenBatches:
    """Per output partition, the last batch handed to the producer: later rows join it until the
    producer takes it (as the worker does), so no send waits for the request in flight."""

    def __init__(self, producer: Any) -> None:
        self.producer = producer
        self.open: dict[tuple[str, int], tuple[Any, asyncio.Future]] = {}

    async def send(self, topic: str, partition: int, rows: Sequence[tuple[Any, Any, Any, Any]]) -> list[asyncio.Future]:
        """Hand ``rows`` (key, value, timestamp, headers) to the producer; the futures that settle them."""
        futures = []
        entry = self.open.get((topic, partition))
        i = 0
        if entry is not None and not entry[1].done():
            i = self.fill(entry[0], rows, 0)
            if i:
                futures.append(entry[1])
        while i < len(rows):
            builder = self.producer.create_batch()
            start, i = i, self.fill(builder, rows, i)
            if i == start:
                raise ValueError(f"a record for {topic} does not fit a batch")
            fut = await self.producer.send_batch(builder, topic, partition=partition)
            self.open[(topic, partition)] = (builder, fut)
            futures.append(fut)
        return futures

    @staticmethod
    def fill(builder: Any, rows: Sequence[tuple[Any, Any, Any, Any]], i: int) -> int:
        """Append ``rows[i:]`` while the batch takes them; the index of the first one left."""
        while i < len(rows):
            key, value, ts, headers = rows[i]
            if builder.append(key=key, value=value, timestamp=ts, headers=headers) is None:
                break
            i += 1
        return i


@dataclass
class RateRun:
    """One fixed-rate run: the latency histogram, and what the load generator itself managed."""

    hist: Histogram
    achieved: float  # msgs/s actually handed to the producer
    acked: int  # records the broker acknowledged
    #: Per tick: how late its records reached the producer (ms after the oldest one's scheduled
    #: time). Part of every latency figure (they count from the schedule): a generator that falls
    #: behind shows here first, not as a slow worker.
    late: Histogram
    #: The bench process's CPU over the run, in cores (generator and measuring consumer: they
    #: share the two cores with the broker and the worker).
    cpu: float
    #: Latency from the hand-over to the producer instead of the schedule (the generator's own
    #: lateness left out): what the path did with the records it was given.
    handed: Histogram

    def generator(self) -> str:
        late = f"{self.late.percentile(0.5):.1f} / p99 {self.late.percentile(0.99):.1f}"
        handed = f"{self.handed.percentile(0.5):.1f} / {self.handed.percentile(0.99):.1f}"
        return f"generator late p50 {late} ms, CPU {self.cpu:.2f} cores; from hand-over p50 / p99 {handed} ms"


async def fixed_rate(
    bootstrap: str,
    source: str,
    sink: str,
    partitions: int,
    rate: int,
    seconds: float,
    values: list[bytes],
    *,
    join: bool = True,
) -> RateRun:
    """Produce ``rate`` msgs/s to ``source`` for ``seconds``; the latency histogram of what
    arrives on ``sink`` (the same topic for the floor), the rate actually sent, and how many
    records the broker acknowledged (an overloaded machine can time sends out).

    ``join``: each tick's records join the batch still waiting for their partition, as the
    Java producer's accumulator does, so a tick never waits for the request in flight; else
    each tick's batch is a new one, whose ``send_batch`` waits until the partition's previous
    batch is taken (the generator of earlier runs: late ticks count against every path; its
    hand-over stamp is the tick's start, before that wait)."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    total = int(rate * seconds)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=CONSUMER_WAIT_MS
    )
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0, max_batch_size=1_000_000)
    await consumer.start()
    await producer.start()
    hist, late, handed = Histogram(), Histogram(), Histogram()
    try:
        tps = [TopicPartition(sink, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_end(*tps)
        for tp in tps:
            await consumer.position(tp)  # outputs of earlier runs are not part of this one

        started_ns = time.time_ns()

        async def consume() -> None:
            while hist.count < total:  # (the caller stops waiting after a while: see below)
                fetched = await consumer.getmany(timeout_ms=200)
                now = time.time_ns()
                for msgs in fetched.values():
                    for m in msgs:
                        stamps = dict(m.headers) if m.headers else {}
                        sent = int(stamps.get(SENT_HEADER, 0))
                        if sent >= started_ns:  # this run's records only (not a late one of the run before)
                            hist.record((now - sent) / 1e6)
                            handed.record((now - int(stamps.get(HANDED_HEADER, sent))) / 1e6)

        reader = asyncio.ensure_future(consume())
        started = time.monotonic()
        cpu_started = time.process_time()
        sent = 0
        deliveries: list[tuple[int, list[asyncio.Future]]] = []
        sends = OpenBatches(producer)
        key_base = 20_000_000 + started_ns // 1_000_000 % 10_000_000 * 10
        while sent < total:
            due = min(total, int((time.monotonic() - started) * rate) + 1)
            rows: dict[int, list[tuple[bytes, bytes, int, list]]] = {}
            handed_at = b"%d" % time.time_ns()  # appended below, with no wait in between (join)
            for i in range(sent, due):
                scheduled = started_ns + int(i * 1e9 / rate)
                rows.setdefault(i % partitions, []).append(
                    (
                        b'{"id":%d}' % (key_base + i),
                        values[i % len(values)],
                        scheduled // 1_000_000,
                        [(SENT_HEADER, b"%d" % scheduled), (HANDED_HEADER, handed_at)],
                    )
                )
            for p, part in rows.items():
                if join:
                    deliveries.append((len(part), await sends.send(source, p, part)))
                    continue
                b = producer.create_batch()
                OpenBatches.fill(b, part, 0)
                b.close()  # ready now: no linger
                deliveries.append((len(part), [await producer.send_batch(b, source, partition=p)]))
            if due > sent:
                late.record((time.time_ns() - started_ns - sent * 1e9 / rate) / 1e6)
            sent = due
            await asyncio.sleep(TICK_S)
        achieved = sent / (time.monotonic() - started)
        await producer.flush()
        futures = {f for _, fs in deliveries for f in fs}
        await asyncio.gather(*futures, return_exceptions=True)
        acked = sum(n for n, fs in deliveries if all(not f.cancelled() and f.exception() is None for f in fs))
        if acked < total:
            print(f"  ({total - acked:,} of {total:,} records were not acknowledged by the broker)", flush=True)
        try:
            await asyncio.wait_for(reader, timeout=max(30.0, seconds))
        except TimeoutError:
            reader.cancel()
            print(f"  (only {hist.count:,} of {total:,} records arrived)", flush=True)
        cpu = (time.process_time() - cpu_started) / max(1e-9, time.monotonic() - started)
        return RateRun(hist, achieved, acked, late, cpu, handed)
    finally:
        await producer.stop()
        await consumer.stop()


def parse_rates(text: str, max_rate: float) -> list[int]:
    rates = []
    for part in text.split(","):
        part = part.strip()
        rates.append(int(max_rate * float(part[:-1]) / 100) if part.endswith("%") else int(float(part)))
    return [r for r in rates if r > 0]


def parse_settings(spec: str) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """``worker.batch_size=500,consumer.fetch_max_wait_ms=20,env.NAME=1`` as job sections, and
    the environment variables (``env.``) of the variant's process."""
    import yaml

    out: dict[str, dict[str, Any]] = {}
    env: dict[str, str] = {}
    for item in spec.split(","):
        path, _, value = item.partition("=")
        section, _, key = path.strip().partition(".")
        if section == "env" and key:
            env[key] = value
            continue
        if section not in ("consumer", "producer", "worker") or not key or not value:
            raise SystemExit(f"--variant {spec!r}: expected consumer|producer|worker|env.KEY=VALUE")
        out.setdefault(section, {})[key] = yaml.safe_load(value)
    return out, env


def row(label: str, rate: int, achieved: float, h: Histogram) -> str:
    s = h.summary()
    return (
        f"| {label} | {rate:,} | {achieved:,.0f} | {h.count:,} | " + " | ".join(f"{v:.1f}" for v in s.values()) + " |"
    )


def plot(path: Path, curve: list[tuple[int, Histogram, Histogram]]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"no plot: matplotlib is not installed (not a project dependency); {path} not written")
        return
    rates = [r for r, _, _ in curve]
    fig, ax = plt.subplots(figsize=(7, 4))
    for q, style in ((0.5, "-"), (0.99, "--")):
        ax.plot(rates, [w.percentile(q) for _, _, w in curve], "o" + style, label=f"worker p{q * 100:g}")
        ax.plot(rates, [f.percentile(q) for _, f, _ in curve], "s" + style, label=f"broker floor p{q * 100:g}")
    ax.set_xlabel("offered msgs/s")
    ax.set_ylabel("end-to-end latency, ms")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    print(f"plot: {path}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (Linux ``/proc``): the worker's cost, which load
    from other processes does not change the way it changes latency."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def context_switches(pid: int) -> tuple[int, int]:
    """(voluntary, involuntary) context switches of all a process's threads so far (Linux ``/proc``).

    Voluntary: a thread blocked (a wait for the socket, for the other thread's answer, for the
    interpreter lock); involuntary: the OS took its core away (another process's turn, often on
    waking the broker by a request). Per record they count the hops a design makes, which the
    machine's load changes far less than the latency they cost."""
    counts = [0, 0]
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "status").read_text()
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        for line in text.splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                counts[0] += int(line.split()[1])
            elif line.startswith("nonvoluntary_ctxt_switches:"):
                counts[1] += int(line.split()[1])
    return counts[0], counts[1]


def consumer_lag(worker: WorkerProcess) -> float:
    """The worker's own lag (records behind the high watermarks), from /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{worker.port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    return sum(float(m.group(1)) for m in re.finditer(r"^cdc_smt_consumer_lag\{[^}]*\} ([0-9.e+]+)$", text, re.M))


def wait_caught_up(worker: WorkerProcess, produced: int, timeout: float = 300.0) -> None:
    """Start a run only once the worker has converted everything before it (one output per input)."""
    deadline = time.monotonic() + timeout
    while worker.counters()[1] < produced or consumer_lag(worker) > 0:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the worker did not catch up with {produced:,} records in {timeout:.0f}s")
        time.sleep(0.2)


@dataclass
class Variant:
    """One worker build under test: this checkout, or ``--baseline`` (another checkout's venv)."""

    name: str
    python: str
    cwd: Path
    source: str
    sink: str
    max_rate: float = 0.0
    produced: int = 0  # records produced to its source so far (one output each)
    curve: list[tuple[int, float, Histogram, Histogram]] = field(default_factory=list)
    stages: list[str] = field(default_factory=list)
    cpu_us: list[float] = field(default_factory=list)  # the worker's CPU per record, per rate
    generator: list[RateRun] = field(default_factory=list)  # the load generator's own figures, per rate
    #: the broker's collector pauses (ms) during each rate's run (``--apache-kafka``: its GC log)
    broker_gc: list[list[float]] = field(default_factory=list)
    #: job settings of this variant only (``--variant``): section -> key -> value
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: environment variables of this variant's process only (``--variant env.NAME=VALUE``)
    env: dict[str, str] = field(default_factory=dict)


class BrokerGc:
    """The pauses of the Apache Kafka broker's collector since the last call (its GC log): a stall
    seen by every path at once is often the broker's, not the worker's."""

    def __init__(self, path: Path | None) -> None:
        self.path, self.offset = path, 0

    def since_last(self) -> list[float]:
        if self.path is None:
            return []
        from cdc_smt.connector.apache_kafka import gc_pauses

        pauses, self.offset = gc_pauses(self.path, self.offset)
        return pauses


def gc_text(pauses: Sequence[float]) -> str:
    return f"broker GC {len(pauses)} pauses, max {max(pauses, default=0.0):.1f} ms;"


async def produce_backlog(bootstrap: str, topic: str, partitions: int, records: list[Any], sink: str) -> None:
    await K.create_topics(bootstrap, {topic: partitions, sink: partitions, FLOOR: partitions, "bench.dlq": 1})
    for start in range(0, len(records), 50_000):
        await K.produce_records(bootstrap, topic, records[start : start + 50_000])


# -- stage probe (bench only: patched into a worker process started by --stages) -------------
STAGES = ("fetched", "loop", "enqueued", "acked")
#: Per fetch of the worker's loop (ms): *ask* from the loop's request to the consumer thread
#: starting it, *wait* in the thread for records, *hand* from the thread's answer to the loop
#: having it (the two thread hops, and the wait between; with the consumer on the worker's
#: loop, the default, *ask* and *hand* are a coroutine call).
HOPS = ("ask", "wait", "hand")
#: Garbage-collector pauses by generation, timed by the probe too (ms each).
GC_PAUSES = ("gc0", "gc1", "gc2")
PROBE_ENV = "BENCH_LATENCY_PROBE"


def _sent_ns(rec: Any) -> int | None:
    """The bench's scheduled send time of a fetched record (None: not a bench record)."""
    for k, v in rec.headers or ():
        if k == SENT_HEADER:
            return int(v)
    return None


def install_probe(out_path: str) -> None:
    """Wrap the worker's stage boundaries to histogram each stage's time since the scheduled send:
    *fetched* (aiokafka returned it, in whatever thread fetches), *loop* (the worker's loop has it),
    *enqueued* (converted and handed to the producer), *acked* (its output acknowledged). The
    first record of each partition batch is sampled. Written as JSON to ``out_path`` at exit."""
    import gc
    import json
    import signal
    import threading

    from cdc_smt.connector.worker import app as worker_app
    from cdc_smt.connector.worker import pipeline as worker_pipeline

    hists = {s: Histogram() for s in STAGES + HOPS + GC_PAUSES}
    hop_ns = [0, 0, 0]  # the loop's request, the thread's start, the thread's answer (one fetch at a time)
    fetches = {"data": 0, "empty": 0}
    lock = threading.Lock()
    flight_sent: dict[int, int] = {}  # InFlight has slots: its sampled send time, by id

    def note(stage: str, sent: int | None, now: int | None = None) -> None:
        if sent is not None:
            with lock:
                hists[stage].record(((now or time.time_ns()) - sent) / 1e6)

    def note_records(stage: str, records: Any) -> None:
        now = time.time_ns()
        for recs in records.values():
            if recs:
                note(stage, _sent_ns(recs[0]), now)

    gc_started = [0]

    def gc_pause(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            gc_started[0] = time.perf_counter_ns()
        else:
            with lock:
                hists[f"gc{info['generation']}"].record((time.perf_counter_ns() - gc_started[0]) / 1e6)

    gc.callbacks.append(gc_pause)

    thread_cls = worker_app.CdcConsumerThread
    fetch_records = thread_cls._fetch_records

    async def probed_fetch(self: Any, *args: Any, **kwargs: Any) -> Any:
        hop_ns[1] = time.perf_counter_ns()
        records = await fetch_records(self, *args, **kwargs)
        hop_ns[2] = time.perf_counter_ns()
        fetches["data" if records else "empty"] += 1
        note_records("fetched", records)
        return records

    thread_cls._fetch_records = probed_fetch  # type: ignore[method-assign]
    getmany = thread_cls.getmany

    async def probed_getmany(self: Any, *args: Any, **kwargs: Any) -> Any:
        hop_ns[0] = asked = time.perf_counter_ns()
        records = await getmany(self, *args, **kwargs)
        handed = time.perf_counter_ns()
        started, answered = hop_ns[1], hop_ns[2]
        if records and asked <= started <= answered <= handed:
            with lock:
                hists["ask"].record((started - asked) / 1e6)
                hists["wait"].record((answered - started) / 1e6)
                hists["hand"].record((handed - answered) / 1e6)
        return records

    thread_cls.getmany = probed_getmany  # type: ignore[method-assign]

    consumer_cls = worker_app.CdcConsumer
    wait_next = consumer_cls._wait_next_records

    async def probed_wait(self: Any, *args: Any, **kwargs: Any) -> Any:
        records, active = await wait_next(self, *args, **kwargs)
        if records:
            note_records("loop", records)
        return records, active

    consumer_cls._wait_next_records = probed_wait  # type: ignore[method-assign]

    pipeline_cls = worker_pipeline.Pipeline
    process = pipeline_cls.process
    on_ack = pipeline_cls._on_ack

    async def probed_process(self: Any, tp: Any, messages: Any) -> None:
        sent = _sent_ns(messages[0]) if messages else None
        await process(self, tp, messages)
        note("enqueued", sent)
        if sent is not None:
            for flight in self.state(tp).pending:
                flight_sent.setdefault(id(flight), sent)

    def probed_ack(self: Any, st: Any, flight: Any, topic: str, count: int, fut: Any) -> None:
        on_ack(self, st, flight, topic, count, fut)
        if flight.done:
            note("acked", flight_sent.pop(id(flight), None))

    pipeline_cls.process = probed_process  # type: ignore[method-assign]
    pipeline_cls._on_ack = probed_ack  # type: ignore[method-assign]

    from aiokafka.producer.sender import Sender

    send_request = Sender._send_produce_req
    produced = {"requests": 0, "records": 0}  # produce requests with records, and their records

    async def probed_send(self: Any, node_id: int, batches: dict) -> None:
        n = sum(b.record_count for b in batches.values())
        with lock:
            produced["requests"] += 1
            produced["records"] += n
        await send_request(self, node_id, batches)

    Sender._send_produce_req = probed_send  # type: ignore[method-assign]

    def dump(*_: Any) -> None:
        """Write what was seen since the last dump, and start over (SIGUSR1: one per offered rate)."""
        with lock:
            data: dict[str, Any] = {s: {"count": h.count, **h.summary()} for s, h in hists.items()}
            data["fetches"] = dict(fetches)
            data["produce"] = dict(produced)
            for s in hists:
                hists[s] = Histogram()
            fetches.update(data=0, empty=0)
            produced.update(requests=0, records=0)
        tmp = Path(out_path + ".tmp")
        tmp.write_text(json.dumps(data))
        tmp.replace(out_path)

    signal.signal(signal.SIGUSR1, dump)


# -- the raw pipe (bench only: the best a Python-hosted pipe does on this machine) ------------
async def run_raw_pipe(job_path: str) -> None:
    """The worker's data path without Faust: one asyncio loop, a plain aiokafka consumer in the
    job's group with the worker's fetch settings, the worker's own :class:`Converter` (the
    chain's native plan over each fetched partition batch), a plain aiokafka producer with the
    job's producer settings; offsets of acknowledged output are committed by a timer task, off
    the data path. Serves the worker's ``/metrics`` so the bench drives it like a worker."""
    import gc

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    from cdc_smt.connector.jobconfig import load_job
    from cdc_smt.connector.kafka.settings import consumer_kwargs, producer_kwargs
    from cdc_smt.connector.metrics import MetricsServer, WorkerMetrics
    from cdc_smt.connector.worker.app import FETCHER_TURNS  # the worker's own loop yields as many
    from cdc_smt.connector.worker.batching import MIN_STEP
    from cdc_smt.connector.worker.pipeline import Converter

    job = load_job(job_path)
    conn = job.kafka.aiokafka_kwargs()
    (source,) = job.source.topics
    sink = job.sink.topic_for(source)
    consumer = AIOKafkaConsumer(
        source, **conn, group_id=job.id, **consumer_kwargs(job.consumer, max_poll_records=job.worker.batch_size)
    )
    producer = AIOKafkaProducer(**conn, **producer_kwargs(job.producer))
    await producer.start()
    await consumer.start()
    counts = {t: len(await producer.partitions_for(t)) for t in (sink, job.errors.dead_letter_topic) if t}
    converter = Converter(job, counts)
    chains: dict[int, Any] = {}
    metrics = WorkerMetrics(job.id, job.source.format, job.sink.format)
    acked: dict[Any, int] = {}  # per source partition: next offset whose output is all acknowledged
    pending: dict[Any, list[tuple[int, list[asyncio.Future]]]] = {}
    position: dict[Any, int] = {}

    def lag() -> dict[tuple[str, int], int]:
        out = {}
        for tp in consumer.assignment():
            hw = consumer.highwater(tp)
            if hw is not None:
                out[(tp.topic, tp.partition)] = max(0, hw - acked.get(tp, position.get(tp, 0)))
        return out

    def settle() -> None:
        for tp, flights in pending.items():
            while flights and all(f.done() for f in flights[0][1]):
                next_offset, futures = flights.pop(0)
                for f in futures:
                    f.result()  # a failed send ends the pipe (bench only)
                acked[tp] = next_offset

    async def commit_timer() -> None:
        committed: dict[Any, int] = {}
        while True:
            await asyncio.sleep(job.worker.commit_interval_ms / 1000)
            settle()
            offsets = {tp: o for tp, o in acked.items() if committed.get(tp) != o}
            if offsets:
                await consumer.commit(offsets)
                committed.update(offsets)

    def count_out(n: int, _: asyncio.Future) -> None:
        metrics.count_out(sink, n)
        settle()  # the lag /metrics shows follows the acknowledgements at once

    metrics.set_lag_source(lag)
    server = MetricsServer(metrics, lambda: (True, {}), "127.0.0.1", 0).start()
    print(f"metrics on http://127.0.0.1:{server.port}/metrics", flush=True)
    sends = OpenBatches(producer)
    gc.collect()
    gc.freeze()  # as the worker does once running
    committer = asyncio.ensure_future(commit_timer())
    try:
        while True:
            fetched = await consumer.getmany(timeout_ms=1000)
            for _ in range(FETCHER_TURNS):  # let aiokafka's fetcher ask for these partitions again first
                await asyncio.sleep(0)
            unsent = 0  # records converted since the producer's last turn
            for tp, msgs in fetched.items():
                chain = chains.get(tp.partition)
                if chain is None:
                    chain = chains[tp.partition] = job.build_chain(catalog=job.new_catalog())
                metrics.count_in(tp.topic, len(msgs))
                batch = converter.convert(chain, tp.topic, tp.partition, msgs)
                converter.place(batch, tp.partition)
                futures = []
                for (topic, p), rows in batch.groups.items():
                    for fut in await sends.send(topic, p, rows):
                        futures.append(fut)
                    if topic == sink:
                        futures[-1].add_done_callback(partial(count_out, len(rows)))
                pending.setdefault(tp, []).append((batch.next_offset, futures))
                position[tp] = batch.next_offset
                unsent += len(msgs)
                if unsent >= MIN_STEP:  # as the worker groups a small fetch's partitions (batching.sends)
                    unsent = 0
                    await asyncio.sleep(0)  # let the producer send these while the next partition converts
            settle()
    finally:
        committer.cancel()
        server.stop()
        await consumer.stop()
        await producer.stop()


def raw_pipe_main(argv: Sequence[str]) -> int:
    """``python -m bench.latency --raw-pipe job.yaml``: :func:`run_raw_pipe` until SIGTERM."""
    import signal

    tune_allocator()

    async def main() -> None:
        task = asyncio.ensure_future(run_raw_pipe(argv[0]))
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        try:
            await task
        except asyncio.CancelledError:
            pass

    asyncio.run(main())
    return 0


class RawPipe(WorkerProcess):
    """:func:`run_raw_pipe` in its own process, driven like a worker."""

    def __init__(self, job: dict[str, Any], tmp: Path, env: dict[str, str] | None = None) -> None:
        import subprocess

        import yaml

        path = tmp / f"{job['id']}.yaml"
        path.write_text(yaml.safe_dump(job))
        self.source, self.sink = job["source"]["topics"][0], job["sink"]["topic"]
        self.log = tmp / f"{job['id']}.log"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.latency", "--raw-pipe", str(path)],
            cwd=ROOT,
            stdout=open(self.log, "wb"),  # noqa: SIM115 - lives as long as the process
            stderr=subprocess.STDOUT,
            env={**os.environ, **env} if env else None,
        )
        self.port = None


def probed_worker_main(argv: Sequence[str]) -> int:
    """``python -m bench.latency --probed-worker OUT -c job.yaml ...``: the worker CLI with the probe."""
    install_probe(argv[0])
    from cdc_smt.connector.cli import main as cli_main

    return cli_main(["worker", *argv[1:]])


class ProbedWorker(WorkerProcess):
    """This checkout's worker with :func:`install_probe`; :meth:`stages` reads and resets it."""

    def __init__(
        self, job: dict[str, Any], tmp: Path, env: dict[str, str] | None = None, python: str = sys.executable
    ) -> None:
        import subprocess

        import yaml

        path = tmp / f"{job['id']}.yaml"
        path.write_text(yaml.safe_dump(job))
        self.source, self.sink = job["source"]["topics"][0], job["sink"]["topic"]
        self.log = tmp / f"{job['id']}.log"
        self.out = tmp / f"{job['id']}.stages.json"
        self.proc = subprocess.Popen(
            [
                python,
                "-m",
                "bench.latency",
                "--probed-worker",
                str(self.out),
                "-c",
                str(path),
                "--log-format",
                "json",
            ],
            cwd=ROOT,
            stdout=open(self.log, "wb"),  # noqa: SIM115 - lives as long as the process
            stderr=subprocess.STDOUT,
            env={**os.environ, **env} if env else None,
        )
        self.port = None

    def stages(self, timeout: float = 5.0) -> dict[str, Any]:
        """The stage histograms since the last call."""
        import json
        import signal

        self.out.unlink(missing_ok=True)
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while not self.out.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return json.loads(self.out.read_text()) if self.out.exists() else {}


def stage_row(rate: int, stages: dict[str, Any]) -> str:
    """p50/p99 of each stage (ms since the scheduled send), the fetches with and without data, and
    the produce requests with the records they carried on average (a count a design sets: the load
    moves it far less than the latency)."""
    cells = [
        f"{stages[s]['p50']:.1f} / {stages[s]['p99']:.1f}" if stages.get(s, {}).get("count") else "-"
        for s in STAGES + HOPS
    ]
    f = stages.get("fetches", {})
    pauses = [
        f"{g['count']} / {g['p99']:.1f} / {g['max']:.1f}" if (g := stages.get(name, {})).get("count") else "0"
        for name in GC_PAUSES
    ]
    produce = stages.get("produce", {})
    requests = produce.get("requests", 0)
    per_request = f"{requests:,} / {produce.get('records', 0) / requests:.1f}" if requests else "0"
    return (
        f"| {rate:,} | "
        + " | ".join(cells)
        + f" | {f.get('data', 0):,} / {f.get('empty', 0):,} | {per_request} | "
        + " | ".join(pauses)
        + " |"
    )


def rounds_summary(variants: Sequence[Variant]) -> str:
    """Per variant and rate: p50 and p99 of each round, and their medians (the figure to compare),
    next to the median of the floor runs beside it, the median p99 counted from the generator's
    hand-over (its own lateness left out) and the median worker CPU per record."""
    from statistics import median

    lines = [
        "| path | offered msgs/s | p50 ms per round | p99 ms per round | median p50 / p99 "
        "| floor median p50 / p99 | median p99 from hand-over | median CPU µs/record | broker GC max ms per round |",
        "|---|---:|---|---|---:|---:|---:|---:|---|",
    ]
    for v in variants:
        by_rate: dict[int, list[tuple[Histogram, Histogram, RateRun, float]]] = {}
        gc_by_rate: dict[int, list[str]] = {}
        gcs = v.broker_gc or [[] for _ in v.curve]
        for (rate, _, floor, through), run, cpu_us, gc in zip(v.curve, v.generator, v.cpu_us, gcs, strict=True):
            by_rate.setdefault(rate, []).append((floor, through, run, cpu_us))
            gc_by_rate.setdefault(rate, []).append(f"{max(gc, default=0.0):.1f}" if v.broker_gc else "-")
        for rate, runs in by_rate.items():
            p50 = [t.percentile(0.5) for _, t, _, _ in runs]
            p99 = [t.percentile(0.99) for _, t, _, _ in runs]
            f50 = median(f.percentile(0.5) for f, _, _, _ in runs)
            f99 = median(f.percentile(0.99) for f, _, _, _ in runs)
            h99 = median(r.handed.percentile(0.99) for _, _, r, _ in runs)
            cpu = median(c for _, _, _, c in runs)
            lines.append(
                f"| {v.name} | {rate:,} | {', '.join(f'{x:.1f}' for x in p50)} | {', '.join(f'{x:.1f}' for x in p99)} "
                f"| {median(p50):.1f} / {median(p99):.1f} | {f50:.1f} / {f99:.1f} | {h99:.1f} | {cpu:.1f} "
                f"| {', '.join(gc_by_rate[rate])} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--probed-worker"]:
        return probed_worker_main(argv[1:])
    if argv[:1] == ["--raw-pipe"]:
        return raw_pipe_main(argv[1:])
    print(f"malloc tuning: {'on' if tune_allocator() else 'off'}")
    parser = argparse.ArgumentParser(prog="python -m bench.latency", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rates",
        default="1000,10000,50%,90%",
        help="offered rates, msgs/s or %% of the measured max (default 1000,10000,50%%,90%%)",
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each fixed-rate run (default 10)")
    parser.add_argument(
        "--count", type=int, default=300_000, help="backlog for the max-throughput run (default 300000)"
    )
    parser.add_argument("--partitions", type=int, default=4, help="source partitions (default 4)")
    parser.add_argument("--batch-size", type=int, help="worker.batch_size (default: the worker's default)")
    parser.add_argument("--fetch-wait-ms", type=int, help="consumer.fetch_max_wait_ms (default: the worker's default)")
    parser.add_argument("--linger-ms", type=int, help="producer.linger_ms (default: the worker's default)")
    parser.add_argument(
        "--baseline",
        type=Path,
        action="append",
        default=[],
        help="also run the worker of this checkout (its .venv), e.g. /work/main, in the same run (repeatable)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run every rate this many times, each round in another order of the variants (default 1)",
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE[,...]",
        help="also run this checkout's worker with these job settings (YAML values), e.g. worker.batch_size=500",
    )
    parser.add_argument(
        "--no-pipe",
        dest="pipe",
        action="store_false",
        help="leave out the raw pipe (aiokafka consumer -> the worker's conversion -> aiokafka producer, no Faust)",
    )
    parser.add_argument(
        "--stages",
        action="store_true",
        help="time each stage inside the workers, variants and baselines too (a probe patched in; a little overhead)",
    )
    parser.add_argument(
        "--generator-waits",
        action="store_true",
        help="the earlier load generator: each tick's batch waits for its partition's previous one to be taken",
    )
    parser.add_argument("--plot", type=Path, help="write the latency curve to this PNG (needs matplotlib)")
    parser.add_argument(
        "--bootstrap", help="use this cluster instead of an embedded broker (topics bench.* are reused)"
    )
    parser.add_argument(
        "--apache-kafka",
        action="store_true",
        help="start Apache Kafka (connector/apache_kafka.py) instead of the embedded broker",
    )
    parser.add_argument(
        "--broker-jvm",
        choices=("kafka", "tests"),
        default="kafka",
        help="with --apache-kafka: the broker's JVM as Kafka's scripts start it (1 GiB heap, G1, 20 ms pause goal:"
        " the default) or as the tests do (small heap, serial collector)",
    )
    args = parser.parse_args(argv)

    from cdc_smt.connector.broker import EmbeddedBroker

    print(
        f"Python {platform.python_version()}; {cpu_model()}; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    messages = canal_messages(args.count)
    values = messages[:20_000]
    records = keyed(messages)
    del messages
    variants = [Variant("worker", sys.executable, ROOT, IN, OUT)]
    if args.baseline:
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"  # run the other checkout without writing into it
    for n, checkout in enumerate(args.baseline):
        name, suffix = ("baseline", ".baseline") if n == 0 else (f"baseline{n + 1}", f".baseline{n + 1}")
        variants.append(Variant(name, str(checkout / ".venv/bin/python"), checkout, IN + suffix, OUT + suffix))
        print(f"{name}: {checkout}", flush=True)
    for n, spec in enumerate(args.variant, 1):
        settings, env = parse_settings(spec)
        variants.append(Variant(spec, sys.executable, ROOT, f"{IN}.v{n}", f"{OUT}.v{n}", settings=settings, env=env))
    if args.pipe:
        variants.append(Variant("pipe", sys.executable, ROOT, IN + ".pipe", OUT + ".pipe"))
    server = None
    if args.apache_kafka and not args.bootstrap:
        from cdc_smt.connector.apache_kafka import KAFKA_SCRIPT_JVM, TEST_JVM, ApacheKafka

        jvm = KAFKA_SCRIPT_JVM if args.broker_jvm == "kafka" else TEST_JVM
        server = ApacheKafka(jvm=jvm, gc_log=True).start()
        print(f"Apache Kafka {server.bootstrap}: JVM {' '.join(jvm)}", flush=True)
    broker_gc = BrokerGc(server.gc_log_path if server is not None else None)
    broker = None if args.bootstrap or server is not None else EmbeddedBroker().start()
    bootstrap = args.bootstrap or (server.bootstrap if server is not None else broker.bootstrap)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            workers: dict[str, WorkerProcess] = {}
            try:
                for v in variants:  # one at a time: each maximum is measured with the other worker idle
                    asyncio.run(produce_backlog(bootstrap, v.source, args.partitions, records, v.sink))
                    doc = job_doc(bootstrap, v.source, v.sink, args.partitions, args, v.settings)
                    # every worker, --variant and --baseline too (another checkout's venv runs this
                    # checkout's probe around that checkout's worker)
                    probed = args.stages and v.name != "pipe"
                    if v.name == "pipe":
                        worker: WorkerProcess = RawPipe(doc, Path(tmp), v.env)
                    elif probed:
                        worker = ProbedWorker(doc, Path(tmp), v.env, v.python)
                    else:
                        worker = WorkerProcess(doc, Path(tmp), v.python, v.cwd, v.env)
                    workers[v.name] = worker
                    worker.wait_metrics()
                    seconds = worker_throughput(worker, args.count, args.count, timeout=max(600.0, args.count / 500))
                    settled = time.perf_counter()
                    wait_caught_up(worker, args.count)
                    seconds += time.perf_counter() - settled  # the counters may run ahead of the lag
                    v.max_rate = args.count / seconds
                    v.produced = args.count
                    print(
                        f"{v.name}: max throughput (backlog of {args.count:,}) {v.max_rate:,.0f} msgs/s "
                        f"({seconds:.1f}s); load {os.getloadavg()[0]:.1f}",
                        flush=True,
                    )
                # Every variant is offered the same rates (percentages of the first one's maximum),
                # interleaved: a rate's runs of all variants follow each other, under the same load,
                # and each round starts with another variant (running first or last moves figures).
                rates = parse_rates(args.rates, variants[0].max_rate)
                for round_ in range(args.rounds):
                    order = variants[round_ % len(variants) :] + variants[: round_ % len(variants)]
                    for rate, v in ((rate, v) for rate in rates for v in order):
                        if args.rounds > 1 and v is order[0]:
                            print(f"round {round_ + 1} at {rate:,} msgs/s: {', '.join(o.name for o in order)}")
                        worker = workers[v.name]
                        wait_caught_up(worker, v.produced)
                        if isinstance(worker, ProbedWorker):
                            worker.stages()  # each rate's stage histograms start afresh
                        join = not args.generator_waits
                        floor_run = asyncio.run(
                            fixed_rate(bootstrap, FLOOR, FLOOR, args.partitions, rate, args.seconds, values, join=join)
                        )
                        floor, f_rate = floor_run.hist, floor_run.achieved
                        print(
                            row("floor (raw client)", rate, f_rate, floor),
                            floor_run.generator(),
                            gc_text(broker_gc.since_last()) if server is not None else "",
                            flush=True,
                        )
                        cpu, switches = cpu_seconds(worker.proc.pid), context_switches(worker.proc.pid)
                        run = asyncio.run(
                            fixed_rate(
                                bootstrap, v.source, v.sink, args.partitions, rate, args.seconds, values, join=join
                            )
                        )
                        through, w_rate = run.hist, run.achieved
                        v.produced += run.acked
                        cpu_us = (cpu_seconds(worker.proc.pid) - cpu) / max(1, through.count) * 1e6
                        vol, invol = (
                            (after - before) / max(1, through.count)
                            for after, before in zip(context_switches(worker.proc.pid), switches, strict=True)
                        )
                        v.cpu_us.append(cpu_us)
                        v.generator.append(run)
                        v.broker_gc.append(broker_gc.since_last())
                        print(
                            row(v.name, rate, w_rate, through),
                            f"load {os.getloadavg()[0]:.1f}; worker CPU {cpu_us:.1f} µs/record;",
                            f"context switches/record {vol:.2f} voluntary, {invol:.2f} involuntary;",
                            run.generator(),
                            gc_text(v.broker_gc[-1]) if server is not None else "",
                            flush=True,
                        )
                        v.curve.append((rate, w_rate, floor, through))
                        if isinstance(worker, ProbedWorker):
                            v.stages.append(stage_row(rate, worker.stages()))
            finally:
                for name, worker in workers.items():
                    code = worker.stop()
                    if code != 0:
                        tail = worker.log.read_text(errors="replace")[-1500:]
                        print(f"{name}: worker exit code {code}; log tail:\n{tail}")
    finally:
        if broker is not None:
            broker.stop()
        if server is not None:
            server.stop()

    print()
    for v in variants:
        print(
            f"{v.name}: max throughput {v.max_rate:,.0f} msgs/s "
            f"(backlog of {args.count:,}, {args.partitions} partitions)"
        )
    print()
    print("| path | offered msgs/s | sent msgs/s | records | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for v in variants:
        for rate, sent, floor, through in v.curve:
            print(row(f"floor (next to {v.name})", rate, sent, floor))
            print(row(v.name, rate, sent, through))
    print()
    for v in variants:
        for (rate, _, floor, through), cpu_us, gen in zip(v.curve, v.cpu_us, v.generator, strict=True):
            w99, f99 = through.percentile(0.99), floor.percentile(0.99)
            print(
                f"{v.name} at {rate:>7,} msgs/s: p99 {w99:.1f} ms = floor p99 {f99:.1f} ms + {w99 - f99:.1f} ms; "
                f"worker CPU {cpu_us:.1f} µs/record; {gen.generator()}"
            )
    pipe = next((v for v in variants if v.name == "pipe"), None)
    if pipe is not None:
        print()
        for v in variants:
            if v is pipe:
                continue
            for (rate, _, _, through), (_, _, _, piped) in zip(v.curve, pipe.curve, strict=True):
                w99, p99 = through.percentile(0.99), piped.percentile(0.99)
                print(
                    f"{v.name} at {rate:>7,} msgs/s: p99 {w99:.1f} ms = raw pipe p99 {p99:.1f} ms "
                    f"+ {w99 - p99:.1f} ms; p50 {through.percentile(0.5):.1f} vs {piped.percentile(0.5):.1f}"
                )
    if args.rounds > 1:
        print()
        print(rounds_summary(variants))
    for v in variants:
        if v.stages:
            print()
            print(f"{v.name} stages, p50 / p99 ms since the scheduled send (first record of each partition batch):")
            print("(ask, wait, hand per fetch: the hop to the consumer thread, its wait there, the way back)")
            print("(gcN: the garbage collector's generation-N collections: count / p99 ms / max ms)")
            print(
                "| offered msgs/s | "
                + " | ".join(STAGES + HOPS)
                + " | fetches with data / empty | produce requests / records each | "
                + " | ".join(GC_PAUSES)
                + " |"
            )
            print("|---:|" + "---:|" * (len(STAGES) + len(HOPS) + 2 + len(GC_PAUSES)))
            print("\n".join(v.stages))
    if args.plot:
        plot(args.plot, [(r, f, w) for r, _, f, w in variants[0].curve])
    return 0


if __name__ == "__main__":
    sys.exit(main())
