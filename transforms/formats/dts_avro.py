"""Alibaba Cloud DTS subscription records: schemaless Avro binary, one ``Record`` per Kafka message.

The schema is ``schemas/dts-avro.avsc`` (wire-compatible with DTS's
``Record.avsc``). ``bornTimestamp``, the last field, is optional on the wire:
the official SDK's schema stops after ``afterImages`` and its reader skips the
field when the message ends there; this decoder does the same and re-encoding
keeps the message's shape. (So a message cut exactly before ``bornTimestamp``
cannot be told from a short one; every other truncation is a DecodeError.)

Rows. ``fields`` lists the columns with their MySQL column type codes
(``dataTypeNumber``: ``enum_field_types``), ``beforeImages``/``afterImages``
the values as typed Avro unions:

============================  =============================================
MySQL type                    DTS value
============================  =============================================
tinyint..bigint, bit          ``Integer`` (decimal text; precision = display width)
decimal                       ``Decimal`` (text, precision, scale)
float, double                 ``Float`` (a double)
char, varchar, binary(var)    ``Character`` (bytes + MySQL charset; ``binary`` for binary columns)
text / blob families          ``BinaryObject`` (type ``TEXT`` with UTF-8 bytes / ``BLOB``)
enum, set, json               ``TextObject`` (type ``ENUM`` / ``SET`` / ``JSON``)
date, datetime, time, year    ``DateTime`` (only the parts of the type; ``millis`` holds microseconds)
timestamp                     ``Timestamp`` (epoch seconds + microseconds)
geometry                      ``BinaryGeometry`` (the MySQL value bytes)
============================  =============================================

``EmptyObject`` ``NULL`` is SQL NULL; ``NONE`` marks a column missing from the
image (dropped from the image, ``partial=True``). Zero dates travel as
``DateTime`` with zero parts; a zero TIMESTAMP as ``Timestamp(0, 0)``.

Types. Without a catalog the column types come from the codes, refined by the
values: signedness is not carried (an integer above the signed range makes the
column unsigned), nor are lengths, enum/set labels or fractional-second
precision (temporal columns are typed with 6 digits); ``bit`` is ``bit(64)``.

Operations: INSERT/UPDATE/DELETE rows, DDL (``afterImages`` holds the
statement; ``TRUNCATE ...`` statements become truncate events), BEGIN/COMMIT,
HEARTBEAT. The other operations (ROLLBACK, ABORT, CHECKPOINT, COMMAND, FILL,
FINISH, CONTROL, RDB, NOOP, INIT) carry no row change and decode as heartbeat
events that keep the whole record for same-format re-encoding.
"""

from __future__ import annotations

import codecs
import copy
import datetime as dt
import io
import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

import fastavro
import orjson

from cdc_smt.schemas import load_avro
from cdc_smt.transforms.errors import DecodeError, EncodeError
from cdc_smt.transforms.formats._schemaless import TYPED_JSON, merged_schema
from cdc_smt.transforms.formats.base import EXPECTED_ERRORS, Capabilities, Codec, guard, json_default, record_headers
from cdc_smt.transforms.inference import python_type
from cdc_smt.transforms.model import ChangeEvent, Column, Op, Record, SourcePosition
from cdc_smt.transforms.types import (
    ImpossibleTemporal,
    InvalidTemporal,
    Kind,
    MySQLType,
    check_zero_date,
    epoch_us,
    fit_value,
    format_decimal,
    parse_type,
    wall_clock,
    zone,
)

_NAME = "dts-avro"
_NS = "com.alibaba.dts.formats.avro."
_UTC = dt.UTC
_US = dt.timedelta(microseconds=1)


@lru_cache(maxsize=1)
def _schemas() -> tuple[Any, Any]:
    """The parsed record schema, with and without the trailing ``bornTimestamp`` (parsed once)."""
    full = copy.deepcopy(load_avro(_NAME))
    short = dict(copy.deepcopy(full), fields=[f for f in copy.deepcopy(full["fields"]) if f["name"] != "bornTimestamp"])
    return fastavro.parse_schema(full), fastavro.parse_schema(short)


# ---------------------------------------------------------------------------
# reading and writing the Avro record
# ---------------------------------------------------------------------------


def _unreadable(_codec: Any, value: bytes, exc: BaseException) -> str:
    if isinstance(exc, EOFError):
        return f"truncated Avro record: the {len(value)}-byte message ends inside a field"
    return f"malformed Avro record ({type(exc).__name__}: {exc}); is this really {_NAME}?"


#: fastavro reads garbage lengths as huge allocations (MemoryError) and ends early (EOFError).
@guard(DecodeError, _unreadable, errors=EXPECTED_ERRORS + (EOFError, MemoryError), format=_NAME)
def _read_avro(value: bytes) -> tuple[dict[str, Any], int]:
    buf = io.BytesIO(value)
    record = fastavro.schemaless_reader(buf, _schemas()[1], None, True)
    assert isinstance(record, dict)  # the writer schema is a record
    return record, buf.tell()


def read_record(value: bytes) -> dict[str, Any]:
    """The Avro record of one message; ``bornTimestamp`` is ``None`` when the message omits it."""
    obj, end = _read_avro(value)
    rest = value[end:]
    obj["bornTimestamp"] = None
    if rest:
        born, used = _read_long(rest)
        if used != len(rest):
            raise DecodeError(f"{len(rest) - used} trailing bytes after the Avro record", format=_NAME)
        obj["bornTimestamp"] = born
    return obj


def _read_long(data: bytes) -> tuple[int, int]:
    """Avro zig-zag varint: (value, bytes used)."""
    n = shift = 0
    for i, b in enumerate(data[:10]):
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return (n >> 1) ^ -(n & 1), i + 1
        shift += 7
    raise DecodeError("truncated Avro record: bornTimestamp ends early", format=_NAME)


@guard(EncodeError, lambda _c, _obj, exc: f"value does not fit the DTS Avro schema: {exc}", format=_NAME)
def write_record(obj: dict[str, Any]) -> bytes:
    """Schemaless Avro bytes; ``bornTimestamp=None`` writes the short (SDK) form."""
    full, short = _schemas()
    for key in ("beforeImages", "afterImages"):
        values = obj.get(key)
        if isinstance(values, list) and any(isinstance(v, tuple) and _branch(v) == "EmptyObject" for v in values):
            # fastavro may read an enum in a union as (name, symbol) but writes only the bare symbol
            obj = dict(
                obj, **{key: [v[1] if isinstance(v, tuple) and _branch(v) == "EmptyObject" else v for v in values]}
            )
    buf = io.BytesIO()
    if obj.get("bornTimestamp") is None:
        fastavro.schemaless_writer(buf, short, {k: v for k, v in obj.items() if k != "bornTimestamp"})
    else:
        fastavro.schemaless_writer(buf, full, obj)
    return buf.getvalue()


# ---------------------------------------------------------------------------
# types
# ---------------------------------------------------------------------------

#: dataTypeNumber -> MySQL type when no catalog knows the column (binary variants below).
CODE_TYPES: dict[int, str] = {
    0: "decimal(65,30)",
    1: "tinyint",
    2: "smallint",
    3: "int",
    4: "float",
    5: "double",
    6: "longtext",
    7: "timestamp(6)",
    8: "bigint",
    9: "mediumint",
    10: "date",
    11: "time(6)",
    12: "datetime(6)",
    13: "year",
    14: "date",
    15: "varchar(65535)",
    16: "bit(64)",
    17: "timestamp(6)",
    18: "datetime(6)",
    19: "time(6)",
    245: "json",
    246: "decimal(65,30)",
    247: "enum",
    248: "set",
    249: "tinytext",
    250: "mediumtext",
    251: "longtext",
    252: "text",
    253: "varchar(65535)",
    254: "char(255)",
    255: "geometry",
}
_BINARY_VARIANT = {
    "tinytext": "tinyblob",
    "mediumtext": "mediumblob",
    "longtext": "longblob",
    "text": "blob",
    "varchar(65535)": "varbinary(65535)",
    "char(255)": "binary(255)",
}
_CODE_BY_BASE = {
    "tinyint": 1, "smallint": 2, "int": 3, "float": 4, "double": 5, "timestamp": 7, "bigint": 8, "mediumint": 9,
    "date": 10, "time": 11, "datetime": 12, "year": 13, "varchar": 253, "bit": 16, "json": 245, "decimal": 246,
    "enum": 247, "set": 248, "tinytext": 249, "tinyblob": 249, "mediumtext": 250, "mediumblob": 250,
    "longtext": 251, "longblob": 251, "text": 252, "blob": 252, "varbinary": 253, "char": 254, "binary": 254,
}  # fmt: skip
_DISPLAY_WIDTH = {"tinyint": (4, 3), "smallint": (6, 5), "mediumint": (9, 8), "int": (11, 10), "bigint": (20, 20)}
_SIGNED_MAX = {
    "tinyint": 127,
    "smallint": 32767,
    "mediumint": 8388607,
    "int": 2147483647,
    "bigint": 9223372036854775807,
}
_MYSQL_SOURCES = frozenset({"MySQL", "DRDS"})
_SOURCE_BY_DB = {
    "mysql": "MySQL",
    "mariadb": "MySQL",
    "tidb": "MySQL",
    "oracle": "Oracle",
    "postgres": "PostgreSQL",
    "sqlserver": "SQLServer",
    "mongodb": "MongoDB",
    "db2": "DB2",
}
_DB_BY_SOURCE = {
    "MySQL": "mysql",
    "Oracle": "oracle",
    "PostgreSQL": "postgres",
    "SQLServer": "sqlserver",
    "MongoDB": "mongodb",
    "DB2": "db2",
    "DRDS": "mysql",
    "PPAS": "postgres",
}
_CHARSETS = {
    "utf8": "utf-8", "utf8mb3": "utf-8", "utf8mb4": "utf-8", "utf-8": "utf-8", "ascii": "ascii", "gbk": "gbk",
    "gb2312": "gbk", "gb18030": "gb18030", "big5": "big5", "sjis": "shift_jis", "cp932": "cp932", "ujis": "euc_jp",
    "eucjpms": "euc_jp", "euckr": "euc_kr", "koi8r": "koi8_r", "koi8u": "koi8_u", "latin2": "iso8859_2",
    "greek": "iso8859_7", "hebrew": "iso8859_8", "latin5": "iso8859_9", "latin7": "iso8859_13", "cp1250": "cp1250",
    "cp1251": "cp1251", "cp1256": "cp1256", "cp1257": "cp1257", "cp850": "cp850", "cp852": "cp852", "cp866": "cp866",
    "macroman": "mac_roman", "macce": "mac_latin2", "tis620": "tis_620", "ucs2": "utf-16-be", "utf16": "utf-16-be",
    "utf16le": "utf-16-le", "utf32": "utf-32-be",
}  # fmt: skip
_TRUNCATE = re.compile(r"^\s*truncate\b", re.I)
_ZERO_DATE = re.compile(r"^(-?\d+)-(\d+)-(\d+)(?:[ T](\d+):(\d+):(\d+)(?:\.(\d{1,6}))?)?$")
_ROW_OPS = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE}
_CONTROL_OPS = {"BEGIN": Op.BEGIN, "COMMIT": Op.COMMIT, "HEARTBEAT": Op.HEARTBEAT}


def _branch(raw: Any) -> str | None:
    """The union branch of an image value. fastavro returns an ``EmptyObject``
    as ``(name, symbol)`` or as the bare symbol depending on where the enum is defined."""
    if isinstance(raw, tuple):
        return raw[0][len(_NS) :]
    return "EmptyObject" if isinstance(raw, str) else None


def infer_column_type(code: int, raws: list[Any], mysql_source: bool) -> str:
    """MySQL type text of a column from its code and its values in this message."""
    value = next((r for r in raws if isinstance(r, tuple) and _branch(r) != "EmptyObject"), None)
    kind: str | None = None
    data: Any = None  # the branch's record (a dict), or its plain value
    if value is not None:
        kind, data = _branch(value), value[1]
    text = CODE_TYPES.get(code) if mysql_source else None
    if text is None:
        return _type_from_value(kind, data)
    if text in _BINARY_VARIANT and (
        (kind == "Character" and data["charset"].lower() == "binary")
        or (kind == "BinaryObject" and data["type"].upper() != "TEXT")
    ):
        return _BINARY_VARIANT[text]
    if kind == "Decimal" and text.startswith("decimal"):
        p, s = data["precision"], data["scale"]
        return f"decimal({p},{s})" if 0 < p <= 65 and 0 <= s <= min(p, 30) else text
    if text in _SIGNED_MAX:
        biggest = max((int(r[1]["value"]) for r in raws if _branch(r) == "Integer"), default=0)
        if biggest > _SIGNED_MAX[text]:
            return text + " unsigned"
    return text


def _type_from_value(kind: str | None, data: Any) -> str:
    """Type from the union branch alone (non-MySQL sources, unknown codes)."""
    if kind == "Integer":
        v = int(data["value"])
        return "bigint" if -(1 << 63) <= v < (1 << 63) else "decimal(65,0)"
    if kind == "Decimal":
        p, s = data["precision"], data["scale"]
        return f"decimal({p},{s})" if 0 < p <= 65 and 0 <= s <= min(p, 30) else "decimal(65,30)"
    if kind == "Float":
        return "double"
    if kind in ("Timestamp", "TimestampWithTimeZone"):
        return "timestamp(6)"
    if kind == "DateTime":
        if data["hour"] is None:
            return "date" if data["month"] is not None else "year"
        return "time(6)" if data["year"] is None else "datetime(6)"
    if kind == "Character":
        return "longblob" if data["charset"].lower() == "binary" else "longtext"
    if kind == "BinaryObject":
        return "longtext" if data["type"].upper() == "TEXT" else "longblob"
    if kind == "BinaryGeometry":
        return "geometry"
    if kind == "TextObject" and data["type"].upper() == "JSON":
        return "json"
    return "longtext"


def type_code(t: MySQLType) -> int:
    if t.kind is Kind.GEOMETRY:
        return 255
    return _CODE_BY_BASE.get(t.base, 253)


# ---------------------------------------------------------------------------
# values
# ---------------------------------------------------------------------------


def _decode_chars(data: bytes, charset: str) -> str:
    cs = charset.lower()
    if cs == "latin1":  # MySQL latin1 is cp1252 with the five holes mapped through
        try:
            return data.decode("cp1252")
        except UnicodeDecodeError:
            return "".join(bytes([b]).decode("cp1252", errors="ignore") or chr(b) for b in data)
    return data.decode(_CHARSETS.get(cs, cs))


def _zero_text(y: int, mo: int, d: int, time: tuple[int, int, int, int] | None) -> InvalidTemporal:
    text = f"{y:04d}-{mo:02d}-{d:02d}"
    if time is not None:
        h, mi, s, us = time
        text += f" {h:02d}:{mi:02d}:{s:02d}" + (f".{us:06d}" if us else "")
    return InvalidTemporal(text)


class DtsValues:
    """Raw form: DTS union values as fastavro reads them, ``(record name, fields)``."""

    __slots__ = ("zone", "frac_div")
    name = _NAME

    def __init__(self, zone_name: str, frac_div: int) -> None:
        self.zone = zone_name
        self.frac_div = frac_div  # DateTime.millis is microseconds for MySQL/PostgreSQL, nanoseconds elsewhere

    def to_python(self, column: Column, raw: Any) -> Any:
        if raw is None:
            return None
        t = column.mysql
        kind, d = _branch(raw), raw[1]
        if kind == "Integer":
            v: Any = int(d["value"])
        elif kind == "Character":
            if d["charset"].lower() == "binary" or t.kind in (Kind.BYTES, Kind.GEOMETRY):
                v = bytes(d["value"])
            else:
                v = _decode_chars(d["value"], d["charset"])
        elif kind == "Decimal":
            v = Decimal(d["value"])
        elif kind == "Float":
            v = float(d["value"])
        elif kind == "Timestamp":
            if d["timestamp"] == 0 and d["millis"] == 0:
                return InvalidTemporal("0000-00-00 00:00:00")  # MySQL stores the zero TIMESTAMP as 0
            v = wall_clock(d["timestamp"] * 1_000_000 + d["millis"], self.zone)
        elif kind == "DateTime":
            v = self._datetime(t, d)
        elif kind == "TimestampWithTimeZone":
            v = self._zoned(d)
        elif kind in ("BinaryObject", "BinaryGeometry"):
            v = bytes(d["value"])
            if kind == "BinaryObject" and t.kind not in (Kind.BYTES, Kind.GEOMETRY, Kind.BIT):
                v = v.decode("utf-8")
        elif kind in ("TextObject", "TextGeometry"):
            v = d["value"]
        else:  # EmptyObject NULL
            return None
        return fit_value(t, v)

    def _datetime(self, t: MySQLType, d: dict) -> Any:
        y, mo, day = d["year"] or 0, d["month"] or 0, d["day"] or 0
        h, mi, s = d["hour"] or 0, d["minute"] or 0, d["second"] or 0
        frac = int((d["millis"] or 0) / self.frac_div)
        k = t.kind
        if k is Kind.TIME or (d["year"] is None and d["hour"] is not None and k not in (Kind.DATETIME, Kind.TIMESTAMP)):
            return dt.timedelta(hours=h, minutes=mi, seconds=s, microseconds=frac)
        if k is Kind.YEAR or k is Kind.INT:
            return y
        try:
            if k is Kind.DATE or d["hour"] is None:
                return dt.date(y, mo, day)
            return dt.datetime(y, mo, day, h, mi, s, frac)
        except ValueError:  # zero or invalid dates MySQL allows
            return _zero_text(y, mo, day, None if k is Kind.DATE or d["hour"] is None else (h, mi, s, frac))

    def _zoned(self, d: dict) -> dt.datetime:
        v = d["value"]
        naive = dt.datetime(
            v["year"] or 1970,
            v["month"] or 1,
            v["day"] or 1,
            v["hour"] or 0,
            v["minute"] or 0,
            v["second"] or 0,
            int((v["millis"] or 0) / self.frac_div),
        )
        return naive.replace(tzinfo=_parse_zone(d["timezone"])).astimezone(zone(self.zone)).replace(tzinfo=None)


def _parse_zone(text: str) -> dt.tzinfo:
    m = re.match(r"^(?:GMT|UTC)?([+-])(\d{1,2}):?(\d{2})?$", text.strip())
    if m:
        offset = dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3) or 0))
        return dt.timezone(-offset if m.group(1) == "-" else offset)
    if text.strip() in ("", "GMT", "UTC", "Z"):
        return _UTC
    return zone(text.strip())


@lru_cache(maxsize=64)
def _values_form(zone_name: str, frac_div: int) -> DtsValues:
    return DtsValues(zone_name, frac_div)


def _check_value(name: str, raw: Any) -> None:
    """Cheap decode-time validation of the values whose text must parse."""
    kind = _branch(raw)
    try:
        if kind == "Integer":
            int(raw[1]["value"])
        elif kind == "Decimal":
            Decimal(raw[1]["value"])
        elif kind == "Character":
            cs = raw[1]["charset"].lower()
            if cs != "binary" and cs != "latin1" and cs not in _CHARSETS:
                codecs.lookup(cs)
    except (ValueError, InvalidOperation, LookupError):
        raise DecodeError(f"column {name!r}: bad {kind} value {raw[1]!r}", format=_NAME) from None


def encode_value(t: MySQLType, v: Any, event_zone: str) -> Any:
    """The DTS union value of a typed value in a column of type ``t``."""
    if v is None:
        return None
    k = t.kind
    if k is Kind.INT:
        return (_NS + "Integer", {"precision": _DISPLAY_WIDTH[t.base][t.unsigned], "value": str(int(v))})
    if k is Kind.BIT:
        return (_NS + "Integer", {"precision": t.length or 1, "value": str(int(v))})
    if k is Kind.DECIMAL:
        precision, scale = t.precision or 65, t.scale or 0
        return (
            _NS + "Decimal",
            {
                "value": format_decimal(v if isinstance(v, Decimal) else Decimal(str(v)), scale),
                "precision": precision,
                "scale": scale,
            },
        )
    if k is Kind.FLOAT:
        default_p = 12 if t.base == "float" else 22
        return (
            _NS + "Float",
            {"value": float(v), "precision": t.precision or default_p, "scale": 31 if t.scale is None else t.scale},
        )
    if k is Kind.STRING:
        if t.base in ("char", "varchar"):
            return (_NS + "Character", {"charset": "utf8mb4", "value": v.encode("utf-8")})
        return (_NS + "BinaryObject", {"type": "TEXT", "value": v.encode("utf-8")})
    if k is Kind.ENUM or k is Kind.SET or k is Kind.JSON:
        return (_NS + "TextObject", {"type": k.value.upper(), "value": v})
    if k is Kind.BYTES:
        if t.base in ("binary", "varbinary"):
            return (_NS + "Character", {"charset": "binary", "value": bytes(v)})
        return (_NS + "BinaryObject", {"type": "BLOB", "value": bytes(v)})
    if k is Kind.GEOMETRY:
        return (_NS + "BinaryGeometry", {"type": t.base.upper(), "value": bytes(v)})
    if k is Kind.TIMESTAMP:
        if isinstance(v, InvalidTemporal):
            check_zero_date(v, t)  # an epoch count has no place for other invalid text
            return (_NS + "Timestamp", {"timestamp": 0, "millis": 0})
        us = epoch_us(v, event_zone)
        return (_NS + "Timestamp", {"timestamp": us // 1_000_000, "millis": us % 1_000_000})
    if k is Kind.YEAR:
        return _datetime_value(year=int(v))
    if k is Kind.TIME:
        us = v // _US
        sign = -1 if us < 0 else 1
        secs, frac = divmod(abs(us), 1_000_000)
        hours, rem = divmod(secs, 3600)
        minutes, seconds = divmod(rem, 60)
        return _datetime_value(hour=sign * hours, minute=sign * minutes, second=sign * seconds, millis=sign * frac)
    if isinstance(v, InvalidTemporal):
        m = _ZERO_DATE.match(v)
        if m is None:
            raise EncodeError(f"cannot write invalid date {str(v)!r}", format=_NAME)
        y, mo, d, h, mi, s, f = m.groups()
        if k is Kind.DATE or h is None:
            return _datetime_value(year=int(y), month=int(mo), day=int(d))
        return _datetime_value(
            year=int(y),
            month=int(mo),
            day=int(d),
            hour=int(h),
            minute=int(mi),
            second=int(s),
            millis=int((f or "0").ljust(6, "0")),
        )
    if k is Kind.DATE:
        return _datetime_value(year=v.year, month=v.month, day=v.day)
    # DATETIME
    return _datetime_value(
        year=v.year, month=v.month, day=v.day, hour=v.hour, minute=v.minute, second=v.second, millis=v.microsecond
    )


def _encode_column(name: str, t: MySQLType, v: Any, event_zone: str) -> Any:
    """:func:`encode_value`, naming the column when its value has no DTS form."""
    try:
        return encode_value(t, v, event_zone)
    except ImpossibleTemporal as exc:
        raise EncodeError(f"column {name}: {exc}", format=_NAME) from None


def _datetime_value(**parts: int) -> tuple[str, dict]:
    d = dict.fromkeys(("year", "month", "day", "hour", "minute", "second", "millis"))
    d.update(parts)
    return (_NS + "DateTime", d)


def escape_name(name: str) -> str:
    return name.replace(".", "\\u002E")


def unescape_name(name: str) -> str:
    return name.replace("\\u002E", ".").replace("\\u002e", ".")


# ---------------------------------------------------------------------------
# the codec
# ---------------------------------------------------------------------------


class DtsAvro(Codec):
    """Alibaba DTS subscription Avro: typed values, MySQL type codes, transactions, DDL."""

    name = _NAME
    description = "Alibaba Cloud DTS subscription records (schemaless Avro binary Record)"
    binary = True
    capabilities = Capabilities(
        column_types=True, primary_key=True, transactions=True, ddl=True, heartbeats=True, typed_values=True
    )

    def configure(self) -> None:
        self._next_id = 0

    # -- decode ------------------------------------------------------------
    def parse(self, value: bytes) -> dict[str, Any]:
        return read_record(value)

    def decode_message(self, obj: dict[str, Any], record: Record) -> list[ChangeEvent]:
        operation = obj["operation"]
        source = self._source(obj)
        base = dict(
            source=source,
            ts_ms=self._ts_ms(obj),
            timezone=self.opts.source_timezone,
            origin=self.name,
        )
        template = {k: v for k, v in obj.items() if k not in ("fields", "beforeImages", "afterImages")}
        if operation in _ROW_OPS:
            return [self._row(obj, _ROW_OPS[operation], template, base)]
        if operation == "DDL":
            ddl = obj["afterImages"]
            if not isinstance(ddl, str):
                raise DecodeError("DDL record without its statement in afterImages", format=self.name)
            op = Op.TRUNCATE if _TRUNCATE.match(ddl) else Op.DDL
            return [
                ChangeEvent(
                    op=op,
                    ddl=ddl,
                    extra={"record": template, "fields": obj["fields"], "beforeImages": obj["beforeImages"]},
                    **base,
                )
            ]
        op = _CONTROL_OPS.get(operation, Op.HEARTBEAT)
        return [ChangeEvent(op=op, extra={"record": obj}, **base)]

    def _source(self, obj: dict) -> SourcePosition:
        database = schema = table = None
        if obj["objectName"]:
            parts = [unescape_name(p) for p in obj["objectName"].split(".")]
            if len(parts) > 3:
                raise DecodeError(f"objectName {obj['objectName']!r} has more than db.schema.table", format=self.name)
            database = parts[0]
            if len(parts) == 2:
                table = parts[1]
            elif len(parts) == 3:
                schema, table = parts[1], parts[2]
        return SourcePosition(
            db_type=_DB_BY_SOURCE.get(obj["source"]["sourceType"]),
            database=database,
            schema=schema,
            table=table,
            txid=obj["sourceTxid"] or None,
            sequence_id=str(obj["id"]),
        )

    @staticmethod
    def _ts_ms(obj: dict) -> int | None:
        """``bornTimestamp`` (ms) when it agrees with ``sourceTimestamp`` (s), else the seconds."""
        seconds = obj["sourceTimestamp"]
        born = obj["bornTimestamp"]
        if born and seconds * 1000 <= born < seconds * 1000 + 1000:
            return born
        return seconds * 1000 if seconds else None

    def _row(self, obj: dict, op: Op, template: dict, base: dict) -> ChangeEvent:
        fields = obj["fields"]
        if not isinstance(fields, list):
            raise DecodeError(f"{obj['operation']} record without a fields array", format=self.name)
        names = [f["name"] for f in fields]
        codes = [f["dataTypeNumber"] for f in fields]
        images: dict[str, list | None] = {}
        for key, needed in (("beforeImages", op is not Op.INSERT), ("afterImages", op is not Op.DELETE)):
            raw = obj[key]
            if raw is None or (not needed and not isinstance(raw, list)):
                if needed:
                    raise DecodeError(f"{obj['operation']} record without {key}", format=self.name)
                images[key] = None
                continue
            if not isinstance(raw, list):
                raise DecodeError(f"{key} must be an array of values, got a string", format=self.name)
            if len(raw) != len(names):
                raise DecodeError(f"{key} has {len(raw)} values for {len(names)} fields", format=self.name)
            images[key] = raw
        partial = False
        rows: list[dict[str, Any] | None] = []
        for key in ("beforeImages", "afterImages"):
            values = images[key]
            if values is None:
                rows.append(None)
                continue
            row: dict[str, Any] = {}
            for name, raw in zip(names, values, strict=True):
                if _branch(raw) == "EmptyObject":
                    if (raw if isinstance(raw, str) else raw[1]) == "NONE":
                        partial = True
                        continue
                    raw = None
                elif raw is not None:
                    _check_value(name, raw)
                row[name] = raw
            rows.append(row)
        before, after = rows
        mysql_source = obj["source"]["sourceType"] in _MYSQL_SOURCES
        columns = tuple(
            (name, infer_column_type(code, [v[i] for v in images.values() if v is not None], mysql_source))
            for i, (name, code) in enumerate(zip(names, codes, strict=True))
        )
        pk = _pk_from_tags(obj["tags"])
        source = base["source"]
        schema = merged_schema(columns, pk, self.catalog_schema(source.database, source.table))
        frac_div = 1 if obj["source"]["sourceType"] in ("MySQL", "DRDS", "PostgreSQL", "PPAS") else 1000
        return ChangeEvent(
            op=op,
            before=before if op is not Op.INSERT else None,
            after=after if op is not Op.DELETE else None,
            schema=schema,
            pk=schema.primary_key,
            partial=partial,
            values=_values_form(self.opts.source_timezone, frac_div),
            extra={"record": template, "codes": dict(zip(names, codes, strict=True))},
            **base,
        )

    # -- encode ------------------------------------------------------------
    def encode_records(self, event: ChangeEvent) -> list[Record]:
        obj = self._encode_record(event)
        if obj is None:
            return []
        return [Record(value=write_record(obj), key=self._key(event), topic=event.topic, headers=record_headers(event))]

    def _encode_record(self, event: ChangeEvent) -> dict | None:
        op = event.op
        same = event.origin == self.name
        extra = event.extra if same else {}
        if not op.is_row and op not in (Op.DDL, Op.TRUNCATE):
            if op is Op.WATERMARK:
                return None  # DTS has no watermark record (documented)
            stored = extra.get("record")
            if stored is not None and _CONTROL_OPS.get(stored["operation"], Op.HEARTBEAT) is op:
                return dict(stored)
            return self._envelope(event, None, {Op.BEGIN: "BEGIN", Op.COMMIT: "COMMIT"}.get(op, "HEARTBEAT"))
        if op is Op.DDL or op is Op.TRUNCATE:
            ddl = event.ddl
            if ddl is None:
                if op is Op.DDL:
                    raise EncodeError("DDL event without a statement", format=self.name)
                ddl = f"TRUNCATE TABLE `{event.source.database}`.`{event.source.table}`"
            out = self._envelope(event, extra.get("record"), "DDL")
            out["fields"] = extra.get("fields")
            out["beforeImages"] = extra.get("beforeImages")
            out["afterImages"] = ddl
            return out
        operation = {Op.INSERT: "INSERT", Op.READ: "INSERT", Op.UPDATE: "UPDATE", Op.DELETE: "DELETE"}[op]
        if operation == "UPDATE" and event.after is None:
            operation = "DELETE"  # a lone before-half: replaying a delete has the same effect
        elif operation == "UPDATE" and event.before is None:
            operation = "INSERT"  # no before-image (a lone after-half): DTS updates need both
        out = self._envelope(event, extra.get("record"), operation)
        self._images(event, out, operation, extra.get("codes") or {})
        return out

    def _envelope(self, event: ChangeEvent, template: dict | None, operation: str) -> dict[str, Any]:
        src = event.source
        out: dict[str, Any] = (
            dict(template)
            if template is not None
            else empty_record(operation, _SOURCE_BY_DB.get(src.db_type or "mysql", "OTHER"))
        )
        out["operation"] = operation
        if template is None:
            out["id"] = (
                int(src.sequence_id) if src.sequence_id and src.sequence_id.lstrip("-").isdigit() else self._id()
            )
            if src.binlog_pos is not None and src.binlog_file:
                digits = re.search(r"(\d+)$", src.binlog_file)
                out["sourcePosition"] = f"{src.binlog_pos}@{int(digits.group(1))}" if digits else str(src.binlog_pos)
            if event.ts_ms is not None:
                out["bornTimestamp"] = event.ts_ms
        if event.ts_ms is not None and out["sourceTimestamp"] != event.ts_ms // 1000:
            out["sourceTimestamp"] = event.ts_ms // 1000
            if out.get("bornTimestamp") is not None:
                out["bornTimestamp"] = event.ts_ms
        out["sourceTxid"] = src.txid or ""
        names = [n for n in (src.database, src.schema, src.table) if n is not None]
        out["objectName"] = ".".join(escape_name(n) for n in names) if names else None
        if event.op.is_row:
            tags = dict(out.get("tags") or {})
            if event.pk and _pk_from_tags(tags) != tuple(event.pk):
                tags["pk_uk_info"] = orjson.dumps({"PRIMARY": list(event.pk)}).decode()
            out["tags"] = tags
        return out

    def _images(self, event: ChangeEvent, out: dict, operation: str, codes: dict[str, int]) -> None:
        schema = event.schema
        before = event.before if operation in ("UPDATE", "DELETE") else None
        after = event.after if operation in ("UPDATE", "INSERT") else None
        names: list[str] = list(schema.names) if schema is not None else []
        for image in (before, after):
            for n in image or ():
                if n not in names:
                    names.append(n)
        raw_form = isinstance(event.values, DtsValues)
        if not raw_form and event.values is not None:
            event.typed()
        types: dict[str, MySQLType] = {}
        for n in names:
            col = schema.column(n) if schema is not None else None
            if col is not None:
                types[n] = col.mysql
            else:
                sample = next((img[n] for img in (before, after) if img and img.get(n) is not None), None)
                types[n] = parse_type(
                    python_type(sample, TYPED_JSON) if sample is not None and not raw_form else "longtext"
                )
        out["fields"] = [{"name": n, "dataTypeNumber": codes.get(n, type_code(types[n]))} for n in names]
        empty = "NONE"  # EmptyObject: the column is not in this image

        def render(image: dict | None) -> list | None:
            if image is None:
                return None
            if raw_form:
                return [image[n] if n in image else empty for n in names]
            return [_encode_column(n, types[n], image[n], event.timezone) if n in image else empty for n in names]

        out["beforeImages"] = render(before)
        out["afterImages"] = render(after)

    def _id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _key(self, event: ChangeEvent) -> bytes | None:
        """The original Kafka key when re-encoding DTS, else the primary key as JSON."""
        if event.origin == self.name and event.record is not None and event.key is None:
            return event.record.key
        if event.key is not None:
            return orjson.dumps(event.key, default=json_default)
        image = event.row
        if not event.pk or image is None:
            return None
        if isinstance(event.values, DtsValues) and event.schema is not None:
            by_name = event.schema.by_name
            return orjson.dumps(
                {k: event.values.to_python(by_name[k], image.get(k)) if k in by_name else None for k in event.pk},
                default=json_default,
            )
        return orjson.dumps({k: image.get(k) for k in event.pk}, default=json_default)

    @classmethod
    def sniff(cls, message: Any) -> bool:
        if not isinstance(message, (bytes, bytearray)) or not message or message[:1] in (b"{", b"["):
            return False
        try:
            read_record(bytes(message))
        except DecodeError:
            return False
        return True


def empty_record(operation: str, source_type: str) -> dict[str, Any]:
    """A record of ``operation`` with every other field at its zero value (id 0, time 0,
    no object, no images, ``bornTimestamp`` 0): what the encoder fills in."""
    return {
        "version": 0,
        "id": 0,
        "sourceTimestamp": 0,
        "sourcePosition": "",
        "safeSourcePosition": "",
        "sourceTxid": "",
        "source": {"sourceType": source_type, "version": ""},
        "operation": operation,
        "objectName": None,
        "processTimestamps": None,
        "tags": {},
        "fields": None,
        "beforeImages": None,
        "afterImages": None,
        "bornTimestamp": 0,
    }


def _pk_from_tags(tags: dict[str, str]) -> tuple[str, ...]:
    """Primary-key names from ``tags["pk_uk_info"]`` (``{"PRIMARY": [...], "<uk>": [...]}``)."""
    text = tags.get("pk_uk_info")
    if not text:
        return ()
    try:
        info = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise DecodeError(f"tags.pk_uk_info is not JSON: {text!r}", format=_NAME) from None
    primary = info.get("PRIMARY") if isinstance(info, dict) else None
    if primary is None:
        return ()
    if not isinstance(primary, list) or not all(isinstance(n, str) for n in primary):
        raise DecodeError(f"tags.pk_uk_info PRIMARY must list column names: {text!r}", format=_NAME)
    return tuple(primary)
