"""``cdc-smt backfill``: run a job file's chain over a Kafka range or files with Spark.

The same job file as ``cdc-smt worker`` (source, chain, sink, dead letters),
plus an optional ``backfill:`` section (see :mod:`connector.spark.settings`);
flags override the section. Resumable: run the same command again after an
interruption and it continues after the last finished micro-batch.

Exit codes (:mod:`connector.exitcodes`): 0 done, 3 done with dead letters
(``errors.tolerance: all``), 1 stopped at a record that failed
(``errors.tolerance: none``), by a failure in Spark or by a broker that cannot be
reached, 2 unusable arguments or job file, 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys

from cdc_smt.connector.commands import parse_assignments
from cdc_smt.connector.commands._records import quiet_client_logs
from cdc_smt.connector.exitcodes import ExitCode, completed
from cdc_smt.transforms.errors import CdcSmtError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "backfill",
        help="run a job over a Kafka offset/time range or files with Spark (resumable)",
        description=(
            "Run the job file's chain as a Spark Structured Streaming query (foreachBatch, "
            "trigger availableNow) over a Kafka topic's offset or time range, or JSON Lines / Avro "
            "files, writing Kafka topics, JSON Lines or Parquet files. A checkpoint directory makes "
            "an interrupted backfill resume after its last finished micro-batch."
        ),
    )
    p.add_argument(
        "-c",
        "--config",
        required=True,
        metavar="JOB_YAML",
        help="job file (the worker's, plus an optional backfill: section)",
    )
    rng = p.add_argument_group("range (Kafka sources)")
    start = rng.add_mutually_exclusive_group()
    start.add_argument(
        "--from-offsets",
        metavar="earliest|latest|JSON",
        help='where to start: earliest (default), latest, or {"topic": {"partition": offset}}; '
        "unlisted partitions start at the earliest",
    )
    start.add_argument(
        "--from-time",
        metavar="TIME",
        help="start at the first record at or after TIME (ISO 8601, naive = UTC, or epoch ms)",
    )
    rng.add_argument(
        "--until",
        metavar="latest|TIME|JSON",
        help="where to stop (exclusive): latest when the run starts (default), a TIME, or JSON offsets",
    )
    rng.add_argument(
        "--max-records-per-batch", type=_positive, metavar="N", help="records per micro-batch, all partitions together"
    )
    io = p.add_argument_group("input and output")
    io.add_argument(
        "--source",
        dest="source_type",
        choices=("kafka", "spark-kafka", "jsonl", "avro"),
        help="source type (default: the job file's, else kafka)",
    )
    io.add_argument(
        "--source-path", metavar="PATH", help="JSON Lines / Avro file or directory (implies --source jsonl unless set)"
    )
    io.add_argument("--max-files-per-batch", type=_positive, metavar="N", help="files per micro-batch (file sources)")
    io.add_argument(
        "--sink",
        dest="sink_type",
        choices=("kafka", "spark-kafka", "jsonl", "parquet"),
        help="sink type (default: the job file's, else kafka)",
    )
    io.add_argument(
        "--sink-path", metavar="DIR", help="output directory for jsonl/parquet (implies --sink jsonl unless set)"
    )
    io.add_argument(
        "--dead-letter-path",
        metavar="DIR",
        help="write dead letters as JSON Lines under DIR instead of the dead-letter topic",
    )
    run = p.add_argument_group("Spark")
    run.add_argument("--checkpoint", metavar="DIR", help="checkpoint directory (required here or in the job file)")
    run.add_argument("--master", metavar="URL", help="Spark master (default: the job file's, else local[*])")
    run.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="Spark configuration (repeatable)"
    )
    run.add_argument(
        "--spark-kafka-connector",
        metavar="auto|GROUP:ARTIFACT:VERSION",
        help="read Kafka with Spark's own connector (downloaded by Spark; 'auto' picks the one for this pyspark)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the resolved plan (partitions and offset ranges, or files) and exit",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines, only the final summary")
    p.set_defaults(func=handler)


def _positive(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {n}")
    return n


def overrides(args: argparse.Namespace):
    """The flags as :class:`connector.spark.settings.Overrides`."""
    from cdc_smt.connector.spark.settings import Overrides, position_from_flag

    start = None
    if args.from_offsets:
        start = position_from_flag(args.from_offsets, "--from-offsets", offsets_only=True)
    elif args.from_time:
        start = position_from_flag(args.from_time, "--from-time", time_only=True)
    until = position_from_flag(args.until, "--until") if args.until else None
    source_type = args.source_type or ("spark-kafka" if args.spark_kafka_connector else None)
    return Overrides(
        source_type=source_type,
        source_path=args.source_path,
        sink_type=args.sink_type,
        sink_path=args.sink_path,
        dead_letter_path=args.dead_letter_path,
        checkpoint=args.checkpoint,
        master=args.master,
        start=start,
        until=until,
        max_records_per_batch=args.max_records_per_batch,
        max_files_per_batch=args.max_files_per_batch,
        spark_conf=parse_assignments(args.conf, "--conf"),
        spark_kafka_package=args.spark_kafka_connector,
    )


def handler(args: argparse.Namespace) -> int:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise CdcSmtError("backfill needs Spark: pip install 'cdc-smt[spark]' (and Java 17)") from None
    from cdc_smt.connector.spark import backfill, settings

    job, spec = settings.load(args.config, overrides(args))
    quiet_client_logs()  # a dead broker is the one line below, not aiokafka's retries
    try:
        if args.dry_run:
            job.check()
            plan = backfill.make_plan(job, spec)
            print(json.dumps(_describe(job, spec, plan), indent=2))
            return ExitCode.OK
        progress = backfill.run(job, spec, progress_out=None if args.quiet else sys.stderr)
    except backfill.BackfillError as exc:
        print(f"cdc-smt: error: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    except Exception as exc:
        from cdc_smt.connector.cli import is_kafka_error

        if not is_kafka_error(exc):
            raise
        print(f"cdc-smt: error: cannot reach Kafka at {job.kafka.bootstrap}: {kafka_cause(exc)}", file=sys.stderr)
        return ExitCode.FAILED
    except KeyboardInterrupt:
        print("cdc-smt: backfill interrupted; run the same command again to resume", file=sys.stderr)
        return ExitCode.INTERRUPTED
    return completed(progress.totals.dead_letters)


def kafka_cause(exc: BaseException) -> str:
    """aiokafka's reason, without its repeated class name and address tuples."""
    name = type(exc).__name__
    text = str(exc).strip().removeprefix(f"{name}: ")
    if text.startswith("Unable to bootstrap"):
        return f"no broker answered ({name})"
    return f"{text} ({name})" if text and text != name else name


def _describe(job, spec, plan) -> dict:
    from cdc_smt.connector.spark.kafkaio import offsets_to_json

    out: dict = {"job": job.id, "source": spec.source.type, "sink": spec.sink.type, "checkpoint": spec.checkpoint}
    if plan.files:
        out["files"] = plan.files
    else:
        out["from"] = offsets_to_json(plan.starts)
        out["until"] = offsets_to_json(plan.targets)
    out["records"] = plan.total if not plan.files else None
    out["sink_path" if not spec.sink.is_kafka else "sink_topic"] = (
        spec.sink.path if not spec.sink.is_kafka else job.sink.topic
    )
    out["dead_letters"] = spec.dead_letters.path if not spec.dead_letters.is_kafka else job.errors.dead_letter_topic
    return out
