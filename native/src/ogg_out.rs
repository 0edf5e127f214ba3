//! The GoldenGate writer: what ``OggJson.encode_message`` writes for the rows of a Canal
//! (or TiCDC) message, one message per row: ``table`` (``database.table``), ``op_type``,
//! ``op_ts`` and ``current_ts`` (``es`` and ``ts`` as UTC wall clocks), ``primary_keys``,
//! ``before`` (UPDATE: the row overlaid with ``old``; DELETE: the row) and ``after``, in
//! the typed JSON of ``typed_json`` (JSON and SET columns as text). The key is the
//! primary key's raw Canal texts.

use chrono::{DateTime, Datelike, Timelike};

use crate::canal::Message;
use crate::typed_json::{self, Table, WriterScratch};
use crate::values::Fallback;
use crate::{json, Output};

/// ``op_type`` of each op (c, u, d, r: a snapshot read is an insert).
const CODES: [&[u8]; 4] = [b"\"I\"", b"\"U\"", b"\"D\"", b"\"I\""];

/// The output records of one row message of ``t`` (op index ``op``) into ``out``, one per row.
pub fn write(t: &Table, m: &Message, op: usize, variant: usize, out: &mut Vec<Output>) -> Result<(), Fallback> {
    let data = m.data.as_deref().ok_or(Fallback)?;
    let old = m.old.as_deref().unwrap_or(&[]);
    // ``head``: the fields before the images, the same for every row (kept apart only for a
    // second row); ``after``: an UPDATE's after-image, written apart for its before-image.
    typed_json::with_writer_scratch(|WriterScratch { spans, image: after, head }| {
        for (i, row) in data.iter().enumerate() {
            let mut value = Vec::with_capacity(1024);
            if i == 0 {
                write_head(t, m, op, &mut value)?;
                if data.len() > 1 {
                    head.extend_from_slice(&value);
                }
            } else {
                value.extend_from_slice(head);
            }
            match op {
                1 => {
                    after.clear();
                    t.image(row, after, spans)?;
                    value.extend_from_slice(b",\"before\":");
                    match old.get(i) {
                        Some(o) => {
                            value.push(b'{');
                            let mut first = true;
                            t.before(o, after, spans, |key, v, _| {
                                if !std::mem::take(&mut first) {
                                    value.push(b',');
                                }
                                value.extend_from_slice(key);
                                value.extend_from_slice(v);
                            })?;
                            value.push(b'}');
                        }
                        None => value.extend_from_slice(after),
                    }
                    value.extend_from_slice(b",\"after\":");
                    value.extend_from_slice(after);
                }
                // A row without a before-image of its own: written straight into the value.
                2 => {
                    value.extend_from_slice(b",\"before\":");
                    t.image(row, &mut value, spans)?;
                }
                _ => {
                    value.extend_from_slice(b",\"after\":");
                    t.image(row, &mut value, spans)?;
                }
            }
            value.push(b'}');
            out.push((Some(value), t.key(row), variant));
        }
        Ok(())
    })
}

/// The fields before the images: ``table`` through ``primary_keys``.
fn write_head(t: &Table, m: &Message, op: usize, head: &mut Vec<u8>) -> Result<(), Fallback> {
    head.extend_from_slice(b"{\"table\":");
    match (m.database.as_deref().filter(|p| !p.is_empty()), m.table.as_deref().filter(|p| !p.is_empty())) {
        (Some(db), Some(table)) => {
            // ``"db.table"``
            head.push(b'"');
            json::write_escaped(head, db);
            head.push(b'.');
            json::write_escaped(head, table);
            head.push(b'"');
        }
        (Some(one), None) | (None, Some(one)) => json::write_str(head, one),
        (None, None) => head.extend_from_slice(b"null"),
    }
    head.extend_from_slice(b",\"op_type\":");
    head.extend_from_slice(CODES[op]);
    if let Some(es) = m.es {
        head.extend_from_slice(b",\"op_ts\":");
        write_ts(head, es, b' ')?;
    }
    if let Some(ts) = m.ts {
        head.extend_from_slice(b",\"current_ts\":");
        write_ts(head, ts, b'T')?;
    }
    if !t.pk.is_empty() {
        head.extend_from_slice(b",\"primary_keys\":");
        t.pk_array(head);
    }
    Ok(())
}

/// ``format_ogg_ts(ms, sep)``: ``YYYY-MM-DD{sep}HH:MM:SS.ffffff`` in UTC (years 1000-9999:
/// Python's ``strftime`` pads no others alike).
fn write_ts(out: &mut Vec<u8>, ms: i64, sep: u8) -> Result<(), Fallback> {
    let t = DateTime::from_timestamp_millis(ms).ok_or(Fallback)?.naive_utc();
    if !(1000..=9999).contains(&t.year()) {
        return Err(Fallback);
    }
    let mut text = [0u8; 26];
    let fields: [(u32, usize, usize); 7] = [
        (t.year() as u32, 0, 4),
        (t.month(), 5, 2),
        (t.day(), 8, 2),
        (t.hour(), 11, 2),
        (t.minute(), 14, 2),
        (t.second(), 17, 2),
        (t.nanosecond() / 1000, 20, 6),
    ];
    for (n, at, width) in fields {
        json::put_digits(&mut text[at..at + width], n);
    }
    (text[4], text[7], text[10], text[13], text[16], text[19]) = (b'-', b'-', sep, b':', b':', b'.');
    out.push(b'"');
    out.extend_from_slice(&text);
    out.push(b'"');
    Ok(())
}
