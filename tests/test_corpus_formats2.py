"""Corpus conformance: dataworks-json (Paimon's facts), maxwell-json and ogg-json (Flink's
changelogs), the DTS Avro schema, schema validation and same-format reproduction."""

from __future__ import annotations

import io
import json
from pathlib import Path

import fastavro
import orjson
import pytest
from fastavro.schema import to_parsing_canonical_form

from cdc_smt import schemas
from cdc_smt.transforms.changelog import replay
from cdc_smt.transforms.errors import DecodeError
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import ChangeEvent, Column, Op, Record, SourcePosition, TableSchema
from tests.corpus import read_expected, read_messages
from tests.flink_notation import flink_rows

#: The physical schema of Flink's maxwell/ogg tests (SOURCES.md).
FLINK_FIELDS = [("id", "INT"), ("name", "STRING"), ("description", "STRING"), ("weight", "FLOAT")]
MINE = ("dataworks-json", "maxwell-json", "ogg-json")


def data_files(corpus: Path, fmt: str) -> list[Path]:
    return sorted(p for p in (corpus / fmt).iterdir() if not p.name.endswith(".expected.txt"))


def decode_all(fmt: str, messages: list[bytes]) -> list[ChangeEvent]:
    c = get_codec(fmt)
    events = [e for m in messages for e in c.decode(Record(value=m))]
    return events + c.flush()


# -- dataworks-json: the facts Paimon's AliyunJsonRecordParserTest asserts -----------------

_ROW_KIND = {"INSERT": Op.INSERT, "UPDATE_AFTER": Op.UPDATE, "DELETE": Op.DELETE}


def _facts(path: Path) -> dict[str, str]:
    lines = [line for line in read_expected(path) if not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


@pytest.mark.parametrize("name", ["insert", "update-in-one", "delete"])
def test_dataworks_paimon_facts(corpus, name):
    data = corpus / "dataworks-json" / f"paimon-aliyun-event-{name}.txt"
    facts = _facts(data.with_name(data.name + ".expected.txt"))
    events = decode_all("dataworks-json", read_messages(data))
    assert len(events) == int(facts["records"])
    (e,) = events
    assert e.op is _ROW_KIND[facts["rowKind"].split()[0]]
    assert (e.database, e.table) == (facts["database"], facts["table"])
    assert list(e.pk) == facts["primaryKeys"].strip("[]").split(", ")
    # +U is the after row (Paimon emits only it for a one-record update); -D the before row
    image = e.before if e.op is Op.DELETE else e.after
    assert image is not None and image["id"] in (1, 2)


def test_dataworks_values(corpus):
    """DOUBLE written as text keeps its digits; DATE is epoch ms shown in source_timezone."""
    import datetime as dt
    from decimal import Decimal

    (msg,) = read_messages(corpus / "dataworks-json" / "paimon-aliyun-event-update-in-one.txt")
    c = get_codec("dataworks-json", {"source_timezone": "Asia/Shanghai"})
    (e,) = c.decode(Record(value=msg))
    e.typed()
    assert e.before["val"] == Decimal("1.100000") and e.after["val"] == Decimal("2.200000")
    assert e.after["create_time"] == dt.datetime(2024, 11, 15, 16, 58, 34)  # 1731661114000 ms in +08:00


# -- maxwell-json / ogg-json: Flink's expected changelogs ---------------------------------


@pytest.mark.parametrize("fmt, name", [("maxwell-json", "flink-maxwell-data.txt"), ("ogg-json", "flink-ogg-data.txt")])
def test_flink_changelog(corpus, fmt, name):
    data = corpus / fmt / name
    events = decode_all(fmt, read_messages(data))
    assert flink_rows(events, FLINK_FIELDS) == read_expected(data.with_name(name + ".expected.txt"))


def _final_rows(events: list[ChangeEvent]) -> list[dict]:
    tables = replay(events)
    rows = [row for table in tables.values() for row in table.values()]
    return sorted(rows, key=lambda r: r["id"])


@pytest.mark.parametrize("fmt, name", [("maxwell-json", "flink-maxwell-data.txt"), ("ogg-json", "flink-ogg-data.txt")])
def test_flink_serializer_output_decodes_to_the_same_table(corpus, fmt, name):
    """Flink writes -U/+U as delete + insert: replaying those lines gives the same final table."""
    data = corpus / fmt / name
    serialized = read_messages(data.with_name(name + ".expected-serialized.txt"))
    ours = _final_rows(decode_all(fmt, read_messages(data)))
    flinks = _final_rows(decode_all(fmt, serialized))
    normalize = lambda rows: [dict(r, weight=round(float(r["weight"]), 5)) for r in rows]  # noqa: E731 - FLOAT vs double digits
    assert normalize(flinks) == normalize(ours)


def test_maxwell_update_with_old_columns_missing_from_data(corpus):
    (msg,) = read_messages(corpus / "maxwell-json" / "maxwell-test-user-update.json")
    (e,) = get_codec("maxwell-json").decode(Record(value=msg))
    assert e.after["FirstName"] == "Fiz" and e.before["FirstName"] == "Foo"
    assert e.before["backup_date"] == "2017-02-08 02:00:05" and "backup_date" not in e.after


def test_maxwell_encrypted_message_is_a_clear_error(corpus):
    (msg,) = read_messages(corpus / "maxwell-json" / "maxwell-test-encrypted-user-insert.json")
    with pytest.raises(DecodeError, match="encrypted"):
        get_codec("maxwell-json").decode(Record(value=msg))


def test_maxwell_ddl_documents(corpus):
    (create,) = decode_all(
        "maxwell-json", read_messages(corpus / "maxwell-json" / "maxwell-docs-dataformat-table-create.json")
    )
    assert create.op is Op.DDL and create.ddl_kind == "table-create"
    assert [(c.name, c.type) for c in create.schema.columns] == [
        ("id", "int"),
        ("m", "double"),
        ("c", "timestamp(6)"),
        ("comment", "varchar"),
    ]
    (alter,) = decode_all(
        "maxwell-json", read_messages(corpus / "maxwell-json" / "maxwell-docs-dataformat-table-alter.json")
    )
    assert alter.schema.column("torvalds").type == "bigint unsigned"


# -- same-format reproduction and schema validation ---------------------------------------


def _corpus_messages(corpus: Path, fmt: str):
    for path in data_files(corpus, fmt):
        for i, msg in enumerate(read_messages(path)):
            yield f"{path.name}#{i + 1}", msg


@pytest.mark.parametrize("fmt", MINE)
def test_reencoding_reproduces_every_corpus_message(corpus, fmt):
    checked = 0
    for where, msg in _corpus_messages(corpus, fmt):
        if b'"encrypted"' in msg:
            continue  # cannot be decoded without Maxwell's key (tested above)
        c = get_codec(fmt)
        events = c.decode(Record(value=msg)) + c.flush()
        out = [r.value for e in events for r in c.encode(e)]
        assert out == [msg], where
        if where in BEYOND_DOUBLE:  # read through a double, these would come back rounded
            assert out != [orjson.dumps(orjson.loads(msg))], where
        checked += 1
    assert checked


#: Corpus messages with a bare JSON number beyond double precision (4500000001.512456777).
BEYOND_DOUBLE = {"maxwell-test-user-insert.json#1", "maxwell-test-user-update.json#1"}


@pytest.mark.parametrize("fmt", MINE)
def test_corpus_messages_validate_against_the_schema(corpus, fmt):
    validate = schemas.validator(fmt).validate
    for _where, msg in _corpus_messages(corpus, fmt):
        validate(orjson.loads(msg))  # includes Flink's serializer output and Maxwell's encrypted form


def _other_messages(corpus: Path, fmt: str):
    for d in sorted(p for p in corpus.iterdir() if p.is_dir() and p.name not in (fmt, "dts-avro")):
        for path in sorted(d.iterdir()):
            if path.name.endswith(".expected.txt"):
                continue
            try:
                messages = read_messages(path)
            except ValueError:  # a corpus sample that is not strict JSON
                continue  # documentation blocks with non-JSON comments
            for i, msg in enumerate(messages):
                yield f"{d.name}/{path.name}#{i + 1}", orjson.loads(msg)


@pytest.mark.parametrize("fmt", MINE)
def test_schema_rejects_other_formats(corpus, fmt):
    validator = schemas.validator(fmt)
    accepted = [where for where, obj in _other_messages(corpus, fmt) if validator.is_valid(obj)]
    assert accepted == []


# -- DTS Avro schema ----------------------------------------------------------------------

NS = "com.alibaba.dts.formats.avro"


def _inline_first_use(types: list[dict], root: str) -> dict:
    """One schema from DTS's list of named types: each type defined where first used."""
    named = {f"{t.get('namespace', NS)}.{t['name']}": t for t in types}
    seen: set[str] = set()

    def walk(node, ns):
        if isinstance(node, str):
            full = node if "." in node else f"{ns}.{node}"
            if full in named and full not in seen:
                return walk(named[full], ns)
            return node
        if isinstance(node, list):
            return [walk(n, ns) for n in node]
        kind = node.get("type")
        if kind in ("record", "enum", "fixed"):
            inner = node.get("namespace", ns)
            seen.add(f"{inner}.{node['name']}")
            if kind == "record":
                return dict(node, fields=[dict(f, type=walk(f["type"], inner)) for f in node["fields"]])
            return node
        if kind == "array":
            return dict(node, items=walk(node["items"], ns))
        if kind == "map":
            return dict(node, values=walk(node["values"], ns))
        if isinstance(kind, (dict, list)):
            return dict(node, type=walk(kind, ns))
        return node

    return walk(named[root], NS)


@pytest.fixture(scope="module")
def corpus_record_schema(corpus) -> dict:
    return _inline_first_use(json.loads((corpus / "dts-avro" / "Record.avsc").read_text()), f"{NS}.Record")


def test_dts_schema_has_the_corpus_parsing_canonical_form(corpus_record_schema):
    assert to_parsing_canonical_form(schemas.load_avro("dts-avro")) == to_parsing_canonical_form(corpus_record_schema)


def _sample_event() -> ChangeEvent:
    import datetime as dt
    from decimal import Decimal

    schema = TableSchema(
        (
            Column("id", "int", False, True),
            Column("name", "varchar(10)"),
            Column("price", "decimal(5,2)"),
            Column("at", "datetime(3)"),
            Column("blob", "blob"),
        ),
        ("id",),
    )
    row = {
        "id": 1,
        "name": "x",
        "price": Decimal("1.25"),
        "at": dt.datetime(2020, 1, 2, 3, 4, 5, 678000),
        "blob": b"\x00",
    }
    return ChangeEvent(
        op=Op.UPDATE,
        source=SourcePosition(database="d", table="t"),
        before=row,
        after=dict(row, name=None),
        schema=schema,
        pk=("id",),
        ts_ms=1_600_000_000_000,
    )


def test_dts_records_resolve_both_ways_with_the_corpus_schema(corpus_record_schema):
    corpus_schema = fastavro.parse_schema(corpus_record_schema)
    ours = fastavro.parse_schema(schemas.load_avro("dts-avro"))
    (r,) = get_codec("dts-avro").encode(_sample_event())
    as_corpus = fastavro.schemaless_reader(io.BytesIO(r.value), corpus_schema, ours, True)
    assert as_corpus == fastavro.schemaless_reader(io.BytesIO(r.value), ours, None, True)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, corpus_schema, as_corpus)
    (e,) = get_codec("dts-avro").decode(Record(value=buf.getvalue()))
    assert e.typed().before == _sample_event().before


def test_dts_records_of_the_official_sdk_schema_decode(corpus):
    """The SDK's generated schema stops after afterImages (no bornTimestamp)."""
    sdk = fastavro.parse_schema(
        json.loads((corpus / "dts-avro" / "Record.aliyun-dts-subscribe-sdk-java.schema.json").read_text())
    )
    c = get_codec("dts-avro")
    (full,) = c.encode(_sample_event())
    obj = fastavro.schemaless_reader(
        io.BytesIO(full.value), fastavro.parse_schema(schemas.load_avro("dts-avro")), None, True
    )
    del obj["bornTimestamp"]
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, sdk, obj)
    written = buf.getvalue()
    (e,) = c.decode(Record(value=written))
    assert e.typed().after == _sample_event().after
    assert e.ts_ms == 1_600_000_000_000
    (again,) = c.decode(Record(value=written))
    (out,) = c.encode(again)
    assert out.value == written  # re-encoded in the short form it came in
    assert fastavro.schemaless_reader(io.BytesIO(out.value), sdk)["operation"] == "UPDATE"
