"""The codec base: what every format shares, so each format overrides only what differs.

A codec turns one Kafka :class:`Record` into zero or more canonical
:class:`ChangeEvent` objects (``decode``) and back (``encode``). One codec
instance serves one stream (one source partition, one file): codecs that need
state across messages (schema catalog, update pairing) keep it on the instance
and hand back anything still pending from :meth:`Codec.flush`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Iterable, Mapping

import orjson

from transforms.errors import DecodeError, EncodeError
from transforms.model import ChangeEvent, Record
from transforms.options import Option, Options, check_timezone, merge, resolve

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
    ``"none"``.
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


class Codec:
    """Base class of every format. Subclasses set ``name`` and override
    ``decode``/``encode`` (or the JSON hooks of :class:`JsonCodec`)."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    binary: ClassVar[bool] = False
    options: ClassVar[tuple[Option, ...]] = ()
    capabilities: ClassVar[Capabilities] = Capabilities()

    def __init__(self, options: Mapping[str, Any] | None = None, *, path: str = "", catalog: Any = None) -> None:
        self.opts: Options = resolve(self.all_options(), options or {}, path)
        self.catalog = catalog

    @classmethod
    def all_options(cls) -> tuple[Option, ...]:
        return merge(COMMON_OPTIONS, cls.options)

    # -- the contract ------------------------------------------------------
    def decode(self, record: Record) -> list[ChangeEvent]:
        raise NotImplementedError

    def encode(self, event: ChangeEvent) -> list[Record]:
        raise NotImplementedError

    def flush(self) -> list[ChangeEvent]:
        """Events held back waiting for a partner message (end of stream)."""
        return []

    # -- batch variants (override for speed) ---------------------------------
    def decode_batch(self, records: Iterable[Record]) -> list[ChangeEvent]:
        out: list[ChangeEvent] = []
        for r in records:
            out.extend(self.decode(r))
        return out

    def encode_batch(self, events: Iterable[ChangeEvent]) -> list[Record]:
        out: list[Record] = []
        for e in events:
            out.extend(self.encode(e))
        return out

    # -- helpers -----------------------------------------------------------
    def check_size(self, value: bytes) -> None:
        if len(value) > self.opts.max_message_bytes:
            raise DecodeError(
                f"message of {len(value)} bytes exceeds max_message_bytes={self.opts.max_message_bytes}",
                format=self.name,
            )

    @classmethod
    def sniff(cls, message: Any) -> bool:
        """Does a parsed message (dict for JSON formats, bytes for binary) look like ours?"""
        return False


class JsonCodec(Codec):
    """Shared JSON behaviour: parse/serialise with orjson, error wording, framing.

    Subclasses implement ``decode_message(obj, record)`` and
    ``encode_message(event)`` (returning one JSON-able object or a list of them,
    or ``None`` for a tombstone).
    """

    def decode(self, record: Record) -> list[ChangeEvent]:
        value = record.value
        if value is None:
            return self.decode_tombstone(record)
        self.check_size(value)
        try:
            obj = orjson.loads(value)
        except orjson.JSONDecodeError as exc:
            raise DecodeError(f"malformed JSON: {exc}", format=self.name) from None
        if not isinstance(obj, dict):
            raise DecodeError(f"expected a JSON object, got {type(obj).__name__}", format=self.name)
        try:
            events = self.decode_message(obj, record)
        except DecodeError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:
            raise DecodeError(f"not a valid {self.name} message: {describe_error(exc)}", format=self.name) from None
        return events

    def decode_tombstone(self, record: Record) -> list[ChangeEvent]:
        """A null value. Most formats have none; Debezium overrides."""
        raise DecodeError("null message value (tombstone) is not part of this format", format=self.name)

    def decode_message(self, obj: dict, record: Record) -> list[ChangeEvent]:
        raise NotImplementedError

    def encode(self, event: ChangeEvent) -> list[Record]:
        try:
            out = self.encode_message(event)
        except EncodeError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:
            raise EncodeError(f"cannot encode {event.op.value} event: {describe_error(exc)}", format=self.name) from None
        if out is None:
            return []
        objs = out if isinstance(out, list) else [out]
        key = self.encode_key(event)
        return [Record(value=self.dumps(o), key=key, topic=event.topic, headers=list(event.headers or ())) for o in objs]

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


def json_default(v: Any) -> Any:
    """Last-resort JSON rendering for typed values inside keys and extras."""
    from decimal import Decimal
    import base64
    import datetime as dt

    if isinstance(v, Decimal):
        return format(v, "f")
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, dt.timedelta):
        from transforms.types import format_time

        return format_time(v)
    if isinstance(v, (dt.date, dt.datetime, dt.time)):
        return v.isoformat()
    raise TypeError(f"Type is not JSON serializable: {type(v).__name__}")


def describe_error(exc: BaseException) -> str:
    """A short reason for a parsing exception (``missing field 'type'``)."""
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}"
    return f"{type(exc).__name__}: {exc}"
