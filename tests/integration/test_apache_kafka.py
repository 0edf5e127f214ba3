"""Apache Kafka from the test tooling: keeps its data across a restart, leaves no process or
folder behind, dies with a killed owner, and runs as ``cdc-smt broker --apache-kafka``."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

import pytest

from cdc_smt.connector import apache_kafka as AK
from cdc_smt.connector import kafka as K
from cdc_smt.connector.apache_kafka import ApacheKafka, ApacheKafkaError, resolve
from cdc_smt.connector.broker import probe_metadata
from cdc_smt.transforms.model import Record
from tests.integration.helpers import ROOT, alive, assert_broker_dies_with_its_owner, test_backends

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


@pytest.fixture
def needs_apache() -> None:
    if "apache" not in test_backends():
        pytest.skip("CDC_SMT_TEST_BROKER does not include apache")
    try:
        resolve("kafka")
    except ApacheKafkaError as exc:
        pytest.skip(str(exc))


@pytest.mark.usefixtures("needs_apache")
def test_restart_on_the_same_data_keeps_the_records_and_close_leaves_nothing() -> None:
    server = ApacheKafka().start()
    try:
        pids, data = [server.pid], server.data_dir
        records = [Record(value=b"v%d" % i, key=b"k%d" % i) for i in range(100)]

        async def produce() -> None:
            await K.create_topics(server.bootstrap, {"kept": 2})
            await K.produce_records(server.bootstrap, "kept", records)

        asyncio.run(produce())
        server.restart(kill=True)
        pids.append(server.pid)
        assert pids[0] != pids[1] and not alive(pids[0])
        got = asyncio.run(K.consume_all(server.bootstrap, "kept", min_records=100, idle=0.5))
        assert sorted(r.value for r in got) == sorted(r.value for r in records)
    finally:
        server.close()
    assert not any(alive(p) for p in pids)
    assert not data.exists()


@pytest.mark.usefixtures("needs_apache")
def test_the_broker_dies_with_a_killed_owner(tmp_path) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("parent-death signal is Linux-only")
    assert_broker_dies_with_its_owner(
        tmp_path, "from cdc_smt.connector.apache_kafka import ApacheKafka\nb = ApacheKafka().start()", 20
    )


@pytest.mark.usefixtures("needs_apache")
def test_broker_command_runs_apache_kafka_and_stops_on_sigterm() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "cdc_smt.connector.cli", "broker", "--apache-kafka", "--port", "0", "--topic", "demo:3"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("bootstrap: 127.0.0.1:"), line + proc.stderr.read() if proc.poll() is not None else line
        bootstrap = line.split()[-1]
        sasl = proc.stdout.readline()
        assert sasl.startswith("sasl bootstrap: 127.0.0.1:") and "SCRAM-SHA-512" in sasl, sasl
        assert asyncio.run(K.partition_counts(bootstrap, ["demo"])) == {"demo": 3}
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        host, port = bootstrap.split(":")
        with pytest.raises(OSError):
            probe_metadata(host, int(port), timeout=1)
    finally:
        proc.kill()
        proc.wait(10)


def test_data_dir_needs_apache_kafka() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cdc_smt.connector.cli", "broker", "--data-dir", "/tmp/x"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "--data-dir needs --apache-kafka" in done.stderr and "Traceback" not in done.stderr


def test_a_complete_cache_is_used_without_maven(tmp_path, monkeypatch) -> None:
    """Offline re-runs: a stamp matching the poms skips Maven; a stale one needs it."""
    monkeypatch.setenv(AK.CACHE_ENV, str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # no mvn
    monkeypatch.delenv(AK.LIB_ENV, raising=False)
    lib = tmp_path / "jvm" / "kafka" / "lib"
    lib.mkdir(parents=True)
    (lib / "kafka_2.13-4.4.0.jar").write_bytes(b"")
    (lib.parent / ".stamp").write_text("stale\n")
    with pytest.raises(ApacheKafkaError, match="needs Maven"):
        resolve("kafka")
    (lib.parent / ".stamp").write_text(AK._stamp_of("kafka", {}) + "\n")
    assert resolve("kafka") == lib
    # Another property (e.g. another Spark version) is another cache entry.
    with pytest.raises(ApacheKafkaError, match="needs Maven"):
        resolve("kafka", {"kafka.version": "4.3.1"})


def test_jars_pyspark_ships_are_not_added_twice() -> None:
    assert AK._artifact("kafka-clients-3.9.2.jar") == "kafka-clients"
    assert AK._artifact("spark-sql-kafka-0-10_2.13-4.2.0.jar") == "spark-sql-kafka-0-10_2.13"
    assert AK._artifact("hadoop-client-runtime-3.5.0.jar") == "hadoop-client-runtime"


@pytest.mark.parametrize(("jvm", "collector"), [(AK.KAFKA_SCRIPT_JVM, "G1"), (AK.TEST_JVM, "Serial")])
def test_the_broker_jvm_options_reach_the_broker_and_its_gc_log(jvm, collector) -> None:
    records = [Record(value=b"x" * 100, key=str(i).encode()) for i in range(100)]
    with ApacheKafka(jvm=jvm, gc_log=True) as server:
        asyncio.run(K.create_topics(server.bootstrap, {"gc-log": 1}))
        asyncio.run(K.produce_records(server.bootstrap, "gc-log", records))  # it serves with these options
        assert server.gc_log_path is not None
        text = server.gc_log_path.read_text()
    assert f"Using {collector}" in text.splitlines()[0], text[:300]
