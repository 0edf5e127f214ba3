"""Run a backfill: plan the range, start the streaming query, report progress, explain failures.

The query is ``readStream`` (Kafka or files) -> ``foreachBatch`` ->
``trigger(availableNow=True)`` with a checkpoint. For each micro-batch the
driver clears what an interrupted attempt at the same batch id left in the
file sinks, then runs :func:`connector.spark.process.run_task` over the batch
with ``mapInArrow`` (the chain is built once per task, never per row) and
collects one summary row per stream for the progress line. With Spark's own
Kafka writer as the sink, the tasks return their records as rows and the
driver writes them with ``format("kafka")`` (:mod:`connector.spark.kafkasink`).

Spark commits a micro-batch after ``foreachBatch`` returns; a restarted query
re-runs only the batch that was running when it stopped, with the same offsets
and batch id. File output of that batch is replaced; Kafka output of that batch
may be sent twice (at-least-once), never output of committed batches; with
``backfill.sink.processing_guarantee: exactly_once`` each stream's share is a
Kafka transaction with a commit marker, and a re-run skips the shares already
committed (see :mod:`connector.spark.sinks`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from cdc_smt.connector.kafka.admin import wait_until_ready
from cdc_smt.connector.kafka.settings import connection_json
from cdc_smt.connector.spark import kafkasink
from cdc_smt.connector.spark.kafkaio import OffsetMap, TopicPartition, offsets_to_json, plan_range
from cdc_smt.connector.spark.process import HALT_MARK, SUMMARY_DDL, TaskPlan, run_task
from cdc_smt.connector.spark.settings import BackfillSettings, Position
from cdc_smt.connector.spark.sinks import ExactlyOnce
from cdc_smt.transforms.errors import CdcSmtError

log = logging.getLogger("cdc_smt.backfill")
APP_NAME = "cdc-smt-backfill"
#: Where the backfill keeps its own files inside the checkpoint directory.
STATE_DIR = "_cdc_smt"


class BackfillError(CdcSmtError):
    """The backfill stopped; the message says where and why."""


# -- the plan ------------------------------------------------------------------------------------


@dataclass
class Plan:
    """What the run covers: Kafka partitions with start and target offsets, or files."""

    starts: OffsetMap = field(default_factory=dict)
    targets: OffsetMap = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.targets[tp] - self.starts[tp] for tp in self.targets) if self.targets else len(self.files)

    def describe(self) -> list[str]:
        if self.files:
            return (
                [f"{len(self.files)} file(s)"]
                + [f"  {f}" for f in self.files[:20]]
                + (["  ..."] if len(self.files) > 20 else [])
            )
        return [
            f"{t}[{p}]: offsets {self.starts[(t, p)]} .. {self.targets[(t, p)]} "
            f"({self.targets[(t, p)] - self.starts[(t, p)]} records)"
            for t, p in sorted(self.targets)
        ]


def wait_for_kafka(job: Any) -> None:
    """The start-up probe: the cluster answers, or :class:`KafkaUnavailable` says in seconds which
    address failed and why (before Spark starts, and without aiokafka's retry log)."""
    asyncio.run(wait_until_ready(job.kafka))


def plan_kafka(job: Any, settings: BackfillSettings) -> Plan:
    """Partitions and the ``[from, until)`` offsets of each, resolved once on the driver."""
    wait_for_kafka(job)
    src = settings.source
    starts, targets, bounds = plan_range(
        connection_json(job.kafka),
        job.source.topics,
        job.source.pattern,
        src.start,
        src.until,
        retry_s=src.retry_timeout_s,
    )
    _warn_clamped(src.start, starts, bounds)
    return Plan(starts=starts, targets=targets)


def _warn_clamped(position: Position, starts: OffsetMap, bounds: Mapping[TopicPartition, tuple[int, int]]) -> None:
    """Explicit offsets outside the log (deleted by retention, or not written yet) were moved: say so."""
    if position.kind != "offsets":
        return
    for topic, parts in position.offsets.items():
        for partition, wanted in parts.items():
            got = starts.get((topic, partition))
            if got is not None and wanted >= 0 and got != wanted:
                log.warning(
                    "%s[%s]: offset %s is outside the log %s; starting at %s",
                    topic,
                    partition,
                    wanted,
                    bounds[(topic, partition)],
                    got,
                )


def plan_files(settings: BackfillSettings) -> Plan:
    from cdc_smt.connector.spark.datasource import list_files

    assert settings.source.path is not None
    return Plan(files=list_files(settings.source.path))


# -- Spark ---------------------------------------------------------------------------------------


def spark_session(master: str, conf: Mapping[str, str] = {}, *, package: str | None = None, quiet: bool = True) -> Any:  # noqa: B006
    """A session on ``master``; executors run this interpreter (so they import cdc-smt)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(APP_NAME).master(master).config("spark.ui.showConsoleProgress", "false")
    if package:
        builder = builder.config("spark.jars.packages", package)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if quiet:
        spark.sparkContext.setLogLevel("ERROR")
    return spark


def map_in_arrow(df: Any, fn: Callable[..., Any], schema: str) -> Any:
    """``df.mapInArrow(fn, schema)``: ``fn`` gets an iterator of Arrow record batches per task.

    PySpark checks for pandas here although Arrow UDFs do not use it; the ``spark``
    extra installs it.
    """
    return df.mapInArrow(fn, schema)


def source_frame(spark: Any, job: Any, settings: BackfillSettings, plan: Plan) -> Any:
    """The streaming DataFrame of the source (Kafka columns; files add ``file`` and ``position``)."""
    from cdc_smt.connector.spark import datasource

    datasource.register(spark)
    src = settings.source
    if src.type in ("jsonl", "avro"):
        return (
            spark.readStream.format(datasource.FILE_SOURCE)
            .option("path", src.path)
            .option("binary", str(src.type == "avro").lower())
            .option("max_files_per_batch", str(src.max_files_per_batch))
            .option("emit", "slices")
            .load()
        )
    if src.type == "spark-kafka":
        return _spark_kafka_frame(spark, job, settings, plan)
    reader = (
        spark.readStream.format(datasource.KAFKA_SOURCE)
        .option("connection.secret", connection_json(job.kafka))
        .option("starting", Position("offsets", _nested(plan.starts)).to_json())
        .option("ending", Position("offsets", _nested(plan.targets)).to_json())
        .option("max_records_per_batch", str(src.max_records_per_batch))
        .option("retry_timeout_s", str(src.retry_timeout_s))
        .option("emit", "slices")
    )
    reader = (
        reader.option("pattern", job.source.pattern)
        if job.source.pattern
        else reader.option("topics", ",".join(job.source.topics))
    )
    return reader.load()


def spark_kafka_retry_options(retry_s: float) -> dict[str, str]:
    """Options that make Spark's Kafka source wait ``retry_s`` for a broker that does not answer.

    An executor's poll waits up to ``kafkaConsumer.pollTimeoutMs`` for records
    (a broker coming back within it is simply a slow poll); offset lookups (the
    driver's and the executors') block up to ``kafka.default.api.timeout.ms``
    each and are tried ``fetchOffset.numRetries`` times. ``failOnDataLoss``
    stays on: offsets the broker no longer has stop the run instead of being
    skipped.
    """
    ms = str(int(retry_s * 1000))
    return {
        "kafkaConsumer.pollTimeoutMs": ms,
        "kafka.default.api.timeout.ms": ms,
        "fetchOffset.numRetries": "3",
        "fetchOffset.retryIntervalMs": "1000",
        "kafka.reconnect.backoff.max.ms": "1000",
        "failOnDataLoss": "true",
    }


def _spark_kafka_frame(spark: Any, job: Any, settings: BackfillSettings, plan: Plan) -> Any:
    """Spark's own Kafka source (its connector jar supplied), cut at the planned targets."""
    from pyspark.sql import functions as F

    reader = (
        spark.readStream.format("kafka")
        .options(**job.kafka.spark_options())
        .options(**spark_kafka_retry_options(settings.source.retry_timeout_s))
        .option("startingOffsets", json.dumps(offsets_to_json(plan.starts)))
        .option("maxOffsetsPerTrigger", str(settings.source.max_records_per_batch))
        .option("includeHeaders", "true")
    )
    reader = (
        reader.option("subscribePattern", job.source.pattern)
        if job.source.pattern
        else reader.option("subscribe", ",".join(job.source.topics))
    )
    df = reader.load()
    cut = None
    for (t, p), end in plan.targets.items():
        cond = (F.col("topic") == t) & (F.col("partition") == p) & (F.col("offset") < end)
        cut = cond if cut is None else cut | cond
    return df.where(cut) if cut is not None else df


def _nested(offsets: OffsetMap) -> dict[str, dict[int, int]]:
    out: dict[str, dict[int, int]] = {}
    for (t, p), o in offsets.items():
        out.setdefault(t, {})[p] = o
    return out


# -- state carried across micro-batches ------------------------------------------------------------


def schema_file(path: str | None) -> tuple[dict[str, Any] | None, str]:
    """The parsed ``state.schema_file`` (checked now, on the driver) and its name for messages."""
    if not path:
        return None, "schema file"
    from cdc_smt.transforms.catalog import SchemaCatalog

    SchemaCatalog().load_file(path)  # ConfigError naming the problem, before any task starts
    text = Path(path).read_text(encoding="utf-8")
    if path.lower().endswith(".json"):
        return json.loads(text), path
    import yaml

    return yaml.safe_load(text) or {}, path


def ddl_index(spark: Any, job: Any, settings: BackfillSettings, plan: Plan) -> dict[TopicPartition, list[int]]:
    """Offsets of DDL records before each partition's target: a decode-only first pass, cached in the checkpoint."""
    if settings.state.ddl != "first-pass":
        return {}
    cache = Path(settings.checkpoint) / STATE_DIR / "ddl-index.json"
    key = offsets_to_json(plan.targets)
    if cache.is_file():
        saved = json.loads(cache.read_text())
        if saved.get("targets") == key:
            return {(t, int(p)): offs for t, ps in saved["ddl"].items() for p, offs in ps.items()}
    from cdc_smt.connector.spark import datasource

    datasource.register(spark)
    df = (
        spark.read.format(datasource.KAFKA_SOURCE)
        .option("connection.secret", connection_json(job.kafka))
        .option("topics", ",".join(t for t, _ in plan.targets))
        .option("starting", Position("earliest").to_json())
        .option("ending", Position("offsets", _nested(plan.targets)).to_json())
        .option("retry_timeout_s", str(settings.source.retry_timeout_s))
        .load()
    )
    rows = map_in_arrow(df, partial(find_ddl, job), "topic string, partition int, offset long").collect()
    found: dict[TopicPartition, list[int]] = {}
    for r in sorted(rows, key=lambda r: (r.topic, r.partition, r.offset)):
        found.setdefault((r.topic, r.partition), []).append(r.offset)
    cache.parent.mkdir(parents=True, exist_ok=True)
    nested: dict[str, dict[str, list[int]]] = {}
    for (t, p), offs in found.items():
        nested.setdefault(t, {})[str(p)] = offs
    cache.write_text(json.dumps({"targets": key, "ddl": nested}))
    log.info("DDL first pass: %d DDL record(s)", sum(len(v) for v in found.values()))
    return found


def find_ddl(job: Any, batches: Any) -> Any:
    """``mapInArrow`` body of the first pass: decode only, keep the offsets of records that decode to DDL."""
    import pyarrow as pa

    from cdc_smt.connector.spark.process import batch_records
    from cdc_smt.transforms.model import Op

    decoders: dict[Any, Any] = {}
    for batch in batches:
        keys, records, positions = batch_records(batch)
        hits: dict[str, list[Any]] = {"topic": [], "partition": [], "offset": []}
        for key, record, pos in zip(keys, records, positions, strict=True):
            decoder = decoders.get(key)
            if decoder is None:
                decoder = decoders[key] = job.build_chain().decoder
            try:
                events = decoder.decode(record)
            except Exception:  # noqa: BLE001 - the backfill itself reports bad records
                continue
            if any(e.op is Op.DDL for e in events):
                hits["topic"].append(key[0])
                hits["partition"].append(key[1])
                hits["offset"].append(pos)
        yield pa.RecordBatch.from_pydict(
            hits, schema=pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64())])
        )


# -- progress --------------------------------------------------------------------------------------


@dataclass
class Totals:
    records: int = 0
    outputs: int = 0
    dead_letters: int = 0
    tombstones_skipped: int = 0
    batches: int = 0

    @property
    def written(self) -> int:
        """Outputs that reached the sink (JSON Lines has no line for a tombstone)."""
        return self.outputs - self.tombstones_skipped


class Progress:
    """One line per micro-batch on stderr: records, rate, how far each partition (or the files) got."""

    def __init__(
        self, plan: Plan, out: TextIO | None = sys.stderr, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.plan = plan
        self.out = out
        self.clock = clock
        self.started = clock()
        self.totals = Totals()
        self.done: dict[TopicPartition, int] = {}  # next offset per partition
        self.files_done = 0

    def update(self, batch_id: int, rows: Sequence[Any], seconds: float) -> str:
        n = sum(r.records for r in rows)
        t = self.totals
        t.batches += 1
        t.records += n
        t.outputs += sum(r.outputs for r in rows)
        t.dead_letters += sum(r.dead_letters for r in rows)
        t.tombstones_skipped += sum(r.tombstones_skipped for r in rows)
        for r in rows:
            if r.topic is not None:
                self.done[(r.topic, r.partition)] = r.last + 1
            else:
                self.files_done += 1
        line = self._line(batch_id, n, seconds)
        if self.out is not None:
            print(line, file=self.out, flush=True)
        return line

    def rate(self) -> float:
        elapsed = self.clock() - self.started
        return self.totals.records / elapsed if elapsed > 0 else 0.0

    def _line(self, batch_id: int, n: int, seconds: float) -> str:
        t = self.totals
        text = (
            f"backfill: batch {batch_id}: {n:,} records in {seconds:.1f}s; total {t.records:,} records, "
            f"{t.written:,} written, {t.dead_letters:,} dead letters, {self.rate():,.0f} msgs/s"
        )
        if self.plan.files:
            return f"{text}; files {self.files_done}/{len(self.plan.files)}"
        parts = [f"{t}[{p}] {off:,}/{self.plan.targets[(t, p)]:,}" for (t, p), off in sorted(self.done.items())]
        shown = parts[:8] + ([f"... {len(parts) - 8} more"] if len(parts) > 8 else [])
        return f"{text}; " + ", ".join(shown)

    def summary(self) -> str:
        t = self.totals
        text = (
            f"backfill: done: {t.records:,} records in {t.batches} micro-batch(es), {t.written:,} written, "
            f"{t.dead_letters:,} dead letters, {self.clock() - self.started:.1f}s ({self.rate():,.0f} msgs/s)"
        )
        if t.tombstones_skipped:
            text += f", {t.tombstones_skipped:,} tombstones not written (JSON Lines has no null message)"
        return text


# -- running ---------------------------------------------------------------------------------------


def make_plan(job: Any, settings: BackfillSettings) -> Plan:
    return plan_kafka(job, settings) if settings.source.is_kafka else plan_files(settings)


class BatchRunner:
    """The ``foreachBatch`` function: clear this batch's file output, run the tasks, report.

    With ``sink.type: spark-kafka`` the tasks return their records and Spark's
    Kafka writer sends them (:mod:`connector.spark.kafkasink`).
    """

    def __init__(self, settings: BackfillSettings, progress: Progress, base: TaskPlan) -> None:
        self.settings, self.progress, self.base = settings, progress, base

    def __call__(self, df: Any, batch_id: int) -> None:
        from dataclasses import replace

        from cdc_smt.connector.spark.sinks import clear_batch

        started = time.monotonic()
        for spec in (self.settings.sink, self.settings.dead_letters):
            if not spec.is_kafka and spec.path:
                clear_batch(spec.path, batch_id)
        task_plan = replace(self.base, batch_id=batch_id)
        if self.settings.sink.type == kafkasink.SINK_TYPE:
            options = kafkasink.writer_options(task_plan.job, self.settings.source.retry_timeout_s)
            rows = kafkasink.write_batch(df, task_plan, options)
        else:
            rows = map_in_arrow(df, partial(run_task, task_plan), SUMMARY_DDL).collect()
        self.progress.update(batch_id, rows, time.monotonic() - started)


def prepare_exactly_once(job: Any, settings: BackfillSettings, plan: Plan) -> ExactlyOnce | None:
    """``exactly_once`` Kafka output: transactions checked, commit topic made, every stream's id fenced."""
    from cdc_smt.connector.spark.process import stream_name
    from cdc_smt.connector.spark.sinks import prepare_exactly_once as prepare

    root = settings.source.path if not settings.source.is_kafka else None
    streams = [stream_name(key, root) for key in [*plan.targets, *plan.files]]
    return prepare(job, settings.sink, streams, Path(settings.checkpoint) / STATE_DIR)


def task_plan(job: Any, settings: BackfillSettings, plan: Plan, spark: Any, eos: ExactlyOnce | None = None) -> TaskPlan:
    source_root = settings.source.path if not settings.source.is_kafka else None
    catalog_data, catalog_source = schema_file(settings.state.schema_file)
    return TaskPlan(
        job=job,
        batch_id=-1,
        sink=settings.sink,
        dead_letters=settings.dead_letters,
        connection=connection_json(job.kafka) if settings.needs_kafka else None,
        targets=dict(plan.targets),
        warmup=settings.state.warmup,
        ddl_offsets=ddl_index(spark, job, settings, plan),
        catalog_data=catalog_data,
        catalog_source=catalog_source,
        file_topic=job.source.topics[0] if job.source.topics else None,
        source_root=source_root,
        retry_s=settings.source.retry_timeout_s,
        run_id=eos.run_id if eos else None,
        commit_topic=eos.commit_topic if eos else None,
        attempt=eos.attempt if eos else None,
    )


def run(
    job: Any,
    settings: BackfillSettings,
    *,
    spark: Any = None,
    progress_out: TextIO | None = sys.stderr,
) -> Progress:
    """Run the backfill to the planned end (or resume it); return its progress totals.

    Raises :class:`BackfillError` with the record and reason when a record
    fails under ``errors.tolerance: none``, or the first line of any other failure.
    """
    job.check()
    if settings.needs_kafka and not settings.source.is_kafka:
        wait_for_kafka(job)  # a Kafka sink or dead-letter topic (a Kafka source is probed by the plan)
    plan = make_plan(job, settings)
    eos = prepare_exactly_once(job, settings, plan)  # before Spark: a broker without transactions is refused now
    own = spark is None
    if own:
        spark = spark_session(
            settings.master,
            settings.spark_conf,
            package=settings.spark_kafka_package,
            quiet=log.getEffectiveLevel() > logging.DEBUG,
        )
    progress = Progress(plan, progress_out)
    try:
        base = task_plan(job, settings, plan, spark, eos)
        df = source_frame(spark, job, settings, plan)
        runner = BatchRunner(settings, progress, base)
        query = (
            df.writeStream.foreachBatch(runner)
            .option("checkpointLocation", settings.checkpoint)
            .trigger(availableNow=True)
            .queryName(f"{APP_NAME}-{job.id}")
            .start()
        )
        _await(query, job.kafka.bootstrap if "spark-kafka" in (settings.source.type, settings.sink.type) else None)
    finally:
        if own:
            spark.stop()
    if progress_out is not None:
        print(progress.summary(), file=progress_out, flush=True)
    return progress


def _await(query: Any, bootstrap: str | None = None) -> None:
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
        raise
    except Exception as exc:  # noqa: BLE001 - StreamingQueryException and friends: one clear line
        raise BackfillError(explain(exc, bootstrap)) from None


_HALT = re.compile(re.escape(HALT_MARK) + r"\s*(.+)")


_ERROR_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Halted|Unavailable)): (.+)$")
#: What Spark's Kafka connector (a Java client) reports when the broker did not answer in time.
_KAFKA_TIMEOUT = re.compile(r"org\.apache\.kafka\.common\.errors\.(\w*TimeoutException): ([^\n]+)")
_FRAMEWORK = ("pyspark.", "py4j.", "org.apache.", "java.", "scala.")


def explain(exc: BaseException, bootstrap: str | None = None) -> str:
    """The reason a query failed, without the JVM and Python stack traces around it.

    A record that stopped the run (:data:`HALT_MARK`) wins; otherwise the last
    Python ``SomeError: message`` line that is not Spark's own wrapper; else a
    Kafka client timeout of Spark's connector, with the broker (``bootstrap``).
    """
    text = str(exc)
    m = _HALT.search(text)
    if m:
        return f"stopped at a record that failed (errors.tolerance: none): {m.group(1).strip()}"
    found = [line.strip() for line in text.splitlines() if _ERROR_LINE.match(line.strip())]
    ours = [line for line in found if not line.startswith(_FRAMEWORK)]
    if ours:
        return ours[-1]
    timeout = _KAFKA_TIMEOUT.search(text)
    if timeout:
        where = f" at {bootstrap}" if bootstrap else ""
        return (
            f"Kafka{where} did not answer in time: {timeout.group(1)}: {timeout.group(2).strip()} "
            "(set backfill.source.retry_timeout_s to wait longer)"
        )
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


__all__ = [
    "BackfillError",
    "Plan",
    "Progress",
    "explain",
    "make_plan",
    "map_in_arrow",
    "run",
    "spark_session",
    "wait_for_kafka",
]
