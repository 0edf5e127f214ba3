"""Output partitioning matches the Java client's (murmur2), so keyed output lands where any producer puts it;
the kafka package's synchronous producer delivers to the records' topics and partitions."""

from __future__ import annotations

from aiokafka.partitioner import DefaultPartitioner
from aiokafka.partitioner import murmur2 as aiokafka_murmur2
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_smt.connector.kafka import murmur2, partition_for


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=64))
def test_murmur2_matches_the_reference(data: bytes) -> None:
    assert murmur2(data) == aiokafka_murmur2(data) & 0xFFFFFFFF


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=40), st.integers(min_value=1, max_value=64))
def test_partition_for_matches_the_default_partitioner(key: bytes, partitions: int) -> None:
    every = list(range(partitions))
    assert partition_for(key, partitions) == DefaultPartitioner()(key, every, every)


def test_known_java_values_and_null_keys() -> None:
    # Pinned values (computed by aiokafka's port of the Java client's Utils.murmur2, unsigned).
    assert murmur2(b"21") == 3321034988
    assert murmur2(b"") == 275646681
    assert partition_for(None, 4, keyless=6) == 2  # null keys follow the source partition


def test_blocking_producer_sends_to_each_records_topic_and_partition(kafka, names) -> None:
    """The producer synchronous callers (Spark tasks) use: records land on their own topic and
    partition, acknowledged when ``send`` returns."""
    import asyncio

    from cdc_smt.connector import kafka as K
    from cdc_smt.connector.jobconfig import ProducerSettings
    from cdc_smt.transforms.model import Record

    a, b = names("bp.a"), names("bp.b")
    asyncio.run(K.create_topics(kafka.bootstrap, {a: 3, b: 1}))
    producer = K.BlockingProducer(kafka.bootstrap, ProducerSettings(linger_ms=1))
    try:
        assert (producer.partitions(a), producer.partitions(b)) == (3, 1)
        records = [Record(value=f"v{i}".encode(), key=f"k{i}".encode(), topic=a, partition=i % 3) for i in range(30)]
        records += [Record(value=b"only", key=None, topic=b, partition=0, headers=[("h", b"x")])]
        producer.send(records)
    finally:
        producer.close()
    got_a = asyncio.run(K.consume_all(kafka.bootstrap, a))
    assert sorted((r.partition, r.value) for r in got_a) == sorted((i % 3, f"v{i}".encode()) for i in range(30))
    (only,) = asyncio.run(K.consume_all(kafka.bootstrap, b))
    assert (only.value, only.key, only.headers) == (b"only", None, [("h", b"x")])
