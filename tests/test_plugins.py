"""Plugins: a third-party package registers transforms and predicates through entry points.

The example package in ``tests/plugin_pkg`` is installed for real with pip (into
a temporary directory put on ``sys.path``, so the project's environment is never
changed) and discovered through ``importlib.metadata``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.smt import names, plugins, refresh, transform_class
from cdc_smt.transforms.smt.filter import Filter
from tests.test_smt_base import build, ev, row

PLUGIN_SRC = Path(__file__).parent / "plugin_pkg"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin, pip-installed (once per module) into a directory of its own."""
    work = tmp_path_factory.mktemp("plugin")
    src = work / "src"
    shutil.copytree(PLUGIN_SRC, src, ignore=shutil.ignore_patterns("__pycache__"))
    target = work / "site"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(target), str(src)],
        capture_output=True, text=True, env=env, timeout=180,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (target / "cdc_smt_example_plugin-0.1.0.dist-info" / "entry_points.txt").is_file()
    return target


@pytest.fixture
def installed(site: Path) -> Iterator[Path]:
    """The installed plugin on ``sys.path`` for one test, as if installed in the environment."""
    sys.path.insert(0, str(site))
    refresh()
    try:
        yield site
    finally:
        sys.path.remove(str(site))
        sys.modules.pop("cdc_smt_example_plugin", None)
        refresh()


def test_plugin_transform_is_discovered_and_runs(installed: Path) -> None:
    assert "shout" in names()
    t = build({"type": "shout", "fields": ["status"]})
    assert type(t).__module__ == "cdc_smt_example_plugin"
    (out,) = t.apply_batch([ev(after=row(1, status="paid"))])
    assert out.after["status"] == "PAID"


def test_plugin_options_are_validated_with_paths(installed: Path) -> None:
    with pytest.raises(ConfigError) as info:
        build({"type": "shout", "feilds": ["x"]})
    assert info.value.path == "transforms[0].feilds"


def test_plugin_predicate(installed: Path) -> None:
    t = build({"type": "shout", "fields": ["status"], "predicate": {"type": "id_is_even"}})
    out = t.apply_batch([ev(after=row(1)), ev(after=row(2))])
    assert [e.after["status"] for e in out] == ["new", "NEW"]


def test_builtins_win_and_broken_plugins_are_config_errors(installed: Path) -> None:
    assert "filter" in plugins()
    assert transform_class("filter") is Filter
    with pytest.raises(ConfigError) as info:
        transform_class("broken", "transforms[3].type")
    assert info.value.path == "transforms[3].type"
    assert "cannot load plugin transform 'broken'" in str(info.value)


def test_discovery_in_a_fresh_interpreter(installed: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(installed), str(Path(__file__).parents[1])])}
    code = "from cdc_smt.transforms.smt import transform_class; print(transform_class('shout').__qualname__)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Shout"


def test_uninstalled_plugins_are_gone_after_refresh(site: Path) -> None:
    refresh()
    assert "shout" not in names()
    with pytest.raises(ConfigError, match="unknown transform type 'shout'"):
        transform_class("shout")
