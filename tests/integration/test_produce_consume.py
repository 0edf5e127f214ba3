"""``cdc-smt produce`` / ``cdc-smt consume``: test records onto a topic and back, as a user runs them."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from cdc_smt.transforms.model import Record
from tests.integration.helpers import ROOT, KafkaCluster, consume, produce

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

CLI = [sys.executable, "-m", "cdc_smt.connector.cli"]
BINARY = bytes(range(256))  # not UTF-8: an Avro datum, say


def cdc_smt(kafka: KafkaCluster, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """The command line, with the broker given the documented way ($CDC_SMT_BOOTSTRAP)."""
    env = {**os.environ, "CDC_SMT_BOOTSTRAP": kafka.bootstrap}
    return subprocess.run([*CLI, *args], input=stdin, capture_output=True, timeout=120, env=env, cwd=ROOT)


def lines(data: bytes) -> list[dict]:
    return [orjson.loads(line) for line in data.splitlines()]


RECORDS = [
    {"key": "k1", "value": "first", "headers": [["source", "test"], ["empty", None]], "partition": 1,
     "timestamp": 1_700_000_000_000},
    {"key": {"id": 7}, "value": {"op": "c", "after": {"id": 7}}},  # JSON key and value, written compactly
    {"key": "k3", "value": None, "partition": 0},  # a tombstone
    {"value_base64": base64.b64encode(BINARY).decode(), "headers_base64": [["raw", base64.b64encode(b"\xff").decode()]],
     "partition": 1},
]  # fmt: skip


def test_records_round_trip_through_a_topic(kafka: KafkaCluster, names, tmp_path: Path) -> None:
    topic, copy = names("records"), names("records-copy")
    src = tmp_path / "in.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in RECORDS))
    done = cdc_smt(kafka, "produce", "--topic", topic, "--partitions", "2", str(src))
    assert done.returncode == 0, done.stderr
    assert done.stderr.decode().splitlines()[-1] == f"produced 4 records to {topic}"

    got = cdc_smt(kafka, "consume", topic, "--from-beginning", "--max-messages", "4", "--timeout", "30")
    assert got.returncode == 0, got.stderr
    out = lines(got.stdout)
    by_key = {(r.get("key"), r.get("value")): r for r in out}
    first = by_key[("k1", "first")]
    assert (first["topic"], first["partition"], first["timestamp"]) == (topic, 1, 1_700_000_000_000)
    assert first["headers"] == [["source", "test"], ["empty", ""]]
    assert by_key[('{"id":7}', '{"op":"c","after":{"id":7}}')]["headers"] == []
    assert by_key[("k3", None)]["partition"] == 0  # the tombstone: a null value
    (binary,) = [r for r in out if "value_base64" in r]
    assert base64.b64decode(binary["value_base64"]) == BINARY and binary["key"] is None
    assert binary["headers_base64"] == [["raw", base64.b64encode(b"\xff").decode()]]
    for p in (0, 1):  # every record once: each partition's offsets from 0, no gaps
        offsets = sorted(r["offset"] for r in out if r["partition"] == p)
        assert offsets == list(range(len(offsets)))
    assert got.stderr.decode().splitlines()[-1] == f"consumed 4 records from {topic}"

    # What consume wrote can be produced again (to another topic): the same records arrive.
    again = cdc_smt(kafka, "produce", "--topic", copy, "--partitions", "2", stdin=got.stdout)
    assert again.returncode == 0, again.stderr
    copied = consume(kafka, copy, min_records=4, timeout=30)
    original = consume(kafka, topic, min_records=4, timeout=30)
    strip = lambda r: (r.partition, r.offset, r.key, r.value, r.headers, r.timestamp)  # noqa: E731
    assert sorted(map(strip, copied), key=repr) == sorted(map(strip, original), key=repr)


def test_message_values_in_and_out(kafka: KafkaCluster, names, tmp_path: Path) -> None:
    """--values: a file convert reads goes onto a topic, and comes back line for line."""
    topic = names("canal")
    src = ROOT / "examples" / "data" / "orders.canal.jsonl"
    done = cdc_smt(kafka, "produce", "-t", topic, "--partitions", "1", "--values", str(src))
    assert done.returncode == 0, done.stderr
    back = tmp_path / "back.jsonl"
    got = cdc_smt(kafka, "consume", topic, "--from-beginning", "--values", "--timeout", "3", "-o", str(back))
    assert got.returncode == 0, got.stderr
    assert back.read_bytes().splitlines() == [ln for ln in src.read_bytes().splitlines() if ln.strip()]
    # --base64 writes every field as base64, for binary formats.
    b64 = cdc_smt(kafka, "consume", topic, "--from-beginning", "--base64", "--max-messages", "1", "--timeout", "30")
    (rec,) = lines(b64.stdout)
    assert base64.b64decode(rec["value_base64"]) == src.read_bytes().splitlines()[0] and "value" not in rec


def test_consume_starts_at_the_end_without_from_beginning(kafka: KafkaCluster, names) -> None:
    topic = names("tail")
    produce(kafka, topic, [Record(value=b"old-%d" % i, key=b"k") for i in range(3)], partitions=2)
    env = {**os.environ, "CDC_SMT_BOOTSTRAP": kafka.bootstrap}
    proc = subprocess.Popen(
        [*CLI, "consume", topic, "--max-messages", "2", "--timeout", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        started = proc.stderr.readline().decode()
        assert started == f"reading 2 partitions of {topic} from the end\n", started
        produce(kafka, topic, [Record(value=b"new-%d" % i, key=b"k") for i in range(2)], partitions=2)
        out, err = proc.communicate(timeout=90)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert [r["value"] for r in lines(out)] == ["new-0", "new-1"]


def test_bad_input_produces_nothing_and_names_the_line(kafka: KafkaCluster, names, tmp_path: Path) -> None:
    topic = names("bad")
    produce(kafka, topic, [], partitions=1)
    src = tmp_path / "in.jsonl"
    src.write_bytes(b'{"value": "fine"}\n{"value": "x", "vlaue": "typo"}\n')
    done = cdc_smt(kafka, "produce", "-t", topic, str(src))
    assert done.returncode == 2
    err = done.stderr.decode()
    assert err.startswith(f"cdc-smt: error: {src}: line 2: ") and "vlaue" in err and "Traceback" not in err
    src.write_bytes(b'{"value": "fine", "partition": 5}\n')
    done = cdc_smt(kafka, "produce", "-t", topic, str(src))
    assert done.returncode == 2 and b"has 1 partitions; a record asks for partition 5" in done.stderr
    assert consume(kafka, topic, min_records=0, timeout=3) == []


def test_consume_errors_and_short_reads(kafka: KafkaCluster, names) -> None:
    missing = cdc_smt(kafka, "consume", names("absent"), "--timeout", "1")
    assert missing.returncode == 2 and missing.stderr.decode().startswith("cdc-smt: error: no such topic: ")
    topic = names("short")
    produce(kafka, topic, [Record(value=b"only")], partitions=1)
    short = cdc_smt(kafka, "consume", topic, "--from-beginning", "--max-messages", "2", "--timeout", "2")
    assert short.returncode == 1
    assert [r["value"] for r in lines(short.stdout)] == ["only"]
    assert short.stderr.decode().splitlines()[-1] == "cdc-smt: only 1 of 2 records arrived within 2s"
