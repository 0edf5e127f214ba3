"""``hoist_field``: move columns into one JSON column (the inverse of ``flatten``)."""

from __future__ import annotations

from typing import Any

from cdc_smt.transforms.errors import ConfigError, TransformError
from cdc_smt.transforms.model import ChangeEvent, Column
from cdc_smt.transforms.options import Option, Options
from cdc_smt.transforms.smt._rows import json_of, rebuild_schema
from cdc_smt.transforms.smt.base import Result, Transform, check_names, freeze_key


class HoistField(Transform):
    """Move `fields` (default: every column) into a new JSON column `field`.

    The JSON object keeps the columns' order; numbers stay numbers, decimals
    and times become text, binary becomes base64. Hoisting a primary-key column
    pins the Kafka key to the original key first.
    """

    name = "hoist_field"
    known_as = "Kafka Connect HoistField"
    options = (
        Option("field", str, doc="Name of the new JSON column."),
        Option("fields", list, [], "Columns to move into it (default: all).", check=check_names),
    )

    def configure(self, opts: Options) -> None:
        if not opts.field:
            raise ConfigError("must not be empty", f"{self.path}.field")
        self._field = opts.field
        self._fields = frozenset(opts.fields) or None

    def _moves(self, name: str) -> bool:
        return self._fields is None or name in self._fields

    def _image(self, event: ChangeEvent, img: dict[str, Any]) -> dict[str, Any]:
        moved = {k: v for k, v in img.items() if self._moves(k)}
        out = {k: v for k, v in img.items() if not self._moves(k)}
        if self._field in out:
            raise TransformError(f"hoisted column {self._field!r} collides with an existing column")
        out[self._field] = json_of(moved, event.schema)
        return out

    def apply(self, event: ChangeEvent) -> Result:
        event.typed()
        if any(self._moves(k) for k in event.pk):
            freeze_key(event)
        after = self._image(event, event.after) if event.after is not None else None
        before = self._image(event, event.before) if event.before is not None else None
        order = list(dict.fromkeys([*(after or {}), *(before or {})]))
        event.schema = rebuild_schema(event, order, {self._field: Column(self._field, "json")})
        event.before, event.after = before, after
        event.pk = event.schema.primary_key
        event.changed = None
        return event
