"""Reading ``../shared/corpus`` (real messages from real systems) in tests.

The corpus is never copied into the project. Tests that need it use the
``corpus`` fixture, which skips with a reason when it is absent. Files come as
JSON Lines, single JSON documents (possibly pretty-printed), ``.jsonc`` with
``//`` comments, or with an Apache license ``/* ... */`` header.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]


def corpus_dir() -> Path | None:
    """``$CDC_SMT_CORPUS``, else ``../shared/corpus`` beside the checkout."""
    env = os.environ.get("CDC_SMT_CORPUS")
    path = Path(env) if env else ROOT.parent / "shared" / "corpus"
    return path if path.is_dir() else None


_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.DOTALL)


def strip_comments(text: str) -> str:
    """Remove ``/* */`` blocks and ``//`` line comments outside JSON strings."""
    text = _BLOCK_COMMENT.sub("", text)
    out_lines = []
    for line in text.splitlines():
        in_str = False
        esc = False
        cut = None
        for i, ch in enumerate(line):
            if esc:
                esc = False
                continue
            if ch == "\\":
                esc = True
            elif ch == '"':
                in_str = not in_str
            elif ch == "/" and not in_str and line[i + 1 : i + 2] == "/":
                cut = i
                break
        out_lines.append(line if cut is None else line[:cut])
    return "\n".join(out_lines)


def read_messages(path: Path) -> list[bytes]:
    """The messages of one corpus file, each as compact JSON bytes."""
    text = strip_comments(path.read_text(encoding="utf-8")).strip()
    if not text:
        return []
    try:  # one document (possibly pretty-printed)
        return [orjson.dumps(orjson.loads(text))]
    except orjson.JSONDecodeError:
        pass
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line:
            out.append(orjson.dumps(orjson.loads(line)))
    return out


def read_expected(path: Path) -> list[str]:
    """Lines of an ``.expected.txt`` file."""
    return [l for l in path.read_text(encoding="utf-8").splitlines() if l.strip()]
