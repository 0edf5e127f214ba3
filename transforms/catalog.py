"""Table schema catalog: what columns (names, MySQL types, key) each table has, over time.

Formats that carry no column names (TDSQL's positional arrays) or no types
(CKafka format 1, Maxwell) need the table schema from somewhere else. The
catalog keeps one per ``database.table``, versioned, fed from

* DDL in the stream, parsed with sqlglot (:meth:`SchemaCatalog.apply_ddl`):
  CREATE TABLE (also ``LIKE``), ALTER TABLE ADD/DROP/MODIFY/CHANGE/RENAME
  COLUMN, ADD/DROP PRIMARY KEY, ALTER COLUMN SET/DROP DEFAULT, RENAME TO,
  RENAME TABLE, DROP TABLE, DROP DATABASE (TRUNCATE changes no schema);
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
import re
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.model import ChangeEvent, Column, Op, TableSchema
from cdc_smt.transforms.sqltext import classify_ddl  # lives with the other MySQL text helpers; re-exported
from cdc_smt.transforms.types import Kind, MySQLType, TypeParseError, parse_type

log = logging.getLogger("cdc_smt.catalog")

TableKey = tuple[str, str]


class _QuietFallback(logging.Filter):
    """sqlglot logs a warning whenever it falls back to a generic Command; the
    catalog reports unparsed DDL itself, so that line is noise."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Falling back to parsing as a 'Command'" not in record.getMessage()


logging.getLogger("sqlglot").addFilter(_QuietFallback())


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
        """Apply one or more ``;``-separated statements run in ``database``; return warnings."""
        warnings: list[str] = []
        for stmt in split_statements(sql):
            try:
                warnings.extend(self._apply_statement(database, stmt, ts_ms))
            except _DDLProblem as exc:
                warnings.append(f"{exc} in DDL {_short(stmt)}; keeping the last known schema")
        return warnings

    def _apply_statement(self, database: str | None, sql: str, ts_ms: int | None) -> list[str]:
        pairs = _rename_pairs(sql)
        if pairs is not None:
            return self._rename(database, pairs, sql, ts_ms)
        tree = _parse(sql)
        if tree is None:
            if classify_ddl(sql) in ("CREATE", "ALTER"):
                raise _DDLProblem("could not parse")
            return []
        stamp = {"ddl": sql, "ts_ms": ts_ms}
        if isinstance(tree, exp.Create) and (tree.args.get("kind") or "").upper() == "TABLE":
            return self._create(database, tree, sql, stamp)
        if isinstance(tree, exp.Alter) and (tree.args.get("kind") or "").upper() == "TABLE":
            return self._alter(database, tree, sql, stamp)
        if isinstance(tree, exp.Drop):
            return self._drop(database, tree, stamp)
        return []  # TRUNCATE, indexes, databases, views, grants: no column changes

    def _create(self, database: str | None, tree: exp.Create, sql: str, stamp: dict) -> list[str]:
        target = tree.this
        if isinstance(target, exp.Schema):
            db, name = _table_name(target.this, database)
            if tree.args.get("exists") and self.get(db, name) is not None:
                return []
            columns: list[Column] = []
            pk: list[str] = []
            for item in target.expressions:
                if isinstance(item, exp.ColumnDef):
                    col = _column(item, sql)
                    columns.append(col)
                    if col.primary_key:
                        pk.append(col.name)
                else:
                    pk = _primary_key(item) or pk
            missing = [p for p in pk if _find(columns, p) < 0]
            if missing:
                raise _DDLProblem(f"primary key column {missing[0]!r} is not a column of {db}.{name}")
            pk = [columns[_find(columns, p)].name for p in pk]
            self.put(db, name, _schema(columns, pk), origin="ddl", **stamp)
            return []
        db, name = _table_name(target, database)
        like = next((p for p in (tree.args.get("properties") or exp.Properties()).expressions if isinstance(p, exp.LikeProperty)), None)
        if like is not None:
            src = self.get(*_table_name(like.this, database))
            if src is None:
                return [f"CREATE TABLE {db}.{name} LIKE {like.this.sql('mysql')}: source table not in the catalog"]
            self.put(db, name, src, origin="ddl", **stamp)
            return []
        return [f"CREATE TABLE {db}.{name}: columns of CREATE ... SELECT are not known; give them in a schema file"]

    def _alter(self, database: str | None, tree: exp.Alter, sql: str, stamp: dict) -> list[str]:
        db, name = _table_name(tree.this, database)
        current = self.get(db, name)
        if current is None:
            return [f"ALTER TABLE {db}.{name}: table not in the catalog; change ignored"]
        columns = list(current.columns)
        pk = list(current.primary_key)
        warnings: list[str] = []
        new_name: tuple[str, str] | None = None
        for action in tree.args.get("actions") or ():
            if isinstance(action, exp.ColumnDef):
                col = _column(action, sql)
                if _find(columns, col.name) >= 0:
                    warnings.append(f"ALTER TABLE {db}.{name}: column {col.name!r} already exists; replaced")
                    columns.pop(_find(columns, col.name))
                _insert(columns, col, action.args.get("position"))
                if col.primary_key:
                    pk = [col.name]
            elif isinstance(action, exp.ModifyColumn):
                cdef = action.this
                old = action.args.get("rename_from")
                old_name = old.name if old is not None else cdef.name
                i = _find(columns, old_name)
                if i < 0:
                    raise _DDLProblem(f"column {old_name!r} of {db}.{name} is not in the catalog")
                col = _column(cdef, sql)
                previous = columns.pop(i)
                if cdef.args.get("position") is None:
                    columns.insert(i, col)
                else:
                    _insert(columns, col, cdef.args.get("position"))
                pk = [col.name if _same(p, previous.name) else p for p in pk]
                if col.primary_key:
                    pk = [col.name]
            elif isinstance(action, exp.RenameColumn):
                old_name, to = action.this.name, action.args["to"].name
                i = _find(columns, old_name)
                if i < 0:
                    raise _DDLProblem(f"column {old_name!r} of {db}.{name} is not in the catalog")
                columns[i] = replace(columns[i], name=to)
                pk = [to if _same(p, old_name) else p for p in pk]
            elif isinstance(action, exp.Drop):
                if (action.args.get("kind") or "").upper() != "COLUMN":
                    continue  # DROP INDEX / KEY / FOREIGN KEY / CHECK
                for target in action.args.get("tables") or ():
                    i = _find(columns, target.name)
                    if i < 0:
                        warnings.append(f"ALTER TABLE {db}.{name}: column {target.name!r} was not in the catalog")
                        continue
                    dropped = columns.pop(i)
                    pk = [p for p in pk if not _same(p, dropped.name)]
            elif isinstance(action, exp.DropPrimaryKey):
                pk = []
            elif isinstance(action, exp.AddConstraint):
                pk = next((k for k in map(_primary_key, action.expressions) if k), pk)
            elif isinstance(action, exp.AlterColumn):
                i = _find(columns, action.this.name)
                if i >= 0 and (action.args.get("drop") or action.args.get("default") is not None):
                    default = None if action.args.get("drop") else _default_text(action.args["default"])
                    columns[i] = replace(columns[i], default=default)
            elif isinstance(action, exp.AlterRename):
                new_name = _table_name(action.this, db)
            elif not isinstance(action, (exp.Properties, exp.Property)):
                warnings.append(f"ALTER TABLE {db}.{name}: ignored {type(action).__name__} ({_short(action.sql('mysql'))})")
        missing = [p for p in pk if _find(columns, p) < 0]
        if missing:
            raise _DDLProblem(f"primary key column {missing[0]!r} of {db}.{name} is not in the catalog")
        schema = _schema(columns, [columns[_find(columns, p)].name for p in pk])
        if new_name is not None and new_name != (db, name):
            self.put(db, name, None, origin="ddl", **stamp)
            self.put(new_name[0], new_name[1], schema, origin="ddl", **stamp)
        else:
            self.put(db, name, schema, origin="ddl", **stamp)
        return warnings

    def _drop(self, database: str | None, tree: exp.Drop, stamp: dict) -> list[str]:
        kind = (tree.args.get("kind") or "").upper()
        if kind == "TABLE":
            for t in tree.args.get("tables") or ():
                db, name = _table_name(t, database)
                if self.get(db, name) is not None:
                    self.put(db, name, None, origin="ddl", **stamp)
        elif kind in ("DATABASE", "SCHEMA"):
            for t in tree.args.get("tables") or ():
                dropped = t.args.get("db").name if t.args.get("db") is not None else t.name
                for db, name in self.tables():
                    if _same(db, dropped):
                        self.put(db, name, None, origin="ddl", **stamp)
        return []

    def _rename(self, database: str | None, pairs: list[tuple[tuple[str | None, str], tuple[str | None, str]]], sql: str, ts_ms: int | None) -> list[str]:
        warnings = []
        for (odb, old), (ndb, new) in pairs:
            src_db, dst_db = odb or database, ndb or database
            schema = self.get(src_db, old)
            if schema is None:
                warnings.append(f"RENAME TABLE {src_db}.{old}: table not in the catalog; {dst_db}.{new} stays unknown")
                continue
            self.put(src_db, old, None, origin="ddl", ddl=sql, ts_ms=ts_ms)
            self.put(dst_db, new, schema, origin="ddl", ddl=sql, ts_ms=ts_ms)
        return warnings

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
    def from_dict(cls, data: Mapping[str, Any], *, max_versions: int = 64) -> "SchemaCatalog":
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


class _DDLProblem(Exception):
    """A DDL statement the catalog cannot apply; becomes a warning."""


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
    return _schema(columns, pk)


# ---------------------------------------------------------------------------
# DDL helpers
# ---------------------------------------------------------------------------


def split_statements(sql: str) -> list[str]:
    """``;``-separated statements (semicolons inside strings and identifiers are kept)."""
    if ";" not in sql:
        return [sql] if sql.strip() else []
    try:
        tokens = sqlglot.Dialect.get_or_raise("mysql").tokenize(sql)
    except TokenError:
        return [sql]
    out, start = [], 0
    for tok in tokens:
        if tok.token_type.name == "SEMICOLON":
            out.append(sql[start : tok.start])
            start = tok.end + 1
    out.append(sql[start:])
    return [s for s in (s.strip() for s in out) if s]


_GEOMETRY_TYPE = re.compile(
    r"((?:[(,]|\badd\b(?:\s+column\b)?|\bmodify\b(?:\s+column\b)?|\bchange\b(?:\s+column\b)?\s+(?:`[^`]+`|\w+))\s*(?:`[^`]+`|\w+)\s+)"
    r"(point|linestring|polygon|multipoint|multilinestring|multipolygon|geometrycollection|geomcollection)\b",
    re.I,
)
_FLOAT_UNSIGNED = re.compile(r"(\b(?:float|double|real)\b(?:\s*\([^)]*\))?\s+)(unsigned)\b", re.I)


def _parse(sql: str) -> exp.Expression | None:
    """sqlglot's tree, retrying once with same-length repairs of MySQL syntax
    it lacks (geometry column types, ``float unsigned``, CREATE TABLE options
    such as PARTITION BY). Same length keeps offsets valid for type slicing."""
    tree = _try_parse(sql)
    if tree is not None and not isinstance(tree, exp.Command):
        return tree
    repaired = _GEOMETRY_TYPE.sub(lambda m: m.group(1) + "blob".ljust(len(m.group(2))), sql)
    repaired = _FLOAT_UNSIGNED.sub(lambda m: m.group(1) + " " * len(m.group(2)), repaired)
    if classify_ddl(repaired) == "CREATE":
        repaired = _cut_after_column_list(repaired)
    if repaired != sql:
        again = _try_parse(repaired)
        if again is not None and not isinstance(again, exp.Command):
            return again
    return None if tree is None or isinstance(tree, exp.Command) else tree


def _try_parse(sql: str) -> exp.Expression | None:
    try:
        return sqlglot.parse_one(sql, read="mysql")
    except (ParseError, TokenError, ValueError):
        return None


def _cut_after_column_list(sql: str) -> str:
    """``CREATE TABLE t (...)`` without the table options that follow."""
    depth, quote = 0, None
    i = sql.find("(")
    if i < 0:
        return sql
    while i < len(sql):
        ch = sql[i]
        if quote:
            if ch == "\\" and quote != "`":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return sql[: i + 1]
        i += 1
    return sql


_IDENT = r"(?:`(?:[^`]|``)+`|[\w$]+)"
_QUALIFIED = rf"({_IDENT})(?:\s*\.\s*({_IDENT}))?"
_RENAME_HEAD = re.compile(r"^\s*rename\s+tables?\s+", re.I)
_RENAME_PAIR = re.compile(rf"\s*{_QUALIFIED}\s+to\s+{_QUALIFIED}\s*(,|$)", re.I)


def _rename_pairs(sql: str) -> list[tuple[tuple[str | None, str], tuple[str | None, str]]] | None:
    """``RENAME TABLE a TO b, db.c TO db.d`` (sqlglot reads it only as a Command)."""
    head = _RENAME_HEAD.match(sql)
    if head is None:
        return None
    pos, pairs = head.end(), []
    text = sql.rstrip().rstrip(";")
    while pos < len(text):
        m = _RENAME_PAIR.match(text, pos)
        if m is None:
            raise _DDLProblem("could not parse")
        a1, a2, b1, b2, _ = m.groups()
        pairs.append((_qualified(a1, a2), _qualified(b1, b2)))
        pos = m.end()
    return pairs


def _qualified(first: str, second: str | None) -> tuple[str | None, str]:
    first = _unquote(first)
    return (first, _unquote(second)) if second else (None, first)


def _unquote(ident: str) -> str:
    if ident.startswith("`"):
        return ident[1:-1].replace("``", "`")
    return ident


def _table_name(table: exp.Expression, database: str | None) -> tuple[str, str]:
    db = table.args.get("db")
    return (db.name if db is not None else database or "", table.name)


_TYPE_AT = re.compile(
    r"""\s*(?P<type>(?:national\s+|long\s+)?[a-z][a-z0-9_]*(?:\s+(?:precision|varying|varchar|varbinary|char))?"""
    r"""(?:\s*\((?:[^()'"]|'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")*\))?(?:\s+(?:unsigned|signed|zerofill)\b)*)""",
    re.I,
)


def _column(cd: exp.ColumnDef, sql: str) -> Column:
    """A catalog Column from a sqlglot column definition.

    The type text is taken from the statement itself (right after the column
    name) and normalised by ``parse_type``, so MySQL spellings sqlglot maps
    differently (``REAL`` is DOUBLE, geometry subtypes, enum labels) survive.
    """
    name = cd.name
    type_text = _type_text(cd, sql)
    nullable, pk, default, comment = True, False, None, None
    for c in cd.args.get("constraints") or ():
        kind = c.args.get("kind") if isinstance(c, exp.ColumnConstraint) else c
        if isinstance(kind, exp.NotNullColumnConstraint):
            nullable = bool(kind.args.get("allow_null"))
        elif isinstance(kind, exp.PrimaryKeyColumnConstraint):
            pk = True
        elif isinstance(kind, exp.DefaultColumnConstraint):
            default = _default_text(kind.this)
        elif isinstance(kind, exp.CommentColumnConstraint):
            comment = kind.this.name
    return Column(name, type_text, nullable=nullable and not pk, primary_key=pk, default=default, comment=comment)


def _type_text(cd: exp.ColumnDef, sql: str) -> str:
    end = cd.this.meta.get("end") if isinstance(cd.this, exp.Identifier) else None
    if end is not None:
        m = _TYPE_AT.match(sql, end + 1)
        if m is not None:
            try:
                return parse_type(m.group("type")).text()
            except TypeParseError:
                pass
    kind = cd.args.get("kind")
    if kind is None:
        raise _DDLProblem(f"column {cd.name!r} has no type")
    text = kind.sql(dialect="mysql")
    try:
        return parse_type(text).text()
    except TypeParseError:
        raise _DDLProblem(f"column {cd.name!r}: unsupported type {text}") from None


def _default_text(e: exp.Expression) -> str | None:
    """The default as ``information_schema.COLUMNS.COLUMN_DEFAULT`` shows it."""
    if isinstance(e, exp.Null):
        return None
    if isinstance(e, exp.Literal):
        return e.this
    if isinstance(e, exp.CurrentTimestamp):
        fsp = e.this
        return f"CURRENT_TIMESTAMP({fsp.sql(dialect='mysql')})" if fsp is not None else "CURRENT_TIMESTAMP"
    return e.sql(dialect="mysql")


def _primary_key(item: exp.Expression) -> list[str]:
    """Column names of a ``PRIMARY KEY (...)`` table constraint, else []."""
    if isinstance(item, exp.Constraint):
        for e in item.expressions:
            found = _primary_key(e)
            if found:
                return found
        return []
    if not isinstance(item, exp.PrimaryKey):
        return []
    names = []
    for e in item.expressions:
        ident = e if isinstance(e, exp.Identifier) else e.find(exp.Identifier)
        if ident is not None:
            names.append(ident.name)
    return names


def _insert(columns: list[Column], col: Column, position: exp.Expression | None) -> None:
    if position is None:
        columns.append(col)
        return
    where = (position.args.get("position") or "").lower()
    if where == "first":
        columns.insert(0, col)
        return
    anchor = position.this.name if position.this is not None else ""
    i = _find(columns, anchor)
    if i < 0:
        raise _DDLProblem(f"AFTER column {anchor!r} is not in the catalog")
    columns.insert(i + 1, col)


def _find(columns: list[Column], name: str) -> int:
    """Index of a column by name (MySQL column names are case-insensitive), else -1."""
    low = name.lower()
    for i, c in enumerate(columns):
        if c.name.lower() == low:
            return i
    return -1


def _same(a: str, b: str) -> bool:
    return a.lower() == b.lower()


def _schema(columns: Iterable[Column], pk: Iterable[str]) -> TableSchema:
    """A TableSchema whose column flags agree with its primary key."""
    keys = tuple(pk)
    low = {k.lower() for k in keys}
    cols = []
    for c in columns:
        is_pk = c.name.lower() in low
        if c.primary_key != is_pk or (is_pk and c.nullable):
            c = replace(c, primary_key=is_pk, nullable=c.nullable and not is_pk)
        cols.append(c)
    return TableSchema(columns=tuple(cols), primary_key=keys)


def _short(sql: str, limit: int = 120) -> str:
    one = " ".join(sql.split())
    return repr(one if len(one) <= limit else one[: limit - 3] + "...")


def _fold(key: TableKey) -> TableKey:
    return (key[0].lower(), key[1].lower())


# ---------------------------------------------------------------------------
# learning from typed messages
# ---------------------------------------------------------------------------


def _types_exact(origin: str | None) -> bool:
    """Does the format named ``origin`` carry exact MySQL column types?"""
    if origin is None:
        return True
    return _EXACT.get(origin) if origin in _EXACT else _lookup_exact(origin)


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
    return _schema(cols, pk)


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
