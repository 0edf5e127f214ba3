"""Exactly-once backfill into Kafka, and a Kafka sink riding out a broker restart (Apache Kafka).

- A backfill with ``processing_guarantee: exactly_once`` is SIGKILLed twice in the
  middle of a micro-batch (as soon as a stream's commit marker of a batch Spark has not
  finished shows up) and resumed: a read_committed consumer sees every expected output
  exactly once, in per-key order, and replaying the output rebuilds the same tables.
- The same through a 12 s broker outage in the middle of the run, and an at_least_once
  run through the same outage loses nothing. These read files, so the outage meets the
  Kafka sink only (the Kafka source's side is tested in ``test_backfill_faults.py``).
- On Tansu (no transactions) exactly_once is refused at start with one error line.
"""

from __future__ import annotations

import asyncio
import io
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from bench.codec import canal_messages
from cdc_smt.connector import kafka
from cdc_smt.transforms.changelog import replay
from cdc_smt.transforms.model import Record
from tests.spark.conftest import run_async, write_lines

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.timeout(600)]
ROOT = Path(__file__).resolve().parents[2]
DOWN_SECONDS = 12.0
OUT_PARTITIONS = 3


# -- helpers -----------------------------------------------------------------------------------------


def write_job(tmp_path: Path, name: str, bootstrap: str, backfill: dict[str, Any], guarantee: str) -> Path:
    doc = {
        "id": name,
        "kafka": {"bootstrap_servers": bootstrap},
        "source": {"topics": [f"{name}.in"], "format": "canal-json"},
        "sink": {"topic": f"{name}.out", "format": "debezium-json"},
        "errors": {"tolerance": "all", "dead_letter_topic": f"{name}.dlq"},
        "backfill": {
            **backfill,
            "sink": {"processing_guarantee": guarantee, "delivery_timeout_s": 90},
            "checkpoint": str(tmp_path / f"{name}-ckpt"),
        },
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def cli(path: Path) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "cdc_smt.connector.cli", "backfill", "-c", str(path), "--master", "local[2]"]
    cmd += ["--conf", "spark.ui.enabled=false"]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True, text=True
    )


async def read_topic(bootstrap: str, topic: str, isolation_level: str) -> list[Record]:
    """Every record of ``topic`` as a reader with ``isolation_level`` sees it (partition, then offset order)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, isolation_level=isolation_level)
    await consumer.start()
    try:
        parts = consumer.partitions_for_topic(topic) or set()
        if not parts:
            await consumer._client.force_metadata_update()  # noqa: SLF001 - a topic created by another client
            parts = consumer.partitions_for_topic(topic) or set()
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)
        out: dict[int, list[Record]] = defaultdict(list)
        deadline = time.monotonic() + 60
        while any([await consumer.position(tp) < ends[tp] for tp in tps]) and time.monotonic() < deadline:
            for tp, msgs in (await consumer.getmany(timeout_ms=300, max_records=10_000)).items():
                out[tp.partition].extend(kafka.consume.to_record(m) for m in msgs)
        return [r for p in sorted(out) for r in out[p]]
    finally:
        await consumer.stop()


def per_key(records: list[Record]) -> dict[bytes | None, list[bytes | None]]:
    got: dict[bytes | None, list[bytes | None]] = defaultdict(list)
    for r in records:
        got[r.key].append(r.value)
    return dict(got)


def tables(records: list[Record]) -> dict[Any, Any]:
    """The tables a Debezium JSON changelog replays to (partition, then offset order: each key's order)."""
    from cdc_smt.transforms.formats import get_codec

    codec = get_codec("debezium-json")
    return replay(e for r in records if r.value is not None for e in codec.decode(r))


def assert_exactly_once(job: Any, bootstrap: str, expected: list[Record]) -> None:
    """A read_committed reader sees ``expected``, each output once and in per-key order; the tables agree."""
    got = run_async(read_topic(bootstrap, job.sink.topic, "read_committed"))
    want = per_key(expected)
    have = per_key(got)
    lost = sum((Counter(want[k]) - Counter(have.get(k, []))).total() for k in want)
    extra = sum((Counter(have[k]) - Counter(want.get(k, []))).total() for k in have)
    assert (lost, extra) == (0, 0), f"{lost} lost, {extra} duplicated or unexpected"
    assert have == want  # each key's outputs in the source's order
    assert len(got) == len(expected)
    assert tables(got) == tables(expected)


def expected_from_topic(job: Any, bootstrap: str) -> list[Record]:
    """The chain over the source topic, partition by partition (what the worker would send)."""
    chain = job.build_chain()
    out = []
    for record in run_async(kafka.consume_all(bootstrap, job.source.topics[0])):
        out.extend(o for o in chain.process(record).outputs)
    return out


def load(path: Path) -> tuple[Any, Any]:
    from cdc_smt.connector.spark.settings import Overrides, load

    return load(path, Overrides())


def committed_batches(checkpoint: str) -> set[int]:
    """The batches Spark committed (its checkpoint's commit log)."""
    commits = Path(checkpoint) / "commits"
    return {int(p.name) for p in commits.iterdir() if p.name.isdigit()} if commits.is_dir() else set()


class MarkerWatch:
    """A read_committed reader of the commit topic in a thread: the markers committed so far."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.markers: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self._thread.start()

    async def _run(self) -> None:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap, enable_auto_commit=False, isolation_level="read_committed"
        )
        await consumer.start()
        try:
            tp = TopicPartition(self.topic, 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            while not self._stop.is_set():
                for msgs in (await consumer.getmany(timeout_ms=50)).values():
                    self.markers.extend(orjson.loads(m.value) for m in msgs)
        finally:
            await consumer.stop()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)


# -- exactly-once through two SIGKILLs ---------------------------------------------------------------


def test_exactly_once_backfill_killed_mid_batch_twice_commits_every_output_once(apache, tmp_path) -> None:
    name = "eos-kill"
    bootstrap = apache.bootstrap
    run_async(kafka.create_topics(bootstrap, {f"{name}.in": 3, f"{name}.out": OUT_PARTITIONS, f"{name}.dlq": 1}))
    run_async(kafka.create_topics(bootstrap, {f"{name}.backfill-commits": 1}, config={"cleanup.policy": "compact"}))
    values = canal_messages(9000, seed=23)
    records = [Record(value=v, key=b'{"id":%d}' % (i % 60)) for i, v in enumerate(values)]
    run_async(kafka.produce_records(bootstrap, f"{name}.in", records))
    path = write_job(tmp_path, name, bootstrap, {"source": {"max_records_per_batch": 1500}}, "exactly_once")
    job, settings = load(path)
    watch = MarkerWatch(bootstrap, f"{name}.backfill-commits")
    rnd = random.Random(5)
    pending_at_kill: list[int] = []
    try:
        for _kill in range(2):
            proc = cli(path)
            lines: list[str] = []
            threading.Thread(target=lambda p=proc, out=lines: out.extend(p.stderr), daemon=True).start()
            seen = len(watch.markers)
            try:
                deadline = time.monotonic() + 240
                # Mid-batch: a stream's share of a batch is committed while Spark has not finished that batch.
                while time.monotonic() < deadline and proc.poll() is None:
                    done = {int(line.split()[2].rstrip(":")) for line in lines if line.startswith("backfill: batch ")}
                    if any(m["batch"] not in done for m in watch.markers[seen:]):
                        time.sleep(rnd.uniform(0.0, 0.3))
                        break
                    time.sleep(0.02)
                assert proc.poll() is None, "".join(lines[-30:])
                os.killpg(proc.pid, signal.SIGKILL)
            finally:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(60)
            spark_done = (
                committed_batches(settings.checkpoint) if (Path(settings.checkpoint) / "commits").is_dir() else set()
            )
            pending_at_kill.append(sum(m["batch"] not in spark_done for m in watch.markers))
        proc = cli(path)
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
    finally:
        watch.close()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)

    # Some kills left shares committed in batches Spark had not finished: the re-runs skipped them.
    assert sum(pending_at_kill) > 0, pending_at_kill
    shares = Counter((m["stream"], m["batch"]) for m in watch.markers)
    assert shares and max(shares.values()) == 1, "a stream's share of a batch was committed twice"
    assert sum(m["records"] for m in watch.markers) == len(values)
    assert_exactly_once(job, bootstrap, expected_from_topic(job, bootstrap))
    uncommitted = run_async(read_topic(bootstrap, f"{name}.out", "read_uncommitted"))
    print(
        f"markers left by the killed runs in unfinished batches: {pending_at_kill}; "
        f"{len(uncommitted)} records in the log for {len(expected_from_topic(job, bootstrap))} outputs"
    )


# -- a broker restart in the middle of a run ----------------------------------------------------------


class _Progress(io.StringIO):
    """The backfill's progress stream: tells when batch 1 is done."""

    def __init__(self) -> None:
        super().__init__()
        self.batch_1 = threading.Event()

    def write(self, text: str) -> int:
        if text.startswith("backfill: batch 1:"):
            self.batch_1.set()
        return super().write(text)


def file_run(spark: Any, apache: Any, tmp_path: Path, name: str, guarantee: str) -> tuple[Any, list[Record], Any]:
    """A file backfill into Kafka with the broker down for a while after batch 1: (job, expected, progress).

    The backfill runs in a thread; the broker is stopped and started from this one
    (the broker process dies with the thread that started it).
    """
    from cdc_smt.connector.framing import read_records
    from cdc_smt.connector.spark.backfill import run as run_backfill

    bootstrap = apache.bootstrap
    run_async(kafka.create_topics(bootstrap, {f"{name}.out": OUT_PARTITIONS, f"{name}.dlq": 1}))
    values = canal_messages(6000, seed=29)
    src = tmp_path / f"{name}-src"
    for i in range(8):
        write_lines(src / f"part{i}.canal.jsonl", values[i * 750 : (i + 1) * 750])
    backfill = {"source": {"type": "jsonl", "path": str(src), "max_files_per_batch": 2}}
    path = write_job(tmp_path, name, bootstrap, backfill, guarantee)
    job, settings = load(path)
    progress_out = _Progress()
    result: dict[str, Any] = {}

    def backfill_thread() -> None:
        try:
            result["progress"] = run_backfill(job, settings, spark=spark, progress_out=progress_out)
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            result["error"] = exc

    thread = threading.Thread(target=backfill_thread, daemon=True)
    thread.start()
    assert progress_out.batch_1.wait(240), progress_out.getvalue()
    apache.server.stop(kill=True)
    try:
        time.sleep(DOWN_SECONDS)
    finally:
        apache.server.start()
    thread.join(300)
    assert not thread.is_alive(), progress_out.getvalue()
    assert "error" not in result, f"{result.get('error')!r}\n{progress_out.getvalue()}"
    assert "backfill: batch 2:" in progress_out.getvalue()  # batches ran after the outage
    expected: list[Record] = []
    for f in sorted(src.glob("*.jsonl")):
        chain = job.build_chain()  # one chain per file, as the backfill's streams
        for _, record in read_records(str(f), False):
            expected.extend(chain.process(record).outputs)
        expected.extend(chain.flush().outputs)
    return job, expected, result["progress"]


def test_exactly_once_backfill_rides_out_a_broker_restart(spark, apache, tmp_path) -> None:
    job, expected, progress = file_run(spark, apache, tmp_path, "eos-outage", "exactly_once")
    assert progress.totals.records == 6000
    assert_exactly_once(job, apache.bootstrap, expected)


def test_at_least_once_backfill_rides_out_a_broker_restart_losing_nothing(spark, apache, tmp_path) -> None:
    job, expected, progress = file_run(spark, apache, tmp_path, "alo-outage", "at_least_once")
    assert progress.totals.records == 6000
    got = per_key(run_async(read_topic(apache.bootstrap, job.sink.topic, "read_committed")))
    for key, wanted in per_key(expected).items():
        have = got.get(key, [])
        assert not Counter(wanted) - Counter(have), "lost an output"
        assert list(dict.fromkeys(have)) == list(dict.fromkeys(wanted))  # first occurrences in order
    print(f"at_least_once: {sum(map(len, got.values())) - len(expected)} duplicates after the outage")


# -- a broker without transactions ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def tansu() -> Any:
    from tests.integration.helpers import kafka_backend

    with kafka_backend("embedded") as cluster:
        yield cluster


def test_exactly_once_is_refused_at_start_on_a_broker_without_transactions(tansu, tmp_path) -> None:
    run_async(kafka.create_topics(tansu.bootstrap, {"eos-tansu.in": 1, "eos-tansu.out": 1, "eos-tansu.dlq": 1}))
    path = write_job(tmp_path, "eos-tansu", tansu.bootstrap, {}, "exactly_once")
    proc = cli(path)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0
    errors = [line for line in err.splitlines() if line.startswith("cdc-smt: error:")]
    assert len(errors) == 1, err
    print(errors[0])
    assert "exactly_once needs Kafka transactions" in errors[0], err
    assert "backfill.sink.processing_guarantee" in errors[0]
    assert "Traceback" not in err
    assert not (tmp_path / "eos-tansu-ckpt" / "commits").exists()  # refused before Spark ran anything
