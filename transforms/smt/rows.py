"""``explode_rows`` / ``batch_rows``: one row per message, or several (Canal's ``data`` array).

Both set :data:`transforms.smt.base.ROW_GROUP` in ``event.extra``: encoders of
multi-row formats write consecutive events that share a group as one message
and never put events of different groups in one message; events without a
group are batched as the encoder's own options say.
"""

from __future__ import annotations

import itertools

from cdc_smt.transforms.model import ChangeEvent
from cdc_smt.transforms.options import Option, Options
from cdc_smt.transforms.smt.base import ROW_GROUP, ROW_OPS, TOMBSTONE, Result, Transform

_group_ids = itertools.count(1)


def _positive(v: int) -> None:
    if v < 1:
        raise ValueError("must be at least 1")


class ExplodeRows(Transform):
    """Write every row as a message of its own, even where the source message
    held several (a Canal `data` array) or the encoder would batch a
    transaction's rows: each row gets a row group of its own."""

    name = "explode_rows"
    known_as = "Canal flatMessage; Flink canal-json (one row per record)"

    def apply(self, event: ChangeEvent) -> Result:
        event.extra = {**event.extra, ROW_GROUP: next(_group_ids)}
        return event


class BatchRows(Transform):
    """Group consecutive rows of the same table and op into one multi-row
    message (Canal `data`/`old` arrays) of at most `max_rows` rows.

    Groups form within what the chain hands over at once (the rows of one
    source message); control events end a group. Formats with one row per
    message ignore the grouping.
    """

    name = "batch_rows"
    known_as = "Canal multi-row messages"
    scope = "all"
    options = (Option("max_rows", int, 1000, "Largest number of rows in one message.", check=_positive),)

    def configure(self, opts: Options) -> None:
        self._max = opts.max_rows

    def apply(self, event: ChangeEvent) -> Result:  # single events form groups of one
        return self.apply_batch([event])[0]

    def apply_batch(self, events: list[ChangeEvent]) -> list[ChangeEvent]:
        current: tuple | None = None
        size = 0
        group = 0
        for e in events:
            groupable = e.op in ROW_OPS and TOMBSTONE not in e.extra and self.selects(e)
            if not groupable:
                current = None
                continue
            ident = (e.source.database, e.source.table, e.op, e.topic)
            if ident != current or size >= self._max:
                current = ident
                size = 0
                group = next(_group_ids)
            size += 1
            e.extra = {**e.extra, ROW_GROUP: group}
        return events
