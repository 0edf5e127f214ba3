"""A broker outage in the middle of a backfill reading Kafka: Apache Kafka is SIGKILLed after
the first micro-batches and started again on the same data directory 12 s later (about 25-30 s
without a broker as clients see it, start-up included).

Both Kafka sources ride it out: the Python Data Source waits for the broker (connecting,
planning and slice reads retry for ``backfill.source.retry_timeout_s``, 60 s by default), and
Spark's own connector gets poll and offset-lookup timeouts of the same length. The backfill
finishes without being restarted, and the output is complete: with a file sink, each source
partition's output is exactly the chain's output over it (a re-run micro-batch replaces its
files); with Spark's Kafka writer, every record's outputs reach the topic in per-key order
(at-least-once: duplicates allowed, nothing lost).

With the ``kafka`` sink (cdc-smt's producer in the tasks) the run may still stop with one
``cdc-smt: error:`` line when a task connects its producer while the broker is down; then a
re-run resumes from the checkpoint and nothing is lost.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.codec import canal_messages
from cdc_smt.connector import kafka
from cdc_smt.transforms.model import Record
from tests.spark.conftest import run_async, start_backfill

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.timeout(600)]
DOWN_SECONDS = 12.0
COUNT = 4000


def job_path(tmp_path: Path, name: str, bootstrap: str, source_type: str, sink_type: str, jars: list[Path]) -> Path:
    backfill: dict = {
        "source": {"type": source_type, "max_records_per_batch": 250},
        "checkpoint": str(tmp_path / "ckpt"),
        "spark_conf": {"spark.jars": ",".join(str(j) for j in jars)},
    }
    if sink_type == "jsonl":
        backfill["sink"] = {"type": "jsonl", "path": str(tmp_path / "out")}
        backfill["dead_letters"] = {"type": "jsonl", "path": str(tmp_path / "dead")}
    else:
        backfill["sink"] = {"type": sink_type}
    doc = {
        "id": name,
        "kafka": {"bootstrap_servers": bootstrap},
        "source": {"topics": [f"{name}.in"], "format": "canal-json"},
        "sink": {"topic": f"{name}.out", "format": "debezium-json"},
        "errors": {"tolerance": "all", "dead_letter_topic": f"{name}.dlq"},
        # Outputs not acknowledged within the request timeout fail the batch: ride out the outage.
        "producer": {"request_timeout_ms": 120_000},
        "backfill": backfill,
    }
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def run_through_an_outage(apache: Any, path: Path) -> tuple[int, list[str]]:
    """Start the backfill as a process, kill the broker after its second micro-batch, restart it
    12 s later; the exit code and stderr lines."""
    proc = start_backfill(path)
    lines: list[str] = []
    reached = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("backfill: batch 1:"):
                reached.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert reached.wait(240), "".join(lines[-30:])
        apache.server.stop(kill=True)
        try:
            time.sleep(DOWN_SECONDS)
        finally:
            apache.server.start()
        code = proc.wait(360)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    reader.join(10)
    return code, lines


def produce_input(apache: Any, name: str) -> None:
    run_async(kafka.create_topics(apache.bootstrap, {f"{name}.in": 2, f"{name}.out": 3, f"{name}.dlq": 1}))
    values = canal_messages(COUNT, seed=17)
    records = [Record(value=v, key=b'{"id":%d}' % (i % 40)) for i, v in enumerate(values)]
    run_async(kafka.produce_records(apache.bootstrap, f"{name}.in", records))


def source_by_partition(apache: Any, name: str) -> dict[int, list[Record]]:
    out: dict[int, list[Record]] = {}
    for r in run_async(kafka.consume_all(apache.bootstrap, f"{name}.in")):
        out.setdefault(r.partition, []).append(r)
    return out


def assert_every_output_in_key_order(apache: Any, name: str, job: Any, source: dict[int, list[Record]]) -> int:
    """Every record's outputs are on the output topic, in per-key order (at-least-once); the duplicates."""
    chain = job.build_chain()
    wanted: dict[bytes | None, list[bytes]] = {}
    for _, records in sorted(source.items()):  # partition, then offset order: each key's order
        for record in records:
            for out in chain.process(record).outputs:
                if out.value is not None:
                    wanted.setdefault(out.key, []).append(out.value)
    have: dict[bytes | None, list[bytes]] = {}
    for r in run_async(kafka.consume_all(apache.bootstrap, f"{name}.out")):
        if r.value is not None:
            have.setdefault(r.key, []).append(r.value)
    assert set(have) == set(wanted)
    for key, values in wanted.items():
        assert set(values) <= set(have[key]), "lost an output"
        assert list(dict.fromkeys(have[key])) == list(dict.fromkeys(values))
    return sum(map(len, have.values())) - sum(map(len, wanted.values()))


@pytest.mark.parametrize(
    ("source_type", "sink_type"),
    [("kafka", "jsonl"), ("spark-kafka", "jsonl"), ("spark-kafka", "spark-kafka")],
)
def test_backfill_rides_out_a_broker_outage(
    spark, spark_kafka, apache, tmp_path, source_type: str, sink_type: str
) -> None:
    name = f"outage-{source_type}-{sink_type}"
    produce_input(apache, name)
    path = job_path(tmp_path, name, apache.bootstrap, source_type, sink_type, spark_kafka)
    code, lines = run_through_an_outage(apache, path)
    text = "".join(lines)
    assert code == 0, text[-3000:]
    assert "cdc-smt: error" not in text
    batches = [line for line in lines if line.startswith("backfill: batch ")]
    assert len(batches) >= 3, text[-3000:]  # micro-batches ran after the outage too

    from cdc_smt.connector.spark.settings import Overrides, load

    job, _ = load(path, Overrides())
    source = source_by_partition(apache, name)
    if sink_type == "jsonl":
        # Exactly the chain's output per source partition, in order: nothing lost, nothing twice.
        files = sorted((tmp_path / "out").glob("topic=*/batch=*/*.jsonl"), key=lambda p: (p.stem, p.parent.name))
        got: dict[str, list[bytes]] = {}
        for f in files:
            got.setdefault(f.stem, []).extend(f.read_bytes().splitlines())
        expected: dict[str, list[bytes]] = {}
        for partition, records in sorted(source.items()):
            chain = job.build_chain()
            expected[f"{name}.in-{partition}"] = [
                o.value for r in records for o in chain.process(r).outputs if o.value is not None
            ]
        assert got == expected
        return
    duplicates = assert_every_output_in_key_order(apache, name, job, source)
    print(f"{name}: {duplicates} duplicates after the outage")


def test_with_cdc_smts_producer_as_sink_the_outage_stops_or_finishes_and_a_rerun_loses_nothing(
    spark, spark_kafka, apache, tmp_path
) -> None:
    name = "outage-kafka-kafka"
    produce_input(apache, name)
    path = job_path(tmp_path, name, apache.bootstrap, "kafka", "kafka", spark_kafka)
    code, lines = run_through_an_outage(apache, path)
    text = "".join(lines)
    if code != 0:
        last = [line for line in lines if line.startswith("cdc-smt: error:")]
        assert last, text[-3000:]
        resumed = run(spark, path)
        assert 0 < resumed.totals.records < COUNT
    print(f"{name}: {'finished by itself' if code == 0 else 'stopped: ' + last[-1].strip()}")
    from cdc_smt.connector.spark.settings import Overrides, load

    job, _ = load(path, Overrides())
    assert_every_output_in_key_order(apache, name, job, source_by_partition(apache, name))


def run(spark, path: Path):
    from cdc_smt.connector.spark.backfill import run as run_backfill
    from cdc_smt.connector.spark.settings import Overrides, load

    job, settings = load(path, Overrides())
    return run_backfill(job, settings, spark=spark, progress_out=None)
