"""Cost of a realistic five-transform chain over the bare conversion, measured in the same run.

    .venv/bin/python -m bench.chain [--count 100000] [--runs 5] [--breakdown]

Generates Canal JSON order rows (``bench.codec``'s generator: eleven columns,
60 % inserts, 30 % updates, 10 % deletes) and times canal-json -> debezium-json
through :meth:`transforms.chain.Chain.process_batch`, once bare and once with
:data:`CHAIN`: filter by table, replace_field exclude, mask_field (salted
SHA-256), route by template, insert_field (static and metadata). The runs
alternate (bare, chain, bare, chain, ...) and the best of each counts, so both
see the same machine state; time is the process's CPU time, so other load on
a shared machine does not count against either. The filter keeps every row,
so both convert the same messages. Target: the chain costs at most 30 % over
bare on the Python path, 15 % when the native core runs both (it does the five
transforms inside its plan; the line "native plan" says whether it does).

Also timed, with the Canal, TiCDC, Maxwell, GoldenGate, CloudCanal, CKafka, DataWorks and
DTS writers (:data:`WRITERS`):
canal-json -> each bare and with :data:`MASK` (PII masking between two topics:
mask_field's salted SHA-256), natively and on the Python path (its twin), over
the writer's bare row; and canal-json -> canal-json with :data:`MASK_REPLACE`.

Also timed, as rows of their own: ``unwrap`` (:data:`UNWRAP`: Debezium's
ExtractNewRecordState, deletes as their row and a tombstone, the usual chain into
a flat sink topic), and with ``--python`` the bare conversion and ``unwrap`` on
the Python path too (their twins: what the native core saves).

``--breakdown`` also times each transform alone. Prints "missing codec" when
a format is not registered.
"""

from __future__ import annotations

import argparse
import gc
import platform
import sys
import time
from collections.abc import Sequence
from typing import Any

from cdc_smt.connector.tuning import tune_allocator
from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.config import build_transforms
from cdc_smt.transforms.formats import get_codec, registry
from cdc_smt.transforms.model import Record

SOURCE, SINK = "canal-json", "debezium-json"
SINK_OPTIONS = {"schemas_enable": False}
CHUNK = 10_000
TARGET = 30.0  # percent, on the Python path
NATIVE_TARGET = 15.0  # percent, when the native core runs the bare conversion and the chain

#: The measured chain: what a real deployment does to a stream bound for a warehouse.
CHAIN: list[dict[str, Any]] = [
    {"type": "filter", "tables": [r"shop\.(orders|order_items|customers)"], "exclude_ops": ["heartbeat"]},
    {"type": "replace_field", "exclude": ["weight_kg"]},
    {"type": "mask_field", "fields": ["address"], "mode": "hash", "salt": "bench-salt"},
    {"type": "route", "topic": "cdc.{database}.{table}"},
    {"type": "insert_field", "static": {"_source": "mysql-east"}, "metadata": {"_source_ts_ms": "source_ts_ms"}},
]

#: canal-json -> debezium-json flat rows: every delete its last row and a tombstone (as many
#: records as the bare conversion's delete and tombstone).
UNWRAP: list[dict[str, Any]] = [{"type": "unwrap", "delete_handling": "rewrite-with-tombstone"}]
#: canal-json -> canal-json: PII masking between two Canal topics.
MASK: list[dict[str, Any]] = [{"type": "mask_field", "fields": ["address"], "mode": "hash", "salt": "bench-salt"}]
#: canal-json -> canal-json: the column replaced by a constant (``mask_field``'s ``replace`` mode,
#: as ``examples/chains/pii-masking.yaml`` masks ID card numbers).
MASK_REPLACE: list[dict[str, Any]] = [
    {"type": "mask_field", "fields": ["address"], "mode": "replace", "replacement": "******"}
]
#: The suffix of a variant run on the Python path (the native core's twin).
PYTHON = " (Python)"
#: The prefix of the variants written by the Canal writer (timed against ``CANAL_BARE``).
CANAL = "canal → canal"
CANAL_BARE = CANAL
CANAL_MASK = CANAL + " + mask_field"
#: The writers timed bare and with :data:`MASK` (natively and on the Python path), each
#: against its own bare row: the variants' prefix -> the encoder's format.
WRITERS = {
    CANAL: "canal-json",
    "canal → ticdc": "ticdc-canal-json",
    "canal → maxwell": "maxwell-json",
    "canal → ogg": "ogg-json",
    "canal → cloudcanal": "cloudcanal-json",
    "canal → ckafka": "ckafka-json",
    "canal → dataworks": "dataworks-json",
    "canal → dts": "dts-avro",
}


def _writer(name: str) -> str | None:
    """The prefix in :data:`WRITERS` of variant ``name`` (``None``: the Debezium rows)."""
    return next((prefix for prefix in WRITERS if name.startswith(prefix)), None)


def _chain(transforms: list[dict[str, Any]], sink: str = SINK) -> Chain:
    options = SINK_OPTIONS if sink == SINK else {}
    return Chain(get_codec(SOURCE), get_codec(sink, options), build_transforms(transforms), "all")


def _bare(name: str) -> str:
    """The variant ``name`` is measured against."""
    return _writer(name) or "bare"


def _once(
    transforms: list[dict[str, Any]], records: Sequence[Record], python: bool = False, sink: str = SINK
) -> tuple[float, int, int]:
    """Seconds, outputs and dead letters of one pass with fresh codecs and transforms
    (``python``: on the Python path; ``sink``: the encoder's format)."""
    chain = _chain(transforms, sink)
    if python:
        chain.native = None
    gc.collect()
    outputs = errors = 0
    start = time.process_time()
    for lo in range(0, len(records), CHUNK):
        result = chain.process_batch(records[lo : lo + CHUNK])
        outputs += len(result.outputs)
        errors += len(result.dead_letters)
    return time.process_time() - start, outputs, errors


def compare(records: Sequence[Record], variants: dict[str, list[dict[str, Any]]], runs: int) -> dict[str, float]:
    """Best seconds per variant, runs interleaved; raises if a variant loses or fails messages."""
    best = {name: float("inf") for name in variants}
    counts: dict[str, tuple[int, int]] = {}
    for _ in range(runs):
        for name, transforms in variants.items():
            prefix = _writer(name)
            sink = WRITERS[prefix] if prefix is not None else SINK
            seconds, outputs, errors = _once(transforms, records, name.endswith(PYTHON), sink)
            best[name] = min(best[name], seconds)
            counts[name] = (outputs, errors)
    for name, (outputs, errors) in counts.items():
        bare = counts.get(_bare(name))
        if errors:
            raise SystemExit(f"{name}: {errors} dead letters; the benchmark input must convert cleanly")
        if bare is not None and outputs != bare[0]:
            raise SystemExit(f"{name}: {outputs} outputs vs {bare[0]} bare; the chain must keep every message")
    return best


def main(argv: Sequence[str] | None = None) -> int:
    # The hosts run with this allocator tuning (connector/tuning.py); so do the benches.
    print(f"malloc tuning: {'on' if tune_allocator() else 'off'}")
    parser = argparse.ArgumentParser(prog="python -m bench.chain", description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=100_000, help="messages per run (default 100000)")
    parser.add_argument(
        "--runs", type=int, default=5, help="runs per variant, interleaved; the best counts (default 5)"
    )
    parser.add_argument("--breakdown", action="store_true", help="also time each transform alone")
    parser.add_argument("--python", action="store_true", help="also time bare and unwrap on the Python path")
    args = parser.parse_args(argv)

    missing = [f for f in (SOURCE, SINK) if f not in registry()]
    if missing:
        print(f"missing codec: {', '.join(missing)}")
        return 0
    from bench.codec import canal_messages, cpu_model, pin_one_core

    pinned = pin_one_core()
    records = [
        Record(value=v, topic="mysql.shop", partition=0, offset=i) for i, v in enumerate(canal_messages(args.count))
    ]
    print(
        f"{args.count} Canal JSON messages -> {SINK}; best CPU time of {args.runs} interleaved runs; "
        f"Python {platform.python_version()}; {cpu_model()}, {pinned}",
        flush=True,
    )
    native_both = _chain([]).native is not None and _chain(CHAIN).native is not None
    target = NATIVE_TARGET if native_both else TARGET
    print(f"native plan: {'bare and chain' if native_both else 'not for both (Python path)'}", flush=True)
    print(f"native plan with unwrap: {'yes' if _chain(UNWRAP).native is not None else 'no'}", flush=True)
    variants: dict[str, list[dict[str, Any]]] = {"bare": [], "chain": CHAIN, "unwrap": UNWRAP}
    for prefix, fmt in WRITERS.items():
        native_mask = _chain(MASK, fmt).native is not None
        print(f"native plan for {prefix} + mask_field: {'yes' if native_mask else 'no'}", flush=True)
        variants.update({prefix: [], prefix + " + mask_field": MASK, prefix + " + mask_field" + PYTHON: MASK})
    replace = CANAL + " + mask_field replace"
    variants.update({replace: MASK_REPLACE, replace + PYTHON: MASK_REPLACE})
    if args.python:
        variants.update({"bare" + PYTHON: [], "unwrap" + PYTHON: UNWRAP})
    if args.breakdown:
        for spec in CHAIN:
            variants[f"only {spec['type']}"] = [spec]
    best = compare(records, variants, args.runs)
    lines = ["| variant | msgs/s | over bare |", "|---|---:|---:|"]
    for name, seconds in best.items():
        rate = args.count / seconds
        base = _bare(name)
        over = (best[name] / best[base] - 1) * 100
        label = "five-transform chain" if name == "chain" else name
        note = "" if name == base else f"{over:+.1f} %" + ("" if base == "bare" else f" over {base}")
        lines.append(f"| {label} | {rate:,.0f} | {note} |")
        print(f"{label:<36} {rate:>10,.0f} msgs/s" + (f"   {note}" if note else ""), flush=True)
    overhead = (best["chain"] / best["bare"] - 1) * 100
    verdict = "within" if overhead <= target else "OVER"
    print(f"\nchain overhead {overhead:.1f} % ({verdict} the {target:.0f} % target)\n")
    print("\n".join(lines))
    return 0 if overhead <= target else 1


if __name__ == "__main__":
    sys.exit(main())
