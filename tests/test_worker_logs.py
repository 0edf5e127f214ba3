"""What the worker logs about partitions: the job's topics, not Faust's internal leader-election topic."""

from __future__ import annotations

import pytest

from cdc_smt.connector.jobconfig import load_job

faust = pytest.importorskip("faust")


def test_assigned_partitions_leave_out_fausts_leader_topic() -> None:
    from faust.types import TP

    from cdc_smt.connector.worker.app import build_app, describe_partitions

    job = load_job(
        {
            "id": "orders-job",
            "kafka": {"bootstrap_servers": "k:9092"},
            "source": {"topics": ["shop.canal"], "format": "canal-json"},
            "sink": {"topic": "shop.debezium", "format": "debezium-json"},
        },
        env={},
    )
    app = build_app(job)
    leader = app._leader_assignor._leader_topic_name  # the name Faust itself uses for the topic
    assert leader == "orders-job-__assignor-__leader"
    assigned = {TP("shop.canal", 1), TP(leader, 0), TP("shop.canal", 0), TP("orders-job-chain-state-p2-changelog", 1)}
    assert describe_partitions(assigned) == "orders-job-chain-state-p2-changelog[1], shop.canal[0], shop.canal[1]"
    assert describe_partitions({TP(leader, 0)}) == "none"
    assert describe_partitions(set()) == "none"
