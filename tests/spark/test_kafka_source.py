"""The backfill's Kafka source at its edges: empty ranges, and a broker that is not there yet.

Spark hands a Python Data Source whose plan has no partitions one placeholder
partition; the readers took it for a slice and failed an assert. An empty topic,
or a partition with no records in the range, is an empty batch.

A Kafka session (planning, slice reads, warm-up) waits up to
``backfill.source.retry_timeout_s`` for a broker that does not answer: it
connects once the broker is there, and otherwise fails with one line naming
the address and the cause.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from bench.codec import canal_messages
from cdc_smt.connector import kafka
from cdc_smt.connector.kafka.errors import KafkaUnavailable
from cdc_smt.transforms.model import Record
from tests.spark.conftest import run_async

pytestmark = pytest.mark.spark


def kafka_frame(spark: Any, bootstrap: str, topic: str, **options: str) -> Any:
    from cdc_smt.connector.jobconfig import KafkaSettings
    from cdc_smt.connector.kafka.settings import connection_json
    from cdc_smt.connector.spark import datasource

    datasource.register(spark)
    reader = (
        spark.read.format(datasource.KAFKA_SOURCE)
        .option("connection.secret", connection_json(KafkaSettings((bootstrap,))))
        .option("topics", topic)
    )
    return reader.options(**options).load()


def test_an_empty_topic_is_an_empty_batch(spark, apache) -> None:
    run_async(kafka.create_topics(apache.bootstrap, {"empty-src.in": 2}))
    for emit in ("records", "slices"):
        assert kafka_frame(spark, apache.bootstrap, "empty-src.in", emit=emit).collect() == []


def test_an_empty_partition_in_the_range_reads_only_the_others(spark, apache) -> None:
    run_async(kafka.create_topics(apache.bootstrap, {"half-empty.in": 2}))
    run_async(
        kafka.produce_records(
            apache.bootstrap, "half-empty.in", [Record(value=b"v%d" % i, partition=1) for i in range(5)]
        )
    )
    rows = kafka_frame(spark, apache.bootstrap, "half-empty.in").collect()
    assert sorted((r.partition, r.offset, r.value) for r in rows) == [(1, i, b"v%d" % i) for i in range(5)]


def test_an_empty_directory_is_an_empty_batch(spark, tmp_path) -> None:
    from cdc_smt.connector.spark import datasource

    datasource.register(spark)
    (tmp_path / "none").mkdir()
    df = spark.read.format(datasource.FILE_SOURCE).option("path", str(tmp_path / "none")).load()
    assert df.collect() == []


def backfill_job(tmp_path: Path, bootstrap: str, name: str, **backfill: Any) -> Path:
    doc = {
        "id": name,
        "kafka": {"bootstrap_servers": bootstrap},
        "source": {"topics": [f"{name}.in"], "format": "canal-json"},
        "sink": {"format": "debezium-json", "topic": "{source_topic}.out"},
        "errors": {"tolerance": "all"},
        "backfill": {
            "source": {"type": "kafka", "max_records_per_batch": 100},
            "sink": {"type": "jsonl", "path": str(tmp_path / f"{name}-out")},
            "checkpoint": str(tmp_path / f"{name}-ckpt"),
            **backfill,
        },
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def run(spark: Any, path: Path) -> Any:
    from cdc_smt.connector.spark.backfill import run as run_backfill
    from cdc_smt.connector.spark.settings import Overrides, load

    job, settings = load(path, Overrides())
    return run_backfill(job, settings, spark=spark, progress_out=None)


def test_a_backfill_of_an_empty_topic_reads_nothing_and_finishes(spark, apache, tmp_path) -> None:
    run_async(kafka.create_topics(apache.bootstrap, {"bf-empty.in": 2}))
    # The DDL first pass reads the whole range with a batch read: the path that failed the assert.
    path = backfill_job(tmp_path, apache.bootstrap, "bf-empty", state={"ddl": "first-pass"})
    progress = run(spark, path)
    assert progress.totals.records == progress.totals.outputs == 0


def test_a_backfill_with_an_empty_partition_converts_the_others(spark, apache, tmp_path) -> None:
    name = "bf-half"
    run_async(kafka.create_topics(apache.bootstrap, {f"{name}.in": 3}))
    values = canal_messages(250, seed=5)
    run_async(
        kafka.produce_records(
            apache.bootstrap, f"{name}.in", [Record(value=v, partition=2 * (i % 2)) for i, v in enumerate(values)]
        )
    )
    path = backfill_job(tmp_path, apache.bootstrap, name, state={"ddl": "first-pass"})
    progress = run(spark, path)
    assert progress.totals.records == 250
    out = sorted((tmp_path / f"{name}-out").glob("topic=*/batch=*/*.jsonl"))
    streams = {p.stem for p in out}
    assert streams == {f"{name}.in-0", f"{name}.in-2"}
    lines = [orjson.loads(line) for p in out for line in p.read_bytes().splitlines()]
    assert len(lines) == progress.totals.written > 0


# -- a broker that does not answer ----------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_session_gives_up_after_the_retry_time_naming_the_broker_and_cause() -> None:
    from cdc_smt.connector.spark.kafkaio import KafkaSession, plan_range
    from cdc_smt.connector.spark.settings import Position

    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    conn = {"bootstrap_servers": [address]}
    with pytest.raises(KafkaUnavailable) as failed, KafkaSession(conn, retry_s=1.5):
        pass
    text = str(failed.value)
    assert f"cannot reach Kafka at {address}: connection refused" in text
    assert "backfill.source.retry_timeout_s" in text
    with pytest.raises(KafkaUnavailable, match="connection refused"):
        plan_range(conn, ["t"], None, Position("earliest"), Position("latest"), retry_s=1.0)


def test_a_session_started_before_the_broker_connects_once_it_is_up() -> None:
    """The session starts connecting two seconds before the broker is there: it waits, no error."""
    from cdc_smt.connector.broker import EmbeddedBroker
    from cdc_smt.connector.spark.kafkaio import KafkaSession

    port = free_port()
    outcome: dict[str, Any] = {}

    def connect() -> None:
        try:
            with KafkaSession({"bootstrap_servers": [f"127.0.0.1:{port}"]}, retry_s=60):
                outcome["connected"] = time.monotonic()
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            outcome["error"] = exc

    session = threading.Thread(target=connect)
    session.start()
    time.sleep(2.0)
    broker = EmbeddedBroker(port=port)
    launched = time.monotonic()  # nothing listened on the port before this
    try:
        broker.start()
        session.join(90)
    finally:
        broker.stop()
    assert "error" not in outcome, outcome.get("error")
    assert outcome["connected"] >= launched  # it connected to the broker started after it began
