"""Output partitioning matches the Java client's (murmur2), so keyed output lands where any producer puts it."""

from __future__ import annotations

from aiokafka.partitioner import DefaultPartitioner, murmur2 as aiokafka_murmur2
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
