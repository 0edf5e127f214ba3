"""Impossible dates (issue #12 §4): never a silent null.

A Canal value that is no date at all (``2024-13-45 99:00:00``) either comes out
of an encoder as its original text (formats that carry text for the column) or
becomes a dead letter naming the column and the value (formats that write
numbers: Debezium's ``io.debezium.time.*``, DataWorks' epoch values, DTS's
TIMESTAMP). MySQL zero dates keep their documented rule (docs/formats.md).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from cdc_smt.transforms.chain import Chain, ChainResult
from cdc_smt.transforms.formats import get_codec, registry
from cdc_smt.transforms.model import Record
from cdc_smt.transforms.types import InvalidTemporal, is_zero_date

#: One impossible text per temporal type.
IMPOSSIBLE = {
    "datetime": "2024-13-45 99:00:00",
    "date": "2024-13-45",
    "timestamp": "2024-13-45 99:00:00",
    "time": "99:99:99",
}
KEEP, DEAD = "text kept", "dead letter"
_TEXT_FORMATS = ["ckafka-json", "cloudcanal-json", "maxwell-json", "ogg-json", "tdsql-binlog-json", "ticdc-canal-json"]
#: The rule per target format and type (docs/formats.md, "Impossible dates").
EXPECTED: dict[str, dict[str, str]] = {
    "canal-json": dict.fromkeys(IMPOSSIBLE, KEEP),  # the source's own text, passed through
    **{f: {"datetime": KEEP, "date": KEEP, "timestamp": KEEP, "time": DEAD} for f in _TEXT_FORMATS},
    "debezium-json": dict.fromkeys(IMPOSSIBLE, DEAD),
    "dataworks-json": dict.fromkeys(IMPOSSIBLE, DEAD),
    "dts-avro": {"datetime": KEEP, "date": KEEP, "timestamp": DEAD, "time": DEAD},
}


def canal(mysql_type: str, text: str | None) -> bytes:
    return orjson.dumps(
        {
            "data": [{"id": "1", "updated_at": text}],
            "database": "shop",
            "es": 1_700_000_000_000,
            "id": 1,
            "isDdl": False,
            "mysqlType": {"id": "int", "updated_at": mysql_type},
            "old": None,
            "pkNames": ["id"],
            "sql": "",
            "sqlType": {"id": 4, "updated_at": 93},
            "table": "t",
            "ts": 1_700_000_000_035,
            "type": "INSERT",
        }
    )


def convert(target: str, mysql_type: str, text: str) -> ChainResult:
    chain = Chain(get_codec("canal-json", {}), get_codec(target, {}), [], "all")
    record = Record(value=canal(mysql_type, text), key=b"k", topic="in", partition=0, offset=0, timestamp=0, headers=[])
    return chain.process_batch([record])


def written_value(target: str, value: bytes) -> Any:
    """The column's value as the target format's decoder reads it back (typed)."""
    if target == "tdsql-binlog-json":  # positional values: no names without a catalog
        return orjson.loads(value)["field"][1].strip("'")
    if target == "canal-json":  # passed through: the raw text (typing it would read a TIME)
        return orjson.loads(value)["data"][0]["updated_at"]
    (event,) = get_codec(target, {}).decode(Record(value=value, key=b"k", topic="out"))
    event.typed()
    assert event.after is not None
    return event.after["updated_at"]


def test_every_format_has_a_rule() -> None:
    assert sorted(EXPECTED) == sorted(registry())


@pytest.mark.parametrize("mysql_type", sorted(IMPOSSIBLE))
@pytest.mark.parametrize("target", sorted(EXPECTED))
def test_impossible_values_keep_their_text_or_dead_letter(target: str, mysql_type: str) -> None:
    text = IMPOSSIBLE[mysql_type]
    result = convert(target, mysql_type, text)
    if EXPECTED[target][mysql_type] == KEEP:
        assert not result.dead_letters
        (out,) = result.outputs
        assert written_value(target, out.value) == text
    else:
        assert not result.outputs
        (dead,) = result.dead_letters
        assert dead.stage == "encode"
        assert "updated_at" in dead.message
        assert text in dead.message
        assert f"not a valid {mysql_type.upper()}" in dead.message


@pytest.mark.parametrize("target", ["debezium-json", "dataworks-json"])
def test_the_dead_letter_names_column_and_value(target: str) -> None:
    (dead,) = convert(target, "datetime", "2024-13-45 99:00:00").dead_letters
    assert dead.message == f"{target}: column updated_at: 2024-13-45 99:00:00 is not a valid DATETIME"


@pytest.mark.parametrize("text", ["0000-00-00 00:00:00", "2023-00-10 00:00:00", "2023-05-00 12:30:00"])
@pytest.mark.parametrize("target", ["debezium-json", "dataworks-json"])
def test_zero_dates_keep_their_documented_rule(target: str, text: str) -> None:
    """Nullable zero dates are null in Debezium and DataWorks (docs/formats.md), not dead letters."""
    result = convert(target, "datetime", text)
    assert not result.dead_letters
    (out,) = result.outputs
    row = orjson.loads(out.value)
    after = row["after"] if target == "debezium-json" else row["payload"]["after"]["dataColumn"]
    assert after["updated_at"] is None


@pytest.mark.parametrize(
    ("text", "zero"),
    [
        ("0000-00-00", True),
        ("0000-00-00 00:00:00", True),
        ("0000-00-00 00:00:00.000000", True),
        ("2023-00-10", True),
        ("2023-04-00 23:59:59", True),
        ("2024-13-45 99:00:00", False),
        ("2024-13-00", False),
        ("0000-00-32", False),
        ("2024-00-01 24:00:00", False),
        ("2024-02-30", False),  # no zero part: impossible, not a zero date
        ("garbage", False),
        ("", False),
    ],
)
def test_zero_dates_are_told_from_impossible_ones(text: str, zero: bool) -> None:
    assert is_zero_date(InvalidTemporal(text)) is zero
