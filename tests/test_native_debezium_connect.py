"""The native Debezium reader under the schema part: values in Kafka Connect's
representations (``native/src/connect_in.rs``) converted as the Python decoder converts
them, for the Canal writer.

Decimals (``org.apache.kafka.connect.data.Decimal``: base64 of the unscaled integer),
epoch timestamps (``Timestamp``, ``MicroTimestamp``, ``NanoTimestamp``, Connect's
``Timestamp``), ``ZonedTimestamp`` (UTC or offsets, as the wall clock in the codecs' shared zone), times
(``Time``, ``MicroTime``, ``NanoTime``), base64 bytes, BIGINT UNSIGNED as ``int64``, ``Year``,
``Json``, ``Bits``, ``EnumSet`` (Canal's bitmask), ``float32`` (Java's ``Float.toString``):
each value the reader turns into the text the Canal conversion reads, byte for byte what
Python writes; values it does not read as Python does (other JSON kinds, ranges Python
refuses, loose base64, other offset forms, labels that are none of the column's) go to
Python, which also words their dead letters. Inputs: hand-made values at their edges,
hypothesis streams written by the Python encoder with ``schemas_enable`` in every mode
combination and time zone, malformed schema parts, the corpus.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt.transforms.model import ChangeEvent
from tests.strategies import change_streams
from tests.test_native import NATIVE_SUITE, ZONES, _example, corpus_files, corpus_messages
from tests.test_native_debezium import KEY, assert_same, debezium_records, event, handled, keyed

pytestmark = NATIVE_SUITE

DECIMAL = "org.apache.kafka.connect.data.Decimal"


def unscaled(n: int) -> str:
    """Connect's Decimal value of the unscaled integer ``n`` (``BigInteger.toByteArray``)."""
    bits = n.bit_length() if n >= 0 else (~n).bit_length()
    return base64.b64encode(n.to_bytes(bits // 8 + 1, "big", signed=True)).decode()


def messages(field: dict[str, Any], value: Any) -> list[bytes]:
    """Insert, update (from null and to another value), delete and read of a row ``{id, c}``
    with the column ``c`` of Connect field ``field`` holding ``value``."""
    fields = [{"type": "int64", "optional": False, "field": "id"}, {"optional": True, **field, "field": "c"}]
    row = {"type": "struct", "fields": fields, "optional": True}
    schema = {"type": "struct", "fields": [{**row, "field": "before"}, {**row, "field": "after"}]}
    image = {"id": 1, "c": value}

    def wrapped(op: str, before: Any, after: Any) -> bytes:
        return orjson.dumps({"schema": schema, "payload": orjson.loads(event(op, before=before, after=after))})

    return [
        wrapped("c", None, image),
        wrapped("u", {"id": 1, "c": None}, image),
        wrapped("u", image, image),
        wrapped("d", image, None),
        wrapped("r", None, image),
    ]


def _field(name: str | None, ctype: str, **parameters: str) -> dict[str, Any]:
    out: dict[str, Any] = {"type": ctype}
    if name is not None:
        out["name"], out["version"] = name, 1
    if parameters:
        out["parameters"] = parameters
    return out


DAY_US = 86_400_000_000
#: The microseconds of 0001-01-01 and 9999-12-31 23:59:59.999999 since the epoch.
FIRST_US, LAST_US = -62_135_596_800_000_000, 253_402_300_799_999_999

#: (id, Connect field, [(value, whether the plan writes it)]).
CASES: list[tuple[str, dict[str, Any], list[tuple[Any, bool]]]] = [
    (
        "decimal(10,2)",
        _field(DECIMAL, "bytes", scale="2", **{"connect.decimal.precision": "10"}),
        [
            (unscaled(12345), True),
            (unscaled(-1), True),
            (unscaled(0), True),
            ("", True),  # no bytes: zero
            (unscaled(-(10**9) + 1), True),
            (unscaled(128), True),
            (unscaled(-128), True),
            ("AQ=", False),  # bad padding: Python's error
            ("!!!!", False),
            ("AQ==\n", False),  # Python skips the stray character: Python's
            ("QR==", False),  # loose trailing bits: Python's
            (5, False),  # a JSON number: another layout, Python's
        ],
    ),
    (
        "decimal(65,30)",
        _field(DECIMAL, "bytes", scale="30", **{"connect.decimal.precision": "65"}),
        [
            (unscaled(10**64 + 12345), True),
            (unscaled(-(10**64) - 1), True),
            (unscaled(1), True),
            (unscaled(10**65), False),
        ],
    ),
    (
        "decimal scale 4 of 2",  # more fraction digits than the column's: Python rounds
        _field(
            DECIMAL,
            "bytes",
            scale="4",
            __debezium_source_column_type="DECIMAL",
            __debezium_source_column_length="10",
            __debezium_source_column_scale="2",
        ),
        [(unscaled(12345), False), (unscaled(12300), False)],
    ),
    ("decimal no scale", _field(DECIMAL, "bytes"), [(unscaled(7), False)]),
    ("decimal bad scale", _field(DECIMAL, "bytes", scale="x"), [(unscaled(7), False)]),
    ("decimal negative scale", _field(DECIMAL, "bytes", scale="-2"), [(unscaled(7), False)]),
    (
        "VariableScaleDecimal",
        {
            **_field("io.debezium.data.VariableScaleDecimal", "struct"),
            "fields": [
                {"type": "int32", "optional": False, "field": "scale"},
                {"type": "bytes", "optional": False, "field": "value"},
            ],
        },
        [
            ({"scale": 2, "value": unscaled(12345)}, True),
            ({"scale": 0, "value": unscaled(-7)}, True),
            ({"scale": 30, "value": unscaled(-(10**40) - 1)}, True),
            ({"value": unscaled(5), "scale": 1, "other": [1]}, True),  # other fields: ignored by both
            ({"scale": 31, "value": unscaled(1)}, False),  # more fraction digits than decimal(65,30): rounded
            ({"scale": 2.0, "value": unscaled(1)}, False),  # Python's int() reads these
            ({"scale": "2", "value": unscaled(1)}, False),
            ({"scale": -1, "value": unscaled(1)}, False),
            ({"value": unscaled(1)}, False),  # Python's error
            ({"scale": 2, "value": "QR=="}, False),
            ({"scale": 2, "value": 5}, False),
            ("1.5", False),
            (1.5, False),
        ],
    ),
    (
        "MicroTimestamp",
        _field("io.debezium.time.MicroTimestamp", "int64"),
        [
            (0, True),
            (-1, True),
            (1_700_000_000_123_456, True),
            (1_700_000_000_000_000, True),
            (FIRST_US, True),
            (LAST_US, True),
            (FIRST_US - 1, False),
            (LAST_US + 1, False),
            (2**63 - 1, False),
            ("2020-01-01", False),
        ],
    ),
    (
        "Timestamp",
        _field("io.debezium.time.Timestamp", "int64"),
        [(0, True), (-1, True), (1_700_000_000_123, True), (LAST_US // 1000, True), (2**62, False)],
    ),
    (
        "NanoTimestamp",
        _field("io.debezium.time.NanoTimestamp", "int64"),
        [(1_700_000_000_123_456_789, True), (-1, True), (-1001, True), (999, True)],
    ),
    (
        "Connect Timestamp",
        _field("org.apache.kafka.connect.data.Timestamp", "int64"),
        [(1_700_000_000_123, True), (-86_400_001, True)],
    ),
    (
        "ZonedTimestamp",
        _field("io.debezium.time.ZonedTimestamp", "string"),
        [
            ("2023-11-14T22:13:20Z", True),
            ("2023-11-14T22:13:20.5Z", True),
            ("2023-11-14T22:13:20.123456Z", True),
            ("1970-01-01T00:00:00Z", True),
            ("0001-01-01T00:00:00Z", True),
            ("2023-11-14T22:13:20+01:00", True),
            ("2023-11-14T22:13:20.1234-05:30", True),
            ("2023-11-14T00:13:20-00:00", True),
            ("2023-11-14T22:13:20+0100", False),  # other offset forms: Python's reading
            ("2023-11-14T22:13:20+01:00:30", False),
            ("2023-11-14T22:13:20+24:00", False),
            ("0001-01-01T00:30:00+01:00", False),  # year 0 in UTC: Python's error
            ("9999-12-31T23:30:00-01:00", False),
            ("2023-11-14T22:13:20", False),  # no offset: Python's naive reading
            ("2023-11-14T22:13:20.1234567Z", False),
            ("2023-11-14 22:13:20Z", False),
            ("2023-02-30T00:00:00Z", False),
            ("2023-11-14T24:00:00Z", False),
            ("not a time", False),
        ],
    ),
    (
        "MicroTime",
        _field("io.debezium.time.MicroTime", "int64"),
        [
            (0, True),
            (-1, True),
            (3_599_999_999, True),
            (DAY_US * 34 + 1, True),
            (-(838 * 3600 + 59 * 60 + 59) * 1_000_000, True),
            (1000 * 3_600_000_000, False),
            ("12:00:00", False),
        ],
    ),
    ("Time", _field("io.debezium.time.Time", "int32"), [(0, True), (-1, True), (45_296_789, True)]),
    ("NanoTime", _field("io.debezium.time.NanoTime", "int64"), [(45_296_789_123_456, True), (-1, True)]),
    ("Connect Time", _field("org.apache.kafka.connect.data.Time", "int32"), [(45_296_789, True)]),
    (
        "bytes",
        _field(None, "bytes"),
        [("AAEC/w==", True), ("", True), ("aGVsbG8=", True), ("QR==", False), ("@@@@", False), ("AQ", False)],
    ),
    (
        "bigint unsigned",
        _field(None, "int64", __debezium_source_column_type="BIGINT UNSIGNED"),
        [(-1, True), (0, True), (2**63 - 1, True), (-(2**63), True)],
    ),
    ("Year", _field("io.debezium.time.Year", "int32"), [(2024, True), (1901, True), (0, True), (2155, True)]),
    ("Json", _field("io.debezium.data.Json", "string"), [('{"a": [1, 2]}', True), ("null", True)]),
    (
        "EnumSet",
        _field("io.debezium.data.EnumSet", "string", allowed="a,b,c d"),
        [("a,b", True), ("", True), ("b,a", True), ("c d", True), ("x", False), ("a,,b", False), (1, False)],
    ),
    ("EnumSet repeated label", _field("io.debezium.data.EnumSet", "string", allowed="a,b,a"), [("a", True)]),
    (
        "Bits",
        _field("io.debezium.data.Bits", "bytes", length="16"),
        [("AQA=", True), ("//8=", True), ("", True), ("AQ", False), ("QR==", False), ("AA" * 12, False), (1, False)],
    ),
    ("Bits 64", _field("io.debezium.data.Bits", "bytes", length="64"), [("//////////8=", True)]),
    ("Bits 1", _field("io.debezium.data.Bits", "bytes", length="1"), [("AQ==", True), ("AA==", True), ("Aw==", False)]),
    ("wrong name", _field("io.debezium.time.MicroTimestampX", "int64"), [(1, True)]),
]


def _source_types(field: dict[str, Any]) -> dict[str, Any]:
    """``__debezium_source_column_*`` (Python names) as Debezium's parameter names."""
    prefix = "__debezium_source_column_"
    params = {
        k.replace(prefix, "__debezium.source.column.") if k.startswith(prefix) else k: v
        for k, v in field.get("parameters", {}).items()
    }
    return {**field, "parameters": params} if params else field


@pytest.mark.parametrize(("field", "values"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_connect_values_to_canal(field: dict[str, Any], values: list[tuple[Any, bool]]) -> None:
    """Each value alone (a fresh plan: a schema part met with a value the reader does not
    convert is Python's from then on): both paths equal, and the plan writes what it reads."""
    field = _source_types(field)
    for value, native_ in values:
        records = keyed([(m, KEY) for m in messages(field, value)])
        count = assert_same(records, {"schemas_enable": True}, {}, None, "canal-json")
        assert count == (len(records) if native_ else 0), (value, count)


#: ``ZonedTimestamp`` values around DST changes (Berlin's and New York's gaps and folds of
#: 2023), the zone databases' range edges (1900, 2037) and beyond them.
ZONED = [
    "2023-03-26T00:59:59.999999Z",
    "2023-03-26T01:00:00Z",
    "2023-10-29T00:30:00Z",
    "2023-10-29T01:30:00Z",
    "2023-10-29T02:30:00+01:00",
    "2023-03-12T07:00:00Z",
    "2023-11-05T05:30:00Z",
    "2023-11-05T06:30:00Z",
    "1900-01-01T12:00:00Z",
    "2037-12-31T12:00:00Z",
    "1899-12-31T12:00:00Z",
    "2038-06-01T00:00:00Z",
]


@pytest.mark.parametrize("sink", ["canal-json", "ticdc-canal-json"])
@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/New_York", "Asia/Shanghai"])
def test_zoned_timestamps_outside_utc(zone: str, sink: str) -> None:
    """Both codecs in one zone: each instant written as its wall clock there, natively within
    the years the zone databases agree on (DST folds and gaps too); between different zones
    Python's (it re-bases the wall clock)."""
    field = _field("io.debezium.time.ZonedTimestamp", "string")
    zoned = {"schemas_enable": True, "source_timezone": zone}
    for value in ZONED:
        records = keyed([(m, KEY) for m in messages(field, value)])
        count = assert_same(records, zoned, {"source_timezone": zone}, None, sink)
        assert count == (len(records) if value[:4] not in ("1899", "2038") else 0), (value, count)
        assert assert_same(records, {"schemas_enable": True}, {"source_timezone": zone}, None, sink) == 0


#: Every mode combination of the Python encoder the stream is written with (and read back by
#: a decoder of the same options).
MODES = st.fixed_dictionaries(
    {
        "schemas_enable": st.just(True),
        "decimal_handling_mode": st.sampled_from(["precise", "string", "double"]),
        "decimal_format": st.sampled_from(["base64", "numeric"]),
        "time_precision_mode": st.sampled_from(["adaptive_time_microseconds", "connect"]),
        "binary_handling_mode": st.sampled_from(["bytes", "base64", "base64-url-safe", "hex"]),
        "bigint_unsigned_handling_mode": st.sampled_from(["long", "precise"]),
    }
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    options=MODES,
    tz=st.sampled_from(["UTC", *ZONES]),
    sink_tz=st.sampled_from(["UTC", "Asia/Shanghai"]),
)
def test_streams_in_every_mode(stream: list[ChangeEvent], options: dict[str, Any], tz: str, sink_tz: str) -> None:
    records = debezium_records(stream, tz, options)
    source = {"source_timezone": tz, **options}
    assert_same(records, source, {"source_timezone": sink_tz}, None, "canal-json")


def test_default_modes_are_mostly_native() -> None:
    """What Debezium's MySQL connector writes by default (Decimal bytes, Micro/Timestamp,
    ZonedTimestamp, MicroTime, Date, bytes, Json, Year, int64) goes natively, but for the
    representations left to Python (geometry, FLOAT's E notation)."""
    total = count = 0
    for seed in range(20):
        records = [r for r in debezium_records(_example(seed), "UTC", {"schemas_enable": True}) if r.value is not None]
        total += len(records)
        count += assert_same(records, {"schemas_enable": True}, {}, None, "canal-json")
    assert count >= total * 0.8, (count, total)


def test_malformed_schema_parts() -> None:
    """Schema parts that do not say what the values are: Python's reading (values, errors)."""
    decimal = _field(DECIMAL, "bytes", scale="2")
    cases = [
        ({**decimal, "parameters": {}}, unscaled(5)),  # no scale: 0
        ({**decimal, "parameters": {"scale": 2}}, unscaled(5)),  # a number, not text
        ({**decimal, "parameters": None}, unscaled(5)),
        ({**decimal, "name": "Decimal"}, unscaled(5)),  # not Connect's name: bytes
        ({**decimal, "type": "string"}, unscaled(5)),
        (_field("io.debezium.time.MicroTimestamp", "string"), 5),
        (_field("io.debezium.time.MicroTimestamp", "int64"), 1.5),
        (_field("io.debezium.time.Date", "int32", length="x"), 1),
        ({"name": "io.debezium.time.MicroTime"}, 1),  # no type
    ]
    for field, value in cases:
        records = keyed([(m, KEY) for m in messages(field, value)])
        assert_same(records, {"schemas_enable": True}, {}, None, "canal-json")


def test_corpus_debezium_with_the_schema_part(corpus: Path) -> None:
    values = [v for messages_ in corpus_messages(corpus_files(corpus, "debezium-json")) for v in messages_]
    wrapped = [v for v in values if v.lstrip().startswith(b'{"schema"')]
    assert wrapped
    for key in (None, b'{"id":101}'):
        records = keyed([(v, key) for v in wrapped])
        assert_same(records, {"schemas_enable": True}, {}, None, "canal-json")
    rows = [v for v in wrapped if b'"op":"' in v]
    assert handled(keyed([(v, None) for v in rows]), {}, {}, [], "canal-json") >= len(rows) // 2


def test_enum_labels_to_canal() -> None:
    """``io.debezium.data.Enum``: labels written as Canal's indexes; the empty label (MySQL's
    invalid value) as 0; a text that is no label is Python's (its error)."""
    field = _field("io.debezium.data.Enum", "string", allowed="NEW,PAID,x y")
    for value, native_ in [("NEW", True), ("x y", True), ("", True), ("other", False), (1, False)]:
        records = keyed([(m, KEY) for m in messages(field, value)])
        count = assert_same(records, {"schemas_enable": True}, {}, None, "canal-json")
        assert count == (len(records) if native_ else 0), (value, count)


def test_the_schema_part_to_ticdc() -> None:
    """debezium-json -> ticdc-canal-json reads the schema part as for Canal: messages with and
    without it mixed, all the plan's, the output Python's byte for byte."""
    field = _field(DECIMAL, "bytes", scale="2")
    wrapped = [(m, KEY) for m in messages(field, unscaled(12345))]
    plain = [(event("c", after={"id": 1, "c": "x"}), KEY)]
    records = keyed([pair for both in zip(wrapped, plain * len(wrapped), strict=True) for pair in both])
    count = assert_same(records, {"schemas_enable": True}, {}, None, "ticdc-canal-json")
    assert count == len(records)


#: Cases TiCDC writes natively although the Canal writer leaves them to Python (decimals'
#: digits as they are), and the reverse (a SET whose labels repeat: TiCDC's bitmask is Python's).
TICDC_WRITES = {"decimal(65,30)", "decimal scale 4 of 2"}
TICDC_PYTHONS = {"EnumSet repeated label"}


@pytest.mark.parametrize(("case", "field", "values"), CASES, ids=[c[0] for c in CASES])
def test_connect_values_to_ticdc(case: str, field: dict[str, Any], values: list[tuple[Any, bool]]) -> None:
    """Each value alone to TiCDC's Canal-JSON: both paths equal; the plan writes what the reader
    reads as for Canal (ENUM labels as TiCDC's index, SET labels as its bitmask, FLOAT as Go's text)."""
    field = _source_types(field)
    for value, native_ in values:
        records = keyed([(m, KEY) for m in messages(field, value)])
        count = assert_same(records, {"schemas_enable": True}, {}, None, "ticdc-canal-json")
        written = (native_ or case in TICDC_WRITES) and case not in TICDC_PYTHONS
        assert count == (len(records) if written else 0), (value, count)


def test_enum_labels_to_ticdc() -> None:
    """``io.debezium.data.Enum`` to TiCDC: each label as its index (digit labels too, which
    Canal's index texts would read otherwise); a text that is no label, and key columns, Python's."""
    field = _field("io.debezium.data.Enum", "string", allowed="2,1,x y")
    for value, native_ in [("2", True), ("1", True), ("x y", True), ("", True), ("3", False), (1, False)]:
        records = keyed([(m, KEY) for m in messages(field, value)])
        count = assert_same(records, {"schemas_enable": True}, {}, None, "ticdc-canal-json")
        assert count == (len(records) if native_ else 0), (value, count)


#: The writers that convert each value from its Canal text, as the Canal writer does.
CONVERTING_SINKS = ["maxwell-json", "ogg-json", "dts-avro"]
#: Cases the Canal writer leaves to Python but Maxwell's and GoldenGate's write, as Python
#: does: a decimal's digits as they are (66 digits; more fraction digits than the column's),
#: a SET's labels (``EnumSet``: Maxwell's list of them, GoldenGate's text).
TYPED_WRITE = {"decimal(65,30)", "decimal scale 4 of 2"}
#: Every writer but Canal's that reads the schema part's values as the Canal writer does.
READING_SINKS = [*CONVERTING_SINKS, "ticdc-canal-json"]
#: Cases the Canal writer leaves to Python but every converting writer writes as Python does:
#: a SET's text as it is, even one that names no label.
LABELS_WRITE = {"EnumSet"}


@pytest.mark.parametrize("sink", CONVERTING_SINKS)
@pytest.mark.parametrize(("case", "field", "values"), CASES, ids=[c[0] for c in CASES])
def test_connect_values_to_the_converting_writers(
    case: str, field: dict[str, Any], values: list[tuple[Any, bool]], sink: str
) -> None:
    """The schema part read for Maxwell, GoldenGate and DTS Avro as for Canal: both paths
    equal; each writer writes what the reader reads, and what the reader leaves to Python
    for Canal is Python's here too (but decimal digits the typed writers copy)."""
    field = _source_types(field)
    for value, native_ in values:
        records = keyed([(m, KEY) for m in messages(field, value)])
        count = assert_same(records, {"schemas_enable": True}, {}, None, sink)
        written = native_ or (case in TYPED_WRITE and sink != "dts-avro") or (case in LABELS_WRITE and value != 1)
        assert count == (len(records) if written else 0), (value, count)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    options=MODES,
    tz=st.sampled_from(["UTC", *ZONES]),
    sink_tz=st.sampled_from(["UTC", "Asia/Shanghai"]),
    sink=st.sampled_from(READING_SINKS),
)
def test_streams_in_every_mode_to_the_converting_writers(
    stream: list[ChangeEvent], options: dict[str, Any], tz: str, sink_tz: str, sink: str
) -> None:
    records = debezium_records(stream, tz, options)
    source = {"source_timezone": tz, **options}
    assert_same(records, source, {"source_timezone": sink_tz}, None, sink)


@pytest.mark.parametrize("sink", READING_SINKS)
def test_default_modes_to_the_converting_writers(sink: str) -> None:
    """Debezium's default representations go natively to Maxwell, GoldenGate and DTS Avro
    too, but for those left to Python (geometry)."""
    total = count = 0
    for seed in range(20):
        records = [r for r in debezium_records(_example(seed), "UTC", {"schemas_enable": True}) if r.value is not None]
        total += len(records)
        count += assert_same(records, {"schemas_enable": True}, {}, None, sink)
    assert count >= total * 0.8, (count, total)


def test_corpus_debezium_with_the_schema_part_to_the_converting_writers(corpus: Path) -> None:
    values = [v for messages_ in corpus_messages(corpus_files(corpus, "debezium-json")) for v in messages_]
    wrapped = [v for v in values if v.lstrip().startswith(b'{"schema"')]
    for sink in READING_SINKS:
        for key in (None, b'{"id":101}'):
            assert_same(keyed([(v, key) for v in wrapped]), {"schemas_enable": True}, {}, None, sink)


def test_enum_labels_to_dts() -> None:
    """``io.debezium.data.Enum`` to DTS Avro: each label written as the label (the empty one,
    MySQL's invalid value, and texts that are no label: Python's); ``EnumSet``'s text as it is
    (Python checks no label), a value of another JSON kind Python's."""
    field = _field("io.debezium.data.Enum", "string", allowed="NEW,PAID,x y")
    for value, native_ in [("NEW", True), ("x y", True), ("", False), ("other", False), (1, False)]:
        records = keyed([(m, KEY) for m in messages(field, value)])
        count = assert_same(records, {"schemas_enable": True}, {}, None, "dts-avro")
        assert count == (len(records) if native_ else 0), (value, count)
    labels = _field("io.debezium.data.EnumSet", "string", allowed="1,2")
    for value, native_ in [("2,1", True), ("1", True), ("3", True), ("", True), (3, False)]:
        records = keyed([(m, KEY) for m in messages(labels, value)])
        count = assert_same(records, {"schemas_enable": True}, {}, None, "dts-avro")
        assert count == (len(records) if native_ else 0), (value, count)


@pytest.mark.parametrize("sink", CONVERTING_SINKS[:2])
def test_enum_and_set_labels_to_the_typed_writers(sink: str) -> None:
    """``io.debezium.data.Enum`` and ``EnumSet``: Maxwell and GoldenGate write the label (a
    SET's labels: Maxwell as their list) as Python does (a text that is no label too); a value
    of another JSON kind is Python's."""
    field = _field("io.debezium.data.Enum", "string", allowed="NEW,PAID,x y")
    for value in ["NEW", "x y", "", "other"]:
        records = keyed([(m, KEY) for m in messages(field, value)])
        assert assert_same(records, {"schemas_enable": True}, {}, None, sink) == len(records)
    assert_same(keyed([(m, KEY) for m in messages(field, 1)]), {"schemas_enable": True}, {}, None, sink)
    labels = _field("io.debezium.data.EnumSet", "string", allowed="a,b,c d")
    for value in ["a,b", "", "c d", "a,,b", "b,a", "x"]:
        records = keyed([(m, KEY) for m in messages(labels, value)])
        assert assert_same(records, {"schemas_enable": True}, {}, None, sink) == len(records)
    assert_same(keyed([(m, KEY) for m in messages(labels, ["a"])]), {"schemas_enable": True}, {}, None, sink)


#: The writers a FLOAT's ``float32`` numbers go to natively.
FLOAT32_SINKS = ["canal-json", *CONVERTING_SINKS]


@pytest.mark.parametrize("sink", FLOAT32_SINKS)
def test_float32_to_the_converting_writers(sink: str) -> None:
    """A FLOAT's Connect ``float32`` numbers: Maxwell, GoldenGate and DTS Avro write them rounded
    to single precision, Canal as Java's ``Float.toString`` (natively in its plain notation,
    1e-3 <= |v| < 1e7; E notation is Python's), as Python does; beyond FLOAT's range, Python's."""
    field = {"type": "float32"}
    for value, native_, plain in [
        (1.5, True, True),
        (3.14, True, True),
        (2, True, True),
        (-0.0, True, True),
        (0.1, True, True),
        (0.001, True, True),
        (9999999, True, True),
        (1e7, True, False),
        (3.4e38, True, False),
        (1e-45, True, False),
        (1e39, False, False),
    ]:
        records = keyed([(m, KEY) for m in messages(field, value)])
        count = assert_same(records, {"schemas_enable": True}, {}, None, sink)
        written = native_ and (plain or sink != "canal-json")
        assert count == (len(records) if written else 0), (value, count)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False), min_size=1, max_size=8))
def test_float32_streams_to_canal(values: list[float]) -> None:
    """Any single-precision value: both paths equal; the plain-notation ones natively."""
    field = {"type": "float32"}
    records = keyed([(m, KEY) for v in values for m in messages(field, v)])
    count = assert_same(records, {"schemas_enable": True}, {}, None, "canal-json")
    plain = sum(5 for v in values if v == 0 or 1e-3 <= abs(v) < 1e7)
    assert count == plain, (values, count)


def _wrapped_key(schema: Any, payload: bytes) -> bytes:
    """A JsonConverter key: ``schema`` as written by orjson, then ``payload`` as given."""
    return b'{"schema":' + orjson.dumps(schema) + b',"payload":' + payload + b"}"


#: A key's schema part (the Connect struct of ``id``) and others around the same payload.
KEY_SCHEMA = {"type": "struct", "fields": [{"type": "int64", "optional": False, "field": "id"}], "optional": False}
#: Payloads after the key schema part: malformed, not objects, naming ``schema``/``payload``,
#: repeated names, text after them, whitespace.
KEY_PAYLOADS: list[bytes] = [
    b'{"id":1}',
    b'{"id":1',
    b"1",
    b"null",
    b"{}",
    b' {"id" : 1} ',
    b'{"id":1} \n',
    b'{"id":1}}',
    b'{"id":1,"id":2}',
    b'{"schema":1,"id":2}',
    b'{"schema":{},"payload":{"id":1}}',
    b'{"id":1},"schema":{}',
    b'{"id":1},"payload":{"c":1}',
    b'{"id":1e400}',
    b'{"\\u0069d":1}',
]
#: Keys under schema parts, each among good ones: those payloads after a schema part the reader
#: remembered, whitespace after the key, a ``,"payload":`` inside the schema part (the first is
#: not the separator), a field as long as the separator, whitespace before it, unclosed keys.
SCHEMA_KEYS: list[bytes] = [
    *(_wrapped_key(KEY_SCHEMA, payload) for payload in KEY_PAYLOADS),
    _wrapped_key(KEY_SCHEMA, b'{"id":1}') + b" \n",
    _wrapped_key({"a": 1, "payload": 2}, b'{"id":1}'),
    b'{"schema":{"a":1,"payload":{"id":1}}',  # the cut above, then a key that is all schema part
    _wrapped_key(KEY_SCHEMA, b'{"id":1}').replace(b',"payload":', b',"PAYLOAD":'),
    _wrapped_key({"type": "struct"}, b'{"c":1}'),
    b'{"schema":{"type":"struct"} ,"payload":{"id":1}}',
    b'{"schema":{"type":"struct"},"payload":{"id":1}',
    b'{"schema":{"type":"struct","x":[1,2},"payload":{"id":1}}',
]


def _schema_messages(tables: int) -> list[bytes]:
    """Insert, update and delete of ``{id, c}`` under ``tables`` different schema parts
    (each names its column ``c<n>``), interleaved table by table."""
    out: list[list[bytes]] = []
    for n in range(tables):
        fields = [
            {"type": "int64", "optional": False, "field": "id"},
            {"type": "string", "optional": True, "field": f"c{n}"},
        ]
        row = {"type": "struct", "fields": fields, "optional": True}
        schema = {"type": "struct", "fields": [{**row, "field": "before"}, {**row, "field": "after"}]}
        image = {"id": n, f"c{n}": "x"}
        out.append(
            [
                orjson.dumps({"schema": schema, "payload": orjson.loads(event(op, before=before, after=after))})
                for op, before, after in (("c", None, image), ("u", image, image), ("d", image, None))
            ]
        )
    return [m for ops in zip(*out, strict=True) for m in ops]


#: Values after a schema part the reader remembered: a payload that is not JSON, not an
#: object, with text after it, the schema part followed by something else, whitespace.
def _mutated(value: bytes) -> list[bytes]:
    cut = value.index(b',"payload":')
    head, body = value[:cut], value[cut:]
    return [
        head + b',"payload":{"op":"c"',
        head + b',"payload":1}',
        value + b" \r\n",
        value[:-1] + b',"x":1}',
        value[:-1] + b',"payload":{}}',
        head + b' ,"payload"' + body[len(b',"payload"') :],
        head + b',"payloads":' + body[len(b',"payload":') :],
        head + b',"PAYLOAD":' + body[len(b',"payload":') :],  # as long as the separator: not one
        head[:-1] + b',"payload":' + body[len(b',"payload":') :],
        value.replace(b'"op":"', b'"op":"\\u0063', 1),
    ]


@pytest.mark.parametrize("sink", ["canal-json", *READING_SINKS])
def test_schema_parts_remembered_between_messages(sink: str) -> None:
    """Values and keys cut at a schema part the reader remembered (more tables than it keeps,
    so some are cut again) read as Python reads them: both paths equal over the stream, one
    record at a time and as one batch, and the well-formed rows native."""
    good = _schema_messages(6)
    values = [*good, *(m for v in good[:3] for m in _mutated(v)), *good]
    keys = [_wrapped_key(KEY_SCHEMA, b'{"id":1}'), *SCHEMA_KEYS]
    records = keyed([(v, keys[i % len(keys)] if i % 3 else keys[0]) for i, v in enumerate(values)])
    assert_same(records, {"schemas_enable": True}, {}, None, sink)
    for record in records[::7]:
        assert_same([record], {"schemas_enable": True}, {}, None, sink)
    plain = keyed([(v, keys[0]) for v in good * 2])
    assert handled(plain, {"schemas_enable": True}, {}, None, sink) == len(plain)


def _repeated_wall_clock(instant: str, zone: str) -> bool:
    """Does ``zone`` show the instant's wall clock twice (a DST fold)?"""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    wall = datetime.fromisoformat(instant.replace("Z", "+00:00")).astimezone(ZoneInfo(zone))
    return wall.replace(fold=1 - wall.fold).utcoffset() != wall.utcoffset()


@pytest.mark.parametrize("sink", ["maxwell-json", "ogg-json"])
@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/New_York", "Asia/Shanghai"])
def test_zoned_timestamps_outside_utc_to_the_typed_writers(zone: str, sink: str) -> None:
    """Both codecs in one zone: Maxwell and GoldenGate write each instant's wall clock there as
    Python does, natively within the years the zone databases agree on, but for wall clocks the
    zone repeats (Python's ``fold`` tells them apart); between different zones Python's."""
    field = _field("io.debezium.time.ZonedTimestamp", "string")
    zoned = {"schemas_enable": True, "source_timezone": zone}
    for value in ZONED:
        records = keyed([(m, KEY) for m in messages(field, value)])
        count = assert_same(records, zoned, {"source_timezone": zone}, None, sink)
        native_ = value[:4] not in ("1899", "2038") and not _repeated_wall_clock(value, zone)
        assert count == (len(records) if native_ else 0), (value, count)
        assert assert_same(records, {"schemas_enable": True}, {"source_timezone": zone}, None, sink) == 0


@pytest.mark.parametrize("sink", ["maxwell-json", "ogg-json"])
def test_corpus_debezium_with_the_schema_part_in_a_zone_to_the_typed_writers(corpus: Path, sink: str) -> None:
    """The corpus's Debezium events with both codecs in a DST zone, the keys with and without
    their schema part: both paths equal."""
    values = [v for messages_ in corpus_messages(corpus_files(corpus, "debezium-json")) for v in messages_]
    wrapped = [v for v in values if v.lstrip().startswith(b'{"schema"')]
    assert wrapped
    zone = {"source_timezone": "America/New_York"}
    for key in (b'{"id":101}', _wrapped_key(KEY_SCHEMA, b'{"id":101}')):
        assert_same(keyed([(v, key) for v in wrapped]), {"schemas_enable": True, **zone}, zone, None, sink)


#: Unscaled decimals around the reader's fast paths (``connect_in.rs``): 16 bytes summed in
#: 128 bits, 17 and more by long division; base64 of at most 64 characters decoded on the
#: stack, longer ones (past 65 digits: the writers' and Python's to decide) on the heap.
DECIMAL_WIDTHS = [2**127 - 1, -(2**127), 2**127, -(2**127) - 1, 2**120 + 5, -(10**64) - 7, 10**100, -(10**120)]


@pytest.mark.parametrize("sink", CONVERTING_SINKS[:2])
def test_decimal_widths_to_the_typed_writers(sink: str) -> None:
    """Decimals of 16 bytes and longer, and base64 texts past 64 characters: both paths equal;
    those within DECIMAL(65,30) written natively."""
    field = _source_types(_field(DECIMAL, "bytes", scale="30", **{"connect.decimal.precision": "65"}))
    for n in DECIMAL_WIDTHS:
        records = keyed([(m, KEY) for m in messages(field, unscaled(n))])
        count = assert_same(records, {"schemas_enable": True}, {}, None, sink)
        within = len(str(abs(n))) - 30 <= 65
        assert count == (len(records) if within else 0), (n, count)


#: JSON numbers as written, around the scanner's one-pass integers (at most 18 digits summed,
#: longer ones parsed) and fractions (no exponent: no parse), in a BIGINT UNSIGNED column
#: (``-0`` its number's text, not as written) and a DOUBLE one.
RAW_NUMBERS = [
    ("0", True),
    ("-0", True),
    ("999999999999999999", True),
    ("-999999999999999999", True),
    ("1000000000000000000", True),
    ("9223372036854775807", True),
    ("-9223372036854775808", True),
    ("9223372036854775808", False),  # past int64: Python's
]


@pytest.mark.parametrize("sink", CONVERTING_SINKS[:2])
def test_raw_integer_texts_to_the_typed_writers(sink: str) -> None:
    """Integer texts that orjson would not write (``-0``) or that sit at the scanner's
    boundaries, in an unsigned int64 column: both paths equal, native where Python reads them."""
    field = _source_types(_field(None, "int64", __debezium_source_column_type="BIGINT UNSIGNED"))
    for text, native_ in RAW_NUMBERS:
        records = keyed([(m.replace(b'"c":12345', b'"c":' + text.encode()), KEY) for m in messages(field, 12345)])
        count = assert_same(records, {"schemas_enable": True}, {}, None, sink)
        assert count == (len(records) if native_ else 0), (text, count)


@pytest.mark.parametrize("sink", CONVERTING_SINKS[:2])
def test_raw_fraction_texts_to_the_typed_writers(sink: str) -> None:
    """Fractions without an exponent (long ones too) and with one, in a DOUBLE column: both
    paths equal, native where the value is a finite double (past the scanner's range, the
    serde reading's)."""
    field = _source_types(_field(None, "float64", __debezium_source_column_type="DOUBLE"))
    texts = [
        ("0.5", True),
        ("-0.0", True),
        ("1" * 299 + ".5", True),
        ("1.5e300", True),
        ("1e309", False),
        ("1.5e299", True),
        ("1e-400", True),
    ]
    for text, native_ in texts:
        records = keyed([(m.replace(b'"c":2.5', b'"c":' + text.encode()), KEY) for m in messages(field, 2.5)])
        count = assert_same(records, {"schemas_enable": True}, {}, None, sink)
        assert count == (len(records) if native_ else 0), (text, count)
