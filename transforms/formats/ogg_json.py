"""Oracle GoldenGate JSON (the GoldenGate for Big Data JSON formatter), as Flink's ``ogg-json`` reads it.

One message per row operation::

    {"table": "SCHEMA.TABLE", "op_type": "I|U|D|T", "op_ts": "2020-05-13 15:40:06.000000",
     "current_ts": "2020-05-13T13:39:35.766000", "pos": "00000000000000000000143",
     "primary_keys": ["id"], "tokens": {...}, "before": {...}, "after": {...}}

Inserts carry ``after``, deletes ``before``, updates both, truncates neither.
``op_ts`` (commit time) and ``current_ts`` (formatter time) are zone-less and
read as UTC, as Flink does. Values are typed JSON with no column types: the
schema comes from the catalog, else it is inferred from the JSON values (see
:func:`transforms.formats._schemaless.infer_type`).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from cdc_smt.transforms.errors import DecodeError, EncodeError
from cdc_smt.transforms.formats._schemaless import JsonValues, SchemalessJson
from cdc_smt.transforms.formats.base import Capabilities, in_original_order
from cdc_smt.transforms.model import ChangeEvent, Op, Record, SourcePosition
from cdc_smt.transforms.types import epoch_us, wall_clock

_OPS = {"I": Op.INSERT, "U": Op.UPDATE, "D": Op.DELETE, "T": Op.TRUNCATE}
_MAPPED = frozenset({"table", "op_type", "op_ts", "current_ts", "pos", "primary_keys", "before", "after"})
_NAME = "ogg-json"


def parse_ogg_ts(text: str, field: str) -> int:
    """Epoch milliseconds of an OGG timestamp (``yyyy-MM-dd HH:mm:ss[.f…]`` or with ``T``), read as UTC."""
    head, _, frac = text.partition(".")
    try:
        base = dt.datetime.strptime(head.replace("T", " "), "%Y-%m-%d %H:%M:%S")
        micros = int((frac or "0")[:6].ljust(6, "0"))
    except ValueError:
        raise DecodeError(f"field {field!r} is not a timestamp: {text!r}", format=_NAME) from None
    return (epoch_us(base, "UTC") + micros) // 1000


def format_ogg_ts(ms: int, sep: str) -> str:
    return wall_clock(ms * 1000, "UTC").strftime(f"%Y-%m-%d{sep}%H:%M:%S.%f")


class OggJson(SchemalessJson):
    """GoldenGate JSON: full before/after images, primary-key names, trail position."""

    name = _NAME
    description = "Oracle GoldenGate JSON (GoldenGate for Big Data; Flink ogg-json)"
    capabilities = Capabilities(primary_key=True, typed_values=True)
    values = JsonValues(_NAME, embedded_json=False)

    # -- decode ------------------------------------------------------------
    def decode_message(self, obj: dict, record: Record) -> list[ChangeEvent]:
        code = self.require(obj, "op_type", str)
        op = _OPS.get(code)
        if op is None:
            raise DecodeError(f"unknown op_type {code!r} (expected I, U, D or T)", format=self.name)
        database, schema_name, table = self._names(self.optional(obj, "table", str))
        before = self.optional(obj, "before", dict)
        after = self.optional(obj, "after", dict)
        if op in (Op.INSERT, Op.UPDATE) and after is None:
            raise DecodeError(f"op_type {code!r} needs an 'after' image", format=self.name)
        if op is Op.DELETE and before is None:
            raise DecodeError("op_type 'D' needs a 'before' image", format=self.name)
        op_ts = self.optional(obj, "op_ts", str)
        current_ts = self.optional(obj, "current_ts", str)
        pos = self.optional(obj, "pos", (str, int))
        pk_names = self.optional(obj, "primary_keys", list) or []
        if any(not isinstance(k, str) for k in pk_names):
            raise DecodeError("field 'primary_keys' must be an array of column names", format=self.name)
        extra = {k: v for k, v in obj.items() if k not in _MAPPED}
        extra["_keys"] = tuple(obj)
        if op_ts is not None:
            extra["op_ts"] = op_ts
        if current_ts is not None:
            extra["current_ts"] = current_ts
        if pos is not None:
            extra["pos"] = pos
        source = SourcePosition(
            database=database, schema=schema_name, table=table, sequence_id=None if pos is None else str(pos)
        )
        event = ChangeEvent(
            op=op,
            source=source,
            before=before,
            after=after,
            ts_ms=None if op_ts is None else parse_ogg_ts(op_ts, "op_ts"),
            processing_ts_ms=None if current_ts is None else parse_ogg_ts(current_ts, "current_ts"),
            timezone=self.opts.source_timezone,
            origin=self.name,
            extra=extra,
        )
        if op is not Op.TRUNCATE:
            event.schema = self.row_schema((after, before), tuple(pk_names), database, table)
            event.pk = event.schema.primary_key
            event.values = self.values
        return [event]

    def _names(self, text: str | None) -> tuple[str | None, str | None, str | None]:
        """``SCHEMA.TABLE`` -> (database, None, table); ``CATALOG.SCHEMA.TABLE`` keeps all three."""
        if text is None:
            return None, None, None
        parts = text.split(".")
        if len(parts) == 1:
            return None, None, parts[0]
        if len(parts) == 2:
            return parts[0], None, parts[1]
        if len(parts) == 3:
            return parts[0], parts[1], parts[2]
        raise DecodeError(f"field 'table' must be SCHEMA.TABLE or CATALOG.SCHEMA.TABLE, got {text!r}", format=self.name)

    # -- encode ------------------------------------------------------------
    def encode_message(self, event: ChangeEvent) -> Any:
        op = event.op
        if op is Op.UPDATE and event.after is None:
            op = Op.DELETE  # a lone before-half: replaying a delete has the same effect
        if op is Op.READ:
            op = Op.INSERT
        code = {Op.INSERT: "I", Op.UPDATE: "U", Op.DELETE: "D", Op.TRUNCATE: "T"}.get(op)
        if code is None:
            return None  # DDL, transaction markers, heartbeats, watermarks: not part of OGG JSON (documented)
        same = event.origin == self.name
        extra = event.extra if same else {}
        src = event.source
        out: dict[str, Any] = {
            "table": ".".join(p for p in (src.database, src.schema, src.table) if p is not None) or None,
            "op_type": code,
        }
        if event.ts_ms is not None:
            out["op_ts"] = _keep(extra.get("op_ts"), event.ts_ms) or format_ogg_ts(event.ts_ms, " ")
        if event.processing_ts_ms is not None:
            out["current_ts"] = _keep(extra.get("current_ts"), event.processing_ts_ms) or format_ogg_ts(
                event.processing_ts_ms, "T"
            )
        if "pos" in extra and str(extra["pos"]) == src.sequence_id:
            out["pos"] = extra["pos"]
        elif src.sequence_id is not None:
            out["pos"] = src.sequence_id
        if event.pk:
            out["primary_keys"] = list(event.pk)
        for k, v in extra.items():
            if k not in out and k not in ("_keys", "op_ts", "current_ts", "pos"):
                out[k] = v
        keys = extra.get("_keys") or ()
        if op in (Op.UPDATE, Op.DELETE) or "before" in keys:
            if event.before is None and op is Op.DELETE:
                raise EncodeError("delete event without a before-image", format=self.name)
            out["before"] = self.json_image(event, event.before) if op is not Op.INSERT else None
        if op in (Op.INSERT, Op.UPDATE) or "after" in keys:
            if event.after is None and op is not Op.DELETE and op is not Op.TRUNCATE:
                raise EncodeError(f"{op.value} event without an after-image", format=self.name)
            out["after"] = self.json_image(event, event.after) if op is not Op.DELETE else None
        return in_original_order(out, keys)

    @classmethod
    def sniff(cls, message: Any) -> bool:
        return (
            isinstance(message, dict)
            and message.get("op_type") in _OPS
            and (
                isinstance(message.get("after"), dict)
                or isinstance(message.get("before"), dict)
                or message.get("op_type") == "T"
            )
        )


def _keep(original: str | None, ms: int) -> str | None:
    """The original timestamp text when it still says ``ms`` (keeps its exact digits)."""
    if original is None:
        return None
    try:
        return original if parse_ogg_ts(original, "") == ms else None
    except DecodeError:
        return None
