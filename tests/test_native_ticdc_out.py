"""The native TiCDC writer (canal-json and ticdc-canal-json -> ticdc-canal-json) against
the Python path: byte for byte.

From official Canal every value is re-written as TiCDC text (Go's shortest plain floats,
DECIMAL digits, YEAR 0, ENUM indexes, SET bitmasks) with TiCDC's type maps, ``old`` and
``_tidb``; from TiCDC itself the message is copied as the Python encoder re-writes its
own. Inputs: hypothesis streams (Canal's, merged into multi-row messages, and TiCDC's,
with and without content-compatible types and the TiDB extension), the edge values, the
corpus, the example data, malformed and mutated messages, unusual field sets; with and
without the transforms that keep rows as they are. Outputs and dead letters must be
equal, and the plan must handle the regular messages itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
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
    ROOT,
    ZONES,
    _example,
    _message,
    assert_plan_agrees,
    canal_stream,
    corpus_files,
    corpus_messages,
    edge_messages,
    records_of,
)
from tests.test_native_canal_out import CHANGING, KEEPING, UNUSUAL, keeping_messages
from tests.test_native_debezium import (
    KEY,
    KEYS,
    ROW,
    SOURCE,
    VALUES,
    debezium_records,
    event,
    good,
    keyed,
    make_chain,
)
from tests.test_native_debezium import MALFORMED as MALFORMED_EVENTS
from tests.test_native_ticdc import ENCODERS, ticdc_message, ticdc_stream
from tests.test_native_transforms import CHAINS

pytestmark = NATIVE_SUITE

#: TiCDC encoder options: the defaults, content-compatible types and ``old``, the ``_tidb`` extension.
SINKS: list[dict[str, Any]] = [
    {},
    {"content_compatible": True},
    {"enable_tidb_extension": True},
    {"content_compatible": True, "enable_tidb_extension": True},
]
SINK_IDS = ["defaults", "content-compatible", "tidb-extension", "both"]


#: The plan of each source format.
PLANS = {"canal-json": native.CANAL_TO_TICDC, "ticdc-canal-json": native.TICDC_TO_TICDC}


def assert_same(
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
    decoder: str = "canal-json",
) -> int:
    """``decoder`` -> ticdc-canal-json: both paths agree; returns how many the plan handled."""
    return assert_plan_agrees(decoder, "ticdc-canal-json", PLANS[decoder], records, source, sink, transforms)


def assert_same_ticdc(
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
) -> int:
    """``assert_same`` from ticdc-canal-json."""
    return assert_same(records, source, sink, transforms, "ticdc-canal-json")


def test_the_plans_are_chosen_for_what_they_write() -> None:
    for source in ("canal-json", "ticdc-canal-json"):
        for sink in SINKS:
            chain = Chain(get_codec(source), get_codec("ticdc-canal-json", sink), [], "all")
            assert chain.native is not None, (source, sink)
        for name in KEEPING:
            chain = Chain(get_codec(source), get_codec("ticdc-canal-json"), build_transforms(CHAINS[name]), "all")
            assert chain.native is not None, name
        for name in CHANGING:  # from canal-json: the shaped rows (tests/test_native_rowxf_ticdc.py)
            chain = Chain(get_codec(source), get_codec("ticdc-canal-json"), build_transforms(CHAINS[name]), "all")
            assert (chain.native is None) == (source == "ticdc-canal-json"), name
    for plan in (native.CANAL_TO_TICDC, native.TICDC_TO_TICDC):
        assert plan in native.status()["plans"]
        assert plan in native.plans_of("ticdc-canal-json")


# ---------------------------------------------------------------------------
# canal-json -> ticdc-canal-json
# ---------------------------------------------------------------------------


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    sink=st.sampled_from(SINKS),
    tz=st.sampled_from(ZONES),
    sink_tz=st.sampled_from([None, "UTC"]),
    merge=st.lists(st.booleans(), min_size=1, max_size=5),
    transforms=st.sampled_from([[], *(CHAINS[n] for n in KEEPING)]),
)
def test_random_canal_streams_are_byte_identical(
    stream: list[ChangeEvent],
    sink: dict[str, Any],
    tz: str,
    sink_tz: str | None,
    merge: list[bool],
    transforms: list[dict[str, Any]],
) -> None:
    values = canal_stream(stream, tz, merge)
    assert_same(records_of(values), {"source_timezone": tz}, {**sink, "source_timezone": sink_tz or tz}, transforms)


def test_canal_streams_are_mostly_handled_natively() -> None:
    total = handled = 0
    zone = {"source_timezone": "Asia/Shanghai"}
    for seed in range(30):
        values = canal_stream(_example(seed), "Asia/Shanghai", [False])
        for sink in SINKS[:2]:
            total += len(values)
            handled += assert_same(records_of(values), zone, {**sink, **zone})
    assert handled >= total * 0.6, (handled, total)


@pytest.mark.parametrize("sink", SINKS, ids=SINK_IDS)
def test_every_edge_value(sink: dict[str, Any]) -> None:
    values = edge_messages()
    assert assert_same(records_of(values), {}, sink) >= len(values) * 2 // 3


def test_regular_rows_are_all_handled_natively() -> None:
    row = {**BASE, "f": "1.5"}
    types = orjson.loads(GOOD)["mysqlType"]
    values = [
        _message(k, [row], old=[{"v": "x", "i": None}] if k == "UPDATE" else None, types=types)
        for k in ("INSERT", "UPDATE", "DELETE", "INIT")
    ]
    values.append(_message("UPDATE", [row]))  # no old: the before-image is the row
    for sink in SINKS:
        assert assert_same(records_of(values), {}, sink) == len(values)


#: Canal texts around what the writer converts itself (the rest is Python's, which also
#: words the dead letters of the impossible ones).
CANAL_TEXTS: dict[str, list[str]] = {
    "f": ["1.5", "0.1", "3.4028235e38", "3.5e38", "1e-46", "-0", "16777217", "1e10", "NaN", "1_0", " 1"],
    "db": [
        "0.1",
        "-0.0",
        "1e300",
        "1e-300",
        "5e-324",
        "123456789.125",
        "1.7976931348623157e308",
        "1e309",
        "+1.5",
        ".5",
    ],
    "d2": ["0", "-0", "-0.00", "1.25", "1.2", "00.5", "1e3", "9" * 66, "0." + "1" * 31, "NaN"],
    "y": ["0", "0000", "2024", "02024", "-1"],
    "e": ["0", "1", "2", "4", "5", "01", "NEW", "PAID", "nope", ""],
    "s": ["", "0", "1", "3", "15", "16", "01", "a", "1,2"],
    "b1": ["0", "1", "2", "-1"],
    "b8": ["0", "255", "-1", "01"],
    "i": ["0", "-1", "007", "-0", "+5", "9" * 39, "9" * 41],
    "id": ["0", "9223372036854775807", "9223372036854775808", "18446744073709551615", "-1"],
}


def test_canal_texts() -> None:
    values = []
    for column, texts in sorted(CANAL_TEXTS.items()):
        for text in texts:
            row = {**BASE, column: text}
            values.append(_message("INSERT", [row]))
            values.append(_message("UPDATE", [row], old=[{column: BASE[column], "v": None}]))
            values.append(_message("DELETE", [row]))
    for sink in SINKS[:2]:
        assert assert_same(records_of(values), {}, sink) > len(values) // 2


@settings(max_examples=300, deadline=None)
@given(value=st.floats(allow_nan=False, allow_infinity=False), width=st.sampled_from(["f", "db"]))
@example(value=562949953421312.2, width="db")  # two shortest texts equally near: Python's (and Go's) is .2
@example(value=-0.0, width="db")
@example(value=1e21, width="db")
@example(value=1.5e-7, width="db")
def test_floats_as_go_writes_them(value: float, width: str) -> None:
    texts = [repr(value), f"{value:.17g}", f"{value:.6g}"]
    values = [_message("INSERT", [{**BASE, width: t}]) for t in texts]
    handled = assert_same(records_of(values))
    if width == "db":
        assert handled == len(values)


@pytest.mark.parametrize("sink", SINKS[:2], ids=SINK_IDS[:2])
def test_unusual_fields(sink: dict[str, Any]) -> None:
    values = [v for odd in UNUSUAL for v in (GOOD, odd)]
    handled = assert_same([r for r in records_of(values) if r.value != UNUSUAL[6]], {}, sink)
    assert handled >= len(values) // 2
    plan = Chain(get_codec("canal-json"), get_codec("ticdc-canal-json", sink), [], "all").native
    assert plan is not None
    assert plan.plan.convert([UNUSUAL[6], GOOD])[0] == [-1, 1]  # no ts: Python writes the current time


def test_malformed_canal_messages_among_good_ones() -> None:
    values = [v for bad in MALFORMED for v in (GOOD, bad)]
    assert assert_same(records_of(values)) >= len(MALFORMED)


@settings(max_examples=150, deadline=None)
@given(**MUTATIONS, sink=st.sampled_from(SINKS))
def test_mutated_canal_messages(at: int, insert: bytes, cut: int, sink: dict[str, Any]) -> None:
    assert_same(records_of([GOOD[:at] + insert + GOOD[at + cut :], GOOD]), {}, sink)


@pytest.mark.parametrize("name", KEEPING)
def test_chains_that_keep_rows(name: str) -> None:
    values = keeping_messages()
    assert assert_same(records_of(values), {}, {}, CHAINS[name]) == len(values)


def test_multi_row_messages_become_one_message_per_row() -> None:
    rows = [BASE, {**BASE, "id": "2"}, {**BASE, "id": "3", "v": "z"}]
    values = [_message("INSERT", rows), _message("UPDATE", rows, old=[{"v": "a"}, {"i": None}, {"v": None}])]
    for sink in SINKS:
        assert assert_same(records_of(values), {}, sink) == len(values)
    chain = Chain(get_codec("canal-json"), get_codec("ticdc-canal-json"), [], "all")
    outputs = chain.process_batch(records_of(values[:1])).outputs
    assert [[row["id"] for row in orjson.loads(r.value)["data"]] for r in outputs] == [[row["id"]] for row in rows]


def test_timestamps_between_zones_are_pythons() -> None:
    values = [GOOD, _message("INSERT", [{"id": "1", "v": "x"}], types={"id": "int", "v": "varchar(5)"})]
    source, sink = {"source_timezone": "Asia/Shanghai"}, {"source_timezone": "UTC"}
    assert assert_same(records_of(values), source, sink) == 1  # the table without TIMESTAMP values


def test_corpus_canal_files(corpus: Path) -> None:
    total = count = 0
    for values in corpus_messages(corpus_files(corpus, "canal-json")):
        for sink in SINKS[:3]:
            count += assert_same(records_of(values), {}, sink)
            total += len(values)
        assert_same(records_of(values), {}, {}, CHAINS["headers"])
    assert total > 0 and count > 0, (count, total)


@pytest.mark.parametrize("name", ["orders.canal.jsonl", "demo-shop.canal.jsonl", "orders-with-bad-line.canal.jsonl"])
def test_example_data(name: str) -> None:
    lines = [line for line in (ROOT / "examples" / "data" / name).read_bytes().splitlines() if line.strip()]
    zone = {"source_timezone": "Asia/Shanghai"}
    for sink in SINKS[:2]:
        assert assert_same(records_of(lines), zone, {**sink, **zone}) > 0
        assert_same(records_of(lines), zone, sink)  # TIMESTAMPs re-based to UTC: Python's


# ---------------------------------------------------------------------------
# ticdc-canal-json -> ticdc-canal-json: the message copied as Python re-writes it
# ---------------------------------------------------------------------------


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=8),
    tz=st.sampled_from(ZONES),
    sink_tz=st.sampled_from([None, "UTC"]),
    encoder=st.sampled_from(ENCODERS),
    sink=st.sampled_from(SINKS),
    transforms=st.sampled_from([[], *(CHAINS[n] for n in KEEPING)]),
)
def test_random_ticdc_streams_are_byte_identical(
    stream: list[ChangeEvent],
    tz: str,
    sink_tz: str | None,
    encoder: dict[str, Any],
    sink: dict[str, Any],
    transforms: list[dict[str, Any]],
) -> None:
    values = ticdc_stream(stream, tz, {k: v for k, v in encoder.items() if k != "enable_tidb_extension"})
    sink = {**sink, "source_timezone": sink_tz or tz}
    assert_same_ticdc(records_of(values), {"source_timezone": tz}, sink, transforms)


def test_ticdc_streams_are_mostly_handled_natively() -> None:
    total = handled = 0
    zone = {"source_timezone": "Asia/Shanghai"}
    for seed in range(30):
        for encoder in ENCODERS[:2]:
            values = ticdc_stream(_example(seed), "Asia/Shanghai", encoder)
            for sink in SINKS[:2]:
                total += len(values)
                handled += assert_same_ticdc(records_of(values), zone, {**sink, **zone})
    assert handled >= total * 0.8, (handled, total)


#: The fast paths' row with TiCDC texts (labelled ENUM/SET indexes, FLOAT null).
TICDC_BASE = {**BASE, "e": "1", "s": "1"}


def _with_old(value: bytes, old: Any) -> bytes:
    return orjson.dumps({**orjson.loads(value), "old": old})


def test_ticdc_messages_and_their_old() -> None:
    changed = {**TICDC_BASE, "v": "other", "i": None}
    values = [
        ticdc_message("INSERT", TICDC_BASE),
        _with_old(ticdc_message("INSERT", TICDC_BASE), []),
        ticdc_message("INSERT", TICDC_BASE, old=TICDC_BASE),
        ticdc_message("UPDATE", TICDC_BASE, old=changed),
        ticdc_message("UPDATE", TICDC_BASE, old={"v": "other"}),
        ticdc_message("UPDATE", TICDC_BASE, old={}),
        ticdc_message("UPDATE", TICDC_BASE, old=TICDC_BASE),
        ticdc_message("UPDATE", TICDC_BASE),
        _with_old(ticdc_message("UPDATE", TICDC_BASE), []),
        ticdc_message("DELETE", TICDC_BASE),
        _with_old(ticdc_message("DELETE", TICDC_BASE), []),
        ticdc_message("INIT", TICDC_BASE),
        ticdc_message("INSERT", TICDC_BASE, database="", table=None, pkNames=[]),
        ticdc_message("INSERT", TICDC_BASE, pkNames=None, isDdl=True, sql="x"),
        ticdc_message("INSERT", TICDC_BASE, extra={"x": [1, None]}, more="é"),
    ]
    for sink in SINKS:
        assert assert_same_ticdc(records_of(values), {}, sink) == len(values)


def test_what_the_ticdc_writer_leaves_to_python() -> None:
    good = ticdc_message("INSERT", TICDC_BASE)
    values = [
        ticdc_message("INSERT", TICDC_BASE, _tidb={"commitTs": 449_000_000_000_000_000}),
        ticdc_message("INSERT", TICDC_BASE, id=7),
        ticdc_message("INSERT", TICDC_BASE, es=None),
        ticdc_message("DELETE", TICDC_BASE, old=TICDC_BASE),
        ticdc_message("UPDATE", TICDC_BASE, old={"zz": "1"}),
        ticdc_message("INSERT", {k: v for k, v in TICDC_BASE.items() if k != "v"}),
        orjson.dumps({k: v for k, v in orjson.loads(good).items() if k != "sql"}),
        orjson.dumps({**orjson.loads(good), "data": [TICDC_BASE, TICDC_BASE]}),
        ticdc_message("INSERT", TICDC_BASE, ts=None),
    ]
    mixed = [v for odd in values for v in (good, odd)]
    assert assert_same_ticdc(records_of(mixed[:-2])) == len(values) - 1
    chain = Chain(get_codec("ticdc-canal-json"), get_codec("ticdc-canal-json"), [], "all")
    assert chain.native is not None
    assert chain.native.plan.convert(values)[0] == [-1] * len(values)


def test_malformed_ticdc_messages_among_good_ones() -> None:
    good = ticdc_message("INSERT", TICDC_BASE)
    values = [v for bad in MALFORMED for v in (good, bad)]
    assert assert_same_ticdc(records_of(values)) >= len(MALFORMED)


@settings(max_examples=150, deadline=None)
@given(**MUTATIONS, sink=st.sampled_from(SINKS))
def test_mutated_ticdc_messages(at: int, insert: bytes, cut: int, sink: dict[str, Any]) -> None:
    good = ticdc_message("UPDATE", TICDC_BASE, old={"v": "x"})
    assert_same_ticdc(records_of([good[:at] + insert + good[at + cut :], good]), {}, sink)


def test_ticdc_timestamps_between_zones_are_pythons() -> None:
    values = [
        ticdc_message("INSERT", TICDC_BASE),
        ticdc_message(
            "INSERT", {"id": "1", "v": "x"}, mysqlType={"id": "int", "v": "varchar"}, sqlType={"id": 4, "v": 12}
        ),
    ]
    source, sink = {"source_timezone": "Asia/Shanghai"}, {"source_timezone": "UTC"}
    assert assert_same_ticdc(records_of(values), source, sink) == 1


def test_corpus_ticdc_files(corpus: Path) -> None:
    values = [v for messages in corpus_messages(corpus_files(corpus, "ticdc-canal-json")) for v in messages]
    assert values
    handled = 0
    for sink in SINKS:
        handled += assert_same_ticdc(records_of(values), {}, sink)
    assert handled > 0
    assert_same_ticdc(records_of(values), {}, {}, CHAINS["headers"])
    for sink in SINKS[:2]:  # TiCDC's texts read as official Canal (the Canal reader's view of them)
        assert_same(records_of(values), {}, sink)


# ---------------------------------------------------------------------------
# debezium-json -> ticdc-canal-json: the Debezium reader composed with the TiCDC writer
# ---------------------------------------------------------------------------

#: TiCDC options the Debezium reader's plan takes (the extension's ``commitTs`` would come
#: from the source block's ``commit_ts``: Python's).
DEBEZIUM_SINKS = SINKS[:2]


def assert_same_debezium(
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
) -> int:
    """debezium-json -> ticdc-canal-json: both paths agree; returns how many records the
    plan handled itself (given their keys)."""
    plan = native.DEBEZIUM_TO_TICDC
    assert_plan_agrees("debezium-json", "ticdc-canal-json", plan, records, source, sink, transforms)
    chain = make_chain(source or {}, sink or {}, transforms or [], "ticdc-canal-json")
    assert chain.native is not None
    counts = chain.native.convert_values([r.value for r in records], [r.key for r in records])[0]
    return sum(n >= 0 for n in counts)


def test_the_debezium_plan_is_chosen_for_what_it_writes() -> None:
    for sink in DEBEZIUM_SINKS:
        chain = Chain(get_codec("debezium-json"), get_codec("ticdc-canal-json", sink), [], "all")
        assert chain.native is not None and chain.native.name == native.DEBEZIUM_TO_TICDC
    tidb = Chain(get_codec("debezium-json"), get_codec("ticdc-canal-json", {"enable_tidb_extension": True}), [], "all")
    assert tidb.native is None
    for name in CHANGING:  # the row-changing ones re-shape the rows (test_native_dbz_rowxf.py)
        chain = Chain(get_codec("debezium-json"), get_codec("ticdc-canal-json"), build_transforms(CHAINS[name]), "all")
        assert chain.native.name == native.DEBEZIUM_TO_TICDC, name
    assert native.DEBEZIUM_TO_TICDC in native.plans_of("debezium-json")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    options=st.sampled_from([{}, {"tombstones_on_delete": False}, {"schemas_enable": True}]),
    tz=st.sampled_from(ZONES),
    sink_tz=st.sampled_from([None, "UTC"]),
    sink=st.sampled_from(DEBEZIUM_SINKS),
    transforms=st.sampled_from([[], *(CHAINS[n] for n in KEEPING)]),
)
def test_random_debezium_streams_are_byte_identical(
    stream: list[ChangeEvent],
    options: dict[str, Any],
    tz: str,
    sink_tz: str | None,
    sink: dict[str, Any],
    transforms: list[dict[str, Any]],
) -> None:
    records = debezium_records(stream, tz, options)
    sink = {**sink, "source_timezone": sink_tz or tz}
    assert_same_debezium(records, {"source_timezone": tz}, sink, transforms)


def test_debezium_streams_are_mostly_handled_natively() -> None:
    total = count = 0
    zone = {"source_timezone": "Asia/Shanghai"}
    for seed in range(30):
        records = [r for r in debezium_records(_example(seed), "Asia/Shanghai", {}) if r.value is not None]
        for sink in DEBEZIUM_SINKS:
            total += len(records)
            count += assert_same_debezium(records, zone, {**sink, **zone})
    assert count >= total * 0.6, (count, total)


def test_regular_debezium_events_are_all_handled_natively() -> None:
    records = keyed(good())
    for sink in DEBEZIUM_SINKS:
        assert assert_same_debezium(records, {}, sink) == len(records) - 1  # the tombstone is Python's
    (first, *_) = (
        Chain(get_codec("debezium-json"), get_codec("ticdc-canal-json"), [], "all").process_batch(records).outputs
    )
    assert orjson.loads(first.value)["data"] == [
        {"id": "1", "v": "x", "d": "2.5", "b": "1", "n": None, "big": str(-(2**63))}
    ]


@pytest.mark.parametrize("sink", DEBEZIUM_SINKS, ids=SINK_IDS[:2])
def test_debezium_values_keys_and_malformed_events(sink: dict[str, Any]) -> None:
    values = []
    for value in VALUES:
        row = {**ROW, "v": value}
        values += [
            (event("c", after=row), KEY),
            (event("u", before=ROW, after=row), KEY),
            (event("u", before=row, after=row), KEY),
            (event("d", before=row), KEY),
        ]
    values += [(v, key) for key in KEYS for v, _ in good()]
    values += [pair for bad in MALFORMED_EVENTS for pair in ((event("c", after=ROW), KEY), (bad, KEY))]
    assert assert_same_debezium(keyed(values), {}, sink) >= len(values) // 2


@settings(max_examples=150, deadline=None)
@given(**MUTATIONS, sink=st.sampled_from(DEBEZIUM_SINKS))
def test_mutated_debezium_events(at: int, insert: bytes, cut: int, sink: dict[str, Any]) -> None:
    value = event("u", before=ROW, after={**ROW, "v": "y"})
    mutated = value[:at] + insert + value[at + cut :]
    if b',"ts_ms":1700000000123,' in mutated:  # else Python may write the time of encoding
        assert_same_debezium(keyed([(mutated, KEY), (value, KEY)]), {}, sink)


@pytest.mark.parametrize("name", KEEPING)
def test_debezium_chains_that_keep_rows(name: str) -> None:
    values = [
        (event(op, before=ROW if op in "ud" else None, after=None if op == "d" else ROW, source=source), KEY)
        for op in "cudr"
        for source in (SOURCE, {**SOURCE, "table": "orders"}, {**SOURCE, "db": "other"})
    ]
    assert assert_same_debezium(keyed(values), {}, {}, CHAINS[name]) == len(values)


def test_corpus_debezium_files(corpus: Path) -> None:
    values = [v for messages in corpus_messages(corpus_files(corpus, "debezium-json")) for v in messages]
    assert values
    for key in (None, b'{"id":101}'):
        for sink in DEBEZIUM_SINKS:
            assert_same_debezium(keyed([(v, key) for v in values]), {}, sink)
