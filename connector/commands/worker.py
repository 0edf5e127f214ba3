"""``cdc-smt worker -c job.yaml``: run a topic-to-topic rewriter (a Faust app).

The job file is described by ``schemas/job.schema.json`` (see the README's
worker section). ``--check`` validates it, builds the chain, and exits without
touching Kafka: useful in CI for job files.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "worker",
        help="run a job: consume source topics, convert, produce to the sink topic",
        description=(
            "Run the job in JOB.yaml as a Faust worker: consumer group = the job id, "
            "at-least-once delivery (exactly-once on Apache Kafka with worker.processing_guarantee), "
            "dead letters, Prometheus metrics. Stops cleanly on SIGTERM."
        ),
    )
    p.add_argument("-c", "--config", required=True, metavar="JOB.yaml", help="the job file")
    p.add_argument("--check", action="store_true", help="validate the job file and build the chain, then exit")
    p.add_argument("--bootstrap", metavar="HOST:PORT", help="override kafka.bootstrap_servers")
    p.add_argument(
        "--connect-timeout",
        type=float,
        metavar="SECONDS",
        help="override kafka.connect_timeout_s (start-up wait for the cluster)",
    )
    p.add_argument(
        "--metrics-port", type=int, metavar="PORT", help="override worker.metrics_port (0: pick a free port)"
    )
    p.add_argument("--log-format", choices=("text", "json"), help="override worker.log_format")
    p.set_defaults(func=run)


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if args.bootstrap:
        out["kafka.bootstrap_servers"] = args.bootstrap
    if args.connect_timeout is not None:
        out["kafka.connect_timeout_s"] = args.connect_timeout
    if args.metrics_port is not None:
        out["worker.metrics_port"] = args.metrics_port
    if args.log_format:
        out["worker.log_format"] = args.log_format
    return out


def import_worker() -> Any:
    """``connector.worker.app``, or a clear error when the worker extra is not installed."""
    try:
        from cdc_smt.connector.worker import app as worker
    except ImportError as exc:
        from cdc_smt.transforms.errors import CdcSmtError

        raise CdcSmtError(
            f"the worker needs the worker extra: pip install 'cdc-smt[worker]' (cannot import {exc.name})"
        ) from None
    return worker


def run(args: argparse.Namespace) -> int:
    from cdc_smt.connector.jobconfig import load_job

    job = load_job(args.config, overrides=_overrides(args))
    job.check()
    if args.check:
        json.dump({"ok": True, **job.describe()}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0

    worker = import_worker()
    from cdc_smt.connector.worker import logging_setup

    level = logging.getLogger().level or logging.WARNING
    logging_setup.setup(job.worker.log_format, level=level)
    return worker.run(job)
