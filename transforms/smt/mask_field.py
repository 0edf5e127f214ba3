"""``mask_field``: blank, null, replace or hash (salted SHA-256) columns holding personal data."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from cdc_smt.transforms.errors import ConfigError, TransformError
from cdc_smt.transforms.model import ChangeEvent, Column, TableSchema
from cdc_smt.transforms.options import Option, Options
from cdc_smt.transforms.smt.base import Result, SchemaMap, Transform, check_names
from cdc_smt.transforms.types import Kind, from_text, to_text

_EMPTY_BY_KIND: dict[Kind, Any] = {
    Kind.INT: 0,
    Kind.YEAR: 0,
    Kind.DECIMAL: Decimal(0),
    Kind.FLOAT: 0.0,
    Kind.STRING: "",
    Kind.ENUM: "",
    Kind.SET: "",
    Kind.JSON: "{}",
    Kind.BYTES: b"",
    Kind.GEOMETRY: b"",
    Kind.DATE: dt.date(1970, 1, 1),
    Kind.DATETIME: dt.datetime(1970, 1, 1),
    Kind.TIMESTAMP: dt.datetime(1970, 1, 1),
    Kind.TIME: dt.timedelta(0),
}


def _empty(column: Column | None, value: Any) -> Any:
    """The "empty" value of a column's type (by the value's type when the schema is unknown)."""
    if column is not None:
        mtype = column.mysql
        if mtype.kind is Kind.BIT:
            return False if mtype.length == 1 else 0
        return _EMPTY_BY_KIND[mtype.kind]
    if isinstance(value, bool):
        return False
    for t, empty in ((int, 0), (float, 0.0), (Decimal, Decimal(0)), (bytes, b""), (bytearray, b"")):
        if isinstance(value, t):
            return empty
    if isinstance(value, dt.datetime):
        return dt.datetime(1970, 1, 1)
    if isinstance(value, dt.date):
        return dt.date(1970, 1, 1)
    if isinstance(value, dt.timedelta):
        return dt.timedelta(0)
    return ""


def canonical_bytes(column: Column | None, value: Any) -> bytes:
    """The bytes hashed for a value: its MySQL text form (so the same value hashes
    the same whatever format it came from), raw bytes for binary columns."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    if column is not None:
        try:
            return to_text(column.mysql, value).encode("utf-8")
        except (ValueError, TypeError):
            pass
    if isinstance(value, Decimal):
        return format(value, "f").encode("ascii")
    return str(value).encode("utf-8")


class MaskField(Transform):
    """Mask columns in both images.

    `empty` writes the type's empty value (0, "", false, 1970-01-01; as Kafka
    Connect MaskField), `null` writes null, `replace` writes `replacement`
    (converted to the column type), `hash` writes the hex SHA-256 of the salt
    followed by the value's MySQL text, the same as `SHA2(CONCAT(salt, col),
    256)` in MySQL or Spark, so masked columns still join. The salt should be a
    secret: give it through `salt_env`. Hashed columns become `char(64)`; a
    masked primary key masks the Kafka key too.
    """

    name = "mask_field"
    known_as = "Kafka Connect MaskField"
    names_columns = True
    protects = True
    options = (
        Option("fields", list, doc="Columns to mask.", check=check_names),
        Option("mode", str, "empty", "How to mask.", choices=("empty", "null", "replace", "hash")),
        Option("replacement", str, None, "The value written by `mode: replace`, as text."),
        Option("salt", str, None, "Salt for `mode: hash` (prefer `salt_env`)."),
        Option("salt_env", str, None, "Environment variable holding the salt for `mode: hash`."),
    )

    def configure(self, opts: Options) -> None:
        if not opts.fields:
            raise ConfigError("list at least one column", f"{self.path}.fields")
        self._fields = tuple(dict.fromkeys(opts.fields))
        self.columns = self._fields
        mode = opts.mode
        if mode == "replace" and opts.replacement is None:
            raise ConfigError("mode: replace needs a replacement", f"{self.path}.replacement")
        if mode != "replace" and opts.replacement is not None:
            raise ConfigError("replacement is only used with mode: replace", f"{self.path}.replacement")
        if mode != "hash" and (opts.salt is not None or opts.salt_env is not None):
            raise ConfigError("salt is only used with mode: hash", f"{self.path}.salt")
        salt = b""
        if mode == "hash":
            if opts.salt is not None and opts.salt_env is not None:
                raise ConfigError("give salt or salt_env, not both", f"{self.path}.salt_env")
            if opts.salt_env is not None:
                value = os.environ.get(opts.salt_env)
                if value is None:
                    raise ConfigError(f"environment variable {opts.salt_env} is not set", f"{self.path}.salt_env")
                salt = value.encode("utf-8")
            elif opts.salt is not None:
                salt = opts.salt.encode("utf-8")
        self._mode = mode
        self._salt = salt
        self._replacement: str | None = opts.replacement
        self._mask: Callable[[Column | None, Any], Any] = getattr(self, f"_mask_{mode}")
        self._schema = SchemaMap(self._new_schema)

    def adds_columns(self) -> tuple[str, ...]:
        return ()

    # -- maskers -------------------------------------------------------------
    def _mask_empty(self, column: Column | None, value: Any) -> Any:
        return _empty(column, value)

    def _mask_null(self, column: Column | None, value: Any) -> Any:
        return None

    def _mask_replace(self, column: Column | None, value: Any) -> Any:
        text = self._replacement
        assert text is not None  # configure() requires a replacement for mode: replace
        if column is None:
            return text
        try:
            return from_text(column.mysql, text)
        except (ValueError, TypeError, ArithmeticError):
            raise TransformError(
                f"replacement {text!r} is not a valid {column.type} value for column {column.name!r}"
            ) from None

    def _mask_hash(self, column: Column | None, value: Any) -> Any:
        return hashlib.sha256(self._salt + canonical_bytes(column, value)).hexdigest()

    def _new_schema(self, schema: TableSchema) -> TableSchema:
        cols = []
        for c in schema.columns:
            if c.name in self._fields:
                if self._mode == "hash":
                    c = Column(c.name, "char(64)", c.nullable, c.primary_key, None, c.comment)
                elif self._mode == "null":
                    c = Column(c.name, c.type, True, c.primary_key, c.default, c.comment)
            cols.append(c)
        return TableSchema(tuple(cols), schema.primary_key)

    def apply(self, event: ChangeEvent) -> Result:
        event.typed()
        schema = event.schema
        by_name = schema.by_name if schema is not None else {}
        mask = self._mask
        for img in (event.before, event.after):
            if img is None:
                continue
            for f in self._fields:
                v = img.get(f)
                if v is not None:
                    img[f] = mask(by_name.get(f), v)
        if schema is not None:
            event.schema = self._schema(schema)
        if event.key is not None:
            for f in self._fields:
                if f in event.key and event.key[f] is not None:
                    event.key = {**event.key, f: mask(by_name.get(f), event.key[f])}
        return event
