"""The ``backfill:`` section of a job file, and loading a job file for a backfill.

The backfill runs the worker's job file unchanged (source format, chain, sink
format and topic, errors, producer) and reads what only a backfill needs from
an optional ``backfill:`` section: where records come from (Kafka offset or
time ranges, or files), where they go (Kafka, JSON Lines or Parquet files), the
checkpoint, Spark settings and how per-partition state is rebuilt. Command-line
flags override the section.

The section is taken out of the document before the rest is handed to
:func:`connector.jobconfig.load_job`, and validated here against its part of
``schemas/job.schema.json`` (``$defs/backfill``) by the explainer every config
file shares, so errors name the setting (``backfill.sink.path``).
A file-only job need not say anything about Kafka: the settings the worker
requires but a file backfill never uses are filled in with inert values.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdc_smt.transforms.errors import ConfigError

KAFKA_SOURCES = ("kafka", "spark-kafka")
#: kafka: cdc-smt's producer in the tasks; spark-kafka: Spark's own ``format("kafka")`` writer.
KAFKA_SINKS = ("kafka", "spark-kafka")
FILE_SOURCES = ("jsonl", "avro")
FILE_SINKS = ("jsonl", "parquet")
DEFAULT_MASTER = "local[*]"
#: The Maven coordinates of Spark's Kafka connector matching this pyspark, for ``--spark-kafka-connector auto``.
SPARK_KAFKA_ARTIFACT = "org.apache.spark:spark-sql-kafka-0-10_{scala}:{spark}"
#: Stand-ins for worker settings a file-only backfill never reads.
_INERT_BOOTSTRAP = "localhost:9092"
_INERT_DLQ_TOPIC = "cdc-smt-backfill-dead-letters"


@dataclass(frozen=True)
class Position:
    """Where a Kafka range starts or ends: ``earliest``, ``latest``, explicit offsets, or a time.

    Explicit offsets may use ``-2`` (earliest) and ``-1`` (latest) as Spark
    does; partitions they do not list take ``default``.
    """

    kind: str  # earliest | latest | offsets | time
    offsets: Mapping[str, Mapping[int, int]] = field(default_factory=dict)
    time_ms: int | None = None

    def to_json(self) -> str:
        return json.dumps(
            {
                "kind": self.kind,
                "offsets": {t: {str(p): o for p, o in ps.items()} for t, ps in self.offsets.items()},
                "time_ms": self.time_ms,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Position:
        d = json.loads(text)
        offsets = {t: {int(p): int(o) for p, o in ps.items()} for t, ps in d["offsets"].items()}
        return cls(d["kind"], offsets, d["time_ms"])

    def describe(self) -> str:
        if self.kind == "time":
            assert self.time_ms is not None
            return dt.datetime.fromtimestamp(self.time_ms / 1000, dt.UTC).isoformat()
        if self.kind == "offsets":
            return json.dumps({t: {str(p): o for p, o in ps.items()} for t, ps in self.offsets.items()})
        return self.kind


@dataclass(frozen=True)
class SourceSpec:
    type: str = "kafka"
    path: str | None = None
    start: Position = Position("earliest")
    until: Position = Position("latest")
    max_records_per_batch: int = 1_000_000
    max_files_per_batch: int = 64
    #: Seconds a Kafka source waits for a broker that does not answer before the backfill stops.
    retry_timeout_s: float = 60.0

    @property
    def is_kafka(self) -> bool:
        return self.type in KAFKA_SOURCES


@dataclass(frozen=True)
class SinkSpec:
    """Where outputs (or dead letters) go; the Kafka delivery settings apply to a Kafka sink.

    ``processing_guarantee``: ``exactly_once`` writes each stream's share of a
    micro-batch in one Kafka transaction with a commit marker on
    ``commit_topic`` (``None``: ``<job id>.backfill-commits``; see :mod:`connector.spark.sinks`).
    ``delivery_timeout_s``: how long sends ride out an unreachable broker before the run fails.
    ``transaction_timeout_s``: the longest a stream's transaction may stay open.
    """

    type: str = "kafka"
    path: str | None = None
    processing_guarantee: str = "at_least_once"
    commit_topic: str | None = None
    delivery_timeout_s: float = 60.0
    transaction_timeout_s: int = 900

    @property
    def is_kafka(self) -> bool:
        return self.type in KAFKA_SINKS

    @property
    def exactly_once(self) -> bool:
        return self.processing_guarantee == "exactly_once"


@dataclass(frozen=True)
class StateSpec:
    """How per-partition codec state survives micro-batch boundaries (see :mod:`connector.spark.process`)."""

    warmup: int = 1
    ddl: str = "none"
    schema_file: str | None = None


@dataclass(frozen=True)
class BackfillSettings:
    source: SourceSpec
    sink: SinkSpec
    dead_letters: SinkSpec
    checkpoint: str
    master: str = DEFAULT_MASTER
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    spark_kafka_package: str | None = None
    state: StateSpec = StateSpec()

    @property
    def needs_kafka(self) -> bool:
        return self.source.is_kafka or self.sink.is_kafka or self.dead_letters.is_kafka


@dataclass(frozen=True)
class Overrides:
    """Command-line flags; ``None`` keeps the job file's value."""

    source_type: str | None = None
    source_path: str | None = None
    sink_type: str | None = None
    sink_path: str | None = None
    dead_letter_path: str | None = None
    checkpoint: str | None = None
    master: str | None = None
    start: Position | None = None
    until: Position | None = None
    max_records_per_batch: int | None = None
    max_files_per_batch: int | None = None
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    spark_kafka_package: str | None = None


# -- positions ---------------------------------------------------------------------------------


def parse_time(value: Any, where: str) -> int:
    """Epoch milliseconds from an int, digits, or ISO 8601 text (naive means UTC)."""
    if isinstance(value, bool):
        raise ConfigError(f"expected a time, got {value!r}", where)
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"expected ISO 8601 (2024-05-01T08:00:00+08:00) or epoch milliseconds, got {text!r}", where
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return int(parsed.timestamp() * 1000)


def parse_offsets(value: Any, where: str) -> dict[str, dict[int, int]]:
    """``{topic: {partition: offset}}`` from a mapping or its JSON text."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ConfigError(f'expected JSON like {{"orders": {{"0": 1200}}}}: {exc}', where) from None
    if not isinstance(value, Mapping):
        raise ConfigError('expected {"topic": {"partition": offset}}', where)
    out: dict[str, dict[int, int]] = {}
    for topic, parts in value.items():
        if not isinstance(parts, Mapping):
            raise ConfigError(f"{topic}: expected {{partition: offset}}", where)
        try:
            out[str(topic)] = {int(p): int(o) for p, o in parts.items()}
        except (TypeError, ValueError):
            raise ConfigError(f"{topic}: partitions and offsets must be integers", where) from None
        if any(o < -2 for o in out[str(topic)].values()):
            raise ConfigError(f"{topic}: offsets are >= 0, or -2 (earliest) / -1 (latest)", where)
    return out


def position_from_config(value: Any, where: str) -> Position:
    if isinstance(value, str):
        return Position(value)
    if "offsets" in value:
        return Position("offsets", parse_offsets(value["offsets"], f"{where}.offsets"))
    return Position("time", time_ms=parse_time(value["time"], f"{where}.time"))


def position_from_flag(text: str, flag: str, *, time_only: bool = False, offsets_only: bool = False) -> Position:
    """``earliest``/``latest``, JSON offsets, or a time, as a flag spells them."""
    text = text.strip()
    if text in ("earliest", "latest") and not time_only:
        return Position(text)
    if text.startswith("{"):
        if time_only:
            raise ConfigError("expected a time, not offsets", flag)
        return Position("offsets", parse_offsets(text, flag))
    if offsets_only:
        raise ConfigError('expected earliest, latest or JSON offsets like {"orders": {"0": 1200}}', flag)
    return Position("time", time_ms=parse_time(text, flag))


# -- loading -----------------------------------------------------------------------------------


def validate_section(section: Any) -> None:
    """Check the ``backfill:`` mapping; the first error names its setting."""
    from cdc_smt.connector.jobconfig import JOB_SCHEMA
    from cdc_smt.transforms.config import check_document

    check_document(section, f"{JOB_SCHEMA}#/$defs/backfill", "backfill")


def build_settings(section: Mapping[str, Any], job_doc: Mapping[str, Any], overrides: Overrides) -> BackfillSettings:
    """Settings from a validated section, the job document and the flags (flags win)."""
    src = dict(section.get("source") or {})
    snk = dict(section.get("sink") or {})
    dlq = dict(section.get("dead_letters") or {})
    state = dict(section.get("state") or {})
    o = overrides

    source_type = o.source_type or src.get("type") or ("jsonl" if (o.source_path or src.get("path")) else "kafka")
    source = SourceSpec(
        type=source_type,
        path=o.source_path or src.get("path"),
        start=o.start or position_from_config(src.get("from", "earliest"), "backfill.source.from"),
        until=o.until or position_from_config(src.get("until", "latest"), "backfill.source.until"),
        max_records_per_batch=o.max_records_per_batch
        or src.get("max_records_per_batch", SourceSpec.max_records_per_batch),
        max_files_per_batch=o.max_files_per_batch or src.get("max_files_per_batch", SourceSpec.max_files_per_batch),
        retry_timeout_s=float(src.get("retry_timeout_s", SourceSpec.retry_timeout_s)),
    )
    if source.type in FILE_SOURCES and not source.path:
        raise ConfigError(f"a {source.type} source needs a path (or --source-path)", "backfill.source.path")
    if source.type in FILE_SOURCES and (source.start.kind != "earliest" or source.until.kind != "latest"):
        raise ConfigError("offset and time ranges apply to Kafka sources only; files are read whole", "backfill.source")

    sink_type = o.sink_type or snk.get("type") or ("jsonl" if (o.sink_path or snk.get("path")) else "kafka")
    sink = SinkSpec(
        sink_type,
        o.sink_path or snk.get("path"),
        processing_guarantee=snk.get("processing_guarantee", SinkSpec.processing_guarantee),
        commit_topic=snk.get("commit_topic"),
        delivery_timeout_s=float(snk.get("delivery_timeout_s", SinkSpec.delivery_timeout_s)),
        transaction_timeout_s=snk.get("transaction_timeout_s", SinkSpec.transaction_timeout_s),
    )
    if sink.type in FILE_SINKS and not sink.path:
        raise ConfigError(f"a {sink.type} sink needs a path (or --sink-path)", "backfill.sink.path")

    dead_letters = _dead_letter_spec(dlq, sink, job_doc, o)
    if sink.exactly_once and not sink.is_kafka:
        raise ConfigError(
            f"exactly_once applies to a Kafka sink; a {sink.type} sink is already replaced per micro-batch",
            "backfill.sink.processing_guarantee",
        )
    if sink.exactly_once and sink.type != "kafka":
        raise ConfigError(
            f"exactly_once needs the kafka sink (cdc-smt's transactional producer); Spark's format(\"kafka\") "
            f"writer ({sink.type}) cannot write in transactions",
            "backfill.sink.processing_guarantee",
        )
    if sink.exactly_once and not dead_letters.is_kafka:
        # A re-run skips a committed stream's share, so its file dead letters (replaced per batch) would be lost.
        raise ConfigError(
            "exactly_once writes dead letters in the outputs' transaction: use the job's dead-letter topic, not files",
            "backfill.dead_letters.type",
        )

    checkpoint = o.checkpoint or section.get("checkpoint")
    if not checkpoint:
        raise ConfigError(
            "a backfill needs a checkpoint directory (it is how an interrupted run resumes)", "backfill.checkpoint"
        )
    conf = {str(k): _conf_text(v) for k, v in (section.get("spark_conf") or {}).items()}
    conf.update(o.spark_conf)
    spec_state = StateSpec(
        warmup=state.get("warmup", StateSpec.warmup),
        ddl=state.get("ddl", StateSpec.ddl),
        schema_file=state.get("schema_file"),
    )
    if spec_state.ddl == "first-pass" and not source.is_kafka:
        raise ConfigError(
            "the DDL first pass applies to Kafka sources (a file is read whole by one task)", "backfill.state.ddl"
        )
    package = o.spark_kafka_package or section.get("spark_kafka_package")
    for kind, spec_type in (("source", source.type), ("sink", sink.type)):
        if spec_type == "spark-kafka" and not package and not _has_spark_kafka_jar(conf):
            raise ConfigError(
                f"{kind} type spark-kafka needs Spark's Kafka connector: set backfill.spark_kafka_package "
                "(or --spark-kafka-connector auto|GROUP:ARTIFACT:VERSION), or spark_conf spark.jars",
                f"backfill.{kind}.type",
            )
    return BackfillSettings(
        source=source,
        sink=sink,
        dead_letters=dead_letters,
        checkpoint=checkpoint,
        master=o.master or section.get("master") or DEFAULT_MASTER,
        spark_conf=conf,
        spark_kafka_package=resolve_package(package) if package else None,
        state=spec_state,
    )


def _dead_letter_spec(dlq: Mapping[str, Any], sink: SinkSpec, job_doc: Mapping[str, Any], o: Overrides) -> SinkSpec:
    """Files when a path is given, or beside file output; else the job's dead-letter topic."""
    path = o.dead_letter_path or dlq.get("path")
    kind = dlq.get("type") or ("jsonl" if path else None)
    if o.dead_letter_path:
        kind = "jsonl"
    if kind is None:
        has_topic = bool((job_doc.get("errors") or {}).get("dead_letter_topic"))
        kind = "jsonl" if sink.type in FILE_SINKS and not has_topic else "kafka"
    if kind == "jsonl" and not path:
        if not sink.path:
            raise ConfigError("dead letters to files need a path", "backfill.dead_letters.path")
        path = str(Path(sink.path) / "_dead_letters")
    # Kafka dead letters are delivered as the sink's Kafka output is (same guarantee, same timeouts).
    return dataclasses.replace(sink, type=kind, path=path if kind == "jsonl" else None)


def _conf_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _has_spark_kafka_jar(conf: Mapping[str, str]) -> bool:
    return any("kafka" in conf.get(k, "") for k in ("spark.jars", "spark.jars.packages"))


def resolve_package(package: str) -> str:
    """``auto`` -> the connector built for this pyspark (Scala 2.13); anything else as given."""
    if package != "auto":
        return package
    import pyspark

    return SPARK_KAFKA_ARTIFACT.format(scala="2.13", spark=pyspark.__version__)


def _fill_inert(doc: dict[str, Any], settings: BackfillSettings) -> None:
    """Give a file-only job the worker settings it never uses, so the job schema accepts it."""
    if not settings.needs_kafka:
        doc.setdefault("kafka", {"bootstrap_servers": _INERT_BOOTSTRAP})
    source = doc.setdefault("source", {})
    if isinstance(source, dict) and not settings.source.is_kafka and "topics" not in source and "pattern" not in source:
        source["pattern"] = ".*"
    sink = doc.setdefault("sink", {})
    if isinstance(sink, dict) and not settings.sink.is_kafka:
        sink.setdefault("topic", "{source_topic}")
    errors = doc.get("errors")
    if isinstance(errors, dict) and errors.get("tolerance") == "all" and not settings.dead_letters.is_kafka:
        errors.setdefault("dead_letter_topic", _INERT_DLQ_TOPIC)


def load(path: str | os.PathLike[str], overrides: Overrides = Overrides(), *, env: Mapping[str, str] | None = None):
    """``(JobConfig, BackfillSettings)`` from a job file; flags in ``overrides`` win."""
    from cdc_smt.connector.jobconfig import load_job, read_job_file, substitute_env

    doc = read_job_file(path)
    environ = os.environ if env is None else env
    section = substitute_env(doc.pop("backfill", None) or {}, environ, "backfill")
    validate_section(section)
    settings = build_settings(section, doc, overrides)
    _fill_inert(doc, settings)
    job = load_job(doc, env=environ)
    return dataclasses.replace(job, path=str(path)), settings


__all__ = [
    "BackfillSettings",
    "Overrides",
    "Position",
    "SinkSpec",
    "SourceSpec",
    "StateSpec",
    "build_settings",
    "load",
    "parse_time",
    "position_from_flag",
    "validate_section",
]
