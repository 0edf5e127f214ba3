"""The native planner's DTS Avro reader: dts-avro -> debezium-json, -> canal-json and -> dts-avro.

Without a schema catalog the DTS decoder types a record's columns from their MySQL type
codes, refined by the values (``dts_avro.infer_column_type``), so the native reader
(``native/src/dts_avro_in.rs``) keys its tables by the record's layout: source type,
database, table, the key names (``tags["pk_uk_info"]``) and each column's name, type
code and inferred type text. Per layout :class:`DtsDebeziumTables` writes one probe
record per op with the DTS *encoder's* record writer (a value of each column where the
type depends on one: an unsigned integer, a binary value, a decimal's precision and
scale), decodes it with the chain's own decoder, checks that the types it infers are
the layout's, and compiles it as the Canal reader's plans compile theirs: each column's
conversion from the Canal text the reader hands over to its Connect representation, the
transforms followed column by column, the source block and schemas.

To canal-json (:class:`DtsCanalTables`) each value is re-written as Canal text (the
Canal writer's path from TiCDC's dialect), checked against what the Canal encoder writes
for the probe's event with its values nulled; the key is what Python's Canal encoder
writes for DTS events (the key columns' union values as read, written by the reader).
A DTS record has no processing time: Python's Canal encoder writes the current time as
``ts``, and so does the native writer.

DTS has no snapshot reads (``INIT`` records carry no row: Python's). TIMESTAMPs reach
the writer as their UTC wall clock, so outside ``source_timezone: UTC`` their columns
are converted in Python.
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc_smt.transforms.model import Record
from cdc_smt.transforms.native import (
    DTS_TO_CANAL,
    DTS_TO_DEBEZIUM,
    DTS_TO_DTS,
    NativePlan,
    _CanalOutTables,
    _CanalTables,
    _Unsupported,
    canal_debezium_plan,
    row_keeping_plan,
)

#: ``Source.sourceType``'s symbols, by index (``schemas/dts-avro.avsc``).
_SOURCE_TYPES = (
    "MySQL", "Oracle", "SQLServer", "PostgreSQL", "MongoDB", "Redis", "DB2", "PPAS", "DRDS", "HBASE", "HDFS", "FILE",
    "OTHER",
)  # fmt: skip

#: A layout as the reader passes it: source type, database, table, key, (name, code, type) per column.
Layout = tuple[int, str, str, list[str], list[tuple[str, int, str]]]


def _sample(type_text: str) -> Any:
    """A DTS value from which the decoder infers ``type_text`` rather than its code's
    default type (``None``: the default is it)."""
    from cdc_smt.transforms.formats.dts_avro import _NS, _SIGNED_MAX

    base, _, unsigned = type_text.partition(" ")
    if unsigned == "unsigned" and base in _SIGNED_MAX:
        return (_NS + "Integer", {"precision": 20, "value": str(_SIGNED_MAX[base] + 1)})
    if base in ("tinyblob", "mediumblob", "longblob", "blob"):
        return (_NS + "BinaryObject", {"type": "BLOB", "value": b""})
    if base.startswith(("varbinary", "binary")):
        return (_NS + "Character", {"charset": "binary", "value": b""})
    if base.startswith("decimal(") and base != "decimal(65,30)":
        precision, scale = base[len("decimal(") : -1].split(",")
        return (_NS + "Decimal", {"value": "0", "precision": int(precision), "scale": int(scale)})
    return None


def probe_record(layout: Layout, operation: str) -> bytes:
    """The layout's one-row probe record of ``operation`` (time 0), as the DTS encoder writes it."""
    from cdc_smt.transforms.formats.dts_avro import empty_record, escape_name, write_record

    source_type, database, table, pk, columns = layout
    values = [_sample(type_text) for _, _, type_text in columns]
    record = empty_record(operation, _SOURCE_TYPES[source_type])
    record.update(
        objectName=f"{escape_name(database)}.{escape_name(table)}",
        tags={"pk_uk_info": orjson.dumps({"PRIMARY": pk}).decode()} if pk else {},
        fields=[{"name": name, "dataTypeNumber": code} for name, code, _ in columns],
        beforeImages=values if operation != "INSERT" else None,
        afterImages=values if operation != "DELETE" else None,
        bornTimestamp=None,
    )
    return write_record(record)


class _DtsProbe(_CanalTables):
    """The Canal compilers over a DTS layout's probe records (``message["layout"]``)."""

    def compile(  # type: ignore[override]
        self, source_type: int, database: str, table: str, pk: list[str], columns: list[tuple[str, int, str]]
    ) -> Any:
        """The writer's spec for the layout (``None``: Python's)."""
        from cdc_smt.transforms.types import Kind

        names = [n for n, _, _ in columns]
        message = {
            "layout": (source_type, database, table, pk, columns),
            "data": [dict.fromkeys(names)],
            "database": database,
            "table": table,
            "mysqlType": {n: t for n, _, t in columns},
            "sqlType": None,
        }
        try:
            (event,) = self._decode(message, "INSERT")
            schema = event.schema
            if [(c.name, c.type) for c in schema.columns] != [(n, t) for n, _, t in columns] or list(event.pk) != pk:
                return None  # not what the reader read: Python's
            spec = self._compile(message, event, pk)
        except Exception:  # noqa: BLE001 - a layout Python rejects (or the plan cannot do) is Python's
            return None
        if spec is None or self.timezone == "UTC":
            return spec
        zoned = [c.mysql.kind is Kind.TIMESTAMP for c in schema.columns]  # handed over as UTC wall clocks
        return self._python_columns(spec, zoned)

    def _python_columns(self, spec: Any, columns: list[bool]) -> Any:
        """``spec`` with the flagged columns converted in Python."""
        raise NotImplementedError

    def _decode(self, message: dict[str, Any], kind: str) -> list[Any]:
        return self.decoder.decode(Record(value=probe_record(message["layout"], kind)))


class DtsDebeziumTables(_DtsProbe):
    """Compiles one DTS layout for the Debezium writer: the Canal reader's compiler
    (``_CanalTables``) over the layout's probe records."""

    def _python_columns(self, spec: Any, columns: list[bool]) -> Any:
        cols, *rest = spec
        return ([(c[0], "python", None, *c[3:]) if p else c for c, p in zip(cols, columns, strict=True)], *rest)

    def _op(self, message: dict[str, Any], kind: str, shape: Any, explicit: bool) -> tuple[int, Any]:
        if kind == "INIT":
            return 1, None  # DTS has no snapshot reads: never used
        return super()._op(message, kind, shape, explicit)


class DtsCanalTables(_DtsProbe, _CanalOutTables):
    """Compiles one DTS layout for the Canal writer (every value re-written as Canal
    text), checked against the Canal encoder's message for the probe's event with its
    values nulled (the type maps of an all-null row)."""

    @property
    def retext(self) -> bool:
        return True

    def _python_columns(self, spec: Any, columns: list[bool]) -> Any:
        names, pk, ops, texts = spec
        return names, pk, ops, [(t[0], "python", None, *t[3:]) if p else t for t, p in zip(texts, columns, strict=True)]

    def _decode(self, message: dict[str, Any], kind: str) -> list[Any]:
        events = super()._decode(message, kind)
        for event in events:
            event.before = None if event.before is None else dict.fromkeys(event.before)
            event.after = None if event.after is None else dict.fromkeys(event.after)
        return events

    def _op_canal(
        self, message: dict[str, Any], kind: str, shape: Any, texts: list[Any] | None
    ) -> tuple[int, int | None]:
        if kind == "INIT":
            return 1, None  # DTS has no snapshot reads: never used
        return super()._op_canal(message, kind, shape, texts)


class DtsSelfTables(_DtsProbe):
    """Compiles one DTS layout for the same-format re-write (``native/src/dts_avro_self.rs``):
    per op, whether the transforms drop the record or with which topic and header edits
    Python writes it back, checked on the layout's probe record: the Python path must write
    the probe record back byte for byte, under its own key (the writer copies what it read).
    Values pass through as read, so no zone or value check is needed."""

    #: The probe record's Kafka key (Python re-writes a DTS record under the key it came with).
    KEY = b"probe-key"

    def _python_columns(self, spec: Any, columns: list[bool]) -> Any:
        return spec  # the values are copied, never converted

    def _compile(self, message: dict[str, Any], event: Any, pk: list[str]) -> Any:
        shape = self._shape(event, python_on_missing=True)
        return [self._op_same(message["layout"], kind, shape.selected) for kind in ("INSERT", "UPDATE", "DELETE")] + [
            (1, None)  # DTS has no snapshot reads: never used
        ]

    def _op_same(self, layout: Layout, kind: str, selected: list[bool]) -> tuple[int, int | None]:
        """One op's entry: ``(0, None)`` dropped, ``(2, variant)`` written (else raises: Python's)."""
        probe = probe_record(layout, kind)
        record = Record(value=probe, key=self.KEY)
        (decoded,) = self.decoder.decode(record)
        decoded.record = record  # as the chain sets it
        event, edits = self._follow(decoded, selected)
        if event is None:
            return 0, None
        encoder = self.encoder
        counter = encoder._next_id
        try:
            (first,) = encoder.encode(event)
        finally:
            encoder._next_id = counter
        if first.value != probe or first.key != self.KEY or encoder._next_id != counter:
            raise _Unsupported("not written back as read")
        return 2, self._variant(first.topic, edits)


def dts_in_plan(chain: Any) -> NativePlan | None:
    """dts-avro -> debezium-json with the transforms the Canal plan runs, or -> canal-json
    (``batch: row``) or -> dts-avro with the transforms that keep rows as they are, or ``None``."""
    from cdc_smt.transforms.formats.canal_json import CanalJson
    from cdc_smt.transforms.formats.dts_avro import DtsAvro

    if type(chain.encoder) is DtsAvro:
        names = (DTS_TO_DTS, DTS_TO_DTS)
        return row_keeping_plan(chain, DtsSelfTables, names, encoder="dts-avro", reader="dts-avro", ids=chain.encoder)
    if type(chain.encoder) is CanalJson:
        if chain.encoder.batching:
            return None  # Python groups a transaction's rows
        names = (DTS_TO_CANAL, DTS_TO_CANAL)  # (no TiCDC dialect of DTS)
        return row_keeping_plan(chain, DtsCanalTables, names, encoder="canal-json", reader="dts-avro")
    return canal_debezium_plan(chain, DtsDebeziumTables, DTS_TO_DEBEZIUM, reader="dts-avro")


__all__ = ["DtsCanalTables", "DtsDebeziumTables", "DtsSelfTables", "dts_in_plan", "probe_record"]
