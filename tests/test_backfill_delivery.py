"""The backfill's Kafka delivery settings and errors, without a broker.

A broker that stays away past ``backfill.sink.delivery_timeout_s`` is one error
naming the address and the cause; ``exactly_once`` is refused where it cannot
hold; the commit markers are keyed and partitioned as the reader looks for them.
"""

from __future__ import annotations

from typing import Any

import orjson
import pyarrow as pa
import pytest

from cdc_smt.connector.broker import free_port
from cdc_smt.connector.jobconfig import ProducerSettings
from cdc_smt.connector.kafka.markers import marker_record
from cdc_smt.connector.kafka.partitioner import partition_for
from cdc_smt.connector.kafka.produce import BlockingProducer, KafkaDeliveryError
from cdc_smt.connector.spark.settings import Overrides, SinkSpec, build_settings, validate_section
from cdc_smt.connector.spark.sinks import output_batch
from cdc_smt.transforms import native
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


@pytest.mark.skipif(native.arrow_parts() is None, reason="the native core is not built or is off")
def test_arrow_sends_to_a_broker_that_stays_away_fail_the_same_way() -> None:
    """The Arrow path's sends (record batches written natively) keep the delivery timeout and its error."""
    address = f"127.0.0.1:{free_port('127.0.0.1')}"
    producer = BlockingProducer(address, ProducerSettings(), delivery_timeout_s=1.5)
    records = output_batch([(Record(key=b"k", value=b"v", topic="orders.out"), 0)])
    try:
        with pytest.raises(KafkaDeliveryError) as caught:
            producer.send_arrow(records, pa.array([0], pa.int32()))
    finally:
        producer.close()
    assert str(caught.value).startswith(f"cannot deliver to Kafka at {address}: connection refused")


class FakeProducer:
    """What :class:`KafkaOutput` asks of its producer, recording what it is handed."""

    def __init__(self, partitions: dict[str, int]) -> None:
        self.counts = partitions
        self.sent: list[Any] = []

    def partitions(self, topic: str) -> int:
        return self.counts[topic]

    def send_arrow(self, records: Any, partitions: Any) -> None:
        self.sent.append(("arrow", records.to_pylist(), partitions.to_pylist()))

    def send(self, records: Any) -> None:
        self.sent.append(("records", [(r.topic, r.key, r.value, r.partition) for r in records]))

    def close(self) -> None:
        pass


def kafka_output(producer: FakeProducer) -> Any:
    from cdc_smt.connector.kafka.settings import KafkaSettings, connection_json
    from cdc_smt.connector.spark.sinks import KafkaOutput

    out = KafkaOutput(connection_json(KafkaSettings(bootstrap_servers=("127.0.0.1:9",))), ProducerSettings(),
                      SinkSpec("kafka"))  # fmt: skip
    out._producer = producer
    return out


@pytest.mark.skipif(native.arrow_parts() is None, reason="the native core is not built or is off")
def test_kafka_output_sends_arrow_batches_with_the_records_queued_among_them_in_order(monkeypatch) -> None:
    """Records ``add`` queued before, between and after Arrow batches are sent with them, in order, as
    one Arrow batch per chunk, each to the partition ``partition_for`` gives it; ``abort`` drops the queue."""
    from cdc_smt.connector.spark import sinks

    monkeypatch.setattr(sinks, "KAFKA_CHUNK", 6)
    producer = FakeProducer({"out": 3, "dlq": 1})
    out = kafka_output(producer)
    python = [Record(key=None if i == 1 else b"p%d" % i, value=b"python %d" % i, topic="dlq" if i == 2 else "out",
                     timestamp=5, headers=[("h", b"%d" % i)]) for i in range(3)]  # fmt: skip
    arrow = [
        Record(key=b"a%d" % i, value=None if i == 2 else b"arrow %d" % i, topic="out", timestamp=7) for i in range(4)
    ]
    out.add(python[0], 2)
    out.extend_arrow(sinks.output_batch([(r, 1) for r in arrow[:2]]))
    out.add(python[1], 2)
    assert producer.sent == []  # 4 queued: under the chunk
    out.extend_arrow(sinks.output_batch([(r, 1) for r in arrow[2:]]))  # 6: a chunk
    out.add(python[2], 0)
    order = [(python[0], 2), (arrow[0], 1), (arrow[1], 1), (python[1], 2), (arrow[2], 1), (arrow[3], 1)]
    ((kind, rows, partitions),) = producer.sent
    assert kind == "arrow"
    assert [(r["topic"], r["key"], r["value"], r["timestamp"], r["source_partition"]) for r in rows] == [
        (r.topic, r.key, r.value, r.timestamp, sp) for r, sp in order
    ]
    assert [[(h["key"], h["value"]) for h in r["headers"]] for r in rows] == [r.headers for r, _ in order]
    assert partitions == [partition_for(r.key, 3, sp) for r, sp in order]
    out.close()  # a chunk of records only (none from the Arrow path): sent as records
    assert producer.sent[1] == ("records", [("dlq", b"p2", b"python 2", 0)])
    out.add(python[0], 2)
    out.extend_arrow(sinks.output_batch([(arrow[0], 1)]))
    out.abort()
    out.flush()  # nothing left to send
    assert len(producer.sent) == 2


def test_kafka_output_without_arrow_batches_sends_records() -> None:
    """A stream the native core never handed Arrow batches to keeps the per-record path."""
    producer = FakeProducer({"out": 3})
    out = kafka_output(producer)
    out.add(Record(key=b"k", value=b"v", topic="out"), 1)
    out.close()
    assert producer.sent == [("records", [("out", b"k", b"v", partition_for(b"k", 3, 1))])]


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
