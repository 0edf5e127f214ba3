"""The native plans that follow the schema catalog: ckafka-json -> canal-json and
-> debezium-json.

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
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc_smt.transforms.model import Record
from cdc_smt.transforms.native import (
    CKAFKA_TO_CANAL,
    CKAFKA_TO_DEBEZIUM,
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
    """ckafka-json -> debezium-json (the transforms of the Canal reader's Debezium plan) or
    -> canal-json (``batch: row``, transforms that keep rows as they are), when the chain's
    catalog is the decoder's own; else ``None`` (every other chain with a catalog)."""
    from cdc_smt.transforms import native
    from cdc_smt.transforms.formats.canal_json import CanalJson
    from cdc_smt.transforms.formats.ckafka_json import CKafkaJson
    from cdc_smt.transforms.formats.debezium_json import DebeziumJsonCodec

    decoder, encoder = chain.decoder, chain.encoder
    if type(decoder) is not CKafkaJson or chain.catalog is not decoder.catalog:
        return None
    if encoder.catalog not in (None, chain.catalog) or type(encoder) not in (CanalJson, DebeziumJsonCodec):
        return None
    debezium = type(encoder) is DebeziumJsonCodec
    if not all(_supported(t) and (debezium or _keeps_rows(t)) for t in chain.transforms):
        return None  # to Canal only transforms that keep rows as they are
    if not debezium and encoder.batching:
        return None  # Python groups a transaction's rows
    tables = (_CKafkaTables if debezium else _CKafkaOutTables)(decoder, encoder, list(chain.transforms))
    writer: dict[str, Any] = {"encoder": "canal-json"}
    if debezium:
        writer = {"schemas_enable": encoder.schemas_enable, "tombstones_on_delete": encoder.tombstones_on_delete}
    zone = decoder.opts.source_timezone
    assert native._native is not None
    plan = native._native.CanalToDebezium(
        tables.compile_table,
        max_message_bytes=decoder.opts.max_message_bytes,
        reader="ckafka-json",
        codec=decoder,
        zone=zone if zones_agree(zone) else None,
        **writer,
    )
    return CatalogNativePlan(CKAFKA_TO_DEBEZIUM if debezium else CKAFKA_TO_CANAL, plan, tables.variants, _NoHalves())
