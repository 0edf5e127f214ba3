//! Reading a Canal flat message: only the fields the canal-json -> debezium-json
//! plan needs, each checked as strictly as the Python decoder checks it (or
//! more: anything unexpected is an error here, and Python then decides).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::json_scan::Scan;

/// A JSON string, borrowed from the message when it has no escapes.
pub struct Text<'a>(pub Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// One row: column name -> text or null, in message order; other JSON types are errors.
pub struct Row<'a>(pub Vec<(Cow<'a, str>, Option<Cow<'a, str>>)>);

impl<'de> Deserialize<'de> for Row<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Row<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a row object of strings and nulls")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(16));
                while let Some(k) = map.next_key::<Text<'de>>()? {
                    let v = map.next_value::<Option<Text<'de>>>()?;
                    out.push((k.0, v.map(|t| t.0)));
                }
                Ok(Row(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// Any JSON value, parsed fully (numbers included, so ranges orjson rejects are errors here too).
pub(crate) struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Checked;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Checked, E> {
                if v.is_finite() {
                    Ok(Checked)
                } else {
                    Err(E::custom("number out of range"))
                }
            }
            fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_unit<E>(self) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_none<E>(self) -> Result<Checked, E> {
                Ok(Checked)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
                while seq.next_element::<Checked>()?.is_some() {}
                Ok(Checked)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
                while map.next_key::<IgnoredAny>()?.is_some() {
                    map.next_value::<Checked>()?;
                }
                Ok(Checked)
            }
        }
        d.deserialize_any(V)
    }
}

/// The fields of a Canal message the plan reads (``None``: absent or null).
#[derive(Default)]
pub struct Message<'a> {
    pub kind: Option<Cow<'a, str>>,
    pub data: Option<Vec<Row<'a>>>,
    pub old: Option<Vec<Row<'a>>>,
    pub database: Option<Cow<'a, str>>,
    pub table: Option<Cow<'a, str>>,
    pub es: Option<i64>,
    pub ts: Option<i64>,
    pub pk_names: Option<Vec<Cow<'a, str>>>,
    pub mysql_type: Option<&'a RawValue>,
    pub sql_type: Option<&'a RawValue>,
    /// ``id`` as written (TiCDC always writes 0).
    pub id: Option<&'a RawValue>,
    /// A ``_tidb`` extension field is present (TiCDC's commitTs, large-message flags).
    pub tidb: bool,
    /// ``isDdl`` and ``sql`` as written (the Canal writer copies them).
    pub is_ddl: Option<&'a RawValue>,
    pub sql: Option<&'a RawValue>,
    /// Fields this module does not know (``_tidb`` included), in message order, as written.
    pub extra: Vec<(Cow<'a, str>, &'a RawValue)>,
    /// Which fields are present (null included): the ``FIELD_*`` bits.
    pub seen: u16,
}

pub const FIELD_DATABASE: u16 = 8;
pub const FIELD_TABLE: u16 = 16;
pub const FIELD_ES: u16 = 32;
pub const FIELD_TS: u16 = 64;
pub const FIELD_OLD: u16 = 4;
pub const FIELD_PK_NAMES: u16 = 128;
pub const FIELD_MYSQL_TYPE: u16 = 256;
pub const FIELD_SQL_TYPE: u16 = 512;
pub const FIELD_ID: u16 = 1024;
pub const FIELD_IS_DDL: u16 = 4096;
pub const FIELD_SQL: u16 = 8192;

/// The field names of a Canal-shaped dialect: which ``Message`` field each key of a message
/// fills (sqlglot-dialect style: a dialect differs only in its names, e.g. CloudCanal's).
pub trait Names {
    /// The key's ``FIELD_*`` bit, ``0`` for a field the dialect does not model (kept in ``extra``).
    fn bit(key: &str) -> u16;
}

/// Official Canal's (and TiCDC's) field names.
pub struct Canal;

impl Names for Canal {
    fn bit(key: &str) -> u16 {
        match key {
            "type" => FIELD_KIND,
            "data" => FIELD_DATA,
            "old" => FIELD_OLD,
            "database" => FIELD_DATABASE,
            "table" => FIELD_TABLE,
            "es" => FIELD_ES,
            "ts" => FIELD_TS,
            "pkNames" => FIELD_PK_NAMES,
            "mysqlType" => FIELD_MYSQL_TYPE,
            "sqlType" => FIELD_SQL_TYPE,
            "id" => FIELD_ID,
            "_tidb" => FIELD_TIDB,
            "isDdl" => FIELD_IS_DDL,
            "sql" => FIELD_SQL,
            _ => 0,
        }
    }
}

pub const FIELD_KIND: u16 = 1;
pub const FIELD_DATA: u16 = 2;
pub const FIELD_TIDB: u16 = 2048;

/// A ``Message`` read with the field names ``N``.
struct Named<'a, N>(Message<'a>, PhantomData<N>);

impl<'de, N: Names> Deserialize<'de> for Named<'de, N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<N>(PhantomData<N>);
        impl<'de, N: Names> Visitor<'de> for V<N> {
            type Value = Named<'de, N>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a Canal flat message")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut m = Message::default();
                let mut seen: u16 = 0;
                while let Some(k) = map.next_key::<Text<'de>>()? {
                    let bit = N::bit(k.0.as_ref());
                    if bit == 0 {
                        let raw: &RawValue = map.next_value()?;
                        serde_json::from_str::<Checked>(raw.get()).map_err(de::Error::custom)?;
                        m.extra.push((k.0, raw));
                        continue;
                    }
                    if seen & bit != 0 {
                        return Err(de::Error::custom("duplicate field")); // Python keeps the last: let it
                    }
                    seen |= bit;
                    match bit {
                        FIELD_KIND => m.kind = map.next_value::<Option<Text>>()?.map(|t| t.0),
                        FIELD_DATA => m.data = map.next_value()?,
                        FIELD_OLD => m.old = map.next_value()?,
                        FIELD_DATABASE => m.database = map.next_value::<Option<Text>>()?.map(|t| t.0),
                        FIELD_TABLE => m.table = map.next_value::<Option<Text>>()?.map(|t| t.0),
                        FIELD_ES => m.es = map.next_value()?,
                        FIELD_TS => m.ts = map.next_value()?,
                        FIELD_PK_NAMES => m.pk_names = map.next_value::<Option<Vec<Text>>>()?.map(|v| v.into_iter().map(|t| t.0).collect()),
                        FIELD_MYSQL_TYPE => m.mysql_type = Some(map.next_value()?),
                        FIELD_SQL_TYPE => m.sql_type = Some(map.next_value()?),
                        FIELD_ID => {
                            let raw: &RawValue = map.next_value()?;
                            serde_json::from_str::<Checked>(raw.get()).map_err(de::Error::custom)?;
                            m.id = Some(raw);
                        }
                        FIELD_IS_DDL | FIELD_SQL => {
                            let raw: &RawValue = map.next_value()?;
                            serde_json::from_str::<Checked>(raw.get()).map_err(de::Error::custom)?;
                            if bit == FIELD_SQL {
                                m.sql = Some(raw);
                            } else {
                                m.is_ddl = Some(raw);
                            }
                        }
                        _ => {
                            let raw: &RawValue = map.next_value()?;
                            serde_json::from_str::<Checked>(raw.get()).map_err(de::Error::custom)?;
                            m.extra.push((k.0, raw));
                            m.tidb = true;
                        }
                    }
                }
                m.seen = seen;
                Ok(Named(m, PhantomData))
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

/// The message, if it is a JSON object this module can read.
pub fn parse(value: &[u8]) -> Option<Message<'_>> {
    parse_as::<Canal>(value)
}

/// The message read with the field names ``N``, if it is a JSON object this module can read.
pub fn parse_as<N: Names>(value: &[u8]) -> Option<Message<'_>> {
    let first = value.iter().find(|b| !b.is_ascii_whitespace())?;
    if *first != b'{' {
        return None;
    }
    // One UTF-8 check of the whole message (its ASCII fast path), then no check per string.
    let text = std::str::from_utf8(value).ok()?;
    // The scanner's one pass where it is certain (half the instructions of serde's
    // deserializers and their ``RawValue`` re-parses); serde decides the rest.
    scan::<N>(text).or_else(|| serde_json::from_str::<Named<N>>(text).ok().map(|n| n.0))
}

/// The message as [`Named`] reads it, read by the single-pass scanner (``json_scan``), or
/// ``None`` where the scanner is not certain serde reads the same (a repeated field, a
/// number serde reads otherwise, an escape it leaves to serde, anything malformed).
fn scan<N: Names>(text: &str) -> Option<Message<'_>> {
    let mut c = Cursor { text, pos: 0 };
    let mut m = Message::default();
    c.expect(b'{')?;
    if c.next()? == b'}' {
        c.pos += 1;
    } else {
        loop {
            let key = c.read(|s| s.string())?;
            c.expect(b':')?;
            let bit = N::bit(key.as_ref());
            if bit != 0 && m.seen & bit != 0 {
                return None; // a repeated field: serde's error
            }
            m.seen |= bit;
            match bit {
                0 => m.extra.push((key, raw(c.read(|s| s.value())?))),
                FIELD_KIND => m.kind = c.read(|s| s.optional_string())?,
                FIELD_DATA => m.data = c.read(scan_rows)?,
                FIELD_OLD => m.old = c.read(scan_rows)?,
                FIELD_DATABASE => m.database = c.read(|s| s.optional_string())?,
                FIELD_TABLE => m.table = c.read(|s| s.optional_string())?,
                FIELD_ES => m.es = c.read(scan_i64)?,
                FIELD_TS => m.ts = c.read(scan_i64)?,
                FIELD_PK_NAMES => m.pk_names = c.read(scan_names)?,
                FIELD_MYSQL_TYPE => m.mysql_type = Some(raw(c.type_map()?)),
                FIELD_SQL_TYPE => m.sql_type = Some(raw(c.type_map()?)),
                FIELD_ID => m.id = Some(raw(c.read(|s| s.value())?)),
                FIELD_IS_DDL => m.is_ddl = Some(raw(c.read(|s| s.value())?)),
                FIELD_SQL => m.sql = Some(raw(c.read(|s| s.value())?)),
                _ => {
                    m.extra.push((key, raw(c.read(|s| s.value())?)));
                    m.tidb = true;
                }
            }
            match c.next()? {
                b',' => c.pos += 1,
                b'}' => {
                    c.pos += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    c.next().is_none().then_some(m) // only whitespace after the object
}

/// The scanner's place in a message's top-level object: each field's value read by a
/// [`Scan`] of the rest, except type maps met lately, which are compared, not read again.
struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// The next byte after JSON whitespace (not consumed).
    fn next(&mut self) -> Option<u8> {
        let rest = &self.text.as_bytes()[self.pos..];
        let skipped = rest.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))?;
        self.pos += skipped;
        Some(rest[skipped])
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.next()? == byte).then(|| self.pos += 1)
    }

    /// What ``read`` reads of the next value (the cursor then after it).
    fn read<T>(&mut self, read: impl FnOnce(&mut Scan<'a>) -> Option<T>) -> Option<T> {
        let rest: &'a str = &self.text[self.pos..];
        let (value, span) = Scan::new(rest).spanned(read)?;
        self.pos = span.as_ptr() as usize - self.text.as_ptr() as usize + span.len();
        Some(value)
    }

    /// A ``mysqlType`` or ``sqlType`` value as written: one the scanner checked lately
    /// when the rest starts with it (an object ends where its text does), else read and
    /// remembered. Every message of a table repeats its two maps.
    fn type_map(&mut self) -> Option<&'a str> {
        let rest: &'a str = &self.text[self.pos..];
        if rest.starts_with('{') {
            if let Some(len) = TYPE_MAPS.with(|maps| maps.borrow().iter().find(|map| rest.starts_with(&***map)).map(|map| map.len())) {
                self.pos += len;
                return Some(&rest[..len]);
            }
        }
        let text = self.read(|s| s.value())?;
        if text.starts_with('{') {
            TYPE_MAPS.with(|maps| {
                let mut maps = maps.borrow_mut();
                if maps.len() >= TYPE_MAPS_KEPT {
                    maps.remove(0);
                }
                maps.push(text.into());
            });
        }
        Some(text)
    }
}

/// How many type maps [`Cursor::type_map`] remembers (a table has two; a stream a few tables).
const TYPE_MAPS_KEPT: usize = 8;

thread_local! {
    /// The type maps (objects) the scanner read lately, whole as written.
    static TYPE_MAPS: std::cell::RefCell<Vec<Box<str>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// ``null`` or an integer as serde reads an ``Option<i64>``: not ``-0`` (serde's ``-0.0``, an error).
fn scan_i64(s: &mut Scan) -> Option<Option<i64>> {
    if s.null()? {
        return Some(None);
    }
    let n = s.number()?;
    if n.text.starts_with("-0") {
        return None;
    }
    n.int.map(Some)
}

/// ``null`` or an array of [`Row`]s.
fn scan_rows<'a>(s: &mut Scan<'a>) -> Option<Option<Vec<Row<'a>>>> {
    if s.null()? {
        return Some(None);
    }
    let mut rows = Vec::with_capacity(1);
    s.items(b'[', b']', |s| {
        let mut row = Vec::with_capacity(16);
        s.object(|s, name| {
            row.push((name, s.optional_string()?));
            Some(())
        })?;
        rows.push(Row(row));
        Some(())
    })?;
    Some(Some(rows))
}

/// ``null`` or an array of strings.
fn scan_names<'a>(s: &mut Scan<'a>) -> Option<Option<Vec<Cow<'a, str>>>> {
    if s.null()? {
        return Some(None);
    }
    let mut names = Vec::with_capacity(1);
    s.items(b'[', b']', |s| {
        names.push(s.string()?);
        Some(())
    })?;
    Some(Some(names))
}

/// A JSON value's text (checked by the scanner) as serde's ``RawValue`` of it.
fn raw(text: &str) -> &RawValue {
    // SAFETY: ``RawValue`` is ``#[repr(transparent)]`` over ``str`` (serde_json's own
    // ``RawValue::from_borrowed`` is this transmute); the text is one whole JSON value, the
    // slice serde's ``RawValue`` deserializer would borrow (whitespace before it skipped).
    unsafe { std::mem::transmute::<&str, &RawValue>(text) }
}
