"""Predicates, alone and through transforms with ``negate``."""

from __future__ import annotations

import pytest

from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.model import Op, Record
from cdc_smt.transforms.predicates import build_predicate, build_predicates, builtins, predicate_class
from cdc_smt.transforms.smt.base import tombstone_for
from tests.test_smt_base import control, ev, run


def p(spec):
    return build_predicate(spec)


def test_builtins_are_documented() -> None:
    assert {"topic_matches", "has_header", "is_tombstone", "table_matches", "op_in", "is_ddl", "condition"} <= set(
        builtins()
    )
    for name, cls in builtins().items():
        assert cls.summary(), name
        assert all(o.doc for o in cls.options), name


def test_topic_matches_the_current_topic() -> None:
    e = ev()
    e.record = Record(value=b"", topic="dbserver1.shop.orders")
    pred = p({"type": "topic_matches", "pattern": r"dbserver1\..*"})
    assert pred.test(e)
    e.topic = "routed"  # an earlier transform changed it
    assert not pred.test(e)
    assert not pred.test(ev())  # no topic at all


def test_has_header() -> None:
    e = ev()
    e.record = Record(value=b"", headers=[("trace", b"x")])
    assert p({"type": "has_header", "name": "trace"}).test(e)
    assert not p({"type": "has_header", "name": "Trace"}).test(e)
    e.headers = []  # removed by an earlier transform
    assert not p({"type": "has_header", "name": "trace"}).test(e)


def test_is_tombstone_table_matches_op_in_is_ddl_condition() -> None:
    tomb, ins, ddl, hb = tombstone_for(ev("delete")), ev("insert"), control("ddl"), control("heartbeat")
    assert [p({"type": "is_tombstone"}).test(x) for x in (tomb, ins)] == [True, False]
    tm = p({"type": "table_matches", "pattern": r"shop\.ord.*"})
    assert [tm.test(x) for x in (ins, ev(table="users"), hb)] == [True, False, False]
    oi = p({"type": "op_in", "ops": ["insert", "ddl"]})
    assert [oi.test(x) for x in (ins, ddl, hb)] == [True, True, False]
    assert [p({"type": "is_ddl"}).test(x) for x in (ddl, ins)] == [True, False]
    cond = p({"type": "condition", "expr": "after.id == 1"})
    assert cond.test(ins) and not cond.test(ddl)


@pytest.mark.parametrize("negate", [False, True])
def test_negate_inverts_which_events_a_transform_touches(negate: bool) -> None:
    spec = {"type": "route", "topic": "x", "predicate": {"type": "op_in", "ops": ["delete"]}, "negate": negate}
    out = run(spec, [ev("insert"), ev("delete"), control("ddl")])
    routed = [e.op for e in out if e.topic == "x"]
    assert routed == ([Op.INSERT, Op.DDL] if negate else [Op.DELETE])


def test_config_errors() -> None:
    with pytest.raises(ConfigError) as info:
        build_predicates({"a": {"type": "op_in", "ops": ["upsert"]}})
    assert info.value.path == "predicates.a.ops"
    with pytest.raises(ConfigError) as info:
        build_predicates({"a": {"type": "nope"}})
    assert info.value.path == "predicates.a.type" and "unknown predicate type" in str(info.value)
    with pytest.raises(ConfigError) as info:
        build_predicate({"type": "condition", "expr": "op =="}, path="predicates.c")
    assert info.value.path == "predicates.c.expr"
    with pytest.raises(ConfigError, match="not a predicate"):
        predicate_class("cdc_smt.transforms.smt.route.Route")
    with pytest.raises(ConfigError) as info:
        build_predicate({"pattern": "x"}, path="p")
    assert info.value.path == "p.type"
