//! Canal value text -> Debezium JSON value, one column representation each.
//!
//! Every conversion either writes exactly what the Python path writes for the
//! text (the typed path: ``CanalText.to_python`` then the Debezium encoder) or
//! returns ``Err(Fallback)`` so that Python processes the whole record: zero
//! dates, rounding, whitespace, non-ASCII digits, DST gaps, anything unusual.

use std::collections::HashMap;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use chrono::{LocalResult, NaiveDate, NaiveDateTime, NaiveTime, TimeZone};
use chrono_tz::Tz;
use num_bigint::BigInt;

use crate::canal_text::canonical_int;
use crate::json::{write_f64, write_int, write_str};

/// The record is not handled natively: Python processes it (and words any error).
#[derive(Debug)]
pub struct Fallback;

pub type Conv = Result<(), Fallback>;

/// How one column's text becomes its Debezium JSON value.
pub enum Op {
    /// Text written as a JSON string (VARCHAR, TEXT, JSON, label-less ENUM/SET).
    Str,
    /// Integer text -> JSON integer.
    Int,
    /// BIGINT UNSIGNED as int64: values above 2^63-1 wrap negative.
    Int64Wrap,
    /// Connect Decimal: base64 of the unscaled two's-complement integer.
    Decimal(u32),
    /// DOUBLE text -> JSON number.
    Double,
    /// BIT(1) `0`/`1` -> boolean.
    Bit1,
    /// BIT(n) -> base64 of n bits, little-endian, in this many bytes.
    Bits(usize),
    /// DATE -> days since the epoch.
    Date,
    /// DATETIME/TIMESTAMP -> epoch milliseconds / microseconds (wall clock as UTC).
    EpochMs,
    EpochUs,
    /// TIMESTAMP/DATETIME -> ISO-8601 UTC text from this zone (`None`: UTC).
    IsoUtc(Option<Tz>),
    /// TIME -> microseconds.
    TimeUs,
    /// Binary text (one char per byte) -> base64.
    Bytes,
    /// ENUM index (or label) -> label.
    Enum(HashMap<String, String>),
    /// SET bitmask (or label list) -> label list.
    Set(Vec<String>),
    /// Not handled natively: a non-null value sends the record to Python.
    Python,
}

impl Op {
    pub fn write(&self, out: &mut Vec<u8>, s: &str) -> Conv {
        match self {
            Op::Str => write_str(out, s),
            // A canonical integer of at most 18 characters is its own JSON text.
            Op::Int if s.len() <= 18 && canonical_int(s).is_ok() => out.extend_from_slice(s.as_bytes()),
            Op::Int => write_int(out, int_in_json_range(s)?),
            Op::Int64Wrap => {
                let n = int_in_json_range(s)?;
                let n = if n >= 1i128 << 63 { n - (1i128 << 64) } else { n };
                write_int(out, n);
            }
            Op::Decimal(scale) => decimal_b64(out, s, *scale)?,
            Op::Double => {
                if !plain_number(s) {
                    return Err(Fallback);
                }
                let v: f64 = s.parse().map_err(|_| Fallback)?;
                if !v.is_finite() {
                    return Err(Fallback);
                }
                write_f64(out, v);
            }
            Op::Bit1 => match s {
                "0" => out.extend_from_slice(b"false"),
                "1" => out.extend_from_slice(b"true"),
                _ => return Err(Fallback),
            },
            Op::Bits(size) => {
                let n = int_in_json_range(s)?;
                if n < 0 || *size > 16 || (*size < 16 && n >> (8 * size) != 0) {
                    return Err(Fallback);
                }
                let bytes = (n as u128).to_le_bytes();
                b64_string(out, &bytes[..*size]);
            }
            Op::Date => write_int(out, days(date(s)?)),
            Op::EpochMs => write_int(out, epoch_us(datetime(s)?).div_euclid(1000)),
            Op::EpochUs => write_int(out, epoch_us(datetime(s)?)),
            Op::IsoUtc(zone) => iso_utc(out, s, zone.as_ref())?,
            Op::TimeUs => write_int(out, time_us(s)?),
            Op::Bytes => {
                let mut raw = Vec::with_capacity(s.len());
                for c in s.chars() {
                    let c = c as u32;
                    if c > 0xff {
                        return Err(Fallback); // not ISO-8859-1 text: Python words the error
                    }
                    raw.push(c as u8);
                }
                b64_string(out, &raw);
            }
            Op::Enum(table) => write_str(out, table.get(s).ok_or(Fallback)?),
            Op::Set(labels) => write_str(out, &set_labels(labels, s)?),
            Op::Python => return Err(Fallback),
        }
        Ok(())
    }
}

fn ascii_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `-?digits` (what Python's `int()` reads the same way), within the integers orjson writes.
pub(crate) fn int_in_json_range(s: &str) -> Result<i128, Fallback> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    if !ascii_digits(digits) || digits.len() > 30 {
        return Err(Fallback);
    }
    let n: i128 = s.parse().map_err(|_| Fallback)?;
    if n < -(1i128 << 63) || n >= 1i128 << 64 {
        return Err(Fallback);
    }
    Ok(n)
}

/// `-?digits[.digits][e[+-]digits]`: the texts Python's `float()` and Rust read alike.
pub(crate) fn plain_number(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if b.first() == Some(&b'-') {
        i = 1;
    }
    let start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if i == start {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let f = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == f {
            return false;
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let e = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == e {
            return false;
        }
    }
    i == b.len()
}

fn b64_string(out: &mut Vec<u8>, raw: &[u8]) {
    out.push(b'"');
    let start = out.len();
    out.resize(start + (raw.len() + 2) / 3 * 4, 0);
    let n = STANDARD.encode_slice(raw, &mut out[start..]).expect("sized for base64");
    out.truncate(start + n);
    out.push(b'"');
}

/// MySQL's DECIMAL bounds (`transforms/types.py`: `DECIMAL_MAX_INTEGER_DIGITS`, `DECIMAL_MAX_SCALE`).
const DECIMAL_MAX_INTEGER_DIGITS: usize = 65;
const DECIMAL_MAX_SCALE: usize = 30;

/// `[-]digits[.[digits]]` with at most `scale` fraction digits (more need rounding: Python).
fn decimal_b64(out: &mut Vec<u8>, s: &str, scale: u32) -> Conv {
    let (neg, body) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (whole, frac) = match body.find('.') {
        Some(i) => (&body[..i], &body[i + 1..]),
        None => (body, ""),
    };
    if !ascii_digits(whole) || !(frac.is_empty() || ascii_digits(frac)) || frac.len() > scale as usize {
        return Err(Fallback);
    }
    // Beyond MySQL's DECIMAL(65,30) (or leading zeros that may hide a smaller value): Python's
    // `types.checked_decimal` decides, and a value it refuses is its dead letter.
    if whole.len() > DECIMAL_MAX_INTEGER_DIGITS || frac.len() > DECIMAL_MAX_SCALE {
        return Err(Fallback);
    }
    let pad = scale as usize - frac.len();
    let total = whole.len() + frac.len() + pad;
    if total <= 37 {
        let mut n: i128 = 0;
        for b in whole.bytes().chain(frac.bytes()) {
            n = n * 10 + (b - b'0') as i128;
        }
        for _ in 0..pad {
            n *= 10;
        }
        if neg {
            n = -n;
        }
        let bytes = n.to_be_bytes();
        let mut i = 0;
        while i < 15 {
            let (b, next) = (bytes[i], bytes[i + 1]);
            if (b == 0 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0) {
                i += 1;
            } else {
                break;
            }
        }
        b64_string(out, &bytes[i..]);
        return Ok(());
    }
    let mut text = String::with_capacity(total + 1);
    if neg {
        text.push('-');
    }
    text.push_str(whole);
    text.push_str(frac);
    for _ in 0..pad {
        text.push('0');
    }
    let n: BigInt = text.parse().map_err(|_| Fallback)?;
    b64_string(out, &n.to_signed_bytes_be());
    Ok(())
}

fn two(b: &[u8]) -> Option<u32> {
    if b.len() == 2 && b[0].is_ascii_digit() && b[1].is_ascii_digit() {
        Some(((b[0] - b'0') * 10 + (b[1] - b'0')) as u32)
    } else {
        None
    }
}

/// `YYYY-MM-DD`, a real date of years 1..=9999 (Python's `date.fromisoformat`).
pub(crate) fn date(s: &str) -> Result<NaiveDate, Fallback> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' || !b[..4].iter().all(u8::is_ascii_digit) {
        return Err(Fallback);
    }
    let year: i32 = s[..4].parse().map_err(|_| Fallback)?;
    let (month, day) = (two(&b[5..7]).ok_or(Fallback)?, two(&b[8..10]).ok_or(Fallback)?);
    if year < 1 {
        return Err(Fallback); // zero dates: Python decides (null or epoch)
    }
    NaiveDate::from_ymd_opt(year, month, day).ok_or(Fallback)
}

/// `YYYY-MM-DD HH:MM:SS[.f{1,6}]` (what Canal writes; anything else: Python).
pub(crate) fn datetime(s: &str) -> Result<NaiveDateTime, Fallback> {
    let b = s.as_bytes();
    if b.len() < 19 || b[10] != b' ' || b[13] != b':' || b[16] != b':' {
        return Err(Fallback);
    }
    let d = date(&s[..10])?;
    let (h, m, sec) = (two(&b[11..13]).ok_or(Fallback)?, two(&b[14..16]).ok_or(Fallback)?, two(&b[17..19]).ok_or(Fallback)?);
    let mut micros = 0u32;
    if b.len() > 19 {
        let frac = &b[20..];
        if b[19] != b'.' || frac.is_empty() || frac.len() > 6 || !frac.iter().all(u8::is_ascii_digit) {
            return Err(Fallback);
        }
        for i in 0..6 {
            micros = micros * 10 + frac.get(i).map_or(0, |c| (c - b'0') as u32);
        }
    }
    let t = NaiveTime::from_hms_micro_opt(h, m, sec, micros).ok_or(Fallback)?;
    Ok(NaiveDateTime::new(d, t))
}

fn days(d: NaiveDate) -> i64 {
    (d - NaiveDate::from_ymd_opt(1970, 1, 1).unwrap()).num_days()
}

pub(crate) fn epoch_us(v: NaiveDateTime) -> i64 {
    let t = v.time();
    days(v.date()) * 86_400_000_000
        + (chrono::Timelike::num_seconds_from_midnight(&t) as i64) * 1_000_000
        + (chrono::Timelike::nanosecond(&t) / 1000) as i64
}

/// `datetime.isoformat()` of a naive value, fraction without trailing zeros, then `Z`.
fn iso_utc(out: &mut Vec<u8>, s: &str, zone: Option<&Tz>) -> Conv {
    let local = datetime(s)?;
    let utc = match zone {
        None => local,
        Some(tz) => zoned_to_utc(local, tz)?,
    };
    let year = chrono::Datelike::year(&utc);
    if !(1..=9999).contains(&year) {
        return Err(Fallback);
    }
    use chrono::{Datelike, Timelike};
    let mut text = [0u8; 27];
    let digits = |buf: &mut [u8], mut n: u32| {
        for slot in buf.iter_mut().rev() {
            *slot = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    digits(&mut text[0..4], year as u32);
    text[4] = b'-';
    digits(&mut text[5..7], utc.month());
    text[7] = b'-';
    digits(&mut text[8..10], utc.day());
    text[10] = b'T';
    digits(&mut text[11..13], utc.hour());
    text[13] = b':';
    digits(&mut text[14..16], utc.minute());
    text[16] = b':';
    digits(&mut text[17..19], utc.second());
    let mut len = 19;
    let micros = utc.nanosecond() / 1000;
    if micros != 0 {
        text[19] = b'.';
        digits(&mut text[20..26], micros);
        len = 26;
        while text[len - 1] == b'0' {
            len -= 1;
        }
    }
    out.push(b'"');
    out.extend_from_slice(&text[..len]);
    out.extend_from_slice(b"Z\"");
    Ok(())
}

/// A wall clock in ``tz`` as UTC, as Python's ``zoneinfo`` places it (fold=0).
pub(crate) fn zoned_to_utc(local: NaiveDateTime, tz: &Tz) -> Result<NaiveDateTime, Fallback> {
    let year = chrono::Datelike::year(&local);
    if !(1900..=2037).contains(&year) {
        return Err(Fallback); // beyond the range both zone databases tabulate alike
    }
    match tz.from_local_datetime(&local) {
        LocalResult::Single(v) => Ok(v.naive_utc()),
        LocalResult::Ambiguous(first, _) => Ok(first.naive_utc()), // fold=0: the earlier instant
        LocalResult::None => Err(Fallback),                         // in a DST gap: Python decides
    }
}

/// `[-]H+:MM:SS[.f{1,6}]` (minutes and seconds to 59) -> microseconds (Python's `parse_time` + MicroTime).
pub(crate) fn time_us(s: &str) -> Result<i64, Fallback> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (main, frac) = match body.find('.') {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let mut parts = main.split(':');
    let (h, m, sec) = (parts.next().ok_or(Fallback)?, parts.next().ok_or(Fallback)?, parts.next().ok_or(Fallback)?);
    if parts.next().is_some()
        || !ascii_digits(h)
        || h.len() > 9
        || !ascii_digits(m)
        || m.len() > 2
        || !ascii_digits(sec)
        || sec.len() > 2
    {
        return Err(Fallback);
    }
    let mut micros: i64 = 0;
    if let Some(f) = frac {
        if !ascii_digits(f) || f.len() > 6 {
            return Err(Fallback);
        }
        for i in 0..6 {
            micros = micros * 10 + f.as_bytes().get(i).map_or(0, |c| (c - b'0') as i64);
        }
    }
    let (h, m, sec): (i64, i64, i64) = (h.parse().unwrap(), m.parse().unwrap(), sec.parse().unwrap());
    if m > 59 || sec > 59 {
        return Err(Fallback); // not a TIME: Python words the error
    }
    let total = ((h * 60 + m) * 60 + sec) * 1_000_000 + micros;
    Ok(if neg { -total } else { total })
}

/// A SET's text: a bitmask of its labels, or the labels themselves.
pub(crate) fn set_labels(labels: &[String], s: &str) -> Result<String, Fallback> {
    if s.is_empty() {
        return Ok(String::new());
    }
    if labels.len() > 64 {
        return Err(Fallback); // MySQL has at most 64: whatever this is, Python decides
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        if s.len() > 30 {
            return Err(Fallback);
        }
        let bits: u128 = s.parse().map_err(|_| Fallback)?;
        if bits >> labels.len() != 0 {
            return Err(Fallback); // bits beyond the labels: Python words the error
        }
        let chosen: Vec<&str> =
            labels.iter().enumerate().filter(|(i, _)| bits >> i & 1 == 1).map(|(_, l)| l.as_str()).collect();
        return Ok(chosen.join(","));
    }
    if s.chars().any(|c| c.is_numeric()) && s.chars().all(|c| c.is_numeric()) {
        return Err(Fallback); // non-ASCII digits: Python's isdigit decides
    }
    if s.split(',').all(|p| labels.iter().any(|l| l == p)) {
        Ok(s.to_string())
    } else {
        Err(Fallback)
    }
}
