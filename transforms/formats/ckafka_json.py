"""Tencent Cloud CKafka connector, MySQL subscription "official format 1".

DML messages are flat (``TYPE`` I/U/D, ``NEW_VALUES``/``OLD_VALUES`` maps of
strings, ``TIME`` as ``yyyyMMddHHmmss`` in the source time zone, binlog file
and position, ``GLOBAL_ID`` GTID). DDL messages in the same topic are in Canal
shape (``isDdl: true``) and are handled by the canal-json codec. Messages are
told apart one by one.

Format 1 carries no column types: row values are typed through the schema
catalog (a schema file, or CREATE TABLE DDL seen earlier in the stream).
Without a schema for the table they stay strings.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

import msgspec

from cdc_smt.transforms.errors import DecodeError, EncodeError
from cdc_smt.transforms.formats.base import Capabilities, JsonCodec, is_int
from cdc_smt.transforms.model import ChangeEvent, Column, IdentityCache, Op, Record, SourcePosition, TableSchema
from cdc_smt.transforms.sqltext import MYSQL_TEXT, event_ms, text_images
from cdc_smt.transforms.types import epoch_us, wall_clock

log = logging.getLogger(__name__)

_OPS = {"I": Op.INSERT, "U": Op.UPDATE, "D": Op.DELETE}
_TYPES = {Op.INSERT: "I", Op.READ: "I", Op.UPDATE: "U", Op.DELETE: "D"}
#: Schema type of columns a message has but the catalog schema lacks.
UNKNOWN_COLUMN_TYPE = "longtext"


class CKafkaJson(JsonCodec):
    name = "ckafka-json"
    description = (
        "Tencent Cloud CKafka connector MySQL subscription, official format 1 "
        "(DML; values are strings) with Canal-shaped DDL in the same topic"
    )
    own_catalog = True  # format 1 has no types: DDL in this stream names later rows
    capabilities = Capabilities(binlog_position=True, gtid=True, ddl=True)

    def configure(self) -> None:
        self._canal_codec: Any = None
        self._time_cache: tuple[str, int] = ("", 0)
        self._partial = IdentityCache(1024)
        self._untyped_tables: set[tuple[str, str]] = set()

    @classmethod
    def sniff(cls, message: Any) -> bool:
        if not isinstance(message, dict):
            return False
        if "TYPE" in message and "TIME" in message and ("NEW_VALUES" in message or "OLD_VALUES" in message):
            return True
        return message.get("isDdl") is True and "sql" in message and "database" in message

    # -- decode ------------------------------------------------------------
    def decode_message(self, obj: dict, record: Record) -> list[ChangeEvent]:
        if "TYPE" in obj:
            return [self._decode_dml(obj)]
        if "isDdl" in obj:
            if obj["isDdl"] is not True:
                raise DecodeError(
                    "Canal-shaped DML is not part of ckafka-json: format 1 sends DML as TYPE/NEW_VALUES/OLD_VALUES "
                    "(decode this topic with canal-json instead)",
                    format=self.name,
                )
            return self._decode_ddl(obj, record)
        raise DecodeError(
            "neither a format-1 DML message (no 'TYPE') nor a Canal-shaped DDL message (no 'isDdl')",
            format=self.name,
        )

    def _decode_dml(self, obj: dict) -> ChangeEvent:
        typ = obj["TYPE"]
        op = _OPS.get(typ) if isinstance(typ, str) else None
        if op is None:
            raise DecodeError(f"unknown TYPE {typ!r} (expected I, U or D)", format=self.name)
        database = self._field(obj, "DATABASE", str)
        table = self._field(obj, "TABLE", str)
        new = self._image(obj, "NEW_VALUES", required=op is not Op.DELETE)
        old = self._image(obj, "OLD_VALUES", required=op is not Op.INSERT)
        if op is Op.INSERT and old is not None:
            raise DecodeError("TYPE I with OLD_VALUES: an insert has no old row", format=self.name)
        if op is Op.DELETE and new is not None:
            raise DecodeError("TYPE D with NEW_VALUES: a delete has no new row", format=self.name)
        server_id = obj.get("EVENT_SERVER_ID")
        extra: dict[str, Any] = {}
        if server_id is not None and not is_int(server_id):
            extra["EVENT_SERVER_ID"] = server_id
            server_id = None
        if obj.get("GROUP_ID") is not None:
            extra["GROUP_ID"] = obj["GROUP_ID"]
        source = SourcePosition(
            db_type="mysql",
            database=database,
            table=table,
            server_id=server_id,
            binlog_file=self._field(obj, "BINLOG_NAME", str, optional=True),
            binlog_pos=self._field(obj, "BINLOG_POS", int, optional=True),
            gtid=self._field(obj, "GLOBAL_ID", str, optional=True),
        )
        changed = None
        if op is Op.UPDATE:
            assert new is not None and old is not None  # an update requires both (_image raised otherwise)
            changed = tuple(k for k, v in new.items() if k not in old or old[k] != v)
        row = new if new is not None else old
        assert row is not None  # every op requires NEW_VALUES or OLD_VALUES (_image raised otherwise)
        schema = self._schema(database, table, row)
        return ChangeEvent(
            op=op,
            source=source,
            before=old,
            after=new,
            changed=changed,
            schema=schema,
            pk=schema.primary_key if schema is not None else (),
            ts_ms=self._time(obj["TIME"]),
            timezone=self.opts.source_timezone,
            values=MYSQL_TEXT if schema is not None else None,
            origin=self.name,
            extra=extra,
        )

    def _field(self, obj: dict, name: str, typ: type, optional: bool = False) -> Any:
        value = obj.get(name) if optional else obj[name]
        if value is None and optional:
            return None
        if not isinstance(value, typ) or isinstance(value, bool):
            raise DecodeError(f"field {name!r} must be a {_TYPE_NAMES[typ]}, got {value!r}", format=self.name)
        return value

    def _image(self, obj: dict, name: str, required: bool) -> dict[str, Any] | None:
        image = obj.get(name)
        if image is None:
            if required:
                raise DecodeError(f"TYPE {obj['TYPE']} needs {name}", format=self.name)
            return None
        if not isinstance(image, dict):
            raise DecodeError(
                f"{name} must be an object of column values, got {type(image).__name__}", format=self.name
            )
        for k, v in image.items():
            if v is not None and not isinstance(v, str):
                raise DecodeError(
                    f"{name}.{k} must be a string or null (format 1 values are text), got {v!r}", format=self.name
                )
        return image

    def _schema(self, database: str, table: str, image: dict[str, Any]) -> TableSchema | None:
        """The catalog schema for the row's columns (message order), if the table is known."""
        known = self.catalog.get(database, table)
        if known is None:
            if (database, table) not in self._untyped_tables:
                self._untyped_tables.add((database, table))
                log.warning(
                    "%s: no schema for table %s.%s: its values stay untyped strings "
                    "(give a schema file, or let CREATE TABLE DDL come first in the stream)",
                    self.name,
                    database,
                    table,
                )
            return None
        by_name = known.by_name
        if len(image) == len(known.columns) and all(k in by_name for k in image):
            return known
        names = tuple(image)
        schema = self._partial.get(known, None, names)
        if schema is None:
            cols = [by_name.get(k) or Column(k, UNKNOWN_COLUMN_TYPE) for k in image]
            schema = TableSchema(columns=tuple(cols), primary_key=tuple(p for p in known.primary_key if p in image))
            self._partial.put(known, None, names, schema)
        return schema

    def _time(self, text: Any) -> int:
        """``yyyyMMddHHmmss`` in ``source_timezone`` -> epoch ms (cached: rows share seconds)."""
        cached, ms = self._time_cache
        if text == cached:
            return ms
        if not (isinstance(text, str) and len(text) == 14 and text.isdigit()):
            raise DecodeError(f"TIME {text!r} is not yyyyMMddHHmmss", format=self.name)
        try:
            local = dt.datetime.strptime(text, "%Y%m%d%H%M%S")
        except ValueError:
            raise DecodeError(f"TIME {text!r} is not a valid date and time", format=self.name) from None
        ms = epoch_us(local, self.opts.source_timezone) // 1000
        self._time_cache = (text, ms)
        return ms

    def _decode_ddl(self, obj: dict, record: Record) -> list[ChangeEvent]:
        events = self._canal().decode_message(obj, record)
        for e in events:
            stash = {"origin": e.origin, "extra": e.extra, "ts_ms": e.ts_ms, "processing_ts_ms": e.processing_ts_ms}
            # CKafka writes es/ts in seconds in some DDL messages (doc: 1655782153) and ms in others.
            e.ts_ms = _epoch_ms(obj.get("es"), e.ts_ms)
            e.processing_ts_ms = _epoch_ms(obj.get("ts"), e.processing_ts_ms)
            stash["decoded_ts_ms"] = e.ts_ms
            e.origin = self.name
            e.extra = {"canal": stash}
            e.timezone = self.opts.source_timezone
            self.catalog.observe(e)
        return events

    def _canal(self) -> Any:
        if self._canal_codec is None:
            try:
                from cdc_smt.transforms.formats.canal_json import CanalJson
            except ImportError:
                raise DecodeError(
                    "Canal-shaped DDL needs the canal-json codec, which is not available", format=self.name
                ) from None
            self._canal_codec = CanalJson({"source_timezone": self.opts.source_timezone}, catalog=self.catalog)
        return self._canal_codec

    # -- encode ------------------------------------------------------------
    def encode_message(self, event: ChangeEvent) -> Any:
        op = event.op
        typ = _TYPES.get(op)
        if typ is not None:
            return self._encode_dml(event, typ)
        if op is Op.DDL or op is Op.TRUNCATE:
            return self._canal().encode_message(self._canal_view(event))
        return None  # transaction markers, heartbeats, watermarks: format 1 has none

    def _encode_dml(self, event: ChangeEvent, typ: str) -> dict[str, Any]:
        tz = self.opts.source_timezone
        old, new = text_images(event, MYSQL_TEXT.name, tz)
        if typ == "I":
            old = None
        elif typ == "D":
            new = None
        ms = event_ms(event)
        if ms is None:
            raise EncodeError("no event time for TIME", format=self.name)
        src = event.source
        mine = event.origin == self.name
        extra = event.extra if mine else {}
        return {
            "BINLOG_NAME": src.binlog_file,
            "BINLOG_POS": src.binlog_pos,
            "DATABASE": src.database,
            "EVENT_SERVER_ID": src.server_id if src.server_id is not None else extra.get("EVENT_SERVER_ID"),
            "GLOBAL_ID": src.gtid,
            "GROUP_ID": extra.get("GROUP_ID"),
            "NEW_VALUES": new,
            "OLD_VALUES": old,
            "TABLE": src.table,
            "TIME": _format_time(ms, tz),
            "TYPE": typ,
        }

    def _canal_view(self, event: ChangeEvent) -> ChangeEvent:
        """The event as the canal-json encoder should see it: the original Canal
        fields back when this codec decoded it and the time is unchanged."""
        stash = event.extra.get("canal") if event.origin == self.name else None
        if not stash:
            return event
        ts = stash["ts_ms"] if event.ts_ms == stash.get("decoded_ts_ms") else event.ts_ms
        return msgspec.structs.replace(
            event, origin=stash["origin"], extra=stash["extra"], ts_ms=ts, processing_ts_ms=stash["processing_ts_ms"]
        )


_TYPE_NAMES = {str: "string", int: "integer"}


def _epoch_ms(raw: Any, fallback: int | None) -> int | None:
    """Epoch seconds or milliseconds -> ms (values below 1e11 are seconds: before 1973 in ms)."""
    if not is_int(raw):
        return fallback
    return raw * 1000 if abs(raw) < 100_000_000_000 else raw


def _format_time(ms: int, tz: str) -> str:
    when = wall_clock(ms // 1000 * 1_000_000, tz)
    return f"{when.year:04d}{when.month:02d}{when.day:02d}{when.hour:02d}{when.minute:02d}{when.second:02d}"
