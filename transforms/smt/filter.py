"""``filter``: keep (or drop) events by database, table, op and a condition over row values."""

from __future__ import annotations

import re
from collections.abc import Callable

from cdc_smt.transforms.expr import Expression, compile_expr
from cdc_smt.transforms.model import ChangeEvent, Op
from cdc_smt.transforms.options import Option, Options
from cdc_smt.transforms.smt.base import ROW_OPS, TOMBSTONE, Result, Transform, check_regex_list

_OP_GROUPS = {"transaction": ("begin", "commit"), "row": ("insert", "update", "delete", "read")}
_OP_NAMES = tuple(o.value for o in Op)


def _check_ops(ops: list) -> None:
    for o in ops:
        if o not in _OP_NAMES and o not in _OP_GROUPS:
            known = ", ".join((*_OP_NAMES, *_OP_GROUPS))
            raise ValueError(f"unknown op {o!r} (known: {known})")


def _ops(names: list[str]) -> frozenset[Op]:
    out: set[Op] = set()
    for n in names:
        out.update(Op(x) for x in _OP_GROUPS.get(n, (n,)))
    return frozenset(out)


def _any_full(patterns: list[str]) -> Callable[[str], bool] | None:
    if not patterns:
        return None
    rx = re.compile("|".join(f"(?:{p})" for p in patterns))
    return lambda s: rx.fullmatch(s) is not None


class Filter(Transform):
    """Keep events that pass every criterion given; drop the rest.

    Patterns are regular expressions that must match the whole name: database
    patterns match the database, table patterns match `database.table` (use
    `.*\\.orders` for any database). A criterion that does not apply to an event
    lets it through: events without a table (heartbeats, watermarks,
    transaction markers, database-level DDL) are not judged by table patterns,
    and `condition` judges row events only; drop control events with
    `exclude_ops`. With `action: drop` the events that pass are dropped
    instead; with `action: drop` and no criteria, every selected event is
    dropped (Kafka Connect's Filter with a predicate).
    """

    name = "filter"
    known_as = "Kafka Connect Filter; Flink canal-json.database.include / table.include"
    scope = "all"
    names_columns = True
    options = (
        Option("databases", list, [], "Keep databases fully matching any of these regexes.", check=check_regex_list),
        Option(
            "exclude_databases", list, [], "Drop databases fully matching any of these regexes.", check=check_regex_list
        ),
        Option(
            "tables",
            list,
            [],
            "Keep tables whose `database.table` fully matches any of these regexes.",
            check=check_regex_list,
        ),
        Option(
            "exclude_tables",
            list,
            [],
            "Drop tables whose `database.table` fully matches any of these regexes.",
            check=check_regex_list,
        ),
        Option(
            "ops",
            list,
            [],
            "Keep only these ops: insert, update, delete, read, truncate, ddl, heartbeat, watermark, begin, "
            "commit; `transaction` means begin and commit, `row` the four row ops.",
            check=_check_ops,
        ),
        Option("exclude_ops", list, [], "Drop these ops (same names as `ops`).", check=_check_ops),
        Option(
            "condition",
            str,
            None,
            "Keep row events for which this expression is true, e.g. `after.amount > 100` (see Expression language).",
        ),
        Option(
            "action",
            str,
            "keep",
            "What to do with events that pass: keep them (and drop the rest) or drop them.",
            choices=("keep", "drop"),
        ),
    )

    def configure(self, opts: Options) -> None:
        self._db_in = _any_full(opts.databases)
        self._db_out = _any_full(opts.exclude_databases)
        self._tb_in = _any_full(opts.tables)
        self._tb_out = _any_full(opts.exclude_tables)
        self._ops_in = _ops(opts.ops) if opts.ops else None
        self._ops_out = _ops(opts.exclude_ops)
        self._cond: Expression | None = (
            compile_expr(opts.condition, path=f"{self.path}.condition") if opts.condition is not None else None
        )
        self._drop = opts.action == "drop"
        self.columns = self.expression_columns = self._cond.columns if self._cond is not None else ()
        self._has_criteria = any(
            x is not None for x in (self._db_in, self._db_out, self._tb_in, self._tb_out, self._ops_in, self._cond)
        ) or bool(self._ops_out)
        self._table_cache: dict[tuple[str | None, str | None], bool | None] = {}

    def adds_columns(self) -> tuple[str, ...]:
        return ()

    def _names_pass(self, database: str | None, table: str | None) -> bool | None:
        """Database/table criteria for one table, cached: True/False, or None when none apply."""
        key = (database, table)
        try:
            return self._table_cache[key]
        except KeyError:
            pass
        verdict: bool | None = None
        if database is not None and (self._db_in or self._db_out):
            verdict = (self._db_in is None or self._db_in(database)) and not (self._db_out and self._db_out(database))
        if table is not None and (self._tb_in or self._tb_out) and verdict is not False:
            qualified = f"{database}.{table}" if database is not None else table
            verdict = (self._tb_in is None or self._tb_in(qualified)) and not (self._tb_out and self._tb_out(qualified))
        if len(self._table_cache) > 65536:
            self._table_cache.clear()
        self._table_cache[key] = verdict
        return verdict

    def passes(self, event: ChangeEvent) -> bool | None:
        """Does ``event`` pass every applicable criterion (None: no criterion applies)?"""
        applied = False
        op = event.op
        if self._ops_in is not None or self._ops_out:
            if (self._ops_in is not None and op not in self._ops_in) or op in self._ops_out:
                return False
            applied = True
        src = event.source
        names = self._names_pass(src.database, src.table)
        if names is False:
            return False
        applied = applied or names is not None
        if self._cond is not None and op in ROW_OPS and TOMBSTONE not in event.extra:
            if not self._cond.test(event):
                return False
            applied = True
        return True if applied else None

    def apply(self, event: ChangeEvent) -> Result:
        verdict = self.passes(event)
        if self._drop:
            if not self._has_criteria:
                return None
            return None if verdict else event
        return None if verdict is False else event
