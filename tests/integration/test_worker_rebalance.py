"""Records the worker's drain loop receives during a rebalance and does not process are fetched again.

Returning records advances aiokafka's position past them; the loop drops what it receives while
Faust's flow is suspended. :func:`~cdc_smt.connector.worker.app.seek_back` undoes such a fetch
(the worker runs it in Faust's consumer thread), with a real consumer against the test broker.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest

from cdc_smt.connector.worker.app import current_assignment, seek_back
from tests.integration.helpers import KafkaCluster, produce, row_changes

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

COUNT = 10


async def _fetch(consumer: Any, count: int, timeout: float = 30.0) -> list[int]:
    """Offsets of the next ``count`` records the consumer returns (fewer only on timeout)."""
    offsets: list[int] = []
    deadline = time.monotonic() + timeout
    while len(offsets) < count and time.monotonic() < deadline:
        batch = await consumer.getmany(timeout_ms=200, max_records=count - len(offsets))
        for msgs in batch.values():
            offsets.extend(m.offset for m in msgs)
    return offsets


def _run(kafka: KafkaCluster, topic: str, scenario: Any) -> Any:
    from aiokafka import AIOKafkaConsumer

    async def go() -> Any:
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=kafka.bootstrap,
            group_id=f"rebal-{uuid.uuid4().hex[:8]}",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        try:
            return await scenario(consumer)
        finally:
            await consumer.stop()

    return asyncio.run(go())


@pytest.fixture
def topic(kafka: KafkaCluster, names: Any) -> str:
    name = names("rebal")
    produce(kafka, name, row_changes(rows=COUNT // 2, updates=1), partitions=1)
    return name


def test_records_received_and_not_processed_are_fetched_again(kafka: KafkaCluster, topic: str) -> None:
    from aiokafka import TopicPartition

    tp = TopicPartition(topic, 0)

    async def scenario(consumer: Any) -> tuple[list[int], dict[Any, int], list[int]]:
        first = await _fetch(consumer, COUNT)
        # The loop processed offsets 0-3 and dropped the rest (the flow was suspended).
        rewound = await seek_back(consumer, current_assignment(consumer), {tp: 4})
        return first, rewound, await _fetch(consumer, COUNT - 4)

    first, rewound, again = _run(kafka, topic, scenario)
    assert first == list(range(COUNT))
    assert rewound == {tp: 4}
    assert again == list(range(4, COUNT))


def test_a_seek_since_the_fetch_is_left_alone(kafka: KafkaCluster, topic: str) -> None:
    """Faust sought to the committed offset after the fetch: that position already re-reads them."""
    from aiokafka import TopicPartition

    tp = TopicPartition(topic, 0)

    async def scenario(consumer: Any) -> tuple[dict[Any, int], list[int]]:
        await _fetch(consumer, COUNT)
        assignment = current_assignment(consumer)
        consumer.seek(tp, 2)
        rewound = await seek_back(consumer, assignment, {tp: 6})
        return rewound, await _fetch(consumer, COUNT - 2)

    rewound, again = _run(kafka, topic, scenario)
    assert rewound == {}
    assert again == list(range(2, COUNT))


def test_records_of_an_earlier_assignment_are_left_to_the_new_one(kafka: KafkaCluster, topic: str) -> None:
    """A new assignment starts from the committed offset: a seek for the old one must not move it."""
    from aiokafka import TopicPartition

    tp = TopicPartition(topic, 0)

    async def scenario(consumer: Any) -> tuple[bool, dict[Any, int], list[int]]:
        await _fetch(consumer, COUNT)
        await consumer.commit({tp: 3})
        old = current_assignment(consumer)
        consumer.unsubscribe()
        consumer.subscribe([topic])  # a rebalance: a new assignment, positions from the committed offset
        again = await _fetch(consumer, COUNT - 3)
        new_assignment = current_assignment(consumer) is not old
        rewound = await seek_back(consumer, old, {tp: 5})
        return new_assignment, rewound, again + await _fetch(consumer, 1, timeout=1.0)

    new_assignment, rewound, again = _run(kafka, topic, scenario)
    assert new_assignment
    assert rewound == {}
    assert again == list(range(3, COUNT))
