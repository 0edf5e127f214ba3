//! Kafka Connect representations under the Debezium schema part, read back as the Canal
//! text the writer's conversion (``canal_text::TextOp``) reads: what the Python decoder
//! (``formats/_connect.py``: ``make_decoder``, a representation's decoder then the
//! column type's adapter) makes of each value, written as text that reads back as the
//! same typed value.
//!
//! ``transforms/native_debezium.py`` (``_connect_read``) names each column's conversion
//! from its Connect field (the representation kind) and MySQL type, only for the pairs
//! below; every value whose JSON kind or range the Python decoder would read otherwise
//! (or refuse) goes to Python.

use std::sync::Arc;

use base64::Engine;

use crate::debezium_in::{Kind, Value};
use crate::json::put_digits;

/// 1970-01-01's ordinal (``date(1970, 1, 1).toordinal()``, chrono's ``num_days_from_ce``).
const EPOCH_ORDINAL: i64 = 719_163;

/// How one column's Debezium value becomes Canal text.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) enum Connect {
    /// The value's own text (integers, strings, doubles, booleans as ``1``/``0``).
    Text,
    /// ``io.debezium.time.Date``, Connect's ``Date``: days since the epoch (``_days_to_date``).
    Days,
    /// Connect's ``Decimal`` (base64 of the unscaled two's complement, big-endian) at this
    /// scale (``_decimal_from_b64``).
    Decimal(u32),
    /// ``Timestamp``/``MicroTimestamp``/``NanoTimestamp``: counts of 1/N seconds since the
    /// epoch, a naive datetime (``_epoch_to_datetime``; nanoseconds floored to micros).
    Epoch(i64),
    /// ``ZonedTimestamp`` (``…Z`` or ``…±HH:MM``) read as the wall clock in the decoder's
    /// ``source_timezone`` (``_zoned_decoder``: ``astimezone``; ``None``: UTC). The planner
    /// names a zone only where both zone databases agree (``native.zones_agree``).
    Zoned(Option<chrono_tz::Tz>),
    /// ``Zoned`` in a zone for a writer that makes an instant of the wall clock again: a wall
    /// clock the zone repeats (a DST fold, where Python's ``fold`` tells the two apart) is Python's.
    ZonedUnfolded(chrono_tz::Tz),
    /// ``Time``/``MicroTime``/``NanoTime``: counts of 1/N seconds (``_int_to_time``).
    Time(i64),
    /// ``bytes`` as base64 (``_unb64``), each byte one ISO-8859-1 char.
    Base64,
    /// BIGINT UNSIGNED as Connect's ``int64`` (``_unwrap_u64``: negative values wrap).
    Unsigned64,
    /// ``io.debezium.data.Bits`` of BIT(n): base64 of the bits, little-endian (``_bits_decoder``),
    /// as the unsigned number's text.
    Bits,
    /// ``io.debezium.data.EnumSet`` (the labels as written, which Python keeps) as the bitmask
    /// text Canal writes (``_set_bits``: each part a label of these, else Python's error).
    SetBits(Arc<[String]>),
    /// ``io.debezium.data.VariableScaleDecimal``: ``{"scale": n, "value": base64 unscaled}``
    /// (``_vsdecimal_decoder``) as its decimal text at its own scale.
    VariableScale,
}

impl Connect {
    /// A conversion's name from the planner (``None``: the value's text).
    pub(crate) fn from_name(name: Option<&str>) -> Option<Connect> {
        let Some(name) = name else { return Some(Connect::Text) };
        let (head, arg) = name.split_once(':').unwrap_or((name, ""));
        Some(match head {
            "text" => Connect::Text,
            "days" => Connect::Days,
            "decimal" => Connect::Decimal(arg.parse().ok()?),
            "epoch" => Connect::Epoch(per_second(arg)?),
            "zoned" if arg.is_empty() => Connect::Zoned(None),
            "zoned" => Connect::Zoned(Some(arg.parse().ok()?)),
            "zoned-unfolded" => Connect::ZonedUnfolded(arg.parse().ok()?),
            "time" => Connect::Time(per_second(arg)?),
            "base64" => Connect::Base64,
            "u64" => Connect::Unsigned64,
            "bits" => Connect::Bits,
            "vsdecimal" => Connect::VariableScale,
            "setbits" => Connect::SetBits(serde_json::from_str::<Vec<String>>(arg).ok()?.into()),
            _ => return None,
        })
    }

    /// The value's Canal text: null, the value's own text, or written at the end of ``out``
    /// (one buffer for a message's texts, reused: no allocation per value); ``Err``: Python's
    /// (another JSON kind, out of range, not canonical base64, ...).
    pub(crate) fn write(&self, v: &Value<'_>, out: &mut String) -> Result<Place, ()> {
        let Some(text) = v.text.as_deref() else { return Ok(Place::Null) };
        if (v.kind == Kind::Obj) != (*self == Connect::VariableScale) {
            return Err(()); // an object where a scalar belongs, or the other way round: Python's
        }
        let int = || if v.kind == Kind::Int { text.parse::<i64>().map_err(|_| ()) } else { Err(()) };
        let string = || if v.kind == Kind::Str { Ok(text) } else { Err(()) };
        let start = out.len();
        match self {
            Connect::Text => return Ok(Place::Own),
            Connect::Days => push_days(out, int()?)?,
            Connect::Decimal(scale) => with_b64(string()?, |bytes| push_decimal(out, bytes, *scale as usize))?,
            Connect::Epoch(n) => push_datetime(out, micros(int()?, *n)?)?,
            Connect::Zoned(zone) => push_zoned(out, string()?, zone.as_ref(), false)?,
            Connect::ZonedUnfolded(zone) => push_zoned(out, string()?, Some(zone), true)?,
            Connect::Time(n) => push_time(out, micros(int()?, *n)?)?,
            Connect::Base64 => out.extend(b64(string()?)?.iter().map(|&b| b as char)),
            // A JSON integer's text (no leading zeros) is its number's: not negative, as it is.
            Connect::Unsigned64 if int()? >= 0 && !text.starts_with('-') => return Ok(Place::Own),
            Connect::Unsigned64 => out.push_str(itoa::Buffer::new().format(int()? as u64)),
            Connect::Bits => out.push_str(&bits_text(&b64(string()?)?)?),
            Connect::VariableScale => push_variable_scale(out, text)?,
            Connect::SetBits(labels) => out.push_str(&set_bits_text(labels, string()?)?),
        }
        Ok(Place::Written(start, out.len()))
    }
}

/// Where [`Connect::write`] put a value's Canal text.
#[derive(Clone, Copy)]
pub(crate) enum Place {
    Null,
    /// The value's own text (``Value::text``).
    Own,
    /// ``out[start..end]``.
    Written(usize, usize),
}

fn per_second(arg: &str) -> Option<i64> {
    match arg {
        "1000" => Some(1000),
        "1000000" => Some(1_000_000),
        "1000000000" => Some(1_000_000_000),
        _ => None,
    }
}

/// A count of 1/``per_second`` seconds as microseconds (nanoseconds floored, as ``v // 1000``).
fn micros(v: i64, per_second: i64) -> Result<i64, ()> {
    match per_second {
        1000 => v.checked_mul(1000).ok_or(()),
        1_000_000 => Ok(v),
        _ => Ok(v.div_euclid(1000)),
    }
}

/// Canonical base64 (standard alphabet, padded): what Python's ``b64decode`` reads alike;
/// anything else (it skips stray characters, accepts loose trailing bits) is Python's.
fn b64(text: &str) -> Result<Vec<u8>, ()> {
    base64::engine::general_purpose::STANDARD.decode(text).map_err(|_| ())
}

/// ``read`` of [`b64`]'s bytes, decoded on the stack when short (a DECIMAL(65)'s unscaled
/// value is 28 bytes): no allocation per decimal value.
fn with_b64<T>(text: &str, read: impl FnOnce(&[u8]) -> T) -> Result<T, ()> {
    let mut buf = [0u8; 48];
    if text.len() <= 64 {
        let n = base64::engine::general_purpose::STANDARD.decode_slice(text, &mut buf).map_err(drop)?;
        return Ok(read(&buf[..n]));
    }
    Ok(read(&b64(text)?))
}

/// A ``VariableScaleDecimal`` struct's decimal text: ``scale`` a JSON integer (0 to 1000),
/// ``value`` canonical base64 (the last of repeated fields, as orjson reads them); any other
/// form (Python's ``int()`` also reads ``2.0`` or ``"2"``) is Python's.
fn push_variable_scale(out: &mut String, raw: &str) -> Result<(), ()> {
    let object: serde_json::Value = serde_json::from_str(raw).map_err(|_| ())?;
    let scale = object.get("scale").and_then(serde_json::Value::as_u64).filter(|s| *s <= 1000).ok_or(())?;
    let value = object.get("value").and_then(serde_json::Value::as_str).ok_or(())?;
    push_decimal(out, &b64(value)?, scale as usize);
    Ok(())
}

/// The unsigned little-endian integer of ``bytes`` (``int.from_bytes(b, "little")``) as
/// text; wider than 128 bits (BIT has at most 64): Python's.
fn bits_text(bytes: &[u8]) -> Result<String, ()> {
    if bytes.len() > 16 {
        return Err(());
    }
    Ok(bytes.iter().rev().fold(0u128, |n, &b| (n << 8) | u128::from(b)).to_string())
}

/// ``set_bits_from_labels`` after ``_check_labels``: every part of a non-empty text is a
/// label (else Python's error), each label named sets its bit (equal labels each theirs).
fn set_bits_text(labels: &[String], text: &str) -> Result<String, ()> {
    if labels.len() > 128 {
        return Err(());
    }
    if text.is_empty() {
        return Ok("0".to_owned());
    }
    let parts: Vec<&str> = text.split(',').collect();
    if !parts.iter().all(|p| labels.iter().any(|l| l == p)) {
        return Err(());
    }
    let bits = labels.iter().enumerate().filter(|(_, l)| parts.contains(&l.as_str())).fold(0u128, |n, (i, _)| n | 1 << i);
    Ok(bits.to_string())
}

/// ``YYYY-MM-DD`` of a count of days since 1970-01-01 (``None`` outside years 1 to 9999).
fn push_days(out: &mut String, days: i64) -> Result<(), ()> {
    let (year, month, day) = civil(days).ok_or(())?;
    push_stamp(out, year, month, day, None);
    Ok(())
}

/// The (year, month, day) of a count of days since 1970-01-01, years 1 to 9999 only.
fn civil(days: i64) -> Option<(u32, u32, u32)> {
    use chrono::Datelike;
    let ordinal = days.checked_add(EPOCH_ORDINAL)?;
    let date = chrono::NaiveDate::from_num_days_from_ce_opt(i32::try_from(ordinal).ok()?)?;
    let year = u32::try_from(date.year()).ok().filter(|y| (1..=9999).contains(y))?;
    Some((year, date.month(), date.day()))
}

/// ``YYYY-MM-DD``, then `` HH:MM:SS.ffffff`` when given a clock (seconds of the day, the
/// microseconds), each field written digit by digit into one fixed buffer: a date and clock
/// through a formatter per field (``itoa`` and seven pushes) cost about three times as many
/// instructions per with-schema message (callgrind).
fn push_stamp(out: &mut String, year: u32, month: u32, day: u32, clock: Option<(u32, u32)>) {
    let mut text = *b"0000-00-00 00:00:00.000000";
    put_digits(&mut text[0..4], year);
    put_digits(&mut text[5..7], month);
    put_digits(&mut text[8..10], day);
    let len = match clock {
        None => 10,
        Some((seconds, micros)) => {
            put_digits(&mut text[11..13], seconds / 3600);
            put_digits(&mut text[14..16], seconds / 60 % 60);
            put_digits(&mut text[17..19], seconds % 60);
            put_digits(&mut text[20..26], micros);
            26
        }
    };
    debug_assert!(text.is_ascii());
    // SAFETY: ASCII only (the template's punctuation and ``put_digits``' digits), so UTF-8;
    // checking it again cost 90 instructions a value (callgrind), a third of the conversion.
    out.push_str(unsafe { std::str::from_utf8_unchecked(&text[..len]) });
}

/// ``n`` in decimal, zero-padded to ``width`` digits: ``format!("{n:0width$}")`` without the
/// formatter, which took a tenth of a with-schema message's instructions (callgrind).
fn push_padded(out: &mut String, n: u64, width: usize) {
    let mut buf = itoa::Buffer::new();
    let digits = buf.format(n);
    for _ in digits.len()..width {
        out.push('0');
    }
    out.push_str(digits);
}

/// ``HH:MM:SS.ffffff`` (hours zero-padded to two digits, any more as they are).
fn push_clock(out: &mut String, seconds: u64, fraction: u64) {
    push_padded(out, seconds / 3600, 2);
    out.push(':');
    push_padded(out, seconds / 60 % 60, 2);
    out.push(':');
    push_padded(out, seconds % 60, 2);
    out.push('.');
    push_padded(out, fraction, 6);
}

/// ``YYYY-MM-DD HH:MM:SS.ffffff`` of microseconds since 1970-01-01 (years 1 to 9999).
fn push_datetime(out: &mut String, micros: i64) -> Result<(), ()> {
    let days = micros.div_euclid(86_400_000_000);
    let day_micros = micros.rem_euclid(86_400_000_000); // not negative, below a day's
    let (year, month, day) = civil(days).ok_or(())?;
    let seconds = u32::try_from(day_micros / 1_000_000).map_err(drop)?;
    let fraction = u32::try_from(day_micros % 1_000_000).map_err(drop)?;
    push_stamp(out, year, month, day, Some((seconds, fraction)));
    Ok(())
}

/// ``[-]HH:MM:SS.ffffff`` of a signed count of microseconds (at most 999 hours).
fn push_time(out: &mut String, micros: i64) -> Result<(), ()> {
    let abs = micros.unsigned_abs();
    let (seconds, fraction) = (abs / 1_000_000, abs % 1_000_000);
    if seconds / 3600 > 999 {
        return Err(());
    }
    if micros < 0 {
        out.push('-');
    }
    push_clock(out, seconds, fraction);
    Ok(())
}

/// ``YYYY-MM-DDTHH:MM:SS[.f{1,6}]`` then ``Z`` or ``±HH:MM`` (what ``fromisoformat`` reads
/// alike; any other form is Python's) as the wall clock ``YYYY-MM-DD HH:MM:SS.ffffff`` of the
/// instant in ``zone`` (``None``: UTC, years 1 to 9999; a zone: years 1900 to 2037, where
/// the zone databases agree); ``unfolded``: a wall clock the zone repeats is an error.
fn push_zoned(out: &mut String, text: &str, zone: Option<&chrono_tz::Tz>, unfolded: bool) -> Result<(), ()> {
    use chrono::{NaiveDate, TimeZone};
    let b = text.as_bytes();
    let digits = |r: std::ops::Range<usize>| -> Result<u32, ()> {
        let part = b.get(r).ok_or(())?;
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return Err(());
        }
        Ok(part.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    let punctuated = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')].iter().all(|&(i, c)| b.get(i) == Some(&c));
    if !punctuated {
        return Err(());
    }
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    let mut at = 19;
    let mut micros = 0;
    if b.get(at) == Some(&b'.') {
        let n = b[at + 1..].iter().take_while(|d| d.is_ascii_digit()).count();
        if !(1..=6).contains(&n) {
            return Err(());
        }
        micros = digits(at + 1..at + 1 + n)? * 10u32.pow(6 - n as u32);
        at += 1 + n;
    }
    let offset_seconds: i64 = match &b[at..] {
        b"Z" => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (h, m) = (digits(at + 1..at + 3)?, digits(at + 4..at + 6)?);
            if h > 23 || m > 59 {
                return Err(());
            }
            let seconds = i64::from(h * 3600 + m * 60);
            if *sign == b'-' { -seconds } else { seconds }
        }
        _ => return Err(()),
    };
    let local = NaiveDate::from_ymd_opt(i32::try_from(year).map_err(|_| ())?, month, day)
        .and_then(|d| d.and_hms_micro_opt(hour, minute, second, micros))
        .ok_or(())?;
    if offset_seconds == 0 && zone.is_none() {
        // UTC read as UTC (Debezium's own form, ``…Z``): the fields as written, checked above.
        if !(1..=9999).contains(&year) {
            return Err(());
        }
        push_stamp(out, year, month, day, Some((hour * 3600 + minute * 60 + second, micros)));
        return Ok(());
    }
    let utc = local.checked_sub_signed(chrono::TimeDelta::seconds(offset_seconds)).ok_or(())?;
    let wall = match zone {
        None => utc,
        Some(tz) => {
            use chrono::Datelike;
            if !(1900..=2037).contains(&utc.year()) {
                return Err(());
            }
            let wall = tz.from_utc_datetime(&utc).naive_local();
            if unfolded && matches!(tz.from_local_datetime(&wall), chrono::LocalResult::Ambiguous(..)) {
                return Err(());
            }
            wall
        }
    };
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).ok_or(())?.and_hms_opt(0, 0, 0).ok_or(())?;
    let us = (wall - epoch).num_microseconds().ok_or(())?;
    push_datetime(out, us)
}

/// The decimal text of a big-endian two's complement integer at ``scale``: what
/// ``Decimal(n).scaleb(-scale)`` is (``0.05``, ``-12.30``, ``0.00``).
fn push_decimal(out: &mut String, bytes: &[u8], scale: usize) {
    let negative = bytes.first().is_some_and(|b| b & 0x80 != 0);
    if bytes.len() <= 16 {
        // Sign-extended into 128 bits: no copy of the bytes, the digits on the stack.
        let n = bytes.iter().fold(if negative { u128::MAX } else { 0 }, |n, &b| n << 8 | u128::from(b));
        let mut buf = itoa::Buffer::new();
        return push_point(out, negative, buf.format((n as i128).unsigned_abs()), scale);
    }
    let mut magnitude: Vec<u8> = bytes.to_vec();
    if negative {
        // -(two's complement) = !x + 1
        for b in magnitude.iter_mut() {
            *b = !*b;
        }
        for b in magnitude.iter_mut().rev() {
            let (sum, carry) = b.overflowing_add(1);
            *b = sum;
            if !carry {
                break;
            }
        }
    }
    push_point(out, negative, &decimal_digits(magnitude), scale);
}

/// ``digits`` (a magnitude) as a decimal at ``scale``: zeros before it up to one integer digit.
fn push_point(out: &mut String, negative: bool, digits: &str, scale: usize) {
    if negative {
        out.push('-');
    }
    if digits.len() <= scale {
        // Below one: ``0.``, the fraction's leading zeros, the digits.
        out.push_str("0.");
        for _ in digits.len()..scale {
            out.push('0');
        }
        out.push_str(digits);
        return;
    }
    let point = digits.len() - scale;
    out.push_str(&digits[..point]);
    if scale > 0 {
        out.push('.');
        out.push_str(&digits[point..]);
    }
}

/// An unsigned big-endian integer's decimal digits (``0`` for none): up to 16 bytes (38
/// digits, most columns' decimals) as one ``u128``, longer ones by [`long_decimal_digits`].
fn decimal_digits(magnitude: Vec<u8>) -> String {
    if magnitude.len() > 16 {
        return long_decimal_digits(magnitude);
    }
    let n = magnitude.iter().fold(0u128, |n, &b| n << 8 | u128::from(b));
    itoa::Buffer::new().format(n).to_owned()
}

/// [`decimal_digits`] of any length, base 10^9 by long division.
fn long_decimal_digits(mut magnitude: Vec<u8>) -> String {
    let mut chunks: Vec<u32> = Vec::new(); // base 10^9, least significant first
    loop {
        while magnitude.first() == Some(&0) {
            magnitude.remove(0);
        }
        if magnitude.is_empty() {
            break;
        }
        let mut rem: u64 = 0;
        for b in magnitude.iter_mut() {
            let cur = (rem << 8) | u64::from(*b);
            *b = (cur / 1_000_000_000) as u8;
            rem = cur % 1_000_000_000;
        }
        chunks.push(rem as u32);
    }
    let Some((last, rest)) = chunks.split_last() else { return "0".to_owned() };
    let mut out = last.to_string();
    for chunk in rest.iter().rev() {
        out.push_str(&format!("{chunk:09}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pushed text of ``push`` as a value of its own.
    fn pushed<E>(push: impl FnOnce(&mut String) -> Result<(), E>) -> Result<String, E> {
        let mut out = String::new();
        push(&mut out).map(|()| out)
    }

    fn decimal_text(bytes: &[u8], scale: usize) -> String {
        pushed::<()>(|out| Ok(push_decimal(out, bytes, scale))).unwrap()
    }

    fn datetime_text(micros: i64) -> Result<String, ()> {
        pushed(|out| push_datetime(out, micros))
    }

    fn time_text(micros: i64) -> Result<String, ()> {
        pushed(|out| push_time(out, micros))
    }

    fn days_text(days: i64) -> Option<String> {
        pushed(|out| push_days(out, days)).ok()
    }

    fn zoned_text(text: &str, zone: Option<&chrono_tz::Tz>, unfolded: bool) -> Result<String, ()> {
        pushed(|out| push_zoned(out, text, zone, unfolded))
    }

    fn variable_scale_text(raw: &str) -> Result<String, ()> {
        pushed(|out| push_variable_scale(out, raw))
    }

    #[test]
    fn decimals() {
        assert_eq!(decimal_text(&[0x30, 0x39], 2), "123.45");
        assert_eq!(decimal_text(&[0xff], 2), "-0.01");
        assert_eq!(decimal_text(&[], 2), "0.00");
        assert_eq!(decimal_text(&[0x00, 0x80], 0), "128");
        assert_eq!(decimal_text(&[0x80], 0), "-128");
        assert_eq!(decimal_text(&[0x3b, 0x9a, 0xca, 0x00], 0), "1000000000");
        // The u128 path and the long division agree up to 16 bytes.
        for len in 0..=16usize {
            for fill in [0x00u8, 0x01, 0x7f, 0x80, 0xff] {
                let bytes: Vec<u8> = (0..len).map(|i| fill ^ (i as u8).wrapping_mul(37)).collect();
                assert_eq!(decimal_digits(bytes.clone()), long_decimal_digits(bytes));
            }
        }
        assert_eq!(decimal_digits(vec![0xff; 16]), u128::MAX.to_string());
        // Summed in 128 bits (up to 16 bytes) or divided out (longer): the text is the
        // two's complement integer's, scaled (BigInt quotient and remainder, no shared code).
        let scaled = |bytes: &[u8], scale: u32| {
            let n = num_bigint::BigInt::from_signed_bytes_be(bytes);
            let unit = num_bigint::BigInt::from(10u32).pow(scale);
            let (int, frac) = (n.magnitude() / unit.magnitude(), n.magnitude() % unit.magnitude());
            let sign = if n.sign() == num_bigint::Sign::Minus { "-" } else { "" };
            match scale {
                0 => format!("{sign}{int}"),
                _ => format!("{sign}{int}.{frac:0>width$}", width = scale as usize),
            }
        };
        for len in 1..=18usize {
            for fill in [0x00u8, 0x01, 0x7f, 0x80, 0xfe, 0xff] {
                let bytes: Vec<u8> = (0..len).map(|i| if i == 0 { fill } else { fill ^ (i as u8).wrapping_mul(91) }).collect();
                for scale in [0u32, 2, 30, 40] {
                    assert_eq!(decimal_text(&bytes, scale as usize), scaled(&bytes, scale), "{bytes:?} {scale}");
                }
            }
        }
    }

    #[test]
    fn temporals() {
        assert_eq!(datetime_text(-1).unwrap(), "1969-12-31 23:59:59.999999");
        assert_eq!(time_text(-1).unwrap(), "-00:00:00.000001");
        assert_eq!(days_text(0).unwrap(), "1970-01-01");
        assert_eq!(days_text(-719_162).unwrap(), "0001-01-01");
        assert_eq!(time_text(838 * 3_600_000_000 + 59 * 60_000_000 + 7).unwrap(), "838:59:00.000007");
        assert_eq!(datetime_text(253_402_300_799_999_999).unwrap(), "9999-12-31 23:59:59.999999");
        assert_eq!(zoned_text("2023-11-14T22:13:20.5+01:30", None, false).unwrap(), "2023-11-14 20:43:20.500000");
        let berlin: chrono_tz::Tz = "Europe/Berlin".parse().unwrap();
        assert_eq!(zoned_text("2023-07-01T00:00:00Z", Some(&berlin), true).unwrap(), "2023-07-01 02:00:00.000000");
        assert!(zoned_text("2023-07-01T00:00:00+24:00", None, false).is_err());
        // UTC as written and the instant's epoch count agree, at the range's ends too.
        let instants = [
            ("2023-11-14T22:13:20.5Z", 1_700_000_000_500_000),
            ("0001-01-01T00:00:00Z", -62_135_596_800_000_000),
            ("9999-12-31T23:59:59.999999Z", 253_402_300_799_999_999),
            ("2024-02-29T12:00:00.000001Z", 1_709_208_000_000_001),
        ];
        for (text, micros) in instants {
            assert_eq!(zoned_text(text, None, false), datetime_text(micros));
        }
        assert!(zoned_text("0000-12-31T00:00:00Z", None, false).is_err());
        assert!(zoned_text("2023-02-29T00:00:00Z", None, false).is_err());
        assert!(zoned_text("2023-07-01 00:00:00Z", None, false).is_err());
        // 02:30 in Berlin twice on 2023-10-29 (00:30Z and 01:30Z): refused where the fold matters.
        assert!(zoned_text("2023-10-29T00:30:00Z", Some(&berlin), true).is_err());
        assert_eq!(zoned_text("2023-10-29T00:30:00Z", Some(&berlin), false).unwrap(), "2023-10-29 02:30:00.000000");
    }

    #[test]
    fn bits_and_sets() {
        assert_eq!(bits_text(&[0x01, 0x02]).unwrap(), "513");
        assert_eq!(bits_text(&[]).unwrap(), "0");
        let labels: Vec<String> = ["a", "b", "a"].iter().map(|s| s.to_string()).collect();
        assert_eq!(set_bits_text(&labels, "a").unwrap(), "5");
        assert_eq!(set_bits_text(&labels, "").unwrap(), "0");
        assert!(set_bits_text(&labels, "a,,b").is_err());
        assert_eq!(variable_scale_text(r#"{"scale":2,"value":"MDk="}"#).unwrap(), "123.45");
        assert!(variable_scale_text(r#"{"scale":2.0,"value":"MDk="}"#).is_err());
    }
}
