"""``insert_header``, ``drop_headers`` and ``header_from``."""

from __future__ import annotations

from decimal import Decimal

from cdc_smt.transforms.model import Record
from tests.test_smt_base import config_error, control, ev, row, run


def with_headers(*headers: tuple[str, bytes]):
    e = ev()
    e.record = Record(value=b"", headers=list(headers))
    return e


def test_insert_header_starts_from_the_source_headers() -> None:
    (out,) = run({"type": "insert_header", "header": "origin", "value": "mysql-east"}, [with_headers(("trace", b"t1"))])
    assert out.headers == [("trace", b"t1"), ("origin", b"mysql-east")]
    assert out.record.headers == [("trace", b"t1")]


def test_insert_header_template_replace_and_control_events() -> None:
    spec = {"type": "insert_header", "header": "table", "value": "{database}.{table}", "replace": True}
    (out,) = run(spec, [with_headers(("table", b"old"))])
    assert out.headers == [("table", b"shop.orders")]
    (hb,) = run(spec, [control("heartbeat")])
    assert hb.headers is None  # no table: no header
    (ddl,) = run(spec, [control("ddl")])
    assert ddl.headers == [("table", b"shop.orders")]


def test_drop_headers() -> None:
    (out,) = run({"type": "drop_headers", "headers": ["a", "c"]}, [with_headers(("a", b"1"), ("b", b"2"), ("a", b"3"))])
    assert out.headers == [("b", b"2")]


def test_header_from_copy_and_move() -> None:
    e = ev(after=row(1, amount=Decimal("12.50"), status=None))
    (out,) = run({"type": "header_from", "fields": ["amount", "status", "id"], "headers": ["amt", "st", "order"]}, [e])
    assert out.headers == [("amt", b"12.50"), ("order", b"1")]
    assert "amount" in out.after
    (out,) = run(
        {"type": "header_from", "fields": ["email", "id"], "headers": ["mail", "id"], "operation": "move"},
        [ev(after=row(4))],
    )
    assert ("mail", b"user4@example.com") in out.headers
    assert "email" not in out.after and "id" not in out.after and "email" not in out.schema.names
    assert out.key_values() == {"id": 4}


def test_has_header_predicate_sees_headers_added_earlier_in_the_chain() -> None:
    from cdc_smt.transforms.config import build_transforms

    chain = build_transforms(
        [
            {
                "type": "insert_header",
                "header": "pii",
                "value": "1",
                "predicate": {"type": "table_matches", "pattern": r"shop\.users"},
            },
            {"type": "mask_field", "fields": ["email"], "predicate": {"type": "has_header", "name": "pii"}},
        ]
    )
    events = [ev(table="users"), ev(table="orders")]
    for t in chain:
        events = t.apply_batch(events)
    assert [e.after["email"] for e in events] == ["", "user1@example.com"]


def test_header_config_errors() -> None:
    assert config_error({"type": "header_from", "fields": ["a"], "headers": []}).path == "transforms[0].headers"
    assert config_error({"type": "insert_header", "header": "x", "value": "{nope}"}).path == "transforms[0].value"
    assert config_error({"type": "drop_headers", "headers": []}).path == "transforms[0].headers"
