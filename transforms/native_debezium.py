"""The native planner's Debezium reader: debezium-json -> canal-json and
debezium-json -> debezium-json plans.

Without the schema part the Debezium decoder types a row's columns from its JSON
values (``inference.json_columns``) and takes the primary key from the record's
Kafka key, so the native reader (``native/src/debezium_in.rs``) keys its tables by
the layout of the values: source database, table, connector and schema, the key's
field names and each column's name and JSON kind (``null``, ``bool``, ``int``,
``float``, ``str``). Per layout the compilers here run one probe event per op, with
a value of each kind, through the chain's own decoder, transforms and encoder, and
check that what it wrote is what the native writer writes for it:

* :class:`DebeziumCanalTables`: the Canal writer, each column's type maps and
  conversion to Canal text (under a schema part, which types the columns, each value
  read from its Connect representation by ``native/src/connect_in.rs``, the conversion
  named per column by :func:`_connect_read`; ENUM labels as Canal's indexes);
* :class:`DebeziumTables`: Debezium re-written as Debezium (same-format
  reproduction: values, source block and other fields copied), when both codecs
  represent values alike (same Connect options); with the schema part in and out
  (JsonConverter ``schemas.enable``) when the encoder writes the message's own;
* :class:`DebeziumTypedTables`: the Maxwell and GoldenGate writers (each column's typed
  JSON conversion, as from Canal text);
* :class:`DebeziumDtsTables`: the DTS Avro writer (each column's DTS value, the record
  parts the same for every row of a table and op).

Under a schema part the text writers (Canal, Maxwell, GoldenGate, DTS Avro) take the
columns the schema part types, each value read from its Connect representation into the
Canal text the writer's conversion reads (:func:`_connect_read`, ``connect_in.rs``; the
compilers name the conversions with :func:`_with_reads`). Every value or message the
reader does not reproduce for certain goes to Python.
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc_smt.transforms.model import Record
from cdc_smt.transforms.native import (
    DEBEZIUM_TO_CANAL,
    DEBEZIUM_TO_DEBEZIUM,
    DEBEZIUM_TO_DTS,
    DEBEZIUM_TO_MAXWELL,
    DEBEZIUM_TO_OGG,
    NativePlan,
    _apply_step,
    _CanalOutTables,
    _follow_tombstone,
    _keeps_rows,
    _schema_part,
    _Shape,
    _supported,
    _Unsupported,
    canal_text_op,
    zones_agree,
)
from cdc_smt.transforms.native_dts import DtsNativePlan, _DtsOutTables
from cdc_smt.transforms.native_maxwell import _TypedJsonTables

#: A probe value of each JSON kind the reader tells apart, and the Canal text the native
#: writer gives it (``1.5``: a fraction the double conversion writes as it is).
_SAMPLES: dict[str, tuple[Any, str | None]] = {
    "null": (None, None),
    "bool": (True, "1"),
    "int": (1, "1"),
    "float": (1.5, "1.5"),
    "str": ("x", "x"),
}
#: Debezium's op codes per op of the writers (c, u, d, r).
_OPS = (("c", "INSERT"), ("u", "UPDATE"), ("d", "DELETE"), ("r", "INIT"))
#: A DTS record's ``sourcePosition``, ``safeSourcePosition`` and ``sourceTxid`` of the probe
#: (whose source has no position): three empty Avro strings, where the writer puts each event's.
_NO_POSITION = b"\0\0\0"
#: What a compiler returns for a layout with a schema part whose values are in Connect
#: representations the writer does not convert (a decimal, a date given): the reader keeps
#: the schema part and hands its later messages to Python without parsing their payloads
#: (a table with such a column has such values in nearly every message; the few with them
#: all null would be the plan's, and Python writes them alike).
PYTHON_HEAD = "python-head"
#: The typed-JSON writers' plans.
_TYPED = {"maxwell-json": DEBEZIUM_TO_MAXWELL, "ogg-json": DEBEZIUM_TO_OGG}


def debezium_plan(chain: Any, native: Any) -> NativePlan | None:
    """debezium-json -> canal-json (``batch: row``), -> debezium-json (no schema part,
    the decoder's Connect options), -> maxwell-json, ogg-json or dts-avro, with the
    transforms that keep rows as they are, or ``None``. ``native`` is the extension."""
    from cdc_smt.transforms.formats.debezium_json import DebeziumJsonCodec

    decoder, encoder = chain.decoder, chain.encoder
    transforms = list(chain.transforms)
    if type(encoder) is DebeziumJsonCodec and _copied_unwrap(transforms):
        if encoder.connect != decoder.connect:
            return None
        unwrapping = DebeziumTables(decoder, encoder, transforms)
        return reader_plan(DEBEZIUM_TO_DEBEZIUM, unwrapping, chain, native, tombstones_on_delete=False)
    if not all(_supported(t) and _keeps_rows(t) for t in chain.transforms):
        return None
    if encoder.name in _TYPED:
        typed = DebeziumTypedTables(decoder, encoder, transforms)
        return reader_plan(_TYPED[encoder.name], typed, chain, native, encoder=encoder.name)
    if encoder.name == "dts-avro":
        dts = DebeziumDtsTables(decoder, encoder, transforms)
        plan = native.CanalToDebezium(
            dts.compile_layout,
            max_message_bytes=decoder.opts.max_message_bytes,
            encoder="dts-avro",
            ids=encoder,
            reader="debezium-json",
        )
        return DtsNativePlan(DEBEZIUM_TO_DTS, plan, dts.variants)
    if type(encoder) is DebeziumJsonCodec:
        if encoder.connect != decoder.connect:
            return None  # values converted between representations: Python
        same = DebeziumTables(decoder, encoder, transforms)
        return reader_plan(DEBEZIUM_TO_DEBEZIUM, same, chain, native, tombstones_on_delete=encoder.tombstones_on_delete)
    if encoder.batching:
        return None  # Python groups consecutive events of a transaction into one message
    canal = DebeziumCanalTables(decoder, encoder, transforms)
    return reader_plan(DEBEZIUM_TO_CANAL, canal, chain, native, encoder="canal-json")


def _the_unwrap(transforms: list[Any]) -> Any:
    """The chain's one ``unwrap``, if it is among transforms that keep rows as they are."""
    from cdc_smt.transforms.smt.unwrap import Unwrap

    unwraps = [t for t in transforms if type(t) is Unwrap]
    if len(unwraps) != 1 or not all(_supported(t) for t in transforms):
        return None
    u = unwraps[0]
    return u if all(_keeps_rows(t) for t in transforms if t is not u) else None


def _copied_unwrap(transforms: list[Any]) -> bool:
    """Is the chain one ``unwrap`` whose row the Debezium writer copies flat (``DebeziumTables``)
    among transforms that keep rows as they are: the image as read, then the fields ``add_fields``
    and ``rewrite`` add (``_added``); ``add_headers`` of the table's fields (``_supported``) are
    the op's header edits?"""
    return _the_unwrap(transforms) is not None


def _typing_unwrap(transforms: list[Any]) -> bool:
    """Does the chain's ``unwrap`` type the row (``add_fields``, ``add_headers``, ``rewrite``)? Its
    values are then re-written from their types: copied only where the types are the JSON kinds
    (no schema part)."""
    u = _the_unwrap(transforms)
    return u is not None and bool(u._fields or u._headers or u._rewrite)


def _row_slots() -> dict[Any, int]:
    """``unwrap``'s fields the plan writes, by getter: 0 the same for every row of a table and op
    (taken from the probe), 1 the source's ``ts_ms`` (the decoder's event time, as the reader
    reads it), 2 the envelope's ``ts_ms``; the others (``row_index``, positions) are Python's."""
    from cdc_smt.transforms.smt.unwrap import FIELDS

    constant = {FIELDS[n][0]: 0 for n in ("op", "database", "schema", "table")}
    return {**constant, FIELDS["source_ts_ms"][0]: 1, FIELDS["processing_ts_ms"][0]: 2}


def _added(u: Any, image: dict[str, Any], written: bytes) -> list[tuple[bytes, int]]:
    """The fields ``unwrap`` appends to a flat row as the plan writes them after the image: each
    ``,"name":`` with a constant (from the probe's row ``written``) or, for a per-row field
    (``_row_slots``), a slot the plan fills from the message. The probe's row must be the image
    then exactly those fields (a metadata name that is a row column is Python's)."""
    slots = _row_slots()
    names = [name for name, _ in u._fields] + ([u._deleted] if u._rewrite else [])
    row = orjson.loads(written)
    if not isinstance(row, dict) or list(row) != [*image, *names]:
        raise _Unsupported("added fields")
    getters = dict(u._fields)
    out: list[tuple[bytes, int]] = []
    for name in names:
        slot = slots.get(getters[name], -1) if name in getters else 0  # ``rewrite``'s ``deleted``: per op
        if slot < 0:
            raise _Unsupported("added field")
        if slot and row[name] != 0:  # the probe's times are 0
            raise _Unsupported("added field")
        out.append((b"," + orjson.dumps(name) + b":" + (b"" if slot else orjson.dumps(row[name])), slot))
    rendered = orjson.dumps(image)[:-1] + b"".join(part + (b"0" if slot else b"") for part, slot in out) + b"}"
    if rendered != written:
        raise _Unsupported("added fields")  # not as the plan writes them
    return out


def reader_plan(name: str, tables: Any, chain: Any, native: Any, **writer: Any) -> NativePlan:
    """Plan ``name``: the Debezium reader (``debezium_in.rs``) feeding the writer whose
    layouts ``tables`` compiles; ``writer`` names it (``encoder=``) and its options."""
    plan = native.CanalToDebezium(
        tables.compile_layout, max_message_bytes=chain.decoder.opts.max_message_bytes, reader="debezium-json", **writer
    )
    return NativePlan(name, plan, tables.variants)


class _Probe:
    """A layout's probe: the row (a value of each column's kind; nulls under a schema
    part, which types the columns), the source block, the key and the schema part."""

    def __init__(self, row: dict[str, Any], source: dict[str, Any], key: bytes | None, head: bytes | None) -> None:
        self.row = row
        self.source = source
        self.key = key
        self.head = head

    def value(self, code: str) -> bytes:
        payload = orjson.dumps(self.envelope(code))
        return payload if self.head is None else self.head + b',"payload":' + payload + b"}"

    def envelope(self, code: str) -> dict[str, Any]:
        before = self.row if code in ("u", "d") else None
        after = self.row if code != "d" else None
        return {"before": before, "after": after, "source": self.source, "op": code, "ts_ms": 0, "transaction": None}

    def record_key(self, pk: tuple[str, ...]) -> bytes | None:
        """The key the encoders write for the probe's row: its key columns' values."""
        return orjson.dumps({k: self.row.get(k) for k in pk}) if pk else None


class LayoutCompiler:
    """The reader's compiler entry (``debezium_in.rs`` calls :meth:`compile_layout` per layout):
    the layout's probe, compiled by :meth:`_compile_probe` (``None``, or any error: Python's)."""

    def compile_layout(
        self,
        database: str,
        table: str,
        connector: str | None,
        schema: str | None,
        pk: list[str],
        columns: list[tuple[str, str]],
        head: bytes | None = None,
    ) -> Any:
        """The native writer's spec for the layout (its source block, key names and each column's
        name and JSON kind), or ``None`` (Python's); ``head``: the messages' schema part as they
        start (``{"schema":...``)."""
        source: dict[str, Any] = {"db": database, "table": table, "ts_ms": 0}
        if connector is not None:
            source["connector"] = connector
        if schema is not None:
            source["schema"] = schema
        row = {name: None if head is not None else _SAMPLES[kind][0] for name, kind in columns}
        probe = _Probe(row, source, orjson.dumps(dict.fromkeys(pk)) if pk else None, head)
        try:
            return self._compile_probe(probe, pk, columns)
        except Exception:  # noqa: BLE001 - a layout Python rejects (or the plan cannot do) is Python's
            return None

    def _compile_probe(self, probe: _Probe, pk: list[str], columns: list[tuple[str, str]]) -> Any:
        raise NotImplementedError


class _Layouts(LayoutCompiler, _CanalOutTables):
    """What both compilers share: the probe of a layout, following the transforms."""

    def _decode_probe(self, probe: _Probe, code: str) -> Any:
        (event,) = self.decoder.decode(Record(value=probe.value(code), key=probe.key))
        return event

    def _probe_shape(self, probe: _Probe, pk: list[str]) -> tuple[Any, _Shape]:
        """The INSERT probe's event and the shape of the transforms (predicates judged on it)."""
        event = self._decode_probe(probe, "c")
        if [c.name for c in event.schema.columns] != list(probe.row) or list(event.pk) != pk:
            raise _Unsupported("layout")
        return event, self._shape(event)


def connect_reprs(decoder: Any, head: bytes, pk: list[str]) -> dict[str, Any]:
    """Each column's Connect representation in the schema part ``head``, as the decoder's
    plan for it reads them (``_connect.Repr``)."""
    key, schema, _, _ = decoder._split(head + b',"payload":{}}')
    plan = decoder._schema_plan(key, schema, tuple(pk)) if schema is not None else None
    if plan is None:
        raise _Unsupported("schema part")
    return {f.column.name: f.repr for f in plan.fields}


def connect_reads(
    decoder: Any,
    encoder: Any,
    reprs: dict[str, Any],
    decoded: Any,
    columns: list[tuple[str, str]],
    as_written: list[bool],
    zones: bool = False,
    unfolded: bool = False,
) -> list[str | None] | None:
    """Under a schema part (``reprs``: its Connect representations, :func:`connect_reprs`), per
    column how the reader turns its values into the Canal text ``encoder``'s writer's conversion
    reads (``connect_in.rs``, :func:`_connect_read`; ``as_written``: columns whose values are
    that text, such as ENUM labels), or ``None`` when a column with values needs a conversion
    the reader lacks. ``zones``: the writer takes a TIMESTAMP's wall clock in a zone other than
    UTC; ``unfolded``: the writer makes an instant of it again, so a wall clock in a DST fold,
    which would need Python's ``fold``, is Python's (``zoned-unfolded``)."""
    source = decoder.opts.source_timezone
    zone = _wall_clock_zone(source, encoder.opts.source_timezone, zones)
    reads = [
        "text"
        if same
        else _connect_read(canal_text_op(c, zone is not None), c, reprs.get(c.name), kind, zone, unfolded)
        for c, (_, kind), same in zip(decoded.schema.columns, columns, as_written, strict=True)
    ]
    if any(read is None and kind != "null" for read, (_, kind) in zip(reads, columns, strict=True)):
        return None  # a value the reader does not convert (geometry, bits, other modes): Python's
    return reads


def connect_columns(
    tables: Any, probe: _Probe, decoded: Any, columns: list[tuple[str, str]], pk: list[str], unfolded: bool
) -> tuple[list[bool], list[str | None]] | None:
    """Under a schema part, per column whether its values are ENUM or SET labels as Debezium
    writes them (MySQL's text as it is: the writer copies it) and how the reader reads each
    from its Connect representation (:func:`_connect_read`), as the typed writers
    read them; ``None`` when a column with values needs a conversion the reader lacks (the
    schema part's messages are then Python's: ``PYTHON_HEAD``).
    Without one, no labels and no reads. ``unfolded``: the writer makes an instant of a
    TIMESTAMP's wall clock again (a DST fold is Python's)."""
    typed = list(zip(decoded.schema.columns, columns, strict=True))
    if probe.head is None:
        return [False] * len(typed), []
    reprs = connect_reprs(tables.decoder, probe.head, pk)
    labels = [_label_text(c, reprs.get(c.name), kind, pk) for c, (_, kind) in typed]
    # a FLOAT's ``float32`` number is the text the writer's single-precision conversion reads
    as_written = [
        label or _single_float(c, reprs.get(c.name), kind) for (c, (_, kind)), label in zip(typed, labels, strict=True)
    ]
    reads = connect_reads(tables.decoder, tables.encoder, reprs, decoded, columns, as_written, True, unfolded)
    return None if reads is None else (labels, reads)


class DebeziumCanalTables(_Layouts):
    """Compiles one Debezium layout for the Canal writer (which re-writes every value as
    Canal text, with Canal's defaults for the fields Debezium lacks)."""

    @property
    def retext(self) -> bool:
        return True

    def _compile_probe(self, probe: _Probe, pk: list[str], columns: list[tuple[str, str]]) -> Any:
        decoded, shape = self._probe_shape(probe, pk)
        names = list(probe.row)
        texts = [self._text(c, True) for c in decoded.schema.columns]
        reads: list[str | None] = [None] * len(names)
        labels: list[dict[str, str] | None] = [None] * len(names)
        if probe.head is not None:  # columns typed by the schema part: values in their Connect representations
            reprs = connect_reprs(self.decoder, probe.head, pk)
            typed = list(zip(decoded.schema.columns, columns, strict=True))
            labels = [_enum_labels(c, reprs.get(c.name), kind, pk) for c, (_, kind) in typed]
            own = [_canal_read(c, reprs.get(c.name), kind, pk) for c, (_, kind) in typed]
            as_written = [label is not None or read is not None for label, read in zip(labels, own, strict=True)]
            found = connect_reads(self.decoder, self.encoder, reprs, decoded, columns, as_written, zones=True)
            if found is None:
                return PYTHON_HEAD
            reads = [read[0] if read is not None else f for read, f in zip(own, found, strict=True)]
            texts = [
                (t[0], *read[1], *t[3:]) if read is not None else t if f is not None else (t[0], "python", None, *t[3:])
                for t, read, f in zip(texts, own, found, strict=True)
            ]
        written = {name: None if probe.head is not None else _SAMPLES[kind][1] for name, kind in columns}
        mysql_types = {n: texts[i][0] for i, n in enumerate(names)}
        sql_types = {n: texts[i][3] if written[n] is None else texts[i][4] for i, n in enumerate(names)}
        ops = [self._op_canal_layout(probe, code, kind, shape, written, mysql_types, sql_types) for code, kind in _OPS]
        spec = names, list(pk), ops, texts, labels  # the fifth item: ENUM labels' Canal indexes
        return spec if probe.head is None else _with_reads(reads, spec)

    def _op_canal_layout(
        self,
        probe: _Probe,
        code: str,
        kind: str,
        shape: _Shape,
        texts: dict[str, str | None],
        mysql_types: dict[str, str],
        sql_types: dict[str, int],
    ) -> tuple[int, int | None]:
        """One op's entry: ``(0, None)`` dropped, ``(2, variant)`` written; the probe's
        Canal message must be what the writer writes for it."""
        event, edits = self._follow(self._decode_probe(probe, code), shape.selected)
        if event is None:
            return 0, None
        (first,) = self.encoder.encode(event)
        written = orjson.loads(first.value)
        expected = {
            "data": [texts],
            "database": probe.source["db"],
            "es": 0,
            "id": 0,
            "isDdl": False,
            "mysqlType": mysql_types,
            "old": None,
            "pkNames": list(event.pk) or None,
            "sql": "",
            "sqlType": sql_types,
            "table": probe.source["table"],
            "ts": 0,
            "type": kind,
        }
        if written != expected or list(written) != list(expected) or first.key != probe.record_key(event.pk):
            raise _Unsupported("message")  # not what the writer writes
        return 2, self._variant(first.topic, edits)


#: Under a schema part, the Canal text conversions whose Debezium value (of this JSON kind) is
#: the text the conversion reads, as the schemaless columns of the kind are.
_AS_WRITTEN = {("int", "int"), ("year", "int"), ("same", "str"), ("double", "float"), ("bits", "bool")}
#: (Canal text conversion, Connect representation kind, JSON kind) -> the reader's conversion
#: (``connect_in.rs``) of the values Python's decoder converts (``_connect.make_decoder``).
_CONNECT_READS = {
    ("date", "date", "int"): "days",
    ("datetime", "ts_ms", "int"): "epoch:1000",
    ("datetime", "ts_us", "int"): "epoch:1000000",
    ("datetime", "ts_ns", "int"): "epoch:1000000000",
    ("time", "time_ms", "int"): "time:1000",
    ("time", "time_us", "int"): "time:1000000",
    ("time", "time_ns", "int"): "time:1000000000",
    ("bytes", "bytes", "str"): "base64",
    ("bytes", "b64", "str"): "base64",
}


def _enum_labels(column: Any, r: Any, kind: str, pk: list[str]) -> dict[str, str] | None:
    """An ENUM's labels (``io.debezium.data.Enum``: the label as written, which Python keeps)
    and the index text Canal writes for each (``None``: not such a column; key columns, whose
    key Python writes from the labels, are Python's)."""
    from cdc_smt.transforms.formats.canal_json import _enum_index_table
    from cdc_smt.transforms.types import Kind

    mt = column.mysql
    if mt.kind is not Kind.ENUM or not mt.values or kind != "str" or r is None or r.kind != "string":
        return None
    return None if column.name in pk else _enum_index_table(mt)


def _canal_read(column: Any, r: Any, kind: str, pk: list[str]) -> tuple[str, tuple[str, None]] | None:
    """The reader's conversion and the Canal writer's text op (``canal_text.rs``) of columns whose
    Debezium values Canal writes otherwise than their type's text: a SET's labels (``EnumSet``) as
    Canal's bitmask, a FLOAT's ``float32`` numbers as Java's ``Float.toString``; else ``None``."""
    from cdc_smt.transforms.types import Kind

    if _single_float(column, r, kind):
        return "text", ("float32", None)
    if column.mysql.kind is Kind.SET and _label_text(column, r, kind, pk):
        return "setbits:" + orjson.dumps(list(column.mysql.values)).decode(), ("bits", None)
    return None


def _with_reads(reads: list[str | None], spec: Any) -> tuple[str, list[str | None], Any]:
    """A writer's spec with its columns' Connect conversions (``debezium_in.rs``'s ``split_spec``)."""
    return ("connect", reads, spec)


def _label_text(column: Any, r: Any, kind: str, pk: list[str]) -> bool:
    """Are a column's values an ENUM's label or a SET's labels as Debezium writes them
    (``io.debezium.data.Enum``/``EnumSet`` strings, which Python keeps as the text they are)?
    Key columns are Python's."""
    from cdc_smt.transforms.types import Kind

    mt = column.mysql
    labelled = mt.kind in (Kind.ENUM, Kind.SET) and bool(mt.values)
    return labelled and kind == "str" and r is not None and r.kind == "string" and column.name not in pk


def _single_float(column: Any, r: Any, kind: str) -> bool:
    """Is a column a single-precision FLOAT whose values are Connect ``float32`` numbers (the
    decoder rounds them to single precision, as the typed writers' ``float32`` conversion does)?"""
    from cdc_smt.transforms.types import Kind

    mt = column.mysql
    return (
        mt.kind is Kind.FLOAT
        and mt.is_single_float
        and r is not None
        and r.kind == "float32"
        and kind in ("int", "float")
    )


def _wall_clock_zone(source: str, sink: str, zones: bool) -> str | None:
    """The zone a ``ZonedTimestamp`` is read into natively: both codecs' ``source_timezone``
    when they are the same (the writer then writes the wall clock as read), UTC, or (``zones``)
    another zone both zone databases agree on (``native.zones_agree``); else ``None``."""
    if source != sink:
        return None
    return source if source == "UTC" or (zones and zones_agree(source)) else None


def _connect_read(
    text_op: tuple[str, int | None], column: Any, r: Any, kind: str, zone: str | None, unfolded: bool = False
) -> str | None:
    """How the reader turns a column's Debezium values into the text its Canal conversion
    (``text_op``: :func:`native.canal_text_op`) reads (``text``: as written), or ``None``
    (Python converts them). ``r``: the column's Connect representation; ``zone``: the zone a
    ``ZonedTimestamp`` is read into (:func:`_wall_clock_zone`; ``None``: Python's);
    ``unfolded``: wall clocks the zone repeats are Python's."""
    from cdc_smt.transforms.types import Kind

    op, arg = text_op
    mt = column.mysql
    if kind == "null":
        return "text"  # no value to convert
    if r is None or op == "python":
        return None
    if r.kind == "int" and (op, kind) in (("int", "int"), ("year", "int")):
        return "u64" if mt.unsigned and mt.base == "bigint" and r.ctype == "int64" else "text"
    if (op, kind) in _AS_WRITTEN and not mt.unsigned and (op != "bits" or arg == 1):
        return "text" if r.kind in ("string", "float64", "bool") else None
    if (op, r.kind, kind) == ("decimal", "vsdecimal", "obj"):
        return "vsdecimal"  # io.debezium.data.VariableScaleDecimal: {scale, value}
    if (op, r.kind, kind) == ("bits", "bits", "str"):
        return "bits"  # io.debezium.data.Bits: the bits' number (BIT(1) too: 0 or 1 only)
    if (op, r.kind, kind) == ("decimal", "decimal", "str") and r.scale >= 0:
        return f"decimal:{r.scale}"
    if (op, r.kind, kind) == ("datetime", "zoned", "str") and zone is not None:
        if zone == "UTC":
            return "zoned"
        return f"zoned-unfolded:{zone}" if unfolded else f"zoned:{zone}"
    if op == "datetime" and mt.kind is not Kind.DATETIME:
        return None  # a TIMESTAMP as epoch counts: Python
    return _CONNECT_READS.get((op, r.kind, kind))


class DebeziumTables(_Layouts):
    """Compiles one Debezium layout for re-writing Debezium as Debezium: per op, whether
    the transforms drop the rows or keep them (with which topic and header edits); the
    probe's records must be its own envelope, key and (after a delete) tombstone."""

    def _compile_probe(self, probe: _Probe, pk: list[str], columns: list[tuple[str, str]]) -> Any:
        decoded, shape = self._probe_shape(probe, pk)
        schemas = self.encoder.schemas_enable
        if probe.head is not None:
            if not self.encoder.passes_values_through(decoded):
                return None  # the encoder converts the values: Python
            envelope = orjson.dumps(orjson.loads(probe.head + b"}")["schema"]) if schemas else None
            exact = list(self.decoder.decimal_columns(probe.head, tuple(pk)))
        elif schemas:
            return None  # a schema inferred from the values: Python
        else:
            envelope, exact = None, []
        parts: dict[str, bytes | None] = {"envelope": envelope, "key": None}
        if _copied_unwrap(self.transforms):
            if probe.head is not None and _typing_unwrap(self.transforms):
                return None  # values typed from their Connect representations and re-written: Python
            if schemas and probe.head is not None:
                # no Connect struct (``"schema":null``): Python infers the row's from its values
                connect_reprs(self.decoder, probe.head, pk)
            parts["envelope"] = None  # the flat row's, from the probe's records
            laid = [self._unwrapped_layout(probe, code, shape, parts, pk) for code, _ in _OPS]
            unwrapped = [(row, tomb) for row, tomb, _ in laid]
            ops = [
                (0, None) if row is None and tomb is None else (2, tomb if row is None else row)
                for row, tomb in unwrapped
            ]
            return ops, parts["envelope"], parts["key"], exact, unwrapped, [added for _, _, added in laid]
        ops = [self._op_layout(probe, code, shape, parts) for code, _ in _OPS]
        return ops, parts["envelope"], parts["key"], exact

    def _op_layout(
        self, probe: _Probe, code: str, shape: _Shape, parts: dict[str, bytes | None]
    ) -> tuple[int, int | None]:
        """One op's entry; ``parts``: the schema parts (the message's own envelope schema,
        the key's, the same for every op)."""
        event, edits = self._follow(self._decode_probe(probe, code), shape.selected)
        if event is None:
            return 0, None
        records = self.encoder.encode(event)
        key = probe.record_key(event.pk)
        value = orjson.dumps(probe.envelope(code))
        if self.encoder.schemas_enable:
            if key is not None:
                key_schema = _schema_part(records[0].key or b"")
                if parts["key"] not in (None, key_schema):
                    raise _Unsupported("key schema")
                parts["key"] = key_schema
                key = b'{"schema":' + key_schema + b',"payload":' + key + b"}"
            value = b'{"schema":' + (parts["envelope"] or b"") + b',"payload":' + value + b"}"
        expected: list[tuple[bytes | None, bytes | None]] = [(value, key)]
        if code == "d" and self.encoder.tombstones_on_delete and key is not None:
            expected.append((None, key))
        if [(r.value, r.key) for r in records] != expected or len({r.topic for r in records}) != 1:
            raise _Unsupported("message")  # not what the writer writes
        return 2, self._variant(records[0].topic, edits)

    def _unwrapped_layout(
        self, probe: _Probe, code: str, shape: _Shape, parts: dict[str, bytes | None], pk: list[str]
    ) -> tuple[int | None, int | None, list[tuple[bytes, int]]]:
        """One op under ``unwrap``: the variants of its flat row and of its tombstone (``None``:
        not written) and the fields added after the image (``_added``). The probe's records must
        be the image written flat with them (the row's schema under ``schemas_enable``) and a
        null value, each with the row's key."""
        from cdc_smt.transforms.smt.base import UNWRAPPED

        event: Any = self._decode_probe(probe, code)
        edits: list[Any] | None = None
        tomb: tuple[Any, list[Any] | None] | None = None
        for t, selected in zip(self.transforms, shape.selected, strict=True):
            if tomb is not None:
                tomb = _follow_tombstone(t, *tomb)
            if event is None:
                continue
            if t.selects(event) != selected:
                raise _Unsupported("predicate")  # it judges ops differently: Python
            event, edits, tomb = _apply_step(t, event, selected, edits, tomb)
        if event is None and tomb is None:
            return None, None, []  # dropped
        image = probe.row
        key = probe.record_key(tuple(pk))
        if key is not None and self.encoder.schemas_enable:
            key = self._key_part(event or (tomb[0] if tomb else None), parts, key)
        row = None
        added: list[tuple[bytes, int]] = []
        if event is not None:
            if not event.extra.get(UNWRAPPED):
                raise _Unsupported("not unwrapped")  # unwrap's predicate passed the envelope: Python
            (record,) = self.encoder.encode(event)
            value = orjson.dumps(image)
            if _typing_unwrap(self.transforms):
                payload = record.value or b""
                if self.encoder.schemas_enable:
                    payload = orjson.dumps(orjson.loads(payload)["payload"])
                added = _added(_the_unwrap(self.transforms), image, payload)
                value = payload
            if self.encoder.schemas_enable:
                schema = _schema_part(record.value or b"")
                if parts["envelope"] not in (None, schema):
                    raise _Unsupported("row schema")
                parts["envelope"] = schema
                value = b'{"schema":' + schema + b',"payload":' + value + b"}"
            if (record.value, record.key) != (value, key):
                raise _Unsupported("message")  # not what the writer writes
            row = self._variant(record.topic, edits)
        tombstone = None
        if tomb is not None:
            (record,) = self.encoder.encode(tomb[0])
            if record.value is not None or record.key != key or key is None:
                raise _Unsupported("tombstone")
            tombstone = self._variant(record.topic, tomb[1])
        return row, tombstone, added

    def _key_part(self, event: Any, parts: dict[str, bytes | None], key: bytes) -> bytes:
        """The key wrapped in the key's schema (the same for every op), from ``event``'s record."""
        if event is None:
            raise _Unsupported("key")
        (record,) = self.encoder.encode(event)[:1]
        key_schema = _schema_part(record.key or b"")
        if parts["key"] not in (None, key_schema):
            raise _Unsupported("key schema")
        parts["key"] = key_schema
        return b'{"schema":' + key_schema + b',"payload":' + key + b"}"


class DebeziumTypedTables(_Layouts, _TypedJsonTables):
    """Compiles one Debezium layout for the Maxwell or GoldenGate writer: each column's
    typed JSON conversion (of the reader's text), the key names, and per op whether the
    transforms drop the rows or with which topic and header edits they are written; the
    probe's message must be what the writer writes for it."""

    def _compile_probe(self, probe: _Probe, pk: list[str], columns: list[tuple[str, str]]) -> Any:
        decoded, shape = self._probe_shape(probe, pk)
        if len(set(pk)) != len(pk):
            return None  # a repeated key column: Python's
        connect = connect_columns(self, probe, decoded, columns, pk, unfolded=True)
        if connect is None:
            return PYTHON_HEAD
        labels, reads = connect
        table = probe.source["table"]
        if self.encoder.name == "ogg-json" and "schema" in probe.source:
            table = f"{probe.source['schema']}.{table}"  # GoldenGate's name: database.schema.table
        message = {"database": probe.source["db"], "table": table, "data": [probe.row]}
        ops = [self._op_typed_layout(probe, message, code, kind, shape, pk) for code, kind in _OPS]
        converted = [
            (c.name, *(self._label_conversion(c) if label else self._conversion(c, True)))
            for c, label in zip(decoded.schema.columns, labels, strict=True)
        ]
        spec = converted, list(pk), ops
        return spec if probe.head is None else _with_reads(reads, spec)

    def _label_conversion(self, column: Any) -> tuple[str, None]:
        """How the writer renders an ENUM's or SET's labels as Debezium writes them (the
        typed value Python keeps): the text, a SET's as its list when the writer lists them."""
        from cdc_smt.transforms.types import Kind

        if column.mysql.kind is Kind.SET and self.encoder.set_as_list:
            return ("set_list", None)
        return ("str", None)

    def _op_typed_layout(
        self, probe: _Probe, message: dict[str, Any], code: str, kind: str, shape: _Shape, pk: list[str]
    ) -> tuple[int, int | None]:
        """One op's entry: ``(0, None)`` dropped, ``(2, variant)`` written."""
        event, edits = self._follow(self._decode_probe(probe, code), shape.selected)
        if event is None:
            return 0, None
        (first,) = self.encoder.encode(event)
        if first.value != orjson.dumps(self._expected(message, kind, pk)) or first.key != probe.record_key(event.pk):
            raise _Unsupported("message")  # not what the writer writes
        return 2, self._variant(first.topic, edits)


class DebeziumDtsTables(_Layouts, _DtsOutTables):
    """Compiles one Debezium layout for the DTS Avro writer: each column's DTS value (from
    the column types the decoder gives the layout), the key, and per op the record parts
    the same for every row (from the probe's own record, its values nulled)."""

    def _compile_probe(self, probe: _Probe, pk: list[str], columns: list[tuple[str, str]]) -> Any:
        decoded, shape = self._probe_shape(probe, pk)
        if len(set(pk)) != len(pk):
            return None
        connect = connect_columns(self, probe, decoded, columns, pk, unfolded=True)
        if connect is None:
            return PYTHON_HEAD
        labels, reads = connect
        schema = decoded.schema
        names = [c.name for c in schema.columns]
        if any(k not in names for k in decoded.pk):
            return None  # a key naming a column the row lacks: Python's
        converted = [
            (c.name, *(self._label_column(c) if label else self._column(c)))
            for c, label in zip(schema.columns, labels, strict=True)
        ]
        key = [(k, names.index(k), self._key_is_int(schema.by_name[k])) for k in decoded.pk]
        ops = [self._op_dts(self._null_probe(probe, code), kind, shape, names) for code, kind in _OPS]
        if any(middle is not None and not middle.startswith(_NO_POSITION) for _, _, middle in ops):
            return None  # the writer puts each event's position there
        spec = 0, converted, key, ops
        return spec if probe.head is None else _with_reads(reads, spec)

    def _label_column(self, column: Any) -> tuple[Any, ...]:
        """An ENUM or SET under the schema part: Debezium writes its labels, the typed value
        Python keeps, so an ENUM's DTS value is the label itself (other texts: Python's), a
        SET's the text as written (``TextObject``, as ``encode_value`` writes it)."""
        from cdc_smt.transforms.formats.dts_avro import encode_value
        from cdc_smt.transforms.types import Kind

        _, fields = encode_value(column.mysql, "", self.timezone)
        if column.mysql.kind is Kind.SET:
            return "text_object", 0, 0, fields["type"], None
        return "enum", 0, 0, fields["type"], {label: label for label in column.mysql.values}

    def _null_probe(self, probe: _Probe, code: str) -> Any:
        """The op's probe event with every value null (the parts checked are the row's
        constant ones), its column types those of the layout's values."""
        event = self._decode_probe(probe, code)
        for image in ("before", "after"):
            values = getattr(event, image)
            if values is not None:
                setattr(event, image, dict.fromkeys(values))
        return event


__all__ = ["DebeziumCanalTables", "DebeziumDtsTables", "DebeziumTables", "DebeziumTypedTables", "debezium_plan"]
