//! JSON output exactly as `orjson.dumps` writes it (the Python path's serialiser).

/// `"text"` with orjson's escapes: `"` `\` and control characters
/// (`\b \t \n \f \r`, else `\u00xx`); everything else, non-ASCII included, as is.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b >= 0x20 && b != b'"' && b != b'\\' {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(b >> 4) as usize]);
                out.push(HEX[(b & 15) as usize]);
            }
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

pub fn write_int<I: itoa::Integer>(out: &mut Vec<u8>, n: I) {
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(buf.format(n).as_bytes());
}

/// A finite double as orjson 3.13 writes it: the shortest round-tripping
/// digits, plain for decimal exponents -5..=15 (integers with `.0`), else
/// `d[.ddd]e[+-]n`.
pub fn write_f64(out: &mut Vec<u8>, v: f64) {
    let mut buf = ryu::Buffer::new();
    let text = buf.format_finite(v);
    let (neg, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exp_part) = match body.find('e') {
        Some(i) => (&body[..i], body[i + 1..].parse::<i32>().unwrap_or(0)),
        None => (body, 0),
    };
    // Digits without the point, and the exponent of the first digit.
    let (int_part, frac_part) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, ""),
    };
    let mut digits: Vec<u8> = int_part.bytes().chain(frac_part.bytes()).collect();
    let mut exp = exp_part + int_part.len() as i32 - 1;
    while digits.len() > 1 && digits[0] == b'0' {
        digits.remove(0);
        exp -= 1;
    }
    while digits.len() > 1 && *digits.last().unwrap() == b'0' {
        digits.pop();
    }
    if neg {
        out.push(b'-');
    }
    if digits == b"0" {
        out.extend_from_slice(b"0.0");
        return;
    }
    if (-5..=15).contains(&exp) {
        if exp < 0 {
            out.extend_from_slice(b"0.");
            for _ in 0..(-exp - 1) {
                out.push(b'0');
            }
            out.extend_from_slice(&digits);
        } else {
            let whole = exp as usize + 1;
            if digits.len() <= whole {
                out.extend_from_slice(&digits);
                for _ in digits.len()..whole {
                    out.push(b'0');
                }
                out.extend_from_slice(b".0");
            } else {
                out.extend_from_slice(&digits[..whole]);
                out.push(b'.');
                out.extend_from_slice(&digits[whole..]);
            }
        }
        return;
    }
    out.push(digits[0]);
    if digits.len() > 1 {
        out.push(b'.');
        out.extend_from_slice(&digits[1..]);
    }
    out.push(b'e');
    if exp > 0 {
        out.push(b'+');
    }
    write_int(out, exp);
}
