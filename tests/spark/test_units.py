"""Backfill parts that need no Spark session: settings, planning arithmetic, sinks, error text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from cdc_smt.connector.spark.datasource import next_offsets
from cdc_smt.connector.spark.settings import (
    Overrides,
    Position,
    build_settings,
    parse_time,
    position_from_flag,
    validate_section,
)
from cdc_smt.connector.spark.sinks import ParquetWriter, clear_batch, dead_letter_entry, rows_to_table
from cdc_smt.transforms.chain import DeadLetter
from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.model import Record

JOB = {"id": "t", "source": {"format": "canal-json"}, "sink": {"format": "debezium-json"}}


NO_OVERRIDES = Overrides()


def settings(section: dict, overrides: Overrides = NO_OVERRIDES, job: dict = JOB):
    validate_section(section)
    return build_settings(section, job, overrides)


# -- settings ------------------------------------------------------------------------------------


def test_defaults_read_kafka_and_write_kafka():
    s = settings({"checkpoint": "/c"})
    assert (s.source.type, s.sink.type, s.dead_letters.type) == ("kafka", "kafka", "kafka")
    assert (s.source.start.kind, s.source.until.kind) == ("earliest", "latest")
    assert s.master == "local[*]" and s.state.warmup == 1


def test_paths_imply_files_and_dead_letters_beside_the_output():
    s = settings({"checkpoint": "/c"}, Overrides(source_path="in", sink_path="out"))
    assert (s.source.type, s.sink.type) == ("jsonl", "jsonl")
    assert (s.dead_letters.type, s.dead_letters.path) == ("jsonl", str(Path("out") / "_dead_letters"))
    assert not s.needs_kafka


def test_job_dead_letter_topic_wins_over_files_when_no_path_given():
    job = {**JOB, "errors": {"tolerance": "all", "dead_letter_topic": "dlq"}}
    s = settings({"checkpoint": "/c", "sink": {"type": "parquet", "path": "out"}}, job=job)
    assert s.dead_letters.type == "kafka" and s.needs_kafka


def test_flags_override_the_section():
    section = {"checkpoint": "/c", "master": "local[1]", "source": {"from": {"offsets": {"t": {"0": 5}}}}}
    s = settings(section, Overrides(master="local[2]", start=Position("time", time_ms=7), max_records_per_batch=9))
    assert s.master == "local[2]" and s.source.start == Position("time", time_ms=7)
    assert s.source.max_records_per_batch == 9


@pytest.mark.parametrize(
    ("section", "where"),
    [
        ({"checkpoint": "/c", "sink": {"type": "jsonl"}}, "backfill.sink.path"),
        ({"source": {"type": "avro"}, "checkpoint": "/c"}, "backfill.source.path"),
        ({}, "backfill.checkpoint"),
        ({"checkpoint": "/c", "sink": {"kind": "x"}}, "backfill.sink.kind"),
        ({"checkpoint": "/c", "source": {"from": "yesterday"}}, "backfill.source.from"),
        ({"checkpoint": "/c", "source": {"type": "jsonl", "path": "x", "until": {"time": 5}}}, "backfill.source"),
        ({"checkpoint": "/c", "source": {"type": "spark-kafka"}}, "backfill.source.type"),
    ],
)
def test_bad_sections_name_the_setting(section, where):
    with pytest.raises(ConfigError) as err:
        settings(section)
    assert err.value.path == where


def test_positions_from_flags():
    assert position_from_flag("earliest", "--x") == Position("earliest")
    assert position_from_flag('{"t": {"1": 40}}', "--x") == Position("offsets", {"t": {1: 40}})
    assert position_from_flag("2024-05-01T08:00:00+08:00", "--x").time_ms == 1714521600000
    assert parse_time("2024-05-01", "x") == 1714521600000  # naive means UTC
    assert parse_time(1714521600000, "x") == 1714521600000
    with pytest.raises(ConfigError):
        position_from_flag("latest", "--from-time", time_only=True)
    with pytest.raises(ConfigError):
        position_from_flag("2024-05-01", "--from-offsets", offsets_only=True)
    round_trip = Position("offsets", {"t": {0: 1, 3: -1}})
    assert Position.from_json(round_trip.to_json()) == round_trip


# -- micro-batch planning -------------------------------------------------------------------------


def test_next_offsets_shares_the_allowance_by_what_is_left():
    current = {("t", 0): 0, ("t", 1): 100, ("t", 2): 50}
    target = {("t", 0): 300, ("t", 1): 200, ("t", 2): 50}
    end = next_offsets(current, target, 200)
    assert end == {("t", 0): 150, ("t", 1): 150, ("t", 2): 50}
    assert next_offsets(current, target, None) == target
    assert next_offsets(target, target, 10) == target


def test_next_offsets_uses_the_whole_allowance_despite_rounding():
    current = {("t", p): 0 for p in range(3)}
    target = {("t", p): 100 for p in range(3)}
    end = next_offsets(current, target, 200)
    assert sum(end.values()) == 200 and all(66 <= o <= 68 for o in end.values())


def test_next_offsets_always_moves_every_unfinished_partition():
    current = {("t", 0): 0, ("t", 1): 0}
    target = {("t", 0): 1_000_000, ("t", 1): 1}
    end = next_offsets(current, target, 10)
    assert end[("t", 1)] == 1 and 0 < end[("t", 0)] <= 10


def test_next_offsets_ignores_partitions_outside_the_plan():
    assert next_offsets({("t", 0): 5}, {("t", 0): 9, ("t", 1): 9}, None) == {("t", 0): 9}


# -- sinks ---------------------------------------------------------------------------------------


def test_rows_to_table_types_columns_and_falls_back_to_json_text():
    table = rows_to_table(
        [
            {"id": 1, "x": 1.5, "s": "a", "n": None, "mixed": 1, "obj": {"a": 1}},
            {"id": 2, "x": 2, "mixed": "b", "extra": True},
        ]
    )
    cols = {f.name: str(f.type) for f in table.schema}
    assert cols == {
        "id": "int64",
        "x": "double",
        "s": "string",
        "n": "string",
        "mixed": "string",
        "obj": "string",
        "extra": "bool",
    }
    assert table.column("mixed").to_pylist() == ["1", "b"]
    assert table.column("obj").to_pylist() == ['{"a":1}', None]


def test_parquet_writer_rolls_to_a_new_file_when_the_schema_changes(tmp_path):
    import pyarrow.parquet as pq

    w = ParquetWriter(tmp_path / "s.parquet")
    w.write([b'{"id": 1}', None])
    w.write([b'{"id": 2}'])
    w.write([b'{"other": "x"}'])
    w.commit()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s-0001.parquet", "s.parquet"]
    assert pq.read_table(tmp_path / "s.parquet").column("id").to_pylist() == [1, 2]
    assert w.tombstones == 1


def test_clear_batch_removes_only_that_batch(tmp_path):
    for d in ("topic=a/batch=000001", "topic=a/batch=000002", "topic=b/batch=000001", "batch=000001"):
        (tmp_path / d).mkdir(parents=True)
    clear_batch(str(tmp_path), 1)
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.glob("**/batch=*")) == ["topic=a/batch=000002"]


def test_dead_letter_entry_keeps_the_message_and_its_coordinates():
    dl = DeadLetter(Record(value=b"\xff\x00", key=b"k", headers=[("h", b"v")]), "decode", "DecodeError", "bad")
    entry = dead_letter_entry(dl, {"topic": "t", "partition": 1, "offset": 7})
    assert entry["topic"] == "t" and entry["offset"] == 7 and entry["error_class"] == "DecodeError"
    assert entry["message_base64"] == "/wA=" and entry["key_base64"] == "aw=="
    assert orjson.loads(orjson.dumps(entry))["headers"] == [["h", "dg=="]]


# -- error text ------------------------------------------------------------------------------------


def test_explain_finds_the_halting_record_inside_a_spark_trace():
    from cdc_smt.connector.spark.backfill import explain

    trace = (
        "pyspark.errors.exceptions.captured.StreamingQueryException: [STREAM_FAILED] ...\n"
        "Traceback (most recent call last):\n  File 'x', line 1\n"
        "cdc_smt.connector.spark.process.BackfillHalted: "
        "CDC-SMT-HALT: in.jsonl: line 7: decode failed: DecodeError: bad\n"
        "\tat org.apache.spark.Foo\n"
    )
    assert explain(RuntimeError(trace)) == (
        "stopped at a record that failed (errors.tolerance: none): in.jsonl: line 7: decode failed: DecodeError: bad"
    )
    other = (
        "pyspark.errors.exceptions.captured.PythonException: wrapper:\nTraceback:\n"
        "cdc_smt.connector.spark.kafkaio.KafkaRangeError: t[0]: gone\n"
    )
    assert explain(RuntimeError(other)) == "cdc_smt.connector.spark.kafkaio.KafkaRangeError: t[0]: gone"


# -- exactly-once: whose open transaction a marker read may end --------------------------------------


def _holder(key: bytes | None, value: dict | None) -> Any:
    from cdc_smt.connector.kafka.markers import OpenMarker

    return OpenMarker(7, key, value)


def _tx(stream: str = "a", batch: int = 3, attempt: str | None = "now") -> Any:
    from cdc_smt.connector.spark.sinks import Transactional

    return Transactional("run1", stream, batch, "job.backfill-commits", 900, attempt)


@pytest.mark.parametrize("batch", [0, 2])
def test_an_earlier_batchs_open_marker_is_ended_at_once(batch: int) -> None:
    from cdc_smt.connector.spark.sinks import stale_writer, transactional_id

    holder = _holder(b"run1/part-1.jsonl", {"batch": batch, "stream": "part-1.jsonl"})
    assert stale_writer(holder, _tx(), held_s=0.0, live_s=120.0) == transactional_id("run1", "part-1.jsonl")


def test_this_batchs_open_marker_is_waited_for_as_long_as_a_live_writer_may_take() -> None:
    from cdc_smt.connector.spark.sinks import stale_writer, transactional_id

    holder = _holder(b"run1/b", {"batch": 3})
    assert stale_writer(holder, _tx(), held_s=119.9, live_s=120.0) is None
    assert stale_writer(holder, _tx(), held_s=120.0, live_s=120.0) == transactional_id("run1", "b")
    later = _holder(b"run1/b", {"batch": 4})  # a later batch than this task's: only its age ends it
    assert stale_writer(later, _tx(), held_s=5.0, live_s=120.0) is None


def test_this_batchs_open_marker_of_a_killed_invocation_is_ended_at_once() -> None:
    from cdc_smt.connector.spark.sinks import stale_writer, transactional_id

    orphan = _holder(b"run1/b", {"batch": 3, "attempt": "killed"})
    assert stale_writer(orphan, _tx(), held_s=0.0, live_s=120.0) == transactional_id("run1", "b")
    concurrent = _holder(b"run1/b", {"batch": 3, "attempt": "now"})
    assert stale_writer(concurrent, _tx(), held_s=0.0, live_s=120.0) is None
    # Without both attempts (markers of an older cdc-smt, a task plan without one) only age tells.
    assert stale_writer(_holder(b"run1/b", {"batch": 3}), _tx(), held_s=0.0, live_s=120.0) is None
    assert stale_writer(orphan, _tx(attempt=None), held_s=0.0, live_s=120.0) is None


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (b"run2/b", {"batch": 0}),  # another run's writer
        (b"run1/a", {"batch": 0}),  # this task's own stream: a newer producer of its id
        (None, {"batch": 0}),
        (b"run1/b", None),  # not a marker object
        (b"run1/b", {"stream": "b"}),  # no batch
        (b"run1/b", {"batch": "0"}),
        (b"run1", {"batch": 0}),  # no stream
    ],
)
def test_a_holder_that_is_not_this_runs_other_writer_is_never_ended(key: bytes | None, value: dict | None) -> None:
    from cdc_smt.connector.spark.sinks import stale_writer

    assert stale_writer(_holder(key, value), _tx(), held_s=1e9, live_s=120.0) is None


def test_a_marker_read_waits_longer_than_a_live_writer_may_hold_it() -> None:
    from cdc_smt.connector.kafka.markers import STALL_S
    from cdc_smt.connector.spark.sinks import live_marker_s, marker_read_timeout_s

    for delivery in (1.0, 60.0, 90.0):
        assert live_marker_s(delivery) >= 2 * delivery  # the marker sent, then the commit, each ridden out
        assert marker_read_timeout_s(delivery) >= live_marker_s(delivery) + delivery + STALL_S


def test_coordinator_lookups_that_lose_their_connection_are_retried_and_other_errors_are_not() -> None:
    import asyncio

    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaConnectionError, KafkaError, NodeNotReadyError, TransactionalIdAuthorizationFailed

    from cdc_smt.connector.kafka.transactions import retry_coordinator_lookups

    async def go() -> None:
        producer = AIOKafkaProducer(bootstrap_servers="127.0.0.1:9", transactional_id="t", retry_backoff_ms=1)
        calls: list[str] = []
        failures = [KafkaConnectionError("closed"), NodeNotReadyError(1), TransactionalIdAuthorizationFailed("t")]

        async def lookup(kind: Any, key: Any) -> int:
            calls.append(key)
            if failures:
                err = failures.pop(0)
                raise KafkaError(repr(err)) from err  # as aiokafka's Sender._find_coordinator wraps them
            return 1

        producer._sender._find_coordinator = lookup
        sender = retry_coordinator_lookups(producer)._sender
        try:
            with pytest.raises(KafkaError):  # the third failure is not about the connection: raised
                await sender._find_coordinator(1, "t")
            assert len(calls) == 3
            assert await sender._find_coordinator(1, "t") == 1
        finally:
            await producer.stop()

    asyncio.run(go())
