"""One configuration schema tree: chain files, job files and the backfill section are read
by one YAML reader, checked against one schema tree and explained in one wording; a job
file serves ``convert -c`` too; codecs declare which ways they work."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from cdc_smt.connector import cli
from cdc_smt.connector.commands.formats import format_info, render_text
from cdc_smt.connector.jobconfig import load_job, read_chain
from cdc_smt.connector.spark import settings as backfill_settings
from cdc_smt.transforms import config as chain_config
from cdc_smt.transforms.config import load_config
from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.formats import registry
from cdc_smt.transforms.formats.canal_json import CanalJson
from tests.messages import tdsql_message

ROOT = Path(__file__).resolve().parents[1]
JOBS = sorted((ROOT / "examples" / "jobs").glob("*.yaml"))
ORDERS = ROOT / "examples" / "data" / "orders.canal.jsonl"
BAD_LINE = ROOT / "examples" / "data" / "orders-with-bad-line.canal.jsonl"

CHAIN = {"source": "canal-json", "sink": "debezium-json"}
JOB: dict[str, Any] = {
    "id": "t",
    "kafka": {"bootstrap_servers": "k:9092"},
    "source": {"topics": ["in"], "format": "canal-json"},
    "sink": {"topic": "out", "format": "debezium-json"},
}


def error(fn: Any, *args: Any) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        fn(*args)
    return info.value


def job(**top: Any) -> dict[str, Any]:
    return {**copy.deepcopy(JOB), **top}


# -- one wording, one explainer ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("check", "doc", "path"),
    [
        (load_config, {**CHAIN, "errors": {"tolerence": "all"}}, "errors.tolerence"),
        (load_job, job(errors={"tolerence": "all"}), "errors.tolerence"),
        (backfill_settings.validate_section, {"checkpoint": "/c", "state": {"warmpu": 1}}, "backfill.state.warmpu"),
    ],
)
def test_an_unknown_key_reads_the_same_in_chain_job_and_backfill(check: Any, doc: Any, path: str) -> None:
    err = error(check, doc)
    assert err.path == path
    name = path.rsplit(".", 1)[1]
    assert str(err).startswith(f"{path}: unknown key {name!r} (did you mean ")


@pytest.mark.parametrize(
    ("check", "doc", "path"),
    [
        (load_config, {"source": "canal-json"}, "sink"),
        (load_job, {k: v for k, v in JOB.items() if k != "sink"}, "sink"),
        (load_job, job(sink={"format": "debezium-json"}), "sink.topic"),
        (load_job, job(transforms=[{"fields": ["a"]}]), "transforms[0].type"),
    ],
)
def test_a_missing_key_reads_the_same_in_chain_and_job_files(check: Any, doc: Any, path: str) -> None:
    assert str(error(check, doc)) == f"{path}: missing required key"


def test_a_backfill_position_says_what_may_be_written_there() -> None:
    err = error(backfill_settings.validate_section, {"source": {"from": {"offsets": {}}, "until": {"tme": 5}}})
    assert (
        str(err)
        == "backfill.source.until: expected earliest, latest, {offsets: {topic: {partition: offset}}} or {time: ...}"
    )


def test_the_job_schema_takes_its_chain_parts_from_the_chain_schema() -> None:
    # Rules written once, in the chain schema, now hold in job files too.
    err = error(load_job, job(transforms=[{"type": "filter", "negate": "yes"}]))
    assert str(err) == "transforms[0].negate: expected true or false, got a string"
    err = error(load_job, job(predicates={"big orders": {"type": "is_ddl"}}))
    assert err.path == "predicates"
    err = error(load_job, job(source={"topics": ["in"], "format": "Canal JSON"}))
    assert str(err) == "source.format: 'Canal JSON' is not a format name (see: cdc-smt formats)"
    # ... beside the keys a job adds to them.
    err = error(load_job, job(sink={"format": "debezium-json", "topic": "out", "topics": ["x"]}))
    assert err.path == "sink.topics" and "did you mean 'topic'?" in str(err)
    err = error(load_job, job(errors={"tolerance": "all", "dead_letter_topik": "d"}))
    assert err.path == "errors.dead_letter_topik" and "known: dead_letter_topic, tolerance" in str(err)


def test_the_backfill_section_belongs_to_the_job_schema() -> None:
    # The worker reads a job file that also says how to backfill it: one file per job.
    assert load_job(job(backfill={"checkpoint": "/c", "source": {"from": "earliest"}}), env={}).id == "t"
    err = error(load_job, job(backfill={"checkpoint": "/c", "sourec": {}}))
    assert err.path == "backfill.sourec" and "did you mean 'source'?" in str(err)
    # Every example's section is valid against it.
    sections = [s for s in (yaml.safe_load(p.read_text()).get("backfill") for p in JOBS) if s]
    assert sections
    for section in sections:
        backfill_settings.validate_section(section)


def test_secrets_are_not_shown_whatever_the_mistake() -> None:
    for bad in (12345, ["hunter2-secret"], {"v": "hunter2-secret"}):
        err = error(load_job, job(kafka={"bootstrap_servers": "k:9092", "ssl_password": bad}))
        assert err.path == "kafka.ssl_password"
        assert "12345" not in str(err) and "hunter2" not in str(err)


# -- one reader -----------------------------------------------------------------------------------


def test_yaml_errors_name_file_line_and_column_for_chain_job_and_backfill_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: t\nsource: {format: canal-json\nsink: x\n")
    for read in (load_config, load_job, backfill_settings.load, read_chain):
        message = str(error(read, bad))
        assert message.startswith(f"{bad}: not valid YAML (line 3, column 5): "), (read, message)


def test_missing_and_binary_files_are_named(tmp_path: Path) -> None:
    assert str(error(load_config, tmp_path / "none.yaml")) == f"chain file not found: {tmp_path / 'none.yaml'}"
    assert str(error(load_job, tmp_path / "none.yaml")) == f"job file not found: {tmp_path / 'none.yaml'}"
    binary = tmp_path / "job.yaml"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    for read in (load_config, load_job, read_chain):
        assert str(error(read, binary)).startswith(f"{binary}: not a text file")


# -- convert -c JOB ---------------------------------------------------------------------------------


def _chain_yaml(job_file: Path, out: Path) -> Path:
    """The chain the worker (or the backfill) builds from ``job_file``, written as a chain file."""
    doc = yaml.safe_load(job_file.read_text())
    loaded = backfill_settings.load(job_file)[0] if "backfill" in doc else load_job(job_file)
    cfg = loaded.chain_config()
    out.write_text(
        yaml.safe_dump(
            {
                "source": {"format": cfg.source_format, "options": cfg.source_options},
                "sink": {"format": cfg.sink_format, "options": cfg.sink_options},
                "transforms": cfg.transforms,
                "predicates": cfg.predicates,
                "errors": {"tolerance": cfg.errors_tolerance},
            }
        )
    )
    return out


def convert(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = cli.main(["convert", *argv])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("job_file", JOBS, ids=lambda p: p.name)
def test_convert_runs_a_job_file_as_the_worker_builds_its_chain(
    job_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    via_job, via_chain = tmp_path / "job.out", tmp_path / "chain.out"
    code, err = convert(capsys, "-c", str(job_file), str(ORDERS), "-o", str(via_job))
    assert code == 0, err
    chain_file = _chain_yaml(job_file, tmp_path / "chain.yaml")
    assert convert(capsys, "-c", str(chain_file), str(ORDERS), "-o", str(via_chain))[0] == 0
    written = via_job.read_bytes().splitlines()
    assert written and written == via_chain.read_bytes().splitlines()
    assert all(isinstance(orjson.loads(line), dict) for line in written)


def test_convert_takes_error_tolerance_from_the_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "out")
    tolerant, strict = (
        ROOT / "examples/jobs/shop-canal-to-debezium.yaml",
        ROOT / "examples/jobs/canal-pattern-to-debezium.yaml",
    )
    code, err = convert(capsys, "-c", str(tolerant), str(BAD_LINE), "-o", out)
    assert code == 3 and "errors 1" in err  # completed, with errors
    code, err = convert(capsys, "-c", str(strict), str(BAD_LINE), "-o", out)
    assert code == 1 and "decode failed" in err


def test_convert_seeds_its_catalog_from_the_job_schema_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "shop.yaml").write_text(
        yaml.safe_dump(
            {"ddl": [{"database": "shop", "sql": "CREATE TABLE items (id int PRIMARY KEY, name varchar(32))"}]}
        )
    )
    row = tdsql_message("insert", 23, where=[], field=["7", "'seven'"])
    data = tmp_path / "in.jsonl"
    data.write_bytes(orjson.dumps(row) + b"\n")
    doc = job(source={"topics": ["in"], "format": "tdsql-binlog-json"}, sink={"topic": "out", "format": "canal-json"})
    job_file = tmp_path / "job.yaml"
    job_file.write_text(yaml.safe_dump(doc))
    code, err = convert(capsys, "-c", str(job_file), str(data), "-o", str(tmp_path / "blind.out"))
    assert code == 1 and "not in the schema catalog" in err
    job_file.write_text(yaml.safe_dump({**doc, "schema_files": ["schemas/shop.yaml"]}))  # relative to the job file
    code, err = convert(capsys, "-c", str(job_file), str(data), "-o", str(tmp_path / "seeded.out"))
    assert code == 0, err
    (message,) = [orjson.loads(line) for line in (tmp_path / "seeded.out").read_bytes().splitlines()]
    assert message["data"] == [{"id": "7", "name": "seven"}]


def test_a_job_file_chain_part_substitutes_the_environment_and_keeps_the_job_paths(tmp_path: Path) -> None:
    doc = job(
        source={"topics": ["in"], "format": "canal-json", "options": {"source_timezone": "${TZ_OF_SOURCE}"}},
        kafka={"bootstrap_servers": "${UNSET_BOOTSTRAP}"},  # not the chain's: convert never needs it
    )
    f = tmp_path / "job.yaml"
    f.write_text(yaml.safe_dump(doc))
    cfg, files = read_chain(f, env={"TZ_OF_SOURCE": "Asia/Shanghai"})
    assert (cfg.source_format, cfg.source_options, cfg.sink_format, files) == (
        "canal-json",
        {"source_timezone": "Asia/Shanghai"},
        "debezium-json",
        (),
    )
    f.write_text(yaml.safe_dump(job(transforms=[{"type": "filter", "negate": 1}])))
    assert error(read_chain, f).path == "transforms[0].negate"


# -- codec directions ---------------------------------------------------------------------------------


class DecodeOnlyCanal(CanalJson):
    """Test-only: Canal JSON that refuses to be written."""

    name = "test-decode-only"
    can_encode = False


def test_codecs_declare_their_directions_and_chains_respect_them(monkeypatch: pytest.MonkeyPatch) -> None:
    assert all(cls.can_decode and cls.can_encode for cls in registry().values())
    monkeypatch.setattr(chain_config, "format_registry", lambda: {**registry(), DecodeOnlyCanal.name: DecodeOnlyCanal})
    err = error(chain_config.build_chain, load_config({"source": "canal-json", "sink": DecodeOnlyCanal.name}))
    assert str(err) == "sink.format: format 'test-decode-only' cannot be encoded"
    info = format_info(DecodeOnlyCanal)
    assert (info["decode"], info["encode"]) == (True, False)
    assert render_text([DecodeOnlyCanal]).startswith("test-decode-only  [decode only; JSON, one per line]")
