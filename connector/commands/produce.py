"""``cdc-smt produce``: put records on a topic from a JSON Lines file (test data, replays).

Input is one record per line in the form ``cdc-smt consume`` writes (see
:mod:`connector.commands._records`), or with ``--values`` one message value
per line (a file ``cdc-smt convert`` reads). The whole input is checked before
anything is sent, so a bad line produces nothing; every record is
acknowledged (``acks=all``) before the command reports it.

Partition: the record's ``partition``, else the Java client's murmur2 of its
key (keyless records: partition 0).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import defaultdict
from collections.abc import Iterator

from cdc_smt.connector.commands._records import (
    bootstrap_argument,
    quiet_client_logs,
    read_record_lines,
    require_kafka_client,
    wait_for_broker,
)
from cdc_smt.connector.framing import display_name, read_records
from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.model import Record


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "produce",
        help="produce records from a JSON Lines file to Kafka",
        description=(
            "Produce the records of INPUT (JSON Lines: topic, partition, timestamp, key, value, headers; "
            "key/value as text, or key_base64/value_base64) to Kafka. With --values each line is one "
            "message value. Nothing is sent when a line is bad."
        ),
    )
    p.add_argument("input", nargs="?", default="-", metavar="INPUT", help="input file (default: - for stdin)")
    p.add_argument("-t", "--topic", metavar="TOPIC", help="topic for every record (default: each record's topic)")
    p.add_argument(
        "--values", action="store_true", help="each input line is a message value (no key, headers or topic)"
    )
    p.add_argument(
        "--partitions",
        type=int,
        metavar="N",
        help="create missing topics with N partitions first (default: rely on the broker's auto-creation)",
    )
    bootstrap_argument(p)
    p.set_defaults(func=run)


def load_records(args: argparse.Namespace) -> dict[str, list[Record]]:
    """topic -> its records in input order; every line is checked before anything is sent."""
    lines: Iterator[tuple[int, Record]]
    if args.values:
        lines = ((n, Record(value=r.value)) for n, r in read_records(args.input, binary=False))
    else:
        lines = read_record_lines(args.input)
    by_topic: dict[str, list[Record]] = defaultdict(list)
    for lineno, record in lines:
        topic = args.topic or record.topic
        if not topic:
            raise ConfigError(f"{display_name(args.input)}: line {lineno}: the record names no topic; pass --topic")
        by_topic[topic].append(record)
    return dict(by_topic)


def run(args: argparse.Namespace) -> int:
    require_kafka_client("produce")
    quiet_client_logs()
    if args.partitions is not None and args.partitions < 1:
        raise ConfigError(f"--partitions must be 1 or more, got {args.partitions}")
    by_topic = load_records(args)
    if not by_topic:
        print("produced 0 records (the input is empty)", file=sys.stderr)
        return 0
    for topic, count in asyncio.run(_produce(args.bootstrap, args.connect_timeout, by_topic, args.partitions)):
        print(f"produced {count} records to {topic}", file=sys.stderr)
    return 0


async def _produce(
    bootstrap: str, connect_timeout: float, by_topic: dict[str, list[Record]], partitions: int | None
) -> list[tuple[str, int]]:
    from cdc_smt.connector import kafka as K

    await wait_for_broker(bootstrap, connect_timeout)
    if partitions is not None:
        await K.create_topics(bootstrap, {topic: partitions for topic in by_topic})
    existing = await K.partition_counts(bootstrap, by_topic)
    for topic, records in by_topic.items():
        _check_partitions(topic, records, existing.get(topic))
    return [(topic, await K.produce_records(bootstrap, topic, records)) for topic, records in by_topic.items()]


def _check_partitions(topic: str, records: list[Record], existing: int | None) -> None:
    """A record addressed to a partition the topic does not have is refused before anything is sent."""
    wanted = max((r.partition for r in records if r.partition is not None), default=None)
    if wanted is not None and existing is not None and wanted >= existing:
        raise ConfigError(f"topic {topic} has {existing} partitions; a record asks for partition {wanted}")
