"""The native plans of the vendor JSON formats: cloudcanal-json -> debezium-json and
-> canal-json; dataworks-json -> debezium-json and -> canal-json.

CloudCanal's message is Canal's flat message under other names, so the plans run
the Canal plans' reader with CloudCanal's names (``native/src/cloudcanal.rs``)
and their tables are compiled as Canal's (:class:`_CloudCanalProbe`): the probe is
written as a CloudCanal message and decoded by the chain's own CloudCanal decoder;
to canal-json each value is re-written as Canal text (as from TiCDC's dialect).
What differs is the value text (MySQL's own, ``from_text``: ENUM and SET as labels,
which Python writes as they are, where Canal writes indexes and bitmasks) and the ops
(no ``INIT``).

DataWorks declares each message's columns with one of six types, so its reader
(``native/src/dataworks_in.rs``) keys tables by the declared layout (``dbType``, database,
schema, table, key, each column's DataWorks and MySQL type); per layout the compilers
here decode a probe DataWorks message with a value of each type (:class:`_DataWorksProbe`).
Split updates are paired natively only within a batch while the codec holds no half
(:class:`DataWorksNativePlan`).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from cdc_smt.transforms.model import Record
from cdc_smt.transforms.native import (
    CLOUDCANAL_TO_CANAL,
    CLOUDCANAL_TO_DEBEZIUM,
    DATAWORKS_TO_CANAL,
    DATAWORKS_TO_DEBEZIUM,
    NativePlan,
    _CanalOutTables,
    _CanalTables,
    _keeps_rows,
    _supported,
    canal_debezium_plan,
    row_keeping_plan,
    zones_agree,
)
from cdc_smt.transforms.native_debezium import DebeziumCanalTables, _Probe


class _CloudCanalProbe(_CanalTables):
    """Canal's table compilers over CloudCanal probes (see the module docstring)."""

    @property
    def form(self) -> Any:
        from cdc_smt.transforms.formats.cloudcanal_json import CLOUDCANAL_VALUES

        return CLOUDCANAL_VALUES

    def _decode(self, message: dict[str, Any], kind: str) -> list[Any]:
        """The Canal-shaped probe ``message`` as CloudCanal writes it, decoded."""
        rows = message["data"]
        cloudcanal = {
            "action": kind,
            "before": rows if kind == "UPDATE" else [],
            "data": rows,
            "db": message["database"],
            "dbValType": message["mysqlType"],
            "entryType": "ROWDATA",
            "execTs": message["es"],
            "isDdl": False,
            "jdbcType": message["sqlType"],
            "pks": message["pkNames"],
            "sendTs": message["ts"],
            "table": message["table"],
        }
        return self.decoder.decode(Record(value=orjson.dumps(cloudcanal)))


class _CloudCanalTables(_CloudCanalProbe):
    """To Debezium: Canal's conversions, CloudCanal's ENUM and SET labels as they are."""

    def _compile(self, message: dict[str, Any], event: Any, pk: list[str]) -> Any:
        """Canal's spec, with ENUM and SET text read as the labels it is here (Canal's
        conversions read indexes and bitmasks): the text as is, as Python writes it."""
        spec = super()._compile(message, event, pk)
        columns, *rest = spec
        for i, column in enumerate(columns):
            if column[1] in ("enum", "set"):
                columns[i] = (column[0], "str", None, *column[3:])
        return (columns, *rest)

    def _op(self, message: dict[str, Any], kind: str, shape: Any, explicit: bool) -> tuple[int, Any]:
        if kind == "INIT":
            return 1, None  # CloudCanal has no snapshot action: the reader leaves it to Python
        return super()._op(message, kind, shape, explicit)


class _CloudCanalOutTables(_CloudCanalProbe, _CanalOutTables):
    """To canal-json: every value re-written as Canal text (the TiCDC path of the Canal writer)."""

    @property
    def retext(self) -> bool:
        return True

    def _compile(self, message: dict[str, Any], event: Any, pk: list[str]) -> Any:
        """The Canal writer's spec and, per column, the ENUM labels' Canal index texts (as
        ``CanalText`` writes them; not for key columns, whose key Python writes from the labels)."""
        from cdc_smt.transforms.formats.canal_json import _enum_index_table
        from cdc_smt.transforms.types import Kind

        spec = super()._compile(message, event, pk)
        if spec is None:
            return None
        labels = [
            _enum_index_table(t) if t.kind is Kind.ENUM and t.values and c.name not in pk else None
            for c in event.schema.columns
            for t in (c.mysql,)
        ]
        return (*spec, labels)

    def _op_canal(
        self, message: dict[str, Any], kind: str, shape: Any, texts: list[Any] | None
    ) -> tuple[int, int | None]:
        if kind == "INIT":
            return 1, None  # CloudCanal has no snapshot action: the reader leaves it to Python
        return super()._op_canal(message, kind, shape, texts)


def cloudcanal_plan(chain: Any) -> NativePlan | None:
    """cloudcanal-json -> debezium-json with the transforms the Canal plan runs, or ``None``."""
    return canal_debezium_plan(chain, _CloudCanalTables, CLOUDCANAL_TO_DEBEZIUM, reader="cloudcanal-json")


def cloudcanal_canal_plan(chain: Any) -> NativePlan | None:
    """cloudcanal-json -> canal-json (``batch: row``) with transforms that keep rows as they
    are, or ``None``."""
    if chain.encoder.batching:
        return None
    names = (CLOUDCANAL_TO_CANAL, CLOUDCANAL_TO_CANAL)  # (no TiCDC dialect of CloudCanal)
    return row_keeping_plan(chain, _CloudCanalOutTables, names, encoder="canal-json", reader="cloudcanal-json")


#: A probe value of each DataWorks type (DOUBLE typed decimal: see :func:`_sample`).
_DW_SAMPLES: dict[str, Any] = {"LONG": 1, "DOUBLE": 1.5, "STRING": "x", "DATE": 0, "BYTES": "", "BOOLEAN": True}
#: The DataWorks op of each op of the Canal reader's compiler (no snapshot reads).
_DW_CODES = {"INSERT": "INSERT", "UPDATE": "UPDATE_AFTER", "DELETE": "DELETE"}


def _sample(dw: str, mysql: str) -> Any:
    """A probe value of a column: ``"1.00"`` for a DOUBLE typed ``decimal(65,2)``."""
    if mysql.startswith("decimal(65,"):
        scale = int(mysql[len("decimal(65,") : -1])
        return "1." + "0" * scale if scale else "1"
    return _DW_SAMPLES[dw]


class _DataWorksProbe(_CanalTables):
    """Canal's table compiler over DataWorks probes: one message per op with a value of
    each column's type (the types of DOUBLE columns come from their values)."""

    def compile_layout(self, source: list[str | None], pk: list[str], columns: list[tuple[str, str, str]]) -> Any:
        """The writer's spec for a layout (``None``: Python's): ``source`` is ``dbType``,
        database, schema and table, ``columns`` each column's name, DataWorks and MySQL type."""
        row = {name: _sample(dw, mysql) for name, dw, mysql in columns}
        message: dict[str, Any] = {"data": [row], "database": source[1], "table": source[3], "pkNames": pk}
        message.update(es=0, ts=0, dataworks=(source, columns))
        try:
            (event,) = self._decode(message, "INSERT")
            if [(c.name, c.type) for c in event.schema.columns] != [(n, t) for n, _, t in columns]:
                return None
            if list(event.pk) != pk:
                return None
            return self._compile(message, event, pk)
        except Exception:  # noqa: BLE001 - a layout Python rejects (or the plan cannot do) is Python's
            return None

    def _decode(self, message: dict[str, Any], kind: str) -> list[Any]:
        return _dataworks_probe(self.decoder, message, kind)


def _dataworks_probe(decoder: Any, message: dict[str, Any], kind: str) -> list[Any]:
    """The Canal-shaped probe ``message`` as a DataWorks message of op ``kind``, decoded."""
    (db_type, database, schema, table), columns = message["dataworks"]
    row = message["data"][0]
    source = {"dbType": db_type, "dbName": database, "schemaName": schema, "tableName": table}
    dataworks = {
        "schema": {
            "dataColumn": [{"name": name, "type": dw} for name, dw, _ in columns],
            "primaryKey": message["pkNames"],
            "source": {k: v for k, v in source.items() if v is not None},
        },
        "payload": {
            "before": {"dataColumn": row} if kind != "INSERT" else None,
            "after": {"dataColumn": row} if kind != "DELETE" else None,
            "sequenceId": "0",
            "timestamp": {"eventTime": message["es"], "systemTime": message["ts"]},
            "op": _DW_CODES[kind],
        },
        "version": "0.0.1",
    }
    return decoder.decode(Record(value=orjson.dumps(dataworks)))


class _DataWorksTables(_DataWorksProbe):
    """To Debezium: Canal's conversions of the layout's MySQL types."""

    def _op(self, message: dict[str, Any], kind: str, shape: Any, explicit: bool) -> tuple[int, Any]:
        if kind == "INIT":
            return 1, None  # DataWorks has no snapshot reads: never used
        return super()._op(message, kind, shape, explicit)


class _DataWorksCanalTables(DebeziumCanalTables):
    """To Canal: the Debezium reader's Canal compiler over DataWorks probes (each value
    re-written as Canal text; the probe's Canal message checked against what the Canal
    encoder writes for it)."""

    def compile_dataworks(self, source: list[str | None], pk: list[str], columns: list[tuple[str, str, str]]) -> Any:
        """The Canal writer's spec for a layout (see :meth:`_DataWorksProbe.compile_layout`)."""
        row = {name: _sample(dw, mysql) for name, dw, mysql in columns}
        probe = _Probe(
            row, {"db": source[1], "table": source[3]}, orjson.dumps(dict.fromkeys(pk)) if pk else None, None
        )
        self._layout = (source, columns)
        try:
            return self._compile_probe(probe, pk, [(name, mysql) for name, _, mysql in columns])
        except Exception:  # noqa: BLE001 - a layout Python rejects (or the plan cannot do) is Python's
            return None

    def _compile_probe(self, probe: _Probe, pk: list[str], columns: list[tuple[str, str]]) -> Any:
        from cdc_smt.transforms.types import wall_clock

        decoded, shape = self._probe_shape(probe, pk)
        if [(c.name, c.type) for c in decoded.schema.columns] != columns:
            return None
        names = list(probe.row)
        texts = [self._text(c, True) for c in decoded.schema.columns]
        dws = dict((name, dw) for name, dw, _ in self._layout[1])
        written: dict[str, str | None] = {}
        for name, value in probe.row.items():  # the Canal text the reader hands the writer
            if dws[name] == "DATE":
                written[name] = wall_clock(value * 1000, self.timezone).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
            elif dws[name] == "BYTES":
                written[name] = base64.b64decode(value).decode("latin-1")
            elif dws[name] == "BOOLEAN":
                written[name] = "1" if value else "0"
            else:
                written[name] = str(value)
        mysql_types = {n: texts[i][0] for i, n in enumerate(names)}
        sql_types = {n: texts[i][4] for i, n in enumerate(names)}
        ops = [
            (1, None)
            if code == "r"
            else self._op_canal_layout(probe, code, kind, shape, written, mysql_types, sql_types)
            for code, kind in (("c", "INSERT"), ("u", "UPDATE"), ("d", "DELETE"), ("r", "INIT"))
        ]
        return names, list(pk), ops, texts, [None] * len(names), [False] * len(names)

    def _decode_probe(self, probe: _Probe, code: str) -> Any:
        source, columns = self._layout
        kind = {"c": "INSERT", "u": "UPDATE", "d": "DELETE"}[code]
        message = {"data": [probe.row], "pkNames": list(orjson.loads(probe.key)) if probe.key else [], "es": 0, "ts": 0}
        (event,) = _dataworks_probe(self.decoder, message | {"dataworks": (source, columns)}, kind)
        return event


class DataWorksNativePlan(NativePlan):
    """The plan leaves Python every record of a batch from one that may leave the codec
    holding a half (``closed_at``); :meth:`run` converts again from the first record
    after it for Python once the codec holds no half. (:meth:`convert_values` keeps the
    plain contract: the worker processes the rest in Python.)"""

    def __init__(self, name: str, plan: Any, variants: list[Any], codec: Any) -> None:
        super().__init__(name, plan, variants)
        self.codec = codec

    def run(self, records: Iterable[Record], one: Callable[[Record, Any], None], result: Any) -> None:
        batch = records if isinstance(records, list) else list(records)
        while batch:
            current = batch
            passed: list[Record] = []  # the record the plan closed the batch at, once processed

            def python(
                record: Record, result: Any, current: list[Record] = current, passed: list[Record] = passed
            ) -> None:
                at = self.plan.closed_at
                if passed and not self.codec.holds_half():
                    raise _Resume(record)
                one(record, result)
                if at is not None and record is current[at]:
                    passed.append(record)

            try:
                super().run(current, python, result)
                return
            except _Resume as resume:
                at = self.plan.closed_at
                start = at + 1 if at is not None else 0
                batch = current[next(i for i in range(start, len(current)) if current[i] is resume.record) :]


class _Resume(Exception):
    """The plan takes over again from this record (Python has not processed it)."""

    def __init__(self, record: Record) -> None:
        super().__init__()
        self.record = record


def dataworks_plan(chain: Any) -> NativePlan | None:
    """dataworks-json -> debezium-json (the transforms of the Canal reader's Debezium plan)
    or -> canal-json (``batch: row``, transforms that keep rows as they are), or ``None``."""
    from cdc_smt.transforms import native
    from cdc_smt.transforms.formats.debezium_json import DebeziumJsonCodec

    decoder, encoder = chain.decoder, chain.encoder
    assert native._native is not None
    zone = decoder.opts.source_timezone
    options = {
        "max_message_bytes": decoder.opts.max_message_bytes,
        "reader": "dataworks-json",
        "codec": decoder,
        "zone": zone if zones_agree(zone) else None,
    }
    if type(encoder) is DebeziumJsonCodec:
        if not all(_supported(t) for t in chain.transforms):
            return None
        tables = _DataWorksTables(decoder, encoder, list(chain.transforms))
        plan = native._native.CanalToDebezium(
            tables.compile_layout,
            schemas_enable=encoder.schemas_enable,
            tombstones_on_delete=encoder.tombstones_on_delete,
            **options,
        )
        return DataWorksNativePlan(DATAWORKS_TO_DEBEZIUM, plan, tables.variants, decoder)
    if encoder.batching or not all(_supported(t) and _keeps_rows(t) for t in chain.transforms):
        return None  # Python groups a transaction's rows; transforms that change rows
    canal = _DataWorksCanalTables(decoder, encoder, list(chain.transforms))
    plan = native._native.CanalToDebezium(canal.compile_dataworks, encoder="canal-json", **options)
    return DataWorksNativePlan(DATAWORKS_TO_CANAL, plan, canal.variants, decoder)
