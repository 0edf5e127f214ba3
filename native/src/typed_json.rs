//! Canal text -> the typed JSON values of Maxwell and GoldenGate (``SchemalessJson.json_image``
//! of a Canal event): numbers stay numbers (DECIMAL as its exact digits), temporals are
//! MySQL text at the column's fractional digits, binary is base64, SET a JSON array of
//! labels and JSON an embedded document (Maxwell), or both as text (GoldenGate).
//!
//! Shared by the two writers (``maxwell_out``, ``ogg_out``): the per-table layout, one
//! row's image, the before-image of an UPDATE and which of its columns changed (compared
//! as Python compares the rendered values). Texts whose rendering is not certain are
//! [`Fallback`]: the record goes to Python.

use std::cell::RefCell;
use std::collections::HashMap;

use pyo3::prelude::*;
use serde_json::Value;

use crate::canal::Row;
use crate::canal_out::{entries, quoted_names, text_key, Entry};
use crate::canal_text::TextOp;
use crate::values::{plain_number, set_labels, Fallback, Op};
use crate::{canon, json, scratch};

/// How one column's Canal text becomes its typed JSON value.
pub enum Conv {
    /// ``values``' Debezium conversions that write what Maxwell writes (integers, DOUBLE,
    /// BIT(1), strings, labelled ENUMs, binary as base64).
    Value(Op),
    /// DATE, DATETIME/TIMESTAMP and TIME as MySQL text at the column's digits (``canal_text``).
    Text(TextOp),
    /// Single-precision FLOAT: the text read as a double, rounded to 32 bits, written as a double.
    Float32,
    /// DECIMAL: the exact digits as a JSON number (plain notation only).
    Decimal,
    /// SET: ``[label, ...]`` (``set_as_list``), from the bitmask or labels when it has labels.
    SetList(Option<Vec<String>>),
    /// JSON as an embedded document (``embedded_json``).
    Json,
}

/// How Python compares two rendered values of a column (``!=`` after a type check).
#[derive(Clone, Copy, PartialEq)]
enum Eq {
    /// Equal renderings mean equal values, and only they do.
    Bytes,
    /// Floats: ``-0.0 == 0.0``.
    Double,
    /// Decimals: ``1.50 == 1.5``.
    Decimal,
    /// Documents: key order aside, ``true == 1`` inside.
    Json,
}

struct Column {
    name: String,
    /// ``"name":`` as written before each value.
    key: Vec<u8>,
    conv: Conv,
    eq: Eq,
}

/// One table layout (Canal's ``mysqlType``, ``sqlType``, ``pkNames``, database, table).
pub struct Table {
    index: HashMap<String, usize>,
    columns: Vec<Column>,
    /// Primary key: (name as a JSON string, name).
    pub pk: Vec<(Vec<u8>, String)>,
    pub ops: [Entry; 4],
}

impl Table {
    /// A table's spec from Python: ``(columns, pk, ops)``, a column ``(name, conv, arg)``,
    /// ``ops`` four ``(what, variant)``: 0 dropped, 1 Python, 2 written with ``variant``.
    pub fn from_spec(spec: &Bound<PyAny>) -> PyResult<Option<Table>> {
        #[allow(clippy::type_complexity)]
        let (columns, pk, ops): (Vec<(String, String, PyObject)>, Vec<String>, Vec<(u8, Option<usize>)>) = spec.extract()?;
        let py = spec.py();
        let mut index = HashMap::with_capacity(columns.len());
        let mut cols = Vec::with_capacity(columns.len());
        for (name, conv, arg) in columns {
            let arg = arg.bind(py);
            let (conv, eq) = match conv.as_str() {
                "int" => (Conv::Value(Op::Int), Eq::Bytes),
                "double" => (Conv::Value(Op::Double), Eq::Double),
                "bit1" => (Conv::Value(Op::Bit1), Eq::Bytes),
                "str" => (Conv::Value(Op::Str), Eq::Bytes),
                "bytes" => (Conv::Value(Op::Bytes), Eq::Bytes),
                "enum" => (Conv::Value(Op::Enum(arg.extract()?)), Eq::Bytes),
                "decimal" => (Conv::Decimal, Eq::Decimal),
                "float32" => (Conv::Float32, Eq::Double),
                "set_list" => (Conv::SetList(arg.extract()?), Eq::Bytes),
                "set" => (Conv::Value(Op::Set(arg.extract()?)), Eq::Bytes),
                "json" => (Conv::Json, Eq::Json),
                "date" | "datetime" | "time" => {
                    let fsp: Option<usize> = arg.extract()?;
                    match TextOp::from_name(&conv, fsp) {
                        Some(op) => (Conv::Text(op), Eq::Bytes),
                        None => (Conv::Value(Op::Python), Eq::Bytes),
                    }
                }
                "python" => (Conv::Value(Op::Python), Eq::Bytes),
                other => return Err(pyo3::exceptions::PyValueError::new_err(format!("unknown typed JSON conversion {other:?}"))),
            };
            if index.insert(name.clone(), cols.len()).is_some() {
                return Ok(None);
            }
            let mut key = Vec::with_capacity(name.len() + 3);
            json::write_str(&mut key, &name);
            key.push(b':');
            cols.push(Column { name, key, conv, eq });
        }
        let entries = entries(ops)?;
        let pk = quoted_names(pk);
        Ok(Some(Table { index, columns: cols, pk, ops: entries }))
    }

    /// Does every row name only this table's columns (what Python reads without error)?
    pub fn knows(&self, data: &[Row]) -> bool {
        data.iter().all(|row| row.0.iter().all(|(k, _)| self.index.contains_key(k.as_ref())))
    }

    /// One value rendered into ``out`` (``None``: null).
    fn value(&self, c: usize, value: Option<&str>, out: &mut Vec<u8>) -> Result<(), Fallback> {
        let Some(text) = value else {
            out.extend_from_slice(b"null");
            return Ok(());
        };
        match &self.columns[c].conv {
            Conv::Value(op) => op.write(out, text),
            Conv::Text(op) => op.write(out, text),
            Conv::Float32 => {
                if !plain_number(text) {
                    return Err(Fallback);
                }
                let v: f64 = text.parse().map_err(|_| Fallback)?;
                let single = v as f32;
                if !single.is_finite() {
                    return Err(Fallback); // beyond FLOAT's range (or not a number): Python words it
                }
                json::write_f64(out, single as f64);
                Ok(())
            }
            Conv::Decimal => {
                plain_decimal(text)?;
                out.extend_from_slice(text.as_bytes());
                Ok(())
            }
            Conv::SetList(labels) => {
                let text = match labels {
                    Some(labels) => std::borrow::Cow::Owned(set_labels(labels, text)?),
                    None => std::borrow::Cow::Borrowed(text),
                };
                out.push(b'[');
                for (n, label) in text.split(',').filter(|s| !s.is_empty()).enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    json::write_str(out, label);
                }
                out.push(b']');
                Ok(())
            }
            Conv::Json => canon::write(out, text).map_err(|_| Fallback),
        }
    }

    /// ``row`` as a JSON object of rendered values, in row order, into ``out``; per entry
    /// its column and the span of its value into ``spans``.
    pub fn image(&self, row: &Row, out: &mut Vec<u8>, spans: &mut Spans) -> Result<(), Fallback> {
        spans.clear();
        spans.reserve(row.0.len());
        let narrow = self.columns.len() <= 64;
        let mut seen = 0u64;
        out.push(b'{');
        for (n, (name, value)) in row.0.iter().enumerate() {
            let c = match self.columns.get(n) {
                Some(col) if col.name == name.as_ref() => n, // the table's order: no lookup
                _ => *self.index.get(name.as_ref()).ok_or(Fallback)?, // a column the schema lacks: Python
            };
            let repeated = if narrow {
                let bit = 1u64 << c;
                let was = seen & bit != 0;
                seen |= bit;
                was
            } else {
                spans.iter().any(|&(s, _, _)| s == c)
            };
            if repeated {
                return Err(Fallback); // a repeated column: Python's dict semantics decide
            }
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&self.columns[c].key); // the row's name is the column's
            let start = out.len();
            self.value(c, value.as_deref(), out)?;
            spans.push((c, start, out.len()));
        }
        out.push(b'}');
        Ok(())
    }

    /// The before-image of an UPDATE (``data`` overlaid with ``old``: the row's order, then
    /// ``old``'s other columns) as ``(column's "name":, rendered value, changed)`` entries,
    /// given the rendered row (``after``, ``spans``). ``changed``: Python's ``type(a) is not
    /// type(b) or a != b`` of the rendered values, or a column the row lacks. The names are
    /// the columns' own (a row's names are looked up as they are), written once per table.
    pub fn before(&self, old: &Row, after: &[u8], spans: &Spans, mut visit: impl FnMut(&[u8], &[u8], bool)) -> Result<(), Fallback> {
        scratch::with(&SCRATCH, |Scratch { rendered, overlay }| {
            // per old entry: column, span in ``rendered``, still to be visited
            for (n, (name, value)) in old.0.iter().enumerate() {
                let c = match self.columns.get(n) {
                    Some(col) if col.name == name.as_ref() => n,
                    _ => *self.index.get(name.as_ref()).ok_or(Fallback)?,
                };
                if overlay.iter().any(|o| o.0 == c) {
                    return Err(Fallback);
                }
                let start = rendered.len();
                self.value(c, value.as_deref(), rendered)?;
                overlay.push((c, start, rendered.len(), true));
            }
            for &(c, a, b) in spans.iter() {
                let now = &after[a..b];
                let key = &self.columns[c].key;
                match overlay.iter_mut().find(|o| o.0 == c) {
                    Some(o) => {
                        o.3 = false;
                        let v = &rendered[o.1..o.2];
                        visit(key, v, !self.same(c, now, v)?);
                    }
                    None => visit(key, now, false),
                }
            }
            for &(c, a, b, pending) in overlay.iter() {
                if pending {
                    visit(&self.columns[c].key, &rendered[a..b], true);
                }
            }
            Ok(())
        })
    }

    /// Are two rendered values of column ``c`` the same to Python?
    fn same(&self, c: usize, a: &[u8], b: &[u8]) -> Result<bool, Fallback> {
        if a == b {
            return Ok(true);
        }
        if a == b"null" || b == b"null" {
            return Ok(false);
        }
        Ok(match self.columns[c].eq {
            Eq::Bytes => false,
            Eq::Double => {
                let parse = |s: &[u8]| std::str::from_utf8(s).ok().and_then(|s| s.parse::<f64>().ok()).ok_or(Fallback);
                parse(a)? == parse(b)?
            }
            Eq::Decimal => decimal_key(a)? == decimal_key(b)?,
            Eq::Json => {
                let (Ok(x), Ok(y)) = (serde_json::from_slice::<Value>(a), serde_json::from_slice::<Value>(b)) else { return Err(Fallback) };
                py_eq(&x, &y, true)?
            }
        })
    }

    /// ``{"pk": "text", ...}``: the key, the primary key's raw texts (``None``: no key).
    pub fn key(&self, row: &Row) -> Option<Vec<u8>> {
        text_key(&self.pk, row)
    }

    /// ``[pk names]`` as a JSON array.
    pub fn pk_array(&self, out: &mut Vec<u8>) {
        out.push(b'[');
        for (n, (name, _)) in self.pk.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(name);
        }
        out.push(b']');
    }
}

/// Per row entry: its column and the span of its rendered value.
pub type Spans = Vec<(usize, usize, usize)>;

/// What [`Table::before`] reuses from message to message: a before-image's rendered
/// values, and per entry its column, span and whether it is still to be visited.
#[derive(Default)]
struct Scratch {
    rendered: Vec<u8>,
    overlay: Vec<(usize, usize, usize, bool)>,
}

impl scratch::Scratch for Scratch {
    fn clear(&mut self) {
        self.rendered.clear();
        self.overlay.clear();
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::default();
    static WRITER: RefCell<WriterScratch> = RefCell::default();
}

/// What the Maxwell and GoldenGate writers reuse from message to message: the rendered row's
/// spans, an image written apart (Maxwell's changed columns, GoldenGate's after-image) and
/// the fields before the images (for a message's second row): three allocations per message
/// otherwise.
#[derive(Default)]
pub struct WriterScratch {
    pub spans: Spans,
    pub image: Vec<u8>,
    pub head: Vec<u8>,
}

impl scratch::Scratch for WriterScratch {
    fn clear(&mut self) {
        self.spans.clear();
        self.image.clear();
        self.head.clear();
    }
}

/// ``f`` with this thread's [`WriterScratch`], cleared.
pub fn with_writer_scratch<T>(f: impl FnOnce(&mut WriterScratch) -> T) -> T {
    scratch::with(&WRITER, f)
}

/// ``-?(0|[1-9][0-9]*)(\.[0-9]+)?`` within MySQL's DECIMAL (65 integer digits, 30 fraction
/// digits): ``format(Decimal(text), "f")`` is the text itself.
pub(crate) fn plain_decimal(text: &str) -> Result<(), Fallback> {
    let body = text.strip_prefix('-').unwrap_or(text);
    let (int, frac) = match body.split_once('.') {
        Some((i, f)) if !f.is_empty() => (i, f),
        Some(_) => return Err(Fallback),
        None => (body, ""),
    };
    let ok = !int.is_empty()
        && int.len() <= 65
        && int.bytes().all(|b| b.is_ascii_digit())
        && (int == "0" || !int.starts_with('0'))
        && frac.len() <= 30
        && frac.bytes().all(|b| b.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(Fallback)
    }
}

/// A plain decimal's value: (negative, integer digits, fraction without trailing zeros).
fn decimal_key(text: &[u8]) -> Result<(bool, &[u8], &[u8]), Fallback> {
    let (neg, body) = match text {
        [b'-', rest @ ..] => (true, rest),
        rest => (false, rest),
    };
    let (int, frac) = match body.iter().position(|&b| b == b'.') {
        Some(p) => (&body[..p], &body[p + 1..]),
        None => (body, &body[body.len()..]),
    };
    if int.is_empty() || !int.iter().chain(frac).all(u8::is_ascii_digit) {
        return Err(Fallback);
    }
    let int = &int[int.iter().take_while(|&&d| d == b'0').count()..];
    let frac = &frac[..frac.len() - frac.iter().rev().take_while(|&&d| d == b'0').count()];
    let zero = int.is_empty() && frac.is_empty();
    Ok((neg && !zero, int, frac))
}

/// Python's ``a == b`` of two parsed documents (integers, strings, booleans, null, arrays,
/// objects: what ``canon`` writes); at the top level the types must match too.
fn py_eq(a: &Value, b: &Value, top: bool) -> Result<bool, Fallback> {
    let number = |v: &Value| -> Option<i128> {
        match v {
            Value::Number(n) => n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from)),
            Value::Bool(b) if !top => Some(*b as i128),
            _ => None,
        }
    };
    Ok(match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(_) | Value::Bool(_), Value::Number(_) | Value::Bool(_)) => {
            if matches!(a, Value::Number(n) if n.is_f64()) || matches!(b, Value::Number(n) if n.is_f64()) {
                return Err(Fallback);
            }
            match (number(a), number(b)) {
                (Some(x), Some(y)) => x == y,
                _ => false, // a boolean against a number at the top level: different types
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                return Ok(false);
            }
            for (u, v) in x.iter().zip(y) {
                if !py_eq(u, v, false)? {
                    return Ok(false);
                }
            }
            true
        }
        (Value::Object(x), Value::Object(y)) => {
            if x.len() != y.len() {
                return Ok(false);
            }
            for (k, u) in x {
                match y.get(k) {
                    Some(v) if py_eq(u, v, false)? => {}
                    _ => return Ok(false),
                }
            }
            true
        }
        _ => false,
    })
}
