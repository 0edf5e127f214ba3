"""``cdc-smt broker``: an embedded Kafka-compatible broker (Tansu, memory storage) in the foreground.

For local development: prints the bootstrap address, optionally creates
topics, and runs until Ctrl-C or SIGTERM. Everything is in memory and gone when
it stops.

``--apache-kafka`` runs Apache Kafka itself instead (needs Java 17; the jars
are resolved with Maven into the checkout's ``.cache`` the first time, by the
same code as the tests: :mod:`connector.apache_kafka`), with a
SASL_PLAINTEXT listener as well, and ``--data-dir`` to keep its data.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import threading
from typing import Any

from cdc_smt.transforms.errors import ConfigError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "broker",
        help="run an embedded Kafka-compatible broker (memory only) for local development",
        description="Start Tansu on a loopback port, print its bootstrap address, and run until interrupted.",
    )
    p.add_argument("--host", default="127.0.0.1", help="listen address (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=9092, help="port (default: 9092; 0 picks a free one)")
    p.add_argument(
        "--apache-kafka",
        action="store_true",
        help="run Apache Kafka (single KRaft node; needs Java 17, and Maven the first time) instead of Tansu",
    )
    p.add_argument(
        "--data-dir",
        metavar="DIR",
        help="with --apache-kafka: keep the broker's data in DIR (default: a temporary folder, removed at exit)",
    )
    p.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="NAME[:PARTITIONS]",
        help="create this topic once the broker is up (repeatable)",
    )
    p.set_defaults(func=run)


def parse_topic(spec: str) -> tuple[str, int]:
    name, sep, parts = spec.partition(":")
    if not name or (sep and not parts.isdigit()) or (parts and int(parts) < 1):
        raise ConfigError(f"--topic expects NAME or NAME:PARTITIONS, got {spec!r}")
    return name, int(parts) if parts else 1


def _make_broker(args: argparse.Namespace) -> Any:
    if args.data_dir and not args.apache_kafka:
        raise ConfigError("--data-dir needs --apache-kafka (Tansu keeps everything in memory)")
    if args.apache_kafka:
        from cdc_smt.connector.apache_kafka import ApacheKafka

        print("starting Apache Kafka (the first run resolves its jars with Maven)", file=sys.stderr, flush=True)
        return ApacheKafka(host=args.host, port=args.port, data_dir=args.data_dir)
    from cdc_smt.connector.broker import EmbeddedBroker

    return EmbeddedBroker(host=args.host, port=args.port)


def run(args: argparse.Namespace) -> int:
    from cdc_smt.connector import kafka as K

    topics = dict(parse_topic(t) for t in args.topic)
    broker = _make_broker(args)
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with broker:
            if topics:
                asyncio.run(K.create_topics(broker.bootstrap, topics))
            print(f"bootstrap: {broker.bootstrap}", flush=True)
            if args.apache_kafka:
                from cdc_smt.connector.apache_kafka import USERS

                users = ", ".join(f"{u}/{p}" for u, p in USERS.items())
                print(
                    f"sasl bootstrap: {broker.sasl_bootstrap} "
                    f"(SASL_PLAINTEXT; PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; users {users})",
                    flush=True,
                )
            for name, n in topics.items():
                print(f"topic: {name} ({n} partition{'s' if n != 1 else ''})", flush=True)
            kept = (
                f"data in {broker.data_dir}"
                if args.apache_kafka and args.data_dir
                else "memory only"
                if not args.apache_kafka
                else "temporary data"
            )
            print(f"broker running ({kept}); Ctrl-C to stop", file=sys.stderr, flush=True)
            while not stop.wait(0.5):
                if not broker.running:
                    print("broker exited unexpectedly; log: " + str(broker.log_path), file=sys.stderr)
                    return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
