"""The native Debezium reader under the schema part (values in Kafka Connect's
representations, ``native/src/connect_in.rs``) for the vendor writers: CloudCanal's,
CKafka's, DataWorks' and TDSQL's.

The columns are typed by the schema part, each value read from its Connect representation
into the Canal text the writer's conversion reads (as for the Maxwell writer), ENUM and SET
labels written as Debezium writes them (the text Python keeps), the rest Python's. Both paths
byte for byte (values, keys, headers, topics, dead letters) over hand-made values at their
edges, hypothesis streams written with ``schemas_enable`` in every mode combination and zone,
malformed schema parts, schema parts changing between messages, mutated messages among good
ones, the corpus; in one batch, through the worker's ``convert_values`` and one record per
batch; and counts of what the plan converts itself.
"""

from __future__ import annotations

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
from cdc_smt.transforms.model import ChangeEvent, Record
from tests.strategies import change_streams
from tests.test_native import NATIVE_SUITE, ZONES, _example, corpus_files, corpus_messages, dead_letters, outputs
from tests.test_native_cloudcanal_out import assert_both_agree
from tests.test_native_debezium import KEY, debezium_records, event, keyed
from tests.test_native_debezium_connect import (
    CASES,
    DECIMAL,
    KEY_SCHEMA,
    MODES,
    SCHEMA_KEYS,
    ZONED,
    _field,
    _mutated,
    _repeated_wall_clock,
    _schema_messages,
    _source_types,
    _wrapped_key,
    messages,
    unscaled,
)
from tests.test_native_maxwell import KEEPING
from tests.test_native_transforms import CHAINS

pytestmark = NATIVE_SUITE

#: The vendor writers and the plan of the Debezium reader with each.
PLANS = {
    "cloudcanal-json": native.DEBEZIUM_TO_CLOUDCANAL,
    "ckafka-json": native.DEBEZIUM_TO_CKAFKA,
    "dataworks-json": native.DEBEZIUM_TO_DATAWORKS,
    "tdsql-binlog-json": native.DEBEZIUM_TO_TDSQL,
}
SINKS = list(PLANS)
SCHEMA = {"schemas_enable": True}


def chain_of(
    source: dict[str, Any], sink: dict[str, Any], out: str, transforms: list[dict[str, Any]] | None = None
) -> Chain:
    codecs = get_codec("debezium-json", source), get_codec(out, sink)
    return Chain(codecs[0], codecs[1], build_transforms(transforms or []), "all")


def assert_same(
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    out: str = "",
    transforms: list[dict[str, Any]] | None = None,
) -> int:
    """Both paths agree (one batch, the worker's ``convert_values``, one record per batch);
    returns how many records the worker's path converted natively."""
    source, sink = source or SCHEMA, sink or {}
    count = assert_both_agree("debezium-json", PLANS[out], records, source, sink, transforms, out)
    fast, slow = chain_of(source, sink, out, transforms), chain_of(source, sink, out, transforms)
    slow.native = None
    results = [fast.process_batch([r]) for r in records]
    expected = slow.process_batch(records)
    assert [o for r in results for o in outputs(r)] == outputs(expected)
    assert [d for r in results for d in dead_letters(r)] == dead_letters(expected)
    return count


def converted(records: list[Record], source: dict[str, Any], sink: dict[str, Any], out: str) -> int:
    """How many of ``records`` the plan converts itself, each in a batch of its own."""
    plan = chain_of(source, sink, out).native
    assert plan is not None and plan.name == PLANS[out]
    return sum(plan.convert_values([r.value], [r.key])[0][0] >= 0 for r in records)


def test_the_plans_are_chosen_under_the_schema_part() -> None:
    for out, name in PLANS.items():
        plan = chain_of(SCHEMA, {}, out).native
        assert plan is not None and plan.name == name and plan.needs_keys


#: Cases the Canal writer leaves to Python that the vendor writers write as Python does: a
#: SET's labels (``EnumSet``: MySQL's text as it is, even one that names no label or repeats one).
LABELS_WRITE = {"EnumSet", "EnumSet repeated label"}


@pytest.mark.parametrize("out", SINKS)
@pytest.mark.parametrize(("case", "field", "values"), CASES, ids=[c[0] for c in CASES])
def test_connect_values_to_the_vendor_writers(
    case: str, field: dict[str, Any], values: list[tuple[Any, bool]], out: str
) -> None:
    """Each value alone (a fresh plan: a schema part met with a value the reader does not
    convert is Python's from then on): both paths equal, and the plan writes what the reader
    reads for the Canal writer (and SET labels)."""
    field = _source_types(field)
    for value, native_ in values:
        records = keyed([(m, KEY) for m in messages(field, value)])
        count = assert_same(records, out=out)
        written = native_ or (case in LABELS_WRITE and value != 1)
        assert count == (len(records) if written else 0), (value, count)


@pytest.mark.parametrize("out", SINKS)
def test_enum_and_set_labels(out: str) -> None:
    """``io.debezium.data.Enum`` and ``EnumSet``: each written as the text Debezium wrote (what
    Python keeps and writes as MySQL's text), a text that is no label too; a value of another
    JSON kind, and an ENUM key column, Python's."""
    field = _field("io.debezium.data.Enum", "string", allowed="NEW,PAID,x y")
    labels = _field("io.debezium.data.EnumSet", "string", allowed="a,b,c d")
    for f, value, native_ in [
        (field, "NEW", True),
        (field, "x y", True),
        (field, "", True),
        (field, "other", True),
        (field, 1, False),
        (labels, "a,b", True),
        (labels, "b,a", True),
        (labels, "x", True),
        (labels, ["a"], False),
    ]:
        records = keyed([(m, KEY) for m in messages(f, value)])
        count = assert_same(records, out=out)
        assert count == (len(records) if native_ else 0), (value, count)


@pytest.mark.parametrize("out", SINKS)
def test_float32(out: str) -> None:
    """A FLOAT's Connect ``float32`` numbers, rounded to single precision as Python rounds them;
    beyond FLOAT's range Python's."""
    for value in [1.5, 3.14, 2, -0.0, 0.1, 0.001, 9999999, 1e7, 3.4e38, 1e-45, 1e39]:
        records = keyed([(m, KEY) for m in messages({"type": "float32"}, value)])
        assert_same(records, out=out)
    records = keyed([(m, KEY) for m in messages({"type": "float32"}, 1.5)])
    assert converted(records, SCHEMA, {}, out) == len(records)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    options=MODES,
    tz=st.sampled_from(["UTC", *ZONES]),
    sink_tz=st.sampled_from(["UTC", "Asia/Shanghai"]),
    out=st.sampled_from(SINKS),
)
def test_streams_in_every_mode(
    stream: list[ChangeEvent], options: dict[str, Any], tz: str, sink_tz: str, out: str
) -> None:
    records = debezium_records(stream, tz, options)
    assert_same(records, {"source_timezone": tz, **options}, {"source_timezone": sink_tz}, out)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(stream=change_streams(max_events=10), tz=st.sampled_from(ZONES), out=st.sampled_from(SINKS))
def test_streams_with_both_codecs_in_one_zone(stream: list[ChangeEvent], tz: str, out: str) -> None:
    """Both codecs in one zone (TIMESTAMPs' wall clocks read natively there)."""
    records = debezium_records(stream, tz, SCHEMA)
    assert_same(records, {"source_timezone": tz, **SCHEMA}, {"source_timezone": tz}, out)


@pytest.mark.parametrize("out", SINKS)
def test_default_modes_are_mostly_native(out: str) -> None:
    """What Debezium's MySQL connector writes by default goes natively, but for the
    representations left to Python (geometry, FLOAT's E notation)."""
    total = count = 0
    for seed in range(20):
        records = [r for r in debezium_records(_example(seed), "UTC", SCHEMA) if r.value is not None]
        total += len(records)
        count += assert_same(records, out=out)
    assert count >= total * 0.8, (count, total)


@pytest.mark.parametrize("out", SINKS)
def test_malformed_schema_parts(out: str) -> None:
    """Schema parts that do not say what the values are: Python's reading (values, errors)."""
    decimal = _field(DECIMAL, "bytes", scale="2")
    cases = [
        ({**decimal, "parameters": {}}, unscaled(5)),
        ({**decimal, "parameters": {"scale": 2}}, unscaled(5)),
        ({**decimal, "parameters": None}, unscaled(5)),
        ({**decimal, "name": "Decimal"}, unscaled(5)),
        ({**decimal, "type": "string"}, unscaled(5)),
        (_field("io.debezium.time.MicroTimestamp", "string"), 5),
        (_field("io.debezium.time.MicroTimestamp", "int64"), 1.5),
        (_field("io.debezium.time.Date", "int32", length="x"), 1),
        ({"name": "io.debezium.time.MicroTime"}, 1),
    ]
    for field, value in cases:
        assert_same(keyed([(m, KEY) for m in messages(field, value)]), out=out)


@pytest.mark.parametrize("out", SINKS)
def test_schema_parts_changing_between_messages(out: str) -> None:
    """Schema parts of several tables interleaved (more than the reader keeps), mutated messages
    and keys among them, with messages without a schema part: both paths equal; the well-formed
    rows all native."""
    good = _schema_messages(6)
    values = [*good, *(m for v in good[:3] for m in _mutated(v)), *good]
    keys = [_wrapped_key(KEY_SCHEMA, b'{"id":1}'), *SCHEMA_KEYS]
    records = keyed([(v, keys[i % len(keys)] if i % 3 else keys[0]) for i, v in enumerate(values)])
    assert_same(records, out=out)
    plain = [event("c", after={"id": 1, "c": "x"})]
    mixed = keyed([(v, keys[0]) for pair in zip(good, plain * len(good), strict=True) for v in pair])
    assert assert_same(mixed, out=out) == len(mixed)


@pytest.mark.parametrize("out", SINKS)
@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/New_York", "Asia/Shanghai"])
def test_zoned_timestamps_outside_utc(zone: str, out: str) -> None:
    """Both codecs in one zone: each instant's wall clock there, natively within the years the
    zone databases agree on; DataWorks makes an instant of it again, so a wall clock the zone
    repeats (Python's ``fold``) is Python's there; between different zones Python's."""
    field = _field("io.debezium.time.ZonedTimestamp", "string")
    zoned = {"schemas_enable": True, "source_timezone": zone}
    for value in ZONED:
        records = keyed([(m, KEY) for m in messages(field, value)])
        count = assert_same(records, zoned, {"source_timezone": zone}, out)
        in_range = value[:4] not in ("1899", "2038")
        native_ = in_range and not (out == "dataworks-json" and _repeated_wall_clock(value, zone))
        assert count == (len(records) if native_ else 0), (value, count)
        assert assert_same(records, SCHEMA, {"source_timezone": zone}, out) == 0


@pytest.mark.parametrize("out", SINKS)
def test_corpus_debezium_with_the_schema_part(corpus: Path, out: str) -> None:
    values = [v for messages_ in corpus_messages(corpus_files(corpus, "debezium-json")) for v in messages_]
    wrapped = [v for v in values if v.lstrip().startswith(b'{"schema"')]
    assert wrapped
    for key in (None, b'{"id":101}', _wrapped_key(KEY_SCHEMA, b'{"id":101}')):
        assert_same(keyed([(v, key) for v in wrapped]), out=out)
    zone = {"source_timezone": "America/New_York"}
    assert_same(keyed([(v, b'{"id":101}') for v in wrapped]), {**SCHEMA, **zone}, zone, out)


@pytest.mark.parametrize(
    "zone",
    [
        "Europe/Berlin",
        "America/New_York",
        "Asia/Shanghai",
        "UTC",
    ],
)
def test_zoned_timestamps_to_dts(zone: str) -> None:
    """debezium-json -> dts-avro with both codecs in one zone: the DTS writer makes an instant of
    each wall clock again (from the decoder's zone), as Python does; in UTC natively within years
    1-9999, outside it within the years the zone databases agree on, but for wall clocks the
    zone repeats (Python's ``fold`` tells them apart); between different zones Python's."""
    from tests.test_native_debezium import assert_same as assert_debezium

    field = _field("io.debezium.time.ZonedTimestamp", "string")
    zoned = {"schemas_enable": True, "source_timezone": zone}
    for value in ZONED:
        records = keyed([(m, KEY) for m in messages(field, value)])
        count = assert_debezium(records, zoned, {"source_timezone": zone}, None, "dts-avro")
        in_range = zone == "UTC" or value[:4] not in ("1899", "2038")
        native_ = in_range and not _repeated_wall_clock(value, zone)
        assert count == (len(records) if native_ else 0), (value, count)
        if zone != "UTC":
            assert assert_debezium(records, SCHEMA, {"source_timezone": zone}, None, "dts-avro") == 0


@pytest.mark.parametrize("out", SINKS)
def test_key_columns_of_every_representation(out: str) -> None:
    """The column of each Connect case in the primary key too (the record key naming it): the key
    each writer writes (CloudCanal's, CKafka's and TDSQL's the typed values, DataWorks' the JSON
    values) as Python writes it, or the record Python's; integer and string keys native."""
    for _, field, values in CASES:
        field = _source_types(field)
        for value, _native in values[:3]:
            key = orjson.dumps({"id": 1, "c": value})
            assert_same(keyed([(m, key) for m in messages(field, value)]), out=out)
    for field, value in [({"type": "string"}, "k"), ({"type": "int32"}, 7)]:
        records = keyed([(m, orjson.dumps({"id": 1, "c": value})) for m in messages(field, value)])
        assert assert_same(records, out=out) == len(records)


@pytest.mark.parametrize("name", KEEPING)
@pytest.mark.parametrize("out", SINKS)
def test_chains_that_keep_rows(out: str, name: str) -> None:
    """The row-keeping transforms (table and op filters, routes, dropped tombstones, headers)
    over Debezium's default representations: both paths equal."""
    records = [r for seed in range(4) for r in debezium_records(_example(seed), "UTC", SCHEMA)]
    assert_same(records, out=out, transforms=CHAINS[name])


@pytest.mark.parametrize("out", SINKS)
def test_corpus_rows_are_mostly_native(corpus: Path, out: str) -> None:
    """The corpus's Debezium row events with the schema part from MySQL's connector (DataWorks
    leaves other connectors' to Python): at least half converted natively."""
    values = [v for messages_ in corpus_messages(corpus_files(corpus, "debezium-json")) for v in messages_]
    rows = [v for v in values if v.lstrip().startswith(b'{"schema"') and b'"connector":"mysql"' in v]
    assert rows
    records = keyed([(v, b'{"id":101}') for v in rows])
    assert converted(records, SCHEMA, {}, out) >= len(rows) // 2
