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


# -- convert and topics --------------------------------------------------------------------

CANAL_DDL = orjson.dumps(
    {
        "data": None,
        "database": "shop",
        "es": 1_700_000_000_500,
        "id": 3,
        "isDdl": True,
        "mysqlType": None,
        "old": None,
        "pkNames": None,
        "sql": "ALTER TABLE orders ADD COLUMN note varchar(64)",
        "sqlType": None,
        "table": "orders",
        "ts": 1_700_000_000_600,
        "type": "ALTER",
    }
)
# A Canal dump holding one DDL between two row changes.
CANAL_WITH_DDL = GOOD_1 + b"\n" + CANAL_DDL + b"\n" + GOOD_2 + b"\n"
DBZ = ("-f", "canal-json", "-t", "debezium-json", "--option", "source_timezone=UTC")


def test_convert_writes_only_the_data_topic_and_counts_the_others(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, canal: str
) -> None:
    src, dst = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_bytes(CANAL_WITH_DDL)
    opts = ("--sink-option", "schema_change_topic=dbz.schema-changes")
    code, _, err = run(capsys, "convert", *DBZ, *opts, str(src), "-o", str(dst))
    assert code == 0, err
    values = [orjson.loads(line) for line in dst.read_bytes().splitlines()]
    assert [v["op"] for v in values] == ["c", "c"]  # what Flink's debezium-json can read: no schema-change record
    assert [v["after"]["id"] for v in values] == [1, 2]
    assert err.splitlines()[-1] == (
        "read 3, written 2, errors 0, skipped 1 record for other topics: dbz.schema-changes (1) "
        "(-o DIR/ writes every topic)"
    )


def test_convert_to_a_directory_writes_a_file_per_topic(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, canal: str
) -> None:
    src, out = tmp_path / "in.jsonl", tmp_path / "out"
    src.write_bytes(CANAL_WITH_DDL)
    opts = ("--sink-option", "schema_change_topic=dbz.schema-changes", "--topic", "shop.orders")
    code, _, err = run(capsys, "convert", *DBZ, *opts, str(src), "-o", f"{out}/")
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["dbz.schema-changes.jsonl", "shop.orders.jsonl"]
    rows = [orjson.loads(line) for line in (out / "shop.orders.jsonl").read_bytes().splitlines()]
    (ddl,) = [orjson.loads(line) for line in (out / "dbz.schema-changes.jsonl").read_bytes().splitlines()]
    assert [r["after"]["id"] for r in rows] == [1, 2]
    assert "ADD COLUMN note" in ddl["ddl"]
    assert err.splitlines()[-1] == (
        f"read 3, written 3, errors 0; {out / 'shop.orders.jsonl'} (2), {out / 'dbz.schema-changes.jsonl'} (1)"
    )
    # An existing directory without the trailing slash works the same; the default data topic is the format.
    code, _, err = run(capsys, "convert", *DBZ, str(src), "-o", str(out))
    assert code == 0, err
    assert (out / "debezium-json.jsonl").read_bytes().count(b"\n") == 2


def test_convert_to_a_directory_keeps_routed_topics_apart(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, canal: str
) -> None:
    chain = tmp_path / "chain.yaml"
    chain.write_text(
        "source: {format: canal-json, options: {source_timezone: UTC}}\n"
        "sink: {format: debezium-json}\n"
        "transforms:\n  - {type: route, topic: 'cdc.{database}.{table}'}\n"
    )
    src, out = tmp_path / "in.jsonl", tmp_path / "by-topic"
    src.write_bytes(GOOD_1 + b"\n" + GOOD_1.replace(b'"orders"', b'"items"') + b"\n")
    code, _, err = run(capsys, "convert", "-c", str(chain), str(src), "-o", f"{out}/")
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["cdc.shop.items.jsonl", "cdc.shop.orders.jsonl"]
    # Routed tables are data topics: a single output holds them all.
    code, stdout, err = run(capsys, "convert", "-c", str(chain), str(src))
    assert code == 0 and len(stdout.splitlines()) == 2, err
    assert "other topics" not in err


# -- records as JSON lines (produce / consume; the broker part is in tests/integration) ------------


def test_record_lines_round_trip_text_binary_and_tombstones(tmp_path: Path) -> None:
    from cdc_smt.connector.commands._records import read_record_lines, record_line

    records = [
        Record(value=b'{"a":1}', key=b"k", topic="t", partition=1, offset=5, timestamp=17, headers=[("h", b"v")]),
        Record(value=None, key=b"k", topic="t", partition=0, offset=6),
        Record(value=b"\xff\x00", key=None, topic="t", partition=0, offset=7, headers=[("h", b"\xfe")]),
    ]
    text = [orjson.loads(record_line(r)) for r in records]
    assert text[0] == {"topic": "t", "partition": 1, "offset": 5, "timestamp": 17, "key": "k", "value": '{"a":1}',
                       "headers": [["h", "v"]]}  # fmt: skip
    assert text[1]["value"] is None
    assert text[2]["value_base64"] == "/wA=" and text[2]["headers_base64"] == [["h", "/g=="]]
    assert "value" not in orjson.loads(record_line(records[0], force_base64=True))
    path = tmp_path / "records.jsonl"
    path.write_bytes(b"".join(record_line(r, force) + b"\n" for r in records for force in (False, True)))
    back = [r for _, r in read_record_lines(str(path))]
    expected = [Record(value=r.value, key=r.key, topic=r.topic, partition=r.partition, timestamp=r.timestamp,
                       headers=r.headers) for r in records for _ in range(2)]  # fmt: skip
    assert back == expected  # offsets are not read back: a broker assigns them


def test_record_lines_accept_json_values_and_header_mappings(tmp_path: Path) -> None:
    from cdc_smt.connector.commands._records import read_record_lines

    path = tmp_path / "records.jsonl"
    path.write_bytes(b'{"key": {"id": 1}, "value": {"op": "c"}, "headers": {"a": "1", "b": null}}\n')
    ((line, record),) = list(read_record_lines(str(path)))
    assert (line, record.key, record.value, record.headers) == (
        1,
        b'{"id":1}',
        b'{"op":"c"}',
        [("a", b"1"), ("b", b"")],
    )


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (b'{"value": "x", "vlaue": "y"}', "unknown field `vlaue`"),
        (b'{"value": 5}', "Expected `str | object | array | null`, got `int` - at `$.value`"),
        (b'{"value": "x", "value_base64": "eA=="}', "give value or value_base64, not both"),
        (b'{"value_base64": "not base64!"}', "value_base64 is not base64"),
        (b'{"value": "x", "partition": -1}', "partition must be 0 or more, got -1"),
        (b"{broken", "malformed JSON"),
    ],
)
def test_bad_record_lines_name_the_line(tmp_path: Path, line: bytes, error: str) -> None:
    from cdc_smt.connector.commands._records import read_record_lines
    from cdc_smt.connector.framing import FramingError

    path = tmp_path / "records.jsonl"
    path.write_bytes(b'{"value": "fine"}\n\n' + line + b"\n")
    with pytest.raises(FramingError) as exc:
        list(read_record_lines(str(path)))
    assert str(exc.value).startswith(f"{path}: line 3: ") and error in str(exc.value), str(exc.value)


def test_produce_refuses_records_without_a_topic(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"value": "x"}\n')
    code, _, err = run(capsys, "produce", str(src), "--bootstrap", "127.0.0.1:1")
    assert code == 2 and err == f"cdc-smt: error: {src}: line 1: the record names no topic; pass --topic\n"


def test_consume_argument_checks(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "consume", "t", "--max-messages", "0")
    assert code == 2 and "--max-messages must be 1 or more" in err
    code, _, err = run(capsys, "consume", "t", "--values", "--base64")
    assert code == 2 and "does not combine with --base64" in err


@pytest.mark.parametrize("command", ["produce", "consume"])
def test_produce_and_consume_without_the_kafka_client_say_what_to_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.setitem(sys.modules, "aiokafka", None)  # as if the worker extra were not installed
    args = ["produce", "-t", "t", "-"] if command == "produce" else ["consume", "t"]
    code, _, err = run(capsys, *args)
    assert code == 2
    assert (
        err
        == f"cdc-smt: error: {command} needs the worker extra: pip install 'cdc-smt[worker]' (cannot import aiokafka)\n"
    )


@pytest.mark.corpus
def test_flinks_canal_test_data_converts_to_debezium_json_flink_can_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, corpus: Path
) -> None:
    """Flink's own Canal test data holds one DDL; its Debezium schema-change record stays out of the data file."""
    src = corpus / "canal-json" / "flink-canal-data.txt"
    ddl = sum(orjson.loads(line).get("isDdl") is True for line in src.read_bytes().splitlines() if line.strip())
    dst = tmp_path / "dbz.jsonl"
    code, _, err = run(capsys, "convert", *DBZ, str(src), "-o", str(dst))
    assert code == 0, err
    values = [orjson.loads(line) for line in dst.read_bytes().splitlines()]
    assert values and all(v["op"] in ("c", "u", "d", "r") for v in values)  # no schema-change payload
    assert ddl == 1 and err.splitlines()[-1].endswith(
        "skipped 1 record for other topics: cdc_smt (1) (-o DIR/ writes every topic)"
    )
