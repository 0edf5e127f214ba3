"""The native GoldenGate reader against the Python path: byte for byte.

ogg-json -> canal-json and -> debezium-json: the reader types columns from the JSON
values as the Python decoder does without a catalog, splits ``table`` into database
and table, reads ``op_ts`` and ``current_ts`` as UTC wall clocks and takes the key
from ``primary_keys``; the writers as for Maxwell (``tests/test_native_maxwell_in.py``,
whose comparison this suite shares). Inputs: hypothesis streams written by the Python
GoldenGate encoder, hand-made values, timestamps and fields, the corpus, malformed and
mutated messages, the transforms the plans take.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cdc_smt.transforms.model import ChangeEvent
from tests.test_native import NATIVE_SUITE
from tests.test_native_maxwell_in import (
    ROW,
    WRITER_IDS,
    WRITERS,
    check_corpus,
    check_mutated,
    check_regular,
    check_stream,
    check_transforms,
    check_unusual,
    dumps,
    mutations,
    streams,
    transform_cases,
)

pytestmark = NATIVE_SUITE


@streams
def test_random_streams_are_byte_identical(
    stream: list[ChangeEvent], tz: str, writer: tuple[str, dict[str, Any]], transforms: list[dict[str, Any]]
) -> None:
    check_stream("ogg-json", stream, tz, writer, transforms)


def ogg(op: str = "I", after: Any = ROW, before: Any = None, **fields: Any) -> bytes:
    message: dict[str, Any] = {"table": "shop.t", "op_type": op, "op_ts": "2020-05-13 15:40:06.000000"}
    message["current_ts"] = "2020-05-13T13:39:35.766000"
    message["pos"] = "00000000000000000000143"
    message["primary_keys"] = ["id"]
    if before is not None:
        message["before"] = before
    if after is not None:
        message["after"] = after
    message.update(fields)
    return dumps(message)


CHANGED = {**ROW, "v": "y", "i": 6}

#: Regular messages: the plan converts every one of them.
REGULAR = [
    ogg(),
    ogg("U", before=CHANGED),
    ogg("U", before=ROW),
    ogg("D", after=None, before=ROW),
    ogg(after={**ROW, "v": None, "f": None}),
    ogg("U", after={**ROW, "v": None}, before=CHANGED),  # the kind from the before-image
    ogg(after={**ROW, "v": 'é\n"\\ \u2028 \U0001f600', "i": -(1 << 63), "f": -0.0, "b": False}),
    ogg(op_ts="2020-05-13T15:40:06.123", current_ts="2020-05-13 13:39:35"),
    ogg(op_ts="2020-05-13 15:40:06.123456789", current_ts="2020-05-13 13:39:35.5"),
    ogg(op_ts="1969-12-31 23:59:59.999999", current_ts="0001-01-01 00:00:00.000001"),
    ogg(op_ts="9999-12-31 23:59:59.999999", current_ts="2024-02-29 12:00:00.000"),
    ogg(op_ts=None, current_ts=None),
    ogg(current_ts=None),
    ogg(pos=144, tokens={"csn": "1"}, extra=[1, {"a": None}]),
    ogg(pos=None, primary_keys=[]),
    ogg(primary_keys=None),
    ogg(primary_keys=["id", "v"]),
    ogg(table="SCHEMA.TABLE"),
]

#: Unusual messages: Python's (or the plan's where it is certain), with Python's answer.
UNUSUAL = [
    ogg("T", after=None),
    ogg("X"),
    ogg(op_type=None),
    ogg(op_type=1),
    ogg(table="t"),
    ogg(table="a.b.c"),
    ogg(table="a.b.c.d"),
    ogg(table=None),
    ogg(table=5),
    ogg("U", before={"id": 1, "v": "y"}),  # a partial before-image
    ogg("U", before={"v": "x", "id": 1, "i": 7, "f": 1.5, "b": True}),  # reordered
    ogg("U", before=None),
    ogg("U", after=None, before=ROW),
    ogg("U", before={**ROW, "i": "seven"}),  # kinds differ
    ogg("I", before=ROW),
    ogg("I", before={}),
    ogg("I", after={}),
    ogg("D", before=ROW),
    ogg("D", after=None),
    ogg(after={**ROW, "j": {"a": 1}}),
    ogg(after={**ROW, "s": [1]}),
    ogg(after={**ROW, "i": 1 << 64}),
    ogg(after="x"),
    ogg(before=[1], after=ROW),
    ogg(op_ts="2020-5-13 15:40:06"),
    ogg(op_ts="2020-02-30 00:00:00"),
    ogg(op_ts="0000-01-01 00:00:00"),
    ogg(op_ts="2020-05-13 24:00:00"),
    ogg(op_ts="2020-05-13 15:40:60"),
    ogg(op_ts="2020-05-13 15:40:06."),
    ogg(op_ts="2020-05-13 15:40:06.+1"),
    ogg(op_ts="2020-05-13 15:40:06.1_0"),
    ogg(op_ts=" 2020-05-13 15:40:06"),
    ogg(op_ts="2020-05-13X15:40:06"),
    ogg(op_ts="２０２０-05-13 15:40:06"),
    ogg(op_ts="garbage"),
    ogg(op_ts=5),
    ogg(current_ts="2020-05-13T13:39"),
    ogg(pos=True),
    ogg(pos=1.5),
    ogg(pos=[1]),
    ogg(primary_keys=[1]),
    ogg(primary_keys="id"),
    ogg(primary_keys=["nope"]),
    ogg(primary_keys=["v", "id", "v"]),
    b'{"table":"shop.t","op_type":"I","after":{"id":1,"id":2}}',
    b'{"table":"shop.t","op_type":"I","op_type":"D","after":{"id":1}}',
    b'{"table":"shop.t","op_type":"I","after":{"id":1,"z":1e-400}}',
    b'{"table":"shop.t","op_type":"I","after":{"id":1}',
    b"[]",
    b"",
]


@pytest.mark.parametrize("writer", WRITERS, ids=WRITER_IDS)
def test_regular_messages_are_all_handled_natively(writer: tuple[str, dict[str, Any]]) -> None:
    check_regular("ogg-json", REGULAR, writer)


@pytest.mark.parametrize("writer", WRITERS, ids=WRITER_IDS)
def test_unusual_messages_among_regular_ones(writer: tuple[str, dict[str, Any]]) -> None:
    check_unusual("ogg-json", REGULAR[0], UNUSUAL, writer)


@transform_cases
def test_transforms(writer: tuple[str, dict[str, Any]], transforms: list[dict[str, Any]], tz: str) -> None:
    other = [v.replace(b'"table":"shop.t"', b'"table":"other.t"') for v in REGULAR[:6]]
    check_transforms("ogg-json", REGULAR, other, writer, transforms, tz)


@mutations(REGULAR[1])
def test_mutated_messages(at: int, insert: bytes, cut: int, writer: tuple[str, dict[str, Any]]) -> None:
    check_mutated("ogg-json", REGULAR[1], at, insert, cut, writer)


@pytest.mark.parametrize("writer", WRITERS, ids=WRITER_IDS)
def test_corpus(corpus: Path, writer: tuple[str, dict[str, Any]]) -> None:
    check_corpus(corpus, "ogg-json", writer)
