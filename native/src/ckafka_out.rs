//! The CKafka writer: what ``CKafkaJson._encode_dml`` writes for the rows of a Canal-shaped
//! message (Canal's, TiCDC's, or a Debezium event read as one), one "official format 1"
//! message per row: ``BINLOG_NAME``, ``BINLOG_POS``, ``DATABASE``, ``EVENT_SERVER_ID``,
//! ``GLOBAL_ID``, ``GROUP_ID`` (null: only CKafka's own events have one), ``NEW_VALUES``
//! (null for a DELETE), ``OLD_VALUES`` (an UPDATE's before-image: the row overlaid with
//! ``old``; a DELETE's row; null for an INSERT), ``TABLE``, ``TIME`` (the event time's
//! second as ``yyyyMMddHHmmss`` in the encoder's ``source_timezone``) and ``TYPE``.
//!
//! Values and key are the CloudCanal writer's (``cloudcanal_out``): MySQL's own text of
//! the typed value (both encoders render them through ``text_images``), the key the
//! primary key's typed values; its tables are compiled by
//! ``transforms/native_vendor_out.py``.

use crate::canal::Message;
use crate::cloudcanal_out::Table;
use crate::dataworks_in::Zone;
use crate::maxwell_out::write_name;
use crate::values::Fallback;
use crate::{json, Output};

/// ``TYPE`` of each op (c, u, d, r: a snapshot read is an insert).
const TYPES: [&[u8]; 4] = [b"\"I\"", b"\"U\"", b"\"D\"", b"\"I\""];

/// The source position fields of one event, as JSON (``null`` where the source has none:
/// Canal's messages carry no binlog position).
pub struct Binlog {
    pub file: Vec<u8>,
    pub pos: Vec<u8>,
    pub server_id: Vec<u8>,
    pub gtid: Vec<u8>,
}

impl Default for Binlog {
    fn default() -> Self {
        Binlog { file: b"null".to_vec(), pos: b"null".to_vec(), server_id: b"null".to_vec(), gtid: b"null".to_vec() }
    }
}

/// ``TIME``: ``ms // 1000`` seconds as the wall clock in ``zone`` (``"yyyyMMddHHmmss"``, on
/// the stack: written once per message, copied into each row's).
fn time_text(ms: i64, zone: Zone) -> Result<[u8; 16], Fallback> {
    use chrono::{Datelike, Timelike};
    let wall = zone.wall(ms.div_euclid(1000) * 1000).ok_or(Fallback)?;
    let year = wall.year() as u32; // 1..=9999: four digits
    let mut text = *b"\"yyyyMMddHHmmss\"";
    for (n, at, width) in [(year, 1, 4), (wall.month(), 5, 2), (wall.day(), 7, 2), (wall.hour(), 9, 2), (wall.minute(), 11, 2), (wall.second(), 13, 2)] {
        json::put_digits(&mut text[at..at + width], n);
    }
    Ok(text)
}

/// The output records of one row message of ``t`` (op index ``op``) into ``out``, one per
/// row; ``zone``: the encoder's ``source_timezone``.
pub fn write(t: &Table, m: &Message, op: usize, variant: usize, zone: Zone, binlog: &Binlog, out: &mut Vec<Output>) -> Result<(), Fallback> {
    let data = m.data.as_deref().ok_or(Fallback)?;
    let old = m.old.as_deref().unwrap_or(&[]);
    // ``event_ms``: the change time, else when it was sent (else the record's: Python's).
    let ms = m.es.or(m.ts).ok_or(Fallback)?;
    let time = time_text(ms, zone)?;
    let mut seen = Vec::new();
    for (i, row) in data.iter().enumerate() {
        let cols = t.columns_of(row)?;
        let image = |value: &mut Vec<u8>, seen: &mut Vec<bool>| t.image(cols.iter().zip(&row.0).map(|(&c, (_, v))| (c, v.as_deref())), value, seen);
        let mut value = Vec::with_capacity(512);
        value.extend_from_slice(b"{\"BINLOG_NAME\":");
        value.extend_from_slice(&binlog.file);
        value.extend_from_slice(b",\"BINLOG_POS\":");
        value.extend_from_slice(&binlog.pos);
        value.extend_from_slice(b",\"DATABASE\":");
        write_name(&mut value, m.database.as_deref());
        value.extend_from_slice(b",\"EVENT_SERVER_ID\":");
        value.extend_from_slice(&binlog.server_id);
        value.extend_from_slice(b",\"GLOBAL_ID\":");
        value.extend_from_slice(&binlog.gtid);
        value.extend_from_slice(b",\"GROUP_ID\":null,\"NEW_VALUES\":");
        if op == 2 {
            value.extend_from_slice(b"null");
        } else {
            image(&mut value, &mut seen)?;
        }
        value.extend_from_slice(b",\"OLD_VALUES\":");
        match op {
            1 => t.before_image(&cols, row, old.get(i), &mut value, &mut seen)?,
            2 => image(&mut value, &mut seen)?,
            _ => value.extend_from_slice(b"null"),
        }
        value.extend_from_slice(b",\"TABLE\":");
        write_name(&mut value, m.table.as_deref());
        value.extend_from_slice(b",\"TIME\":");
        value.extend_from_slice(&time);
        value.extend_from_slice(b",\"TYPE\":");
        value.extend_from_slice(TYPES[op]);
        value.push(b'}');
        out.push((Some(value), t.key(row)?, variant));
    }
    Ok(())
}

/// ``json::write_int`` into a fresh buffer (a binlog position field).
pub fn int_field(n: Option<i64>) -> Vec<u8> {
    let mut out = Vec::with_capacity(12);
    match n {
        Some(n) => json::write_int(&mut out, n),
        None => out.extend_from_slice(b"null"),
    }
    out
}
