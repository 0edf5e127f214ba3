"""One rule for single-precision FLOAT, per spelling, and every format that types floats by it."""

from __future__ import annotations

import pytest

from cdc_smt.transforms.formats._connect import ConnectOptions, repr_for_type
from cdc_smt.transforms.formats.canal_json import CANAL_TEXT
from cdc_smt.transforms.model import Column
from cdc_smt.transforms.types import float32, from_text, parse_type

#: (type text, MySQL stores 32-bit floats?, Debezium's Connect type) for every FLOAT spelling.
FLOAT_SPELLINGS = [
    ("float", True, "float"),
    ("FLOAT", True, "float"),
    ("float4", True, "float"),
    ("float(0)", True, "float"),
    ("float(23)", True, "float"),
    # MySQL: p 0-24 is single; Debezium's table says FLOAT32 only up to 23.
    ("float(24)", True, "double"),
    ("float(25)", False, "double"),
    ("float(53)", False, "double"),
    # FLOAT(M,D) is single precision in MySQL; Debezium documents it as FLOAT64.
    ("float(7,2)", True, "double"),
    ("FLOAT(10, 4) UNSIGNED", True, "double"),
    ("double", False, "double"),
    ("double(10,2)", False, "double"),
    ("double precision", False, "double"),
    ("real", False, "double"),
    ("float8", False, "double"),
]


@pytest.mark.parametrize("text,single,_connect", FLOAT_SPELLINGS)
def test_is_single_float_follows_mysql_storage(text: str, single: bool, _connect: str) -> None:
    assert parse_type(text).is_single_float is single


@pytest.mark.parametrize("text,single,_connect", FLOAT_SPELLINGS)
def test_text_values_are_typed_by_the_storage_rule(text: str, single: bool, _connect: str) -> None:
    v = from_text(parse_type(text), "3.14")
    assert v == (float32(3.14) if single else 3.14)
    assert (v == 3.14) is not single


@pytest.mark.parametrize("text,_single,connect", FLOAT_SPELLINGS)
def test_debezium_maps_float_spellings_as_documented(text: str, _single: bool, connect: str) -> None:
    assert repr_for_type(parse_type(text), ConnectOptions()).ctype == connect


@pytest.mark.parametrize("text,single,_connect", FLOAT_SPELLINGS)
def test_canal_reads_and_writes_floats_by_the_storage_rule(text: str, single: bool, _connect: str) -> None:
    col = Column("f", text)
    typed = CANAL_TEXT.to_python(col, "3.14")
    assert typed == (float32(3.14) if single else 3.14)
    # Canal (Java) prints a FLOAT column's value as Float.toString: the short digits.
    assert CANAL_TEXT.to_text(col, float32(3.14)) == ("3.14" if single else repr(float32(3.14)))


# ---------------------------------------------------------------------------
# Inference: one test per rule of every dialect in transforms.inference.RULES.
# ---------------------------------------------------------------------------

import datetime as dt  # noqa: E402
from decimal import Decimal  # noqa: E402

from cdc_smt.transforms.inference import RULES, json_columns, json_type, python_columns, python_type  # noqa: E402

DIALECTS = sorted(RULES)


def test_every_inferring_dialect_has_rules() -> None:
    assert set(RULES) == {"typed", "debezium-json", "canal-json", "typed-json"}


@pytest.mark.parametrize(
    "dialect,boolean",
    [("typed", "bit(1)"), ("debezium-json", "bit(1)"), ("canal-json", "tinyint(1)"), ("typed-json", "bit(1)")],
)
def test_boolean_rule(dialect: str, boolean: str) -> None:
    assert json_type(True, RULES[dialect]) == boolean
    assert python_type(False, RULES[dialect]) == boolean


@pytest.mark.parametrize(
    "dialect,wide", [("typed", True), ("debezium-json", False), ("canal-json", False), ("typed-json", True)]
)
def test_wide_int_rule(dialect: str, wide: bool) -> None:
    rules = RULES[dialect]
    assert json_type(-(1 << 63), rules) == "bigint"
    assert json_type(1 << 63, rules) == ("bigint unsigned" if wide else "bigint")
    assert json_type(1 << 64, rules) == ("decimal(65,0)" if wide else "bigint")
    assert python_type(1 << 63, rules) == ("bigint unsigned" if wide else "bigint")


@pytest.mark.parametrize(
    "dialect,string",
    [("typed", "longtext"), ("debezium-json", "longtext"), ("canal-json", "longtext"), ("typed-json", "longtext")],
)
def test_string_rule(dialect: str, string: str) -> None:
    assert json_type("x", RULES[dialect]) == string


@pytest.mark.parametrize(
    "dialect,structure",
    [("typed", "json"), ("debezium-json", "json"), ("canal-json", "longtext"), ("typed-json", "json")],
)
def test_structure_rule(dialect: str, structure: str) -> None:
    rules = RULES[dialect]
    assert json_type({"a": 1}, rules) == structure
    assert json_type([1], rules) == structure


@pytest.mark.parametrize("dialect", DIALECTS)
def test_geometry_rule(dialect: str) -> None:
    rules = RULES[dialect]
    point, shape = json_type({"x": 1.0, "y": 2.0, "wkb": "AQ=="}, rules), json_type({"wkb": "AQ=="}, rules)
    if dialect == "debezium-json":
        assert (point, shape) == ("point", "geometry")
    else:
        assert point == shape == rules.structure


@pytest.mark.parametrize("dialect", DIALECTS)
def test_fractions_are_double_and_nulls_unknown(dialect: str) -> None:
    rules = RULES[dialect]
    assert json_type(1.5, rules) == "double"
    assert json_type(Decimal("1.50"), rules) == "double"
    assert json_type(None, rules) is None
    assert json_columns([{"n": None}, None, {"n": None}], rules) == (("n", "longtext"),)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_int_and_double_images_make_a_double(dialect: str) -> None:
    rules = RULES[dialect]
    assert json_columns([{"a": 1}, {"a": 1.5}], rules) == (("a", "double"),)
    assert json_columns([{"a": 1.5}, {"a": 1}], rules) == (("a", "double"),)


@pytest.mark.parametrize(
    "dialect,conflict",
    [("typed", "bigint"), ("debezium-json", "bigint"), ("canal-json", "longtext"), ("typed-json", "bigint")],
)
def test_conflict_rule(dialect: str, conflict: str) -> None:
    assert json_columns([{"a": None, "b": 1}, {"a": 7, "b": "x"}], RULES[dialect]) == (("a", "bigint"), ("b", conflict))


def test_columns_keep_first_seen_order() -> None:
    assert [n for n, _ in json_columns([{"b": 1}, {"a": 1, "b": 2}], RULES["typed"])] == ["b", "a"]


@pytest.mark.parametrize(
    "dialect,types",
    [
        ("typed", ("decimal(65,2)", "decimal(65,0)")),
        ("debezium-json", ("decimal(65,2)", "decimal(65,0)")),
        ("typed-json", ("decimal(65,30)", "decimal(65,30)")),
        ("canal-json", ("decimal(5,3)", "decimal(5,3)")),
    ],
)
def test_decimal_rule(dialect: str, types: tuple[str, str]) -> None:
    """``own``: the first value's scale; ``max``: decimal(65,30); ``widest``: over all values."""
    cols = python_columns([{"d": Decimal("12.50")}, {"d": Decimal("1.125")}], RULES[dialect])
    assert cols == (("d", types[0]),)
    if dialect == "canal-json":
        assert python_columns([{"d": Decimal("123")}, {"d": Decimal("0.125")}], RULES[dialect]) == (
            ("d", "decimal(6,3)"),
        )


@pytest.mark.parametrize("dialect", DIALECTS)
def test_python_values_by_type(dialect: str) -> None:
    rules = RULES[dialect]
    assert python_type(1.5, rules) == "double"
    assert python_type(b"\x00", rules) == "longblob"
    assert python_type(dt.datetime(2024, 1, 2, 3, 4, 5), rules) == "datetime(6)"
    assert python_type(dt.date(2024, 1, 2), rules) == "date"
    assert python_type(dt.timedelta(seconds=5), rules) == "time(6)"
    assert python_type("text", rules) == "longtext"
    assert python_columns([{"n": None}, {"n": 3}], rules) == (("n", "bigint"),)


# ---------------------------------------------------------------------------
# fit_value: one coercion of primitive values (DataWorks, DTS) to a column's typed value.
# ---------------------------------------------------------------------------

from cdc_smt.transforms.types import InvalidTemporal, fit_value  # noqa: E402


@pytest.mark.parametrize(
    "type_text,value,expected",
    [
        ("int", "42", 42),
        ("year", dt.datetime(2024, 1, 1), 2024),
        ("year", dt.date(1999, 5, 1), 1999),
        ("decimal(10,2)", 1.5, Decimal("1.5")),
        ("decimal(10,2)", 7, Decimal(7)),
        ("decimal(10,2)", "3.25", Decimal("3.25")),
        ("double", Decimal("2.5"), 2.5),
        ("bit(1)", b"\x01", True),
        ("bit(16)", b"\x01\x02", 258),
        ("varbinary(4)", "ab", b"ab"),
        ("date", dt.datetime(2024, 1, 2, 0, 0), dt.date(2024, 1, 2)),
        ("date", "2024-01-02", dt.date(2024, 1, 2)),
        ("datetime(3)", "2024-01-02 03:04:05.5", dt.datetime(2024, 1, 2, 3, 4, 5, 500000)),
        ("time", dt.datetime(1970, 1, 1, 1, 2, 3), dt.timedelta(hours=1, minutes=2, seconds=3)),
        ("time", "-01:00:00", -dt.timedelta(hours=1)),
        ("time", dt.timedelta(seconds=1), dt.timedelta(seconds=1)),
        ("varchar(20)", b"caf\xc3\xa9", "café"),
        ("varchar(20)", dt.datetime(2024, 1, 2, 3, 4, 5), "2024-01-02 03:04:05.000"),
        ("varchar(20)", Decimal("1E+2"), "100"),
        ("varchar(20)", True, "1"),
        ("varchar(20)", 12, "12"),
    ],
)
def test_fit_value(type_text: str, value: object, expected: object) -> None:
    got = fit_value(parse_type(type_text), value)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("type_text", ["date", "datetime", "timestamp"])
def test_fit_value_keeps_zero_dates(type_text: str) -> None:
    zero = InvalidTemporal("0000-00-00")
    assert fit_value(parse_type(type_text), zero) is zero
