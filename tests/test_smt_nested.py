"""``flatten``, ``extract_field`` and ``hoist_field``."""

from __future__ import annotations

from decimal import Decimal

import orjson
import pytest

from cdc_smt.transforms.errors import TransformError
from cdc_smt.transforms.model import Column, TableSchema
from tests.test_smt_base import config_error, control, ev, run

SCHEMA = TableSchema(
    (
        Column("id", "int", False, True),
        Column("name", "varchar(32)"),
        Column("address", "json"),
        Column("payload", "json"),
    ),
    ("id",),
)


def r(i: int = 1, address: object = None, payload: object = None, name: str = "ann") -> dict:
    return {"id": i, "name": name, "address": address, "payload": payload}


def test_flatten_json_columns_in_place() -> None:
    e = ev(after=r(1, '{"city": "Oslo", "geo": {"lat": 59.9, "lon": 10.7}, "tags": ["a"]}'), schema=SCHEMA)
    out = run({"type": "flatten", "delimiter": "_"}, [e])[0]
    assert list(out.after) == [
        "id",
        "name",
        "address_city",
        "address_geo_lat",
        "address_geo_lon",
        "address_tags",
        "payload",
    ]
    assert out.after["address_geo_lat"] == 59.9 and out.after["address_tags"] == '["a"]'
    types = {c.name: c.type for c in out.schema.columns}
    assert (
        types["address_city"] == "longtext" and types["address_geo_lat"] == "double" and types["address_tags"] == "json"
    )
    assert out.schema.primary_key == ("id",) and out.pk == ("id",)


def test_flatten_leaves_nulls_non_objects_and_unlisted_text() -> None:
    e = ev(after=r(1, None, "[1, 2]", name='{"not": "json column"}'), schema=SCHEMA)
    out = run({"type": "flatten"}, [e])[0]
    assert out.after == r(1, None, "[1, 2]", name='{"not": "json column"}')
    e = ev(after=r(1, None, None, name='{"first": "A"}'), schema=SCHEMA)
    out = run({"type": "flatten", "fields": ["name"]}, [e])[0]
    assert out.after["name.first"] == "A" and "name" not in out.after


def test_flatten_collision_is_an_event_error() -> None:
    schema = TableSchema((Column("a", "json"), Column("a.b", "int")), ())
    with pytest.raises(TransformError, match="collides"):
        run({"type": "flatten"}, [ev(after={"a": '{"b": 1}', "a.b": 2}, schema=schema, pk=())])


def test_extract_field_outbox_payload() -> None:
    payload = {"order_id": 7, "total": "9.90", "lines": [{"sku": "x"}]}
    e = ev(after=r(1, payload=orjson.dumps(payload).decode()), schema=SCHEMA)
    out = run({"type": "extract_field", "field": "payload", "keep": ["id"]}, [e])[0]
    assert out.after == {"id": 1, "order_id": 7, "total": "9.90", "lines": '[{"sku":"x"}]'}
    assert out.key_values() == {"id": 1}
    assert {c.name: c.type for c in out.schema.columns} == {
        "id": "int",
        "order_id": "bigint",
        "total": "longtext",
        "lines": "json",
    }


def test_extract_field_pins_the_key_when_the_key_column_goes() -> None:
    e = ev(after=r(5, payload='{"x": 1}'), schema=SCHEMA)
    out = run({"type": "extract_field", "field": "payload"}, [e])[0]
    assert out.after == {"x": 1} and out.key_values() == {"id": 5}


def test_extract_field_null_is_an_event_error_and_ddl_passes() -> None:
    with pytest.raises(TransformError, match="'payload'"):
        run({"type": "extract_field", "field": "payload"}, [ev(after=r(1), schema=SCHEMA)])
    ddl = control("ddl")
    assert run({"type": "extract_field", "field": "payload"}, [ddl]) == [ddl]


def test_hoist_columns_into_one_json_column() -> None:
    schema = TableSchema(
        (Column("id", "int", False, True), Column("price", "decimal(6,2)"), Column("qty", "int")), ("id",)
    )
    e = ev(after={"id": 1, "price": Decimal("9.90"), "qty": 3}, schema=schema)
    out = run({"type": "hoist_field", "field": "detail", "fields": ["price", "qty"]}, [e])[0]
    assert out.after == {"id": 1, "detail": '{"price":"9.90","qty":3}'}
    assert out.schema.column("detail").type == "json" and out.pk == ("id",)


def test_hoist_everything_pins_the_key() -> None:
    e = ev(after=r(2, address='{"c": 1}'), schema=SCHEMA)
    out = run({"type": "hoist_field", "field": "row"}, [e])[0]
    assert list(out.after) == ["row"]
    assert orjson.loads(out.after["row"]) == {"id": 2, "name": "ann", "address": {"c": 1}, "payload": None}
    assert out.key_values() == {"id": 2}


def test_nested_config_errors() -> None:
    assert config_error({"type": "flatten", "delimiter": ""}).path == "transforms[0].delimiter"
    assert config_error({"type": "extract_field"}).path == "transforms[0].field"
    assert config_error({"type": "hoist_field", "field": ""}).path == "transforms[0].field"
