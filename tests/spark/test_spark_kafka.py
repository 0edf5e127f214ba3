"""Spark's own Kafka connector against Apache Kafka, end to end.

The input is written with Spark's Kafka sink (``format("kafka")``, keys,
headers and a partition column); the backfill reads it with ``source.type:
spark-kafka`` (Spark's Kafka source) and with the Python Data Source (``kafka``),
and both must give the same output per key: over an offset range, after a
SIGKILL and resume, and through the SASL_PLAINTEXT listener with PLAIN and SCRAM
users.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from bench.codec import canal_messages
from cdc_smt.connector import kafka
from cdc_smt.transforms.model import Record
from tests.spark.conftest import kill_after_batch, run_async, start_backfill

pytestmark = [pytest.mark.spark, pytest.mark.integration, pytest.mark.timeout(600)]
IN_PARTITIONS, OUT_PARTITIONS = 2, 3


def source_records(values: list[bytes]) -> list[Record]:
    """Keyed (40 keys), placed where the Java client's default partitioner puts them."""
    out = []
    for i, v in enumerate(values):
        key = b'{"id":%d}' % (i % 40)
        out.append(
            Record(
                value=v, key=key, partition=kafka.partition_for(key, IN_PARTITIONS), headers=[("seq", str(i).encode())]
            )
        )
    return out


def spark_write(spark: Any, bootstrap: str, topic: str, records: list[Record]) -> None:
    """Write through Spark's Kafka sink, one task so each partition gets the records in order."""
    rows = [(r.key, r.value, [(k, v) for k, v in r.headers], r.partition) for r in records]
    schema = "key binary, value binary, headers array<struct<key:string,value:binary>>, partition int"
    (
        spark.createDataFrame(rows, schema)
        .coalesce(1)
        .write.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("includeHeaders", "true")
        .save()
    )


def prepare(spark: Any, apache: Any, name: str, count: int, seed: int, *, bad_every: int = 0) -> list[Record]:
    """The topics, and ``count`` messages written with Spark's sink (every ``bad_every``-th not JSON)."""
    topics = {f"{name}.in": IN_PARTITIONS, f"{name}.out": OUT_PARTITIONS, f"{name}.ref": OUT_PARTITIONS}
    run_async(kafka.create_topics(apache.bootstrap, {**topics, f"{name}.dlq": 1, f"{name}.refdlq": 1}))
    values = canal_messages(count, seed=seed)
    if bad_every:
        values = [b"{not json %d" % i if i % bad_every == bad_every - 1 else v for i, v in enumerate(values)]
    records = source_records(values)
    spark_write(spark, apache.bootstrap, f"{name}.in", records)
    return records


def job_file(
    tmp: Path,
    name: str,
    bootstrap: str,
    source_type: str,
    out: str,
    jars: list[Path],
    *,
    kafka_extra: dict | None = None,
    batch: int = 400,
    sink_type: str = "kafka",
    dlq: str = "dlq",
    dead_letters: dict | None = None,
    **source: Any,
) -> Path:
    doc = {
        "id": f"{name}-{source_type}-{out}",
        "kafka": {"bootstrap_servers": bootstrap, **(kafka_extra or {})},
        "source": {"topics": [f"{name}.in"], "format": "canal-json"},
        "sink": {"topic": f"{name}.{out}", "format": "debezium-json"},
        "errors": {"tolerance": "all", "dead_letter_topic": f"{name}.{dlq}"},
        "backfill": {
            "source": {"type": source_type, "max_records_per_batch": batch, **source},
            "sink": {"type": sink_type},
            "checkpoint": str(tmp / f"{name}-{source_type}-{out}-ckpt"),
            "spark_conf": {"spark.jars": ",".join(str(j) for j in jars)},
        },
    }
    if dead_letters:
        doc["backfill"]["dead_letters"] = dead_letters
    path = tmp / f"{name}-{source_type}-{out}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def run(spark: Any, path: Path) -> Any:
    from cdc_smt.connector.spark.backfill import run as run_backfill
    from cdc_smt.connector.spark.settings import Overrides, load

    job, settings = load(path, Overrides())
    return run_backfill(job, settings, spark=spark, progress_out=None)


def per_key(bootstrap: str, topic: str) -> dict[tuple[int, bytes | None], list[bytes]]:
    """Output values per (partition, key), in offset order (the only order a backfill defines)."""
    out: dict[tuple[int, bytes | None], list[bytes]] = {}
    for r in run_async(kafka.consume_all(bootstrap, topic)):
        if r.value is not None:
            out.setdefault((r.partition, r.key), []).append(r.value)
    return out


def test_spark_kafka_source_reads_an_offset_range_like_the_python_source(spark, spark_kafka, apache, tmp_path) -> None:
    name = "sk-range"
    records = prepare(spark, apache, name, 1500, seed=21)
    sizes = Counter(r.partition for r in records)
    start = {"0": 100, "1": 50}
    until = {"0": sizes[0] - 100, "1": sizes[1] - 20}
    rng = {"from": {"offsets": {f"{name}.in": start}}, "until": {"offsets": {f"{name}.in": until}}}
    wanted = sum(until[p] - start[p] for p in start)

    native = run(spark, job_file(tmp_path, name, apache.bootstrap, "spark-kafka", "out", spark_kafka, **rng))
    python = run(spark, job_file(tmp_path, name, apache.bootstrap, "kafka", "ref", spark_kafka, **rng))
    assert native.totals.records == python.totals.records == wanted
    assert native.totals.batches >= 2

    got, expected = per_key(apache.bootstrap, f"{name}.out"), per_key(apache.bootstrap, f"{name}.ref")
    assert sum(map(len, expected.values())) == wanted - python.totals.dead_letters
    assert got == expected
    # Exactly the range: the records Spark wrote at those offsets, in order per partition.
    source = run_async(kafka.consume_all(apache.bootstrap, f"{name}.in"))
    assert [(r.key, r.value, r.partition, list(r.headers)) for r in source] == [
        (r.key, r.value, r.partition, list(r.headers))
        for p in range(IN_PARTITIONS)
        for r in records
        if r.partition == p
    ]
    chosen = [r for r in source if start[str(r.partition)] <= r.offset < until[str(r.partition)]]
    assert len(chosen) == wanted


@pytest.mark.parametrize("sink_type", ["kafka", "spark-kafka"])
def test_spark_kafka_resume_after_sigkill_loses_nothing_and_does_not_resend_finished_batches(
    spark, spark_kafka, apache, tmp_path, sink_type: str
) -> None:
    """Spark's Kafka source, with either Kafka sink (cdc-smt's producer, or Spark's writer)."""
    name = f"sk-resume-{sink_type}"
    prepare(spark, apache, name, 3000, seed=13)
    path = job_file(tmp_path, name, apache.bootstrap, "spark-kafka", "out", spark_kafka, batch=300, sink_type=sink_type)
    kill_after_batch(start_backfill(path))
    checkpoint = tmp_path / f"{name}-spark-kafka-out-ckpt"
    committed = sorted(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
    assert committed and committed[-1] < 9, committed  # interrupted well before the end (10 batches)
    lines = (checkpoint / "offsets" / str(committed[-1])).read_text().splitlines()
    done = {int(p): o for p, o in orjson.loads(lines[-1])[f"{name}.in"].items()}

    second = run(spark, path)
    assert 0 < second.totals.records < 3000  # resumed, not started over
    reference = run(spark, job_file(tmp_path, name, apache.bootstrap, "kafka", "ref", spark_kafka, batch=300))
    assert reference.totals.records == 3000

    got, expected = per_key(apache.bootstrap, f"{name}.out"), per_key(apache.bootstrap, f"{name}.ref")
    assert set(got) == set(expected)
    for key, wanted in expected.items():
        have = got[key]
        assert set(wanted) <= set(have), "lost an output"
        assert list(dict.fromkeys(have)) == list(dict.fromkeys(wanted))  # per-key order survives the resume
    # Outputs of records in committed batches were sent exactly once.
    from cdc_smt.connector.spark.settings import Overrides, load

    job, _ = load(path, Overrides())
    chain = job.build_chain()
    sent = Counter(v for vs in got.values() for v in vs)
    finished = [r for r in run_async(kafka.consume_all(apache.bootstrap, f"{name}.in")) if r.offset < done[r.partition]]
    assert finished
    for record in finished:
        for out in chain.process(record).outputs:
            if out.value is not None:
                assert sent[out.value] == 1, (record.partition, record.offset)


def full_contents(bootstrap: str, topic: str) -> dict[tuple[int, bytes | None], list[tuple[Any, ...]]]:
    """``(value, headers)`` per (partition, key) in offset order."""
    out: dict[tuple[int, bytes | None], list[tuple[Any, ...]]] = {}
    for r in run_async(kafka.consume_all(bootstrap, topic)):
        out.setdefault((r.partition, r.key), []).append((r.value, [(k, v) for k, v in r.headers]))
    return out


def test_spark_kafka_sink_writes_what_the_kafka_sink_writes(spark, spark_kafka, apache, tmp_path) -> None:
    """Over an offset range, Spark's format("kafka") writer and cdc-smt's producer put the same
    records (values, keys, headers) in the same partitions in the same order, dead letters included."""
    name = "sk-sink"
    records = prepare(spark, apache, name, 1200, seed=31, bad_every=97)
    sizes = Counter(r.partition for r in records)
    start = {"0": 30, "1": 10}
    until = {"0": sizes[0] - 40, "1": sizes[1] - 5}
    rng = {"from": {"offsets": {f"{name}.in": start}}, "until": {"offsets": {f"{name}.in": until}}}
    wanted = sum(until[p] - start[p] for p in start)

    spark_sink = run(
        spark, job_file(tmp_path, name, apache.bootstrap, "kafka", "out", spark_kafka, sink_type="spark-kafka", **rng)
    )
    own_sink = run(spark, job_file(tmp_path, name, apache.bootstrap, "kafka", "ref", spark_kafka, dlq="refdlq", **rng))
    assert spark_sink.totals.records == own_sink.totals.records == wanted
    assert spark_sink.totals.batches >= 2
    assert spark_sink.totals.dead_letters == own_sink.totals.dead_letters > 0
    got, expected = full_contents(apache.bootstrap, f"{name}.out"), full_contents(apache.bootstrap, f"{name}.ref")
    assert sum(map(len, expected.values())) == own_sink.totals.outputs == spark_sink.totals.outputs  # tombstones too
    assert got == expected
    dead, dead_ref = full_contents(apache.bootstrap, f"{name}.dlq"), full_contents(apache.bootstrap, f"{name}.refdlq")
    assert sum(map(len, dead.values())) == spark_sink.totals.dead_letters
    assert dead == dead_ref


def test_spark_kafka_sink_through_sasl_with_dead_letters_in_files(spark, spark_kafka, apache, tmp_path) -> None:
    """The writer reaches the SASL listener with the mapped options; dead letters go to the files configured."""
    from cdc_smt.connector.apache_kafka import USERS

    name = "sk-sink-sasl"
    records = prepare(spark, apache, name, 400, seed=9, bad_every=50)
    sasl = {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_username": "bob",
        "sasl_password": USERS["bob"],
    }
    dead_dir = tmp_path / "dead"
    path = job_file(
        tmp_path,
        name,
        apache.server.sasl_bootstrap,
        "kafka",
        "out",
        spark_kafka,
        kafka_extra=sasl,
        batch=150,
        sink_type="spark-kafka",
        dead_letters={"type": "jsonl", "path": str(dead_dir)},
    )
    progress = run(spark, path)
    assert progress.totals.records == len(records)
    assert progress.totals.dead_letters == 8
    got = per_key(apache.bootstrap, f"{name}.out")
    assert sum(map(len, got.values())) == len(records) - 8
    entries = [
        orjson.loads(line) for f in sorted(dead_dir.glob("batch=*/*.jsonl")) for line in f.read_bytes().splitlines()
    ]
    assert sorted(e["message"] for e in entries) == sorted(
        r.value.decode() for r in records if r.value.startswith(b"{not")
    )
    assert all(e["topic"] == f"{name}.in" and e["stage"] == "decode" for e in entries)
    assert not run_async(kafka.consume_all(apache.bootstrap, f"{name}.dlq"))


SASL = [
    pytest.param("PLAIN", id="plain"),
    pytest.param("SCRAM-SHA-256", id="scram-sha-256"),
    pytest.param("SCRAM-SHA-512", id="scram-sha-512"),
]


@pytest.mark.parametrize("source_type", ["spark-kafka", "kafka"])
@pytest.mark.parametrize("mechanism", SASL)
def test_sasl_settings_reach_the_broker(spark, spark_kafka, apache, tmp_path, mechanism: str, source_type: str) -> None:
    from cdc_smt.connector.apache_kafka import USERS

    name = f"sk-sasl-{mechanism.lower()}-{source_type}"
    records = prepare(spark, apache, name, 300, seed=3)
    user = "alice"
    sasl = {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_username": user,
        "sasl_password": USERS[user],
    }
    progress = run(
        spark,
        job_file(
            tmp_path, name, apache.server.sasl_bootstrap, source_type, "out", spark_kafka, kafka_extra=sasl, batch=100
        ),
    )
    assert progress.totals.records == len(records)
    got = per_key(apache.bootstrap, f"{name}.out")
    assert sum(map(len, got.values())) == len(records) - progress.totals.dead_letters


def test_the_sasl_listener_refuses_a_wrong_password(apache) -> None:
    """The listener really authenticates (so the tests above prove the mapping)."""
    from cdc_smt.connector.jobconfig import KafkaSettings
    from cdc_smt.connector.kafka.errors import KafkaUnavailable

    for mechanism in ("PLAIN", "SCRAM-SHA-256"):
        bad = KafkaSettings(
            (apache.server.sasl_bootstrap,),
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism=mechanism,
            sasl_username="alice",
            sasl_password="wrong",
        )
        # The start-up probe reports the SASL failure at once, by name (no waiting out the timeout).
        with pytest.raises(KafkaUnavailable, match="SASL authentication failed") as failed:
            run_async(kafka.wait_until_ready(bad.aiokafka_kwargs(), timeout=30))
        assert "Authentication failed" in str(failed.value)
        assert failed.value.waited is None  # reported at once, not after the timeout
