"""The backfill on local[2]: files -> files, Kafka -> Kafka on the embedded broker, dead letters,
parity with the worker's conversion, DataWorks pairs across micro-batches, and resume after a kill.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from bench.codec import canal_messages
from cdc_smt.connector import kafka
from cdc_smt.transforms.model import Record
from tests.messages import tdsql_message
from tests.spark.conftest import kill_after_batch, read_tree, run_async, start_backfill, write_lines

pytestmark = pytest.mark.spark


def write_job(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def load(path: Path, **overrides: Any):
    from cdc_smt.connector.spark.settings import Overrides
    from cdc_smt.connector.spark.settings import load as load_settings

    return load_settings(path, Overrides(**overrides))


def run(spark: Any, path: Path, **overrides: Any):
    from cdc_smt.connector.spark.backfill import run as run_backfill

    job, settings = load(path, **overrides)
    return run_backfill(job, settings, spark=spark, progress_out=None)


def expected_by_record(job: Any, records: list[Record]) -> tuple[list[list[Record]], list[Any]]:
    """Outputs of each record and the dead letters, through one chain in order (what convert does)."""
    chain = job.build_chain()
    outputs, dead = [], []
    for r in records:
        result = chain.process(r)
        outputs.append(result.outputs)
        dead.extend(result.dead_letters)
    tail = chain.flush()
    if outputs:
        outputs[-1] = outputs[-1] + tail.outputs
    return outputs, dead


# -- files -> files ------------------------------------------------------------------------------


@pytest.fixture()
def canal_files(tmp_path: Path) -> Path:
    messages = canal_messages(900, seed=3)
    src = tmp_path / "in"
    write_lines(src / "a.canal.jsonl", messages[:300])
    write_lines(src / "b.canal.jsonl", messages[300:450] + [b"{not json"] + messages[450:600])
    write_lines(src / "sub" / "c.canal.jsonl", messages[600:])
    return src


def files_job(tmp_path: Path, src: Path, **extra: Any) -> Path:
    doc = {
        "id": "files",
        "source": {"format": "canal-json", "options": {"source_timezone": "Asia/Shanghai"}},
        "sink": {"format": "debezium-json"},
        "errors": {"tolerance": "all"},
        "backfill": {
            "source": {"type": "jsonl", "path": str(src), "max_files_per_batch": 1},
            "sink": {"type": "jsonl", "path": str(tmp_path / "out")},
            "checkpoint": str(tmp_path / "ckpt"),
        },
    }
    for key, value in extra.items():
        doc[key] = value
    return write_job(tmp_path / "job.yaml", doc)


def test_files_to_files_equals_the_chain_over_each_file(spark, tmp_path, canal_files):
    path = files_job(tmp_path, canal_files)
    progress = run(spark, path)
    job, _ = load(path)

    out = read_tree(tmp_path / "out")
    # One micro-batch per file (max_files_per_batch: 1), one topic directory per file stem.
    assert sorted(out) == [
        "topic=a/batch=000000/a.canal.jsonl",
        "topic=b/batch=000001/b.canal.jsonl",
        "topic=c/batch=000002/sub__c.canal.jsonl",
    ]
    for name, lines in out.items():
        stem = name.split("/")[-1].replace("sub__", "sub/").removesuffix(".jsonl")
        from cdc_smt.connector.framing import read_records

        records = [r for _, r in read_records(canal_files / f"{stem}.jsonl", False)]
        outputs, _ = expected_by_record(job, records)
        expected = [o.value for outs in outputs for o in outs if o.value is not None]
        assert lines == expected, name
    assert progress.totals.records == 901
    assert progress.totals.dead_letters == 1

    dead = read_tree(tmp_path / "out" / "_dead_letters", "batch=*/*.jsonl")
    assert list(dead) == ["batch=000001/b.canal.jsonl"]
    entry = orjson.loads(dead["batch=000001/b.canal.jsonl"][0])
    assert (entry["file"], entry["position"], entry["stage"], entry["message"]) == (
        "b.canal",
        151,
        "decode",
        "{not json",
    )


def test_a_rerun_with_the_same_checkpoint_emits_nothing_again(spark, tmp_path, canal_files):
    path = files_job(tmp_path, canal_files)
    run(spark, path)
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "out").glob("**/*.jsonl")}
    again = run(spark, path)
    assert again.totals.records == 0
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "out").glob("**/*.jsonl")} == before


def test_tolerance_none_stops_at_the_bad_line_and_names_it(spark, tmp_path, canal_files):
    from cdc_smt.connector.spark.backfill import BackfillError

    path = files_job(tmp_path, canal_files, errors={"tolerance": "none"})
    with pytest.raises(BackfillError, match=r"b\.canal: line 151: decode failed: DecodeError"):
        run(spark, path)


def test_parquet_sink_writes_flat_rows_from_unwrap(spark, tmp_path, canal_files):
    path = files_job(
        tmp_path,
        canal_files,
        sink={"format": "debezium-json", "options": {"schemas_enable": False}},
        transforms=[{"type": "unwrap", "delete_handling": "rewrite", "add_fields": ["op", "table"]}],
    )
    run(spark, path, sink_type="parquet")
    table = spark.read.parquet(str(tmp_path / "out" / "topic=a"))
    rows = table.orderBy("batch").collect()
    assert len(rows) == 300
    assert {"id", "order_no", "amount", "__op", "__table", "__deleted", "batch"} <= set(table.columns)
    first = orjson.loads(canal_messages(1, seed=3)[0])["data"][0]
    got = next(r for r in rows if r["id"] == int(first["id"]))
    assert (got["order_no"], got["__table"]) == (first["order_no"], "orders")


# -- Kafka -> Kafka ------------------------------------------------------------------------------


def kafka_job(tmp_path: Path, broker: Any, name: str, *, source_format: str = "canal-json", batch: int = 700) -> Path:
    return write_job(
        tmp_path / f"{name}.yaml",
        {
            "id": name,
            "kafka": {"bootstrap_servers": broker.bootstrap},
            "source": {"topics": [f"{name}.in"], "format": source_format},
            "sink": {"topic": f"{name}.out", "format": "debezium-json"},
            "errors": {"tolerance": "all", "dead_letter_topic": f"{name}.dlq"},
            "backfill": {"source": {"max_records_per_batch": batch}, "checkpoint": str(tmp_path / f"{name}-ckpt")},
        },
    )


def produce_source(broker: Any, name: str, values: list[bytes], partitions: int = 2) -> list[Record]:
    """Keyed records (40 keys) spread over ``partitions``, plus topics for the output and the dead letters."""
    from cdc_smt.connector import kafka

    run_async(kafka.create_topics(broker.bootstrap, {f"{name}.in": partitions, f"{name}.out": 3, f"{name}.dlq": 1}))
    records = [
        Record(value=v, key=b'{"id":%d}' % (i % 40), timestamp=1_700_000_000_000 + i) for i, v in enumerate(values)
    ]
    run_async(kafka.produce_records(broker.bootstrap, f"{name}.in", records))
    return records


def worker_output(job: Any, broker: Any, topics: list[str]) -> dict[tuple[str, int], list[tuple]]:
    """What the worker produces from the source topic: its own Converter, one chain per partition."""
    from cdc_smt.connector import kafka
    from cdc_smt.connector.worker.pipeline import Converter

    source = run_async(kafka.consume_all(broker.bootstrap, job.source.topics[0]))
    counts = run_async(kafka.partition_counts(broker.bootstrap, topics))
    converter = Converter(job, counts)
    groups: dict[tuple[str, int], list[tuple]] = {}
    for p in sorted({r.partition for r in source}):
        batch = converter.convert(job.build_chain(), job.source.topics[0], p, [r for r in source if r.partition == p])
        converter.place(batch, p)
        for key, rows in batch.groups.items():
            groups.setdefault(key, []).extend((k, v, ts, list(h or [])) for k, v, ts, h in rows)
    return groups


def per_key(groups: dict[tuple[str, int], list[tuple]]) -> dict[tuple[str, int, bytes | None], list[tuple]]:
    out: dict[tuple[str, int, bytes | None], list[tuple]] = {}
    for (topic, partition), rows in groups.items():
        for row in rows:
            out.setdefault((topic, partition, row[0]), []).append(row)
    return out


def topic_contents(broker: Any, topic: str) -> dict[tuple[str, int], list[tuple]]:
    from cdc_smt.connector import kafka

    out: dict[tuple[str, int], list[tuple]] = {}
    for r in run_async(kafka.consume_all(broker.bootstrap, topic)):
        out.setdefault((topic, r.partition), []).append((r.key, r.value, r.timestamp, list(r.headers)))
    return out


@pytest.fixture(scope="module")
def kafka_run(spark, broker, tmp_path_factory):
    """One Kafka -> Kafka backfill (several micro-batches, one bad record) shared by the tests below."""
    tmp = tmp_path_factory.mktemp("k2k")
    values = canal_messages(2000, seed=5)
    values.insert(777, b'{"broken": ')
    produce_source(broker, "k2k", values)
    path = kafka_job(tmp, broker, "k2k")
    progress = run(spark, path)
    job, _ = load(path)
    return job, progress


def test_kafka_to_kafka_runs_in_several_micro_batches_and_reads_everything(kafka_run):
    _, progress = kafka_run
    assert progress.totals.records == 2001
    assert progress.totals.batches >= 3
    assert progress.totals.dead_letters == 1


def test_kafka_output_equals_the_workers_record_for_record_per_partition(kafka_run, broker):
    job, _ = kafka_run
    expected = worker_output(job, broker, ["k2k.out", "k2k.dlq"])
    got = {**topic_contents(broker, "k2k.out"), **topic_contents(broker, "k2k.dlq")}
    assert sorted(got) == sorted(expected)
    # Two source partitions feed each output partition from two tasks, so only the order per key is defined.
    assert per_key(got) == per_key(expected)
    assert sum(len(v) for k, v in got.items() if k[0] == "k2k.out") > 2000


def test_dead_letters_reach_the_topic_with_error_headers(kafka_run, broker):
    rows = topic_contents(broker, "k2k.dlq")[("k2k.dlq", 0)]
    assert len(rows) == 1
    key, value, _, headers = rows[0]
    h = dict(headers)
    assert value == b'{"broken": '
    assert h["cdc_smt.error.stage"] == b"decode" and h["cdc_smt.error.topic"] == b"k2k.in"
    assert h["cdc_smt.error.class"] == b"DecodeError"


def test_dataworks_update_pairs_split_by_micro_batches_equal_the_workers(spark, broker, tmp_path):
    """DataWorks writes an update as UPDATE_BEFOR + UPDATE_AFTER; batches of 5 records cut pairs in two."""
    from cdc_smt.transforms.formats import get_codec

    canal, dataworks = get_codec("canal-json"), get_codec("dataworks-json")
    values = []
    for m in canal_messages(40, seed=9):
        for event in canal.decode(Record(value=m)):
            values.extend(r.value for r in dataworks.encode(event))
    befores = [i for i, v in enumerate(values) if b'"UPDATE_BEFOR"' in v]
    assert any(i % 5 == 4 for i in befores)  # some pair straddles a micro-batch boundary
    produce_source(broker, "dw", values, partitions=1)
    path = kafka_job(tmp_path, broker, "dw", source_format="dataworks-json", batch=5)
    progress = run(spark, path)
    job, _ = load(path)
    assert progress.totals.batches == -(-len(values) // 5)
    expected = worker_output(job, broker, ["dw.out"])
    got = topic_contents(broker, "dw.out")
    assert got == expected
    # No half-updates: every update in the output has both images.
    updates = [orjson.loads(v) for rows in got.values() for _, v, _, _ in rows if v and b'"op":"u"' in v]
    assert len(updates) == len(befores)
    assert all(u["before"] and u["after"] for u in (x.get("payload", x) for x in updates))


def test_time_range_selects_records_by_timestamp(spark, broker, tmp_path):
    values = canal_messages(300, seed=11)
    produce_source(broker, "tr", values, partitions=1)
    path = kafka_job(tmp_path, broker, "tr")
    # timestamps are 1_700_000_000_000 + i
    progress = run(spark, path, start=_time(1_700_000_000_100), until=_time(1_700_000_000_250))
    assert progress.totals.records == 150


def _time(ms: int):
    from cdc_smt.connector.spark.settings import Position

    return Position("time", time_ms=ms)


# -- resume after a kill ---------------------------------------------------------------------------


def test_resume_after_kill_loses_nothing_and_does_not_resend_finished_batches(spark, broker, tmp_path):
    values = canal_messages(3000, seed=13)
    produce_source(broker, "rs", values)
    path = kafka_job(tmp_path, broker, "rs", batch=300)
    job, settings = load(path)

    kill_after_batch(start_backfill(path))

    committed = sorted(int(p.name) for p in (Path(settings.checkpoint) / "commits").iterdir() if p.name.isdigit())
    assert committed and committed[-1] < 9, committed  # interrupted well before the end (10 batches)
    done_offsets = _committed_end(Path(settings.checkpoint), committed[-1])

    progress = run(spark, path)
    assert 0 < progress.totals.records < 3000  # the second run resumed, it did not start over

    expected = worker_output(job, broker, ["rs.out"])
    got = topic_contents(broker, "rs.out")
    got_by_key = per_key(got)
    for key, rows in per_key(expected).items():
        wanted = [(k, v) for k, v, _, _ in rows if v is not None]
        have = [(k, v) for k, v, _, _ in got_by_key.get(key, []) if v is not None]
        assert set(wanted) <= set(have), "lost an output"
        # Order per key survives the resume: first occurrences follow the worker's order.
        assert list(dict.fromkeys(have)) == wanted
    # Outputs of records in committed batches were sent exactly once.
    sent = Counter(v for rows in got.values() for _, v, _, _ in rows if v is not None)
    chain = job.build_chain()
    finished = [
        r for r in run_async(kafka.consume_all(broker.bootstrap, "rs.in")) if r.offset < done_offsets[r.partition]
    ]
    assert finished
    for record in finished:
        for out in chain.process(record).outputs:
            if out.value is not None:
                assert sent[out.value] == 1, (record.partition, record.offset)


def _committed_end(checkpoint: Path, batch_id: int) -> dict[int, int]:
    """Source offsets (per partition) covered by committed batches, from Spark's offset log."""
    lines = (checkpoint / "offsets" / str(batch_id)).read_text().splitlines()
    offsets = orjson.loads(lines[-1])
    ((_, parts),) = offsets.items()
    return {int(p): o for p, o in parts.items()}


# -- the record-rows path (Spark's own Kafka source has the same columns) --------------------------


def test_kafka_source_rows_have_sparks_kafka_columns_and_feed_the_same_task(kafka_run, spark, broker, tmp_path):
    """``emit=records``: what ``format("kafka")`` yields; the task turns those rows into the same output."""
    from functools import partial

    from cdc_smt.connector.kafka import connection_json
    from cdc_smt.connector.spark import datasource
    from cdc_smt.connector.spark.backfill import map_in_arrow
    from cdc_smt.connector.spark.process import SUMMARY_DDL, TaskPlan, run_task
    from cdc_smt.connector.spark.settings import SinkSpec

    job, _ = kafka_run
    datasource.register(spark)
    df = (
        spark.read.format(datasource.KAFKA_SOURCE)
        .option("connection.secret", connection_json(job.kafka))
        .option("topics", "k2k.in")
        .load()
    )
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
    rows = df.select("partition", "offset", "value").collect()
    source = run_async(kafka.consume_all(broker.bootstrap, "k2k.in"))
    assert sorted((r.partition, r.offset, r.value) for r in rows) == [(r.partition, r.offset, r.value) for r in source]

    plan = TaskPlan(
        job=job,
        batch_id=0,
        sink=SinkSpec("jsonl", str(tmp_path / "out")),
        dead_letters=SinkSpec("jsonl", str(tmp_path / "dl")),
    )
    summary = map_in_arrow(df, partial(run_task, plan), SUMMARY_DDL).collect()
    assert sum(s.records for s in summary) == len(source)
    for p in (0, 1):
        outputs, _ = expected_by_record(job, [r for r in source if r.partition == p])
        expected = [o.value for outs in outputs for o in outs if o.value is not None]
        assert read_tree(tmp_path / "out")[f"topic=k2k.out/batch=000000/k2k.in-{p}.jsonl"] == expected


def test_avro_container_files_keep_their_kafka_coordinates(spark, tmp_path):
    from cdc_smt.connector.framing import write_records

    values = canal_messages(50, seed=17)
    src = tmp_path / "in"
    src.mkdir()
    records = [
        Record(
            value=v, key=b"k%d" % i, topic="shop.canal", partition=3, offset=100 + i, timestamp=1_700_000_000_000 + i
        )
        for i, v in enumerate(values)
    ]
    records[10] = Record(value=b"nope", topic="shop.canal", partition=3, offset=110)
    write_records(src / "dump.avro", records, True)
    path = files_job(tmp_path, src)
    progress = run(spark, path, source_type="avro")
    assert progress.totals.records == 50 and progress.totals.dead_letters == 1
    out = read_tree(tmp_path / "out")
    assert list(out) == ["topic=shop.canal/batch=000000/dump.jsonl"]  # {source_topic} from the datum
    assert len(out["topic=shop.canal/batch=000000/dump.jsonl"]) > 45
    entry = orjson.loads(read_tree(tmp_path / "out" / "_dead_letters", "batch=*/*.jsonl")["batch=000000/dump.jsonl"][0])
    assert (entry["file"], entry["position"], entry["message"]) == ("dump", 11, "nope")
    assert (entry["topic"], entry["partition"], entry["offset"]) == ("shop.canal", 3, 110)


# -- DDL before a slice: the first pass ------------------------------------------------------------


def _tdsql(kind: str, code: int, i: int, **fields: Any) -> bytes:
    return orjson.dumps(tdsql_message(kind, code, begintime=1718000000 + i, gtid=f"0-1-{i}", **fields))


@pytest.mark.parametrize("ddl", ["first-pass", "none"])
def test_ddl_first_pass_names_rows_of_later_micro_batches(spark, broker, tmp_path, ddl):
    """TDSQL rows are positional: only the CREATE TABLE at offset 0 names them. Micro-batches of
    10 records start after it; the first pass finds it and every task replays it first."""
    name = f"ddl-{ddl.replace('-', '')}"
    values = [_tdsql("query", 2, 0, sql="create table items (id int primary key, name varchar(20))")]
    values += [_tdsql("insert", 23, i, where=[], field=[str(i), f"'n{i}'"]) for i in range(1, 61)]
    produce_source(broker, name, values, partitions=1)
    path = kafka_job(tmp_path, broker, name, source_format="tdsql-binlog-json", batch=10)
    doc = yaml.safe_load(path.read_text())
    doc["backfill"]["state"] = {"ddl": ddl, "warmup": 0}
    write_job(path, doc)
    progress = run(spark, path)
    assert progress.totals.batches == 7
    got = topic_contents(broker, f"{name}.out")
    values_out = [orjson.loads(v) for rows in got.values() for _, v, _, _ in rows if v]
    named = sorted(v.get("payload", v)["after"]["id"] for v in values_out if v.get("payload", v).get("after"))
    dead = topic_contents(broker, f"{name}.dlq")
    if ddl == "first-pass":
        assert named == list(range(1, 61)) and not dead
        job, _ = load(path)
        # One chain over the whole partition (the DDL itself goes to Debezium's schema-change topic).
        expected = worker_output(job, broker, [f"{name}.out", "cdc_smt"])
        assert got == {k: v for k, v in expected.items() if k[0] == f"{name}.out"}
    else:  # without it, only the micro-batch holding the DDL can name its rows
        assert named == list(range(1, 10))
        assert sum(len(rows) for rows in dead.values()) == 51
