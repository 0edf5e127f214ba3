"""``value_to_key``: build the Kafka key from row columns."""

from __future__ import annotations

from cdc_smt.transforms.errors import ConfigError, TransformError
from cdc_smt.transforms.model import ChangeEvent
from cdc_smt.transforms.options import Option, Options
from cdc_smt.transforms.smt.base import Result, Transform, check_names


class ValueToKey(Transform):
    """Set the Kafka key to these columns of the row (after-image, else before-image).

    Use it for tables without a primary key, or to partition by something else
    (a tenant id). A row that lacks one of the columns is an error (dead
    letter); a null value is kept as null.
    """

    name = "value_to_key"
    known_as = "Kafka Connect ValueToKey"
    options = (Option("fields", list, doc="Key columns, in key order.", check=check_names),)

    def configure(self, opts: Options) -> None:
        if not opts.fields:
            raise ConfigError("list at least one column", f"{self.path}.fields")
        self._fields = tuple(opts.fields)

    def adds_columns(self) -> tuple[str, ...]:
        return ()

    def apply(self, event: ChangeEvent) -> Result:
        row = event.row
        if row is None:
            return event
        missing = [f for f in self._fields if f not in row]
        if missing:
            raise TransformError(f"row of {event.database}.{event.table} has no column {missing[0]!r} for the key")
        event.typed()
        row = event.row
        assert row is not None  # checked above; typed() keeps it
        event.key = {f: row[f] for f in self._fields}
        return event
