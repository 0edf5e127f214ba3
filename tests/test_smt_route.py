"""``route`` (templates, regex, timestamps, content) and ``merge_shards``."""

from __future__ import annotations

from decimal import Decimal

from cdc_smt.transforms.model import Op, Record
from cdc_smt.transforms.smt.base import tombstone_for
from tests.test_smt_base import config_error, control, ev, row, run


def topics(events):
    return [e.topic for e in events]


def test_template_over_event_fields() -> None:
    out = run({"type": "route", "topic": "cdc.{database}.{table}"}, [ev(), ev(db="crm", table="users"), control("ddl")])
    assert topics(out) == ["cdc.shop.orders", "cdc.crm.users", "cdc.shop.orders"]


def test_null_template_field_keeps_the_topic() -> None:
    hb = control("heartbeat")
    hb.topic = "heartbeats"
    out = run({"type": "route", "topic": "cdc.{database}.{table}"}, [hb])
    assert topics(out) == ["heartbeats"]


def test_regex_router_with_java_and_python_groups() -> None:
    e1, e2 = ev(), ev()
    e1.record = Record(value=b"", topic="dbserver1.shop.orders")
    e2.record = Record(value=b"", topic="unrelated")
    out = run({"type": "route", "regex": r"dbserver1\.(\w+)\.(\w+)", "replacement": "$1-$2"}, [e1, e2])
    assert topics(out) == ["shop-orders", None]  # no match: unchanged (no topic set)
    e3 = ev()
    e3.record = Record(value=b"", topic="dbserver1.shop.orders")
    out = run({"type": "route", "regex": r"dbserver1\.(?P<db>\w+)\.(\w+)", "replacement": r"\g<db>_\2"}, [e3])
    assert topics(out) == ["shop_orders"]


def test_template_then_regex() -> None:
    out = run(
        {"type": "route", "topic": "{database}.{table}", "regex": r"(shop)\.orders_\d+", "replacement": "$1.orders"},
        [ev(table="orders_7"), ev(table="users")],
    )
    assert topics(out) == ["shop.orders", "shop.users"]


def test_timestamp_router() -> None:
    e = ev(ts_ms=1709255740000)  # 2024-03-01T01:15:40Z
    e.record = Record(value=b"", topic="orders")
    out = run({"type": "route", "topic": "{topic}-{timestamp:%Y%m%d}"}, [e])
    assert topics(out) == ["orders-20240301"]
    late = ev(ts_ms=None)
    late.record = Record(value=b"", topic="orders", timestamp=1735689600000)  # 2025-01-01Z
    out = run({"type": "route", "topic": "{topic}-{timestamp}"}, [late])
    assert topics(out) == ["orders-20250101"]


def test_content_based_routes_first_match_wins() -> None:
    spec = {
        "type": "route",
        "topic": "orders.other",
        "routes": [
            {"when": "after.amount >= 1000", "topic": "orders.big"},
            {"when": "op == 'delete'", "topic": "orders.deleted"},
        ],
    }
    events = [ev(after=row(1, amount=Decimal("1000"))), ev("delete"), ev(after=row(2, amount=Decimal("1")))]
    assert topics(run(spec, events)) == ["orders.big", "orders.deleted", "orders.other"]


def test_row_values_in_templates_and_sanitising() -> None:
    out = run({"type": "route", "topic": "tenant.{row.status}.{table}"}, [ev(after=row(1, status="a b/c"))])
    assert topics(out) == ["tenant.a_b_c.orders"]
    out = run({"type": "route", "topic": "tenant.{row.status}", "sanitize": False}, [ev(after=row(1, status="a b"))])
    assert topics(out) == ["tenant.a b"]


def test_route_applies_to_tombstones() -> None:
    out = run({"type": "route", "topic": "cdc.{table}"}, [tombstone_for(ev("delete"))])
    assert topics(out) == ["cdc.orders"]


def test_route_config_errors() -> None:
    assert config_error({"type": "route"}).path == "transforms[0]"
    assert config_error({"type": "route", "topic": "{nope}"}).path == "transforms[0].topic"
    assert config_error({"type": "route", "regex": "x"}).path == "transforms[0].replacement"
    assert config_error({"type": "route", "regex": "("}).path == "transforms[0].regex"
    err = config_error({"type": "route", "routes": [{"when": "op ==", "topic": "x"}]})
    assert err.path == "transforms[0].routes[0].when"
    err = config_error({"type": "route", "routes": [{"when": "true"}]})
    assert err.path == "transforms[0].routes[0].topic"


# -- merge_shards ------------------------------------------------------------------


SHARDS = {"type": "merge_shards", "pattern": r"(shop)_\d+\.(orders)_\d+", "database": "$1", "table": "$2"}


def test_shards_become_one_logical_table() -> None:
    events = [ev(db="shop_01", table="orders_0"), ev(db="shop_02", table="orders_63"), ev(db="shop_01", table="users")]
    out = run(SHARDS, events)
    assert [(e.database, e.table) for e in out] == [("shop", "orders"), ("shop", "orders"), ("shop_01", "users")]
    assert out[0].source.binlog_pos == 4096  # the rest of the position is kept


def test_source_objects_shared_between_events_are_not_modified() -> None:
    a = ev(db="shop_01", table="orders_1")
    b = ev(db="shop_01", table="orders_1")
    b.source = a.source  # decoders may share one position among the rows of a message
    out = run(SHARDS, [a])
    assert out[0].table == "orders"
    assert b.source.table == "orders_1"


def test_key_field_keeps_keys_unique_across_shards() -> None:
    spec = {**SHARDS, "key_field": "__dbz__physicalTableIdentifier"}
    out = run(
        spec, [ev(db="shop_01", table="orders_3", after=row(5)), ev(db="shop_02", table="orders_3", after=row(5))]
    )
    assert out[0].key_values() == {"id": 5, "__dbz__physicalTableIdentifier": "shop_01.orders_3"}
    assert out[1].key_values() == {"id": 5, "__dbz__physicalTableIdentifier": "shop_02.orders_3"}


def test_ddl_is_renamed_and_heartbeats_untouched() -> None:
    ddl = ev("ddl", db="shop_01", table="orders_2", ddl="ALTER TABLE orders_2 ADD c int")
    hb = control("heartbeat")
    out = run(SHARDS, [ddl, hb])
    assert (out[0].database, out[0].table, out[0].ddl) == ("shop", "orders", "ALTER TABLE orders_2 ADD c int")
    assert out[1] is hb and hb.table is None


def test_only_table_or_only_database() -> None:
    out = run({"type": "merge_shards", "pattern": r"db_\d+\.t", "database": "db"}, [ev(db="db_07", table="t")])
    assert (out[0].database, out[0].table) == ("db", "t")
    out = run({"type": "merge_shards", "pattern": r"shop\.(orders)_\d+", "table": r"\1"}, [ev(table="orders_12")])
    assert (out[0].database, out[0].table) == ("shop", "orders")


def test_merge_shards_config_errors() -> None:
    assert config_error({"type": "merge_shards", "pattern": "x"}).path == "transforms[0].table"
    assert config_error({"type": "merge_shards", "pattern": "(a)", "table": "$2"}).path == "transforms[0].table"
    assert config_error({"type": "merge_shards", "table": "x"}).path == "transforms[0].pattern"
    assert run(SHARDS, [ev("insert")])[0].op is Op.INSERT
