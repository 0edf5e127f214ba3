//! Reading a Canal flat message: only the fields the canal-json -> debezium-json
//! plan needs, each checked as strictly as the Python decoder checks it (or
//! more: anything unexpected is an error here, and Python then decides).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

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
    serde_json::from_str::<Named<N>>(text).ok().map(|n| n.0)
}
