//! The TiCDC Canal-JSON writer: what ``TicdcCanalJson.encode_message`` writes for the row
//! of a Canal (or TiCDC) message, one message per row.
//!
//! Fields in TiCDC's order (``id`` 0, ``database``, ``table``, ``pkNames``, ``isDdl``,
//! ``type`` (INIT as INSERT), ``es``, ``ts``, ``sql``, ``sqlType``, ``mysqlType``, ``old``,
//! ``data``), then ``_tidb.commitTs`` (``es << 18``) with ``enable_tidb_extension``.
//!
//! From official Canal (``retext``) every value is re-written as TiCDC text (FLOAT/DOUBLE
//! as Go's shortest plain decimal, DECIMAL with its own digits, YEAR 0 as ``0``, ENUM
//! labels as indexes; the rest as Canal writes it, ``canal_text``), the type maps are the
//! schema's (``sqlType`` per TiCDC's table), UPDATE ``old`` is the whole before-image (or
//! the changed columns with ``content-compatible``). From TiCDC itself the values, type
//! maps and the fields the model lacks are copied (same-format reproduction, orjson's
//! rendering). Texts whose rendering is not certain are [`Fallback`]: Python's.

use std::collections::HashMap;

use pyo3::prelude::*;
use serde_json::value::RawValue;

use crate::canal::{Message, Row, FIELD_DATABASE, FIELD_ES, FIELD_ID, FIELD_IS_DDL, FIELD_MYSQL_TYPE, FIELD_OLD, FIELD_PK_NAMES, FIELD_SQL, FIELD_SQL_TYPE, FIELD_TABLE, FIELD_TS};
use crate::canal_out::{entries, quoted_names, text_key, write_extra, Entry};
use crate::canal_text::TextOp;
use crate::typed_json::plain_decimal;
use crate::values::{plain_number, Fallback};
use crate::{canon, json, Output};

/// Every field TiCDC writes (a same-format message must have them all: Python then
/// re-writes it field by field, and this module copies exactly those).
const TICDC_FIELDS: u16 =
    1 | 2 | FIELD_OLD | FIELD_DATABASE | FIELD_TABLE | FIELD_ES | FIELD_TS | FIELD_PK_NAMES | FIELD_MYSQL_TYPE | FIELD_SQL_TYPE | FIELD_ID | FIELD_IS_DDL | FIELD_SQL;

/// ``type`` of each op (c, u, d, r): TiCDC has no INIT.
const TYPES: [&[u8]; 4] = [b"\"INSERT\"", b"\"UPDATE\"", b"\"DELETE\"", b"\"INSERT\""];

/// How one column's Canal text becomes TiCDC's.
enum Conv {
    /// Texts Canal and TiCDC write alike (``canal_text``: strings, integers, BIT, dates, times, binary).
    Text(TextOp),
    /// YEAR: canonical integers, ``0`` and ``0000`` written as ``0``.
    Year,
    /// DECIMAL: ``format(Decimal(text), "f")``, the same text for a plain decimal within MySQL's limits.
    Decimal,
    /// DOUBLE and single-precision FLOAT: Go's shortest plain decimal.
    Double,
    Float32,
    /// ENUM with labels: Canal's text (index or label) -> the index TiCDC writes.
    Enum(HashMap<String, String>),
    /// SET of this many distinct labels (none empty or with a comma): a bitmask within
    /// them stays as it is, ``""`` is ``0``.
    SetBits(u32),
}

impl Conv {
    fn write(&self, out: &mut Vec<u8>, text: &str) -> Result<(), Fallback> {
        match self {
            Conv::Text(op) => op.write(out, text),
            Conv::Year => {
                if text == "0000" || text == "0" {
                    out.extend_from_slice(b"\"0\"");
                    Ok(())
                } else {
                    TextOp::Int.write(out, text)
                }
            }
            Conv::Decimal => {
                plain_decimal(text)?;
                json::write_str(out, text);
                Ok(())
            }
            Conv::Double => {
                let v = parse_float(text)?;
                out.push(b'"');
                write_shortest_double(out, v);
                out.push(b'"');
                Ok(())
            }
            Conv::Float32 => {
                let single = parse_float(text)? as f32;
                if !single.is_finite() {
                    return Err(Fallback); // beyond FLOAT's range: Python words it
                }
                out.push(b'"');
                write_shortest_single(out, single)?;
                out.push(b'"');
                Ok(())
            }
            Conv::Enum(table) => {
                let index = table.get(text).ok_or(Fallback)?;
                json::write_str(out, index);
                Ok(())
            }
            Conv::SetBits(labels) => {
                if text.is_empty() {
                    out.extend_from_slice(b"\"0\"");
                    return Ok(());
                }
                TextOp::Bits.write(out, text)?;
                let bits: u128 = text.parse().map_err(|_| Fallback)?;
                if *labels < 64 && bits >> labels != 0 || bits >> 64 != 0 {
                    return Err(Fallback); // bits beyond the labels: Python words the error
                }
                Ok(())
            }
        }
    }
}

/// ``float(text)`` of a plain number, finite.
fn parse_float(text: &str) -> Result<f64, Fallback> {
    if !plain_number(text) {
        return Err(Fallback);
    }
    let v: f64 = text.parse().map_err(|_| Fallback)?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(Fallback)
    }
}

/// ``go_float_text(v, single=True)``: the first of ``f"{v:.{p}g}"`` (p = 1..9) that reads
/// back as ``v`` in 32 bits, written plainly without trailing zeros.
pub(crate) fn write_shortest_single(out: &mut Vec<u8>, single: f32) -> Result<(), Fallback> {
    let v = single as f64;
    for p in 1..=9usize {
        let text = format!("{:.*e}", p - 1, v);
        let back: f64 = text.parse().map_err(|_| Fallback)?;
        if back as f32 == single {
            write_plain(out, &text);
            return Ok(());
        }
    }
    Err(Fallback)
}

/// ``go_float_text(v)``: ``repr(v)``'s digits (ryu's, as ``json::write_f64``), written plainly
/// without trailing zeros. Not Rust's ``Display``: where two shortest texts are equally near
/// ``v`` (562949953421312.25) it picks the other one (``…312.3``; Python and Go: ``…312.2``).
fn write_shortest_double(out: &mut Vec<u8>, v: f64) {
    let mut buf = ryu::Buffer::new();
    let text = buf.format_finite(v);
    if text.contains('e') {
        write_plain(out, text);
        return;
    }
    match text.split_once('.') {
        Some((whole, fraction)) => {
            let fraction = fraction.trim_end_matches('0');
            out.extend_from_slice(whole.as_bytes());
            if !fraction.is_empty() {
                out.push(b'.');
                out.extend_from_slice(fraction.as_bytes());
            }
        }
        None => out.extend_from_slice(text.as_bytes()),
    }
}

/// ``format(Decimal(text).normalize(), "f")`` of Rust's ``d.ddde[-]n``.
fn write_plain(out: &mut Vec<u8>, text: &str) {
    let (mantissa, exp) = text.split_once('e').unwrap_or((text, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: Vec<u8> = mantissa.bytes().filter(|b| b.is_ascii_digit()).collect();
    let digits = match digits.iter().rposition(|&d| d != b'0') {
        Some(last) => &digits[..=last],
        None => &digits[..1], // zero
    };
    if neg {
        out.push(b'-');
    }
    // The value is 0.d1d2... x 10^(exp + 1): ``point`` digits before the decimal point.
    let point = exp + 1;
    if point <= 0 {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + (-point) as usize, b'0');
        out.extend_from_slice(digits);
    } else if point as usize >= digits.len() {
        out.extend_from_slice(digits);
        out.resize(out.len() + point as usize - digits.len(), b'0');
    } else {
        out.extend_from_slice(&digits[..point as usize]);
        out.push(b'.');
        out.extend_from_slice(&digits[point as usize..]);
    }
}

/// A row's converted values: per entry its column and its value's span in the buffer
/// (``None``: null).
type Entries = Vec<(usize, Option<(usize, usize)>)>;

/// One column as TiCDC writes it.
struct Column {
    /// ``"name":`` and ``"name":"mysqlType"`` (the ``mysqlType`` entry).
    name: Vec<u8>,
    mysql_type: Vec<u8>,
    conv: Conv,
    /// ``sqlType``: the code, and for unsigned integers the wider code above ``max``.
    code: i64,
    wide: Option<(i64, u64)>,
}

/// One table layout (Canal's ``mysqlType``, ``sqlType``, ``pkNames``, database, table).
pub struct Table {
    index: HashMap<String, usize>,
    columns: Vec<Column>,
    pk: Vec<(Vec<u8>, String)>,
    /// From TiCDC itself: values copied, and the message's own type maps (``None``:
    /// computed from the columns) re-written as orjson writes them.
    same: bool,
    mysql_type: Option<Vec<u8>>,
    sql_type: Option<Vec<u8>>,
    content_compatible: bool,
    extension: bool,
    pub ops: [Entry; 4],
}

impl Table {
    /// A table's spec from Python: ``(columns, pk, ops, (same, content_compatible,
    /// extension, keep_mysql_type))``, a column ``(name, mysqlType, conv, arg, code,
    /// wide)`` (``wide``: ``(code, signed max)`` of unsigned integers), ``ops`` four
    /// ``(what, variant)``. With ``same`` the message's ``sqlType`` (and with
    /// ``keep_mysql_type`` its ``mysqlType``) are copied; ``None``: not a layout this module writes.
    pub fn from_spec(spec: &Bound<PyAny>, mysql_type: Option<&str>, sql_type: Option<&str>) -> PyResult<Option<Table>> {
        #[allow(clippy::type_complexity)]
        let (columns, pk, ops, (same, content_compatible, extension, keep_mysql_type)): (
            Vec<(String, String, String, PyObject, i64, Option<(i64, u64)>)>,
            Vec<String>,
            Vec<(u8, Option<usize>)>,
            (bool, bool, bool, bool),
        ) = spec.extract()?;
        let py = spec.py();
        let copied = |raw: Option<&str>, wanted: bool| -> Result<Option<Vec<u8>>, ()> {
            match (wanted, raw.and_then(canon::of)) {
                (false, _) => Ok(None),
                (true, Some(bytes)) => Ok(Some(bytes)),
                (true, None) => Err(()),
            }
        };
        let (Ok(mysql_type), Ok(sql_type)) = (copied(mysql_type, same && keep_mysql_type), copied(sql_type, same)) else {
            return Ok(None);
        };
        let mut index = HashMap::with_capacity(columns.len());
        let mut cols = Vec::with_capacity(columns.len());
        for (name, type_text, conv, arg, code, wide) in columns {
            let arg = arg.bind(py);
            let conv = match conv.as_str() {
                "year" => Conv::Year,
                "decimal" => Conv::Decimal,
                "double" => Conv::Double,
                "float32" => Conv::Float32,
                "enum" => Conv::Enum(arg.extract()?),
                "set_bits" => Conv::SetBits(arg.extract()?),
                other => match TextOp::from_name(other, arg.extract()?) {
                    Some(op) => Conv::Text(op),
                    None => return Err(pyo3::exceptions::PyValueError::new_err(format!("unknown TiCDC text conversion {other:?}"))),
                },
            };
            let mut quoted = Vec::new();
            json::write_str(&mut quoted, &name);
            let mut entry = quoted.clone();
            entry.push(b':');
            json::write_str(&mut entry, &type_text);
            quoted.push(b':');
            if index.insert(name, cols.len()).is_some() {
                return Ok(None);
            }
            cols.push(Column { name: quoted, mysql_type: entry, conv, code, wide });
        }
        let ops = entries(ops)?;
        Ok(Some(Table { index, columns: cols, pk: quoted_names(pk), same, mysql_type, sql_type, content_compatible, extension, ops }))
    }

    /// Does every row name only this table's columns (what Python reads without error)?
    pub fn knows(&self, data: &[Row]) -> bool {
        data.iter().all(|row| row.0.iter().all(|(k, _)| self.index.contains_key(k.as_ref())))
    }

    /// A row's values as TiCDC text into ``buf``: per entry its column and the span of its
    /// JSON value (``None``: null); a column repeated or unknown is Python's.
    fn texts(&self, row: &Row, buf: &mut Vec<u8>) -> Result<Entries, Fallback> {
        let mut seen = vec![false; self.columns.len()];
        let mut spans = Vec::with_capacity(row.0.len());
        for (name, value) in &row.0 {
            let c = *self.index.get(name.as_ref()).ok_or(Fallback)?;
            if std::mem::replace(&mut seen[c], true) {
                return Err(Fallback); // Python's dict keeps the last: let it
            }
            let span = match value {
                None => None,
                Some(text) => {
                    let start = buf.len();
                    if self.same {
                        json::write_str(buf, text);
                    } else {
                        self.columns[c].conv.write(buf, text)?;
                    }
                    Some((start, buf.len()))
                }
            };
            spans.push((c, span));
        }
        Ok(spans)
    }

    /// ``sqlType`` of one value (its TiCDC text's span in ``buf``).
    fn sql_code(&self, c: usize, span: Option<(usize, usize)>, buf: &[u8]) -> Result<i64, Fallback> {
        let column = &self.columns[c];
        match (column.wide, span) {
            (Some((wide, max)), Some((a, b))) => {
                let digits = std::str::from_utf8(&buf[a + 1..b - 1]).map_err(|_| Fallback)?;
                crate::canal_text::canonical_int(digits)?;
                let v: i128 = digits.parse().map_err(|_| Fallback)?;
                Ok(if v > max as i128 { wide } else { column.code })
            }
            _ => Ok(column.code),
        }
    }
}

/// Bytes of a span (``null`` for none).
fn value_of(span: Option<(usize, usize)>, buf: &[u8]) -> &[u8] {
    match span {
        Some((a, b)) => &buf[a..b],
        None => b"null",
    }
}

/// ``open item,item,... close``: each item written by ``write``.
fn write_list<T>(out: &mut Vec<u8>, open: u8, items: &[T], close: u8, mut write: impl FnMut(&mut Vec<u8>, &T) -> Result<(), Fallback>) -> Result<(), Fallback> {
    out.push(open);
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        write(out, item)?;
    }
    out.push(close);
    Ok(())
}

/// ``{"name":value,...}`` of converted entries.
fn write_object(out: &mut Vec<u8>, t: &Table, entries: &[(usize, Option<(usize, usize)>)], buf: &[u8]) -> Result<(), Fallback> {
    write_list(out, b'{', entries, b'}', |out, (c, span)| {
        out.extend_from_slice(&t.columns[*c].name);
        out.extend_from_slice(value_of(*span, buf));
        Ok(())
    })
}

/// A field copied from the message as orjson's round trip writes it (from TiCDC itself),
/// else TiCDC's constant.
fn write_copied(out: &mut Vec<u8>, t: &Table, raw: Option<&RawValue>, constant: &[u8]) -> Result<(), Fallback> {
    if !t.same {
        out.extend_from_slice(constant);
        return Ok(());
    }
    canon::write(out, raw.ok_or(Fallback)?.get()).map_err(|_| Fallback)
}

/// The UPDATE's ``old`` row: the before-image (``data`` overlaid with ``old``), whole, or
/// with ``content-compatible`` its columns whose text differs from the after-image's; from
/// TiCDC itself without ``content-compatible``, the input's ``old`` row as it is.
fn update_old(t: &Table, after: &[(usize, Option<(usize, usize)>)], o: Option<&Row>, buf: &mut Vec<u8>) -> Result<Entries, Fallback> {
    let overlay = match o {
        Some(o) => t.texts(o, buf)?,
        None => Vec::new(),
    };
    if t.same && !t.content_compatible && o.is_some() {
        return Ok(overlay); // the input's own ``old`` (``{}`` too)
    }
    let mut before: Vec<(usize, Option<(usize, usize)>)> = after.to_vec();
    for (c, span) in overlay {
        match before.iter_mut().find(|(bc, _)| *bc == c) {
            Some(slot) => slot.1 = span,
            None => before.push((c, span)),
        }
    }
    if !t.content_compatible {
        return Ok(before);
    }
    let buf: &[u8] = buf;
    Ok(before
        .into_iter()
        .filter(|(c, span)| match after.iter().find(|(ac, _)| ac == c) {
            Some((_, now)) => value_of(*now, buf) != value_of(*span, buf),
            None => true,
        })
        .collect())
}

/// The output records of one row message of ``t`` (op index ``op``) into ``out``: one
/// message per row, as TiCDC writes them.
pub fn write(t: &Table, m: &Message, op: usize, variant: usize, out: &mut Vec<Output>) -> Result<(), Fallback> {
    let data = m.data.as_deref().ok_or(Fallback)?;
    let Some(ts) = m.ts else { return Err(Fallback) }; // Python writes the current time
    let old = m.old.as_deref().unwrap_or(&[]);
    if t.same && (m.seen & TICDC_FIELDS != TICDC_FIELDS || m.es.is_none() || data.len() != 1 || (op == 2 && !old.is_empty())) {
        return Err(Fallback); // fields Python computes or drops rather than copies
    }
    for (i, row) in data.iter().enumerate() {
        write_row(t, m, op, ts, row, old.get(i), variant, out)?;
    }
    Ok(())
}

/// One row's message (``o``: its ``old`` row, if the message has one).
#[allow(clippy::too_many_arguments)]
fn write_row(t: &Table, m: &Message, op: usize, ts: i64, row: &Row, o: Option<&Row>, variant: usize, out: &mut Vec<Output>) -> Result<(), Fallback> {
    if row.0.is_empty() || (t.same && row.0.len() != t.columns.len()) {
        return Err(Fallback); // Python computes the type maps of the columns it has
    }
    let mut buf = Vec::with_capacity(512);
    let after = t.texts(row, &mut buf)?;
    let old_row = if op == 1 { Some(update_old(t, &after, o, &mut buf)?) } else { None };

    let mut value = Vec::with_capacity(buf.len() * 2 + 512);
    value.extend_from_slice(b"{\"id\":");
    write_copied(&mut value, t, m.id, b"0")?;
    value.extend_from_slice(b",\"database\":");
    write_name(&mut value, m.database.as_deref(), t.same);
    value.extend_from_slice(b",\"table\":");
    write_name(&mut value, m.table.as_deref(), t.same);
    value.extend_from_slice(b",\"pkNames\":");
    match &m.pk_names {
        Some(names) if t.same || !names.is_empty() => write_list(&mut value, b'[', names, b']', |out, name| {
            json::write_str(out, name);
            Ok(())
        })?,
        _ => value.extend_from_slice(b"null"),
    }
    value.extend_from_slice(b",\"isDdl\":");
    write_copied(&mut value, t, m.is_ddl, b"false")?;
    value.extend_from_slice(b",\"type\":");
    value.extend_from_slice(TYPES[op]);
    value.extend_from_slice(b",\"es\":");
    let es = m.es.unwrap_or(0);
    json::write_int(&mut value, es);
    value.extend_from_slice(b",\"ts\":");
    json::write_int(&mut value, ts);
    value.extend_from_slice(b",\"sql\":");
    write_copied(&mut value, t, m.sql, b"\"\"")?;
    value.extend_from_slice(b",\"sqlType\":");
    match &t.sql_type {
        Some(copied) => value.extend_from_slice(copied),
        None => write_list(&mut value, b'{', &after, b'}', |out, (c, span)| {
            out.extend_from_slice(&t.columns[*c].name);
            json::write_int(out, t.sql_code(*c, *span, &buf)?);
            Ok(())
        })?,
    }
    value.extend_from_slice(b",\"mysqlType\":");
    match &t.mysql_type {
        Some(copied) => value.extend_from_slice(copied),
        None => write_list(&mut value, b'{', &after, b'}', |out, (c, _)| {
            out.extend_from_slice(&t.columns[*c].mysql_type);
            Ok(())
        })?,
    }
    value.extend_from_slice(b",\"old\":");
    match &old_row {
        Some(before) => {
            value.push(b'[');
            write_object(&mut value, t, before, &buf)?;
            value.push(b']');
        }
        // From TiCDC itself: the input's null or ``[]`` (a non-empty one is not kept).
        None if t.same && m.old.as_ref().is_some_and(|o| o.is_empty()) => value.extend_from_slice(b"[]"),
        None => value.extend_from_slice(b"null"),
    }
    value.extend_from_slice(b",\"data\":[");
    write_object(&mut value, t, &after, &buf)?;
    value.push(b']');
    if t.same {
        write_extra(&mut value, m)?;
    }
    if t.extension {
        // ``_tidb.commitTs``: the commit TSO made from ``es`` (logical part 0).
        let tso = (es as i128) << 18;
        if tso < i64::MIN as i128 || tso > u64::MAX as i128 {
            return Err(Fallback); // beyond what orjson writes: Python's error
        }
        value.extend_from_slice(b",\"_tidb\":{\"commitTs\":");
        json::write_int(&mut value, tso);
        value.push(b'}');
    }
    value.push(b'}');
    out.push((Some(value), text_key(&t.pk, row), variant));
    Ok(())
}

/// A database or table name: from Canal, ``""`` for none; from TiCDC itself, as written.
fn write_name(out: &mut Vec<u8>, name: Option<&str>, same: bool) {
    match name {
        Some(n) => json::write_str(out, n),
        None if same => out.extend_from_slice(b"null"),
        None => out.extend_from_slice(b"\"\""),
    }
}
