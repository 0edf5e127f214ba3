//! The Maxwell reader: a maxwell-json row message read as ``MaxwellJson.decode`` reads
//! it, as a typed-JSON [`Event`] (``typed_in``).
//!
//! ``insert``, ``update`` and ``delete`` messages: ``database``, ``table``, ``ts``
//! (seconds), ``data`` (the row), ``old`` (an update's changed columns: the before-image
//! is ``data`` overlaid with it), ``primary_key_columns``; ``xid``, ``commit``,
//! ``xoffset``, ``primary_key`` and unknown fields are checked as JSON and play no part
//! in another format's message. To Python: DDL, bootstrap and other message types,
//! encrypted messages, the fields another format's source block carries (``position``,
//! ``server_id``, ``gtid``), TiCDC's deletes in ``old``, ``old`` outside an update, a
//! missing database or table, repeated fields, and what the Python decoder would reject
//! (an ``xid`` other than an integer or a string, a ``ts`` other than an integer).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::canal::{Checked, Text};
use crate::debezium_in::Image;
use crate::typed_in::{cells, Event};

/// The fields of a Maxwell message the reader needs.
#[derive(Default)]
struct Message<'a> {
    kind: Option<Cow<'a, str>>,
    database: Option<Cow<'a, str>>,
    table: Option<Cow<'a, str>>,
    ts: Option<i64>,
    data: Option<Image<'a>>,
    old: Option<Image<'a>>,
    pk: Option<Vec<Text<'a>>>,
    /// A field that makes the message Python's.
    python: bool,
}

impl<'de> Deserialize<'de> for Message<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Message<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a Maxwell message")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut m = Message::default();
                let mut names: Vec<Cow<'de, str>> = Vec::with_capacity(12);
                while let Some(k) = map.next_key::<Text<'de>>()? {
                    if names.contains(&k.0) {
                        return Err(de::Error::custom("duplicate field")); // Python keeps the last: let it
                    }
                    match k.0.as_ref() {
                        "type" => m.kind = map.next_value::<Option<Text>>()?.map(|t| t.0),
                        "database" => m.database = map.next_value::<Option<Text>>()?.map(|t| t.0),
                        "table" => m.table = map.next_value::<Option<Text>>()?.map(|t| t.0),
                        "ts" => m.ts = map.next_value()?,
                        "data" => m.data = map.next_value()?,
                        "old" => m.old = map.next_value()?,
                        "primary_key_columns" => m.pk = map.next_value()?,
                        "xid" => {
                            // Python reads an integer or a string (and refuses a boolean or a number with a fraction).
                            let raw: &RawValue = map.next_value()?;
                            let text = raw.get();
                            let integer = text.strip_prefix('-').unwrap_or(text).bytes().all(|b| b.is_ascii_digit());
                            m.python |= !(text == "null" || text.starts_with('"') || integer);
                            serde_json::from_str::<Checked>(text).map_err(de::Error::custom)?;
                        }
                        other => {
                            m.python |= matches!(other, "encrypted" | "position" | "server_id" | "gtid");
                            map.next_value::<Checked>()?;
                        }
                    }
                    names.push(k.0);
                }
                Ok(m)
            }
        }
        d.deserialize_map(V)
    }
}

/// The row event of a Maxwell message, or ``None`` (Python's).
pub(crate) fn read(value: &[u8]) -> Option<Event<'_>> {
    let m: Message = crate::typed_in::parse(value)?;
    if m.python {
        return None;
    }
    let op = match m.kind.as_deref()? {
        "insert" => 0,
        "update" => 1,
        "delete" => 2,
        _ => return None, // bootstrap, DDL, markers, unknown types
    };
    let row = cells(m.data?)?;
    let old = match m.old.map(cells) {
        None => None,
        Some(o) if o.as_ref()?.is_empty() => None,
        Some(o) if op == 1 => o,
        Some(_) => return None, // Python types the columns of an insert's or a delete's old too
    };
    if row.is_empty() {
        return None;
    }
    Some(Event {
        op,
        database: m.database?,
        table: m.table?,
        pk: m.pk.unwrap_or_default().into_iter().map(|t| t.0).collect(),
        row,
        old,
        es: match m.ts {
            Some(seconds) => Some(seconds.checked_mul(1000)?),
            None => None,
        },
        ts: None,
    })
}
