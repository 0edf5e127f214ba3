"""The row-changing transforms on the native writers of Canal text (canal-json ->
ticdc-canal-json, maxwell-json, ogg-json, tdsql-binlog-json, cloudcanal-json, ckafka-json,
dataworks-json, dts-avro; ticdc-canal-json -> the same but TiCDC's own and TDSQL's), against the
Python path: byte for byte. DataWorks and DTS number their records: their chains also run one
record per batch, and their counts are of each record alone (a batch is the plan's up to its
first record for Python).

The rows are re-shaped in Canal text (``row_shape.rs``: output names, masks, added columns,
the transformed table and primary key) and written by the writer's table of the transformed
schema; the key is the transformed row's (typed values once a transform typed it). Every
chain runs the same records natively and on the Python path, for each writer (TiCDC's under
each of its options): outputs (values, keys, topics, headers), dead letters and missing-column counts
equal, and the regular messages handled natively (a plan that handled nothing would pass
trivially). Inputs: regular messages, hypothesis streams, the fast paths' edge values,
malformed and mutated messages, missing columns, the corpus and the examples' data.
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
from cdc_smt.transforms.model import ChangeEvent
from tests.strategies import change_streams
from tests.test_native import (
    BASE,
    GOOD,
    MALFORMED,
    MUTATIONS,
    NATIVE_SUITE,
    _example,
    _message,
    assert_plan_agrees,
    canal_stream,
    dead_letters,
    edge_messages,
    outputs,
    records_of,
)
from tests.test_native_rowxf import (
    EXAMPLE_DATA,
    PAIRS,
    PLAIN_DECIMAL,
    RENAMED_AWAY,
    SINGLE,
    STREAM_CHAINS,
    _mask,
    corpus_agrees,
    decimal_keys_agree,
    examples_agree,
)
from tests.test_native_ticdc import ENCODERS as TICDC_ENCODERS
from tests.test_native_ticdc import ticdc_message, ticdc_stream
from tests.test_native_transforms import CHAINS, REGULAR

pytestmark = NATIVE_SUITE

#: The writers: (format, plan, encoder options that change what it writes).
WRITERS: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "ticdc": (native.CANAL_TO_TICDC, [{}, {"content_compatible": True}, {"enable_tidb_extension": True}]),
    "maxwell": (native.CANAL_TO_MAXWELL, [{}]),
    "ogg": (native.CANAL_TO_OGG, [{}]),
    "tdsql": (native.CANAL_TO_TDSQL, [{}, {"row_event_version": 2}]),
    "cloudcanal": (native.CANAL_TO_CLOUDCANAL, [{}]),
    "ckafka": (native.CANAL_TO_CKAFKA, [{}]),
    "dataworks": (native.CANAL_TO_DATAWORKS, [{}, {"update_as": "single"}]),
    "dts": (native.CANAL_TO_DTS, [{}]),
}
#: The writers that number their records (``sequenceId``, record ids): a batch is the plan's
#: up to its first record for Python.
NUMBERED = {"dataworks", "dts"}
FORMATS = {
    "ticdc": "ticdc-canal-json",
    "maxwell": "maxwell-json",
    "ogg": "ogg-json",
    "cloudcanal": "cloudcanal-json",
    "ckafka": "ckafka-json",
    "dataworks": "dataworks-json",
    "dts": "dts-avro",
    "tdsql": "tdsql-binlog-json",
}
#: (writer, options) pairs.
SINKS = [(w, o) for w, (_, options) in WRITERS.items() for o in options]
SINK_IDS = [f"{w}-{'-'.join(o) or 'default'}" for w, o in SINKS]
_KEEPING = {"filter", "route", "drop_tombstones", "insert_header", "drop_headers"}
ROW_CHAINS = sorted(n for n, t in CHAINS.items() if any(s["type"] not in _KEEPING for s in t))
#: Regular messages a chain leaves to Python by design: UPDATEs when a transform adds columns
#: (``insert_field`` writes the after-image only, the writer's ``old`` overlays it), rows a
#: filter drops after a transform typed them; every one when a key is pinned then dropped.
TO_PYTHON = {"mixed": 2, "five": 1, "insert-field": 1}
ALL_PYTHON = {"replace-drops-pk"}


def timeless(writer: str, transforms: list[dict[str, Any]]) -> int:
    """1 if the regular message without ``es`` and ``ts`` is Python's: TiCDC writes ``ts`` (Python
    the current time), CloudCanal ``sendTs`` and CKafka ``TIME`` (Python: the record's time),
    and so is a column of ``source_ts_ms`` or ``processing_ts_ms``."""
    times = {"source_ts_ms", "processing_ts_ms"}
    # CloudCanal writes ``sendTs`` (Python: the event's time), CKafka ``TIME`` (Python: the record's)
    return int(
        writer in ("ticdc", "cloudcanal", "ckafka")
        or any(times & set(t.get("metadata", {}).values()) for t in transforms)
    )


def assert_same(
    records: list[Any],
    transforms: list[dict[str, Any]],
    writer: str = "ticdc",
    sink: dict[str, Any] | None = None,
    source: dict[str, Any] | None = None,
) -> int:
    """Both paths give the same records, dead letters and missing-column counts; returns how
    many records the plan handled itself."""
    return assert_agrees("canal-json", WRITERS[writer][0], records, transforms, writer, sink, source)


def assert_agrees(
    decoder: str,
    plan: str,
    records: list[Any],
    transforms: list[dict[str, Any]],
    writer: str,
    sink: dict[str, Any] | None,
    source: dict[str, Any] | None,
) -> int:
    """:func:`assert_same` from ``decoder`` (its ``plan``). For the writers that number their
    records (:data:`NUMBERED`) a batch is the plan's up to its first record for Python, so the
    count is of each record alone, and one record per batch must write (and number) what one
    batch of them all writes."""
    handled = assert_plan_agrees(decoder, FORMATS[writer], plan, records, source, sink, transforms)
    if writer not in NUMBERED:
        return handled

    def chain() -> Chain:
        codecs = get_codec(decoder, source or {}), get_codec(FORMATS[writer], sink or {})
        return Chain(codecs[0], codecs[1], build_transforms(transforms), "all")

    fast, slow = chain(), chain()
    slow.native = None
    one_by_one = [fast.process_batch([r]) for r in records]
    expected = slow.process_batch(records)
    assert [o for r in one_by_one for o in outputs(r)] == outputs(expected)
    assert [d for r in one_by_one for d in dead_letters(r)] == dead_letters(expected)
    plan_alone = chain().native
    assert plan_alone is not None
    return sum(plan_alone.convert_values([r.value])[0][0] >= 0 for r in records)


@pytest.mark.parametrize("writer", WRITERS)
def test_row_changing_chains_get_the_shaped_plan(writer: str) -> None:
    out = lambda: get_codec(FORMATS[writer], {})  # noqa: E731
    for name in ROW_CHAINS:
        chain = Chain(get_codec("canal-json", {}), out(), build_transforms(CHAINS[name]), "all")
        assert chain.native is not None and chain.native.name == WRITERS[writer][0], name
        from_ticdc = Chain(get_codec("ticdc-canal-json", {}), out(), build_transforms(CHAINS[name]), "all").native
        assert (from_ticdc is None) == (writer not in TICDC_WRITERS), name
    for transforms in ([{"type": "unwrap"}], [_mask("hash", ["v"], salt="s"), {"type": "filter", "condition": "1"}]):
        assert Chain(get_codec("canal-json", {}), out(), build_transforms(transforms), "all").native is None


@pytest.mark.parametrize(("writer", "sink"), SINKS, ids=SINK_IDS)
@pytest.mark.parametrize("name", ROW_CHAINS)
def test_regular_rows_are_handled_natively_and_identical(name: str, writer: str, sink: dict[str, Any]) -> None:
    records = records_of(REGULAR)
    expected = len(records) - timeless(writer, CHAINS[name]) - TO_PYTHON.get(name, 0)
    assert assert_same(records, CHAINS[name], writer, sink) == (0 if name in ALL_PYTHON else expected)


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("name", sorted(SINGLE))
def test_every_transform_and_option(name: str, writer: str) -> None:
    records = records_of(REGULAR)
    handled = assert_same(records, [SINGLE[name]], writer)
    added = SINGLE[name]["type"] == "insert_field"  # its UPDATEs are Python's
    assert handled == len(records) - timeless(writer, [SINGLE[name]]) - added


@pytest.mark.parametrize("pair", PAIRS, ids="+".join)
def test_transforms_in_pairs(pair: tuple[str, str]) -> None:
    records = records_of(REGULAR + edge_messages()[:30])
    handled = assert_same(records, [SINGLE[pair[0]], SINGLE[pair[1]]], "ticdc", {"content_compatible": True})
    assert assert_same(records, [SINGLE[pair[0]], SINGLE[pair[1]]], "ogg") >= handled
    if pair in RENAMED_AWAY:
        assert handled == 0
    else:
        assert handled > len(records) // 2


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("name", ROW_CHAINS + sorted(SINGLE))
def test_edge_values(name: str, writer: str) -> None:
    transforms = CHAINS[name] if name in CHAINS else [SINGLE[name]]
    values = edge_messages()
    zone = {"source_timezone": "Asia/Shanghai"}
    handled = assert_same(records_of(values), transforms, writer, zone, zone)
    assert_same(records_of(values), transforms, writer, {}, zone)  # TIMESTAMPs re-based: Python's
    if name not in TO_PYTHON and name not in ALL_PYTHON:
        assert handled >= len(values) // 3, handled


def test_updates_old_as_python_writes_it() -> None:
    olds = [[{"v": "x"}], [{"v": ""}], [{"i": None, "e": "1", "id": "7"}], [{}], [], None]
    values = [_message("UPDATE", [{**BASE, "v": "now"}], old=o) for o in olds]
    for transforms in ([SINGLE["rename"]], [SINGLE["hash"]], [SINGLE["null"]], [SINGLE["empty"]], CHAINS["mixed"]):
        for writer, sink in SINKS:
            handled = assert_same(records_of(values), transforms, writer, sink)
            assert handled == (0 if transforms is CHAINS["mixed"] else len(values)), transforms


@pytest.mark.parametrize(("writer", "sink"), SINKS, ids=SINK_IDS)
@pytest.mark.parametrize("name", ["value-to-key", "value-to-key-int", "rename-pk", "null-pk", "empty-pk", "hash"])
def test_updates_of_the_key(name: str, writer: str, sink: dict[str, Any]) -> None:
    """UPDATEs whose ``old`` changes the key (DataWorks keys a split update's ``UPDATE_BEFOR`` by
    its before-image unless a transform set the key), among others, are native and identical."""
    updates = [
        _message("UPDATE", [{**BASE, "v": "now"}], old=[{"id": "7", "v": "was"}]),
        _message("UPDATE", [{**BASE, "id": "8"}], old=[{"id": None}]),
        _message("UPDATE", [{**BASE, "v": "now"}], old=[{"v": "was"}]),
    ]
    assert assert_same(records_of([GOOD, *updates, GOOD]), [SINGLE[name]], writer, sink) == 5


@pytest.mark.parametrize("on_missing", ["warn", "ignore", "error"])
@pytest.mark.parametrize(
    "transform",
    [{"type": "replace_field", "exclude": ["nope"]}, _mask("hash", ["nope"], salt="s"), _mask("empty", ["nope"])],
)
def test_missing_columns_behave_as_in_python(transform: dict[str, Any], on_missing: str) -> None:
    other = {"id": "bigint", "nope": "varchar(10)"}
    values = [GOOD, _message("INSERT", [{"id": "5", "nope": "x"}], types=other), GOOD, *REGULAR]
    for writer in WRITERS:
        assert assert_same(records_of(values), [{**transform, "on_missing": on_missing}], writer) == 1


def test_rows_without_a_column_and_unreadable_values_are_pythons() -> None:
    chain = [_mask("hash", ["v"], salt="s"), {"type": "replace_field", "exclude": ["i"]}]
    without = {k: v for k, v in BASE.items() if k != "v"}
    values = [GOOD, _message("INSERT", [without]), _message("INSERT", [{**BASE, "i": "x1"}]), GOOD]
    for writer in WRITERS:
        assert assert_same(records_of(values), chain, writer) == 2


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("name", ["five", "mixed", "mask-hash", "mask-empty", "replace-include-rename"])
def test_malformed_and_mutated_messages(name: str, writer: str) -> None:
    values = [v for bad in MALFORMED for v in (GOOD, bad)]
    assert assert_same(records_of(values), CHAINS[name], writer) >= len(MALFORMED)


@settings(max_examples=40, deadline=None)
@given(**MUTATIONS, name=st.sampled_from(ROW_CHAINS), writer=st.sampled_from(list(WRITERS)))
def test_mutations(at: int, insert: bytes, cut: int, name: str, writer: str) -> None:
    assert_same(records_of([GOOD[:at] + insert + GOOD[at + cut :], GOOD]), CHAINS[name], writer)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    sink=st.sampled_from(SINKS),
    merge=st.lists(st.booleans(), min_size=1, max_size=5),
    transforms=st.sampled_from(STREAM_CHAINS),
)
def test_random_streams_are_byte_identical(
    stream: list[ChangeEvent], sink: tuple[str, dict[str, Any]], merge: list[bool], transforms: list[dict[str, Any]]
) -> None:
    tz = "Asia/Shanghai"
    values = canal_stream(stream, tz, merge)
    writer, options = sink
    assert_same(records_of(values), transforms, writer, {**options, "source_timezone": tz}, {"source_timezone": tz})


@pytest.mark.parametrize("writer", WRITERS)
def test_corpus_canal_files(corpus: Path, writer: str) -> None:
    corpus_agrees(
        corpus, lambda records, transforms, sink, source: assert_same(records, transforms, writer, sink, source)
    )


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("name", EXAMPLE_DATA)
def test_example_data(name: str, writer: str) -> None:
    examples_agree(
        name, lambda records, transforms, sink, source: assert_same(records, transforms, writer, sink, source)
    )


#: From TiCDC's dialect: the typed-JSON writers (TiCDC's own writer copies TiCDC's texts: Python's).
TICDC_WRITERS = {
    "maxwell": native.TICDC_TO_MAXWELL,
    "ogg": native.TICDC_TO_OGG,
    "cloudcanal": native.TICDC_TO_CLOUDCANAL,
    "ckafka": native.TICDC_TO_CKAFKA,
    "dataworks": native.TICDC_TO_DATAWORKS,
    "dts": native.TICDC_TO_DTS,
}


def assert_same_from_ticdc(records: list[Any], transforms: list[dict[str, Any]], writer: str, tz: str) -> int:
    zone = {"source_timezone": tz}
    return assert_agrees("ticdc-canal-json", TICDC_WRITERS[writer], records, transforms, writer, zone, zone)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    encoder=st.sampled_from(TICDC_ENCODERS),
    writer=st.sampled_from(list(TICDC_WRITERS)),
    transforms=st.sampled_from(STREAM_CHAINS),
)
def test_random_ticdc_streams_are_byte_identical(
    stream: list[ChangeEvent], encoder: dict[str, Any], writer: str, transforms: list[dict[str, Any]]
) -> None:
    values = ticdc_stream(stream, "Asia/Shanghai", encoder)
    assert_same_from_ticdc(records_of(values), transforms, writer, "Asia/Shanghai")


@pytest.mark.parametrize("writer", TICDC_WRITERS)
def test_ticdc_streams_are_mostly_handled_natively(writer: str) -> None:
    total = handled = 0
    for seed in range(12):
        values = ticdc_stream(_example(seed), "UTC", {})
        for transforms in STREAM_CHAINS:
            total += len(values)
            handled += assert_same_from_ticdc(records_of(values), transforms, writer, "UTC")
    assert handled >= total * 0.9, (handled, total)


@pytest.mark.parametrize("writer", TICDC_WRITERS)
@pytest.mark.parametrize("name", ["five", "mask-empty", "mask-replace", "replace-include-rename", "value-to-key"])
def test_ticdc_messages_of_every_type(name: str, writer: str) -> None:
    """TiCDC's messages of the fast paths' table (parameterless types, TiCDC's texts)."""
    values = [ticdc_message(kind, BASE) for kind in ("INSERT", "DELETE")]
    values.append(ticdc_message("UPDATE", BASE, old={**BASE, "v": "was"}))
    expected = len(values) - TO_PYTHON.get(name, 0)  # "five" adds a column: its UPDATE is Python's
    assert assert_same_from_ticdc(records_of(values), CHAINS[name], writer, "UTC") == expected


@pytest.mark.parametrize(("writer", "sink"), SINKS, ids=SINK_IDS)
def test_year_key_columns(writer: str, sink: dict[str, Any]) -> None:
    """A YEAR key column (typed as an integer: a number in the key, its text only when canonical,
    ``0000`` Python's) keeps the table native; every edge YEAR text identical."""
    values = [*REGULAR, *(_message("INSERT", [{**BASE, "y": y}]) for y in ("0000", "1901", "2155", "0", "07"))]
    handled = assert_same(records_of(values), [{"type": "value_to_key", "fields": ["y", "id"]}], writer, sink)
    assert handled >= 3, handled  # 1901, 2155 and 0 (BASE's 0000 and 07 are Python's)


@pytest.mark.parametrize(("writer", "sink"), SINKS, ids=SINK_IDS)
def test_enum_key_columns(writer: str, sink: dict[str, Any]) -> None:
    """An ENUM key column, typed as its label (the key writes the label its index or label text
    reads as; other texts Python's), with and without a transform typing the row."""
    texts = ("0", "1", "2", "3", "4", "PAID", "NEW", "nope", "01", "")
    values = [*REGULAR, *(_message("INSERT", [{**BASE, "y": "1901", "e": e}]) for e in texts)]
    typed = [{"type": "value_to_key", "fields": ["e", "id"]}]
    handled = assert_same(records_of(values), typed, writer, sink)
    assert handled >= 4, handled  # at least the indexes 1 and 2 and the labels
    assert_same(records_of(values), [{"type": "value_to_key", "fields": ["e"]}, SINGLE["hash"]], writer, sink)


@pytest.mark.parametrize(("writer", "sink"), SINKS, ids=SINK_IDS)
@pytest.mark.parametrize("column", ["d2", "d0", "dw"])
def test_decimal_key_columns(column: str, writer: str, sink: dict[str, Any]) -> None:
    """A typed DECIMAL key column (:func:`decimal_keys_agree`) on each writer."""
    row = {**BASE, "y": "1901"}
    decimal_keys_agree(column, lambda records, transforms: assert_same(records, transforms, writer, sink), row)


@pytest.mark.parametrize("writer", [w for w in WRITERS if w not in ("ticdc", "tdsql")])
def test_decimal_key_columns_from_ticdc(writer: str) -> None:
    """TiCDC's DECIMAL texts in a key column (read by TiCDC's value form), as from Canal."""
    values = [ticdc_message("INSERT", {**BASE, "y": "1901", "d2": t}) for t in ("1.50", "-0.05", "0", "1e2", "01.5")]
    handled = assert_same_from_ticdc(records_of(values), [{"type": "value_to_key", "fields": ["d2"]}], writer, "UTC")
    assert handled >= 3, handled


#: The writers whose own tables key the primary key from the typed values: a DECIMAL primary
#: key column keyed natively (``format(Decimal(text), "f")``).
DECIMAL_PK_WRITERS = ["cloudcanal", "ckafka", "tdsql", "dts"]


@pytest.mark.parametrize("writer", DECIMAL_PK_WRITERS)
@pytest.mark.parametrize("column", ["d2", "d0", "dw"])
@pytest.mark.parametrize("transforms", [[], [SINGLE["hash"]], [{"type": "replace_field", "renames": {"v": "w"}}]])
def test_decimal_primary_key_columns(column: str, writer: str, transforms: list[dict[str, Any]]) -> None:
    """A DECIMAL column in ``pkNames`` (the writer's own table keys it, with and without the
    row-changing transforms): every edge text identical, as native as the same rows keyed by
    the integer id but for the texts that are not plain."""
    from tests.test_fastpath import EDGES

    texts = EDGES[column]
    rows = [{**BASE, "y": "1901", column: t} for t in texts]
    by_id = assert_same(records_of([_message("INSERT", [r]) for r in rows]), transforms, writer)
    records = records_of([_message("INSERT", [r], pkNames=[column, "id"]) for r in rows])
    not_plain = sum(not PLAIN_DECIMAL.fullmatch(t) for t in texts)
    assert by_id > not_plain, (by_id, not_plain)
    assert assert_same(records, transforms, writer) >= by_id - not_plain


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(stream=change_streams(max_events=8), sink=st.sampled_from(SINKS), pick=st.integers(0, 63))
def test_random_streams_keyed_by_every_type(
    stream: list[ChangeEvent], sink: tuple[str, dict[str, Any]], pick: int
) -> None:
    """Hypothesis streams keyed by one of their columns (any MySQL type: NULLs, 65-digit
    decimals, zero dates, unsigned bigints, bytes; UPDATEs that move the key) through each
    writer: identical (the key columns the shape cannot write leave the table to Python)."""
    tz = "Asia/Shanghai"
    names = [c.name for c in stream[0].schema.columns]
    column = names[1 + pick % (len(names) - 1)]
    writer, options = sink
    records = records_of(canal_stream(stream, tz, [False]))
    zone = {"source_timezone": tz}
    for transforms in (
        [{"type": "value_to_key", "fields": [column, "id"]}],
        [{"type": "replace_field", "renames": {column: "k"}}, {"type": "value_to_key", "fields": ["k"]}],
    ):
        assert_same(records, transforms, writer, {**options, **zone}, zone)
