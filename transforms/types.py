"""MySQL type model: parse type texts, map them to JDBC codes and Python values.

Typed values (the canonical Python value of each MySQL type):

============================  ==========================================
MySQL type                    Python value
============================  ==========================================
tinyint..bigint (+unsigned)   ``int`` (``tinyint(1)``/``bool`` stay ``int``)
decimal/numeric/fixed         ``decimal.Decimal``
float/double/real             ``float``
char/varchar/*text            ``str``
enum                          ``str`` (the label)
set                           ``str`` (labels joined by ``,``)
binary/varbinary/*blob        ``bytes``
geometry types                ``bytes`` (MySQL internal: SRID + WKB)
bit(1)                        ``bool``
bit(n>1)                      ``int`` (the unsigned value)
date                          ``datetime.date``
datetime(p)                   ``datetime.datetime`` (naive, source zone)
timestamp(p)                  ``datetime.datetime`` (naive, source zone)
time(p)                       ``datetime.timedelta`` (MySQL TIME is a duration,
                              -838:59:59..838:59:59)
year                          ``int``
json                          ``str`` (the JSON text)
============================  ==========================================

Zero and invalid temporal values that MySQL allows (``0000-00-00``,
``2023-00-10 00:00:00``) have no Python date; they are kept as
:class:`InvalidTemporal` (a ``str`` subclass) so text formats carry them
unchanged and typed formats can apply their documented rule.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import enum
import math
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

import orjson


class Kind(str, enum.Enum):
    """The value family of a MySQL type: decides the Python value."""

    INT = "int"
    DECIMAL = "decimal"
    FLOAT = "float"
    STRING = "string"
    ENUM = "enum"
    SET = "set"
    BYTES = "bytes"
    GEOMETRY = "geometry"
    BIT = "bit"
    DATE = "date"
    DATETIME = "datetime"
    TIMESTAMP = "timestamp"
    TIME = "time"
    YEAR = "year"
    JSON = "json"


class InvalidTemporal(str):
    """A MySQL zero/invalid date or datetime, kept as its original text."""

    __slots__ = ()


class ImpossibleTemporal(ValueError):
    """An invalid temporal that is no MySQL zero date (``2024-13-45 99:00:00``): a
    format that cannot carry its text cannot write it (the caller names the column)."""

    def __init__(self, text: str, mtype: MySQLType) -> None:
        super().__init__(f"{text} is not a valid {mtype.base.upper()}")


_ZERO_DATE_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2}):(\d{2})(?:\.\d{1,6})?)?")


def is_zero_date(text: str) -> bool:
    """``text`` is a value MySQL stores that has no calendar day: the zero date or a
    date with zero parts (``0000-00-00``, ``2023-00-10 00:00:00``), every other part
    in range. Formats apply their documented zero-date rule to these only."""
    m = _ZERO_DATE_RE.fullmatch(text)
    if m is None:
        return False
    y, mo, d, h, mi, s = (int(g or 0) for g in m.groups())
    return 0 in (y, mo, d) and mo <= 12 and d <= 31 and h <= 23 and mi <= 59 and s <= 59


def check_zero_date(v: str, mtype: MySQLType) -> None:
    """Raise :class:`ImpossibleTemporal` unless ``v`` is a zero date (see :func:`is_zero_date`)."""
    if not is_zero_date(v):
        raise ImpossibleTemporal(v, mtype)


# JDBC java.sql.Types codes.
class Jdbc(enum.IntEnum):
    BIT = -7
    TINYINT = -6
    BIGINT = -5
    LONGVARBINARY = -4
    VARBINARY = -3
    BINARY = -2
    LONGVARCHAR = -1
    CHAR = 1
    NUMERIC = 2
    DECIMAL = 3
    INTEGER = 4
    SMALLINT = 5
    FLOAT = 6
    REAL = 7
    DOUBLE = 8
    VARCHAR = 12
    BOOLEAN = 16
    DATE = 91
    TIME = 92
    TIMESTAMP = 93
    OTHER = 1111
    BLOB = 2004
    CLOB = 2005


_INT_BASES = {
    "tinyint": (1, -6, 5),  # bytes, jdbc signed, jdbc when unsigned value exceeds signed max
    "smallint": (2, 5, 4),
    "mediumint": (3, 4, 4),
    "int": (4, 4, -5),
    "bigint": (8, -5, 3),
}

_ALIASES = {
    "integer": "int",
    "int1": "tinyint",
    "int2": "smallint",
    "int3": "mediumint",
    "int4": "int",
    "int8": "bigint",
    "middleint": "mediumint",
    "bool": "tinyint",
    "boolean": "tinyint",
    "dec": "decimal",
    "numeric": "decimal",
    "fixed": "decimal",
    "real": "double",
    "double precision": "double",
    "float4": "float",
    "float8": "double",
    "character": "char",
    "character varying": "varchar",
    "nchar": "char",
    "national char": "char",
    "nvarchar": "varchar",
    "national varchar": "varchar",
    "long varchar": "mediumtext",
    "long": "mediumtext",
    "long varbinary": "mediumblob",
    "serial": "bigint",
}

_STRING_BASES = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext"}
_BYTES_BASES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}
_GEOMETRY_BASES = {
    "geometry",
    "point",
    "linestring",
    "polygon",
    "multipoint",
    "multilinestring",
    "multipolygon",
    "geometrycollection",
    "geomcollection",
}
_SIMPLE_KINDS = {
    "decimal": Kind.DECIMAL,
    "float": Kind.FLOAT,
    "double": Kind.FLOAT,
    "enum": Kind.ENUM,
    "set": Kind.SET,
    "bit": Kind.BIT,
    "date": Kind.DATE,
    "datetime": Kind.DATETIME,
    "timestamp": Kind.TIMESTAMP,
    "time": Kind.TIME,
    "year": Kind.YEAR,
    "json": Kind.JSON,
}

# JDBC codes by base type, after the TiCDC Canal-JSON table (003_*.txt).
_JDBC_BY_BASE = {
    "decimal": 3,
    "float": 7,
    "double": 8,
    "char": 1,
    "varchar": 12,
    "binary": 2004,
    "varbinary": 2004,
    "tinytext": 2005,
    "text": 2005,
    "mediumtext": 2005,
    "longtext": 2005,
    "tinyblob": 2004,
    "blob": 2004,
    "mediumblob": 2004,
    "longblob": 2004,
    "date": 91,
    "datetime": 93,
    "timestamp": 93,
    "time": 92,
    "year": 12,
    "enum": 4,
    "set": -7,
    "bit": -7,
    "json": 12,
}


@dataclass(frozen=True, slots=True)
class MySQLType:
    """A parsed MySQL column type.

    ``length``: display width / char length / bit count; ``precision`` and
    ``scale`` for decimals (and float(M,D)); ``fsp`` fractional seconds of
    temporal types; ``values`` the labels of enum/set.
    """

    base: str
    kind: Kind
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    fsp: int = 0
    unsigned: bool = False
    zerofill: bool = False
    values: tuple[str, ...] = ()
    charset: str | None = None

    @property
    def is_single_float(self) -> bool:
        """Does the column store 32-bit floats? MySQL: ``FLOAT``, ``FLOAT(M,D)`` and
        ``FLOAT(p)`` with p 0-24 are single precision; ``FLOAT(p)`` with p 25-53 is a
        DOUBLE; DOUBLE and REAL never are. The one rule every format types values by
        (Debezium's Connect schema deviates on purpose: see ``_connect.repr_for_type``)."""
        return self.base == "float" and (self.precision is None or self.scale is not None or self.precision <= 24)

    @property
    def is_boolean(self) -> bool:
        """``tinyint(1)`` / ``bool``: MySQL's boolean convention."""
        return self.base == "tinyint" and self.length == 1

    def text(self, with_params: bool = True) -> str:
        """The type as MySQL prints it (``decimal(10,4) unsigned``)."""
        base = self.base
        if not with_params:
            return base + (" unsigned" if self.unsigned else "")
        params = ""
        if self.kind in (Kind.ENUM, Kind.SET):
            params = "(" + ",".join(quote_label(v) for v in self.values) + ")"
        elif self.kind is Kind.DECIMAL and self.precision is not None:
            params = f"({self.precision},{self.scale or 0})"
        elif self.kind is Kind.FLOAT and self.precision is not None:
            params = f"({self.precision},{self.scale})" if self.scale is not None else f"({self.precision})"
        elif self.kind in (Kind.DATETIME, Kind.TIMESTAMP, Kind.TIME) and self.fsp:
            params = f"({self.fsp})"
        elif self.length is not None:
            params = f"({self.length})"
        out = base + params
        if self.unsigned:
            out += " unsigned"
        if self.zerofill:
            out += " zerofill"
        return out

    def jdbc_type(self, value: Any = None) -> int:
        """The JDBC type code TiCDC assigns, given the value for unsigned ints.

        Unsigned integers move to a wider code when the value exceeds the signed
        range of the column type (TiCDC Canal-JSON table); without a value the
        code of the signed range is returned.
        """
        base = self.base
        if self.kind is Kind.INT:
            _, signed_code, wide_code = _INT_BASES[base]
            if self.unsigned and value is not None:
                bits = _INT_BASES[base][0] * 8
                if int(value) > (1 << (bits - 1)) - 1:
                    return wide_code
            return signed_code
        if self.kind is Kind.GEOMETRY:
            return 2004
        return _JDBC_BY_BASE.get(base, 12)


_TYPE_RE = re.compile(
    r"""^\s*(?P<base>[a-z][a-z0-9_ ]*?)\s*(?:\((?P<params>.*)\))?\s*"""
    r"""(?P<mods>(?:\s+(?:unsigned|signed|zerofill|binary|character\s+set\s+\w+|charset\s+\w+|collate\s+\w+))*)\s*$""",
    re.IGNORECASE | re.DOTALL,
)
_LABEL_RE = re.compile(r"'((?:[^']|'')*)'|\"((?:[^\"]|\"\")*)\"")


def quote_label(label: str) -> str:
    return "'" + label.replace("'", "''") + "'"


class TypeParseError(ValueError):
    pass


@lru_cache(maxsize=4096)
def parse_type(text: str) -> MySQLType:
    """Parse a MySQL column type text, case-insensitively.

    Accepts what ``SHOW CREATE TABLE``, Canal's ``mysqlType`` and Debezium's
    ``__debezium.source.column.type`` print: ``varchar(255)``,
    ``decimal(10,4)``, ``int unsigned``, ``INT(8) UNSIGNED ZEROFILL``,
    ``enum('a','b')``, ``datetime(6)``, ``DOUBLE PRECISION(10,7)``, ``serial``.
    """
    m = _TYPE_RE.match(text)
    if m is None:
        raise TypeParseError(f"unrecognised MySQL type {text!r}")
    raw_base = " ".join(m.group("base").lower().split())
    params = m.group("params")
    mods = (m.group("mods") or "").lower()
    unsigned = "unsigned" in mods
    zerofill = "zerofill" in mods
    if zerofill:
        unsigned = True  # MySQL: ZEROFILL implies UNSIGNED
    charset = None
    cm = re.search(r"(?:character\s+set|charset)\s+(\w+)", mods)
    if cm:
        charset = cm.group(1)
    base = _ALIASES.get(raw_base, raw_base)
    if raw_base == "serial":
        unsigned = True
    if raw_base in ("bool", "boolean"):
        return MySQLType(base="tinyint", kind=Kind.INT, length=1)
    if raw_base in ("real", "double precision", "float8") or base == "double":
        base = "double"
    if base in _INT_BASES:
        length = _int_param(params, text)
        return MySQLType(base=base, kind=Kind.INT, length=length, unsigned=unsigned, zerofill=zerofill)
    if base in _STRING_BASES:
        return MySQLType(base=base, kind=Kind.STRING, length=_int_param(params, text), charset=charset)
    if base in _BYTES_BASES:
        return MySQLType(base=base, kind=Kind.BYTES, length=_int_param(params, text))
    if base in _GEOMETRY_BASES:
        return MySQLType(base="geometrycollection" if base == "geomcollection" else base, kind=Kind.GEOMETRY)
    kind = _SIMPLE_KINDS.get(base)
    if kind is None:
        raise TypeParseError(f"unknown MySQL type {text!r}")
    if kind in (Kind.ENUM, Kind.SET):
        labels = tuple(
            (a if a is not None else b).replace("''", "'").replace('""', '"')
            for a, b in _LABEL_RE.findall(params or "")
        )
        return MySQLType(base=base, kind=kind, values=labels, charset=charset)
    if kind is Kind.DECIMAL:
        p, s = _two_params(params, text)
        return MySQLType(
            base=base,
            kind=kind,
            precision=p if p is not None else 10,
            scale=s if s is not None else 0,
            unsigned=unsigned,
            zerofill=zerofill,
        )
    if kind is Kind.FLOAT:
        p, s = _two_params(params, text)
        return MySQLType(base=base, kind=kind, precision=p, scale=s, unsigned=unsigned, zerofill=zerofill)
    if kind in (Kind.DATETIME, Kind.TIMESTAMP, Kind.TIME):
        return MySQLType(base=base, kind=kind, fsp=_int_param(params, text) or 0)
    if kind is Kind.BIT:
        return MySQLType(base=base, kind=kind, length=_int_param(params, text) or 1)
    if kind is Kind.YEAR:
        return MySQLType(base=base, kind=kind, length=_int_param(params, text))
    return MySQLType(base=base, kind=kind)


def _int_param(params: str | None, text: str) -> int | None:
    if params is None or not params.strip():
        return None
    try:
        return int(params.strip())
    except ValueError:
        raise TypeParseError(f"bad type parameter in {text!r}") from None


def _two_params(params: str | None, text: str) -> tuple[int | None, int | None]:
    if params is None or not params.strip():
        return None, None
    parts = [p.strip() for p in params.split(",")]
    try:
        if len(parts) == 1:
            return int(parts[0]), None
        if len(parts) == 2:
            return int(parts[0]), int(parts[1])
    except ValueError:
        pass
    raise TypeParseError(f"bad type parameters in {text!r}")


# JDBC code -> a representative MySQL type, for formats that carry only codes.
_TYPE_BY_JDBC = {
    -7: "bit(1)",
    -6: "tinyint",
    -5: "bigint",
    -4: "longblob",
    -3: "varbinary(65535)",
    -2: "binary(255)",
    -1: "mediumtext",
    1: "char(255)",
    2: "decimal(65,30)",
    3: "decimal(65,30)",
    4: "int",
    5: "smallint",
    6: "float",
    7: "float",
    8: "double",
    12: "varchar(65535)",
    16: "tinyint(1)",
    91: "date",
    92: "time(6)",
    93: "datetime(6)",
    1111: "json",
    2004: "longblob",
    2005: "longtext",
}


def type_from_jdbc(code: int) -> str:
    """Best-effort MySQL type text for a JDBC code (used when nothing better is known)."""
    try:
        return _TYPE_BY_JDBC[int(code)]
    except KeyError:
        raise TypeParseError(f"unknown JDBC type code {code}") from None


# ---------------------------------------------------------------------------
# MySQL text form: how values are printed by the server / Canal-style formats.
# ---------------------------------------------------------------------------

_ZERO_DATE_PREFIX = ("0000-", "0000")


def parse_date(s: str) -> dt.date | InvalidTemporal:
    try:
        return dt.date.fromisoformat(s)
    except ValueError:
        return InvalidTemporal(s)


def parse_datetime(s: str) -> dt.datetime | InvalidTemporal:
    """``YYYY-MM-DD HH:MM:SS[.ffffff]`` (also ``T``), naive."""
    try:
        return dt.datetime.fromisoformat(s)
    except ValueError:
        return InvalidTemporal(s)


_TIME_RE = re.compile(r"^(-)?(\d+):(\d{1,2}):(\d{1,2})(?:\.(\d{1,6}))?$")


def parse_time(s: str) -> dt.timedelta:
    """MySQL TIME text (``-838:59:59.000000``..``838:59:59``) as a duration."""
    m = _TIME_RE.match(s.strip())
    if m is None:
        raise ValueError(f"bad TIME value {s!r}")
    sign, h, mi, sec, frac = m.groups()
    if int(mi) > 59 or int(sec) > 59:  # timedelta would carry them into the hours: a different value
        raise ValueError(f"{s} is not a valid TIME")
    micros = int((frac or "0").ljust(6, "0"))
    td = dt.timedelta(hours=int(h), minutes=int(mi), seconds=int(sec), microseconds=micros)
    return -td if sign else td


def format_time(td: dt.timedelta, fsp: int = 0) -> str:
    total = int(td / dt.timedelta(microseconds=1))
    sign = "-" if total < 0 else ""
    total = abs(total)
    secs, micros = divmod(total, 1_000_000)
    h, rem = divmod(secs, 3600)
    m, s = divmod(rem, 60)
    out = f"{sign}{h:02d}:{m:02d}:{s:02d}"
    if fsp:
        out += "." + f"{micros:06d}"[:fsp]
    elif micros:
        out += "." + f"{micros:06d}".rstrip("0")
    return out


def format_datetime(v: dt.datetime, fsp: int = 0) -> str:
    out = v.strftime("%Y-%m-%d %H:%M:%S") if v.year >= 1000 else _pad_year(v)
    if fsp:
        out += "." + f"{v.microsecond:06d}"[:fsp]
    elif v.microsecond:
        out += "." + f"{v.microsecond:06d}".rstrip("0")
    return out


def _pad_year(v: dt.datetime) -> str:
    return f"{v.year:04d}-{v.month:02d}-{v.day:02d} {v.hour:02d}:{v.minute:02d}:{v.second:02d}"


def format_date(v: dt.date) -> str:
    return f"{v.year:04d}-{v.month:02d}-{v.day:02d}"


def format_decimal(v: Decimal, scale: int | None = None) -> str:
    """Plain notation (never exponent), padded to the column scale when given."""
    if scale is not None:
        try:
            v = v.quantize(Decimal(1).scaleb(-scale))
        except Exception:  # precision overflow: keep as is
            pass
    return format(v, "f")


_F32 = struct.Struct("<f")


def float32(v: float) -> float:
    """``v`` rounded to the nearest 32-bit float (what a MySQL FLOAT holds); inf beyond its range."""
    try:
        return _F32.unpack(_F32.pack(v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def format_float(v: float) -> str:
    if v == int(v) and abs(v) < 1e16:
        return repr(float(v))
    return repr(v)


def set_labels_from_bits(mtype: MySQLType, bits: int) -> str:
    return ",".join(label for i, label in enumerate(mtype.values) if bits >> i & 1)


def set_bits_from_labels(mtype: MySQLType, text: str) -> int:
    wanted = set(text.split(",")) if text else set()
    return sum(1 << i for i, label in enumerate(mtype.values) if label in wanted)


#: MySQL's widest DECIMAL values: 65 digits before the point (DECIMAL(65,0)), 30 after it
#: (DECIMAL(65,30)). Decoders refuse wider ones: the plain notation text encoders write
#: (``format(d, "f")``, ``quantize``) of ``1e100000000`` is a hundred million digits.
DECIMAL_MAX_INTEGER_DIGITS = 65
DECIMAL_MAX_SCALE = 30


def checked_decimal(d: Decimal) -> Decimal:
    """``d`` if a MySQL DECIMAL column can hold it, else ``ValueError`` (the caller names the
    column): finite, at most 65 integer digits and 30 significant fraction digits (a zero:
    no exponent writing more zeros than those, ``0E-100000000``)."""
    sign, digits, exponent = d.as_tuple()
    if not isinstance(exponent, int):  # NaN, sNaN, Infinity
        raise ValueError(f"{d} is not a DECIMAL value")
    if d:
        if len(digits) + exponent > DECIMAL_MAX_INTEGER_DIGITS:
            raise ValueError(f"decimal has more than {DECIMAL_MAX_INTEGER_DIGITS} integer digits (MySQL's DECIMAL)")
        if exponent < -DECIMAL_MAX_SCALE:
            fraction = -exponent - (len(digits) - len(bytes(digits).rstrip(b"\0")))
            if fraction > DECIMAL_MAX_SCALE:
                raise ValueError(f"decimal has more than {DECIMAL_MAX_SCALE} fraction digits (MySQL's DECIMAL)")
    elif not -DECIMAL_MAX_INTEGER_DIGITS - DECIMAL_MAX_SCALE <= exponent <= DECIMAL_MAX_INTEGER_DIGITS:
        raise ValueError(f"decimal zero with exponent {exponent}: beyond MySQL's DECIMAL")
    return d


def decimal_from_text(s: str) -> Decimal:
    """A DECIMAL column's value from text (``ValueError`` when it is no decimal or too wide)."""
    try:
        d = Decimal(s)
    except ArithmeticError:  # decimal.InvalidOperation: not a number
        raise ValueError(f"not a decimal: {s[:80]!r}") from None
    return checked_decimal(d)


def from_text(mtype: MySQLType, s: str) -> Any:
    """Typed value from MySQL's own text rendering of it.

    Binary columns are expected as ISO-8859-1 text (one char per byte), the way
    Canal and most JDBC-based tools write them; enum/set as labels.
    """
    kind = mtype.kind
    if kind is Kind.INT or kind is Kind.YEAR:
        return int(s)
    if kind is Kind.STRING or kind is Kind.ENUM or kind is Kind.SET or kind is Kind.JSON:
        return s
    if kind is Kind.DECIMAL:
        return decimal_from_text(s)
    if kind is Kind.FLOAT:
        return float32(float(s)) if mtype.is_single_float else float(s)
    if kind is Kind.DATETIME or kind is Kind.TIMESTAMP:
        return parse_datetime(s)
    if kind is Kind.DATE:
        return parse_date(s)
    if kind is Kind.TIME:
        return parse_time(s)
    if kind is Kind.BYTES or kind is Kind.GEOMETRY:
        return s.encode("latin-1")
    if kind is Kind.BIT:
        n = int(s)
        return bool(n) if mtype.length == 1 else n
    raise ValueError(f"no text conversion for {mtype.base}")


# ---------------------------------------------------------------------------
# Compiled conversions from MySQL text straight to renderings of typed values
# (``transforms.model.Target``), for value forms whose raw values are that text.
# ---------------------------------------------------------------------------

_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_DATETIME_FROM_ISO = dt.datetime.fromisoformat
_DATE_FROM_ISO = dt.date.fromisoformat
_B2A = binascii.b2a_base64
_U63 = 1 << 63
_U64 = 1 << 64
_BIT1_TEXT = {"0": False, "1": True}


def text_converter(mtype: MySQLType, target: Any) -> Callable[[str], Any] | None:
    """A function from MySQL text (as :func:`from_text` reads it) to ``target``'s
    rendering of the typed value (see ``transforms.model.Target``), or ``None``.

    The functions return exactly what the rendering of ``from_text(mtype, s)``
    is, and raise for any text they do not handle (zero dates, rounding,
    malformed text): the caller then takes the typed path, which decides.
    """
    kind = mtype.kind
    tk = target.kind
    if kind is Kind.INT or kind is Kind.YEAR:
        if tk == "typed" or tk == "int":
            return int
        if tk == "int64":
            return _int64_from_text
        return None
    if kind is Kind.STRING or kind is Kind.ENUM or kind is Kind.SET or kind is Kind.JSON:
        return str if tk == "typed" or tk == "str" else None
    if kind is Kind.DECIMAL:
        if tk == "typed":
            return decimal_from_text
        if tk == "unscaled_b64":
            return _unscaled_b64_from_text(target.scale)
        return None
    if kind is Kind.FLOAT:
        if (tk == "typed" or tk == "float") and not mtype.is_single_float:
            return float
        return None
    if kind is Kind.DATETIME or kind is Kind.TIMESTAMP:
        if tk == "typed":
            return _DATETIME_FROM_ISO
        if tk == "epoch_ms":
            return _epoch_from_text(dt.timedelta(milliseconds=1))
        if tk == "epoch_us":
            return _epoch_from_text(_US)
        if tk == "iso_utc":
            return _iso_utc_from_text(target.tz)
        return None
    if kind is Kind.DATE:
        if tk == "typed":
            return _DATE_FROM_ISO
        if tk == "epoch_days":
            return _epoch_days_from_text
        return None
    if kind is Kind.TIME:
        return parse_time if tk == "typed" else None
    if kind is Kind.BYTES or kind is Kind.GEOMETRY:
        return _latin1 if tk == "typed" else None
    if kind is Kind.BIT:
        if mtype.length == 1:
            return _BIT1_TEXT.__getitem__ if tk == "typed" or tk == "bool" else None
        return int if tk == "typed" or tk == "int" else None
    return None


def _latin1(s: str) -> bytes:
    return s.encode("latin-1")


def _int64_from_text(s: str) -> int:
    n = int(s)
    return n - _U64 if n >= _U63 else n


def _unscaled_b64_from_text(scale: int) -> Callable[[str], str]:
    """``[-]digits[.digits]`` with at most ``scale`` fraction digits -> Connect Decimal
    base64, without building a Decimal (more digits need rounding: raise)."""
    pads = tuple(10**k for k in range(scale + 1))

    def convert(s: str, _b2a: Callable = _B2A) -> str:
        whole, _, frac = s.partition(".")
        short = scale - len(frac)
        if (
            short < 0
            or len(whole) > DECIMAL_MAX_INTEGER_DIGITS  # wider than a DECIMAL (or zero-padded): the typed path decides
            or (frac and not frac.isdecimal())
            or not (whole.isdecimal() or (whole[:1] == "-" and whole[1:].isdecimal()))
        ):
            raise ValueError(s)  # more fraction digits than the scale (rounding), or not plain digits
        n = int(whole + frac) * pads[short]
        if n >= 0:
            return _b2a(n.to_bytes(n.bit_length() // 8 + 1, "big", signed=True), newline=False).decode()
        return _b2a(n.to_bytes((~n).bit_length() // 8 + 1, "big", signed=True), newline=False).decode()

    return convert


def _epoch_from_text(unit: dt.timedelta) -> Callable[[str], int]:
    def convert(s: str, _parse: Callable = _DATETIME_FROM_ISO, _epoch: dt.datetime = _EPOCH) -> int:
        return (_parse(s) - _epoch) // unit  # aware values: TypeError

    return convert


def _epoch_days_from_text(s: str) -> int:
    return _DATE_FROM_ISO(s).toordinal() - _EPOCH_ORDINAL


def _iso_utc_from_text(tz: str) -> Callable[[str], str]:
    shift = None if tz == "UTC" else zone(tz)

    def convert(s: str, _parse: Callable = _DATETIME_FROM_ISO) -> str:
        v = _parse(s)
        if v.tzinfo is not None:
            raise ValueError(s)
        if shift is None:
            if len(s) == 19 and s[10] == " " and s[4] == "-" and s[7] == "-" and s[13] == ":" and s[16] == ":":
                return f"{s[:10]}T{s[11:]}Z"  # YYYY-MM-DD HH:MM:SS: the ISO text already
        else:
            v = v.replace(tzinfo=shift).astimezone(_UTC).replace(tzinfo=None)
        iso = v.isoformat()
        return (iso.rstrip("0") if v.microsecond else iso) + "Z"

    return convert


def to_text(mtype: MySQLType, v: Any) -> str:
    """MySQL text rendering of a typed value (inverse of :func:`from_text`)."""
    kind = mtype.kind
    if isinstance(v, InvalidTemporal):
        return str(v)
    if kind is Kind.INT or kind is Kind.YEAR:
        return str(int(v))
    if kind is Kind.JSON:  # a document decoded from a JSON message (Debezium without a schema)
        return v if isinstance(v, str) else orjson.dumps(v).decode()
    if kind is Kind.STRING or kind is Kind.ENUM or kind is Kind.SET:
        return v if isinstance(v, str) else str(v)
    if kind is Kind.DECIMAL:
        return format_decimal(v if isinstance(v, Decimal) else Decimal(str(v)), mtype.scale)
    if kind is Kind.FLOAT:
        return format_float(float(v))
    if kind is Kind.DATETIME or kind is Kind.TIMESTAMP:
        return format_datetime(v, mtype.fsp)
    if kind is Kind.DATE:
        return format_date(v)
    if kind is Kind.TIME:
        return format_time(v, mtype.fsp)
    if kind is Kind.BYTES or kind is Kind.GEOMETRY:
        return bytes(v).decode("latin-1")
    if kind is Kind.BIT:
        return str(int(v))
    raise ValueError(f"no text conversion for {mtype.base}")


def fit_value(mtype: MySQLType, v: Any) -> Any:
    """A loosely typed value as the typed value of a ``mtype`` column.

    For formats whose values come in a few primitive types that need not match
    the column's (DataWorks' six types, DTS's type codes against a catalog's
    types): numbers of any kind, bytes, text, datetimes and zero dates
    (:class:`InvalidTemporal`, kept as they are).
    """
    k = mtype.kind
    if k is Kind.INT or k is Kind.YEAR:
        return v.year if isinstance(v, dt.date) else int(v)
    if k is Kind.DECIMAL:
        if isinstance(v, Decimal):
            return checked_decimal(v)
        if isinstance(v, str):
            return decimal_from_text(v)
        return checked_decimal(Decimal(repr(v) if isinstance(v, float) else v if isinstance(v, int) else str(v)))
    if k is Kind.FLOAT:
        return float(v)
    if k is Kind.BIT:
        n = int.from_bytes(v, "big") if isinstance(v, bytes) else int(v)
        return bool(n) if mtype.length == 1 else n
    if k is Kind.BYTES or k is Kind.GEOMETRY:
        return v if isinstance(v, bytes) else str(v).encode("utf-8")
    if isinstance(v, InvalidTemporal) and k in (Kind.DATE, Kind.DATETIME, Kind.TIMESTAMP):
        return v
    if k is Kind.DATE:
        return v.date() if isinstance(v, dt.datetime) else v if isinstance(v, dt.date) else parse_date(str(v))
    if k is Kind.DATETIME or k is Kind.TIMESTAMP:
        return v if isinstance(v, dt.datetime) else parse_datetime(str(v))
    if k is Kind.TIME:
        if isinstance(v, dt.timedelta):
            return v
        if isinstance(v, dt.datetime):  # a TIME sent as a datetime: time of day on 1970-01-01
            return v - dt.datetime(1970, 1, 1)
        return parse_time(str(v))
    # string, enum, set, json: MySQL's text of the value
    if isinstance(v, str):
        return v
    if isinstance(v, bytes):
        return v.decode("utf-8")
    if isinstance(v, dt.datetime):
        return format_datetime(v, 3 if v.microsecond % 1000 == 0 else 6)
    if isinstance(v, Decimal):
        return format(v, "f")
    if isinstance(v, bool):
        return "1" if v else "0"
    return str(v)


def to_json_value(mtype: MySQLType, v: Any) -> Any:
    """A JSON-native rendering of a typed value (numbers stay numbers where exact).

    Used by formats that write typed JSON without a schema (Maxwell-style):
    ints and floats as JSON numbers, decimals as strings (exact), bytes as
    base64, temporals as MySQL text.
    """
    if v is None:
        return None
    kind = mtype.kind
    if kind is Kind.INT or kind is Kind.YEAR or kind is Kind.FLOAT:
        return v
    if kind is Kind.BIT:
        return v if mtype.length == 1 else int(v)
    if kind is Kind.BYTES or kind is Kind.GEOMETRY:
        return base64.b64encode(v).decode("ascii")
    return to_text(mtype, v)


# ---------------------------------------------------------------------------
# Time zones: TIMESTAMP values are naive wall-clocks shown in a zone (see
# CONTRIBUTING.md, "Time zones"); these are the only conversions codecs use.
# ---------------------------------------------------------------------------

_UTC = dt.UTC
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_UTC = _EPOCH.replace(tzinfo=_UTC)
_US = dt.timedelta(microseconds=1)


@lru_cache(maxsize=64)
def zone(name: str) -> ZoneInfo:
    """The IANA zone ``name`` (cached: codecs look zones up per value)."""
    return ZoneInfo(name)


def rebase_timestamp(value: Any, from_zone: str, to_zone: str) -> Any:
    """A naive TIMESTAMP wall-clock of ``from_zone`` re-shown in ``to_zone``.

    Anything that is not a datetime (``None``, :class:`InvalidTemporal` zero
    dates, values of other types) is returned unchanged.
    """
    if from_zone == to_zone or not isinstance(value, dt.datetime):
        return value
    return value.replace(tzinfo=zone(from_zone)).astimezone(zone(to_zone)).replace(tzinfo=None)


def wall_clock(epoch_us: int, zone_name: str) -> dt.datetime:
    """The naive wall-clock in ``zone_name`` of an instant in epoch microseconds."""
    utc = _EPOCH + epoch_us * _US
    if zone_name == "UTC":
        return utc
    return utc.replace(tzinfo=_UTC).astimezone(zone(zone_name)).replace(tzinfo=None)


def epoch_us(wall: dt.datetime, zone_name: str) -> int:
    """Epoch microseconds of a naive wall-clock in ``zone_name`` (inverse of :func:`wall_clock`)."""
    if zone_name == "UTC":
        return (wall - _EPOCH) // _US
    return (wall.replace(tzinfo=zone(zone_name)) - _EPOCH_UTC) // _US


__all__ = [
    "ImpossibleTemporal",
    "InvalidTemporal",
    "Jdbc",
    "Kind",
    "MySQLType",
    "TypeParseError",
    "check_zero_date",
    "checked_decimal",
    "decimal_from_text",
    "is_zero_date",
    "format_date",
    "format_datetime",
    "fit_value",
    "float32",
    "format_decimal",
    "format_time",
    "from_text",
    "parse_date",
    "parse_datetime",
    "parse_time",
    "parse_type",
    "epoch_us",
    "rebase_timestamp",
    "set_bits_from_labels",
    "set_labels_from_bits",
    "text_converter",
    "to_json_value",
    "to_text",
    "type_from_jdbc",
    "wall_clock",
    "zone",
]
