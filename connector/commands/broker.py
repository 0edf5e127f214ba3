"""``cdc-smt broker``: an embedded Kafka-compatible broker (Tansu, memory storage) in the foreground.

For local development: prints the bootstrap address, optionally creates
topics, and runs until Ctrl-C or SIGTERM. Everything is in memory and gone when
it stops.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import threading

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


def run(args: argparse.Namespace) -> int:
    from cdc_smt.connector import kafka as K
    from cdc_smt.connector.broker import EmbeddedBroker

    topics = dict(parse_topic(t) for t in args.topic)
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with EmbeddedBroker(host=args.host, port=args.port) as broker:
            if topics:
                asyncio.run(K.create_topics(broker.bootstrap, topics))
            print(f"bootstrap: {broker.bootstrap}", flush=True)
            for name, n in topics.items():
                print(f"topic: {name} ({n} partition{'s' if n != 1 else ''})", flush=True)
            print("broker running (memory only); Ctrl-C to stop", file=sys.stderr, flush=True)
            while not stop.wait(0.5):
                if not broker.running:
                    print("broker exited unexpectedly; log: " + str(broker.log_path), file=sys.stderr)
                    return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
