"""Corpus conformance of canal-json and ticdc-canal-json (../shared/corpus).

* Flink's canal files: our decoded changelog, rendered as Flink RowData, equals
  the rows Flink's own test asserts (``*.expected.txt``); the serializer lines
  (``*.expected-serialized.txt``, Flink's canal-json output) decode to the same
  rows.
* Paimon's all-types file: replaying it gives the final table Paimon's test
  asserts, every one of the 75 columns compared in Paimon's notation.
* TiCDC: the cdcfresh goldens (golden_test.go) and the TiCDC doc examples.
* Every message re-encodes to itself (parsed JSON), also after typing its
  values, and regenerated type maps equal the ones Canal/TiCDC wrote.
* Every corpus message and every encoder output validates against the format's
  JSON Schema.
"""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from cdc_smt import schemas
from cdc_smt.transforms.changelog import replay
from cdc_smt.transforms.formats.canal_json import CanalJson
from cdc_smt.transforms.formats.ticdc_canal_json import TicdcCanalJson
from cdc_smt.transforms.model import ChangeEvent, Op, Record
from cdc_smt.transforms.types import Kind, parse_type
from tests.corpus import read_expected, read_messages
from tests.flink_notation import flink_rows, paimon_row

FLINK_FIELDS = [("id", "INT"), ("name", "STRING"), ("description", "STRING"), ("weight", "FLOAT")]
FLINK_FILES = ["flink-canal-data.txt", "flink-canal-data-with-init.txt", "flink-canal-data-filter-table.txt"]
CODECS = {"canal-json": lambda: CanalJson({"batch": "transaction"}), "ticdc-canal-json": TicdcCanalJson}


def _data_files(corpus: Path, fmt: str) -> list[Path]:
    return sorted(p for p in (corpus / fmt).iterdir() if ".expected" not in p.name)


def _decode_file(path: Path, codec: CanalJson) -> list[ChangeEvent]:
    events: list[ChangeEvent] = []
    for raw in read_messages(path):
        events.extend(codec.decode(Record(value=raw)))
    return events


def _all_messages(corpus: Path):
    for fmt in CODECS:
        for path in _data_files(corpus, fmt):
            for raw in read_messages(path):
                yield fmt, path.name, raw


# ---------------------------------------------------------------------------
# Flink
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", FLINK_FILES)
def test_flink_changelog(corpus, name):
    events = _decode_file(corpus / "canal-json" / name, CanalJson())
    if "filter-table" in name:  # the test's database regex ^my.* and table regex ^prod.*
        events = [e for e in events if re.match(r"^my.*", e.database or "") and re.match(r"^prod.*", e.table or "")]
    assert flink_rows(events, FLINK_FIELDS) == read_expected(corpus / "canal-json" / f"{name}.expected.txt")


@pytest.mark.parametrize("name", FLINK_FILES)
def test_flink_serializer_output_decodes_to_the_same_rows(corpus, name):
    # Flink writes UPDATE_BEFORE/DELETE as DELETE and INSERT/UPDATE_AFTER as INSERT, with JSON numbers.
    folder = corpus / "canal-json"
    codec = CanalJson()
    events = _decode_file(folder / f"{name}.expected-serialized.txt", codec)
    validator = schemas.validator("canal-json")
    for raw in read_messages(folder / f"{name}.expected-serialized.txt"):
        validator.validate(orjson.loads(raw))
    expected = [
        ("-D" if line[:2] in ("-U", "-D") else "+I") + line[2:]
        for line in read_expected(folder / f"{name}.expected.txt")
    ]
    assert flink_rows(events, FLINK_FIELDS) == expected


def test_flink_ddl_messages_become_ddl_events(corpus):
    events = _decode_file(corpus / "canal-json" / "flink-canal-data-filter-table.txt", CanalJson())
    ddl = [e for e in events if not e.op.is_row]
    assert [(e.op, e.ddl_kind, e.table) for e in ddl] == [(Op.DDL, "CREATE", "orders"), (Op.DDL, "CREATE", "projects")]
    assert ddl[0].ddl.startswith("CREATE TABLE orders (")


# ---------------------------------------------------------------------------
# Paimon all types
# ---------------------------------------------------------------------------


def paimon_type(mysql_type: str) -> str:
    """Paimon's type for a MySQL column, as far as it changes how the value prints."""
    t = parse_type(mysql_type)
    if t.is_boolean:
        return "BOOLEAN"
    kind = t.kind
    if kind is Kind.FLOAT:
        return "FLOAT" if t.base == "float" else "DOUBLE"
    if kind is Kind.SET:
        return "ARRAY<STRING>"
    return {
        Kind.INT: "BIGINT", Kind.YEAR: "INT", Kind.DECIMAL: "DECIMAL", Kind.DATE: "DATE", Kind.DATETIME: "TIMESTAMP",
        Kind.TIMESTAMP: "TIMESTAMP", Kind.TIME: "TIME", Kind.BYTES: "BYTES", Kind.GEOMETRY: "GEOMETRY",
    }.get(kind, "STRING")  # fmt: skip


def test_paimon_all_types_final_table(corpus):
    path = corpus / "canal-json" / "paimon-canal-alltype-canal-data.txt"
    events = _decode_file(path, CanalJson())
    schema = events[0].schema
    assert len(schema.columns) == 75
    columns = [(c.name, paimon_type(c.type)) for c in schema.columns]
    [table] = replay(events).values()
    rows = [paimon_row(row, columns) for _, row in sorted(table.items())]
    assert rows == read_expected(path.parent / f"{path.name}.expected.txt")


# ---------------------------------------------------------------------------
# TiCDC
# ---------------------------------------------------------------------------


def _one(corpus: Path, name: str) -> ChangeEvent:
    [e] = _decode_file(corpus / "ticdc-canal-json" / name, TicdcCanalJson())
    return e.typed() if e.op.is_row else e


def test_cdcfresh_goldens(corpus):
    # golden_test.go: insert -> {1, dev-a, 10}; update -> old {1, dev-a, 10} / data {1, dev-a, 11};
    # delete -> the removed row is in data; the DDL messages give no row.
    ins = _one(corpus, "cdcfresh-insert.json")
    assert (ins.op, ins.after, ins.pk) == (Op.INSERT, {"id": 1, "device": "dev-a", "value": 10}, ("id",))
    upd = _one(corpus, "cdcfresh-update.json")
    assert (upd.op, upd.before, upd.after, upd.changed) == (
        Op.UPDATE, {"id": 1, "device": "dev-a", "value": 10}, {"id": 1, "device": "dev-a", "value": 11}, ("value",)
    )  # fmt: skip
    dele = _one(corpus, "cdcfresh-delete.json")
    assert (dele.op, dele.before, dele.after) == (Op.DELETE, {"id": 1, "device": "dev-a", "value": 11}, None)
    for name, kind in [("cdcfresh-ddl_create.json", "CREATE"), ("cdcfresh-ddl_query.json", "QUERY")]:
        ddl = _one(corpus, name)
        assert (ddl.op, ddl.ddl_kind, ddl.before, ddl.after, ddl.source.database) == (Op.DDL, kind, None, None, "demo")
    assert replay([ins, upd]) == {("demo", "readings"): {(1,): {"id": 1, "device": "dev-a", "value": 11}}}


def test_ticdc_doc_examples(corpus):
    tso = 429918007904436226
    ddl = _one(corpus, "ticdc-docs-ddl-event.jsonc")
    assert (ddl.op, ddl.ddl, ddl.ddl_kind) == (Op.DDL, "drop database if exists test", "QUERY")
    assert (ddl.source.commit_ts, ddl.source.table) == (tso, None)
    ins = _one(corpus, "ticdc-docs-dml-insert-event.jsonc")
    assert ins.after == {
        "c_bigint": 9223372036854775807, "c_int": 2147483647, "c_mediumint": 8388607, "c_smallint": 32767,
        "c_tinyint": 127, "id": 2,
    }  # fmt: skip
    assert (ins.source.commit_ts, ins.ts_ms, ins.processing_ts_ms, ins.pk) == (
        tso,
        1639633141221,
        1639633142960,
        ("id",),
    )
    mark = _one(corpus, "ticdc-docs-watermark-event.jsonc")
    assert (mark.op, mark.source.commit_ts, mark.ts_ms) == (Op.WATERMARK, tso, 1640007049196)


def test_risingwave_multi_row_messages(corpus):
    events = _decode_file(corpus / "canal-json" / "risingwave-canal_json_double_field.1", CanalJson())
    assert [(e.op, (e.before or {}).get("v1"), (e.after or {}).get("v1")) for e in events] == [
        (Op.INSERT, None, "1"), (Op.INSERT, None, "3"), (Op.INSERT, None, "a"),
        (Op.UPDATE, "1", "5"), (Op.UPDATE, "3", "7"),
        (Op.DELETE, "5", None), (Op.DELETE, "7", None),
    ]  # fmt: skip
    assert all(e.pk == () for e in events)  # no pkNames
    # "a" in an int column decodes (values stay text) but cannot be typed: the error names the column.
    with pytest.raises(ValueError, match="column 'v1' \\(int\\): cannot read 'a'"):
        events[2].typed()
    rest = [e for i, e in enumerate(events) if i != 2]
    assert list(replay(rest).values()) == [{}]  # rows 1 and 3 were updated to 5 and 7, then deleted


# ---------------------------------------------------------------------------
# reproduction and schemas
# ---------------------------------------------------------------------------


def _reencode(fmt: str, raw: bytes, *, typed: bool = False, strip_origin: bool = False) -> list[dict]:
    codec = CODECS[fmt]()
    events = codec.decode(Record(value=raw))
    for e in events:
        if typed:
            e.typed()
        if strip_origin:
            e.origin = None
            e.source.gtid = "uuid:1"  # so rows of one message still batch
    out = [orjson.loads(r.value) for r in codec.encode_batch(events)]
    validator = schemas.validator(fmt)
    for m in out:
        validator.validate(m)
    return out


def test_every_corpus_message_validates(corpus):
    for fmt, name, raw in _all_messages(corpus):
        errors = [e.message for e in schemas.validator(fmt).iter_errors(orjson.loads(raw))]
        assert not errors, (fmt, name, errors)


def test_reencoding_reproduces_every_message(corpus):
    for fmt, name, raw in _all_messages(corpus):
        assert _reencode(fmt, raw) == [orjson.loads(raw)], (fmt, name)


def test_reencoding_typed_values_reproduces_their_text(corpus):
    """Typing then re-encoding gives Canal's/TiCDC's own text (Java floats, fsp digits,
    enum index, set bitmask, ISO-8859-1 binary and geometry ...)."""
    checked = 0
    for fmt, name, raw in _all_messages(corpus):
        try:
            out = _reencode(fmt, raw, typed=True)
        except ValueError as exc:  # 'A101' in an int column (Flink filter file), 'a' (RisingWave)
            assert "cannot read" in str(exc), (name, exc)
            continue
        assert out == [orjson.loads(raw)], (fmt, name)
        checked += 1
    assert checked >= 40


def test_regenerated_type_maps_equal_the_written_ones(corpus):
    """mysqlType/sqlType computed from the schema and values (not copied from the message)
    equal what Canal and TiCDC wrote, including Canal's NULL-dependent codes."""
    for fmt, name, raw in _all_messages(corpus):
        orig = orjson.loads(raw)
        if not orig.get("data"):
            continue
        [out] = _reencode(fmt, raw, strip_origin=True)
        assert (out["sqlType"], out["mysqlType"]) == (orig["sqlType"], orig["mysqlType"]), (fmt, name)
        assert out["data"] == orig["data"] and out["old"] == (orig["old"] or None), (fmt, name)
