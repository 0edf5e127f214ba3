"""The native planner's vendor writers: canal-json, ticdc-canal-json or debezium-json ->
cloudcanal-json, -> ckafka-json and -> dataworks-json.

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

The DataWorks writer (``native/src/dataworks_out.rs``) writes what
``DataWorksJson._encode_rows`` writes, on the same tables with DataWorks' conversions
(:func:`dataworks_value`): one message per row, an UPDATE as ``UPDATE_BEFOR`` and
``UPDATE_AFTER`` sharing one ``sequenceId`` (or one ``UPDATE_AFTER``, ``update_as: single``).
``sequenceId`` numbers rows with the encoder's counter (``_next_seq``), shared as the DTS
writer shares its record ids: :class:`~transforms.native_dts.DtsNativePlan` hands Python
the rest of a batch from the first record it takes, so the numbers stay Python's.

From Debezium, the reader (``native/src/debezium_in.rs``) hands the writer each event as a
one-row Canal message of texts, its layouts compiled from Debezium probes
(:class:`DebeziumCloudCanalTables`, as ``native_debezium``'s writers are). Under the schema
part the columns are the schema's, each value read from its Connect representation into the
Canal text the writer's conversion reads, as for the Maxwell writer (:func:`connect_columns`);
ENUM and SET labels are MySQL's text as Debezium wrote it, copied.
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc_smt.transforms import native
from cdc_smt.transforms.native import (
    CANAL_TO_CKAFKA,
    CANAL_TO_CLOUDCANAL,
    CANAL_TO_DATAWORKS,
    DEBEZIUM_TO_CKAFKA,
    DEBEZIUM_TO_CLOUDCANAL,
    DEBEZIUM_TO_DATAWORKS,
    TICDC_TO_CKAFKA,
    TICDC_TO_CLOUDCANAL,
    TICDC_TO_DATAWORKS,
    NativePlan,
    _CanalTables,
    _enum_table,
    _keeps_rows,
    _supported,
    zones_agree,
)
from cdc_smt.transforms.native_debezium import (
    _OPS,
    _SAMPLES,
    PYTHON_HEAD,
    _Layouts,
    _Probe,
    _with_reads,
    connect_columns,
)
from cdc_smt.transforms.native_rowxf import TextShaped, _plain_decimals, changes_rows, shaped_plan

_KINDS = ("INSERT", "UPDATE", "DELETE", "INIT")
#: CloudCanal's ``action`` of each Canal op (a snapshot read is an insert).
_ACTIONS = {"INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE", "INIT": "INSERT"}


def cloudcanal_plan(chain: Any) -> NativePlan | None:
    """The plan for a Canal (or TiCDC) decoder and a cloudcanal-json encoder, or ``None``;
    the row-changing transforms on rows re-shaped in Canal text (``native_rowxf``)."""
    names = (CANAL_TO_CLOUDCANAL, TICDC_TO_CLOUDCANAL)
    if changes_rows(chain.transforms):
        return shaped_plan(chain, _ShapedCloudCanalTables, names, encoder="cloudcanal-json")
    return native.row_keeping_plan(chain, _CloudCanalOutTables, names, encoder="cloudcanal-json")


def ckafka_plan(chain: Any) -> NativePlan | None:
    """The plan for a Canal (or TiCDC) decoder and a ckafka-json encoder, or ``None``;
    the row-changing transforms on rows re-shaped in Canal text (``native_rowxf``)."""
    names = (CANAL_TO_CKAFKA, TICDC_TO_CKAFKA)
    tables = _ShapedCKafkaTables if changes_rows(chain.transforms) else _CKafkaOutTables
    plan = shaped_plan if tables is _ShapedCKafkaTables else native.row_keeping_plan
    return plan(chain, tables, names, encoder="ckafka-json", zone=_zone(chain.encoder))


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
    if k is Kind.DECIMAL and _plain_decimals(form, column):
        return "decimal", None  # format(Decimal(text), "f"): the plain texts as they are
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


def dataworks_plan(chain: Any) -> NativePlan | None:
    """The plan for a Canal (or TiCDC) decoder and a dataworks-json encoder, or ``None``."""
    from cdc_smt.transforms.native_dts import DtsNativePlan

    encoder = chain.encoder
    shaped = changes_rows(chain.transforms)
    return (shaped_plan if shaped else native.row_keeping_plan)(
        chain,
        _ShapedDataWorksTables if shaped else _DataWorksOutTables,
        (CANAL_TO_DATAWORKS, TICDC_TO_DATAWORKS),
        plan_class=DtsNativePlan,
        encoder="dataworks-json",
        ids=encoder,
        single_updates=encoder.opts.update_as == "single",
    )


def debezium_dataworks_plan(chain: Any, extension: Any) -> NativePlan | None:
    """debezium-json -> dataworks-json through the Debezium reader, as -> cloudcanal-json, its
    ``sequenceId`` numbered as from Canal (:func:`dataworks_plan`)."""
    if not all(_supported(t) and _keeps_rows(t) for t in chain.transforms):
        return None
    from cdc_smt.transforms.native_debezium import reader_plan
    from cdc_smt.transforms.native_dts import DtsNativePlan

    encoder = chain.encoder
    tables = DebeziumDataWorksTables(chain.decoder, encoder, list(chain.transforms))
    plan = reader_plan(
        DEBEZIUM_TO_DATAWORKS,
        tables,
        chain,
        extension,
        encoder="dataworks-json",
        ids=encoder,
        single_updates=encoder.opts.update_as == "single",
    )
    return DtsNativePlan(plan.name, plan.plan, plan.variants)


def dataworks_value(column: Any, zone: str, event_zone: str, form: Any) -> tuple[str, Any]:
    """How the writer turns one column's Canal text into ``DataWorksJson._value`` of the typed
    value (``python``: a non-null value sends the record to Python); DATE and DATETIME are
    epoch ms of the wall clock in the encoder's ``zone``, TIMESTAMP in the event's."""
    from cdc_smt.transforms.types import Kind

    t = column.mysql
    k = t.kind
    if k is Kind.INT or k is Kind.YEAR:
        return "json_int", None
    if k is Kind.FLOAT:
        return ("json_float32" if t.is_single_float else "json_double"), None
    if k is Kind.BYTES:
        return "json_bytes", None
    if k is Kind.BIT and t.length is not None:
        return ("json_bit1" if t.length == 1 else "json_bits"), None
    if k is Kind.DATE or k is Kind.DATETIME or k is Kind.TIMESTAMP:
        wall_zone = event_zone if k is Kind.TIMESTAMP else zone
        if not zones_agree(wall_zone):
            return "python", None
        return ("epoch_ms_date" if k is Kind.DATE else "epoch_ms"), wall_zone
    if k is Kind.DECIMAL or k is Kind.TIME or k is Kind.STRING or k is Kind.JSON or k is Kind.ENUM or k is Kind.SET:
        return mysql_text(column, True, form)  # MySQL's text: to_text of the typed value
    return "python", None  # GEOMETRY, BIT without a length


class _DataWorksOutTables(_CloudCanalOutTables):
    """Compiles one Canal table layout for the DataWorks writer: per column its conversion
    and DataWorks type, the key (the raw key texts), and per op whether the transforms drop
    the rows or keep them; each op's probe must be what the writer writes for it."""

    def _compile(self, message: dict[str, Any], event: Any, pk: list[str]) -> Any:
        from cdc_smt.transforms.formats.dataworks_json import dataworks_type

        schema = event.schema
        if [c.name for c in schema.columns] != list(message["mysqlType"]):
            return None
        zone = self.encoder.opts.source_timezone
        columns = [
            (c.name, *dataworks_value(c, zone, self.timezone, self.form), dataworks_type(c.mysql), 0)
            for c in schema.columns
        ]
        key = [(name, "str", None) for name in event.pk]
        selected = [t.selects(event) for t in self.transforms]
        ops = [self._op_dataworks(message, kind, selected, columns, list(event.pk)) for kind in _KINDS]
        return columns, key, ops

    def _op_dataworks(
        self, message: dict[str, Any], kind: str, selected: list[bool], columns: list[Any], pk: list[str]
    ) -> tuple[int, int | None]:
        """One op's entry: ``(0, None)`` dropped, ``(2, variant)`` written."""
        (decoded,) = self._decode(message, kind)
        event, edits = self._follow(decoded, selected)
        return check_dataworks(self, event, edits, message, kind, columns, pk)


def check_dataworks(
    tables: Any,
    event: Any,
    edits: Any,
    message: dict[str, Any],
    kind: str,
    columns: list[Any],
    pk: list[str],
    key: bytes | None = None,
) -> tuple[int, int | None]:
    """One op's entry from its probe ``event`` after the transforms (``None``: dropped): what
    Python writes must be what the DataWorks writer writes for ``message`` (its ``data``: the
    row's written values), with ``key`` (else the null key) on every record."""
    if event is None:
        return 0, None
    encoder = tables.encoder
    counter = encoder._next_seq
    try:  # the probe must not use up sequence numbers
        records = encoder.encode(event)
    finally:
        encoder._next_seq = counter
    split = encoder.opts.update_as != "single"
    written = dataworks_expected(message, kind, columns, pk, (counter + 1) % 1_000_000, split)
    if key is None and pk:
        key = orjson.dumps(dict.fromkeys(pk))
    if [r.value for r in records] != [orjson.dumps(m) for m in written] or any(r.key != key for r in records):
        raise native._Unsupported("message")  # not what the writer writes
    if len({r.topic for r in records}) != 1:
        raise native._Unsupported("topic")
    return 2, tables._variant(records[0].topic, edits)


def dataworks_expected(
    message: dict[str, Any], kind: str, columns: list[Any], pk: list[str], seq: int, split: bool
) -> list[dict[str, Any]]:
    """What the DataWorks writer writes for a probe ``message`` (one row, ``es`` and ``ts`` 0),
    its ``sequenceId`` numbered ``seq``."""
    row = message["data"][0]
    source = {"dbType": "MySQL"}
    if message["database"]:
        source["dbName"] = message["database"]
    if message["table"]:
        source["tableName"] = message["table"]
    schema = {"dataColumn": [{"name": c[0], "type": c[3]} for c in columns], "primaryKey": pk or None, "source": source}

    def one(code: str, before: Any, after: Any) -> dict[str, Any]:
        payload = {
            "before": None if before is None else {"dataColumn": before},
            "after": None if after is None else {"dataColumn": after},
            "sequenceId": f"0{seq:06d}",
            "timestamp": {"eventTime": 0, "systemTime": 0, "checkpointTime": 0},
            "op": code,
            "ddl": None,
        }
        return {"schema": schema, "payload": payload, "version": "0.0.1"}

    if kind == "UPDATE":
        return (
            [one("UPDATE_BEFOR", row, None), one("UPDATE_AFTER", None, row)]
            if split
            else [one("UPDATE_AFTER", row, row)]
        )
    return [one("DELETE", row, None)] if kind == "DELETE" else [one("INSERT", None, row)]


class _CKafkaMessages:
    """The CKafka envelope in place of CloudCanal's (the tables are the same)."""

    encoder: Any

    def _expected(self, message: dict[str, Any], kind: str, columns: list[Any], pk: list[str]) -> dict[str, Any]:
        return ckafka_expected(message, kind, self.encoder.opts.source_timezone)


class _CKafkaOutTables(_CKafkaMessages, _CloudCanalOutTables):
    """Compiles one Canal table layout for the CKafka writer (CloudCanal's tables)."""


class _ShapedCloudCanalTables(TextShaped, _CloudCanalOutTables):
    """canal-json -> cloudcanal-json under row-changing transforms: the CloudCanal writer's
    table of the transformed schema, fed the re-shaped rows (``row_shape.rs``)."""

    writer_tables = _CloudCanalOutTables
    keys_typed = True

    def _check_shaped(self, written: dict[str, Any], final: Any) -> None:
        database, table = final_names(final)
        fields = (written.get("db"), written.get("schema"), written.get("table"), written.get("pks"))
        if fields != (database, database, table, list(final.pk)):
            raise native._Unsupported("message")  # not the shaped message's fields


class _ShapedCKafkaTables(TextShaped, _CKafkaOutTables):
    """canal-json -> ckafka-json under row-changing transforms (CloudCanal's tables)."""

    writer_tables = _CKafkaOutTables
    keys_typed = True

    def _check_shaped(self, written: dict[str, Any], final: Any) -> None:
        if (written.get("DATABASE"), written.get("TABLE")) != final_names(final):
            raise native._Unsupported("message")  # not the shaped message's fields


class _ShapedDataWorksTables(TextShaped, _DataWorksOutTables):
    """canal-json -> dataworks-json under row-changing transforms (CloudCanal's tables with
    DataWorks' conversions); the probes leave the encoder's ``sequenceId`` counter as it was,
    and a split UPDATE's first record is keyed by its before-image as Python keys it."""

    writer_tables = _DataWorksOutTables
    counter = "_next_seq"

    def _before_keyed(self, explicit: bool) -> bool:
        return not explicit and self.encoder.opts.update_as != "single"

    def _check_shaped(self, written: dict[str, Any], final: Any) -> None:
        schema = written.get("schema") or {}
        source = {"dbType": "MySQL"}
        database, table = final_names(final)
        if database:
            source["dbName"] = database
        if table:
            source["tableName"] = table
        if (schema.get("primaryKey"), schema.get("source")) != (list(final.pk) or None, source):
            raise native._Unsupported("message")  # not the shaped message's fields


def final_names(final: Any) -> tuple[str | None, str | None]:
    """The transformed event's database and table as the writers write them (``""``: null)."""
    return final.source.database or None, final.source.table or None


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
    """Compiles one Debezium layout (columns typed by their JSON kinds, or by the schema part)
    for the CloudCanal writer; each op's probe must be what the writer writes for it."""

    def _compile_probe(self, probe: _Probe, pk: list[str], columns: list[tuple[str, str]]) -> Any:
        schema_name = probe.source.get("schema") or None  # CloudCanal's ``schema``: the source's, else the database
        decoded, shape = self._probe_shape(probe, pk)
        if len(set(pk)) != len(pk):
            return None
        connect = connect_columns(self, probe, decoded, columns, pk, unfolded=False)
        if connect is None:
            return PYTHON_HEAD
        labels, reads = connect
        schema = decoded.schema
        form = self.form
        zoned = self.timezone == self.encoder.opts.source_timezone
        specs = [
            (c.name, *(("same", None) if label else mysql_text(c, zoned, form)), c.type, c.mysql.jdbc_type())
            for c, label in zip(schema.columns, labels, strict=True)
        ]
        key = [(name, *key_value(schema.by_name[name], form)) for name in decoded.pk]
        if probe.head is not None:
            key = typed_as_read(key, [c.name for c in schema.columns], reads)
        texts = {name: None if probe.head is not None else _SAMPLES[kind][1] for name, kind in columns}
        message = {"database": probe.source["db"], "table": probe.source["table"], "data": [texts]}
        if schema_name is not None:
            message["schema"] = schema_name
        ops = [self._op_layout(probe, message, code, kind, shape, specs) for code, kind in _OPS]
        spec = self._writer_spec((specs, key, ops, schema_name))
        return spec if probe.head is None else _with_reads(reads, spec)

    def _writer_spec(self, spec: Any) -> Any:
        """The writer's spec from the CloudCanal tables' (TDSQL's adds its literal forms)."""
        return spec

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


class DebeziumDataWorksTables(_Layouts):
    """Compiles one Debezium layout (columns typed by their JSON kinds, or by the schema part)
    for the DataWorks writer; each op's probe must be what the writer writes for it."""

    def _compile_probe(self, probe: _Probe, pk: list[str], columns: list[tuple[str, str]]) -> Any:
        from cdc_smt.transforms.formats.dataworks_json import dataworks_type

        decoded, shape = self._probe_shape(probe, pk)
        if len(set(pk)) != len(pk):
            return None
        # a TIMESTAMP's wall clock is made an instant again: one the zone shows twice is Python's
        connect = connect_columns(self, probe, decoded, columns, pk, unfolded=True)
        if connect is None:
            return PYTHON_HEAD
        labels, reads = connect
        zone = self.encoder.opts.source_timezone
        specs = [
            (
                c.name,
                *(("same", None) if label else dataworks_value(c, zone, self.timezone, self.form)),
                dataworks_type(c.mysql),
                0,
            )
            for c, label in zip(decoded.schema.columns, labels, strict=True)
        ]
        message = {"database": probe.source["db"], "table": probe.source["table"], "data": [probe.row]}
        ops = []
        for code, kind in _OPS:
            event, edits = self._follow(self._decode_probe(probe, code), shape.selected)
            key = probe.record_key(tuple(pk))
            ops.append(check_dataworks(self, event, edits, message, kind, specs, list(decoded.pk), key))
        spec = specs, [(name, "str", None) for name in decoded.pk], ops
        return spec if probe.head is None else _with_reads(reads, spec)


def typed_as_read(key: list[tuple[str, str, Any]], names: list[str], reads: list[str | None]) -> list[Any]:
    """Under a schema part, the key fields whose typed value is the JSON value as read (the
    reader writes the record key from the values as read: ``debezium_in.rs``'s ``row_key``); the
    others (BIGINT UNSIGNED's wrapped ``int64``) send a record with a value there to Python."""
    read_of = dict(zip(names, reads, strict=True))
    return [field if read_of.get(field[0]) == "text" else (field[0], "python", None) for field in key]


class DebeziumCKafkaTables(_CKafkaMessages, DebeziumCloudCanalTables):
    """Compiles one Debezium layout for the CKafka writer (the probe's source has no
    binlog position: the writer writes each event's)."""
