"""Exactly-once backfill into Kafka, and a Kafka sink riding out a broker restart (Apache Kafka).

- A backfill with ``processing_guarantee: exactly_once`` is SIGKILLed twice in the
  middle of a micro-batch (as soon as a stream's commit marker of a batch Spark has not
  finished shows up), then resumed with the broker stopped for 12 s (and restarted on
  its data) as soon as the resumed run commits its first share: a read_committed
  consumer sees every expected output exactly once, in per-key order, no share is
  committed twice, and replaying the output rebuilds the same tables.
- An at_least_once run through the same outage loses nothing.
- On Tansu (no transactions) exactly_once is refused at start with one error line.

The backfills read files, so the outage meets the Kafka sink only (the Kafka source's
side is tested in ``test_backfill_faults.py``). Each SIGKILLed run is a process of its
own (the CLI); the resumed runs share the tests' Spark session.
"""

from __future__ import annotations

import asyncio
import io
import os
import signal
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
from tests.spark.conftest import run_async, start_backfill, write_lines

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.timeout(600)]
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


def load(path: Path) -> tuple[Any, Any]:
    from cdc_smt.connector.spark.settings import Overrides, load

    return load(path, Overrides())


def committed_batches(checkpoint: str) -> set[int]:
    """The batches Spark committed (its checkpoint's commit log)."""
    commits = Path(checkpoint) / "commits"
    return {int(p.name) for p in commits.iterdir() if p.name.isdigit()} if commits.is_dir() else set()


class MarkerWatch:
    """In a thread: the markers committed so far (read_committed), and the output topic's log end
    (records of open and aborted transactions included) when the latest marker came and now."""

    def __init__(self, bootstrap: str, topic: str, output: str) -> None:
        self.bootstrap, self.topic, self.output = bootstrap, topic, output
        self.markers: list[dict[str, Any]] = []
        self.log_end = 0
        self.log_end_at_marker = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self._thread.start()

    async def _run(self) -> None:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        markers = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap, enable_auto_commit=False, isolation_level="read_committed"
        )
        log = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False)
        await markers.start()
        await log.start()
        try:
            tp = TopicPartition(self.topic, 0)
            markers.assign([tp])
            await markers.seek_to_beginning(tp)
            outs = [TopicPartition(self.output, p) for p in range(OUT_PARTITIONS)]
            while not self._stop.is_set():
                self.log_end = sum((await log.end_offsets(outs)).values())
                for msgs in (await markers.getmany(timeout_ms=50)).values():
                    self.markers.extend(orjson.loads(m.value) for m in msgs)
                    self.log_end_at_marker = self.log_end
        finally:
            await markers.stop()
            await log.stop()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)


class _Progress(io.StringIO):
    """The backfill's progress stream, kept: tells when a batch is done."""

    def __init__(self) -> None:
        super().__init__()
        self.batches = 0
        self.batch_done = threading.Event()

    def write(self, text: str) -> int:
        if text.startswith("backfill: batch "):
            self.batches += 1
            self.batch_done.set()
        return super().write(text)


def source_files(tmp_path: Path, name: str, files: int, per_file: int) -> tuple[Path, int]:
    values = canal_messages(files * per_file, seed=29)
    src = tmp_path / f"{name}-src"
    for i in range(files):
        write_lines(src / f"part{i}.canal.jsonl", values[i * per_file : (i + 1) * per_file])
    return src, len(values)


def expected_from_files(job: Any, src: Path) -> list[Record]:
    """The chain over each file with a chain of its own, as the backfill's streams."""
    from cdc_smt.connector.framing import read_records

    expected: list[Record] = []
    for f in sorted(src.glob("*.jsonl")):
        chain = job.build_chain()
        for _, record in read_records(str(f), False):
            expected.extend(chain.process(record).outputs)
        expected.extend(chain.flush().outputs)
    return expected


def in_thread(spark: Any, path: Path, progress_out: _Progress) -> tuple[threading.Thread, dict[str, Any]]:
    """The backfill of ``path`` in a thread of this process (the tests restart the broker from this one:
    the broker process dies with the thread that started it)."""
    from cdc_smt.connector.spark.backfill import run as run_backfill

    job, settings = load(path)
    result: dict[str, Any] = {}

    def body() -> None:
        try:
            result["progress"] = run_backfill(job, settings, spark=spark, progress_out=progress_out)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            result["error"] = exc

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread, result


def broker_outage(apache: Any) -> None:
    apache.server.stop(kill=True)
    try:
        time.sleep(DOWN_SECONDS)
    finally:
        apache.server.start()


def finish(thread: threading.Thread, result: dict[str, Any], progress_out: _Progress) -> Any:
    thread.join(300)
    assert not thread.is_alive(), progress_out.getvalue()
    assert "error" not in result, f"{result.get('error')!r}\n{progress_out.getvalue()}"
    return result["progress"]


# -- exactly-once through two SIGKILLs and a broker restart ------------------------------------------


def test_exactly_once_backfill_killed_mid_batch_twice_then_through_a_broker_restart_commits_every_output_once(
    spark, apache, tmp_path
) -> None:
    name = "eos"
    bootstrap = apache.bootstrap
    run_async(kafka.create_topics(bootstrap, {f"{name}.out": OUT_PARTITIONS, f"{name}.dlq": 1}))
    # Files of 5,500 records, three per micro-batch: a stream's share is more than a chunk
    # (sinks.KAFKA_CHUNK), so a transaction holds outputs before its marker.
    src, total = source_files(tmp_path, name, files=9, per_file=5_500)
    backfill = {"source": {"type": "jsonl", "path": str(src), "max_files_per_batch": 3}}
    path = write_job(tmp_path, name, bootstrap, backfill, "exactly_once")
    job, settings = load(path)
    commits = f"{name}.backfill-commits"
    run_async(kafka.create_topics(bootstrap, {commits: 1}, config={"cleanup.policy": "compact"}))
    watch = MarkerWatch(bootstrap, commits, f"{name}.out")
    pending_at_kill: list[int] = []
    try:
        # Both kills are mid-batch: the first once a share of a batch Spark has not finished is
        # committed (its re-run must skip it), the second while outputs sit in open transactions
        # (aborted when the next run fences their ids, unless the killed task's Python worker
        # finished its commit first: then its marker makes the re-run skip the share).
        for kill in ("share committed", "transactions open"):
            proc = start_backfill(path)
            lines: list[str] = []
            threading.Thread(target=lambda p=proc, out=lines: out.extend(p.stderr), daemon=True).start()
            seen, baseline = len(watch.markers), watch.log_end
            try:
                deadline = time.monotonic() + 300
                while time.monotonic() < deadline and proc.poll() is None:
                    if kill == "share committed":
                        done = committed_batches(settings.checkpoint)
                        if any(m["batch"] not in done for m in watch.markers[seen:]):
                            break
                    elif watch.log_end > max(baseline, watch.log_end_at_marker) + 100:
                        break  # outputs sent since the last commit
                    time.sleep(0.02)
                assert proc.poll() is None, "".join(lines[-30:])
            finally:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(60)
            spark_done = committed_batches(settings.checkpoint)
            pending_at_kill.append(sum(m["batch"] not in spark_done for m in watch.markers))
        # The first kill left shares committed in a batch Spark had not finished: the re-run must skip them.
        assert pending_at_kill[0] > 0, pending_at_kill

        # The resumed run, with the broker down for a while as soon as it commits its first share.
        time.sleep(1.0)  # the watch has read what the killed runs committed
        seen = len(watch.markers)
        spark_done = committed_batches(settings.checkpoint)
        not_rerun = sum(m["records"] for m in watch.markers if m["batch"] in spark_done)
        progress_out = _Progress()
        thread, result = in_thread(spark, path, progress_out)
        deadline = time.monotonic() + 240
        while len(watch.markers) <= seen and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert thread.is_alive(), progress_out.getvalue()  # the outage comes in the middle of the run
    finally:
        watch.close()
    batches_before = progress_out.batches
    broker_outage(apache)
    progress = finish(thread, result, progress_out)
    assert progress.totals.batches > batches_before  # batches finished after the outage
    # Resumed after the batches Spark committed; a share committed before is counted from its marker.
    assert progress.totals.records == total - not_rerun

    markers = [orjson.loads(r.value or b"") for r in run_async(read_topic(bootstrap, commits, "read_committed"))]
    shares = Counter((m["stream"], m["batch"]) for m in markers)
    assert shares and max(shares.values()) == 1, "a stream's share of a batch was committed twice"
    assert sum(m["records"] for m in markers) == total
    expected = expected_from_files(job, src)
    assert_exactly_once(job, bootstrap, expected)
    logged = run_async(read_topic(bootstrap, f"{name}.out", "read_uncommitted"))
    print(
        f"shares committed in batches Spark had not finished at each kill: {pending_at_kill}; "
        f"{len(logged)} records in the log (aborted ones included) for {len(expected)} outputs"
    )


# -- a transaction an orphaned worker left open --------------------------------------------------------


def test_exactly_once_backfill_ends_a_transaction_a_killed_runs_orphaned_worker_opened_after_its_fence(
    spark, apache, tmp_path, monkeypatch
) -> None:
    """A killed run's Spark Python workers outlive its JVM for a moment (pyspark's daemon gives them a
    process group of their own): one that opens a stream's transaction after the resumed run's driver
    fenced every stream, sends its marker and dies holds back every marker read of the commit topic.
    The run's tasks end it (a marker of another invocation of the run) and finish exactly once."""
    from cdc_smt.connector.jobconfig import ProducerSettings
    from cdc_smt.connector.kafka.markers import marker_record
    from cdc_smt.connector.kafka.produce import BlockingProducer
    from cdc_smt.connector.kafka.settings import KafkaSettings
    from cdc_smt.connector.spark import sinks

    name = "eos-orphan"
    bootstrap = apache.bootstrap
    commits = f"{name}.backfill-commits"
    run_async(kafka.create_topics(bootstrap, {f"{name}.out": OUT_PARTITIONS, f"{name}.dlq": 1}))
    run_async(kafka.create_topics(bootstrap, {commits: 1}, config={"cleanup.policy": "compact"}))
    src, total = source_files(tmp_path, name, files=6, per_file=700)
    backfill = {"source": {"type": "jsonl", "path": str(src), "max_files_per_batch": 3}}
    path = write_job(tmp_path, name, bootstrap, backfill, "exactly_once")
    job, _ = load(path)
    orphans: list[BlockingProducer] = []
    prepare = sinks.prepare_exactly_once

    def prepare_then_orphan(*args: Any, **kwargs: Any) -> Any:
        eos = prepare(*args, **kwargs)  # every stream fenced: what the orphan does next is not ended by it
        stream = "part4.canal"  # written in batch 1: its own task cannot end the orphan before batch 0 reads
        orphan = BlockingProducer(
            KafkaSettings(bootstrap_servers=(bootstrap,)),
            ProducerSettings(),
            transactional_id=sinks.transactional_id(eos.run_id, stream),
        )
        orphans.append(orphan)
        orphan.begin()
        marker = {"batch": 0, "stream": stream, "attempt": "killed-run", "records": 700}
        orphan.send([marker_record(commits, 1, f"{eos.run_id}/{stream}", marker)])
        return eos  # the orphan is never heard of again: its transaction stays open

    monkeypatch.setattr(sinks, "prepare_exactly_once", prepare_then_orphan)
    progress_out = _Progress()
    thread, result = in_thread(spark, path, progress_out)
    try:
        progress = finish(thread, result, progress_out)
        assert len(orphans) == 1
        with pytest.raises(Exception, match="[Ff]enced|[Ee]poch"):
            orphans[0].commit()  # ended by the run: its share was written by the run's own task
    finally:
        for orphan in orphans:
            orphan.close()
    assert progress.totals.records == total

    markers = [orjson.loads(r.value or b"") for r in run_async(read_topic(bootstrap, commits, "read_committed"))]
    assert all(m.get("attempt") != "killed-run" for m in markers)  # the orphan's marker was aborted
    shares = Counter((m["stream"], m["batch"]) for m in markers)
    assert len(shares) == 6 and max(shares.values()) == 1
    assert sum(m["records"] for m in markers) == total
    assert_exactly_once(job, bootstrap, expected_from_files(job, src))


# -- at-least-once through a broker restart -------------------------------------------------------------


def test_at_least_once_backfill_rides_out_a_broker_restart_losing_nothing(spark, apache, tmp_path) -> None:
    name = "alo"
    run_async(kafka.create_topics(apache.bootstrap, {f"{name}.out": OUT_PARTITIONS, f"{name}.dlq": 1}))
    src, total = source_files(tmp_path, name, files=8, per_file=750)
    backfill = {"source": {"type": "jsonl", "path": str(src), "max_files_per_batch": 2}}
    path = write_job(tmp_path, name, apache.bootstrap, backfill, "at_least_once")
    job, _ = load(path)
    progress_out = _Progress()
    thread, result = in_thread(spark, path, progress_out)
    assert progress_out.batch_done.wait(240), progress_out.getvalue()
    broker_outage(apache)
    progress = finish(thread, result, progress_out)
    assert progress.totals.records == total
    assert progress_out.batches == 4 and progress_out.getvalue().count("backfill: batch ") == 4

    expected = expected_from_files(job, src)
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
    proc = start_backfill(path)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2  # a usage error: the settings do not fit the cluster
    errors = [line for line in err.splitlines() if line.startswith("cdc-smt: error:")]
    assert len(errors) == 1, err
    print(errors[0])
    assert "exactly_once needs Kafka transactions" in errors[0], err
    assert "backfill.sink.processing_guarantee" in errors[0]
    assert "Traceback" not in err
    assert not (tmp_path / "eos-tansu-ckpt" / "commits").exists()  # refused before Spark ran anything
