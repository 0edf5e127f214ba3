"""``extract_field``: make the JSON object held in one column the whole row (outbox payloads)."""

from __future__ import annotations

from typing import Any

from cdc_smt.transforms.errors import TransformError
from cdc_smt.transforms.model import ChangeEvent, Column
from cdc_smt.transforms.options import Option, Options
from cdc_smt.transforms.smt._rows import column_for, parse_object, plain, rebuild_schema
from cdc_smt.transforms.smt.base import Result, Transform, check_names, freeze_key


class ExtractField(Transform):
    """Replace each row image by the JSON object held in `field` (a JSON
    column or text holding an object), keeping the `keep` columns beside it.

    Typical for outbox tables, whose `payload` column is the real message.
    Nested objects and arrays become JSON columns. The Kafka key is pinned to
    the original primary key first. A row whose `field` is missing, null or not
    an object is an error (dead letter).
    """

    name = "extract_field"
    known_as = "Kafka Connect ExtractField"
    options = (
        Option("field", str, doc="The column holding the object."),
        Option("keep", list, [], "Other columns to keep, before the extracted ones.", check=check_names),
    )

    def configure(self, opts: Options) -> None:
        self._field = opts.field
        self._keep = tuple(k for k in opts.keep if k != opts.field)

    def _image(self, event: ChangeEvent, img: dict[str, Any], types: dict[str, Column]) -> dict[str, Any]:
        obj = parse_object(img.get(self._field))
        if obj is None:
            shown = "missing" if self._field not in img else f"not a JSON object: {img[self._field]!r:.60}"
            raise TransformError(f"column {self._field!r} of {event.database}.{event.table} is {shown}")
        old = event.schema.by_name if event.schema is not None else {}
        out: dict[str, Any] = {}
        for k in self._keep:
            if k in img:
                out[k] = img[k]
                if k in old:
                    types[k] = old[k]
        for k, v in obj.items():
            if k in out:
                raise TransformError(f"extracted key {k!r} collides with kept column {k!r}")
            out[k] = plain(v)
            if k not in types or (types[k].type == "longtext" and v is not None):
                types[k] = column_for(k, v)
        return out

    def apply(self, event: ChangeEvent) -> Result:
        event.typed()
        freeze_key(event)
        types: dict[str, Column] = {}
        after = self._image(event, event.after, types) if event.after is not None else None
        before = self._image(event, event.before, types) if event.before is not None else None
        order = list(dict.fromkeys([*(after or {}), *(before or {})]))
        # extracted keys may reuse names of dropped columns: type from ``types`` only
        schema = rebuild_schema(event, order, types, keep_old=False)
        event.schema = schema
        event.before, event.after = before, after
        event.pk = schema.primary_key
        event.changed = None
        return event
