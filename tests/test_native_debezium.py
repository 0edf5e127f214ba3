"""The native Debezium reader against the Python path: byte for byte.

debezium-json -> canal-json: the reader types columns from the JSON values as the
Python decoder does without the schema part, takes the primary key from the record
key, and the Canal writer re-writes every value as Canal text. debezium-json ->
debezium-json: the event re-written as itself (values, source block and other fields
as orjson's round trip writes them), its key and a tombstone after a delete. Inputs: hypothesis
streams (every MySQL type, encoded by the Python Debezium encoder with each of its
modes, with and without the schema part), hand-made values and keys, the corpus,
malformed and mutated messages, the row-keeping transforms. Outputs (values, keys,
topics, headers) and dead letters must be equal, and the plan must handle the
regular messages itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cdc_smt.transforms import native
from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.config import build_transforms
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import ChangeEvent, Record
from tests.strategies import change_streams
from tests.test_native import NATIVE_SUITE, ZONES, _example, assert_plan_agrees, corpus_files, corpus_messages
from tests.test_native_canal_out import CHANGING, KEEPING
from tests.test_native_transforms import CHAINS

pytestmark = NATIVE_SUITE


#: Debezium encoder options the input streams are written with: without the schema part
#: (the reader's), with it and other modes (Python's, message by message).
INPUTS: list[dict[str, Any]] = [
    {},
    {"tombstones_on_delete": False},
    {"schemas_enable": True},
    {"decimal_handling_mode": "string", "binary_handling_mode": "hex"},
    {"time_precision_mode": "connect", "bigint_unsigned_handling_mode": "precise"},
    {"decimal_format": "numeric"},
]


def debezium_records(events: list[ChangeEvent], tz: str, options: dict[str, Any]) -> list[Record]:
    """The events as Debezium records (values and keys, delete tombstones included), with
    coordinates and headers so that both paths are seen to carry them alike."""
    codec = get_codec("debezium-json", {"source_timezone": tz, **options})
    out: list[Record] = []
    for event in events:
        event.timezone = tz
        out.extend(codec.encode(event))
    return keyed([(r.value, r.key) for r in out])


def keyed(pairs: list[tuple[bytes | None, bytes | None]]) -> list[Record]:
    return [
        Record(
            value=value,
            key=key,
            topic="in",
            partition=0,
            offset=i,
            timestamp=1_700_000_000_000 + i,
            headers=[("h", str(i).encode())] if i % 2 else [],
        )
        for i, (value, key) in enumerate(pairs)
    ]


#: The writers after the Debezium reader: encoder, its options, the plan.
ENCODERS: list[tuple[str, dict[str, Any], str]] = [
    ("canal-json", {}, native.DEBEZIUM_TO_CANAL),
    ("debezium-json", {}, native.DEBEZIUM_TO_DEBEZIUM),
    ("debezium-json", {"tombstones_on_delete": False}, native.DEBEZIUM_TO_DEBEZIUM),
    ("debezium-json", {"schemas_enable": True}, native.DEBEZIUM_TO_DEBEZIUM),
]
ENCODER_IDS = ["canal", "debezium", "debezium-no-tombstones", "debezium-schemas"]
#: The plan of the Debezium reader with each writer.
PLANS = {
    "canal-json": native.DEBEZIUM_TO_CANAL,
    "debezium-json": native.DEBEZIUM_TO_DEBEZIUM,
    "maxwell-json": native.DEBEZIUM_TO_MAXWELL,
    "ogg-json": native.DEBEZIUM_TO_OGG,
    "dts-avro": native.DEBEZIUM_TO_DTS,
    "ticdc-canal-json": native.DEBEZIUM_TO_TICDC,
}
#: The writers of events without the schema part (the hand-made events here).
SCHEMALESS, SCHEMALESS_IDS = ENCODERS[:3], ENCODER_IDS[:3]
#: The typed-JSON and DTS Avro writers (values converted as from Canal text).
CONVERTING: list[tuple[str, dict[str, Any], str]] = [
    ("maxwell-json", {}, native.DEBEZIUM_TO_MAXWELL),
    ("ogg-json", {}, native.DEBEZIUM_TO_OGG),
    ("dts-avro", {}, native.DEBEZIUM_TO_DTS),
]
CONVERTING_IDS = ["maxwell", "ogg", "dts"]
#: Writers whose records a batch's Python records do not affect (DTS numbers its records:
#: every record of a batch after one for Python is Python's, counts differ).
PER_RECORD, PER_RECORD_IDS = CONVERTING[:2], CONVERTING_IDS[:2]


def assert_same(
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
    encoder: str = "canal-json",
) -> int:
    """Both paths agree; returns how many records the plan handled itself (with their keys)."""
    assert_plan_agrees("debezium-json", encoder, PLANS[encoder], records, source, sink, transforms)
    return handled(records, source, sink, transforms, encoder)


def handled(
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
    encoder: str = "canal-json",
) -> int:
    chain = make_chain(source or {}, sink or {}, transforms or [], encoder)
    assert chain.native is not None
    counts = chain.native.convert_values([r.value for r in records], [r.key for r in records])[0]
    return sum(n >= 0 for n in counts)


def make_chain(
    source: dict[str, Any], sink: dict[str, Any], transforms: list[dict[str, Any]], encoder: str = "canal-json"
) -> Chain:
    codecs = get_codec("debezium-json", source), get_codec(encoder, sink)
    return Chain(codecs[0], codecs[1], build_transforms(transforms), "all")


def same(
    records: list[Record], writer: tuple[str, dict[str, Any], str], transforms: list[dict[str, Any]] | None = None
) -> int:
    """``assert_same`` for one of :data:`ENCODERS`."""
    encoder, sink, _ = writer
    return assert_same(records, {}, sink, transforms, encoder)


def test_the_plan_is_chosen_only_for_what_it_reads_and_writes() -> None:
    assert make_chain({}, {}, []).native.name == native.DEBEZIUM_TO_CANAL
    assert make_chain({"decimal_handling_mode": "string", "source_timezone": "Asia/Shanghai"}, {}, []).native
    assert make_chain({}, {"batch": "transaction"}, []).native is None  # Python groups transactions
    for name in KEEPING:
        assert make_chain({}, {}, CHAINS[name]).native is not None, name
    for name in CHANGING:  # the row-changing ones re-shape the rows (test_native_dbz_rowxf.py)
        assert make_chain({}, {}, CHAINS[name]).native.name == native.DEBEZIUM_TO_CANAL, name
    assert native.DEBEZIUM_TO_CANAL in native.status()["plans"]
    assert native.DEBEZIUM_TO_CANAL in native.plans_of("debezium-json")
    dbz = lambda **o: get_codec("debezium-json", o)  # noqa: E731
    assert Chain(dbz(), dbz(), [], "all").native.name == native.DEBEZIUM_TO_DEBEZIUM
    assert Chain(dbz(), dbz(tombstones_on_delete=False, topic_prefix="x"), [], "all").native is not None
    assert Chain(dbz(), dbz(schemas_enable=True), [], "all").native is not None
    assert Chain(dbz(), dbz(decimal_handling_mode="string"), [], "all").native is None  # values converted
    assert Chain(dbz(), dbz(), build_transforms(CHAINS["route"]), "all").native is not None
    assert Chain(dbz(), dbz(), build_transforms(CHAINS["five"]), "all").native is None
    assert native.DEBEZIUM_TO_DEBEZIUM in native.plans_of("debezium-json")
    plan = make_chain({}, {}, []).native
    assert plan.needs_keys and not Chain(get_codec("canal-json"), get_codec("canal-json"), [], "all").native.needs_keys


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    options=st.sampled_from(INPUTS),
    tz=st.sampled_from(ZONES),
    sink_tz=st.sampled_from([None, "UTC"]),
    transforms=st.sampled_from([[], *(CHAINS[n] for n in KEEPING)]),
    writer=st.sampled_from(ENCODERS + CONVERTING),
)
def test_random_streams_are_byte_identical(
    stream: list[ChangeEvent],
    options: dict[str, Any],
    tz: str,
    sink_tz: str | None,
    transforms: list[dict[str, Any]],
    writer: tuple[str, dict[str, Any], str],
) -> None:
    records = debezium_records(stream, tz, options)
    encoder, sink, _ = writer
    source = {"source_timezone": tz}
    if encoder == "debezium-json":
        sink_tz = None  # the same zone: a zone of its own converts TIMESTAMPs (no plan)
        modes = {k: v for k, v in options.items() if k.endswith("_mode") or k == "decimal_format"}
        source, sink = {**source, **modes}, {**sink, **modes}  # values as they are: the plan's
    assert_same(records, source, {**sink, "source_timezone": sink_tz or tz}, transforms, encoder)


@pytest.mark.parametrize("writer", ENCODERS + CONVERTING, ids=ENCODER_IDS + CONVERTING_IDS)
def test_generated_streams_are_mostly_handled_natively(writer: tuple[str, dict[str, Any], str]) -> None:
    """Without the schema part the plan converts most messages itself (all but tombstones
    and values it leaves to Python): the comparisons are not between two Python runs."""
    total = count = 0
    encoder, sink, _ = writer
    zone = {"source_timezone": "Asia/Shanghai"}
    options = {"schemas_enable": True} if sink.get("schemas_enable") else {}  # the schema part in and out
    for seed in range(30):
        records = [r for r in debezium_records(_example(seed), "Asia/Shanghai", options) if r.value is not None]
        total += len(records)
        count += assert_same(records, zone, {**sink, **zone}, None, encoder)
    assert count >= total * 0.6, (count, total)


# ---------------------------------------------------------------------------
# hand-made messages
# ---------------------------------------------------------------------------

SOURCE = {
    "version": "2.5.0.Final",
    "connector": "mysql",
    "name": "srv",
    "ts_ms": 1_700_000_000_000,
    "snapshot": "false",
    "db": "shop",
    "sequence": None,
    "table": "t",
    "server_id": 1,
    "gtid": None,
    "file": "binlog.000003",
    "pos": 4711,
    "row": 0,
    "thread": 7,
    "query": None,
}
ROW = {"id": 1, "v": "x", "d": 2.5, "b": True, "n": None, "big": -(2**63)}
KEY = b'{"id":1}'


def event(op: str, before: Any = None, after: Any = None, **fields: Any) -> bytes:
    """A Debezium envelope (``fields`` replace or, as ``None``-valued ``drop_*``, remove fields)."""
    msg: dict[str, Any] = {
        "before": before,
        "after": after,
        "source": SOURCE,
        "op": op,
        "ts_ms": 1_700_000_000_123,
        "transaction": None,
    }
    for k, v in fields.items():
        if k.startswith("drop_"):
            msg.pop(k[5:])
        else:
            msg[k] = v
    return orjson.dumps(msg)


def good() -> list[tuple[bytes | None, bytes | None]]:
    changed = {**ROW, "v": "y", "d": 3.5, "n": "now"}
    return [
        (event("c", after=ROW), KEY),
        (event("r", after=ROW), KEY),
        (event("u", before=ROW, after=changed), KEY),
        (event("u", before=ROW, after=ROW), KEY),
        (event("d", before=ROW), KEY),
        (None, KEY),
    ]


@pytest.mark.parametrize("writer", SCHEMALESS + CONVERTING, ids=SCHEMALESS_IDS + CONVERTING_IDS)
def test_regular_events_are_all_handled_natively(writer: tuple[str, dict[str, Any], str]) -> None:
    records = keyed(good())
    assert same(records, writer) == len(records) - 1  # the tombstone is Python's (it counts it)


def test_regular_events_as_canal() -> None:
    records = keyed(good())
    result = make_chain({}, {}, []).process_batch(records)
    first = orjson.loads(result.outputs[0].value)
    assert first["data"] == [{"id": "1", "v": "x", "d": "2.5", "b": "1", "n": None, "big": str(-(2**63))}]
    assert result.outputs[0].key == KEY
    assert [orjson.loads(r.value)["old"] for r in result.outputs[2:4]] == [[{"v": "x", "d": "2.5", "n": None}], None]


#: Column values around what the reader converts itself.
VALUES: list[Any] = [
    0, -1, 2**63 - 1, -(2**63), 2**63, 2**64 - 1,
    0.0, -0.0, 0.001, 0.000999, 1e7, 9999999.5, 1e-300, 1.5e300, 0.1 + 0.2, 123456.789, 5e-324,
    "", "é", '\u0000\n"\\', "🙂", "1", "x" * 300,
    True, False, None,
    {"a": 1}, [1, 2], {"wkb": "AQ==", "srid": None}, {"x": 1.0, "y": 2.0, "wkb": "AQ=="},
]  # fmt: skip


@pytest.mark.parametrize("writer", ENCODERS[:2] + PER_RECORD, ids=ENCODER_IDS[:2] + PER_RECORD_IDS)
@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_values(value: Any, writer: tuple[str, dict[str, Any], str]) -> None:
    row = {**ROW, "v": value}
    values = [
        (event("c", after=row), KEY),
        (event("u", before=ROW, after=row), KEY),
        (event("u", before=row, after=ROW), KEY),
        (event("d", before=row), KEY),
        (event("c", after=ROW), b'{"v":1}'),
    ]
    count = same(keyed(values), writer)
    if isinstance(value, str) or value is None:
        assert count == len(values)
    elif isinstance(value, bool) or (type(value) is int and -(2**63) <= value < 2**63):
        assert count == len(values) - 2  # the updates change the column's kind: Python's


@pytest.mark.parametrize("writer", ENCODERS[:2] + PER_RECORD, ids=ENCODER_IDS[:2] + PER_RECORD_IDS)
def test_literals_as_written(writer: tuple[str, dict[str, Any], str]) -> None:
    """Numbers written in other notations (orjson reads them as the same values)."""
    base = event("c", after=ROW)
    variants = [
        base.replace(b'"id":1', b'"id":-0'),
        base.replace(b'"id":1', b'"id":1.0'),
        base.replace(b'"id":1', b'"id":1E2'),
        base.replace(b'"id":1', b'"id":1000000000000000000000000000000'),
        base.replace(b'"d":2.5', b'"d":25e-1'),
        base.replace(b'"d":2.5', b'"d":2.50'),
        base.replace(b'"d":2.5', b'"d":1e400'),
        base.replace(b'"v":"x"', b'"v":"\\u00e9\\/\\ud83d\\ude00"'),
        base.replace(b'"v":"x"', b'"v":"\\ud800"'),
        base.replace(b'"v":"x"', b'"v":"\xff"'),
        b" \n" + base + b"\n",
    ]
    assert same(keyed([(v, KEY) for v in variants]), writer) >= 4


#: Record keys: the primary key's names come from them (or there is none).
KEYS: list[bytes | None] = [
    None,
    b"",
    b"k",
    b"[1]",
    b"1",
    b"null",
    b"{}",
    b'{"id":1}',
    b'{"id":"1"}',
    b'{"v":"x","id":1}',
    b'{"nope":1}',
    b'{"id":1,"id":2}',
    b'{"schema":{"type":"struct"},"payload":{"id":1}}',
    b'{"schema":null,"payload":null}',
    b'{"id":1',
    b' {"id":1} ',
    b'{"\\u0069d":1}',
    b'{"big":1}',
    b'{"d":1}',
]


@pytest.mark.parametrize("writer", SCHEMALESS + CONVERTING, ids=SCHEMALESS_IDS + CONVERTING_IDS)
@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_keys(key: bytes | None, writer: tuple[str, dict[str, Any], str]) -> None:
    values = [(v, key) for v, _ in good()]
    count = same(keyed(values), writer)
    if key in (None, b"", b'{"id":1}', b'{"v":"x","id":1}', b'{"nope":1}', b"{}", b"[1]"):
        # (DTS writes the key columns' values with their types: a key column the row lacks is Python's)
        assert count == len(values) - 1 or (writer[0] == "dts-avro" and key == b'{"nope":1}')


def test_without_keys_the_reader_handles_nothing() -> None:
    plan = make_chain({}, {}, []).native
    assert plan is not None
    values = [v for v, _ in good()]
    assert plan.convert_values(values)[0] == [-1] * len(values)
    with pytest.raises(ValueError, match="one key per value"):
        plan.convert_values(values, [KEY])
    assert plan.convert_values(values[:2], ["not bytes", KEY])[0] == [-1, 1]  # type: ignore[list-item]  # a wrong key type is Python's


#: Unusual or malformed events (each among good ones).
MALFORMED: list[bytes | None] = [
    b"",
    b"   ",
    b"not json",
    b"[1, 2]",
    b'"text"',
    b"{",
    event("c", after=ROW)[:-1],
    event("c", after=ROW) + b" trailing",
    event("x", after=ROW),
    event("t"),
    event("m", after=ROW),
    event("c", after=ROW).replace(b'"op":"c"', b'"op":null'),
    event("c", after=ROW).replace(b'"op":"c"', b'"op":7'),
    event("c", after=ROW).replace(b',"op":"c"', b""),
    event("c"),
    event("c", after=[ROW]),
    event("c", after="row"),
    event("c", after={}),
    event("c", before={}, after=ROW),
    event("c", before=ROW, after=ROW),
    event("u", after=ROW),
    event("u", before=ROW),
    event("u", before={"id": 1}, after=ROW),
    event("u", before=dict(reversed(ROW.items())), after=ROW),
    event("u", before={**ROW, "v": 5}, after=ROW),
    event("u", before={**ROW, "d": 2}, after=ROW),
    event("u", before={**ROW, "n": 5}, after=ROW),
    event("d"),
    event("d", before=ROW, after=ROW),
    event("r", after=ROW, source=None),
    event("r", after=ROW, drop_source=None),
    event("r", after=ROW, source="x"),
    event("c", after=ROW, source={**SOURCE, "db": None}),
    event("c", after=ROW, source={**SOURCE, "db": 7}),
    event("c", after=ROW, source={**SOURCE, "table": None}),
    event("c", after=ROW, source={**SOURCE, "ts_ms": None}),
    event("c", after=ROW, source={**SOURCE, "ts_ms": 1.5}),
    event("c", after=ROW, source={**SOURCE, "ts_ms": "1"}),
    event("c", after=ROW, source={**SOURCE, "connector": "postgresql", "schema": "public"}),
    event("c", after=ROW, source={**SOURCE, "connector": 5}),
    event("c", after=ROW, source={k: v for k, v in SOURCE.items() if k not in ("db", "table")}),
    event("c", after=ROW, ts_ms="x"),
    event("c", after=ROW, drop_transaction=None),
    event("c", after=ROW, transaction={"id": "tx", "total_order": 1, "data_collection_order": 1}),
    event("c", after=ROW, extra=[1, {"a": None}]),
    event("c", after=ROW, schema=None, payload=None),
    orjson.dumps({"schema": None, "payload": orjson.loads(event("c", after=ROW))}),
    orjson.dumps({"schema": None, "payload": None}),
    event("c", after=ROW).replace(b'"op":"c"', b'"op":"c","op":"d"'),
    event("c", after=ROW).replace(b'"id":1', b'"id":1,"id":2'),
    event("c", after=ROW).replace(b'"db":"shop"', b'"db":"shop","db":"x"'),
    event("c", after=ROW).replace(b'"ts_ms":1700000000123', b'"ts_ms":1700000000123,"ts_ms":5'),
    orjson.dumps({"databaseName": "shop", "ddl": "CREATE TABLE t (id int)", "source": SOURCE, "ts_ms": 1}),
    orjson.dumps({"status": "BEGIN", "id": "x", "ts_ms": 1}),
    orjson.dumps({"ts_ms": 1}),
]


@pytest.mark.parametrize("writer", SCHEMALESS + PER_RECORD, ids=SCHEMALESS_IDS + PER_RECORD_IDS)
def test_malformed_and_unusual_events_among_good_ones(writer: tuple[str, dict[str, Any], str]) -> None:
    values = [pair for bad in MALFORMED for pair in ((event("c", after=ROW), KEY), (bad, KEY))]
    assert same(keyed(values), writer) >= len(MALFORMED)


@pytest.mark.parametrize("writer", SCHEMALESS + PER_RECORD, ids=SCHEMALESS_IDS + PER_RECORD_IDS)
def test_events_without_ts_ms_are_pythons(writer: tuple[str, dict[str, Any], str]) -> None:
    """Python writes the time of encoding for them (not comparable): the plan hands them over."""
    plan = make_chain({}, writer[1], [], writer[0]).native
    assert plan is not None
    values = [event("c", after=ROW, ts_ms=None), event("c", after=ROW, drop_ts_ms=None), event("c", after=ROW)]
    assert plan.convert_values(values, [KEY] * 3)[0] == [-1, -1, 1]


@settings(max_examples=200, deadline=None)
@given(
    at=st.integers(0, len(event("u", before=ROW, after=ROW)) - 1),
    insert=st.binary(max_size=3) | st.sampled_from([b'"', b"\\", b"{", b"]", b",", b"null", b"1e999", b"\xc3"]),
    cut=st.integers(0, 3),
    writer=st.sampled_from(SCHEMALESS + CONVERTING),
)
def test_mutated_messages(at: int, insert: bytes, cut: int, writer: tuple[str, dict[str, Any], str]) -> None:
    value = event("u", before=ROW, after=ROW)
    mutated = value[:at] + insert + value[at + cut :]
    assume(b',"ts_ms":1700000000123,' in mutated)  # else Python may write the time of encoding
    same(keyed([(mutated, KEY), (value, KEY)]), writer)


@pytest.mark.parametrize("writer", SCHEMALESS + CONVERTING, ids=SCHEMALESS_IDS + CONVERTING_IDS)
@pytest.mark.parametrize("name", KEEPING)
def test_chains_that_keep_rows(name: str, writer: tuple[str, dict[str, Any], str]) -> None:
    values = [
        (event(op, before=ROW if op in "ud" else None, after=None if op == "d" else ROW, source=source), KEY)
        for op in "cudr"
        for source in (SOURCE, {**SOURCE, "table": "orders"}, {**SOURCE, "db": "other"})
    ]
    assert same(keyed(values), writer, CHAINS[name]) == len(values)


@pytest.mark.parametrize("writer", ENCODERS[:2] + CONVERTING, ids=ENCODER_IDS[:2] + CONVERTING_IDS)
def test_tables_and_layouts_change_between_messages(writer: tuple[str, dict[str, Any], str]) -> None:
    rows = [ROW, {"id": 2}, {**ROW, "n": 5}, {**ROW, "v": None}, ROW, {"id": 3, "v": "z"}]
    values = [(event("c", after=row, source={**SOURCE, "table": f"t{i % 2}"}), KEY) for i, row in enumerate(rows)]
    assert same(keyed(values * 3), writer) == len(values) * 3


@pytest.mark.parametrize(
    "writer",
    [ENCODERS[i] for i in (0, 1, 3)] + CONVERTING,
    ids=[ENCODER_IDS[i] for i in (0, 1, 3)] + CONVERTING_IDS,
)
def test_corpus_debezium_files(corpus: Path, writer: tuple[str, dict[str, Any], str]) -> None:
    values = [v for messages in corpus_messages(corpus_files(corpus, "debezium-json")) for v in messages]
    assert values
    # The corpus files hold values only: keys as Debezium writes them for Flink's test tables.
    for key in (None, b'{"id":101}'):
        records = keyed([(v, key) for v in values])
        same(records, writer)
        same(records, writer, CHAINS["headers"])
    schemaless = [v for v in values if not v.lstrip().startswith(b'{"schema"')]
    wrapped = [v for v in values if v.lstrip().startswith(b'{"schema"')]
    sink = writer[1]
    if writer[2] == native.DEBEZIUM_TO_CANAL or not sink.get("schemas_enable"):
        assert handled(keyed([(v, None) for v in schemaless]), {}, sink, [], writer[0]) >= len(schemaless) // 2
    if writer[2] == native.DEBEZIUM_TO_DEBEZIUM:  # the schema part read (and written) natively
        assert handled(keyed([(v, None) for v in wrapped]), {}, sink, [], writer[0]) >= len(wrapped) // 2


def counting(process: Any, seen: list[Record]) -> Any:
    """``process`` that also notes each record it is given."""

    def wrapper(record: Record) -> Any:
        seen.append(record)
        return process(record)

    return wrapper


@pytest.mark.parametrize("writer", ENCODERS[:2] + PER_RECORD, ids=ENCODER_IDS[:2] + PER_RECORD_IDS)
def test_the_worker_passes_the_keys(writer: tuple[str, dict[str, Any], str]) -> None:
    """The worker's batch path (``Converter.convert``) hands the plan the fetched keys:
    the same rows per (topic, partition) as the chain on the Python path, most of them
    converted natively."""
    from cdc_smt.connector.jobconfig import load_job
    from cdc_smt.connector.worker.pipeline import Converter
    from tests.test_worker_native import Msg, core

    encoder, sink, _ = writer
    doc = {
        "id": "job-debezium",
        "kafka": {"bootstrap_servers": "127.0.0.1:9092"},
        "source": {"topics": ["in"], "format": "debezium-json"},
        "sink": {"topic": "out", "format": encoder},
        "errors": {"tolerance": "all", "dead_letter_topic": "dlq"},
    }
    pairs = good() * 3 + [(MALFORMED[8], KEY), (event("c", after=ROW), b"k")]
    batch = [
        Msg("in", 0, i, 1_700_000_000_000 + i, k, v, [("h", b"1")] if i % 2 else []) for i, (v, k) in enumerate(pairs)
    ]
    seen = []
    to_python: list[Record] = []
    for on in (True, False):
        with core(on):
            c = Chain(get_codec("debezium-json"), get_codec(encoder, sink), [], "all")
            assert (c.native is not None) == on
            if on:  # the records the plan leaves to the chain's Python path
                c.process = counting(c.process, to_python)  # type: ignore[method-assign]
            conv = Converter(load_job(doc), {"out": 3, "dlq": 1}).convert(c, "in", 0, batch)
        dead = [(d.record, d.stage, d.message) for d in conv.dead_letters]
        seen.append((conv.groups, conv.deferred, conv.n_out, dead))
    assert seen[0] == seen[1]
    assert len(to_python) == 5  # the three tombstones and the two bad records


def test_the_arrow_path_leaves_keyed_plans_to_the_batch_path() -> None:
    """The backfill's Arrow entry point passes values only: the Debezium reader, which
    needs the keys, hands every record over there, and the backfill does not use it."""
    pa = pytest.importorskip("pyarrow")
    import cdc_smt._native as ext

    plan = make_chain({}, {}, []).native
    assert plan is not None and plan.needs_keys
    values = [v for v, _ in good()]
    counts = pa.array(ext.convert_arrow(plan.plan, pa.array(values, pa.binary()))[0]).to_pylist()
    assert counts == [-1] * len(values)


def with_schema(pairs: list[tuple[bytes | None, bytes | None]]) -> list[tuple[bytes | None, bytes | None]]:
    """The events with the schema part in values and keys, as the Python encoder writes them."""
    chain = Chain(get_codec("debezium-json"), get_codec("debezium-json", {"schemas_enable": True}), [], "all")
    chain.native = None
    out: list[tuple[bytes | None, bytes | None]] = []
    for record in keyed(pairs):
        result = chain.process(record)
        out.extend((r.value, r.key) for r in result.outputs)
        if not result.outputs and not result.dead_letters:
            out.append((record.value, record.key))  # a tombstone
    return out


@pytest.mark.parametrize("transforms", [[], *(CHAINS[n] for n in KEEPING)], ids=["none", *KEEPING])
def test_the_schema_part_in_and_out(transforms: list[dict[str, Any]]) -> None:
    """Events with the schema part re-written with it (the message's own schema, the key's)."""
    pairs = with_schema(good())
    assert all(v is None or v.startswith(b'{"schema":') for v, _ in pairs)
    assert all(k is not None and k.startswith(b'{"schema":') for v, k in pairs if v is not None)
    records = keyed(pairs)
    count = same(records, ENCODERS[3], transforms)
    assert count == sum(r.value is not None for r in records)
    assert same(records, ENCODERS[1], transforms) == count  # the schema part read, not written
    # to Canal, Maxwell and GoldenGate: the values written as they are (integers, strings, doubles, BIT(1)) natively
    assert same(records, ENCODERS[0], transforms) == count
    for writer in PER_RECORD:
        assert same(records, writer, transforms) == count


def test_schema_parts_python_decides() -> None:
    """Heads the plan does not split as Python does, schemas that do not describe the row."""
    (value, key), *_ = with_schema(good())
    head, _, payload = value.partition(b',"payload":')
    values = [
        value,
        head + b',"payload":' + payload + b"  ",
        head + b',"payload":' + payload[:-1] + b"\n}",
        head + b' ,"payload":' + payload,
        head.replace(b'"optional":false', b'"optional":true', 1) + b',"payload":' + payload,
        head + b',"payload":' + payload.replace(b'"v":"x"', b'"v":"x","w":1'),
        head + b',"payload":' + payload.replace(b'"id":1', b'"id":1.5', 1),
        head + b',"payload":{"schema":null,"payload":null}}',
        b'{"payload":' + payload[:-1] + b',"schema":' + head[len(b'{"schema":') :] + b"}",
        orjson.dumps({"schema": None, "payload": None}),
    ]
    for writer in (ENCODERS[3], ENCODERS[1]):
        assert same(keyed([(v, key) for v in values]), writer) >= 1


def test_schema_parts_of_values_python_converts() -> None:
    """A schema part typing a column in a representation the Canal writer does not convert
    (here a geometry column): once a message of it has such a value, its later messages are
    Python's, null values or not, decided from the schema part alone; messages with other
    schema parts in between are still the plan's, the Debezium writer still copies the dated
    ones, and output is the same either way."""
    pairs = with_schema(good())
    string = b'{"type":"string","optional":true,"field":"n"}'
    date = (
        b'{"type":"struct","fields":[{"type":"bytes","optional":false,"field":"wkb"},'
        b'{"type":"int32","optional":true,"field":"srid"}],"optional":true,'
        b'"name":"io.debezium.data.geometry.Geometry","version":1,"field":"n"}'
    )
    given = b'"n":"AQA="'
    dated = [(v if v is None else v.replace(string, date).replace(b'"n":"now"', given), k) for v, k in pairs]
    assert all(v is None or (date in v and string not in v) for v, _ in dated)
    given_first = sorted(dated, key=lambda pair: pair[0] is None or given not in pair[0])
    assert given_first[0][0] is not None and given in given_first[0][0]
    rows = sum(v is not None for v, _ in pairs)
    nulls = [(v, k) for v, k in dated if v is not None and given not in v]
    assert nulls and same(keyed(nulls), ENCODERS[0]) == len(nulls)  # a null date alone: the plan's
    assert same(keyed(given_first), ENCODERS[0]) == 0  # after a date given: Python's
    mixed = keyed([pair for both in zip(given_first, pairs, strict=True) for pair in both])
    assert same(mixed, ENCODERS[0]) == rows  # the plain schema part's rows only
    assert same(keyed(given_first + pairs + nulls), ENCODERS[0]) == rows
    assert same(keyed(dated), ENCODERS[3]) == rows  # values copied as they are
    for writer in PER_RECORD:  # the typed-JSON writers read the schema part as the Canal writer does
        assert same(mixed, writer) == rows
    same(mixed, CONVERTING[2])  # DTS: both paths agree (a batch's records after one of Python's are Python's)
