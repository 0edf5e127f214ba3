"""The native plans that follow the schema catalog: ckafka-json and tdsql-binlog-json ->
canal-json and -> debezium-json.

CKafka's format 1 carries no column types: its decoder types each row by the catalog's
current schema of the table (the columns the row names; a column the schema lacks as
``longtext``), and DDL in the same stream changes the catalog. The native reader
(``native/src/ckafka_in.rs``) keys its tables by (database, table, the row's column
names) and asks :meth:`_CKafkaProbe.compile_table` for each: a probe message of that
layout (every value null) decoded by the chain's own decoder, so typed by the catalog
as it is, and compiled as CloudCanal's (whose values are MySQL's text too: ENUM and SET
as labels) for the Debezium or the Canal writer. A table the catalog has no schema for
is Python's (its values stay strings, with the decoder's warning).

Only Python applies DDL to the catalog: the reader closes the batch at a message that
may change it (``closed_at``); :class:`CatalogNativePlan` lets Python process that
record and converts again from the next one, and the reader forgets its tables whenever
the catalog's version moved since it compiled them (also between the worker's batches,
whose ``convert_values`` leaves the rest of a closed batch to Python).

TDSQL's rows are positional arrays of SQL literals (``native/src/tdsql_in.rs``): its
tables are keyed by (database, table, the row's width, whether the GTID is MariaDB's)
and :meth:`_TdsqlProbe.compile_table` gives, besides the writer's table, the catalog's
column names and each column's literal class (:func:`_literal_class`): the literals the
reader turns into the MySQL text whose ``from_text`` is the value ``literal_value`` gives.
The probes are TDSQL messages of the same values as SQL literals, so the writers' tables
are CKafka's (MySQL text, ENUM and SET labels).
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc_smt.transforms.model import Record
from cdc_smt.transforms.native import (
    CKAFKA_TO_CANAL,
    CKAFKA_TO_DEBEZIUM,
    TDSQL_TO_CANAL,
    TDSQL_TO_DEBEZIUM,
    _keeps_rows,
    _supported,
    zones_agree,
)
from cdc_smt.transforms.native_vendor import DataWorksNativePlan, _CloudCanalOutTables, _CloudCanalTables

#: The format-1 ``TYPE`` of each op of the Canal reader's compilers (no snapshot reads).
_TYPES = {"INSERT": "I", "UPDATE": "U", "DELETE": "D"}


class _CKafkaProbe:
    """The Canal compilers over CKafka probes (mixed in before a CloudCanal compiler)."""

    decoder: Any
    encoder: Any

    @property
    def form(self) -> Any:
        from cdc_smt.transforms.sqltext import MYSQL_TEXT

        return MYSQL_TEXT

    def compile_table(self, database: str, table: str, columns: list[str]) -> tuple[list[str], Any] | None:
        """The writer's spec for rows of ``table`` naming ``columns`` (in that order) and
        their primary key, as the catalog types them now (``None``: Python's)."""
        if self.decoder.catalog.get(database, table) is None:
            return None  # untyped strings, the decoder's warning: Python's
        message: dict[str, Any] = {"data": [dict.fromkeys(columns)], "database": database, "table": table}
        message.update(es=0, ts=0, sqlType=None)
        try:
            (event,) = self._decode(message, "INSERT")
            schema = event.schema
            names = [c.name for c in schema.columns]
            if sorted(names) != sorted(columns):
                return None  # (the decoder types a row's own columns: not expected)
            if names != columns:  # every column of the catalog's, in another order
                # The probe in the schema's order (the writers write a row in its own order,
                # the values looked up by name; what the probe's checks compare is the schema's).
                message["data"] = [dict.fromkeys(names)]
            message["mysqlType"] = {c.name: c.type for c in schema.columns}
            pk = list(event.pk)
            message["pkNames"] = pk
            spec = self._compile(message, event, pk)  # type: ignore[attr-defined]
            return None if spec is None else (pk, spec)
        except Exception:  # noqa: BLE001 - a layout Python rejects (or the plan cannot do) is Python's
            return None

    def _decode(self, message: dict[str, Any], kind: str) -> list[Any]:
        """The Canal-shaped probe ``message`` as a format-1 message, decoded (``TIME``: epoch 0)."""
        from cdc_smt.transforms.formats.ckafka_json import _format_time

        row, typ = message["data"][0], _TYPES[kind]
        ckafka = {
            "DATABASE": message["database"],
            "NEW_VALUES": row if typ != "D" else None,
            "OLD_VALUES": row if typ != "I" else None,
            "TABLE": message["table"],
            "TIME": _format_time(0, self.decoder.opts.source_timezone),
            "TYPE": typ,
        }
        decoded: list[Any] = self.decoder.decode(Record(value=orjson.dumps(ckafka)))
        return decoded


def _literal_class(mtype: Any) -> bytes:
    """Which SQL literals of a column of ``mtype`` the TDSQL reader reads (``tdsql_in::class``):
    ``literal_value`` and ``from_text`` of the literal's text give the same value for them."""
    from cdc_smt.transforms.types import Kind

    kind = mtype.kind
    if kind in (Kind.INT, Kind.YEAR, Kind.BIT):
        return b"n"  # integers (int()), bit values (their number), strings
    if kind is Kind.DECIMAL or (kind is Kind.FLOAT and not mtype.is_single_float):
        return b"d"  # numbers (Decimal()/float()), strings; FLOAT's text is rounded to single
    if kind is Kind.BYTES:
        return b"b"  # strings' UTF-8 and hexadecimal bytes, as the Latin-1 text from_text reads
    if kind in (Kind.STRING, Kind.ENUM, Kind.SET, Kind.JSON, Kind.DATE, Kind.DATETIME, Kind.TIMESTAMP, Kind.TIME):
        return b"s"  # strings only (numbers are indexes, bitmasks, epoch seconds there)
    return b"p"  # NULL only: the rest is Python's


class _TdsqlProbe(_CKafkaProbe):
    """The Canal compilers over TDSQL probes: the probe's texts as SQL literals."""

    _mariadb = False

    def compile_table(  # type: ignore[override]  # positional rows: a width, not names
        self, database: str, table: str, width: int, mariadb: bool
    ) -> tuple[list[str], Any, list[str], bytes] | None:
        """The writer's spec for ``width``-value rows of ``table`` (``mariadb``: its GTID is
        MariaDB's), its primary key, column names and literal classes (``None``: Python's)."""
        schema = self.decoder.catalog.get(database, table)
        if schema is None or len(schema.columns) != width or len(set(schema.names)) != width:
            return None  # unknown_table, a catalog out of date, or names a dict collapses: Python's
        names = list(schema.names)
        self._mariadb = mariadb
        compiled = super().compile_table(database, table, names)
        if compiled is None:
            return None
        pk, spec = compiled
        return pk, spec, names, b"".join(_literal_class(c.mysql) for c in schema.columns)

    def _decode(self, message: dict[str, Any], kind: str) -> list[Any]:
        """The Canal-shaped probe ``message`` as a TDSQL event (``begintime`` 0; the GTID left
        out of the source, the reader writes each message's own)."""
        from cdc_smt.transforms.formats.tdsql_binlog_json import _ROW_CODES
        from cdc_smt.transforms.sqltext import quote_string

        schema = self.decoder.catalog.get(message["database"], message["table"])
        by_name = schema.by_name
        row = message["data"][0]
        literals = [_probe_literal(v, by_name[n].mysql, quote_string) for n, v in row.items()]
        typ = {"INSERT": "insert", "UPDATE": "update", "DELETE": "delete"}[kind]
        tdsql = {
            "logtype": "mysqlbinlog",
            "eventtype": _ROW_CODES[1][typ],
            "eventtypestr": typ,
            "db": message["database"],
            "table": message["table"],
            "begintime": 0,
            "gtid": "0-0-0" if self._mariadb else None,
            "where": literals if typ != "insert" else [],
            "field": literals if typ != "delete" else [],
        }
        decoded: list[Any] = self.decoder.decode(Record(value=orjson.dumps(tdsql)))
        for event in decoded:
            event.source.gtid = None
        return decoded


def _probe_literal(text: str | None, mtype: Any, quote: Any) -> str:
    """A probe's MySQL text as the SQL literal the decoder types into ``from_text(text)``."""
    from cdc_smt.transforms.types import Kind

    if text is None:
        return "NULL"
    if mtype.kind is Kind.BYTES:
        return "X'" + text.encode("latin-1").hex() + "'"
    return str(quote(text))


class _TdsqlTables(_TdsqlProbe, _CloudCanalTables):
    """tdsql-binlog-json to Debezium (as :class:`_CKafkaTables`)."""


class _TdsqlOutTables(_TdsqlProbe, _CloudCanalOutTables):
    """tdsql-binlog-json to canal-json (as :class:`_CKafkaOutTables`)."""


class _CKafkaTables(_CKafkaProbe, _CloudCanalTables):
    """To Debezium: Canal's conversions of the catalog's types, ENUM and SET labels as they are."""


class _CKafkaOutTables(_CKafkaProbe, _CloudCanalOutTables):
    """To canal-json: every value re-written as Canal text (ENUM labels as Canal's indexes)."""


class CatalogNativePlan(DataWorksNativePlan):
    """A plan whose reader closes a batch at a record that may change the catalog:
    :meth:`run` converts again from the record after it once Python processed it (the
    codec holds no halves: see :class:`_NoHalves`)."""


class _NoHalves:
    """What :class:`DataWorksNativePlan.run` asks of the codec: a CKafka decoder holds
    nothing between messages, so the plan resumes right after the record it closed at."""

    @staticmethod
    def holds_half() -> bool:
        return False


def catalog_plan(chain: Any) -> CatalogNativePlan | None:
    """ckafka-json or tdsql-binlog-json -> debezium-json (the transforms of the Canal
    reader's Debezium plan) or -> canal-json (``batch: row``, transforms that keep rows as
    they are), when the chain's catalog is the decoder's own; else ``None`` (every other
    chain with a catalog)."""
    from cdc_smt.transforms import native
    from cdc_smt.transforms.formats.canal_json import CanalJson
    from cdc_smt.transforms.formats.ckafka_json import CKafkaJson
    from cdc_smt.transforms.formats.debezium_json import DebeziumJsonCodec
    from cdc_smt.transforms.formats.tdsql_binlog_json import TdsqlBinlogJson

    decoder, encoder = chain.decoder, chain.encoder
    tdsql = type(decoder) is TdsqlBinlogJson
    if type(decoder) is not CKafkaJson and not tdsql or chain.catalog is not decoder.catalog:
        return None
    if encoder.catalog not in (None, chain.catalog) or type(encoder) not in (CanalJson, DebeziumJsonCodec):
        return None
    debezium = type(encoder) is DebeziumJsonCodec
    if not all(_supported(t) and (debezium or _keeps_rows(t)) for t in chain.transforms):
        return None  # to Canal only transforms that keep rows as they are
    if not debezium and encoder.batching:
        return None  # Python groups a transaction's rows
    kinds = ((_CKafkaOutTables, _CKafkaTables), (_TdsqlOutTables, _TdsqlTables))[tdsql]
    tables = kinds[debezium](decoder, encoder, list(chain.transforms))
    writer: dict[str, Any] = {"encoder": "canal-json"}
    if debezium:
        writer = {"schemas_enable": encoder.schemas_enable, "tombstones_on_delete": encoder.tombstones_on_delete}
    zone = decoder.opts.source_timezone
    assert native._native is not None
    plan = native._native.CanalToDebezium(
        tables.compile_table,
        max_message_bytes=decoder.opts.max_message_bytes,
        reader=decoder.name,
        codec=decoder,
        zone=zone if zones_agree(zone) else None,
        **writer,
    )
    names = ((CKAFKA_TO_CANAL, CKAFKA_TO_DEBEZIUM), (TDSQL_TO_CANAL, TDSQL_TO_DEBEZIUM))[tdsql]
    return CatalogNativePlan(names[debezium], plan, tables.variants, _NoHalves())
