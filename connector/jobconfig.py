"""The worker's job file: load, substitute environment variables, validate, build.

A job file is a superset of the chain file (``source``, ``transforms``,
``sink``, ``errors``) plus the job ``id`` (consumer group), the Kafka
connection, source topics, and producer/consumer/worker settings (and the
``backfill`` section :mod:`connector.spark.settings` reads). It is validated
against ``schemas/job.schema.json``, which takes the chain parts from the chain
schema; errors are worded by the explainer all config files share, naming the
path of the offending key (``sink.topic: missing required key``).

Secrets are written as ``${ENV_VAR}`` references and resolved at load time.
The resolved values live only in fields that are excluded from ``repr`` and
from :meth:`JobConfig.describe`, so they never reach a log line.
"""

from __future__ import annotations

import os
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdc_smt import schemas
from cdc_smt.connector.kafka.settings import (
    DEFAULT_CONNECT_TIMEOUT_S,
    KafkaSettings,  # a job's ``kafka`` section; re-exported
)
from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.config import ChainConfig, check_document, load_config, read_yaml_file
from cdc_smt.transforms.config import build_chain as build_chain_of
from cdc_smt.transforms.errors import ConfigError

JOB_SCHEMA = "urn:cdc-smt:schema:job"
#: Placeholders the sink topic template may use.
SINK_TOPIC_FIELDS = ("source_topic",)
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_ENV_REF = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_ACKS = {"all": -1, "-1": -1, "0": 0, "1": 1, -1: -1, 0: 0, 1: 1}


# -- environment references -----------------------------------------------------
def substitute_env(value: Any, env: Mapping[str, str], path: str = "") -> Any:
    """Replace ``${NAME}`` / ``${NAME:-default}`` in every string; ``$${`` is a literal ``${``.

    A reference to an unset variable without a default is an error naming the
    setting, never the value.
    """
    if isinstance(value, str):
        if "$" not in value:
            return value

        def repl(m: re.Match[str]) -> str:
            if m.group(0) == "$${":
                return "${"
            name, default = m.group(1), m.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default
            raise ConfigError(f"environment variable {name} is not set", path or None)

        return _ENV_REF.sub(repl, value)
    if isinstance(value, dict):
        return {k: substitute_env(v, env, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute_env(v, env, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


# -- settings ---------------------------------------------------------------------
@dataclass(frozen=True)
class SourceSettings:
    format: str
    options: dict[str, Any]
    topics: tuple[str, ...] = ()
    pattern: str | None = None

    @property
    def regex(self) -> re.Pattern[str] | None:
        return re.compile(self.pattern) if self.pattern else None

    def matches(self, topic: str) -> bool:
        """Is ``topic`` a source topic? (A pattern must match the whole name.)"""
        if self.pattern:
            return re.fullmatch(self.pattern, topic) is not None and not topic.startswith("__")
        return topic in self.topics


@dataclass(frozen=True)
class SinkSettings:
    format: str
    options: dict[str, Any]
    topic: str

    def topic_for(self, source_topic: str) -> str:
        """The output topic for records from ``source_topic``."""
        name = self.topic.format(source_topic=source_topic)
        if not _TOPIC_NAME.match(name):
            raise ConfigError(f"{name!r} is not a valid Kafka topic name", "sink.topic")
        return name


@dataclass(frozen=True)
class ErrorSettings:
    tolerance: str = "none"
    dead_letter_topic: str | None = None


@dataclass(frozen=True)
class ProducerSettings:
    acks: int = -1
    compression_type: str | None = None
    linger_ms: int = 0
    batch_size: int = 1_000_000
    max_request_size: int = 1_048_576
    request_timeout_ms: int = 30_000


@dataclass(frozen=True)
class ConsumerSettings:
    auto_offset_reset: str = "earliest"
    max_partition_fetch_bytes: int = 1024 * 1024
    fetch_max_bytes: int = 50 * 1024 * 1024
    #: 5: how long the broker may hold a fetch of caught-up partitions. A broker that does not
    #: answer a waiting fetch as soon as data arrives (Tansu) adds up to this much to every record's
    #: latency (bench/latency.py); under a backlog fetches return at once whatever it is.
    fetch_max_wait_ms: int = 5
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 3_000
    request_timeout_ms: int = 40_000


@dataclass(frozen=True)
class TopicCreation:
    """``None`` partitions: as many as the source topic has."""

    partitions: int | None = None
    replication_factor: int = 1


@dataclass(frozen=True)
class WorkerSettings:
    #: 2000: measured best of 500/1000/2000/5000 (bench/worker.py): larger batches keep more
    #: outputs alive and the conversion runs out of CPU cache; smaller ones pay per-batch costs.
    batch_size: int = 2000
    commit_interval_ms: int = 1000
    metrics_port: int | None = None
    metrics_host: str = "0.0.0.0"
    create_topics: TopicCreation | None = None
    log_format: str = "text"
    data_dir: str | None = None
    pattern_refresh_s: float = 300.0
    processes: int = 1
    #: ``at_least_once`` or ``exactly_once`` (Kafka transactions; see docs/operations.md).
    processing_guarantee: str = "at_least_once"
    #: exactly_once: the broker aborts a transaction left open this long (a worker that died mid-batch).
    transaction_timeout_ms: int = 60_000
    #: exactly_once under a backlog: a partition's transaction commits after this long (caught up: at once).
    #: 500: measured (bench/worker.py) 0.6-0.75x at_least_once's throughput at 100, 0.88x at 500.
    transaction_interval_ms: int = 500
    #: Ask for the next fetch while one converts (see docs/operations.md,
    #: "Latency and throughput"): more throughput under a backlog, but measured (bench/latency.py)
    #: higher latency at 1,000-10,000 msgs/s, so off.
    fetch_ahead: bool = False
    #: Run Faust's aiokafka consumer in a thread of its own (Faust's design); false (the default): on
    #: the worker's own loop, no thread hop per fetch, less CPU, and on an idle machine the lower p99
    #: at 1,000-10,000 msgs/s in every pair measured (bench/README.md, docs/operations.md "Latency and
    #: throughput"); the thread had the lower p99 only under heavy load.
    consumer_thread: bool = False
    #: The interpreter's thread switch interval (``sys.setswitchinterval``) while the worker runs, in
    #: ms; 0: Python's own (5). A fetch answered in Faust's consumer thread can wait up to this long
    #: for the converting thread to give up the interpreter lock. 0.5 measured no better on a loaded
    #: machine (bench/latency.py, docs/operations.md), so Python's stays; a setting to measure idle.
    switch_interval_ms: float = 0.0
    #: How long a stop (SIGTERM, or a failure) may take: draining in-flight batches, the last commit,
    #: leaving the group. Past it the worker exits without its last commit (exit 1), as Kafka
    #: Connect abandons a task past ``task.shutdown.graceful.timeout.ms``: at-least-once loses nothing.
    shutdown_timeout_s: float = 60.0

    @property
    def exactly_once(self) -> bool:
        return self.processing_guarantee == "exactly_once"


@dataclass(frozen=True)
class JobConfig:
    """A validated job. ``transforms``/``predicates`` stay as written: the chain validates them."""

    id: str
    kafka: KafkaSettings
    source: SourceSettings
    sink: SinkSettings
    transforms: list[dict[str, Any]] = field(default_factory=list)
    predicates: dict[str, Any] = field(default_factory=dict)
    on_missing: str | None = None
    schema_files: tuple[str, ...] = ()
    errors: ErrorSettings = field(default_factory=ErrorSettings)
    producer: ProducerSettings = field(default_factory=ProducerSettings)
    consumer: ConsumerSettings = field(default_factory=ConsumerSettings)
    worker: WorkerSettings = field(default_factory=WorkerSettings)
    path: str = ""

    # -- the chain -----------------------------------------------------------------
    def chain_config(self) -> ChainConfig:
        """The chain part of the job (already checked: the job schema takes it from the chain schema)."""
        return ChainConfig(
            source_format=self.source.format,
            sink_format=self.sink.format,
            source_options=dict(self.source.options),
            sink_options=dict(self.sink.options),
            transforms=[dict(t) for t in self.transforms],
            predicates={k: dict(v) for k, v in self.predicates.items()},
            errors_tolerance=self.errors.tolerance,
            on_missing=self.on_missing,
        )

    def build_chain(self, *, catalog: Any = None) -> Chain:
        """A fresh chain (own codec instances) for one source partition, built as a chain file's is."""
        return build_chain_of(self.chain_config(), catalog=catalog)

    def new_catalog(self) -> Any:
        """A schema catalog seeded from ``schema_files`` (``None`` without them: codecs keep their own)."""
        if not self.schema_files:
            return None
        from cdc_smt.transforms.catalog import SchemaCatalog

        seed = _SEEDS.get(self.schema_files)
        if seed is None:
            catalog = SchemaCatalog()
            for f in self.schema_files:
                catalog.load_file(f)
            seed = _SEEDS[self.schema_files] = catalog.to_dict()
        return SchemaCatalog.from_dict(seed)

    def check(self) -> None:
        """Build one chain to validate formats, options, transforms and schema files now, not at the first record."""
        self.build_chain(catalog=self.new_catalog())
        _check_compression(self.producer.compression_type)

    def describe(self) -> dict[str, Any]:
        """A loggable summary (no secrets)."""
        src: dict[str, Any] = {"format": self.source.format}
        src.update({"topics": list(self.source.topics)} if self.source.topics else {"pattern": self.source.pattern})
        return {
            "id": self.id,
            "kafka": self.kafka.describe(),
            "source": src,
            "transforms": [t.get("type") for t in self.transforms],
            "sink": {"format": self.sink.format, "topic": self.sink.topic},
            "errors": {"tolerance": self.errors.tolerance, "dead_letter_topic": self.errors.dead_letter_topic},
        }


#: Parsed schema files, by path tuple: every partition's catalog starts from the same snapshot.
_SEEDS: dict[tuple[str, ...], dict[str, Any]] = {}


def _check_compression(kind: str | None) -> None:
    """aiokafka compresses gzip natively; lz4, snappy and zstd need cramjam."""
    if kind is None:
        return
    try:
        from aiokafka import codec
    except ImportError:  # no worker extra: nothing to check against
        return
    available = {"gzip": codec.has_gzip, "snappy": codec.has_snappy, "lz4": codec.has_lz4, "zstd": codec.has_zstd}[
        kind
    ]()
    if not available:
        raise ConfigError(
            f"{kind} compression needs cramjam: pip install 'aiokafka[{kind}]'", "producer.compression_type"
        )


# -- loading ----------------------------------------------------------------------------
def load_job(
    source: str | Path | Mapping[str, Any],
    *,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> JobConfig:
    """Read (YAML file path or mapping), substitute ``${ENV}``, validate, and build a :class:`JobConfig`.

    ``overrides`` maps dotted paths to values (``{"kafka.bootstrap_servers":
    "host:9092"}``) applied before validation: the command line's way to point a
    job file at another cluster.
    """
    path = ""
    if isinstance(source, Mapping):
        raw: Any = dict(source)
    else:
        path = str(source)
        raw = read_job_file(source)
    doc = substitute_env(raw, os.environ if env is None else env)
    for dotted, value in (overrides or {}).items():
        _set_path(doc, dotted, value)
    _coerce_scalars(doc)
    validate(doc)
    return _build(doc, path)


def read_job_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The YAML mapping of a job file; errors name the file (and the line and column of bad YAML)."""
    raw = read_yaml_file(path, "job file")
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(raw).__name__}")
    return raw


def read_chain(
    path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None
) -> tuple[ChainConfig, tuple[str, ...]]:
    """The chain of a chain file or of a job file, and the job's schema files (relative to it).

    A document with an ``id`` is a job (every job has one): its chain part is
    read with ``${ENV}`` references substituted and checked as a chain file is,
    so one file per job serves ``worker``, ``backfill`` and ``convert``. The
    keys only hosts read (Kafka, topics, backfill, ...) are left to them.
    """
    doc = read_yaml_file(path, "config file")
    if not (isinstance(doc, Mapping) and "id" in doc):
        return load_config(doc if isinstance(doc, Mapping) else Path(path)), ()
    environ = os.environ if env is None else env
    config = load_config(substitute_env(chain_part(doc), environ))
    files = substitute_env(doc.get("schema_files") or [], environ, "schema_files")
    check_document(files, f"{JOB_SCHEMA}#/properties/schema_files", "schema_files")
    return config, tuple(str(Path(path).parent / f) for f in files)


def chain_part(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The chain file inside a job document: its chain keys, without the keys the job
    schema adds to them (``topics``, ``pattern``, ``topic``, ``dead_letter_topic``)."""
    job = schemas.load("job")["properties"]
    out: dict[str, Any] = {}
    for key in schemas.load("chain")["properties"]:
        if key not in doc:
            continue
        value = doc[key]
        added = job[key].get("properties", {}) if isinstance(value, Mapping) else {}
        out[key] = {k: v for k, v in value.items() if k not in added} if added else value
    return out


def _scalar_settings(schema: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], str]:
    """Paths of settings whose schema type is integer, number or boolean."""
    out: dict[tuple[str, ...], str] = {}
    for name, sub in (schema.get("properties") or {}).items():
        for branch in sub.get("oneOf", [sub]):
            t = branch.get("type")
            if t in ("integer", "number", "boolean"):
                out.setdefault(prefix + (name,), t)
            elif "properties" in branch:
                out.update(_scalar_settings(branch, prefix + (name,)))
    return out


def _coerce_scalars(doc: dict[str, Any]) -> None:
    """Numbers and booleans written as strings (``${METRICS_PORT}``, a quoted "9108") become typed.

    Environment references always yield strings; this lets them fill numeric
    settings. A string that does not parse is left alone for validation to report.
    """
    for path, typ in _scalar_settings(schemas.load("job")).items():
        node: Any = doc
        for name in path[:-1]:
            node = node.get(name) if isinstance(node, dict) else None
        if not isinstance(node, dict) or not isinstance(node.get(path[-1]), str):
            continue
        text = node[path[-1]].strip()
        try:
            if typ == "boolean":
                if text.lower() in ("true", "false"):
                    node[path[-1]] = text.lower() == "true"
            elif typ == "integer":
                node[path[-1]] = int(text)
            else:
                node[path[-1]] = float(text)
        except ValueError:
            pass


def _set_path(doc: dict[str, Any], dotted: str, value: Any) -> None:
    node = doc
    *parents, leaf = dotted.split(".")
    for name in parents:
        child = node.get(name)
        if not isinstance(child, dict):
            child = node[name] = {}
        node = child
    node[leaf] = value


def validate(doc: Mapping[str, Any]) -> None:
    """Check ``doc`` against ``schemas/job.schema.json``; raise the most relevant error."""
    check_document(doc, JOB_SCHEMA)


def _servers(value: Any) -> tuple[str, ...]:
    items = value if isinstance(value, list) else str(value).split(",")
    out = tuple(s.strip() for s in items if s.strip())
    for s in out:
        host, sep, port = s.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ConfigError(f"expected host:port, got {s!r}", "kafka.bootstrap_servers")
    return out


def _build(doc: dict[str, Any], path: str) -> JobConfig:
    k = doc["kafka"]
    kafka = KafkaSettings(
        bootstrap_servers=_servers(k["bootstrap_servers"]),
        client_id=k.get("client_id", f"cdc-smt-{doc['id']}"),
        security_protocol=k.get("security_protocol", "PLAINTEXT"),
        sasl_mechanism=k.get("sasl_mechanism"),
        sasl_username=k.get("sasl_username"),
        sasl_password=k.get("sasl_password"),
        ssl_cafile=k.get("ssl_cafile"),
        ssl_certfile=k.get("ssl_certfile"),
        ssl_keyfile=k.get("ssl_keyfile"),
        ssl_password=k.get("ssl_password"),
        ssl_check_hostname=k.get("ssl_check_hostname", True),
        connect_timeout_s=float(k.get("connect_timeout_s", DEFAULT_CONNECT_TIMEOUT_S)),
    )
    if kafka.uses_sasl and (kafka.sasl_username is None or kafka.sasl_password is None):
        raise ConfigError(f"{kafka.security_protocol} needs sasl_username and sasl_password", "kafka")

    s = doc["source"]
    topics = s.get("topics", ())
    topics = (topics,) if isinstance(topics, str) else tuple(topics)
    for i, t in enumerate(topics):
        if not _TOPIC_NAME.match(t):
            raise ConfigError(f"{t!r} is not a valid Kafka topic name", f"source.topics[{i}]")
    pattern = s.get("pattern")
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"not a valid regular expression: {exc}", "source.pattern") from None
    source = SourceSettings(format=s["format"], options=dict(s.get("options") or {}), topics=topics, pattern=pattern)

    k_sink = doc["sink"]
    _check_template(k_sink["topic"])
    sink = SinkSettings(format=k_sink["format"], options=dict(k_sink.get("options") or {}), topic=k_sink["topic"])
    for i, t in enumerate(topics):
        if sink.topic_for(t) in topics:
            raise ConfigError(
                f"the sink topic {sink.topic_for(t)!r} is also a source topic (a loop)", f"source.topics[{i}]"
            )

    e = doc.get("errors") or {}
    errors = ErrorSettings(tolerance=e.get("tolerance", "none"), dead_letter_topic=e.get("dead_letter_topic"))
    if errors.tolerance == "all" and not errors.dead_letter_topic:
        raise ConfigError(
            "tolerance 'all' needs a dead_letter_topic (records that fail are written there; none is dropped)",
            "errors.dead_letter_topic",
        )
    if errors.dead_letter_topic and not _TOPIC_NAME.match(errors.dead_letter_topic):
        raise ConfigError(f"{errors.dead_letter_topic!r} is not a valid Kafka topic name", "errors.dead_letter_topic")
    if errors.dead_letter_topic in topics:
        raise ConfigError("the dead-letter topic is also a source topic (a loop)", "errors.dead_letter_topic")

    p = doc.get("producer") or {}
    producer = ProducerSettings(
        acks=_ACKS[p.get("acks", "all")],
        compression_type=None if p.get("compression_type", "none") == "none" else p["compression_type"],
        linger_ms=p.get("linger_ms", ProducerSettings.linger_ms),
        batch_size=p.get("batch_size", ProducerSettings.batch_size),
        max_request_size=p.get("max_request_size", ProducerSettings.max_request_size),
        request_timeout_ms=p.get("request_timeout_ms", ProducerSettings.request_timeout_ms),
    )
    c = doc.get("consumer") or {}
    consumer = ConsumerSettings(**{f: c[f] for f in ConsumerSettings.__dataclass_fields__ if f in c})
    if consumer.heartbeat_interval_ms * 3 > consumer.session_timeout_ms:
        raise ConfigError("must be at most a third of session_timeout_ms", "consumer.heartbeat_interval_ms")
    if consumer.session_timeout_ms > consumer.request_timeout_ms:
        raise ConfigError("must not exceed consumer.request_timeout_ms", "consumer.session_timeout_ms")

    w = doc.get("worker") or {}
    ct = w.get("create_topics", False)
    creation = (TopicCreation() if ct is True else TopicCreation(**ct)) if ct else None
    worker = WorkerSettings(
        **{f: w[f] for f in WorkerSettings.__dataclass_fields__ if f in w and f != "create_topics"},
        create_topics=creation,
    )
    base = Path(path).parent if path else Path.cwd()
    schema_files = tuple(str(base / f) for f in doc.get("schema_files") or ())
    return JobConfig(
        id=doc["id"],
        schema_files=schema_files,
        kafka=kafka,
        source=source,
        sink=sink,
        transforms=[dict(t) for t in doc.get("transforms") or []],
        predicates=dict(doc.get("predicates") or {}),
        on_missing=doc.get("on_missing"),
        errors=errors,
        producer=producer,
        consumer=consumer,
        worker=worker,
        path=path,
    )


def _check_template(template: str) -> None:
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        raise ConfigError(f"bad topic template: {exc}", "sink.topic") from None
    for f in fields:
        if f not in SINK_TOPIC_FIELDS:
            raise ConfigError(
                f"unknown placeholder {{{f}}} (available: {', '.join('{' + n + '}' for n in SINK_TOPIC_FIELDS)})",
                "sink.topic",
            )
    if not fields and not _TOPIC_NAME.match(template):
        raise ConfigError(f"{template!r} is not a valid Kafka topic name", "sink.topic")


__all__ = [
    "ConsumerSettings",
    "ErrorSettings",
    "JobConfig",
    "KafkaSettings",
    "ProducerSettings",
    "SinkSettings",
    "SourceSettings",
    "TopicCreation",
    "WorkerSettings",
    "chain_part",
    "load_job",
    "read_chain",
    "substitute_env",
    "validate",
]
