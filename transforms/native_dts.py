"""The native plans' DTS Avro side: canal-json (or ticdc-canal-json) -> dts-avro.

The Rust writer (``native/src/dts_avro_out.rs``) writes one Avro ``Record`` per row.
Per table layout, :class:`_DtsOutTables` asks the Python codecs for everything that
is not a row value: a one-row probe message (all values null) is decoded, run
through the chain's transforms and encoded per op, and the record's parts that are
the same for every row of the table and op (``sourcePosition`` .. ``fields``) are
encoded with fastavro from the probe's own record; each column's DTS value (union
branch, precision, scale, charset or object type) comes from
``dts_avro.encode_value`` itself. The probe's bytes are checked against what the
writer assembles from those parts, so a layout the writer would get wrong stays in
Python.

The record ``id`` is the encoder's counter (``DtsAvro._next_id``): the plan reads it
at the start of a batch and writes it back at the end, and hands Python every record
of the batch after the first one it cannot convert, so that ids are given in order.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from decimal import Decimal
from functools import lru_cache
from typing import Any

import fastavro

from cdc_smt.schemas import load_avro
from cdc_smt.transforms.model import Record
from cdc_smt.transforms.native import (
    CANAL_TO_DTS,
    TICDC_TO_DTS,
    NativePlan,
    _CanalTables,
    _enum_table,
    _Shape,
    _Unsupported,
    zones_agree,
)
from cdc_smt.transforms.native_rowxf import TextShaped, _plain_decimals, changes_rows, shaped_plan

#: The ops of the writers, in their order (c, u, d, r).
_KINDS = ("INSERT", "UPDATE", "DELETE", "INIT")
#: The ``Record`` fields the writer copies per table and op (``sourcePosition`` .. ``fields``).
_MIDDLE = slice(3, 12)


def dts_plan(chain: Any) -> NativePlan | None:
    """canal-json or ticdc-canal-json -> dts-avro with transforms that keep rows as they are,
    or with the row-changing ones on rows re-shaped in Canal text (``native_rowxf``)."""
    from cdc_smt.transforms import native

    shaped = changes_rows(chain.transforms)
    return (shaped_plan if shaped else native.row_keeping_plan)(
        chain,
        _ShapedDtsTables if shaped else _DtsOutTables,
        (CANAL_TO_DTS, TICDC_TO_DTS),
        plan_class=DtsNativePlan,
        encoder="dts-avro",
        ids=chain.encoder,
    )


class _Resume(Exception):
    """The plan takes over again from this record (Python has not processed it)."""

    def __init__(self, record: Record) -> None:
        super().__init__()
        self.record = record


#: The most records :meth:`DtsNativePlan.run` hands to Python at once without asking the plan.
MAX_DIRECT = 1024


class DtsNativePlan(NativePlan):
    """The plan hands Python every record of a batch after the first one it does not
    convert (record ids are numbered in order, as DataWorks' ``sequenceId`` are, whose writer
    uses this plan too; a Debezium tombstone, which gets none, aside);
    :meth:`run` converts again from the next record for Python after each one Python
    processed, so a batch with a DDL or a bad record in it stays native around it.
    (:meth:`convert_values` keeps the plain contract.)"""

    def run(self, records: Iterable[Record], one: Callable[[Record, Any], None], result: Any) -> None:
        pending = records if isinstance(records, list) else list(records)
        taken: list[Record] = []

        def python(record: Record, result: Any) -> None:
            if record.value is None and self.needs_keys:  # a Debezium tombstone: no event, no id
                one(record, result)  # (the plan numbered the records after it on)
                return
            if taken:
                raise _Resume(record)
            taken.append(record)
            one(record, result)

        # Records handed to Python without asking the plan: doubles while the plan converts
        # none of those it is asked (a run of records all Python's, e.g. a schema part it does
        # not read); else each record would cost a conversion call over the rest of the batch.
        direct = 0
        while pending:
            if direct:
                for record in pending[:direct]:
                    one(record, result)
                pending = pending[direct:]
                if not pending:
                    return
            try:
                super().run(pending, python, result)
                return
            except _Resume as resume:
                first = next(i for i, r in enumerate(pending) if r is taken[0])
                done = next(i for i in range(first + 1, len(pending)) if pending[i] is resume.record)
                direct = min(2 * direct or 1, MAX_DIRECT) if (first, done) == (0, 1) else 0
                pending = pending[done:]
                taken.clear()


@lru_cache(maxsize=1)
def _middle_schema() -> Any:
    fields = load_avro("dts-avro")["fields"][_MIDDLE]
    return fastavro.parse_schema(
        {"type": "record", "name": "Middle", "namespace": "com.alibaba.dts.formats.avro", "fields": fields}
    )


def _middle(obj: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _middle_schema(), obj)
    return buf.getvalue()


def _long(n: int) -> bytes:
    """Avro zig-zag varint (to check the probe's bytes)."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


class _DtsOutTables(_CanalTables):
    """Compiles one Canal table layout for the DTS writer: each column's conversion, the
    key, and per op whether the transforms drop the rows, or with which variant and
    constant record parts they are written."""

    def _compile(self, message: dict[str, Any], event: Any, pk: list[str]) -> Any:
        schema = event.schema
        names = [c.name for c in schema.columns]
        if names != list(message["mysqlType"]):
            return None
        shape = self._shape(event)
        columns = [(c.name, *self._column(c)) for c in schema.columns]
        key = [(k, names.index(k), self._key_kind(schema.by_name[k])) for k in schema.primary_key]
        ops = [self._op_dts(self._decode(message, kind)[0], kind, shape, names) for kind in _KINDS]
        return 0, columns, key, ops

    def _accepts(self, types: dict[str, Any], sql_types: Any, pk: list[str]) -> bool:
        return len(set(pk)) == len(pk)

    def _column(self, column: Any) -> tuple[str, int, int, str, Any]:
        """``(op, precision, scale, text, arg)`` of one column, from ``encode_value`` itself."""
        from cdc_smt.transforms.formats.dts_avro import encode_value
        from cdc_smt.transforms.types import Kind

        t = column.mysql
        k = t.kind
        samples: dict[Kind, Any] = {
            Kind.INT: 0, Kind.BIT: 0, Kind.DECIMAL: Decimal(0), Kind.FLOAT: 0.0, Kind.STRING: "", Kind.JSON: "",
            Kind.BYTES: b"",
        }  # fmt: skip
        if k in samples:
            branch, fields = encode_value(t, samples[k], self.timezone)
            branch = branch.rsplit(".", 1)[1]
            p, s = fields.get("precision", 0), fields.get("scale", 0)
            if branch == "Integer":
                return ("bit1" if k is Kind.BIT and t.length in (None, 1) else "int"), p, 0, "", None
            if branch == "Decimal":
                return ("decimal", p, s, "", None) if s <= 30 else ("python", 0, 0, "", None)
            if branch == "Float":
                return ("float" if t.is_single_float else "double"), p, s, "", None
            if branch == "Character":
                return ("binary" if fields["charset"] == "binary" else "character"), 0, 0, fields["charset"], None
            if branch == "BinaryObject":
                return ("blob" if fields["type"] == "BLOB" else "binary_object"), 0, 0, fields["type"], None
            if branch == "TextObject":
                return "text_object", 0, 0, fields["type"], None
        if k is Kind.ENUM or k is Kind.SET:
            _, fields = encode_value(t, "", self.timezone)
            if not t.values:
                return "text_object", 0, 0, fields["type"], None
            if k is Kind.ENUM:
                return "enum", 0, 0, fields["type"], _enum_table(column, self.decoder.form)
            return "set", 0, 0, fields["type"], list(t.values)
        if k is Kind.TIMESTAMP:  # zones the two zone databases agree on (see native.zones_agree)
            return (
                ("timestamp", 0, 0, self.timezone, None) if zones_agree(self.timezone) else ("python", 0, 0, "", None)
            )
        op = {Kind.YEAR: "year", Kind.DATE: "date", Kind.DATETIME: "datetime", Kind.TIME: "time"}.get(k, "python")
        return op, 0, 0, "", None

    def _key_kind(self, column: Any) -> str:
        """How a key column's typed value is written: ``int``, ``text`` (its text) or ``decimal``
        (a DECIMAL's plain text, ``format(Decimal(text), "f")``; :func:`_plain_decimals`); other
        kinds: Python."""
        from cdc_smt.transforms.types import Kind

        if column.mysql.kind is Kind.DECIMAL and _plain_decimals(self.form, column):
            return "decimal"
        return "int" if self._key_is_int(column) else "text"

    @staticmethod
    def _key_is_int(column: Any) -> bool:
        """Is a key column's typed value an int (else its text); other kinds: Python."""
        from cdc_smt.transforms.types import Kind

        k = column.mysql.kind
        if k is Kind.INT:
            return True
        if k is Kind.STRING or k is Kind.JSON or ((k is Kind.ENUM or k is Kind.SET) and not column.mysql.values):
            return False
        raise _Unsupported("key")

    def _op_dts(self, decoded: Any, kind: str, shape: _Shape, names: list[str]) -> tuple[int, int | None, bytes | None]:
        """One op's entry from its probe event (every value null): ``(0, None, None)``
        dropped, ``(2, variant, middle)`` written."""
        event, edits = self._follow(decoded, shape.selected)
        if event is None:
            return 0, None, None
        encoder = self.encoder
        counter = encoder._next_id
        try:  # the probe must not use up record ids
            obj = encoder._encode_record(event)
            encoder._next_id = counter
            records = encoder.encode(event)
        finally:
            encoder._next_id = counter
        (first,) = records
        if obj is None or [f["name"] for f in obj["fields"]] != names or first.value is None:
            raise _Unsupported("fields")
        middle = _middle(obj)
        null_image = _long(2) + _long(len(names)) + b"\0" * len(names) + b"\0"
        images = {"INSERT": b"\0" + null_image, "INIT": b"\0" + null_image, "DELETE": null_image + b"\0"}
        expected = _long(0) + _long(counter + 1) + _long(0) + middle + images.get(kind, null_image * 2) + _long(0)
        if obj["version"] != 0 or first.value != expected:
            raise _Unsupported("record")  # not what the writer assembles
        return 2, self._variant(first.topic, edits), middle


class _ShapedDtsTables(TextShaped, _DtsOutTables):
    """canal-json -> dts-avro under row-changing transforms: the DTS writer's table of the
    transformed schema, fed the re-shaped rows (``row_shape.rs``); each op's record parts from
    ``sourcePosition`` to ``fields`` are those of its transformed probe, whose ``fields`` must
    name the transformed schema's columns. The DTS encoder types the event before it keys the
    record: the key's integers are numbers."""

    writer_tables = _DtsOutTables
    keys_typed = True
    counter = "_next_id"

    def _op_entry(self, done: Any, edits: Any) -> tuple[Any, ...]:
        obj = self._kept(lambda: self.encoder._encode_record(done))
        records = self._encode_probe(done)
        names = [c.name for c in done.schema.columns]
        if obj is None or [f["name"] for f in obj["fields"]] != names or len(records) != 1:
            raise _Unsupported("fields")
        if records[0].value is None or obj["version"] != 0:
            raise _Unsupported("record")
        return 2, self._variant(records[0].topic, edits), _middle(obj)

    @staticmethod
    def _with_ops(spec: Any, ops: list[tuple[Any, ...]]) -> Any:
        """The DTS spec's op entries are its fourth item, each with its record parts."""
        return (*spec[:3], [(*op, None) if len(op) == 2 else op for op in ops])
