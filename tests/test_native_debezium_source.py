"""The native Debezium reader's ``source`` block read by comparison with the last one
scanned in full (``SourceTemplate`` in ``native/src/debezium_in.rs``): a block equal to it
but for the varying fields' values (``ts_ms``, ``txId``, ``file``, ``pos``, ``gtid``) is
compared byte for byte around them, those values read again, the others placed.

Both paths byte for byte (values, keys, headers, topics, dead letters) for streams whose
blocks change in each way the template must follow or refuse: one varying field at a time,
a field it keeps (``db``, ``table``, ``connector``, ``server_id``) or only checks
(``version``, ``snapshot``, ``row``, ``thread``, ``query``, unknown fields) changed by one
byte, escapes and unicode in kept strings, whitespace, fields reordered, added, removed or
repeated, values the reader refuses in a varying field; with and without the schema part,
into the writers of the with-schema rows (Canal, Debezium, Maxwell, GoldenGate, CKafka, TDSQL),
in one batch and one record per batch; and counts of what the plan converts itself.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt.transforms import native
from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import Record
from tests.test_native import NATIVE_SUITE, assert_plan_agrees, dead_letters, outputs
from tests.test_native_debezium import KEY, ROW, SOURCE, event, keyed, with_schema

pytestmark = NATIVE_SUITE

#: The writers of the rows this reader's template serves: encoder, its options, the plan.
WRITERS: list[tuple[str, dict[str, Any], str]] = [
    ("canal-json", {}, native.DEBEZIUM_TO_CANAL),
    ("debezium-json", {}, native.DEBEZIUM_TO_DEBEZIUM),
    ("maxwell-json", {}, native.DEBEZIUM_TO_MAXWELL),
    ("ogg-json", {}, native.DEBEZIUM_TO_OGG),
    ("ckafka-json", {}, native.DEBEZIUM_TO_CKAFKA),
    ("tdsql-binlog-json", {}, native.DEBEZIUM_TO_TDSQL),
]
WRITER_IDS = [w[0] for w in WRITERS]


def chain(source: dict[str, Any], writer: tuple[str, dict[str, Any], str]) -> Chain:
    return Chain(get_codec("debezium-json", source), get_codec(writer[0], writer[1]), [], "all")


def assert_same(records: list[Record], writer: tuple[str, dict[str, Any], str], source: dict[str, Any]) -> int:
    """Both paths agree in one batch and one record per batch; returns how many records the
    plan converts itself in one batch (each record's count from ``convert_values``)."""
    encoder, sink, plan = writer
    assert_plan_agrees("debezium-json", encoder, plan, records, source, sink)
    fast, slow = chain(source, writer), chain(source, writer)
    slow.native = None
    results = [fast.process_batch([r]) for r in records]
    expected = slow.process_batch(records)
    assert [o for r in results for o in outputs(r)] == outputs(expected)
    assert [d for r in results for d in dead_letters(r)] == dead_letters(expected)
    native_plan = chain(source, writer).native
    assert native_plan is not None and native_plan.name == plan
    counts = native_plan.convert_values([r.value for r in records], [r.key for r in records])[0]
    return sum(n >= 0 for n in counts)


def block(**fields: Any) -> dict[str, Any]:
    """:data:`SOURCE` with ``fields`` replaced (a ``drop_`` prefix removes one)."""
    out = dict(SOURCE)
    for k, v in fields.items():
        if k.startswith("drop_"):
            out.pop(k[5:])
        else:
            out[k] = v
    return out


def insert(source: dict[str, Any] | bytes, n: int = 1) -> bytes:
    """An insert of row ``n`` under ``source`` (a dict, or a block's text as written)."""
    row = {**ROW, "id": n}
    if isinstance(source, bytes):
        return event("c", after=row, source={"@": 1}).replace(b'{"@":1}', source)
    return event("c", after=row, source=source)


def key(n: int) -> bytes:
    return orjson.dumps({"id": n})


def stream(blocks: list[dict[str, Any] | bytes]) -> list[tuple[bytes | None, bytes | None]]:
    """Each block's insert, after a regular one (the template), and a regular one again."""
    values = [insert(SOURCE, 0)] + [insert(b, n + 1) for n, b in enumerate(blocks)] + [insert(SOURCE, 99)]
    return [(v, key(n)) for n, v in enumerate(values)]


PLAIN = orjson.dumps(SOURCE)

#: (id, blocks after a regular one, how many of the stream's records the plan converts itself).
CASES: list[tuple[str, list[dict[str, Any] | bytes], int]] = [
    ("same block", [SOURCE, SOURCE], 4),
    ("ts_ms each time", [block(ts_ms=1_700_000_000_000 + i) for i in range(1, 4)], 5),
    ("ts_ms longer, shorter", [block(ts_ms=17), block(ts_ms=5), block(ts_ms=10**15)], 5),
    ("ts_ms null", [block(ts_ms=None)], 2),  # Python's: no event time
    ("ts_ms a string", [block(ts_ms="1")], 2),
    ("ts_ms a double", [block(ts_ms=1.5)], 2),
    ("ts_ms past 64 bits", [PLAIN.replace(b'"ts_ms":1700000000000', b'"ts_ms":18446744073709551616')], 2),
    ("ts_ms leading zero", [PLAIN.replace(b'"ts_ms":1700000000000', b'"ts_ms":01700000000000')], 2),
    ("pos each time", [block(pos=4711 + i * 100) for i in range(1, 4)], 5),
    ("pos as a string", [block(pos="4711")], 3),  # Maxwell and CKafka leave it to Python
    ("file rotated", [block(file="binlog.000004"), block(file="binlog.000004", pos=4)], 4),
    ("file escaped", [block(file='bin"log\\.1'), block(file="bin\u00e9log.\U0001f600")], 4),
    ("gtid from null", [block(gtid="3E11FA47-71CA-11E1-9E33-C80AA9429562:23"), block(gtid=None)], 4),
    ("gtid escaped", [block(gtid="a\nb"), block(gtid="a\\u0062")], 4),
    ("txId added", [block(txId=555), block(txId=556)], 4),
    ("txId a string", [block(txId="555")], 3),  # the Debezium writer's: Python re-types it
    ("db one byte", [block(db="shoq"), block(db="shop")], 4),
    ("db escaped", [PLAIN.replace(b'"db":"shop"', b'"db":"sh\\u006fp"'), block(db='sh"op')], 4),
    ("db unicode", [block(db="sh\u00f6p"), block(db="\u5546\u5e97")], 4),
    ("db null", [block(db=None)], 2),
    ("table one byte", [block(table="u"), block(table="t")], 4),
    ("connector", [block(connector="postgresql"), block(drop_connector=True)], 4),
    ("schema added", [block(schema="public"), block(schema="publid")], 4),
    (
        "server_id",
        [
            block(server_id=2),
            PLAIN.replace(b'"server_id":1', b'"server_id":100000000000000000000'),
            block(server_id="x"),
        ],
        5,
    ),
    ("version, name, snapshot", [block(version="2.5.1"), block(name="srw"), block(snapshot="true")], 5),
    ("row, thread, query", [block(row=1), block(thread=None), block(query="INSERT \u00e9")], 5),
    ("an unknown field", [block(extra=[1, {"a": None}]), block(extra=[1, {"a": 1}]), block(scn="1")], 5),
    ("a kept name changed", [PLAIN.replace(b'"db":', b'"DB":'), PLAIN.replace(b'"table":', b'"tablf":')], 2),
    ("a checked name changed", [PLAIN.replace(b'"row":', b'"db":'), PLAIN.replace(b'"name":', b'"pos":')], 2),
    ("fields reordered", [dict(reversed(list(SOURCE.items())))], 3),
    ("a field removed", [block(drop_row=True), block(drop_pos=True)], 4),
    (
        "whitespace",
        [PLAIN.replace(b",", b" ,\n "), PLAIN.replace(b":", b": ").replace(b'"ts_ms": 17', b'"ts_ms":  18')],
        4,
    ),
    ("a field repeated", [PLAIN[:-1] + b',"db":"shop"}', PLAIN[:-1] + b',"ts_ms":1}', PLAIN[:-1] + b',"row":0}'], 2),
    ("a name repeated in a value", [PLAIN.replace(b'"query":null', b'"query":{"a":1,"a":2}')], 3),
    ("a cut block", [PLAIN[:-1], PLAIN[: len(PLAIN) // 2]], 2),
    ("a longer tail", [PLAIN[:-1] + b',"x":1}', PLAIN[:-1] + b" }"], 4),
    ("not an object", [b"null", b"[]", b'"x"'], 2),
]


@pytest.mark.parametrize("writer", WRITERS, ids=WRITER_IDS)
@pytest.mark.parametrize(("case", "blocks", "count"), CASES, ids=[c[0] for c in CASES])
def test_source_blocks_changing_between_messages(
    case: str, blocks: list[dict[str, Any] | bytes], count: int, writer: tuple[str, dict[str, Any], str]
) -> None:
    """Each case's blocks after a regular one (the template), then a regular one again: both
    paths agree, and the blocks the reader reads are converted natively."""
    records = keyed(stream(blocks))
    handled = assert_same(records, writer, {})
    if writer[0] in ("canal-json", "tdsql-binlog-json"):  # the writers that write every block read
        assert handled == count, case


#: Cases where the Maxwell and CKafka writers also take the source position natively.
POSITIONED = {"same block", "ts_ms each time", "pos each time", "file rotated", "gtid from null", "txId added"}


@pytest.mark.parametrize("writer", WRITERS[2:5:2], ids=WRITER_IDS[2:5:2])
@pytest.mark.parametrize(("case", "blocks", "count"), [c for c in CASES if c[0] in POSITIONED])
def test_positions_read_again_from_each_block(
    case: str, blocks: list[dict[str, Any] | bytes], count: int, writer: tuple[str, dict[str, Any], str]
) -> None:
    """The writers of the source position (Maxwell's ``position``/``xid``/``gtid``, CKafka's
    binlog fields) write each block's own: all natively, as Python does."""
    assert assert_same(keyed(stream(blocks)), writer, {}) == count


@pytest.mark.parametrize("writer", WRITERS, ids=WRITER_IDS)
def test_under_the_schema_part(writer: tuple[str, dict[str, Any], str]) -> None:
    """The same with the schema part in values and keys (the with-schema rows' form)."""
    blocks = [case[1] for case in CASES if case[0] in ("ts_ms each time", "db one byte", "file escaped", "whitespace")]
    pairs = [p for b in blocks for p in stream(b) if isinstance(p[0], bytes)]
    pairs = with_schema([p for p in pairs if b'"ts_ms":  18' not in (p[0] or b"")])
    records = keyed(pairs)
    handled = assert_same(records, writer, {"schemas_enable": True})
    if writer[0] in ("canal-json", "tdsql-binlog-json"):
        assert handled == len(records)


@st.composite
def changed_blocks(draw: st.DrawFn) -> dict[str, Any]:
    """:data:`SOURCE` with up to three fields (kept, varying or checked) given random values."""
    names = ["ts_ms", "pos", "file", "gtid", "db", "table", "row", "thread", "snapshot", "server_id"]
    values = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.text(max_size=6))
    return block(**draw(st.dictionaries(st.sampled_from(names), values, max_size=3)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
@pytest.mark.parametrize("writer", [WRITERS[0], WRITERS[5]], ids=[WRITER_IDS[0], WRITER_IDS[5]])
def test_random_blocks(data: st.DataObject, writer: tuple[str, dict[str, Any], str]) -> None:
    """Streams of blocks each changing a few fields of the regular one to random values."""
    assert_same(keyed(stream(data.draw(st.lists(changed_blocks(), max_size=6)))), writer, {})


def test_the_regular_stream_is_read_natively() -> None:
    """A stream of regular events with only the event time changing is all converted natively
    (the template serves all but the first)."""
    pairs = [(insert(block(ts_ms=1_700_000_000_000 + n), n), KEY) for n in range(50)]
    assert assert_same(keyed(pairs), WRITERS[5], {}) == 50


def test_schema_parts_changing_by_one_byte() -> None:
    """Messages whose schema part differs from the last one's by one byte (a struct's name, a
    field's optionality) among regular ones, with source blocks changing too: each schema part
    is recognised by its own bytes (the remembered parts compared whole), both paths agree."""
    pairs = with_schema([(insert(block(ts_ms=1_700_000_000_000 + n, pos=n), n), key(n)) for n in range(8)])
    mutated: list[tuple[bytes | None, bytes | None]] = []
    for n, (value, k) in enumerate(pairs):
        assert value is not None
        if n % 3 == 1:
            value = value.replace(b'"name":"cdc_smt.shop.t.Value"', b'"name":"cdc_smt.shop.t.Valud"', 1)
        elif n % 3 == 2:
            value = value.replace(b'"optional":true', b'"optional":fals', 1)  # not JSON: Python's
        mutated.append((value, k))
    assert sum(v != p[0] for (v, _), p in zip(mutated, pairs, strict=True)) >= 4
    for writer in (WRITERS[0], WRITERS[5]):
        assert assert_same(keyed(mutated), writer, {"schemas_enable": True}) == sum(
            b'"optional":fals,' not in (v or b"") for v, _ in mutated
        )


#: A fuzz finding (``native:debezium-json>debezium-json``): under a schema part, a struct value
#: whose number orjson re-writes (``0.90`` as ``0.9``) was copied as written by the Debezium writer.
FUZZ_STRUCT = (
    b'{"schema":{"":"","":[{"":[{"":"","":false,"":"","":true,"":""}],"":true,"":""},{"":"","":['
    b'{"":""},{"":"","":false,"":"","":""},{"":""}],"":"","":[{"":"","":"","":false,"":"","":fal'
    b'se,"":true,"":"","":{"":""},"":"","":false,"":""},{"":"","":false,"":"","":false,"":""},{"'
    b'":""},{"":"","":true,"":""}],"":false,"":"","":false,"":"","":true,"":"","":[{"":""},{"":"'
    b'","":false,"":""},{"":""}],"":""}],"":false,"":""},"payload":{"before":null,"after":{"d":1'
    b',"":{"":["",0.90]},"n":"","e":4},"source":{"v":"","c":"","e":"","ts_ms":1,"":"","db":"","s'
    b'":"","table":"","d":1,"l":0,"n":null},"op":"r","ts_ms":1,"":null}}'
)


def test_struct_values_orjson_rewrites() -> None:
    """The fuzz finding's event: both paths agree (its struct is Python's)."""
    records = keyed([(FUZZ_STRUCT, b'{"":1}')])
    for writer in WRITERS[:2]:
        assert_same(records, writer, {})
