from __future__ import annotations

import signal
from pathlib import Path
from types import FrameType

import pytest

from tests.corpus import corpus_dir


@pytest.fixture(scope="session")
def corpus() -> Path:
    """``../shared/corpus``; tests that need it skip with a reason when it is absent."""
    path = corpus_dir()
    if path is None:
        pytest.skip("../shared/corpus not found (set CDC_SMT_CORPUS to point at it)")
    return path


@pytest.fixture
def native_switched_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The native suites compare the two paths themselves, so they run with the core on even
    in the suite's pass on the Python path (``CDC_SMT_NATIVE=0``, the second pass of ./dev test)."""
    monkeypatch.setenv("CDC_SMT_NATIVE", "1")


def _interrupted(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def pytest_configure(config: pytest.Config) -> None:
    """A CI job cancelled with SIGTERM unwinds as on Ctrl-C: fixtures and ``finally`` blocks
    stop the brokers, workers and Spark sessions the tests started (none is left behind)."""
    signal.signal(signal.SIGTERM, _interrupted)
