//! The Debezium reader: a debezium-json change event (Kafka Connect's JsonConverter
//! without the schema part) read as ``DebeziumJsonCodec.decode`` reads it, for the
//! plan's writers.
//!
//! Without the schema part the Python decoder types columns from the JSON values
//! (``inference.json_columns``: booleans ``bit(1)``, integers ``bigint``, numbers with
//! a fraction ``double``, strings ``longtext``, nulls ``longtext``) and takes the
//! primary key from the record's Kafka *key* (its field names). So a table layout here
//! is (database, table, key names, each column's name and JSON kind): per layout Python
//! compiles the writer's table once (``transforms/native_debezium.py``, a probe message
//! through the chain's own decoder, transforms and encoder), and each value is handed
//! to the Canal writer as the text its conversion reads (an integer's or a number's
//! literal, a string, ``1``/``0`` for a boolean).
//!
//! Under the schema part the columns are the schema's, each value read from its Connect
//! representation (``connect_in``) as the Canal text the writer's conversion reads (Canal,
//! Maxwell, GoldenGate, DTS Avro, TiCDC).
//!
//! Under the row-changing transforms a layout's table is a text writer's of the transformed
//! schema behind a ``row_shape`` (``Table::Shaped``): the row's Canal message is re-shaped first,
//! and the records keyed by the shaped row (as from Canal).
//!
//! A message is read in one pass by ``json_scan`` (borrowing from it); what the scanner
//! stops at (escapes aside, which serde decodes for it) is read by the serde
//! deserializers below, which decide.
//!
//! Anything the plan does not reproduce for certain goes to Python: duplicate fields, values whose kinds differ between the images, integers past 64
//! bits, objects (but the Connect structs ``connect_in`` reads under the schema part) and arrays, partial deletes, non-row ops, a message without ``ts_ms``.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::canal::{self, Checked, Text, FIELD_DATABASE, FIELD_ES, FIELD_OLD, FIELD_PK_NAMES, FIELD_TABLE, FIELD_TS};
use crate::connect_in::{Connect, Place};
use crate::json_scan::Scan;
use crate::typed_in::Tables;
use crate::{canal_out, canon, dts_avro_out, maxwell_out, ogg_out, ticdc_out, typed_json, Encoder, Output};

/// A value's JSON kind: what ``inference.json_type`` reads a column's type from.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Kind {
    Null,
    Bool,
    Int,
    Float,
    Str,
    /// A JSON object (the Debezium reader's scanner only: a Connect struct under the schema
    /// part, ``VariableScaleDecimal``'s ``{scale, value}``); its text the object as written.
    Obj,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Bool => "bool",
            Kind::Int => "int",
            Kind::Float => "float",
            Kind::Str => "str",
            Kind::Obj => "obj",
        }
    }
}

/// One column value: its kind, its JSON text as written, and the text the writer's
/// conversion reads (``None`` for null).
pub(crate) struct Value<'a> {
    pub(crate) kind: Kind,
    pub(crate) raw: &'a str,
    pub(crate) text: Option<Cow<'a, str>>,
}

impl Value<'_> {
    /// The value as ``orjson.dumps(orjson.loads(raw))`` writes it (its kind was read
    /// from ``raw``: an integer in 64 bits, a finite float).
    pub(crate) fn write(&self, out: &mut Vec<u8>) {
        match (self.kind, &self.text) {
            (Kind::Int, _) => crate::json::write_int(out, self.raw.parse::<i64>().unwrap_or_default()),
            (Kind::Float, _) => crate::json::write_f64(out, self.raw.parse::<f64>().unwrap_or_default()),
            (Kind::Str, Some(text)) => crate::json::write_str(out, text),
            _ => out.extend_from_slice(self.raw.as_bytes()),
        }
    }
}

impl<'a> Value<'a> {
    /// ``None``: a value the plan leaves to Python (objects, arrays, integers past 64
    /// bits, numbers orjson would not read as finite floats).
    pub(crate) fn of(raw: &'a RawValue) -> Option<Value<'a>> {
        Value::of_text(raw.get())
    }

    /// [`Value::of`] of a value's JSON text (valid JSON: checked by the caller's parser).
    pub(crate) fn of_text(text: &'a str) -> Option<Value<'a>> {
        let (kind, value) = match text.as_bytes().first()? {
            b'n' => (Kind::Null, None),
            b't' => (Kind::Bool, Some(Cow::Borrowed("1"))),
            b'f' => (Kind::Bool, Some(Cow::Borrowed("0"))),
            // The raw value is valid JSON: a string without escapes is its own text.
            b'"' if !text.contains('\\') => (Kind::Str, Some(Cow::Borrowed(&text[1..text.len() - 1]))),
            b'"' => (Kind::Str, Some(serde_json::from_str::<Text<'a>>(text).ok()?.0)),
            b'{' | b'[' => return None,
            _ if text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E')) => {
                if !text.parse::<f64>().ok()?.is_finite() {
                    return None;
                }
                (Kind::Float, Some(Cow::Borrowed(text)))
            }
            _ => {
                text.parse::<i64>().ok()?;
                (Kind::Int, Some(Cow::Borrowed(text)))
            }
        };
        Some(Value { kind, raw: text, text: value })
    }
}

/// An image's cells: column and value, in message order.
type Cells<'a> = [(Cow<'a, str>, Value<'a>)];

/// One image (``before`` or ``after``): column -> value, in message order; ``None``
/// when some value is one the plan leaves to Python.
pub(crate) struct Image<'a>(pub(crate) Option<Vec<(Cow<'a, str>, Value<'a>)>>);

impl<'de> Deserialize<'de> for Image<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Image<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a row image")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(map.size_hint().unwrap_or(16));
                let mut plain = true;
                while let Some(k) = map.next_key::<Text<'de>>()? {
                    // Scalars are checked as orjson reads them by ``Value::of``; objects and
                    // arrays make the message Python's.
                    let raw: &'de RawValue = map.next_value()?;
                    match Value::of(raw) {
                        Some(v) if plain => out.push((k.0, v)),
                        _ => plain = false,
                    }
                }
                Ok(Image(plain.then_some(out)))
            }
        }
        d.deserialize_map(V)
    }
}

/// The ``source`` block's fields the Canal writer needs.
#[derive(Default)]
struct Source<'a> {
    db: Option<Cow<'a, str>>,
    /// ``connector`` and ``schema``: what route and header templates may read (``db_type``, ``schema``).
    connector: Option<Cow<'a, str>>,
    schema: Option<Cow<'a, str>>,
    table: Option<Cow<'a, str>>,
    ts_ms: Option<i64>,
    /// A ``txId`` field other than a non-negative integer (Python re-types it, or takes
    /// the transaction's id, when it re-writes the block).
    tx_id: bool,
    /// The position fields as written (what Maxwell writes of them: ``xid``, ``position``,
    /// ``server_id``, ``gtid``).
    tx_id_raw: Option<&'a str>,
    file: Option<&'a str>,
    pos: Option<&'a str>,
    server_id: Option<&'a str>,
    gtid: Option<&'a str>,
    /// An Oracle ``scn`` (DataWorks writes it per event: the DataWorks writer leaves it to Python).
    scn: bool,
}

impl<'de> Deserialize<'de> for Source<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Source<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a source block")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut s = Source::default();
                let mut names: Vec<Text<'de>> = Vec::with_capacity(16);
                while let Some(k) = map.next_key::<Text<'de>>()? {
                    if names.iter().any(|n| n.0 == k.0) {
                        return Err(de::Error::custom("duplicate field")); // Python keeps the last: let it
                    }
                    match k.0.as_ref() {
                        "db" => s.db = map.next_value::<Option<Text>>()?.map(|t| t.0),
                        "table" => s.table = map.next_value::<Option<Text>>()?.map(|t| t.0),
                        "connector" => s.connector = map.next_value::<Option<Text>>()?.map(|t| t.0),
                        "schema" => s.schema = map.next_value::<Option<Text>>()?.map(|t| t.0),
                        "ts_ms" => s.ts_ms = map.next_value()?,
                        "txId" => {
                            let raw = checked(&mut map)?;
                            s.tx_id = !raw.bytes().all(|b| b.is_ascii_digit());
                            s.tx_id_raw = Some(raw);
                        }
                        "file" => s.file = Some(checked(&mut map)?),
                        "pos" => s.pos = Some(checked(&mut map)?),
                        "server_id" => s.server_id = Some(checked(&mut map)?),
                        "gtid" => s.gtid = Some(checked(&mut map)?),
                        "scn" => {
                            s.scn = true;
                            map.next_value::<Checked>()?;
                        }
                        _ => {
                            map.next_value::<Checked>()?;
                        }
                    }
                    names.push(k);
                }
                Ok(s)
            }
        }
        d.deserialize_map(V)
    }
}

/// A field's value as written, checked as orjson reads it (a value orjson refuses, such as
/// ``1e400``, makes the message Python's, which words the error).
fn checked<'de, A: MapAccess<'de>>(map: &mut A) -> Result<&'de str, A::Error> {
    let raw: &'de RawValue = map.next_value()?;
    serde_json::from_str::<Checked>(raw.get()).map_err(de::Error::custom)?;
    Ok(raw.get())
}

/// The fields of a Debezium row event the plan reads.
#[derive(Default)]
struct Envelope<'a> {
    op: Option<Cow<'a, str>>,
    before: Option<Image<'a>>,
    after: Option<Image<'a>>,
    source: Option<Source<'a>>,
    /// The source block as written (the Debezium writer copies it).
    source_raw: Option<&'a str>,
    ts_ms: Option<i64>,
    /// ``schema`` or ``payload`` is a field: the schema part's form (Python's, for now).
    wrapped: bool,
    /// Which of op, before, after, source, ts_ms are present (null included).
    seen: u8,
    /// The other fields (``transaction``, unknown ones), in message order, as written.
    others: Vec<(Cow<'a, str>, &'a str)>,
}

/// All of ``op``, ``before``, ``after``, ``source`` and ``ts_ms`` present.
const ALL_FIELDS: u8 = 31;

impl<'de> Deserialize<'de> for Envelope<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Envelope<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a Debezium change event")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut e = Envelope::default();
                let mut seen: u8 = 0;
                while let Some(k) = map.next_key::<Text<'de>>()? {
                    let bit = match k.0.as_ref() {
                        "op" => 1,
                        "before" => 2,
                        "after" => 4,
                        "source" => 8,
                        "ts_ms" => 16,
                        _ => {
                            if e.others.iter().any(|(n, _)| *n == k.0) {
                                return Err(de::Error::custom("duplicate field"));
                            }
                            e.wrapped |= k.0 == "schema" || k.0 == "payload";
                            let raw = checked(&mut map)?;
                            e.others.push((k.0, raw));
                            continue;
                        }
                    };
                    if seen & bit != 0 {
                        return Err(de::Error::custom("duplicate field")); // Python keeps the last: let it
                    }
                    seen |= bit;
                    match bit {
                        1 => e.op = map.next_value::<Option<Text>>()?.map(|t| t.0),
                        2 => e.before = map.next_value()?,
                        4 => e.after = map.next_value()?,
                        8 => {
                            let raw: &'de RawValue = map.next_value()?;
                            e.source = serde_json::from_str(raw.get()).map_err(de::Error::custom)?;
                            e.source_raw = Some(raw.get());
                        }
                        _ => e.ts_ms = map.next_value()?,
                    }
                }
                e.seen = seen;
                Ok(e)
            }
        }
        d.deserialize_map(V)
    }
}

/// The single-pass reading (``json_scan``) of what the deserializers above read: the same
/// [`Envelope`], or ``None`` when serde must decide (anything unusual: escapes serde
/// decodes, values an image leaves to Python, a repeated field, malformed text).
fn scan_envelope<'t>(text: &'t str, sources: &mut SourceTemplate) -> Option<Envelope<'t>> {
    let mut scan = Scan::new(text);
    let mut e = Envelope::default();
    scan.object(|scan, name| {
        let bit = match name.as_ref() {
            "op" => 1,
            "before" => 2,
            "after" => 4,
            "source" => 8,
            "ts_ms" => 16,
            _ => {
                if e.others.iter().any(|(n, _)| *n == name) {
                    return None;
                }
                e.wrapped |= name == "schema" || name == "payload";
                let raw = scan.value()?;
                e.others.push((name, raw));
                return Some(());
            }
        };
        if e.seen & bit != 0 {
            return None;
        }
        e.seen |= bit;
        match bit {
            1 => e.op = scan.optional_string()?,
            2 => e.before = scan_image(scan, true)?,
            4 => e.after = scan_image(scan, true)?,
            8 => {
                let (source, raw) = scan.spanned(|scan| scan_source_with(scan, sources))?;
                e.source = Some(source);
                e.source_raw = Some(raw);
            }
            _ => e.ts_ms = scan.optional_i64()?,
        }
        Some(())
    })?;
    scan.end()?;
    Some(e)
}

/// An image as [`Image`] reads it (``Some(None)``: null); ``None`` also for an image with a
/// value the plan leaves to Python (the serde path then reads it as such). ``objects``: an
/// object value is read as its raw text (the schema part's structs) rather than left to Python.
pub(crate) fn scan_image<'a>(scan: &mut Scan<'a>, objects: bool) -> Option<Option<Image<'a>>> {
    if scan.null()? {
        return Some(None);
    }
    let mut cells = Vec::with_capacity(16);
    scan.object(|scan, name| {
        cells.push((name, scan_value(scan, objects)?));
        Some(())
    })?;
    Some(Some(Image(Some(cells))))
}

/// A cell's value as [`Value::of_text`] reads it, from the scanner's token (no second
/// pass); ``None`` for what it leaves to Python (arrays, integers past 64 bits, objects unless
/// ``objects``).
fn scan_value<'a>(scan: &mut Scan<'a>, objects: bool) -> Option<Value<'a>> {
    match scan.peek()? {
        b'"' => {
            let (text, raw) = scan.spanned(Scan::string)?;
            Some(Value { kind: Kind::Str, raw, text: Some(text) })
        }
        b'-' | b'0'..=b'9' => {
            let n = scan.number()?;
            let kind = match n.int {
                Some(_) => Kind::Int,
                None if n.integer => return None,
                None => Kind::Float,
            };
            Some(Value { kind, raw: n.text, text: Some(Cow::Borrowed(n.text)) })
        }
        b'n' | b't' | b'f' => Value::of_text(scan.value()?),
        b'{' if objects => {
            let raw = scan.value()?;
            Some(Value { kind: Kind::Obj, raw, text: Some(Cow::Borrowed(raw)) })
        }
        _ => None,
    }
}

/// A ``source`` field's bit in [`scan_source`]'s set of those met (0: a field it does not know).
fn source_bit(name: &str) -> u32 {
    match name {
        "db" => 1,
        "table" => 2,
        "connector" => 4,
        "schema" => 8,
        "ts_ms" => 16,
        "txId" => 32,
        "file" => 64,
        "pos" => 128,
        "server_id" => 256,
        "gtid" => 512,
        // Debezium's other fields (MySQL's and the common ones): checked, not kept.
        "version" => 1 << 10,
        "name" => 1 << 11,
        "snapshot" => 1 << 12,
        "sequence" => 1 << 13,
        "row" => 1 << 14,
        "thread" => 1 << 15,
        "query" => 1 << 16,
        "ts_us" => 1 << 17,
        "ts_ns" => 1 << 18,
        _ => 0,
    }
}

/// The fields [`Source`] keeps (bits of [`source_bit`]).
const KEPT_SOURCE_FIELDS: u32 = (1 << 10) - 1;

/// A known field's value read into ``s`` (bit of [`source_bit`]; not kept: checked and skipped).
fn read_source_field<'a>(scan: &mut Scan<'a>, s: &mut Source<'a>, bit: u32) -> Option<()> {
    match bit {
        1 => s.db = scan.optional_string()?,
        2 => s.table = scan.optional_string()?,
        4 => s.connector = scan.optional_string()?,
        8 => s.schema = scan.optional_string()?,
        16 => s.ts_ms = scan.optional_i64()?,
        32 => {
            let raw = scan.value()?;
            s.tx_id = !raw.bytes().all(|b| b.is_ascii_digit());
            s.tx_id_raw = Some(raw);
        }
        64 => s.file = Some(scan.value()?),
        128 => s.pos = Some(scan.value()?),
        256 => s.server_id = Some(scan.value()?),
        512 => s.gtid = Some(scan.value()?),
        _ => {
            scan.value()?;
        }
    }
    Some(())
}

/// The ``source`` block as [`Source`] reads it (a repeated field: ``None``); ``spans``, when
/// given, receives each kept field's bit and its value's span (from its first byte, past
/// whitespace, to its end) in the text.
fn scan_source<'a>(scan: &mut Scan<'a>, mut spans: Option<&mut Vec<(u32, usize, usize)>>) -> Option<Source<'a>> {
    let mut s = Source::default();
    let mut known: u32 = 0;
    let mut others: Vec<Cow<'a, str>> = Vec::new();
    scan.object(|scan, name| {
        let bit = source_bit(&name);
        if bit == 0 {
            if others.contains(&name) {
                return None;
            }
            s.scn |= name == "scn";
            others.push(name);
            return scan.value().map(drop);
        }
        if known & bit != 0 {
            return None;
        }
        known |= bit;
        scan.peek()?;
        let start = scan.position();
        read_source_field(scan, &mut s, bit)?;
        if let Some(spans) = spans.as_deref_mut().filter(|_| bit & KEPT_SOURCE_FIELDS != 0) {
            spans.push((bit, start, scan.position()));
        }
        Some(())
    })?;
    Some(s)
}

/// The fields of a block that change from message to message (the event's time and
/// position): read again from each block matched with the [`SourceTemplate`] where their
/// bytes differ from the template's.
const VARYING_SOURCE_FIELDS: u32 = 16 | 32 | 64 | 128 | 512;

/// How a [`SourceTemplate`] field's value is had from a block that matches it.
#[derive(Clone, Copy, PartialEq)]
enum FieldKind {
    /// Placed from its bytes, equal to the template's (a plain string or null, a raw value).
    Placed,
    /// A varying field: placed where its bytes equal the template's, else read again.
    Varying,
    /// Read again (a kept string with escapes: its text is decoded).
    Read,
}

/// One kept field of a [`SourceTemplate`]: its bit, its value's span in the block, its kind.
struct TemplateField {
    bit: u32,
    start: usize,
    end: usize,
    kind: FieldKind,
}

/// The last ``source`` block scanned in full. Debezium repeats it nearly unchanged from
/// message to message (callgrind: its scan was a sixth of a with-schema message), so a
/// block whose bytes equal this one's, but for the values of the varying fields
/// ([`VARYING_SOURCE_FIELDS`]), is not scanned again: its bytes are compared with the
/// template's in stretches up to each varying field's end (else its start, and that value is
/// read as the full scan reads it), and the kept fields' values in equal stretches are placed
/// from their bytes. Equal bytes in the same place scan alike (a value's end is fixed by the
/// equal bytes after it: a separator or the block's end), so the result is the full scan's; any
/// other block is scanned in full and becomes the template.
#[derive(Default)]
pub(crate) struct SourceTemplate {
    /// The block as written, from its ``{`` to its ``}``.
    bytes: Vec<u8>,
    /// Its kept fields in block order.
    fields: Vec<TemplateField>,
    /// An ``scn`` field (a name the template's bytes hold).
    scn: bool,
    /// Its ``ts_ms`` as read (placed with its bytes).
    ts_ms: Option<i64>,
}

impl SourceTemplate {
    /// The block at the cursor read by comparison with the template (the cursor then past
    /// it); ``None`` (the cursor anywhere) when it differs outside the varying fields' values.
    fn read<'a>(&self, scan: &mut Scan<'a>) -> Option<Source<'a>> {
        if self.bytes.is_empty() {
            return None;
        }
        scan.peek()?;
        let base = scan.position();
        let text = scan.rest();
        let mut s = Source { scn: self.scn, ..Default::default() };
        // Template bytes checked so far, where the block is at that point, the first field not set.
        let (mut done, mut at, mut next) = (0, 0, 0);
        for (i, f) in self.fields.iter().enumerate() {
            if f.kind == FieldKind::Placed {
                continue;
            }
            if f.kind == FieldKind::Varying && text.get(at..at + f.end - done) == Some(&self.bytes[done..f.end]) {
                self.place(scan, &mut s, &self.fields[next..=i], base + at, done)?;
                (at, done, next) = (at + f.end - done, f.end, i + 1);
                continue;
            }
            if text.get(at..at + f.start - done) != Some(&self.bytes[done..f.start]) {
                return None;
            }
            self.place(scan, &mut s, &self.fields[next..i], base + at, done)?;
            scan.seek(base + at + f.start - done)?;
            read_source_field(scan, &mut s, f.bit)?;
            (at, done, next) = (scan.position() - base, f.end, i + 1);
        }
        let tail = &self.bytes[done..];
        if text.get(at..at + tail.len()) != Some(tail) {
            return None;
        }
        self.place(scan, &mut s, &self.fields[next..], base + at, done)?;
        scan.seek(base + at + tail.len())?;
        Some(s)
    }

    /// The values of ``fields`` (after template offset ``done``) placed from the block's text
    /// (bytes checked equal to the template's), ``done`` being at ``origin`` in the scanned text.
    fn place<'a>(&self, scan: &Scan<'a>, s: &mut Source<'a>, fields: &[TemplateField], origin: usize, done: usize) -> Option<()> {
        for f in fields {
            let value = scan.slice(origin + (f.start - done), origin + (f.end - done))?;
            let text = || (value != "null").then(|| Cow::Borrowed(&value[1..value.len() - 1]));
            match f.bit {
                1 => s.db = text(),
                2 => s.table = text(),
                4 => s.connector = text(),
                8 => s.schema = text(),
                16 => s.ts_ms = self.ts_ms,
                32 => {
                    s.tx_id = !value.bytes().all(|b| b.is_ascii_digit());
                    s.tx_id_raw = Some(value);
                }
                64 => s.file = Some(value),
                128 => s.pos = Some(value),
                256 => s.server_id = Some(value),
                512 => s.gtid = Some(value),
                _ => return None, // not a kept field: not reached
            }
        }
        Some(())
    }

    /// ``block`` (a block [`scan_source`] read as ``source``, with the ``spans`` of its kept
    /// fields, offsets in ``block``) as the template.
    fn remember(&mut self, block: &str, spans: &[(u32, usize, usize)], source: &Source) {
        self.bytes.clear();
        self.bytes.extend_from_slice(block.as_bytes());
        self.fields.clear();
        for &(bit, start, end) in spans {
            let value = &block[start..end];
            let kind = if bit & VARYING_SOURCE_FIELDS != 0 {
                FieldKind::Varying
            } else if bit & (1 | 2 | 4 | 8) != 0 && value.contains('\\') {
                FieldKind::Read // a string with escapes: its text decoded by the reader
            } else {
                FieldKind::Placed
            };
            self.fields.push(TemplateField { bit, start, end, kind });
        }
        self.scn = source.scn;
        self.ts_ms = source.ts_ms;
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.fields.clear();
    }
}

/// The ``source`` block at the cursor: by the template when it matches, else scanned in full
/// (and then the template).
fn scan_source_with<'a>(scan: &mut Scan<'a>, template: &mut SourceTemplate) -> Option<Source<'a>> {
    let mut probe = scan.clone();
    if let Some(source) = template.read(&mut probe) {
        *scan = probe;
        return Some(source);
    }
    scan.peek()?;
    let start = scan.position();
    let mut spans = Vec::with_capacity(12);
    let source = scan_source(scan, Some(&mut spans))?;
    let block = scan.text_from(start);
    for span in &mut spans {
        span.1 -= start;
        span.2 -= start;
    }
    template.remember(block, &spans, &source);
    Some(source)
}

/// The key names of a plain JSON object key (``json_scan``; ``None``: [`key_names`]' serde path
/// decides); ``payload``: of a JsonConverter key's payload, whose names are whatever they are.
fn scan_key_names(text: &str, payload: bool) -> Option<Vec<Cow<'_, str>>> {
    let mut scan = Scan::new(text);
    let mut names: Vec<Cow<'_, str>> = Vec::new();
    scan.object(|scan, name| {
        if !payload && (name == "schema" || name == "payload") || names.contains(&name) {
            return None;
        }
        names.push(name);
        scan.value().map(drop)
    })?;
    scan.end()?;
    Some(names)
}

/// Is ``head`` (UTF-8) followed by ``}`` a JSON object of one field, ``schema`` (``json_scan``:
/// as serde and orjson read it)?
fn schema_only(head: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(head) else { return false };
    let whole = format!("{text}}}");
    let mut scan = Scan::new(&whole);
    let mut fields = 0;
    let read = scan.object(|scan, name| {
        fields += 1;
        (name == "schema").then_some(())?;
        scan.value().map(drop)
    });
    read.is_some() && fields == 1 && scan.end().is_some()
}

/// The primary-key names Python takes from a record key (``_key_names``): the fields of
/// a JSON object key in order; none for a null or empty key or any other JSON value;
/// ``None`` (Python's) for anything less plain (a ``schema``/``payload`` key, repeated
/// fields, text that is not JSON).
fn key_names(key: Option<&[u8]>) -> Option<Vec<Cow<'_, str>>> {
    /// A key's names (``PAYLOAD``: a JsonConverter key's payload's, not unwrapped again).
    struct Names<'a, const PAYLOAD: bool>(Vec<Cow<'a, str>>);
    impl<'de, const PAYLOAD: bool> Deserialize<'de> for Names<'de, PAYLOAD> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V<const PAYLOAD: bool>;
            impl<'de, const PAYLOAD: bool> Visitor<'de> for V<PAYLOAD> {
                type Value = Names<'de, PAYLOAD>;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a key object")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                    let mut names: Vec<Cow<'de, str>> = Vec::new();
                    let mut payload: Option<Vec<Cow<'de, str>>> = None;
                    while let Some(k) = map.next_key::<Text<'de>>()? {
                        if names.contains(&k.0) {
                            return Err(de::Error::custom("repeated field"));
                        }
                        if k.0 == "payload" && !PAYLOAD {
                            // JsonConverter's ``{"schema", "payload"}``: the payload's names.
                            let raw = checked(&mut map)?;
                            payload = Some(if raw.starts_with('{') { serde_json::from_str::<Names<true>>(raw).map_err(de::Error::custom)?.0 } else { Vec::new() });
                        } else {
                            map.next_value::<Checked>()?;
                        }
                        names.push(k.0);
                    }
                    match payload {
                        _ if PAYLOAD => Ok(Names(names)),
                        Some(inner) if names.len() == 2 && names.iter().any(|n| n == "schema") => Ok(Names(inner)),
                        Some(_) => Err(de::Error::custom("not a plain key")),
                        None if names.iter().any(|n| n == "schema") => Err(de::Error::custom("not a plain key")),
                        None => Ok(Names(names)),
                    }
                }
            }
            d.deserialize_map(V::<PAYLOAD>)
        }
    }
    let Some(key) = key.filter(|k| !k.is_empty()) else { return Some(Vec::new()) };
    let text = std::str::from_utf8(key).ok()?;
    if let Some(names) = scan_key_names(text, false) {
        return Some(names);
    }
    serde_json::from_str::<Checked>(text).ok()?;
    if !text.trim_start().starts_with('{') {
        return Some(Vec::new());
    }
    Some(serde_json::from_str::<Names<false>>(text).ok()?.0)
}

/// A table layout: database, table, connector, schema, key names, and each column's
/// name and kind.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Layout {
    /// The schema part as the message starts (``{"schema":...`` up to ``,"payload":``), shared
    /// with [`Heads`] (so a message cut at a recent head finds its layout by pointer).
    head: Option<Arc<[u8]>>,
    database: String,
    table: String,
    connector: Option<String>,
    schema: Option<String>,
    pk: Vec<String>,
    columns: Vec<(String, Kind)>,
}

/// Does a column name appear twice (a message Python reads keeping the last value)?
fn repeats_a_column(columns: &[(&str, Kind)]) -> bool {
    columns.iter().enumerate().any(|(n, (name, _))| columns[..n].iter().any(|(k, _)| k == name))
}

impl Layout {
    /// Is this the layout of a message's ``head``, source, key names and columns? The
    /// cheapest and likeliest differences first: the counts, the columns' kinds.
    fn matches(&self, head: Option<&Arc<[u8]>>, source: &Source, pk: &[Cow<str>], columns: &[(&str, Kind)]) -> bool {
        if self.columns.len() != columns.len() || self.pk.len() != pk.len() {
            return false;
        }
        // A table's layouts differ in their kinds (a column null in one image, not in
        // another): those first, bytes, before any name.
        if !self.columns.iter().zip(columns).all(|((_, a), (_, b))| a == b) {
            return false;
        }
        let same_head = match (&self.head, head) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a[..] == b[..],
            (a, b) => a.is_none() && b.is_none(),
        };
        same_head
            && Some(self.database.as_str()) == source.db.as_deref()
            && Some(self.table.as_str()) == source.table.as_deref()
            && self.connector.as_deref() == source.connector.as_deref()
            && self.schema.as_deref() == source.schema.as_deref()
            && self.pk.iter().zip(pk).all(|(a, b)| a == b)
            && self.columns.iter().zip(columns).all(|((a, _), (b, _))| a == b)
    }
}

const CACHE_SIZE: usize = 1024;

/// One layout compiled for the plan's writer.
enum Table {
    /// Canal flat messages (every value re-written as Canal text).
    Canal(canal_out::Table),
    /// Debezium change events reproduced (values, source block and other fields copied
    /// as orjson's round trip writes them).
    Debezium(DebeziumOut),
    /// TiCDC's Canal-JSON (``ticdc_out``; every value re-written as TiCDC text).
    Ticdc(ticdc_out::Table),
    /// Maxwell's or GoldenGate's typed JSON (each value converted from its text).
    Typed(typed_json::Table),
    /// DTS Avro records (each value converted from its text).
    DtsAvro(dts_avro_out::Table),
    /// CloudCanal's JSON (``cloudcanal_out``; every value re-written as MySQL's text).
    CloudCanal(crate::cloudcanal_out::Table),
    /// TDSQL's binlog row events (``tdsql_out``; every value a SQL literal of MySQL's text).
    Tdsql(crate::tdsql_out::Table),
    /// A text writer's table of the transformed schema, fed the rows the row-changing
    /// transforms re-shaped (``row_shape``), as from Canal.
    Shaped(Box<crate::row_shape::RowShape>, Box<Table>),
}

impl Table {
    /// What becomes of an op's rows: written with a variant, else dropped (``Err(true)``)
    /// or Python's (``Err(false)``).
    fn op(&self, op: usize) -> Result<usize, bool> {
        let entry = |e: &canal_out::Entry| match e {
            canal_out::Entry::Write(variant) => Ok(*variant),
            canal_out::Entry::Python => Err(false),
            canal_out::Entry::Dropped => Err(true),
        };
        match self {
            Table::Canal(t) => entry(&t.ops[op]),
            Table::Debezium(d) => entry(&d.ops[op]),
            Table::Typed(t) => entry(&t.ops[op]),
            Table::Ticdc(t) => entry(&t.ops[op]),
            Table::CloudCanal(t) => entry(&t.ops[op]),
            Table::Tdsql(t) => entry(&t.text().ops[op]),
            Table::Shaped(_, inner) => inner.op(op),
            Table::DtsAvro(t) => match &t.ops[op] {
                dts_avro_out::Entry::Write(variant, _) => Ok(*variant),
                dts_avro_out::Entry::Python => Err(false),
                dts_avro_out::Entry::Dropped => Err(true),
            },
        }
    }
}

/// The plan's writer's table of a layout from its compiled ``spec``.
fn writer_table(spec: &Bound<PyAny>, encoder: &Encoder) -> PyResult<Option<Table>> {
    Ok(match encoder {
        Encoder::Canal { .. } => canal_out::Table::from_spec(spec, None, None, true)?.map(Table::Canal),
        Encoder::Debezium => Some(Table::Debezium(DebeziumOut::from_spec(spec)?)),
        Encoder::Ticdc => ticdc_out::Table::from_spec(spec, None, None)?.map(Table::Ticdc),
        Encoder::Maxwell | Encoder::Ogg => typed_json::Table::from_spec(spec)?.map(Table::Typed),
        Encoder::DtsAvro(_) => Some(Table::DtsAvro(dts_avro_out::Table::from_spec(spec)?)),
        Encoder::CloudCanal | Encoder::CKafka(_) | Encoder::DataWorks { .. } => crate::cloudcanal_out::Table::from_spec(spec)?.map(Table::CloudCanal),
        Encoder::Tdsql => crate::tdsql_out::Table::from_spec(spec)?.map(Table::Tdsql),
    })
}

/// One layout compiled: the writer's table and, under a schema part, per column how its
/// values are read from their Connect representation (``connect_in``; none: as written).
struct Compiled {
    table: Table,
    connect: Vec<Connect>,
}

/// A compiler's answer split into the writer's spec and the Connect conversions: under a
/// schema part ``("connect", [name per column], spec)`` (``native_debezium._with_reads``),
/// else the spec alone.
fn split_spec<'py>(spec: &Bound<'py, PyAny>) -> PyResult<(Bound<'py, PyAny>, Vec<Connect>)> {
    let Ok((tag, names, inner)) = spec.extract::<(String, Vec<Option<String>>, Bound<'py, PyAny>)>() else { return Ok((spec.clone(), Vec::new())) };
    if tag != "connect" {
        return Ok((spec.clone(), Vec::new()));
    }
    let mut connect = Vec::with_capacity(names.len());
    for name in &names {
        let Some(c) = Connect::from_name(name.as_deref()) else {
            return Err(pyo3::exceptions::PyValueError::new_err(format!("unknown Connect conversion {name:?}")));
        };
        connect.push(c);
    }
    Ok((inner, connect))
}

/// One layout for the Debezium writer.
struct DebeziumOut {
    /// Per op (c, u, d, r) what becomes of the rows.
    ops: [canal_out::Entry; 4],
    /// The schema parts written (JsonConverter ``schemas.enable``): the envelope's, the key's.
    envelope_schema: Option<Vec<u8>>,
    key_schema: Option<Vec<u8>>,
    /// Columns whose JSON numbers Python re-reads exactly (numeric decimals): a value
    /// other than a string or null there is Python's.
    exact: Vec<String>,
    /// Under ``unwrap`` (``native_debezium._copied_unwrap``), per op the variants of the flat
    /// row (``envelope_schema`` then the row's schema) and of its tombstone, each if written.
    unwrap: Option<Vec<(Option<usize>, Option<usize>)>>,
    /// Under ``unwrap``, per op the fields ``add_fields`` and ``rewrite`` append to the flat row
    /// (``native_debezium._added``): each ``,"name":`` then a constant or a per-row slot.
    added: Vec<Vec<(Vec<u8>, Slot)>>,
}

/// What follows an added field's ``,"name":``: nothing more (a constant, part of the name's
/// bytes), the source's ``ts_ms`` or the envelope's.
#[derive(Clone, Copy)]
enum Slot {
    Constant,
    SourceTs,
    EnvelopeTs,
}

impl Slot {
    fn from_code(code: u8) -> PyResult<Slot> {
        match code {
            0 => Ok(Slot::Constant),
            1 => Ok(Slot::SourceTs),
            2 => Ok(Slot::EnvelopeTs),
            _ => Err(pyo3::exceptions::PyValueError::new_err(format!("unknown added field slot {code}"))),
        }
    }
}

impl DebeziumOut {
    /// ``(ops, envelope_schema, key_schema, exact_columns[, unwrap, added])``; ``ops`` as
    /// [`canal_out::entries`], ``unwrap`` per op ``(row variant, tombstone variant)``, ``added``
    /// per op ``[(bytes, slot code)]``.
    fn from_spec(spec: &Bound<PyAny>) -> PyResult<DebeziumOut> {
        let unwrap = if spec.len()? > 4 { Some(spec.get_item(4)?.extract()?) } else { None };
        let mut added = Vec::new();
        if spec.len()? > 5 {
            for op in spec.get_item(5)?.extract::<Vec<Vec<(Vec<u8>, u8)>>>()? {
                added.push(op.into_iter().map(|(bytes, code)| Ok((bytes, Slot::from_code(code)?))).collect::<PyResult<Vec<_>>>()?);
            }
        }
        let ops = canal_out::entries(spec.get_item(0)?.extract()?)?;
        let (envelope_schema, key_schema, exact) = (spec.get_item(1)?.extract()?, spec.get_item(2)?.extract()?, spec.get_item(3)?.extract()?);
        Ok(DebeziumOut { ops, envelope_schema, key_schema, exact, unwrap, added })
    }

    /// Are the images' values ones this writer copies (no objects, whose text orjson may
    /// re-write; no exact re-read of numbers)?
    fn copies(&self, images: [Option<&Cells>; 2]) -> bool {
        // Objects are Python's whatever the exact columns (their text copied as written where
        // orjson writes ``0.90`` as ``0.9``: a fuzz finding, ``&&`` once bound before ``||``).
        let objects = images.iter().flatten().any(|image| image.iter().any(|(_, v)| v.kind == Kind::Obj));
        !objects
            && (self.exact.is_empty()
                || images.iter().flatten().all(|image| {
                    image.iter().all(|(name, v)| matches!(v.kind, Kind::Null | Kind::Str) || !self.exact.iter().any(|c| c == name))
                }))
    }
}

/// The reader's compiled tables (per layout, for the plan's writer) and the compiler.
pub struct Reader {
    compile: PyObject,
    max_message_bytes: usize,
    /// The Debezium writer's ``tombstones_on_delete``.
    tombstones_on_delete: bool,
    tables: Tables<Layout, Compiled>,
    /// Schema parts whose messages are Python's (the compiler met one with values in
    /// Connect representations the writer does not convert, ``PYTHON_HEAD``): later ones
    /// are rejected before the payload is parsed.
    python_heads: HashSet<Vec<u8>>,
    /// The last of them a message started with (compared before any search or hash).
    last_python_head: Option<Vec<u8>>,
    /// The schema parts messages started with lately.
    heads: Heads,
    /// The schema parts record keys started with lately (each checked to be exactly
    /// ``{"schema":<one JSON value>`` when remembered).
    key_heads: Heads,
    /// The last ``source`` block scanned in full (the next ones read by comparison).
    sources: SourceTemplate,
    /// The Connect values' converted texts of the message being read, and their places
    /// ([`connect_rows`]), reused from message to message.
    texts: String,
    places: Vec<Place>,
}

/// Schema parts met lately, the latest first: a message that starts with one of them and
/// ``,"payload":`` is cut there (the first ``,"payload":``, as the Python decoder cuts it: a
/// head holds none, and none can start within the 11 bytes before another, since its only
/// comma is its first byte) without searching the schema part or checking its UTF-8 again,
/// and its layout is found by pointer rather than by comparing the schema part once more.
struct Heads(Vec<Arc<[u8]>>);

/// Schema parts remembered: a topic's tables alternate between a few.
const RECENT_HEADS: usize = 4;

impl Heads {
    /// The remembered head ``value`` starts with, followed by ``,"payload":`` (moved first).
    fn known(&mut self, value: &[u8]) -> Option<Arc<[u8]>> {
        let n = self.0.iter().position(|h| value.get(h.len()..).is_some_and(|rest| rest.starts_with(SEP)) && value.starts_with(h))?;
        self.0[..=n].rotate_right(1);
        Some(self.0[0].clone())
    }

    /// ``head`` (UTF-8, as cut by [`split_head`]) remembered first.
    fn remember(&mut self, head: &[u8]) -> Arc<[u8]> {
        if self.0.len() == RECENT_HEADS {
            self.0.pop();
        }
        self.0.insert(0, Arc::from(head));
        self.0[0].clone()
    }
}

/// Op codes in the writers' order (c, u, d, r).
fn op_index(code: &str) -> Option<usize> {
    Some(match code {
        "c" => 0,
        "u" => 1,
        "d" => 2,
        "r" => 3,
        _ => return None,
    })
}

impl Reader {
    pub fn new(compile: PyObject, max_message_bytes: usize, tombstones_on_delete: bool) -> Reader {
        Reader { compile, max_message_bytes, tombstones_on_delete, tables: Tables::new(), python_heads: HashSet::new(), last_python_head: None, heads: Heads(Vec::with_capacity(RECENT_HEADS)), key_heads: Heads(Vec::with_capacity(RECENT_HEADS)), sources: SourceTemplate::default(), texts: String::new(), places: Vec::new() }
    }

    pub fn clear(&mut self) {
        self.tables.clear();
        self.python_heads.clear();
        self.last_python_head = None;
        self.heads.0.clear();
        self.key_heads.0.clear();
        self.sources.clear();
    }

    /// Does ``value``'s schema part (as [`split_head`] cuts it) make it Python's? The last
    /// such head is compared first: a head holds no ``,"payload":`` (it ends before the
    /// first) and no ``,"payload":`` can start within the 11 bytes before another, so a
    /// value that is that head followed by ``,"payload":`` is cut there.
    fn python_head(&mut self, value: &[u8]) -> bool {
        if let Some(head) = &self.last_python_head {
            if value.starts_with(head) && value[head.len()..].starts_with(SEP) {
                return true;
            }
        }
        if self.python_heads.is_empty() {
            return false;
        }
        match split_head(value) {
            Some(head) if self.python_heads.contains(head) => {
                self.last_python_head = Some(head.to_vec());
                true
            }
            _ => false,
        }
    }

    /// [`key_names`], a JsonConverter key with its schema part (``{"schema":...,"payload":{...}}``)
    /// read without the schema part when it is a recent one: the key is then valid JSON if its
    /// payload is, and its names are the payload's.
    fn key_names<'k>(&mut self, key: Option<&'k [u8]>) -> Option<Vec<Cow<'k, str>>> {
        if let Some(k) = key.filter(|k| k.starts_with(HEAD)) {
            let cut = match self.key_heads.known(k) {
                Some(head) => Some(head.len()),
                None => split_head(k).filter(|head| schema_only(head)).map(|head| self.key_heads.remember(head).len()),
            };
            let payload = cut.and_then(|cut| std::str::from_utf8(&k[cut + SEP.len()..]).ok());
            if let Some(names) = payload.and_then(|p| p.trim_end_matches([' ', '\t', '\n', '\r']).strip_suffix('}')).and_then(|p| scan_key_names(p, true)) {
                return Some(names);
            }
        }
        key_names(key)
    }

    /// The compiled table of a layout (``None``: Python's). A layout is compiled (or found
    /// Python's) once: what is checked of its columns then, such as a repeated name, is not
    /// checked again for the messages that match it.
    fn table(&mut self, py: Python, head: Option<&Arc<[u8]>>, source: &Source, pk: &[Cow<str>], columns: &[(&str, Kind)], encoder: &Encoder) -> PyResult<Option<Arc<Compiled>>> {
        let (Some(database), Some(table)) = (source.db.as_deref(), source.table.as_deref()) else { return Ok(None) };
        let (compile, python_heads, last_python_head) = (&self.compile, &mut self.python_heads, &mut self.last_python_head);
        self.tables.get(
            |layout| layout.matches(head, source, pk, columns),
            || Layout {
                head: head.cloned(),
                database: database.to_owned(),
                table: table.to_owned(),
                connector: source.connector.as_deref().map(str::to_owned),
                schema: source.schema.as_deref().map(str::to_owned),
                pk: pk.iter().map(|n| n.to_string()).collect(),
                columns: columns.iter().map(|(n, k)| ((*n).to_owned(), *k)).collect(),
            },
            |layout| {
                if repeats_a_column(columns) {
                    return Ok(None); // Python keeps the last value: the layout is Python's
                }
                let kinds: Vec<(&str, &str)> = columns.iter().map(|(n, k)| (*n, k.name())).collect();
                let spec = compile.call1(py, (database, table, source.connector.as_deref(), source.schema.as_deref(), layout.pk.clone(), kinds, head.map(|h| PyBytes::new(py, h))))?;
                if spec.is_none(py) {
                    return Ok(None);
                }
                if let (Some(h), Ok(true)) = (head, spec.bind(py).extract::<String>().map(|s| s == PYTHON_HEAD)) {
                    if python_heads.len() >= CACHE_SIZE {
                        python_heads.clear();
                        *last_python_head = None;
                    }
                    python_heads.insert(h[..].to_vec());
                    return Ok(None);
                }
                let (spec, connect) = split_spec(spec.bind(py))?;
                let table = match (crate::shaped_spec(&spec)?, encoder) {
                    // Row-changing transforms: the writer's table of the transformed schema under the shape.
                    (Some(_), Encoder::Debezium) => None,
                    (Some((inner, shape)), _) => writer_table(&inner, encoder)?.map(|t| Table::Shaped(Box::new(shape), Box::new(t))),
                    (None, _) => writer_table(&spec, encoder)?,
                };
                Ok(table.map(|table| Compiled { table, connect }))
            },
        )
    }

    /// The output records of one message into ``out``; ``false`` when Python must
    /// process it. ``key``: the record's key (``None``: not known, Python's).
    pub fn message(&mut self, py: Python, value: &[u8], key: Option<Option<&[u8]>>, encoder: &mut Encoder, out: &mut Vec<Output>) -> PyResult<bool> {
        let Some(key) = key else { return Ok(false) };
        let closed = matches!(encoder, Encoder::Canal { transaction: true }) || encoder.closed();
        if value.len() > self.max_message_bytes || closed {
            return Ok(false);
        }
        if self.python_head(value) {
            return Ok(false); // the schema part's values are Python's: the payload is not read
        }
        let Some(pk) = self.key_names(key) else { return Ok(false) };
        let Some((head, e)) = parse(value, &mut self.heads, &mut self.sources) else { return Ok(false) };
        let (Some(op), Some(source), Some(ts)) = (e.op.as_deref().and_then(op_index), &e.source, e.ts_ms) else { return Ok(false) };
        let (Some(database), Some(table), Some(es)) = (source.db.as_deref(), source.table.as_deref(), source.ts_ms) else { return Ok(false) };
        if e.wrapped {
            return Ok(false);
        }
        // The images as Python checks them: after for c/r/u, before for d (a delete
        // without one is partial: the Canal writer refuses it, with Python's words).
        let image = |i: &Option<Image<'_>>| -> Result<(), ()> {
            match i {
                Some(Image(None)) => Err(()),
                Some(Image(Some(v))) if v.is_empty() => Err(()), // CloudCanal's {}: Python's
                _ => Ok(()),
            }
        };
        if image(&e.before).is_err() || image(&e.after).is_err() {
            return Ok(false);
        }
        let before = e.before.as_ref().and_then(|i| i.0.as_deref());
        let after = e.after.as_ref().and_then(|i| i.0.as_deref());
        let (row, old) = match (op, before, after) {
            (0 | 3, None, Some(a)) => (a, None),
            (1, Some(b), Some(a)) if b.len() == a.len() && b.iter().zip(a).all(|(x, y)| x.0 == y.0) => (a, Some(b)),
            (2, Some(b), None) => (b, None),
            _ => return Ok(false),
        };
        // Each column's kind over both images (Python's first non-null one); images
        // that disagree on a kind are Python's, and so are those that repeat a column (their
        // layout's, checked once when it is first met: [`Reader::table`]).
        let mut columns: Vec<(&str, Kind)> = Vec::with_capacity(row.len());
        for (n, (name, v)) in row.iter().enumerate() {
            let mut kind = old.map_or(Kind::Null, |b| b[n].1.kind);
            if kind == Kind::Null {
                kind = v.kind;
            } else if v.kind != Kind::Null && v.kind != kind {
                return Ok(false);
            }
            columns.push((name.as_ref(), kind));
        }
        if head.is_none() && columns.iter().any(|(_, k)| *k == Kind::Obj) {
            return Ok(false); // an object typed by its JSON kind: Python's
        }
        let Some(compiled) = self.table(py, head.as_ref(), source, &pk, &columns, encoder)? else { return Ok(false) };
        let variant = match compiled.table.op(op) {
            Ok(variant) => variant,
            Err(dropped) => return Ok(dropped),
        };
        let (writer, shape) = match &compiled.table {
            Table::Shaped(shape, inner) => (&**inner, Some(&**shape)),
            table => (table, None),
        };
        if let Table::Debezium(d) = writer {
            if !d.copies([before, after]) {
                return Ok(false);
            }
            let start = out.len();
            let ok = match &d.unwrap {
                Some(unwrap) => write_unwrapped(&e, d, unwrap, op, before, after, &pk, out).is_ok(),
                None => write_debezium(&e, d, op, before, after, &pk, variant, self.tombstones_on_delete, out).is_ok(),
            };
            if !ok {
                out.truncate(start);
            }
            return Ok(ok);
        }
        // The row as the Canal message the text writers read (one row, ``old`` the before-image);
        // GoldenGate's table name also holds the schema (``database.schema.table``).
        let table = match (&*encoder, source.schema.as_deref()) {
            (Encoder::Ogg, Some(schema)) => Cow::Owned(format!("{schema}.{table}")),
            _ => Cow::Borrowed(table),
        };
        let connect = compiled.connect.as_slice();
        if head.is_some() && connect.len() != row.len() {
            return Ok(false); // values in the schema's representations the compiler did not name
        }
        // A value Python reads otherwise, or refuses, in either image: Python's.
        let Some((data, old_row)) = connect_rows(row, old, connect, &mut self.texts, &mut self.places) else { return Ok(false) };
        let m = canal::Message {
            data: Some(vec![data]),
            old: old_row.map(|b| vec![b]),
            database: Some(Cow::Borrowed(database)),
            table: Some(table),
            es: Some(es),
            ts: Some(ts),
            pk_names: Some(pk.iter().map(|n| Cow::Borrowed(n.as_ref())).collect()),
            seen: FIELD_DATABASE | FIELD_TABLE | FIELD_ES | FIELD_TS | FIELD_PK_NAMES | if old.is_some() { FIELD_OLD } else { 0 },
            ..Default::default()
        };
        // Under row-changing transforms the row re-shaped as the transformed event's, and the
        // records' keys the transformed row's, made before the writer numbers anything.
        let shaped = match shape.map(|s| s.apply(&m, op)) {
            Some(Ok(shaped)) => Some(shaped),
            Some(Err(_)) => return Ok(false),
            None => None,
        };
        let pairs = op == 1 && matches!(encoder, Encoder::DataWorks { split: true, .. });
        let shaped_keys = match (shape, &shaped) {
            (Some(s), Some(shaped)) => match s.keys(shaped, pairs) {
                Ok(keys) => Some(keys),
                Err(_) => return Ok(false),
            },
            _ => None,
        };
        let m = shaped.as_ref().unwrap_or(&m);
        let start = out.len();
        let written = match (writer, encoder) {
            (Table::Canal(t), _) => canal_out::write(t, m, op, variant, false, out),
            (Table::Ticdc(t), _) => ticdc_out::write(t, m, op, variant, out),
            (Table::CloudCanal(t), Encoder::DataWorks { ids, split }) => {
                // DataWorks' dbName and tableName are the source's even when empty; an scn is written per event.
                if database.is_empty() || source.table.as_deref().unwrap_or_default().is_empty() || source.scn {
                    return Ok(false);
                }
                let split = *split;
                if crate::dataworks_out::write(t, m, op, variant, split, ids, out).is_err() {
                    out.truncate(start);
                    return Ok(false);
                }
                if let Some(keys) = shaped_keys {
                    return Ok(set_keys(out, start, keys));
                }
                // The keys are the key columns' JSON values; an UPDATE_BEFOR's its before-image's.
                let record_key = row_key(&pk, row);
                for record in &mut out[start..] {
                    record.1 = record_key.clone();
                }
                if let (true, 1, Some(b)) = (split, op, old) {
                    out[start].1 = row_key(&pk, b);
                }
                return Ok(true);
            }
            (Table::CloudCanal(t), Encoder::CKafka(zone)) => match Position::of(&e, source).and_then(|p| p.ckafka(source)) {
                // CKafka's DATABASE and TABLE are the source's even when empty (Canal's read as null).
                Some(binlog) if !database.is_empty() && !source.table.as_deref().unwrap_or_default().is_empty() => crate::ckafka_out::write(t, m, op, variant, *zone, &binlog, out),
                _ => return Ok(false),
            },
            (Table::CloudCanal(t), _) => crate::cloudcanal_out::write(t, m, op, variant, out),
            (Table::Tdsql(t), _) => {
                // ``gtid``: the source's, as orjson's round trip writes it.
                let mut gtid = b"null".to_vec();
                if let Some(raw) = given(source.gtid) {
                    gtid.clear();
                    if canon::write(&mut gtid, raw).is_err() {
                        return Ok(false);
                    }
                }
                crate::tdsql_out::write(t, m, op, variant, &gtid, out)
            }
            (Table::Typed(t), Encoder::Maxwell) => match Position::of(&e, source).and_then(|p| p.maxwell(source)) {
                Some(position) => maxwell_out::write_with_position(t, m, op, variant, &position, out),
                None => return Ok(false),
            },
            (Table::Typed(t), Encoder::Ogg) => ogg_out::write(t, m, op, variant, out),
            (Table::DtsAvro(t), Encoder::DtsAvro(ids)) => {
                let dts_avro_out::Entry::Write(_, middle) = &t.ops[op] else { return Ok(false) };
                // The probe's middle starts with three empty strings: the position's place.
                let Some(mut record) = Position::of(&e, source).and_then(|p| p.dts()) else { return Ok(false) };
                let Some(rest) = middle.get(3..) else { return Ok(false) };
                record.extend_from_slice(rest);
                // The DTS writer's key is its own (the key columns' typed values), as Python's.
                if dts_avro_out::write(t, m, op, variant, &record, ids, out).is_err() {
                    return Ok(false);
                }
                return Ok(shaped_keys.map_or(true, |keys| set_keys(out, start, keys)));
            }
            _ => return Ok(false),
        };
        if written.is_err() {
            out.truncate(start);
            return Ok(false);
        }
        if let Some(keys) = shaped_keys {
            return Ok(set_keys(out, start, keys));
        }
        // The text writers' keys are the Canal texts: Python's are the key columns' JSON values.
        let record_key = row_key(&pk, row);
        for record in &mut out[start..] {
            record.1 = record_key.clone();
        }
        Ok(true)
    }
}

/// The records written from ``start`` keyed by ``keys`` (one per record: the shaped rows'
/// keys); ``false`` (the records dropped: Python's) when the counts differ, which is not reached.
fn set_keys(out: &mut Vec<Output>, start: usize, keys: Vec<Option<Vec<u8>>>) -> bool {
    if out.len() - start != keys.len() {
        out.truncate(start);
        return false;
    }
    for (record, key) in out[start..].iter_mut().zip(keys) {
        record.1 = key;
    }
    true
}

/// The source position as the Python decoder's model holds it (``_position``): the binlog
/// file (a non-empty string, else none) and position, and the transaction id (``txId``).
struct Position<'a> {
    file: Option<Cow<'a, str>>,
    pos: Option<i64>,
    txid: Option<i64>,
}

/// A source field given (not absent, not null).
fn given(raw: Option<&str>) -> Option<&str> {
    raw.filter(|r| *r != "null")
}

impl<'a> Position<'a> {
    /// ``None`` (Python's) for forms the plan does not render as Python does: a transaction
    /// block (its id may be the transaction id), a ``txId`` other than an integer, a ``file``
    /// other than a string, a ``pos`` other than an integer.
    fn of(e: &Envelope<'a>, source: &Source<'a>) -> Option<Position<'a>> {
        if e.others.iter().any(|(name, raw)| name == "transaction" && *raw != "null") {
            return None;
        }
        let txid = match given(source.tx_id_raw) {
            Some(_) if source.tx_id => return None,
            Some(raw) => Some(raw.parse().ok()?),
            None => None,
        };
        let file = match given(source.file) {
            Some(raw) => Some(serde_json::from_str::<Text>(raw).ok()?.0).filter(|f| !f.is_empty()),
            None => None,
        };
        let pos = match given(source.pos) {
            Some(raw) => Some(raw.parse().ok()?),
            None => None,
        };
        Some(Position { file, pos, txid })
    }

    /// The fields Maxwell writes from it (``MaxwellJson._encode_row``), each after a comma:
    /// ``xid``, ``position`` (``file:pos``), ``server_id`` and ``gtid`` (as orjson's round
    /// trip writes them, or ``None``: Python's).
    fn maxwell(&self, source: &Source) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        if let Some(id) = self.txid {
            out.extend_from_slice(b",\"xid\":");
            crate::json::write_int(&mut out, id);
        }
        if let (Some(file), Some(pos)) = (&self.file, self.pos) {
            out.extend_from_slice(b",\"position\":");
            crate::json::write_str(&mut out, &format!("{file}:{pos}"));
        }
        for (name, raw) in [(&b",\"server_id\":"[..], source.server_id), (&b",\"gtid\":"[..], source.gtid)] {
            if let Some(raw) = given(raw) {
                out.extend_from_slice(name);
                canon::write(&mut out, raw).ok()?;
            }
        }
        Some(out)
    }

    /// CKafka's ``BINLOG_NAME``, ``BINLOG_POS``, ``EVENT_SERVER_ID`` and ``GLOBAL_ID``
    /// (``CKafkaJson._encode_dml``: the source's, as orjson's round trip writes them).
    fn ckafka(&self, source: &Source) -> Option<crate::ckafka_out::Binlog> {
        let mut binlog = crate::ckafka_out::Binlog { pos: crate::ckafka_out::int_field(self.pos), ..Default::default() };
        if let Some(file) = &self.file {
            binlog.file.clear();
            crate::json::write_str(&mut binlog.file, file);
        }
        for (field, raw) in [(&mut binlog.server_id, source.server_id), (&mut binlog.gtid, source.gtid)] {
            if let Some(raw) = given(raw) {
                field.clear();
                canon::write(field, raw).ok()?;
            }
        }
        Some(binlog)
    }

    /// A DTS record's ``sourcePosition``, ``safeSourcePosition`` (empty) and ``sourceTxid``
    /// as Avro strings (``DtsAvro._envelope``: ``pos@N`` with ``N`` the file name's trailing
    /// number, else ``pos``); ``None`` (Python's) for a file name that may end in a digit
    /// other than ASCII's (Python's ``\d``).
    fn dts(&self) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(48);
        match (&self.file, self.pos) {
            (Some(file), Some(pos)) => {
                // ``$`` also matches before a final newline; ``\d`` any Unicode digit.
                if file.ends_with('\n') {
                    return None;
                }
                let digits = file.len() - file.bytes().rev().take_while(u8::is_ascii_digit).count();
                if file[..digits].chars().last().is_some_and(|c| !c.is_ascii() && c.is_numeric()) {
                    return None;
                }
                let number = file[digits..].trim_start_matches('0');
                let text = match (digits == file.len(), number.is_empty()) {
                    (true, _) => pos.to_string(),
                    (false, true) => format!("{pos}@0"),
                    (false, false) => format!("{pos}@{number}"),
                };
                dts_avro_out::write_bytes(&mut out, text.as_bytes());
            }
            _ => out.push(0),
        }
        out.push(0);
        match self.txid {
            Some(id) => dts_avro_out::write_bytes(&mut out, id.to_string().as_bytes()),
            None => out.push(0),
        }
        Some(out)
    }
}

/// ``{"schema":<schema>,"payload":<payload>}``.
fn wrap(schema: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(schema.len() + payload.len() + 24);
    out.extend_from_slice(HEAD);
    out.extend_from_slice(schema);
    out.extend_from_slice(SEP);
    out.extend_from_slice(payload);
    out.push(b'}');
    out
}

/// Op codes as Debezium writes them, in the writers' order (c, u, d, r).
const CODES: [&[u8]; 4] = [b"c", b"u", b"d", b"r"];

/// The event as ``DebeziumJsonCodec`` re-writes one of its own (same-format
/// reproduction): ``before``, ``after``, ``source``, ``op``, ``ts_ms`` in this order, then
/// the message's other fields in its order, every value as orjson's round trip writes it;
/// the key from the key names, and a tombstone after a delete. What Python would change
/// (a ``txId``, missing envelope fields) is Python's.
#[allow(clippy::too_many_arguments)]
fn write_debezium(
    e: &Envelope,
    d: &DebeziumOut,
    op: usize,
    before: Option<&[(Cow<str>, Value)]>,
    after: Option<&[(Cow<str>, Value)]>,
    pk: &[Cow<str>],
    variant: usize,
    tombstones_on_delete: bool,
    out: &mut Vec<Output>,
) -> Result<(), ()> {
    let (Some(source), Some(source_raw), Some(ts)) = (&e.source, e.source_raw, e.ts_ms) else { return Err(()) };
    if e.seen != ALL_FIELDS || source.tx_id {
        return Err(());
    }
    let mut v = Vec::with_capacity(source_raw.len() + 512);
    v.extend_from_slice(b"{\"before\":");
    write_image(&mut v, before);
    v.extend_from_slice(b",\"after\":");
    write_image(&mut v, after);
    v.extend_from_slice(b",\"source\":");
    canon::write(&mut v, source_raw)?;
    v.extend_from_slice(b",\"op\":\"");
    v.extend_from_slice(CODES[op]);
    v.extend_from_slice(b"\",\"ts_ms\":");
    crate::json::write_int(&mut v, ts);
    for (name, raw) in &e.others {
        v.push(b',');
        crate::json::write_str(&mut v, name);
        v.push(b':');
        canon::write(&mut v, raw)?;
    }
    v.push(b'}');
    let mut key = row_key(pk, after.or(before).ok_or(())?);
    if let Some(schema) = &d.envelope_schema {
        v = wrap(schema, &v);
    }
    if let (Some(schema), Some(k)) = (&d.key_schema, &key) {
        key = Some(wrap(schema, k));
    }
    out.push((Some(v), key.clone(), variant));
    if op == 2 && tombstones_on_delete && key.is_some() {
        out.push((None, key, variant));
    }
    Ok(())
}

/// The records ``unwrap`` makes of an event (``unwrap``: per op the variants of the flat row
/// and of the tombstone): the row image it keeps (a delete's ``before``, else ``after``) as
/// orjson writes the values read, under ``schemas_enable`` wrapped in the row's schema, and a
/// null value, each with the row's key. A missing image (Python passes the event on as it
/// is) or a partial envelope is Python's.
#[allow(clippy::too_many_arguments)]
fn write_unwrapped(
    e: &Envelope,
    d: &DebeziumOut,
    unwrap: &[(Option<usize>, Option<usize>)],
    op: usize,
    before: Option<&[(Cow<str>, Value)]>,
    after: Option<&[(Cow<str>, Value)]>,
    pk: &[Cow<str>],
    out: &mut Vec<Output>,
) -> Result<(), ()> {
    if e.seen != ALL_FIELDS || e.source.is_none() || e.ts_ms.is_none() {
        return Err(());
    }
    let (row_variant, tomb_variant) = *unwrap.get(op).ok_or(())?;
    let image = if op == 2 { before } else { after }.ok_or(())?;
    let mut key = row_key(pk, image);
    if let (Some(schema), Some(k)) = (&d.key_schema, &key) {
        key = Some(wrap(schema, k));
    }
    if let Some(variant) = row_variant {
        let mut v = Vec::with_capacity(256);
        write_image(&mut v, Some(image));
        if let Some(added) = d.added.get(op).filter(|a| !a.is_empty()) {
            let (Some(es), Some(ts)) = (e.source.as_ref().and_then(|s| s.ts_ms), e.ts_ms) else { return Err(()) };
            v.pop(); // the image's closing brace
            for (bytes, slot) in added {
                v.extend_from_slice(bytes);
                match slot {
                    Slot::Constant => {}
                    Slot::SourceTs => crate::json::write_int(&mut v, es),
                    Slot::EnvelopeTs => crate::json::write_int(&mut v, ts),
                }
            }
            v.push(b'}');
        }
        if let Some(schema) = &d.envelope_schema {
            v = wrap(schema, &v);
        }
        out.push((Some(v), key.clone(), variant));
    }
    if let Some(variant) = tomb_variant {
        out.push((None, Some(key.ok_or(())?), variant));
    }
    Ok(())
}

/// An image (``None``: null) as orjson writes the values it read.
fn write_image(out: &mut Vec<u8>, image: Option<&[(Cow<str>, Value)]>) {
    let Some(image) = image else {
        out.extend_from_slice(b"null");
        return;
    };
    out.push(b'{');
    for (n, (name, value)) in image.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        crate::json::write_str(out, name);
        out.push(b':');
        value.write(out);
    }
    out.push(b'}');
}

/// An image as the Canal rows the writer reads: each value as its conversion's text.
pub(crate) fn text_row<'b>(image: &'b [(Cow<'_, str>, Value<'_>)]) -> canal::Row<'b> {
    canal::Row(image.iter().map(|(k, v)| (Cow::Borrowed(k.as_ref()), v.text.as_deref().map(Cow::Borrowed))).collect())
}

/// An image and an UPDATE's before-image as the Canal rows the writer reads, each value
/// converted from its Connect representation (``connect``, per column: ``connect_in``);
/// ``None``: Python's. The converted texts are written into ``texts`` first (their places
/// into ``places``), both reused from message to message, and the rows then borrow them:
/// an owned text per converted value cost an allocation and its free (callgrind).
fn connect_rows<'b>(
    row: &'b Cells<'_>,
    old: Option<&'b Cells<'_>>,
    connect: &[Connect],
    texts: &'b mut String,
    places: &mut Vec<Place>,
) -> Option<(canal::Row<'b>, Option<canal::Row<'b>>)> {
    if connect.iter().all(|c| *c == Connect::Text) {
        return Some((text_row(row), old.map(text_row)));
    }
    texts.clear();
    places.clear();
    for image in std::iter::once(row).chain(old) {
        for (n, (_, v)) in image.iter().enumerate() {
            places.push(connect.get(n).unwrap_or(&Connect::Text).write(v, texts).ok()?);
        }
    }
    let texts: &'b String = texts;
    let placed = |image: &'b Cells<'_>, places: &[Place]| {
        let cells = image.iter().zip(places).map(|((k, v), place)| {
            let text = match *place {
                Place::Null => None,
                Place::Own => v.text.as_deref().map(Cow::Borrowed),
                Place::Written(start, end) => Some(Cow::Borrowed(&texts[start..end])),
            };
            (Cow::Borrowed(k.as_ref()), text)
        });
        canal::Row(cells.collect())
    };
    let (row_places, old_places) = places.split_at(row.len());
    Some((placed(row, row_places), old.map(|b| placed(b, old_places))))
}

/// ``orjson.dumps({name: row.get(name) for name in pk})`` of the raw values (``None``
/// without key names): the key ``JsonCodec.encode_key`` writes for a Debezium event.
pub(crate) fn row_key(pk: &[Cow<str>], row: &[(Cow<str>, Value)]) -> Option<Vec<u8>> {
    if pk.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(64);
    out.push(b'{');
    for (n, name) in pk.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        crate::json::write_str(&mut out, name);
        out.push(b':');
        match row.iter().find(|(k, _)| k == name) {
            Some((_, v)) => v.write(&mut out),
            None => out.extend_from_slice(b"null"),
        }
    }
    out.push(b'}');
    Some(out)
}

const HEAD: &[u8] = b"{\"schema\":";
const SEP: &[u8] = b",\"payload\":";

/// What the compiler returns for a layout under a schema part whose values need converting
/// (``native_debezium.PYTHON_HEAD``): that schema part's messages are Python's from then on.
const PYTHON_HEAD: &str = "python-head";

/// The schema part of a value that starts ``{"schema":``, as the Python decoder splits it
/// (up to the first ``,"payload":``).
fn split_head(value: &[u8]) -> Option<&[u8]> {
    if !value.starts_with(HEAD) {
        return None;
    }
    // Schema parts run to kilobytes: a byte search for the separator's comma, not a
    // window compared at every offset.
    let mut from = HEAD.len();
    loop {
        let at = from + value[from..].iter().position(|&b| b == b',')?;
        if value[at..].starts_with(SEP) {
            return Some(&value[..at]);
        }
        from = at + 1;
    }
}

/// The event, if it is a JSON object this module can read, and its schema part: as the
/// Python decoder splits ``{"schema":...,"payload":...}`` (at the first ``,"payload":``),
/// else ``None``. A schema part among ``heads`` is cut without a search (its text was
/// checked when it was remembered), any other is remembered.
fn parse<'v>(value: &'v [u8], heads: &mut Heads, sources: &mut SourceTemplate) -> Option<(Option<Arc<[u8]>>, Envelope<'v>)> {
    if value.starts_with(HEAD) {
        let head = match heads.known(value) {
            Some(head) => head,
            None => {
                let head = split_head(value)?;
                std::str::from_utf8(head).ok()?;
                heads.remember(head)
            }
        };
        let rest = std::str::from_utf8(&value[head.len() + SEP.len()..]).ok()?;
        let body = rest.trim_end_matches([' ', '\t', '\n', '\r']).strip_suffix('}')?;
        return Some((Some(head), envelope(body, sources)?));
    }
    let text = std::str::from_utf8(value).ok()?;
    let first = value.iter().find(|b| !b.is_ascii_whitespace())?;
    if *first != b'{' {
        return None;
    }
    Some((None, envelope(text, sources)?))
}

/// The envelope in ``text``: scanned in one pass, or by serde where the scanner stops.
fn envelope<'t>(text: &'t str, sources: &mut SourceTemplate) -> Option<Envelope<'t>> {
    scan_envelope(text, sources).or_else(|| serde_json::from_str(text).ok())
}

