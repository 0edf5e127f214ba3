"""``convert``'s progress line on a terminal, and Ctrl-C: a summary saying "interrupted", exit 130."""

from __future__ import annotations

import io
import logging
import os
import pty
import re
import select
import signal
import subprocess
import sys
from pathlib import Path

import orjson

from cdc_smt.connector.commands._progress import Progress, human_bytes, human_seconds
from cdc_smt.connector.commands.convert import TZ_WARNING
from cdc_smt.connector.exitcodes import ExitCode

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "cdc_smt.connector.cli"]


def canal_line(i: int) -> bytes:
    return orjson.dumps(
        {
            "data": [{"id": str(i), "name": f"n{i}"}], "database": "shop", "es": 1_700_000_000_000, "id": i,
            "isDdl": False, "mysqlType": {"id": "int(11)", "name": "varchar(255)"}, "old": None, "pkNames": ["id"],
            "sql": "", "sqlType": {"id": 4, "name": 12}, "table": "orders", "ts": 1_700_000_000_123, "type": "INSERT",
        }
    ) + b"\n"  # fmt: skip


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


# -- the line itself ---------------------------------------------------------------------------


def test_progress_redraws_at_most_a_few_times_a_second() -> None:
    out, clock = io.StringIO(), FakeClock()
    progress = Progress(out, total_bytes=None, clock=clock)
    for _ in range(1000):  # 1,000 records over one second
        clock.now += 0.001
        progress.advance(100)
    draws = out.getvalue().count("\r")
    assert 1 <= draws <= 4
    assert "1,000 records" in progress.line(clock.now)


def test_progress_shows_rate_bytes_and_eta_when_the_size_is_known() -> None:
    out, clock = io.StringIO(), FakeClock()
    progress = Progress(out, total_bytes=10_000, clock=clock)
    for _ in range(25):
        clock.now += 0.125
        progress.advance(100)  # 2,500 of 10,000 bytes in 3.125 s (800 B/s): 9.4 s to go
    line = progress.line(clock.now)
    assert line == "25 records, 8/s, 2.4 KiB of 9.8 KiB (25%), ETA 9s"
    unknown = Progress(io.StringIO(), total_bytes=None, clock=clock)
    unknown.advance(100)
    assert "ETA" not in unknown.line(clock.now + 1)


def test_progress_clear_erases_only_a_drawn_line() -> None:
    out, clock = io.StringIO(), FakeClock()
    progress = Progress(out, clock=clock)
    progress.clear()
    assert out.getvalue() == ""
    progress.draw()
    progress.clear()
    assert out.getvalue().endswith("\r\x1b[K")


def test_a_log_line_erases_the_progress_line_first() -> None:
    out, clock = io.StringIO(), FakeClock()
    progress = Progress(out, clock=clock)
    handler = logging.StreamHandler(out)
    handler.addFilter(progress)
    logger = logging.getLogger("test_cli_progress")
    logger.addHandler(handler)
    try:
        progress.draw()
        logger.warning("a codec says something")
    finally:
        logger.removeHandler(handler)
    assert out.getvalue().endswith("\r\x1b[Ka codec says something\n")


def test_no_progress_object_unless_stderr_is_a_terminal() -> None:
    assert Progress.for_terminal(io.StringIO()) is None


def test_human_units() -> None:
    assert (human_bytes(512), human_bytes(2048), human_bytes(3 * 1024**3)) == ("512 B", "2.0 KiB", "3.0 GiB")
    assert (human_seconds(5), human_seconds(125), human_seconds(7300)) == ("5s", "2m05s", "2h01m")


# -- on a terminal, through a pty -----------------------------------------------------------------


def _start_convert(tmp_path: Path, stderr: int) -> subprocess.Popen[bytes]:
    """convert reading stdin (so the test decides when input arrives), writing a file."""
    return subprocess.Popen(
        [*CLI, "convert", "-f", "canal-json", "-t", "debezium-json", "-o", str(tmp_path / "out.jsonl"), "-"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )


def _read_until(fd: int, needle: bytes, proc: subprocess.Popen[bytes], seen: bytearray) -> None:
    """Read ``fd`` into ``seen`` until ``needle`` shows up or the process ends."""
    while needle not in seen:
        ready, _, _ = select.select([fd], [], [], 60)
        assert ready, f"no {needle!r} within 60 s; got {bytes(seen)!r}"
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the pty closes when the child exits
            chunk = b""
        if not chunk:
            assert proc.poll() is not None or needle in seen, bytes(seen)
            return
        seen += chunk


def test_progress_on_a_tty_and_an_interrupted_summary(tmp_path: Path) -> None:
    master, slave = pty.openpty()
    proc = _start_convert(tmp_path, stderr=slave)
    os.close(slave)
    seen = bytearray()
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"".join(canal_line(i) for i in range(50)))
        proc.stdin.flush()
        _read_until(master, TZ_WARNING.encode(), proc, seen)  # printed once the first record was read
        # A record arriving after the refresh interval redraws the line.
        for i in range(50, 60):
            select.select([], [], [], 0.1)
            proc.stdin.write(canal_line(i))
            proc.stdin.flush()
        select.select([], [], [], 0.3)  # longer than the refresh interval: record 61 is drawn
        proc.stdin.write(canal_line(60))
        proc.stdin.flush()
        _read_until(master, b"61 records", proc, seen)
        proc.send_signal(signal.SIGINT)  # Ctrl-C while it waits for more input
        _read_until(master, b"interrupted", proc, seen)
        code = proc.wait(60)
        _read_until(master, b"\n", proc, seen)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    text = seen.decode("utf-8", "replace")
    assert code == ExitCode.INTERRUPTED
    assert re.search(r"\r\x1b\[K61 records, [\d,]+/s, [\d.]+ KiB", text), text
    assert "\r\x1b[K" in text  # drawn in place, and erased before the summary
    assert "read 61, written 61, errors 0, interrupted" in text
    assert "Traceback" not in text
    assert len((tmp_path / "out.jsonl").read_bytes().splitlines()) == 61  # what was converted is kept


def test_no_progress_when_stderr_is_not_a_tty(tmp_path: Path) -> None:
    proc = _start_convert(tmp_path, stderr=subprocess.PIPE)
    _, err = proc.communicate(b"".join(canal_line(i) for i in range(200)), timeout=60)
    assert proc.returncode == ExitCode.OK
    assert err.decode().splitlines() == [f"cdc-smt: {TZ_WARNING}", "read 200, written 200, errors 0"]


def test_sigint_to_a_piped_run_prints_an_interrupted_summary(tmp_path: Path) -> None:
    proc = _start_convert(tmp_path, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write(b"".join(canal_line(i) for i in range(10)))
    proc.stdin.flush()
    seen = bytearray()
    _read_until(proc.stderr.fileno(), TZ_WARNING.encode(), proc, seen)
    select.select([], [], [], 0.5)  # let it convert what it has; then it waits for more input
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    text = (seen + err).decode()
    assert proc.returncode == ExitCode.INTERRUPTED
    m = re.fullmatch(r"read (\d+), written (\d+), errors 0, interrupted", text.splitlines()[-1])
    assert m and m[1] == m[2], text
    assert len((tmp_path / "out.jsonl").read_bytes().splitlines()) == int(m[2])  # nothing converted is lost
    assert "Traceback" not in text and "\r" not in text
