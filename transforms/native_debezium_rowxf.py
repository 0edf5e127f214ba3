"""The row-changing transforms from the Debezium reader: debezium-json -> the writers of Canal
text (TiCDC's, Maxwell's, GoldenGate's, CloudCanal's, CKafka's, DataWorks', TDSQL's, DTS's) with
``replace_field``, ``mask_field``, ``insert_field``, ``value_to_key`` and ``merge_shards``.

The Debezium reader (``native/src/debezium_in.rs``) hands each row to these writers as a
one-row Canal message of texts (with the event's source position), so the transforms are
followed as from canal-json (``native_rowxf.TextShaped``, ``row_shape.rs``): the row re-shaped in
Canal text, then written by the writer's table of the transformed schema. What differs is
the probe, a Debezium event of the reader's layout (source block, key names, each column's
JSON kind) decoded by the chain's own decoder; the texts, which are Canal's
(:attr:`DebeziumShaped.text_decoder`); and the key, whose integers are numbers whether or
not a transform typed the row (the Debezium decoder's values are typed as read). Under a
schema part (every writer) each value is read from its Connect representation into its type's
Canal text (``connect_in.rs``), or into a text the writer's table reads as Python writes the
value (:meth:`DebeziumShaped._own_read`: ENUM labels, SET labels as Canal's bitmask, ``float32``
numbers); other columns whose values are written otherwise (SET labels on the writers that copy
them, in Debezium's order) and key columns converted into other than an integer's or a decimal's
digits (dates, times, bytes), or converted at all in a key no transform set, are Python's.
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc_smt.transforms.model import Record
from cdc_smt.transforms.native import (
    DEBEZIUM_TO_CANAL,
    DEBEZIUM_TO_CKAFKA,
    DEBEZIUM_TO_CLOUDCANAL,
    DEBEZIUM_TO_DATAWORKS,
    DEBEZIUM_TO_DTS,
    DEBEZIUM_TO_MAXWELL,
    DEBEZIUM_TO_OGG,
    DEBEZIUM_TO_TDSQL,
    DEBEZIUM_TO_TICDC,
    NativePlan,
    _CanalOutTables,
    _supported,
    _Unsupported,
)
from cdc_smt.transforms.native_debezium import (
    _NO_POSITION,
    _OPS,
    LayoutCompiler,
    _label_text,
    _Probe,
    _single_float,
    _with_reads,
    connect_reads,
    connect_reprs,
    reader_plan,
)
from cdc_smt.transforms.native_dts import DtsNativePlan, _ShapedDtsTables
from cdc_smt.transforms.native_maxwell import _ShapedTypedJsonTables
from cdc_smt.transforms.native_rowxf import TextShaped
from cdc_smt.transforms.native_tdsql_out import _ShapedTdsqlTables
from cdc_smt.transforms.native_ticdc import _ShapedTicdcTables
from cdc_smt.transforms.native_vendor_out import (
    _ShapedCKafkaTables,
    _ShapedCloudCanalTables,
    _ShapedDataWorksTables,
    _zone,
)

#: Debezium's op code of each op the shaped compilers probe.
_CODES = {kind: code for code, kind in _OPS}


class DebeziumShaped(LayoutCompiler, TextShaped):
    """One Debezium layout compiled for a writer of Canal text under the row-changing transforms
    (mixed in before the writer's ``TextShaped`` compiler): the probes are Debezium events of the
    layout (:meth:`_decode`), the shaped rows' texts Canal's."""

    #: The decoder's values are typed as read (JSON integers): the key's integers are numbers.
    keys_typed = True
    #: Under a schema part, how the writer reads a ``ZonedTimestamp`` (``connect_reads``' ``zones``
    #: and ``unfolded``); ``None``: the writer takes no schema part from the reader.
    schema_zones: tuple[bool, bool] | None = None
    #: The writer's table reads an ENUM's labels as Debezium writes them (none of them digits).
    enum_labels = False
    #: The writer's table reads a single-precision FLOAT's ``float32`` number as written (its
    #: ``float32`` conversion rounds as the Python decoder does).
    float32_as_written = True
    #: The writer's table writes a SET from Canal's bitmask as Python writes Debezium's labels
    #: (TiCDC's and Canal's bitmasks: the reader makes one of the labels, ``setbits``).
    set_bits = False

    def __init__(self, decoder: Any, encoder: Any, transforms: Any = ()) -> None:
        from cdc_smt.transforms.formats import get_codec

        super().__init__(decoder, encoder, transforms)
        self._canal: Any = get_codec("canal-json", {"source_timezone": decoder.opts.source_timezone})

    @property
    def text_decoder(self) -> Any:
        return self._canal

    @property
    def form(self) -> Any:
        return self._canal.form

    def _compile_probe(self, probe: _Probe, pk: list[str], columns: list[tuple[str, str]]) -> Any:
        """The writer's ``(spec, shape)`` for the reader's layout (``debezium_in.rs``), or ``None``
        (Python's: a schema part the writer does not take, a layout the shape or the writer
        cannot follow)."""
        head = probe.head
        if head is not None and self.schema_zones is None:
            return None  # the writer takes no schema part from the reader: Python's
        (event,) = self._decode(probe, "INSERT")
        if [c.name for c in event.schema.columns] != list(probe.row) or list(event.pk) != pk:
            return None
        reads = None if head is None else self._schema_reads(head, event, pk, columns, self._explicit_key(probe))
        if head is not None and reads is None:
            return None
        message: Any = probe  # what ``_decode`` decodes each op's probe from
        spec = self._compile(message, event, pk)
        return spec if reads is None or spec is None else _with_reads(reads, spec)

    def _explicit_key(self, probe: _Probe) -> bool:
        """Does a transform set the key (``value_to_key``: the typed values), rather than keep the
        record key's values as read? (Shaped on a probe event of its own: transforms edit it.)"""
        (event,) = self._decode(probe, "INSERT")
        return self._key(self._shape(event, python_on_missing=True))[1]

    def _schema_reads(
        self, head: bytes, event: Any, pk: list[str], columns: list[tuple[str, str]], explicit: bool
    ) -> list[str | None] | None:
        """Under a schema part, each column's Connect conversion into the Canal text the writer's
        table of it reads (``connect_in.rs``; :meth:`_own_read`), or ``None`` (Python's): a column
        whose values need a conversion the reader lacks, a key column whose values are converted
        (the key is written from the texts)."""
        assert self.schema_zones is not None
        zones, unfolded = self.schema_zones
        reprs = connect_reprs(self.decoder, head, pk)
        typed = zip(event.schema.columns, columns, strict=True)
        own = [self._own_read(c, reprs.get(c.name), kind, pk) for c, (_, kind) in typed]
        as_written = [read is not None for read in own]
        found = connect_reads(self.decoder, self.encoder, reprs, event, columns, as_written, zones, unfolded)
        if found is None:
            return None
        reads = [read if read is not None else f for read, f in zip(own, found, strict=True)]
        # the key is the record key's values as read unless a transform set it (then typed)
        keyed = _keyed_as_read if explicit else (lambda read: read == "text")
        if not all(keyed(read) for read, (name, _) in zip(reads, columns, strict=True) if name in pk):
            return None
        return reads

    def _own_read(self, column: Any, r: Any, kind: str, pk: list[str]) -> str | None:
        """The reader's conversion of a column whose Debezium values are not its type's Canal
        text but one the writer's table reads as Python writes them (``None``: the type's own):
        an ENUM's labels (:attr:`enum_labels`), a FLOAT's ``float32`` numbers
        (:attr:`float32_as_written`), a SET's labels as Canal's bitmask (:attr:`set_bits`)."""
        from cdc_smt.transforms.types import Kind

        if self.enum_labels and _plain_enum(column, r, kind, pk):
            return "text"
        if self.float32_as_written and _single_float(column, r, kind):
            return "text"
        if self.set_bits and column.mysql.kind is Kind.SET and _label_text(column, r, kind, pk):
            return "setbits:" + orjson.dumps(list(column.mysql.values)).decode()
        return None

    def _shape(self, event: Any, python_on_missing: bool = False) -> Any:
        """As from Canal, but ``row_index`` is Python's: the decoder's is the source's ``row``,
        which the reader does not hand the writer (its row is the message's only one)."""
        shape = super()._shape(event, python_on_missing)
        if any(a[1] == "row" for a in shape.added):
            raise _Unsupported("row_index")
        return shape

    def _shaped_column(self, column: Any, i: int, shape: Any, zoned: bool, final: Any) -> tuple[Any, ...]:
        """As from Canal, but no column's text is checked to read: the decoder's values are
        typed as read (JSON integers, numbers, strings, booleans), so no typing fails."""
        name, out, _, _, *mask = super()._shaped_column(column, i, shape, zoned, final)
        return (name, out, None, None, *mask)

    def _decode(self, message: Any, kind: str) -> list[Any]:
        probe: _Probe = message
        return self.decoder.decode(Record(value=probe.value(_CODES[kind]), key=probe.key))


class _TypedShaped(DebeziumShaped, _ShapedTypedJsonTables):
    """-> maxwell-json, ogg-json (an ENUM's label is the typed value the writer writes)."""

    schema_zones = (True, True)
    enum_labels = True


class _TicdcShaped(DebeziumShaped, _ShapedTicdcTables):
    """-> ticdc-canal-json (the table reads an ENUM's label text as its index)."""

    schema_zones = (True, False)
    enum_labels = True
    set_bits = True


class _CloudCanalShaped(DebeziumShaped, _ShapedCloudCanalTables):
    """-> cloudcanal-json (an ENUM's label text read as its label)."""

    schema_zones = (True, False)
    enum_labels = True


class _CKafkaShaped(DebeziumShaped, _ShapedCKafkaTables):
    """-> ckafka-json (the binlog position per event from the reader)."""

    schema_zones = (True, False)
    enum_labels = True


class _DataWorksShaped(DebeziumShaped, _ShapedDataWorksTables):
    """-> dataworks-json (which makes an instant of a ``ZonedTimestamp``'s wall clock again: a
    DST fold is Python's)."""

    schema_zones = (True, True)
    enum_labels = True


class _TdsqlShaped(DebeziumShaped, _ShapedTdsqlTables):
    """-> tdsql-binlog-json (the source's ``gtid`` per event from the reader)."""

    schema_zones = (True, False)
    enum_labels = True


class _DtsShaped(DebeziumShaped, _ShapedDtsTables):
    """-> dts-avro: each op's record parts from the transformed probe, whose source has no
    position (the reader writes each event's in its place); a ``ZonedTimestamp`` outside UTC too
    (the writer makes an instant of its wall clock again: a DST fold is Python's); an ENUM's
    label text read as its DTS value."""

    schema_zones = (True, True)
    enum_labels = True

    def _op_entry(self, done: Any, edits: Any) -> tuple[Any, ...]:
        entry = super()._op_entry(done, edits)
        if not entry[2].startswith(_NO_POSITION):
            raise _Unsupported("position")  # the reader puts each event's position there
        return entry


class _RetextCanalTables(_CanalOutTables):
    """The Canal writer's table of a transformed schema, every value re-written as Canal text
    with the schema's type maps (as from the Debezium reader without transforms)."""

    @property
    def retext(self) -> bool:
        return True

    def _text(self, column: Any, zoned: bool) -> tuple[Any, ...]:
        """A SET's texts are Canal's bitmasks (the reader's ``setbits``, a mask's constant as
        Canal writes it), written as they are (as the bare plan writes them: ``bits``)."""
        from cdc_smt.transforms.types import Kind

        text = super()._text(column, zoned)
        if column.mysql.kind is Kind.SET and column.mysql.values:
            return (text[0], "bits", None, *text[3:])
        return text


class _CanalShaped(DebeziumShaped):
    """-> canal-json (``batch: row``): the Canal writer re-writes the shaped texts with the
    transformed schema's ``mysqlType`` and ``sqlType``."""

    writer_tables = _RetextCanalTables
    schema_zones = (True, False)
    float32_as_written = False  # the retext table's FLOAT op is not Java's ``Float.toString``
    set_bits = True

    def _check_shaped(self, written: dict[str, Any], final: Any) -> None:
        fields = (written.get("database"), written.get("table"), written.get("pkNames"))
        if fields != (final.source.database, final.source.table, list(final.pk) or None):
            raise _Unsupported("message")  # not the shaped message's fields


#: The reader's conversions whose Canal text is the typed value's key text (``row_shape.rs``'s key
#: forms: an integer's digits, BIGINT UNSIGNED's unwrapped; a DECIMAL's plain digits at its scale,
#: ``format(Decimal, "f")``); ``text``: as written.
_KEYED_READS = ("text", "u64", "vsdecimal")


def _keyed_as_read(read: str | None) -> bool:
    """Does a key column's conversion give the text the key writes as Python writes the typed value
    (a key a transform set: ``value_to_key``; the key forms then check the text: ``_key_form``)?
    Others (dates, times, bytes) are Python's; so is every converted one in a key no transform
    set (Python keeps the record key's values as read: base64, wrapped integers)."""
    return read is not None and (read in _KEYED_READS or read.startswith("decimal:"))


def _plain_enum(column: Any, r: Any, kind: str, pk: list[str]) -> bool:
    """Is a column an ENUM whose values are its labels as Debezium writes them (not a key column),
    none of them digits (the writer's ENUM table reads a digit text as an index)?"""
    from cdc_smt.transforms.types import Kind

    labelled = _label_text(column, r, kind, pk) and column.mysql.kind is Kind.ENUM
    return labelled and not any(v.isdigit() for v in column.mysql.values)


def shaped_plan(chain: Any, extension: Any) -> NativePlan | None:
    """debezium-json -> a writer of Canal text with row-changing transforms (not ``unwrap``),
    or ``None``; ``extension`` is the native module."""
    from cdc_smt.transforms.smt.unwrap import Unwrap

    transforms = list(chain.transforms)
    if any(type(t) is Unwrap for t in transforms) or not all(_supported(t) for t in transforms):
        return None
    encoder = chain.encoder
    name = encoder.name
    numbered = {"ids": encoder}
    writers: dict[str, tuple[str, type[DebeziumShaped], dict[str, Any]]] = {
        "canal-json": (DEBEZIUM_TO_CANAL, _CanalShaped, {}),
        "maxwell-json": (DEBEZIUM_TO_MAXWELL, _TypedShaped, {}),
        "ogg-json": (DEBEZIUM_TO_OGG, _TypedShaped, {}),
        "ticdc-canal-json": (DEBEZIUM_TO_TICDC, _TicdcShaped, {}),
        "cloudcanal-json": (DEBEZIUM_TO_CLOUDCANAL, _CloudCanalShaped, {}),
        "ckafka-json": (DEBEZIUM_TO_CKAFKA, _CKafkaShaped, {}),
        "dataworks-json": (DEBEZIUM_TO_DATAWORKS, _DataWorksShaped, numbered),
        "tdsql-binlog-json": (DEBEZIUM_TO_TDSQL, _TdsqlShaped, {}),
        "dts-avro": (DEBEZIUM_TO_DTS, _DtsShaped, numbered),
    }
    if name not in writers:
        return None
    plan_name, tables, options = writers[name]
    if name == "canal-json" and encoder.batching:
        return None  # Python groups consecutive events of a transaction into one message
    if name == "ticdc-canal-json" and encoder.opts.enable_tidb_extension:
        return None  # commitTs from the source's commit_ts, which the reader does not read
    if name == "ckafka-json":
        options = {"zone": _zone(encoder)}
    if name == "dataworks-json":
        options = {**options, "single_updates": encoder.opts.update_as == "single"}
    compiler = tables(chain.decoder, encoder, transforms)
    plan = reader_plan(plan_name, compiler, chain, extension, encoder=name, **options)
    return DtsNativePlan(plan.name, plan.plan, plan.variants) if "ids" in options else plan


__all__ = ["DebeziumShaped", "shaped_plan"]
