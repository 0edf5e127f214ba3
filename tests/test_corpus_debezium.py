"""debezium-json against real messages in ``../shared/corpus/debezium-json``.

* Flink's MySQL and Postgres samples (with and without the schema part) decode
  to the changelog Flink's own test asserts (``.expected.txt``), and the lines
  Flink's serializer writes for them (``.expected-serialized.txt``) decode to
  the same rows.
* Postgres without REPLICA IDENTITY FULL: Flink rejects the UPDATE whose
  ``before`` is null; we decode it as an update with an unknown before-image.
* Paimon's all-types sample (Flink CDC's Debezium JSON) gives Paimon's
  expected final table.
* Re-encoding any message with the same settings reproduces it, and every
  message (and every encoder output) validates against the JSON Schema.
"""

from __future__ import annotations

import datetime as dt
from decimal import Context, Decimal
from pathlib import Path

import msgspec
import orjson
import pytest

from cdc_smt.schemas import validator
from cdc_smt.transforms.catalog import SchemaCatalog
from cdc_smt.transforms.changelog import replay
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import Column, Op, Record, TableSchema
from tests.corpus import read_expected, read_messages, strip_comments
from tests.flink_notation import flink_rows, paimon_row

NAME = "debezium-json"
FLINK_FIELDS = [("id", "INT"), ("name", "STRING"), ("description", "STRING"), ("weight", "FLOAT")]
FLINK_FILES = [
    "flink-debezium-data-schema-include.txt",
    "flink-debezium-data-schema-exclude.txt",
    "flink-debezium-postgres-data-schema-include.txt",
    "flink-debezium-postgres-data-schema-exclude.txt",
]
PAIMON = "paimon-debezium-alltype-debezium-data-1.txt"
#: Decimals as exact numbers (``read_messages`` re-serialises with orjson, which rounds big JSON numbers).
EXACT = msgspec.json.Decoder(float_hook=Decimal)


def data_dir(corpus: Path) -> Path:
    return corpus / NAME


def raw_messages(path: Path) -> list[bytes]:
    """The messages of a JSON-Lines corpus file, byte for byte (license header removed)."""
    text = strip_comments(path.read_text(encoding="utf-8"))
    return [line.strip().encode() for line in text.splitlines() if line.strip()]


def decode_all(messages: list[bytes], catalog=None, **opts) -> list:
    dec = get_codec(NAME, opts, catalog=catalog)
    out = []
    for m in messages:
        out.extend(dec.decode(Record(value=m)))
    return out


def all_files(corpus: Path) -> list[Path]:
    return sorted(p for p in data_dir(corpus).iterdir() if ".expected" not in p.name)


@pytest.mark.parametrize("name", FLINK_FILES)
def test_flink_changelog(corpus, name):
    path = data_dir(corpus) / name
    events = decode_all(read_messages(path))
    assert flink_rows(events, FLINK_FIELDS) == read_expected(path.with_name(name + ".expected.txt"))


@pytest.mark.parametrize("name", FLINK_FILES)
def test_flink_serializer_output_decodes_to_the_same_rows(corpus, name):
    # Flink writes -U/-D as op "d" and +I/+U as op "c", without source or ts_ms.
    path = data_dir(corpus) / name
    lines = read_messages(path.with_name(name + ".expected-serialized.txt"))
    events = decode_all(lines)
    expected = read_expected(path.with_name(name + ".expected.txt"))
    assert [e.op for e in events] == [Op.DELETE if line[:2] in ("-U", "-D") else Op.INSERT for line in expected]
    rendered = [line[2:] for line in flink_rows(events, FLINK_FIELDS)]
    assert rendered == [line[2:] for line in expected]


def test_flink_schema_include_and_exclude_decode_alike(corpus):
    # Without the schema part the types come from the catalog (Flink is given the physical schema too).
    d = data_dir(corpus)
    products = TableSchema(
        columns=(
            Column("id", "int", nullable=False),
            Column("name", "varchar", nullable=False),
            Column("description", "varchar"),
            Column("weight", "double"),
        )
    )
    catalog = SchemaCatalog()
    catalog.put("inventory", "products", products)
    catalog.put("postgres", "products", products)
    for include, exclude in (FLINK_FILES[0:2], FLINK_FILES[2:4]):
        a = decode_all(read_messages(d / include))
        b = decode_all(read_messages(d / exclude), catalog=catalog)
        assert [(e.op, e.source, e.ts_ms) for e in a] == [(e.op, e.source, e.ts_ms) for e in b]
        assert replay(a) == replay(b)


def test_mysql_source_block(corpus):
    (first, *_) = decode_all(read_messages(data_dir(corpus) / FLINK_FILES[0]))
    s = first.source
    assert (s.db_type, s.database, s.table, s.server_id, s.binlog_file, s.binlog_pos) == (
        "mysql",
        "inventory",
        "products",
        0,
        "mysql-bin.000003",
        154,
    )
    assert first.op is Op.INSERT and first.processing_ts_ms == 1589355606100
    assert first.schema.names == ("id", "name", "description", "weight")
    assert [c.type for c in first.schema.columns] == ["int", "varchar", "varchar", "double"]
    assert [c.nullable for c in first.schema.columns] == [False, False, True, True]


def test_postgres_replica_identity_update_without_before(corpus):
    path = data_dir(corpus) / "flink-debezium-postgres-data-replica-identity.txt"
    flink_error = read_expected(path.with_name(path.name + ".expected.txt"))[0]
    assert 'The "before" field of UPDATE message is null' in flink_error  # Flink stops here; we do not
    events = decode_all(read_messages(path))
    updates = [e for e in events if e.op is Op.UPDATE]
    assert [e.after["id"] for e in updates] == [106, 107, 110, 111]
    assert all(e.before is None for e in updates)
    (delete,) = [e for e in events if e.op is Op.DELETE]
    assert delete.before is None and delete.partial  # no before image and no key: the row is unknown
    assert (
        updates[0].source.db_type == "postgres"
        and updates[0].source.schema == "inventory"
        and updates[0].source.txid == "602"
    )
    # Replaying still yields the final rows the updates carry.
    rows = replay(events)[("postgres", "products")]
    assert {r["id"]: r["description"] for r in rows.values()}[110] == "new water resistent white wind breaker"


def test_risingwave_postgres_temporals(corpus):
    (e,) = decode_all(read_messages(data_dir(corpus) / "risingwave-debezium_timestamp.1"))
    after = e.typed().after
    assert after["ts"] == dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=1665791731989360)
    assert after["ts"] == dt.datetime(2022, 10, 14, 23, 55, 31, 989360)
    assert after["d"] == dt.date(1970, 1, 1) + dt.timedelta(days=19279)
    assert after["t"] == dt.timedelta(microseconds=86131989360)
    assert [c.type for c in e.schema.columns] == ["bigint", "datetime(6)", "date", "time(6)"]
    assert (e.op, e.source.db_type, e.source.schema, e.source.txid) == (Op.READ, "postgres", "public", "4499")


# Paimon's RowType for the all-types table (KafkaSyncTableActionITCase.testAllTypesWithSchemaImpl).
PAIMON_COLUMNS = (
    [("_id", "INT"), ("pt", "DECIMAL"), ("_bit1", "BOOLEAN"), ("_bit", "BINARY")]
    + [
        (c, "SMALLINT")
        for c in (
            "_tinyint1",
            "_boolean",
            "_bool",
            "_tinyint",
            "_tinyint_unsigned",
            "_tinyint_unsigned_zerofill",
            "_smallint",
        )
    ]
    + [
        (c, "INT")
        for c in (
            "_smallint_unsigned",
            "_smallint_unsigned_zerofill",
            "_mediumint",
            "_mediumint_unsigned",
            "_mediumint_unsigned_zerofill",
            "_int",
        )
    ]
    + [(c, "BIGINT") for c in ("_int_unsigned", "_int_unsigned_zerofill", "_bigint")]
    + [(c, "DECIMAL") for c in ("_bigint_unsigned", "_bigint_unsigned_zerofill", "_serial")]
    + [
        (f"_{b}{s}", "DOUBLE")
        for b in ("float", "real", "double", "double_precision")
        for s in ("", "_unsigned", "_unsigned_zerofill")
    ]
    + [
        (f"_{b}{s}", "DECIMAL")
        for b in ("numeric", "fixed", "decimal")
        for s in ("", "_unsigned", "_unsigned_zerofill")
    ]
    + [("_big_decimal", "DECIMAL"), ("_date", "DATE")]
    + [
        (c, "TIMESTAMP")
        for c in ("_datetime", "_datetime3", "_datetime6", "_datetime_p", "_datetime_p2", "_timestamp", "_timestamp0")
    ]
    + [(c, "STRING") for c in ("_char", "_varchar", "_tinytext", "_text", "_mediumtext", "_longtext")]
    + [(c, "BYTES") for c in ("_bin", "_varbin", "_tinyblob", "_blob", "_mediumblob", "_longblob")]
    + [("_json", "STRING"), ("_enum", "STRING"), ("_year", "INT"), ("_time", "TIME")]
    + [
        (c, "GEOMETRY")
        for c in (
            "_point",
            "_geometry",
            "_linestring",
            "_polygon",
            "_multipoint",
            "_multiline",
            "_multipolygon",
            "_geometrycollection",
        )
    ]
    + [("_set", "STRING")]
)


def test_paimon_all_types_final_table(corpus):
    path = data_dir(corpus) / PAIMON
    events = decode_all(raw_messages(path))
    (row,) = replay(events)[("paimon_sync_table", "all_types_table")].values()
    row = dict(row)
    row["_bit"] = row["_bit"].to_bytes(8, "big")  # BIT(64) -> Paimon BINARY(8), most significant byte first
    for c in ("_fixed", "_fixed_unsigned", "_fixed_unsigned_zerofill"):
        # DECIMAL(40,3) is beyond Paimon's 38 digits: Paimon keeps the JSON number as text, without the trailing 0.
        row[c] = row[c].normalize(Context(prec=100))
    (expected,) = read_expected(path.with_name(PAIMON + ".expected.txt"))
    assert paimon_row(row, PAIMON_COLUMNS) == expected


def test_paimon_exact_decimals_and_types(corpus):
    (e,) = decode_all(raw_messages(data_dir(corpus) / PAIMON))
    after = e.typed().after
    assert after["_fixed"] == Decimal("123456789876543212345678987654321.110")
    assert after["_big_decimal"] == Decimal("2222222222222222300000001111.1234567890")
    assert after["_bigint_unsigned"] == 20000000000 and isinstance(after["_bigint_unsigned"], int)
    assert after["_bit"] == 0b11111000111
    by_name = e.schema.by_name
    assert by_name["_bigint_unsigned"].type == "bigint unsigned"
    assert by_name["_fixed"].type == "decimal(40,3)"
    assert by_name["_enum"].type == "enum('value1','value2','value3')"
    assert by_name["_set"].type == "set('a','b','c','d')"
    assert by_name["_bit"].type == "bit(64)"


def _reencode_options(message: bytes, path: Path) -> dict:
    opts = {"schemas_enable": message.startswith(b'{"schema"'), "tombstones_on_delete": False}
    if path.name == PAIMON:  # Flink CDC writes decimals as JSON numbers and BIGINT UNSIGNED as Decimal
        opts.update(decimal_format="numeric", bigint_unsigned_handling_mode="precise")
    return opts


def test_reencoding_reproduces_every_message(corpus):
    for path in all_files(corpus):
        messages = raw_messages(path) if path.name == PAIMON else read_messages(path)
        dec = get_codec(NAME)
        for m in messages:
            (event,) = dec.decode(Record(value=m))
            (out,) = get_codec(NAME, _reencode_options(m, path)).encode(event)
            assert EXACT.decode(out.value) == EXACT.decode(m), path.name


def test_reencoding_after_typing_reproduces_values(corpus):
    # Same, but with values typed first (as after a transform): converted back, not passed through.
    for path in all_files(corpus):
        messages = raw_messages(path) if path.name == PAIMON else read_messages(path)
        for m in messages:
            (event,) = get_codec(NAME).decode(Record(value=m))
            event.typed()
            (out,) = get_codec(NAME, _reencode_options(m, path)).encode(event)
            assert EXACT.decode(out.value) == EXACT.decode(m), path.name


def test_corpus_and_outputs_validate_against_json_schema(corpus):
    check = validator(NAME)
    for path in all_files(corpus):
        for m in read_messages(path):
            check.validate(orjson.loads(m))
            for e in get_codec(NAME).decode(Record(value=m)):
                for opts in ({}, {"schemas_enable": True}):
                    for r in get_codec(NAME, opts).encode(e):
                        if r.value is not None:
                            check.validate(orjson.loads(r.value))


def test_canal_corpus_fails_the_json_schema(corpus):
    check = validator(NAME)
    canal = sorted(p for p in (corpus / "canal-json").iterdir() if ".expected" not in p.name)
    assert canal
    for path in canal:
        for m in read_messages(path):
            assert not check.is_valid(orjson.loads(m)), path.name
