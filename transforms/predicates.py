"""Predicates: conditions that decide which events a transform applies to.

As in Kafka Connect, a predicate is declared once and referenced by name
(``predicates: {orders: {type: table_matches, pattern: 'shop\\.orders'}}`` and
``predicate: orders`` on a transform), or given inline on the transform
(``predicate: {type: is_ddl}``). ``negate: true`` on the transform inverts it.

Each predicate is a small class with its options declared once, like the
transforms; third-party predicates register through the entry-point group
``cdc_smt.predicates``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import metadata
from typing import Any, ClassVar

from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.model import ChangeEvent, Op
from cdc_smt.transforms.options import Option, Options, resolve
from cdc_smt.transforms.smt.base import TOMBSTONE

ENTRY_POINT_GROUP = "cdc_smt.predicates"
_OP_NAMES = tuple(o.value for o in Op)


def _check_regex(pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"bad regular expression {pattern!r}: {exc}") from None


def _check_ops(ops: list) -> None:
    for o in ops:
        if o not in _OP_NAMES:
            raise ValueError(f"unknown op {o!r} (known: {', '.join(_OP_NAMES)})")


class Predicate:
    """Base class: ``name`` is the config ``type``; ``test(event)`` the condition."""

    name: ClassVar[str] = ""
    known_as: ClassVar[str] = ""
    options: ClassVar[tuple[Option, ...]] = ()

    def __init__(self, options: Mapping[str, Any] | None = None, *, path: str = "") -> None:
        self.path = path
        self.opts: Options = resolve(self.options, dict(options or {}), path)
        self.configure(self.opts)

    @classmethod
    def all_options(cls) -> tuple[Option, ...]:
        return cls.options

    @classmethod
    def summary(cls) -> str:
        doc = (cls.__doc__ or "").strip().split("\n\n", 1)[0]
        return " ".join(doc.split())

    def configure(self, opts: Options) -> None:
        """Compile what the options allow once."""

    def test(self, event: ChangeEvent) -> bool:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} at {self.path or '?'}>"


class TopicMatches(Predicate):
    """The record's current topic (as set by earlier transforms, else the source topic) fully matches a regex."""

    name = "topic_matches"
    known_as = "Kafka Connect TopicNameMatches"
    options = (Option("pattern", str, doc="Regular expression the whole topic name must match.", check=_check_regex),)

    def configure(self, opts: Options) -> None:
        self._match = re.compile(opts.pattern).fullmatch

    def test(self, event: ChangeEvent) -> bool:
        topic = event.topic
        if topic is None:
            rec = event.record
            topic = rec.topic if rec is not None else None
        return topic is not None and self._match(topic) is not None


class HasHeader(Predicate):
    """The record has a header with this name (headers set by earlier transforms, else the source record's)."""

    name = "has_header"
    known_as = "Kafka Connect HasHeaderKey"
    options = (Option("name", str, doc="Header name (exact, case-sensitive)."),)

    def test(self, event: ChangeEvent) -> bool:
        headers: Sequence[tuple[str, bytes]] = ()
        if event.headers is not None:
            headers = event.headers
        elif event.record is not None:
            headers = event.record.headers
        want = self.opts.name
        return any(k == want for k, _ in headers)


class IsTombstone(Predicate):
    """The event is a tombstone (a null-value record, e.g. after a Debezium delete)."""

    name = "is_tombstone"
    known_as = "Kafka Connect RecordIsTombstone"

    def test(self, event: ChangeEvent) -> bool:
        return TOMBSTONE in event.extra and bool(event.extra[TOMBSTONE])


class TableMatches(Predicate):
    """`database.table` fully matches a regex (events without a table never match)."""

    name = "table_matches"
    known_as = "Flink canal-json.table.include"
    options = (
        Option(
            "pattern",
            str,
            doc=r"Regular expression over `database.table`, e.g. `shop\.orders_\d+`.",
            check=_check_regex,
        ),
    )

    def configure(self, opts: Options) -> None:
        self._match = re.compile(opts.pattern).fullmatch
        self._cache: dict[tuple[str | None, str], bool] = {}

    def test(self, event: ChangeEvent) -> bool:
        src = event.source
        table = src.table
        if table is None:
            return False
        key = (src.database, table)
        hit = self._cache.get(key)
        if hit is None:
            if len(self._cache) > 65536:
                self._cache.clear()
            hit = self._cache[key] = self._match(f"{src.database}.{table}") is not None
        return hit


class OpIn(Predicate):
    """The event's op is one of these (`insert`, `update`, `delete`, `read`, `truncate`,
    `ddl`, `heartbeat`, `watermark`, `begin`, `commit`)."""

    name = "op_in"
    options = (Option("ops", list, doc="Op names.", check=_check_ops),)

    def configure(self, opts: Options) -> None:
        self._ops = frozenset(Op(o) for o in opts.ops)

    def test(self, event: ChangeEvent) -> bool:
        return event.op in self._ops


class IsDdl(Predicate):
    """The event is a schema change (DDL)."""

    name = "is_ddl"

    def test(self, event: ChangeEvent) -> bool:
        return event.op is Op.DDL


class Condition(Predicate):
    """An expression over the event is true (see "Expression language")."""

    name = "condition"
    options = (Option("expr", str, doc="The expression, e.g. `after.amount > 100 and op == 'insert'`."),)

    def configure(self, opts: Options) -> None:
        from cdc_smt.transforms.expr import compile_expr

        self._expr = compile_expr(opts.expr, path=f"{self.path}.expr" if self.path else "expr")

    def test(self, event: ChangeEvent) -> bool:
        return self._expr.test(event)


_BUILTINS: tuple[type[Predicate], ...] = (TopicMatches, HasHeader, IsTombstone, TableMatches, OpIn, IsDdl, Condition)


def builtins() -> dict[str, type[Predicate]]:
    return {p.name: p for p in _BUILTINS}


@lru_cache(maxsize=1)
def _plugins() -> dict[str, metadata.EntryPoint]:
    return {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def refresh() -> None:
    """Forget discovered plugins (after installing one at run time)."""
    _plugins.cache_clear()


def predicate_class(type_name: Any, path: str = "type") -> type[Predicate]:
    """The class for a predicate ``type``: a built-in name, a plugin name or a dotted class path."""
    if not isinstance(type_name, str) or not type_name:
        raise ConfigError(f"predicate type must be a non-empty string, got {type_name!r}", path)
    found = builtins().get(type_name)
    if found is not None:
        return found
    ep = _plugins().get(type_name)
    if ep is not None:
        cls = _load(lambda: ep.load(), f"plugin {type_name!r} ({ep.value})", path)
    elif "." in type_name or ":" in type_name:
        from cdc_smt.transforms.smt import import_dotted

        cls = import_dotted(type_name, path)
    else:
        known = ", ".join(sorted(set(builtins()) | set(_plugins())))
        raise ConfigError(f"unknown predicate type {type_name!r} (known: {known})", path)
    if not (isinstance(cls, type) and issubclass(cls, Predicate)):
        raise ConfigError(f"{type_name!r} is not a predicate (subclass transforms.predicates.Predicate)", path)
    return cls


def _load(fn: Any, what: str, path: str) -> Any:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - a broken plugin is a config problem
        raise ConfigError(f"cannot load {what}: {type(exc).__name__}: {exc}", path) from None


def build_predicate(spec: Mapping[str, Any], *, path: str = "predicate") -> Predicate:
    """A predicate from its spec ``{type: ..., <options>}``."""
    if not isinstance(spec, Mapping):
        raise ConfigError("expected a mapping with a 'type'", path)
    opts = dict(spec)
    if "type" not in opts:
        raise ConfigError("missing required key", f"{path}.type")
    cls = predicate_class(opts.pop("type"), f"{path}.type")
    return cls(opts, path=path)


def build_predicates(specs: Mapping[str, Any] | None, *, path: str = "predicates") -> dict[str, Predicate]:
    """Named predicates (the top-level ``predicates:`` mapping)."""
    if not specs:
        return {}
    if not isinstance(specs, Mapping):
        raise ConfigError("expected a mapping of predicate names to predicates", path)
    return {name: build_predicate(spec, path=f"{path}.{name}") for name, spec in specs.items()}


__all__ = [
    "ENTRY_POINT_GROUP",
    "Predicate",
    "build_predicate",
    "build_predicates",
    "builtins",
    "predicate_class",
    "refresh",
]
