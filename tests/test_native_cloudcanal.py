"""The native cloudcanal-json -> debezium-json and -> canal-json plans against the Python
path: byte for byte.

CloudCanal's message is Canal's under other names (``action``, ``before``/``data``,
``db``, ``dbValType``/``jdbcType``, ``pks``, ``execTs``/``sendTs``), its values MySQL's
own text (ENUM and SET as labels). Inputs: hypothesis streams written by the
CloudCanal encoder, the fast paths' edge values in one- and two-row messages, the
corpus's CloudCanal files, the fields Python checks that Canal has not (``entryType``,
the DDL flag under both spellings, ``bid``, ``schema``, a DELETE's row in ``before``),
and malformed messages; with and without transforms. Outputs and dead letters must be
equal, and the plans must handle the plain row messages themselves. To canal-json
only with transforms that keep rows (``KEEPING``), ``batch: row``, one-row messages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt.transforms import native
from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.config import build_transforms
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import ChangeEvent, Record
from tests.strategies import change_streams
from tests.test_fastpath import EDGES, TYPES
from tests.test_native import (
    BASE,
    MALFORMED,
    NATIVE_SUITE,
    SINKS,
    ZONES,
    assert_plan_agrees,
    corpus_files,
    corpus_messages,
    records_of,
)
from tests.test_native_transforms import CHAINS, FIVE

pytestmark = NATIVE_SUITE


PLANS = {"debezium-json": native.CLOUDCANAL_TO_DEBEZIUM, "canal-json": native.CLOUDCANAL_TO_CANAL}
#: Per sink format: its options and chains the plan runs.
OPTIONS: dict[str, list[dict[str, Any]]] = {"debezium-json": SINKS, "canal-json": [{}]}
KEEPING = CHAINS["filter-tables"] + [{"type": "route", "topic": "cdc.{database}.{table}"}]
CHAINS_OF: dict[str, list[list[dict[str, Any]]]] = {"debezium-json": [[], FIVE], "canal-json": [[], KEEPING]}


def assert_same(
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
    to: str = "debezium-json",
) -> int:
    """Both paths give the same records and dead letters; returns how many the plan handled."""
    return assert_plan_agrees("cloudcanal-json", to, PLANS[to], records, source, sink, transforms)


def cloudcanal_message(
    action: Any, data: Any, before: list[dict] | None = None, types: dict[str, str] = TYPES, **more: Any
) -> bytes:
    """A CloudCanal row message of the fast paths' table (as the document shows it; ``action``
    and ``data`` may be malformed, ``_ABSENT`` leaves a field out)."""
    msg: dict[str, Any] = {
        "action": action,
        "before": before or [],
        "bid": 0,
        "data": data,
        "db": "shop",
        "dbValType": types,
        "isDdl": False,
        "entryType": "ROWDATA",
        "execTs": 1_700_000_000_000,
        "jdbcType": {n: 12 for n in types},
        "pks": ["id"],
        "schema": "shop",
        "sendTs": 1_700_000_000_035,
        "sql": "",
        "table": "t",
    }
    msg.update(more)
    return orjson.dumps({k: v for k, v in msg.items() if v is not _ABSENT})


_ABSENT = object()


def cloudcanal_stream(events: list[ChangeEvent], tz: str) -> list[bytes]:
    codec = get_codec("cloudcanal-json", {"source_timezone": tz})
    out = []
    for event in events:
        event.timezone = tz
        out.extend(r.value for r in codec.encode(event) if r.value is not None)
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=8),
    to=st.sampled_from(sorted(PLANS)),
    choice=st.integers(0, 100),
    tz=st.sampled_from(ZONES),
    sink_tz=st.sampled_from(ZONES[:2]),
)
def test_random_streams_are_byte_identical(
    stream: list[ChangeEvent], to: str, choice: int, tz: str, sink_tz: str
) -> None:
    values = cloudcanal_stream(stream, tz)
    sink = OPTIONS[to][choice % len(OPTIONS[to])]
    if to == "canal-json":
        sink = {**sink, "source_timezone": sink_tz}
    transforms = CHAINS_OF[to][choice % 2]
    assert_same(records_of(values), {"source_timezone": tz}, sink, transforms, to)


def test_plain_messages_are_handled_natively() -> None:
    from tests.test_native import _example

    for to in PLANS:
        total = handled = 0
        for seed in range(20):
            values = cloudcanal_stream(_example(seed), "Asia/Shanghai")
            total += len(values)
            handled += assert_same(records_of(values), {"source_timezone": "Asia/Shanghai"}, to=to)
        assert handled >= total * 0.5, (to, handled, total)


def test_the_plans_and_the_chains_they_take() -> None:
    def chain(to: str, sink: dict[str, Any], transforms: list[dict[str, Any]]) -> Chain:
        codecs = get_codec("cloudcanal-json"), get_codec(to, sink)
        return Chain(codecs[0], codecs[1], build_transforms(transforms), "all")

    assert chain("debezium-json", {}, FIVE).native is not None
    assert chain("canal-json", {}, KEEPING).native is not None
    assert chain("canal-json", {}, FIVE).native is None  # it changes rows: Python
    assert chain("canal-json", {"batch": "transaction"}, []).native is None
    assert set(PLANS.values()) <= set(native.plans_of("cloudcanal-json"))


#: The edge row for canal-json: an ENUM label (CloudCanal's text; Canal's fast-path edge is an
#: index), no labelled SET (re-written as a bitmask by Python).
CANAL_BASE = {**BASE, "e": "PAID", "s": None}


def edge_messages(rows: int, base: dict[str, Any] = BASE) -> list[bytes]:
    """INSERT (``rows`` rows), UPDATE (full before-images) and DELETE of each edge value in turn."""
    values = []
    for column, texts in sorted(EDGES.items()):
        for text in texts:
            row = {**base, column: text}
            data = [row, {**row, "id": "2"}][:rows]
            old = [{**r, "v": None} for r in data]
            values.append(cloudcanal_message("INSERT", data))
            values.append(cloudcanal_message("UPDATE", data, before=old))
            values.append(cloudcanal_message("DELETE", data))
    return values


def test_edge_values() -> None:
    for rows in (1, 2):
        values = edge_messages(rows)
        for sink in SINKS[:2] + SINKS[3:]:
            for tz in ("UTC", "Asia/Shanghai"):
                handled = assert_same(records_of(values), {"source_timezone": tz}, sink)
                if sink in SINKS[:2]:  # the default modes: native (the other modes' columns: Python)
                    assert handled > len(values) // 2, (handled, len(values))


def test_edge_values_to_canal() -> None:
    values = edge_messages(1, CANAL_BASE)
    for tz, sink_tz in (("UTC", "UTC"), ("Asia/Shanghai", "Asia/Shanghai"), ("UTC", "Asia/Shanghai")):
        handled = assert_same(
            records_of(values), {"source_timezone": tz}, {"source_timezone": sink_tz}, to="canal-json"
        )
        if tz == sink_tz:  # TIMESTAMP text re-based between zones: Python
            assert handled > len(values) // 2, (tz, handled, len(values))
    assert assert_same(records_of(edge_messages(2)), to="canal-json") == 0  # several rows: Python splits them


def test_enum_labels_become_canal_indexes() -> None:
    labels = ["NEW", "PAID", "2", ""]  # enum('NEW','PAID','2',''): "" is Canal's 0
    others = ["0", "1", "01", "new", "NEW,PAID"]  # not labels: Python's dead letters
    values = [cloudcanal_message("INSERT", [{**CANAL_BASE, "e": e}]) for e in labels + others]
    assert assert_same(records_of(values), to="canal-json") == len(labels)
    keyed = {**TYPES, "id": TYPES["e"]}  # an ENUM key: Python writes its label: Python's
    assert (
        assert_same(
            records_of([cloudcanal_message("INSERT", [{**CANAL_BASE, "id": "NEW"}], types=keyed)]), to="canal-json"
        )
        == 0
    )


def test_edge_values_through_transforms() -> None:
    values = edge_messages(2)
    assert assert_same(records_of(values), {}, {}, FIVE) > len(values) // 2
    assert assert_same(records_of(edge_messages(1, CANAL_BASE)), {}, {}, KEEPING, "canal-json") > 0


GOOD = cloudcanal_message("INSERT", [CANAL_BASE])

#: Messages Python reads differently from Canal's (or rejects): each must be Python's, or agree.
VENDOR: list[bytes] = [
    cloudcanal_message("INIT", [BASE]),
    cloudcanal_message("INSERT", [BASE], isDdl=True, sql="CREATE TABLE t (id int)"),
    cloudcanal_message("INSERT", [BASE], isDdl=None),
    cloudcanal_message("INSERT", [BASE], isDdl="false"),
    cloudcanal_message("INSERT", [BASE], isDdl=_ABSENT),
    cloudcanal_message("INSERT", [BASE], isDdl=_ABSENT, ddl=False),
    cloudcanal_message("INSERT", [BASE], isDdl=_ABSENT, ddl=True, sql="DROP TABLE t"),
    cloudcanal_message("INSERT", [BASE], isDdl=False, ddl=True),
    cloudcanal_message("INSERT", [BASE], entryType="TRANSACTIONEND"),
    cloudcanal_message("INSERT", [BASE], entryType="TRANSACTIONBEGIN"),
    cloudcanal_message("INSERT", [BASE], entryType=_ABSENT),
    cloudcanal_message("INSERT", [BASE], bid=7),
    cloudcanal_message("INSERT", [BASE], bid=None),
    cloudcanal_message("INSERT", [BASE], bid="7"),
    cloudcanal_message("INSERT", [BASE], bid=True),
    cloudcanal_message("INSERT", [BASE], bid=1.5),
    cloudcanal_message("INSERT", [BASE], schema=None),
    cloudcanal_message("INSERT", [BASE], schema=_ABSENT),
    cloudcanal_message("INSERT", [BASE], schema="public"),
    cloudcanal_message("INSERT", [BASE], schema=3),
    cloudcanal_message("INSERT", [BASE], sql="INSERT INTO t VALUES (1)"),
    cloudcanal_message("INSERT", [BASE], sql=5),
    cloudcanal_message("INSERT", [BASE], before=[BASE]),
    cloudcanal_message("DELETE", [], before=[BASE]),
    cloudcanal_message("DELETE", [BASE], before=[BASE]),
    cloudcanal_message("UPDATE", [BASE]),
    cloudcanal_message("UPDATE", [BASE], before=[BASE, BASE]),
    cloudcanal_message("UPDATE", [BASE], before=[dict(reversed(BASE.items()))]),
    cloudcanal_message("UPDATE", [BASE], before=[{"id": "1"}]),
    cloudcanal_message("UPDATE", [BASE], before=[{**BASE, "extra": "x"}]),
    cloudcanal_message("INSERT", [BASE], pks=[]),
    cloudcanal_message("INSERT", [BASE], pks=None),
    cloudcanal_message("INSERT", [BASE], pks="id"),
    cloudcanal_message("INSERT", [BASE], pks=["nope"]),
    cloudcanal_message("INSERT", [BASE], dbValType=None),
    cloudcanal_message("INSERT", [BASE], dbValType={**TYPES, "v": 5}),
    cloudcanal_message("INSERT", [BASE], dbValType={**TYPES, "v": "nonsense(type"}),
    cloudcanal_message("INSERT", [BASE], jdbcType=None),
    cloudcanal_message("INSERT", [BASE], jdbcType=_ABSENT),
    cloudcanal_message("INSERT", [BASE], jdbcType={"id": "4"}),
    cloudcanal_message("INSERT", [BASE], execTs=None, sendTs=None),
    cloudcanal_message("INSERT", [BASE], execTs=True),
    cloudcanal_message("INSERT", [BASE], sendTs=1.5),
    cloudcanal_message("INSERT", [BASE], db=None),
    cloudcanal_message("INSERT", [BASE], db=""),
    cloudcanal_message("INSERT", [BASE], table=""),
    cloudcanal_message("INSERT", [BASE], table=7),
    cloudcanal_message("INSERT", [{**BASE, "i": 5}]),
    cloudcanal_message("INSERT", [{**BASE, "b1": True}]),
    cloudcanal_message("INSERT", [{**BASE, "nope": "x"}]),
    cloudcanal_message("INSERT", None),
    cloudcanal_message("INSERT", "rows"),
    cloudcanal_message(None, [BASE]),
    cloudcanal_message(7, [BASE]),
    cloudcanal_message(_ABSENT, [BASE]),
    GOOD.replace(b'"bid":0', b'"bid":0,"bid":1'),
    GOOD.replace(b'"bid":0', b'"entryType":"TRANSACTIONEND","bid":0'),
    GOOD.replace(b'"bid":0', b'"schema":"other","bid":0'),
    GOOD.replace(b'"bid":0', b'"action":"DELETE","bid":0'),
    GOOD.replace(b'"isDdl":false', b'"isDdl":false,"ddl":true,"ddl":false'),
]


def test_what_python_reads_differently_from_canal() -> None:
    values = [v for bad in VENDOR for v in (GOOD, bad)]
    for to, chains in CHAINS_OF.items():
        for transforms in chains:
            assert assert_same(records_of(values), {}, {}, transforms, to) >= len(VENDOR)


def test_malformed_messages_among_good_ones() -> None:
    values = [v for bad in MALFORMED for v in (GOOD, bad)]
    for to in PLANS:
        assert assert_same(records_of(values), to=to) >= len(MALFORMED)


def test_corpus_cloudcanal_files(corpus: Path) -> None:
    values = [v for messages in corpus_messages(corpus_files(corpus, "cloudcanal-json")) for v in messages]
    assert values
    one_op = [orjson.dumps({**orjson.loads(v), "action": a}) for v in values for a in ("INSERT", "UPDATE", "DELETE")]
    for to, chains in CHAINS_OF.items():
        for sink in OPTIONS[to][:2]:
            for transforms in chains:
                assert_same(records_of(values), {}, sink, transforms, to)
        assert assert_same(records_of(one_op), to=to) > 0
