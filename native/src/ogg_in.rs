//! The GoldenGate reader: an ogg-json row message read as ``OggJson.decode`` reads it,
//! as a typed-JSON [`Event`] (``typed_in``).
//!
//! ``I``, ``U`` and ``D`` operations: ``table`` (``SCHEMA.TABLE``: database and table),
//! ``op_ts`` and ``current_ts`` (zone-less wall clocks read as UTC: ``event.ts_ms`` and
//! ``processing_ts_ms``), ``primary_keys``, ``before`` and ``after``; ``pos``, ``tokens``
//! and unknown fields are checked as JSON and play no part in another format's message.
//! To Python: truncates and unknown ops, one- and three-part table names, timestamps not
//! in the canonical ``yyyy-MM-dd HH:mm:ss[.ffffff]`` form (Python's ``strptime`` reads
//! more), an update whose before-image is missing or names other columns (or in another
//! order), an insert with a before-image or a delete with an after-image, repeated fields.

use std::borrow::Cow;

use chrono::NaiveDate;
use serde::de::MapAccess;

use crate::canal::{Checked, Text};
use crate::debezium_in::Image;
use crate::json_scan::Scan;
use crate::typed_in::{cells, int_or_str, scan_image, scan_int_or_str, scan_names, text, Event, Fields};

/// The fields of a GoldenGate message the reader needs.
#[derive(Default)]
struct Message<'a> {
    op_type: Option<Cow<'a, str>>,
    table: Option<Cow<'a, str>>,
    op_ts: Option<Cow<'a, str>>,
    current_ts: Option<Cow<'a, str>>,
    before: Option<Image<'a>>,
    after: Option<Image<'a>>,
    pk: Option<Vec<Text<'a>>>,
    /// A field Python would refuse (a ``pos`` other than a string or an integer).
    python: bool,
}

impl<'de> Fields<'de> for Message<'de> {
    const WHAT: &'static str = "a GoldenGate message";

    fn field<A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error> {
        match name {
            "op_type" => self.op_type = text(map)?,
            "table" => self.table = text(map)?,
            "op_ts" => self.op_ts = text(map)?,
            "current_ts" => self.current_ts = text(map)?,
            "before" => self.before = map.next_value()?,
            "after" => self.after = map.next_value()?,
            "primary_keys" => self.pk = map.next_value()?,
            "pos" => self.python |= !int_or_str(map)?,
            _ => {
                map.next_value::<Checked>()?;
            }
        }
        Ok(())
    }

    const SCANNED: bool = true;

    fn scan_field(&mut self, name: &str, scan: &mut Scan<'de>) -> Option<()> {
        match name {
            "op_type" => self.op_type = scan.optional_string()?,
            "table" => self.table = scan.optional_string()?,
            "op_ts" => self.op_ts = scan.optional_string()?,
            "current_ts" => self.current_ts = scan.optional_string()?,
            "before" => self.before = scan_image(scan)?,
            "after" => self.after = scan_image(scan)?,
            "primary_keys" => self.pk = scan_names(scan)?,
            "pos" => self.python |= !scan_int_or_str(scan)?,
            _ => {
                scan.value()?;
            }
        }
        Some(())
    }
}

/// Epoch milliseconds of a canonical GoldenGate timestamp read as UTC (``parse_ogg_ts``:
/// the fraction truncated to microseconds, then floored to milliseconds), or ``None``.
fn epoch_ms(text: &str) -> Option<i64> {
    let (head, frac) = match text.split_once('.') {
        Some((head, frac)) if !frac.is_empty() && frac.bytes().all(|b| b.is_ascii_digit()) => (head, frac),
        Some(_) => return None,
        None => (text, ""),
    };
    let b = head.as_bytes();
    if b.len() != 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b' ' | b'T') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let number = |range: std::ops::Range<usize>| -> Option<u32> {
        let part = &head[range];
        part.bytes().all(|c| c.is_ascii_digit()).then(|| part.parse().ok())?
    };
    let year = number(0..4)?;
    if year == 0 {
        return None; // Python's datetime starts at year 1
    }
    let date = NaiveDate::from_ymd_opt(year as i32, number(5..7)?, number(8..10)?)?;
    let clock = date.and_hms_opt(number(11..13)?, number(14..16)?, number(17..19)?)?;
    let digits = &frac[..frac.len().min(6)];
    let micros: i64 = if digits.is_empty() { 0 } else { digits.parse::<i64>().ok()? * 10i64.pow(6 - digits.len() as u32) };
    let us = clock.and_utc().timestamp().checked_mul(1_000_000)?.checked_add(micros)?;
    Some(us.div_euclid(1000))
}

/// A timestamp field: absent or null (``None``), or its milliseconds; ``Err``: Python's.
fn timestamp(text: Option<&str>) -> Result<Option<i64>, ()> {
    text.map(|t| epoch_ms(t).ok_or(())).transpose()
}

/// The row event of a GoldenGate message, or ``None`` (Python's).
pub(crate) fn read(value: &[u8]) -> Option<Event<'_>> {
    let m: Message = crate::typed_in::parse(value)?;
    if m.python {
        return None;
    }
    let before = m.before.map(cells).map(|c| c.filter(|c| !c.is_empty()));
    let after = m.after.map(cells).map(|c| c.filter(|c| !c.is_empty()));
    let (op, row, old) = match (m.op_type.as_deref()?, before, after) {
        ("I", None, Some(a)) => (0, a?, None),
        ("U", Some(b), Some(a)) => {
            let (b, a) = (b?, a?);
            if b.len() != a.len() || b.iter().zip(&a).any(|(x, y)| x.0 != y.0) {
                return None; // a partial or reordered before-image is written as it is
            }
            (1, a, Some(b))
        }
        ("D", Some(b), None) => (2, b?, None),
        _ => return None, // truncates, unknown ops, images Python reads otherwise
    };
    let (database, table) = match m.table? {
        Cow::Borrowed(name) => {
            let (database, table) = name.split_once('.')?;
            (Cow::Borrowed(database), Cow::Borrowed(table))
        }
        Cow::Owned(name) => {
            let (database, table) = name.split_once('.')?;
            (Cow::Owned(database.to_owned()), Cow::Owned(table.to_owned()))
        }
    };
    if table.contains('.') {
        return None; // CATALOG.SCHEMA.TABLE
    }
    Some(Event {
        op,
        database,
        table,
        pk: m.pk.unwrap_or_default().into_iter().map(|t| t.0).collect(),
        row,
        old,
        es: timestamp(m.op_ts.as_deref()).ok()?,
        ts: timestamp(m.current_ts.as_deref()).ok()?,
    })
}
