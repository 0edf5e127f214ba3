"""Fixtures of the integration tests: one Kafka cluster per session, unique names, worker processes.

See :mod:`tests.integration.helpers` for which cluster is used.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.helpers import KafkaCluster, Names, WorkerProcess, apache_kafka, kafka_backend, test_backends


@pytest.fixture(scope="session", params=test_backends())
def kafka(request: pytest.FixtureRequest) -> Iterator[KafkaCluster]:
    """The session's cluster, once per backend (``CDC_SMT_TEST_BROKER``; see helpers)."""
    with kafka_backend(request.param) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def apache() -> Iterator[KafkaCluster]:
    """Apache Kafka alone (the broker-fault tests stop and start its process)."""
    if "apache" not in test_backends():
        pytest.skip(f"needs Apache Kafka started by the tests (backends: {', '.join(test_backends())})")
    with apache_kafka() as server:
        yield KafkaCluster(server.bootstrap, "apache", server)


@pytest.fixture
def names() -> Names:
    """Unique topic and group names per test (tests share one cluster)."""
    return Names(uuid.uuid4().hex[:8])


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Any]:
    """Factory of :class:`WorkerProcess`; every process is killed at teardown."""
    started: list[WorkerProcess] = []

    def make(job: dict[str, Any], name: str = "worker", env: dict[str, str] | None = None) -> WorkerProcess:
        w = WorkerProcess(job, tmp_path, name, env)
        started.append(w)
        return w

    yield make
    for w in started:
        w.kill()
