"""Where in a line a JSON parser stopped, said once.

A JSON parser only ever sees one line of a JSON Lines file, so its own "line
1" is noise next to the file's line number; its column is what helps.
"""

from __future__ import annotations

import re

#: orjson's ``: line 1 column C (char N)`` and msgspec's `` (byte N)``.
_ORJSON = re.compile(r": line 1 column (\d+) \(char \d+\)")
_MSGSPEC = re.compile(r" \(byte (\d+)\)")


def split_column(message: str) -> tuple[str, int | None]:
    """``message`` without the parser's position, and the 1-based column (``None`` if none given)."""
    m = _ORJSON.search(message)
    if m:
        return message[: m.start()] + message[m.end() :], int(m[1])
    m = _MSGSPEC.search(message)
    if m:
        return message[: m.start()] + message[m.end() :], int(m[1]) + 1
    return message, None


__all__ = ["split_column"]
