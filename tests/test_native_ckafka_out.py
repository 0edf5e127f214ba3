"""The native canal-json / ticdc-canal-json / debezium-json -> ckafka-json plans against the
Python path: byte for byte.

The CKafka writer writes one format-1 message per row on the CloudCanal writer's tables
(values as MySQL's own text, the key from the typed primary-key values): ``TYPE``,
``NEW_VALUES``/``OLD_VALUES`` (an UPDATE's before-image: the row overlaid with ``old``),
``TIME`` (the event time's second in the encoder's ``source_timezone``) and, from Debezium,
each event's binlog position. Inputs: hypothesis streams, the edge values, the corpus,
malformed and mutated messages, unusual field sets and event times; with and without the
transforms that keep rows as they are; through both ``Chain.process_batch`` and the worker's
``NativePlan.convert_values`` (one record at a time against Python).
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
from tests.test_native import (
    BASE,
    GOOD,
    MALFORMED,
    MUTATIONS,
    NATIVE_SUITE,
    ZONES,
    _example,
    _message,
    canal_stream,
    corpus_files,
    corpus_messages,
    edge_messages,
    records_of,
)
from tests.test_native_canal_out import UNUSUAL, keeping_messages, ticdc_extension_messages, ticdc_text_messages
from tests.test_native_cloudcanal_out import assert_both_agree
from tests.test_native_debezium import INPUTS, KEY, ROW, SOURCE, debezium_records, event, good, keyed
from tests.test_native_debezium import MALFORMED as DEBEZIUM_MALFORMED
from tests.test_native_maxwell import CHANGING, KEEPING, OLD_PAIRS
from tests.test_native_ticdc import ENCODERS as TICDC_ENCODERS
from tests.test_native_ticdc import ticdc_stream
from tests.test_native_transforms import CHAINS

pytestmark = NATIVE_SUITE

OUT = "ckafka-json"
#: Event times (``es``, ms) around the edges of what ``TIME`` renders: negative, before
#: 1901 and after 2037 (the zone database's years), a second's last millisecond.
TIMES = [0, -1, -1500, 999, 1_700_000_000_999, -2_300_000_000_000, 2_200_000_000_000, 253_402_300_799_000]


def assert_same(
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
    ticdc: bool = False,
) -> int:
    """Both paths give the same records and dead letters; returns how many the plan handled."""
    decoder = "ticdc-canal-json" if ticdc else "canal-json"
    plan = native.TICDC_TO_CKAFKA if ticdc else native.CANAL_TO_CKAFKA
    return assert_both_agree(decoder, plan, records, source, sink, transforms, OUT)


def test_the_plan_is_chosen_only_for_what_it_writes() -> None:
    canal, out = get_codec("canal-json"), lambda: get_codec(OUT)
    assert Chain(canal, out(), [], "all").native.name == native.CANAL_TO_CKAFKA
    assert Chain(get_codec("ticdc-canal-json"), out(), [], "all").native.name == native.TICDC_TO_CKAFKA
    for name in KEEPING:
        assert Chain(canal, out(), build_transforms(CHAINS[name]), "all").native is not None, name
    for name in CHANGING:
        assert Chain(canal, out(), build_transforms(CHAINS[name]), "all").native is None, name
    for plan in (native.CANAL_TO_CKAFKA, native.TICDC_TO_CKAFKA, native.DEBEZIUM_TO_CKAFKA):
        assert plan in native.status()["plans"] and plan in native.plans_of(OUT)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    tz=st.sampled_from(ZONES),
    sink_tz=st.sampled_from([None, "UTC", "Asia/Shanghai", "America/New_York"]),
    merge=st.lists(st.booleans(), min_size=1, max_size=5),
    transforms=st.sampled_from([[], *(CHAINS[n] for n in KEEPING)]),
)
def test_random_streams_are_byte_identical(
    stream: list[ChangeEvent], tz: str, sink_tz: str | None, merge: list[bool], transforms: list[dict[str, Any]]
) -> None:
    values = canal_stream(stream, tz, merge)
    assert_same(records_of(values), {"source_timezone": tz}, {"source_timezone": sink_tz or tz}, transforms)


def test_generated_streams_are_mostly_handled_natively() -> None:
    total = handled = 0
    zone = {"source_timezone": "Asia/Shanghai"}
    for seed in range(30):
        values = canal_stream(_example(seed), "Asia/Shanghai", [True, False])
        total += len(values)
        handled += assert_same(records_of(values), zone, zone)
    assert handled >= total * 0.6, (handled, total)


@pytest.mark.parametrize("tz", ["UTC", "Asia/Shanghai"])
def test_every_edge_value(tz: str) -> None:
    values = edge_messages(rows=2)
    zone = {"source_timezone": tz}
    assert assert_same(records_of(values), zone, zone) >= len(values) // 2
    assert_same(records_of(values), zone, {"source_timezone": "UTC"})


def test_updates_write_the_row_overlaid_with_old() -> None:
    from tests.test_fastpath import TYPES

    types = {**dict(TYPES), "s": "set"}
    values = []
    for column, pairs in OLD_PAIRS.items():
        for now, before in pairs:
            for a, b in ((now, before), (before, now)):
                row = {**BASE, "s": None, column: a}
                values.append(_message("UPDATE", [row], old=[{column: b}], types=types))
                values.append(_message("UPDATE", [row], old=[{column: b, "v": "changed"}], types=types))
    values.append(_message("UPDATE", [{"id": "1", "v": "x"}], old=[{"i": "5", "v": "y"}]))  # a column the row lacks
    values.append(_message("UPDATE", [BASE], old=[{}]))
    assert assert_same(records_of(values)) >= len(values) // 2


def test_regular_messages_are_all_handled() -> None:
    rows = [BASE, {**BASE, "id": "2"}, {**BASE, "id": "3", "v": "z"}]
    values = [
        _message("INSERT", rows),
        _message("UPDATE", rows, old=[{"v": "a"}, {"i": None}, {"v": None, "i": "9"}]),
        _message("UPDATE", rows),
        _message("DELETE", rows),
        _message("INIT", rows),
        _message("INSERT", rows, pkNames=["v"]),
        _message("INSERT", rows, pkNames=[]),
        _message("INSERT", rows, pkNames=None),
        _message("INSERT", rows, es=-1500),
        _message("INSERT", rows, es=None),  # TIME from ``ts``
        _message("INSERT", rows, ts=None),
        _message("INSERT", rows, database="", table=""),
    ]
    assert assert_same(records_of(values)) == len(values)
    result = Chain(get_codec("canal-json"), get_codec(OUT), [], "all").process_batch(records_of(values[1:2]))
    assert len(result.outputs) == 3
    first = orjson.loads(result.outputs[0].value)
    assert first["TYPE"] == "U" and first["NEW_VALUES"]["id"] == BASE["id"] and first["OLD_VALUES"]["v"] == "a"


def test_messages_without_a_time_are_pythons() -> None:
    """``TIME`` of a message without ``es`` and ``ts`` is the record's timestamp: Python's."""
    values = [_message("INSERT", [BASE], es=None, ts=None), GOOD]
    assert assert_same(records_of(values)) == 1


@pytest.mark.parametrize("sink_tz", ["UTC", "Asia/Shanghai", "America/New_York", "Australia/Lord_Howe"])
def test_event_times_in_every_zone(sink_tz: str) -> None:
    types, row = {"id": "int", "v": "varchar(5)"}, {"id": "1", "v": "x"}  # no TIMESTAMP: any two zones
    values = [_message("INSERT", [row], es=ms, types=types) for ms in TIMES]
    values += [_message("DELETE", [row], es=None, ts=ms, types=types) for ms in TIMES]
    handled = assert_same(records_of(values), {}, {"source_timezone": sink_tz})
    assert handled >= len(values) // 2


def test_unusual_fields() -> None:
    values = [v for odd in UNUSUAL for v in (GOOD, odd)]
    assert assert_same(records_of(values)) >= len(values) // 2


def test_malformed_messages_among_good_ones() -> None:
    values = [v for bad in MALFORMED for v in (GOOD, bad)]
    assert assert_same(records_of(values)) >= len(MALFORMED)


@settings(max_examples=150, deadline=None)
@given(**MUTATIONS)
def test_mutated_messages(at: int, insert: bytes, cut: int) -> None:
    assert_same(records_of([GOOD[:at] + insert + GOOD[at + cut :], GOOD]))


@pytest.mark.parametrize("name", KEEPING)
def test_chains_that_keep_rows(name: str) -> None:
    values = keeping_messages()
    assert assert_same(records_of(values), {}, {}, CHAINS[name]) == len(values)


def test_timestamps_between_zones_are_pythons() -> None:
    values = [GOOD, _message("INSERT", [{"id": "1", "v": "x"}], types={"id": "int", "v": "varchar(5)"})]
    source, sink = {"source_timezone": "Asia/Shanghai"}, {"source_timezone": "UTC"}
    assert assert_same(records_of(values), source, sink) == 1  # the table without TIMESTAMP values


@pytest.mark.parametrize(
    "key_type,texts",
    [
        ("bigint(20) unsigned", ["1", "18446744073709551615", "-1", "01", "99999999999999999999"]),
        ("varchar(10)", ["a", "", "ü"]),
        ("enum('a','b')", ["1", "2", "0", "a", "9"]),
        ("decimal(10,2)", ["1.5", "1.50"]),
        ("datetime", ["2020-01-01 00:00:00"]),
    ],
)
def test_keys_of_every_kind(key_type: str, texts: list[str]) -> None:
    types = {"id": key_type, "v": "varchar(5)"}
    values = [_message("INSERT", [{"id": t, "v": "x"}], types=types) for t in texts]
    values.append(_message("DELETE", [{"id": None, "v": "x"}], types=types))
    values.append(_message("INSERT", [{"v": "x"}], types=types))  # the key column missing
    assert_same(records_of(values))


def test_corpus_canal_files(corpus: Path) -> None:
    total = count = 0
    for values in corpus_messages(corpus_files(corpus, "canal-json")):
        count += assert_same(records_of(values))
        total += len(values)
        assert_same(records_of(values), {}, {}, CHAINS["headers"])
    assert total > 0 and count > total // 2, (count, total)


# ---------------------------------------------------------------------------
# from ticdc-canal-json
# ---------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=8),
    tz=st.sampled_from(ZONES),
    encoder=st.sampled_from(TICDC_ENCODERS),
    transforms=st.sampled_from([[], *(CHAINS[n] for n in KEEPING)]),
)
def test_ticdc_random_streams_are_byte_identical(
    stream: list[ChangeEvent], tz: str, encoder: dict[str, Any], transforms: list[dict[str, Any]]
) -> None:
    values = ticdc_stream(stream, tz, encoder)
    zone = {"source_timezone": tz}
    assert_same(records_of(values), zone, zone, transforms, ticdc=True)


def test_ticdc_texts_and_extension_messages() -> None:
    values = ticdc_text_messages(null_old=False) + ticdc_extension_messages()
    assert assert_same(records_of(values), ticdc=True) > len(values) // 3


def test_ticdc_corpus_files(corpus: Path) -> None:
    values = [v for messages in corpus_messages(corpus_files(corpus, "ticdc-canal-json")) for v in messages]
    assert values
    assert assert_same(records_of(values), ticdc=True) > 0


# ---------------------------------------------------------------------------
# from debezium-json
# ---------------------------------------------------------------------------


def assert_debezium(
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
) -> int:
    return assert_both_agree("debezium-json", native.DEBEZIUM_TO_CKAFKA, records, source, sink, transforms, OUT)


def debezium_chain(transforms: list[dict[str, Any]]) -> Chain:
    return Chain(get_codec("debezium-json"), get_codec(OUT), build_transforms(transforms), "all")


def test_the_debezium_plan_is_chosen_only_for_what_it_writes() -> None:
    plan = debezium_chain([]).native
    assert plan is not None and plan.name == native.DEBEZIUM_TO_CKAFKA and plan.needs_keys
    for name in KEEPING:
        assert debezium_chain(CHAINS[name]).native is not None, name
    for name in CHANGING:
        assert debezium_chain(CHAINS[name]).native is None, name


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    options=st.sampled_from(INPUTS),
    tz=st.sampled_from(ZONES),
    sink_tz=st.sampled_from([None, "UTC", "America/New_York"]),
    transforms=st.sampled_from([[], *(CHAINS[n] for n in KEEPING)]),
)
def test_debezium_random_streams_are_byte_identical(
    stream: list[ChangeEvent],
    options: dict[str, Any],
    tz: str,
    sink_tz: str | None,
    transforms: list[dict[str, Any]],
) -> None:
    records = debezium_records(stream, tz, options)
    assert_debezium(records, {"source_timezone": tz}, {"source_timezone": sink_tz or tz}, transforms)


def test_debezium_streams_are_mostly_handled_natively() -> None:
    total = count = 0
    zone = {"source_timezone": "Asia/Shanghai"}
    for seed in range(30):
        records = [r for r in debezium_records(_example(seed), "Asia/Shanghai", {}) if r.value is not None]
        total += len(records)
        count += assert_debezium(records, zone, zone)
    assert count >= total * 0.6, (count, total)


def test_debezium_regular_events_are_all_handled() -> None:
    values = [(v, k) for v, k in good() if v is not None]
    assert assert_debezium(keyed(values)) == len(values)
    pairs = [
        ({**ROW, "d": -0.0}, {**ROW, "d": 0.0}),
        ({**ROW, "b": False}, ROW),
        ({**ROW, "n": None, "v": None}, {**ROW, "n": "x", "v": "y"}),
        ({**ROW, "id": 2}, ROW),
    ]
    updates = [(event("u", before=b, after=a), KEY) for b, a in pairs]
    assert assert_debezium(keyed(updates)) == len(updates)


#: Source blocks whose binlog position CKafka writes (``BINLOG_NAME``, ``BINLOG_POS``,
#: ``EVENT_SERVER_ID``, ``GLOBAL_ID``), in the forms the plan writes and those it leaves to Python.
POSITIONS: list[dict[str, Any]] = [
    {"file": "mysql-bin.000007", "pos": 154, "server_id": 223344, "gtid": "3E11FA47-71CA-11E1-9E33-C80AA9429562:23"},
    {"file": "", "pos": 0, "server_id": 0, "gtid": None},
    {"file": None, "pos": None, "server_id": None},
    {"file": 'ü"\\', "pos": -1, "server_id": "srv", "gtid": 5},
    {"server_id": 1.5, "gtid": [1, {"a": None}]},
    {"pos": 1.0},
    {"file": 7},
    {"file": ["x"]},
    {"gtid": "😀"},
]
#: The same written as no dict can be: integers past 64 bits, escapes, repeated fields.
RAW_POSITIONS = [
    (b'"pos":4711', b'"pos":1180591620717411303424'),
    (b'"server_id":1', b'"server_id":1180591620717411303424'),
    (b'"gtid":null', b'"gtid":"\\ud83d\\ude00\\n"'),
    (b'"file":"binlog.000003"', b'"file":"bin\\u006cog.1"'),
    (b'"pos":4711', b'"pos":4711,"pos":12'),
    (b'"server_id":1', b'"server_id":1e3'),
]


def test_debezium_binlog_positions() -> None:
    values = [(event(op, before=ROW if op in "ud" else None, after=None if op == "d" else ROW,
                     source={**SOURCE, **position}), KEY) for position in POSITIONS for op in "cud"]  # fmt: skip
    plain = event("c", after=ROW)
    for old, new in RAW_POSITIONS:
        assert old in plain
        values.append((plain.replace(old, new), KEY))
    handled = assert_debezium(keyed(values))
    assert handled >= len(values) // 2, handled


def test_debezium_keys_sources_and_malformed_events() -> None:
    values = [(bad, KEY) for bad in DEBEZIUM_MALFORMED] + good()
    values += [(event("c", after=ROW), key) for key in (None, b"", b'{"v":"x"}', b'{"d":1}', b'{"b":1}', b"{}")]
    values += [
        (event("c", after=ROW, source={**SOURCE, "schema": "public"}), KEY),
        (event("c", after=ROW, source={**SOURCE, "db": ""}), KEY),
        (event("c", after=ROW, source={**SOURCE, "table": ""}), KEY),
        (event("c", after=ROW, source={**SOURCE, "ts_ms": -1}), KEY),
        (event("c", after=ROW, ts_ms=None), KEY),
        (event("c", after={**ROW, "d": 1e300}), KEY),
    ]
    assert_debezium(keyed(values))


@pytest.mark.parametrize("name", KEEPING)
def test_debezium_chains_that_keep_rows(name: str) -> None:
    values = [
        (event(op, before=ROW if op in "ud" else None, after=None if op == "d" else ROW, source=source), KEY)
        for op in "cudr"
        for source in (SOURCE, {**SOURCE, "table": "orders"}, {**SOURCE, "db": "other"})
    ]
    assert assert_debezium(keyed(values), {}, {}, CHAINS[name]) == len(values)


def test_debezium_corpus_files(corpus: Path) -> None:
    values = [v for messages in corpus_messages(corpus_files(corpus, "debezium-json")) for v in messages]
    assert values
    for key in (None, b'{"id":101}'):
        records = keyed([(v, key) for v in values])
        assert_debezium(records)
        assert_debezium(records, {}, {}, CHAINS["headers"])
    schemaless = [v for v in values if not v.lstrip().startswith(b'{"schema"')]
    counts = debezium_chain([]).native.convert_values(schemaless, [None] * len(schemaless))[0]
    assert sum(n >= 0 for n in counts) >= len(schemaless) // 2
