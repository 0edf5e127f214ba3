"""The native DTS Avro reader against the Python path: byte for byte.

dts-avro -> debezium-json and -> canal-json: the reader reads the Avro ``Record`` by
hand, types the columns from their MySQL type codes refined by the values as the Python
decoder does without a catalog, and hands each value to the Debezium or Canal writer as
the Canal text its conversion reads. Inputs: hypothesis streams (every MySQL type, written by the Python
DTS Avro encoder), hand-made records (every union branch, zero dates, partial images,
DDL, heartbeats and the other operations), the corpus's DTS files, malformed records
(truncated, wrong union branch, bad enum symbol, trailing bytes) and mutated ones, the
transforms the plan takes. Outputs (values, keys, topics, headers) and dead letters
must be equal, and the plan must handle the regular records itself.

DTS records carry no processing time, so the Canal encoder writes the current time as
``ts`` on both paths: the comparisons check that it lies within the run and then compare
the rest byte for byte.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt.transforms import native
from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.config import build_transforms
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.formats.dts_avro import _NS, write_record
from cdc_smt.transforms.model import ChangeEvent, Record
from tests.strategies import change_streams
from tests.test_native import NATIVE_SUITE, ZONES, corpus_files, records_of
from tests.test_native_maxwell_in import assert_timed_agreement

pytestmark = NATIVE_SUITE

#: The writers and their options.
MODES = {
    "time_precision_mode": "connect",
    "decimal_handling_mode": "string",
    "bigint_unsigned_handling_mode": "precise",
}
WRITERS: list[tuple[str, dict[str, Any]]] = [
    ("debezium-json", {}),
    ("debezium-json", {"schemas_enable": True, "tombstones_on_delete": False}),
    ("debezium-json", MODES),
    ("canal-json", {}),
]
WRITER_IDS = ["debezium", "debezium-schemas", "debezium-modes", "canal"]
#: The plan of each writer.
PLANS = {"debezium-json": native.DTS_TO_DEBEZIUM, "canal-json": native.DTS_TO_CANAL}

#: Transforms over the hand-made table's columns (id, v, i, f, d): those both plans take
#: (the first three: they keep rows as they are), those the Debezium plan takes, and one
#: neither takes.
TAKEN: list[list[dict[str, Any]]] = [
    [{"type": "filter", "tables": [r"shop\.t"], "exclude_ops": ["delete"]}],
    [{"type": "route", "topic": "cdc.{database}.{table}.{op}"}],
    [
        {"type": "insert_header", "header": "table", "value": "{database}.{table}", "replace": True},
        {"type": "drop_headers", "headers": ["h"]},
    ],
    [{"type": "replace_field", "exclude": ["f"], "renames": {"id": "key_id"}}],
    [{"type": "mask_field", "fields": ["v"], "mode": "hash", "salt": "pepper"}],
    [{"type": "insert_field", "static": {"_s": "east"}, "metadata": {"_es": "source_ts_ms"}}],
    [{"type": "value_to_key", "fields": ["i"]}],
    [{"type": "replace_field", "exclude": ["nope"]}],  # a column the table lacks: Python's
]
PYTHON_ONLY: list[dict[str, Any]] = [{"type": "filter", "condition": "after.i > 1"}]


KEEPING = TAKEN[:3]


def make_chain(
    source: dict[str, Any], sink: dict[str, Any], transforms: list[dict[str, Any]], encoder: str = "debezium-json"
) -> Chain:
    return Chain(get_codec("dts-avro", source), get_codec(encoder, sink), build_transforms(transforms), "all")


def assert_same(
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
    encoder: str = "debezium-json",
) -> int:
    """Both paths give the same records, dead letters and missing-column counts; returns
    how many records the plan handled itself."""
    fast = make_chain(source or {}, sink or {}, transforms or [], encoder)
    slow = make_chain(source or {}, sink or {}, transforms or [], encoder)
    assert fast.native is not None and fast.native.name == PLANS[encoder]
    return assert_timed_agreement(fast, slow, records)


def encoded(events: list[ChangeEvent], tz: str) -> list[bytes]:
    """The events as the Python DTS Avro encoder writes them."""
    codec = get_codec("dts-avro", {"source_timezone": tz})
    out: list[bytes] = []
    for event in events:
        event.timezone = tz
        out.extend(r.value for r in codec.encode(event) if r.value is not None)
    return out


# ---------------------------------------------------------------------------
# the plan
# ---------------------------------------------------------------------------


def test_the_plans_are_chosen_only_for_what_they_read_and_write() -> None:
    for encoder, name in PLANS.items():
        assert make_chain({}, {}, [], encoder).native.name == name
        assert name in native.status()["plans"] and name in native.plans_of("dts-avro")
        for transforms in TAKEN:
            taken = encoder == "debezium-json" or transforms in KEEPING
            assert (make_chain({}, {}, transforms, encoder).native is not None) == taken
        assert make_chain({}, {}, PYTHON_ONLY, encoder).native is None
        assert not make_chain({}, {}, [], encoder).native.needs_keys
    assert make_chain({}, {"batch": "transaction"}, [], "canal-json").native is None
    assert make_chain({}, {}, [], "maxwell-json").native is None


# ---------------------------------------------------------------------------
# generated streams
# ---------------------------------------------------------------------------


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    tz=st.sampled_from(ZONES),
    writer=st.sampled_from(WRITERS),
    transforms=st.sampled_from([[], *KEEPING]),
)
def test_random_streams_are_byte_identical(
    stream: list[ChangeEvent], tz: str, writer: tuple[str, dict[str, Any]], transforms: list[dict[str, Any]]
) -> None:
    encoder, sink = writer
    zone = {"source_timezone": tz}
    assert_same(records_of(encoded(stream, tz)), zone, {**sink, **zone}, transforms, encoder)


def test_generated_streams_are_mostly_handled_natively() -> None:
    """Over many generated streams (every type, UTC) the plan converts most records itself:
    the comparisons above are not between two Python runs."""
    from tests.test_native import _example

    total = handled = 0
    for seed in range(40):
        records = records_of(encoded(_example(seed), "UTC"))
        total += 2 * len(records)
        handled += assert_same(records) + assert_same(records, encoder="canal-json")
    assert total and handled >= total * 0.6, (handled, total)


# ---------------------------------------------------------------------------
# hand-made records
# ---------------------------------------------------------------------------


def integer(v: int | str, precision: int = 11) -> Any:
    return (_NS + "Integer", {"precision": precision, "value": str(v)})


def chars(v: bytes, charset: str = "utf8mb4") -> Any:
    return (_NS + "Character", {"charset": charset, "value": v})


def decimal(v: str, precision: int = 10, scale: int = 2) -> Any:
    return (_NS + "Decimal", {"value": v, "precision": precision, "scale": scale})


def double(v: float) -> Any:
    return (_NS + "Float", {"value": v, "precision": 22, "scale": 31})


def parts(**p: int | None) -> Any:
    d = dict.fromkeys(("year", "month", "day", "hour", "minute", "second", "millis"))
    d.update(p)
    return (_NS + "DateTime", d)


def timestamp(seconds: int, micros: int = 0) -> Any:
    return (_NS + "Timestamp", {"timestamp": seconds, "millis": micros})


def blob(v: bytes, kind: str = "BLOB") -> Any:
    return (_NS + "BinaryObject", {"type": kind, "value": v})


def text_object(v: str, kind: str = "JSON") -> Any:
    return (_NS + "TextObject", {"type": kind, "value": v})


#: The hand-made table: (name, type code).
FIELDS = [("id", 3), ("v", 253), ("i", 8), ("f", 5), ("d", 246)]
ROW = [integer(1), chars(b"x"), integer(7, 20), double(1.5), decimal("12.50")]
OTHER = [integer(1), chars(b"y"), integer(6, 20), double(2.5), decimal("-0.01")]


def dts(
    operation: str = "INSERT",
    after: Any = ROW,
    before: Any = OTHER,
    fields: Any = FIELDS,
    **record: Any,
) -> bytes:
    """A DTS record of the hand-made table (``fields``: (name, code) pairs)."""
    obj: dict[str, Any] = {
        "version": 0,
        "id": 42,
        "sourceTimestamp": 1_700_000_000,
        "sourcePosition": "4@3",
        "safeSourcePosition": "",
        "sourceTxid": "77",
        "source": {"sourceType": "MySQL", "version": "8.0"},
        "operation": operation,
        "objectName": "shop.t",
        "processTimestamps": None,
        "tags": {"pk_uk_info": '{"PRIMARY":["id"]}'},
        "fields": [{"name": n, "dataTypeNumber": c} for n, c in fields] if isinstance(fields, list) else fields,
        "beforeImages": before if operation in ("UPDATE", "DELETE") else None,
        "afterImages": after if operation != "DELETE" else None,
        "bornTimestamp": 1_700_000_000_123,
    }
    obj.update(record)
    return write_record(obj)


def column(code: int, *values: Any) -> bytes:
    """An INSERT of one more column (``c``, type ``code``) with the first value; an UPDATE
    with the others as its before-images."""
    fields = [*FIELDS, ("c", code)]
    return dts("INSERT", [*ROW, values[0]], fields=fields)


#: Values of each type code the plan converts itself.
VALUES: list[tuple[int, Any]] = [
    (1, integer(-128, 4)),
    (1, integer(200, 3)),  # unsigned: above the signed range
    (2, integer(-32768, 6)),
    (9, integer(16777215, 8)),
    (3, integer(0)),
    (8, integer(-(1 << 63), 20)),
    (8, integer((1 << 64) - 1, 20)),  # max unsigned bigint
    (16, integer(5, 3)),
    (16, integer((1 << 64) - 1, 64)),
    (246, decimal("12345678901234567890123456789012345.123456789012345678901234567890", 65, 30)),
    (246, decimal("-1", 65, 0)),
    (246, decimal("0.5", 3, 1)),
    (0, decimal("1.5", 10, 4)),
    (5, double(-0.0)),
    (5, double(1e300)),
    (5, double(1e-7)),
    (5, double(0.1)),
    (253, chars('é\n"\\ \u2028 \U0001f600'.encode())),
    (253, chars(b"x", "UTF8")),
    (254, chars(b"\x00\xff", "binary")),  # the binary variant
    (15, chars(b"", "binary")),
    (252, blob("text ✓".encode(), "TEXT")),
    (252, blob(b"\x00\x01\xfe")),
    (251, blob(b"")),
    (249, blob(b"tiny", "TEXT")),
    (245, text_object('{"a": [1, 2.5]}')),
    (247, text_object("red", "ENUM")),
    (248, text_object("a,b", "SET")),
    (10, parts(year=2024, month=2, day=29)),
    (10, parts(year=1, month=1, day=1)),
    (14, parts(year=9999, month=12, day=31)),
    (12, parts(year=2024, month=1, day=2, hour=3, minute=4, second=5, millis=6)),
    (18, parts(year=1000, month=1, day=1, hour=0, minute=0, second=0)),
    (12, parts(year=9999, month=12, day=31, hour=23, minute=59, second=59, millis=999999)),
    (11, parts(hour=838, minute=59, second=59)),
    (19, parts(hour=-1, minute=-2, second=-3, millis=-4)),
    (11, parts(hour=0, minute=0, second=0, millis=1)),
    (13, parts(year=2155)),
    (13, parts(year=1901)),
    (7, timestamp(1_700_000_000, 123456)),
    (17, timestamp(-1, 999999)),
    (7, timestamp(0, 1)),
    (3, None),
    (3, "NULL"),
]
#: Values Python types otherwise or refuses: the plan leaves them to Python.
PYTHON_VALUES: list[tuple[int, Any]] = [
    (3, integer("007")),
    (3, integer(" 7")),
    (3, integer("+7")),
    (3, integer("1_000")),
    (3, integer("-0")),
    (3, integer("x")),
    (3, integer(1 << 200)),
    (3, chars(b"7")),
    (246, decimal("1e5")),
    (246, decimal("nope")),
    (4, double(1.5)),  # single-precision FLOAT
    (5, double(float("inf"))),
    (5, double(float("nan"))),
    (253, chars(b"\xff")),  # not UTF-8
    (253, chars(b"\xe9", "latin1")),
    (253, chars(b"x", "nope")),
    (253, chars("é".encode("gbk"), "gbk")),
    (10, parts(year=0, month=0, day=0)),  # zero date
    (10, parts(year=2023, month=2, day=29)),
    (12, parts(year=0, month=0, day=0, hour=0, minute=0, second=0)),
    (12, parts(year=2024, month=1, day=1)),  # a DATETIME without its time
    (12, parts(year=2024, month=1, day=1, hour=25)),
    (12, parts(year=2024, month=1, day=1, hour=1, millis=1_000_000)),
    (7, timestamp(0, 0)),  # the zero TIMESTAMP
    (7, timestamp(1 << 40)),
    (255, (_NS + "BinaryGeometry", {"type": "POINT", "value": b"\x00" * 25})),
    (253, (_NS + "TextGeometry", {"type": "POINT", "value": "POINT(1 2)"})),
    (
        7,
        (
            _NS + "TimestampWithTimeZone",
            {"value": parts(year=2024, month=1, day=1, hour=1)[1], "timezone": "+08:00"},
        ),
    ),
    (3, "NONE"),  # a partial image
    (99, integer(1)),  # an unknown type code
]


def canal_plain(v: Any) -> bool:
    """Is ``v`` one the Canal writer converts natively (not a DOUBLE outside Java's plain range)?"""
    if not isinstance(v, tuple) or v[0] != _NS + "Float":
        return True
    f = abs(v[1]["value"])
    return f == 0 or 1e-3 <= f < 1e7


@pytest.mark.parametrize("writer", WRITERS, ids=WRITER_IDS)
def test_every_value_kind_is_converted_natively(writer: tuple[str, dict[str, Any]]) -> None:
    encoder, sink = writer
    values = [column(code, v) for code, v in VALUES if encoder != "canal-json" or canal_plain(v)]
    handled = assert_same(records_of(values), {}, sink, encoder=encoder)
    assert handled == len(values) or sink is MODES


@pytest.mark.parametrize("encoder", PLANS)
def test_values_python_types_otherwise_are_pythons(encoder: str) -> None:
    values = [v for code, bad in PYTHON_VALUES for v in (dts(), column(code, bad))]
    assert assert_same(records_of(values), encoder=encoder) == len(PYTHON_VALUES)


@pytest.mark.parametrize("encoder", PLANS)
@pytest.mark.parametrize("tz", ZONES)
def test_timestamps_outside_utc(tz: str, encoder: str) -> None:
    values = [column(code, v) for code, v in VALUES if encoder != "canal-json" or canal_plain(v)]
    handled = assert_same(records_of(values), {"source_timezone": tz}, {"source_timezone": tz}, encoder=encoder)
    zoned = sum(code in (7, 17) for code, _ in VALUES)
    assert handled == len(values) - (0 if tz == "UTC" else zoned)


#: Regular records: the plan converts every one of them.
REGULAR = [
    dts(),
    dts("UPDATE"),
    dts("DELETE"),
    dts("INSERT", beforeImages=OTHER),  # an image Python reads (types, checks) but does not write
    dts("DELETE", afterImages=ROW),
    dts(bornTimestamp=None),  # the SDK's short record
    dts(bornTimestamp=5),  # not within sourceTimestamp's second: the seconds
    dts(sourceTimestamp=0, bornTimestamp=0),
    dts(tags={}),
    dts(tags={"pk_uk_info": '{"PRIMARY":["id","v"],"uk":["i"]}', "x": "y"}),
    dts(tags={"pk_uk_info": ""}),
    dts(tags={"pk_uk_info": '{"uk":["i"]}'}),
    dts(objectName="a\\u002Eb.t\\u002ex"),
    dts(processTimestamps=[1, 2, 3]),
    dts(source={"sourceType": "DRDS", "version": ""}),
    dts(after=[integer(2), None, "NULL", None, "NULL"]),
    dts("UPDATE", after=[integer(2), None, "NULL", None, "NULL"]),
]

#: Unusual records: Python's, with Python's answer.
UNUSUAL = [
    dts("DDL", afterImages="CREATE TABLE t (id int)", fields=None, beforeImages=None),
    dts("DDL", afterImages="TRUNCATE TABLE t", fields=None, beforeImages=None),
    *(
        dts(op, fields=None, beforeImages=None, afterImages=None, objectName=None, tags={})
        for op in ("BEGIN", "COMMIT", "HEARTBEAT", "ROLLBACK", "CHECKPOINT", "NOOP", "INIT")
    ),
    dts(source={"sourceType": "PostgreSQL", "version": ""}),
    dts(source={"sourceType": "Oracle", "version": ""}),
    dts(objectName=None),
    dts(objectName=""),
    dts(objectName="shop"),
    dts(objectName="shop.public.t"),
    dts(objectName="a.b.c.d"),
    dts(fields=None),
    dts(fields="id"),
    dts(fields=[*FIELDS, ("id", 3)], after=[*ROW, integer(2)]),  # a repeated column
    dts(after=ROW[:-1]),  # fewer values than fields
    dts(after=None),
    dts(afterImages="x"),
    dts("UPDATE", beforeImages=None),
    dts("DELETE", beforeImages="x"),
    dts("INSERT", beforeImages=[*OTHER[:-1], "NONE"]),  # NONE in the image Python does not write
    dts(tags={"pk_uk_info": "not json"}),
    dts(tags={"pk_uk_info": '{"PRIMARY":"id"}'}),
    dts(tags={"pk_uk_info": '{"PRIMARY":[1]}'}),
    dts(tags={"pk_uk_info": '{"PRIMARY":["nope"]}'}),
    dts(tags={"pk_uk_info": '{"PRIMARY":["id","id"]}'}),
    dts(tags={"pk_uk_info": "[1]"}),
]


@pytest.mark.parametrize("writer", WRITERS, ids=WRITER_IDS)
def test_regular_records_are_all_handled_natively(writer: tuple[str, dict[str, Any]]) -> None:
    encoder, sink = writer
    handled = assert_same(records_of(REGULAR), {}, sink, encoder=encoder)
    assert handled == len(REGULAR) or sink is MODES  # non-default modes' columns (the decimal): Python's


@pytest.mark.parametrize("writer", WRITERS, ids=WRITER_IDS)
def test_unusual_records_among_regular_ones(writer: tuple[str, dict[str, Any]]) -> None:
    encoder, sink = writer
    values = [v for bad in UNUSUAL for v in (REGULAR[1], bad)]
    assert assert_same(records_of(values), {}, sink, encoder=encoder) >= len(UNUSUAL) or sink is MODES


#: Malformed bytes: a wrong union branch, enum symbol or length; truncations; trailing bytes.
def malformed() -> list[bytes]:
    good = dts()
    out = [good[:n] for n in range(0, len(good), 7)]
    out += [good + b"\x00", good + b"\x02\x02", good[:-1] + b"\xff", b"", b"\xff" * 12, b"{}", b"Obj\x01"]
    out += [good[:k] + bytes([b]) + good[k + 1 :] for k in (0, 1, 2, 9, 30, 40, 48, 60) for b in (0x7F, 0x80, 0x19)]
    return out


@pytest.mark.parametrize("writer", WRITERS, ids=WRITER_IDS)
def test_malformed_records_among_good_ones(writer: tuple[str, dict[str, Any]]) -> None:
    encoder, sink = writer
    bad = malformed()
    values = [v for b in bad for v in (REGULAR[0], b)]
    assert assert_same(records_of(values), {}, sink, encoder=encoder) >= len(bad) or sink is MODES


@settings(max_examples=200, deadline=None)
@given(
    at=st.integers(0, len(REGULAR[1]) - 1),
    insert=st.binary(max_size=3) | st.sampled_from([b"\x00", b"\x01", b"\x02", b"\x19", b"\x7f", b"\x80", b"\xff"]),
    cut=st.integers(0, 3),
    writer=st.sampled_from(WRITERS),
)
def test_mutated_records(at: int, insert: bytes, cut: int, writer: tuple[str, dict[str, Any]]) -> None:
    good = REGULAR[1]
    assert_same(records_of([good[:at] + insert + good[at + cut :], good]), {}, writer[1], encoder=writer[0])


@pytest.mark.parametrize("tz", ["UTC", "Asia/Shanghai"])
@pytest.mark.parametrize("writer", WRITERS, ids=WRITER_IDS)
@pytest.mark.parametrize("transforms", TAKEN, ids=lambda t: t[0]["type"])
def test_transforms(writer: tuple[str, dict[str, Any]], transforms: list[dict[str, Any]], tz: str) -> None:
    encoder, sink = writer
    if encoder == "canal-json" and transforms not in KEEPING:
        pytest.skip("the Canal writer keeps rows as they are: Python's")
    other = [dts(objectName="other.t"), dts("UPDATE", objectName="other.t")]
    zone = {"source_timezone": tz}
    assert_same(records_of(REGULAR + other), zone, {**sink, **zone}, transforms, encoder)


@pytest.mark.parametrize("encoder", PLANS)
def test_max_message_bytes_is_the_decoders(encoder: str) -> None:
    assert assert_same(records_of(REGULAR), {"max_message_bytes": 150}, encoder=encoder) < len(REGULAR)


def test_corpus_dts_files(corpus: Path) -> None:
    files = corpus_files(corpus, "dts-avro") if (corpus / "dts-avro").is_dir() else []
    values = [p.read_bytes() for p in files if p.suffix in (".avro", ".bin")]
    if not values:
        pytest.skip(f"no DTS Avro records in the corpus ({corpus / 'dts-avro'})")
    for encoder, sink in WRITERS:
        assert_same(records_of(values), {}, sink, encoder=encoder)


def test_values_from_typed_events() -> None:
    """Typed values written by the Python encoder from a hand-made schema's events."""
    from cdc_smt.transforms.model import Column as Col
    from cdc_smt.transforms.model import Op, SourcePosition, TableSchema

    schema = TableSchema(
        columns=(
            Col("id", "bigint unsigned", False, True),
            Col("d", "decimal(65,30)"),
            Col("t", "time(6)"),
            Col("dt", "datetime(6)"),
            Col("b", "varbinary(16)"),
        ),
        primary_key=("id",),
    )
    rows = [
        {"id": (1 << 64) - 1, "d": Decimal("-" + "9" * 35 + "." + "9" * 30), "t": dt.timedelta(hours=-838)},
        {"id": 0, "dt": dt.datetime(1, 1, 1), "b": bytes(range(16)), "t": dt.timedelta(microseconds=-1)},
    ]
    events = [
        ChangeEvent(
            op=Op.INSERT,
            after={**dict.fromkeys(schema.names), **row},
            schema=schema,
            pk=("id",),
            source=SourcePosition(db_type="mysql", database="shop", table="t"),
            ts_ms=1_700_000_000_000,
        )
        for row in rows
    ]
    values = encoded(events, "UTC")
    for encoder in PLANS:
        assert assert_same(records_of(values), encoder=encoder) == len(values)


def _keys(values: list[bytes], encoder: str) -> list[Any]:
    chain = make_chain({}, {}, [], encoder)
    return [orjson.loads(r.key) if r.key else None for r in chain.process_batch(records_of(values)).outputs]


def test_keys_are_the_python_keys() -> None:
    values = [dts(), dts(tags={"pk_uk_info": '{"PRIMARY":["v","id"]}'}), dts(tags={})]
    assert _keys(values, "debezium-json") == [{"id": 1}, {"v": "x", "id": 1}, None]
    # Python's Canal encoder keys DTS rows by the key columns' union values as read
    assert _keys(values, "canal-json") == [
        {"id": [_NS + "Integer", {"precision": 11, "value": "1"}]},
        {
            "v": [_NS + "Character", {"charset": "utf8mb4", "value": "eA=="}],
            "id": [_NS + "Integer", {"precision": 11, "value": "1"}],
        },
        None,
    ]


@pytest.mark.parametrize("key", [ROW, OTHER, *([v, *ROW[1:]] for _, v in VALUES if canal_plain(v))])
def test_canal_keys_of_every_value_kind(key: list[Any]) -> None:
    fields = [("id", code) for code, v in VALUES if v is key[0]] or [FIELDS[0]]
    values = [dts(after=key, fields=[*fields, *FIELDS[1:]])]
    assert assert_same(records_of(values), encoder="canal-json") == 1
