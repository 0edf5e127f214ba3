"""The canonical change-event model every codec decodes into and encodes from.

One row change (or one control event: DDL, heartbeat, watermark, transaction
marker) is one :class:`ChangeEvent`. Kafka-level data lives in :class:`Record`.
Hot-path objects are msgspec Structs: cheap to build, slotted, comparable.

Row values
----------
``before``/``after`` are ordered ``column -> value`` dicts. Values are either
*typed* (Python objects chosen from the column's MySQL type, see
``transforms.types``) or still in the *raw form* of the format they were read
from (``event.values`` names that form). Keeping the raw form lets a codec skip
conversion when source and target encode values the same way (Canal strings to
Canal strings); anything that needs real values calls :meth:`ChangeEvent.typed`
(or :func:`materialize`) first.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import msgspec

if TYPE_CHECKING:  # pragma: no cover
    from cdc_smt.transforms.types import MySQLType


class Op(str, enum.Enum):
    """What happened. Row ops carry images; the rest are control events."""

    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"
    READ = "read"  # snapshot read (Debezium "r", Canal INIT)
    TRUNCATE = "truncate"
    DDL = "ddl"
    HEARTBEAT = "heartbeat"
    WATERMARK = "watermark"
    BEGIN = "begin"
    COMMIT = "commit"

    @property
    def is_row(self) -> bool:
        return self in _ROW_OPS


_ROW_OPS = frozenset({Op.INSERT, Op.UPDATE, Op.DELETE, Op.READ})

# Event markers that are not part of any one format: set in ``event.extra`` by
# transforms, honoured by every encoder whatever the event's origin.

#: ``extra`` flag: the event is a tombstone (a null-value record carrying only the key).
TOMBSTONE = "cdc_smt.tombstone"
#: ``extra`` flag: ``after`` is a flat row to write as the whole value (``unwrap``).
UNWRAPPED = "cdc_smt.unwrapped"


@dataclass(frozen=True, slots=True)
class Column:
    """One column: name, full MySQL type text (with parameters), nullability, key."""

    name: str
    type: str
    nullable: bool = True
    primary_key: bool = False
    default: str | None = None
    comment: str | None = None

    @property
    def mysql(self) -> MySQLType:
        from cdc_smt.transforms.types import parse_type

        return parse_type(self.type)


@dataclass(frozen=True)
class TableSchema:
    """Ordered columns of one table plus its primary key.

    Frozen and hashable so codecs can cache derived artefacts (Connect schemas,
    type maps) per schema object.
    """

    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = ()

    @cached_property
    def by_name(self) -> dict[str, Column]:
        return {c.name: c for c in self.columns}

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> Column | None:
        return self.by_name.get(name)

    def __hash__(self) -> int:  # cached_property needs a __dict__, so no slots here
        return hash((self.columns, self.primary_key))


class SourcePosition(msgspec.Struct, kw_only=True, gc=False):
    """Where the change came from, as precisely as the source format says."""

    db_type: str | None = None  # mysql, tidb, mariadb, oracle, postgres
    database: str | None = None
    schema: str | None = None  # Postgres/Oracle schema; None for MySQL
    table: str | None = None
    server_id: int | None = None
    binlog_file: str | None = None
    binlog_pos: int | None = None
    gtid: str | None = None
    commit_ts: int | None = None  # TiDB TSO of the transaction
    scn: int | None = None  # Oracle SCN
    sequence_id: str | None = None  # DataWorks / CloudCanal sequence
    txid: str | None = None
    row: int | None = None  # row index within the binlog event


class Target(NamedTuple):
    """A rendering of a column's typed value that a consumer of raw values wants.

    Consumers of a :class:`ValueForm` ask it for a :meth:`ValueForm.converter`
    straight from raw values to one of these, so hot paths can skip building
    the typed Python objects. ``kind`` says what is produced from the typed value
    ``v`` (``scale``/``tz`` are parameters of some kinds):

    ``typed``         ``v`` itself (what :meth:`ValueForm.to_python` returns)
    ``int``           ``v`` (an int: INT, YEAR)
    ``int64``         ``v`` wrapped into the signed 64-bit range (BIGINT UNSIGNED as a Java long)
    ``float``         ``v`` (a float: DOUBLE)
    ``bool``          ``v`` (BIT(1))
    ``str``           ``v`` (a str: character types, ENUM, SET, JSON)
    ``unscaled_b64``  base64 of the minimal big-endian two's complement of ``v * 10**scale``
                      (Kafka Connect Decimal; DECIMAL columns)
    ``epoch_days``    days from 1970-01-01 to the date ``v``
    ``epoch_ms``      milliseconds from 1970-01-01T00:00 to the wall clock ``v`` (floor)
    ``epoch_us``      microseconds, likewise
    ``iso_utc``       the instant of the wall clock ``v`` in zone ``tz`` as UTC ISO-8601 text,
                      ``YYYY-MM-DDTHH:MM:SS[.fraction without trailing zeros]Z``

    Only regular values have a rendering: for zero/invalid temporals
    (:class:`~transforms.types.InvalidTemporal`) and anything else a converter
    does not handle it raises, and the consumer takes the typed path.
    """

    kind: str
    scale: int = 0
    tz: str = "UTC"


#: The typed value itself (``converter(column, TYPED)`` is a compiled ``to_python``).
TYPED = Target("typed")


class ValueForm(Protocol):
    """The raw encoding of row values of one format (e.g. Canal's strings).

    Required: ``name`` and ``to_python(column, raw)``. Optional, for speed:
    ``raw_type`` (the Python type of the form's regular raw values, ``str`` for
    text forms) and ``converter(column, target)``, which returns a function from
    raw values of exactly ``raw_type`` to the :class:`Target` rendering of their
    typed value, or ``None`` when the form has none for that column. The
    function must return exactly what rendering ``to_python(column, raw)`` would
    give, or raise (any exception) for values it does not handle, in which case
    the caller falls back to ``to_python``. Callers compile the converters once
    per table schema and call them per value. A form may also offer
    ``reader(column)``: exactly ``to_python(column, ·)`` as a one-argument
    function, for every raw value.
    """

    name: str

    def to_python(self, column: Column, raw: Any) -> Any: ...


class ChangeEvent(msgspec.Struct, kw_only=True):
    """One canonical change.

    ``changed``: names of columns known to have changed (``None`` = unknown).
    ``extra``: format-specific fields keyed by field name, valid when
    ``origin`` names the format that produced them; the encoder of that same
    format uses them to reproduce the original message.
    ``timezone``: the IANA zone in which naive DATETIME/TIMESTAMP values of this
    event are expressed (the decoder's ``source_timezone``).
    ``values``: ``None`` when row values are typed, else the raw form they are in.
    ``partial``: the images are incomplete (TiCDC handle-key-only / claim-check).
    ``topic``/``key``/``headers``: routing set by transforms; ``None`` = default.
    ``record``: the Kafka record this event was decoded from, when known.
    """

    op: Op
    source: SourcePosition = msgspec.field(default_factory=SourcePosition)
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    changed: tuple[str, ...] | None = None
    schema: TableSchema | None = None
    pk: tuple[str, ...] = ()
    ddl: str | None = None
    ddl_kind: str | None = None
    ts_ms: int | None = None
    processing_ts_ms: int | None = None
    timezone: str = "UTC"
    values: ValueForm | None = None
    partial: bool = False
    origin: str | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)
    topic: str | None = None
    key: dict[str, Any] | None = None
    headers: list[tuple[str, bytes]] | None = None
    record: Record | None = None

    # -- convenience -----------------------------------------------------
    @property
    def database(self) -> str | None:
        return self.source.database

    @property
    def table(self) -> str | None:
        return self.source.table

    @property
    def row(self) -> dict[str, Any] | None:
        """The image that identifies the row now: after, else before."""
        return self.after if self.after is not None else self.before

    def typed(self) -> ChangeEvent:
        """Convert raw row values to typed Python values in place; return self."""
        form = self.values
        if form is None:
            return self
        schema = self.schema
        if schema is None:
            raise ValueError(f"cannot type values of {self.source.database}.{self.source.table}: no table schema")
        steps, raw_type = typed_steps(schema, form)
        to_python = form.to_python
        for image in (self.before, self.after):
            if image:
                for name, raw in image.items():
                    step = steps.get(name)
                    if step is None or raw is None:
                        continue
                    fast, col = step
                    if fast is not None and (raw_type is None or raw.__class__ is raw_type):
                        try:
                            image[name] = fast(raw)
                            continue
                        except Exception:  # noqa: BLE001 - the form's own path decides (and words the error)
                            pass
                    try:
                        image[name] = to_python(col, raw)
                    except ValueError as exc:
                        if f"column {name!r}" in str(exc):
                            raise
                        raise ValueError(f"column {name!r} ({col.type}): {exc}") from None
                    except (TypeError, ArithmeticError, LookupError, AttributeError, RecursionError) as exc:
                        # the value-form contract: a raw value that does not read is a ValueError naming the column
                        raise ValueError(
                            f"column {name!r} ({col.type}): cannot read {type(raw).__name__} value: {exc}"
                        ) from None
        self.values = None
        return self

    def key_values(self) -> dict[str, Any]:
        """The Kafka key fields: an explicit key, else the primary key columns."""
        if self.key is not None:
            return self.key
        image = self.row or {}
        return {k: image.get(k) for k in self.pk}


class IdentityCache:
    """Artefacts derived from one or two objects, keyed by the objects' *identity* plus a
    hashable ``what``: the one cache type for what codecs compile per table schema
    (converters of value forms, type maps, plans).

    Identity, because the events of a stream share their schema objects and hashing a
    schema is not cheap; kept off the objects, so schemas stay picklable. Each entry holds
    strong references to its objects, so their ids are not reused while it lives; past
    ``size`` entries the cache starts afresh (schemas change rarely).
    """

    __slots__ = ("_entries", "size")

    def __init__(self, size: int = 2048) -> None:
        self._entries: dict[tuple[int, int, Any], tuple[Any, Any, Any]] = {}
        self.size = size

    def get(self, a: Any, b: Any = None, what: Any = None, default: Any = None) -> Any:
        """The artefact of ``(a, b, what)``, or ``default``."""
        hit = self._entries.get((id(a), id(b), what))
        if hit is not None and hit[0] is a and hit[1] is b:
            return hit[2]
        return default

    def put(self, a: Any, b: Any, what: Any, value: Any) -> Any:
        """Keep ``value`` as the artefact of ``(a, b, what)``; return it."""
        entries = self._entries
        if len(entries) >= self.size:
            entries.clear()
        entries[(id(a), id(b), what)] = (a, b, value)
        return value

    def get_or_build(self, a: Any, b: Any, what: Any, build: Callable[[], Any]) -> Any:
        """The artefact of ``(a, b, what)``, from ``build()`` the first time."""
        key = (id(a), id(b), what)
        hit = self._entries.get(key)
        if hit is not None and hit[0] is a and hit[1] is b:
            return hit[2]
        return self.put(a, b, what, build())

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


#: What every codec compiles per table schema, shared.
COMPILED = IdentityCache(2048)
#: ``compiled(schema, form, what, build)``: ``build()``, cached per (schema object, ``form``
#: object, ``what``): ``form`` is whatever else the artefact depends on by identity, ``what``
#: (hashable) the rest. (A bound method: calling an instance is slower on the hot path.)
compiled = COMPILED.get_or_build


def typed_steps(schema: TableSchema, form: Any) -> tuple[dict[str, tuple[Any, Column]], type | None]:
    """Per column of ``schema``: (the form's compiled ``to_python`` or ``None``, column);
    and the type of raw values the compiled functions apply to (``None``: all)."""

    def build() -> tuple[dict[str, tuple[Any, Column]], type | None]:
        reader = getattr(form, "reader", None)
        if reader is not None:
            return {c.name: (reader(c), c) for c in schema.columns}, None
        raw_type = getattr(form, "raw_type", None)
        converter = getattr(form, "converter", None) if raw_type is not None else None
        steps = {c.name: (converter(c, TYPED) if converter is not None else None, c) for c in schema.columns}
        return steps, raw_type

    return compiled(schema, form, "typed", build)


def typed_reader(form: Any, column: Column) -> Callable[[Any], Any]:
    """``form.to_python(column, raw)`` as a one-argument function (same results, same
    errors): the form's own ``reader(column)`` when it has one, else through its
    compiled converter when it has one."""
    own = getattr(form, "reader", None)
    if own is not None:
        return own(column)
    to_python = form.to_python

    def reference(raw: Any) -> Any:
        return to_python(column, raw)

    raw_type = getattr(form, "raw_type", None)
    converter = getattr(form, "converter", None) if raw_type is not None else None
    fast = converter(column, TYPED) if converter is not None else None
    if fast is None:
        return reference
    if fast is str and raw_type is str:

        def read_text(raw: Any) -> Any:
            return raw if raw.__class__ is str else to_python(column, raw)

        return read_text

    def read(raw: Any) -> Any:
        if raw.__class__ is raw_type:
            try:
                return fast(raw)
            except Exception:  # noqa: BLE001 - to_python decides (and words the error)
                pass
        return to_python(column, raw)

    return read


def materialize(event: ChangeEvent) -> ChangeEvent:
    """Typed view of ``event`` (in place). Kept as a function for pipelines."""
    return event.typed()


class Record(msgspec.Struct, kw_only=True, gc=False):
    """The Kafka-level unit: what a topic partition holds at one offset."""

    value: bytes | None
    key: bytes | None = None
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    timestamp: int | None = None  # ms
    headers: list[tuple[str, bytes]] = msgspec.field(default_factory=list)

    def where(self) -> str:
        """Human-readable coordinates for error messages."""
        if self.topic is None and self.offset is None:
            return "record"
        return f"{self.topic}[{self.partition}]@{self.offset}"


__all__ = [
    "ChangeEvent",
    "Column",
    "IdentityCache",
    "Op",
    "Record",
    "SourcePosition",
    "TOMBSTONE",
    "TYPED",
    "TableSchema",
    "Target",
    "UNWRAPPED",
    "ValueForm",
    "compiled",
    "materialize",
    "typed_reader",
    "typed_steps",
]
