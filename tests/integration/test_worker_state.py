"""Chain state survives a restart through changelog-backed Faust tables.

A TDSQL stream names its positional rows only through DDL seen earlier in the
stream, and DataWorks holds an UPDATE_BEFOR half back for its UPDATE_AFTER.
Both are per-partition state; these tests stop the worker between the state
and the records that need it, start a new worker of the same job, and check
the second worker continues exactly where the first one stopped.
"""

from __future__ import annotations

import orjson
import pytest

from cdc_smt.connector.worker.state import StateStore, decode_snapshots
from cdc_smt.transforms.model import Record
from tests.integration.helpers import KafkaCluster, committed, consume, job_doc, partition_sizes, produce
from tests.integration.test_worker import all_acked, run_worker
from tests.messages import tdsql_message

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

KEY = b"shop.items"  # one key: every message in one partition, in order


def tdsql(kind: str, code: int, i: int, **fields) -> Record:
    msg = tdsql_message(kind, code, begintime=1718000000 + i, gtid=f"0-2670193178-{726233561 + i}", **fields)
    return Record(value=orjson.dumps(msg), key=KEY)


def tdsql_insert(i: int) -> Record:
    return tdsql("insert", 23, i, where=[], field=[str(i), f"'item {i}'", f"{i}.25"])


def stateful_job(kafka: KafkaCluster, names, job_id: str, src: str, fmt: str, processes: int = 1) -> dict:
    """A ``fmt`` -> debezium-json job that dead-letters (so a lost state shows as dead letters)."""
    return job_doc(
        kafka,
        names(job_id),
        src,
        names("items.out"),
        source={"topics": [src], "format": fmt},
        errors={"tolerance": "all", "dead_letter_topic": names("items.dlq")},
        worker={"create_topics": True, "processes": processes},
    )


def after_rows(kafka: KafkaCluster, topic: str, n: int) -> dict[int, dict]:
    rows = {}
    for r in consume(kafka, topic, min_records=n):
        if r.value is None:
            continue
        v = orjson.loads(r.value)
        v = v.get("payload", v)
        if v.get("after"):
            rows[v["after"]["id"]] = v["after"]
    return rows


@pytest.mark.parametrize("processes", [1, 2], ids=["in-process", "2-processes"])
def test_a_restarted_worker_keeps_the_catalog_learned_from_ddl(kafka: KafkaCluster, names, processes: int) -> None:
    src = names("items.tdsql")
    first = [tdsql("query", 2, 0, sql="create table items (id int primary key, name varchar(20), price decimal(10,2))")]
    first += [tdsql_insert(i) for i in range(1, 21)]
    produce(kafka, src, first, partitions=2)
    job = stateful_job(kafka, names, "state", src, "tdsql-binlog-json", processes=processes)
    runtime, code, reached = run_worker(job, all_acked(src, partition_sizes(first, 2)))
    assert reached and code == 0
    store = runtime.pipeline.state_store
    assert isinstance(store, StateStore) and list(store.tables) == [2]
    part = next(p for p, n in partition_sizes(first, 2).items() if n)
    assert committed(kafka, job["id"], src)[part] == len(first)

    # The snapshot went to the table's changelog topic, keyed by source partition.
    changelog = f"{job['id']}-chain-state-p2-changelog"
    [snap] = [r for r in consume(kafka, changelog, min_records=1) if r.key == f"{src}:{part}".encode()][-1:]
    [(offset, state)] = decode_snapshots(snap.value)[-1:]
    assert offset == len(first)
    assert [t["table"] for t in orjson.loads(state)["catalog"]["tables"]] == ["items"]

    # No DDL after the restart: only the restored catalog can name these rows.
    second = [tdsql_insert(i) for i in range(21, 31)]
    produce(kafka, src, second, partitions=2)
    sizes = partition_sizes(first + second, 2)
    _, code, reached = run_worker(job, all_acked(src, sizes))
    assert reached and code == 0
    rows = after_rows(kafka, job["sink"]["topic"], 30)
    assert sorted(rows) == list(range(1, 31))
    assert rows[25]["name"] == "item 25"
    assert consume(kafka, job["errors"]["dead_letter_topic"], min_records=0, timeout=3) == []


DW_COLUMNS = [{"name": "id", "type": "LONG"}, {"name": "name", "type": "STRING"}]


def dataworks(op: str, seq: str, before: dict | None = None, after: dict | None = None) -> Record:
    msg = {
        "schema": {
            "dataColumn": DW_COLUMNS,
            "primaryKey": ["id"],
            "source": {"dbType": "MySQL", "dbName": "shop", "tableName": "items"},
        },
        "payload": {
            "before": None if before is None else {"dataColumn": before},
            "after": None if after is None else {"dataColumn": after},
            "sequenceId": seq,
            "timestamp": {"eventTime": 1620458077000, "systemTime": 1620458077779, "checkpointTime": 1620458077000},
            "op": op,
            "ddl": None,
        },
        "version": "0.0.1",
    }
    return Record(value=orjson.dumps(msg), key=KEY)


def test_a_held_back_update_half_is_paired_after_a_restart(kafka: KafkaCluster, names) -> None:
    src = names("items.dataworks")
    first = [
        dataworks("INSERT", "1", after={"id": 1, "name": "old"}),
        dataworks("UPDATE_BEFOR", "2", before={"id": 1, "name": "old"}),
    ]
    produce(kafka, src, first, partitions=1)
    job = stateful_job(kafka, names, "halves", src, "dataworks-json")
    _, code, reached = run_worker(job, all_acked(src, {0: 2}))
    assert reached and code == 0
    # The held-back half's offset is committed: the state table carries the half.
    assert committed(kafka, job["id"], src)[0] == 2
    assert len([r for r in consume(kafka, job["sink"]["topic"], min_records=1) if r.value is not None]) == 1

    produce(kafka, src, [dataworks("UPDATE_AFTER", "2", after={"id": 1, "name": "new"})], partitions=1)
    _, code, reached = run_worker(job, all_acked(src, {0: 3}))
    assert reached and code == 0
    values = [orjson.loads(r.value) for r in consume(kafka, job["sink"]["topic"], min_records=2) if r.value is not None]
    ops = [v.get("payload", v)["op"] for v in values]
    assert ops == ["c", "u"]
    update = values[1].get("payload", values[1])
    assert update["before"]["name"] == "old" and update["after"]["name"] == "new"
