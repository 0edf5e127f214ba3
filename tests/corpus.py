"""Reading ``../shared/corpus`` (real messages from real systems) in tests.

The corpus is never copied into the project. Tests that need it use the
``corpus`` fixture, which skips with a reason when it is absent. Files come as
JSON Lines, single JSON documents (possibly pretty-printed), ``.jsonc`` with
``//`` comments, or with an Apache license ``/* ... */`` header.
"""

from __future__ import annotations

import os
import re
from decimal import Decimal
from pathlib import Path

import msgspec

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


# Numbers are kept exact: a JSON number beyond double precision (a DECIMAL(40,3)
# written as a bare number) must reach the codec with all its digits.
_DECODER = msgspec.json.Decoder(float_hook=Decimal)
_ENCODER = msgspec.json.Encoder(decimal_format="number")


def read_messages(path: Path) -> list[bytes]:
    """The messages of one corpus file, each as JSON bytes.

    Each message is compacted (comments and whitespace dropped) with its
    numbers' digits kept.
    """
    text = strip_comments(path.read_text(encoding="utf-8")).strip()
    if not text:
        return []
    try:  # one document (possibly pretty-printed)
        return [_ENCODER.encode(_DECODER.decode(text))]
    except msgspec.DecodeError:
        pass
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line:
            out.append(_ENCODER.encode(_DECODER.decode(line)))
    return out


def read_expected(path: Path) -> list[str]:
    """Lines of an ``.expected.txt`` file."""
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
