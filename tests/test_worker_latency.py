"""What the worker does for its tail latency, outside the data path (no timing assertions)."""

from __future__ import annotations

import gc

from cdc_smt.connector.worker.app import settle_heap


def test_settle_heap_puts_what_start_up_built_out_of_the_collectors_reach() -> None:
    survivor = [{"built": "at start-up"}]  # a container the collector tracks
    try:
        settle_heap()
        assert gc.get_freeze_count() > 0
        assert not any(o is survivor for o in gc.get_objects())  # frozen: no collection walks it
        later = [{"allocated": "after start-up"}]
        assert any(o is later for o in gc.get_objects())  # the data path's objects are still collected
    finally:
        gc.unfreeze()
