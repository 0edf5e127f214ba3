//! The DTS Avro reader: a dts-avro row record read as ``DtsAvro.decode`` reads it, each
//! value handed to the plan's writer as the Canal text its conversion reads.
//!
//! The record's layout is fixed (``schemas/dts-avro.avsc``), so its Avro binary encoding is
//! read by hand, as ``dts_avro_out`` writes it by hand: zig-zag varints, length-prefixed
//! strings and bytes, union indexes, arrays and maps in blocks, the optional trailing
//! ``bornTimestamp``. That module's comment has the measurement against the ``apache-avro``
//! crate's writer (43x slower than by hand); its datum reader builds the same ``Value`` tree
//! (a ``String`` per field name, a ``Box`` per union) and was not measured separately. Read
//! by hand, a record borrows its strings and bytes from the message.
//!
//! Without a catalog the Python decoder types the columns from their MySQL type codes
//! (``dataTypeNumber``), refined by the values (``infer_column_type``): an integer above
//! the signed range makes the column unsigned, a binary ``Character`` or a non-TEXT
//! ``BinaryObject`` the binary variant, a ``Decimal`` its precision and scale. So a table
//! layout is (source type, database, table, key names, each column's name, code and type
//! text); per layout Python compiles the writer's table once (``transforms/native_dts_in.py``)
//! from a probe record the chain's own decoder reads, and checks the types it infers.
//!
//! Natively: INSERT, UPDATE and DELETE records of MySQL (and DRDS) sources, ``objectName``
//! ``db.table``, the key from ``tags["pk_uk_info"]``; values as ``DtsValues.to_python``
//! types them: ``Integer`` (canonical decimal text), ``Decimal``, ``Float`` (DOUBLE),
//! ``Character`` (UTF-8 charsets; any known charset in a binary column), ``BinaryObject``,
//! ``TextObject``, ``DateTime`` (DATE, DATETIME, TIME, YEAR: valid parts only),
//! ``Timestamp`` (non-zero, years 1-9999, written as its UTC wall clock). To Python: DDL,
//! BEGIN/COMMIT, heartbeats and the other operations, other sources, ``NONE`` (partial
//! images), geometry, zoned timestamps, zero or impossible dates, single-precision FLOAT,
//! unknown type codes, repeated columns, anything malformed (truncated, a wrong union
//! branch or enum symbol, trailing bytes) -- Python words the dead letter.

use std::borrow::Cow;
use std::sync::Arc;

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use pyo3::prelude::*;

use crate::canal::{self, FIELD_DATABASE, FIELD_ES, FIELD_OLD, FIELD_PK_NAMES, FIELD_TABLE, FIELD_TS};
use crate::json;
use crate::typed_in::{now_ms, write_canal_keyed, writer_table, Tables};
use crate::{canal_out, dts_avro_self, CanalToDebezium, Encoder, OpEntry, Output, Reader as PlanReader, Table};

/// A cursor over a record's bytes; every read is ``None`` past the end or when malformed.
struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    /// Avro ``long``: a zig-zag varint of at most 64 bits.
    fn long(&mut self) -> Option<i64> {
        let mut z: u64 = 0;
        for shift in (0..70).step_by(7) {
            let byte = *self.b.get(self.i)?;
            self.i += 1;
            if shift == 63 && byte > 1 {
                return None; // past 64 bits
            }
            z |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some((z >> 1) as i64 ^ -((z & 1) as i64));
            }
        }
        None
    }

    fn int(&mut self) -> Option<i32> {
        i32::try_from(self.long()?).ok()
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.long()?).ok()?;
        let out = self.b.get(self.i..self.i.checked_add(n)?)?;
        self.i += n;
        Some(out)
    }

    fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes()?).ok()
    }

    fn double(&mut self) -> Option<f64> {
        let raw = self.b.get(self.i..self.i + 8)?;
        self.i += 8;
        Some(f64::from_le_bytes(raw.try_into().ok()?))
    }

    /// A union's branch index, below ``n``.
    fn branch(&mut self, n: i64) -> Option<i64> {
        Some(self.long()?).filter(|b| (0..n).contains(b))
    }

    /// The item count of the next array or map block (``0``: the end).
    fn block(&mut self) -> Option<usize> {
        let n = self.long()?;
        if n < 0 {
            self.long()?; // the block's size in bytes
        }
        usize::try_from(n.unsigned_abs()).ok()
    }

    /// An array (or map) read in its blocks, ``item`` by ``item``.
    fn items<T>(&mut self, mut item: impl FnMut(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        let mut out = Vec::new();
        loop {
            let n = self.block()?;
            if n == 0 {
                return Some(out);
            }
            for _ in 0..n {
                out.push(item(self)?);
            }
        }
    }
}

/// One image value, as the union branch it was written in.
#[derive(Clone, Copy)]
pub(crate) enum Raw<'a> {
    /// ``null`` or ``EmptyObject`` ``NULL``.
    Null,
    Integer(i32, &'a str),
    Character(&'a str, &'a [u8]),
    Decimal(&'a str, i32, i32),
    Float(f64, i32, i32),
    Timestamp(i64, i32),
    DateTime([Option<i32>; 7]),
    BinaryObject(&'a str, &'a [u8]),
    TextObject(&'a str, &'a str),
}

/// One value of an image, or ``None`` (Python's: ``NONE``, geometry, zoned timestamps, malformed).
fn value<'a>(c: &mut Cursor<'a>) -> Option<Raw<'a>> {
    Some(match c.branch(13)? {
        0 => Raw::Null,
        1 => Raw::Integer(c.int()?, c.str()?),
        2 => Raw::Character(c.str()?, c.bytes()?),
        3 => Raw::Decimal(c.str()?, c.int()?, c.int()?),
        4 => Raw::Float(c.double()?, c.int()?, c.int()?),
        5 => Raw::Timestamp(c.long()?, c.int()?),
        6 => {
            let mut parts = [None; 7];
            for p in &mut parts {
                *p = match c.branch(2)? {
                    0 => None,
                    _ => Some(c.int()?),
                };
            }
            Raw::DateTime(parts)
        }
        10 => Raw::BinaryObject(c.str()?, c.bytes()?),
        11 => Raw::TextObject(c.str()?, c.str()?),
        12 => match c.branch(2)? {
            0 => Raw::Null,
            _ => return None, // NONE: a partial image, Python's
        },
        _ => return None, // TimestampWithTimeZone, BinaryGeometry, TextGeometry
    })
}

/// ``beforeImages``/``afterImages``: ``Some(None)`` null, ``Some(Some(values))`` an array;
/// ``None`` a string (DDL's statement) or anything Python's.
fn image<'a>(c: &mut Cursor<'a>) -> Option<Option<Vec<Raw<'a>>>> {
    match c.branch(3)? {
        0 => Some(None),
        1 => None,
        _ => Some(Some(c.items(value)?)),
    }
}

/// A row record as ``DtsAvro.decode_message`` reads it (with the fields it keeps as they
/// are for a same-format re-write: ``dts_avro_self``).
pub(crate) struct Record<'a> {
    pub version: i32,
    pub id: i64,
    /// The writers' op index (c, u, d).
    pub op: usize,
    pub source_type: i64,
    pub seconds: i64,
    /// ``sourcePosition``, ``safeSourcePosition``, ``sourceTxid``.
    pub positions: [&'a str; 3],
    pub source_version: &'a str,
    pub born: Option<i64>,
    pub object: &'a str,
    pub process: Option<Vec<i64>>,
    /// ``tags`` in their order (a key read twice: ``dts_avro_self`` leaves it to Python).
    pub tags: Vec<(&'a str, &'a str)>,
    pub pk_info: Option<&'a str>,
    pub fields: Vec<(&'a str, i32)>,
    pub before: Option<Vec<Raw<'a>>>,
    pub after: Option<Vec<Raw<'a>>>,
}

/// ``sourceType`` symbols read natively: MySQL and DRDS (the same to the Python decoder).
const MYSQL: i64 = 0;
const DRDS: i64 = 8;

pub(crate) fn read(value: &[u8]) -> Option<Record<'_>> {
    let c = &mut Cursor { b: value, i: 0 };
    let version = c.int()?;
    let id = c.long()?;
    let seconds = c.long()?;
    let positions = [c.str()?, c.str()?, c.str()?];
    let source_type = c.branch(13)?;
    let source_version = c.str()?;
    let op = match c.branch(17)? {
        0 => 0,
        1 => 1,
        2 => 2,
        _ => return None, // DDL, BEGIN/COMMIT, heartbeats, the other operations
    };
    let object = match c.branch(2)? {
        0 => return None,
        _ => c.str()?,
    };
    let process = match c.branch(2)? {
        0 => None,
        _ => Some(c.items(Cursor::long)?),
    };
    let tags = c.items(|c| Some((c.str()?, c.str()?)))?;
    // the last one, as Python's dict keeps it
    let pk_info = tags.iter().rev().find(|(k, _)| *k == "pk_uk_info").map(|(_, v)| *v);
    let fields = match c.branch(3)? {
        2 => c.items(|c| Some((c.str()?, c.int()?)))?,
        _ => return None,
    };
    let before = image(c)?;
    let after = image(c)?;
    let born = if c.i == value.len() {
        None
    } else {
        let born = c.long()?;
        if c.i != value.len() {
            return None; // trailing bytes
        }
        Some(born)
    };
    Some(Record { version, id, op, source_type, seconds, positions, source_version, born, object, process, tags, pk_info, fields, before, after })
}

/// How a column's values become Canal text (from its type code and, for text, its variant).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Class {
    Int,
    Decimal,
    Double,
    Text,
    Bytes,
    Date,
    DateTime,
    Time,
    Year,
    Timestamp,
    /// Single-precision FLOAT, geometry: a non-null value is Python's.
    Python,
}

/// ``CODE_TYPES``: the type text and class of a MySQL type code (``None``: Python's).
fn code_type(code: i32) -> Option<(&'static str, Class)> {
    Some(match code {
        0 | 246 => ("decimal(65,30)", Class::Decimal),
        1 => ("tinyint", Class::Int),
        2 => ("smallint", Class::Int),
        3 => ("int", Class::Int),
        4 => ("float", Class::Python),
        5 => ("double", Class::Double),
        6 | 251 => ("longtext", Class::Text),
        7 | 17 => ("timestamp(6)", Class::Timestamp),
        8 => ("bigint", Class::Int),
        9 => ("mediumint", Class::Int),
        10 | 14 => ("date", Class::Date),
        11 | 19 => ("time(6)", Class::Time),
        12 | 18 => ("datetime(6)", Class::DateTime),
        13 => ("year", Class::Year),
        15 | 253 => ("varchar(65535)", Class::Text),
        16 => ("bit(64)", Class::Int),
        245 => ("json", Class::Text),
        247 => ("enum", Class::Text),
        248 => ("set", Class::Text),
        249 => ("tinytext", Class::Text),
        250 => ("mediumtext", Class::Text),
        252 => ("text", Class::Text),
        254 => ("char(255)", Class::Text),
        255 => ("geometry", Class::Python),
        _ => return None,
    })
}

/// ``_BINARY_VARIANT``.
fn binary_variant(text: &str) -> Option<&'static str> {
    Some(match text {
        "tinytext" => "tinyblob",
        "mediumtext" => "mediumblob",
        "longtext" => "longblob",
        "text" => "blob",
        "varchar(65535)" => "varbinary(65535)",
        "char(255)" => "binary(255)",
        _ => return None,
    })
}

/// ``_SIGNED_MAX``.
fn signed_max(text: &str) -> Option<i128> {
    Some(match text {
        "tinyint" => 127,
        "smallint" => 32767,
        "mediumint" => 8388607,
        "int" => 2147483647,
        "bigint" => 9223372036854775807,
        _ => return None,
    })
}

/// ``-?(0|[1-9][0-9]*)`` within 38 digits: the integer texts ``int()`` reads as written.
fn canonical_int(s: &str) -> Option<i128> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let ok = !digits.is_empty()
        && digits.len() <= 38
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && s != "-0";
    if ok {
        s.parse().ok()
    } else {
        None
    }
}

/// A column's type text and class as ``infer_column_type`` types it from its code and its
/// values in both images (MySQL sources), or ``None`` (Python's).
fn column_type(code: i32, values: &[Raw]) -> Option<(Cow<'static, str>, Class)> {
    let (text, class) = code_type(code)?;
    let first = values.iter().find(|v| !matches!(v, Raw::Null));
    if let Some(variant) = binary_variant(text) {
        let binary = match first {
            Some(Raw::Character(charset, _)) => charset.to_lowercase() == "binary",
            Some(Raw::BinaryObject(kind, _)) => kind.to_uppercase() != "TEXT",
            _ => false,
        };
        if binary {
            return Some((Cow::Borrowed(variant), Class::Bytes));
        }
    }
    if let (Some(Raw::Decimal(_, p, s)), Class::Decimal) = (first, class) {
        let (p, s) = (*p, *s);
        if 0 < p && p <= 65 && 0 <= s && s <= p.min(30) {
            return Some((Cow::Owned(format!("decimal({p},{s})")), class));
        }
    }
    if let Some(max) = signed_max(text) {
        let mut biggest = 0;
        for v in values {
            if let Raw::Integer(_, t) = v {
                biggest = biggest.max(canonical_int(t)?);
            }
        }
        if biggest > max {
            return Some((Cow::Owned(format!("{text} unsigned")), class));
        }
    }
    Some((Cow::Borrowed(text), class))
}

/// Charsets whose text is UTF-8 (``_decode_chars``), and the ones ``_check_value`` knows.
fn utf8_charset(charset: &str) -> bool {
    matches!(charset.to_lowercase().as_str(), "utf8" | "utf8mb3" | "utf8mb4" | "utf-8")
}

/// The ISO-8859-1 text of bytes (one char per byte: the Canal text of a binary value).
fn latin1(raw: &[u8]) -> String {
    raw.iter().map(|&b| b as char).collect()
}

fn datetime_text(d: NaiveDateTime) -> Option<String> {
    let year = d.year();
    if !(1..=9999).contains(&year) {
        return None;
    }
    Some(format!("{year:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:06}", d.month(), d.day(), d.hour(), d.minute(), d.second(), d.nanosecond() / 1000))
}

fn date_of(y: i32, m: i32, d: i32) -> Option<NaiveDate> {
    if !(1..=9999).contains(&y) {
        return None;
    }
    NaiveDate::from_ymd_opt(y, u32::try_from(m).ok()?, u32::try_from(d).ok()?)
}

/// A value as the Canal text of its column's conversion (``Some(None)``: NULL), or ``None``
/// (Python's) when ``DtsValues.to_python`` would type it otherwise or not for certain.
fn text<'a>(class: Class, v: &Raw<'a>) -> Option<Option<Cow<'a, str>>> {
    let out: Cow<'a, str> = match (class, *v) {
        (_, Raw::Null) => return Some(None),
        (Class::Int, Raw::Integer(_, t)) => {
            canonical_int(t)?;
            Cow::Borrowed(t)
        }
        (Class::Decimal, Raw::Decimal(t, _, _)) => Cow::Borrowed(t),
        (Class::Double, Raw::Float(f, _, _)) if f.is_finite() => Cow::Owned(format!("{f:?}")),
        (Class::Text, Raw::Character(charset, raw)) if utf8_charset(charset) => Cow::Borrowed(std::str::from_utf8(raw).ok()?),
        (Class::Text, Raw::BinaryObject(_, raw)) => Cow::Borrowed(std::str::from_utf8(raw).ok()?),
        (Class::Text, Raw::TextObject(_, t)) => Cow::Borrowed(t),
        (Class::Bytes, Raw::Character(charset, raw)) if charset.to_lowercase() == "binary" || utf8_charset(charset) => Cow::Owned(latin1(raw)),
        (Class::Bytes, Raw::BinaryObject(_, raw)) => Cow::Owned(latin1(raw)),
        (Class::Timestamp, Raw::Timestamp(seconds, micros)) if (seconds, micros) != (0, 0) => {
            let us = i128::from(seconds) * 1_000_000 + i128::from(micros);
            let utc = DateTime::from_timestamp_micros(i64::try_from(us).ok()?)?;
            Cow::Owned(datetime_text(utc.naive_utc())?)
        }
        (Class::Date, Raw::DateTime([Some(y), Some(m), Some(d), ..])) => {
            let date = date_of(y, m, d)?;
            Cow::Owned(format!("{:04}-{:02}-{:02}", date.year(), date.month(), date.day()))
        }
        (Class::DateTime, Raw::DateTime([Some(y), Some(mo), Some(d), Some(h), mi, s, f])) => {
            let micros = u32::try_from(f.unwrap_or(0)).ok().filter(|f| *f < 1_000_000)?;
            let time = NaiveTime::from_hms_micro_opt(u32::try_from(h).ok()?, u32::try_from(mi.unwrap_or(0)).ok()?, u32::try_from(s.unwrap_or(0)).ok()?, micros)?;
            Cow::Owned(datetime_text(NaiveDateTime::new(date_of(y, mo, d)?, time))?)
        }
        (Class::Time, Raw::DateTime([_, _, _, h, mi, s, f])) => {
            let part = |p: Option<i32>| i64::from(p.unwrap_or(0));
            let us = ((part(h) * 60 + part(mi)) * 60 + part(s)) * 1_000_000 + part(f);
            let abs = us.unsigned_abs();
            let (secs, frac) = (abs / 1_000_000, abs % 1_000_000);
            let sign = if us < 0 { "-" } else { "" };
            Cow::Owned(format!("{sign}{:02}:{:02}:{:02}.{frac:06}", secs / 3600, secs / 60 % 60, secs % 60))
        }
        (Class::Year, Raw::DateTime([Some(y), ..])) => Cow::Owned(y.to_string()),
        _ => return None,
    };
    Some(Some(out))
}

/// A column of a record's layout: name, type code, type text.
type LayoutColumn = (String, i32, Cow<'static, str>);

/// A table layout: source type, database, table, key names, the columns.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct Layout {
    source_type: i64,
    database: String,
    table: String,
    pk: Vec<String>,
    columns: Vec<LayoutColumn>,
}

/// A record read for the writers: its layout's parts and its images as Canal texts.
pub(crate) struct Event<'a> {
    pub op: usize,
    source_type: i64,
    pub database: Cow<'a, str>,
    pub table: Cow<'a, str>,
    pk: Vec<String>,
    /// Each column's code, type text and name.
    columns: Vec<(&'a str, i32, Cow<'static, str>)>,
    before: Option<canal::Row<'a>>,
    after: Option<canal::Row<'a>>,
    /// The row's values as read (the after-image, a delete's before-image): Python's Canal
    /// key holds them as they are.
    raws: Vec<Raw<'a>>,
    es: Option<i64>,
}

impl Layout {
    pub fn of(e: &Event) -> Layout {
        Layout {
            source_type: e.source_type,
            database: e.database.to_string(),
            table: e.table.to_string(),
            pk: e.pk.clone(),
            columns: e.columns.iter().map(|(n, c, t)| ((*n).to_owned(), *c, t.clone())).collect(),
        }
    }

    /// ``compile``'s arguments: ``(source_type, database, table, key_names, [(column, code, type)])``.
    pub fn compile(&self, py: Python, compile: &PyObject) -> PyResult<PyObject> {
        let columns: Vec<(&str, i32, &str)> = self.columns.iter().map(|(n, c, t)| (n.as_str(), *c, t.as_ref())).collect();
        compile.call1(py, (self.source_type, &self.database, &self.table, self.pk.clone(), columns))
    }

    pub fn matches(&self, e: &Event) -> bool {
        self.source_type == e.source_type
            && self.database == e.database
            && self.table == e.table
            && self.pk == e.pk
            && self.columns.len() == e.columns.len()
            && self.columns.iter().zip(&e.columns).all(|((n, c, t), (en, ec, et))| n == en && c == ec && t == et)
    }
}

/// ``tags["pk_uk_info"]``'s ``PRIMARY`` names, or ``None`` (Python's) when the text is not
/// an object of string lists (Python's ``orjson`` may read, or reject, it otherwise).
fn primary_key(info: Option<&str>) -> Option<Vec<String>> {
    let Some(text) = info.filter(|t| !t.is_empty()) else { return Some(Vec::new()) };
    let map: std::collections::HashMap<String, Vec<String>> = serde_json::from_str(text).ok()?;
    Some(map.get("PRIMARY").cloned().unwrap_or_default())
}

/// ``unescape_name``.
fn unescape(name: &str) -> Cow<'_, str> {
    if name.contains("\\u002") {
        Cow::Owned(name.replace("\\u002E", ".").replace("\\u002e", "."))
    } else {
        Cow::Borrowed(name)
    }
}

/// One column of an image: its name and Canal text (``None``: NULL).
type Cell<'a> = (Cow<'a, str>, Option<Cow<'a, str>>);

/// A record's row event, or ``None`` (Python's).
fn event(value: &[u8]) -> Option<Event<'_>> {
    event_of(&read(value)?)
}

/// The row event of a record read, or ``None`` (Python's).
pub(crate) fn event_of<'a>(r: &Record<'a>) -> Option<Event<'a>> {
    if r.source_type != MYSQL && r.source_type != DRDS {
        return None;
    }
    let mut parts = r.object.split('.');
    let (database, table) = (parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None; // a database alone, or a schema too
    }
    let n = r.fields.len();
    let needed = [r.op != 0, r.op != 2];
    for (image, needed) in [&r.before, &r.after].into_iter().zip(needed) {
        match image {
            Some(values) if values.len() != n => return None,
            None if needed => return None,
            _ => {}
        }
    }
    let mut columns = Vec::with_capacity(n);
    let mut samples = Vec::with_capacity(2);
    let mut rows: [Vec<Cell>; 2] = [Vec::new(), Vec::new()];
    for (i, (name, code)) in r.fields.iter().enumerate() {
        if r.fields[..i].iter().any(|(other, _)| other == name) {
            return None; // a repeated column: Python's dict keeps one
        }
        samples.clear();
        samples.extend([&r.before, &r.after].into_iter().flatten().map(|values| values[i]));
        let (type_text, class) = column_type(*code, &samples)?;
        for (image, row) in [&r.before, &r.after].into_iter().zip(rows.iter_mut()) {
            if let Some(values) = image {
                row.push((Cow::Borrowed(*name), text(class, &values[i])?));
            }
        }
        columns.push((*name, *code, type_text));
    }
    let [before, after] = rows;
    let (has_before, has_after) = (r.before.is_some(), r.after.is_some());
    let raws = if r.op == 2 { &r.before } else { &r.after }.clone().unwrap_or_default();
    let seconds = r.seconds;
    let es = match r.born {
        Some(born) if born != 0 && seconds.checked_mul(1000).is_some_and(|ms| ms <= born && born < ms + 1000) => Some(born),
        _ if seconds != 0 => Some(seconds.checked_mul(1000)?),
        _ => None,
    };
    Some(Event {
        op: r.op,
        source_type: r.source_type,
        database: unescape(database),
        table: unescape(table),
        pk: primary_key(r.pk_info)?,
        columns,
        before: has_before.then_some(canal::Row(before)),
        after: has_after.then_some(canal::Row(after)),
        raws,
        es,
    })
}

/// A value as orjson writes the raw union value Python holds (``(record name, fields)``,
/// bytes in base64 by ``json_default``).
fn write_raw(out: &mut Vec<u8>, v: &Raw) {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;
    let int = |out: &mut Vec<u8>, n: Option<i32>| match n {
        Some(n) => json::write_int(out, n),
        None => out.extend_from_slice(b"null"),
    };
    let record = |out: &mut Vec<u8>, name: &str| {
        out.extend_from_slice(b"[\"com.alibaba.dts.formats.avro.");
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\",{");
    };
    let precision_scale = |out: &mut Vec<u8>, precision: i32, scale: i32| {
        out.extend_from_slice(b",\"precision\":");
        json::write_int(out, precision);
        out.extend_from_slice(b",\"scale\":");
        json::write_int(out, scale);
    };
    let field = |out: &mut Vec<u8>, name: &str| {
        json::write_str(out, name);
        out.push(b':');
    };
    match *v {
        Raw::Null => return out.extend_from_slice(b"null"),
        Raw::Integer(precision, value) => {
            record(out, "Integer");
            field(out, "precision");
            json::write_int(out, precision);
            out.push(b',');
            field(out, "value");
            json::write_str(out, value);
        }
        Raw::Character(charset, value) => {
            record(out, "Character");
            field(out, "charset");
            json::write_str(out, charset);
            out.push(b',');
            field(out, "value");
            json::write_str(out, &STANDARD.encode(value));
        }
        Raw::Decimal(value, precision, scale) => {
            record(out, "Decimal");
            field(out, "value");
            json::write_str(out, value);
            precision_scale(out, precision, scale);
        }
        Raw::Float(value, precision, scale) => {
            record(out, "Float");
            field(out, "value");
            json::write_f64(out, value);
            precision_scale(out, precision, scale);
        }
        Raw::Timestamp(seconds, micros) => {
            record(out, "Timestamp");
            field(out, "timestamp");
            json::write_int(out, seconds);
            out.extend_from_slice(b",\"millis\":");
            json::write_int(out, micros);
        }
        Raw::DateTime(parts) => {
            record(out, "DateTime");
            for (n, (name, part)) in ["year", "month", "day", "hour", "minute", "second", "millis"].iter().zip(parts).enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                field(out, name);
                int(out, part);
            }
        }
        Raw::BinaryObject(kind, value) => {
            record(out, "BinaryObject");
            field(out, "type");
            json::write_str(out, kind);
            out.extend_from_slice(b",\"value\":");
            json::write_str(out, &STANDARD.encode(value));
        }
        Raw::TextObject(kind, value) => {
            record(out, "TextObject");
            field(out, "type");
            json::write_str(out, kind);
            out.extend_from_slice(b",\"value\":");
            json::write_str(out, value);
        }
    }
    out.extend_from_slice(b"}]");
}

/// A row borrowing ``r``'s texts.
fn borrowed<'b>(r: &'b canal::Row<'_>) -> canal::Row<'b> {
    canal::Row(r.0.iter().map(|(k, v)| (Cow::Borrowed(k.as_ref()), v.as_deref().map(Cow::Borrowed))).collect())
}

impl Event<'_> {
    /// The key Python's Canal encoder writes (``key_values``: the key columns' values as
    /// read), or ``None`` (Python's) for a repeated key name.
    fn canal_key(&self) -> Option<Option<Vec<u8>>> {
        if self.pk.is_empty() {
            return Some(None);
        }
        let mut out = Vec::with_capacity(96);
        out.push(b'{');
        for (n, name) in self.pk.iter().enumerate() {
            if self.pk[..n].contains(name) {
                return None;
            }
            if n > 0 {
                out.push(b',');
            }
            json::write_str(&mut out, name);
            out.push(b':');
            match self.columns.iter().position(|(c, _, _)| c == name).and_then(|i| self.raws.get(i)) {
                Some(v) => write_raw(&mut out, v),
                None => out.extend_from_slice(b"null"),
            }
        }
        out.push(b'}');
        Some(Some(out))
    }

    /// The Canal message the writers read: the row (the after-image, a delete's
    /// before-image) and an update's before-image as its ``old`` overlay.
    fn message(&self, ts: Option<i64>) -> canal::Message<'_> {
        let data = if self.op == 2 { self.before.as_ref() } else { self.after.as_ref() };
        canal::Message {
            data: data.map(|r| vec![borrowed(r)]),
            old: if self.op == 1 { self.before.as_ref().map(|r| vec![borrowed(r)]) } else { None },
            database: Some(Cow::Borrowed(self.database.as_ref())),
            table: Some(Cow::Borrowed(self.table.as_ref())),
            es: self.es,
            ts,
            pk_names: Some(self.pk.iter().map(|n| Cow::Borrowed(n.as_str())).collect()),
            seen: FIELD_DATABASE | FIELD_TABLE | FIELD_ES | FIELD_TS | FIELD_PK_NAMES | if self.op == 1 { FIELD_OLD } else { 0 },
            ..Default::default()
        }
    }
}

/// The DTS Avro reader: the compiler and the compiled tables (for the Debezium and Canal
/// writers, or for the same-format re-write: ``same``).
pub(crate) struct Reader {
    pub compile: PyObject,
    tables: Tables<Layout>,
    pub same: dts_avro_self::Tables,
}

impl Reader {
    pub fn new(compile: PyObject) -> Reader {
        Reader { compile, tables: Tables::new(), same: dts_avro_self::Tables::default() }
    }

    pub fn clear(&mut self) {
        self.tables.clear();
        self.same.clear();
    }

    /// The layout's table for the plan's writer (``None``: Python's), compiled once by
    /// ``compile(source_type, database, table, key_names, [(column, code, type)])``.
    fn table(&mut self, py: Python, e: &Event, encoder: &Encoder) -> PyResult<Option<Arc<Table>>> {
        let compile = &self.compile;
        self.tables.get(
            |layout| layout.matches(e),
            || Layout::of(e),
            |layout| writer_table(layout.compile(py, compile)?.bind(py), encoder),
        )
    }
}

impl CanalToDebezium {
    /// One DTS Avro record into ``out``; ``false`` when Python must process it.
    pub(crate) fn dts_message(&mut self, py: Python, value: &[u8], out: &mut Vec<Output>) -> PyResult<bool> {
        let PlanReader::DtsAvro(reader) = &mut self.reader else { return Ok(false) };
        if value.len() > self.max_message_bytes || matches!(self.encoder, Encoder::DtsAvro(_)) {
            // (the same-format re-write needs the record's key: ``dts_avro_self``)
            return Ok(false);
        }
        let Some(e) = event(value) else { return Ok(false) };
        let Some(table) = reader.table(py, &e, &self.encoder)? else { return Ok(false) };
        let start = out.len();
        let written = match (&*table, &self.encoder) {
            (Table::Canal(t), Encoder::Canal { transaction: false }) => match (e.canal_key(), now_ms()) {
                (Some(key), Some(ts)) => write_canal_keyed(t, &e.message(Some(ts)), e.op, key, out),
                _ => matches!(t.ops[e.op], canal_out::Entry::Dropped),
            },
            (Table::Debezium(plan), Encoder::Debezium) => match &plan.ops[e.op] {
                OpEntry::Plan(op_plan) => {
                    let m = e.message(None);
                    let data = m.data.as_deref().unwrap_or_default();
                    let old = m.old.as_deref().unwrap_or_default();
                    data.first().is_some_and(|row| self.row(plan, op_plan, &m, e.op, 0, row, old, out).is_ok())
                }
                OpEntry::Python => false,
                OpEntry::Dropped => true,
            },
            _ => false,
        };
        if !written {
            out.truncate(start);
        }
        Ok(written)
    }
}
