"""Fixtures of the Spark backfill tests: one local[2] session, one embedded broker, small data.

Everything here skips (with the reason) when pyspark, pyarrow or Java is missing.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'cdc-smt[spark]')")
pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install 'cdc-smt[spark]')")


def _java_ok() -> str | None:
    java = shutil.which("java") or (os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else None)
    if not java:
        return "Java is not installed (Spark needs Java 17)"
    try:
        subprocess.run([java, "-version"], capture_output=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"java -version failed: {exc}"
    return None


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The one SparkSession of the test session (local[2], no UI)."""
    reason = _java_ok()
    if reason:
        pytest.skip(reason)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("cdc-smt-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def broker() -> Iterator[Any]:
    """An embedded (Tansu) broker for the Kafka tests."""
    from cdc_smt.connector.broker import BrokerError, EmbeddedBroker

    try:
        b = EmbeddedBroker().start()
    except BrokerError as exc:
        pytest.skip(f"embedded broker unavailable: {exc}")
    yield b
    b.stop()


def run_async(coro: Any) -> Any:
    return asyncio.run(coro)


def write_lines(path: Path, lines: list[bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def read_tree(root: Path, pattern: str = "topic=*/batch=*/*.jsonl") -> dict[str, list[bytes]]:
    """``relative file path -> lines`` of every output file under ``root``."""
    return {str(p.relative_to(root)): p.read_bytes().splitlines() for p in sorted(root.glob(pattern))}
