"""Templates over event fields (``cdc.{database}.{table}``), compiled once.

Fields: ``database``, ``table``, ``schema``, ``op``, ``db_type``, ``topic``
(current), ``source_topic``, ``partition``, ``timestamp`` (source commit time,
else the record's timestamp; ``{timestamp:%Y%m%d}`` takes a strftime format,
default ``%Y%m%d``, in UTC), ``row.COL`` / ``after.COL`` / ``before.COL`` /
``key.COL`` (values). ``{{`` and ``}}`` are literal braces. A template whose
field is null for an event renders as ``None``: callers decide what that means.
"""

from __future__ import annotations

import datetime as dt
import string
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from cdc_smt.transforms.model import ChangeEvent
from cdc_smt.transforms.smt.base import current_topic

Getter = Callable[[ChangeEvent], Any]

_UTC = dt.UTC
_SIMPLE: dict[str, Getter] = {
    "database": lambda e: e.source.database,
    "table": lambda e: e.source.table,
    "schema": lambda e: e.source.schema,
    "db_type": lambda e: e.source.db_type,
    "op": lambda e: e.op.value,
    "topic": current_topic,
    "source_topic": lambda e: e.record.topic if e.record is not None else None,
    "partition": lambda e: e.record.partition if e.record is not None else None,
}
_IMAGES: dict[str, Getter] = {
    "row": lambda e: e.after if e.after is not None else e.before,
    "after": lambda e: e.after,
    "before": lambda e: e.before,
    "key": lambda e: e.key_values(),
}
FIELDS = (*_SIMPLE, "timestamp", *(f"{k}.COL" for k in _IMAGES))
_PER_TABLE = frozenset({"database", "table", "schema", "db_type", "op"})


def text(v: Any) -> str | None:
    """A value as template/header text (``None`` stays ``None``)."""
    if v is None:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, Decimal):
        return format(v, "f")
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _timestamp(fmt: str) -> Getter:
    def get(e: ChangeEvent) -> str | None:
        ms = e.ts_ms
        if ms is None and e.record is not None:
            ms = e.record.timestamp
        if ms is None:
            return None
        return dt.datetime.fromtimestamp(ms / 1000, _UTC).strftime(fmt)

    return get


def _image(root: Getter, col: str) -> Getter:
    def get(e: ChangeEvent) -> Any:
        img = root(e)
        return None if img is None else img.get(col)

    return get


class Template:
    """A compiled template. ``render(event)`` -> text, or ``None`` when a field is null."""

    __slots__ = ("source", "_parts", "uses_values", "columns", "static", "_by_table", "_cache")

    def __init__(self, source: str) -> None:
        """Compile ``source``; raise ``ValueError`` naming a bad field."""
        self.source = source
        parts: list[str | Getter] = []
        self.uses_values = False
        #: row columns named (``row.COL``, ``after.COL``, ``before.COL``; not ``key.COL``)
        self.columns: tuple[str, ...] = ()
        try:
            parsed = list(string.Formatter().parse(source))
        except ValueError as exc:
            raise ValueError(f"bad template {source!r}: {exc}") from None
        for literal, field, spec, conversion in parsed:
            if literal:
                parts.append(literal)
            if field is None:
                continue
            if conversion:
                raise ValueError(f"bad template field {{{field}!{conversion}}}: conversions are not supported")
            parts.append(self._getter(field, spec or ""))
        self._parts = tuple(parts)
        self.static = all(isinstance(p, str) for p in parts)
        #: only per-table fields: render once per (database, table, schema, db_type, op)
        self._by_table = all(f in _PER_TABLE for _, f, _, _ in parsed if f is not None)
        self._cache: dict[tuple, str | None] = {}

    def _getter(self, field: str, spec: str) -> Getter:
        if field == "timestamp":
            return _timestamp(spec or "%Y%m%d")
        if spec:
            raise ValueError(f"template field {{{field}}} takes no format (only {{timestamp:...}} does)")
        if field in _SIMPLE:
            get = _SIMPLE[field]
            return lambda e: text(get(e))
        root, dot, col = field.partition(".")
        if dot and col and root in _IMAGES:
            self.uses_values = True
            if root != "key":
                self.columns = (*self.columns, col)
            get = _image(_IMAGES[root], col)
            return lambda e: text(get(e))
        raise ValueError(f"unknown template field {{{field}}} (known: {', '.join(FIELDS)})")

    def static_text(self) -> str:
        """The text of a template without fields."""
        if not self.static:
            raise ValueError(f"template {self.source!r} has fields")
        return "".join(p for p in self._parts if isinstance(p, str))  # static: every part is text

    def render(self, event: ChangeEvent) -> str | None:
        if self._by_table:
            src = event.source
            key = (src.database, src.table, src.schema, src.db_type, event.op)
            try:
                return self._cache[key]
            except KeyError:
                if len(self._cache) > 65536:
                    self._cache.clear()
                text = self._cache[key] = self._render(event)
                return text
        return self._render(event)

    def _render(self, event: ChangeEvent) -> str | None:
        if self.uses_values and event.values is not None:
            event.typed()
        out = []
        for p in self._parts:
            if isinstance(p, str):
                out.append(p)
            else:
                v = p(event)
                if v is None:
                    return None
                out.append(v)
        return "".join(out)


def check_template(source: str) -> None:
    """Option check: the template compiles."""
    Template(source)
