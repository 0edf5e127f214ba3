"""Transform registry: built-ins by module, plugins by entry point, or a dotted class path.

A chain's ``type: filter`` names a built-in (every module here defines its
transform classes; adding one is adding a module), a plugin registered by a
third-party distribution under the entry-point group ``cdc_smt.transforms``::

    [project.entry-points."cdc_smt.transforms"]
    shout = "my_package.transforms:Shout"

or a class by its import path (``my_package.transforms.Shout`` or
``my_package.transforms:Shout``). Built-in names win over plugin names.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from importlib import metadata
from typing import Any

from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.smt.base import Transform

ENTRY_POINT_GROUP = "cdc_smt.transforms"
_NOT_TRANSFORMS = {"base"}


@lru_cache(maxsize=1)
def builtins() -> dict[str, type[Transform]]:
    """Built-in transform name -> class, discovered once from this package's modules."""
    found: dict[str, type[Transform]] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name in _NOT_TRANSFORMS or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, Transform)
                and obj.__module__ == module.__name__
                and obj.__dict__.get("name")
            ):
                if obj.name in found:
                    raise RuntimeError(f"transform name {obj.name!r} defined twice ({found[obj.name]} and {obj})")
                found[obj.name] = obj
    return dict(sorted(found.items()))


@lru_cache(maxsize=1)
def plugins() -> dict[str, metadata.EntryPoint]:
    """Plugin transform name -> entry point (loaded only when a chain uses it)."""
    return {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def refresh() -> None:
    """Forget discovered plugins (after installing or removing one at run time)."""
    importlib.invalidate_caches()
    plugins.cache_clear()
    from cdc_smt.transforms import predicates

    predicates.refresh()


def names() -> list[str]:
    """Every transform name a chain can use (built-ins and installed plugins)."""
    return sorted(set(builtins()) | set(plugins()))


def import_dotted(dotted: str, path: str) -> Any:
    """The object at ``package.module.Name`` or ``package.module:Name``."""
    module_name, sep, attr = dotted.partition(":")
    if not sep:
        module_name, _, attr = dotted.rpartition(".")
    if not module_name or not attr:
        raise ConfigError(f"{dotted!r} is not a dotted class path (package.module.Class)", path)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import {module_name!r} for {dotted!r}: {exc}", path) from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"module {module_name!r} has no {attr!r}", path) from None
    return obj


def transform_class(type_name: Any, path: str = "type") -> type[Transform]:
    """The class for a transform ``type``; errors name ``path`` (``transforms[2].type``)."""
    if not isinstance(type_name, str) or not type_name:
        raise ConfigError(f"transform type must be a non-empty string, got {type_name!r}", path)
    cls: Any = builtins().get(type_name)
    if cls is None:
        ep = plugins().get(type_name)
        if ep is not None:
            try:
                cls = ep.load()
            except Exception as exc:  # noqa: BLE001 - a broken plugin is a config problem
                raise ConfigError(
                    f"cannot load plugin transform {type_name!r} ({ep.value}): {type(exc).__name__}: {exc}", path
                ) from None
        elif "." in type_name or ":" in type_name:
            cls = import_dotted(type_name, path)
        else:
            raise ConfigError(f"unknown transform type {type_name!r} (known: {', '.join(names())})", path)
    if not (isinstance(cls, type) and issubclass(cls, Transform)):
        raise ConfigError(f"{type_name!r} is not a transform (subclass transforms.smt.base.Transform)", path)
    return cls


__all__ = [
    "ENTRY_POINT_GROUP",
    "Transform",
    "builtins",
    "import_dotted",
    "names",
    "plugins",
    "refresh",
    "transform_class",
]
