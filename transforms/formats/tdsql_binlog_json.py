"""TencentDB for MariaDB / TDSQL data subscription: binlog events as JSON.

One message per binlog event: ``insert``/``update``/``delete`` row events
(MySQL row-event codes, v1 and v2, and MariaDB's compressed ones), ``gtid``
(transaction start), ``xid`` (commit) and ``query`` (DDL). Row values are
positional arrays of SQL literals, ``where`` before and ``field`` after the
change. Neither names nor types are in the message: both come from the schema
catalog, in column order. ``unknown_table`` decides what happens to rows of a
table the catalog does not know.
"""

from __future__ import annotations

import re
from typing import Any

from cdc_smt.transforms.errors import DecodeError, EncodeError
from cdc_smt.transforms.formats.base import Capabilities, JsonCodec, in_original_order, is_int
from cdc_smt.transforms.model import ChangeEvent, Op, Record, SourcePosition, TableSchema
from cdc_smt.transforms.options import Option
from cdc_smt.transforms.sqltext import (
    LiteralError,
    SqlLiteralForm,
    classify_ddl,
    literal_value,
    parse_literal,
    passthrough,
    render_image,
    to_literal,
)

# eventtypestr -> (op, binlog event-type codes it may carry). Codes: MySQL
# log_event.h (WRITE/UPDATE/DELETE_ROWS v1 23-25, v2 30-32, QUERY 2, XID 16,
# GTID 33, ANONYMOUS_GTID 34) and MariaDB (GTID 162, QUERY_COMPRESSED 165,
# compressed row events v1 166-168, v2 169-171).
_KINDS: dict[str, tuple[Op, frozenset[int]]] = {
    "insert": (Op.INSERT, frozenset({23, 30, 166, 169})),
    "update": (Op.UPDATE, frozenset({24, 31, 167, 170})),
    "delete": (Op.DELETE, frozenset({25, 32, 168, 171})),
    "gtid": (Op.BEGIN, frozenset({33, 34, 162})),
    "xid": (Op.COMMIT, frozenset({16})),
    "query": (Op.DDL, frozenset({2, 165})),
}
_ROW_CODES = {1: {"insert": 23, "update": 24, "delete": 25}, 2: {"insert": 30, "update": 31, "delete": 32}}
_CONTROL_CODES = {"gtid": 33, "xid": 16, "query": 2}
_KIND_OF_OP = {
    Op.INSERT: "insert",
    Op.READ: "insert",
    Op.UPDATE: "update",
    Op.DELETE: "delete",
    Op.BEGIN: "gtid",
    Op.COMMIT: "xid",
    Op.DDL: "query",
    Op.TRUNCATE: "query",
}
_HEADER = (
    "logtype",
    "eventtype",
    "eventtypestr",
    "db",
    "table",
    "localip",
    "localport",
    "begintime",
    "gtid",
    "event_index",
)
_KNOWN = frozenset(_HEADER) | {"where", "field", "xid", "sql"}
_MARIADB_GTID = re.compile(r"^\d+-\d+-\d+$")
_TXN_QUERIES = {"BEGIN": Op.BEGIN, "START TRANSACTION": Op.BEGIN, "COMMIT": Op.COMMIT}


class TdsqlBinlogJson(JsonCodec):
    name = "tdsql-binlog-json"
    own_catalog = True  # rows are positional: DDL in this stream names later rows
    description = (
        "TencentDB for MariaDB / TDSQL binlog subscription JSON: positional SQL-literal rows "
        "(names and types from the schema catalog), GTID/XID transaction markers, DDL queries"
    )
    capabilities = Capabilities(gtid=True, transactions=True, ddl=True)
    options = (
        Option(
            "unknown_table",
            str,
            "error",
            "Rows of a table the schema catalog does not know: 'error' (a DecodeError; hosts "
            "dead-letter the message) or 'positional' (columns named @1, @2, ... and values "
            "typed by their literal, schema unknown).",
            choices=("error", "positional"),
        ),
        Option(
            "row_event_version",
            int,
            1,
            "Binlog row-event version whose codes the encoder writes in 'eventtype' "
            "(1: 23/24/25 as MariaDB writes them; 2: 30/31/32 as MySQL 5.6+ writes them).",
            choices=(1, 2),
        ),
    )

    def configure(self) -> None:
        self._form = SqlLiteralForm(self.opts.source_timezone)

    @classmethod
    def sniff(cls, message: Any) -> bool:
        return isinstance(message, dict) and message.get("logtype") == "mysqlbinlog" and "eventtypestr" in message

    # -- decode ------------------------------------------------------------
    def decode_message(self, obj: dict, record: Record) -> list[ChangeEvent]:
        logtype = obj["logtype"]
        if logtype != "mysqlbinlog":
            raise DecodeError(f"logtype is {logtype!r}, expected 'mysqlbinlog'", format=self.name)
        kind = obj["eventtypestr"]
        if kind not in _KINDS:
            raise DecodeError(f"unknown eventtypestr {kind!r} (expected {', '.join(_KINDS)})", format=self.name)
        op, codes = _KINDS[kind]
        code = obj["eventtype"]
        if not is_int(code) or code not in codes:
            raise DecodeError(
                f"eventtype {code!r} does not match eventtypestr {kind!r} "
                f"(expected {' or '.join(map(str, sorted(codes)))})",
                format=self.name,
            )
        database = self._str(obj, "db", optional=not op.is_row)
        table = self._str(obj, "table", optional=not op.is_row)
        gtid = self._str(obj, "gtid", optional=True)
        begintime = obj.get("begintime")
        if begintime is not None and not is_int(begintime):
            raise DecodeError(f"begintime must be epoch seconds, got {begintime!r}", format=self.name)
        extra: dict[str, Any] = {"eventtype": code, "eventtypestr": kind, "keys": tuple(obj)}
        for k in ("localip", "localport", "event_index"):
            if k in obj:
                extra[k] = obj[k]
        unknown = {k: v for k, v in obj.items() if k not in _KNOWN}
        if unknown:
            extra["fields"] = unknown
        source = SourcePosition(
            db_type="mariadb" if gtid and _MARIADB_GTID.match(gtid) else "mysql",
            database=database,
            table=table,
            gtid=gtid,
        )
        event = ChangeEvent(
            op=op,
            source=source,
            ts_ms=begintime * 1000 if begintime is not None else None,
            timezone=self.opts.source_timezone,
            origin=self.name,
            extra=extra,
        )
        if op.is_row:
            assert database is not None and table is not None  # required for rows (_str raised otherwise)
            self._rows(event, obj, database, table)
        elif op is Op.COMMIT:
            xid = obj["xid"]
            if not isinstance(xid, (str, int)) or isinstance(xid, bool):
                raise DecodeError(f"xid must be a string, got {xid!r}", format=self.name)
            source.txid = str(xid)
            extra["xid"] = xid
        elif op is Op.DDL:
            self._query(event, obj)
        return [event]

    def _str(self, obj: dict, name: str, optional: bool = False) -> str | None:
        value = obj.get(name) if optional else obj[name]
        if value is None and optional:
            return None
        if not isinstance(value, str):
            raise DecodeError(f"field {name!r} must be a string, got {value!r}", format=self.name)
        return value

    def _rows(self, event: ChangeEvent, obj: dict, database: str, table: str) -> None:
        op = event.op
        where = self._array(obj, "where")
        field = self._array(obj, "field")
        if op is Op.INSERT and (not field or where):
            raise DecodeError("an insert needs values in 'field' and none in 'where'", format=self.name)
        if op is Op.DELETE and (not where or field):
            raise DecodeError("a delete needs values in 'where' and none in 'field'", format=self.name)
        if op is Op.UPDATE and (not where or len(where) != len(field)):
            raise DecodeError(
                f"an update needs as many values in 'where' as in 'field' (got {len(where)} and {len(field)})",
                format=self.name,
            )
        n = len(field or where)
        schema = self.catalog.get(database, table)
        if schema is None:
            if self.opts.unknown_table == "error":
                raise DecodeError(
                    f"table {database}.{table} is not in the schema catalog, so its {n} positional values "
                    "cannot be named (give a schema file, let its CREATE TABLE pass through the stream, "
                    "or set unknown_table: positional)",
                    format=self.name,
                )
            names = tuple(f"@{i}" for i in range(1, n + 1))
            event.before, event.after = (
                {
                    k: literal_value(parse_literal(v), None) if isinstance(v, str) else v
                    for k, v in zip(names, arr, strict=True)
                }
                if arr
                else None
                for arr in (where, field)
            )
        else:
            if len(schema.columns) != n:
                raise DecodeError(
                    f"{database}.{table} has {len(schema.columns)} columns in the schema catalog but the message "
                    f"has {n} values (the catalog is out of date: feed it the table's DDL)",
                    format=self.name,
                )
            names = schema.names
            event.before = dict(zip(names, where, strict=True)) if where else None
            event.after = dict(zip(names, field, strict=True)) if field else None
            event.schema = schema
            event.pk = schema.primary_key
            event.values = self._form
        if op is Op.UPDATE:
            after = event.after
            assert after is not None  # an update has values in 'field' (checked above)
            # Not strict: a catalog repeating a column name collapses it in ``after`` (shorter wins, as before).
            event.changed = (
                tuple(k for (k, a), b in zip(after.items(), where, strict=False) if a != b) if schema else None
            )

    def _array(self, obj: dict, name: str) -> list:
        arr = obj.get(name)
        if arr is None:
            return []
        if not isinstance(arr, list):
            raise DecodeError(f"{name!r} must be an array of SQL literals, got {type(arr).__name__}", format=self.name)
        for i, v in enumerate(arr):
            if isinstance(v, str):
                try:
                    parse_literal(v)  # syntax now, so a broken message fails here, not downstream
                except LiteralError as exc:
                    raise DecodeError(f"{name}[{i}]: {exc}", format=self.name) from None
            elif v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool)):
                raise DecodeError(f"{name}[{i}] must be a SQL literal string, got {v!r}", format=self.name)
        return arr

    def _query(self, event: ChangeEvent, obj: dict) -> None:
        sql = obj["sql"]
        if not isinstance(sql, str):
            raise DecodeError(f"field 'sql' must be a string, got {sql!r}", format=self.name)
        word = " ".join(sql.strip().rstrip(";").upper().split())
        if word in _TXN_QUERIES:  # statement-based transaction markers
            event.op = _TXN_QUERIES[word]
            event.extra["sql"] = sql
            return
        kind = classify_ddl(sql)
        event.op = Op.TRUNCATE if kind == "TRUNCATE" else Op.DDL
        event.ddl = sql
        event.ddl_kind = kind
        self.catalog.observe(event)

    # -- encode ------------------------------------------------------------
    def encode_message(self, event: ChangeEvent) -> Any:
        kind = _KIND_OF_OP.get(event.op)
        if kind is None:
            return None  # heartbeats and watermarks have no binlog event
        mine = event.origin == self.name
        extra = event.extra if mine else {}
        if mine and extra.get("eventtypestr") == "query" and event.op in (Op.BEGIN, Op.COMMIT):
            kind = "query"
        src = event.source
        code = extra.get("eventtype") if mine and extra.get("eventtypestr") == kind else None
        if code is None:
            code = _ROW_CODES[self.opts.row_event_version][kind] if event.op.is_row else _CONTROL_CODES[kind]
        out: dict[str, Any] = {
            "logtype": "mysqlbinlog",
            "eventtype": code,
            "eventtypestr": kind,
            "db": src.database or "",
            "table": src.table or "",
        }
        for k in ("localip", "localport"):
            if k in extra:
                out[k] = extra[k]
        if event.ts_ms is not None:
            out["begintime"] = event.ts_ms // 1000
        out["gtid"] = src.gtid
        if "event_index" in extra:
            out["event_index"] = extra["event_index"]
        if event.op.is_row:
            out["where"], out["field"] = self._encode_rows(event)
        elif kind == "xid":
            out["xid"] = extra["xid"] if "xid" in extra and str(extra["xid"]) == src.txid else (src.txid or "")
        elif kind == "query":
            out["sql"] = event.ddl if event.ddl is not None else _fallback_sql(event, extra)
        if mine:
            out.update(extra.get("fields", {}))
            out = in_original_order(out, extra.get("keys", ()), empty=(None, []))
        return out

    def _encode_rows(self, event: ChangeEvent) -> tuple[list, list]:
        op = event.op
        tz = self.opts.source_timezone
        raw = passthrough(event, self._form.name, tz)
        if not raw:
            event.typed()
        before = event.before if op in (Op.UPDATE, Op.DELETE) else None
        after = event.after if op is not Op.DELETE else None
        where = f"{event.source.database}.{event.source.table}"
        if op is not Op.INSERT and op is not Op.READ and before is None:
            raise EncodeError(f"{op.value} of {where} without the old row: 'where' needs it", format=self.name)
        if op is Op.UPDATE and before is not None and after is not None and len(before) < len(after):
            before = {**after, **before}  # only changed columns were given: the rest are unchanged
        schema = event.schema or self.catalog.get(event.source.database, event.source.table)
        arrays: list[list] = []
        for image in (before, after):
            if not image:
                arrays.append([])
                continue
            order = _order(schema, image)
            missing = [n for n in order if n not in image]
            if missing:
                raise EncodeError(
                    f"row of {where} lacks column {missing[0]!r}: positional arrays need every column",
                    format=self.name,
                )
            image = {n: image[n] for n in order}
            if raw:
                arrays.append(list(image.values()))
            else:
                arrays.append(["NULL" if v is None else v for v in render_image(event, image, tz, to_literal).values()])
        return arrays[0], arrays[1]


def _order(schema: TableSchema | None, image: dict[str, Any]) -> list[str]:
    """Column order of the positional arrays: the schema's, then columns it lacks."""
    if schema is None:
        return list(image)
    names = list(schema.names)
    known = set(names)
    return names + [n for n in image if n not in known]


def _fallback_sql(event: ChangeEvent, extra: dict) -> str:
    if "sql" in extra:
        return extra["sql"]
    if event.op is Op.BEGIN:
        return "BEGIN"
    if event.op is Op.COMMIT:
        return "COMMIT"
    if event.op is Op.TRUNCATE and event.source.table:
        return f"TRUNCATE TABLE `{event.source.database}`.`{event.source.table}`"
    raise EncodeError(f"{event.op.value} event without DDL text", format="tdsql-binlog-json")
