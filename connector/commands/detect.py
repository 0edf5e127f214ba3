"""``cdc-smt detect [INPUT]``: which format(s) each message is in.

Vendors rarely say which dialect they send. For every message this checks
each registered format: a format with a JSON Schema matches when the message
validates against it; a format without one matches when its codec's ``sniff``
says so. A message that *looks like* a format (``sniff``) but fails its
schema is reported as a near miss with the failing pointer — usually the
most useful line of all. Avro container files (binary formats) are
recognised by their magic bytes, or with ``--binary`` on stdin.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from cdc_smt import schemas
from cdc_smt.connector.commands.validate import NOT_JSON, Failure, check, messages
from cdc_smt.connector.framing import display_name, read_records
from cdc_smt.transforms.formats import registry
from cdc_smt.transforms.formats.base import Codec

_AVRO_MAGIC = b"Obj\x01"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "detect",
        help="say which format(s) each message is in",
        description="For each message of INPUT, list the formats it matches (their JSON Schema, else their "
        "codec's sniff test) and near misses: messages that look like a format but fail its schema.",
    )
    p.add_argument(
        "input",
        nargs="?",
        default="-",
        metavar="INPUT",
        help="JSON Lines file or Avro container (default: - for stdin)",
    )
    p.add_argument(
        "--binary", action="store_true", help="INPUT is an Avro container of Kafka records (auto-detected for files)"
    )
    p.add_argument("--json", action="store_true", help="one JSON object per message on stdout")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    p.set_defaults(func=run)


@dataclass(slots=True)
class Verdict:
    """What one message matched; ``near`` maps a format to why its schema rejects it."""

    matches: list[str] = field(default_factory=list)
    near: dict[str, Failure] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"matches": self.matches, "near_misses": {k: v.as_dict() for k, v in self.near.items()}}


def detect(message: Any) -> Verdict:
    """Formats a parsed JSON message (dict) or a raw binary value (bytes) matches."""
    have_schema = set(schemas.names())
    verdict = Verdict()
    binary = isinstance(message, (bytes, bytearray))
    for name, cls in registry().items():
        if cls.binary != binary:
            continue
        looks = _sniff(cls, message)
        if name in have_schema and not binary:
            failures = check(name, message)
            if not failures:
                verdict.matches.append(name)
            elif looks:
                verdict.near[name] = failures[0]
        elif looks:
            verdict.matches.append(name)
    return verdict


def _sniff(cls: type[Codec], message: Any) -> bool:
    try:
        return bool(cls.sniff(message))
    except Exception:  # noqa: BLE001 - a sniff test must never stop detection
        return False


def _inputs(args: argparse.Namespace) -> Iterator[tuple[int, Any, str | None]]:
    if args.binary or _is_avro(args.input):
        for pos, record in read_records(args.input, binary=True):
            if record.value is None:
                yield pos, NOT_JSON, "null value (tombstone)"
                continue
            try:
                yield pos, orjson.loads(record.value), None
            except orjson.JSONDecodeError:
                yield pos, record.value, None
        return
    yield from messages(args.input)


def _is_avro(source: Any) -> bool:
    if not isinstance(source, (str, os.PathLike)) or os.fspath(source) == "-":
        return False
    try:
        with open(source, "rb") as f:
            return f.read(4) == _AVRO_MAGIC
    except OSError:
        return False


def run(args: argparse.Namespace) -> int:
    where = display_name(args.input)
    counts: Counter[str] = Counter()
    total = unmatched = 0
    for pos, message, problem in _inputs(args):
        total += 1
        verdict = Verdict() if message is NOT_JSON else detect(message)
        counts.update(verdict.matches)
        if not verdict.matches:
            unmatched += 1
        if args.json:
            out = {"line": pos, **verdict.as_dict()}
            if problem:
                out["error"] = problem
            print(orjson.dumps(out).decode())
            continue
        found = ", ".join(verdict.matches) if verdict.matches else f"no format ({problem})" if problem else "no format"
        print(f"{where}:{pos}: {found}")
        for name, failure in verdict.near.items():
            print(
                f"{where}:{pos}:   looks like {name} "
                f"but fails its schema at {failure.pointer or '(root)'}: {failure.message}"
            )
    if not args.quiet:
        parts = [f"{name} {n}/{total}" for name, n in counts.most_common()]
        summary = "; ".join(parts) if parts else "no format matched"
        print(
            f"cdc-smt detect: {total} message{'s' if total != 1 else ''}: {summary}"
            + (f"; {unmatched} matched none" if unmatched and parts else ""),
            file=sys.stderr,
        )
    return 0 if total and not unmatched else 1
