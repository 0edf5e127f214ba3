"""The native planner's typed-JSON writers: canal-json or ticdc-canal-json -> maxwell-json
or ogg-json.

The plans (``native/src/maxwell_out.rs``, ``ogg_out.rs``, values by ``typed_json.rs``)
write what ``MaxwellJson.encode_message`` (``OggJson.encode_message``) writes for a Canal
event: per column, the conversion of Canal's text to the typed JSON value
``SchemalessJson.json_image`` renders (or ``python``: a non-null value sends the record to
Python). Only transforms that keep rows as they are (filter by table/op, route,
drop_tombstones, the header transforms) qualify; the probe of each op checks that Python
writes the message's table and row as the writer does.
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc_smt.transforms import native
from cdc_smt.transforms.native import (
    CANAL_TO_MAXWELL,
    CANAL_TO_OGG,
    TICDC_TO_MAXWELL,
    TICDC_TO_OGG,
    NativePlan,
    _CanalTables,
    _enum_table,
)
from cdc_smt.transforms.native_rowxf import TextShaped, changes_rows, shaped_plan

_KINDS = ("INSERT", "UPDATE", "DELETE", "INIT")
#: Per encoder: the plan's name from canal-json and from ticdc-canal-json.
_NAMES = {"maxwell-json": (CANAL_TO_MAXWELL, TICDC_TO_MAXWELL), "ogg-json": (CANAL_TO_OGG, TICDC_TO_OGG)}
_MAXWELL_TYPES = {"INSERT": "insert", "UPDATE": "update", "DELETE": "delete", "INIT": "bootstrap-insert"}
_OGG_TYPES = {"INSERT": "I", "UPDATE": "U", "DELETE": "D", "INIT": "I"}


def plan(chain: Any) -> NativePlan | None:
    """The plan for a Canal (or TiCDC) decoder and a maxwell-json or ogg-json encoder, or
    ``None``; from canal-json the row-changing transforms too (``native_rowxf``)."""
    name = chain.encoder.name
    if changes_rows(chain.transforms):
        return shaped_plan(chain, _ShapedTypedJsonTables, _NAMES[name], encoder=name)
    return native.row_keeping_plan(chain, _TypedJsonTables, _NAMES[name], encoder=name)


class _TypedJsonTables(_CanalTables):
    """Compiles one Canal table layout for a typed-JSON writer: per column its conversion,
    the primary key, and per op whether the transforms drop the rows or keep them (with
    which topic and header edits)."""

    def _compile(self, message: dict[str, Any], event: Any, pk: list[str]) -> Any:
        schema = event.schema
        key = schema.primary_key
        if [c.name for c in schema.columns] != list(message["mysqlType"]):
            return None
        if len(set(key)) != len(key) or len(set(pk)) != len(pk):
            return None  # a repeated key column: Python's
        selected = [t.selects(event) for t in self.transforms]  # table predicates: the INSERT probe's
        ops = [self._op_typed(message, kind, selected, list(schema.primary_key)) for kind in _KINDS]
        zoned = self.timezone == self.encoder.opts.source_timezone
        columns = [(c.name, *self._conversion(c, zoned)) for c in schema.columns]
        return columns, list(schema.primary_key), ops

    def _conversion(self, column: Any, zoned: bool) -> tuple[str, Any]:
        """How the writer renders one column's Canal text (``SchemalessJson.json_image``)."""
        from cdc_smt.transforms.types import Kind

        t = column.mysql
        k = t.kind
        if k is Kind.INT or k is Kind.YEAR:
            return ("int", None)
        if k is Kind.DECIMAL:
            return ("decimal", None)
        if k is Kind.FLOAT:
            return ("float32", None) if t.is_single_float else ("double", None)
        if k is Kind.BIT:
            return ("bit1", None) if t.length == 1 else ("int", None)
        if k is Kind.STRING or (k is Kind.ENUM and not t.values):
            return ("str", None)
        if k is Kind.ENUM:
            return ("enum", _enum_table(column, self.decoder.form))
        if k is Kind.SET:
            labels = list(t.values) or None
            if self.encoder.set_as_list:
                return ("set_list", labels)
            return ("set", labels) if labels else ("str", None)
        if k is Kind.JSON:
            return ("json", None) if self.encoder.values.embedded_json else ("str", None)
        if k is Kind.BYTES:
            return ("bytes", None)
        if k is Kind.DATE:
            return ("date", None)
        if k is Kind.DATETIME or (k is Kind.TIMESTAMP and zoned):
            return ("datetime", t.fsp or 0)
        if k is Kind.TIME:
            return ("time", t.fsp or 0)
        return ("python", None)  # GEOMETRY, TIMESTAMPs between zones

    def _op_typed(self, message: dict[str, Any], kind: str, selected: list[bool], pk: list[str]) -> tuple[int, Any]:
        """One op's entry: ``(0, None)`` dropped, ``(2, variant)`` written."""
        encoded = self._encode_op(message, kind, selected)
        if encoded is None:
            return 0, None
        _, value, topic, edits = encoded
        if value != orjson.dumps(self._expected(message, kind, pk)):
            raise native._Unsupported("message")  # not what the writer writes
        return 2, self._variant(topic, edits)

    def _expected(self, message: dict[str, Any], kind: str, pk: list[str]) -> dict[str, Any]:
        """What the writer writes for the probe (its row all null, ``es`` and ``ts`` 0)."""
        row = message["data"][0]
        if self.encoder.name == "ogg-json":
            table = ".".join(p for p in (message["database"], message["table"]) if p)
            out: dict[str, Any] = {
                "table": table or None,
                "op_type": _OGG_TYPES[kind],
                "op_ts": "1970-01-01 00:00:00.000000",
                "current_ts": "1970-01-01T00:00:00.000000",
            }
            if pk:
                out["primary_keys"] = pk
            if kind in ("UPDATE", "DELETE"):
                out["before"] = row
            if kind != "DELETE":
                out["after"] = row
            return out
        out = {
            "database": message["database"] or None,
            "table": message["table"] or None,
            "type": _MAXWELL_TYPES[kind],
            "ts": 0,
        }
        if pk:
            out["primary_key_columns"] = pk
        out["data"] = row
        return out


class _ShapedTypedJsonTables(TextShaped, _TypedJsonTables):
    """canal-json -> maxwell-json / ogg-json under row-changing transforms: the writer's table
    of the transformed schema, fed the re-shaped rows (``row_shape.rs``)."""

    writer_tables = _TypedJsonTables

    def _written_row(self, value: bytes) -> dict[str, Any]:
        written = orjson.loads(value)
        row: dict[str, Any] = written["after" if self.encoder.name == "ogg-json" else "data"]
        return row

    def _check_shaped(self, written: dict[str, Any], final: Any) -> None:
        pk, database, table = list(final.pk) or None, final.source.database, final.source.table
        if self.encoder.name == "ogg-json":
            fields = {"table": ".".join(p for p in (database, table) if p) or None, "primary_keys": pk}
        else:
            fields = {"database": database or None, "table": table or None, "primary_key_columns": pk}
        if {k: written.get(k) for k in fields} != fields:
            raise native._Unsupported("message")  # not the shaped message's fields
