"""The codec base hooks: configure, the one error guard, decode/encode through the base."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any

import pytest

from cdc_smt.transforms.errors import DecodeError, EncodeError
from cdc_smt.transforms.formats import get_codec, registry
from cdc_smt.transforms.formats.base import Codec, JsonCodec, guard
from cdc_smt.transforms.model import ChangeEvent, Op, Record


class _Probe(JsonCodec):
    name = "probe"

    def configure(self) -> None:
        self.configured_with = self.opts.source_timezone

    def decode_message(self, obj: dict, record: Record) -> list[ChangeEvent]:
        if "boom" in obj:
            raise RuntimeError("a bug, not bad input")
        return [ChangeEvent(op=Op(obj["op"]))]

    def encode_message(self, event: ChangeEvent) -> dict:
        return {"op": event.op.value, "n": 1 // int(event.extra.get("d", 1))}


def test_configure_runs_once_with_resolved_options() -> None:
    assert _Probe({"source_timezone": "Asia/Shanghai"}).configured_with == "Asia/Shanghai"


@pytest.mark.parametrize("name", sorted(registry()))
def test_no_codec_redeclares_init(name: str) -> None:
    cls = registry()[name]
    assert cls.__init__ is Codec.__init__


@pytest.mark.parametrize("name", sorted(registry()))
def test_every_codec_decodes_and_encodes_through_the_guarded_base(name: str) -> None:
    cls = registry()[name]
    assert cls.decode is Codec.decode
    # Formats that add to the base's records (DataWorks' split keys, Maxwell's DDL topic)
    # extend encode through super(); none replaces it.
    assert cls.encode is Codec.encode or "super().encode(event)" in inspect.getsource(cls.encode)


def test_guard_words_expected_errors_with_the_reason() -> None:
    codec = _Probe()
    with pytest.raises(DecodeError, match=r"^probe: not a valid probe message: missing field 'op'$"):
        codec.decode(Record(value=b'{"x": 1}'))
    with pytest.raises(DecodeError, match="not a valid probe message: ValueError"):
        codec.decode(Record(value=b'{"op": "nope"}'))
    with pytest.raises(EncodeError, match=r"^probe: cannot encode insert event: ZeroDivisionError"):
        codec.encode(ChangeEvent(op=Op.INSERT, extra={"d": 0}))


def test_guard_lets_bugs_and_deliberate_errors_through() -> None:
    codec = _Probe()
    with pytest.raises(RuntimeError):
        codec.decode(Record(value=b'{"boom": 1}'))
    with pytest.raises(DecodeError, match="malformed JSON"):
        codec.decode(Record(value=b"{nope"))


def test_guard_on_a_function_names_the_format() -> None:
    @guard(DecodeError, lambda _c, arg, exc: f"bad {arg!r}: {exc}", format="fmt")
    def parse_int(text: str) -> int:
        return int(text)

    assert parse_int("7") == 7
    with pytest.raises(DecodeError, match=r"^fmt: bad 'x': invalid literal"):
        parse_int("x")


def test_identity_cache_keys_on_identity_not_equality() -> None:
    from cdc_smt.transforms.model import Column, IdentityCache, TableSchema

    cache = IdentityCache(size=2)
    a = TableSchema((Column("id", "int"),))
    twin = TableSchema((Column("id", "int"),))
    assert a == twin and cache.get(a) is None
    built: list[int] = []
    assert cache.get_or_build(a, None, "x", lambda: built.append(1) or "plan") == "plan"
    assert cache.get_or_build(a, None, "x", lambda: built.append(1) or "other") == "plan"
    assert built == [1]
    assert cache.get(twin, None, "x") is None  # an equal schema is another schema
    assert cache.get(a, twin, "x", default="miss") == "miss"
    cache.put(a, twin, "x", "both")
    assert cache.get(a, twin, "x") == "both" and len(cache) == 2
    cache.put(twin, None, "y", 3)  # past size: starts afresh
    assert len(cache) == 1 and cache.get(a, None, "x") is None and cache.get(twin, None, "y") == 3


def test_every_connect_representation_kind_is_in_the_one_table() -> None:
    from cdc_smt.transforms.formats import _connect as c

    used = set(c._NAME_KINDS.values()) | set(c._LITERAL_KINDS.values()) | set(c._BINARY_KINDS.values())
    used |= {"decimal_num", "b64", "json_any"}
    assert used <= set(c.KINDS)
    assert set(c.KINDS) <= used  # nothing in the table that no field or option produces


def _at_depth(depth: int, fn: Callable[[], Any]) -> Any:
    """``fn()`` called ``depth`` Python frames deeper than here."""
    return fn() if depth == 0 else _at_depth(depth - 1, fn)


def _outcome(fn: Callable[[], Any]) -> str:
    try:
        return f"ok {fn()!r}"[:200]
    except (DecodeError, EncodeError, TypeError, ValueError, RecursionError) as exc:
        return f"{type(exc).__name__}: {exc}"


#: Nesting msgspec's exact parser reaches from a shallow stack and not from a deep one.
DEEP = 700


@pytest.mark.parametrize(
    "value",
    [
        b'{"a":' + b"[" * DEEP + b"x",  # malformed after the nesting
        b'{"a":' + b"[" * DEEP + b"]" * DEEP + b"}",  # well-formed
    ],
    ids=["malformed", "well-formed"],
)
def test_deep_documents_read_the_same_from_any_stack_depth(value: bytes) -> None:
    """The native plan's fallback, the worker and the CLI call a codec from different depths:
    a deep document must get one outcome (found by fuzzing maxwell-json and ogg-json)."""
    codec = get_codec("maxwell-json")
    shallow = _outcome(lambda: codec.parse(value))
    deep = _outcome(lambda: _at_depth(sys.getrecursionlimit() - DEEP // 2, lambda: codec.parse(value)))
    assert deep == shallow


def test_deep_json_values_render_the_same_from_any_stack_depth() -> None:
    """A JSON column's document past orjson's nesting limit: one error, whatever the caller's depth."""
    from cdc_smt.transforms.formats._schemaless import SchemalessJson

    depth = 400  # past orjson's 255; Python's copy of it needs two frames a level
    doc: Any = [2**70]
    for _ in range(depth):
        doc = [doc]
    shallow = _outcome(lambda: SchemalessJson.dumps(doc))
    deep = _outcome(lambda: _at_depth(sys.getrecursionlimit() - depth // 2, lambda: SchemalessJson.dumps(doc)))
    assert deep == shallow
