"""``timestamp_convert``: convert time columns between strings, epoch numbers and date/time types."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from cdc_smt.transforms.errors import TransformError
from cdc_smt.transforms.model import ChangeEvent, Column, TableSchema
from cdc_smt.transforms.options import Option, Options, check_timezone
from cdc_smt.transforms.smt.base import Result, SchemaMap, Transform, check_names, zone
from cdc_smt.transforms.types import InvalidTemporal, Kind

_UNITS = {"seconds": 1, "milliseconds": 1_000, "microseconds": 1_000_000, "nanoseconds": 1_000_000_000}
_TARGET_TYPES = {
    "string": "varchar(64)",
    "unix": "bigint",
    "date": "date",
    "time": "time(6)",
    "datetime": "datetime(6)",
    "timestamp": "timestamp(6)",
}
_EPOCH = dt.datetime(1970, 1, 1)


class TimestampConvert(Transform):
    """Convert time columns to `target`: `string` (formatted with `format`),
    `unix` (epoch number in `unix_precision`), `date`, `time`, `datetime` or
    `timestamp`.

    Inputs may be date/time values, epoch numbers (read in `unix_precision`)
    or strings (parsed with `format`, else ISO 8601). Epoch numbers are instants:
    TIMESTAMP columns and `timestamp` targets use the event's zone (the
    decoder's `source_timezone`), other zone-less values are wall-clock times
    in `timezone` (default: the event's zone). Formats are Python strftime
    patterns (`%Y-%m-%d %H:%M:%S`), not Java ones.
    """

    name = "timestamp_convert"
    known_as = "Kafka Connect TimestampConverter"
    names_columns = True
    options = (
        Option("fields", list, doc="Columns to convert.", check=check_names),
        Option("target", str, doc="Target representation.", choices=tuple(_TARGET_TYPES)),
        Option("format", str, None, "strftime pattern for string output and string input (default: ISO 8601)."),
        Option(
            "unix_precision",
            str,
            "milliseconds",
            "Unit of epoch numbers, read and written.",
            choices=tuple(_UNITS),
        ),
        Option(
            "timezone",
            str,
            None,
            "Zone of zone-less DATETIME values read from or written as epoch numbers (default: the event's zone).",
            check=check_timezone,
        ),
    )

    def configure(self, opts: Options) -> None:
        self._fields = tuple(opts.fields)
        self.columns = self._fields
        self._target = opts.target
        self._format: str | None = opts.format
        self._unit = _UNITS[opts.unix_precision]
        self._tz: str | None = opts.timezone
        new_type = _TARGET_TYPES[opts.target]
        if opts.target == "unix" and self._unit == 1:
            new_type = "bigint"
        fields = set(self._fields)
        self._schema = SchemaMap(
            lambda s: TableSchema(
                tuple(
                    Column(c.name, new_type, c.nullable, c.primary_key, None, c.comment) if c.name in fields else c
                    for c in s.columns
                ),
                s.primary_key,
            )
        )

    def adds_columns(self) -> tuple[str, ...]:
        return ()

    # -- reading ---------------------------------------------------------------
    def _to_datetime(self, v: Any, tz: str) -> dt.datetime | dt.date | dt.timedelta:
        """Any accepted input as a naive datetime (or date/time of day as they are)."""
        if isinstance(v, dt.datetime | dt.date | dt.timedelta):
            return v
        if isinstance(v, bool):
            raise TypeError
        if isinstance(v, (int, float, Decimal)):
            micros = int(Decimal(v) * 1_000_000 / self._unit)
            aware = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=micros)
            return aware.astimezone(zone(tz)).replace(tzinfo=None)
        if isinstance(v, str):
            s = v.strip()
            if self._format is not None:
                return dt.datetime.strptime(s, self._format)
            return dt.datetime.fromisoformat(s)
        raise TypeError

    # -- writing ---------------------------------------------------------------
    def _convert(self, v: Any, tz: str) -> Any:
        if isinstance(v, InvalidTemporal):
            # Text targets keep a zero or impossible date's text; a number or a TIME cannot
            # carry it, and a silent null would lose it: the caller dead-letters the event.
            if self._target in ("string", "date", "datetime", "timestamp"):
                return v
            raise ValueError(f"{v} is not a valid date or time")
        when = self._to_datetime(v, tz)
        target = self._target
        if isinstance(when, dt.timedelta):
            if target == "time":
                return when
            if target == "string":
                return str(when)
            raise TypeError
        if target == "string":
            if self._format is not None:
                return when.strftime(self._format)
            return when.isoformat(sep=" ") if isinstance(when, dt.datetime) else when.isoformat()
        if not isinstance(when, dt.datetime):
            when = dt.datetime(when.year, when.month, when.day)
        if target == "unix":
            aware = when.replace(tzinfo=zone(tz))
            delta = aware - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
            return (delta // dt.timedelta(microseconds=1)) * self._unit // 1_000_000
        if target == "date":
            return when.date()
        if target == "time":
            return dt.timedelta(
                hours=when.hour, minutes=when.minute, seconds=when.second, microseconds=when.microsecond
            )
        return when  # datetime / timestamp

    def _zone(self, event: ChangeEvent, column: Column | None) -> str:
        """TIMESTAMP values are instants shown in the event's zone; others are wall-clock in ``timezone``."""
        if self._tz is None or self._target == "timestamp":
            return event.timezone
        if column is not None and column.mysql.kind is Kind.TIMESTAMP:
            return event.timezone
        return self._tz

    def apply(self, event: ChangeEvent) -> Result:
        event.typed()
        by_name = event.schema.by_name if event.schema is not None else {}
        zones = {f: self._zone(event, by_name.get(f)) for f in self._fields}
        for img in (event.before, event.after):
            if img is None:
                continue
            for f in self._fields:
                tz = zones[f]
                v = img.get(f)
                if v is None:
                    continue
                try:
                    img[f] = self._convert(v, tz)
                except (ValueError, TypeError, OverflowError):
                    raise TransformError(f"cannot convert column {f!r} value {v!r} to {self._target}") from None
        if event.schema is not None:
            event.schema = self._schema(event.schema)
        return event
