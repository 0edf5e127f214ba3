"""cdc-smt's transforms against Kafka Connect's SMTs, per CPU-second, on the same records.

    .venv/bin/python -m bench.connect_smt [--count 20000] [--runs 5]

What a Kafka Connect user runs per record between a source connector's poll and
the producer: JsonConverter reads the Debezium JSON value and key (schemas
on), the SMT chain runs, JsonConverter writes them back. cdc-smt does the same
with ``Chain.process_batch`` (debezium-json in and out). Both sides get the
same records: ``bench.codec``'s Canal order rows converted to Debezium JSON
with schemas. Chains: none (the converters alone), and a five-SMT chain
(ExtractNewRecordState, ReplaceField, MaskField, RegexRouter, InsertField)
that ``tests/test_connect_oracle.py`` holds equal to ours; the bench checks the
outputs of the first records agree before timing.

Time is process CPU time (the JVM's includes its garbage-collection and JIT
threads), best of ``--runs`` passes after one warm-up pass each, so other load
on a shared machine counts against neither. No broker: this is the per-record
transform cost only (bench/worker.py measures the whole worker). The JVM is the
test harness of tests/jvm/connect-oracle (built on first use; needs java and
mvn), run with -Xmx1g and its default collector (G1), as a Connect worker.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Sequence
from typing import Any

import orjson

from bench.codec import canal_messages
from cdc_smt.connector.tuning import tune_allocator
from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.config import build_transforms
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import Record
from tests.oracle import ConnectOracle, HarnessUnavailable, build_harness

PREFIX = "bench"
TOPIC = f"{PREFIX}.shop.orders"
SINK = {"schemas_enable": True, "topic_prefix": PREFIX}
CHUNK = 10_000
KC = "org.apache.kafka.connect.transforms."

#: (label, our transforms, Connect properties)
CHAINS: list[tuple[str, list[dict[str, Any]], dict[str, str]]] = [
    ("converters only", [], {}),
    (
        "unwrap + 4 SMTs",
        [
            {"type": "unwrap", "delete_handling": "drop"},
            {"type": "replace_field", "exclude": ["weight_kg"]},
            {"type": "mask_field", "fields": ["address"]},
            {"type": "route", "regex": r"bench\.(\w+)\.(\w+)", "replacement": "cdc.$1_$2"},
            {"type": "insert_field", "static": {"_source": "mysql-east"}},
        ],
        {
            "transforms": "u,r,m,t,i",
            "transforms.u.type": "io.debezium.transforms.ExtractNewRecordState",
            "transforms.u.delete.tombstone.handling.mode": "drop",
            "transforms.r.type": KC + "ReplaceField$Value",
            "transforms.r.exclude": "weight_kg",
            "transforms.m.type": KC + "MaskField$Value",
            "transforms.m.fields": "address",
            "transforms.t.type": KC + "RegexRouter",
            "transforms.t.regex": r"bench\.(\w+)\.(\w+)",
            "transforms.t.replacement": "cdc.$1_$2",
            "transforms.i.type": KC + "InsertField$Value",
            "transforms.i.static.field": "_source",
            "transforms.i.static.value": "mysql-east",
        },
    ),
]


def debezium_records(count: int) -> list[Record]:
    """``count`` Canal order rows as a Debezium connector writes them (with a tombstone after each delete)."""
    chain = Chain(get_codec("canal-json"), get_codec("debezium-json", SINK), [], "none")
    out = chain.process_batch(Record(value=m) for m in canal_messages(count)).outputs
    return [Record(value=r.value, key=r.key, topic=TOPIC, partition=0, offset=i) for i, r in enumerate(out)]


def ours_chain(transforms: list[dict[str, Any]]) -> Chain:
    return Chain(get_codec("debezium-json"), get_codec("debezium-json", SINK), build_transforms(transforms), "all")


def ours_seconds(transforms: list[dict[str, Any]], records: Sequence[Record], runs: int) -> tuple[float, int]:
    """Best CPU seconds of ``runs`` passes (after a warm-up pass) and the records one writes."""
    chain = ours_chain(transforms)
    best, written = float("inf"), 0
    for run in range(runs + 1):
        gc.collect()
        written = 0
        start = time.process_time()
        for lo in range(0, len(records), CHUNK):
            written += len(chain.process_batch(records[lo : lo + CHUNK]).outputs)
        if run:
            best = min(best, time.process_time() - start)
    return best, written


def _wire(records: Sequence[Record]) -> list[dict[str, Any]]:
    return [{"topic": r.topic, "key": r.key and r.key.decode(), "value": r.value and r.value.decode()} for r in records]


def agree(
    oracle: ConnectOracle, transforms: list[dict[str, Any]], props: dict[str, str], records: Sequence[Record]
) -> bool:
    """Do both chains write the same topics, keys and values (parsed) for ``records``?"""

    def parse(raw: Any) -> Any:
        return None if raw is None else orjson.loads(raw)

    mine = ours_chain(transforms).process_batch(records).outputs
    theirs = oracle.run(props, _wire(records))
    return [(r.topic or TOPIC, parse(r.key), parse(r.value)) for r in mine] == [
        (r["topic"], parse(r["key"]), parse(r["value"])) for r in theirs
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=20_000, help="Canal rows to generate (default 20000)")
    parser.add_argument("--runs", type=int, default=5, help="timed passes per side, best counts (default 5)")
    args = parser.parse_args(argv)
    tune_allocator()
    try:
        classpath = build_harness()
    except HarnessUnavailable as exc:
        print(f"cannot run the Connect side: {exc}", file=sys.stderr)
        return 2
    records = debezium_records(args.count)
    oracle = ConnectOracle(classpath, jvm_options=("-Xmx1g",))
    try:
        print(f"{len(records)} Debezium JSON records (schemas on), best of {args.runs} runs, process CPU time\n")
        print("| chain | cdc-smt msgs/CPU-s | Kafka Connect msgs/CPU-s | cdc-smt / Connect |")
        print("|---|---:|---:|---:|")
        for label, transforms, props in CHAINS:
            if not agree(oracle, transforms, props, records[:500]):
                print(f"| {label} | outputs differ from Connect's: not timed | | |")
                continue
            mine, written = ours_seconds(transforms, records, args.runs)
            cpu, theirs_written = oracle.bench(props, _wire(records), args.runs + 1)
            theirs = min(cpu[1:])
            if written != theirs_written:
                print(f"| {label} | wrote {written} records, Connect {theirs_written}: not compared | | |")
                continue
            ours_rate, their_rate = len(records) / mine, len(records) / theirs
            print(f"| {label} | {ours_rate:,.0f} | {their_rate:,.0f} | {ours_rate / their_rate:.2f}x |")
    finally:
        oracle.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
