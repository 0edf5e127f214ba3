"""Shared by the formats whose messages carry no (or only vague) column types.

Maxwell and OGG write typed JSON values without column types; DataWorks
declares one of six coarse types; DTS a type code without lengths or
signedness. They all build the event schema the same way: column types guessed
from the values (``transforms.inference``, rules ``typed-json``), overlaid with
what the schema catalog knows (:func:`merged_schema`).

:class:`SchemalessJson` is the base of the typed-JSON formats (Maxwell, OGG):
their value form (:class:`JsonValues`) and the encoder's rendering of an image
(:meth:`SchemalessJson.json_image`); subclasses say only how they differ
(``values``, ``set_as_list``).

Not a format: modules starting with ``_`` are not registered.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Iterable
from decimal import Decimal
from functools import lru_cache
from typing import Any, ClassVar, overload

import orjson

from cdc_smt.transforms.formats.base import JsonCodec, exact_json_loads, exact_number, on_a_new_stack, typed_image
from cdc_smt.transforms.inference import RULES, json_columns, python_type
from cdc_smt.transforms.model import ChangeEvent, Column, TableSchema
from cdc_smt.transforms.types import (
    Kind,
    MySQLType,
    checked_decimal,
    decimal_from_text,
    parse_date,
    parse_datetime,
    parse_time,
    parse_type,
    rebase_timestamp,
    to_json_value,
)

# ---------------------------------------------------------------------------
# schema inference and catalog merging
# ---------------------------------------------------------------------------


#: How the typed-JSON formats' values read as column types (see ``transforms.inference``).
TYPED_JSON = RULES["typed-json"]


@lru_cache(maxsize=2048)
def merged_schema(
    columns: tuple[tuple[str, str], ...], pk: tuple[str, ...], catalog: TableSchema | None
) -> TableSchema:
    """The event schema: catalog columns where the catalog knows them, inferred ones elsewhere.

    Cached: the arguments repeat for every message of a table.
    """
    if catalog is not None and tuple(n for n, _ in columns) == catalog.names and (not pk or pk == catalog.primary_key):
        return catalog
    key = pk or (catalog.primary_key if catalog is not None else ())
    cols = []
    for name, type_text in columns:
        known = catalog.column(name) if catalog is not None else None
        if known is not None:
            cols.append(
                known
                if known.primary_key == (name in key)
                else Column(known.name, known.type, known.nullable, name in key, known.default, known.comment)
            )
        else:
            cols.append(Column(name, type_text, nullable=name not in key, primary_key=name in key))
    return TableSchema(columns=tuple(cols), primary_key=key)


# ---------------------------------------------------------------------------
# the JSON-native value form
# ---------------------------------------------------------------------------


#: Digits an integer column's value may have (BIGINT UNSIGNED has 20; DECIMAL(65,0) 65).
_INT_DIGITS = 65


def _integer(t: MySQLType, raw: Any) -> int:
    """An integer column's JSON value as an int: exact, and never expanded past 65 digits."""
    if isinstance(raw, Decimal):
        if not raw.is_finite() or raw != raw.to_integral_value():
            raise ValueError(f"{raw} is not an integer")
        if raw.adjusted() >= _INT_DIGITS:  # 1e100000000 would take minutes and gigabytes to expand
            raise ValueError(f"{raw} is out of range for {t.text()}")
        return int(raw)
    if isinstance(raw, float):
        if not raw.is_integer():
            raise ValueError(f"{raw!r} is not an integer")
        return int(raw)
    return int(raw)


def json_to_python(t: MySQLType, raw: Any, embedded_json: bool) -> Any:
    """Typed value of a JSON-native raw value in a column of type ``t``.

    ``embedded_json``: JSON columns are written as embedded JSON (Maxwell), so
    every raw value (even a string) is a JSON document to serialise back to text.
    """
    if raw is None:
        return None
    k = t.kind
    if k is Kind.INT or k is Kind.YEAR:
        return _integer(t, raw)
    if k is Kind.DECIMAL:  # within MySQL's DECIMAL(65,30), else a ValueError
        if isinstance(raw, Decimal):
            return checked_decimal(raw)
        if isinstance(raw, float):
            return checked_decimal(Decimal(repr(raw)))
        return decimal_from_text(raw) if isinstance(raw, str) else checked_decimal(Decimal(int(raw)))
    if k is Kind.FLOAT:
        f = float(raw)
        if isinstance(raw, Decimal) and (math.isinf(f) or (f == 0.0 and raw)):  # 1e400, 1e-400: no double
            raise ValueError(f"number {raw:.6} beyond the range of a DOUBLE")
        return f
    if k is Kind.STRING or k is Kind.ENUM:
        return raw if isinstance(raw, str) else _json_text(raw)
    if k is Kind.SET:
        return ",".join(raw) if isinstance(raw, list) else str(raw)
    if k is Kind.JSON:
        if isinstance(raw, str) and not embedded_json:
            return raw
        return _json_text(raw)
    if k is Kind.BYTES or k is Kind.GEOMETRY:
        return base64.b64decode(raw, validate=True)
    if k is Kind.BIT:
        n = _integer(t, raw)
        return bool(n) if t.length == 1 else n
    if k is Kind.DATE:
        return parse_date(raw)
    if k is Kind.DATETIME or k is Kind.TIMESTAMP:
        return parse_datetime(raw)
    if k is Kind.TIME:
        return parse_time(raw)
    raise ValueError(f"no JSON conversion for {t.base}")


def python_to_json(t: MySQLType, v: Any, *, embedded_json: bool, set_as_list: bool) -> Any:
    """JSON-native rendering of a typed value (``to_json_value`` plus format quirks)."""
    if v is None:
        return None
    k = t.kind
    if k is Kind.SET and set_as_list:
        return [s for s in v.split(",") if s] if v else []
    if k is Kind.JSON and embedded_json:  # JSON text embedded; a decoded document as it is
        return exact_json_loads(v) if isinstance(v, (str, bytes)) else v
    if k is Kind.DECIMAL:
        return v  # a JSON number, as Maxwell and GoldenGate write it (SchemalessJson.dumps keeps it exact)
    return to_json_value(t, v)


class JsonValues:
    """Raw form of a typed-JSON format: values exactly as parsed from the message."""

    __slots__ = ("name", "embedded_json")

    def __init__(self, name: str, embedded_json: bool) -> None:
        self.name = name
        self.embedded_json = embedded_json

    def to_python(self, column: Column, raw: Any) -> Any:
        return json_to_python(column.mysql, raw, self.embedded_json)


# ---------------------------------------------------------------------------
# the typed-JSON codec base
# ---------------------------------------------------------------------------


def _json_text(raw: Any) -> str:
    """JSON text of a parsed value, numbers exactly as they were written."""
    return SchemalessJson.dumps(raw).decode()


def _big_ints_as_text(obj: Any) -> Any:
    """``obj`` with integers outside orjson's 64-bit range as ``orjson.Fragment`` number text."""
    if isinstance(obj, dict):
        return {k: _big_ints_as_text(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_big_ints_as_text(v) for v in obj]
    if obj.__class__ is int and not -(1 << 63) <= obj < (1 << 64):
        return orjson.Fragment(str(obj))
    return obj


class SchemalessJson(JsonCodec):
    """Base of typed-JSON formats without column types (Maxwell, OGG).

    Subclasses set ``values`` (their :class:`JsonValues`, which says whether
    JSON columns are embedded documents) and ``set_as_list``. DECIMAL values
    are JSON numbers in these formats: they are parsed exactly and written back
    as the same number text.
    """

    exact_numbers: ClassVar[bool] = True

    @staticmethod
    def dumps(obj: Any) -> bytes:
        try:
            return orjson.dumps(obj, default=exact_number)
        except orjson.JSONEncodeError as exc:
            # orjson writes 64-bit integers only; a decimal(65,0) value parsed from a bare
            # JSON integer is bigger. Rare: retry with those integers as number text. Not for
            # its other errors: a document past orjson's nesting limit would reach Python's
            # recursion limit in the retry, which depends on the caller's stack.
            if str(exc) != "Integer exceeds 64-bit range":
                raise
            try:
                return orjson.dumps(_big_ints_as_text(obj), default=exact_number)
            except RecursionError:  # settled where every caller has the same depth left
                return on_a_new_stack(lambda o: orjson.dumps(_big_ints_as_text(o), default=exact_number), obj)

    values: ClassVar[JsonValues]
    #: SET columns are JSON arrays of labels (Maxwell), not comma-joined text.
    set_as_list: ClassVar[bool] = False

    def row_schema(
        self, images: Iterable[dict | None], pk: tuple[str, ...], database: str | None, table: str | None
    ) -> TableSchema:
        """The schema of a row message: types inferred from ``images``, merged with the catalog's."""
        return merged_schema(json_columns(images, TYPED_JSON), pk, self.catalog_schema(database, table))

    @overload
    def json_image(self, event: ChangeEvent, image: dict[str, Any]) -> dict[str, Any]: ...
    @overload
    def json_image(self, event: ChangeEvent, image: None) -> None: ...
    @overload
    def json_image(self, event: ChangeEvent, image: dict[str, Any] | None) -> dict[str, Any] | None: ...
    def json_image(self, event: ChangeEvent, image: dict[str, Any] | None) -> dict[str, Any] | None:
        """One image in this format's JSON values; TIMESTAMPs re-shown in ``source_timezone``.

        Values already in this format's form pass untouched.
        """
        if image is None:
            return None
        if event.values is not None and event.values.name == self.name:
            return dict(image)
        image = typed_image(event, image)
        schema = event.schema
        to_zone = self.opts.source_timezone
        embedded_json = self.values.embedded_json
        out: dict[str, Any] = {}
        for name, v in image.items():
            if v is None:
                out[name] = None
                continue
            col = schema.column(name) if schema is not None else None
            t = col.mysql if col is not None else parse_type(python_type(v, TYPED_JSON))
            if t.kind is Kind.TIMESTAMP:
                v = rebase_timestamp(v, event.timezone, to_zone)
            out[name] = python_to_json(t, v, embedded_json=embedded_json, set_as_list=self.set_as_list)
        return out
