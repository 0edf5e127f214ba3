"""``flatten``: spread JSON-object columns into one column per leaf (``address.city``)."""

from __future__ import annotations

from typing import Any

from cdc_smt.transforms.errors import ConfigError, TransformError
from cdc_smt.transforms.model import ChangeEvent, Column
from cdc_smt.transforms.options import Option, Options
from cdc_smt.transforms.smt._rows import column_for, parse_object, plain, rebuild_schema
from cdc_smt.transforms.smt.base import Result, Transform, check_names, freeze_key
from cdc_smt.transforms.types import Kind


class Flatten(Transform):
    """Replace columns holding JSON objects by one column per leaf, named
    `column<delimiter>key` (nested objects recurse; arrays stay JSON text).

    By default every JSON column (any JSON-object value when the event has no
    schema) is flattened; list `fields` to choose, which also flattens text
    columns holding JSON objects. Values that are not objects, and nulls, are
    left alone. A flattened name that collides with a column is an error.
    """

    name = "flatten"
    known_as = "Kafka Connect Flatten"
    options = (
        Option("fields", list, [], "Columns to flatten (default: every JSON column).", check=check_names),
        Option("delimiter", str, ".", "Joins the column name and the keys."),
    )

    def configure(self, opts: Options) -> None:
        if not opts.delimiter:
            raise ConfigError("must not be empty", f"{self.path}.delimiter")
        self._fields = frozenset(opts.fields) or None
        self._delim = opts.delimiter

    def _wanted(self, event: ChangeEvent) -> frozenset[str] | None:
        if self._fields is not None:
            return self._fields
        if event.schema is None:
            return None  # any column holding an object
        return frozenset(c.name for c in event.schema.columns if c.mysql.kind is Kind.JSON)

    def _spread(self, prefix: str, obj: dict[str, Any], out: dict[str, Any], types: dict[str, Column]) -> None:
        for k, v in obj.items():
            name = f"{prefix}{self._delim}{k}"
            if isinstance(v, dict) and v:
                self._spread(name, v, out, types)
                continue
            if name in out:
                raise TransformError(f"flattened column {name!r} collides with an existing column")
            out[name] = plain(v)
            if name not in types or (types[name].type == "longtext" and v is not None):
                types[name] = column_for(name, v)

    def _image(
        self, img: dict[str, Any], wanted: frozenset[str] | None, types: dict[str, Column]
    ) -> dict[str, Any] | None:
        spread = {}
        for k, v in img.items():
            if (wanted is None or k in wanted) and v is not None:
                obj = parse_object(v)
                if obj is not None:
                    spread[k] = obj
        if not spread:
            return None
        out: dict[str, Any] = {}
        for k, v in img.items():
            if k in spread:
                self._spread(k, spread[k], out, types)
            else:
                if k in out:
                    raise TransformError(f"flattened column {k!r} collides with an existing column")
                out[k] = v
        return out

    def apply(self, event: ChangeEvent) -> Result:
        event.typed()
        wanted = self._wanted(event)
        if wanted is not None and not wanted:
            return event
        types: dict[str, Column] = {}
        new_after = self._image(event.after, wanted, types) if event.after is not None else None
        new_before = self._image(event.before, wanted, types) if event.before is not None else None
        if new_after is None and new_before is None:
            return event
        before = new_before if new_before is not None else event.before
        after = new_after if new_after is not None else event.after
        order = list(dict.fromkeys([*(after or {}), *(before or {})]))
        if event.pk and any(k not in order for k in event.pk):
            freeze_key(event)
        event.schema = rebuild_schema(event, order, types)
        event.before, event.after = before, after
        event.pk = event.schema.primary_key
        event.changed = None
        return event
