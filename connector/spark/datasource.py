"""Python data sources: Kafka offset slices and message files, batch and streaming.

``cdc_smt_kafka`` yields the columns of Spark's own ``format("kafka")`` source
(``key, value, topic, partition, offset, timestamp, timestampType, headers``),
so the backfill runs unchanged on either. One input partition is one Kafka
partition's slice ``[start, end)`` of one micro-batch, read by aiokafka in the
executor; a partition is never split across tasks, which keeps its order and
lets one chain see it whole.

``cdc_smt_files`` reads JSON Lines or Avro container files through
:mod:`connector.framing` (exactly as ``cdc-smt convert`` does). One file is one
input partition; files are taken in name order. Its rows carry the Kafka
columns (filled from the Avro datum, null for JSON Lines) plus ``file`` and
``position`` (the line or datum number).

With ``emit=slices`` either source yields one *descriptor* row per input
partition instead (``topic, partition, start, end, file, binary``: see
:data:`SLICE_DDL`) and the task that processes the slice reads it itself
(:func:`connector.spark.process.run_task`). The backfill uses this: the records
then never cross from Python to the JVM and back, which costs more than
reading them (measured: 100,000 records of 900 bytes took 3.3 s through a
no-op ``mapInArrow`` as rows, against 0.9 s to read them in the task).

Offsets are JSON: ``{topic: {"partition": next offset}}`` for Kafka (Spark's own
form) and ``{"last": path}`` (the last file taken) for files. Both readers
implement ``SupportsTriggerAvailableNow``: the target is fixed when the query
starts, so an ``availableNow`` run ends even while producers keep writing.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from cdc_smt.connector.spark.kafkaio import (
    DEFAULT_RETRY_S,
    KafkaSession,
    OffsetMap,
    TopicPartition,
    offsets_from_json,
    offsets_to_json,
    plan_range,
)
from cdc_smt.connector.spark.settings import Position

KAFKA_SOURCE = "cdc_smt_kafka"
FILE_SOURCE = "cdc_smt_files"

HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
KAFKA_ARROW = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestampType", pa.int32()),
        ("headers", HEADERS_TYPE),
    ]
)
FILE_ARROW = KAFKA_ARROW.append(pa.field("file", pa.string())).append(pa.field("position", pa.int64()))
KAFKA_DDL = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
    "timestampType int, headers array<struct<key:string,value:binary>>"
)
FILE_DDL = KAFKA_DDL + ", file string, position long"
SLICE_DDL = "topic string, partition int, start long, end long, file string, binary boolean"
ROWS_PER_ARROW_BATCH = 10_000


def register(spark: Any) -> None:
    """Make both sources known to ``spark`` (``spark.read.format("cdc_smt_kafka")``)."""
    spark.dataSource.register(KafkaSource)
    spark.dataSource.register(FileSource)


# -- Kafka ---------------------------------------------------------------------------------------


class KafkaSlice(InputPartition):
    """``[start, end)`` of one topic partition."""

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        self.topic, self.partition, self.start, self.end = topic, partition, start, end


class _KafkaOptions:
    """The string options of the Kafka source, parsed.

    ``connection.secret``: :func:`connector.kafka.connection_json` (the name makes Spark redact it);
    ``topics`` (comma-separated) or ``pattern``; ``starting``/``ending``:
    :class:`Position` JSON (default earliest / latest);
    ``max_records_per_batch``: a micro-batch's share of all partitions;
    ``retry_timeout_s``: how long planning and reads wait for a broker that does not answer;
    ``emit``: ``records`` (default) or ``slices``.
    """

    def __init__(self, options: Any) -> None:
        self.connection: str = options["connection.secret"]
        topics = options.get("topics")
        self.topics: list[str] = [t for t in (topics or "").split(",") if t]
        self.pattern: str | None = options.get("pattern")
        self.starting = Position.from_json(options["starting"]) if "starting" in options else Position("earliest")
        self.ending = Position.from_json(options["ending"]) if "ending" in options else Position("latest")
        limit = options.get("max_records_per_batch")
        self.max_records = int(limit) if limit else None
        self.retry_s = float(options.get("retry_timeout_s", DEFAULT_RETRY_S))
        self.slices = _emit_slices(options)

    def plan(self) -> tuple[OffsetMap, OffsetMap]:
        """Start and end offsets of every partition (an end never before its start)."""
        starts, ends, _ = plan_range(
            self.connection, self.topics, self.pattern, self.starting, self.ending, retry_s=self.retry_s
        )
        return starts, ends

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """The rows of one input partition (runs in the executor).

        Spark hands a plan without partitions (every range empty) one
        placeholder partition: an empty range is an empty batch.
        """
        if isinstance(partition, KafkaSlice):
            yield from read_kafka_slice(self.connection, partition, self.slices, retry_s=self.retry_s)


def _emit_slices(options: Any) -> bool:
    emit = options.get("emit", "records")
    if emit not in ("records", "slices"):
        from cdc_smt.transforms.errors import ConfigError

        raise ConfigError(f"option emit must be records or slices, got {emit!r}")
    return emit == "slices"


def read_kafka_slice(
    connection: str, part: KafkaSlice, slices: bool = False, *, retry_s: float = DEFAULT_RETRY_S
) -> Iterator[Any]:
    """Arrow batches of one slice in offset order, or its descriptor row (runs in the executor)."""
    if slices:
        yield (part.topic, part.partition, part.start, part.end, None, None)
        return
    with KafkaSession(connection, retry_s=retry_s) as session:
        for chunk in session.read((part.topic, part.partition), part.start, part.end, max_records=ROWS_PER_ARROW_BATCH):
            yield kafka_batch(part.topic, part.partition, chunk)


def kafka_batch(topic: str, partition: int, messages: Sequence[Any]) -> pa.RecordBatch:
    """aiokafka ``ConsumerRecord`` objects as a batch of the Kafka columns."""
    n = len(messages)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([m.key for m in messages], pa.binary()),
            pa.array([m.value for m in messages], pa.binary()),
            pa.array([topic] * n, pa.string()),
            pa.array([partition] * n, pa.int32()),
            pa.array([m.offset for m in messages], pa.int64()),
            pa.array([m.timestamp * 1000 for m in messages], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            pa.array([m.timestamp_type for m in messages], pa.int32()),
            pa.array(
                [[{"key": k, "value": v} for k, v in m.headers] if m.headers else [] for m in messages], HEADERS_TYPE
            ),
        ],
        schema=KAFKA_ARROW,
    )


class KafkaBatchReader(DataSourceReader):
    def __init__(self, options: _KafkaOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        starts, ends = self.options.plan()
        return [
            KafkaSlice(t, p, starts[(t, p)], ends[(t, p)]) for (t, p) in sorted(starts) if ends[(t, p)] > starts[(t, p)]
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from self.options.read(partition)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches of at most ``max_records_per_batch`` records over the planned range."""

    def __init__(self, options: _KafkaOptions) -> None:
        self.options = options
        self._start: OffsetMap | None = None
        self._target: OffsetMap | None = None

    def _planned(self) -> tuple[OffsetMap, OffsetMap]:
        if self._start is None or self._target is None:
            self._start, self._target = self.options.plan()
        return self._start, self._target

    def initialOffset(self) -> dict:
        return offsets_to_json(self._planned()[0])

    def prepareForTriggerAvailableNow(self) -> None:
        self._start, self._target = self.options.plan()

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.options.max_records
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        _, target = self._planned()
        current = offsets_from_json(start)
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return offsets_to_json(next_offsets(current, target, max_rows))

    def reportLatestOffset(self) -> dict | None:
        return offsets_to_json(self._planned()[1])

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        s, e = offsets_from_json(start), offsets_from_json(end)
        return [
            KafkaSlice(t, p, s.get((t, p), e[(t, p)]), e[(t, p)])
            for (t, p) in sorted(e)
            if e[(t, p)] > s.get((t, p), e[(t, p)])
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from self.options.read(partition)


def next_offsets(current: OffsetMap, target: OffsetMap, max_rows: int | None) -> OffsetMap:
    """The end of the next micro-batch: ``target``, or at most ``max_rows`` records past ``current``.

    The allowance is shared by partitions in proportion to what each has left
    (at least one record each), so partitions finish together. Partitions
    missing from ``current`` (added since the checkpoint) are not read: the
    range was fixed when the backfill first planned it.
    """
    left = {tp: target[tp] - current[tp] for tp in current if tp in target and target[tp] > current[tp]}
    out = dict(current)
    total = sum(left.values())
    if not total:
        return out
    if max_rows is None or total <= max_rows:
        out.update({tp: target[tp] for tp in left})
        return out
    shares = {tp: min(n, max(1, n * max_rows // total)) for tp, n in left.items()}
    spare = max_rows - sum(shares.values())
    for tp, n in sorted(left.items(), key=lambda kv: -kv[1]):  # rounding leftovers: no tiny last batch
        if spare <= 0:
            break
        extra = min(spare, n - shares[tp])
        shares[tp] += extra
        spare -= extra
    for tp, share in shares.items():
        out[tp] = current[tp] + share
    return out


class KafkaSource(DataSource):
    """Kafka offset (or time) ranges as the columns of Spark's Kafka source. See :class:`_KafkaOptions`."""

    @classmethod
    def name(cls) -> str:
        return KAFKA_SOURCE

    def schema(self) -> str:
        return SLICE_DDL if _emit_slices(self.options) else KAFKA_DDL

    def reader(self, schema: Any) -> DataSourceReader:
        return KafkaBatchReader(_KafkaOptions(self.options))

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return KafkaStreamReader(_KafkaOptions(self.options))


# -- files ---------------------------------------------------------------------------------------


class FileSlice(InputPartition):
    def __init__(self, path: str) -> None:
        self.path = path


def list_files(path: str) -> list[str]:
    """A file, or the files of a directory (not hidden, not ``_``-prefixed, recursively), in name order."""
    root = Path(path)
    if root.is_file():
        return [str(root)]
    if not root.is_dir():
        from cdc_smt.transforms.errors import ConfigError

        raise ConfigError(f"source path {path!r} is neither a file nor a directory", "backfill.source.path")
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "_")))
        out.extend(os.path.join(dirpath, f) for f in filenames if not f.startswith((".", "_")))
    return sorted(out)


def read_file(path: str, binary: bool) -> Iterator[pa.RecordBatch]:
    """Arrow batches of one message file, in file order (runs in the executor)."""
    from cdc_smt.connector.framing import read_records

    rows: list[tuple[int, Any]] = []
    for item in read_records(path, binary):
        rows.append(item)
        if len(rows) >= ROWS_PER_ARROW_BATCH:
            yield file_batch(path, rows)
            rows = []
    if rows:
        yield file_batch(path, rows)


def file_batch(path: str, rows: Sequence[tuple[int, Any]]) -> pa.RecordBatch:
    recs = [r for _, r in rows]
    n = len(rows)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([r.key for r in recs], pa.binary()),
            pa.array([r.value for r in recs], pa.binary()),
            pa.array([r.topic for r in recs], pa.string()),
            pa.array([r.partition for r in recs], pa.int32()),
            pa.array([r.offset for r in recs], pa.int64()),
            pa.array([None if r.timestamp is None else r.timestamp * 1000 for r in recs], pa.int64()).cast(
                pa.timestamp("us", tz="UTC")
            ),
            pa.array([None] * n, pa.int32()),
            pa.array([[{"key": k, "value": v} for k, v in r.headers] for r in recs], HEADERS_TYPE),
            pa.array([path] * n, pa.string()),
            pa.array([pos for pos, _ in rows], pa.int64()),
        ],
        schema=FILE_ARROW,
    )


class _FileOptions:
    """``path`` (file or directory), ``binary`` (``true``: Avro containers), ``max_files_per_batch``, ``emit``."""

    def __init__(self, options: Any) -> None:
        self.path: str = options["path"]
        self.binary = options.get("binary", "false").lower() == "true"
        limit = options.get("max_files_per_batch")
        self.max_files = int(limit) if limit else None
        self.slices = _emit_slices(options)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """The rows of one file (nothing for the placeholder partition of an empty directory)."""
        if not isinstance(partition, FileSlice):
            return
        path = partition.path
        if self.slices:
            yield (None, None, None, None, path, self.binary)
        else:
            yield from read_file(path, self.binary)


class FileBatchReader(DataSourceReader):
    def __init__(self, options: _FileOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        return [FileSlice(p) for p in list_files(self.options.path)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from self.options.read(partition)


class FileStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Files after the last one taken, in name order, ``max_files_per_batch`` at a time."""

    def __init__(self, options: _FileOptions) -> None:
        self.options = options
        self._listing: list[str] | None = None

    def _files(self) -> list[str]:
        if self._listing is None:
            self._listing = list_files(self.options.path)
        return self._listing

    def initialOffset(self) -> dict:
        return {"last": ""}

    def prepareForTriggerAvailableNow(self) -> None:
        self._listing = list_files(self.options.path)

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.options.max_files
        return ReadMaxFiles(n) if n else ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        pending = [f for f in self._files() if f > start["last"]]
        if not pending:
            return start
        n = limit.max_files if isinstance(limit, ReadMaxFiles) else len(pending)
        return {"last": pending[min(n, len(pending)) - 1]}

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        return [FileSlice(f) for f in self._files() if start["last"] < f <= end["last"]]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from self.options.read(partition)


class FileSource(DataSource):
    """JSON Lines or Avro container files as Kafka columns plus ``file`` and ``position``."""

    @classmethod
    def name(cls) -> str:
        return FILE_SOURCE

    def schema(self) -> str:
        return SLICE_DDL if _emit_slices(self.options) else FILE_DDL

    def reader(self, schema: Any) -> DataSourceReader:
        return FileBatchReader(_FileOptions(self.options))

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        return FileStreamReader(_FileOptions(self.options))


__all__ = [
    "FILE_ARROW",
    "FILE_SOURCE",
    "FileSource",
    "KAFKA_ARROW",
    "KAFKA_SOURCE",
    "KafkaSource",
    "TopicPartition",
    "list_files",
    "next_offsets",
    "register",
]
