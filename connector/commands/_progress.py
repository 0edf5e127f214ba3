"""A progress line on a terminal's stderr for long runs (``convert``).

Records, rate, bytes and, when the input's size is known, an ETA, redrawn in
place at most a few times a second. Nothing is drawn when stderr is not a
terminal: piped or logged output stays exactly the summary.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

#: Seconds between redraws: often enough to look alive, rarely enough to cost nothing.
REFRESH_SECONDS = 0.25
_CLEAR = "\r\x1b[K"


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def human_seconds(s: float) -> str:
    s = int(s + 0.5)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Progress:
    """Counts records and bytes; redraws one status line on ``out``.

    ``total_bytes`` is the input's size when known (a regular file), for the ETA.
    """

    def __init__(
        self,
        out: TextIO,
        total_bytes: int | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        refresh: float = REFRESH_SECONDS,
    ) -> None:
        self.out = out
        self.total_bytes = total_bytes
        self.clock = clock
        self.refresh = refresh
        self.started = clock()
        self._next_draw = self.started + refresh
        self.records = 0
        self.bytes = 0
        self._drawn = False

    @classmethod
    def for_terminal(cls, out: TextIO = sys.stderr, total_bytes: int | None = None) -> Progress | None:
        """A progress line when ``out`` is a terminal, else ``None`` (nothing extra in pipes and logs)."""
        try:
            tty = out.isatty()
        except (AttributeError, ValueError):
            tty = False
        return cls(out, total_bytes) if tty else None

    def advance(self, nbytes: int) -> None:
        """One record of ``nbytes`` read; redraw when the refresh interval has passed."""
        self.records += 1
        self.bytes += nbytes
        now = self.clock()
        if now >= self._next_draw:
            self._next_draw = now + self.refresh
            self.draw(now)

    def line(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-9)
        rate = self.records / elapsed
        text = f"{self.records:,} records, {rate:,.0f}/s, {human_bytes(self.bytes)}"
        if self.total_bytes:
            done = min(self.bytes / self.total_bytes, 1.0)
            text += f" of {human_bytes(self.total_bytes)} ({done:.0%})"
            byte_rate = self.bytes / elapsed
            if byte_rate > 0 and done < 1.0:
                text += f", ETA {human_seconds((self.total_bytes - self.bytes) / byte_rate)}"
        return text

    def draw(self, now: float | None = None) -> None:
        self.out.write(_CLEAR + self.line(self.clock() if now is None else now))
        self.out.flush()
        self._drawn = True

    def clear(self) -> None:
        """Erase the status line (before an error line or the summary is printed)."""
        if self._drawn:
            self.out.write(_CLEAR)
            self.out.flush()
            self._drawn = False

    def filter(self, record: object) -> bool:
        """As a logging filter on the stderr handlers: erase the line before a warning is printed."""
        self.clear()
        return True


__all__ = ["Progress", "REFRESH_SECONDS", "human_bytes", "human_seconds"]
