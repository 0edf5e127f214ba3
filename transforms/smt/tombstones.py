"""``drop_tombstones``: remove tombstones (null-value records)."""

from __future__ import annotations

from cdc_smt.transforms.model import ChangeEvent
from cdc_smt.transforms.smt.base import TOMBSTONE, Result, Transform


class DropTombstones(Transform):
    """Drop tombstones (null-value records that follow deletes for log
    compaction), for sinks that cannot take a null value."""

    name = "drop_tombstones"
    known_as = "Kafka Connect Filter + RecordIsTombstone; Debezium drop.tombstones"
    scope = "all"

    def adds_columns(self) -> tuple[str, ...]:
        return ()

    def apply(self, event: ChangeEvent) -> Result:
        return None if TOMBSTONE in event.extra and event.extra[TOMBSTONE] else event
