"""Maxwell JSON (zendesk/maxwell), as Maxwell writes it and Flink's ``maxwell-json`` reads it.

One message per row: ``{"database","table","type","ts","xid","commit"|"xoffset",
"data","old", ...}``. ``data`` is the full row (after an insert/update, before a
delete); ``old`` holds only the *changed* columns' previous values, so the
before-image is ``data`` overlaid with ``old``. Values are typed JSON: numbers
stay numbers, DATETIME/TIMESTAMP/TIME are MySQL text, binary columns base64,
SET columns JSON arrays and JSON columns embedded JSON. Messages carry no
column types: the schema comes from the catalog when one is configured, else it
is inferred per message from the JSON value types (see :func:`infer_type`).

DDL messages (``table-create``, ``table-alter``, ... with ``--output_ddl``)
carry the table definition in ``def``; their ``ts`` is in milliseconds while
row messages use seconds.

This module also holds the helpers the other schemaless JSON formats share
(OGG imports them): the JSON-native value form, type inference and catalog
merging.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from decimal import Decimal
from functools import lru_cache
from typing import Any, Iterable
from zoneinfo import ZoneInfo

import orjson

from transforms.errors import DecodeError, EncodeError
from transforms.formats.base import Capabilities, JsonCodec
from transforms.model import ChangeEvent, Column, Op, Record, SourcePosition, TableSchema
from transforms.types import (
    InvalidTemporal,
    Kind,
    MySQLType,
    parse_date,
    parse_datetime,
    parse_time,
    parse_type,
    to_json_value,
)

# ---------------------------------------------------------------------------
# Shared helpers for schemaless JSON formats (Maxwell, OGG)
# ---------------------------------------------------------------------------

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_US = dt.timedelta(microseconds=1)


@lru_cache(maxsize=64)
def zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def shift_zone(v: Any, from_zone: str, to_zone: str) -> Any:
    """Re-express a naive TIMESTAMP wall-clock of ``from_zone`` in ``to_zone``."""
    if from_zone == to_zone or not isinstance(v, dt.datetime) or isinstance(v, InvalidTemporal):
        return v
    return v.replace(tzinfo=zone(from_zone)).astimezone(zone(to_zone)).replace(tzinfo=None)


def infer_type(v: Any) -> str | None:
    """MySQL type text guessed from a JSON value (``None`` for null: unknown).

    Integers become ``bigint`` (``bigint unsigned`` / ``decimal(65,0)`` when
    they do not fit), floats ``double``, strings ``longtext``, booleans
    ``bit(1)`` and objects/arrays ``json``.
    """
    if v is None:
        return None
    if isinstance(v, bool):
        return "bit(1)"
    if isinstance(v, int):
        if -(1 << 63) <= v < (1 << 63):
            return "bigint"
        return "bigint unsigned" if 0 <= v < (1 << 64) else "decimal(65,0)"
    if isinstance(v, float):
        return "double"
    if isinstance(v, str):
        return "longtext"
    return "json"


def inferred_columns(images: Iterable[dict | None]) -> tuple[tuple[str, str], ...]:
    """``(name, type)`` for the union of the images' columns, first image's order first."""
    found: dict[str, str | None] = {}
    for image in images:
        if not image:
            continue
        for name, value in image.items():
            if found.get(name) is None:
                found[name] = infer_type(value)
    return tuple((n, t or "longtext") for n, t in found.items())


@lru_cache(maxsize=2048)
def merged_schema(
    columns: tuple[tuple[str, str], ...], pk: tuple[str, ...], catalog: TableSchema | None
) -> TableSchema:
    """The event schema: catalog columns where the catalog knows them, inferred ones elsewhere.

    Cached: the arguments repeat for every message of a table.
    """
    if catalog is not None and tuple(n for n, _ in columns) == catalog.names and (not pk or pk == catalog.primary_key):
        return catalog
    key = pk or (catalog.primary_key if catalog is not None else ())
    cols = []
    for name, type_text in columns:
        known = catalog.column(name) if catalog is not None else None
        if known is not None:
            cols.append(known if known.primary_key == (name in key) else Column(known.name, known.type, known.nullable, name in key, known.default, known.comment))
        else:
            cols.append(Column(name, type_text, nullable=name not in key, primary_key=name in key))
    return TableSchema(columns=tuple(cols), primary_key=key)


def catalog_schema(catalog: Any, database: str | None, table: str | None) -> TableSchema | None:
    """The catalog's schema for a table, or ``None`` (no catalog / unknown table)."""
    if catalog is None or table is None:
        return None
    return catalog.get(database, table)


def json_to_python(t: MySQLType, raw: Any, embedded_json: bool) -> Any:
    """Typed value of a JSON-native raw value in a column of type ``t``.

    ``embedded_json``: JSON columns are written as embedded JSON (Maxwell), so
    every raw value (even a string) is a JSON document to serialise back to text.
    """
    if raw is None:
        return None
    k = t.kind
    if k is Kind.INT or k is Kind.YEAR:
        if isinstance(raw, float):
            if not raw.is_integer():
                raise ValueError(f"{raw!r} is not an integer")
            return int(raw)
        return int(raw)
    if k is Kind.DECIMAL:
        if isinstance(raw, float):
            return Decimal(repr(raw))
        return Decimal(raw if isinstance(raw, str) else int(raw))
    if k is Kind.FLOAT:
        return float(raw)
    if k is Kind.STRING or k is Kind.ENUM:
        return raw if isinstance(raw, str) else orjson.dumps(raw).decode()
    if k is Kind.SET:
        return ",".join(raw) if isinstance(raw, list) else str(raw)
    if k is Kind.JSON:
        if isinstance(raw, str) and not embedded_json:
            return raw
        return orjson.dumps(raw).decode()
    if k is Kind.BYTES or k is Kind.GEOMETRY:
        return base64.b64decode(raw, validate=True)
    if k is Kind.BIT:
        n = int(raw)
        return bool(n) if t.length == 1 else n
    if k is Kind.DATE:
        return parse_date(raw)
    if k is Kind.DATETIME or k is Kind.TIMESTAMP:
        return parse_datetime(raw)
    if k is Kind.TIME:
        return parse_time(raw)
    raise ValueError(f"no JSON conversion for {t.base}")


def python_to_json(t: MySQLType, v: Any, *, embedded_json: bool, set_as_list: bool) -> Any:
    """JSON-native rendering of a typed value (``to_json_value`` plus format quirks)."""
    if v is None:
        return None
    k = t.kind
    if k is Kind.SET and set_as_list:
        return [s for s in v.split(",") if s] if v else []
    if k is Kind.JSON and embedded_json:
        return orjson.loads(v)
    return to_json_value(t, v)


def infer_python_type(v: Any) -> str:
    """MySQL type text for a typed Python value (events that carry no schema)."""
    if isinstance(v, bool):
        return "bit(1)"
    if isinstance(v, int):
        return "bigint" if v < (1 << 63) else "bigint unsigned"
    if isinstance(v, float):
        return "double"
    if isinstance(v, Decimal):
        return "decimal(65,30)"
    if isinstance(v, (bytes, bytearray)):
        return "longblob"
    if isinstance(v, dt.datetime):
        return "datetime(6)"
    if isinstance(v, dt.date):
        return "date"
    if isinstance(v, dt.timedelta):
        return "time(6)"
    return "longtext"


class JsonValues:
    """Raw form of a typed-JSON format: values exactly as parsed from the message."""

    __slots__ = ("name", "embedded_json")

    def __init__(self, name: str, embedded_json: bool) -> None:
        self.name = name
        self.embedded_json = embedded_json

    def to_python(self, column: Column, raw: Any) -> Any:
        return json_to_python(column.mysql, raw, self.embedded_json)


def ordered(out: dict[str, Any], keys: tuple[str, ...] | None) -> dict[str, Any]:
    """``out`` in the original message's key order and key set.

    Keys the original did not have are kept only when they carry a value, so a
    re-encoded message has exactly the original's fields.
    """
    if not keys:
        return out
    result = {k: out[k] for k in keys if k in out}
    for k, v in out.items():
        if k not in result and v is not None and k not in keys:
            result[k] = v
    return result


def require(obj: dict, name: str, types: type | tuple[type, ...], what: str, nullable: bool = False) -> Any:
    """``obj[name]`` checked against ``types``; a DecodeError names the field otherwise."""
    if name not in obj:
        raise DecodeError(f"missing field {name!r}", format=what)
    v = obj[name]
    if v is None and nullable:
        return None
    allowed = types if isinstance(types, tuple) else (types,)
    if not isinstance(v, allowed) or (isinstance(v, bool) and bool not in allowed):
        expected = " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in allowed)
        raise DecodeError(f"field {name!r} must be {expected}, got {_json_name(v)}", format=what)
    return v


def optional(obj: dict, name: str, types: type | tuple[type, ...], what: str) -> Any:
    """Like :func:`require` for fields that may be absent or null."""
    if obj.get(name) is None:
        return None
    return require(obj, name, types, what)


_TYPE_NAMES = {dict: "an object", list: "an array", str: "a string", int: "an integer", float: "a number", bool: "a boolean"}


def _json_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    return _TYPE_NAMES.get(type(v), type(v).__name__)


def typed_image(event: ChangeEvent, image: dict[str, Any] | None) -> dict[str, Any] | None:
    """A typed copy of one image (the event keeps its own form)."""
    if image is None or event.values is None:
        return image
    by_name = event.schema.by_name if event.schema is not None else {}
    form = event.values
    out = {}
    for name, raw in image.items():
        col = by_name.get(name)
        out[name] = form.to_python(col, raw) if col is not None and raw is not None else raw
    return out


# ---------------------------------------------------------------------------
# Maxwell
# ---------------------------------------------------------------------------

_ROW_TYPES = {"insert": Op.INSERT, "update": Op.UPDATE, "delete": Op.DELETE, "bootstrap-insert": Op.READ}
_DDL_TYPES = frozenset({"table-create", "table-alter", "table-drop", "database-create", "database-alter", "database-drop"})
_MARKER_TYPES = frozenset({"bootstrap-start", "bootstrap-complete"})
_TYPE_BY_OP = {Op.INSERT: "insert", Op.UPDATE: "update", Op.DELETE: "delete", Op.READ: "bootstrap-insert"}
#: Fields the model carries; everything else goes to ``event.extra``.
_MAPPED = frozenset(
    {"database", "table", "type", "ts", "xid", "data", "old", "primary_key", "primary_key_columns", "position", "server_id", "gtid", "sql"}
)
_POSITION = re.compile(r"^(?P<file>.+):(?P<pos>\d+)$")
_DDL_KIND = (
    (re.compile(r"^\s*create\s+(database|schema)\b", re.I), "database-create"),
    (re.compile(r"^\s*alter\s+(database|schema)\b", re.I), "database-alter"),
    (re.compile(r"^\s*drop\s+(database|schema)\b", re.I), "database-drop"),
    (re.compile(r"^\s*create\s+(temporary\s+)?table\b", re.I), "table-create"),
    (re.compile(r"^\s*drop\s+(temporary\s+)?table\b", re.I), "table-drop"),
)
_NAME = "maxwell-json"


class MaxwellJson(JsonCodec):
    """Maxwell's JSON: one row per message, ``old`` holds the changed columns."""

    name = _NAME
    description = "Maxwell JSON (zendesk/maxwell; Flink maxwell-json): typed JSON rows, changed-column old values"
    capabilities = Capabilities(
        before_image="full",
        column_types=False,
        primary_key=True,
        binlog_position=True,
        gtid=True,
        transactions=False,
        ddl=True,
        heartbeats=False,
        watermarks=False,
        typed_values=True,
    )
    values = JsonValues(_NAME, embedded_json=True)

    # -- decode ------------------------------------------------------------
    def decode_message(self, obj: dict, record: Record) -> list[ChangeEvent]:
        if "encrypted" in obj:
            raise DecodeError(
                "encrypted Maxwell message (Maxwell --encrypt): decrypt it before decoding", format=self.name
            )
        kind = require(obj, "type", str, self.name)
        database = optional(obj, "database", str, self.name)
        table = optional(obj, "table", str, self.name)
        source = self._source(obj, database, table)
        extra = {k: v for k, v in obj.items() if k not in _MAPPED}
        extra["_keys"] = tuple(obj)
        ts = optional(obj, "ts", int, self.name)
        op = _ROW_TYPES.get(kind)
        if op is not None:
            return [self._row(obj, op, source, extra, ts)]
        if kind in _DDL_TYPES:
            if "old" in obj:  # the table definition before an alter
                extra["old"] = obj["old"]
            sql = optional(obj, "sql", str, self.name)
            definition = optional(obj, "def", dict, self.name)
            return [
                ChangeEvent(
                    op=Op.DDL,
                    source=source,
                    ddl=sql,
                    ddl_kind=kind,
                    schema=_schema_from_def(definition) if definition else None,
                    ts_ms=ts,  # DDL messages carry milliseconds
                    timezone=self.opts.source_timezone,
                    origin=self.name,
                    extra=extra,
                )
            ]
        if kind in _MARKER_TYPES:
            extra["type"] = kind
            if "data" in obj:
                extra["data"] = obj["data"]
            return [
                ChangeEvent(
                    op=Op.HEARTBEAT,
                    source=source,
                    ts_ms=None if ts is None else ts * 1000,
                    timezone=self.opts.source_timezone,
                    origin=self.name,
                    extra=extra,
                )
            ]
        raise DecodeError(f"unknown type {kind!r}", format=self.name)

    def _source(self, obj: dict, database: str | None, table: str | None) -> SourcePosition:
        position = optional(obj, "position", str, self.name)
        binlog_file = binlog_pos = None
        if position is not None:
            m = _POSITION.match(position)
            if m is None:
                raise DecodeError(f"field 'position' must look like 'file:offset', got {position!r}", format=self.name)
            binlog_file, binlog_pos = m.group("file"), int(m.group("pos"))
        xid = optional(obj, "xid", (int, str), self.name)
        return SourcePosition(
            db_type="mysql",
            database=database,
            table=table,
            server_id=optional(obj, "server_id", int, self.name),
            binlog_file=binlog_file,
            binlog_pos=binlog_pos,
            gtid=optional(obj, "gtid", str, self.name),
            txid=None if xid is None else str(xid),
        )

    def _row(self, obj: dict, op: Op, source: SourcePosition, extra: dict, ts: int | None) -> ChangeEvent:
        old = optional(obj, "old", dict, self.name)
        if op is Op.DELETE and obj.get("data") is None and old is not None:
            data, old = old, None  # TiCDC's Maxwell protocol puts the deleted row in "old"
            extra["_delete_in_old"] = True
        else:
            data = require(obj, "data", dict, self.name)
        if op is Op.UPDATE:
            before = dict(data)
            before.update(old or {})
            after, changed = data, tuple(old or ())
        elif op is Op.DELETE:
            before, after, changed = data, None, None
        else:
            before, after, changed = None, data, None
        pk_names = optional(obj, "primary_key_columns", list, self.name)
        pk = tuple(pk_names) if pk_names else ()
        if not pk and "primary_key" in obj:  # key values without names: keep them as they are
            extra["primary_key"] = obj["primary_key"]
        if any(not isinstance(k, str) for k in pk):
            raise DecodeError("field 'primary_key_columns' must be an array of column names", format=self.name)
        columns = inferred_columns((data, old))
        schema = merged_schema(columns, pk, catalog_schema(self.catalog, source.database, source.table))
        return ChangeEvent(
            op=op,
            source=source,
            before=before,
            after=after,
            changed=changed,
            schema=schema,
            pk=schema.primary_key,
            ts_ms=None if ts is None else ts * 1000,
            timezone=self.opts.source_timezone,
            values=self.values,
            origin=self.name,
            extra=extra,
        )

    # -- encode ------------------------------------------------------------
    def encode_message(self, event: ChangeEvent) -> Any:
        op = event.op
        same = event.origin == self.name
        extra = event.extra if same else {}
        if op.is_row:
            out = self._encode_row(event, extra)
        elif op is Op.DDL:
            out = self._encode_ddl(event, extra)
        elif op is Op.HEARTBEAT and same and extra.get("type") in _MARKER_TYPES:
            out = {"database": event.source.database, "table": event.source.table, "type": extra["type"]}
            if event.ts_ms is not None:
                out["ts"] = event.ts_ms // 1000
        elif op is Op.TRUNCATE:
            raise EncodeError("maxwell-json has no message for TRUNCATE (Maxwell does not emit truncates)", format=self.name)
        else:
            return None  # BEGIN/COMMIT/HEARTBEAT/WATERMARK: Maxwell has no such message (documented)
        for k, v in extra.items():
            if not k.startswith("_") and k not in out:
                out[k] = v
        return ordered(out, extra.get("_keys"))

    def _encode_row(self, event: ChangeEvent, extra: dict) -> dict[str, Any]:
        src = event.source
        data, old, op = self._images(event)
        out: dict[str, Any] = {"database": src.database, "table": src.table, "type": _TYPE_BY_OP[op]}
        if event.ts_ms is not None:
            out["ts"] = event.ts_ms // 1000
        if src.txid is not None:
            out["xid"] = int(src.txid) if src.txid.isdigit() else src.txid
        if src.binlog_file is not None and src.binlog_pos is not None:
            out["position"] = f"{src.binlog_file}:{src.binlog_pos}"
        if src.server_id is not None:
            out["server_id"] = src.server_id
        if src.gtid is not None:
            out["gtid"] = src.gtid
        keys = extra.get("_keys") or ()
        if event.pk:
            if "primary_key" in keys:
                out["primary_key"] = [data.get(k) for k in event.pk]
            if not keys or "primary_key_columns" in keys:
                out["primary_key_columns"] = list(event.pk)
        if extra.get("_delete_in_old") and op is Op.DELETE:
            out["old"] = data
            if "data" in keys:
                out["data"] = None
        else:
            out["data"] = data
        if op is Op.UPDATE and (old or "old" in keys):
            out["old"] = old
        return out

    def _images(self, event: ChangeEvent) -> tuple[dict, dict | None, Op]:
        """``data``, ``old`` and the op to write, in Maxwell's value form.

        An update without an after-image (a lone DataWorks before-half) is
        written as a delete of its before row: replaying it has the same effect.
        """
        op = event.op
        if op is Op.UPDATE and event.after is None and event.before is not None:
            op = Op.DELETE
        if op is Op.DELETE:
            if event.before is None:
                raise EncodeError("delete event without a before-image", format=self.name)
            return self._values(event, event.before), None, op
        if event.after is None:
            raise EncodeError(f"{op.value} event without an after-image", format=self.name)
        data = self._values(event, event.after)
        if op is not Op.UPDATE or event.before is None:
            return data, None, op
        before = self._values(event, event.before)
        if event.changed is not None and event.origin == self.name:
            names = event.changed
        else:
            names = tuple(
                k for k, v in before.items() if k not in data or type(data[k]) is not type(v) or data[k] != v
            )
        return data, {k: before[k] for k in names if k in before}, op

    def _values(self, event: ChangeEvent, image: dict[str, Any]) -> dict[str, Any]:
        if event.values is not None and event.values.name == self.name:
            return dict(image)
        image = typed_image(event, image)
        schema = event.schema
        to_zone = self.opts.source_timezone
        out = {}
        for name, v in image.items():
            col = schema.column(name) if schema is not None else None
            t = col.mysql if col is not None else parse_type(infer_python_type(v)) if v is not None else None
            if t is not None and t.kind is Kind.TIMESTAMP:
                v = shift_zone(v, event.timezone, to_zone)
            out[name] = None if v is None else python_to_json(t, v, embedded_json=True, set_as_list=True)
        return out

    def _encode_ddl(self, event: ChangeEvent, extra: dict) -> dict[str, Any]:
        src = event.source
        if event.ddl is None:
            raise EncodeError("DDL event without its statement (Maxwell's 'sql')", format=self.name)
        kind = extra.get("type") if extra else None
        if kind not in _DDL_TYPES:
            kind = event.ddl_kind if event.ddl_kind in _DDL_TYPES else _ddl_kind(event.ddl or "")
        out: dict[str, Any] = {"type": kind, "database": src.database, "table": src.table}
        if event.schema is not None and "def" not in extra and kind.startswith("table-") and kind != "table-drop":
            out["def"] = _def_from_schema(src.database, src.table, event.schema)
        if event.ts_ms is not None:
            out["ts"] = event.ts_ms
        out["sql"] = event.ddl
        if src.binlog_file is not None and src.binlog_pos is not None:
            out["position"] = f"{src.binlog_file}:{src.binlog_pos}"
        return out

    @classmethod
    def sniff(cls, message: Any) -> bool:
        if not isinstance(message, dict):
            return False
        kind = message.get("type")
        if not isinstance(kind, str):
            return False
        if kind in _ROW_TYPES:
            return isinstance(message.get("data"), dict) and "payload" not in message
        return kind in _DDL_TYPES or kind in _MARKER_TYPES


def _ddl_kind(sql: str) -> str:
    for pattern, kind in _DDL_KIND:
        if pattern.match(sql):
            return kind
    return "table-alter"  # ALTER/RENAME TABLE, CREATE/DROP INDEX, ...


def _schema_from_def(definition: dict) -> TableSchema | None:
    """A TableSchema from a Maxwell ``def`` (best effort: Maxwell omits lengths)."""
    columns = definition.get("columns")
    if not isinstance(columns, list):
        return None
    pk = tuple(definition.get("primary-key") or ())
    cols = []
    for c in columns:
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) or not isinstance(c.get("type"), str):
            raise DecodeError("'def.columns' entries need a 'name' and a 'type'", format=_NAME)
        text = c["type"]
        if c.get("enum-values"):
            text += "(" + ",".join("'" + str(v).replace("'", "''") + "'" for v in c["enum-values"]) + ")"
        elif c.get("column-length") and c["type"] in ("timestamp", "datetime", "time"):
            text += f"({int(c['column-length'])})"
        if c.get("signed") is False:
            text += " unsigned"
        try:
            parse_type(text)
        except ValueError:
            text = "longtext"
        cols.append(Column(c["name"], text, nullable=c["name"] not in pk, primary_key=c["name"] in pk))
    return TableSchema(columns=tuple(cols), primary_key=pk)


def _def_from_schema(database: str | None, table: str | None, schema: TableSchema) -> dict[str, Any]:
    cols = []
    for c in schema.columns:
        t = c.mysql
        entry: dict[str, Any] = {"type": t.base, "name": c.name}
        if t.kind is Kind.INT:
            entry["signed"] = not t.unsigned
        if t.kind in (Kind.ENUM, Kind.SET):
            entry["enum-values"] = list(t.values)
        if t.kind in (Kind.DATETIME, Kind.TIMESTAMP, Kind.TIME) and t.fsp:
            entry["column-length"] = t.fsp
        cols.append(entry)
    return {"database": database, "table": table, "columns": cols, "primary-key": list(schema.primary_key)}
