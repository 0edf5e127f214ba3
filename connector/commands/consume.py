"""``cdc-smt consume``: read records from topics as JSON lines (to check what a job wrote).

Like Kafka's console consumer: it reads every partition of the topics (no
consumer group, nothing committed) from their end, or from the beginning with
``--from-beginning``, and stops after ``--max-messages`` records or when
``--timeout`` seconds pass without a new one; otherwise it runs until Ctrl-C.
Each record becomes one JSON line (see :mod:`connector.commands._records`),
or with ``--values`` just its value (a file ``cdc-smt convert`` reads).

Exit codes: 0 done; 1 ``--max-messages`` records did not arrive before the
timeout; 2 unusable arguments, an unknown topic or an unreachable broker.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable
from typing import Any

from cdc_smt.connector.commands._records import (
    bootstrap_argument,
    quiet_client_logs,
    record_line,
    require_kafka_client,
    wait_for_broker,
)
from cdc_smt.connector.framing import RecordWriter
from cdc_smt.connector.kafka.consume import to_record
from cdc_smt.connector.kafka.settings import DEFAULT_CONNECT_TIMEOUT_S
from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.model import Record

#: How long one poll waits, so the idle timeout and Ctrl-C are noticed promptly.
POLL_MS = 200
#: How long a poll must stay empty before a start at the end counts as reached (see _skip_to_true_end).
DRAIN_MS = 1000


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "consume",
        help="print the records of Kafka topics as JSON lines",
        description=(
            "Read the records of TOPIC(s) and write each as a JSON line (topic, partition, offset, timestamp, "
            "key, value, headers; bytes that are not UTF-8 as key_base64/value_base64). Starts at the end "
            "of each partition unless --from-beginning."
        ),
    )
    p.add_argument("topics", nargs="+", metavar="TOPIC", help="topics to read (every partition)")
    p.add_argument("-o", "--output", default="-", metavar="OUTPUT", help="output file (default: - for stdout)")
    p.add_argument("--from-beginning", action="store_true", help="start at the earliest offset, not the end")
    p.add_argument("--max-messages", type=int, metavar="N", help="stop after N records")
    p.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="stop after this long without a new record (default: never)"
    )
    p.add_argument("--base64", action="store_true", help="write key, value and headers as base64 (binary formats)")
    p.add_argument("--values", action="store_true", help="write only each record's value, one per line")
    bootstrap_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    require_kafka_client("consume")
    quiet_client_logs()
    if args.max_messages is not None and args.max_messages < 1:
        raise ConfigError(f"--max-messages must be 1 or more, got {args.max_messages}")
    if args.timeout is not None and args.timeout <= 0:
        raise ConfigError(f"--timeout must be more than 0 seconds, got {args.timeout}")
    if args.values and args.base64:
        raise ConfigError("--values writes the values as they are; it does not combine with --base64")
    with RecordWriter(args.output, binary=False) as writer:

        def emit_line(record: Record) -> Any:
            return writer.write(Record(value=record_line(record, args.base64)))

        emit: Callable[[Record], Any] = writer.write if args.values else emit_line
        count = asyncio.run(
            read_topics(
                args.bootstrap,
                args.topics,
                args.from_beginning,
                args.max_messages,
                args.timeout,
                emit,
                connect_timeout=args.connect_timeout,
            )
        )
    note = f", {writer.tombstones_skipped} tombstones not written" if writer.tombstones_skipped else ""
    print(f"consumed {count} records from {', '.join(args.topics)}{note}", file=sys.stderr)
    if args.max_messages is not None and count < args.max_messages:
        print(f"cdc-smt: only {count} of {args.max_messages} records arrived within {args.timeout:g}s", file=sys.stderr)
        return 1
    return 0


async def read_topics(
    bootstrap: str,
    topics: list[str],
    from_beginning: bool,
    max_messages: int | None,
    idle_timeout: float | None,
    emit: Callable[[Record], Any],
    *,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
) -> int:
    """Pass each record of every partition of ``topics`` to ``emit``, in partition order; return the count."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    from cdc_smt.connector import kafka as K

    await wait_for_broker(bootstrap, connect_timeout)
    # Listed first: describing a missing topic makes some brokers (Tansu) create it.
    existing = await K.list_topics(bootstrap)
    missing = [t for t in topics if t not in existing]
    if missing:
        raise ConfigError(f"no such topic: {', '.join(missing)}")
    partitions = await K.partition_counts(bootstrap, topics)
    consumer = AIOKafkaConsumer(**K.client_kwargs(bootstrap), enable_auto_commit=False)
    try:
        await consumer.start()
        tps = [TopicPartition(t, p) for t in dict.fromkeys(topics) for p in range(partitions[t])]
        consumer.assign(tps)
        await (consumer.seek_to_beginning if from_beginning else consumer.seek_to_end)(*tps)
        for tp in tps:  # fix the start now: records produced from here on are read
            await consumer.position(tp)
        if not from_beginning:
            await _skip_to_true_end(consumer)
        start = "the beginning" if from_beginning else "the end"
        print(f"reading {len(tps)} partitions of {', '.join(topics)} from {start}", file=sys.stderr, flush=True)
        count = 0
        last_new = time.monotonic()
        while max_messages is None or count < max_messages:
            batch = await consumer.getmany(timeout_ms=POLL_MS)
            if not batch:
                if idle_timeout is not None and time.monotonic() - last_new >= idle_timeout:
                    break
                continue
            last_new = time.monotonic()
            for tp in sorted(batch, key=lambda tp: (tp.topic, tp.partition)):
                for msg in batch[tp]:
                    if max_messages is not None and count >= max_messages:
                        break
                    emit(to_record(msg))
                    count += 1
            sys.stdout.flush()  # a reader of the pipe sees each batch as it comes
        return count
    finally:
        await consumer.stop()


async def _skip_to_true_end(consumer: Any) -> None:
    """Skip what is already stored past the reported end offsets (a Tansu workaround).

    The embedded broker reports a partition's end as its last batch's base
    offset + 1, so a seek to the end lands inside the last batch and would
    re-read its records. Fetch until a poll comes back empty; on Apache Kafka
    this skips nothing that was there before the command said it started reading.
    """
    while await consumer.getmany(timeout_ms=DRAIN_MS):
        pass
