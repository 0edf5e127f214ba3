"""What the worker logs about partitions: the job's topics, not Faust's internal leader-election topic."""

from __future__ import annotations

import logging
import threading

import orjson
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


@pytest.mark.parametrize(("level", "traceback_logged"), [(logging.WARNING, False), (logging.DEBUG, True)])
def test_a_failing_thread_is_one_json_error_line_with_its_traceback_only_when_debugging(
    level: int, traceback_logged: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    from cdc_smt.connector.worker import logging_setup

    def fail() -> None:
        raise RuntimeError("the broker went away")

    saved_hook, root = threading.excepthook, logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    try:
        logging_setup.setup("json", level=level)
        thread = threading.Thread(target=fail, name="consumer-thread")
        thread.start()
        thread.join()
    finally:
        threading.excepthook = saved_hook
        root.handlers[:] = saved_handlers
        root.setLevel(saved_level)
    lines = [orjson.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert [(line["level"], line["msg"]) for line in lines] == [
        ("error", "thread consumer-thread failed: RuntimeError: the broker went away")
    ]
    assert ("exc" in lines[0]) is traceback_logged
