"""The worker's native Kafka record batches (``native/src/kafka_batch.rs``) through a real broker:
sent by aiokafka's producer as the worker sends them (plain, idempotent and transactional
producers, several batches per partition), read back by a consumer as they were written."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from cdc_smt.connector import kafka as K
from cdc_smt.connector.kafka.produce import NativeBatch
from cdc_smt.connector.kafka.settings import client_kwargs
from cdc_smt.connector.worker.pipeline import Pipeline
from cdc_smt.transforms import native
from tests.integration.helpers import KafkaCluster

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(180),
    pytest.mark.skipif(native.kafka_batch() is None, reason="the native core is not built or is off"),
]


def rows(partition: int, n: int) -> list[tuple[Any, ...]]:
    """Keys (some null), values (some empty, one null), timestamps, headers (some, with a null value)."""
    out = []
    for i in range(n):
        key = None if i % 5 == 4 else b"key-%d-%d" % (partition, i)
        value = None if i == 7 else b"" if i % 11 == 3 else b'{"row":%d,"pad":"%s"}' % (i, b"x" * (i % 300))
        headers = [("source", b"p%d" % partition), ("empty", None), ("\u00e9t\u00e9", b"\xff")] if i % 3 == 0 else []
        out.append((key, value, 1_700_000_000_000 + i * 7, headers))
    return out


@pytest.mark.parametrize("mode", ["plain", "idempotent", "transactional"])
def test_native_batches_are_read_back_as_written(kafka: KafkaCluster, names: Any, mode: str) -> None:
    if mode != "plain" and kafka.backend != "apache":
        # The embedded broker answers InitProducerId with an error: no producer ids, so
        # neither idempotent nor transactional producers (the worker uses one only for exactly-once).
        pytest.skip("idempotent and transactional producers: Apache Kafka only")
    topic = names(f"native-batches-{mode}")
    groups = {(topic, 0): rows(0, 400), (topic, 1): rows(1, 150)}

    async def go() -> None:
        from aiokafka import AIOKafkaProducer

        await K.create_topics(kafka.bootstrap, {topic: 2})
        extra: dict[str, Any] = {}
        if mode == "idempotent":
            extra = {"enable_idempotence": True}
        elif mode == "transactional":
            extra = {"transactional_id": names("txn"), "enable_idempotence": True}
        producer = AIOKafkaProducer(
            **client_kwargs(kafka.bootstrap), acks="all", max_batch_size=16_384, linger_ms=5, **extra
        )
        await producer.start()
        try:
            if mode == "transactional":
                await producer.begin_transaction()
            sends = Pipeline.build_batches(producer, groups)
            assert all(isinstance(b, NativeBatch) for _, _, b, _ in sends)
            assert len(sends) > 2  # several batches per partition: sequence numbers follow on
            futures = [await producer.send_batch(b, t, partition=p) for t, p, b, _ in sends]
            # a send() to a partition whose last pending batch is native goes into a batch after it
            futures.append(await producer.send(topic, b"after", key=b"k", partition=1, timestamp_ms=1))
            await asyncio.gather(*futures)
            if mode == "transactional":
                await producer.commit_transaction()
        finally:
            await producer.stop()

    asyncio.run(go())
    got = asyncio.run(K.consume_all(kafka.bootstrap, topic, min_records=551, timeout=60))
    by_partition: dict[int, list[tuple[Any, ...]]] = {0: [], 1: []}
    for r in got:
        assert r.partition is not None
        by_partition[r.partition].append((r.key, r.value, r.timestamp, [(k, v) for k, v in r.headers]))
    for p in (0, 1):
        # consume_all reads a null header value as b"" (the unit tests read the null itself)
        want = [(k, v, ts, [(hk, b"" if hv is None else hv) for hk, hv in h]) for k, v, ts, h in groups[(topic, p)]]
        if p == 1:
            want.append((b"k", b"after", 1, []))
        assert by_partition[p] == want
