"""Helpers for the transforms that change a row's shape (flatten, extract_field, hoist_field)."""

from __future__ import annotations

from typing import Any

import orjson

from cdc_smt.transforms.formats.base import json_default
from cdc_smt.transforms.model import ChangeEvent, Column, TableSchema
from cdc_smt.transforms.smt.base import infer_type
from cdc_smt.transforms.types import Kind, to_json_value


def parse_object(value: Any) -> dict[str, Any] | None:
    """A JSON object held in a column: a dict, or JSON text of an object; else ``None``."""
    if isinstance(value, dict):
        return value
    if isinstance(value, (str, bytes)):
        text = value.strip() if isinstance(value, str) else value
        if text[:1] not in ("{", b"{"):
            return None
        try:
            obj = orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
        return obj if isinstance(obj, dict) else None
    return None


def plain(value: Any) -> Any:
    """A value taken out of JSON as a typed column value: nested objects/arrays become JSON text."""
    if isinstance(value, (dict, list)):
        return orjson.dumps(value, default=json_default).decode("utf-8")
    return value


def column_for(name: str, value: Any, pk: bool = False) -> Column:
    """A column for a value lifted out of JSON (JSON text for nested values)."""
    if isinstance(value, (dict, list)):
        return Column(name, "json", True, pk)
    return Column(name, infer_type(value) if value is not None else "longtext", True, pk)


def json_of(row: dict[str, Any], schema: TableSchema | None) -> str:
    """Columns as JSON text, values rendered as JSON-native as they safely can be."""
    by_name = schema.by_name if schema is not None else {}
    out = {}
    for k, v in row.items():
        col = by_name.get(k)
        if col is not None and v is not None:
            if col.mysql.kind is Kind.JSON and isinstance(v, str):
                try:
                    out[k] = orjson.loads(v)
                    continue
                except orjson.JSONDecodeError:
                    pass
            out[k] = to_json_value(col.mysql, v)
        else:
            out[k] = v
    return orjson.dumps(out, default=json_default).decode("utf-8")


def rebuild_schema(
    event: ChangeEvent, order: list[str], types: dict[str, Column], *, keep_old: bool = True
) -> TableSchema:
    """A schema for a reshaped row: columns in ``order``, typed by the old schema
    (when ``keep_old``) or ``types``; the primary key keeps the columns still there."""
    old = event.schema.by_name if keep_old and event.schema is not None else {}
    pk = tuple(k for k in event.pk if k in order)
    cols = []
    for name in order:
        c = old.get(name) or types.get(name) or Column(name, "longtext")
        cols.append(Column(c.name, c.type, c.nullable, name in pk, c.default, c.comment))
    return TableSchema(tuple(cols), pk)
