//! What the typed-JSON readers (Maxwell: ``maxwell_in``, GoldenGate: ``ogg_in``) share:
//! one message read as an [`Event`], its columns typed by their JSON kinds as the Python
//! decoders type them, tables keyed by that layout, and the event handed to the plan's
//! Canal or Debezium writer.
//!
//! Without a schema catalog ``SchemalessJson.row_schema`` types each message's columns
//! from its JSON values (``inference.json_columns``, rules ``typed-json``: booleans
//! ``bit(1)``, integers ``bigint``, numbers with a fraction ``double``, strings and nulls
//! ``longtext``), the first non-null value of the images deciding. So a table layout is
//! (database, table, key names, each column's name and kind), as for the Debezium reader
//! (``debezium_in``, whose value reading this module shares): per layout Python compiles
//! the writer's table once (``transforms/native_typed_in.py``) from a probe message
//! decoded by the chain's own decoder, and each value reaches the writer as the text its
//! conversion reads.
//!
//! A message is read in one pass by ``json_scan`` (``Fields::scan_field``), as the
//! Debezium reader reads its own; what the scanner stops at is read by the serde
//! deserializer (``Fields::field``), which decides.
//!
//! Anything not reproduced for certain is Python's: objects and arrays (JSON, SET,
//! geometry), integers past 64 bits, numbers a double does not hold (``1e-400``: Python
//! refuses them), images whose kinds differ, columns only in the before-image.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::sync::Arc;

use pyo3::prelude::*;
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::canal::{self, Checked, Text, FIELD_DATABASE, FIELD_ES, FIELD_OLD, FIELD_PK_NAMES, FIELD_TABLE, FIELD_TS};
use crate::debezium_in::{self, row_key, text_row, Image, Kind, Value};
use crate::json_scan::Scan;
use crate::{canal_out, table_plan, CanalToDebezium, Encoder, OpEntry, Output, Reader as PlanReader, Table};

/// One image's cells: column and value, in message order.
pub(crate) type Cells<'a> = Vec<(Cow<'a, str>, Value<'a>)>;

/// A row message of a typed-JSON format, as its Python decoder reads it.
pub(crate) struct Event<'a> {
    /// The writers' op index (c, u, d).
    pub op: usize,
    pub database: Cow<'a, str>,
    pub table: Cow<'a, str>,
    pub pk: Vec<Cow<'a, str>>,
    /// The row: the after-image, the before-image of a delete.
    pub row: Cells<'a>,
    /// An update's before-image as an overlay of ``row`` (Maxwell's changed columns,
    /// GoldenGate's whole before-image).
    pub old: Option<Cells<'a>>,
    /// ``event.ts_ms`` and ``event.processing_ts_ms``.
    pub es: Option<i64>,
    pub ts: Option<i64>,
}

/// The typed-JSON dialects read natively.
#[derive(Clone, Copy)]
pub(crate) enum Dialect {
    Maxwell,
    Ogg,
}

impl Dialect {
    fn read(self, value: &[u8]) -> Option<Event<'_>> {
        match self {
            Dialect::Maxwell => crate::maxwell_in::read(value),
            Dialect::Ogg => crate::ogg_in::read(value),
        }
    }
}

/// An image's cells as the typed-JSON decoders read them, or ``None`` (Python's): the
/// values ``Value::of`` leaves to Python, and numbers a double does not hold (exact
/// parsing keeps ``1e-400`` a ``Decimal`` that Python's ``float`` conversion refuses).
pub(crate) fn cells(image: Image<'_>) -> Option<Cells<'_>> {
    let cells = image.0?;
    for (_, v) in &cells {
        if v.kind == Kind::Float && v.raw.parse::<f64>().ok()? == 0.0 {
            let mantissa = v.raw.split(['e', 'E']).next()?;
            if mantissa.bytes().any(|b| matches!(b, b'1'..=b'9')) {
                return None;
            }
        }
    }
    Some(cells)
}

/// A message, if it is a JSON object of fields ``T`` reads: in one pass by ``json_scan``
/// (borrowing from it), or where the scanner stops, by the serde deserializer, which decides.
pub(crate) fn parse<'a, T: Fields<'a>>(value: &'a [u8]) -> Option<T> {
    let first = value.iter().find(|b| !b.is_ascii_whitespace())?;
    if *first != b'{' {
        return None;
    }
    let text = std::str::from_utf8(value).ok()?;
    T::SCANNED.then(|| scan_object(text)).flatten().or_else(|| serde_json::from_str::<Object<T>>(text).ok().map(|o| o.0))
}

/// The single-pass reading of what ``Object<T>`` deserialises: the same ``T``, or ``None``
/// when serde must decide (a repeated field, a value the scanner stops at, malformed text).
fn scan_object<'a, T: Fields<'a>>(text: &'a str) -> Option<T> {
    let mut scan = Scan::new(text);
    let mut object = T::default();
    let mut names: Vec<Cow<'a, str>> = Vec::with_capacity(12);
    scan.object(|scan, name| {
        if names.contains(&name) {
            return None;
        }
        object.scan_field(name.as_ref(), scan)?;
        names.push(name);
        Some(())
    })?;
    scan.end()?;
    Some(object)
}

/// A JSON object read field by field (``Object<T>`` deserialises it): each field once,
/// a repeated one an error (Python keeps the last one: the message is its).
pub(crate) trait Fields<'de>: Default {
    /// What the object is (serde's ``expecting``).
    const WHAT: &'static str;
    /// Reads the value of field ``name``.
    fn field<A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error>;
    /// ``scan_field`` reads the fields (else ``parse`` goes to serde directly).
    const SCANNED: bool = false;
    /// ``field`` from the scanner: the same reading, or ``None`` (serde decides).
    fn scan_field(&mut self, _name: &str, _scan: &mut Scan<'de>) -> Option<()> {
        None
    }
}

/// An image as [`Image`] deserialises it: the Debezium reader's scanner, objects left to
/// Python (Maxwell's and GoldenGate's JSON columns).
pub(crate) fn scan_image<'a>(scan: &mut Scan<'a>) -> Option<Option<Image<'a>>> {
    debezium_in::scan_image(scan, false)
}

/// ``null`` or an array of strings (``primary_keys``, ``primary_key_columns``), as
/// ``Option<Vec<Text>>`` deserialises it.
pub(crate) fn scan_names<'a>(scan: &mut Scan<'a>) -> Option<Option<Vec<Text<'a>>>> {
    if scan.null()? {
        return Some(None);
    }
    let mut names = Vec::with_capacity(4);
    scan.items(b'[', b']', |scan| {
        names.push(Text(scan.string()?));
        Some(())
    })?;
    Some(Some(names))
}

/// A [`Fields`] object, deserialised.
pub(crate) struct Object<T>(pub T);

impl<'de, T: Fields<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Fields<'de>> Visitor<'de> for V<T> {
            type Value = Object<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(T::WHAT)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut object = T::default();
                let mut names: Vec<Cow<'de, str>> = Vec::with_capacity(12);
                while let Some(k) = map.next_key::<Text<'de>>()? {
                    if names.contains(&k.0) {
                        return Err(de::Error::custom("duplicate field"));
                    }
                    object.field(k.0.as_ref(), &mut map)?;
                    names.push(k.0);
                }
                Ok(Object(object))
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

/// The next value: a string or null.
pub(crate) fn text<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<Cow<'de, str>>, A::Error> {
    Ok(map.next_value::<Option<Text<'de>>>()?.map(|t| t.0))
}

/// The next value, any JSON: is it one Python reads as an integer or a string (or null),
/// not a boolean or a number with a fraction?
pub(crate) fn int_or_str<'de, A: MapAccess<'de>>(map: &mut A) -> Result<bool, A::Error> {
    let raw: &RawValue = map.next_value()?;
    serde_json::from_str::<Checked>(raw.get()).map_err(de::Error::custom)?;
    Ok(is_int_or_str(raw.get()))
}

/// [`int_or_str`] from the scanner.
pub(crate) fn scan_int_or_str(scan: &mut Scan<'_>) -> Option<bool> {
    scan.value().map(is_int_or_str)
}

/// Is a value's JSON text (checked) an integer, a string or null?
fn is_int_or_str(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    text == "null" || text.starts_with('"') || (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

impl Event<'_> {
    /// Each column's name and kind (the row's first, then the overlay's), or ``None``
    /// (Python's): a repeated column or key name, an overlay column the row lacks, kinds
    /// that differ.
    fn columns(&self) -> Option<Vec<(&str, Kind)>> {
        if self.pk.iter().enumerate().any(|(n, k)| self.pk[..n].contains(k)) {
            return None;
        }
        let mut columns: Vec<(&str, Kind)> = Vec::with_capacity(self.row.len());
        for (name, v) in &self.row {
            if columns.iter().any(|(n, _)| *n == name.as_ref()) {
                return None;
            }
            columns.push((name.as_ref(), v.kind));
        }
        // While the overlay names the row's columns in the row's order (GoldenGate's whole
        // before-image), its names are as distinct as the row's: no search.
        let mut aligned = true;
        for (n, (name, v)) in self.old.iter().flatten().enumerate() {
            aligned &= columns.get(n).is_some_and(|(c, _)| *c == name.as_ref());
            if !aligned && self.old.as_ref()?[..n].iter().any(|(k, _)| k == name) {
                return None;
            }
            let slot = if aligned { &mut columns[n] } else { columns.iter_mut().find(|(c, _)| *c == name.as_ref())? };
            if slot.1 == Kind::Null {
                slot.1 = v.kind;
            } else if v.kind != Kind::Null && v.kind != slot.1 {
                return None;
            }
        }
        Some(columns)
    }

    /// The Canal message the writers read (values as their conversions' texts); ``ts``:
    /// the processing time written (Python's current time when the message has none).
    fn message<'b>(&'b self, ts: Option<i64>) -> canal::Message<'b> {
        canal::Message {
            data: Some(vec![text_row(&self.row)]),
            old: self.old.as_deref().map(|o| vec![text_row(o)]),
            database: Some(Cow::Borrowed(self.database.as_ref())),
            table: Some(Cow::Borrowed(self.table.as_ref())),
            es: self.es,
            ts,
            pk_names: Some(self.pk.iter().map(|n| Cow::Borrowed(n.as_ref())).collect()),
            seen: FIELD_DATABASE | FIELD_TABLE | FIELD_ES | FIELD_TS | FIELD_PK_NAMES | if self.old.is_some() { FIELD_OLD } else { 0 },
            ..Default::default()
        }
    }
}

/// A table layout: database, table, key names, each column's name and kind.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Layout {
    database: String,
    table: String,
    pk: Vec<String>,
    columns: Vec<(String, Kind)>,
}

impl Layout {
    fn matches(&self, e: &Event, columns: &[(&str, Kind)]) -> bool {
        self.database == e.database
            && self.table == e.table
            && self.pk.len() == e.pk.len()
            && self.pk.iter().zip(&e.pk).all(|(a, b)| a == b)
            && self.columns.len() == columns.len()
            && self.columns.iter().zip(columns).all(|((a, ka), (b, kb))| a == b && ka == kb)
    }
}

const CACHE_SIZE: usize = 1024;

/// Layouts looked at before the map: a table's messages alternate between a few (a
/// nullable column's kind is null in some of them).
const RECENT: usize = 4;

/// Compiled tables by layout, the last ones used looked at first (a layout repeats for
/// every message of a table); at most ``CACHE_SIZE`` of them.
pub(crate) struct Tables<K, T = Table> {
    compiled: HashMap<K, Option<Arc<T>>>,
    /// The last layouts used, the latest first.
    recent: Vec<(K, Option<Arc<T>>)>,
}

impl<K: Clone + Eq + Hash, T> Tables<K, T> {
    pub fn new() -> Tables<K, T> {
        Tables { compiled: HashMap::new(), recent: Vec::with_capacity(RECENT) }
    }

    pub fn clear(&mut self) {
        self.compiled.clear();
        self.recent.clear();
    }

    /// The table of the layout ``is_recent`` recognises as a recent one's, else of
    /// ``layout()``, compiled by ``compile`` the first time (``None``: Python's).
    pub fn get(
        &mut self,
        is_recent: impl Fn(&K) -> bool,
        layout: impl FnOnce() -> K,
        compile: impl FnOnce(&K) -> PyResult<Option<T>>,
    ) -> PyResult<Option<Arc<T>>> {
        if let Some(n) = self.recent.iter().position(|(key, _)| is_recent(key)) {
            self.recent[..=n].rotate_right(1);
            return Ok(self.recent[0].1.clone());
        }
        let key = layout();
        let table = match self.compiled.get(&key) {
            Some(table) => table.clone(),
            None => {
                let table = compile(&key)?.map(Arc::new);
                if self.compiled.len() >= CACHE_SIZE {
                    self.compiled.clear();
                }
                self.compiled.insert(key.clone(), table.clone());
                table
            }
        };
        if self.recent.len() == RECENT {
            self.recent.pop();
        }
        self.recent.insert(0, (key, table.clone()));
        Ok(table)
    }
}

/// A typed-JSON reader: its dialect, the compiler and the compiled tables.
pub(crate) struct Reader {
    dialect: Dialect,
    compile: PyObject,
    tables: Tables<Layout>,
}

impl Reader {
    pub fn new(compile: PyObject, dialect: Dialect) -> Reader {
        Reader { dialect, compile, tables: Tables::new() }
    }

    pub fn clear(&mut self) {
        self.tables.clear();
    }

    /// The layout's table for the plan's writer (``None``: Python's), compiled once by
    /// ``compile(database, table, key_names, [(column, kind)])``.
    fn table(&mut self, py: Python, e: &Event, columns: &[(&str, Kind)], encoder: &Encoder) -> PyResult<Option<Arc<Table>>> {
        let compile = &self.compile;
        self.tables.get(
            |layout| layout.matches(e, columns),
            || Layout {
                database: e.database.to_string(),
                table: e.table.to_string(),
                pk: e.pk.iter().map(|n| n.to_string()).collect(),
                columns: columns.iter().map(|(n, k)| ((*n).to_owned(), *k)).collect(),
            },
            |layout| {
                let kinds: Vec<(&str, &str)> = layout.columns.iter().map(|(n, k)| (n.as_str(), k.name())).collect();
                writer_table(&compile.bind(py).call1((&layout.database, &layout.table, layout.pk.clone(), kinds))?, encoder)
            },
        )
    }
}

/// A layout's compiled spec as the table of the plan's Debezium or Canal writer (``None``
/// spec, or another writer: Python's).
pub(crate) fn writer_table(spec: &Bound<PyAny>, encoder: &Encoder) -> PyResult<Option<Table>> {
    if spec.is_none() {
        return Ok(None);
    }
    Ok(match encoder {
        Encoder::Debezium => Some(Table::Debezium(table_plan(spec)?)),
        Encoder::Canal { transaction: false } => canal_out::Table::from_spec(spec, None, None, true)?.map(Table::Canal),
        _ => None,
    })
}

/// Python's ``int(time.time() * 1000)``: the Canal ``ts`` of an event without a processing time.
pub(crate) fn now_ms() -> Option<i64> {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(since.as_millis()).ok()
}

/// One row message through the Canal writer (``batch: row``) with the record key Python
/// writes for it (the reader's, not the writer's Canal texts); ``false``: Python's.
pub(crate) fn write_canal_keyed(t: &canal_out::Table, m: &canal::Message, op: usize, key: Option<Vec<u8>>, out: &mut Vec<Output>) -> bool {
    match t.ops[op] {
        canal_out::Entry::Write(variant) => {
            let start = out.len();
            let ok = canal_out::write(t, m, op, variant, false, out).is_ok();
            if let Some((last, others)) = out[start..].split_last_mut() {
                for record in others {
                    record.1 = key.clone();
                }
                last.1 = key; // moved, not cloned
            }
            ok
        }
        canal_out::Entry::Python => false,
        canal_out::Entry::Dropped => true,
    }
}

/// The raw key values as ``JsonCodec.encode_key`` writes them, or ``None`` (Python's)
/// when a key value is a number Python keeps as a ``Decimal`` (not a double's shortest text).
pub(crate) fn canal_key(pk: &[Cow<str>], row: &[(Cow<str>, Value)]) -> Option<Option<Vec<u8>>> {
    for (name, v) in row {
        if v.kind == Kind::Float && pk.iter().any(|k| k == name) {
            let mut text = Vec::new();
            crate::json::write_f64(&mut text, v.raw.parse().ok()?);
            if text != v.raw.as_bytes() {
                return None;
            }
        }
    }
    Some(row_key(pk, row))
}

impl CanalToDebezium {
    /// One message of a typed-JSON reader into ``out``; ``false`` when Python must process it.
    pub(crate) fn typed_message(&mut self, py: Python, value: &[u8], out: &mut Vec<Output>) -> PyResult<bool> {
        let PlanReader::Typed(reader) = &mut self.reader else { return Ok(false) };
        if value.len() > self.max_message_bytes {
            return Ok(false);
        }
        let Some(e) = reader.dialect.read(value) else { return Ok(false) };
        let Some(columns) = e.columns() else { return Ok(false) };
        let Some(table) = reader.table(py, &e, &columns, &self.encoder)? else { return Ok(false) };
        let ts = match self.encoder {
            Encoder::Canal { .. } => match e.ts.or_else(now_ms) {
                Some(ts) => Some(ts),
                None => return Ok(false),
            },
            _ => e.ts,
        };
        Ok(self.write_event(&table, e.op, &e.message(ts), || canal_key(&e.pk, &e.row), out))
    }

    /// One row event as the Canal message ``m`` (one row, ``ts`` as the writer writes it)
    /// through the plan's Debezium or Canal writer into ``out``; ``key``: the Canal writer's
    /// record key (``None``: Python's). ``false`` (nothing written) when Python must write it.
    pub(crate) fn write_event(&self, table: &Table, op: usize, m: &canal::Message, key: impl FnOnce() -> Option<Option<Vec<u8>>>, out: &mut Vec<Output>) -> bool {
        let start = out.len();
        let written = match (table, &self.encoder) {
            (Table::Debezium(plan), Encoder::Debezium) => match &plan.ops[op] {
                OpEntry::Plan(op_plan) => {
                    let data = m.data.as_deref().unwrap_or_default();
                    let old = m.old.as_deref().unwrap_or_default();
                    data.first().is_some_and(|row| self.row(plan, op_plan, m, op, 0, row, old, out).is_ok())
                }
                OpEntry::Python => false,
                OpEntry::Dropped => true,
            },
            (Table::Canal(t), Encoder::Canal { transaction: false }) => match key() {
                Some(key) => write_canal_keyed(t, m, op, key, out),
                None => matches!(t.ops[op], canal_out::Entry::Dropped),
            },
            _ => false,
        };
        if !written {
            out.truncate(start);
        }
        written
    }
}
