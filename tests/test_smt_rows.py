"""``split_updates``, ``drop_tombstones``, ``explode_rows`` and ``batch_rows``."""

from __future__ import annotations

from cdc_smt.transforms.model import Op
from cdc_smt.transforms.smt.base import ROW_GROUP, TOMBSTONE, tombstone_for
from tests.test_smt_base import TextForm, config_error, control, ev, row, run


def test_split_always_gives_delete_then_insert() -> None:
    e = ev("update", before=row(1, status="new"), after=row(1, status="paid"))
    out = run({"type": "split_updates"}, [ev("insert", after=row(9)), e])
    assert [x.op for x in out] == [Op.INSERT, Op.DELETE, Op.INSERT]
    assert out[1].before == row(1, status="new") and out[1].after is None
    assert out[2].after == row(1, status="paid") and out[2].before is None


def test_split_fills_the_before_image_of_changed_only_formats() -> None:
    e = ev("update", before={"status": "new"}, after=row(1, status="paid"))  # Canal "old": changed columns only
    delete, insert = run({"type": "split_updates"}, [e])
    assert delete.before == row(1, status="new")
    assert delete.key_values() == {"id": 1}


def test_split_only_on_key_change() -> None:
    same = ev("update", before=row(1), after=row(1, status="x"))
    moved = ev("update", before=row(1), after=row(2))
    out = run({"type": "split_updates", "mode": "key_change"}, [same, moved])
    assert [(x.op, x.key_values()) for x in out] == [
        (Op.UPDATE, {"id": 1}),
        (Op.DELETE, {"id": 1}),
        (Op.INSERT, {"id": 2}),
    ]


def test_key_change_compares_typed_values() -> None:
    e = ev(
        "update",
        before={"id": "01"},
        after={"id": "1", "email": "a", "amount": "1", "status": "s", "created": None, "updated": None},
    )
    e.values = TextForm()
    out = run({"type": "split_updates", "mode": "key_change"}, [e])
    assert [x.op for x in out] == [Op.UPDATE]  # "01" and "1" are the same bigint


def test_split_with_tombstone_for_compaction() -> None:
    out = run(
        {"type": "split_updates", "mode": "key_change", "tombstone": True}, [ev("update", before=row(1), after=row(2))]
    )
    assert [x.op for x in out] == [Op.DELETE, Op.DELETE, Op.INSERT]
    assert out[1].extra[TOMBSTONE] and out[1].key_values() == {"id": 1}


def test_split_leaves_inserts_deletes_and_ddl() -> None:
    events = [ev("insert"), ev("delete"), control("ddl")]
    assert run({"type": "split_updates"}, events) == events


def test_split_outputs_are_new_events_keeping_only_chain_markers() -> None:
    e = ev("update", origin="canal-json", extra={"old": ("status",), "cdc_smt.row_group": 5})
    delete, insert = run({"type": "split_updates"}, [e])
    assert delete.origin is None and insert.origin is None
    assert delete.extra == insert.extra == {"cdc_smt.row_group": 5}
    delete.extra["x"] = 1
    assert "x" not in insert.extra


def test_split_config_errors() -> None:
    assert config_error({"type": "split_updates", "mode": "pk"}).path == "transforms[0].mode"


def test_drop_tombstones() -> None:
    events = [ev("delete"), tombstone_for(ev("delete")), control("heartbeat")]
    out = run({"type": "drop_tombstones"}, events)
    assert out == [events[0], events[2]]


def test_batch_rows_groups_consecutive_rows_of_one_table_and_op() -> None:
    events = [ev("insert", after=row(i)) for i in range(5)] + [ev("update"), control("commit"), ev("update")]
    out = run({"type": "batch_rows", "max_rows": 2}, events)
    groups = [e.extra.get(ROW_GROUP) for e in out]
    assert groups[0] == groups[1] != groups[2] == groups[3] != groups[4]
    assert groups[5] not in groups[:5]
    assert groups[6] is None and groups[7] not in (groups[5], None)


def test_explode_rows_gives_every_row_its_own_group() -> None:
    events = run({"type": "batch_rows"}, [ev("insert"), ev("insert"), control("commit")])
    assert events[0].extra[ROW_GROUP] == events[1].extra[ROW_GROUP]
    out = run({"type": "explode_rows"}, events)
    assert out[0].extra[ROW_GROUP] != out[1].extra[ROW_GROUP]
    assert ROW_GROUP not in out[2].extra
    assert config_error({"type": "batch_rows", "max_rows": 0}).path == "transforms[0].max_rows"
