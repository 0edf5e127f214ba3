"""MySQL text: SQL literals (TDSQL binlog JSON), plain MySQL value text (CKafka), statement kinds.

Two raw value forms live here because several formats share them:

* :class:`MySQLTextForm` (``mysql-text``): each value is MySQL's own text
  rendering, as ``SELECT`` prints it (``'1004'``, ``'2016-06-11 02:05:02'``).
* :class:`SqlLiteralForm` (``sql-literal``): each value is one SQL literal as
  ``mysqlbinlog -v`` prints it (``1``, ``'it''s'``, ``NULL``, ``X'0A'``,
  ``b'101'``), typed by the column's MySQL type on demand.

The literal scanner follows the MySQL manual, "Literal Values": single- and
double-quoted strings with backslash escapes and doubled quotes, optional
``_charset`` introducers and ``N`` prefixes, decimal and exponent numbers,
``0x``/``X''`` hexadecimal and ``0b``/``b''`` bit-value literals, ``NULL``,
``TRUE``/``FALSE``.

:func:`classify_ddl` names a DDL statement with Canal's DDL types, the
vocabulary every format that labels DDL shares (Canal, DataWorks, CloudCanal,
TDSQL, the schema catalog).
"""

from __future__ import annotations

import datetime as dt
import enum
import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from cdc_smt.transforms.model import Column
from cdc_smt.transforms.types import (
    InvalidTemporal,
    Kind,
    MySQLType,
    format_date,
    format_datetime,
    format_decimal,
    format_float,
    format_time,
    from_text,
    rebase_timestamp,
    set_labels_from_bits,
    to_text,
    wall_clock,
)


class LiteralKind(str, enum.Enum):
    NULL = "null"
    INT = "int"  # exact integer digits
    DECIMAL = "decimal"  # exact digits with a point
    FLOAT = "float"  # with an exponent: approximate
    STRING = "string"
    HEX = "hex"  # X'..' / 0x..: bytes
    BITS = "bits"  # b'..' / 0b..: unsigned integer
    BOOL = "bool"


@dataclass(frozen=True, slots=True)
class Literal:
    """One scanned literal. ``value``: digits text for numbers, ``str`` for
    strings, ``bytes`` for hex, ``int`` for bits and booleans, ``None`` for NULL."""

    kind: LiteralKind
    value: Any


class LiteralError(ValueError):
    """Text that is not a MySQL literal."""


# MySQL backslash escapes (manual, "String Literals", table 9.1). ``\%`` and
# ``\_`` keep their backslash; any other escaped character stands for itself.
_UNESCAPE = {
    "0": "\0",
    "'": "'",
    '"': '"',
    "b": "\b",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "Z": "\x1a",
    "\\": "\\",
    "%": "\\%",
    "_": "\\_",
}
_HEXDIGITS = frozenset("0123456789abcdefABCDEF")
_NUMBER_START = frozenset("0123456789+-.")


def scan_literals(text: str) -> Iterator[Literal]:
    """The comma-separated literals of ``text`` (a ``VALUES`` list body), in order."""
    pos, n = 0, len(text)
    expect_value = True
    while True:
        pos = _skip_space(text, pos)
        if pos >= n:
            if expect_value and pos > 0:
                raise LiteralError(f"missing literal at end of {text!r}")
            return
        if not expect_value:
            if text[pos] != ",":
                raise LiteralError(f"expected ',' at offset {pos} of {text!r}")
            pos += 1
            expect_value = True
            continue
        lit, pos = _scan_one(text, pos)
        expect_value = False
        yield lit


def parse_literal(text: str) -> Literal:
    """Exactly one literal (``"'a\\'b'"`` -> STRING ``a'b``)."""
    if not isinstance(text, str):
        raise LiteralError(f"expected a SQL literal string, got {type(text).__name__}")
    lit, pos = _scan_one(text, _skip_space(text, 0))
    if _skip_space(text, pos) != len(text):
        raise LiteralError(f"unexpected text after literal in {text!r}")
    return lit


def _skip_space(text: str, pos: int) -> int:
    n = len(text)
    while pos < n and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _scan_one(text: str, pos: int) -> tuple[Literal, int]:
    n = len(text)
    if pos >= n:
        raise LiteralError("empty literal")
    ch = text[pos]
    if ch in "'\"":
        s, pos = _scan_string(text, pos)
        return Literal(LiteralKind.STRING, s), pos
    low2 = text[pos : pos + 2].lower()
    if low2 in ("x'", "b'"):
        body, end = _scan_quoted_body(text, pos + 1)
        return (_hex(body, text) if low2 == "x'" else _bits(body, text)), end
    if low2 in ("0x", "0b") and pos + 2 < n and text[pos + 2] not in " ,":
        end = pos + 2
        while end < n and (text[end].isalnum()):
            end += 1
        body = text[pos + 2 : end]
        return (_hex(body, text, pad=True) if low2 == "0x" else _bits(body, text)), end
    if ch in "nN" and text[pos + 1 : pos + 2] == "'":
        s, pos = _scan_string(text, pos + 1)
        return Literal(LiteralKind.STRING, s), pos
    if ch == "_":  # charset introducer: _utf8mb4'..', _binary 0x..
        end = pos + 1
        while end < n and (text[end].isalnum() or text[end] == "_"):
            end += 1
        lit, end = _scan_one(text, _skip_space(text, end))
        if lit.kind is LiteralKind.STRING and text[pos + 1 : pos + 7].lower() == "binary":
            return Literal(LiteralKind.HEX, lit.value.encode("utf-8")), end
        return lit, end
    if ch in _NUMBER_START:
        return _scan_number(text, pos)
    end = pos
    while end < n and text[end].isalpha():
        end += 1
    word = text[pos:end].upper()
    if word == "NULL":
        return Literal(LiteralKind.NULL, None), end
    if word in ("TRUE", "FALSE"):
        return Literal(LiteralKind.BOOL, 1 if word == "TRUE" else 0), end
    raise LiteralError(f"not a SQL literal: {text[pos : pos + 20]!r}")


def _scan_quoted_body(text: str, pos: int) -> tuple[str, int]:
    """Body of ``'...'`` starting at the quote, without escapes (hex/bit bodies)."""
    end = text.find("'", pos + 1)
    if end < 0:
        raise LiteralError(f"unterminated literal in {text!r}")
    return text[pos + 1 : end], end + 1


def _scan_string(text: str, pos: int) -> tuple[str, int]:
    quote = text[pos]
    out: list[str] = []
    i, n = pos + 1, len(text)
    start = i
    while i < n:
        ch = text[i]
        if ch == "\\":
            out.append(text[start:i])
            if i + 1 >= n:
                break
            nxt = text[i + 1]
            out.append(_UNESCAPE.get(nxt, nxt))
            i += 2
            start = i
            continue
        if ch == quote:
            out.append(text[start:i])
            if i + 1 < n and text[i + 1] == quote:  # doubled quote
                out.append(quote)
                i += 2
                start = i
                continue
            return "".join(out), i + 1
        i += 1
    raise LiteralError(f"unterminated string literal in {text!r}")


def _scan_number(text: str, pos: int) -> tuple[Literal, int]:
    n = len(text)
    end = pos
    if text[end] in "+-":
        end += 1
    digits_start = end
    while end < n and text[end].isdigit():
        end += 1
    kind = LiteralKind.INT
    if end < n and text[end] == ".":
        kind = LiteralKind.DECIMAL
        end += 1
        while end < n and text[end].isdigit():
            end += 1
    if end == digits_start or text[digits_start:end] == ".":
        raise LiteralError(f"bad number in {text!r}")
    if end < n and text[end] in "eE":
        exp_end = end + 1
        if exp_end < n and text[exp_end] in "+-":
            exp_end += 1
        if exp_end < n and text[exp_end].isdigit():
            while exp_end < n and text[exp_end].isdigit():
                exp_end += 1
            kind, end = LiteralKind.FLOAT, exp_end
        else:
            raise LiteralError(f"bad exponent in {text!r}")
    if end < n and (text[end].isalnum() or text[end] in "_'\""):
        raise LiteralError(f"bad number in {text!r}")
    return Literal(kind, text[pos:end]), end


def _hex(body: str, text: str, pad: bool = False) -> Literal:
    if any(c not in _HEXDIGITS for c in body):
        raise LiteralError(f"bad hexadecimal literal {text!r}")
    if len(body) % 2:
        if not pad:  # X'..' must have an even digit count; 0x.. is left-padded
            raise LiteralError(f"odd number of hex digits in {text!r}")
        body = "0" + body
    return Literal(LiteralKind.HEX, bytes.fromhex(body))


def _bits(body: str, text: str) -> Literal:
    if any(c not in "01" for c in body):
        raise LiteralError(f"bad bit-value literal {text!r}")
    return Literal(LiteralKind.BITS, int(body, 2) if body else 0)


# ---------------------------------------------------------------------------
# Literal -> typed value
# ---------------------------------------------------------------------------


def literal_value(lit: Literal, mtype: MySQLType | None, timezone: str = "UTC") -> Any:
    """The typed value of ``lit`` in a column of ``mtype``.

    Without a type (unknown table), the literal's own shape decides: integers
    -> ``int``, exact decimals -> ``Decimal``, exponents -> ``float``, strings
    -> ``str``, hex -> ``bytes``. Numeric TIMESTAMP values are epoch seconds
    (how binlog stores them), shown in ``timezone``; numeric ENUM/SET values
    are the index/bitmask the binlog stores.
    """
    kind = lit.kind
    v = lit.value
    if kind is LiteralKind.NULL:
        return None
    if mtype is None:
        return _untyped(lit)
    k = mtype.kind
    if kind is LiteralKind.STRING:
        if k is Kind.BYTES or k is Kind.GEOMETRY:
            return v.encode("utf-8")
        return from_text(mtype, v)
    if kind is LiteralKind.HEX:
        if k is Kind.BYTES or k is Kind.GEOMETRY:
            return v
        if k in (Kind.STRING, Kind.JSON, Kind.ENUM, Kind.SET) or k in _TEMPORAL:
            return from_text(mtype, v.decode("utf-8"))
        return _from_int(mtype, int.from_bytes(v, "big"), timezone)
    if kind is LiteralKind.BITS or kind is LiteralKind.BOOL:
        return _from_int(mtype, v, timezone)
    # numbers
    if k is Kind.DECIMAL:
        return Decimal(v)
    if k is Kind.FLOAT:
        return float(v)
    if kind is LiteralKind.INT:
        return _from_int(mtype, int(v), timezone)
    if k is Kind.TIMESTAMP:
        return _epoch(Decimal(v), timezone)
    if k in (Kind.STRING, Kind.JSON):
        return v
    d = Decimal(v)
    if d != d.to_integral_value():
        raise ValueError(f"{v} is not a whole number for a {mtype.text()} column")
    return _from_int(mtype, int(d), timezone)


_TEMPORAL = (Kind.DATE, Kind.DATETIME, Kind.TIME)


def _untyped(lit: Literal) -> Any:
    kind = lit.kind
    if kind is LiteralKind.INT:
        return int(lit.value)
    if kind is LiteralKind.DECIMAL:
        return Decimal(lit.value)
    if kind is LiteralKind.FLOAT:
        return float(lit.value)
    return lit.value


def _from_int(mtype: MySQLType, n: int, timezone: str) -> Any:
    k = mtype.kind
    if k is Kind.INT or k is Kind.YEAR:
        return n
    if k is Kind.BIT:
        return bool(n) if mtype.length == 1 else n
    if k is Kind.DECIMAL:
        return Decimal(n)
    if k is Kind.FLOAT:
        return float(n)
    if k is Kind.ENUM:
        if n == 0:
            return ""  # MySQL's error value for an invalid enum
        return mtype.values[n - 1]
    if k is Kind.SET:
        return set_labels_from_bits(mtype, n)
    if k is Kind.TIMESTAMP:
        return _epoch(Decimal(n), timezone)
    if k is Kind.STRING or k is Kind.JSON:
        return str(n)
    raise ValueError(f"a number is not a valid {mtype.text()} value")


def _epoch(seconds: Decimal, timezone: str) -> dt.datetime:
    whole = int(seconds)
    micros = int((seconds - whole) * 1_000_000)
    return wall_clock(whole * 1_000_000 + micros, timezone)


# ---------------------------------------------------------------------------
# typed value -> literal / text
# ---------------------------------------------------------------------------


def quote_string(s: str) -> str:
    """A single-quoted MySQL string literal, escaped as ``mysql_real_escape_string`` does."""
    return "'" + s.translate(_ESCAPE) + "'"


_ESCAPE = str.maketrans({"\\": "\\\\", "'": "\\'", '"': '\\"', "\0": "\\0", "\n": "\\n", "\r": "\\r", "\x1a": "\\Z"})


def to_literal(v: Any, mtype: MySQLType | None) -> str:
    """The SQL literal of a typed value: numbers bare, bytes as ``X'..'``,
    BIT as ``b'..'``, everything else as a quoted string of its MySQL text."""
    if v is None:
        return "NULL"
    if mtype is None:
        return _untyped_literal(v)
    k = mtype.kind
    if isinstance(v, InvalidTemporal):
        return quote_string(str(v))
    if k is Kind.INT or k is Kind.YEAR or k is Kind.DECIMAL or k is Kind.FLOAT:
        return to_text(mtype, v)
    if k is Kind.BIT:
        return "b'" + format(int(v), "b") + "'"
    if k is Kind.BYTES or k is Kind.GEOMETRY:
        return "X'" + bytes(v).hex().upper() + "'"
    return quote_string(to_text(mtype, v))


def _untyped_literal(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, Decimal):
        return format(v, "f")
    if isinstance(v, float):
        return format_float(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "X'" + bytes(v).hex().upper() + "'"
    return quote_string(text_of(v, None))


def text_of(v: Any, mtype: MySQLType | None) -> str:
    """MySQL text of a typed value; without a type, from the Python value's own type."""
    if mtype is not None:
        return to_text(mtype, v)
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, Decimal):
        return format_decimal(v)
    if isinstance(v, float):
        return format_float(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).decode("latin-1")
    if isinstance(v, dt.datetime):
        return format_datetime(v)
    if isinstance(v, dt.date):
        return format_date(v)
    if isinstance(v, dt.timedelta):
        return format_time(v)
    return str(v)


def has_timestamp(schema: Any) -> bool:
    """Does a TableSchema hold TIMESTAMP columns (whose text depends on the zone)?"""
    return schema is not None and any(c.mysql.kind is Kind.TIMESTAMP for c in schema.columns)


# ---------------------------------------------------------------------------
# raw value forms
# ---------------------------------------------------------------------------


class MySQLTextForm:
    """Values as MySQL prints them (strings); typed by the column's MySQL type."""

    name = "mysql-text"

    def to_python(self, column: Column, raw: Any) -> Any:
        if not isinstance(raw, str):
            raise ValueError(f"column {column.name!r}: expected MySQL text, got {type(raw).__name__}")
        return from_text(column.mysql, raw)


class SqlLiteralForm:
    """Values as SQL literals; typed by the column's type, epoch TIMESTAMPs in ``timezone``."""

    name = "sql-literal"

    def __init__(self, timezone: str = "UTC") -> None:
        self.timezone = timezone

    def to_python(self, column: Column, raw: Any) -> Any:
        if raw is None:
            return None
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            raw = repr(raw) if isinstance(raw, float) else str(raw)
        try:
            return literal_value(parse_literal(raw), column.mysql, self.timezone)
        except (ValueError, InvalidOperation, IndexError) as exc:
            raise ValueError(f"column {column.name!r}: {exc}") from None


MYSQL_TEXT = MySQLTextForm()


__all__ = [
    "Literal",
    "LiteralError",
    "LiteralKind",
    "MYSQL_TEXT",
    "event_ms",
    "passthrough",
    "render_image",
    "text_images",
    "MySQLTextForm",
    "SqlLiteralForm",
    "classify_ddl",
    "statement_head",
    "has_timestamp",
    "literal_value",
    "parse_literal",
    "quote_string",
    "scan_literals",
    "text_of",
    "to_literal",
]


# ---------------------------------------------------------------------------
# encoding helpers shared by the text formats
# ---------------------------------------------------------------------------


def passthrough(event: Any, form_name: str, target_tz: str) -> bool:
    """Can raw values of ``event`` be written unchanged by a format whose raw form
    is ``form_name`` and whose zone is ``target_tz``?"""
    form = event.values
    return (
        form is not None and form.name == form_name and (event.timezone == target_tz or not has_timestamp(event.schema))
    )


def render_image(event: Any, image: dict[str, Any], target_tz: str, render: Any) -> dict[str, Any]:
    """``image`` (typed values) rendered by ``render(value, mysql_type_or_None)``,
    TIMESTAMP values re-shown from the event's zone in ``target_tz``."""
    schema = event.schema
    by_name = schema.by_name if schema is not None else {}
    src_tz = event.timezone
    out: dict[str, Any] = {}
    for name, v in image.items():
        if v is None:
            out[name] = None
            continue
        col = by_name.get(name)
        mtype = col.mysql if col is not None else None
        if mtype is not None and mtype.kind is Kind.TIMESTAMP and src_tz != target_tz:
            v = rebase_timestamp(v, src_tz, target_tz)
        out[name] = render(v, mtype)
    return out


def text_images(event: Any, form_name: str, target_tz: str, render: Any = text_of) -> tuple[dict | None, dict | None]:
    """``event.before`` and ``event.after`` in a text format's values: unchanged when
    :func:`passthrough` allows it, else typed and rendered by :func:`render_image`."""
    if passthrough(event, form_name, target_tz):
        return event.before, event.after
    event.typed()
    before = None if event.before is None else render_image(event, event.before, target_tz, render)
    after = None if event.after is None else render_image(event, event.after, target_tz, render)
    return before, after


def event_ms(event: Any) -> int | None:
    """The best event time in epoch ms: the change time, else when it was sent."""
    if event.ts_ms is not None:
        return event.ts_ms
    if event.processing_ts_ms is not None:
        return event.processing_ts_ms
    record = event.record
    return record.timestamp if record is not None else None


# ---------------------------------------------------------------------------
# DDL statement -> Canal's DDL type
# ---------------------------------------------------------------------------

_DDL_KINDS = (
    (re.compile(r"create\s+(?:temporary\s+)?table\b", re.I), "CREATE"),
    (re.compile(r"alter\s+(?:online\s+|ignore\s+)*table\b", re.I), "ALTER"),
    (re.compile(r"drop\s+(?:temporary\s+)?tables?\b", re.I), "ERASE"),
    (re.compile(r"rename\s+tables?\b", re.I), "RENAME"),
    (re.compile(r"truncate\b", re.I), "TRUNCATE"),
    (re.compile(r"create\s+(?:unique\s+|fulltext\s+|spatial\s+|online\s+)*index\b", re.I), "CINDEX"),
    (re.compile(r"drop\s+index\b", re.I), "DINDEX"),
)
#: MySQL runs the body of a versioned comment (``/*!40101 ... */``): it is SQL.
_CONDITIONAL_COMMENT = re.compile(r"/\*!\d*(.*?)\*/", re.S)
_COMMENT = re.compile(r"/\*.*?\*/|--[^\n]*(?:\n|$)|#[^\n]*(?:\n|$)", re.S)
#: Enough of a statement to see its kind (comments stripped from the head only).
_HEAD = 512


def statement_head(sql: str) -> str:
    """The start of a statement as MySQL reads it: comments skipped, versioned comments
    read as SQL (mysqldump's ``/*!40000 ALTER TABLE ... DISABLE KEYS */``)."""
    head = _CONDITIONAL_COMMENT.sub(r" \1 ", sql[:_HEAD])
    return _COMMENT.sub(" ", head).lstrip()


def classify_ddl(sql: str) -> str:
    """Canal's DDL type for a statement: CREATE, ALTER, ERASE, RENAME, TRUNCATE,
    CINDEX, DINDEX, else QUERY (database DDL, views, grants, ...)."""
    text = statement_head(sql)
    for pattern, kind in _DDL_KINDS:
        if pattern.match(text):
            return kind
    return "QUERY"
