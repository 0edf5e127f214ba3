"""The native core's Arrow entry points (``native/src/arrow.rs``) against their Python twins.

``convert_arrow`` is ``convert`` over a pyarrow binary array, answered with
Arrow arrays through the C data interface: the same counts, values, keys and
variants, for good, malformed and null (tombstone) inputs, empty batches,
``binary`` and ``large_binary`` inputs and big values. ``split_lines`` is
``connector.framing.read_lines`` over a block of a file.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_smt.connector.framing import read_lines
from cdc_smt.connector.spark import process
from tests.test_native import BASE, GOOD, MALFORMED, NATIVE_SUITE, _message, chains

pytestmark = NATIVE_SUITE


def _ext():
    import cdc_smt._native as ext

    return ext


def both(values: list[bytes | None], arrow_type: pa.DataType | None = None, sink: dict | None = None) -> tuple:
    """(``convert_arrow`` as Python lists, ``convert``) of the same values on two fresh plans."""
    arrays = _ext().convert_arrow(chains(sink=sink)[0].native.plan, pa.array(values, arrow_type or pa.binary()))
    imported = [pa.array(a) for a in arrays]
    assert [a.type for a in imported] == [pa.int32(), pa.large_binary(), pa.large_binary(), pa.int32()]
    return tuple(a.to_pylist() for a in imported), tuple(chains(sink=sink)[0].native.plan.convert(values))


REGULAR = [
    _message(k, [BASE, {**BASE, "id": "2"}], old=[{"v": "x"}, {"i": None}] if k == "UPDATE" else None)
    for k in ("INSERT", "UPDATE", "DELETE", "INIT")
]


@pytest.mark.parametrize("arrow_type", [pa.binary(), pa.large_binary()], ids=["binary", "large_binary"])
@pytest.mark.parametrize("sink", [{}, {"schemas_enable": True}], ids=["schemaless", "schemas"])
def test_arrays_in_arrays_out_equal_convert(arrow_type: pa.DataType, sink: dict) -> None:
    values = [*REGULAR, None, *MALFORMED, None, GOOD]
    got, want = both(values, arrow_type, sink)
    assert [list(x) for x in want] == list(got)
    counts = got[0]
    assert counts[len(REGULAR)] == -1  # a null input (tombstone) is Python's
    assert sum(n >= 0 for n in counts) >= len(REGULAR) + 1  # the plan did handle records
    assert None in got[1]  # delete tombstones come back as nulls


def test_empty_batches() -> None:
    for t in (pa.binary(), pa.large_binary()):
        got, want = both([], t)
        assert got == ([], [], [], []) == tuple(list(x) for x in want)


def test_a_sliced_array_and_big_values() -> None:
    """An array with an offset (a slice of a batch) and values of several megabytes."""
    big = _message("INSERT", [{**BASE, "v": "x" * 3_000_000}])
    values = [GOOD, big, None, big, GOOD]
    fast, _ = chains()
    arrays = _ext().convert_arrow(fast.native.plan, pa.array(values, pa.binary()).slice(1, 3))
    counts, out, keys, variants = (pa.array(a).to_pylist() for a in arrays)
    want = chains()[0].native.plan.convert(values[1:4])
    assert (counts, out, keys, variants) == tuple(want)
    assert counts[0] == 1 and len(out[0]) > 3_000_000


def test_not_a_binary_array_is_a_clear_error() -> None:
    plan = chains()[0].native.plan
    with pytest.raises(TypeError, match="binary"):
        _ext().convert_arrow(plan, pa.array(["text"]))
    with pytest.raises(TypeError, match="Arrow array"):
        _ext().convert_arrow(plan, [GOOD])


def test_an_exported_array_is_imported_once_and_freed_if_not() -> None:
    fast, _ = chains()
    counts, *_ = _ext().convert_arrow(fast.native.plan, pa.array([GOOD]))
    assert len(counts) == 1
    schema, array = counts.__arrow_c_array__()  # never imported: the capsules release it
    del schema, array
    assert pa.array(counts).to_pylist() == [1] == pa.array(counts).to_pylist()


# -- split_lines: read_lines over blocks -------------------------------------------------------

LINE_BYTES = st.lists(
    st.one_of(
        st.sampled_from([b"", b" ", b"\r", b"\t \x0b\x0c", b"\xef\xbb\xbf", b"\xef\xbb\xbf{}", b'{"a":1}\r', b"x\ry"]),
        st.binary(max_size=20).filter(lambda b: b"\n" not in b),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(lines=LINE_BYTES, final_newline=st.booleans(), block=st.integers(1, 64))
def test_split_lines_reads_as_read_lines(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], final_newline: bool, block: int
) -> None:
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    path = tmp_path_factory.mktemp("lines") / "f.jsonl"
    path.write_bytes(data)
    want = list(read_lines(str(path)))
    saved = process.BLOCK_BYTES
    process.BLOCK_BYTES = block
    try:
        got = [
            (n, v)
            for values, numbers in process._line_arrays(str(path))
            for n, v in zip(numbers.to_pylist(), values.to_pylist(), strict=True)
        ]
    finally:
        process.BLOCK_BYTES = saved
    assert got == want


def test_split_lines_arguments() -> None:
    values, lines, after = _ext().split_lines(b"a\n\nb\r\nc", 6, 7)  # up to the line end after b
    assert pa.array(values).to_pylist() == [b"a", b"b"] and pa.array(lines).to_pylist() == [7, 9] and after == 10
    with pytest.raises(ValueError, match="past"):
        _ext().split_lines(b"a\n", 3, 1)


def test_an_unreadable_file_is_one_clear_error(tmp_path: Path) -> None:
    from cdc_smt.connector.framing import FramingError

    with pytest.raises(FramingError, match="cannot open"):
        list(process._line_arrays(str(tmp_path / "missing.jsonl")))
