"""``cast``: change column types (values converted, schema updated)."""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from cdc_smt.transforms.errors import TransformError
from cdc_smt.transforms.model import ChangeEvent, Column, TableSchema
from cdc_smt.transforms.options import Option, Options
from cdc_smt.transforms.smt.base import Result, SchemaMap, Transform
from cdc_smt.transforms.types import InvalidTemporal, Kind, MySQLType, TypeParseError, parse_type, to_text

#: Kafka Connect Cast type names -> MySQL types.
CONNECT_TYPES = {
    "int8": "tinyint",
    "int16": "smallint",
    "int32": "int",
    "int64": "bigint",
    "float32": "float",
    "float64": "double",
    "boolean": "bit(1)",
    "string": "longtext",
}
_SUPPORTED = (
    Kind.INT,
    Kind.DECIMAL,
    Kind.FLOAT,
    Kind.STRING,
    Kind.BIT,
    Kind.DATE,
    Kind.DATETIME,
    Kind.TIMESTAMP,
    Kind.TIME,
    Kind.JSON,
    Kind.YEAR,
)


def _target_type(text: str) -> str:
    mapped = CONNECT_TYPES.get(text.strip().lower(), text)
    try:
        mtype = parse_type(mapped)
    except TypeParseError as exc:
        raise ValueError(str(exc)) from None
    if mtype.kind not in _SUPPORTED:
        raise ValueError(f"cannot cast to {text!r} ({mtype.kind.value} columns are not a cast target)")
    return mapped


def _check_spec(value: Any) -> dict[str, str]:
    """``{column: type}``, or Kafka Connect's list of ``column:type`` strings."""
    if isinstance(value, list):
        pairs = []
        for item in value:
            if not isinstance(item, str) or ":" not in item:
                raise ValueError(f"expected 'column:type', got {item!r}")
            column, type_ = item.split(":", 1)
            pairs.append((column.strip(), type_.strip()))
        value = dict(pairs)
    if not isinstance(value, dict) or not value:
        raise ValueError("expected a non-empty mapping {column: type}")
    out = {}
    for col, t in value.items():
        if not isinstance(col, str) or not isinstance(t, str):
            raise ValueError(f"expected column: type, got {col!r}: {t!r}")
        try:
            out[col] = _target_type(t)
        except ValueError as exc:
            raise ValueError(f"{col}: {exc}") from None
    return out


def _int(v: Any) -> int:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, (float, Decimal)):
        # MySQL rounds half away from zero when casting to an integer
        return int(Decimal(str(v)).to_integral_value(rounding=ROUND_HALF_UP))
    if isinstance(v, str):
        return _int(Decimal(v.strip()))
    raise TypeError


def _decimal(v: Any, scale: int | None) -> Decimal:
    if isinstance(v, bool):
        d = Decimal(int(v))
    elif isinstance(v, (int, Decimal)):
        d = Decimal(v)
    elif isinstance(v, float):
        d = Decimal(repr(v))
    elif isinstance(v, str):
        d = Decimal(v.strip())
    else:
        raise TypeError
    if scale is not None:
        d = d.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    return d


def _text(v: Any, source: Column | None) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8")
    if source is not None:
        return to_text(source.mysql, v)
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, Decimal):
        return format(v, "f")
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ")
    return str(v)


def _bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float, Decimal)):
        return v != 0
    if isinstance(v, str):
        low = v.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off", ""):
            return False
    raise ValueError


def convert(v: Any, target: MySQLType, source: Column | None = None) -> Any:
    """``v`` as a typed value of ``target`` (raises ``ValueError``/``TypeError``)."""
    kind = target.kind
    if kind is Kind.INT or kind is Kind.YEAR:
        return _int(v)
    if kind is Kind.DECIMAL:
        return _decimal(v, target.scale)
    if kind is Kind.FLOAT:
        if isinstance(v, str):
            return float(v.strip())
        if isinstance(v, (int, float, Decimal)):
            return float(v)
        raise TypeError
    if kind is Kind.STRING or kind is Kind.JSON:
        return _text(v, source)
    if kind is Kind.BIT:
        return _bool(v) if target.length == 1 else _int(v)
    if isinstance(v, InvalidTemporal):
        return v
    if kind is Kind.DATE:
        if isinstance(v, dt.datetime):
            return v.date()
        if isinstance(v, dt.date):
            return v
        if isinstance(v, str):
            return dt.date.fromisoformat(v.strip()[:10])
        raise TypeError
    if kind is Kind.DATETIME or kind is Kind.TIMESTAMP:
        if isinstance(v, dt.datetime):
            return v
        if isinstance(v, dt.date):
            return dt.datetime(v.year, v.month, v.day)
        if isinstance(v, str):
            return dt.datetime.fromisoformat(v.strip())
        raise TypeError
    if kind is Kind.TIME:
        if isinstance(v, dt.timedelta):
            return v
        if isinstance(v, dt.datetime):
            return dt.timedelta(hours=v.hour, minutes=v.minute, seconds=v.second, microseconds=v.microsecond)
        if isinstance(v, str):
            from cdc_smt.transforms.types import parse_time

            return parse_time(v)
        raise TypeError
    raise TypeError  # pragma: no cover - targets are checked at load


class Cast(Transform):
    """Cast columns to other types: `{column: type}` with a MySQL type (`bigint`,
    `decimal(12,2)`, `varchar(64)`, `datetime(3)`, `bit(1)`...) or a Kafka
    Connect name (`int8`..`int64`, `float32`, `float64`, `boolean`, `string`).

    Numbers round half away from zero (as MySQL's CAST); strings parse as the
    target type; a value that does not convert sends the event to the
    dead-letter output with the column named.
    """

    name = "cast"
    known_as = "Kafka Connect Cast"
    names_columns = True
    options = (
        Option(
            "spec",
            object,
            doc="Columns and target types: `{amount: 'decimal(12,2)', id: string}` or a list of `column:type`.",
            check=_check_spec,
        ),
    )

    def configure(self, opts: Options) -> None:
        self._spec = tuple((col, parse_type(t), t) for col, t in opts.spec.items())
        self.columns = tuple(opts.spec)
        self._schema = SchemaMap(self._new_schema)

    def adds_columns(self) -> tuple[str, ...]:
        return ()

    def _new_schema(self, schema: TableSchema) -> TableSchema:
        targets = {col: t for col, _, t in self._spec}
        cols = tuple(
            Column(c.name, targets[c.name], c.nullable, c.primary_key, None, c.comment) if c.name in targets else c
            for c in schema.columns
        )
        return TableSchema(cols, schema.primary_key)

    def apply(self, event: ChangeEvent) -> Result:
        event.typed()
        by_name = event.schema.by_name if event.schema is not None else {}
        for img in (event.before, event.after):
            if img is None:
                continue
            for col, target, text in self._spec:
                v = img.get(col)
                if v is None:
                    continue
                try:
                    img[col] = convert(v, target, by_name.get(col))
                except (ValueError, TypeError, ArithmeticError, InvalidOperation):
                    raise TransformError(f"cannot cast column {col!r} value {v!r} to {text}") from None
        if event.key is not None and any(col in event.key for col, _, _ in self._spec):
            key = dict(event.key)
            for col, target, text in self._spec:
                if key.get(col) is not None:
                    try:
                        key[col] = convert(key[col], target, by_name.get(col))
                    except (ValueError, TypeError, ArithmeticError):
                        raise TransformError(f"cannot cast key field {col!r} value {key[col]!r} to {text}") from None
            event.key = key
        if event.schema is not None:
            event.schema = self._schema(event.schema)
        return event
