"""Where a backfill task writes: Kafka topics, JSON Lines or Parquet files, dead letters.

A task writes its own output as it goes (no second pass over the data and no
shuffle), in source order, so order per key is the source partition's order.

Kafka output goes through aiokafka's batch API (:func:`connector.kafka.produce_records`)
with the worker's partitioning: murmur2 of the key, keyless records to the
source partition (modulo the output partition count), the source timestamp
kept. Every chunk is acknowledged before the next is sent.

File output is laid out for lakehouse loading and for idempotent retries::

    <path>/topic=<topic>/batch=<micro-batch id>/<stream>.jsonl|.parquet

where ``<stream>`` is ``<source topic>-<partition>`` or the source file's name.

A file is written under a hidden temporary name and renamed when complete;
the driver deletes a micro-batch's directories before (re)running it, so a
re-run batch replaces what an interrupted attempt left.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson

from cdc_smt.transforms.chain import DeadLetter
from cdc_smt.transforms.model import Record

#: Output records sent to Kafka per acknowledged chunk.
KAFKA_CHUNK = 5_000
#: Rows per Parquet row group (and per schema inference).
PARQUET_CHUNK = 50_000
_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")


def safe_name(text: str) -> str:
    """A file-name-safe rendering of a topic or stream name."""
    return _UNSAFE.sub("_", text).strip("_") or "_"


def batch_dir(root: str, topic: str | None, batch_id: int) -> Path:
    base = Path(root) / f"topic={safe_name(topic)}" if topic is not None else Path(root)
    return base / f"batch={batch_id:06d}"


def clear_batch(root: str, batch_id: int) -> None:
    """Remove what an interrupted attempt at ``batch_id`` wrote under ``root`` (driver side)."""
    base = Path(root)
    if not base.is_dir():
        return
    name = f"batch={batch_id:06d}"
    for d in [base / name, *(p / name for p in base.glob("topic=*"))]:
        if d.is_dir():
            shutil.rmtree(d)


# -- files ---------------------------------------------------------------------------------------


class _AtomicFile:
    """A file written under a hidden name and renamed into place on :meth:`commit`."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")

    def commit(self) -> None:
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        try:
            self.tmp.unlink()
        except FileNotFoundError:
            pass


class JsonLinesWriter(_AtomicFile):
    """Message values one per line (tombstones have no line: counted and skipped)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._file = open(self.tmp, "wb")  # noqa: SIM115 - closed in commit/abort
        self.tombstones = 0

    def write(self, values: Iterable[bytes | None]) -> None:
        out = []
        for v in values:
            if v is None:
                self.tombstones += 1
            else:
                out.append(v)
        if out:
            self._file.write(b"\n".join(out) + b"\n")

    def commit(self) -> None:
        self._file.close()
        super().commit()

    def abort(self) -> None:
        self._file.close()
        super().abort()


class ParquetWriter(_AtomicFile):
    """JSON object values as rows (flat ones from ``unwrap`` make flat tables).

    Column types come from the values; a column whose values disagree on type
    (or are objects/lists of mixed shape) is written as JSON text, and an
    all-null column as string. A chunk whose schema differs from the file's
    starts a new file (``<stream>-0001.parquet``) rather than failing.
    """

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._base = path
        self._writer: Any = None
        self._schema: Any = None
        self._parts = 0
        self._done: list[_AtomicFile] = []
        self.tombstones = 0

    def write(self, values: Iterable[bytes | None]) -> None:
        rows = []
        for v in values:
            if v is None:
                self.tombstones += 1
            else:
                rows.append(orjson.loads(v))
        if rows:
            self._write_table(rows_to_table(rows))

    def _write_table(self, table: Any) -> None:
        import pyarrow.parquet as pq

        if self._writer is not None and not table.schema.equals(self._schema):
            try:
                table = table.cast(self._schema)
            except Exception:  # noqa: BLE001 - incompatible: start the next file
                self._roll()
        if self._writer is None:
            self._schema = table.schema
            self._writer = pq.ParquetWriter(self.tmp, table.schema)
        self._writer.write_table(table)

    def _roll(self) -> None:
        self._writer.close()
        self._writer = None
        self._done.append(_Renamed(self.tmp, self.path))
        self._parts += 1
        self.path = self._base.with_name(f"{self._base.stem}-{self._parts:04d}{self._base.suffix}")
        self.tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")

    def commit(self) -> None:
        if self._writer is not None:
            self._writer.close()
            super().commit()
        for f in self._done:
            f.commit()

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.close()
        super().abort()
        for f in self._done:
            f.abort()


class _Renamed(_AtomicFile):
    def __init__(self, tmp: Path, path: Path) -> None:  # noqa: D107 - already written
        self.tmp, self.path = tmp, path


def rows_to_table(rows: Sequence[Any]) -> Any:
    """A pyarrow Table from JSON values; non-objects become a single ``value`` column."""
    import pyarrow as pa

    names: dict[str, None] = {}
    dicts = []
    for r in rows:
        d = r if isinstance(r, dict) else {"value": r}
        names.update(dict.fromkeys(d))
        dicts.append(d)
    arrays, fields = [], []
    for name in names:
        values = [d.get(name) for d in dicts]
        arr = _column(values)
        arrays.append(arr)
        fields.append(pa.field(name, arr.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _column(values: list[Any]) -> Any:
    import pyarrow as pa

    if all(v is None for v in values):
        return pa.array(values, pa.string())
    kinds = {type(v) for v in values if v is not None}
    if kinds <= {int, float} and kinds != {int, float}:
        try:
            return pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            pass
    elif kinds == {int, float}:
        return pa.array([None if v is None else float(v) for v in values], pa.float64())
    elif kinds in ({str}, {bool}):
        return pa.array(values)
    return pa.array(
        [None if v is None else v if isinstance(v, str) else orjson.dumps(v).decode() for v in values], pa.string()
    )


class FileOutput:
    """One task's output files, one per output topic, under this micro-batch's directories."""

    def __init__(self, root: str, kind: str, batch_id: int, stream: str) -> None:
        self.root, self.kind, self.batch_id, self.stream = root, kind, batch_id, stream
        self._writers: dict[str, JsonLinesWriter | ParquetWriter] = {}
        self._pending: dict[str, list[bytes | None]] = {}

    def add(self, topic: str, value: bytes | None) -> None:
        pending = self._pending.get(topic)
        if pending is None:
            pending = self._pending[topic] = []
        pending.append(value)
        if len(pending) >= PARQUET_CHUNK:
            self._drain(topic)

    def _drain(self, topic: str) -> None:
        values = self._pending.pop(topic, None)
        if not values:
            return
        writer = self._writers.get(topic)
        if writer is None:
            ext = "parquet" if self.kind == "parquet" else "jsonl"
            path = batch_dir(self.root, topic, self.batch_id) / f"{safe_name(self.stream)}.{ext}"
            writer = self._writers[topic] = ParquetWriter(path) if self.kind == "parquet" else JsonLinesWriter(path)
        writer.write(values)

    @property
    def tombstones(self) -> int:
        return sum(w.tombstones for w in self._writers.values())

    def close(self) -> None:
        for topic in list(self._pending):
            self._drain(topic)
        for w in self._writers.values():
            w.commit()

    def abort(self) -> None:
        for w in self._writers.values():
            w.abort()


class DeadLetterFiles:
    """Dead letters as JSON Lines: ``cdc-smt convert``'s entry shape plus where the record came from."""

    def __init__(self, root: str, batch_id: int, stream: str) -> None:
        self._path = batch_dir(root, None, batch_id) / f"{safe_name(stream)}.jsonl"
        self._writer: JsonLinesWriter | None = None

    def add(self, dl: DeadLetter, where: dict[str, Any]) -> None:
        if self._writer is None:
            self._writer = JsonLinesWriter(self._path)
        self._writer.write([orjson.dumps(dead_letter_entry(dl, where))])

    def close(self) -> None:
        if self._writer is not None:
            self._writer.commit()

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.abort()


def dead_letter_entry(dl: DeadLetter, where: dict[str, Any]) -> dict[str, Any]:
    """One dead letter: where, stage, error, and the original record (text or base64)."""
    r = dl.record
    entry: dict[str, Any] = dict(where)
    entry["stage"] = dl.stage
    if dl.transform:
        entry["transform"] = dl.transform
    entry["error_class"] = dl.error_class
    entry["error"] = dl.message
    if r.key is not None:
        entry["key_base64"] = base64.b64encode(r.key).decode("ascii")
    if r.value is None:
        entry["message"] = None
    else:
        try:
            entry["message"] = r.value.decode("utf-8")
        except UnicodeDecodeError:
            entry["message_base64"] = base64.b64encode(r.value).decode("ascii")
    if r.headers:
        entry["headers"] = [[k, None if v is None else base64.b64encode(v).decode("ascii")] for k, v in r.headers]
    return entry


# -- Kafka ---------------------------------------------------------------------------------------


class KafkaOutput:
    """Records queued and sent in acknowledged chunks through the kafka package's producer."""

    def __init__(self, conn: str, producer_settings: Any) -> None:
        from cdc_smt.connector.kafka import BlockingProducer, settings_from_json

        self._producer = BlockingProducer(settings_from_json(conn), producer_settings)
        self._pending: list[tuple[Record, int]] = []

    def add(self, record: Record, source_partition: int) -> None:
        """Queue ``record`` (topic and timestamp set); sends a chunk when enough are queued."""
        self._pending.append((record, source_partition))
        if len(self._pending) >= KAFKA_CHUNK:
            self.flush()

    def flush(self) -> None:
        if self._pending:
            pending, self._pending = self._pending, []
            self._send(pending)

    def _send(self, pending: list[tuple[Record, int]]) -> None:
        from cdc_smt.connector.kafka import partition_for

        for record, source_partition in pending:
            if record.topic is None:  # the caller sets every record's topic (see add)
                raise ValueError("KafkaOutput: a queued record has no topic")
            record.partition = partition_for(record.key, self._producer.partitions(record.topic), source_partition)
        self._producer.send(record for record, _ in pending)

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self._producer.close()

    def abort(self) -> None:
        self._pending = []
        self._producer.close()


__all__ = [
    "DeadLetterFiles",
    "FileOutput",
    "KafkaOutput",
    "batch_dir",
    "clear_batch",
    "dead_letter_entry",
    "rows_to_table",
    "safe_name",
]
