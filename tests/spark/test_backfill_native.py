"""The backfill's Arrow path through the native plan against its Python path: byte for byte.

A task (:func:`connector.spark.process.run_task`, the ``mapInArrow`` body) is run
over the same slices with the native core on (JSON Lines read into Arrow arrays,
converted by ``convert_arrow``, written as arrays) and with ``CDC_SMT_NATIVE=0``
(today's path: a record and a chain call per message). Output files, dead
letters and summaries must be equal: JSON Lines and Parquet sinks, JSON Lines and
Avro container sources, the corpus's Canal files, generated change streams, and
malformed messages among them with ``tolerance: all``. Then one real Spark run
(local[2]) against the Python path's files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.codec import canal_messages
from cdc_smt.connector.spark.datasource import KAFKA_ARROW
from cdc_smt.transforms import native
from cdc_smt.transforms.model import Record
from tests.corpus import read_messages
from tests.spark.conftest import write_lines
from tests.spark.test_backfill import files_job, load, run
from tests.strategies import change_streams
from tests.test_native import MALFORMED, canal_stream

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(not native.available(), reason="the native extension is not built (no Rust toolchain)"),
]

#: Messages that are neither tombstones nor framed away: what a file can hold.
BAD = [m for m in MALFORMED if m is not None and m.strip() and b"\n" not in m]


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> bytes)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def count_arrow_rows(monkeypatch: pytest.MonkeyPatch, native_on: bool) -> list[int]:
    """Switch the core on or off; the returned list gets the length of every array the tasks hand to the plan."""
    from cdc_smt.connector.spark.process import Task

    monkeypatch.setenv("CDC_SMT_NATIVE", "1" if native_on else "0")
    arrow_rows: list[int] = []
    feed_arrow = Task._feed_arrow

    def counted(self: Any, st: Any, values: Any, *args: Any) -> None:
        arrow_rows.append(len(values))
        feed_arrow(self, st, values, *args)

    monkeypatch.setattr(Task, "_feed_arrow", counted)
    return arrow_rows


def run_tasks(
    tmp: Path, job_path: Path, src: Path, *, native_on: bool, monkeypatch: pytest.MonkeyPatch, planned: bool = True,
    **over: Any,
):  # fmt: skip
    """Each file of ``src`` as one task (``run_task`` over its slice row); ``(outputs, summaries)``."""
    from cdc_smt.connector.spark.datasource import list_files
    from cdc_smt.connector.spark.process import SUMMARY_SCHEMA, TaskPlan, run_task

    arrow_rows = count_arrow_rows(monkeypatch, native_on)
    job, settings = load(job_path, **over)
    sink = type(settings.sink)(settings.sink.type, str(tmp / "out"))
    dead = type(settings.dead_letters)("jsonl", str(tmp / "out" / "_dead_letters"))
    plan = TaskPlan(job=job, batch_id=0, sink=sink, dead_letters=dead, source_root=str(src))
    summaries = []
    for path in list_files(str(src)):
        chain = job.build_chain()
        assert (chain.native is not None) is (native_on and planned)
        row = {"topic": None, "partition": None, "start": None, "end": None, "file": path}
        row["binary"] = settings.source.type == "avro"
        batch = pa.RecordBatch.from_pylist([row], schema=pa.schema(
            [("topic", pa.string()), ("partition", pa.int32()), ("start", pa.int64()), ("end", pa.int64()),
             ("file", pa.string()), ("binary", pa.bool_())]
        ))  # fmt: skip
        (summary,) = list(run_task(plan, iter([batch])))
        assert summary.schema == SUMMARY_SCHEMA
        summaries.extend({k: v for k, v in s.items() if k != "seconds"} for s in summary.to_pylist())
    # the native run handed every record to the plan as arrays; the Python run none
    assert sum(arrow_rows) == (sum(s["records"] for s in summaries) if native_on and planned else 0)
    return tree(tmp / "out"), summaries


def assert_same_both_ways(
    tmp: Path, src: Path, monkeypatch: pytest.MonkeyPatch, job: dict[str, Any] | None = None, **over: Any
) -> dict[str, bytes]:
    job_path = files_job(tmp, src, **(job or {}))
    planned = job is None
    fast = run_tasks(tmp / "native", job_path, src, native_on=True, monkeypatch=monkeypatch, planned=planned, **over)
    slow = run_tasks(tmp / "python", job_path, src, native_on=False, monkeypatch=monkeypatch, **over)
    assert fast[1] == slow[1]
    assert list(fast[0]) == list(slow[0])
    for name in fast[0]:
        assert fast[0][name] == slow[0][name], name
    return fast[0]


def corpus_and_bench_inputs(src: Path, corpus: Path) -> None:
    messages = canal_messages(1200, seed=5)
    lines = [m for path in sorted((corpus / "canal-json").glob("*.txt")) if "expected" not in path.name
             for m in read_messages(path)]  # fmt: skip
    write_lines(src / "corpus.canal.jsonl", lines)
    mixed = messages[:400] + BAD + messages[400:800] + [b"   ", b"{not json"] + messages[800:]
    (src / "sub").mkdir(parents=True, exist_ok=True)
    # CRLF line ends, a BOM and blank lines: read as read_lines reads them
    (src / "sub" / "mixed.canal.jsonl").write_bytes(b"\xef\xbb\xbf" + b"\r\n".join(mixed) + b"\r\n\n\n")


@pytest.mark.parametrize("sink_type", ["jsonl", "parquet"])
def test_files_to_files_native_equals_python(tmp_path, corpus, monkeypatch, sink_type):
    from cdc_smt.connector.spark import sinks

    monkeypatch.setattr(sinks, "PARQUET_CHUNK", 97)  # many row groups: their bounds must agree too
    src = tmp_path / "in"
    corpus_and_bench_inputs(src, corpus)
    out = assert_same_both_ways(tmp_path, src, monkeypatch, sink_type=sink_type)
    assert any(name.startswith("_dead_letters/") for name in out)  # the malformed ones
    assert sum(len(v) for k, v in out.items() if not k.startswith("_")) > 100_000


def test_a_chain_without_a_plan_reads_its_lines_alike(tmp_path, corpus, monkeypatch):
    """canal-json -> maxwell-json with a transform no plan follows (``unwrap``): the lines read as
    arrays go through the chain."""
    src = tmp_path / "in"
    corpus_and_bench_inputs(src, corpus)
    job = {"sink": {"format": "maxwell-json"}, "transforms": [{"type": "unwrap"}]}
    out = assert_same_both_ways(tmp_path, src, monkeypatch, job=job)
    assert any(name.startswith("_dead_letters/") for name in out)


def test_avro_container_source_native_equals_python(tmp_path, monkeypatch):
    from cdc_smt.connector.framing import write_records

    values = canal_messages(300, seed=8) + BAD
    records = [
        Record(
            value=v, key=b"k%d" % i, topic="shop.canal", partition=3, offset=100 + i, timestamp=1_700_000_000_000 + i
        )
        for i, v in enumerate(values)
    ]
    records.insert(7, Record(value=None, topic="shop.canal", partition=3, offset=99))  # a tombstone datum
    src = tmp_path / "in"
    src.mkdir()
    write_records(src / "dump.avro", records, True)
    out = assert_same_both_ways(tmp_path, src, monkeypatch, source_type="avro")
    assert "topic=shop.canal/batch=000000/dump.jsonl" in out


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    streams=st.lists(change_streams(), min_size=1, max_size=3),
    tz=st.sampled_from(["UTC", "Asia/Shanghai"]),
    merge=st.lists(st.booleans(), min_size=1, max_size=50),
    bad=st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(BAD)), max_size=8),
)
def test_generated_streams_with_malformed_messages(tmp_path_factory, monkeypatch, streams, tz, merge, bad):
    tmp = tmp_path_factory.mktemp("gen")
    src = tmp / "in"
    for n, events in enumerate(streams):
        lines = canal_stream(events, tz, merge)
        for at, message in bad:
            lines.insert(at % (len(lines) + 1), message)
        if lines:
            write_lines(src / f"s{n}.canal.jsonl", lines)
    if not src.exists():
        return
    assert_same_both_ways(tmp, src, monkeypatch)


def test_spark_run_native_equals_python(spark, tmp_path, corpus):
    """Two real local[2] runs over the same files: the executors' Python workers with the core
    (unless the suite runs with ``CDC_SMT_NATIVE=0``), then with ``CDC_SMT_NATIVE=0`` (Spark hands
    ``sc.environment`` to the workers it starts for a job): the same files, byte for byte."""
    src = tmp_path / "in"
    corpus_and_bench_inputs(src, corpus)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    fast_job, slow_job = files_job(tmp_path / "a", src), files_job(tmp_path / "b", src)
    fast = run(spark, fast_job)
    env = spark.sparkContext.environment
    env["CDC_SMT_NATIVE"] = "0"
    try:
        slow = run(spark, slow_job)
    finally:
        del env["CDC_SMT_NATIVE"]
    assert fast.totals == slow.totals
    assert fast.totals.records > 1000 and fast.totals.dead_letters > 0
    fast_out, slow_out = tree(tmp_path / "a" / "out"), tree(tmp_path / "b" / "out")
    assert list(fast_out) == list(slow_out)
    for name in fast_out:
        assert fast_out[name] == slow_out[name], name
    assert orjson.loads(fast_out["_dead_letters/batch=000001/sub__mixed.canal.jsonl"].splitlines()[0])["error"]


# -- rows in the mapInArrow batches (emit=records: Spark's Kafka source, file rows) ------------------


def kafka_rows(values: list[bytes | None], partitions: int) -> list[pa.RecordBatch]:
    """Rows as Spark's Kafka source hands them over: partitions in runs, two batches."""
    rows = []
    for p in range(partitions):
        for i, v in enumerate(values[p::partitions]):
            rows.append(
                {"key": b"k%d" % i, "value": v, "topic": "in", "partition": p, "offset": 10 + i,
                 "timestamp": 1_700_000_000_000_000 + i, "timestampType": 0,
                 "headers": [{"key": "h", "value": b"%d" % i}] if i % 3 == 0 else None}
            )  # fmt: skip
    table = pa.Table.from_pylist(rows, schema=KAFKA_ARROW)
    half = len(rows) // 2 + 1  # a partition's run split across the two batches
    return [b for b in (table.slice(0, half), table.slice(half)) for b in b.to_batches()]


def run_rows(tmp: Path, job_path: Path, batches: list[pa.RecordBatch], *, native_on: bool, monkeypatch, **over: Any):
    from cdc_smt.connector.spark.process import TaskPlan, run_task

    arrow_rows = count_arrow_rows(monkeypatch, native_on)
    job, settings = load(job_path, **over)
    sink = type(settings.sink)(settings.sink.type, str(tmp / "out"))
    dead = type(settings.dead_letters)("jsonl", str(tmp / "out" / "_dead_letters"))
    plan = TaskPlan(job=job, batch_id=0, sink=sink, dead_letters=dead, file_topic="in")
    (summary,) = list(run_task(plan, iter(batches)))
    summaries = [{k: v for k, v in s.items() if k != "seconds"} for s in summary.to_pylist()]
    # the native run handed every row to the plan as arrays; the Python run none
    assert sum(arrow_rows) == (sum(b.num_rows for b in batches) if native_on else 0)
    return tree(tmp / "out"), summaries


@pytest.mark.parametrize("sink_type", ["jsonl", "parquet"])
def test_kafka_rows_native_equals_python(tmp_path, monkeypatch, sink_type):
    values: list[bytes | None] = canal_messages(900, seed=11)
    for at, bad in zip(range(5, 900, 37), BAD, strict=False):
        values[at] = bad
    values[100] = None  # a tombstone
    batches = kafka_rows(values, 3)
    job_path = files_job(tmp_path, tmp_path)
    fast = run_rows(
        tmp_path / "native", job_path, batches, native_on=True, monkeypatch=monkeypatch, sink_type=sink_type
    )
    slow = run_rows(
        tmp_path / "python", job_path, batches, native_on=False, monkeypatch=monkeypatch, sink_type=sink_type
    )
    assert fast == slow
    assert len(fast[1]) == 3 and sum(s["dead_letters"] for s in fast[1]) >= 10
    assert any(k.startswith("_dead_letters/") for k in fast[0])


def test_file_rows_native_equals_python(tmp_path, monkeypatch):
    """``emit=records`` file rows: several files' rows in one batch, each a stream."""
    values = canal_messages(400, seed=12) + BAD
    rows = [
        {"key": None, "value": v, "topic": None, "partition": None, "offset": None, "timestamp": None,
         "timestampType": None, "headers": None, "file": f"/data/f{i % 2}.canal.jsonl", "position": 1 + i // 2}
        for i, v in enumerate(values)
    ]  # fmt: skip
    rows.sort(key=lambda r: r["file"])
    schema = KAFKA_ARROW.append(pa.field("file", pa.string())).append(pa.field("position", pa.int64()))
    batches = pa.Table.from_pylist(rows, schema=schema).to_batches(max_chunksize=150)
    job_path = files_job(tmp_path, tmp_path)
    fast = run_rows(tmp_path / "native", job_path, batches, native_on=True, monkeypatch=monkeypatch)
    slow = run_rows(tmp_path / "python", job_path, batches, native_on=False, monkeypatch=monkeypatch)
    assert fast == slow
    assert [s["stream"] for s in fast[1]] == ["f0.canal", "f1.canal"]
