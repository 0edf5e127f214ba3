"""The row-changing transforms from the Debezium reader (debezium-json -> canal-json, ticdc-canal-json,
maxwell-json, ogg-json, tdsql-binlog-json, cloudcanal-json, ckafka-json, dataworks-json,
dts-avro), against the Python path: byte for byte.

The reader hands each row to the writer as a one-row Canal message of texts, which the
transforms re-shape as from canal-json (``row_shape.rs``) before the writer's table of the
transformed schema writes it; the key is the transformed row's, its integers numbers (the
Debezium decoder's values are typed as read). Every chain runs the same records natively and
on the Python path: outputs (values, keys, topics, headers), dead letters and missing-column
counts equal, and the regular events handled natively (counted with their keys, so a plan
that handed everything to Python would fail). DataWorks and DTS number their records: their
chains also run one record per batch, counted one record alone.
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
    NATIVE_SUITE,
    ZONES,
    assert_plan_agrees,
    corpus_files,
    corpus_messages,
    dead_letters,
    outputs,
)
from tests.test_native_debezium import KEY, MALFORMED, ROW, SOURCE, debezium_records, event, good, keyed, with_schema
from tests.test_native_rowxf import _mask

pytestmark = NATIVE_SUITE

#: The writers: (format, plan, encoder options that change what it writes).
WRITERS: dict[str, tuple[str, str, list[dict[str, Any]]]] = {
    "canal": ("canal-json", native.DEBEZIUM_TO_CANAL, [{}]),
    "ticdc": ("ticdc-canal-json", native.DEBEZIUM_TO_TICDC, [{}, {"content_compatible": True}]),
    "maxwell": ("maxwell-json", native.DEBEZIUM_TO_MAXWELL, [{}]),
    "ogg": ("ogg-json", native.DEBEZIUM_TO_OGG, [{}]),
    "tdsql": ("tdsql-binlog-json", native.DEBEZIUM_TO_TDSQL, [{}, {"row_event_version": 2}]),
    "cloudcanal": ("cloudcanal-json", native.DEBEZIUM_TO_CLOUDCANAL, [{}]),
    "ckafka": ("ckafka-json", native.DEBEZIUM_TO_CKAFKA, [{}]),
    "dataworks": ("dataworks-json", native.DEBEZIUM_TO_DATAWORKS, [{}, {"update_as": "single"}]),
    "dts": ("dts-avro", native.DEBEZIUM_TO_DTS, [{}]),
}
#: The writers that number their records: a batch is the plan's up to its first record for Python.
NUMBERED = {"dataworks", "dts"}
SINKS = [(w, o) for w, (_, _, options) in WRITERS.items() for o in options]
SINK_IDS = [f"{w}-{'-'.join(o) or 'default'}" for w, o in SINKS]

#: Each row-changing transform and option on the Debezium row (``ROW``: id, v, d, b, n, big).
SINGLE: dict[str, dict[str, Any]] = {
    "exclude": {"type": "replace_field", "exclude": ["d", "n"]},
    "include": {"type": "replace_field", "include": ["id", "v", "big"]},
    "rename": {"type": "replace_field", "renames": {"v": "name", "b": "flag"}},
    "rename-pk": {"type": "replace_field", "renames": {"id": "key_id"}},
    "rename-swap": {"type": "replace_field", "renames": {"v": "n", "n": "v"}},
    "hash": _mask("hash", ["v"], salt="pepper"),
    "hash-unsalted": _mask("hash", ["v", "n"]),
    "null": _mask("null", ["d", "b", "n", "big"]),
    "null-pk": _mask("null", ["id"]),
    "empty": _mask("empty", ["v", "d", "b", "big", "n"]),
    "empty-pk": _mask("empty", ["id"]),
    "replace": _mask("replace", ["v", "n"], replacement='{"x": "é"}'),
    "replace-int": _mask("replace", ["big", "d"], replacement="42"),
    "replace-pk": _mask("replace", ["id"], replacement="-9223372036854775808"),
    "static": {"type": "insert_field", "static": {"_s": "east", "_n": 5, "_f": 1.5, "_b": True, "_z": None}},
    "metadata": {
        "type": "insert_field",
        "metadata": {"_es": "source_ts_ms", "_op": "op", "_db": "database", "_t": "table", "_sc": "schema"},
    },
    "metadata-ts": {"type": "insert_field", "metadata": {"_ts": "processing_ts_ms", "_q": "qualified_table"}},
    "value-to-key": {"type": "value_to_key", "fields": ["v", "id"]},
    "value-to-key-int": {"type": "value_to_key", "fields": ["big"]},
    "merge": {"type": "merge_shards", "pattern": r"(shop)\.(t)", "database": "$1_all", "table": "$2_all"},
    "merge-table": {"type": "merge_shards", "pattern": r"shop\.(t)", "table": "$1_x"},
}
#: Chains of several steps, the row-keeping ones among them.
CHAINS: dict[str, list[dict[str, Any]]] = {
    "mask-route": [SINGLE["hash"], {"type": "route", "topic": "out.{database}.{table}"}],
    "rename-then-key": [SINGLE["rename-pk"], {"type": "value_to_key", "fields": ["key_id", "v"]}],
    "merge-static-null": [SINGLE["merge"], SINGLE["static"], SINGLE["null"]],
    "filter-after-mask": [SINGLE["empty"], {"type": "filter", "exclude_ops": ["delete"]}],
    "header-and-exclude": [{"type": "insert_header", "header": "x", "value": "1"}, SINGLE["exclude"]],
}


def assert_same(
    records: list[Record],
    transforms: list[dict[str, Any]],
    writer: str,
    sink: dict[str, Any] | None = None,
    source: dict[str, Any] | None = None,
) -> int:
    """Both paths give the same records, dead letters and missing-column counts; returns how many
    records the plan handled itself, given their keys (the numbered writers: each record alone,
    and one record per batch writes what one batch writes)."""
    fmt, plan, _ = WRITERS[writer]
    assert_plan_agrees("debezium-json", fmt, plan, records, source, sink, transforms)

    def chain() -> Chain:
        codecs = get_codec("debezium-json", source or {}), get_codec(fmt, sink or {})
        return Chain(codecs[0], codecs[1], build_transforms(transforms), "all")

    fast = chain()
    assert fast.native is not None and fast.native.name == plan
    if writer not in NUMBERED:
        counts = fast.native.convert_values([r.value for r in records], [r.key for r in records])[0]
        return sum(n >= 0 for n in counts)
    slow = chain()
    slow.native = None
    one_by_one = [fast.process_batch([r]) for r in records]
    expected = slow.process_batch(records)
    assert [o for r in one_by_one for o in outputs(r)] == outputs(expected)
    assert [d for r in one_by_one for d in dead_letters(r)] == dead_letters(expected)
    alone = chain().native
    assert alone is not None
    return sum(alone.convert_values([r.value], [r.key])[0][0] >= 0 for r in records)


def regular() -> list[Record]:
    """``good()``'s events (insert, snapshot read, two updates, delete, tombstone)."""
    return keyed(good())


#: Regular events a chain leaves to Python by design: the tombstone (the decoder counts it),
#: UPDATEs when ``insert_field`` adds columns (it writes the after-image only).
def python_share(transforms: list[dict[str, Any]]) -> int:
    return 1 + 2 * any(t["type"] == "insert_field" for t in transforms)


# ---------------------------------------------------------------------------
# the plan is chosen


@pytest.mark.parametrize("writer", WRITERS)
def test_row_changing_chains_get_the_reader_plan(writer: str) -> None:
    fmt, plan, _ = WRITERS[writer]
    for transforms in [*([t] for t in SINGLE.values()), *CHAINS.values()]:
        chain = Chain(get_codec("debezium-json"), get_codec(fmt), build_transforms(transforms), "all")
        assert chain.native is not None and chain.native.name == plan and chain.native.needs_keys, transforms
    for transforms in ([{"type": "unwrap"}], [SINGLE["hash"], {"type": "filter", "condition": "1"}]):
        assert Chain(get_codec("debezium-json"), get_codec(fmt), build_transforms(transforms), "all").native is None


def test_ticdc_extension_and_canal_transactions_are_pythons() -> None:
    for sink in (
        get_codec("ticdc-canal-json", {"enable_tidb_extension": True}),
        get_codec("canal-json", {"batch": "transaction"}),
    ):
        assert Chain(get_codec("debezium-json"), sink, build_transforms([SINGLE["hash"]]), "all").native is None


# ---------------------------------------------------------------------------
# every transform and option, every writer


@pytest.mark.parametrize(("writer", "sink"), SINKS, ids=SINK_IDS)
@pytest.mark.parametrize("name", sorted(SINGLE))
def test_every_transform_and_option(name: str, writer: str, sink: dict[str, Any]) -> None:
    records = regular()
    transforms = [SINGLE[name]]
    assert assert_same(records, transforms, writer, sink) == len(records) - python_share(transforms)


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("name", sorted(CHAINS))
def test_chains(name: str, writer: str) -> None:
    records = regular()
    handled = assert_same(records, CHAINS[name], writer)
    if name == "filter-after-mask":
        assert handled == len(records) - 2  # the delete dropped after a mask typed it, and the tombstone
    else:
        assert handled == len(records) - python_share(CHAINS[name])


@pytest.mark.parametrize(("writer", "sink"), SINKS, ids=SINK_IDS)
@pytest.mark.parametrize("name", ["value-to-key", "value-to-key-int", "rename-pk", "null-pk", "empty-pk", "hash"])
def test_updates_that_move_the_key(name: str, writer: str, sink: dict[str, Any]) -> None:
    """UPDATEs whose before-image has another key (DataWorks keys a split update's
    ``UPDATE_BEFOR`` by its before-image unless a transform set the key)."""
    updates = [
        (event("u", before={**ROW, "id": 7, "big": 3}, after=ROW), KEY),
        (event("u", before={**ROW, "v": "was"}, after={**ROW, "id": 8, "v": None}), b'{"id":8}'),
        (event("u", before=ROW, after={**ROW, "v": "now"}), KEY),
    ]
    records = keyed([(event("c", after=ROW), KEY), *updates, (event("c", after=ROW), KEY)])
    assert assert_same(records, [SINGLE[name]], writer, sink) == len(records)


@pytest.mark.parametrize("on_missing", ["warn", "ignore", "error"])
@pytest.mark.parametrize(
    "transform",
    [{"type": "replace_field", "exclude": ["nope"]}, _mask("hash", ["nope"], salt="s"), _mask("empty", ["nope"])],
)
def test_missing_columns_behave_as_in_python(transform: dict[str, Any], on_missing: str) -> None:
    """A table lacking a column a transform names is Python's (which warns, counts or
    dead-letters); one that has it is native."""
    other = {"id": 5, "nope": "x"}
    values = [(event("c", after=ROW), KEY), (event("c", after=other), b'{"id":5}'), (event("c", after=ROW), KEY)]
    for writer in WRITERS:
        assert assert_same(keyed(values), [{**transform, "on_missing": on_missing}], writer) == 1


@pytest.mark.parametrize("writer", WRITERS)
def test_row_index_is_pythons(writer: str) -> None:
    """``row_index`` is the source's ``row`` (Debezium's, not the message's row): Python's."""
    values = [(event("c", after=ROW, source={**SOURCE, "row": row}), KEY) for row in (0, 3, None)]
    transforms = [{"type": "insert_field", "metadata": {"_r": "row_index"}}]
    assert assert_same(keyed(values), transforms, writer) == 0


def test_key_columns_of_other_kinds_are_pythons() -> None:
    """A key column the encoder would write as a double or a boolean: Python's; a string key
    column is native."""
    for key, native_ in ((b'{"d":2.5}', False), (b'{"b":true}', False), (b'{"v":"x"}', True)):
        values = [(event("c", after=ROW), key), (event("d", before=ROW), key)]
        for writer in WRITERS:
            count = assert_same(keyed(values), [SINGLE["hash-unsalted"]], writer)
            assert count == (2 if native_ else 0), (writer, key)


def test_tables_and_layouts_changing_between_events() -> None:
    """Tables, kinds and column orders changing from event to event, each layout compiled."""
    other = {**SOURCE, "table": "u"}
    values = [
        (event("c", after=ROW), KEY),
        (event("c", after={**ROW, "d": 3}), KEY),  # d an integer: another layout
        (event("c", after=ROW, source=other), KEY),
        (event("c", after=dict(reversed(ROW.items()))), KEY),
        (event("c", after={**ROW, "v": None}), KEY),
        (event("c", after=ROW), KEY),
    ]
    for writer in WRITERS:
        for transforms in ([SINGLE["hash"]], [SINGLE["merge"], SINGLE["rename"]], [SINGLE["static"]]):
            assert assert_same(keyed(values), transforms, writer) == len(values)


# ---------------------------------------------------------------------------
# unusual and malformed events


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("name", ["hash", "empty", "static", "value-to-key", "merge"])
def test_malformed_events_among_good_ones(name: str, writer: str) -> None:
    values = [pair for bad in MALFORMED for pair in ((event("c", after=ROW), KEY), (bad, KEY))]
    assert assert_same(keyed(values), [SINGLE[name]], writer) >= len(MALFORMED)


@settings(max_examples=40, deadline=None)
@given(
    at=st.integers(0, 200),
    insert=st.binary(max_size=4),
    cut=st.integers(0, 4),
    name=st.sampled_from(sorted(SINGLE)),
    writer=st.sampled_from(list(WRITERS)),
)
def test_mutated_events(at: int, insert: bytes, cut: int, name: str, writer: str) -> None:
    good_value = event("u", before=ROW, after={**ROW, "v": "y"})
    bad = good_value[:at] + insert + good_value[at + cut :]
    assert_same(keyed([(bad, KEY), (good_value, KEY)]), [SINGLE[name]], writer)


def test_edge_values() -> None:
    """Values the writers render at their limits: 64-bit integers, doubles, unicode, empty
    strings, booleans both ways, nulls."""
    rows = [
        {**ROW, "big": 2**63 - 1, "d": 1e-7, "v": "é\u2028\U0001f600"},
        {**ROW, "big": -1, "d": -0.0, "v": "", "b": False},
        {**ROW, "d": 1.7976931348623157e308, "v": 'a\\"b\n'},
        {**ROW, "d": 5e-324, "n": "x"},
        {**ROW, "id": 0, "big": 0},
    ]
    values = [(event("c", after=r), orjson.dumps({"id": r["id"]})) for r in rows]
    values += [(event("u", before=rows[0], after=r), orjson.dumps({"id": r["id"]})) for r in rows]
    for writer, sink in SINKS:
        for name in ("hash-unsalted", "empty", "replace-int", "value-to-key", "static"):
            handled = assert_same(keyed(values), [SINGLE[name]], writer, sink)
            # the MySQL-text and Canal writers leave doubles outside their plain ranges to Python
            plain = name in ("empty", "replace-int") or writer in ("maxwell", "ogg", "ticdc", "dts")
            assert handled >= (len(values) // 3 if plain else 2), (writer, name, handled)


# ---------------------------------------------------------------------------
# hypothesis streams, the corpus

STREAM_CHAINS: list[list[dict[str, Any]]] = [
    [_mask("null", ["id"], on_missing="ignore")],
    [_mask("empty", ["id"], on_missing="ignore")],
    [_mask("replace", ["id"], replacement="7", on_missing="ignore")],
    [
        {
            "type": "insert_field",
            "static": {"_s": "x", "_n": -3},
            "metadata": {"_es": "source_ts_ms", "_t": "processing_ts_ms"},
        }
    ],
    [{"type": "merge_shards", "pattern": r"(\w+)\.(\w+)", "table": "$2_all"}, {"type": "route", "topic": "m.{table}"}],
    [{"type": "value_to_key", "fields": ["id"]}],
    [{"type": "replace_field", "renames": {"id": "rid"}, "on_missing": "ignore"}],
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    sink=st.sampled_from(SINKS),
    transforms=st.sampled_from(STREAM_CHAINS),
    tz=st.sampled_from(ZONES),
)
def test_random_streams_are_byte_identical(
    stream: list[ChangeEvent], sink: tuple[str, dict[str, Any]], transforms: list[dict[str, Any]], tz: str
) -> None:
    """Debezium events of every MySQL type (as the Python encoder writes them without the
    schema part), through each writer under each chain."""
    records = debezium_records(stream, tz, {})
    writer, options = sink
    zone = {"source_timezone": tz}
    assert_same(records, transforms, writer, {**options, **zone}, zone)


def test_streams_are_mostly_native() -> None:
    """The hypothesis-free check that the streams' rows are the plan's, not Python's."""
    from tests.test_native import _example

    total = handled = 0
    for seed in range(8):
        records = debezium_records(_example(seed), "UTC", {})
        for writer in ("maxwell", "tdsql", "dts"):
            total += sum(r.value is not None for r in records)
            handled += assert_same(records, STREAM_CHAINS[5], writer)
    assert handled >= total // 2, (handled, total)


@pytest.mark.parametrize("writer", WRITERS)
def test_corpus_debezium_files(corpus: Path, writer: str) -> None:
    """The corpus's Debezium files (values only: keys as Debezium writes them for Flink's test
    tables, and none); the schemaless events' rows native under a mask."""
    values = [v for messages in corpus_messages(corpus_files(corpus, "debezium-json")) for v in messages]
    assert values
    schemaless = [v for v in values if not v.lstrip().startswith(b'{"schema"')]
    for key in (None, b'{"id":101}'):
        records = keyed([(v, key) for v in values])
        for transforms in ([SINGLE["hash-unsalted"]], STREAM_CHAINS[3], STREAM_CHAINS[4]):
            assert_same(records, transforms, writer)
    counted = assert_same(keyed([(v, None) for v in schemaless]), [_mask("null", ["weight"])], writer)
    assert counted >= len(schemaless) // 3, (counted, len(schemaless))  # GoldenGate: Postgres schemas are Python's


# ---------------------------------------------------------------------------
# the schema part (the writers that take it from the reader without transforms)

#: The writers the reader hands values read from their Connect representations (every one).
SCHEMA_WRITERS = list(WRITERS)
SCHEMA_INPUTS: list[dict[str, Any]] = [
    {"schemas_enable": True},
    {"schemas_enable": True, "time_precision_mode": "connect"},
    {"schemas_enable": True, "decimal_handling_mode": "string", "binary_handling_mode": "hex"},
]


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_the_schema_part_regular_events(name: str) -> None:
    """Events with the schema part: the plan's on the writers that take it (every row), Python's
    on the others."""
    records = keyed(with_schema(good()))
    transforms = [SINGLE[name]]
    for writer in WRITERS:
        events = sum(r.value is not None for r in records)  # tombstones: the decoder counts them
        expected = events - python_share(transforms) + 1 if writer in SCHEMA_WRITERS else 0
        assert assert_same(records, transforms, writer) == expected, writer


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    options=st.sampled_from(SCHEMA_INPUTS),
    writer=st.sampled_from(SCHEMA_WRITERS),
    transforms=st.sampled_from(STREAM_CHAINS),
    tz=st.sampled_from(ZONES),
)
def test_random_streams_with_the_schema_part(
    stream: list[ChangeEvent], options: dict[str, Any], writer: str, transforms: list[dict[str, Any]], tz: str
) -> None:
    """Debezium events of every MySQL type with the schema part (each value in its Connect
    representation), through each writer that takes it under each chain."""
    records = debezium_records(stream, tz, options)
    zone = {"source_timezone": tz}
    assert_same(records, transforms, writer, zone, zone)


def test_the_schema_part_streams_are_partly_native() -> None:
    """Columns of the types whose Canal text the reader writes (integers, strings, dates, times,
    decimals) keep the streams' rows the plan's."""
    from tests.test_native import _example

    total = handled = 0
    for seed in range(8):
        records = debezium_records(_example(seed), "UTC", {"schemas_enable": True})
        for writer in ("maxwell", "ticdc"):
            total += sum(r.value is not None for r in records)
            handled += assert_same(records, STREAM_CHAINS[5], writer)
    assert handled >= total // 4, (handled, total)


# ---------------------------------------------------------------------------
# source positions and transaction blocks under the transforms


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("name", ["hash", "merge", "static", "value-to-key"])
def test_source_positions_under_the_transforms(name: str, writer: str) -> None:
    """The positions each writer writes per event (Maxwell's ``xid``/``position``, CKafka's binlog
    fields, TDSQL's ``gtid``, DTS's ``sourcePosition``/``sourceTxid``) in every form the reader
    reads or leaves to Python, after the transforms; the plain forms native."""
    from tests.test_native_debezium_writers import POSITIONS

    values = []
    for position, _ in POSITIONS:
        source = {k: v for k, v in SOURCE.items() if k not in ("file", "pos", "server_id", "gtid")}
        source.update(position)
        values += [(event(op, before=ROW if op == "u" else None, after=ROW, source=source), KEY) for op in "cu"]
    handled = assert_same(keyed(values), [SINGLE[name]], writer)
    per_position = 1 if name == "static" else 2  # insert_field's UPDATEs are Python's
    plain = sum(per_position for _, native_ in POSITIONS if native_)
    assert handled >= (plain if writer not in ("ckafka", "dataworks", "dts") else 4), handled


@pytest.mark.parametrize("writer", WRITERS)
def test_transaction_blocks_under_the_transforms(writer: str) -> None:
    """A ``transaction`` block (its id may be the event's) among plain events."""
    tx = {"id": "571:53195829", "total_order": 1, "data_collection_order": 1}
    values = [(event("c", after=ROW, transaction=tx), KEY), (event("c", after=ROW), KEY), (event("d", before=ROW), KEY)]
    assert assert_same(keyed(values), [SINGLE["empty"]], writer) >= 1


@pytest.mark.parametrize("writer", SCHEMA_WRITERS)
def test_the_schema_part_of_an_order_table(writer: str) -> None:
    """The benchmark's order table with the schema part (integers, strings, an ENUM's labels,
    DECIMAL, DOUBLE, DATETIME, TIMESTAMP, DATE): every event the plan's on Maxwell's, GoldenGate's,
    TiCDC's and DTS's writers (whose tables read an ENUM's label text), identical on all."""
    from bench.codec import Inputs, canal_messages

    records = keyed([(r.value, r.key) for r in Inputs(canal_messages(40)).records("debezium-json", SCHEMA_INPUTS[0])])
    for transforms in (
        [_mask("hash", ["address"], salt="s")],
        [SINGLE["merge"], {"type": "value_to_key", "fields": ["id"]}],
    ):
        handled = assert_same(records, transforms, writer)
        if writer != "canal":  # the Canal writer's ENUM texts are indexes: Python's
            assert handled == sum(r.value is not None for r in records), handled


def test_enum_labels_that_are_digits_are_pythons() -> None:
    """An ENUM with a digit label ('2'): its labels as Debezium writes them would read as indexes."""
    from tests.test_native import _message

    types = {"id": "bigint", "e": "enum('2','NEW')"}
    canal = [_message("INSERT", [{"id": "1", "e": e}], types=types) for e in ("1", "2")]
    to_debezium = Chain(get_codec("canal-json"), get_codec("debezium-json", SCHEMA_INPUTS[0]), [], "all")
    to_debezium.native = None
    records = keyed([(r.value, r.key) for r in to_debezium.process_batch(keyed([(v, None) for v in canal])).outputs])
    assert len(records) == 2
    for writer in ("maxwell", "ogg", "ticdc", "dts"):
        assert assert_same(records, [SINGLE["merge"]], writer) == 0


#: Under the schema part, columns whose Debezium values are not their type's Canal text:
#: (case, Connect field, [(value, the writers that write it natively)]). An ENUM's labels
#: (none digits) every writer's but the Canal writer's (its ENUM texts are indexes); a SET's
#: labels the writers of Canal's bitmask (TiCDC's, Canal's: the reader makes the bitmask), the
#: others' Python's (they write the labels as Debezium wrote them, in any order); a FLOAT's
#: ``float32`` numbers every writer's but the Canal writer's (Java's ``Float.toString``).
_ALL = set(WRITERS)
LABELLED: list[tuple[str, dict[str, Any], list[tuple[Any, set[str]]]]] = [
    (
        "enum",
        {"type": "string", "name": "io.debezium.data.Enum", "version": 1, "parameters": {"allowed": "NEW,PAID,x y"}},
        [("NEW", _ALL - {"canal"}), ("x y", _ALL - {"canal"}), ("", set()), ("other", set()), (1, set())],
    ),
    (
        "set",
        {"type": "string", "name": "io.debezium.data.EnumSet", "version": 1, "parameters": {"allowed": "a,b,c d"}},
        [("a,b", {"ticdc", "canal"}), ("c d", {"ticdc", "canal"}), ("b,a", set()), ("", set()), ("x", set())],
    ),
    ("float32", {"type": "float32"}, [(1.5, _ALL - {"canal"}), (3.14, _ALL - {"canal"}), (0.1, _ALL - {"canal"})]),
]
#: Transforms over the row ``{id, c}`` of ``test_native_debezium_connect.messages``.
LABELLED_CHAINS: list[list[dict[str, Any]]] = [
    [{"type": "replace_field", "renames": {"c": "col"}}],
    [SINGLE["merge"], {"type": "value_to_key", "fields": ["id"]}],
    [_mask("null", ["id"])],
]


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize(("case", "field", "values"), LABELLED, ids=[c[0] for c in LABELLED])
def test_labels_and_float32_under_the_schema_part(
    case: str, field: dict[str, Any], values: list[tuple[Any, set[str]]], writer: str
) -> None:
    """ENUM and SET labels and ``float32`` numbers under the schema part, each value alone (a
    schema part met with a value the reader does not convert is Python's from then on): both
    paths equal; the plan's where its writer's table reads the value as Python writes it."""
    from tests.test_native_debezium_connect import messages

    for value, writers in values:
        records = keyed([(m, KEY) for m in messages(field, value)])
        for transforms in LABELLED_CHAINS:
            handled = assert_same(records, transforms, writer)
            if writer in writers:
                assert handled == len(records), (value, transforms, handled)
            elif value != "" and not (case == "set" and writer in ("ticdc", "canal")):
                assert handled == 0, (value, transforms, handled)


#: Key columns under the schema part whose values the reader converts into the key's text:
#: (case of ``test_native_debezium_connect.CASES``, whether the writers write them natively in
#: a key a transform set).
#: A DECIMAL's digits at its scale and VariableScaleDecimal's (the key: ``format(Decimal, "f")``),
#: BIGINT UNSIGNED's unwrapped ``int64`` (the key: the unsigned number); dates, times, bytes
#: and bits in the key are Python's (the key writes ISO texts, base64, numbers).
CONVERTED_KEYS = {
    "decimal(10,2)": True,
    "decimal(65,30)": True,
    "decimal scale 4 of 2": True,
    "VariableScaleDecimal": True,
    "bigint unsigned": True,
    "MicroTimestamp": False,
    "ZonedTimestamp": False,
    "MicroTime": False,
    "bytes": False,
    "Bits": False,
}


#: The writers whose own tables key the primary key (here ``id`` and the DECIMAL ``c``) and leave
#: a DECIMAL there to Python (the shaped key aside): none.
DECIMAL_PK_PYTHONS: set[str] = set()


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("case", sorted(CONVERTED_KEYS))
def test_converted_key_columns_under_the_schema_part(case: str, writer: str) -> None:
    """A key column whose Connect values the reader converts (the record key naming it), under
    the row-changing transforms: a key ``value_to_key`` set (the typed values) native for
    DECIMALs and BIGINT UNSIGNED where the bare plans convert the value; the others, and every
    key no transform set (Python keeps the record key's values as read), Python's."""
    from tests.test_native_debezium_connect import CASES, _source_types, messages

    (field, values) = next((_source_types(f), v) for c, f, v in CASES if c == case)
    for value, converts in values:
        records = keyed([(m, orjson.dumps({"id": 1, "c": value})) for m in messages(field, value)])
        for transforms, typed in (
            ([{"type": "replace_field", "renames": {"c": "k"}}], False),
            ([{"type": "value_to_key", "fields": ["c", "id"]}], True),
            ([{"type": "replace_field", "renames": {"c": "k"}}, {"type": "value_to_key", "fields": ["k"]}], True),
            ([_mask("null", ["id"]), SINGLE["merge"]], False),
        ):
            handled = assert_same(records, transforms, writer)
            if not (CONVERTED_KEYS[case] and typed):
                assert handled == 0, (value, transforms, handled)
            elif converts and (case == "bigint unsigned" or writer not in DECIMAL_PK_PYTHONS):
                assert handled == len(records), (value, transforms, handled)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=8),
    options=st.sampled_from(SCHEMA_INPUTS),
    writer=st.sampled_from(SCHEMA_WRITERS),
    pick=st.integers(0, 63),
)
def test_random_streams_keyed_by_every_type_with_the_schema_part(
    stream: list[ChangeEvent], options: dict[str, Any], writer: str, pick: int
) -> None:
    """Hypothesis streams with the schema part keyed by ``value_to_key`` on one of their columns
    (any MySQL type in any Connect representation: the converted DECIMALs and BIGINT UNSIGNED
    the plan's, the rest Python's), through each writer: identical."""
    names = [c.name for c in stream[0].schema.columns]
    column = names[1 + pick % (len(names) - 1)]
    records = debezium_records(stream, "UTC", options)
    assert_same(records, [{"type": "value_to_key", "fields": [column, "id"]}], writer)
