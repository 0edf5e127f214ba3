"""The row-changing transforms on the Canal writer: canal-json -> canal-json with
``replace_field``, ``mask_field``, ``insert_field``, ``value_to_key`` and ``merge_shards``.

The Python encoder re-writes its own format from a transformed event: the values are
the message's texts while no transform typed the row, else each typed value re-written as
Canal text (``canal_text``'s conversions); the type maps are the message's own when the
row still names exactly its columns, else computed from the transformed schema (one
``mysqlType`` text and ``sqlType`` rule per written column, inserted columns' from their
inferred types); ``old`` holds the message's own changed columns that are still written
plus those whose written text differs; the key holds the typed values (numbers for
integers). Per table layout the planner follows the transforms column by column
(:class:`~cdc_smt.transforms.native._Shape`) and checks each op's one-row probe against
what Python wrote; a table whose key column would be written as anything but a string or
an integer, or that the shape cannot describe, is Python's.
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc_smt.transforms import native
from cdc_smt.transforms.native import HeaderEdit, _CanalOutTables, _header_edits, _keeps_rows, _Shape, _Unsupported

#: ``_Shape``'s added-column kinds the writer fills per row (the rest are the probe's constants).
_PER_ROW = ("es", "ts", "row")


def changes_rows(transforms: list[Any]) -> bool:
    """Does a chain of supported transforms change rows (so that the shaped writer is needed)?"""
    return not all(_keeps_rows(t) for t in transforms)


def canal_plan(chain: Any) -> native.NativePlan | None:
    """canal-json -> canal-json with row-changing transforms (``unwrap`` and TiCDC's
    dialect stay Python's), or ``None``."""
    from cdc_smt.transforms.formats.canal_json import CanalJson
    from cdc_smt.transforms.smt.unwrap import Unwrap

    if type(chain.decoder) is not CanalJson or any(type(t) is Unwrap for t in chain.transforms):
        return None
    if not all(native._supported(t) for t in chain.transforms):
        return None
    assert native._native is not None
    compiler = _ShapedCanalTables(chain.decoder, chain.encoder, list(chain.transforms))
    plan = native._native.CanalToDebezium(
        compiler.compile,
        max_message_bytes=chain.decoder.opts.max_message_bytes,
        encoder="canal-json",
        batch_transaction=chain.encoder.batching,
    )
    return native.NativePlan(native.CANAL_TO_CANAL, plan, compiler.variants)


class _ShapedCanalTables(_CanalOutTables):
    """Compiles a Canal layout for the Canal writer with the chain's row-changing transforms:
    the copying writer's spec with a seventh item, the shape (see ``canal_shape.rs``)."""

    def _compile(self, message: dict[str, Any], event: Any, pk: list[str]) -> Any:
        from cdc_smt.transforms.types import Kind

        types, sql_types = message["mysqlType"], message["sqlType"]
        schema = event.schema
        names = [c.name for c in schema.columns]
        if names != list(types) or sorted(sql_types or ()) != sorted(names):
            return None  # the message's type maps are copied only when they name the columns
        zoned = self.timezone == self.encoder.opts.source_timezone
        if not zoned and any(c.mysql.kind is Kind.TIMESTAMP for c in schema.columns):
            return None  # TIMESTAMP text re-based between the zones: Python
        shape = self._shape(event, python_on_missing=True)
        typed = any(shape.typing)
        key, explicit = self._key(shape)
        ops = [self._op_shaped(message, kind, shape, explicit) for kind in ("INSERT", "UPDATE", "DELETE", "INIT")]
        written = [w for _, w in ops if w is not None]
        if not written:
            return names, list(pk), [(what, None) for what, _ in ops], None
        probe, final = written[0][:2]
        live = [n for n in shape.names if n is not None]
        added = [a for a in shape.added if a[0] is not None]
        outputs = live + [a[0] for a in added]
        reuse = len(outputs) == len(names) and set(outputs) == set(names)
        masks = self._masks(event, shape)
        columns = [self._column(c, i, shape, typed, zoned, final, masks[i]) for i, c in enumerate(schema.columns)]
        key_spec = [(name, c, self._key_kind(schema.columns[c], shape, typed)) for name, c in key]
        maps = None if reuse else [orjson.dumps({n: probe["mysqlType"][n]}) for n in outputs]
        added_spec = [(a[0], a[1]) for a in added]
        op_entries = [(what, None if w is None else w[2]) for what, w in ops]
        per_op = [None if w is None else (w[3], w[4]) for _, w in ops]
        pk_names = self._override(probe["pkNames"], pk, final.pk)
        where = [
            None if probe[field] == message[field] else orjson.dumps(probe[field]) for field in ("database", "table")
        ]
        shaped = (typed, columns, added_spec, key_spec, explicit, maps, per_op, pk_names, *where)
        return names, list(pk), op_entries, None, [], None, shaped

    def _column(
        self, column: Any, i: int, shape: _Shape, typed: bool, zoned: bool, final: Any, masked: tuple[str, bytes]
    ) -> tuple[Any, ...]:
        """One input column: ``(out name | None, text op, arg, validate, mask, salt, sql code,
        labels)``, the code ``(null, value, wide, unsigned max | None)`` of its written column,
        ``labels`` an ENUM's or SET's texts as re-written (instead of the op); ``masked``: its
        mask (``_masks``: a constant's written text as the salt)."""
        out = shape.names[i]
        _, op, arg, *_ = self._text(column, zoned) if typed or shape.validate[i] else ("", "same", None)
        mask, salt = masked
        codes: tuple[int, int, int, int | None] = (0, 0, 0, None)
        if out is not None:
            written = final.schema.by_name[out]
            by_null = self.encoder.sql_type_by_null(written)
            if by_null is not None:
                codes = (by_null[0], by_null[1], 0, None)
            else:
                codes = self._unsigned_codes(written)
        return out, op, arg, shape.validate[i], mask, salt, codes, self._labels(column) if op == "python" else None

    def _labels(self, column: Any) -> dict[str, str] | None:
        """An ENUM's or SET's usual texts (indexes, bitmasks of at most ten labels, ENUM
        labels) as the Python path re-writes them once typed; other texts go to Python."""
        from cdc_smt.transforms.types import Kind

        t = column.mysql
        if t.kind is Kind.ENUM and t.values:
            texts = ["0", *map(str, range(1, len(t.values) + 1)), *(v for v in t.values if not v.isdigit())]
        elif t.kind is Kind.SET and t.values and len(t.values) <= 10:
            texts = [str(n) for n in range(1 << len(t.values))]
        else:
            return None
        write = self.encoder.form.text_writer(column)
        table = {}
        for text in texts:
            try:
                table[text] = write(self.form.to_python(column, text))
            except ValueError:
                pass
        return table

    def _unsigned_codes(self, column: Any) -> tuple[int, int, int, int | None]:
        """An unsigned integer's ``sqlType`` codes (Canal's: by the value's range)."""
        from cdc_smt.transforms.types import Kind

        t = column.mysql
        if t.kind is not Kind.INT or not t.unsigned:
            raise _Unsupported("sqlType")
        signed, wide = t.jdbc_type(None), t.jdbc_type(1 << 64)
        bits = next(
            b
            for b in (8, 16, 24, 32, 64)
            if t.jdbc_type((1 << (b - 1)) - 1) == signed and t.jdbc_type(1 << (b - 1)) == wide
        )
        return signed, signed, wide, (1 << (bits - 1)) - 1

    @staticmethod
    def _key_kind(column: Any, shape: _Shape, typed: bool) -> str:
        """How a key column's value is written in the key: ``text`` (its written JSON) or
        ``int`` (the digits, a typed integer); anything else is Python's."""
        from cdc_smt.transforms.types import Kind

        i = shape.schema.columns.index(column)
        mask = shape.masks[i]
        if not typed or (mask is not None and mask[0] != "const") or column.mysql.kind is Kind.STRING:
            return "text"
        if column.mysql.kind is Kind.INT:
            return "int"
        raise _Unsupported("key")  # a typed key value orjson writes otherwise

    @staticmethod
    def _override(written: Any, pk: list[str], after: list[str] | tuple[str, ...]) -> bytes | None:
        """``pkNames`` as written when it is not the message's own (``None``: copied)."""
        after = list(after)
        if after == pk:
            return None
        expected = after or None
        if written != expected:
            raise _Unsupported("pkNames")
        return orjson.dumps(expected)

    def _op_shaped(self, message: dict[str, Any], kind: str, shape: _Shape, explicit: bool) -> tuple[int, Any]:
        """One op's entry ``(what, written)``: ``what`` 0 dropped, 1 Python, 2 written, with
        ``(probe message, final event, variant, constant texts, added columns' codes)``."""
        from cdc_smt.transforms.smt.base import is_tombstone

        (event,) = self._decode(message, kind)
        edits: list[HeaderEdit] | None = None
        typing = False
        for t, types_rows, selected in zip(self.transforms, shape.typing, shape.selected, strict=True):
            if t.selects(event) != selected:
                raise _Unsupported("predicate")  # it judges ops differently: Python
            if selected and any(c not in event.schema.by_name for c in t.columns):
                raise _Unsupported("on_missing")
            if selected:
                edits = _header_edits(t, event, edits)
            out = t.apply_batch([event])
            if len(out) > 1 or any(is_tombstone(e) for e in out):
                raise _Unsupported("rows")
            if not out:
                return (1 if typing else 0), None  # dropped after typing: typing could fail
            (event,) = out
            typing = typing or types_rows
        (record,) = self.encoder.encode(event)
        if record.value is None:
            raise _Unsupported("tombstone")
        self._check_written(event, kind, shape, explicit)
        written = orjson.loads(record.value)
        row = written["data"][0]
        live = [n for n in shape.names if n is not None]
        added = [a for a in shape.added if a[0] is not None]
        if list(row) != live + [a[0] for a in added] or any(row[n] is not None for n in live):
            raise _Unsupported("data")
        key = self._key(shape)[0]
        if record.key != (orjson.dumps(dict.fromkeys(n for n, _ in key)) if key else None):
            raise _Unsupported("key")
        if any(row[a[0]] != "0" for a in added if a[1] in _PER_ROW):
            raise _Unsupported("metadata")  # the probe's es, ts and row are 0
        consts = [orjson.dumps(row[a[0]]) for a in added if a[1] not in _PER_ROW]
        codes = [written["sqlType"][a[0]] for a in added] if isinstance(written.get("sqlType"), dict) else []
        return 2, (written, event, self._variant(record.topic, edits), consts, codes)


__all__ = ["canal_plan", "changes_rows"]
