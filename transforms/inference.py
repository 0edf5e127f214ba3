"""Column types guessed from values, for rows that arrive without a schema.

Several formats can carry rows with no column types (Debezium with
``schemas.enable=false``, Flink's Canal JSON, Maxwell, GoldenGate), and
encoders sometimes get typed rows that lost theirs. Every such guess is made
here, by one of two functions -- :func:`json_columns` for parsed JSON values,
:func:`python_columns` for typed Python values -- under the :class:`Rules` of
the dialect that wrote the values. Where dialects differ, the difference is a
field of :data:`RULES`, with the vendor behaviour that makes it right.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

#: The type of a column no value says anything about (all nulls), and of values no rule knows.
UNKNOWN = "longtext"

_INT64 = 1 << 63
_UINT64 = 1 << 64


@dataclass(frozen=True, slots=True)
class Rules:
    """How one dialect's values are read as MySQL column types."""

    #: The type of a boolean value.
    boolean: str = "bit(1)"
    #: Integers past the signed 64-bit range become ``bigint unsigned`` (``decimal(65,0)``
    #: past 64 bits); otherwise every integer is a ``bigint``.
    wide_ints: bool = True
    #: The type of a JSON string.
    string: str = UNKNOWN
    #: The type of a JSON object or array (``None``: :data:`UNKNOWN`).
    structure: str = "json"
    #: JSON objects with ``wkb`` are geometry structs (``point`` when they have ``x``).
    geometry: bool = False
    #: Images that disagree on a column (other than ``bigint`` vs ``double``, always
    #: ``double``): this type, or ``None`` for the first non-null value's type.
    conflict: str | None = None
    #: Typed ``Decimal`` values: ``"own"`` (the value's own scale, at most 30), ``"widest"``
    #: (the widest scale and integer part any value of the column has) or ``"max"``
    #: (``decimal(65,30)``: one value's scale says little of its column's).
    decimals: str = "own"


#: The dialects that infer types, and why each differs from the defaults.
RULES: dict[str, Rules] = {
    # Values a transform adds (static fields, extracted JSON), and typed rows re-encoded
    # without a schema: Python's types say all there is; a decimal keeps its own scale.
    "typed": Rules(),
    # Debezium rows without a schema part. JSON booleans are Connect ``boolean``, which
    # Debezium writes for BIT(1) (and reads back as bit(1)); integers are Connect int64 at
    # most (``bigint``; unsigned values past 2^63 arrive wrapped negative); strings are
    # ``longtext``; structs with ``wkb`` are Debezium's Geometry/Point.
    "debezium-json": Rules(wide_ints=False, geometry=True),
    # Canal JSON without mysqlType/sqlType (Flink's canal-json serializer): Flink writes
    # its BOOLEAN (MySQL's BOOL = tinyint(1)) as true/false; Canal values are text at heart,
    # so a column whose images disagree, and any string or structure, is read as text;
    # decimals take the widest scale and integer part of the rows, so none is rounded.
    "canal-json": Rules(boolean="tinyint(1)", wide_ints=False, structure=UNKNOWN, conflict=UNKNOWN, decimals="widest"),
    # Typed-JSON formats (Maxwell, GoldenGate, DataWorks, DTS): JSON booleans are BIT(1)
    # (Maxwell writes bit(1) as true/false), integers of any size are exact, decimals
    # arrive one value at a time, so typed ones get the widest MySQL scale.
    "typed-json": Rules(decimals="max"),
}


def json_type(v: Any, rules: Rules) -> str | None:
    """The MySQL type a parsed JSON value reads as (``None`` for null: unknown)."""
    if v is None:
        return None
    t = v.__class__
    if t is bool:
        return rules.boolean
    if t is int:
        if not rules.wide_ints or -_INT64 <= v < _INT64:
            return "bigint"
        return "bigint unsigned" if 0 <= v < _UINT64 else "decimal(65,0)"
    if t is float or t is Decimal:  # a number with a fraction (exact: JsonCodec.exact_numbers)
        return "double"
    if t is str:
        return rules.string
    if t is dict and rules.geometry and "wkb" in v:
        return "point" if "x" in v else "geometry"
    return rules.structure


def _merged(prev: str | None, t: str | None, rules: Rules) -> str | None:
    """A column's type once one more image's value type ``t`` is seen."""
    if prev is None:
        return t
    if t is None or t == prev:
        return prev
    if (prev == "bigint" and t == "double") or (prev == "double" and t == "bigint"):
        return "double"  # an integral double written as an integer (1.0 -> 1)
    return rules.conflict or prev


def json_columns(images: Iterable[Mapping[str, Any] | None], rules: Rules) -> tuple[tuple[str, str], ...]:
    """``(name, type)`` for the union of the images' columns, first image's order first."""
    found: dict[str, str | None] = {}
    for image in images:
        if not isinstance(image, dict):
            continue
        for name, v in image.items():
            found[name] = _merged(found.get(name), json_type(v, rules), rules)
    return tuple((n, t or UNKNOWN) for n, t in found.items())


def python_type(v: Any, rules: Rules = RULES["typed"]) -> str:
    """The MySQL type of a typed Python value (see ``transforms.types``); ``longtext``
    for ``None`` and anything else."""
    if isinstance(v, bool):
        return rules.boolean
    if isinstance(v, int):
        return "bigint" if v < _INT64 or not rules.wide_ints else "bigint unsigned"
    if isinstance(v, float):
        return "double"
    if isinstance(v, Decimal):
        if rules.decimals == "max":
            return "decimal(65,30)"
        return f"decimal(65,{_decimal_digits(v)[0]})"
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "longblob"
    if isinstance(v, dt.datetime):
        return "datetime(6)"
    if isinstance(v, dt.date):
        return "date"
    if isinstance(v, dt.timedelta):
        return "time(6)"
    return UNKNOWN


def _decimal_digits(v: Decimal) -> tuple[int, int]:
    """(scale at most 30, digits before the point at least 1) of a decimal value."""
    _, digits, exp = v.as_tuple()
    if not isinstance(exp, int):  # NaN, infinity
        return 0, 1
    return min(30, max(0, -exp)), max(1, len(digits) + exp)


def python_columns(
    images: Iterable[Mapping[str, Any] | None], rules: Rules = RULES["typed"]
) -> tuple[tuple[str, str], ...]:
    """``(name, type)`` for the union of typed images' columns: the first non-null value's
    type; decimals as :attr:`Rules.decimals` says (``widest``: over all values)."""
    found: dict[str, str | None] = {}
    widest: dict[str, tuple[int, int]] = {}
    for image in images:
        for name, v in (image or {}).items():
            if v is None:
                found.setdefault(name, None)
            elif rules.decimals == "widest" and isinstance(v, Decimal) and v.is_finite():
                found.setdefault(name, None)
                scale, whole = _decimal_digits(v)
                s0, w0 = widest.get(name, (0, 1))
                widest[name] = (max(s0, scale), max(w0, whole))
            elif found.get(name) is None:
                found[name] = python_type(v, rules)
    for name, (scale, whole) in widest.items():
        found[name] = f"decimal({min(65, whole + scale)},{scale})"
    return tuple((n, t or UNKNOWN) for n, t in found.items())


__all__ = ["RULES", "Rules", "UNKNOWN", "json_columns", "json_type", "python_columns", "python_type"]
