//! The DataWorks writer: what ``DataWorksJson._encode_rows`` writes for the rows of a Canal
//! (or TiCDC) message, one event per row: ``schema`` (``dataColumn`` of the table's columns
//! with their DataWorks types, ``primaryKey``, ``source``: ``dbType`` MySQL, ``dbName``,
//! ``tableName``), ``payload`` (``before``/``after`` as ``{"dataColumn": values}``,
//! ``sequenceId``, ``timestamp``, ``op``, ``ddl`` null) and ``version``. An UPDATE is two
//! messages sharing one ``sequenceId`` (``UPDATE_BEFOR`` with the row overlaid with ``old``,
//! then ``UPDATE_AFTER``), or one ``UPDATE_AFTER`` with both images (``update_as: single``).
//!
//! ``sequenceId`` is the event time (``0`` without one) and the encoder's counter
//! (``DataWorksJson._next_seq``, six digits, wrapping at a million), shared with the Python
//! path as the DTS writer shares its record ids (``dts_avro_out::Ids``). Values are the
//! encoder's ``_value`` of the typed value (``cloudcanal_out``'s conversions: integers,
//! doubles, booleans and base64 binary as JSON values, DATE/DATETIME/TIMESTAMP as epoch
//! milliseconds, DECIMAL and TIME as MySQL text, strings and labels); the key is the raw
//! key texts (the event is not typed: ``typed_image`` types copies), an UPDATE_BEFOR's those
//! of its before-image.

use std::borrow::Cow;

use crate::canal::{Message, Row};
use crate::cloudcanal_out::Table;
use crate::dts_avro_out::Ids;
use crate::maxwell_out::write_name;
use crate::values::Fallback;
use crate::{json, Output};

/// The counter wraps here (``% 1_000_000``: six digits).
const SEQUENCE_WRAP: i64 = 1_000_000;

/// The message's parts before ``payload``: ``{"schema":{...},"payload":{"before":``.
fn write_head(t: &Table, m: &Message, out: &mut Vec<u8>) {
    out.extend_from_slice(b"{\"schema\":{\"dataColumn\":[");
    for (n, entry) in t.data_columns().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        out.extend_from_slice(entry);
    }
    out.extend_from_slice(b"],\"primaryKey\":");
    out.extend_from_slice(t.pks().unwrap_or(b"null"));
    out.extend_from_slice(b",\"source\":{\"dbType\":\"MySQL\"");
    for (name, value) in [(&b",\"dbName\":"[..], m.database.as_deref()), (b",\"tableName\":", m.table.as_deref())] {
        if value.is_some_and(|v| !v.is_empty()) {
            out.extend_from_slice(name);
            write_name(out, value);
        }
    }
    out.extend_from_slice(b"}},\"payload\":{\"before\":");
}

/// ``{"dataColumn":{...}}`` of one image (every column, in the table's order).
fn write_image<'r>(t: &Table, entries: impl Iterator<Item = (usize, Option<&'r str>)>, out: &mut Vec<u8>, seen: &mut Vec<bool>) -> Result<(), Fallback> {
    out.extend_from_slice(b"{\"dataColumn\":");
    t.image(entries, out, seen)?;
    out.push(b'}');
    Ok(())
}

/// The rest of the message after its images: ``sequenceId``, ``timestamp``, ``op``.
fn write_tail(m: &Message, sequence: &[u8], code: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b",\"sequenceId\":");
    out.extend_from_slice(sequence);
    out.extend_from_slice(b",\"timestamp\":{\"eventTime\":");
    let event_time = m.es.unwrap_or(-1); // -1: unknown, as DataWorks writes it
    json::write_int(out, event_time);
    if let Some(ts) = m.ts {
        out.extend_from_slice(b",\"systemTime\":");
        json::write_int(out, ts);
    }
    out.extend_from_slice(b",\"checkpointTime\":");
    json::write_int(out, event_time);
    out.extend_from_slice(b"},\"op\":\"");
    out.extend_from_slice(code);
    out.extend_from_slice(b"\",\"ddl\":null},\"version\":\"0.0.1\"}");
}

/// The next ``sequenceId`` (``f"{ts_ms or 0}{seq:06d}"``) as a JSON string.
fn next_sequence(m: &Message, next: &mut i64) -> Vec<u8> {
    *next = (*next + 1).rem_euclid(SEQUENCE_WRAP);
    let text = format!("{}{:06}", m.es.unwrap_or(0), next);
    let mut out = Vec::with_capacity(text.len() + 2);
    json::write_str(&mut out, &text);
    out
}

/// The Kafka key of an image: ``{"pk": raw text, ...}`` (``None``: no primary key).
fn raw_key(t: &Table, image: &Row) -> Result<Option<Vec<u8>>, Fallback> {
    t.key(image)
}

/// The records of one row message of ``t`` (op index ``op``) into ``out`` (all or none);
/// ``split``: updates as two messages.
#[allow(clippy::too_many_arguments)]
pub fn write(t: &Table, m: &Message, op: usize, variant: usize, split: bool, ids: &mut Ids, out: &mut Vec<Output>) -> Result<(), Fallback> {
    let data = m.data.as_deref().ok_or(Fallback)?;
    let old = m.old.as_deref().unwrap_or(&[]);
    let mut next = ids.next;
    let mut seen = Vec::new();
    let start = out.len();
    let written = (|| {
        for (i, row) in data.iter().enumerate() {
            let cols = t.columns_of(row)?;
            if cols.len() != t.width() || cols.iter().enumerate().any(|(n, &c)| n != c) {
                return Err(Fallback); // a row naming other columns or another order: Python's dataColumn
            }
            let entries = || cols.iter().zip(&row.0).map(|(&c, (_, v))| (c, v.as_deref()));
            let mut head = Vec::with_capacity(256);
            write_head(t, m, &mut head);
            let sequence = next_sequence(m, &mut next);
            let key = raw_key(t, row)?;
            let mut value = head.clone();
            match op {
                1 => {
                    let before = old.get(i).filter(|o| !o.0.is_empty());
                    if split {
                        let mut first = head;
                        let mut before_image = Vec::with_capacity(256);
                        t.before_image(&cols, row, before, &mut before_image, &mut seen)?;
                        first.extend_from_slice(b"{\"dataColumn\":");
                        first.extend_from_slice(&before_image);
                        first.extend_from_slice(b"},\"after\":null");
                        write_tail(m, &sequence, b"UPDATE_BEFOR", &mut first);
                        out.push((Some(first), raw_key(t, &overlaid(row, before))?, variant));
                        value.extend_from_slice(b"null,\"after\":");
                    } else {
                        value.extend_from_slice(b"{\"dataColumn\":");
                        t.before_image(&cols, row, before, &mut value, &mut seen)?;
                        value.extend_from_slice(b"},\"after\":");
                    }
                    write_image(t, entries(), &mut value, &mut seen)?;
                    write_tail(m, &sequence, b"UPDATE_AFTER", &mut value);
                }
                2 => {
                    write_image(t, entries(), &mut value, &mut seen)?;
                    value.extend_from_slice(b",\"after\":null");
                    write_tail(m, &sequence, b"DELETE", &mut value);
                }
                _ => {
                    value.extend_from_slice(b"null,\"after\":");
                    write_image(t, entries(), &mut value, &mut seen)?;
                    write_tail(m, &sequence, b"INSERT", &mut value);
                }
            }
            out.push((Some(value), key, variant));
        }
        Ok(())
    })();
    match written {
        Ok(()) => {
            ids.next = next;
            Ok(())
        }
        Err(e) => {
            out.truncate(start);
            Err(e)
        }
    }
}

/// ``{**row, **old}`` as a row (the before-image's key texts are its values).
pub(crate) fn overlaid<'a>(row: &'a Row<'a>, old: Option<&'a Row<'a>>) -> Row<'a> {
    let mut merged: Vec<(Cow<'a, str>, Option<Cow<'a, str>>)> = row.0.iter().map(|(k, v)| (Cow::Borrowed(k.as_ref()), v.as_deref().map(Cow::Borrowed))).collect();
    for (k, v) in old.map_or(&[][..], |o| o.0.as_slice()) {
        let v = v.as_deref().map(Cow::Borrowed);
        match merged.iter_mut().find(|(n, _)| n == k) {
            Some(slot) => slot.1 = v,
            None => merged.push((Cow::Borrowed(k.as_ref()), v)),
        }
    }
    Row(merged)
}
