"""Alibaba Cloud DataWorks real-time sync to Kafka (``schema`` / ``payload`` / ``version``).

Every message declares its columns in ``schema.dataColumn`` with one of six
types (LONG, DOUBLE, STRING, DATE as epoch milliseconds, BYTES as base64,
BOOLEAN) and carries the row images in ``payload.before/after.dataColumn``.

Typing. The six types carry less than MySQL's. Without a catalog they map to
``bigint``, ``double``, ``longtext``, ``datetime(3)``, ``longblob`` and
``bit(1)``; a DOUBLE column whose value arrives as a JSON *string* (DataWorks
writes DECIMAL columns that way, e.g. ``"1.100000"``) is typed
``decimal(65,<scale of the text>)`` so its exact digits survive. With a
catalog the catalog's column types win and values are converted to them.

DATE values are instants (epoch ms). DataWorks computes them from the source's
wall-clock in its own zone, so the decoder shows them as wall-clock in
``source_timezone``; the encoder turns DATETIME/DATE wall-clock into epoch ms
in its ``source_timezone`` and TIMESTAMP from the event's zone.

Encoding losses. DECIMAL becomes DOUBLE with its exact text (kept); DATE,
DATETIME and TIMESTAMP become DATE epoch milliseconds (sub-millisecond digits
are floored; zero dates become null; DATE/DATETIME are read back as
``datetime(3)`` without a catalog); TIME, ENUM, SET and JSON become STRING
(TIME as MySQL text, e.g. ``-838:00:00``); bit(1) is BOOLEAN, wider BIT and YEAR are
LONG; binary and geometry are BYTES. Without a catalog the original MySQL
types are not recovered (the values are, as their six-type equivalents).
Watermarks have no DataWorks message and are not written.

Updates. By default DataWorks writes an update as two messages, ``UPDATE_BEFOR``
then ``UPDATE_AFTER``, sharing a ``sequenceId``; with "one record per update"
it writes one ``UPDATE_AFTER`` with both images. The decoder holds an
``UPDATE_BEFOR`` until the next message: a matching ``UPDATE_AFTER`` (same
``sequenceId`` and table, no before-image of its own) completes it into one
update event. **Lone halves are never dropped**: a before-half followed by any
other message, or still pending at :meth:`DataWorksJson.flush`, becomes an
update with only a before-image (``partial=True``); an ``UPDATE_AFTER`` with no
before-half becomes an update with only an after-image (``partial=True``).
Replaying the two halves has the effect of the whole update. The pending half
is exposed as a plain dict through the :class:`~transforms.formats.base.Codec`
state hook (:meth:`DataWorksJson.pending_state` / ``restore_state``) for the
worker to persist.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any, cast

import orjson

from cdc_smt.transforms.errors import DecodeError, EncodeError
from cdc_smt.transforms.formats._schemaless import TYPED_JSON, merged_schema
from cdc_smt.transforms.formats.base import Capabilities, JsonCodec, json_default, typed_image
from cdc_smt.transforms.inference import python_type
from cdc_smt.transforms.model import ChangeEvent, Column, Op, Record, SourcePosition, TableSchema
from cdc_smt.transforms.options import Option
from cdc_smt.transforms.sqltext import classify_ddl
from cdc_smt.transforms.types import (
    ImpossibleTemporal,
    InvalidTemporal,
    Kind,
    MySQLType,
    check_zero_date,
    epoch_us,
    fit_value,
    format_decimal,
    format_time,
    parse_type,
    to_text,
    wall_clock,
)

_NAME = "dataworks-json"

#: MySQL type used for each DataWorks type when no catalog knows the column.
DEFAULT_TYPES = {
    "LONG": "bigint",
    "DOUBLE": "double",
    "STRING": "longtext",
    "DATE": "datetime(3)",
    "BYTES": "longblob",
    "BOOLEAN": "bit(1)",
}
_ROW_OPS = {"INSERT": Op.INSERT, "DELETE": Op.DELETE, "UPDATE_BEFOR": Op.UPDATE, "UPDATE_AFTER": Op.UPDATE}
_CONTROL_OPS = {
    "TRANSACTION_BEGIN": Op.BEGIN,
    "TRANSACTION_END": Op.COMMIT,
    "MHEARTBEAT": Op.HEARTBEAT,
    # Named in 004's example but not described: kept as control events.
    "XACOMMIT": Op.COMMIT,
    "GTID": Op.HEARTBEAT,
    "XAROLLBACK": Op.HEARTBEAT,
}
_DDL_OPS = frozenset({"CREATE", "ALTER", "ERASE", "QUERY", "RENAME", "CINDEX", "DINDEX"})
_OP_BY_CONTROL = {Op.BEGIN: "TRANSACTION_BEGIN", Op.COMMIT: "TRANSACTION_END", Op.HEARTBEAT: "MHEARTBEAT"}
_DB_TYPES = {
    "mysql": "MySQL",
    "oracle": "Oracle",
    "postgres": "PostgreSQL",
    "sqlserver": "SQLServer",
    "mariadb": "MySQL",
    "tidb": "MySQL",
}
_BASE64 = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")


# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------


def dataworks_type(t: MySQLType) -> str:
    """The DataWorks type a MySQL type is written as (see the module doc for the losses)."""
    k = t.kind
    if k is Kind.INT or k is Kind.YEAR:
        return "LONG"
    if k is Kind.DECIMAL or k is Kind.FLOAT:
        return "DOUBLE"
    if k is Kind.BYTES or k is Kind.GEOMETRY:
        return "BYTES"
    if k is Kind.BIT:
        return "BOOLEAN" if t.length == 1 else "LONG"
    if k is Kind.DATE or k is Kind.DATETIME or k is Kind.TIMESTAMP:
        return "DATE"
    return "STRING"  # char/text, enum, set, json, time


def _primitive(dw: str, raw: Any, zone_name: str) -> Any:
    """The value a DataWorks type stands for, before the column's MySQL type is applied."""
    if dw == "DATE":
        return wall_clock(raw * 1000, zone_name)  # epoch ms -> wall-clock
    if dw == "BYTES":
        return base64.b64decode(raw)
    if dw == "DOUBLE" and isinstance(raw, str):
        return Decimal(raw)
    return raw


class DataWorksValues:
    """Raw form: values as DataWorks wrote them; typed through the column's DataWorks type."""

    __slots__ = ("types", "zone")
    name = _NAME

    def __init__(self, types: tuple[tuple[str, str], ...], zone_name: str) -> None:
        self.types = dict(types)
        self.zone = zone_name

    def to_python(self, column: Column, raw: Any) -> Any:
        t = column.mysql
        dw = self.types.get(column.name) or dataworks_type(t)
        return fit_value(t, _primitive(dw, raw, self.zone))


@lru_cache(maxsize=1024)
def _values_form(types: tuple[tuple[str, str], ...], zone_name: str) -> DataWorksValues:
    return DataWorksValues(types, zone_name)


def _check_value(dw: str, name: str, v: Any) -> None:
    """A DecodeError when a raw value does not fit its declared DataWorks type."""
    if v is None:
        return
    ok: bool
    if dw == "LONG" or dw == "DATE":
        ok = isinstance(v, int) and not isinstance(v, bool)
    elif dw == "DOUBLE":
        if isinstance(v, str):
            try:
                ok = Decimal(v).is_finite()
            except InvalidOperation:
                ok = False
        else:
            ok = isinstance(v, (int, float)) and not isinstance(v, bool)
    elif dw == "STRING":
        ok = isinstance(v, str)
    elif dw == "BYTES":
        ok = isinstance(v, str) and len(v) % 4 == 0 and _BASE64.match(v) is not None
    else:  # BOOLEAN
        ok = isinstance(v, bool)
    if not ok:
        raise DecodeError(f"column {name!r} is declared {dw} but holds {v!r}", format=_NAME)


def _type_scale(text: str) -> int:
    """The scale of a ``decimal(65,N)`` type text (these always have one)."""
    scale = parse_type(text).scale
    assert scale is not None, text
    return scale


def _decimal_scale(text: str) -> int:
    exp = Decimal(text).as_tuple().exponent
    return min(max(-exp, 0), 30) if isinstance(exp, int) else 0


# ---------------------------------------------------------------------------
# The codec
# ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Half:
    """A decoded UPDATE_BEFOR waiting for its UPDATE_AFTER."""

    record: Record
    event: ChangeEvent


class DataWorksJson(JsonCodec):
    """DataWorks real-time sync JSON; pairs split updates (stateful, see the module doc)."""

    name = _NAME
    description = "Alibaba Cloud DataWorks real-time sync JSON (schema/payload/version; six value types)"
    options = (
        Option(
            "update_as",
            str,
            "split",
            "How updates are written: 'split' (an UPDATE_BEFOR and an UPDATE_AFTER message "
            "sharing a sequenceId, DataWorks' default) or 'single' (one UPDATE_AFTER message "
            "with both images). Unset, events decoded from DataWorks keep their original shape.",
            choices=("split", "single"),
        ),
    )
    capabilities = Capabilities(primary_key=True, transactions=True, ddl=True, heartbeats=True, typed_values=True)

    def configure(self) -> None:
        self._pending: dict[str, _Half] = {}
        self._next_seq = 0

    # -- state ---------------------------------------------------------------
    def flush(self) -> list[ChangeEvent]:
        """End of stream: pending before-halves become before-only updates."""
        return self._release()

    def pending_state(self) -> dict[str, Any]:
        """The unpaired before-halves as a JSON-able dict (for a Faust table)."""
        return {"pending": {seq: _record_state(h.record) for seq, h in self._pending.items()}}

    def holds_half(self) -> bool:
        """Is a before-half pending (the native plan leaves the next records to Python)?"""
        return bool(self._pending)

    def restore_state(self, state: dict[str, Any]) -> None:
        """Reload what :meth:`pending_state` returned (replaces the current pending halves)."""
        self._pending = {}
        for seq, rec in (state.get("pending") or {}).items():
            record = _record_from_state(rec)
            assert record.value is not None  # _record_from_state always sets it
            event = self._decode_one(orjson.loads(record.value))[2]
            event.record = record
            self._pending[seq] = _Half(record, event)

    def _release(self) -> list[ChangeEvent]:
        out = [h.event for h in self._pending.values()]
        self._pending.clear()
        return out

    # -- decode ------------------------------------------------------------
    def decode_message(self, obj: dict, record: Record) -> list[ChangeEvent]:
        code, seq, event = self._decode_one(obj)
        event.record = record
        half = self._pending.pop(seq, None) if seq is not None else None
        out = self._release()  # anything else pending is a lone half: emit it first, in order
        if half is not None:
            if code == "UPDATE_AFTER" and event.before is None and _same_table(half.event, event):
                return out + [self._pair(half.event, event)]
            out.insert(0, half.event)
        if code == "UPDATE_BEFOR" and event.after is None:
            self._pending[seq if seq is not None else ""] = _Half(record, event)
            return out
        out.append(event)
        return out

    def _decode_one(self, obj: dict) -> tuple[str, str | None, ChangeEvent]:
        """One message as an event, with no pairing: (op code, sequenceId, event)."""
        payload = self.require(obj, "payload", dict)
        schema = self.require(obj, "schema", dict, nullable=True) or {}
        code = self.require(payload, "op", str)
        seq_raw = self.optional(payload, "sequenceId", (str, int))
        seq = None if seq_raw is None else str(seq_raw)
        source_obj = self.optional(schema, "source", dict) or {}
        source = self._source(source_obj, payload, seq)
        stamps = self.optional(payload, "timestamp", dict) or {}
        event_time = self.optional(stamps, "eventTime", int)
        system_time = self.optional(stamps, "systemTime", int)
        event = ChangeEvent(
            op=Op.HEARTBEAT,
            source=source,
            ts_ms=event_time if event_time is not None and event_time >= 0 else None,
            processing_ts_ms=system_time if system_time is not None and system_time >= 0 else None,
            timezone=self.opts.source_timezone,
            origin=self.name,
            extra={"message": _template(obj, schema, payload)},
        )
        if code in _ROW_OPS:
            self._rows(event, code, schema, payload)
        elif code in _CONTROL_OPS:
            event.op = _CONTROL_OPS[code]
        elif code in _DDL_OPS or code == "TRUNCATE":
            ddl = self.optional(payload, "ddl", dict) or {}
            event.op = Op.TRUNCATE if code == "TRUNCATE" else Op.DDL
            event.ddl = self.optional(ddl, "text", str)
            event.ddl_kind = code
            if isinstance(schema.get("dataColumn"), list):
                event.schema, _ = self._schema(schema, {}, source)
                event.pk = event.schema.primary_key
        else:
            raise DecodeError(f"unknown op {code!r}", format=self.name)
        return code, seq, event

    def _source(self, src: dict, payload: dict, seq: str | None) -> SourcePosition:
        scn_raw = self.optional(payload, "scn", (str, int))
        scn = int(scn_raw) if isinstance(scn_raw, int) or (isinstance(scn_raw, str) and scn_raw.isdigit()) else None
        db_type = self.optional(src, "dbType", str)
        return SourcePosition(
            db_type=db_type.lower() if db_type else None,
            database=self.optional(src, "dbName", str),
            schema=self.optional(src, "schemaName", str),
            table=self.optional(src, "tableName", str),
            sequence_id=seq,
            scn=scn,
        )

    def _image(self, payload: dict, name: str) -> dict | None:
        holder = self.optional(payload, name, dict)
        if holder is None:
            return None
        return self.optional(holder, "dataColumn", dict)

    def _rows(self, event: ChangeEvent, code: str, schema: dict, payload: dict) -> None:
        before = self._image(payload, "before")
        after = self._image(payload, "after")
        if code == "INSERT" and after is None:
            raise DecodeError("INSERT without payload.after.dataColumn", format=self.name)
        if code == "DELETE" and before is None:
            raise DecodeError("DELETE without payload.before.dataColumn", format=self.name)
        if code == "UPDATE_BEFOR" and before is None:
            raise DecodeError("UPDATE_BEFOR without payload.before.dataColumn", format=self.name)
        if code == "UPDATE_AFTER" and after is None:
            raise DecodeError("UPDATE_AFTER without payload.after.dataColumn", format=self.name)
        event.op = _ROW_OPS[code]
        if code == "INSERT":
            before = None
        elif code == "DELETE":
            after = None
        event.before, event.after = before, after
        event.partial = event.op is Op.UPDATE and (before is None or after is None)
        event.schema, types = self._schema(schema, {"before": before, "after": after}, event.source)
        event.pk = event.schema.primary_key
        event.values = _values_form(types, self.opts.source_timezone)

    def _pair(self, half: ChangeEvent, after: ChangeEvent) -> ChangeEvent:
        """One update from an UPDATE_BEFOR and its UPDATE_AFTER."""
        if half.values is not after.values:  # the halves declared different types: type each with its own
            half.typed()
            after.typed()
        elif half.schema is not after.schema:  # inferred from different values (a decimal in one half only)
            assert after.schema is not None and half.schema is not None  # decoded rows always have one
            after.schema = self._union_schema(after.schema, half.schema, after.source)
        after.before = half.before
        after.partial = False
        after.extra = {"message": after.extra["message"], "before_message": half.extra["message"]}
        return after

    def _union_schema(self, a: TableSchema, b: TableSchema, source: SourcePosition) -> TableSchema:
        """``a``'s columns, taking ``b``'s type where only ``b`` saw a decimal text (wider scale wins)."""
        columns = []
        for col in a.columns:
            other = b.column(col.name)
            t = col.type
            if other is not None and other.type != t and other.type.startswith("decimal(65,"):
                if t == "double" or (t.startswith("decimal(65,") and _type_scale(other.type) > _type_scale(t)):
                    t = other.type
            columns.append((col.name, t))
        return merged_schema(tuple(columns), a.primary_key, self.catalog_schema(source.database, source.table))

    def _schema(
        self, schema: dict, images: dict[str, dict | None], source: SourcePosition
    ) -> tuple[TableSchema, tuple]:
        """Event schema and the DataWorks type of every column (validating the values)."""
        declared = self.optional(schema, "dataColumn", list) or []
        types: dict[str, str] = {}
        for c in declared:
            if not isinstance(c, dict) or not isinstance(c.get("name"), str) or not isinstance(c.get("type"), str):
                raise DecodeError("schema.dataColumn entries need a string 'name' and 'type'", format=self.name)
            if c["type"] not in DEFAULT_TYPES:
                raise DecodeError(f"unknown column type {c['type']!r} for column {c['name']!r}", format=self.name)
            types[c["name"]] = c["type"]
        mysql = {n: DEFAULT_TYPES[t] for n, t in types.items()}
        for image in images.values():
            for name, v in (image or {}).items():
                dw = types.get(name)
                if dw is None:  # a value without a declared column: type it from the JSON value
                    dw = types[name] = _dw_type_of(v)
                    mysql[name] = DEFAULT_TYPES[dw]
                _check_value(dw, name, v)
                if dw == "DOUBLE" and isinstance(v, str):
                    current = mysql[name]
                    scale = _decimal_scale(v)
                    if current == "double" or scale > _type_scale(current):
                        mysql[name] = f"decimal(65,{scale})"
        pk_raw = self.optional(schema, "primaryKey", list) or []
        if any(not isinstance(k, str) for k in pk_raw):
            raise DecodeError("schema.primaryKey must be an array of column names", format=self.name)
        table_schema = merged_schema(
            tuple(mysql.items()), tuple(pk_raw), self.catalog_schema(source.database, source.table)
        )
        return table_schema, tuple(types.items())

    # -- encode ------------------------------------------------------------
    def encode(self, event: ChangeEvent) -> list[Record]:
        records = super().encode(event)
        if len(records) == 2 and event.key is None and event.pk and event.before is not None:
            records[0].key = orjson.dumps({k: event.before.get(k) for k in event.pk}, default=json_default)
        return records

    def encode_message(self, event: ChangeEvent) -> Any:
        op = event.op
        same = event.origin == self.name
        extra = event.extra if same else {}
        if op.is_row:
            return self._encode_rows(event, extra)
        if op is Op.WATERMARK:
            return None  # DataWorks has no watermark message (documented)
        template = extra.get("message")
        if op is Op.DDL or op is Op.TRUNCATE:
            code = _template_op(template) if template else None
            if code is None or (op is Op.TRUNCATE) != (code == "TRUNCATE"):
                code = (
                    "TRUNCATE"
                    if op is Op.TRUNCATE
                    else (event.ddl_kind if event.ddl_kind in _DDL_OPS else classify_ddl(event.ddl or ""))
                )
            msg = self._message(event, template, code)
            payload = msg["payload"]
            if event.ddl is not None or payload.get("ddl") is not None:
                payload["ddl"] = {**(payload.get("ddl") or {}), "text": event.ddl}
            if event.schema is not None:
                msg["schema"]["dataColumn"] = [
                    {"name": c.name, "type": dataworks_type(c.mysql)} for c in event.schema.columns
                ]
            return msg
        code = _template_op(template)
        if code is None or _CONTROL_OPS.get(code) is not op:
            code = _OP_BY_CONTROL[op]
        return self._message(event, template, code)

    def _encode_rows(self, event: ChangeEvent, extra: dict) -> Any:
        op = event.op
        template = extra.get("message")
        if op is Op.DELETE:
            if event.before is None:
                raise EncodeError("delete event without a before-image", format=self.name)
            return self._row_message(event, template, "DELETE", event.before, None)
        if op is not Op.UPDATE:  # insert, and snapshot reads written as inserts
            if event.after is None:
                raise EncodeError(f"{op.value} event without an after-image", format=self.name)
            return self._row_message(event, template, "INSERT", None, event.after)
        before_template = extra.get("before_message")
        if event.before is None and event.after is None:
            raise EncodeError("update event without images", format=self.name)
        if event.after is None:  # a lone before-half
            return self._row_message(event, before_template or template, "UPDATE_BEFOR", event.before, None)
        if event.before is None:  # a lone after-half (or a source without before-images)
            return self._row_message(event, template, "UPDATE_AFTER", None, event.after)
        shape = self.opts.update_as
        if "update_as" not in self.opts.explicit and template is not None:
            shape = "split" if before_template is not None or _template_op(template) == "UPDATE_BEFOR" else "single"
        if shape == "single":
            return self._row_message(event, template, "UPDATE_AFTER", event.before, event.after)
        seq = self._sequence(event)
        first = self._row_message(event, before_template or template, "UPDATE_BEFOR", event.before, None, seq)
        second = self._row_message(event, template, "UPDATE_AFTER", None, event.after, seq)
        return [first, second]

    def _row_message(
        self,
        event: ChangeEvent,
        template: dict | None,
        code: str,
        before: dict | None,
        after: dict | None,
        seq: str | None = None,
    ) -> dict:
        msg = self._message(event, template, code, seq)
        payload = msg["payload"]
        types: dict[str, str] = {}
        payload["before"] = None if before is None else {"dataColumn": self._values(event, before, types)}
        payload["after"] = None if after is None else {"dataColumn": self._values(event, after, types)}
        names = event.schema.names if event.schema is not None else ()
        ordered_names = [n for n in names if n in types] + [n for n in types if n not in names]
        msg["schema"]["dataColumn"] = [{"name": n, "type": types[n]} for n in ordered_names]
        return msg

    def _message(self, event: ChangeEvent, template: dict | None, code: str, seq: str | None = None) -> dict:
        """The envelope: the original's fields when re-encoding DataWorks, else the documented layout."""
        src = event.source
        control = code in _CONTROL_OPS
        if template is not None:  # copy the levels this method writes to
            msg = dict(template)
            schema = msg["schema"] = dict(template.get("schema") or {})
            payload = msg["payload"] = dict(template["payload"])
        else:
            schema = {"dataColumn": None, "primaryKey": None, "source": None}
            payload = dict.fromkeys(("before", "after", "sequenceId", "timestamp", "op", "ddl"))
            msg = {"schema": schema, "payload": payload, "version": "0.0.1"}
        if not control:
            source = dict(schema["source"]) if isinstance(schema.get("source"), dict) else {}
            if not source and src.db_type in _DB_TYPES:
                source["dbType"] = _DB_TYPES[src.db_type]
            if src.database is not None or "dbName" in source:
                source["dbName"] = src.database
            if src.schema is not None or "schemaName" in source:
                source["schemaName"] = src.schema
            if src.table is not None or "tableName" in source:
                source["tableName"] = src.table
            schema["source"] = source or None
            pk = list(event.pk) if event.pk else None
            if pk is None and template is not None and schema.get("primaryKey") == []:
                pk = []
            schema["primaryKey"] = pk
            sequence = seq or self._sequence(event)
            if template is None or str(payload.get("sequenceId")) != sequence:
                payload["sequenceId"] = sequence
        stamps = dict(payload.get("timestamp") or {}) if template is not None else {}
        if event.ts_ms is not None or template is None:
            stamps["eventTime"] = event.ts_ms if event.ts_ms is not None else -1  # -1: unknown, as DataWorks writes it
        if event.processing_ts_ms is not None:
            stamps["systemTime"] = event.processing_ts_ms
        if template is None:
            stamps["checkpointTime"] = stamps["eventTime"]
        if stamps:
            payload["timestamp"] = stamps
        if src.scn is not None:
            current = payload.get("scn")
            if not (isinstance(current, (str, int)) and str(current).isdigit() and int(current) == src.scn):
                payload["scn"] = str(src.scn)
        payload["op"] = code
        return msg

    def _sequence(self, event: ChangeEvent) -> str:
        """The event's sequenceId, or a fresh one shaped like DataWorks' (ms + 6-digit counter)."""
        if event.source.sequence_id is not None:
            return event.source.sequence_id
        self._next_seq = (self._next_seq + 1) % 1_000_000
        return f"{event.ts_ms or 0}{self._next_seq:06d}"

    def _values(self, event: ChangeEvent, image: dict[str, Any], types: dict[str, str]) -> dict[str, Any]:
        """One image as ``dataColumn``; fills ``types`` with each column's DataWorks type."""
        schema = event.schema
        form = event.values
        if isinstance(form, DataWorksValues):
            for name in image:
                col = schema.column(name) if schema is not None else None
                types.setdefault(
                    name, form.types.get(name) or (dataworks_type(col.mysql) if col is not None else "STRING")
                )
            return dict(image)
        image = typed_image(event, image)
        out = {}
        for name, v in image.items():
            col = schema.column(name) if schema is not None else None
            t = (
                col.mysql
                if col is not None
                else parse_type(python_type(v, TYPED_JSON) if v is not None else "longtext")
            )
            types.setdefault(name, dataworks_type(t))
            try:
                out[name] = None if v is None else self._value(t, v, event.timezone)
            except ImpossibleTemporal as exc:
                raise EncodeError(f"column {name}: {exc}", format=self.name) from None
        return out

    def _value(self, t: MySQLType, v: Any, event_zone: str) -> Any:
        k = t.kind
        if k is Kind.DATE or k is Kind.DATETIME or k is Kind.TIMESTAMP:
            if isinstance(v, InvalidTemporal):
                check_zero_date(v, t)  # other invalid dates have no instant either, and no documented rule
                return None  # zero dates have no instant (documented loss)
            if k is Kind.DATE:
                v = dt.datetime(v.year, v.month, v.day)
            # epoch ms; sub-millisecond digits are floored
            return epoch_us(v, event_zone if k is Kind.TIMESTAMP else self.opts.source_timezone) // 1000
        if k is Kind.INT or k is Kind.YEAR:
            return int(v)
        if k is Kind.DECIMAL:
            return format_decimal(v if isinstance(v, Decimal) else Decimal(str(v)), t.scale)
        if k is Kind.FLOAT:
            return float(v)
        if k is Kind.BYTES or k is Kind.GEOMETRY:
            return base64.b64encode(v).decode("ascii")
        if k is Kind.BIT:
            return bool(v) if t.length == 1 else int(v)
        if k is Kind.TIME:
            return format_time(v, t.fsp)
        return to_text(t, v)  # STRING: text, enum and set labels, JSON documents as JSON

    @classmethod
    def sniff(cls, message: Any) -> bool:
        if not isinstance(message, dict):
            return False
        payload, schema = message.get("payload"), message.get("schema")
        return (
            isinstance(payload, dict)
            and isinstance(payload.get("op"), str)
            and isinstance(schema, dict)
            and "dataColumn" in schema
        )


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def _dw_type_of(v: Any) -> str:
    if isinstance(v, bool):
        return "BOOLEAN"
    if isinstance(v, int):
        return "LONG"
    if isinstance(v, float):
        return "DOUBLE"
    return "STRING"


def _template(obj: dict, schema: dict, payload: dict) -> dict:
    """The message minus its row data: what re-encoding fills back in."""
    out = dict(obj)
    out["payload"] = {k: (None if k in ("before", "after") else v) for k, v in payload.items()}
    if "schema" in obj and obj["schema"] is not None:
        out["schema"] = {k: (None if k == "dataColumn" else v) for k, v in schema.items()}
    return out


def _template_op(template: dict | None) -> str | None:
    return template["payload"].get("op") if template else None


def _same_table(a: ChangeEvent, b: ChangeEvent) -> bool:
    return (a.source.database, a.source.schema, a.source.table) == (b.source.database, b.source.schema, b.source.table)


def _b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode("ascii")


def _unb64(s: str | None) -> bytes | None:
    return None if s is None else base64.b64decode(s)


def _record_state(r: Record) -> dict[str, Any]:
    return {
        "value": r.value.decode("utf-8") if r.value is not None else None,
        "key": _b64(r.key),
        "topic": r.topic,
        "partition": r.partition,
        "offset": r.offset,
        "timestamp": r.timestamp,
        "headers": [[k, _b64(v)] for k, v in r.headers],
    }


def _record_from_state(d: dict[str, Any]) -> Record:
    try:
        # cast: a header value can be null (connector/framing.py passes one through) although
        # Record types header values as bytes; the state gives back exactly what it saved.
        headers = cast(list[tuple[str, bytes]], [(k, _unb64(v)) for k, v in d.get("headers") or ()])
        return Record(
            value=d["value"].encode("utf-8"),
            key=_unb64(d.get("key")),
            topic=d.get("topic"),
            partition=d.get("partition"),
            offset=d.get("offset"),
            timestamp=d.get("timestamp"),
            headers=headers,
        )
    except (KeyError, TypeError, AttributeError, binascii.Error) as exc:
        raise ValueError(f"bad dataworks-json pending state: {exc}") from None
