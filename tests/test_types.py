import datetime as dt
from decimal import Decimal

import pytest

from cdc_smt.transforms.types import (
    InvalidTemporal,
    Kind,
    TypeParseError,
    from_text,
    parse_type,
    to_text,
)


@pytest.mark.parametrize(
    "text,base,kind,attrs",
    [
        ("varchar(255)", "varchar", Kind.STRING, {"length": 255}),
        ("decimal(10,4)", "decimal", Kind.DECIMAL, {"precision": 10, "scale": 4}),
        ("DECIMAL(8, 0) unsigned", "decimal", Kind.DECIMAL, {"precision": 8, "scale": 0, "unsigned": True}),
        ("int unsigned", "int", Kind.INT, {"unsigned": True}),
        ("INT(8) UNSIGNED ZEROFILL", "int", Kind.INT, {"length": 8, "unsigned": True, "zerofill": True}),
        ("tinyint(1)", "tinyint", Kind.INT, {"length": 1}),
        ("BOOLEAN", "tinyint", Kind.INT, {"length": 1}),
        ("enum('a','b')", "enum", Kind.ENUM, {"values": ("a", "b")}),
        ("set('a','b''c')", "set", Kind.SET, {"values": ("a", "b'c")}),
        ("bit(64)", "bit", Kind.BIT, {"length": 64}),
        ("datetime(6)", "datetime", Kind.DATETIME, {"fsp": 6}),
        ("timestamp(3)", "timestamp", Kind.TIMESTAMP, {"fsp": 3}),
        ("json", "json", Kind.JSON, {}),
        ("year", "year", Kind.YEAR, {}),
        ("binary(16)", "binary", Kind.BYTES, {"length": 16}),
        ("longblob", "longblob", Kind.BYTES, {}),
        ("DOUBLE PRECISION(10,7) unsigned zerofill", "double", Kind.FLOAT, {"precision": 10, "scale": 7}),
        ("SERIAL", "bigint", Kind.INT, {"unsigned": True}),
        ("FIXED(40,3)", "decimal", Kind.DECIMAL, {"precision": 40, "scale": 3}),
        ("POINT", "point", Kind.GEOMETRY, {}),
        ("varchar(20) CHARACTER SET utf8mb4", "varchar", Kind.STRING, {"charset": "utf8mb4"}),
    ],
)
def test_parse_type(text, base, kind, attrs):
    t = parse_type(text)
    assert (t.base, t.kind) == (base, kind)
    for k, v in attrs.items():
        assert getattr(t, k) == v, k


def test_parse_type_round_trips_through_text():
    for text in [
        "varchar(255)",
        "decimal(10,4) unsigned",
        "enum('x','y''z')",
        "datetime(6)",
        "bit(3)",
        "int(8) unsigned zerofill",
    ]:
        assert parse_type(parse_type(text).text()) == parse_type(text)


def test_unknown_type_is_an_error():
    with pytest.raises(TypeParseError):
        parse_type("varchar2(10")
    with pytest.raises(TypeParseError):
        parse_type("frobnicate")


# The TiCDC Canal-JSON table (../shared/formats/003_*.txt), incl. unsigned ranges.
@pytest.mark.parametrize(
    "text,value,code",
    [
        ("tinyint", -128, -6),
        ("tinyint unsigned", 127, -6),
        ("tinyint unsigned", 128, 5),
        ("smallint", 32767, 5),
        ("smallint unsigned", 32767, 5),
        ("smallint unsigned", 32768, 4),
        ("mediumint", 1, 4),
        ("mediumint unsigned", 16777215, 4),
        ("int", 1, 4),
        ("int unsigned", 2147483647, 4),
        ("int unsigned", 2147483648, -5),
        ("bigint", 1, -5),
        ("bigint unsigned", 9223372036854775807, -5),
        ("bigint unsigned", 9223372036854775808, 3),
        ("bool", 1, -6),
        ("float", None, 7),
        ("double", None, 8),
        ("decimal(10,2)", None, 3),
        ("char(3)", None, 1),
        ("varchar(3)", None, 12),
        ("binary(3)", None, 2004),
        ("varbinary(3)", None, 2004),
        ("tinytext", None, 2005),
        ("text", None, 2005),
        ("mediumtext", None, 2005),
        ("longtext", None, 2005),
        ("tinyblob", None, 2004),
        ("blob", None, 2004),
        ("mediumblob", None, 2004),
        ("longblob", None, 2004),
        ("date", None, 91),
        ("datetime", None, 93),
        ("timestamp", None, 93),
        ("time", None, 92),
        ("year", None, 12),
        ("enum('a')", None, 4),
        ("set('a')", None, -7),
        ("bit(8)", None, -7),
        ("json", None, 12),
    ],
)
def test_jdbc_codes_follow_ticdc_table(text, value, code):
    assert parse_type(text).jdbc_type(value) == code


@pytest.mark.parametrize(
    "text,raw,value",
    [
        ("int", "-5", -5),
        ("bigint unsigned", "18446744073709551615", 18446744073709551615),
        (
            "decimal(65,30)",
            "12345678901234567890123456789012345.123456789012345678901234567890",
            Decimal("12345678901234567890123456789012345.123456789012345678901234567890"),
        ),
        ("double", "1.5", 1.5),
        ("datetime(6)", "2023-03-23 14:30:05.123456", dt.datetime(2023, 3, 23, 14, 30, 5, 123456)),
        ("date", "9999-12-31", dt.date(9999, 12, 31)),
        ("time(6)", "-838:59:59.000000", -dt.timedelta(hours=838, minutes=59, seconds=59)),
        ("time", "10:13:23", dt.timedelta(hours=10, minutes=13, seconds=23)),
        ("varbinary(4)", "\x00\xff", b"\x00\xff"),
        ("bit(1)", "1", True),
        ("bit(64)", "1991", 1991),
        ("year", "2023", 2023),
        ("varchar(10)", "héllo 🎉", "héllo 🎉"),
    ],
)
def test_text_round_trip(text, raw, value):
    t = parse_type(text)
    assert from_text(t, raw) == value
    assert to_text(t, value) == raw


def test_zero_dates_are_kept_as_text():
    for text, raw in [("date", "0000-00-00"), ("datetime", "0000-00-00 00:00:00"), ("datetime", "2023-00-10 00:00:00")]:
        v = from_text(parse_type(text), raw)
        assert isinstance(v, InvalidTemporal)
        assert to_text(parse_type(text), v) == raw
