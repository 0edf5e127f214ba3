"""The native planner's vendor writers: canal-json, ticdc-canal-json or debezium-json ->
cloudcanal-json and -> ckafka-json.

The plan (``native/src/cloudcanal_out.rs``) writes what ``CloudCanalJson.encode_message``
writes for a Canal event: one message per row, each value MySQL's own text
(``types.to_text`` of the typed value: Canal's text through ``canal_text``'s conversions,
ENUM indexes and SET bitmasks as labels), ``dbValType`` and ``jdbcType`` of the row's
columns (the schema's type text and JDBC code), and the key from the typed primary-key
values. Only transforms that keep rows as they are (filter by table/op, route,
drop_tombstones, the header transforms) qualify; each op's probe checks that Python writes
the message's table, row, type maps and key as the writer does.

The CKafka writer (``native/src/ckafka_out.rs``) writes what ``CKafkaJson._encode_dml``
writes, one format-1 message per row, on the CloudCanal writer's tables: both encoders
render values through ``text_images`` (MySQL's own text) and key the record by the typed
primary-key values; only the envelope differs (:func:`ckafka_expected`), and ``TIME`` is
the event's second in the encoder's ``source_timezone`` (zones whose databases agree).

From Debezium, the reader (``native/src/debezium_in.rs``) hands the writer each event as a
one-row Canal message of texts, its layouts compiled from Debezium probes
(:class:`DebeziumCloudCanalTables`, as ``native_debezium``'s writers are).
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc_smt.transforms import native
from cdc_smt.transforms.native import (
    CANAL_TO_CKAFKA,
    CANAL_TO_CLOUDCANAL,
    DEBEZIUM_TO_CKAFKA,
    DEBEZIUM_TO_CLOUDCANAL,
    TICDC_TO_CKAFKA,
    TICDC_TO_CLOUDCANAL,
    NativePlan,
    _CanalTables,
    _enum_table,
    _keeps_rows,
    _supported,
    zones_agree,
)
from cdc_smt.transforms.native_debezium import _OPS, _SAMPLES, PYTHON_HEAD, _Layouts, _Probe

_KINDS = ("INSERT", "UPDATE", "DELETE", "INIT")
#: CloudCanal's ``action`` of each Canal op (a snapshot read is an insert).
_ACTIONS = {"INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE", "INIT": "INSERT"}


def cloudcanal_plan(chain: Any) -> NativePlan | None:
    """The plan for a Canal (or TiCDC) decoder and a cloudcanal-json encoder, or ``None``."""
    names = (CANAL_TO_CLOUDCANAL, TICDC_TO_CLOUDCANAL)
    return native.row_keeping_plan(chain, _CloudCanalOutTables, names, encoder="cloudcanal-json")


def ckafka_plan(chain: Any) -> NativePlan | None:
    """The plan for a Canal (or TiCDC) decoder and a ckafka-json encoder, or ``None``."""
    names = (CANAL_TO_CKAFKA, TICDC_TO_CKAFKA)
    return native.row_keeping_plan(chain, _CKafkaOutTables, names, encoder="ckafka-json", zone=_zone(chain.encoder))


def _zone(encoder: Any) -> str | None:
    """The encoder's ``source_timezone`` where the plan converts in it (else ``None``: the
    records are Python's)."""
    zone: str = encoder.opts.source_timezone
    return zone if zones_agree(zone) else None


def mysql_text(column: Any, zoned: bool, form: Any) -> tuple[str, Any]:
    """How the writer turns one column's Canal text into MySQL's (``to_text`` of the value
    ``form`` reads; ``python``: a non-null value sends the record to Python)."""
    from cdc_smt.transforms.types import Kind

    t = column.mysql
    k = t.kind
    if k is Kind.STRING or k is Kind.JSON or ((k is Kind.ENUM or k is Kind.SET) and not t.values):
        return "same", None
    if k is Kind.ENUM:
        return "enum", _enum_table(column, form)
    if k is Kind.SET:
        return "set", list(t.values)
    if k is Kind.INT:
        return "int", None
    if k is Kind.YEAR:
        return "year", None
    if k is Kind.BIT and t.length is not None:
        return "bits", t.length
    if k is Kind.DECIMAL and t.scale is not None:
        return "decimal", t.scale
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


def key_value(column: Any, form: Any) -> tuple[str, Any]:
    """How the writer renders one key column's typed value from its text (``python``: a
    non-null value sends the record to Python)."""
    from cdc_smt.transforms.types import Kind

    t = column.mysql
    k = t.kind
    if k is Kind.INT or k is Kind.YEAR:
        return "int", None
    if k is Kind.STRING or k is Kind.JSON or (k is Kind.ENUM and not t.values):
        return "str", None
    if k is Kind.ENUM:
        return "enum", _enum_table(column, form)
    return "python", None


class _CloudCanalOutTables(_CanalTables):
    """Compiles one Canal table layout for the CloudCanal writer: per column its conversion,
    type text and JDBC code, the key, and per op whether the transforms drop the rows or keep
    them (with which topic and header edits)."""

    def _accepts(self, types: dict[str, Any], sql_types: Any, pk: list[str]) -> bool:
        return len(set(pk)) == len(pk)

    def _compile(self, message: dict[str, Any], event: Any, pk: list[str]) -> Any:
        schema = event.schema
        if [c.name for c in schema.columns] != list(message["mysqlType"]):
            return None
        zoned = self.timezone == self.encoder.opts.source_timezone
        form = self.form
        columns = [(c.name, *mysql_text(c, zoned, form), c.type, c.mysql.jdbc_type()) for c in schema.columns]
        key = [(name, *key_value(schema.by_name[name], form)) for name in event.pk]
        selected = [t.selects(event) for t in self.transforms]  # table predicates: the INSERT probe's
        ops = [self._op_cloudcanal(message, kind, selected, columns, list(event.pk)) for kind in _KINDS]
        return columns, key, ops

    def _op_cloudcanal(
        self, message: dict[str, Any], kind: str, selected: list[bool], columns: list[Any], pk: list[str]
    ) -> tuple[int, int | None]:
        """One op's entry: ``(0, None)`` dropped, ``(2, variant)`` written."""
        encoded = self._encode_op(message, kind, selected)
        if encoded is None:
            return 0, None
        event, value, topic, edits = encoded
        (first,) = self.encoder.encode(event)
        expected_key = orjson.dumps(dict.fromkeys(pk)) if pk else None
        check_written(value, first.key, self._expected(message, kind, columns, pk), expected_key)
        return 2, self._variant(topic, edits)

    def _expected(self, message: dict[str, Any], kind: str, columns: list[Any], pk: list[str]) -> dict[str, Any]:
        return expected(message, kind, columns, pk)


class _CKafkaMessages:
    """The CKafka envelope in place of CloudCanal's (the tables are the same)."""

    encoder: Any

    def _expected(self, message: dict[str, Any], kind: str, columns: list[Any], pk: list[str]) -> dict[str, Any]:
        return ckafka_expected(message, kind, self.encoder.opts.source_timezone)


class _CKafkaOutTables(_CKafkaMessages, _CloudCanalOutTables):
    """Compiles one Canal table layout for the CKafka writer (CloudCanal's tables)."""


def expected(message: dict[str, Any], kind: str, columns: list[Any], pk: list[str]) -> dict[str, Any]:
    """What the writer writes for a probe ``message`` (one row of texts, ``es`` and ``ts`` 0)."""
    row = message["data"][0]
    database = message["database"] or None
    return {
        "action": _ACTIONS[kind],
        "before": [row] if kind == "UPDATE" else [],
        "bid": 0,
        "data": [row],
        "db": database,
        "dbValType": {c[0]: c[3] for c in columns if c[0] in row},
        "isDdl": False,
        "entryType": "ROWDATA",
        "execTs": 0,
        "jdbcType": {c[0]: c[4] for c in columns if c[0] in row},
        "pks": pk,
        "schema": message.get("schema", database),
        "sendTs": 0,
        "sql": "",
        "table": message["table"] or None,
    }


#: CKafka's ``TYPE`` of each Canal op (a snapshot read is an insert).
_CKAFKA_TYPES = {"INSERT": "I", "UPDATE": "U", "DELETE": "D", "INIT": "I"}


def ckafka_expected(message: dict[str, Any], kind: str, zone: str) -> dict[str, Any]:
    """What the CKafka writer writes for a probe ``message`` (one row, ``es`` and ``ts`` 0,
    no binlog position); ``zone``: the encoder's ``source_timezone``."""
    from cdc_smt.transforms.formats.ckafka_json import _format_time

    row = message["data"][0]
    return {
        "BINLOG_NAME": None,
        "BINLOG_POS": None,
        "DATABASE": message["database"] or None,
        "EVENT_SERVER_ID": None,
        "GLOBAL_ID": None,
        "GROUP_ID": None,
        "NEW_VALUES": None if kind == "DELETE" else row,
        "OLD_VALUES": row if kind in ("UPDATE", "DELETE") else None,
        "TABLE": message["table"] or None,
        "TIME": _format_time(0, zone),
        "TYPE": _CKAFKA_TYPES[kind],
    }


def check_written(value: bytes | None, key: bytes | None, message: dict[str, Any], record_key: bytes | None) -> None:
    """Python wrote the probe as the writer writes it (else the layout is Python's)."""
    if value != orjson.dumps(message) or key != record_key:
        raise native._Unsupported("message")  # not what the writer writes


def debezium_cloudcanal_plan(chain: Any, extension: Any) -> NativePlan | None:
    """debezium-json -> cloudcanal-json through the Debezium reader (``debezium_in.rs``),
    with the transforms that keep rows as they are, or ``None``; ``extension`` is the
    native module."""
    if not all(_supported(t) and _keeps_rows(t) for t in chain.transforms):
        return None
    from cdc_smt.transforms.native_debezium import reader_plan

    tables = DebeziumCloudCanalTables(chain.decoder, chain.encoder, list(chain.transforms))
    return reader_plan(DEBEZIUM_TO_CLOUDCANAL, tables, chain, extension, encoder="cloudcanal-json")


def debezium_ckafka_plan(chain: Any, extension: Any) -> NativePlan | None:
    """debezium-json -> ckafka-json through the Debezium reader, as -> cloudcanal-json."""
    if not all(_supported(t) and _keeps_rows(t) for t in chain.transforms):
        return None
    from cdc_smt.transforms.native_debezium import reader_plan

    tables = DebeziumCKafkaTables(chain.decoder, chain.encoder, list(chain.transforms))
    return reader_plan(DEBEZIUM_TO_CKAFKA, tables, chain, extension, encoder="ckafka-json", zone=_zone(chain.encoder))


class DebeziumCloudCanalTables(_Layouts):
    """Compiles one Debezium layout (columns typed by their JSON kinds) for the CloudCanal
    writer; each op's probe must be what the writer writes for it."""

    def _compile_probe(self, probe: _Probe, pk: list[str], columns: list[tuple[str, str]]) -> Any:
        if probe.head is not None:
            return PYTHON_HEAD  # values in the schema's representations: Python converts them
        schema_name = probe.source.get("schema") or None  # CloudCanal's ``schema``: the source's, else the database
        decoded, shape = self._probe_shape(probe, pk)
        if len(set(pk)) != len(pk):
            return None
        schema = decoded.schema
        form = self.form
        specs = [(c.name, *mysql_text(c, True, form), c.type, c.mysql.jdbc_type()) for c in schema.columns]
        key = [(name, *key_value(schema.by_name[name], form)) for name in decoded.pk]
        message = {
            "database": probe.source["db"],
            "table": probe.source["table"],
            "data": [{name: _SAMPLES[kind][1] for name, kind in columns}],
        }
        if schema_name is not None:
            message["schema"] = schema_name
        ops = [self._op_layout(probe, message, code, kind, shape, specs) for code, kind in _OPS]
        return specs, key, ops, schema_name

    def _op_layout(
        self, probe: _Probe, message: dict[str, Any], code: str, kind: str, shape: Any, specs: list[Any]
    ) -> tuple[int, int | None]:
        """One op's entry: ``(0, None)`` dropped, ``(2, variant)`` written."""
        event, edits = self._follow(self._decode_probe(probe, code), shape.selected)
        if event is None:
            return 0, None
        (first,) = self.encoder.encode(event)
        written = self._expected(message, kind, specs, list(event.pk))
        check_written(first.value, first.key, written, probe.record_key(event.pk))
        return 2, self._variant(first.topic, edits)

    def _expected(self, message: dict[str, Any], kind: str, columns: list[Any], pk: list[str]) -> dict[str, Any]:
        return expected(message, kind, columns, pk)


class DebeziumCKafkaTables(_CKafkaMessages, DebeziumCloudCanalTables):
    """Compiles one Debezium layout for the CKafka writer (the probe's source has no
    binlog position: the writer writes each event's)."""
