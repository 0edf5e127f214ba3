"""The native planner's TDSQL writer: canal-json, ticdc-canal-json or debezium-json ->
tdsql-binlog-json.

The plan (``native/src/tdsql_out.rs``) writes what ``TdsqlBinlogJson.encode_message`` writes
for an event of another format: one binlog row event per row, its ``where``/``field``
arrays in the event's schema's column order, each value ``sqltext.to_literal`` of the
typed value. ``to_literal`` renders MySQL's own text (``to_text``, what the CloudCanal
writer writes), so the tables are the CloudCanal writer's (``native_vendor_out``: the
conversions, the key from the typed primary-key values, the ops and their probes) plus
each column's literal form (:func:`literal_form`) and the ``eventtype`` of each op in the
encoder's ``row_event_version``; each op's probe must be what the writer writes for it.
From canal-json the row-changing transforms too: the rows re-shaped in Canal text
(``native_rowxf.TextShaped``, ``row_shape.rs``), written by the table of the transformed
schema, the key the typed values (the encoder's key whether or not a transform typed the row).

The column order is the event's schema's (the Canal reader's ``mysqlType``, the Debezium
reader's row): the encoder's own catalog is read only for events without a schema, which
these readers never give (a layout whose probe has none is Python's). A chain given a
schema catalog gets no plan (``native.plan_for``).
"""

from __future__ import annotations

from typing import Any

from cdc_smt.transforms import native
from cdc_smt.transforms.native import CANAL_TO_TDSQL, DEBEZIUM_TO_TDSQL, TICDC_TO_TDSQL, NativePlan
from cdc_smt.transforms.native_debezium import PYTHON_HEAD
from cdc_smt.transforms.native_rowxf import TextShaped, changes_rows, shaped_plan
from cdc_smt.transforms.native_vendor_out import DebeziumCloudCanalTables, _CloudCanalOutTables

#: ``eventtypestr`` of each Canal op (a snapshot read is an insert).
_KINDS = {"INSERT": "insert", "UPDATE": "update", "DELETE": "delete", "INIT": "insert"}


def tdsql_plan(chain: Any) -> NativePlan | None:
    """The plan for a Canal (or TiCDC) decoder and a tdsql-binlog-json encoder, or ``None``;
    from canal-json the row-changing transforms too (``native_rowxf``)."""
    if changes_rows(chain.transforms):
        return shaped_plan(chain, _ShapedTdsqlTables, (CANAL_TO_TDSQL, None), encoder=_ENCODER)
    return native.row_keeping_plan(chain, _TdsqlOutTables, (CANAL_TO_TDSQL, TICDC_TO_TDSQL), encoder=_ENCODER)


def debezium_tdsql_plan(chain: Any, extension: Any) -> NativePlan | None:
    """debezium-json -> tdsql-binlog-json through the Debezium reader, as -> cloudcanal-json."""
    if not all(native._supported(t) and native._keeps_rows(t) for t in chain.transforms):
        return None
    from cdc_smt.transforms.native_debezium import reader_plan

    tables = DebeziumTdsqlTables(chain.decoder, chain.encoder, list(chain.transforms))
    return reader_plan(DEBEZIUM_TO_TDSQL, tables, chain, extension, encoder=_ENCODER)


_ENCODER = "tdsql-binlog-json"


def literal_form(type_text: str) -> str:
    """How ``to_literal`` writes a column's MySQL text: ``bare`` (numbers), ``bits`` (BIT's
    ``b'…'``), ``hex`` (binary's ``X'…'``) or ``quoted`` (``quote_string``)."""
    from cdc_smt.transforms.types import Kind, parse_type

    k = parse_type(type_text).kind
    if k is Kind.INT or k is Kind.YEAR or k is Kind.DECIMAL or k is Kind.FLOAT:
        return "bare"
    if k is Kind.BIT:
        return "bits"
    if k is Kind.BYTES or k is Kind.GEOMETRY:
        return "hex"
    return "quoted"


def _literal(text: str | None, form: str) -> str:
    """The SQL literal of a probe's MySQL text in ``form`` (``to_literal``'s rendering)."""
    from cdc_smt.transforms.sqltext import quote_string

    if text is None:
        return "NULL"
    if form == "bare":
        return text
    if form == "bits":
        return "b'" + format(int(text), "b") + "'"
    if form == "hex":
        return "X'" + text.encode("latin-1").hex().upper() + "'"
    return quote_string(text)


class _TdsqlMessages:
    """The TDSQL event in place of CloudCanal's message (the tables are CloudCanal's)."""

    encoder: Any

    def _codes(self) -> list[int]:
        """``eventtype`` of each op (c, u, d, r) in the encoder's ``row_event_version``."""
        from cdc_smt.transforms.formats.tdsql_binlog_json import _ROW_CODES

        codes = _ROW_CODES[self.encoder.opts.row_event_version]
        return [codes[_KINDS[kind]] for kind in ("INSERT", "UPDATE", "DELETE", "INIT")]

    def _expected(self, message: dict[str, Any], kind: str, columns: list[Any], pk: list[str]) -> dict[str, Any]:
        """What the writer writes for a probe ``message`` (one row of MySQL texts, ``es`` 0)."""
        row = message["data"][0]
        image = [_literal(row[c[0]], literal_form(c[3])) for c in columns]
        return {
            "logtype": "mysqlbinlog",
            "eventtype": self._codes()[list(_KINDS).index(kind)],
            "eventtypestr": _KINDS[kind],
            "db": message["database"] or "",
            "table": message["table"] or "",
            "begintime": 0,
            "gtid": None,
            "where": image if kind in ("UPDATE", "DELETE") else [],
            "field": [] if kind == "DELETE" else image,
        }

    def _tdsql_spec(self, spec: Any) -> Any:
        """The CloudCanal writer's ``spec`` with each column's literal form and the ops' codes."""
        if spec is None or spec == PYTHON_HEAD:
            return spec
        return spec, [literal_form(c[3]) for c in spec[0]], self._codes()


class _TdsqlOutTables(_TdsqlMessages, _CloudCanalOutTables):
    """Compiles one Canal table layout for the TDSQL writer (CloudCanal's tables)."""

    def _compile(self, message: dict[str, Any], event: Any, pk: list[str]) -> Any:
        if event.schema is None:
            return None  # the encoder's catalog would order the row: Python's
        return self._tdsql_spec(super()._compile(message, event, pk))


class _ShapedTdsqlTables(TextShaped, _TdsqlOutTables):
    """canal-json -> tdsql-binlog-json under row-changing transforms: the TDSQL writer's table
    of the transformed schema, fed the re-shaped rows (``row_shape.rs``)."""

    writer_tables = _TdsqlOutTables
    #: The TDSQL encoder keys by the typed values whether or not a transform typed the row.
    keys_typed = True

    @staticmethod
    def _with_ops(spec: Any, ops: list[tuple[Any, ...]]) -> Any:
        """``(text, literals, codes)``: the op entries go in the CloudCanal writer's ``text`` spec."""
        text, literals, codes = spec
        return TextShaped._with_ops(text, ops), literals, codes

    def _check_shaped(self, written: dict[str, Any], final: Any) -> None:
        fields = {"db": final.source.database or "", "table": final.source.table or ""}
        if {k: written.get(k) for k in fields} != fields:
            raise native._Unsupported("message")  # not the shaped message's fields


class DebeziumTdsqlTables(_TdsqlMessages, DebeziumCloudCanalTables):
    """Compiles one Debezium layout (columns typed by their JSON kinds, or by the schema part)
    for the TDSQL writer (CloudCanal's tables)."""

    def _writer_spec(self, spec: Any) -> Any:
        return self._tdsql_spec(spec)
