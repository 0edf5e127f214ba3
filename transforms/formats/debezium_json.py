"""Debezium change events as Kafka Connect's JsonConverter writes them.

One message per change: ``{"before", "after", "source", "op", "ts_ms",
"transaction"}``, optionally wrapped as ``{"schema": <Connect schema>,
"payload": <that>}`` (JsonConverter ``schemas.enable``). The same codec reads
the schema-change topic (``databaseName``/``ddl``/``tableChanges``), the
transaction-metadata topic (``status`` BEGIN/END), heartbeats (``{"ts_ms"}``)
and Kafka tombstones (null values).

Topics. Debezium keeps schema changes out of the tables' data topics (Flink's
debezium-json rejects a DDL payload as "Corrupt Debezium JSON message"): the
encoder gives DDL records the topic ``schema_change_topic`` (default: the
``topic_prefix`` value, as Debezium names it), so hosts route them there;
``convert`` leaves them out of a single output file (``-o DIR/`` keeps
them). Watermarks of other formats (TiCDC's) are not written: Debezium has no such message, and
its ``m`` op is reproduced only for messages read from Debezium itself.

Values are kept in Debezium's own representation (epoch days, base64
decimals...) as a raw value form until someone needs them typed, so
Debezium -> Debezium passes them through untouched. Raw values of forms with
compiled converters (Canal text) are converted straight to this representation
per column (``_connect.RawPlan``), without typing the event first. With the schema part the
representation of every column is known exactly; without it the column types
come from the schema catalog when one is given, else only from the JSON types
(a DATE then stays an int: see the README's "documented losses").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

import msgspec
import orjson

from cdc_smt.transforms.errors import DecodeError, EncodeError
from cdc_smt.transforms.formats._connect import (
    BIGINT_UNSIGNED_MODES,
    BINARY_MODES,
    DECIMAL_FORMATS,
    DECIMAL_MODES,
    TIME_MODES,
    ConnectOptions,
    Plan,
    plan_for_fields,
    plan_for_schema,
)
from cdc_smt.transforms.formats.base import Capabilities, JsonCodec, json_default, record_headers
from cdc_smt.transforms.inference import RULES, json_columns, python_columns
from cdc_smt.transforms.model import (
    TOMBSTONE,
    UNWRAPPED,
    ChangeEvent,
    Column,
    IdentityCache,
    Op,
    Record,
    SourcePosition,
    TableSchema,
)
from cdc_smt.transforms.options import Option
from cdc_smt.transforms.types import TypeParseError, parse_type, quote_label

NAME = "debezium-json"
#: ``source.version`` of messages this codec writes itself.
SOURCE_VERSION = "cdc-smt"

_OPS: dict[str, Op] = {
    "c": Op.INSERT,
    "u": Op.UPDATE,
    "d": Op.DELETE,
    "r": Op.READ,
    "t": Op.TRUNCATE,
    "m": Op.WATERMARK,
    "i": Op.INSERT,  # CloudCanal's Debezium envelope
}
_CODES: dict[Op, str] = {
    Op.INSERT: "c",
    Op.UPDATE: "u",
    Op.DELETE: "d",
    Op.READ: "r",
    Op.TRUNCATE: "t",
    Op.WATERMARK: "m",
    Op.HEARTBEAT: "m",
}
_DB_TYPES = {"mysql": "mysql", "postgresql": "postgres", "ticdc": "tidb", "mariadb": "mariadb", "oracle": "oracle"}
_CONNECTORS = {"mysql": "mysql", "postgres": "postgresql", "tidb": "TiCDC", "mariadb": "mariadb", "oracle": "oracle"}
#: Envelope fields the model holds; anything else is kept in ``extra["payload"]``.
_ROW_FIELDS = frozenset({"before", "after", "source", "op", "ts_ms"})
_STANDARD_ROW = _ROW_FIELDS | {"transaction"}
_DDL_FIELDS = frozenset({"source", "ts_ms", "databaseName", "ddl", "tableChanges"})
_TX_FIELDS = frozenset({"status", "id", "ts_ms"})
#: Fields the encoder writes for DDL / transaction messages (absent ones are remembered).
_DDL_WRITTEN = frozenset({"source", "ts_ms", "databaseName", "schemaName", "ddl", "tableChanges"})
_TX_WRITTEN = frozenset({"status", "id", "ts_ms", "event_count", "data_collections"})

_HEAD = b'{"schema":'
_SEP = b',"payload":'
_EXACT = msgspec.json.Decoder(float_hook=Decimal)


class _Cache(dict):
    """A dict that forgets its oldest entry beyond ``size`` (insertion order)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def put(self, key: Any, value: Any) -> Any:
        if len(self) >= self.size:
            del self[next(iter(self))]
        self[key] = value
        return value


#: Schema parts by their raw bytes (``{"schema":...`` up to ``,"payload":``).
_HEADS: _Cache = _Cache(512)
#: Plans of schema parts: (schema key, pk, tz, numeric decimals, binary mode) -> Plan.
_CONNECT_PLANS: _Cache = _Cache(1024)
#: schema dict (by identity) -> [plans] so an encoder finds the plan of an original schema part.
_ORIGINALS = IdentityCache(1024)


#: A parsed Debezium message: (the schema part's text -- the plan cache key --, the schema
#: part, the payload, the bytes to re-read the payload from exactly). A plain tuple: one
#: is built per message.
_Message = tuple[bytes | None, Any, Any, bytes]


def _dump_default(v: Any) -> Any:
    """Raw numeric decimals stay exact JSON numbers; typed leftovers as ``json_default``."""
    if isinstance(v, Decimal):
        if not v.is_finite():
            raise TypeError(f"{v} is not a JSON number")
        return orjson.Fragment(str(v))
    return json_default(v)


def _dumps(obj: Any) -> bytes:
    return orjson.dumps(obj, default=_dump_default)


class DebeziumJsonCodec(JsonCodec):
    """Debezium JSON (Kafka Connect JsonConverter), with or without the schema part."""

    name = NAME
    description = "Debezium change events (Kafka Connect JsonConverter), with or without the schema part"
    options = (
        Option(
            "schemas_enable",
            bool,
            False,
            "Write the Connect `schema` part with every key and value (JsonConverter `schemas.enable`). "
            "Decoding detects it.",
        ),
        Option(
            "tombstones_on_delete",
            bool,
            True,
            "After each delete, also write a tombstone (null value, same key) so log compaction can drop "
            "the row (Debezium `tombstones.on.delete`).",
        ),
        Option(
            "decimal_handling_mode",
            str,
            "precise",
            "DECIMAL as `precise` (Connect Decimal: base64 of the unscaled two's-complement integer, scale "
            "in the schema), `string` (plain text) or `double` (loses precision).",
            choices=DECIMAL_MODES,
        ),
        Option(
            "decimal_format",
            str,
            "base64",
            "How precise decimals appear in JSON: `base64` (JsonConverter default) or `numeric` "
            "(JsonConverter `decimal.format=NUMERIC`, Flink CDC). Decoding accepts both.",
            choices=DECIMAL_FORMATS,
        ),
        Option(
            "time_precision_mode",
            str,
            "adaptive_time_microseconds",
            "`adaptive_time_microseconds`: DATETIME(0-3) as io.debezium.time.Timestamp (ms), DATETIME(4-6) "
            "as MicroTimestamp, TIME as MicroTime; `connect`: Kafka Connect Date/Time/Timestamp (milliseconds).",
            choices=TIME_MODES,
        ),
        Option(
            "binary_handling_mode",
            str,
            "bytes",
            "BINARY/VARBINARY/BLOB as Connect `bytes` (base64 in JSON) or as a `base64`, `base64-url-safe` "
            "or `hex` string.",
            choices=BINARY_MODES,
        ),
        Option(
            "bigint_unsigned_handling_mode",
            str,
            "long",
            "BIGINT UNSIGNED as `long` (int64; values above 2^63-1 wrap negative, as in Debezium) or "
            "`precise` (Connect Decimal with scale 0).",
            choices=BIGINT_UNSIGNED_MODES,
        ),
        Option(
            "topic_prefix",
            str,
            "cdc_smt",
            "Debezium's `topic.prefix` (`database.server.name`): `source.name` and the Connect schema "
            "names (`<prefix>.<db>.<table>.Value`) of messages written here.",
        ),
        Option(
            "schema_change_topic",
            str,
            None,
            "Topic of schema-change (DDL) records: Debezium writes them to a topic of their own, named "
            "`topic_prefix`, never to a table's data topic (consumers such as Flink's debezium-json fail "
            "on them). Encoded DDL records carry it as their topic, replacing any routing; default: the "
            "`topic_prefix` value. (`convert` counts them but leaves them out of a single output file; "
            "`-o DIR/` writes them to `DIR/<topic>.jsonl`.)",
        ),
        Option(
            "transaction_topic",
            str,
            None,
            "Topic of transaction-metadata (BEGIN/END) records, as Debezium's `topic.transaction`; "
            "default `<topic_prefix>.transaction`. Never a table's data topic.",
        ),
        Option(
            "heartbeat_topic",
            str,
            None,
            "Topic of heartbeat records, as Debezium's `topic.heartbeat.prefix`; default "
            "`__debezium-heartbeat.<topic_prefix>`. Never a table's data topic.",
        ),
    )
    # column_types: Connect types are not MySQL types (TINYINT and SMALLINT are both int16,
    # VARCHAR has no length), so the catalog must not learn them over exact ones.
    capabilities = Capabilities(
        primary_key=True,
        binlog_position=True,
        gtid=True,
        transactions=True,
        ddl=True,
        heartbeats=True,
        typed_values=True,
        snapshot_reads=True,
    )

    def configure(self) -> None:
        o = self.opts
        self.connect = ConnectOptions(
            decimal_handling_mode=o.decimal_handling_mode,
            decimal_format=o.decimal_format,
            time_precision_mode=o.time_precision_mode,
            binary_handling_mode=o.binary_handling_mode,
            bigint_unsigned_handling_mode=o.bigint_unsigned_handling_mode,
        )
        self.timezone: str = o.source_timezone
        self.prefix: str = o.topic_prefix
        self.schema_change_topic: str = o.schema_change_topic if o.schema_change_topic is not None else o.topic_prefix
        self.transaction_topic: str = o.transaction_topic or f"{o.topic_prefix}.transaction"
        self.heartbeat_topic: str = o.heartbeat_topic or f"__debezium-heartbeat.{o.topic_prefix}"
        self.schemas_enable: bool = o.schemas_enable
        self.tombstones_on_delete: bool = o.tombstones_on_delete
        #: Null-value records (Kafka tombstones) read: they carry no change, so they yield no event.
        self.tombstones = 0
        self._by_schema_id = IdentityCache(1024)
        self._by_schema: _Cache = _Cache(256)
        self._inferred: _Cache = _Cache(256)
        self._schema_bytes: _Cache = _Cache(256)
        #: The text of decoded messages' own schema parts (by identity).
        self._original_bytes = IdentityCache(256)
        #: (schema, zone, plan) of the last event encoded.
        self._last_plan: tuple[Any, str, Any] = (None, "", None)
        #: The constant part of source blocks written for events of other formats.
        self._source_templates: dict[tuple, dict[str, Any]] = {}

    @classmethod
    def sniff(cls, message: Any) -> bool:
        if not isinstance(message, dict):
            return False
        if "schema" in message and "payload" in message:
            return True
        if "op" in message and ("before" in message or "after" in message or "source" in message):
            return True
        return "ddl" in message and "databaseName" in message

    # -- accessors for the native planner (transforms/native_debezium.py) ------
    def decimal_columns(self, head: bytes, pk: tuple[str, ...]) -> tuple[str, ...]:
        """The columns of messages starting with ``head`` (``{"schema":...``) whose JSON
        numbers the decoder re-reads exactly (``decimal_format: numeric``)."""
        key, schema, _, _ = self._split(head + _SEP + b"{}}")
        plan = self._schema_plan(key, schema, pk) if schema is not None else None
        return plan.numeric_decimals if plan is not None else ()

    def passes_values_through(self, event: ChangeEvent) -> bool:
        """Would this encoder write ``event``'s row values as they are: raw values of its own
        representation, or plain JSON values (no form) its plan writes unconverted?"""
        if not event.op.is_row or event.schema is None:
            return False
        plan = self._plan_for(event)
        form = event.values
        return form.name == plan.signature if form is not None else not plan.encoders

    # =====================================================================
    # Decoding
    # =====================================================================
    def decode_tombstone(self, record: Record) -> list[ChangeEvent]:
        """A Kafka tombstone (Flink: null or empty input yields no rows): no change, no event."""
        self.tombstones += 1
        return []

    def parse(self, value: bytes) -> _Message | None:
        """The message split into schema key, schema part, payload and payload bytes
        (``None`` for an empty value, a tombstone)."""
        if not value:
            return None
        try:
            key, schema, payload, body = self._split(value)
        except orjson.JSONDecodeError as exc:
            raise DecodeError(f"malformed JSON: {exc}", format=NAME) from None
        return key, schema, payload, body or value

    def decode_message(self, message: _Message | None, record: Record) -> list[ChangeEvent]:
        if message is None or message[2] is None:  # {"schema": null, "payload": null}: JsonConverter's tombstone
            return self.decode_tombstone(record)
        key, schema, payload, raw = message
        if not isinstance(payload, dict):
            raise DecodeError(f"expected a JSON object payload, got {type(payload).__name__}", format=NAME)
        return self._decode_payload(payload, key, schema, raw, record)

    def _split(self, value: bytes) -> tuple[bytes | None, Any, Any, bytes | None]:
        """(schema key, schema part, payload, payload bytes).

        The schema part is usually most of the message and repeats verbatim, so
        ``{"schema":...,"payload":...}`` is split at ``,"payload":`` and only the
        payload is parsed; the schema part is parsed once per distinct text.
        """
        if value.startswith(_HEAD):
            cut = value.find(_SEP)
            if cut > 0:
                head = value[:cut]
                schema = _HEADS.get(head, _HEADS)
                if schema is _HEADS:
                    schema = self._parse_head(head)
                if schema is not _HEADS:
                    tail = value.rstrip()
                    if tail.endswith(b"}"):
                        body = tail[cut + len(_SEP) : -1]
                        try:
                            return head, schema, orjson.loads(body), body
                        except orjson.JSONDecodeError:
                            pass
        obj = orjson.loads(value)
        if not isinstance(obj, dict):
            raise DecodeError(f"expected a JSON object, got {type(obj).__name__}", format=NAME)
        if "payload" in obj and "schema" in obj and len(obj) == 2:
            schema = obj["schema"]
            return (_dumps(schema) if schema is not None else None), schema, obj["payload"], None
        return None, None, obj, None

    @staticmethod
    def _parse_head(head: bytes) -> Any:
        """The schema part of ``head`` if it is exactly ``{"schema": <json>``, else a miss marker."""
        try:
            doc = orjson.loads(head + b"}")
        except orjson.JSONDecodeError:
            return _HEADS
        if not isinstance(doc, dict) or len(doc) != 1:
            return _HEADS
        return _HEADS.put(head, doc["schema"])

    def _decode_payload(
        self, payload: dict, key: bytes | None, schema: Any, raw: bytes, record: Record
    ) -> list[ChangeEvent]:
        op_code = payload.get("op")
        if op_code is not None:
            return [self._row_event(payload, op_code, key, schema, raw, record)]
        if "ddl" in payload or "tableChanges" in payload or "databaseName" in payload:
            return [self._ddl_event(payload, schema)]
        status = payload.get("status")
        if status is not None:
            return [self._transaction_event(payload, status, schema)]
        if payload.keys() == {"ts_ms"}:
            return [
                ChangeEvent(
                    op=Op.HEARTBEAT,
                    ts_ms=payload["ts_ms"],
                    timezone=self.timezone,
                    origin=NAME,
                    extra=_schema_extra(schema),
                )
            ]
        raise DecodeError(
            "not a Debezium message: no 'op', 'ddl' or transaction 'status' field "
            "(flattened ExtractNewRecordState rows are not Debezium envelopes)",
            format=NAME,
        )

    # -- row events ------------------------------------------------------------
    def _row_event(
        self, payload: dict, op_code: Any, key: bytes | None, schema: Any, raw: bytes, record: Record
    ) -> ChangeEvent:
        op = _OPS.get(op_code) if isinstance(op_code, str) else None
        if op is None:
            raise DecodeError(f"unknown op {op_code!r} (expected c, u, d, r, t or m)", format=NAME)
        source = payload.get("source")
        extra: dict[str, Any] = {}
        if op_code == "i":
            extra["op"] = "i"
        before = payload.get("before")
        after = payload.get("after")
        if before == {}:  # CloudCanal writes {} for "no image" (not 0, "", []: those are not images)
            extra["empty_before"] = True
            before = None
        if after == {}:
            extra["empty_after"] = True
            after = None
        if op is Op.WATERMARK and "message" in payload:
            op = Op.HEARTBEAT  # a Postgres logical-decoding message: no row, kept for re-encoding
        pk = _key_names(record.key)
        plan: Plan | None = None
        partial = False
        if op.is_row:
            _check_images(op, before, after)
            if schema is not None:
                plan = self._schema_plan(key, schema, pk)
                if plan is not None and plan.numeric_decimals and _has_numbers(plan.numeric_decimals, before, after):
                    payload = _EXACT.decode(raw)
                    if "payload" in payload and "schema" in payload and len(payload) == 2:
                        payload = payload["payload"]
                    before = payload.get("before") or None
                    after = payload.get("after") or None
                    _check_images(op, before, after)  # the exact parser may pick another of duplicated keys
                    plan = self._schema_plan(key, schema, pk, numeric=True)
                    extra["decimal_numbers"] = True
                if plan is not None and self.catalog is not None and source:
                    plan = self._exact_types(plan, source)
            if plan is None:
                plan = self._schemaless_plan(source, before, after, pk)
            if op is Op.DELETE and before is None:
                # Postgres without REPLICA IDENTITY FULL: only the key identifies the deleted row.
                partial = True
                before = _key_values(record.key)
        if payload.keys() == _STANDARD_ROW:  # the usual Debezium envelope: skip the general bookkeeping
            extra["payload"] = {"transaction": payload["transaction"]}
        else:
            missing = _ROW_FIELDS.difference(payload)
            if missing:
                extra["absent"] = tuple(sorted(missing))
            rest = {k: v for k, v in payload.items() if k not in _ROW_FIELDS}
            if rest:
                extra["payload"] = rest
        if source is not None:
            extra["source"] = source
        if schema is not None:
            extra["schema"] = schema
        src = _position(source) if source else SourcePosition()
        tx = payload.get("transaction")
        if src.txid is None and isinstance(tx, dict) and tx.get("id") is not None:
            src.txid = str(tx["id"])
        ts = payload.get("ts_ms")
        src_ts = source.get("ts_ms") if source else None
        return ChangeEvent(
            op=op,
            source=src,
            before=before,
            after=after,
            schema=plan.table_schema if plan is not None else None,
            pk=pk or (plan.table_schema.primary_key if plan is not None else ()),
            ts_ms=src_ts if src_ts is not None else ts,
            processing_ts_ms=ts,
            timezone=self.timezone,
            values=plan.form if plan is not None else None,
            partial=partial,
            origin=NAME,
            extra=extra,
        )

    def _schema_plan(self, key: bytes | None, schema: Any, pk: tuple[str, ...], numeric: bool = False) -> Plan | None:
        """The plan for a message's own schema part (cached by its text)."""
        ck = (key, pk, self.timezone, numeric, self.connect.binary_handling_mode)
        plan = _CONNECT_PLANS.get(ck)
        if plan is None:
            fields = _value_fields(schema)
            if fields is None:
                return None
            plan = _CONNECT_PLANS.put(ck, plan_for_fields(fields, pk, self.timezone, self.connect, numeric))
            plans = _ORIGINALS.get(schema)
            if plans is None:
                plans = _ORIGINALS.put(schema, None, None, [])
            plans.append(plan)
        return plan

    def _exact_types(self, plan: Plan, source: Mapping[str, Any]) -> Plan:
        """The catalog's table when it describes the same representations: its MySQL types
        are exact where the Connect schema only gives the widest fit (``int16`` -> smallint)."""
        table = self.catalog.get(source.get("db"), source.get("table"))
        if table is None:
            return plan
        exact = self._generated(table, self.timezone)
        return exact if exact.signature == plan.signature else plan

    def _schemaless_plan(self, source: Any, before: Any, after: Any, pk: tuple[str, ...]) -> Plan:
        """Catalog schema if there is one, else the types the JSON values show."""
        if self.catalog is not None and source:
            table = self.catalog.get(source.get("db"), source.get("table"))
            if table is not None:
                return self._generated(table, self.timezone)
        # Cheap cache key: column names and JSON value kinds of both images.
        ck = (
            tuple(before) if before else None,
            _kinds(before) if before else None,
            tuple(after) if after else None,
            _kinds(after) if after else None,
            pk,
        )
        plan = self._inferred.get(ck)
        if plan is None:
            cols = json_columns((before, after), RULES[NAME])
            pkset = set(pk)
            schema = TableSchema(
                columns=tuple(Column(n, t, nullable=n not in pkset, primary_key=n in pkset) for n, t in cols),
                primary_key=tuple(k for k in pk if any(n == k for n, _ in cols)),
            )
            plan = self._inferred.put(ck, plan_for_schema(schema, self.connect, self.timezone))
        return plan

    # -- DDL, transactions -----------------------------------------------------
    def _ddl_event(self, payload: dict, schema: Any) -> ChangeEvent:
        source = payload.get("source") or {}
        changes = payload.get("tableChanges")
        items = changes if isinstance(changes, list) else [changes] if isinstance(changes, dict) else []
        table_schema = None
        kind = None
        table = source.get("table")
        for item in items:
            kind = kind or item.get("type")
            t = item.get("table")
            if table_schema is None and isinstance(t, dict) and t.get("columns"):
                table_schema = _schema_from_change(t)
                table = table or _table_from_id(item.get("id"))
        src = _position(source) if source else SourcePosition()
        db = payload.get("databaseName") or src.database
        src = msgspec.structs.replace(src, database=db, table=table)
        extra: dict[str, Any] = {"tableChanges": changes} if "tableChanges" in payload else {}
        rest = {k: v for k, v in payload.items() if k not in _DDL_FIELDS}
        if rest:
            extra["payload"] = rest
        if "source" in payload:
            extra["source"] = payload["source"]
        missing = _DDL_WRITTEN.difference(payload)
        if missing:
            extra["absent"] = tuple(sorted(missing))
        extra.update(_schema_extra(schema))
        ts = payload.get("ts_ms")
        return ChangeEvent(
            op=Op.DDL,
            source=src,
            schema=table_schema,
            pk=table_schema.primary_key if table_schema else (),
            ddl=payload.get("ddl"),
            ddl_kind=kind,
            ts_ms=source.get("ts_ms", ts),
            processing_ts_ms=ts,
            timezone=self.timezone,
            origin=NAME,
            extra=extra,
        )

    def _transaction_event(self, payload: dict, status: Any, schema: Any) -> ChangeEvent:
        if status == "BEGIN":
            op = Op.BEGIN
        elif status == "END":
            op = Op.COMMIT
        else:
            raise DecodeError(f"unknown transaction status {status!r} (expected BEGIN or END)", format=NAME)
        extra = _schema_extra(schema)
        rest = {k: v for k, v in payload.items() if k not in _TX_FIELDS}
        if rest:
            extra["payload"] = rest
        missing = _TX_WRITTEN.difference(payload)
        if missing:
            extra["absent"] = tuple(sorted(missing))
        return ChangeEvent(
            op=op,
            source=SourcePosition(txid=payload["id"]),
            ts_ms=payload.get("ts_ms"),
            timezone=self.timezone,
            origin=NAME,
            extra=extra,
        )

    # =====================================================================
    # Encoding
    # =====================================================================
    @staticmethod
    def _addressed(record: Record, topic: str) -> Record:
        """Debezium writes control records to topics of their own, never a table's data topic."""
        record.topic = topic
        return record

    def encode_records(self, event: ChangeEvent) -> list[Record]:
        """Debezium's records: keys with their own schema, control records on their own
        topics, a delete's tombstone; the model's markers handled the Debezium way."""
        extra = event.extra
        op = event.op
        if extra.get(TOMBSTONE):
            plan = self._plan_for(event) if event.schema is not None else None
            if plan is not None and event.values is not None and event.values.name != plan.signature:
                event.typed()
            return [self._record(event, None, self._row_key(event, plan, None))]
        if op is Op.WATERMARK:
            # An `m` message read from Debezium is reproduced; watermarks of other formats
            # (TiCDC's) have no Debezium message: consumers of a data topic (Flink's
            # debezium-json) fail on ops they do not know.
            return self._encode_row(event) if event.origin == NAME else []
        if op.is_row or op is Op.TRUNCATE:
            return self._encode_row(event)
        if op is Op.DDL:
            return [self._encode_ddl(event)]
        if op is Op.BEGIN or op is Op.COMMIT:
            return [self._addressed(self._encode_transaction(event), self.transaction_topic)]
        if op is Op.HEARTBEAT:
            if event.origin == NAME and "payload" in extra and "message" in extra["payload"]:
                return self._encode_row(event)
            return [self._addressed(self._encode_heartbeat(event), self.heartbeat_topic)]
        raise EncodeError(f"no Debezium message for {op.value} events", format=NAME)

    def _record(self, event: ChangeEvent, value: bytes | None, key: bytes | None) -> Record:
        return Record(value=value, key=key, topic=event.topic, headers=record_headers(event))

    def _wrap(self, schema_bytes: bytes, payload: Any) -> bytes:
        body = _dumps(payload)
        if not self.schemas_enable:
            return body
        return b'{"schema":' + schema_bytes + b',"payload":' + body + b"}"

    # -- row events --------------------------------------------------------------
    def _encode_row(self, event: ChangeEvent) -> list[Record]:
        op = event.op
        same = event.origin == NAME
        extra = event.extra
        plan = None
        before = after = None
        converted = event.values is None  # typed values are converted below (raw ones pass through)
        if op.is_row:
            plan = self._plan_for(event)
            form = event.values
            if form is not None and form.name == plan.signature:
                before, after = event.before, event.after  # same representation: pass through
            else:
                before, after = self._images(event, plan, form)
                converted = True
        source = self._source_block(event)
        key = self._row_key(event, plan, after if after is not None else before, converted)
        if extra.get(UNWRAPPED):
            row = after if after is not None else before
            schema_bytes = self._unwrapped_schema(event, plan, row) if self.schemas_enable else b""
            return [self._record(event, self._wrap(schema_bytes, row), key)]
        code = _CODES[op]
        if same and "op" in extra and _OPS.get(extra["op"]) is op:
            code = extra["op"]
        ts = event.processing_ts_ms if event.processing_ts_ms is not None else event.ts_ms
        if same:
            if before is None and extra.get("empty_before"):
                before = {}
            if after is None and extra.get("empty_after"):
                after = {}
            payload: dict[str, Any] = {"before": before, "after": after, "source": source, "op": code, "ts_ms": ts}
            _restore(payload, extra)
        elif op is Op.WATERMARK:
            payload = {"source": source, "op": code, "ts_ms": ts, "transaction": None}
        else:
            payload = {"before": before, "after": after, "source": source, "op": code, "ts_ms": ts, "transaction": None}
        if self.schemas_enable:
            value = self._wrap(self._envelope_schema(event, plan, payload), payload)
        else:
            value = orjson.dumps(payload, default=_dump_default)
        out = [Record(value=value, key=key, topic=event.topic, headers=record_headers(event))]
        if op is Op.DELETE and self.tombstones_on_delete and key is not None:
            out.append(self._record(event, None, key))
        return out

    def _images(self, event: ChangeEvent, plan: Plan, form: Any) -> tuple[Any, Any]:
        """``before``/``after`` in the plan's representations.

        Raw values of a form with compiled converters (``raw_type``) are converted
        straight from the raw form (:class:`~transforms.formats._connect.RawPlan`),
        leaving the event as it is; otherwise, and when that fails, the event is
        typed in place and encoded, so errors read the same.
        """
        before, after = event.before, event.after
        if (
            form is not None
            and (before is not None or after is not None)
            and getattr(form, "raw_type", None) is not None
        ):
            raw = plan.raw_plan(form)
            try:
                if before is None:
                    assert after is not None  # one of the two is set (checked above)
                    return None, raw.row(after)
                if after is None:
                    return raw.row(before), None
                return raw.pair(before, after)
            except Exception:  # noqa: BLE001 - the typed path below words the error
                pass
        if form is not None:
            event.typed()
            before, after = event.before, event.after
        if before is not None and after is not None:
            return plan.encode_pair(before, after)
        if after is not None:
            return before, plan.encode_row(after)
        if before is not None:
            return plan.encode_row(before), after
        return before, after

    def _plan_for(self, event: ChangeEvent) -> Plan:
        """The plan for the event's table, built once per table schema and zone."""
        schema = event.schema
        last = self._last_plan
        if schema is last[0] and event.timezone == last[1] and schema is not None:
            return last[2]  # consecutive events of one table
        if schema is None:
            if event.values is not None:
                raise EncodeError("cannot type raw values without a table schema", format=NAME)
            row = {**(event.before or {}), **(event.after or {})}  # a column's after-value decides
            schema = TableSchema(columns=tuple(Column(n, t) for n, t in python_columns((row,))))
            ck = (schema, event.timezone)
            plan = self._by_schema.get(ck)
            return (
                plan
                if plan is not None
                else self._by_schema.put(ck, plan_for_schema(schema, self.connect, event.timezone))
            )
        plan = self._generated(schema, event.timezone)
        self._last_plan = (schema, event.timezone, plan)
        return plan

    def _generated(self, schema: TableSchema, tz: str) -> Plan:
        plan = self._by_schema_id.get(schema, None, tz)
        if plan is not None:
            return plan
        plan = self._by_schema.get((schema, tz))
        if plan is None:
            plan = self._by_schema.put((schema, tz), plan_for_schema(schema, self.connect, tz))
        return self._by_schema_id.put(schema, None, tz, plan)

    def _original_schema(self, event: ChangeEvent, plan: Plan | None) -> Any:
        """The decoded message's own schema part, if it still describes this event exactly."""
        if event.origin != NAME:
            return None
        orig = event.extra.get("schema")
        if orig is None:
            return None
        if plan is None:
            return orig
        schema = event.schema
        if schema is None:  # a plan inferred from the values: no original schema describes it
            return None
        candidates = _ORIGINALS.get(orig, default=[])
        if not candidates:
            fields = _value_fields(orig)
            if fields is None:
                return None
            numeric = bool(event.extra.get("decimal_numbers"))
            candidates = [plan_for_fields(fields, schema.primary_key, plan.tz, self.connect, numeric)]
        for p in candidates:
            if p.signature == plan.signature and p.table_schema == schema:
                return orig
        return None

    def _source_block(self, event: ChangeEvent) -> dict[str, Any]:
        s = event.source
        if event.origin == NAME:
            orig = event.extra.get("source")
            if orig is not None:
                return _override_source(orig, s, event.ts_ms)
            if "absent" in event.extra and "source" in event.extra["absent"]:
                return {}
        snapshot = "true" if event.op is Op.READ else "false"
        if s.db_type == "postgres":
            return {
                "version": SOURCE_VERSION,
                "connector": "postgresql",
                "name": self.prefix,
                "ts_ms": event.ts_ms or 0,
                "snapshot": snapshot,
                "db": s.database or "",
                "sequence": None,
                "schema": s.schema or "",
                "table": s.table or "",
                "txId": _int_or_none(s.txid),
                "lsn": None,
                "xmin": None,
            }
        ck = (s.db_type, s.database, s.table, snapshot)
        template = self._source_templates.get(ck)
        if template is None:
            if len(self._source_templates) >= 1024:
                self._source_templates.clear()
            template = self._source_templates[ck] = {
                "version": SOURCE_VERSION,
                "connector": _CONNECTORS.get(s.db_type or "mysql", s.db_type),
                "name": self.prefix,
                "ts_ms": 0,
                "snapshot": snapshot,
                "db": s.database or "",
                "sequence": None,
                "table": s.table,
                "server_id": 0,
                "gtid": None,
                "file": "",
                "pos": 0,
                "row": 0,
                "thread": None,
                "query": None,
            }
        out = template.copy()
        if event.ts_ms:
            out["ts_ms"] = event.ts_ms
        if s.server_id:
            out["server_id"] = s.server_id
        if s.gtid is not None:
            out["gtid"] = s.gtid
        if s.binlog_file:
            out["file"] = s.binlog_file
        if s.binlog_pos:
            out["pos"] = s.binlog_pos
        if s.row:
            out["row"] = s.row
        if s.commit_ts is not None:
            out["commit_ts"] = s.commit_ts
        return out

    def _row_key(
        self, event: ChangeEvent, plan: Plan | None, row: Mapping[str, Any] | None, converted: bool | None = None
    ) -> bytes | None:
        """The primary-key struct (the explicit ``event.key`` when a transform set one).

        ``converted``: the event's values are typed (or were converted from another
        raw form) rather than passed through; default: ``event.values is None``."""
        if converted is None:
            converted = event.values is None
        pk = event.pk
        if event.key is not None:
            key = dict(event.key)
            if plan is not None and converted:
                key = plan.encode_row(key)
        else:
            if not pk:
                return None
            if row is None:  # tombstones: the key columns of the image, converted
                image = event.row or {}
                row = {k: image.get(k) for k in pk}
                if plan is not None and event.values is None:
                    row = plan.encode_row(row)
            if len(pk) == 1:
                k = pk[0]
                key = {k: row.get(k)}
            else:
                key = {k: row.get(k) for k in pk}
        if not key:
            return None
        if not self.schemas_enable:
            return orjson.dumps(key, default=_dump_default)
        return b'{"schema":' + self._key_schema(event, plan, tuple(key), key) + b',"payload":' + _dumps(key) + b"}"

    # -- Connect schemas ---------------------------------------------------------
    def _struct_name(self, event: ChangeEvent, suffix: str) -> str:
        s = event.source
        middle = s.schema if s.db_type == "postgres" and s.schema else s.database
        return ".".join(str(p) for p in (self.prefix, middle, s.table, suffix) if p)

    def _value_struct(self, plan: Plan | None, row: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        fields = list(plan.value_fields) if plan is not None else []
        if row:
            known = {f["field"] for f in fields}
            fields.extend(_inferred_field(k, v) for k, v in row.items() if k not in known)
        return fields

    def _envelope_schema(self, event: ChangeEvent, plan: Plan | None, payload: dict[str, Any]) -> bytes:
        orig = self._original_schema(event, plan)
        if orig is not None:
            text = self._original_bytes.get(orig)
            return text if text is not None else self._original_bytes.put(orig, None, None, _dumps(orig))
        row = payload.get("after") or payload.get("before") or {}
        extra_names = tuple(k for k in row if plan is None or k not in plan.table_schema.by_name)
        source = payload.get("source") or {}
        others = tuple((n, _inferred_type(v)) for n, v in payload.items() if n not in _ENVELOPE_FIELDS)
        extra = (extra_names, _inferred_types(row, extra_names))
        ck = ("env", plan, self._struct_name(event, ""), tuple(source), tuple(payload), others, extra)
        hit = self._schema_bytes.get(ck)
        if hit is not None:
            return hit
        value = {
            "type": "struct",
            "fields": self._value_struct(plan, {k: row[k] for k in extra_names} if extra_names else None),
            "optional": True,
            "name": self._struct_name(event, "Value"),
        }
        fields: list[dict[str, Any]] = []
        for name, v in payload.items():
            if name in ("before", "after"):
                fields.append({**value, "field": name})
            elif name == "source":
                fields.append(_source_schema(source))
            elif name == "op":
                fields.append({"type": "string", "optional": False, "field": "op"})
            elif name == "transaction":
                fields.append(_TRANSACTION_BLOCK)
            elif name == "ts_ms":  # Debezium's: int64, also when this event has none (null)
                fields.append(_TS_MS_FIELD)
            else:
                fields.append(_inferred_field(name, v))
        envelope = {
            "type": "struct",
            "fields": fields,
            "optional": False,
            "name": self._struct_name(event, "Envelope"),
            "version": 1,
        }
        return self._schema_bytes.put(ck, _dumps(envelope))

    def _unwrapped_schema(self, event: ChangeEvent, plan: Plan | None, row: Mapping[str, Any] | None) -> bytes:
        names = tuple(row or ())
        extra = {k: row[k] for k in names if plan is None or k not in plan.table_schema.by_name} if row else None
        ck = ("unwrapped", plan, self._struct_name(event, ""), names, _inferred_types(extra, extra) if extra else ())
        hit = self._schema_bytes.get(ck)
        if hit is not None:
            return hit
        fields = [f for f in self._value_struct(plan, extra) if f["field"] in names] if row else []
        value = {"type": "struct", "fields": fields, "optional": False, "name": self._struct_name(event, "Value")}
        return self._schema_bytes.put(ck, _dumps(value))

    def _key_schema(
        self, event: ChangeEvent, plan: Plan | None, names: tuple[str, ...], key: Mapping[str, Any]
    ) -> bytes:
        ck = ("key", plan, self._struct_name(event, ""), names, _inferred_types(key, names))
        hit = self._schema_bytes.get(ck)
        if hit is not None:
            return hit
        by_name = {f["field"]: f for f in (plan.value_fields if plan is not None else ())}
        fields = []
        for k in names:
            f = by_name.get(k) or _source_key_field(event, k)
            fields.append({**f, "optional": False} if f is not None else _inferred_field(k, key[k], optional=False))
        schema = {"type": "struct", "fields": fields, "optional": False, "name": self._struct_name(event, "Key")}
        return self._schema_bytes.put(ck, _dumps(schema))

    # -- DDL, transactions, heartbeats -------------------------------------------
    def _encode_ddl(self, event: ChangeEvent) -> Record:
        extra = event.extra
        same = event.origin == NAME
        source = self._source_block(event)
        db = event.source.database
        changes: Any = None
        if same and "tableChanges" in extra:
            changes = extra["tableChanges"]
            derived = _first_change_schema(changes)
            if derived != event.schema:
                changes = None
        if changes is None:
            changes = [_table_change(event, event.schema)] if event.schema is not None else []
        payload: dict[str, Any] = {
            "source": source,
            "ts_ms": event.processing_ts_ms if event.processing_ts_ms is not None else event.ts_ms,
            "databaseName": db,
            "schemaName": event.source.schema,
            "ddl": event.ddl,
            "tableChanges": changes,
        }
        if same:
            _restore(payload, extra)
        schema_bytes = b""
        if self.schemas_enable:
            orig = extra.get("schema") if same else None
            schema_bytes = _dumps(orig) if orig is not None else _dumps(_ddl_schema(source))
        key_payload = {"databaseName": db}
        key = (
            _dumps(key_payload)
            if not self.schemas_enable
            else _dumps({"schema": _DDL_KEY_SCHEMA, "payload": key_payload})
        )
        record = self._record(event, self._wrap(schema_bytes, payload), key)
        record.topic = self.schema_change_topic  # never the table's data topic (option doc)
        return record

    def _encode_transaction(self, event: ChangeEvent) -> Record:
        txid = _transaction_id(event.source)
        if txid is None:
            raise EncodeError(
                "transaction marker without a transaction id (source.txid, GTID or binlog position)", format=NAME
            )
        payload: dict[str, Any] = {
            "status": "BEGIN" if event.op is Op.BEGIN else "END",
            "id": str(txid),
            "ts_ms": event.ts_ms,
            "event_count": None,
            "data_collections": None,
        }
        same = event.origin == NAME
        if same:
            _restore(payload, event.extra)
        schema_bytes = b""
        if self.schemas_enable:
            orig = event.extra.get("schema") if same else None
            schema_bytes = _dumps(orig if orig is not None else _TRANSACTION_SCHEMA)
        key_payload = {"id": str(txid)}
        key = (
            _dumps(key_payload)
            if not self.schemas_enable
            else _dumps({"schema": _TRANSACTION_KEY_SCHEMA, "payload": key_payload})
        )
        return self._record(event, self._wrap(schema_bytes, payload), key)

    def _encode_heartbeat(self, event: ChangeEvent) -> Record:
        ts = event.ts_ms if event.ts_ms is not None else event.processing_ts_ms
        payload = {"ts_ms": ts if ts is not None else 0}  # int64, required by the Heartbeat schema
        key_payload = {"serverName": self.prefix}
        if not self.schemas_enable:
            return self._record(event, _dumps(payload), _dumps(key_payload))
        value = self._wrap(_dumps(_HEARTBEAT_SCHEMA), payload)
        return self._record(event, value, _dumps({"schema": _SERVER_KEY_SCHEMA, "payload": key_payload}))


# ---------------------------------------------------------------------------
# Helpers: positions, keys, images.
# ---------------------------------------------------------------------------


def _position(source: Mapping[str, Any]) -> SourcePosition:
    connector = source.get("connector")
    db_type = _DB_TYPES.get(connector.lower(), connector.lower()) if isinstance(connector, str) else None
    txid = source.get("txId")
    scn = source.get("scn")
    return SourcePosition(
        db_type=db_type,
        database=source.get("db"),
        schema=source.get("schema"),
        table=source.get("table"),
        server_id=source.get("server_id"),
        binlog_file=source.get("file") or None,
        binlog_pos=source.get("pos"),
        gtid=source.get("gtid"),
        commit_ts=source.get("commit_ts"),
        scn=int(scn) if isinstance(scn, str) and scn.isdigit() else scn,
        txid=str(txid) if txid is not None else None,
        row=source.get("row"),
    )


#: SourcePosition attribute -> Debezium source field, for fields both hold with the same type.
_SOURCE_OVERRIDES = (
    ("database", "db"),
    ("schema", "schema"),
    ("table", "table"),
    ("server_id", "server_id"),
    ("binlog_file", "file"),
    ("binlog_pos", "pos"),
    ("gtid", "gtid"),
    ("row", "row"),
    ("commit_ts", "commit_ts"),
)


def _override_source(orig: Mapping[str, Any], s: SourcePosition, ts_ms: int | None) -> dict[str, Any]:
    """The decoded source block with what the model holds (transforms may have changed it)."""
    out = dict(orig)
    for attr, name in _SOURCE_OVERRIDES:
        if name in out:
            v = getattr(s, attr)
            if v is not None:
                out[name] = v
    if "txId" in out and s.txid is not None:
        out["txId"] = _int_or_none(s.txid) if str(s.txid).isdigit() else s.txid
    if "ts_ms" in out and ts_ms is not None:
        out["ts_ms"] = ts_ms
    return out


def _transaction_id(s: SourcePosition) -> str | None:
    """Debezium's MySQL transaction id: the GTID, else ``file:pos``; other databases' txid."""
    if s.gtid and s.db_type in (None, "mysql", "mariadb", "tidb"):
        return s.gtid
    if s.txid is not None:
        return str(s.txid)
    if s.gtid:
        return s.gtid
    if s.binlog_file and s.binlog_pos is not None:
        return f"{s.binlog_file}:{s.binlog_pos}"
    return None


def _int_or_none(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _key_values(key: bytes | None) -> dict[str, Any] | None:
    """The Kafka key struct (Debezium keys are the primary-key columns)."""
    if not key:
        return None
    try:
        obj = orjson.loads(key)
    except orjson.JSONDecodeError:
        return None
    if isinstance(obj, dict) and "payload" in obj and "schema" in obj and len(obj) == 2:
        obj = obj["payload"]
    return obj if isinstance(obj, dict) and obj else None


def _key_names(key: bytes | None) -> tuple[str, ...]:
    """Primary-key column names from the Kafka key."""
    values = _key_values(key)
    return tuple(values) if values else ()


def _kinds(image: dict[str, Any]) -> tuple[Any, ...]:
    """What the types inferred from an image's values depend on: their JSON types, and for
    objects whether they are geometry structs (``inference.json_type``: ``wkb``, ``x``)."""
    kinds: tuple[Any, ...] = tuple(map(type, image.values()))
    if dict in kinds:
        kinds += tuple(("wkb" in v, "x" in v) for v in image.values() if type(v) is dict)
    return kinds


def _check_images(op: Op, before: Any, after: Any) -> None:
    for name, image in (("before", before), ("after", after)):
        if image is not None and not isinstance(image, dict):
            raise DecodeError(f"'{name}' must be an object or null, got {type(image).__name__}", format=NAME)
    if op in (Op.INSERT, Op.READ, Op.UPDATE) and after is None:
        raise DecodeError(f"{op.value} event without an 'after' image", format=NAME)


def _has_numbers(names: Iterable[str], before: Any, after: Any) -> bool:
    """Did decimals arrive as JSON numbers (they need an exact re-parse)?"""
    for image in (before, after):
        if image:
            for n in names:
                v = image.get(n)
                if v is not None and not isinstance(v, str):
                    return True
    return False


def _value_fields(schema: Any) -> list[dict[str, Any]] | None:
    """The row struct's fields in an envelope schema (from ``after``, else ``before``)."""
    if not isinstance(schema, dict):
        return None
    found = None
    for f in schema.get("fields") or ():
        if isinstance(f, dict) and f.get("field") in ("after", "before") and f.get("type") == "struct":
            found = f.get("fields")
            if f.get("field") == "after":
                break
    return found if isinstance(found, list) else None


def _restore(payload: dict[str, Any], extra: Mapping[str, Any]) -> None:
    """Same-format re-encoding: put back the decoded message's other fields, drop absent ones."""
    rest = extra.get("payload")
    if rest:
        payload.update(rest)
    for name in extra.get("absent", ()):
        payload.pop(name, None)


def _schema_extra(schema: Any) -> dict[str, Any]:
    return {"schema": schema} if schema is not None else {}


def _source_key_field(event: ChangeEvent, name: str) -> dict[str, Any] | None:
    """Field ``name`` of the source record's own key schema (Debezium in and out): a key
    column a transform moved out of the row (``header_from``, ``replace_field``) keeps its
    Connect type in the key instead of one inferred from the value (int32 -> int64)."""
    rec = event.record
    if event.origin != NAME or rec is None or not rec.key or not rec.key.startswith(_HEAD):
        return None
    try:
        fields = orjson.loads(rec.key)["schema"]["fields"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    for f in fields if isinstance(fields, list) else ():
        if isinstance(f, dict) and f.get("field") == name:
            return f
    return None


_TS_MS_FIELD = {"type": "int64", "optional": True, "field": "ts_ms"}


#: The envelope's fields whose schemas are fixed (the others' are inferred from their values).
_ENVELOPE_FIELDS = frozenset({"before", "after", "source", "op", "transaction", "ts_ms"})


def _inferred_type(v: Any) -> str:
    """The Connect type of a value no column describes: the schema caches key on it too,
    so that the schema written for a record never depends on the records before it."""
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "int64"
    if isinstance(v, float):
        return "double"
    return "string"


def _inferred_types(row: Mapping[str, Any], names: Iterable[str]) -> tuple[str, ...]:
    return tuple(_inferred_type(row[k]) for k in names)


def _inferred_field(name: str, v: Any, optional: bool = True) -> dict[str, Any]:
    """A Connect field schema for a value no column describes (added by a transform)."""
    return {"type": _inferred_type(v), "optional": optional, "field": name}


# ---------------------------------------------------------------------------
# Connect schemas of the fixed parts (after Debezium 2.x's MySQL connector): data,
# in schemas/debezium-connect.json (shipped in the wheel).
# ---------------------------------------------------------------------------


def _fixed_schemas() -> dict[str, Any]:
    from importlib import resources

    return orjson.loads(resources.files("cdc_smt.schemas").joinpath("debezium-connect.json").read_bytes())


_FIXED = _fixed_schemas()
_SOURCE_FIELDS: dict[str, dict[str, Any]] = {f["field"]: f for f in _FIXED["source_fields"]}
_SOURCE_NAMES: dict[str, str] = _FIXED["source_names"]
_TRANSACTION_BLOCK: dict[str, Any] = _FIXED["transaction_block"]
_TRANSACTION_SCHEMA: dict[str, Any] = _FIXED["transaction_value"]
_TRANSACTION_KEY_SCHEMA: dict[str, Any] = _FIXED["transaction_key"]
_HEARTBEAT_SCHEMA: dict[str, Any] = _FIXED["heartbeat_value"]
_SERVER_KEY_SCHEMA: dict[str, Any] = _FIXED["server_name_key"]
_DDL_KEY_SCHEMA: dict[str, Any] = _FIXED["schema_change_key"]
_DDL_VALUE_SCHEMA: dict[str, Any] = _FIXED["schema_change_value"]


def _source_schema(source: Mapping[str, Any]) -> dict[str, Any]:
    """The Connect schema of a source block, field by field (unknown fields typed by value)."""
    fields = [_SOURCE_FIELDS.get(k) or _inferred_field(k, v) for k, v in source.items()]
    connector = source.get("connector") or "mysql"
    name = _SOURCE_NAMES.get(connector, f"io.debezium.connector.{connector}.Source")
    return {"type": "struct", "fields": fields, "optional": False, "name": name, "field": "source"}


def _ddl_schema(source: Mapping[str, Any]) -> dict[str, Any]:
    """The schema-change value schema: the fixed one, led by this source block's schema."""
    return {**_DDL_VALUE_SCHEMA, "fields": [_source_schema(source), *_DDL_VALUE_SCHEMA["fields"]]}


# ---------------------------------------------------------------------------
# tableChanges <-> TableSchema.
# ---------------------------------------------------------------------------

_LENGTH_BASES = {
    "char",
    "varchar",
    "binary",
    "varbinary",
    "bit",
    "tinyint",
    "smallint",
    "mediumint",
    "int",
    "integer",
    "bigint",
}
_DECIMAL_BASES = {"decimal", "numeric", "dec", "fixed", "float", "double", "real"}
_FSP_BASES = {"datetime", "timestamp", "time"}


def _unquote(label: str) -> str:
    if len(label) >= 2 and label[0] == label[-1] and label[0] in "'\"":
        return label[1:-1].replace(label[0] * 2, label[0])
    return label


def _type_text(c: Mapping[str, Any]) -> str:
    """MySQL type text of a ``tableChanges`` column (``typeName`` + length/scale/enumValues)."""
    expr = c.get("typeExpression") or c.get("typeName") or "text"
    if "(" in expr:
        return expr
    words = expr.split(" ", 1)
    base = words[0].lower()
    rest = (" " + words[1].lower()) if len(words) > 1 else ""
    length, scale = c.get("length"), c.get("scale")
    params = ""
    enum_values = c.get("enumValues")
    if enum_values:
        params = "(" + ",".join(quote_label(_unquote(v)) for v in enum_values) + ")"
    elif isinstance(length, int) and length > 0:
        if base in _DECIMAL_BASES:
            params = (
                f"({length},{scale or 0})"
                if scale is not None or base not in ("float", "double", "real")
                else f"({length})"
            )
        elif base in _LENGTH_BASES or (base in _FSP_BASES and length <= 6):
            params = f"({length})"
    text = base + params + rest
    try:
        parse_type(text)
    except TypeParseError:
        return expr
    return text


def _schema_from_change(table: Mapping[str, Any]) -> TableSchema:
    pk = tuple(table.get("primaryKeyColumnNames") or ())
    cols = []
    for c in sorted(table["columns"], key=lambda c: c.get("position") or 0):
        name = c["name"]
        cols.append(
            Column(
                name,
                _type_text(c),
                nullable=c.get("optional", True) is not False,
                primary_key=name in pk,
                default=c.get("defaultValueExpression"),
                comment=c.get("comment"),
            )
        )
    return TableSchema(columns=tuple(cols), primary_key=pk)


def _first_change_schema(changes: Any) -> TableSchema | None:
    items = changes if isinstance(changes, list) else [changes] if isinstance(changes, dict) else []
    for item in items:
        t = item.get("table") if isinstance(item, dict) else None
        if isinstance(t, dict) and t.get("columns"):
            return _schema_from_change(t)
    return None


def _table_from_id(table_id: Any) -> str | None:
    """``"db"."table"`` -> ``table``."""
    if not isinstance(table_id, str) or not table_id:
        return None
    return table_id.split(",")[0].rsplit(".", 1)[-1].strip('"`')


def _change_type(event: ChangeEvent) -> str:
    """Debezium's tableChanges type: CREATE, ALTER or DROP."""
    kind = (event.ddl_kind or "").upper()
    if kind in ("CREATE", "ALTER", "DROP"):
        return kind
    from cdc_smt.transforms.catalog import classify_ddl  # sqlglot is heavy: only for DDL without a kind

    kind = classify_ddl(event.ddl or "")
    return {"CREATE": "CREATE", "ERASE": "DROP"}.get(kind, "ALTER")


def _table_change(event: ChangeEvent, schema: TableSchema) -> dict[str, Any]:
    s = event.source
    columns = []
    for i, col in enumerate(schema.columns):
        mt = col.mysql
        base = mt.base.upper() + (" UNSIGNED" if mt.unsigned else "")
        length = mt.precision if mt.precision is not None else (mt.fsp or mt.length)
        columns.append(
            {
                "name": col.name,
                "jdbcType": mt.jdbc_type(),
                "nativeType": None,
                "typeName": base,
                "typeExpression": base,
                "charsetName": mt.charset,
                "length": length,
                "scale": mt.scale if mt.precision is not None else None,
                "position": i + 1,
                "optional": col.nullable,
                "autoIncremented": False,
                "generated": False,
                "comment": col.comment,
                "defaultValueExpression": col.default,
                "enumValues": [quote_label(v) for v in mt.values] if mt.values else None,
            }
        )
    ident = ".".join(f'"{p}"' for p in (s.database, s.schema, s.table) if p)
    return {
        "type": _change_type(event),
        "id": ident,
        "table": {
            "defaultCharsetName": None,
            "primaryKeyColumnNames": list(schema.primary_key),
            "columns": columns,
            "comment": None,
        },
        "comment": None,
    }


__all__ = ["DebeziumJsonCodec", "NAME"]
