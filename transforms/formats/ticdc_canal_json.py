"""``ticdc-canal-json``: TiCDC's dialect of Canal-JSON (``protocol=canal-json``).

What differs from official Canal (TiCDC docs, "TiCDC Canal-JSON Protocol", and
TiCDC's encoder ``pkg/sink/codec/canal``):

* one row per message; ``id`` is always 0; ``es`` is the commit TSO's physical
  time (``commitTs >> 18``);
* UPDATE ``old`` carries every column (only the changed ones with
  ``content-compatible`` or ``only-output-updated-columns``), so ``changed`` is
  found by comparing; DELETE ``old`` is null (before v5.4 a copy of ``data``);
* ``mysqlType`` has no type parameters (``decimal``, ``enum``, ``bit``,
  ``int unsigned``) unless ``content-compatible=true`` (full types);
  ``sqlType`` follows the TiCDC table (TEXT 2005, BLOB/BINARY 2004, SET -7,
  JSON 12, unsigned integers above the signed range move to a wider code);
* ``_tidb`` (``enable-tidb-extension``): ``commitTs`` (-> ``source.commit_ts``),
  ``onlyHandleKey`` / ``claimCheckLocation`` on messages that hold only the
  handle-key columns of a row too large for Kafka (decoded as
  ``event.partial = True``), ``TIDB_WATERMARK`` messages with ``watermarkTs``
  (-> WATERMARK events, ``source.commit_ts`` = watermarkTs). A bare
  ``{"_tidb": {"claimCheckLocation": ...}}`` reference carries no row and is
  rejected with a message saying where the row is.

Values (:class:`TicdcText`) are Canal's (enum index, set bitmask, bit number,
ISO-8859-1 binary) except: FLOAT/DOUBLE print as Go's shortest plain decimal
(``0.1``, ``10000000000``, no exponent), DECIMAL with the value's own digits,
YEAR 0 as ``0``. TIMESTAMP text is in the changefeed's time zone: set
``source_timezone``.

Without type parameters some values cannot be typed exactly. With a schema
catalog that knows the table (a schema file, DDL seen earlier) the decoder takes
the catalog's type of every column whose parameterless ``mysqlType`` names the
same base type (and signedness): enum/set labels, bit length, decimal precision
and scale, fractional seconds. Without one (or for a column the catalog types
differently) it documents what it does instead of guessing:

* ``enum``/``set`` have no labels: the value stays the index/bitmask text;
* ``bit`` is read as ``bit(64)`` (an int; BIT(1) is not told apart from wider
  bits, so a BIT(1) value is ``1``, not ``True``), ``decimal`` as
  ``decimal(65,30)``, ``datetime``/``timestamp``/``time`` with 6 fractional
  digits, so no target rounds or truncates the value.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from decimal import Decimal
from typing import Any, ClassVar

from cdc_smt.transforms.errors import EncodeError
from cdc_smt.transforms.formats.base import Capabilities
from cdc_smt.transforms.formats.canal_json import ROW_TYPES, CanalJson, CanalText, go_float_text
from cdc_smt.transforms.model import ChangeEvent, Column, IdentityCache, Op, SourcePosition, TableSchema
from cdc_smt.transforms.options import Option
from cdc_smt.transforms.types import Kind, MySQLType, TypeParseError, parse_type

log = logging.getLogger(__name__)

WATERMARK_TYPE = "TIDB_WATERMARK"
#: Kinds whose parameterless type would mean "no fractional seconds".
_TEMPORAL_FSP = frozenset({Kind.DATETIME, Kind.TIMESTAMP, Kind.TIME})
_FIELDS = frozenset(
    {"id", "database", "table", "pkNames", "isDdl", "type", "es", "ts", "sql", "sqlType", "mysqlType", "old", "data"}
)


class TicdcText(CanalText):
    """TiCDC's raw values: Canal's, with Go number formatting (module docstring)."""

    name = "ticdc-text"

    def float_text(self, v: float, single: bool) -> str:
        return go_float_text(v, single)

    def decimal_text(self, t: MySQLType, v: Decimal) -> str:
        return format(v, "f")  # TiDB prints the stored digits; the type text has no scale

    def year_text(self, year: int) -> str:
        return str(year)


TICDC_TEXT = TicdcText()


def ticdc_type_name(t: MySQLType) -> str:
    """``mysqlType`` as TiCDC writes it without content-compatible: base name plus
    ``unsigned``/``zerofill`` (never on bit and year)."""
    out = t.base
    if t.unsigned and t.base not in ("bit", "year"):
        out += " unsigned"
    if t.zerofill and t.base != "year":
        out += " zerofill"
    return out


def _with_catalog_types(schema: TableSchema, mysql_types: dict, known: TableSchema) -> TableSchema:
    """``schema`` with the catalog column (its exact type, nullability, default) for every
    column whose ``mysqlType`` has no parameters and names the catalog column's base type
    (and signedness); other columns, and mismatching ones (a change the catalog has not
    seen), keep the message's type."""
    cols = []
    changed = False
    for col in schema.columns:
        text = mysql_types.get(col.name)
        exact = known.column(col.name)
        if exact is not None and isinstance(text, str) and "(" not in text and exact.type != col.type:
            try:
                t, k = parse_type(text), exact.mysql
                same = t.base == k.base and t.unsigned == k.unsigned
            except TypeParseError:
                same = False
            if same:
                cols.append(dataclasses.replace(exact, primary_key=col.primary_key))
                changed = True
                continue
        cols.append(col)
    return TableSchema(columns=tuple(cols), primary_key=schema.primary_key) if changed else schema


class TicdcCanalJson(CanalJson):
    name = "ticdc-canal-json"
    description = (
        "TiCDC canal-json: one row per message, full old, parameterless mysqlType, "
        "_tidb extension (commitTs, watermarks, large-message flags)"
    )
    options = (
        Option(
            "enable_tidb_extension",
            bool,
            False,
            "Encoder: add _tidb.commitTs to every message and write watermark events as TIDB_WATERMARK "
            "(TiCDC's enable-tidb-extension). Messages decoded from this format keep their _tidb either way.",
        ),
        Option(
            "content_compatible",
            bool,
            False,
            "Encoder: official-Canal-style content (TiCDC's content-compatible): full mysqlType with "
            "parameters and only the changed columns in UPDATE old.",
        ),
    )
    # snapshot_reads: TiCDC has no INIT; snapshot reads are written as INSERT.
    capabilities = Capabilities(column_types=True, primary_key=True, ddl=True, watermarks=True)

    form: ClassVar[CanalText] = TICDC_TEXT
    db_type: ClassVar[str] = "tidb"
    update_always_has_old: ClassVar[bool] = True
    row_types: ClassVar[dict[str, Op]] = ROW_TYPES
    field_order: ClassVar[tuple[str, ...]] = (
        "id", "database", "table", "pkNames", "isDdl", "type", "es", "ts", "sql", "sqlType", "mysqlType", "old", "data",
    )  # fmt: skip

    def configure(self) -> None:
        super().configure()
        # Read per message: kept as attributes (option lookups are not free).
        self._content_compatible: bool = self.opts.content_compatible
        self._tidb_extension: bool = self.opts.enable_tidb_extension
        #: (message schema, catalog schema) -> the message schema with the catalog's types.
        self._refined = IdentityCache(self._SCHEMA_CACHE_SIZE)
        self._warned_official = False

    @classmethod
    def sniff(cls, message: Any) -> bool:
        """``_tidb`` or a watermark; without the extension, TiCDC's exact field set,
        ``id`` 0 and ``mysqlType`` without parameters (official Canal has both)."""
        if not isinstance(message, dict):
            return False
        if "_tidb" in message or message.get("type") == WATERMARK_TYPE:
            return True
        types = message.get("mysqlType")
        return (
            message.keys() == _FIELDS
            and message.get("id") == 0
            and (types is None or (isinstance(types, dict) and not any("(" in str(t) for t in types.values())))
        )

    @property
    def batching(self) -> bool:
        return False  # TiCDC writes one row per message

    # =======================================================================
    # decode
    # =======================================================================
    def decode_message(self, obj: dict, record: Any) -> list[ChangeEvent]:
        if not self._warned_official and "_tidb" not in obj:
            self._warn_if_official(obj)
        return super().decode_message(obj, record)

    def _warn_if_official(self, obj: dict) -> None:
        """Official Canal read as TiCDC decodes, but ``changed`` and batching are TiCDC's
        assumptions: say so once. Only what TiCDC never writes counts (``id`` is always 0,
        one row per message)."""
        msg_id, data = obj.get("id"), obj.get("data")
        signs = []
        if msg_id.__class__ is int and msg_id != 0:
            signs.append(f"'id' is {msg_id}, TiCDC always writes 0")
        if isinstance(data, list) and len(data) > 1:
            signs.append(f"{len(data)} rows in one message, TiCDC writes one")
        if signs:
            self._warned_official = True
            log.warning(
                "%s: these messages look like official Canal, not TiCDC (%s, no _tidb); "
                "decode them as canal-json (its 'old' holds only the changed columns)",
                self.name,
                "; ".join(signs),
            )

    def decode_untyped(self, obj: dict) -> list[ChangeEvent]:
        location = self._ext(obj).get("claimCheckLocation")
        if location is not None:
            raise self._error(
                f"claim-check reference without row data: the full message is stored at {location!r}; "
                "fetch it from there and decode that instead"
            )
        return super().decode_untyped(obj)

    def decode_other(self, obj: dict, kind: str) -> list[ChangeEvent]:
        if kind != WATERMARK_TYPE:
            return super().decode_other(obj, kind)
        mark = self._ext(obj).get("watermarkTs")
        if not isinstance(mark, int) or isinstance(mark, bool):
            raise self._error(f"{WATERMARK_TYPE} message without an integer _tidb.watermarkTs")
        src = self._source(obj)
        source = SourcePosition(db_type=self.db_type, database=src.database, table=src.table, commit_ts=mark)
        return [self.message_event(obj, Op.WATERMARK, source)]

    def changed_columns(self, data_row: dict, old_row: dict) -> tuple[str, ...]:
        """``old`` repeats unchanged columns: compare."""
        return tuple(k for k, v in old_row.items() if k in data_row and data_row[k] != v)

    def is_partial(self, obj: dict) -> bool:
        ext = self._ext(obj)
        return bool(ext.get("onlyHandleKey")) or ext.get("claimCheckLocation") is not None

    def column_type(self, name: str, text: str, code: Any) -> str:
        """Parameterless ``bit``/``decimal``/``datetime``/``timestamp``/``time`` become
        their widest form, so that no consumer of the schema narrows the values
        (``bit`` alone would mean BIT(1), ``datetime`` alone DATETIME(0): a Debezium
        encoder would then write whole milliseconds and drop the microseconds)."""
        text = super().column_type(name, text, code)
        if "(" in text:
            return text
        t = parse_type(text)
        if t.kind is Kind.BIT:
            return dataclasses.replace(t, length=64).text()
        if t.kind is Kind.DECIMAL:
            return dataclasses.replace(t, precision=65, scale=30).text()
        if t.kind in _TEMPORAL_FSP:
            return dataclasses.replace(t, fsp=6).text()
        return text

    def _schema(self, obj: dict, data: list) -> TableSchema:
        """The message's schema; with a schema catalog that knows the table, the catalog's
        exact type for every column whose parameterless ``mysqlType`` has the same base type
        (enum labels, set labels, bit length, decimal precision/scale, fsp)."""
        schema = super()._schema(obj, data)
        if self.catalog is None:
            return schema
        mysql_types = obj.get("mysqlType")
        database, table = obj.get("database"), obj.get("table")
        if not mysql_types or table.__class__ is not str:
            return schema
        known = self.catalog_schema(database if database.__class__ is str and database else None, table)
        if known is None:
            return schema
        refined = self._refined.get(schema, known)
        if refined is None:
            refined = self._refined.put(schema, known, None, _with_catalog_types(schema, mysql_types, known))
        return refined

    def schema_key(self, mysql_types: dict, sql_types: Any, pk: tuple[str, ...]) -> Any:
        # Older TiCDC writes mysqlType in Go map order (random): key on its content.
        return (frozenset(mysql_types.items()), tuple(sql_types or ()), pk)

    def column_order(self, mysql_types: dict, sql_types: Any) -> Any:
        """``sqlType`` is written in table column order, ``mysqlType`` (older TiCDC) in map order."""
        if isinstance(sql_types, dict) and sql_types.keys() == mysql_types.keys():
            return sql_types
        return mysql_types

    def _source(self, obj: dict) -> SourcePosition:
        src = super()._source(obj)
        commit = self._ext(obj).get("commitTs")
        if isinstance(commit, int) and not isinstance(commit, bool):
            src.commit_ts = commit
        return src

    def _ext(self, obj: dict) -> dict:
        ext = obj.get("_tidb")
        if ext is None:
            return {}
        if not isinstance(ext, dict):
            raise self._error(f"'_tidb' must be an object, got {type(ext).__name__}")
        return ext

    # =======================================================================
    # encode
    # =======================================================================
    def row_type(self, op: Op) -> str:
        return "INSERT" if op is Op.READ else op.value.upper()  # TiCDC has no INIT

    def check_partial(self, event: ChangeEvent) -> None:
        if event.partial and not self._extension_on(self._origin_meta(event)):
            raise EncodeError(
                "partial event (handle-key-only / claim-check) needs enable_tidb_extension: "
                "without _tidb.onlyHandleKey it would read as a full row",
                format=self.name,
            )

    def old_columns(self, e: ChangeEvent, before: dict, after: dict) -> list[str]:
        if self._content_compatible:
            return [k for k, v in before.items() if after.get(k) != v or k not in after]
        if self._origin_meta(e) is not None and "old" in e.extra:
            return super().old_columns(e, before, after)
        return list(before)

    @property
    def reuse_mysql_types(self) -> bool:
        return not self._content_compatible  # the option wins over the original message

    def mysql_type_text(self, column: Column) -> str:
        return column.type if self._content_compatible else ticdc_type_name(column.mysql)

    def sql_type(self, column: Column, text: Any) -> int:
        t = column.mysql
        return t.jdbc_type(int(text) if text is not None and t.kind is Kind.INT and t.unsigned else None)

    def sql_type_by_null(self, column: Column) -> tuple[int, int] | None:
        t = column.mysql
        if t.kind is Kind.INT and t.unsigned:
            return None
        return t.jdbc_type(None), t.jdbc_type(None)

    def control_message(self, event: ChangeEvent) -> Any:
        if event.op is not Op.WATERMARK:
            return None
        orig = self._origin_meta(event)
        if not self._extension_on(orig):
            return None  # TiCDC sends watermarks only with the extension
        src = event.source
        fields = {
            "id": 0,
            "database": src.database,
            "table": src.table,
            "pkNames": None,
            "isDdl": False,
            "type": WATERMARK_TYPE,
            "es": event.ts_ms if event.ts_ms is not None else self._tso(event) >> 18,
            "ts": event.processing_ts_ms if event.processing_ts_ms is not None else int(time.time() * 1000),
            "sql": "",
            "sqlType": None,
            "mysqlType": None,
            "old": None,
            "data": None,
        }
        return self.finish(fields, [event], orig, frozenset({"database", "table", "es", "ts", "type"}))

    def finish(
        self, fields: dict[str, Any], events: list[ChangeEvent], orig: dict | None, model: frozenset[str]
    ) -> dict[str, Any]:
        msg = super().finish(fields, events, orig, model)
        msg.pop("_tidb", None)
        if self._extension_on(orig):
            msg["_tidb"] = self._extension(events[0], orig)
        return msg

    def _extension_on(self, orig: dict | None) -> bool:
        return self._tidb_extension or (orig is not None and isinstance(orig.get("_tidb"), dict))

    def _extension(self, e: ChangeEvent, orig: dict | None) -> dict[str, Any]:
        """``_tidb``: the original one updated from the model, else a new one."""
        tidb = orig.get("_tidb") if orig is not None else None
        ext: dict[str, Any] = dict(tidb) if isinstance(tidb, dict) else {}
        if e.op is Op.WATERMARK:
            ext["watermarkTs"] = self._tso(e)
            return ext
        ext["commitTs"] = self._tso(e)
        if e.partial and not (ext.get("onlyHandleKey") or ext.get("claimCheckLocation")):
            ext["onlyHandleKey"] = True
        return ext

    def _tso(self, e: ChangeEvent) -> int:
        """The TiDB TSO of the event: its commit ts, else one made from its time (logical 0)."""
        if e.source.commit_ts is not None:
            return e.source.commit_ts
        return (e.ts_ms or 0) << 18

    def _es(self, e: ChangeEvent) -> int | None:
        if e.ts_ms is None and e.source.commit_ts is not None:
            return e.source.commit_ts >> 18
        return super()._es(e)


__all__ = ["TICDC_TEXT", "TicdcCanalJson", "TicdcText", "WATERMARK_TYPE", "ticdc_type_name"]
