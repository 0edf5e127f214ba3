"""A deterministic multi-table CDC workload for the any-to-any tests.

Two tables of a small shop covering every MySQL type family the type model
knows, with inserts, updates (one changing the primary key), deletes, NULLs,
unicode, 65-digit decimals, zero and far-future dates and a CREATE TABLE DDL
per table. Events are typed (``transforms/types.py``).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from cdc_smt.transforms.model import ChangeEvent, Column, Op, SourcePosition, TableSchema
from cdc_smt.transforms.types import InvalidTemporal

DATABASE = "shop"

CUSTOMERS = TableSchema(
    columns=(
        Column("id", "int", nullable=False, primary_key=True),
        Column("name", "varchar(64)", nullable=False),
        Column("email", "varchar(255)"),
        Column("vip", "tinyint(1)"),
        Column("balance", "decimal(12,2)"),
        Column("score", "double"),
        Column("born", "date"),
        Column("created", "datetime(3)"),
        Column("updated", "timestamp(6)"),
    ),
    primary_key=("id",),
)

ORDERS = TableSchema(
    columns=(
        Column("id", "bigint unsigned", nullable=False, primary_key=True),
        Column("customer_id", "int"),
        Column("amount", "decimal(65,30)"),
        Column("qty", "smallint"),
        Column("weight", "float"),
        Column("status", "enum('new','paid','shipped')"),
        Column("tags", "set('gift','express','fragile')"),
        Column("flags", "bit(8)"),
        Column("paid", "bit(1)"),
        Column("note", "text"),
        Column("payload", "json"),
        Column("photo", "varbinary(64)"),
        Column("ship_date", "date"),
        Column("slot", "time(6)"),
        Column("made", "year"),
        Column("placed", "datetime"),
    ),
    primary_key=("id",),
)

DDL = {
    "customers": (
        "CREATE TABLE `customers` (`id` int NOT NULL, `name` varchar(64) NOT NULL, `email` varchar(255), "
        "`vip` tinyint(1), `balance` decimal(12,2), `score` double, `born` date, `created` datetime(3), "
        "`updated` timestamp(6) NULL, PRIMARY KEY (`id`))"
    ),
    "orders": (
        "CREATE TABLE `orders` (`id` bigint unsigned NOT NULL, `customer_id` int, `amount` decimal(65,30), "
        "`qty` smallint, `weight` float, `status` enum('new','paid','shipped'), "
        "`tags` set('gift','express','fragile'), `flags` bit(8), `paid` bit(1), `note` text, `payload` json, "
        "`photo` varbinary(64), `ship_date` date, `slot` time(6), `made` year, `placed` datetime, "
        "PRIMARY KEY (`id`))"
    ),
}
SCHEMAS = {"customers": CUSTOMERS, "orders": ORDERS}


def _customer(i: int, **over: Any) -> dict[str, Any]:
    row = {
        "id": i,
        "name": ["Ada", "Lin Wei 林伟", "Zoë 🎉", 'O\'Brien "Bob"'][i % 4],
        "email": None if i % 3 == 0 else f"user{i}@example.com",
        "vip": i % 2,
        "balance": Decimal("1234567890.12") if i == 2 else Decimal(f"{i * 10}.05"),
        "score": 0.1 * i,
        "born": dt.date(1990 + i, 1 + i, 2) if i != 3 else None,
        "created": dt.datetime(2024, 2, 29, 23, 59, 59, 123000),
        "updated": dt.datetime(2024, 3, 1, 8, 0, 0, 654321),
    }
    row.update(over)
    return row


def _order(i: int, **over: Any) -> dict[str, Any]:
    row = {
        "id": 18446744073709551615 if i == 9 else i,
        "customer_id": i % 3 + 1,
        "amount": Decimal("12345678901234567890123456789012345.123456789012345678901234567890")
        if i == 1
        else Decimal(f"-{i}.5").scaleb(0),
        "qty": -32768 if i == 2 else i,
        "weight": 0.5 * i,
        "status": ["new", "paid", "shipped"][i % 3],
        "tags": ["", "gift", "gift,fragile", "gift,express,fragile"][i % 4],
        "flags": 255 if i == 1 else i,
        "paid": bool(i % 2),
        "note": None if i == 3 else f"note {i}: tab\there, newline\nhere, 数据",
        "payload": '{"a": 1, "b": [true, null]}' if i % 2 else None,
        "photo": bytes(range(i * 7 % 256, i * 7 % 256 + 8)) if i != 3 else b"\x00\xff\x00",
        "ship_date": InvalidTemporal("0000-00-00") if i == 2 else dt.date(9999, 12, 31),
        "slot": dt.timedelta(hours=-838, minutes=-59, seconds=-59)
        if i == 1
        else dt.timedelta(hours=i, microseconds=250),
        "made": 2155 if i == 1 else 1901 + i,
        "placed": dt.datetime(1000, 1, 1, 0, 0, 0) if i == 1 else dt.datetime(2023, 12, 31, 23, 59, 59),
    }
    row.update(over)
    return row


def events(timezone: str = "UTC") -> list[ChangeEvent]:
    """The workload: DDL, then interleaved row changes on both tables."""
    ts = [1_700_000_000_000]

    def src(table: str) -> SourcePosition:
        return SourcePosition(db_type="mysql", database=DATABASE, table=table)

    def ev(op: Op, table: str, before=None, after=None) -> ChangeEvent:
        ts[0] += 1000
        schema = SCHEMAS[table]
        changed = None
        if op is Op.UPDATE:
            changed = tuple(c for c in schema.names if before.get(c) != after.get(c))
        return ChangeEvent(
            op=op,
            source=src(table),
            before=before,
            after=after,
            changed=changed,
            schema=schema,
            pk=schema.primary_key,
            ts_ms=ts[0],
            timezone=timezone,
        )

    def ddl(table: str) -> ChangeEvent:
        ts[0] += 1000
        return ChangeEvent(
            op=Op.DDL,
            source=src(table),
            ddl=DDL[table],
            ddl_kind="CREATE",
            schema=SCHEMAS[table],
            pk=SCHEMAS[table].primary_key,
            ts_ms=ts[0],
            timezone=timezone,
        )

    c = {i: _customer(i) for i in range(1, 5)}
    o = {i: _order(i) for i in (1, 2, 3, 9)}
    out = [ddl("customers"), ddl("orders")]
    out += [ev(Op.INSERT, "customers", None, row) for row in c.values()]
    out += [ev(Op.INSERT, "orders", None, row) for row in o.values()]
    # updates: a value change, NULL to value, value to NULL, a primary-key change
    out.append(ev(Op.UPDATE, "customers", c[1], _customer(1, email=None, balance=Decimal("-0.01"))))
    out.append(ev(Op.UPDATE, "customers", c[3], _customer(3, email="x@y.z", born=dt.date(2000, 2, 29))))
    out.append(ev(Op.UPDATE, "orders", o[2], _order(2, status="shipped", note=None, tags="express")))
    out.append(ev(Op.UPDATE, "orders", o[3], _order(30)))  # primary key 3 -> 30
    out.append(ev(Op.DELETE, "customers", c[4], None))
    out.append(ev(Op.DELETE, "orders", o[9], None))
    return out
