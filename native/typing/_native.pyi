"""Types of the Rust extension ``cdc_smt._native`` (``native/src/lib.rs``), for mypy."""

from collections.abc import Callable, Sequence
from typing import Any

__version__: str
#: The conversions the core has plans for, as ``"decoder -> encoder"``.
PLANS: tuple[str, ...]

class CanalToDebezium:
    """canal-json (or TiCDC's dialect, ``ticdc``) -> debezium-json, or -> canal-json,
    maxwell-json, ogg-json or ticdc-canal-json (``encoder``), and the chain's transforms the planner lets it do;
    ``compile(mysqlType_json, sqlType_json, pkNames, database, table)`` returns a table's
    spec or ``None`` (the table is not native)."""

    def __init__(
        self,
        compile: Callable[..., Any],
        *,
        schemas_enable: bool = False,
        tombstones_on_delete: bool = False,
        max_message_bytes: int,
        ticdc: bool = False,
        encoder: str = "debezium-json",
        batch_transaction: bool = False,
        ids: Any = None,
        reader: str = "canal-json",
        codec: Any = None,
        zone: str | None = None,
    ) -> None: ...
    def convert(
        self, values: list[bytes | None], keys: list[bytes | None] | None = None
    ) -> tuple[list[int], list[bytes | None], list[bytes | None], list[int]]: ...
    def clear(self) -> None: ...
    @property
    def needs_keys(self) -> bool: ...
    @property
    def closed_at(self) -> int | None: ...

def dumps_float(v: float) -> bytes: ...
def dumps_str(s: str) -> bytes: ...
def zone_offsets(zone: str, instants: Sequence[int]) -> list[int] | None: ...
def murmur2(data: bytes) -> int: ...
def partitions(keys: list[bytes | None], n: int, keyless: int = 0) -> list[int]: ...
def place_records(
    record_type: type,
    records: list[Any],
    counts: list[int],
    values: list[bytes | None],
    keys: list[bytes | None],
    table: list[tuple[str | None, Any]],
    variants: list[int],
    edit: Callable[[list[tuple[str, bytes]], Any], list[tuple[str, bytes]]],
    one: Callable[[Any, Any], None],
    result: Any,
) -> None:
    """``NativePlan.run``'s loop: per record, ``one(record, result)`` (count -1) or its outputs
    appended to ``result.outputs``, topic and header edits by variant (``native/src/records.rs``)."""

class KafkaBatch:
    """An uncompressed Kafka v2 record batch filled from ``(key, value, timestamp, headers)``
    rows, byte for byte as aiokafka's builder writes it (``native/src/kafka_batch.rs``)."""

    def __init__(self, batch_size: int, transactional: bool = False) -> None: ...
    def append(self, rows: list[tuple[Any, ...]], start: int = 0) -> int: ...
    def record_count(self) -> int: ...
    def size(self) -> int: ...
    def build(self, producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = 0) -> bytes: ...

def place_rows(
    rows: list[list[Any]],
    parts: list[int],
    messages: Any,
    counts: list[int],
    keys: list[bytes | None],
    values: list[bytes | None],
) -> None: ...

class ArrowArray:
    """An Arrow array made by the core; ``pyarrow.array(obj)`` imports it (``__arrow_c_array__``)."""

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]: ...
    def __len__(self) -> int: ...

def convert_arrow(
    plan: CanalToDebezium, values: Any, keys: Any | None = None
) -> tuple[ArrowArray, ArrowArray, ArrowArray, ArrowArray]: ...
def key_partitions(keys: Any, n: int) -> ArrowArray: ...
def split_lines(data: bytes, end: int, first_line: int) -> tuple[ArrowArray, ArrowArray, int]: ...
