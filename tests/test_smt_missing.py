"""Columns that do not exist: every transform that names columns checks them (``on_missing``).

Against the event's table schema when one is known, else against the row image;
``error`` (the default of mask_field) makes a dead letter naming the transform,
the column and the table; ``warn`` (the others' default) logs once per table and
counts; expressions naming a column no table of a schema file has fail at load.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cdc_smt.transforms.catalog import SchemaCatalog
from cdc_smt.transforms.config import build_chain, build_transforms, load_config
from cdc_smt.transforms.errors import ConfigError, TransformError
from cdc_smt.transforms.model import Record
from cdc_smt.transforms.smt.base import Transform, missing_columns
from tests.test_smt_base import ev, row

ROOT = Path(__file__).resolve().parents[1]


def build(spec: dict[str, Any], on_missing: str | None = None) -> Transform:
    return build_transforms([spec], on_missing=on_missing)[0]


def run(t: Transform, *events: Any) -> list[Any]:
    return t.apply_batch(list(events))


def report(t: Transform) -> list[tuple[str, str, str, int]]:
    return [(m.transform, m.column, m.table, m.rows) for m in missing_columns([t])]


# -- error: mask_field (protection) by default ---------------------------------------


def test_mask_field_misspelled_column_is_an_error_naming_transform_column_and_table() -> None:
    t = build({"type": "mask_field", "fields": ["emial", "status"], "mode": "null"})
    with pytest.raises(TransformError, match=r"mask_field: no column 'emial' in shop\.orders; did you mean 'email'"):
        run(t, ev("insert"))


def test_mask_field_checks_the_row_image_when_no_schema_is_known() -> None:
    t = build({"type": "mask_field", "fields": ["emial"], "mode": "null"})
    with pytest.raises(TransformError, match="no column 'emial'"):
        run(t, ev("insert", schema=None))
    ok = build({"type": "mask_field", "fields": ["email"], "mode": "null"})
    assert run(ok, ev("insert", schema=None))[0].after["email"] is None


def test_a_column_in_the_schema_is_not_missing_even_if_the_row_lacks_it() -> None:
    r = row()
    del r["email"]
    out = run(build({"type": "mask_field", "fields": ["email"], "mode": "null"}), ev("insert", after=r))
    assert "email" not in out[0].after


def test_mask_field_error_becomes_a_dead_letter_in_the_chain() -> None:
    doc = {
        "source": "canal-json",
        "sink": "canal-json",
        "transforms": [{"type": "mask_field", "fields": ["emial"]}],
        "errors": {"tolerance": "all"},
    }
    chain = build_chain(load_config(doc))
    line = (
        b'{"data":[{"id":"1","email":"a@b.c"}],"database":"shop","table":"users","type":"INSERT","isDdl":false,'
        b'"mysqlType":{"id":"bigint","email":"varchar(64)"},"pkNames":["id"],"es":1,"ts":1,"old":null}'
    )
    result = chain.process(Record(value=line))
    assert result.outputs == []
    (dl,) = result.dead_letters
    assert dl.transform == "mask_field" and "'emial'" in dl.message and "shop.users" in dl.message


def test_chain_default_does_not_loosen_a_protecting_transform() -> None:
    t = build({"type": "mask_field", "fields": ["emial"]}, on_missing="ignore")
    with pytest.raises(TransformError):
        run(t, ev("insert"))
    # ... but the transform's own setting does
    own = build({"type": "mask_field", "fields": ["emial"], "on_missing": "warn"}, on_missing="ignore")
    run(own, ev("insert"))
    assert report(own) == [("mask_field", "emial", "shop.orders", 1)]


# -- warn: the others, once per table, counted -------------------------------------------

WARNING_SPECS = {
    "cast": {"type": "cast", "spec": {"ammount": "bigint"}},
    "replace_field-renames": {"type": "replace_field", "renames": {"stauts": "state"}},
    "replace_field-exclude": {"type": "replace_field", "exclude": ["pasword"]},
    "timestamp_convert": {"type": "timestamp_convert", "fields": ["craeted"], "target": "unix"},
    "header_from": {"type": "header_from", "fields": ["tenant"], "headers": ["t"]},
    "route": {"type": "route", "topic": "t.{row.nope}"},
    "filter": {"type": "filter", "condition": "after.ammount > 100"},
}
MISSING = {
    "cast": "ammount",
    "replace_field-renames": "stauts",
    "replace_field-exclude": "pasword",
    "timestamp_convert": "craeted",
    "header_from": "tenant",
    "route": "nope",
    "filter": "ammount",
}


@pytest.mark.parametrize("case", sorted(WARNING_SPECS))
def test_named_column_missing_warns_once_per_table_and_counts(case: str, caplog: pytest.LogCaptureFixture) -> None:
    t = build(WARNING_SPECS[case])
    col = MISSING[case]
    with caplog.at_level(logging.WARNING, logger="cdc_smt.transforms"):
        run(t, ev("insert"), ev("insert"), ev("update"), ev("insert", table="users"))
    warned = [r.getMessage() for r in caplog.records if col in r.getMessage()]
    assert len(warned) == 2  # once per table
    assert all(WARNING_SPECS[case]["type"] in w for w in warned)
    assert sorted(report(t)) == [
        (t.name, col, "shop.orders", 3),
        (t.name, col, "shop.users", 1),
    ]


@pytest.mark.parametrize("case", sorted(WARNING_SPECS))
def test_on_missing_error_makes_each_transform_fail_the_event(case: str) -> None:
    t = build({**WARNING_SPECS[case], "on_missing": "error"})
    with pytest.raises(TransformError, match=f"{MISSING[case]!r} in shop.orders"):
        run(t, ev("insert"))


@pytest.mark.parametrize("case", sorted(WARNING_SPECS))
def test_chain_default_applies_to_transforms_without_their_own(case: str) -> None:
    with pytest.raises(TransformError):
        run(build(WARNING_SPECS[case], on_missing="error"), ev("insert"))
    quiet = build(WARNING_SPECS[case], on_missing="ignore")
    run(quiet, ev("insert"))
    assert report(quiet) == []


def test_present_columns_are_not_reported() -> None:
    specs = [
        {"type": "cast", "spec": {"amount": "bigint"}},
        {"type": "replace_field", "renames": {"status": "state"}},
        {"type": "timestamp_convert", "fields": ["created"], "target": "unix"},
        {"type": "header_from", "fields": ["email"], "headers": ["e"]},
        {"type": "route", "topic": "t.{row.status}"},
        {"type": "filter", "condition": "after.amount > 1 and changed('status')"},
        {"type": "mask_field", "fields": ["email"]},
    ]
    for spec in specs:
        t = build({**spec, "on_missing": "error"})
        run(t, ev("insert"), ev("update"), ev("delete"))


def test_control_events_and_unselected_events_are_not_checked() -> None:
    t = build({"type": "route", "topic": "t.{row.nope}", "on_missing": "error"})
    run(t, ev("ddl", ddl="CREATE TABLE x (id int)"), ev("heartbeat", db=None, table=None))
    p = build({"type": "mask_field", "fields": ["nope"], "predicate": {"type": "table_matches", "pattern": "x\\.y"}})
    run(p, ev("insert"))


def test_on_missing_is_validated_and_only_taken_by_transforms_that_name_columns() -> None:
    with pytest.raises(ConfigError, match="on_missing"):
        build({"type": "cast", "spec": {"a": "int"}, "on_missing": "loud"})
    with pytest.raises(ConfigError, match="unknown option 'on_missing'"):
        build({"type": "drop_headers", "headers": ["x"], "on_missing": "warn"})


def test_chain_file_accepts_top_level_on_missing() -> None:
    doc = {
        "source": "canal-json",
        "sink": "canal-json",
        "on_missing": "error",
        "transforms": [{"type": "cast", "spec": {"ammount": "int"}}],
    }
    chain = build_chain(load_config(doc))
    assert chain.transforms[0].on_missing == "error"
    with pytest.raises(ConfigError, match="on_missing"):
        load_config({**doc, "on_missing": "sometimes"})


# -- load time: expressions against schema files ---------------------------------------------


def _catalog() -> SchemaCatalog:
    c = SchemaCatalog()
    c.apply_ddl("shop", "CREATE TABLE orders (id bigint primary key, amount decimal(10,2), status varchar(8))")
    return c


def _doc(*transforms: dict[str, Any]) -> dict[str, Any]:
    return {"source": "canal-json", "sink": "canal-json", "transforms": list(transforms)}


def test_expression_naming_a_column_no_known_table_has_fails_at_load() -> None:
    with pytest.raises(ConfigError, match=r"transforms\[0\].*'ammount'.*did you mean 'amount'"):
        build_chain(load_config(_doc({"type": "filter", "condition": "after.ammount > 100"})), catalog=_catalog())
    with pytest.raises(ConfigError, match="'nope'"):
        build_chain(load_config(_doc({"type": "route", "topic": "x.{row.nope}"})), catalog=_catalog())
    with pytest.raises(ConfigError, match="'nope'"):
        build_chain(
            load_config(_doc({"type": "route", "routes": [{"when": "row.nope = 1", "topic": "a"}]})),
            catalog=_catalog(),
        )


def test_load_check_follows_renames_and_needs_a_schema() -> None:
    renamed = _doc(
        {"type": "replace_field", "renames": {"amount": "total"}},
        {"type": "filter", "condition": "after.total > 100"},
    )
    build_chain(load_config(renamed), catalog=_catalog())
    build_chain(load_config(_doc({"type": "filter", "condition": "after.ammount > 1"})), catalog=SchemaCatalog())
    build_chain(load_config(_doc({"type": "filter", "condition": "after.ammount > 1"})))


# -- the convert summary and the metric -----------------------------------------------------


def test_convert_summary_lists_missing_columns(tmp_path: Path) -> None:
    chain = tmp_path / "c.yaml"
    chain.write_text(
        "source: canal-json\nsink: canal-json\ntransforms:\n  - {type: filter, condition: 'after.ammount > 100'}\n"
    )
    data = tmp_path / "in.jsonl"
    line = (
        '{"data":[{"id":"%d","amount":"500"}],"database":"shop","table":"orders","type":"INSERT",'
        '"isDdl":false,"mysqlType":{"id":"bigint","amount":"int"},"pkNames":["id"],"es":1,"ts":1,"old":null}\n'
    )
    data.write_text("".join(line % i for i in range(3)))
    proc = subprocess.run(
        [sys.executable, "-m", "cdc_smt.connector.cli", "convert", "-c", str(chain), str(data)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert "warnings: filter: 3 rows missing column 'ammount' in shop.orders" in proc.stderr, proc.stderr


def test_metric_counts_missing_columns_once() -> None:
    from cdc_smt.connector.metrics import WorkerMetrics

    m = WorkerMetrics("job")
    t = build({"type": "cast", "spec": {"ammount": "int"}})
    run(t, ev("insert"), ev("insert"))
    m.observe_missing([t])
    m.observe_missing([t])  # nothing new
    run(t, ev("insert"))
    m.observe_missing([t])
    text = m.render().decode()
    assert 'cdc_smt_missing_columns_total{column="ammount",table="shop.orders",transform="cast"} 3.0' in text


def test_the_issue_repro_with_the_example_chain(tmp_path: Path) -> None:
    text = (ROOT / "examples/chains/pii-masking.yaml").read_text().replace("[email, phone]", "[emial, phone]")
    chain = tmp_path / "t.yaml"
    chain.write_text(text)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cdc_smt.connector.cli",
            "convert",
            "-c",
            str(chain),
            str(ROOT / "examples/data/chains-pii.jsonl"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={"CDC_SMT_PII_SALT": "x", "PATH": ""},
    )
    assert proc.returncode != 0
    assert "no column 'emial'" in proc.stderr
    assert "@" not in proc.stdout  # no e-mail in clear


def test_job_file_accepts_on_missing_and_passes_it_to_the_chain() -> None:
    from cdc_smt.connector.jobconfig import load_job

    doc = {
        "id": "j",
        "kafka": {"bootstrap_servers": "localhost:9092"},
        "source": {"format": "canal-json", "topics": ["in"]},
        "sink": {"format": "canal-json", "topic": "out"},
        "transforms": [{"type": "cast", "spec": {"ammount": "int"}}],
        "on_missing": "error",
    }
    job = load_job(doc, env={})
    assert job.build_chain().transforms[0].on_missing == "error"
    with pytest.raises(ConfigError):
        load_job({**doc, "on_missing": "maybe"}, env={})


def test_load_check_knows_columns_insert_field_adds() -> None:
    doc = _doc(
        {"type": "insert_field", "static": {"region": "eu"}},
        {"type": "drop_tombstones"},
        {"type": "route", "topic": "t.{row.region}"},
    )
    build_chain(load_config(doc), catalog=_catalog())
    with pytest.raises(ConfigError, match="'regoin'"):
        build_chain(
            load_config(_doc(*doc["transforms"][:2], {"type": "route", "topic": "t.{row.regoin}"})), catalog=_catalog()
        )
