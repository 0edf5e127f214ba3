//! The TDSQL reader: a tdsql-binlog-json row event read as ``TdsqlBinlogJson`` reads it
//! (``transforms/formats/tdsql_binlog_json.py``), its positional SQL literals named and
//! typed through the schema catalog.
//!
//! A row is a positional array of SQL literals (``where`` before, ``field`` after): the
//! catalog gives the names and types, so a table layout is (database, table, the row's
//! width, whether the GTID is MariaDB's: the Debezium connector name). Per layout Python
//! compiles the writer's table (``transforms/native_catalog.py``) with the catalog's
//! column names and each column's literal class (`class`). Each literal the reader is
//! certain of becomes the MySQL text whose ``from_text`` is the value ``literal_value``
//! gives it, and the row goes to the writers as CKafka's (``ckafka_in``) does; any other
//! literal leaves the message to Python.
//!
//! The catalog is followed by the CKafka reader's mechanism (``ckafka_in::Reader``): a
//! JSON object that is not certainly a row event (``query``: DDL, anything unreadable)
//! closes the batch; ``gtid`` and ``xid`` events, and values that are no JSON object, are
//! Python's without closing it (they cannot change the catalog).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use pyo3::prelude::*;
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::canal::{Checked, Row, Text};
use crate::ckafka_in::position;
use crate::json_scan::{first_of, Scan};
use crate::typed_in::{parse, text, Fields};
use crate::{CanalToDebezium, Output, Reader as PlanReader};

/// The fields of a TDSQL binlog event the plan reads.
#[derive(Default)]
struct Message<'a> {
    logtype: Option<Cow<'a, str>>,
    kind: Option<Cow<'a, str>>,
    /// ``eventtype`` when it is an integer Python reads as such.
    code: Option<i64>,
    database: Option<Cow<'a, str>>,
    table: Option<Cow<'a, str>>,
    gtid: Option<Cow<'a, str>>,
    /// ``begintime`` (epoch seconds) when it is an integer.
    begintime: Option<i64>,
    before: Option<Literals<'a>>,
    after: Option<Literals<'a>>,
}

/// A positional array of literal strings and nulls (any other element: the message is Python's).
struct Literals<'a>(Vec<Option<Text<'a>>>);

impl<'de> Deserialize<'de> for Literals<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Literals<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of SQL literals")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(16); // (serde's own Vec grows from nothing: rows are wide)
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Literals(items))
            }
        }
        d.deserialize_seq(V)
    }
}

/// A JSON integer as Python reads it (no fraction, exponent or boolean) within 64 bits.
fn integer<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<i64>, A::Error> {
    let raw: &RawValue = map.next_value()?;
    let t = raw.get();
    serde_json::from_str::<Checked>(t).map_err(serde::de::Error::custom)?;
    Ok(integer_text(t))
}

/// [`integer`] of a value's checked JSON text.
fn integer_text(t: &str) -> Option<i64> {
    let digits = t.strip_prefix('-').unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse::<i64>().ok()
}

/// [`integer`] from the scanner: a number's token read once (any other value checked and skipped).
fn scan_integer(scan: &mut Scan<'_>) -> Option<Option<i64>> {
    if !matches!(scan.peek()?, b'-' | b'0'..=b'9') {
        return scan.value().map(|_| None);
    }
    let n = scan.number()?;
    Some(if n.integer { n.int } else { None })
}

/// ``null`` or an array of literal strings and nulls, as ``Option<Literals>`` deserialises it
/// (``None``: serde decides, as for any other element).
fn scan_literals<'a>(scan: &mut Scan<'a>) -> Option<Option<Literals<'a>>> {
    if scan.null()? {
        return Some(None);
    }
    let mut items = Vec::new(); // (an insert's ``where`` and a delete's ``field`` are empty: no allocation)
    scan.items(b'[', b']', |scan| {
        if items.is_empty() {
            items.reserve(16); // (rows are wide)
        }
        items.push(scan.optional_string()?.map(Text));
        Some(())
    })?;
    Some(Some(Literals(items)))
}

impl<'de> Fields<'de> for Message<'de> {
    const WHAT: &'static str = "a TDSQL binlog event";

    fn field<A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error> {
        match name {
            "logtype" => self.logtype = text(map)?,
            "eventtypestr" => self.kind = text(map)?,
            "eventtype" => self.code = integer(map)?,
            "db" => self.database = text(map)?,
            "table" => self.table = text(map)?,
            "gtid" => self.gtid = text(map)?,
            "begintime" => self.begintime = integer(map)?,
            "where" => self.before = map.next_value()?,
            "field" => self.after = map.next_value()?,
            _ => {
                map.next_value::<Checked>()?;
            }
        }
        Ok(())
    }

    // One pass by the scanner (the serde reading above cost about a third of a message's
    // instructions): the same fields, serde deciding wherever the scanner stops.
    const SCANNED: bool = true;

    fn scan_field(&mut self, name: &str, scan: &mut Scan<'de>) -> Option<()> {
        match name {
            "logtype" => self.logtype = scan.optional_string()?,
            "eventtypestr" => self.kind = scan.optional_string()?,
            "eventtype" => self.code = scan_integer(scan)?,
            "db" => self.database = scan.optional_string()?,
            "table" => self.table = scan.optional_string()?,
            "gtid" => self.gtid = scan.optional_string()?,
            "begintime" => self.begintime = scan_integer(scan)?,
            "where" => self.before = scan_literals(scan)?,
            "field" => self.after = scan_literals(scan)?,
            _ => {
                scan.value()?;
            }
        }
        Some(())
    }
}

/// ``eventtypestr`` of a message the plan does not read (read leniently, the last of
/// repeated keys as Python keeps it), or ``None``: not a JSON object with a string there.
fn kind_of(value: &[u8]) -> Option<String> {
    let object: HashMap<Cow<str>, serde_json::Value> = serde_json::from_slice(value).ok()?;
    object.get("eventtypestr")?.as_str().map(str::to_owned)
}

/// The row op of ``eventtypestr`` and the binlog codes Python accepts with it (``_KINDS``).
fn row_op(kind: &str) -> Option<(usize, [i64; 4])> {
    match kind {
        "insert" => Some((0, [23, 30, 166, 169])),
        "update" => Some((1, [24, 31, 167, 170])),
        "delete" => Some((2, [25, 32, 168, 171])),
        _ => None,
    }
}

/// Is a GTID MariaDB's (``domain-server-sequence``: Python's ``_MARIADB_GTID``)? ``None``
/// (Python's): a GTID whose answer the regular expression gives otherwise than ASCII digits
/// would (``\d`` matches other scripts' digits, ``$`` a final newline).
fn mariadb(gtid: &str) -> Option<bool> {
    if !gtid.is_ascii() || gtid.ends_with('\n') {
        return None;
    }
    let parts: Vec<&str> = gtid.split('-').collect();
    Some(parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
}

/// A column's literal class, by its MySQL type (``native_catalog._literal_class``): which
/// literals the reader turns into the column's MySQL text.
mod class {
    /// INT, YEAR, BIT: integers, bit values, strings.
    pub const WHOLE: u8 = b'n';
    /// DECIMAL and DOUBLE: integers and decimals, strings.
    pub const EXACT: u8 = b'd';
    /// Binary strings: strings (their UTF-8 bytes) and hexadecimal literals, as Latin-1 text.
    pub const BYTES: u8 = b'b';
    /// Text, temporal, ENUM, SET, JSON: strings only.
    pub const TEXT: u8 = b's';
}

/// One scanned SQL literal (the forms the reader is certain of; ``sqltext.parse_literal``).
#[derive(Debug, PartialEq)]
enum Literal<'b> {
    Null,
    /// Digits, optionally signed, optionally with a fraction (``sqltext``'s INT and DECIMAL).
    Number { text: &'b str, fraction: bool },
    Str(Cow<'b, str>),
    Hex(Vec<u8>),
    Bits(u64),
}

const SPACE: &[char] = &[' ', '\t', '\r', '\n'];

/// ``text`` as one literal, or ``None`` (not a literal, or one the reader leaves to Python:
/// ``TRUE``/``FALSE``, exponents, ``+``, ``.5``, ``1.``, nested introducers, ...).
fn literal(text: &str) -> Option<Literal<'_>> {
    let spaced = text.as_bytes().first().is_some_and(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
    let t = if spaced { text.trim_start_matches(SPACE) } else { text };
    let b = t.as_bytes();
    let (lit, rest) = match *b.first()? {
        b'\'' | b'"' => string(t)?,
        b'n' | b'N' if b.get(1) == Some(&b'\'') => string(&t[1..])?,
        b'x' | b'X' if b.get(1) == Some(&b'\'') => {
            let end = t[2..].find('\'')? + 2;
            (Literal::Hex(hex(&t[2..end], false)?), &t[end + 1..])
        }
        b'b' | b'B' if b.get(1) == Some(&b'\'') => {
            let end = t[2..].find('\'')? + 2;
            (Literal::Bits(bits(&t[2..end])?), &t[end + 1..])
        }
        b'0' if matches!(b.get(1), Some(b'x' | b'X' | b'b' | b'B')) => {
            let body = &t[2..];
            let end = body.find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(body.len());
            if end == 0 || !body[end..].is_empty() && !body[end..].starts_with(SPACE) {
                return None; // ``0x`` alone, or a character Python may read as alphanumeric
            }
            let lit = if matches!(b[1], b'x' | b'X') { Literal::Hex(hex(&body[..end], true)?) } else { Literal::Bits(bits(&body[..end])?) };
            (lit, &body[end..])
        }
        b'_' => {
            let end = t[1..].find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(t.len(), |e| e + 1);
            if !t[end..].starts_with(SPACE) && !t[end..].starts_with(['\'', '"']) {
                return None;
            }
            let binary = b.len() >= 7 && b[1..7].eq_ignore_ascii_case(b"binary");
            let inner = t[end..].trim_start_matches(SPACE);
            if !inner.starts_with(['\'', '"']) {
                return None; // an introduced number or hexadecimal: Python's
            }
            let (lit, rest) = string(inner)?;
            match (binary, lit) {
                (true, Literal::Str(s)) => (Literal::Hex(s.into_owned().into_bytes()), rest),
                (_, lit) => (lit, rest),
            }
        }
        b'-' | b'0'..=b'9' => number(t)?,
        _ => {
            let end = t.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(t.len());
            if !t[..end].eq_ignore_ascii_case("null") {
                return None;
            }
            (Literal::Null, &t[end..])
        }
    };
    (rest.is_empty() || rest.trim_start_matches(SPACE).is_empty()).then_some(lit)
}

/// A quoted string at the start of ``t`` (backslash escapes, doubled quotes) and the text after it.
fn string(t: &str) -> Option<(Literal<'_>, &str)> {
    let quote = t.as_bytes()[0];
    let body = &t[1..];
    let bytes = body.as_bytes();
    let mut out: Option<String> = None;
    let (mut i, mut start) = (0, 0);
    while i < bytes.len() {
        // To the next backslash or quote, eight bytes at a time (a byte-at-a-time loop was most of a literal's cost).
        let Some(at) = first_of(bytes, i, quote, b'\\') else { break };
        i = at;
        let c = bytes[i];
        if c == b'\\' {
            let s = out.get_or_insert_with(String::new);
            s.push_str(&body[start..i]);
            let next = *bytes.get(i + 1)?;
            let mapped = match next {
                b'0' => "\0",
                b'b' => "\u{8}",
                b'n' => "\n",
                b'r' => "\r",
                b't' => "\t",
                b'Z' => "\u{1a}",
                b'%' => "\\%",
                b'_' => "\\_",
                _ => "",
            };
            if mapped.is_empty() {
                start = i + 1; // any other character stands for itself (a multi-byte one copied on)
                i += 2;
                while i < bytes.len() && (bytes[i] & 0xC0) == 0x80 {
                    i += 1;
                }
                continue;
            }
            s.push_str(mapped);
            i += 2;
            start = i;
            continue;
        }
        if c == quote {
            if bytes.get(i + 1) == Some(&quote) {
                let s = out.get_or_insert_with(String::new);
                s.push_str(&body[start..=i]);
                i += 2;
                start = i;
                continue;
            }
            let text = match out {
                Some(mut s) => {
                    s.push_str(&body[start..i]);
                    Cow::Owned(s)
                }
                None => Cow::Borrowed(&body[..i]),
            };
            return Some((Literal::Str(text), &body[i + 1..]));
        }
        i += 1;
    }
    None // unterminated: Python's error
}

/// ``-?digits(.digits)?`` at the start of ``t`` and the text after it (followed by nothing
/// Python would read on: letters, ``_``, quotes, an exponent).
fn number(t: &str) -> Option<(Literal<'_>, &str)> {
    let b = t.as_bytes();
    let digits = |from: usize| from + b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let sign = usize::from(b[0] == b'-');
    let mut end = digits(sign);
    if end == sign {
        return None;
    }
    let fraction = b.get(end) == Some(&b'.');
    if fraction {
        let after = digits(end + 1);
        if after == end + 1 {
            return None; // ``1.``: Python's
        }
        end = after;
    }
    if b.get(end).is_some_and(|c| !matches!(c, b' ' | b'\t' | b'\r' | b'\n')) {
        return None;
    }
    Some((Literal::Number { text: &t[..end], fraction }, &t[end..]))
}

/// Hexadecimal digits as bytes (``pad``: an odd count is left-padded, as ``0x..`` is).
fn hex(body: &str, pad: bool) -> Option<Vec<u8>> {
    if !body.bytes().all(|b| b.is_ascii_hexdigit()) || (body.len() % 2 == 1 && !pad) {
        return None;
    }
    let padded: Cow<str> = if body.len() % 2 == 1 { Cow::Owned(format!("0{body}")) } else { Cow::Borrowed(body) };
    (0..padded.len()).step_by(2).map(|i| u8::from_str_radix(&padded[i..i + 2], 16).ok()).collect()
}

/// Binary digits as an unsigned integer (empty: 0; past 64 bits: Python's).
fn bits(body: &str) -> Option<u64> {
    if !body.bytes().all(|b| b == b'0' || b == b'1') {
        return None;
    }
    let significant = body.trim_start_matches('0');
    if significant.len() > 64 {
        return None;
    }
    Some(if significant.is_empty() { 0 } else { u64::from_str_radix(significant, 2).ok()? })
}

/// Bytes as Latin-1 text (one character per byte: ``from_text`` of a binary column reads it back).
fn latin1(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// The most digits a DECIMAL value has (MySQL's 65): wider literals are Python's.
const MAX_DIGITS: usize = 65;

/// A literal as the MySQL text ``from_text`` reads into the value ``literal_value`` gives
/// it in a column of ``class`` (``Some(None)``: NULL); ``None``: Python's.
fn column_text<'b>(raw: Option<&'b str>, class: u8) -> Option<Option<Cow<'b, str>>> {
    let Some(raw) = raw else { return Some(None) };
    Some(Some(match (literal(raw)?, class) {
        (Literal::Null, _) => return Some(None),
        (Literal::Str(s), class::WHOLE | class::EXACT | class::TEXT) => s,
        (Literal::Str(s), class::BYTES) => Cow::Owned(latin1(s.as_bytes())),
        (Literal::Hex(h), class::BYTES) => Cow::Owned(latin1(&h)),
        (Literal::Number { text, fraction: false }, class::WHOLE) => Cow::Borrowed(text),
        (Literal::Number { text, .. }, class::EXACT) if text.bytes().filter(u8::is_ascii_digit).count() <= MAX_DIGITS => Cow::Borrowed(text),
        (Literal::Bits(n), class::WHOLE) => Cow::Owned(n.to_string()),
        _ => return None,
    }))
}

/// A literal as the message has it (``None``: JSON null).
fn raw<'t>(value: &'t Option<Text>) -> Option<&'t str> {
    value.as_ref().map(|t| t.0.as_ref())
}

/// An image's literals as a row of the catalog's column ``names`` and their texts
/// (``column_text`` by each column's class), or ``None``: Python's.
fn named<'b>(names: &'b [String], values: &'b [Option<Text<'b>>], classes: &[u8]) -> Option<Row<'b>> {
    let mut row = Vec::with_capacity(names.len()); // (an ``Option`` collect would grow it from nothing)
    for ((name, value), class) in names.iter().zip(values).zip(classes) {
        row.push((Cow::Borrowed(name.as_str()), column_text(raw(value), *class)?));
    }
    Some(Row(row))
}

impl CanalToDebezium {
    /// One TDSQL binlog event into ``out``; ``false`` when Python must process it.
    pub(crate) fn tdsql_message(&mut self, py: Python, value: &[u8], out: &mut Vec<Output>) -> PyResult<bool> {
        let PlanReader::CKafka(reader) = &mut self.reader else { return Ok(false) };
        let Some(i) = reader.batch else { return Ok(false) }; // outside a batch (the Arrow path): the catalog is Python's
        if reader.closed_at.is_some() {
            return Ok(false);
        }
        let within = value.len() <= self.max_message_bytes;
        let parsed = if within { parse::<Message>(value) } else { None };
        let lenient = if parsed.is_none() && within { kind_of(value) } else { None };
        let kind = parsed.as_ref().map_or(lenient.as_deref(), |m| m.kind.as_deref());
        let Some((op, codes)) = kind.and_then(row_op) else {
            // Only a JSON object can be DDL; transaction markers never are.
            let object = value.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
            if object && !matches!(kind, Some("gtid" | "xid")) {
                reader.closed_at = Some(i); // DDL (or not certainly a row event): Python applies it to the catalog
            }
            return Ok(false);
        };
        let Some(m) = parsed else { return Ok(false) };
        if m.logtype.as_deref() != Some("mysqlbinlog") || !m.code.is_some_and(|c| codes.contains(&c)) {
            return Ok(false);
        }
        let (Some(database), Some(table_name), Some(es)) = (m.database.as_deref(), m.table.as_deref(), m.begintime.and_then(|s| s.checked_mul(1000))) else { return Ok(false) };
        let (before, after) = (m.before.as_ref().map_or(&[][..], |l| &l.0), m.after.as_ref().map_or(&[][..], |l| &l.0));
        let shaped = match op {
            0 => !after.is_empty() && before.is_empty(),
            1 => !before.is_empty() && before.len() == after.len(),
            _ => !before.is_empty() && after.is_empty(),
        };
        if !shaped {
            return Ok(false);
        }
        let width = if op == 2 { before.len() } else { after.len() };
        let Some(mariadb) = m.gtid.as_deref().map_or(Some(false), mariadb) else { return Ok(false) };
        let Some(compiled) = reader.table(py, database, table_name, &[], Some((width, mariadb)), &self.encoder)? else { return Ok(false) };
        if compiled.names.len() != width || compiled.classes.len() != width {
            return Ok(false);
        }
        let image = |values| named(&compiled.names, values, &compiled.classes);
        let (row, old) = match op {
            0 => (image(after), None),
            1 => (image(after), Some(image(before))),
            _ => (image(before), None),
        };
        let Some(row) = row else { return Ok(false) };
        let old = match old {
            Some(None) => return Ok(false),
            Some(Some(old)) => {
                // Python's changed columns compare the literals: each must differ exactly where its text does.
                if (0..width).any(|c| (raw(&before[c]) != raw(&after[c])) != (old.0[c].1 != row.0[c].1)) {
                    return Ok(false);
                }
                Some(old)
            }
            None => None,
        };
        let position = position(None, m.gtid.as_deref(), None, None);
        Ok(self.write_row(&compiled, op, Some(row), old, (database, table_name), es, position, out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_as_sqltext_reads_them() {
        assert_eq!(literal(" 'it''s' "), Some(Literal::Str(Cow::Owned("it's".into()))));
        assert_eq!(literal(r"'a\nb\%'"), Some(Literal::Str(Cow::Owned("a\nb\\%".into()))));
        assert_eq!(literal("_utf8mb4'x'"), Some(Literal::Str(Cow::Borrowed("x"))));
        assert_eq!(literal("_binary'x'"), Some(Literal::Hex(b"x".to_vec())));
        assert_eq!(literal("0xA"), Some(Literal::Hex(vec![10])));
        assert_eq!(literal("X'0a'"), Some(Literal::Hex(vec![10])));
        assert_eq!(literal("X'a'"), None);
        assert_eq!(literal("b'101'"), Some(Literal::Bits(5)));
        assert_eq!(literal("null"), Some(Literal::Null));
        assert_eq!(literal("-1.50"), Some(Literal::Number { text: "-1.50", fraction: true }));
        for python in ["1e5", "+1", ".5", "1.", "TRUE", "'a' 'b'", "'open", "NULLX", "1a", "_x 1"] {
            assert_eq!(literal(python), None, "{python}");
        }
    }
}
