"""The native plans of the vendor JSON formats: cloudcanal-json -> debezium-json.

CloudCanal's message is Canal's flat message under other names, so the plan runs
the Canal plan's reader with CloudCanal's names (``native/src/cloudcanal.rs``)
and its tables are compiled as Canal's (:class:`_CloudCanalTables`): the probe is
written as a CloudCanal message and decoded by the chain's own CloudCanal decoder.
What differs is the value text (MySQL's own, ``from_text``: ENUM and SET as labels,
which Python writes as they are, where Canal writes indexes and bitmasks) and the ops
(no ``INIT``).
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc_smt.transforms.model import Record
from cdc_smt.transforms.native import CLOUDCANAL_TO_DEBEZIUM, NativePlan, _CanalTables, _supported


class _CloudCanalTables(_CanalTables):
    """Canal's table compiler over CloudCanal probes (see the module docstring)."""

    @property
    def form(self) -> Any:
        from cdc_smt.transforms.formats.cloudcanal_json import CLOUDCANAL_VALUES

        return CLOUDCANAL_VALUES

    def _compile(self, message: dict[str, Any], event: Any, pk: list[str]) -> Any:
        """Canal's spec, with ENUM and SET text read as the labels it is here (Canal's
        conversions read indexes and bitmasks): the text as is, as Python writes it."""
        spec = super()._compile(message, event, pk)
        columns, *rest = spec
        for i, column in enumerate(columns):
            if column[1] in ("enum", "set"):
                columns[i] = (column[0], "str", None, *column[3:])
        return (columns, *rest)

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

    def _op(self, message: dict[str, Any], kind: str, shape: Any, explicit: bool) -> tuple[int, Any]:
        if kind == "INIT":
            return 1, None  # CloudCanal has no snapshot action: the reader leaves it to Python
        return super()._op(message, kind, shape, explicit)


def cloudcanal_plan(chain: Any, native: Any) -> NativePlan | None:
    """cloudcanal-json -> debezium-json with the transforms the Canal plan runs, or ``None``."""
    if not all(_supported(t) for t in chain.transforms):
        return None
    decoder, encoder = chain.decoder, chain.encoder
    compiler = _CloudCanalTables(decoder, encoder, list(chain.transforms))
    plan = native.CanalToDebezium(
        compiler.compile,
        schemas_enable=encoder.schemas_enable,
        tombstones_on_delete=encoder.tombstones_on_delete,
        max_message_bytes=decoder.opts.max_message_bytes,
        reader="cloudcanal-json",
    )
    return NativePlan(CLOUDCANAL_TO_DEBEZIUM, plan, compiler.variants)
