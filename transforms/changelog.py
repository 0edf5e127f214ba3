"""Replaying change events into table state: the yardstick for "lossless".

Two streams are equivalent when replaying them yields the same final tables.
Used by tests, by ``cdc-smt`` conformance checks and by anyone who wants to
check a conversion on their own data.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cdc_smt.transforms.model import ChangeEvent, Op

TableKey = tuple[str | None, str | None]
RowKey = tuple[Any, ...]


def row_key(event: ChangeEvent, image: dict[str, Any]) -> RowKey:
    """The identity of a row: primary-key values, or the whole row without a key."""
    if event.pk:
        return tuple(image.get(k) for k in event.pk)
    return tuple(sorted((k, repr(v)) for k, v in image.items()))


def replay(events: Iterable[ChangeEvent]) -> dict[TableKey, dict[RowKey, dict[str, Any]]]:
    """Apply row events in order; return ``{(db, table): {key: row}}`` (typed values).

    Updates are applied as delete-before + upsert-after, so primary-key changes
    move the row. A TRUNCATE empties the table; DDL and markers are skipped.
    """
    tables: dict[TableKey, dict[RowKey, dict[str, Any]]] = {}
    for e in events:
        tkey = (e.source.database, e.source.table)
        if e.op is Op.TRUNCATE:
            tables[tkey] = {}
            continue
        if not e.op.is_row:
            continue
        e.typed()
        rows = tables.setdefault(tkey, {})
        if e.op is Op.DELETE:
            if e.before is not None:
                rows.pop(row_key(e, e.before), None)
            continue
        if e.op is Op.UPDATE and e.before is not None:
            rows.pop(row_key(e, _full_before(e, e.before)), None)
        if e.after is not None:
            rows[row_key(e, e.after)] = dict(e.after)
    return tables


def _full_before(e: ChangeEvent, before: dict[str, Any]) -> dict[str, Any]:
    """``before`` (the event's before-image) with unchanged key columns filled from the after-image."""
    if e.after is None or all(k in before for k in e.pk):
        return before
    merged = dict(e.after)
    merged.update(before)
    return merged
