"""``unwrap``: the row after the change as a flat record (Debezium ExtractNewRecordState)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.model import ChangeEvent, Column, Op
from cdc_smt.transforms.options import Option, Options
from cdc_smt.transforms.smt.base import (
    TOMBSTONE,
    UNWRAPPED,
    Result,
    SchemaMap,
    Transform,
    current_headers,
    tombstone_for,
    with_columns,
)

_DEBEZIUM_OPS = {Op.INSERT: "c", Op.UPDATE: "u", Op.DELETE: "d", Op.READ: "r", Op.TRUNCATE: "t"}

Getter = Callable[[ChangeEvent], Any]


def _src(attr: str) -> Getter:
    return lambda e: getattr(e.source, attr)


#: name -> (getter, MySQL type of the added column)
FIELDS: dict[str, tuple[Getter, str]] = {
    "op": (lambda e: _DEBEZIUM_OPS.get(e.op, e.op.value), "varchar(16)"),
    "database": (_src("database"), "varchar(255)"),
    "schema": (_src("schema"), "varchar(255)"),
    "table": (_src("table"), "varchar(255)"),
    "source_ts_ms": (lambda e: e.ts_ms, "bigint"),
    "processing_ts_ms": (lambda e: e.processing_ts_ms, "bigint"),
    "binlog_file": (_src("binlog_file"), "varchar(255)"),
    "binlog_pos": (_src("binlog_pos"), "bigint unsigned"),
    "gtid": (_src("gtid"), "varchar(255)"),
    "server_id": (_src("server_id"), "bigint unsigned"),
    "commit_ts": (_src("commit_ts"), "bigint unsigned"),
    "scn": (_src("scn"), "bigint unsigned"),
    "sequence_id": (_src("sequence_id"), "varchar(64)"),
    "txid": (_src("txid"), "varchar(64)"),
    "row_index": (_src("row"), "int"),
}
#: shorthands: a name that stands for several fields
ALIASES = {"position": ("binlog_file", "binlog_pos"), "source_ts": ("source_ts_ms",), "ts_ms": ("source_ts_ms",)}
MODES = ("drop", "tombstone", "rewrite", "rewrite-with-tombstone")


def _expand(names: list) -> list[str]:
    out: list[str] = []
    for n in names:
        if not isinstance(n, str):
            raise ValueError(f"expected field names, got {n!r}")
        for f in ALIASES.get(n, (n,)):
            if f not in FIELDS:
                known = ", ".join((*FIELDS, *ALIASES))
                raise ValueError(f"unknown field {n!r} (known: {known})")
            if f not in out:
                out.append(f)
    return out


def _check_fields(names: list) -> None:
    _expand(names)


class Unwrap(Transform):
    """Turn each row change into the flat row after it, for sinks that want
    rows, not change envelopes (lakehouse tables, JDBC, Elasticsearch).

    Inserts, updates and snapshot reads become their after-image. Deletes
    follow `delete_handling`: `drop` them; `tombstone` (a null-value record
    with the key, for compacted topics); `rewrite` (the before-image plus
    `__deleted: "true"`, and `__deleted: "false"` on every other row); or
    `rewrite-with-tombstone` (both). `add_fields` appends metadata columns
    (`__op` in Debezium letters c/u/d/r, `__table`, `__source_ts_ms`,
    `position` = `__binlog_file` + `__binlog_pos`...), `add_headers` the same as
    headers. DDL, heartbeats and other control events pass through. Encoders
    write an unwrapped event's `after` as the whole message value. Field names:
    {fields}.
    """

    name = "unwrap"
    known_as = "Debezium ExtractNewRecordState"
    options = (
        Option("delete_handling", str, "tombstone", "What deletes become.", choices=MODES),
        Option(
            "drop_tombstones",
            bool,
            True,
            "Drop tombstones that arrive from the source (Debezium's own, after each delete).",
        ),
        Option(
            "add_fields", list, [], "Metadata columns to add, e.g. `[op, table, source_ts_ms]`.", check=_check_fields
        ),
        Option("add_headers", list, [], "Metadata headers to add (same names as `add_fields`).", check=_check_fields),
        Option("prefix", str, "__", "Prefix of added columns and headers (`__op`)."),
    )

    __doc__ = (__doc__ or "").replace("{fields}", ", ".join(f"`{n}`" for n in (*FIELDS, *ALIASES)))

    def configure(self, opts: Options) -> None:
        if opts.prefix == "" and (opts.add_fields or opts.add_headers):
            raise ConfigError("an empty prefix would let metadata overwrite row columns", f"{self.path}.prefix")
        mode = opts.delete_handling
        self._drop_deletes = mode == "drop"
        self._rewrite = mode in ("rewrite", "rewrite-with-tombstone")
        self._tombstone = mode in ("tombstone", "rewrite-with-tombstone")
        self._drop_tombstones = opts.drop_tombstones
        prefix = opts.prefix
        self._deleted = f"{prefix}deleted"
        self._fields = tuple((prefix + n, FIELDS[n][0]) for n in _expand(opts.add_fields))
        self._headers = tuple((prefix + n, FIELDS[n][0]) for n in _expand(opts.add_headers))
        added = [Column(prefix + n, FIELDS[n][1]) for n in _expand(opts.add_fields)]
        if self._rewrite:
            added.append(Column(self._deleted, "varchar(5)"))
        self._schema = SchemaMap(lambda s: with_columns(s, added))

    def apply_batch(self, events: list[ChangeEvent]) -> list[ChangeEvent]:
        # Source tombstones are not row events for the base loop, so handle them here first.
        if self._drop_tombstones and any(TOMBSTONE in e.extra for e in events):
            events = [e for e in events if not (TOMBSTONE in e.extra and self.selects_tombstone(e))]
        return super().apply_batch(events)

    def selects_tombstone(self, event: ChangeEvent) -> bool:
        pred = self.predicate
        return pred is None or pred.test(event) != self.negate

    def apply(self, event: ChangeEvent) -> Result:
        if event.op is Op.DELETE:
            if self._drop_deletes:
                return None
            if not self._rewrite:
                return tombstone_for(event)
            tomb = tombstone_for(event) if self._tombstone else None
            row = event.before
        else:
            tomb = None
            row = event.after
        if row is None:
            return event  # nothing to unwrap (a partial event); pass it as it is
        if self._fields or self._headers or self._rewrite:
            event.typed()
            image = event.before if event.op is Op.DELETE else event.after
            assert image is not None  # checked above; typed() keeps it
            row = dict(image)
        for name, get in self._fields:
            row[name] = get(event)
        if self._rewrite:
            row[self._deleted] = "true" if event.op is Op.DELETE else "false"
        if self._headers:
            headers = list(current_headers(event))
            for name, get in self._headers:
                value = get(event)
                if value is not None:
                    headers.append((name, str(value).encode("utf-8")))
            event.headers = headers
        event.after = row
        event.before = None
        event.changed = None
        event.extra = {**event.extra, UNWRAPPED: True}
        if event.schema is not None:
            event.schema = self._schema(event.schema)
        return [event, tomb] if tomb is not None else event
