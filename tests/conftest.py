from __future__ import annotations

from pathlib import Path

import pytest

from tests.corpus import corpus_dir


@pytest.fixture(scope="session")
def corpus() -> Path:
    """``../shared/corpus``; tests that need it skip with a reason when it is absent."""
    path = corpus_dir()
    if path is None:
        pytest.skip("../shared/corpus not found (set CDC_SMT_CORPUS to point at it)")
    return path
