//! JSON output exactly as `orjson.dumps` writes it (the Python path's serialiser).

/// Bytes `write_str` escapes: `"`, `\` and control characters.
const ESCAPE: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// `"text"` with orjson's escapes: `"` `\` and control characters
/// (`\b \t \n \f \r`, else `\u00xx`); everything else, non-ASCII included, as is.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    write_escaped(out, s);
    out.push(b'"');
}

/// The inside of [`write_str`]'s string: `s` escaped, without quotes (so that parts of one
/// string can be written one after the other).
pub fn write_escaped(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    // Most texts need no escape: one copy.
    let Some(first) = bytes.iter().position(|&b| ESCAPE[b as usize]) else {
        out.extend_from_slice(bytes);
        return;
    };
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate().skip(first) {
        if !ESCAPE[b as usize] {
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
}

/// ``n``'s last ``field.len()`` decimal digits into ``field``, zero-padded (the fixed-width
/// fields of dates and clocks, written into a template rather than formatted one by one).
pub fn put_digits(field: &mut [u8], mut n: u32) {
    for d in field.iter_mut().rev() {
        *d = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

pub fn write_int<I: itoa::Integer>(out: &mut Vec<u8>, n: I) {
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(buf.format(n).as_bytes());
}

/// A finite double as orjson 3.13 writes it: the shortest round-tripping
/// digits, plain for decimal exponents -5..=15 (integers with `.0`), else
/// `d[.ddd]e[+-]n`. ``ryu`` writes the same digits in the same plain range;
/// its exponents only lack the `+`.
pub fn write_f64(out: &mut Vec<u8>, v: f64) {
    let mut buf = ryu::Buffer::new();
    let text = buf.format_finite(v).as_bytes();
    match text.iter().position(|&b| b == b'e') {
        Some(e) if text.get(e + 1) != Some(&b'-') => {
            out.extend_from_slice(&text[..=e]);
            out.push(b'+');
            out.extend_from_slice(&text[e + 1..]);
        }
        _ => out.extend_from_slice(text),
    }
}
