//! The DataWorks reader: a dataworks-json row message read as ``DataWorksJson.decode``
//! reads it, with the codec's pairing state (``transforms/formats/dataworks_json.py``).
//!
//! A message declares its columns in ``schema.dataColumn`` with one of six types; without
//! a catalog each maps to one MySQL type (LONG ``bigint``, DOUBLE ``double``, or
//! ``decimal(65, scale of the text)`` when a value is a JSON string, STRING ``longtext``,
//! DATE ``datetime(3)``, BYTES ``longblob``, BOOLEAN ``bit(1)``). So a table layout is
//! (``dbType``, database, schema, table, key names, each column's name, DataWorks type and
//! MySQL type): per layout Python compiles the writer's table once
//! (``transforms/native_vendor.py``) from a probe message decoded by the chain's own
//! decoder, and each value reaches the writer as the Canal text its conversion reads
//! (DATE epoch milliseconds as the wall clock in ``source_timezone``, BYTES base64 as
//! ISO-8859-1 text).
//!
//! Pairing. Python holds an ``UPDATE_BEFOR`` until the next message; a matching
//! ``UPDATE_AFTER`` (same ``sequenceId`` and table) completes it. Natively only two adjacent
//! halves of one batch are paired (the first gives no record, the second the update), when
//! Python holds no half at the batch's start (``holds_half()``). Whatever would touch the
//! codec's pending state goes to Python, and with it every later record of the batch (the
//! plan is *closed* there: ``closed_at``; ``DataWorksNativePlan.run`` converts again once
//! Python holds no half): a half at the end of a batch, a half whose partner is not the
//! next record or is not converted natively, a message that may be an ``UPDATE_BEFOR``
//! but is not read natively. Messages known not to be an ``UPDATE_BEFOR`` (other ops,
//! lone ``UPDATE_AFTER`` halves) go to Python alone: decoding them leaves Python's pending
//! state empty, as it was.

use std::borrow::Cow;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde::de::MapAccess;
use serde_json::value::RawValue;

use crate::canal::{self, Checked, Text, FIELD_DATABASE, FIELD_ES, FIELD_OLD, FIELD_PK_NAMES, FIELD_TABLE, FIELD_TS};
use crate::debezium_in::{Image, Kind, Value};
use crate::typed_in::{canal_key, now_ms, parse, text, writer_table, Fields, Object, Tables};
use crate::{CanalToDebezium, Encoder, Output, Reader as PlanReader, Table};

/// One image's cells, in message order.
type Cells<'a> = Vec<(Cow<'a, str>, Value<'a>)>;

/// ``{"dataColumn": {...}}``: one image.
#[derive(Default)]
struct Holder<'a> {
    image: Option<Image<'a>>,
}

impl<'de> Fields<'de> for Holder<'de> {
    const WHAT: &'static str = "a DataWorks image";

    fn field<A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error> {
        match name {
            "dataColumn" => self.image = map.next_value()?,
            _ => {
                map.next_value::<Checked>()?;
            }
        }
        Ok(())
    }
}

/// ``payload.timestamp``.
#[derive(Default)]
struct Stamps {
    event: Option<i64>,
    system: Option<i64>,
}

impl<'de> Fields<'de> for Stamps {
    const WHAT: &'static str = "DataWorks timestamps";

    fn field<A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error> {
        match name {
            "eventTime" => self.event = map.next_value()?,
            "systemTime" => self.system = map.next_value()?,
            _ => {
                map.next_value::<Checked>()?;
            }
        }
        Ok(())
    }
}

/// A ``sequenceId`` as Python's ``str()`` of it (``None``: absent or null).
#[derive(Default)]
enum Sequence<'a> {
    #[default]
    Absent,
    Id(Cow<'a, str>),
    /// An integer past 64 bits, or another JSON type: Python's.
    Other,
}

#[derive(Default)]
struct Payload<'a> {
    op: Option<Cow<'a, str>>,
    seq: Sequence<'a>,
    stamps: Option<Stamps>,
    before: Option<Holder<'a>>,
    after: Option<Holder<'a>>,
    /// ``scn`` other than a string, an integer or null (Python refuses it).
    bad_scn: bool,
}

impl<'de> Fields<'de> for Payload<'de> {
    const WHAT: &'static str = "a DataWorks payload";

    fn field<A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error> {
        match name {
            "op" => self.op = text(map)?,
            "sequenceId" => {
                let raw: &'de RawValue = map.next_value()?;
                map_checked(raw)?;
                self.seq = sequence(raw);
            }
            "timestamp" => self.stamps = map.next_value::<Option<Object<Stamps>>>()?.map(|o| o.0),
            "before" => self.before = map.next_value::<Option<Object<Holder<'de>>>>()?.map(|o| o.0),
            "after" => self.after = map.next_value::<Option<Object<Holder<'de>>>>()?.map(|o| o.0),
            "scn" => {
                let raw: &'de RawValue = map.next_value()?;
                map_checked(raw)?;
                let t = raw.get();
                self.bad_scn = !(t == "null" || t.starts_with('"') || t.parse::<i64>().is_ok());
            }
            _ => {
                map.next_value::<Checked>()?;
            }
        }
        Ok(())
    }
}

fn map_checked<E: serde::de::Error>(raw: &RawValue) -> Result<(), E> {
    serde_json::from_str::<Checked>(raw.get()).map(|_| ()).map_err(E::custom)
}

/// ``str(sequenceId)`` as Python writes it.
fn sequence(raw: &RawValue) -> Sequence<'_> {
    let t = raw.get();
    if t == "null" {
        return Sequence::Absent;
    }
    if t.starts_with('"') {
        return match serde_json::from_str::<Text>(t) {
            Ok(s) => Sequence::Id(s.0),
            Err(_) => Sequence::Other,
        };
    }
    match t.parse::<i64>() {
        Ok(n) if !t.contains(['.', 'e', 'E']) => Sequence::Id(Cow::Owned(n.to_string())),
        _ => Sequence::Other,
    }
}

/// One ``schema.dataColumn`` entry.
#[derive(Default)]
struct Declared<'a> {
    name: Option<Cow<'a, str>>,
    kind: Option<Cow<'a, str>>,
}

impl<'de> Fields<'de> for Declared<'de> {
    const WHAT: &'static str = "a DataWorks column";

    fn field<A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error> {
        match name {
            "name" => self.name = text(map)?,
            "type" => self.kind = text(map)?,
            _ => {
                map.next_value::<Checked>()?;
            }
        }
        Ok(())
    }
}

/// ``schema.source``.
#[derive(Default)]
struct Source<'a> {
    db_type: Option<Cow<'a, str>>,
    database: Option<Cow<'a, str>>,
    schema: Option<Cow<'a, str>>,
    table: Option<Cow<'a, str>>,
}

impl<'de> Fields<'de> for Source<'de> {
    const WHAT: &'static str = "a DataWorks source";

    fn field<A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error> {
        match name {
            "dbType" => self.db_type = text(map)?,
            "dbName" => self.database = text(map)?,
            "schemaName" => self.schema = text(map)?,
            "tableName" => self.table = text(map)?,
            _ => {
                map.next_value::<Checked>()?;
            }
        }
        Ok(())
    }
}

#[derive(Default)]
struct Schema<'a> {
    columns: Option<Vec<Object<Declared<'a>>>>,
    pk: Option<Vec<Text<'a>>>,
    source: Option<Source<'a>>,
}

impl<'de> Fields<'de> for Schema<'de> {
    const WHAT: &'static str = "a DataWorks schema";

    fn field<A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error> {
        match name {
            "dataColumn" => self.columns = map.next_value()?,
            "primaryKey" => self.pk = map.next_value()?,
            "source" => self.source = map.next_value::<Option<Object<Source<'de>>>>()?.map(|o| o.0),
            _ => {
                map.next_value::<Checked>()?;
            }
        }
        Ok(())
    }
}

#[derive(Default)]
struct Message<'a> {
    schema: Option<Schema<'a>>,
    payload: Option<Payload<'a>>,
}

impl<'de> Fields<'de> for Message<'de> {
    const WHAT: &'static str = "a DataWorks message";

    fn field<A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error> {
        match name {
            "schema" => self.schema = map.next_value::<Option<Object<Schema<'de>>>>()?.map(|o| o.0),
            "payload" => self.payload = map.next_value::<Option<Object<Payload<'de>>>>()?.map(|o| o.0),
            _ => {
                map.next_value::<Checked>()?;
            }
        }
        Ok(())
    }
}

/// The op of a message as the pairing sees it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Code {
    Insert,
    Delete,
    Before,
    After,
    /// Any other op (DDL, control): Python's, and it leaves no half pending.
    Other,
}

/// A row message read natively: everything the writers need.
struct Event<'a> {
    code: Code,
    seq: Option<Cow<'a, str>>,
    db_type: Option<Cow<'a, str>>,
    database: Option<Cow<'a, str>>,
    schema: Option<Cow<'a, str>>,
    table: Option<Cow<'a, str>>,
    pk: Vec<Cow<'a, str>>,
    /// The declared columns: name and DataWorks type, in order.
    declared: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    before: Option<Cells<'a>>,
    after: Option<Cells<'a>>,
    es: i64,
    ts: Option<i64>,
}

/// What reading a message tells: its op code when known, and the event when the plan reads it.
struct Read<'a> {
    code: Option<Code>,
    event: Option<Event<'a>>,
}

fn read(value: &[u8]) -> Read<'_> {
    let Some(m) = parse::<Message>(value) else { return Read { code: None, event: None } };
    let Some(payload) = m.payload else { return Read { code: None, event: None } };
    let code = match payload.op.as_deref() {
        Some("INSERT") => Code::Insert,
        Some("DELETE") => Code::Delete,
        Some("UPDATE_BEFOR") => Code::Before,
        Some("UPDATE_AFTER") => Code::After,
        Some(_) => Code::Other,
        None => return Read { code: None, event: None },
    };
    let event = event(code, m.schema, payload);
    Read { code: Some(code), event }
}

fn event<'a>(code: Code, schema: Option<Schema<'a>>, payload: Payload<'a>) -> Option<Event<'a>> {
    if code == Code::Other || payload.bad_scn {
        return None;
    }
    let seq = match payload.seq {
        Sequence::Absent => None,
        Sequence::Id(s) => Some(s),
        Sequence::Other => return None,
    };
    let stamps = payload.stamps?;
    // A negative or missing event time: Python writes it otherwise (null, 0); a negative
    // processing time is none (Canal's ``ts`` is then the current time, on both paths).
    let (es, ts) = (stamps.event.filter(|t| *t >= 0)?, stamps.system.filter(|t| *t >= 0));
    let image = |h: Option<Holder<'a>>| -> Option<Option<Cells<'a>>> {
        match h.and_then(|h| h.image) {
            None => Some(None),
            Some(Image(cells)) => Some(Some(cells?)),
        }
    };
    let (before, after) = (image(payload.before)?, image(payload.after)?);
    let (before, after) = match code {
        Code::Insert if before.is_none() && after.is_some() => (None, after),
        Code::Delete if after.is_none() && before.is_some() => (before, None),
        Code::Before if after.is_none() && before.is_some() => (before, None),
        Code::After if after.is_some() => (before, after),
        _ => return None,
    };
    let schema = schema?;
    let source = schema.source.unwrap_or_default();
    let mut declared = Vec::new();
    for c in schema.columns? {
        let c = c.0;
        declared.push((c.name?, c.kind?));
    }
    if declared.is_empty() || declared.iter().enumerate().any(|(n, (k, _))| declared[..n].iter().any(|(j, _)| j == k)) {
        return None;
    }
    Some(Event {
        code,
        seq,
        db_type: source.db_type,
        database: source.database,
        schema: source.schema,
        table: source.table,
        pk: schema.pk.unwrap_or_default().into_iter().map(|t| t.0).collect(),
        declared,
        before,
        after,
        es,
        ts,
    })
}

/// A table layout: ``dbType``, database, schema, table, key names, each column's name,
/// DataWorks type and MySQL type.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Layout {
    source: [Option<String>; 4],
    pk: Vec<String>,
    columns: Vec<(String, String, String)>,
}

/// The DataWorks types with their MySQL type without a catalog (DOUBLE: see ``column_type``).
fn mysql_type(dw: &str) -> Option<&'static str> {
    Some(match dw {
        "LONG" => "bigint",
        "DOUBLE" => "double",
        "STRING" => "longtext",
        "DATE" => "datetime(3)",
        "BYTES" => "longblob",
        "BOOLEAN" => "bit(1)",
        _ => return None,
    })
}

/// The digits after the point of a plain decimal text (``-?D+(.D+)?`` without leading
/// zeros), or ``None`` (Python's: exponents, signs, spaces, underscores, leading zeros).
fn decimal_scale(text: &str) -> Option<usize> {
    let body = text.strip_prefix('-').unwrap_or(text);
    let (whole, frac) = body.split_once('.').unwrap_or((body, ""));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || (body.contains('.') && !digits(frac)) || (whole.len() > 1 && whole.starts_with('0')) {
        return None;
    }
    if text.starts_with('-') && body.bytes().all(|b| matches!(b, b'0' | b'.')) {
        return None; // a negative zero
    }
    (frac.len() <= 30 && whole.len() + 30 <= 65).then_some(frac.len())
}

/// Each declared column's MySQL type as Python types it from the images (a DOUBLE with a
/// string value: ``decimal(65, widest scale)``), or ``None`` (Python's): values not of
/// their declared type, undeclared columns, images not naming the declared columns in order.
fn column_types(declared: &[(Cow<str>, Cow<str>)], images: [Option<&Cells>; 2]) -> Option<Vec<String>> {
    let mut types: Vec<String> = Vec::with_capacity(declared.len());
    for (_, dw) in declared {
        types.push(mysql_type(dw)?.to_owned());
    }
    let mut scales: Vec<Option<usize>> = vec![None; declared.len()];
    for image in images.into_iter().flatten() {
        if image.len() != declared.len() {
            return None;
        }
        for (n, ((name, v), (declared, dw))) in image.iter().zip(declared).enumerate() {
            if name != declared {
                return None;
            }
            let fits = match (dw.as_ref(), v.kind) {
                (_, Kind::Null) => true,
                ("LONG", Kind::Int) => !v.raw.starts_with("-0"),
                ("DATE", Kind::Int) => true,
                ("DOUBLE", Kind::Float) => true,
                ("DOUBLE", Kind::Str) => {
                    let scale = decimal_scale(v.text.as_deref()?)?;
                    scales[n] = Some(scales[n].map_or(scale, |s| s.max(scale)));
                    true
                }
                ("STRING" | "BYTES", Kind::Str) => true,
                ("BOOLEAN", Kind::Bool) => true,
                _ => false,
            };
            if !fits {
                return None;
            }
        }
    }
    for (n, scale) in scales.iter().enumerate() {
        if let Some(scale) = scale {
            types[n] = format!("decimal(65,{scale})");
        }
    }
    // A DOUBLE typed decimal holds only texts (a number there: Python converts it).
    for image in images.into_iter().flatten() {
        for (n, (_, v)) in image.iter().enumerate() {
            if scales[n].is_some() && v.kind == Kind::Float {
                return None;
            }
        }
    }
    Some(types)
}

/// The zone DATE values are shown in (``source_timezone``), if the plan converts them.
#[derive(Clone, Copy)]
pub(crate) enum Zone {
    Utc,
    Tz(chrono_tz::Tz),
    /// Zone databases that disagree: non-null DATE values are Python's.
    Python,
}

impl Zone {
    pub fn of(name: Option<&str>) -> Zone {
        match name {
            Some("UTC") => Zone::Utc,
            Some(name) => name.parse().map_or(Zone::Python, Zone::Tz),
            None => Zone::Python,
        }
    }

    /// ``wall_clock(ms * 1000, zone)`` (``None``: outside the years the plan converts).
    pub fn wall(self, ms: i64) -> Option<chrono::NaiveDateTime> {
        use chrono::{Datelike, TimeZone};
        let utc = chrono::DateTime::from_timestamp_millis(ms)?;
        let (wall, years) = match self {
            Zone::Utc => (utc.naive_utc(), 1..=9999),
            Zone::Tz(tz) => (tz.from_utc_datetime(&utc.naive_utc()).naive_local(), 1901..=2037),
            Zone::Python => return None,
        };
        years.contains(&wall.year()).then_some(wall)
    }

    /// The wall clock as Canal's ``YYYY-MM-DD HH:MM:SS.fff``.
    fn text(self, ms: i64) -> Option<String> {
        self.wall(ms).map(|wall| wall.format("%Y-%m-%d %H:%M:%S%.3f").to_string())
    }
}

/// A value's Canal text for its column's conversion (``None`` inside: null; outer ``None``:
/// Python's).
fn cell_text<'b>(dw: &str, v: &'b Value, zone: Zone) -> Option<Option<Cow<'b, str>>> {
    let Some(text) = v.text.as_deref() else { return Some(None) };
    Some(Some(match dw {
        "DATE" => Cow::Owned(zone.text(text.parse().ok()?)?),
        "BYTES" => {
            use base64::Engine;
            let bytes = base64::engine::general_purpose::STANDARD.decode(text).ok()?;
            Cow::Owned(bytes.into_iter().map(char::from).collect())
        }
        _ => Cow::Borrowed(text),
    }))
}

/// An image as the Canal row the writers read.
fn text_row<'b>(declared: &[(Cow<str>, Cow<str>)], image: &'b Cells, zone: Zone) -> Option<canal::Row<'b>> {
    let mut row = Vec::with_capacity(image.len());
    for ((name, v), (_, dw)) in image.iter().zip(declared) {
        row.push((Cow::Borrowed(name.as_ref()), cell_text(dw, v, zone)?));
    }
    Some(canal::Row(row))
}

/// The reader: its compiler, the codec (``holds_half()``), the zone of DATE values, the
/// tables and the batch's pairing state.
pub(crate) struct Reader {
    compile: PyObject,
    codec: PyObject,
    zone: Zone,
    tables: Tables<Layout>,
    /// Inside ``convert``: the index of the current record and the next record's value.
    batch: Option<(usize, Option<Py<PyBytes>>)>,
    /// Where the batch went to Python (from there on every record is Python's).
    pub closed_at: Option<usize>,
    /// A pair's records, written when the before-half was read, given with the after-half.
    stash: Option<Vec<Output>>,
}

impl Reader {
    pub fn new(compile: PyObject, codec: PyObject, zone: Zone) -> Reader {
        Reader { compile, codec, zone, tables: Tables::new(), batch: None, closed_at: None, stash: None }
    }

    pub fn clear(&mut self) {
        self.tables.clear();
    }

    /// A batch starts: closed from its start when Python holds a half.
    pub fn begin(&mut self, py: Python) -> PyResult<()> {
        let holds: bool = self.codec.bind(py).call_method0("holds_half")?.extract()?;
        self.closed_at = holds.then_some(0);
        self.stash = None;
        self.batch = Some((0, None));
        Ok(())
    }

    /// The batch's record ``i`` is next, ``next`` the one after it.
    pub fn at(&mut self, i: usize, next: Option<Py<PyBytes>>) {
        self.batch = Some((i, next));
    }

    pub fn end(&mut self) {
        self.batch = None;
        self.stash = None;
    }

    /// The layout's table for the plan's writer (``None``: Python's).
    fn table(&mut self, py: Python, e: &Event, types: &[String], encoder: &Encoder) -> PyResult<Option<std::sync::Arc<Table>>> {
        let compile = &self.compile;
        let own = |c: &Option<Cow<str>>| c.as_deref().map(str::to_owned);
        let same = |a: &Option<String>, b: &Option<Cow<str>>| a.as_deref() == b.as_deref();
        self.tables.get(
            |l| {
                same(&l.source[0], &e.db_type)
                    && same(&l.source[1], &e.database)
                    && same(&l.source[2], &e.schema)
                    && same(&l.source[3], &e.table)
                    && l.pk.len() == e.pk.len()
                    && l.pk.iter().zip(&e.pk).all(|(a, b)| a == b)
                    && l.columns.len() == e.declared.len()
                    && l.columns.iter().zip(&e.declared).zip(types).all(|(((n, dw, t), (en, edw)), et)| n == en && dw == edw && t == et)
            },
            || Layout {
                source: [own(&e.db_type), own(&e.database), own(&e.schema), own(&e.table)],
                pk: e.pk.iter().map(|k| k.to_string()).collect(),
                columns: e.declared.iter().zip(types).map(|((n, dw), t)| (n.to_string(), dw.to_string(), t.clone())).collect(),
            },
            |l| writer_table(&compile.bind(py).call1((l.source.clone(), l.pk.clone(), l.columns.clone()))?, encoder),
        )
    }
}

/// Do two halves name the same table and columns (the writer's table is the after-half's)?
fn same_layout(a: &Event, b: &Event) -> bool {
    a.db_type == b.db_type && a.database == b.database && a.schema == b.schema && a.table == b.table && a.pk == b.pk && a.declared == b.declared
}

impl CanalToDebezium {
    /// One DataWorks message into ``out``; ``false`` when Python must process it.
    pub(crate) fn dataworks_message(&mut self, py: Python, value: &[u8], out: &mut Vec<Output>) -> PyResult<bool> {
        let PlanReader::DataWorks(reader) = &mut self.reader else { return Ok(false) };
        let Some((i, next)) = reader.batch.as_ref().map(|(i, n)| (*i, n.as_ref().map(|b| b.clone_ref(py)))) else {
            return Ok(false); // outside a batch (the Arrow path): the pairing is Python's
        };
        if let Some(stash) = reader.stash.take() {
            out.extend(stash); // the after-half of the pair read with its before-half
            return Ok(true);
        }
        if reader.closed_at.is_some() {
            return Ok(false);
        }
        // Until decided, the record is where the batch goes to Python (also on a panic).
        reader.closed_at = Some(i);
        let first = if value.len() > self.max_message_bytes { Read { code: None, event: None } } else { read(value) };
        let leaves_no_half = matches!(first.code, Some(Code::Insert | Code::Delete | Code::After | Code::Other));
        let handled = match (first.code, first.event) {
            (Some(Code::Before), Some(half)) => {
                let next = next.as_ref().map(|b| b.bind(py).as_bytes());
                let after = next.filter(|v| v.len() <= self.max_message_bytes).map(read);
                match after.and_then(|r| r.event) {
                    Some(after) if after.code == Code::After && after.before.is_none() && half.seq.is_some() && after.seq == half.seq && same_layout(&half, &after) => {
                        let mut pair = Vec::new();
                        let written = self.dataworks_write(py, &after, half.before.as_ref(), &mut pair)?;
                        if written {
                            let PlanReader::DataWorks(reader) = &mut self.reader else { return Ok(false) };
                            reader.stash = Some(pair);
                        }
                        written
                    }
                    _ => false,
                }
            }
            (Some(Code::After), Some(e)) if e.before.is_none() => false, // a lone after-half: Python's
            (Some(_), Some(e)) => self.dataworks_write(py, &e, e.before.as_ref(), out)?,
            _ => false,
        };
        let PlanReader::DataWorks(reader) = &mut self.reader else { return Ok(false) };
        if handled || leaves_no_half {
            reader.closed_at = None;
        }
        Ok(handled)
    }

    /// The records of event ``e`` (``before``: an update's before-image, the half's when
    /// paired) into ``out``; ``false`` (nothing written) when Python must write them.
    fn dataworks_write(&mut self, py: Python, e: &Event, before: Option<&Cells>, out: &mut Vec<Output>) -> PyResult<bool> {
        let PlanReader::DataWorks(reader) = &mut self.reader else { return Ok(false) };
        let zone = reader.zone;
        let op = match e.code {
            Code::Insert => 0,
            Code::Delete => 2,
            _ => 1,
        };
        let main = if op == 2 { before } else { e.after.as_ref() };
        let Some(types) = column_types(&e.declared, [before, e.after.as_ref()]) else { return Ok(false) };
        if op == 1 && (before.is_none() || e.after.is_none()) {
            return Ok(false);
        }
        let Some(table) = reader.table(py, e, &types, &self.encoder)? else { return Ok(false) };
        let Some(row) = main.and_then(|image| text_row(&e.declared, image, zone)) else { return Ok(false) };
        let old = match (op, before) {
            (1, Some(b)) => match text_row(&e.declared, b, zone) {
                Some(r) => Some(vec![r]),
                None => return Ok(false),
            },
            _ => None,
        };
        let m = canal::Message {
            data: Some(vec![row]),
            old,
            database: e.database.as_deref().map(Cow::Borrowed),
            table: e.table.as_deref().map(Cow::Borrowed),
            es: Some(e.es),
            // Canal's ``ts``: Python's current time when the event has no processing time.
            ts: if matches!(self.encoder, Encoder::Canal { .. }) { e.ts.or_else(now_ms) } else { e.ts },
            pk_names: Some(e.pk.iter().map(|n| Cow::Borrowed(n.as_ref())).collect()),
            seen: FIELD_DATABASE | FIELD_TABLE | FIELD_ES | FIELD_TS | FIELD_PK_NAMES | if op == 1 { FIELD_OLD } else { 0 },
            ..Default::default()
        };
        Ok(self.write_event(&table, op, &m, || main.and_then(|image| canal_key(&e.pk, image)), out))
    }
}
