//! The canonical byte forms: RFC 8785 (JCS) and Python `json.dumps(sort_keys=True)`.

use std::fmt;

use crate::scan::{STRING_STOP, word_has_stop};
use crate::value::{Integer, Map, Number, Value};

/// Largest integer JCS accepts (2^53 − 1): beyond it a double cannot hold every integer.
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// Maximum nesting the writers accept (the parser's default limit is lower).
pub const MAX_WRITE_DEPTH: usize = 1024;

/// Why a value cannot be written in a canonical form.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteError {
    /// JCS: an integer outside ±(2^53 − 1); send such values as strings.
    IntegerOutOfRange(String),
    /// Nesting deeper than [`MAX_WRITE_DEPTH`].
    TooDeep,
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::IntegerOutOfRange(n) => write!(
                f,
                "integer {n} is outside the JCS safe range ±(2^53-1); send it as a string"
            ),
            WriteError::TooDeep => write!(f, "value nests deeper than {MAX_WRITE_DEPTH} levels"),
        }
    }
}

impl std::error::Error for WriteError {}

/// The RFC 8785 bytes of `value`.
///
/// # Errors
/// Integers beyond ±(2^53 − 1) and values nested deeper than [`MAX_WRITE_DEPTH`].
pub fn to_jcs(value: &Value) -> Result<Vec<u8>, WriteError> {
    let mut out = Vec::with_capacity(256);
    write_jcs(value, &mut out)?;
    Ok(out)
}

/// Appends the RFC 8785 bytes of `value` to `out`.
///
/// # Errors
/// As [`to_jcs`]; `out` may hold a partial result on error.
pub fn write_jcs(value: &Value, out: &mut Vec<u8>) -> Result<(), WriteError> {
    jcs_value(value, out, 0)
}

/// Appends the RFC 8785 bytes of the string `s` (quoted and escaped) to `out`: for callers
/// that lay out a small fixed object themselves, a signing header say.
pub fn write_jcs_str(s: &str, out: &mut Vec<u8>) {
    jcs_string(s, out);
}

/// Writes the JCS bytes of `value` to `out`, leaving out the named keys of a top-level object
/// (the document-hash rule) without copying the document.
pub(crate) fn jcs_excluding(
    value: &Value,
    excluded: &[&str],
    out: &mut Vec<u8>,
) -> Result<(), WriteError> {
    match value {
        Value::Object(map) if !excluded.is_empty() => jcs_object(map, excluded, out, 0),
        _ => jcs_value(value, out, 0),
    }
}

fn jcs_value(value: &Value, out: &mut Vec<u8>, depth: usize) -> Result<(), WriteError> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => jcs_number(number, out)?,
        Value::String(s) => jcs_string(s, out),
        Value::Array(items) => {
            let depth = enter(depth)?;
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                jcs_value(item, out, depth)?;
            }
            out.push(b']');
        }
        Value::Object(map) => jcs_object(map, &[], out, depth)?,
    }
    Ok(())
}

fn jcs_object(
    map: &Map,
    excluded: &[&str],
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), WriteError> {
    let depth = enter(depth)?;
    out.push(b'{');
    // The map's order (UTF-8 bytes) is UTF-16 order unless a key holds a character in
    // U+E000..=U+FFFF or outside the BMP. The order is decided before anything is written: a
    // scan of the keys alone (linear in their bytes), then one write of each member. Writing in
    // map order and starting over when such a key showed up wrote every level below again, so
    // each level of nesting doubled the work (issue 22: 2^512 at the parser's depth limit).
    let high = map.len() > 1 && map.keys().any(|k| has_high_lead(k.as_bytes()));
    let mut first = true;
    if high {
        let mut entries: Vec<(&String, &Value)> = map.iter().collect();
        entries.sort_by(|a, b| utf16_order(a.0, b.0));
        for (k, v) in entries {
            jcs_member(k, v, excluded, &mut first, out, depth)?;
        }
    } else {
        for (k, v) in map {
            jcs_member(k, v, excluded, &mut first, out, depth)?;
        }
    }
    out.push(b'}');
    Ok(())
}

/// Writes `"k":v` (after a comma unless it is the first), unless `k` is excluded.
fn jcs_member(
    k: &str,
    v: &Value,
    excluded: &[&str],
    first: &mut bool,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), WriteError> {
    if excluded.contains(&k) {
        return Ok(());
    }
    if !std::mem::take(first) {
        out.push(b',');
    }
    jcs_string(k, out);
    out.push(b':');
    jcs_value(v, out, depth)
}

/// Writes a number as JCS does (integers beyond ±(2^53 − 1) are refused).
pub(crate) fn jcs_number(number: &Number, out: &mut Vec<u8>) -> Result<(), WriteError> {
    match number {
        Number::Int(Integer::Small(n)) => {
            if n.unsigned_abs() > MAX_SAFE_INTEGER.unsigned_abs() {
                return Err(WriteError::IntegerOutOfRange(n.to_string()));
            }
            push_i64(*n, out);
        }
        Number::Int(Integer::Big(text)) => {
            return Err(WriteError::IntegerOutOfRange(text.as_str().to_owned()));
        }
        Number::Float(x) => push_es_number(x.get(), out),
    }
    Ok(())
}

fn enter(depth: usize) -> Result<usize, WriteError> {
    if depth >= MAX_WRITE_DEPTH {
        return Err(WriteError::TooDeep);
    }
    Ok(depth + 1)
}

/// Compares two strings by their UTF-16 code units without transcoding them.
///
/// UTF-8 byte order agrees with UTF-16 order except at one place: a character outside the BMP
/// (lead byte 0xF0..=0xF4, a surrogate pair in UTF-16) sorts before U+E000..=U+FFFF (lead byte
/// 0xEE or 0xEF). Equal prefixes mean the first differing byte sits at the same position of the
/// same character in both strings, so only that byte pair needs the correction.
pub(crate) fn utf16_order(a: &str, b: &str) -> std::cmp::Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    match a.iter().zip(b).find(|(x, y)| x != y) {
        None => a.len().cmp(&b.len()),
        Some((&x, &y)) => {
            let bmp_high = |c: u8| c == 0xEE || c == 0xEF;
            if x >= 0xF0 && bmp_high(y) {
                std::cmp::Ordering::Less
            } else if y >= 0xF0 && bmp_high(x) {
                std::cmp::Ordering::Greater
            } else {
                x.cmp(&y)
            }
        }
    }
}

/// True when `bytes` hold a lead byte 0xEE or above: a character in U+E000..=U+FFFF or outside
/// the BMP, where UTF-8 byte order and UTF-16 code-unit order part. Eight bytes at a time: for
/// a byte with its high bit set, its low seven bits plus 0x12 reach 0x80 exactly when the byte
/// is 0xEE or more, and never carry into the next byte.
fn has_high_lead(bytes: &[u8]) -> bool {
    const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let high = |word: u64| ((word & LOW7) + 0x1212_1212_1212_1212) & word & HIGHS != 0;
    let mut chunks = bytes.chunks_exact(8);
    chunks.any(|chunk| high(word_of(chunk))) || chunks.remainder().iter().any(|&b| b >= 0xEE)
}

/// Up to eight bytes as a little-endian word, padded with spaces (neither a stop byte nor a
/// high lead byte).
fn word_of(bytes: &[u8]) -> u64 {
    if let Ok(word) = <[u8; 8]>::try_from(bytes) {
        return u64::from_le_bytes(word);
    }
    let mut word = [b' '; 8];
    for (slot, &b) in word.iter_mut().zip(bytes) {
        *slot = b;
    }
    u64::from_le_bytes(word)
}

pub(crate) fn jcs_string(s: &str, out: &mut Vec<u8>) {
    let bytes = s.as_bytes();
    // Most strings need no escaping: they are checked and copied in one go, eight bytes at a
    // time (a fixed-size copy, no call), the last few by table. At the first byte that needs
    // an escape the string is written again by the escaping loop, a function of its own.
    let start = out.len();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let word = word_of(chunk);
        if word_has_stop(word) {
            out.truncate(start);
            return jcs_escaped_string(bytes, out);
        }
        out.extend_from_slice(&word.to_le_bytes());
    }
    for &b in chunks.remainder() {
        if STRING_STOP[usize::from(b)] {
            out.truncate(start);
            return jcs_escaped_string(bytes, out);
        }
        out.push(b);
    }
    out.push(b'"');
}

/// [`jcs_string`] for text with a `"`, `\` or control character.
#[cold]
#[inline(never)]
fn jcs_escaped_string(bytes: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    let mut run_start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x0c => b"\\f",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x00..=0x1f => &[],
            _ => continue,
        };
        out.extend_from_slice(&bytes[run_start..i]);
        run_start = i + 1;
        if escape.is_empty() {
            push_u_escape(u16::from(b), out);
        } else {
            out.extend_from_slice(escape);
        }
    }
    out.extend_from_slice(&bytes[run_start..]);
    out.push(b'"');
}

fn push_u_escape(unit: u16, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut escape = *b"\\u0000";
    for (i, shift) in [12, 8, 4, 0].into_iter().enumerate() {
        escape[2 + i] = HEX[usize::from((unit >> shift) & 0xf)];
    }
    out.extend_from_slice(&escape);
}

fn push_i64(n: i64, out: &mut Vec<u8>) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut rest = n.unsigned_abs();
    loop {
        i -= 1;
        // `rest % 10` is below 10, so the cast cannot truncate.
        buf[i] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&buf[i..]);
}

/// ECMAScript `Number.prototype.toString` of a finite double (`-0` prints as `0`).
fn push_es_number(x: f64, out: &mut Vec<u8>) {
    if x == 0.0 {
        out.push(b'0');
        return;
    }
    let mut buffer = ryu_js::Buffer::new();
    out.extend_from_slice(buffer.format_finite(x).as_bytes());
}

/// The ECMAScript string form of a finite double, as JCS writes it.
pub fn es_number_string(x: f64) -> String {
    let mut out = Vec::new();
    push_es_number(x, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// Shortest round-trip decimal digits of a non-zero finite `x`: `(negative, digits, decpt)` with
/// `|x| = 0.digits × 10^decpt` and no leading or trailing zeros in `digits`.
fn shortest_digits(x: f64) -> (bool, Vec<u8>, i32) {
    let mut buffer = ryu_js::Buffer::new();
    let text = buffer.format_finite(x.abs());
    let (mantissa, exponent) = match text.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (text, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all: Vec<u8> = int_part.bytes().chain(frac_part.bytes()).collect();
    let leading = all.iter().take_while(|&&d| d == b'0').count();
    let mut digits = all[leading..].to_vec();
    while digits.last() == Some(&b'0') {
        digits.pop();
    }
    // Lengths here are at most a few hundred digits, far inside i32.
    let decpt = int_part.len() as i32 - leading as i32 + exponent;
    (x.is_sign_negative(), digits, decpt)
}

/// Python's `repr(float)` of a finite double: `0.05`, `1e-07`, `16.0`, `1e+16`, `-0.0`.
pub fn python_float_repr(x: f64) -> String {
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0".to_owned() } else { "0.0".to_owned() };
    }
    let (negative, digits, decpt) = shortest_digits(x);
    let digits = String::from_utf8(digits).unwrap_or_default();
    let mut out = String::with_capacity(digits.len() + 8);
    if negative {
        out.push('-');
    }
    let n_digits = digits.len() as i32;
    if decpt <= -4 || decpt > 16 {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let exp = decpt - 1;
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exp.unsigned_abs()));
    } else if decpt <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', decpt.unsigned_abs() as usize));
        out.push_str(&digits);
    } else if decpt >= n_digits {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (decpt - n_digits) as usize));
        out.push_str(".0");
    } else {
        let split = decpt as usize;
        out.push_str(&digits[..split]);
        out.push('.');
        out.push_str(&digits[split..]);
    }
    out
}

/// Layout options for the Python-compatible writer.
#[derive(Clone, Copy, Debug, Default)]
pub struct PyFormat {
    /// `indent=N`: pretty-print with N spaces and `": "` after keys; `None` is compact
    /// (`separators=(',', ':')`).
    pub indent: Option<usize>,
    /// `ensure_ascii=False` when true: only `"`, `\` and control characters are escaped.
    pub keep_unicode: bool,
}

impl PyFormat {
    /// `json.dumps(v, sort_keys=True, separators=(',', ':'))`: the DWP hashing form.
    pub const COMPACT: PyFormat = PyFormat { indent: None, keep_unicode: false };
    /// `json.dumps(v, sort_keys=True, indent=2)`: DWP files such as `state.json`.
    pub const PRETTY: PyFormat = PyFormat { indent: Some(2), keep_unicode: false };
}

/// The bytes of Python `json.dumps(value, sort_keys=True, ...)` in the given layout.
///
/// # Errors
/// Values nested deeper than [`MAX_WRITE_DEPTH`].
pub fn to_python(value: &Value, format: PyFormat) -> Result<Vec<u8>, WriteError> {
    let mut out = Vec::with_capacity(256);
    py_value(value, format, &mut out, 0)?;
    Ok(out)
}

/// Compact sorted Python form (the DWP `contract_id` and journal-line form).
///
/// # Errors
/// Values nested deeper than [`MAX_WRITE_DEPTH`].
pub fn to_python_compact(value: &Value) -> Result<Vec<u8>, WriteError> {
    to_python(value, PyFormat::COMPACT)
}

/// `json.dumps(value, sort_keys=True, indent=2) + "\n"`: the DWP file form.
///
/// # Errors
/// Values nested deeper than [`MAX_WRITE_DEPTH`].
pub fn to_python_pretty(value: &Value) -> Result<Vec<u8>, WriteError> {
    let mut out = to_python(value, PyFormat::PRETTY)?;
    out.push(b'\n');
    Ok(out)
}

fn py_newline(format: PyFormat, depth: usize, out: &mut Vec<u8>) {
    if let Some(width) = format.indent {
        out.push(b'\n');
        out.extend(std::iter::repeat_n(b' ', width * depth));
    }
}

fn py_value(
    value: &Value,
    format: PyFormat,
    out: &mut Vec<u8>,
    depth: usize,
) -> Result<(), WriteError> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(Number::Int(Integer::Small(n))) => push_i64(*n, out),
        Value::Number(Number::Int(Integer::Big(text))) => {
            out.extend_from_slice(text.as_str().as_bytes());
        }
        Value::Number(Number::Float(x)) => {
            out.extend_from_slice(python_float_repr(x.get()).as_bytes());
        }
        Value::String(s) => py_string(s, format.keep_unicode, out),
        Value::Array(items) => {
            if items.is_empty() {
                out.extend_from_slice(b"[]");
                return Ok(());
            }
            let inner = enter(depth)?;
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                py_newline(format, inner, out);
                py_value(item, format, out, inner)?;
            }
            py_newline(format, depth, out);
            out.push(b']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.extend_from_slice(b"{}");
                return Ok(());
            }
            let inner = enter(depth)?;
            out.push(b'{');
            // Python sorts str keys by code point, which is UTF-8 byte order: the map's order.
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                py_newline(format, inner, out);
                py_string(k, format.keep_unicode, out);
                out.extend_from_slice(if format.indent.is_some() { b": " } else { b":" });
                py_value(v, format, out, inner)?;
            }
            py_newline(format, depth, out);
            out.push(b'}');
        }
    }
    Ok(())
}

fn py_string(s: &str, keep_unicode: bool, out: &mut Vec<u8>) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut run_start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let plain = if keep_unicode {
            b >= 0x20 && b != b'"' && b != b'\\'
        } else {
            (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\'
        };
        if plain {
            continue;
        }
        // Continuation bytes of a multi-byte character were handled with its lead byte.
        if !keep_unicode && (0x80..0xc0).contains(&b) {
            out.extend_from_slice(&bytes[run_start..i]);
            run_start = i + 1;
            continue;
        }
        out.extend_from_slice(&bytes[run_start..i]);
        run_start = i + 1;
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0x00..=0x7f => push_u_escape(u16::from(b), out),
            _ => {
                // A lead byte: escape the whole character as UTF-16 code units.
                if let Some(c) = s[i..].chars().next() {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        push_u_escape(*unit, out);
                    }
                }
            }
        }
    }
    out.extend_from_slice(&bytes[run_start..]);
    out.push(b'"');
}
