"""``cdc-smt validate`` and ``cdc-smt detect``."""

from __future__ import annotations

import io
import json
import sys

import orjson
import pytest

from cdc_smt import schemas
from cdc_smt.connector import cli
from cdc_smt.connector.commands.detect import detect
from cdc_smt.connector.commands.validate import check, pointer
from cdc_smt.connector.framing import write_records
from cdc_smt.transforms.formats import registry
from cdc_smt.transforms.model import Record

CKAFKA_INSERT = {
    "BINLOG_NAME": "mysql-bin.000003", "BINLOG_POS": 154, "DATABASE": "inventory", "EVENT_SERVER_ID": None,
    "GLOBAL_ID": None, "GROUP_ID": None, "NEW_VALUES": {"id": "1004"}, "OLD_VALUES": None, "TABLE": "customers",
    "TIME": "19700101080000", "TYPE": "I",
}  # fmt: skip
CANAL_DDL = {
    "data": None, "database": "test", "es": 1655782153, "id": 0, "isDdl": True, "mysqlType": None, "old": None,
    "pkNames": None, "sql": "ALTER TABLE `user` ADD COLUMN `c` int", "sqlType": None, "table": "user", "ts": 1655782153,
    "type": "ALTER",
}  # fmt: skip
TDSQL_GTID = {
    "logtype": "mysqlbinlog", "eventtype": 33, "eventtypestr": "gtid", "db": "sysdb", "table": "statustableforhb",
    "localip": "10.231.23.241", "localport": 8810, "begintime": 1511419963, "gtid": "35be190b:469", "event_index": "1",
}  # fmt: skip
CLOUDCANAL_INSERT = {
    "action": "INSERT", "before": [], "bid": 0, "data": [{"a": "1"}], "db": "d", "dbValType": {"a": "int"},
    "isDdl": False, "entryType": "ROWDATA", "execTs": 1, "jdbcType": {"a": 4}, "pks": [], "schema": "d", "sendTs": 2,
    "sql": "", "table": "t",
}  # fmt: skip


def jsonl(tmp_path, *lines) -> str:
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"".join((line if isinstance(line, bytes) else orjson.dumps(line)) + b"\n" for line in lines))
    return str(path)


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


# ---------------------------------------------------------------------------
# validate
# ---------------------------------------------------------------------------


def test_validate_reports_line_and_pointer(tmp_path, capsys):
    bad_time = {**CKAFKA_INSERT, "TIME": "1970-01-01"}
    bad_value = {**CKAFKA_INSERT, "NEW_VALUES": {"id": 1004}}
    path = jsonl(tmp_path, CKAFKA_INSERT, b"", bad_time, CANAL_DDL, bad_value, b"{broken")
    code, out, err = run(capsys, "validate", "--format", "ckafka-json", path)
    assert code == 3, err  # completed, with errors
    lines = out.splitlines()
    assert lines[0] == f"{path}:3: /TIME: '1970-01-01' does not match '^[0-9]{{14}}$'"  # blank line 2 still counts
    assert lines[1].startswith(f"{path}:5: /NEW_VALUES/id: 1004 is not of type")
    assert lines[2].startswith(f"{path}:6: (root): malformed JSON")
    assert len(lines) == 3
    assert "5 messages checked against ckafka-json: 3 invalid" in err


def test_validate_all_valid_and_json_output(tmp_path, capsys):
    code, out, err = run(capsys, "validate", "-f", "tdsql-binlog-json", jsonl(tmp_path, TDSQL_GTID, TDSQL_GTID))
    assert (code, out) == (0, "")
    assert "2 messages checked against tdsql-binlog-json: all valid" in err
    bad = {**TDSQL_GTID, "eventtype": 16}
    code, out, _ = run(capsys, "validate", "-f", "tdsql-binlog-json", "--json", "-q", jsonl(tmp_path, bad))
    assert code == 3  # completed, with errors
    report = json.loads(out)
    assert report["line"] == 1 and report["errors"][0]["pointer"] == "/eventtype"
    assert report["errors"][0]["schema_pointer"].startswith("/allOf/3/then")


def test_validate_a_pretty_printed_document(tmp_path, capsys):
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(CLOUDCANAL_INSERT, indent=4))
    code, out, err = run(capsys, "validate", "-f", "cloudcanal-json", str(path))
    assert (code, out) == (0, "")
    assert "1 message checked" in err


def test_validate_all_errors_and_messages_of_another_format(tmp_path, capsys):
    code, out, _ = run(
        capsys, "validate", "-f", "cloudcanal-json", "--all-errors", "-q", jsonl(tmp_path, CKAFKA_INSERT)
    )
    assert code == 3  # completed, with errors
    assert {line.split(": ", 2)[2] for line in out.splitlines()} >= {
        "'action' is a required property",
        "'db' is a required property",
        "'entryType' is a required property",
    }


def test_validate_unknown_format(tmp_path, capsys):
    code, _, err = run(capsys, "validate", "-f", "frob-json", jsonl(tmp_path, CKAFKA_INSERT))
    assert code == 2 and "no JSON Schema for format 'frob-json'" in err


def test_validate_reads_stdin(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(orjson.dumps(TDSQL_GTID) + b"\n")))
    code, out, err = run(capsys, "validate", "-f", "tdsql-binlog-json")
    assert code == 0 and "1 message checked" in err


def test_pointer_escapes_per_rfc_6901():
    assert pointer(["data", 0, "a/b~c"]) == "/data/0/a~1b~0c"
    assert pointer([]) == ""


@pytest.mark.parametrize("name", ["ckafka-json", "tdsql-binlog-json", "cloudcanal-json"])
def test_each_schema_rejects_the_other_formats(name):
    samples = {"ckafka-json": CKAFKA_INSERT, "tdsql-binlog-json": TDSQL_GTID, "cloudcanal-json": CLOUDCANAL_INSERT}
    assert check(name, samples[name]) == []
    for other, msg in samples.items():
        if other != name:
            assert check(name, msg), f"{other} message passes the {name} schema"


# ---------------------------------------------------------------------------
# detect
# ---------------------------------------------------------------------------


def test_detect_names_the_formats_of_each_message(tmp_path, capsys):
    near = {**CKAFKA_INSERT, "TIME": "1"}
    path = jsonl(tmp_path, CKAFKA_INSERT, TDSQL_GTID, CLOUDCANAL_INSERT, CANAL_DDL, near, b"nope")
    code, out, err = run(capsys, "detect", path)
    assert code == 1  # two messages matched no format
    lines = out.splitlines()
    assert lines[0] == f"{path}:1: ckafka-json"
    assert lines[1] == f"{path}:2: tdsql-binlog-json"
    assert lines[2] == f"{path}:3: cloudcanal-json"
    # Canal-shaped DDL is both a canal-json message and a CKafka DDL message.
    assert set(lines[3].split(": ", 1)[1].split(", ")) >= {"ckafka-json"}
    assert lines[4] == f"{path}:5: no format"
    assert (
        lines[5]
        == f"{path}:5:   looks like ckafka-json but fails its schema at /TIME: '1' does not match '^[0-9]{{14}}$'"
    )
    assert lines[6].startswith(f"{path}:6: no format (malformed JSON")
    assert "6 messages" in err and "ckafka-json 2/6" in err


def test_detect_json_output_and_exit_status(tmp_path, capsys):
    code, out, _ = run(capsys, "detect", "--json", "-q", jsonl(tmp_path, TDSQL_GTID))
    assert code == 0
    assert json.loads(out) == {"line": 1, "matches": ["tdsql-binlog-json"], "near_misses": {}}


def test_detect_uses_sniff_for_formats_without_a_schema(monkeypatch):
    from cdc_smt.connector.commands import detect as detect_module
    from cdc_smt.transforms.formats.base import JsonCodec

    class Probe(JsonCodec):
        name = "probe-json"

        @classmethod
        def sniff(cls, message):
            return isinstance(message, dict) and "probe" in message

    monkeypatch.setattr(detect_module, "registry", lambda: {**registry(), "probe-json": Probe})
    assert "probe-json" not in schemas.names()
    assert detect({"probe": 1}).matches == ["probe-json"]
    assert detect({"other": 1}).matches == []


def test_a_sniff_match_failing_the_schema_is_a_near_miss_not_a_match():
    verdict = detect({"logtype": "mysqlbinlog", "eventtypestr": "xid"})
    assert "tdsql-binlog-json" not in verdict.matches
    assert verdict.near["tdsql-binlog-json"].message.endswith("is a required property")


def test_detect_reads_avro_containers(tmp_path, capsys):
    path = tmp_path / "dump.avro"
    write_records(str(path), [Record(value=orjson.dumps(TDSQL_GTID)), Record(value=b"\x00\x01binary")], binary=True)
    code, out, _ = run(capsys, "detect", "-q", str(path))
    lines = out.splitlines()
    assert lines[0] == f"{path}:1: tdsql-binlog-json"
    assert lines[1].startswith(f"{path}:2: ")
