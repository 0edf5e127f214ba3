"""``worker.processing_guarantee`` in the job file, and the transactional ids it implies."""

from __future__ import annotations

from typing import Any

import pytest

from cdc_smt.connector.jobconfig import load_job
from cdc_smt.connector.kafka.transactions import transactional_id
from cdc_smt.transforms.errors import ConfigError


def doc(**worker: Any) -> dict[str, Any]:
    return {
        "id": "job-1",
        "kafka": {"bootstrap_servers": "127.0.0.1:9092"},
        "source": {"topics": ["in"], "format": "canal-json"},
        "sink": {"topic": "out", "format": "debezium-json"},
        "worker": worker,
    }


def test_at_least_once_is_the_default() -> None:
    w = load_job(doc()).worker
    assert w.processing_guarantee == "at_least_once" and not w.exactly_once
    assert w.transaction_timeout_ms == 60_000 and w.transaction_interval_ms == 500


def test_exactly_once_and_its_transaction_timeout() -> None:
    w = load_job(
        doc(processing_guarantee="exactly_once", transaction_timeout_ms=30_000, transaction_interval_ms=250)
    ).worker
    assert w.exactly_once and w.transaction_timeout_ms == 30_000 and w.transaction_interval_ms == 250


@pytest.mark.parametrize(
    "worker",
    [
        {"processing_guarantee": "exactly-once"},
        {"processing_guarantee": "none"},
        {"transaction_timeout_ms": 10},
        {"transaction_interval_ms": 0},
    ],
)
def test_bad_settings_are_refused_naming_the_key(worker: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as info:
        load_job(doc(**worker))
    assert next(iter(worker)) in str(info.value)


def test_the_command_line_override_reaches_the_guarantee() -> None:
    job = load_job(doc(), overrides={"worker.processing_guarantee": "exactly_once"})
    assert job.worker.exactly_once


def test_one_transactional_id_per_input_partition() -> None:
    ids = {transactional_id("cdc-smt", "job-1", t, p) for t in ("a", "b") for p in range(3)}
    assert len(ids) == 6
    assert transactional_id("cdc-smt", "job-1", "a", 2) == "cdc-smt-job-1-a-2"
