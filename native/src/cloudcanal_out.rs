//! The CloudCanal writer: what ``CloudCanalJson.encode_message`` writes for the rows of a
//! Canal-shaped message (Canal's, TiCDC's, or a Debezium event read as one), one message
//! per row: ``action``, ``before`` (an UPDATE's before-image: the row overlaid with
//! ``old``), ``bid`` 0, ``data`` (the row; a DELETE's too), ``db``, ``dbValType`` and
//! ``jdbcType`` of the row's columns, ``isDdl``, ``entryType``, ``execTs`` (``es``),
//! ``pks``, ``schema`` (the database), ``sendTs`` (``ts``), ``sql`` and ``table``.
//!
//! Values are MySQL's own text (``types.to_text`` of the typed value): Canal's text
//! re-written by ``canal_text``'s conversions, ENUM indexes and SET bitmasks as labels.
//! The key is the primary key's typed values (integers as numbers, strings, labels).

use std::collections::HashMap;

use pyo3::prelude::*;

use crate::canal::{Message, Row};
use crate::canal_out::{entries, Entry};
use crate::canal_text::TextOp;
use crate::maxwell_out::write_name;
use crate::values::{plain_number, Fallback, Op};
use crate::{json, Output};

/// How one column's Canal text becomes MySQL's text (a JSON string).
enum Conv {
    /// ``canal_text``'s conversions (integers, decimals, doubles, temporals, binary, text).
    Text(TextOp),
    /// ENUM index -> label, SET bitmask -> labels (``values``).
    Value(Op),
    /// Single-precision FLOAT: the text read as a double, rounded to 32 bits, its ``repr``.
    Float32,
    /// YEAR: ``str(int(text))`` of up to four digits (``0000`` is ``0``).
    Year,
    /// DataWorks' JSON values (``DataWorksJson._value``): integers, doubles, BIT(1) booleans
    /// and base64 binary as the Debezium writer's conversions write them.
    Json(Op),
    /// DataWorks' single-precision FLOAT values: ``float32(float(text))`` as a JSON number.
    JsonFloat32,
    /// DataWorks' BIT(n > 1) values: the canonical non-negative integer text as a JSON integer.
    JsonBits,
    /// DataWorks' DATE values: epoch milliseconds of the wall clock (a DATE's midnight, with
    /// ``date``) in ``zone`` (``None``: UTC), sub-millisecond digits floored.
    EpochMs { date: bool, zone: Option<chrono_tz::Tz> },
}

struct Column {
    name: String,
    /// ``"name":`` as written before each value.
    key: Vec<u8>,
    conv: Conv,
    /// ``"name":"type"`` (the ``dbValType`` entry) and ``"name":code`` (``jdbcType``).
    db_val_type: Vec<u8>,
    jdbc_type: Vec<u8>,
    /// ``{"name":"name","type":"type"}`` (DataWorks' ``dataColumn`` entry).
    pub(crate) data_column: Vec<u8>,
}

/// One table layout (Canal's ``mysqlType``, ``sqlType``, ``pkNames``, database, table).
pub struct Table {
    index: HashMap<String, usize>,
    columns: Vec<Column>,
    /// Key fields: (``"name":``, name, the typed value's JSON from the text).
    key: Vec<(Vec<u8>, String, KeyOp)>,
    /// ``pks`` as written.
    pks: Vec<u8>,
    /// ``schema`` as written when the table's source has one (Debezium's), else the database.
    schema: Option<Vec<u8>>,
    pub ops: [Entry; 4],
}

/// ``action`` of each op (c, u, d, r: a snapshot read is an insert).
const ACTIONS: [&[u8]; 4] = [b"\"INSERT\"", b"\"UPDATE\"", b"\"DELETE\"", b"\"INSERT\""];

impl Table {
    /// A table's spec from Python: ``(columns, key, ops)``: a column ``(name, conv, arg,
    /// dbValType, jdbcType)``, a key field ``(name, op, arg)`` (``int``, ``str``, ``enum``
    /// or ``python``), ``ops`` four ``(what, variant)``: 0 dropped, 1 Python, 2 written;
    /// an optional fourth item, the table's ``schema`` (``None``: the database's name).
    /// ``None``: a repeated column.
    pub fn from_spec(spec: &Bound<PyAny>) -> PyResult<Option<Table>> {
        let spec = spec.downcast::<pyo3::types::PyTuple>()?;
        #[allow(clippy::type_complexity)]
        let (columns, key, ops): (Vec<(String, String, PyObject, String, i64)>, Vec<(String, String, PyObject)>, Vec<(u8, Option<usize>)>) =
            spec.get_slice(0, 3).extract()?;
        let schema: Option<String> = match spec.get_item(3) {
            Ok(item) => item.extract()?,
            Err(_) => None,
        };
        let schema = schema.map(|name| {
            let mut quoted = Vec::new();
            json::write_str(&mut quoted, &name);
            quoted
        });
        let py = spec.py();
        let mut index = HashMap::with_capacity(columns.len());
        let mut cols = Vec::with_capacity(columns.len());
        for (name, conv, arg, type_text, jdbc) in columns {
            let arg = arg.bind(py);
            let conv = match conv.as_str() {
                "enum" => Conv::Value(Op::Enum(arg.extract()?)),
                "set" => Conv::Value(Op::Set(arg.extract()?)),
                "float32" => Conv::Float32,
                "year" => Conv::Year,
                "json_int" => Conv::Json(Op::Int),
                "json_double" => Conv::Json(Op::Double),
                "json_bit1" => Conv::Json(Op::Bit1),
                "json_bytes" => Conv::Json(Op::Bytes),
                "json_bits" => Conv::JsonBits,
                "json_float32" => Conv::JsonFloat32,
                "epoch_ms" | "epoch_ms_date" => {
                    let zone: String = arg.extract()?;
                    let zone = match zone.as_str() {
                        "UTC" => None,
                        other => Some(other.parse().map_err(|_| pyo3::exceptions::PyValueError::new_err(format!("unknown zone {other:?}")))?),
                    };
                    Conv::EpochMs { date: conv == "epoch_ms_date", zone }
                }
                other => match TextOp::from_name(other, arg.extract()?) {
                    Some(op) => Conv::Text(op),
                    None => return Err(pyo3::exceptions::PyValueError::new_err(format!("unknown CloudCanal conversion {other:?}"))),
                },
            };
            if index.insert(name.clone(), cols.len()).is_some() {
                return Ok(None);
            }
            let mut key = Vec::with_capacity(name.len() + 3);
            json::write_str(&mut key, &name);
            key.push(b':');
            let mut db_val_type = key.clone();
            json::write_str(&mut db_val_type, &type_text);
            let mut jdbc_type = key.clone();
            json::write_int(&mut jdbc_type, jdbc);
            let mut data_column = b"{\"name\":".to_vec();
            json::write_str(&mut data_column, &name);
            data_column.extend_from_slice(b",\"type\":");
            json::write_str(&mut data_column, &type_text);
            data_column.push(b'}');
            cols.push(Column { name, key, conv, db_val_type, jdbc_type, data_column });
        }
        let mut pks = vec![b'['];
        let mut key_fields = Vec::with_capacity(key.len());
        for (n, (name, op, arg)) in key.into_iter().enumerate() {
            if n > 0 {
                pks.push(b',');
            }
            json::write_str(&mut pks, &name);
            let op = match op.as_str() {
                "int" => KeyOp::Value(Op::Int),
                "str" => KeyOp::Value(Op::Str),
                "enum" => KeyOp::Value(Op::Enum(arg.bind(py).extract()?)),
                "decimal" => KeyOp::Decimal,
                _ => KeyOp::Value(Op::Python),
            };
            let mut quoted = Vec::with_capacity(name.len() + 3);
            json::write_str(&mut quoted, &name);
            quoted.push(b':');
            key_fields.push((quoted, name, op));
        }
        pks.push(b']');
        Ok(Some(Table { index, columns: cols, key: key_fields, pks, schema, ops: entries(ops)? }))
    }

    /// Does every row name only this table's columns (what Python reads without error)?
    pub fn knows(&self, data: &[Row]) -> bool {
        data.iter().all(|row| row.0.iter().all(|(k, _)| self.index.contains_key(k.as_ref())))
    }

    /// The column of a row's ``n``-th entry: its expected position first, the name otherwise.
    pub(crate) fn column(&self, n: usize, name: &str) -> Result<usize, Fallback> {
        match self.columns.get(n) {
            Some(col) if col.name == name => Ok(n),
            _ => self.index.get(name).copied().ok_or(Fallback), // a column the schema lacks: Python
        }
    }

    /// One value as MySQL text (``None``: null) into ``out``.
    pub(crate) fn value(&self, c: usize, value: Option<&str>, out: &mut Vec<u8>) -> Result<(), Fallback> {
        let Some(text) = value else {
            out.extend_from_slice(b"null");
            return Ok(());
        };
        match &self.columns[c].conv {
            Conv::Text(op) => op.write(out, text),
            Conv::Value(op) => op.write(out, text),
            Conv::Float32 => write_float32(out, text),
            Conv::Json(op) => op.write(out, text),
            Conv::JsonFloat32 => {
                if !plain_number(text) {
                    return Err(Fallback);
                }
                let single = text.parse::<f64>().map_err(|_| Fallback)? as f32 as f64;
                if !single.is_finite() {
                    return Err(Fallback); // beyond FLOAT's range: orjson's null, Python's
                }
                json::write_f64(out, single);
                Ok(())
            }
            Conv::JsonBits => {
                crate::canal_text::canonical_int(text)?;
                if text.starts_with('-') {
                    return Err(Fallback);
                }
                json::write_int(out, crate::values::int_in_json_range(text)?);
                Ok(())
            }
            Conv::EpochMs { date, zone } => {
                let wall = if *date { crate::values::date(text)?.and_hms_opt(0, 0, 0).ok_or(Fallback)? } else { crate::values::datetime(text)? };
                let utc = match zone {
                    None => wall,
                    Some(tz) => crate::values::zoned_to_utc(wall, tz)?,
                };
                json::write_int(out, crate::values::epoch_us(utc).div_euclid(1000));
                Ok(())
            }
            Conv::Year => {
                if text.is_empty() || text.len() > 4 || !text.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(Fallback);
                }
                let trimmed = text.trim_start_matches('0');
                json::write_str(out, if trimmed.is_empty() { "0" } else { trimmed });
                Ok(())
            }
        }
    }

    /// ``entries`` (column, value) as a JSON object of MySQL texts; repeated columns are Python's.
    pub(crate) fn image<'r>(&self, entries: impl Iterator<Item = (usize, Option<&'r str>)>, out: &mut Vec<u8>, seen: &mut Vec<bool>) -> Result<(), Fallback> {
        seen.clear();
        seen.resize(self.columns.len(), false);
        out.push(b'{');
        for (n, (c, value)) in entries.enumerate() {
            if std::mem::replace(&mut seen[c], true) {
                return Err(Fallback); // a repeated column: Python's dict semantics decide
            }
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&self.columns[c].key);
            self.value(c, value, out)?;
        }
        out.push(b'}');
        Ok(())
    }

    /// The row's columns (in row order).
    pub(crate) fn columns_of(&self, row: &Row) -> Result<Vec<usize>, Fallback> {
        let mut cols = Vec::with_capacity(row.0.len());
        for (n, (name, _)) in row.0.iter().enumerate() {
            cols.push(self.column(n, name.as_ref())?);
        }
        Ok(cols)
    }

    /// An UPDATE's before-image: the row overlaid with its ``old`` entry (``{**row, **old}``:
    /// the row's order with old's values, then old's other columns), as MySQL texts.
    pub(crate) fn before_image(&self, cols: &[usize], row: &Row, old: Option<&Row>, out: &mut Vec<u8>, seen: &mut Vec<bool>) -> Result<(), Fallback> {
        let Some(o) = old.filter(|o| !o.0.is_empty()) else {
            return self.image(cols.iter().zip(&row.0).map(|(&c, (_, v))| (c, v.as_deref())), out, seen);
        };
        let ocols = self.columns_of(o)?;
        if ocols.iter().enumerate().any(|(n, c)| ocols[..n].contains(c)) {
            return Err(Fallback);
        }
        let find = |c: usize| ocols.iter().position(|&oc| oc == c).map(|p| o.0[p].1.as_deref());
        let merged = cols.iter().zip(&row.0).map(|(&c, (_, v))| (c, find(c).unwrap_or(v.as_deref())));
        let rest = ocols.iter().zip(&o.0).filter(|(c, _)| !cols.contains(c)).map(|(&c, (_, v))| (c, v.as_deref()));
        self.image(merged.chain(rest), out, seen)
    }

    /// ``pks`` as written, ``None`` for a table without a primary key.
    pub(crate) fn pks(&self) -> Option<&[u8]> {
        (!self.key.is_empty()).then_some(self.pks.as_slice())
    }

    /// The number of columns (a row naming each in order is the whole table's).
    pub(crate) fn width(&self) -> usize {
        self.columns.len()
    }

    /// The table's ``dataColumn`` entries, in column order.
    pub(crate) fn data_columns(&self) -> impl Iterator<Item = &[u8]> {
        self.columns.iter().map(|c| c.data_column.as_slice())
    }

    /// ``{"pk": typed value, ...}`` of a row (``None``: no primary key).
    pub(crate) fn key(&self, row: &Row) -> Result<Option<Vec<u8>>, Fallback> {
        if self.key.is_empty() {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(64);
        out.push(b'{');
        for (n, (quoted, name, op)) in self.key.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(quoted);
            match row.0.iter().find(|(k, _)| k.as_ref() == name.as_str()).and_then(|(_, v)| v.as_deref()) {
                Some(text) => match op {
                    KeyOp::Value(op) => op.write(&mut out, text)?,
                    KeyOp::Decimal => {
                        crate::typed_json::plain_decimal(text)?;
                        json::write_str(&mut out, text);
                    }
                },
                None => out.extend_from_slice(b"null"),
            }
        }
        out.push(b'}');
        Ok(Some(out))
    }
}

/// How a key field's text is written (the typed primary-key value as ``orjson`` with
/// ``json_default`` writes it).
enum KeyOp {
    Value(Op),
    /// A DECIMAL: ``format(Decimal(text), "f")``, the text itself when plain
    /// (``typed_json::plain_decimal``; other texts: Python's).
    Decimal,
}

/// ``format_float(float32(float(text)))`` where ``repr`` writes plain digits Rust writes alike.
fn write_float32(out: &mut Vec<u8>, text: &str) -> Result<(), Fallback> {
    if !plain_number(text) {
        return Err(Fallback);
    }
    let v: f64 = text.parse().map_err(|_| Fallback)?;
    let single = v as f32 as f64;
    if !single.is_finite() || (single != 0.0 && !(1e-3..1e7).contains(&single.abs())) {
        return Err(Fallback); // beyond FLOAT's range, or ``repr``'s exponent notation: Python
    }
    out.push(b'"');
    if single == 0.0 {
        out.extend_from_slice(if single.is_sign_negative() { b"-0.0" } else { b"0.0" });
    } else {
        json::write_f64(out, single);
    }
    out.push(b'"');
    Ok(())
}

/// The output records of one row message of ``t`` (op index ``op``) into ``out``, one per row.
pub fn write(t: &Table, m: &Message, op: usize, variant: usize, out: &mut Vec<Output>) -> Result<(), Fallback> {
    let data = m.data.as_deref().ok_or(Fallback)?;
    let old = m.old.as_deref().unwrap_or(&[]);
    let ts = m.ts.ok_or(Fallback)?; // Python writes the event's or the record's time instead
    let mut seen = Vec::new();
    for (i, row) in data.iter().enumerate() {
        let cols = t.columns_of(row)?;
        let mut value = Vec::with_capacity(1024);
        value.extend_from_slice(b"{\"action\":");
        value.extend_from_slice(ACTIONS[op]);
        value.extend_from_slice(b",\"before\":[");
        if op == 1 {
            t.before_image(&cols, row, old.get(i), &mut value, &mut seen)?;
        }
        value.extend_from_slice(b"],\"bid\":0,\"data\":[");
        t.image(cols.iter().zip(&row.0).map(|(&c, (_, v))| (c, v.as_deref())), &mut value, &mut seen)?;
        value.extend_from_slice(b"],\"db\":");
        write_name(&mut value, m.database.as_deref());
        value.extend_from_slice(b",\"dbValType\":");
        write_map(&mut value, &cols, |c| &t.columns[c].db_val_type);
        value.extend_from_slice(b",\"isDdl\":false,\"entryType\":\"ROWDATA\",\"execTs\":");
        match m.es {
            Some(es) => json::write_int(&mut value, es),
            None => value.extend_from_slice(b"null"),
        }
        value.extend_from_slice(b",\"jdbcType\":");
        write_map(&mut value, &cols, |c| &t.columns[c].jdbc_type);
        value.extend_from_slice(b",\"pks\":");
        value.extend_from_slice(&t.pks);
        value.extend_from_slice(b",\"schema\":");
        match &t.schema {
            Some(schema) => value.extend_from_slice(schema),
            None => write_name(&mut value, m.database.as_deref()),
        }
        value.extend_from_slice(b",\"sendTs\":");
        json::write_int(&mut value, ts);
        value.extend_from_slice(b",\"sql\":\"\",\"table\":");
        write_name(&mut value, m.table.as_deref());
        value.push(b'}');
        out.push((Some(value), t.key(row)?, variant));
    }
    Ok(())
}

/// ``{entry,...}``: the row's columns' ``"name":value`` entries of a type map.
fn write_map<'t>(out: &mut Vec<u8>, cols: &[usize], entry: impl Fn(usize) -> &'t [u8]) {
    out.push(b'{');
    for (n, &c) in cols.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        out.extend_from_slice(entry(c));
    }
    out.push(b'}');
}
