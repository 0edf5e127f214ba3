"""Kafka Connect field schemas and Debezium value representations.

Debezium writes each column as a Kafka Connect *literal* type (``int16``,
``bytes``, ``string``...) plus, where the literal type alone is ambiguous, a
*semantic* name (``io.debezium.time.Date``, ``org.apache.kafka.connect.data.Decimal``).
This module maps both ways between the canonical model (MySQL types, typed
values) and those representations, and compiles per-table :class:`Plan`
objects -- per-column converter closures, the Connect field schemas and the raw
value form -- that the codec caches, so the hot path never rebuilds them.

Nothing here knows about envelopes, keys or sources: see ``debezium_json``.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import functools
import hashlib
import math
import struct
import zoneinfo
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Context, Decimal
from typing import Any

import orjson

from cdc_smt.transforms.errors import EncodeError
from cdc_smt.transforms.model import TYPED, Column, TableSchema, Target
from cdc_smt.transforms.types import (
    ImpossibleTemporal,
    Kind,
    MySQLType,
    TypeParseError,
    check_zero_date,
    float32,
    format_decimal,
    parse_type,
    quote_label,
)

Converter = Callable[[Any], Any]

DECIMAL = "org.apache.kafka.connect.data.Decimal"
PRECISION = "connect.decimal.precision"
SOURCE_TYPE = "__debezium.source.column.type"
SOURCE_LENGTH = "__debezium.source.column.length"
SOURCE_SCALE = "__debezium.source.column.scale"

#: Connect semantic name -> representation kind (how the JSON value is read).
_NAME_KINDS: dict[str, str] = {
    DECIMAL: "decimal",
    "io.debezium.data.Bits": "bits",
    "io.debezium.time.Date": "date",
    "org.apache.kafka.connect.data.Date": "date",
    "io.debezium.time.Timestamp": "ts_ms",
    "org.apache.kafka.connect.data.Timestamp": "ts_ms",
    "io.debezium.time.MicroTimestamp": "ts_us",
    "io.debezium.time.NanoTimestamp": "ts_ns",
    "io.debezium.time.ZonedTimestamp": "zoned",
    "io.debezium.time.Time": "time_ms",
    "org.apache.kafka.connect.data.Time": "time_ms",
    "io.debezium.time.MicroTime": "time_us",
    "io.debezium.time.NanoTime": "time_ns",
    "io.debezium.data.geometry.Geometry": "geometry",
    "io.debezium.data.geometry.Point": "point",
    "io.debezium.data.VariableScaleDecimal": "vsdecimal",
}
#: Connect literal type -> representation kind when there is no semantic name.
_LITERAL_KINDS: dict[str, str] = {
    "int8": "int",
    "int16": "int",
    "int32": "int",
    "int64": "int",
    "float": "float32",  # JsonConverter's names for FLOAT32/FLOAT64
    "double": "float64",
    "float32": "float32",
    "float64": "float64",
    "boolean": "bool",
    "string": "string",
    "bytes": "bytes",
}

# ---------------------------------------------------------------------------
# Options that decide representations (Debezium connector properties).
# ---------------------------------------------------------------------------

DECIMAL_MODES = ("precise", "string", "double")
DECIMAL_FORMATS = ("base64", "numeric")
TIME_MODES = ("adaptive_time_microseconds", "connect")
BINARY_MODES = ("bytes", "base64", "base64-url-safe", "hex")
BIGINT_UNSIGNED_MODES = ("long", "precise")


@dataclass(frozen=True, slots=True)
class ConnectOptions:
    """The Debezium/JsonConverter settings that decide how values are written."""

    decimal_handling_mode: str = "precise"
    decimal_format: str = "base64"
    time_precision_mode: str = "adaptive_time_microseconds"
    binary_handling_mode: str = "bytes"
    bigint_unsigned_handling_mode: str = "long"


_BINARY_KINDS = {"bytes": "bytes", "base64": "b64", "base64-url-safe": "b64url", "hex": "hex"}


# ---------------------------------------------------------------------------
# Representations.
# ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Repr:
    """How one column's value is written: representation kind, Connect literal
    type, semantic name and schema parameters."""

    kind: str
    ctype: str
    name: str | None = None
    params: tuple[tuple[str, str], ...] = ()

    @property
    def scale(self) -> int:
        return int(dict(self.params).get("scale", 0))

    @property
    def length(self) -> int:
        return int(dict(self.params).get("length", 0))

    def signature(self) -> tuple:
        """What decides the raw JSON value: equal signatures mean equal JSON."""
        by = _spec(self.kind).signature
        return (self.kind, getattr(self, by)) if by else (self.kind,)


def repr_for_type(mt: MySQLType, opts: ConnectOptions) -> Repr:
    """Debezium MySQL connector's mapping of one column type (documented table)."""
    k = mt.kind
    if k is Kind.INT:
        base = mt.base
        if base == "tinyint" or (base == "smallint" and not mt.unsigned):
            return Repr("int", "int16")
        if base in ("smallint", "mediumint") or (base == "int" and not mt.unsigned):
            return Repr("int", "int32")
        if base == "int" or not mt.unsigned or opts.bigint_unsigned_handling_mode == "long":
            return Repr("int", "int64")
        return _decimal_repr(opts, scale=0, precision=None)
    if k is Kind.DECIMAL:
        mode = opts.decimal_handling_mode
        if mode == "double":
            return Repr("float64", "double")
        if mode == "string":
            return Repr("string", "string")
        return _decimal_repr(opts, scale=mt.scale or 0, precision=mt.precision)
    if k is Kind.FLOAT:
        if mt.is_single_float and mt.scale is None and (mt.precision is None or mt.precision <= 23):
            # Debezium's documented mapping, not MySQL's storage: FLOAT(p) is FLOAT32 only for
            # p 0-23 (MySQL stores p=24 as single too) and FLOAT(M,D) is FLOAT64.
            return Repr("float32", "float")
        return Repr("float64", "double")
    if k is Kind.STRING:
        return Repr("string", "string")
    if (k is Kind.ENUM or k is Kind.SET) and not mt.values:
        # Labels unknown (TiCDC's parameterless `enum` without a catalog): the values are index
        # or bitmask text, and `allowed: ""` would read back as the one label ''.
        return Repr("string", "string")
    if k is Kind.ENUM:
        return Repr("string", "string", "io.debezium.data.Enum", (("allowed", ",".join(mt.values)),))
    if k is Kind.SET:
        return Repr("string", "string", "io.debezium.data.EnumSet", (("allowed", ",".join(mt.values)),))
    if k is Kind.JSON:
        return Repr("string", "string", "io.debezium.data.Json")
    if k is Kind.BYTES:
        kind = _BINARY_KINDS[opts.binary_handling_mode]
        return Repr(kind, "bytes" if kind == "bytes" else "string")
    if k is Kind.GEOMETRY:
        if mt.base == "point":
            return Repr("point", "struct", "io.debezium.data.geometry.Point")
        return Repr("geometry", "struct", "io.debezium.data.geometry.Geometry")
    if k is Kind.BIT:
        if (mt.length or 1) == 1:
            return Repr("bool", "boolean")
        return Repr("bits", "bytes", "io.debezium.data.Bits", (("length", str(mt.length)),))
    connect = opts.time_precision_mode == "connect"
    if k is Kind.DATE:
        return Repr("date", "int32", "org.apache.kafka.connect.data.Date" if connect else "io.debezium.time.Date")
    if k is Kind.DATETIME:
        if connect:
            return Repr("ts_ms", "int64", "org.apache.kafka.connect.data.Timestamp")
        if mt.fsp <= 3:
            return Repr("ts_ms", "int64", "io.debezium.time.Timestamp")
        return Repr("ts_us", "int64", "io.debezium.time.MicroTimestamp")
    if k is Kind.TIMESTAMP:
        return Repr("zoned", "string", "io.debezium.time.ZonedTimestamp")
    if k is Kind.TIME:
        if connect:
            return Repr("time_ms", "int32", "org.apache.kafka.connect.data.Time")
        return Repr("time_us", "int64", "io.debezium.time.MicroTime")
    if k is Kind.YEAR:
        return Repr("int", "int32", "io.debezium.time.Year")
    raise TypeParseError(f"no Debezium mapping for MySQL type {mt.text()!r}")


def _decimal_repr(opts: ConnectOptions, scale: int, precision: int | None) -> Repr:
    params = [("scale", str(scale))]
    if precision is not None:
        params.append((PRECISION, str(precision)))
    kind = "decimal_num" if opts.decimal_format == "numeric" else "decimal"
    return Repr(kind, "bytes", DECIMAL, tuple(params))


def repr_from_field(field: Mapping[str, Any]) -> Repr:
    """The representation a Connect field schema declares."""
    ctype = field.get("type")
    if not isinstance(ctype, str):
        raise ValueError(f"field {field.get('field')!r} has no Connect type")
    name = field.get("name")
    params = field.get("parameters") or {}
    kept = tuple((k, str(v)) for k, v in params.items() if not k.startswith("__debezium"))
    kind = _NAME_KINDS.get(name) if name else None
    if kind is None:
        kind = _LITERAL_KINDS.get(ctype, "json_any")
    return Repr(kind, ctype, name, kept)


def type_from_field(field: Mapping[str, Any], r: Repr) -> str:
    """A MySQL type text for a Connect field.

    Exact when Debezium propagated the source type (``column.propagate.source.type``
    adds ``__debezium.source.column.type``/``length``/``scale``); otherwise the
    widest MySQL type that the Connect type can hold (``int16`` -> ``smallint``,
    since Debezium writes both TINYINT and SMALLINT as ``int16``).
    """
    params = field.get("parameters") or {}
    source = params.get(SOURCE_TYPE)
    if source:
        text = _source_type_text(str(source), params.get(SOURCE_LENGTH), params.get(SOURCE_SCALE), r)
        try:
            parse_type(text)
            return text
        except TypeParseError:
            pass
    mysql = _spec(r.kind).mysql
    return mysql if isinstance(mysql, str) else mysql(r)


def _int_type(r: Repr) -> str:
    if r.name == "io.debezium.time.Year":
        return "year"
    return {"int8": "tinyint", "int16": "smallint", "int32": "int"}.get(r.ctype, "bigint")


def _decimal_type(r: Repr) -> str:
    p = dict(r.params)
    if PRECISION not in p and r.scale == 0:
        # Debezium's bigint.unsigned.handling.mode=precise: Decimal, scale 0, no precision.
        return "bigint unsigned"
    return f"decimal({p.get(PRECISION, 65)},{r.scale})"


def _string_type(r: Repr) -> str:
    name = r.name
    allowed = dict(r.params).get("allowed")
    if name == "io.debezium.data.Json":
        return "json"
    if name in ("io.debezium.data.Enum", "io.debezium.data.EnumSet") and allowed is not None:
        labels = ",".join(quote_label(v) for v in allowed.split(",")) if allowed else "''"
        return ("enum(" if name.endswith("Enum") else "set(") + labels + ")"
    if name == "io.debezium.data.Uuid":
        return "char(36)"
    return "varchar"


def _source_type_text(source: str, length: Any, scale: Any, r: Repr) -> str:
    """``DECIMAL`` + length 10 + scale 2 -> ``decimal(10,2)``; ``INT UNSIGNED`` stays put."""
    words = source.strip().split(" ", 1)
    base = words[0].lower()
    rest = (" " + words[1].lower()) if len(words) > 1 else ""
    params = ""
    if "(" in base:
        return source.lower() if not base.startswith(("enum", "set")) else source
    if base in ("enum", "set"):
        allowed = dict(r.params).get("allowed", "")
        params = "(" + ",".join(quote_label(v) for v in allowed.split(",")) + ")" if allowed else "('')"
    elif _has_length(base, length):
        params = (
            f"({length},{scale})"
            if scale is not None and base in ("decimal", "numeric", "float", "double")
            else f"({length})"
        )
    return base + params + rest


def _has_length(base: str, length: Any) -> bool:
    """Does ``__debezium.source.column.length`` belong in the type text?"""
    if length is None or not str(length).isdigit():
        return False
    if base in ("json", "date", "year", "geometry", "point") or "text" in base or "blob" in base:
        return False
    if base in ("datetime", "timestamp", "time"):
        return int(length) <= 6  # the fractional-second precision, not a display size
    return True


# ---------------------------------------------------------------------------
# Value converters: typed (canonical) <-> raw (Debezium JSON).
# ---------------------------------------------------------------------------

_UTC = dt.UTC
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_ONE_US = dt.timedelta(microseconds=1)
#: Room for DECIMAL(65,30) and Postgres numerics: the default context rounds at 28 digits.
_WIDE = Context(prec=400, Emax=999_999, Emin=-999_999)
_F32 = struct.Struct("<f")
_U64 = 1 << 64


def f32_json(v: float) -> float:
    """The double whose shortest text is Java's ``Float.toString`` digits for ``v``.

    Kafka Connect writes ``float32`` fields with Jackson's float output (``3.14``,
    not ``3.140000104904175``); reading the short text back as float32 gives the
    same value, so this loses nothing.
    """
    if not math.isfinite(v):
        return v
    try:
        packed = _F32.pack(v)
    except OverflowError:
        return v
    for digits in (6, 7, 8, 9):
        short = float(f"{v:.{digits}g}")
        if _F32.pack(short) == packed:
            return short
    return v


def unscaled_bytes(n: int) -> bytes:
    """Java ``BigInteger.toByteArray``: minimal big-endian two's complement."""
    bits = n.bit_length() if n >= 0 else (~n).bit_length()
    return n.to_bytes(bits // 8 + 1, "big", signed=True)


def _decimal_from_b64(scale: int) -> Converter:
    neg_scale = -scale

    def decode(v: Any) -> Decimal:
        if isinstance(v, str):
            n = int.from_bytes(base64.b64decode(v), "big", signed=True)
            return Decimal(n).scaleb(neg_scale, _WIDE)
        return _decimal_from_number(v, scale)

    return decode


def _decimal_from_number(v: Any, scale: int) -> Decimal:
    """JsonConverter ``decimal.format=numeric`` (and Flink CDC): a JSON number."""
    d = v if isinstance(v, Decimal) else Decimal(repr(v) if isinstance(v, float) else v)
    if d.as_tuple().exponent != -scale and d.is_finite():
        d = d.quantize(Decimal(1).scaleb(-scale), context=_WIDE)
    return d


def _unscaled(v: Any, scale: int) -> int:
    d = v if isinstance(v, Decimal) else Decimal(v)
    scaled = d.scaleb(scale, _WIDE)
    n = int(scaled)
    if n != scaled:  # more fraction digits than the column scale: round as MySQL would
        n = int(scaled.quantize(Decimal(1), context=_WIDE))
    return n


#: Integer digits a DECIMAL can have (MySQL: 65); beyond, a value is refused, not expanded.
_MAX_DECIMAL_DIGITS = 65


def _decimal_to_b64(scale: int) -> Converter:
    shift = 10**scale

    def encode(v: Any) -> str:
        if isinstance(v, int):
            n = v * shift
        else:
            if v.is_finite() and v.adjusted() > _MAX_DECIMAL_DIGITS:  # 1e100000000: minutes to expand
                raise ValueError(f"decimal {v} has more than {_MAX_DECIMAL_DIGITS} integer digits")
            num, den = v.as_integer_ratio()  # exact and cheaper than scaleb
            n, rem = divmod(num * shift, den)
            if rem:
                n = _unscaled(v, scale)
        bits = n.bit_length() if n >= 0 else (~n).bit_length()
        return base64.b64encode(n.to_bytes(bits // 8 + 1, "big", signed=True)).decode("ascii")

    return encode


def _decimal_to_number(scale: int) -> Converter:
    def encode(v: Any) -> orjson.Fragment:
        d = v if isinstance(v, Decimal) else Decimal(v)
        return orjson.Fragment(format(Decimal(_unscaled(d, scale)).scaleb(-scale, _WIDE), "f"))

    return encode


def _zero(v: str, mt: MySQLType, nullable: bool, epoch_value: Any) -> Any:
    """Debezium: zero dates become null in nullable columns, the epoch otherwise;
    other invalid dates have no number (:class:`ImpossibleTemporal`)."""
    check_zero_date(v, mt)
    return None if nullable else epoch_value


def _date_to_days(nullable: bool, mt: MySQLType) -> Converter:
    def encode(v: Any) -> int | None:
        if isinstance(v, str):
            return _zero(v, mt, nullable, 0)
        return v.toordinal() - _EPOCH_ORDINAL

    return encode


def _days_to_date(v: Any) -> dt.date:
    return dt.date.fromordinal(int(v) + _EPOCH_ORDINAL)


def _datetime_to_epoch(nullable: bool, per_second: int, mt: MySQLType) -> Converter:
    if per_second > 1_000_000:
        mul = per_second // 1_000_000

        def encode_ns(v: Any) -> int | None:
            if isinstance(v, str):
                return _zero(v, mt, nullable, 0)
            return (v - _EPOCH) // _ONE_US * mul

        return encode_ns
    unit = dt.timedelta(microseconds=1_000_000 // per_second)

    def encode(v: Any) -> int | None:
        if isinstance(v, str):
            return _zero(v, mt, nullable, 0)
        return (v - _EPOCH) // unit

    return encode


def _epoch_to_datetime(per_second: int) -> Converter:
    if per_second == 1000:
        return lambda v: _EPOCH + dt.timedelta(milliseconds=v)
    if per_second == 1_000_000:
        return lambda v: _EPOCH + dt.timedelta(microseconds=v)
    return lambda v: _EPOCH + dt.timedelta(microseconds=v // 1000)


def _zoned_decoder(tz: str) -> Converter:
    zone = None if tz == "UTC" else zoneinfo.ZoneInfo(tz)

    def decode(v: Any) -> dt.datetime:
        d = dt.datetime.fromisoformat(v)
        if d.tzinfo is None:
            return d
        return d.astimezone(zone or _UTC).replace(tzinfo=None)

    return decode


def _zoned_encoder(tz: str, nullable: bool, mt: MySQLType) -> Converter:
    zone = None if tz == "UTC" else zoneinfo.ZoneInfo(tz)

    def encode(v: Any) -> str | None:
        if isinstance(v, str):
            return _zero(v, mt, nullable, "1970-01-01T00:00:00Z")
        if v.tzinfo is not None:
            v = v.astimezone(_UTC).replace(tzinfo=None)
        elif zone is not None:
            v = v.replace(tzinfo=zone).astimezone(_UTC).replace(tzinfo=None)
        s = v.isoformat()
        return (s.rstrip("0") if v.microsecond else s) + "Z"

    return encode


def _time_to_int(per_second: int) -> Converter:
    def encode(v: Any) -> int:
        micros = (v.days * 86400 + v.seconds) * 1_000_000 + v.microseconds
        if per_second == 1_000_000:
            return micros
        if per_second > 1_000_000:
            return micros * (per_second // 1_000_000)
        return micros // (1_000_000 // per_second)

    return encode


def _int_to_time(per_second: int) -> Converter:
    if per_second == 1_000_000:
        return lambda v: dt.timedelta(microseconds=v)
    if per_second == 1000:
        return lambda v: dt.timedelta(milliseconds=v)
    return lambda v: dt.timedelta(microseconds=v // 1000)


def _b64(v: Any) -> str:
    return base64.b64encode(v).decode("ascii")


def _unb64(v: Any) -> bytes:
    if isinstance(v, str):
        return base64.b64decode(v)
    if not isinstance(v, (bytes, bytearray, list)):  # bytes(10000010000) would allocate 10 GB of zeros
        raise TypeError(f"expected base64 text, got {type(v).__name__}")
    return bytes(v)


def _bits_encoder(length: int) -> Converter:
    size = (length + 7) // 8

    def encode(v: Any) -> str:
        return base64.b64encode(int(v).to_bytes(size, "little")).decode("ascii")

    return encode


def _bits_decoder(v: Any) -> int:
    """``io.debezium.data.Bits``: the bits in little-endian byte order."""
    return int.from_bytes(base64.b64decode(v), "little")


def _geometry_encoder(point: bool) -> Converter:
    def encode(v: Any) -> dict[str, Any]:
        raw = bytes(v)
        srid = int.from_bytes(raw[:4], "little")
        wkb = raw[4:]
        out: dict[str, Any] = {}
        if point:
            out["x"], out["y"] = _wkb_point(wkb)
        out["wkb"] = _b64(wkb)
        out["srid"] = srid or None
        return out

    return encode


def _wkb_point(wkb: bytes) -> tuple[float, float]:
    fmt = "<dd" if wkb[:1] == b"\x01" else ">dd"
    return struct.unpack_from(fmt, wkb, 5)


def _geometry_decoder(v: Any) -> bytes:
    """MySQL's internal geometry value: 4-byte little-endian SRID, then WKB."""
    srid = v.get("srid") or 0
    return int(srid).to_bytes(4, "little") + base64.b64decode(v["wkb"])


def _vsdecimal_decoder(v: Any) -> Decimal:
    n = int.from_bytes(base64.b64decode(v["value"]), "big", signed=True)
    return Decimal(n).scaleb(-int(v["scale"]), _WIDE)


def _vsdecimal_encoder(v: Any) -> dict[str, Any]:
    d = v if isinstance(v, Decimal) else Decimal(v)
    exponent = d.as_tuple().exponent if d.is_finite() else 0
    assert isinstance(exponent, int)  # only NaN and infinities (excluded) have 'n'/'N'/'F'
    scale = max(0, -exponent)
    return {"scale": scale, "value": _b64(unscaled_bytes(_unscaled(d, scale)))}


def _json_text(v: Any) -> str:
    return v if isinstance(v, str) else orjson.dumps(v).decode()


def _json_value(v: Any) -> Any:
    try:
        return orjson.loads(v)
    except orjson.JSONDecodeError:
        return v


def _unwrap_u64(v: Any) -> int:
    """``bigint.unsigned.handling.mode=long`` wraps values above 2^63-1 negative."""
    return v + _U64 if v < 0 else v


def _wrap_u64(v: Any) -> int:
    v = int(v)
    return v - _U64 if v >= 1 << 63 else v


# ---------------------------------------------------------------------------
# The representation kinds: everything that depends on a Repr's kind, in one table.
# ---------------------------------------------------------------------------

_TEXT_KINDS = (Kind.STRING, Kind.ENUM, Kind.SET, Kind.JSON)
_TEMPORAL = (Kind.DATETIME, Kind.TIMESTAMP)


def _no_target(r: Repr, mt: MySQLType, tz: str) -> Target | None:
    return None


@dataclass(frozen=True, slots=True)
class KindSpec:
    """What one representation kind means.

    ``natural``: the Python type its raw JSON value decodes to on its own (before
    adapting to the column's type). ``decoder(r, tz)``: raw JSON -> that value
    (``None``: as is). ``encoder(r, mt, nullable, tz)``: typed value of a ``mt``
    column -> raw JSON (``None``: as is). ``mysql``: the MySQL type of a field that
    says no more (text, or a function of the Repr). ``target(r, mt, tz)``: the
    :class:`~transforms.model.Target` the encoder renders typed values as, if any.
    ``signature``: the Repr attribute that, with the kind, decides the raw JSON.
    ``struct``: the Connect struct fields and doc of struct kinds. ``scale_sensitive``:
    equal typed values may encode differently (``1.5`` vs ``1.50``).
    """

    natural: type
    decoder: Callable[[Repr, str], Converter | None]
    encoder: Callable[[Repr, MySQLType, bool, str], Converter | None]
    mysql: str | Callable[[Repr], str]
    target: Callable[[Repr, MySQLType, str], Target | None] = _no_target
    signature: str | None = None
    struct: tuple[list[dict[str, Any]], str] | None = None
    scale_sensitive: bool = False


def _fixed(fn: Converter | None) -> Callable[[Repr, str], Converter | None]:
    """A decoder that depends on nothing but the kind."""
    return lambda r, tz: fn


def _writes(fn: Converter | None) -> Callable[[Repr, MySQLType, bool, str], Converter | None]:
    """An encoder that depends on nothing but the kind."""
    return lambda r, mt, nullable, tz: fn


def _int_encoder(r: Repr, mt: MySQLType, nullable: bool, tz: str) -> Converter | None:
    if mt.base == "bigint" and mt.unsigned and r.ctype == "int64":
        return _wrap_u64
    return None if mt.kind in (Kind.INT, Kind.YEAR) else int


def _int_target(r: Repr, mt: MySQLType, tz: str) -> Target | None:
    if mt.base == "bigint" and mt.unsigned and r.ctype == "int64":
        return Target("int64")
    return Target("int") if mt.kind is Kind.INT or mt.kind is Kind.YEAR else None


def _string_encoder(r: Repr, mt: MySQLType, nullable: bool, tz: str) -> Converter | None:
    if mt.kind is Kind.DECIMAL:
        scale = mt.scale
        return lambda v: format_decimal(v if isinstance(v, Decimal) else Decimal(v), scale)
    return None if mt.kind in _TEXT_KINDS else str


def _when(kinds: tuple[Kind, ...], target: Target) -> Callable[[Repr, MySQLType, str], Target | None]:
    """A target for columns of these kinds only."""
    return lambda r, mt, tz: target if mt.kind in kinds else None


def _epoch(per_second: int, target: str) -> KindSpec:
    """A datetime as an epoch count (Debezium Timestamp / MicroTimestamp / NanoTimestamp)."""
    return KindSpec(
        dt.datetime,
        _fixed(_epoch_to_datetime(per_second)),
        lambda r, mt, nullable, tz: _datetime_to_epoch(nullable, per_second, mt),
        "datetime" if per_second == 1000 else "datetime(6)",
        _when(_TEMPORAL, Target(target)) if target else _when((), TYPED),
    )


def _time(per_second: int) -> KindSpec:
    """A TIME as a count of (milli/micro/nano)seconds."""
    return KindSpec(
        dt.timedelta,
        _fixed(_int_to_time(per_second)),
        _writes(_time_to_int(per_second)),
        "time(3)" if per_second == 1000 else "time(6)",
    )


def _binary(decode: Converter, encode: Converter) -> KindSpec:
    return KindSpec(bytes, _fixed(decode), _writes(encode), "varbinary(65535)")  # parse_type("varbinary") fails


def _geometry(point: bool) -> KindSpec:
    return KindSpec(
        bytes,
        _fixed(_geometry_decoder),
        _writes(_geometry_encoder(point)),
        "point" if point else "geometry",
        struct=(_POINT_FIELDS, "Geometry (POINT)") if point else (_GEOMETRY_FIELDS, "Geometry"),
    )


_GEOMETRY_FIELDS = [
    {"type": "bytes", "optional": False, "field": "wkb"},
    {"type": "int32", "optional": True, "field": "srid"},
]
_POINT_FIELDS = [
    {"type": "double", "optional": False, "field": "x"},
    {"type": "double", "optional": False, "field": "y"},
    {"type": "bytes", "optional": True, "field": "wkb"},
    {"type": "int32", "optional": True, "field": "srid"},
]

#: Representation kind -> what it means (see :class:`KindSpec`).
KINDS: dict[str, KindSpec] = {
    "int": KindSpec(int, _fixed(None), _int_encoder, _int_type, _int_target, signature="ctype"),
    "float32": KindSpec(float, _fixed(lambda v: float32(float(v))), _writes(lambda v: f32_json(float(v))), "float"),
    "float64": KindSpec(float, _fixed(float), _writes(float), "double", _when((Kind.FLOAT,), Target("float"))),
    "bool": KindSpec(
        bool,
        _fixed(bool),
        _writes(bool),
        "bit(1)",
        lambda r, mt, tz: Target("bool") if mt.kind is Kind.BIT and (mt.length or 1) == 1 else None,
    ),
    "string": KindSpec(str, _fixed(None), _string_encoder, _string_type, _when(_TEXT_KINDS, Target("str"))),
    "bytes": _binary(_unb64, _b64),
    "b64": _binary(_unb64, _b64),
    "b64url": _binary(lambda v: base64.urlsafe_b64decode(v), lambda v: base64.urlsafe_b64encode(v).decode("ascii")),
    "hex": _binary(binascii.unhexlify, lambda v: bytes(v).hex()),
    "decimal": KindSpec(
        Decimal,
        lambda r, tz: _decimal_from_b64(r.scale),
        lambda r, mt, nullable, tz: _decimal_to_b64(r.scale),
        _decimal_type,
        lambda r, mt, tz: (
            Target("unscaled_b64", scale=r.scale) if mt.kind is Kind.DECIMAL or mt.kind is Kind.INT else None
        ),
        signature="scale",
    ),
    "decimal_num": KindSpec(
        Decimal,
        lambda r, tz: _decimal_from_b64(r.scale),
        lambda r, mt, nullable, tz: _decimal_to_number(r.scale),
        _decimal_type,
        signature="scale",
    ),
    "vsdecimal": KindSpec(
        Decimal, _fixed(_vsdecimal_decoder), _writes(_vsdecimal_encoder), "decimal(65,30)", scale_sensitive=True
    ),
    "bits": KindSpec(
        int,
        _fixed(_bits_decoder),
        lambda r, mt, nullable, tz: _bits_encoder(r.length or (mt.length or 1)),
        lambda r: f"bit({r.length or 64})",
        signature="length",
    ),
    "date": KindSpec(
        dt.date,
        _fixed(_days_to_date),
        lambda r, mt, nullable, tz: _date_to_days(nullable, mt),
        "date",
        _when((Kind.DATE,), Target("epoch_days")),
    ),
    "ts_ms": _epoch(1000, "epoch_ms"),
    "ts_us": _epoch(1_000_000, "epoch_us"),
    "ts_ns": _epoch(1_000_000_000, ""),
    "zoned": KindSpec(
        dt.datetime,
        lambda r, tz: _zoned_decoder(tz),
        lambda r, mt, nullable, tz: _zoned_encoder(tz, nullable, mt),
        "timestamp",
        lambda r, mt, tz: Target("iso_utc", tz=tz) if mt.kind in _TEMPORAL else None,
    ),
    "time_ms": _time(1000),
    "time_us": _time(1_000_000),
    "time_ns": _time(1_000_000_000),
    "geometry": _geometry(point=False),
    "point": _geometry(point=True),
    #: Any other Connect type: the JSON value as JSON text.
    "json_any": KindSpec(str, _fixed(_json_text), _writes(_json_value), "json"),
}


def _spec(kind: str) -> KindSpec:
    return KINDS.get(kind) or KINDS["json_any"]


def _adapter(natural: type, mt: MySQLType) -> Converter | None:
    """Coerce a representation's natural value to the column's typed value."""
    k = mt.kind
    if k is Kind.INT or k is Kind.YEAR:
        if mt.base == "bigint" and mt.unsigned and natural is int:
            return _unwrap_u64
        return None if natural is int else int
    if k is Kind.DECIMAL:
        if natural is Decimal:
            return None
        return (lambda v: Decimal(repr(v))) if natural is float else Decimal
    if k is Kind.FLOAT:
        return None if natural is float else float
    if k is Kind.BIT:
        want = bool if (mt.length or 1) == 1 else int
        return None if natural is want else want
    if k in (Kind.STRING, Kind.ENUM, Kind.SET, Kind.JSON):
        return None if natural is str else _json_text
    return None


def make_decoder(r: Repr, mt: MySQLType, tz: str) -> Converter | None:
    """raw -> typed for one column, or None when the raw value already is typed."""
    spec = _spec(r.kind)
    raw = spec.decoder(r, tz)
    adapt = _adapter(spec.natural, mt)
    if adapt is None:
        return raw
    if raw is None:
        return adapt
    return lambda v: adapt(raw(v))


def make_encoder(r: Repr, mt: MySQLType, nullable: bool, tz: str) -> Converter | None:
    """typed -> raw for one column, or None when the typed value is written as is."""
    return _spec(r.kind).encoder(r, mt, nullable, tz)


# ---------------------------------------------------------------------------
# Connect field schemas.
# ---------------------------------------------------------------------------


def field_schema(name: str, r: Repr, optional: bool) -> dict[str, Any]:
    """The Connect field schema Debezium writes for one column."""
    out: dict[str, Any] = {"type": r.ctype, "optional": optional}
    struct = _spec(r.kind).struct
    if struct is not None:
        out["fields"], out["doc"] = struct
    if r.name:
        out["name"] = r.name
        out["version"] = 1
    if r.params:
        out["parameters"] = dict(r.params)
    out["field"] = name
    return out


# ---------------------------------------------------------------------------
# Plans: everything per table that the hot path needs, built once.
# ---------------------------------------------------------------------------


class DebeziumForm:
    """The raw value form of one Debezium table layout (see ``ValueForm``).

    Its ``name`` encodes every column's representation, so an encoder whose
    plan has the same name can write the raw values without converting them.
    """

    __slots__ = ("name", "decoders", "names", "by_type")

    def __init__(
        self, name: str, decoders: dict[str, Converter], names: frozenset[str], by_type: dict[str, Converter | None]
    ) -> None:
        self.name = name
        self.decoders = decoders
        self.names = names
        self.by_type = by_type

    def to_python(self, column: Column, raw: Any) -> Any:
        name = column.name
        if name in self.names:
            fn = self.decoders.get(name)
        else:  # renamed by a transform that left the values raw: same type, same representation
            fn = self.by_type.get(column.type)
        return raw if fn is None else fn(raw)

    def reader(self, column: Column) -> Converter:
        """``to_python(column, ·)`` resolved once for the column."""
        name = column.name
        fn = self.decoders.get(name) if name in self.names else self.by_type.get(column.type)
        return fn if fn is not None else _same

    def __repr__(self) -> str:
        return f"DebeziumForm({self.name!r})"


@dataclass(frozen=True, slots=True)
class FieldPlan:
    """One column: its model column, representation and Connect field schema."""

    column: Column
    repr: Repr
    schema: dict[str, Any]


class Plan:
    """Per-table converters, Connect value fields and raw form, built once.

    ``encoders``/``decoders`` hold only the columns that need converting;
    ``form`` is ``None`` when raw values already are typed values.
    """

    __slots__ = (
        "table_schema",
        "fields",
        "encoders",
        "encoder_items",
        "decoders",
        "form",
        "signature",
        "value_fields",
        "numeric_decimals",
        "tz",
        "pair_items",
        "raw_plans",
        "__weakref__",
    )

    def __init__(self, fields: Iterable[FieldPlan], primary_key: tuple[str, ...], tz: str) -> None:
        self.fields = tuple(fields)
        self.tz = tz
        self.table_schema = TableSchema(columns=tuple(f.column for f in self.fields), primary_key=primary_key)
        self.value_fields = [f.schema for f in self.fields]
        enc: dict[str, Converter] = {}
        dec: dict[str, Converter] = {}
        for f in self.fields:
            mt = f.column.mysql
            e = make_encoder(f.repr, mt, f.column.nullable, tz)
            d = make_decoder(f.repr, mt, tz)
            if e is not None:
                enc[f.column.name] = e
            if d is not None:
                dec[f.column.name] = d
        self.encoders = enc
        self.encoder_items = tuple(enc.items())
        #: (name, encoder, may an equal before-value reuse the after-value's result?)
        self.pair_items = tuple(
            (f.column.name, enc[f.column.name], not _spec(f.repr.kind).scale_sensitive)
            for f in self.fields
            if f.column.name in enc
        )
        #: Compiled raw-form converters of source value forms (see :meth:`raw_plan`).
        self.raw_plans: dict[Any, RawPlan] = {}
        self.decoders = dec
        self.numeric_decimals = tuple(f.column.name for f in self.fields if f.repr.kind == "decimal")
        sig = tuple((f.column.name, f.repr.signature(), f.column.nullable) for f in self.fields)
        digest = hashlib.blake2b(repr(sig).encode(), digest_size=10).hexdigest()
        self.signature = f"debezium-json/{digest}"
        by_type: dict[str, Converter | None] = {}
        for f in self.fields:
            by_type.setdefault(f.column.type, dec.get(f.column.name))
        self.form = (
            DebeziumForm(self.signature, dec, frozenset(f.column.name for f in self.fields), by_type) if dec else None
        )

    def encode_row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        """typed row -> Debezium JSON row (columns the plan lacks are written as is)."""
        out = dict(row)
        name = ""
        try:
            for name, fn in self.encoder_items:
                v = out.get(name)
                if v is not None:
                    out[name] = fn(v)
        except ImpossibleTemporal as exc:
            raise EncodeError(f"column {name}: {exc}", format="debezium-json") from None
        return out

    def encode_pair(self, before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Both images of an update; unchanged values are converted once.

        An equal before-value reuses the after-value's result only when equal
        values have equal results: not for signed zeros (``-0.0 == 0.0``) and not
        for variable-scale decimals (``1.5 == 1.50``)."""
        b = dict(before)
        a = dict(after)
        name = ""
        try:
            for name, fn, reuse_equal in self.pair_items:
                av = a.get(name)
                if av is not None:
                    a[name] = fn(av)
                bv = b.get(name)
                if bv is not None:
                    if av is not None and (bv is av or (reuse_equal and _same_result(bv, av))):
                        b[name] = a[name]
                    else:
                        b[name] = fn(bv)
        except ImpossibleTemporal as exc:
            raise EncodeError(f"column {name}: {exc}", format="debezium-json") from None
        return b, a

    def raw_plan(self, form: Any) -> RawPlan:
        """The compiled conversion of raw values of ``form`` to this plan's representations."""
        rp = self.raw_plans.get(form)
        if rp is None:
            if len(self.raw_plans) >= 64:
                self.raw_plans.clear()
            rp = self.raw_plans[form] = RawPlan(self, form)
        return rp


def _same_result(bv: Any, av: Any) -> bool:
    """Equal typed values of one type that encode alike (signed zeros do not)."""
    t = bv.__class__
    if t is not av.__class__ or bv != av:
        return False
    return (t is not float and t is not Decimal) or bool(av)


def target_for(r: Repr, mt: MySQLType, tz: str) -> Target | None:
    """The :class:`~transforms.model.Target` that the encoder of ``r`` renders typed
    values of ``mt`` as (for values that are not zero dates), or ``None``."""
    return _spec(r.kind).target(r, mt, tz)


class RawPlan:
    """Raw values of one source value form -> one plan's Debezium JSON values, per column.

    Each column gets the form's converter straight to the plan's rendering when
    the form has one (``ValueForm.converter``), else the form's compiled typed
    conversion followed by the plan's encoder, else ``to_python`` followed by the
    encoder. Values a converter does not handle, and values not of the form's
    ``raw_type``, take ``to_python`` + encoder: the result is always what
    typing the event and encoding it gives. Errors propagate; callers then take
    the typed path so errors read the same.
    """

    __slots__ = ("steps", "raw_type")

    def __init__(self, plan: Plan, form: Any) -> None:
        raw_type = getattr(form, "raw_type", None)
        converter = getattr(form, "converter", None) if raw_type is not None else None
        to_python = form.to_python
        steps = []
        for f in plan.fields:
            col = f.column
            enc = plan.encoders.get(col.name)
            slow = _compose(enc, functools.partial(to_python, col))
            fast = None
            if converter is not None:
                target = target_for(f.repr, col.mysql, plan.tz)
                if target is not None:
                    fast = converter(col, target)
                if fast is None:
                    parse = converter(col, TYPED)
                    if parse is not None:
                        fast = _compose(enc, parse)
            if fast is None:
                fast = slow
            elif fast is str and raw_type is str:
                fast = None  # str(text) is the text: nothing to do
            steps.append((col.name, fast, slow))
        self.steps = tuple(steps)
        self.raw_type = raw_type

    def row(self, image: Mapping[str, Any]) -> dict[str, Any]:
        """One raw image -> Debezium JSON row (columns the plan lacks are written as is)."""
        out = dict(image)
        rt = self.raw_type
        for name, fast, slow in self.steps:
            v = out.get(name)
            if v.__class__ is rt:
                if fast is not None:
                    try:
                        out[name] = fast(v)
                    except Exception:  # noqa: BLE001 - not a value the converter handles
                        out[name] = slow(v)
            elif v is not None:
                out[name] = slow(v)
        return out

    def pair(self, before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Both raw images of an update; values the images share are converted once."""
        a = dict(after)
        b = dict(before)
        rt = self.raw_type
        for name, fast, slow in self.steps:
            av = a.get(name)
            if av.__class__ is rt:
                if fast is not None:
                    try:
                        a[name] = fast(av)
                    except Exception:  # noqa: BLE001
                        a[name] = slow(av)
            elif av is not None:
                a[name] = slow(av)
            bv = b.get(name)
            if bv is None:
                continue
            if bv is av or (bv.__class__ is rt and bv == av):  # same raw value, same result
                b[name] = a[name]
            elif bv.__class__ is rt:
                if fast is not None:
                    try:
                        b[name] = fast(bv)
                    except Exception:  # noqa: BLE001
                        b[name] = slow(bv)
            else:
                b[name] = slow(bv)
        return b, a


def _same(v: Any) -> Any:
    return v


def _compose(enc: Converter | None, first: Converter) -> Converter:
    if enc is None:
        return first

    def composed(v: Any) -> Any:
        typed = first(v)  # a raw value may read as NULL (a SQL NULL literal): it stays None
        return None if typed is None else enc(typed)

    return composed


def plan_for_schema(schema: TableSchema, opts: ConnectOptions, tz: str) -> Plan:
    """The plan Debezium's MySQL connector would use for ``schema`` under ``opts``."""
    fields = []
    for col in schema.columns:
        r = repr_for_type(col.mysql, opts)
        fields.append(FieldPlan(col, r, field_schema(col.name, r, col.nullable)))
    return Plan(fields, schema.primary_key, tz)


def plan_for_fields(
    value_fields: list[dict[str, Any]],
    primary_key: tuple[str, ...],
    tz: str,
    opts: ConnectOptions,
    numeric: bool = False,
) -> Plan:
    """The plan for a Connect value struct read from a message's schema part.

    ``numeric``: decimals arrived as JSON numbers (JsonConverter
    ``decimal.format=numeric``, Flink CDC) rather than base64 strings.
    """
    fields = []
    pk = set(primary_key)
    for f in value_fields:
        name = f["field"]
        r = repr_from_field(f)
        if numeric and r.kind == "decimal":
            r = Repr("decimal_num", r.ctype, r.name, r.params)
        type_text = type_from_field(f, r)
        mt = parse_type(type_text)
        if mt.kind is Kind.BYTES and r.kind == "string":
            # A binary column under binary.handling.mode=base64/hex (known only from the source type).
            kind = _BINARY_KINDS[opts.binary_handling_mode]
            r = Repr("b64" if kind == "bytes" else kind, r.ctype, r.name, r.params)
        optional = f.get("optional", True) is not False
        col = Column(name, type_text, nullable=optional, primary_key=name in pk)
        fields.append(FieldPlan(col, r, f))
    return Plan(fields, tuple(k for k in primary_key if any(fp.column.name == k for fp in fields)), tz)


__all__ = [
    "BIGINT_UNSIGNED_MODES",
    "BINARY_MODES",
    "ConnectOptions",
    "DECIMAL_FORMATS",
    "DECIMAL_MODES",
    "DebeziumForm",
    "FieldPlan",
    "Plan",
    "RawPlan",
    "Repr",
    "TIME_MODES",
    "f32_json",
    "field_schema",
    "make_decoder",
    "make_encoder",
    "plan_for_fields",
    "plan_for_schema",
    "repr_for_type",
    "repr_from_field",
    "target_for",
    "type_from_field",
    "unscaled_bytes",
]
