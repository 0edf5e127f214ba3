"""The wheel a user installs: every module and schema is in it and loads from it.

Editable installs hide packaging mistakes (a package without ``__init__.py``,
data files outside ``package-data``), so this builds a real wheel from a copy
of the tree and imports ``schemas`` from a fresh venv that sees nothing else.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("transforms", "connector", "schemas")
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo")

CHECK_SCHEMAS = """
import json, sys
from cdc_smt import schemas
result = {"file": schemas.__file__, "names": schemas.names(), "loaded": {}, "avro": {}}
for name in result["names"]:
    result["loaded"][name] = isinstance(schemas.load(name), dict)
for name in sys.argv[1:]:
    result["avro"][name] = isinstance(schemas.load_avro(name), (dict, list))
print(json.dumps(result))
"""

# The lookup `cdc-smt demo` does for its default --job/--data (no third-party import needed).
CHECK_DEMO_DATA = """
import json
from cdc_smt.connector import demo_data
print(json.dumps({name: [str(path), path.is_file() and path.read_bytes().decode()]
                  for name, path in (("job", demo_data.JOB), ("data", demo_data.DATA))}))
"""
DEMO_SOURCES = {"job": "examples/jobs/shop-canal-to-debezium.yaml", "data": "examples/data/demo-shop.canal.jsonl"}


def _source_files() -> set[str]:
    """Every file of the shipped packages in the source tree, as wheel paths."""
    out = set()
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
                out.add("cdc_smt/" + path.relative_to(ROOT).as_posix())
    return out


def _copy_project(dest: Path) -> None:
    """Top-level files and the packages only: no .venv, no build residue in the checkout."""
    dest.mkdir()
    for path in ROOT.iterdir():
        if path.is_file() and path.name != "dev":
            shutil.copy2(path, dest / path.name)
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, dest / pkg, ignore=_IGNORE)


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, **kw)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def build_wheel(tmp_path: Path) -> Path:
    """A wheel built from a copy of the tree (as a release build would see it)."""
    src = tmp_path / "src"
    _copy_project(src)
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--disable-pip-version-check", "-w", str(dist)])
    (wheel,) = dist.glob("cdc_smt-*.whl")
    return wheel


def install_wheel(wheel: Path, venv: Path) -> Path:
    """A fresh venv (no system site-packages) with only the wheel installed (non-editable); its python."""
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    vpy = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    _run(
        [sys.executable, "-m", "pip", "--python", str(vpy), "install", "--no-deps", "--no-index",
         "--disable-pip-version-check", str(wheel)]
    )  # fmt: skip
    return vpy


def test_wheel_ships_every_module_and_schema_and_loads_them(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)

    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        entry_points = next(zf.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
    shipped = {n for n in names if n.startswith("cdc_smt/")}
    expected = _source_files()
    assert sorted(expected - shipped) == [], "files missing from the wheel"
    assert "cdc_smt/connector/cli.py" in shipped and "cdc_smt/connector/commands/convert.py" in shipped
    assert "cdc-smt = cdc_smt.connector.cli:main" in entry_points
    # Nothing at the top level but the namespace and the metadata: no claim on PyPI's `transforms`/`schemas`.
    assert {n.split("/", 1)[0] for n in names} - {"cdc_smt"} == {
        wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"
    }

    venv = tmp_path / "venv"
    vpy = install_wheel(wheel, venv)

    schema_names = sorted(p.name[: -len(".schema.json")] for p in (ROOT / "schemas").glob("*.schema.json"))
    avro_names = sorted(p.stem for p in (ROOT / "schemas").glob("*.avsc"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    empty = tmp_path / "cwd"
    empty.mkdir()
    proc = _run([str(vpy), "-I", "-c", CHECK_SCHEMAS, *avro_names], cwd=empty, env=env)
    result = json.loads(proc.stdout)

    assert Path(result["file"]).resolve().is_relative_to(venv.resolve()), result["file"]
    assert result["names"] == schema_names
    assert result["loaded"] == {n: True for n in schema_names}
    assert result["avro"] == {n: True for n in avro_names}

    # `cdc-smt demo` finds its job and data in the installed package, from a directory outside the repo.
    demo = json.loads(_run([str(vpy), "-I", "-c", CHECK_DEMO_DATA], cwd=empty, env=env).stdout)
    for name, source in DEMO_SOURCES.items():
        path, text = demo[name]
        assert Path(path).resolve().is_relative_to(venv.resolve()), path
        assert text == (ROOT / source).read_text(encoding="utf-8"), f"{name}: the wheel's copy differs from {source}"


def test_sources_import_through_the_cdc_smt_namespace() -> None:
    """The checkout's root is on ``sys.path`` in tests, so ``import transforms`` would work
    here and fail in an installed wheel; no source may use the bare names."""
    import re

    bare = re.compile(r"^\s*(from|import)\s+(transforms|connector|schemas)\b", re.M)
    offenders = []
    for folder in (*PACKAGES, "tests", "bench"):
        for path in (ROOT / folder).rglob("*.py"):
            if bare.search(path.read_text(encoding="utf-8")):
                offenders.append(path.relative_to(ROOT).as_posix())
    assert offenders == []
