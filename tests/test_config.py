"""Chain files: reading, structural validation with YAML paths, building, error tolerance."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jsonschema
import orjson
import pytest
from referencing import Registry, Resource

from cdc_smt import schemas
from cdc_smt.transforms.chain import ChainHalted
from cdc_smt.transforms.config import ChainConfig, build_chain, build_transforms, load_config
from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.formats import registry
from cdc_smt.transforms.model import Record
from cdc_smt.transforms.smt.base import Transform

CANAL = {
    "data": [{"id": "1", "email": "a@example.com", "amount": "10.50"}],
    "database": "shop",
    "table": "orders",
    "es": 1709255740000,
    "ts": 1709255740312,
    "id": 1,
    "isDdl": False,
    "mysqlType": {"id": "bigint", "email": "varchar(64)", "amount": "decimal(10,2)"},
    "sqlType": {"id": -5, "email": 12, "amount": 3},
    "old": None,
    "pkNames": ["id"],
    "sql": "",
    "type": "INSERT",
}


def need(*formats: str) -> None:
    missing = [f for f in formats if f not in registry()]
    if missing:
        pytest.skip(f"format {missing[0]} is not available yet")


def error_of(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(text)
    return info.value


def test_load_from_yaml_text_file_and_mapping(tmp_path: Path) -> None:
    text = """
source: {format: canal-json, options: {source_timezone: Asia/Shanghai}}
sink: debezium-json
predicates:
  orders: {type: table_matches, pattern: 'shop\\.orders'}
transforms:
  - type: filter
    tables: ['shop\\..*']
  - {type: route, topic: 'cdc.{database}.{table}', predicate: orders}
errors: {tolerance: all}
"""
    expected = ChainConfig(
        source_format="canal-json",
        sink_format="debezium-json",
        source_options={"source_timezone": "Asia/Shanghai"},
        sink_options={},
        transforms=[
            {"type": "filter", "tables": [r"shop\..*"]},
            {"type": "route", "topic": "cdc.{database}.{table}", "predicate": "orders"},
        ],
        predicates={"orders": {"type": "table_matches", "pattern": r"shop\.orders"}},
        errors_tolerance="all",
    )
    assert load_config(text) == expected
    f = tmp_path / "chain.yaml"
    f.write_text(text)
    assert load_config(f) == expected
    assert load_config(str(f)) == expected
    import yaml

    assert load_config(yaml.safe_load(text)) == expected
    # the CLI overrides formats with dataclasses.replace
    assert dataclasses.replace(expected, sink_format="canal-json").sink_format == "canal-json"


def test_defaults() -> None:
    cfg = load_config("source: canal-json\nsink: canal-json\n")
    assert (cfg.transforms, cfg.predicates, cfg.errors_tolerance, cfg.source_options) == ([], {}, "none", {})


@pytest.mark.parametrize(
    "text, path, message",
    [
        (
            "source: a\nsink: b\nerrors: {tolerence: all}",
            "errors.tolerence",
            "unknown key 'tolerence' (did you mean 'tolerance'?; known: tolerance)",
        ),
        ("source: a\nsink: b\nerrors: {tolerance: some}", "errors.tolerance", "must be one of none, all"),
        (
            "source: a\nsink: b\ntransforms:\n  - {type: filter}\n  - {fields: [a]}",
            "transforms[1].type",
            "missing required key",
        ),
        ("source: a\nsink: b\ntransforms: {type: filter}", "transforms", "expected a list, got a mapping"),
        (
            "source: a\nsink: {format: b, option: {}}",
            "sink.option",
            "unknown key 'option' (did you mean 'options'?; known: format, options)",
        ),
        ("source: a\nsink: {options: {}}", "sink.format", "missing required key"),
        ("source: a\nsinks: b", "sinks", "unknown key 'sinks'"),
        ("source: a", "sink", "missing required key"),
        ("source: [1]\nsink: b", "source", "expected a mapping or a string, got a list"),
        ("source: Canal JSON\nsink: b", "source", "not a format name"),
        (
            "source: a\nsink: b\ntransforms:\n  - {type: filter, negate: 'yes please'}",
            "transforms[0].negate",
            "expected true or false",
        ),
        (
            "source: a\nsink: b\ntransforms:\n  - {type: filter, predicate: 3}",
            "transforms[0].predicate",
            "expected a mapping or a string",
        ),
        ("source: a\nsink: b\npredicates: {p: {pattern: x}}", "predicates.p.type", "missing required key"),
        ("source: a\nsink: b\ntransforms:\n  - {type: ''}", "transforms[0].type", ""),
    ],
)
def test_structural_errors_name_the_yaml_path(text: str, path: str, message: str) -> None:
    err = error_of(text)
    assert err.path == path
    assert message in str(err)
    assert str(err).startswith(f"{path}: ")


def test_yaml_syntax_and_shape_errors(tmp_path: Path) -> None:
    assert "not valid YAML (line 2, column 8): mapping values" in str(error_of("source: a\nsink: b: c\n"))
    assert "got a list" in str(error_of("- 1\n"))
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml")


def test_path_prefix_for_embedded_chains() -> None:
    with pytest.raises(ConfigError) as info:
        load_config({"source": "a", "sink": "b", "errors": {"x": 1}}, path="jobs[0]")
    assert info.value.path == "jobs[0].errors.x"


def test_option_errors_surface_when_the_chain_is_built() -> None:
    need("canal-json", "debezium-json")
    cfg = load_config(
        "source: canal-json\nsink: debezium-json\ntransforms:\n"
        "  - {type: filter}\n  - {type: mask_field, fields: [a], mode: hush}"
    )
    with pytest.raises(ConfigError) as info:
        build_chain(cfg)
    assert info.value.path == "transforms[1].mode"
    with pytest.raises(ConfigError) as info:
        build_chain(load_config("source: {format: canal-json, options: {source_timezone: Mars}}\nsink: debezium-json"))
    assert info.value.path == "source.options.source_timezone"
    with pytest.raises(ConfigError) as info:
        build_chain(load_config("source: no-such-format\nsink: debezium-json"))
    assert info.value.path == "source.format"


def test_null_is_refused_for_an_option_with_a_default_and_taken_where_the_default_is_null() -> None:
    """``null`` is not the default: the Python path read ``tombstones_on_delete: null`` as false and
    the native plan failed with a TypeError (found by the chain-loader fuzz target)."""
    need("ckafka-json", "debezium-json")
    text = "source: ckafka-json\nsink: {format: debezium-json, options: {tombstones_on_delete: null}}"
    with pytest.raises(ConfigError) as info:
        build_chain(load_config(text))
    assert info.value.path == "sink.options.tombstones_on_delete"
    assert "got null" in str(info.value) and "default, True" in str(info.value)
    header = "source: canal-json\nsink: debezium-json\ntransforms:\n  - {type: insert_header, header: null, value: x}"
    with pytest.raises(ConfigError) as info:
        build_chain(load_config(header))
    assert info.value.path == "transforms[0].header"  # a required option: no default to point to
    assert "default" not in str(info.value)
    route = "source: canal-json\nsink: debezium-json\ntransforms:\n  - {type: route, topic: x, regex: null}"
    assert build_chain(load_config(route)).transforms[0].opts.regex is None  # null is its default


def test_build_transforms_for_hosts() -> None:
    ts = build_transforms([{"type": "route", "topic": "x", "predicate": "p"}], predicates={"p": {"type": "is_ddl"}})
    assert ts[0].predicate is not None
    with pytest.raises(ConfigError) as info:
        build_transforms(["filter"])
    assert info.value.path == "transforms[0]"


# -- running: error tolerance and dead letters ---------------------------------------


class Explode(Transform):
    """Fails on every event (a test transform)."""

    name = "test_explode"

    def apply(self, event):
        raise ValueError(f"boom on {event.table}")


class Unencodable(Transform):
    """Puts a value no encoder can write (a test transform)."""

    name = "test_unencodable"

    def apply(self, event):
        event.typed()
        event.after["email"] = object()
        return event


def canal(**over) -> Record:
    return Record(value=orjson.dumps({**CANAL, **over}), topic="in", partition=0, offset=7)


def chain_with(transforms: list[dict], tolerance: str = "all"):
    need("canal-json", "debezium-json")
    return build_chain(
        ChainConfig(
            source_format="canal-json", sink_format="debezium-json", transforms=transforms, errors_tolerance=tolerance
        )
    )


def test_chain_runs_transforms_between_codecs() -> None:
    chain = chain_with(
        [{"type": "route", "topic": "cdc.{database}.{table}"}, {"type": "replace_field", "exclude": ["email"]}]
    )
    result = chain.process(canal())
    assert not result.dead_letters
    (out,) = result.outputs
    assert out.topic == "cdc.shop.orders"
    payload = orjson.loads(out.value)
    payload = payload.get("payload", payload)
    assert "email" not in payload["after"] and str(payload["after"]["id"]) == "1"


def test_transform_failure_is_a_dead_letter_with_stage_transform_class_and_message() -> None:
    chain = chain_with([{"type": "tests.test_config.Explode", "name": "exploder"}])
    record = canal()
    result = chain.process(record)
    assert result.outputs == []
    (dl,) = result.dead_letters
    assert (dl.stage, dl.transform, dl.error_class, dl.message) == (
        "transform",
        "exploder",
        "ValueError",
        "boom on orders",
    )
    assert dl.record is record


def test_decode_and_encode_failures_are_dead_letters() -> None:
    chain = chain_with([{"type": "tests.test_config.Unencodable"}])
    bad = Record(value=b"{not json", topic="in", offset=1)
    result = chain.process_batch([bad, canal()])
    assert [d.stage for d in result.dead_letters] == ["decode", "encode"]
    assert result.dead_letters[0].record is bad and result.dead_letters[1].transform is None


def test_tolerance_none_stops_at_the_first_failure() -> None:
    chain = chain_with([{"type": "cast", "spec": {"email": "int"}}], tolerance="none")
    with pytest.raises(ChainHalted) as info:
        chain.process(canal())
    dl = info.value.dead_letter
    assert (dl.stage, dl.transform, dl.error_class) == ("transform", "cast", "TransformError")
    assert "'email'" in dl.message


# -- the schema itself ------------------------------------------------------------------


def test_schema_parts_are_reusable_by_the_job_schema() -> None:
    chain = schemas.load("chain")
    jsonschema.Draft202012Validator.check_schema(chain)
    for part in ("transform", "transforms", "endpoint", "errors", "predicate", "predicates", "format"):
        assert part in chain["$defs"], part
    job_like = {
        "type": "object",
        "properties": {
            "source": {
                "$ref": f"{chain['$id']}#/$defs/endpoint",
                "properties": {"topics": {"type": "array"}},
                "unevaluatedProperties": False,
            },
            "transforms": {"$ref": f"{chain['$id']}#/$defs/transforms"},
            "errors": {
                "$ref": f"{chain['$id']}#/$defs/errors",
                "properties": {"dead_letter_topic": {"type": "string"}},
                "unevaluatedProperties": False,
            },
        },
    }
    registry = Registry().with_resource(chain["$id"], Resource.from_contents(chain))
    v = jsonschema.Draft202012Validator(job_like, registry=registry)
    good = {
        "source": {"format": "canal-json", "topics": ["a"]},
        "transforms": [{"type": "filter"}],
        "errors": {"tolerance": "all", "dead_letter_topic": "dlq"},
    }
    assert list(v.iter_errors(good)) == []
    bad = {
        "source": {"format": "canal-json", "topix": ["a"]},
        "transforms": [{"fields": []}],
        "errors": {"tolerance": "x"},
    }
    assert len(list(v.iter_errors(bad))) == 3
