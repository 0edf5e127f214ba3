"""The backfill's Arrow path for plans that read keys and for Kafka sinks, against the per-row path.

A task (the ``mapInArrow`` body) is run over the same rows with the native core
on (values, and keys for the Debezium reader, handed to ``convert_arrow`` as
Arrow arrays; converted records handed to the sink as Arrow columns) and with
``CDC_SMT_NATIVE=0`` (a record and a chain call per message). The two must give
the same output records, keys, headers, timestamps, partitions, dead letters
and summaries, with malformed and unplanned messages in the middle of the
Arrow batches keeping their places. The Kafka sinks run against the test
broker: Spark's writer's rows (``spark-kafka``) are compared as the task hands
them over, cdc-smt's producer (``kafka``) by what the topics hold.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from bench.codec import canal_messages
from cdc_smt.connector.spark.datasource import KAFKA_ARROW
from cdc_smt.transforms import native
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import Record
from tests.spark.conftest import run_async
from tests.spark.test_backfill import load, write_job
from tests.spark.test_backfill_native import BAD, count_arrow_rows, tree

pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(not native.available(), reason="the native extension is not built (no Rust toolchain)"),
]
PARTITIONS = 3


def debezium_records(count: int, seed: int) -> list[Record]:
    """Keyed Debezium change events (deletes followed by their tombstones) made from Canal messages."""
    canal, debezium = get_codec("canal-json"), get_codec("debezium-json")
    out = []
    for message in canal_messages(count, seed=seed):
        for event in canal.decode(Record(value=message)):
            out.extend(debezium.encode(event))
    return out


def canal_records(count: int, seed: int) -> list[Record]:
    """Canal messages with keys (some without), malformed ones among them, and a tombstone."""
    values: list[bytes | None] = list(canal_messages(count, seed=seed))
    for at, bad in zip(range(5, count, 37), BAD, strict=False):
        values[at] = bad
    values[100] = None
    return [Record(value=v, key=None if i % 7 == 0 else b"k%d" % (i % 40)) for i, v in enumerate(values)]


def debezium_mixed(count: int, seed: int) -> list[Record]:
    """Debezium events, malformed messages, a record whose key is not its row's, and keyless ones."""
    records = debezium_records(count, seed)
    for at, bad in zip(range(3, len(records), 41), BAD, strict=False):
        records.insert(at, Record(value=bad, key=b'{"id":1}'))
    records[10] = Record(value=records[10].value, key=None)
    records[20] = Record(value=records[20].value, key=b"not a debezium key")
    return records


def rows(records: list[Record], partitions: int = PARTITIONS, topic: str = "in") -> list[pa.RecordBatch]:
    """Records as Spark's Kafka source hands them over (partitions in runs, headers on some), in
    batches that split a partition's run."""
    out = []
    for p in range(partitions):
        for i, r in enumerate(records[p::partitions]):
            out.append(
                {"key": r.key, "value": r.value, "topic": topic, "partition": p, "offset": 10 + i,
                 "timestamp": (1_700_000_000_000 + i) * 1000, "timestampType": 0,
                 "headers": [{"key": "seq", "value": b"%d" % i}] if i % 3 == 0 else None}
            )  # fmt: skip
    table = pa.Table.from_pylist(out, schema=KAFKA_ARROW)
    return table.to_batches(max_chunksize=len(out) // 2 + 7)


def job_doc(name: str, bootstrap: str | None, source: str, sink: str, **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "id": name,
        "source": {"topics": ["in"], "format": source},
        "sink": {"topic": f"{name}.out", "format": sink},
        "errors": {"tolerance": "all", "dead_letter_topic": f"{name}.dlq"},
        "backfill": {"checkpoint": "/nonexistent"},
        **extra,
    }
    if bootstrap is not None:
        doc["kafka"] = {"bootstrap_servers": bootstrap}
    else:  # files in, files out (the task plan names its own sinks)
        doc["backfill"].update(source={"type": "jsonl", "path": "/nonexistent"}, sink={"type": "jsonl", "path": "/o"})
        del doc["source"]["topics"], doc["sink"]["topic"], doc["errors"]["dead_letter_topic"]
    return doc


def plan_for(tmp: Path, doc: dict[str, Any], sink: Any, dead: Any) -> Any:
    from cdc_smt.connector.kafka import connection_json
    from cdc_smt.connector.spark.process import TaskPlan

    tmp.mkdir(parents=True, exist_ok=True)
    job, _ = load(write_job(tmp / "job.yaml", doc))
    conn = connection_json(job.kafka) if "kafka" in doc else None
    return TaskPlan(job=job, batch_id=0, sink=sink, dead_letters=dead, connection=conn)


def count_python_rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The returned list grows by one per record a task hands to the chain's Python path."""
    from cdc_smt.connector.spark.process import Task

    calls: list[int] = []
    feed_one = Task._feed_one

    def counted(self: Any, *args: Any) -> None:
        calls.append(1)
        feed_one(self, *args)

    monkeypatch.setattr(Task, "_feed_one", counted)
    return calls


def summaries(batch: pa.RecordBatch) -> list[dict[str, Any]]:
    return [{k: v for k, v in s.items() if k != "seconds"} for s in batch.to_pylist() if s["stream"] is not None]


# -- keys on the Arrow path: Debezium readers into files -----------------------------------------


def test_debezium_rows_take_the_arrow_path_with_their_keys(tmp_path, monkeypatch):
    """debezium-json -> canal-json rows into files: the plan reads the rows' keys from the key
    column and converts nearly every row; what it leaves to Python keeps its place."""
    from cdc_smt.connector.spark.process import run_task
    from cdc_smt.connector.spark.settings import SinkSpec

    batches = rows(debezium_mixed(500, seed=4))
    total = sum(b.num_rows for b in batches)
    results = {}
    for native_on in (True, False):
        arrow_rows = count_arrow_rows(monkeypatch, native_on)
        python_rows = count_python_rows(monkeypatch)
        out = tmp_path / ("native" if native_on else "python")
        doc = job_doc("dbz", None, "debezium-json", "canal-json")
        plan = plan_for(out, doc, SinkSpec("jsonl", str(out / "out")), SinkSpec("jsonl", str(out / "out" / "_dl")))
        (summary,) = list(run_task(plan, iter(batches)))
        results[native_on] = tree(out / "out"), summaries(summary)
        if native_on:
            assert sum(arrow_rows) == total
            assert 0 < len(python_rows) < total // 5  # the malformed and unplanned ones only
        else:
            assert not arrow_rows and len(python_rows) == total
    assert results[True] == results[False]
    files, stats = results[True]
    assert sum(s["dead_letters"] for s in stats) >= 10
    assert any(name.startswith("_dl/") for name in files)


def test_convert_arrow_without_keys_leaves_a_key_reading_plan_to_python(tmp_path):
    """The keys are what the Debezium reader needs: without them it handles nothing, with a null
    key array as much as the list ``convert`` with ``None`` keys."""
    import cdc_smt._native as ext
    from cdc_smt.connector.spark.process import _arrow_extension

    assert _arrow_extension() is ext
    job, _ = load(write_job(tmp_path / "job.yaml", job_doc("k", None, "debezium-json", "canal-json")))
    plan = job.build_chain().native
    assert plan is not None and plan.needs_keys
    records = debezium_records(60, seed=2)
    values = pa.array([r.value for r in records], pa.binary())
    keys = pa.array([r.key for r in records], pa.binary())
    without = pa.array(ext.convert_arrow(plan.plan, values)[0]).to_pylist()
    assert set(without) == {-1}
    counts, outs, out_keys, variants = (pa.array(a) for a in ext.convert_arrow(plan.plan, values, keys))
    listed = plan.convert_values([r.value for r in records], [r.key for r in records])
    assert (counts.to_pylist(), outs.to_pylist(), out_keys.to_pylist(), variants.to_pylist()) == tuple(listed)
    assert any(c > 0 for c in counts.to_pylist())
    nulls = pa.nulls(len(records), pa.binary())
    listed = plan.convert_values([r.value for r in records], [None] * len(records))
    assert pa.array(ext.convert_arrow(plan.plan, values, nulls)[0]).to_pylist() == listed[0]
    with pytest.raises(ValueError, match="one key per value"):
        ext.convert_arrow(plan.plan, values, keys.slice(1))


def test_key_partitions_are_the_java_clients():
    import cdc_smt._native as ext
    from cdc_smt.connector.kafka import partition_for

    keys = [None, b"", b"a", b"k17", b'{"id":1}', bytes(range(256)), "ünïcode".encode()] + [
        b"k%d" % i for i in range(200)
    ]
    for n in (1, 3, 7, 64):
        got = pa.array(ext.key_partitions(pa.array(keys, pa.binary()), n)).to_pylist()
        assert got == [-1 if k is None else partition_for(k, n) for k in keys]
    with pytest.raises(ValueError, match="at least one partition"):
        ext.key_partitions(pa.array(keys, pa.binary()), 0)


# -- Kafka sinks on the Arrow path ------------------------------------------------------------------

CASES = {
    "canal": ("canal-json", "debezium-json", canal_records, {}),
    "debezium": ("debezium-json", "canal-json", debezium_mixed, {}),
    # header edits per variant, an output topic per op
    "headers": (
        "canal-json",
        "debezium-json",
        canal_records,
        {
            "transforms": [
                {"type": "insert_header", "header": "origin", "value": "backfill"},
                {"type": "insert_header", "header": "op", "value": "{op}"},
                {"type": "route", "topic": "{name}.r.{op}"},
            ]
        },
    ),
}
#: cdc-smt's producer compresses: its record batches are aiokafka's own (the Arrow columns become records).
PRODUCER_CASES = {
    **CASES,
    "gzip": ("canal-json", "debezium-json", canal_records, {"producer": {"compression_type": "gzip"}}),
}


ROUTED = ("r.insert", "r.update", "r.delete")


def create_topics(broker: Any, name: str) -> None:
    from cdc_smt.connector import kafka

    # cdc_smt: Debezium's schema-change topic (the server name), where a Canal DDL message goes
    topics = {f"{name}.out": PARTITIONS, f"{name}.dlq": 1, "cdc_smt": 1}
    topics.update((f"{name}.{suffix}", 2) for suffix in ROUTED)
    run_async(kafka.create_topics(broker.bootstrap, topics))


def case_doc(case: str, name: str, bootstrap: str) -> tuple[dict[str, Any], list[Record]]:
    source, sink, make, extra = PRODUCER_CASES[case]
    if "transforms" in extra:
        extra = dict(extra, transforms=[dict(t, topic=t["topic"].replace("{name}", name)) if "topic" in t else t
                                        for t in extra["transforms"]])  # fmt: skip
    return job_doc(name, bootstrap, source, sink, **extra), make(700, seed=9)


@pytest.mark.parametrize("case", sorted(CASES))
def test_spark_kafka_rows_arrow_path_equals_per_row_path(broker, tmp_path, monkeypatch, case):
    """Spark's writer's rows (topic, key, value, headers, partition; dead letters among them) in the
    order the task hands them over: the same on both paths."""
    from cdc_smt.connector.spark.kafkasink import run_rows_task
    from cdc_smt.connector.spark.settings import SinkSpec

    name = f"arrow-rows-{case}"
    create_topics(broker, name)
    doc, records = case_doc(case, name, broker.bootstrap)
    batches = rows(records)
    total = sum(b.num_rows for b in batches)
    results = {}
    for native_on in (True, False):
        arrow_rows = count_arrow_rows(monkeypatch, native_on)
        python_rows = count_python_rows(monkeypatch)
        plan = plan_for(tmp_path / str(native_on), doc, SinkSpec("spark-kafka"), SinkSpec("kafka"))
        out = pa.Table.from_batches(list(run_rows_task(plan, iter(batches))))
        records_out = out.filter(out.column("out_topic").is_valid())
        results[native_on] = (
            records_out.select(["out_topic", "out_key", "out_value", "out_headers", "out_partition"]).to_pylist(),
            summaries(out.filter(out.column("stream").is_valid()).to_batches()[0]),
        )
        if native_on:
            assert sum(arrow_rows) == total and len(python_rows) < total // 4
    fast, slow = results[True], results[False]
    assert fast[1] == slow[1]
    assert len(fast[0]) == len(slow[0])
    for i, (a, b) in enumerate(zip(fast[0], slow[0], strict=True)):
        assert a == b, i
    topics = {r["out_topic"] for r in fast[0]}
    assert f"{name}.dlq" in topics and sum(s["dead_letters"] for s in fast[1]) >= 10
    if case != "headers":
        assert len({r["out_partition"] for r in fast[0] if r["out_topic"] == f"{name}.out"}) == PARTITIONS
    else:
        assert {f"{name}.{suffix}" for suffix in ROUTED} <= topics
        for r in fast[0]:
            if r["out_topic"] in (f"{name}.dlq", "cdc_smt"):
                continue
            headers = [(h["key"], h["value"]) for h in r["out_headers"]]
            assert headers[-2:] == [("origin", b"backfill"), ("op", r["out_topic"].rsplit(".", 1)[1].encode())]
        assert any(len(r["out_headers"]) > 2 for r in fast[0])  # the source's own headers come first


def count_native_sends(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The returned list gets the number of records of each native batch write (``produce_parts``)."""
    from cdc_smt.connector.kafka import produce

    sent: list[int] = []
    produce_parts = produce.produce_parts

    async def counted(producer: Any, parts: Any, make_batch: Any) -> int:
        n = await produce_parts(producer, parts, make_batch)
        sent.append(n)
        return n

    monkeypatch.setattr(produce, "produce_parts", counted)
    return sent


@pytest.mark.parametrize("case", sorted(PRODUCER_CASES))
def test_kafka_sink_arrow_path_writes_what_the_per_row_path_writes(broker, tmp_path, monkeypatch, case):
    """cdc-smt's producer: the topics written on the Arrow path hold, partition by partition and in
    offset order, what the per-row path writes (keys, values, source timestamps, headers; dead letters).
    On the Arrow path the record batches are written from the Arrow columns (the records ``add`` queued
    among them), unless the producer compresses."""
    from cdc_smt.connector import kafka
    from cdc_smt.connector.spark.process import run_task
    from cdc_smt.connector.spark.settings import SinkSpec

    batches = None
    contents = {}
    stats = {}
    for native_on in (True, False):
        name = f"arrow-kafka-{case}-{'native' if native_on else 'python'}"
        create_topics(broker, name)
        doc, records = case_doc(case, name, broker.bootstrap)
        batches = batches or rows(records)
        total = sum(b.num_rows for b in batches)
        arrow_rows = count_arrow_rows(monkeypatch, native_on)
        python_rows = count_python_rows(monkeypatch)
        native_sends = count_native_sends(monkeypatch)
        plan = plan_for(tmp_path / name, doc, SinkSpec("kafka"), SinkSpec("kafka"))
        (summary,) = list(run_task(plan, iter(batches)))
        stats[native_on] = summaries(summary)
        if native_on:
            assert sum(arrow_rows) == total and len(python_rows) < total // 4
        got = {}
        for suffix in ("out", "dlq", *ROUTED):
            for r in run_async(kafka.consume_all(broker.bootstrap, f"{name}.{suffix}")):
                got.setdefault((suffix, r.partition), []).append((r.key, r.value, r.timestamp, list(r.headers)))
        contents[native_on] = got
        written = sum(s["outputs"] + s["dead_letters"] for s in stats[native_on])  # DDL's topic included
        if native_on and case != "gzip":
            assert sum(native_sends) == written  # the Python path's records among the Arrow batches too
        else:
            assert not native_sends
    assert stats[True] == stats[False]
    assert sorted(contents[True]) == sorted(contents[False])
    for where, expected in contents[False].items():
        assert contents[True][where] == expected, where
    assert sum(len(v) for k, v in contents[True].items() if k[0] == "dlq") == sum(
        s["dead_letters"] for s in stats[True]
    )
    assert sum(s["dead_letters"] for s in stats[True]) >= 10
