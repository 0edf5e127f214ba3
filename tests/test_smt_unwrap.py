"""``unwrap``: flat rows, delete handling, added fields and headers."""

from __future__ import annotations

from cdc_smt.transforms.model import Record
from cdc_smt.transforms.smt.base import TOMBSTONE, UNWRAPPED, tombstone_for
from tests.test_smt_base import config_error, control, ev, row, run


def test_inserts_and_updates_become_their_after_image() -> None:
    out = run(
        {"type": "unwrap"}, [ev("insert", after=row(1)), ev("update", before=row(2), after=row(2, status="paid"))]
    )
    assert [e.after for e in out] == [row(1), row(2, status="paid")]
    assert all(e.before is None and e.extra[UNWRAPPED] for e in out)


def test_delete_handling_modes() -> None:
    def deletes(mode: str) -> list:
        return run({"type": "unwrap", "delete_handling": mode}, [ev("delete", before=row(3))])

    assert deletes("drop") == []
    (tomb,) = deletes("tombstone")
    assert tomb.extra == {TOMBSTONE: True} and tomb.key_values() == {"id": 3}
    (rewritten,) = deletes("rewrite")
    assert rewritten.after == {**row(3), "__deleted": "true"} and rewritten.extra[UNWRAPPED]
    rewritten, tomb = deletes("rewrite-with-tombstone")
    assert rewritten.after["__deleted"] == "true" and tomb.extra[TOMBSTONE] and tomb.key_values() == {"id": 3}


def test_rewrite_marks_other_rows_not_deleted_and_adds_the_column_to_the_schema() -> None:
    (e,) = run({"type": "unwrap", "delete_handling": "rewrite"}, [ev("insert")])
    assert e.after["__deleted"] == "false"
    assert e.schema.column("__deleted").type == "varchar(5)"


def test_add_fields_and_headers_with_prefix() -> None:
    e = ev("update", ts_ms=1700000000000)
    e.record = Record(value=b"", headers=[("trace", b"1")])
    spec = {"type": "unwrap", "add_fields": ["op", "table", "source_ts_ms", "position"], "add_headers": ["database"]}
    (out,) = run(spec, [e])
    assert (
        out.after["__op"] == "u" and out.after["__table"] == "orders" and out.after["__source_ts_ms"] == 1700000000000
    )
    assert (out.after["__binlog_file"], out.after["__binlog_pos"]) == ("mysql-bin.000003", 4096)
    assert out.headers == [("trace", b"1"), ("__database", b"shop")]
    (out,) = run({"type": "unwrap", "add_fields": ["op"], "prefix": "_meta_"}, [ev("read")])
    assert out.after["_meta_op"] == "r"


def test_source_tombstones_dropped_by_default_or_kept() -> None:
    tomb = tombstone_for(ev("delete"))
    assert run({"type": "unwrap"}, [tomb]) == []
    tomb = tombstone_for(ev("delete"))
    assert run({"type": "unwrap", "drop_tombstones": False}, [tomb]) == [tomb]


def test_control_events_pass_and_predicates_apply() -> None:
    ddl, hb = control("ddl"), control("heartbeat")
    assert run({"type": "unwrap"}, [ddl, hb]) == [ddl, hb]
    out = run({"type": "unwrap", "predicate": {"type": "table_matches", "pattern": r"shop\.users"}}, [ev("update")])
    assert out[0].before is not None and UNWRAPPED not in out[0].extra


def test_unwrap_config_errors() -> None:
    assert config_error({"type": "unwrap", "delete_handling": "none"}).path == "transforms[0].delete_handling"
    assert config_error({"type": "unwrap", "add_fields": ["lsn"]}).path == "transforms[0].add_fields"
    assert config_error({"type": "unwrap", "add_fields": ["op"], "prefix": ""}).path == "transforms[0].prefix"
