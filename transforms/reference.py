"""The reference (docs/reference.md), generated from the declarations (one source of truth).

    python -m cdc_smt.transforms.reference            # print the YAML reference block
    python -m cdc_smt.transforms.reference --write    # regenerate docs/reference.md
    python -m cdc_smt.transforms.reference --check    # exit 1 when it is stale

``--write FILE`` / ``--check FILE`` work on another file. Each block sits
between ``<!-- BEGIN GENERATED: name -->`` and ``<!-- END GENERATED: name -->``
markers (see :data:`BLOCKS`): the formats table, the capability matrix, and the
YAML reference documenting the chain file, every built-in transform and
predicate (from their docstrings and declared options), every registered
format's options, and the expression language. Installed plugins are left out
so the reference does not depend on the machine.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from collections.abc import Iterable
from pathlib import Path

from cdc_smt.transforms.options import Option

BEGIN = "<!-- BEGIN GENERATED: yaml-reference -->"
END = "<!-- END GENERATED: yaml-reference -->"
# Other generated blocks (formats table, capability matrix) use the same
# marker shape; see BLOCKS.

#: The generated reference, relative to a checkout's root (the default of --write/--check).
DEFAULT_FILE = "docs/reference.md"

#: Transforms in the order the reference presents them (others follow alphabetically).
ORDER = (
    "filter", "route", "merge_shards", "replace_field", "mask_field", "insert_field", "cast",
    "timestamp_convert", "timezone_convert", "value_to_key", "extract_field", "flatten", "hoist_field",
    "unwrap", "split_updates", "drop_tombstones", "explode_rows", "batch_rows",
    "insert_header", "drop_headers", "header_from",
)  # fmt: skip
_TYPE_NAMES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "mapping"}
_OBJECT_TYPES = {"predicate": "string or mapping"}

_CHAIN_KEYS = (
    (
        "source",
        "The input format: `canal-json`, or `{format: canal-json, options: {...}}` (options below, under Formats).",
    ),
    ("sink", "The output format, the same way."),
    ("transforms", "The transforms, applied in order: each a mapping with `type` and its options."),
    (
        "predicates",
        "Named predicates: `{name: {type: ..., <options>}}`; transforms refer to them with `predicate: name`.",
    ),
    (
        "errors.tolerance",
        "`none` (default): the first failing message stops the run; `all`: failing messages go to the "
        "dead-letter output (with stage, transform, error class and message) and processing goes on.",
    ),
)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(opt: Option) -> str:
    if opt.required:
        return "*required*"
    try:
        return "`" + json.dumps(opt.default, ensure_ascii=False) + "`"
    except TypeError:
        return "`" + repr(opt.default) + "`"


def _type(opt: Option) -> str:
    if opt.type is object:
        return _OBJECT_TYPES.get(opt.name, "mapping or list")
    return _TYPE_NAMES.get(opt.type, opt.type.__name__)


def option_table(options: Iterable[Option]) -> list[str]:
    """A markdown table of declared options (empty list when there are none)."""
    options = list(options)
    if not options:
        return []
    lines = ["| option | type | default | description |", "|---|---|---|---|"]
    for o in options:
        doc = o.doc
        if o.choices:
            doc += " One of: " + ", ".join(f"`{c}`" for c in o.choices) + "."
        lines.append(f"| `{o.name}` | {_type(o)} | {_default(o)} | {_cell(doc)} |")
    return lines


def _doc(cls: type) -> str:
    return inspect.cleandoc(cls.__doc__ or "")


def _section(title: str, known_as: str, doc: str, options: Iterable[Option]) -> list[str]:
    lines = [f"#### `{title}`", ""]
    if known_as:
        lines += [f"*{known_as}*", ""]
    if doc:
        lines += [doc, ""]
    table = option_table(options)
    if table:
        lines += [*table, ""]
    return lines


def generate() -> str:
    """The reference as markdown (without the markers)."""
    from cdc_smt.transforms import expr
    from cdc_smt.transforms.formats import registry as formats
    from cdc_smt.transforms.predicates import builtins as predicates
    from cdc_smt.transforms.smt import builtins as transforms
    from cdc_smt.transforms.smt.base import COMMON_OPTIONS

    out = ["### Chain file", "", "| key | meaning |", "|---|---|"]
    out += [f"| `{k}` | {_cell(v)} |" for k, v in _CHAIN_KEYS]
    out += ["", "### Transforms", ""]
    out += [
        "`type` is a name below, the name a plugin registered under the entry-point group "
        "`cdc_smt.transforms`, or a dotted class path (`my_pkg.transforms.Shout`). "
        "Every transform also takes:",
        "",
        *option_table(COMMON_OPTIONS),
        "",
    ]
    found = transforms()
    for name in sorted(found, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n)):
        cls = found[name]
        out += _section(name, cls.known_as, _doc(cls), cls.options)
    out += ["### Predicates", "", "Used as `predicate:` on any transform, inline or by name from `predicates:`.", ""]
    for name, predicate in predicates().items():
        out += _section(name, predicate.known_as, _doc(predicate), predicate.options)
    out += ["### Formats", "", "Options of `source.options` / `sink.options`, per format.", ""]
    for name, codec in formats().items():
        desc = getattr(codec, "description", "") or ""
        out += _section(name, "", desc, codec.all_options())
    doc = inspect.cleandoc(expr.GRAMMAR_DOC)
    out += ["### Expression language", "", doc.split("\n\n", 1)[1] if "\n\n" in doc else doc, ""]
    return "\n".join(out).rstrip() + "\n"


def block(name: str = "yaml-reference") -> str:
    """A generated block between its markers."""
    begin, end = markers(name)
    return f"{begin}\n\n{BLOCKS[name]()}\n{end}"


def markers(name: str) -> tuple[str, str]:
    return f"<!-- BEGIN GENERATED: {name} -->", f"<!-- END GENERATED: {name} -->"


def has_markers(text: str, name: str = "yaml-reference") -> bool:
    begin, end = markers(name)
    return begin in text and end in text


def current_block(text: str, name: str = "yaml-reference") -> str:
    """The marked block as it is in ``text`` (markers included)."""
    begin, end = markers(name)
    start = text.index(begin)
    stop = text.index(end, start) + len(end)
    return text[start:stop]


def replace_block(text: str, name: str = "yaml-reference") -> str:
    """``text`` with its marked block regenerated; ``ValueError`` when the markers are missing."""
    if not has_markers(text, name):
        begin, end = markers(name)
        raise ValueError(f"no {begin} ... {end} block to replace")
    return text.replace(current_block(text, name), block(name), 1)


def _formats() -> str:
    from cdc_smt.transforms.capabilities import formats_markdown

    return formats_markdown()


def _capabilities() -> str:
    from cdc_smt.transforms.capabilities import matrix_markdown

    return matrix_markdown()


#: Every generated block: marker name -> generator.
BLOCKS = {"yaml-reference": generate, "formats": _formats, "capabilities": _capabilities}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m cdc_smt.transforms.reference", description=__doc__.split("\n\n")[0]
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--write",
        nargs="?",
        const=DEFAULT_FILE,
        metavar="FILE",
        help=f"regenerate every marked block in FILE (default: {DEFAULT_FILE})",
    )
    group.add_argument(
        "--check",
        nargs="?",
        const=DEFAULT_FILE,
        metavar="FILE",
        help=f"exit 1 if a marked block in FILE is stale (default: {DEFAULT_FILE})",
    )
    args = parser.parse_args(argv)
    if not (args.write or args.check):
        sys.stdout.write(block() + "\n")
        return 0
    path = Path(args.write or args.check)
    text = path.read_text(encoding="utf-8")
    missing = [name for name in BLOCKS if not has_markers(text, name)]
    if missing:
        lines = "\n".join(m for name in missing for m in markers(name))
        print(f"{path}: add the lines\n{lines}\nwhere the generated blocks belong", file=sys.stderr)
        return 2
    new = text
    for name in BLOCKS:
        new = replace_block(new, name)
    if args.check:
        if new != text:
            print(
                f"{path}: generated blocks are stale; run python -m cdc_smt.transforms.reference --write {path}",
                file=sys.stderr,
            )
            return 1
        return 0
    if new != text:
        path.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


__all__ = [
    "BEGIN",
    "BLOCKS",
    "DEFAULT_FILE",
    "END",
    "block",
    "markers",
    "current_block",
    "generate",
    "has_markers",
    "main",
    "option_table",
    "replace_block",
]
