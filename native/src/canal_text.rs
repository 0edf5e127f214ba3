//! One column's value from another Canal dialect's text (TiCDC's) to official Canal's
//! text, as ``CanalText.text_writer(column)(TicdcText.to_python(column, text))`` gives it.
//! Only texts whose round trip is certain are converted (canonical integers, plain
//! decimals, doubles Java prints in plain notation, ISO dates and times, ISO-8859-1
//! binary); anything else is [`Fallback`] and the record goes to Python.

use crate::json;
use crate::values::Fallback;

/// The conversion of one column.
pub enum TextOp {
    /// The text as it is (strings, JSON, ENUM/SET without labels).
    Same,
    /// ``str(int(text))``: canonical integers only.
    Int,
    /// YEAR: canonical integers, ``0`` written as ``0000`` (and ``0000`` kept).
    Year,
    /// BIT(n > 1): canonical non-negative integers; BIT(1) (``Bit1``): ``0`` or ``1``.
    Bits,
    Bit1,
    /// ``format_decimal(Decimal(text), scale)``: padded to the scale when Python's
    /// 28-digit context can (else unchanged).
    Decimal(usize),
    /// ``java_float_text(float(text))`` of a DOUBLE, in Java's plain range.
    Double,
    /// ``java_float_text(float32(float(text)), single=True)`` of a FLOAT (the Debezium reader's
    /// ``float32`` numbers), in Java's plain range.
    Float32,
    /// ``date.fromisoformat(text).isoformat()``.
    Date,
    /// ``datetime.fromisoformat(text)`` written with this many fractional digits.
    DateTime(usize),
    /// ``format_time(parse_time(text), fsp)``: ``[-]HH:MM:SS[.f]`` (two or three hour digits).
    Time(usize),
    /// ISO-8859-1 text (one char per byte) read as bytes and written back.
    Bytes,
    /// Python converts a non-null value.
    Python,
}

impl TextOp {
    pub fn from_name(name: &str, arg: Option<usize>) -> Option<TextOp> {
        Some(match (name, arg) {
            ("same", _) => TextOp::Same,
            ("int", _) => TextOp::Int,
            ("year", _) => TextOp::Year,
            ("bits", Some(1)) => TextOp::Bit1,
            ("bits", _) => TextOp::Bits,
            ("decimal", Some(scale)) => TextOp::Decimal(scale),
            ("double", _) => TextOp::Double,
            ("float32", _) => TextOp::Float32,
            ("date", _) => TextOp::Date,
            ("datetime", Some(fsp)) if fsp <= 6 => TextOp::DateTime(fsp),
            ("time", Some(fsp)) if fsp <= 6 => TextOp::Time(fsp),
            // more fractional digits than MySQL has (a malformed type): Python's conversion decides
            ("datetime" | "time", Some(_)) => TextOp::Python,
            ("bytes", _) => TextOp::Bytes,
            ("python", _) => TextOp::Python,
            _ => return None,
        })
    }

    /// ``text`` converted, as a JSON string, into ``out``.
    pub fn write(&self, out: &mut Vec<u8>, text: &str) -> Result<(), Fallback> {
        match self {
            TextOp::Same => json::write_str(out, text),
            TextOp::Int => {
                canonical_int(text)?;
                write_checked(out, text);
            }
            TextOp::Year => {
                if text == "0000" || text == "0" {
                    out.extend_from_slice(b"\"0000\"");
                } else {
                    canonical_int(text)?;
                    write_checked(out, text);
                }
            }
            TextOp::Bits => {
                canonical_int(text)?;
                if text.starts_with('-') {
                    return Err(Fallback);
                }
                write_checked(out, text);
            }
            TextOp::Bit1 => {
                if text != "0" && text != "1" {
                    return Err(Fallback);
                }
                write_checked(out, text);
            }
            TextOp::Decimal(scale) => write_decimal(out, text, *scale)?,
            TextOp::Double => write_double(out, text)?,
            TextOp::Float32 => write_float32(out, text)?,
            TextOp::Date => {
                date(text.as_bytes())?;
                write_checked(out, text);
            }
            TextOp::DateTime(fsp) => write_datetime(out, text, *fsp)?,
            TextOp::Time(fsp) => write_time(out, text, *fsp)?,
            TextOp::Bytes => {
                if text.chars().any(|c| c as u32 > 0xff) {
                    return Err(Fallback); // not ISO-8859-1: Python's error
                }
                json::write_str(out, text);
            }
            TextOp::Python => return Err(Fallback),
        }
        Ok(())
    }
}

/// A text already checked to hold nothing JSON escapes (digits, signs, dots, dashes) as a
/// JSON string: its quotes around it, without the escape scan of ``json::write_str``.
fn write_checked(out: &mut Vec<u8>, text: &str) {
    debug_assert!(text.bytes().all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\'));
    out.reserve(text.len() + 2);
    out.push(b'"');
    out.extend_from_slice(text.as_bytes());
    out.push(b'"');
}

/// ``-?(0|[1-9][0-9]*)`` of at most 40 digits, not ``-0`` (``str(int(text)) == text``).
pub(crate) fn canonical_int(text: &str) -> Result<(), Fallback> {
    let digits = text.strip_prefix('-').unwrap_or(text).as_bytes();
    let ok = !digits.is_empty()
        && digits.len() <= 40
        && digits.iter().all(u8::is_ascii_digit)
        && (digits[0] != b'0' || (digits.len() == 1 && !text.starts_with('-')));
    if ok {
        Ok(())
    } else {
        Err(Fallback)
    }
}

/// Python's ``Decimal.quantize`` in the default 28-digit context: a plain decimal of at
/// most ``scale`` fractional digits is padded to ``scale`` when the padded coefficient
/// fits in 28 digits, else written unchanged.
pub(crate) fn write_decimal(out: &mut Vec<u8>, text: &str, scale: usize) -> Result<(), Fallback> {
    let body = text.strip_prefix('-').unwrap_or(text);
    let (int, frac) = match body.split_once('.') {
        Some((i, f)) if !f.is_empty() => (i, f),
        Some(_) => return Err(Fallback),
        None => (body, ""),
    };
    let int_ok = !int.is_empty() && int.bytes().all(|b| b.is_ascii_digit()) && (int == "0" || !int.starts_with('0'));
    if !int_ok || !frac.bytes().all(|b| b.is_ascii_digit()) || frac.len() > scale || scale > 30 || int.len() > 35 {
        return Err(Fallback); // rounding, exponents, leading zeros, MySQL's limits: Python
    }
    // Significant digits of the padded coefficient (int digits, then the fraction padded).
    let leading_zeros = if int == "0" { 1 + frac.bytes().take_while(|&b| b == b'0').count() } else { 0 };
    let all_zero = int == "0" && frac.bytes().all(|b| b == b'0');
    let significant = if all_zero { 1 } else { int.len() + scale - leading_zeros };
    out.push(b'"');
    out.extend_from_slice(text.as_bytes());
    if significant <= 28 && frac.len() < scale {
        if frac.is_empty() {
            out.push(b'.');
        }
        out.resize(out.len() + scale - frac.len(), b'0');
    }
    out.push(b'"');
    Ok(())
}

/// ``java_float_text(float(text))`` for a DOUBLE whose magnitude Java prints plainly.
fn write_double(out: &mut Vec<u8>, text: &str) -> Result<(), Fallback> {
    if shortest_double(text) {
        write_checked(out, text); // (parsing and re-printing it was a fifth of the Canal writer's conversions)
        return Ok(());
    }
    let plain = text.bytes().all(|b| b.is_ascii_digit() || b == b'.' || b == b'-' || b == b'e' || b == b'E' || b == b'+');
    if !plain || text.is_empty() {
        return Err(Fallback);
    }
    let v: f64 = text.parse().map_err(|_| Fallback)?;
    if !v.is_finite() {
        return Err(Fallback);
    }
    out.push(b'"');
    if v == 0.0 {
        out.extend_from_slice(if v.is_sign_negative() { b"-0.0" } else { b"0.0" });
    } else if (1e-3..1e7).contains(&v.abs()) {
        json::write_f64(out, v); // Python's repr: shortest digits, plain, ".0" for integers
    } else {
        return Err(Fallback); // Java's E notation: Python
    }
    out.push(b'"');
    Ok(())
}

/// Is ``text`` already the double's shortest round-trip digits in plain notation, within Java's
/// plain range (what ``write_double`` writes for it)? ``-?(0|[1-9]\d{0,6})\.\d*[1-9]`` of at
/// most 15 significant digits and at least 1e-3: two decimals of at most 15 significant digits
/// never read as the same double (``DBL_DIG``), so no other one as short reads as this one's.
fn shortest_double(text: &str) -> bool {
    let body = text.strip_prefix('-').unwrap_or(text).as_bytes();
    let Some(dot) = body.iter().position(|&b| b == b'.') else { return false };
    let (int, frac) = (&body[..dot], &body[dot + 1..]);
    let int_ok = !int.is_empty() && int.len() <= 7 && int.iter().all(u8::is_ascii_digit) && (int[0] != b'0' || int.len() == 1);
    if !int_ok || !frac.iter().all(u8::is_ascii_digit) || !frac.last().is_some_and(|&b| b != b'0') {
        return false; // (an integer or a trailing zero: Python's repr writes it otherwise)
    }
    let significant = if int == b"0" {
        let zeros = frac.iter().take_while(|&&b| b == b'0').count();
        if zeros > 2 {
            return false; // below 1e-3: Java's E notation
        }
        frac.len() - zeros
    } else {
        int.len() + frac.len()
    };
    significant <= 15
}

/// ``java_float_text(float32(float(text)), True)``: ``Float.toString``'s plain notation
/// (1e-3 <= |v| < 1e7) of the shortest ``%.{p}g`` digits that read back as the float
/// (``_shortest``, as ``ticdc_out`` writes them for Go; a rounding tie never reads back, so
/// Rust's and Python's tie rules do not matter); Java's E notation: Python.
fn write_float32(out: &mut Vec<u8>, text: &str) -> Result<(), Fallback> {
    let plain = text.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'e' | b'E' | b'+'));
    if !plain || text.is_empty() {
        return Err(Fallback);
    }
    let single = text.parse::<f64>().map_err(|_| Fallback)? as f32;
    let v = f64::from(single);
    out.push(b'"');
    if v == 0.0 {
        out.extend_from_slice(if v.is_sign_negative() { b"-0.0" } else { b"0.0" });
    } else if (1e-3..1e7).contains(&v.abs()) {
        if v < 0.0 {
            out.push(b'-');
        }
        // Go's text of the same digits (TiCDC's), with Java's ".0" for integers
        let start = out.len();
        crate::ticdc_out::write_shortest_single(out, single.abs())?;
        if !out[start..].contains(&b'.') {
            out.extend_from_slice(b".0");
        }
    } else {
        return Err(Fallback); // Java's E notation (and infinities): Python
    }
    out.push(b'"');
    Ok(())
}

fn two(b: &[u8]) -> Option<u32> {
    match b {
        [a, c] if a.is_ascii_digit() && c.is_ascii_digit() => Some(((a - b'0') * 10 + (c - b'0')) as u32),
        _ => None,
    }
}

/// ``YYYY-MM-DD``, a real date of year 1 or later.
fn date(b: &[u8]) -> Result<(), Fallback> {
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' || !b[..4].iter().all(u8::is_ascii_digit) {
        return Err(Fallback);
    }
    let year: u32 = b[..4].iter().fold(0, |n, d| n * 10 + (d - b'0') as u32);
    let (Some(month), Some(day)) = (two(&b[5..7]), two(&b[8..10])) else { return Err(Fallback) };
    #[allow(clippy::manual_is_multiple_of)] // is_multiple_of needs Rust 1.87
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return Err(Fallback),
    };
    if year == 0 || day == 0 || day > days {
        return Err(Fallback); // zero dates and impossible ones: Python
    }
    Ok(())
}

/// ``YYYY-MM-DD HH:MM:SS[.f{1,6}]`` written with ``fsp`` fractional digits (truncated),
/// or for ``fsp`` 0 the microseconds without trailing zeros when there are any.
fn write_datetime(out: &mut Vec<u8>, text: &str, fsp: usize) -> Result<(), Fallback> {
    let b = text.as_bytes();
    if b.len() < 19 || b[10] != b' ' || b[13] != b':' || b[16] != b':' {
        return Err(Fallback);
    }
    date(&b[..10])?;
    let (Some(h), Some(m), Some(s)) = (two(&b[11..13]), two(&b[14..16]), two(&b[17..19])) else { return Err(Fallback) };
    if h > 23 || m > 59 || s > 59 {
        return Err(Fallback);
    }
    let micro = micros(&b[19..])?;
    out.push(b'"');
    out.extend_from_slice(&b[..19]);
    write_fraction(out, &micro, fsp);
    out.push(b'"');
    Ok(())
}

/// Seconds' fraction digits (1-6) after a ``.``, or none; padded to six.
fn micros(rest: &[u8]) -> Result<[u8; 6], Fallback> {
    let frac = match rest {
        [] => rest,
        [b'.', digits @ ..] if (1..=6).contains(&digits.len()) && digits.iter().all(u8::is_ascii_digit) => digits,
        _ => return Err(Fallback),
    };
    let mut micro = [b'0'; 6];
    micro[..frac.len()].copy_from_slice(frac);
    Ok(micro)
}

/// The fraction as written with ``fsp`` digits (truncated), or for ``fsp`` 0 without
/// trailing zeros when there is one.
fn write_fraction(out: &mut Vec<u8>, micro: &[u8; 6], fsp: usize) {
    if fsp > 0 {
        out.push(b'.');
        out.extend_from_slice(&micro[..fsp]);
    } else if micro != &[b'0'; 6] {
        let end = 6 - micro.iter().rev().take_while(|&&d| d == b'0').count();
        out.push(b'.');
        out.extend_from_slice(&micro[..end]);
    }
}

/// ``[-]HH:MM:SS[.f{1,6}]`` with two hour digits, or three not starting with ``0``.
fn write_time(out: &mut Vec<u8>, text: &str, fsp: usize) -> Result<(), Fallback> {
    let (negative, b) = match text.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        rest => (false, rest),
    };
    let hours = match b.iter().position(|&c| c == b':') {
        Some(2) => 2,
        Some(3) if b[0] != b'0' => 3,
        _ => return Err(Fallback),
    };
    if b.len() < hours + 6 || !b[..hours].iter().all(u8::is_ascii_digit) || b[hours + 3] != b':' {
        return Err(Fallback);
    }
    let (Some(m), Some(s)) = (two(&b[hours + 1..hours + 3]), two(&b[hours + 4..hours + 6])) else { return Err(Fallback) };
    if m > 59 || s > 59 {
        return Err(Fallback);
    }
    let micro = micros(&b[hours + 6..])?;
    let zero = b[..hours].iter().all(|&d| d == b'0') && m == 0 && s == 0 && micro == [b'0'; 6];
    out.push(b'"');
    if negative && !zero {
        out.push(b'-');
    }
    out.extend_from_slice(&b[..hours + 6]);
    write_fraction(out, &micro, fsp);
    out.push(b'"');
    Ok(())
}
