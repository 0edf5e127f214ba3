"""The expression language: grammar, semantics, nulls, errors, and that it cannot run code."""

from __future__ import annotations

from decimal import Decimal

import pytest

from cdc_smt.transforms.errors import ConfigError, TransformError
from cdc_smt.transforms.expr import compile_expr, tokenize
from cdc_smt.transforms.model import ChangeEvent, Op, Record, SourcePosition
from tests.test_smt_base import TextForm, ev, row


def E(**kw) -> ChangeEvent:
    return ev(
        "update",
        before=row(1, status="new", amount=Decimal("5.00")),
        after=row(1, status="paid", amount=Decimal("150.50")),
        **kw,
    )


@pytest.mark.parametrize(
    "source, expected",
    [
        ("after.amount > 100 and op in ('insert', 'update') and database == 'shop'", True),
        ("after.amount > 100 and op == 'insert'", False),
        ("before.status != after.status", True),
        ("after.email is not null", True),
        ("after.nope is null", True),
        ("not after.amount < 100", True),
        ("after.amount between 100 and 200", True),
        ("after.amount not between 100 and 200", False),
        ("after.status like 'pa%'", True),
        ("after.status like 'p_'", False),
        ("after.status not in ('new', 'cancelled')", True),
        ("startswith(after.email, 'user') and endswith(lower(after.email), '.com')", True),
        ("contains(after.email, '@')", True),
        ("matches(table, 'ord(er)?s')", True),
        ("matches(table, 'ord')", False),  # whole-string match
        ("length(after.status) = 4", True),
        ("after.amount * 2 - 1 >= 300", True),
        ("after.amount / 2 == 75.25", True),
        ("-after.amount < 0", True),
        ("(op = 'update' or op = 'delete') and not (table = 'users')", True),
        ("changed('status') and not changed('email')", True),
        ("coalesce(after.nope, after.status) == 'paid'", True),
        ("after.created > '2024-01-01'", True),
        ("after.created < '2024-03-01 09:00:00'", False),
        ("after.id == '1'", True),
        ("after.id in (1, 2, 3)", True),
        ("after.id in ('1')", True),
        ("ts_ms >= 1700000000000", True),
        ("source.binlog_file == 'mysql-bin.000003' and source.binlog_pos > 100", True),
        ("row.id = key.id", True),
        ("TRUE AND NOT FALSE", True),
        ("after.`status` = 'paid'", True),
        ("'it\\'s' = \"it's\"", True),
    ],
)
def test_semantics(source: str, expected: bool) -> None:
    assert compile_expr(source).test(E()) is expected


def test_null_semantics() -> None:
    e = ev("insert", after=row(1, status=None))
    for source, expected in [
        ("after.status == null", True),
        ("after.status != 'x'", True),
        ("after.status < 'x'", False),
        ("after.status > 'x'", False),
        ("after.status in ('x')", False),
        ("after.status not in ('x')", False),
        ("after.status like '%'", False),
        ("before.status is null", True),  # no before-image on an insert
        ("lower(after.status) is null", True),
        ("after.status + 1 is null", True),
        ("after.status", False),
    ]:
        assert compile_expr(source).test(e) is expected, source


def test_float_columns_compare_with_decimal_literals() -> None:
    e = ev("insert", after={"id": 1, "w": 1.1})
    assert compile_expr("after.w == 1.1").test(e)
    assert compile_expr("after.w * 2 > 2.1").test(e)


def test_topic_header_and_key() -> None:
    e = ev("insert")
    e.record = Record(value=b"", topic="orders", headers=[("tenant", b"acme")])
    assert compile_expr("topic == 'orders' and header('tenant') == 'acme' and header('x') is null").test(e)
    e.key = {"k": 5}
    assert compile_expr("key.k == 5").test(e)


def test_raw_values_are_typed_only_when_values_are_read() -> None:
    e = ev("insert", after={"id": "7", "email": "a", "amount": "2.50", "status": "s", "created": None, "updated": None})
    e.values = TextForm()
    assert compile_expr("table == 'orders'").test(e) and e.values is not None
    assert compile_expr("after.amount == 2.5 and after.id == 7").test(e) and e.values is None


@pytest.mark.parametrize(
    "source, message, column",
    [
        ("after.amount >", "expected a value, found end of expression", 15),
        ("after.amount > > 1", "expected a value, found '>'", 16),
        ("aftr.amount == 1", "unknown name 'aftr'", 1),
        ("op == 'x' and", "expected a value", 14),
        ("op == 'x", "unterminated string", 7),
        ("op @ 1", "unexpected character '@'", 4),
        ("frob(op)", "unknown function 'frob'", 1),
        ("lower(op, op)", "takes 1 argument", 1),
        ("matches(op, op)", "pattern must be a string literal", 1),
        ("matches(op, '(')", "bad regular expression", 1),
        ("op like table", "needs a string literal", 9),
        ("source.nope == 1", "source needs one field", 1),
        ("op.x == 1", "'op' has no fields", 1),
        ("(op == 'x'", "expected ')'", 11),
        ("op == 'x')", "unexpected token", 10),
        ("after.", "expected a field name", 7),
        ("op is 'x'", "expected 'null'", 7),
    ],
)
def test_syntax_errors_name_path_and_column(source: str, message: str, column: int) -> None:
    with pytest.raises(ConfigError) as info:
        compile_expr(source, path="transforms[1].condition")
    assert info.value.path == "transforms[1].condition"
    assert message in str(info.value)
    assert f"at column {column} " in str(info.value)


def test_runtime_type_errors_are_event_errors() -> None:
    with pytest.raises(TransformError, match="cannot compare str 'paid' with int 5"):
        compile_expr("after.status > 5").test(E())
    with pytest.raises(TransformError, match="cannot compute"):
        compile_expr("after.amount / 0 > 1").test(E())
    with pytest.raises(TransformError, match="lower"):
        compile_expr("lower(after.amount) == 'x'").test(E())


def test_no_code_can_run() -> None:
    for source in ("__import__('os').system('true')", "op.__len__()", "eval('1')", "[x for x in op]"):
        with pytest.raises(ConfigError):
            compile_expr(source)
    # a dunder column name is just a (missing) column
    assert compile_expr("after.__class__ is null").test(E())


def test_tokens() -> None:
    kinds = [t.kind for t in tokenize("after.`a b` >= 1.5e2 and x != 'y'")]
    assert kinds == ["name", "op", "qname", "op", "num", "name", "name", "op", "str", "eof"]


def test_op_and_control_events() -> None:
    ddl = ChangeEvent(op=Op.DDL, source=SourcePosition(database="shop"), ddl="CREATE TABLE t (a int)")
    assert compile_expr("op == 'ddl' and startswith(ddl, 'CREATE') and table is null").test(ddl)
    assert compile_expr("after.x is null").test(ddl)
