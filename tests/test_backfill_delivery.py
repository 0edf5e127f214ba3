"""The backfill's Kafka delivery settings and errors, without a broker.

A broker that stays away past ``backfill.sink.delivery_timeout_s`` is one error
naming the address and the cause; ``exactly_once`` is refused where it cannot
hold; the commit markers are keyed and partitioned as the reader looks for them.
"""

from __future__ import annotations

import orjson
import pytest

from cdc_smt.connector.broker import free_port
from cdc_smt.connector.jobconfig import ProducerSettings
from cdc_smt.connector.kafka.markers import marker_record
from cdc_smt.connector.kafka.partitioner import partition_for
from cdc_smt.connector.kafka.produce import BlockingProducer, KafkaDeliveryError
from cdc_smt.connector.spark.settings import Overrides, SinkSpec, build_settings, validate_section
from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.model import Record

JOB = {"id": "orders", "errors": {"dead_letter_topic": "orders.dlq"}}


def settings(section: dict) -> SinkSpec:
    validate_section(section)
    return build_settings(section, JOB, Overrides()).sink


def test_sends_to_a_broker_that_stays_away_fail_after_the_delivery_timeout_naming_it() -> None:
    address = f"127.0.0.1:{free_port('127.0.0.1')}"  # nothing listens: connection refused
    producer = BlockingProducer(address, ProducerSettings(), delivery_timeout_s=1.5)
    try:
        with pytest.raises(KafkaDeliveryError) as caught:
            producer.send([Record(key=b"k", value=b"v", topic="orders.out")])
    finally:
        producer.close()
    text = str(caught.value)
    assert text.startswith(f"cannot deliver to Kafka at {address}: connection refused")
    assert "backfill.sink.delivery_timeout_s" in text
    assert "\n" not in text


def test_a_transactional_producer_to_a_broker_that_stays_away_fails_the_same_way() -> None:
    address = f"127.0.0.1:{free_port('127.0.0.1')}"
    producer = BlockingProducer(address, ProducerSettings(), delivery_timeout_s=1.0, transactional_id="t-1")
    try:
        with pytest.raises(KafkaDeliveryError, match=r"connection refused \(starting the producer\)"):
            producer.begin()
        producer.abort()  # nothing open: a no-op, not a second error
    finally:
        producer.close()


def test_sink_delivery_settings_default_and_parse() -> None:
    sink = settings({"checkpoint": "/tmp/ck"})
    assert (sink.processing_guarantee, sink.delivery_timeout_s, sink.transaction_timeout_s) == (
        "at_least_once",
        60.0,
        900,
    )
    assert not sink.exactly_once
    sink = settings(
        {
            "checkpoint": "/tmp/ck",
            "sink": {"processing_guarantee": "exactly_once", "commit_topic": "c", "delivery_timeout_s": 5},
        }
    )
    assert sink.exactly_once and sink.commit_topic == "c" and sink.delivery_timeout_s == 5.0
    dead_letters = build_settings(
        {"checkpoint": "/tmp/ck", "sink": {"processing_guarantee": "exactly_once"}}, JOB, Overrides()
    ).dead_letters
    assert dead_letters.is_kafka and dead_letters.exactly_once  # dead letters share the outputs' transaction


@pytest.mark.parametrize(
    ("sink", "where"),
    [
        ({"processing_guarantee": "exactly-once"}, "backfill.sink.processing_guarantee"),
        ({"delivery_timeout_s": 0}, "backfill.sink.delivery_timeout_s"),
        ({"transaction_timeout_s": 0}, "backfill.sink.transaction_timeout_s"),
    ],
)
def test_bad_delivery_settings_name_the_setting(sink: dict, where: str) -> None:
    with pytest.raises(ConfigError, match=where.replace(".", r"\.")):
        settings({"checkpoint": "/tmp/ck", "sink": sink})


def test_exactly_once_is_refused_for_file_output_spark_kafka_and_file_dead_letters() -> None:
    with pytest.raises(ConfigError, match=r"backfill\.sink\.processing_guarantee: exactly_once applies to a Kafka"):
        settings(
            {
                "checkpoint": "/tmp/ck",
                "sink": {"type": "jsonl", "path": "/tmp/o", "processing_guarantee": "exactly_once"},
            }
        )
    with pytest.raises(ConfigError, match=r"backfill\.sink\.processing_guarantee: exactly_once needs the kafka sink"):
        settings({"checkpoint": "/tmp/ck", "sink": {"type": "spark-kafka", "processing_guarantee": "exactly_once"}})
    with pytest.raises(ConfigError, match=r"backfill\.dead_letters\.type: exactly_once writes dead letters"):
        settings(
            {
                "checkpoint": "/tmp/ck",
                "sink": {"processing_guarantee": "exactly_once"},
                "dead_letters": {"path": "/tmp/dl"},
            }
        )


def test_a_marker_goes_to_the_partition_its_reader_reads() -> None:
    record = marker_record("orders.backfill-commits", 5, "run/orders.in-3", {"batch": 7, "records": 10})
    assert record.key == b"run/orders.in-3"
    assert record.partition == partition_for(b"run/orders.in-3", 5)
    assert orjson.loads(record.value or b"") == {"batch": 7, "records": 10}


def test_explain_shows_a_delivery_error_from_a_task_as_one_line() -> None:
    pytest.importorskip("pyarrow")
    from cdc_smt.connector.spark.backfill import explain

    text = (
        "org.apache.spark.SparkException: Job aborted due to stage failure\n"
        "Traceback (most recent call last):\n"
        '  File "x.py", line 1, in run_task\n'
        "cdc_smt.connector.kafka.produce.KafkaDeliveryError: cannot deliver to Kafka at h:9092: "
        "connection refused (sending) (retried for 60 s; see backfill.sink.delivery_timeout_s)\n"
        "\tat org.apache.spark.api.python.BasePythonRunner.handlePythonException\n"
    )
    assert explain(RuntimeError(text)) == (
        "cdc_smt.connector.kafka.produce.KafkaDeliveryError: cannot deliver to Kafka at h:9092: "
        "connection refused (sending) (retried for 60 s; see backfill.sink.delivery_timeout_s)"
    )
