"""debezium-json: Debezium's documented mappings, the options, control messages, round trips.

Expected values come from the Debezium MySQL connector documentation ("How
Debezium MySQL connectors map data types"): DATETIME ``2018-06-20 06:37:03`` is
``1529476623000``; TIMESTAMP ``2018-06-20 06:37:03`` on a server at UTC-7 is
``2018-06-20T13:37:03Z``; DATE is days since the epoch; BIT(n>1) is the bits in
little-endian bytes; zero dates are null in nullable columns and the epoch
otherwise; BIGINT UNSIGNED under ``precise`` is a Decimal of scale 0 (a MySQL
``11111111111111111111`` is ``AJoymK+1rHHH``, as a CSDN walkthrough of the
connector's output shows).
"""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdc_smt.schemas import validator
from cdc_smt.transforms.catalog import SchemaCatalog
from cdc_smt.transforms.changelog import replay
from cdc_smt.transforms.errors import ConfigError, DecodeError
from cdc_smt.transforms.formats import get_codec
from cdc_smt.transforms.model import ChangeEvent, Column, Op, Record, SourcePosition, TableSchema
from cdc_smt.transforms.smt.base import TOMBSTONE, UNWRAPPED
from cdc_smt.transforms.types import InvalidTemporal, Kind, format_decimal
from tests.strategies import change_streams, essence

NAME = "debezium-json"


def codec(catalog: Any = None, **opts: Any):
    return get_codec(NAME, opts, catalog=catalog)


def table(*cols: tuple[str, str], pk: tuple[str, ...] = ("id",), not_null: tuple[str, ...] = ()) -> TableSchema:
    columns = tuple(Column(n, t, nullable=n not in pk and n not in not_null, primary_key=n in pk) for n, t in cols)
    return TableSchema(columns=columns, primary_key=pk)


def row_event(op: Op, schema: TableSchema, before=None, after=None, tz: str = "UTC", **more: Any) -> ChangeEvent:
    return ChangeEvent(
        op=op,
        source=SourcePosition(
            db_type="mysql",
            database="shop",
            table="t",
            server_id=7,
            binlog_file="mysql-bin.000003",
            binlog_pos=154,
            row=0,
        ),
        before=before,
        after=after,
        schema=schema,
        pk=schema.primary_key,
        ts_ms=1_700_000_000_000,
        timezone=tz,
        **more,
    )


def encode(event: ChangeEvent, **opts: Any) -> list[Record]:
    return codec(**opts).encode(event)


def value_of(event: ChangeEvent, **opts: Any) -> dict[str, Any]:
    return orjson.loads(encode(event, **opts)[0].value)


def after_of(event: ChangeEvent, **opts: Any) -> dict[str, Any]:
    doc = value_of(event, **opts)
    return doc.get("payload", doc)["after"]


def field_schema(doc: dict[str, Any], column: str) -> dict[str, Any]:
    after = next(f for f in doc["schema"]["fields"] if f["field"] == "after")
    return next(f for f in after["fields"] if f["field"] == column)


def insert(schema: TableSchema, row: dict[str, Any], tz: str = "UTC") -> ChangeEvent:
    return row_event(Op.INSERT, schema, after=row, tz=tz)


def roundtrip(event: ChangeEvent, catalog: Any = None, **opts: Any) -> list[ChangeEvent]:
    dec = codec(catalog, **{k: v for k, v in opts.items() if k != "tombstones_on_delete"})
    out = []
    for r in encode(event, **opts):
        out.extend(dec.decode(r))
    return out


# ---------------------------------------------------------------------------
# Type mapping (Debezium MySQL connector documentation)
# ---------------------------------------------------------------------------


class TestDecimal:
    schema = table(("id", "int"), ("price", "decimal(4,2)"))

    def test_precise_is_base64_of_unscaled_big_endian_twos_complement(self):
        doc = value_of(insert(self.schema, {"id": 1, "price": Decimal("12.34")}), schemas_enable=True)
        assert doc["payload"]["after"]["price"] == "BNI="  # 1234 = 0x04D2
        f = field_schema(doc, "price")
        assert f["type"] == "bytes"
        assert f["name"] == "org.apache.kafka.connect.data.Decimal"
        assert f["parameters"] == {"scale": "2", "connect.decimal.precision": "4"}

    @pytest.mark.parametrize(
        "value, b64",
        [
            (Decimal("-12.34"), "+y4="),  # -1234 = 0xFB2E
            (Decimal("0.00"), "AA=="),
            (Decimal("1.28"), "AIA="),  # 128 needs a sign byte: 0x0080 (Java BigInteger.toByteArray)
            (Decimal("-1.28"), "gA=="),  # -128 fits one byte: 0x80
        ],
    )
    def test_precise_sign_and_minimal_length(self, value, b64):
        assert after_of(insert(self.schema, {"id": 1, "price": value}))["price"] == b64

    def test_numeric_format_writes_an_exact_json_number(self):
        out = encode(insert(self.schema, {"id": 1, "price": Decimal("12.3")}), decimal_format="numeric")
        assert b'"price":12.30' in out[0].value

    def test_string_mode(self):
        doc = value_of(
            insert(self.schema, {"id": 1, "price": Decimal("12.3")}),
            decimal_handling_mode="string",
            schemas_enable=True,
        )
        assert doc["payload"]["after"]["price"] == "12.30"
        assert field_schema(doc, "price")["type"] == "string"

    def test_double_mode(self):
        doc = value_of(
            insert(self.schema, {"id": 1, "price": Decimal("12.34")}),
            decimal_handling_mode="double",
            schemas_enable=True,
        )
        assert doc["payload"]["after"]["price"] == 12.34
        assert field_schema(doc, "price")["type"] == "double"

    def test_decodes_base64_and_numbers(self):
        dec = codec()
        for price in ('"BNI="', "12.34"):
            msg = self._schema_message(price)
            (e,) = dec.decode(Record(value=msg))
            assert e.typed().after["price"] == Decimal("12.34")

    @staticmethod
    def _schema_message(price: str) -> bytes:
        fields = (
            '[{"type":"int32","optional":false,"field":"id"},'
            '{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,'
            '"parameters":{"scale":"2","connect.decimal.precision":"4"},"field":"price"}]'
        )
        schema = (
            '{"type":"struct","fields":[{"type":"struct","fields":' + fields + ',"optional":true,"field":"before"},'
            '{"type":"struct","fields":' + fields + ',"optional":true,"field":"after"},'
            '{"type":"string","optional":false,"field":"op"}],"optional":false,"name":"x.Envelope"}'
        )
        return (
            '{"schema":' + schema + ',"payload":{"before":null,"after":{"id":1,"price":' + price + '},"op":"c"}}'
        ).encode()


class TestTemporal:
    def test_date_is_days_since_epoch(self):
        schema = table(("id", "int"), ("d", "date"))
        doc = value_of(insert(schema, {"id": 1, "d": dt.date(2020, 1, 2)}), schemas_enable=True)
        assert doc["payload"]["after"]["d"] == 18263
        assert field_schema(doc, "d") | {"optional": True} == {
            "type": "int32",
            "optional": True,
            "name": "io.debezium.time.Date",
            "version": 1,
            "field": "d",
        }

    def test_datetime_documented_example(self):
        schema = table(("id", "int"), ("ts", "datetime"), ("ts6", "datetime(6)"))
        wall = dt.datetime(2018, 6, 20, 6, 37, 3)
        doc = value_of(
            insert(schema, {"id": 1, "ts": wall, "ts6": wall.replace(microsecond=123456)}, tz="America/Los_Angeles"),
            schemas_enable=True,
        )
        after = doc["payload"]["after"]
        assert after["ts"] == 1529476623000  # wall clock as if UTC, whatever the zone
        assert after["ts6"] == 1529476623123456
        assert field_schema(doc, "ts")["name"] == "io.debezium.time.Timestamp"
        assert field_schema(doc, "ts6")["name"] == "io.debezium.time.MicroTimestamp"

    def test_datetime3_is_timestamp_millis(self):
        schema = table(("id", "int"), ("ts", "datetime(3)"))
        doc = value_of(insert(schema, {"id": 1, "ts": dt.datetime(2018, 6, 20, 6, 37, 3, 123000)}), schemas_enable=True)
        assert doc["payload"]["after"]["ts"] == 1529476623123
        assert field_schema(doc, "ts")["name"] == "io.debezium.time.Timestamp"

    def test_timestamp_documented_example_is_utc(self):
        schema = table(("id", "int"), ("ts", "timestamp"))
        event = insert(schema, {"id": 1, "ts": dt.datetime(2018, 6, 20, 6, 37, 3)}, tz="America/Los_Angeles")
        doc = value_of(event, schemas_enable=True)
        assert doc["payload"]["after"]["ts"] == "2018-06-20T13:37:03Z"
        assert field_schema(doc, "ts")["name"] == "io.debezium.time.ZonedTimestamp"

    def test_timestamp_fraction_keeps_significant_digits(self):
        schema = table(("id", "int"), ("ts", "timestamp(6)"))
        event = insert(schema, {"id": 1, "ts": dt.datetime(2023, 3, 23, 22, 0, 10, 120000)})
        assert after_of(event)["ts"] == "2023-03-23T22:00:10.12Z"

    def test_zoned_timestamp_decodes_into_source_timezone(self):
        msg = (
            b'{"before":null,"after":{"id":1,"ts":"2018-06-20T13:37:03Z","dt":1529476623000},'
            b'"source":{"db":"shop","table":"t"},"op":"c"}'
        )
        cat = SchemaCatalog()
        cat.put("shop", "t", table(("id", "int"), ("ts", "timestamp"), ("dt", "datetime")))
        (e,) = codec(cat, source_timezone="America/Los_Angeles").decode(Record(value=msg))
        assert e.timezone == "America/Los_Angeles"
        assert e.typed().after["ts"] == dt.datetime(2018, 6, 20, 6, 37, 3)
        assert e.after["dt"] == dt.datetime(2018, 6, 20, 6, 37, 3)  # DATETIME is never shifted

    def test_time_is_microseconds(self):
        schema = table(("id", "int"), ("t", "time"))
        doc = value_of(
            insert(schema, {"id": 1, "t": dt.timedelta(hours=10, minutes=13, seconds=23)}), schemas_enable=True
        )
        assert doc["payload"]["after"]["t"] == 36803000000
        assert field_schema(doc, "t")["name"] == "io.debezium.time.MicroTime"

    def test_negative_and_long_time(self):
        schema = table(("id", "int"), ("t", "time(6)"))
        for td in (dt.timedelta(hours=-838, minutes=-59, seconds=-59), dt.timedelta(hours=100, microseconds=5)):
            (e,) = roundtrip(insert(schema, {"id": 1, "t": td}), schemas_enable=True)
            assert e.typed().after["t"] == td

    def test_connect_mode(self):
        schema = table(("id", "int"), ("d", "date"), ("t", "time(6)"), ("ts", "datetime(6)"))
        row = {
            "id": 1,
            "d": dt.date(2020, 1, 2),
            "t": dt.timedelta(hours=10, microseconds=1500),
            "ts": dt.datetime(2018, 6, 20, 6, 37, 3, 123456),
        }
        doc = value_of(insert(schema, row), time_precision_mode="connect", schemas_enable=True)
        after = doc["payload"]["after"]
        assert after == {"id": 1, "d": 18263, "t": 36000001, "ts": 1529476623123}
        assert field_schema(doc, "d")["name"] == "org.apache.kafka.connect.data.Date"
        assert field_schema(doc, "t") | {"optional": True} == {
            "type": "int32",
            "optional": True,
            "name": "org.apache.kafka.connect.data.Time",
            "version": 1,
            "field": "t",
        }
        assert field_schema(doc, "ts")["name"] == "org.apache.kafka.connect.data.Timestamp"

    def test_zero_dates_null_when_nullable_epoch_otherwise(self):
        schema = table(
            ("id", "int"),
            ("d", "date"),
            ("dn", "date"),
            ("ts", "datetime"),
            ("tsn", "datetime"),
            not_null=("dn", "tsn"),
        )
        zero_d, zero_ts = InvalidTemporal("0000-00-00"), InvalidTemporal("0000-00-00 00:00:00")
        after = after_of(insert(schema, {"id": 1, "d": zero_d, "dn": zero_d, "ts": zero_ts, "tsn": zero_ts}))
        assert after == {"id": 1, "d": None, "dn": 0, "ts": None, "tsn": 0}

    def test_year(self):
        schema = table(("id", "int"), ("y", "year"))
        doc = value_of(insert(schema, {"id": 1, "y": 2023}), schemas_enable=True)
        assert doc["payload"]["after"]["y"] == 2023
        assert field_schema(doc, "y")["name"] == "io.debezium.time.Year"


class TestIntegersAndBits:
    def test_connect_types(self):
        schema = table(
            ("id", "int"),
            ("a", "tinyint"),
            ("b", "tinyint(1)"),
            ("c", "smallint unsigned"),
            ("d", "mediumint"),
            ("e", "int unsigned"),
            ("f", "bigint"),
            ("g", "float"),
            ("h", "double"),
        )
        doc = value_of(
            insert(schema, {"id": 1, "a": 1, "b": 1, "c": 2, "d": 3, "e": 4, "f": 5, "g": 3.140000104904175, "h": 0.1}),
            schemas_enable=True,
        )
        types = {c: field_schema(doc, c)["type"] for c in "abcdefgh"}
        assert types == {
            "a": "int16",
            "b": "int16",
            "c": "int32",
            "d": "int32",
            "e": "int64",
            "f": "int64",
            "g": "float",
            "h": "double",
        }
        assert doc["payload"]["after"]["g"] == 3.14  # float32 written with Float.toString digits

    def test_bigint_unsigned_precise(self):
        schema = table(("id", "int"), ("u", "bigint unsigned"))
        doc = value_of(
            insert(schema, {"id": 1, "u": 11111111111111111111}),
            bigint_unsigned_handling_mode="precise",
            schemas_enable=True,
        )
        assert doc["payload"]["after"]["u"] == "AJoymK+1rHHH"
        f = field_schema(doc, "u")
        assert (f["type"], f["name"], f["parameters"]) == (
            "bytes",
            "org.apache.kafka.connect.data.Decimal",
            {"scale": "0"},
        )

    def test_bigint_unsigned_long_wraps_and_a_catalog_unwraps(self):
        schema = table(("id", "int"), ("u", "bigint unsigned"))
        event = insert(schema, {"id": 1, "u": 2**64 - 1})
        assert after_of(event)["u"] == -1  # Debezium's documented overflow of the long mode
        cat = SchemaCatalog()
        cat.put("shop", "t", schema)
        (e,) = roundtrip(event, cat)
        assert e.typed().after["u"] == 2**64 - 1

    def test_bits(self):
        schema = table(("id", "int"), ("b1", "bit(1)"), ("b64", "bit(64)"), ("b10", "bit(10)"))
        doc = value_of(
            insert(schema, {"id": 1, "b1": True, "b64": 0b11111000111, "b10": 0b1000000001}), schemas_enable=True
        )
        after = doc["payload"]["after"]
        assert after["b1"] is True
        assert after["b64"] == "xwcAAAAAAAA="  # little-endian, as in the Paimon corpus sample
        assert base64.b64decode(after["b10"]) == bytes([0b00000001, 0b00000010])
        assert field_schema(doc, "b1")["type"] == "boolean"
        assert field_schema(doc, "b10")["parameters"] == {"length": "10"}


class TestStringsAndBinary:
    def test_semantic_string_types(self):
        schema = table(
            ("id", "int"),
            ("e", "enum('small','medium','large')"),
            ("s", "set('red','green')"),
            ("j", "json"),
            ("v", "varchar(10)"),
        )
        doc = value_of(
            insert(schema, {"id": 1, "e": "small", "s": "red,green", "j": '{"a":1}', "v": "x"}), schemas_enable=True
        )
        assert doc["payload"]["after"] == {"id": 1, "e": "small", "s": "red,green", "j": '{"a":1}', "v": "x"}
        assert field_schema(doc, "e")["parameters"] == {"allowed": "small,medium,large"}
        assert field_schema(doc, "s")["name"] == "io.debezium.data.EnumSet"
        assert field_schema(doc, "j")["name"] == "io.debezium.data.Json"
        assert "name" not in field_schema(doc, "v")

    @pytest.mark.parametrize(
        "mode, written, ctype",
        [
            ("bytes", "AQL/", "bytes"),
            ("base64", "AQL/", "string"),
            ("base64-url-safe", "AQL_", "string"),
            ("hex", "0102ff", "string"),
        ],
    )
    def test_binary_handling_mode(self, mode, written, ctype):
        schema = table(("id", "int"), ("b", "varbinary(8)"))
        doc = value_of(insert(schema, {"id": 1, "b": b"\x01\x02\xff"}), binary_handling_mode=mode, schemas_enable=True)
        assert doc["payload"]["after"]["b"] == written
        assert field_schema(doc, "b")["type"] == ctype

    @pytest.mark.parametrize("mode", ["bytes", "base64", "base64-url-safe", "hex"])
    def test_binary_round_trips_with_a_catalog(self, mode):
        schema = table(("id", "int"), ("b", "varbinary(8)"))
        cat = SchemaCatalog()
        cat.put("shop", "t", schema)
        (e,) = roundtrip(insert(schema, {"id": 1, "b": b"\x01\x02\xff"}), cat, binary_handling_mode=mode)
        assert e.typed().after["b"] == b"\x01\x02\xff"

    def test_geometry(self):
        wkb = bytes.fromhex("0101000000000000000000f03f0000000000000040")  # POINT(1 2)
        schema = table(("id", "int"), ("p", "point"), ("g", "geometry"))
        typed = (0).to_bytes(4, "little") + wkb
        after = after_of(insert(schema, {"id": 1, "p": typed, "g": (4326).to_bytes(4, "little") + wkb}))
        assert after["p"] == {"x": 1.0, "y": 2.0, "wkb": base64.b64encode(wkb).decode(), "srid": None}
        assert after["g"] == {"wkb": base64.b64encode(wkb).decode(), "srid": 4326}


# ---------------------------------------------------------------------------
# Envelope, key, tombstones
# ---------------------------------------------------------------------------


SCHEMA = table(("id", "int"), ("name", "varchar(20)"))


class TestEnvelope:
    def test_mysql_source_block_and_ops(self):
        ev = row_event(Op.UPDATE, SCHEMA, before={"id": 1, "name": "a"}, after={"id": 1, "name": "b"})
        doc = value_of(ev, topic_prefix="dbserver1")
        assert doc["op"] == "u"
        assert doc["transaction"] is None
        src = doc["source"]
        assert set(src) == {
            "version",
            "connector",
            "name",
            "ts_ms",
            "snapshot",
            "db",
            "sequence",
            "table",
            "server_id",
            "gtid",
            "file",
            "pos",
            "row",
            "thread",
            "query",
        }
        assert (src["connector"], src["name"], src["db"], src["table"], src["server_id"], src["file"], src["pos"]) == (
            "mysql",
            "dbserver1",
            "shop",
            "t",
            7,
            "mysql-bin.000003",
            154,
        )
        assert src["snapshot"] == "false"

    @pytest.mark.parametrize("op, code", [(Op.INSERT, "c"), (Op.READ, "r"), (Op.DELETE, "d"), (Op.TRUNCATE, "t")])
    def test_op_codes(self, op, code):
        row = {"id": 1, "name": "a"}
        ev = row_event(
            op, SCHEMA, before=row if op is Op.DELETE else None, after=row if op in (Op.INSERT, Op.READ) else None
        )
        doc = value_of(ev, tombstones_on_delete=False)
        assert doc["op"] == code
        if op is Op.READ:
            assert doc["source"]["snapshot"] == "true"

    def test_key_is_primary_key_struct(self):
        ev = insert(SCHEMA, {"id": 42, "name": "a"})
        assert orjson.loads(encode(ev)[0].key) == {"id": 42}
        key = orjson.loads(encode(ev, schemas_enable=True)[0].key)
        assert key["payload"] == {"id": 42}
        assert key["schema"] == {
            "type": "struct",
            "fields": [{"type": "int32", "optional": False, "field": "id"}],
            "optional": False,
            "name": "cdc_smt.shop.t.Key",
        }

    def test_schema_part(self):
        doc = value_of(insert(SCHEMA, {"id": 1, "name": "a"}), schemas_enable=True, topic_prefix="dbserver1")
        schema = doc["schema"]
        assert schema["name"] == "dbserver1.shop.t.Envelope"
        names = [f["field"] for f in schema["fields"]]
        assert names == ["before", "after", "source", "op", "ts_ms", "transaction"]
        after = schema["fields"][1]
        assert after["name"] == "dbserver1.shop.t.Value"
        assert after["fields"] == [
            {"type": "int32", "optional": False, "field": "id"},
            {"type": "string", "optional": True, "field": "name"},
        ]
        assert schema["fields"][2]["name"] == "io.debezium.connector.mysql.Source"

    def test_tombstone_after_delete(self):
        ev = row_event(Op.DELETE, SCHEMA, before={"id": 1, "name": "a"})
        records = encode(ev)
        assert len(records) == 2
        assert records[1].value is None and records[1].key == records[0].key == b'{"id":1}'
        assert len(encode(ev, tombstones_on_delete=False)) == 1

    def test_tombstone_decodes_to_nothing_and_is_counted(self):
        dec = codec()
        assert dec.decode(Record(value=None, key=b'{"id":1}')) == []
        assert dec.decode(Record(value=b'{"schema":null,"payload":null}')) == []
        assert dec.tombstones == 2

    def test_tombstone_marker_from_transforms(self):
        ev = row_event(Op.DELETE, SCHEMA, before={"id": 5}, extra={TOMBSTONE: True})
        (r,) = encode(ev)
        assert r.value is None and orjson.loads(r.key) == {"id": 5}

    def test_unwrapped_row_is_written_flat(self):
        ev = insert(SCHEMA, {"id": 1, "name": "a", "__deleted": "false"})
        ev.extra[UNWRAPPED] = True
        doc = value_of(ev, schemas_enable=True)
        assert doc["payload"] == {"id": 1, "name": "a", "__deleted": "false"}
        assert [f["field"] for f in doc["schema"]["fields"]] == ["id", "name", "__deleted"]
        assert doc["schema"]["name"] == "cdc_smt.shop.t.Value"

    def test_enum_without_known_labels_is_a_plain_string(self):
        # TiCDC's parameterless `enum` without a catalog: the value is the index text, and
        # `allowed: ""` would read back as enum(''), whose only label is ''.
        ev = insert(table(("id", "int"), ("e", "enum"), ("s", "set")), {"id": 1, "e": "2", "s": "5"})
        doc = value_of(ev, schemas_enable=True)
        assert "name" not in field_schema(doc, "e") and "name" not in field_schema(doc, "s")
        (back,) = roundtrip(ev, schemas_enable=True)
        assert back.typed().after == {"id": 1, "e": "2", "s": "5"}
        assert back.schema.column("e").type == "varchar"

    def test_key_gives_primary_key_on_decode(self):
        dec = codec()
        (e,) = dec.decode(Record(value=b'{"before":null,"after":{"a":1,"b":2},"op":"c"}', key=b'{"a":1}'))
        assert e.pk == ("a",)
        assert e.schema.primary_key == ("a",)


class TestDecodeShapes:
    @pytest.mark.parametrize("code, op", [("c", Op.INSERT), ("u", Op.UPDATE), ("r", Op.READ), ("i", Op.INSERT)])
    def test_ops(self, code, op):
        msg = orjson.dumps({"before": {"id": 1} if code == "u" else None, "after": {"id": 1}, "op": code})
        (e,) = codec().decode(Record(value=msg))
        assert e.op is op

    def test_delete_truncate_message(self):
        dec = codec()
        (d,) = dec.decode(Record(value=b'{"before":{"id":1},"after":null,"op":"d"}'))
        (t,) = dec.decode(Record(value=b'{"before":null,"after":null,"source":{"db":"shop","table":"t"},"op":"t"}'))
        (m,) = dec.decode(
            Record(
                value=b'{"source":{"db":"","table":"","commit_ts":3,"connector":"TiCDC"},"op":"m","ts_ms":1,"transaction":null}'
            )
        )
        assert (d.op, t.op, m.op) == (Op.DELETE, Op.TRUNCATE, Op.WATERMARK)
        assert m.source.commit_ts == 3 and m.source.db_type == "tidb"
        # an `m` message read from Debezium is reproduced
        assert orjson.loads(codec().encode(m)[0].value)["op"] == "m"

    def test_watermarks_of_other_formats_are_not_written(self):
        # Flink's debezium-json fails on ops it does not know, so a data topic gets no `m` for
        # a TiCDC watermark; the capability matrix says debezium-json carries no watermarks.
        from cdc_smt.transforms.formats.ticdc_canal_json import TicdcCanalJson

        msg = {"id": 0, "database": "d", "table": "t", "pkNames": None, "isDdl": False, "type": "TIDB_WATERMARK",
               "es": 1, "ts": 2, "sql": "", "sqlType": None, "mysqlType": None, "old": None, "data": None,
               "_tidb": {"watermarkTs": 429918007904436226}}  # fmt: skip
        (w,) = TicdcCanalJson().decode(Record(value=orjson.dumps(msg)))
        assert w.op is Op.WATERMARK
        assert codec().encode(w) == []
        assert codec().capabilities.watermarks is False

    def test_cloudcanal_insert_with_empty_before_reproduces(self):
        # The Debezium envelope example of ../shared/formats/001_*.txt (op "i", before {}).
        msg = {
            "op": "i",
            "ts_ms": 1669796261933,
            "after": {"col1": "11", "col2": "11", "col_pk": "11"},
            "before": {},
            "source": {
                "ts_ms": 1669796261933,
                "db": "db_test",
                "table": "table_test",
                "connector": "MySQL",
                "gtid": None,
                "file": "mysql-bin.000003",
                "pos": 154,
                "server_id": 223344,
            },
        }
        (e,) = codec().decode(Record(value=orjson.dumps(msg)))
        assert (e.op, e.before, e.after, e.source.db_type, e.source.server_id) == (
            Op.INSERT,
            None,
            msg["after"],
            "mysql",
            223344,
        )
        assert orjson.loads(codec().encode(e)[0].value) == msg

    @pytest.mark.parametrize(
        "value, reason",
        [
            (b"{not json", "malformed JSON"),
            (b'{"before":null,"after":{"id":1},"op":"x"}', "unknown op 'x'"),
            (b'{"before":null,"after":null,"op":"c"}', "insert event without an 'after' image"),
            (b'{"id":1,"name":"flat"}', "no 'op'"),
            (
                b'{"data":[{"id":"1"}],"database":"d","table":"t","type":"INSERT","isDdl":false,"es":1,"ts":1}',
                "no 'op'",
            ),
            (b'{"status":"MAYBE","id":"1"}', "unknown transaction status"),
            (b"[1,2]", "expected a JSON object"),
        ],
    )
    def test_errors_name_the_problem(self, value, reason):
        with pytest.raises(DecodeError, match=reason):
            codec().decode(Record(value=value))

    def test_update_without_before_image(self):
        # Postgres without REPLICA IDENTITY FULL: Flink rejects it; we keep it as an update with no before image.
        (e,) = codec().decode(Record(value=b'{"before":null,"after":{"id":1,"x":2},"op":"u"}'))
        assert e.op is Op.UPDATE and e.before is None and e.after == {"id": 1, "x": 2}

    def test_delete_without_before_image_uses_the_key(self):
        (e,) = codec().decode(Record(value=b'{"before":null,"after":null,"op":"d"}', key=b'{"id":9}'))
        assert e.op is Op.DELETE and e.before == {"id": 9} and e.partial

    def test_bad_options_are_config_errors(self):
        with pytest.raises(ConfigError, match="decimal_handling_mode"):
            codec(decimal_handling_mode="exact")

    def test_schemaless_values_keep_json_types(self):
        # Without a schema part or a catalog, a DATE stays its epoch-day int (documented loss).
        msg = (
            b'{"before":null,"after":{"id":1,"d":18263,"price":"BNI=","w":1.5,"ok":true},'
            b'"source":{"db":"shop","table":"t"},"op":"c"}'
        )
        (e,) = codec().decode(Record(value=msg))
        assert e.typed().after == {"id": 1, "d": 18263, "price": "BNI=", "w": 1.5, "ok": True}

    def test_catalog_types_schemaless_values(self):
        cat = SchemaCatalog()
        cat.put("shop", "t", table(("id", "int"), ("d", "date"), ("price", "decimal(4,2)")))
        msg = b'{"before":null,"after":{"id":1,"d":18263,"price":"BNI="},"source":{"db":"shop","table":"t"},"op":"c"}'
        (e,) = codec(cat).decode(Record(value=msg))
        assert e.typed().after == {"id": 1, "d": dt.date(2020, 1, 2), "price": Decimal("12.34")}

    def test_catalog_gives_exact_types_for_the_same_representation(self):
        schema = table(("id", "int"), ("flag", "tinyint(1)"), ("v", "varchar(20)"))
        msg = encode(insert(schema, {"id": 1, "flag": 1, "v": "x"}), schemas_enable=True)[0]
        (plain,) = codec().decode(Record(value=msg.value))
        assert [c.type for c in plain.schema.columns] == ["int", "smallint", "varchar"]  # widest fit
        cat = SchemaCatalog()
        cat.put("shop", "t", schema)
        (exact,) = codec(cat).decode(Record(value=msg.value))
        assert [c.type for c in exact.schema.columns] == ["int", "tinyint(1)", "varchar(20)"]
        cat.put("shop", "t", table(("id", "int"), ("flag", "date"), ("v", "varchar(20)")))  # stale catalog: ignored
        (stale,) = codec(cat).decode(Record(value=msg.value))
        assert [c.type for c in stale.schema.columns] == ["int", "smallint", "varchar"]

    def test_transaction_block_gives_txid_and_reproduces(self):
        msg = {
            "before": None,
            "after": {"id": 1},
            "source": {"connector": "mysql", "db": "d", "table": "t"},
            "op": "c",
            "ts_ms": 1,
            "transaction": {"id": "571:53195832", "total_order": 1, "data_collection_order": 1},
        }
        (e,) = codec().decode(Record(value=orjson.dumps(msg)))
        assert e.source.txid == "571:53195832"
        assert orjson.loads(codec().encode(e)[0].value) == msg

    def test_source_column_type_parameters_give_exact_types(self):
        fields = [
            {"type": "int32", "optional": False, "field": "id"},
            {
                "type": "int16",
                "optional": True,
                "parameters": {"__debezium.source.column.type": "TINYINT", "__debezium.source.column.length": "1"},
                "field": "flag",
            },
            {
                "type": "string",
                "optional": True,
                "parameters": {"__debezium.source.column.type": "VARCHAR", "__debezium.source.column.length": "255"},
                "field": "v",
            },
        ]
        schema = {
            "type": "struct",
            "fields": [{"type": "struct", "fields": fields, "optional": True, "field": "after"}],
            "optional": False,
        }
        msg = orjson.dumps(
            {"schema": schema, "payload": {"before": None, "after": {"id": 1, "flag": 1, "v": "x"}, "op": "c"}}
        )
        (e,) = codec().decode(Record(value=msg))
        assert [c.type for c in e.schema.columns] == ["int", "tinyint(1)", "varchar(255)"]


# ---------------------------------------------------------------------------
# Pass-through: Debezium -> Debezium does not convert values
# ---------------------------------------------------------------------------


def test_debezium_to_debezium_passes_raw_values_through():
    schema = table(("id", "int"), ("d", "date"), ("ts", "timestamp(6)"), ("p", "decimal(10,2)"))
    row = {"id": 1, "d": dt.date(2020, 1, 2), "ts": dt.datetime(2021, 1, 1, 1, 1, 1, 5), "p": Decimal("1.50")}
    first = encode(insert(schema, row), schemas_enable=True)[0]
    (e,) = codec().decode(Record(value=first.value, key=first.key))
    assert e.values is not None  # raw form
    again = codec(schemas_enable=True).encode(e)[0]
    assert e.values is not None  # never typed on the way through
    assert orjson.loads(again.value) == orjson.loads(first.value)


def test_raw_values_survive_a_column_rename():
    # A rename-only transform may leave values raw; typing then goes by the column's type.
    schema = table(("id", "int"), ("d", "date"))
    first = encode(insert(schema, {"id": 1, "d": dt.date(2020, 1, 2)}), schemas_enable=True)[0]
    (e,) = codec().decode(Record(value=first.value, key=first.key))
    renamed = TableSchema(columns=(e.schema.columns[0], Column("day", e.schema.columns[1].type)), primary_key=("id",))
    e.schema = renamed
    e.after = {"id": e.after["id"], "day": e.after["d"]}
    assert after_of(e) == {"id": 1, "day": 18263}
    assert e.after["day"] == dt.date(2020, 1, 2)


# ---------------------------------------------------------------------------
# Control messages: DDL, transactions, heartbeats
# ---------------------------------------------------------------------------

DDL_MESSAGE = {
    "source": {
        "version": "2.4.0.Final",
        "connector": "mysql",
        "name": "dbserver1",
        "ts_ms": 1701326309000,
        "snapshot": "false",
        "db": "inventory",
        "sequence": None,
        "table": "customers",
        "server_id": 223344,
        "gtid": None,
        "file": "mysql-bin.000003",
        "pos": 4577,
        "row": 0,
        "thread": None,
        "query": None,
    },
    "ts_ms": 1701326309123,
    "databaseName": "inventory",
    "schemaName": None,
    "ddl": "ALTER TABLE customers ADD COLUMN middle_name VARCHAR(255) AFTER first_name",
    "tableChanges": [
        {
            "type": "ALTER",
            "id": '"inventory"."customers"',
            "table": {
                "defaultCharsetName": "utf8mb4",
                "primaryKeyColumnNames": ["id"],
                "columns": [
                    {
                        "name": "id",
                        "jdbcType": 4,
                        "nativeType": None,
                        "typeName": "INT",
                        "typeExpression": "INT",
                        "charsetName": None,
                        "length": 11,
                        "scale": None,
                        "position": 1,
                        "optional": False,
                        "autoIncremented": True,
                        "generated": True,
                        "comment": None,
                        "defaultValueExpression": None,
                        "enumValues": None,
                    },
                    {
                        "name": "first_name",
                        "jdbcType": 12,
                        "nativeType": None,
                        "typeName": "VARCHAR",
                        "typeExpression": "VARCHAR",
                        "charsetName": "utf8mb4",
                        "length": 255,
                        "scale": None,
                        "position": 2,
                        "optional": False,
                        "autoIncremented": False,
                        "generated": False,
                        "comment": None,
                        "defaultValueExpression": None,
                        "enumValues": None,
                    },
                    {
                        "name": "price",
                        "jdbcType": 3,
                        "nativeType": None,
                        "typeName": "DECIMAL UNSIGNED",
                        "typeExpression": "DECIMAL UNSIGNED",
                        "charsetName": None,
                        "length": 10,
                        "scale": 2,
                        "position": 3,
                        "optional": True,
                        "autoIncremented": False,
                        "generated": False,
                        "comment": "in EUR",
                        "defaultValueExpression": "0.00",
                        "enumValues": None,
                    },
                    {
                        "name": "size",
                        "jdbcType": 1,
                        "nativeType": None,
                        "typeName": "ENUM",
                        "typeExpression": "ENUM",
                        "charsetName": "utf8mb4",
                        "length": 1,
                        "scale": None,
                        "position": 4,
                        "optional": True,
                        "autoIncremented": False,
                        "generated": False,
                        "comment": None,
                        "defaultValueExpression": None,
                        "enumValues": ["'S'", "'M'"],
                    },
                ],
                "comment": None,
            },
            "comment": None,
        }
    ],
}


class TestDDL:
    def test_decode_schema_change(self):
        (e,) = codec().decode(Record(value=orjson.dumps(DDL_MESSAGE), key=b'{"databaseName":"inventory"}'))
        assert e.op is Op.DDL
        assert e.ddl == DDL_MESSAGE["ddl"] and e.ddl_kind == "ALTER"
        assert (e.source.database, e.source.table) == ("inventory", "customers")
        assert [(c.name, c.type, c.nullable) for c in e.schema.columns] == [
            ("id", "int(11)", False),
            ("first_name", "varchar(255)", False),
            ("price", "decimal(10,2) unsigned", True),
            ("size", "enum('S','M')", True),
        ]
        assert e.schema.primary_key == ("id",) and e.pk == ("id",)
        assert e.schema.column("price").default == "0.00" and e.schema.column("price").comment == "in EUR"

    def test_reencode_reproduces(self):
        (e,) = codec().decode(Record(value=orjson.dumps(DDL_MESSAGE)))
        (r,) = codec().encode(e)
        assert orjson.loads(r.value) == DDL_MESSAGE
        assert orjson.loads(r.key) == {"databaseName": "inventory"}

    def test_encode_from_another_format_round_trips(self):
        schema = table(
            ("id", "bigint unsigned"),
            ("name", "varchar(64)"),
            ("amount", "decimal(12,3)"),
            ("at", "datetime(6)"),
            ("kind", "enum('a','b c')"),
        )
        ev = ChangeEvent(
            op=Op.DDL,
            source=SourcePosition(db_type="mysql", database="shop", table="orders"),
            schema=schema,
            pk=("id",),
            ddl="CREATE TABLE orders (...)",
            ddl_kind="CREATE",
            ts_ms=5,
        )
        (r,) = codec(schemas_enable=True).encode(ev)
        doc = orjson.loads(r.value)
        assert doc["schema"]["name"] == "io.debezium.connector.mysql.SchemaChangeValue"
        change = doc["payload"]["tableChanges"][0]
        assert (change["type"], change["id"], change["table"]["primaryKeyColumnNames"]) == (
            "CREATE",
            '"shop"."orders"',
            ["id"],
        )
        validator(NAME).validate(doc)
        (back,) = codec().decode(Record(value=r.value))
        assert back.schema == schema and back.ddl == ev.ddl and back.source.table == "orders"

    def test_ddl_records_go_to_the_schema_change_topic(self):
        # Debezium writes schema changes to `<topic.prefix>`, never to a table's data topic:
        # Flink's debezium-json fails on a DDL payload ("Corrupt Debezium JSON message").
        ev = ChangeEvent(
            op=Op.DDL, source=SourcePosition(database="shop", table="t"), schema=SCHEMA, ddl="create table t (id int)"
        )
        assert codec(topic_prefix="dbserver1").encode(ev)[0].topic == "dbserver1"
        assert codec().encode(ev)[0].topic == "cdc_smt"  # the topic_prefix default
        ev.topic = "shop.t"  # routed like the table's rows
        assert codec(schema_change_topic="schema-changes.shop").encode(ev)[0].topic == "schema-changes.shop"
        (e,) = codec().decode(Record(value=orjson.dumps(DDL_MESSAGE)))
        assert codec(topic_prefix="dbserver1").encode(e)[0].topic == "dbserver1"
        rows = codec(topic_prefix="dbserver1").encode(insert(SCHEMA, {"id": 1, "name": "a"}))
        assert rows[0].topic is None  # rows keep the host's default (the data topic)

    def test_heartbeats_and_transaction_markers_go_to_their_own_topics(self):
        # Debezium's defaults: `__debezium-heartbeat.<prefix>` and `<prefix>.transaction`.
        src = SourcePosition(database="shop", gtid="3E11FA47-71CA-11E1-9E33-C80AA9429562:23")
        hb = ChangeEvent(op=Op.HEARTBEAT, ts_ms=1_700_000_000_000)
        begin = ChangeEvent(op=Op.BEGIN, source=src, ts_ms=1_700_000_000_000)
        commit = ChangeEvent(op=Op.COMMIT, source=src, ts_ms=1_700_000_000_000)
        c = codec(topic_prefix="dbserver1")
        assert [r.topic for r in c.encode(hb)] == ["__debezium-heartbeat.dbserver1"]
        assert [r.topic for e in (begin, commit) for r in c.encode(e)] == ["dbserver1.transaction"] * 2
        c = codec(transaction_topic="tx", heartbeat_topic="hb")
        assert [r.topic for e in (hb, begin) for r in c.encode(e)] == ["hb", "tx"]

    def test_change_type_from_statement_when_kind_unknown(self):
        ev = ChangeEvent(
            op=Op.DDL,
            source=SourcePosition(database="shop", table="t"),
            schema=SCHEMA,
            ddl="create table t (id int primary key, name varchar(20))",
        )
        (r,) = codec().encode(ev)
        assert orjson.loads(r.value)["tableChanges"][0]["type"] == "CREATE"

    def test_cloudcanal_ddl_with_table_changes_object(self):
        # The DDL example of ../shared/formats/001_*.txt: tableChanges is one object with typeExpression.
        msg = {
            "databaseName": "db_test",
            "ddl": "alter table table_test add col2 varchar(22) null",
            "ts_ms": 1669797213247,
            "source": {
                "ts_ms": 1669796261933,
                "db": "db_test",
                "table": "table_test",
                "connector": "MySQL",
                "gtid": None,
                "file": "mysql-bin.000003",
                "pos": 154,
                "server_id": 223344,
            },
            "tableChanges": {
                "type": "ALTER",
                "table": {
                    "columns": [
                        {
                            "jdbcType": 12,
                            "name": "col1",
                            "position": 0,
                            "typeExpression": "varchar(22)",
                            "typeName": "varchar",
                        },
                        {
                            "jdbcType": 12,
                            "name": "col_pk",
                            "position": 2,
                            "typeExpression": "varchar(22)",
                            "typeName": "varchar",
                        },
                    ],
                    "primaryKeyColumnNames": ["col_pk"],
                },
            },
        }
        (e,) = codec().decode(Record(value=orjson.dumps({"schema": None, "payload": msg})))
        assert e.op is Op.DDL and e.schema.primary_key == ("col_pk",)
        assert [c.type for c in e.schema.columns] == ["varchar(22)", "varchar(22)"]
        assert orjson.loads(codec().encode(e)[0].value) == msg


class TestTransactionsAndHeartbeats:
    BEGIN = {
        "status": "BEGIN",
        "id": "571:53195829",
        "ts_ms": 1486500577125,
        "event_count": None,
        "data_collections": None,
    }
    END = {
        "status": "END",
        "id": "571:53195832",
        "ts_ms": 1486500577691,
        "event_count": 2,
        "data_collections": [
            {"data_collection": "s1.a", "event_count": 1},
            {"data_collection": "s2.a", "event_count": 1},
        ],
    }

    def test_transaction_markers(self):
        dec = codec()
        (b,) = dec.decode(Record(value=orjson.dumps(self.BEGIN)))
        (e,) = dec.decode(Record(value=orjson.dumps(self.END)))
        assert (b.op, b.source.txid, b.ts_ms) == (Op.BEGIN, "571:53195829", 1486500577125)
        assert (e.op, e.source.txid) == (Op.COMMIT, "571:53195832")
        assert orjson.loads(codec().encode(e)[0].value) == self.END
        (r,) = codec().encode(ChangeEvent(op=Op.BEGIN, source=SourcePosition(txid="tx-1"), ts_ms=3))
        assert orjson.loads(r.value) == {
            "status": "BEGIN",
            "id": "tx-1",
            "ts_ms": 3,
            "event_count": None,
            "data_collections": None,
        }
        assert orjson.loads(r.key) == {"id": "tx-1"}

    def test_mysql_transaction_id_is_the_gtid(self):
        # Debezium's MySQL connector names transactions by GTID (binlog file:position without GTIDs).
        gtid = "35be190b-d019-11e7-ab7a-a0423f32c225:469"
        (b,) = codec().encode(ChangeEvent(op=Op.BEGIN, source=SourcePosition(db_type="mysql", gtid=gtid)))
        (c,) = codec().encode(
            ChangeEvent(op=Op.COMMIT, source=SourcePosition(db_type="mysql", gtid=gtid, txid="11866"))
        )
        (f,) = codec().encode(
            ChangeEvent(
                op=Op.BEGIN, source=SourcePosition(db_type="mysql", binlog_file="mysql-bin.000003", binlog_pos=154)
            )
        )
        assert orjson.loads(b.value)["id"] == orjson.loads(c.value)["id"] == gtid
        assert orjson.loads(f.value)["id"] == "mysql-bin.000003:154"

    def test_heartbeat(self):
        (h,) = codec().decode(Record(value=b'{"ts_ms":1700000000000}'))
        assert (h.op, h.ts_ms) == (Op.HEARTBEAT, 1700000000000)
        (r,) = codec(topic_prefix="dbserver1").encode(h)
        assert (orjson.loads(r.value), orjson.loads(r.key)) == ({"ts_ms": 1700000000000}, {"serverName": "dbserver1"})

    def test_postgres_logical_message_round_trips(self):
        msg = {
            "op": "m",
            "ts_ms": 1,
            "source": {
                "connector": "postgresql",
                "db": "p",
                "schema": "s",
                "table": "",
                "txId": 5,
                "lsn": 8,
                "ts_ms": 1,
            },
            "message": {"prefix": "foo", "content": "YmFy"},
        }
        (e,) = codec().decode(Record(value=orjson.dumps(msg)))
        assert e.op is Op.HEARTBEAT and e.source.txid == "5"
        assert orjson.loads(codec().encode(e)[0].value) == msg


# ---------------------------------------------------------------------------
# JSON Schema
# ---------------------------------------------------------------------------


def test_json_schema_accepts_outputs_and_rejects_canal():
    v = validator(NAME)
    ev = row_event(Op.UPDATE, SCHEMA, before={"id": 1, "name": "a"}, after={"id": 1, "name": "b"})
    for opts in ({}, {"schemas_enable": True}):
        v.validate(value_of(ev, **opts))
    v.validate({"ts_ms": 1})
    v.validate(TestTransactionsAndHeartbeats.END)
    v.validate(DDL_MESSAGE)
    canal = {
        "data": [{"id": "1"}],
        "database": "d",
        "es": 1,
        "id": 1,
        "isDdl": False,
        "mysqlType": {"id": "int"},
        "old": None,
        "pkNames": ["id"],
        "sql": "",
        "sqlType": {"id": 4},
        "table": "t",
        "ts": 2,
        "type": "INSERT",
    }
    assert not v.is_valid(canal)
    assert not v.is_valid({"before": None, "after": {"id": 1}, "op": "x"})
    assert not v.is_valid({"before": None, "after": None, "op": "c"})


# ---------------------------------------------------------------------------
# Properties: decode(encode(e)) == e modulo the documented losses
# ---------------------------------------------------------------------------

_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)


def expected_value(col: Column, v: Any, opts: dict[str, Any], typed_by_catalog: bool) -> Any:
    """What a faithful decode gives back for ``v`` under ``opts`` (README: documented losses)."""
    if v is None:
        return None
    mt = col.mysql
    k = mt.kind
    if isinstance(v, InvalidTemporal):  # Debezium: null if nullable, else the epoch
        if col.nullable:
            return None
        return _EPOCH_DATE if k is Kind.DATE else _EPOCH
    if k is Kind.DECIMAL:
        mode = opts.get("decimal_handling_mode", "precise")
        if mode == "double":
            return Decimal(repr(float(v))) if typed_by_catalog else float(v)
        if mode == "string":
            text = format_decimal(v, mt.scale)
            return Decimal(text) if typed_by_catalog else text
    if k is Kind.INT and mt.base == "bigint" and mt.unsigned:
        if opts.get("bigint_unsigned_handling_mode", "long") == "long" and not typed_by_catalog and v >= 2**63:
            return v - 2**64
    if opts.get("time_precision_mode") == "connect":
        if k is Kind.TIME:
            return dt.timedelta(milliseconds=(v // dt.timedelta(microseconds=1)) // 1000)
        if k is Kind.DATETIME and mt.fsp > 3:
            return v.replace(microsecond=v.microsecond // 1000 * 1000)
    if k is Kind.BYTES and not typed_by_catalog:
        mode = opts.get("binary_handling_mode", "bytes")
        if mode == "base64":
            return base64.b64encode(v).decode()
        if mode == "hex":
            return v.hex()
    return v


def expected_events(events: list[ChangeEvent], opts: dict[str, Any], typed_by_catalog: bool) -> list[ChangeEvent]:
    out = []
    for e in events:
        by_name = e.schema.by_name

        def image(row, by_name=by_name):
            return (
                None
                if row is None
                else {n: expected_value(by_name[n], v, opts, typed_by_catalog) for n, v in row.items()}
            )

        out.append(
            ChangeEvent(
                op=e.op,
                source=e.source,
                before=image(e.before),
                after=image(e.after),
                schema=e.schema,
                pk=e.pk,
                timezone=e.timezone,
            )
        )
    return out


def through(events: list[ChangeEvent], opts: dict[str, Any], tz: str, catalog: Any = None) -> list[ChangeEvent]:
    enc = codec(**opts)
    dec = codec(catalog, source_timezone=tz, **{k: v for k, v in opts.items() if k != "schemas_enable"})
    check = validator(NAME)
    out = []
    for e in events:
        for r in enc.encode(e):
            if r.value is not None:
                check.validate(orjson.loads(r.value))
            out.extend(dec.decode(r))
    return out


OPTION_SETS = [
    {"schemas_enable": True},
    {
        "schemas_enable": True,
        "decimal_handling_mode": "string",
        "time_precision_mode": "connect",
        "binary_handling_mode": "hex",
    },
    {
        "schemas_enable": True,
        "decimal_handling_mode": "double",
        "bigint_unsigned_handling_mode": "precise",
        "decimal_format": "numeric",
    },
    {"schemas_enable": True, "binary_handling_mode": "base64", "tombstones_on_delete": False},
]


@pytest.mark.parametrize("opts", OPTION_SETS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_roundtrip_with_schema_part(opts, data):
    tz = data.draw(st.sampled_from(["UTC", "Asia/Kolkata"]))
    events = data.draw(change_streams(timezone=tz))
    decoded = through(events, opts, tz)
    expected = expected_events(events, opts, typed_by_catalog=False)
    assert [essence(e) for e in decoded] == [essence(e) for e in expected]
    assert replay(decoded) == replay(expected)


CATALOG_OPTION_SETS = [
    {},
    {
        "bigint_unsigned_handling_mode": "precise",
        "time_precision_mode": "connect",
        "binary_handling_mode": "base64-url-safe",
    },
    {"decimal_handling_mode": "string", "decimal_format": "numeric", "binary_handling_mode": "hex"},
]


@pytest.mark.parametrize(
    "opts", CATALOG_OPTION_SETS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "defaults"
)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_roundtrip_without_schema_part_typed_by_catalog(opts, data):
    events = data.draw(change_streams(timezone="Asia/Kolkata"))
    cat = SchemaCatalog()
    cat.put("shop", "t", events[0].schema)
    decoded = through(events, opts, "Asia/Kolkata", catalog=cat)
    expected = expected_events(events, opts, typed_by_catalog=True)
    assert [essence(e) for e in decoded] == [essence(e) for e in expected]
    assert replay(decoded) == replay(expected)


#: Where each target format puts a row's ``doc`` column, and whether as JSON text.
_DOC_IN = {
    "canal-json": (lambda m: m["data"][0]["doc"], True),
    "cloudcanal-json": (lambda m: m["data"][0]["doc"], True),
    "ticdc-canal-json": (lambda m: m["data"][0]["doc"], True),
    "ogg-json": (lambda m: m["after"]["doc"], True),
    "dataworks-json": (lambda m: m["payload"]["after"]["dataColumn"]["doc"], True),
    "maxwell-json": (lambda m: m["data"]["doc"], False),  # embedded JSON
}


@pytest.mark.parametrize("target", sorted(_DOC_IN))
@pytest.mark.parametrize("document", [{"a": 1, "b": [True, None, "x"]}, [1, 2.5, {"c": "é"}]])
def test_a_schemaless_json_document_is_written_as_json(document: Any, target: str) -> None:
    """An object or array in a schemaless event is typed JSON; every target writes the
    document as JSON (was Python's ``repr``, ``{'a': 1}``, in Canal and DataWorks text, and
    an encode error in Maxwell)."""
    message = {
        "before": None,
        "after": {"id": 1, "doc": document},
        "source": {"db": "d", "table": "t", "ts_ms": 1},
        "op": "c",
        "ts_ms": 2,
    }
    (event,) = get_codec("debezium-json").decode(Record(value=orjson.dumps(message)))
    (record,) = get_codec(target).encode(event)
    field, as_text = _DOC_IN[target]
    written = field(orjson.loads(record.value))
    assert (orjson.loads(written) if as_text else written) == document


@pytest.mark.parametrize("unwrapped", [False, True])
def test_the_schema_of_a_column_no_type_describes_follows_each_value_not_the_first_seen(unwrapped: bool) -> None:
    """A column a transform added (no table type) is typed from its value in every record:
    the encoder's schema caches must not hand a later record the first record's type."""
    schema = table(("id", "int"))
    enc = codec(schemas_enable=True)

    def written(extra: Any) -> dict[str, Any]:
        event = insert(schema, {"id": 1, "extra": extra})
        if unwrapped:
            event.extra = {**event.extra, UNWRAPPED: True}
        doc = orjson.loads(enc.encode(event)[0].value)
        fields = doc["schema"]["fields"]
        if not unwrapped:
            fields = next(f for f in fields if f["field"] == "after")["fields"]
        return next(f for f in fields if f["field"] == "extra")

    assert [written(v)["type"] for v in (True, "s", 7, 1.5, True)] == [
        "boolean",
        "string",
        "int64",
        "double",
        "boolean",
    ]
