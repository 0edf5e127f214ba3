"""``merge_shards``: sharded tables (``orders_0..orders_63``, ``db_01.t``) become one logical table."""

from __future__ import annotations

import re

import msgspec

from cdc_smt.transforms.errors import ConfigError
from cdc_smt.transforms.model import ChangeEvent
from cdc_smt.transforms.options import Option, Options
from cdc_smt.transforms.smt.base import Result, Transform, check_regex
from cdc_smt.transforms.smt.route import java_replacement

_Target = tuple[str | None, str, str] | None  # (logical database, logical table, physical "db.table")


class MergeShards(Transform):
    """Rename physical shards to their logical table.

    `pattern` must match the whole `database.table` of a shard; `database` and
    `table` are the logical names, with the pattern's groups as `$1` or `\\1`
    (omit one to keep it). Row events, DDL and tombstones are renamed (DDL text
    is not rewritten). Rows of different shards may share a primary key: set
    `key_field` to add the physical `database.table` to the Kafka key so keys
    stay unique (Debezium's `key.enforce.uniqueness`).
    """

    name = "merge_shards"
    known_as = "Debezium ByLogicalTableRouter"
    scope = "all"
    options = (
        Option(
            "pattern",
            str,
            doc=r"Regex over the physical `database.table`, e.g. `(shop)_\d+\.(orders)_\d+`.",
            check=check_regex,
        ),
        Option("database", str, None, "Logical database, e.g. `$1` (default: unchanged)."),
        Option("table", str, None, "Logical table, e.g. `$2` (default: unchanged)."),
        Option(
            "key_field",
            str,
            None,
            "Add the physical `database.table` to the Kafka key under this name "
            "(Debezium: `__dbz__physicalTableIdentifier`).",
        ),
    )

    def configure(self, opts: Options) -> None:
        if opts.database is None and opts.table is None:
            raise ConfigError("merge_shards needs database and/or table", f"{self.path}.table")
        self._rx = re.compile(opts.pattern)
        self._db = java_replacement(opts.database) if opts.database is not None else None
        self._table = java_replacement(opts.table) if opts.table is not None else None
        for name, repl in (("database", self._db), ("table", self._table)):
            if repl is not None:
                try:
                    self._rx.sub(repl, "")  # group references are checked against the pattern
                    _probe_groups(self._rx, repl)
                except (re.error, IndexError) as exc:
                    raise ConfigError(
                        f"bad replacement {getattr(opts, name)!r}: {exc}", f"{self.path}.{name}"
                    ) from None
        self._key_field = opts.key_field
        self._cache: dict[tuple[str | None, str], _Target] = {}

    def _target(self, database: str | None, table: str) -> _Target:
        key = (database, table)
        try:
            return self._cache[key]
        except KeyError:
            pass
        physical = f"{database}.{table}" if database is not None else table
        m = self._rx.fullmatch(physical)
        target: _Target = None
        if m is not None:
            db = m.expand(self._db) if self._db is not None else database
            tb = m.expand(self._table) if self._table is not None else table
            target = (db, tb, physical)
        if len(self._cache) > 65536:
            self._cache.clear()
        self._cache[key] = target
        return target

    def apply(self, event: ChangeEvent) -> Result:
        src = event.source
        if src.table is None:
            return event
        target = self._target(src.database, src.table)
        if target is None:
            return event
        db, table, physical = target
        if self._key_field is not None and event.op.is_row:
            event.typed()
            key = dict(event.key_values())
            key[self._key_field] = physical
            event.key = key
        event.source = msgspec.structs.replace(src, database=db, table=table)
        return event


def _probe_groups(rx: re.Pattern[str], repl: str) -> None:
    """Raise if ``repl`` references a group the pattern does not have."""
    for m in re.finditer(r"\\g<(\w+)>|\\(\d+)", repl):
        ref = m.group(1) or m.group(2)
        if ref.isdigit():
            if int(ref) > rx.groups:
                raise IndexError(f"no group {ref} in the pattern (it has {rx.groups})")
        elif ref not in rx.groupindex:
            raise IndexError(f"no group named {ref!r} in the pattern")
