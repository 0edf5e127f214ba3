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
