"""The native canal-json / ticdc-canal-json / debezium-json -> cloudcanal-json plans, and
-> ckafka-json (the same tables, another envelope), against the Python path: byte for byte.

The CloudCanal writer re-writes each Canal text as MySQL's own text (``to_text`` of the
typed value: ENUM and SET as labels), writes an UPDATE's before-image (the row overlaid
with ``old``), ``dbValType``/``jdbcType`` of the row's columns and the key from the typed
primary-key values. Inputs: hypothesis streams (single- and multi-row messages), the edge
values, the corpus, the example data, malformed and mutated messages, unusual field sets;
with and without the transforms that keep rows as they are; through both
``Chain.process_batch`` and the worker's ``NativePlan.convert_values``.
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
    records_of,
)
from tests.test_native_canal_out import UNUSUAL, keeping_messages, ticdc_extension_messages, ticdc_text_messages
from tests.test_native_debezium import INPUTS, KEY, ROW, SOURCE, debezium_records, event, good, keyed
from tests.test_native_debezium import MALFORMED as DEBEZIUM_MALFORMED
from tests.test_native_maxwell import CHANGING, KEEPING, OLD_PAIRS
from tests.test_native_ticdc import ENCODERS as TICDC_ENCODERS
from tests.test_native_ticdc import ticdc_stream
from tests.test_native_transforms import CHAINS

pytestmark = NATIVE_SUITE

OUT = "cloudcanal-json"
#: The writers on the CloudCanal writer's tables, and their plans from canal-json,
#: ticdc-canal-json and debezium-json (what is CKafka's own: ``test_native_ckafka_out.py``).
WRITERS = (OUT, "ckafka-json")
PLANS = {
    OUT: (native.CANAL_TO_CLOUDCANAL, native.TICDC_TO_CLOUDCANAL, native.DEBEZIUM_TO_CLOUDCANAL),
    "ckafka-json": (native.CANAL_TO_CKAFKA, native.TICDC_TO_CKAFKA, native.DEBEZIUM_TO_CKAFKA),
}


def assert_same(
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
    ticdc: bool = False,
    out: str = OUT,
) -> int:
    """Both paths give the same records and dead letters (``Chain.process_batch`` and the
    worker's ``convert_values``); returns how many records the plan handled."""
    decoder = "ticdc-canal-json" if ticdc else "canal-json"
    return assert_both_agree(decoder, PLANS[out][ticdc], records, source, sink, transforms, out)


def assert_both_agree(
    decoder: str,
    plan: str,
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
    out: str = OUT,
) -> int:
    """:func:`assert_same` for any reader: ``decoder`` and the ``plan`` it makes (to ``out``)."""
    assert_plan_agrees(decoder, out, plan, records, source, sink, transforms)
    return assert_worker_agrees(decoder, records, source, sink, transforms, out)


def assert_worker_agrees(
    decoder: str,
    records: list[Record],
    source: dict[str, Any] | None,
    sink: dict[str, Any] | None,
    transforms: list[dict[str, Any]] | None,
    out: str = OUT,
) -> int:
    """``convert_values`` writes, for each record it handles, what Python writes for it alone
    (with the records' keys for a reader that needs them); returns how many it handled."""

    def make() -> Chain:
        codecs = get_codec(decoder, source or {}), get_codec(out, sink or {})
        return Chain(codecs[0], codecs[1], build_transforms(transforms or []), "all")

    fast, slow = make(), make()
    slow.native = None
    plan = fast.native
    assert plan is not None
    keys_in = [r.key for r in records] if plan.needs_keys else None
    counts, values, keys, variants = plan.convert_values([r.value for r in records], keys_in)
    start = 0
    for record, n in zip(records, counts, strict=True):
        if n < 0:
            continue
        python = slow.process(record).outputs
        native_out = [(values[i], keys[i], plan.variants[variants[i]][0]) for i in range(start, start + n)]
        assert native_out == [(r.value, r.key, r.topic) for r in python]
        start += n
    return sum(n >= 0 for n in counts)


@pytest.mark.parametrize("out", WRITERS)
def test_the_plan_is_chosen_only_for_what_it_writes(out: str) -> None:
    canal, writer = get_codec("canal-json"), lambda: get_codec(out)
    assert Chain(canal, writer(), [], "all").native.name == PLANS[out][0]
    assert Chain(get_codec("ticdc-canal-json"), writer(), [], "all").native.name == PLANS[out][1]
    for name in KEEPING:
        assert Chain(canal, writer(), build_transforms(CHAINS[name]), "all").native is not None, name
    for name in CHANGING:  # the row-changing transforms: the shaped plan (test_native_rowxf_writers)
        assert Chain(canal, writer(), build_transforms(CHAINS[name]), "all").native.name == PLANS[out][0], name
    for plan in PLANS[out]:
        assert plan in native.status()["plans"] and plan in native.plans_of(out)


@pytest.mark.parametrize("out", WRITERS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    tz=st.sampled_from(ZONES),
    sink_tz=st.sampled_from([None, "UTC", "Asia/Shanghai"]),
    merge=st.lists(st.booleans(), min_size=1, max_size=5),
    transforms=st.sampled_from([[], *(CHAINS[n] for n in KEEPING)]),
)
def test_random_streams_are_byte_identical(
    out: str,
    stream: list[ChangeEvent],
    tz: str,
    sink_tz: str | None,
    merge: list[bool],
    transforms: list[dict[str, Any]],
) -> None:
    values = canal_stream(stream, tz, merge)
    assert_same(records_of(values), {"source_timezone": tz}, {"source_timezone": sink_tz or tz}, transforms, out=out)


@pytest.mark.parametrize("out", WRITERS)
def test_generated_streams_are_mostly_handled_natively(out: str) -> None:
    total = handled = 0
    zone = {"source_timezone": "Asia/Shanghai"}
    for seed in range(30):
        values = canal_stream(_example(seed), "Asia/Shanghai", [True, False])
        total += len(values)
        handled += assert_same(records_of(values), zone, zone, out=out)
    assert handled >= total * 0.6, (handled, total)


@pytest.mark.parametrize("out", WRITERS)
@pytest.mark.parametrize("tz", ["UTC", "Asia/Shanghai"])
def test_every_edge_value(out: str, tz: str) -> None:
    values = edge_messages(rows=2)
    zone = {"source_timezone": tz}
    assert assert_same(records_of(values), zone, zone, out=out) >= len(values) // 2
    assert_same(records_of(values), zone, {"source_timezone": "UTC"}, out=out)


def update_messages(also: dict[str, str]) -> list[bytes]:
    """UPDATEs whose ``old`` changes one column of every type (both ways), then that and the
    columns of ``also``; one naming a column the row lacks, one with an empty ``old``."""
    types = {**_types(), "s": "set"}
    values = []
    for column, pairs in OLD_PAIRS.items():
        for now, before in pairs:
            for a, b in ((now, before), (before, now)):
                row = {**BASE, "s": None, column: a}
                values.append(_message("UPDATE", [row], old=[{column: b}], types=types))
                values.append(_message("UPDATE", [row], old=[{column: b, **also}], types=types))
    values.append(_message("UPDATE", [{"id": "1", "v": "x"}], old=[{"i": "5", "v": "y"}]))  # a column the row lacks
    values.append(_message("UPDATE", [BASE], old=[{}]))
    return values


@pytest.mark.parametrize("out", WRITERS)
def test_updates_write_the_row_overlaid_with_old(out: str) -> None:
    values = update_messages({"v": "changed"})
    assert assert_same(records_of(values), out=out) >= len(values) // 2


def _types() -> dict[str, str]:
    from tests.test_fastpath import TYPES

    return dict(TYPES)


#: Three rows of the edge table's first values (the second and third with other keys).
ROWS = [BASE, {**BASE, "id": "2"}, {**BASE, "id": "3", "v": "z"}]


def regular_messages(old: list[dict[str, str | None]]) -> list[bytes]:
    """Messages of :data:`ROWS` the vendor writers convert: every op (an UPDATE with ``old``
    and without), keys of one, none or no ``pkNames``, negative and missing ``es``, empty names."""
    return [
        _message("INSERT", ROWS),
        _message("UPDATE", ROWS, old=old),
        _message("UPDATE", ROWS),
        _message("DELETE", ROWS),
        _message("INIT", ROWS),
        _message("INSERT", ROWS, pkNames=["v"]),
        _message("INSERT", ROWS, pkNames=[]),
        _message("INSERT", ROWS, pkNames=None),
        _message("INSERT", ROWS, es=-1500),
        _message("INSERT", ROWS, es=None),
        _message("INSERT", ROWS, database="", table=""),
    ]


def test_regular_messages_are_all_handled() -> None:
    values = regular_messages([{"v": "a"}, {"i": None}, {"v": None, "i": "9"}])
    assert assert_same(records_of(values)) == len(values)
    result = Chain(get_codec("canal-json"), get_codec(OUT), [], "all").process_batch(records_of(values[:1]))
    assert len(result.outputs) == 3
    first = orjson.loads(result.outputs[0].value)
    assert first["action"] == "INSERT" and first["data"][0]["id"] == BASE["id"]


def test_messages_without_ts_are_pythons() -> None:
    """``sendTs`` of a message without ``ts`` is the event's or the record's time: Python's."""
    values = [_message("INSERT", [BASE], ts=None), GOOD]
    assert assert_same(records_of(values)) == 1


@pytest.mark.parametrize("out", WRITERS)
def test_unusual_fields(out: str) -> None:
    values = [v for odd in UNUSUAL for v in (GOOD, odd)]
    assert assert_same(records_of(values), out=out) >= len(values) // 2


@pytest.mark.parametrize("out", WRITERS)
def test_malformed_messages_among_good_ones(out: str) -> None:
    values = [v for bad in MALFORMED for v in (GOOD, bad)]
    assert assert_same(records_of(values), out=out) >= len(MALFORMED)


@pytest.mark.parametrize("out", WRITERS)
@settings(max_examples=150, deadline=None)
@given(**MUTATIONS)
def test_mutated_messages(out: str, at: int, insert: bytes, cut: int) -> None:
    assert_same(records_of([GOOD[:at] + insert + GOOD[at + cut :], GOOD]), out=out)


@pytest.mark.parametrize("out", WRITERS)
@pytest.mark.parametrize("name", KEEPING)
def test_chains_that_keep_rows(out: str, name: str) -> None:
    values = keeping_messages()
    assert assert_same(records_of(values), {}, {}, CHAINS[name], out=out) == len(values)


@pytest.mark.parametrize("out", WRITERS)
def test_timestamps_between_zones_are_pythons(out: str) -> None:
    values = [GOOD, _message("INSERT", [{"id": "1", "v": "x"}], types={"id": "int", "v": "varchar(5)"})]
    source, sink = {"source_timezone": "Asia/Shanghai"}, {"source_timezone": "UTC"}
    assert assert_same(records_of(values), source, sink, out=out) == 1  # the table without TIMESTAMP values


@pytest.mark.parametrize("out", WRITERS)
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
def test_keys_of_every_kind(out: str, key_type: str, texts: list[str]) -> None:
    types = {"id": key_type, "v": "varchar(5)"}
    values = [_message("INSERT", [{"id": t, "v": "x"}], types=types) for t in texts]
    values.append(_message("DELETE", [{"id": None, "v": "x"}], types=types))
    values.append(_message("INSERT", [{"v": "x"}], types=types))  # the key column missing
    assert_same(records_of(values), out=out)


@pytest.mark.parametrize("out", WRITERS)
def test_corpus_canal_files(out: str, corpus: Path) -> None:
    total = count = 0
    for values in corpus_messages(corpus_files(corpus, "canal-json")):
        count += assert_same(records_of(values), out=out)
        total += len(values)
        assert_same(records_of(values), {}, {}, CHAINS["headers"], out=out)
    assert total > 0 and count > total // 2, (count, total)


@pytest.mark.parametrize("out", WRITERS)
@pytest.mark.parametrize("name", ["orders.canal.jsonl", "demo-shop.canal.jsonl", "orders-with-bad-line.canal.jsonl"])
def test_example_data(out: str, name: str) -> None:
    lines = [line for line in (ROOT / "examples" / "data" / name).read_bytes().splitlines() if line.strip()]
    zone = {"source_timezone": "Asia/Shanghai"}
    assert assert_same(records_of(lines), zone, zone, out=out) > 0
    assert_same(records_of(lines), zone, {}, out=out)  # TIMESTAMPs re-based to UTC: Python's


# ---------------------------------------------------------------------------
# from ticdc-canal-json
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("out", WRITERS)
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=8),
    tz=st.sampled_from(ZONES),
    sink_tz=st.sampled_from([None, "UTC"]),
    encoder=st.sampled_from(TICDC_ENCODERS),
    transforms=st.sampled_from([[], *(CHAINS[n] for n in KEEPING)]),
)
def test_ticdc_random_streams_are_byte_identical(
    out: str,
    stream: list[ChangeEvent],
    tz: str,
    sink_tz: str | None,
    encoder: dict[str, Any],
    transforms: list[dict[str, Any]],
) -> None:
    values = ticdc_stream(stream, tz, encoder)
    sink = {"source_timezone": sink_tz or tz}
    assert_same(records_of(values), {"source_timezone": tz}, sink, transforms, ticdc=True, out=out)


@pytest.mark.parametrize("out", WRITERS)
def test_ticdc_streams_are_mostly_handled_natively(out: str) -> None:
    total = handled = 0
    zone = {"source_timezone": "Asia/Shanghai"}
    for seed in range(20):
        for encoder in TICDC_ENCODERS[:2]:
            values = ticdc_stream(_example(seed), "Asia/Shanghai", encoder)
            total += len(values)
            handled += assert_same(records_of(values), zone, zone, ticdc=True, out=out)
    assert handled >= total * 0.6, (handled, total)


@pytest.mark.parametrize("out", WRITERS)
def test_ticdc_texts_and_extension_messages(out: str) -> None:
    values = ticdc_text_messages(null_old=False) + ticdc_extension_messages()
    assert assert_same(records_of(values), ticdc=True, out=out) > len(values) // 3


@pytest.mark.parametrize("out", WRITERS)
def test_ticdc_corpus_files(out: str, corpus: Path) -> None:
    values = [v for messages in corpus_messages(corpus_files(corpus, "ticdc-canal-json")) for v in messages]
    assert values
    assert assert_same(records_of(values), ticdc=True, out=out) > 0
    assert_same(records_of(values), {}, {}, CHAINS["headers"], ticdc=True, out=out)


# ---------------------------------------------------------------------------
# from debezium-json
# ---------------------------------------------------------------------------


def assert_debezium(
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
    out: str = OUT,
) -> int:
    return assert_both_agree("debezium-json", PLANS[out][2], records, source, sink, transforms, out)


def debezium_chain(transforms: list[dict[str, Any]], out: str = OUT) -> Chain:
    return Chain(get_codec("debezium-json"), get_codec(out), build_transforms(transforms), "all")


@pytest.mark.parametrize("out", WRITERS)
def test_the_debezium_plan_is_chosen_only_for_what_it_writes(out: str) -> None:
    plan = debezium_chain([], out=out).native
    assert plan is not None and plan.name == PLANS[out][2] and plan.needs_keys
    for name in KEEPING:
        assert debezium_chain(CHAINS[name], out=out).native is not None, name
    for name in CHANGING:  # the row-changing ones re-shape the rows (test_native_dbz_rowxf.py)
        assert debezium_chain(CHAINS[name], out=out).native.name == PLANS[out][2], name


@pytest.mark.parametrize("out", WRITERS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    options=st.sampled_from(INPUTS),
    tz=st.sampled_from(ZONES),
    sink_tz=st.sampled_from([None, "UTC"]),
    transforms=st.sampled_from([[], *(CHAINS[n] for n in KEEPING)]),
)
def test_debezium_random_streams_are_byte_identical(
    out: str,
    stream: list[ChangeEvent],
    options: dict[str, Any],
    tz: str,
    sink_tz: str | None,
    transforms: list[dict[str, Any]],
) -> None:
    records = debezium_records(stream, tz, options)
    assert_debezium(records, {"source_timezone": tz}, {"source_timezone": sink_tz or tz}, transforms, out=out)


@pytest.mark.parametrize("out", WRITERS)
def test_debezium_streams_are_mostly_handled_natively(out: str) -> None:
    total = count = 0
    zone = {"source_timezone": "Asia/Shanghai"}
    for seed in range(30):
        records = [r for r in debezium_records(_example(seed), "Asia/Shanghai", {}) if r.value is not None]
        total += len(records)
        count += assert_debezium(records, zone, zone, out=out)
    assert count >= total * 0.6, (count, total)


@pytest.mark.parametrize("out", WRITERS)
def test_debezium_regular_events_are_all_handled(out: str) -> None:
    values = [(v, k) for v, k in good() if v is not None]
    assert assert_debezium(keyed(values), out=out) == len(values)
    pairs = [
        ({**ROW, "d": -0.0}, {**ROW, "d": 0.0}),
        ({**ROW, "b": False}, ROW),
        ({**ROW, "n": None, "v": None}, {**ROW, "n": "x", "v": "y"}),
        ({**ROW, "id": 2}, ROW),
    ]
    updates = [(event("u", before=b, after=a), KEY) for b, a in pairs]
    assert assert_debezium(keyed(updates), out=out) == len(updates)


@pytest.mark.parametrize("out", WRITERS)
def test_debezium_keys_sources_and_malformed_events(out: str) -> None:
    values = [(bad, KEY) for bad in DEBEZIUM_MALFORMED] + good()
    values += [(event("c", after=ROW), key) for key in (None, b"", b'{"v":"x"}', b'{"d":1}', b'{"b":1}', b"{}")]
    values += [
        (event("c", after=ROW, source={**SOURCE, "schema": "public"}), KEY),  # CloudCanal's schema: the source's
        (event("c", after=ROW, source={**SOURCE, "db": ""}), KEY),
        (event("c", after=ROW, source={**SOURCE, "schema": ""}), KEY),
        (event("c", after=ROW, ts_ms=None), KEY),
        (event("c", after={**ROW, "d": 1e300}), KEY),
    ]
    assert_debezium(keyed(values), out=out)


@pytest.mark.parametrize("out", WRITERS)
@pytest.mark.parametrize("name", KEEPING)
def test_debezium_chains_that_keep_rows(out: str, name: str) -> None:
    values = [
        (event(op, before=ROW if op in "ud" else None, after=None if op == "d" else ROW, source=source), KEY)
        for op in "cudr"
        for source in (SOURCE, {**SOURCE, "table": "orders"}, {**SOURCE, "db": "other"})
    ]
    assert assert_debezium(keyed(values), {}, {}, CHAINS[name], out=out) == len(values)


@pytest.mark.parametrize("out", WRITERS)
def test_debezium_corpus_files(out: str, corpus: Path) -> None:
    values = [v for messages in corpus_messages(corpus_files(corpus, "debezium-json")) for v in messages]
    assert values
    for key in (None, b'{"id":101}'):
        records = keyed([(v, key) for v in values])
        assert_debezium(records, out=out)
        assert_debezium(records, {}, {}, CHAINS["headers"], out=out)
    schemaless = [v for v in values if not v.lstrip().startswith(b'{"schema"')]
    chain = debezium_chain([], out=out)
    counts = chain.native.convert_values(schemaless, [None] * len(schemaless))[0]
    assert sum(n >= 0 for n in counts) >= len(schemaless) // 2
