"""Messages that used to mislead (issue 12 §2, §7, §8): exit codes that hide loss, one-error
validation, two line numbers, early warnings, silent dialect and typing guesses."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from cdc_smt.connector import cli
from cdc_smt.connector.commands.convert import TZ_WARNING
from cdc_smt.connector.exitcodes import ExitCode

ROOT = Path(__file__).resolve().parents[1]
SHOP_JOB = ROOT / "examples" / "jobs" / "shop-canal-to-debezium.yaml"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def canal(i: int, rows: int = 1, msg_id: int | None = None, table: str = "orders") -> dict:
    return {
        "data": [{"id": str(i + r), "name": f"n{i + r}"} for r in range(rows)], "database": "shop",
        "es": 1_700_000_000_000, "id": i if msg_id is None else msg_id, "isDdl": False,
        "mysqlType": {"id": "int(11)", "name": "varchar(255)"},
        "old": None, "pkNames": ["id"], "sql": "", "sqlType": {"id": 4, "name": 12}, "table": table,
        "ts": 1_700_000_000_123, "type": "INSERT",
    }  # fmt: skip


def ckafka(i: int, table: str) -> dict:
    return {
        "BINLOG_NAME": "mysql-bin.000003", "BINLOG_POS": 154 + i, "DATABASE": "inventory", "EVENT_SERVER_ID": None,
        "GLOBAL_ID": None, "GROUP_ID": None, "NEW_VALUES": {"id": str(i)}, "OLD_VALUES": None, "TABLE": table,
        "TIME": "19700101080000", "TYPE": "I",
    }  # fmt: skip


def jsonl(path: Path, *messages: dict | bytes) -> str:
    path.write_bytes(b"".join((m if isinstance(m, bytes) else orjson.dumps(m)) + b"\n" for m in messages))
    return str(path)


# -- §2 exit codes -------------------------------------------------------------------------------


def test_skip_with_every_message_failed_is_not_exit_0(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = jsonl(tmp_path / "in.jsonl", b"{bad", b"[1]", b'{"type": "NOPE"}')
    code, _, err = run(capsys, "convert", "-f", "canal-json", "-t", "canal-json", "--on-error", "skip", src)
    assert code == ExitCode.COMPLETED_WITH_ERRORS == 3
    assert err.splitlines()[-1] == "read 3, written 0, errors 3"


def test_exit_codes_are_distinct_and_documented() -> None:
    codes = {c.name: int(c) for c in ExitCode}
    assert codes == {"OK": 0, "FAILED": 1, "USAGE": 2, "COMPLETED_WITH_ERRORS": 3, "INTERRUPTED": 130}
    doc = (ROOT / "docs" / "cli.md").read_text()
    for code in codes.values():
        assert f"| {code} |" in doc


# -- §7 validate and detect ----------------------------------------------------------------------


def test_validate_says_what_a_message_looks_like_and_the_first_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    src = jsonl(tmp_path / "canal.jsonl", canal(101), canal(102))
    code, out, err = run(capsys, "validate", "-f", "debezium-json", src)
    assert code == ExitCode.COMPLETED_WITH_ERRORS
    first = [line for line in out.splitlines() if line.startswith(f"{src}:1: ")]
    assert first[0].startswith(f"{src}:1: (root): looks like canal-json") and first[0].endswith(", not debezium-json")
    assert f"{src}:1: /id: 101 is not of type 'string'" in first
    assert 3 <= len(first) <= 4  # the hint and the first few errors
    assert "2 look like canal-json" in err
    code, all_out, _ = run(capsys, "validate", "-f", "debezium-json", "--all-errors", src)
    assert code == ExitCode.COMPLETED_WITH_ERRORS
    every = [line for line in all_out.splitlines() if line.startswith(f"{src}:1: ")]
    assert set(first) <= set(every)  # more, never less
    assert not any("not valid under any of the given schemas" in line for line in every)


def test_validate_job_checks_the_file_as_a_job(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "validate", "-f", "job", str(SHOP_JOB))
    assert (code, out) == (ExitCode.OK, "")
    assert "checked as a job file: valid" in err
    typo = tmp_path / "job.yaml"
    typo.write_text(SHOP_JOB.read_text().replace("\nsink:", "\nsinc:"))
    code, out, err = run(capsys, "validate", "-f", "job", str(typo))
    assert code == ExitCode.COMPLETED_WITH_ERRORS
    assert out.startswith(f"{typo}: sinc: unknown key 'sinc' (did you mean 'sink'?")
    assert "malformed JSON" not in out and out.count("\n") == 1


def test_validate_job_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", "-f", "job", "--json", "-q", str(SHOP_JOB))
    assert code == ExitCode.OK
    assert json.loads(out) == {"file": str(SHOP_JOB), "valid": True, "error": None}


def test_official_canal_read_as_ticdc_warns_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = jsonl(tmp_path / "canal.jsonl", canal(101, rows=2), canal(103), canal(104))
    code, _, err = run(
        capsys, "convert", "-f", "ticdc-canal-json", "-t", "ticdc-canal-json", src, "-o", str(tmp_path / "out")
    )
    assert code == ExitCode.OK
    warnings = [line for line in err.splitlines() if "look like official Canal" in line]
    assert len(warnings) == 1
    assert warnings[0].startswith("cdc-smt: warning: ticdc-canal-json: ")
    assert "'id' is 101" in warnings[0] and "2 rows in one message" in warnings[0]


def test_ticdc_messages_read_as_ticdc_do_not_warn(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    ticdc = {**canal(0, msg_id=0), "mysqlType": {"id": "int", "name": "varchar"}}
    src = jsonl(tmp_path / "ticdc.jsonl", ticdc, ticdc)
    code, _, err = run(
        capsys, "convert", "-f", "ticdc-canal-json", "-t", "ticdc-canal-json", src, "-o", str(tmp_path / "out")
    )
    assert code == ExitCode.OK
    assert "official Canal" not in err


# -- §8 misleading messages ----------------------------------------------------------------------


@pytest.mark.parametrize("where", ["before", "after"])
def test_log_level_before_or_after_the_command(capsys: pytest.CaptureFixture[str], where: str) -> None:
    argv = ["--log-level", "error", "formats"] if where == "before" else ["formats", "--log-level", "error"]
    code, out, err = run(capsys, *argv)
    assert (code, err) == (ExitCode.OK, "")
    assert "canal-json" in out


def test_log_level_after_the_command_is_applied(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = jsonl(tmp_path / "ck.jsonl", ckafka(1, "customers"))
    argv = (
        "convert",
        "-f",
        "ckafka-json",
        "-t",
        "canal-json",
        "-O",
        "source_timezone=UTC",
        src,
        "-o",
        str(tmp_path / "out"),
    )
    _, _, err = run(capsys, *argv)
    assert "no schema for table" in err
    _, _, err = run(capsys, *argv, "--log-level", "error")
    assert "no schema for table" not in err


def test_decode_errors_give_the_file_line_and_the_column(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    good = orjson.dumps(canal(1))
    src = jsonl(tmp_path / "in.jsonl", good, b"", good[:-1] + b', "x": nope}')
    code, _, err = run(capsys, "convert", "-f", "canal-json", "-t", "canal-json", "--on-error", "skip", src)
    assert code == ExitCode.COMPLETED_WITH_ERRORS
    (report,) = [line for line in err.splitlines() if "decode failed" in line]
    column = len(good) + 7  # the 'n' of nope
    assert report.startswith(f"line 3, column {column}: decode failed: DecodeError: canal-json: malformed JSON: ")
    assert "line 1" not in report and "(char" not in report
    code, out, _ = run(capsys, "validate", "-f", "canal-json", src)
    assert f"{src}:3: (root): malformed JSON at column {column}: " in out
    assert "line 1" not in out


def test_timezone_warning_only_once_input_is_read(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    base = ("convert", "-f", "canal-json", "-t", "debezium-json", "-o", str(tmp_path / "out"))
    code, _, err = run(capsys, *base, str(tmp_path / "missing.jsonl"))
    assert code == ExitCode.USAGE and TZ_WARNING not in err
    code, _, err = run(capsys, *base, jsonl(tmp_path / "empty.jsonl"))
    assert code == ExitCode.OK and TZ_WARNING not in err
    code, _, err = run(capsys, *base, jsonl(tmp_path / "one.jsonl", canal(1)))
    assert code == ExitCode.OK and err.count(TZ_WARNING) == 1


def test_ckafka_rows_without_a_schema_warn_once_per_table(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = jsonl(tmp_path / "ck.jsonl", ckafka(1, "customers"), ckafka(2, "customers"), ckafka(3, "orders"))
    code, _, err = run(
        capsys,
        "convert",
        "-f",
        "ckafka-json",
        "-t",
        "canal-json",
        "-O",
        "source_timezone=UTC",
        src,
        "-o",
        str(tmp_path / "out"),
    )
    assert code == ExitCode.OK
    warnings = [line for line in err.splitlines() if "no schema for table" in line]
    assert [w.split("no schema for table ")[1].split(":")[0] for w in warnings] == [
        "inventory.customers",
        "inventory.orders",
    ]
    assert warnings[0].startswith("cdc-smt: warning: ckafka-json: ") and "untyped strings" in warnings[0]


def test_ckafka_rows_with_a_schema_do_not_warn(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    schema = tmp_path / "schema.yaml"
    schema.write_text("tables:\n  inventory.customers:\n    columns: {id: int}\n    primary_key: [id]\n")
    src = jsonl(tmp_path / "ck.jsonl", ckafka(1, "customers"))
    code, _, err = run(
        capsys,
        "convert",
        "-f",
        "ckafka-json",
        "-t",
        "canal-json",
        "-O",
        "source_timezone=UTC",
        "--schema",
        str(schema),
        src,
        "-o",
        str(tmp_path / "out"),
    )
    assert code == ExitCode.OK, err
    assert "no schema for table" not in err


def test_config_that_does_not_exist_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "convert", "-c", str(tmp_path / "no-such-chain"))
    assert code == ExitCode.USAGE
    assert err == f"cdc-smt: error: config file not found: {tmp_path / 'no-such-chain'}\n"


def test_all_errors_says_more_than_the_first_few(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    src = jsonl(tmp_path / "ck.jsonl", ckafka(1, "customers"))
    _, first, _ = run(capsys, "validate", "-f", "cloudcanal-json", src)
    _, every, _ = run(capsys, "validate", "-f", "cloudcanal-json", "--all-errors", src)
    assert len(first.splitlines()) == 4  # the look-alike hint and three errors
    assert len(every.splitlines()) > 4 and set(first.splitlines()) <= set(every.splitlines())
