"""A consumer group's committed offsets."""

from __future__ import annotations

from collections.abc import Sequence

from cdc_smt.connector.kafka.consume import stop_consumer
from cdc_smt.connector.kafka.settings import Conn, client_kwargs


async def committed_offsets(conn: Conn, group: str, topics: Sequence[str]) -> dict[tuple[str, int], int]:
    """(topic, partition) -> committed offset of ``group``; partitions without a commit are left out.

    Asks the group coordinator through a consumer that never joins the group
    (OffsetFetch), which every broker we test against supports.
    """
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(**client_kwargs(conn), group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        # A consumer without a subscription holds no topic metadata on Apache Kafka (Tansu
        # returns every topic anyway): fetch it, or no partition is found.
        await consumer._client.force_metadata_update()  # noqa: SLF001
        out: dict[tuple[str, int], int] = {}
        for topic in topics:
            for p in sorted(consumer.partitions_for_topic(topic) or ()):
                off = await consumer.committed(TopicPartition(topic, p))
                if off is not None and off >= 0:
                    out[(topic, p)] = off
        return out
    finally:
        await stop_consumer(consumer)


__all__ = ["committed_offsets"]
