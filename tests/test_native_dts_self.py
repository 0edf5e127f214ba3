"""dts-avro -> dts-avro natively against the Python path: byte for byte.

The Python encoder re-writes a record its decoder read as it was read (the record's own
``id``, times, positions, tags; ``objectName`` re-escaped; the images the op writes, each
union value as read; the record's own Kafka key), in fastavro's canonical encoding. The
native plan (``native/src/dts_avro_self.rs``) writes that from the fields the DTS reader
reads. Inputs: hypothesis streams written by the Python DTS encoder, the hand-made
records of ``test_native_dts_in`` (every union branch, unusual and malformed records,
mutations), records in a non-canonical Avro encoding, the corpus's DTS records, the
transforms that keep rows as they are. Compared: ``Chain.process_batch`` (values, keys,
topics, headers, dead letters) and ``NativePlan.convert_values`` record by record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt.transforms import native
from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.config import build_transforms
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import ChangeEvent, Record
from cdc_smt.transforms.native_dts import _long
from tests.strategies import change_streams
from tests.test_native import NATIVE_SUITE, ZONES, corpus_files, dead_letters, outputs, records_of
from tests.test_native_dts_in import (
    KEEPING,
    OTHER,
    PYTHON_ONLY,
    PYTHON_VALUES,
    REGULAR,
    ROW,
    TAKEN,
    UNUSUAL,
    VALUES,
    column,
    dts,
    encoded,
    malformed,
)

pytestmark = NATIVE_SUITE


def make_chain(source: dict[str, Any], sink: dict[str, Any], transforms: list[dict[str, Any]]) -> Chain:
    return Chain(get_codec("dts-avro", source), get_codec("dts-avro", sink), build_transforms(transforms), "all")


def keyed(values: list[bytes | None]) -> list[Record]:
    """``records_of`` with keys of their own (some without one): all carried alike."""
    return [
        msgspec.structs.replace(r, key=None if i % 3 == 0 else f"key-{i}".encode())
        for i, r in enumerate(records_of(values))
    ]


def assert_same(
    records: list[Record],
    source: dict[str, Any] | None = None,
    sink: dict[str, Any] | None = None,
    transforms: list[dict[str, Any]] | None = None,
) -> int:
    """Both paths give the same records, dead letters and missing-column counts, through
    ``process_batch`` and through ``convert_values`` (each record the plan converts against
    what Python writes for it alone); returns how many records the plan converted."""
    fast = make_chain(source or {}, sink or {}, transforms or [])
    slow = make_chain(source or {}, sink or {}, transforms or [])
    assert fast.native is not None and fast.native.name == native.DTS_TO_DTS
    slow.native = None
    native_result, python_result = fast.process_batch(records), slow.process_batch(records)
    assert outputs(native_result) == outputs(python_result)
    assert dead_letters(native_result) == dead_letters(python_result)
    assert [t.missing_counts for t in fast.transforms] == [t.missing_counts for t in slow.transforms]
    plan = fast.native
    plan.plan.clear()
    counts, values, keys, variants = plan.convert_values([r.value for r in records], [r.key for r in records])
    start = 0
    for record, n in zip(records, counts, strict=True):
        if n < 0:
            continue
        want = [(r.value, r.key, r.topic, r.headers) for r in slow.process_batch([record]).outputs]
        got = [
            (values[i], keys[i], plan.variants[variants[i]][0], native.edit_headers(record.headers, edits or ()))
            for i in range(start, start + n)
            for edits in [plan.variants[variants[i]][1]]
        ]
        assert got == want
        start += n
    assert start == len(values)
    return sum(n >= 0 for n in counts)


# ---------------------------------------------------------------------------
# the plan
# ---------------------------------------------------------------------------


def test_the_plan_is_chosen_for_the_transforms_that_keep_rows() -> None:
    plan = make_chain({}, {}, []).native
    assert plan is not None and plan.name == native.DTS_TO_DTS and plan.needs_keys
    assert native.DTS_TO_DTS in native.status()["plans"] and native.DTS_TO_DTS in native.plans_of("dts-avro")
    for transforms in TAKEN:
        assert (make_chain({}, {}, transforms).native is not None) == (transforms in KEEPING)
    assert make_chain({}, {}, PYTHON_ONLY).native is None


def test_without_keys_the_plan_handles_nothing() -> None:
    """The record is re-written under its own key: a host that cannot pass keys gets Python's."""
    plan = make_chain({}, {}, []).native
    assert plan is not None
    assert plan.convert_values(REGULAR)[0] == [-1] * len(REGULAR)
    assert plan.convert_values(REGULAR, [None] * len(REGULAR))[0] == [1] * len(REGULAR)
    assert plan.convert_values(REGULAR[:2], ["not bytes", b"k"])[0] == [-1, 1]  # type: ignore[list-item]


# ---------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------


def test_regular_records_are_all_handled_natively() -> None:
    assert assert_same(keyed(REGULAR)) == len(REGULAR)


@pytest.mark.parametrize("tz", ZONES)
def test_every_value_kind_is_copied_natively(tz: str) -> None:
    values = [column(code, v) for code, v in VALUES]
    zone = {"source_timezone": tz}
    assert assert_same(keyed(values), zone, zone) == len(values)


def test_values_python_types_otherwise_are_pythons() -> None:
    values = [v for code, bad in PYTHON_VALUES for v in (dts(), column(code, bad))]
    assert assert_same(keyed(values)) == len(PYTHON_VALUES)


def test_unusual_records_among_regular_ones_stay_native_around_them() -> None:
    """Python re-writes DDL, transaction and heartbeat records with their own ids (no record
    id from the encoder's counter): the regular records after them are still the plan's."""
    values = [v for bad in UNUSUAL for v in (REGULAR[1], bad)]
    chain = make_chain({}, {}, [])
    before = chain.encoder._next_id
    assert assert_same(keyed(values)) >= len(UNUSUAL)
    counts = chain.native.convert_values(values, [b"k"] * len(values))[0]
    assert all(n == 1 for n in counts[::2])
    chain.process_batch(keyed(values))
    assert chain.encoder._next_id == before


def test_malformed_records_among_good_ones() -> None:
    bad = malformed()
    assert assert_same(keyed([v for b in bad for v in (REGULAR[0], b)])) >= len(bad)


def _padded(n: int) -> bytes:
    """``n`` as a varint one byte longer than needed (fastavro reads it; writes it minimal)."""
    minimal = bytearray(_long(n))
    minimal[-1] |= 0x80
    return bytes(minimal) + b"\x00"


def test_non_canonical_encodings_are_written_as_fastavro_writes_them() -> None:
    good = dts("UPDATE")
    version, rest = _long(0), good[1:]
    ident = _long(42)
    assert rest.startswith(ident)
    values = [
        _padded(0) + rest,  # a padded version
        version + _padded(42) + rest[len(ident) :],  # a padded id
        dts(objectName="shop\\u002eall.t"),  # the escape in lower case: written in upper case
        dts("INSERT", before=ROW, beforeImages=OTHER),  # a before-image an INSERT does not write
        dts(after=[ROW[0], "NULL", "NULL", "NULL", "NULL"]),  # EmptyObject NULL: written as null
    ]
    assert assert_same(keyed(values)) == len(values)


@settings(max_examples=150, deadline=None)
@given(
    at=st.integers(0, len(REGULAR[1]) - 1),
    insert=st.binary(max_size=3) | st.sampled_from([b"\x00", b"\x01", b"\x02", b"\x19", b"\x7f", b"\x80", b"\xff"]),
    cut=st.integers(0, 3),
)
def test_mutated_records(at: int, insert: bytes, cut: int) -> None:
    good = REGULAR[1]
    assert_same(keyed([good[:at] + insert + good[at + cut :], good]))


@pytest.mark.parametrize("transforms", [*KEEPING, [{"type": "filter", "tables": [r"other\..*"]}]])
def test_transforms(transforms: list[dict[str, Any]]) -> None:
    other = [dts(objectName="other.t"), dts("UPDATE", objectName="other.t"), dts("DELETE", objectName="other.t")]
    assert assert_same(keyed(REGULAR + other), transforms=transforms) == len(REGULAR) + len(other)


def test_max_message_bytes_is_the_decoders() -> None:
    assert assert_same(keyed(REGULAR), {"max_message_bytes": 150}) < len(REGULAR)


# ---------------------------------------------------------------------------
# generated streams and the corpus
# ---------------------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    stream=change_streams(max_events=10),
    tz=st.sampled_from(ZONES),
    transforms=st.sampled_from([[], *KEEPING]),
)
def test_random_streams_are_byte_identical(
    stream: list[ChangeEvent], tz: str, transforms: list[dict[str, Any]]
) -> None:
    zone = {"source_timezone": tz}
    assert_same(keyed(encoded(stream, tz)), zone, zone, transforms)


def test_generated_streams_are_mostly_handled_natively() -> None:
    """Over many generated streams the plan converts most records itself: the comparisons
    above are not between two Python runs."""
    from tests.test_native import _example

    total = handled = 0
    for seed in range(40):
        records = keyed(encoded(_example(seed), "UTC"))
        total += len(records)
        handled += assert_same(records)
    assert total and handled >= total * 0.6, (handled, total)


def test_corpus_dts_records(corpus: Path) -> None:
    files = corpus_files(corpus, "dts-avro") if (corpus / "dts-avro").is_dir() else []
    values = [p.read_bytes() for p in files if p.suffix in (".avro", ".bin")]
    if not values:
        pytest.skip(f"no DTS Avro records in the corpus ({corpus / 'dts-avro'})")
    assert_same(keyed(values))
