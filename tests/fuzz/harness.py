"""The invariant, checked per input: only the target's own error, under one CPU second.

The time limit is CPU time (``ITIMER_PROF``), not wall time, so a machine
shared with other work does not make slow inputs out of fast ones. The long
runner also caps the address space (``RLIMIT_AS``): a ``MemoryError`` is a
finding like any other unexpected exception.
"""

from __future__ import annotations

import signal
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: CPU seconds one input may take.
LIMIT_S = 1.0


class InputTimeout(BaseException):
    """Raised by the CPU timer inside a run that took too long (BaseException: no
    ``except Exception`` in the code under test swallows it)."""


def _on_timer(signum: int, frame: Any) -> None:
    raise InputTimeout


@dataclass(frozen=True)
class Finding:
    """An input that broke the invariant: the exception and where it was raised."""

    target: str
    kind: str  # the exception class, or "timeout"
    where: str  # innermost cdc_smt frame (file:line), else the innermost frame
    message: str
    data: bytes
    cpu_s: float

    @property
    def signature(self) -> tuple[str, str]:
        return (self.kind, self.where)

    def describe(self) -> str:
        return (
            f"{self.target}: {self.kind} at {self.where}: {self.message[:200]} "
            f"({len(self.data)} bytes, {self.cpu_s:.2f} s CPU)"
        )


def _where(exc: BaseException) -> str:
    site = getattr(exc, "site", None)  # a differential target's mismatch names its own site
    if isinstance(site, str):
        return site
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/transforms/" in f.filename or "/connector/" in f.filename]
    f = (ours or frames or [None])[-1]
    if f is None:
        return "?"
    name = f.filename.split("/cdc_smt/")[-1] if "/cdc_smt/" in f.filename else "/".join(f.filename.split("/")[-2:])
    return f"{name}:{f.lineno}"


class Guard:
    """Runs inputs under the CPU timer; returns a :class:`Finding` or ``None``."""

    def __init__(self, limit_s: float = LIMIT_S) -> None:
        self.limit_s = limit_s
        self.max_cpu_s = 0.0
        self._old = signal.signal(signal.SIGPROF, _on_timer)

    def close(self) -> None:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, self._old)

    def __enter__(self) -> Guard:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def check(
        self,
        name: str,
        run: Callable[[bytes], None],
        expected: tuple[type[BaseException], ...],
        data: bytes,
        limit_s: float | None = None,
    ) -> Finding | None:
        limit = self.limit_s if limit_s is None else limit_s
        started = time.process_time()
        failure: BaseException | None = None
        try:
            try:
                signal.setitimer(signal.ITIMER_PROF, limit)
                run(data)
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
        except expected:
            pass
        except InputTimeout as exc:
            failure = exc
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - anything else is what we are looking for
            failure = exc
        cpu = time.process_time() - started
        self.max_cpu_s = max(self.max_cpu_s, cpu)
        if failure is None and cpu <= limit:
            return None
        if failure is None or isinstance(failure, InputTimeout):
            return Finding(name, "timeout", _where(failure) if failure else "?", f"took {cpu:.2f} s CPU", data, cpu)
        return Finding(name, type(failure).__name__, _where(failure), str(failure) or repr(failure), data, cpu)


def minimize(
    guard: Guard,
    name: str,
    run: Callable[[bytes], None],
    expected: tuple[type[BaseException], ...],
    finding: Finding,
    limit_s: float | None = None,
    budget: int = 3000,
    seconds: float = 20.0,
) -> Finding:
    """Shrink the input while it fails the same way (chunk removal, halving chunks),
    within ``budget`` tries and ``seconds``."""
    best = finding
    data = finding.data
    chunk = max(1, len(data) // 2)
    tries = 0
    deadline = time.monotonic() + seconds
    while chunk >= 1 and tries < budget and time.monotonic() < deadline:
        i = 0
        shrunk = False
        while i < len(data) and tries < budget and time.monotonic() < deadline:
            candidate = data[:i] + data[i + chunk :]
            tries += 1
            got = guard.check(name, run, expected, candidate, limit_s) if candidate else None
            if got is not None and got.signature == finding.signature:
                data, best, shrunk = candidate, got, True
            else:
                i += chunk
        if not shrunk:
            chunk //= 2
    return best


__all__ = ["Finding", "Guard", "InputTimeout", "LIMIT_S", "minimize"]
