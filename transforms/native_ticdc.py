"""The native planner's TiCDC writer: canal-json or ticdc-canal-json -> ticdc-canal-json.

The plan (``native/src/ticdc_out.rs``) writes what ``TicdcCanalJson.encode_message``
writes for a Canal row: from official Canal, per column the conversion of Canal's text
to TiCDC's (``format_text``), its ``mysqlType`` (parameterless, or the full type with
``content_compatible``) and its ``sqlType`` codes (TiCDC's table: one code, unsigned
integers above the signed range a wider one); from TiCDC itself, the values and type maps
as they are. Only transforms that keep rows as they are (filter by table/op, route,
drop_tombstones, the header transforms) qualify; each op's probe checks that Python
writes the message's table, row, type maps and ``_tidb`` as the writer does.
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc_smt.transforms import native
from cdc_smt.transforms.native import (
    CANAL_TO_TICDC,
    DEBEZIUM_TO_TICDC,
    TICDC_TO_TICDC,
    NativePlan,
    _CanalOutTables,
    _Shape,
)
from cdc_smt.transforms.native_debezium import (
    _OPS,
    _SAMPLES,
    PYTHON_HEAD,
    _canal_read,
    _label_text,
    _Layouts,
    _wall_clock_zone,
    _with_reads,
    connect_reads,
    connect_reprs,
)
from cdc_smt.transforms.native_rowxf import TextShaped, changes_rows, shaped_plan

_KINDS = ("INSERT", "UPDATE", "DELETE", "INIT")
#: A column of the spec: (name, mysqlType, conversion, argument, sqlType code, (wide code, signed max) | None).
ColumnSpec = tuple[str, str, str, Any, int, "tuple[int, int] | None"]


def plan(chain: Any) -> NativePlan | None:
    """The plan for a Canal (or TiCDC) decoder and a ticdc-canal-json encoder, or ``None``;
    from canal-json the row-changing transforms too (``native_rowxf``)."""
    if changes_rows(chain.transforms):
        return shaped_plan(chain, _ShapedTicdcTables, (CANAL_TO_TICDC, None), encoder="ticdc-canal-json")
    return native.row_keeping_plan(chain, _TicdcOutTables, (CANAL_TO_TICDC, TICDC_TO_TICDC), encoder="ticdc-canal-json")


def format_text(column: Any, zoned: bool) -> tuple[str, Any]:
    """How the writer turns one column's Canal text into TiCDC's (``python``: a non-null
    value sends the record to Python)."""
    from cdc_smt.transforms.formats.canal_json import _enum_index_table, _enum_table
    from cdc_smt.transforms.types import Kind

    t = column.mysql
    k = t.kind
    if k is Kind.STRING or k is Kind.JSON or ((k is Kind.ENUM or k is Kind.SET) and not t.values):
        return "same", None
    if k is Kind.ENUM:
        index = _enum_index_table(t)
        return "enum", {text: index[label] for text, label in _enum_table(t).items()}
    if k is Kind.SET:
        labels = t.values
        plain = len(set(labels)) == len(labels) <= 64 and all(label and "," not in label for label in labels)
        return ("set_bits", len(labels)) if plain else ("python", None)
    if k is Kind.INT:
        return "int", None
    if k is Kind.YEAR:
        return "year", None
    if k is Kind.BIT and t.length is not None:
        return "bits", t.length
    if k is Kind.DECIMAL:
        return "decimal", None
    if k is Kind.FLOAT:
        return ("float32" if t.is_single_float else "double"), None
    if k is Kind.DATE:
        return "date", None
    if k is Kind.DATETIME or (k is Kind.TIMESTAMP and zoned):
        return "datetime", t.fsp or 0
    if k is Kind.TIME:
        return "time", t.fsp or 0
    if k is Kind.BYTES:
        return "bytes", None
    return "python", None  # GEOMETRY, TIMESTAMPs between zones


def column_spec(tables: _CanalOutTables, column: Any, zoned: bool) -> ColumnSpec:
    """One column's spec for the writer (:data:`ColumnSpec`): its conversion, and its
    ``mysqlType`` and ``sqlType`` codes as ``tables``' encoder writes them."""
    type_text, _, _, null_code, code, wide, signed_max = tables._text(column, zoned)
    if null_code != code:
        raise native._Unsupported("sqlType")  # TiCDC's codes do not depend on NULL-ness
    conv, arg = format_text(column, zoned)
    return column.name, type_text, conv, arg, code, None if signed_max is None else (wide, signed_max)


class _TicdcOutTables(_CanalOutTables):
    """Compiles one Canal table layout for the TiCDC writer: per column its conversion,
    ``mysqlType`` and ``sqlType`` codes, the primary key, and per op whether the transforms
    drop the rows or keep them (with which topic and header edits)."""

    @property
    def same(self) -> bool:
        """From TiCDC itself: values and type maps are copied."""
        return self.decoder.form is self.encoder.form

    def _accepts(self, types: dict[str, Any], sql_types: Any, pk: list[str]) -> bool:
        if self.same and (not isinstance(sql_types, dict) or sorted(sql_types) != sorted(types)):
            return False  # sqlType computed from the values: the Python path
        return len(set(pk)) == len(pk)

    def _compile(self, message: dict[str, Any], event: Any, pk: list[str]) -> Any:
        from cdc_smt.transforms.types import Kind

        types = message["mysqlType"]
        schema = event.schema
        if sorted(c.name for c in schema.columns) != sorted(types):
            return None
        zoned = self.timezone == self.encoder.opts.source_timezone
        if self.same and not zoned and any(c.mysql.kind is Kind.TIMESTAMP for c in schema.columns):
            return None  # TIMESTAMP text re-based between the zones: Python
        columns = [column_spec(self, c, zoned) for c in schema.columns]
        opts = self.encoder.opts
        # content_compatible computes mysqlType; Python keeps the message's when they are equal.
        keep = not opts.content_compatible or {c[0]: c[1] for c in columns} == types
        shape = self._shape(event)
        ops = [self._op_ticdc(message, kind, shape, columns, keep) for kind in _KINDS]
        return columns, list(pk), ops, (self.same, opts.content_compatible, opts.enable_tidb_extension, keep)

    def _op_ticdc(
        self, message: dict[str, Any], kind: str, shape: _Shape, columns: list[ColumnSpec], keep: bool
    ) -> tuple[int, int | None]:
        """One op's entry: ``(0, None)`` dropped, ``(2, variant)`` written."""
        encoded = self._encode_op(message, kind, shape.selected)
        if encoded is None:
            return 0, None
        _, value, topic, edits = encoded
        written = orjson.loads(value)
        row = message["data"][0]
        spec = {c[0]: c for c in columns}
        database, table = message["database"], message["table"]
        if not self.same:
            database, table = database or "", table or ""
        mysql_types = message["mysqlType"] if self.same and keep else {n: spec[n][1] for n in row}
        sql_types = message["sqlType"] if self.same else {n: spec[n][4] for n in row}
        if (
            written.get("data") != [row]
            or written.get("database") != database
            or written.get("table") != table
            or written.get("type") != ("INSERT" if kind == "INIT" else kind)
            or written.get("mysqlType") != mysql_types
            or written.get("sqlType") != sql_types
            or ("_tidb" in written) != self.encoder.opts.enable_tidb_extension
        ):
            raise native._Unsupported("message")  # not what the writer writes
        return 2, self._variant(topic, edits)


class _ShapedTicdcTables(TextShaped, _TicdcOutTables):
    """canal-json -> ticdc-canal-json under row-changing transforms: the TiCDC writer's table
    of the transformed schema, fed the re-shaped rows (``row_shape.rs``)."""

    writer_tables = _TicdcOutTables

    def _check_shaped(self, written: dict[str, Any], final: Any) -> None:
        database, table = (n or "" for n in (final.source.database, final.source.table))
        fields = (written.get("pkNames"), written.get("database"), written.get("table"))
        if fields != (list(final.pk) or None, database, table):
            raise native._Unsupported("message")  # not the shaped message's fields


def debezium_plan(chain: Any, extension: Any) -> NativePlan | None:
    """debezium-json -> ticdc-canal-json through the Debezium reader (``debezium_in.rs``),
    with the transforms that keep rows as they are, or ``None``; ``extension`` is the
    native module. With ``enable_tidb_extension`` Python's (``_tidb.commitTs`` comes from
    the source block's ``commit_ts``, which the reader does not read)."""
    from cdc_smt.transforms.native import _keeps_rows, _supported

    if chain.encoder.opts.enable_tidb_extension:
        return None
    if not all(_supported(t) and _keeps_rows(t) for t in chain.transforms):
        return None
    from cdc_smt.transforms.native_debezium import reader_plan

    tables = _DebeziumTicdcTables(chain.decoder, chain.encoder, list(chain.transforms))
    return reader_plan(DEBEZIUM_TO_TICDC, tables, chain, extension, encoder="ticdc-canal-json")


class _DebeziumTicdcTables(_Layouts):
    """Compiles one Debezium layout (columns typed by their JSON kinds, or by the schema
    part with each value's Connect conversion) for the TiCDC writer: per column its
    conversion and type maps; each op's probe must be what the writer writes for it
    (TiCDC's fields, the whole before-image as UPDATE ``old``)."""

    def _compile_probe(self, probe: Any, pk: list[str], columns: list[tuple[str, str]]) -> Any:
        decoded, shape = self._probe_shape(probe, pk)
        if probe.head is None:
            specs = [column_spec(self, c, True) for c in decoded.schema.columns]
            texts = {name: _SAMPLES[kind][1] for name, kind in columns}
            reads: list[str | None] = []
        else:  # columns typed by the schema part: values read from their Connect representations
            found = self._schema_reads(probe.head, pk, decoded, columns)
            if found is None:
                return (
                    PYTHON_HEAD  # a representation the reader does not convert: the schema part's messages are Python's
                )
            specs, reads = found
            texts = dict.fromkeys(probe.row)
        ops = [self._op_ticdc_layout(probe, code, kind, shape, texts, specs) for code, kind in _OPS]
        spec = specs, list(pk), ops, (False, self.encoder.opts.content_compatible, False, False)
        return spec if probe.head is None else _with_reads(reads, spec)

    def _schema_reads(
        self, head: bytes, pk: list[str], decoded: Any, columns: list[tuple[str, str]]
    ) -> tuple[list[ColumnSpec], list[str | None]] | None:
        """Under a schema part, each column's spec and the reader's Connect conversion into the
        Canal text the writer's conversion reads (``native_debezium._reads``; ENUM labels as
        Debezium writes them, mapped to TiCDC's index; SET labels as Canal's bitmask, FLOAT's
        ``float32`` numbers as written), or ``None`` when a column's values need a conversion
        the reader lacks."""
        from cdc_smt.transforms.formats.canal_json import _enum_index_table
        from cdc_smt.transforms.types import Kind

        reprs = connect_reprs(self.decoder, head, pk)
        typed = list(zip(decoded.schema.columns, columns, strict=True))
        enums = [c.mysql.kind is Kind.ENUM and _label_text(c, reprs.get(c.name), kind, pk) for c, (_, kind) in typed]
        own = [_canal_read(c, reprs.get(c.name), kind, pk) for c, (_, kind) in typed]
        as_written = [enum or read is not None for enum, read in zip(enums, own, strict=True)]
        found = connect_reads(self.decoder, self.encoder, reprs, decoded, columns, as_written, zones=True)
        if found is None:
            return None
        source = self.decoder.opts.source_timezone
        zoned = _wall_clock_zone(source, self.encoder.opts.source_timezone, True) is not None
        specs = [column_spec(self, c, zoned) for c in decoded.schema.columns]
        specs = [
            (*spec[:2], "enum", _enum_index_table(c.mysql), *spec[4:]) if enum else spec
            for spec, (c, _), enum in zip(specs, typed, enums, strict=True)
        ]
        reads = [read[0] if read is not None else f for read, f in zip(own, found, strict=True)]
        return specs, reads

    def _op_ticdc_layout(
        self,
        probe: Any,
        code: str,
        kind: str,
        shape: _Shape,
        texts: dict[str, str | None],
        specs: list[ColumnSpec],
    ) -> tuple[int, int | None]:
        """One op's entry: ``(0, None)`` dropped, ``(2, variant)`` written."""
        event, edits = self._follow(self._decode_probe(probe, code), shape.selected)
        if event is None:
            return 0, None
        (first,) = self.encoder.encode(event)
        old = None
        if kind == "UPDATE":  # the probe's images are equal: no column changed
            old = [{} if self.encoder.opts.content_compatible else texts]
        expected = {
            "id": 0,
            "database": probe.source["db"],
            "table": probe.source["table"],
            "pkNames": list(event.pk) or None,
            "isDdl": False,
            "type": "INSERT" if kind == "INIT" else kind,
            "es": 0,
            "ts": 0,
            "sql": "",
            "sqlType": {s[0]: s[4] for s in specs},
            "mysqlType": {s[0]: s[1] for s in specs},
            "old": old,
            "data": [texts],
        }
        written = orjson.loads(first.value)
        if written != expected or list(written) != list(expected) or first.key != probe.record_key(event.pk):
            raise native._Unsupported("message")  # not what the writer writes
        return 2, self._variant(first.topic, edits)
