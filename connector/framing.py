"""Message files: how ``cdc-smt`` reads and writes many messages in one file.

Two framings, chosen by the codec's ``binary`` class attribute:

**Text (JSON formats)**: one message per line, UTF-8, ``\\n`` or ``\\r\\n``
line ends (a trailing ``\\r`` is stripped, as is a UTF-8 byte-order mark on
the first line). Blank lines are skipped, but positions are still counted from
the file, so "line 7" is line 7 in an editor. Only the message value is
carried: keys, topics and headers have no place in this framing, and a
tombstone (null value) cannot be written (the writer counts and skips it).

**Binary formats** (e.g. ``dts-avro``): an Avro object container file whose
every datum is one Kafka record, with this schema::

    {"type": "record", "name": "KafkaRecord", "namespace": "cdc_smt",
     "fields": [
       {"name": "key",       "type": ["null", "bytes"],  "default": null},
       {"name": "value",     "type": ["null", "bytes"],  "default": null},
       {"name": "topic",     "type": ["null", "string"], "default": null},
       {"name": "partition", "type": ["null", "int"],    "default": null},
       {"name": "offset",    "type": ["null", "long"],   "default": null},
       {"name": "timestamp", "type": ["null", "long"],   "default": null},
       {"name": "headers",   "type": {"type": "array", "items": {
           "type": "record", "name": "Header", "fields": [
             {"name": "key",   "type": "string"},
             {"name": "value", "type": ["null", "bytes"]}]}},
        "default": []}]}

The container keeps binary values intact (no escaping) and the Kafka
coordinates with them, so a dump of a topic can be replayed exactly. Files
written with a subset of these fields are accepted as long as ``value`` is
there. Positions in binary files are 1-based datum indexes ("record 7"). A
zero-byte file reads as no records.

``-`` means stdin / stdout everywhere.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any, BinaryIO, Union

import fastavro
import orjson
from fastavro.write import Writer as _AvroWriter

from cdc_smt.transforms.errors import CdcSmtError
from cdc_smt.transforms.model import Record

#: A path (``-`` for stdin/stdout) or an already open binary stream.
Source = Union[str, "os.PathLike[str]", BinaryIO]

STDIO = "-"
_BOM = b"\xef\xbb\xbf"

KAFKA_RECORD_AVRO: dict[str, Any] = {
    "type": "record",
    "name": "KafkaRecord",
    "namespace": "cdc_smt",
    "fields": [
        {"name": "key", "type": ["null", "bytes"], "default": None},
        {"name": "value", "type": ["null", "bytes"], "default": None},
        {"name": "topic", "type": ["null", "string"], "default": None},
        {"name": "partition", "type": ["null", "int"], "default": None},
        {"name": "offset", "type": ["null", "long"], "default": None},
        {"name": "timestamp", "type": ["null", "long"], "default": None},
        {
            "name": "headers",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "Header",
                    "fields": [
                        {"name": "key", "type": "string"},
                        {"name": "value", "type": ["null", "bytes"]},
                    ],
                },
            },
            "default": [],
        },
    ],
}
_PARSED_SCHEMA = fastavro.parse_schema(KAFKA_RECORD_AVRO)


class FramingError(CdcSmtError):
    """A message file that cannot be read or written in its framing."""


def unit(binary: bool) -> str:
    """What a position counts: ``line`` in text files, ``record`` in Avro containers."""
    return "record" if binary else "line"


def display_name(source: Source) -> str:
    """How error messages name a file or stream."""
    if isinstance(source, (str, os.PathLike)):
        text = os.fspath(source)
        return "<stdin>" if text == STDIO else text
    name = getattr(source, "name", None)
    return name if isinstance(name, str) else "<stream>"


@contextmanager
def _open_input(source: Source) -> Iterator[BinaryIO]:
    if not isinstance(source, (str, os.PathLike)):
        yield source
        return
    if os.fspath(source) == STDIO:
        yield sys.stdin.buffer
        return
    try:
        stream = open(source, "rb")
    except OSError as exc:
        raise FramingError(f"cannot open {os.fspath(source)!r}: {exc.strerror}") from None
    with stream:
        yield stream


# -- reading -------------------------------------------------------------------


def check_readable(source: Source) -> None:
    """Fail now (not at the first read) when an input file cannot be opened,
    so nothing is created or truncated for a run that cannot start."""
    with _open_input(source):
        pass


def read_records(source: Source, binary: bool) -> Iterator[tuple[int, Record]]:
    """``(position, record)`` for each message of a file, in order.

    Text: position is the 1-based line number; binary: the 1-based datum index.
    """
    if binary:
        return _read_avro(source)
    return _read_lines(source)


def _read_lines(source: Source) -> Iterator[tuple[int, Record]]:
    for lineno, line in read_lines(source):
        yield lineno, Record(value=line)


def read_lines(source: Source) -> Iterator[tuple[int, bytes]]:
    """Non-blank lines without their line end, numbered from the file."""
    with _open_input(source) as stream:
        for lineno, raw in enumerate(stream, 1):
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            if lineno == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            if raw.strip():
                yield lineno, raw


def read_json_lines(source: Source) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` of a JSON Lines file; bad JSON names its line."""
    for lineno, line in read_lines(source):
        try:
            yield lineno, orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise FramingError(f"{display_name(source)}: line {lineno}: malformed JSON: {exc}") from None


_AVRO_MAGIC = b"Obj\x01"


def _peek(stream: BinaryIO, n: int) -> bytes | None:
    """Up to ``n`` leading bytes without consuming them; ``None`` if the stream cannot tell."""
    peek = getattr(stream, "peek", None)
    if peek is not None:
        return peek(n)[:n]
    if stream.seekable():
        here = stream.tell()
        head = stream.read(n)
        stream.seek(here)
        return head
    return None


def _read_avro(source: Source) -> Iterator[tuple[int, Record]]:
    name = display_name(source)
    with _open_input(source) as stream:
        head = _peek(stream, len(_AVRO_MAGIC))
        if head == b"":
            return
        if head is not None and len(head) == len(_AVRO_MAGIC) and head != _AVRO_MAGIC:
            hint = " (this looks like text; JSON formats are read one message per line)" if head.isascii() else ""
            raise FramingError(f"{name}: not an Avro object container file: it does not start with 'Obj\\x01'{hint}")
        try:
            reader = fastavro.reader(stream)
        except ValueError as exc:
            raise FramingError(f"{name}: not an Avro object container file ({exc})") from None
        fields = _field_names(reader.writer_schema)
        if "value" not in fields:
            raise FramingError(
                f"{name}: Avro container does not hold Kafka records (its schema has no 'value' field; "
                f"fields: {', '.join(sorted(fields)) or 'none'})"
            )
        index = 0
        datums = iter(reader)
        while True:
            try:
                datum = next(datums)
            except StopIteration:
                return
            except Exception as exc:  # noqa: BLE001 - fastavro raises EOFError, ValueError, ... on damage
                raise FramingError(
                    f"{name}: Avro container truncated or corrupt at record {index + 1} "
                    f"(after {index} good records): {type(exc).__name__}: {exc}"
                ) from None
            index += 1
            if not isinstance(datum, dict):  # the schema is a record (checked above), so never expected
                raise FramingError(f"{name}: Avro record {index} is a {type(datum).__name__}, not a record")
            yield index, _record_from_datum(datum)


def _field_names(schema: Any) -> set[str]:
    if isinstance(schema, dict) and schema.get("type") == "record":
        return {f["name"] for f in schema.get("fields", ())}
    return set()


def _record_from_datum(datum: dict[str, Any]) -> Record:
    headers = [(h["key"], h.get("value")) for h in datum.get("headers") or ()]
    return Record(
        value=datum["value"],
        key=datum.get("key"),
        topic=datum.get("topic"),
        partition=datum.get("partition"),
        offset=datum.get("offset"),
        timestamp=datum.get("timestamp"),
        headers=headers,
    )


def _datum_from_record(record: Record) -> dict[str, Any]:
    return {
        "key": record.key,
        "value": record.value,
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "headers": [{"key": k, "value": v} for k, v in record.headers],
    }


# -- writing -------------------------------------------------------------------


class RecordWriter:
    """Writes records in the framing of a text or binary format.

    Use as a context manager; :meth:`close` flushes the Avro block and closes
    files it opened (never stdout or a stream passed in). ``written`` counts
    records written, ``tombstones_skipped`` null values a text file could not hold.
    """

    def __init__(self, dest: Source, binary: bool, *, avro_codec: str = "null") -> None:
        self.binary = binary
        self.name = "<stdout>" if _is_stdio(dest) else display_name(dest)
        self.written = 0
        self.tombstones_skipped = 0
        self._owned: IO[bytes] | None = None
        if _is_stdio(dest):
            if binary and sys.stdout.isatty():
                raise FramingError("refusing to write an Avro container to a terminal; use -o FILE")
            self._stream: BinaryIO = sys.stdout.buffer
        elif isinstance(dest, (str, os.PathLike)):
            try:
                self._owned = self._stream = open(dest, "wb")
            except OSError as exc:
                raise FramingError(f"cannot open {os.fspath(dest)!r} for writing: {exc.strerror}") from None
        else:
            self._stream = dest
        self._avro = _AvroWriter(self._stream, _PARSED_SCHEMA, codec=avro_codec) if binary else None

    def write(self, record: Record) -> bool:
        """Write one record; False when a text file had to skip a tombstone."""
        if self._avro is not None:
            self._avro.write(_datum_from_record(record))
        else:
            value = record.value
            if value is None:
                self.tombstones_skipped += 1
                return False
            if b"\n" in value:
                raise FramingError(f"{self.name}: message contains a line break; it cannot be written one per line")
            self._stream.write(value)
            self._stream.write(b"\n")
        self.written += 1
        return True

    def close(self) -> None:
        if self._avro is not None:
            self._avro.flush()
            self._avro = None
        if self._owned is not None:
            self._owned.close()
            self._owned = None
        else:
            self._stream.flush()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _is_stdio(dest: Source) -> bool:
    return isinstance(dest, (str, os.PathLike)) and os.fspath(dest) == STDIO


def write_records(dest: Source, records: Any, binary: bool) -> int:
    """Write an iterable of records to ``dest``; returns how many were written."""
    with RecordWriter(dest, binary) as writer:
        for record in records:
            writer.write(record)
        return writer.written


__all__ = [
    "KAFKA_RECORD_AVRO",
    "FramingError",
    "check_readable",
    "RecordWriter",
    "Source",
    "display_name",
    "read_json_lines",
    "read_lines",
    "read_records",
    "unit",
    "write_records",
]
