//! The Maxwell writer: what ``MaxwellJson.encode_message`` writes for the rows of a Canal
//! (or TiCDC) message, one message per row: ``database``, ``table``, ``type``, ``ts``
//! (seconds of ``es``), ``primary_key_columns``, ``data`` (the row's typed JSON values,
//! ``typed_json``) and, for an UPDATE, ``old`` with the columns whose value changed.
//! The key is the primary key's raw Canal texts (``encode_key`` of the raw row).

use crate::canal::Message;
use crate::typed_json::{self, Table, WriterScratch};
use crate::values::Fallback;
use crate::{json, Output};

/// ``type`` of each op (c, u, d, r).
const TYPES: [&[u8]; 4] = [b"\"insert\"", b"\"update\"", b"\"delete\"", b"\"bootstrap-insert\""];

/// The output records of one row message of ``t`` (op index ``op``) into ``out``, one per row.
pub fn write(t: &Table, m: &Message, op: usize, variant: usize, out: &mut Vec<Output>) -> Result<(), Fallback> {
    write_records(t, m, op, variant, b"", true, out)
}

/// [`write`] with the fields Python writes after ``ts`` from the event's source position
/// (``,"xid":...``: a Debezium event's; a Canal message has none), for the Debezium reader,
/// which sets every record's key itself (the key columns' JSON values): the records are
/// written without one (the Canal texts' key was made and dropped for every row).
pub fn write_with_position(t: &Table, m: &Message, op: usize, variant: usize, position: &[u8], out: &mut Vec<Output>) -> Result<(), Fallback> {
    write_records(t, m, op, variant, position, false, out)
}

/// The records of [`write`] (``keyed``: with the primary key's Canal texts as keys, else none).
fn write_records(t: &Table, m: &Message, op: usize, variant: usize, position: &[u8], keyed: bool, out: &mut Vec<Output>) -> Result<(), Fallback> {
    let data = m.data.as_deref().ok_or(Fallback)?;
    let old = m.old.as_deref().unwrap_or(&[]);
    // ``changed``: the changed columns of an UPDATE row (``"name":value,...``); ``head``: the
    // fields up to ``"data":``, the same for every row (kept apart only for a second row).
    typed_json::with_writer_scratch(|WriterScratch { spans, image: changed, head }| {
        for (i, row) in data.iter().enumerate() {
            let mut value = Vec::with_capacity(1024);
            if i == 0 {
                write_head(t, m, op, position, &mut value);
                if data.len() > 1 {
                    head.extend_from_slice(&value);
                }
            } else {
                value.extend_from_slice(head);
            }
            t.image(row, &mut value, spans)?;
            if let (1, Some(o)) = (op, old.get(i)) {
                changed.clear();
                t.before(o, &value, spans, |key, v, is_changed| {
                    if is_changed {
                        if !changed.is_empty() {
                            changed.push(b',');
                        }
                        changed.extend_from_slice(key);
                        changed.extend_from_slice(v);
                    }
                })?;
                if !changed.is_empty() {
                    value.extend_from_slice(b",\"old\":{");
                    value.extend_from_slice(changed);
                    value.push(b'}');
                }
            }
            value.push(b'}');
            out.push((Some(value), if keyed { t.key(row) } else { None }, variant));
        }
        Ok(())
    })
}

/// The fields before the row's image, through ``"data":``.
fn write_head(t: &Table, m: &Message, op: usize, position: &[u8], head: &mut Vec<u8>) {
    head.extend_from_slice(b"{\"database\":");
    write_name(head, m.database.as_deref());
    head.extend_from_slice(b",\"table\":");
    write_name(head, m.table.as_deref());
    head.extend_from_slice(b",\"type\":");
    head.extend_from_slice(TYPES[op]);
    if let Some(es) = m.es {
        head.extend_from_slice(b",\"ts\":");
        json::write_int(head, es.div_euclid(1000));
    }
    head.extend_from_slice(position);
    if !t.pk.is_empty() {
        head.extend_from_slice(b",\"primary_key_columns\":");
        t.pk_array(head);
    }
    head.extend_from_slice(b",\"data\":");
}

/// A database or table name as the Canal decoder keeps it (``""`` is no name: null).
pub fn write_name(out: &mut Vec<u8>, name: Option<&str>) {
    match name {
        Some(n) if !n.is_empty() => json::write_str(out, n),
        _ => out.extend_from_slice(b"null"),
    }
}
