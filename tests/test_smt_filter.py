"""``filter``: databases, tables, ops, conditions, action, and control events."""

from __future__ import annotations

from decimal import Decimal

from cdc_smt.transforms.model import Op
from cdc_smt.transforms.smt.base import tombstone_for
from tests.test_smt_base import config_error, control, ev, row, run


def tables(events):
    return [(e.database, e.table) for e in events]


def test_tables_match_the_whole_qualified_name() -> None:
    events = [ev(db="inventory", table="products"), ev(db="inventory", table="orders"), ev(db="shop", table="products")]
    out = run({"type": "filter", "tables": [r"inventory\.prod.*"]}, events)
    assert tables(out) == [("inventory", "products")]
    # not a search: "products" alone does not match "inventory.products"
    out = run({"type": "filter", "tables": ["products"]}, [ev(db="inventory", table="products")])
    assert out == []
    out = run({"type": "filter", "tables": [r".*\.products"]}, events)
    assert tables(out) == [("inventory", "products"), ("shop", "products")]


def test_databases_and_excludes() -> None:
    events = [ev(db="shop"), ev(db="shop_tmp"), ev(db="crm"), ev(db="shop", table="orders_bak")]
    out = run({"type": "filter", "databases": ["shop.*"], "exclude_databases": [".*_tmp"]}, events)
    assert tables(out) == [("shop", "orders"), ("shop", "orders_bak")]
    out = run({"type": "filter", "exclude_tables": [r".*\..*_bak"]}, events)
    assert tables(out) == [("shop", "orders"), ("shop_tmp", "orders"), ("crm", "orders")]


def test_control_events_without_a_table_pass_table_criteria() -> None:
    events = [control("heartbeat"), control("watermark"), control("begin"), ev(db="other"), control("commit")]
    out = run({"type": "filter", "tables": [r"shop\..*"]}, events)
    assert [e.op for e in out] == [Op.HEARTBEAT, Op.WATERMARK, Op.BEGIN, Op.COMMIT]


def test_ddl_of_an_excluded_table_is_dropped_and_of_a_kept_one_kept() -> None:
    kept = control("ddl")
    gone = ev("ddl", db="other", ddl="ALTER TABLE t ADD c int")
    out = run({"type": "filter", "tables": [r"shop\..*"]}, [kept, gone])
    assert out == [kept]


def test_ops_and_exclude_ops_with_groups() -> None:
    events = [
        ev("insert"),
        ev("update"),
        ev("delete"),
        control("ddl"),
        control("heartbeat"),
        control("begin"),
        control("commit"),
    ]
    out = run({"type": "filter", "ops": ["insert", "delete"]}, events)
    assert [e.op for e in out] == [Op.INSERT, Op.DELETE]
    out = run({"type": "filter", "exclude_ops": ["ddl", "heartbeat", "transaction"]}, events)
    assert [e.op for e in out] == [Op.INSERT, Op.UPDATE, Op.DELETE]
    out = run({"type": "filter", "ops": ["row"]}, events)
    assert [e.op for e in out] == [Op.INSERT, Op.UPDATE, Op.DELETE]


def test_condition_over_values_judges_rows_only() -> None:
    big = ev("insert", after=row(1, amount=Decimal("150.00")))
    small = ev("insert", after=row(2, amount=Decimal("20.00")))
    gone = ev("delete", before=row(3, amount=Decimal("999")))
    out = run({"type": "filter", "condition": "after.amount > 100"}, [big, small, control("ddl"), gone])
    # the delete has no after-image: after.amount is null, null > 100 is false
    assert [(e.op, e.row["id"] if e.row else None) for e in out] == [(Op.INSERT, 1), (Op.DDL, None)]


def test_condition_on_status_change_with_nulls() -> None:
    changed = ev("update", before=row(1, status="new"), after=row(1, status="paid"))
    same = ev("update", before=row(2, status="new"), after=row(2, status="new"))
    to_null = ev("update", before=row(3, status="new"), after=row(3, status=None))
    out = run({"type": "filter", "condition": "before.status != after.status"}, [changed, same, to_null])
    assert [e.after["id"] for e in out] == [1, 3]


def test_tombstones_are_not_judged_by_conditions() -> None:
    tomb = tombstone_for(ev("delete"))
    out = run({"type": "filter", "condition": "after.amount > 100"}, [tomb])
    assert out == [tomb]


def test_action_drop_drops_what_passes() -> None:
    events = [ev(table="orders"), ev(table="tmp_1"), control("heartbeat")]
    out = run({"type": "filter", "action": "drop", "tables": [r"shop\.tmp_.*"]}, events)
    assert [e.table for e in out] == ["orders", None]


def test_action_drop_with_only_a_predicate_drops_matching_events() -> None:
    tomb = tombstone_for(ev("delete"))
    out = run({"type": "filter", "action": "drop", "predicate": {"type": "is_tombstone"}}, [ev("insert"), tomb])
    assert [e.op for e in out] == [Op.INSERT]


def test_no_criteria_keeps_everything() -> None:
    events = [ev("insert"), control("ddl")]
    assert run({"type": "filter"}, events) == events


def test_config_errors() -> None:
    assert config_error({"type": "filter", "tables": ["("]}).path == "transforms[0].tables"
    assert config_error({"type": "filter", "ops": ["upsert"]}).path == "transforms[0].ops"
    assert config_error({"type": "filter", "condition": "after.amount >"}).path == "transforms[0].condition"
    assert config_error({"type": "filter", "action": "maybe"}).path == "transforms[0].action"
