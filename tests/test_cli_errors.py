"""Every subcommand against every kind of bad input: a clear ``cdc-smt: error: ...``
line, the documented exit code (``docs/cli.md``), never a traceback.

The commands run in child processes, as a user runs them: the cases that need
no broker in one batch (a driver calling ``cli.main`` once per case and
capturing stderr), the dead-broker cases as real ``cdc-smt`` processes, all
started at once.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from cdc_smt.connector import cli
from cdc_smt.connector.exitcodes import ExitCode

ROOT = Path(__file__).resolve().parents[1]

#: Runs each case of a JSON file in this process, printing their codes and stderr as JSON.
DRIVER = r"""
import contextlib, gc, io, json, sys, traceback
from cdc_smt.connector import cli

results = []
for argv in json.load(open(sys.argv[1])):
    err, out = io.StringIO(), io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code
        except BaseException:  # what the console script would show the user
            traceback.print_exc()
            code = None
        gc.collect()  # "Unclosed ..." complaints of dropped clients land in this case's stderr
        out.flush()
    stdout = out.buffer.getvalue().decode("utf-8", "replace")
    results.append({"code": None if code is None else int(code), "stdout": stdout, "stderr": err.getvalue()})
print(json.dumps(results))
"""


@dataclass(frozen=True)
class Case:
    command: str
    kind: str
    argv: tuple[str, ...]
    code: ExitCode
    says: str  # a fragment the error must contain


@pytest.fixture(scope="module")
def bad(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One file (or non-file) per kind of bad input, plus job files for the format and broker cases."""
    d = tmp_path_factory.mktemp("bad")
    (d / "binary.yaml").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe\xc3\x28" + bytes(range(256)))
    (d / "empty.yaml").write_bytes(b"")
    (d / "malformed.yaml").write_text("source: [canal-json\nsink: {\n")
    (d / "adir").mkdir()
    (d / "values.txt").write_text("hello\n")
    job = (
        "id: t\nkafka: {bootstrap_servers: '%s', connect_timeout_s: 2}\n"
        "source: {topics: [a], format: %s}\nsink: {topic: b, format: debezium-json}\n"
    )
    checkpoint = f"backfill: {{checkpoint: '{d / 'checkpoint'}', master: 'local[1]'}}\n"
    (d / "unknown-format.yaml").write_text(job % ("127.0.0.1:9", "no-such-format") + checkpoint)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dead = job % (f"127.0.0.1:{port}", "canal-json")
    # A short start-up probe (kafka.connect_timeout_s above) and client timeouts.
    dead += "consumer: {request_timeout_ms: 2000, session_timeout_ms: 2000, heartbeat_interval_ms: 500}\n"
    dead += "worker: {metrics_port: 0}\n"
    dead += checkpoint
    (d / "dead-broker.yaml").write_text(dead)
    return {
        "missing": str(d / "missing.yaml"),
        "binary": str(d / "binary.yaml"),
        "empty": str(d / "empty.yaml"),
        "malformed": str(d / "malformed.yaml"),
        "directory": str(d / "adir"),
        "unknown-format": str(d / "unknown-format.yaml"),
        "dead-broker": str(d / "dead-broker.yaml"),
        "port": str(port),
        "values": str(d / "values.txt"),
    }


#: What each kind of bad configuration file is told.
CONFIG_SAYS = {
    "missing": "not found",
    "binary": "not a text file",
    "empty": "expected a mapping",
    "malformed": "not valid YAML",
    "directory": "Is a directory",
}


def batched_cases(f: dict[str, str]) -> list[Case]:
    usage = ExitCode.USAGE
    cases: list[Case] = []
    for kind, says in CONFIG_SAYS.items():
        config_says = "a chain config is a mapping" if kind == "empty" else says
        cases += [
            Case("convert", kind, ("convert", "-c", f[kind], f["empty"]), usage, config_says),
            Case("worker", kind, ("worker", "-c", f[kind], "--check"), usage, says),
            Case("backfill", kind, ("backfill", "-c", f[kind], "--dry-run"), usage, says),
            Case("demo", kind, ("demo", "--job", f[kind]), usage, says if kind != "directory" else "not found"),
            Case("validate", kind, ("validate", "-f", "job", f[kind]), *_validate_job(kind)),
        ]
    binary_input_says = "decode failed"
    cases += [
        # Input files (messages, not configuration).
        Case("convert", "missing", ("convert", "-f", "canal-json", "-t", "debezium-json", f["missing"]),
             usage, "No such file"),
        Case("convert", "directory", ("convert", "-f", "canal-json", "-t", "debezium-json", f["directory"]),
             usage, "Is a directory"),
        Case("convert", "binary", ("convert", "-f", "canal-json", "-t", "debezium-json", f["binary"]),
             ExitCode.FAILED, binary_input_says),
        Case(
            "convert", "binary",
            ("convert", "-f", "canal-json", "-t", "debezium-json", "--on-error", "skip", f["binary"]),
            ExitCode.COMPLETED_WITH_ERRORS, binary_input_says,
        ),
        Case("convert", "empty", ("convert", "-f", "canal-json", "-t", "debezium-json", f["empty"]),
             ExitCode.OK, "read 0"),
        Case("convert", "binary",
             ("convert", "-f", "maxwell-json", "-t", "canal-json", "--schema", f["binary"], f["empty"]),
             usage, "not a text file"),
        Case("convert", "directory",
             ("convert", "-f", "maxwell-json", "-t", "canal-json", "--schema", f["directory"], f["empty"]),
             usage, "Is a directory"),
        Case("convert", "malformed",
             ("convert", "-f", "maxwell-json", "-t", "canal-json", "--schema", f["malformed"], f["empty"]),
             usage, "malformed YAML"),
        Case("convert", "unknown-format", ("convert", "-f", "no-such-format", "-t", "canal-json", f["empty"]),
             usage, "unknown format"),
        Case("convert", "unknown-format", ("convert", "-c", f["unknown-format"], f["empty"]), usage, "no-such-format"),
        Case("validate", "missing", ("validate", "-f", "canal-json", f["missing"]), usage, "No such file"),
        Case("validate", "directory", ("validate", "-f", "canal-json", f["directory"]), usage, "Is a directory"),
        Case("validate", "binary", ("validate", "-f", "canal-json", f["binary"]),
             ExitCode.COMPLETED_WITH_ERRORS, "malformed JSON"),
        Case("validate", "empty", ("validate", "-f", "canal-json", f["empty"]), ExitCode.OK, "0 messages"),
        Case("validate", "unknown-format", ("validate", "-f", "no-such-format", f["empty"]),
             usage, "no JSON Schema for format"),
        Case("detect", "missing", ("detect", f["missing"]), usage, "No such file"),
        Case("detect", "directory", ("detect", f["directory"]), usage, "Is a directory"),
        Case("detect", "binary", ("detect", f["binary"]), ExitCode.FAILED, "no format matched"),
        Case("detect", "empty", ("detect", f["empty"]), ExitCode.FAILED, "0 messages"),
        Case("formats", "unknown-format", ("formats", "no-such-format"), usage, "unknown format"),
        Case("worker", "unknown-format", ("worker", "-c", f["unknown-format"], "--check"), usage, "no-such-format"),
        Case("backfill", "unknown-format", ("backfill", "-c", f["unknown-format"], "--dry-run"),
             usage, "no-such-format"),
        Case("demo", "missing", ("demo", "--data", f["missing"]), usage, "not found"),
        Case("demo", "directory", ("demo", "--data", f["directory"]), usage, "not found"),
        Case("produce", "missing", ("produce", f["missing"]), usage, "No such file"),
        Case("produce", "directory", ("produce", f["directory"]), usage, "Is a directory"),
        Case("produce", "binary", ("produce", f["binary"]), usage, "malformed JSON"),
        Case("produce", "malformed", ("produce", f["malformed"]), usage, "malformed JSON"),
        Case("consume", "malformed", ("consume", "orders", "--timeout", "soon"), usage, "invalid float value"),
        Case("broker", "malformed", ("broker", "--topic", "orders:x"),
             usage, "--topic expects NAME or NAME:PARTITIONS"),
        Case("broker", "malformed", ("broker", "--port", "many"), usage, "invalid int value"),
    ]  # fmt: skip
    return cases


def _validate_job(kind: str) -> tuple[ExitCode, str]:
    """``validate -f job`` reports a file it could read but not accept as a verdict (3); one it cannot open is 2."""
    if kind in ("missing", "directory"):
        return ExitCode.USAGE, "No such file" if kind == "missing" else "Is a directory"
    return ExitCode.COMPLETED_WITH_ERRORS, {
        "binary": "not a text file",
        "empty": "expected a mapping",
        "malformed": "not valid YAML",
    }[kind]


def dead_broker_cases(f: dict[str, str]) -> list[Case]:
    address = f"127.0.0.1:{f['port']}"
    return [
        # Every host probes the cluster at start-up: one line naming the address, "cannot run" (2).
        Case(
            "worker",
            "dead-broker",
            ("worker", "-c", f["dead-broker"]),
            ExitCode.USAGE,
            f"cannot reach Kafka at {address}",
        ),
        Case(
            "backfill",
            "dead-broker",
            ("backfill", "-c", f["dead-broker"], "--dry-run"),
            ExitCode.USAGE,
            f"cannot reach Kafka at {address}",
        ),
        Case(
            "backfill",
            "dead-broker",
            ("backfill", "-c", f["dead-broker"]),
            ExitCode.USAGE,
            f"cannot reach Kafka at {address}",
        ),
        Case(
            "produce",
            "dead-broker",
            ("produce", "--values", "-t", "t", "--bootstrap", address, "--connect-timeout", "2", f["values"]),
            ExitCode.USAGE,
            f"cannot reach Kafka at {address}",
        ),
        Case(
            "consume",
            "dead-broker",
            ("consume", "t", "--bootstrap", address, "--timeout", "1", "--connect-timeout", "2"),
            ExitCode.USAGE,
            f"cannot reach Kafka at {address}",
        ),
    ]


@pytest.fixture(scope="module")
def outcomes(bad: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Case, int | None, str, str]]:
    """``(case, exit code, stdout, stderr)`` of every case."""
    batch, dead = batched_cases(bad), dead_broker_cases(bad)
    cases_file = tmp_path_factory.mktemp("driver") / "cases.json"
    cases_file.write_text(json.dumps([list(c.argv) for c in batch]))
    env_cmd = [sys.executable, "-m", "cdc_smt.connector.cli"]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", DRIVER, str(cases_file)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    ]
    procs += [
        subprocess.Popen([*env_cmd, *c.argv], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for c in dead
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    driver_out, driver_err = outputs[0]
    assert procs[0].returncode == 0, driver_err
    results = json.loads(driver_out)
    got = [(c, r["code"], r["stdout"], r["stderr"]) for c, r in zip(batch, results, strict=True)]
    got += [(c, p.returncode, out, err) for c, p, (out, err) in zip(dead, procs[1:], outputs[1:], strict=True)]
    return got


def test_every_command_is_covered(bad: dict[str, str]) -> None:
    commands = {name.replace("_", "-") for name, _ in cli.command_modules()}
    covered = {c.command for c in batched_cases(bad) + dead_broker_cases(bad)}
    assert covered == commands, f"add bad-input cases for: {sorted(commands - covered)}"
    for command in ("convert", "worker", "backfill", "validate", "demo"):
        kinds = {c.kind for c in batched_cases(bad) if c.command == command}
        assert set(CONFIG_SAYS) <= kinds, (command, set(CONFIG_SAYS) - kinds)


_LIFECYCLE_LOG = re.compile(r"^\d{4}-\d\d-\d\d [\d:,]+ INFO cdc_smt\.")


def _without_lifecycle_logs(err: str) -> str:
    """stderr without the worker's INFO lifecycle lines (``starting job t``), which it logs whatever the level."""
    return "\n".join(line for line in err.strip().splitlines() if not _LIFECYCLE_LOG.match(line))


def test_no_traceback_and_the_documented_exit_code(outcomes: list[tuple[Case, int | None, str, str]]) -> None:
    wrong = []
    for case, code, out, err in outcomes:
        problems = []
        if "Traceback" in err or "Unclosed" in err:
            problems.append("traceback or unclosed client")
        if code != case.code:
            problems.append(f"exit {code}, documented {int(case.code)}")
        if case.says not in err + out:  # validate's verdicts are its output
            problems.append(f"does not say {case.says!r}")
        errors = [line for line in err.splitlines() if line.startswith("cdc-smt: error: ")]
        if case.code == ExitCode.USAGE and (len(errors) != 1 or _without_lifecycle_logs(err) != errors[0]):
            problems.append("not exactly one 'cdc-smt: error:' line")
        if problems:
            wrong.append(f"{' '.join(case.argv)} [{case.kind}]: {'; '.join(problems)}\n{err}")
    assert not wrong, "\n".join(wrong)


def test_a_broker_failure_is_one_line_naming_the_address(outcomes: list[tuple[Case, int | None, str, str]]) -> None:
    one_liners = [(case, err) for case, _, _, err in outcomes if case.kind == "dead-broker"]
    assert len(one_liners) == 5
    for case, err in one_liners:
        (line,) = _without_lifecycle_logs(err).splitlines()
        assert line.startswith("cdc-smt: error: ") and case.says in line, err
