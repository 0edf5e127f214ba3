//! The row-changing transforms (``replace_field``, ``mask_field``, ``insert_field``,
//! ``value_to_key``, ``merge_shards``) for the writers that convert Canal text (TiCDC's,
//! Maxwell's, GoldenGate's, CloudCanal's, CKafka's, DataWorks' and DTS's):
//! each row of a Canal message re-shaped, still as Canal text, into the transformed
//! event's row, which the writer then converts with its table of the transformed schema.
//! Compiled per table by ``transforms/native_rowxf.py`` (``TextShaped``); from the Debezium
//! reader's one-row messages per layout by ``transforms/native_debezium_rowxf.py``.
//!
//! A shaped row names the columns under their output names (a dropped column's value is
//! still checked where a transform typed the row), masks their values (null, the salted
//! SHA-256's hex, a constant's Canal text) and appends the added columns (constants per
//! op, ``es``, ``ts``, the row index); ``database``, ``table`` and ``pkNames`` are the
//! transformed event's. The key is the transformed row's: the texts, or once a transform
//! typed the row, the typed values (integers and YEARs as numbers, ENUMs as their labels,
//! DECIMALs as their plain digits' string).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use pyo3::prelude::*;

use crate::canal::{Message, Row};
use crate::canal_text::TextOp;
use crate::values::Fallback;
use crate::{json, Added};

/// What a transform writes for a column's non-null values.
enum Mask {
    None,
    Null,
    /// The hex SHA-256 of the salt and the text.
    Hash(Vec<u8>),
    /// ``replace``/``empty``: the constant's Canal text.
    Const(String),
}

/// How a text is checked to read (as Python types it).
enum Check {
    /// Converted by a ``canal_text`` conversion.
    Text(TextOp),
    /// One of these texts (an ENUM's or SET's).
    Among(HashSet<String>),
}

struct Column {
    /// The output name (``None``: not written).
    out: Option<String>,
    /// A transform typed the row while the column was there, and its value is not
    /// otherwise converted by the writer (dropped or masked): the text must read.
    check: Option<Check>,
    mask: Mask,
}

/// One table's rows as the transforms leave them, in Canal text.
pub struct RowShape {
    index: HashMap<String, usize>,
    columns: Vec<Column>,
    added: Vec<(String, Added)>,
    /// Per op (c, u, d, r): the constant added columns' texts.
    consts: [Vec<Option<String>>; 4],
    database: Option<String>,
    table: Option<String>,
    pk_names: Vec<String>,
    /// The key's fields: (name as a JSON string, output name, how the text is written).
    key: Vec<(Vec<u8>, String, KeyForm)>,
    /// An UPDATE's first record of a pair (DataWorks' ``UPDATE_BEFOR``) is keyed by the
    /// before-image (the row overlaid with ``old``), as ``DataWorksJson.encode`` keys it
    /// when no transform set the key.
    before_keyed: bool,
}

/// How a key field's text is written in the key.
enum KeyForm {
    /// As a JSON string.
    Text,
    /// As a number (a typed integer's canonical digits).
    Number,
    /// As the JSON string of the ENUM label the text reads as (other texts: Python's).
    Label(HashMap<String, String>),
    /// A typed DECIMAL's ``format(Decimal(text), "f")`` as a JSON string: the text itself
    /// when it is plain (``typed_json::plain_decimal``; other texts: Python's).
    Decimal,
}

#[allow(clippy::type_complexity)]
type ShapeSpec = (
    Vec<(String, Option<String>, Option<(String, Option<usize>)>, Option<Vec<String>>, String, Vec<u8>)>,
    Vec<(String, String)>,
    Vec<Vec<Option<String>>>,
    (Option<String>, Option<String>, Vec<String>),
    Vec<(String, String, Option<HashMap<String, String>>)>,
    bool,
);

impl RowShape {
    /// The shape from Python: ``(columns, added, consts, (database, table, pkNames), key)``;
    /// a column ``(name, out | None, check | None, readable | None, mask, argument)``
    /// (``check``: a ``canal_text`` conversion, or with ``readable`` the texts that read;
    /// ``mask`` ``""``, ``null``, ``hash`` with the salt or
    /// ``const`` with the Canal text), ``added`` ``(name, const | es | ts | row)``,
    /// ``consts`` per op the constant added columns' texts, ``key`` ``(name, form, ENUM labels by text | None)``
    /// (``form``: ``text``, ``number`` or ``decimal``),
    /// ``before_keyed``: an UPDATE's record pairs keyed first by the before-image.
    pub fn from_spec(spec: &Bound<PyAny>) -> PyResult<RowShape> {
        let (columns, added, consts, (database, table, pk_names), key, before_keyed): ShapeSpec = spec.extract()?;
        let bad = |what: &str| pyo3::exceptions::PyValueError::new_err(what.to_owned());
        let mut index = HashMap::with_capacity(columns.len());
        let mut cols = Vec::with_capacity(columns.len());
        for (name, out, check, readable, mask, arg) in columns {
            let check = match (check, readable) {
                (Some(_), Some(texts)) => Some(Check::Among(texts.into_iter().collect())),
                (Some((op, arg)), None) => Some(Check::Text(TextOp::from_name(&op, arg).ok_or_else(|| bad("unknown text conversion"))?)),
                (None, _) => None,
            };
            let mask = match mask.as_str() {
                "" => Mask::None,
                "null" => Mask::Null,
                "hash" => Mask::Hash(arg),
                "const" => Mask::Const(String::from_utf8(arg).map_err(|_| bad("a constant's text"))?),
                _ => return Err(bad("unknown mask")),
            };
            if index.insert(name, cols.len()).is_some() {
                return Err(bad("a repeated column"));
            }
            cols.push(Column { out, check, mask });
        }
        let mut n_consts = 0;
        let added = added
            .into_iter()
            .map(|(name, kind)| {
                let kind = match kind.as_str() {
                    "es" => Added::Es,
                    "ts" => Added::Ts,
                    "row" => Added::Row,
                    _ => {
                        n_consts += 1;
                        Added::Const(n_consts - 1)
                    }
                };
                (name, kind)
            })
            .collect();
        let consts: [Vec<Option<String>>; 4] = consts.try_into().map_err(|_| bad("four op entries"))?;
        if consts.iter().any(|c| c.len() != n_consts) {
            return Err(bad("one text per constant added column"));
        }
        let key = key
            .into_iter()
            .map(|(name, form, labels)| {
                let mut quoted = Vec::new();
                json::write_str(&mut quoted, &name);
                let form = match (form.as_str(), labels) {
                    (_, Some(labels)) => KeyForm::Label(labels),
                    ("number", None) => KeyForm::Number,
                    ("decimal", None) => KeyForm::Decimal,
                    ("text", None) => KeyForm::Text,
                    _ => return Err(bad("unknown key form")),
                };
                Ok((quoted, name, form))
            })
            .collect::<PyResult<_>>()?;
        Ok(RowShape { index, columns: cols, added, consts, database, table, pk_names, key, before_keyed })
    }

    /// Does every row name only this table's columns (what Python reads without error)?
    pub fn knows(&self, data: &[Row]) -> bool {
        data.iter().all(|row| row.0.iter().all(|(k, _)| self.index.contains_key(k.as_ref())))
    }

    /// ``m`` (op index ``op``) as the transformed event's message: its rows (and ``old``
    /// rows) re-shaped, ``database``, ``table`` and ``pkNames`` the transformed event's.
    pub fn apply<'b>(&'b self, m: &Message<'b>, op: usize) -> Result<Message<'b>, Fallback> {
        let data = m.data.as_deref().ok_or(Fallback)?;
        let mut rows = Vec::with_capacity(data.len());
        for (i, row) in data.iter().enumerate() {
            if row.0.len() != self.columns.len() {
                return Err(Fallback); // a row without some column: the transforms decide
            }
            let mut shaped = self.row(row)?;
            for (name, kind) in &self.added {
                let value = match kind {
                    Added::Const(k) => self.consts[op][*k].as_deref().map(Cow::Borrowed),
                    Added::Es => Some(Cow::Owned(m.es.ok_or(Fallback)?.to_string())),
                    Added::Ts => Some(Cow::Owned(m.ts.ok_or(Fallback)?.to_string())),
                    Added::Row => Some(Cow::Owned(i.to_string())),
                };
                shaped.0.push((Cow::Borrowed(name.as_str()), value));
            }
            rows.push(shaped);
        }
        let old = match m.old.as_deref() {
            Some(old) => Some(old.iter().map(|o| self.row(o)).collect::<Result<Vec<_>, _>>()?),
            None => None,
        };
        Ok(Message {
            kind: m.kind.clone(),
            data: Some(rows),
            old,
            database: self.database.as_deref().map(Cow::Borrowed),
            table: self.table.as_deref().map(Cow::Borrowed),
            es: m.es,
            ts: m.ts,
            pk_names: Some(self.pk_names.iter().map(|n| Cow::Borrowed(n.as_str())).collect()),
            mysql_type: m.mysql_type,
            sql_type: m.sql_type,
            id: m.id,
            tidb: m.tidb,
            is_ddl: m.is_ddl,
            sql: m.sql,
            extra: Vec::new(),
            seen: m.seen,
        })
    }

    /// One row's written columns in row order, masked; the checked columns' texts read.
    fn row<'b>(&'b self, row: &Row<'b>) -> Result<Row<'b>, Fallback> {
        let mut seen = vec![false; self.columns.len()];
        let mut out = Vec::with_capacity(row.0.len() + self.added.len());
        let mut scratch = Vec::new();
        for (name, value) in &row.0 {
            let c = *self.index.get(name.as_ref()).ok_or(Fallback)?;
            if std::mem::replace(&mut seen[c], true) {
                return Err(Fallback); // a repeated column: Python's dict semantics decide
            }
            let col = &self.columns[c];
            match (&col.check, value) {
                (Some(Check::Text(op)), Some(text)) => {
                    scratch.clear();
                    op.write(&mut scratch, text)?;
                }
                (Some(Check::Among(texts)), Some(text)) if !texts.contains(text.as_ref()) => return Err(Fallback),
                _ => {}
            }
            let Some(out_name) = &col.out else { continue };
            let value = match (&col.mask, value) {
                (_, None) | (Mask::Null, _) => None,
                (Mask::None, Some(text)) => Some(text.clone()),
                (Mask::Hash(salt), Some(text)) => {
                    scratch.clear();
                    crate::write_sha256(&mut scratch, salt, text);
                    Some(Cow::Owned(String::from_utf8_lossy(&scratch[1..scratch.len() - 1]).into_owned()))
                }
                (Mask::Const(text), Some(_)) => Some(Cow::Borrowed(text.as_str())),
            };
            out.push((Cow::Borrowed(out_name.as_str()), value));
        }
        Ok(Row(out))
    }

    /// The keys of the records the writer writes for the shaped message (op index ``op``),
    /// row by row: each row's key, or with ``pairs`` (an UPDATE written as two records) the
    /// before-image's key then the row's when ``before_keyed``. Computed before the writer
    /// writes, so that a key the plan cannot write leaves the encoder's counters untouched.
    pub fn keys(&self, shaped: &Message, pairs: bool) -> Result<Vec<Option<Vec<u8>>>, Fallback> {
        let data = shaped.data.as_deref().ok_or(Fallback)?;
        let old = shaped.old.as_deref().unwrap_or(&[]);
        let mut keys = Vec::with_capacity(data.len() * (1 + pairs as usize));
        for (i, row) in data.iter().enumerate() {
            let key = self.key(row)?;
            if pairs {
                keys.push(match old.get(i) {
                    Some(o) if self.before_keyed => self.key(&crate::dataworks_out::overlaid(row, Some(o)))?,
                    _ => key.clone(),
                });
            }
            keys.push(key);
        }
        Ok(keys)
    }

    fn key(&self, row: &Row) -> Result<Option<Vec<u8>>, Fallback> {
        if self.key.is_empty() {
            return Ok(None);
        }
        let mut out = Vec::with_capacity(64);
        out.push(b'{');
        for (n, (quoted, name, form)) in self.key.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(quoted);
            out.push(b':');
            match row.0.iter().find(|(k, _)| k.as_ref() == name.as_str()).and_then(|(_, v)| v.as_deref()) {
                None => out.extend_from_slice(b"null"),
                Some(text) => match form {
                    KeyForm::Number => {
                        crate::canal_text::canonical_int(text)?;
                        out.extend_from_slice(text.as_bytes());
                    }
                    KeyForm::Label(labels) => json::write_str(&mut out, labels.get(text).ok_or(Fallback)?),
                    KeyForm::Decimal => {
                        crate::typed_json::plain_decimal(text)?;
                        json::write_str(&mut out, text);
                    }
                    KeyForm::Text => json::write_str(&mut out, text),
                },
            }
        }
        out.push(b'}');
        Ok(Some(out))
    }
}

