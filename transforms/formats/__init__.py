"""Format registry: every module in this package defines one codec class.

Codecs are discovered by module (``transforms/formats/<name>.py``), so adding a
format is adding a file; nothing else needs editing.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.formats.base import Capabilities, Codec, JsonCodec

_NOT_FORMATS = {"base"}


@lru_cache(maxsize=1)
def registry() -> dict[str, type[Codec]]:
    """Format name -> codec class, discovered once."""
    found: dict[str, type[Codec]] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name in _NOT_FORMATS or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Codec) and obj.name and obj.__module__ == module.__name__:
                found[obj.name] = obj
    return dict(sorted(found.items()))


def codec_class(name: str) -> type[Codec]:
    try:
        return registry()[name]
    except KeyError:
        raise ConfigError(f"unknown format {name!r} (known: {', '.join(registry())})") from None


def get_codec(name: str, options: Mapping[str, Any] | None = None, *, path: str = "", catalog: Any = None) -> Codec:
    """A configured codec instance for one stream."""
    return codec_class(name)(options, path=path, catalog=catalog)


__all__ = ["Capabilities", "Codec", "JsonCodec", "codec_class", "get_codec", "registry"]
