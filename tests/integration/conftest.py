"""Fixtures of the integration tests: one Kafka cluster per session, unique names, worker processes.

See :mod:`tests.integration.helpers` for which cluster is used.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from cdc_smt.connector import kafka as K
from tests.integration.helpers import (
    KafkaCluster,
    Names,
    WorkerProcess,
    _choose_backend,
    apache_kafka_container,
    docker_engine_available,
)


@pytest.fixture(scope="session")
def kafka() -> Iterator[KafkaCluster]:
    backend = _choose_backend()
    if backend == "external":
        bootstrap = os.environ["CDC_SMT_BOOTSTRAP"]
        asyncio.run(K.wait_until_ready(bootstrap, timeout=30))
        yield KafkaCluster(bootstrap, backend)
    elif backend == "docker":
        if not docker_engine_available():
            pytest.skip("CDC_SMT_TEST_BROKER=docker but no Docker engine answers")
        for bootstrap in apache_kafka_container():
            yield KafkaCluster(bootstrap, backend)
    else:
        from cdc_smt.connector.broker import BrokerError, EmbeddedBroker

        try:
            broker = EmbeddedBroker().start()
        except BrokerError as exc:
            pytest.skip(f"embedded broker unavailable: {exc}")
        try:
            yield KafkaCluster(broker.bootstrap, backend)
        finally:
            broker.stop()


@pytest.fixture
def names() -> "Names":
    """Unique topic and group names per test (tests share one cluster)."""
    return Names(uuid.uuid4().hex[:8])


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Any]:
    """Factory of :class:`WorkerProcess`; every process is killed at teardown."""
    started: list[WorkerProcess] = []

    def make(job: dict[str, Any], name: str = "worker") -> WorkerProcess:
        w = WorkerProcess(job, tmp_path, name)
        started.append(w)
        return w

    yield make
    for w in started:
        w.kill()
