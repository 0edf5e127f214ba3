"""``insert_field``: add static values and record metadata (topic, offset, binlog position...) as columns."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.model import ChangeEvent, Column
from cdc_smt.transforms.options import Option, Options
from cdc_smt.transforms.smt.base import Result, SchemaMap, Transform, current_topic, infer_type, with_columns, zone

Getter = Callable[[ChangeEvent], Any]


def _record(attr: str) -> Getter:
    return lambda e: getattr(e.record, attr) if e.record is not None else None


def _source(attr: str) -> Getter:
    return lambda e: getattr(e.source, attr)


def _as_datetime(ms_getter: Getter) -> Getter:
    """Epoch ms as a TIMESTAMP value: naive, in the event's zone (the model's convention)."""

    def get(e: ChangeEvent) -> Any:
        ms = ms_getter(e)
        if ms is None:
            return None
        return dt.datetime.fromtimestamp(ms / 1000, zone(e.timezone)).replace(tzinfo=None)

    return get


def _position(e: ChangeEvent) -> str | None:
    s = e.source
    if s.binlog_file is None:
        return None
    return f"{s.binlog_file}:{s.binlog_pos}" if s.binlog_pos is not None else s.binlog_file


def _qualified(e: ChangeEvent) -> str | None:
    s = e.source
    if s.table is None:
        return None
    return f"{s.database}.{s.table}" if s.database is not None else s.table


def _record_ts(e: ChangeEvent) -> int | None:
    return e.record.timestamp if e.record is not None else None


#: metadata name -> (getter, MySQL type of the column it adds)
METADATA: dict[str, tuple[Getter, str]] = {
    "topic": (current_topic, "varchar(249)"),
    "source_topic": (_record("topic"), "varchar(249)"),
    "partition": (_record("partition"), "int"),
    "offset": (_record("offset"), "bigint"),
    "timestamp": (_as_datetime(_record_ts), "timestamp(3)"),
    "timestamp_ms": (_record_ts, "bigint"),
    "database": (_source("database"), "varchar(255)"),
    "schema": (_source("schema"), "varchar(255)"),
    "table": (_source("table"), "varchar(255)"),
    "qualified_table": (_qualified, "varchar(511)"),
    "op": (lambda e: e.op.value, "varchar(16)"),
    "source_ts": (_as_datetime(lambda e: e.ts_ms), "timestamp(3)"),
    "source_ts_ms": (lambda e: e.ts_ms, "bigint"),
    "processing_ts_ms": (lambda e: e.processing_ts_ms, "bigint"),
    "binlog_file": (_source("binlog_file"), "varchar(255)"),
    "binlog_pos": (_source("binlog_pos"), "bigint unsigned"),
    "position": (_position, "varchar(300)"),
    "gtid": (_source("gtid"), "varchar(255)"),
    "server_id": (_source("server_id"), "bigint unsigned"),
    "commit_ts": (_source("commit_ts"), "bigint unsigned"),
    "scn": (_source("scn"), "bigint unsigned"),
    "sequence_id": (_source("sequence_id"), "varchar(64)"),
    "txid": (_source("txid"), "varchar(64)"),
    "row_index": (_source("row"), "int"),
}


def _check_metadata(value: Any) -> None:
    if not isinstance(value, dict):
        raise ValueError("expected a mapping {column: metadata name}")
    for col, what in value.items():
        if not isinstance(col, str) or not col:
            raise ValueError(f"bad column name {col!r}")
        if what not in METADATA:
            raise ValueError(f"unknown metadata {what!r} for {col!r} (known: {', '.join(METADATA)})")


def _check_static(value: Any) -> None:
    if not isinstance(value, dict):
        raise ValueError("expected a mapping {column: value}")
    for col, v in value.items():
        if not isinstance(col, str) or not col:
            raise ValueError(f"bad column name {col!r}")
        if not (v is None or isinstance(v, (str, int, float, bool))):
            raise ValueError(f"{col}: static values are strings, numbers, booleans or null, got {type(v).__name__}")


class InsertField(Transform):
    """Add columns to the row: `static` values and `metadata` of the record or its source.

    Columns go into the after-image (the before-image of deletes) and the table
    schema; an existing column of the same name is replaced. Timestamps
    (`timestamp`, `source_ts`) are TIMESTAMP values, `*_ms` epoch
    milliseconds. Metadata names: {names}.
    """

    name = "insert_field"
    known_as = "Kafka Connect InsertField"
    options = (
        Option("static", dict, {}, "Columns with fixed values: `{column: value}`.", check=_check_static),
        Option(
            "metadata",
            dict,
            {},
            "Columns from metadata: `{column: name}`, e.g. `{_offset: offset, _binlog: position}`.",
            check=_check_metadata,
        ),
    )

    __doc__ = (__doc__ or "").replace("{names}", ", ".join(f"`{n}`" for n in METADATA))

    def configure(self, opts: Options) -> None:
        both = set(opts.static) & set(opts.metadata)
        if both:
            raise ConfigError(f"column {sorted(both)[0]!r} is both static and metadata", f"{self.path}.metadata")
        if not opts.static and not opts.metadata:
            raise ConfigError("give static and/or metadata columns", self.path or None)
        self._static = tuple(opts.static.items())
        self._meta = tuple((col, METADATA[what][0]) for col, what in opts.metadata.items())
        columns = [Column(col, infer_type(v) if v is not None else "varchar(255)") for col, v in self._static]
        columns += [Column(col, METADATA[what][1]) for col, what in opts.metadata.items()]
        self._schema = SchemaMap(lambda s: with_columns(s, columns))
        self._added = tuple(c.name for c in columns)

    def adds_columns(self) -> tuple[str, ...]:
        return self._added

    def apply(self, event: ChangeEvent) -> Result:
        event.typed()
        img = event.after if event.after is not None else event.before
        if img is None:
            return event
        for col, value in self._static:
            img[col] = value
        for col, get in self._meta:
            img[col] = get(event)
        if event.schema is not None:
            event.schema = self._schema(event.schema)
        return event
