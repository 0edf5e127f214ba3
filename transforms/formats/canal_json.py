"""``canal-json``: Alibaba Canal's flat message (``FlatMessage`` as JSON).

Message
-------
A message is one binlog rows event: ``data`` holds each row of it (decoded as
one event per row, in order), ``type`` the operation, ``mysqlType`` the exact
column types (with parameters), ``sqlType`` JDBC codes, ``pkNames`` the key,
``es`` the binlog execute time and ``ts`` the build time (epoch ms). On UPDATE
``old`` holds, per row, only the columns that changed with their previous
values (a ``null`` there is an old NULL, not "unchanged"); the full
before-image is ``data`` overlaid with ``old``.

``INSERT``/``UPDATE``/``DELETE`` are rows, ``INIT`` a snapshot read;
``CREATE``/``ALTER``/``ERASE``/``RENAME``/``QUERY``/``CINDEX``/``DINDEX`` are
DDL (``sql`` holds the statement, ``ddl_kind`` the type) and ``TRUNCATE`` a
TRUNCATE event carrying its statement, so replay empties the table. CloudCanal
adds ``tableChanges`` to DDL; it becomes the event's schema.

Values (:class:`CanalText`)
---------------------------
Canal writes each value as a string, the way its binlog parser prints it
(``RowsLogBuffer`` / ``LogEventConvert``); decoded events keep those strings
(``event.values``) so canal -> canal copies them untouched:

* integers in decimal, unsigned ones as the unsigned number;
* DECIMAL as ``BigDecimal.toPlainString`` (column scale);
* FLOAT/DOUBLE as Java ``Float``/``Double.toString`` (``1.5``, ``1.0E10``);
  FLOAT values are typed as the 32-bit float MySQL stores;
* ENUM as the 1-based index of the label (``0`` for the invalid empty value),
  SET as the bitmask, BIT as the unsigned number (BIT(1): ``0``/``1``);
* BINARY/VARBINARY/BLOB and geometry as ISO-8859-1 text, one char per byte
  (geometry: 4-byte SRID + WKB); TEXT types and JSON as text;
* DATE ``YYYY-MM-DD``, DATETIME/TIMESTAMP ``YYYY-MM-DD HH:MM:SS[.f]`` with
  exactly fsp digits, TIME ``[-]HH:MM:SS[.f]``, YEAR ``YYYY`` (``0000``);
  zero dates stay text.

TIMESTAMP text is wall-clock in the Canal server's zone: set
``source_timezone`` ("8 hours off" otherwise). DATETIME is never shifted.

For speed :class:`CanalText` also offers per-column compiled converters
(``converter``: text straight to what an encoder writes, e.g. Debezium's epoch
milliseconds or base64 decimals, see ``transforms.model.Target``) and writers
(``text_writer``: typed value to text); both give exactly what ``to_python`` /
``to_text`` give and hand anything unusual back to them.

``sqlType`` follows Canal's rules, which depend on the value: NULL text/blob
columns get the binlog type's code (TINYTEXT/TINYBLOB -3, other TEXT/BLOB -4,
BINARY -2, VARBINARY -3, SET -2, geometry -2, JSON 1111), non-NULL ones CLOB
2005 / BLOB 2004 / SET -7 / JSON 12; unsigned integers above the signed range
move to the next wider code. The map is the one of the message's last row.

Reproduction
------------
Decoded events keep the message's other fields in ``event.extra["message"]``
(shared by the rows of a message: read-only) and the keys of their ``old`` row
in ``event.extra["old"]``; this encoder reuses them when ``event.origin`` is
its name. ``source.row`` is the row's index in its message.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from functools import lru_cache
from typing import Any, ClassVar

import orjson

from cdc_smt.transforms.errors import DecodeError, EncodeError
from cdc_smt.transforms.formats.base import Capabilities, JsonCodec, describe_error, guard, record_headers
from cdc_smt.transforms.inference import RULES, UNKNOWN, json_columns, python_columns
from cdc_smt.transforms.model import (
    TOMBSTONE,
    UNWRAPPED,
    ChangeEvent,
    Column,
    IdentityCache,
    Op,
    Record,
    SourcePosition,
    TableSchema,
    Target,
    compiled,
    typed_reader,
)
from cdc_smt.transforms.options import Option
from cdc_smt.transforms.sqltext import classify_ddl, text_of
from cdc_smt.transforms.types import (
    InvalidTemporal,
    Kind,
    MySQLType,
    TypeParseError,
    float32,
    format_decimal,
    format_time,
    from_text,
    parse_type,
    rebase_timestamp,
    set_bits_from_labels,
    set_labels_from_bits,
    text_converter,
    to_text,
    type_from_jdbc,
)

ROW_TYPES: dict[str, Op] = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE, "INIT": Op.READ}
DDL_TYPES: frozenset[str] = frozenset({"CREATE", "ALTER", "ERASE", "RENAME", "QUERY", "TRUNCATE", "CINDEX", "DINDEX"})
#: Column type of columns whose ``mysqlType`` cannot be parsed and that have no ``sqlType``.
UNKNOWN_TYPE = UNKNOWN
#: How Canal values without types read as column types (see ``transforms.inference``).
_RULES = RULES["canal-json"]
_MISSING = object()


# ---------------------------------------------------------------------------
# numbers as Java and Go print them
# ---------------------------------------------------------------------------


def _shortest(v: float, single: bool) -> str:
    """The shortest decimal text that reads back as ``v`` (as float32 if ``single``)."""
    if not single:
        return repr(v)
    for p in range(1, 10):
        s = f"{v:.{p}g}"
        if float32(float(s)) == v:
            return s
    return repr(v)


def java_float_text(v: float, single: bool = False) -> str:
    """``Float.toString`` (``single``) / ``Double.toString``: plain notation for
    1e-3 <= |v| < 1e7, else ``d.dddE[-]n``; always a fractional digit."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    sign = "-" if v < 0 else ""
    a = abs(v)
    if not single and 1e-3 <= a < 1e7:
        return sign + repr(a)  # Python's shortest repr is plain here, with Java's ".0" for integers
    d = Decimal(_shortest(a, single)).normalize()
    if 1e-3 <= a < 1e7:
        text = format(d, "f")
        return sign + (text if "." in text else text + ".0")
    digits = d.as_tuple().digits
    point = d.adjusted()  # exponent of the first digit
    ds = "".join(map(str, digits))
    if len(ds) == 1:  # Java prints the closest two-digit value: 1.4E-45, not 1.0E-45
        two = f"{a:.1e}"
        ds, point = two[0] + two[2], int(two[4:])
    return f"{sign}{ds[0]}.{ds[1:]}E{point}"


def go_float_text(v: float, single: bool = False) -> str:
    """Go's ``strconv.FormatFloat(v, 'f', -1, 32|64)``: shortest digits, no exponent."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return format(Decimal(_shortest(v, single)).normalize(), "f")


# ---------------------------------------------------------------------------
# Canal's value form
# ---------------------------------------------------------------------------


class CanalText:
    """Canal's raw values: MySQL text as Canal's binlog parser prints it (module docstring)."""

    name = "canal-text"
    #: Canal's regular raw values are strings (Canal-compatible writers may put JSON numbers).
    raw_type = str

    # -- raw -> rendering (compiled per column, see ``transforms.model.ValueForm``) ----
    def converter(self, column: Column, target: Target) -> Callable[[str], Any] | None:
        """A function from this form's text to ``target``'s rendering of the typed value
        (MySQL text as ``from_text`` reads it, except ENUM indexes, SET bitmasks and FLOAT)."""
        t = column.mysql
        kind = t.kind
        if kind is Kind.ENUM or kind is Kind.SET:
            if target.kind != "typed" and target.kind != "str":
                return None
            if not t.values:
                return str  # no labels: the text is all there is
            return _enum_table(t).__getitem__ if kind is Kind.ENUM else None
        if kind is Kind.FLOAT:
            single = t.is_single_float
            return float if not single and target.kind in ("typed", "float") else None
        return text_converter(t, target)

    # -- raw -> typed -------------------------------------------------------
    def to_python(self, column: Column, raw: Any) -> Any:
        t = column.mysql
        if not isinstance(raw, str):  # Canal-compatible writers (Flink) put JSON numbers here
            raw = _scalar_text(raw)
        try:
            kind = t.kind
            if kind is Kind.ENUM:
                return _enum_label(t, raw)
            if kind is Kind.SET:
                return _set_labels(t, raw)
            if kind is Kind.FLOAT:
                v = float(raw)
                if not t.is_single_float:
                    return v
                single = float32(v)
                if math.isinf(single) and not math.isinf(v):
                    raise ValueError("beyond the range of FLOAT")
                return single
            return from_text(t, raw)
        except (ValueError, ArithmeticError, OverflowError) as exc:
            raise ValueError(f"column {column.name!r} ({column.type}): cannot read {raw!r}: {exc}") from None

    # -- typed -> raw -------------------------------------------------------
    def to_text(self, column: Column, v: Any) -> str:
        t = column.mysql
        kind = t.kind
        if isinstance(v, InvalidTemporal):
            return str(v)
        if kind is Kind.ENUM:
            return _enum_index(t, v)
        if kind is Kind.SET:
            return _set_bits(t, v)
        if kind is Kind.FLOAT:
            return self.float_text(float(v), t.is_single_float)
        if kind is Kind.DECIMAL:
            return self.decimal_text(t, v if isinstance(v, Decimal) else Decimal(str(v)))
        if kind is Kind.YEAR:
            return self.year_text(int(v))
        if kind is Kind.BIT or kind is Kind.INT:
            return str(int(v))
        if (kind is Kind.BYTES or kind is Kind.GEOMETRY) and isinstance(v, str):
            return v
        return to_text(t, v)

    def text_writer(self, column: Column) -> Callable[[Any], str]:
        """``to_text(column, v)`` as a one-argument function specialised for the column's
        type (same results, same errors: values of unexpected types take ``to_text``)."""
        to_text = self.to_text

        def reference(v: Any) -> str:
            return to_text(column, v)

        t = column.mysql
        kind = t.kind
        if kind is Kind.INT or kind is Kind.BIT:
            return lambda v: str(v) if v.__class__ is int else to_text(column, v)
        if kind is Kind.STRING or kind is Kind.JSON:
            return lambda v: v if v.__class__ is str else to_text(column, v)
        if kind is Kind.ENUM and t.values:
            index = _enum_index_table(t)

            def write_enum(v: Any) -> str:
                text = index.get(v) if v.__class__ is str else None
                return text if text is not None else to_text(column, v)

            return write_enum
        if kind is Kind.FLOAT:
            float_text, single = self.float_text, t.is_single_float
            return lambda v: float_text(v, single) if v.__class__ is float else to_text(column, v)
        if kind is Kind.DECIMAL:
            decimal_text = self.decimal_text
            return lambda v: decimal_text(t, v) if v.__class__ is Decimal else to_text(column, v)
        if kind is Kind.DATETIME or kind is Kind.TIMESTAMP:
            fsp = t.fsp

            def write_datetime(v: Any) -> str:
                if v.__class__ is not dt.datetime or v.tzinfo is not None:
                    return to_text(column, v)
                text = v.isoformat(" ", "seconds")  # format_datetime's text, without strftime
                us = v.microsecond
                if fsp:
                    return text + "." + f"{us:06d}"[:fsp]
                return text + "." + f"{us:06d}".rstrip("0") if us else text

            return write_datetime
        if kind is Kind.DATE:
            return lambda v: v.isoformat() if v.__class__ is dt.date else to_text(column, v)
        if kind is Kind.TIME:
            fsp = t.fsp
            return lambda v: format_time(v, fsp) if v.__class__ is dt.timedelta else to_text(column, v)
        if kind is Kind.BYTES or kind is Kind.GEOMETRY:
            return lambda v: v.decode("latin-1") if v.__class__ is bytes else to_text(column, v)
        return reference

    def float_text(self, v: float, single: bool) -> str:
        return java_float_text(v, single)

    def decimal_text(self, t: MySQLType, v: Decimal) -> str:
        return format_decimal(v, t.scale)

    def year_text(self, year: int) -> str:
        return "0000" if year == 0 else str(year)


def _scalar_text(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (dict, list)):
        return orjson.dumps(v).decode()
    return str(v)


def _enum_label(t: MySQLType, raw: str) -> str:
    labels = t.values
    if not labels:  # type without labels (TiCDC): the index is all there is
        return raw
    if not raw.isdigit():
        if raw in labels:  # some Canal-compatible writers send the label
            return raw
        raise ValueError("not an enum index")
    i = int(raw)
    if i == 0:
        return ""
    if i > len(labels):
        raise ValueError(f"enum index {i} > {len(labels)} labels")
    return labels[i - 1]


@lru_cache(maxsize=1024)
def _enum_table(t: MySQLType) -> dict[str, str]:
    """``_enum_label``'s answers for the usual texts: the 1-based indexes (``"0"`` is
    the empty value) and labels that cannot be read as an index."""
    table = {label: label for label in t.values if not label.isdigit()}
    table["0"] = ""
    for i, label in enumerate(t.values, 1):
        table[str(i)] = label
    return table


@lru_cache(maxsize=1024)
def _enum_index_table(t: MySQLType) -> dict[str, str]:
    """``_enum_index``'s answers for the labels (the first of equal labels wins; "" is 0)."""
    table: dict[str, str] = {}
    for i, label in enumerate(t.values, 1):
        table.setdefault(label, str(i))
    table[""] = "0"
    return table


def _set_labels(t: MySQLType, raw: str) -> str:
    if not t.values:
        return raw
    if raw.isdigit():
        bits = int(raw)
        if bits >> len(t.values):
            raise ValueError(f"set bitmask {bits} has bits beyond {len(t.values)} labels")
        return set_labels_from_bits(t, bits)
    _check_labels(t, raw)
    return raw


def _check_labels(t: MySQLType, text: str) -> None:
    unknown = [p for p in text.split(",") if p not in t.values] if text else []
    if unknown:
        raise ValueError(f"{unknown[0]!r} is not a label of {t.text()}")


def _enum_index(t: MySQLType, v: Any) -> str:
    if not t.values:
        return str(v)
    if v == "":
        return "0"
    try:
        return str(t.values.index(v) + 1)
    except ValueError:
        raise ValueError(f"{v!r} is not a label of {t.text()}") from None


def _set_bits(t: MySQLType, v: Any) -> str:
    if not t.values:
        return str(v)
    _check_labels(t, v)
    return str(set_bits_from_labels(t, v))


CANAL_TEXT = CanalText()


# ---------------------------------------------------------------------------
# JDBC codes as official Canal assigns them (value-dependent, see docstring)
# ---------------------------------------------------------------------------

_NULL_CODE = {"binary": -2, "varbinary": -3, "tinyblob": -3, "tinytext": -3}


def canal_sql_type(t: MySQLType, text: Any) -> int:
    """Canal's ``sqlType`` for one column given the row's value text (None = NULL)."""
    kind = t.kind
    null = text is None
    if kind is Kind.INT:
        return t.jdbc_type(None if null or not t.unsigned else int(text))
    if kind is Kind.STRING:
        if t.base == "char":
            return 1
        if t.base == "varchar":
            return 12
        return _NULL_CODE.get(t.base, -4) if null else 2005
    if kind is Kind.BYTES:
        return _NULL_CODE.get(t.base, -4) if null else 2004
    if kind is Kind.GEOMETRY:
        return -2 if null else 2004
    if kind is Kind.SET:
        return -2 if null else -7
    if kind is Kind.JSON:
        return 1111 if null else 12
    return _CODES[kind] if kind is not Kind.FLOAT else (7 if t.base == "float" else 8)


_CODES = {
    Kind.DECIMAL: 3, Kind.BIT: -7, Kind.DATE: 91, Kind.DATETIME: 93, Kind.TIMESTAMP: 93, Kind.TIME: 92, Kind.YEAR: 12,
    Kind.ENUM: 4,
}  # fmt: skip


def ddl_type(sql: str | None, kind: str | None = None) -> str:
    """Canal's ``type`` for a DDL event: its own kind when that is a Canal type, else from the statement."""
    if kind and kind.upper() in DDL_TYPES:
        return kind.upper()
    return classify_ddl(sql or "")


# ---------------------------------------------------------------------------
# the codec
# ---------------------------------------------------------------------------


class CanalJson(JsonCodec):
    """Official Alibaba Canal flat messages; TiCDC's dialect subclasses this."""

    name = "canal-json"
    description = (
        "Alibaba Canal flat message (canal-json): row batches with mysqlType/sqlType, changed-columns-only old"
    )
    options: ClassVar[tuple[Option, ...]] = (
        Option(
            "batch",
            str,
            "row",
            "Encoder: 'row' writes one row per message; 'transaction' writes consecutive rows of one "
            "table, operation and transaction as one message, as Canal does (needs the batch encode path).",
            choices=("row", "transaction"),
        ),
    )
    # before_image: ``old`` holds only the changed columns, but ``data`` overlaid with ``old``
    # is the full before-image (the decoder rebuilds it), so nothing of it is lost.
    capabilities = Capabilities(column_types=True, primary_key=True, ddl=True, snapshot_reads=True)

    form: ClassVar[CanalText] = CANAL_TEXT
    db_type: ClassVar[str] = "mysql"
    row_types: ClassVar[dict[str, Op]] = ROW_TYPES
    #: Message keys in output order (fastjson sorts them).
    field_order: ClassVar[tuple[str, ...]] = (
        "data", "database", "es", "id", "isDdl", "mysqlType", "old", "pkNames", "sql", "sqlType", "table", "ts", "type",
    )  # fmt: skip
    #: Canal drops ``old`` when no column changed; TiCDC always writes it.
    update_always_has_old: ClassVar[bool] = False
    _SCHEMA_CACHE_SIZE: ClassVar[int] = 1024

    def configure(self) -> None:
        #: schema_key -> (the columns typed from their sqlType code, their fallback types -> schema).
        self._schemas: dict[Any, tuple[tuple[str, ...], dict[tuple[str, ...], TableSchema]]] = {}
        #: The last message's type maps and schema: consecutive messages of one table
        #: repeat them, and comparing is cheaper than building the cache key.
        self._last_schema: tuple | None = None
        self._last_pk: tuple[list, tuple[str, ...]] = ([], ())
        self.timezone: str = self.opts.source_timezone
        self._batching: bool = self.batching  # read per batch
        self._last_writers: tuple = (None, None, "", None)
        #: schema -> per-column sqlType/mysqlType facts for encoding.
        self._codes = IdentityCache(self._SCHEMA_CACHE_SIZE)

    @classmethod
    def sniff(cls, message: Any) -> bool:
        if not isinstance(message, dict):
            return False
        kind = message.get("type")
        known = kind in cls.row_types or kind in DDL_TYPES
        return known and ("isDdl" in message or "mysqlType" in message or "sqlType" in message)

    # =======================================================================
    # decode
    # =======================================================================
    def decode_message(self, obj: dict, record: Record | None) -> list[ChangeEvent]:
        kind = obj.get("type", _MISSING)
        if kind is _MISSING or kind is None:
            return self.decode_untyped(obj)
        if not isinstance(kind, str):
            raise self._error(f"'type' must be a string, got {type(kind).__name__}")
        op = self.row_types.get(kind)
        if op is not None:
            return self._decode_rows(obj, op)
        if kind in DDL_TYPES:
            return [self._decode_ddl(obj, kind)]
        return self.decode_other(obj, kind)

    def decode_untyped(self, obj: dict) -> list[ChangeEvent]:
        """A message without ``type`` (TiCDC overrides for claim-check references)."""
        raise self._error("missing field 'type'")

    def decode_other(self, obj: dict, kind: str) -> list[ChangeEvent]:
        """A ``type`` that is neither rows nor DDL (TiCDC overrides for watermarks)."""
        known = ", ".join([*self.row_types, *sorted(DDL_TYPES)])
        raise self._error(f"unknown type {kind!r} (known: {known})")

    def _decode_rows(self, obj: dict, op: Op) -> list[ChangeEvent]:
        data = obj["data"]
        if not isinstance(data, list) or not data:
            raise self._error(f"'data' must be a non-empty list of rows for {obj['type']}, got {_short(data)}")
        old = obj.get("old")
        if old is not None:
            if not isinstance(old, list):
                raise self._error(f"'old' must be a list of rows or null, got {_short(old)}")
            if op is Op.UPDATE and old and len(old) != len(data):
                raise self._error(f"'old' has {len(old)} rows but 'data' has {len(data)}: rows cannot be paired")
        schema = self._schema(obj, data)
        pk = schema.primary_key  # _schema read and checked pkNames
        # The message's other fields, shared read-only by its rows (same-format reproduction).
        meta = dict(obj)
        del meta["data"]
        if meta.pop("old", _MISSING) is not _MISSING:  # keep whether it was there, and null vs []
            meta["old"] = None if old else old
        ts_ms = obj.get("es")
        if ts_ms is not None and ts_ms.__class__ is not int:
            ts_ms = self._ms(obj, "es")
        proc_ms = obj.get("ts")
        if proc_ms is not None and proc_ms.__class__ is not int:
            proc_ms = self._ms(obj, "ts")
        source = self._source(obj)
        tz = self.timezone
        partial = self.is_partial(obj)
        form = self.form
        name = self.name
        update = op is Op.UPDATE
        delete = op is Op.DELETE
        events: list[ChangeEvent] = []
        for i, row in enumerate(data):
            if not isinstance(row, dict):
                raise self._error(f"row {i} of 'data' must be an object, got {_short(row)}")
            extra: dict[str, Any] = {"message": meta}
            before = after = None
            changed = None
            if update:
                o = old[i] if old else {}
                if not isinstance(o, dict):
                    raise self._error(f"row {i} of 'old' must be an object, got {_short(o)}")
                before = {**row, **o} if o else dict(row)
                after = row
                changed = self.changed_columns(row, o)
                if old:
                    extra["old"] = tuple(o)
            elif delete:
                before = row
                if old and i < len(old) and isinstance(old[i], dict):
                    extra["old"] = tuple(old[i])  # TiCDC before v5.4 repeated the row in 'old'
            else:
                after = row
            if i:
                src = _with_row(source, i)
            else:
                src = source  # built for this message: the first row may own it
                src.row = 0
            events.append(
                ChangeEvent(
                    op=op,
                    source=src,
                    before=before,
                    after=after,
                    changed=changed,
                    schema=schema,
                    pk=pk,
                    ts_ms=ts_ms,
                    processing_ts_ms=proc_ms,
                    timezone=tz,
                    values=form,
                    partial=partial,
                    origin=name,
                    extra=extra,
                )
            )
        return events

    def _decode_ddl(self, obj: dict, kind: str) -> ChangeEvent:
        sql = obj.get("sql")
        if sql is not None and not isinstance(sql, str):
            raise self._error(f"'sql' must be a string, got {_short(sql)}")
        schema = self._ddl_schema(obj)
        return self.message_event(
            obj,
            Op.TRUNCATE if kind == "TRUNCATE" else Op.DDL,
            self._source(obj),
            ddl=sql,
            ddl_kind=kind,
            schema=schema,
            pk=schema.primary_key if schema is not None else (),
        )

    def message_event(self, obj: dict, op: Op, source: SourcePosition, **fields: Any) -> ChangeEvent:
        """An event that stands for the whole message (DDL, TiCDC watermark): the
        message's times and zone, and the message itself for same-format reproduction."""
        return ChangeEvent(
            op=op,
            source=source,
            ts_ms=self._ms(obj, "es"),
            processing_ts_ms=self._ms(obj, "ts"),
            timezone=self.opts.source_timezone,
            origin=self.name,
            extra={"message": dict(obj)},
            **fields,
        )

    # -- decode hooks (TiCDC overrides) ---------------------------------------
    def changed_columns(self, data_row: dict, old_row: dict) -> tuple[str, ...]:
        """Official Canal: ``old`` holds exactly the changed columns."""
        return tuple(old_row)

    def is_partial(self, obj: dict) -> bool:
        return False

    def column_type(self, name: str, text: str, code: Any) -> str:
        """The schema type of a column from its ``mysqlType`` text (and ``sqlType`` code, read
        only when the text names no type: the schema cache keys by the code for those columns
        alone, :func:`_untyped_columns`)."""
        try:
            parse_type(text)
            return text
        except TypeParseError:
            return _fallback_type(code)

    def schema_key(self, mysql_types: dict, sql_types: Any, pk: tuple[str, ...]) -> Any:
        """Cache key of the schema of a message: Canal's maps keep table column order."""
        return (tuple(mysql_types.items()), pk)

    def column_order(self, mysql_types: dict, sql_types: Any) -> Iterable[str]:
        return mysql_types

    def _source(self, obj: dict) -> SourcePosition:
        database = obj.get("database")
        database = (database or None) if database.__class__ is str else self._name(obj, "database")
        table = obj.get("table")
        table = (table or None) if table.__class__ is str else self._name(obj, "table")
        return SourcePosition(db_type=self.db_type, database=database, table=table)

    # -- decode helpers -------------------------------------------------------
    def _schema(self, obj: dict, data: list) -> TableSchema:
        mysql_types = obj.get("mysqlType")
        sql_types = obj.get("sqlType")
        if mysql_types is not None and not isinstance(mysql_types, dict):
            raise self._error(f"'mysqlType' must be an object or null, got {_short(mysql_types)}")
        if sql_types is not None and not isinstance(sql_types, dict):
            raise self._error(f"'sqlType' must be an object or null, got {_short(sql_types)}")
        pk = self._pk(obj)
        if mysql_types:
            # The schema is cached by the type texts and, for the columns whose text names no
            # type (typed from their sqlType code), by the types those codes give: a message
            # converts the same whatever came before it. Same column names in the same order,
            # same sqlType names, key, type texts and fallback types as the last message: the
            # same schema.
            names = tuple(mysql_types)
            sql_names = tuple(sql_types) if sql_types else ()
            last = self._last_schema
            if (
                last is not None
                and last[0] == names
                and last[1] == sql_names
                and last[2] == pk
                and last[3] == mysql_types
                and (not last[4] or _fallback_types(last[4], sql_types) == last[5])
            ):
                return last[6]
            key = self.schema_key(mysql_types, sql_types, pk)
            entry = self._schemas.get(key)
            if entry is None:
                if len(self._schemas) >= self._SCHEMA_CACHE_SIZE:
                    self._schemas.clear()
                entry = self._schemas[key] = (_untyped_columns(mysql_types), {})
            untyped, by_fallback = entry
            fallback = _fallback_types(untyped, sql_types) if untyped else ()
            schema = by_fallback.get(fallback)
            if schema is None:
                sql_types = sql_types or {}
                order = self.column_order(mysql_types, sql_types)
                types = {n: self._type_text(n, mysql_types[n], sql_types.get(n)) for n in order}
                schema = _table_schema(types, pk)
                if len(by_fallback) >= self._SCHEMA_CACHE_SIZE:
                    by_fallback.clear()
                by_fallback[fallback] = schema
            self._last_schema = (names, sql_names, pk, mysql_types, untyped, fallback, schema)
            return schema
        if sql_types:
            return _table_schema({n: _fallback_type(c) for n, c in sql_types.items()}, pk)
        return _table_schema(_inferred_types(data), pk)

    def _type_text(self, name: str, text: Any, code: Any) -> str:
        if not isinstance(text, str):
            raise self._error(f"mysqlType of column {name!r} must be a string, got {_short(text)}")
        return self.column_type(name, text, code)

    def _ddl_schema(self, obj: dict) -> TableSchema | None:
        changes = obj.get("tableChanges")
        if isinstance(changes, dict) and isinstance(changes.get("table"), dict):
            table = changes["table"]
            cols = sorted(table.get("columns") or (), key=lambda c: c.get("position", 0))
            types = {
                c["name"]: self.column_type(
                    c["name"], c.get("typeExpression") or c.get("typeName") or "", c.get("jdbcType")
                )
                for c in cols
            }
            return _table_schema(types, tuple(table.get("primaryKeyColumnNames") or ()))
        mysql_types = obj.get("mysqlType")
        if isinstance(mysql_types, dict) and mysql_types:
            return self._schema(obj, [])
        return None

    def _pk(self, obj: dict) -> tuple[str, ...]:
        names = obj.get("pkNames")
        if names is None:
            return ()
        last = self._last_pk
        if names == last[0] and names.__class__ is list:  # the last message's key (a list of strings)
            return last[1]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise self._error(f"'pkNames' must be a list of column names or null, got {_short(names)}")
        pk = tuple(names)
        self._last_pk = (names, pk)
        return pk

    def _ms(self, obj: dict, key: str) -> int | None:
        v = obj.get(key)
        if v is None:
            return None
        if not isinstance(v, int) or isinstance(v, bool):
            raise self._error(f"{key!r} must be epoch milliseconds, got {_short(v)}")
        return v

    def _name(self, obj: dict, key: str) -> str | None:
        v = obj.get(key)
        if v is not None and not isinstance(v, str):
            raise self._error(f"{key!r} must be a string, got {_short(v)}")
        return v or None

    def _error(self, reason: str) -> DecodeError:
        return DecodeError(reason, format=self.name)

    # =======================================================================
    # encode
    # =======================================================================
    def encode_message(self, event: ChangeEvent) -> Any:
        op = event.op
        if op.is_row:
            return self.row_message([event])
        if op is Op.DDL or op is Op.TRUNCATE:
            return self.ddl_message(event)
        return self.control_message(event)

    def control_message(self, event: ChangeEvent) -> Any:
        """Heartbeats, watermarks, transaction markers: Canal flat messages have none."""
        return None

    def encode_batch(self, events: Iterable[ChangeEvent]) -> list[Record]:
        """With ``batch: transaction``, consecutive rows of one message/transaction become one message."""
        if not self._batching:
            return super().encode_batch(events)
        out: list[Record] = []
        for group in self._groups(list(events)):
            if len(group) == 1:
                out.extend(self.encode(group[0]))
            else:
                out.append(self._group_record(group))
        return out

    @property
    def batching(self) -> bool:
        return self.opts.batch == "transaction"

    @guard(EncodeError, lambda codec, group, exc: f"cannot encode {group[0].op.value} rows: {describe_error(exc)}")
    def _group_record(self, group: list[ChangeEvent]) -> Record:
        msg = self.row_message(group)
        keys = {self.encode_key(e) for e in group}
        first = group[0]
        return Record(
            value=self.dumps(msg),
            key=keys.pop() if len(keys) == 1 else None,
            topic=first.topic,
            headers=record_headers(first),
        )

    def _groups(self, events: list[ChangeEvent]) -> Iterator[list[ChangeEvent]]:
        group: list[ChangeEvent] = []
        for e in events:
            if group and self._continues(group[-1], e):
                group.append(e)
                continue
            if group:
                yield group
            group = [e]
        if group:
            yield group

    def _continues(self, prev: ChangeEvent, e: ChangeEvent) -> bool:
        """May ``e`` share ``prev``'s message? Same table and op, and the next row of the
        same decoded message, or the same transaction (GTID/txid/commit ts/binlog event)."""
        if not (e.op.is_row and e.op is prev.op and e.topic == prev.topic):
            return False
        if _marked(e) or _marked(prev):  # tombstones and unwrapped rows are records of their own
            return False
        if (e.source.database, e.source.table) != (prev.source.database, prev.source.table):
            return False
        if e.schema is not prev.schema and e.schema != prev.schema:
            return False
        m, pm = self._origin_meta(e), self._origin_meta(prev)
        if m is not None or pm is not None:
            same = m is pm or m == pm
            return same and prev.source.row is not None and e.source.row == prev.source.row + 1
        txn = _txn(e.source)
        return txn is not None and txn == _txn(prev.source)

    # -- row messages -----------------------------------------------------------
    def row_message(self, events: list[ChangeEvent]) -> dict[str, Any]:
        """One message holding the rows of ``events`` (same table and op)."""
        first = events[0]
        self.check_partial(first)
        orig = self._origin_meta(first)
        schema = first.schema or _inferred_schema(events)
        data: list[dict[str, Any]] = []
        olds: list[dict[str, Any]] = []
        want_old = False
        for e in events:
            row, old, keep = self._row(e, schema)
            data.append(row)
            olds.append(old)
            want_old = want_old or keep
        sql_types, mysql_types = self._type_maps(schema, data, orig)
        fields = {
            "data": data,
            "database": first.source.database,
            "es": self._es(first),
            "id": 0,
            "isDdl": False,
            "mysqlType": mysql_types,
            "old": olds if want_old else None,
            "pkNames": list(first.pk) if first.pk else None,
            "sql": "",
            "sqlType": sql_types,
            "table": first.source.table,
            "ts": _now_or(first.processing_ts_ms),
            "type": self.row_type(first.op),
        }
        return self.finish(fields, events, orig, _ROW_MODEL_FIELDS)

    def row_type(self, op: Op) -> str:
        return _ROW_TYPE_NAMES.get(op) or op.value.upper()

    def check_partial(self, event: ChangeEvent) -> None:
        if event.partial:
            raise EncodeError(
                "partial event (handle-key-only / claim-check) cannot be written as canal-json: "
                "it would read as a full row; fetch the full row first",
                format=self.name,
            )

    def _row(self, e: ChangeEvent, schema: TableSchema) -> tuple[dict, dict, bool]:
        """``data`` row, ``old`` row, and whether this row needs an ``old`` entry."""
        op = e.op
        if op is Op.DELETE:
            if e.before is None:
                raise EncodeError("delete event without a before-image", format=self.name)
            row = self._text_image(e, e.before, schema)
            keys = e.extra.get("old") if self._origin_meta(e) is not None else None
            if keys is None:
                return row, {}, False
            return row, {k: row[k] for k in keys if k in row}, True
        if e.after is None:
            raise EncodeError(f"{op.value} event without an after-image", format=self.name)
        row = self._text_image(e, e.after, schema)
        if op is not Op.UPDATE:
            return row, {}, False
        if e.before is None:
            return row, {}, self.update_always_has_old
        before = self._text_image(e, e.before, schema)
        keys = self.old_columns(e, before, row)
        keep = bool(keys) or self.update_always_has_old or ("old" in e.extra and self._origin_meta(e) is not None)
        return row, {k: before.get(k) for k in keys}, keep

    def old_columns(self, e: ChangeEvent, before: dict, after: dict) -> list[str]:
        """Columns in ``old``: the original ones when reproducing, plus every column whose text differs."""
        keys: list[str] = []
        if self._origin_meta(e) is not None:
            keys = [k for k in e.extra.get("old", ()) if k in before]
        seen = set(keys)
        for k, v in before.items():
            if k not in seen and after.get(k, _MISSING) != v:
                keys.append(k)
        return keys

    def _text_image(self, e: ChangeEvent, image: dict[str, Any], schema: TableSchema) -> dict[str, Any]:
        """``image`` in this format's value text; raw values of the same form pass untouched."""
        form = e.values
        target_tz = self.timezone
        shift = e.timezone != target_tz
        by_name = schema.by_name
        if form is not None and form.name == self.form.name:
            stamps = _timestamp_columns(schema) if shift else ()
            if not stamps or not any(image.get(n) is not None for n in stamps):
                return image
            out = dict(image)
            for n in stamps:
                raw = out.get(n)
                if raw is not None:
                    col = by_name[n]
                    out[n] = self.form.to_text(col, rebase_timestamp(form.to_python(col, raw), e.timezone, target_tz))
            return out
        writers = self._writers(schema, form, e.timezone, target_tz)
        out = {}
        for n, v in image.items():
            if v is None:
                out[n] = None
                continue
            write = writers.get(n)
            if write is None:  # a column the schema does not know: its text as is
                out[n] = v if isinstance(v, str) else text_of(v, None)
                continue
            out[n] = write(v)
        return out

    def _writers(self, schema: TableSchema, form: Any, from_tz: str, to_tz: str) -> dict[str, Callable[[Any], str]]:
        """Per column: raw value of ``form`` (typed when ``None``) -> this format's text,
        TIMESTAMPs re-based from ``from_tz`` to ``to_tz``; compiled once per schema."""
        last = self._last_writers
        if last[0] is schema and last[1] is form and last[2] == from_tz:
            return last[3]  # consecutive events of one table (to_tz is this codec's zone)
        writers = self._compile_writers(schema, form, from_tz, to_tz)
        self._last_writers = (schema, form, from_tz, writers)
        return writers

    def _compile_writers(
        self, schema: TableSchema, form: Any, from_tz: str, to_tz: str
    ) -> dict[str, Callable[[Any], str]]:
        own = self.form

        def build() -> dict[str, Callable[[Any], str]]:
            writers = {}
            for col in schema.columns:
                write = own.text_writer(col)
                read = typed_reader(form, col) if form is not None else None
                if from_tz != to_tz and col.mysql.kind is Kind.TIMESTAMP:
                    write = _rebasing(write, from_tz, to_tz)
                writers[col.name] = write if read is None else _then(read, write)
            return writers

        return compiled(schema, form, ("text", own.name, from_tz, to_tz), build)

    def _type_maps(self, schema: TableSchema, data: list[dict], orig: dict | None) -> tuple[dict | None, dict | None]:
        """``sqlType``/``mysqlType`` of the columns in ``data``: the original maps when
        reproducing and they cover the same columns, else computed."""
        codes = self._type_codes(schema)
        names = [n for n in _ordered_keys(data) if n in codes]
        mysql_types = _reusable(orig, "mysqlType", names) if self.reuse_mysql_types else None
        if mysql_types is None:
            mysql_types = {n: codes[n][2] for n in names}
        sql_types = _reusable(orig, "sqlType", names)
        if sql_types is None:
            sql_types = {}
            sql_type = self.sql_type
            for row in data:  # Canal keeps the codes of the message's last row
                for n in names:
                    if n in row:
                        col, by_null, _ = codes[n]
                        v = row[n]
                        if by_null is None:
                            sql_types[n] = sql_type(col, v)
                        else:
                            sql_types[n] = by_null[0] if v is None else by_null[1]
        return sql_types or None, mysql_types or None

    def _type_codes(self, schema: TableSchema) -> dict[str, tuple[Column, tuple[int, int] | None, str]]:
        """Per column, built once per schema: (column, ``sql_type_by_null``, ``mysqlType`` text)."""
        codes = self._codes.get(schema)
        if codes is None:
            codes = {c.name: (c, self.sql_type_by_null(c), self.mysql_type_text(c)) for c in schema.columns}
            self._codes.put(schema, None, None, codes)
        return codes

    def sql_type_by_null(self, column: Column) -> tuple[int, int] | None:
        """(``sql_type`` of NULL, of every other text) when only NULL-ness matters, else
        ``None``. Override together with :meth:`sql_type`."""
        t = column.mysql
        if t.kind is Kind.INT and t.unsigned:
            return None
        return canal_sql_type(t, None), canal_sql_type(t, "0")

    @property
    def reuse_mysql_types(self) -> bool:
        return True

    def mysql_type_text(self, column: Column) -> str:
        return column.type

    def sql_type(self, column: Column, text: Any) -> int:
        return canal_sql_type(column.mysql, text)

    # -- DDL messages -------------------------------------------------------------
    def ddl_message(self, event: ChangeEvent) -> dict[str, Any]:
        orig = self._origin_meta(event)
        src = event.source
        sql = event.ddl
        if sql is None and event.op is Op.TRUNCATE:
            sql = f"TRUNCATE TABLE {_qualified(src.database, src.table)}"
        typ = "TRUNCATE" if event.op is Op.TRUNCATE else ddl_type(sql, event.ddl_kind)
        fields = {
            "data": None,
            "database": src.database,
            "es": self._es(event),
            "id": 0,
            "isDdl": True,
            "mysqlType": None,
            "old": None,
            "pkNames": None,
            "sql": sql or "",
            "sqlType": None,
            "table": src.table,
            "ts": _now_or(event.processing_ts_ms),
            "type": typ,
        }
        return self.finish(fields, [event], orig, _DDL_MODEL_FIELDS)

    # -- assembling -----------------------------------------------------------------
    def finish(
        self, fields: dict[str, Any], events: list[ChangeEvent], orig: dict | None, model: frozenset[str]
    ) -> dict[str, Any]:
        """Order the fields; when reproducing, restore what the model does not hold."""
        msg = {k: fields[k] for k in self.field_order}
        if orig is None:
            for k in ("database", "table"):
                if msg[k] is None:
                    msg[k] = ""  # Canal always names them; "" for database-level DDL
            return msg
        for k, v in orig.items():
            if k not in model or k not in msg:
                msg[k] = v
            else:
                cur = msg[k]
                if v is cur or v == cur or _equivalent(v, cur):
                    msg[k] = v  # e.g. "" vs null table, [] vs null pkNames
        if len(msg) != len(orig):  # msg now has every key of orig: equal sizes, nothing to drop
            for k in [k for k in msg if k not in orig and (k not in model or msg[k] is None)]:
                del msg[k]
        return msg

    def _origin_meta(self, e: ChangeEvent) -> dict | None:
        if e.origin != self.name:
            return None
        meta = e.extra.get("message")
        return meta if isinstance(meta, dict) else None

    def _es(self, e: ChangeEvent) -> int | None:
        if e.ts_ms is not None:
            return e.ts_ms
        return None if self._origin_meta(e) is not None else 0


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

_ROW_TYPE_NAMES = {Op.INSERT: "INSERT", Op.UPDATE: "UPDATE", Op.DELETE: "DELETE", Op.READ: "INIT"}

#: Fields whose value comes from the model (the rest are restored from the original).
_ROW_MODEL_FIELDS = frozenset(
    {"data", "database", "es", "mysqlType", "old", "pkNames", "sqlType", "table", "ts", "type"}
)
_DDL_MODEL_FIELDS = frozenset({"database", "es", "sql", "table", "ts", "type"})


def _marked(e: ChangeEvent) -> bool:
    extra = e.extra
    return bool(extra.get(TOMBSTONE) or extra.get(UNWRAPPED)) if extra else False


def _equivalent(orig: Any, new: Any) -> bool:
    """Do two field values decode the same? (``""``/``null`` table, ``[]``/``null`` pkNames ...)"""
    if orig == new:
        return True
    empty: tuple[Any, ...] = (None, "", [], {})
    return orig in empty and new in empty


def _reusable(orig: dict | None, key: str, names: list[str]) -> dict | None:
    """The original type map when it describes exactly ``names`` (exact texts/codes kept)."""
    m = orig.get(key) if orig is not None else None
    if isinstance(m, dict) and len(m) == len(names) and all(map(m.__contains__, names)):
        return m
    return None


def _ordered_keys(rows: list[dict]) -> list[str]:
    if len(rows) == 1:
        return list(rows[0])
    seen: dict[str, None] = {}
    for r in rows:
        seen.update(dict.fromkeys(r))
    return list(seen)


def _then(first: Callable[[Any], Any], second: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``second(first(v))``; a raw value that reads as NULL (a SQL ``NULL`` literal) stays ``None``."""

    def read_then_write(v: Any) -> Any:
        typed = first(v)
        return None if typed is None else second(typed)

    return read_then_write


def _rebasing(write: Callable[[Any], str], from_tz: str, to_tz: str) -> Callable[[Any], str]:
    return lambda v: write(rebase_timestamp(v, from_tz, to_tz))


def _now_or(ms: int | None) -> int:
    return ms if ms is not None else int(time.time() * 1000)


def _short(v: Any) -> str:
    text = repr(v)
    return f"{type(v).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _with_row(source: SourcePosition, i: int) -> SourcePosition:
    return SourcePosition(
        db_type=source.db_type, database=source.database, table=source.table, commit_ts=source.commit_ts, row=i
    )


def _txn(s: SourcePosition) -> tuple | None:
    """What identifies the transaction (or binlog event) of a row, if anything does."""
    if s.gtid is not None or s.txid is not None or s.commit_ts is not None:
        return ("txn", s.gtid, s.txid, s.commit_ts)
    if s.binlog_file is not None:
        return ("binlog", s.binlog_file, s.binlog_pos)
    return None


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _qualified(database: str | None, table: str | None) -> str:
    return f"{_quoted(database)}.{_quoted(table or '')}" if database else _quoted(table or "")


def _untyped_columns(mysql_types: dict) -> tuple[str, ...]:
    """The columns whose ``mysqlType`` text names no MySQL type: typed from their ``sqlType``
    code (:meth:`CanalJson.column_type`), so their schema depends on the code too."""
    untyped = []
    for name, text in mysql_types.items():
        if isinstance(text, str):  # any other value is refused when the schema is built
            try:
                parse_type(text)
            except TypeParseError:
                untyped.append(name)
    return tuple(untyped)


def _fallback_types(untyped: tuple[str, ...], sql_types: Any) -> tuple[str, ...]:
    """The types the ``sqlType`` codes give the ``untyped`` columns (a schema cache key part)."""
    codes = sql_types if isinstance(sql_types, dict) else {}
    return tuple(_fallback_type(codes.get(n)) for n in untyped)


def _fallback_type(code: Any) -> str:
    if isinstance(code, int) and not isinstance(code, bool):
        try:
            return type_from_jdbc(code)
        except TypeParseError:
            pass
    return UNKNOWN_TYPE


def _table_schema(types: dict[str, str], pk: tuple[str, ...]) -> TableSchema:
    keys = set(pk)
    cols = tuple(Column(n, t, nullable=n not in keys, primary_key=n in keys) for n, t in types.items())
    return TableSchema(columns=cols, primary_key=pk)


def _timestamp_columns(schema: TableSchema) -> tuple[str, ...]:
    return compiled(
        schema,
        None,
        "timestamp_columns",
        lambda: tuple(c.name for c in schema.columns if c.mysql.kind is Kind.TIMESTAMP),
    )


def _inferred_types(rows: list) -> dict[str, str]:
    """Column types for a message without ``mysqlType``/``sqlType`` (Flink's serializer
    writes none): from the JSON values, text where nothing better is known."""
    return dict(json_columns(rows, _RULES))


def _inferred_schema(events: list[ChangeEvent]) -> TableSchema:
    """A schema for events that carry none, from their typed values (decimals: the
    widest scale and integer part seen, so no value is rounded)."""
    images = (image for e in events for image in (e.before, e.after))
    return _table_schema(dict(python_columns(images, _RULES)), tuple(events[0].pk))


__all__ = [
    "CANAL_TEXT",
    "CanalJson",
    "CanalText",
    "DDL_TYPES",
    "ROW_TYPES",
    "canal_sql_type",
    "ddl_type",
    "go_float_text",
    "java_float_text",
]
