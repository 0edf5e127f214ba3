"""``timestamp_convert`` and ``timezone_convert``."""

from __future__ import annotations

import datetime as dt

import pytest

from cdc_smt.transforms.errors import TransformError
from cdc_smt.transforms.model import Column, TableSchema
from cdc_smt.transforms.types import InvalidTemporal
from tests.test_smt_base import config_error, control, ev, row, run

T0 = dt.datetime(2024, 3, 1, 9, 15, 2, 120000)


def test_datetime_to_unix_millis_in_the_event_zone() -> None:
    e = ev(after=row(1, created=T0), timezone="Asia/Shanghai")
    out = run({"type": "timestamp_convert", "fields": ["created"], "target": "unix"}, [e])[0]
    # 09:15:02.120 in Shanghai is 01:15:02.120 UTC
    assert out.after["created"] == 1709255702120
    assert out.schema.column("created").type == "bigint"


def test_unix_precision_and_explicit_timezone_for_datetime() -> None:
    e = ev(after=row(1, created=T0))
    spec = {
        "type": "timestamp_convert",
        "fields": ["created"],
        "target": "unix",
        "unix_precision": "seconds",
        "timezone": "Asia/Shanghai",
    }
    assert run(spec, [e])[0].after["created"] == 1709255702


def test_timestamp_columns_always_use_the_event_zone() -> None:
    e = ev(after=row(1, updated=dt.datetime(2024, 3, 1, 1, 0)), timezone="UTC")
    spec = {"type": "timestamp_convert", "fields": ["updated"], "target": "unix", "timezone": "Asia/Shanghai"}
    assert run(spec, [e])[0].after["updated"] == 1709254800000  # 01:00 UTC, not 01:00 Shanghai


def test_unix_to_datetime_and_strings() -> None:
    e = ev(after=row(1, status="1709255702120"), timezone="UTC")
    e.after["status"] = 1709255702120
    out = run({"type": "timestamp_convert", "fields": ["status"], "target": "datetime"}, [e])[0]
    assert out.after["status"] == dt.datetime(2024, 3, 1, 1, 15, 2, 120000)
    out = run({"type": "timestamp_convert", "fields": ["created"], "target": "string", "format": "%Y/%m/%d"}, [ev()])[0]
    assert out.after["created"] == "2024/03/01" and out.schema.column("created").type == "varchar(64)"
    e = ev(after=row(1, status="01.03.2024 10:00"))
    out = run({"type": "timestamp_convert", "fields": ["status"], "target": "date", "format": "%d.%m.%Y %H:%M"}, [e])[0]
    assert out.after["status"] == dt.date(2024, 3, 1)


def test_iso_strings_nulls_and_invalid_dates() -> None:
    e = ev(after=row(1, status="2024-03-01T10:00:00", email=None, created=InvalidTemporal("0000-00-00 00:00:00")))
    out = run({"type": "timestamp_convert", "fields": ["status", "email", "created"], "target": "datetime"}, [e])[0]
    assert out.after["status"] == dt.datetime(2024, 3, 1, 10)
    assert out.after["email"] is None
    assert out.after["created"] == "0000-00-00 00:00:00"


@pytest.mark.parametrize("target", ["unix", "time"])
def test_an_invalid_date_is_an_event_error_where_the_target_cannot_keep_its_text(target: str) -> None:
    e = ev(after=row(1, created=InvalidTemporal("0000-00-00 00:00:00")))
    with pytest.raises(TransformError, match="column 'created' value '0000-00-00 00:00:00'"):
        run({"type": "timestamp_convert", "fields": ["created"], "target": target}, [e])


def test_unparseable_value_is_an_event_error() -> None:
    with pytest.raises(TransformError, match="'status'"):
        run({"type": "timestamp_convert", "fields": ["status"], "target": "unix"}, [ev(after=row(1, status="soon"))])


def test_timestamp_convert_config_errors() -> None:
    assert (
        config_error({"type": "timestamp_convert", "fields": ["a"], "target": "epoch"}).path == "transforms[0].target"
    )
    assert (
        config_error({"type": "timestamp_convert", "fields": ["a"], "target": "unix", "timezone": "Mars/Base"}).path
        == "transforms[0].timezone"
    )


# -- timezone_convert ------------------------------------------------------------------


def test_datetime_is_rebased_and_timestamp_keeps_its_instant() -> None:
    e = ev(
        after=row(1, created=dt.datetime(2024, 3, 1, 9, 0), updated=dt.datetime(2024, 3, 1, 9, 0)),
        timezone="Asia/Shanghai",
    )
    out = run({"type": "timezone_convert", "to": "UTC"}, [e])[0]
    assert out.after["created"] == dt.datetime(2024, 3, 1, 1, 0)  # DATETIME: Shanghai wall clock -> UTC wall clock
    assert out.after["updated"] == dt.datetime(2024, 3, 1, 1, 0)  # TIMESTAMP: same instant, shown in UTC
    assert out.timezone == "UTC"


def test_from_overrides_the_zone_of_datetime_only() -> None:
    e = ev(after=row(1, created=dt.datetime(2024, 7, 1, 12, 0), updated=dt.datetime(2024, 7, 1, 12, 0)), timezone="UTC")
    out = run({"type": "timezone_convert", "from": "America/New_York", "to": "Europe/Berlin"}, [e])[0]
    assert out.after["created"] == dt.datetime(2024, 7, 1, 18, 0)  # EDT -> CEST
    assert out.after["updated"] == dt.datetime(2024, 7, 1, 14, 0)  # UTC instant -> CEST
    assert out.timezone == "Europe/Berlin"


def test_fields_limit_and_dates_times_are_left_alone() -> None:
    schema = TableSchema(
        (Column("id", "int", False, True), Column("d", "date"), Column("a", "datetime"), Column("b", "datetime")),
        ("id",),
    )
    e = ev(
        after={"id": 1, "d": dt.date(2024, 1, 1), "a": dt.datetime(2024, 1, 1, 8), "b": dt.datetime(2024, 1, 1, 8)},
        schema=schema,
        timezone="Asia/Shanghai",
    )
    out = run({"type": "timezone_convert", "to": "UTC", "fields": ["a", "d"]}, [e])[0]
    assert out.after == {
        "id": 1,
        "d": dt.date(2024, 1, 1),
        "a": dt.datetime(2024, 1, 1, 0),
        "b": dt.datetime(2024, 1, 1, 8),
    }


def test_timezone_convert_leaves_ddl_and_checks_zones() -> None:
    ddl = control("ddl")
    assert run({"type": "timezone_convert", "to": "UTC"}, [ddl]) == [ddl]
    assert config_error({"type": "timezone_convert", "to": "Asia/Shangai"}).path == "transforms[0].to"
    assert config_error({"type": "timezone_convert"}).path == "transforms[0].to"
