//! The Canal writer with row-changing transforms (``replace_field``, ``mask_field``,
//! ``insert_field``, ``value_to_key``, ``merge_shards``): what ``CanalJson.encode`` writes
//! for a transformed canal-json event, as compiled per table by ``transforms/native_rowxf.py``.
//!
//! Each row is written on its own (a ``batch: transaction`` message of several rows is
//! Python's): the columns under their output names (dropped ones checked when a transform
//! typed them), the values as the message's texts, or, once a transform typed the row, each
//! re-written as Canal text (``canal_text``) or masked (null, salted SHA-256, a constant), the added
//! columns last; the type maps copied when the row still names exactly the message's
//! columns, else per written column (``sqlType`` by the value, as Canal assigns codes);
//! ``old`` as the Python encoder reproduces it (the message's changed columns still written,
//! then those whose written text differs); ``pkNames``, ``database`` and ``table`` where a
//! transform changed them; the key with the typed values (integers as numbers).

use std::cell::RefCell;
use std::collections::HashMap;

use pyo3::prelude::*;

use crate::canal::{Message, Row, FIELD_DATABASE, FIELD_PK_NAMES, FIELD_TABLE};
use crate::canal_out::{fixed_old, message_fields, Fields, SqlCode, Table};
use crate::canal_text::TextOp;
use crate::values::Fallback;
use crate::{json, scratch, write_sha256, Output};

/// What a transform does to a column's non-null values.
enum Mask {
    None,
    Null,
    /// The hex SHA-256 of the salt and the text.
    Hash(Vec<u8>),
    /// ``replace`` and ``empty``: the constant as written (a JSON string of Canal text).
    Const(Vec<u8>),
}

struct Column {
    /// ``"name"``: the output name as a JSON string (``None``: not written).
    out: Option<Vec<u8>>,
    /// The typed value re-written as Canal text (when the row is typed).
    op: TextOp,
    /// A transform types the row while the column is present: its value must read.
    validate: bool,
    mask: Mask,
    sql: SqlCode,
    /// ``"name":"type"`` (computed type maps).
    mysql_type: Vec<u8>,
    /// ENUM and SET texts as re-written once typed (JSON strings), instead of ``op``.
    labels: Option<HashMap<String, Vec<u8>>>,
}

impl Column {
    /// ``text`` typed and re-written as Canal text (a JSON string) into ``out``.
    fn typed(&self, out: &mut Vec<u8>, text: &str) -> Result<(), Fallback> {
        match &self.labels {
            Some(labels) => out.extend_from_slice(labels.get(text).ok_or(Fallback)?),
            None => self.op.write(out, text)?,
        }
        Ok(())
    }
}

/// A column ``insert_field`` adds: a constant of the op (its index), or per row.
enum Added {
    Const(usize),
    Es,
    Ts,
    Row,
}

/// One op's constants: the added constant columns' texts (JSON), each added column's ``sqlType``.
type OpConsts = (Vec<Vec<u8>>, Vec<i64>);

/// A table's rows as the transforms leave them.
/// How a key field's value is written in the key.
#[derive(Clone, Copy, PartialEq)]
enum KeyKind {
    /// The written value (its JSON) as it is.
    Written,
    /// A typed integer: the written text's digits as a number.
    Int,
    /// A typed DECIMAL: ``format(Decimal(text), "f")`` of the message's text, which is the
    /// text itself when plain (``typed_json::plain_decimal``; other texts: Python's). The
    /// written text may be padded to the column's scale, so the message's is used.
    Decimal,
}

pub struct Shape {
    typed: bool,
    columns: Vec<Column>,
    /// ``"name"``, what it holds, ``"name":"type"``.
    added: Vec<(Vec<u8>, Added, Vec<u8>)>,
    /// Key fields: ``"name"``, the column, how its value is written.
    key: Vec<(Vec<u8>, usize, KeyKind)>,
    /// The type maps are computed (the row does not name exactly the message's columns).
    computed: bool,
    per_op: [Option<OpConsts>; 4],
    pk_names: Option<Vec<u8>>,
    database: Option<Vec<u8>>,
    table: Option<Vec<u8>>,
    /// Output name -> column.
    out_index: HashMap<String, usize>,
}

#[allow(clippy::type_complexity)]
type ColumnSpec = (Option<String>, String, Option<usize>, bool, String, Vec<u8>, (i64, i64, i64, Option<u64>), Option<HashMap<String, String>>);

impl Shape {
    /// The shape from Python (``native_rowxf._ShapedCanalTables._compile``): ``(typed,
    /// columns, added, key, explicit, maps, per_op, pk_names, database, table)``.
    pub fn from_spec(spec: &Bound<PyAny>) -> PyResult<Shape> {
        #[allow(clippy::type_complexity)]
        let (typed, columns, added, key, _explicit, maps, per_op, pk_names, database, table): (
            bool,
            Vec<ColumnSpec>,
            Vec<(String, String)>,
            Vec<(String, usize, String)>,
            bool,
            Option<Vec<Vec<u8>>>,
            Vec<Option<OpConsts>>,
            Option<Vec<u8>>,
            Option<Vec<u8>>,
            Option<Vec<u8>>,
        ) = spec.extract()?;
        let bad = |what: &str| pyo3::exceptions::PyValueError::new_err(what.to_owned());
        let mut entries = maps.clone().unwrap_or_default().into_iter().map(|e| e[1..e.len() - 1].to_vec());
        let mut cols = Vec::with_capacity(columns.len());
        let mut out_index = HashMap::new();
        for (i, (out, op, arg, validate, mask, salt, (null, code, wide, max), labels)) in columns.into_iter().enumerate() {
            let labels = labels.map(|l| {
                l.into_iter()
                    .map(|(k, v)| {
                        let mut b = Vec::new();
                        json::write_str(&mut b, &v);
                        (k, b)
                    })
                    .collect()
            });
            let op = TextOp::from_name(&op, arg).ok_or_else(|| bad("unknown text conversion"))?;
            let mask = match mask.as_str() {
                "" => Mask::None,
                "null" => Mask::Null,
                "hash" => Mask::Hash(salt),
                "const" => Mask::Const(salt),
                _ => return Err(bad("unknown mask")),
            };
            let sql = match max {
                Some(max) => SqlCode::Unsigned { signed: code, wide, max },
                None => SqlCode::ByNull(null, code),
            };
            let mysql_type = if out.is_some() && maps.is_some() { entries.next().ok_or_else(|| bad("one type per column"))? } else { Vec::new() };
            let out = out.map(|n| {
                out_index.insert(n.clone(), i);
                let mut b = Vec::new();
                json::write_str(&mut b, &n);
                b
            });
            cols.push(Column { out, op, validate, mask, sql, mysql_type, labels });
        }
        let mut consts = 0;
        let mut added_cols = Vec::with_capacity(added.len());
        for (name, kind) in added {
            let kind = match kind.as_str() {
                "es" => Added::Es,
                "ts" => Added::Ts,
                "row" => Added::Row,
                _ => {
                    consts += 1;
                    Added::Const(consts - 1)
                }
            };
            let mut b = Vec::new();
            json::write_str(&mut b, &name);
            added_cols.push((b, kind, if maps.is_some() { entries.next().ok_or_else(|| bad("one type per column"))? } else { Vec::new() }));
        }
        if per_op.len() != 4 {
            return Err(bad("four op entries"));
        }
        let mut ops: [Option<OpConsts>; 4] = Default::default();
        for (slot, entry) in ops.iter_mut().zip(per_op) {
            if let Some((texts, codes)) = &entry {
                if texts.len() != consts || (maps.is_some() && codes.len() != added_cols.len()) {
                    return Err(bad("one constant per added column"));
                }
            }
            *slot = entry;
        }
        let mut key_cols = Vec::with_capacity(key.len());
        for (name, c, kind) in key {
            if c >= cols.len() {
                return Err(bad("key column out of range"));
            }
            let mut b = Vec::new();
            json::write_str(&mut b, &name);
            let kind = match kind.as_str() {
                "int" => KeyKind::Int,
                "decimal" => KeyKind::Decimal,
                "text" => KeyKind::Written,
                _ => return Err(bad("unknown key kind")),
            };
            key_cols.push((b, c, kind));
        }
        Ok(Shape { typed, columns: cols, added: added_cols, key: key_cols, computed: maps.is_some(), per_op: ops, pk_names, database, table, out_index })
    }

    /// One value as written (``None``: null) into ``buf``, its span; checks the text reads
    /// where a transform typed it.
    fn value(&self, c: usize, value: Option<&str>, buf: &mut Vec<u8>, check: &mut Vec<u8>) -> Result<Option<(usize, usize)>, Fallback> {
        let col = &self.columns[c];
        let Some(text) = value else { return Ok(None) };
        if col.validate && (col.out.is_none() || !matches!(col.mask, Mask::None)) {
            check.clear();
            col.typed(check, text)?;
        }
        if col.out.is_none() {
            return Ok(None);
        }
        let start = buf.len();
        match &col.mask {
            Mask::Null => return Ok(None),
            Mask::Hash(salt) => write_sha256(buf, salt, text),
            Mask::Const(written) => buf.extend_from_slice(written),
            Mask::None if self.typed => col.typed(buf, text)?,
            Mask::None => {
                if let SqlCode::Unsigned { .. } = col.sql {
                    crate::canal_text::canonical_int(text)?; // Canal reads the code from the integer
                }
                json::write_str(buf, text);
            }
        }
        Ok(Some((start, buf.len())))
    }
}

/// Per column of a row: its position in the row and its written value's span (``None``: null).
#[derive(Default)]
struct ShapeScratch {
    buf: Vec<u8>,
    check: Vec<u8>,
    /// The row's columns in row order, with their spans.
    after: Vec<(usize, Option<(usize, usize)>)>,
    seen: Vec<bool>,
    /// ``old``'s columns (in its order) and spans of their before-values.
    before: Vec<(usize, Option<(usize, usize)>)>,
    changed: Vec<(usize, Option<(usize, usize)>)>,
}

impl scratch::Scratch for ShapeScratch {
    fn clear(&mut self) {
        self.buf.clear();
        self.after.clear();
        self.before.clear();
        self.changed.clear();
    }
}

thread_local! {
    static SHAPE: RefCell<ShapeScratch> = RefCell::default();
}

/// The output records of one row message of ``t`` (op index ``op``) shaped by ``s``.
pub fn write(t: &Table, s: &Shape, m: &Message, op: usize, variant: usize, transaction: bool, out: &mut Vec<Output>) -> Result<(), Fallback> {
    let data = m.data.as_deref().ok_or(Fallback)?;
    let needed = FIELD_DATABASE | FIELD_TABLE | FIELD_PK_NAMES;
    if (transaction && data.len() > 1) || m.seen & needed != needed {
        return Err(Fallback);
    }
    let old = m.old.as_deref().unwrap_or(&[]);
    if op != 1 && !old.is_empty() {
        return Err(Fallback);
    }
    let consts = s.per_op[op].as_ref().ok_or(Fallback)?;
    for (i, row) in data.iter().enumerate() {
        let record = scratch::with(&SHAPE, |sc| write_row(t, s, m, op, i, row, old.get(i), consts, sc))?;
        out.push((Some(record.0), record.1, variant));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn write_row(t: &Table, s: &Shape, m: &Message, op: usize, i: usize, row: &Row, old: Option<&Row>, consts: &OpConsts, sc: &mut ShapeScratch) -> Result<(Vec<u8>, Option<Vec<u8>>), Fallback> {
    sc.seen.clear();
    sc.seen.resize(s.columns.len(), false);
    for (n, (name, value)) in row.0.iter().enumerate() {
        let c = t.column(n, name.as_ref()).ok_or(Fallback)?;
        if std::mem::replace(&mut sc.seen[c], true) {
            return Err(Fallback); // a repeated column: Python's dict semantics decide
        }
        let span = s.value(c, value.as_deref(), &mut sc.buf, &mut sc.check)?;
        sc.after.push((c, span));
    }
    if row.0.len() != s.columns.len() {
        return Err(Fallback); // a row without some column: the transforms decide
    }
    let es = match s.added.iter().any(|a| matches!(a.1, Added::Es)) {
        true => Some(m.es.ok_or(Fallback)?),
        false => None,
    };
    let (texts, codes) = consts;
    let mut value = Vec::with_capacity(sc.buf.len() + 512);
    let mut mysql_type = Vec::new();
    let mut sql_type = Vec::new();
    value.extend_from_slice(b"{\"data\":[{");
    let mut first = true;
    for &(c, span) in &sc.after {
        let Some(name) = &s.columns[c].out else { continue };
        if !std::mem::take(&mut first) {
            value.push(b',');
            mysql_type.push(b',');
            sql_type.push(b',');
        }
        entry(&mut value, name, span_text(&sc.buf, span));
        if s.computed {
            mysql_type.extend_from_slice(&s.columns[c].mysql_type);
            sql_type.extend_from_slice(name);
            sql_type.push(b':');
            json::write_int(&mut sql_type, s.columns[c].sql.of(&sc.buf, span)?);
        }
    }
    for (j, (name, kind, type_entry)) in s.added.iter().enumerate() {
        if !std::mem::take(&mut first) {
            value.push(b',');
            mysql_type.push(b',');
            sql_type.push(b',');
        }
        value.extend_from_slice(name);
        value.push(b':');
        match kind {
            Added::Const(k) => value.extend_from_slice(&texts[*k]),
            Added::Es => write_int_text(&mut value, es.unwrap_or(0)),
            Added::Ts => write_int_text(&mut value, m.ts.ok_or(Fallback)?),
            Added::Row => write_int_text(&mut value, i as i64),
        }
        if s.computed {
            mysql_type.extend_from_slice(type_entry);
            sql_type.extend_from_slice(name);
            sql_type.push(b':');
            json::write_int(&mut sql_type, codes[j]);
        }
    }
    value.extend_from_slice(b"}]");
    let (mysql_type, sql_type) = if s.computed { (braced(&mysql_type), braced(&sql_type)) } else { (t.mysql_type.clone(), t.sql_type.clone()) };
    let fields = Fields { database: s.database.as_deref(), table: s.table.as_deref(), pk_names: s.pk_names.as_deref(), mysql_type: &mysql_type, sql_type: &sql_type };
    let (head, tail) = message_fields(&fields, m, op)?;
    value.extend_from_slice(&head);
    match old {
        Some(o) if op == 1 => write_old(t, s, o, sc, &mut value)?,
        _ => value.extend_from_slice(fixed_old(m)),
    }
    value.extend_from_slice(&tail);
    Ok((value, key(s, t, row, &sc.buf, &sc.after)?))
}

/// ``,"old":[{...}]`` of an UPDATE row with ``old`` entries: the entries' columns still
/// written under their names, then every written column whose before-value text differs.
fn write_old(t: &Table, s: &Shape, o: &Row, sc: &mut ShapeScratch, out: &mut Vec<u8>) -> Result<(), Fallback> {
    for (n, (name, value)) in o.0.iter().enumerate() {
        let c = t.column(n, name.as_ref()).ok_or(Fallback)?;
        if sc.before.iter().any(|(b, _)| *b == c) {
            return Err(Fallback); // a repeated column
        }
        let span = s.value(c, value.as_deref(), &mut sc.buf, &mut sc.check)?;
        sc.before.push((c, span));
    }
    let before_of = |c: usize, sc: &ShapeScratch| -> Option<(usize, usize)> {
        match sc.before.iter().find(|(b, _)| *b == c) {
            Some(&(_, span)) => span,
            None => sc.after.iter().find(|(a, _)| *a == c).and_then(|&(_, span)| span),
        }
    };
    for (name, _) in &o.0 {
        if let Some(&c) = s.out_index.get(name.as_ref()) {
            if !sc.changed.iter().any(|(k, _)| *k == c) {
                sc.changed.push((c, before_of(c, sc)));
            }
        }
    }
    for idx in 0..sc.after.len() {
        let (c, now) = sc.after[idx];
        if s.columns[c].out.is_none() || sc.changed.iter().any(|(k, _)| *k == c) {
            continue;
        }
        let Some(&(_, was)) = sc.before.iter().find(|(b, _)| *b == c) else { continue };
        if span_text(&sc.buf, was) != span_text(&sc.buf, now) {
            sc.changed.push((c, was));
        }
    }
    out.extend_from_slice(b",\"old\":[{");
    for (n, &(c, span)) in sc.changed.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        let name = s.columns[c].out.as_ref().ok_or(Fallback)?;
        entry(out, name, span_text(&sc.buf, span));
    }
    out.extend_from_slice(b"}]");
    Ok(())
}

/// The record key: the key columns' written values (typed integers as numbers, typed
/// DECIMALs as the message's plain text).
fn key(s: &Shape, t: &Table, row: &Row, buf: &[u8], after: &[(usize, Option<(usize, usize)>)]) -> Result<Option<Vec<u8>>, Fallback> {
    if s.key.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(64);
    out.push(b'{');
    for (n, (name, c, kind)) in s.key.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        let span = after.iter().find(|(a, _)| a == c).and_then(|&(_, span)| span);
        let text = span_text(buf, span);
        match kind {
            KeyKind::Decimal if span.is_some() => {
                let found = row.0.iter().enumerate().find(|(n, (k, _))| t.column(*n, k.as_ref()) == Some(*c));
                let raw = found.and_then(|(_, (_, v))| v.as_deref()).ok_or(Fallback)?;
                crate::typed_json::plain_decimal(raw)?;
                out.extend_from_slice(name);
                out.push(b':');
                json::write_str(&mut out, raw);
            }
            KeyKind::Int if span.is_some() => entry(&mut out, name, &text[1..text.len() - 1]),
            _ => entry(&mut out, name, text),
        }
    }
    out.push(b'}');
    Ok(Some(out))
}

fn entry(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.push(b':');
    out.extend_from_slice(value);
}

fn span_text(buf: &[u8], span: Option<(usize, usize)>) -> &[u8] {
    match span {
        Some((a, b)) => &buf[a..b],
        None => b"null",
    }
}

fn braced(entries: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.len() + 2);
    out.push(b'{');
    out.extend_from_slice(entries);
    out.push(b'}');
    out
}

/// An integer as Canal text (a JSON string of its digits).
fn write_int_text(out: &mut Vec<u8>, n: i64) {
    out.push(b'"');
    json::write_int(out, n);
    out.push(b'"');
}
