"""Declared options: one place per codec or transform for name, type, default, doc.

Kafka Connect's ``ConfigDef`` in miniature. Declarations drive validation
(errors name the option path), ``cdc-smt formats`` and the README reference.
"""

from __future__ import annotations

import difflib
import zoneinfo
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cdc_smt.transforms.errors import ConfigError

_MISSING = object()


@dataclass(frozen=True, slots=True)
class Option:
    """One option. ``type`` is a Python type used to coerce and check values
    (``bool``/``int``/``float``/``str``/``list``/``dict``); ``choices`` restricts
    strings; ``check`` raises ``ValueError`` for anything else that is wrong."""

    name: str
    type: type
    default: Any = _MISSING
    doc: str = ""
    choices: tuple[Any, ...] | None = None
    check: Callable[[Any], Any] | None = None

    @property
    def required(self) -> bool:
        return self.default is _MISSING

    def describe_default(self) -> str:
        return "(required)" if self.required else repr(self.default)

    def coerce(self, value: Any, path: str) -> Any:
        """Coerce a YAML/CLI value (CLI values arrive as strings) and validate it."""
        t = self.type
        try:
            if t is bool and isinstance(value, str):
                low = value.strip().lower()
                if low not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError(f"expected true or false, got {value!r}")
                value = low in ("true", "1", "yes")
            elif t in (int, float) and isinstance(value, str):
                value = t(value)
            elif t is list and isinstance(value, str):
                value = [v.strip() for v in value.split(",") if v.strip()]
            elif t is int and isinstance(value, bool):
                raise ValueError("expected an integer")
            if t is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if value is None and self.default is not None:
                # ``null`` would reach the codec as a value of no declared type, never the default
                # (a native plan refused it with a TypeError; the Python path read it as false)
                hint = "" if self.required else f" (leave the option out for its default, {self.default!r})"
                raise ValueError(f"expected {t.__name__}, got null{hint}")
            if value is not None and not isinstance(value, t):
                raise ValueError(f"expected {t.__name__}, got {type(value).__name__} {value!r}")
            if self.choices is not None and value not in self.choices:
                raise ValueError(f"must be one of {', '.join(map(str, self.choices))}; got {value!r}")
            if self.check is not None and value is not None:
                checked = self.check(value)
                if checked is not None:
                    value = checked
        except (ValueError, TypeError) as exc:
            raise ConfigError(str(exc), path) from None
        return value


def check_timezone(name: str) -> str:
    """Accept IANA zone names (``Asia/Shanghai``) and ``UTC``; reject typos."""
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r} (use an IANA name such as Asia/Shanghai)") from None
    return name


class Options:
    """Validated option values, read as attributes (``opts.source_timezone``).

    ``explicit`` holds the names the user actually set, so callers can tell a
    default from a choice (the time-zone warning relies on it).
    """

    __slots__ = ("_values", "explicit")

    def __init__(self, values: dict[str, Any], explicit: frozenset[str]) -> None:
        self._values = values
        self.explicit = explicit

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def __repr__(self) -> str:
        return f"Options({self._values!r})"


def unknown_name_message(what: str, name: str, known: Iterable[str]) -> str:
    """``unknown option 'feilds' (did you mean 'fields'?; known: a, b)``."""
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"did you mean {close[0]!r}?; " if close else ""
    return f"unknown {what} {name!r} ({hint}known: {', '.join(known) or 'none'})"


def resolve(declared: Iterable[Option], given: Mapping[str, Any], path: str = "") -> Options:
    """Validate ``given`` against ``declared``; unknown names are errors."""
    decl = {o.name: o for o in declared}
    prefix = f"{path}." if path else ""
    unknown = sorted(set(given) - set(decl))
    if unknown:
        raise ConfigError(unknown_name_message("option", unknown[0], decl), f"{prefix}{unknown[0]}")
    values: dict[str, Any] = {}
    for name, opt in decl.items():
        if name in given:
            values[name] = opt.coerce(given[name], f"{prefix}{name}")
        elif opt.required:
            raise ConfigError("missing required option", f"{prefix}{name}")
        else:
            values[name] = opt.default
    return Options(values, frozenset(given))


def merge(*groups: Iterable[Option]) -> tuple[Option, ...]:
    """Concatenate option groups; a later declaration of a name overrides an earlier one."""
    out: dict[str, Option] = {}
    for group in groups:
        for o in group:
            out[o.name] = o
    return tuple(out.values())
