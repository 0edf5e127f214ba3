"""Errors with enough context to act on: which record, which stage, why."""

from __future__ import annotations


class CdcSmtError(Exception):
    """Base of every error cdc-smt raises on purpose."""


class ConfigError(CdcSmtError):
    """A bad option or config value. ``path`` names where (``transforms[2].fields``)."""

    def __init__(self, message: str, path: str | None = None) -> None:
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class DecodeError(CdcSmtError):
    """A message that cannot be decoded in the configured format."""

    def __init__(self, reason: str, *, format: str | None = None) -> None:
        self.reason = reason
        self.format = format
        super().__init__(f"{format}: {reason}" if format else reason)


class EncodeError(CdcSmtError):
    """An event the target format cannot carry (and no documented rule applies)."""

    def __init__(self, reason: str, *, format: str | None = None) -> None:
        self.reason = reason
        self.format = format
        super().__init__(f"{format}: {reason}" if format else reason)


class TransformError(CdcSmtError):
    """A transform failed on one event."""
