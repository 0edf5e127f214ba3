"""Cluster metadata and topic administration: readiness, topic lists, partition counts, creation."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Iterable, Mapping

from cdc_smt.connector.kafka.settings import Conn, client_kwargs


def _admin_kwargs(conn: Conn) -> dict[str, Any]:
    kw = client_kwargs(conn)
    kw.pop("client_id", None)
    return kw


async def wait_until_ready(conn: Conn, timeout: float = 30.0) -> None:
    """Return once the cluster answers a metadata request (raises ``TimeoutError``)."""
    from aiokafka.admin import AIOKafkaAdminClient

    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        admin = AIOKafkaAdminClient(**_admin_kwargs(conn), request_timeout_ms=5000)
        try:
            await admin.start()
            await admin.list_topics()
            return
        except Exception as exc:  # noqa: BLE001 - retried until the deadline
            last = exc
            await asyncio.sleep(0.25)
        finally:
            await admin.close()
    raise TimeoutError(f"Kafka at {client_kwargs(conn).get('bootstrap_servers')} not ready after {timeout:.0f}s: {last}")


async def list_topics(conn: Conn) -> set[str]:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(**_admin_kwargs(conn))
    await admin.start()
    try:
        return set(await admin.list_topics())
    finally:
        await admin.close()


async def partition_counts(conn: Conn, topics: Iterable[str]) -> dict[str, int]:
    """Partitions per existing topic (missing topics are left out)."""
    from aiokafka.admin import AIOKafkaAdminClient

    names = sorted(set(topics))
    if not names:
        return {}
    admin = AIOKafkaAdminClient(**_admin_kwargs(conn))
    await admin.start()
    try:
        out = {}
        for desc in await admin.describe_topics(names):
            if desc.get("error_code", 0) == 0 and desc.get("partitions"):
                out[desc["topic"]] = len(desc["partitions"])
        return out
    finally:
        await admin.close()


async def create_topics(
    conn: Conn,
    topics: Mapping[str, int],
    *,
    replication_factor: int = 1,
    config: Mapping[str, str] | None = None,
) -> list[str]:
    """Create the topics (name -> partitions) that do not exist yet; return those created."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic
    from aiokafka.errors import TopicAlreadyExistsError

    admin = AIOKafkaAdminClient(**_admin_kwargs(conn))
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        wanted = [
            NewTopic(name, n, replication_factor, topic_configs=dict(config or {}))
            for name, n in topics.items()
            if name not in existing
        ]
        if not wanted:
            return []
        try:
            resp = await admin.create_topics(wanted)
        except TopicAlreadyExistsError:
            return []
        created = []
        for name, code, *rest in getattr(resp, "topic_errors", []):
            if code == 0:
                created.append(name)
            elif code != TopicAlreadyExistsError.errno:
                msg = rest[0] if rest else ""
                raise RuntimeError(f"cannot create topic {name}: error {code} {msg or ''}".strip())
        return created
    finally:
        await admin.close()


__all__ = ["create_topics", "list_topics", "partition_counts", "wait_until_ready"]
