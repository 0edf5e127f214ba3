"""Flink's own Kafka connector reads the worker's output topic on Apache Kafka (issue 11 §5).

Optional suite (``./dev flink``): skipped when PyFlink is not installed, and
with the reason when Apache Kafka or ``flink-sql-connector-kafka`` (resolved
with Maven for the installed PyFlink: ``connector.apache_kafka.flink_kafka_jars``)
cannot be had. A corpus changelog goes into a topic, ``cdc-smt worker``
converts it topic to topic, and Flink SQL reads the output topic with
``'connector' = 'kafka'`` and its ``debezium-json`` / ``canal-json`` format.
The table Flink rebuilds must equal the one it rebuilds from the original
file, and cdc-smt's own replay of the input (``transforms.changelog``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyflink", reason="PyFlink not installed (pip install -e '.[flink]' or ./dev flink)")

from cdc_smt.connector.apache_kafka import ApacheKafkaError, flink_kafka_jars  # noqa: E402
from cdc_smt.transforms.changelog import replay  # noqa: E402
from cdc_smt.transforms.formats import get_codec  # noqa: E402
from cdc_smt.transforms.model import Record  # noqa: E402
from tests.flink.test_flink_interop import CORPUS_FILES, PRODUCTS, convert_file, flink_table  # noqa: E402
from tests.integration.helpers import (  # noqa: E402
    KafkaCluster,
    WorkerProcess,
    apache_kafka,
    consume,
    job_doc,
    produce,
)

pytestmark = pytest.mark.flink

#: (the input's format, the worker's output format Flink reads from Kafka)
CASES = (("canal-json", "debezium-json"), ("debezium-json", "canal-json"), ("canal-json", "canal-json"))


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaCluster]:
    with apache_kafka() as server:
        yield KafkaCluster(server.bootstrap, "apache", server)


@pytest.fixture(scope="module")
def flink_kafka():
    """A Flink table environment with the Kafka SQL connector on its class path."""
    try:
        jars = flink_kafka_jars()
    except ApacheKafkaError as exc:
        pytest.skip(f"Flink's Kafka connector unavailable: {exc}")
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", "1")
    env.get_config().set("pipeline.jars", ";".join(p.as_uri() for p in jars))
    return env


def kafka_table(env: Any, bootstrap: str, topic: str, fmt: str, columns: str) -> dict:
    """Final table state Flink rebuilds from ``topic`` (read from the earliest to the latest offset)."""
    from pyflink.common import RowKind

    name = f"k{uuid.uuid4().hex[:8]}"
    env.execute_sql(
        f"CREATE TEMPORARY TABLE {name} ({columns}) WITH ("
        f"'connector'='kafka','topic'='{topic}','properties.bootstrap.servers'='{bootstrap}',"
        f"'properties.group.id'='{name}','scan.startup.mode'='earliest-offset',"
        f"'scan.bounded.mode'='latest-offset','format'='{fmt}')"
    )
    state: dict = {}
    with env.execute_sql(f"SELECT * FROM {name}").collect() as rows:
        for row in rows:
            values = tuple(row)
            if row.get_row_kind() in (RowKind.INSERT, RowKind.UPDATE_AFTER):
                state[values[0]] = values
            else:
                state.pop(values[0], None)
    return state


def replayed_products(lines: list[bytes], fmt: str) -> dict:
    """cdc-smt's own replay of the input changelog, as Flink's rows of PRODUCTS."""
    codec = get_codec(fmt)
    events = [e for line in lines for e in codec.decode(Record(value=line))]
    (table,) = replay(events).values()
    return {
        row["id"]: (row["id"], row["name"], row["description"], pytest.approx(row["weight"], rel=1e-6))
        for row in table.values()
    }


@pytest.mark.parametrize(("source", "target"), CASES)
def test_flink_reads_worker_output_from_kafka(flink_kafka, kafka, corpus, tmp_path: Path, source, target):
    original = corpus / CORPUS_FILES[source]
    lines = [line for line in original.read_bytes().splitlines() if line.strip()]
    expected_out = convert_file(original, tmp_path / "expected.json", source, target)
    tag = uuid.uuid4().hex[:8]
    src, dst = f"flink-in-{tag}", f"flink-out-{tag}"
    produce(kafka, src, [Record(value=line) for line in lines], partitions=1)

    worker = WorkerProcess(
        job_doc(
            kafka,
            f"flink-{tag}",
            src,
            dst,
            source={"format": source},
            sink={"format": target},
            worker={"create_topics": True},
        ),
        tmp_path,
    ).start()
    try:
        worker.wait_running()
        written = [r for r in consume(kafka, dst, min_records=expected_out, timeout=90) if r.value is not None]
    finally:
        worker.kill()
    assert len(written) == expected_out, worker.text()[-2000:]

    got = kafka_table(flink_kafka, kafka.bootstrap, dst, target, PRODUCTS)
    assert got, "Flink read nothing from the worker's output topic"
    assert got == flink_table(flink_kafka, original, source, PRODUCTS)
    assert got == replayed_products(lines, source)
