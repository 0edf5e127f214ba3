"""The native core's planner: which chains run as a Rust plan, and the seam to it.

The Rust extension ``cdc_smt._native`` (built from ``native/`` when a Rust
toolchain is present) runs whole conversions. The Python codecs stay the
reference: a plan converts a batch of raw values and, per record, gives the
output records byte-identical to the Python path, or says "not handled"
(unusual values, malformed input, DDL, ...) and the chain processes exactly
that record in Python, which also words its dead letter. ``CDC_SMT_NATIVE=0``
forces the Python path.

A chain asks :func:`plan_for` once; ``None`` means the Python path. Plans so far:

* ``canal-json -> debezium-json``: no schema catalog (the plan does not feed
  one), any Debezium options; per table, each column is converted natively
  when its representation is one the plan implements (the default
  decimal/time/binary/bigint modes), else a non-null value of it sends the
  record to Python.
* ``ticdc-canal-json -> debezium-json``: the same, for TiCDC's dialect.
* ``canal-json -> canal-json`` and ``ticdc-canal-json -> canal-json``: the
  Canal writer (:class:`_CanalOutTables`); only transforms that keep rows as
  they are (:func:`_keeps_rows`), or from canal-json the row-changing ones too
  (``transforms/native_rowxf.py``).
* ``canal-json`` / ``ticdc-canal-json -> maxwell-json`` and ``-> ogg-json``: the
  typed-JSON writers (``transforms/native_maxwell.py``), the same transforms
  (from canal-json the row-changing ones on rows re-shaped in Canal text,
  ``native_rowxf.TextShaped``; so too ``-> ticdc-canal-json``).
* ``canal-json`` / ``ticdc-canal-json`` / ``debezium-json -> tdsql-binlog-json``: the TDSQL
  writer (``transforms/native_tdsql_out.py``) on the CloudCanal writer's tables, the
  row-keeping transforms (from canal-json the row-changing ones too, as ``TextShaped``).
* ``canal-json -> dts-avro`` and ``ticdc-canal-json -> dts-avro``: the DTS Avro
  writer (``transforms/native_dts.py``), with the row-keeping transforms.
* ``debezium-json -> canal-json`` and ``debezium-json -> debezium-json``: the
  Debezium reader (``transforms/native_debezium.py``) and the Canal writer, or
  Debezium re-written as itself; the plan reads the records' keys too.
* ``maxwell-json`` / ``ogg-json -> canal-json`` and ``-> debezium-json``: the
  typed-JSON readers (``transforms/native_typed_in.py``) and the Canal writer, or the
  Debezium writer of the Canal reader's plans.
* ``cloudcanal-json -> debezium-json`` and ``-> canal-json``: the Canal reader
  with CloudCanal's field names (``transforms/native_vendor.py``).
* ``dataworks-json -> debezium-json`` and ``-> canal-json``: the DataWorks reader,
  split updates paired within a batch (``transforms/native_vendor.py``).
* ``dts-avro -> debezium-json`` and ``-> canal-json``: the DTS Avro reader
  (``transforms/native_dts_in.py``) and the Debezium or the Canal writer.
* ``ckafka-json -> debezium-json`` and ``-> canal-json``: the CKafka reader, its rows
  typed by the schema catalog (``transforms/native_catalog.py``); ``tdsql-binlog-json``
  the same ways, its positional SQL literals named and typed by the catalog: the only
  chains with a catalog that get a plan.
* ``canal-json`` / ``ticdc-canal-json`` / ``debezium-json -> ckafka-json``: the CKafka
  writer on the CloudCanal writer's tables (``transforms/native_vendor_out.py``).
* ``canal-json`` / ``ticdc-canal-json`` / ``debezium-json -> dataworks-json``: the DataWorks writer on the same
  tables, ``sequenceId`` from the encoder's counter (``transforms/native_vendor_out.py``).

Transforms (:func:`_supported`): those whose effect is the same for every row
of a table and op -- filter by database/table/op, route templates over
per-table fields, drop_tombstones, replace_field, mask_field (hash of string
columns, null, replace, empty), insert_field (static, per-table metadata, ``es``/``ts``/row
index), value_to_key, merge_shards, insert_header, drop_headers, unwrap
(the Debezium writer: the flat row, a delete's tombstone, its per-table and per-row
fields), each optionally under a ``table_matches`` predicate. Per table layout the planner
runs a one-row probe message per op through the chain's own transforms and
encoder (topic, source names, Connect schemas, constants, header edits) and
follows the transforms column by column (:class:`_Shape`); a table where a
transform names a column it lacks (``on_missing``), or anything the shape
cannot describe, is left to Python whole.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
from collections.abc import Callable, Iterable, Sequence
from types import ModuleType
from typing import Any

import orjson

from cdc_smt.transforms.model import Record

_native: ModuleType | None  # the extension (typed by native/typing/_native.pyi), or None
try:  # the extension is optional: a build without Rust has none
    import cdc_smt._native as _extension

    _native = _extension
    _MISSING = ""
except ImportError as exc:  # pragma: no cover - depends on the build
    _native = None
    _MISSING = "not built (no Rust toolchain at install)" if exc.name == "cdc_smt._native" else f"cannot load: {exc}"

ENV = "CDC_SMT_NATIVE"
CANAL_TO_DEBEZIUM = "canal-json -> debezium-json"
TICDC_TO_DEBEZIUM = "ticdc-canal-json -> debezium-json"
CANAL_TO_CANAL = "canal-json -> canal-json"
TICDC_TO_CANAL = "ticdc-canal-json -> canal-json"
CANAL_TO_MAXWELL = "canal-json -> maxwell-json"
TICDC_TO_MAXWELL = "ticdc-canal-json -> maxwell-json"
CANAL_TO_OGG = "canal-json -> ogg-json"
TICDC_TO_OGG = "ticdc-canal-json -> ogg-json"
CANAL_TO_DTS = "canal-json -> dts-avro"
TICDC_TO_DTS = "ticdc-canal-json -> dts-avro"
DEBEZIUM_TO_CANAL = "debezium-json -> canal-json"
DEBEZIUM_TO_DEBEZIUM = "debezium-json -> debezium-json"
CANAL_TO_TICDC = "canal-json -> ticdc-canal-json"
TICDC_TO_TICDC = "ticdc-canal-json -> ticdc-canal-json"
DEBEZIUM_TO_TICDC = "debezium-json -> ticdc-canal-json"
MAXWELL_TO_CANAL = "maxwell-json -> canal-json"
MAXWELL_TO_DEBEZIUM = "maxwell-json -> debezium-json"
OGG_TO_CANAL = "ogg-json -> canal-json"
OGG_TO_DEBEZIUM = "ogg-json -> debezium-json"
CLOUDCANAL_TO_DEBEZIUM = "cloudcanal-json -> debezium-json"
CLOUDCANAL_TO_CANAL = "cloudcanal-json -> canal-json"
DEBEZIUM_TO_MAXWELL = "debezium-json -> maxwell-json"
DEBEZIUM_TO_OGG = "debezium-json -> ogg-json"
DEBEZIUM_TO_DTS = "debezium-json -> dts-avro"
DATAWORKS_TO_DEBEZIUM = "dataworks-json -> debezium-json"
DATAWORKS_TO_CANAL = "dataworks-json -> canal-json"
DTS_TO_DEBEZIUM = "dts-avro -> debezium-json"
DTS_TO_CANAL = "dts-avro -> canal-json"
CANAL_TO_CLOUDCANAL = "canal-json -> cloudcanal-json"
TICDC_TO_CLOUDCANAL = "ticdc-canal-json -> cloudcanal-json"
DEBEZIUM_TO_CLOUDCANAL = "debezium-json -> cloudcanal-json"
DTS_TO_DTS = "dts-avro -> dts-avro"
CKAFKA_TO_CANAL = "ckafka-json -> canal-json"
CKAFKA_TO_DEBEZIUM = "ckafka-json -> debezium-json"
CANAL_TO_CKAFKA = "canal-json -> ckafka-json"
TICDC_TO_CKAFKA = "ticdc-canal-json -> ckafka-json"
DEBEZIUM_TO_CKAFKA = "debezium-json -> ckafka-json"
CANAL_TO_DATAWORKS = "canal-json -> dataworks-json"
TICDC_TO_DATAWORKS = "ticdc-canal-json -> dataworks-json"
DEBEZIUM_TO_DATAWORKS = "debezium-json -> dataworks-json"
TDSQL_TO_CANAL = "tdsql-binlog-json -> canal-json"
TDSQL_TO_DEBEZIUM = "tdsql-binlog-json -> debezium-json"
CANAL_TO_TDSQL = "canal-json -> tdsql-binlog-json"
TICDC_TO_TDSQL = "ticdc-canal-json -> tdsql-binlog-json"
DEBEZIUM_TO_TDSQL = "debezium-json -> tdsql-binlog-json"


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


def partitioner() -> Callable[[list[bytes | None], int, int], list[int]] | None:
    """The extension's batch form of Kafka's default partitioner, ``partitions(keys, n,
    keyless)`` (murmur2 of every key in one call), or ``None`` when the core is off."""
    if _native is None or not enabled():
        return None
    found: Callable[[list[bytes | None], int, int], list[int]] | None = getattr(_native, "partitions", None)
    return found


def kafka_batch() -> Any:
    """The extension's Kafka record batch writer (``KafkaBatch``, ``native/src/kafka_batch.rs``),
    or ``None`` when the core is off (or was built without it)."""
    if _native is None or not enabled():
        return None
    return getattr(_native, "KafkaBatch", None)


def row_placer() -> Any:
    """The extension's ``place_rows`` (a fetched batch's native outputs into per-partition row
    lists in one call: ``native/src/kafka_batch.rs``), or ``None`` when the core is off."""
    if _native is None or not enabled():
        return None
    return getattr(_native, "place_rows", None)


def arrow_parts() -> Any:
    """The extension's ``arrow_parts`` (an Arrow batch of records grouped by topic partition, each
    group appended to ``KafkaBatch`` es as it stands: ``native/src/kafka_batch.rs``), or ``None``
    when the core is off."""
    if _native is None or not enabled():
        return None
    return getattr(_native, "arrow_parts", None)


def plan_for(chain: Any) -> NativePlan | None:
    """The native plan for ``chain``'s decoder, transforms and encoder, or ``None``."""
    if _native is None or not enabled():
        return None
    if chain.catalog is not None:  # only the plans that follow the catalog (its DDL is Python's)
        from cdc_smt.transforms.native_catalog import catalog_plan

        return catalog_plan(chain)
    from cdc_smt.transforms.formats.canal_json import CanalJson
    from cdc_smt.transforms.formats.ckafka_json import CKafkaJson
    from cdc_smt.transforms.formats.cloudcanal_json import CloudCanalJson
    from cdc_smt.transforms.formats.dataworks_json import DataWorksJson
    from cdc_smt.transforms.formats.debezium_json import DebeziumJsonCodec
    from cdc_smt.transforms.formats.dts_avro import DtsAvro
    from cdc_smt.transforms.formats.maxwell_json import MaxwellJson
    from cdc_smt.transforms.formats.ogg_json import OggJson
    from cdc_smt.transforms.formats.tdsql_binlog_json import TdsqlBinlogJson
    from cdc_smt.transforms.formats.ticdc_canal_json import TicdcCanalJson

    decoder, encoder = chain.decoder, chain.encoder
    if type(decoder) is DebeziumJsonCodec and type(encoder) is not DebeziumJsonCodec:
        from cdc_smt.transforms import native_debezium_rowxf, native_rowxf

        if native_rowxf.changes_rows(chain.transforms):  # the writers of Canal text, rows changed
            return native_debezium_rowxf.shaped_plan(chain, _native)
    if type(decoder) in (CanalJson, TicdcCanalJson) and type(encoder) is DtsAvro:
        from cdc_smt.transforms.native_dts import dts_plan

        return dts_plan(chain)
    if type(decoder) in (CanalJson, TicdcCanalJson) and type(encoder) is CanalJson:
        return _canal_plan(chain)
    if type(decoder) in (CanalJson, TicdcCanalJson) and type(encoder) is TicdcCanalJson:
        from cdc_smt.transforms import native_ticdc

        return native_ticdc.plan(chain)
    if type(decoder) in (CanalJson, TicdcCanalJson) and type(encoder) in (MaxwellJson, OggJson):
        from cdc_smt.transforms import native_maxwell

        return native_maxwell.plan(chain)
    if type(decoder) in (CanalJson, TicdcCanalJson) and type(encoder) is CloudCanalJson:
        from cdc_smt.transforms import native_vendor_out

        return native_vendor_out.cloudcanal_plan(chain)
    if type(decoder) is DebeziumJsonCodec and type(encoder) is CloudCanalJson:
        from cdc_smt.transforms import native_vendor_out

        return native_vendor_out.debezium_cloudcanal_plan(chain, _native)
    if type(decoder) in (CanalJson, TicdcCanalJson, DebeziumJsonCodec) and type(encoder) is CKafkaJson:
        from cdc_smt.transforms import native_vendor_out

        if type(decoder) is DebeziumJsonCodec:
            return native_vendor_out.debezium_ckafka_plan(chain, _native)
        return native_vendor_out.ckafka_plan(chain)
    if type(decoder) in (CanalJson, TicdcCanalJson, DebeziumJsonCodec) and type(encoder) is DataWorksJson:
        from cdc_smt.transforms import native_vendor_out

        if type(decoder) is DebeziumJsonCodec:
            return native_vendor_out.debezium_dataworks_plan(chain, _native)
        return native_vendor_out.dataworks_plan(chain)
    if type(decoder) in (CanalJson, TicdcCanalJson, DebeziumJsonCodec) and type(encoder) is TdsqlBinlogJson:
        from cdc_smt.transforms import native_tdsql_out

        if type(decoder) is DebeziumJsonCodec:
            return native_tdsql_out.debezium_tdsql_plan(chain, _native)
        return native_tdsql_out.tdsql_plan(chain)
    if type(decoder) is DebeziumJsonCodec and type(encoder) is TicdcCanalJson:
        from cdc_smt.transforms import native_ticdc

        return native_ticdc.debezium_plan(chain, _native)
    debezium_writers = (CanalJson, DebeziumJsonCodec, MaxwellJson, OggJson, DtsAvro)
    if type(decoder) is DebeziumJsonCodec and type(encoder) in debezium_writers:
        from cdc_smt.transforms.native_debezium import debezium_plan

        return debezium_plan(chain, _native)
    if type(decoder) in (MaxwellJson, OggJson) and type(encoder) in (CanalJson, DebeziumJsonCodec):
        from cdc_smt.transforms.native_typed_in import typed_plan

        return typed_plan(chain, _native)
    if type(decoder) is DtsAvro and type(encoder) in (DebeziumJsonCodec, CanalJson, DtsAvro):
        from cdc_smt.transforms.native_dts_in import dts_in_plan

        return dts_in_plan(chain)
    if type(decoder) is CloudCanalJson and type(encoder) in (CanalJson, DebeziumJsonCodec):
        from cdc_smt.transforms import native_vendor

        if type(encoder) is CanalJson:
            return native_vendor.cloudcanal_canal_plan(chain)
        return native_vendor.cloudcanal_plan(chain)
    if type(decoder) is DataWorksJson and type(encoder) in (CanalJson, DebeziumJsonCodec):
        from cdc_smt.transforms import native_vendor

        return native_vendor.dataworks_plan(chain)
    if type(decoder) not in (CanalJson, TicdcCanalJson) or type(encoder) is not DebeziumJsonCodec:
        return None
    ticdc = type(decoder) is TicdcCanalJson
    return canal_debezium_plan(chain, _CanalTables, TICDC_TO_DEBEZIUM if ticdc else CANAL_TO_DEBEZIUM, ticdc=ticdc)


def canal_debezium_plan(chain: Any, tables: type[_CanalTables], name: str, **reader: Any) -> NativePlan | None:
    """A plan from a Canal-shaped reader (``reader``: its options) to the Debezium writer,
    or ``None`` when a transform is not one the plan runs; ``tables`` compiles the layouts."""
    assert _native is not None
    if not all(_supported(t) for t in chain.transforms):
        return None
    decoder, encoder = chain.decoder, chain.encoder
    compiler = tables(decoder, encoder, list(chain.transforms))
    plan = _native.CanalToDebezium(
        compiler.compile,
        schemas_enable=encoder.schemas_enable,
        tombstones_on_delete=encoder.tombstones_on_delete,
        max_message_bytes=decoder.opts.max_message_bytes,
        **reader,
    )
    return NativePlan(name, plan, compiler.variants)


def _canal_plan(chain: Any) -> NativePlan | None:
    """canal-json or ticdc-canal-json -> canal-json: the Canal writer copies each row's
    values (or re-writes TiCDC's as Canal text) and the message's fields, so only
    transforms that leave rows and their tables as they are (filter by table/op, route,
    drop_tombstones, the header transforms) qualify; the row-changing ones from canal-json
    are ``native_rowxf``'s."""
    from cdc_smt.transforms import native_rowxf

    if native_rowxf.changes_rows(chain.transforms):
        return native_rowxf.canal_plan(chain)
    return row_keeping_plan(
        chain,
        _CanalOutTables,
        (CANAL_TO_CANAL, TICDC_TO_CANAL),
        encoder="canal-json",
        batch_transaction=chain.encoder.batching,
    )


def row_keeping_plan(
    chain: Any,
    tables: type[_CanalTables],
    names: tuple[str, str],
    *,
    plan_class: type[NativePlan] | None = None,
    **writer: Any,
) -> NativePlan | None:
    """A plan from a Canal (or TiCDC) reader to a writer that keeps rows as they are (the
    Canal, typed-JSON and DTS Avro writers), or ``None`` when a transform changes rows.
    ``tables`` compiles the writer's table layouts, ``names`` is the plan's name from
    canal-json and from ticdc-canal-json, ``writer`` the plan's writer options."""
    from cdc_smt.transforms.formats.ticdc_canal_json import TicdcCanalJson

    assert _native is not None
    if not all(_supported(t) and _keeps_rows(t) for t in chain.transforms):
        return None
    decoder = chain.decoder
    ticdc = type(decoder) is TicdcCanalJson
    compiler = tables(decoder, chain.encoder, list(chain.transforms))
    plan = _native.CanalToDebezium(
        compiler.compile, max_message_bytes=decoder.opts.max_message_bytes, ticdc=ticdc, **writer
    )
    return (plan_class or NativePlan)(names[ticdc], plan, compiler.variants)


def _keeps_rows(t: Any) -> bool:
    """Does ``t`` leave a row's values, columns, key and table as they are (it may drop
    the row, route it or edit its headers)?"""
    from cdc_smt.transforms.smt import filter as filter_
    from cdc_smt.transforms.smt import headers, route, tombstones

    keeping = (filter_.Filter, route.Route, tombstones.DropTombstones, headers.InsertHeader, headers.DropHeaders)
    return type(t) in keeping


#: ``insert_field`` metadata the plan writes: per row (``es``, ``ts``, the row index), or
#: the same for every row of a table and op (taken from the probe).
_ROW_METADATA = {"source_ts_ms": "es", "processing_ts_ms": "ts", "row_index": "row"}
_TABLE_METADATA = frozenset({"database", "schema", "table", "qualified_table", "op"})
#: ``unwrap`` fields the plan writes: per row (as ``insert_field``'s), or the same for every
#: row of a table and op (columns from the probe; headers as header edits). The source
#: position fields are left to Python: the readers' messages may carry them per row.
_UNWRAP_TABLE_FIELDS = frozenset({"op", "database", "schema", "table"})


def _supported(t: Any) -> bool:
    """Can the native plan do what ``t`` does, judged from its options alone? Only
    transforms whose effect is the same for every row of a table and op (or a per-row
    value the plan computes itself) qualify; predicates and row conditions do not."""
    from cdc_smt.transforms.predicates import TableMatches
    from cdc_smt.transforms.smt import filter as filter_
    from cdc_smt.transforms.smt import (
        headers,
        insert_field,
        mask_field,
        merge_shards,
        replace_field,
        route,
        tombstones,
        unwrap,
        value_to_key,
    )

    if t.predicate is not None and type(t.predicate) is not TableMatches:
        return False  # a table predicate selects the same for every row of a table
    cls = type(t)
    if cls is filter_.Filter:
        return t._cond is None
    if cls is route.Route:
        return not t._routes and t._topic is not None and (t._topic.static or t._topic._by_table)
    if cls is headers.InsertHeader:
        return bool(t._template.static or t._template._by_table)
    if cls is mask_field.MaskField:
        return t._mode in ("hash", "null", "replace", "empty")
    if cls is merge_shards.MergeShards:
        return t._key_field is None
    if cls is insert_field.InsertField:
        return all(m in _ROW_METADATA or m in _TABLE_METADATA for m in t.opts.metadata.values())
    if cls is unwrap.Unwrap:
        columns, header_fields = _unwrap_fields(t, t._fields), _unwrap_fields(t, t._headers)
        return all(f in _ROW_METADATA or f in _UNWRAP_TABLE_FIELDS for f in columns) and all(
            f in _UNWRAP_TABLE_FIELDS for f in header_fields
        )
    return cls in (tombstones.DropTombstones, replace_field.ReplaceField, value_to_key.ValueToKey, headers.DropHeaders)


def _unwrap_fields(t: Any, named: Sequence[tuple[str, Any]]) -> list[str]:
    """The ``unwrap`` field names (``op``, ``source_ts_ms``) of its prefixed columns or headers."""
    return [name[len(t.opts.prefix) :] for name, _ in named]


#: A header edit: ``("add", name, value, replace)`` or ``("drop", names)``.
HeaderEdit = tuple[Any, ...]


class NativePlan:
    """A compiled native plan and the loop that hands unhandled records to Python."""

    def __init__(self, name: str, plan: Any, variants: list[tuple[str | None, tuple[HeaderEdit, ...] | None]]) -> None:
        self.name = name
        self.plan = plan
        #: Does the plan read the records' keys (the Debezium reader: Python takes the
        #: primary key from them)? Hosts then pass them to :meth:`convert_values`.
        self.needs_keys: bool = plan.needs_keys
        #: Per variant (a table's op after the transforms): the output topic and header edits.
        self.variants = variants

    def convert_values(
        self, values: list[bytes | None], keys: list[bytes | None] | None = None
    ) -> tuple[list[int], list[bytes | None], list[bytes | None], list[int]]:
        """The plan over a batch's raw values in one call, for hosts that keep their own
        records (the worker): per value its output count (``-1``: the chain's Python path
        must process that record), then the outputs' values, keys and variants (indexes
        into :attr:`variants`), flat and in order. ``keys``: the records' keys, one per
        value (a plan that :attr:`needs_keys` handles nothing without them)."""
        counts, values_out, keys_out, variants = self.plan.convert(values, keys)
        return counts, values_out, keys_out, variants

    def run(self, records: Iterable[Record], one: Callable[[Record, Any], None], result: Any) -> None:
        """Convert ``records`` in order into ``result``; ``one`` is the chain's Python path.

        The extension places the outputs (``place_records``: a ``Record`` per output, its
        topic and header edits by its variant) and hands the records the plan did not handle
        to ``one`` at their place: without the interpreter's per-record loop, which was
        Python's largest share of every native conversion."""
        assert _native is not None  # a plan exists only with the extension
        records = records if isinstance(records, list) else list(records)
        keys_in = [r.key for r in records] if self.needs_keys else None
        counts, values, keys, variants = self.plan.convert([r.value for r in records], keys_in)
        _native.place_records(
            Record, records, counts, values, keys, self.variants, variants, _edit_headers, one, result
        )


def edit_headers(headers: list[tuple[str, bytes]], edits: tuple[HeaderEdit, ...]) -> list[tuple[str, bytes]]:
    """A variant's header edits (see :attr:`NativePlan.variants`) applied to a copy of a
    source record's headers, for hosts that place the plan's outputs themselves."""
    return _edit_headers(list(headers), edits)


def _header_edits(t: Any, event: Any, edits: list[HeaderEdit] | None) -> list[HeaderEdit] | None:
    """``edits`` extended by what ``t`` does to the record's headers, if it is a header transform."""
    from cdc_smt.transforms.smt.headers import DropHeaders, InsertHeader
    from cdc_smt.transforms.smt.unwrap import Unwrap

    if type(t) is InsertHeader:
        value = t._static
        if value is None:
            text = t._template.render(event)
            value = None if text is None else text.encode("utf-8")
        return [*(edits or ()), *((("add", t._header, value, t._replace),) if value is not None else ())]
    if type(t) is DropHeaders:
        return [*(edits or ()), ("drop", t._names)]
    if type(t) is Unwrap and t._headers:  # the table's own fields (see _supported): no per-row value
        values = ((name, get(event)) for name, get in t._headers)
        adds = [("add", name, str(v).encode("utf-8"), False) for name, v in values if v is not None]
        return [*(edits or ()), *adds]
    return edits


def _edit_headers(headers: list[tuple[str, bytes]], edits: tuple[HeaderEdit, ...]) -> list[tuple[str, bytes]]:
    """``insert_header`` and ``drop_headers`` as the transforms apply them, in chain order."""
    for edit in edits:
        if edit[0] == "drop":
            headers = [h for h in headers if h[0] not in edit[1]]
        else:
            _, name, value, replace = edit
            if replace:
                headers = [h for h in headers if h[0] != name]
            headers.append((name, value))
    return headers


class _Unsupported(Exception):
    """A table layout the native plan leaves to Python."""


class _Shape:
    """What the transforms do to one table's rows, column by column (input columns are
    indexes into the table's columns; ``insert_field`` columns are ``added``)."""

    def __init__(self, schema: Any) -> None:
        self.schema = schema
        self.names: list[str | None] = [c.name for c in schema.columns]  # current name, None: dropped
        names = self.names
        self.validate = [False] * len(names)  # typed by a transform while present
        #: ``("hash", salt)``, ``("null", b"")`` or ``("const", typed value)`` (``replace``, ``empty``)
        self.masks: list[tuple[str, Any] | None] = [None] * len(names)
        self.added: list[list[Any]] = []  # [current name | None, kind, metadata]
        self.key: list[tuple[str, int]] | None = None  # an explicit key: (name, input column)
        self.pk = list(dict.fromkeys(schema.primary_key))
        #: per transform: does it type the row (so that it can fail on a row's values)?
        self.typing: list[bool] = []
        #: per transform: does it apply to the table (its predicate)?
        self.selected: list[bool] = []
        #: ``unwrap`` applies to the table: its rows are written flat (one unwrap per chain).
        self.unwrapped = False

    def refs(self) -> dict[str, tuple[str, int]]:
        out = {n: ("col", i) for i, n in enumerate(self.names) if n is not None}
        out.update((a[0], ("added", j)) for j, a in enumerate(self.added) if a[0] is not None)
        return out

    def typed(self) -> None:
        self.typing[-1] = True
        for i, n in enumerate(self.names):
            if n is not None:
                self.validate[i] = True

    def column(self, name: str) -> int:
        ref = self.refs().get(name)
        if ref is None or ref[0] != "col":
            raise _Unsupported(name)
        return ref[1]

    def apply(self, t: Any, selected: bool) -> None:
        """Follow ``t`` (``selected``: its predicate accepts the table)."""
        from cdc_smt.transforms.smt import insert_field, mask_field, replace_field, unwrap, value_to_key
        from cdc_smt.transforms.types import Kind

        self.typing.append(False)
        self.selected.append(selected)
        if not selected:
            return
        cls = type(t)
        if cls is replace_field.ReplaceField:
            pk = self.pk
            touched = bool(pk) and (t._renames or t._include is not None or not t._exclude.isdisjoint(pk))
            if touched and any(not t._keeps(k) for k in pk) and self.key is None:
                self.typed()  # freeze_key
                self.key = [(k, self.column(k)) for k in pk]
            for i, n in enumerate(self.names):
                if n is not None:
                    self.names[i] = t._name(n) if t._keeps(n) else None
            for a in self.added:
                if a[0] is not None:
                    a[0] = t._name(a[0]) if t._keeps(a[0]) else None
            if touched:
                self.pk = [t._name(k) for k in pk if t._keeps(k)]
            if self.key is not None and t._renames:
                self.key = [(t._name(k), c) for k, c in self.key]
        elif cls is mask_field.MaskField:
            self.typed()
            for f in t._fields:
                c = self.column(f)
                if self.masks[c] is not None:
                    raise _Unsupported(f)
                if t._mode == "hash":
                    if self.schema.columns[c].mysql.kind is not Kind.STRING:
                        raise _Unsupported(f)
                    self.masks[c] = ("hash", t._salt)
                elif t._mode == "null":
                    self.masks[c] = ("null", b"")
                else:
                    self.masks[c] = ("const", _mask_constant(t, self.schema.columns[c]))
                if self.key is not None and any(k == f and kc != c for k, kc in self.key):
                    raise _Unsupported(f)
        elif cls is value_to_key.ValueToKey:
            self.typed()
            self.key = [(f, self.column(f)) for f in t._fields]
        elif cls is insert_field.InsertField:
            self.typed()
            self.add([(col, None) for col, _ in t._static] + list(t.opts.metadata.items()))
        elif cls is unwrap.Unwrap:
            self.unwrap(t)

    def add(self, columns: list[tuple[str, str | None]]) -> None:
        """Columns appended to the row: ``(name, metadata field)`` (``None``: a constant)."""
        for col, what in columns:
            if col in self.refs():
                raise _Unsupported(col)  # Python overwrites the value in place: another shape
            self.added.append([col, _ROW_METADATA.get(what or "", "const"), what])

    def unwrap(self, t: Any) -> None:
        """``unwrap``: the row written flat, its metadata fields (and ``__deleted``) added."""
        if self.unwrapped:
            raise _Unsupported("unwrap")  # a second unwrap re-reads flat rows: Python
        self.unwrapped = True
        if t._fields or t._headers or t._rewrite:
            self.typed()
        columns: list[tuple[str, str | None]] = [
            (name, what) for (name, _), what in zip(t._fields, _unwrap_fields(t, t._fields), strict=True)
        ]
        self.add(columns + ([(t._deleted, None)] if t._rewrite else []))


def _mask_constant(t: Any, column: Any) -> Any:
    """The typed value ``mask_field``'s ``replace`` or ``empty`` mode writes for every non-null
    value of ``column`` (the same for every row); a replacement the column's type cannot hold
    leaves the table to Python, which dead-letters each such row as it would."""
    from cdc_smt.transforms.errors import TransformError

    try:
        return t._mask(column, None)
    except TransformError:
        raise _Unsupported(column.name) from None


class _CanalTables:
    """Compiles one Canal table layout into the native plan's spec.

    Everything is asked of the Python codecs and transforms themselves: a one-row
    message with the layout (all values null) is decoded, run through the
    transforms and encoded once per op, so the native plan writes what they write.
    """

    def __init__(self, decoder: Any, encoder: Any, transforms: Sequence[Any] = ()) -> None:
        self.decoder = decoder
        self.encoder = encoder
        self.transforms = list(transforms)
        self.timezone = decoder.opts.source_timezone
        self.variants: list[tuple[str | None, tuple[HeaderEdit, ...] | None]] = []
        self._variant_ids: dict[Any, int] = {}

    def compile(
        self, mysql_type: str | None, sql_type: str | None, pk: list[str], database: str | None, table: str | None
    ) -> Any:
        try:
            probe = self._probe(mysql_type, sql_type, pk, database, table)
            return None if probe is None else self._compile(*probe, pk)
        except Exception:  # noqa: BLE001 - a layout Python rejects (or the plan cannot do) is Python's
            return None

    @property
    def form(self) -> Any:
        """The value form of the decoder's texts (the column conversions read them); the
        typed-JSON readers have none."""
        return getattr(self.decoder, "form", None)

    def _compile(self, message: dict[str, Any], event: Any, pk: list[str]) -> Any:
        """The plan's spec for a layout, from its probe (:meth:`_probe`); ``None``: Python's."""
        from cdc_smt.transforms.formats._connect import repr_for_type

        schema = event.schema
        shape = self._shape(event, python_on_missing=True)
        key, explicit = self._key(shape)
        ops = [self._op(message, kind, shape, explicit) for kind in ("INSERT", "UPDATE", "DELETE", "INIT")]
        columns = [
            (
                c.name,
                *_column_op(c, repr_for_type(c.mysql, self.encoder.connect), self.timezone, self.form),
                shape.names[i],
                shape.validate[i],
                *mask,
            )
            for (i, c), mask in zip(enumerate(schema.columns), self._masks(event, shape), strict=True)
        ]
        added = [(a[0], a[1]) for a in shape.added if a[0] is not None]
        return columns, added, key, explicit, ops

    def _masks(self, event: Any, shape: _Shape) -> list[tuple[str, bytes]]:
        """Each input column's ``(mask, argument)`` for the writer: ``hash`` with its salt,
        ``null``, ``const`` with the written JSON of a ``replace``/``empty`` constant (the
        encoder's own rendering of the typed value: the probe ``event`` as an INSERT of the
        table's columns, null but the constants, encoded as it is, not unwrapped), ``("", b"")``
        unmasked."""
        schema = shape.schema
        consts = {c.name: m[1] for c, m in zip(schema.columns, shape.masks, strict=True) if m and m[0] == "const"}
        written = self._written_with(event, schema, consts) if consts else {}
        return [
            ("", b"") if m is None else ("const", orjson.dumps(written[c.name])) if m[0] == "const" else m
            for c, m in zip(shape.schema.columns, shape.masks, strict=True)
        ]

    def _written_with(self, event: Any, schema: Any, values: dict[str, Any]) -> dict[str, Any]:
        """The row the encoder writes for an INSERT of ``schema``'s columns, null but the typed
        ``values`` (``event``, a probe, gives the rest; not unwrapped)."""
        return self._written_row(self._written_value(event, schema, values))

    def _written_value(self, event: Any, schema: Any, values: dict[str, Any]) -> bytes:
        """The message itself of :meth:`_written_with`."""
        import msgspec

        from cdc_smt.transforms.model import UNWRAPPED, Op

        row = {**dict.fromkeys(c.name for c in schema.columns), **values}
        extra = {k: v for k, v in event.extra.items() if k != UNWRAPPED}
        probe = msgspec.structs.replace(
            event, op=Op.INSERT, schema=schema, before=None, after=row, values=None, key=None, extra=extra
        )
        value: bytes = self.encoder.encode(probe)[0].value
        return value

    def _written_row(self, value: bytes) -> dict[str, Any]:
        """The row image of an INSERT the encoder wrote (Debezium's ``after``)."""
        payload = orjson.loads(value)
        row: dict[str, Any] = (payload["payload"] if self.encoder.schemas_enable else payload)["after"]
        return row

    def _accepts(self, types: dict[str, Any], sql_types: Any, pk: list[str]) -> bool:
        """Does the plan take the layout as its message states it (judged before the probe)?"""
        return True

    def _probe(
        self, mysql_type: str | None, sql_type: str | None, pk: list[str], database: str | None, table: str | None
    ) -> tuple[dict[str, Any], Any] | None:
        """The layout's one-row probe message (all values null, ``es`` and ``ts`` 0) and its
        decoded INSERT event; ``None`` (the Python path) when the types are inferred from the
        values, the layout is not :meth:`_accepts`'s or the schema lacks a key column."""
        types = orjson.loads(mysql_type) if mysql_type is not None else None
        if not isinstance(types, dict) or not types:
            return None  # types inferred from the values: the Python path
        sql_types = orjson.loads(sql_type) if sql_type is not None else None
        if not self._accepts(types, sql_types, pk):
            return None
        message = {
            "data": [dict.fromkeys(types)],
            "database": database,
            "es": 0,
            "mysqlType": types,
            "old": None,
            "pkNames": pk,
            "sqlType": sql_types,
            "table": table,
            "ts": 0,
        }
        (event,) = self._decode(message, "INSERT")
        names = [c.name for c in event.schema.columns]
        if any(k not in names for k in event.schema.primary_key):
            return None
        return message, event

    def _decode(self, message: dict[str, Any], kind: str) -> list[Any]:
        return self.decoder.decode(Record(value=orjson.dumps({**message, "type": kind})))

    def _shape(self, event: Any, python_on_missing: bool = False) -> _Shape:
        """The shape of the transforms, their predicates judged on the INSERT probe's
        ``event`` (filters do not change it); ``python_on_missing``: a transform naming a
        column the table lacks leaves the table to Python (which counts or reports it)."""
        shape = _Shape(event.schema)
        for t in self.transforms:
            selected = t.selects(event)
            if python_on_missing and selected and any(c not in event.schema.by_name for c in t.columns):
                raise _Unsupported("on_missing")
            shape.apply(t, selected)
            out = t.apply_batch([event])
            event = out[0] if out else event
        return shape

    def _follow(self, event: Any, selected: Sequence[bool]) -> tuple[Any, list[HeaderEdit] | None]:
        """One op's probe ``event`` after the transforms (``None``: dropped) and their header
        edits; ``selected``: their predicates as judged on the INSERT probe."""
        edits: list[HeaderEdit] | None = None
        for t, was_selected in zip(self.transforms, selected, strict=True):
            if t.selects(event) != was_selected:
                raise _Unsupported("predicate")  # it judges ops differently: Python
            if was_selected:
                edits = _header_edits(t, event, edits)
            out = t.apply_batch([event])
            if not out:
                return None, edits
            (event,) = out
        return event, edits

    def _encode_op(
        self, message: dict[str, Any], kind: str, selected: Sequence[bool]
    ) -> tuple[Any, bytes, str | None, list[HeaderEdit] | None] | None:
        """One op's probe message decoded, followed through the transforms and encoded: the
        event, the value and topic of the one record Python writes, and the header edits
        (``None``: dropped)."""
        (decoded,) = self._decode(message, kind)
        event, edits = self._follow(decoded, selected)
        if event is None:
            return None
        (first,) = self.encoder.encode(event)
        if first.value is None:
            raise _Unsupported("tombstone")  # no row written for the op: not a plan's
        return event, first.value, first.topic, edits

    def _variant(self, topic: str | None, edits: list[HeaderEdit] | None) -> int:
        """The index of the written records' topic and header edits among the plan's variants."""
        ident = (topic, None if edits is None else tuple(edits))
        variant = self._variant_ids.get(ident)
        if variant is None:
            variant = self._variant_ids[ident] = len(self.variants)
            self.variants.append(ident)
        return variant

    @staticmethod
    def _key(shape: _Shape) -> tuple[list[tuple[str, int]], bool]:
        """The key fields and whether a transform set them (they must end up as written columns)."""
        if shape.key is not None:
            if any(shape.names[c] != name for name, c in shape.key):
                raise _Unsupported("key")
            return list(shape.key), True
        return [(k, shape.column(k)) for k in shape.pk], False

    def _op(self, message: dict[str, Any], kind: str, shape: _Shape, explicit: bool) -> tuple[int, Any]:
        """One op's entry: ``(0, None)`` dropped, ``(1, None)`` Python, ``(2, plan)``."""
        from cdc_smt.transforms.smt.base import UNWRAPPED

        (decoded,) = self._decode(message, kind)
        event: Any = decoded
        edits: list[HeaderEdit] | None = None
        typing = False
        tomb: tuple[Any, list[HeaderEdit] | None] | None = None  # unwrap's tombstone, its header edits
        for t, types_rows, selected in zip(self.transforms, shape.typing, shape.selected, strict=True):
            if tomb is not None:
                if selected and not _keeps_rows(t):
                    return 1, None  # the row changes after its tombstone was cut: the plan's key is the row's
                tomb = _follow_tombstone(t, *tomb)
            if event is None:
                continue
            if t.selects(event) != selected:
                raise _Unsupported("predicate")  # it judges ops differently: Python
            if selected and any(c not in event.schema.by_name for c in t.columns):
                raise _Unsupported("on_missing")  # Python handles (and counts or reports) the table
            event, edits, tomb = _apply_step(t, event, selected, edits, tomb)
            if event is None and tomb is None:
                return (1 if typing else 0), None
            typing = typing or types_rows
        if event is None and tomb is None:
            return (1 if typing else 0), None
        if tomb is not None or event.extra.get(UNWRAPPED):
            return self._unwrapped_op(event, edits, tomb, shape, explicit)
        records = self.encoder.encode(event)
        first = records[0]
        self._check_written(event, kind, shape, explicit)
        payload = orjson.loads(first.value)
        if self.encoder.schemas_enable:
            payload = payload["payload"]
        written = payload["after"] if payload["after"] is not None else payload["before"]
        variant = self._variant(first.topic, edits)
        schemas = self.encoder.schemas_enable
        return 2, (
            variant,
            _source_parts(payload["source"]),
            self._consts(shape, written),
            _schema_part(first.key) if schemas and first.key is not None else None,
            _schema_part(first.value) if schemas else None,
            None,
        )

    @staticmethod
    def _consts(shape: _Shape, written: dict[str, Any]) -> list[bytes]:
        """The written values of the constant added columns (``null`` where no row is written)."""
        added = [a[0] for a in shape.added if a[0] is not None and a[1] == "const"]
        return [orjson.dumps(written.get(name)) for name in added]

    @staticmethod
    def _check_written(event: Any, kind: str, shape: _Shape, explicit: bool) -> None:
        """Is the probe ``event`` after the transforms what the shape describes?"""
        main = event.after if event.after is not None else event.before
        live = [n for n in shape.names if n is not None]
        added = [a[0] for a in shape.added if a[0] is not None]
        if list(main) != live + added:
            raise _Unsupported("columns")  # the shape does not describe what Python wrote
        if kind == "UPDATE" and event.before is not None and list(event.before) != live:
            raise _Unsupported("columns")
        if explicit != (event.key is not None):
            raise _Unsupported("key")

    def _unwrapped_op(
        self,
        event: Any,
        edits: list[HeaderEdit] | None,
        tomb: tuple[Any, list[HeaderEdit] | None] | None,
        shape: _Shape,
        explicit: bool,
    ) -> tuple[int, Any]:
        """The entry of an op ``unwrap`` applies to: its flat row (``event``; ``None``: none
        written) and the tombstone after it (``tomb``: the event and its header edits). Each
        record's headers are checked to be its edits', the tombstone's key to be the plan's."""
        schemas = self.encoder.schemas_enable
        key_schemas: set[bytes] = set()
        consts = self._consts(shape, {})
        value_schema = None
        variant = tomb_variant = None
        if event is not None:
            (record,) = self.encoder.encode(event)
            self._check_written(event, "", shape, explicit)
            if record.value is None or list(record.headers or ()) != _edit_headers([], tuple(edits or ())):
                raise _Unsupported("unwrapped")
            written = orjson.loads(record.value)
            row = written["payload"] if schemas else written
            if any(row[a[0]] != 0 for a in shape.added if a[0] is not None and a[1] in ("es", "ts", "row")):
                raise _Unsupported("metadata")  # the probe's is 0 where the plan reads it: not this reader's
            consts = self._consts(shape, row)
            value_schema = _schema_part(record.value) if schemas else None
            if schemas and record.key is not None:
                key_schemas.add(_schema_part(record.key))
            variant = self._variant(record.topic, edits)
        if tomb is not None:
            removed, tomb_edits = tomb
            (record,) = self.encoder.encode(removed)
            key = self._key(shape)[0]
            written_key = orjson.loads(record.key) if record.key is not None else None
            if schemas and written_key is not None:
                key_schemas.add(_schema_part(record.key))
                written_key = written_key["payload"]
            if (
                record.value is not None
                or list(record.headers or ()) != _edit_headers([], tuple(tomb_edits or ()))
                or explicit != (removed.key is not None)
                or list(written_key or ()) != [name for name, _ in key]
            ):
                raise _Unsupported("tombstone")
            tomb_variant = self._variant(record.topic, tomb_edits)
        if len(key_schemas) > 1:
            raise _Unsupported("key schema")
        return 2, (
            variant if variant is not None else tomb_variant,
            (b"", b"", b""),
            consts,
            next(iter(key_schemas), None),
            value_schema,
            (event is not None, tomb_variant),
        )


def _apply_step(
    t: Any, event: Any, selected: bool, edits: list[HeaderEdit] | None, tomb: Any
) -> tuple[Any, list[HeaderEdit] | None, Any]:
    """One transform on an op's probe ``event``: the row event after it (``None``: dropped),
    the header edits, and ``unwrap``'s tombstone (with the edits made before it) if it cut one
    (``tomb``: the one cut before); more than one of either is Python's."""
    from cdc_smt.transforms.smt.base import is_tombstone

    prior = edits
    if selected:
        edits = _header_edits(t, event, edits)
    out = t.apply_batch([event])
    made = [e for e in out if is_tombstone(e)]
    rows = [e for e in out if not is_tombstone(e)]
    if made:
        if len(made) > 1 or len(rows) > 1 or tomb is not None:
            raise _Unsupported("tombstones")
        tomb = (made[0], prior)  # unwrap's, cut before it added headers
    if len(rows) > 1:
        raise _Unsupported("rows")
    return (rows[0] if rows else None), edits, tomb


def _follow_tombstone(t: Any, tomb: Any, edits: list[HeaderEdit] | None) -> tuple[Any, list[HeaderEdit] | None] | None:
    """``unwrap``'s tombstone after ``t`` (``None``: dropped) and its header edits; only
    transforms that keep rows may touch it (the plan writes its key from the row)."""
    if not t.selects(tomb):
        return tomb, edits
    if not _keeps_rows(t):
        raise _Unsupported("tombstone")
    edits = _header_edits(t, tomb, edits)
    out = t.apply_batch([tomb])
    return (out[0], edits) if out else None


def canal_text_op(column: Any, zoned: bool) -> tuple[str, int | None]:
    """How the Canal writer converts one column's Canal text (``canal_text.rs``'s
    ``TextOp``: ``(op, arg)``; ``("python", None)``: not natively); ``zoned``: a TIMESTAMP
    is written in the zone it was read in."""
    from cdc_smt.transforms.types import Kind

    t = column.mysql
    k = t.kind
    if k is Kind.STRING or k is Kind.JSON or ((k is Kind.ENUM or k is Kind.SET) and not t.values):
        return ("same", None)
    if k is Kind.INT:
        return ("int", None)
    if k is Kind.YEAR:
        return ("year", None)
    if k is Kind.BIT and t.length is not None:
        return ("bits", t.length)
    if k is Kind.DECIMAL and t.scale is not None:
        return ("decimal", t.scale)
    if k is Kind.FLOAT and not t.is_single_float:
        return ("double", None)
    if k is Kind.DATE:
        return ("date", None)
    if (k is Kind.DATETIME or (k is Kind.TIMESTAMP and zoned)) and t.fsp is not None:
        return ("datetime", t.fsp)
    if k is Kind.TIME and t.fsp is not None:
        return ("time", t.fsp)
    if k is Kind.BYTES:
        return ("bytes", None)
    return ("python", None)


class _CanalOutTables(_CanalTables):
    """Compiles one Canal table layout for the Canal writer: its columns and key, and per
    op whether the transforms drop, keep (with which topic and header edits) or leave the
    rows to Python. The probe's Canal message is checked to be the input's row and table
    (what the writer copies). From TiCDC (``retext``), also each column's conversion to
    Canal text, its ``mysqlType`` and its ``sqlType`` codes, checked against the probe's."""

    @property
    def retext(self) -> bool:
        return self.decoder.form is not self.encoder.form

    def _written_row(self, value: bytes) -> dict[str, Any]:
        row: dict[str, Any] = orjson.loads(value)["data"][0]
        return row

    def _compile(self, message: dict[str, Any], event: Any, pk: list[str]) -> Any:
        from cdc_smt.transforms.types import Kind

        types, sql_types = message["mysqlType"], message["sqlType"]
        schema = event.schema
        names = [c.name for c in schema.columns]
        if sorted(names) != sorted(types):
            return None
        if not self.retext and (names != list(types) or sorted(sql_types or ()) != sorted(names)):
            return None  # the message's type maps are copied only when they name the columns
        zoned = self.timezone == self.encoder.opts.source_timezone
        if not zoned and not self.retext and any(c.mysql.kind is Kind.TIMESTAMP for c in schema.columns):
            return None  # TIMESTAMP text re-based between the zones: Python
        shape = self._shape(event)
        texts = [self._text(c, zoned) for c in schema.columns] if self.retext else None
        ops = [self._op_canal(message, kind, shape, texts) for kind in ("INSERT", "UPDATE", "DELETE", "INIT")]
        return names, list(pk), ops, texts

    def _accepts(self, types: dict[str, Any], sql_types: Any, pk: list[str]) -> bool:
        if not self.retext and (not isinstance(sql_types, dict) or not sql_types):
            return False  # sqlType computed from the values: the Python path
        return len(set(pk)) == len(pk)

    def _text(self, column: Any, zoned: bool) -> tuple[str, str, int | None, int, int, int, int | None]:
        """One column's ``(mysqlType, op, arg, NULL code, code, wide code, unsigned max)``."""
        from cdc_smt.transforms.types import Kind

        t = column.mysql
        k = t.kind
        op = canal_text_op(column, zoned)
        encoder = self.encoder
        by_null = encoder.sql_type_by_null(column)
        if by_null is not None:
            return (encoder.mysql_type_text(column), *op, by_null[0], by_null[1], 0, None)
        if k is not Kind.INT or not t.unsigned or op[0] != "int":
            raise _Unsupported("sqlType")
        signed, wide = t.jdbc_type(None), t.jdbc_type(1 << 64)
        bits = next(
            b
            for b in (8, 16, 24, 32, 64)
            if t.jdbc_type((1 << (b - 1)) - 1) == signed and t.jdbc_type(1 << (b - 1)) == wide
        )
        return (encoder.mysql_type_text(column), *op, signed, signed, wide, (1 << (bits - 1)) - 1)

    def _op_canal(
        self, message: dict[str, Any], kind: str, shape: _Shape, texts: list[Any] | None
    ) -> tuple[int, int | None]:
        """One op's entry: ``(0, None)`` dropped, ``(2, variant)`` written."""
        encoded = self._encode_op(message, kind, shape.selected)
        if encoded is None:
            return 0, None
        event, value, topic, edits = encoded
        written = orjson.loads(value)
        database, table = message["database"], message["table"]
        if texts is not None:  # Canal's own defaults; the type maps of the probe's all-null row
            database, table = database or "", table or ""
            row = message["data"][0]
            index = {c.name: i for i, c in enumerate(event.schema.columns)}
            if written.get("mysqlType") != {n: texts[index[n]][0] for n in row} or written.get("sqlType") != {
                n: texts[index[n]][3] for n in row
            }:
                raise _Unsupported("type maps")
        if (
            written.get("data") != message["data"]
            or written.get("database") != database
            or written.get("table") != table
            or written.get("type") != kind
        ):
            raise _Unsupported("message")  # not what the writer copies
        return 2, self._variant(topic, edits)


#: The source block the plan writes: Debezium's MySQL fields (``ts_ms`` and ``row`` per row).
_SOURCE_FIELDS = (
    "version", "connector", "name", "ts_ms", "snapshot", "db", "sequence", "table",
    "server_id", "gtid", "file", "pos", "row", "thread", "query",
)  # fmt: skip


def _source_parts(source: dict[str, Any]) -> tuple[bytes, bytes, bytes]:
    """The probe's source block around its ``ts_ms`` and ``row`` (the probe has ``es`` 0, row 0)."""
    if tuple(source) != _SOURCE_FIELDS or source["ts_ms"] != 0 or source["row"] != 0:
        raise _Unsupported("source")

    def fields(names: tuple[str, ...]) -> bytes:
        return b",".join(orjson.dumps(n) + b":" + orjson.dumps(source[n]) for n in names)

    return (
        b"{" + fields(_SOURCE_FIELDS[:3]) + b',"ts_ms":',
        b"," + fields(_SOURCE_FIELDS[4:12]) + b',"row":',
        b"," + fields(_SOURCE_FIELDS[13:]) + b"}",
    )


def _schema_part(value: bytes) -> bytes:
    """``S`` of ``{"schema":S,"payload":P}`` (no JSON string can hold ``,"payload":`` unescaped)."""
    head, sep, _ = value.partition(b',"payload":')
    if not sep or not head.startswith(b'{"schema":'):
        raise ValueError("not a schema-wrapped message")
    return head[len(b'{"schema":') :]


def _column_op(column: Any, r: Any, tz: str, form: Any) -> tuple[str, Any]:
    """The native conversion of one column from Canal text (``form``: the decoder's value
    form) to its Debezium representation (``python``: none, a non-null value goes to Python)."""
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
            return ("enum", _enum_table(column, form))
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
    "CANAL_TO_CANAL",
    "CANAL_TO_CKAFKA",
    "CANAL_TO_DATAWORKS",
    "CANAL_TO_CLOUDCANAL",
    "CANAL_TO_MAXWELL",
    "CANAL_TO_OGG",
    "CANAL_TO_DEBEZIUM",
    "CANAL_TO_DTS",
    "CANAL_TO_TICDC",
    "CKAFKA_TO_CANAL",
    "CKAFKA_TO_DEBEZIUM",
    "DEBEZIUM_TO_CKAFKA",
    "DEBEZIUM_TO_DATAWORKS",
    "TDSQL_TO_CANAL",
    "TDSQL_TO_DEBEZIUM",
    "CANAL_TO_TDSQL",
    "TICDC_TO_TDSQL",
    "DEBEZIUM_TO_TDSQL",
    "CLOUDCANAL_TO_CANAL",
    "CLOUDCANAL_TO_DEBEZIUM",
    "DATAWORKS_TO_CANAL",
    "DATAWORKS_TO_DEBEZIUM",
    "DEBEZIUM_TO_CANAL",
    "DEBEZIUM_TO_CLOUDCANAL",
    "DEBEZIUM_TO_DEBEZIUM",
    "DEBEZIUM_TO_TICDC",
    "MAXWELL_TO_CANAL",
    "MAXWELL_TO_DEBEZIUM",
    "OGG_TO_CANAL",
    "OGG_TO_DEBEZIUM",
    "DEBEZIUM_TO_DTS",
    "DTS_TO_CANAL",
    "DTS_TO_DTS",
    "DTS_TO_DEBEZIUM",
    "DEBEZIUM_TO_MAXWELL",
    "DEBEZIUM_TO_OGG",
    "TICDC_TO_CANAL",
    "TICDC_TO_CKAFKA",
    "TICDC_TO_DATAWORKS",
    "TICDC_TO_CLOUDCANAL",
    "TICDC_TO_MAXWELL",
    "TICDC_TO_OGG",
    "TICDC_TO_DEBEZIUM",
    "TICDC_TO_DTS",
    "TICDC_TO_TICDC",
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
