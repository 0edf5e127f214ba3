"""The native ticdc-canal-json -> debezium-json plan against the Python path: byte for byte.

TiCDC's dialect of Canal (parameterless ``mysqlType``, full ``old``, one row
per message, ``id`` 0, the ``_tidb`` extension): hypothesis streams written by
the TiCDC encoder (with and without content-compatible types and the TiDB
extension), the edge values, the corpus's TiCDC files, malformed messages and
official-Canal-looking messages (Python's warning); with and without
transforms. Outputs and dead letters must be equal, and the plan must handle
the plain TiCDC messages itself.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt.transforms import native
from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import ChangeEvent, Record
from tests.strategies import change_streams
from tests.test_fastpath import EDGES
from tests.test_native import (
    BASE,
    MALFORMED,
    NATIVE_SUITE,
    ZONES,
    _message,
    assert_plan_agrees,
    corpus_files,
    corpus_messages,
    records_of,
)
from tests.test_native_transforms import FIVE

pytestmark = NATIVE_SUITE


SINKS: list[dict[str, Any]] = [{}, {"schemas_enable": True}, {"time_precision_mode": "connect"}]


def assert_same(
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
) -> int:
    """Both paths give the same records and dead letters; returns how many the plan handled."""
    return assert_plan_agrees(
        "ticdc-canal-json", "debezium-json", native.TICDC_TO_DEBEZIUM, records, source, sink, transforms
    )


def ticdc_stream(events: list[ChangeEvent], tz: str, encoder: dict[str, Any]) -> list[bytes]:
    codec = get_codec("ticdc-canal-json", {"source_timezone": tz, **encoder})
    out = []
    for event in events:
        event.timezone = tz
        out.extend(r.value for r in codec.encode(event) if r.value is not None)
    return out


ENCODERS: list[dict[str, Any]] = [{}, {"content_compatible": True}, {"enable_tidb_extension": True}]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=8),
    sink=st.sampled_from(SINKS),
    tz=st.sampled_from(ZONES),
    encoder=st.sampled_from(ENCODERS),
    transforms=st.sampled_from([[], FIVE]),
)
def test_random_streams_are_byte_identical(
    stream: list[ChangeEvent], sink: dict[str, Any], tz: str, encoder: dict[str, Any], transforms: list[dict[str, Any]]
) -> None:
    values = ticdc_stream(stream, tz, encoder)
    assert_same(records_of(values), {"source_timezone": tz}, sink, transforms)


def test_plain_ticdc_messages_are_handled_natively() -> None:
    total = handled = 0
    for seed in range(20):
        from tests.test_native import _example

        for encoder in ENCODERS[:2]:
            values = ticdc_stream(_example(seed), "Asia/Shanghai", encoder)
            total += len(values)
            handled += assert_same(records_of(values), {"source_timezone": "Asia/Shanghai"})
    assert handled >= total * 0.6, (handled, total)


def ticdc_message(kind: str, row: dict[str, Any], old: dict[str, Any] | None = None, **more: Any) -> bytes:
    """A TiCDC message of the fast paths' table: parameterless types except where TiCDC
    keeps them, ``id`` 0, one row."""
    msg = orjson.loads(_message(kind, [row], old=[old] if old is not None else None))
    msg["id"] = 0
    msg["mysqlType"] = {
        k: v.split("(")[0] if not v.startswith(("enum", "set")) else v for k, v in msg["mysqlType"].items()
    }
    msg.update(more)
    return orjson.dumps(msg)


def test_edge_values() -> None:
    values = []
    for column, texts in sorted(EDGES.items()):
        for text in texts:
            row = {**BASE, column: text}
            values.append(ticdc_message("INSERT", row))
            values.append(ticdc_message("UPDATE", row, old={**BASE, "v": None}))
            values.append(ticdc_message("DELETE", row))
    for sink in SINKS:
        for tz in ("UTC", "Asia/Shanghai"):
            handled = assert_same(records_of(values), {"source_timezone": tz}, sink)
            if sink in SINKS[:2]:  # the default modes: native (connect mode's temporal values: Python)
                assert handled > len(values) // 2


def test_what_python_reads_from_tidb_or_warns_about_is_pythons(caplog: pytest.LogCaptureFixture) -> None:
    good = ticdc_message("INSERT", BASE)
    values = [
        good,
        ticdc_message("INSERT", BASE, _tidb={"commitTs": 449_000_000_000_000_000}),
        ticdc_message("INSERT", BASE, _tidb={"onlyHandleKey": True}),
        ticdc_message("INSERT", BASE, _tidb=[1]),
        orjson.dumps({"_tidb": {"claimCheckLocation": "s3://x"}}),
        ticdc_message("TIDB_WATERMARK", BASE, _tidb={"watermarkTs": 5}),
        orjson.dumps({**orjson.loads(good), "data": [BASE, BASE]}),
        ticdc_message("INSERT", BASE, id=7),
        ticdc_message("INSERT", BASE, id="0"),
        good,
    ]
    assert assert_same(records_of(values)) == 2
    with caplog.at_level(logging.WARNING):
        Chain(get_codec("ticdc-canal-json"), get_codec("debezium-json"), [], "all").process_batch(records_of(values))
    assert "look like official Canal" in caplog.text


def test_malformed_messages_among_good_ones() -> None:
    good = ticdc_message("INSERT", BASE)
    values = [v for bad in MALFORMED for v in (good, bad)]
    assert assert_same(records_of(values)) >= len(MALFORMED)


def test_corpus_ticdc_files(corpus: Path) -> None:
    values = [v for messages in corpus_messages(corpus_files(corpus, "ticdc-canal-json")) for v in messages]
    assert values
    for sink in SINKS[:2]:
        for transforms in ([], FIVE):
            assert_same(records_of(values), {}, sink, transforms)
    assert assert_same(records_of(values)) > 0
