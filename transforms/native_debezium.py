"""The native planner's Debezium reader: debezium-json -> canal-json plans.

Without the schema part the Debezium decoder types a row's columns from its JSON
values (``inference.json_columns``) and takes the primary key from the record's
Kafka key, so the native reader (``native/src/debezium_in.rs``) keys its tables by
the layout of the values: source database, table, connector and schema, the key's
field names and each column's name and JSON kind (``null``, ``bool``, ``int``,
``float``, ``str``). Per layout :class:`DebeziumCanalTables` runs one probe event
per op, with a value of each kind, through the chain's own decoder, transforms and
Canal encoder, and gives the Canal writer each column's type maps and conversion
(checked against what the probe wrote). Messages with the schema part, and every
value or message the reader does not reproduce for certain, go to Python.
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc_smt.transforms.model import Record
from cdc_smt.transforms.native import (
    DEBEZIUM_TO_CANAL,
    HeaderEdit,
    NativePlan,
    _CanalOutTables,
    _header_edits,
    _keeps_rows,
    _Shape,
    _supported,
    _Unsupported,
)

#: A probe value of each JSON kind the reader tells apart, and the Canal text the native
#: writer gives it (``1.5``: a fraction the double conversion writes as it is).
_SAMPLES: dict[str, tuple[Any, str | None]] = {
    "null": (None, None),
    "bool": (True, "1"),
    "int": (1, "1"),
    "float": (1.5, "1.5"),
    "str": ("x", "x"),
}
#: Debezium's op codes per op of the writers (c, u, d, r).
_OPS = (("c", "INSERT"), ("u", "UPDATE"), ("d", "DELETE"), ("r", "INIT"))


def debezium_plan(chain: Any, native: Any) -> NativePlan | None:
    """debezium-json -> canal-json (``batch: row``) with the transforms that keep rows as
    they are, or ``None``. ``native`` is the extension."""
    encoder = chain.encoder
    if encoder.batching:
        return None  # Python groups consecutive events of a transaction into one message
    if not all(_supported(t) and _keeps_rows(t) for t in chain.transforms):
        return None
    compiler = DebeziumCanalTables(chain.decoder, encoder, list(chain.transforms))
    plan = native.CanalToDebezium(
        compiler.compile_layout,
        max_message_bytes=chain.decoder.opts.max_message_bytes,
        encoder="canal-json",
        reader="debezium-json",
    )
    return NativePlan(DEBEZIUM_TO_CANAL, plan, compiler.variants)


class DebeziumCanalTables(_CanalOutTables):
    """Compiles one Debezium layout for the Canal writer (which re-writes every value as
    Canal text, with Canal's defaults for the fields Debezium lacks)."""

    @property
    def retext(self) -> bool:
        return True

    def compile_layout(
        self,
        database: str,
        table: str,
        connector: str | None,
        schema: str | None,
        pk: list[str],
        columns: list[tuple[str, str]],
    ) -> Any:
        """The Canal writer's spec for the layout (``None``: Python's)."""
        try:
            return self._compile_layout(database, table, connector, schema, pk, columns)
        except Exception:  # noqa: BLE001 - a layout Python rejects (or the plan cannot do) is Python's
            return None

    def _compile_layout(
        self,
        database: str,
        table: str,
        connector: str | None,
        schema: str | None,
        pk: list[str],
        columns: list[tuple[str, str]],
    ) -> Any:
        row = {name: _SAMPLES[kind][0] for name, kind in columns}
        texts_written = {name: _SAMPLES[kind][1] for name, kind in columns}
        source: dict[str, Any] = {"db": database, "table": table, "ts_ms": 0}
        if connector is not None:
            source["connector"] = connector
        if schema is not None:
            source["schema"] = schema
        probe = _Probe(row, source, orjson.dumps(dict.fromkeys(pk)) if pk else None)
        event = self._decode_probe(probe, "c")
        columns_read = event.schema.columns
        names = [c.name for c in columns_read]
        if names != list(row) or list(event.pk) != pk:
            return None
        shape = _Shape(event.schema)
        for t in self.transforms:  # predicates judged on the INSERT probe (filters do not change it)
            selected = t.selects(event)
            shape.apply(t, selected)
            out = t.apply_batch([event])
            event = out[0] if out else event
        texts = [self._text(c, True) for c in columns_read]
        mysql_types = {n: texts[i][0] for i, n in enumerate(names)}
        sql_types = {n: texts[i][3] if texts_written[n] is None else texts[i][4] for i, n in enumerate(names)}
        ops = [self._op_layout(probe, code, kind, shape, texts_written, mysql_types, sql_types) for code, kind in _OPS]
        return names, list(pk), ops, texts

    def _decode_probe(self, probe: _Probe, code: str) -> Any:
        before = probe.row if code in ("u", "d") else None
        after = probe.row if code != "d" else None
        envelope = {"before": before, "after": after, "source": probe.source, "op": code, "ts_ms": 0}
        (event,) = self.decoder.decode(Record(value=orjson.dumps(envelope), key=probe.key))
        return event

    def _op_layout(
        self,
        probe: _Probe,
        code: str,
        kind: str,
        shape: _Shape,
        texts: dict[str, str | None],
        mysql_types: dict[str, str],
        sql_types: dict[str, int],
    ) -> tuple[int, int | None]:
        """One op's entry: ``(0, None)`` dropped, ``(2, variant)`` written; the probe's
        Canal message must be what the writer writes for it."""
        event = self._decode_probe(probe, code)
        edits: list[HeaderEdit] | None = None
        for t, selected in zip(self.transforms, shape.selected, strict=True):
            if t.selects(event) != selected:
                raise _Unsupported("predicate")  # it judges ops differently: Python
            if selected:
                edits = _header_edits(t, event, edits)
            out = t.apply_batch([event])
            if not out:
                return 0, None
            (event,) = out
        (first,) = self.encoder.encode(event)
        written = orjson.loads(first.value)
        expected = {
            "data": [texts],
            "database": probe.source["db"],
            "es": 0,
            "id": 0,
            "isDdl": False,
            "mysqlType": mysql_types,
            "old": None,
            "pkNames": list(event.pk) or None,
            "sql": "",
            "sqlType": sql_types,
            "table": probe.source["table"],
            "ts": 0,
            "type": kind,
        }
        key = orjson.dumps({k: probe.row.get(k) for k in event.pk}) if event.pk else None
        if written != expected or list(written) != list(expected) or first.key != key:
            raise _Unsupported("message")  # not what the writer writes
        ident = (first.topic, None if edits is None else tuple(edits))
        variant = self._variant_ids.get(ident)
        if variant is None:
            variant = self._variant_ids[ident] = len(self.variants)
            self.variants.append(ident)
        return 2, variant


class _Probe:
    """A layout's probe: the row (a value of each column's kind), the source block and the key."""

    def __init__(self, row: dict[str, Any], source: dict[str, Any], key: bytes | None) -> None:
        self.row = row
        self.source = source
        self.key = key


__all__ = ["DEBEZIUM_TO_CANAL", "DebeziumCanalTables", "debezium_plan"]
