"""The chain inside a Spark task: Arrow batches in, sinks written, one summary row per stream out.

:func:`run_task` is the ``mapInArrow`` function. A task holds the rows of one
or more *streams* (a Kafka partition's slice, or one file), each in source
order; every stream gets its own :class:`~transforms.chain.Chain`, built once
per task, because codecs may keep per-stream state.

Per record it does what the worker does (:class:`connector.worker.pipeline.Converter`):
``chain.process(record)``, output topic = the topic a transform set, else
``sink.topic`` with ``{source_topic}``; the source timestamp is kept; Kafka
partitions follow the key (see :mod:`connector.spark.sinks`).

With a chain the native core has a plan for, a task hands the rows to Rust as
Arrow arrays (``_native.convert_arrow``: JSON Lines read by ``split_lines``, row
batches' own ``value`` column, and their ``key`` column for plans that read keys)
and hands each run of converted rows to the sink as arrays: a file sink writes
them as one array, a Kafka sink gets topics, keys, values, headers, source
timestamps and partitions as columns (:data:`KAFKA_OUTPUT_SCHEMA`; cdc-smt's
producer writes its record batches from them in Rust), so no Python object is
made per row on the way. A message the plan leaves to Python
goes through ``chain.process`` in its place, so dead letters, stream state and
output order are the Python path's. ``CDC_SMT_NATIVE=0`` keeps one
``chain.process`` per record.

State across micro-batches. A task sees only its slice, so before the first
record of a Kafka slice at offset ``s`` the chain is warmed up, outputs
discarded:

1. with the records of the DDL index (a first pass found them) before ``s - warmup``;
2. with the ``warmup`` records ``[s - warmup, s)`` (default 1: completes a
   DataWorks UPDATE_BEFOR/UPDATE_AFTER pair split by the batch boundary);
Independently, ``state.schema_file`` (a :mod:`transforms.catalog` schema file)
seeds a fresh catalog for every stream's chain.

Held-back events (``Chain.flush``) are emitted only at the end of a stream's
whole range (the backfill's target offset, or the end of a file): a pair split
by a batch boundary is completed by the next batch's warm-up instead.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_smt.connector.spark.kafkaio import DEFAULT_RETRY_S, KafkaRangeError, KafkaSession, TopicPartition
from cdc_smt.connector.spark.settings import SinkSpec
from cdc_smt.connector.tuning import tune_allocator
from cdc_smt.transforms.chain import Chain, ChainHalted, ChainResult, DeadLetter
from cdc_smt.transforms.errors import CdcSmtError
from cdc_smt.transforms.model import Record

log = logging.getLogger("cdc_smt.backfill")

#: Records read and fed at a time when a task reads its slice itself.
CHUNK = 10_000
#: Bytes of a JSON Lines file read at a time on the Arrow path (whole lines are fed).
BLOCK_BYTES = 8 << 20
#: Marks the one-line reason a task stopped, so the driver can show it without the JVM trace.
HALT_MARK = "CDC-SMT-HALT:"

#: Kafka headers as Arrow holds them (Spark's Kafka columns use the same type).
HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
#: Converted records handed to a Kafka sink on the Arrow path (``extend_arrow``), in order:
#: output topic, key, value (null: tombstone), headers, and the source record's timestamp
#: (epoch ms) and partition (keyless records go to it, modulo the output's partition count).
KAFKA_OUTPUT_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("key", pa.large_binary()),
        ("value", pa.large_binary()),
        ("headers", HEADERS_TYPE),
        ("timestamp", pa.int64()),
        ("source_partition", pa.int32()),
    ]
)

SUMMARY_SCHEMA = pa.schema(
    [
        ("stream", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("first", pa.int64()),
        ("last", pa.int64()),
        ("records", pa.int64()),
        ("outputs", pa.int64()),
        ("dead_letters", pa.int64()),
        ("tombstones_skipped", pa.int64()),
        ("seconds", pa.float64()),
    ]
)
#: What a commit marker keeps of a stream's summary (a skipped re-run reports it again).
MARKER_FIELDS = ("first", "last", "records", "outputs", "dead_letters")
SUMMARY_DDL = (
    "stream string, topic string, partition int, first long, last long, records long, outputs long, "
    "dead_letters long, tombstones_skipped long, seconds double"
)


class BackfillHalted(CdcSmtError):
    """``errors.tolerance: none`` and a record failed: the micro-batch (and the run) stop."""

    def __init__(self, where: str, dead_letter: DeadLetter) -> None:
        self.where = where
        self.dead_letter = dead_letter
        super().__init__(f"{HALT_MARK} {where}: {dead_letter.describe()}")


@dataclass(frozen=True)
class TaskPlan:
    """Everything a task needs, pickled into the ``mapInArrow`` closure by the driver.

    ``targets``: the backfill's end offset per Kafka partition (a stream whose
    slice reaches it is flushed). ``ddl_offsets``: offsets of DDL records per
    partition, from the first pass. ``catalog_data``: the parsed schema file
    each stream's catalog starts from. ``file_topic``: the source topic of file records that
    carry none (``None``: the file's stem). ``retry_s``: how long Kafka reads wait for a broker
    that does not answer (``backfill.source.retry_timeout_s``).
    """

    job: Any  # connector.jobconfig.JobConfig
    batch_id: int
    sink: SinkSpec
    dead_letters: SinkSpec
    connection: str | None = None
    targets: Mapping[TopicPartition, int] = field(default_factory=dict)
    warmup: int = 0
    ddl_offsets: Mapping[TopicPartition, Sequence[int]] = field(default_factory=dict)
    catalog_data: Mapping[str, Any] | None = None
    catalog_source: str = "schema file"
    file_topic: str | None = None
    source_root: str | None = None
    retry_s: float = DEFAULT_RETRY_S
    run_id: str | None = None  # exactly-once Kafka output: the run's id (transactional ids, markers)
    commit_topic: str | None = None  # exactly-once Kafka output: where the markers go
    attempt: str | None = None  # exactly-once Kafka output: this invocation of the run (in its markers)


@dataclass
class Stream:
    """One stream's chain, its outputs and its counters, within one task."""

    name: str
    chain: Chain
    source_topic: str
    topic: str | None
    partition: int | None
    final_offset: int | None  # flush after this source offset (Kafka); None: at the end (files)
    outputs: Any
    dead_letters: Any
    first: int = -1
    last: int = -1
    records: int = 0
    written: int = 0
    failed: int = 0
    last_timestamp: int | None = None
    last_partition: int = 0
    started: float = field(default_factory=time.perf_counter)
    transactional: Any = None  # the stream's exactly-once KafkaOutput, if any
    committed: bool = False  # an earlier attempt committed this batch's share: write nothing


def _connection(plan: TaskPlan) -> str:
    """The plan's Kafka connection; the driver sets it whenever the source or a sink is Kafka."""
    if plan.connection is None:
        raise RuntimeError("backfill task plan has no Kafka connection, yet its source or a sink is Kafka")
    return plan.connection


def _path(spec: SinkSpec, what: str) -> str:
    """A file sink's output folder; settings validation requires one for every non-Kafka sink."""
    if spec.path is None:
        raise RuntimeError(f"backfill {what} of type {spec.type!r} has no path")
    return spec.path


# -- Arrow rows to records -------------------------------------------------------------------------


def _timestamps_ms(column: Any) -> list[int | None]:
    """Spark timestamps (microseconds) as epoch milliseconds."""
    import pyarrow.compute as pc

    micros = column.cast(pa.int64())
    return pc.divide(micros, 1000).to_pylist()  # integer division on int64


@dataclass(frozen=True)
class SourceRows:
    """What the Arrow path needs of a run of input rows besides their values: their keys (the
    plans that read keys; Kafka sinks partition keyless records by the rest), source timestamps
    (epoch ms), source partitions, and headers (``None``: no row has any)."""

    keys: pa.Array
    timestamps: pa.Array
    partitions: pa.Array
    headers: list[list[tuple[str, bytes]]] | None = None

    @classmethod
    def bare(cls, n: int) -> SourceRows:
        """Rows with nothing but a value (JSON Lines): no key, timestamp, partition or header."""
        return cls(pa.nulls(n, pa.binary()), pa.nulls(n, pa.int64()), pa.nulls(n, pa.int32()))

    @classmethod
    def of_records(cls, records: Sequence[Record]) -> SourceRows:
        headers = [r.headers for r in records] if any(r.headers for r in records) else None
        return cls(
            pa.array([r.key for r in records], pa.binary()),
            pa.array([r.timestamp for r in records], pa.int64()),
            pa.array([r.partition for r in records], pa.int32()),
            headers,
        )

    @classmethod
    def of_batch(cls, batch: pa.RecordBatch) -> SourceRows:
        """A batch of rows (Kafka columns)."""
        col = {n: batch.column(i) for i, n in enumerate(batch.schema.names)}
        return cls(
            col["key"],
            pc.divide(col["timestamp"].cast(pa.int64()), 1000),  # Spark's microseconds, as _timestamps_ms
            col["partition"].cast(pa.int32()),
            _headers(col["headers"]),
        )

    def slice(self, start: int, length: int) -> SourceRows:
        headers = self.headers[start : start + length] if self.headers is not None else None
        return SourceRows(
            self.keys.slice(start, length),
            self.timestamps.slice(start, length),
            self.partitions.slice(start, length),
            headers if headers is None or any(headers) else None,
        )


def _headers(column: Any) -> list[list[tuple[str, bytes]]] | None:
    """Header lists, or ``None`` when no row has any (the common case: skip the conversion)."""
    import pyarrow.compute as pc

    if column.null_count == len(column) or pc.sum(pc.list_value_length(column)).as_py() in (None, 0):
        return None
    return [[(h["key"], h["value"]) for h in hs] if hs else [] for hs in column.to_pylist()]


def batch_records(batch: pa.RecordBatch) -> tuple[list[Any], list[Record], list[int]]:
    """``(stream keys, records, positions)`` of one input batch, in row order.

    Kafka rows: key ``(topic, partition)``, position = offset. File rows: key =
    file, position = line (or datum) number, and the record carries only what
    the file holds (as ``cdc-smt convert`` reads it).
    """
    names = batch.schema.names
    col = {n: batch.column(i) for i, n in enumerate(names)}
    keys_ = col["key"].to_pylist()
    values = col["value"].to_pylist()
    topics = col["topic"].to_pylist()
    partitions = col["partition"].to_pylist()
    offsets = col["offset"].to_pylist()
    stamps = _timestamps_ms(col["timestamp"])
    headers = _headers(col["headers"])
    n = batch.num_rows
    records = [
        Record(
            value=values[i],
            key=keys_[i],
            topic=topics[i],
            partition=partitions[i],
            offset=offsets[i],
            timestamp=stamps[i],
            headers=headers[i] if headers is not None else [],
        )
        for i in range(n)
    ]
    if "file" in col:
        return col["file"].to_pylist(), records, col["position"].to_pylist()
    return list(zip(topics, partitions, strict=True)), records, offsets


# -- the task ----------------------------------------------------------------------------------------


class Task:
    """One task's streams and sinks."""

    def __init__(self, plan: TaskPlan) -> None:
        self.plan = plan
        self.streams: dict[Any, Stream] = {}
        self._sink_topics: dict[str, str] = {}

    # -- streams -------------------------------------------------------------------------
    def stream(self, key: Any, first: Record, position: int) -> Stream:
        st = self.streams.get(key)
        if st is None:
            st = self.streams[key] = self._open(key, first, position)
        return st

    def _open(self, key: Any, first: Record, position: int) -> Stream:
        plan = self.plan
        chain = plan.job.build_chain(catalog=self._catalog())
        name = stream_name(key, plan.source_root)
        if isinstance(key, tuple):
            topic, partition = key
            source_topic, final = topic, plan.targets.get(key, 0) - 1
        else:
            topic, partition, final = None, first.partition, None
            source_topic = first.topic or plan.file_topic or _stem(key)
        outputs, dead = self._sinks(name)
        st = Stream(name, chain, source_topic, topic, partition, final, outputs, dead)
        if self._begin(st) and isinstance(key, tuple):
            self._warm_up(chain, key, position)
        return st

    def _begin(self, st: Stream) -> bool:
        """Exactly-once: fence an earlier attempt, skip a share it committed, else open the transaction.

        ``False`` when the stream writes nothing in this batch (its marker is there).
        """
        tx = next((s for s in (st.outputs, st.dead_letters) if getattr(s, "transactional", False)), None)
        if tx is None:
            return True
        st.transactional = tx
        marker = tx.committed()
        if marker is None:
            tx.begin()
            return True
        st.committed = True
        st.first, st.last = marker["first"], marker["last"]
        st.records, st.written, st.failed = marker["records"], marker["outputs"], marker["dead_letters"]
        log.info("%s: batch %s was committed by an earlier attempt; not written again", st.name, self.plan.batch_id)
        return False

    def _catalog(self) -> Any:
        """A fresh catalog from the schema file (``None``: codecs make their own)."""
        if self.plan.catalog_data is None:
            return None
        from cdc_smt.transforms.catalog import SchemaCatalog

        catalog = SchemaCatalog()
        catalog.load_dict(self.plan.catalog_data, source=self.plan.catalog_source)
        return catalog

    def _warm_up(self, chain: Chain, tp: TopicPartition, start: int) -> None:
        """Replay DDL records and the ``warmup`` records before ``start`` into ``chain`` (outputs dropped)."""
        plan = self.plan
        begin = max(0, start - plan.warmup)
        ddl = [o for o in plan.ddl_offsets.get(tp, ()) if o < begin]
        if not ddl and begin == start:
            return
        records: list[Record] = []
        with KafkaSession(_connection(plan), retry_s=plan.retry_s) as session:
            for o in ddl:
                records.extend(_to_records(tp, session.read(tp, o, o + 1)))
            try:
                records.extend(_to_records(tp, session.read(tp, begin, start)))
            except KafkaRangeError as exc:  # the records before the range are gone: nothing to warm up with
                log.warning("%s[%s]: no warm-up before offset %s: %s", tp[0], tp[1], start, exc)
        saved, chain.tolerance = chain.tolerance, "all"  # a bad warm-up record was dealt with in its own batch
        try:
            chain.process_batch(records)
        finally:
            chain.tolerance = saved

    def _sinks(self, name: str) -> tuple[Any, Any]:
        from cdc_smt.connector.spark.sinks import DeadLetterFiles, FileOutput

        plan = self.plan
        if plan.sink.is_kafka:
            outputs: Any = self._kafka_output(plan.sink, name)
        else:
            outputs = FileOutput(_path(plan.sink, "sink"), plan.sink.type, plan.batch_id, name)
        if plan.dead_letters.is_kafka:
            dead: Any = outputs if plan.sink.is_kafka else self._kafka_output(plan.dead_letters, name)
        else:
            dead = DeadLetterFiles(_path(plan.dead_letters, "dead_letters"), plan.batch_id, name)
        return outputs, dead

    def _kafka_output(self, spec: SinkSpec, name: str) -> Any:
        from cdc_smt.connector.spark.sinks import KafkaOutput, Transactional

        plan = self.plan
        tx = None
        if spec.exactly_once:
            if plan.run_id is None or plan.commit_topic is None:
                raise RuntimeError("exactly-once backfill task plan has no run id or commit topic")
            tx = Transactional(
                plan.run_id, name, plan.batch_id, plan.commit_topic, spec.transaction_timeout_s, plan.attempt
            )
        return KafkaOutput(_connection(plan), plan.job.producer, spec, tx)

    def sink_topic(self, source_topic: str) -> str:
        name = self._sink_topics.get(source_topic)
        if name is None:
            name = self._sink_topics[source_topic] = self.plan.job.sink.topic_for(source_topic)
        return name

    # -- slices ----------------------------------------------------------------------------
    def feed_slice(self, row: Mapping[str, Any]) -> None:
        """Read one slice (a Kafka offset range, or a file) here in the task and feed it in order."""
        if row["file"] is not None:
            self._feed_file(row["file"], bool(row["binary"]))
        else:
            self._feed_kafka((row["topic"], row["partition"]), row["start"], row["end"])

    def _feed_kafka(self, tp: TopicPartition, start: int, end: int) -> None:
        exactly_once = self.plan.run_id is not None
        if exactly_once and self.stream(tp, Record(value=None, topic=tp[0], partition=tp[1]), start).committed:
            return  # written by an earlier attempt: not even read
        with KafkaSession(_connection(self.plan), retry_s=self.plan.retry_s) as session:
            for chunk in session.read(tp, start, end, max_records=CHUNK):
                records = _to_records(tp, [chunk])
                self.feed([tp] * len(records), records, [m.offset for m in chunk])

    def _feed_file(self, path: str, binary: bool) -> None:
        from cdc_smt.connector.framing import read_records

        if not binary and _arrow_extension() is not None:
            for values, lines in _line_arrays(path):
                self.feed_lines(path, values, lines)
            return
        positions: list[int] = []
        records: list[Record] = []
        for pos, record in read_records(path, binary):
            positions.append(pos)
            records.append(record)
            if len(records) >= CHUNK:
                self.feed([path] * len(records), records, positions)
                positions, records = [], []
        if records:
            self.feed([path] * len(records), records, positions)

    # -- records -------------------------------------------------------------------------
    def feed(self, keys: Sequence[Any], records: Sequence[Record], positions: Sequence[int]) -> None:
        """Records in order, each through its stream's chain (runs of one stream on the Arrow path)."""
        if len(keys) != len(records) or len(records) != len(positions):
            raise ValueError("keys, records and positions differ in length")
        start = 0
        n = len(records)
        while start < n:
            key = keys[start]
            stop = start + 1
            while stop < n and keys[stop] == key:
                stop += 1
            st = self.stream(key, records[start], positions[start])
            run = records[start:stop]
            values = self._arrow_values(st, run)
            if values is None:
                for record, pos in zip(run, positions[start:stop], strict=True):
                    self._feed_one(st, record, pos)
            else:
                at = np.asarray(positions[start:stop], dtype=np.int64)
                self._feed_arrow(st, values, at, run.__getitem__, SourceRows.of_records(run))
            start = stop

    def feed_batch(self, batch: pa.RecordBatch) -> None:
        """An input batch of rows (Kafka columns; file rows add ``file`` and ``position``), in order:
        each run of one stream's rows goes to the native plan as the batch's own ``value`` array."""
        values = batch.column(batch.schema.get_field_index("value"))
        if _arrow_extension() is None or values.type not in (pa.binary(), pa.large_binary()):
            self.feed(*batch_records(batch))
            return
        source = SourceRows.of_batch(batch)
        files = "file" in batch.schema.names
        key_columns = [
            batch.column(batch.schema.get_field_index(n)) for n in (["file"] if files else ["topic", "partition"])
        ]
        positions = batch.column(batch.schema.get_field_index("position" if files else "offset"))
        for start, stop in _runs(key_columns, batch.num_rows):
            rows = batch.slice(start, stop - start)
            key = (
                key_columns[0][start].as_py()
                if files
                else (key_columns[0][start].as_py(), key_columns[1][start].as_py())
            )
            record_at = _row_record(rows)
            st = self.stream(key, record_at(0), positions[start].as_py())
            if self._arrow_plan(st) is None:
                self.feed(*batch_records(rows))
                continue
            pos = positions.slice(start, stop - start).to_numpy(zero_copy_only=False)
            self._feed_arrow(st, values.slice(start, stop - start), pos, record_at, source.slice(start, stop - start))

    def feed_lines(self, path: str, values: pa.Array, lines: pa.Array) -> None:
        """A block of a JSON Lines file (messages and their line numbers as Arrow arrays), in order;
        a record (``Record(value=line)``, as ``read_records`` makes it) only for a row Python processes."""
        if not len(values):
            return
        pos = lines.to_numpy()
        record_at = _line_record(values)
        st = self.stream(path, record_at(0), int(pos[0]))
        if self._arrow_plan(st) is not None:
            self._feed_arrow(st, values, pos, record_at, SourceRows.bare(len(values)))
            return
        for value, line in zip(values.to_pylist(), pos.tolist(), strict=True):
            self._feed_one(st, Record(value=value), line)

    def _feed_one(self, st: Stream, record: Record, pos: int) -> None:
        if st.committed:
            return
        if st.first < 0:
            st.first = pos
        st.last = pos
        st.records += 1
        st.last_timestamp = record.timestamp
        st.last_partition = record.partition or 0
        try:
            result = st.chain.process(record)
        except ChainHalted as halted:
            raise BackfillHalted(self._where(st, record, pos), halted.dead_letter) from None
        self._emit(st, result, record, pos)
        if st.final_offset is not None and pos == st.final_offset:
            self._flush(st, record, pos)

    # -- the native plan over Arrow arrays ----------------------------------------------
    def _arrow_plan(self, st: Stream) -> Any:
        """The stream's native plan when the task can hand it Arrow arrays, else ``None``."""
        if st.committed or st.chain.native is None or _arrow_extension() is None:
            return None
        return st.chain.native

    def _arrow_values(self, st: Stream, records: Sequence[Record]) -> pa.Array | None:
        """The records' values as a binary array when the stream takes the Arrow path."""
        if self._arrow_plan(st) is None or not all(
            (r.value is None or type(r.value) is bytes) and (r.key is None or type(r.key) is bytes) for r in records
        ):
            return None
        return pa.array([r.value for r in records], pa.binary())

    def _feed_arrow(
        self,
        st: Stream,
        values: pa.Array,
        positions: np.ndarray,
        record_at: Callable[[int], Record],
        source: SourceRows,
    ) -> None:
        """Rows of one stream through its native plan in one call; runs of handled rows go to the
        sink as Arrow arrays, a row the plan leaves to Python goes through ``_feed_one`` in its place."""
        native, ext = self._arrow_plan(st), _arrow_extension()
        assert native is not None and ext is not None  # the caller checked (_arrow_plan)
        keys_in = source.keys if native.needs_keys else None
        counts, out_values, out_keys, variants = (pa.array(a) for a in ext.convert_arrow(native.plan, values, keys_in))
        outputs = NativeOutputs(out_values, out_keys, variants, np.empty(0, np.int64))
        n = len(values)
        per_row = counts.to_numpy()
        handled = np.maximum(per_row, 0)
        ends = np.cumsum(handled)  # outputs up to and including each row
        if self.plan.sink.is_kafka:  # each output's input row: its timestamp, partition and headers
            outputs = outputs.with_rows(np.repeat(np.arange(n, dtype=np.int64), handled))
        breaks = set(np.flatnonzero(per_row < 0).tolist())
        if st.final_offset is not None:  # the row to flush after ends a run
            breaks.update((np.flatnonzero(positions == st.final_offset) + 1).tolist())
        start = 0
        for stop in sorted({*breaks, n}):
            if stop > start:
                first_out = int(ends[start - 1]) if start else 0
                run = outputs.slice(first_out, int(ends[stop - 1]) - first_out)
                self._native_run(st, native, positions[start], positions[stop - 1], stop - start, record_at(stop - 1),
                                 run, source)  # fmt: skip
            if stop < n and per_row[stop] < 0:
                self._feed_one(st, record_at(stop), int(positions[stop]))
                start = stop + 1
            else:
                start = stop

    def _native_run(
        self, st: Stream, native: Any, first: int, last: int, rows: int, record: Record, outputs: NativeOutputs,
        source: SourceRows,
    ) -> None:  # fmt: skip
        """Book ``rows`` converted rows (positions ``first``..``last``, the last one ``record``) and
        hand their outputs to the sink as arrays."""
        if st.first < 0:
            st.first = int(first)
        st.last = int(last)
        st.records += rows
        st.last_timestamp = record.timestamp
        st.last_partition = record.partition or 0
        if len(outputs.values):
            topics = pc.take(self._variant_topics(st, native), outputs.variants)
            if self.plan.sink.is_kafka:
                st.outputs.extend_arrow(kafka_outputs(outputs, topics, native.variants, source))
            else:
                names = pc.unique(topics)
                if len(names) == 1:
                    st.outputs.extend(names[0].as_py(), outputs.values)
                else:
                    for name in names.to_pylist():
                        st.outputs.extend(name, outputs.values.filter(pc.equal(topics, name)))
            st.written += len(outputs.values)
        if st.final_offset is not None and last == st.final_offset:
            self._flush(st, record, int(last))

    def _variant_topics(self, st: Stream, native: Any) -> pa.Array:
        """Each variant's output topic (a transform's, else the sink's for the stream's source topic)."""
        return pa.array([topic or self.sink_topic(st.source_topic) for topic, _ in native.variants], pa.string())

    def _emit(self, st: Stream, result: ChainResult, record: Record, pos: int) -> None:
        ts, sp = record.timestamp, record.partition or 0
        kafka = self.plan.sink.is_kafka
        for o in result.outputs:
            topic = o.topic or self.sink_topic(st.source_topic)
            if kafka:
                o.topic = topic
                if o.timestamp is None:
                    o.timestamp = ts
                st.outputs.add(o, sp)
            else:
                st.outputs.add(topic, o.value)
            st.written += 1
        for dl in result.dead_letters:
            st.failed += 1
            if self.plan.dead_letters.is_kafka:
                st.dead_letters.add(dl.to_record(self.plan.job.errors.dead_letter_topic), sp)
            else:
                st.dead_letters.add(dl, self._coordinates(st, record, pos))

    def _flush(self, st: Stream, record: Record, pos: int) -> None:
        try:
            result = st.chain.flush()
        except ChainHalted as halted:
            raise BackfillHalted(f"{st.name}: end of input", halted.dead_letter) from None
        self._emit(st, result, record, pos)

    def _where(self, st: Stream, record: Record, pos: int) -> str:
        if st.topic is None:
            unit = "record" if record.offset is not None or record.topic is not None else "line"
            return f"{st.name}: {unit} {pos}"
        return record.where()

    def _coordinates(self, st: Stream, record: Record, pos: int) -> dict[str, Any]:
        if st.topic is not None:
            return {"topic": st.topic, "partition": st.partition, "offset": pos, "timestamp": record.timestamp}
        where: dict[str, Any] = {"file": st.name, "position": pos}
        if record.topic is not None or record.offset is not None:  # an Avro dump keeps Kafka coordinates
            where.update(
                topic=record.topic, partition=record.partition, offset=record.offset, timestamp=record.timestamp
            )
        return where

    # -- the end -------------------------------------------------------------------------
    def finish(self) -> pa.RecordBatch:
        """Flush file streams, close every sink, and summarise."""
        rows = []
        for st in self.streams.values():
            if st.final_offset is None and st.records and not st.committed:
                self._flush(st, Record(value=None, partition=st.last_partition, timestamp=st.last_timestamp), st.last)
            for sink in {id(st.outputs): st.outputs, id(st.dead_letters): st.dead_letters}.values():
                if sink is not st.transactional:
                    sink.close()  # before the summary: a file sink counts the tombstones it skipped at close
            summary = self._summary(st)
            if st.transactional is not None:
                st.transactional.close({k: summary[k] for k in MARKER_FIELDS})  # the marker commits with the outputs
            rows.append(summary)
        return pa.RecordBatch.from_pylist(rows, schema=SUMMARY_SCHEMA)

    def _summary(self, st: Stream) -> dict[str, Any]:
        return {
            "stream": st.name,
            "topic": st.topic,
            "partition": st.partition if st.topic is not None else None,
            "first": st.first,
            "last": st.last,
            "records": st.records,
            "outputs": st.written,
            "dead_letters": st.failed,
            "tombstones_skipped": getattr(st.outputs, "tombstones", 0),
            "seconds": time.perf_counter() - st.started,
        }

    # -- the mapInArrow loop (kafkasink's RowsTask hands rows back as it goes) -------------------
    def run(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Every input batch (slice descriptors, or rows) in order, then the summary; sinks aborted
        on any failure."""
        tune_allocator()  # in the executor's Python worker; repeating it is harmless
        try:
            for batch in batches:
                if not batch.num_rows:
                    continue
                if "start" in batch.schema.names:
                    for row in batch.to_pylist():
                        yield from self.slice_rows(row)
                else:
                    self.feed_batch(batch)
                    yield from self.output()
            summary = self.finish()
            yield from self.output()
        except BaseException:
            self.abort()
            raise
        yield self.summary_rows(summary)

    def slice_rows(self, row: Mapping[str, Any]) -> Iterator[pa.RecordBatch]:
        """Feed one slice; the rows to hand back meanwhile (none: the sinks write themselves)."""
        self.feed_slice(row)
        return iter(self.output())

    def output(self) -> Iterable[pa.RecordBatch]:
        """Rows for Spark produced since the last call (none: the sinks write themselves)."""
        return ()

    def summary_rows(self, summary: pa.RecordBatch) -> pa.RecordBatch:
        return summary

    def abort(self) -> None:
        for st in self.streams.values():
            for sink in {id(st.outputs): st.outputs, id(st.dead_letters): st.dead_letters}.values():
                try:
                    sink.abort()
                except Exception:  # noqa: BLE001 - the original failure matters more
                    log.debug("abort failed", exc_info=True)


def run_task(plan: TaskPlan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` body: every input row through its stream's chain into the sinks."""
    yield from Task(plan).run(batches)


@dataclass(frozen=True)
class NativeOutputs:
    """``convert_arrow``'s output records (values, keys, variants) and, for Kafka sinks, the
    index of each one's input row (``rows``, into the arrays handed to the plan)."""

    values: pa.Array
    keys: pa.Array
    variants: pa.Array
    rows: np.ndarray

    def with_rows(self, rows: np.ndarray) -> NativeOutputs:
        return NativeOutputs(self.values, self.keys, self.variants, rows)

    def slice(self, start: int, length: int) -> NativeOutputs:
        rows = self.rows[start : start + length] if len(self.rows) else self.rows
        return NativeOutputs(
            self.values.slice(start, length), self.keys.slice(start, length), self.variants.slice(start, length), rows
        )


def kafka_outputs(
    outputs: NativeOutputs, topics: pa.Array, variants: Sequence[Any], source: SourceRows
) -> pa.RecordBatch:
    """Converted records as a Kafka sink takes them (:data:`KAFKA_OUTPUT_SCHEMA`): what the per-row
    path's ``_emit`` sets on each output record (its topic, the source timestamp and partition,
    the source headers with the variant's header edits), as columns."""
    rows = pa.array(outputs.rows, pa.int64())
    return pa.RecordBatch.from_arrays(
        [
            topics,
            outputs.keys.cast(pa.large_binary()),
            outputs.values.cast(pa.large_binary()),
            _output_headers(outputs, variants, source),
            pc.take(source.timestamps, rows),
            pc.take(source.partitions, rows),
        ],
        schema=KAFKA_OUTPUT_SCHEMA,
    )


def _output_headers(outputs: NativeOutputs, variants: Sequence[Any], source: SourceRows) -> pa.Array:
    """Each output's headers: its source row's with its variant's edits (as ``NativePlan.run``)."""
    from cdc_smt.transforms.native import edit_headers

    def arrow(headers: list[tuple[str, bytes]]) -> list[dict[str, Any]]:
        return [{"key": k, "value": v} for k, v in headers]

    if source.headers is None:  # the common case: one header list per variant, no Python object per record
        per_variant = pa.array([arrow(edit_headers([], edits) if edits else []) for _, edits in variants], HEADERS_TYPE)
        return pc.take(per_variant, outputs.variants)
    edits_of = [edits for _, edits in variants]
    out = []
    for row, variant in zip(outputs.rows.tolist(), outputs.variants.to_pylist(), strict=True):
        headers, edits = source.headers[row], edits_of[variant]
        out.append(arrow(edit_headers(headers, edits) if edits else list(headers)))
    return pa.array(out, HEADERS_TYPE)


def _arrow_extension() -> Any:
    """The native core when it is on and has the Arrow entry points, else ``None`` (today's path)."""
    from cdc_smt.transforms import native

    if not native.enabled():
        return None
    import cdc_smt._native as ext

    return ext if hasattr(ext, "convert_arrow") else None


def _runs(columns: Sequence[pa.Array], n: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of each run of rows whose ``columns`` are equal (a null starts a run)."""
    if not n:
        return []
    change = None
    for column in columns:
        differs = pc.fill_null(pc.not_equal(column.slice(1), column.slice(0, n - 1)), True)
        change = differs if change is None else pc.or_(change, differs)
    assert change is not None
    cuts = [0, *(pc.indices_nonzero(change).to_numpy() + 1).tolist(), n]
    return list(zip(cuts, cuts[1:], strict=False))


def _row_record(rows: pa.RecordBatch) -> Callable[[int], Record]:
    """Row ``i`` of a batch of rows as the record ``batch_records`` makes of it."""
    return lambda i: batch_records(rows.slice(i, 1))[1][0]


def _line_record(values: pa.Array) -> Callable[[int], Record]:
    """Row ``i`` of a JSON Lines array as the record ``read_records`` makes of it."""
    return lambda i: Record(value=values[i].as_py())


def _line_arrays(path: str) -> Iterator[tuple[pa.Array, pa.Array]]:
    """A JSON Lines file's messages and line numbers as Arrow arrays, read a block of whole lines
    at a time (what :func:`connector.framing.read_lines` gives, without a Python object per line)."""
    from cdc_smt.connector.framing import FramingError

    split = _arrow_extension().split_lines
    try:
        stream = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise FramingError(f"cannot open {path!r}: {exc.strerror}") from None
    carry, line = b"", 1
    with stream:
        while True:
            block = stream.read(BLOCK_BYTES)
            data = carry + block if carry else block
            end = len(data) if not block else data.rfind(b"\n") + 1
            if block and not end:  # no line end yet: read on
                carry = data
                continue
            values, lines, line = split(data, end, line)
            carry = data[end:]
            if len(values):
                yield pa.array(values), pa.array(lines)
            if not block:
                return


def _to_records(tp: TopicPartition, chunks: Iterable[list[Any]]) -> list[Record]:
    out: list[Record] = []
    for chunk in chunks:
        for m in chunk:
            out.append(
                Record(
                    value=m.value,
                    key=m.key,
                    topic=tp[0],
                    partition=tp[1],
                    offset=m.offset,
                    timestamp=m.timestamp,
                    headers=list(m.headers) if m.headers else [],
                )
            )
    return out


def _stem(path: str) -> str:
    """``orders.canal.jsonl`` -> ``orders``: a file's name as a topic name."""
    from cdc_smt.connector.spark.sinks import safe_name

    return safe_name(Path(path).name.split(".")[0])


def stream_name(key: Any, source_root: str | None) -> str:
    """A stream's name: ``<topic>-<partition>`` for a Kafka slice, else the file's (see :func:`_relative`)."""
    if isinstance(key, tuple):
        return f"{key[0]}-{key[1]}"
    return _relative(key, source_root)


def _relative(path: str, root: str | None) -> str:
    """A file's stream name: its path under the source directory, without its framing extension."""
    p = Path(path)
    rel = p.name
    if root and Path(root).is_dir():
        try:
            rel = str(p.relative_to(root))
        except ValueError:
            pass
    for ext in (".jsonl", ".json", ".avro", ".txt"):
        if rel.endswith(ext):
            rel = rel[: -len(ext)]
            break
    return rel.replace("/", "__")


__all__ = [
    "BackfillHalted",
    "HALT_MARK",
    "HEADERS_TYPE",
    "KAFKA_OUTPUT_SCHEMA",
    "SUMMARY_DDL",
    "TaskPlan",
    "kafka_outputs",
    "run_task",
    "stream_name",
]
