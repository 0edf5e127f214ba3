"""The native planner's typed-JSON readers: maxwell-json and ogg-json -> canal-json and
-> debezium-json plans.

Without a schema catalog the Maxwell and GoldenGate decoders type a message's columns
from its JSON values (``SchemalessJson.row_schema``), so the native readers
(``native/src/maxwell_in.rs``, ``ogg_in.rs``, sharing ``typed_in.rs``) key their tables
by the layout of the values, as the Debezium reader does: database, table, the key
names and each column's name and JSON kind (``null``, ``bool``, ``int``, ``float``,
``str``). Per layout the compilers here decode one probe message per op, with a value
of each kind, with the chain's own decoder, and compile it for the writer:

* :class:`TypedDebeziumTables`: the Debezium writer of the Canal reader's plans (each
  column's conversion to its Connect representation, the transforms followed column
  by column, the source block and schemas), from the probe's event;
* :class:`TypedCanalTables`: the Canal writer (each value re-written as Canal text),
  as for Debezium events (``native_debezium.DebeziumCanalTables``), with only the
  transforms that keep rows as they are.

A Maxwell event has no processing time: Python's Canal encoder writes the current time
as ``ts``, and so does the native writer (the probe's is 0).
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc_smt.transforms.model import Op, Record
from cdc_smt.transforms.native import (
    MAXWELL_TO_CANAL,
    MAXWELL_TO_DEBEZIUM,
    OGG_TO_CANAL,
    OGG_TO_DEBEZIUM,
    NativePlan,
    _CanalTables,
    _keeps_rows,
    _supported,
)
from cdc_smt.transforms.native_debezium import _SAMPLES, DebeziumCanalTables, _Probe

#: Maxwell's message type and GoldenGate's op type per Debezium op code.
_MAXWELL_TYPES = {"c": "insert", "u": "update", "d": "delete", "r": "bootstrap-insert"}
_OGG_TYPES = {"c": "I", "u": "U", "d": "D", "r": "I"}
#: The Debezium op code of each op of the Canal reader's compiler.
_CODES = {"INSERT": "c", "UPDATE": "u", "DELETE": "d", "INIT": "r"}
#: GoldenGate's timestamps of epoch 0 (``op_ts``, ``current_ts``).
_OGG_EPOCH = ("1970-01-01 00:00:00.000000", "1970-01-01T00:00:00.000000")


def typed_plan(chain: Any, native: Any) -> NativePlan | None:
    """maxwell-json or ogg-json -> debezium-json (the transforms of the Canal reader's
    Debezium plan) or -> canal-json (``batch: row``, the transforms that keep rows as they
    are), or ``None``. ``native`` is the extension."""
    from cdc_smt.transforms.formats.debezium_json import DebeziumJsonCodec
    from cdc_smt.transforms.formats.ogg_json import OggJson

    decoder, encoder = chain.decoder, chain.encoder
    ogg = type(decoder) is OggJson
    options = {"max_message_bytes": decoder.opts.max_message_bytes, "reader": decoder.name}
    if type(encoder) is DebeziumJsonCodec:
        if not all(_supported(t) for t in chain.transforms):
            return None
        connect = TypedDebeziumTables(decoder, encoder, list(chain.transforms))
        plan = native.CanalToDebezium(
            connect.compile_layout,
            schemas_enable=encoder.schemas_enable,
            tombstones_on_delete=encoder.tombstones_on_delete,
            **options,
        )
        return NativePlan(OGG_TO_DEBEZIUM if ogg else MAXWELL_TO_DEBEZIUM, plan, connect.variants)
    if encoder.batching or not all(_supported(t) and _keeps_rows(t) for t in chain.transforms):
        return None  # Python groups a transaction's rows; transforms that change rows
    canal = TypedCanalTables(decoder, encoder, list(chain.transforms))
    plan = native.CanalToDebezium(canal.compile_layout, encoder="canal-json", **options)
    return NativePlan(OGG_TO_CANAL if ogg else MAXWELL_TO_CANAL, plan, canal.variants)


def probe_event(decoder: Any, database: str, table: str, pk: list[str], row: dict[str, Any], code: str) -> Any:
    """The event ``decoder`` reads from a one-row probe message of its dialect (op
    ``code``, time 0): what the native reader hands the writer for such a message."""
    from cdc_smt.transforms.formats.ogg_json import OggJson

    message: dict[str, Any]
    if type(decoder) is OggJson:
        message = {"table": f"{database}.{table}", "op_type": _OGG_TYPES[code], "primary_keys": pk}
        message["op_ts"], message["current_ts"] = _OGG_EPOCH
        if code in ("u", "d"):
            message["before"] = row
        if code != "d":
            message["after"] = row
    else:
        message = {"database": database, "table": table, "type": _MAXWELL_TYPES[code], "ts": 0, "data": row}
        message["primary_key_columns"] = pk
    (event,) = decoder.decode(Record(value=orjson.dumps(message)))
    if code == "r":
        event.op = Op.READ  # GoldenGate has no snapshot reads: the entry is never used
    return event


def _sample_row(columns: list[tuple[str, str]]) -> dict[str, Any]:
    """A value of each column's kind."""
    return {name: _SAMPLES[kind][0] for name, kind in columns}


class TypedDebeziumTables(_CanalTables):
    """Compiles one typed-JSON layout for the Debezium writer: the Canal reader's
    compiler (``_CanalTables``) over the probe events of the layout."""

    def compile_layout(self, database: str, table: str, pk: list[str], columns: list[tuple[str, str]]) -> Any:
        """The Debezium writer's spec for the layout (``None``: Python's)."""
        row = _sample_row(columns)
        message = {"data": [row], "database": database, "table": table, "pkNames": pk}
        try:
            (event,) = self._decode(message, "INSERT")
            if [c.name for c in event.schema.columns] != list(row) or list(event.pk) != pk:
                return None
            return self._compile(message, event, pk)
        except Exception:  # noqa: BLE001 - a layout Python rejects (or the plan cannot do) is Python's
            return None

    def _decode(self, message: dict[str, Any], kind: str) -> list[Any]:
        row = message["data"][0]
        return [probe_event(self.decoder, message["database"], message["table"], message["pkNames"], row, _CODES[kind])]


class TypedCanalTables(DebeziumCanalTables):
    """Compiles one typed-JSON layout for the Canal writer: the Debezium reader's
    compiler over the probe events of the layout (the writer's Canal text, type maps
    and key checked against what the Canal encoder writes for them)."""

    def compile_layout(  # type: ignore[override]
        self, database: str, table: str, pk: list[str], columns: list[tuple[str, str]]
    ) -> Any:
        """The Canal writer's spec for the layout (``None``: Python's)."""
        return super().compile_layout(database, table, None, None, pk, columns)

    def _decode_probe(self, probe: _Probe, code: str) -> Any:
        pk = list(orjson.loads(probe.key)) if probe.key is not None else []
        event = probe_event(self.decoder, probe.source["db"], probe.source["table"], pk, probe.row, code)
        if event.processing_ts_ms is None:
            event.processing_ts_ms = 0  # Python writes the current time, the native writer too
        return event


__all__ = ["TypedCanalTables", "TypedDebeziumTables", "probe_event", "typed_plan"]
