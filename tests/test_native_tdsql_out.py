"""The native canal-json / ticdc-canal-json / debezium-json -> tdsql-binlog-json plans against
the Python path, byte for byte (values, keys, topics, headers, dead letters).

The TDSQL writer writes one binlog row event per row on the CloudCanal writer's tables: each
value ``to_literal`` of the typed value (MySQL's own text, bare for numbers, ``b'…'`` for BIT,
``X'…'`` for binary, quoted and escaped for the rest), positional ``where``/``field`` arrays
in the schema's column order, ``eventtype`` per ``row_event_version``, ``begintime`` seconds
and the source's ``gtid``. Inputs: hypothesis streams of every MySQL type, the edge values,
literals that need escaping, the corpus, the example data, malformed and mutated messages,
rows lacking, repeating or reordering columns, one record at a time against one batch, the
row-keeping transforms; through both ``Chain.process_batch`` and ``NativePlan.convert_values``.
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
    canal_stream,
    corpus_files,
    corpus_messages,
    edge_messages,
    outputs,
    records_of,
)
from tests.test_native_canal_out import UNUSUAL, keeping_messages, ticdc_text_messages
from tests.test_native_cloudcanal_out import ROWS, assert_both_agree, regular_messages, update_messages
from tests.test_native_debezium import INPUTS, KEY, ROW, SOURCE, debezium_records, event, good, keyed
from tests.test_native_debezium import MALFORMED as DEBEZIUM_MALFORMED
from tests.test_native_maxwell import CHANGING, KEEPING
from tests.test_native_ticdc import ENCODERS as TICDC_ENCODERS
from tests.test_native_ticdc import ticdc_stream
from tests.test_native_transforms import CHAINS

pytestmark = NATIVE_SUITE

OUT = "tdsql-binlog-json"
#: The plans from canal-json, ticdc-canal-json and debezium-json.
PLANS = {"canal-json": native.CANAL_TO_TDSQL, "ticdc-canal-json": native.TICDC_TO_TDSQL}
#: The encoder's options: both row-event versions.
SINKS: list[dict[str, Any]] = [{}, {"row_event_version": 2}]


def assert_same(
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
    decoder: str = "canal-json",
) -> int:
    """Both paths give the same records and dead letters; returns how many the plan handled."""
    return assert_both_agree(decoder, PLANS[decoder], records, source, sink, transforms, OUT)


def assert_debezium(
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
) -> int:
    return assert_both_agree("debezium-json", native.DEBEZIUM_TO_TDSQL, records, source, sink, transforms, OUT)


def chain(decoder: str = "canal-json", transforms: list[dict[str, Any]] | None = None, **sink: Any) -> Chain:
    return Chain(get_codec(decoder), get_codec(OUT, sink), build_transforms(transforms or []), "all")


def test_the_plan_is_chosen_only_for_what_it_writes() -> None:
    from cdc_smt.transforms.catalog import SchemaCatalog

    for decoder, name in [*PLANS.items(), ("debezium-json", native.DEBEZIUM_TO_TDSQL)]:
        assert chain(decoder).native.name == name
        assert name in native.status()["plans"] and name in native.plans_of(OUT)
        for keeping in KEEPING:
            assert chain(decoder, CHAINS[keeping]).native is not None, keeping
        for changing in CHANGING:  # from canal-json the shaped writer (test_native_rowxf_writers.py)
            changed = chain(decoder, CHAINS[changing]).native
            assert (changed is not None) == (decoder in ("canal-json", "debezium-json")), changing
    # A schema catalog given to the chain (schema files): its DDL is Python's.
    catalog = SchemaCatalog()
    codecs = get_codec("canal-json", catalog=catalog), get_codec(OUT, catalog=catalog)
    assert Chain(*codecs, [], "all", catalog=catalog).native is None


@pytest.mark.parametrize("sink", SINKS)
def test_regular_messages_are_all_handled(sink: dict[str, Any]) -> None:
    values = regular_messages([{"v": "a"}, {"i": None}, {"v": None, "i": "9"}])
    values.append(_message("INSERT", ROWS, es=None))  # no ``begintime``
    assert assert_same(records_of(values), {}, sink) == len(values)
    result = chain(**sink).process_batch(records_of(values[1:2]))
    assert len(result.outputs) == 3
    first = orjson.loads(result.outputs[0].value)
    assert first["eventtypestr"] == "update" and first["eventtype"] == (24 if not sink else 31)
    assert first["where"][list(BASE).index("v")] == "'a'" and len(first["field"]) == len(BASE)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    tz=st.sampled_from(ZONES),
    sink_tz=st.sampled_from([None, "UTC", "Asia/Shanghai"]),
    merge=st.lists(st.booleans(), min_size=1, max_size=5),
    sink=st.sampled_from(SINKS),
    transforms=st.sampled_from([[], *(CHAINS[n] for n in KEEPING)]),
)
def test_random_streams_are_byte_identical(
    stream: list[ChangeEvent],
    tz: str,
    sink_tz: str | None,
    merge: list[bool],
    sink: dict[str, Any],
    transforms: list[dict[str, Any]],
) -> None:
    values = canal_stream(stream, tz, merge)
    assert_same(records_of(values), {"source_timezone": tz}, {**sink, "source_timezone": sink_tz or tz}, transforms)


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


#: Texts of every literal form: quotes, backslashes and the bytes ``quote_string`` escapes,
#: unicode, binary bytes above 0x7f, BIT's extremes, 65-digit decimals, zero dates.
LITERALS: dict[str, tuple[str, list[str]]] = {
    "v": ("varchar(32)", ["it's", 'say "hi"', "a\\b", "\0\n\r\x1a\t", "ü😀", "", "'", "\\'", "NULL"]),
    "j": ("json", ['{"a": "it\'s"}', "[1, 2.5, null]", '"\\u0000"']),
    "bl": ("blob", ["\x00\x7f\x80\xff", "", "abc", "ÿ", "Ā"]),
    "vb": ("varbinary(8)", ["\x01'\\", "é"]),
    "b1": ("bit(1)", ["0", "1", "2", "-1"]),
    "b64": ("bit(64)", ["0", "5", "18446744073709551615", "18446744073709551616", "01"]),
    "dw": ("decimal(65,30)", ["12345678901234567890123456789012345.123456789012345678901234567890", "-0.5", "1e5"]),
    "u": ("bigint(20) unsigned", ["18446744073709551615", "0", "-1"]),
    "da": ("date", ["0000-00-00", "2020-02-29", "2021-02-29", "9999-12-31"]),
    "dt": ("datetime(6)", ["0000-00-00 00:00:00", "2020-01-01 00:00:00.5", "2020-01-01T00:00:00"]),
    "tm": ("time(3)", ["-838:59:59.000", "00:00:00", "12:00"]),
    "e": ("enum('a','it''s')", ["1", "2", "0", "a", "3"]),
    "s": ("set('a','b','c')", ["0", "5", "7", "a,b", "8"]),
    "y": ("year", ["0000", "0", "2155"]),
    "f": ("float", ["1.5", "0.1", "3.4028235E38", "-0.0"]),
    "db": ("double", ["0.0", "1.0E10", "1.5", "4.9E-324"]),
    "g": ("geometry", ["\x00\x00\x00\x00\x01\x01"]),
}


@pytest.mark.parametrize("sink", SINKS)
@pytest.mark.parametrize("column", sorted(LITERALS))
def test_literals_of_every_kind(column: str, sink: dict[str, Any]) -> None:
    type_text, texts = LITERALS[column]
    types = {"id": "int", column: type_text}
    values = []
    for text in [*texts, None]:
        row = {"id": "1", column: text}
        values.append(_message("INSERT", [row], types=types))
        values.append(_message("UPDATE", [row], old=[{column: texts[0]}], types=types))
        values.append(_message("DELETE", [row], types=types))
    handled = assert_same(records_of(values), {}, sink)
    if column != "g":  # GEOMETRY is Python's
        assert handled >= 3, handled


def test_updates_write_the_row_overlaid_with_old() -> None:
    values = update_messages({"v": "changed"})
    assert assert_same(records_of(values)) >= len(values) // 2


def test_rows_lacking_repeating_or_reordering_columns() -> None:
    """Python writes every column in the schema's order or dead-letters the row."""
    types = {"id": "int", "v": "varchar(5)", "n": "int"}
    raw = b'{"data":[{"id":"1","v":"x","v":"y","n":"2"}],"database":"shop","es":1,"id":1,"isDdl":false,'
    raw += b'"mysqlType":{"id":"int","v":"varchar(5)","n":"int"},"old":null,"pkNames":["id"],"sql":"",'
    raw += b'"sqlType":{"id":4,"v":12,"n":4},"table":"t","ts":2,"type":"INSERT"}'
    values = [
        _message("INSERT", [{"id": "1", "v": "x", "n": "2"}], types=types),
        _message("INSERT", [{"n": "2", "id": "1", "v": "x"}], types=types),  # another order
        _message("INSERT", [{"id": "1", "v": "x"}], types=types),  # a column missing
        _message("INSERT", [{"id": "1", "v": "x", "n": "2", "z": "3"}], types=types),  # one the schema lacks
        _message("UPDATE", [{"id": "1", "v": "x", "n": "2"}], old=[{"z": "3"}], types=types),
        _message("UPDATE", [{"id": "1", "v": "x", "n": "2"}], old=[{"n": "3", "v": None}], types=types),
        _message("DELETE", [{"v": "x", "n": "2"}], types=types),
        raw,
    ]
    assert assert_same(records_of(values)) >= 3  # the rows naming every column once


def test_one_record_at_a_time_is_the_batch() -> None:
    values = [*edge_messages(), *regular_messages([{"v": "a"}, {}, {"i": "9"}])]
    records = records_of(values)
    batch = outputs(chain().process_batch(records))
    single = chain()
    one_by_one = [o for record in records for o in outputs(single.process_batch([record]))]
    assert one_by_one == batch


def test_arrow_batches_convert_as_lists() -> None:
    """The backfill's Arrow path (``convert_arrow``) gives what ``convert`` gives."""
    import pyarrow as pa

    from cdc_smt import _native

    regular = regular_messages([{"v": "a"}, {}, {"i": "9"}])
    values = [*regular, None, *MALFORMED, GOOD]
    arrays = _native.convert_arrow(chain().native.plan, pa.array(values, pa.binary()))
    got = tuple(pa.array(a).to_pylist() for a in arrays)
    want = tuple(list(x) for x in chain().native.plan.convert(values))
    assert got == want and sum(n >= 0 for n in got[0]) > len(regular)


@pytest.mark.parametrize("sink", SINKS)
def test_unusual_fields(sink: dict[str, Any]) -> None:
    values = [v for odd in UNUSUAL for v in (GOOD, odd)]
    assert assert_same(records_of(values), {}, sink) >= len(values) // 2


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
        ("bigint(20) unsigned", ["1", "18446744073709551615", "-1", "01"]),
        ("varchar(10)", ["a", "", "ü", "it's"]),
        ("enum('a','b')", ["1", "2", "0", "a", "9"]),
        ("decimal(10,2)", ["1.5", "1.50"]),
        ("varbinary(4)", ["\x01\xff"]),
    ],
)
def test_keys_of_every_kind(key_type: str, texts: list[str]) -> None:
    types = {"id": key_type, "v": "varchar(5)"}
    values = [_message("INSERT", [{"id": t, "v": "x"}], types=types) for t in texts]
    values.append(_message("DELETE", [{"id": None, "v": "x"}], types=types))
    assert_same(records_of(values))


def test_the_encoders_own_catalog_does_not_order_rows() -> None:
    """Python orders the arrays by the event's schema, which Canal's messages always give: a
    table the encoder's catalog knows in another order is written in the message's."""
    from cdc_smt.transforms.catalog import SchemaCatalog

    catalog = SchemaCatalog()
    ddl = _ddl("CREATE TABLE shop.t (v varchar(5), id int primary key)")
    get_codec("tdsql-binlog-json", catalog=catalog).decode(records_of([orjson.dumps(ddl)])[0])  # observes it
    assert catalog.get("shop", "t") is not None
    fast = Chain(get_codec("canal-json"), get_codec(OUT, catalog=catalog), [], "all")
    slow = Chain(get_codec("canal-json"), get_codec(OUT, catalog=catalog), [], "all")
    slow.native = None
    records = records_of([_message("INSERT", [{"id": "1", "v": "x"}], types={"id": "int", "v": "varchar(5)"})])
    assert fast.native is not None
    assert outputs(fast.process_batch(records)) == outputs(slow.process_batch(records))
    assert sum(n >= 0 for n in fast.native.plan.convert([r.value for r in records])[0]) == 1


def _ddl(sql: str) -> dict[str, Any]:
    return {"logtype": "mysqlbinlog", "eventtype": 2, "eventtypestr": "query", "db": "shop", "sql": sql}


def test_corpus_canal_files(corpus: Path) -> None:
    total = count = 0
    for values in corpus_messages(corpus_files(corpus, "canal-json")):
        count += assert_same(records_of(values))
        total += len(values)
        assert_same(records_of(values), {}, {"row_event_version": 2}, CHAINS["headers"])
    assert total > 0 and count > total // 2, (count, total)


@pytest.mark.parametrize("name", ["orders.canal.jsonl", "demo-shop.canal.jsonl", "orders-with-bad-line.canal.jsonl"])
def test_example_data(name: str) -> None:
    lines = [line for line in (ROOT / "examples" / "data" / name).read_bytes().splitlines() if line.strip()]
    zone = {"source_timezone": "Asia/Shanghai"}
    assert assert_same(records_of(lines), zone, zone) > 0
    assert_same(records_of(lines), zone, {})  # TIMESTAMPs re-based to UTC: Python's


# ---------------------------------------------------------------------------
# from ticdc-canal-json
# ---------------------------------------------------------------------------


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
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
    assert_same(records_of(values), zone, zone, transforms, decoder="ticdc-canal-json")


def test_ticdc_streams_are_mostly_handled_natively() -> None:
    total = handled = 0
    zone = {"source_timezone": "Asia/Shanghai"}
    for seed in range(20):
        values = ticdc_stream(_example(seed), "Asia/Shanghai", TICDC_ENCODERS[0])
        total += len(values)
        handled += assert_same(records_of(values), zone, zone, decoder="ticdc-canal-json")
    assert handled >= total * 0.6, (handled, total)


def test_ticdc_texts() -> None:
    values = ticdc_text_messages(null_old=False)
    assert assert_same(records_of(values), decoder="ticdc-canal-json") > len(values) // 3


def test_ticdc_corpus_files(corpus: Path) -> None:
    values = [v for messages in corpus_messages(corpus_files(corpus, "ticdc-canal-json")) for v in messages]
    assert values
    assert assert_same(records_of(values), decoder="ticdc-canal-json") > 0


# ---------------------------------------------------------------------------
# from debezium-json
# ---------------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    options=st.sampled_from(INPUTS),
    tz=st.sampled_from(ZONES),
    sink=st.sampled_from(SINKS),
    transforms=st.sampled_from([[], *(CHAINS[n] for n in KEEPING)]),
)
def test_debezium_random_streams_are_byte_identical(
    stream: list[ChangeEvent], options: dict[str, Any], tz: str, sink: dict[str, Any], transforms: list[dict[str, Any]]
) -> None:
    records = debezium_records(stream, tz, options)
    assert_debezium(records, {"source_timezone": tz}, {**sink, "source_timezone": tz}, transforms)


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
    updates = [(event("u", before={**ROW, "v": "it's"}, after=ROW), KEY)]
    assert assert_debezium(keyed(updates)) == len(updates)


#: Source blocks whose ``gtid`` the writer copies (any JSON value, as orjson's round trip writes it).
GTIDS: list[Any] = ["3E11FA47-71CA-11E1-9E33-C80AA9429562:23", "0-1-7", "", None, 5, 1.5, [1, {"a": None}], "😀"]


@pytest.mark.parametrize("gtid", GTIDS)
def test_debezium_gtids_and_sources(gtid: Any) -> None:
    values = [(event(op, before=ROW if op in "ud" else None, after=None if op == "d" else ROW), KEY) for op in "cudr"]
    values = [(event("c", after=ROW, source={**SOURCE, "gtid": gtid}), KEY), *values]
    values += [
        (event("c", after=ROW, source={**SOURCE, "db": ""}), KEY),
        (event("c", after=ROW, source={**SOURCE, "ts_ms": -1500}), KEY),
        (event("c", after=ROW, ts_ms=None), KEY),
    ]
    assert assert_debezium(keyed(values)) >= len(values) // 2


def test_debezium_keys_and_malformed_events() -> None:
    values = [(bad, KEY) for bad in DEBEZIUM_MALFORMED] + good()
    values += [(event("c", after=ROW), key) for key in (None, b"", b'{"v":"x"}', b"{}")]
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
        assert_debezium(keyed([(v, key) for v in values]))
