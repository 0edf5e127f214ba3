"""Apache Flink reads our output: the reference consumer of the four formats it knows.

Optional suite (``./dev flink``): skipped when PyFlink is not installed. For
every Flink corpus file and every Flink-readable target format, we convert the
file with cdc-smt and let Flink's own ``canal-json`` / ``debezium-json`` /
``maxwell-json`` / ``ogg-json`` format read both the original and our output
through the filesystem connector; both must rebuild the same table. A
generated workload with richer types checks the same for values Flink types
itself (DECIMAL, TIMESTAMP, DATE, BIGINT).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest

pytest.importorskip("pyflink", reason="PyFlink not installed (pip install -e '.[flink]' or ./dev flink)")

from cdc_smt.transforms.chain import Chain  # noqa: E402
from cdc_smt.transforms.formats import get_codec, registry  # noqa: E402
from cdc_smt.transforms.model import ChangeEvent, Column, Op, Record, SourcePosition, TableSchema  # noqa: E402

pytestmark = pytest.mark.flink

FLINK_FORMATS = ("canal-json", "debezium-json", "maxwell-json", "ogg-json")
CORPUS_FILES = {
    "canal-json": "canal-json/flink-canal-data.txt",
    "debezium-json": "debezium-json/flink-debezium-data-schema-exclude.txt",
    "maxwell-json": "maxwell-json/flink-maxwell-data.txt",
    "ogg-json": "ogg-json/flink-ogg-data.txt",
}
PRODUCTS = "id INT NOT NULL, name STRING, description STRING, weight FLOAT"


@pytest.fixture(scope="module")
def flink():
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    env.get_config().set("parallelism.default", "1")
    return env


_counter = iter(range(1_000_000))


def flink_table(
    env, path: Path, fmt: str, columns: str, key_index: int = 0, with_options: dict | None = None, select: str = "*"
) -> dict:
    """Final table state Flink rebuilds from the changelog file ``path`` in ``fmt``."""
    from pyflink.common import RowKind

    name = f"t{next(_counter)}"
    extra = "".join(f",'{k}'='{v}'" for k, v in (with_options or {}).items())
    env.execute_sql(
        f"CREATE TEMPORARY TABLE {name} ({columns}) WITH "
        f"('connector'='filesystem','path'='{path}','format'='{fmt}'{extra})"
    )
    state: dict = {}
    with env.execute_sql(f"SELECT {select} FROM {name}").collect() as rows:
        for row in rows:
            values = tuple(row)
            kind = row.get_row_kind()
            if kind in (RowKind.INSERT, RowKind.UPDATE_AFTER):
                state[values[key_index]] = values
            else:
                state.pop(values[key_index], None)
    return state


def convert_file(src: Path, dst: Path, source: str, target: str) -> int:
    chain = Chain(get_codec(source), get_codec(target), tolerance="none")
    lines = [line for line in src.read_bytes().splitlines() if line.strip()]
    result = chain.process_batch(Record(value=line) for line in lines)
    result.extend(chain.flush())
    # What a host writes to the data topic: records an encoder addressed to
    # another topic (Debezium's schema-change topic) and tombstones stay out.
    data = [r.value for r in result.outputs if r.value is not None and r.topic is None]
    dst.write_bytes(b"".join(v + b"\n" for v in data))
    return len(data)


@pytest.mark.parametrize("target", FLINK_FORMATS)
@pytest.mark.parametrize("source", FLINK_FORMATS)
def test_flink_rebuilds_corpus_tables_from_our_output(flink, corpus, tmp_path, source, target):
    missing = [f for f in (source, target) if f not in registry()]
    if missing:
        pytest.skip(f"format not available: {missing}")
    original = corpus / CORPUS_FILES[source]
    ours = tmp_path / f"{source}-to-{target}.json"
    assert convert_file(original, ours, source, target) > 0
    expected = flink_table(flink, original, source, PRODUCTS)
    assert expected, "Flink read nothing from the original"
    assert flink_table(flink, ours, target, PRODUCTS) == expected


SCHEMA = TableSchema(
    columns=(
        Column("id", "bigint", nullable=False, primary_key=True),
        Column("price", "decimal(12,2)"),
        Column("created", "timestamp(3)"),
        Column("day", "date"),
        Column("label", "varchar(64)"),
    ),
    primary_key=("id",),
)
FLINK_COLUMNS = "id BIGINT NOT NULL, price DECIMAL(12,2), created TIMESTAMP(3), `day` DATE, label STRING"


def workload() -> list[ChangeEvent]:
    src = SourcePosition(db_type="mysql", database="shop", table="orders")

    def ev(op, before, after):
        return ChangeEvent(
            op=op, source=src, before=before, after=after, schema=SCHEMA, pk=("id",), ts_ms=1_700_000_000_000
        )

    def row(i, price, label):
        return {
            "id": i,
            "price": Decimal(price),
            "created": dt.datetime(2024, 2, 29, 23, 59, 59, 123000),
            "day": dt.date(2024, 2, 29),
            "label": label,
        }

    r1, r2, r3 = row(1, "10.50", "first"), row(2, "99999999.99", "数据 🎉"), row(3, "-0.01", None)
    r1b = dict(r1, price=Decimal("11.00"), label="first, repriced")
    return [
        ev(Op.INSERT, None, r1),
        ev(Op.INSERT, None, r2),
        ev(Op.INSERT, None, r3),
        ev(Op.UPDATE, r1, r1b),
        ev(Op.DELETE, r3, None),
    ]


#: How a Flink user declares the typed table for each format, and what our
#: encoder needs for Flink: Debezium's precise decimals are base64 bytes Flink
#: cannot read (use decimal_handling_mode=string), its TIMESTAMP is an ISO-8601
#: instant (TIMESTAMP_LTZ) and its DATE is epoch days (INT).
TYPED = {
    "canal-json": ({}, FLINK_COLUMNS, {}, "*"),
    "maxwell-json": ({}, FLINK_COLUMNS, {}, "*"),
    "ogg-json": ({}, FLINK_COLUMNS, {}, "*"),
    "debezium-json": (
        {"decimal_handling_mode": "string"},
        "id BIGINT NOT NULL, price DECIMAL(12,2), created TIMESTAMP_LTZ(3), `day` INT, label STRING",
        {"debezium-json.timestamp-format.standard": "ISO-8601"},
        # PyFlink cannot hand TIMESTAMP_LTZ values to Python: read them as session-zone (UTC) wall clock
        "id, price, CAST(created AS TIMESTAMP(3)), `day`, label",
    ),
}
DAY = dt.date(2024, 2, 29)


@pytest.mark.parametrize("target", FLINK_FORMATS)
def test_flink_reads_typed_values_we_write(flink, tmp_path, target):
    if target not in registry():
        pytest.skip(f"format not available: {target}")
    sink_options, columns, with_options, select = TYPED[target]
    codec = get_codec(target, sink_options)
    path = tmp_path / f"orders.{target}.json"
    out = [r.value for e in workload() for r in codec.encode(e) if r.value is not None and r.topic is None]
    path.write_bytes(b"".join(v + b"\n" for v in out))
    flink.get_config().set("table.local-time-zone", "UTC")
    got = flink_table(flink, path, target, columns, with_options=with_options, select=select)
    day = (DAY - dt.date(1970, 1, 1)).days if target == "debezium-json" else DAY
    created = dt.datetime(2024, 2, 29, 23, 59, 59, 123000)
    assert got == {
        1: (1, Decimal("11.00"), created, day, "first, repriced"),
        2: (2, Decimal("99999999.99"), created, day, "数据 🎉"),
    }
