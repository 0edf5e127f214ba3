"""The codec base: what every format shares, so each format overrides only what differs.

A codec turns one Kafka :class:`Record` into zero or more canonical
:class:`ChangeEvent` objects (``decode``) and back (``encode``). One codec
instance serves one stream (one source partition, one file): codecs that need
state across messages (schema catalog, update pairing) keep it on the instance
and hand back anything still pending from :meth:`Codec.flush`; hosts that
checkpoint a stream persist that state through :meth:`Codec.pending_state` and
:meth:`Codec.restore_state`.
"""

from __future__ import annotations

import functools
import struct
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar, TypeVar, cast, overload

import msgspec
import orjson

from cdc_smt.transforms.errors import DecodeError, EncodeError
from cdc_smt.transforms.model import TOMBSTONE, UNWRAPPED, ChangeEvent, Record, TableSchema
from cdc_smt.transforms.options import Option, Options, check_timezone, merge, resolve


def _positive(v: int) -> None:
    if v <= 0:
        raise ValueError("must be > 0")


#: Options every codec has.
COMMON_OPTIONS: tuple[Option, ...] = (
    Option(
        "source_timezone",
        str,
        "UTC",
        "IANA zone of zone-less DATETIME/TIMESTAMP text in this format (CDC from "
        "Chinese clouds is commonly Asia/Shanghai). Decoders tag events with it; "
        "encoders of zoned formats convert from the event's zone.",
        check=check_timezone,
    ),
    Option(
        "max_message_bytes",
        int,
        16 * 1024 * 1024,
        "Messages larger than this are rejected as errors (dead-lettered), not parsed.",
        check=_positive,
    ),
)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a format carries; drives the capability matrix and loss reports.

    ``before_image``: ``"full"``, ``"changed"`` (only changed columns) or
    ``"none"``. ``snapshot_reads``: the format tells snapshot (initial load)
    rows apart from inserts (Canal ``INIT``, Debezium ``r``, Maxwell
    ``bootstrap-insert``); a format without it writes them as inserts.
    """

    before_image: str = "full"
    column_types: bool = False
    primary_key: bool = False
    binlog_position: bool = False
    gtid: bool = False
    transactions: bool = False
    ddl: bool = False
    heartbeats: bool = False
    watermarks: bool = False
    typed_values: bool = False
    snapshot_reads: bool = False


#: What malformed input (or an event a format cannot carry) raises inside a codec: the one
#: set :func:`guard` turns into a DecodeError/EncodeError. ``ValueError`` covers JSON, type
#: and number parse errors, bad base64 and Unicode; ``LookupError`` missing fields, indexes
#: and charsets; ``ArithmeticError`` overflows and decimal signals; ``struct.error`` packing.
#: ``RecursionError`` a value nested too deeply to render or to type.
#: Anything else is a bug, and reaches the dead letter with its own name.
EXPECTED_ERRORS: tuple[type[Exception], ...] = (
    LookupError,
    TypeError,
    ValueError,
    AttributeError,
    ArithmeticError,
    struct.error,
    RecursionError,
)

_F = TypeVar("_F", bound=Callable[..., Any])
#: ``reason(codec or None, the first argument, the exception)``: the error's text.
Reason = Callable[[Any, Any, BaseException], str]


def guard(
    error: type[DecodeError] | type[EncodeError],
    reason: Reason,
    *,
    errors: tuple[type[BaseException], ...] = EXPECTED_ERRORS,
    format: str | None = None,
) -> Callable[[_F], _F]:
    """The one error guard: decorates a codec method ``(self, arg, ...)`` -- or, given the
    ``format`` name, a function ``(arg, ...)`` -- so that what malformed input raises
    (``errors``) becomes ``error`` worded by ``reason``; the error a user sees names the
    format and the cause, never a traceback. Errors the codec raised on purpose pass."""

    def decorate(fn: _F) -> _F:
        if format is None:

            @functools.wraps(fn)
            def method(self: Any, arg: Any, *rest: Any) -> Any:
                try:
                    return fn(self, arg, *rest)
                except errors as exc:
                    raise error(reason(self, arg, exc), format=self.name) from None

            # cast: functools.wraps gives the wrapper fn's signature, which mypy cannot see.
            return cast(_F, method)

        @functools.wraps(fn)
        def function(arg: Any, *rest: Any) -> Any:
            try:
                return fn(arg, *rest)
            except errors as exc:
                raise error(reason(None, arg, exc), format=format) from None

        return cast(_F, function)

    return decorate


def _not_valid(codec: Any, _record: Any, exc: BaseException) -> str:
    """The reason of :meth:`Codec.decode`'s guard: "not a valid <format> message: missing field 'type'"."""
    return f"not a valid {codec.name} message: {describe_error(exc)}"


def _cannot_encode(_codec: Any, event: Any, exc: BaseException) -> str:
    """The reason of :meth:`Codec.encode`'s guard: "cannot encode insert event: ValueError: ..."."""
    return f"cannot encode {event.op.value} event: {describe_error(exc)}"


class Codec:
    """Base class of every format. Subclasses set ``name`` and override the hooks:
    ``configure`` (per-instance setup), ``parse`` + ``decode_message`` (one message in),
    ``encode_records`` (one event out; :class:`JsonCodec` has it call ``encode_message``).
    ``decode``/``encode`` run them under the error guard."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    binary: ClassVar[bool] = False
    options: ClassVar[tuple[Option, ...]] = ()
    capabilities: ClassVar[Capabilities] = Capabilities()
    #: Keep a schema catalog of its own when the host gives none (formats whose
    #: rows only the catalog can name or type, fed by DDL in the same stream).
    own_catalog: ClassVar[bool] = False
    #: Which ways the format works: a decode-only (or encode-only) codec sets the
    #: other to False, and hosts refuse it on that side of a chain.
    can_decode: ClassVar[bool] = True
    can_encode: ClassVar[bool] = True

    def __init__(self, options: Mapping[str, Any] | None = None, *, path: str = "", catalog: Any = None) -> None:
        self.opts: Options = resolve(self.all_options(), options or {}, path)
        self._max_message_bytes: int = self.opts.max_message_bytes  # read per message
        if catalog is None and self.own_catalog:
            from cdc_smt.transforms.catalog import SchemaCatalog  # sqlglot is heavy: only for these formats

            catalog = SchemaCatalog()
        self.catalog = catalog
        self.configure()

    @classmethod
    def all_options(cls) -> tuple[Option, ...]:
        return merge(COMMON_OPTIONS, cls.options)

    def configure(self) -> None:
        """Set up what the options decide and the per-stream state, once (``self.opts`` is
        resolved and validated by then). Subclasses extend it (calling ``super().configure()``
        when their base has one) instead of re-declaring ``__init__``."""

    # -- the contract ------------------------------------------------------
    # Both run under the guard (EXPECTED_ERRORS, reasons _not_valid/_cannot_encode) written
    # out rather than as @guard: they run once per message, and a wrapper costs a call.
    def decode(self, record: Record) -> list[ChangeEvent]:
        """One record's events: :meth:`parse` its value, then :meth:`decode_message`
        (a null value: :meth:`decode_tombstone`)."""
        value = record.value
        if value is None:
            return self.decode_tombstone(record)
        if len(value) > self._max_message_bytes:
            self.check_size(value)
        try:
            return self.decode_message(self.parse(value), record)
        except EXPECTED_ERRORS as exc:
            raise DecodeError(_not_valid(self, record, exc), format=self.name) from None

    def encode(self, event: ChangeEvent) -> list[Record]:
        """One event's records (see :meth:`encode_records`)."""
        try:
            return self.encode_records(event)
        except EXPECTED_ERRORS as exc:
            raise EncodeError(_cannot_encode(self, event, exc), format=self.name) from None

    # -- hooks ---------------------------------------------------------------
    def parse(self, value: bytes) -> Any:
        """The message in a record's value (a ``dict`` for JSON formats); raises
        DecodeError for bytes that are not one."""
        raise NotImplementedError

    def decode_tombstone(self, record: Record) -> list[ChangeEvent]:
        """A null value. Most formats have none; Debezium's are Kafka tombstones."""
        raise DecodeError("null message value (tombstone) is not part of this format", format=self.name)

    def decode_message(self, message: Any, record: Record) -> list[ChangeEvent]:
        """The events of one parsed message."""
        raise NotImplementedError

    def encode_records(self, event: ChangeEvent) -> list[Record]:
        """The records of one event (none for events the format has no message for)."""
        raise NotImplementedError

    def flush(self) -> list[ChangeEvent]:
        """Events held back waiting for a partner message (end of stream)."""
        return []

    # -- per-stream state ----------------------------------------------------
    def pending_state(self) -> dict:
        """What this codec holds across messages, as plain JSON-able data.

        The hook hosts use to persist per-stream codec state (a Faust table, a
        checkpoint) so a restarted worker continues where it stopped: store the
        dict after each committed batch and hand it to :meth:`restore_state` of
        the next instance. Stateless codecs return ``{}``.
        """
        return {}

    def restore_state(self, state: dict) -> None:
        """Reload what :meth:`pending_state` returned, replacing the current state
        (a no-op for stateless codecs)."""

    # -- batch variants (override for speed) ---------------------------------
    def decode_batch(self, records: Iterable[Record]) -> list[ChangeEvent]:
        out: list[ChangeEvent] = []
        for r in records:
            out.extend(self.decode(r))
        return out

    def encode_batch(self, events: Iterable[ChangeEvent]) -> list[Record]:
        out: list[Record] = []
        encode = self.encode
        for e in events:
            out += encode(e)
        return out

    # -- helpers -----------------------------------------------------------
    def catalog_schema(self, database: str | None, table: str | None) -> TableSchema | None:
        """The catalog's schema for a table, or ``None`` (no catalog / no table / unknown table)."""
        if self.catalog is None or table is None:
            return None
        return self.catalog.get(database, table)

    def check_size(self, value: bytes) -> None:
        if len(value) > self._max_message_bytes:
            raise DecodeError(
                f"message of {len(value)} bytes exceeds max_message_bytes={self._max_message_bytes}",
                format=self.name,
            )

    @classmethod
    def sniff(cls, message: Any) -> bool:
        """Does a parsed message (dict for JSON formats, bytes for binary) look like ours?"""
        return False


def _exact_float(text: str) -> float | Decimal:
    """A JSON number with a fraction or exponent: a float when the float writes back as the
    same text, else the exact ``Decimal`` (more digits than a double holds, or a DECIMAL's
    trailing zeros: ``54331.10``)."""
    f = float(text)
    return f if orjson.dumps(f) == text.encode() else Decimal(text)


#: Parses JSON numbers a float would change as exact Decimals (see ``JsonCodec.exact_numbers``).
_EXACT_JSON = msgspec.json.Decoder(float_hook=_exact_float)


def exact_json_loads(value: bytes | str) -> Any:
    """``value`` parsed with exact numbers, the same in every host.

    msgspec's parser recurses once per nesting level against the interpreter's recursion
    limit, so how deep a document may be depends on how deep the caller's stack already is:
    the native plan's fallback, the worker and the CLI would word one message differently.
    A ``RecursionError`` is therefore settled on a new thread, where the depth left is the
    same for every caller (a caller that did not reach the limit gets what the new thread gets).
    """
    try:
        return _EXACT_JSON.decode(value)
    except RecursionError:
        return on_a_new_stack(_EXACT_JSON.decode, value)


def on_a_new_stack(fn: Callable[[Any], Any], arg: Any) -> Any:
    """``fn(arg)`` on a new thread: its result, or its exception raised here."""
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, fn(arg)))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="cdc-smt-deep-json")
    thread.start()
    thread.join()
    ok, result = outcome[0]
    if ok:
        return result
    raise result


class JsonCodec(Codec):
    """Shared JSON behaviour: parse/serialise with orjson, error wording, framing.

    Subclasses implement ``decode_message(obj, record)`` and
    ``encode_message(event)`` (returning one JSON-able object or a list of them,
    or ``None`` for a tombstone).
    """

    #: Formats that write DECIMAL values as JSON numbers (Maxwell, OGG) parse
    #: numbers that a float would change as ``Decimal``s: through a double,
    #: ``decimal(20,4)`` amounts past 15-17 digits would be rounded, and
    #: ``54331.10`` would lose its scale.
    exact_numbers: ClassVar[bool] = False

    def parse(self, value: bytes) -> Any:
        """The JSON object in ``value`` (a ``dict``; Debezium overrides this with its own split form)."""
        try:
            obj = exact_json_loads(value) if self.exact_numbers else orjson.loads(value)
        except (orjson.JSONDecodeError, msgspec.DecodeError) as exc:
            raise DecodeError(f"malformed JSON: {exc}", format=self.name) from None
        except RecursionError:  # msgspec's exact-number parser on nesting orjson would refuse (on a new stack too)
            raise DecodeError("malformed JSON: nested too deeply", format=self.name) from None
        except UnicodeDecodeError as exc:  # msgspec reports invalid UTF-8 in a string this way
            raise DecodeError(f"malformed JSON: invalid UTF-8 at byte {exc.start}", format=self.name) from None
        except (
            ArithmeticError
        ):  # decimal.InvalidOperation: an exponent beyond what Decimal holds (1e3000000000000000000)
            raise DecodeError("malformed JSON: a number beyond the range of a decimal", format=self.name) from None
        if not isinstance(obj, dict):
            raise DecodeError(f"expected a JSON object, got {type(obj).__name__}", format=self.name)
        return obj

    def require(self, obj: dict, name: str, types: type | tuple[type, ...], nullable: bool = False) -> Any:
        """``obj[name]`` checked against ``types``; a DecodeError names the field otherwise
        (``missing field 'type'``, ``field 'ts' must be an integer, got a string``).
        ``bool`` is not accepted as an ``int`` unless listed."""
        if name not in obj:
            raise DecodeError(f"missing field {name!r}", format=self.name)
        v = obj[name]
        if v is None and nullable:
            return None
        allowed = types if isinstance(types, tuple) else (types,)
        if not isinstance(v, allowed) or (isinstance(v, bool) and bool not in allowed):
            expected = " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in allowed)
            raise DecodeError(f"field {name!r} must be {expected}, got {_json_name(v)}", format=self.name)
        return v

    def optional(self, obj: dict, name: str, types: type | tuple[type, ...]) -> Any:
        """Like :meth:`require` for fields that may be absent or null (``None`` then)."""
        if obj.get(name) is None:
            return None
        return self.require(obj, name, types)

    def encode_records(self, event: ChangeEvent) -> list[Record]:
        """``encode_message`` as records; the event markers of the model are handled here
        for every JSON format: a :data:`~transforms.model.TOMBSTONE` is one null-value
        record with the key, an :data:`~transforms.model.UNWRAPPED` event its flat row."""
        extra = event.extra
        if TOMBSTONE in extra and extra[TOMBSTONE]:
            return [Record(value=None, key=self.encode_key(event), topic=event.topic, headers=record_headers(event))]
        if UNWRAPPED in extra and extra[UNWRAPPED]:
            out = self.unwrapped_value(event)
        else:
            out = self.encode_message(event)
        if out is None:
            return []
        key = self.encode_key(event)
        if not isinstance(out, list):
            return [Record(value=self.dumps(out), key=key, topic=event.topic, headers=record_headers(event))]
        return [Record(value=self.dumps(o), key=key, topic=event.topic, headers=record_headers(event)) for o in out]

    def unwrapped_value(self, event: ChangeEvent) -> dict[str, Any]:
        """The flat row of an UNWRAPPED event (``after``, else ``before``), each value of a
        known column as :func:`transforms.types.to_json_value` renders it (TIMESTAMPs
        re-shown in this codec's ``source_timezone``); other values as they are."""
        from cdc_smt.transforms.types import Kind, rebase_timestamp, to_json_value

        if event.values is not None:
            event.typed()
        row = event.after if event.after is not None else event.before
        if row is None:
            raise EncodeError("unwrapped event without a row", format=self.name)
        by_name = event.schema.by_name if event.schema is not None else {}
        from_tz, to_tz = event.timezone, self.opts.source_timezone
        out: dict[str, Any] = {}
        for name, v in row.items():
            col = by_name.get(name)
            if col is None or v is None:
                out[name] = v
                continue
            t = col.mysql
            if t.kind is Kind.TIMESTAMP:
                v = rebase_timestamp(v, from_tz, to_tz)
            out[name] = to_json_value(t, v)
        return out

    def encode_message(self, event: ChangeEvent) -> Any:
        raise NotImplementedError

    def encode_key(self, event: ChangeEvent) -> bytes | None:
        """The Kafka key: the primary-key fields as a JSON object (``None`` if no key)."""
        key = event.key_values()
        if not key:
            return None
        return orjson.dumps(key, default=json_default)

    @staticmethod
    def dumps(obj: Any) -> bytes:
        return orjson.dumps(obj, default=json_default)


_TYPE_NAMES = {
    dict: "an object",
    list: "an array",
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
}


def _json_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    return _TYPE_NAMES.get(type(v), type(v).__name__)


def record_headers(event: ChangeEvent) -> list[tuple[str, bytes]]:
    """The headers an encoder writes for ``event``: ``event.headers`` when set (by a
    transform, even to ``[]``), else the headers of the record it was decoded from, as
    Kafka Connect keeps a record's headers by default."""
    headers = event.headers
    if headers is None:
        record = event.record
        if record is None:
            return []
        headers = record.headers
    return list(headers) if headers else []


def is_int(v: Any) -> bool:
    """A JSON integer (``bool`` is not one)."""
    return isinstance(v, int) and not isinstance(v, bool)


def in_original_order(out: dict[str, Any], keys: Iterable[str] | None, empty: tuple = (None,)) -> dict[str, Any]:
    """``out`` with the original message's key order and key set (same-format reproduction).

    Keys the original did not have are appended only when their value is not
    one of ``empty``, so a re-encoded message has exactly the original's fields
    plus the facts it did not carry. No ``keys``: ``out`` as it is.
    """
    if not keys:
        return out
    result = {k: out[k] for k in keys if k in out}
    for k, v in out.items():
        if k not in result and v not in empty:
            result[k] = v
    return result


@overload
def typed_image(event: ChangeEvent, image: dict[str, Any]) -> dict[str, Any]: ...
@overload
def typed_image(event: ChangeEvent, image: None) -> None: ...
@overload
def typed_image(event: ChangeEvent, image: dict[str, Any] | None) -> dict[str, Any] | None: ...
def typed_image(event: ChangeEvent, image: dict[str, Any] | None) -> dict[str, Any] | None:
    """A typed copy of one image of ``event`` (the event keeps its own value form)."""
    if image is None or event.values is None:
        return image
    by_name = event.schema.by_name if event.schema is not None else {}
    form = event.values
    out: dict[str, Any] = {}
    for name, raw in image.items():
        col = by_name.get(name)
        out[name] = form.to_python(col, raw) if col is not None and raw is not None else raw
    return out


#: The smallest exponent :func:`exact_number` writes in plain digits: a DECIMAL(65,30)'s scale,
#: and more (a double's digits), but not the hundred million zeros of ``1e-100000000``.
_PLAIN_EXPONENT_MIN = -400


def exact_number(v: Any) -> Any:
    """``orjson`` ``default`` that writes a ``Decimal`` as the JSON number it was parsed from
    (:attr:`JsonCodec.exact_numbers`); anything else as :func:`json_default` does."""
    if isinstance(v, Decimal) and v.is_finite():
        # Plain digits (keeps a DECIMAL's scale: 0.0000000000, not 0E-10), unless the number
        # was written with an exponent that plain digits would blow up (1E+400, 1E-100000000).
        exponent = v.as_tuple().exponent
        assert isinstance(exponent, int)  # finite: only NaN and infinities have 'n'/'N'/'F'
        return orjson.Fragment(str(v) if exponent > 0 or exponent < _PLAIN_EXPONENT_MIN else format(v, "f"))
    return json_default(v)


def json_default(v: Any) -> Any:
    """Last-resort JSON rendering for typed values inside keys and extras."""
    import base64
    import datetime as dt

    if isinstance(v, Decimal):
        return format(v, "f")
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, dt.timedelta):
        from cdc_smt.transforms.types import format_time

        return format_time(v)
    if isinstance(v, (dt.date, dt.datetime, dt.time)):
        return v.isoformat()
    raise TypeError(f"Type is not JSON serializable: {type(v).__name__}")


def describe_error(exc: BaseException) -> str:
    """A short reason for a parsing exception (``missing field 'type'``)."""
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}"
    if isinstance(exc, RecursionError):  # its text would be Python's, not the input's
        return "a value is nested too deeply"
    return f"{type(exc).__name__}: {exc}"
