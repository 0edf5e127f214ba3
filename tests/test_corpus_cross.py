"""Real Canal, TiCDC and Debezium messages survive conversion to each other and back.

Every Canal and Debezium corpus file (and the TiCDC captures) is converted to
each of the other formats of the foundation and back. The round trip must
reproduce the same changelog (op, table, before and after images, in order),
and replaying any intermediate output must give the same final tables as
replaying the input.

Up to what the formats declare they cannot carry: a snapshot read passing
through a format without ``snapshot_reads`` (``Codec.capabilities``) comes back
as an insert, and values follow the documented value rules of the formats on
the path (:data:`VALUE_LOSSES`). The files come without a schema file, so
nothing here has a schema catalog.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.changelog import replay
from cdc_smt.transforms.config import build_transforms
from cdc_smt.transforms.formats import codec_class, get_codec
from cdc_smt.transforms.model import ChangeEvent, Column, Op, Record
from cdc_smt.transforms.types import Kind, set_bits_from_labels
from tests.corpus import read_messages

pytestmark = pytest.mark.corpus

FOUNDATION = ("canal-json", "ticdc-canal-json", "debezium-json")
FILES = {
    "canal-json": ["flink-canal-data.txt", "flink-canal-data-with-init.txt", "flink-canal-data-filter-table.txt",
                   "paimon-canal-alltype-canal-data.txt"],
    "debezium-json": ["flink-debezium-data-schema-include.txt", "flink-debezium-data-schema-exclude.txt",
                      "flink-debezium-postgres-data-schema-include.txt",
                      "flink-debezium-postgres-data-schema-exclude.txt",
                      "paimon-debezium-alltype-debezium-data-1.txt", "risingwave-debezium_timestamp.1"],
    "ticdc-canal-json": ["cdcfresh-insert.json", "cdcfresh-update.json", "cdcfresh-delete.json"],
}  # fmt: skip
#: Transforms a file is read with. flink-canal-data-filter-table.txt ends with a table
#: (mydb.project, its CREATE named `projects`) whose INT `id` holds 'A101': Flink's own
#: test (CanalJsonSerDeSchemaTest.testFilteringTables, see SOURCES.md) reads the file
#: with database regex ^my.* and table regex ^prod.*, so only mydb.product is kept.
TRANSFORMS = {
    "flink-canal-data-filter-table.txt": [{"type": "filter", "databases": ["my.*"], "tables": [r"my.*\.prod.*"]}],
}
# Not here: risingwave-canal_json_double_field.1 declares `id` INT but carries 'A101'
# (a RisingWave parser test of duplicate keys): typed targets reject it, which
# tests/test_corpus_canal.py covers.
CASES = [(fmt, name, other) for fmt, names in FILES.items() for name in names for other in FOUNDATION if other != fmt]


def _records(values: list[bytes]) -> list[Record]:
    return [Record(value=v) for v in values]


#: Sink options: Debezium keeps column types only in its schema part.
SINK_OPTIONS = {"debezium-json": {"schemas_enable": True}}


def _convert(source: str, target: str, records: list[Record], transforms: list[dict] = ()) -> list[Record]:
    chain = Chain(
        get_codec(source), get_codec(target, SINK_OPTIONS.get(target)), build_transforms(transforms), tolerance="none"
    )
    result = chain.process_batch(records)
    result.extend(chain.flush())
    return [Record(value=r.value, key=r.key) for r in result.outputs if r.value is not None]


def _decode(fmt: str, records: list[Record], transforms: list[dict] = ()) -> list[ChangeEvent]:
    codec = get_codec(fmt)
    out = [e for r in records for e in codec.decode(r)] + codec.flush()
    for t in build_transforms(transforms):
        out = t.apply_batch(out)
    return out


def _ticdc_without_catalog(col: Column, v: Any) -> Any:
    """TiCDC's ``mysqlType`` has no parameters; without a schema catalog the decoder keeps
    ENUM/SET values as their index/bitmask text and reads ``bit`` as BIT(64), so a BIT(1)
    value is the int 1, not True (documented in transforms/formats/ticdc_canal_json.py)."""
    t = col.mysql
    if v is None:
        return v
    if t.kind is Kind.ENUM and t.values and isinstance(v, str):
        return str(t.values.index(v) + 1) if v else "0"
    if t.kind is Kind.SET and t.values and isinstance(v, str):
        return str(set_bits_from_labels(t, v))
    if t.kind is Kind.BIT and isinstance(v, bool):
        return int(v)
    return v


#: Value rules of the formats when no schema catalog is given (each documented in its codec).
VALUE_LOSSES: dict[str, Callable[[Column, Any], Any]] = {"ticdc-canal-json": _ticdc_without_catalog}


def declared(events: list[ChangeEvent], *formats: str) -> list[ChangeEvent]:
    """Typed ``events`` as they come back through ``formats``: snapshot reads become
    inserts unless every format carries them; values follow the formats' value rules."""
    reads = all(codec_class(f).capabilities.snapshot_reads for f in formats)
    rules = [VALUE_LOSSES[f] for f in formats if f in VALUE_LOSSES]
    out = []
    for e in events:
        if not e.op.is_row:
            out.append(e)
            continue
        e.typed()
        by_name = e.schema.by_name if e.schema is not None else {}

        def norm(image: dict | None, by_name: dict = by_name) -> dict | None:
            if image is None or not rules:
                return image
            row = {}
            for k, v in image.items():
                col = by_name.get(k)
                for rule in rules if col is not None else ():
                    v = rule(col, v)
                row[k] = v
            return row

        op = Op.INSERT if e.op is Op.READ and not reads else e.op
        out.append(msgspec.structs.replace(e, op=op, before=norm(e.before), after=norm(e.after)))
    return out


def changelog(events: list[ChangeEvent]) -> list[tuple]:
    """Row changes as comparable tuples (typed values), in order."""
    rows = []
    for e in events:
        if e.op.is_row:
            e.typed()
            rows.append((e.op.value, e.source.database, e.source.table, e.before, e.after))
    return rows


@pytest.mark.parametrize("fmt,name,other", CASES)
def test_round_trip_through_another_format_keeps_the_changelog(corpus: Path, fmt: str, name: str, other: str) -> None:
    original = _records(read_messages(corpus / fmt / name))
    transforms = TRANSFORMS.get(name, [])
    there = _convert(fmt, other, original, transforms)
    back = _convert(other, fmt, there)

    source_events = _decode(fmt, original, transforms)
    assert changelog(source_events), f"{name} decodes to no row changes"
    assert changelog(_decode(fmt, back)) == changelog(declared(source_events, fmt, other))
    # replaying the intermediate output rebuilds the input's tables
    assert replay(_decode(other, there)) == replay(declared(_decode(fmt, original, transforms), fmt, other))
