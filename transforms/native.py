"""The native core's planner: which chains run as a Rust plan, and the seam to it.

The Rust extension ``cdc_smt._native`` (built from ``native/`` when a Rust
toolchain is present) runs whole conversions. The Python codecs stay the
reference: a plan converts a batch of raw values and, per record, gives the
output records byte-identical to the Python path, or says "not handled"
(unusual values, malformed input, DDL, ...) and the chain processes exactly
that record in Python, which also words its dead letter. ``CDC_SMT_NATIVE=0``
forces the Python path.

A chain asks :func:`plan_for` once; ``None`` means the Python path. Plans so far:

* ``canal-json -> debezium-json``: no transforms, no schema catalog (the plan
  does not feed one), any Debezium options; per table, each column is
  converted natively when its representation is one the plan implements
  (the default decimal/time/binary/bigint modes), else a non-null value of
  it sends the record to Python.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

import orjson

from cdc_smt.transforms.model import Record

_native: ModuleType | None  # the extension (typed by native/typing/_native.pyi), or None
try:  # the extension is optional: a build without Rust has none
    from cdc_smt import _native as _extension

    _native = _extension
    _MISSING = ""
except ImportError as exc:  # pragma: no cover - depends on the build
    _native = None
    _MISSING = "not built (no Rust toolchain at install)" if exc.name == "cdc_smt._native" else f"cannot load: {exc}"

ENV = "CDC_SMT_NATIVE"
CANAL_TO_DEBEZIUM = "canal-json -> debezium-json"


def available() -> bool:
    """Is the extension built (whatever ``CDC_SMT_NATIVE`` says)?"""
    return _native is not None


def enabled() -> bool:
    """Is the native core in use: built, and not switched off with ``CDC_SMT_NATIVE=0``?"""
    return _native is not None and os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def status() -> dict[str, Any]:
    """What ``cdc-smt --version`` and ``cdc-smt formats --json`` report."""
    if _native is None:
        return {"active": False, "reason": _MISSING, "plans": []}
    if not enabled():
        return {"active": False, "reason": f"{ENV}=0", "plans": list(_native.PLANS)}
    return {"active": True, "version": _native.__version__, "plans": list(_native.PLANS)}


def describe() -> str:
    """One line: ``native core: active (canal-json -> debezium-json)`` or why not."""
    s = status()
    if s["active"]:
        return f"native core {s['version']}: active ({', '.join(s['plans'])})"
    return f"native core: inactive ({s['reason']})"


def plans_of(format_name: str) -> list[str]:
    """The native plans a format takes part in (empty when the core is inactive)."""
    if _native is None or not enabled():
        return []
    return [p for p in _native.PLANS if format_name in p.split(" -> ")]


def plan_for(chain: Any) -> NativePlan | None:
    """The native plan for ``chain``'s decoder, transforms and encoder, or ``None``."""
    if _native is None or not enabled() or chain.transforms or chain.catalog is not None:
        return None
    from cdc_smt.transforms.formats.canal_json import CanalJson
    from cdc_smt.transforms.formats.debezium_json import DebeziumJsonCodec

    decoder, encoder = chain.decoder, chain.encoder
    if type(decoder) is not CanalJson or type(encoder) is not DebeziumJsonCodec:
        return None
    compiler = _CanalTables(decoder, encoder)
    plan = _native.CanalToDebezium(
        compiler.compile,
        schemas_enable=encoder.schemas_enable,
        tombstones_on_delete=encoder.tombstones_on_delete,
        prefix=encoder.prefix,
        max_message_bytes=decoder.opts.max_message_bytes,
    )
    return NativePlan(CANAL_TO_DEBEZIUM, plan)


class NativePlan:
    """A compiled native plan and the loop that hands unhandled records to Python."""

    def __init__(self, name: str, plan: Any) -> None:
        self.name = name
        self.plan = plan

    def run(self, records: Iterable[Record], one: Callable[[Record, Any], None], result: Any) -> None:
        """Convert ``records`` in order into ``result``; ``one`` is the chain's Python path."""
        records = records if isinstance(records, list) else list(records)
        counts, values, keys = self.plan.convert([r.value for r in records])
        append = result.outputs.append
        start = 0
        for record, n in zip(records, counts, strict=True):
            if n == 1:  # the usual case, kept to one step
                headers = record.headers
                append(Record(value=values[start], key=keys[start], headers=list(headers) if headers else []))
                start += 1
            elif n < 0:
                one(record, result)
            else:
                headers = record.headers
                for i in range(start, start + n):
                    append(Record(value=values[i], key=keys[i], headers=list(headers) if headers else []))
                start += n


class _CanalTables:
    """Compiles one Canal table layout into the column ops of the native plan.

    Everything is asked of the Python codecs themselves (a one-row message with
    the layout is decoded and encoded), so the native plan writes what they write.
    """

    def __init__(self, decoder: Any, encoder: Any) -> None:
        self.decoder = decoder
        self.encoder = encoder
        self.timezone = decoder.opts.source_timezone

    def compile(
        self, mysql_type: str | None, sql_type: str | None, pk: list[str], database: str | None, table: str | None
    ) -> Any:
        from cdc_smt.transforms.formats._connect import repr_for_type

        try:
            message = {
                "data": [dict.fromkeys(pk)],
                "database": database,
                "es": 0,
                "mysqlType": orjson.loads(mysql_type) if mysql_type is not None else None,
                "pkNames": pk,
                "sqlType": orjson.loads(sql_type) if sql_type is not None else None,
                "table": table,
                "ts": 0,
                "type": "INSERT",
            }
            if not isinstance(message["mysqlType"], dict) or not message["mysqlType"]:
                return None  # types inferred from the values: the Python path
            events = self.decoder.decode(Record(value=orjson.dumps(message)))
            schema = events[0].schema
            names = {c.name for c in schema.columns}
            if any(k not in names for k in schema.primary_key):
                return None
            columns = [
                (c.name, *_column_op(c, repr_for_type(c.mysql, self.encoder.connect), self.timezone))
                for c in schema.columns
            ]
            key_schema = envelope_schema = None
            if self.encoder.schemas_enable:
                out = self.encoder.encode(events[0])
                envelope_schema = _schema_part(out[0].value)
                key_schema = _schema_part(out[0].key) if out[0].key is not None else None
        except Exception:  # noqa: BLE001 - a layout Python rejects is Python's to report
            return None
        return columns, list(dict.fromkeys(schema.primary_key)), key_schema, envelope_schema


def _schema_part(value: bytes) -> bytes:
    """``S`` of ``{"schema":S,"payload":P}`` (no JSON string can hold ``,"payload":`` unescaped)."""
    head, sep, _ = value.partition(b',"payload":')
    if not sep or not head.startswith(b'{"schema":'):
        raise ValueError("not a schema-wrapped message")
    return head[len(b'{"schema":') :]


def _column_op(column: Any, r: Any, tz: str) -> tuple[str, Any]:
    """The native conversion of one column from Canal text to its Debezium representation
    (``python``: none, a non-null value goes to Python)."""
    from cdc_smt.transforms.formats.canal_json import CANAL_TEXT
    from cdc_smt.transforms.types import Kind

    t = column.mysql
    k = t.kind
    kind = r.kind
    if kind == "int" and (k is Kind.INT or k is Kind.YEAR):
        return ("int64_wrap" if t.base == "bigint" and t.unsigned and r.ctype == "int64" else "int", None)
    if kind == "string":
        if k is Kind.STRING or k is Kind.JSON or ((k is Kind.ENUM or k is Kind.SET) and not t.values):
            return ("str", None)
        if k is Kind.ENUM:
            return ("enum", _enum_table(column, CANAL_TEXT))
        if k is Kind.SET:
            return ("set", list(t.values))
    if kind == "decimal" and (k is Kind.DECIMAL or k is Kind.INT):
        return ("decimal", r.scale)
    if kind == "float64" and k is Kind.FLOAT and t.base != "float":
        return ("double", None)
    if k is Kind.BIT:
        if kind == "bool" and (t.length or 1) == 1:
            return ("bit1", None)
        if kind == "bits":
            return ("bits", ((r.length or t.length or 1) + 7) // 8)
    if kind == "date" and k is Kind.DATE:
        return ("date", None)
    if k is Kind.DATETIME or k is Kind.TIMESTAMP:
        if kind == "ts_ms":
            return ("epoch_ms", None)
        if kind == "ts_us":
            return ("epoch_us", None)
        if kind == "zoned":
            return ("iso_utc", tz) if zones_agree(tz) else ("python", None)
    if kind == "time_us" and k is Kind.TIME:
        return ("time_us", None)
    if kind == "bytes" and k is Kind.BYTES:
        return ("bytes", None)
    return ("python", None)


@functools.cache
def zones_agree(name: str) -> bool:
    """Do Python's ``zoneinfo`` and the zone database compiled into the extension give
    ``name`` the same UTC offsets, day by day over 1900-2037 (where the plan converts
    TIMESTAMPs natively)? Zones they disagree on are converted in Python."""
    if name == "UTC":
        return True
    if _native is None:
        return False
    from cdc_smt.transforms.types import zone

    start = int(dt.datetime(1900, 1, 1, 12, tzinfo=dt.UTC).timestamp())
    end = int(dt.datetime(2038, 1, 1, tzinfo=dt.UTC).timestamp())
    instants = list(range(start, end, 86_400))
    native_offsets = _native.zone_offsets(name, instants)
    if native_offsets is None:
        return False
    tz = zone(name)

    def offset(t: int) -> float:
        off = dt.datetime.fromtimestamp(t, tz).utcoffset()
        assert off is not None  # an aware datetime always has one
        return off.total_seconds()

    return all(offset(t) == o for t, o in zip(instants, native_offsets, strict=True))


def _enum_table(column: Any, form: Any) -> dict[str, str]:
    """The labels of an ENUM's usual texts (its indexes, ``0``, its non-numeric labels),
    as the Canal value form reads them; other texts go to Python."""
    texts = [
        "0",
        *map(str, range(1, len(column.mysql.values) + 1)),
        *(v for v in column.mysql.values if not v.isdigit()),
    ]
    table = {}
    for text in texts:
        try:
            table[text] = form.to_python(column, text)
        except ValueError:
            pass
    return table


__all__ = [
    "CANAL_TO_DEBEZIUM",
    "ENV",
    "NativePlan",
    "available",
    "describe",
    "enabled",
    "plan_for",
    "plans_of",
    "status",
    "zones_agree",
]
