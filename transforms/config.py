"""Chain configuration: YAML in, a validated :class:`ChainConfig` and a runnable :class:`Chain` out.

::

    source: {format: canal-json, options: {source_timezone: Asia/Shanghai}}
    sink:   {format: debezium-json}
    predicates:
      orders: {type: table_matches, pattern: 'shop\\.orders'}
    transforms:
      - {type: filter, tables: ['shop\\..*']}
      - {type: mask_field, fields: [email], mode: hash, salt_env: PII_SALT, predicate: orders}
      - {type: route, topic: 'cdc.{database}.{table}'}
    errors: {tolerance: all}

The document is checked in two steps, both before any message is read: its
structure against ``schemas/chain.schema.json`` (unknown keys, wrong types),
then every transform, predicate and codec against its declared options. Every
error is a :class:`ConfigError` whose ``path`` names the place
(``transforms[2].fields``).

This module also holds what every config document shares (the job file, whose
schema reuses the chain's, and its ``backfill`` section): one YAML reader
(:func:`read_yaml_file`) and one explainer of JSON Schema errors
(:func:`check_document`), so a mistake reads the same wherever it is made.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import yaml

from cdc_smt import schemas
from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.formats import registry as format_registry
from cdc_smt.transforms.options import unknown_name_message
from cdc_smt.transforms.predicates import Predicate, build_predicates
from cdc_smt.transforms.smt import transform_class
from cdc_smt.transforms.smt.base import Transform, check_known_columns


@dataclass(frozen=True)
class ChainConfig:
    """A validated chain document (transforms still as specs: built by :func:`build_chain`)."""

    source_format: str
    sink_format: str
    source_options: dict[str, Any] = field(default_factory=dict)
    sink_options: dict[str, Any] = field(default_factory=dict)
    transforms: list[dict[str, Any]] = field(default_factory=list)
    predicates: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors_tolerance: str = "none"
    on_missing: str | None = None


# -- reading: the one YAML reader of chain, job and backfill files ---------------


def read_yaml_file(path: str | os.PathLike[str], what: str) -> Any:
    """The parsed YAML of a file; errors name the file (and the line and column of bad YAML)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{what} not found: {path}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a text file (a {what} is UTF-8 YAML)") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}") from None
    return parse_yaml(text, str(path))


def parse_yaml(text: str, origin: str | None = None) -> Any:
    """``text`` parsed; a syntax error names ``origin`` (a file name), the line and the column."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{origin + ': ' if origin else ''}not valid YAML{where}: {problem}") from None
    except RecursionError:  # PyYAML's composer recurses once per nesting level
        raise ConfigError(f"{origin + ': ' if origin else ''}not valid YAML: nested too deeply") from None
    except ValueError as exc:  # a scalar PyYAML cannot construct (an integer past 4300 digits)
        raise ConfigError(f"{origin + ': ' if origin else ''}not valid YAML: {exc}") from None


def _read(source: str | Path | Mapping[str, Any]) -> Any:
    """The parsed document: a mapping as is, a ``Path`` or file name read, other text parsed as YAML."""
    if isinstance(source, Mapping):
        return dict(source)
    if isinstance(source, Path) or (
        "\n" not in source and (source.endswith((".yaml", ".yml", ".json")) or Path(source).is_file())
    ):
        return read_yaml_file(source, "chain file")
    return parse_yaml(source)


def yaml_path(parts: Iterable[Any], prefix: str = "") -> str:
    """``["transforms", 2, "fields"]`` -> ``transforms[2].fields``."""
    out = prefix
    for p in parts:
        if isinstance(p, int):
            out += f"[{p}]"
        else:
            out += f".{p}" if out else str(p)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# -- explaining: the one explainer of JSON Schema errors in config documents ------

CHAIN_SCHEMA = "urn:cdc-smt:schema:chain"
_UNKNOWN = ("additionalProperties", "unevaluatedProperties")


def check_document(doc: Any, schema: str, prefix: str = "") -> None:
    """Raise the most relevant violation of ``schema`` by ``doc`` as a :class:`ConfigError`.

    ``schema`` is a shipped schema's ``$id``, optionally with a fragment
    (``urn:cdc-smt:schema:job#/$defs/backfill``); ``prefix`` is where ``doc``
    sits in its file. The error names the YAML path and says what to write.
    """
    error = _pick(list(_validator(schema).iter_errors(doc)))
    if error is not None:
        raise _explain(error, prefix)


@cache
def _validator(uri: str) -> Any:
    import jsonschema

    cls = jsonschema.Draft202012Validator
    return cls({"$ref": uri}, registry=schemas.registry(), format_checker=cls.FORMAT_CHECKER)


def _pick(errors: list[Any]) -> Any:
    """The error to report: unknown keys first (usually typos behind the rest), then
    jsonschema's best match; inside anyOf/oneOf, the branch of the value's own type
    (unless the schema words that failure itself)."""
    import jsonschema

    if not errors:
        return None
    first = [e for e in errors if _unknown_keys(e)]
    error = jsonschema.exceptions.best_match(first or errors)
    while error.validator in ("anyOf", "oneOf") and error.context and not _worded(error):
        same_type = [e for e in error.context if not _type_only(e)]
        if not same_type:
            break
        inner = [e for e in same_type if _unknown_keys(e)]
        error = jsonschema.exceptions.best_match(inner or same_type)
    return error


def _worded(error: Any) -> str | None:
    """The schema's own wording for this failure (``errorMessage: {keyword: text}``)."""
    words = error.schema.get("errorMessage") if isinstance(error.schema, Mapping) else None
    return words.get(error.validator) if isinstance(words, Mapping) else None


def _type_only(error: Any) -> bool:
    """A branch that failed on the value's type (e.g. the string branch for a mapping)."""
    return error.validator == "type" or (error.validator == "pattern" and not isinstance(error.instance, str))


def _unknown_keys(error: Any) -> list[str]:
    """Keys an additional/unevaluatedProperties error is about, in document order."""
    if error.validator not in _UNKNOWN or error.validator_value is not False or not isinstance(error.instance, Mapping):
        return []
    known = set(_known_keys(error.schema))
    return [str(k) for k in error.instance if k not in known]


def _explain(error: Any, prefix: str) -> ConfigError:
    """One jsonschema error in plain words, at its YAML path. Values of ``writeOnly``
    (secret) settings are never shown."""
    path = yaml_path(error.absolute_path, prefix)
    kind, value, schema = error.validator, error.instance, error.schema
    secret = isinstance(schema, Mapping) and schema.get("writeOnly") is True
    worded = _worded(error)
    if worded is not None:
        return ConfigError(worded.replace("{value}", "***" if secret else repr(value)), path or None)
    unknown = _unknown_keys(error)
    if unknown:
        return ConfigError(unknown_name_message("key", unknown[0], _known_keys(schema)), _join(path, unknown[0]))
    if kind == "required" and isinstance(value, Mapping):
        missing = [k for k in error.validator_value if k not in value]
        return ConfigError("missing required key", _join(path, missing[0] if missing else ""))
    if kind in ("anyOf", "oneOf"):
        wanted = sorted({_article(t) for t in _branch_types(error.validator_value)})
        if wanted:
            return ConfigError(f"expected {' or '.join(wanted)}, got {_yaml_type(value)}", path or None)
    if kind == "type":
        want = error.validator_value
        want = " or ".join(map(_article, want)) if isinstance(want, list) else _article(want)
        return ConfigError(f"expected {want}, got {_yaml_type(value)}", path or None)
    if secret:
        return ConfigError("invalid value (not shown: the setting is secret)", path or None)
    if kind == "enum":
        choices = ", ".join(dict.fromkeys(map(str, error.validator_value)))
        return ConfigError(f"must be one of {choices}; got {value!r}", path or None)
    if kind == "pattern" and isinstance(value, str):
        return ConfigError(f"{value!r} is not a valid name here", path or None)
    return ConfigError(error.message, path or None)


@lru_cache(maxsize=1)
def _homes() -> dict[int, str]:
    """``id()`` of every node of the shipped schemas -> its document's ``$id``: where a
    local ``$ref`` found in an error's subschema is resolved."""
    out: dict[int, str] = {}
    for name in schemas.names():
        doc = schemas.load(name)
        if "$id" not in doc:
            continue
        stack: list[Any] = [doc]
        while stack:
            node = stack.pop()
            if isinstance(node, Mapping):
                out[id(node)] = doc["$id"]
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
    return out


def _applied(schema: Any) -> list[Mapping[str, Any]]:
    """``schema`` and the subschemas it applies to the same value through ``$ref`` and ``allOf``."""
    from referencing.exceptions import Unresolvable

    out: list[Mapping[str, Any]] = []
    seen: set[int] = set()
    resolver = schemas.registry().resolver(base_uri=_homes().get(id(schema), CHAIN_SCHEMA))

    def walk(s: Any, res: Any) -> None:
        if not isinstance(s, Mapping) or id(s) in seen:
            return
        seen.add(id(s))
        out.append(s)
        ref = s.get("$ref")
        if isinstance(ref, str):
            try:
                resolved = res.lookup(ref)
            except Unresolvable:
                pass
            else:
                walk(resolved.contents, resolved.resolver)
        for sub in s.get("allOf", ()):
            walk(sub, res)

    walk(schema, resolver)
    return out


def _known_keys(schema: Any) -> list[str]:
    """Property names a (sub)schema allows, ``$ref``s followed."""
    return sorted({k for s in _applied(schema) for k in s.get("properties", {})})


def _branch_types(branches: list[Any]) -> set[str]:
    """The JSON types anyOf/oneOf ``branches`` accept."""
    out: set[str] = set()
    for branch in branches:
        for s in _applied(branch):
            t = s.get("type")
            if isinstance(t, str):
                out.add(t)
                break
    return out


def _article(word: str) -> str:
    return {
        "object": "a mapping",
        "array": "a list",
        "string": "a string",
        "boolean": "true or false",
        "integer": "an integer",
        "number": "a number",
    }.get(word, word)


def _yaml_type(value: Any) -> str:
    if value is None:
        return "null"
    return {
        dict: "a mapping",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
    }.get(type(value), type(value).__name__)


def _endpoint(value: Any) -> tuple[str, dict[str, Any]]:
    if isinstance(value, str):
        return value, {}
    return value["format"], dict(value.get("options") or {})


def load_config(source: str | Path | Mapping[str, Any], *, path: str = "") -> ChainConfig:
    """Read and structurally validate a chain (a file, YAML text or a parsed mapping).

    ``path`` prefixes every error path, for chains embedded in a larger document.
    Option values are checked by :func:`build_chain` (or :func:`check_config`).
    """
    doc = _read(source)
    if not isinstance(doc, Mapping):
        raise ConfigError(
            f"a chain config is a mapping with source, sink and transforms; got {_yaml_type(doc)}", path or None
        )
    check_document(doc, CHAIN_SCHEMA, path)
    source_format, source_options = _endpoint(doc["source"])
    sink_format, sink_options = _endpoint(doc["sink"])
    return ChainConfig(
        source_format=source_format,
        sink_format=sink_format,
        source_options=source_options,
        sink_options=sink_options,
        transforms=[dict(t) for t in doc.get("transforms") or []],
        predicates={k: dict(v) for k, v in (doc.get("predicates") or {}).items()},
        errors_tolerance=(doc.get("errors") or {}).get("tolerance", "none"),
        on_missing=doc.get("on_missing"),
    )


# -- building ------------------------------------------------------------------


def build_transforms(
    specs: Iterable[Mapping[str, Any]],
    path: str = "transforms",
    *,
    predicates: Mapping[str, Any] | None = None,
    predicates_path: str = "predicates",
    on_missing: str | None = None,
) -> list[Transform]:
    """Transform instances from their specs, options validated; errors name ``path[i].option``.

    ``predicates`` are the named predicates (specs or built :class:`Predicate` objects)
    that ``predicate: NAME`` refers to. ``on_missing`` is the chain's default for
    transforms that name columns and do not set their own.
    """
    named: dict[str, Predicate] = {}
    if predicates:
        specs_only = {k: v for k, v in predicates.items() if not isinstance(v, Predicate)}
        named = {k: v for k, v in predicates.items() if isinstance(v, Predicate)}
        named.update(build_predicates(specs_only, path=predicates_path))
    out: list[Transform] = []
    for i, spec in enumerate(specs):
        p = f"{path}[{i}]"
        if not isinstance(spec, Mapping):
            raise ConfigError(f"expected a mapping with a 'type', got {_yaml_type(spec)}", p)
        opts = dict(spec)
        if "type" not in opts:
            raise ConfigError("missing required key", f"{p}.type")
        cls = transform_class(opts.pop("type"), f"{p}.type")
        if on_missing is not None and getattr(cls, "names_columns", False) and "on_missing" not in opts:
            opts["on_missing"] = cls.on_missing_default(on_missing)
        out.append(cls(opts, path=p, predicates=named))
    return out


def _codec(kind: str, fmt: str, options: Mapping[str, Any], catalog: Any) -> Any:
    """The source's decoder or the sink's encoder, checked to work that way round."""
    known = format_registry()
    if fmt not in known:
        raise ConfigError(f"unknown format {fmt!r} (known: {', '.join(known) or 'none installed'})", f"{kind}.format")
    decode = kind == "source"
    if not (known[fmt].can_decode if decode else known[fmt].can_encode):
        raise ConfigError(f"format {fmt!r} cannot be {'decoded' if decode else 'encoded'}", f"{kind}.format")
    return get_codec(fmt, dict(options), path=f"{kind}.options", catalog=catalog)


def build_chain(config: ChainConfig, *, catalog: Any = None) -> Chain:
    """The runnable chain: codecs and transforms built (and so validated) from ``config``."""
    decoder = _codec("source", config.source_format, config.source_options, catalog)
    encoder = _codec("sink", config.sink_format, config.sink_options, catalog)
    transforms = build_transforms(config.transforms, predicates=config.predicates, on_missing=config.on_missing)
    check_known_columns(transforms, catalog)
    return Chain(decoder, encoder, transforms, tolerance=config.errors_tolerance)


def check_config(config: ChainConfig) -> None:
    """Validate everything :func:`build_chain` would, without keeping the result."""
    build_chain(config)


__all__ = [
    "ChainConfig",
    "build_chain",
    "build_transforms",
    "check_config",
    "check_document",
    "load_config",
    "parse_yaml",
    "read_yaml_file",
    "yaml_path",
]
