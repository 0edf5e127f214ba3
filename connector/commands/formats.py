"""``cdc-smt formats``: what formats exist, which way they work, and their options.

Everything shown comes from the codec classes themselves (``description``,
``binary``, declared ``options``, ``capabilities``), so this listing cannot
drift from the code.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import textwrap
from typing import Any

import orjson

from cdc_smt.transforms.formats import codec_class, registry
from cdc_smt.transforms.formats.base import COMMON_OPTIONS, Codec, JsonCodec
from cdc_smt.transforms.options import Option


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "formats",
        help="list formats, their direction and options",
        description="List the registered CDC formats with decode/encode support, framing and options.",
    )
    p.add_argument("names", nargs="*", metavar="FORMAT", help="show only these formats")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def _overrides(cls: type[Codec], *methods: str) -> bool:
    """Does ``cls`` implement any of ``methods`` beyond the abstract bases?"""
    for name in methods:
        impl = getattr(cls, name, None)
        if impl is not None and all(impl is not getattr(base, name, None) for base in (Codec, JsonCodec)):
            return True
    return False


def directions(cls: type[Codec]) -> tuple[bool, bool]:
    """``(can decode, can encode)``, read from which methods the codec implements."""
    return _overrides(cls, "decode", "decode_message"), _overrides(cls, "encode", "encode_records", "encode_message")


def _type_name(opt: Option) -> str:
    return opt.type.__name__


def _json_value(v: Any) -> Any:
    """Option defaults as JSON (tuples become lists; other objects their repr)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _json_value(x) for k, x in v.items()}
    return repr(v)


def option_info(opt: Option) -> dict[str, Any]:
    info: dict[str, Any] = {
        "name": opt.name,
        "type": _type_name(opt),
        "required": opt.required,
        "default": None if opt.required else _json_value(opt.default),
        "doc": opt.doc,
        "common": any(opt is c for c in COMMON_OPTIONS),
    }
    if opt.choices is not None:
        info["choices"] = _json_value(opt.choices)
    return info


def format_info(cls: type[Codec]) -> dict[str, Any]:
    decode, encode = directions(cls)
    return {
        "name": cls.name,
        "description": cls.description,
        "decode": decode,
        "encode": encode,
        "framing": "avro-container" if cls.binary else "json-lines",
        "binary": cls.binary,
        "capabilities": dataclasses.asdict(cls.capabilities),
        "options": [option_info(o) for o in cls.all_options()],
    }


def _direction_text(decode: bool, encode: bool) -> str:
    return {(True, True): "decode+encode", (True, False): "decode only", (False, True): "encode only"}.get(
        (decode, encode), "neither"
    )


def _option_lines(opt: Option, indent: str) -> list[str]:
    default = opt.describe_default()
    head = f"{indent}{opt.name} ({_type_name(opt)}, default {default})"
    if opt.choices is not None:
        head += f" one of: {', '.join(map(str, opt.choices))}"
    lines = [head]
    if opt.doc:
        lines += textwrap.wrap(opt.doc, width=96, initial_indent=indent + "    ", subsequent_indent=indent + "    ")
    return lines


def render_text(classes: list[type[Codec]]) -> str:
    out: list[str] = []
    for cls in classes:
        info = format_info(cls)
        framing = "binary, Avro container" if cls.binary else "JSON, one per line"
        out.append(f"{cls.name}  [{_direction_text(info['decode'], info['encode'])}; {framing}]")
        if cls.description:
            out += textwrap.wrap(cls.description, width=100, initial_indent="  ", subsequent_indent="  ")
        own = [o for o in cls.all_options() if not any(o is c for c in COMMON_OPTIONS)]
        if own:
            out.append("  options:")
            for opt in own:
                out += _option_lines(opt, "    ")
        out.append("")
    out.append("options of every format:")
    for opt in COMMON_OPTIONS:
        out += _option_lines(opt, "  ")
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    classes = [codec_class(n) for n in args.names] if args.names else list(registry().values())
    if args.json:
        print(orjson.dumps([format_info(c) for c in classes], option=orjson.OPT_INDENT_2).decode())
    else:
        if not classes:
            print("no formats are registered", file=sys.stderr)
        print(render_text(classes))
    return 0
