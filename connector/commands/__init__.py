"""``cdc-smt`` subcommands: one module each, discovered by ``connector.cli``.

A command module defines ``register(subparsers) -> None``, which adds its
parser with ``subparsers.add_parser(...)`` and sets ``func=handler`` where
``handler(args) -> int`` returns the exit code. Adding a command is adding a
module; modules whose name starts with ``_`` are helpers, not commands. A
command that takes arguments it does not declare (to pass them on) sets
``accepts_extra_args=True`` with ``set_defaults``; otherwise unknown
arguments are a usage error.

Import heavy or optional dependencies (Faust, Spark) inside the handler, not at
module level, so ``cdc-smt --help`` stays fast and works without the extras.

Shared conventions: errors the user can fix raise
:class:`transforms.errors.CdcSmtError` (printed as ``cdc-smt: error: ...``,
exit 2); diagnostics go to stderr, data to stdout.
"""

from __future__ import annotations

from collections.abc import Iterable

from cdc_smt.transforms.errors import ConfigError


def parse_assignments(items: Iterable[str] | None, flag: str) -> dict[str, str]:
    """``["a=1", "b=x=y"]`` -> ``{"a": "1", "b": "x=y"}``; a later KEY wins.

    Values stay strings: the declared option types coerce them.
    """
    out: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"{flag} expects KEY=VALUE, got {item!r}")
        out[key] = value
    return out


__all__ = ["parse_assignments"]
