"""The native Debezium reader with the typed-JSON and DTS Avro writers: what
``tests/test_native_debezium.py`` (whose suites run these writers too: hypothesis
streams, hand-made values, keys and malformed events, the corpus, the row-keeping
transforms, the worker) does not cover.

debezium-json -> maxwell-json, -> ogg-json and -> dts-avro: the reader types columns from
the JSON values as the Python decoder does without the schema part (``bigint``,
``double``, ``longtext``, ``bit(1)``) and each writer converts the values as from Canal
text; the keys are Python's (the key columns' JSON values; DTS: its typed values), the
source position Python's model keeps is written per event (Maxwell's ``xid``,
``position``, ``server_id``, ``gtid``; DTS's ``sourcePosition`` and ``sourceTxid``).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt.transforms import native
from cdc_smt.transforms.model import ChangeEvent
from tests.strategies import change_streams
from tests.test_native import NATIVE_SUITE, ZONES, _example
from tests.test_native_canal_out import CHANGING, KEEPING
from tests.test_native_debezium import (
    CONVERTING,
    CONVERTING_IDS,
    KEY,
    MALFORMED,
    ROW,
    SOURCE,
    assert_same,
    debezium_records,
    event,
    good,
    keyed,
    make_chain,
    same,
    with_schema,
)
from tests.test_native_transforms import CHAINS

pytestmark = NATIVE_SUITE


@pytest.mark.parametrize("writer", CONVERTING, ids=CONVERTING_IDS)
def test_the_plan_is_chosen_only_for_what_it_reads_and_writes(writer: tuple[str, dict[str, Any], str]) -> None:
    encoder, sink, name = writer
    plan = make_chain({}, sink, [], encoder).native
    assert plan is not None and plan.needs_keys and plan.name == name
    assert name in native.status()["plans"]
    assert name in native.plans_of("debezium-json") and name in native.plans_of(encoder)
    for chain in KEEPING:
        assert make_chain({}, sink, CHAINS[chain], encoder).native is not None, chain
    for chain in CHANGING:  # the row-changing ones re-shape the rows (``test_native_dbz_rowxf.py``)
        assert make_chain({}, sink, CHAINS[chain], encoder).native.name == name, chain


@pytest.mark.parametrize("writer", CONVERTING, ids=CONVERTING_IDS)
def test_updates_compare_values_as_python_does(writer: tuple[str, dict[str, Any], str]) -> None:
    """Maxwell's ``old`` and the before-images: changed and unchanged columns, floats equal
    across signs of zero, booleans, nulls appearing and going, the key changing."""
    pairs = [
        ({**ROW, "d": -0.0}, {**ROW, "d": 0.0}),
        ({**ROW, "d": 1.0}, {**ROW, "d": 1.5}),
        ({**ROW, "b": False}, ROW),
        ({**ROW, "n": None, "v": None}, {**ROW, "n": "x", "v": "y"}),
        ({**ROW, "v": "y"}, {**ROW, "v": None}),
        ({**ROW, "id": 2}, ROW),
    ]
    values = [(event("u", before=b, after=a), KEY) for b, a in pairs]
    assert same(keyed(values), writer) == len(values)


#: Source positions (fields replacing the source block's ``file``, ``pos``, ``server_id`` and
#: ``gtid``), and whether the plan writes them itself (else: forms it leaves to Python).
POSITIONS: list[tuple[dict[str, Any], bool]] = [
    ({}, True),
    ({"file": None, "pos": None, "server_id": None, "gtid": None}, True),
    ({"file": "", "pos": 4}, True),
    ({"file": "binlog", "pos": 4}, True),
    ({"file": "binlog.000000", "pos": 0}, True),
    ({"file": "binlog.0100", "pos": -0}, True),
    ({"file": "a1b22", "pos": 2**63 - 1}, True),
    ({"file": "binlog.\u0663", "pos": 4}, False),  # an Arabic-Indic digit: Python's \d
    ({"file": "binlog.3\n", "pos": 4}, False),  # Python's $ matches before the newline
    ({"file": "binlog.3", "pos": 4.5}, False),
    ({"file": "binlog.3", "pos": "4"}, False),
    ({"file": 5, "pos": 4}, False),
    ({"file": False, "pos": 4}, False),
    ({"txId": 17}, True),
    ({"txId": 0}, True),
    ({"txId": "17"}, False),
    ({"txId": -1}, False),
    ({"server_id": 0}, True),
    ({"server_id": "x"}, True),
    ({"server_id": {"a": [1]}}, True),
    ({"server_id": 1.5}, False),
    ({"gtid": "3E11FA47-71CA-11E1-9E33-C80AA9429562:23"}, True),
    ({"gtid": ""}, True),
]


@pytest.mark.parametrize("writer", CONVERTING, ids=CONVERTING_IDS)
@pytest.mark.parametrize(("position", "native_"), POSITIONS, ids=repr)
def test_source_positions(position: dict[str, Any], native_: bool, writer: tuple[str, dict[str, Any], str]) -> None:
    source = {k: v for k, v in SOURCE.items() if k not in ("file", "pos", "server_id", "gtid")}
    source.update(position)
    ops = [(op, ROW if op in "ud" else None, None if op == "d" else ROW) for op in "cudr"]
    values = [(event(op, before=before, after=after, source=source), KEY) for op, before, after in ops]
    count = same(keyed(values), writer)
    if native_ or writer[0] == "ogg-json":  # GoldenGate writes none of them
        assert count == len(values)


@pytest.mark.parametrize("writer", CONVERTING, ids=CONVERTING_IDS)
def test_transaction_blocks_are_pythons(writer: tuple[str, dict[str, Any], str]) -> None:
    """Python may take the transaction's id as the event's (Maxwell's ``xid``, DTS's
    ``sourceTxid``): such events are Python's."""
    tx = {"id": "571:53195829", "total_order": 1, "data_collection_order": 1}
    values = [(event("c", after=ROW, transaction=tx), KEY), (event("c", after=ROW), KEY)]
    plan = make_chain({}, writer[1], [], writer[0]).native
    counts = plan.convert_values([v for v, _ in values], [k for _, k in values])[0]
    if writer[0] == "ogg-json":  # GoldenGate writes no transaction id
        assert counts == [1, 1]
    else:
        assert counts[0] == -1 and (counts[1] == 1 or writer[0] == "dts-avro")
    same(keyed(values), writer)


@pytest.mark.parametrize("writer", CONVERTING, ids=CONVERTING_IDS)
def test_ogg_table_names_hold_the_schema(writer: tuple[str, dict[str, Any], str]) -> None:
    """A Postgres source's schema is part of GoldenGate's table name (and DTS's object name)."""
    sources = [
        {**SOURCE, "connector": "postgresql", "schema": "public"},
        {**SOURCE, "connector": "postgresql", "schema": ""},
        {**SOURCE, "connector": "postgresql", "schema": "s", "db": ""},
        {**SOURCE, "connector": "postgresql", "schema": "s", "table": ""},
    ]
    values = [(event("c", after=ROW, source=source), KEY) for source in sources]
    count = sum(same(keyed([pair]), writer) for pair in values)
    assert count >= 2
    if writer[0] == "ogg-json":
        (out,) = make_chain({}, {}, [], "ogg-json").process_batch(keyed(values[:1])).outputs
        assert orjson.loads(out.value)["table"] == "shop.public.t"


@pytest.mark.parametrize("writer", CONVERTING, ids=CONVERTING_IDS)
def test_malformed_events_one_batch_each(writer: tuple[str, dict[str, Any], str]) -> None:
    """Each bad event in a batch of its own after a good one: the good ones are native (DTS
    among them, whose batches are Python's from their first record for Python)."""
    count = sum(same(keyed([(event("c", after=ROW), KEY), (bad, KEY)]), writer) for bad in MALFORMED)
    assert count >= len(MALFORMED)


def test_dts_record_ids_follow_pythons_records_and_batches() -> None:
    """Ids are numbered in order over native and Python records (a tombstone, a bad event
    and a schema-part event in between), within a batch and over batches."""
    writer = CONVERTING[2]
    records = keyed([*good(), (MALFORMED[8], KEY), *good(), *with_schema(good())[:2], *good()])
    assert same(records, writer) == 5  # (counted up to the first record for Python)
    chain, twin = make_chain({}, {}, [], "dts-avro"), make_chain({}, {}, [], "dts-avro")
    twin.native = None
    for part in (records[:5], records[5:11], records[11:]):
        got, want = chain.process_batch(part), twin.process_batch(part)
        assert [(r.value, r.key) for r in got.outputs] == [(r.value, r.key) for r in want.outputs]


def test_dts_tombstones_take_no_record_id() -> None:
    """A Debezium tombstone is no event to Python (it numbers no record): the plan goes on
    numbering the records after it in the same batch."""
    records = keyed(good() * 3)
    assert same(records, CONVERTING[2]) == sum(r.value is not None for r in records)


@pytest.mark.parametrize("writer", CONVERTING, ids=CONVERTING_IDS)
def test_the_schema_part_is_read(writer: tuple[str, dict[str, Any], str]) -> None:
    """Values in the Connect schema's representations are read as for Canal (``connect_in.rs``):
    the plan's, every row of them."""
    records = keyed(with_schema(good()))
    assert same(records, writer) == sum(r.value is not None for r in records)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    options=st.sampled_from([{"schemas_enable": True}, {"schemas_enable": True, "time_precision_mode": "connect"}]),
    tz=st.sampled_from(ZONES),
    writer=st.sampled_from(CONVERTING),
)
def test_the_schema_part_to_the_converting_writers(
    stream: list[ChangeEvent], options: dict[str, Any], tz: str, writer: tuple[str, dict[str, Any], str]
) -> None:
    records = debezium_records(stream, tz, options)
    assert_same(records, {"source_timezone": tz}, {"source_timezone": tz}, None, writer[0])


CANAL = ("canal-json", {}, native.DEBEZIUM_TO_CANAL)
#: Debezium inputs with the schema part, in each value representation (to Canal: the columns
#: whose values are written as they are go natively, the rest is Python's).
SCHEMA_INPUTS: list[dict[str, Any]] = [
    {"schemas_enable": True},
    {"schemas_enable": True, "decimal_handling_mode": "string", "binary_handling_mode": "hex"},
    {"schemas_enable": True, "time_precision_mode": "connect", "bigint_unsigned_handling_mode": "precise"},
    {"schemas_enable": True, "decimal_handling_mode": "double"},
    {"schemas_enable": True, "decimal_format": "numeric"},
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(stream=change_streams(max_events=10), options=st.sampled_from(SCHEMA_INPUTS), tz=st.sampled_from(ZONES))
def test_the_schema_part_to_canal(stream: list[ChangeEvent], options: dict[str, Any], tz: str) -> None:
    records = debezium_records(stream, tz, options)
    assert_same(records, {"source_timezone": tz}, {"source_timezone": tz}, None, "canal-json")


def test_the_schema_part_to_canal_is_native_where_values_are_as_written() -> None:
    total = count = 0
    for seed in range(20):
        records = [r for r in debezium_records(_example(seed), "UTC", {"schemas_enable": True}) if r.value is not None]
        total += len(records)
        count += assert_same(records, {}, {}, None, "canal-json")
    assert count >= total * 0.6, (count, total)
    # values in Connect representations (a decimal as base64 bytes, a date as days): the plan's
    # (their text written by the reader, tests/test_native_debezium_connect.py)
    decimal = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}}
    date = {"type": "int32", "name": "io.debezium.time.Date"}
    fields = [{"type": "int64", "field": "id"}, {**decimal, "field": "p"}, {**date, "field": "day"}]
    schema = {"type": "struct", "fields": [{"optional": f["field"] != "id", "version": 1, **f} for f in fields]}
    envelope = {"type": "struct", "fields": [{**schema, "field": "before"}, {**schema, "field": "after"}]}
    rows = [{"id": 1, "p": "AQ==", "day": None}, {"id": 1, "p": None, "day": 19000}, {"id": 1, "p": None, "day": None}]
    values = [orjson.dumps({"schema": envelope, "payload": orjson.loads(event("c", after=row))}) for row in rows]
    assert [same(keyed([(v, KEY)]), CANAL) for v in values] == [1, 1, 1]


#: Days since the epoch and whether the plan writes their date (years 1 to 9999, as
#: ``date.fromordinal``; outside, Python's error).
DAYS = [(0, True), (-1, True), (19000, True), (-719162, True), (2932896, True), (-719163, False), (2932897, False)]


@pytest.mark.parametrize("name", ["io.debezium.time.Date", "org.apache.kafka.connect.data.Date"])
def test_the_schema_part_dates_to_canal(name: str) -> None:
    """DATE columns under a schema part (Debezium's and Connect's ``Date``): days re-written
    as Canal's date text by the reader, byte for byte as Python writes them, in both images
    of an update (``old`` the changed dates) and next to nulls; days outside years 1 to 9999
    Python's (its error)."""
    date = {"type": "int32", "name": name, "version": 1, "optional": True, "field": "day"}
    fields = [{"type": "int64", "optional": False, "field": "id"}, date, {**date, "field": "other"}]
    schema = {"type": "struct", "fields": fields}
    envelope = {"type": "struct", "fields": [{**schema, "field": "before"}, {**schema, "field": "after"}]}

    def message(op: str, before: Any, after: Any) -> bytes:
        return orjson.dumps({"schema": envelope, "payload": orjson.loads(event(op, before=before, after=after))})

    for days, native_ in DAYS:
        row = {"id": 1, "day": days, "other": None}
        values = [
            message("c", None, row),
            message("u", {**row, "day": None, "other": 0}, row),
            message("u", row, {**row, "other": days}),
            message("d", row, None),
        ]
        assert same(keyed([(v, KEY) for v in values]), CANAL) == (len(values) if native_ else 0), days
