"""``split_updates``: an update becomes a delete of the old row and an insert of the new one."""

from __future__ import annotations

from typing import Any

import msgspec

from cdc_smt.transforms.model import ChangeEvent, Op
from cdc_smt.transforms.options import Option, Options
from cdc_smt.transforms.smt.base import Result, Transform, tombstone_for


def full_before(event: ChangeEvent) -> dict[str, Any]:
    """The before-image with the columns it omits (unchanged ones, as in Canal's
    ``old``) filled from the after-image; partial events are left as they are."""
    before = event.before or {}
    after = event.after
    if event.partial or not after or all(k in before for k in after):
        return dict(before)
    out = {k: before[k] if k in before else v for k, v in after.items()}
    for k, v in before.items():
        out.setdefault(k, v)
    return out


def key_changed(event: ChangeEvent) -> bool:
    """Did the update change a primary-key column? (Unknown keys count as unchanged.)"""
    before, after = event.before, event.after
    if not event.pk or before is None or after is None:
        return False
    return any(k in before and k in after and before[k] != after[k] for k in event.pk)


class SplitUpdates(Transform):
    """Replace updates by a delete (the full before-image) followed by an insert
    (the after-image): `always`, or only when the primary key changed
    (`key_change`), which is what sinks keyed by primary key need to remove the
    old row. `tombstone` adds a tombstone after the delete, for compacted
    topics (as Debezium does on key changes).
    """

    name = "split_updates"
    known_as = "Flink -U/+U changelog; Debezium primary-key change events"
    options = (
        Option("mode", str, "always", "Which updates to split.", choices=("always", "key_change")),
        Option("tombstone", bool, False, "Emit a tombstone for the old key after the delete."),
    )

    def configure(self, opts: Options) -> None:
        self._always = opts.mode == "always"
        self._tombstone = opts.tombstone

    def apply(self, event: ChangeEvent) -> Result:
        if event.op is not Op.UPDATE or event.before is None or event.after is None:
            return event
        if not self._always:
            if event.values is not None and event.pk:
                event.typed()  # compare key values, not their text forms
            if not key_changed(event):
                return event
        before = full_before(event)
        # New events, not reproductions of the update: format extras (Canal's "old" keys...)
        # would describe the update, so only the chain's own markers carry over.
        extra = {k: v for k, v in event.extra.items() if k.startswith("cdc_smt.")}
        delete = msgspec.structs.replace(
            event, op=Op.DELETE, before=before, after=None, changed=None, origin=None, extra=extra,
            headers=_copy(event.headers),
        )  # fmt: skip
        insert = msgspec.structs.replace(event, op=Op.INSERT, before=None, changed=None, origin=None, extra=dict(extra))
        if self._tombstone:
            return [delete, tombstone_for(delete), insert]
        return [delete, insert]


def _copy(headers: list[tuple[str, bytes]] | None) -> list[tuple[str, bytes]] | None:
    return list(headers) if headers is not None else None
