"""Hypothesis strategies: random MySQL table schemas and change streams.

Shared by every codec's property tests and the any-to-any tests. Values are
*typed* (see ``transforms/types.py``) and stay inside what MySQL can store:
float columns hold 32-bit floats, decimals fit their precision and scale,
TIMESTAMP stays in 1970..2038, TIME in -838:59:59..838:59:59, and zero dates
appear as ``InvalidTemporal``.
"""

from __future__ import annotations

import datetime as dt
import string
from decimal import Context, Decimal
from typing import Any

import orjson
from hypothesis import strategies as st

from cdc_smt.transforms.model import ChangeEvent, Column, Op, SourcePosition, TableSchema
from cdc_smt.transforms.types import InvalidTemporal, Kind, parse_type

#: Every MySQL type the property tests cover.
COLUMN_TYPES: tuple[str, ...] = (
    "tinyint",
    "tinyint unsigned",
    "tinyint(1)",
    "smallint",
    "mediumint unsigned",
    "int",
    "int unsigned",
    "bigint",
    "bigint unsigned",
    "decimal(10,4)",
    "decimal(65,30)",
    "decimal(65,0)",
    "float",
    "double",
    "char(10)",
    "varchar(255)",
    "text",
    "enum('small','medium','large')",
    "set('red','green','blue')",
    "bit(1)",
    "bit(64)",
    "date",
    "datetime",
    "datetime(6)",
    "timestamp(3)",
    "time(6)",
    "year",
    "json",
    "binary(16)",
    "varbinary(64)",
    "longblob",
)

_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)),  # JSON cannot carry lone surrogates
    max_size=40,
)
_emoji_text = st.one_of(
    _text,
    st.sampled_from(["", "héllo wörld", "数据库", "🎉🚀 emoji", "quote ' and \" \\ backslash", "line\nbreak\ttab"]),
)


def _int_range(t) -> tuple[int, int]:
    bits = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}[t.base]
    if t.unsigned:
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _decimal(precision: int, scale: int) -> st.SearchStrategy[Decimal]:
    int_digits = precision - scale
    bound = 10**precision - 1
    exact = Context(prec=100)  # the default 28 digits would round decimal(65,30) values
    edge = [
        Decimal(bound).scaleb(-scale, exact),
        Decimal(-bound).scaleb(-scale, exact),  # (-Decimal(bound) rounds to 28 digits: -1E+65)
        Decimal(0).scaleb(-scale, exact),
    ]
    return (
        st.one_of(
            st.sampled_from(edge),
            st.integers(-bound, bound).map(lambda n: Decimal(n).scaleb(-scale, exact)),
        )
        if int_digits >= 0
        else st.just(Decimal(0))
    )


def _micros(fsp: int) -> st.SearchStrategy[int]:
    step = 10 ** (6 - fsp)
    return st.integers(0, 10**fsp - 1).map(lambda n: n * step) if fsp else st.just(0)


def value_strategy(type_text: str) -> st.SearchStrategy[Any]:
    """Typed values a column of ``type_text`` can hold (never None)."""
    t = parse_type(type_text)
    k = t.kind
    if k is Kind.INT:
        lo, hi = _int_range(t)
        if t.is_boolean:
            return st.integers(0, 1)
        return st.one_of(st.sampled_from([lo, hi, 0]), st.integers(lo, hi))
    if k is Kind.DECIMAL:
        return _decimal(t.precision or 10, t.scale or 0)
    if k is Kind.FLOAT:
        if t.base == "float":
            return st.floats(width=32, allow_nan=False, allow_infinity=False)
        return st.floats(allow_nan=False, allow_infinity=False)
    if k is Kind.STRING:
        if t.base == "char":
            # CHAR strips trailing spaces on read: MySQL never returns them.
            return _emoji_text.map(lambda s: s[: t.length or 10].rstrip(" "))
        return _emoji_text
    if k is Kind.ENUM:
        return st.sampled_from(t.values)
    if k is Kind.SET:
        return st.lists(st.sampled_from(t.values), unique=True).map(
            lambda picked: ",".join(v for v in t.values if v in picked)
        )
    if k is Kind.BIT:
        return st.booleans() if t.length == 1 else st.integers(0, (1 << (t.length or 1)) - 1)
    if k is Kind.DATE:
        return st.one_of(
            st.dates(dt.date(1000, 1, 1), dt.date(9999, 12, 31)),
            st.just(InvalidTemporal("0000-00-00")),
        )
    if k is Kind.DATETIME:
        base = st.datetimes(dt.datetime(1000, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59))
        return st.one_of(
            st.builds(lambda d, us: d.replace(microsecond=us), base, _micros(t.fsp)),
            st.just(InvalidTemporal("0000-00-00 00:00:00")),
        )
    if k is Kind.TIMESTAMP:
        base = st.datetimes(dt.datetime(1970, 1, 2), dt.datetime(2038, 1, 18))
        return st.builds(lambda d, us: d.replace(microsecond=us), base, _micros(t.fsp))
    if k is Kind.TIME:
        limit = 838 * 3600 + 59 * 60 + 59
        return st.builds(
            lambda s, us: dt.timedelta(seconds=s, microseconds=us if s >= 0 else 0),
            st.integers(-limit, limit),
            _micros(t.fsp),
        )
    if k is Kind.YEAR:
        return st.integers(1901, 2155)
    if k is Kind.JSON:
        doc = st.dictionaries(
            st.text(string.ascii_letters, min_size=1, max_size=5),
            st.one_of(st.integers(-1000, 1000), _text, st.booleans(), st.none()),
            max_size=4,
        )
        return doc.map(lambda d: orjson.dumps(d).decode())
    if k is Kind.BYTES:
        if t.base == "binary":
            n = t.length or 1
            return st.binary(min_size=n, max_size=n)
        return st.binary(max_size=64)
    raise AssertionError(f"no strategy for {type_text}")


@st.composite
def table_schemas(draw, types: tuple[str, ...] = COLUMN_TYPES, max_columns: int = 8) -> TableSchema:
    """A table with an integer primary key ``id`` and random other columns."""
    pk_type = draw(st.sampled_from(["int", "bigint unsigned", "bigint"]))
    picked = draw(st.lists(st.sampled_from(types), min_size=1, max_size=max_columns))
    cols = [Column("id", pk_type, nullable=False, primary_key=True)]
    for i, t in enumerate(picked):
        cols.append(Column(f"c{i}_{parse_type(t).base}", t, nullable=draw(st.booleans())))
    return TableSchema(columns=tuple(cols), primary_key=("id",))


def row_strategy(schema: TableSchema, key: int) -> st.SearchStrategy[dict[str, Any]]:
    fields = {}
    for c in schema.columns:
        if c.primary_key:
            fields[c.name] = st.just(key)
        elif c.nullable:
            fields[c.name] = st.one_of(st.none(), value_strategy(c.type))
        else:
            fields[c.name] = value_strategy(c.type)
    return st.fixed_dictionaries(fields).map(lambda d: {c.name: d[c.name] for c in schema.columns})


@st.composite
def change_streams(
    draw,
    schema: TableSchema | None = None,
    database: str = "shop",
    table: str = "t",
    max_events: int = 12,
    timezone: str = "UTC",
    pk_changes: bool = True,
) -> list[ChangeEvent]:
    """Inserts, updates (some changing the primary key) and deletes on one table."""
    if schema is None:
        schema = draw(table_schemas())
    live: dict[int, dict[str, Any]] = {}
    events: list[ChangeEvent] = []
    next_key = 1
    ts = draw(st.integers(1_500_000_000_000, 1_900_000_000_000))
    for _ in range(draw(st.integers(1, max_events))):
        choice = draw(st.sampled_from(["insert", "update", "delete"]) if live else st.just("insert"))
        ts += draw(st.integers(0, 5000))
        src = SourcePosition(db_type="mysql", database=database, table=table)
        if choice == "insert":
            row = draw(row_strategy(schema, next_key))
            next_key += 1
            live[row["id"]] = row
            events.append(_event(Op.INSERT, src, None, row, schema, ts, timezone))
            continue
        key = draw(st.sampled_from(sorted(live)))
        before = live[key]
        if choice == "delete":
            del live[key]
            events.append(_event(Op.DELETE, src, before, None, schema, ts, timezone))
            continue
        after = dict(draw(row_strategy(schema, key)))
        if pk_changes and draw(st.integers(0, 4)) == 0:
            after["id"] = next_key
            next_key += 1
        del live[key]
        live[after["id"]] = after
        changed = tuple(c for c in schema.names if before[c] != after[c] or type(before[c]) is not type(after[c]))
        events.append(_event(Op.UPDATE, src, dict(before), after, schema, ts, timezone, changed))
    return events


def _event(op, src, before, after, schema, ts, timezone, changed=None) -> ChangeEvent:
    return ChangeEvent(
        op=op,
        source=src,
        before=before,
        after=after,
        changed=changed,
        schema=schema,
        pk=schema.primary_key,
        ts_ms=ts,
        timezone=timezone,
    )


def essence(e: ChangeEvent) -> tuple:
    """What any faithful codec must preserve of a row event (typed)."""
    e.typed()
    return (e.op, e.source.database, e.source.table, e.before, e.after, tuple(e.pk))
