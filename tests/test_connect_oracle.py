"""Our transforms against the originals they name: Kafka Connect's and Debezium's SMTs.

Each case is one chain twice, as our YAML and as the Connect properties a
Debezium user would write, run on the same Debezium JSON records (with
schemas, as JsonConverter writes them): the workload of ``tests/workload.py``,
hypothesis change streams (``tests/strategies.py``) and the corpus. The two
outputs must mean the same: the same records in the same order, topics, keys,
values (schema parts and payloads) and headers. Where we differ on purpose, a
test below pins the difference and docs/connect-equivalence.md says why.

One JVM (tests/oracle.py) runs every Java chain of the session.
"""

from __future__ import annotations

import datetime as dt
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt.transforms.config import build_chain, load_config
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import ChangeEvent, Op, Record
from tests import workload
from tests.corpus import read_messages
from tests.oracle import ConnectOracle, HarnessUnavailable, build_harness
from tests.strategies import change_streams

PREFIX = "dbserver1"
ENRS = "io.debezium.transforms.ExtractNewRecordState"
KC = "org.apache.kafka.connect.transforms."
KCP = "org.apache.kafka.connect.transforms.predicates."
ZONED = "io.debezium.time.ZonedTimestamp"
CORPUS_FILES = (
    "flink-debezium-data-schema-include.txt",
    "flink-debezium-postgres-data-schema-include.txt",
)


# -- the oracle ----------------------------------------------------------------


@pytest.fixture(scope="module")
def oracle() -> Iterable[ConnectOracle]:
    try:
        classpath = build_harness()
    except HarnessUnavailable as exc:
        if os.environ.get("CDC_SMT_REQUIRE_JVM") == "1":
            pytest.fail(f"CDC_SMT_REQUIRE_JVM=1 but the Connect oracle is unavailable: {exc}")
        pytest.skip(str(exc))
    o = ConnectOracle(classpath)
    yield o
    o.close()


@pytest.mark.skipif(os.environ.get("CDC_SMT_REQUIRE_JVM") != "1", reason="CDC_SMT_REQUIRE_JVM is not 1")
def test_harness_is_built_where_required() -> None:
    """./dev test and CI have java and mvn: there the oracle must build, not skip."""
    classpath = build_harness()
    jar = Path(classpath.split(os.pathsep)[0])
    assert jar.is_file() and (jar.parent / ".stamp").is_file()


# -- inputs ----------------------------------------------------------------------


def debezium_records(
    events: Iterable[ChangeEvent], headers: list[tuple[str, bytes]] | None = None
) -> list[Record]:
    """Row events as a Debezium MySQL connector writes them (schemas on, a tombstone after
    each delete), on the topic ``<prefix>.<db>.<table>``, each with ``headers``."""
    encoder = get_codec("debezium-json", {"schemas_enable": True, "topic_prefix": PREFIX})
    out: list[Record] = []
    for e in events:
        if e.op not in (Op.INSERT, Op.UPDATE, Op.DELETE, Op.READ):
            continue
        topic = f"{PREFIX}.{e.source.database}.{e.source.table}"
        for r in encoder.encode_batch([e]):
            out.append(
                Record(value=r.value, key=r.key, topic=topic, partition=0, offset=len(out), timestamp=e.ts_ms, headers=list(headers or []))
            )
    return out


def corpus_records(path: Path) -> tuple[str, list[Record]]:
    """The file's Debezium prefix (``source.name``) and its messages as records on ``<prefix>.<db>.<table>``."""
    out: list[Record] = []
    prefix = PREFIX
    for m in read_messages(path):
        source = (orjson.loads(m).get("payload") or {}).get("source") or {}
        prefix = source.get("name", prefix)
        middle = source.get("schema") or source.get("db")
        topic = f"{prefix}.{middle}.{source.get('table')}"
        out.append(Record(value=m, topic=topic, partition=0, offset=len(out), timestamp=1_700_000_000_000))
    return prefix, out


# -- the two sides -----------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One chain as our YAML (``ours``) and as Connect properties (``java``)."""

    id: str
    ours: list[dict[str, Any]]
    java: dict[str, str]
    predicates: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Options of our debezium-json sink beyond schemas and the topic prefix.
    sink: dict[str, Any] = field(default_factory=dict)
    #: Column-agnostic: also run over random tables (hypothesis) and the corpus.
    generic: bool = True
    #: Also over the corpus, whose deletes have no key and no tombstone (see
    #: test_tombstones_come_from_deletes).
    corpus: bool = True


def connect(*stages: tuple[str, str, dict[str, Any]], predicates: Iterable[tuple[str, str, dict[str, Any]]] = ()) -> dict[str, str]:
    """Connect properties from ``(alias, class, config)`` stages and predicates."""
    props: dict[str, str] = {"transforms": ",".join(a for a, _, _ in stages)}
    for alias, cls, conf in stages:
        props[f"transforms.{alias}.type"] = cls
        props.update({f"transforms.{alias}.{k}": str(v) for k, v in conf.items()})
    preds = list(predicates)
    if preds:
        props["predicates"] = ",".join(a for a, _, _ in preds)
        for alias, cls, conf in preds:
            props[f"predicates.{alias}.type"] = cls
            props.update({f"predicates.{alias}.{k}": str(v) for k, v in conf.items()})
    return props


def ours(case: Case, records: list[Record], prefix: str = PREFIX) -> list[dict[str, Any]]:
    """Our chain (Debezium JSON in and out, the sink configured as the source connector)."""
    config = load_config(
        {
            "source": {"format": "debezium-json"},
            "sink": {
                "format": "debezium-json",
                "options": {"schemas_enable": True, "topic_prefix": prefix, **case.sink},
            },
            "transforms": case.ours,
            "predicates": case.predicates,
            "errors": {"tolerance": "all"},
        }
    )
    chain = build_chain(config)
    out: list[dict[str, Any]] = []
    for r in records:
        result = chain.process(r)
        for o in result.outputs:
            out.append(
                {"topic": o.topic or r.topic, "key": o.key, "value": o.value, "headers": list(o.headers)}
            )
        out += [{"error": d.describe()} for d in result.dead_letters]
    return out


def theirs(oracle: ConnectOracle, case: Case, records: list[Record]) -> list[dict[str, Any]]:
    wire = [
        {
            "topic": r.topic,
            "partition": r.partition,
            "timestamp": r.timestamp,
            "key": None if r.key is None else r.key.decode(),
            "value": None if r.value is None else r.value.decode(),
            "headers": r.headers,
        }
        for r in records
    ]
    return oracle.run(case.java, wire)


def _float32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0]


def _payload(schema: Any, value: Any) -> Any:
    """``value`` read by its Connect schema: ``float`` (32-bit) numbers as the float32 they
    denote (Java writes a float32's digits as a double, 38722752.0, Python its shortest form,
    38722750.0) and Debezium ZonedTimestamps as instants (the same instant may be written in
    UTC or in another offset)."""
    if value is None or not isinstance(schema, dict):
        return value
    kind = schema.get("type")
    if kind == "float" and isinstance(value, (int, float)):
        return _float32(value)
    if schema.get("name") == ZONED and isinstance(value, str):
        return dt.datetime.fromisoformat(value).timestamp()
    if kind == "struct" and isinstance(value, dict):
        fields = {f["field"]: f for f in schema.get("fields", ())}
        return {k: _payload(fields.get(k), v) for k, v in value.items()}
    if kind == "array" and isinstance(value, list):
        return [_payload(schema.get("items"), v) for v in value]
    if kind == "map" and isinstance(value, dict):
        return {k: _payload(schema.get("values"), v) for k, v in value.items()}
    return value


def _json(raw: bytes | str | None) -> Any:
    """JsonConverter text parsed; with a schema part, the payload read by its schema."""
    if raw is None:
        return None
    doc = orjson.loads(raw)
    if isinstance(doc, dict) and doc.keys() == {"schema", "payload"}:
        doc["payload"] = _payload(doc["schema"], doc["payload"])
    return doc


def meaning(rec: dict[str, Any]) -> dict[str, Any]:
    """A record as Connect sees it: key and value parsed (schema part and payload)."""
    if "error" in rec:
        return {"error": True}
    return {"topic": rec["topic"], "key": _json(rec["key"]), "value": _json(rec["value"]), "headers": rec["headers"]}


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where ``a`` (ours) and ``b`` (Connect's) differ, as short lines."""
    if type(a) is not type(b):
        return [f"{path}: {a!r:.120} != {b!r:.120}"]
    if isinstance(a, dict):
        out = []
        for k in [*a, *(k for k in b if k not in a)]:
            if k not in a or k not in b:
                out.append(f"{path}/{k}: only in {'Connect' if k not in a else 'ours'}: {a.get(k, b.get(k))!r:.120}")
            else:
                out += differences(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, (list, tuple)):
        out = [f"{path}: {len(a)} items != {len(b)}"] if len(a) != len(b) else []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [f"{path}: {a!r:.120} != {b!r:.120}"]


def assert_same(oracle: ConnectOracle, case: Case, records: list[Record], prefix: str = PREFIX) -> None:
    mine = [meaning(r) for r in ours(case, records, prefix)]
    java = [meaning(r) for r in theirs(oracle, case, records)]
    diff = differences(mine, java)
    assert not diff, f"{case.id}: ours != Connect's:\n" + "\n".join(diff[:12])


# -- the cases ---------------------------------------------------------------------

U_DROP = {"type": "unwrap", "delete_handling": "drop"}
J_DROP = ("u", ENRS, {"delete.tombstone.handling.mode": "drop"})
CUSTOMERS = {"customers": {"type": "topic_matches", "pattern": r".*\.customers"}}
J_CUSTOMERS = [("customers", KCP + "TopicNameMatches", {"pattern": r".*\.customers"})]

CASES: list[Case] = [
    Case("identity", [], {}),
    Case("unwrap-drop", [U_DROP], connect(J_DROP)),
    Case(
        "unwrap-rewrite",
        [{"type": "unwrap", "delete_handling": "rewrite"}],
        connect(("u", ENRS, {"delete.tombstone.handling.mode": "rewrite"})),
    ),
    Case(
        "unwrap-rewrite-with-tombstone",
        [{"type": "unwrap", "delete_handling": "rewrite-with-tombstone"}],
        connect(("u", ENRS, {"delete.tombstone.handling.mode": "rewrite-with-tombstone"})),
        corpus=False,
    ),
    Case(
        "unwrap-add-fields",
        [{**U_DROP, "add_fields": ["op", "table", "source_ts_ms"]}],
        connect(("u", ENRS, {"delete.tombstone.handling.mode": "drop", "add.fields": "op,table,source.ts_ms"})),
    ),
    Case(
        "unwrap-add-headers",
        [{**U_DROP, "add_headers": ["op", "table", "source_ts_ms"]}],
        connect(("u", ENRS, {"delete.tombstone.handling.mode": "drop", "add.headers": "op,table,source.ts_ms"})),
    ),
    Case(
        "replace-field-exclude",
        [U_DROP, {"type": "replace_field", "exclude": ["email", "note"]}],
        connect(J_DROP, ("r", KC + "ReplaceField$Value", {"exclude": "email,note"})),
        generic=False,
    ),
    Case(
        "replace-field-exclude-key-column",
        [U_DROP, {"type": "replace_field", "exclude": ["id"]}],
        connect(J_DROP, ("r", KC + "ReplaceField$Value", {"exclude": "id"})),
    ),
    Case(
        "replace-field-include-rename",
        [U_DROP, {"type": "replace_field", "include": ["id", "name", "qty"], "renames": ["name:full_name", "qty:quantity"]}],
        connect(J_DROP, ("r", KC + "ReplaceField$Value", {"include": "id,name,qty", "renames": "name:full_name,qty:quantity"})),
        generic=False,
    ),
    Case(
        "mask-field-empty",
        [U_DROP, {"type": "mask_field", "fields": ["email", "name", "score"], "predicate": "customers"}],
        connect(J_DROP, ("m", KC + "MaskField$Value", {"fields": "email,name,score", "predicate": "customers"}), predicates=J_CUSTOMERS),
        predicates=CUSTOMERS,
        generic=False,
    ),
    Case(
        "mask-field-replace",
        [U_DROP, {"type": "mask_field", "fields": ["email"], "mode": "replace", "replacement": "***", "predicate": "customers"}],
        connect(J_DROP, ("m", KC + "MaskField$Value", {"fields": "email", "replacement": "***", "predicate": "customers"}), predicates=J_CUSTOMERS),
        predicates=CUSTOMERS,
        generic=False,
    ),
    Case(
        "insert-field-static",
        [U_DROP, {"type": "insert_field", "static": {"origin": "oracle"}}],
        connect(J_DROP, ("i", KC + "InsertField$Value", {"static.field": "origin", "static.value": "oracle"})),
    ),
    Case(
        "cast",
        [U_DROP, {"type": "cast", "spec": ["vip:int32", "score:string", "qty:int64", "weight:float64"]}],
        connect(J_DROP, ("c", KC + "Cast$Value", {"spec": "vip:int32,score:string,qty:int64,weight:float64"})),
        generic=False,
    ),
    Case(
        "insert-header",
        [{"type": "insert_header", "header": "origin", "value": "oracle"}],
        connect(("h", KC + "InsertHeader", {"header": "origin", "value.literal": "oracle"})),
    ),
    Case(
        "drop-headers",
        [{"type": "drop_headers", "headers": ["trace"]}],
        connect(("h", KC + "DropHeaders", {"headers": "trace"})),
    ),
    Case(
        "header-from-copy",
        [U_DROP, {"type": "header_from", "fields": ["id"], "headers": ["row_id"]}],
        connect(J_DROP, ("h", KC + "HeaderFrom$Value", {"fields": "id", "headers": "row_id", "operation": "copy"})),
    ),
    Case(
        "header-from-move-key-column",
        [U_DROP, {"type": "header_from", "fields": ["id"], "headers": ["row_id"], "operation": "move"}],
        connect(J_DROP, ("h", KC + "HeaderFrom$Value", {"fields": "id", "headers": "row_id", "operation": "move"})),
    ),
    Case(
        "header-from-move",
        [U_DROP, {"type": "header_from", "fields": ["name", "score"], "headers": ["who", "how"], "operation": "move", "predicate": "customers"}],
        connect(
            J_DROP,
            ("h", KC + "HeaderFrom$Value", {"fields": "name,score", "headers": "who,how", "operation": "move", "predicate": "customers"}),
            predicates=J_CUSTOMERS,
        ),
        predicates=CUSTOMERS,
        generic=False,
    ),
    Case(
        "regex-router",
        [{"type": "route", "regex": r"dbserver1\.(\w+)\.(\w+)", "replacement": "cdc.$1_$2"}],
        connect(("r", KC + "RegexRouter", {"regex": r"dbserver1\.(\w+)\.(\w+)", "replacement": "cdc.$1_$2"})),
    ),
    Case(
        "timestamp-router",
        [{"type": "route", "topic": "{topic}-{timestamp:%Y%m%d}"}],
        connect(("r", KC + "TimestampRouter", {"topic.format": "${topic}-${timestamp}", "timestamp.format": "yyyyMMdd"})),
        generic=False,  # the workload's record timestamps are its change times: see test_timestamp_router_time
    ),
    Case(
        "drop-tombstones",
        [{"type": "drop_tombstones"}],
        connect(("f", KC + "Filter", {"predicate": "tomb"}), predicates=[("tomb", KCP + "RecordIsTombstone", {})]),
        sink={"tombstones_on_delete": False},
    ),
    Case(
        "unwrap-tombstone-drop-tombstones",
        [{"type": "unwrap", "delete_handling": "rewrite-with-tombstone"}, {"type": "drop_tombstones"}],
        connect(
            ("u", ENRS, {"delete.tombstone.handling.mode": "rewrite-with-tombstone"}),
            ("f", KC + "Filter", {"predicate": "tomb"}),
            predicates=[("tomb", KCP + "RecordIsTombstone", {})],
        ),
        sink={"tombstones_on_delete": False},
    ),
    Case(
        "filter-topic",
        [{"type": "filter", "action": "drop", "predicate": "customers", "negate": True}],
        connect(("f", KC + "Filter", {"predicate": "customers", "negate": "true"}), predicates=J_CUSTOMERS),
        predicates={"customers": CUSTOMERS["customers"]},
    ),
    Case(
        "predicate-has-header",
        [{"type": "insert_header", "header": "seen", "value": "yes", "predicate": {"type": "has_header", "name": "trace"}}],
        connect(
            ("h", KC + "InsertHeader", {"header": "seen", "value.literal": "yes", "predicate": "has"}),
            predicates=[("has", KCP + "HasHeaderKey", {"name": "trace"})],
        ),
    ),
    Case(
        "predicate-tombstone-negated",
        [
            {"type": "unwrap", "delete_handling": "rewrite-with-tombstone"},
            {"type": "insert_header", "header": "row", "value": "yes", "predicate": {"type": "is_tombstone"}, "negate": True},
        ],
        connect(
            ("u", ENRS, {"delete.tombstone.handling.mode": "rewrite-with-tombstone"}),
            ("h", KC + "InsertHeader", {"header": "row", "value.literal": "yes", "predicate": "t", "negate": "true"}),
            predicates=[("t", KCP + "RecordIsTombstone", {})],
        ),
        sink={"tombstones_on_delete": False},
        corpus=False,
    ),
]
CASES += [
    Case(
        "timestamp-convert-string",
        [U_DROP, {"type": "timestamp_convert", "fields": ["created"], "target": "string", "format": "%Y-%m-%d %H:%M:%S", "predicate": "customers"}],
        connect(J_DROP, ("t", KC + "TimestampConverter$Value", {"field": "created", "target.type": "string", "format": "yyyy-MM-dd HH:mm:ss", "predicate": "customers"}), predicates=J_CUSTOMERS),
        predicates=CUSTOMERS,
        generic=False,
    ),
    Case(
        "timestamp-convert-unix",
        [U_DROP, {"type": "timestamp_convert", "fields": ["created"], "target": "unix", "predicate": "customers"}],
        connect(J_DROP, ("t", KC + "TimestampConverter$Value", {"field": "created", "target.type": "unix", "predicate": "customers"}), predicates=J_CUSTOMERS),
        predicates=CUSTOMERS,
        generic=False,
    ),
    Case(
        "timezone-convert",
        # Debezium's converted.timezone names the zone DATETIME wall clocks are in: our `from`
        [{"type": "timezone_convert", "from": "Asia/Shanghai", "to": "UTC"}],
        connect(("z", "io.debezium.transforms.TimezoneConverter", {"converted.timezone": "Asia/Shanghai"})),
        generic=False,
    ),
]
GENERIC = [c for c in CASES if c.generic]
HEADERS = [("trace", b"abc")]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_workload(oracle: ConnectOracle, case: Case) -> None:
    assert_same(oracle, case, debezium_records(workload.events(), HEADERS))


@pytest.mark.parametrize("name", CORPUS_FILES)
@pytest.mark.parametrize("case", [c for c in GENERIC if c.corpus], ids=lambda c: c.id)
def test_corpus(oracle: ConnectOracle, case: Case, name: str, corpus: Path) -> None:
    prefix, records = corpus_records(corpus / "debezium-json" / name)
    assert records
    assert_same(oracle, case, records, prefix)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=change_streams(), case=st.sampled_from(GENERIC))
def test_generated(oracle: ConnectOracle, events: list[ChangeEvent], case: Case) -> None:
    assert_same(oracle, case, debezium_records(events, HEADERS))
