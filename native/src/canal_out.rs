//! The Canal flat-message writer: what ``CanalJson.encode_batch`` writes for the rows of
//! a canal-json message (same-format reproduction: the message's own fields, values and
//! type maps are kept, so values pass as the text they are).
//!
//! Per row (``batch: row``) or per message (``batch: transaction``, several rows): the
//! fields in Canal's (fastjson's sorted) order, each present when the input has it
//! (``data`` always), the input's fields this format does not model appended in input
//! order. What the Python encoder computes instead of copying (a ``sqlType`` map for a
//! message without one, ``ts`` for a message without one, ``old`` of a DELETE) is left
//! to Python.
//!
//! From another dialect (TiCDC's: ``retext``) nothing is reproduced: each value is
//! re-written as Canal text (``canal_text``), the type maps are the schema's (``sqlType``
//! per value, as Canal assigns codes), ``old`` holds the columns whose text changed, and
//! the fields Canal has but the model lacks are Canal's defaults.

use std::cell::RefCell;
use std::collections::HashMap;

use pyo3::prelude::*;

use crate::canal::{Message, Row, FIELD_DATABASE, FIELD_ES, FIELD_OLD, FIELD_PK_NAMES, FIELD_TABLE};
use crate::canal_text::TextOp;
use crate::values::Fallback;
use crate::{canon, json, scratch, Output};

/// A column's ``sqlType`` code as Canal assigns it from the value.
pub(crate) enum SqlCode {
    /// By NULL-ness: (NULL, any other value).
    ByNull(i64, i64),
    /// Unsigned integers: the signed range's code, the wider one above ``max``.
    Unsigned { signed: i64, wide: i64, max: u64 },
}

impl SqlCode {
    /// The code of a written value (``span`` into ``buf``; ``None``: null); an unsigned
    /// integer's value is a canonical integer (``TextOp::Int``), quoted.
    pub(crate) fn of(&self, buf: &[u8], span: Option<(usize, usize)>) -> Result<i64, Fallback> {
        Ok(match (self, span) {
            (SqlCode::ByNull(null, _), None) => *null,
            (SqlCode::ByNull(_, code), Some(_)) => *code,
            (SqlCode::Unsigned { signed, .. }, None) => *signed,
            (SqlCode::Unsigned { signed, wide, max }, Some((a, b))) => {
                let digits = std::str::from_utf8(&buf[a + 1..b - 1]).map_err(|_| Fallback)?;
                match digits.parse::<u128>() {
                    Ok(v) if v > *max as u128 => *wide,
                    Ok(_) => *signed,
                    Err(_) if digits.starts_with('-') => *signed,
                    Err(_) => return Err(Fallback),
                }
            }
        })
    }
}

/// One column written from another dialect's text.
struct Retext {
    /// ``"name":"type"`` (the ``mysqlType`` entry).
    mysql_type: Vec<u8>,
    /// The length of its ``"name"`` part.
    name_len: usize,
    op: TextOp,
    sql: SqlCode,
    /// The ``sqlType`` entries ``"name":code`` by NULL-ness (null, any other value), written
    /// once per table; ``None``: the code depends on the value (``SqlCode::Unsigned``).
    sql_entries: Option<[Vec<u8>; 2]>,
    /// ENUM labels (another dialect's text: CloudCanal's) to Canal's index text, instead of ``op``.
    labels: Option<HashMap<String, String>>,
}

impl Retext {
    /// ``"name":``: the start of the column's entries.
    fn name_entry(&self) -> &[u8] {
        &self.mysql_type[..=self.name_len]
    }
}

/// What becomes of one op's rows (c, u, d, r).
pub enum Entry {
    /// A transform drops them.
    Dropped,
    /// Python processes them.
    Python,
    /// Written, with this variant (the Python side's topic and header edits).
    Write(usize),
}

/// Four op entries (c, u, d, r) from Python's ``(what, variant)``: ``what`` 0 (dropped),
/// 1 (Python) or 2 (written with ``variant``).
pub(crate) fn entries(ops: Vec<(u8, Option<usize>)>) -> PyResult<[Entry; 4]> {
    if ops.len() != 4 {
        return Err(pyo3::exceptions::PyValueError::new_err("expected four op entries (c, u, d, r)"));
    }
    let mut entries = [Entry::Python, Entry::Python, Entry::Python, Entry::Python];
    for (slot, (what, variant)) in entries.iter_mut().zip(ops) {
        *slot = match (what, variant) {
            (0, _) => Entry::Dropped,
            (2, Some(v)) => Entry::Write(v),
            _ => Entry::Python,
        };
    }
    Ok(entries)
}

/// Column names with their JSON-quoted forms (written as they are, per row).
pub(crate) fn quoted_names(names: Vec<String>) -> Vec<(Vec<u8>, String)> {
    names
        .into_iter()
        .map(|n| {
            let mut b = Vec::new();
            json::write_str(&mut b, &n);
            (b, n)
        })
        .collect()
}

/// One table layout (Canal's ``mysqlType``, ``sqlType``, ``pkNames``, database, table).
pub struct Table {
    index: HashMap<String, usize>,
    /// Column names in layout order: a row's n-th entry is tried here before ``index``.
    names: Vec<String>,
    /// Key fields: (name as a JSON string, name).
    pk: Vec<(Vec<u8>, String)>,
    /// ``mysqlType`` and ``sqlType`` as the Python path re-writes them.
    pub(crate) mysql_type: Vec<u8>,
    pub(crate) sql_type: Vec<u8>,
    /// Per column: how a value of another dialect becomes Canal text (``None``: the same dialect).
    retext: Option<Vec<Retext>>,
    pub ops: [Entry; 4],
    /// The chain's row-changing transforms (``canal_shape``; ``None``: rows copied).
    shape: Option<Box<crate::canal_shape::Shape>>,
}

/// ``type`` of each op (c, u, d, r).
const TYPES: [&[u8]; 4] = [b"\"INSERT\"", b"\"UPDATE\"", b"\"DELETE\"", b"\"INIT\""];

impl Table {
    /// A table's spec from Python: ``(columns, pk, ops)`` where ``ops`` has four entries
    /// ``(what, variant)``: 0 dropped, 1 Python, 2 written with ``variant``. ``None``:
    /// the type maps are not ones this module copies.
    /// With ``retext`` (another dialect), a fourth item lists per column
    /// ``(type, op, arg, null_code, code, wide_code, unsigned_max)``, an optional fifth
    /// per column ENUM ``labels`` (or ``None``); an optional seventh the rows' shape
    /// (``canal_shape::Shape::from_spec``).
    pub fn from_spec(spec: &Bound<PyAny>, mysql_type: Option<&str>, sql_type: Option<&str>, retext: bool) -> PyResult<Option<Table>> {
        let spec = spec.downcast::<pyo3::types::PyTuple>()?;
        #[allow(clippy::type_complexity)]
        let (columns, pk, ops, texts): (
            Vec<String>,
            Vec<String>,
            Vec<(u8, Option<usize>)>,
            Option<Vec<(String, String, Option<usize>, i64, i64, i64, Option<u64>)>>,
        ) = spec.get_slice(0, 4).extract()?;
        // An optional fifth item: per column, ``labels`` (see ``Retext``) or ``None``.
        let labels: Vec<Option<HashMap<String, String>>> = match spec.get_item(4) {
            Ok(item) => item.extract()?,
            Err(_) => Vec::new(),
        };
        let (mysql_type, sql_type) = if retext {
            (Vec::new(), Vec::new())
        } else {
            let (Some(m), Some(s)) = (mysql_type.and_then(canon::of), sql_type.and_then(canon::of)) else {
                return Ok(None);
            };
            (m, s)
        };
        let retext = match (retext, texts) {
            (false, _) => None,
            (true, None) => return Ok(None),
            (true, Some(texts)) => {
                if texts.len() != columns.len() {
                    return Err(pyo3::exceptions::PyValueError::new_err("one text conversion per column"));
                }
                let mut out = Vec::with_capacity(texts.len());
                for (i, (name, (type_text, op, arg, null_code, code, wide, max))) in columns.iter().zip(texts).enumerate() {
                    let Some(op) = TextOp::from_name(&op, arg) else {
                        return Err(pyo3::exceptions::PyValueError::new_err(format!("unknown text conversion {op:?}")));
                    };
                    let mut entry = Vec::new();
                    json::write_str(&mut entry, name);
                    let name_len = entry.len();
                    entry.push(b':');
                    json::write_str(&mut entry, &type_text);
                    let sql = match max {
                        Some(max) => SqlCode::Unsigned { signed: code, wide, max },
                        None => SqlCode::ByNull(null_code, code),
                    };
                    let sql_entries = match sql {
                        SqlCode::ByNull(null, code) => Some([null, code].map(|code| {
                            let mut e = entry[..=name_len].to_vec();
                            json::write_int(&mut e, code);
                            e
                        })),
                        SqlCode::Unsigned { .. } => None,
                    };
                    out.push(Retext { mysql_type: entry, name_len, op, sql, sql_entries, labels: labels.get(i).cloned().flatten() });
                }
                Some(out)
            }
        };
        let mut index = HashMap::with_capacity(columns.len());
        for (i, name) in columns.iter().enumerate() {
            if index.insert(name.clone(), i).is_some() {
                return Ok(None);
            }
        }
        let entries = entries(ops)?;
        let pk = quoted_names(pk);
        let shape = match spec.get_item(6) {
            Ok(item) if !item.is_none() => Some(Box::new(crate::canal_shape::Shape::from_spec(&item)?)),
            _ => None,
        };
        Ok(Some(Table { index, names: columns, pk, mysql_type, sql_type, retext, ops: entries, shape }))
    }

    /// The column of a row's ``n``-th entry ``name``: its expected position first (rows
    /// usually keep the layout's order), the name lookup otherwise.
    #[inline]
    pub(crate) fn column(&self, n: usize, name: &str) -> Option<usize> {
        match self.names.get(n) {
            // (The catalog readers' rows borrow the table's own names: the same slice, no compare.)
            Some(expected) if std::ptr::eq(expected.as_str(), name) || expected == name => Some(n),
            _ => self.index.get(name).copied(),
        }
    }

    /// Does every row name only this table's columns (what Python reads without error)?
    pub fn knows(&self, data: &[Row]) -> bool {
        data.iter().all(|row| row.0.iter().all(|(k, _)| self.index.contains_key(k.as_ref())))
    }

    /// One row as the JSON object Python writes (every column once, in row order).
    fn write_row(&self, out: &mut Vec<u8>, row: &Row, seen: &mut Vec<bool>) -> Result<(), Fallback> {
        seen.clear();
        seen.resize(self.index.len(), false);
        out.push(b'{');
        for (n, (name, value)) in row.0.iter().enumerate() {
            let c = self.column(n, name.as_ref()).ok_or(Fallback)?;
            if std::mem::replace(&mut seen[c], true) {
                return Err(Fallback); // a repeated column: Python's dict semantics decide
            }
            if n > 0 {
                out.push(b',');
            }
            json::write_str(out, name);
            out.push(b':');
            write_opt_str(out, value.as_deref());
        }
        out.push(b'}');
        if row.0.len() != self.index.len() {
            return Err(Fallback); // a row without some column: Python computes the type maps
        }
        Ok(())
    }

    /// ``{"pk": value, ...}`` of a row (``None``: no key).
    fn key(&self, row: &Row) -> Option<Vec<u8>> {
        text_key(&self.pk, row)
    }
}

/// ``{"pk": "text", ...}``: a row's key from its primary key's raw texts (``pk`` as
/// [`quoted_names`]; ``None``: no primary key).
pub(crate) fn text_key(pk: &[(Vec<u8>, String)], row: &Row) -> Option<Vec<u8>> {
    if pk.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(64);
    out.push(b'{');
    for (n, (name, plain)) in pk.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        out.extend_from_slice(name);
        out.push(b':');
        let value = row.0.iter().find(|(k, _)| k.as_ref() == plain.as_str()).and_then(|(_, v)| v.as_deref());
        write_opt_str(&mut out, value);
    }
    out.push(b'}');
    Some(out)
}

fn write_opt_str(out: &mut Vec<u8>, value: Option<&str>) {
    match value {
        Some(text) => json::write_str(out, text),
        None => out.extend_from_slice(b"null"),
    }
}

/// An ``old`` row as written (changed columns; a repeated one goes to Python).
fn write_old(out: &mut Vec<u8>, row: &Row) -> Result<(), Fallback> {
    out.push(b'{');
    for (n, (name, value)) in row.0.iter().enumerate() {
        if row.0[..n].iter().any(|(k, _)| k == name) {
            return Err(Fallback);
        }
        if n > 0 {
            out.push(b',');
        }
        json::write_str(out, name);
        out.push(b':');
        write_opt_str(out, value.as_deref());
    }
    out.push(b'}');
    Ok(())
}

/// What a writer writes instead of the message's own fields (``None``: the message's).
pub(crate) struct Fields<'a> {
    pub database: Option<&'a [u8]>,
    pub table: Option<&'a [u8]>,
    pub pk_names: Option<&'a [u8]>,
    pub mysql_type: &'a [u8],
    pub sql_type: &'a [u8],
}

/// The fields after ``data`` up to ``mysqlType``, and those after ``old`` (the same for
/// every row of a message).
pub(crate) fn message_fields(f: &Fields, m: &Message, op: usize) -> Result<(Vec<u8>, Vec<u8>), Fallback> {
    let seen = m.seen;
    let Some(ts) = m.ts else { return Err(Fallback) }; // Python writes the current time
    let mut head = Vec::with_capacity(f.mysql_type.len() + 96);
    if seen & FIELD_DATABASE != 0 {
        head.extend_from_slice(b",\"database\":");
        match f.database {
            Some(written) => head.extend_from_slice(written),
            None => write_opt_str(&mut head, m.database.as_deref()),
        }
    }
    if seen & FIELD_ES != 0 {
        head.extend_from_slice(b",\"es\":");
        match m.es {
            Some(es) => json::write_int(&mut head, es),
            None => head.extend_from_slice(b"null"),
        }
    }
    if let Some(id) = m.id {
        head.extend_from_slice(b",\"id\":");
        canon::write(&mut head, id.get()).map_err(|_| Fallback)?;
    }
    if let Some(is_ddl) = m.is_ddl {
        head.extend_from_slice(b",\"isDdl\":");
        canon::write(&mut head, is_ddl.get()).map_err(|_| Fallback)?;
    }
    head.extend_from_slice(b",\"mysqlType\":");
    head.extend_from_slice(f.mysql_type);

    let mut tail = Vec::with_capacity(f.sql_type.len() + 96);
    if seen & FIELD_PK_NAMES != 0 {
        tail.extend_from_slice(b",\"pkNames\":");
        match (f.pk_names, &m.pk_names) {
            (Some(written), _) => tail.extend_from_slice(written),
            (None, None) => tail.extend_from_slice(b"null"),
            (None, Some(names)) => {
                tail.push(b'[');
                for (n, name) in names.iter().enumerate() {
                    if n > 0 {
                        tail.push(b',');
                    }
                    json::write_str(&mut tail, name);
                }
                tail.push(b']');
            }
        }
    }
    if let Some(sql) = m.sql {
        tail.extend_from_slice(b",\"sql\":");
        canon::write(&mut tail, sql.get()).map_err(|_| Fallback)?;
    }
    tail.extend_from_slice(b",\"sqlType\":");
    tail.extend_from_slice(f.sql_type);
    if seen & FIELD_TABLE != 0 {
        tail.extend_from_slice(b",\"table\":");
        match f.table {
            Some(written) => tail.extend_from_slice(written),
            None => write_opt_str(&mut tail, m.table.as_deref()),
        }
    }
    tail.extend_from_slice(b",\"ts\":");
    json::write_int(&mut tail, ts);
    tail.extend_from_slice(b",\"type\":");
    tail.extend_from_slice(TYPES[op]);
    write_extra(&mut tail, m)?;
    tail.push(b'}');
    Ok((head, tail))
}

/// ``old`` of a message whose rows have no changed columns: as the input has it (``[]``
/// stays ``[]``, rows become ``null``, absent stays absent).
pub(crate) fn fixed_old(m: &Message) -> &'static [u8] {
    if m.seen & FIELD_OLD == 0 {
        b""
    } else if m.old.as_ref().is_some_and(|o| o.is_empty()) {
        b",\"old\":[]"
    } else {
        b",\"old\":null"
    }
}

/// ``,"field":value`` of each field the message has that the model lacks, in message
/// order, as orjson's round trip writes it (a repeated one: Python keeps the last value).
pub(crate) fn write_extra(out: &mut Vec<u8>, m: &Message) -> Result<(), Fallback> {
    for (n, (name, raw)) in m.extra.iter().enumerate() {
        if m.extra[..n].iter().any(|(k, _)| k == name) {
            return Err(Fallback);
        }
        out.push(b',');
        json::write_str(out, name);
        out.push(b':');
        canon::write(out, raw.get()).map_err(|_| Fallback)?;
    }
    Ok(())
}

/// The output records of one row message of ``t`` (op index ``op``) into ``out``:
/// one per row, or one for the message when ``transaction`` and it has several rows.
pub fn write(t: &Table, m: &Message, op: usize, variant: usize, transaction: bool, out: &mut Vec<Output>) -> Result<(), Fallback> {
    if let Some(columns) = &t.retext {
        return write_retext(t, columns, m, op, variant, out);
    }
    if let Some(shape) = &t.shape {
        return crate::canal_shape::write(t, shape, m, op, variant, transaction, out);
    }
    let data = m.data.as_deref().ok_or(Fallback)?;
    let old = m.old.as_deref().unwrap_or(&[]);
    // ``old`` per row (UPDATE with changed columns), else the input's own (null for a
    // non-empty list on other ops; absent stays absent).
    let per_row_old = op == 1 && !old.is_empty();
    if op == 2 && !old.is_empty() {
        return Err(Fallback); // TiCDC before v5.4 repeated DELETE rows in old: Python
    }
    let fixed_old = fixed_old(m);
    let fields = Fields { database: None, table: None, pk_names: None, mysql_type: &t.mysql_type, sql_type: &t.sql_type };
    let (head, tail) = message_fields(&fields, m, op)?;
    let mut seen = Vec::new();
    if transaction && data.len() > 1 {
        let mut value = Vec::with_capacity(head.len() + tail.len() + 256 * data.len());
        value.extend_from_slice(b"{\"data\":[");
        let mut key: Option<Option<Vec<u8>>> = None;
        for (i, row) in data.iter().enumerate() {
            if i > 0 {
                value.push(b',');
            }
            t.write_row(&mut value, row, &mut seen)?;
            let k = t.key(row);
            key = Some(match key {
                None => k,
                Some(prev) if prev == k => prev,
                Some(_) => None, // rows of different keys: the message has none
            });
        }
        value.push(b']');
        value.extend_from_slice(&head);
        if per_row_old {
            value.extend_from_slice(b",\"old\":[");
            for (i, row) in old.iter().enumerate() {
                if i > 0 {
                    value.push(b',');
                }
                write_old(&mut value, row)?;
            }
            value.push(b']');
        } else {
            value.extend_from_slice(fixed_old);
        }
        value.extend_from_slice(&tail);
        out.push((Some(value), key.flatten(), variant));
        return Ok(());
    }
    for (i, row) in data.iter().enumerate() {
        let mut value = Vec::with_capacity(head.len() + tail.len() + 256);
        value.extend_from_slice(b"{\"data\":[");
        t.write_row(&mut value, row, &mut seen)?;
        value.push(b']');
        value.extend_from_slice(&head);
        if per_row_old {
            value.extend_from_slice(b",\"old\":[");
            write_old(&mut value, old.get(i).ok_or(Fallback)?)?;
            value.push(b']');
        } else {
            value.extend_from_slice(fixed_old);
        }
        value.extend_from_slice(&tail);
        out.push((Some(value), t.key(row), variant));
    }
    Ok(())
}

/// Per row entry: its column and the span of its converted value (``None``: null).
type Spans = Vec<(usize, Option<(usize, usize)>)>;

/// What [`write_retext`] reuses from message to message: the row's and the before-image
/// overlay's converted values and their spans, the columns seen, the changed columns.
#[derive(Default)]
struct RetextScratch {
    buf: Vec<u8>,
    after: Spans,
    obuf: Vec<u8>,
    overlay: Spans,
    seen: Vec<bool>,
    changed: Spans,
}

impl scratch::Scratch for RetextScratch {
    fn clear(&mut self) {
        self.buf.clear();
        self.after.clear();
        self.obuf.clear();
        self.overlay.clear();
        self.changed.clear();
    }
}

thread_local! {
    static RETEXT: RefCell<RetextScratch> = RefCell::default();
}

/// A row's values as Canal text into ``buf``, per row entry its column and the span of its
/// JSON value (``None``: null) into ``spans``.
fn retext_row(t: &Table, columns: &[Retext], row: &Row, buf: &mut Vec<u8>, spans: &mut Spans, seen: &mut Vec<bool>) -> Result<(), Fallback> {
    seen.clear();
    seen.resize(columns.len(), false);
    for (n, (name, value)) in row.0.iter().enumerate() {
        let c = t.column(n, name.as_ref()).ok_or(Fallback)?;
        if std::mem::replace(&mut seen[c], true) {
            return Err(Fallback);
        }
        let span = match value {
            None => None,
            Some(text) => {
                let start = buf.len();
                match &columns[c].labels {
                    Some(labels) => json::write_str(buf, labels.get(text.as_ref()).ok_or(Fallback)?),
                    None => columns[c].op.write(buf, text)?,
                }
                Some((start, buf.len()))
            }
        };
        spans.push((c, span));
    }
    Ok(())
}

/// A converted value's JSON text (``null`` for ``None``).
fn span_text(buf: &[u8], span: Option<(usize, usize)>) -> &[u8] {
    match span {
        Some((a, b)) => &buf[a..b],
        None => b"null",
    }
}

/// One message of another dialect (one row: TiCDC's) as official Canal writes it.
fn write_retext(t: &Table, columns: &[Retext], m: &Message, op: usize, variant: usize, out: &mut Vec<Output>) -> Result<(), Fallback> {
    scratch::with(&RETEXT, |s| write_retext_with(t, columns, m, op, variant, s, out))
}

fn write_retext_with(t: &Table, columns: &[Retext], m: &Message, op: usize, variant: usize, s: &mut RetextScratch, out: &mut Vec<Output>) -> Result<(), Fallback> {
    let data = m.data.as_deref().ok_or(Fallback)?;
    let [row] = data else { return Err(Fallback) };
    let Some(ts) = m.ts else { return Err(Fallback) }; // Python writes the current time
    if row.0.is_empty() {
        return Err(Fallback);
    }
    retext_row(t, columns, row, &mut s.buf, &mut s.after, &mut s.seen)?;
    let (buf, after) = (&s.buf, &s.after);
    let mut value = Vec::with_capacity(1024);
    value.extend_from_slice(b"{\"data\":[{");
    for (n, (c, span)) in after.iter().enumerate() {
        if n > 0 {
            value.push(b',');
        }
        value.extend_from_slice(columns[*c].name_entry()); // the row's name is the column's
        value.extend_from_slice(span_text(buf, *span));
    }
    value.extend_from_slice(b"}],\"database\":");
    json::write_str(&mut value, m.database.as_deref().unwrap_or(""));
    value.extend_from_slice(b",\"es\":");
    json::write_int(&mut value, m.es.unwrap_or(0));
    value.extend_from_slice(b",\"id\":0,\"isDdl\":false,\"mysqlType\":{");
    for (n, (c, _)) in after.iter().enumerate() {
        if n > 0 {
            value.push(b',');
        }
        value.extend_from_slice(&columns[*c].mysql_type);
    }
    value.extend_from_slice(b"},\"old\":");
    // UPDATE: the before-image (``data`` overlaid with ``old``) in Canal text; ``old``
    // holds the columns whose text differs from the after-image's: the overlaid columns
    // of the row whose text changed (in row order), then the overlay's other columns.
    let old = m.old.as_deref().unwrap_or(&[]);
    if op == 1 && !old.is_empty() {
        let o = old.first().ok_or(Fallback)?;
        retext_row(t, columns, o, &mut s.obuf, &mut s.overlay, &mut s.seen)?;
        for &(c, now) in after.iter() {
            if let Some(&(_, was)) = s.overlay.iter().find(|(oc, _)| *oc == c) {
                if span_text(&s.obuf, was) != span_text(buf, now) {
                    s.changed.push((c, was));
                }
            }
        }
        for &(c, was) in s.overlay.iter() {
            if !after.iter().any(|(ac, _)| *ac == c) {
                s.changed.push((c, was));
            }
        }
    }
    if s.changed.is_empty() {
        value.extend_from_slice(b"null");
    } else {
        value.extend_from_slice(b"[{");
        for (n, &(c, was)) in s.changed.iter().enumerate() {
            if n > 0 {
                value.push(b',');
            }
            value.extend_from_slice(columns[c].name_entry());
            value.extend_from_slice(span_text(&s.obuf, was));
        }
        value.extend_from_slice(b"}]");
    }
    value.extend_from_slice(b",\"pkNames\":");
    match &m.pk_names {
        Some(names) if !names.is_empty() => {
            value.push(b'[');
            for (n, name) in names.iter().enumerate() {
                if n > 0 {
                    value.push(b',');
                }
                json::write_str(&mut value, name);
            }
            value.push(b']');
        }
        _ => value.extend_from_slice(b"null"),
    }
    value.extend_from_slice(b",\"sql\":\"\",\"sqlType\":{");
    for (n, (c, span)) in after.iter().enumerate() {
        if n > 0 {
            value.push(b',');
        }
        let column = &columns[*c];
        match &column.sql_entries {
            Some(entries) => value.extend_from_slice(&entries[usize::from(span.is_some())]),
            None => {
                value.extend_from_slice(column.name_entry());
                json::write_int(&mut value, column.sql.of(buf, *span)?);
            }
        }
    }
    value.extend_from_slice(b"},\"table\":");
    json::write_str(&mut value, m.table.as_deref().unwrap_or(""));
    value.extend_from_slice(b",\"ts\":");
    json::write_int(&mut value, ts);
    value.extend_from_slice(b",\"type\":");
    value.extend_from_slice(TYPES[op]);
    value.push(b'}');
    out.push((Some(value), t.key(row), variant));
    Ok(())
}
