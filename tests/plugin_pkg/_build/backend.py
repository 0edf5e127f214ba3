"""A minimal PEP 517 backend (standard library only) that builds this plugin's wheel.

Enough for ``pip install`` of a pure-Python package: the package directory, and a
``.dist-info`` with METADATA, WHEEL, entry_points.txt (from ``pyproject.toml``)
and RECORD.
"""

from __future__ import annotations

import base64
import hashlib
import os
import tomllib
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _project() -> dict:
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def _files() -> tuple[str, dict[str, bytes]]:
    project = _project()
    dist = f"{project['name'].replace('-', '_')}-{project['version']}"
    files: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(ROOT):
        dirnames[:] = [d for d in dirnames if not d.startswith(("_", ".")) or d == "__init__"]
        for name in filenames:
            if name.endswith(".py"):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, ROOT).replace(os.sep, "/")
                with open(full, "rb") as f:
                    files[rel] = f.read()
    meta = f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    if project.get("description"):
        meta += f"Summary: {project['description']}\n"
    files[f"{dist}.dist-info/METADATA"] = meta.encode()
    files[f"{dist}.dist-info/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: plugin_pkg backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    groups = project.get("entry-points", {})
    text = "".join(f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n" for g, eps in groups.items())
    files[f"{dist}.dist-info/entry_points.txt"] = text.encode()
    return dist, files


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(wheel_directory: str, config_settings: dict | None = None, metadata_directory: str | None = None) -> str:
    dist, files = _files()
    name = f"{dist}-py3-none-any.whl"
    record = [f"{path},{_digest(data)},{len(data)}" for path, data in files.items()]
    record.append(f"{dist}.dist-info/RECORD,,")
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            z.writestr(path, data)
        z.writestr(f"{dist}.dist-info/RECORD", "\n".join(record) + "\n")
    return name


def get_requires_for_build_wheel(config_settings: dict | None = None) -> list[str]:
    return []
