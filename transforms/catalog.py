"""Table schema catalog: what columns (names, MySQL types, key) each table has, over time.

Formats that carry no column names (TDSQL's positional arrays) or no types
(CKafka format 1, Maxwell) need the table schema from somewhere else. The
catalog keeps one per ``database.table``, versioned, fed from

* DDL in the stream (:meth:`SchemaCatalog.apply_ddl`; the interpreter, which
  statements it understands and how, is ``transforms.ddl``);
* a schema file given by the user (:meth:`SchemaCatalog.load_file`);
* the types typed messages carry (``event.schema`` of Canal ``mysqlType``,
  CloudCanal ``dbValType``, Debezium schemas ...) via :meth:`SchemaCatalog.observe`.

Every change appends a :class:`TableVersion` stamped with a catalog-wide
version number, so a schema "in force at" an earlier point stays available
(:meth:`SchemaCatalog.at`). DDL the parser cannot handle leaves the last known
schema in place and yields a warning (also logged); the catalog never raises
on stream input.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cdc_smt.transforms.ddl import apply_ddl, keyed_schema, split_statements
from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.model import ChangeEvent, Column, Op, TableSchema
from cdc_smt.transforms.sqltext import classify_ddl  # lives with the other MySQL text helpers; re-exported
from cdc_smt.transforms.types import Kind, MySQLType, TypeParseError, parse_type

log = logging.getLogger("cdc_smt.catalog")

TableKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class TableVersion:
    """One state of a table. ``schema`` is ``None`` once the table is dropped.

    ``version``: catalog-wide sequence number of the change; ``origin``: what
    caused it (``ddl``, ``file``, ``message``, ``api``); ``ddl`` the statement
    and ``ts_ms`` the event time when known.
    """

    version: int
    schema: TableSchema | None
    origin: str
    ddl: str | None = None
    ts_ms: int | None = None


class SchemaCatalog:
    """Versioned table schemas keyed by ``(database, table)``.

    ``max_versions`` bounds the history kept per table (the newest are kept).
    """

    def __init__(self, *, max_versions: int = 64) -> None:
        if max_versions < 1:
            raise ValueError("max_versions must be >= 1")
        self.max_versions = max_versions
        self._tables: dict[TableKey, list[TableVersion]] = {}
        self._folded: dict[TableKey, TableKey] = {}
        self._version = 0
        self._seen: dict[TableKey, TableSchema] = {}
        self._applied: deque[ChangeEvent] = deque(maxlen=64)

    # -- reading -------------------------------------------------------------
    @property
    def version(self) -> int:
        """The catalog-wide version: how many changes were applied."""
        return self._version

    def get(self, database: str | None, table: str | None) -> TableSchema | None:
        """The current schema of ``database.table``, ``None`` if unknown or dropped."""
        versions = self._versions(database, table)
        return versions[-1].schema if versions else None

    def at(self, database: str | None, table: str | None, version: int) -> TableSchema | None:
        """The schema that was in force at catalog version ``version``."""
        found = None
        for v in self._versions(database, table):
            if v.version > version:
                break
            found = v.schema
        return found

    def versions(self, database: str | None, table: str | None) -> list[TableVersion]:
        """Every kept state of the table, oldest first."""
        return list(self._versions(database, table))

    def tables(self) -> list[TableKey]:
        """``(database, table)`` of every table that currently exists."""
        return sorted(k for k, v in self._tables.items() if v[-1].schema is not None)

    def __contains__(self, key: TableKey) -> bool:
        return self.get(*key) is not None

    def __len__(self) -> int:
        return len(self.tables())

    def _versions(self, database: str | None, table: str | None) -> list[TableVersion]:
        key = (database or "", table or "")
        found = self._tables.get(key)
        if found is None:
            folded = self._folded.get(_fold(key))
            found = self._tables.get(folded) if folded is not None else None
        return found or []

    def _key(self, database: str | None, table: str) -> TableKey:
        """The stored key for a table named in DDL (MySQL compares names case-insensitively
        on case-insensitive file systems; an existing spelling wins)."""
        key = (database or "", table)
        if key in self._tables:
            return key
        return self._folded.get(_fold(key), key)

    # -- writing -------------------------------------------------------------
    def put(
        self,
        database: str | None,
        table: str,
        schema: TableSchema | None,
        *,
        origin: str = "api",
        ddl: str | None = None,
        ts_ms: int | None = None,
    ) -> bool:
        """Record a new state of a table (``None`` drops it); ``False`` if nothing changed."""
        key = self._key(database, table)
        versions = self._tables.setdefault(key, [])
        if versions and versions[-1].schema == schema:
            return False
        self._version += 1
        versions.append(TableVersion(self._version, schema, origin, ddl, ts_ms))
        if len(versions) > self.max_versions:
            del versions[: len(versions) - self.max_versions]
        self._folded[_fold(key)] = key
        self._seen.pop(key, None)
        return True

    def observe(self, event: ChangeEvent) -> list[str]:
        """Learn from one decoded event; return warnings (also logged).

        DDL events apply their statement (once per event object, so a codec
        and the chain may both call this). Row events teach the table's schema
        when their format carries column types (see :meth:`learn`).
        """
        op = event.op
        if op is Op.DDL or op is Op.TRUNCATE:
            if event.ddl is None or any(e is event for e in self._applied):
                return []
            self._applied.append(event)
            return self._observe_ddl(event)
        if op.is_row and event.schema is not None and not event.partial and event.source.table:
            self.learn(event.source.database, event.source.table, event.schema, event.origin)
        return []

    def learn(self, database: str | None, table: str, schema: TableSchema, origin: str | None = None) -> bool:
        """Take the schema a typed message carries; keep richer known column details.

        Columns whose type is unchanged keep what DDL or a schema file said
        (nullability, default, comment). Formats whose types are not exact
        (``capabilities.column_types`` false) teach nothing.
        """
        key = (database or "", table)
        if self._seen.get(key) is schema:
            return False
        if not _types_exact(origin):
            return False
        current = self.get(database, table)
        merged = schema if current is None else _merge(current, schema)
        changed = self.put(database, table, merged, origin="message")
        self._seen[self._key(database, table)] = schema
        return changed

    def _observe_ddl(self, event: ChangeEvent) -> list[str]:
        database = event.source.database
        warnings = self.apply_ddl(database, event.ddl or "", ts_ms=event.ts_ms)
        schema, table = event.schema, event.source.table
        if (
            schema is not None
            and table
            and _types_exact(event.origin)
            and classify_ddl(event.ddl or "") in ("CREATE", "ALTER")
        ):
            # The message states the table after the DDL: more reliable than parsing it.
            self.put(database, table, schema, origin="ddl", ddl=event.ddl, ts_ms=event.ts_ms)
            warnings = []
        for w in warnings:
            log.warning("%s", w)
        return warnings

    # -- DDL -----------------------------------------------------------------
    def apply_ddl(self, database: str | None, sql: str, *, ts_ms: int | None = None) -> list[str]:
        """Apply one or more ``;``-separated statements run in ``database``; return warnings
        (the interpreter: ``transforms.ddl``)."""
        return apply_ddl(self, database, sql, ts_ms=ts_ms)

    # -- files -----------------------------------------------------------------
    def load_file(self, path: str | Path) -> None:
        """Load a schema file (YAML or JSON; format in the README). Errors are ConfigErrors."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read schema file: {exc.strerror}", str(p)) from None
        if p.suffix.lower() == ".json":
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"malformed JSON: {exc}", str(p)) from None
        else:
            import yaml

            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise ConfigError(f"malformed YAML: {exc}", str(p)) from None
        self.load_dict(data or {}, source=str(p))

    def load_dict(self, data: Mapping[str, Any], *, source: str = "schema file") -> None:
        """Load the parsed content of a schema file."""
        if not isinstance(data, Mapping):
            raise ConfigError("a schema file is a mapping with 'tables' and/or 'ddl'", source)
        unknown = sorted(set(data) - {"tables", "ddl"})
        if unknown:
            raise ConfigError(f"unknown key {unknown[0]!r} (known: ddl, tables)", source)
        tables = data.get("tables") or {}
        if not isinstance(tables, Mapping):
            raise ConfigError("'tables' maps 'database.table' to a table", f"{source}: tables")
        for qualified, spec in tables.items():
            path = f"{source}: tables[{qualified!r}]"
            db, _, table = str(qualified).rpartition(".")
            if not db or not table:
                raise ConfigError("table keys are 'database.table'", path)
            self.put(db, table, _schema_from_spec(spec, path), origin="file")
        ddl = data.get("ddl") or []
        if not isinstance(ddl, list):
            raise ConfigError("'ddl' is a list of {database, sql}", f"{source}: ddl")
        for i, item in enumerate(ddl):
            path = f"{source}: ddl[{i}]"
            if not isinstance(item, Mapping) or not isinstance(item.get("sql"), str):
                raise ConfigError("each entry needs 'sql' (and usually 'database')", path)
            extra = sorted(set(item) - {"database", "sql"})
            if extra:
                raise ConfigError(f"unknown key {extra[0]!r} (known: database, sql)", path)
            warnings = self.apply_ddl(item.get("database"), item["sql"])
            if warnings:
                raise ConfigError(warnings[0], path)

    # -- persistence -------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-able snapshot with every kept version (for a changelog table)."""
        return {
            "version": self._version,
            "tables": [
                {
                    "database": db,
                    "table": table,
                    "versions": [
                        {
                            "version": v.version,
                            "origin": v.origin,
                            "ddl": v.ddl,
                            "ts_ms": v.ts_ms,
                            "schema": None if v.schema is None else schema_to_dict(v.schema),
                        }
                        for v in versions
                    ],
                }
                for (db, table), versions in sorted(self._tables.items())
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, max_versions: int = 64) -> SchemaCatalog:
        cat = cls(max_versions=max_versions)
        cat.restore(data)
        return cat

    def restore(self, data: Mapping[str, Any]) -> None:
        """Replace this catalog's content with a :meth:`to_dict` snapshot, in place
        (codecs sharing this catalog object see the restored tables)."""
        self._tables.clear()
        self._folded.clear()
        self._seen.clear()
        self._applied.clear()
        for entry in data.get("tables", ()):
            key = (entry["database"], entry["table"])
            self._tables[key] = [
                TableVersion(
                    v["version"],
                    None if v["schema"] is None else schema_from_dict(v["schema"]),
                    v["origin"],
                    v.get("ddl"),
                    v.get("ts_ms"),
                )
                for v in entry["versions"]
            ]
            self._folded[_fold(key)] = key
        self._version = int(data.get("version", 0))


# ---------------------------------------------------------------------------
# schema (de)serialisation
# ---------------------------------------------------------------------------


def schema_to_dict(schema: TableSchema) -> dict[str, Any]:
    cols = []
    for c in schema.columns:
        d: dict[str, Any] = {"name": c.name, "type": c.type}
        if not c.nullable:
            d["nullable"] = False
        if c.default is not None:
            d["default"] = c.default
        if c.comment is not None:
            d["comment"] = c.comment
        cols.append(d)
    return {"columns": cols, "primary_key": list(schema.primary_key)}


def schema_from_dict(data: Mapping[str, Any]) -> TableSchema:
    return _schema_from_spec(data, "schema")


_COLUMN_KEYS = {"name", "type", "nullable", "primary_key", "default", "comment"}


def _schema_from_spec(spec: Any, path: str) -> TableSchema:
    if not isinstance(spec, Mapping):
        raise ConfigError("a table is a mapping with 'columns' (and 'primary_key')", path)
    unknown = sorted(set(spec) - {"columns", "primary_key"})
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r} (known: columns, primary_key)", path)
    raw = spec.get("columns")
    if isinstance(raw, Mapping):  # shorthand: {name: type} in column order
        raw = [{"name": k, "type": v} for k, v in raw.items()]
    if not isinstance(raw, list) or not raw:
        raise ConfigError("'columns' must be a non-empty list (or a name: type mapping)", f"{path}.columns")
    columns = []
    for i, c in enumerate(raw):
        cpath = f"{path}.columns[{i}]"
        if not isinstance(c, Mapping):
            raise ConfigError("a column is a mapping with 'name' and 'type'", cpath)
        bad = sorted(set(c) - _COLUMN_KEYS)
        if bad:
            raise ConfigError(f"unknown key {bad[0]!r} (known: {', '.join(sorted(_COLUMN_KEYS))})", cpath)
        name, type_text = c.get("name"), c.get("type")
        if not isinstance(name, str) or not name:
            raise ConfigError("'name' must be a non-empty string", f"{cpath}.name")
        if not isinstance(type_text, str):
            raise ConfigError("'type' must be a MySQL type string such as 'int unsigned'", f"{cpath}.type")
        try:
            parse_type(type_text)
        except TypeParseError as exc:
            raise ConfigError(str(exc), f"{cpath}.type") from None
        for flag in ("nullable", "primary_key"):
            if flag in c and not isinstance(c[flag], bool):
                raise ConfigError("must be true or false", f"{cpath}.{flag}")
        default = c.get("default")
        columns.append(
            Column(
                name,
                type_text,
                nullable=c.get("nullable", True),
                primary_key=c.get("primary_key", False),
                default=None if default is None else str(default),
                comment=c.get("comment"),
            )
        )
    pk = spec.get("primary_key")
    if pk is None:
        pk = [c.name for c in columns if c.primary_key]
    if isinstance(pk, str):
        pk = [pk]
    if not isinstance(pk, list) or not all(isinstance(p, str) for p in pk):
        raise ConfigError("'primary_key' is a list of column names", f"{path}.primary_key")
    names = {c.name for c in columns}
    for p in pk:
        if p not in names:
            raise ConfigError(f"primary key column {p!r} is not among the columns", f"{path}.primary_key")
    return keyed_schema(columns, pk)


def _fold(key: TableKey) -> TableKey:
    return (key[0].lower(), key[1].lower())


# ---------------------------------------------------------------------------
# learning from typed messages
# ---------------------------------------------------------------------------


def _types_exact(origin: str | None) -> bool:
    """Does the format named ``origin`` carry exact MySQL column types?"""
    if origin is None:
        return True
    return _EXACT[origin] if origin in _EXACT else _lookup_exact(origin)


_EXACT: dict[str, bool] = {}


def _lookup_exact(origin: str) -> bool:
    from cdc_smt.transforms.formats import registry

    cls = registry().get(origin)
    _EXACT[origin] = exact = True if cls is None else bool(cls.capabilities.column_types)
    return exact


def _equivalent(a: str, b: str) -> bool:
    """Same MySQL type, ignoring integer display width and character sets."""
    if a == b:
        return True
    try:
        ta, tb = parse_type(a), parse_type(b)
    except TypeParseError:
        return False
    return _normal(ta) == _normal(tb)


def _normal(t: MySQLType) -> MySQLType:
    if t.kind is Kind.INT and not t.is_boolean:
        t = replace(t, length=None)
    return replace(t, charset=None)


def _merge(current: TableSchema, incoming: TableSchema) -> TableSchema:
    cols = []
    for c in incoming.columns:
        old = current.column(c.name)
        cols.append(old if old is not None and _equivalent(old.type, c.type) else c)
    pk = incoming.primary_key or tuple(p for p in current.primary_key if incoming.column(p) is not None)
    return keyed_schema(cols, pk)


def iter_schema_tables(catalog: SchemaCatalog) -> Iterator[tuple[str, str, TableSchema]]:
    """``(database, table, schema)`` of every existing table (for listings)."""
    for db, table in catalog.tables():
        schema = catalog.get(db, table)
        if schema is not None:
            yield db, table, schema


__all__ = [
    "SchemaCatalog",
    "TableVersion",
    "classify_ddl",
    "iter_schema_tables",
    "schema_from_dict",
    "schema_to_dict",
    "split_statements",
]
