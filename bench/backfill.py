"""Backfill throughput on Spark local mode, against the single-core chain and a Spark-native baseline.

    .venv/bin/python -m bench.backfill [--count 1000000] [--master local[2]] [--skip-kafka]
                                       [--broker apache|embedded] [--skip-spark-kafka] [--skip-python-path]

Generates ``--count`` Canal JSON row changes (``bench.codec``'s generator, ~900
bytes each) and converts them to Debezium JSON (typed, no schema part):

1. **single core**: :class:`transforms.chain.Chain` in this process, no Spark
   (what ``bench.codec`` measures), the yardstick for parallel efficiency;
2. **files -> files**: ``--files`` JSON Lines files -> backfill -> JSON Lines, with the
   native core (the tasks hand Arrow arrays to the Rust plan) and again with
   ``CDC_SMT_NATIVE=0`` in the executors (``--skip-python-path`` leaves it out);
3. **Spark-native baseline**: the same files through ``spark.read.text`` ->
   ``from_json`` -> ``to_json`` -> ``write.text`` (a JSON rewrite with no CDC
   semantics at all: the ceiling of the JVM path), in the same run;
4. **files -> Kafka**: the same files into a topic through both Kafka sinks (cdc-smt's
   producer in the tasks, ``sink.type: kafka``, and Spark's ``format("kafka")`` writer,
   ``spark-kafka``); on the native core the converted records reach either sink as
   Arrow columns;
5. **Kafka -> Kafka** on one broker (``--broker``: Apache Kafka from the
   test tooling's cache, or the embedded Tansu; ``--partitions`` source
   partitions), after producing the input (timed separately), through both
   Kafka sources and both Kafka sinks of the backfill on the same input in the
   same run: the Python Data Source (``source.type: kafka``) and Spark's own
   Kafka connector (``spark-kafka``, resolved by :mod:`connector.apache_kafka`);
   cdc-smt's producer in the tasks (``sink.type: kafka``) and Spark's
   ``format("kafka")`` writer (``sink.type: spark-kafka``); plus Spark's own
   ``format("kafka")`` read -> write copy of the same records (no conversion at
   all: the ceiling of the JVM path).

``--task-cpu N`` measures instead the CPU time of one task in this process (no
Spark): ``N`` messages as rows of Spark's Kafka source through the task into
each Kafka sink (on the broker of ``--broker``), the steadier figure on a shared
machine.

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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from bench.codec import DEBEZIUM_TYPED_NO_SCHEMA, Inputs, Row, canal_messages, cpu_model, measure
from cdc_smt.connector.tuning import tune_allocator
from cdc_smt.transforms import native as native_core

SINK_OPTIONS = dict(DEBEZIUM_TYPED_NO_SCHEMA)


def job_doc(
    name: str, backfill: dict[str, Any], bootstrap: str | None = None, source_topic: str | None = None
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "id": name,
        "source": {"format": "canal-json", "options": {"source_timezone": "Asia/Shanghai"}},
        "sink": {"format": "debezium-json", "options": SINK_OPTIONS},
        "errors": {"tolerance": "all"},
        "backfill": backfill,
    }
    if bootstrap:
        doc["kafka"] = {"bootstrap_servers": bootstrap}
        doc["source"]["topics"] = [source_topic or f"{name}.in"]
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
    result = measure(
        Row(
            "canal-json",
            "debezium-json",
            source_options={"source_timezone": "Asia/Shanghai"},
            sink_options=SINK_OPTIONS,
        ),
        Inputs(messages),
        1,
    )
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


def warm_up(spark: Any, work: Path, messages: list[bytes]) -> None:
    """One small untimed backfill first: the first query of a session pays Spark's and the
    Python workers' start-up, which would otherwise land on whichever run comes first."""
    write_files(messages, work / "warm-in", 2)
    backfill = {
        "source": {"type": "jsonl", "path": str(work / "warm-in")},
        "sink": {"type": "jsonl", "path": str(work / "warm-out")},
        "checkpoint": str(work / "warm-ckpt"),
    }
    run_job(spark, work, job_doc("warm", backfill))


def files_python_path(spark: Any, work: Path, backfill: dict[str, Any], count: int) -> float:
    """The same files -> files job with the executors' Python workers on the Python path: Spark hands
    ``sc.environment`` to the Python workers it starts for a function, so only this job sees it."""
    env = spark.sparkContext.environment
    env["CDC_SMT_NATIVE"] = "0"
    try:
        job = {**backfill, "sink": {"type": "jsonl", "path": str(work / "out-python")}}
        seconds, progress = run_job(spark, work, job_doc("files-python", {**job, "checkpoint": str(work / "ckpt-py")}))
    finally:
        del env["CDC_SMT_NATIVE"]
    assert progress.totals.records == count, progress.totals
    return seconds


def spark_native(spark: Any, src: Path, out: Path) -> float:
    """``from_json``/``to_json`` over the same lines: Spark's own JSON path, no Python."""
    from pyspark.sql import functions as F

    sample = src.joinpath(sorted(os.listdir(src))[0]).open("rb").readline().decode()
    schema = spark.range(1).select(F.schema_of_json(F.lit(sample)).alias("s")).first()["s"]
    started = time.perf_counter()
    df = spark.read.text(str(src))
    df.select(F.to_json(F.from_json("value", schema)).alias("value")).write.mode("overwrite").text(str(out))
    return time.perf_counter() - started


def start_broker(kind: str) -> Any:
    if kind == "apache":
        from cdc_smt.connector.apache_kafka import ApacheKafka

        return ApacheKafka().start()
    from cdc_smt.connector.broker import EmbeddedBroker

    return EmbeddedBroker().start()


def kafka_runs(
    spark: Any, work: Path, messages: list[bytes], args: argparse.Namespace, spark_kafka: bool, src: Path
) -> list[tuple[str, float]]:
    """The files (``src``) into Kafka through each Kafka sink; then produce once and run each Kafka
    source of the backfill (and Spark's own copy) over the same records."""
    from cdc_smt.connector import kafka
    from cdc_smt.transforms.model import Record

    broker = start_broker(args.broker)
    rows: list[tuple[str, float]] = []
    where = f"{args.partitions} partitions, {'Apache Kafka' if args.broker == 'apache' else 'embedded Tansu'}"
    try:
        bs = broker.bootstrap
        outs = ("py", "sk", "pysk", "sksk", "copy", "fk", "fsk")
        topics = {"bk.in": args.partitions, **{f"{v}.out": args.partitions for v in outs}}
        topics.update({f"{v}.dlq": 1 for v in outs})
        asyncio.run(kafka.create_topics(bs, topics))
        sinks = [("fk", "kafka", "cdc-smt's producer")]
        if spark_kafka:
            sinks.append(("fsk", "spark-kafka", 'Spark\'s format("kafka") writer'))
        for name, sink_type, label in sinks:
            backfill = {
                "source": {"type": "jsonl", "path": str(src)},
                "sink": {"type": sink_type},
                "checkpoint": str(work / f"{name}-ckpt"),
            }
            if sink_type == "spark-kafka":
                backfill["spark_conf"] = {"spark.jars": spark.conf.get("spark.jars")}
            doc = job_doc(name, backfill, bs)
            del doc["source"]["topics"]  # files in
            seconds, progress = run_job(spark, work, doc)
            assert progress.totals.records == len(messages), progress.totals
            rows.append((f"files -> Kafka (backfill, JSON Lines -> {label}; {where})", len(messages) / seconds))
        records = [Record(value=v, key=b'{"id":%d}' % i) for i, v in enumerate(messages)]
        started = time.perf_counter()
        asyncio.run(kafka.produce_records(bs, "bk.in", records))
        print(f"(produced the input at {len(records) / (time.perf_counter() - started):,.0f} msgs/s)", flush=True)
        del records
        variants = [("py", "kafka", "kafka", "Python Data Source -> cdc-smt's producer")]
        if spark_kafka:
            variants += [
                ("sk", "spark-kafka", "kafka", "Spark's Kafka source -> cdc-smt's producer"),
                ("pysk", "kafka", "spark-kafka", 'Python Data Source -> Spark\'s format("kafka") writer'),
                ("sksk", "spark-kafka", "spark-kafka", "Spark's Kafka source -> Spark's format(\"kafka\") writer"),
            ]
        for name, source_type, sink_type, label in variants:
            backfill = {
                "source": {"type": source_type, "max_records_per_batch": args.batch},
                "sink": {"type": sink_type},
                "checkpoint": str(work / f"{name}-ckpt"),
            }
            if "spark-kafka" in (source_type, sink_type):
                backfill["spark_conf"] = {"spark.jars": spark.conf.get("spark.jars")}
            seconds, progress = run_job(spark, work, job_doc(name, backfill, bs, source_topic="bk.in"))
            assert progress.totals.records == len(messages), progress.totals
            rows.append((f"Kafka -> Kafka (backfill, {label}; {where})", len(messages) / seconds))
        if spark_kafka:
            seconds = spark_kafka_copy(spark, bs, "bk.in", "copy.out")
            rows.append(
                (f'Kafka -> Kafka (Spark-native format("kafka") copy baseline; {where})', len(messages) / seconds)
            )
    finally:
        broker.stop()
        if hasattr(broker, "close"):
            broker.close()
    return rows


def spark_kafka_copy(spark: Any, bootstrap: str, source: str, sink: str) -> float:
    """Spark's own Kafka source -> Kafka sink, records copied as they are: no Python, no conversion."""
    started = time.perf_counter()
    df = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", source).load()
    df.select("key", "value").write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option(
        "topic", sink
    ).save()
    return time.perf_counter() - started


def task_cpu(messages: list[bytes], kind: str) -> list[tuple[str, float]]:
    """CPU seconds of one task (``run_task``, ``run_rows_task``) over ``messages`` as Kafka rows."""
    import pyarrow as pa

    from cdc_smt.connector import kafka
    from cdc_smt.connector.kafka import connection_json
    from cdc_smt.connector.spark.datasource import KAFKA_ARROW
    from cdc_smt.connector.spark.kafkasink import run_rows_task
    from cdc_smt.connector.spark.process import TaskPlan, run_task
    from cdc_smt.connector.spark.settings import SinkSpec, load

    rows = [
        {"key": b'{"id":%d}' % i, "value": v, "topic": "bk.in", "partition": 0, "offset": i,
         "timestamp": 1_700_000_000_000_000 + i, "timestampType": 0, "headers": None}
        for i, v in enumerate(messages)
    ]  # fmt: skip
    batches = pa.Table.from_pylist(rows, schema=KAFKA_ARROW).to_batches(max_chunksize=10_000)
    del rows
    broker = start_broker(kind)
    out: list[tuple[str, float]] = []
    try:
        asyncio.run(kafka.create_topics(broker.bootstrap, {"cpu.out": 4, "cpu.dlq": 1}))
        work = Path(tempfile.mkdtemp(prefix="cdc-smt-bench-task-"))
        path = work / "job.yaml"
        path.write_text(yaml.safe_dump(job_doc("cpu", {"checkpoint": str(work / "ckpt")}, broker.bootstrap)))
        job, _ = load(path)
        for label, sink, body in (
            ("cdc-smt's producer", "kafka", run_task),
            ("Spark's writer rows", "spark-kafka", run_rows_task),
        ):
            plan = TaskPlan(job=job, batch_id=0, sink=SinkSpec(sink), dead_letters=SinkSpec("kafka"),
                            connection=connection_json(job.kafka))  # fmt: skip
            started = time.process_time()
            for _ in body(plan, iter(batches)):
                pass
            out.append((f"one task, Kafka rows -> {label}", time.process_time() - started))
        shutil.rmtree(work, ignore_errors=True)
    finally:
        broker.stop()
        if hasattr(broker, "close"):
            broker.close()
    return out


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
    p.add_argument(
        "--broker", choices=("apache", "embedded"), default="apache", help="broker of the Kafka runs (default: apache)"
    )
    p.add_argument("--skip-spark-kafka", action="store_true", help="leave out Spark's own Kafka connector")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    p.add_argument(
        "--skip-python-path",
        action="store_true",
        help="leave out files -> files with CDC_SMT_NATIVE=0 in the executors",
    )
    p.add_argument("--task-cpu", type=int, metavar="N", help="only the CPU time of one task over N messages")
    args = p.parse_args(argv)
    if args.task_cpu:
        core = "native core" if native_core.enabled() else "Python path"
        for label, seconds in task_cpu(canal_messages(args.task_cpu), args.broker):
            print(f"{label} ({core}): {seconds:.2f} CPU s, {args.task_cpu / seconds:,.0f} msgs per CPU s")
        return 0

    from cdc_smt.connector.spark.backfill import spark_session

    messages = canal_messages(args.count)
    cores = cores_of(args.master)
    print(
        f"{args.count:,} Canal JSON messages ({sum(map(len, messages)) / len(messages):.0f} bytes on average); "
        f"{args.master}; {cpu_model()}",
        flush=True,
    )
    rate1 = single_core(messages[: args.single_count])
    print(f"single core (in-process chain): {rate1:,.0f} msgs/s", flush=True)

    work = Path(tempfile.mkdtemp(prefix="cdc-smt-bench-backfill-"))
    rows: list[tuple[str, float]] = []
    ratios: list[str] = []
    try:
        conf = {"spark.ui.enabled": "false"}
        spark_kafka = not (args.skip_kafka or args.skip_spark_kafka)
        if spark_kafka:
            from cdc_smt.connector.apache_kafka import spark_kafka_jars

            conf["spark.jars"] = ",".join(str(j) for j in spark_kafka_jars())
        spark = spark_session(args.master, conf)
        src = work / "in"
        write_files(messages, src, args.files)
        warm_up(spark, work, messages[:20_000])
        backfill = {
            "source": {"type": "jsonl", "path": str(src)},
            "sink": {"type": "jsonl", "path": str(work / "out")},
            "checkpoint": str(work / "ckpt"),
        }
        seconds, progress = run_job(spark, work, job_doc("files", backfill))
        assert progress.totals.records == args.count, progress.totals
        files_rate = args.count / seconds
        core = "native core" if native_core.enabled() else "Python path"
        rows.append((f"files -> files (backfill, JSON Lines; {core})", files_rate))
        python_rate = None
        if native_core.enabled() and not args.skip_python_path:
            python_rate = args.count / files_python_path(spark, work, backfill, args.count)
            rows.append(("files -> files (backfill, JSON Lines; CDC_SMT_NATIVE=0 in the executors)", python_rate))
        native = spark_native(spark, src, work / "native")
        native_rate = args.count / native
        rows.append(("files -> files (Spark-native from_json/to_json baseline)", native_rate))
        ratios.append(f"files -> files / Spark-native from_json/to_json: {files_rate / native_rate:.2f}x")
        if python_rate is not None:
            ratios.append(f"  with CDC_SMT_NATIVE=0: {python_rate / native_rate:.2f}x")
        if not args.skip_kafka:
            rows.extend(kafka_runs(spark, work, messages, args, spark_kafka, src))
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
    print()
    for line in ratios:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
