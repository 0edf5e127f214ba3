"""Every host pointed at a broker it cannot reach fails fast with one line naming the address and the cause.

Real subprocess runs of ``cdc-smt``: against a closed loopback port (connection
refused) and against a host name under the reserved ``.invalid`` TLD (RFC
6761: it never resolves, so no traffic leaves the machine). The time bound
only catches hangs; it is many times the configured wait.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("aiokafka")

from cdc_smt.connector.kafka import KafkaSettings, KafkaUnavailable, wait_until_ready  # noqa: E402

#: The wait configured in these runs (seconds), and the bound that only catches a hang.
CONNECT_TIMEOUT = 3
HANG_BOUND = 30
#: Exit code of a command that cannot run (docs/commands.md).
EXIT_CANNOT_RUN = 2
UNRESOLVABLE = "kafka.invalid:9092"


def closed_port() -> str:
    """A loopback address nothing listens on (a port that was just free, not listened on)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def job_file(tmp_path: Path, bootstrap: str) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(
        f"""
id: dead-broker-job
kafka:
  bootstrap_servers: {bootstrap}
  connect_timeout_s: {CONNECT_TIMEOUT}
source: {{topics: [shop.canal], format: canal-json}}
sink: {{topic: shop.debezium, format: debezium-json}}
backfill: {{checkpoint: {tmp_path / "checkpoint"}}}
""",
        encoding="utf-8",
    )
    return path


def run_cli(*args: str, stdin: str = "") -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "cdc_smt.connector.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=HANG_BOUND * 3,
    )
    return proc, time.monotonic() - started


def assert_one_clear_error(proc: subprocess.CompletedProcess[str], elapsed: float, address: str, cause: str) -> None:
    err = proc.stderr
    errors = [line for line in err.splitlines() if line.startswith("cdc-smt: error:")]
    assert proc.returncode == EXIT_CANNOT_RUN, err
    assert len(errors) == 1, err
    assert f"cannot reach Kafka at {address}" in errors[0], err
    assert cause in errors[0], err
    assert "Traceback" not in err, err
    assert "ERROR aiokafka" not in err and "Unable connect to" not in err, err
    assert "Unclosed" not in err, err
    assert elapsed < HANG_BOUND, f"took {elapsed:.0f}s: {err}"


DEAD = pytest.mark.parametrize(
    "make_address, cause",
    [(closed_port, "connection refused"), (lambda: UNRESOLVABLE, "does not resolve")],
    ids=["refused", "unresolvable"],
)


@DEAD
def test_worker(tmp_path: Path, make_address, cause: str) -> None:
    pytest.importorskip("faust")
    address = make_address()
    proc, elapsed = run_cli("worker", "-c", str(job_file(tmp_path, address)))
    assert_one_clear_error(proc, elapsed, address, cause)


@DEAD
def test_backfill_dry_run(tmp_path: Path, make_address, cause: str) -> None:
    pytest.importorskip("pyspark")
    address = make_address()
    proc, elapsed = run_cli("backfill", "-c", str(job_file(tmp_path, address)), "--dry-run")
    assert_one_clear_error(proc, elapsed, address, cause)


@DEAD
def test_produce(make_address, cause: str) -> None:
    address = make_address()
    line = '{"topic": "t", "value": "v"}\n'
    proc, elapsed = run_cli("produce", "--bootstrap", address, "--connect-timeout", str(CONNECT_TIMEOUT), stdin=line)
    assert_one_clear_error(proc, elapsed, address, cause)


@DEAD
def test_consume(make_address, cause: str) -> None:
    address = make_address()
    proc, elapsed = run_cli("consume", "t", "--bootstrap", address, "--connect-timeout", str(CONNECT_TIMEOUT))
    assert_one_clear_error(proc, elapsed, address, cause)


def test_refused_says_how_long_it_waited_and_which_setting_changes_that(tmp_path: Path) -> None:
    address = closed_port()
    proc, _ = run_cli("consume", "t", "--bootstrap", address, "--connect-timeout", "1.5")
    assert f"cannot reach Kafka at {address}: connection refused (waited 1.5 s; " in proc.stderr
    assert "--connect-timeout" in proc.stderr


# -- the probe itself ------------------------------------------------------------------------------
def test_unresolvable_name_fails_without_waiting() -> None:
    started = time.monotonic()
    with pytest.raises(KafkaUnavailable) as info:
        asyncio.run(wait_until_ready(UNRESOLVABLE, timeout=60))
    assert time.monotonic() - started < HANG_BOUND  # far less than the 60 s it was allowed
    assert info.value.address == UNRESOLVABLE
    assert "host name kafka.invalid does not resolve" in str(info.value)


def test_every_address_is_named_with_its_own_cause() -> None:
    refused = closed_port()
    with pytest.raises(KafkaUnavailable) as info:
        asyncio.run(wait_until_ready(f"{refused},{UNRESOLVABLE}", timeout=1))
    message = str(info.value)
    assert f"{refused} connection refused" in message
    assert f"{UNRESOLVABLE} host name kafka.invalid does not resolve" in message


def test_a_port_that_is_not_kafka_times_out_with_that_cause() -> None:
    """A listener that accepts and never answers (a wrong port, a stuck proxy)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        address = f"127.0.0.1:{server.getsockname()[1]}"
        with pytest.raises(KafkaUnavailable) as info:
            asyncio.run(wait_until_ready(address, timeout=1.5))
    assert "no Kafka answer" in str(info.value)


def test_tls_to_a_plaintext_listener_is_a_handshake_failure() -> None:
    """An SSL client against a listener that speaks something else fails at the TLS handshake, at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        port = server.getsockname()[1]
        import threading

        def answer_garbage() -> None:
            conn, _ = server.accept()
            with conn:
                conn.recv(1024)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

        threading.Thread(target=answer_garbage, daemon=True).start()
        settings = KafkaSettings(bootstrap_servers=(f"127.0.0.1:{port}",), security_protocol="SSL")
        started = time.monotonic()
        with pytest.raises(KafkaUnavailable) as info:
            asyncio.run(wait_until_ready(settings, timeout=20))
    assert "TLS handshake failed" in str(info.value)
    assert time.monotonic() - started < 10  # not retried until the 20 s deadline


def test_the_timeout_comes_from_the_job_setting() -> None:
    from cdc_smt.connector.jobconfig import load_job

    base = {
        "id": "j",
        "kafka": {"bootstrap_servers": "k:9092"},
        "source": {"topics": ["a"], "format": "canal-json"},
        "sink": {"topic": "b", "format": "debezium-json"},
    }
    assert load_job(base, env={}).kafka.connect_timeout_s == 10
    job = load_job({**base, "kafka": {"bootstrap_servers": "k:9092", "connect_timeout_s": "2.5"}}, env={})
    assert job.kafka.connect_timeout_s == 2.5
    from cdc_smt.transforms.errors import ConfigError

    with pytest.raises(ConfigError):
        load_job({**base, "kafka": {"bootstrap_servers": "k:9092", "connect_timeout_s": 0}}, env={})


def test_a_sasl_failure_aiokafka_only_logs_is_the_cause_and_final() -> None:
    """aiokafka's bootstrap logs the SASL error and raises only 'Unable to bootstrap': the probe reads the log."""
    import logging

    from aiokafka.errors import KafkaConnectionError, SaslAuthenticationFailed

    from cdc_smt.connector.kafka.admin import _client_logs_held, _kafka_failure

    with _client_logs_held() as held:
        err = SaslAuthenticationFailed("Authentication failed: Invalid username or password")
        logging.getLogger("aiokafka.client").error('Unable connect to "%s:%s": %s', "k", 9092, err)
        failure = _kafka_failure(KafkaConnectionError("Unable to bootstrap from [('k', 9092)]"), held.errors)
    assert failure.final
    assert failure.cause.startswith("SASL authentication failed: ")
    assert "Invalid username or password" in failure.cause
    assert logging.getLogger("aiokafka").propagate and not logging.getLogger("aiokafka").handlers  # restored
