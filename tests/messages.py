"""Vendor messages the tests build by hand (one builder per format, shared by the suites)."""

from __future__ import annotations

from typing import Any


def tdsql_message(kind: str, code: int, **fields: Any) -> dict[str, Any]:
    """A TDSQL binlog JSON message of table ``shop.items``: ``eventtypestr`` ``kind``,
    ``eventtype`` ``code``; ``fields`` add or replace keys (``field``, ``where``, ``sql``...)."""
    base = {
        "logtype": "mysqlbinlog", "eventtype": code, "eventtypestr": kind, "db": "shop", "table": "items",
        "localip": "10.0.0.1", "localport": 3306, "begintime": 1511350073, "gtid": "0-2670193178-726233561", "event_index": "4",
    }  # fmt: skip
    base.update(fields)
    return base
