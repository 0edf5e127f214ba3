"""The worker's adaptive batching: a trickle is converted record by record at once, a backlog in large batches."""

from __future__ import annotations

from cdc_smt.connector.worker.batching import MIN_STEP, BatchSizer, BatchStats, steps


def fetch(*sizes: int) -> list[tuple[str, list[int]]]:
    """One fetch: partition ``p<i>`` with ``sizes[i]`` records (offsets 0..n-1)."""
    return [(f"p{i}", list(range(n))) for i, n in enumerate(sizes)]


def test_a_single_available_record_is_converted_at_once_not_after_filling_batch_size() -> None:
    sizer = BatchSizer(max_step=2000)
    assert list(steps(sizer, fetch(1))) == [("p0", [0])]
    assert sizer.stats.largest == 1


def test_a_trickle_keeps_the_step_small_and_hands_over_every_fetch_whole() -> None:
    sizer = BatchSizer(max_step=2000)
    for _ in range(50):
        out = list(steps(sizer, fetch(3, 0, 2)))
        assert out == [("p0", [0, 1, 2]), ("p2", [0, 1])]
    assert sizer.step == MIN_STEP and not sizer.behind  # outputs are sent at once, without linger
    assert sizer.stats.batches == 100 and sizer.stats.largest == 3


def test_a_backlog_grows_the_step_to_batch_size() -> None:
    sizer = BatchSizer(max_step=2000)
    sizes = []
    for _ in range(10):  # each fetch: 4 partitions of 2000 records waiting
        sizes += [len(chunk) for _, chunk in steps(sizer, fetch(2000, 2000, 2000, 2000))]
    assert sizes[0] == MIN_STEP  # the first outputs go out after a small step ...
    assert sizer.step == 2000  # ... then the steps grow to worker.batch_size
    assert sizer.behind  # produce batches may linger to share requests
    assert sizer.stats.at_least(1024) > len(sizes) // 2
    assert sizer.stats.records == 80_000


def test_steps_shrink_again_once_the_worker_keeps_up() -> None:
    sizer = BatchSizer(max_step=2000)
    list(steps(sizer, fetch(5000)))
    assert sizer.step == 2000
    for _ in range(10):
        list(steps(sizer, fetch(10)))
    assert sizer.step == MIN_STEP


def test_steps_cover_every_record_once_in_order_round_robin_over_partitions() -> None:
    sizer = BatchSizer(max_step=300, min_step=100)
    out = list(steps(sizer, fetch(450, 120, 0, 1)))
    for name, n in (("p0", 450), ("p1", 120), ("p3", 1)):
        got = [r for tp, chunk in out if tp == name for r in chunk]
        assert got == list(range(n))
    # round robin: p1's first records do not wait for all of p0
    assert [tp for tp, _ in out[:3]] == ["p0", "p1", "p3"]
    assert all(len(chunk) <= 300 for _, chunk in out)


def test_min_step_never_exceeds_batch_size() -> None:
    sizer = BatchSizer(max_step=10)
    assert [len(c) for _, c in steps(sizer, fetch(25))] == [10, 10, 5]


def test_stats_count_batches_by_size_class() -> None:
    stats = BatchStats()
    for n in (1, 3, 700, 1500, 2000):
        stats.add(n)
    assert stats.at_least(1024) == 2
    assert stats.at_least(512) == 3
    assert stats.at_least(1) == 5
    assert stats.largest == 2000 and stats.records == 4204
