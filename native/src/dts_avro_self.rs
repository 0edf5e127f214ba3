//! dts-avro -> dts-avro: the DTS reader feeding a same-format writer (re-routing or
//! filtering DTS topics), as ``DtsAvro.encode`` re-writes a record its decoder read.
//!
//! For a decoded DTS row event the Python encoder writes the record it read
//! (``event.extra["record"]``): ``id``, times, positions, source, ``processTimestamps``
//! and ``tags`` as read (no id from the encoder's counter, so unlike canal -> dts-avro a
//! record Python processes does not end the batch's native run), ``objectName`` re-escaped
//! from its unescaped parts, ``fields`` from the names and codes read, the images the op
//! writes (an INSERT's before-image and a DELETE's after-image are dropped) with each union
//! value as read (``EmptyObject`` ``NULL`` as ``null``), and the record's own Kafka key.
//! fastavro writes that back in its canonical binary encoding (minimal varints, an array or
//! map as one block), which is what this writer writes from the fields ``dts_avro_in``
//! reads; a record that reader leaves to Python is Python's here too.
//!
//! Per layout (``dts_avro_in::Layout``) Python says per op whether the transforms drop the
//! record or with which variant (topic, header edits) it is written, after checking on a
//! probe record that the Python path writes the record back as read
//! (``transforms/native_dts_in.py``: ``DtsSelfTables``).

use std::collections::HashMap;
use std::sync::Arc;

use pyo3::prelude::*;

use crate::canal_out::{entries, Entry};
use crate::dts_avro_in::{self, event_of, read, Layout, Raw, Record};
use crate::dts_avro_out::{write_bytes, write_long};
use crate::{CanalToDebezium, Output, Reader as PlanReader, CACHE_SIZE};

/// The compiled layouts: per op (c, u, d, r) dropped, Python's or written with a variant.
#[derive(Default)]
pub(crate) struct Tables {
    compiled: HashMap<Layout, Option<Arc<[Entry; 4]>>>,
    last: Option<(Layout, Option<Arc<[Entry; 4]>>)>,
}

impl Tables {
    pub fn clear(&mut self) {
        self.compiled.clear();
        self.last = None;
    }

    /// The ops of ``e``'s layout (``None``: Python's), compiled once by ``compile``.
    fn ops(&mut self, py: Python, e: &dts_avro_in::Event, compile: &PyObject) -> PyResult<Option<Arc<[Entry; 4]>>> {
        if let Some((layout, ops)) = &self.last {
            if layout.matches(e) {
                return Ok(ops.clone());
            }
        }
        let layout = Layout::of(e);
        let ops = match self.compiled.get(&layout) {
            Some(ops) => ops.clone(),
            None => {
                let spec = layout.compile(py, compile)?;
                let ops = if spec.is_none(py) { None } else { Some(Arc::new(entries(spec.extract(py)?)?)) };
                if self.compiled.len() >= CACHE_SIZE {
                    self.compiled.clear();
                }
                self.compiled.insert(layout.clone(), ops.clone());
                ops
            }
        };
        self.last = Some((layout, ops.clone()));
        Ok(ops)
    }
}

/// ``escape_name``.
fn write_name(out: &mut Vec<u8>, name: &str) {
    for (n, part) in name.split('.').enumerate() {
        if n > 0 {
            out.extend_from_slice(b"\\u002E");
        }
        out.extend_from_slice(part.as_bytes());
    }
}

/// A union value of an image as fastavro writes it (``EmptyObject`` ``NULL`` read as ``None``: ``null``).
fn write_value(out: &mut Vec<u8>, v: &Raw) {
    let int = |out: &mut Vec<u8>, n: i32| write_long(out, i64::from(n));
    match *v {
        Raw::Null => write_long(out, 0),
        Raw::Integer(precision, value) => {
            write_long(out, 1);
            int(out, precision);
            write_bytes(out, value.as_bytes());
        }
        Raw::Character(charset, value) => {
            write_long(out, 2);
            write_bytes(out, charset.as_bytes());
            write_bytes(out, value);
        }
        Raw::Decimal(value, precision, scale) => {
            write_long(out, 3);
            write_bytes(out, value.as_bytes());
            int(out, precision);
            int(out, scale);
        }
        Raw::Float(value, precision, scale) => {
            write_long(out, 4);
            out.extend_from_slice(&value.to_le_bytes());
            int(out, precision);
            int(out, scale);
        }
        Raw::Timestamp(seconds, micros) => {
            write_long(out, 5);
            write_long(out, seconds);
            int(out, micros);
        }
        Raw::DateTime(parts) => {
            write_long(out, 6);
            for part in parts {
                match part {
                    None => write_long(out, 0),
                    Some(p) => {
                        write_long(out, 1);
                        int(out, p);
                    }
                }
            }
        }
        Raw::BinaryObject(kind, value) => {
            write_long(out, 10);
            write_bytes(out, kind.as_bytes());
            write_bytes(out, value);
        }
        Raw::TextObject(kind, value) => {
            write_long(out, 11);
            write_bytes(out, kind.as_bytes());
            write_bytes(out, value.as_bytes());
        }
    }
}

/// An array (or map) of ``n`` items as fastavro writes it: one block, then ``0``.
fn write_block<T>(out: &mut Vec<u8>, items: &[T], mut item: impl FnMut(&mut Vec<u8>, &T)) {
    if !items.is_empty() {
        write_long(out, items.len() as i64);
        for i in items {
            item(out, i);
        }
    }
    write_long(out, 0);
}

/// ``beforeImages``/``afterImages`` as the op writes them (``None``: not written).
fn write_image(out: &mut Vec<u8>, image: Option<&Vec<Raw>>) {
    match image {
        None => write_long(out, 0),
        Some(values) => {
            write_long(out, 2);
            write_block(out, values, write_value);
        }
    }
}

/// ``-?[0-9]+(.[0-9]+)?``: a ``Decimal`` text the decoder's check (``Decimal(text)``) surely
/// reads (the reader hands a decimal's text over unchecked: its writers' conversions check it).
fn plain_decimal(text: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    match unsigned.split_once('.') {
        Some((whole, fraction)) => digits(whole) && digits(fraction),
        None => digits(unsigned),
    }
}

/// Are a record's decimal texts (in both images: the decoder checks both) surely ones?
fn plain_decimals(r: &Record) -> bool {
    let mut values = [&r.before, &r.after].into_iter().flatten().flatten();
    values.all(|v| !matches!(v, Raw::Decimal(t, _, _) if !plain_decimal(t)))
}

/// The record as the Python encoder re-writes it, or ``None`` (Python's: a tag read twice,
/// which its dict keeps once).
fn write(r: &Record, e: &dts_avro_in::Event) -> Option<Vec<u8>> {
    if r.tags.iter().enumerate().any(|(n, (k, _))| r.tags[..n].iter().any(|(p, _)| p == k)) {
        return None;
    }
    let mut out = Vec::with_capacity(256);
    write_long(&mut out, i64::from(r.version));
    write_long(&mut out, r.id);
    write_long(&mut out, r.seconds);
    for s in r.positions {
        write_bytes(&mut out, s.as_bytes());
    }
    write_long(&mut out, r.source_type);
    write_bytes(&mut out, r.source_version.as_bytes());
    write_long(&mut out, r.op as i64);
    let mut object = Vec::with_capacity(r.object.len() + 8);
    write_name(&mut object, &e.database);
    object.push(b'.');
    write_name(&mut object, &e.table);
    write_long(&mut out, 1);
    write_bytes(&mut out, &object);
    match &r.process {
        None => write_long(&mut out, 0),
        Some(times) => {
            write_long(&mut out, 1);
            write_block(&mut out, times, |out, t| write_long(out, *t));
        }
    }
    write_block(&mut out, &r.tags, |out, (k, v)| {
        write_bytes(out, k.as_bytes());
        write_bytes(out, v.as_bytes());
    });
    write_long(&mut out, 2);
    write_block(&mut out, &r.fields, |out, (name, code)| {
        write_bytes(out, name.as_bytes());
        write_long(out, i64::from(*code));
    });
    write_image(&mut out, r.before.as_ref().filter(|_| r.op != 0));
    write_image(&mut out, r.after.as_ref().filter(|_| r.op != 2));
    if let Some(born) = r.born {
        write_long(&mut out, born);
    }
    Some(out)
}

impl CanalToDebezium {
    /// One DTS record re-written into ``out`` with its Kafka ``key`` (``None``: not known,
    /// so Python's); ``false`` when Python must process it.
    pub(crate) fn dts_same_message(&mut self, py: Python, value: &[u8], key: Option<Option<&[u8]>>, out: &mut Vec<Output>) -> PyResult<bool> {
        let PlanReader::DtsAvro(reader) = &mut self.reader else { return Ok(false) };
        let Some(key) = key else { return Ok(false) };
        if value.len() > self.max_message_bytes {
            return Ok(false);
        }
        let Some(r) = read(value) else { return Ok(false) };
        let Some(e) = event_of(&r).filter(|_| plain_decimals(&r)) else { return Ok(false) };
        let Some(ops) = reader.same.ops(py, &e, &reader.compile)? else { return Ok(false) };
        Ok(match ops[e.op] {
            Entry::Write(variant) => match write(&r, &e) {
                Some(record) => {
                    out.push((Some(record), key.map(<[u8]>::to_vec), variant));
                    true
                }
                None => false,
            },
            Entry::Dropped => true,
            Entry::Python => false,
        })
    }
}
