"""The DDL interpreter of the schema catalog: MySQL statements applied to table schemas.

Statements are parsed with sqlglot (MySQL dialect), retried once with
same-length repairs of syntax it lacks; each understood statement becomes
:meth:`SchemaCatalog.put` calls: CREATE TABLE (also ``LIKE``), ALTER TABLE
ADD/DROP/MODIFY/CHANGE/RENAME COLUMN, ADD/DROP PRIMARY KEY, ALTER COLUMN
SET/DROP DEFAULT, RENAME TO, RENAME TABLE, DROP TABLE, DROP DATABASE (TRUNCATE
changes no schema). A statement that cannot be applied leaves the last known
schema in place and becomes a warning: stream input never raises.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from cdc_smt.transforms.model import Column, TableSchema
from cdc_smt.transforms.sqltext import classify_ddl
from cdc_smt.transforms.types import TypeParseError, parse_type

if TYPE_CHECKING:  # pragma: no cover
    from cdc_smt.transforms.catalog import SchemaCatalog


class _QuietFallback(logging.Filter):
    """sqlglot logs a warning whenever it falls back to a generic Command; the
    interpreter reports unparsed DDL itself, so that line is noise."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Falling back to parsing as a 'Command'" not in record.getMessage()


logging.getLogger("sqlglot").addFilter(_QuietFallback())


class _DDLProblem(Exception):
    """A DDL statement the catalog cannot apply; becomes a warning."""


def apply_ddl(catalog: SchemaCatalog, database: str | None, sql: str, *, ts_ms: int | None = None) -> list[str]:
    """Apply one or more ``;``-separated statements run in ``database``; return warnings."""
    warnings: list[str] = []
    for stmt in split_statements(sql):
        try:
            warnings.extend(_apply_statement(catalog, database, stmt, ts_ms))
        except _DDLProblem as exc:
            warnings.append(f"{exc} in DDL {_short(stmt)}; keeping the last known schema")
    return warnings


def _apply_statement(catalog: SchemaCatalog, database: str | None, sql: str, ts_ms: int | None) -> list[str]:
    pairs = _rename_pairs(sql)
    if pairs is not None:
        return _rename(catalog, database, pairs, sql, ts_ms)
    tree = _parse(sql)
    if tree is None:
        if classify_ddl(sql) in ("CREATE", "ALTER"):
            raise _DDLProblem("could not parse")
        return []
    stamp = {"ddl": sql, "ts_ms": ts_ms}
    if isinstance(tree, exp.Create) and (tree.args.get("kind") or "").upper() == "TABLE":
        return _create(catalog, database, tree, sql, stamp)
    if isinstance(tree, exp.Alter) and (tree.args.get("kind") or "").upper() == "TABLE":
        return _alter(catalog, database, tree, sql, stamp)
    if isinstance(tree, exp.Drop):
        return _drop(catalog, database, tree, stamp)
    return []  # TRUNCATE, indexes, databases, views, grants: no column changes


def _create(catalog: SchemaCatalog, database: str | None, tree: exp.Create, sql: str, stamp: dict) -> list[str]:
    target = tree.this
    if isinstance(target, exp.Schema):
        db, name = _table_name(target.this, database)
        if tree.args.get("exists") and catalog.get(db, name) is not None:
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
        catalog.put(db, name, keyed_schema(columns, pk), origin="ddl", **stamp)
        return []
    db, name = _table_name(target, database)
    like = next(
        (p for p in (tree.args.get("properties") or exp.Properties()).expressions if isinstance(p, exp.LikeProperty)),
        None,
    )
    if like is not None:
        src = catalog.get(*_table_name(like.this, database))
        if src is None:
            return [f"CREATE TABLE {db}.{name} LIKE {like.this.sql('mysql')}: source table not in the catalog"]
        catalog.put(db, name, src, origin="ddl", **stamp)
        return []
    return [f"CREATE TABLE {db}.{name}: columns of CREATE ... SELECT are not known; give them in a schema file"]


def _alter(catalog: SchemaCatalog, database: str | None, tree: exp.Alter, sql: str, stamp: dict) -> list[str]:
    db, name = _table_name(tree.this, database)
    current = catalog.get(db, name)
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
    schema = keyed_schema(columns, [columns[_find(columns, p)].name for p in pk])
    if new_name is not None and new_name != (db, name):
        catalog.put(db, name, None, origin="ddl", **stamp)
        catalog.put(new_name[0], new_name[1], schema, origin="ddl", **stamp)
    else:
        catalog.put(db, name, schema, origin="ddl", **stamp)
    return warnings


def _drop(catalog: SchemaCatalog, database: str | None, tree: exp.Drop, stamp: dict) -> list[str]:
    kind = (tree.args.get("kind") or "").upper()
    if kind == "TABLE":
        for t in tree.args.get("tables") or ():
            db, name = _table_name(t, database)
            if catalog.get(db, name) is not None:
                catalog.put(db, name, None, origin="ddl", **stamp)
    elif kind in ("DATABASE", "SCHEMA"):
        for t in tree.args.get("tables") or ():
            dropped = t.args.get("db").name if t.args.get("db") is not None else t.name
            for db, name in catalog.tables():
                if _same(db, dropped):
                    catalog.put(db, name, None, origin="ddl", **stamp)
    return []


def _rename(
    catalog: SchemaCatalog,
    database: str | None,
    pairs: list[tuple[tuple[str | None, str], tuple[str | None, str]]],
    sql: str,
    ts_ms: int | None,
) -> list[str]:
    warnings = []
    for (odb, old), (ndb, new) in pairs:
        src_db, dst_db = odb or database, ndb or database
        schema = catalog.get(src_db, old)
        if schema is None:
            warnings.append(f"RENAME TABLE {src_db}.{old}: table not in the catalog; {dst_db}.{new} stays unknown")
            continue
        catalog.put(src_db, old, None, origin="ddl", ddl=sql, ts_ms=ts_ms)
        catalog.put(dst_db, new, schema, origin="ddl", ddl=sql, ts_ms=ts_ms)
    return warnings


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
        tree = sqlglot.parse_one(sql, read="mysql")
    except (ParseError, TokenError, ValueError):
        return None
    # sqlglot >= 30 types parse_one as its Expression's base class; a statement is an Expression.
    return tree if isinstance(tree, exp.Expression) else None


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


def keyed_schema(columns: Iterable[Column], pk: Iterable[str]) -> TableSchema:
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


__all__ = ["apply_ddl", "keyed_schema", "split_statements"]
