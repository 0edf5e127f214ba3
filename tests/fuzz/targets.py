"""What is fuzzed: every decoder in the format registry, the chain loader, the job loader.

A :class:`Target` has seed inputs (corpus messages and messages generated from
the deterministic workload, encoded by the format itself; the example chain
and job files), a mutator, and ``run(data)`` which may raise only the target's
own error (``expected``).
"""

from __future__ import annotations

import atexit
import os
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import orjson
import yaml

from cdc_smt.transforms.catalog import SchemaCatalog
from cdc_smt.transforms.config import build_transforms
from cdc_smt.transforms.errors import ConfigError, DecodeError
from cdc_smt.transforms.formats import get_codec, registry
from cdc_smt.transforms.model import Record
from tests.corpus import corpus_dir, read_messages
from tests.fuzz import mutate
from tests.workload import events as workload_events

ROOT = Path(__file__).resolve().parents[2]
#: Inputs one codec instance sees before it is flushed and replaced (codecs keep state).
ROTATE = 500


@dataclass
class Target:
    name: str
    seeds: list[bytes]
    mutator: Callable[[bytes, Any], bytes]
    run: Callable[[bytes], None]
    expected: tuple[type[BaseException], ...]
    reset: Callable[[], None] = field(default=lambda: None)
    #: CPU seconds per input: 1 for decoders (the issue's bound); the loaders get 5, as
    #: pure-Python PyYAML takes about 1.2 s to reject 1,000-deep flow nesting
    limit_s: float = 1.0


# -- decoders ------------------------------------------------------------------------------


def _catalog_ddl() -> list[tuple[str, str]]:
    """CREATE TABLE statements of the workload's tables (the catalog knows them)."""
    out = []
    for e in workload_events():
        if e.ddl and e.ddl.lstrip().upper().startswith("CREATE"):
            out.append((e.source.database or "shop", e.ddl))
    return out


def new_catalog() -> SchemaCatalog:
    catalog = SchemaCatalog()
    for database, ddl in _catalog_ddl():
        catalog.apply_ddl(database, ddl)
    return catalog


def _corpus_seeds(fmt: str) -> list[bytes]:
    root = corpus_dir()
    if root is None or not (root / fmt).is_dir():
        return []
    out: list[bytes] = []
    for path in sorted((root / fmt).iterdir()):
        if ".expected" in path.name or path.suffix in (".avsc", ".md") or path.name.endswith(".schema.json"):
            continue
        try:
            out.extend(read_messages(path))
        except Exception:  # noqa: BLE001 - a corpus file that is not messages (docs, schemas)
            continue
    return out


def _generated_seeds(fmt: str, options: tuple[tuple[str, Any], ...] = ()) -> list[bytes]:
    """The deterministic workload encoded by the format itself (what it writes, it must read)."""
    try:
        codec = get_codec(fmt, dict(options), catalog=new_catalog())
    except Exception:  # noqa: BLE001
        return []
    out: list[bytes] = []
    for e in workload_events():
        try:
            out.extend(r.value for r in codec.encode(e) if r.value is not None)
        except Exception:  # noqa: BLE001 - events a format cannot carry
            continue
    return out


@cache
def decoder_seeds(fmt: str, options: tuple[tuple[str, Any], ...] = ()) -> tuple[bytes, ...]:
    seen: dict[bytes, None] = {}
    for s in (*_corpus_seeds(fmt), *_generated_seeds(fmt, options)):
        seen.setdefault(s, None)
    return tuple(seen)


class DecoderRun:
    """Decode with one codec instance for :data:`ROTATE` inputs (state carries over,
    as in a stream), type every event's values (decoders may type lazily: a value
    form's ``to_python`` raises ``ValueError`` naming the column, by contract), flush."""

    def __init__(self, fmt: str, options: dict[str, Any] | None = None) -> None:
        self.fmt = fmt
        self.options = options or {}
        self.codec: Any = None
        self.used = 0

    def reset(self) -> None:
        self.codec = None

    def __call__(self, data: bytes) -> None:
        if self.codec is None or self.used >= ROTATE:
            old = self.codec
            self.codec = get_codec(self.fmt, self.options, catalog=new_catalog())
            self.used = 0
            if old is not None:
                old.flush()
        self.used += 1
        for e in self.codec.decode(Record(value=data, topic="t", partition=0, offset=self.used)):
            try:
                e.typed()
            except ValueError as exc:  # the value-form contract: a ValueError naming the column
                if "column" not in str(exc) and "schema" not in str(exc):
                    raise AssertionError(f"value error without the column: {exc}") from None


#: Decoder option variants that change what is decoded (the seeds are written with them too):
#: Debezium with the Connect schema part and its other value representations.
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "debezium-json+schema": (
        "debezium-json",
        {
            "schemas_enable": True,
            "decimal_handling_mode": "string",
            "time_precision_mode": "connect",
            "binary_handling_mode": "hex",
            "bigint_unsigned_handling_mode": "precise",
        },
    ),
    "debezium-json+numeric": (
        "debezium-json",
        {"schemas_enable": True, "decimal_format": "numeric", "binary_handling_mode": "base64-url-safe"},
    ),
}


def decoder_target(fmt: str, options: dict[str, Any] | None = None, name: str | None = None) -> Target:
    cls = registry()[fmt]
    if cls.binary:
        walker = mutate.AvroWalker(_avro_schema(fmt))
        mutator: Callable[[bytes, Any], bytes] = lambda data, rng: mutate.mutate_avro(data, rng, walker)  # noqa: E731
    else:
        mutator = mutate.mutate_json
    run = DecoderRun(fmt, options)
    seeds = decoder_seeds(fmt, tuple(sorted((options or {}).items())))
    return Target(name or fmt, list(seeds), mutator, run, (DecodeError,), run.reset)


def _avro_schema(fmt: str) -> Any:
    from cdc_smt import schemas

    return schemas.load_avro(fmt)


# -- the native core, against the Python path ----------------------------------------------------


class NativeDifferential:
    """One native plan (``source`` -> ``sink`` codecs) and the Python path, one record at a
    time: no panic may reach Python (a ``PanicException`` is a finding like any other), and
    the outputs and dead letters must be equal, whichever path the plan sends a record to.
    ``keyed``: the inputs are :func:`keyed_input` frames (the Debezium reader reads the key)."""

    def __init__(self, plan: NativeTarget) -> None:
        from cdc_smt.transforms.chain import Chain

        def chain() -> Chain:
            catalog = new_catalog() if plan.catalog else None
            return Chain(
                get_codec(plan.source, dict(plan.source_options), catalog=catalog),
                get_codec(plan.sink, dict(plan.sink_options)),
                build_transforms([dict(t) for t in plan.transforms]),
                "all",
            )

        self.keyed = plan.keyed
        self.native = chain()
        self.python = chain()
        self.python.native = None
        self.handled = 0

    def __call__(self, data: bytes) -> None:
        key, value = split_keyed(data) if self.keyed else (None, data)
        record = Record(value=value, key=key, topic="t", partition=0, offset=1)
        clock = time.time
        start = int(clock() * 1000)
        time.time = _FIXED_CLOCK  # what Python writes for a message without a time: the same in both
        try:
            got = self.native.process(record)
            want = self.python.process(record)
        finally:
            time.time = clock
        a, b = _native_clock(_outputs(got), start, int(clock() * 1000)), _outputs(want)
        if a != b:
            site = "count" if len(a) != len(b) else _difference(a, b)
            raise Mismatch(f"output:{site}", f"native output differs: {a[:2]!r} != {b[:2]!r}")
        a, b = _dead_letters(got), _dead_letters(want)
        if a != b:
            raise Mismatch(f"dead-letter:{b[0][0] if b else 'none'}", f"native dead letter differs: {a!r} != {b!r}")


def _FIXED_CLOCK() -> float:  # noqa: N802 - stands in for time.time
    """The clock both paths see: Python writes the time of encoding where a message has none."""
    return 1_700_000_000.0


_CANAL_TS = re.compile(rb',"ts":(-?\d+),"type":')


def _native_clock(outputs: list[tuple[Any, ...]], start: int, end: int) -> list[tuple[Any, ...]]:
    """The outputs with a Canal ``ts`` inside ``[start, end]`` as :func:`_FIXED_CLOCK`'s: the
    native Canal writer writes the current time (as Python does) for a record without a
    processing time (DTS Avro's), from the system clock the fixed clock cannot stand in for."""

    def fixed(m: re.Match[bytes]) -> bytes:
        if start <= int(m.group(1)) <= end:
            return b',"ts":%d,"type":' % int(_FIXED_CLOCK() * 1000)
        return m.group(0)

    return [(_CANAL_TS.sub(fixed, v, count=1) if isinstance(v, bytes) else v, *rest) for v, *rest in outputs]


class Mismatch(AssertionError):
    """A differential finding; ``site`` (where the outputs differ: ``output:payload.after``)
    tells findings apart, as the raising line does for exceptions."""

    def __init__(self, site: str, message: str) -> None:
        super().__init__(message)
        self.site = site


def _difference(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> str:
    """The first differing record part, as a JSON path (``payload.after``) where it is JSON."""
    for (va, ka, *_), (vb, kb, *_) in zip(a, b, strict=True):
        for part, x, y in (("value", va, vb), ("key", ka, kb)):
            if x == y:
                continue
            try:
                x, y = orjson.loads(x), orjson.loads(y)
            except (orjson.JSONDecodeError, TypeError):
                return part
            path = [part]
            while isinstance(x, dict) and isinstance(y, dict) and len(path) < 4:
                k = next((k for k in (*x, *y) if x.get(k) != y.get(k)), None)
                if k is None:
                    break
                path.append(k)
                x, y = x.get(k), y.get(k)
            return ".".join(path)
    return "other"


def _outputs(result: Any) -> list[tuple[Any, ...]]:
    return [(r.value, r.key, r.topic, r.headers) for r in result.outputs]


def _dead_letters(result: Any) -> list[tuple[Any, ...]]:
    return [(d.stage, d.error_class, d.message, d.transform) for d in result.dead_letters]


@dataclass(frozen=True)
class NativeTarget:
    """A native plan family's differential target: the codecs and their options."""

    source: str
    sink: str
    source_options: tuple[tuple[str, Any], ...] = ()
    sink_options: tuple[tuple[str, Any], ...] = ()
    #: The chain's transforms (their configs), for plans that run them natively.
    transforms: tuple[dict[str, Any], ...] = ()
    #: The source codec starts from the workload's schema catalog (its seeds' tables), as a
    #: schema file gives it: formats typed by the catalog (ckafka-json, tdsql-binlog-json).
    catalog: bool = False

    @property
    def keyed(self) -> bool:
        """Does the plan's reader read the record keys (the Debezium reader)?"""
        return self.source == "debezium-json"


#: ``unwrap`` with the options that change what it writes: deletes' row and tombstone,
#: metadata columns (per table and per row) and headers.
_UNWRAP = {
    "type": "unwrap",
    "delete_handling": "rewrite-with-tombstone",
    "add_fields": ["op", "table", "source_ts_ms", "row_index"],
    "add_headers": ["op"],
}

#: The row-changing transforms the Canal writer runs natively (``canal_shape.rs``), per
#: table of the workload: masks and renames, an added constant and per-row metadata.
_ROW_CHANGING = (
    {
        "type": "mask_field",
        "fields": ["email", "name"],
        "mode": "hash",
        "salt": "fuzz",
        "predicate": {"type": "table_matches", "pattern": r"shop\.customers"},
    },
    {
        "type": "replace_field",
        "exclude": ["weight"],
        "renames": {"qty": "quantity", "id": "order_id"},
        "predicate": {"type": "table_matches", "pattern": r"shop\.orders"},
    },
    {"type": "insert_field", "static": {"_src": "fuzz"}, "metadata": {"_es": "source_ts_ms", "_row": "row_index"}},
)

#: The row-changing transforms from the Debezium reader (``row_shape.rs``): ``row_index`` is
#: the source's ``row`` there (Python's), so the per-row metadata is the event time only.
_DEBEZIUM_ROW_CHANGING = (
    *_ROW_CHANGING[:2],
    {"type": "insert_field", "static": {"_src": "fuzz"}, "metadata": {"_es": "source_ts_ms"}},
    {"type": "value_to_key", "fields": ["id"]},
)

#: Keys set on the workload's DECIMAL columns (customers' ``balance``, orders' ``amount``).
_DECIMAL_KEYS = (
    {
        "type": "value_to_key",
        "fields": ["balance", "id"],
        "predicate": {"type": "table_matches", "pattern": r"shop\.customers"},
    },
    {"type": "value_to_key", "fields": ["amount"], "predicate": {"type": "table_matches", "pattern": r"shop\.orders"}},
)

#: ``mask_field``'s constant modes (``empty`` of every type the workload has, ``replace``).
_CONSTANT_MASKS = (
    {"type": "mask_field", "fields": ["email", "name"], "mode": "empty", "on_missing": "ignore"},
    {"type": "mask_field", "fields": ["id"], "mode": "replace", "replacement": "7", "on_missing": "ignore"},
)

#: One differential target per native plan family (reader -> writer), with the option
#: variants that change what the writer writes (the Connect schema part).
NATIVE_TARGETS: dict[str, NativeTarget] = {
    "native:canal-json>debezium-json": NativeTarget("canal-json", "debezium-json"),
    "native:canal-json>debezium-json+schema": NativeTarget(
        "canal-json", "debezium-json", sink_options=(("schemas_enable", True),)
    ),
    "native:ticdc-canal-json>debezium-json": NativeTarget("ticdc-canal-json", "debezium-json"),
    "native:canal-json>debezium-json+unwrap": NativeTarget("canal-json", "debezium-json", transforms=(_UNWRAP,)),
    "native:canal-json>debezium-json+schema+unwrap": NativeTarget(
        "canal-json",
        "debezium-json",
        sink_options=(("schemas_enable", True),),
        transforms=({"type": "value_to_key", "fields": ["id"]}, {"type": "unwrap"}),
    ),
    "native:canal-json>canal-json": NativeTarget("canal-json", "canal-json"),
    "native:canal-json>canal-json+transaction": NativeTarget(
        "canal-json", "canal-json", sink_options=(("batch", "transaction"),)
    ),
    "native:canal-json>canal-json+rowxf": NativeTarget("canal-json", "canal-json", transforms=_ROW_CHANGING),
    "native:canal-json>canal-json+keys": NativeTarget(
        "canal-json",
        "canal-json",
        transforms=(
            {"type": "merge_shards", "pattern": r"(shop)\.(\w+)", "database": "$1_all"},
            {"type": "value_to_key", "fields": ["id"]},
            {"type": "mask_field", "fields": ["id"], "mode": "null"},
        ),
    ),
    "native:canal-json>canal-json+masks": NativeTarget("canal-json", "canal-json", transforms=_CONSTANT_MASKS),
    "native:canal-json>debezium-json+masks": NativeTarget("canal-json", "debezium-json", transforms=_CONSTANT_MASKS),
    # the writers of Canal text with rows re-shaped (``row_shape.rs``)
    "native:canal-json>ticdc-canal-json+rowxf": NativeTarget(
        "canal-json", "ticdc-canal-json", transforms=_ROW_CHANGING + _CONSTANT_MASKS
    ),
    "native:canal-json>maxwell-json+rowxf": NativeTarget("canal-json", "maxwell-json", transforms=_ROW_CHANGING),
    "native:canal-json>ogg-json+rowxf": NativeTarget(
        "canal-json", "ogg-json", transforms=_ROW_CHANGING + _CONSTANT_MASKS
    ),
    "native:canal-json>cloudcanal-json+rowxf": NativeTarget(
        "canal-json", "cloudcanal-json", transforms=_ROW_CHANGING + _CONSTANT_MASKS
    ),
    "native:canal-json>ckafka-json+rowxf": NativeTarget("canal-json", "ckafka-json", transforms=_ROW_CHANGING),
    "native:canal-json>dataworks-json+rowxf": NativeTarget(
        "canal-json", "dataworks-json", transforms=_ROW_CHANGING + _CONSTANT_MASKS
    ),
    "native:canal-json>dts-avro+rowxf": NativeTarget("canal-json", "dts-avro", transforms=_ROW_CHANGING),
    "native:ticdc-canal-json>canal-json": NativeTarget("ticdc-canal-json", "canal-json"),
    "native:canal-json>maxwell-json": NativeTarget("canal-json", "maxwell-json"),
    "native:ticdc-canal-json>maxwell-json": NativeTarget("ticdc-canal-json", "maxwell-json"),
    "native:canal-json>ogg-json": NativeTarget("canal-json", "ogg-json"),
    "native:ticdc-canal-json>ogg-json": NativeTarget("ticdc-canal-json", "ogg-json"),
    "native:canal-json>cloudcanal-json": NativeTarget("canal-json", "cloudcanal-json"),
    "native:ticdc-canal-json>cloudcanal-json": NativeTarget("ticdc-canal-json", "cloudcanal-json"),
    "native:canal-json>ckafka-json": NativeTarget(
        "canal-json", "ckafka-json", sink_options=(("source_timezone", "Asia/Shanghai"),)
    ),
    "native:debezium-json>ckafka-json": NativeTarget("debezium-json", "ckafka-json"),
    # the encoder's sequence counter follows the chains from input to input
    "native:canal-json>dataworks-json": NativeTarget("canal-json", "dataworks-json"),
    "native:debezium-json>dataworks-json": NativeTarget(
        "debezium-json", "dataworks-json", sink_options=(("update_as", "single"),)
    ),
    "native:canal-json>tdsql-binlog-json": NativeTarget(
        "canal-json", "tdsql-binlog-json", sink_options=(("row_event_version", 2),)
    ),
    "native:ticdc-canal-json>tdsql-binlog-json": NativeTarget("ticdc-canal-json", "tdsql-binlog-json"),
    "native:canal-json>tdsql-binlog-json+rowxf": NativeTarget(
        "canal-json", "tdsql-binlog-json", transforms=_ROW_CHANGING
    ),
    "native:debezium-json>tdsql-binlog-json": NativeTarget("debezium-json", "tdsql-binlog-json"),
    "native:canal-json>dts-avro": NativeTarget("canal-json", "dts-avro"),
    "native:ticdc-canal-json>dts-avro": NativeTarget("ticdc-canal-json", "dts-avro"),
    "native:debezium-json>canal-json": NativeTarget("debezium-json", "canal-json"),
    "native:debezium-json>debezium-json": NativeTarget("debezium-json", "debezium-json"),
    "native:debezium-json>canal-json+schema": NativeTarget(
        "debezium-json", "canal-json", source_options=(("schemas_enable", True),)
    ),
    # the Connect representations of other modes (connect times, precise unsigned, base64 binary)
    "native:debezium-json>canal-json+schema-modes": NativeTarget(
        "debezium-json",
        "canal-json",
        source_options=(
            ("schemas_enable", True),
            ("time_precision_mode", "connect"),
            ("bigint_unsigned_handling_mode", "precise"),
            ("binary_handling_mode", "base64"),
        ),
    ),
    "native:debezium-json>maxwell-json": NativeTarget("debezium-json", "maxwell-json"),
    "native:debezium-json>ogg-json": NativeTarget("debezium-json", "ogg-json"),
    "native:debezium-json>dts-avro": NativeTarget("debezium-json", "dts-avro"),
    "native:debezium-json>cloudcanal-json": NativeTarget("debezium-json", "cloudcanal-json"),
    # the schema part read for the converting writers (connect_in.rs, as for Canal)
    "native:debezium-json>maxwell-json+schema": NativeTarget(
        "debezium-json", "maxwell-json", source_options=(("schemas_enable", True),)
    ),
    "native:debezium-json>ogg-json+schema": NativeTarget(
        "debezium-json", "ogg-json", source_options=(("schemas_enable", True),)
    ),
    "native:debezium-json>dts-avro+schema": NativeTarget(
        "debezium-json", "dts-avro", source_options=(("schemas_enable", True),)
    ),
    "native:debezium-json>maxwell-json+rowxf": NativeTarget(
        "debezium-json", "maxwell-json", transforms=_DEBEZIUM_ROW_CHANGING
    ),
    "native:debezium-json>dts-avro+rowxf": NativeTarget("debezium-json", "dts-avro", transforms=_DEBEZIUM_ROW_CHANGING),
    "native:debezium-json>canal-json+rowxf": NativeTarget(
        "debezium-json", "canal-json", transforms=_DEBEZIUM_ROW_CHANGING
    ),
    "native:debezium-json>maxwell-json+schema+rowxf": NativeTarget(
        "debezium-json",
        "maxwell-json",
        source_options=(("schemas_enable", True),),
        transforms=_DEBEZIUM_ROW_CHANGING,
    ),
    "native:debezium-json>dts-avro+schema+rowxf": NativeTarget(
        "debezium-json", "dts-avro", source_options=(("schemas_enable", True),), transforms=_DEBEZIUM_ROW_CHANGING
    ),
    "native:debezium-json>ticdc-canal-json+schema+rowxf": NativeTarget(
        "debezium-json",
        "ticdc-canal-json",
        source_options=(("schemas_enable", True),),
        transforms=_DEBEZIUM_ROW_CHANGING,
    ),
    "native:debezium-json>ticdc-canal-json+schema": NativeTarget(
        "debezium-json", "ticdc-canal-json", source_options=(("schemas_enable", True),)
    ),
    # DECIMAL key columns (row_shape, canal_shape and the writers' own keys; from the schema part converted)
    **{
        f"native:{src}>{out}+decimal-key": NativeTarget(src, out, source_options=options, transforms=_DECIMAL_KEYS)
        for src, out, options in (
            ("canal-json", "cloudcanal-json", ()),
            ("canal-json", "dts-avro", ()),
            ("canal-json", "canal-json", ()),
            ("debezium-json", "maxwell-json", (("schemas_enable", True),)),
        )
    },
    # the schema part with the row-changing transforms into the vendor writers (and Canal's: SET bitmasks)
    **{
        f"native:debezium-json>{out}+schema+rowxf": NativeTarget(
            "debezium-json", out, source_options=(("schemas_enable", True),), transforms=_DEBEZIUM_ROW_CHANGING
        )
        for out in ("canal-json", "cloudcanal-json", "ckafka-json", "dataworks-json", "tdsql-binlog-json")
    },
    # the schema part read for the vendor writers (connect_in.rs, as for Maxwell; DataWorks in a DST zone)
    "native:debezium-json>cloudcanal-json+schema": NativeTarget(
        "debezium-json", "cloudcanal-json", source_options=(("schemas_enable", True),)
    ),
    "native:debezium-json>ckafka-json+schema": NativeTarget(
        "debezium-json", "ckafka-json", source_options=(("schemas_enable", True),)
    ),
    "native:debezium-json>dataworks-json+schema-zone": NativeTarget(
        "debezium-json",
        "dataworks-json",
        source_options=(("schemas_enable", True), ("source_timezone", "America/New_York")),
        sink_options=(("source_timezone", "America/New_York"),),
    ),
    "native:debezium-json>tdsql-binlog-json+schema": NativeTarget(
        "debezium-json", "tdsql-binlog-json", source_options=(("schemas_enable", True),)
    ),
    # ZonedTimestamp read as a zone's wall clock (both codecs in it)
    "native:debezium-json>canal-json+schema-zone": NativeTarget(
        "debezium-json",
        "canal-json",
        source_options=(("schemas_enable", True), ("source_timezone", "Europe/Berlin")),
        sink_options=(("source_timezone", "Europe/Berlin"),),
    ),
    # unwrap of the values as read: the image copied flat (and the row's schema)
    "native:debezium-json>debezium-json+unwrap": NativeTarget(
        "debezium-json", "debezium-json", transforms=({"type": "unwrap"},)
    ),
    "native:debezium-json>debezium-json+schema+unwrap": NativeTarget(
        "debezium-json",
        "debezium-json",
        source_options=(("schemas_enable", True),),
        sink_options=(("schemas_enable", True),),
        transforms=({"type": "unwrap", "drop_tombstones": True},),
    ),
    # unwrap typing the row (no schema part): the added fields per op and per row after the image
    "native:debezium-json>debezium-json+unwrap-fields": NativeTarget(
        "debezium-json",
        "debezium-json",
        transforms=(
            {
                "type": "unwrap",
                "delete_handling": "rewrite-with-tombstone",
                "add_fields": ["op", "table", "source_ts_ms", "processing_ts_ms"],
            },
        ),
    ),
    # ZonedTimestamp as a zone's wall clock for the typed writers (folds Python's)
    "native:debezium-json>maxwell-json+schema-zone": NativeTarget(
        "debezium-json",
        "maxwell-json",
        source_options=(("schemas_enable", True), ("source_timezone", "America/New_York")),
        sink_options=(("source_timezone", "America/New_York"),),
    ),
    "native:dts-avro>debezium-json": NativeTarget("dts-avro", "debezium-json"),
    "native:dts-avro>canal-json": NativeTarget("dts-avro", "canal-json"),
    "native:dts-avro>dts-avro": NativeTarget(
        "dts-avro", "dts-avro", transforms=({"type": "route", "topic": "dts.{database}.{table}.{op}"},)
    ),
    "native:debezium-json>debezium-json+schema": NativeTarget(
        "debezium-json",
        "debezium-json",
        source_options=(("schemas_enable", True),),
        sink_options=(("schemas_enable", True),),
    ),
    # One record per input, the chains kept between inputs (the codec's pending half too).
    # (Not -> canal-json: without a systemTime both paths write the current time as ``ts``,
    # and the harness fixes only Python's clock.)
    "native:dataworks-json>debezium-json": NativeTarget("dataworks-json", "debezium-json"),
    # The typed-JSON readers (maxwell_in.rs, ogg_in.rs: the scanner, serde where it stops); to
    # debezium-json, as Maxwell has no processing time for Canal's ``ts``.
    "native:maxwell-json>debezium-json": NativeTarget("maxwell-json", "debezium-json"),
    "native:ogg-json>debezium-json": NativeTarget("ogg-json", "debezium-json"),
    # The CloudCanal reader: the Canal reader's scan (serde where it stops) under its names.
    "native:cloudcanal-json>canal-json": NativeTarget("cloudcanal-json", "canal-json"),
    # The catalog-following plans: each chain's catalog changes with the DDL among the inputs.
    "native:ckafka-json>canal-json": NativeTarget("ckafka-json", "canal-json", catalog=True),
    "native:ckafka-json>debezium-json": NativeTarget("ckafka-json", "debezium-json", catalog=True),
    "native:tdsql-binlog-json>canal-json": NativeTarget("tdsql-binlog-json", "canal-json", catalog=True),
    "native:tdsql-binlog-json>debezium-json": NativeTarget("tdsql-binlog-json", "debezium-json", catalog=True),
}


# -- keyed inputs: the record key and value in one fuzz input --------------------------------


def keyed_input(key: bytes | None, value: bytes) -> bytes:
    """``key + b"\\n" + value``, or the value alone for a record without a key (JSON as the
    codecs write it holds no raw newline, so the first one splits the two)."""
    return value if key is None else key + b"\n" + value


def split_keyed(data: bytes) -> tuple[bytes | None, bytes]:
    key, sep, value = data.partition(b"\n")
    return (key, value) if sep else (None, data)


def mutate_keyed(data: bytes, rng: Any) -> bytes:
    """Mutates the value mostly, sometimes the key (or takes it away, or gives one)."""
    key, value = split_keyed(data)
    k = rng.randrange(8)
    if k == 0:
        return keyed_input(None if key is not None else b"{}", value)
    if k == 1:
        return keyed_input(mutate.mutate_json(key or b"{}", rng), value)
    return keyed_input(key, mutate.mutate_json(value, rng))


def _debezium_key(value: bytes) -> bytes | None:
    """A key for a corpus value (the corpus holds values only): its row's first column, as
    Debezium keys a table by its primary key; ``None`` without an image."""
    try:
        message = orjson.loads(value)
        payload = message.get("payload", message) if isinstance(message, dict) else None
        image = (payload.get("after") or payload.get("before")) if isinstance(payload, dict) else None
    except (orjson.JSONDecodeError, AttributeError):
        return None
    if not isinstance(image, dict) or not image:
        return None
    name = next(iter(image))
    return orjson.dumps({name: image[name]})


@cache
def keyed_seeds(options: tuple[tuple[str, Any], ...] = ()) -> tuple[bytes, ...]:
    """Debezium records as keyed inputs: the corpus (keys from the rows) and the workload
    encoded by the Debezium encoder (its own keys, delete tombstones left out)."""
    seen: dict[bytes, None] = {}
    for value in _corpus_seeds("debezium-json"):
        seen.setdefault(keyed_input(_debezium_key(value), value), None)
    codec = get_codec("debezium-json", dict(options), catalog=new_catalog())
    for e in workload_events():
        try:
            records = codec.encode(e)
        except Exception:  # noqa: BLE001 - events the format cannot carry
            continue
        for r in records:
            if r.value is not None:
                seen.setdefault(keyed_input(r.key, r.value), None)
    return tuple(seen)


def native_target(name: str) -> Target | None:
    """A differential target, or ``None`` when the native core is not built (or switched off)."""
    from cdc_smt.transforms import native

    if not native.enabled():
        return None
    plan = NATIVE_TARGETS[name]
    run = NativeDifferential(plan)
    if run.native.native is None:
        return None
    if plan.keyed:
        return Target(name, list(keyed_seeds(plan.source_options)), mutate_keyed, run, ())
    if registry()[plan.source].binary:  # DTS Avro: mutated as Avro, as its decoder's target
        walker = mutate.AvroWalker(_avro_schema(plan.source))
        mutator: Callable[[bytes, Any], bytes] = lambda data, rng: mutate.mutate_avro(data, rng, walker)  # noqa: E731
        return Target(name, list(decoder_seeds(plan.source)), mutator, run, ())
    return Target(name, list(decoder_seeds(plan.source)), mutate.mutate_json, run, ())


# -- loaders -------------------------------------------------------------------------------------

_SCRATCH = Path(
    os.environ.get("CDC_SMT_FUZZ_TMP") or ("/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir())
)


def _scratch_file(suffix: str) -> Path:
    fd, name = tempfile.mkstemp(prefix="cdc-smt-fuzz-", suffix=suffix, dir=_SCRATCH)
    os.close(fd)
    path = Path(name)
    atexit.register(path.unlink, missing_ok=True)
    return path


def _docs(folder: str) -> list[Any]:
    out = []
    for path in sorted((ROOT / "examples" / folder).glob("*.yaml")):
        out.append(yaml.safe_load(path.read_text(encoding="utf-8")))
    return out


def _config_seeds(docs: list[Any]) -> list[bytes]:
    out = []
    for doc in docs:
        out.append(yaml.safe_dump(doc, sort_keys=False).encode("utf-8"))
    return out


# The mutator's own parsing: libyaml where it is there and the text cannot nest deeply (its
# composer overflows the C stack on deep nesting), else pure Python (a hundred times slower).
_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MAX_FAST_NESTING = 1000


@lru_cache(maxsize=64)
def _parsed(data: bytes) -> Any:
    shallow = data.count(b"[") + data.count(b"{") + data.count(b"\n") < _MAX_FAST_NESTING
    return yaml.load(data, Loader=_FAST_LOADER if shallow else yaml.SafeLoader)  # noqa: S506 - safe loaders


def _config_mutator(data: bytes, rng: Any) -> bytes:
    try:
        doc = _parsed(data)
    except Exception:  # noqa: BLE001 - not YAML this mutator can rebuild: mutate its bytes
        return mutate.mutate_bytes(data, rng)
    try:
        return mutate.mutate_yaml(doc, rng)
    except Exception:  # noqa: BLE001 - a document the YAML writer cannot write (nested too deeply ...)
        return mutate.mutate_bytes(data, rng)


def chain_target() -> Target:
    from cdc_smt.transforms.config import build_chain, load_config

    path = _scratch_file(".yaml")

    def run(data: bytes) -> None:
        path.write_bytes(data)
        build_chain(load_config(path))

    os.environ.setdefault("CDC_SMT_PII_SALT", "fuzz")
    return Target("chain-loader", _config_seeds(_docs("chains")), _config_mutator, run, (ConfigError,), limit_s=5.0)


def job_target() -> Target:
    from cdc_smt.connector.jobconfig import load_job

    path = _scratch_file(".yaml")
    env = {"CDC_SMT_PII_SALT": "fuzz", "KAFKA": "localhost:9092"}

    def run(data: bytes) -> None:
        path.write_bytes(data)
        load_job(path, env=env).check()

    return Target("job-loader", _config_seeds(_docs("jobs")), _config_mutator, run, (ConfigError,), limit_s=5.0)


def all_targets() -> dict[str, Callable[[], Target | None]]:
    """Target name -> factory: every decoder (and its option variants), the native differential
    targets, the loaders. A factory returns ``None`` for a target this build cannot run."""
    out: dict[str, Callable[[], Target | None]] = {fmt: (lambda f=fmt: decoder_target(f)) for fmt in registry()}
    for name, (fmt, options) in VARIANTS.items():
        out[name] = lambda f=fmt, o=options, n=name: decoder_target(f, o, n)
    for name in NATIVE_TARGETS:
        out[name] = lambda n=name: native_target(n)
    out["chain-loader"] = chain_target
    out["job-loader"] = job_target
    return out


__all__ = ["Target", "all_targets", "chain_target", "decoder_target", "job_target", "native_target"]
