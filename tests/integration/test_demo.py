"""``cdc-smt demo``: the README's main-job command, end to end on the embedded broker."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cdc_smt.connector.broker import BrokerError, find_tansu
from tests.integration.helpers import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def test_demo_runs_and_accounts_for_every_record() -> None:
    try:
        find_tansu()
    except BrokerError as exc:
        pytest.skip(str(exc))
    result = subprocess.run(
        [sys.executable, "-m", "cdc_smt.connector.cli", "demo"], cwd=ROOT, capture_output=True, text=True, timeout=150
    )
    out = result.stdout
    assert result.returncode == 0, result.stdout + result.stderr
    assert "produced 17 Canal JSON messages to shop.canal (3 partitions): 15 row changes, 1 DDL, 1 malformed" in out
    assert "committed 17 of 17 source offsets; worker exit code 0" in out
    # Every kind of change is shown next to what it became.
    for expected in ("op=c", "op=u", "op=d", "tombstone", "schema shop.schema-changes", "changed status NEW->PAID"):
        assert expected in out, expected
    dead = [line for line in out.splitlines() if "DEAD LETTER shop.dlq" in line]
    assert len(dead) == 1 and "decode failed, DecodeError" in dead[0]
    assert "\x1b[" not in out  # no terminal control codes from Faust's spinner
