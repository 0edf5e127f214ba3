"""The native plans of the vendor JSON formats: cloudcanal-json -> debezium-json and
-> canal-json.

CloudCanal's message is Canal's flat message under other names, so the plans run
the Canal plans' reader with CloudCanal's names (``native/src/cloudcanal.rs``)
and their tables are compiled as Canal's (:class:`_CloudCanalProbe`): the probe is
written as a CloudCanal message and decoded by the chain's own CloudCanal decoder;
to canal-json each value is re-written as Canal text (as from TiCDC's dialect).
What differs is the value text (MySQL's own, ``from_text``: ENUM and SET as labels,
which Python writes as they are, where Canal writes indexes and bitmasks) and the ops
(no ``INIT``).
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc_smt.transforms.model import Record
from cdc_smt.transforms.native import (
    CLOUDCANAL_TO_CANAL,
    CLOUDCANAL_TO_DEBEZIUM,
    NativePlan,
    _CanalOutTables,
    _CanalTables,
    canal_debezium_plan,
    row_keeping_plan,
)


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
