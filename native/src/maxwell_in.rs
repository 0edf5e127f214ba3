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

use serde::de::MapAccess;

use crate::canal::{Checked, Text};
use crate::debezium_in::Image;
use crate::json_scan::Scan;
use crate::typed_in::{cells, int_or_str, scan_image, scan_int_or_str, scan_names, text, Event, Fields};

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

impl<'de> Fields<'de> for Message<'de> {
    const WHAT: &'static str = "a Maxwell message";

    fn field<A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error> {
        match name {
            "type" => self.kind = text(map)?,
            "database" => self.database = text(map)?,
            "table" => self.table = text(map)?,
            "ts" => self.ts = map.next_value()?,
            "data" => self.data = map.next_value()?,
            "old" => self.old = map.next_value()?,
            "primary_key_columns" => self.pk = map.next_value()?,
            "xid" => self.python |= !int_or_str(map)?,
            other => {
                self.python |= python_field(other);
                map.next_value::<Checked>()?;
            }
        }
        Ok(())
    }

    const SCANNED: bool = true;

    fn scan_field(&mut self, name: &str, scan: &mut Scan<'de>) -> Option<()> {
        match name {
            "type" => self.kind = scan.optional_string()?,
            "database" => self.database = scan.optional_string()?,
            "table" => self.table = scan.optional_string()?,
            "ts" => self.ts = scan.optional_i64()?,
            "data" => self.data = scan_image(scan)?,
            "old" => self.old = scan_image(scan)?,
            "primary_key_columns" => self.pk = scan_names(scan)?,
            "xid" => self.python |= !scan_int_or_str(scan)?,
            other => {
                self.python |= python_field(other);
                scan.value()?;
            }
        }
        Some(())
    }
}

/// A field that makes the message Python's: encrypted, or carrying what another format's
/// source block writes.
fn python_field(name: &str) -> bool {
    matches!(name, "encrypted" | "position" | "server_id" | "gtid")
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
