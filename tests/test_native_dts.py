"""The native canal-json -> dts-avro plan against the Python path: byte for byte.

The DTS writer writes one schemaless Avro ``Record`` per row, each value converted
from its Canal (or TiCDC) text as the Python path types and encodes it, numbered by
the encoder's own record counter. Inputs: hypothesis streams, the edge values, the
corpus, the example data, malformed and mutated messages; with and without the
transforms that keep rows as they are. Outputs (values, keys, topics, headers) and
dead letters must be equal, and the plan must handle the regular messages itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt.transforms import native
from cdc_smt.transforms.chain import Chain, ChainResult
from cdc_smt.transforms.config import build_transforms
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.formats.dts_avro import read_record
from cdc_smt.transforms.model import ChangeEvent, Record
from tests.strategies import change_streams
from tests.test_native import (
    BASE,
    GOOD,
    MALFORMED,
    MUTATIONS,
    NATIVE_SUITE,
    ROOT,
    ZONES,
    _example,
    _message,
    assert_plan_agrees,
    canal_stream,
    corpus_files,
    corpus_messages,
    edge_messages,
    records_of,
)
from tests.test_native_canal_out import CHANGING, KEEPING, TICDC_BASE, keeping_messages, ticdc_text_messages
from tests.test_native_ticdc import ENCODERS as TICDC_ENCODERS
from tests.test_native_ticdc import ticdc_message, ticdc_stream
from tests.test_native_transforms import CHAINS

pytestmark = NATIVE_SUITE


def make_chain(source: dict[str, Any] | None = None, transforms: list[dict[str, Any]] | None = None) -> Chain:
    return Chain(
        get_codec("canal-json", source or {}), get_codec("dts-avro"), build_transforms(transforms or []), "all"
    )


def assert_same(
    records: list[Record], source: dict[str, Any] | None = None, transforms: list[dict[str, Any]] | None = None
) -> int:
    """Both paths give the same records and dead letters; returns how many values the plan
    converts itself, each on its own (in a batch the records after one for Python are Python's)."""
    assert_plan_agrees("canal-json", "dts-avro", native.CANAL_TO_DTS, records, source, {}, transforms)
    return alone(make_chain(source, transforms), records)


def alone(chain: Chain, records: list[Record]) -> int:
    """How many of ``records`` the chain's plan converts, each in a batch of its own."""
    assert chain.native is not None
    return sum(chain.native.plan.convert([r.value])[0][0] >= 0 for r in records)


def test_the_plan_is_chosen_only_for_what_it_writes() -> None:
    assert make_chain().native.name == native.CANAL_TO_DTS
    ticdc = Chain(get_codec("ticdc-canal-json"), get_codec("dts-avro"), [], "all")
    assert ticdc.native.name == native.TICDC_TO_DTS
    for name in KEEPING:
        assert make_chain({}, CHAINS[name]).native is not None, name
    for name in CHANGING:  # the row-changing transforms: the shaped plan (test_native_rowxf_writers)
        assert make_chain({}, CHAINS[name]).native.name == native.CANAL_TO_DTS, name
    assert native.CANAL_TO_DTS in native.status()["plans"]
    assert native.CANAL_TO_DTS in native.plans_of("dts-avro")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    tz=st.sampled_from(ZONES),
    merge=st.lists(st.booleans(), min_size=1, max_size=5),
    transforms=st.sampled_from([[], *(CHAINS[n] for n in KEEPING)]),
)
def test_random_streams_are_byte_identical(
    stream: list[ChangeEvent], tz: str, merge: list[bool], transforms: list[dict[str, Any]]
) -> None:
    values = canal_stream(stream, tz, merge)
    assert_plan_agrees(
        "canal-json", "dts-avro", native.CANAL_TO_DTS, records_of(values), {"source_timezone": tz}, {}, transforms
    )


def test_generated_streams_are_mostly_handled_natively() -> None:
    total = handled = 0
    for seed in range(30):
        values = canal_stream(_example(seed), "UTC", [True, False])
        total += len(values)
        handled += assert_same(records_of(values))
    assert handled >= total * 0.6, (handled, total)


def test_every_edge_value() -> None:
    values = edge_messages(rows=2)
    handled = assert_same(records_of(values))
    assert handled >= len(values) // 2, (handled, len(values))
    assert assert_same(records_of(values[:3])) == 3  # the regular row


def test_every_op_and_its_images() -> None:
    rows = [BASE, {**BASE, "id": "2"}, {**BASE, "id": "3", "v": "z"}]
    values = [
        _message("INSERT", rows),
        _message("UPDATE", rows, old=[{"v": "a"}, {"i": None}, {"v": None, "i": "9"}]),
        _message("UPDATE", rows),
        _message("DELETE", rows),
        _message("INIT", rows),
        _message("INSERT", rows, pkNames=["v"]),
        _message("INSERT", rows, pkNames=[]),
        _message("INSERT", rows, pkNames=None),
        _message("INSERT", rows, es=None),
        _message("INSERT", rows, es=-1),
        _message("INSERT", rows, database="a.b", table=None),
    ]
    assert assert_same(records_of(values)) == len(values)
    out = make_chain().process_batch(records_of(values[:2])).outputs
    assert len(out) == 6
    records = [read_record(r.value) for r in out]
    assert [r["id"] for r in records] == [1, 2, 3, 4, 5, 6]
    assert [r["operation"] for r in records] == ["INSERT"] * 3 + ["UPDATE"] * 3
    assert records[3]["beforeImages"] is not None and records[0]["beforeImages"] is None


def test_record_ids_continue_across_python_records_and_batches() -> None:
    ddl = _message("QUERY", [BASE], sql="ALTER TABLE t ADD c int")
    values = [GOOD, GOOD, ddl, GOOD, b"not json", GOOD, ddl]
    records = records_of(values)
    assert_same(records)
    chain = make_chain()
    result = chain.process_batch(records)
    ids = [read_record(r.value)["id"] for r in result.outputs]
    assert ids == list(range(1, len(ids) + 1)) and len(ids) == 6  # the DDL records are numbered too
    again = chain.process_batch(records_of([GOOD]))
    assert read_record(again.outputs[0].value)["id"] == len(ids) + 1

    seen: list[Record] = []

    def python(record: Record, result: ChainResult) -> None:
        seen.append(record)
        chain._one(record, result)

    assert chain.native is not None
    chain.native.run(records, python, ChainResult())
    assert [r.value for r in seen] == [ddl, b"not json", ddl]  # only what the plan cannot convert


def test_unusual_fields_rows_and_orders() -> None:
    from tests.test_native_canal_out import UNUSUAL

    values = [v for odd in UNUSUAL for v in (GOOD, odd)]
    values += [
        _message("INSERT", [{**BASE, "v": "\u00e9\u0000"}, dict(reversed(BASE.items()))]),
        _message("INSERT", [{k: v for k, v in BASE.items() if k != "i"}]),
        _message("UPDATE", [BASE], old=[{"zz": "1"}]),
        _message("INSERT", [BASE], pkNames=["id", "id"]),
        _message("INSERT", [BASE], pkNames=["dt0"]),
    ]
    assert assert_same(records_of(values)) >= len(UNUSUAL)


def test_a_batch_is_the_plans_up_to_its_first_record_for_python() -> None:
    chain = make_chain()
    assert chain.native is not None
    assert chain.native.convert_values([GOOD, b"x", GOOD])[0] == [1, -1, -1]
    assert chain.encoder._next_id == 1  # the plan's record, numbered; Python numbers the rest
    assert chain.native.convert_values([GOOD, GOOD])[0] == [1, 1]
    assert chain.encoder._next_id == 3


def test_malformed_messages_among_good_ones() -> None:
    values = [v for bad in MALFORMED for v in (GOOD, bad)]
    assert_same(records_of(values))


@settings(max_examples=150, deadline=None)
@given(**MUTATIONS)
def test_mutated_messages(at: int, insert: bytes, cut: int) -> None:
    assert_same(records_of([GOOD[:at] + insert + GOOD[at + cut :], GOOD]))


@pytest.mark.parametrize("name", KEEPING)
def test_chains_that_keep_rows(name: str) -> None:
    values = keeping_messages()
    assert assert_same(records_of(values), {}, CHAINS[name]) == len(values)


@pytest.mark.parametrize("tz", ZONES)
def test_timestamps_in_the_source_zone(tz: str) -> None:
    types = {"id": "int", "ts": "timestamp(6)"}
    texts = [
        "2024-03-10 02:30:00",  # in New York's DST gap: Python's
        "2024-11-03 01:30:00.5",  # in New York's fold: the earlier instant, as zoneinfo's fold=0
        "1899-12-31 23:59:59",  # before the range the zone databases are compared over: Python's
        "1970-01-01 00:00:00",
        "2038-01-19 03:14:08",
        "9999-12-31 23:59:59.999999",
    ]
    values = [_message("INSERT", [{"id": str(i), "ts": t}], types=types) for i, t in enumerate(texts)]
    handled = assert_same(records_of([GOOD, *values]), {"source_timezone": tz})
    assert handled >= (len(values) + 1 if tz == "UTC" else 3), handled


def test_corpus_canal_files(corpus: Path) -> None:
    total = count = 0
    for values in corpus_messages(corpus_files(corpus, "canal-json")):
        total += len(values)
        count += assert_same(records_of(values))
        assert_same(records_of(values), {}, CHAINS["headers"])
    assert total > 0 and count > total // 3, (count, total)


@pytest.mark.parametrize("name", ["orders.canal.jsonl", "demo-shop.canal.jsonl", "orders-with-bad-line.canal.jsonl"])
def test_example_data(name: str) -> None:
    lines = [line for line in (ROOT / "examples" / "data" / name).read_bytes().splitlines() if line.strip()]
    assert_same(records_of(lines), {"source_timezone": "Asia/Shanghai"})
    assert assert_same(records_of(lines)) > 0


# ---------------------------------------------------------------------------
# ticdc-canal-json -> dts-avro
# ---------------------------------------------------------------------------


def assert_same_ticdc(records: list[Record], source: dict[str, Any] | None = None) -> int:
    assert_plan_agrees("ticdc-canal-json", "dts-avro", native.TICDC_TO_DTS, records, source, {}, [])
    chain = Chain(get_codec("ticdc-canal-json", source or {}), get_codec("dts-avro"), [], "all")
    return alone(chain, records)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(stream=change_streams(max_events=8), tz=st.sampled_from(ZONES), encoder=st.sampled_from(TICDC_ENCODERS))
def test_ticdc_random_streams_are_byte_identical(stream: list[ChangeEvent], tz: str, encoder: dict[str, Any]) -> None:
    assert_same_ticdc(records_of(ticdc_stream(stream, tz, encoder)), {"source_timezone": tz})


def test_ticdc_texts() -> None:
    values = ticdc_text_messages(changed_old=False)
    assert assert_same_ticdc(records_of(values)) > len(values) // 3
    good = ticdc_message("INSERT", TICDC_BASE)
    assert_same_ticdc(records_of([v for bad in MALFORMED for v in (good, bad)]))


def test_keys_are_the_python_keys() -> None:
    values = [
        _message("INSERT", [{**BASE, "v": 'q"\u00e9\\'}], pkNames=["v", "id"]),
        _message("INSERT", [{**BASE, "id": "18446744073709551615"}]),
        _message("INSERT", [{**BASE, "id": None}]),
    ]
    assert assert_same(records_of(values)) == len(values)
    keys = [r.key for r in make_chain().process_batch(records_of(values)).outputs]
    assert keys[0] == orjson.dumps({"v": 'q"\u00e9\\', "id": int(BASE["id"])})


def test_a_long_run_of_records_for_python_is_not_converted_again_for_each() -> None:
    """Each record Python takes ends a native run (ids are numbered in order): a run of them
    must not cost a conversion of the rest of the batch each (quadratic), nor change a byte."""
    ddl = _message("QUERY", [BASE], sql="ALTER TABLE t ADD c int")
    values = [GOOD] + [ddl] * 600 + [GOOD] * 50 + [b"not json"] * 300 + [GOOD]
    records = records_of(values)
    assert_same(records)

    class Counting:
        def __init__(self, plan: Any) -> None:
            self.plan, self.values = plan, 0

        def convert(self, values: list[Any], keys: Any = None) -> Any:
            self.values += len(values)
            return self.plan.convert(values, keys)

    chain = make_chain()
    assert chain.native is not None
    counting = Counting(chain.native.plan)
    chain.native.plan = counting
    result = chain.process_batch(records)
    assert len(result.outputs) == len(values) - 300  # the DDLs are records of their own
    assert counting.values < 10 * len(values), counting.values  # before: 300,000 (each asked again)
    ids = [read_record(r.value)["id"] for r in result.outputs]
    assert ids == list(range(1, len(ids) + 1))
