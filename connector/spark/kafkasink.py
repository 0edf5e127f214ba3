"""Spark's own Kafka writer as the backfill's sink (``backfill.sink.type: spark-kafka``).

The tasks convert exactly as for the ``kafka`` sink, but hand their Kafka
records back to Spark as rows (``topic, key, value, headers, partition``)
instead of sending them; ``foreachBatch`` writes the rows with
``df.write.format("kafka")``, Spark's Java producer, reaching the cluster with
the options the ``spark-kafka`` source uses (:meth:`KafkaSettings.spark_options`,
SASL and SSL included) and the job's ``producer`` section
(:func:`connector.kafka.settings.spark_producer_options`). Dead letters bound
for the dead-letter topic become rows too; dead letters to files are written
by the tasks as usual.

A task's output rows and its per-stream summary rows share one schema
(:data:`OUTPUT_DDL`); the micro-batch's output is persisted so that the write
and the progress line use one run of the tasks.

Partitions are chosen as the ``kafka`` sink chooses them (murmur2 of the key,
keyless records to the source partition modulo the output partition count),
so the two sinks put every record in the same partition; the partition counts
are looked up once per task and topic. Spark's writer has no timestamp
column: records carry the time they were written, not the source timestamp
the ``kafka`` sink keeps. Delivery is at-least-once, like the ``kafka`` sink:
a micro-batch re-run after a crash may write its records again.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import partial
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cdc_smt.connector.spark.kafkaio import KafkaSession
from cdc_smt.connector.spark.process import (
    CHUNK,
    HEADERS_TYPE,
    SUMMARY_SCHEMA,
    Task,
    TaskPlan,
    _connection,
    _path,
    _to_records,
)
from cdc_smt.transforms.errors import CdcSmtError
from cdc_smt.transforms.model import Record

SINK_TYPE = "spark-kafka"
#: The Kafka columns of an output row (prefixed: the summary has topic and partition columns of its own).
RECORD_FIELDS = [
    ("out_topic", pa.string()),
    ("out_key", pa.binary()),
    ("out_value", pa.binary()),
    ("out_headers", HEADERS_TYPE),
    ("out_partition", pa.int32()),
]
OUTPUT_SCHEMA = pa.schema(list(SUMMARY_SCHEMA) + [pa.field(n, t) for n, t in RECORD_FIELDS])
SUMMARY_COLUMNS = SUMMARY_SCHEMA.names
OUTPUT_DDL = (
    "stream string, topic string, partition int, first long, last long, records long, outputs long, "
    "dead_letters long, tombstones_skipped long, seconds double, out_topic string, out_key binary, "
    "out_value binary, out_headers array<struct<key:string,value:binary>>, out_partition int"
)


class SparkKafkaSinkError(CdcSmtError):
    """Output cannot be written through Spark's Kafka writer (an output topic is missing)."""


class KafkaRows:
    """The task's Kafka sink: records (outputs and dead letters) kept as Arrow rows for Spark's writer.

    Same interface as :class:`connector.spark.sinks.KafkaOutput` (``add``,
    ``close``, ``abort``); :meth:`take` hands over the rows gathered so far.
    """

    def __init__(self, conn: str, retry_s: float) -> None:
        self._conn, self._retry_s = conn, retry_s
        self._pending: list[tuple[Record, int]] = []
        self._ready: list[pa.RecordBatch] = []
        self._counts: dict[str, int] = {}

    def add(self, record: Record, source_partition: int) -> None:
        self._pending.append((record, source_partition))
        if len(self._pending) >= CHUNK:
            self._pack()

    def extend_arrow(self, records: pa.RecordBatch) -> None:
        """Converted records (``process.KAFKA_OUTPUT_SCHEMA``) as output rows, after those queued by
        ``add``: partitioned as ``add`` partitions, without a Python object per record."""
        from cdc_smt.connector.spark.sinks import arrow_partitions

        self._pack()
        topics = records.column("topic")
        self._look_up({t for t in pc.unique(topics).to_pylist() if t is not None})
        self._rows(records, arrow_partitions(records, self._counts.__getitem__))

    def take(self) -> list[pa.RecordBatch]:
        self._pack()
        ready, self._ready = self._ready, []
        return ready

    def close(self) -> None:
        self._pack()

    def abort(self) -> None:
        self._pending, self._ready = [], []

    def _pack(self) -> None:
        if not self._pending:
            return
        from cdc_smt.connector.kafka import partition_for
        from cdc_smt.connector.spark.sinks import output_batch

        pending, self._pending = self._pending, []
        records = output_batch(pending)  # every record has a topic (or a ValueError)
        self._look_up({r.topic for r, _ in pending if r.topic is not None})
        partitions = [partition_for(r.key, self._counts[r.topic or ""], p) for r, p in pending]
        self._rows(records, pa.array(partitions, pa.int32()))

    def _rows(self, records: pa.RecordBatch, partitions: pa.Array) -> None:
        """Converted records with their partitions as output rows (summary columns null)."""
        n = records.num_rows
        arrays = [pa.nulls(n, f.type) for f in SUMMARY_SCHEMA] + [
            records.column("topic"),
            records.column("key").cast(pa.binary()),
            records.column("value").cast(pa.binary()),
            records.column("headers"),
            partitions,
        ]
        self._ready.append(pa.RecordBatch.from_arrays(arrays, schema=OUTPUT_SCHEMA))

    def _look_up(self, topics: set[str]) -> None:
        """Partition counts of output topics not seen yet (waiting for the broker like the source does)."""
        missing = sorted(topics - self._counts.keys())
        if not missing:
            return
        with KafkaSession(self._conn, retry_s=self._retry_s) as session:
            found = session.retrying(lambda: session.partition_counts(missing), "looking up output topics")
        for topic in missing:
            if topic not in found:
                raise SparkKafkaSinkError(f"output topic {topic!r} does not exist")
        self._counts.update(found)


class RowsTask(Task):
    """A backfill task whose Kafka sink is :class:`KafkaRows` (shared by every stream of the task)."""

    def __init__(self, plan: TaskPlan) -> None:
        super().__init__(plan)
        self.rows = KafkaRows(_connection(plan), plan.retry_s)

    def _sinks(self, name: str) -> tuple[Any, Any]:
        from cdc_smt.connector.spark.sinks import DeadLetterFiles

        plan = self.plan
        if plan.dead_letters.is_kafka:
            return self.rows, self.rows
        return self.rows, DeadLetterFiles(_path(plan.dead_letters, "dead_letters"), plan.batch_id, name)

    def output(self) -> list[pa.RecordBatch]:
        return self.rows.take()

    def summary_rows(self, summary: pa.RecordBatch) -> pa.RecordBatch:
        return summary_rows(summary)

    def slice_rows(self, row: Mapping[str, Any]) -> Iterator[pa.RecordBatch]:
        """Feed one slice, handing over output rows after every chunk read (a slice may be large)."""
        if row["file"] is not None:
            self.feed_slice(row)
            yield from self.rows.take()
            return
        tp = (row["topic"], row["partition"])
        with KafkaSession(_connection(self.plan), retry_s=self.plan.retry_s) as session:
            for chunk in session.read(tp, row["start"], row["end"], max_records=CHUNK):
                records = _to_records(tp, [chunk])
                self.feed([tp] * len(records), records, [m.offset for m in chunk])
                yield from self.rows.take()


def run_rows_task(plan: TaskPlan, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` body for this sink: output rows as they come, then one summary row per stream."""
    yield from RowsTask(plan).run(batches)


def summary_rows(summary: pa.RecordBatch) -> pa.RecordBatch:
    """Summary rows in the output schema (record columns null)."""
    n = summary.num_rows
    return pa.RecordBatch.from_arrays(
        list(summary.columns) + [pa.nulls(n, t) for _, t in RECORD_FIELDS], schema=OUTPUT_SCHEMA
    )


def write_batch(df: Any, plan: TaskPlan, options: Mapping[str, str]) -> list[Any]:
    """Run the tasks over one micro-batch, write their records with ``format("kafka")``; the summary rows."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    out = df.mapInArrow(partial(run_rows_task, plan), OUTPUT_DDL).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        records = out.where(F.col("out_topic").isNotNull()).select(
            F.col("out_topic").alias("topic"),
            F.col("out_key").alias("key"),
            F.col("out_value").alias("value"),
            F.col("out_headers").alias("headers"),
            F.col("out_partition").alias("partition"),
        )
        records.write.format("kafka").options(**options).option("includeHeaders", "true").save()
        return out.where(F.col("stream").isNotNull()).select(*SUMMARY_COLUMNS).collect()
    finally:
        out.unpersist()


def writer_options(job: Any, retry_s: float) -> dict[str, str]:
    """``format("kafka")`` options: the connection (SASL/SSL), the producer section, and waiting for the
    broker's metadata up to ``retry_s`` (a send is retried by the producer until its delivery timeout)."""
    from cdc_smt.connector.kafka.settings import spark_producer_options

    return {
        **job.kafka.spark_options(),
        **spark_producer_options(job.producer),
        "kafka.max.block.ms": str(int(retry_s * 1000)),
    }


__all__ = [
    "OUTPUT_DDL",
    "SINK_TYPE",
    "KafkaRows",
    "SparkKafkaSinkError",
    "run_rows_task",
    "summary_rows",
    "write_batch",
    "writer_options",
]
