"""JSON Schemas (one per format, plus the config schemas) and Avro schemas.

Shipped inside the wheel and read through ``importlib.resources``, so they are
found from any installation, editable or not.
"""

from __future__ import annotations

import json
from functools import cache, lru_cache
from importlib import resources
from typing import Any


def names() -> list[str]:
    """Schema names available (``canal-json``, ``chain``, ``job``, ...)."""
    out = []
    for entry in resources.files(__name__).iterdir():
        if entry.name.endswith(".schema.json"):
            out.append(entry.name[: -len(".schema.json")])
    return sorted(out)


@cache
def load(name: str) -> dict[str, Any]:
    """The JSON Schema ``schemas/<name>.schema.json`` as a dict."""
    return json.loads(resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8"))


@cache
def load_avro(name: str) -> dict[str, Any]:
    """The Avro schema ``schemas/<name>.avsc`` as a dict."""
    return json.loads(resources.files(__name__).joinpath(f"{name}.avsc").read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def registry():
    """A ``referencing`` registry of every shipped schema under its ``$id``,
    so one schema can ``$ref`` another (``urn:cdc-smt:schema:chain#/$defs/transforms``)."""
    from referencing import Registry, Resource

    resources_ = []
    for name in names():
        schema = load(name)
        if "$id" in schema:
            resources_.append((schema["$id"], Resource.from_contents(schema)))
    return Registry().with_resources(resources_)


@cache
def validator(name: str):
    """A cached ``jsonschema`` validator for ``schemas/<name>.schema.json``."""
    import jsonschema

    schema = load(name)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, registry=registry(), format_checker=cls.FORMAT_CHECKER)
