"""CloudCanal JSON (CloudCanal's default MQ message format).

A Canal relative with its own field names: ``action`` (INSERT/UPDATE/DELETE,
or the DDL type), ``before``/``data`` row lists (a message may batch several
rows), ``db``/``schema``/``table``, ``dbValType`` (MySQL type text) and
``jdbcType`` per column, ``pks``, ``execTs``/``sendTs`` (ms), ``isDdl`` and
``sql``, and for DDL ``tableChanges`` with the table's columns after the
change. ``entryType`` TRANSACTIONEND marks a commit.

Observed deviations handled: the DDL flag is ``isDdl`` in the English
document but ``ddl`` in the Chinese one and in a consumed message; both are
read and the spelling is kept for reproduction.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import orjson

from cdc_smt.transforms.errors import DecodeError
from cdc_smt.transforms.formats.base import Capabilities, JsonCodec, describe_error, guard, in_original_order, is_int
from cdc_smt.transforms.model import ChangeEvent, Column, Op, Record, SourcePosition, TableSchema
from cdc_smt.transforms.options import Option
from cdc_smt.transforms.sqltext import classify_ddl, event_ms, text_images
from cdc_smt.transforms.types import Kind, TypeParseError, from_text, parse_type

_DML: dict[str | None, Op] = {"INSERT": Op.INSERT, "UPDATE": Op.UPDATE, "DELETE": Op.DELETE}
_ACTIONS = {Op.INSERT: "INSERT", Op.READ: "INSERT", Op.UPDATE: "UPDATE", Op.DELETE: "DELETE"}


class CloudCanalForm:
    """CloudCanal row values: JSON scalars (the documents show MySQL text strings;
    numbers and booleans are accepted too), typed by the column's MySQL type."""

    name = "cloudcanal-json"

    def to_python(self, column: Column, raw: Any) -> Any:
        if isinstance(raw, str):
            return from_text(column.mysql, raw)
        mtype = column.mysql
        k = mtype.kind
        if isinstance(raw, bool):
            return raw if k is Kind.BIT and mtype.length == 1 else int(raw)
        if isinstance(raw, (int, float)):
            if k is Kind.DECIMAL:
                return Decimal(str(raw))
            if k is Kind.FLOAT:
                return float(raw)
            if k in (Kind.STRING, Kind.JSON, Kind.ENUM, Kind.SET):
                return orjson.dumps(raw).decode()
            return from_text(mtype, str(raw))
        if isinstance(raw, (dict, list)) and k is Kind.JSON:
            return orjson.dumps(raw).decode()
        raise ValueError(f"column {column.name!r}: unexpected {type(raw).__name__} value for {mtype.text()}")


CLOUDCANAL_VALUES = CloudCanalForm()


class CloudCanalJson(JsonCodec):
    name = "cloudcanal-json"
    description = (
        "CloudCanal JSON: batched rows with dbValType/jdbcType per column, DDL with tableChanges, TRANSACTIONEND"
    )
    capabilities = Capabilities(column_types=True, primary_key=True, transactions=True, ddl=True)
    options = (
        Option(
            "transaction_end",
            bool,
            False,
            "Write commit events as entryType TRANSACTIONEND messages. Off by default: the "
            "document does not show that message, so commits are written only when they came "
            "from CloudCanal itself.",
        ),
    )

    def configure(self) -> None:
        self._schemas: dict[tuple, TableSchema] = {}

    @classmethod
    def sniff(cls, message: Any) -> bool:
        return (
            isinstance(message, dict)
            and "entryType" in message
            and "action" in message
            and "db" in message
            and ("isDdl" in message or "ddl" in message or message.get("entryType") == "TRANSACTIONEND")
        )

    # -- decode ------------------------------------------------------------
    def decode_message(self, obj: dict, record: Record) -> list[ChangeEvent]:
        entry = obj["entryType"]
        if entry not in ("ROWDATA", "TRANSACTIONEND"):
            raise DecodeError(f"unknown entryType {entry!r} (expected ROWDATA or TRANSACTIONEND)", format=self.name)
        ddl_key = "isDdl" if "isDdl" in obj else "ddl"
        is_ddl = obj.get(ddl_key, False)
        if not isinstance(is_ddl, bool):
            raise DecodeError(f"{ddl_key} must be true or false, got {is_ddl!r}", format=self.name)
        action = obj["action"] if entry == "ROWDATA" else obj.get("action")
        if action is not None and not isinstance(action, str):
            raise DecodeError(f"action must be a string, got {action!r}", format=self.name)
        database = self._opt(obj, "db", str)
        schema_name = self._opt(obj, "schema", str)
        source = SourcePosition(
            db_type="mysql",
            database=database,
            schema=schema_name if schema_name != database else None,
            table=self._opt(obj, "table", str),
            sequence_id=None if obj.get("bid") is None else str(self._opt(obj, "bid", int)),
        )
        extra: dict[str, Any] = {"keys": tuple(obj)}
        if ddl_key != "isDdl":
            extra["ddl_key"] = ddl_key
        if obj.get("sql") not in (None, "") and not is_ddl:
            extra["sql"] = obj["sql"]
        base = dict(
            source=source,
            ts_ms=self._opt(obj, "execTs", int),
            processing_ts_ms=self._opt(obj, "sendTs", int),
            timezone=self.opts.source_timezone,
            origin=self.name,
        )
        if entry == "TRANSACTIONEND":
            extra["action"] = action
            return [ChangeEvent(op=Op.COMMIT, extra=extra, **base)]
        types = self._types(obj)
        if is_ddl:
            return [self._ddl(obj, action, types, extra, base)]
        op = _DML.get(action)
        if op is None:
            raise DecodeError(f"unknown action {action!r} (expected INSERT, UPDATE or DELETE)", format=self.name)
        schema = self._schema(types, obj.get("pks"), source)
        return self._rows(obj, op, schema, extra, base)

    def _opt(self, obj: dict, name: str, typ: type) -> Any:
        v = obj.get(name)
        if v is not None and (not isinstance(v, typ) or isinstance(v, bool)):
            raise DecodeError(
                f"field {name!r} must be a {'string' if typ is str else 'number'}, got {v!r}", format=self.name
            )
        return v

    def _types(self, obj: dict) -> dict[str, str] | None:
        types = obj.get("dbValType")
        if types is None:
            return None
        if not isinstance(types, dict) or not all(isinstance(v, str) for v in types.values()):
            raise DecodeError("dbValType must map column names to MySQL type names", format=self.name)
        jdbc = obj.get("jdbcType")
        if jdbc is not None and (not isinstance(jdbc, dict) or not all(is_int(v) for v in jdbc.values())):
            raise DecodeError("jdbcType must map column names to JDBC type codes", format=self.name)
        return types

    def _schema(self, types: dict[str, str] | None, pks: Any, source: SourcePosition) -> TableSchema | None:
        """The schema from dbValType (cached per type map), key from pks or the catalog."""
        if pks is not None and (not isinstance(pks, list) or not all(isinstance(p, str) for p in pks)):
            raise DecodeError("pks must be a list of column names", format=self.name)
        if types is None:
            return self.catalog_schema(source.database, source.table)
        pk = tuple(pks or ())
        if not pk:
            known = self.catalog_schema(source.database, source.table)
            if known is not None:
                pk = tuple(p for p in known.primary_key if p in types)
        key = (tuple(types.items()), pk)
        schema = self._schemas.get(key)
        if schema is None:
            for name, t in types.items():
                try:
                    parse_type(t)
                except TypeParseError:
                    raise DecodeError(f"dbValType of {name!r}: unknown MySQL type {t!r}", format=self.name) from None
            cols = tuple(Column(n, t, nullable=n not in pk, primary_key=n in pk) for n, t in types.items())
            schema = TableSchema(columns=cols, primary_key=pk)
            if len(self._schemas) > 4096:
                self._schemas.clear()
            self._schemas[key] = schema
        return schema

    def _rows(self, obj: dict, op: Op, schema: TableSchema | None, extra: dict, base: dict) -> list[ChangeEvent]:
        data = _row_list(obj, "data")
        before = _row_list(obj, "before")
        if op is Op.DELETE and not data and before:
            data, before = before, []
            extra["delete_in"] = "before"
        if not data:
            raise DecodeError(f"{op.value} message without rows in 'data'", format=self.name)
        if op is Op.UPDATE:
            if len(before) != len(data):
                raise DecodeError(
                    f"UPDATE with {len(data)} rows in 'data' but {len(before)} in 'before'", format=self.name
                )
        elif before:
            raise DecodeError(f"{op.value} message with rows in 'before'", format=self.name)
        if "jdbcType" in obj:
            extra["jdbcType"] = obj["jdbcType"]
            extra["dbValType"] = obj.get("dbValType")
        pk = schema.primary_key if schema is not None else ()
        _keep_pks(extra, obj, pk)
        events = []
        for i, row in enumerate(data):
            old = before[i] if op is Op.UPDATE else None
            new = row if op is not Op.DELETE else None
            events.append(
                ChangeEvent(
                    op=op,
                    before=old if op is Op.UPDATE else (row if op is Op.DELETE else None),
                    after=new,
                    changed=tuple(k for k, v in row.items() if k not in old or old[k] != v)
                    if old is not None and len(old) == len(row)
                    else None,
                    schema=schema,
                    pk=pk,
                    values=CLOUDCANAL_VALUES if schema is not None else None,
                    extra=extra if len(data) == 1 else {**extra, "batch": len(data)},
                    **{**base, "source": _at_row(base["source"], i, len(data))},
                )
            )
        return events

    def _ddl(self, obj: dict, action: str | None, types: dict[str, str] | None, extra: dict, base: dict) -> ChangeEvent:
        sql = obj.get("sql")
        if not isinstance(sql, str) or not sql:
            raise DecodeError("a DDL message needs its statement in 'sql'", format=self.name)
        schema = None
        changes = obj.get("tableChanges")
        if changes is not None:
            schema = self._table_changes(changes)
            extra["tableChanges"] = changes
        elif types:
            schema = self._schema(types, obj.get("pks"), base["source"])
        if "jdbcType" in obj:
            extra["jdbcType"] = obj["jdbcType"]
            extra["dbValType"] = obj.get("dbValType")
        _keep_pks(extra, obj, schema.primary_key if schema is not None else ())
        kind = classify_ddl(sql)
        return ChangeEvent(
            op=Op.TRUNCATE if kind == "TRUNCATE" else Op.DDL,
            ddl=sql,
            ddl_kind=action or kind,
            schema=schema,
            pk=schema.primary_key if schema is not None else (),
            extra=extra,
            **base,
        )

    @guard(DecodeError, lambda codec, changes, exc: f"tableChanges is not a table description ({describe_error(exc)})")
    def _table_changes(self, changes: Any) -> TableSchema:
        table = changes["table"]
        cols = sorted(table["columns"], key=lambda c: c.get("position", 0))
        pk = tuple(table.get("primaryKeyColumnNames") or ())
        columns = []
        for c in cols:
            t = c["typeExpression"]
            parse_type(t)
            columns.append(Column(c["name"], t, nullable=c["name"] not in pk, primary_key=c["name"] in pk))
        return TableSchema(columns=tuple(columns), primary_key=pk)

    # -- encode ------------------------------------------------------------
    def encode_message(self, event: ChangeEvent) -> Any:
        op = event.op
        mine = event.origin == self.name
        extra = event.extra if mine else {}
        if op is Op.COMMIT:
            if not (mine or self.opts.transaction_end):
                return None
            return self._finish(
                self._common(event, extra, extra.get("action") or "TRANSACTIONEND", "TRANSACTIONEND", False, None),
                extra,
                mine,
            )
        if op is Op.DDL or op is Op.TRUNCATE:
            return self._encode_ddl(event, extra, mine)
        action = _ACTIONS.get(op)
        if action is None:
            return None  # BEGIN, heartbeats and watermarks have no CloudCanal message
        before, after = text_images(event, CLOUDCANAL_VALUES.name, self.opts.source_timezone)
        row = after if op is not Op.DELETE else before
        out = self._common(event, extra, action, "ROWDATA", False, row)
        if op is Op.DELETE and extra.get("delete_in") == "before":
            out["before"], out["data"] = [row], []
        else:
            out["before"] = [before] if op is Op.UPDATE and before is not None else []
            out["data"] = [row] if row is not None else []
        out["sql"] = extra.get("sql", "")
        return self._finish(out, extra, mine)

    def _encode_ddl(self, event: ChangeEvent, extra: dict, mine: bool) -> dict[str, Any]:
        ddl = event.ddl or ""
        action = event.ddl_kind if mine and event.ddl_kind else classify_ddl(ddl)
        out = self._common(event, extra, action, "ROWDATA", True, None)
        out["before"], out["data"] = [], []
        out["sql"] = ddl
        schema = event.schema
        if schema is None and action in ("CREATE", "ALTER"):
            schema = self.catalog_schema(event.source.database, event.source.table)  # the table after this DDL
        if (
            mine
            and "tableChanges" in extra
            and schema is not None
            and self._table_changes(extra["tableChanges"]) == schema
        ):
            out["tableChanges"] = extra["tableChanges"]
        elif schema is not None:
            out["tableChanges"] = _table_changes_of(schema, action, self._jdbc(event, extra, schema))
        return self._finish(out, extra, mine)

    def _common(
        self, event: ChangeEvent, extra: dict, action: str, entry: str, is_ddl: bool, row: dict | None
    ) -> dict[str, Any]:
        src = event.source
        schema = event.schema
        if schema is None:
            schema = self.catalog_schema(src.database, src.table)
        names = list(row) if row is not None else (list(schema.names) if schema is not None else [])
        by_name = schema.by_name if schema is not None else {}
        jdbc = self._jdbc(event, extra, schema)
        return {
            "action": action,
            "before": [],
            "bid": _bid(src.sequence_id),
            "data": [],
            "db": src.database,
            "dbValType": {n: by_name[n].type for n in names if n in by_name},
            extra.get("ddl_key", "isDdl"): is_ddl,
            "entryType": entry,
            "execTs": event.ts_ms,
            "jdbcType": {n: jdbc[n] for n in names if n in jdbc},
            "pks": extra["pks"] if "pks" in extra and tuple(extra.get("pk", ())) == event.pk else list(event.pk),
            "schema": src.schema or src.database,
            "sendTs": event.processing_ts_ms
            if event.processing_ts_ms is not None or event.origin == self.name
            else event_ms(event),
            "sql": "",
            "table": src.table,
        }

    def _jdbc(self, event: ChangeEvent, extra: dict, schema: TableSchema | None = None) -> dict[str, int]:
        """JDBC codes per column: the original ones while a column's type is unchanged."""
        schema = schema or event.schema
        if schema is None:
            return {}
        orig_codes = extra.get("jdbcType") or {}
        orig_types = extra.get("dbValType") or {}
        out = {}
        for c in schema.columns:
            code = orig_codes.get(c.name)
            out[c.name] = code if code is not None and orig_types.get(c.name) == c.type else c.mysql.jdbc_type()
        return out

    @staticmethod
    def _finish(out: dict[str, Any], extra: dict, mine: bool) -> dict[str, Any]:
        """Keys in the original message's order and presence when reproducing it."""
        return in_original_order(out, extra.get("keys") if mine else None, empty=(None, [], {}, ""))


def _keep_pks(extra: dict, obj: dict, pk: tuple[str, ...]) -> None:
    """Remember ``pks`` as sent (often empty even when tableChanges names the key)."""
    if "pks" in obj:
        extra["pks"] = obj["pks"]
        extra["pk"] = pk


def _row_list(obj: dict, name: str) -> list[dict]:
    rows = obj.get(name)
    if rows is None:
        return []
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise DecodeError(f"{name!r} must be a list of row objects", format="cloudcanal-json")
    return rows


def _at_row(source: SourcePosition, i: int, n: int) -> SourcePosition:
    if n == 1:
        return source
    import msgspec

    return msgspec.structs.replace(source, row=i)


def _bid(sequence_id: str | None) -> int:
    if sequence_id is not None and sequence_id.lstrip("-").isdigit():
        return int(sequence_id)
    return 0


def _table_changes_of(schema: TableSchema, action: str, jdbc: dict[str, int]) -> dict[str, Any]:
    return {
        "table": {
            "columns": [
                {
                    "jdbcType": jdbc.get(c.name, c.mysql.jdbc_type()),
                    "name": c.name,
                    "position": i,
                    "typeExpression": c.type,
                    "typeName": c.mysql.base,
                }
                for i, c in enumerate(schema.columns)
            ],
            "primaryKeyColumnNames": list(schema.primary_key),
        },
        "type": action,
    }
