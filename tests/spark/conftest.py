"""Fixtures of the Spark backfill tests: one local[2] session, the brokers, small data.

The session has Spark's own Kafka connector (``format("kafka")``) on its
classpath: ``spark-sql-kafka-0-10`` and its dependencies, resolved with Maven
into the checkout's cache by :mod:`cdc_smt.connector.apache_kafka` and passed
as ``spark.jars``. The ``broker`` fixture runs on every backend of
``CDC_SMT_TEST_BROKER`` (Apache Kafka and Tansu by default; see
:mod:`tests.integration.helpers`), ``apache`` on Apache Kafka only.

Everything here skips (with the reason) when pyspark, pyarrow or Java is missing.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'cdc-smt[spark]')")
pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'cdc-smt[spark]')")

from tests.integration.helpers import KafkaCluster, apache_kafka, kafka_backend, test_backends  # noqa: E402


def _java_ok() -> str | None:
    java = shutil.which("java") or (
        os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else None
    )
    if not java:
        return "Java is not installed (Spark needs Java 17)"
    try:
        subprocess.run([java, "-version"], capture_output=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"java -version failed: {exc}"
    return None


def _spark_kafka_jars() -> tuple[list[Path], str | None]:
    """Spark's Kafka connector jars, or the reason they are missing."""
    from cdc_smt.connector.apache_kafka import ApacheKafkaError, spark_kafka_jars

    try:
        return spark_kafka_jars(), None
    except ApacheKafkaError as exc:
        return [], str(exc)


_SPARK_KAFKA: dict[str, Any] = {}


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The one SparkSession of the test session (local[2], no UI, Spark's Kafka connector)."""
    reason = _java_ok()
    if reason:
        pytest.skip(reason)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    jars, _SPARK_KAFKA["missing"] = _spark_kafka_jars()
    _SPARK_KAFKA["jars"] = jars
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("cdc-smt-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
    )
    if jars:
        builder = builder.config("spark.jars", ",".join(str(j) for j in jars))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_kafka(spark: Any) -> list[Path]:
    """The jars of Spark's Kafka connector on the session's classpath (skips with the reason)."""
    if not _SPARK_KAFKA.get("jars"):
        if os.environ.get("CI"):
            pytest.fail(f"Spark's Kafka connector unavailable: {_SPARK_KAFKA.get('missing')}")
        pytest.skip(f"Spark's Kafka connector unavailable: {_SPARK_KAFKA.get('missing')}")
    return _SPARK_KAFKA["jars"]


@pytest.fixture(scope="session", params=test_backends())
def broker(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The session's broker, once per backend (``.bootstrap``)."""
    with kafka_backend(request.param) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def apache() -> Iterator[Any]:
    """Apache Kafka alone (SASL listener, broker faults)."""
    if "apache" not in test_backends():
        pytest.skip(f"needs Apache Kafka started by the tests (backends: {', '.join(test_backends())})")
    with apache_kafka() as server:
        yield KafkaCluster(server.bootstrap, "apache", server)


ROOT = Path(__file__).resolve().parents[2]


def start_backfill(path: Path) -> subprocess.Popen[str]:
    """``cdc-smt backfill -c path`` on ``local[2]`` as a process group of its own (a test kills it
    whole), stderr piped for its progress lines."""
    cmd = [sys.executable, "-m", "cdc_smt.connector.cli", "backfill", "-c", str(path), "--master", "local[2]"]
    cmd += ["--conf", "spark.ui.enabled=false"]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    return subprocess.Popen(
        cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, start_new_session=True, text=True
    )


def kill_after_batch(proc: subprocess.Popen[str], progress: str = "backfill: batch 1:") -> None:
    """SIGKILL the backfill's process group once it printed ``progress`` (two micro-batches done)."""
    seen: list[str] = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            seen.append(line)
            if line.startswith(progress):
                break
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(60)
    assert any(s.startswith(progress) for s in seen), "".join(seen[-20:])


def run_async(coro: Any) -> Any:
    return asyncio.run(coro)


def write_lines(path: Path, lines: list[bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def read_tree(root: Path, pattern: str = "topic=*/batch=*/*.jsonl") -> dict[str, list[bytes]]:
    """``relative file path -> lines`` of every output file under ``root``."""
    return {str(p.relative_to(root)): p.read_bytes().splitlines() for p in sorted(root.glob(pattern))}
