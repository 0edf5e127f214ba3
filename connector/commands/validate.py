"""``cdc-smt validate --format FMT [INPUT]``: check messages against a format's JSON Schema.

Every invalid message is reported with its line and the JSON pointer of the
failure (``orders.jsonl:7: /TYPE: 'X' is not one of ['I', 'U', 'D']``), so a
user can tell which vendor field is off before wiring a pipeline. Input is
JSON Lines; a file holding one pretty-printed JSON document is accepted too.
Exit status: 0 all valid, 1 some invalid, 2 usage or input errors.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any, Iterator

import orjson

from cdc_smt import schemas
from cdc_smt.connector.framing import display_name, read_records
from cdc_smt.transforms.errors import ConfigError

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
    p.add_argument("-f", "--format", required=True, metavar="FMT", help=f"schema to check against: {', '.join(schemas.names())}")
    p.add_argument("--all-errors", action="store_true", help="report every schema error of a message, not only the most relevant")
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
    """Schema failures of one parsed message (empty when valid)."""
    import jsonschema

    validator = schemas.validator(name)
    errors = list(validator.iter_errors(obj))
    if not errors:
        return []
    if all_errors:
        picked = sorted(errors, key=lambda e: list(e.absolute_path))
    else:
        best = jsonschema.exceptions.best_match(errors)
        while best.context:  # "not valid under any of the given schemas": say why
            best = jsonschema.exceptions.best_match(best.context)
        picked = [best]
    return [Failure(pointer(e.absolute_path), _message(e), pointer(e.absolute_schema_path)) for e in picked]


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
    records = read_records(source, binary=False)
    first = next(records, None)
    if first is None:
        return
    lineno, record = first
    try:
        yield lineno, orjson.loads(record.value), None
    except orjson.JSONDecodeError as exc:
        rest = list(records)
        whole = b"\n".join([record.value, *(r.value for _, r in rest)])
        try:
            yield lineno, orjson.loads(whole), None
            return
        except orjson.JSONDecodeError:
            yield lineno, NOT_JSON, f"malformed JSON: {exc}"
            records = iter(rest)
    for lineno, record in records:
        try:
            yield lineno, orjson.loads(record.value), None
        except orjson.JSONDecodeError as exc:
            yield lineno, NOT_JSON, f"malformed JSON: {exc}"


def run(args: argparse.Namespace) -> int:
    name = args.format
    if name not in schemas.names():
        raise ConfigError(f"no JSON Schema for format {name!r} (have: {', '.join(schemas.names())})", "--format")
    where = display_name(args.input)
    total = invalid = 0
    for lineno, obj, problem in messages(args.input):
        total += 1
        failures = [Failure("", problem, "")] if obj is NOT_JSON else check(name, obj, args.all_errors)
        if not failures:
            continue
        invalid += 1
        if args.json:
            print(orjson.dumps({"line": lineno, "errors": [f.as_dict() for f in failures]}).decode())
        else:
            for f in failures:
                print(f"{where}:{lineno}: {f.pointer or '(root)'}: {f.message}")
    if not args.quiet:
        verdict = "all valid" if not invalid else f"{invalid} invalid"
        print(f"cdc-smt validate: {total} message{'s' if total != 1 else ''} checked against {name}: {verdict}", file=sys.stderr)
    return 1 if invalid else 0
