"""``cdc-smt demo``: the main job, end to end, on an embedded broker.

Starts the embedded broker (Tansu), produces a small shop database's change
stream in Canal JSON (inserts, updates, deletes, one DDL and one malformed
message), runs the worker with the shop job
(``examples/jobs/shop-canal-to-debezium.yaml``, shipped in the wheel as
:mod:`connector.demo_data`) converting it to Debezium JSON, and prints what
arrived on the output and dead-letter topics next to what went in. Exits 0 when every input record is
accounted for (converted or dead-lettered).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from cdc_smt.connector import demo_data
from cdc_smt.transforms.errors import CdcSmtError

DEFAULT_JOB = demo_data.JOB
DEFAULT_DATA = demo_data.DATA
SOURCE_PARTITIONS = 3
WIDTH = 78


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="run the main job end to end on an embedded broker and show the result",
        description=(
            "Start an embedded Kafka-compatible broker, produce a Canal JSON change stream of a small "
            "shop database, convert it to Debezium JSON with the worker, and show input and output side by side."
        ),
    )
    p.add_argument("--job", type=Path, default=DEFAULT_JOB, help="job file (default: the shop job)")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="input messages, one per line")
    p.add_argument("--timeout", type=float, default=90.0, help="seconds to wait for the conversion")
    p.add_argument("--verbose", action="store_true", help="show the worker's log")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    for path, what in ((args.job, "job file"), (args.data, "demo data")):
        if not path.is_file():
            raise CdcSmtError(f"{what} not found: {path} (pass --job/--data)")
    from cdc_smt.connector.jobconfig import read_job_file

    read_job_file(args.job)  # a bad job file fails before a broker is started for it
    if not args.verbose:
        for name in ("cdc_smt", "connector", "faust", "mode", "aiokafka"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
    return asyncio.run(_demo(args))


# -- the run -------------------------------------------------------------------------------
async def _demo(args: argparse.Namespace) -> int:
    from cdc_smt.connector import kafka as K
    from cdc_smt.connector.broker import EmbeddedBroker
    from cdc_smt.connector.commands.worker import import_worker
    from cdc_smt.connector.jobconfig import load_job

    WorkerRuntime = import_worker().WorkerRuntime

    lines = [ln for ln in args.data.read_bytes().splitlines() if ln.strip()]
    _rule("cdc-smt demo: Canal JSON (MySQL 'shop') -> Debezium JSON, through the Faust worker")
    with EmbeddedBroker() as broker:
        # A short session timeout: the embedded broker waits about half of it for a group to form.
        overrides = {
            "kafka.bootstrap_servers": broker.bootstrap,
            "worker.metrics_port": 0,
            "consumer.session_timeout_ms": 6000,
            "consumer.heartbeat_interval_ms": 1000,
        }
        job = load_job(args.job, overrides=overrides)
        job.check()
        source = job.source.topics[0]
        print(f"broker    {broker.bootstrap} (embedded Tansu, memory only)")
        print(f"job       {_rel(args.job)} (consumer group {job.id})")
        print(
            f"chain     {source} [{job.source.format}] -> {job.sink.topic} [{job.sink.format}], "
            f"dead letters -> {job.errors.dead_letter_topic}"
        )

        # The start-up probe every host runs: a broker that answered its own check but not the
        # client (or died since) is one line naming the address and the cause.
        await K.wait_until_ready(job.kafka, timeout_setting="kafka.connect_timeout_s in --job")
        await K.create_topics(broker.bootstrap, {source: SOURCE_PARTITIONS})
        inputs = [_input(i, raw) for i, raw in enumerate(lines)]
        records = [inp.record(SOURCE_PARTITIONS) for inp in inputs]
        await K.produce_records(broker.bootstrap, source, records)
        kinds = _count(inp.kind for inp in inputs)
        print(
            f"\n1. produced {len(lines)} Canal JSON messages to {source} ({SOURCE_PARTITIONS} partitions): "
            + ", ".join(f"{n} {k}" for k, n in kinds.items())
        )

        runtime = WorkerRuntime(job)
        started = time.monotonic()
        task = asyncio.ensure_future(runtime.run(install_signals=False))
        ends = _ends(records)
        try:
            await _wait_processed(runtime, task, source, ends, args.timeout)
            elapsed = time.monotonic() - started
            metrics_url = f"http://127.0.0.1:{runtime.server.port}/metrics" if runtime.server else None
            dlq = job.errors.dead_letter_topic
            # Every topic the worker wrote to: the sink, and any the sink format or a
            # routing transform chose (Debezium puts DDL on its schema-change topic).
            written = sorted(t for t in runtime.pipeline.partition_counts if t != dlq)
            outputs = [r for t in written for r in await K.consume_all(broker.bootstrap, t)]
            dead = await K.consume_all(broker.bootstrap, dlq) if dlq else []
        finally:
            runtime.request_stop()
            code = await asyncio.wait_for(task, timeout=30)
        counts = ", ".join(f"{sum(r.topic == t for r in outputs)} on {t}" for t in written)
        print(
            f"2. the worker converted them in {elapsed:.1f}s (start-up and group join included): "
            f"{counts}, {len(dead)} on {dlq}"
        )
        if metrics_url:
            print(f"   (metrics were at {metrics_url})")
        print("\n3. what went in, and what came out\n")
        _show(inputs, outputs, dead, job.sink.topic)
        committed = await K.committed_offsets(broker.bootstrap, job.id, [source])
        done = sum(committed.values())
        print(
            f"\n4. consumer group {job.id} committed {done} of {len(records)} source offsets; worker exit code {code}"
        )
        if code != 0 or done != len(records):
            raise CdcSmtError("the demo did not complete: not every input record was committed")
    _rule("done: every input record was converted or dead-lettered")
    return 0


async def _wait_processed(runtime: Any, task: asyncio.Future, topic: str, ends: dict[int, int], timeout: float) -> None:
    """Until every produced record's output is acknowledged (or the worker fails)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if task.done():
            raise CdcSmtError(f"the worker stopped early: {runtime.failure or task.result()}")
        reached = {tp.partition: st.committable or 0 for tp, st in runtime.pipeline.states.items() if tp.topic == topic}
        if all(reached.get(p, 0) >= end for p, end in ends.items()):
            return
        await asyncio.sleep(0.1)
    raise CdcSmtError(f"timed out after {timeout:.0f}s waiting for the worker (see --verbose)")


# -- inputs -------------------------------------------------------------------------------------
class _Input:
    """One demo input line and what the view needs to know about it."""

    def __init__(self, index: int, raw: bytes) -> None:
        self.index = index
        self.raw = raw
        self.partition: int | None = None
        self.offset: int | None = None
        try:
            self.msg: dict[str, Any] | None = orjson.loads(raw)
        except orjson.JSONDecodeError:
            self.msg = None

    @property
    def kind(self) -> str:
        if self.msg is None:
            return "malformed"
        if self.msg.get("isDdl"):
            return "DDL"
        return "row changes"

    @property
    def table(self) -> str:
        m = self.msg or {}
        return f"{m.get('database')}.{m.get('table')}"

    def rows(self) -> list[dict[str, Any]]:
        return list((self.msg or {}).get("data") or [])

    def pk(self, row: dict[str, Any]) -> str:
        names = (self.msg or {}).get("pkNames") or []
        return ",".join(f"{n}={row.get(n)}" for n in names)

    def key(self) -> bytes:
        """Canal's usual ``partitionHash`` is per table: one table's changes stay in one partition, in order."""
        if self.msg is None:
            return b"shop.orders"  # the producer was writing an orders change
        return self.table.encode()

    def record(self, partitions: int) -> Any:
        from cdc_smt.connector.kafka import partition_for
        from cdc_smt.transforms.model import Record

        key = self.key()
        self.partition = partition_for(key, partitions)
        return Record(value=self.raw, key=key, partition=self.partition)


def _input(i: int, raw: bytes) -> _Input:
    return _Input(i, raw)


def _ends(records: list[Any]) -> dict[int, int]:
    ends: dict[int, int] = defaultdict(int)
    for r in records:
        ends[r.partition] += 1
    return dict(ends)


# -- the view ---------------------------------------------------------------------------------
def _payload(value: Any) -> Any:
    if isinstance(value, dict) and isinstance(value.get("payload"), dict):
        return value["payload"]
    return value


def _loads(raw: bytes | None) -> Any:
    if raw is None:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw.decode("utf-8", "replace")


def _out_id(rec: Any) -> tuple[str, str] | None:
    """(db.table, "pk=v") of a Debezium record, from its source block and key."""
    value = _payload(_loads(rec.value))
    key = _payload(_loads(rec.key))
    if not isinstance(value, dict):
        return None
    src = value.get("source") or {}
    table = f"{src.get('db')}.{src.get('table')}"
    if isinstance(key, dict) and key:
        return table, ",".join(f"{k}={v}" for k, v in key.items())
    return None


def _show(inputs: list[_Input], outputs: list[Any], dead: list[Any], sink: str) -> None:
    """Each input, then the records it became, matched by table and key in output order.

    Row changes of one table stay in one partition, so the n-th input change of a
    row became the n-th output record of that row: the match is exact.
    """
    by_row: dict[tuple[str, str], list[list[Any]]] = defaultdict(list)
    ddl: list[list[Any]] = []
    last: dict[tuple[str, int, bytes | None], list[Any]] = {}
    for rec in sorted(outputs, key=lambda r: (r.topic, r.partition, r.offset)):
        if rec.value is None:  # a tombstone follows its delete (same partition, same key)
            group = last.get((rec.topic, rec.partition, rec.key))
            if group is not None:
                group.append(rec)
                continue
        value = _payload(_loads(rec.value))
        group = [rec]
        last[(rec.topic, rec.partition, rec.key)] = group
        if isinstance(value, dict) and "ddl" in value:
            ddl.append(group)
            continue
        ident = _out_id(rec)
        by_row[ident or ("?", "?")].append(group)
    dead_iter = iter(dead)
    for inp in inputs:
        print(f"  #{inp.index + 1:<2} in  {_describe_input(inp)}")
        if inp.msg is None:
            dl = next(dead_iter, None)
            print(
                f"      out {_describe_dead(dl) if dl is not None else '(nothing: not found on the dead-letter topic)'}"
            )
            continue
        if inp.kind == "DDL":
            groups = [ddl.pop(0)] if ddl else []
        else:
            groups = []
            for row in inp.rows():
                queue = by_row.get((inp.table, inp.pk(row)))
                if queue:
                    groups.append(queue.pop(0))
        if not groups:
            print("      out (no record)")
        for group in groups:
            for rec in group:
                print(f"      out {_describe_output(rec)}")
    for rest in [*ddl, *(g for q in by_row.values() for g in q)]:
        for rec in rest:
            print(f"      out {_describe_output(rec)} (not matched to an input)")
    for dl in dead_iter:
        print(f"      dlq {_describe_dead(dl)}")


def _describe_input(inp: _Input) -> str:
    if inp.msg is None:
        return f"MALFORMED {_clip(inp.raw.decode('utf-8', 'replace'), 52)}"
    m = inp.msg
    if m.get("isDdl"):
        return f"{inp.table} DDL  {_clip(m.get('sql') or '', 56)}"
    rows = inp.rows()
    olds = m.get("old") or []
    parts = []
    for i, row in enumerate(rows):
        old = olds[i] if i < len(olds) else None
        if m.get("type") == "UPDATE" and old:
            parts.append(f"{inp.pk(row)} " + ", ".join(f"{k} {old[k]}->{row.get(k)}" for k in old))
        else:
            parts.append(inp.pk(row))
    return f"{inp.table} {m.get('type')}  " + _clip("; ".join(parts), 56)


def _describe_output(rec: Any) -> str:
    value = _payload(_loads(rec.value))
    where = f"{rec.topic}[{rec.partition}]@{rec.offset}"
    if rec.value is None:
        return f"tombstone {where} key {_clip(rec.key.decode('utf-8', 'replace') if rec.key else 'null', 40)}"
    if not isinstance(value, dict):
        return f"{where} {_clip(str(value), 50)}"
    op = value.get("op")
    before, after = value.get("before"), value.get("after")
    if op == "u" and isinstance(before, dict) and isinstance(after, dict):
        changed = [f"{k} {_v(before.get(k))}->{_v(after.get(k))}" for k in after if before.get(k) != after.get(k)]
        body = "changed " + ", ".join(changed) if changed else "no column changed"
    elif op in ("c", "r") and isinstance(after, dict):
        body = "after " + _fields(after)
    elif op == "d" and isinstance(before, dict):
        body = "before " + _fields(before)
    elif "ddl" in value:
        body = f"schema change of {value.get('databaseName')}: {value.get('ddl')}"
    else:
        body = _clip(orjson.dumps(value).decode(), 50)
    return f"{'op=' + op if op else 'schema'} {where} {_clip(body, 54)}"


def _describe_dead(rec: Any) -> str:
    h = {k: v.decode("utf-8", "replace") for k, v in rec.headers}
    err = "cdc_smt.error."
    return (
        f"DEAD LETTER {rec.topic}[{rec.partition}]@{rec.offset}: {h.get(err + 'stage')} failed, "
        f"{h.get(err + 'class')}: {_clip(h.get(err + 'message', ''), 60)} "
        f"(from {h.get(err + 'topic')}[{h.get(err + 'partition')}]@{h.get(err + 'offset')})"
    )


def _fields(row: dict[str, Any]) -> str:
    return ", ".join(f"{k}={_v(v)}" for k, v in row.items())


def _v(v: Any) -> str:
    return "null" if v is None else str(v)


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _count(items: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for k in items:
        out[k] = out.get(k, 0) + 1
    return out


def _rule(title: str) -> None:
    print(f"== {title} " + "=" * max(0, WIDTH - len(title) - 4))


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)
