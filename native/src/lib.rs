//! cdc-smt's native core: whole transcoding plans in Rust, under the Python API.
//!
//! The Python codecs stay the reference. A plan converts a batch of raw
//! message values and answers, per message, either the output records'
//! (value, key) bytes -- byte-identical to the Python path -- or "not handled"
//! (``None``), and the Python path then processes exactly that message (so
//! dead letters are the Python path's own).

mod arrow;
mod canal;
mod canal_out;
mod canal_shape;
mod canal_text;
mod canon;
mod ckafka_in;
mod ckafka_out;
mod cloudcanal;
mod cloudcanal_out;
mod connect_in;
mod dataworks_in;
mod dataworks_out;
mod debezium_in;
mod dts_avro_in;
mod dts_avro_out;
mod dts_avro_self;
mod json;
mod json_scan;
mod kafka_batch;
mod maxwell_in;
mod maxwell_out;
mod ogg_in;
mod ogg_out;
mod partition;
mod records;
mod row_shape;
mod scratch;
mod tdsql_in;
mod tdsql_out;
mod ticdc_out;
mod typed_in;
mod typed_json;
mod unwrap;
mod values;

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use values::{Fallback, Op};

/// The plans this build runs natively (``cdc-smt formats --json`` lists them).
const PLANS: &[&str] = &[
    "canal-json -> debezium-json",
    "ticdc-canal-json -> debezium-json",
    "canal-json -> canal-json",
    "ticdc-canal-json -> canal-json",
    "canal-json -> maxwell-json",
    "ticdc-canal-json -> maxwell-json",
    "canal-json -> ogg-json",
    "ticdc-canal-json -> ogg-json",
    "canal-json -> dts-avro",
    "ticdc-canal-json -> dts-avro",
    "debezium-json -> canal-json",
    "debezium-json -> debezium-json",
    "canal-json -> ticdc-canal-json",
    "ticdc-canal-json -> ticdc-canal-json",
    "debezium-json -> ticdc-canal-json",
    "maxwell-json -> canal-json",
    "maxwell-json -> debezium-json",
    "ogg-json -> canal-json",
    "ogg-json -> debezium-json",
    "cloudcanal-json -> debezium-json",
    "cloudcanal-json -> canal-json",
    "debezium-json -> maxwell-json",
    "debezium-json -> ogg-json",
    "debezium-json -> dts-avro",
    "dataworks-json -> debezium-json",
    "dataworks-json -> canal-json",
    "dts-avro -> debezium-json",
    "dts-avro -> canal-json",
    "canal-json -> cloudcanal-json",
    "ticdc-canal-json -> cloudcanal-json",
    "debezium-json -> cloudcanal-json",
    "dts-avro -> dts-avro",
    "ckafka-json -> canal-json",
    "ckafka-json -> debezium-json",
    "canal-json -> ckafka-json",
    "ticdc-canal-json -> ckafka-json",
    "debezium-json -> ckafka-json",
    "canal-json -> dataworks-json",
    "ticdc-canal-json -> dataworks-json",
    "debezium-json -> dataworks-json",
    "tdsql-binlog-json -> canal-json",
    "tdsql-binlog-json -> debezium-json",
    "canal-json -> tdsql-binlog-json",
    "ticdc-canal-json -> tdsql-binlog-json",
    "debezium-json -> tdsql-binlog-json",
];

/// What the chain's transforms do to one column's values.
enum Mask {
    None,
    /// ``mask_field`` mode ``null``.
    Null,
    /// ``mask_field`` mode ``hash``: hex SHA-256 of the salt and the text (string columns).
    Hash(Vec<u8>),
    /// ``mask_field`` modes ``replace`` and ``empty``: the constant's written JSON.
    Const(Vec<u8>),
}

struct Column {
    name: String,
    op: Op,
    /// The output name as a JSON string (``None``: dropped by ``replace_field``).
    out: Option<Vec<u8>>,
    /// A transform types the row while the column is still there: a value Python could
    /// not type sends the record to Python even if the column is not written.
    validate: bool,
    mask: Mask,
}

/// A column ``insert_field`` adds to the row's image (the after-image, else the before-image).
pub(crate) enum Added {
    /// The same value for every row of an op (``static``, per-table metadata): per op plan.
    Const(usize),
    /// The message's ``es`` (``source_ts_ms``), ``ts`` (``processing_ts_ms``), the row index.
    Es,
    Ts,
    Row,
}

/// The output of one op (c, u, d, r) of a table.
struct OpPlan {
    /// Index into the Python side's (topic, header edits) list.
    variant: usize,
    /// The source block around its ``ts_ms`` and ``row`` (the rest is the same for every
    /// row of a table and op: connector, name, snapshot, db, table after ``merge_shards``).
    source: (Vec<u8>, Vec<u8>, Vec<u8>),
    consts: Vec<Vec<u8>>,
    key_schema: Option<Vec<u8>>,
    /// The envelope's Connect schema (an ``unwrap``ped op: the flat row's).
    envelope_schema: Option<Vec<u8>>,
    /// ``unwrap`` applies: the records written instead of the change event (``unwrap.rs``).
    unwrap: Option<unwrap::Unwrapped>,
}

/// One table layout (Canal's mysqlType/sqlType/pkNames, database, table) compiled by Python.
struct TablePlan {
    columns: Vec<Column>,
    index: HashMap<String, usize>,
    added: Vec<(Vec<u8>, Added)>,
    /// Key fields (output names, indexes into ``columns``), in key order.
    key: Vec<(String, usize)>,
    /// The key was set by a transform: a row without one of its columns goes to Python.
    explicit_key: bool,
    ops: [OpEntry; 4],
}

/// What becomes of one op's rows.
enum OpEntry {
    /// A transform drops them, and none before it can fail on a row.
    Dropped,
    /// Python processes them (a transform that can fail on a row comes before the one that drops them).
    Python,
    Plan(OpPlan),
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct TableKey {
    mysql_type: Option<String>,
    sql_type: Option<String>,
    pk_names: Vec<String>,
    database: Option<String>,
    table: Option<String>,
}

impl TableKey {
    fn matches(&self, m: &canal::Message) -> bool {
        self.mysql_type.as_deref() == m.mysql_type.map(|r| r.get())
            && self.sql_type.as_deref() == m.sql_type.map(|r| r.get())
            && self.database.as_deref() == m.database.as_deref()
            && self.table.as_deref() == m.table.as_deref()
            && match &m.pk_names {
                None => self.pk_names.is_empty(),
                Some(names) => names.len() == self.pk_names.len() && names.iter().zip(&self.pk_names).all(|(a, b)| a == b),
            }
    }

    fn of(m: &canal::Message) -> Self {
        TableKey {
            mysql_type: m.mysql_type.map(|r| r.get().to_owned()),
            sql_type: m.sql_type.map(|r| r.get().to_owned()),
            pk_names: m.pk_names.iter().flatten().map(|n| n.to_string()).collect(),
            database: m.database.as_deref().map(str::to_owned),
            table: m.table.as_deref().map(str::to_owned),
        }
    }
}

const CACHE_SIZE: usize = 1024;

/// The plan's writer: the encoder side of the seam (the reader is Canal's, per dialect).
enum Encoder {
    /// Debezium change events (``CanalToDebezium``'s first writer).
    Debezium,
    /// Canal flat messages (``canal_out``); ``transaction``: the encoder's ``batch: transaction``.
    Canal { transaction: bool },
    /// Maxwell's JSON (``maxwell_out``, values by ``typed_json``).
    Maxwell,
    /// GoldenGate's JSON (``ogg_out``, values by ``typed_json``).
    Ogg,
    /// DTS Avro records (``dts_avro_out``), numbered by the encoder's counter.
    DtsAvro(dts_avro_out::Ids),
    /// TiCDC's Canal-JSON (``ticdc_out``).
    Ticdc,
    /// CloudCanal's JSON (``cloudcanal_out``).
    CloudCanal,
    /// CKafka's format 1 (``ckafka_out``, on CloudCanal's tables), ``TIME`` in this zone.
    CKafka(dataworks_in::Zone),
    /// DataWorks' JSON (``dataworks_out``, on CloudCanal's tables), ``sequenceId`` from the
    /// encoder's counter; ``split``: updates as two messages.
    DataWorks { ids: dts_avro_out::Ids, split: bool },
    /// TDSQL's binlog row events (``tdsql_out``, on CloudCanal's tables).
    Tdsql,
}

impl Encoder {
    /// The encoder's counter the plan numbers records by (DTS record ids, DataWorks sequences).
    fn ids(&mut self) -> Option<&mut dts_avro_out::Ids> {
        match self {
            Encoder::DtsAvro(ids) | Encoder::DataWorks { ids, .. } => Some(ids),
            _ => None,
        }
    }

    /// Inside a batch after a record Python numbers: every record is Python's.
    fn closed(&self) -> bool {
        matches!(self, Encoder::DtsAvro(ids) | Encoder::DataWorks { ids, .. } if !ids.open)
    }
}

/// The plan's reader: the decoder side of the seam (what differs per input dialect lives
/// in the reader; TiCDC's dialect of Canal is ``ticdc``).
enum Reader {
    /// Canal flat messages (``canal``), tables keyed by Canal's type maps.
    Canal,
    /// Debezium change events (``debezium_in``): tables keyed by the values' layout, and
    /// the record keys read (Python takes the primary key from them).
    Debezium(Box<debezium_in::Reader>),
    /// Maxwell's or GoldenGate's typed JSON (``typed_in``): tables keyed by the values' layout.
    Typed(Box<typed_in::Reader>),
    /// CloudCanal messages (``cloudcanal``): Canal's under other names, read as Canal's.
    CloudCanal,
    /// DataWorks messages (``dataworks_in``): tables keyed by the declared columns, split
    /// updates paired within a batch (the codec's pending half is Python's).
    DataWorks(Box<dataworks_in::Reader>),
    /// DTS Avro records (``dts_avro_in``): tables keyed by the records' layout.
    DtsAvro(Box<dts_avro_in::Reader>),
    /// CKafka format-1 messages (``ckafka_in``), or TDSQL's binlog rows (``tdsql_in``, ``tdsql``
    /// set): tables keyed by the row's columns (TDSQL: width), typed by
    /// the schema catalog (DDL closes the batch: the catalog is Python's).
    CKafka(Box<ckafka_in::Reader>),
}

/// One table layout compiled for the plan's writer (behind an ``Arc``: sizes differ freely).
#[allow(clippy::large_enum_variant)]
enum Table {
    Debezium(TablePlan),
    Canal(canal_out::Table),
    /// Maxwell's and GoldenGate's (``typed_json``).
    Typed(typed_json::Table),
    DtsAvro(dts_avro_out::Table),
    Ticdc(ticdc_out::Table),
    CloudCanal(cloudcanal_out::Table),
    Tdsql(tdsql_out::Table),
    /// A writer's table of the transformed schema, fed rows the transforms re-shaped (``row_shape``).
    Shaped(Box<row_shape::RowShape>, Box<Table>),
}

/// canal-json or ticdc-canal-json -> debezium-json (or -> canal-json, ``encoder``), with
/// the chain's per-table transforms (``transforms/native.py`` compiles them per table) and
/// the options of both codecs.
#[pyclass(module = "cdc_smt._native")]
pub(crate) struct CanalToDebezium {
    compile: PyObject,
    encoder: Encoder,
    schemas_enable: bool,
    tombstones_on_delete: bool,
    max_message_bytes: usize,
    /// TiCDC's dialect: one row per message, ``id`` 0; ``_tidb`` messages go to Python.
    ticdc: bool,
    reader: Reader,
    tables: HashMap<TableKey, Option<Arc<Table>>>,
    last: Option<(TableKey, Option<Arc<Table>>)>,
}

/// One output record: value (``None`` = tombstone), key and the op plan's variant.
pub(crate) type Output = (Option<Vec<u8>>, Option<Vec<u8>>, usize);

/// Op codes in the order of ``TablePlan::ops``.
const CODES: [&[u8]; 4] = [b"c", b"u", b"d", b"r"];

#[pymethods]
impl CanalToDebezium {
    /// ``compile(mysqlType_json, sqlType_json, pkNames, database, table)`` returns the
    /// table's spec (see ``table_plan``, ``canal_out::Table::from_spec``) or ``None`` (not native).
    ///
    /// ``encoder``: ``"debezium-json"`` or ``"canal-json"`` (then ``batch_transaction`` is
    /// the Canal encoder's ``batch: transaction``; the Debezium options are unused).
    #[new]
    ///
    /// ``reader``: ``"canal-json"`` (``ticdc``: TiCDC's dialect), ``"cloudcanal-json"`` (Canal's names, ``cloudcanal``) or ``"debezium-json"``
    /// (then ``compile(database, table, key_names, [(column, kind)])``, see ``debezium_in``),
    /// ``"maxwell-json"`` or ``"ogg-json"`` (``compile(database, table, key_names,
    /// [(column, kind)])``, see ``typed_in``). ``zone``: the DataWorks and CKafka readers'
    /// ``source_timezone``, or the CKafka writer's (``None``: zones whose databases disagree).
    /// ``ids``: the DTS and DataWorks encoders (their counters); ``single_updates``: DataWorks'
    /// ``update_as: single``.
    #[pyo3(signature = (compile, *, schemas_enable=false, tombstones_on_delete=false, max_message_bytes, ticdc=false, encoder="debezium-json", batch_transaction=false, ids=None, reader="canal-json", codec=None, zone=None, single_updates=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python,
        compile: PyObject,
        schemas_enable: bool,
        tombstones_on_delete: bool,
        max_message_bytes: usize,
        ticdc: bool,
        encoder: &str,
        batch_transaction: bool,
        ids: Option<PyObject>,
        reader: &str,
        codec: Option<PyObject>,
        zone: Option<&str>,
        single_updates: bool,
    ) -> PyResult<Self> {
        let encoder = match (encoder, ids) {
            ("debezium-json", _) => Encoder::Debezium,
            ("canal-json", _) => Encoder::Canal { transaction: batch_transaction },
            ("maxwell-json", _) => Encoder::Maxwell,
            ("ogg-json", _) => Encoder::Ogg,
            ("dts-avro", Some(encoder)) => Encoder::DtsAvro(dts_avro_out::Ids::new(encoder, "_next_id")),
            ("dataworks-json", Some(encoder)) => Encoder::DataWorks { ids: dts_avro_out::Ids::new(encoder, "_next_seq"), split: !single_updates },
            ("ticdc-canal-json", _) => Encoder::Ticdc,
            ("cloudcanal-json", _) => Encoder::CloudCanal,
            ("ckafka-json", _) => Encoder::CKafka(dataworks_in::Zone::of(zone)),
            ("tdsql-binlog-json", _) => Encoder::Tdsql,
            (other, _) => return Err(PyValueError::new_err(format!("no native writer for {other:?}"))),
        };
        let reader = match reader {
            "canal-json" => Reader::Canal,
            "cloudcanal-json" => Reader::CloudCanal,
            "debezium-json" => Reader::Debezium(Box::new(debezium_in::Reader::new(compile.clone_ref(py), max_message_bytes, tombstones_on_delete))),
            "maxwell-json" => Reader::Typed(Box::new(typed_in::Reader::new(compile.clone_ref(py), typed_in::Dialect::Maxwell))),
            "ogg-json" => Reader::Typed(Box::new(typed_in::Reader::new(compile.clone_ref(py), typed_in::Dialect::Ogg))),
            "dataworks-json" => match codec {
                Some(codec) => Reader::DataWorks(Box::new(dataworks_in::Reader::new(compile.clone_ref(py), codec, dataworks_in::Zone::of(zone)))),
                None => return Err(PyValueError::new_err("the DataWorks reader needs its codec")),
            },
            "dts-avro" => Reader::DtsAvro(Box::new(dts_avro_in::Reader::new(compile.clone_ref(py)))),
            "ckafka-json" | "tdsql-binlog-json" => match codec {
                Some(codec) => Reader::CKafka(Box::new(ckafka_in::Reader::new(compile.clone_ref(py), codec, dataworks_in::Zone::of(zone), reader == "tdsql-binlog-json"))),
                None => return Err(PyValueError::new_err("the catalog readers need their codec")),
            },
            other => return Err(PyValueError::new_err(format!("no native reader for {other:?}"))),
        };
        Ok(CanalToDebezium {
            compile,
            reader,
            encoder,
            schemas_enable,
            tombstones_on_delete,
            max_message_bytes,
            ticdc,
            tables: HashMap::new(),
            last: None,
        })
    }

    /// ``(counts, values, keys, variants)``: per input value the number of output records
    /// it gave (``-1``: not handled, Python's), and the output records' values (``None``:
    /// tombstone), keys and variants (the Python side's topic and header edits), in
    /// order. Flat lists: no Python container per record. ``keys``: the records' keys, for
    /// readers that need them (``needs_keys``; without them such a reader handles nothing).
    #[pyo3(signature = (values, keys=None))]
    fn convert<'py>(&mut self, py: Python<'py>, values: &Bound<'py, PyList>, keys: Option<&Bound<'py, PyList>>) -> PyResult<Bound<'py, PyTuple>> {
        if keys.is_some_and(|k| k.len() != values.len()) {
            return Err(PyValueError::new_err("one key per value"));
        }
        let counts = PyList::empty(py);
        let out_values = PyList::empty(py);
        let out_keys = PyList::empty(py);
        let out_variants = PyList::empty(py);
        let none = py.None().into_bound(py);
        let mut records = Vec::new();
        if let Some(ids) = self.encoder.ids() {
            ids.begin(py)?;
        }
        if let Reader::DataWorks(r) = &mut self.reader {
            r.begin(py)?;
        }
        if let Reader::CKafka(r) = &mut self.reader {
            r.begin(py)?;
        }
        for (i, item) in values.iter().enumerate() {
            records.clear();
            if let Reader::DataWorks(r) = &mut self.reader {
                r.at(i, values.get_item(i + 1).ok().and_then(|v| v.downcast_into::<PyBytes>().ok()).map(Bound::unbind));
            }
            if let Reader::CKafka(r) = &mut self.reader {
                r.at(i);
            }
            let key = match keys.map(|k| k.get_item(i)).transpose()? {
                None => None,
                Some(k) if k.is_none() => Some(None),
                Some(k) => match k.downcast_into::<PyBytes>() {
                    Ok(b) => Some(Some(b)),
                    Err(_) => {
                        counts.append(-1)?; // not bytes: Python's
                        continue;
                    }
                },
            };
            let handled = match item.downcast::<PyBytes>() {
                // A panic (a bug) must not reach Python: the record goes to the Python path.
                Ok(b) => match catch_unwind(AssertUnwindSafe(|| self.message_keyed(py, b.as_bytes(), key.as_ref().map(|k| k.as_ref().map(|b| b.as_bytes())), &mut records))) {
                    Ok(handled) => handled?,
                    Err(_) => false,
                },
                Err(_) => false,
            };
            if !handled {
                // A Debezium tombstone is no event to Python (no record id): the plan numbers on.
                let numbered = !(item.is_none() && matches!(self.reader, Reader::Debezium(_)));
                if let (Some(ids), true) = (self.encoder.ids(), numbered) {
                    ids.open = false; // Python numbers this record: it and the rest are Python's
                }
                counts.append(-1)?;
                continue;
            }
            counts.append(records.len())?;
            for (value, key, variant) in records.drain(..) {
                match value {
                    Some(v) => out_values.append(PyBytes::new(py, &v))?,
                    None => out_values.append(&none)?,
                }
                match key {
                    Some(k) => out_keys.append(PyBytes::new(py, &k))?,
                    None => out_keys.append(&none)?,
                }
                out_variants.append(variant)?;
            }
        }
        if let Some(ids) = self.encoder.ids() {
            ids.end(py)?;
        }
        if let Reader::DataWorks(r) = &mut self.reader {
            r.end();
        }
        if let Reader::CKafka(r) = &mut self.reader {
            r.end();
        }
        PyTuple::new(py, [counts.into_any(), out_values.into_any(), out_keys.into_any(), out_variants.into_any()])
    }

    /// Forget compiled tables (tests; a host never needs to).
    fn clear(&mut self) {
        self.tables.clear();
        self.last = None;
        if let Reader::Debezium(r) = &mut self.reader {
            r.clear();
        }
        if let Reader::Typed(r) = &mut self.reader {
            r.clear();
        }
        if let Reader::DataWorks(r) = &mut self.reader {
            r.clear();
        }
        if let Reader::DtsAvro(r) = &mut self.reader {
            r.clear();
        }
        if let Reader::CKafka(r) = &mut self.reader {
            r.clear();
        }
    }

    /// The DataWorks reader: the index of the last ``convert`` batch's record from which
    /// every record is Python's (its pending half), or ``None``.
    #[getter]
    fn closed_at(&self) -> Option<usize> {
        match &self.reader {
            Reader::DataWorks(r) => r.closed_at,
            Reader::CKafka(r) => r.closed_at,
            _ => None,
        }
    }

    /// Does the reader need the records' keys (``convert(values, keys)``)? A host that
    /// cannot pass them (the backfill's Arrow path) leaves such a plan to Python.
    #[getter]
    fn needs_keys(&self) -> bool {
        matches!(self.reader, Reader::Debezium(_)) || matches!((&self.reader, &self.encoder), (Reader::DtsAvro(_), Encoder::DtsAvro(_)))
    }
}

impl CanalToDebezium {
    fn table(&mut self, py: Python, m: &canal::Message) -> PyResult<Option<Arc<Table>>> {
        if let Some((key, plan)) = &self.last {
            if key.matches(m) {
                return Ok(plan.clone());
            }
        }
        let key = TableKey::of(m);
        let plan = match self.tables.get(&key) {
            Some(plan) => plan.clone(),
            None => {
                let spec = self.compile.call1(
                    py,
                    (key.mysql_type.clone(), key.sql_type.clone(), key.pk_names.clone(), key.database.clone(), key.table.clone()),
                )?;
                let plan = if spec.is_none(py) {
                    None
                } else {
                    match self.encoder {
                        Encoder::Debezium => Some(Table::Debezium(table_plan(spec.bind(py))?)),
                        Encoder::Canal { .. } => {
                            // Another dialect's values are re-written as Canal text.
                            let retext = self.ticdc || matches!(self.reader, Reader::CloudCanal);
                            canal_out::Table::from_spec(spec.bind(py), key.mysql_type.as_deref(), key.sql_type.as_deref(), retext)?.map(Table::Canal)
                        }
                        Encoder::Maxwell | Encoder::Ogg => match shaped_spec(spec.bind(py))? {
                            Some((inner, shape)) => typed_json::Table::from_spec(&inner)?.map(|t| Table::Shaped(Box::new(shape), Box::new(Table::Typed(t)))),
                            None => typed_json::Table::from_spec(spec.bind(py))?.map(Table::Typed),
                        },
                        Encoder::DtsAvro(_) => match shaped_spec(spec.bind(py))? {
                            Some((inner, shape)) => Some(Table::Shaped(Box::new(shape), Box::new(Table::DtsAvro(dts_avro_out::Table::from_spec(&inner)?)))),
                            None => Some(Table::DtsAvro(dts_avro_out::Table::from_spec(spec.bind(py))?)),
                        },
                        Encoder::Ticdc => match shaped_spec(spec.bind(py))? {
                            Some((inner, shape)) => ticdc_out::Table::from_spec(&inner, None, None)?.map(|t| Table::Shaped(Box::new(shape), Box::new(Table::Ticdc(t)))),
                            None => ticdc_out::Table::from_spec(spec.bind(py), key.mysql_type.as_deref(), key.sql_type.as_deref())?.map(Table::Ticdc),
                        },
                        Encoder::CloudCanal | Encoder::CKafka(_) | Encoder::DataWorks { .. } => match shaped_spec(spec.bind(py))? {
                            Some((inner, shape)) => cloudcanal_out::Table::from_spec(&inner)?.map(|t| Table::Shaped(Box::new(shape), Box::new(Table::CloudCanal(t)))),
                            None => cloudcanal_out::Table::from_spec(spec.bind(py))?.map(Table::CloudCanal),
                        },
                        Encoder::Tdsql => match shaped_spec(spec.bind(py))? {
                            Some((inner, shape)) => tdsql_out::Table::from_spec(&inner)?.map(|t| Table::Shaped(Box::new(shape), Box::new(Table::Tdsql(t)))),
                            None => tdsql_out::Table::from_spec(spec.bind(py))?.map(Table::Tdsql),
                        },
                    }
                    .map(Arc::new)
                };
                if self.tables.len() >= CACHE_SIZE {
                    self.tables.clear();
                }
                self.tables.insert(key.clone(), plan.clone());
                plan
            }
        };
        self.last = Some((key, plan.clone()));
        Ok(plan)
    }

    /// ``message`` with the record's key (``None``: not known) for the readers that need it.
    fn message_keyed(&mut self, py: Python, value: &[u8], key: Option<Option<&[u8]>>, out: &mut Vec<Output>) -> PyResult<bool> {
        match &mut self.reader {
            Reader::Debezium(r) => r.message(py, value, key, &mut self.encoder, out),
            Reader::DtsAvro(_) if matches!(self.encoder, Encoder::DtsAvro(_)) => self.dts_same_message(py, value, key, out),
            Reader::Canal | Reader::CloudCanal | Reader::Typed(_) | Reader::DtsAvro(_) => self.message(py, value, out),
            Reader::DataWorks(_) => self.dataworks_message(py, value, out),
            Reader::CKafka(_) => self.ckafka_message(py, value, out),
        }
    }

    /// The output records of one message into ``out``; ``false`` when Python must process it.
    fn message(&mut self, py: Python, value: &[u8], out: &mut Vec<Output>) -> PyResult<bool> {
        if let Reader::Debezium(r) = &mut self.reader {
            return r.message(py, value, None, &mut self.encoder, out);
        }
        if let Reader::Typed(_) = self.reader {
            return self.typed_message(py, value, out);
        }
        if let Reader::DataWorks(_) = self.reader {
            return self.dataworks_message(py, value, out);
        }
        if let Reader::DtsAvro(_) = self.reader {
            return self.dts_message(py, value, out);
        }
        if let Reader::CKafka(_) = self.reader {
            return self.ckafka_message(py, value, out);
        }
        if value.len() > self.max_message_bytes || self.encoder.closed() {
            return Ok(false);
        }
        let parsed = if matches!(self.reader, Reader::CloudCanal) { cloudcanal::parse(value) } else { canal::parse(value) };
        let Some(m) = parsed else { return Ok(false) };
        let op = match m.kind.as_deref() {
            Some("INSERT") => 0,
            Some("UPDATE") => 1,
            Some("DELETE") => 2,
            Some("INIT") => 3,
            _ => return Ok(false),
        };
        let Some(data) = &m.data else { return Ok(false) };
        if data.is_empty() {
            return Ok(false);
        }
        // TiCDC: what its decoder warns about (official Canal read as TiCDC) or reads from
        // ``_tidb`` (commitTs, handle-key-only rows, claim checks) is Python's.
        if self.ticdc && (m.tidb || data.len() != 1 || m.id.is_some_and(|id| id.get() != "0")) {
            return Ok(false);
        }
        let old = m.old.as_deref().unwrap_or(&[]);
        if op == 1 && !old.is_empty() && old.len() != data.len() {
            return Ok(false);
        }
        let Some(table) = self.table(py, &m)? else { return Ok(false) };
        if let (Table::DtsAvro(t), Encoder::DtsAvro(ids)) = (&*table, &mut self.encoder) {
            return Ok(match &t.ops[op] {
                dts_avro_out::Entry::Write(variant, middle) => dts_avro_out::write(t, &m, op, *variant, middle, ids, out).is_ok(),
                dts_avro_out::Entry::Python => false,
                dts_avro_out::Entry::Dropped => t.knows(data),
            });
        }
        if let Table::Shaped(shape, inner) = &*table {
            return Ok(shaped_write(shape, inner, &mut self.encoder, &m, op, out).unwrap_or(false));
        }
        let plan = match (&*table, &self.encoder) {
            (Table::Debezium(plan), _) => plan,
            (Table::Canal(t), Encoder::Canal { transaction }) => {
                return Ok(match t.ops[op] {
                    canal_out::Entry::Write(variant) => canal_out::write(t, &m, op, variant, *transaction, out).is_ok(),
                    canal_out::Entry::Python => false,
                    canal_out::Entry::Dropped => t.knows(data),
                });
            }
            (Table::Ticdc(t), Encoder::Ticdc) => {
                return Ok(match t.ops[op] {
                    canal_out::Entry::Write(variant) => ticdc_out::write(t, &m, op, variant, out).is_ok(),
                    canal_out::Entry::Python => false,
                    canal_out::Entry::Dropped => t.knows(data),
                });
            }
            (Table::CloudCanal(t), Encoder::CloudCanal | Encoder::CKafka(_) | Encoder::DataWorks { .. }) => {
                return Ok(match (&t.ops[op], &mut self.encoder) {
                    (canal_out::Entry::Write(variant), Encoder::CKafka(zone)) => ckafka_out::write(t, &m, op, *variant, *zone, &Default::default(), out).is_ok(),
                    (canal_out::Entry::Write(variant), Encoder::DataWorks { ids, split }) => dataworks_out::write(t, &m, op, *variant, *split, ids, out).is_ok(),
                    (canal_out::Entry::Write(variant), _) => cloudcanal_out::write(t, &m, op, *variant, out).is_ok(),
                    (canal_out::Entry::Python, _) => false,
                    (canal_out::Entry::Dropped, _) => t.knows(data),
                });
            }
            (Table::Tdsql(t), Encoder::Tdsql) => {
                return Ok(match t.text().ops[op] {
                    canal_out::Entry::Write(variant) => tdsql_out::write(t, &m, op, variant, b"null", out).is_ok(),
                    canal_out::Entry::Python => false,
                    canal_out::Entry::Dropped => t.text().knows(data),
                });
            }
            (Table::Canal(_) | Table::DtsAvro(_) | Table::Ticdc(_) | Table::CloudCanal(_) | Table::Tdsql(_) | Table::Shaped(..), _) => return Ok(false),
            (Table::Typed(t), encoder) => {
                return Ok(match t.ops[op] {
                    canal_out::Entry::Write(variant) => match encoder {
                        Encoder::Maxwell => maxwell_out::write(t, &m, op, variant, out).is_ok(),
                        Encoder::Ogg => ogg_out::write(t, &m, op, variant, out).is_ok(),
                        _ => false,
                    },
                    canal_out::Entry::Python => false,
                    canal_out::Entry::Dropped => t.knows(data),
                });
            }
        };
        let op_plan = match &plan.ops[op] {
            OpEntry::Plan(p) => p,
            OpEntry::Python => return Ok(false),
            // Filtered out: the rows still have to be rows Python would have read.
            OpEntry::Dropped => return Ok(data.iter().all(|row| row.0.iter().all(|(k, _)| plan.index.contains_key(k.as_ref())))),
        };
        for (i, row) in data.iter().enumerate() {
            if self.row(plan, op_plan, &m, op, i, row, old, out).is_err() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    #[allow(clippy::too_many_arguments)]
    fn row(&self, plan: &TablePlan, op_plan: &OpPlan, m: &canal::Message, op: usize, i: usize, row: &canal::Row, old: &[canal::Row], out: &mut Vec<Output>) -> Result<(), Fallback> {
        if let Some(unwrapped) = &op_plan.unwrap {
            return unwrap::write(plan, op_plan, unwrapped, self.schemas_enable, m, i, row, old.get(i), out);
        }
        let code = CODES[op];
        let mut payload = Vec::with_capacity(1024);
        let mut spans = vec![None; plan.columns.len()];
        let mut scratch = Vec::new();
        payload.extend_from_slice(b"{\"before\":");
        let image: Vec<(&str, Option<&str>)> = row.0.iter().map(|(k, v)| (k.as_ref(), v.as_deref())).collect();
        match code {
            b"u" => {
                let mut before = image.clone();
                if let Some(o) = old.get(i) {
                    for (k, v) in &o.0 {
                        match before.iter_mut().find(|(n, _)| *n == k.as_ref()) {
                            Some(slot) => slot.1 = v.as_deref(),
                            None => before.push((k.as_ref(), v.as_deref())),
                        }
                    }
                }
                write_image(plan, &before, None, &mut payload, &mut vec![None; plan.columns.len()], &mut scratch)?;
                payload.extend_from_slice(b",\"after\":");
                write_image(plan, &image, Some((op_plan, m, i)), &mut payload, &mut spans, &mut scratch)?;
            }
            b"d" => {
                write_image(plan, &image, Some((op_plan, m, i)), &mut payload, &mut spans, &mut scratch)?;
                payload.extend_from_slice(b",\"after\":null");
            }
            _ => {
                payload.extend_from_slice(b"null,\"after\":");
                write_image(plan, &image, Some((op_plan, m, i)), &mut payload, &mut spans, &mut scratch)?;
            }
        }
        payload.extend_from_slice(b",\"source\":");
        self.write_source(&mut payload, m, op_plan, i);
        payload.extend_from_slice(b",\"op\":\"");
        payload.extend_from_slice(code);
        payload.extend_from_slice(b"\",\"ts_ms\":");
        match m.ts.or(m.es) {
            Some(ts) => json::write_int(&mut payload, ts),
            None => payload.extend_from_slice(b"null"),
        }
        payload.extend_from_slice(b",\"transaction\":null}");

        let key = row_key(plan, op_plan, self.schemas_enable, &spans, &payload)?;
        let value = match &op_plan.envelope_schema {
            Some(schema) if self.schemas_enable => wrap(schema, &payload),
            _ => payload,
        };
        let variant = op_plan.variant;
        if code == b"d" && self.tombstones_on_delete && key.is_some() {
            out.push((Some(value), key.clone(), variant));
            out.push((None, key, variant));
        } else {
            out.push((Some(value), key, variant));
        }
        Ok(())
    }

    fn write_source(&self, out: &mut Vec<u8>, m: &canal::Message, op_plan: &OpPlan, row: usize) {
        let (head, middle, tail) = &op_plan.source;
        out.extend_from_slice(head);
        json::write_int(out, m.es.unwrap_or(0));
        out.extend_from_slice(middle);
        json::write_int(out, row);
        out.extend_from_slice(tail);
    }
}

/// The record key: the key columns' written values (``spans`` into ``payload``), with the
/// key's schema part under ``schemas_enable``; ``None`` for a table without a key.
fn row_key(plan: &TablePlan, op_plan: &OpPlan, schemas_enable: bool, spans: &[Option<(usize, usize)>], payload: &[u8]) -> Result<Option<Vec<u8>>, Fallback> {
    if plan.key.is_empty() {
        return Ok(None);
    }
    let mut body = Vec::with_capacity(64);
    body.push(b'{');
    for (n, (name, c)) in plan.key.iter().enumerate() {
        if n > 0 {
            body.push(b',');
        }
        json::write_str(&mut body, name);
        body.push(b':');
        match spans[*c] {
            Some((start, end)) => body.extend_from_slice(&payload[start..end]),
            None if plan.explicit_key => return Err(Fallback), // Python: no such column in the row
            None => body.extend_from_slice(b"null"),
        }
    }
    body.push(b'}');
    Ok(Some(match &op_plan.key_schema {
        Some(schema) if schemas_enable => wrap(schema, &body),
        _ => body,
    }))
}

fn wrap(schema: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(schema.len() + payload.len() + 24);
    out.extend_from_slice(b"{\"schema\":");
    out.extend_from_slice(schema);
    out.extend_from_slice(b",\"payload\":");
    out.extend_from_slice(payload);
    out.push(b'}');
    out
}

/// One image as a JSON object in row order (the transforms' output names, masks, and
/// ``added`` columns at the end when it is the row's main image); ``spans`` gets each
/// written column's value bytes.
fn write_image(
    plan: &TablePlan,
    image: &[(&str, Option<&str>)],
    main: Option<(&OpPlan, &canal::Message, usize)>,
    out: &mut Vec<u8>,
    spans: &mut [Option<(usize, usize)>],
    scratch: &mut Vec<u8>,
) -> Result<(), Fallback> {
    let mut seen = vec![false; plan.columns.len()];
    let mut first = true;
    out.push(b'{');
    for (n, (name, value)) in image.iter().enumerate() {
        let c = match plan.columns.get(n) {
            Some(col) if col.name == *name => n,
            _ => *plan.index.get(*name).ok_or(Fallback)?, // a column the schema lacks: Python
        };
        if seen[c] {
            return Err(Fallback); // a repeated key: Python's dict semantics decide
        }
        seen[c] = true;
        let column = &plan.columns[c];
        let Some(out_name) = &column.out else {
            if column.validate {
                if let Some(text) = value {
                    scratch.clear();
                    column.op.write(scratch, text)?;
                }
            }
            continue;
        };
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(out_name);
        out.push(b':');
        let start = out.len();
        match (value, &column.mask) {
            (None, _) => out.extend_from_slice(b"null"),
            (Some(text), Mask::None) => column.op.write(out, text)?,
            (Some(text), mask) => {
                if column.validate {
                    scratch.clear();
                    column.op.write(scratch, text)?;
                }
                match mask {
                    Mask::Hash(salt) => write_sha256(out, salt, text),
                    Mask::Const(written) => out.extend_from_slice(written),
                    _ => out.extend_from_slice(b"null"),
                }
            }
        }
        spans[c] = Some((start, out.len()));
    }
    if let Some((op_plan, m, row)) = main {
        for (name, kind) in &plan.added {
            if !first {
                out.push(b',');
            }
            first = false;
            out.extend_from_slice(name);
            out.push(b':');
            match kind {
                Added::Const(j) => out.extend_from_slice(&op_plan.consts[*j]),
                Added::Es | Added::Ts => match if matches!(kind, Added::Es) { m.es } else { m.ts } {
                    Some(ms) => json::write_int(out, ms),
                    None => out.extend_from_slice(b"null"),
                },
                Added::Row => json::write_int(out, row),
            }
        }
    }
    out.push(b'}');
    Ok(())
}

/// ``(inner, shape)`` of a shaped table's spec ``(writer's spec, shape spec)`` (a writer's
/// own spec has more items), else ``None``.
pub(crate) fn shaped_spec<'py>(spec: &Bound<'py, PyAny>) -> PyResult<Option<(Bound<'py, PyAny>, row_shape::RowShape)>> {
    match spec.downcast::<PyTuple>() {
        Ok(t) if t.len() == 2 => Ok(Some((t.get_item(0)?, row_shape::RowShape::from_spec(&t.get_item(1)?)?))),
        _ => Ok(None),
    }
}

/// One row message through the transforms' ``shape`` into the ``inner`` writer's records
/// (keyed by the transformed rows, the keys made before the writer numbers anything);
/// ``Ok(false)`` / ``Err``: Python's.
fn shaped_write(shape: &row_shape::RowShape, inner: &Table, encoder: &mut Encoder, m: &canal::Message, op: usize, out: &mut Vec<Output>) -> Result<bool, Fallback> {
    let entry = match inner {
        Table::Ticdc(t) => &t.ops[op],
        Table::Typed(t) => &t.ops[op],
        Table::Tdsql(t) => &t.text().ops[op],
        Table::CloudCanal(t) => &t.ops[op],
        Table::DtsAvro(t) => &match &t.ops[op] {
            dts_avro_out::Entry::Write(variant, _) => canal_out::Entry::Write(*variant),
            dts_avro_out::Entry::Python => canal_out::Entry::Python,
            dts_avro_out::Entry::Dropped => canal_out::Entry::Dropped,
        },
        _ => return Ok(false),
    };
    let variant = match entry {
        canal_out::Entry::Write(variant) => *variant,
        canal_out::Entry::Python => return Ok(false),
        canal_out::Entry::Dropped => return Ok(shape.knows(m.data.as_deref().ok_or(Fallback)?)),
    };
    let shaped = shape.apply(m, op)?;
    let pairs = op == 1 && matches!(encoder, Encoder::DataWorks { split: true, .. });
    let keys = shape.keys(&shaped, pairs)?;
    let start = out.len();
    match (inner, encoder) {
        (Table::Ticdc(t), Encoder::Ticdc) => ticdc_out::write(t, &shaped, op, variant, out)?,
        (Table::Typed(t), Encoder::Maxwell) => maxwell_out::write(t, &shaped, op, variant, out)?,
        (Table::Typed(t), Encoder::Ogg) => ogg_out::write(t, &shaped, op, variant, out)?,
        (Table::Tdsql(t), Encoder::Tdsql) => tdsql_out::write(t, &shaped, op, variant, b"null", out)?,
        (Table::CloudCanal(t), Encoder::CloudCanal) => cloudcanal_out::write(t, &shaped, op, variant, out)?,
        (Table::CloudCanal(t), Encoder::CKafka(zone)) => ckafka_out::write(t, &shaped, op, variant, *zone, &Default::default(), out)?,
        (Table::CloudCanal(t), Encoder::DataWorks { ids, split }) => dataworks_out::write(t, &shaped, op, variant, *split, ids, out)?,
        (Table::DtsAvro(t), Encoder::DtsAvro(ids)) => match &t.ops[op] {
            dts_avro_out::Entry::Write(_, middle) => dts_avro_out::write(t, &shaped, op, variant, middle, ids, out)?,
            _ => return Ok(false),
        },
        _ => return Ok(false),
    }
    if out.len() - start != keys.len() {
        out.truncate(start); // not reached: one record per row, two per UPDATE row in ``pairs``
        return Err(Fallback);
    }
    for (record, key) in out[start..].iter_mut().zip(keys) {
        record.1 = key;
    }
    Ok(true)
}

/// ``"<hex sha256(salt + text)>"``.
pub(crate) fn write_sha256(out: &mut Vec<u8>, salt: &[u8], text: &str) {
    use sha2::{Digest, Sha256};
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut h = Sha256::new();
    h.update(salt);
    h.update(text.as_bytes());
    out.push(b'"');
    for b in h.finalize() {
        out.push(HEX[(b >> 4) as usize]);
        out.push(HEX[(b & 15) as usize]);
    }
    out.push(b'"');
}

/// A table's spec from Python: ``(columns, added, key, explicit_key, ops)`` where a
/// column is ``(name, op, arg, out_name | None, validate, mask, salt)`` (``mask`` ``const``:
/// ``salt`` is the constant's written JSON), ``added`` a
/// list of ``(out_name, kind)`` (``const``/``es``/``ts``/``row``), ``key`` a list of
/// ``(name, column index)`` and ``ops`` four entries (c, u, d, r), each
/// ``(what, plan)``: ``what`` 0 (dropped), 1 (to Python) or 2 with ``plan`` =
/// ``(variant, (source_head, source_middle, source_tail), consts, key_schema, envelope_schema, unwrap)``
/// (``unwrap``: ``None``, or ``(row written, tombstone variant | None)``, see ``unwrap.rs``).
fn table_plan(spec: &Bound<PyAny>) -> PyResult<TablePlan> {
    #[allow(clippy::type_complexity)]
    let (columns, added, key, explicit_key, ops): (
        Vec<(String, String, PyObject, Option<String>, bool, String, Vec<u8>)>,
        Vec<(String, String)>,
        Vec<(String, usize)>,
        bool,
        Vec<(u8, Option<(usize, (Vec<u8>, Vec<u8>, Vec<u8>), Vec<Vec<u8>>, Option<Vec<u8>>, Option<Vec<u8>>, Option<(bool, Option<usize>)>)>)>,
    ) = spec.extract()?;
    let py = spec.py();
    let mut cols = Vec::with_capacity(columns.len());
    let mut index = HashMap::new();
    for (name, op, arg, out, validate, mask, salt) in columns {
        let arg = arg.bind(py);
        let op = match op.as_str() {
            "str" => Op::Str,
            "int" => Op::Int,
            "int64_wrap" => Op::Int64Wrap,
            "decimal" => Op::Decimal(arg.extract()?),
            "double" => Op::Double,
            "bit1" => Op::Bit1,
            "bits" => Op::Bits(arg.extract()?),
            "date" => Op::Date,
            "epoch_ms" => Op::EpochMs,
            "epoch_us" => Op::EpochUs,
            "iso_utc" => {
                let zone: String = arg.extract()?;
                if zone == "UTC" {
                    Op::IsoUtc(None)
                } else {
                    match zone.parse::<chrono_tz::Tz>() {
                        Ok(tz) => Op::IsoUtc(Some(tz)),
                        Err(_) => Op::Python,
                    }
                }
            }
            "time_us" => Op::TimeUs,
            "bytes" => Op::Bytes,
            "enum" => Op::Enum(arg.downcast::<PyDict>()?.extract()?),
            "set" => Op::Set(arg.extract()?),
            "python" => Op::Python,
            other => return Err(PyValueError::new_err(format!("unknown native column op {other:?}"))),
        };
        let mask = match mask.as_str() {
            "" => Mask::None,
            "null" => Mask::Null,
            "hash" => Mask::Hash(salt),
            "const" => Mask::Const(salt),
            other => return Err(PyValueError::new_err(format!("unknown native mask {other:?}"))),
        };
        index.entry(name.clone()).or_insert(cols.len());
        let out = out.map(|n| {
            let mut b = Vec::new();
            json::write_str(&mut b, &n);
            b
        });
        cols.push(Column { name, op, out, validate, mask });
    }
    let mut consts = 0;
    let mut added_cols = Vec::with_capacity(added.len());
    for (name, kind) in added {
        let kind = match kind.as_str() {
            "const" => {
                consts += 1;
                Added::Const(consts - 1)
            }
            "es" => Added::Es,
            "ts" => Added::Ts,
            "row" => Added::Row,
            other => return Err(PyValueError::new_err(format!("unknown added column kind {other:?}"))),
        };
        let mut b = Vec::new();
        json::write_str(&mut b, &name);
        added_cols.push((b, kind));
    }
    for (name, c) in &key {
        if *c >= cols.len() {
            return Err(PyValueError::new_err(format!("key column {name:?} is not a column")));
        }
    }
    if ops.len() != 4 {
        return Err(PyValueError::new_err("expected four op plans (c, u, d, r)"));
    }
    let mut op_plans: [OpEntry; 4] = [OpEntry::Python, OpEntry::Python, OpEntry::Python, OpEntry::Python];
    for (slot, (what, op)) in op_plans.iter_mut().zip(ops) {
        *slot = match (what, op) {
            (0, _) => OpEntry::Dropped,
            (2, Some((variant, source, values, key_schema, envelope_schema, unwrap))) => {
                if values.len() != consts {
                    return Err(PyValueError::new_err("one value per constant added column"));
                }
                let unwrap = unwrap.map(|(row, tombstone)| unwrap::Unwrapped { row, tombstone });
                OpEntry::Plan(OpPlan { variant, source, consts: values, key_schema, envelope_schema, unwrap })
            }
            _ => OpEntry::Python,
        };
    }
    Ok(TablePlan { columns: cols, index, added: added_cols, key, explicit_key, ops: op_plans })
}

/// ``orjson.dumps(v)`` of a float, as the plans write it (for the differential tests).
#[pyfunction]
fn dumps_float(v: f64) -> PyResult<Vec<u8>> {
    if !v.is_finite() {
        return Err(PyValueError::new_err("not a finite float"));
    }
    let mut out = Vec::new();
    json::write_f64(&mut out, v);
    Ok(out)
}

/// ``orjson.dumps(s)`` of a string, as the plans write it (for the differential tests).
#[pyfunction]
fn dumps_str(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    json::write_str(&mut out, s);
    out
}

/// UTC offsets in seconds of ``zone`` at the given instants (epoch seconds), from the
/// zone database compiled in; ``None`` for an unknown zone. The planner compares them
/// with Python's ``zoneinfo`` and keeps zones the two databases disagree on in Python.
#[pyfunction]
fn zone_offsets(zone: &str, instants: Vec<i64>) -> Option<Vec<i64>> {
    use chrono::{Offset, TimeZone};
    let tz: chrono_tz::Tz = zone.parse().ok()?;
    instants
        .into_iter()
        .map(|t| chrono::DateTime::from_timestamp(t, 0).map(|utc| tz.offset_from_utc_datetime(&utc.naive_utc()).fix().local_minus_utc() as i64))
        .collect()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("PLANS", PyTuple::new(m.py(), PLANS)?)?;
    m.add_class::<CanalToDebezium>()?;
    m.add_function(wrap_pyfunction!(dumps_float, m)?)?;
    m.add_function(wrap_pyfunction!(dumps_str, m)?)?;
    m.add_function(wrap_pyfunction!(zone_offsets, m)?)?;
    m.add_function(wrap_pyfunction!(partition::murmur2, m)?)?;
    m.add_function(wrap_pyfunction!(partition::partitions, m)?)?;
    m.add_function(wrap_pyfunction!(records::place_records, m)?)?;
    m.add_class::<kafka_batch::KafkaBatch>()?;
    m.add_function(wrap_pyfunction!(kafka_batch::place_rows, m)?)?;
    m.add_class::<kafka_batch::ArrowPart>()?;
    m.add_function(wrap_pyfunction!(kafka_batch::arrow_parts, m)?)?;
    m.add_class::<arrow::ArrowArray>()?;
    m.add_function(wrap_pyfunction!(arrow::convert_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::split_lines, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::key_partitions, m)?)?;
    Ok(())
}
