//! A single-pass JSON scanner over one message that borrows from it: strings without
//! escapes, numbers and whole values come back as slices of the input, with no
//! intermediate tree and no second pass (serde's ``RawValue`` followed by a re-parse).
//!
//! It is a fast path, not a second parser to trust: it accepts only what serde_json
//! (and orjson) read alike and answers ``None`` for anything else (escaped strings it
//! cannot decode itself, integers past 64 bits, numbers near a double's limits, control
//! characters, malformed text), and its callers then take the serde path, which decides.

use std::borrow::Cow;

use crate::canal::Text;

/// A JSON number's token: its text, whether it is an integer (no fraction, no exponent)
/// and, if so, its value when it fits 64 signed bits.
pub(crate) struct Number<'a> {
    pub(crate) text: &'a str,
    pub(crate) integer: bool,
    pub(crate) int: Option<i64>,
}

/// A cursor over one JSON text (valid UTF-8: the caller checked it).
#[derive(Clone)]
pub(crate) struct Scan<'a> {
    text: &'a str,
    pos: usize,
}

/// Deepest nesting a skipped value may have (serde_json's own recursion limit is 128).
const MAX_DEPTH: usize = 100;

impl<'a> Scan<'a> {
    pub(crate) fn new(text: &'a str) -> Scan<'a> {
        Scan { text, pos: 0 }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    /// The cursor's offset in the text (after any whitespace [`Scan::peek`] skipped).
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// The text from the cursor on.
    pub(crate) fn rest(&self) -> &'a [u8] {
        &self.bytes()[self.pos..]
    }

    /// The text from ``start`` to the cursor.
    pub(crate) fn text_from(&self, start: usize) -> &'a str {
        &self.text[start..self.pos]
    }

    /// Moves the cursor to ``pos`` (text a caller compared with text a scan accepted in the
    /// same place, or a value's start); past the end: ``None``.
    pub(crate) fn seek(&mut self, pos: usize) -> Option<()> {
        (pos <= self.text.len()).then(|| self.pos = pos)
    }

    /// The text from ``start`` to ``end`` (``None`` past the end or off a character boundary).
    pub(crate) fn slice(&self, start: usize, end: usize) -> Option<&'a str> {
        self.text.get(start..end)
    }

    /// The next byte after any JSON whitespace (not consumed).
    pub(crate) fn peek(&mut self) -> Option<u8> {
        let b = self.bytes();
        while let Some(&c) = b.get(self.pos) {
            if !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(c);
            }
            self.pos += 1;
        }
        None
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.pos += 1)
    }

    fn literal(&mut self, word: &str) -> Option<&'a str> {
        let start = self.pos;
        self.bytes()[start..].starts_with(word.as_bytes()).then(|| {
            self.pos += word.len();
            &self.text[start..self.pos]
        })
    }

    /// Only whitespace is left.
    pub(crate) fn end(&mut self) -> Option<()> {
        self.peek().is_none().then_some(())
    }

    /// ``null`` (consumed: ``true``) or another value (not consumed: ``false``).
    pub(crate) fn null(&mut self) -> Option<bool> {
        if self.peek()? == b'n' {
            self.literal("null")?;
            return Some(true);
        }
        Some(false)
    }

    /// A string, borrowed when it has no escapes (escaped ones are decoded by serde).
    pub(crate) fn string(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'"')?;
        let start = self.pos;
        let i = special(self.bytes(), start)?;
        if self.bytes()[i] == b'"' {
            self.pos = i + 1;
            return Some(Cow::Borrowed(&self.text[start..i]));
        }
        self.escaped(start, i)
    }

    /// The rest of [`Scan::string`] from its first escape or control character at ``i``: kept
    /// out of line, so that the common string (no escape) saves and restores fewer registers
    /// (callgrind: the inlined serde call made every string pay for it).
    #[cold]
    #[inline(never)]
    fn escaped(&mut self, start: usize, mut i: usize) -> Option<Cow<'a, str>> {
        let b = self.bytes();
        if b[i] != b'\\' {
            return None; // a control character
        }
        // An escape: find the closing quote, and let serde decode (and check) the string.
        loop {
            match *b.get(i)? {
                b'"' => break,
                b'\\' => i += 2,
                c if c < 0x20 => return None,
                _ => i += 1,
            }
        }
        self.pos = i + 1;
        serde_json::from_str::<Text>(&self.text[start - 1..=i]).ok().map(|t| t.0)
    }

    /// A number, its grammar checked (``-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?``); integers
    /// past 64 bits and numbers with a fraction or exponent that are not finite doubles
    /// well inside a double's range are ``None``.
    pub(crate) fn number(&mut self) -> Option<Number<'a>> {
        self.peek()?;
        let b = self.bytes();
        let start = self.pos;
        let mut i = start;
        let digits = |i: &mut usize| {
            let from = *i;
            while b.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i > from
        };
        let negative = b.get(i) == Some(&b'-');
        i += usize::from(negative);
        // The integer part's value, summed as it is read (exact up to 18 digits: see below).
        let int_start = i;
        let mut magnitude: u64 = 0;
        if b.get(i) == Some(&b'0') {
            i += 1;
        } else {
            while let Some(d) = b.get(i).filter(|d| d.is_ascii_digit()) {
                magnitude = magnitude.wrapping_mul(10).wrapping_add(u64::from(d - b'0'));
                i += 1;
            }
            if i == int_start {
                return None;
            }
        }
        let int_digits = i - int_start;
        let mut integer = true;
        if b.get(i) == Some(&b'.') {
            i += 1;
            integer = false;
            if !digits(&mut i) {
                return None;
            }
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            integer = false;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if !digits(&mut i) {
                return None;
            }
        }
        let text = &self.text[start..i];
        let mut int = None;
        if integer {
            // At most 18 digits always fit 64 signed bits: the sum is the value, no second parse.
            int = match int_digits {
                0..=18 => Some(if negative { -(magnitude as i64) } else { magnitude as i64 }),
                _ => text.parse::<i64>().ok(),
            };
            if int.is_none() && text.parse::<u64>().is_err() {
                return None;
            }
        } else if text.len() > 300 || text.bytes().any(|b| b == b'e' || b == b'E') {
            // Only an exponent or hundreds of digits can leave a double's range (a fraction
            // without one is finite and below 1e300: no parse needed to know it).
            let v = text.parse::<f64>().ok()?;
            if !v.is_finite() || v.abs() > 1e300 {
                return None;
            }
        }
        self.pos = i;
        Some(Number { text, integer, int })
    }

    /// Any value, checked and skipped: its text as written.
    pub(crate) fn value(&mut self) -> Option<&'a str> {
        self.spanned(|scan| scan.skip(0)).map(|(_, text)| text)
    }

    /// What ``read`` reads of the next value, and that value's text as written.
    pub(crate) fn spanned<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<(T, &'a str)> {
        self.peek()?;
        let start = self.pos;
        let v = read(self)?;
        Some((v, &self.text[start..self.pos]))
    }

    /// ``null`` or a string.
    pub(crate) fn optional_string(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.null()? {
            return Some(None);
        }
        self.string().map(Some)
    }

    /// ``null`` or an integer in 64 signed bits.
    pub(crate) fn optional_i64(&mut self) -> Option<Option<i64>> {
        if self.null()? {
            return Some(None);
        }
        self.number()?.int.map(Some)
    }

    fn skip(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'n' => self.literal("null").map(drop),
            b't' => self.literal("true").map(drop),
            b'f' => self.literal("false").map(drop),
            b'{' if depth < MAX_DEPTH => {
                let mut names: Vec<Cow<'a, str>> = Vec::new();
                self.object(|scan, name| {
                    if names.contains(&name) {
                        return None; // a repeated key: the serde path decides
                    }
                    names.push(name);
                    scan.skip(depth + 1)
                })
            }
            b'[' if depth < MAX_DEPTH => self.items(b'[', b']', |scan| scan.skip(depth + 1)),
            b'-' | b'0'..=b'9' => self.number().map(drop),
            _ => None,
        }
    }

    /// An object: ``field`` is called with each key, the cursor before its value (which it
    /// must consume).
    pub(crate) fn object(&mut self, mut field: impl FnMut(&mut Self, Cow<'a, str>) -> Option<()>) -> Option<()> {
        self.items(b'{', b'}', |scan| {
            if scan.peek()? != b'"' {
                return None;
            }
            let name = scan.string()?;
            scan.eat(b':')?;
            field(scan, name)
        })
    }

    /// The comma-separated items between ``open`` and ``close``, each read by ``item``.
    pub(crate) fn items(&mut self, open: u8, close: u8, mut item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(open)?;
        if self.peek()? == close {
            self.pos += 1;
            return Some(());
        }
        loop {
            item(self)?;
            match self.peek()? {
                b',' => self.pos += 1,
                c if c == close => {
                    self.pos += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of each zero byte of ``x`` (and maybe of bytes above the first: only the
/// lowest marked byte is exact).
fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(ONES) & !x & HIGH
}

/// The index of the first ``"``, ``\\`` or control character at or after ``i`` (eight
/// bytes at a time: a byte's high bit marks a match; the lowest marked byte is exact).
fn special(b: &[u8], mut i: usize) -> Option<usize> {
    while let Some(chunk) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().ok()?);
        let found = zero_bytes(w ^ (ONES * u64::from(b'"'))) | zero_bytes(w ^ (ONES * u64::from(b'\\'))) | (w.wrapping_sub(ONES * 0x20) & !w & HIGH);
        if found != 0 {
            return Some(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    b[i.min(b.len())..].iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20).map(|n| i + n)
}

/// The index of the first byte ``x`` or ``y`` at or after ``i``, eight bytes at a time as
/// [`special`] (the TDSQL reader's SQL strings: their quote and backslash).
pub(crate) fn first_of(b: &[u8], mut i: usize, x: u8, y: u8) -> Option<usize> {
    while let Some(chunk) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().ok()?);
        let found = zero_bytes(w ^ (ONES * u64::from(x))) | zero_bytes(w ^ (ONES * u64::from(y)));
        if found != 0 {
            return Some(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    b[i.min(b.len())..].iter().position(|&c| c == x || c == y).map(|n| i + n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skipped(text: &str) -> Option<&str> {
        let mut scan = Scan::new(text);
        let v = scan.value()?;
        scan.end()?;
        Some(v)
    }

    #[test]
    fn values() {
        assert_eq!(skipped(" {\"a\": [1, -2.5e3, \"x\\n\", null, true, {}]} "), Some("{\"a\": [1, -2.5e3, \"x\\n\", null, true, {}]}"));
        assert_eq!(skipped("01"), None);
        assert_eq!(skipped("1."), None);
        assert_eq!(skipped("1e400"), None);
        assert_eq!(skipped("18446744073709551616"), None);
        assert_eq!(skipped("{\"a\":1,\"a\":2}"), None);
        assert_eq!(skipped("\"\u{1}\""), None);
        assert_eq!(skipped("[1,]"), None);
        assert_eq!(skipped("{\"a\":1,}"), None);
        assert_eq!(skipped("nul"), None);
        assert_eq!(skipped("1 2"), None);
    }

    #[test]
    fn numbers() {
        let number = |text: &str| Scan::new(text).number().map(|n| (n.integer, n.int));
        // Summed or parsed, each integer's value is the parser's, up to and past 64 bits.
        for text in ["0", "-0", "7", "-7", "999999999999999999", "-999999999999999999", "1000000000000000000", "9223372036854775807", "-9223372036854775808"] {
            assert_eq!(number(text), Some((true, Some(text.parse::<i64>().unwrap()))), "{text}");
        }
        assert_eq!(number("9223372036854775808"), Some((true, None)));
        assert_eq!(number("18446744073709551615"), Some((true, None)));
        assert_eq!(number("18446744073709551616"), None);
        assert_eq!(number("-9223372036854775809"), None);
        // Fractions without an exponent are finite and in range however long; exponents are parsed.
        assert_eq!(number("3.529"), Some((false, None)));
        assert!(number(&format!("{}.5", "9".repeat(299))).is_some());
        assert!(number(&format!("{}.5", "9".repeat(301))).is_none());
        assert!(number("1.5e300").is_none());
        assert!(number("1.5e299").is_some());
        assert!(number("1e-400").is_some());
    }

    #[test]
    fn strings() {
        let mut scan = Scan::new("\"a\\u00e9b\"");
        assert_eq!(scan.string().as_deref(), Some("aéb"));
        let mut scan = Scan::new("\"\\ud800\"");
        assert_eq!(scan.string(), None);
        for text in ["\"\"", "\"abcdefgh\"", "\"abcdefghijklmnopq\"x", "\"é€😀 long enough\""] {
            let mut scan = Scan::new(text);
            assert_eq!(scan.string().as_deref(), Some(&text[1..text.rfind('"').unwrap()]));
        }
        assert_eq!(Scan::new("\"abcdefghij\u{1f}k\"").string(), None);
        assert_eq!(Scan::new("\"abcdefghijk").string(), None);
    }

    #[test]
    fn first_of_finds_the_lowest_match() {
        let text = b"abcdefgh'ijklmnop\\q'";
        assert_eq!(first_of(text, 0, b'\'', b'\\'), Some(8));
        assert_eq!(first_of(text, 9, b'\'', b'\\'), Some(17));
        assert_eq!(first_of(text, 18, b'\'', b'\\'), Some(19));
        assert_eq!(first_of(b"\x01'\x00\x00\x00\x00\x00\x00\x00\x00", 0, b'\'', b'\\'), Some(1));
        assert_eq!(first_of(b"no match here at all", 0, b'\'', b'\\'), None);
        assert_eq!(first_of(b"ab", 5, b'\'', b'\\'), None);
    }
}
