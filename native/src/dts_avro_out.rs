//! The DTS Avro writer: what ``DtsAvro.encode`` writes for the rows of a Canal (or TiCDC)
//! message, one schemaless Avro ``Record`` per row.
//!
//! The record's layout is fixed (``schemas/dts-avro.avsc``), so the Avro binary encoding
//! is written by hand: zig-zag varints, length-prefixed strings and bytes, union indexes,
//! and arrays and maps as one block then ``0`` (as fastavro writes them). The parts that
//! are the same for every row of a table and op (``sourcePosition`` .. ``fields``) come
//! from Python, which encodes them with fastavro from the probe's record; per row the
//! writer adds ``id`` (the encoder's counter, shared with Python), ``sourceTimestamp``
//! and ``bornTimestamp`` (from ``es``) and the images, each value converted from its
//! Canal text as ``CanalText.to_python`` followed by ``dts_avro.encode_value`` would
//! (anything else: ``Fallback``, the record is Python's).
//!
//! Why by hand, not the ``apache-avro`` crate (0.17): its public datum writer
//! (``to_avro_datum``) takes a ``Value`` tree (a ``String`` per field name, a ``Box`` per
//! union) and validates it and resolves the schema's names on every call. Measured in one
//! run (a scratch crate, the bench's eleven-column record, the same bytes from both, on the
//! shared 2-core machine): 91 µs per record with the crate against 2.1 µs by hand, while
//! fastavro's own read + write of such a record took about 220 µs there, so the crate alone
//! would leave the plan under 2.5× fastavro, short of the 5× target.

use std::collections::HashMap;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::canal::{Message, Row};
use crate::canal_text::{canonical_int, write_decimal};
use crate::json;
use crate::values::{date, datetime, epoch_us, int_in_json_range, plain_number, set_labels, time_us, zoned_to_utc, Fallback};
use chrono::{Datelike, Timelike};

/// Avro ``long``/``int``: zig-zag varint.
pub fn write_long(out: &mut Vec<u8>, n: i64) {
    let mut z = ((n << 1) ^ (n >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

/// Avro ``string``/``bytes``: length, then the bytes.
pub fn write_bytes(out: &mut Vec<u8>, b: &[u8]) {
    write_long(out, b.len() as i64);
    out.extend_from_slice(b);
}

/// Union branch indexes of an image value (``["null", "Integer", "Character", ...]``).
const INTEGER: i64 = 1;
const CHARACTER: i64 = 2;
const DECIMAL: i64 = 3;
const FLOAT: i64 = 4;
const TIMESTAMP: i64 = 5;
const DATETIME: i64 = 6;
const BINARY_OBJECT: i64 = 10;
const TEXT_OBJECT: i64 = 11;

/// How one column's Canal text becomes its DTS union value.
enum Val {
    /// ``Integer`` (precision in ``head``): the text when it is ``str(int(text))``.
    Int,
    /// ``Integer`` of a BIT(1): ``0`` or ``1``.
    Bit1,
    /// ``Decimal``: the text as Python's ``quantize`` pads it, then precision and scale (``tail``).
    Decimal(usize),
    /// ``Float``: a DOUBLE (``false``) or FLOAT rounded to single precision (``true``).
    Float(bool),
    /// ``Character`` (utf8mb4), ``BinaryObject`` TEXT, ``TextObject``: the text's UTF-8 bytes.
    Text,
    /// ``Character`` binary or ``BinaryObject`` BLOB: ISO-8859-1 text to bytes.
    Bytes,
    /// ``TextObject`` of a labelled ENUM: the label of the text (index or label), as Python reads it.
    Enum(HashMap<String, String>),
    /// ``TextObject`` of a labelled SET: the labels of its bitmask or label list.
    Set(Vec<String>),
    /// ``Timestamp`` of a wall clock in the source's zone (``None``: UTC).
    Timestamp(Option<chrono_tz::Tz>),
    /// ``DateTime`` parts.
    Year,
    Date,
    DateTime,
    Time,
    /// Not handled natively: a non-null value sends the record to Python.
    Python,
}

struct Column {
    val: Val,
    /// The union index and the fields before the value (``Integer.precision``, ``Character.charset``, ...).
    head: Vec<u8>,
    /// The fields after the value (``Decimal``/``Float`` precision and scale).
    tail: Vec<u8>,
}

/// What becomes of one op's rows (c, u, d, r).
pub enum Entry {
    Dropped,
    Python,
    /// Written: the variant (topic, header edits) and the constant middle of the record.
    Write(usize, Vec<u8>),
}

/// One table layout (Canal's ``mysqlType``, ``sqlType``, ``pkNames``, database, table).
pub struct Table {
    names: Vec<String>,
    index: HashMap<String, usize>,
    columns: Vec<Column>,
    /// ``version`` as written.
    version: Vec<u8>,
    /// Key fields: (name as a JSON string, column, how the typed value is written).
    key: Vec<(Vec<u8>, usize, KeyKind)>,
    pub ops: [Entry; 4],
}

/// ``(kind, union index)`` of a column op name.
fn val_of(op: &str) -> Option<(Val, i64)> {
    Some(match op {
        "int" => (Val::Int, INTEGER),
        "bit1" => (Val::Bit1, INTEGER),
        "decimal" => (Val::Decimal(0), DECIMAL),
        "double" => (Val::Float(false), FLOAT),
        "float" => (Val::Float(true), FLOAT),
        "character" => (Val::Text, CHARACTER),
        "text_object" => (Val::Text, TEXT_OBJECT),
        "binary_object" => (Val::Text, BINARY_OBJECT),
        "binary" => (Val::Bytes, CHARACTER),
        "blob" => (Val::Bytes, BINARY_OBJECT),
        "enum" => (Val::Enum(HashMap::new()), TEXT_OBJECT),
        "set" => (Val::Set(Vec::new()), TEXT_OBJECT),
        "timestamp" => (Val::Timestamp(None), TIMESTAMP),
        "year" => (Val::Year, DATETIME),
        "date" => (Val::Date, DATETIME),
        "datetime" => (Val::DateTime, DATETIME),
        "time" => (Val::Time, DATETIME),
        "python" => (Val::Python, 0),
        _ => return None,
    })
}

/// How a key field's typed value is written (``orjson`` with ``json_default``).
#[derive(Clone, Copy)]
enum KeyKind {
    /// A JSON integer (its canonical digits).
    Int,
    /// Its text as a JSON string.
    Text,
    /// A DECIMAL: ``format(Decimal(text), "f")``, the text itself when plain
    /// (``typed_json::plain_decimal``; other texts: Python's).
    Decimal,
}

impl<'py> FromPyObject<'py> for KeyKind {
    /// ``"int"``, ``"text"`` or ``"decimal"``; a bool (``is_int``, as ``_key_is_int`` gives it for
    /// the Debezium reader's tables) as ``int`` or ``text``.
    fn extract_bound(ob: &Bound<'py, PyAny>) -> PyResult<Self> {
        if let Ok(is_int) = ob.downcast::<pyo3::types::PyBool>() {
            return Ok(if is_int.is_true() { KeyKind::Int } else { KeyKind::Text });
        }
        match ob.extract::<String>()?.as_str() {
            "int" => Ok(KeyKind::Int),
            "text" => Ok(KeyKind::Text),
            "decimal" => Ok(KeyKind::Decimal),
            other => Err(PyValueError::new_err(format!("unknown key kind {other:?}"))),
        }
    }
}

impl Table {
    /// A table's spec from Python: ``(version, columns, key, ops)`` where a column is
    /// ``(name, op, precision, scale, type_text, arg)`` (``type_text``: ``Character.charset``,
    /// ``BinaryObject.type`` or ``TextObject.type``, a TIMESTAMP's zone; ``arg``: an ENUM's labels by text, a
    /// SET's labels), ``key`` lists ``(name, column index,
    /// kind)`` ([`KeyKind`]), and ``ops`` has four ``(what, variant, middle)``: 0 dropped, 1 Python, 2
    /// written with ``variant`` and ``middle``, the record's bytes from ``sourcePosition``
    /// to ``fields`` (as fastavro writes them for the op).
    pub fn from_spec(spec: &Bound<PyAny>) -> PyResult<Table> {
        #[allow(clippy::type_complexity)]
        let (version, columns, key, ops): (
            i32,
            Vec<(String, String, i32, i32, String, Option<PyObject>)>,
            Vec<(String, usize, KeyKind)>,
            Vec<(u8, Option<usize>, Option<Vec<u8>>)>,
        ) = spec.extract()?;
        let mut names = Vec::with_capacity(columns.len());
        let mut cols = Vec::with_capacity(columns.len());
        let mut index = HashMap::with_capacity(columns.len());
        let py = spec.py();
        for (name, op, precision, scale, text, arg) in columns {
            let Some((mut val, branch)) = val_of(&op) else {
                return Err(PyValueError::new_err(format!("unknown dts-avro column op {op:?}")));
            };
            let (mut head, mut tail) = (Vec::new(), Vec::new());
            write_long(&mut head, branch);
            match val {
                Val::Int | Val::Bit1 => write_long(&mut head, precision as i64),
                Val::Decimal(_) | Val::Float(_) => {
                    if let Val::Decimal(_) = val {
                        val = Val::Decimal(usize::try_from(scale).map_err(|_| PyValueError::new_err("negative scale"))?);
                    }
                    write_long(&mut tail, precision as i64);
                    write_long(&mut tail, scale as i64);
                }
                Val::Enum(_) | Val::Set(_) => {
                    let arg = arg.ok_or_else(|| PyValueError::new_err("ENUM/SET labels missing"))?;
                    val = match val {
                        Val::Enum(_) => Val::Enum(arg.extract(py)?),
                        _ => Val::Set(arg.extract(py)?),
                    };
                    write_bytes(&mut head, text.as_bytes());
                }
                Val::Text | Val::Bytes => write_bytes(&mut head, text.as_bytes()),
                Val::Timestamp(_) if text != "UTC" => {
                    val = match text.parse::<chrono_tz::Tz>() {
                        Ok(tz) => Val::Timestamp(Some(tz)),
                        Err(_) => Val::Python,
                    };
                }
                _ => {}
            }
            if index.insert(name.clone(), cols.len()).is_some() {
                return Err(PyValueError::new_err(format!("column {name:?} twice")));
            }
            names.push(name);
            cols.push(Column { val, head, tail });
        }
        let mut keys = Vec::with_capacity(key.len());
        for (name, c, kind) in key {
            if c >= cols.len() {
                return Err(PyValueError::new_err(format!("key column {name:?} is not a column")));
            }
            let mut b = Vec::new();
            json::write_str(&mut b, &name);
            keys.push((b, c, kind));
        }
        if ops.len() != 4 {
            return Err(PyValueError::new_err("expected four op entries (c, u, d, r)"));
        }
        let mut entries = [Entry::Python, Entry::Python, Entry::Python, Entry::Python];
        for (slot, (what, variant, middle)) in entries.iter_mut().zip(ops) {
            *slot = match (what, variant, middle) {
                (0, _, _) => Entry::Dropped,
                (2, Some(v), Some(m)) => Entry::Write(v, m),
                _ => Entry::Python,
            };
        }
        let mut v = Vec::new();
        write_long(&mut v, version as i64);
        Ok(Table { names, index, columns: cols, version: v, key: keys, ops: entries })
    }

    /// Does every row name only this table's columns (what Python reads without error)?
    pub fn knows(&self, data: &[Row]) -> bool {
        data.iter().all(|row| row.0.iter().all(|(k, _)| self.index.contains_key(k.as_ref())))
    }

    /// A row's values in column order: every column exactly once, in the table's order.
    fn values<'r>(&self, row: &'r Row) -> Result<Vec<Option<&'r str>>, Fallback> {
        if row.0.len() != self.names.len() {
            return Err(Fallback); // a column missing (EmptyObject NONE) or added: Python
        }
        row.0
            .iter()
            .zip(&self.names)
            .map(|((k, v), name)| if k.as_ref() == name.as_str() { Ok(v.as_deref()) } else { Err(Fallback) })
            .collect()
    }

    /// The image as the ``array`` branch of ``beforeImages``/``afterImages``.
    fn write_image(&self, out: &mut Vec<u8>, values: &[Option<&str>], scratch: &mut Vec<u8>) -> Result<(), Fallback> {
        write_long(out, 2);
        write_long(out, values.len() as i64);
        for (column, value) in self.columns.iter().zip(values) {
            match value {
                None => out.push(0),
                Some(text) => column.write(out, text, scratch)?,
            }
        }
        out.push(0);
        Ok(())
    }

    /// ``orjson.dumps({pk: typed value})`` of the row (``None``: no key).
    fn key(&self, values: &[Option<&str>]) -> Result<Option<Vec<u8>>, Fallback> {
        if self.key.is_empty() {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(64);
        out.push(b'{');
        for (n, (name, c, kind)) in self.key.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(name);
            out.push(b':');
            match values[*c] {
                None => out.extend_from_slice(b"null"),
                Some(text) => match kind {
                    KeyKind::Int => json::write_int(&mut out, int_in_json_range(text)?),
                    KeyKind::Text => json::write_str(&mut out, text),
                    KeyKind::Decimal => {
                        crate::typed_json::plain_decimal(text)?;
                        json::write_str(&mut out, text);
                    }
                },
            }
        }
        out.push(b'}');
        Ok(Some(out))
    }
}

impl Column {
    fn write(&self, out: &mut Vec<u8>, text: &str, scratch: &mut Vec<u8>) -> Result<(), Fallback> {
        out.extend_from_slice(&self.head);
        match &self.val {
            Val::Int => {
                canonical_int(text)?;
                write_bytes(out, text.as_bytes());
            }
            Val::Bit1 => match text {
                "0" | "1" => write_bytes(out, text.as_bytes()),
                _ => return Err(Fallback),
            },
            Val::Decimal(scale) => {
                scratch.clear();
                write_decimal(scratch, text, *scale)?; // a JSON string: the text between the quotes
                write_bytes(out, &scratch[1..scratch.len() - 1]);
            }
            Val::Float(single) => {
                if !plain_number(text) {
                    return Err(Fallback);
                }
                let mut v: f64 = text.parse().map_err(|_| Fallback)?;
                if *single {
                    v = v as f32 as f64;
                }
                if !v.is_finite() {
                    return Err(Fallback);
                }
                out.extend_from_slice(&v.to_le_bytes());
            }
            Val::Text => write_bytes(out, text.as_bytes()),
            Val::Bytes => {
                write_long(out, text.chars().count() as i64);
                for c in text.chars() {
                    let c = c as u32;
                    if c > 0xff {
                        return Err(Fallback); // not ISO-8859-1 text: Python words the error
                    }
                    out.push(c as u8);
                }
            }
            Val::Enum(labels) => write_bytes(out, labels.get(text).ok_or(Fallback)?.as_bytes()),
            Val::Set(labels) => write_bytes(out, set_labels(labels, text)?.as_bytes()),
            Val::Timestamp(zone) => {
                let local = datetime(text)?;
                let us = epoch_us(match zone {
                    None => local,
                    Some(tz) => zoned_to_utc(local, tz)?,
                });
                write_long(out, us.div_euclid(1_000_000));
                write_long(out, us.rem_euclid(1_000_000));
            }
            Val::Year => {
                let digits = text.strip_prefix('-').unwrap_or(text);
                if digits.is_empty() || digits.len() > 9 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(Fallback); // what Python's int() reads otherwise (signs, spaces, "_"): Python
                }
                let year: i32 = text.parse().map_err(|_| Fallback)?;
                write_parts(out, &[Some(year), None, None, None, None, None, None]);
            }
            Val::Date => {
                let d = date(text)?;
                write_parts(out, &[Some(d.year()), Some(d.month() as i32), Some(d.day() as i32), None, None, None, None]);
            }
            Val::DateTime => {
                let v = datetime(text)?;
                let parts = [v.year(), v.month() as i32, v.day() as i32, v.hour() as i32, v.minute() as i32, v.second() as i32, (v.nanosecond() / 1000) as i32];
                write_parts(out, &parts.map(Some));
            }
            Val::Time => {
                let us = time_us(text)?;
                let sign = if us < 0 { -1 } else { 1 };
                let (secs, frac) = (us.abs() / 1_000_000, us.abs() % 1_000_000);
                let (hours, rest) = (secs / 3600, secs % 3600);
                let parts = [hours, rest / 60, rest % 60, frac].map(|p| i32::try_from(sign * p).ok());
                if parts.iter().any(Option::is_none) {
                    return Err(Fallback);
                }
                write_parts(out, &[None, None, None, parts[0], parts[1], parts[2], parts[3]]);
            }
            Val::Python => return Err(Fallback),
        }
        out.extend_from_slice(&self.tail);
        Ok(())
    }
}

/// ``DateTime``: seven ``["null", "int"]`` fields.
fn write_parts(out: &mut Vec<u8>, parts: &[Option<i32>; 7]) {
    for p in parts {
        match p {
            None => out.push(0),
            Some(v) => {
                out.push(2);
                write_long(out, *v as i64);
            }
        }
    }
}

/// The encoder's record id counter (``DtsAvro._next_id``; DataWorks' ``_next_seq``), shared
/// with the Python path: a batch (``convert``) reads it first and writes it back last, and
/// once one record of the batch is Python's every later one is too (Python numbers them
/// after the plan's, in order). Outside a batch (``convert_arrow``) every record is Python's.
pub struct Ids {
    pub encoder: PyObject,
    /// The encoder's attribute holding the last id given.
    attr: &'static str,
    pub next: i64,
    /// Inside ``convert``, before its first record for Python: the plan may write records.
    pub open: bool,
}

impl Ids {
    pub fn new(encoder: PyObject, attr: &'static str) -> Ids {
        Ids { encoder, attr, next: 0, open: false }
    }

    pub fn begin(&mut self, py: Python) -> PyResult<()> {
        self.next = self.encoder.getattr(py, self.attr)?.extract(py)?;
        self.open = true;
        Ok(())
    }

    pub fn end(&mut self, py: Python) -> PyResult<()> {
        self.open = false;
        self.encoder.setattr(py, self.attr, self.next)
    }
}

/// The records of one message's rows into ``out`` (all or none).
pub fn write(t: &Table, m: &Message, op: usize, variant: usize, middle: &[u8], ids: &mut Ids, out: &mut Vec<crate::Output>) -> Result<(), Fallback> {
    let Some(data) = &m.data else { return Err(Fallback) };
    let old = m.old.as_deref().unwrap_or(&[]);
    let mut scratch = Vec::new();
    let start = out.len();
    let mut next = ids.next;
    let written = (|| {
        for (i, row) in data.iter().enumerate() {
            let values = t.values(row)?;
            let mut value = Vec::with_capacity(middle.len() + 32 * values.len() + 32);
            value.extend_from_slice(&t.version);
            next = next.checked_add(1).ok_or(Fallback)?;
            write_long(&mut value, next);
            let born = m.es.unwrap_or(0);
            write_long(&mut value, m.es.map_or(0, |es| es.div_euclid(1000)));
            value.extend_from_slice(middle);
            match op {
                1 => {
                    // before: the row with ``old``'s values over it
                    let mut before = values.clone();
                    if let Some(o) = old.get(i) {
                        for (n, (k, v)) in o.0.iter().enumerate() {
                            if o.0[..n].iter().any(|(p, _)| p == k) {
                                return Err(Fallback); // a repeated column: Python's dict semantics decide
                            }
                            before[*t.index.get(k.as_ref()).ok_or(Fallback)?] = v.as_deref();
                        }
                    }
                    t.write_image(&mut value, &before, &mut scratch)?;
                    t.write_image(&mut value, &values, &mut scratch)?;
                }
                2 => {
                    t.write_image(&mut value, &values, &mut scratch)?;
                    value.push(0);
                }
                _ => {
                    value.push(0);
                    t.write_image(&mut value, &values, &mut scratch)?;
                }
            }
            write_long(&mut value, born);
            out.push((Some(value), t.key(&values)?, variant));
        }
        Ok(())
    })();
    if written.is_err() {
        out.truncate(start);
        return written;
    }
    ids.next = next;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag() {
        for (n, want) in [(0i64, vec![0u8]), (-1, vec![1]), (1, vec![2]), (-64, vec![127]), (64, vec![128, 1]), (i64::MAX, vec![254, 255, 255, 255, 255, 255, 255, 255, 255, 1]), (i64::MIN, vec![255, 255, 255, 255, 255, 255, 255, 255, 255, 1])] {
            let mut out = Vec::new();
            write_long(&mut out, n);
            assert_eq!(out, want, "{n}");
        }
    }
}
