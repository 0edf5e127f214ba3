"""Structured mutations of valid inputs: JSON trees, Avro records, YAML documents and bytes.

Every mutator takes a ``random.Random``-like source (a seeded ``random.Random``
in the long run, hypothesis' ``st.randoms()`` in the test suite so failures
shrink) and returns the mutated bytes. JSON mutations work on the parsed tree
and render it with a small writer that can also emit what JSON parsers must
reject or survive: duplicate keys, ``NaN``/``Infinity``, 400-digit numbers,
invalid UTF-8 inside strings, nesting deeper than any parser allows.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

import msgspec
import orjson

Rng = random.Random
Mutator = Callable[[bytes, Rng], bytes]


class Raw:
    """Text written as is (``NaN``, ``1e999``, invalid UTF-8 in a string)."""

    __slots__ = ("text",)

    def __init__(self, text: bytes) -> None:
        self.text = text


def _raw_number(text: str) -> Raw:
    return Raw(text.encode())


#: Parses JSON with every non-integer number kept as its exact text (a :class:`Raw`): the
#: writer puts it back as it was, and orjson writes the rest of the tree in one call.
_EXACT = msgspec.json.Decoder(float_hook=_raw_number)


class Pairs:
    """A JSON object written from a list of pairs, so a key may repeat."""

    __slots__ = ("items",)

    def __init__(self, items: list[tuple[str, Any]]) -> None:
        self.items = items


def _key(k: Any) -> bytes:
    return orjson.dumps(k) if isinstance(k, str) else b'"' + str(k).encode() + b'"'


def _fragment(v: Any) -> orjson.Fragment:
    """orjson's ``default``: the two node types it does not know."""
    if isinstance(v, Raw):
        return orjson.Fragment(v.text)
    if isinstance(v, Pairs):
        return orjson.Fragment(b"{" + b",".join(_key(k) + b":" + render(x) for k, x in v.items) + b"}")
    raise TypeError(type(v).__name__)


def render(v: Any) -> bytes:
    """A (possibly mutated) tree as JSON-ish bytes: one orjson call, which writes
    :class:`Raw` text and :class:`Pairs` through :func:`_fragment`."""
    try:
        return orjson.dumps(v, default=_fragment)
    except orjson.JSONEncodeError as exc:  # an integer past 64 bits, or nesting past orjson's limit
        if "ecursion" in str(exc):  # (a mutant's deep nesting parsed back): bytes mutations instead
            raise RecursionError from None
        return _render_slowly(v)


def _render_slowly(v: Any) -> bytes:
    """Containers piece by piece (only the path to what orjson refused is written here)."""
    if isinstance(v, dict):
        v = Pairs(list(v.items()))
    if isinstance(v, Pairs):
        return b"{" + b",".join(_key(k) + b":" + render(x) for k, x in v.items) + b"}"
    if isinstance(v, list):
        return b"[" + b",".join(render(x) for x in v) + b"]"
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v).encode()
    return render(v)


# -- values a mutation puts somewhere --------------------------------------------------

_WEIRD_NUMBERS = (
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"1e999",
    b"-1e999",
    b"1e-999",
    b"1e308",
    b"4.9e-324",
    b"18446744073709551616",
    b"-9223372036854775809",
    b"9" * 400,
    b"1" + b"0" * 5000,
    b"1e100000000",
    b"-0",
    b"0.000000000000000000000000000001",
    b"1E+2147483648",
    b"12345678901234567890.123456789012345678901234567890",
)
_WEIRD_STRINGS = (
    "",
    " ",
    "\x00",
    "null",
    "NULL",
    "true",
    "0",
    "-1",
    "1e999",
    "NaN",
    "0000-00-00 00:00:00",
    "2024-13-45 99:00:00",
    "24:00:00",
    "-838:59:59",
    "9999-12-31 23:59:59.999999",
    "1970-01-01T00:00:00Z",
    "\u202e\ufeff",
    "é" * 3,
    "😀",
    "a" * 10_000,
    "{}",
    "[]",
    '{"a":1}',
    "base64==",
    "\\",
    "'",
    "`",
    "INSERT",
    "UPDATE",
    "DELETE",
    "DDL",
    "c",
    "u",
    "d",
    "r",
    "I",
    "U",
    "D",
    "insert",
    "update",
    "delete",
    "bootstrap-insert",
    "table-create",
    "bigint",
    "decimal(65,30)",
    "varchar(-1)",
    "enum(",
    "bit(64)",
    "datetime(7)",
    "int unsigned",
    "json",
)
_INVALID_UTF8 = (b"\xff", b"\xc3\x28", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\x80")


def weird_value(rng: Rng, depth: int = 0, nesting: bool = True) -> Any:
    """A value of a random JSON type, often one a decoder does not expect."""
    k = rng.randrange(14)
    if k == 0:
        return None
    if k == 1:
        return rng.random() < 0.5
    if k == 2:
        return rng.choice((0, 1, -1, 2**31, 2**63 - 1, -(2**63), Raw(b"18446744073709551616"), Raw(b"1" + b"0" * 30)))
    if k == 3:
        return rng.choice((0.5, -0.0, 1e308, 1e-308, 3.4028235e38))
    if k == 4:
        return Raw(rng.choice(_WEIRD_NUMBERS))
    if k in (5, 6):
        return rng.choice(_WEIRD_STRINGS)
    if k == 7:
        return Raw(b'"' + rng.choice(_INVALID_UTF8) + b'x"')
    if k == 8:
        return Raw(b'"\\ud800"')  # a lone surrogate escape
    if k == 9:
        return [] if depth > 1 else [weird_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    if k == 10:
        return {} if depth > 1 else {rng.choice(_KEYS): weird_value(rng, depth + 1) for _ in range(rng.randrange(3))}
    if k == 11 and nesting:
        return deep(rng)
    if k == 12:
        return Raw(rng.choice((b"1E+400", b"-1E-400", b"123456789012345678901234567890.5", b"NaN", b"sNaN")))
    return rng.choice(_KEYS)


_KEYS = (
    "type",
    "op",
    "data",
    "old",
    "before",
    "after",
    "payload",
    "schema",
    "fields",
    "table",
    "database",
    "ts",
    "ts_ms",
    "es",
    "isDdl",
    "pkNames",
    "mysqlType",
    "sqlType",
    "sql",
    "source",
    "id",
    "name",
    "primary_keys",
    "columns",
    "xid",
    "commit",
    "position",
    "gtid",
    "op_type",
    "current_ts",
    "tokens",
    "primary_key",
    "dbValType",
    "tableName",
)


def deep(rng: Rng) -> Any:
    depth = rng.choice((64, 512, 1100, 5000, 100_000))
    if rng.random() < 0.5:
        return Raw(b"[" * depth + b"1" + b"]" * depth)
    return Raw(b'{"a":' * depth + b"1" + b"}" * depth)


# -- JSON tree mutations ---------------------------------------------------------------------


def _pick(tree: Any, rng: Rng) -> list[tuple[Any, Any]]:
    """A random path from the root, as (container, key) steps (empty: the root is a leaf).
    Random descent: cheap on big messages, and every depth gets its turn."""
    path: list[tuple[Any, Any]] = []
    node = tree
    while isinstance(node, (dict, list)) and node:
        key = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
        path.append((node, key))
        node = node[key]
        if rng.random() < 0.3:
            break
    return path


def mutate_tree(tree: Any, rng: Rng, nesting: bool = True) -> Any:
    """One structural change: wrong type, missing or extra field, duplicate key, deep nesting...
    (``nesting=False``: no deep nesting, for targets where it is slow to reject)."""
    path = _pick(tree, rng)
    if not path:
        return weird_value(rng, nesting=nesting)
    parent, key = path[-1]
    k = rng.randrange(9)
    if k <= 2:  # a value of another type
        parent[key] = weird_value(rng, nesting=nesting)
    elif k == 3:  # a missing field
        if isinstance(parent, dict):
            del parent[key]
        else:
            parent.pop(key)
    elif k == 4:  # an extra field
        target = parent[key] if isinstance(parent[key], dict) else parent
        if isinstance(target, dict):
            target[rng.choice(_KEYS) + rng.choice(("", "_x", "2"))] = weird_value(rng)
        else:
            target.append(weird_value(rng))
    elif k == 5 and isinstance(parent, dict):  # a duplicate key, the second one differing
        items = list(parent.items())
        i = [j for j, (name, _) in enumerate(items) if name == key][0]
        items.insert(i + 1, (key, weird_value(rng)))
        if len(path) == 1:
            return Pairs(items)
        grand, gkey = path[-2]
        grand[gkey] = Pairs(items)
    elif k == 6 and nesting:  # deep nesting
        parent[key] = deep(rng)
    elif k == 7:  # a container emptied or a list repeated
        v = parent[key]
        if isinstance(v, list):
            parent[key] = v * rng.choice((0, 2, 50))
        elif isinstance(v, dict):
            parent[key] = {}
        else:
            parent[key] = [v]
    else:  # swap with another value (copies: swapping a node with its descendant must not make a cycle)
        other = _pick(tree, rng)
        if other:
            o_parent, o_key = other[-1]
            a, b = parent[key], o_parent[o_key]
            parent[key] = _copy(b)
            o_parent[o_key] = _copy(a)
    return tree


def _copy(v: Any) -> Any:
    """A deep copy of a subtree: parsing its rendering (C speed) where it parses back, else
    ``copy.deepcopy``. Scalars, :class:`Raw` and :class:`Pairs` are never changed in place."""
    if not isinstance(v, (dict, list)):
        return v
    try:
        return _EXACT.decode(render(v))
    except Exception:  # noqa: BLE001 - NaN, invalid UTF-8, nesting: what only the writer writes
        return copy.deepcopy(v)


def mutate_json(data: bytes, rng: Rng) -> bytes:
    """Parse, apply 1-3 structural mutations, render; bytes mutations if it does not parse."""
    try:
        tree = _EXACT.decode(data)
    except Exception:  # noqa: BLE001 - not JSON this writer can rebuild (decimal.InvalidOperation ...)
        return mutate_bytes(data, rng)
    try:
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            tree = mutate_tree(tree, rng)
            if isinstance(tree, (Pairs, Raw)):
                break
        return render(tree)
    except (RecursionError, TypeError):  # nested deeper than the writer goes, NaN keys ...: mutate its bytes
        return mutate_bytes(data, rng)


# -- bytes mutations -------------------------------------------------------------------------


def mutate_bytes(data: bytes, rng: Rng) -> bytes:
    """Truncation, bit flips, inserted/deleted/duplicated runs, invalid UTF-8, digit runs."""
    b = bytearray(data)
    n = len(b)
    k = rng.randrange(8)
    if k == 0 or n == 0:
        return bytes(b[: rng.randrange(n + 1)]) if n else bytes([rng.randrange(256)])
    i = rng.randrange(n)
    if k == 1:
        for _ in range(rng.choice((1, 1, 2, 8))):
            j = rng.randrange(n)
            b[j] ^= 1 << rng.randrange(8)
    elif k == 2:
        b[i:i] = bytes(rng.randrange(256) for _ in range(rng.choice((1, 2, 4, 16))))
    elif k == 3:
        del b[i : i + rng.choice((1, 2, 8, 64))]
    elif k == 4:
        j = min(n, i + rng.choice((1, 8, 64, 512)))
        b[i:i] = b[i:j] * rng.choice((1, 2, 10))
    elif k == 5:
        b[i:i] = rng.choice(_INVALID_UTF8)
    elif k == 6:
        b[i:i] = rng.choice(_WEIRD_NUMBERS)
    else:
        b[i] = rng.choice(b'{}[]",:\\0-+eE.\x00 ')
    return bytes(b)


# -- Avro -----------------------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    """Avro zig-zag varint (any size: out-of-range values are part of the point)."""
    n = value << 1 if value >= 0 else ((-value) << 1) - 1
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        if pos >= len(data):
            raise EOFError
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (n >> 1) ^ -(n & 1), pos
        if shift > 70:
            raise ValueError("varint too long")


class AvroWalker:
    """Reads Avro binary against a schema, noting where each varint (long, length,
    union index, block count) starts and ends, so mutations can hit exactly those."""

    def __init__(self, schema: Any) -> None:
        self.named: dict[str, Any] = {}
        self.root = schema

    def walk(self, data: bytes) -> list[tuple[str, int, int]]:
        self.data = data
        self.marks: list[tuple[str, int, int]] = []
        self._read(self.root, 0)
        return self.marks

    def _long(self, kind: str, pos: int) -> tuple[int, int]:
        if len(self.marks) > 20_000 or pos > len(self.data):
            raise EOFError  # a corrupted count: stop walking
        v, end = _read_varint(self.data, pos)
        self.marks.append((kind, pos, end))
        return v, end

    def _read(self, s: Any, pos: int) -> int:
        if isinstance(s, str):
            if s in self.named:
                return self._read(self.named[s], pos)
            if s == "null":
                return pos
            if s == "boolean":
                return pos + 1
            if s in ("int", "long"):
                return self._long("long", pos)[1]
            if s == "float":
                return pos + 4
            if s == "double":
                return pos + 8
            if s in ("bytes", "string"):
                n, pos = self._long("length", pos)
                return pos + n
            raise ValueError(s)
        if isinstance(s, list):
            i, pos = self._long("union", pos)
            return self._read(s[i], pos)
        t = s["type"]
        if t in ("record", "error"):
            self.named[s["name"]] = s
            if "namespace" in s:
                self.named[f"{s['namespace']}.{s['name']}"] = s
            for f in s["fields"]:
                pos = self._read(f["type"], pos)
            return pos
        if t == "enum":
            self.named[s["name"]] = s
            return self._long("enum", pos)[1]
        if t == "fixed":
            self.named[s["name"]] = s
            return pos + s["size"]
        if t in ("array", "map"):
            while True:
                n, pos = self._long("count", pos)
                if n == 0:
                    return pos
                if n < 0:
                    _, pos = self._long("blocksize", pos)
                    n = -n
                for _ in range(n):
                    if t == "map":
                        pos = self._read("string", pos)
                    pos = self._read(s["items" if t == "array" else "values"], pos)
        return self._read(t, pos)


_AVRO_VALUES = (-1, -2, -(2**31), 2**31, 2**62, -(2**62), 2**63 - 1, 7, 100, 10**6, 2**40)


def mutate_avro(data: bytes, rng: Rng, walker: AvroWalker) -> bytes:
    """Corrupt a length, a union index or a block count exactly where it is; else bytes mutations."""
    if rng.random() < 0.3:
        return mutate_bytes(data, rng)
    try:
        marks = walker.walk(data)
    except (EOFError, ValueError, IndexError, KeyError, TypeError):
        return mutate_bytes(data, rng)
    if not marks:
        return mutate_bytes(data, rng)
    kind, start, end = rng.choice(marks)
    if kind == "union":
        value = rng.choice((-1, 2, 3, 9, 2**31, rng.randrange(4)))
    else:
        value = rng.choice(_AVRO_VALUES)
    return data[:start] + _varint(value) + data[end:]


# -- YAML documents ----------------------------------------------------------------------------


def mutate_yaml(doc: Any, rng: Rng) -> bytes:
    """A config document with a structural mutation, as YAML (or JSON, which is YAML), or
    the YAML text itself mutated byte-wise."""
    import yaml

    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's emitter where it is there
    k = rng.randrange(4)
    if k == 0:
        text = yaml.dump(doc, Dumper=dumper, sort_keys=False).encode("utf-8")
        return mutate_bytes(text, rng)
    try:
        tree = _EXACT.decode(orjson.dumps(doc))
    except (TypeError, orjson.JSONEncodeError, msgspec.DecodeError, RecursionError):
        return mutate_bytes(yaml.dump(doc, Dumper=dumper).encode("utf-8", "replace"), rng)
    nesting = rng.random() < 0.05  # PyYAML takes a second to reject deep nesting: now and then
    for _ in range(rng.choice((1, 2))):
        tree = mutate_tree(tree, rng, nesting)
        if isinstance(tree, (Pairs, Raw)):
            break
    text = render(tree)
    if k == 1 and not isinstance(tree, (Pairs, Raw)):
        try:
            return yaml.dump(orjson.loads(text), Dumper=dumper, sort_keys=False).encode("utf-8")
        except (orjson.JSONDecodeError, yaml.YAMLError, ValueError, RecursionError):
            pass
    return text


__all__ = ["AvroWalker", "mutate_avro", "mutate_bytes", "mutate_json", "mutate_yaml", "render"]
