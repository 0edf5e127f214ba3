"""The native canal-json / ticdc-canal-json -> maxwell-json plans against the Python path:
byte for byte.

The typed-JSON writer renders each Canal text as ``SchemalessJson.json_image`` renders the
typed value (numbers, exact decimals, temporals at the column's digits, base64, SET lists,
embedded JSON) and computes an UPDATE's ``old`` as Python compares the rendered values.
Inputs: hypothesis streams (single- and multi-row messages), the edge values, the corpus,
the example data, malformed and mutated messages, unusual field sets; with and without
the transforms that keep rows as they are. Outputs and dead letters must be equal, and the
plan must handle the regular messages itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt.transforms import native
from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.config import build_transforms
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import ChangeEvent, Record
from tests.strategies import change_streams
from tests.test_fastpath import EDGES, TYPES
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
    records_of,
)
from tests.test_native_canal_out import (
    JSON_VALUES,
    UNUSUAL,
    keeping_messages,
    ticdc_extension_messages,
    ticdc_text_messages,
)
from tests.test_native_ticdc import ENCODERS as TICDC_ENCODERS
from tests.test_native_ticdc import ticdc_stream
from tests.test_native_transforms import CHAINS

pytestmark = NATIVE_SUITE


#: The typed-JSON formats with a writer: (format, plan from canal-json, plan from ticdc-canal-json).
FORMATS = [
    ("maxwell-json", native.CANAL_TO_MAXWELL, native.TICDC_TO_MAXWELL),
    ("ogg-json", native.CANAL_TO_OGG, native.TICDC_TO_OGG),
]
FORMAT_IDS = [f[0] for f in FORMATS]
#: Chains the writers run natively (transforms that keep rows, tables and keys).
KEEPING = [
    "filter-tables", "filter-drops-all", "filter-action-drop", "route", "route-regex", "drop-tombstones", "headers",
]  # fmt: skip
#: Chains that change rows, keys or tables (natively from canal-json only).
CHANGING = ["five", "replace-exclude", "mask-hash", "insert-field", "value-to-key", "merge-shards", "predicate"]


def assert_same(
    fmt: tuple[str, str, str],
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
    ticdc: bool = False,
) -> int:
    """Both paths give the same records and dead letters; returns how many the plan handled."""
    decoder = "ticdc-canal-json" if ticdc else "canal-json"
    plan = fmt[2] if ticdc else fmt[1]
    return assert_plan_agrees(decoder, fmt[0], plan, records, source, sink, transforms)


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_the_plan_is_chosen_only_for_what_it_writes(fmt: tuple[str, str, str]) -> None:
    canal, out = get_codec("canal-json"), lambda **o: get_codec(fmt[0], o)
    assert Chain(canal, out(), [], "all").native.name == fmt[1]
    assert Chain(get_codec("ticdc-canal-json"), out(), [], "all").native.name == fmt[2]
    for name in KEEPING:
        assert Chain(canal, out(), build_transforms(CHAINS[name]), "all").native is not None, name
    for name in CHANGING:  # the shaped rows (tests/test_native_rowxf_writers.py)
        assert Chain(canal, out(), build_transforms(CHAINS[name]), "all").native is not None, name
        assert Chain(get_codec("ticdc-canal-json"), out(), build_transforms(CHAINS[name]), "all").native is not None
    assert Chain(get_codec(fmt[0]), out(), [], "all").native is None  # no reader of its own
    assert fmt[1] in native.status()["plans"] and fmt[2] in native.status()["plans"]
    assert fmt[1] in native.plans_of(fmt[0])


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    tz=st.sampled_from(ZONES),
    sink_tz=st.sampled_from([None, "UTC", "Asia/Shanghai"]),
    merge=st.lists(st.booleans(), min_size=1, max_size=5),
    transforms=st.sampled_from([[], *(CHAINS[n] for n in KEEPING)]),
)
def test_random_streams_are_byte_identical(
    fmt: tuple[str, str, str],
    stream: list[ChangeEvent],
    tz: str,
    sink_tz: str | None,
    merge: list[bool],
    transforms: list[dict[str, Any]],
) -> None:
    values = canal_stream(stream, tz, merge)
    assert_same(fmt, records_of(values), {"source_timezone": tz}, {"source_timezone": sink_tz or tz}, transforms)


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_generated_streams_are_mostly_handled_natively(fmt: tuple[str, str, str]) -> None:
    total = handled = 0
    zone = {"source_timezone": "Asia/Shanghai"}
    for seed in range(30):
        values = canal_stream(_example(seed), "Asia/Shanghai", [True, False])
        total += len(values)
        handled += assert_same(fmt, records_of(values), zone, zone)
    assert handled >= total * 0.6, (handled, total)


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
@pytest.mark.parametrize("tz", ["UTC", "Asia/Shanghai"])
def test_every_edge_value(fmt: tuple[str, str, str], tz: str) -> None:
    values = []
    for column, texts in sorted(EDGES.items()):
        for text in texts:
            row = {**BASE, column: text}
            values.append(_message("INSERT", [row, {**row, "id": "2"}]))
            values.append(_message("UPDATE", [row], old=[{column: BASE[column], "v": None}]))
            values.append(_message("UPDATE", [{**row, "v": None}], old=[{column: text, "v": "x"}]))
            values.append(_message("DELETE", [row]))
    zone = {"source_timezone": tz}
    assert assert_same(fmt, records_of(values), zone, zone) >= len(values) // 2
    assert_same(fmt, records_of(values), zone, {"source_timezone": "UTC"})


#: Pairs of texts per column whose rendered values Python finds equal (or not) in ``old``.
OLD_PAIRS: dict[str, list[tuple[str | None, str | None]]] = {
    "d2": [("1.5", "1.50"), ("-0.00", "0.00"), ("0", "0.00"), ("1.5", "1.51"), ("10", "1"), ("1.50", None)],
    "dw": [("1.1", "1.100000"), ("-0.000000000000000000000000000001", "0.000000000000000000000000000001")],
    "db": [("-0.0", "0.0"), ("1.0E10", "10000000000.0"), ("1.5", "1.25"), ("1", "1.0")],
    "j": [
        ('{"a":1,"b":2}', '{"b":2,"a":1}'),
        ("[1]", "[true]"),
        ("1", "true"),
        ('{"a":[1,{"b":null}]}', '{"a":[1,{"b":null}]}'),
        ('{"a":1}', '{"a":2}'),
        ("null", None),
        ('"x"', "x"),
        ("[1.5]", "[1.50]"),
    ],
    "s": [("a,b", "a,b,"), ("", None)],
    "v": [("x", "x"), ("x", "y"), ("", None)],
    "i": [("1", "01"), ("-0", "0")],
    "b1": [("1", "0")],
}


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_old_holds_the_columns_python_finds_changed(fmt: tuple[str, str, str]) -> None:
    types = {**TYPES, "s": "set"}
    values = []
    for column, pairs in OLD_PAIRS.items():
        for now, before in pairs:
            for a, b in ((now, before), (before, now)):
                row = {**BASE, "s": None, column: a}
                values.append(_message("UPDATE", [row], old=[{column: b}], types=types))
                values.append(_message("UPDATE", [row], old=[{column: b, "v": "changed"}], types=types))
    assert assert_same(fmt, records_of(values)) >= len(values) // 2


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_regular_messages_are_all_handled(fmt: tuple[str, str, str]) -> None:
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
        _message("INSERT", rows, es=None),
    ]
    assert assert_same(fmt, records_of(values)) == len(values)
    result = Chain(get_codec("canal-json"), get_codec(fmt[0]), [], "all").process_batch(records_of(values[:1]))
    assert len(result.outputs) == 3


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_unusual_fields(fmt: tuple[str, str, str]) -> None:
    values = [v for odd in UNUSUAL for v in (GOOD, odd)]
    assert assert_same(fmt, records_of(values)) >= len(values) // 2


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_malformed_messages_among_good_ones(fmt: tuple[str, str, str]) -> None:
    values = [v for bad in MALFORMED for v in (GOOD, bad)]
    assert assert_same(fmt, records_of(values)) >= len(MALFORMED)


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
@settings(max_examples=150, deadline=None)
@given(**MUTATIONS)
def test_mutated_messages(fmt: tuple[str, str, str], at: int, insert: bytes, cut: int) -> None:
    assert_same(fmt, records_of([GOOD[:at] + insert + GOOD[at + cut :], GOOD]))


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
@settings(max_examples=100, deadline=None)
@given(value=JSON_VALUES, column=st.sampled_from(["j", "v"]))
def test_json_documents(fmt: tuple[str, str, str], value: Any, column: str) -> None:
    import json

    text = json.dumps(value, ensure_ascii=False)  # past 64 bits and floats too
    row = {**BASE, column: text}
    values = [
        _message("INSERT", [row]),
        _message("UPDATE", [row], old=[{column: json.dumps(value, indent=1)}]),
        _message("UPDATE", [{**BASE, column: "[]"}], old=[{column: text}]),
    ]
    assert_same(fmt, records_of(values))


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
@pytest.mark.parametrize("name", KEEPING)
def test_chains_that_keep_rows(fmt: tuple[str, str, str], name: str) -> None:
    values = keeping_messages()
    assert assert_same(fmt, records_of(values), {}, {}, CHAINS[name]) == len(values)


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_timestamps_between_zones_are_pythons(fmt: tuple[str, str, str]) -> None:
    values = [GOOD, _message("INSERT", [{"id": "1", "v": "x"}], types={"id": "int", "v": "varchar(5)"})]
    source, sink = {"source_timezone": "Asia/Shanghai"}, {"source_timezone": "UTC"}
    assert assert_same(fmt, records_of(values), source, sink) == 1  # the table without TIMESTAMP values


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_corpus_canal_files(fmt: tuple[str, str, str], corpus: Path) -> None:
    total = count = 0
    for values in corpus_messages(corpus_files(corpus, "canal-json")):
        count += assert_same(fmt, records_of(values))
        total += len(values)
        assert_same(fmt, records_of(values), {}, {}, CHAINS["headers"])
    assert total > 0 and count > total // 2, (count, total)


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
@pytest.mark.parametrize("name", ["orders.canal.jsonl", "demo-shop.canal.jsonl", "orders-with-bad-line.canal.jsonl"])
def test_example_data(fmt: tuple[str, str, str], name: str) -> None:
    lines = [line for line in (ROOT / "examples" / "data" / name).read_bytes().splitlines() if line.strip()]
    zone = {"source_timezone": "Asia/Shanghai"}
    assert assert_same(fmt, records_of(lines), zone, zone) > 0
    assert_same(fmt, records_of(lines), zone, {})  # TIMESTAMPs re-based to UTC: Python's


# ---------------------------------------------------------------------------
# from ticdc-canal-json
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=8),
    tz=st.sampled_from(ZONES),
    sink_tz=st.sampled_from([None, "UTC"]),
    encoder=st.sampled_from(TICDC_ENCODERS),
    transforms=st.sampled_from([[], *(CHAINS[n] for n in KEEPING)]),
)
def test_ticdc_random_streams_are_byte_identical(
    fmt: tuple[str, str, str],
    stream: list[ChangeEvent],
    tz: str,
    sink_tz: str | None,
    encoder: dict[str, Any],
    transforms: list[dict[str, Any]],
) -> None:
    values = ticdc_stream(stream, tz, encoder)
    sink = {"source_timezone": sink_tz or tz}
    assert_same(fmt, records_of(values), {"source_timezone": tz}, sink, transforms, ticdc=True)


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_ticdc_streams_are_mostly_handled_natively(fmt: tuple[str, str, str]) -> None:
    total = handled = 0
    zone = {"source_timezone": "Asia/Shanghai"}
    for seed in range(20):
        for encoder in TICDC_ENCODERS[:2]:
            values = ticdc_stream(_example(seed), "Asia/Shanghai", encoder)
            total += len(values)
            handled += assert_same(fmt, records_of(values), zone, zone, ticdc=True)
    assert handled >= total * 0.6, (handled, total)


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_ticdc_texts_and_extension_messages(fmt: tuple[str, str, str]) -> None:
    values = ticdc_text_messages(null_old=False) + ticdc_extension_messages()
    assert assert_same(fmt, records_of(values), ticdc=True) > len(values) // 3


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_ticdc_corpus_files(fmt: tuple[str, str, str], corpus: Path) -> None:
    values = [v for messages in corpus_messages(corpus_files(corpus, "ticdc-canal-json")) for v in messages]
    assert values
    assert assert_same(fmt, records_of(values), ticdc=True) > 0
    assert_same(fmt, records_of(values), {}, {}, CHAINS["headers"], ticdc=True)


@pytest.mark.parametrize("fmt", FORMATS, ids=FORMAT_IDS)
def test_times_at_the_edges(fmt: tuple[str, str, str]) -> None:
    """``es``/``ts`` of any integer: seconds floored (Maxwell), wall clocks of years 1000-9999
    (GoldenGate; others are Python's, whose strftime pads them differently)."""
    edges = [0, -1, -999, -1000, -1001, 1, 999, 1000, -30610224000000, -30610224000001, 253402300799999]
    edges += [253402300800000, 2**63 - 1, -(2**63)]
    values = [_message("INSERT", [BASE], es=es, ts=ts) for es in edges for ts in (es, 0)]
    assert assert_same(fmt, records_of(values)) >= len(values) // 2
