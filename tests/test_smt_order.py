"""Property: chains keep the order of events for each key, however the stream is batched.

Random streams of row changes (including primary-key changes) and control
events over sharded and plain tables go through random chains of filter,
route, split_updates, merge_shards, replace_field and unwrap. For every output
key, the events come out in the order their sources went in; nothing is
reordered across keys either; and cutting the stream into different batches
gives the same output.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_smt.transforms.config import build_transforms
from cdc_smt.transforms.model import ChangeEvent, Column, Op, SourcePosition, TableSchema

SCHEMA = TableSchema((Column("id", "int", False, True), Column("v", "int")), ("id",))
TABLES = [("shop_01", "orders_0"), ("shop_02", "orders_1"), ("shop", "users"), ("crm", "leads")]
CONTROL = [Op.DDL, Op.HEARTBEAT, Op.BEGIN, Op.COMMIT]

TRANSFORMS = [
    {"type": "filter", "tables": [r"shop.*\..*"]},
    {"type": "filter", "exclude_ops": ["heartbeat", "transaction"]},
    {"type": "filter", "condition": "row.v % 3 != 0"},
    {"type": "route", "topic": "cdc.{database}.{table}"},
    {"type": "split_updates"},
    {"type": "split_updates", "mode": "key_change", "tombstone": True},
    {"type": "merge_shards", "pattern": r"(shop)_\d+\.(orders)_\d+", "database": "$1", "table": "$2"},
    {"type": "merge_shards", "pattern": r"(shop)_\d+\.(orders)_\d+", "table": "$2", "key_field": "shard"},
    {"type": "replace_field", "exclude": ["v"], "predicate": {"type": "table_matches", "pattern": r"crm\..*"}},
    {"type": "unwrap", "delete_handling": "rewrite-with-tombstone"},
]

# (kind, table index, id before, id after, value) - built into events per run
step = st.one_of(
    st.tuples(
        st.just("row"),
        st.integers(0, 3),
        st.sampled_from(["insert", "update", "delete"]),
        st.integers(0, 4),
        st.integers(0, 4),
        st.integers(0, 9),
    ),
    st.tuples(st.just("control"), st.integers(0, 3), st.sampled_from(CONTROL), st.just(0), st.just(0), st.just(0)),
)


def build_events(steps: list[tuple]) -> list[ChangeEvent]:
    """Fresh events (transforms change events in place); ``ts_ms`` is the input position."""
    out = []
    for seq, (kind, t, op, id_before, id_after, v) in enumerate(steps):
        db, table = TABLES[t]
        source = SourcePosition(database=db, table=table)
        if kind == "control":
            out.append(
                ChangeEvent(op=op, source=source, ts_ms=seq, ddl="ALTER TABLE t ADD c int" if op is Op.DDL else None)
            )
            continue
        op = Op(op)
        before = {"id": id_before, "v": v} if op in (Op.UPDATE, Op.DELETE) else None
        after = {"id": id_after if op is Op.UPDATE else id_before, "v": v + 1} if op is not Op.DELETE else None
        out.append(ChangeEvent(op=op, source=source, before=before, after=after, schema=SCHEMA, pk=("id",), ts_ms=seq))
    return out


def run(chain_specs: list[dict[str, Any]], events: list[ChangeEvent], cuts: list[int]) -> list[ChangeEvent]:
    chain = build_transforms(chain_specs)
    out: list[ChangeEvent] = []
    bounds = sorted({0, len(events), *(c for c in cuts if 0 < c < len(events))})
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        batch = events[lo:hi]
        for t in chain:
            batch = t.apply_batch(batch)
        out.extend(batch)
    return out


def key_of(e: ChangeEvent) -> tuple:
    return (e.topic, e.source.database, e.source.table, tuple(sorted(e.key_values().items())))


def shape(e: ChangeEvent) -> tuple:
    return (e.op, e.ts_ms, key_of(e), e.before, e.after)


@settings(max_examples=150, deadline=None)
@given(
    steps=st.lists(step, max_size=40),
    chain=st.lists(st.sampled_from(range(len(TRANSFORMS))), max_size=5),
    cuts=st.lists(st.integers(0, 40), max_size=6),
)
def test_chains_keep_per_key_order_under_any_batching(steps: list[tuple], chain: list[int], cuts: list[int]) -> None:
    specs = [TRANSFORMS[i] for i in chain]
    whole = run(specs, build_events(steps), [])
    batched = run(specs, build_events(steps), cuts)
    assert [shape(e) for e in whole] == [shape(e) for e in batched]
    # per key, outputs follow their inputs' order (several outputs of one input share a position)
    last: dict[tuple, int] = {}
    for e in whole:
        k = key_of(e)
        assert e.ts_ms >= last.get(k, -1), f"key {k} went back from input {last[k]} to {e.ts_ms}"
        last[k] = e.ts_ms
    # and across keys nothing moves either: outputs are a subsequence of the inputs
    positions = [e.ts_ms for e in whole]
    assert positions == sorted(positions)
    assert set(positions) <= set(range(len(steps)))
