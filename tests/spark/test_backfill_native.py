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

import os
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.codec import canal_messages
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


def run_tasks(tmp: Path, job_path: Path, src: Path, *, native_on: bool, monkeypatch: pytest.MonkeyPatch, **over: Any):
    """Each file of ``src`` as one task (``run_task`` over its slice row); ``(outputs, summaries)``."""
    from cdc_smt.connector.spark.datasource import list_files
    from cdc_smt.connector.spark.process import SUMMARY_SCHEMA, TaskPlan, run_task

    monkeypatch.setenv("CDC_SMT_NATIVE", "1" if native_on else "0")
    job, settings = load(job_path, **over)
    sink = type(settings.sink)(settings.sink.type, str(tmp / "out"))
    dead = type(settings.dead_letters)("jsonl", str(tmp / "out" / "_dead_letters"))
    plan = TaskPlan(job=job, batch_id=0, sink=sink, dead_letters=dead, source_root=str(src))
    summaries = []
    for path in list_files(str(src)):
        chain = job.build_chain()
        assert (chain.native is not None) is native_on
        row = {"topic": None, "partition": None, "start": None, "end": None, "file": path}
        row["binary"] = settings.source.type == "avro"
        batch = pa.RecordBatch.from_pylist([row], schema=pa.schema(
            [("topic", pa.string()), ("partition", pa.int32()), ("start", pa.int64()), ("end", pa.int64()),
             ("file", pa.string()), ("binary", pa.bool_())]
        ))  # fmt: skip
        (summary,) = list(run_task(plan, iter([batch])))
        assert summary.schema == SUMMARY_SCHEMA
        summaries.extend({k: v for k, v in s.items() if k != "seconds"} for s in summary.to_pylist())
    return tree(tmp / "out"), summaries


def assert_same_both_ways(tmp: Path, src: Path, monkeypatch: pytest.MonkeyPatch, **over: Any) -> dict[str, bytes]:
    job_path = files_job(tmp, src)
    fast = run_tasks(tmp / "native", job_path, src, native_on=True, monkeypatch=monkeypatch, **over)
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
    src = tmp_path / "in"
    corpus_and_bench_inputs(src, corpus)
    out = assert_same_both_ways(tmp_path, src, monkeypatch, sink_type=sink_type)
    assert any(name.startswith("_dead_letters/") for name in out)  # the malformed ones
    assert sum(len(v) for k, v in out.items() if not k.startswith("_")) > 100_000


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


def test_spark_run_with_the_native_core_equals_the_python_tasks(spark, tmp_path, corpus, monkeypatch):
    """A real local[2] run (the executors' Python workers use the core unless the suite runs with
    ``CDC_SMT_NATIVE=0``) writes what the Python path's tasks write."""
    src = tmp_path / "in"
    corpus_and_bench_inputs(src, corpus)
    job_path = files_job(tmp_path, src)
    progress = run(spark, job_path)
    spark_out = tree(tmp_path / "out")
    python_out, summaries = run_tasks(tmp_path / "python", job_path, src, native_on=False, monkeypatch=monkeypatch)
    assert progress.totals.records == sum(s["records"] for s in summaries)
    assert progress.totals.dead_letters == sum(s["dead_letters"] for s in summaries)
    # Spark numbers the micro-batches (one file each); the tasks all wrote batch 0
    renamed = {k.replace("batch=000001", "batch=000000"): v for k, v in spark_out.items()}
    assert renamed == python_out
    assert os.environ.get("CDC_SMT_NATIVE", "1") == "0" or native.enabled()
    assert orjson.loads(python_out["_dead_letters/batch=000000/sub__mixed.canal.jsonl"].splitlines()[0])["error"]
