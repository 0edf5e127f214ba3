"""Kafka records as JSON lines: what ``cdc-smt produce`` reads and ``cdc-smt consume`` writes.

One record per line::

    {"topic": "shop.canal", "partition": 0, "offset": 12, "timestamp": 1700000000000,
     "key": "shop.orders", "value": "{\\"data\\": ...}", "headers": [["source", "canal"]]}

``key`` and ``value`` are text (UTF-8); bytes that are not text, or every
field with ``--base64`` (binary formats such as ``dts-avro``), are written as
``key_base64`` / ``value_base64``, and headers as ``headers_base64``. A null
is a null key or a tombstone. For input, ``key`` and ``value`` may also be a
JSON object or array (written compactly, handy for CDC messages), headers may
be a mapping, and ``offset`` is ignored, so what ``consume`` wrote can be
produced again.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import logging
import os
from collections.abc import Iterator
from typing import Any

import msgspec
import orjson

from cdc_smt.connector.framing import FramingError, display_name, read_json_lines
from cdc_smt.connector.kafka.settings import DEFAULT_CONNECT_TIMEOUT_S
from cdc_smt.transforms.errors import CdcSmtError
from cdc_smt.transforms.model import Record

#: ``--bootstrap`` when neither the flag nor ``$CDC_SMT_BOOTSTRAP`` is given (as the example jobs).
DEFAULT_BOOTSTRAP = "localhost:9092"

_Payload = str | dict[str, Any] | list[Any] | None
_Headers = list[tuple[str, str | None]] | dict[str, str | None] | None


class RecordLine(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """One line of a records file (every field optional)."""

    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    timestamp: int | None = None
    key: _Payload = None
    key_base64: str | None = None
    value: _Payload = None
    value_base64: str | None = None
    headers: _Headers = None
    headers_base64: list[tuple[str, str | None]] | None = None


def bootstrap_argument(parser: Any) -> None:
    """``--bootstrap``, defaulting to ``$CDC_SMT_BOOTSTRAP``, and ``--connect-timeout``."""
    parser.add_argument(
        "--bootstrap",
        default=os.environ.get("CDC_SMT_BOOTSTRAP", DEFAULT_BOOTSTRAP),
        metavar="HOST:PORT",
        help=f"Kafka bootstrap servers (default: $CDC_SMT_BOOTSTRAP, else {DEFAULT_BOOTSTRAP})",
    )
    parser.add_argument(
        "--connect-timeout",
        type=_seconds,
        default=DEFAULT_CONNECT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long to wait for a broker that refuses or does not answer (default: {DEFAULT_CONNECT_TIMEOUT_S:g})",
    )


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"expected more than 0 and at most 3600 seconds, got {text}")
    return value


async def wait_for_broker(bootstrap: str, connect_timeout: float) -> None:
    """The start-up probe: return once ``--bootstrap`` answers, else raise ``KafkaUnavailable``."""
    from cdc_smt.connector import kafka as K

    await K.wait_until_ready(
        bootstrap, timeout=connect_timeout, timeout_setting="--connect-timeout", address_setting="--bootstrap"
    )


def require_kafka_client(command: str) -> None:
    """A clear error instead of a traceback when aiokafka (the worker extra) is missing."""
    try:
        import aiokafka  # noqa: F401
    except ImportError:
        raise CdcSmtError(
            f"{command} needs the worker extra: pip install 'cdc-smt[worker]' (cannot import aiokafka)"
        ) from None


def quiet_client_logs() -> None:
    """aiokafka logs every failed connection attempt as an ERROR; the command reports the
    outcome in one line instead (``--log-level info`` or ``debug`` shows them)."""
    if logging.getLogger().getEffectiveLevel() > logging.INFO:
        logging.getLogger("aiokafka").setLevel(logging.CRITICAL)


# -- reading ------------------------------------------------------------------------------
def read_record_lines(source: str) -> Iterator[tuple[int, Record]]:
    """``(line number, record)`` of a records file; a bad line raises :class:`FramingError` naming it."""
    for lineno, obj in read_json_lines(source):
        try:
            record = _record(msgspec.convert(obj, RecordLine))
        except (msgspec.ValidationError, ValueError) as exc:
            raise FramingError(f"{display_name(source)}: line {lineno}: {exc}") from None
        yield lineno, record


def _record(line: RecordLine) -> Record:
    if line.partition is not None and line.partition < 0:
        raise ValueError(f"partition must be 0 or more, got {line.partition}")
    return Record(
        value=_payload(line.value, line.value_base64, "value"),
        key=_payload(line.key, line.key_base64, "key"),
        topic=line.topic,
        partition=line.partition,
        timestamp=line.timestamp,
        headers=_headers(line),
    )


def _payload(text: _Payload, b64: str | None, name: str) -> bytes | None:
    if b64 is not None:
        if text is not None:
            raise ValueError(f"give {name} or {name}_base64, not both")
        return _b64decode(b64, f"{name}_base64")
    if text is None:
        return None
    if isinstance(text, str):
        return text.encode("utf-8")
    return orjson.dumps(text)


def _headers(line: RecordLine) -> list[tuple[str, bytes]]:
    if line.headers is not None and line.headers_base64 is not None:
        raise ValueError("give headers or headers_base64, not both")
    if line.headers_base64 is not None:
        return [(k, b"" if v is None else _b64decode(v, f"headers_base64 {k!r}")) for k, v in line.headers_base64]
    pairs = line.headers.items() if isinstance(line.headers, dict) else (line.headers or ())
    return [(k, b"" if v is None else v.encode("utf-8")) for k, v in pairs]


def _b64decode(text: str, field: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"{field} is not base64: {exc}") from None


# -- writing ------------------------------------------------------------------------------
def record_line(record: Record, force_base64: bool = False) -> bytes:
    """One JSON line for ``record``: text where the bytes are UTF-8, base64 otherwise (or always)."""
    out: dict[str, Any] = {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
    }
    _put(out, "key", record.key, force_base64)
    _put(out, "value", record.value, force_base64)
    texts = None if force_base64 else _texts([v for _, v in record.headers])
    if texts is not None:
        out["headers"] = [[k, t] for (k, _), t in zip(record.headers, texts, strict=True)]
    else:
        out["headers_base64"] = [[k, base64.b64encode(v).decode("ascii")] for k, v in record.headers]
    return orjson.dumps(out)


def _put(out: dict[str, Any], name: str, data: bytes | None, force_base64: bool) -> None:
    if data is None:
        out[name] = None
        return
    text = None if force_base64 else _texts([data])
    if text is not None:
        out[name] = text[0]
    else:
        out[f"{name}_base64"] = base64.b64encode(data).decode("ascii")


def _texts(items: list[bytes]) -> list[str] | None:
    try:
        return [b.decode("utf-8") for b in items]
    except UnicodeDecodeError:
        return None


__all__ = [
    "DEFAULT_BOOTSTRAP",
    "RecordLine",
    "bootstrap_argument",
    "quiet_client_logs",
    "read_record_lines",
    "record_line",
    "require_kafka_client",
    "wait_for_broker",
]
