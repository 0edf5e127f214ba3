"""The worker's throughput and latency, against its two ceilings, in one run.

    .venv/bin/python -m bench.worker [--count 1000000] [--partitions 4]

Generates ``--count`` Canal JSON row changes of realistic size (~900 bytes,
eleven columns; the generator of ``bench.codec``), produces them keyed by
primary key to a topic of ``--partitions`` partitions on the embedded broker
(or ``--bootstrap``), then measures:

(a) **worker**: ``cdc-smt worker`` (a separate process, as deployed) converting
    canal-json -> debezium-json broker to broker; from its first consumed
    record to its last acknowledged output record, read from its own metrics;
(b) **codec ceiling**: the same conversion in this process with no Kafka: the
    worker's own :class:`~connector.worker.pipeline.Converter` (decode, chain,
    encode, output partitioning) over the same records, batch by batch;
(c) **broker ceiling**: a raw aiokafka pipe over the same input with no
    transformation: consume, and produce with ``create_batch``/``send_batch``;

and then the end-to-end latency (p50/p99, source record timestamp to the
moment a consumer of the output topic receives it) while the worker runs at a
fixed moderate rate (``--latency-rate``, default a quarter of (a)).

``--guarantee both --rounds 2`` (with ``--apache-kafka``: the embedded broker
has no transactions) runs (a) and its latency once per guarantee and round,
at_least_once then exactly_once back to back, each worker in a fresh consumer
group over the same input; exactly_once's latency is read with a
read_committed consumer (an output counts once its transaction committed).
The runs' transactional ids are initialized once before any run is timed (the
cluster's first transactions create and load ``__transaction_state``).
Each latency run adds its records to the input, so later runs convert a few
more records after the measured ones (the same for both guarantees).

``--baseline DIR`` runs another checkout's worker (its ``.venv``; e.g. ``main``
before a change) next to this one in every round (which runs first alternates), over the same input, and
``--rounds N`` measures (c) again at the start of every round: the ratios (a)/(c)
of the two codes come from the same run and the same round.

Targets (issue 5): (a) >= 50,000 msgs/s for one worker and (a) >= 0.7 x (b);
(issue 14) exactly_once >= 0.8 x at_least_once throughput; (issue 13) (a) >= 0.75 x (c).
Everything shares the machine: on 2 cores the broker, the worker's consumer
thread and its conversion compete, and so does anything else running.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import namedtuple
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from bench.codec import DEBEZIUM_TYPED_NO_SCHEMA, canal_messages, cpu_model
from cdc_smt.connector import kafka as K
from cdc_smt.connector.jobconfig import load_job
from cdc_smt.connector.tuning import tune_allocator
from cdc_smt.connector.worker.pipeline import Converter
from cdc_smt.transforms.model import Record

ROOT = Path(__file__).resolve().parents[1]
IN, OUT, RAW = "bench.canal", "bench.debezium", "bench.raw"
Msg = namedtuple("Msg", "topic partition offset timestamp key value headers")


def job_doc(
    bootstrap: str,
    partitions: int,
    batch_size: int,
    fetch_wait_ms: int = 100,
    processes: int = 1,
    guarantee: str = "at_least_once",
    job_id: str = "bench-canal-to-debezium",
) -> dict[str, Any]:
    return {
        "id": job_id,
        "kafka": {"bootstrap_servers": bootstrap},
        "source": {"topics": [IN], "format": "canal-json"},
        "sink": {"topic": OUT, "format": "debezium-json", "options": dict(DEBEZIUM_TYPED_NO_SCHEMA)},
        "errors": {"tolerance": "all", "dead_letter_topic": "bench.dlq"},
        "producer": {"acks": "all", "linger_ms": 5},
        "consumer": {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000, "fetch_max_wait_ms": fetch_wait_ms},
        "worker": {
            "batch_size": batch_size,
            "commit_interval_ms": 1000,
            "metrics_port": 0,
            "create_topics": {"partitions": partitions},
            "processes": processes,
            "processing_guarantee": guarantee,
        },
    }


# -- input -----------------------------------------------------------------------------------
def keyed(messages: list[bytes]) -> list[Record]:
    """Records keyed by primary key, as Canal's producer with a per-row partition hash writes them."""
    return [Record(value=v, key=b'{"id":%d}' % (i + 1)) for i, v in enumerate(messages)]


async def produce_input(bootstrap: str, records: list[Record], partitions: int) -> None:
    await K.create_topics(bootstrap, {IN: partitions, OUT: partitions, RAW: partitions, "bench.dlq": 1})
    step = 50_000
    for start in range(0, len(records), step):
        await K.produce_records(bootstrap, IN, records[start : start + step])


# -- (b) the codec ceiling -------------------------------------------------------------------
def codec_ceiling(records: list[Record], partitions: int, batch_size: int, job: Any) -> tuple[float, int]:
    """Seconds to convert every record with the worker's Converter, per partition, in batches."""
    by_partition: dict[int, list[Msg]] = {p: [] for p in range(partitions)}
    now = int(time.time() * 1000)
    for r in records:
        p = K.partition_for(r.key, partitions)
        by_partition[p].append(Msg(IN, p, len(by_partition[p]), now, r.key, r.value, ()))
    converter = Converter(job, {OUT: partitions, "bench.dlq": 1})
    gc.collect()
    out = 0
    started = time.perf_counter()
    for p, msgs in by_partition.items():
        chain = job.build_chain()
        for start in range(0, len(msgs), batch_size):
            batch = converter.convert(chain, IN, p, msgs[start : start + batch_size])
            converter.place(batch, p)
            out += batch.n_out
    return time.perf_counter() - started, out


# -- (c) the broker ceiling ------------------------------------------------------------------
async def raw_pipe(bootstrap: str, count: int, partitions: int, batch_size: int) -> tuple[float, float]:
    """Consume IN and produce every record unchanged to RAW with the batch API; seconds for all
    acks, and this process's CPU seconds over them."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, max_partition_fetch_bytes=8 * 1024 * 1024
    )
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", max_batch_size=1_000_000, linger_ms=5)
    await consumer.start()
    await producer.start()
    try:
        tps = [TopicPartition(IN, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        futures: list[asyncio.Future] = []
        seen = 0
        started = time.perf_counter()
        cpu = time.process_time()
        while seen < count:
            fetched = await consumer.getmany(timeout_ms=1000, max_records=batch_size)
            for tp, msgs in fetched.items():
                batch = producer.create_batch()
                for m in msgs:
                    if batch.append(key=m.key, value=m.value, timestamp=m.timestamp, headers=[]) is None:
                        futures.append(await producer.send_batch(batch, RAW, partition=tp.partition))
                        batch = producer.create_batch()
                        batch.append(key=m.key, value=m.value, timestamp=m.timestamp, headers=[])
                futures.append(await producer.send_batch(batch, RAW, partition=tp.partition))
                seen += len(msgs)
            done = [f for f in futures if f.done()]
            for f in done:
                f.result()
            futures = [f for f in futures if not f.done()]
        await asyncio.gather(*futures)
        return time.perf_counter() - started, time.process_time() - cpu
    finally:
        await producer.stop()
        await consumer.stop()


# -- (a) the worker ----------------------------------------------------------------------------
class WorkerProcess:
    def __init__(
        self,
        job: dict[str, Any],
        tmp: Path,
        python: str = sys.executable,
        cwd: Path = ROOT,
        env: dict[str, str] | None = None,
    ) -> None:
        """``python`` (and ``cwd``): another checkout's interpreter runs that checkout's worker;
        ``env``: variables set for its process only."""
        path = tmp / f"{job['id']}.yaml"
        path.write_text(yaml.safe_dump(job))
        self.source, self.sink = job["source"]["topics"][0], job["sink"]["topic"]
        self.log = tmp / f"{job['id']}.log"
        self.proc = subprocess.Popen(
            [python, "-m", "cdc_smt.connector.cli", "worker", "-c", str(path), "--log-format", "json"],
            cwd=cwd,
            stdout=open(self.log, "wb"),  # noqa: SIM115 - lives as long as the process
            stderr=subprocess.STDOUT,
            env={**os.environ, **env} if env else None,
        )
        self.port: int | None = None

    def wait_metrics(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited: {self.log.read_text()[-2000:]}")
            m = re.search(r"metrics on http://[^:]+:(\d+)/metrics", self.log.read_text(errors="replace"))
            if m:
                self.port = int(m.group(1))
                return
            time.sleep(0.1)
        raise TimeoutError("the worker did not start")

    def cpu_seconds(self) -> float:
        """The worker process's CPU time so far (all its threads), from /proc."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def counters(self) -> tuple[float, float]:
        """(records in, records out to the sink topic), from /metrics."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as resp:
            text = resp.read().decode()

        def value(pattern: str) -> float:
            m = re.search(pattern + r" ([0-9.e+]+)", text)
            return float(m.group(1)) if m else 0.0

        return value(rf'cdc_smt_records_in_total\{{topic="{re.escape(self.source)}"\}}'), value(
            rf'cdc_smt_records_out_total\{{topic="{re.escape(self.sink)}"\}}'
        )

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait(10)


def worker_throughput(worker: WorkerProcess, count: int, expected_out: int, timeout: float) -> float:
    """Seconds from the worker's first consumed record to its last acknowledged output."""
    return worker_seconds(worker, count, expected_out, timeout)[0]


#: Seconds between reads of the worker's /metrics: often at the start and near the end (they
#: time the run), rarely in between (each read costs the measured worker ~1-2 ms of CPU).
POLL_FAST, POLL_SLOW = 0.05, 0.5


def worker_seconds(worker: WorkerProcess, count: int, expected_out: int, timeout: float) -> tuple[float, float]:
    """:func:`worker_throughput`'s seconds, and the worker's CPU seconds over them."""
    deadline = time.monotonic() + timeout
    started = None
    cpu = 0.0
    while time.monotonic() < deadline:
        n_in, n_out = worker.counters()
        now = time.perf_counter()
        if started is None and n_in > 0:
            started, cpu = now, worker.cpu_seconds()
        if n_out >= expected_out:
            return now - (started or now), worker.cpu_seconds() - cpu
        if worker.proc.poll() is not None:
            raise RuntimeError("worker exited during the run")
        time.sleep(next_poll(started, now, n_out, expected_out))
    raise TimeoutError(f"worker did not finish {count} records in {timeout:.0f}s")


def next_poll(started: float | None, now: float, done: float, total: int) -> float:
    """Half the time the rest of the run should take at its rate so far, within
    [POLL_FAST, POLL_SLOW]: the end is still seen within POLL_FAST."""
    if started is None or done <= 0 or now <= started:
        return POLL_FAST
    left = (total - done) / (done / (now - started))
    return min(POLL_SLOW, max(POLL_FAST, left / 2))


async def latency(
    bootstrap: str, rate: int, seconds: float, partitions: int, isolation_level: str = "read_uncommitted"
) -> list[float]:
    """Produce at ``rate``/s for ``seconds``; latencies (ms) of the outputs as a consumer sees them
    (``read_committed`` for exactly-once: an output counts once its transaction committed)."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    messages = canal_messages(int(rate * seconds), seed=11)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=20, isolation_level=isolation_level
    )
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0)
    await consumer.start()
    await producer.start()
    tps = [TopicPartition(OUT, p) for p in range(partitions)]
    consumer.assign(tps)
    await consumer.seek_to_end(*tps)
    for tp in tps:
        await consumer.position(tp)
    lat: list[float] = []
    since = time.time() * 1000  # outputs of earlier runs are not part of this one

    async def consume() -> None:
        while len(lat) < len(messages):
            fetched = await consumer.getmany(timeout_ms=500)
            now = time.time() * 1000
            for msgs in fetched.values():
                lat.extend(now - m.timestamp for m in msgs if m.value is not None and m.timestamp >= since)

    reader = asyncio.ensure_future(consume())
    tick = 0.01
    per_tick = max(1, int(rate * tick))
    started = time.monotonic()
    for i in range(0, len(messages), per_tick):
        for j, value in enumerate(messages[i : i + per_tick]):
            await producer.send(IN, value, key=b'{"id":%d}' % (10_000_000 + i + j))
        ahead = started + (i + per_tick) / rate - time.monotonic()
        if ahead > 0:
            await asyncio.sleep(ahead)
    await producer.flush()
    try:
        await asyncio.wait_for(reader, timeout=60)
    except TimeoutError:
        reader.cancel()
    await producer.stop()
    await consumer.stop()
    return lat


def percentile(values: Sequence[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else float("nan")


# -- main ----------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    # The hosts run with this allocator tuning (connector/tuning.py); so do the benches.
    print(f"malloc tuning: {'on' if tune_allocator() else 'off'}")
    parser = argparse.ArgumentParser(prog="python -m bench.worker", description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1_000_000, help="messages (default 1000000)")
    parser.add_argument("--partitions", type=int, default=4, help="source partitions (default 4)")
    parser.add_argument(
        "--batch-size", type=int, default=2000, help="worker.batch_size (default 2000, the worker's default)"
    )
    parser.add_argument(
        "--latency-rate", type=int, default=0, help="msgs/s for the latency run (default: a quarter of (a))"
    )
    parser.add_argument("--latency-seconds", type=float, default=10.0, help="length of the latency run (default 10)")
    parser.add_argument("--processes", type=int, default=1, help="the worker's worker.processes (default 1)")
    parser.add_argument(
        "--fetch-wait-ms", type=int, default=100, help="the worker's consumer.fetch_max_wait_ms (default 100)"
    )
    parser.add_argument(
        "--bootstrap", help="use this cluster instead of an embedded broker (topics bench.* are reused)"
    )
    parser.add_argument(
        "--apache-kafka",
        action="store_true",
        help="start Apache Kafka (connector/apache_kafka.py) instead of the embedded broker",
    )
    parser.add_argument(
        "--guarantee",
        choices=("at_least_once", "exactly_once", "both"),
        default="at_least_once",
        help="the worker's processing_guarantee; both: one run of each per round, back to back (needs transactions)",
    )
    parser.add_argument("--rounds", type=int, default=1, help="worker runs per guarantee (default 1)")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="another checkout (with its .venv): its worker runs after this one's in every round, same input",
    )
    parser.add_argument(
        "--transaction-interval-ms", type=int, default=None, help="exactly_once: worker.transaction_interval_ms"
    )
    args = parser.parse_args(argv)

    from cdc_smt.connector.broker import EmbeddedBroker

    print(
        f"Python {platform.python_version()}; {cpu_model()}; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    t0 = time.perf_counter()
    messages = canal_messages(args.count)
    avg = sum(map(len, messages)) / len(messages)
    records = keyed(messages)
    del messages
    print(
        f"generated {args.count:,} Canal JSON messages, {avg:.0f} bytes on average ({time.perf_counter() - t0:.0f}s)",
        flush=True,
    )

    server = None
    if args.apache_kafka and not args.bootstrap:
        from cdc_smt.connector.apache_kafka import ApacheKafka

        server = ApacheKafka().start()
    broker = None if args.bootstrap or server is not None else EmbeddedBroker().start()
    bootstrap = args.bootstrap or (server.bootstrap if server is not None else broker.bootstrap)
    results: dict[str, float] = {}
    runs: list[dict[str, Any]] = []
    try:
        t0 = time.perf_counter()
        asyncio.run(produce_input(bootstrap, records, args.partitions))
        print(
            f"produced them to {IN} ({args.partitions} partitions) on {bootstrap} ({time.perf_counter() - t0:.0f}s)",
            flush=True,
        )
        doc = job_doc(bootstrap, args.partitions, args.batch_size, args.fetch_wait_ms, args.processes)
        job = load_job(doc)

        seconds, n_out = codec_ceiling(records, args.partitions, args.batch_size, job)
        results["b"] = args.count / seconds
        print(
            f"(b) codec ceiling, in-process, no Kafka:   {results['b']:>10,.0f} msgs/s  "
            f"({seconds:.1f}s, {n_out:,} output records)",
            flush=True,
        )
        del records
        gc.collect()

        guarantees = ["at_least_once", "exactly_once"] if args.guarantee == "both" else [args.guarantee]
        codes = ["this"] + (["baseline"] if args.baseline else [])
        # the two codes alternate which runs first, round by round
        plan = [
            (g, r, code) for r in range(1, args.rounds + 1) for g in guarantees for code in codes[:: 1 if r % 2 else -1]
        ]
        input_total = args.count
        if "exactly_once" in guarantees:
            job_ids = [
                f"bench-exactly-once-{r}{'-baseline' if code == 'baseline' else ''}-{os.getpid()}"
                for r in range(1, args.rounds + 1)
                for code in codes
            ]
            seconds = asyncio.run(warm_up_transactions(bootstrap, job_ids, args.partitions))
            print(f"transaction coordinator warmed up for the runs' transactional ids ({seconds:.1f}s)", flush=True)
        ceilings: dict[int, float] = {}
        pipe_cpu: dict[int, float] = {}  # CPU µs a message
        with tempfile.TemporaryDirectory() as tmp:
            for guarantee, round_no, code in plan:
                if round_no not in ceilings:
                    seconds, cpu = asyncio.run(raw_pipe(bootstrap, args.count, args.partitions, args.batch_size))
                    ceilings[round_no] = args.count / seconds
                    pipe_cpu[round_no] = cpu / args.count * 1e6
                    results.setdefault("c", ceilings[round_no])
                    print(
                        f"(c) broker ceiling, raw aiokafka pipe:     {ceilings[round_no]:>10,.0f} msgs/s  "
                        f"({seconds:.1f}s, {pipe_cpu[round_no]:.1f} CPU-µs a message; round {round_no})",
                        flush=True,
                    )
                # A fresh consumer group per run: each reads the whole input from the start.
                run_doc = job_doc(
                    bootstrap,
                    args.partitions,
                    args.batch_size,
                    args.fetch_wait_ms,
                    args.processes,
                    guarantee=guarantee,
                    job_id=f"bench-{guarantee.replace('_', '-')}-{round_no}"
                    f"{'-baseline' if code == 'baseline' else ''}-{os.getpid()}",
                )
                if args.transaction_interval_ms is not None:
                    run_doc["worker"]["transaction_interval_ms"] = args.transaction_interval_ms
                rate = args.latency_rate or int(results.get("rate", 0))
                run = run_worker(run_doc, Path(tmp), args, bootstrap, n_out, input_total, rate, code)
                input_total += run["latency_records"]
                runs.append(
                    {
                        "guarantee": guarantee,
                        "round": round_no,
                        "code": code,
                        "c": ceilings[round_no],
                        "c_cpu_us": pipe_cpu[round_no],
                        **run,
                    }
                )
                if code == "baseline":
                    continue
                results.setdefault("a", run["a"])
                results.setdefault("rate", run["rate"])
                results.setdefault("p50", run["p50"])
                results.setdefault("p99", run["p99"])
    finally:
        if broker is not None:
            broker.stop()
        if server is not None:
            server.close()

    a, b, c = results["a"], results["b"], results["c"]
    print()
    print("| measure | msgs/s | vs (b) codec | vs (c) broker |")
    print("|---|---:|---:|---:|")
    procs = f", {args.processes} conversion processes" if args.processes > 1 else ""
    print(
        f"| (a) worker{procs}, canal-json -> debezium-json, broker to broker | {a:,.0f} | {a / b:.2f} | {a / c:.2f} |"
    )
    print(f"| (b) same conversion in-process, no Kafka | {b:,.0f} | 1.00 | {b / c:.2f} |")
    print(f"| (c) raw aiokafka batch pipe, no conversion | {c:,.0f} | | 1.00 |")
    print()
    print(f"end-to-end latency at {results['rate']:,} msgs/s: p50 {results['p50']:.0f} ms, p99 {results['p99']:.0f} ms")
    print(
        f"targets: (a) >= 50,000 msgs/s: {'met' if a >= 50_000 else 'NOT met'}; "
        f"(a)/(b) >= 0.70: {'met' if a / b >= 0.7 else 'NOT met'} ({a / b:.2f})"
    )
    if args.baseline or args.rounds > 1:
        print_against_the_pipe(runs, args.baseline)
    if len(guarantees) > 1:
        print_guarantees([r for r in runs if r["code"] == "this"])
    print(json.dumps({k: round(v, 1) for k, v in results.items()}))
    return 0


def run_worker(
    doc: dict[str, Any],
    tmp: Path,
    args: argparse.Namespace,
    bootstrap: str,
    n_out: int,
    input_total: int,
    rate: int,
    code: str = "this",
) -> dict[str, Any]:
    """One worker process (``code``: this checkout's or ``--baseline``'s): its throughput over
    the input, then its latency at ``rate`` (0: a quarter of it)."""
    guarantee = doc["worker"]["processing_guarantee"]
    if code == "baseline":
        base = args.baseline.resolve()
        worker = WorkerProcess(doc, tmp, python=str(base / ".venv" / "bin" / "python"), cwd=base)
        guarantee = f"{guarantee}, baseline {base}"
    else:
        worker = WorkerProcess(doc, tmp)
    try:
        worker.wait_metrics()
        seconds, cpu = worker_seconds(worker, args.count, n_out, timeout=max(600.0, args.count / 500))
        a = args.count / seconds
        cpu_us = cpu / args.count * 1e6
        print(
            f"(a) worker, broker to broker, {guarantee}: {a:>10,.0f} msgs/s  "
            f"({seconds:.1f}s, {cpu_us:.1f} CPU-µs a message)",
            flush=True,
        )
        wait_consumed(worker, input_total)  # inputs of earlier latency runs too: start the latency run caught up
        rate = rate or max(100, int(a / 4 // 100 * 100))
        isolation = "read_committed" if guarantee == "exactly_once" else "read_uncommitted"
        lat = asyncio.run(latency(bootstrap, rate, args.latency_seconds, args.partitions, isolation))
        p50, p99 = percentile(lat, 0.50), percentile(lat, 0.99)
        print(
            f"latency at {rate:,} msgs/s for {args.latency_seconds:.0f}s ({guarantee}, {isolation} reader): "
            f"p50 {p50:.0f} ms, p99 {p99:.0f} ms ({len(lat):,} records)",
            flush=True,
        )
        return {
            "a": a,
            "cpu_us": cpu_us,
            "rate": rate,
            "p50": p50,
            "p99": p99,
            "latency_records": int(rate * args.latency_seconds),
        }
    finally:
        code = worker.stop()
        if code != 0:
            print(f"worker exit code {code}; log tail:\n{worker.log.read_text(errors='replace')[-1500:]}")


async def warm_up_transactions(bootstrap: str, job_ids: list[str], partitions: int) -> float:
    """Initialize the transactional ids the exactly_once runs will use, once, before any is timed.

    A cluster's first transactions create ``__transaction_state`` (50 partitions) and load
    the coordinator partitions the ids hash to: a one-time cost of the cluster, not of a
    worker run, that would otherwise land on whichever run comes first.
    """
    from cdc_smt.connector.jobconfig import ProducerSettings
    from cdc_smt.connector.kafka import transactions as T

    started = time.perf_counter()
    settings = K.KafkaSettings((bootstrap,))
    for job_id in job_ids:
        for p in range(partitions):
            txn_id = T.transactional_id("cdc-smt", job_id, IN, p)
            producer = T.new_transactional_producer(settings, ProducerSettings(), txn_id, transaction_timeout_ms=60_000)
            await producer.start()
            await producer.stop()
    return time.perf_counter() - started


def wait_consumed(worker: WorkerProcess, total: int, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while worker.counters()[0] < total:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the worker did not consume all {total:,} input records in {timeout:.0f}s")
        time.sleep(0.1)


def print_against_the_pipe(runs: list[dict[str, Any]], baseline: Path | None) -> None:
    """(a)/(c) per run, against the raw pipe measured at the start of the same round."""
    print()
    print("| round | worker | guarantee | (a) msgs/s | (c) msgs/s | (a)/(c) | CPU-µs/msg (a) | (c) |")
    print("|---:|---|---|---:|---:|---:|---:|---:|")
    for r in runs:
        who = f"baseline ({baseline})" if r["code"] == "baseline" else "this checkout"
        print(
            f"| {r['round']} | {who} | {r['guarantee']} | {r['a']:,.0f} | {r['c']:,.0f} | {r['a'] / r['c']:.2f} "
            f"| {r['cpu_us']:.1f} | {r['c_cpu_us']:.1f} |"
        )
    ours = [r["a"] / r["c"] for r in runs if r["code"] == "this" and r["guarantee"] == "at_least_once"]
    if ours:
        verdict = "met" if min(ours) >= 0.75 else "NOT met"
        print(f"target (a) >= 0.75 x (c): {verdict} ({', '.join(f'{x:.2f}' for x in ours)})")


def print_guarantees(runs: list[dict[str, Any]]) -> None:
    """exactly_once against at_least_once of the same round (run back to back)."""
    print()
    print("| round | guarantee | msgs/s | vs at_least_once | p50 ms | p99 ms |")
    print("|---:|---|---:|---:|---:|---:|")
    base = {r["round"]: r for r in runs if r["guarantee"] == "at_least_once"}
    ratios = []
    for r in runs:
        ref = base.get(r["round"])
        ratio = r["a"] / ref["a"] if ref else float("nan")
        if r["guarantee"] == "exactly_once" and ref:
            ratios.append(ratio)
        print(f"| {r['round']} | {r['guarantee']} | {r['a']:,.0f} | {ratio:.2f} | {r['p50']:.0f} | {r['p99']:.0f} |")
    if ratios:
        verdict = "met" if min(ratios) >= 0.8 else "NOT met"
        figures = ", ".join(f"{x:.2f}" for x in ratios)
        print(f"target exactly_once >= 0.80 x at_least_once throughput: {verdict} ({figures})")


if __name__ == "__main__":
    sys.exit(main())
