"""Where a backfill task writes: Kafka topics, JSON Lines or Parquet files, dead letters.

A task writes its own output as it goes (no second pass over the data and no
shuffle), in source order, so order per key is the source partition's order.

Kafka output goes through aiokafka's batch API (:func:`connector.kafka.produce_records`)
with the worker's partitioning: murmur2 of the key, keyless records to the
source partition (modulo the output partition count), the source timestamp
kept. Every chunk is acknowledged before the next is sent; an unreachable
broker is ridden out for ``backfill.sink.delivery_timeout_s``. On the Arrow
path (the native core) a chunk is an Arrow batch of records, the records of the
Python path among them in their places: partitions are hashed and the record
batches written in Rust (``BlockingProducer.send_arrow``), no Python object per
record, unless the producer compresses.

Exactly-once Kafka output (``backfill.sink.processing_guarantee: exactly_once``):
Spark tasks write independently, so the unit of commit is a *stream's* share of
a micro-batch (a source partition's slice, or a file). Each is one Kafka
transaction whose last record is a marker ``{batch, stream, offsets, counts}``
on the commit topic, under a transactional id per (run, stream). A task first
starts its producer, which fences an older attempt of the same stream and ends
its transaction, then reads the stream's markers (read_committed): when this
batch's marker is there, the earlier attempt committed and the stream writes
nothing again. The driver fences every stream's id before the first batch of a
run (:func:`connector.kafka.produce.fence`), so no transaction a killed process
left open holds back read_committed readers of the commit topic; a marker read
held back by one opened later (a killed run's orphaned Python worker, a failed
attempt) fences its writer once no live one can hold it (:func:`stale_writer`).

File output is laid out for lakehouse loading and for idempotent retries::

    <path>/topic=<topic>/batch=<micro-batch id>/<stream>.jsonl|.parquet

where ``<stream>`` is ``<source topic>-<partition>`` or the source file's name.

A file is written under a hidden temporary name and renamed when complete;
the driver deletes a micro-batch's directories before (re)running it, so a
re-run batch replaces what an interrupted attempt left.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import re
import shutil
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from cdc_smt.connector.spark.settings import SinkSpec

if TYPE_CHECKING:
    from cdc_smt.connector.kafka.markers import OpenMarker
from cdc_smt.transforms.chain import DeadLetter
from cdc_smt.transforms.model import Record

log = logging.getLogger("cdc_smt.backfill")

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

    def write_arrow(self, values: Any) -> None:
        """``write`` of a binary Arrow array, joined by Arrow (no Python object per value)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        self.tombstones += values.null_count
        values = values.drop_null() if values.null_count else values
        if len(values):
            lines = pa.LargeListArray.from_arrays(
                pa.array([0, len(values)], pa.int64()), values.cast(pa.large_binary())
            )
            self._file.write(pc.binary_join(lines, pa.scalar(b"\n", pa.large_binary()))[0].as_buffer())
            self._file.write(b"\n")

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

    def extend(self, topic: str, values: Any) -> None:
        """``add`` of each value of a binary Arrow array, in order, with the same files and row groups."""
        if not len(values):
            return
        if self.kind != "parquet":  # JSON Lines: how values are chunked does not show in the file
            self._drain(topic)
            writer = self._writer(topic)
            assert isinstance(writer, JsonLinesWriter)
            writer.write_arrow(values)
            return
        pending = self._pending.setdefault(topic, [])
        pending.extend(values.to_pylist())
        while len(pending) >= PARQUET_CHUNK:
            self._pending[topic] = pending[:PARQUET_CHUNK]
            self._drain(topic)
            pending = self._pending[topic] = pending[PARQUET_CHUNK:]
        if not pending:
            del self._pending[topic]

    def _writer(self, topic: str) -> JsonLinesWriter | ParquetWriter:
        writer = self._writers.get(topic)
        if writer is None:
            ext = "parquet" if self.kind == "parquet" else "jsonl"
            path = batch_dir(self.root, topic, self.batch_id) / f"{safe_name(self.stream)}.{ext}"
            writer = self._writers[topic] = ParquetWriter(path) if self.kind == "parquet" else JsonLinesWriter(path)
        return writer

    def _drain(self, topic: str) -> None:
        values = self._pending.pop(topic, None)
        if not values:
            return
        self._writer(topic).write(values)

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


def arrow_partitions(records: Any, partitions_of: Any) -> Any:
    """The output partition of each record of an Arrow batch (``process.KAFKA_OUTPUT_SCHEMA``), as
    :func:`connector.kafka.partition_for` chooses it: murmur2 of the key (hashed by the native core,
    no Python object per record), a keyless record its source partition modulo the count.
    ``partitions_of(topic)``: the topic's partition count. An int32 array."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    import cdc_smt._native as ext

    topics, keys = records.column("topic"), records.column("key")
    source = pc.fill_null(records.column("source_partition"), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    names = pc.unique(topics).to_pylist()
    out = np.empty(records.num_rows, np.int32)
    for name in names:
        n = partitions_of(name)
        if len(names) == 1:
            rows = np.arange(records.num_rows)
        else:
            rows = np.flatnonzero(pc.equal(topics, name).to_numpy(zero_copy_only=False))
        keyed = pa.array(ext.key_partitions(pc.take(keys, pa.array(rows)), n)).to_numpy()
        out[rows] = np.where(keyed < 0, source[rows] % n, keyed)
    return pa.array(out, pa.int32())


def output_batch(pending: Sequence[tuple[Record, int]]) -> Any:
    """Queued ``(record, source partition)`` pairs as an Arrow batch of converted records
    (``process.KAFKA_OUTPUT_SCHEMA``): what the Arrow path hands a Kafka sink for them."""
    import pyarrow as pa

    from cdc_smt.connector.spark.process import HEADERS_TYPE, KAFKA_OUTPUT_SCHEMA

    records = [r for r, _ in pending]
    if any(r.topic is None for r in records):  # the task sets every record's topic
        raise ValueError("a queued Kafka record has no topic")
    arrays = [
        pa.array([r.topic for r in records], pa.string()),
        pa.array([r.key for r in records], pa.large_binary()),
        pa.array([r.value for r in records], pa.large_binary()),
        pa.array([[{"key": k, "value": v} for k, v in r.headers] for r in records], HEADERS_TYPE),
        pa.array([r.timestamp for r in records], pa.int64()),
        pa.array([p for _, p in pending], pa.int32()),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=KAFKA_OUTPUT_SCHEMA)


@dataclass(frozen=True)
class Transactional:
    """What an exactly-once :class:`KafkaOutput` needs: whose transaction, which batch, where markers go."""

    run_id: str
    stream: str
    batch_id: int
    commit_topic: str
    timeout_s: int
    attempt: str | None = None  # this invocation of the run (ExactlyOnce.attempt), written in each marker

    @property
    def transactional_id(self) -> str:
        return transactional_id(self.run_id, self.stream)

    @property
    def marker_key(self) -> str:
        return f"{self.run_id}/{self.stream}"


def live_marker_s(delivery_timeout_s: float) -> float:
    """The longest a live writer keeps its marker's transaction open on the commit topic: it sends
    the marker, then commits, each step riding out an unreachable broker for the delivery timeout."""
    return 2 * delivery_timeout_s


def marker_read_timeout_s(delivery_timeout_s: float) -> float:
    """How long a task's marker read may wait on open transactions before it fails the task: what a
    live writer may take (:func:`live_marker_s`), then one fence of a writer gone past it
    (:func:`stale_writer`), and the read's own first wait before it asks who holds it."""
    from cdc_smt.connector.kafka.markers import STALL_S

    return live_marker_s(delivery_timeout_s) + delivery_timeout_s + STALL_S


def stale_writer(holder: OpenMarker, tx: Transactional, held_s: float, live_s: float) -> str | None:
    """The transactional id whose open transaction a marker read of ``tx`` may end by fencing it, or
    ``None`` to wait for its writer. ``holder``: the marker of the transaction holding the read back,
    open for at least ``held_s``.

    Only this run's writers are ended, never ``tx``'s own stream (its producer is the newest of that
    id: an open transaction there belongs to one that fenced it, and fencing would end this task).
    A marker of an earlier batch has no live writer: a batch starts once every task of the one before
    it ended, so it was left by a killed run's orphaned Python worker or a failed attempt; nor has
    one written by another invocation of the run (``attempt``: a killed run's orphan, re-running the
    batch this one re-runs). Any other marker of this batch may be a concurrent task between its
    marker and its commit: it is waited for as long as a live writer may take (``live_s``). Ending a
    transaction never loses or repeats output: it is aborted (its writer's commit fails, and its
    share is written again), or completes if its commit had already begun.
    """
    if holder.key is None or holder.value is None:
        return None  # not a marker of this module: nothing to say whose it is
    run_id, _, stream = holder.key.decode(errors="replace").partition("/")
    batch = holder.value.get("batch")
    if run_id != tx.run_id or not stream or stream == tx.stream or not isinstance(batch, int):
        return None
    attempt = holder.value.get("attempt")
    earlier_attempt = tx.attempt is not None and attempt is not None and attempt != tx.attempt
    if batch < tx.batch_id or earlier_attempt or held_s >= live_s:
        return transactional_id(run_id, stream)
    return None


def transactional_id(run_id: str, stream: str) -> str:
    """One transactional id per stream of a run: a re-run's task fences the killed attempt's producer."""
    return f"cdc-smt-backfill.{run_id}.{stream}"


def commit_topic(spec: SinkSpec, job_id: str) -> str:
    """Where exactly-once markers go: ``backfill.sink.commit_topic``, else ``<job id>.backfill-commits``."""
    return spec.commit_topic or f"{job_id}.backfill-commits"


@dataclass(frozen=True)
class ExactlyOnce:
    """The driver's part of exactly-once output, handed to every task: the run's id, the commit topic,
    and this invocation's id (``attempt``: new at each start, a resumed run's too; see :func:`stale_writer`)."""

    run_id: str
    commit_topic: str
    attempt: str | None = None


def prepare_exactly_once(job: Any, spec: SinkSpec, streams: Iterable[str], state_dir: Path) -> ExactlyOnce | None:
    """Before the first batch of a run (or a resumed run): check, create and fence (driver side).

    The broker must grant transactional producer ids (a clear error at start
    otherwise: Tansu does not); the commit topic is created (compacted) when
    missing; every stream's transactional id is fenced, ending what a killed
    process left open. The run id lives in the checkpoint so a resumed run
    finds its markers, and a new checkpoint never mistakes an old run's for its own.
    """
    if not spec.exactly_once:
        return None
    from cdc_smt.connector.kafka.admin import create_topics
    from cdc_smt.connector.kafka.markers import COMMIT_TOPIC_CONFIG
    from cdc_smt.connector.kafka.produce import fence, supports_transactions
    from cdc_smt.transforms.errors import ConfigError

    run_id = _run_id(state_dir)
    topic = commit_topic(spec, job.id)
    reason = asyncio.run(supports_transactions(job.kafka, transactional_id(run_id, "_probe")))
    if reason is not None:
        raise ConfigError(
            f"exactly_once needs Kafka transactions, which the cluster at {job.kafka.bootstrap} does not grant "
            f"({reason}); use at_least_once there",
            "backfill.sink.processing_guarantee",
        )
    creation = job.worker.create_topics
    replication = creation.replication_factor if creation is not None else 1
    asyncio.run(create_topics(job.kafka, {topic: 1}, replication_factor=replication, config=COMMIT_TOPIC_CONFIG))
    ids = [transactional_id(run_id, name) for name in streams]
    asyncio.run(fence(job.kafka, ids, timeout=spec.delivery_timeout_s))
    return ExactlyOnce(run_id, topic, uuid.uuid4().hex[:16])


def _run_id(state_dir: Path) -> str:
    """This checkpoint's run id (made at its first run)."""
    path = state_dir / "run-id"
    if path.is_file():
        return path.read_text().strip()
    state_dir.mkdir(parents=True, exist_ok=True)
    run_id = uuid.uuid4().hex[:16]
    tmp = path.with_name(".run-id.tmp")
    tmp.write_text(run_id)
    os.replace(tmp, path)
    return run_id


class KafkaOutput:
    """Records queued and sent in acknowledged chunks through the kafka package's producer.

    With ``transactional`` (``processing_guarantee: exactly_once``) the stream's
    share of the micro-batch is one Kafka transaction: :meth:`committed` first
    fences an older attempt and looks for this batch's marker (a re-run then
    writes nothing), :meth:`begin` opens the transaction, and :meth:`close`
    sends the marker with the stream's summary and commits.
    """

    def __init__(
        self, conn: str, producer_settings: Any, spec: SinkSpec, transactional: Transactional | None = None
    ) -> None:
        from cdc_smt.connector.kafka import BlockingProducer, settings_from_json

        self._conn = conn
        self._tx = transactional
        self._delivery_s = spec.delivery_timeout_s
        self._producer = BlockingProducer(
            settings_from_json(conn),
            producer_settings,
            delivery_timeout_s=spec.delivery_timeout_s,
            transactional_id=transactional.transactional_id if transactional else None,
            transaction_timeout_s=spec.transaction_timeout_s,
        )
        self._pending: list[tuple[Record, int]] = []
        self._arrow: list[Any] = []  # queued Arrow batches (process.KAFKA_OUTPUT_SCHEMA), each after _pending's
        self._arrow_rows = 0
        self._open = False

    @property
    def transactional(self) -> bool:
        return self._tx is not None

    def committed(self) -> dict[str, Any] | None:
        """This batch's marker when an earlier attempt committed the stream's share, else ``None``."""
        from cdc_smt.connector.kafka import settings_from_json
        from cdc_smt.connector.kafka.markers import read_markers

        tx = self._require_tx()
        self._producer.start()  # fences the producer of an earlier attempt and ends its transaction
        conn = settings_from_json(self._conn)
        read = read_markers(
            conn,
            tx.commit_topic,
            tx.marker_key,
            timeout=marker_read_timeout_s(self._delivery_s),
            on_stall=partial(self._end_stale, conn, tx),
        )
        markers = asyncio.run(read)
        return next((m for m in reversed(markers) if m.get("batch") == tx.batch_id), None)

    async def _end_stale(self, conn: Any, tx: Transactional, holder: OpenMarker, held_s: float) -> bool:
        """Fence the writer holding the marker read back when :func:`stale_writer` says no live one will end it."""
        from cdc_smt.connector.kafka.produce import fence

        tid = stale_writer(holder, tx, held_s, live_marker_s(self._delivery_s))
        if tid is None:
            return False
        log.warning(
            "%s: batch %s: a transaction of %s (its marker at %s[%s] open for %.0f s or more) has no live "
            "writer; fencing it",
            tx.stream, tx.batch_id, tid, tx.commit_topic, holder.offset, held_s,
        )  # fmt: skip
        try:
            await fence(conn, [tid], timeout=self._delivery_s)
        except Exception as exc:  # noqa: BLE001 - the read waits on (and its timeout names the holder)
            log.warning("%s: fencing %s failed (%s: %s); waiting on", tx.stream, tid, type(exc).__name__, exc)
            return False
        return True

    def begin(self) -> None:
        self._require_tx()
        self._producer.begin()
        self._open = True

    def _require_tx(self) -> Transactional:
        if self._tx is None:
            raise RuntimeError("KafkaOutput: transactions need processing_guarantee exactly_once")
        return self._tx

    def add(self, record: Record, source_partition: int) -> None:
        """Queue ``record`` (topic and timestamp set); sends a chunk when enough are queued."""
        self._pending.append((record, source_partition))
        if len(self._pending) + self._arrow_rows >= KAFKA_CHUNK:
            self.flush()

    def extend_arrow(self, records: Any) -> None:
        """``add`` of each converted record of an Arrow batch (``process.KAFKA_OUTPUT_SCHEMA``), in order:
        queued as it is, and sent as Arrow columns (the producer writes the record batches from them)."""
        self._pack()
        self._arrow.append(records)
        self._arrow_rows += records.num_rows
        if self._arrow_rows >= KAFKA_CHUNK:
            self.flush()

    def _pack(self) -> None:
        """The records queued by ``add`` as an Arrow batch in the queue (once Arrow batches are queued)."""
        if self._pending:
            self._arrow.append(output_batch(self._pending))
            self._arrow_rows += len(self._pending)
            self._pending = []

    def flush(self) -> None:
        if self._arrow:
            self._pack()
            import pyarrow as pa

            queued, self._arrow, self._arrow_rows = self._arrow, [], 0
            records = pa.Table.from_batches(queued).combine_chunks().to_batches()[0]
            self._producer.send_arrow(records, arrow_partitions(records, self._producer.partitions))
        elif self._pending:
            pending, self._pending = self._pending, []
            self._send(pending)

    def _send(self, pending: list[tuple[Record, int]]) -> None:
        from cdc_smt.connector.kafka import partition_for

        for record, source_partition in pending:
            if record.topic is None:  # the caller sets every record's topic (see add)
                raise ValueError("KafkaOutput: a queued record has no topic")
            record.partition = partition_for(record.key, self._producer.partitions(record.topic), source_partition)
        self._producer.send(record for record, _ in pending)

    def close(self, summary: Mapping[str, Any] | None = None) -> None:
        """Send what is queued; in a transaction, the marker (``summary`` and the batch) too, then commit."""
        try:
            self.flush()
            if self._open:
                from cdc_smt.connector.kafka.markers import marker_record

                tx = self._require_tx()
                marker = {"batch": tx.batch_id, "stream": tx.stream, **(summary or {})}
                if tx.attempt is not None:
                    marker["attempt"] = tx.attempt
                parts = self._producer.partitions(tx.commit_topic)
                self._producer.send([marker_record(tx.commit_topic, parts, tx.marker_key, marker)])
                self._producer.commit()
                self._open = False
        finally:
            self._producer.close()

    def abort(self) -> None:
        self._pending, self._arrow, self._arrow_rows = [], [], 0
        try:
            if self._open:
                self._open = False
                self._producer.abort()
        finally:
            self._producer.close()


__all__ = [
    "DeadLetterFiles",
    "arrow_partitions",
    "output_batch",
    "ExactlyOnce",
    "FileOutput",
    "KafkaOutput",
    "Transactional",
    "commit_topic",
    "live_marker_s",
    "marker_read_timeout_s",
    "stale_writer",
    "transactional_id",
    "batch_dir",
    "clear_batch",
    "prepare_exactly_once",
    "dead_letter_entry",
    "rows_to_table",
    "safe_name",
]
