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
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from cdc_smt import schemas
from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.formats import registry as format_registry
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


# -- reading -----------------------------------------------------------------


def _read(source: str | Path | Mapping[str, Any]) -> Any:
    """The parsed document: a mapping as is, a ``Path`` or file name read, other text parsed as YAML."""
    if isinstance(source, Mapping):
        return dict(source)
    text: str
    if isinstance(source, Path) or (
        "\n" not in source and (source.endswith((".yaml", ".yml", ".json")) or Path(source).is_file())
    ):
        p = Path(source)
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"chain config {str(p)!r} not found") from None
        except OSError as exc:
            raise ConfigError(f"cannot read chain config {str(p)!r}: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"chain config {str(p)!r} is not UTF-8 text (byte {exc.start})") from None
    else:
        text = source
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"invalid YAML: {where}{problem}") from None
    except RecursionError:  # PyYAML's composer recurses once per nesting level
        raise ConfigError("invalid YAML: nested too deeply") from None
    except ValueError as exc:  # a scalar PyYAML cannot construct (an integer past 4300 digits)
        raise ConfigError(f"invalid YAML: {exc}") from None


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


_UNEXPECTED = re.compile(r"\('([^']+)' was unexpected\)|\(('[^)]+) were unexpected\)")


def _schema_error(doc: Any, prefix: str) -> ConfigError | None:
    """The most relevant JSON Schema violation as a ConfigError naming its YAML path, or None."""

    validator = schemas.validator("chain")
    error = _pick(list(validator.iter_errors(doc)))
    if error is None:
        return None
    path = yaml_path(error.absolute_path, prefix)
    kind = error.validator
    if kind in ("anyOf", "oneOf"):
        wanted = sorted({_article(t) for t in _branch_types(error.validator_value, validator.schema)})
        return ConfigError(f"expected {' or '.join(wanted)}, got {_yaml_type(error.instance)}", path or None)
    if kind in ("additionalProperties", "unevaluatedProperties"):
        m = _UNEXPECTED.search(error.message)
        name = (m.group(1) or m.group(2).split(",")[0].strip(" '")) if m else None
        if name is not None:
            known = _known_keys(error.schema, validator.schema)
            hint = f" (known: {', '.join(known)})" if known else ""
            return ConfigError(f"unknown key {name!r}{hint}", _join(path, name))
    if kind == "required":
        m = re.match(r"'([^']+)' is a required property", error.message)
        if m:
            return ConfigError("missing required key", _join(path, m.group(1)))
    if kind == "enum":
        return ConfigError(
            f"must be one of {', '.join(map(str, error.validator_value))}; got {error.instance!r}", path or None
        )
    if kind == "type":
        want = error.validator_value
        want = " or ".join(want) if isinstance(want, list) else want
        return ConfigError(f"expected {_article(want)}, got {_yaml_type(error.instance)}", path or None)
    if kind == "pattern" and isinstance(error.instance, str):
        if error.schema is validator.schema["$defs"]["format"]:
            return ConfigError(f"{error.instance!r} is not a format name (see: cdc-smt formats)", path or None)
        return ConfigError(f"{error.instance!r} is not a valid name here", path or None)
    return ConfigError(error.message, path or None)


_FIRST = ("additionalProperties", "unevaluatedProperties")


def _pick(errors: list[Any]) -> Any:
    """The error to report: unknown keys first (usually typos behind the rest), then
    jsonschema's best match; inside anyOf, the branch of the value's own type."""
    import jsonschema

    if not errors:
        return None
    first = [e for e in errors if e.validator in _FIRST]
    error = jsonschema.exceptions.best_match(first or errors)
    while error.validator in ("anyOf", "oneOf") and error.context:
        same_type = [e for e in error.context if e.validator != "type" and not _type_only(e)]
        if not same_type:
            break
        inner = [e for e in same_type if e.validator in _FIRST]
        error = jsonschema.exceptions.best_match(inner or same_type)
    return error


def _type_only(error: Any) -> bool:
    """A branch that failed on the value's type (e.g. the string branch for a mapping)."""
    return error.validator == "type" or (error.validator == "pattern" and not isinstance(error.instance, str))


def _branch_types(branches: list[Any], root: Mapping[str, Any]) -> set[str]:
    out: set[str] = set()
    for b in branches:
        while isinstance(b, Mapping) and "$ref" in b and "type" not in b:
            target: Any = root
            for part in b["$ref"][2:].split("/"):
                target = target.get(part, {})
            b = target
        t = b.get("type") if isinstance(b, Mapping) else None
        if isinstance(t, str):
            out.add(t)
    return out


def _article(word: str) -> str:
    return {"object": "a mapping", "array": "a list", "string": "a string", "boolean": "true or false"}.get(word, word)


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


def _known_keys(schema: Mapping[str, Any], root: Mapping[str, Any]) -> list[str]:
    """Property names a (sub)schema allows, following local ``$ref``s."""
    keys: list[str] = []
    seen: set[int] = set()

    def walk(s: Any) -> None:
        if not isinstance(s, Mapping) or id(s) in seen:
            return
        seen.add(id(s))
        keys.extend(s.get("properties", {}))
        ref = s.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            target: Any = root
            for part in ref[2:].split("/"):
                target = target.get(part, {}) if isinstance(target, Mapping) else {}
            walk(target)
        for sub in s.get("allOf", ()):
            walk(sub)

    walk(schema)
    return sorted(set(keys))


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
    err = _schema_error(doc, path)
    if err is not None:
        raise err
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
    known = format_registry()
    if fmt not in known:
        raise ConfigError(f"unknown format {fmt!r} (known: {', '.join(known) or 'none installed'})", f"{kind}.format")
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


__all__ = ["ChainConfig", "build_chain", "build_transforms", "check_config", "load_config", "yaml_path"]
