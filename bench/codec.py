"""Codec throughput: decode + encode per message, against the orjson floor.

    .venv/bin/python -m bench.codec [--count 200000] [--runs 3]

Generates ``--count`` Canal JSON row changes of realistic size (~900 bytes,
eleven columns: unsigned bigint, int, varchar, enum, decimal, double,
tinyint(1), datetime(3), timestamp, date, a nullable column; 60 % inserts,
30 % updates with ``old``, 10 % deletes) in-process, then times each row of :data:`ROWS`
through :meth:`transforms.chain.Chain.process_batch` (one codec pair, no
transforms, no schema catalog; the native core's plan where it has one, marked
``[native]``, and the same conversion on the Python path, ``CDC_SMT_NATIVE=0``),
least CPU time of ``--runs``, in one thread
(``--pin CPU`` to pin it). The floor is ``orjson.loads`` +
``orjson.dumps`` of the same messages: the least any JSON-to-JSON conversion
can cost, so "x floor" says how much the model and the two codecs add. A row
whose source is not Canal JSON has a floor of its own, measured on its own
input messages, and a row marked ``sink_floor`` (to Maxwell, GoldenGate) the floor
of the messages it writes ("speed vs floor" is the row's rate over its floor's; the native
core's targets: at least 0.5x, canal-json -> debezium-json 1.0x).

``--rss N`` instead converts ``N`` messages (default 1M when given without a
number) through each native plan (``--rows`` selects them as it selects the
rows), in a child process per plan, generating the input chunk by chunk, and
prints the peak RSS after 10 %, 50 % and 100 % of them: flat when the plan
keeps nothing per message.

``--split`` also times each native row's plan alone (its ``convert`` over the same batches)
and prints the difference per message: the Python side of the row (making the output
``Record`` objects in ``NativePlan.run``, and what Python converts itself).

Rows whose codecs are not registered print as ``missing``. To benchmark more
conversions, add a :class:`Row` to :data:`ROWS`.

A second table has one row per registered format (``--formats a,b`` limits
it): the generated Canal events are encoded into the format once (codecs that
keep a schema catalog -- TDSQL, CKafka -- get one built from the table's DDL,
:data:`ORDERS_DDL`; every other format runs with default options and no
catalog), then each run times ``codec.decode`` of every record (plus
``flush``), with ``event.typed()`` called on every event so the cost of typed
Python values is included, and, separately, ``codec.encode`` of those decoded,
typed events. Rates count the format's own Kafka messages (Debezium's delete
tombstones and DataWorks' split updates included). The baseline is measured
per format on the same messages: ``orjson.loads`` + ``orjson.dumps`` for the
JSON formats (null tombstones skipped), ``fastavro.schemaless_reader`` +
``schemaless_writer`` (schema parsed once, union branches named) for ``dts-avro``; "x baseline" is
codec time over baseline time.
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import platform
import random
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

import orjson

from cdc_smt.connector.tuning import tune_allocator
from cdc_smt.transforms import native
from cdc_smt.transforms.chain import Chain
from cdc_smt.transforms.errors import CdcSmtError
from cdc_smt.transforms.formats import get_codec, registry
from cdc_smt.transforms.formats.base import JsonCodec
from cdc_smt.transforms.model import Record

SOURCE_FORMAT = "canal-json"  # what the generator writes
CHUNK = 10_000  # records per process_batch call; bounds memory, as a worker batch would

#: Debezium JSON as most consumers configure it: typed payload, no schema part.
DEBEZIUM_TYPED_NO_SCHEMA: dict[str, Any] = {"schemas_enable": False}


@dataclass(frozen=True)
class Row:
    """One measured conversion.

    ``input_options`` configure the encoder that turns the generated Canal
    messages into ``source`` messages (when ``source`` is not Canal JSON).
    """

    source: str
    sink: str
    source_options: Mapping[str, Any] = field(default_factory=dict)
    sink_options: Mapping[str, Any] = field(default_factory=dict)
    input_options: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""
    #: Run on the Python path even where the native core has a plan (``CDC_SMT_NATIVE=0``).
    python_path: bool = False
    #: Measure against the sink format's own floor (orjson of its messages), not Canal's.
    sink_floor: bool = False
    #: ``"fastavro"``: the row's own floor is fastavro's read + write of its dts-avro messages.
    floor: str = ""
    #: The source codec reads through a schema catalog of ``shop.orders`` (formats that type or
    #: name rows from one: ckafka-json, tdsql-binlog-json), as a job's schema file would give it.
    catalog: bool = False

    @property
    def label(self) -> str:
        text = f"{self.source} → {self.sink}"
        note = ", ".join(n for n in (self.note, "CDC_SMT_NATIVE=0" if self.python_path else "") if n)
        return f"{text} ({note})" if note else text


def with_python_twin(row: Row) -> tuple[Row, Row]:
    """A native row and the same conversion on the Python path (``CDC_SMT_NATIVE=0``)."""
    return row, replace(row, python_path=True)


ROWS: tuple[Row, ...] = (
    Row("canal-json", "debezium-json", sink_options=DEBEZIUM_TYPED_NO_SCHEMA, note="typed, no schema"),
    Row(
        "canal-json", "debezium-json", sink_options=DEBEZIUM_TYPED_NO_SCHEMA, note="typed, no schema", python_path=True
    ),
    Row("canal-json", "debezium-json", sink_options={"schemas_enable": True}, note="with schema"),
    Row("canal-json", "debezium-json", sink_options={"schemas_enable": True}, note="with schema", python_path=True),
    Row("ticdc-canal-json", "debezium-json", sink_options=DEBEZIUM_TYPED_NO_SCHEMA, note="typed, no schema"),
    Row(
        "ticdc-canal-json",
        "debezium-json",
        sink_options=DEBEZIUM_TYPED_NO_SCHEMA,
        note="typed, no schema",
        python_path=True,
    ),
    Row("ticdc-canal-json", "debezium-json", sink_options={"schemas_enable": True}, note="with schema"),
    Row("debezium-json", "canal-json", input_options=DEBEZIUM_TYPED_NO_SCHEMA, note="typed, no schema"),
    Row(
        "debezium-json",
        "canal-json",
        input_options=DEBEZIUM_TYPED_NO_SCHEMA,
        note="typed, no schema",
        python_path=True,
    ),
    Row("debezium-json", "ticdc-canal-json", input_options=DEBEZIUM_TYPED_NO_SCHEMA, note="typed, no schema"),
    Row(
        "debezium-json",
        "ticdc-canal-json",
        input_options=DEBEZIUM_TYPED_NO_SCHEMA,
        note="typed, no schema",
        python_path=True,
    ),
    Row(
        "debezium-json",
        "debezium-json",
        input_options=DEBEZIUM_TYPED_NO_SCHEMA,
        sink_options=DEBEZIUM_TYPED_NO_SCHEMA,
        note="typed, no schema",
    ),
    Row(
        "debezium-json",
        "debezium-json",
        input_options=DEBEZIUM_TYPED_NO_SCHEMA,
        sink_options=DEBEZIUM_TYPED_NO_SCHEMA,
        note="typed, no schema",
        python_path=True,
    ),
    Row(
        "debezium-json",
        "debezium-json",
        input_options={"schemas_enable": True},
        sink_options={"schemas_enable": True},
        note="with schema",
    ),
    Row(
        "debezium-json",
        "debezium-json",
        input_options={"schemas_enable": True},
        sink_options={"schemas_enable": True},
        note="with schema",
        python_path=True,
    ),
    Row("canal-json", "canal-json"),
    Row("canal-json", "canal-json", python_path=True),
    Row("canal-json", "canal-json", sink_options={"batch": "transaction"}, note="batch: transaction"),
    Row("ticdc-canal-json", "canal-json"),
    Row("ticdc-canal-json", "canal-json", python_path=True),
    Row("canal-json", "ticdc-canal-json"),
    Row("canal-json", "ticdc-canal-json", python_path=True),
    Row("ticdc-canal-json", "ticdc-canal-json"),
    Row("ticdc-canal-json", "ticdc-canal-json", python_path=True),
    Row("canal-json", "maxwell-json", sink_floor=True),
    Row("canal-json", "maxwell-json", sink_floor=True, python_path=True),
    Row("ticdc-canal-json", "maxwell-json", sink_floor=True),
    Row("ticdc-canal-json", "maxwell-json", sink_floor=True, python_path=True),
    Row("canal-json", "ogg-json", sink_floor=True),
    Row("canal-json", "ogg-json", sink_floor=True, python_path=True),
    Row("ticdc-canal-json", "ogg-json", sink_floor=True),
    Row("canal-json", "dts-avro", floor="fastavro"),
    Row("canal-json", "dts-avro", floor="fastavro", python_path=True),
    Row("ticdc-canal-json", "dts-avro", floor="fastavro"),
    *with_python_twin(Row("dts-avro", "canal-json", floor="fastavro")),
    *with_python_twin(Row("dts-avro", "dts-avro", floor="fastavro")),
    Row("maxwell-json", "canal-json"),
    Row("maxwell-json", "canal-json", python_path=True),
    Row("maxwell-json", "debezium-json", sink_options=DEBEZIUM_TYPED_NO_SCHEMA, note="typed, no schema"),
    Row(
        "maxwell-json",
        "debezium-json",
        sink_options=DEBEZIUM_TYPED_NO_SCHEMA,
        note="typed, no schema",
        python_path=True,
    ),
    Row("cloudcanal-json", "debezium-json", sink_options=DEBEZIUM_TYPED_NO_SCHEMA, note="typed, no schema"),
    Row(
        "cloudcanal-json",
        "debezium-json",
        sink_options=DEBEZIUM_TYPED_NO_SCHEMA,
        note="typed, no schema",
        python_path=True,
    ),
    Row("ogg-json", "canal-json"),
    Row("ogg-json", "canal-json", python_path=True),
    Row("ogg-json", "debezium-json", sink_options=DEBEZIUM_TYPED_NO_SCHEMA, note="typed, no schema"),
    Row("ogg-json", "debezium-json", sink_options=DEBEZIUM_TYPED_NO_SCHEMA, note="typed, no schema", python_path=True),
    Row("cloudcanal-json", "canal-json"),
    Row("cloudcanal-json", "canal-json", python_path=True),
    *with_python_twin(Row("canal-json", "cloudcanal-json", sink_floor=True)),
    *with_python_twin(Row("ticdc-canal-json", "cloudcanal-json", sink_floor=True)),
    *with_python_twin(Row("debezium-json", "canal-json", input_options={"schemas_enable": True}, note="with schema")),
    *with_python_twin(
        Row(
            "debezium-json",
            "maxwell-json",
            input_options=DEBEZIUM_TYPED_NO_SCHEMA,
            note="typed, no schema",
            sink_floor=True,
        )
    ),
    *with_python_twin(
        Row(
            "debezium-json",
            "ogg-json",
            input_options=DEBEZIUM_TYPED_NO_SCHEMA,
            note="typed, no schema",
            sink_floor=True,
        )
    ),
    *with_python_twin(
        Row(
            "debezium-json",
            "cloudcanal-json",
            input_options=DEBEZIUM_TYPED_NO_SCHEMA,
            note="typed, no schema",
            sink_floor=True,
        )
    ),
    *with_python_twin(
        Row(
            "debezium-json",
            "dts-avro",
            input_options=DEBEZIUM_TYPED_NO_SCHEMA,
            note="typed, no schema",
            floor="fastavro",
        )
    ),
    *with_python_twin(
        Row(
            "debezium-json", "maxwell-json", input_options={"schemas_enable": True}, note="with schema", sink_floor=True
        )
    ),
    *with_python_twin(
        Row("debezium-json", "ogg-json", input_options={"schemas_enable": True}, note="with schema", sink_floor=True)
    ),
    *with_python_twin(
        Row("debezium-json", "dts-avro", input_options={"schemas_enable": True}, note="with schema", floor="fastavro")
    ),
    *with_python_twin(
        Row(
            "debezium-json",
            "ticdc-canal-json",
            input_options={"schemas_enable": True},
            note="with schema",
            sink_floor=True,
        )
    ),
    *(
        row
        for sink in ("cloudcanal-json", "ckafka-json", "dataworks-json", "tdsql-binlog-json")
        for row in with_python_twin(
            Row("debezium-json", sink, input_options={"schemas_enable": True}, note="with schema", sink_floor=True)
        )
    ),
    *with_python_twin(
        Row("dataworks-json", "debezium-json", sink_options=DEBEZIUM_TYPED_NO_SCHEMA, note="typed, no schema")
    ),
    *with_python_twin(Row("dataworks-json", "canal-json")),
    *with_python_twin(
        Row(
            "dts-avro",
            "debezium-json",
            sink_options=DEBEZIUM_TYPED_NO_SCHEMA,
            note="typed, no schema",
            floor="fastavro",
        )
    ),
    *with_python_twin(Row("ckafka-json", "canal-json", catalog=True, note="schema file")),
    *with_python_twin(
        Row("ckafka-json", "debezium-json", sink_options=DEBEZIUM_TYPED_NO_SCHEMA, catalog=True, note="schema file")
    ),
    *with_python_twin(Row("canal-json", "ckafka-json", sink_floor=True)),
    *with_python_twin(
        Row(
            "debezium-json",
            "ckafka-json",
            input_options=DEBEZIUM_TYPED_NO_SCHEMA,
            note="typed, no schema",
            sink_floor=True,
        )
    ),
    *with_python_twin(Row("canal-json", "dataworks-json", sink_floor=True)),
    *with_python_twin(
        Row(
            "debezium-json",
            "dataworks-json",
            input_options=DEBEZIUM_TYPED_NO_SCHEMA,
            note="typed, no schema",
            sink_floor=True,
        )
    ),
    *with_python_twin(Row("tdsql-binlog-json", "canal-json", catalog=True, note="schema file")),
    *with_python_twin(
        Row(
            "tdsql-binlog-json",
            "debezium-json",
            sink_options=DEBEZIUM_TYPED_NO_SCHEMA,
            catalog=True,
            note="schema file",
        )
    ),
    *with_python_twin(Row("canal-json", "tdsql-binlog-json", sink_floor=True)),
    *with_python_twin(
        Row(
            "debezium-json",
            "tdsql-binlog-json",
            input_options=DEBEZIUM_TYPED_NO_SCHEMA,
            note="typed, no schema",
            sink_floor=True,
        )
    ),
)


# -- data ---------------------------------------------------------------------------

MYSQL_TYPES = {
    "id": "bigint(20) unsigned",
    "order_no": "varchar(32)",
    "customer_id": "int(11)",
    "status": "enum('NEW','PAID','SHIPPED')",
    "amount": "decimal(12,2)",
    "weight_kg": "double",
    "is_gift": "tinyint(1)",
    "address": "varchar(255)",
    "created_at": "datetime(3)",
    "updated_at": "timestamp",
    "ship_date": "date",
}
SQL_TYPES = {  # JDBC codes, as Canal writes them
    "id": -5,
    "order_no": 12,
    "customer_id": 4,
    "status": 4,
    "amount": 3,
    "weight_kg": 8,
    "is_gift": -6,
    "address": 12,
    "created_at": 93,
    "updated_at": 93,
    "ship_date": 91,
}
_STREETS = ("Nanjing Rd", "Huaihai Middle Rd", "Century Ave", "Hengshan Rd")


def _row(rnd: random.Random, row_id: int) -> dict[str, str | None]:
    """One order row in Canal's value form (every value a string or null)."""
    created = 1_700_000_000 + row_id * 7
    amount = Decimal(rnd.randrange(100, 9_999_999)) / 100
    return {
        "id": str(row_id),
        "order_no": f"SO{row_id:012d}",
        "customer_id": str(rnd.randrange(1, 2_000_000)),
        "status": rnd.choice(("NEW", "PAID", "SHIPPED")),
        "amount": f"{amount:.2f}",
        "weight_kg": repr(round(rnd.uniform(0.1, 40.0), 3)),
        "is_gift": rnd.choice(("0", "1")),
        "address": f"{rnd.randrange(1, 2000)} {rnd.choice(_STREETS)}, Shanghai" if rnd.random() < 0.9 else None,
        "created_at": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(created)) + f".{rnd.randrange(1000):03d}",
        "updated_at": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(created + rnd.randrange(86_400))),
        "ship_date": time.strftime("%Y-%m-%d", time.gmtime(created + 172_800)),
    }


def canal_messages(count: int, seed: int = 7) -> list[bytes]:
    """``count`` Canal JSON messages (one row each): 60 % insert, 30 % update, 10 % delete."""
    return list(iter_canal_messages(count, seed))


def iter_canal_messages(count: int, seed: int = 7) -> Iterator[bytes]:
    """:func:`canal_messages`, one at a time (for runs that must not hold them all)."""
    rnd = random.Random(seed)
    for i in range(count):
        row = _row(rnd, i + 1)
        kind = rnd.random()
        old = None
        if kind < 0.6:
            typ = "INSERT"
        elif kind < 0.9:
            typ = "UPDATE"
            old = [{"status": "NEW", "updated_at": row["created_at"][:19]}]
        else:
            typ = "DELETE"
        es = 1_700_000_000_000 + i * 7
        msg = {
            "data": [row],
            "database": "shop",
            "es": es,
            "id": i + 1,
            "isDdl": False,
            "mysqlType": MYSQL_TYPES,
            "old": old,
            "pkNames": ["id"],
            "sql": "",
            "sqlType": SQL_TYPES,
            "table": "orders",
            "ts": es + 35,
            "type": typ,
        }
        yield orjson.dumps(msg)


#: The generated table's DDL, for formats that name or type columns from a schema catalog.
ORDERS_DDL = (
    "CREATE TABLE `orders` ("
    + ", ".join(f"`{c}` {t}{'' if c == 'address' else ' NOT NULL'}" for c, t in MYSQL_TYPES.items())
    + ", PRIMARY KEY (`id`))"
)


# -- measuring ---------------------------------------------------------------------------


@dataclass
class Result:
    label: str
    rate: float | None = None  # messages per second
    floor_rate: float | None = None  # the row's own floor, when its source is not Canal JSON
    status: str = "ok"  # ok | missing | error
    detail: str = ""
    errors: int = 0
    #: ``--split``: the native plan's ``convert`` alone over the same batches (no records made)
    convert_rate: float | None = None


def best_seconds(fn: Callable[[], Any], runs: int) -> float:
    """Least CPU time of ``runs`` calls (collecting garbage before each).

    CPU time, not wall time: on a shared machine, time spent descheduled is
    not the codec's cost. The work is single-threaded, so the two agree on an
    idle machine.
    """
    best = float("inf")
    for _ in range(runs):
        gc.collect()
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def floor_seconds(values: Sequence[bytes], runs: int) -> float:
    loads, dumps = orjson.loads, orjson.dumps

    def once() -> None:
        for v in values:
            dumps(loads(v))

    return best_seconds(once, runs)


def convert_all(chain: Chain, records: Sequence[Record]) -> tuple[list[Record], int]:
    """Outputs and dead-letter count of one pass (untimed use: building inputs)."""
    outputs: list[Record] = []
    errors = 0
    for start in range(0, len(records), CHUNK):
        result = chain.process_batch(records[start : start + CHUNK])
        outputs.extend(result.outputs)
        errors += len(result.dead_letters)
    return outputs, errors


class Inputs:
    """Messages in each source format, converted once from the generated Canal ones."""

    def __init__(self, canal: list[bytes]) -> None:
        self.canal = canal
        self._cache: dict[tuple[str, bytes], list[Record]] = {}

    def records(self, fmt: str, options: Mapping[str, Any]) -> list[Record]:
        key = (fmt, orjson.dumps(dict(options), option=orjson.OPT_SORT_KEYS))
        if key not in self._cache:
            canal = [Record(value=v) for v in self.canal]
            if fmt == SOURCE_FORMAT:
                self._cache[key] = canal
            else:
                chain = Chain(get_codec(SOURCE_FORMAT), get_codec(fmt, options), [], "all")
                outputs, errors = convert_all(chain, canal)
                if errors:
                    raise CdcSmtError(f"{errors} generated messages could not be converted to {fmt}")
                self._cache[key] = [Record(value=r.value, key=r.key) for r in outputs]
        return self._cache[key]


def measure(row: Row, inputs: Inputs, runs: int, split: bool = False) -> Result:
    known = registry()
    absent = [f for f in (row.source, row.sink, SOURCE_FORMAT) if f not in known]
    if absent:
        return Result(row.label, status="missing", detail=", ".join(sorted(set(absent))))
    try:
        records = inputs.records(row.source, row.input_options)
        errors = 0
        native = False
        catalog = orders_catalog() if row.catalog else None  # a schema file: DML does not change it

        def once() -> None:
            nonlocal errors, native
            source = get_codec(row.source, row.source_options, catalog=catalog)
            chain = Chain(source, get_codec(row.sink, row.sink_options), [], "all")
            if row.python_path:
                chain.native = None
            native = chain.native is not None
            errors = 0
            for start in range(0, len(records), CHUNK):
                errors += len(chain.process_batch(records[start : start + CHUNK]).dead_letters)
            errors += len(chain.flush().dead_letters)

        seconds = best_seconds(once, runs)
        convert_seconds = best_seconds(lambda: convert_only(row, records, catalog), runs) if split and native else None
        floor = None
        if row.sink_floor:  # the sink's own orjson floor, on the messages the conversion writes
            written = [r.value for r in inputs.records(row.sink, row.sink_options) if r.value is not None]
            floor = len(written) / floor_seconds(written, runs)
        elif row.source != SOURCE_FORMAT and isinstance(get_codec(row.source), JsonCodec):  # JSON: an orjson floor
            floor = len(records) / floor_seconds([r.value for r in records if r.value is not None], runs)
        if row.floor == "fastavro":  # the same records as DTS Avro, read and written by fastavro
            avro = [r.value for r in inputs.records("dts-avro", {}) if r.value is not None]
            floor = len(avro) / avro_baseline_seconds(avro, runs)
    except CdcSmtError as exc:
        return Result(row.label, status="error", detail=str(exc))
    label = row.label + (" [native]" if native else "")
    result = Result(label, rate=len(records) / seconds, errors=errors, floor_rate=floor)
    if convert_seconds:
        result.convert_rate = len(records) / convert_seconds
    return result


def convert_only(row: Row, records: Sequence[Record], catalog: Any) -> None:
    """The row's native plan over its batches, as ``process_batch`` calls it, without the
    Python side around it (records made, records Python converts): ``--split``."""
    chain = Chain(
        get_codec(row.source, row.source_options, catalog=catalog), get_codec(row.sink, row.sink_options), [], "all"
    )
    plan = chain.native
    assert plan is not None
    for start in range(0, len(records), CHUNK):
        batch = records[start : start + CHUNK]
        plan.plan.convert([r.value for r in batch], [r.key for r in batch] if plan.needs_keys else None)


@dataclass
class FormatResult:
    """Decode and encode of one format's messages, against that format's baseline."""

    name: str
    baseline: str = ""
    messages: int = 0
    avg_bytes: float = 0.0
    baseline_rate: float | None = None
    decode_rate: float | None = None
    encode_rate: float | None = None
    status: str = "ok"  # ok | missing | error
    detail: str = ""
    catalog: bool = False

    @property
    def label(self) -> str:
        return f"{self.name} (decode + `typed()`; encode of typed events{'; DDL catalog' if self.catalog else ''})"


def orders_catalog() -> Any:
    """A schema catalog holding ``shop.orders`` from :data:`ORDERS_DDL`."""
    from cdc_smt.transforms.catalog import SchemaCatalog  # sqlglot is heavy: only when a format needs it

    catalog = SchemaCatalog()
    warnings = catalog.apply_ddl("shop", ORDERS_DDL)
    if warnings or catalog.get("shop", "orders") is None:
        raise CdcSmtError(f"cannot build the benchmark catalog: {'; '.join(warnings)}")
    return catalog


def avro_baseline_seconds(values: Sequence[bytes], runs: int) -> float:
    """``fastavro.schemaless_reader`` + ``schemaless_writer`` of each message (schema parsed once).

    Read with ``return_record_name=True``, as the codec reads: union values then come
    back as ``(branch, value)`` and the writer need not guess the branch by validating
    the value against each one (which makes the write about four times slower).
    """
    import fastavro

    from cdc_smt.schemas import load_avro

    parsed = fastavro.parse_schema(load_avro("dts-avro"))
    reader, writer, BytesIO = fastavro.schemaless_reader, fastavro.schemaless_writer, io.BytesIO

    def once() -> None:
        for v in values:
            buf = BytesIO()
            writer(buf, parsed, reader(BytesIO(v), parsed, None, True))
            buf.getvalue()

    return best_seconds(once, runs)


def json_baseline_seconds(values: Sequence[bytes | None], runs: int) -> float:
    """``orjson.loads`` + ``orjson.dumps`` of each message; null values (tombstones) are skipped."""
    return floor_seconds([v for v in values if v is not None], runs)


def measure_format(name: str, canal: Sequence[bytes], runs: int) -> FormatResult:
    """Encode the Canal messages into ``name`` once, then time decode (typed) and encode."""
    known = registry()
    if name not in known or SOURCE_FORMAT not in known:
        return FormatResult(name, status="missing", detail=", ".join(sorted({name, SOURCE_FORMAT} - set(known))))
    cls = known[name]
    result = FormatResult(name, catalog=cls.own_catalog)
    try:
        catalog = orders_catalog() if cls.own_catalog else None
        source = get_codec(SOURCE_FORMAT)
        sink = get_codec(name, catalog=catalog)
        records: list[Record] = []
        for message in canal:
            for event in source.decode(Record(value=message)):
                records += sink.encode(event)
        values = [r.value for r in records]
        result.messages = len(records)
        result.avg_bytes = sum(len(v) for v in values if v is not None) / max(1, len(records))

        if cls.binary:
            if name != "dts-avro":
                raise CdcSmtError(f"no baseline for binary format {name}")
            result.baseline = "`fastavro` schemaless_reader + schemaless_writer"
            base = avro_baseline_seconds(values, runs)
        else:
            result.baseline = "`orjson.loads` + `orjson.dumps`"
            base = json_baseline_seconds(values, runs)
        result.baseline_rate = len(records) / base

        decoded: list[Any] = []

        def decode_once() -> None:
            codec = get_codec(name, catalog=catalog)
            decode = codec.decode
            out = []
            for r in records:
                for e in decode(r):
                    out.append(e.typed())
            for e in codec.flush():
                out.append(e.typed())
            decoded[:] = out

        result.decode_rate = len(records) / best_seconds(decode_once, runs)
        events = list(decoded)
        written = 0

        def encode_once() -> None:
            nonlocal written
            codec = get_codec(name, catalog=catalog)
            encode = codec.encode
            out: list[Record] = []
            for e in events:
                out += encode(e)
            written = len(out)

        seconds = best_seconds(encode_once, runs)  # sets ``written``
        result.encode_rate = written / seconds if written else None
        if written != len(records):
            result.detail = f"{len(events)} events → {written} messages (input had {len(records)})"
    except Exception as exc:  # noqa: BLE001 - one failing format must not stop the others
        result.status, result.detail = "error", f"{type(exc).__name__}: {exc}"
    return result


def pin(cpu: int | None) -> str:
    """Optionally pin to one CPU (steadier numbers on an idle machine; worse on a busy one)."""
    if cpu is None:
        return "one thread, not pinned"
    try:
        os.sched_setaffinity(0, {cpu})
    except (AttributeError, OSError) as exc:
        return f"not pinned ({exc})"
    return f"pinned to CPU {cpu}"


def pin_one_core() -> str:
    """Pin to the lowest CPU this process may use (``bench.chain`` relies on it)."""
    try:
        cpu = min(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return "not pinned"
    return pin(cpu)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# -- report ---------------------------------------------------------------------------------


def _cells(result: Result, floor_rate: float) -> tuple[str, str, str]:
    """msgs/s, cost vs floor and speed vs floor (the row's own floor when it has one)."""
    if result.rate is None:
        return result.status, result.detail, ""
    floor = result.floor_rate or floor_rate
    cost = f"{floor / result.rate:.1f}×"
    if result.errors:
        cost += f" ({result.errors} errors!)"
    own = f" (own floor {floor:,.0f}/s)" if result.floor_rate else ""
    split = ""
    if result.convert_rate:  # the Python side: what process_batch adds to the plan's convert
        python_ns = 1e9 / result.rate - 1e9 / result.convert_rate
        split = f"; convert alone {result.convert_rate:,.0f}/s, Python side {python_ns:,.0f} ns/msg"
    return f"{result.rate:,.0f}", cost, f"{result.rate / floor:.2f}×{own}{split}"


def markdown_table(results: list[Result], floor_rate: float) -> str:
    lines = ["| conversion | msgs/s | cost vs floor | speed vs floor |", "|---|---:|---:|---:|"]
    lines.append(f"| floor: `orjson.loads` + `orjson.dumps` | {floor_rate:,.0f} | 1.0× | 1.00× |")
    for r in results:
        rate, cost, speed = _cells(r, floor_rate)
        lines.append(f"| {r.label} | {rate} | {cost} | {speed} |")
    return "\n".join(lines)


def _format_cells(r: FormatResult) -> tuple[str, str, str, str, str]:
    def rate(v: float | None) -> str:
        return f"{v:,.0f}" if v is not None else r.status

    def cost(v: float | None) -> str:
        return f"{r.baseline_rate / v:.1f}×" if v is not None and r.baseline_rate else "–"

    return rate(r.baseline_rate), rate(r.decode_rate), cost(r.decode_rate), rate(r.encode_rate), cost(r.encode_rate)


def format_table(results: list[FormatResult]) -> str:
    lines = [
        "| format | msgs | bytes/msg | baseline | baseline msgs/s | decode msgs/s | decode × baseline "
        "| encode msgs/s | encode × baseline | note |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        base, dec, dec_cost, enc, enc_cost = _format_cells(r)
        lines.append(
            f"| {r.label} | {r.messages:,} | {r.avg_bytes:.0f} | {r.baseline or '–'} | {base} "
            f"| {dec} | {dec_cost} | {enc} | {enc_cost} | {r.detail} |"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class RssPlan:
    """One native plan ``--rss`` measures: the codecs, their options and the chain's transforms."""

    source: str
    sink: str
    sink_options: Mapping[str, Any] = field(default_factory=dict)
    #: The options the generated Canal messages are written into ``source`` with.
    input_options: Mapping[str, Any] = field(default_factory=dict)
    transforms: tuple[Mapping[str, Any], ...] = ()


#: ``unwrap`` as a job flattening Debezium events would configure it.
_UNWRAP = {"type": "unwrap", "delete_handling": "rewrite", "add_fields": ["op", "table", "source_ts_ms"]}

#: The native plans ``--rss`` measures, by name (``--rows`` selects among them as among the rows).
RSS_PLANS: dict[str, RssPlan] = {
    "canal-json -> debezium-json (no schema)": RssPlan("canal-json", "debezium-json", DEBEZIUM_TYPED_NO_SCHEMA),
    "canal-json -> debezium-json (with schema)": RssPlan("canal-json", "debezium-json", {"schemas_enable": True}),
    "ticdc-canal-json -> debezium-json (no schema)": RssPlan(
        "ticdc-canal-json", "debezium-json", DEBEZIUM_TYPED_NO_SCHEMA
    ),
    "canal-json -> canal-json": RssPlan("canal-json", "canal-json"),
    "ticdc-canal-json -> canal-json": RssPlan("ticdc-canal-json", "canal-json"),
    "canal-json -> ticdc-canal-json": RssPlan("canal-json", "ticdc-canal-json"),
    "ticdc-canal-json -> ticdc-canal-json": RssPlan("ticdc-canal-json", "ticdc-canal-json"),
    "debezium-json -> ticdc-canal-json": RssPlan("debezium-json", "ticdc-canal-json"),
    "canal-json -> maxwell-json": RssPlan("canal-json", "maxwell-json"),
    "canal-json -> ogg-json": RssPlan("canal-json", "ogg-json"),
    "debezium-json -> canal-json": RssPlan("debezium-json", "canal-json"),
    "debezium-json -> debezium-json": RssPlan("debezium-json", "debezium-json"),
    "cloudcanal-json -> debezium-json (no schema)": RssPlan(
        "cloudcanal-json", "debezium-json", DEBEZIUM_TYPED_NO_SCHEMA
    ),
    "cloudcanal-json -> canal-json": RssPlan("cloudcanal-json", "canal-json"),
    "canal-json -> cloudcanal-json": RssPlan("canal-json", "cloudcanal-json"),
    "debezium-json -> cloudcanal-json": RssPlan("debezium-json", "cloudcanal-json"),
    "canal-json -> ckafka-json": RssPlan("canal-json", "ckafka-json"),
    "debezium-json -> ckafka-json": RssPlan("debezium-json", "ckafka-json"),
    "canal-json -> dataworks-json": RssPlan("canal-json", "dataworks-json"),
    "debezium-json -> dataworks-json": RssPlan("debezium-json", "dataworks-json"),
    "canal-json -> tdsql-binlog-json": RssPlan("canal-json", "tdsql-binlog-json"),
    "debezium-json -> tdsql-binlog-json": RssPlan("debezium-json", "tdsql-binlog-json"),
    "maxwell-json -> debezium-json (no schema)": RssPlan("maxwell-json", "debezium-json", DEBEZIUM_TYPED_NO_SCHEMA),
    "ogg-json -> canal-json": RssPlan("ogg-json", "canal-json"),
    "debezium-json -> maxwell-json": RssPlan("debezium-json", "maxwell-json"),
    "debezium-json -> dts-avro": RssPlan("debezium-json", "dts-avro"),
    "dataworks-json -> debezium-json (no schema)": RssPlan("dataworks-json", "debezium-json", DEBEZIUM_TYPED_NO_SCHEMA),
    "dataworks-json -> canal-json": RssPlan("dataworks-json", "canal-json"),
    "dts-avro -> debezium-json (no schema)": RssPlan("dts-avro", "debezium-json", DEBEZIUM_TYPED_NO_SCHEMA),
    "dts-avro -> canal-json": RssPlan("dts-avro", "canal-json"),
    "dts-avro -> dts-avro": RssPlan("dts-avro", "dts-avro"),
    "debezium-json -> canal-json (with schema)": RssPlan(
        "debezium-json", "canal-json", input_options={"schemas_enable": True}
    ),
    **{
        f"debezium-json -> {sink} (with schema)": RssPlan("debezium-json", sink, input_options={"schemas_enable": True})
        for sink in ("cloudcanal-json", "ckafka-json", "dataworks-json", "tdsql-binlog-json")
    },
    "canal-json -> debezium-json (no schema, unwrap)": RssPlan(
        "canal-json", "debezium-json", DEBEZIUM_TYPED_NO_SCHEMA, transforms=(_UNWRAP,)
    ),
}


def selected(label: str, rows: str | None) -> bool:
    """Does ``--rows`` (comma-separated texts, ``->`` or ``→``) select the row or plan ``label``?"""
    if rows is None:
        return True
    label = label.replace("→", "->")
    return any(t.strip().replace("→", "->") in label for t in rows.split(","))


def rss_child(plan: str, count: int) -> int:
    """Convert ``count`` generated messages through ``plan`` in chunks; print the peak RSS
    (MiB) after 10 %, 50 % and 100 % of them as JSON."""
    import resource

    from cdc_smt.transforms.config import build_transforms

    p = RSS_PLANS[plan]
    configs = [dict(t) for t in p.transforms]
    chain = Chain(get_codec(p.source), get_codec(p.sink, p.sink_options), build_transforms(configs), "all")
    if chain.native is None:
        print(orjson.dumps({"error": "no native plan"}).decode())
        return 1
    to_source = (
        Chain(get_codec(SOURCE_FORMAT), get_codec(p.source, p.input_options), [], "all")
        if p.source != SOURCE_FORMAT
        else None
    )
    marks = {count // 10: "10%", count // 2: "50%", count: "100%"}
    peaks: dict[str, float] = {}
    done = errors = python = 0  # python: of the first chunk
    chunk: list[Record] = []
    for value in iter_canal_messages(count):
        chunk.append(Record(value=value))
        if len(chunk) == CHUNK or done + len(chunk) == count:
            records = (
                chunk
                if to_source is None
                else [Record(value=r.value, key=r.key) for r in to_source.process_batch(chunk).outputs]
            )
            if not done:  # how many the plan leaves to Python (a fresh chain: the measured one keeps its state)
                probe = Chain(get_codec(p.source), get_codec(p.sink, p.sink_options), build_transforms(configs), "all")
                keys = [r.key for r in records] if chain.native.needs_keys else None
                python = (
                    probe.native.convert_values([r.value for r in records], keys)[0].count(-1) if probe.native else 0
                )
            errors += len(chain.process_batch(records).dead_letters)
            done += len(chunk)
            chunk = []
            for mark, name in marks.items():
                if done >= mark and name not in peaks:
                    peaks[name] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(orjson.dumps({"peaks": peaks, "errors": errors, "python": python, "messages": done}).decode())
    return 0


def rss_report(count: int, rows: str | None = None) -> int:
    """Each native plan (``rows``: those ``--rows`` selects) in a child process of its own (a
    fresh peak), as a markdown table."""
    import subprocess

    lines = [
        f"| native plan ({count:,} messages) | peak RSS at 10 % | 50 % | 100 % | flat? |",
        "|---|---:|---:|---:|---|",
    ]
    for plan in (p for p in RSS_PLANS if selected(p, rows)):
        proc = subprocess.run(
            [sys.executable, "-m", "bench.codec", "--rss-child", plan, "--rss", str(count)],
            capture_output=True,
            text=True,
            check=False,
        )
        try:
            report = orjson.loads(proc.stdout.strip().splitlines()[-1])
        except (IndexError, orjson.JSONDecodeError):
            print(f"{plan}: failed: {proc.stderr[-500:]}", flush=True)
            continue
        if "error" in report:
            print(f"{plan}: {report['error']}", flush=True)
            continue
        p = report["peaks"]
        flat = "yes" if p["100%"] <= p["10%"] * 1.1 else f"no (+{p['100%'] - p['10%']:.0f} MiB)"
        errors = f", {report['errors']} dead letters!" if report["errors"] else ""
        if report["python"]:
            errors += f" ({report['python']:,} of the first {CHUNK:,} messages on the Python path)"
        lines.append(f"| {plan} | {p['10%']:.0f} MiB | {p['50%']:.0f} MiB | {p['100%']:.0f} MiB | {flat}{errors} |")
        print(lines[-1], flush=True)
    print()
    print("\n".join(lines))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    # The hosts run with this allocator tuning (connector/tuning.py); so do the benches.
    print(f"malloc tuning: {'on' if tune_allocator() else 'off'}")
    parser = argparse.ArgumentParser(prog="python -m bench.codec", description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200_000, help="messages per run (default 200000)")
    parser.add_argument("--runs", type=int, default=3, help="runs per row; the best counts (default 3)")
    parser.add_argument("--pin", type=int, metavar="CPU", help="pin the process to this CPU (Linux)")
    parser.add_argument(
        "--formats",
        metavar="NAMES",
        help="comma-separated formats for the per-format table (default: every registered format; '' for none)",
    )
    parser.add_argument(
        "--rss",
        type=int,
        nargs="?",
        const=1_000_000,
        metavar="N",
        help="peak RSS of converting N messages (default 1M) through each native plan (--rows selects), "
        "instead of the tables",
    )
    parser.add_argument(
        "--rows",
        metavar="TEXTS",
        help="only the conversion rows whose label contains one of these comma-separated texts ('→ canal-json')",
    )
    parser.add_argument(
        "--split",
        action="store_true",
        help="for native rows also time the plan's convert alone: the Python side is the difference",
    )
    parser.add_argument("--rss-child", metavar="PLAN", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rss_child is not None:
        return rss_child(args.rss_child, args.rss or 1_000_000)
    if args.rss is not None:
        return rss_report(args.rss, args.rows)

    pinned = pin(args.pin)
    messages = canal_messages(args.count)
    avg = sum(map(len, messages)) / len(messages)
    print(
        f"{args.count} messages, {avg:.0f} bytes on average (Canal JSON); best CPU time of {args.runs}; "
        f"Python {platform.python_version()}, orjson {orjson.__version__}; {cpu_model()}, {pinned}; "
        f"{native.describe()}",
        flush=True,
    )
    floor_rate = args.count / floor_seconds(messages, args.runs)
    print(f"{'floor: orjson loads+dumps':<55} {floor_rate:>12,.0f} msgs/s", flush=True)

    inputs = Inputs(messages)
    results = []
    for row in ROWS:
        if not selected(row.label, args.rows):
            continue
        result = measure(row, inputs, args.runs, args.split)
        results.append(result)
        rate, cost, speed = _cells(result, floor_rate)
        unit = " msgs/s" if result.rate is not None else ""
        print(f"{result.label:<55} {rate:>12}{unit}  {cost}  {speed}", flush=True)
    formats = list(registry()) if args.formats is None else [f.strip() for f in args.formats.split(",") if f.strip()]
    format_results = []
    if formats:
        print()
    for name in formats:
        fr = measure_format(name, messages, args.runs)
        format_results.append(fr)
        base, dec, dec_cost, enc, enc_cost = _format_cells(fr)
        print(
            f"{name:<20} baseline {base:>10}  decode {dec:>10} ({dec_cost})  encode {enc:>10} ({enc_cost})"
            + (f"  {fr.detail}" if fr.detail else ""),
            flush=True,
        )
    print()
    print(markdown_table(results, floor_rate))
    if format_results:
        print()
        print(format_table(format_results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
