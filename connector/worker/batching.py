"""How many fetched records the worker converts in one step: small while it keeps up, large under lag.

A fetch hands over whatever the broker had, never waiting to fill
``worker.batch_size``. Converting a large fetch in one piece holds its first
record back until the last one is converted (17 µs a record: 2,000 records are
34 ms), and the event loop cannot send anything meanwhile. Converting it in
small chunks gets the first outputs out at once, but costs a produce request
per chunk and output partition, which under a backlog lowers the throughput.

:class:`BatchSizer` does what TCP's slow start does: it starts small, doubles
the step each time a fetch holds more than one step (the worker is behind),
and halves it when fetches come back well under it (the worker keeps up). A
caught-up worker converts every fetch whole, at once; a backlog is converted
in steps that grow to ``worker.batch_size``. (Produce batches need no such
decision: each step's records join the batch still waiting for their output
partition, so they grow by themselves while a produce request is in flight;
see ``Pipeline._produce``.) :func:`sends` groups a small fetch's steps, one
per partition, so they are converted together and their outputs leave in one
produce request.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The first step and the smallest: about 2 ms of conversion.
MIN_STEP = 128


@dataclass(slots=True)
class BatchStats:
    """What the sizer handed out (the tests and ``/health`` read it)."""

    batches: int = 0
    records: int = 0
    largest: int = 0
    #: Batches by size class: ``sizes[k]`` counts batches of 2**k .. 2**(k+1)-1 records.
    sizes: dict[int, int] = field(default_factory=dict)

    def add(self, n: int) -> None:
        self.batches += 1
        self.records += n
        self.largest = max(self.largest, n)
        k = n.bit_length() - 1
        self.sizes[k] = self.sizes.get(k, 0) + 1

    def at_least(self, n: int) -> int:
        """How many batches held ``n`` records or more (by size class: ``n`` rounds down to a power of two)."""
        k = max(0, n.bit_length() - 1)
        return sum(c for size, c in self.sizes.items() if size >= k)


@dataclass(slots=True)
class BatchSizer:
    """The adaptive step: between ``min_step`` and ``max_step`` (``worker.batch_size``) records."""

    max_step: int
    min_step: int = MIN_STEP
    step: int = 0
    stats: BatchStats = field(default_factory=BatchStats)

    def __post_init__(self) -> None:
        self.min_step = max(1, min(self.min_step, self.max_step))
        self.step = self.step or self.min_step

    @property
    def behind(self) -> bool:
        """Fetches hold more than the smallest step: the worker is working off a backlog."""
        return self.step > self.min_step

    def observe_fetch(self, available: int) -> None:
        """A fetch returned ``available`` records (all partitions): shrink when well under the step."""
        if 0 < available <= self.step // 4:
            self.step = max(self.min_step, self.step // 2)

    def take(self, remaining: int) -> int:
        """How many of ``remaining`` fetched records to convert now; grows the step when more wait."""
        n = min(remaining, self.step)
        if remaining > self.step:  # behind: the next step may be bigger
            self.step = min(self.max_step, self.step * 2)
        if n:
            self.stats.add(n)
        return n


def steps(sizer: BatchSizer, fetched: Sequence[tuple[Any, Sequence[Any]]]) -> Iterator[tuple[Any, Sequence[Any]]]:
    """``(partition, records)`` steps over one fetch, round robin over its partitions, so no
    partition waits for another's whole batch; each partition's records stay in order."""
    sizer.observe_fetch(sum(len(recs) for _, recs in fetched))
    offsets = [0] * len(fetched)
    while True:
        progressed = False
        for i, (tp, recs) in enumerate(fetched):
            start = offsets[i]
            if start >= len(recs):
                continue
            n = sizer.take(len(recs) - start)
            offsets[i] = start + n
            progressed = True
            yield tp, recs[start : start + n]
        if not progressed:
            return


def sends(
    stepped: Iterable[tuple[Any, Sequence[Any]]], min_records: int = MIN_STEP
) -> Iterator[list[tuple[Any, Sequence[Any]]]]:
    """``stepped`` in groups the worker converts before it lets the producer send: a group closes
    once it holds ``min_records`` (a step under a backlog is one group of its own).

    aiokafka has one produce request in flight per broker. Had every step of a small fetch (a
    few records per partition, the caught-up case) been sent on its own, the first partition's
    outputs would go out alone and every other partition's would wait for that request's
    acknowledgement: a second request and a round trip more for three quarters of the records.
    Converting them all first costs the first ones at most ``min_records`` conversions (well
    under a millisecond)."""
    group: list[tuple[Any, Sequence[Any]]] = []
    n = 0
    for tp, records in stepped:
        group.append((tp, records))
        n += len(records)
        if n >= min_records:
            yield group
            group, n = [], 0
    if group:
        yield group


__all__ = ["BatchSizer", "BatchStats", "MIN_STEP", "sends", "steps"]
