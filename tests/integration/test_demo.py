"""``cdc-smt demo``: the README's main-job command, end to end on the embedded broker."""

from __future__ import annotations

import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

from cdc_smt.connector.broker import BrokerError, find_tansu
from tests.integration.helpers import ROOT
from tests.test_packaging import build_wheel, install_wheel

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


def test_demo_runs_from_an_installed_wheel_outside_the_repository(tmp_path: Path) -> None:
    """A non-editable install finds the demo's job and data in the package, whatever the directory."""
    try:
        find_tansu()
    except BrokerError as exc:
        pytest.skip(str(exc))
    vpy = install_wheel(build_wheel(tmp_path), tmp_path / "venv")
    # The wheel was installed without dependencies: take them from the test run's own site-packages
    # (its cdc-smt is an editable install, which only its .pth file activates: not on PYTHONPATH).
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = os.pathsep.join(site.getsitepackages())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = subprocess.run(
        [str(vpy), "-m", "cdc_smt.connector.cli", "demo"], cwd=elsewhere, capture_output=True, text=True,
        timeout=150, env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    (job_line,) = [line for line in result.stdout.splitlines() if line.startswith("job ")]
    assert "site-packages" in job_line and "shop-canal-to-debezium.yaml" in job_line, job_line
    assert "committed 17 of 17 source offsets; worker exit code 0" in result.stdout
