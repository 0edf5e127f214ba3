"""Job files: validation errors name the setting, secrets stay secret, examples stay valid.

No broker needed: these run in the fast suite.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from cdc_smt.connector.jobconfig import load_job, substitute_env
from cdc_smt.transforms.errors import ConfigError
from tests.integration.helpers import ROOT

BASE: dict[str, Any] = {
    "id": "orders-to-debezium",
    "kafka": {"bootstrap_servers": "kafka-1:9092,kafka-2:9092"},
    "source": {"topics": ["shop.canal"], "format": "canal-json", "options": {"source_timezone": "Asia/Shanghai"}},
    "sink": {"topic": "{source_topic}.debezium", "format": "debezium-json"},
}


def job(**changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    for dotted, value in changes.items():
        node = doc
        *parents, leaf = dotted.split("__")
        for p in parents:
            node = node.setdefault(p, {})
        if value is _DELETE:
            node.pop(leaf)
        else:
            node[leaf] = value
    return doc


_DELETE = object()


def error_of(doc: dict[str, Any], env: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        load_job(doc, env=env or {}).check()
    return str(info.value)


def test_a_valid_job_builds_with_defaults() -> None:
    j = load_job(job(), env={})
    j.check()
    assert j.kafka.bootstrap_servers == ("kafka-1:9092", "kafka-2:9092")
    assert j.sink.topic_for("shop.canal") == "shop.canal.debezium"
    assert (j.errors.tolerance, j.producer.acks, j.consumer.auto_offset_reset) == ("none", -1, "earliest")
    assert j.worker.metrics_port is None and j.worker.create_topics is None


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"sink__topic": _DELETE}, "sink.topic: missing required key"),
        ({"sink__topic": "cdc.{table}"}, "sink.topic: unknown placeholder {table} (available: {source_topic})"),
        (
            {"kafka__bootstrap": "x:1"},
            "kafka.bootstrap: unknown key 'bootstrap' (did you mean 'bootstrap_servers'?; known: bootstrap_servers,",
        ),
        ({"kafka__bootstrap_servers": "kafka-1"}, "kafka.bootstrap_servers: expected host:port, got 'kafka-1'"),
        ({"source__pattern": "shop\\..*"}, "source: set either topics or pattern, not both"),
        ({"source__topics": _DELETE}, "source: set topics (a list) or pattern (a regular expression)"),
        ({"source__format": "canal"}, "source.format: unknown format 'canal' (known:"),
        (
            {"source__options": {"source_timezone": "Shanghai"}},
            "source.options.source_timezone: unknown time zone 'Shanghai'",
        ),
        ({"producer": {"acks": "2"}}, "producer.acks: must be one of all, 0, 1, -1; got '2'"),
        ({"worker": {"batch_size": 0}}, "worker.batch_size: 0 is less than the minimum of 1"),
        ({"errors": {"tolerance": "all"}}, "errors.dead_letter_topic: tolerance 'all' needs a dead_letter_topic"),
        ({"transforms": [{"type": "filter", "tabels": ["x"]}]}, "transforms[0].tabels: unknown option 'tabels'"),
        ({"sink__topic": "shop.canal.debezium", "source__topics": ["shop.canal", "shop.canal.debezium"]}, "a loop"),
        ({"id": "orders to debezium"}, "id: 'orders to debezium': use only letters, digits"),
        (
            {"consumer": {"session_timeout_ms": 6000, "heartbeat_interval_ms": 3000}},
            "consumer.heartbeat_interval_ms: must be at most a third",
        ),
        (
            {"consumer": {"session_timeout_ms": 45000}},
            "consumer.session_timeout_ms: must not exceed consumer.request_timeout_ms",
        ),
    ],
)
def test_errors_name_the_setting(changes: dict[str, Any], expected: str) -> None:
    assert expected in error_of(job(**changes))


def test_compression_needs_its_library() -> None:
    from aiokafka import codec

    assert load_job(job(producer={"compression_type": "gzip"}), env={}).producer.compression_type == "gzip"
    doc = job(producer={"compression_type": "zstd"})
    if codec.has_zstd():
        load_job(doc, env={}).check()
    else:
        assert "producer.compression_type: zstd compression needs cramjam" in error_of(doc)


def test_environment_references() -> None:
    doc = job(
        kafka__bootstrap_servers="${BOOTSTRAP}", worker={"metrics_port": "${PORT:-9108}"}, sink__topic="$${literal}"
    )
    with pytest.raises(ConfigError, match="kafka.bootstrap_servers: environment variable BOOTSTRAP is not set"):
        load_job(copy.deepcopy(doc), env={})
    doc["sink"]["topic"] = "{source_topic}.out"
    j = load_job(doc, env={"BOOTSTRAP": "broker:29092"})
    assert j.kafka.bootstrap_servers == ("broker:29092",)
    assert j.worker.metrics_port == 9108  # a number, though environment values are text
    assert substitute_env("$${X} ${Y:-y}", {}) == "${X} y"


def test_secrets_never_appear_in_descriptions_or_errors() -> None:
    secret = "s3cr3t-Pa55"
    doc = job(
        kafka__security_protocol="SASL_SSL",
        kafka__sasl_mechanism="SCRAM-SHA-512",
        kafka__sasl_username="cdc",
        kafka__sasl_password="${KAFKA_PASSWORD}",
    )
    j = load_job(doc, env={"KAFKA_PASSWORD": secret})
    assert j.kafka.sasl_password == secret
    assert j.kafka.aiokafka_kwargs()["sasl_plain_password"] == secret
    assert secret not in repr(j)
    assert secret not in json.dumps(j.describe())
    assert j.describe()["kafka"]["sasl_password"] == "***"
    bad = copy.deepcopy(doc)
    bad["kafka"]["sasl_password"] = 12345
    message = error_of(bad)
    assert "12345" not in message and "kafka.sasl_password" in message
    missing = copy.deepcopy(doc)
    missing["kafka"].pop("sasl_password")
    assert "needs sasl_username and sasl_password" in error_of(missing)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cdc_smt.connector.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_worker_command_reports_a_config_error_clearly(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job(sink__topic=_DELETE)))
    result = _cli("worker", "-c", str(path))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == "cdc-smt: error: sink.topic: missing required key"
    assert "Traceback" not in result.stderr

    path.write_text("id: [unclosed\n")
    result = _cli("worker", "-c", str(path))
    assert result.returncode == 2 and "job.yaml: not valid YAML (line 2, column 1)" in result.stderr

    result = _cli("worker", "-c", str(tmp_path / "nope.yaml"))
    assert result.returncode == 2 and "job file not found" in result.stderr


#: The worker job files among the examples (others there are for other commands, e.g. backfill).
WORKER_JOBS = ("shop-canal-to-debezium.yaml", "canal-pattern-to-debezium.yaml")


@pytest.mark.parametrize("name", WORKER_JOBS)
def test_example_jobs_are_valid(name: str) -> None:
    path = ROOT / "examples" / "jobs" / name
    result = _cli("worker", "-c", str(path), "--check")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["ok"] is True and summary["id"]
