"""The transform base class: declared options, predicates, and the batch loop.

A transform is a small class with its options declared once (``options``, a
tuple of :class:`transforms.options.Option`), validated when the chain loads so
a mistake is reported as ``transforms[2].fields: ...`` rather than as a stack
trace on the first message. Subclasses implement :meth:`Transform.apply` (one
event in, zero or more out) and, when it pays, :meth:`Transform.apply_batch`.

Every transform takes ``predicate`` and ``negate`` (as Kafka Connect does): the
transform applies only to events the predicate accepts (or rejects, with
``negate``); the rest pass through untouched. Row transforms (``scope =
"rows"``) also let control events (DDL, heartbeats, watermarks, transaction
markers, truncates) and tombstones pass untouched, so a chain never has to
special-case them.

Events are owned by the chain while they move through it: transforms may change
them in place. Sub-objects that decoders may share between the events of one
message (``event.source``, ``event.schema``, ``event.extra``) are replaced,
never modified.

Markers that are not part of any one format live in ``event.extra`` under the
``cdc_smt.`` prefix (see :data:`TOMBSTONE`, :data:`UNWRAPPED`,
:data:`ROW_GROUP`); encoders honour them whatever the event's origin.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import msgspec

from cdc_smt.transforms.errors import ConfigError, TransformError

# TOMBSTONE / UNWRAPPED live in the model (encoders honour them); re-exported here.
from cdc_smt.transforms.inference import python_type
from cdc_smt.transforms.model import TOMBSTONE, UNWRAPPED, ChangeEvent, Column, Op, TableSchema
from cdc_smt.transforms.options import Option, Options, merge, resolve
from cdc_smt.transforms.types import zone as types_zone

#: ``extra`` key: consecutive events with the same value form one multi-row message.
ROW_GROUP = "cdc_smt.row_group"

ROW_OPS = frozenset({Op.INSERT, Op.UPDATE, Op.DELETE, Op.READ})
CONTROL_OPS = frozenset(Op) - ROW_OPS

#: What an :meth:`Transform.apply` returns: one event, several, or ``None`` to drop.
Result = ChangeEvent | list[ChangeEvent] | None


def _check_predicate_spec(value: Any) -> None:
    if isinstance(value, str):
        if not value:
            raise ValueError("predicate name must not be empty")
        return
    if not isinstance(value, dict) or "type" not in value:
        raise ValueError("expected a predicate name or a mapping with a 'type'")


#: Options every transform takes, whatever its type.
COMMON_OPTIONS: tuple[Option, ...] = (
    Option("name", str, None, "Label used in error reports and dead letters (default: the transform type)."),
    Option(
        "predicate",
        object,
        None,
        "Apply only to events this predicate accepts: the name of an entry under `predicates:`, "
        "or an inline mapping `{type: table_matches, pattern: ...}`. Other events pass through untouched.",
        check=_check_predicate_spec,
    ),
    Option("negate", bool, False, "Invert the predicate: apply to the events it rejects."),
)
_COMMON_NAMES = frozenset(o.name for o in COMMON_OPTIONS) | {"type", "on_missing"}

log = logging.getLogger("cdc_smt.transforms")

#: What a transform does when a column it names is not in the event's table.
ON_MISSING_CHOICES = ("error", "warn", "ignore")

#: Declared once here; added to the options of every transform that names columns
#: (``names_columns = True``).
ON_MISSING_OPTION = Option(
    "on_missing",
    str,
    None,
    "A named column the event's table does not have (its schema when known, else the row): "
    "`error` sends the event to the dead-letter output, `warn` logs once per table and counts, "
    "`ignore` says nothing. Default: the chain's `on_missing`, else `error` for transforms that "
    "protect data (mask_field) and `warn` for the others.",
    choices=ON_MISSING_CHOICES,
)


@dataclass(frozen=True, slots=True)
class MissingColumn:
    """How many rows reached ``transform`` without ``column`` in ``table``."""

    transform: str
    column: str
    table: str
    rows: int

    def describe(self) -> str:
        s = "" if self.rows == 1 else "s"
        return f"{self.transform}: {self.rows} row{s} missing column {self.column!r} in {self.table}"


class Transform:
    """Base class of every transform.

    Class attributes: ``name`` (the config ``type`` alias), ``known_as`` (what
    users know it as, for the docs), ``options`` (declared options) and
    ``scope`` (``"rows"``: only row events that are not tombstones reach
    :meth:`apply`; ``"all"``: every event does).
    """

    #: Not a ClassVar: each instance sets its own label (the ``name`` option, else this).
    name: str = ""
    known_as: ClassVar[str] = ""
    options: ClassVar[tuple[Option, ...]] = ()
    scope: ClassVar[str] = "rows"
    #: The transform names columns (``self.columns``): it takes ``on_missing``.
    names_columns: ClassVar[bool] = False
    #: Its job is protection (masking): a missing column is an error by default.
    protects: ClassVar[bool] = False
    #: Columns this instance names, checked on every row event (set by ``configure``).
    columns: tuple[str, ...] = ()
    #: The subset named by expressions and templates: checked at load against schema files.
    expression_columns: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        clash = {o.name for o in cls.options} & _COMMON_NAMES
        if clash:
            raise TypeError(f"{cls.__name__} declares reserved option(s) {sorted(clash)}")
        if cls.scope not in ("rows", "all"):
            raise TypeError(f"{cls.__name__}.scope must be 'rows' or 'all'")

    def __init__(
        self,
        options: Mapping[str, Any] | None = None,
        *,
        path: str = "",
        predicates: Mapping[str, Any] | None = None,
    ) -> None:
        self.path = path
        self.opts: Options = resolve(self.all_options(), dict(options or {}), path)
        self.name = self.opts.name or type(self).name or type(self).__name__
        self.negate: bool = self.opts.negate
        self.predicate = self._build_predicate(self.opts.predicate, predicates)
        try:
            self.configure(self.opts)
        except (TypeError, AttributeError) as exc:  # e.g. `spec: null`: an option of the wrong shape
            raise ConfigError(f"invalid options for {self.name}: {exc}", path or None) from None
        self._init_missing()

    @classmethod
    def all_options(cls) -> tuple[Option, ...]:
        common = (*COMMON_OPTIONS, ON_MISSING_OPTION) if cls.names_columns else COMMON_OPTIONS
        return merge(common, cls.options)

    @classmethod
    def on_missing_default(cls, chain_default: str | None) -> str:
        """The ``on_missing`` a transform gets when its own spec does not say: the
        chain's default, except that a protecting transform is never loosened by it."""
        if cls.protects:
            return "error"
        return chain_default or "warn"

    @classmethod
    def summary(cls) -> str:
        """First paragraph of the class docstring, on one line (for docs and listings)."""
        doc = (cls.__doc__ or "").strip().split("\n\n", 1)[0]
        return " ".join(doc.split())

    def _build_predicate(self, spec: Any, named: Mapping[str, Any] | None) -> Any:
        if spec is None:
            if self.negate:
                raise ConfigError("negate needs a predicate", f"{self.path}.negate" if self.path else "negate")
            return None
        from cdc_smt.transforms.predicates import Predicate, build_predicate

        ppath = f"{self.path}.predicate" if self.path else "predicate"
        if isinstance(spec, str):
            found = (named or {}).get(spec)
            if found is None:
                known = ", ".join(sorted(named or {})) or "none defined"
                raise ConfigError(f"unknown predicate {spec!r} (known: {known})", ppath)
            if isinstance(found, Predicate):
                return found
            return build_predicate(found, path=f"predicates.{spec}")
        return build_predicate(spec, path=ppath)

    # -- columns that do not exist ---------------------------------------------
    def _init_missing(self) -> None:
        self.on_missing: str = (
            getattr(self.opts, "on_missing", None) if self.names_columns else None
        ) or self.on_missing_default(None)
        self.columns = tuple(dict.fromkeys(self.columns))
        self._check = self.columns and self.on_missing != "ignore"
        self._missing_by_schema: dict[int, tuple[TableSchema, tuple[str, ...]]] = {}
        #: ``(table, column) -> rows`` seen without the column (``warn``).
        self.missing_counts: dict[tuple[str, str], int] = {}

    def adds_columns(self) -> Iterable[str] | None:
        """Columns this transform may add or rename to (for the load-time check of
        later transforms' names); ``None``: it may add any (the check stops there)."""
        return None

    def _missing(self, event: ChangeEvent) -> tuple[str, ...]:
        """Named columns the event's table lacks: by its schema when known (cached per
        schema), else by its row image."""
        schema = event.schema
        if schema is not None:
            hit = self._missing_by_schema.get(id(schema))
            if hit is not None and hit[0] is schema:
                return hit[1]
            names = schema.by_name
            missing = tuple(c for c in self.columns if c not in names)
            if len(self._missing_by_schema) > 4096:
                self._missing_by_schema.clear()
            self._missing_by_schema[id(schema)] = (schema, missing)
            return missing
        row = event.after if event.after is not None else event.before
        if row is None:
            return ()
        return tuple(c for c in self.columns if c not in row)

    def check_columns(self, event: ChangeEvent) -> None:
        """Apply ``on_missing`` to a row event naming columns its table does not have."""
        missing = self._missing(event)
        if not missing:
            return
        table = table_name(event)
        if self.on_missing == "error":
            column = missing[0]
            known = self._known(event)
            hint = difflib.get_close_matches(column, known, n=1)
            hint_text = f"; did you mean {hint[0]!r}?" if hint else ""
            raise TransformError(f"{self.name}: no column {column!r} in {table}{hint_text} (on_missing: error)")
        counts = self.missing_counts
        for column in missing:
            key = (table, column)
            n = counts.get(key, 0)
            if n == 0:
                log.warning("%s: no column %r in %s (on_missing: warn; rows counted)", self.name, column, table)
            counts[key] = n + 1

    @staticmethod
    def _known(event: ChangeEvent) -> list[str]:
        if event.schema is not None:
            return [c.name for c in event.schema.columns]
        row = event.after if event.after is not None else event.before
        return list(row or ())

    def missing_report(self) -> list[MissingColumn]:
        """Rows counted without a named column, per table and column."""
        return [MissingColumn(self.name, column, table, n) for (table, column), n in self.missing_counts.items()]

    # -- to override ---------------------------------------------------------
    def configure(self, opts: Options) -> None:
        """Compile what the options allow once (regexes, templates, lookups)."""

    def apply(self, event: ChangeEvent) -> Result:
        """Transform one selected event: return it, a list of events, or ``None`` to drop it."""
        raise NotImplementedError

    # -- the loop --------------------------------------------------------------
    def selects(self, event: ChangeEvent) -> bool:
        """Does this transform apply to ``event`` (scope, then predicate and negate)?"""
        if self.scope == "rows" and (event.op not in ROW_OPS or TOMBSTONE in event.extra):
            return False
        pred = self.predicate
        return pred is None or pred.test(event) != self.negate

    def apply_batch(self, events: list[ChangeEvent]) -> list[ChangeEvent]:
        """Apply to each event in order; unselected events pass through in place."""
        out: list[ChangeEvent] = []
        append = out.append
        apply = self.apply
        pred = self.predicate
        negate = self.negate
        rows = self.scope == "rows"
        check = self.check_columns if self._check else None
        for e in events:
            if rows and (e.op not in ROW_OPS or TOMBSTONE in e.extra):
                append(e)
                continue
            if pred is not None and pred.test(e) == negate:
                append(e)
                continue
            if check is not None and (rows or (e.op in ROW_OPS and TOMBSTONE not in e.extra)):
                check(e)
            r = apply(e)
            if r is None:
                continue
            if isinstance(r, list):
                out.extend(r)
            else:
                append(r)
        return out

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} at {self.path or '?'}>"


# ---------------------------------------------------------------------------
# Helpers shared by the transforms.
# ---------------------------------------------------------------------------


def table_name(event: ChangeEvent) -> str:
    """``database.table`` as reports name it (``?`` for an unknown part)."""
    src = event.source
    table = src.table or "?"
    return f"{src.database}.{table}" if src.database else table


def missing_columns(transforms: Iterable[Any]) -> list[MissingColumn]:
    """Every transform's counts of rows missing a named column (for summaries and metrics)."""
    out: list[MissingColumn] = []
    for t in transforms:
        report = getattr(t, "missing_report", None)
        if report is not None:
            out.extend(report())
    return out


def check_known_columns(transforms: Iterable[Any], catalog: Any) -> None:
    """Load-time check where a schema file makes it knowable: a column an expression
    or template names that no known table has (nor an earlier transform adds) is a
    ConfigError.

    Stops at the first transform that may add columns it cannot list."""
    if catalog is None:
        return
    tables = catalog.tables()
    if not tables:
        return
    known: set[str] = set()
    for db, tb in tables:
        schema = catalog.get(db, tb)
        if schema is not None:
            known.update(c.name for c in schema.columns)
    for t in transforms:
        for column in getattr(t, "expression_columns", ()):
            if column not in known:
                hint = difflib.get_close_matches(column, sorted(known), n=1)
                hint_text = f"; did you mean {hint[0]!r}?" if hint else ""
                raise ConfigError(
                    f"no known table has a column {column!r}{hint_text}", getattr(t, "path", None) or None
                )
        adds = t.adds_columns() if hasattr(t, "adds_columns") else None
        if adds is None:
            return
        known.update(adds)


def is_tombstone(event: ChangeEvent) -> bool:
    return bool(event.extra.get(TOMBSTONE))


def tombstone_for(event: ChangeEvent) -> ChangeEvent:
    """A tombstone for the row ``event`` touched: op DELETE, only the key columns
    in ``before``, flagged :data:`TOMBSTONE`; encoders write a null value with the key."""
    key = dict(event.key_values())
    return msgspec.structs.replace(
        event,
        op=Op.DELETE,
        before=key,
        after=None,
        changed=None,
        key=key if event.key is not None else None,
        headers=list(event.headers) if event.headers is not None else None,
        extra={TOMBSTONE: True},
    )


def current_topic(event: ChangeEvent) -> str | None:
    """The topic as Kafka Connect SMTs see it: set by an earlier transform, else the source's."""
    if event.topic is not None:
        return event.topic
    rec = event.record
    return rec.topic if rec is not None else None


def current_headers(event: ChangeEvent) -> list[tuple[str, bytes]]:
    """Headers as SMTs see them: set by an earlier transform, else the source record's."""
    if event.headers is not None:
        return event.headers
    rec = event.record
    return list(rec.headers) if rec is not None and rec.headers else []


def freeze_key(event: ChangeEvent) -> None:
    """Pin the Kafka key before the row changes shape, so partitioning and
    compaction keep following the original primary key (typed, as encoders
    write explicit keys as they are)."""
    if event.key is None and event.pk:
        event.typed()
        event.key = dict(event.key_values())


def images(event: ChangeEvent) -> Iterable[dict[str, Any]]:
    if event.before is not None:
        yield event.before
    if event.after is not None:
        yield event.after


class SchemaMap:
    """Per-schema cache of a derived schema (schemas are shared by many events).

    Keyed by identity and holding the source schema, so ids are never reused.
    """

    __slots__ = ("_fn", "_cache")

    def __init__(self, fn: Callable[[TableSchema], TableSchema]) -> None:
        self._fn = fn
        self._cache: dict[int, tuple[TableSchema, TableSchema]] = {}

    def __call__(self, schema: TableSchema | None) -> TableSchema | None:
        if schema is None:
            return None
        hit = self._cache.get(id(schema))
        if hit is not None and hit[0] is schema:
            return hit[1]
        if len(self._cache) > 4096:
            self._cache.clear()
        new = self._fn(schema)
        self._cache[id(schema)] = (schema, new)
        return new


def with_columns(schema: TableSchema, added: Iterable[Column]) -> TableSchema:
    """``schema`` plus ``added`` columns (replacing same-named ones in place)."""
    added = list(added)
    by_name = {c.name: c for c in added}
    cols = [by_name.pop(c.name, c) for c in schema.columns]
    cols.extend(c for c in added if c.name in by_name)
    return TableSchema(tuple(cols), schema.primary_key)


def infer_type(value: Any) -> str:
    """A MySQL type for a value a transform adds (static fields, extracted JSON)."""
    return python_type(value)


zone = types_zone  # one cached ZoneInfo per name, shared with the codecs


def check_regex(pattern: str) -> None:
    """Option check: a pattern that compiles (the error says where it breaks)."""
    import re

    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"bad regular expression {pattern!r}: {exc}") from None


def check_regex_list(patterns: list) -> None:
    for p in patterns:
        if not isinstance(p, str):
            raise ValueError(f"expected a list of strings, got {p!r}")
        check_regex(p)


def check_names(names: list) -> None:
    """Option check: a list of non-empty column names."""
    for n in names:
        if not isinstance(n, str) or not n:
            raise ValueError(f"expected a list of column names, got {n!r}")


__all__ = [
    "COMMON_OPTIONS",
    "CONTROL_OPS",
    "MissingColumn",
    "ON_MISSING_CHOICES",
    "ON_MISSING_OPTION",
    "check_known_columns",
    "missing_columns",
    "table_name",
    "ROW_GROUP",
    "ROW_OPS",
    "Result",
    "SchemaMap",
    "TOMBSTONE",
    "Transform",
    "UNWRAPPED",
    "current_headers",
    "current_topic",
    "freeze_key",
    "images",
    "infer_type",
    "is_tombstone",
    "tombstone_for",
    "with_columns",
    "zone",
]
