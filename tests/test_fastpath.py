"""The compiled raw-value fast paths give exactly what the typed paths give.

Canal text -> Debezium JSON is converted straight from the text
(``ValueForm.converter`` + ``RawPlan``); ``ChangeEvent.typed()`` uses the form's
compiled ``to_python``. Every test here runs the same message both ways -- raw
(the fast path) and typed first (the generic path: ``event.typed()``, then the
encoder's typed converters) -- and asserts byte-identical records, including
for the edge values the fast converters must hand back to the typed path.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt.transforms.errors import EncodeError
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.formats._connect import ConnectOptions, make_encoder, repr_for_type, target_for
from cdc_smt.transforms.formats.canal_json import CANAL_TEXT
from cdc_smt.transforms.formats.ticdc_canal_json import TICDC_TEXT
from cdc_smt.transforms.model import TYPED, ChangeEvent, Column, Op, Record, SourcePosition, TableSchema, Target
from cdc_smt.transforms.types import InvalidTemporal, parse_type, text_converter
from tests.strategies import change_streams

#: One column per type family the fast path handles (and some it hands back).
TYPES: dict[str, str] = {
    "id": "bigint(20) unsigned",
    "i": "int(11)",
    "ti": "tinyint(1)",
    "y": "year",
    "d2": "decimal(12,2)",
    "d0": "decimal(5,0)",
    "dw": "decimal(65,30)",
    "f": "float",
    "db": "double",
    "v": "varchar(32)",
    "e": "enum('NEW','PAID','2','')",
    "s": "set('a','b','c')",
    "b1": "bit(1)",
    "b8": "bit(8)",
    "dt0": "datetime",
    "dt1": "datetime(1)",
    "dt2": "datetime(2)",
    "dt3": "datetime(3)",
    "dt4": "datetime(4)",
    "dt5": "datetime(5)",
    "dt6": "datetime(6)",
    "ts0": "timestamp",
    "ts3": "timestamp(3)",
    "ts6": "timestamp(6)",
    "da": "date",
    "tm": "time(3)",
    "j": "json",
    "bl": "blob",
}
NOT_NULL = {"id", "dt3", "da", "ts0"}

#: Edge texts per column (Canal's own and some it never writes, to reach the fallbacks).
EDGES: dict[str, list[Any]] = {
    "id": ["0", "1", "9223372036854775807", "9223372036854775808", "18446744073709551615", " 7", "1_000"],
    "i": ["0", "-2147483648", "2147483647", "+5", "007", "1_0"],
    "ti": ["0", "1", "-128", "127"],
    "y": ["0000", "1901", "2155", "0"],
    "d2": [
        "0.00",
        "-0.00",
        "1.50",
        "1.5",
        "1",
        "-1",
        "-0.05",
        ".5",
        "-.5",
        "5.",
        "9999999999.99",
        "-9999999999.99",
        "1.555",
        "1.545",
        "1.234e2",
        "+1.25",
        "NaN",
        " 1.25",
        "1_0.25",
    ],
    "d0": ["0", "-0", "99999", "-99999", "12.5", "13.5", "7.0"],
    "dw": [
        "0.000000000000000000000000000000",
        "-12345678901234567890123456789012345.123456789012345678901234567890",
        "1.1",
        "-0.000000000000000000000000000001",
        "0.0000000000000000000000000000001",
    ],
    "f": ["1.5", "0.1", "3.4028235E38", "-0.0", "1.0E-45", "NaN", "Infinity"],
    "db": [
        "0.0",
        "-0.0",
        "1.0E10",
        "10000000000.0",
        "4.9E-324",
        "-1.7976931348623157E308",
        "NaN",
        "-Infinity",
        "1_0.5",
    ],
    "v": ["", "héllo", "数据库", "🎉", "line\nbreak"],
    "e": ["0", "1", "2", "3", "4", "NEW", "PAID", "", "01"],
    "s": ["0", "1", "5", "7", "a,c", ""],
    "b1": ["0", "1", "2"],
    "b8": ["0", "255", "128"],
    "dt0": [
        "2023-11-14 22:13:20",
        "1970-01-01 00:00:00",
        "1969-12-31 23:59:59",
        "1000-01-01 00:00:00",
        "9999-12-31 23:59:59",
        "0000-00-00 00:00:00",
        "2023-02-30 00:00:00",
        "2020-02-29 12:00:00",
        "2023-11-14T22:13:20",
        "2023-11-14 24:00:00",
        "2023-11-14 22:13:20+08:00",
        "2020-W01-1 00:00:00",
    ],
    "dt1": ["2023-11-14 22:13:20.1", "1969-12-31 23:59:59.9", "2023-11-14 22:13:20.0"],
    "dt2": ["2023-11-14 22:13:20.12", "1900-01-01 00:00:00.01"],
    "dt3": [
        "2023-11-14 22:13:20.123",
        "2023-11-14 22:13:20.000",
        "1969-12-31 23:59:59.999",
        "0000-00-00 00:00:00.000",
        "2023-11-14 22:13:20.12",
    ],
    "dt4": ["2023-11-14 22:13:20.1234", "1969-12-31 23:59:59.0001"],
    "dt5": ["2023-11-14 22:13:20.12345"],
    "dt6": [
        "2023-11-14 22:13:20.123456",
        "2023-11-14 22:13:20.000001",
        "2023-11-14 22:13:20.100000",
        "1969-12-31 23:59:59.999999",
        "2023-11-14 22:13:20.1234567",
    ],
    "ts0": [
        "2023-11-14 22:13:20",
        "1970-01-01 00:00:01",
        "2038-01-19 03:14:07",
        "0000-00-00 00:00:00",
        "2023-03-26 02:30:00",
        "2023-10-29 02:30:00",
    ],
    "ts3": ["2023-11-14 22:13:20.120", "2023-11-14 22:13:20.000", "2023-11-14 22:13:20.001"],
    "ts6": ["2023-11-14 22:13:20.123456", "2023-11-14 22:13:20.100000", "2023-11-14 22:13:20,5"],
    "da": [
        "2023-11-14",
        "1970-01-01",
        "1969-12-31",
        "1000-01-01",
        "9999-12-31",
        "0000-00-00",
        "2023-02-29",
        "20231114",
        "2020-W01-1",
    ],
    "tm": ["00:00:00.000", "838:59:59.000", "-838:59:59.000", "12:34:56.789", "-00:00:01.500"],
    "j": ['{"a": 1}', "[]", "null"],
    "bl": ["", "abc", "\x00\xff\x7f"],
}

SCHEMA = TableSchema(
    columns=tuple(Column(n, t, nullable=n not in NOT_NULL, primary_key=n == "id") for n, t in TYPES.items()),
    primary_key=("id",),
)

OPTION_SETS: list[dict[str, Any]] = [
    {},
    {"schemas_enable": True},
    {"time_precision_mode": "connect"},
    {"decimal_handling_mode": "string"},
    {"decimal_handling_mode": "double"},
    {"decimal_format": "numeric"},
    {"bigint_unsigned_handling_mode": "precise"},
    {"binary_handling_mode": "hex"},
    {"source_timezone": "Asia/Shanghai"},
]

#: A regular row (every value Canal-shaped) that edge values are swapped into.
BASE_ROW: dict[str, Any] = {n: values[0] for n, values in EDGES.items()}


def canal_message(op: str, data: list[dict], old: list[dict] | None = None, types: dict[str, str] = TYPES) -> bytes:
    return orjson.dumps(
        {
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
            "type": op,
        }
    )


def both_ways(message: bytes, source: str = "canal-json", source_tz: str = "UTC", **sink: Any) -> tuple[Any, Any]:
    """(fast records or the error, generic records or the error) of one message."""
    dec = get_codec(source, {"source_timezone": source_tz})
    fast_events = dec.decode(Record(value=message))
    slow_events = dec.decode(Record(value=message))
    assert all(e.values is not None for e in fast_events)
    return _encode(fast_events, sink), _encode(slow_events, sink, typed_first=True)


def _encode(events: list[ChangeEvent], sink: dict[str, Any], typed_first: bool = False) -> Any:
    enc = get_codec("debezium-json", sink)
    out = []
    for e in events:
        if typed_first:
            try:
                e.typed()
            except ValueError as exc:  # the encoder reports what typing reports
                return ("error", str(exc))
        try:
            out.extend(enc.encode(e))
        except EncodeError as exc:  # "...: cannot encode insert event: ValueError: <typing's message>"
            return ("error", str(exc).split("ValueError: ", 1)[-1])
    return [(r.value, r.key, r.topic, r.headers) for r in out]


def assert_same(message: bytes, source: str = "canal-json", source_tz: str = "UTC", **sink: Any) -> None:
    fast, slow = both_ways(message, source, source_tz, **sink)
    assert fast == slow


# ---------------------------------------------------------------------------
# Whole messages: edge values, NULLs, options, zones
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("opts", OPTION_SETS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "defaults")
@pytest.mark.parametrize("column", sorted(EDGES))
def test_every_edge_value_encodes_identically(column: str, opts: dict[str, Any]) -> None:
    opts = dict(opts)
    tz = opts.pop("source_timezone", "UTC")
    for value in EDGES[column]:
        row = dict(BASE_ROW, **{column: value})
        assert_same(canal_message("INSERT", [row]), source_tz=tz, **opts)
        assert_same(canal_message("DELETE", [row]), source_tz=tz, **opts)


@pytest.mark.parametrize("opts", OPTION_SETS[:2] + OPTION_SETS[-1:])
def test_nulls_and_missing_columns(opts: dict[str, Any]) -> None:
    opts = dict(opts)
    tz = opts.pop("source_timezone", "UTC")
    nulls = {n: (None if n not in NOT_NULL else v) for n, v in BASE_ROW.items()}
    assert_same(canal_message("INSERT", [nulls]), source_tz=tz, **opts)
    partial = {n: v for n, v in BASE_ROW.items() if n in ("id", "d2", "dt3", "v")}
    assert_same(canal_message("INSERT", [partial]), source_tz=tz, **opts)
    unknown = dict(BASE_ROW, extra_col="x")  # a column the type maps do not name
    assert_same(canal_message("INSERT", [unknown]), source_tz=tz, **opts)


def test_update_pairs_convert_shared_and_changed_values_alike() -> None:
    row = dict(BASE_ROW)
    for column in ("d2", "db", "f", "dt3", "ts6", "da", "e", "v", "id", "d0"):
        for old_value in EDGES[column]:
            assert_same(canal_message("UPDATE", [row], [{column: old_value}]))
            assert_same(canal_message("UPDATE", [row], [{column: None}]))


def test_signed_zero_before_images_are_kept() -> None:
    # -0.0 == 0.0: an equal before-value must not take the after-value's rendering.
    row = dict(BASE_ROW, db="0.0", d2="0.00")
    message = canal_message("UPDATE", [row], [{"db": "-0.0", "d2": "-0.00"}])
    fast, slow = both_ways(message)
    assert fast == slow
    before = orjson.loads(fast[0][0])["before"]
    assert str(before["db"]) == "-0.0"
    for mode in ("string", "double"):
        assert_same(message, decimal_handling_mode=mode)


def test_multi_row_messages_and_all_ops() -> None:
    rows = [dict(BASE_ROW, id=str(i), d2=f"{i}.{i:02d}", dt3=f"2023-11-14 22:13:{i:02d}.{i:03d}") for i in range(1, 6)]
    for op in ("INSERT", "DELETE", "INIT"):
        assert_same(canal_message(op, rows))
    assert_same(canal_message("UPDATE", rows, [{"v": "old"} for _ in rows]))
    assert_same(canal_message("UPDATE", rows, [{"v": "old"} for _ in rows]), tombstones_on_delete=False)


def test_ticdc_text_takes_the_same_path() -> None:
    types = {n: t for n, t in TYPES.items() if n not in ("e", "s")}
    row = {n: v for n, v in BASE_ROW.items() if n in types}
    message = canal_message("INSERT", [row], types=types)
    assert_same(message, source="ticdc-canal-json")
    assert_same(message, source="ticdc-canal-json", source_tz="Asia/Shanghai")


def test_json_numbers_from_canal_compatible_writers() -> None:
    # Flink's Canal serializer writes numbers as JSON numbers: they take the typed path.
    row = dict(BASE_ROW, id=5, i=-3, ti=True, d2=1.5, db=2.25, f=1.5, y=2020, b1=1, v=12)
    assert_same(canal_message("INSERT", [row]))
    assert_same(canal_message("UPDATE", [row], [{"i": 4, "d2": "1.50", "db": 2}]))


def test_invalid_values_fail_with_the_typed_paths_error() -> None:
    for column, bad in (("i", "abc"), ("d2", "1.2.3"), ("e", "9"), ("s", "x"), ("f", "1e99"), ("tm", "25:61")):
        row = dict(BASE_ROW, **{column: bad})
        fast, slow = both_ways(canal_message("INSERT", [row]))
        assert fast[0] == "error", (column, fast)
        assert fast == slow


def test_the_event_stays_raw_and_reusable() -> None:
    dec = get_codec("canal-json")
    (event,) = dec.decode(Record(value=canal_message("INSERT", [BASE_ROW])))
    enc = get_codec("debezium-json")
    first = enc.encode(event)
    assert event.values is CANAL_TEXT and event.after == BASE_ROW  # the fast path leaves the event alone
    assert [r.value for r in enc.encode(event)] == [r.value for r in first]
    assert [r.value for r in get_codec("canal-json").encode(event)] == [
        r.value
        for r in get_codec("canal-json").encode(dec.decode(Record(value=canal_message("INSERT", [BASE_ROW])))[0])
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(),
    sink=st.sampled_from(OPTION_SETS[:6]),
    tz=st.sampled_from(["UTC", "Asia/Shanghai", "America/New_York"]),
)
def test_random_streams_through_canal_text(stream: list[ChangeEvent], sink: dict[str, Any], tz: str) -> None:
    canal = get_codec("canal-json", {"source_timezone": tz})
    for event in stream:
        event.timezone = tz
        for record in canal.encode(event):
            assert_same(record.value, source_tz=tz, **sink)


# ---------------------------------------------------------------------------
# The converters themselves
# ---------------------------------------------------------------------------


def _columns() -> list[tuple[Column, list[Any]]]:
    return [(SCHEMA.column(n), EDGES[n]) for n in TYPES]


@pytest.mark.parametrize("form", [CANAL_TEXT, TICDC_TEXT], ids=["canal", "ticdc"])
def test_typed_converters_agree_with_to_python(form: Any) -> None:
    checked = 0
    for col, texts in _columns():
        fn = form.converter(col, TYPED)
        if fn is None:
            continue
        for text in texts:
            try:
                expected: Any = form.to_python(col, text)
            except ValueError:
                expected = ValueError
            try:
                got = fn(text)
            except Exception:  # noqa: BLE001 - handing back to to_python is allowed
                continue
            assert type(got) is type(expected) and (got == expected or got != got), (col.name, text, got, expected)
            checked += 1
    assert checked > 100


@pytest.mark.parametrize(
    "opts",
    [
        ConnectOptions(),
        ConnectOptions(time_precision_mode="connect"),
        ConnectOptions(bigint_unsigned_handling_mode="precise"),
    ],
)
@pytest.mark.parametrize("tz", ["UTC", "Asia/Shanghai"])
def test_target_converters_agree_with_the_encoders(opts: ConnectOptions, tz: str) -> None:
    checked = 0
    for col, texts in _columns():
        mt = col.mysql
        r = repr_for_type(mt, opts)
        target = target_for(r, mt, tz)
        if target is None:
            continue
        fn = CANAL_TEXT.converter(col, target)
        if fn is None:
            continue
        enc = make_encoder(r, mt, col.nullable, tz) or (lambda v: v)
        for text in texts:
            try:
                got = fn(text)
            except Exception:  # noqa: BLE001 - not handled: the typed path decides
                continue
            typed = CANAL_TEXT.to_python(col, text)
            assert not isinstance(typed, InvalidTemporal), (col.name, text)  # zero dates are never rendered
            expected = enc(typed)
            assert type(got) is type(expected) and (got == expected or got != got), (col.name, text, got, expected)
            checked += 1
    assert checked > 50


@given(
    st.decimals(allow_nan=False, allow_infinity=False, places=4, min_value=-(10**12), max_value=10**12),
    st.integers(0, 6),
)
def test_decimal_texts_to_unscaled_base64(value: Decimal, scale: int) -> None:
    mt = parse_type(f"decimal(30,{scale})")
    fn = text_converter(mt, Target("unscaled_b64", scale=scale))
    reference = make_encoder(repr_for_type(mt, ConnectOptions()), mt, True, "UTC")
    for text in {format(value, "f"), format(value.normalize(), "f"), str(value)}:
        try:
            got = fn(text)
        except Exception:  # noqa: BLE001
            assert (
                "E" in text
                or len(text.partition(".")[2]) > scale
                or not text.replace("-", "").replace(".", "").isdigit()
            )
            continue
        assert got == reference(Decimal(text))


@given(st.datetimes(dt.datetime(1000, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59)), st.integers(0, 6))
def test_datetime_texts_to_epochs_and_iso(value: dt.datetime, fsp: int) -> None:
    value = value.replace(microsecond=value.microsecond // 10 ** (6 - fsp) * 10 ** (6 - fsp))
    text = value.strftime("%Y-%m-%d %H:%M:%S") + (f".{value.microsecond:06d}"[: fsp + 1] if fsp else "")
    mt = parse_type(f"datetime({fsp})" if fsp else "datetime")
    for kind in ("epoch_ms", "epoch_us"):
        fn = text_converter(mt, Target(kind))
        unit = 1000 if kind == "epoch_ms" else 1_000_000
        assert fn(text) == (value - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1_000_000 // unit)
    ts = parse_type(f"timestamp({fsp})" if fsp else "timestamp")
    for tz in ("UTC", "Asia/Shanghai"):
        fn = text_converter(ts, Target("iso_utc", tz=tz))
        reference = make_encoder(repr_for_type(ts, ConnectOptions()), ts, True, tz)
        try:
            expected = reference(value)
        except (OverflowError, ValueError):
            continue
        assert fn(text) == expected


def test_unsigned_bigint_wraps_like_a_java_long() -> None:
    col = SCHEMA.column("id")
    fn = CANAL_TEXT.converter(col, Target("int64"))
    assert fn("18446744073709551615") == -1
    assert fn("9223372036854775808") == -(1 << 63)
    assert fn("9223372036854775807") == (1 << 63) - 1
    row = dict(BASE_ROW, id="18446744073709551615")
    fast, slow = both_ways(canal_message("INSERT", [row]))
    assert fast == slow and orjson.loads(fast[0][0])["after"]["id"] == -1
    fast, slow = both_ways(canal_message("INSERT", [row]), bigint_unsigned_handling_mode="precise")
    assert fast == slow


def test_zero_dates_follow_debeziums_rule_in_both_paths() -> None:
    row = dict(
        BASE_ROW, dt0="0000-00-00 00:00:00", dt3="0000-00-00 00:00:00.000", da="0000-00-00", ts0="0000-00-00 00:00:00"
    )
    fast, slow = both_ways(canal_message("INSERT", [row]))
    assert fast == slow
    after = orjson.loads(fast[0][0])["after"]
    assert (
        after["dt0"] is None and after["dt3"] is None and after["da"] is None and after["ts0"] is None
    )  # nullable: null
    # Not-null columns get the epoch instead (a schema from a catalog/DDL can say NOT NULL).
    types = {"id": "bigint(20) unsigned", "dt3": "datetime(3)", "da": "date", "ts0": "timestamp"}
    raw = {"id": "1", "dt3": "0000-00-00 00:00:00.000", "da": "0000-00-00", "ts0": "0000-00-00 00:00:00"}
    schema = TableSchema(
        columns=tuple(Column(n, t, nullable=False, primary_key=n == "id") for n, t in types.items()),
        primary_key=("id",),
    )
    results = []
    for typed_first in (False, True):
        event = ChangeEvent(op=Op.INSERT, after=dict(raw), schema=schema, pk=("id",), values=CANAL_TEXT, ts_ms=1)
        if typed_first:
            event.typed()
        results.append(get_codec("debezium-json").encode(event)[0].value)
    assert results[0] == results[1]
    assert orjson.loads(results[0])["after"] == {"id": 1, "dt3": 0, "da": 0, "ts0": "1970-01-01T00:00:00Z"}


def test_typed_uses_the_compiled_converters_and_keeps_errors() -> None:
    dec = get_codec("canal-json")
    (event,) = dec.decode(Record(value=canal_message("INSERT", [BASE_ROW])))
    expected = {n: (CANAL_TEXT.to_python(SCHEMA.column(n), v) if v is not None else None) for n, v in BASE_ROW.items()}
    event.typed()
    assert event.values is None
    assert event.after == expected
    assert [type(v) for v in event.after.values()] == [type(v) for v in expected.values()]
    (bad,) = dec.decode(Record(value=canal_message("INSERT", [dict(BASE_ROW, i="x1")])))
    with pytest.raises(ValueError, match=r"column 'i' \(int\(11\)\): cannot read 'x1'"):
        bad.typed()


def test_source_blocks_of_other_formats() -> None:
    enc = get_codec("debezium-json")
    schema = TableSchema(columns=(Column("id", "int", nullable=False, primary_key=True),), primary_key=("id",))
    for src, snapshot in (
        (SourcePosition(db_type="mysql", database="a", table="t"), Op.INSERT),
        (SourcePosition(db_type="tidb", database="a", table="t", commit_ts=42, row=3), Op.READ),
        (
            SourcePosition(
                db_type="mysql", database="a", table="t", server_id=7, gtid="g:1", binlog_file="f.1", binlog_pos=9
            ),
            Op.INSERT,
        ),
        (SourcePosition(db_type="mysql", database=None, table=None), Op.INSERT),
    ):
        event = ChangeEvent(op=snapshot, source=src, after={"id": 1}, schema=schema, pk=("id",), ts_ms=5)
        block = orjson.loads(enc.encode(event)[0].value)["source"]
        assert block == {
            "version": "cdc-smt", "connector": {"tidb": "TiCDC"}.get(src.db_type, src.db_type), "name": "cdc_smt",
            "ts_ms": 5, "snapshot": "true" if snapshot is Op.READ else "false", "db": src.database or "",
            "sequence": None, "table": src.table, "server_id": src.server_id or 0, "gtid": src.gtid,
            "file": src.binlog_file or "", "pos": src.binlog_pos or 0, "row": src.row or 0, "thread": None,
            "query": None, **({"commit_ts": src.commit_ts} if src.commit_ts is not None else {}),
        }  # fmt: skip


@given(
    st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.floats(1e-3, 1e7),
        st.floats(-1e7, -1e-3),
        st.integers(-(10**7), 10**7).map(float),
    )
)
def test_java_double_text_shortcut_matches_the_decimal_formula(v: float) -> None:
    from cdc_smt.transforms.formats.canal_json import _shortest, java_float_text

    a = abs(v)
    if v == 0 or not 1e-3 <= a < 1e7:
        return
    text = format(Decimal(_shortest(a, False)).normalize(), "f")  # the general formula
    assert java_float_text(v) == ("-" if v < 0 else "") + (text if "." in text else text + ".0")


# ---------------------------------------------------------------------------
# Typed value -> Canal/TiCDC text (encoders of other formats' events)
# ---------------------------------------------------------------------------

_WRITER_TYPES = tuple(TYPES.values()) + ("enum('a','b','a')", "decimal(65,30)", "time(6)", "binary(4)", "char(3)")


def _same_outcome(f: Any, g: Any, v: Any) -> None:
    try:
        expected: Any = g(v)
    except Exception as exc:  # noqa: BLE001
        expected = (type(exc), str(exc))
    try:
        got: Any = f(v)
    except Exception as exc:  # noqa: BLE001
        got = (type(exc), str(exc))
    assert got == expected and type(got) is type(expected), (v, got, expected)


@pytest.mark.parametrize("form", [CANAL_TEXT, TICDC_TEXT], ids=["canal", "ticdc"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_text_writers_agree_with_to_text(form: Any, data: Any) -> None:
    from tests.strategies import value_strategy

    type_text = data.draw(st.sampled_from(_WRITER_TYPES))
    col = Column("c", type_text)
    write = form.text_writer(col)
    for _ in range(5):
        _same_outcome(write, lambda x: form.to_text(col, x), data.draw(value_strategy(type_text)))
    for odd in (
        True,
        1,
        1.5,
        Decimal("1.5"),
        "1",
        b"x",
        None,
        InvalidTemporal("0000-00-00"),
        dt.datetime(2020, 1, 1, tzinfo=dt.UTC),
    ):
        _same_outcome(write, lambda x: form.to_text(col, x), odd)


def test_debezium_to_canal_and_canal_to_ticdc_match_the_typed_path() -> None:
    dec = get_codec("canal-json")
    message = canal_message("UPDATE", [BASE_ROW], [{"v": "old", "d2": "-0.00", "dt3": "2020-01-01 00:00:00.000"}])
    for sink in ("ticdc-canal-json", "canal-json"):
        for tz in ("UTC", "Asia/Shanghai"):
            enc_raw, enc_typed = get_codec(sink, {"source_timezone": tz}), get_codec(sink, {"source_timezone": tz})
            (raw,) = dec.decode(Record(value=message))
            (typed,) = dec.decode(Record(value=message))
            typed.typed()
            raw.origin = typed.origin = None  # not same-format reproduction: every value is written
            assert [r.value for r in enc_raw.encode(raw)] == [r.value for r in enc_typed.encode(typed)]
    deb = get_codec("debezium-json").encode(dec.decode(Record(value=canal_message("INSERT", [BASE_ROW])))[0])[0]
    for tz in ("UTC", "Asia/Shanghai"):
        (raw,) = get_codec("debezium-json").decode(Record(value=deb.value, key=deb.key))
        (typed,) = get_codec("debezium-json").decode(Record(value=deb.value, key=deb.key))
        typed.typed()
        canal = get_codec("canal-json", {"source_timezone": tz})
        assert canal.encode(raw)[0].value == get_codec("canal-json", {"source_timezone": tz}).encode(typed)[0].value
