"""``timezone_convert``: re-base zone-less DATETIME/TIMESTAMP values from one zone to another."""

from __future__ import annotations

import datetime as dt
from typing import Any

from cdc_smt.transforms.model import ChangeEvent
from cdc_smt.transforms.options import Option, Options, check_timezone
from cdc_smt.transforms.smt.base import Result, Transform, check_names, zone
from cdc_smt.transforms.types import Kind


def rebase(value: dt.datetime, source: str, target: str) -> dt.datetime:
    """The wall-clock time in ``target`` of ``value`` read as wall-clock in ``source``."""
    if source == target:
        return value
    return value.replace(tzinfo=zone(source)).astimezone(zone(target)).replace(tzinfo=None)


class TimezoneConvert(Transform):
    """Re-base zone-less times to the zone `to`.

    DATETIME values are wall-clock times in `from` (default: the event's zone,
    i.e. the decoder's `source_timezone`) and become the same instants'
    wall-clock times in `to`; this is the only transform that shifts DATETIME.
    TIMESTAMP values are instants and keep their instant: they are re-expressed
    in `to` and the event's zone becomes `to`. Without a table schema every
    date-time value of `fields` is treated as DATETIME. DATE and TIME columns
    and invalid (zero) dates are left alone.
    """

    name = "timezone_convert"
    known_as = "Debezium TimezoneConverter"
    options = (
        Option("to", str, doc="Target IANA zone, e.g. `UTC`.", check=check_timezone),
        Option("from", str, None, "Zone of DATETIME values (default: the event's zone).", check=check_timezone),
        Option(
            "fields",
            list,
            [],
            "Columns to convert (default: every DATETIME and TIMESTAMP column).",
            check=check_names,
        ),
    )

    def configure(self, opts: Options) -> None:
        values = opts.as_dict()
        self._to: str = values["to"]
        self._from: str | None = values["from"]
        self._fields = frozenset(opts.fields) or None

    def _plan(self, event: ChangeEvent) -> list[tuple[str, str]]:
        """``(column, source zone)`` pairs to convert in this event."""
        wall = self._from or event.timezone
        schema = event.schema
        if schema is None:
            names = (
                self._fields
                if self._fields is not None
                else {k for img in (event.before, event.after) if img for k in img}
            )
            return [(n, wall) for n in names]
        out = []
        for c in schema.columns:
            if self._fields is not None and c.name not in self._fields:
                continue
            kind = c.mysql.kind
            if kind is Kind.DATETIME:
                out.append((c.name, wall))
            elif kind is Kind.TIMESTAMP:
                out.append((c.name, event.timezone))
        return out

    def apply(self, event: ChangeEvent) -> Result:
        event.typed()
        to = self._to
        for name, source in self._plan(event):
            for img in (event.before, event.after):
                if img is None:
                    continue
                v: Any = img.get(name)
                if type(v) is dt.datetime:
                    img[name] = rebase(v, source, to)
        event.timezone = to
        return event
