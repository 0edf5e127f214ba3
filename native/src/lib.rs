//! cdc-smt's native core: whole transcoding plans in Rust, under the Python API.
//!
//! The Python codecs stay the reference. A plan converts a batch of raw
//! message values and answers, per message, either the output records'
//! (value, key) bytes -- byte-identical to the Python path -- or "not handled"
//! (``None``), and the Python path then processes exactly that message (so
//! dead letters are the Python path's own).

mod canal;
mod json;
mod values;

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use values::{Fallback, Op};

/// The plans this build runs natively (``cdc-smt formats --json`` lists them).
const PLANS: &[&str] = &["canal-json -> debezium-json"];

struct Column {
    name: String,
    op: Op,
}

/// One table layout (Canal's mysqlType/sqlType/pkNames, database, table) compiled by Python.
struct TablePlan {
    columns: Vec<Column>,
    index: HashMap<String, usize>,
    /// Key columns (indexes into ``columns``), deduplicated, in pkNames order.
    pk: Vec<usize>,
    key_schema: Option<Vec<u8>>,
    envelope_schema: Option<Vec<u8>>,
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

/// canal-json -> debezium-json (no transforms), with the options of both codecs.
#[pyclass(module = "cdc_smt._native")]
struct CanalToDebezium {
    compile: PyObject,
    schemas_enable: bool,
    tombstones_on_delete: bool,
    prefix: String,
    max_message_bytes: usize,
    tables: HashMap<TableKey, Option<Arc<TablePlan>>>,
    last: Option<(TableKey, Option<Arc<TablePlan>>)>,
}

/// One output record: value (``None`` = tombstone) and key.
type Output = (Option<Vec<u8>>, Option<Vec<u8>>);

#[pymethods]
impl CanalToDebezium {
    /// ``compile(mysqlType_json, sqlType_json, pkNames, database, table)`` returns the
    /// table's spec ``(columns, pk, key_schema, envelope_schema)`` or ``None`` (not native).
    #[new]
    #[pyo3(signature = (compile, *, schemas_enable, tombstones_on_delete, prefix, max_message_bytes))]
    fn new(compile: PyObject, schemas_enable: bool, tombstones_on_delete: bool, prefix: String, max_message_bytes: usize) -> Self {
        CanalToDebezium {
            compile,
            schemas_enable,
            tombstones_on_delete,
            prefix,
            max_message_bytes,
            tables: HashMap::new(),
            last: None,
        }
    }

    /// ``(counts, values, keys)``: per input value the number of output records it
    /// gave (``-1``: not handled, Python's), and the output records' values (``None``:
    /// tombstone) and keys, in order. Flat lists: no Python container per record.
    fn convert<'py>(&mut self, py: Python<'py>, values: &Bound<'py, PyList>) -> PyResult<Bound<'py, PyTuple>> {
        let counts = PyList::empty(py);
        let out_values = PyList::empty(py);
        let out_keys = PyList::empty(py);
        let none = py.None().into_bound(py);
        let mut records = Vec::new();
        for item in values.iter() {
            records.clear();
            let handled = match item.downcast::<PyBytes>() {
                // A panic (a bug) must not reach Python: the record goes to the Python path.
                Ok(b) => match catch_unwind(AssertUnwindSafe(|| self.message(py, b.as_bytes(), &mut records))) {
                    Ok(handled) => handled?,
                    Err(_) => false,
                },
                Err(_) => false,
            };
            if !handled {
                counts.append(-1)?;
                continue;
            }
            counts.append(records.len())?;
            for (value, key) in records.drain(..) {
                match value {
                    Some(v) => out_values.append(PyBytes::new(py, &v))?,
                    None => out_values.append(&none)?,
                }
                match key {
                    Some(k) => out_keys.append(PyBytes::new(py, &k))?,
                    None => out_keys.append(&none)?,
                }
            }
        }
        PyTuple::new(py, [counts.into_any(), out_values.into_any(), out_keys.into_any()])
    }

    /// Forget compiled tables (tests; a host never needs to).
    fn clear(&mut self) {
        self.tables.clear();
        self.last = None;
    }
}

impl CanalToDebezium {
    fn table(&mut self, py: Python, m: &canal::Message) -> PyResult<Option<Arc<TablePlan>>> {
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
                let plan = if spec.is_none(py) { None } else { Some(Arc::new(table_plan(spec.bind(py))?)) };
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

    /// The output records of one message into ``out``; ``false`` when Python must process it.
    fn message(&mut self, py: Python, value: &[u8], out: &mut Vec<Output>) -> PyResult<bool> {
        if value.len() > self.max_message_bytes {
            return Ok(false);
        }
        let Some(m) = canal::parse(value) else { return Ok(false) };
        let code: &[u8] = match m.kind.as_deref() {
            Some("INSERT") => b"c",
            Some("UPDATE") => b"u",
            Some("DELETE") => b"d",
            Some("INIT") => b"r",
            _ => return Ok(false),
        };
        let Some(data) = &m.data else { return Ok(false) };
        if data.is_empty() {
            return Ok(false);
        }
        let old = m.old.as_deref().unwrap_or(&[]);
        if code == b"u" && !old.is_empty() && old.len() != data.len() {
            return Ok(false);
        }
        let Some(plan) = self.table(py, &m)? else { return Ok(false) };
        for (i, row) in data.iter().enumerate() {
            if self.row(&plan, &m, code, i, row, old, out).is_err() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    #[allow(clippy::too_many_arguments)]
    fn row(&self, plan: &TablePlan, m: &canal::Message, code: &[u8], i: usize, row: &canal::Row, old: &[canal::Row], out: &mut Vec<Output>) -> Result<(), Fallback> {
        let mut payload = Vec::with_capacity(1024);
        let mut spans = vec![None; plan.columns.len()];
        payload.extend_from_slice(b"{\"before\":");
        let image: Vec<(&str, Option<&str>)>;
        match code {
            b"u" => {
                let mut before: Vec<(&str, Option<&str>)> = row.0.iter().map(|(k, v)| (k.as_ref(), v.as_deref())).collect();
                if let Some(o) = old.get(i) {
                    for (k, v) in &o.0 {
                        match before.iter_mut().find(|(n, _)| *n == k.as_ref()) {
                            Some(slot) => slot.1 = v.as_deref(),
                            None => before.push((k.as_ref(), v.as_deref())),
                        }
                    }
                }
                write_image(plan, &before, &mut payload, &mut vec![None; plan.columns.len()])?;
                payload.extend_from_slice(b",\"after\":");
                image = row.0.iter().map(|(k, v)| (k.as_ref(), v.as_deref())).collect();
                write_image(plan, &image, &mut payload, &mut spans)?;
            }
            b"d" => {
                image = row.0.iter().map(|(k, v)| (k.as_ref(), v.as_deref())).collect();
                write_image(plan, &image, &mut payload, &mut spans)?;
                payload.extend_from_slice(b",\"after\":null");
            }
            _ => {
                payload.extend_from_slice(b"null,\"after\":");
                image = row.0.iter().map(|(k, v)| (k.as_ref(), v.as_deref())).collect();
                write_image(plan, &image, &mut payload, &mut spans)?;
            }
        }
        payload.extend_from_slice(b",\"source\":");
        self.write_source(&mut payload, m, code, i);
        payload.extend_from_slice(b",\"op\":\"");
        payload.extend_from_slice(code);
        payload.extend_from_slice(b"\",\"ts_ms\":");
        match m.ts.or(m.es) {
            Some(ts) => json::write_int(&mut payload, ts),
            None => payload.extend_from_slice(b"null"),
        }
        payload.extend_from_slice(b",\"transaction\":null}");

        let key = if plan.pk.is_empty() {
            None
        } else {
            let mut body = Vec::with_capacity(64);
            body.push(b'{');
            for (n, &c) in plan.pk.iter().enumerate() {
                if n > 0 {
                    body.push(b',');
                }
                json::write_str(&mut body, &plan.columns[c].name);
                body.push(b':');
                match spans[c] {
                    Some((start, end)) => body.extend_from_slice(&payload[start..end]),
                    None => body.extend_from_slice(b"null"),
                }
            }
            body.push(b'}');
            Some(match &plan.key_schema {
                Some(schema) if self.schemas_enable => wrap(schema, &body),
                _ => body,
            })
        };
        let value = match &plan.envelope_schema {
            Some(schema) if self.schemas_enable => wrap(schema, &payload),
            _ => payload,
        };
        if code == b"d" && self.tombstones_on_delete && key.is_some() {
            out.push((Some(value), key.clone()));
            out.push((None, key));
        } else {
            out.push((Some(value), key));
        }
        Ok(())
    }

    fn write_source(&self, out: &mut Vec<u8>, m: &canal::Message, code: &[u8], row: usize) {
        out.extend_from_slice(b"{\"version\":\"cdc-smt\",\"connector\":\"mysql\",\"name\":");
        json::write_str(out, &self.prefix);
        out.extend_from_slice(b",\"ts_ms\":");
        json::write_int(out, m.es.unwrap_or(0));
        out.extend_from_slice(if code == b"r" { b",\"snapshot\":\"true\",\"db\":" } else { b",\"snapshot\":\"false\",\"db\":" });
        json::write_str(out, m.database.as_deref().unwrap_or(""));
        out.extend_from_slice(b",\"sequence\":null,\"table\":");
        match m.table.as_deref() {
            Some(t) if !t.is_empty() => json::write_str(out, t),
            _ => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"server_id\":0,\"gtid\":null,\"file\":\"\",\"pos\":0,\"row\":");
        json::write_int(out, row);
        out.extend_from_slice(b",\"thread\":null,\"query\":null}");
    }
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

/// One image as a JSON object in row order; ``spans`` gets each column's value bytes.
fn write_image(plan: &TablePlan, image: &[(&str, Option<&str>)], out: &mut Vec<u8>, spans: &mut [Option<(usize, usize)>]) -> Result<(), Fallback> {
    let mut seen = vec![false; plan.columns.len()];
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
        if n > 0 {
            out.push(b',');
        }
        json::write_str(out, name);
        out.push(b':');
        let start = out.len();
        match value {
            None => out.extend_from_slice(b"null"),
            Some(text) => plan.columns[c].op.write(out, text)?,
        }
        spans[c] = Some((start, out.len()));
    }
    out.push(b'}');
    Ok(())
}

fn table_plan(spec: &Bound<PyAny>) -> PyResult<TablePlan> {
    let (columns, pk, key_schema, envelope_schema): (Vec<(String, String, PyObject)>, Vec<String>, Option<Vec<u8>>, Option<Vec<u8>>) =
        spec.extract()?;
    let py = spec.py();
    let mut cols = Vec::with_capacity(columns.len());
    let mut index = HashMap::new();
    for (name, op, arg) in columns {
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
        index.entry(name.clone()).or_insert(cols.len());
        cols.push(Column { name, op });
    }
    let mut pk_index = Vec::new();
    for name in pk {
        let c = *index.get(&name).ok_or_else(|| PyValueError::new_err(format!("key column {name:?} is not a column")))?;
        if !pk_index.contains(&c) {
            pk_index.push(c);
        }
    }
    Ok(TablePlan { columns: cols, index, pk: pk_index, key_schema, envelope_schema })
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
    Ok(())
}
