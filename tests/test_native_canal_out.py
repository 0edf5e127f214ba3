"""The native canal-json -> canal-json plan against the Python path: byte for byte.

The Canal writer copies what the Python encoder copies when it re-writes its own
format (values as text, the message's fields and type maps) and splits messages
per row (``batch: row``) or keeps them whole (``batch: transaction``). Inputs:
hypothesis streams (single- and multi-row messages), the edge values, the
corpus, the example data, malformed and mutated messages, unusual field sets;
with and without the transforms that keep rows as they are. Outputs and dead
letters must be equal, and the plan must handle the regular messages itself.
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
    ROOT,
    ZONES,
    _example,
    _message,
    assert_plan_agrees,
    canal_stream,
    corpus_files,
    corpus_messages,
    edge_messages,
    outputs,
    records_of,
)
from tests.test_native_ticdc import ENCODERS as TICDC_ENCODERS
from tests.test_native_ticdc import ticdc_message, ticdc_stream
from tests.test_native_transforms import CHAINS

pytestmark = NATIVE_SUITE


#: Canal encoder options: per row (the default) and per transaction.
SINKS: list[dict[str, Any]] = [{}, {"batch": "transaction"}]

#: Chains the Canal writer runs natively (transforms that keep rows, tables and keys).
KEEPING = [
    "filter-tables", "filter-drops-all", "filter-action-drop", "route", "route-regex", "drop-tombstones", "headers",
]  # fmt: skip
#: Chains that change rows, keys or tables (from canal-json: ``native_rowxf``'s shaped writer).
CHANGING = ["five", "replace-exclude", "mask-hash", "insert-field", "value-to-key", "merge-shards", "predicate"]


def keeping_messages() -> list[bytes]:
    """Two-row messages of each op in the table the keeping chains select and in others."""
    rows = [BASE, {**BASE, "id": "2"}]
    return [
        _message(k, rows, old=[{"v": "x"}, {"i": None}] if k == "UPDATE" else None, **more)
        for k in ("INSERT", "UPDATE", "DELETE", "INIT")
        for more in ({}, {"table": "orders"}, {"database": "other"})
    ]


def make_chain(source: dict[str, Any], sink: dict[str, Any], transforms: list[dict[str, Any]]) -> Chain:
    return Chain(get_codec("canal-json", source), get_codec("canal-json", sink), build_transforms(transforms), "all")


def assert_same(
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
) -> int:
    """Both paths give the same records and dead letters; returns how many the plan handled."""
    return assert_plan_agrees("canal-json", "canal-json", native.CANAL_TO_CANAL, records, source, sink, transforms)


def test_the_plan_is_chosen_only_for_what_it_writes() -> None:
    canal = lambda **o: get_codec("canal-json", o)  # noqa: E731
    assert Chain(canal(), canal(), [], "all").native.name == native.CANAL_TO_CANAL
    assert Chain(canal(), canal(batch="transaction"), [], "all").native is not None
    for name in KEEPING:
        assert Chain(canal(), canal(), build_transforms(CHAINS[name]), "all").native is not None, name
    ticdc = get_codec("ticdc-canal-json", {})
    for name in CHANGING:
        assert Chain(canal(), canal(), build_transforms(CHAINS[name]), "all").native is not None, name
        assert Chain(ticdc, canal(), build_transforms(CHAINS[name]), "all").native is None, name
    assert native.CANAL_TO_CANAL in native.status()["plans"]
    assert native.CANAL_TO_CANAL in native.plans_of("canal-json")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    sink=st.sampled_from(SINKS),
    tz=st.sampled_from(ZONES),
    sink_tz=st.sampled_from([None, "UTC", "Asia/Shanghai"]),
    merge=st.lists(st.booleans(), min_size=1, max_size=5),
    transforms=st.sampled_from([[], *(CHAINS[n] for n in KEEPING)]),
)
def test_random_streams_are_byte_identical(
    stream: list[ChangeEvent],
    sink: dict[str, Any],
    tz: str,
    sink_tz: str | None,
    merge: list[bool],
    transforms: list[dict[str, Any]],
) -> None:
    values = canal_stream(stream, tz, merge)
    sink = {**sink, "source_timezone": sink_tz or tz}
    assert_same(records_of(values), {"source_timezone": tz}, sink, transforms)


def test_generated_streams_are_mostly_handled_natively() -> None:
    total = handled = 0
    for seed in range(30):
        values = canal_stream(_example(seed), "Asia/Shanghai", [True, False])
        for sink in SINKS:
            total += len(values)
            handled += assert_same(records_of(values), {"source_timezone": "Asia/Shanghai"}, sink)
    assert handled >= total * 0.8, (handled, total)


@pytest.mark.parametrize("sink", SINKS, ids=["row", "transaction"])
def test_every_edge_value(sink: dict[str, Any]) -> None:
    values = edge_messages(rows=2)
    assert assert_same(records_of(values), {}, sink) == len(values)


def test_messages_split_per_row_or_kept_whole() -> None:
    rows = [BASE, {**BASE, "id": "2"}, {**BASE, "id": "3", "v": "z"}]
    values = [
        _message("INSERT", rows),
        _message("UPDATE", rows, old=[{"v": "a"}, {"i": None}, {"v": None, "i": "9"}]),
        _message("UPDATE", rows),
        _message("DELETE", rows),
        _message("INIT", rows),
        _message("INSERT", rows, pkNames=["v"]),  # rows with one key: the whole message keeps it
        _message("INSERT", rows, pkNames=[]),
        _message("INSERT", rows, pkNames=None),
    ]
    for sink in SINKS:
        assert assert_same(records_of(values), {}, sink) == len(values)
    fast = make_chain({}, {}, [])
    assert len(fast.process_batch(records_of(values[:1])).outputs) == 3
    whole = make_chain({}, {"batch": "transaction"}, [])
    (record,) = whole.process_batch(records_of(values[:1])).outputs
    assert orjson.loads(record.value)["data"] == rows


def _fields(**changes: Any) -> bytes:
    """GOOD with fields replaced (``None``: removed)."""
    msg = orjson.loads(GOOD)
    for k, v in changes.items():
        if v is None:
            msg.pop(k, None)
        else:
            msg[k] = v
    return orjson.dumps(msg)


#: Field sets and values the writer copies, or leaves to Python (what Python computes).
UNUSUAL: list[bytes] = [
    _fields(old=None),
    _fields(database=None),
    _fields(table=None),
    _fields(es=None),
    _fields(id=None, isDdl=None, sql=None),
    _fields(pkNames=None),
    _fields(ts=None),  # Python writes the current time: Python's (compared by its absence below)
    _fields(sqlType=None),
    _fields(id="x\u00e9", isDdl=1, sql='INSERT "q"\n'),
    _fields(id=-(2**63), isDdl=[True, None, {"a": [1, "b"]}]),
    _fields(id=2**64 - 1),
    _fields(id=1.5),
    _fields(extra={"x": 1, "y": [None]}, _tidb={"commitTs": 5}),
    _fields(database="", table=""),
    GOOD.replace(b'"sql":""', b'"sql":"\\u00e9\\/"'),
    GOOD.replace(b'"id":1', b'"id":1,"zz":1,"zz":2'),
    GOOD.replace(b'"id":1', b'"id":{"a":1,"a":2}'),
    GOOD.replace(b'"id":1', b'"id":-0'),
    GOOD.replace(b'"id":1', b'"id":1E2'),
    _message("INSERT", [BASE], old=[{"v": "a"}]),
    _message("INSERT", [BASE], old=[]),
    GOOD.replace(b'"old":null', b'"old":[{"v":"a","v":"b"}]').replace(b"INSERT", b"UPDATE"),
    _message("UPDATE", [BASE], old=[{}]),
    _message("INSERT", [{k: v for k, v in BASE.items() if k != "v"}]),
    _message("INSERT", [dict(reversed(BASE.items()))]),
]


@pytest.mark.parametrize("sink", SINKS, ids=["row", "transaction"])
def test_unusual_fields(sink: dict[str, Any]) -> None:
    values = [v for odd in UNUSUAL for v in (GOOD, odd)]
    handled = assert_same([r for r in records_of(values) if r.value != UNUSUAL[6]], {}, sink)
    assert handled >= len(values) // 2 + 10
    # ts missing: Python writes the time of encoding, the plan hands it over
    plan = make_chain({}, sink, []).native
    assert plan is not None
    assert plan.plan.convert([UNUSUAL[6], UNUSUAL[7], GOOD])[0] == [-1, -1, 1]


@pytest.mark.parametrize("sink", SINKS, ids=["row", "transaction"])
def test_malformed_messages_among_good_ones(sink: dict[str, Any]) -> None:
    values = [v for bad in MALFORMED for v in (GOOD, bad)]
    assert assert_same(records_of(values), {}, sink) >= len(MALFORMED)


@settings(max_examples=200, deadline=None)
@given(
    **MUTATIONS,
    sink=st.sampled_from(SINKS),
)
def test_mutated_messages(at: int, insert: bytes, cut: int, sink: dict[str, Any]) -> None:
    assert_same(records_of([GOOD[:at] + insert + GOOD[at + cut :], GOOD]), {}, sink)


@pytest.mark.parametrize("name", KEEPING)
@pytest.mark.parametrize("sink", SINKS, ids=["row", "transaction"])
def test_chains_that_keep_rows(name: str, sink: dict[str, Any]) -> None:
    values = keeping_messages()
    handled = assert_same(records_of(values), {}, sink, CHAINS[name])
    assert handled == len(values)


def test_timestamps_between_zones_are_pythons() -> None:
    values = [GOOD, _message("INSERT", [{"id": "1", "v": "x"}], types={"id": "int", "v": "varchar(5)"})]
    source, sink = {"source_timezone": "Asia/Shanghai"}, {"source_timezone": "UTC"}
    assert assert_same(records_of(values), source, sink) == 1  # the table without TIMESTAMP columns


def test_corpus_canal_files(corpus: Path) -> None:
    total = count = 0
    for values in corpus_messages(corpus_files(corpus, "canal-json")):
        for sink in SINKS:
            count += assert_same(records_of(values), {}, sink)
            total += len(values)
            assert_same(records_of(values), {}, sink, CHAINS["headers"])
    assert total > 0 and count > total // 2, (count, total)


@pytest.mark.parametrize("name", ["orders.canal.jsonl", "demo-shop.canal.jsonl", "orders-with-bad-line.canal.jsonl"])
def test_example_data(name: str) -> None:
    lines = [line for line in (ROOT / "examples" / "data" / name).read_bytes().splitlines() if line.strip()]
    zone = {"source_timezone": "Asia/Shanghai"}
    for sink in SINKS:
        assert assert_same(records_of(lines), zone, {**sink, **zone}) > 0
        assert_same(records_of(lines), zone, sink)  # TIMESTAMPs re-based to UTC: Python's


# ---------------------------------------------------------------------------
# ticdc-canal-json -> canal-json: TiCDC's text re-written as Canal's
# ---------------------------------------------------------------------------


def assert_same_ticdc(
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
) -> int:
    """Both paths give the same records and dead letters; returns how many the plan handled."""
    plan = native.TICDC_TO_CANAL
    return assert_plan_agrees("ticdc-canal-json", "canal-json", plan, records, source, sink, transforms)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=8),
    tz=st.sampled_from(ZONES),
    sink_tz=st.sampled_from([None, "UTC"]),
    encoder=st.sampled_from(TICDC_ENCODERS),
    sink=st.sampled_from(SINKS),
    transforms=st.sampled_from([[], *(CHAINS[n] for n in KEEPING)]),
)
def test_ticdc_random_streams_are_byte_identical(
    stream: list[ChangeEvent],
    tz: str,
    sink_tz: str | None,
    encoder: dict[str, Any],
    sink: dict[str, Any],
    transforms: list[dict[str, Any]],
) -> None:
    values = ticdc_stream(stream, tz, encoder)
    sink = {**sink, "source_timezone": sink_tz or tz}
    assert_same_ticdc(records_of(values), {"source_timezone": tz}, sink, transforms)


def test_ticdc_streams_are_mostly_handled_natively() -> None:
    total = handled = 0
    zone = {"source_timezone": "Asia/Shanghai"}
    for seed in range(30):
        for encoder in TICDC_ENCODERS[:2]:
            values = ticdc_stream(_example(seed), "Asia/Shanghai", encoder)
            total += len(values)
            handled += assert_same_ticdc(records_of(values), zone, zone)
    assert handled >= total * 0.6, (handled, total)


#: TiCDC texts per column of the fast paths' table, around what the plan converts itself.
TICDC_TEXTS: dict[str, list[str]] = {
    "i": ["0", "-1", "007", "-0", "+5", " 5", "1_0", "9" * 39, "9" * 41],
    "d2": ["0", "-0", "0.5", "1.25", "1.255", "-12.3", "00.5", ".5", "5.", "1e3", "123456789012345678901234567", "NaN"],
    "dt3": ["2024-02-29 23:59:59", "2024-02-29 23:59:59.1", "2024-02-29 23:59:59.123456", "2023-02-29 00:00:00"],
    "dt0": ["2024-01-01 00:00:00", "2024-01-01T00:00:00", "2024-01-01 00:00:00.5", "0000-00-00 00:00:00"],
    "ts6": ["2024-03-10 02:30:00.000001", "2024-13-01 00:00:00", "1970-01-01 00:00:00"],
    "da": ["2024-02-29", "2023-02-29", "0000-00-00", "2024-2-1", "20240101"],
    "v": ["", "é", '\u0000\n"\\', "🙂"],
    "y": ["0", "0000", "2024", "-1", "02024"],
    "b8": ["0", "255", "-1", "01"],
    "bl": ["\u00ff\u0000", "\u0100"],
    "tm": [
        "00:00:00",
        "-00:00:00.000",
        "-01:02:03.5",
        "838:59:59",
        "012:00:00",
        "1:00:00",
        "10:60:00",
        "10:00:00.1234567",
    ],
}
#: A TiCDC row whose columns the plan converts (labelled ENUM/SET and FLOAT are Python's).
TICDC_BASE = {**BASE, "e": None, "s": None}


def ticdc_text_messages(*, null_old: bool = True, changed_old: bool = True) -> list[bytes]:
    """TiCDC messages carrying each of ``TICDC_TEXTS``' texts: per text an INSERT, an UPDATE
    whose ``old`` nulls ``v`` (``null_old``), one whose ``old`` changes the text's column back
    (``changed_old``), and a DELETE."""
    values = []
    for column, texts in sorted(TICDC_TEXTS.items()):
        for text in texts:
            row = {**TICDC_BASE, column: text}
            values.append(ticdc_message("INSERT", row))
            if null_old:
                values.append(ticdc_message("UPDATE", row, old={**TICDC_BASE, "v": None}))
            if changed_old:
                values.append(ticdc_message("UPDATE", row, old={**row, column: TICDC_BASE[column]}))
            values.append(ticdc_message("DELETE", row))
    return values


def ticdc_extension_messages() -> list[bytes]:
    """TiCDC messages the typed writers leave to Python or read as TiCDC does: malformed ones
    among good ones, ``_tidb`` extensions, a non-zero ``id``, missing names, a DELETE with
    ``old``, two rows."""
    good = ticdc_message("INSERT", TICDC_BASE)
    return [v for bad in MALFORMED for v in (good, bad)] + [
        ticdc_message("INSERT", TICDC_BASE, _tidb={"commitTs": 449_000_000_000_000_000}),
        ticdc_message("INSERT", TICDC_BASE, id=7),
        ticdc_message("INSERT", TICDC_BASE, es=None, database="", table=None, pkNames=[]),
        ticdc_message("DELETE", TICDC_BASE, old=[TICDC_BASE]),
        orjson.dumps({**orjson.loads(good), "data": [TICDC_BASE, BASE]}),
    ]


def test_ticdc_texts() -> None:
    values = ticdc_text_messages()
    for tz in ("UTC", "Asia/Shanghai"):
        zone = {"source_timezone": tz}
        assert assert_same_ticdc(records_of(values), zone, zone) > len(values) // 3
        assert_same_ticdc(records_of(values), zone, {"source_timezone": "UTC"})


@pytest.mark.parametrize(
    "value", [1.0, 0.001, 0.000999, 1e7, 9999999.5, -2.5, 0.1 + 0.2, 123456.789, 5e-324, -0.0, 0.0, 1e300]
)
def test_ticdc_doubles(value: float) -> None:
    from cdc_smt.transforms.formats.canal_json import go_float_text
    from tests.test_native_ticdc import ticdc_message

    texts = [go_float_text(value), repr(value), f"{value:.17g}"]
    values = [ticdc_message("INSERT", {**TICDC_BASE, "db": t}) for t in texts]
    handled = assert_same_ticdc(records_of(values))
    if value != 0 and 1e-3 <= abs(value) < 1e7:  # Java's plain range: the plan's
        assert handled == len(values)


def test_ticdc_malformed_and_extension_messages() -> None:
    from tests.test_native_ticdc import ticdc_message

    good = ticdc_message("INSERT", TICDC_BASE)
    values = [v for bad in MALFORMED for v in (good, bad)]
    values += [
        ticdc_message("INSERT", TICDC_BASE, _tidb={"commitTs": 449_000_000_000_000_000}),
        ticdc_message("INSERT", TICDC_BASE, _tidb={"onlyHandleKey": True}),
        ticdc_message("INSERT", TICDC_BASE, id=7),
        ticdc_message("INSERT", TICDC_BASE, es=None, database="", table=None, pkNames=[]),
        ticdc_message("DELETE", TICDC_BASE, old=[TICDC_BASE]),
        ticdc_message("UPDATE", TICDC_BASE, old={"zz": "1"}),
        orjson.dumps({**orjson.loads(good), "data": [TICDC_BASE, BASE]}),
    ]
    assert assert_same_ticdc(records_of(values)) >= len(MALFORMED)
    # ts missing: Python writes the time of encoding (not comparable), the plan hands it over
    chain = Chain(get_codec("ticdc-canal-json"), get_codec("canal-json"), [], "all")
    assert chain.native is not None
    counts = chain.native.plan.convert(
        [ticdc_message("INSERT", TICDC_BASE, ts=None), ticdc_message("INSERT", TICDC_BASE)]
    )
    assert counts[0] == [-1, 1]


@pytest.mark.parametrize("type_text", ["datetime(7)", "timestamp(9)", "time(7)"])
def test_ticdc_fractional_digits_beyond_mysqls_six_are_pythons(type_text: str) -> None:
    """A type MySQL does not have (found by the fuzz run): the planner's conversion for it is
    Python's, never an error out of the plan's compiler."""
    from tests.test_native_ticdc import ticdc_message

    value = {"datetime": "2024-01-02 03:04:05.1234567", "timestamp": "2024-01-02 03:04:05.123456789"}
    text = value.get(type_text.split("(")[0], "12:34:56.1234567")
    message = orjson.loads(ticdc_message("UPDATE", TICDC_BASE))
    message["mysqlType"] = {**message["mysqlType"], "t": type_text}
    message["data"] = [{**row, "t": text} for row in message["data"]]
    good = ticdc_message("INSERT", TICDC_BASE)
    assert assert_same_ticdc(records_of([good, orjson.dumps(message), good])) >= 2


def test_ticdc_corpus_files(corpus: Path) -> None:
    values = [v for messages in corpus_messages(corpus_files(corpus, "ticdc-canal-json")) for v in messages]
    assert values
    assert assert_same_ticdc(records_of(values)) > 0
    assert_same_ticdc(records_of(values), {}, {}, CHAINS["headers"])


def test_transforms_under_table_predicates() -> None:
    """A filter that drops one table's deletes, a route and headers for one table only."""
    shop_t = {"type": "table_matches", "pattern": r"shop\.t"}
    chain = [
        {"type": "filter", "ops": ["delete"], "action": "drop", "predicate": shop_t},
        {"type": "route", "topic": "only.{table}", "predicate": shop_t},
        {"type": "insert_header", "header": "db", "value": "{database}", "predicate": shop_t},
    ]
    values = [
        _message(k, [BASE], old=[{"v": "x"}] if k == "UPDATE" else None, **more)
        for k in ("INSERT", "UPDATE", "DELETE", "INIT")
        for more in ({}, {"table": "orders"})
    ]
    for sink in SINKS:
        assert assert_same(records_of(values), {}, sink, chain) == len(values)
    result = make_chain({}, {}, chain).process_batch(records_of(values))
    assert [r.topic for r in result.outputs].count("only.t") == 3  # shop.t's DELETE dropped
    assert all(("db", b"shop") in r.headers for r in result.outputs if r.topic == "only.t")


def test_header_transforms_under_a_predicate_that_rejects_the_table_debezium_plan() -> None:
    """The header edits of a transform whose predicate rejects a table are not applied
    (a bug of the canal -> debezium planner found by the test above)."""
    from tests.test_native import chains

    shop_t = {"type": "table_matches", "pattern": r"shop\.t"}
    transforms = build_transforms(
        [
            {"type": "insert_header", "header": "db", "value": "{database}", "predicate": shop_t},
            {"type": "drop_headers", "headers": ["h"], "predicate": shop_t},
        ]
    )
    values = [_message("INSERT", [BASE], **more) for more in ({}, {"table": "orders"})]
    fast, slow = chains()
    fast, slow = (Chain(c.decoder, c.encoder, transforms, "all") for c in (fast, slow))
    assert fast.native is not None
    slow.native = None
    records = records_of(values)
    assert outputs(fast.process_batch(records)) == outputs(slow.process_batch(records))
    assert [r.headers for r in fast.process_batch(records).outputs] == [[("db", b"shop")], [("h", b"1")]]


#: JSON values for the fields the Canal writer copies (``id``, ``isDdl``, ``sql``, unknown ones).
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(
    field=st.sampled_from(["id", "isDdl", "sql", "zz", "_tidb"]),
    value=JSON_VALUES,
    sink=st.sampled_from(SINKS),
)
def test_copied_fields_are_rendered_as_orjson_round_trips_them(field: str, value: Any, sink: dict[str, Any]) -> None:
    import json

    text = json.dumps(value, ensure_ascii=False).encode()  # past 64 bits too (orjson's loads rejects them)
    at = {"id": b'"id":1', "isDdl": b'"isDdl":false', "sql": b'"sql":""'}.get(field, b'"id":1')
    replacement = (
        f'"{field}":'.encode() + text if field in ("id", "isDdl", "sql") else at + f',"{field}":'.encode() + text
    )
    message = GOOD.replace(at, replacement, 1)
    handled = assert_same(records_of([message, GOOD]), {}, sink)
    assert handled >= 1
