"""The native canal-json / ticdc-canal-json / debezium-json -> ckafka-json plans against the
Python path, byte for byte: what is CKafka's own.

The CKafka writer writes one format-1 message per row on the CloudCanal writer's tables, so
the streams, edge values, corpus, malformed and mutated messages and transforms both writers
share are run for both in ``test_native_cloudcanal_out.py``. Here: CKafka's envelope
(``TYPE``, ``NEW_VALUES``/``OLD_VALUES``), ``TIME`` (the event time's second in the encoder's
``source_timezone``, from ``es`` else ``ts``) across zones and years, and from Debezium each
event's binlog position and source names.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from cdc_smt.transforms import native
from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import Record
from tests.test_native import BASE, GOOD, NATIVE_SUITE, _message, records_of
from tests.test_native_cloudcanal_out import assert_both_agree, regular_messages
from tests.test_native_debezium import KEY, ROW, SOURCE, event, keyed

pytestmark = NATIVE_SUITE

OUT = "ckafka-json"
#: Event times (``es``, ms) around the edges of what ``TIME`` renders: negative, before
#: 1901 and after 2037 (the zone database's years), a second's last millisecond, year 9999.
TIMES = [0, -1, -1500, 999, 1_700_000_000_999, -2_300_000_000_000, 2_200_000_000_000, 253_402_300_799_000]


def assert_same(records: list[Record], source: dict[str, Any] | None = None, sink: dict[str, Any] | None = None) -> int:
    """Both paths give the same records and dead letters; returns how many the plan handled."""
    return assert_both_agree("canal-json", native.CANAL_TO_CKAFKA, records, source, sink, None, OUT)


def assert_debezium(records: list[Record]) -> int:
    return assert_both_agree("debezium-json", native.DEBEZIUM_TO_CKAFKA, records, None, None, None, OUT)


def test_regular_messages_are_all_handled() -> None:
    values = regular_messages([{"v": "a"}, {"i": None}, {"v": None, "i": "9"}])
    values.append(_message("INSERT", [BASE], ts=None))  # TIME from ``es`` (without it, ``ts``)
    assert assert_same(records_of(values)) == len(values)
    result = Chain(get_codec("canal-json"), get_codec(OUT), [], "all").process_batch(records_of(values[1:2]))
    assert len(result.outputs) == 3
    first = orjson.loads(result.outputs[0].value)
    assert first["TYPE"] == "U" and first["NEW_VALUES"]["id"] == BASE["id"] and first["OLD_VALUES"]["v"] == "a"


def test_messages_without_a_time_are_pythons() -> None:
    """``TIME`` of a message without ``es`` and ``ts`` is the record's timestamp: Python's."""
    values = [_message("INSERT", [BASE], es=None, ts=None), GOOD]
    assert assert_same(records_of(values)) == 1


@pytest.mark.parametrize("sink_tz", ["UTC", "Asia/Shanghai", "America/New_York", "Australia/Lord_Howe"])
def test_event_times_in_every_zone(sink_tz: str) -> None:
    types, row = {"id": "int", "v": "varchar(5)"}, {"id": "1", "v": "x"}  # no TIMESTAMP: any two zones
    values = [_message("INSERT", [row], es=ms, types=types) for ms in TIMES]
    values += [_message("DELETE", [row], es=None, ts=ms, types=types) for ms in TIMES]
    handled = assert_same(records_of(values), {}, {"source_timezone": sink_tz})
    assert handled >= len(values) // 2


#: Source blocks whose binlog position CKafka writes (``BINLOG_NAME``, ``BINLOG_POS``,
#: ``EVENT_SERVER_ID``, ``GLOBAL_ID``), in the forms the plan writes and those it leaves to Python.
POSITIONS: list[dict[str, Any]] = [
    {"file": "mysql-bin.000007", "pos": 154, "server_id": 223344, "gtid": "3E11FA47-71CA-11E1-9E33-C80AA9429562:23"},
    {"file": "", "pos": 0, "server_id": 0, "gtid": None},
    {"file": None, "pos": None, "server_id": None},
    {"file": 'ü"\\', "pos": -1, "server_id": "srv", "gtid": 5},
    {"server_id": 1.5, "gtid": [1, {"a": None}]},
    {"pos": 1.0},
    {"file": 7},
    {"file": ["x"]},
    {"gtid": "😀"},
]
#: The same written as no dict can be: integers past 64 bits, escapes, repeated fields.
RAW_POSITIONS = [
    (b'"pos":4711', b'"pos":1180591620717411303424'),
    (b'"server_id":1', b'"server_id":1180591620717411303424'),
    (b'"gtid":null', b'"gtid":"\\ud83d\\ude00\\n"'),
    (b'"file":"binlog.000003"', b'"file":"bin\\u006cog.1"'),
    (b'"pos":4711', b'"pos":4711,"pos":12'),
    (b'"server_id":1', b'"server_id":1e3'),
]


def test_debezium_binlog_positions() -> None:
    values = [(event(op, before=ROW if op in "ud" else None, after=None if op == "d" else ROW,
                     source={**SOURCE, **position}), KEY) for position in POSITIONS for op in "cud"]  # fmt: skip
    plain = event("c", after=ROW)
    for old, new in RAW_POSITIONS:
        assert old in plain
        values.append((plain.replace(old, new), KEY))
    handled = assert_debezium(keyed(values))
    assert handled >= len(values) // 2, handled


def test_debezium_source_names_and_times() -> None:
    """An empty ``db`` or ``table`` is written as it is (Canal's are read as null): Python's."""
    values = [
        (event("c", after=ROW, source={**SOURCE, "db": ""}), KEY),
        (event("c", after=ROW, source={**SOURCE, "table": ""}), KEY),
        (event("c", after=ROW, source={**SOURCE, "schema": "public"}), KEY),
        (event("c", after=ROW, source={**SOURCE, "ts_ms": -1}), KEY),
        (event("c", after=ROW, source={**SOURCE, "ts_ms": 2_200_000_000_000}), KEY),
        (event("c", after=ROW), KEY),
    ]
    assert assert_debezium(keyed(values)) >= 3
