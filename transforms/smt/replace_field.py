"""``replace_field``: keep, drop and rename columns (schema, primary key and changed list follow)."""

from __future__ import annotations

from typing import Any

from cdc_smt.transforms.errors import ConfigError, TransformError
from cdc_smt.transforms.model import ChangeEvent, Column, TableSchema
from cdc_smt.transforms.options import Option, Options
from cdc_smt.transforms.smt.base import Result, SchemaMap, Transform, check_names, freeze_key


def _check_renames(value: Any) -> dict[str, str]:
    """``{old: new}``, or Kafka Connect's list of ``old:new`` strings."""
    if isinstance(value, dict):
        pairs = list(value.items())
    elif isinstance(value, list):
        pairs = []
        for item in value:
            if not isinstance(item, str) or item.count(":") != 1:
                raise ValueError(f"expected 'old:new', got {item!r}")
            old, new = item.split(":")
            pairs.append((old, new))
    else:
        raise ValueError("expected a mapping {old: new} or a list of 'old:new'")
    out: dict[str, str] = {}
    for old, new in pairs:
        if not isinstance(old, str) or not isinstance(new, str) or not old or not new:
            raise ValueError(f"renames need non-empty names, got {old!r}: {new!r}")
        out[old] = new
    targets = list(out.values())
    dup = next((t for t in targets if targets.count(t) > 1), None)
    if dup is not None:
        raise ValueError(f"two columns renamed to {dup!r}")
    return out


class ReplaceField(Transform):
    """Keep only `include` columns, drop `exclude` columns, then apply `renames`.

    Works on raw values (no conversion). The table schema, primary key,
    explicit key and changed-column list follow; a renamed key column is
    renamed in the key. Dropping a primary-key column pins the Kafka key first,
    so partitioning and compaction still follow the original key.
    """

    name = "replace_field"
    known_as = "Kafka Connect ReplaceField"
    names_columns = True
    options = (
        Option("include", list, [], "Keep only these columns (empty: all).", check=check_names),
        Option("exclude", list, [], "Drop these columns.", check=check_names),
        Option(
            "renames",
            object,
            {},
            "Rename columns: `{old: new}` or a list of `old:new` (Kafka Connect style).",
            check=_check_renames,
        ),
    )

    def configure(self, opts: Options) -> None:
        both = set(opts.include) & set(opts.exclude)
        if both:
            raise ConfigError(f"column {sorted(both)[0]!r} is both included and excluded", f"{self.path}.exclude")
        self._include = frozenset(opts.include) or None
        self._exclude = frozenset(opts.exclude)
        self._renames: dict[str, str] = opts.renames
        self._schema = SchemaMap(self._new_schema)
        self.columns = (*opts.include, *opts.exclude, *self._renames)

    def adds_columns(self) -> tuple[str, ...]:
        return tuple(self._renames.values())

    def _keeps(self, name: str) -> bool:
        return (self._include is None or name in self._include) and name not in self._exclude

    def _name(self, name: str) -> str:
        return self._renames.get(name, name)

    def _new_schema(self, schema: TableSchema) -> TableSchema:
        cols = [c for c in schema.columns if self._keeps(c.name)]
        out: list[Column] = []
        seen: set[str] = set()
        for c in cols:
            new = self._name(c.name)
            if new in seen:
                raise TransformError(f"renaming {c.name!r} to {new!r} collides with another column")
            seen.add(new)
            out.append(c if new == c.name else _renamed(c, new))
        pk = tuple(self._name(k) for k in schema.primary_key if self._keeps(k))
        return TableSchema(tuple(out), pk)

    def _image(self, img: dict[str, Any]) -> dict[str, Any]:
        include, exclude, renames = self._include, self._exclude, self._renames
        if include is None and not renames:
            for k in exclude:
                img.pop(k, None)
            return img
        out: dict[str, Any] = {}
        for k, v in img.items():
            if (include is None or k in include) and k not in exclude:
                new = renames.get(k, k)
                if new in out:
                    raise TransformError(f"renaming {k!r} to {new!r} collides with another column")
                out[new] = v
        return out

    def apply(self, event: ChangeEvent) -> Result:
        pk = event.pk
        pk_touched = bool(pk) and (self._renames or self._include is not None or not self._exclude.isdisjoint(pk))
        if pk_touched and any(not self._keeps(k) for k in pk):
            freeze_key(event)
        if event.before is not None:
            event.before = self._image(event.before)
        if event.after is not None:
            event.after = self._image(event.after)
        if event.schema is not None:
            event.schema = self._schema(event.schema)
        if pk_touched:
            event.pk = tuple(self._name(k) for k in pk if self._keeps(k))
        changed = event.changed
        if changed is not None and (
            self._renames or self._include is not None or not self._exclude.isdisjoint(changed)
        ):
            event.changed = tuple(self._name(k) for k in changed if self._keeps(k))
        if event.key is not None and self._renames:
            event.key = {self._name(k): v for k, v in event.key.items()}
        return event


def _renamed(c: Column, new: str) -> Column:
    return Column(new, c.type, c.nullable, c.primary_key, c.default, c.comment)
