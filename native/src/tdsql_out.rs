//! The TDSQL writer: what ``TdsqlBinlogJson.encode_message`` writes for the rows of a
//! Canal-shaped message (Canal's, TiCDC's, or a Debezium event read as one), one binlog
//! row event per row: ``logtype``, ``eventtype`` (the op's code of the encoder's
//! ``row_event_version``), ``eventtypestr``, ``db``, ``table`` (``""`` for none),
//! ``begintime`` (seconds of ``es``; absent without it), ``gtid``, and the positional
//! ``where`` (an UPDATE's row overlaid with ``old``; a DELETE's row) and ``field`` (the row)
//! arrays in the table's column order.
//!
//! Each value is ``sqltext.to_literal`` of the typed value: MySQL's own text (the CloudCanal
//! writer's conversions, on its tables), bare for numbers, ``b'…'`` for BIT, ``X'…'`` for
//! binary, else quoted as ``mysql_real_escape_string`` quotes it; NULL as ``"NULL"``. The key
//! is the CloudCanal writer's (the typed primary-key values).

use std::borrow::Cow;

use pyo3::prelude::*;

use crate::canal::{Message, Row};
use crate::cloudcanal_out;
use crate::json_scan::first_of;
use crate::values::Fallback;
use crate::{json, Output};

/// How a column's MySQL text becomes its SQL literal (``to_literal`` per type kind).
enum Literal {
    /// Integers, YEAR, DECIMAL, FLOAT/DOUBLE: the text itself.
    Bare,
    /// BIT: ``b'`` and the number's binary digits ``'``.
    Bits,
    /// Binary: ``X'`` and the bytes' upper-case hex ``'``.
    Hex,
    /// Everything else: the text single-quoted, escaped as ``quote_string`` escapes it.
    Quoted,
}

/// One table layout: the CloudCanal writer's table (conversions to MySQL text, the key, the
/// ops), each column's literal form and each op's event head.
pub struct Table {
    text: cloudcanal_out::Table,
    literals: Vec<Literal>,
    /// ``{"logtype":"mysqlbinlog","eventtype":N,"eventtypestr":"kind","db":`` per op (c, u, d, r).
    heads: [Vec<u8>; 4],
}

/// ``eventtypestr`` of each op (a snapshot read is an insert).
const KINDS: [&str; 4] = ["insert", "update", "delete", "insert"];

impl Table {
    /// A table's spec from Python: ``(text, literals, codes)``: ``text`` the CloudCanal
    /// writer's spec, ``literals`` per column ``bare``, ``bits``, ``hex`` or ``quoted``,
    /// ``codes`` the four ops' ``eventtype``. ``None``: a repeated column.
    pub fn from_spec(spec: &Bound<PyAny>) -> PyResult<Option<Table>> {
        let (text, literals, codes): (Bound<PyAny>, Vec<String>, [i64; 4]) = spec.extract()?;
        let Some(table) = cloudcanal_out::Table::from_spec(&text)? else { return Ok(None) };
        let literals = literals
            .iter()
            .map(|l| match l.as_str() {
                "bare" => Ok(Literal::Bare),
                "bits" => Ok(Literal::Bits),
                "hex" => Ok(Literal::Hex),
                "quoted" => Ok(Literal::Quoted),
                other => Err(pyo3::exceptions::PyValueError::new_err(format!("unknown SQL literal form {other:?}"))),
            })
            .collect::<PyResult<Vec<_>>>()?;
        if literals.len() != table.width() {
            return Err(pyo3::exceptions::PyValueError::new_err("one SQL literal form per column"));
        }
        let heads = std::array::from_fn(|op| {
            let mut head = b"{\"logtype\":\"mysqlbinlog\",\"eventtype\":".to_vec();
            json::write_int(&mut head, codes[op]);
            head.extend_from_slice(b",\"eventtypestr\":");
            json::write_str(&mut head, KINDS[op]);
            head.extend_from_slice(b",\"db\":");
            head
        });
        Ok(Some(Table { text: table, literals, heads }))
    }

    /// The CloudCanal writer's table (its ops and ``knows``).
    pub fn text(&self) -> &cloudcanal_out::Table {
        &self.text
    }

    /// A row's values in column order: every column named once (Python's arrays need every
    /// column; a repeated one is Python's dict semantics), else [`Fallback`].
    fn slots<'r>(&self, row: &'r Row, seen: &mut Vec<bool>) -> Result<Vec<Option<&'r str>>, Fallback> {
        let width = self.text.width();
        if row.0.len() != width {
            return Err(Fallback); // a column missing or repeated (or one the table lacks)
        }
        let mut slots = vec![None; width];
        seen.clear();
        seen.resize(width, false);
        for (n, (name, v)) in row.0.iter().enumerate() {
            let c = self.text.column(n, name)?;
            if std::mem::replace(&mut seen[c], true) {
                return Err(Fallback);
            }
            slots[c] = v.as_deref();
        }
        Ok(slots)
    }

    /// An UPDATE's before-image: the row's values overlaid with ``old``'s (``{**row, **old}``).
    fn overlaid<'r>(&self, row: &[Option<&'r str>], old: Option<&'r Row>, seen: &mut Vec<bool>) -> Result<Vec<Option<&'r str>>, Fallback> {
        let mut before = row.to_vec();
        let Some(o) = old else { return Ok(before) };
        seen.clear();
        seen.resize(before.len(), false);
        for (n, (name, v)) in o.0.iter().enumerate() {
            let c = self.text.column(n, name)?;
            if std::mem::replace(&mut seen[c], true) {
                return Err(Fallback); // a repeated column: Python's dict semantics decide
            }
            before[c] = v.as_deref();
        }
        Ok(before)
    }

    /// ``[literal, ...]`` of a row's values in column order: each value's MySQL text (the
    /// CloudCanal writer's conversion, a JSON string) as its literal.
    fn array(&self, values: &[Option<&str>], out: &mut Vec<u8>, literal: &mut String) -> Result<(), Fallback> {
        out.push(b'[');
        for (c, value) in values.iter().enumerate() {
            if c > 0 {
                out.push(b',');
            }
            match value {
                None => out.extend_from_slice(b"\"NULL\""),
                Some(text) => self.literal(c, text, out, literal)?,
            }
        }
        out.push(b']');
        Ok(())
    }

    /// One value's MySQL text as its SQL literal (a JSON string) into ``out``: the text is
    /// written where the literal goes, and re-written only when the literal differs.
    fn literal(&self, c: usize, text: &str, out: &mut Vec<u8>, literal: &mut String) -> Result<(), Fallback> {
        let start = out.len();
        if matches!(self.literals[c], Literal::Quoted) {
            out.push(b'"'); // the literal's own quote, before the text's (which becomes ``'``)
        }
        let at = out.len();
        self.text.value(c, Some(text), out)?;
        let quoted = &out[at..];
        if quoted.len() < 2 || quoted[0] != b'"' || quoted[quoted.len() - 1] != b'"' {
            return Err(Fallback); // not a JSON string: no MySQL text
        }
        match self.literals[c] {
            Literal::Bare => return Ok(()),
            // Nothing ``quote_string`` escapes (those it does are ``'`` or JSON-escaped): the
            // JSON string with the quotes inside.
            Literal::Quoted if first_of(quoted, 0, b'\\', b'\'').is_none() => {
                let end = out.len() - 1;
                out[at] = b'\'';
                out[end] = b'\'';
                out.push(b'"');
                return Ok(());
            }
            _ => {}
        }
        let mysql = unquote(quoted)?.into_owned();
        out.truncate(start);
        literal.clear();
        match self.literals[c] {
            Literal::Bare => unreachable!(),
            Literal::Bits => {
                let n: u128 = mysql.parse().map_err(|_| Fallback)?;
                literal.push_str(&format!("b'{n:b}'"));
            }
            Literal::Hex => {
                literal.push_str("X'");
                for ch in mysql.chars() {
                    let byte = u8::try_from(u32::from(ch)).map_err(|_| Fallback)?; // ISO-8859-1 (checked by the conversion)
                    literal.push(char::from(HEX[usize::from(byte >> 4)]));
                    literal.push(char::from(HEX[usize::from(byte & 15)]));
                }
                literal.push('\'');
            }
            Literal::Quoted => quote_string(literal, &mysql),
        }
        json::write_str(out, literal);
        Ok(())
    }
}

/// Upper-case hex digits (``bytes.hex().upper()``).
const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// The buffers [`write`] reuses from message to message (per thread).
#[derive(Default)]
struct Scratch {
    seen: Vec<bool>,
    literal: String,
}

/// The text of a JSON string as ``json::write_str`` wrote it.
fn unquote(quoted: &[u8]) -> Result<Cow<'_, str>, Fallback> {
    let inner = quoted.strip_prefix(b"\"").and_then(|q| q.strip_suffix(b"\"")).ok_or(Fallback)?;
    if !inner.contains(&b'\\') {
        return std::str::from_utf8(inner).map(Cow::Borrowed).map_err(|_| Fallback);
    }
    serde_json::from_slice::<String>(quoted).map(Cow::Owned).map_err(|_| Fallback)
}

/// ``sqltext.quote_string``: ``'text'`` escaped as ``mysql_real_escape_string`` escapes it.
fn quote_string(out: &mut String, text: &str) {
    out.push('\'');
    for ch in text.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '\0' => out.push_str("\\0"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\x1a' => out.push_str("\\Z"),
            other => out.push(other),
        }
    }
    out.push('\'');
}

/// The output records of one row message of ``t`` (op index ``op``) into ``out``, one per
/// row; ``gtid``: the event's GTID as JSON (``null`` from Canal).
pub fn write(t: &Table, m: &Message, op: usize, variant: usize, gtid: &[u8], out: &mut Vec<Output>) -> Result<(), Fallback> {
    let data = m.data.as_deref().ok_or(Fallback)?;
    let old = m.old.as_deref().unwrap_or(&[]);
    crate::scratch::with(&SCRATCH, |scratch| write_rows(t, m, data, old, op, variant, gtid, scratch, out))
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

impl crate::scratch::Scratch for Scratch {
    fn clear(&mut self) {
        self.seen.clear();
        self.literal.clear();
    }
}

#[allow(clippy::too_many_arguments)]
fn write_rows(t: &Table, m: &Message, data: &[Row], old: &[Row], op: usize, variant: usize, gtid: &[u8], scratch: &mut Scratch, out: &mut Vec<Output>) -> Result<(), Fallback> {
    let Scratch { seen, literal } = scratch;
    for (i, row) in data.iter().enumerate() {
        let values = t.slots(row, seen)?;
        // The event's fields and each array's quotes and commas (a literal is about its text).
        let texts: usize = values.iter().map(|v| v.map_or(6, |t| t.len() + 8)).sum();
        let mut value = Vec::with_capacity(t.heads[op].len() + 160 + 2 * texts);
        value.extend_from_slice(&t.heads[op]);
        json::write_str(&mut value, m.database.as_deref().unwrap_or_default());
        value.extend_from_slice(b",\"table\":");
        json::write_str(&mut value, m.table.as_deref().unwrap_or_default());
        if let Some(es) = m.es {
            value.extend_from_slice(b",\"begintime\":");
            json::write_int(&mut value, es.div_euclid(1000));
        }
        value.extend_from_slice(b",\"gtid\":");
        value.extend_from_slice(gtid);
        value.extend_from_slice(b",\"where\":");
        match op {
            1 => t.array(&t.overlaid(&values, old.get(i).filter(|o| !o.0.is_empty()), seen)?, &mut value, literal)?,
            2 => t.array(&values, &mut value, literal)?,
            _ => value.extend_from_slice(b"[]"),
        }
        value.extend_from_slice(b",\"field\":");
        if op == 2 {
            value.extend_from_slice(b"[]");
        } else {
            t.array(&values, &mut value, literal)?;
        }
        value.push(b'}');
        out.push((Some(value), t.text.key(row)?, variant));
    }
    Ok(())
}
