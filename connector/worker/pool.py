"""Conversion in child processes (``worker.processes > 1``): one worker, several cores.

The codecs are pure Python, so one process converts on one core however many
partitions it owns. With a pool, the Faust process keeps the Kafka side
(fetch, batch produce, acks, commits) and each source partition's batches are
converted in one fixed child process, which keeps that partition's chain (and
so its codec state) between batches. Batches of one partition are converted
and produced in order; different partitions convert in parallel.

Transport: one pipe per child, read by the event loop (``add_reader``), one
pickle each way per batch, no helper threads (``ProcessPoolExecutor`` cost
about 6 µs a record in queue threads and GIL hand-offs). Writes to the pipe
block, so a child has at most one request in flight (a per-child lock): were
the parent blocked writing a second batch while the child blocks writing the
first result, neither would read. The only other message, ``forget``, is small.

Children are started with ``spawn`` (the parent runs threads: forking it is
unsafe). A child that dies fails its pending batch: the worker stops with the
reason, and a restart resumes from the last commit.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import pickle
import signal
from collections import deque, namedtuple
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cdc_smt.connector.jobconfig import JobConfig
from cdc_smt.connector.tuning import tune_allocator
from cdc_smt.connector.worker.pipeline import Converted, Converter, WorkerFailed
from cdc_smt.transforms.chain import ChainHalted

#: What a child gets per record: the fields ``Converter.convert`` reads.
Row = namedtuple("Row", "offset timestamp key value headers")
_PROTOCOL = pickle.HIGHEST_PROTOCOL


@dataclass(frozen=True, slots=True)
class Halted:
    """``ChainHalted`` in a child (tolerance none), as plain data: exceptions with
    custom constructors do not survive pickling."""

    where: str
    describe: str


@dataclass(frozen=True, slots=True)
class _Crashed:
    """Any other exception in a child, as text."""

    error: str


# -- the child side -----------------------------------------------------------------------------
class _ChildState:
    def __init__(self, job: JobConfig) -> None:
        self.job = job
        self.converter = Converter(job, {})
        self.chains: dict[tuple[str, int], Any] = {}

    def convert(
        self, topic: str, partition: int, rows: Sequence[tuple], counts: dict[str, int], restore: bytes | None = None
    ) -> Converted | Halted:
        self.converter.partition_counts.update(counts)
        chain = self.chains.get((topic, partition))
        if chain is None:
            chain = self.chains[(topic, partition)] = self.job.build_chain(catalog=self.job.new_catalog())
        if restore is not None:
            self.converter.restore(chain, topic, partition, restore)
        try:
            return self.converter.convert(chain, topic, partition, [Row(*r) for r in rows])
        except ChainHalted as exc:
            return Halted(exc.dead_letter.record.where(), exc.dead_letter.describe())


def _child_main(conn: Any, job: JobConfig) -> None:  # pragma: no cover - runs in the child process
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    tune_allocator()
    state = _ChildState(job)
    while True:
        try:
            kind, args = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):  # the parent is gone or closed the pipe
            return
        if kind == "forget":
            for key in args:
                state.chains.pop(key, None)
            state.converter.forget(args)
            continue
        if kind == "stop":
            return
        try:
            result: Any = True if kind == "ping" else state.convert(*args)
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which stops the worker
            result = _Crashed(f"{type(exc).__name__}: {exc}")
        conn.send_bytes(pickle.dumps(result, protocol=_PROTOCOL))


# -- the parent side ------------------------------------------------------------------------------
class _Child:
    def __init__(self, ctx: Any, job: JobConfig, index: int) -> None:
        parent_conn, child_conn = ctx.Pipe(duplex=True)
        self.index = index
        self.process = ctx.Process(
            target=_child_main, args=(child_conn, job), name=f"cdc-smt-convert-{index}", daemon=True
        )
        self.process.start()
        child_conn.close()
        self.conn = parent_conn
        self.pending: deque[asyncio.Future] = deque()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.lock: asyncio.Lock | None = None

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.lock = asyncio.Lock()
        loop.add_reader(self.conn.fileno(), self._readable)

    async def call(self, kind: str, args: Any) -> Any:
        """One request, one reply; requests to this child queue up behind each other."""
        assert self.lock is not None, "call ConversionPool.start() first"
        async with self.lock:
            return await self.request(kind, args)

    def request(self, kind: str, args: Any) -> asyncio.Future:
        assert self.loop is not None, "call ConversionPool.start() first"
        fut = self.loop.create_future()
        self.pending.append(fut)
        try:
            self.conn.send_bytes(pickle.dumps((kind, args), protocol=_PROTOCOL))
        except OSError as exc:
            self._fail(f"conversion process {self.index} is gone ({exc})")
        return fut

    def tell(self, kind: str, args: Any) -> None:
        """A message without a reply (small: never blocks on a full pipe)."""
        try:
            self.conn.send_bytes(pickle.dumps((kind, args), protocol=_PROTOCOL))
        except OSError:
            pass

    def _readable(self) -> None:
        try:
            result = pickle.loads(self.conn.recv_bytes())
        except (EOFError, OSError):
            self._fail(f"conversion process {self.index} exited (code {self.process.exitcode})")
            return
        fut = self.pending.popleft()
        if fut.done():
            return
        if isinstance(result, _Crashed):
            fut.set_exception(WorkerFailed(f"conversion process {self.index} failed: {result.error}"))
        else:
            fut.set_result(result)

    def _fail(self, reason: str) -> None:
        if self.loop is not None:
            self.loop.remove_reader(self.conn.fileno())
        while self.pending:
            fut = self.pending.popleft()
            if not fut.done():
                fut.set_exception(WorkerFailed(reason))

    def close(self, timeout: float = 10.0) -> None:
        if self.loop is not None and not self.conn.closed:
            self.loop.remove_reader(self.conn.fileno())
        self.tell("stop", None)
        self.conn.close()
        self.process.join(timeout)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)


class ConversionPool:
    """``processes`` children; each source partition sticks to the least loaded child when first seen."""

    def __init__(self, job: JobConfig, processes: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._children = [_Child(ctx, job, i) for i in range(processes)]
        self._owner: dict[tuple[str, int], int] = {}
        self._load = [0] * processes

    @property
    def size(self) -> int:
        return len(self._children)

    async def start(self) -> None:
        """Attach to the running loop and wait until every child has imported the codecs."""
        loop = asyncio.get_running_loop()
        for child in self._children:
            child.attach(loop)
        await asyncio.gather(*(child.call("ping", None) for child in self._children))

    def _child(self, key: tuple[str, int]) -> _Child:
        idx = self._owner.get(key)
        if idx is None:
            idx = min(range(len(self._load)), key=self._load.__getitem__)
            self._owner[key] = idx
            self._load[idx] += 1
        return self._children[idx]

    async def convert(
        self, topic: str, partition: int, messages: Iterable[Any], counts: dict[str, int], restore: bytes | None = None
    ) -> Converted | Halted:
        """Convert in the partition's child; ``restore``: a state snapshot to continue from first."""
        rows = [(m.offset, m.timestamp, m.key, m.value, m.headers) for m in messages]
        return await self._child((topic, partition)).call("convert", (topic, partition, rows, counts, restore))

    def forget(self, keys: Iterable[tuple[str, int]]) -> None:
        """Drop the chains of partitions no longer owned (their next owner starts from the commit)."""
        by_child: dict[int, list[tuple[str, int]]] = {}
        for key in keys:
            idx = self._owner.pop(key, None)
            if idx is not None:
                self._load[idx] -= 1
                by_child.setdefault(idx, []).append(key)
        for idx, ks in by_child.items():
            self._children[idx].tell("forget", ks)

    def shutdown(self) -> None:
        for child in self._children:
            child.close()


__all__ = ["ConversionPool", "Halted"]
