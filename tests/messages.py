"""What the test suites build by hand and share: vendor messages, a fixed schema catalog."""

from __future__ import annotations

from typing import Any


def tdsql_message(kind: str, code: int, **fields: Any) -> dict[str, Any]:
    """A TDSQL binlog JSON message of table ``shop.items``: ``eventtypestr`` ``kind``,
    ``eventtype`` ``code``; ``fields`` add or replace keys (``field``, ``where``, ``sql``...)."""
    base = {
        "logtype": "mysqlbinlog", "eventtype": code, "eventtypestr": kind, "db": "shop", "table": "items",
        "localip": "10.0.0.1", "localport": 3306, "begintime": 1511350073, "gtid": "0-2670193178-726233561",
        "event_index": "4",
    }  # fmt: skip
    base.update(fields)
    return base


class Catalog:
    """The catalog interface codecs use, ``get(database, table)``, over a fixed mapping."""

    def __init__(self, tables: dict[tuple[str | None, str], Any]) -> None:
        self.tables = tables

    def get(self, database: str | None, table: str | None) -> Any:
        return self.tables.get((database, table))
