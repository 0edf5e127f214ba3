"""The ``cdc-smt`` command line: discovery, error reporting, ``convert`` and ``formats``."""

from __future__ import annotations

import base64
import io
import sys
from pathlib import Path

import orjson
import pytest

from cdc_smt.connector import cli
from cdc_smt.connector.commands import parse_assignments
from cdc_smt.connector.commands.convert import (
    TZ_WARNING,
    Converter,
    DeadLetterFile,
    split_options,
    timezone_warning,
)
from cdc_smt.connector.framing import RecordWriter, read_records, write_records
from cdc_smt.transforms.chain import Chain, ChainHalted, DeadLetter
from cdc_smt.transforms.errors import ConfigError, DecodeError
from cdc_smt.transforms.formats import registry
from cdc_smt.transforms.formats.base import Codec
from cdc_smt.transforms.model import ChangeEvent, Op, Record


def canal_message(row_id: int, name: str) -> bytes:
    """One Canal JSON insert, in the shape Canal's Kafka producer writes."""
    return orjson.dumps(
        {
            "data": [{"id": str(row_id), "name": name}],
            "database": "shop",
            "es": 1_700_000_000_000,
            "id": row_id,
            "isDdl": False,
            "mysqlType": {"id": "int(11)", "name": "varchar(255)"},
            "old": None,
            "pkNames": ["id"],
            "sql": "",
            "sqlType": {"id": 4, "name": 12},
            "table": "orders",
            "ts": 1_700_000_000_123,
            "type": "INSERT",
        }
    )


GOOD_1 = canal_message(1, "alpha")
GOOD_2 = canal_message(2, "beta")
# Line 2 blank, line 3 broken: positions count blank lines.
WITH_BAD_LINE = GOOD_1 + b"\n\n{bad json\n" + GOOD_2 + b"\n"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def canal() -> str:
    if "canal-json" not in registry():
        pytest.skip("the canal-json codec is not there yet")
    return "canal-json"


@pytest.fixture
def other_text_format(canal: str) -> str:
    """Any JSON format besides canal-json (for cross-format behaviour)."""
    others = [n for n, c in registry().items() if n != canal and not c.binary]
    if not others:
        pytest.skip("no second JSON format registered yet")
    return "ticdc-canal-json" if "ticdc-canal-json" in others else others[0]


def _rows(output: bytes | str) -> list[list[dict]]:
    lines = output.splitlines() if isinstance(output, str) else output.decode().splitlines()
    return [orjson.loads(line)["data"] for line in lines]


# -- the command line as a whole ---------------------------------------------------------


def test_help_lists_discovered_commands(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert "convert" in out and "formats" in out


def test_no_command_prints_usage_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys)
    assert code == 2
    assert "usage: cdc-smt" in err


def test_command_missing_an_optional_dependency_says_so(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = ImportError("No module named 'faust'", name="faust")
    monkeypatch.setattr(cli, "command_modules", lambda: [("fake_worker", missing)])
    code, _, err = run(capsys, "fake-worker", "--anything")
    assert code == 2
    assert err.startswith("cdc-smt: error: command 'fake-worker' is unavailable: cannot import faust")


def test_unknown_format_is_a_one_line_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"{}\n")
    code, _, err = run(capsys, "convert", "--from", "no-such-format", "--to", "no-such-format", str(src))
    assert code == 2
    assert err.startswith("cdc-smt: error: unknown format 'no-such-format'")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_convert_without_formats_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "convert", "--to", "canal-json")
    assert code == 2
    assert "convert needs --from and --to" in err


def test_bad_on_error_value_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "convert", "--on-error", "dlq:")
    assert code == 2
    assert "expected fail, skip or dlq:FILE" in err


def test_parse_assignments() -> None:
    assert parse_assignments(["a=1", "b=x=y", "a=2", "c="], "--option") == {"a": "2", "b": "x=y", "c": ""}
    with pytest.raises(ConfigError, match="--option expects KEY=VALUE, got 'novalue'"):
        parse_assignments(["novalue"], "--option")


# -- formats ------------------------------------------------------------------------------


def test_formats_json_describes_every_registered_format(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "formats", "--json")
    assert code == 0
    listed = orjson.loads(out)
    assert [f["name"] for f in listed] == list(registry())
    for entry in listed:
        assert entry["framing"] == ("avro-container" if entry["binary"] else "json-lines")
        options = {o["name"]: o for o in entry["options"]}
        assert options["source_timezone"]["type"] == "str"
        assert options["max_message_bytes"]["common"] is True


def test_formats_text_shows_common_options(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "formats")
    assert code == 0
    assert "options of every format:" in out
    assert "source_timezone (str, default 'UTC')" in out
    for name in registry():
        assert f"\n{name}  [" in "\n" + out


def test_formats_of_one_unknown_format(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "formats", "nope-json")
    assert code == 2
    assert "unknown format 'nope-json'" in err


def test_formats_shows_direction(capsys: pytest.CaptureFixture[str], canal: str) -> None:
    code, out, _ = run(capsys, "formats", "--json", canal)
    assert code == 0
    (entry,) = orjson.loads(out)
    assert (entry["name"], entry["decode"], entry["encode"]) == (canal, True, True)


# -- convert ------------------------------------------------------------------------------


def test_convert_file_to_file(capsys: pytest.CaptureFixture[str], tmp_path: Path, canal: str) -> None:
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_bytes(GOOD_1 + b"\r\n" + GOOD_2 + b"\r\n")
    code, out, err = run(capsys, "convert", "--from", canal, "--to", canal, str(src), "-o", str(dst))
    assert code == 0
    assert out == ""
    assert _rows(dst.read_bytes()) == [[{"id": "1", "name": "alpha"}], [{"id": "2", "name": "beta"}]]
    assert err.splitlines() == ["read 2, written 2, errors 0"]  # same format: no time-zone warning


def test_fail_stops_at_the_bad_line(capsys: pytest.CaptureFixture[str], tmp_path: Path, canal: str) -> None:
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_bytes(WITH_BAD_LINE)
    code, _, err = run(capsys, "convert", "--from", canal, "--to", canal, str(src), "-o", str(dst))
    assert code == 1
    lines = err.splitlines()
    assert lines[0].startswith("line 3, column 2: decode failed: DecodeError: ")
    assert lines[-1] == "read 2, written 1, errors 1"
    assert _rows(dst.read_bytes()) == [[{"id": "1", "name": "alpha"}]]


def test_skip_reports_and_goes_on(capsys: pytest.CaptureFixture[str], tmp_path: Path, canal: str) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(WITH_BAD_LINE)
    code, out, err = run(capsys, "convert", "-f", canal, "-t", canal, "--on-error", "skip", str(src))
    assert code == 3  # completed, with errors
    assert [rows[0]["id"] for rows in _rows(out)] == ["1", "2"]
    assert err.splitlines()[0].startswith("line 3, column 2: decode failed: ")
    assert err.splitlines()[-1] == "read 3, written 2, errors 1"


def test_dlq_keeps_the_failed_line(capsys: pytest.CaptureFixture[str], tmp_path: Path, canal: str) -> None:
    src, dst, dlq = tmp_path / "in.jsonl", tmp_path / "out.jsonl", tmp_path / "dead.jsonl"
    src.write_bytes(WITH_BAD_LINE)
    code, _, err = run(
        capsys, "convert", "-f", canal, "-t", canal, str(src), "-o", str(dst), "--on-error", f"dlq:{dlq}"
    )
    assert code == 3  # completed, with errors
    assert len(dst.read_bytes().splitlines()) == 2
    (entry,) = [orjson.loads(line) for line in dlq.read_bytes().splitlines()]
    assert entry["line"] == 3
    assert entry["stage"] == "decode"
    assert entry["error_class"] == "DecodeError"
    assert entry["message"] == "{bad json"
    assert err.splitlines()[-1] == "read 3, written 2, errors 1"


def test_empty_input(capsys: pytest.CaptureFixture[str], tmp_path: Path, canal: str) -> None:
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_bytes(b"\n\n")
    code, _, err = run(capsys, "convert", "-f", canal, "-t", canal, str(src), "-o", str(dst))
    assert code == 0
    assert dst.read_bytes() == b""
    assert err.splitlines() == ["read 0, written 0, errors 0"]


def test_stdin_to_stdout(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, canal: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(GOOD_1 + b"\n" + GOOD_2 + b"\n")))
    code, out, err = run(capsys, "convert", "--from", canal, "--to", canal)
    assert code == 0
    assert [rows[0]["name"] for rows in _rows(out)] == ["alpha", "beta"]
    assert err.splitlines()[-1] == "read 2, written 2, errors 0"


def test_binary_format_round_trip_through_avro_container(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, canal: str
) -> None:
    binary = [n for n, c in registry().items() if c.binary]
    if not binary:
        pytest.skip("no binary format registered yet")
    src, mid, back = tmp_path / "in.jsonl", tmp_path / "mid.avro", tmp_path / "back.jsonl"
    src.write_bytes(GOOD_1 + b"\n" + GOOD_2 + b"\n")
    zone = ("--option", "source_timezone=Asia/Shanghai")
    code, _, err = run(capsys, "convert", "-f", canal, "-t", binary[0], *zone, str(src), "-o", str(mid))
    assert code == 0, err
    assert mid.read_bytes()[:4] == b"Obj\x01"
    assert err.splitlines()[-1] == "read 2, written 2, errors 0"
    code, _, err = run(capsys, "convert", "-f", binary[0], "-t", canal, *zone, str(mid), "-o", str(back))
    assert code == 0, err
    assert _rows(back.read_bytes()) == [[{"id": "1", "name": "alpha"}], [{"id": "2", "name": "beta"}]]


def test_missing_input_file(capsys: pytest.CaptureFixture[str], tmp_path: Path, canal: str) -> None:
    code, _, err = run(capsys, "convert", "-f", canal, "-t", canal, str(tmp_path / "absent.jsonl"))
    assert code == 2
    assert "cdc-smt: error: cannot open" in err and "absent.jsonl" in err


def test_unknown_and_invalid_options(capsys: pytest.CaptureFixture[str], tmp_path: Path, canal: str) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"")
    base = ("convert", "-f", canal, "-t", canal, str(src))
    code, _, err = run(capsys, *base, "--source-option", "no_such_option=1")
    assert code == 2 and "source.no_such_option: unknown option" in err
    code, _, err = run(capsys, *base, "--sink-option", "source_timezone=Mars/Olympus")
    assert code == 2 and "sink.source_timezone: unknown time zone 'Mars/Olympus'" in err
    code, _, err = run(capsys, *base, "--option", "no_such_option=1")
    assert code == 2 and f"neither {canal} nor {canal} has an option 'no_such_option'" in err


def test_timezone_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, canal: str, other_text_format: str
) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(GOOD_1 + b"\n")  # the warning needs input that was read
    base = ("convert", "-f", canal, "-t", other_text_format, str(src), "-o", str(tmp_path / "out.jsonl"))
    code, _, err = run(capsys, *base)
    assert code == 0
    assert err.count(TZ_WARNING) == 1
    for flag in ("--source-option", "--option"):
        code, _, err = run(capsys, *base, flag, "source_timezone=Asia/Shanghai")
        assert code == 0
        assert "warning" not in err


def test_option_goes_to_whichever_codec_declares_it(canal: str, other_text_format: str) -> None:
    src, sink = split_options({"source_timezone": "Asia/Shanghai"}, {}, {}, canal, other_text_format)
    assert src == sink == {"source_timezone": "Asia/Shanghai"}
    src, sink = split_options(
        {"source_timezone": "Asia/Shanghai"}, {}, {"source_timezone": "UTC"}, canal, other_text_format
    )
    assert (src, sink) == ({"source_timezone": "Asia/Shanghai"}, {"source_timezone": "UTC"})
    with pytest.raises(ConfigError, match="has an option 'nope'"):
        split_options({"nope": "1"}, {}, {}, canal, other_text_format)


# -- convert's parts, with test-only codecs (not registered) ----------------------------------


class _TextCodec(Codec):
    """Test-only: value text <-> one event; the value ``bad`` does not decode."""

    name = "test-text"

    def decode(self, record: Record) -> list[ChangeEvent]:
        if record.value == b"bad":
            raise DecodeError("bad value", format=self.name)
        return [ChangeEvent(op=Op.INSERT, after={"v": record.value.decode()})]

    def encode(self, event: ChangeEvent) -> list[Record]:
        return [Record(value=event.after["v"].upper().encode())]


class _BinaryCodec(_TextCodec):
    name = "test-binary"
    binary = True


def test_timezone_warning_rule() -> None:
    assert timezone_warning(Chain(_TextCodec(), _BinaryCodec())) == TZ_WARNING
    assert timezone_warning(Chain(_TextCodec({"source_timezone": "UTC"}), _BinaryCodec())) is None
    assert timezone_warning(Chain(_TextCodec(), _TextCodec())) is None


def test_converter_reads_avro_and_dead_letters_by_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, dlq_path = tmp_path / "in.avro", tmp_path / "dead.jsonl"
    inputs = [
        Record(value=v, key=b"k", topic="orders", partition=2, offset=40 + i)
        for i, v in enumerate((b"a", b"bad", b"c"))
    ]
    write_records(src, inputs, binary=True)
    out = io.BytesIO()
    dlq = DeadLetterFile(str(dlq_path), binary=True)
    with RecordWriter(out, binary=False) as writer:
        converter = Converter(Chain(_BinaryCodec(), _TextCodec(), [], "all"), writer, dlq, binary_input=True)
        converter.feed(read_records(src, binary=True))
    dlq.close()
    assert out.getvalue() == b"A\nC\n"
    assert (converter.counts.read, converter.counts.errors) == (3, 1)
    assert capsys.readouterr().err == "record 2: decode failed: DecodeError: test-binary: bad value\n"
    (entry,) = [orjson.loads(line) for line in dlq_path.read_bytes().splitlines()]
    assert entry["record"] == 2
    assert (entry["topic"], entry["partition"], entry["offset"]) == ("orders", 2, 41)
    assert base64.b64decode(entry["message_base64"]) == b"bad"
    assert base64.b64decode(entry["key_base64"]) == b"k"


def test_dead_letter_file_keeps_non_utf8_lines_as_base64(tmp_path: Path) -> None:
    path = tmp_path / "dead.jsonl"
    dlq = DeadLetterFile(str(path), binary=False)
    dl = DeadLetter(record=Record(value=b"\xff{"), stage="decode", error_class="DecodeError", message="x")
    dlq.write(9, dl)
    dlq.close()
    entry = orjson.loads(path.read_bytes())
    assert entry["line"] == 9 and "message" not in entry
    assert base64.b64decode(entry["message_base64"]) == b"\xff{"


def test_converter_fail_mode_stops_and_reports(capsys: pytest.CaptureFixture[str]) -> None:
    out = io.BytesIO()
    records = [(1, Record(value=b"a")), (3, Record(value=b"bad")), (4, Record(value=b"c"))]
    with RecordWriter(out, binary=False) as writer:
        converter = Converter(Chain(_TextCodec(), _TextCodec(), [], "none"), writer, None, binary_input=False)
        with pytest.raises(ChainHalted):
            converter.feed(records)
    assert out.getvalue() == b"A\n"
    assert (converter.counts.read, converter.counts.errors) == (2, 1)
    assert capsys.readouterr().err.startswith("line 3: decode failed")


def test_output_that_is_the_input_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path, canal: str) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"x":1}\n')
    code, _, err = run(capsys, "convert", "-f", canal, "-t", canal, str(src), "-o", str(src))
    assert code == 2 and "is the input file" in err
    assert src.read_bytes() == b'{"x":1}\n'


def test_missing_input_creates_no_output(capsys: pytest.CaptureFixture[str], tmp_path: Path, canal: str) -> None:
    dst = tmp_path / "out.jsonl"
    dst.write_bytes(b"keep\n")
    code, _, err = run(capsys, "convert", "-f", canal, "-t", canal, str(tmp_path / "absent.jsonl"), "-o", str(dst))
    assert code == 2 and "cannot open" in err
    assert dst.read_bytes() == b"keep\n"
