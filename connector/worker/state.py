"""Chain state in changelog-backed Faust tables: a restarted worker continues where it stopped.

Some chains keep state across records: the schema catalog (TDSQL and CKafka
rows are named and typed only by DDL seen earlier in the stream) and codecs
that hold a message back for its partner (DataWorks' UPDATE_BEFOR halves).
That state belongs to a source partition, so it lives in a Faust table
co-partitioned with the source topics: the changelog partition ``p`` of table
``chain-state-p{n}`` is assigned, by Faust's partition assignor, to the worker
that owns partition ``p`` of every ``n``-partition source topic, and Faust
recovers it from the changelog before that worker reads the partition.

Consistency with at-least-once. A snapshot is written with the batch that
changed the state, as one more record of that batch: the batch's source
offset is committed only after the snapshot is acknowledged too. Because
snapshots are acknowledged ahead of the (periodic) commit, a crash can leave
snapshots *newer* than the committed offset; restoring one of those and then
re-reading the records after the commit would apply them twice (a DDL
replayed onto a catalog that already has it, a half paired with itself). So
the table value keeps a short history, ``[(next_offset, state), ...]``, and a
restart takes the newest snapshot whose ``next_offset`` is at or before the
offset it resumes from: exactly the state the records before it left.
Snapshots older than the newest one at or before the last commit are pruned.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import orjson

log = logging.getLogger("cdc_smt.worker")

#: Snapshots kept per partition beyond the committed one (commits lagging state changes).
MAX_SNAPSHOTS = 32

Snapshots = list[tuple[int, bytes]]  # (next_offset, serialized chain state), oldest first


def encode_snapshots(snapshots: Snapshots) -> bytes:
    """The table value: ``{"snapshots": [[next_offset, state], ...]}``."""
    return b'{"snapshots":[' + b",".join(b"[%d,%s]" % (offset, blob) for offset, blob in snapshots) + b"]}"


def decode_snapshots(value: bytes | None) -> Snapshots:
    if not value:
        return []
    return [(int(offset), orjson.dumps(state)) for offset, state in orjson.loads(value)["snapshots"]]


def pick(snapshots: Snapshots, resume_offset: int) -> bytes | None:
    """The state to continue from at ``resume_offset``: the newest snapshot not ahead of it."""
    best = None
    for offset, blob in snapshots:
        if offset <= resume_offset:
            best = blob
    return best


def push(snapshots: Snapshots, next_offset: int, blob: bytes, committed: int | None) -> Snapshots:
    """``snapshots`` plus the state after ``next_offset``, pruned below the last commit."""
    kept = [s for s in snapshots if s[0] < next_offset] + [(next_offset, blob)]
    if committed is not None:
        base = max((i for i, (offset, _) in enumerate(kept) if offset <= committed), default=0)
        kept = kept[base:]
    if len(kept) > MAX_SNAPSHOTS + 1:
        kept = kept[-(MAX_SNAPSHOTS + 1) :]
    return kept


class StateStore:
    """Per source partition chain state in Faust tables, one table per source partition count.

    Tables must exist before the Faust app starts: :meth:`for_topics` is called with
    the resolved source topics. A topic found later (``source.pattern``) whose
    partition count has no table keeps its state in memory only (logged).
    """

    def __init__(self, app: Any, partition_counts: dict[str, int]) -> None:
        self.topic_partitions = dict(partition_counts)
        self.tables: dict[int, Any] = {}
        for n in sorted(set(partition_counts.values())):
            self.tables[n] = app.Table(
                f"chain-state-p{n}",
                partitions=n,
                key_type=bytes,  # bytes: Faust's "raw" serializer both ways
                value_type=bytes,
                help="cdc-smt chain state (schema catalog, held-back halves) per source partition",
            )
        self._snapshots: dict[tuple[str, int], Snapshots] = {}
        self._warned: set[str] = set()

    def _table(self, topic: str) -> Any:
        n = self.topic_partitions.get(topic)
        table = self.tables.get(n) if n is not None else None
        if table is None and topic not in self._warned:
            self._warned.add(topic)
            log.warning(
                "source topic %s has no state table (found after start-up): its chain state is not persisted", topic
            )
        return table

    @staticmethod
    def key(topic: str, partition: int) -> bytes:
        return f"{topic}:{partition}".encode()

    def add_topics(self, partition_counts: dict[str, int]) -> None:
        for topic, n in partition_counts.items():
            self.topic_partitions.setdefault(topic, n)

    def restore(self, topic: str, partition: int, resume_offset: int) -> bytes | None:
        """The state to restore for a partition resuming at ``resume_offset`` (``None``: start empty)."""
        table = self._table(topic)
        if table is None:
            return None
        snapshots = decode_snapshots(table.data.get(self.key(topic, partition)))
        self._snapshots[(topic, partition)] = snapshots
        blob = pick(snapshots, resume_offset)
        if blob is None and snapshots:
            log.warning(
                "%s[%d]: every stored state snapshot is ahead of offset %d (first at %d): starting with empty state",
                topic,
                partition,
                resume_offset,
                snapshots[0][0],
            )
        elif blob is not None:
            log.info(
                "%s[%d]: chain state restored for offset %d",
                topic,
                partition,
                resume_offset,
                extra={"event": "state_restored"},
            )
        return blob

    def update(
        self, topic: str, partition: int, next_offset: int, blob: bytes, committed: int | None
    ) -> tuple[str, bytes, bytes] | None:
        """Record a new snapshot; returns the changelog record to produce with its batch
        as ``(changelog topic, key, value)`` (its partition is the source partition)."""
        table = self._table(topic)
        if table is None:
            return None
        snapshots = push(self._snapshots.get((topic, partition), []), next_offset, blob, committed)
        self._snapshots[(topic, partition)] = snapshots
        key, value = self.key(topic, partition), encode_snapshots(snapshots)
        table.data[key] = value  # the local store; the changelog record goes out with the batch
        return table.changelog_topic.get_topic_name(), key, value

    def forget(self, tps: Iterable[tuple[str, int]]) -> None:
        for tp in tps:
            self._snapshots.pop(tp, None)


__all__ = ["MAX_SNAPSHOTS", "StateStore", "decode_snapshots", "encode_snapshots", "pick", "push"]
