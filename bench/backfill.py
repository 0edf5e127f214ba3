"""Backfill throughput on Spark local mode, against the single-core chain and a Spark-native baseline.

    .venv/bin/python -m bench.backfill [--count 1000000] [--master local[2]] [--skip-kafka]

Generates ``--count`` Canal JSON row changes (``bench.codec``'s generator, ~900
bytes each) and converts them to Debezium JSON (typed, no schema part):

1. **single core**: :class:`transforms.chain.Chain` in this process, no Spark
   (what ``bench.codec`` measures), the yardstick for parallel efficiency;
2. **files -> files**: ``--files`` JSON Lines files -> backfill -> JSON Lines;
3. **Spark-native baseline**: the same files through ``spark.read.text`` ->
   ``from_json`` -> ``to_json`` -> ``write.text`` (a JSON rewrite with no CDC
   semantics at all: the ceiling of the JVM path), in the same run;
4. **Kafka -> Kafka** on the embedded broker (``--partitions`` source
   partitions), after producing the input (timed separately).

Rates are wall-clock over the whole ``run()`` (planning, every micro-batch,
commits), with the Spark session already up. Parallel efficiency = rate /
(cores x single-core rate), cores taken from ``--master``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import sys
import tempfile
import time
from cdc_smt.connector.tuning import tune_allocator
from pathlib import Path
from typing import Any, Sequence

import yaml

from bench.codec import DEBEZIUM_TYPED_NO_SCHEMA, Inputs, Row, canal_messages, cpu_model, measure

SINK_OPTIONS = dict(DEBEZIUM_TYPED_NO_SCHEMA)


def job_doc(name: str, backfill: dict[str, Any], bootstrap: str | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "id": name,
        "source": {"format": "canal-json", "options": {"source_timezone": "Asia/Shanghai"}},
        "sink": {"format": "debezium-json", "options": SINK_OPTIONS},
        "errors": {"tolerance": "all"},
        "backfill": backfill,
    }
    if bootstrap:
        doc["kafka"] = {"bootstrap_servers": bootstrap}
        doc["source"]["topics"] = [f"{name}.in"]
        doc["sink"]["topic"] = f"{name}.out"
        doc["errors"]["dead_letter_topic"] = f"{name}.dlq"
    return doc


def run_job(spark: Any, work: Path, doc: dict[str, Any]) -> tuple[float, Any]:
    from cdc_smt.connector.spark.backfill import run
    from cdc_smt.connector.spark.settings import load

    path = work / f"{doc['id']}.yaml"
    path.write_text(yaml.safe_dump(doc))
    job, settings = load(path)
    started = time.perf_counter()
    progress = run(job, settings, spark=spark, progress_out=sys.stderr)
    return time.perf_counter() - started, progress


def single_core(messages: list[bytes]) -> float:
    result = measure(Row("canal-json", "debezium-json", source_options={"source_timezone": "Asia/Shanghai"}, sink_options=SINK_OPTIONS), Inputs(messages), 1)
    if result.rate is None:
        raise SystemExit(f"cannot measure the chain: {result.status} {result.detail}")
    return result.rate


def write_files(messages: list[bytes], folder: Path, n: int) -> None:
    folder.mkdir(parents=True)
    per = -(-len(messages) // n)
    for i in range(n):
        chunk = messages[i * per : (i + 1) * per]
        if chunk:
            (folder / f"part-{i:03d}.canal.jsonl").write_bytes(b"\n".join(chunk) + b"\n")


def spark_native(spark: Any, src: Path, out: Path) -> float:
    """``from_json``/``to_json`` over the same lines: Spark's own JSON path, no Python."""
    from pyspark.sql import functions as F

    sample = src.joinpath(sorted(os.listdir(src))[0]).open("rb").readline().decode()
    schema = spark.range(1).select(F.schema_of_json(F.lit(sample)).alias("s")).first()["s"]
    started = time.perf_counter()
    df = spark.read.text(str(src))
    df.select(F.to_json(F.from_json("value", schema)).alias("value")).write.mode("overwrite").text(str(out))
    return time.perf_counter() - started


def kafka_run(spark: Any, work: Path, messages: list[bytes], partitions: int, batch: int) -> tuple[float, float, Any]:
    from cdc_smt.connector import kafka
    from cdc_smt.connector.broker import EmbeddedBroker
    from cdc_smt.transforms.model import Record

    with EmbeddedBroker() as broker:
        bs = broker.bootstrap
        asyncio.run(kafka.create_topics(bs, {"bk.in": partitions, "bk.out": partitions, "bk.dlq": 1}))
        records = [Record(value=v, key=b'{"id":%d}' % i) for i, v in enumerate(messages)]
        started = time.perf_counter()
        asyncio.run(kafka.produce_records(bs, "bk.in", records))
        produce = time.perf_counter() - started
        del records
        seconds, progress = run_job(
            spark, work, job_doc("bk", {"source": {"max_records_per_batch": batch}, "checkpoint": str(work / "bk-ckpt")}, bs)
        )
    return produce, seconds, progress


def cores_of(master: str) -> int:
    m = re.fullmatch(r"local\[(\d+|\*)\]", master)
    if not m:
        return os.cpu_count() or 1
    return (os.cpu_count() or 1) if m.group(1) == "*" else int(m.group(1))


def main(argv: Sequence[str] | None = None) -> int:
    # The hosts run with this allocator tuning (connector/tuning.py); so do the benches.
    print(f"malloc tuning: {'on' if tune_allocator() else 'off'}")
    p = argparse.ArgumentParser(prog="python -m bench.backfill", description=__doc__.split("\n\n")[0])
    p.add_argument("--count", type=int, default=1_000_000)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--files", type=int, default=8, help="input files (a file is one task)")
    p.add_argument("--partitions", type=int, default=4, help="Kafka source partitions")
    p.add_argument("--batch", type=int, default=500_000, help="Kafka records per micro-batch")
    p.add_argument("--single-count", type=int, default=200_000, help="messages for the single-core rate")
    p.add_argument("--skip-kafka", action="store_true")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    args = p.parse_args(argv)

    from cdc_smt.connector.spark.backfill import spark_session

    messages = canal_messages(args.count)
    cores = cores_of(args.master)
    print(f"{args.count:,} Canal JSON messages ({sum(map(len, messages)) / len(messages):.0f} bytes on average); {args.master}; {cpu_model()}", flush=True)
    rate1 = single_core(messages[: args.single_count])
    print(f"single core (in-process chain): {rate1:,.0f} msgs/s", flush=True)

    work = Path(tempfile.mkdtemp(prefix="cdc-smt-bench-backfill-"))
    rows: list[tuple[str, float]] = []
    try:
        spark = spark_session(args.master, {"spark.ui.enabled": "false"})
        src = work / "in"
        write_files(messages, src, args.files)
        backfill = {"source": {"type": "jsonl", "path": str(src)}, "sink": {"type": "jsonl", "path": str(work / "out")}, "checkpoint": str(work / "ckpt")}
        seconds, progress = run_job(spark, work, job_doc("files", backfill))
        assert progress.totals.records == args.count, progress.totals
        rows.append(("files -> files (backfill, JSON Lines)", args.count / seconds))
        native = spark_native(spark, src, work / "native")
        rows.append(("files -> files (Spark-native from_json/to_json baseline)", args.count / native))
        if not args.skip_kafka:
            produce, seconds, progress = kafka_run(spark, work, messages, args.partitions, args.batch)
            assert progress.totals.records == args.count, progress.totals
            print(f"(produced the input at {args.count / produce:,.0f} msgs/s)", flush=True)
            rows.append((f"Kafka -> Kafka (backfill, {args.partitions} partitions, embedded broker)", args.count / seconds))
        spark.stop()
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    print()
    print(f"| {args.count:,} messages, {args.master} | msgs/s | x single core | parallel efficiency |")
    print("|---|---:|---:|---:|")
    print(f"| single core, in-process chain | {rate1:,.0f} | 1.00 | |")
    for label, rate in rows:
        native = "Spark-native" in label
        eff = "" if native else f"{rate / (cores * rate1):.0%}"
        print(f"| {label} | {rate:,.0f} | {rate / rate1:.2f} | {eff} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
