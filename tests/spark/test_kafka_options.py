"""The Kafka settings of the backfill that need no Spark session or broker: the retry time, the
``spark-kafka`` sink's settings, and the options handed to Spark's Kafka source and writer."""

from __future__ import annotations

import pytest

from cdc_smt.connector.jobconfig import KafkaSettings, ProducerSettings
from cdc_smt.connector.kafka.settings import spark_producer_options
from cdc_smt.connector.spark.settings import Overrides, build_settings, validate_section
from cdc_smt.transforms.errors import ConfigError

JOB = {"id": "t", "source": {"format": "canal-json"}, "sink": {"format": "debezium-json"}}
JARS = {"spark_conf": {"spark.jars": "/x/spark-sql-kafka-0-10_2.13-4.2.0.jar"}}


def settings(section: dict):
    validate_section(section)
    return build_settings(section, JOB, Overrides())


def test_the_retry_time_defaults_to_a_minute_and_is_read_from_the_source_section():
    assert settings({"checkpoint": "/c"}).source.retry_timeout_s == 60.0
    assert settings({"checkpoint": "/c", "source": {"retry_timeout_s": 2.5}}).source.retry_timeout_s == 2.5


@pytest.mark.parametrize("bad", [0, -1, "soon"])
def test_a_retry_time_that_is_not_a_positive_number_is_refused_by_name(bad):
    with pytest.raises(ConfigError) as err:
        settings({"checkpoint": "/c", "source": {"retry_timeout_s": bad}})
    assert err.value.path == "backfill.source.retry_timeout_s"


def test_the_spark_kafka_sink_is_a_kafka_sink_that_needs_sparks_connector():
    with pytest.raises(ConfigError, match="Spark's Kafka connector") as err:
        settings({"checkpoint": "/c", "sink": {"type": "spark-kafka"}})
    assert err.value.path == "backfill.sink.type"
    s = settings({"checkpoint": "/c", "sink": {"type": "spark-kafka"}, **JARS})
    assert s.sink.is_kafka and s.needs_kafka
    assert s.dead_letters.type == "kafka"  # the job's dead-letter topic, written by the same writer


def test_producer_section_maps_to_the_java_producer():
    options = spark_producer_options(ProducerSettings(acks=1, compression_type="zstd", linger_ms=20))
    assert options["kafka.acks"] == "1"
    assert options["kafka.compression.type"] == "zstd"
    assert options["kafka.linger.ms"] == "20"
    assert options["kafka.delivery.timeout.ms"] == "120000"  # Java's default when it is large enough
    assert spark_producer_options(ProducerSettings())["kafka.acks"] == "all"
    assert spark_producer_options(ProducerSettings())["kafka.compression.type"] == "none"
    # Java refuses delivery.timeout.ms < linger.ms + request.timeout.ms: a long request timeout raises it.
    long = spark_producer_options(ProducerSettings(request_timeout_ms=120_000, linger_ms=5))
    assert int(long["kafka.delivery.timeout.ms"]) >= 120_005


def test_writer_options_carry_the_sasl_mapping_and_wait_for_the_broker():
    from types import SimpleNamespace

    from cdc_smt.connector.spark.kafkasink import writer_options

    kafka = KafkaSettings(
        ("b:9092",), security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-256", sasl_username="u", sasl_password="p"
    )
    options = writer_options(SimpleNamespace(kafka=kafka, producer=ProducerSettings()), 45)
    assert options["kafka.bootstrap.servers"] == "b:9092"
    assert options["kafka.security.protocol"] == "SASL_SSL"
    assert options["kafka.sasl.jaas.config"].startswith("org.apache.kafka.common.security.scram.ScramLoginModule")
    assert options["kafka.max.block.ms"] == "45000"


def test_sparks_kafka_source_waits_as_long_as_the_python_source():
    from cdc_smt.connector.spark.backfill import spark_kafka_retry_options

    options = spark_kafka_retry_options(90)
    assert options["kafkaConsumer.pollTimeoutMs"] == options["kafka.default.api.timeout.ms"] == "90000"
    assert options["failOnDataLoss"] == "true"  # offsets gone from the broker stop the run, never skipped


def test_a_task_that_gave_up_on_the_broker_is_explained_by_its_one_line():
    from cdc_smt.connector.spark.backfill import explain

    trace = (
        "pyspark.errors.exceptions.captured.StreamingQueryException: [STREAM_FAILED] ...\n"
        "Traceback (most recent call last):\n  File 'x', line 1\n"
        "cdc_smt.connector.kafka.errors.KafkaUnavailable: cannot reach Kafka at 127.0.0.1:9: connection refused "
        "(waited 60 s; set backfill.source.retry_timeout_s to wait longer)\n"
        "\tat org.apache.spark.Foo\n"
    )
    assert explain(RuntimeError(trace)).endswith(
        "KafkaUnavailable: cannot reach Kafka at 127.0.0.1:9: connection refused "
        "(waited 60 s; set backfill.source.retry_timeout_s to wait longer)"
    )


def test_a_timeout_of_sparks_kafka_client_names_the_broker():
    from cdc_smt.connector.spark.backfill import explain

    trace = (
        "pyspark.errors.exceptions.captured.StreamingQueryException: [STREAM_FAILED] Query terminated\n"
        "org.apache.kafka.common.errors.TimeoutException: Timeout of 60000ms expired before the position "
        "for partition t-0 could be determined\n"
        "\tat org.apache.kafka.clients.consumer.KafkaConsumer.position(KafkaConsumer.java:1)\n"
    )
    assert explain(RuntimeError(trace), "127.0.0.1:9092") == (
        "Kafka at 127.0.0.1:9092 did not answer in time: TimeoutException: Timeout of 60000ms expired before the "
        "position for partition t-0 could be determined (set backfill.source.retry_timeout_s to wait longer)"
    )
