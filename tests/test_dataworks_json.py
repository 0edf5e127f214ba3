"""dataworks-json: six value types, update pairing (and the lone-half rule), encoding losses."""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal

import orjson
import pytest
from hypothesis import HealthCheck, given, settings

from cdc_smt import schemas
from cdc_smt.transforms.changelog import replay
from cdc_smt.transforms.errors import DecodeError
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import ChangeEvent, Column, Op, Record, SourcePosition, TableSchema
from cdc_smt.transforms.types import InvalidTemporal, Kind, format_time
from tests.messages import Catalog
from tests.strategies import change_streams


def codec(catalog=None, **options):
    return get_codec("dataworks-json", options, catalog=catalog)


COLUMNS = [
    {"name": "id", "type": "LONG"},
    {"name": "name", "type": "STRING"},
    {"name": "price", "type": "DOUBLE"},
    {"name": "bin", "type": "BYTES"},
    {"name": "at", "type": "DATE"},
    {"name": "ok", "type": "BOOLEAN"},
]


def message(op, before=None, after=None, seq="1620457642589000001", table="items", **payload):
    return {
        "schema": {
            "dataColumn": [dict(c) for c in COLUMNS],
            "primaryKey": ["id"],
            "source": {"dbType": "MySQL", "dbName": "shop", "tableName": table},
        },
        "payload": {
            "before": None if before is None else {"dataColumn": dict(before)},
            "after": None if after is None else {"dataColumn": dict(after)},
            "sequenceId": seq,
            "timestamp": {"eventTime": 1620458077000, "systemTime": 1620458077779, "checkpointTime": 1620458077000},
            "op": op,
            "ddl": None,
            **payload,
        },
        "version": "0.0.1",
    }


ROW = {
    "id": 15,
    "name": "scooter",
    "price": 3.5,
    "bin": base64.b64encode(b"\x01\x02").decode(),
    "at": 1590315269000,
    "ok": True,
}
ROW2 = dict(ROW, name="donald", price=1.25)


def rec(obj, offset=None) -> Record:
    return Record(value=orjson.dumps(obj), topic="t", partition=0, offset=offset)


def decode(c, *objs) -> list[ChangeEvent]:
    out = []
    for i, o in enumerate(objs):
        out.extend(c.decode(rec(o, i)))
    return out


# -- decoding ---------------------------------------------------------------


def test_insert_envelope_and_default_types():
    (e,) = decode(codec(), message("INSERT", after=ROW))
    assert e.op is Op.INSERT and (e.database, e.table) == ("shop", "items")
    assert e.pk == ("id",) and e.source.db_type == "mysql"
    assert e.source.sequence_id == "1620457642589000001"
    assert (e.ts_ms, e.processing_ts_ms) == (1620458077000, 1620458077779)
    assert [(c.name, c.type) for c in e.schema.columns] == [
        ("id", "bigint"),
        ("name", "longtext"),
        ("price", "double"),
        ("bin", "longblob"),
        ("at", "datetime(3)"),
        ("ok", "bit(1)"),
    ]
    e.typed()
    assert e.after == {
        "id": 15,
        "name": "scooter",
        "price": 3.5,
        "bin": b"\x01\x02",
        "at": dt.datetime(2020, 5, 24, 10, 14, 29),
        "ok": True,
    }


def test_date_values_are_instants_shown_in_source_timezone():
    (e,) = decode(codec(source_timezone="Asia/Shanghai"), message("INSERT", after=ROW))
    assert e.timezone == "Asia/Shanghai"
    assert e.typed().after["at"] == dt.datetime(2020, 5, 24, 18, 14, 29)


def test_double_sent_as_text_is_an_exact_decimal():
    (e,) = decode(codec(), message("INSERT", after=dict(ROW, price="1.100000")))
    assert e.schema.column("price").type == "decimal(65,6)"
    assert e.typed().after["price"] == Decimal("1.100000")
    assert str(e.after["price"]) == "1.100000"


def test_catalog_types_win():
    schema = TableSchema(
        (
            Column("id", "int unsigned", False, True),
            Column("name", "enum('scooter','donald')"),
            Column("price", "decimal(10,2)"),
            Column("bin", "varbinary(8)"),
            Column("at", "date"),
            Column("ok", "tinyint(1)"),
        ),
        ("id",),
    )
    c = codec(Catalog({("shop", "items"): schema}), source_timezone="Asia/Shanghai")
    (e,) = decode(c, message("INSERT", after=dict(ROW, at=1590249600000)))  # 2020-05-24 00:00 +08:00
    assert e.schema == schema
    assert e.typed().after == {
        "id": 15,
        "name": "scooter",
        "price": Decimal("3.5"),
        "bin": b"\x01\x02",
        "at": dt.date(2020, 5, 24),
        "ok": 1,
    }


def test_unknown_eventtime_is_none():
    msg = message("INSERT", after=ROW, seq="-1")
    msg["payload"]["timestamp"] = {"checkpointTime": -1, "eventTime": -1, "systemTime": 1731661820245}
    (e,) = decode(codec(), msg)
    assert e.ts_ms is None and e.processing_ts_ms == 1731661820245


def test_single_record_update_carries_both_images():
    (e,) = decode(codec(), message("UPDATE_AFTER", before=ROW, after=ROW2))
    assert e.op is Op.UPDATE and not e.partial
    assert e.before["name"] == "scooter" and e.after["name"] == "donald"


def test_control_and_ddl_ops():
    c = codec()
    heartbeat = {
        "schema": {"dataColumn": None, "primaryKey": None, "source": None},
        "payload": {
            "before": None,
            "after": None,
            "sequenceId": None,
            "timestamp": {"eventTime": 1620457659000, "checkpointTime": 1620457659000},
            "op": "MHEARTBEAT",
            "ddl": None,
        },
        "version": "0.0.1",
    }
    (hb,) = decode(c, heartbeat)
    assert hb.op is Op.HEARTBEAT and hb.ts_ms == 1620457659000
    assert [orjson.loads(r.value) for r in c.encode(hb)] == [heartbeat]
    begin, end = decode(c, message("TRANSACTION_BEGIN"), message("TRANSACTION_END"))
    assert (begin.op, end.op) == (Op.BEGIN, Op.COMMIT)
    for code in ("CREATE", "ALTER", "ERASE", "QUERY", "RENAME", "CINDEX", "DINDEX"):
        (d,) = decode(c, message(code, ddl={"text": "ALTER TABLE items ADD c int", "ddlMeta": "rO0AB"}))
        assert d.op is Op.DDL and d.ddl_kind == code and d.ddl == "ALTER TABLE items ADD c int"
    (t,) = decode(c, message("TRUNCATE", ddl={"text": "TRUNCATE TABLE items"}))
    assert t.op is Op.TRUNCATE and t.table == "items"  # replay empties the table
    for code, op in (("XACOMMIT", Op.COMMIT), ("GTID", Op.HEARTBEAT), ("XAROLLBACK", Op.HEARTBEAT)):
        (x,) = decode(c, message(code))
        assert x.op is op
        assert orjson.loads(c.encode(x)[0].value)["payload"]["op"] == code


# -- pairing ----------------------------------------------------------------


def test_split_update_halves_pair_into_one_event():
    c = codec()
    assert decode(c, message("UPDATE_BEFOR", before=ROW)) == []
    assert c.pending_state()["pending"]
    (e,) = decode(c, message("UPDATE_AFTER", after=ROW2))
    assert e.op is Op.UPDATE and not e.partial
    assert e.before["name"] == "scooter" and e.after["name"] == "donald"
    assert e.record.offset == 0  # the after-half's record
    assert c.flush() == [] and c.pending_state() == {"pending": {}}


def test_lone_before_half_is_released_before_the_next_message():
    c = codec()
    events = decode(c, message("UPDATE_BEFOR", before=ROW, seq="1"), message("INSERT", after=ROW2, seq="2"))
    assert [e.op for e in events] == [Op.UPDATE, Op.INSERT]
    lone = events[0]
    assert lone.partial and lone.after is None and lone.before["id"] == 15
    assert lone.record.offset == 0


def test_halves_with_different_sequence_ids_or_tables_do_not_pair():
    c = codec()
    events = decode(c, message("UPDATE_BEFOR", before=ROW, seq="1"), message("UPDATE_AFTER", after=ROW2, seq="2"))
    assert [(e.before is None, e.after is None, e.partial) for e in events] == [
        (False, True, True),
        (True, False, True),
    ]
    events = decode(
        c, message("UPDATE_BEFOR", before=ROW, seq="3"), message("UPDATE_AFTER", after=ROW2, seq="3", table="other")
    )
    assert [e.table for e in events] == ["items", "other"] and all(e.partial for e in events)


def test_lone_before_half_is_flushed_at_end_of_stream():
    c = codec()
    assert decode(c, message("UPDATE_BEFOR", before=ROW)) == []
    (e,) = c.flush()
    assert e.op is Op.UPDATE and e.partial and e.before["id"] == 15 and e.after is None
    assert c.flush() == []


def test_lone_halves_replay_like_the_whole_update():
    whole = decode(
        codec(),
        message("INSERT", after=ROW, seq="0"),
        message("UPDATE_AFTER", before=ROW, after=dict(ROW2, id=16), seq="1"),
    )
    halves = decode(
        codec(),
        message("INSERT", after=ROW, seq="0"),
        message("UPDATE_BEFOR", before=ROW, seq="1"),
        message("UPDATE_AFTER", after=dict(ROW2, id=16), seq="9"),  # a different id: never paired
    )
    assert len(halves) == 3
    assert replay(halves) == replay(whole)


def test_a_bad_after_half_leaves_the_before_half_pending():
    c = codec()
    decode(c, message("UPDATE_BEFOR", before=ROW))
    with pytest.raises(DecodeError):
        c.decode(rec(message("UPDATE_AFTER", after=dict(ROW2, id="x"))))
    (e,) = c.flush()
    assert e.before["id"] == 15


def test_pending_state_is_plain_data_and_restores_into_a_new_codec():
    c = codec()
    decode(c, message("UPDATE_BEFOR", before=ROW))
    state = orjson.loads(orjson.dumps(c.pending_state()))  # survives JSON (a Faust table value)
    fresh = codec()
    fresh.restore_state(state)
    (e,) = decode(fresh, message("UPDATE_AFTER", after=ROW2))
    assert e.op is Op.UPDATE and e.before["name"] == "scooter" and not e.partial
    fresh.restore_state(state)
    (lone,) = fresh.flush()
    assert (
        lone.record.topic == "t"
        and lone.record.offset == 0
        and lone.record.value == orjson.dumps(message("UPDATE_BEFOR", before=ROW))
    )


# -- encoding ---------------------------------------------------------------


def test_split_pairs_and_single_updates_are_reproduced_exactly():
    c = codec()
    before, after = orjson.dumps(message("UPDATE_BEFOR", before=ROW)), orjson.dumps(message("UPDATE_AFTER", after=ROW2))
    c.decode(Record(value=before))
    (e,) = c.decode(Record(value=after))
    assert [r.value for r in c.encode(e)] == [before, after]
    single = orjson.dumps(message("UPDATE_AFTER", before=ROW, after=ROW2))
    (e,) = c.decode(Record(value=single))
    assert [r.value for r in c.encode(e)] == [single]
    e.typed()  # typed values are written back the same way
    assert [r.value for r in c.encode(e)] == [single]


def test_update_as_option_overrides_the_original_shape():
    (e,) = decode(codec(), message("UPDATE_AFTER", before=ROW, after=ROW2))
    split = [orjson.loads(r.value) for r in codec(update_as="split").encode(e)]
    assert [m["payload"]["op"] for m in split] == ["UPDATE_BEFOR", "UPDATE_AFTER"]
    assert split[0]["payload"]["sequenceId"] == split[1]["payload"]["sequenceId"]
    assert split[0]["payload"]["after"] is None and split[1]["payload"]["before"] is None
    c = codec()
    decode(c, message("UPDATE_BEFOR", before=ROW))
    (pair,) = decode(c, message("UPDATE_AFTER", after=ROW2))
    single = [orjson.loads(r.value) for r in codec(update_as="single").encode(pair)]
    assert len(single) == 1 and single[0]["payload"]["op"] == "UPDATE_AFTER" and single[0]["payload"]["before"]


def _typed_event(op=Op.UPDATE, tz="UTC") -> ChangeEvent:
    schema = TableSchema(
        (
            Column("id", "bigint", False, True),
            Column("amount", "decimal(10,3)"),
            Column("f", "float"),
            Column("at", "datetime(6)"),
            Column("ts", "timestamp(3)"),
            Column("d", "date"),
            Column("dur", "time(6)"),
            Column("flag", "bit(1)"),
            Column("bits", "bit(12)"),
            Column("raw", "blob"),
            Column("doc", "json"),
            Column("tags", "set('a','b')"),
            Column("y", "year"),
        ),
        ("id",),
    )
    row = {
        "id": 1,
        "amount": Decimal("12.5"),
        "f": 1.5,
        "at": dt.datetime(2020, 1, 1, 0, 0, 0, 123456),
        "ts": dt.datetime(2020, 1, 1, 8, 0, 0),
        "d": InvalidTemporal("0000-00-00"),
        "dur": dt.timedelta(hours=-838),
        "flag": True,
        "bits": 4095,
        "raw": b"\xff",
        "doc": '{"a":1}',
        "tags": "a,b",
        "y": 2024,
    }
    return ChangeEvent(
        op=op,
        source=SourcePosition(database="db", table="t"),
        before=dict(row, id=0),
        after=row,
        schema=schema,
        pk=("id",),
        ts_ms=1_700_000_000_000,
        timezone=tz,
    )


def test_rich_types_are_written_as_the_six_types_with_documented_losses():
    msgs = [orjson.loads(r.value) for r in codec().encode(_typed_event(tz="Asia/Shanghai"))]
    assert [m["payload"]["op"] for m in msgs] == ["UPDATE_BEFOR", "UPDATE_AFTER"]
    first, second = msgs
    assert first["payload"]["sequenceId"] == second["payload"]["sequenceId"]
    assert {c["name"]: c["type"] for c in second["schema"]["dataColumn"]} == {
        "id": "LONG",
        "amount": "DOUBLE",
        "f": "DOUBLE",
        "at": "DATE",
        "ts": "DATE",
        "d": "DATE",
        "dur": "STRING",
        "flag": "BOOLEAN",
        "bits": "LONG",
        "raw": "BYTES",
        "doc": "STRING",
        "tags": "STRING",
        "y": "LONG",
    }
    assert second["payload"]["after"]["dataColumn"] == {
        "id": 1,
        "amount": "12.500",  # DECIMAL: exact text, as DataWorks writes decimals
        "f": 1.5,
        "at": 1577836800123,  # DATETIME: wall-clock in the encoder's zone (UTC), sub-ms floored
        "ts": 1577836800000,  # TIMESTAMP: 08:00 in the event's zone (Shanghai) is 00:00 UTC
        "d": None,  # zero date: no instant
        "dur": "-838:00:00.000000",
        "flag": True,
        "bits": 4095,
        "raw": "/w==",
        "doc": '{"a":1}',
        "tags": "a,b",
        "y": 2024,
    }
    assert second["schema"]["source"] == {"dbName": "db", "tableName": "t"}
    assert second["payload"]["timestamp"] == {"eventTime": 1_700_000_000_000, "checkpointTime": 1_700_000_000_000}
    validate = schemas.validator("dataworks-json").validate
    for m in msgs:
        validate(m)


def test_split_records_are_keyed_by_their_own_image():
    records = codec().encode(_typed_event())
    assert [orjson.loads(r.key) for r in records] == [{"id": 0}, {"id": 1}]


def test_lone_halves_are_written_as_lone_halves():
    e = _typed_event()
    lone_before = ChangeEvent(op=Op.UPDATE, source=e.source, before=e.before, schema=e.schema, pk=e.pk, partial=True)
    lone_after = ChangeEvent(op=Op.UPDATE, source=e.source, after=e.after, schema=e.schema, pk=e.pk, partial=True)
    (b,) = [orjson.loads(r.value) for r in codec().encode(lone_before)]
    (a,) = [orjson.loads(r.value) for r in codec(update_as="single").encode(lone_after)]
    assert b["payload"]["op"] == "UPDATE_BEFOR" and b["payload"]["after"] is None
    assert a["payload"]["op"] == "UPDATE_AFTER" and a["payload"]["before"] is None


def test_ddl_truncate_and_reads_from_other_formats():
    c = codec()
    src = SourcePosition(database="db", table="t")
    for sql, code in [
        ("CREATE TABLE t (id int)", "CREATE"),
        ("drop table t", "ERASE"),
        ("CREATE INDEX i ON t (c)", "CINDEX"),
        ("GRANT ALL ON *.* TO u", "QUERY"),
    ]:
        (m,) = [orjson.loads(r.value) for r in c.encode(ChangeEvent(op=Op.DDL, source=src, ddl=sql))]
        assert m["payload"]["op"] == code and m["payload"]["ddl"] == {"text": sql}
    (m,) = [orjson.loads(r.value) for r in c.encode(ChangeEvent(op=Op.TRUNCATE, source=src, ddl="TRUNCATE TABLE t"))]
    assert m["payload"]["op"] == "TRUNCATE"
    (m,) = [orjson.loads(r.value) for r in c.encode(ChangeEvent(op=Op.READ, source=src, after={"id": 1}))]
    assert m["payload"]["op"] == "INSERT"
    assert c.encode(ChangeEvent(op=Op.WATERMARK)) == []


# -- bad input --------------------------------------------------------------


def _with(path: str, value):
    msg = message("INSERT", after=ROW)
    *parents, last = path.split(".")
    node = msg
    for p in parents:
        node = node[p]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return msg


@pytest.mark.parametrize(
    "msg, reason",
    [
        ({"type": "insert", "data": {}}, "missing field 'payload'"),
        (_with("payload", []), "field 'payload' must be an object"),
        (_with("payload.op", KeyError), "missing field 'op'"),
        (_with("payload.op", "UPSERT"), "unknown op 'UPSERT'"),
        (_with("payload.op", "insert"), "unknown op 'insert'"),
        (_with("payload.after", None), "INSERT without payload.after.dataColumn"),
        (_with("payload.after", {"dataColumn": [1]}), "field 'dataColumn' must be an object"),
        (_with("schema.dataColumn", {"id": "LONG"}), "field 'dataColumn' must be an array"),
        (_with("schema.dataColumn", [{"name": "id", "type": "INT"}]), "unknown column type 'INT'"),
        (_with("schema.dataColumn", [{"name": "id"}]), "'name' and 'type'"),
        (_with("schema.primaryKey", "id"), "field 'primaryKey' must be an array"),
        (_with("payload.after.dataColumn.id", "15"), "column 'id' is declared LONG"),
        (_with("payload.after.dataColumn.ok", 1), "column 'ok' is declared BOOLEAN"),
        (_with("payload.after.dataColumn.bin", "not base64!"), "column 'bin' is declared BYTES"),
        (_with("payload.after.dataColumn.price", "1.1.1"), "column 'price' is declared DOUBLE"),
        (_with("payload.timestamp", {"eventTime": "now"}), "field 'eventTime' must be an integer"),
    ],
)
def test_bad_input_is_a_clear_decode_error(msg, reason):
    with pytest.raises(DecodeError, match=reason):
        codec().decode(rec(msg))


def test_sniff():
    from cdc_smt.transforms.formats.dataworks_json import DataWorksJson

    assert DataWorksJson.sniff(message("INSERT", after=ROW))
    debezium = {"schema": {"type": "struct", "fields": []}, "payload": {"op": "c", "after": {}}}
    assert not DataWorksJson.sniff(debezium)


# -- properties -------------------------------------------------------------


def _floor_ms(v):
    return v.replace(microsecond=v.microsecond // 1000 * 1000)


def carried(kind_of, value, catalog: bool):
    """What DataWorks keeps of a typed value (the documented losses), independent of the codec."""
    if value is None:
        return None
    t = kind_of
    k = t.kind
    if isinstance(value, InvalidTemporal) and k in (Kind.DATE, Kind.DATETIME, Kind.TIMESTAMP):
        return None  # zero dates have no epoch value
    if k in (Kind.DATETIME, Kind.TIMESTAMP):
        return _floor_ms(value)  # DATE is epoch milliseconds
    if catalog:
        return value
    # without a catalog the six types decide the Python value
    if k is Kind.DATE:
        return dt.datetime(value.year, value.month, value.day)
    if k is Kind.TIME:
        return format_time(value, t.fsp)
    if k is Kind.BIT and t.length == 1:
        return bool(value)
    return value


def _expected(e: ChangeEvent, catalog: bool) -> tuple:
    cols = e.schema.by_name
    img = lambda row: None if row is None else {n: carried(cols[n].mysql, v, catalog) for n, v in row.items()}  # noqa: E731
    return e.op, e.database, e.table, img(e.before), img(e.after)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(change_streams())
def test_round_trip_keeps_what_dataworks_carries(events):
    e0 = events[0]
    catalog = Catalog({(e0.database, e0.table): e0.schema})
    enc = codec()
    validate = schemas.validator("dataworks-json").validate
    for use_catalog in (True, False):
        dec = codec(catalog if use_catalog else None)
        for e in events:
            records = enc.encode(e)
            if use_catalog:
                for r in records:
                    validate(orjson.loads(r.value))
            back = []
            for r in records:
                back.extend(dec.decode(r))
            (got,) = back
            got.typed()
            assert (got.op, got.database, got.table, got.before, got.after) == _expected(e, use_catalog)
            assert got.pk == ("id",)
            assert not got.partial
        assert dec.flush() == []


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(change_streams())
def test_reencoding_decoded_messages_is_exact(events):
    enc, c = codec(), codec()
    for e in events:
        records = enc.encode(e)
        back = [x for r in records for x in c.decode(r)]
        assert [r.value for r in c.encode(back[0])] == [r.value for r in records]
