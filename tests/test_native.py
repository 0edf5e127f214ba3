"""The native core (``cdc_smt._native``) against the Python path: byte for byte.

Every test runs the same records through a chain with the native plan and
through the same chain on the Python path, and asserts equal outputs (value,
key, topic, headers, order) and equal dead letters (stage, class, message).
The inputs: hypothesis change streams (every MySQL type of the property
tests, NULLs, unicode, 65-digit decimals, zero dates, max unsigned bigint,
bytes) as single- and multi-row Canal messages, the edge values of the
Python fast paths, the corpus's Canal files, the examples, and malformed
messages. Tests also check that the plan handled the records it should (a
plan that handled nothing would pass the comparisons trivially).

Skipped when the extension is not built, except under
``CDC_SMT_REQUIRE_NATIVE=1`` (``./dev test``, CI), where it must be.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cdc_smt.transforms import native
from cdc_smt.transforms.chain import Chain, ChainHalted, ChainResult
from cdc_smt.transforms.config import build_chain, load_config
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import ChangeEvent, Record
from tests.corpus import read_messages
from tests.strategies import change_streams
from tests.test_fastpath import EDGES, TYPES

ROOT = Path(__file__).resolve().parents[1]
REQUIRED = os.environ.get("CDC_SMT_REQUIRE_NATIVE") == "1"


def test_the_extension_is_built_where_required() -> None:
    if not REQUIRED:
        pytest.skip("CDC_SMT_REQUIRE_NATIVE is not 1 (./dev test and CI set it)")
    assert native.available(), "cdc_smt._native is not importable: the Rust extension was not built"
    assert native.CANAL_TO_DEBEZIUM in native.status()["plans"]


def test_without_a_rust_toolchain_the_wheel_is_pure_python(tmp_path: Path) -> None:
    """``pip install .`` on a machine without cargo: the build succeeds without the
    extension, and the package imports and reports the core as not built."""
    import shutil
    import subprocess
    import sys

    src = tmp_path / "src"
    src.mkdir()
    for path in ROOT.iterdir():
        if path.is_file() and path.name != "dev":
            shutil.copy2(path, src / path.name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "target", "*.so")
    for folder in ("transforms", "connector", "schemas", "native"):
        shutil.copytree(ROOT / folder, src / folder, ignore=ignore)
    bare = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "CARGO", "RUSTUP", "CDC_SMT_"))}
    bare["PATH"] = os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep) if p and not (Path(p) / "cargo").exists()
    )
    bare["HOME"] = str(tmp_path)  # no ~/.cargo either
    assert shutil.which("cargo", path=bare["PATH"]) is None
    dist = tmp_path / "dist"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--disable-pip-version-check", "-w", str(dist)],
        capture_output=True, text=True, timeout=300, env=bare,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (wheel,) = dist.glob("cdc_smt-*.whl")
    import zipfile

    with zipfile.ZipFile(wheel) as zf:
        assert not [n for n in zf.namelist() if "_native" in n]
        target = tmp_path / "site"
        zf.extractall(target)
    # -S: no site (so not this checkout's editable install); the dependencies from this venv.
    import sysconfig

    paths = [str(target), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    check = (
        "import cdc_smt.transforms.chain, cdc_smt.transforms.native as n; "
        "print(n.__file__, n.status()['active'], n.describe(), sep='|')"
    )
    proc = subprocess.run([sys.executable, "-S", "-c", f"import sys; sys.path[:0] = {paths!r}; {check}"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path, env=bare)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    where, active, described = proc.stdout.strip().split("|")
    assert Path(where).is_relative_to(target) and active == "False"
    assert described == "native core: inactive (not built (no Rust toolchain at install))"


#: The marks of the suites comparing a native plan with the Python path: skipped without the
#: extension (unless it is required), run with the core switched on (``native_switched_on``).
NATIVE_SUITE = [
    pytest.mark.skipif(
        not native.available() and not REQUIRED,
        reason="the native extension is not built (no Rust toolchain at install)",
    ),
    pytest.mark.usefixtures("native_switched_on"),
]
pytestmark = NATIVE_SUITE


#: Debezium options: the defaults (native), the schema part (native), and modes the plan
#: leaves to Python per column (their columns' values send records to Python).
SINKS: list[dict[str, Any]] = [
    {},
    {"schemas_enable": True},
    {"schemas_enable": True, "tombstones_on_delete": False, "topic_prefix": 'srv "1"', "source_timezone": "Asia/Tokyo"},
    {"time_precision_mode": "connect"},
    {"decimal_handling_mode": "string"},
    {"binary_handling_mode": "hex"},
    {"bigint_unsigned_handling_mode": "precise"},
]
ZONES = ["UTC", "Asia/Shanghai", "America/New_York", "Europe/London", "Australia/Lord_Howe"]


def chains(
    source: dict[str, Any] | None = None, sink: dict[str, Any] | None = None, tolerance: str = "all"
) -> tuple[Chain, Chain]:
    """(native chain, Python chain) of canal-json -> debezium-json with these options."""
    make = lambda: Chain(get_codec("canal-json", source or {}), get_codec("debezium-json", sink or {}), [], tolerance)  # noqa: E731
    fast = make()
    assert fast.native is not None, "no native plan for canal-json -> debezium-json"
    slow = make()
    slow.native = None
    return fast, slow


def outputs(result: ChainResult) -> list[tuple]:
    return [(r.value, r.key, r.topic, r.headers, r.partition, r.offset, r.timestamp) for r in result.outputs]


def dead_letters(result: ChainResult) -> list[tuple]:
    return [(d.record, d.stage, d.error_class, d.message, d.transform) for d in result.dead_letters]


def handled(chain: Chain, records: list[Record]) -> int:
    """How many of ``records`` the native plan converts itself (the rest go to Python)."""
    chain.native.plan.clear()
    counts = chain.native.plan.convert([r.value for r in records])[0]
    return sum(n >= 0 for n in counts)


def assert_same(records: list[Record], source: dict[str, Any] | None = None, sink: dict[str, Any] | None = None) -> int:
    """Both paths give the same records and dead letters; returns how many the plan handled."""
    fast, slow = chains(source, sink)
    native_result = fast.process_batch(records)
    python_result = slow.process_batch(records)
    assert outputs(native_result) == outputs(python_result)
    assert dead_letters(native_result) == dead_letters(python_result)
    return handled(fast, records)


#: What ``time.time()`` returns while :func:`assert_plan_agrees` runs both chains.
PYTHON_CLOCK = 1_790_000_000.123


def assert_plan_agrees(
    decoder: str,
    encoder: str,
    plan: str,
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
) -> int:
    """The ``plan`` chain (decoder, transforms, encoder) and its Python twin give the same records,
    dead letters and missing-column counts; returns how many records the plan handled itself."""
    from cdc_smt.transforms.config import build_transforms

    def make() -> Chain:
        codecs = get_codec(decoder, source or {}), get_codec(encoder, sink or {})
        return Chain(codecs[0], codecs[1], build_transforms(transforms or []), "all")

    fast, slow = make(), make()
    assert fast.native is not None and fast.native.name == plan
    slow.native = None
    # A message without a time gets the current one from Python's encoder (the plans leave such
    # messages to Python): one fixed clock for both runs, or they differ by the milliseconds between.
    with mock.patch("time.time", return_value=PYTHON_CLOCK):
        native_result, python_result = fast.process_batch(records), slow.process_batch(records)
    assert outputs(native_result) == outputs(python_result)
    assert dead_letters(native_result) == dead_letters(python_result)
    assert [t.missing_counts for t in fast.transforms] == [t.missing_counts for t in slow.transforms]
    return handled(fast, records)


def corpus_files(corpus: Path, fmt: str) -> list[Path]:
    """The corpus's files of ``fmt`` (without its expected outputs)."""
    return sorted(p for p in (corpus / fmt).iterdir() if p.is_file() and "expected" not in p.name)


def corpus_messages(files: Iterable[Path]) -> Iterator[list[bytes]]:
    """The messages of each of ``files`` that holds messages (the others are skipped)."""
    for path in files:
        try:
            yield read_messages(path)
        except Exception:  # noqa: BLE001 - not a message file
            continue


def edge_messages(rows: int = 1) -> list[bytes]:
    """An INSERT (of ``rows`` rows: the edge row, then it with id 2), an UPDATE and a DELETE
    of a row with each edge value of the fast paths (EDGES) in turn."""
    values = []
    for column, texts in sorted(EDGES.items()):
        for text in texts:
            row = {**BASE, column: text}
            values.append(_message("INSERT", [row, {**row, "id": "2"}][:rows]))
            values.append(_message("UPDATE", [row], old=[{column: BASE[column], "v": None}]))
            values.append(_message("DELETE", [row]))
    return values


def records_of(values: Iterable[bytes | None]) -> list[Record]:
    """Records with coordinates and headers, so that both are seen to be carried alike."""
    return [
        Record(
            value=v,
            key=b"k",
            topic="in",
            partition=0,
            offset=i,
            timestamp=1_700_000_000_000 + i,
            headers=[("h", str(i).encode())] if i % 2 else [],
        )
        for i, v in enumerate(values)
    ]


# ---------------------------------------------------------------------------
# switching and reporting
# ---------------------------------------------------------------------------


def test_cdc_smt_native_0_forces_the_python_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CDC_SMT_NATIVE", "0")
    chain = Chain(get_codec("canal-json"), get_codec("debezium-json"), [], "all")
    assert chain.native is None
    assert native.status()["active"] is False
    assert "inactive (CDC_SMT_NATIVE=0)" in native.describe()
    monkeypatch.setenv("CDC_SMT_NATIVE", "1")
    assert Chain(get_codec("canal-json"), get_codec("debezium-json"), [], "all").native is not None


def test_only_the_plans_it_has_are_used() -> None:
    from cdc_smt.transforms.catalog import SchemaCatalog
    from cdc_smt.transforms.config import build_transforms

    canal, dbz = (lambda: get_codec("canal-json")), (lambda: get_codec("debezium-json"))
    assert Chain(canal(), get_codec("canal-json"), [], "all").native.name == native.CANAL_TO_CANAL
    assert Chain(get_codec("ticdc-canal-json"), dbz(), [], "all").native.name == native.TICDC_TO_DEBEZIUM
    assert Chain(get_codec("ticdc-canal-json"), get_codec("canal-json"), [], "all").native.name == native.TICDC_TO_CANAL
    assert Chain(canal(), dbz(), [], "all", catalog=SchemaCatalog()).native is None  # the plan feeds no catalog
    transforms = build_transforms([{"type": "drop_tombstones"}, {"type": "filter", "condition": "row.id > 1"}])
    assert Chain(canal(), dbz(), transforms, "all").native is None  # a row condition: Python
    assert Chain(canal(), dbz(), transforms[:1], "all").native is not None


def test_version_and_formats_json_report_the_core(capsys: pytest.CaptureFixture[str]) -> None:
    from cdc_smt.connector.cli import main

    assert main(["--version"]) == 0
    assert "native core" in capsys.readouterr().out
    assert main(["formats", "--json", "canal-json", "maxwell-json"]) == 0
    canal, maxwell = orjson.loads(capsys.readouterr().out)
    assert canal["native"] == {
        "active": native.enabled(),
        "plans": [
            native.CANAL_TO_DEBEZIUM,
            native.CANAL_TO_CANAL,
            native.TICDC_TO_CANAL,
            native.CANAL_TO_MAXWELL,
            native.CANAL_TO_OGG,
            native.CANAL_TO_DTS,
            native.DEBEZIUM_TO_CANAL,
            native.CANAL_TO_TICDC,
            native.MAXWELL_TO_CANAL,
            native.OGG_TO_CANAL,
            native.CLOUDCANAL_TO_CANAL,
            native.DATAWORKS_TO_CANAL,
            native.DTS_TO_CANAL,
            native.CANAL_TO_CLOUDCANAL,
            native.CKAFKA_TO_CANAL,
            native.CANAL_TO_CKAFKA,
            native.CANAL_TO_DATAWORKS,
            native.TDSQL_TO_CANAL,
            native.CANAL_TO_TDSQL,
        ]
        if native.enabled()
        else [],
    }
    assert maxwell["native"]["plans"] == (
        [
            native.CANAL_TO_MAXWELL,
            native.TICDC_TO_MAXWELL,
            native.MAXWELL_TO_CANAL,
            native.MAXWELL_TO_DEBEZIUM,
            native.DEBEZIUM_TO_MAXWELL,
        ]
        if native.enabled()
        else []
    )


# ---------------------------------------------------------------------------
# JSON rendering: the plan's floats and strings are orjson's
# ---------------------------------------------------------------------------


@settings(max_examples=2000, deadline=None)
@given(
    v=st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.integers(0, 2**64 - 1).map(lambda b: struct.unpack("<d", struct.pack("<Q", b))[0]),
    )
)
def test_floats_render_as_orjson_renders_them(v: float) -> None:
    assume(math.isfinite(v))
    from cdc_smt import _native

    assert _native.dumps_float(v) == orjson.dumps(v)


@settings(max_examples=500, deadline=None)
@given(s=st.text(alphabet=st.characters(blacklist_categories=("Cs",))))
def test_strings_render_as_orjson_renders_them(s: str) -> None:
    from cdc_smt import _native

    assert _native.dumps_str(s) == orjson.dumps(s)
    assert _native.dumps_str("".join(map(chr, range(0x80))) + s) == orjson.dumps("".join(map(chr, range(0x80))) + s)


# ---------------------------------------------------------------------------
# generated streams
# ---------------------------------------------------------------------------


def canal_stream(events: list[ChangeEvent], tz: str, merge: list[bool]) -> list[bytes]:
    """The events as Canal messages; consecutive messages of one type merged where ``merge`` says."""
    canal = get_codec("canal-json", {"source_timezone": tz})
    messages: list[dict[str, Any]] = []
    for i, event in enumerate(events):
        event.timezone = tz
        for record in canal.encode(event):
            msg = orjson.loads(record.value)
            prev = messages[-1] if messages else None
            if (
                prev is not None
                and merge[i % len(merge)]
                and prev["type"] == msg["type"]
                and (prev["old"] is None) == (msg["old"] is None)
            ):
                prev["data"] += msg["data"]
                if msg["old"] is not None:
                    prev["old"] += msg["old"]
                continue
            messages.append(msg)
    return [orjson.dumps(m) for m in messages]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    sink=st.sampled_from(SINKS),
    tz=st.sampled_from(ZONES),
    merge=st.lists(st.booleans(), min_size=1, max_size=5),
)
def test_random_streams_are_byte_identical(
    stream: list[ChangeEvent], sink: dict[str, Any], tz: str, merge: list[bool]
) -> None:
    values = canal_stream(stream, tz, merge)
    assert_same(records_of(values), {"source_timezone": tz}, sink)


def test_generated_streams_are_mostly_handled_natively() -> None:
    """Over many generated streams (every type, default options) the plan converts most
    messages itself: the comparisons above are not between two Python runs."""
    total = native_count = 0
    for seed in range(40):
        stream = _example(seed)
        values = canal_stream(stream, "Asia/Shanghai", [True, False])
        records = records_of(values)
        total += len(records)
        native_count += assert_same(records, {"source_timezone": "Asia/Shanghai"})
    assert native_count >= total * 0.6, (native_count, total)


def _example(seed: int) -> list[ChangeEvent]:
    from hypothesis import Phase
    from hypothesis import seed as hseed

    found: list[list[ChangeEvent]] = []

    @hseed(seed)
    @settings(
        max_examples=1, phases=[Phase.generate], database=None, deadline=None, suppress_health_check=list(HealthCheck)
    )
    @given(change_streams(max_events=10))
    def draw(stream: list[ChangeEvent]) -> None:
        found.append(stream)

    draw()
    return found[0]


@settings(max_examples=300, deadline=None)
@given(
    wall=st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2037, 12, 31, 23, 59, 59, 999999)),
    tz=st.sampled_from(ZONES),
    fsp=st.sampled_from([0, 3, 6]),
)
def test_timestamps_in_every_zone_including_dst_changes(wall: dt.datetime, tz: str, fsp: int) -> None:
    text = wall.isoformat(" ", "seconds") + (f".{wall.microsecond:06d}"[: fsp + 1] if fsp else "")
    types = {
        "id": "int",
        "ts": f"timestamp({fsp})" if fsp else "timestamp",
        "dt": f"datetime({fsp})" if fsp else "datetime",
    }
    message = _message("INSERT", [{"id": "1", "ts": text, "dt": text}], types=types)
    assert_same(records_of([message]), {"source_timezone": tz})


def test_zone_databases_are_compared_before_zones_are_used() -> None:
    assert all(native.zones_agree(z) for z in ZONES)
    assert not native.zones_agree("Mars/Olympus_Mons")  # unknown to the extension: Python converts
    types = {"id": "int", "ts": "timestamp"}
    fast, _ = chains({"source_timezone": "Asia/Shanghai"})
    spec = native._CanalTables(fast.decoder, fast.encoder).compile(orjson.dumps(types).decode(), None, ["id"], "d", "t")
    assert {c[0]: c[1] for c in spec[0]} == {"id": "int", "ts": "iso_utc"}


# ---------------------------------------------------------------------------
# edge values (those of the Python fast paths), each in a message of its own
# ---------------------------------------------------------------------------


def _message(
    kind: str, data: list[dict], old: list[dict] | None = None, types: dict[str, str] = TYPES, **more: Any
) -> bytes:
    msg = {
        "data": data,
        "database": "shop",
        "es": 1_700_000_000_000,
        "id": 1,
        "isDdl": False,
        "mysqlType": types,
        "old": old,
        "pkNames": ["id"],
        "sql": "",
        "sqlType": {n: 12 for n in types},
        "table": "t",
        "ts": 1_700_000_000_035,
        "type": kind,
    }
    msg.update(more)
    return orjson.dumps(msg)


#: A regular row; the single-precision FLOAT is NULL (its values go to Python) except in its own edges.
BASE = {n: values[0] if n != "f" else None for n, values in EDGES.items()}


@pytest.mark.parametrize(
    "sink", SINKS[:2] + SINKS[3:], ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "defaults"
)
@pytest.mark.parametrize("tz", ["UTC", "Asia/Shanghai"])
def test_every_edge_value(sink: dict[str, Any], tz: str) -> None:
    values = edge_messages()
    count = assert_same(records_of(values), {"source_timezone": tz}, sink)
    if not sink:
        assert count >= len(values) // 2


def test_regular_rows_are_all_handled_natively() -> None:
    """A row of each type's regular value (not the edges) in every op: all native."""
    row = BASE
    values = [
        _message(k, [row, {**row, "id": "2"}], old=[{"v": "x"}, {"i": None}] if k == "UPDATE" else None)
        for k in ("INSERT", "UPDATE", "DELETE", "INIT")
    ]
    for sink in SINKS[:3]:
        assert assert_same(records_of(values), {}, sink) == len(values)
    assert assert_same(records_of(values), {"source_timezone": "Asia/Shanghai"}) == len(values)


# ---------------------------------------------------------------------------
# malformed and unusual messages: Python decides, so dead letters are its own
# ---------------------------------------------------------------------------

GOOD = _message("INSERT", [BASE])
MALFORMED: list[bytes | None] = [
    None,
    b"",
    b"   ",
    b"not json",
    b"[1, 2]",
    b'"text"',
    b"{",
    GOOD[:-1],
    GOOD + b" trailing",
    GOOD.replace(b'"type":"INSERT"', b'"type":"CREATE"'),
    GOOD.replace(b'"type":"INSERT"', b'"type":"QUERY","sql":"CREATE TABLE t (id int)"'),
    GOOD.replace(b'"type":"INSERT"', b'"type":null'),
    GOOD.replace(b'"type":"INSERT"', b'"type":7'),
    GOOD.replace(b'"type":"INSERT"', b'"type":"NOPE"'),
    GOOD.replace(b'"type":"INSERT",', b"").replace(b',"type":"INSERT"', b""),
    _message("INSERT", []),
    _message("INSERT", [BASE], database=7),
    _message("INSERT", [BASE], table=["t"]),
    _message("INSERT", [BASE], es=1.5),
    _message("INSERT", [BASE], es=True),
    _message("INSERT", [BASE], ts="soon"),
    _message("INSERT", [BASE], es=2**64 - 1),
    _message("INSERT", [BASE], pkNames="id"),
    _message("INSERT", [BASE], pkNames=[1]),
    _message("INSERT", [BASE], pkNames=["nope"]),
    _message("INSERT", [BASE], pkNames=[]),
    _message("INSERT", [BASE], pkNames=None),
    _message("INSERT", [BASE], pkNames=["id", "id"]),
    _message("INSERT", [BASE], mysqlType=None),
    _message("INSERT", [BASE], mysqlType={}),
    _message("INSERT", [BASE], mysqlType=[1]),
    _message("INSERT", [BASE], mysqlType={**TYPES, "v": 5}),
    _message("INSERT", [BASE], mysqlType={**TYPES, "v": "no such type"}),
    _message("INSERT", [BASE], sqlType=None),
    _message("INSERT", [BASE], sqlType="x"),
    _message("INSERT", [{**BASE, "extra": "x"}]),
    _message("INSERT", [{**BASE, "i": 5}]),
    _message("INSERT", [{**BASE, "i": True}]),
    _message("INSERT", [{**BASE, "v": {"a": 1}}]),
    _message("INSERT", [BASE, "row"]),
    _message("INSERT", [BASE], old="x"),
    _message("INSERT", [BASE], old=[1]),
    _message("UPDATE", [BASE, BASE], old=[{"v": "a"}]),
    _message("UPDATE", [BASE], old=[{"v": "a", "zz": "b"}]),
    _message("UPDATE", [BASE], old=[]),
    _message("DELETE", [BASE], old=[{"v": "a"}]),
    _message("INSERT", [BASE], unknown=[{"deep": [1, 2.5, None, True, "x"]}]),
    GOOD.replace(b'"isDdl":false', b'"isDdl":1e400'),
    GOOD.replace(b'"isDdl":false', b'"isDdl":123456789012345678901234567890'),
    GOOD.replace(b'"sql":""', b'"sql":"\\ud800"'),
    GOOD.replace(b'"sql":""', b'"sql":"\xff"'),
    GOOD.replace(b'"v":"', b'"v":"\\u00e9\\n\\"', 1),
    GOOD.replace(b'"type":"INSERT"', b'"type":"INSERT","type":"DELETE"'),
    GOOD.replace(b'"i":"0"', b'"i":"0","i":"1"'),
    GOOD.replace(b'"table":"t"', b'"table":""'),
    GOOD.replace(b'"database":"shop"', b'"database":null'),
    b" \n" + GOOD + b"\n",
    _message(
        "INSERT", [{**BASE, "s": "1"}], mysqlType={**TYPES, "s": "set(" + ",".join(f"'l{i}'" for i in range(70)) + ")"}
    ),
]


@pytest.mark.parametrize("sink", SINKS[:2], ids=["schemaless", "schemas"])
def test_malformed_and_unusual_messages_among_good_ones(sink: dict[str, Any]) -> None:
    values = [v for bad in MALFORMED for v in (GOOD, bad)]
    assert assert_same(records_of(values), {}, sink) >= len(MALFORMED)


#: Impossible temporal texts (no MySQL zero date) per column: Python dead-letters them for Debezium.
IMPOSSIBLE = {
    "dt0": "2024-13-45 99:00:00",
    "dt3": "2024-13-45 99:00:00.000",
    "ts0": "2024-02-30 10:00:00",
    "ts6": "2024-13-45 99:00:00",
    "da": "2024-13-45",
    "tm": "99:99:99",
}


@pytest.mark.parametrize("sink", SINKS[:4], ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "defaults")
@pytest.mark.parametrize("column", sorted(IMPOSSIBLE))
def test_impossible_dates_are_dead_letters_on_both_paths(sink: dict[str, Any], column: str) -> None:
    """The plan hands them to Python, whose dead letter names the column; zero dates keep their rule."""
    bad = {**BASE, column: IMPOSSIBLE[column]}
    values = [
        GOOD,
        _message("INSERT", [bad]),
        _message("UPDATE", [bad], old=[{column: BASE[column]}]),
        _message("DELETE", [bad]),
        GOOD,
    ]
    fast, _ = chains({}, sink)
    result = fast.process_batch(records_of(values))
    assert len(result.outputs) == 2
    assert [d.stage for d in result.dead_letters] == ["encode"] * 3
    assert all(f"column {column}: " in d.message or f"column {column!r}" in d.message for d in result.dead_letters)
    assert all(IMPOSSIBLE[column] in d.message for d in result.dead_letters)
    handled = assert_same(records_of(values), {}, sink)
    assert handled <= 2  # the good ones at most
    if sink in SINKS[:2]:  # modes the plan handles: it handles the good ones
        assert handled == 2


#: A good message mutated: bytes inserted ``at`` a place, replacing ``cut`` bytes.
MUTATIONS = {
    "at": st.integers(0, len(GOOD) - 1),
    "insert": st.binary(max_size=3) | st.sampled_from([b'"', b"\\", b"{", b"]", b",", b"null", b"1e999", b"\xc3"]),
    "cut": st.integers(0, 3),
}


@settings(max_examples=300, deadline=None)
@given(**MUTATIONS)
def test_mutated_messages(at: int, insert: bytes, cut: int) -> None:
    """Bytes flipped anywhere in a good message: never a crash, always Python's answer."""
    assert_same(records_of([GOOD[:at] + insert + GOOD[at + cut :], GOOD]))


def test_one_record_at_a_time() -> None:
    """``Chain.process`` (the worker's and the backfill's call) takes the plan too."""
    values = [v for bad in MALFORMED[:20] for v in (GOOD, bad)]
    fast, slow = chains()
    for record in records_of(values):
        native_result, python_result = fast.process(record), slow.process(record)
        assert outputs(native_result) == outputs(python_result)
        assert dead_letters(native_result) == dead_letters(python_result)


def test_max_message_bytes_is_the_decoders() -> None:
    values = [GOOD, GOOD + b" " * 600]
    assert_same(records_of(values), {"max_message_bytes": len(GOOD) + 100})


def test_tolerance_none_halts_on_the_same_dead_letter() -> None:
    values = [GOOD, GOOD, b"broken", GOOD]
    fast, slow = chains(tolerance="none")
    with pytest.raises(ChainHalted) as native_halt:
        fast.process_batch(records_of(values))
    with pytest.raises(ChainHalted) as python_halt:
        slow.process_batch(records_of(values))
    assert dead_letters(ChainResult(dead_letters=[native_halt.value.dead_letter])) == dead_letters(
        ChainResult(dead_letters=[python_halt.value.dead_letter])
    )


def test_tables_and_layouts_change_between_messages() -> None:
    other = {"id": "bigint", "name": "varchar(10)"}
    values = [
        GOOD,
        _message("INSERT", [{"id": "5", "name": "x"}], types=other),
        _message("INSERT", [{"id": "5", "name": "x"}], types=other, table="u"),
        _message("INSERT", [{"id": "5", "name": "x"}], types=other, database="other"),
        GOOD,
        _message("INSERT", [{"name": "x", "id": "5"}], types=other),
        _message("INSERT", [{"id": "5", "name": "x"}], types={"name": "varchar(10)", "id": "bigint"}),
    ]
    for sink in SINKS[:2]:
        assert assert_same(records_of(values), {}, sink) == len(values)


# ---------------------------------------------------------------------------
# real data: the corpus and the examples
# ---------------------------------------------------------------------------


def test_corpus_canal_files(corpus: Path) -> None:
    files = corpus_files(corpus, "canal-json")
    assert files
    total = count = 0
    for values in corpus_messages(files):
        for tz in ("UTC", "Asia/Shanghai"):
            for sink in SINKS[:2]:
                count += assert_same(records_of(values), {"source_timezone": tz}, sink)
                total += len(values)
    assert count > 0 and total > 0


@pytest.mark.parametrize("name", ["orders.canal.jsonl", "demo-shop.canal.jsonl", "orders-with-bad-line.canal.jsonl"])
def test_example_data(name: str) -> None:
    lines = [line for line in (ROOT / "examples" / "data" / name).read_bytes().splitlines() if line.strip()]
    for sink in SINKS[:2]:
        assert assert_same(records_of(lines), {"source_timezone": "Asia/Shanghai"}, sink) > 0


@pytest.mark.parametrize("chain_file", sorted((ROOT / "examples" / "chains").glob("*.yaml")), ids=lambda p: p.stem)
def test_example_chains(chain_file: Path) -> None:
    """An example chain has transforms: no native plan but pii-masking's (the Canal writer's
    masks: tests/test_native_rowxf.py), its results unchanged. Its Canal input, converted
    without the transforms, is byte-identical both ways."""
    os.environ.setdefault("CDC_SMT_PII_SALT", "test-pepper")
    config = load_config(chain_file)
    chain = build_chain(config)
    if config.source_format == "ckafka-json":  # issue #13: the plan that follows the catalog
        assert_catalog_chain_agrees(config, chain, ROOT / "examples" / "data" / "chains-ckafka.jsonl")
        return
    assert (chain.native is not None) == (chain_file.stem == "pii-masking")
    if config.source_format != "canal-json":
        return
    data = {
        "pii-masking": "chains-pii.jsonl",
        "shard-merge": "chains-shards.jsonl",
        "unwrap-for-lakehouse": "chains-lakehouse.jsonl",
    }
    lines = [
        line for line in (ROOT / "examples" / "data" / data[chain_file.stem]).read_bytes().splitlines() if line.strip()
    ]
    assert assert_same(records_of(lines), dict(config.source_options), {"topic_prefix": "x"}) > 0


def assert_catalog_chain_agrees(config: Any, chain: Any, data: Path) -> None:
    """``chain`` (built from ``config``) has its native plan, and over ``data`` it gives what
    its Python twin gives. (Here the plan converts none itself: ``decimal_format: numeric``
    leaves DECIMAL values to Python, and every row has one.)"""
    assert chain.native is not None
    slow = build_chain(config)
    slow.native = None
    records = records_of(line for line in data.read_bytes().splitlines() if line.strip())
    python_calls: list[Record] = []
    one = chain._one
    chain._one = lambda record, result: (python_calls.append(record), one(record, result))
    native_result, python_result = chain.process_batch(records), slow.process_batch(records)
    assert outputs(native_result) == outputs(python_result)
    assert dead_letters(native_result) == dead_letters(python_result)
    assert python_calls == records


def test_the_shop_job_runs_natively() -> None:
    from cdc_smt.connector.jobconfig import load_job

    job = load_job(ROOT / "examples" / "jobs" / "shop-canal-to-debezium.yaml")
    chain = job.build_chain(catalog=job.new_catalog())
    assert chain.native is not None
    lines = [
        line
        for line in (ROOT / "examples" / "data" / "demo-shop.canal.jsonl").read_bytes().splitlines()
        if line.strip()
    ]
    slow = job.build_chain(catalog=job.new_catalog())
    slow.native = None
    records = records_of(lines)
    assert outputs(chain.process_batch(records)) == outputs(slow.process_batch(records))


def test_convert_runs_natively_unless_schema_files_seed_a_catalog(tmp_path: Path) -> None:
    """``cdc-smt convert -f canal-json -t debezium-json`` builds its chain as the worker does:
    without ``--schema`` no shared catalog, so the native plan applies; with one, Python."""
    from cdc_smt.connector.cli import build_parser
    from cdc_smt.connector.commands.convert import build_chain as convert_chain

    if not native.enabled():
        pytest.skip("the native core is not built or is switched off")
    schema = tmp_path / "shop.yaml"
    schema.write_text("ddl:\n  - {database: shop, sql: 'CREATE TABLE orders (id INT PRIMARY KEY)'}\n")
    bare = build_parser().parse_args(["convert", "-f", "canal-json", "-t", "debezium-json", "in.jsonl"])
    seeded = build_parser().parse_args(
        ["convert", "-f", "canal-json", "-t", "debezium-json", "--schema", str(schema), "in.jsonl"]
    )
    assert convert_chain(bare, None).native is not None
    assert convert_chain(seeded, None).native is None
