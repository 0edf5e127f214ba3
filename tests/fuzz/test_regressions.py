"""What the fuzzer found, each as its minimized input: now the target's own error, quickly.

Decoders raise ``DecodeError``; values a decoder leaves raw and types lazily
(``event.typed()``) raise ``ValueError`` naming the column (the value-form
contract); the chain and job loaders raise ``ConfigError``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.config import load_config
from cdc_smt.transforms.errors import ConfigError, DecodeError
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import Record
from tests.fuzz.harness import Guard
from tests.fuzz.targets import new_catalog


def decode(fmt: str, data: bytes) -> list:
    return get_codec(fmt, {}, catalog=new_catalog()).decode(Record(value=data))


# -- decode errors ---------------------------------------------------------------------------------

DECODE_ERRORS = {
    # msgspec (the exact-number parser of Maxwell/OGG) raised UnicodeDecodeError on invalid UTF-8
    "invalid-utf8": ("maxwell-json", b'{"":"","":6,"":"\xed"', "invalid UTF-8"),
    # ... decimal.InvalidOperation on an exponent no Decimal holds
    "huge-exponent": ("maxwell-json", b'{"":"","":1e3000000000000000000000000000000}', "beyond the range"),
    # ... RecursionError on nesting orjson refuses with its own error
    "deep-exact": ("ogg-json", b'{"a":' * 3000 + b"1" + b"}" * 3000, "nested too deeply"),
    # canal-json: repr() of a 1020-deep value in an error message raised RecursionError
    "deep-in-message": (
        "canal-json",
        b'{"database":"shop","table":"t","type":"INSERT","isDdl":false,"es":1,"ts":1,"data":'
        + b"[" * 1020
        + b"]" * 1020
        + b"}",
        "nested too deeply",
    ),
}


@pytest.mark.parametrize("case", sorted(DECODE_ERRORS))
def test_fuzz_finding_is_a_decode_error(case: str) -> None:
    fmt, data, words = DECODE_ERRORS[case]
    with pytest.raises(DecodeError, match=words):
        decode(fmt, data)


# -- lazily typed values ------------------------------------------------------------------------------


def _dbz(field_schema: str, value: str) -> bytes:
    return (
        '{"schema":{"type":"struct","fields":[{"type":"struct","optional":true,"field":"after","fields":['
        + field_schema
        + ']},{"type":"string","optional":false,"field":"op"}]},"payload":{"after":{"v":'
        + value
        + '},"op":"c","source":{"db":"shop","table":"t"}}}'
    ).encode()


TYPED_ERRORS = {
    # each raised TypeError/OverflowError from event.typed(), naming no column
    "date-out-of-range": _dbz(
        '{"type":"int32","optional":true,"name":"io.debezium.time.Date","field":"v"}', "99999999"
    ),
    "zoned-timestamp-int": _dbz(
        '{"type":"string","optional":true,"name":"io.debezium.time.ZonedTimestamp","field":"v"}', "5"
    ),
    "bytes-float": _dbz('{"type":"bytes","optional":true,"field":"v"}', "1.5"),
    "decimal-object": _dbz(
        '{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"2"},"field":"v"}',
        "{}",
    ),
    "micro-time-text": _dbz('{"type":"int64","optional":true,"name":"io.debezium.time.MicroTime","field":"v"}', '"x"'),
    "double-list": _dbz('{"type":"double","optional":true,"field":"v"}', "[1]"),
}


@pytest.mark.parametrize("case", sorted(TYPED_ERRORS))
def test_fuzz_finding_types_to_a_value_error_naming_the_column(case: str) -> None:
    (event,) = decode("debezium-json", TYPED_ERRORS[case])
    with pytest.raises(ValueError, match=r"^column 'v' \("):
        event.typed()


@pytest.mark.parametrize(
    ("column", "data"),
    [
        ("id", b'{"database":"shop","table":"customers","type":"insert","ts":1,"data":{"id":1e100000000,"name":"a"}}'),
        ("flags", b'{"database":"shop","table":"orders","type":"insert","ts":1,"data":{"id":1,"flags":1e100000000}}'),
    ],
)
def test_huge_integer_exponent_is_refused_not_expanded(column: str, data: bytes) -> None:
    """Maxwell: ``1e100000000`` in an int (or bit) column took minutes and gigabytes to expand."""
    (event,) = decode("maxwell-json", data)
    guard = Guard()
    try:
        finding = guard.check("maxwell-json", lambda _: event.typed(), (ValueError,), b"")
    finally:
        guard.close()
    assert finding is None, finding.describe()
    with pytest.raises(ValueError, match=f"column '{column}'.*out of range"):
        event.typed()


# -- loaders --------------------------------------------------------------------------------------

LOADER_INPUTS = {
    "deep-nesting": b"[" * 600 + b"]" * 600,  # PyYAML recursed into RecursionError
    "not-utf8": b"\xec",  # UnicodeDecodeError reading the file
    "huge-int": b"source: canal-json\nsink: canal-json\nx: "
    + b"9" * 4400
    + b"\n",  # int() past 4300 digits: ValueError
}


@pytest.mark.parametrize("case", sorted(LOADER_INPUTS))
def test_chain_loader_finding_is_a_config_error(case: str, tmp_path: Path) -> None:
    f = tmp_path / "chain.yaml"
    f.write_bytes(LOADER_INPUTS[case])
    with pytest.raises(ConfigError):
        load_config(f)


@pytest.mark.parametrize("case", sorted(LOADER_INPUTS))
def test_job_loader_finding_is_a_config_error(case: str, tmp_path: Path) -> None:
    from cdc_smt.connector.jobconfig import load_job

    f = tmp_path / "job.yaml"
    f.write_bytes(LOADER_INPUTS[case])
    with pytest.raises(ConfigError):
        load_job(f, env={})


def test_debezium_image_that_is_a_number_is_a_decode_error() -> None:
    """orjson read ``1E-400`` as 0.0, taken for "no image"; the exact re-parse (decimals
    as JSON numbers) then read it as a Decimal and handed it on as the before-image."""
    data = (
        b'{"schema":{"type":"struct","fields":[{"type":"struct","optional":true,"field":"after","fields":['
        b'{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"2"},"field":"v"}]}]},'
        b'"payload":{"before":1E-400,"after":{"v":1.5},"op":"r"}}'
    )
    with pytest.raises(DecodeError, match="'before' must be an object or null"):
        decode("debezium-json", data)
    with pytest.raises(DecodeError, match="'before' must be an object or null"):
        decode("debezium-json", data.replace(b"1E-400", b"0"))


def test_debezium_bytes_column_with_a_number_does_not_allocate_it() -> None:
    """``bytes(10000010000)`` allocated 10 GB of zeros for a number in a binary column (the
    fuzzer's input; 100 here, which was silently read as 100 zero bytes)."""
    (event,) = decode("debezium-json", b'{"after":{"photo":100},"source":{"db":"shop","table":"orders"},"op":"c"}')
    with pytest.raises(ValueError, match="column 'photo'.*expected base64 text"):
        event.typed()


def test_debezium_encoder_refuses_a_decimal_too_large_to_expand() -> None:
    """A Canal ``decimal(12,2)`` value ``1e100000000`` hung debezium-json's encoder for
    minutes (the unscaled integer has 100,000,002 digits); it is an encode error."""
    from cdc_smt.transforms.errors import EncodeError

    data = (
        b'{"data":[{"id":"1","amount":"1e100000000"}],"database":"shop","table":"t","type":"INSERT",'
        b'"isDdl":false,"mysqlType":{"id":"int","amount":"decimal(12,2)"},"pkNames":["id"],"es":1,"ts":1,"old":null}'
    )
    events = get_codec("canal-json", {}).decode(Record(value=data))
    with pytest.raises(EncodeError, match="more than 65 integer digits"):
        get_codec("debezium-json", {}).encode_batch(events)


@pytest.mark.parametrize(
    "transform",
    [
        {"type": "cast", "spec": None},  # the fuzzer's: 'NoneType' object has no attribute 'items'
        {"type": "replace_field", "include": None},
        {"type": "replace_field", "renames": None},
    ],
)
def test_chain_loader_option_given_as_null_is_a_config_error(transform: dict) -> None:
    from cdc_smt.transforms.config import build_chain

    doc = {"source": "canal-json", "sink": "canal-json", "transforms": [transform]}
    with pytest.raises(ConfigError, match=r"transforms\[0\]"):
        build_chain(load_config(doc))


# -- huge decimals: MySQL's DECIMAL(65,30) bounds, checked once at typing (transforms/types.py) --------

HUGE_DECIMALS = {
    "exponent": "1e100000000",  # plain notation: a hundred million digits
    "negative-exponent": "1e-100000000",
    "digits": "1" + "0" * 100_000,  # 100k integer digits
    "zero-exponent": "0E-100000000",
    "not-a-number": "NaN",
}


def _canal_decimal(value: str) -> bytes:
    return orjson.dumps(
        {
            "data": [{"id": "1", "amount": value}],
            "database": "shop",
            "table": "t",
            "type": "INSERT",
            "isDdl": False,
            "es": 1,
            "ts": 1,
            "pkNames": ["id"],
            "mysqlType": {"id": "int", "amount": "decimal(12,2)"},
            "sqlType": {"id": 4, "amount": 3},
            "old": None,
        }
    )


def _within_a_second(run: Callable[[], object]) -> None:
    guard = Guard()
    try:
        finding = guard.check("huge-decimal", lambda _: run(), (ValueError,), b"")
    finally:
        guard.close()
    assert finding is None, finding.describe()


@pytest.mark.parametrize("case", sorted(HUGE_DECIMALS))
def test_decimal_beyond_mysql_decimal_is_a_value_error_naming_the_column(case: str) -> None:
    """Accepted at decode, ``1e100000000`` stalled text encoders (``format(d, "f")``, ``quantize``)."""
    (event,) = decode("canal-json", _canal_decimal(HUGE_DECIMALS[case]))
    _within_a_second(event.typed)
    with pytest.raises(ValueError, match=r"column 'amount' \(decimal\(12,2\)\).*(DECIMAL|not a decimal)"):
        event.typed()


@pytest.mark.parametrize("sink", ["debezium-json", "maxwell-json", "ogg-json", "dataworks-json", "dts-avro"])
@pytest.mark.parametrize("case", sorted(HUGE_DECIMALS))
def test_decimal_beyond_mysql_decimal_is_a_dead_letter_in_every_encoder(case: str, sink: str) -> None:
    chain = Chain(get_codec("canal-json"), get_codec(sink), [], "all")
    chain.native = None  # the Python path, the reference (the native core: below)
    record = Record(value=_canal_decimal(HUGE_DECIMALS[case]))
    _within_a_second(lambda: chain.process(record))
    result = chain.process(record)
    assert result.outputs == []
    (dead,) = result.dead_letters
    assert "column 'amount'" in dead.message


@pytest.mark.parametrize("sink", [{}, {"schemas_enable": True}])
def test_native_plan_refuses_what_the_python_path_refuses(sink: dict) -> None:
    from cdc_smt.transforms import native
    from tests.fuzz.targets import NativeDifferential, NativeTarget

    if not native.enabled():
        pytest.skip("the native core is not built")
    NativeDifferential(NativeTarget("canal-json", "debezium-json", sink_options=tuple(sink.items())))(
        _canal_decimal("1" + "0" * 70)
    )


@pytest.mark.parametrize("value", ["1e400", "-1e400", "1e-400", "1e100000000"])
def test_maxwell_number_beyond_a_double_is_an_error_not_infinity_or_zero(value: str) -> None:
    """Maxwell's exact numbers: ``1e400`` (typed as a double, nothing else holds it) was read as
    infinity, written as ``Infinity`` by canal-json and as ``null`` by debezium-json."""
    data = b'{"database":"shop","table":"t","type":"insert","ts":1,"data":{"id":1,"amount":' + value.encode() + b"}}"
    (event,) = decode("maxwell-json", data)
    with pytest.raises(ValueError, match="column 'amount'.*beyond the range of a DOUBLE"):
        event.typed()
    for sink in ("canal-json", "debezium-json"):
        result = Chain(get_codec("maxwell-json"), get_codec(sink), [], "all").process(Record(value=data))
        assert result.outputs == [] and len(result.dead_letters) == 1


def test_maxwell_passes_a_tiny_exponent_through_as_written() -> None:
    """maxwell-json -> maxwell-json wrote ``1e-100000000`` as a hundred million digits."""
    data = b'{"database":"shop","table":"t","type":"insert","ts":1,"data":{"id":1,"amount":1e-100000000}}'
    chain = Chain(get_codec("maxwell-json"), get_codec("maxwell-json"), [], "all")
    (out,) = chain.process(Record(value=data)).outputs
    assert b'"amount":1E-100000000' in out.value


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("9" * 65, True),  # DECIMAL(65,0)'s largest
        ("-" + "9" * 35 + "." + "9" * 30, True),  # DECIMAL(65,30)'s smallest
        ("1" + "0" * 65, False),  # 66 integer digits
        ("0." + "0" * 30 + "1", False),  # 31 fraction digits
        ("1." + "0" * 40, True),  # trailing zeros are no digits of the value
        ("0E-40", True),
        ("Infinity", False),
        ("12.50", True),
    ],
)
def test_decimal_bounds_are_mysqls(text: str, ok: bool) -> None:
    from decimal import Decimal

    from cdc_smt.transforms.types import decimal_from_text, parse_type, text_converter

    if ok:
        assert decimal_from_text(text) == Decimal(text)
    else:
        with pytest.raises(ValueError, match="DECIMAL"):
            decimal_from_text(text)
    # the fast path agrees: the same value, or it raises and the typed path decides
    fast = text_converter(parse_type("decimal(65,30)"), type("T", (), {"kind": "typed"})())
    if ok:
        assert fast(text) == Decimal(text)
    else:
        with pytest.raises(ValueError):
            fast(text)


def test_debezium_envelope_ts_ms_is_int64_when_the_event_has_none() -> None:
    """The native differential fuzz target's first finding: a Canal message without ``es``/``ts``
    made debezium-json's envelope schema type ``ts_ms`` (null) as a string; Debezium's is an
    optional int64, as the native plan writes it."""
    data = (
        b'{"data":[{"id":"1"}],"database":"shop","table":"t","type":"INSERT","isDdl":false,'
        b'"mysqlType":{"id":"int"},"pkNames":["id"]}'
    )
    chain = Chain(get_codec("canal-json"), get_codec("debezium-json", {"schemas_enable": True}), [], "all")
    chain.native = None
    (out,) = chain.process(Record(value=data)).outputs
    fields = orjson.loads(out.value)["schema"]["fields"]
    assert {"type": "int64", "optional": True, "field": "ts_ms"} in fields
    assert orjson.loads(out.value)["payload"]["ts_ms"] is None


@pytest.mark.parametrize("length", ["1e100000000", "2.5", '"3"', "true"])
def test_maxwell_column_length_that_is_no_integer_is_a_decode_error(length: str) -> None:
    """The long run's maxwell-json target stalled (in C, where the CPU timer cannot interrupt,
    growing to a gigabyte): ``int()`` of a table-create's ``column-length`` ``1e100000000``."""
    data = (
        b'{"type":"table-create","database":"test","table":"e","ts":1,"def":{"database":"test","table":"e",'
        b'"columns":[{"type":"int","name":"id"},{"type":"timestamp","name":"c","column-length":'
        + length.encode()
        + b'}],"primary-key":["id"]}}'
    )
    _within_a_second(lambda: pytest.raises(DecodeError, decode, "maxwell-json", data))
    with pytest.raises(DecodeError, match="column-length must be an integer"):
        decode("maxwell-json", data)


@pytest.mark.parametrize("field", ["server_id", "txId", "file", "pos", "gtid"])
@pytest.mark.parametrize("sink", ["canal-json", "maxwell-json", "dts-avro"])
def test_native_debezium_reader_refuses_source_numbers_python_refuses(field: str, sink: str) -> None:
    """The Debezium reader took a source field orjson refuses (``"server_id":1E+400``, found
    by the differential fuzz target) as written, and wrote the event Python dead-letters."""
    from cdc_smt.transforms import native
    from tests.fuzz.targets import NativeDifferential, NativeTarget, keyed_input

    if not native.enabled():
        pytest.skip("the native core is not built")
    source = {"connector": "mysql", "ts_ms": 1, "db": "shop", "table": "t", field: 1}
    value = orjson.dumps({"before": None, "after": {"id": 1}, "source": source, "op": "c", "ts_ms": 2})
    value = value.replace(f'"{field}":1'.encode(), f'"{field}":1E+400'.encode())
    run = NativeDifferential(NativeTarget("debezium-json", sink))
    run(keyed_input(b'{"id":1}', value))
    result = run.python.process(Record(value=value, key=b'{"id":1}'))
    assert result.outputs == [] and len(result.dead_letters) == 1


def test_debezium_types_objects_by_their_fields_not_by_an_earlier_messages() -> None:
    """The schemaless plan cache was keyed by the values' Python types: an object column
    typed as geometry (``wkb``) by one message was read as geometry in the next one whose
    object has no ``wkb`` (found by the native differential target: only the chain that
    had decoded the first message dead-lettered the second)."""
    source = {"connector": "mysql", "ts_ms": 1, "db": "shop", "table": "t"}

    def value(g: object) -> bytes:
        return orjson.dumps({"before": None, "after": {"id": 1, "g": g}, "source": source, "op": "c", "ts_ms": 2})

    chain = Chain(get_codec("debezium-json"), get_codec("canal-json"), [], "all")
    chain.native = None
    assert chain.process(Record(value=value({"wkb": "AQ==", "srid": None}), key=b'{"id":1}')).outputs
    result = chain.process(Record(value=value({"a": 1}), key=b'{"id":1}'))
    assert result.dead_letters == []
    assert orjson.loads(result.outputs[0].value)["mysqlType"] == {"id": "bigint", "g": "json"}


def test_deep_json_column_is_the_same_dead_letter_natively_and_in_python() -> None:
    """The differential target of ogg-json: a 512-deep JSON column, past orjson's nesting limit,
    was retried by Python's big-integer fallback until the interpreter's recursion limit, which
    the native plan's fallback reached and the Python path did not (other dead letters)."""
    from cdc_smt.transforms import native
    from tests.fuzz.targets import NativeDifferential, NativeTarget

    if not native.enabled():
        pytest.skip("the native core is not built")
    deep = b"[" * 512 + b"]" * 512
    data = b'{"":"","op_type":"D","":[""],"before":{"":"","":' + deep + b',"be":4,"n":"-","d":""}}'
    NativeDifferential(NativeTarget("ogg-json", "debezium-json"))(data)


#: Differential fuzz findings (``native:canal-json>maxwell-json+rowxf``, a TDSQL writer's target):
#: a column whose ``mysqlType`` names no type (``demo``, ``mydb``), typed from its ``sqlType``.
_UNTYPED_FINDINGS = {
    "maxwell-v2": b'{"data":[{"":"","v2":"6"},{"":""}],"":[{"":1,"":""},{"":""}],"mysqlType":{"v1":"int","v2":"demo"},'
    b'"":{"":4,"":4},"":"","":2,"type":"UPDATE"}',
    "tdsql-field": b'{"data":[{"v1":"1","v2":"2"},{"v1":"3","v2":"4"},{"v1":4,"v2":4}],"":null,'
    b'"mysqlType":{"v1":"int","v2":"demo"},"":{"":"","":""},"":1,"":false,"":"","":8,"type":"INSERT"}',
    "tdsql-where": b'{"data":[{"id":"7","name":"","description":"","weight":"1"}],"":"","":1,"":false,'
    b'"mysqlType":{"id":"mydb","name":"varchar(255)","description":"varchar(512)","weight":"float"},'
    b'"":[{"":""}],"pkNames":["id"],"":{"":["",8],"":[],"":7},"":"","":1,"type":"UPDATE"}',
}


def _with_codes(finding: bytes, codes: dict[str, int]) -> bytes:
    """The finding's message with the same type texts and another ``sqlType`` (an earlier message)."""
    return orjson.dumps({**orjson.loads(finding), "sqlType": codes})


@pytest.mark.parametrize("case", sorted(_UNTYPED_FINDINGS))
def test_canal_untyped_column_converts_the_same_whatever_came_before(case: str) -> None:
    """The Canal schema cache was keyed by the type texts alone: a message took the types an
    earlier message's ``sqlType`` codes gave its untyped columns (on the Python path only,
    once its cache had been cleared and refilled apart from the native chain's decoder,
    which sees only the layouts the plan has not compiled)."""
    finding = _UNTYPED_FINDINGS[case]
    names = orjson.loads(finding)["mysqlType"]
    alone = Chain(get_codec("canal-json"), get_codec("maxwell-json"), [], "all")
    alone.native = None
    for code in (4, 12, -5, 3):
        chain = Chain(get_codec("canal-json"), get_codec("maxwell-json"), [], "all")
        chain.native = None
        chain.process(Record(value=_with_codes(finding, dict.fromkeys(names, code))))
        assert _values(chain.process(Record(value=finding))) == _values(alone.process(Record(value=finding))), code


def _values(result: object) -> list[bytes | None]:
    return [r.value for r in result.outputs]  # type: ignore[attr-defined]


def _untyped_message(types: dict[str, str], codes: dict[str, int] | None = None) -> bytes:
    """A regular Canal INSERT (one the native plan writes itself) of columns ``v1`` (the key), ``v2``."""
    message = {"data": [{"v1": "1", "v2": "6"}], "database": "d", "table": "t", "type": "INSERT"}
    message.update({"mysqlType": types, "pkNames": ["v1"], "es": 1, "ts": 2})
    return orjson.dumps(message if codes is None else {**message, "sqlType": codes})


@pytest.mark.parametrize("later", [None, {"v1": 4, "v2": 12}], ids=["no-codes", "other-code"])
@pytest.mark.parametrize(
    "target",
    [
        "native:canal-json>maxwell-json+rowxf",
        "native:canal-json>debezium-json",
        "native:ticdc-canal-json>maxwell-json",
    ],
)
def test_native_layouts_and_python_schemas_agree_after_the_schema_cache_is_cleared(
    target: str, later: dict[str, int] | None
) -> None:
    """The sequence the differential target met: a layout compiled natively, the decoders'
    schema caches cleared (a small cache here, 1024 schemas in the product), the layout's
    message again (the Python chain's decoder re-caches its schema, the native chain's, which
    the plan does not ask, does not), then a message of the same type texts with other (or
    no) ``sqlType`` codes: its new layout's probe and the Python path typed ``v2`` differently
    (``"6"`` natively, ``6`` in Python, from the earlier message's code)."""
    from cdc_smt.transforms import native
    from tests.fuzz.targets import NATIVE_TARGETS, NativeDifferential
    from tests.test_native import handled

    if not native.enabled():
        pytest.skip("the native core is not built")
    run = NativeDifferential(NATIVE_TARGETS[target])
    for chain in (run.native, run.python):
        chain.decoder._SCHEMA_CACHE_SIZE = 2  # type: ignore[attr-defined]
    types = {"v1": "int", "v2": "demo"}
    earlier = _untyped_message(types, {"v1": 4, "v2": 4})
    fillers = [_untyped_message({**types, "v1": f"bigint({n})"}, {"v1": -5, "v2": 12}) for n in range(1, 4)]
    sequence = [earlier, *fillers, earlier, _untyped_message(types, later)]
    for data in sequence:
        run(data)
    # the plan writes these messages itself: the sequence reaches the native layouts
    assert handled(run.native, [Record(value=v) for v in sequence]) == len(sequence)
