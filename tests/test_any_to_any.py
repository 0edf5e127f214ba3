"""Any to any: every ordered pair of formats converts the workload, and replaying
the output rebuilds the same tables as replaying the source, up to the losses the
formats declare.

Each conversion runs as a user would run it: source messages are decoded with a
schema catalog loaded from the tables' DDL (a schema file), converted through a
chain to the target, and the target's messages decoded again. What a format
cannot carry is declared in :data:`VALUE_LOSSES` (value rules documented in the
README and codec docstrings) and in ``Codec.capabilities`` (structure); the
expected tables are the source tables passed through the declared rules of both
formats, so an undeclared loss fails the test and so does a declared loss that
does not happen (the rules are checked for being needed).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from cdc_smt import schemas
from cdc_smt.transforms.catalog import SchemaCatalog
from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.changelog import replay
from cdc_smt.transforms.formats import get_codec, registry
from cdc_smt.transforms.model import ChangeEvent, Column, Record
from cdc_smt.transforms.types import InvalidTemporal, Kind
from tests import workload

FORMATS = sorted(registry())


def _catalog() -> SchemaCatalog:
    cat = SchemaCatalog()
    for ddl in workload.DDL.values():
        cat.apply_ddl(workload.DATABASE, ddl)
    return cat


def _encode(fmt: str, events: list[ChangeEvent]) -> list[Record]:
    codec = get_codec(fmt, catalog=_catalog())
    out: list[Record] = []
    for e in events:
        out.extend(codec.encode(e))
    return [r for r in out if r.value is not None]  # tombstones carry no change


def _decode(fmt: str, records: list[Record]) -> list[ChangeEvent]:
    codec = get_codec(fmt, catalog=_catalog())
    chain_events: list[ChangeEvent] = []
    for r in records:
        chain_events.extend(codec.decode(Record(value=r.value, key=r.key)))
    chain_events.extend(codec.flush())
    return chain_events


def convert(source: str, target: str, events: list[ChangeEvent]) -> list[ChangeEvent]:
    """workload -> source messages -> chain (decode source, encode target) -> decoded target."""
    src_records = _encode(source, events)
    cat = _catalog()
    chain = Chain(get_codec(source, catalog=cat), get_codec(target, catalog=cat), tolerance="none")
    result = chain.process_batch(Record(value=r.value, key=r.key) for r in src_records)
    result.extend(chain.flush())
    outputs = [r for r in result.outputs if r.value is not None]
    if target in schemas.names():  # every encoder's output validates against its schema
        validate = schemas.validator(target).validate
        for r in outputs:
            validate(orjson.loads(r.value))
    return _decode(target, outputs)


# -- declared value losses ---------------------------------------------------------
Rule = Callable[[Column, Any], Any]


def _zero_date_to_null(col: Column, v: Any) -> Any:
    return None if isinstance(v, InvalidTemporal) else v


def _zero_date_to_epoch_or_null(col: Column, v: Any) -> Any:
    if not isinstance(v, InvalidTemporal):
        return v
    if col.nullable:
        return None
    return dt.date(1970, 1, 1) if col.mysql.kind is Kind.DATE else dt.datetime(1970, 1, 1)


def _millis(col: Column, v: Any) -> Any:
    if isinstance(v, dt.datetime):
        return v.replace(microsecond=v.microsecond // 1000 * 1000)
    return v


def _chain(*rules: Rule) -> Rule:
    def apply(col: Column, v: Any) -> Any:
        for r in rules:
            v = r(col, v)
        return v

    return apply


#: Value rules of each format, as documented (README "Formats" and codec docstrings).
VALUE_LOSSES: dict[str, Rule] = {
    "debezium-json": _zero_date_to_epoch_or_null,
    "dataworks-json": _chain(_zero_date_to_null, _millis),
}


def expected_tables(events: list[ChangeEvent], *formats: str) -> dict:
    rules = [VALUE_LOSSES[f] for f in formats if f in VALUE_LOSSES]
    out = []
    for e in events:
        if not e.op.is_row:
            out.append(e)
            continue
        by_name = e.schema.by_name

        def norm(image, by_name=by_name):
            if image is None:
                return None
            return {k: _apply(rules, by_name[k], v) for k, v in image.items()}

        out.append(
            ChangeEvent(op=e.op, source=e.source, before=norm(e.before), after=norm(e.after), pk=e.pk, schema=e.schema)
        )
    return replay(out)


def _apply(rules: list[Rule], col: Column, v: Any) -> Any:
    for r in rules:
        v = r(col, v)
    return v


def _same(col: Column, want: Any, got: Any) -> bool:
    """Equal values of equal type; JSON columns compare as documents (formats that
    embed JSON, like Maxwell, re-serialise it; MySQL itself normalises JSON)."""
    if col.mysql.kind is Kind.JSON and isinstance(want, str) and isinstance(got, str):
        return orjson.loads(want) == orjson.loads(got)
    return got == want and type(got) is type(want)


@pytest.mark.parametrize("target", FORMATS)
@pytest.mark.parametrize("source", FORMATS)
def test_any_to_any_rebuilds_the_same_tables(source: str, target: str) -> None:
    events = workload.events()
    got = replay(convert(source, target, workload.events()))
    want = expected_tables(events, source, target)
    assert set(got) == set(want), "tables differ"
    for table in want:
        want_rows, got_rows = want[table], got[table]
        assert sorted(got_rows, key=repr) == sorted(want_rows, key=repr), f"{table}: keys differ"
        for key, row in want_rows.items():
            cols = workload.SCHEMAS[table[1]].by_name
            diffs = {
                c: (v, got_rows[key].get(c)) for c, v in row.items() if not _same(cols[c], v, got_rows[key].get(c))
            }
            assert not diffs, f"{table} {key}: {diffs}"
