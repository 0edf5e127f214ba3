"""An example cdc-smt plugin: a transform and a predicate from outside the project."""

from __future__ import annotations

from cdc_smt.transforms.model import ChangeEvent
from cdc_smt.transforms.options import Option, Options
from cdc_smt.transforms.predicates import Predicate
from cdc_smt.transforms.smt.base import Result, Transform


class Shout(Transform):
    """Upper-case text columns."""

    name = "shout"
    known_as = "example plugin"
    options = (Option("fields", list, doc="Columns to upper-case."),)

    def configure(self, opts: Options) -> None:
        self._fields = tuple(opts.fields)

    def apply(self, event: ChangeEvent) -> Result:
        event.typed()
        for image in (event.before, event.after):
            for f in self._fields:
                if image is not None and isinstance(image.get(f), str):
                    image[f] = image[f].upper()
        return event


class IdIsEven(Predicate):
    """The row's `id` is even."""

    name = "id_is_even"

    def test(self, event: ChangeEvent) -> bool:
        row = event.row or {}
        return isinstance(row.get("id"), int) and row["id"] % 2 == 0
