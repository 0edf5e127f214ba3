"""cdc-smt against what a user would run instead, on one Apache Kafka broker, in one run.

    .venv/bin/python -m bench.peer [--messages 1000000] [--file-messages 200000]

The same ``--messages`` Canal JSON row changes (the ~900-byte, eleven-column
orders of ``bench.codec``; 60 % inserts, 30 % updates, 10 % deletes) are
produced once to a one-partition topic of an Apache Kafka broker
(:mod:`connector.apache_kafka`), then converted to Debezium JSON, topic to
topic, by each peer in turn, each alone on the machine:

(a) **cdc-smt worker** (``canal-json -> debezium-json``, no schema; the native
    core when built), a separate process as deployed;
(b) **Flink SQL**: ``INSERT INTO dbz SELECT * FROM canal``, Kafka connector,
    parallelism 1, ``canal-json`` in and ``debezium-json`` out (PyFlink in
    ``--flink-python``, default ``.venv-flink``; the connector from
    ``connector.apache_kafka.flink_kafka_jars``);
(c) **Kafka Streams**: ``tests/jvm/peer-streams``, a one-thread topology that
    parses Canal JSON with Jackson and writes the same Debezium JSON as (a)
    (typed values, tombstones after deletes), built by Maven.

For each: messages per second and CPU-seconds per million messages, both over
the steady part of the run (from the first output record to the last; the CPU
of the converting process and its children, from ``/proc``), and the CPU of
the whole run including start-up. Then files: ``cdc-smt convert`` against
Flink SQL's filesystem connector (``canal-json`` -> ``debezium-json``) on
``--file-messages`` messages, whole-process CPU.

Target (issue 15): cdc-smt >= 3x the best peer in messages per CPU-second.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from bench.codec import canal_messages, cpu_model
from bench.worker import job_doc
from cdc_smt.connector import kafka as K
from cdc_smt.connector.apache_kafka import ApacheKafka, ApacheKafkaError, flink_kafka_jars, java
from cdc_smt.transforms.model import Record

ROOT = Path(__file__).resolve().parents[1]
IN = "peer.canal"
STREAMS_PROJECT = ROOT / "tests" / "jvm" / "peer-streams"
STREAMS_OUT = ROOT / ".cache" / "jvm" / "peer-streams"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
#: The Flink table of bench.codec's orders, as a Flink user declares it for canal-json.
FLINK_COLUMNS = (
    "id BIGINT, order_no STRING, customer_id INT, status STRING, amount DECIMAL(12,2), weight_kg DOUBLE, "
    "is_gift TINYINT, address STRING, created_at TIMESTAMP(3), updated_at TIMESTAMP(0), ship_date DATE"
)


# -- CPU of a process tree, from /proc --------------------------------------------------------------
def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds) of ``pid``, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def tree_cpu(root: int) -> float:
    """CPU seconds (user + system) of ``root`` and its living descendants (a PyFlink JVM, a worker's children)."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (got := _stat(int(entry.name))) is not None:
            parents[int(entry.name)], cpu[int(entry.name)] = got
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += cpu.get(pid, 0.0)
        todo.extend(child for child, parent in parents.items() if parent == pid)
    return total


# -- input ----------------------------------------------------------------------------------------
def expected_outputs(messages: Sequence[bytes]) -> tuple[int, int]:
    """Output records of (cdc-smt and the Streams peer, Flink) for ``messages``.

    cdc-smt and the Streams peer write one record per change plus a tombstone per
    delete; Flink's debezium-json writes an update as a delete and an insert, and no tombstones.
    """
    counts = {"INSERT": 0, "UPDATE": 0, "DELETE": 0}
    for m in messages:
        counts[orjson.loads(m)["type"]] += 1
    ours = counts["INSERT"] + counts["UPDATE"] + 2 * counts["DELETE"]
    flink = counts["INSERT"] + 2 * counts["UPDATE"] + counts["DELETE"]
    return ours, flink


async def produce_input(bootstrap: str, messages: list[bytes]) -> None:
    await K.create_topics(bootstrap, {IN: 1})
    step = 50_000
    for start in range(0, len(messages), step):
        chunk = messages[start : start + step]
        await K.produce_records(
            bootstrap, IN, [Record(value=v, key=b'{"id":%d}' % (start + i + 1)) for i, v in enumerate(chunk)]
        )


# -- one measured run -----------------------------------------------------------------------------
@dataclass
class Result:
    name: str
    rate: float  # input messages per second, steady part
    cpu_per_million: float  # CPU seconds per million input messages, steady part
    total_cpu: float  # CPU seconds of the whole run, start-up included
    total_seconds: float

    @property
    def per_cpu_second(self) -> float:
        return 1e6 / self.cpu_per_million if self.cpu_per_million else float("nan")


async def _end_offset(consumer: Any, topic: str) -> int:
    from aiokafka import TopicPartition

    parts = consumer.partitions_for_topic(topic)
    if not parts:
        await consumer._client.force_metadata_update()  # a topic the peer has just created
        parts = consumer.partitions_for_topic(topic) or set()
    tps = [TopicPartition(topic, p) for p in parts]
    return sum((await consumer.end_offsets(tps)).values()) if tps else 0


async def watch(bootstrap: str, topic: str, expected: int, proc: subprocess.Popen, timeout: float) -> tuple:
    """Poll ``topic``'s end offset until ``expected`` records; (t0, cpu0, n0, t1, cpu1) of the steady part."""
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        deadline = time.monotonic() + timeout
        first: tuple[float, float, int] | None = None
        while time.monotonic() < deadline:
            if proc.poll() is not None and proc.returncode != 0:
                raise RuntimeError(f"exited with code {proc.returncode}")
            n = await _end_offset(consumer, topic)
            now, cpu = time.perf_counter(), tree_cpu(proc.pid)
            if first is None and n > 0:
                first = (now, cpu, n)
            if n >= expected:
                assert first is not None
                return (*first, now, cpu)
            await asyncio.sleep(0.1)
        raise TimeoutError(f"{expected:,} records not in {topic} within {timeout:.0f}s")
    finally:
        await consumer.stop()


def measure(
    name: str,
    command: Sequence[str],
    *,
    bootstrap: str,
    topic: str,
    messages: int,
    expected: int,
    log: Path,
    env: dict[str, str] | None = None,
    cwd: Path = ROOT,
) -> Result:
    """Start ``command``, wait for ``expected`` records in ``topic``, stop it; the figures."""
    started = time.perf_counter()
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd)
        try:
            t0, cpu0, n0, t1, cpu1 = asyncio.run(
                watch(bootstrap, topic, expected, proc, timeout=max(900.0, messages / 300))
            )
            total_cpu, total = tree_cpu(proc.pid), time.perf_counter() - started
        except BaseException as exc:
            tail = log.read_text(errors="replace")[-1500:]
            raise RuntimeError(f"{name}: {exc}\n{tail}") from exc
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)
    steady_in = messages * (expected - n0) / expected  # input messages converted after the first output
    return Result(name, steady_in / (t1 - t0), (cpu1 - cpu0) / steady_in * 1e6, total_cpu, total)


async def head(bootstrap: str, topic: str, count: int) -> list[tuple[bytes | None, bytes | None]]:
    """The first ``count`` (key, value) records of ``topic`` (one partition)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        out: list[tuple[bytes | None, bytes | None]] = []
        while len(out) < count:
            batch = await consumer.getmany(tp, timeout_ms=2000)
            if not batch:
                break
            out.extend((m.key, m.value) for m in batch[tp])
        return out[:count]
    finally:
        await consumer.stop()


def same_records(bootstrap: str, ours: str, theirs: str, count: int) -> str:
    """Whether the Streams peer wrote what the worker wrote (keys and values by meaning; the
    ``source.version`` each writes its own name into aside), over the first ``count`` records."""

    def meaning(record: tuple[bytes | None, bytes | None]) -> tuple[Any, Any]:
        key, value = (orjson.loads(b) if b is not None else None for b in record)
        if value is not None:
            value["source"].pop("version")
        return key, value

    a = asyncio.run(head(bootstrap, ours, count))
    b = asyncio.run(head(bootstrap, theirs, count))
    differ = [i for i, (x, y) in enumerate(zip(a, b, strict=False)) if meaning(x) != meaning(y)]
    if len(a) != len(b) or differ:
        return f"DIFFERENT from (a): {len(differ)} of {min(len(a), len(b))} differ (first at {differ[:1]})"
    return f"same records as (a) (first {len(a):,} compared)"


# -- the peers ------------------------------------------------------------------------------------
def worker_command(bootstrap: str, out: str, tmp: Path) -> list[str]:
    import yaml

    doc = job_doc(bootstrap, 1, 2000)
    doc.update(id="peer-cdc-smt", source={**doc["source"], "topics": [IN]}, sink={**doc["sink"], "topic": out})
    doc["errors"] = {"tolerance": "none"}
    path = tmp / "worker.yaml"
    path.write_text(yaml.safe_dump(doc))
    return [sys.executable, "-m", "cdc_smt.connector.cli", "worker", "-c", str(path), "--log-format", "json"]


FLINK_JOB = """
import sys
from pyflink.table import EnvironmentSettings, TableEnvironment

jars, source_ddl, sink_ddl = sys.argv[1:4]
env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
env.get_config().set("parallelism.default", "1")
env.get_config().set("pipeline.jars", jars)
env.execute_sql(source_ddl)
env.execute_sql(sink_ddl)
env.execute_sql("INSERT INTO dbz SELECT * FROM canal").wait()
"""


def flink_kafka_command(python: str, bootstrap: str, out: str) -> list[str]:
    jars = ";".join(p.as_uri() for p in flink_kafka_jars(flink_version(python)))
    kafka = f"'connector'='kafka','properties.bootstrap.servers'='{bootstrap}'"
    source = (
        f"CREATE TABLE canal ({FLINK_COLUMNS}) WITH ({kafka},'topic'='{IN}','properties.group.id'='peer-flink',"
        "'scan.startup.mode'='earliest-offset','scan.bounded.mode'='latest-offset','format'='canal-json')"
    )
    sink = f"CREATE TABLE dbz ({FLINK_COLUMNS}) WITH ({kafka},'topic'='{out}','format'='debezium-json')"
    return [python, "-c", FLINK_JOB, jars, source, sink]


def flink_files_command(python: str, src: Path, dst: Path) -> list[str]:
    files = "'connector'='filesystem','path'"
    source = f"CREATE TABLE canal ({FLINK_COLUMNS}) WITH ({files}='{src}','format'='canal-json')"
    sink = f"CREATE TABLE dbz ({FLINK_COLUMNS}) WITH ({files}='{dst}','format'='debezium-json')"
    return [python, "-c", FLINK_JOB, "", source, sink]


def flink_version(python: str) -> str:
    done = subprocess.run(
        [python, "-c", "from importlib.metadata import version; print(version('apache-flink'))"],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise ApacheKafkaError(f"no PyFlink in {python}")
    return done.stdout.strip()


def build_streams_peer() -> str:
    """The Kafka Streams peer's class path (Maven builds it into .cache/jvm/peer-streams once)."""
    jar = STREAMS_OUT / "peer-streams.jar"
    sources = [STREAMS_PROJECT / "pom.xml", *(STREAMS_PROJECT / "src").rglob("*.java")]
    if not jar.is_file() or jar.stat().st_mtime < max(p.stat().st_mtime for p in sources):
        mvn = shutil.which("mvn")
        if mvn is None:
            raise RuntimeError("building the Kafka Streams peer needs Maven ('mvn' on PATH)")
        shutil.rmtree(STREAMS_OUT / "lib", ignore_errors=True)
        cmd = [mvn, "-q", "-B", "-f", str(STREAMS_PROJECT / "pom.xml"), f"-Dmaven.repo.local={ROOT / '.cache' / 'm2'}"]
        done = subprocess.run([*cmd, "package", "dependency:copy-dependencies"], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError("building the Kafka Streams peer failed:\n" + (done.stdout + done.stderr)[-1500:])
    return os.pathsep.join([str(jar), str(STREAMS_OUT / "lib" / "*")])


def streams_command(bootstrap: str, out: str) -> list[str]:
    return [
        java(), "-Xms512m", "-Xmx1g", "-cp", build_streams_peer(), "io.cdcsmt.peer.CanalToDebezium",
        bootstrap, IN, out, f"peer-streams-{os.getpid()}",
    ]  # fmt: skip


def run_files(python: str | None, messages: list[bytes], tmp: Path) -> list[tuple[str, float, float]]:
    """(name, seconds, CPU seconds) of whole-process file conversions (start-up included)."""
    src = tmp / "canal.json"
    src.write_bytes(b"".join(m + b"\n" for m in messages))
    runs: list[tuple[str, list[str]]] = [
        (
            "cdc-smt convert",
            [
                sys.executable,
                "-m",
                "cdc_smt.connector.cli",
                "convert",
                "-f",
                "canal-json",
                "-t",
                "debezium-json",
                "-o",
                str(tmp / "ours.json"),
                str(src),
            ],  # fmt: skip
        ),
    ]
    if python:
        runs.append(("Flink SQL filesystem", flink_files_command(python, src, tmp / "flink-out")))
    out = []
    for name, command in runs:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        log = tmp / f"{name.split()[0]}.log"
        with open(log, "wb") as sink:
            proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=ROOT)
        sampled = 0.0
        while proc.poll() is None:  # a PyFlink JVM is not always waited for: sample the tree too
            sampled = max(sampled, tree_cpu(proc.pid))
            time.sleep(0.2)
        seconds = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        waited = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        if proc.returncode != 0:
            print(f"  {name} failed ({proc.returncode}): {log.read_text(errors='replace')[-800:]}", flush=True)
            continue
        out.append((name, seconds, max(sampled, waited)))
        print(f"{name:<34} {len(messages) / seconds:>9,.0f} msgs/s  {max(sampled, waited):.1f} CPU-s", flush=True)
    return out


# -- main -----------------------------------------------------------------------------------------
def _default_flink_python() -> str | None:
    candidate = ROOT / ".venv-flink" / "bin" / "python"
    return str(candidate) if candidate.exists() else None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.peer", description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000, help="Canal JSON messages (default 1000000)")
    parser.add_argument(
        "--file-messages", type=int, default=200_000, help="messages of the file conversions (default 200000)"
    )
    parser.add_argument(
        "--flink-python",
        default=_default_flink_python(),
        help="a Python with PyFlink (default .venv-flink/bin/python when present; '' skips Flink)",
    )
    parser.add_argument(
        "--peers", default="cdc-smt,flink,streams,files", help="which runs (default cdc-smt,flink,streams,files)"
    )
    parser.add_argument(
        "--check-records",
        type=int,
        default=50_000,
        help="records of (c)'s output compared with (a)'s (default 50000)",
    )
    args = parser.parse_args(argv)
    peers = set(args.peers.split(","))
    args.file_messages = min(args.file_messages, args.messages)
    print(
        f"Python {platform.python_version()}; {cpu_model()}; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    messages = canal_messages(args.messages)
    ours_expected, flink_expected = expected_outputs(messages)
    average = sum(map(len, messages)) / len(messages)
    print(f"generated {len(messages):,} Canal JSON messages ({average:.0f} bytes on average)", flush=True)

    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="cdc-smt-peer-") as tmp_dir, ApacheKafka() as kafka:
        tmp = Path(tmp_dir)
        bootstrap = kafka.bootstrap
        asyncio.run(produce_input(bootstrap, messages))
        print(f"produced them to {IN} (1 partition) on Apache Kafka at {bootstrap}", flush=True)
        runs: list[tuple[str, Callable[[str], list[str]], int]] = []
        if "cdc-smt" in peers:
            runs.append(("(a) cdc-smt worker", lambda out: worker_command(bootstrap, out, tmp), ours_expected))
        if "flink" in peers:
            if args.flink_python:
                runs.append(
                    (
                        "(b) Flink SQL, Kafka connector",
                        lambda out: flink_kafka_command(args.flink_python, bootstrap, out),
                        flink_expected,
                    )
                )
            else:
                print("(b) Flink SQL: skipped (no PyFlink: ./dev flink builds .venv-flink)")
        if "streams" in peers:
            runs.append(("(c) Kafka Streams + Jackson", lambda out: streams_command(bootstrap, out), ours_expected))
        for i, (name, command, expected) in enumerate(runs):
            out = f"peer.out{i}"
            try:
                result = measure(
                    name, command(out), bootstrap=bootstrap, topic=out, messages=len(messages),
                    expected=expected, log=tmp / f"run{i}.log",
                )  # fmt: skip
            except (RuntimeError, ApacheKafkaError) as exc:
                print(f"{name}: not measured: {exc}", flush=True)
                continue
            results.append(result)
            if name.startswith("(c)") and "cdc-smt" in peers:
                print(f"(c) {same_records(bootstrap, 'peer.out0', out, args.check_records)}", flush=True)
            print(
                f"{name:<34} {result.rate:>9,.0f} msgs/s  {result.cpu_per_million:>7.1f} CPU-s/M msgs  "
                f"(whole run {result.total_seconds:.0f}s, {result.total_cpu:.0f} CPU-s)",
                flush=True,
            )
        files = run_files(args.flink_python, messages[: args.file_messages], tmp) if "files" in peers else []

    report(results, files, args)
    return 0


def report(results: list[Result], files: list[tuple[str, float, float]], args: argparse.Namespace) -> None:
    print()
    print("| peer (Kafka to Kafka) | msgs/s | CPU-s per 1M msgs | msgs per CPU-s | cdc-smt's advantage |")
    print("|---|---:|---:|---:|---:|")
    ours = next((r for r in results if r.name.startswith("(a)")), None)
    for r in results:
        ratio = f"{ours.per_cpu_second / r.per_cpu_second:.2f}×" if ours else ""
        print(f"| {r.name} | {r.rate:,.0f} | {r.cpu_per_million:.1f} | {r.per_cpu_second:,.0f} | {ratio} |")
    peers = [r for r in results if r is not ours]
    if ours and peers:
        best = max(peers, key=lambda r: r.per_cpu_second)
        ratio = ours.per_cpu_second / best.per_cpu_second
        print(
            f"\ntarget: cdc-smt >= 3x the best peer ({best.name}) in messages per CPU-second: "
            f"{'met' if ratio >= 3 else 'NOT met'} ({ratio:.2f}x)"
        )
    if files:
        print(f"\n| files, {args.file_messages:,} messages | seconds | CPU-s | msgs per CPU-s |")
        print("|---|---:|---:|---:|")
        for name, seconds, cpu in files:
            print(f"| {name} | {seconds:.1f} | {cpu:.1f} | {args.file_messages / cpu if cpu else 0:,.0f} |")
        if len(files) == 2:
            (_, our_s, our_cpu), (_, flink_s, flink_cpu) = files
            cpu_ratio, wall_ratio = flink_cpu / our_cpu, flink_s / our_s
            print(f"\ncdc-smt convert vs Flink: {cpu_ratio:.2f}x per CPU-second, {wall_ratio:.2f}x wall clock")


if __name__ == "__main__":
    sys.exit(main())
