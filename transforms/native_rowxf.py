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
from cdc_smt.transforms.native import (
    HeaderEdit,
    _CanalOutTables,
    _header_edits,
    _keeps_rows,
    _Shape,
    _Unsupported,
    canal_text_op,
)

#: ``_Shape``'s added-column kinds the writer fills per row (the rest are the probe's constants).
_PER_ROW = ("es", "ts", "row")


def changes_rows(transforms: list[Any]) -> bool:
    """Does a chain of supported transforms change rows (so that the shaped writer is needed)?"""
    return not all(_keeps_rows(t) for t in transforms)


def canal_plan(chain: Any) -> native.NativePlan | None:
    """canal-json -> canal-json with row-changing transforms (``unwrap`` and TiCDC's
    dialect stay Python's), or ``None``."""
    batch = chain.encoder.batching
    names = (native.CANAL_TO_CANAL, None)
    return shaped_plan(chain, _ShapedCanalTables, names, encoder="canal-json", batch_transaction=batch)


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
        texts = _label_texts(column)
        if texts is None:
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

    def _key_kind(self, column: Any, shape: _Shape, typed: bool) -> str:
        """How a key column's value is written in the key: ``text`` (its written JSON), ``int``
        (the digits, a typed integer) or ``decimal`` (a typed DECIMAL's plain text as the message
        has it, :func:`_plain_decimals`); anything else is Python's."""
        from cdc_smt.transforms.types import Kind

        i = shape.schema.columns.index(column)
        mask = shape.masks[i]
        if not typed or (mask is not None and mask[0] != "const") or column.mysql.kind is Kind.STRING:
            return "text"
        if column.mysql.kind is Kind.INT:
            return "int"
        if column.mysql.kind is Kind.DECIMAL and mask is None and _plain_decimals(self.form, column):
            return "decimal"
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
        what, event, edits = _follow_shaped(self, message, kind, shape)
        if event is None:
            return what, None
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


def _follow_shaped(
    tables: native._CanalTables, message: dict[str, Any], kind: str, shape: _Shape
) -> tuple[int, Any, list[HeaderEdit] | None]:
    """One op's probe ``message`` through the transforms: ``(2, final event, header edits)``,
    or ``(0, None, _)`` dropped, ``(1, None, _)`` dropped after a transform typed the row
    (typing could fail: Python's); the shape must describe what they do."""
    from cdc_smt.transforms.smt.base import is_tombstone

    (event,) = tables._decode(message, kind)
    edits: list[HeaderEdit] | None = None
    typing = False
    for t, types_rows, selected in zip(tables.transforms, shape.typing, shape.selected, strict=True):
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
            return (1 if typing else 0), None, edits
        (event,) = out
        typing = typing or types_rows
    return 2, event, edits


_KINDS = ("INSERT", "UPDATE", "DELETE", "INIT")


def shaped_plan(
    chain: Any,
    tables: type[native._CanalTables],
    names: tuple[str, str | None],
    *,
    plan_class: type[native.NativePlan] | None = None,
    **writer: Any,
) -> native.NativePlan | None:
    """canal-json (or, where ``names`` has a plan from it, ticdc-canal-json) -> a writer
    (``writer``: its options) with row-changing transforms (not ``unwrap``), compiled by
    ``tables`` (:class:`_ShapedCanalTables`, :class:`TextShaped`), or ``None``;
    ``plan_class``: the plan's class (a writer numbering records: ``DtsNativePlan``)."""
    from cdc_smt.transforms.formats.canal_json import CanalJson
    from cdc_smt.transforms.formats.ticdc_canal_json import TicdcCanalJson
    from cdc_smt.transforms.smt.unwrap import Unwrap

    ticdc = type(chain.decoder) is TicdcCanalJson
    name = names[ticdc]
    if name is None or type(chain.decoder) not in (CanalJson, TicdcCanalJson):
        return None
    if any(type(t) is Unwrap for t in chain.transforms) or not all(native._supported(t) for t in chain.transforms):
        return None
    assert native._native is not None
    compiler = tables(chain.decoder, chain.encoder, list(chain.transforms))
    limit = chain.decoder.opts.max_message_bytes
    plan = native._native.CanalToDebezium(compiler.compile, max_message_bytes=limit, ticdc=ticdc, **writer)
    return (plan_class or native.NativePlan)(name, plan, compiler.variants)


class TextShaped(native._CanalTables):
    """Compiles a Canal layout for a writer of Canal text under row-changing transforms
    (``row_shape.rs``): ``(writer's spec, shape)``, the writer's spec that of the transformed
    schema (compiled by :attr:`writer_tables` from a probe of it, without the transforms),
    with this chain's op entries. Mixed in before the writer's compiler class."""

    #: The writer's compiler of row-keeping layouts.
    writer_tables: type[native._CanalTables]
    #: The encoder types the event before it keys the record (the CloudCanal and CKafka
    #: encoders' ``text_images``): integer key values are numbers even when no transform typed.
    keys_typed = False

    def _compile(self, message: dict[str, Any], event: Any, pk: list[str]) -> Any:
        from cdc_smt.transforms.types import Kind

        schema = event.schema
        zoned = self.timezone == self.encoder.opts.source_timezone
        if not zoned and any(c.mysql.kind is Kind.TIMESTAMP for c in schema.columns):
            return None  # TIMESTAMP text re-based between the zones: Python
        shape = self._shape(event, python_on_missing=True)
        key, explicit = self._key(shape)
        follows = [_follow_shaped(self, message, kind, shape) for kind in _KINDS]
        finals = [f[1] for f in follows if f[1] is not None]
        if not finals:
            return None
        final = finals[0]
        added = [a for a in shape.added if a[0] is not None]
        ops: list[tuple[Any, ...]] = []
        for kind, (what, done, edits) in zip(_KINDS, follows, strict=True):
            if done is None:
                ops.append((what, None))
                continue
            self._check_written(done, kind, shape, explicit)
            if kind == "UPDATE" and added:
                ops.append((1, None))  # insert_field writes the after-image only; the writer's old overlays it
                continue
            if (done.source.database, done.source.table) != final_bits(final):
                raise _Unsupported("record")
            ops.append(self._op_entry(done, edits))
        inner = self._inner(final, ops)
        if inner is None:
            return None
        columns = [self._shaped_column(c, i, shape, zoned, final) for i, c in enumerate(schema.columns)]
        consts = [
            self._added_texts(done, added) if done is not None else [None] * _const_count(added)
            for _, done, _ in follows
        ]
        key_spec = [(name, *self._key_form(shape, c, name, final)) for name, c in key]
        where = (final.source.database, final.source.table, list(final.pk))
        return inner, (columns, [(a[0], a[1]) for a in added], consts, where, key_spec, self._before_keyed(explicit))

    def _op_entry(self, done: Any, edits: list[HeaderEdit] | None) -> tuple[Any, ...]:
        """A written op's entry from its transformed probe ``done``: ``(2, variant)``, the
        records Python writes for it checked to carry the shaped message's fields."""
        records = self._encode_probe(done)
        if not records or len({r.topic for r in records}) != 1 or records[0].value is None:
            raise _Unsupported("records")
        self._check_shaped(orjson.loads(records[0].value), done)
        return 2, self._variant(records[0].topic, edits)

    #: The encoder's attribute counting what it numbers (DataWorks' ``sequenceId``, DTS's
    #: record ids): the probes leave it as it was.
    counter: str | None = None

    def _encode_probe(self, event: Any) -> list[Any]:
        """The records Python writes for an op's transformed probe (the encoder left as it was)."""
        return self._kept(lambda: self.encoder.encode(event))

    def _written_value(self, event: Any, schema: Any, values: dict[str, Any]) -> bytes:
        # the constants' messages compare whole: with one number (sequenceId, record id)
        value: bytes = self._kept(lambda: super(TextShaped, self)._written_value(event, schema, values))
        return value

    def _kept(self, encode: Any) -> Any:
        """``encode()`` with the encoder's :attr:`counter` restored after it."""
        if self.counter is None:
            return encode()
        count = getattr(self.encoder, self.counter)
        try:
            return encode()
        finally:
            setattr(self.encoder, self.counter, count)

    def _before_keyed(self, explicit: bool) -> bool:
        """Is an UPDATE's first record of two keyed by the before-image (DataWorks' split
        updates, when no transform set the key)?"""
        return False

    @property
    def text_decoder(self) -> Any:
        """The decoder whose Canal texts the shaped rows hold (the chain's own, for Canal's
        readers; Canal's for a reader that hands the writer Canal texts of its values)."""
        return self.decoder

    def _inner(self, final: Any, ops: list[tuple[Any, ...]]) -> Any:
        """The writer's spec of the transformed schema, with ``ops`` as its op entries."""
        types = orjson.dumps({c.name: c.type for c in final.schema.columns}).decode()
        base = self.writer_tables(self.text_decoder, self.encoder, [])
        probe = base._probe(types, None, list(final.pk), *final_bits(final))
        spec = None if probe is None else base._compile(*probe, list(final.pk))
        if spec is None:
            return None
        return self._with_ops(spec, ops)

    @staticmethod
    def _with_ops(spec: Any, ops: list[tuple[Any, ...]]) -> Any:
        """The writer's ``spec`` with ``ops`` as its op entries (its third item)."""
        return (*spec[:2], ops, *spec[3:])

    def _check_shaped(self, written: dict[str, Any], final: Any) -> None:
        """Is the probe's written message what the writer writes from the shaped message?"""

    def _shaped_column(self, column: Any, i: int, shape: _Shape, zoned: bool, final: Any) -> tuple[Any, ...]:
        """One input column: ``(name, out, check, readable, mask, argument)`` (see
        ``row_shape.rs``; ``readable``: an ENUM's or SET's texts that read, checked instead)."""
        out, mask = shape.names[i], shape.masks[i]
        checked = shape.validate[i] and (out is None or mask is not None)
        check = canal_text_op(column, zoned) if checked else None
        readable = None
        if check is not None and check[0] == "python" and (texts := _label_texts(column)) is not None:
            readable = [t for t in texts if _reads(self.form, column, t)]
        head = (column.name, out, check, readable)
        if mask is None or out is None:
            return *head, "", b""
        if mask[0] == "const":
            (text,) = self._canal_texts(final, {out: mask[1]}).values()
            return *head, "const", b"" if text is None else text.encode()
        return *head, *mask

    def _added_texts(self, final: Any, added: list[list[Any]]) -> list[str | None]:
        """The constant added columns' Canal texts in ``final`` (an op's transformed probe)."""
        main = final.after if final.after is not None else final.before
        values = {a[0]: main[a[0]] for a in added if a[1] not in _PER_ROW}
        texts = self._canal_texts(final, values)
        return [texts[a[0]] for a in added if a[1] not in _PER_ROW]

    def _canal_texts(self, final: Any, values: dict[str, Any]) -> dict[str, str | None]:
        """Canal texts of typed ``values`` of ``final``'s columns (the decoder's form writes
        them), each checked to be written by the encoder as the value itself once read back."""
        if not values:
            return {}
        form, schema = self.form, final.schema
        texts: dict[str, str | None] = {}
        for name, value in values.items():
            column = schema.by_name[name]
            # Canal's own text of the value, else its plain one (a DECIMAL's own digits)
            candidates = [form.text_writer(column)(value), str(value)] if value is not None else [None]
            for text in candidates:
                try:
                    read = None if text is None else form.to_python(column, text)
                except ValueError:
                    continue
                # the messages as written: JSON numbers compare by their digits too (0.00 is not 0)
                wanted = self._written_value(final, schema, {name: value})
                if self._written_value(final, schema, {name: read}) == wanted:
                    texts[name] = text
                    break
            else:
                raise _Unsupported("text")  # no text reads as the value, for this writer
        return texts

    def _key_form(self, shape: _Shape, c: int, name: str, final: Any) -> tuple[str, dict[str, str] | None]:
        """How a key field is written: ``(form, labels)``, ``form`` ``number`` (a typed integer's or
        YEAR's digits), ``decimal`` (a typed DECIMAL's plain digits as a string, :func:`_plain_decimals`)
        or ``text`` (its text); ``labels``: an ENUM's label per Canal text (index or label). The
        typed value once a transform typed the row (or the encoder types every row, :attr:`keys_typed`)."""
        from cdc_smt.transforms.types import Kind

        column = final.schema.by_name[name]
        kind, mask = column.mysql.kind, shape.masks[c]
        if not (self.keys_typed or any(shape.typing)) or kind is Kind.STRING:
            return "text", None
        if kind in (Kind.INT, Kind.YEAR) and (mask is None or mask[0] != "hash"):
            return "number", None  # YEAR is typed as an integer too (the text written only when canonical)
        if kind is Kind.DECIMAL and mask is None and _plain_decimals(self.form, column):
            return "decimal", None  # a masked one's constant text may be padded: Python's
        if kind is Kind.ENUM and (mask is None or mask[0] != "hash") and (texts := _label_texts(column)) is not None:
            labels = {t: self.form.to_python(column, t) for t in texts if _reads(self.form, column, t)}
            if all(isinstance(label, str) for label in labels.values()):
                return "text", labels
        raise _Unsupported("key")  # a typed key value orjson writes otherwise


#: Plain DECIMAL texts of every form ``row_shape.rs`` writes as the key's string (sign, zero,
#: scale, the widest integer and fraction digits).
_PLAIN_DECIMALS = ("0", "-0", "7", "-12", "0.5", "-0.000", "12.340", "9" * 65 + "." + "0" * 29 + "1")


def _plain_decimals(form: Any, column: Any) -> bool:
    """Does the decoder's value form read a plain decimal text as the ``Decimal`` the key writes
    as that text (``json_default``: ``format(d, "f")``)? A form that pads or rounds does not."""
    from cdc_smt.transforms.formats.base import json_default

    try:
        return all(json_default(form.to_python(column, t)) == t for t in _PLAIN_DECIMALS)
    except ValueError:
        return False


def _label_texts(column: Any) -> list[str] | None:
    """An ENUM's or SET's usual Canal texts (indexes, bitmasks of at most ten labels, ENUM
    labels), or ``None`` for other columns."""
    from cdc_smt.transforms.types import Kind

    t = column.mysql
    if t.kind is Kind.ENUM and t.values:
        return ["0", *map(str, range(1, len(t.values) + 1)), *(v for v in t.values if not v.isdigit())]
    if t.kind is Kind.SET and t.values and len(t.values) <= 10:
        return [str(n) for n in range(1 << len(t.values))]
    return None


def _reads(form: Any, column: Any, text: str) -> bool:
    """Does the decoder's value form read ``text`` as a value of ``column``?"""
    try:
        form.to_python(column, text)
    except ValueError:
        return False
    return True


def final_bits(final: Any) -> tuple[str | None, str | None]:
    """The transformed event's database and table."""
    return final.source.database, final.source.table


def _const_count(added: list[list[Any]]) -> int:
    return sum(a[1] not in _PER_ROW for a in added)


__all__ = ["TextShaped", "canal_plan", "changes_rows", "shaped_plan"]
