"""Maxwell JSON (zendesk/maxwell), as Maxwell writes it and Flink's ``maxwell-json`` reads it.

One message per row: ``{"database","table","type","ts","xid","commit"|"xoffset",
"data","old", ...}``. ``data`` is the full row (after an insert/update, before a
delete); ``old`` holds only the *changed* columns' previous values, so the
before-image is ``data`` overlaid with ``old``. Values are typed JSON: numbers
stay numbers, DATETIME/TIMESTAMP/TIME are MySQL text, binary columns base64,
SET columns JSON arrays and JSON columns embedded JSON. Messages carry no
column types: the schema comes from the catalog when one is configured, else it
is inferred per message from the JSON value types (see
:func:`transforms.formats._schemaless.infer_type`).

DDL messages (``table-create``, ``table-alter``, ... with ``--output_ddl``)
carry the table definition in ``def``; their ``ts`` is in milliseconds while
row messages use seconds.
"""

from __future__ import annotations

import re
from typing import Any

from cdc_smt.transforms.errors import DecodeError, EncodeError
from cdc_smt.transforms.formats._schemaless import JsonValues, SchemalessJson
from cdc_smt.transforms.formats.base import Capabilities, in_original_order
from cdc_smt.transforms.model import ChangeEvent, Column, Op, Record, SourcePosition, TableSchema
from cdc_smt.transforms.options import Option
from cdc_smt.transforms.sqltext import classify_ddl, statement_head
from cdc_smt.transforms.types import Kind, parse_type

_ROW_TYPES = {"insert": Op.INSERT, "update": Op.UPDATE, "delete": Op.DELETE, "bootstrap-insert": Op.READ}
_DDL_TYPES = frozenset(
    {"table-create", "table-alter", "table-drop", "database-create", "database-alter", "database-drop"}
)
_MARKER_TYPES = frozenset({"bootstrap-start", "bootstrap-complete"})
_TYPE_BY_OP = {Op.INSERT: "insert", Op.UPDATE: "update", Op.DELETE: "delete", Op.READ: "bootstrap-insert"}
#: Fields the model carries; everything else goes to ``event.extra``.
_MAPPED = frozenset(
    {
        "database",
        "table",
        "type",
        "ts",
        "xid",
        "data",
        "old",
        "primary_key",
        "primary_key_columns",
        "position",
        "server_id",
        "gtid",
        "sql",
    }
)
_POSITION = re.compile(r"^(?P<file>.+):(?P<pos>\d+)$")
_DATABASE_DDL = re.compile(r"(create|alter|drop)\s+(?:database|schema)\b", re.I)
#: Canal's DDL types (``classify_ddl``) that Maxwell names apart; the rest are ``table-alter``.
_TABLE_DDL = {"CREATE": "table-create", "ERASE": "table-drop"}
_NAME = "maxwell-json"


class MaxwellJson(SchemalessJson):
    """Maxwell's JSON: one row per message, ``old`` holds the changed columns."""

    name = _NAME
    description = "Maxwell JSON (zendesk/maxwell; Flink maxwell-json): typed JSON rows, changed-column old values"
    capabilities = Capabilities(
        primary_key=True, binlog_position=True, gtid=True, ddl=True, typed_values=True, snapshot_reads=True
    )
    values = JsonValues(_NAME, embedded_json=True)
    set_as_list = True
    options = (
        Option(
            "output_ddl",
            bool,
            None,
            "Write DDL events as Maxwell's table-*/database-* messages (Maxwell's own output_ddl). Unset: "
            "DDL that came from maxwell-json is reproduced and DDL from other formats is not written, since "
            "Flink's maxwell-json and most consumers reject DDL on a data topic; true/false: always/never.",
        ),
        Option(
            "ddl_topic",
            str,
            None,
            "Topic for DDL messages when output_ddl is on (Maxwell's ddl_kafka_topic); unset = the data topic.",
        ),
    )

    # -- decode ------------------------------------------------------------
    def decode_message(self, obj: dict, record: Record) -> list[ChangeEvent]:
        if "encrypted" in obj:
            raise DecodeError(
                "encrypted Maxwell message (Maxwell --encrypt): decrypt it before decoding", format=self.name
            )
        kind = self.require(obj, "type", str)
        database = self.optional(obj, "database", str)
        table = self.optional(obj, "table", str)
        source = self._source(obj, database, table)
        extra = {k: v for k, v in obj.items() if k not in _MAPPED}
        extra["_keys"] = tuple(obj)
        ts = self.optional(obj, "ts", int)
        op = _ROW_TYPES.get(kind)
        if op is not None:
            return [self._row(obj, op, source, extra, ts)]
        if kind in _DDL_TYPES:
            if "old" in obj:  # the table definition before an alter
                extra["old"] = obj["old"]
            sql = self.optional(obj, "sql", str)
            definition = self.optional(obj, "def", dict)
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
        position = self.optional(obj, "position", str)
        binlog_file = binlog_pos = None
        if position is not None:
            m = _POSITION.match(position)
            if m is None:
                raise DecodeError(f"field 'position' must look like 'file:offset', got {position!r}", format=self.name)
            binlog_file, binlog_pos = m.group("file"), int(m.group("pos"))
        xid = self.optional(obj, "xid", (int, str))
        return SourcePosition(
            db_type="mysql",
            database=database,
            table=table,
            server_id=self.optional(obj, "server_id", int),
            binlog_file=binlog_file,
            binlog_pos=binlog_pos,
            gtid=self.optional(obj, "gtid", str),
            txid=None if xid is None else str(xid),
        )

    def _row(self, obj: dict, op: Op, source: SourcePosition, extra: dict, ts: int | None) -> ChangeEvent:
        old = self.optional(obj, "old", dict)
        if op is Op.DELETE and obj.get("data") is None and old is not None:
            data, old = old, None  # TiCDC's Maxwell protocol puts the deleted row in "old"
            extra["_delete_in_old"] = True
        else:
            data = self.require(obj, "data", dict)
        if op is Op.UPDATE:
            before = dict(data)
            before.update(old or {})
            after, changed = data, tuple(old or ())
        elif op is Op.DELETE:
            before, after, changed = data, None, None
        else:
            before, after, changed = None, data, None
        pk_names = self.optional(obj, "primary_key_columns", list)
        pk = tuple(pk_names) if pk_names else ()
        if not pk and "primary_key" in obj:  # key values without names: keep them as they are
            extra["primary_key"] = obj["primary_key"]
        if any(not isinstance(k, str) for k in pk):
            raise DecodeError("field 'primary_key_columns' must be an array of column names", format=self.name)
        schema = self.row_schema((data, old), pk, source.database, source.table)
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
            output_ddl = self.opts.output_ddl
            if not (output_ddl or (output_ddl is None and same)):
                return None
            out = self._encode_ddl(event, extra)
        elif op is Op.HEARTBEAT and same and extra.get("type") in _MARKER_TYPES:
            out = {"database": event.source.database, "table": event.source.table, "type": extra["type"]}
            if event.ts_ms is not None:
                out["ts"] = event.ts_ms // 1000
        elif op is Op.TRUNCATE:
            raise EncodeError(
                "maxwell-json has no message for TRUNCATE (Maxwell does not emit truncates)", format=self.name
            )
        else:
            return None  # BEGIN/COMMIT/HEARTBEAT/WATERMARK: Maxwell has no such message (documented)
        for k, v in extra.items():
            if not k.startswith("_") and k not in out:
                out[k] = v
        return in_original_order(out, extra.get("_keys"))

    def encode(self, event: ChangeEvent) -> list[Record]:
        records = super().encode(event)
        if event.op is Op.DDL and self.opts.ddl_topic:
            for r in records:
                r.topic = self.opts.ddl_topic
        return records

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
            return self.json_image(event, event.before), None, op
        if event.after is None:
            raise EncodeError(f"{op.value} event without an after-image", format=self.name)
        data = self.json_image(event, event.after)
        if op is not Op.UPDATE or event.before is None:
            return data, None, op
        before = self.json_image(event, event.before)
        if event.changed is not None and event.origin == self.name:
            names = event.changed
        else:
            names = tuple(k for k, v in before.items() if k not in data or type(data[k]) is not type(v) or data[k] != v)
        return data, {k: before[k] for k in names if k in before}, op

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
    """Maxwell's DDL ``type`` for a statement: database-*, table-create, table-drop, else
    table-alter (ALTER/RENAME TABLE, CREATE/DROP INDEX, ...)."""
    m = _DATABASE_DDL.match(statement_head(sql))
    if m:
        return f"database-{m.group(1).lower()}"
    return _TABLE_DDL.get(classify_ddl(sql), "table-alter")


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
            length = c["column-length"]
            if not isinstance(length, int) or isinstance(length, bool):  # int(1e100000000): minutes, gigabytes
                raise DecodeError(f"'def.columns' column-length must be an integer, got {length!r:.40}", format=_NAME)
            text += f"({length})"
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
