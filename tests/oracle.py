"""Kafka Connect and Debezium as oracles: the JVM harness in tests/jvm/connect-oracle.

:func:`build_harness` builds it once into ``.cache/jvm/connect-oracle/`` (Maven,
with the checkout's own ``.cache/m2``), stamped by a hash of the pom and the
sources so later runs (also offline ones) reuse it. :class:`ConnectOracle` is
one JVM that runs many (Connect properties, records) jobs over stdin/stdout, so
a test session pays the JVM start once. Records cross as dicts: ``topic``,
``partition``, ``timestamp``, ``key`` and ``value`` (JsonConverter text with
schemas, or None), ``headers`` (``[(name, bytes | None)]``).

The product needs no JVM; only tests use this.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ROOT / "tests" / "jvm" / "connect-oracle"
OUT = ROOT / ".cache" / "jvm" / "connect-oracle"
M2 = ROOT / ".cache" / "m2"
MAIN_CLASS = "io.cdcsmt.oracle.Oracle"
#: JVM options for tests: quick start over peak speed (benchmarks pass their own).
TEST_JVM = ("-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


class HarnessUnavailable(RuntimeError):
    """No ``java`` or ``mvn`` here, or the build failed (the message says which)."""


def _stamp() -> str:
    """Hash of what the build depends on: the pom and every source file."""
    h = hashlib.sha256()
    for p in sorted([PROJECT / "pom.xml", *(PROJECT / "src").rglob("*")]):
        if p.is_file():
            h.update(p.relative_to(PROJECT).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def build_harness() -> str:
    """The harness's Java class path, building it first unless the cache matches the sources.

    Raises :class:`HarnessUnavailable` when ``java``/``mvn`` are missing or Maven fails.
    """
    if shutil.which("java") is None:
        raise HarnessUnavailable("no `java` on PATH (the Connect oracle needs a JDK 17+)")
    stamp_file = OUT / ".stamp"
    want = _stamp()
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT.parent / ".connect-oracle.lock", "w") as lock:  # parallel sessions build once
        fcntl.flock(lock, fcntl.LOCK_EX)
        jar = OUT / "connect-oracle.jar"
        if not (stamp_file.is_file() and stamp_file.read_text() == want and jar.is_file()):
            mvn = shutil.which("mvn")
            if mvn is None:
                raise HarnessUnavailable("no `mvn` on PATH (needed once to build the Connect oracle)")
            shutil.rmtree(OUT / "lib", ignore_errors=True)
            cmd = [
                mvn,
                "-q",
                "-B",
                "-f",
                str(PROJECT / "pom.xml"),
                f"-Dmaven.repo.local={M2}",
                "package",
                "dependency:copy-dependencies",
            ]
            done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
            if done.returncode != 0:
                tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
                raise HarnessUnavailable(f"building the Connect oracle failed ({' '.join(cmd)}):\n{tail}")
            stamp_file.write_text(want)
    return os.pathsep.join([str(jar), str(OUT / "lib" / "*")])


class OracleError(RuntimeError):
    """The harness could not run a job (bad chain properties, unreadable record)."""


class ConnectOracle:
    """One harness JVM; :meth:`run` sends a job and returns its records."""

    def __init__(self, classpath: str, jvm_options: Iterable[str] = TEST_JVM) -> None:
        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            ["java", *jvm_options, "-cp", classpath, MAIN_CLASS],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )

    def _exited(self) -> OracleError:
        """The JVM is gone: say how, with the end of what it wrote to stderr."""
        code = self._proc.wait()
        self._stderr.seek(0)
        tail = self._stderr.read().decode("utf-8", "replace").strip().splitlines()[-10:]
        return OracleError(f"the oracle JVM exited ({code})" + ("\n" + "\n".join(tail) if tail else ""))

    def run(self, chain: Mapping[str, Any], records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Apply the Connect chain (``transforms=...`` properties) to ``records``, in order.

        A record the Java chain fails on comes back as ``{"error": "Class: message"}``;
        a record it drops is absent.
        """
        job = {"chain": {k: str(v) for k, v in chain.items()}, "records": [_to_wire(r) for r in records]}
        return [_from_wire(r) for r in self._ask(job)["records"]]

    def _ask(self, job: dict[str, Any]) -> dict[str, Any]:
        """Send one job, return its answer (raising :class:`OracleError` on a job-level error)."""
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        if proc.poll() is not None:
            raise self._exited()
        try:
            proc.stdin.write(orjson.dumps(job) + b"\n")
            proc.stdin.flush()
        except BrokenPipeError:
            raise self._exited() from None
        line = proc.stdout.readline()
        if not line:
            raise self._exited()
        answer = orjson.loads(line)
        if "error" in answer:
            raise OracleError(answer["error"])
        return answer

    def bench(
        self, chain: Mapping[str, Any], records: Iterable[Mapping[str, Any]], runs: int
    ) -> tuple[list[float], int]:
        """CPU seconds of each of ``runs`` passes of the Connect chain over ``records``
        (JsonConverter in, SMTs, JsonConverter out; headers not used), and the records one writes."""
        job = {
            "chain": {k: str(v) for k, v in chain.items()},
            "records": [_to_wire(r) for r in records],
            "runs": runs,
        }
        answer = self._ask(job)
        return [ns / 1e9 for ns in answer["cpu_ns"]], answer["written"]

    def close(self) -> None:
        proc = self._proc
        if proc.poll() is None:
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._stderr.close()


def _to_wire(r: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "topic": r["topic"],
        "partition": r.get("partition") or 0,
        "timestamp": r.get("timestamp"),
        "key": r.get("key"),
        "value": r.get("value"),
        "headers": [[k, None if v is None else base64.b64encode(v).decode()] for k, v in r.get("headers") or ()],
    }


def _from_wire(r: dict[str, Any]) -> dict[str, Any]:
    if "error" in r:
        return r
    r["headers"] = [(k, None if v is None else base64.b64decode(v)) for k, v in r["headers"]]
    return r
