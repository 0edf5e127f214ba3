"""``cdc-smt validate --format FMT [INPUT]``: check messages against a format's JSON Schema.

Every invalid message is reported with its line and the JSON pointer of each
of its first few failures (``orders.jsonl:7: /TYPE: 'X' is not one of ['I',
'U', 'D']``), and, when it is valid in another format, which one it looks like
(the usual cause: the wrong ``-f``). Input is JSON Lines; a file holding one
pretty-printed JSON document is accepted too. ``-f job`` and ``-f chain`` check a
whole YAML (or JSON) configuration file the way ``worker`` and ``convert -c``
read it. Exit status (:mod:`connector.exitcodes`): 0 all valid, 3 some invalid,
2 usage or unreadable input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from cdc_smt import schemas
from cdc_smt.connector.commands._positions import split_column
from cdc_smt.connector.exitcodes import ExitCode, completed
from cdc_smt.connector.framing import STDIO, check_readable, display_name, read_lines
from cdc_smt.transforms.errors import ConfigError

#: Schema errors shown per message without ``--all-errors``.
FIRST_ERRORS = 3
#: Formats whose "messages" are whole configuration files, not JSON Lines.
CONFIG_FORMATS = ("chain", "job")

#: Placeholder for "no value could be parsed from this line".
NOT_JSON = object()


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "validate",
        help="check messages against a format's JSON Schema",
        description="Validate each message of INPUT against schemas/FMT.schema.json; report the line and "
        "JSON pointer of every failure. Exit status 1 when any message is invalid.",
    )
    p.add_argument("input", nargs="?", default="-", metavar="INPUT", help="JSON Lines file (default: - for stdin)")
    p.add_argument(
        "-f", "--format", required=True, metavar="FMT", help=f"schema to check against: {', '.join(schemas.names())}"
    )
    p.add_argument(
        "--all-errors",
        action="store_true",
        help=f"report every schema error of a message, not only the first {FIRST_ERRORS}",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per invalid message on stdout")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    p.set_defaults(func=run)


@dataclass(frozen=True, slots=True)
class Failure:
    """One schema error: where in the message (RFC 6901 pointer), what, and which schema rule."""

    pointer: str
    message: str
    schema_pointer: str

    def as_dict(self) -> dict[str, str]:
        return {"pointer": self.pointer, "message": self.message, "schema_pointer": self.schema_pointer}


def pointer(parts: Any) -> str:
    """RFC 6901 JSON pointer of a path (``["data", 0, "a/b"]`` -> ``/data/0/a~1b``)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def check(name: str, obj: Any, all_errors: bool = False) -> list[Failure]:
    """Schema failures of one parsed message (empty when valid).

    The most relevant failure comes first, then the others by path; without
    ``all_errors`` only the first :data:`FIRST_ERRORS`. Inside ``oneOf``/``anyOf``
    the failures are those of the branch the message came closest to, so the
    reasons are shown rather than "not valid under any of the given schemas".
    """
    import jsonschema

    validator = schemas.validator(name)
    errors = list(validator.iter_errors(obj))
    if not errors:
        return []
    leaves = _leaves(errors)
    best = jsonschema.exceptions.best_match(errors)  # descends into oneOf/anyOf: a leaf
    ordered = [best, *sorted((e for e in leaves if e is not best), key=_path_key)]
    picked = ordered if all_errors else ordered[:FIRST_ERRORS]
    return [Failure(pointer(e.absolute_path), _message(e), pointer(e.absolute_schema_path)) for e in picked]


def _leaves(errors: list[Any]) -> list[Any]:
    """The errors with their ``oneOf``/``anyOf`` failures replaced by those of the closest branch."""

    out: list[Any] = []
    for error in errors:
        if not error.context:
            out.append(error)
            continue
        branch = _closest_branch(error)
        out.extend(_leaves([e for e in error.context if e.relative_schema_path[0] == branch]))
    return out


def _closest_branch(error: Any) -> Any:
    """The ``oneOf``/``anyOf`` branch holding jsonschema's best match (the one the message came closest to)."""
    import jsonschema

    node = jsonschema.exceptions.best_match([error])
    while node.parent is not None and node.parent is not error:
        node = node.parent
    if node is error or not node.relative_schema_path:
        node = error.context[0]
    return node.relative_schema_path[0]


def _path_key(error: Any) -> tuple[str, ...]:
    return tuple(str(p) for p in error.absolute_path)


def looks_like(obj: Any, name: str) -> list[str]:
    """Other formats whose schema (or sniff test) ``obj`` passes: what it probably is instead of ``name``."""
    from cdc_smt.connector.commands.detect import detect  # detect builds on this module

    return [f for f in detect(obj).matches if f != name and f not in CONFIG_FORMATS]


def _message(error: Any) -> str:
    """jsonschema's message, with a long quoted instance replaced by what it is."""
    text = error.message
    shown = repr(error.instance)
    if len(shown) > 60 and text.startswith(shown):
        text = _what(error.instance) + text[len(shown) :]
    return text if len(text) <= 300 else text[:297] + "..."


def _what(v: Any) -> str:
    if isinstance(v, dict):
        return f"an object with {len(v)} field{'s' if len(v) != 1 else ''}"
    if isinstance(v, list):
        return f"an array of {len(v)} item{'s' if len(v) != 1 else ''}"
    if isinstance(v, str):
        return f"a string of {len(v)} characters"
    return type(v).__name__


def messages(source: Any) -> Iterator[tuple[int, Any, str | None]]:
    """``(line, parsed message or NOT_JSON, parse error)`` for each message of INPUT.

    JSON Lines first; when the first line is not JSON but the whole input is
    one JSON document (pretty-printed), that document is the only message.
    """
    lines = read_lines(source)
    first = next(lines, None)
    if first is None:
        return
    lineno, line = first
    try:
        yield lineno, orjson.loads(line), None
    except orjson.JSONDecodeError as exc:
        rest = list(lines)
        whole = b"\n".join([line, *(r for _, r in rest)])
        try:
            yield lineno, orjson.loads(whole), None
            return
        except orjson.JSONDecodeError:
            yield lineno, NOT_JSON, _malformed(exc)
            lines = iter(rest)
    for lineno, line in lines:
        try:
            yield lineno, orjson.loads(line), None
        except orjson.JSONDecodeError as exc:
            yield lineno, NOT_JSON, _malformed(exc)


def _malformed(exc: Exception) -> str:
    """``malformed JSON at column 5: unexpected character`` (the line is the file's, said by the caller)."""
    reason, column = split_column(str(exc))
    return f"malformed JSON{f' at column {column}' if column is not None else ''}: {reason}"


def run(args: argparse.Namespace) -> int:
    name = args.format
    if name not in schemas.names():
        raise ConfigError(f"no JSON Schema for format {name!r} (have: {', '.join(schemas.names())})", "--format")
    check_readable(args.input)
    if name in CONFIG_FORMATS:
        return validate_config(args.input, name, args.json, args.quiet)
    where = display_name(args.input)
    total = invalid = 0
    others: dict[str, int] = {}
    for lineno, obj, problem in messages(args.input):
        total += 1
        failures = [Failure("", problem, "")] if problem is not None else check(name, obj, args.all_errors)
        if not failures:
            continue
        invalid += 1
        similar = [] if obj is NOT_JSON else looks_like(obj, name)
        for other in similar:
            others[other] = others.get(other, 0) + 1
        if args.json:
            print(
                orjson.dumps(
                    {"line": lineno, "errors": [f.as_dict() for f in failures], "looks_like": similar}
                ).decode()
            )
            continue
        if similar:
            print(f"{where}:{lineno}: (root): looks like {' or '.join(similar)}, not {name}")
        for f in failures:
            print(f"{where}:{lineno}: {f.pointer or '(root)'}: {f.message}")
    if not args.quiet:
        verdict = "all valid" if not invalid else f"{invalid} invalid"
        if others:
            ranked = sorted(others.items(), key=lambda kv: -kv[1])
            verdict += " (" + ", ".join(f"{n} look{'s' if n == 1 else ''} like {fmt}" for fmt, n in ranked) + ")"
        print(
            f"cdc-smt validate: {total} message{'s' if total != 1 else ''} checked against {name}: {verdict}",
            file=sys.stderr,
        )
    return completed(invalid)


# -- configuration files -------------------------------------------------------------------


def validate_config(source: str, name: str, as_json: bool, quiet: bool) -> int:
    """Check a whole job or chain file as ``worker -c`` / ``convert -c`` read it (not line by line)."""
    where = display_name(source)
    problem: str | None
    try:
        _load_config(source, name)
    except ConfigError as exc:
        problem = str(exc).removeprefix(f"{where}: ")
    else:
        problem = None
    if as_json:
        print(orjson.dumps({"file": where, "valid": problem is None, "error": problem}).decode())
    elif problem is not None:
        print(f"{where}: {problem}")
    if not quiet:
        print(
            f"cdc-smt validate: {where} checked as a {name} file: {'valid' if problem is None else 'invalid'}",
            file=sys.stderr,
        )
    return ExitCode.OK if problem is None else ExitCode.COMPLETED_WITH_ERRORS


def _load_config(source: str, name: str) -> None:
    from cdc_smt.connector.jobconfig import load_job
    from cdc_smt.transforms import config as chain_config

    if source == STDIO:
        doc: Any = chain_config.parse_yaml(sys.stdin.read(), "<stdin>")
        if not isinstance(doc, dict):
            raise ConfigError(f"<stdin>: expected a mapping at the top level, got {type(doc).__name__}")
    else:
        doc = source if name == "job" else Path(source)
    if name == "job":
        load_job(doc).check()
    else:
        chain_config.check_config(chain_config.load_config(doc))
