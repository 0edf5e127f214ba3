"""Message-file framing: JSON lines and Avro containers of Kafka records."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import fastavro
import pytest

from cdc_smt.connector.framing import (
    FramingError,
    RecordWriter,
    read_json_lines,
    read_records,
    unit,
    write_records,
)
from cdc_smt.transforms.model import Record


def _avro_records(n: int) -> list[Record]:
    return [
        Record(
            value=b"v%d\n\x00\xff" % i,
            key=b"k%d" % i,
            topic="orders",
            partition=i % 3,
            offset=1000 + i,
            timestamp=1_700_000_000_000 + i,
            headers=[("trace", b"t%d" % i), ("empty", None)],
        )
        for i in range(n)
    ]


# -- text ---------------------------------------------------------------------------


def test_text_positions_count_blank_lines_and_strip_crlf(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a":1}\r\n\n   \n{"b":2}\r\n{"c":3}')
    got = list(read_records(path, binary=False))
    assert [(pos, r.value) for pos, r in got] == [(1, b'{"a":1}'), (4, b'{"b":2}'), (5, b'{"c":3}')]


def test_text_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    values = [b'{"id":1}', b'{"s":"caf\xc3\xa9"}', b"[]"]
    assert write_records(path, [Record(value=v) for v in values], binary=False) == 3
    assert path.read_bytes() == b"".join(v + b"\n" for v in values)
    assert [r.value for _, r in read_records(path, binary=False)] == values


def test_text_writer_skips_and_counts_tombstones() -> None:
    buf = io.BytesIO()
    with RecordWriter(buf, binary=False) as writer:
        assert writer.write(Record(value=b"{}")) is True
        assert writer.write(Record(value=None)) is False
    assert (writer.written, writer.tombstones_skipped) == (1, 1)
    assert buf.getvalue() == b"{}\n"


def test_text_writer_rejects_a_line_break_in_a_message() -> None:
    with pytest.raises(FramingError, match="line break"):
        RecordWriter(io.BytesIO(), binary=False).write(Record(value=b'{"a":\n1}'))


def test_stdin_and_stdout_dash(monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one\ntwo\n")))
    assert [(p, r.value) for p, r in read_records("-", binary=False)] == [(1, b"one"), (2, b"two")]
    write_records("-", [Record(value=b"x")], binary=False)
    assert capsysbinary.readouterr().out == b"x\n"


def test_missing_input_is_a_framing_error(tmp_path: Path) -> None:
    with pytest.raises(FramingError, match="cannot open .*nope.jsonl"):
        list(read_records(tmp_path / "nope.jsonl", binary=False))


def test_json_lines_reader(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a":1}\r\n\n[2]\r\n')
    assert list(read_json_lines(path)) == [(1, {"a": 1}), (3, [2])]
    path.write_bytes(b'{"a":1}\n\n{"a":\n')
    with pytest.raises(FramingError, match=r"x\.jsonl: line 3: malformed JSON"):
        list(read_json_lines(path))


def test_unit_names_positions() -> None:
    assert (unit(False), unit(True)) == ("line", "record")


# -- Avro container -------------------------------------------------------------------


def test_avro_round_trip_keeps_every_record_field(tmp_path: Path) -> None:
    path = tmp_path / "dump.avro"
    records = _avro_records(5) + [Record(value=None)]
    assert write_records(path, records, binary=True) == 6
    got = list(read_records(path, binary=True))
    assert [pos for pos, _ in got] == [1, 2, 3, 4, 5, 6]
    assert [r for _, r in got] == records


def test_avro_empty_container_and_zero_byte_file(tmp_path: Path) -> None:
    empty_container = tmp_path / "empty.avro"
    write_records(empty_container, [], binary=True)
    assert empty_container.stat().st_size > 0
    assert list(read_records(empty_container, binary=True)) == []
    zero = tmp_path / "zero.avro"
    zero.write_bytes(b"")
    assert list(read_records(zero, binary=True)) == []


def test_avro_file_with_only_a_value_field_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "values.avro"
    schema = {"type": "record", "name": "V", "fields": [{"name": "value", "type": ["null", "bytes"]}]}
    with path.open("wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), [{"value": b"a"}, {"value": None}])
    assert [r for _, r in read_records(path, binary=True)] == [Record(value=b"a"), Record(value=None)]


def test_avro_container_of_something_else_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "other.avro"
    schema = {"type": "record", "name": "X", "fields": [{"name": "payload", "type": "bytes"}]}
    with path.open("wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), [{"payload": b"a"}])
    with pytest.raises(FramingError, match="no 'value' field.*payload"):
        list(read_records(path, binary=True))


def test_json_given_as_avro_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "not.avro"
    path.write_bytes(b'{"a":1}\n')
    with pytest.raises(FramingError, match="not an Avro object container file.*looks like text"):
        list(read_records(path, binary=True))


def test_truncated_avro_container_names_the_position(tmp_path: Path) -> None:
    path = tmp_path / "dump.avro"
    write_records(path, _avro_records(3000), binary=True)  # several blocks of ~16 kB
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    good: list[int] = []
    with pytest.raises(FramingError) as info:
        for pos, _ in read_records(path, binary=True):
            good.append(pos)
    assert 0 < len(good) < 3000
    assert good == list(range(1, len(good) + 1))
    message = str(info.value)
    assert "dump.avro" in message and "truncated or corrupt" in message
    assert f"at record {len(good) + 1} (after {len(good)} good records)" in message
