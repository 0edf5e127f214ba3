"""The worker against a real broker, in-process: conversion, dead letters, tolerance, observability."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from cdc_smt.connector import kafka as K
from cdc_smt.connector.jobconfig import load_job
from cdc_smt.connector.worker.app import EXIT_FAILED, EXIT_OK, WorkerRuntime
from cdc_smt.transforms.chain import ERROR_HEADER_PREFIX
from cdc_smt.transforms.model import Record
from tests.integration.helpers import (
    KafkaCluster,
    canal,
    committed,
    consume,
    debezium_rows,
    job_doc,
    partition_sizes,
    produce,
    row_changes,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


def run_worker(
    job: dict[str, Any], until: Callable[[WorkerRuntime], bool], timeout: float = 90.0
) -> tuple[WorkerRuntime, int, bool]:
    """Run the job in this process until ``until(runtime)`` or the worker stops by itself.

    Returns (runtime, exit code, whether ``until`` was reached).
    """

    async def go() -> tuple[WorkerRuntime, int, bool]:
        runtime = WorkerRuntime(load_job(job))
        task = asyncio.ensure_future(runtime.run(install_signals=False))
        reached = False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not task.done():
            if runtime.state == "running" and until(runtime):
                reached = True
                break
            await asyncio.sleep(0.1)
        runtime.request_stop()
        code = await asyncio.wait_for(task, timeout=60)
        return runtime, code, reached

    return asyncio.run(go())


def all_acked(topic: str, sizes: dict[int, int]) -> Callable[[WorkerRuntime], bool]:
    """Every source record of ``topic`` converted and its output acknowledged."""

    def check(rt: WorkerRuntime) -> bool:
        reached = {tp.partition: st.committable or 0 for tp, st in rt.pipeline.states.items() if tp.topic == topic}
        return all(reached.get(p, 0) >= n for p, n in sizes.items())

    return check


@pytest.mark.parametrize("processes", [1, 2], ids=["in-process", "2-processes"])
def test_converts_every_record_in_order_across_partitions(kafka: KafkaCluster, names, processes: int) -> None:
    src, out = names("items.canal"), names("items.debezium")
    records = row_changes(rows=300, updates=2)  # 900 changes, 3 per row, keyed by primary key
    produce(kafka, src, records, partitions=4)
    sizes = partition_sizes(records, 4)
    worker = {"create_topics": {"partitions": 3}, "metrics_port": 0, "processes": processes}
    job = job_doc(kafka, names("e2e"), src, out, worker=worker)
    seen: dict[str, Any] = {}

    def done(rt: WorkerRuntime) -> bool:
        if not all_acked(src, sizes)(rt):
            return False
        base = f"http://127.0.0.1:{rt.server.port}"
        with urllib.request.urlopen(base + "/health", timeout=5) as resp:
            seen["health"] = (resp.status, json.loads(resp.read()))
        with urllib.request.urlopen(base + "/metrics", timeout=5) as resp:
            seen["metrics"] = resp.read().decode()
        return True

    runtime, code, reached = run_worker(job, done)
    assert reached and code == EXIT_OK

    got = consume(kafka, out, min_records=len(records))
    rows = debezium_rows(got)
    # Every change exactly once (a clean run has no duplicates).
    assert Counter((i, v) for i, v, _ in rows) == Counter({(i, v): 1 for i in range(1, 301) for v in range(3)})
    # Ops follow the input: the insert is "c", updates are "u".
    assert all(op == ("c" if v == 0 else "u") for _, v, op in rows)
    # Per-row order holds downstream: one output partition per key, versions ascending.
    by_id: dict[int, list[int]] = defaultdict(list)
    for i, v, _ in rows:
        by_id[i].append(v)
    assert all(vs == [0, 1, 2] for vs in by_id.values())
    # Keys are the primary key, partitioned the way the Java client partitions them.
    for r in got:
        key = orjson.loads(r.key)
        assert key.get("payload", key) == {"id": debezium_rows([r])[0][0]}
        assert r.partition == K.partition_for(r.key, 3)
    # Output records keep their source record's timestamp (as Kafka Connect does).
    source_ts = {}
    for r in consume(kafka, src, min_records=len(records)):
        row = orjson.loads(r.value)["data"][0]
        source_ts[(int(row["id"]), int(row["version"]))] = r.timestamp
    assert {(i, v): r.timestamp for r, (i, v, _) in zip(got, rows, strict=True)} == source_ts

    assert committed(kafka, job["id"], src) == sizes
    status, health = seen["health"]
    assert status == 200 and health["status"] == "running" and health["job"] == job["id"]
    assert len(health["assigned"]) == 4
    metrics = seen["metrics"]
    assert f'cdc_smt_records_in_total{{topic="{src}"}} {float(len(records))}' in metrics
    assert f'cdc_smt_records_out_total{{topic="{out}"}} {float(len(records))}' in metrics
    assert "cdc_smt_end_to_end_latency_seconds_count" in metrics
    assert 'cdc_smt_consumer_lag{partition="0",topic="' in metrics
    # The endpoint goes away with the worker.
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(f"http://127.0.0.1:{runtime.server.port}/health", timeout=2)


def test_dead_letters_keep_the_original_record_and_say_why(kafka: KafkaCluster, names) -> None:
    src, out, dlq = names("mixed.canal"), names("mixed.debezium"), names("mixed.dlq")
    good = row_changes(rows=100, updates=0)
    bad = [
        Record(value=b'{"data":[{"id":"7"', key=b'{"id":7}', headers=[("trace-id", b"abc-1")]),  # truncated JSON
        Record(value=orjson.dumps({"database": "shop", "table": "items"}), key=b'{"id":8}'),  # no "type"
        Record(
            value=canal(9, 0, "INSERT", table="broken"), key=b'{"id":9}', headers=[("trace-id", b"abc-3")]
        ),  # cast fails
    ]
    records = good[:40] + bad[:1] + good[40:70] + bad[1:] + good[70:]
    produce(kafka, src, records, partitions=2)
    sizes = partition_sizes(records, 2)
    transforms = [
        {"type": "cast", "spec": {"name": "int"}, "predicate": {"type": "table_matches", "pattern": r"shop\.broken"}}
    ]
    job = job_doc(
        kafka,
        names("dlq"),
        src,
        out,
        transforms=transforms,
        errors={"tolerance": "all", "dead_letter_topic": dlq},
        worker={"create_topics": True},
    )
    _, code, reached = run_worker(job, all_acked(src, sizes))
    assert reached and code == EXIT_OK

    coordinates = {r.value: (r.partition, r.offset) for r in consume(kafka, src, min_records=len(records))}
    dead = consume(kafka, dlq, min_records=len(bad))
    assert sorted(d.value for d in dead) == sorted(b.value for b in bad)
    for d in dead:
        original = next(b for b in bad if b.value == d.value)
        assert d.key == original.key
        headers = dict(d.headers)
        for name, value in original.headers:
            assert headers[name] == value  # original headers first, untouched
        err = {k[len(ERROR_HEADER_PREFIX) :]: v.decode() for k, v in d.headers if k.startswith(ERROR_HEADER_PREFIX)}
        partition, offset = coordinates[d.value]
        assert err["topic"] == src and err["partition"] == str(partition) and err["offset"] == str(offset)
        if d.value == bad[2].value:
            assert (err["stage"], err["transform"], err["class"]) == ("transform", "cast", "TransformError")
            assert "cannot cast column 'name'" in err["message"]
        else:
            assert (err["stage"], err["transform"], err["class"]) == ("decode", "", "DecodeError")
            assert err["message"]
    assert sorted(i for i, _, _ in debezium_rows(consume(kafka, out, min_records=len(good)))) == list(range(1, 101))
    assert committed(kafka, job["id"], src) == sizes


@pytest.mark.parametrize("processes", [1, 2], ids=["in-process", "2-processes"])
def test_tolerance_none_stops_and_commits_nothing_past_the_bad_record(
    kafka: KafkaCluster, names, processes: int
) -> None:
    src, out = names("strict.canal"), names("strict.debezium")
    records = [Record(value=canal(i, 0, "INSERT"), key=b"k") for i in range(1, 301)]
    records.insert(200, Record(value=b"not json at all", key=b"k"))
    produce(kafka, src, records, partitions=1)
    worker = {"create_topics": True, "batch_size": 50, "processes": processes}
    job = job_doc(kafka, names("strict"), src, out, errors={"tolerance": "none"}, worker=worker)

    runtime, code, reached = run_worker(job, lambda rt: False, timeout=60)
    assert not reached and code == EXIT_FAILED
    message = str(runtime.failure)
    assert f"{src}[0]@200" in message and "errors.tolerance=none" in message and "DecodeError" in message
    offsets = committed(kafka, job["id"], src)
    assert offsets.get(0, 0) <= 200  # never past the bad record
    assert offsets.get(0, 0) >= 150  # the batches before it were committed
    converted = {i for i, _, _ in debezium_rows(consume(kafka, out, min_records=1, timeout=15))}
    assert converted and max(converted) <= 200  # nothing after the bad record was produced

    # A restart stops at the same record again: the stop is deterministic.
    runtime, code, _ = run_worker(job, lambda rt: False, timeout=60)
    assert code == EXIT_FAILED and f"{src}[0]@200" in str(runtime.failure)


def test_a_route_transform_sends_each_table_to_its_own_topic(kafka: KafkaCluster, names) -> None:
    src, tag = names("multi.canal"), names("routed")
    records = [
        Record(value=canal(i, 0, "INSERT", table="items" if i % 3 else "orders"), key=b'{"id":%d}' % i)
        for i in range(1, 91)
    ]
    produce(kafka, src, records, partitions=2)
    sizes = partition_sizes(records, 2)
    job = job_doc(
        kafka,
        names("route"),
        src,
        names("unused.default"),
        transforms=[{"type": "route", "topic": tag + ".{database}.{table}"}],
        worker={"create_topics": True},
    )
    _, code, reached = run_worker(job, all_acked(src, sizes))
    assert reached and code == EXIT_OK
    items = debezium_rows(consume(kafka, f"{tag}.shop.items", min_records=60))
    orders = debezium_rows(consume(kafka, f"{tag}.shop.orders", min_records=30))
    assert sorted(i for i, _, _ in items) == [i for i in range(1, 91) if i % 3]
    assert sorted(i for i, _, _ in orders) == [i for i in range(1, 91) if not i % 3]
