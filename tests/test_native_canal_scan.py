"""The Canal reader's single-pass scan (``native/src/canal.rs``: ``scan``, ``Cursor``) against
the Python path, byte for byte, through the writers it feeds.

The reader reads a message with the JSON scanner where it is certain serde's deserializers read
the same, and remembers the type maps (``mysqlType``, ``sqlType``) it met lately, so a message
repeating one is compared, not read again; serde reads what the scanner is not certain of (it
decides, and Python then). So the forms the scanner takes (whitespace, escapes, unknown fields,
nulls, type maps of many tables, maps that differ in one byte from a remembered one) and those
it must leave to serde (repeated fields, numbers serde reads otherwise, bad escapes, deep
nesting, trailing text) are converted here among regular messages, one at a time and as one batch.
"""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_smt.transforms import native
from tests.test_native import BASE, NATIVE_SUITE, TYPES, _message, assert_plan_agrees, records_of
from tests.test_native_cloudcanal import CANAL_BASE, cloudcanal_message

pytestmark = NATIVE_SUITE

#: The writers the reader feeds (their plans from canal-json).
WRITERS = {
    "debezium-json": native.CANAL_TO_DEBEZIUM,
    "canal-json": native.CANAL_TO_CANAL,
    "tdsql-binlog-json": native.CANAL_TO_TDSQL,
    "cloudcanal-json": native.CANAL_TO_CLOUDCANAL,
}

GOOD = _message("INSERT", [BASE])


def assert_same(values: list[bytes | None], out: str) -> int:
    """Both paths agree on ``values`` as one batch and one record per batch; returns how
    many the plan handled."""
    records = records_of(values)
    for record in records:
        assert_plan_agrees("canal-json", out, WRITERS[out], [record])
    return assert_plan_agrees("canal-json", out, WRITERS[out], records)


def spaced(value: bytes) -> bytes:
    """The message with whitespace around every token (orjson's indented form, and tabs)."""
    return orjson.dumps(orjson.loads(value), option=orjson.OPT_INDENT_2).replace(b"\n  ", b"\r\n \t ")


def tables(n: int) -> list[bytes]:
    """One INSERT of each of ``n`` tables whose type maps differ only in their last column's
    type (a remembered map is a prefix of none of the others up to its last bytes)."""
    values = []
    for i in range(n):
        types = {**TYPES, "v": f"varchar({10 + i})"}
        values.append(_message("INSERT", [BASE], types=types, table=f"t{i % 3}"))
    return values


#: Messages the scanner reads itself (each as Python reads it).
TAKEN: dict[str, bytes] = {
    "regular": GOOD,
    "whitespace everywhere": b" \n" + spaced(GOOD) + b"\t\r\n",
    "escaped keys and values": GOOD.replace(b'"table":"t"', b'"t\\u0061ble":"t\\u00e9\\n"').replace(
        b'"database":"shop"', b'"database":"sh\\"op\\\\"'
    ),
    "escaped column names": _message("INSERT", [{**BASE, "v": 'a"b\\c\u00e9'}]).replace(b'"id":', b'"\\u0069d":'),
    "unknown fields": _message("INSERT", [BASE], extra={"a": [1, -2, None, True, {"b": "c"}]}, gtid="x"),
    "null fields": _message("UPDATE", [BASE], old=None, pkNames=None, es=None),
    "update with old": _message("UPDATE", [BASE], old=[{"v": None}]),
    "several rows": _message("INSERT", [BASE, {**BASE, "id": "2"}]),
    "type maps with spaces": GOOD.replace(b'"mysqlType":{', b'"mysqlType": {').replace(b'"sqlType":{', b'"sqlType":{ '),
    "negative and large numbers": _message("INSERT", [BASE], es=-1, ts=2**63 - 1, id=-(2**63)),
}


def remembered_map_broken(replacement: bytes) -> bytes:
    """:data:`GOOD` with its ``mysqlType`` (remembered from the good message before it) of the
    same length, the last type's first bytes replaced (the rest of the map as remembered)."""
    types = orjson.dumps(TYPES)
    at = types.rindex(b':"') + 2
    broken = types[:at] + replacement + types[at + len(replacement) :]
    assert len(broken) == len(types)
    return GOOD.replace(types, broken, 1)


#: Messages the scanner must leave to serde (which reads or refuses them as Python decides).
LEFT: dict[str, bytes] = {
    "repeated type": GOOD[:-1] + b',"type":"INSERT"}',
    "repeated data": GOOD[:-1] + b',"data":[]}',
    "repeated mysqlType": GOOD[:-1] + b',"mysqlType":' + orjson.dumps(TYPES) + b"}",
    "repeated unknown field": _message("INSERT", [BASE], x=1)[:-1] + b',"x":2}',
    "es minus zero": _message("INSERT", [BASE], es=0).replace(b'"es":0', b'"es":-0'),
    "ts minus zero": _message("INSERT", [BASE], ts=0).replace(b'"ts":0', b'"ts":-0'),
    "es a float": _message("INSERT", [BASE], es=0).replace(b'"es":0', b'"es":1.0'),
    "es past 63 bits": _message("INSERT", [BASE], es=2**63),
    "es an exponent": _message("INSERT", [BASE], es=0).replace(b'"es":0', b'"es":1e3'),
    "id past 64 bits": _message("INSERT", [BASE]).replace(b'"id":1,', b'"id":18446744073709551616,'),
    "unknown field past 64 bits": _message("INSERT", [BASE], x=0).replace(b'"x":0', b'"x":-18446744073709551617'),
    "unknown field 1e400": _message("INSERT", [BASE], x=0).replace(b'"x":0', b'"x":1e400'),
    "unknown field deep": _message("INSERT", [BASE], x=0).replace(b'"x":0', b'"x":' + b"[" * 110 + b"]" * 110),
    "unknown field repeating a key": _message("INSERT", [BASE], x=0).replace(b'"x":0', b'"x":{"a":1,"a":2}'),
    "a row value a number": GOOD.replace(b'"id":"1"', b'"id":1'),
    "a lone surrogate": GOOD.replace(b'"table":"t"', b'"table":"\\ud800"'),
    "a control character": GOOD.replace(b'"table":"t"', b'"table":"a\x01"'),
    "a bad escape": GOOD.replace(b'"table":"t"', b'"table":"\\x"'),
    "trailing text": GOOD + b" x",
    "trailing comma": GOOD[:-1] + b",}",
    "a control character in a remembered map": remembered_map_broken(b"\x01"),
    "a bad escape in a remembered map": remembered_map_broken(b"\\q"),
    "a type map cut": GOOD.replace(b'"mysqlType":{', b'"mysqlType":{"', 1),
    "data an object": GOOD.replace(b'"data":[', b'"data":').replace(b'}],"database"', b'},"database"'),
    "empty object": b"{}",
    "form feed": b"\x0c" + GOOD,
}


@pytest.mark.parametrize("out", WRITERS)
def test_the_forms_the_scanner_takes(out: str) -> None:
    values = list(TAKEN.values())
    assert assert_same([*values, *values], out) == 2 * len(values)


@pytest.mark.parametrize("out", WRITERS)
def test_the_forms_left_to_serde_among_good_ones(out: str) -> None:
    values: list[bytes | None] = []
    for value in LEFT.values():
        values += [GOOD, value]
    assert assert_same(values, out) >= len(LEFT)  # the good ones at least


@pytest.mark.parametrize("out", WRITERS)
def test_type_maps_of_more_tables_than_are_remembered(out: str) -> None:
    """Twenty tables (more than the eight maps remembered), in turn and back again: each
    message written with its own types."""
    values = tables(20)
    assert assert_same([*values, *reversed(values), *values[::3]], out) == 2 * len(values) + len(values[::3])


def test_a_remembered_map_followed_by_another_value() -> None:
    """A map remembered from one message, met as the start of another field's value that goes
    on past it (an array holding it), is not taken as the map."""
    nested = _message("INSERT", [BASE])[:-1] + b',"x":[' + orjson.dumps(TYPES) + b",1]}"
    grown = GOOD.replace(
        b'"mysqlType":' + orjson.dumps(TYPES), b'"mysqlType":' + orjson.dumps(TYPES)[:-1] + b',"w":"int"}'
    )
    assert assert_same([GOOD, nested, grown, GOOD], "tdsql-binlog-json") >= 2


@settings(max_examples=150, deadline=None)
@given(
    at=st.integers(0, len(GOOD) - 1),
    insert=st.sampled_from([b" ", b"\t", b"\\", b'"', b"-0", b"0", b"{}", b"[]", b",", b"\\u0041", b"\xc3\xa9"]),
    cut=st.integers(0, 2),
)
def test_mutated_messages_after_a_good_one(at: int, insert: bytes, cut: int) -> None:
    """Bytes changed anywhere (the type maps remembered from the good message before): the
    paths agree, whichever reads it."""
    assert_same([GOOD, GOOD[:at] + insert + GOOD[at + cut :], GOOD], "tdsql-binlog-json")


def test_cloudcanal_names_through_the_scanner() -> None:
    """CloudCanal's dialect (its field names) is read by the same scan: regular messages,
    whitespace, and a repeated field, against Python."""
    good = cloudcanal_message("INSERT", [CANAL_BASE])
    values = [good, spaced(good), good[:-1] + b',"db":"shop"}', good, cloudcanal_message("DELETE", [CANAL_BASE])]
    handled = assert_plan_agrees("cloudcanal-json", "canal-json", native.CLOUDCANAL_TO_CANAL, records_of(values))
    assert handled == 4
