//! Shared pieces of the canonical-json fuzz targets: a structured `Value` generator, the
//! round-trip checks, and two small independent oracles for the writers.
//!
//! The oracles are written from the specifications, not from the crate's code:
//! - `ref_jcs`: RFC 8785 (keys by UTF-16 code units, minimal escapes, ECMAScript numbers laid out
//!   from Rust's shortest round-trip digits `{:e}`);
//! - `ref_python_compact`: `json.dumps(v, sort_keys=True, separators=(',', ':'))` with
//!   `ensure_ascii=True` (keys by code point, `\uXXXX` for everything outside U+0020..U+007E,
//!   floats as Python `repr`).
//!
//! A check failure panics: that is what libFuzzer reports as a crash.

use canonical_json::{
    BigDecimalText, Finite, Integer, MAX_SAFE_INTEGER, Map, Number, PyFormat, Value, WriteError,
    parse, to_jcs, to_python, to_python_compact,
};
use libfuzzer_sys::arbitrary::{Result, Unstructured};

/// Maximum nesting of generated values.
const MAX_GEN_DEPTH: usize = 6;

const CHAR_PALETTE: &[char] = &[
    '\0', '\u{1}', '\u{8}', '\t', '\n', '\u{b}', '\u{c}', '\r', '\u{1f}', ' ', '"', '\\', '/', 'a',
    'z', '~', '\u{7f}', '\u{80}', 'é', '\u{2028}', '\u{2029}', '\u{d7ff}', '\u{e000}', 'ｱ',
    '\u{fffd}', '\u{ffff}', '\u{10000}', '😀', '\u{10ffff}',
];

const FLOAT_PALETTE: &[f64] = &[
    0.0, -0.0, 1.0, -1.0, 0.1, 0.5, 1.5, 16.0, 1e-7, 1e-6, 1e-5, 1e-4, 1e15, 1e16, 1e17, 1e20,
    1e21, 1e22, 9007199254740991.0, 9007199254740992.0, 9007199254740993.0, 123456789012345680.0,
    5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 0.1 + 0.2, 1.0 / 3.0, 4.35, 0.000001,
    333333333.33333329, 1e-323, 12.0e-7,
];

/// A string biased towards the characters that matter for escaping and ordering.
pub fn arbitrary_string(u: &mut Unstructured<'_>) -> Result<String> {
    let len = u.int_in_range(0..=8)?;
    let mut s = String::new();
    for _ in 0..len {
        let c = if u.ratio(3, 4)? { *u.choose(CHAR_PALETTE)? } else { u.arbitrary::<char>()? };
        s.push(c);
    }
    Ok(s)
}

fn arbitrary_number(u: &mut Unstructured<'_>) -> Result<Number> {
    Ok(match u.int_in_range(0..=6)? {
        0 => Number::Int(Integer::Small(u.arbitrary()?)),
        1 => Number::Int(Integer::Small(
            *u.choose(&[
                0,
                -1,
                MAX_SAFE_INTEGER,
                -MAX_SAFE_INTEGER,
                MAX_SAFE_INTEGER + 1,
                -MAX_SAFE_INTEGER - 1,
                i64::MAX,
                i64::MIN,
            ])? + i64::from(u.int_in_range(-2i8..=2)?) / 4,
        )),
        2 => {
            let magnitude: u128 = u.arbitrary::<u128>()? | (1 << 64);
            let text = if u.arbitrary()? { format!("-{magnitude}") } else { magnitude.to_string() };
            match BigDecimalText::new(&text) {
                Some(big) => Number::Int(Integer::Big(big)),
                None => Number::Int(Integer::Small(0)),
            }
        }
        3 => Number::Int(Integer::Small(i64::from(u.arbitrary::<i16>()?))),
        4 => Number::Float(Finite::new(*u.choose(FLOAT_PALETTE)?).unwrap_or(finite_zero())),
        5 => {
            let mantissa = f64::from(u.arbitrary::<i32>()?);
            let scale = 10f64.powi(i32::from(u.int_in_range(-30i8..=30)?));
            Number::Float(Finite::new(mantissa * scale).unwrap_or(finite_zero()))
        }
        _ => Number::Float(Finite::new(f64::from_bits(u.arbitrary()?)).unwrap_or(finite_zero())),
    })
}

fn finite_zero() -> Finite {
    Finite::new(0.0).unwrap_or_else(|| unreachable!())
}

/// An arbitrary value nested at most `MAX_GEN_DEPTH` deep.
pub fn arbitrary_value(u: &mut Unstructured<'_>) -> Result<Value> {
    value_at(u, 0)
}

fn value_at(u: &mut Unstructured<'_>, depth: usize) -> Result<Value> {
    let top = if depth >= MAX_GEN_DEPTH { 4 } else { 7 };
    Ok(match u.int_in_range(0..=top)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 | 3 => Value::Number(arbitrary_number(u)?),
        4 => Value::String(arbitrary_string(u)?),
        5 => {
            let len = u.int_in_range(0..=5)?;
            let mut items = Vec::with_capacity(len);
            for _ in 0..len {
                items.push(value_at(u, depth + 1)?);
            }
            Value::Array(items)
        }
        _ => {
            let len = u.int_in_range(0..=6)?;
            let mut map = Map::new();
            for _ in 0..len {
                let key = arbitrary_string(u)?;
                map.insert(key, value_at(u, depth + 1)?);
            }
            Value::Object(map)
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Oracles.

/// Shortest round-trip digits of a finite non-zero `|x|` and the decimal point position `n`
/// (`|x| = 0.d1d2… × 10^n`), from Rust's `{:e}` formatting.
///
/// When two shortest candidates are equally close to `x` (the exact binary value lies halfway),
/// ECMA-262 and Python both take the one with the even last digit; Rust's formatter does not
/// promise that, so ties are resolved here from the exact expansion (`{:.800e}`).
fn shortest_digits(x: f64) -> (String, i32) {
    let (d, n) = split_exp(&format!("{:e}", x.abs()));
    let (exact, exact_n) = split_exp(&format!("{:.800e}", x.abs()));
    let exact = exact.trim_end_matches('0');
    let k = d.len();
    if exact_n == n && exact.len() == k + 1 && exact.ends_with('5') {
        let lower = exact[..k].to_owned();
        if let Some(upper) = increment_digits(&lower) {
            let round_trips = |c: &str| format!("0.{c}e{n}").parse::<f64>().ok() == Some(x.abs());
            let even = |c: &str| c.as_bytes()[c.len() - 1] % 2 == 0;
            let pick = match (round_trips(&lower), round_trips(&upper)) {
                (true, true) => Some(if even(&lower) { lower } else { upper }),
                (true, false) => Some(lower),
                (false, true) => Some(upper),
                (false, false) => None,
            };
            if let Some(p) = pick {
                let trimmed = p.trim_end_matches('0');
                return (trimmed.to_owned(), n);
            }
        }
    }
    (d, n)
}

fn split_exp(text: &str) -> (String, i32) {
    let (mantissa, exp) = text.split_once('e').unwrap_or((text, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exp.parse::<i32>().unwrap_or(0) + 1)
}

/// `digits + 1` in the last place, or `None` when that carries into a new digit.
fn increment_digits(digits: &str) -> Option<String> {
    let mut bytes = digits.as_bytes().to_vec();
    for b in bytes.iter_mut().rev() {
        if *b == b'9' {
            *b = b'0';
        } else {
            *b += 1;
            return String::from_utf8(bytes).ok();
        }
    }
    None
}

/// ECMAScript `Number::toString` (ECMA-262 §6.1.6.1.20) of a finite double.
pub fn ref_es_number(x: f64) -> String {
    if x == 0.0 {
        return "0".to_owned();
    }
    let (d, n) = shortest_digits(x);
    let k = d.len() as i32;
    let mut out = String::new();
    if x < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&d);
        out.push_str(&"0".repeat((n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&d[..n as usize]);
        out.push('.');
        out.push_str(&d[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.push_str(&"0".repeat((-n) as usize));
        out.push_str(&d);
    } else {
        let e = n - 1;
        out.push_str(&d[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&d[1..]);
        }
        out.push('e');
        out.push(if e >= 0 { '+' } else { '-' });
        out.push_str(&e.abs().to_string());
    }
    out
}

/// Python `repr(float)` of a finite double.
pub fn ref_py_repr(x: f64) -> String {
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned();
    }
    let (d, n) = shortest_digits(x);
    let k = d.len() as i32;
    let mut out = String::new();
    if x < 0.0 {
        out.push('-');
    }
    if -4 < n && n <= 16 {
        if n <= 0 {
            out.push_str("0.");
            out.push_str(&"0".repeat((-n) as usize));
            out.push_str(&d);
        } else if n >= k {
            out.push_str(&d);
            out.push_str(&"0".repeat((n - k) as usize));
            out.push_str(".0");
        } else {
            out.push_str(&d[..n as usize]);
            out.push('.');
            out.push_str(&d[n as usize..]);
        }
    } else {
        let e = n - 1;
        out.push_str(&d[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&d[1..]);
        }
        out.push('e');
        out.push(if e >= 0 { '+' } else { '-' });
        out.push_str(&format!("{:02}", e.abs()));
    }
    out
}

fn ref_jcs_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// RFC 8785 text of `v`, or `None` when `v` holds an integer beyond ±(2^53 − 1).
pub fn ref_jcs(v: &Value) -> Option<String> {
    let mut out = String::new();
    ref_jcs_into(v, &mut out).then_some(out)
}

fn ref_jcs_into(v: &Value, out: &mut String) -> bool {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(Number::Int(Integer::Small(n))) => {
            if n.unsigned_abs() > MAX_SAFE_INTEGER.unsigned_abs() {
                return false;
            }
            out.push_str(&n.to_string());
        }
        Value::Number(Number::Int(Integer::Big(_))) => return false,
        Value::Number(Number::Float(x)) => out.push_str(&ref_es_number(x.get())),
        Value::String(s) => ref_jcs_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !ref_jcs_into(item, out) {
                    return false;
                }
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<(Vec<u16>, &String)> =
                map.keys().map(|k| (k.encode_utf16().collect(), k)).collect();
            keys.sort();
            out.push('{');
            for (i, (_, k)) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                ref_jcs_string(k, out);
                out.push(':');
                if !ref_jcs_into(&map[*k], out) {
                    return false;
                }
            }
            out.push('}');
        }
    }
    true
}

fn ref_py_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' '..='~' => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

/// `json.dumps(v, sort_keys=True, separators=(',', ':'))` (ensure_ascii on).
pub fn ref_python_compact(v: &Value) -> String {
    let mut out = String::new();
    ref_py_into(v, &mut out);
    out
}

fn ref_py_into(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(Number::Int(i)) => out.push_str(&i.to_string()),
        Value::Number(Number::Float(x)) => out.push_str(&ref_py_repr(x.get())),
        Value::String(s) => ref_py_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                ref_py_into(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // BTreeMap<String> iterates in UTF-8 byte order = code point order = Python's order.
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                ref_py_string(k, out);
                out.push(':');
                ref_py_into(item, out);
            }
            out.push('}');
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Checks.

/// True when `v` holds a float that JCS prints as an integer the parser then reads back as an
/// integer beyond ±(2^53 − 1) (e.g. `1e20` → `100000000000000000000`).
fn has_unsafe_integral_float(v: &Value) -> bool {
    match v {
        Value::Number(Number::Float(x)) => {
            let x = x.get().abs();
            x.fract() == 0.0 && x > MAX_SAFE_INTEGER as f64 && x < 1e21
        }
        Value::Array(items) => items.iter().any(has_unsafe_integral_float),
        Value::Object(map) => map.values().any(has_unsafe_integral_float),
        _ => false,
    }
}

/// The JCS writer: matches the oracle, re-parses to a numerically equal value, and is
/// idempotent (canonicalising its own output gives the same bytes).
pub fn check_jcs(v: &Value) {
    let oracle = ref_jcs(v);
    match to_jcs(v) {
        Ok(bytes) => {
            let text = std::str::from_utf8(&bytes).expect("JCS output is not UTF-8");
            assert_eq!(Some(text), oracle.as_deref(), "JCS differs from the RFC 8785 oracle");
            let reparsed = parse(&bytes).expect("JCS output does not re-parse");
            assert!(reparsed.loose_eq(v), "JCS output re-parses to a different value");
            match to_jcs(&reparsed) {
                Ok(again) => assert_eq!(again, bytes, "JCS is not idempotent"),
                Err(WriteError::IntegerOutOfRange(_)) => assert!(
                    has_unsafe_integral_float(v),
                    "JCS of its own output fails without an integral float beyond 2^53"
                ),
                Err(e) => panic!("JCS of its own output fails: {e}"),
            }
        }
        Err(WriteError::IntegerOutOfRange(_)) => {
            assert!(oracle.is_none(), "JCS refuses a value whose integers are all in range");
        }
        Err(e) => panic!("JCS fails on a value nested at most 512 deep: {e}"),
    }
}

/// The Python writers: compact output matches the oracle, and every format re-parses to an
/// equal value.
pub fn check_python(v: &Value) {
    let compact = to_python_compact(v).expect("Python compact writer fails");
    let text = std::str::from_utf8(&compact).expect("Python output is not UTF-8");
    assert_eq!(text, ref_python_compact(v), "Python compact differs from the json.dumps oracle");
    assert_eq!(&parse(&compact).expect("Python compact does not re-parse"), v);
    for format in [
        PyFormat::PRETTY,
        PyFormat { indent: None, keep_unicode: true },
        PyFormat { indent: Some(0), keep_unicode: true },
    ] {
        let bytes = to_python(v, format).expect("Python writer fails");
        assert_eq!(&parse(&bytes).expect("Python output does not re-parse"), v, "{format:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Deep shapes (issue 22).

/// A JSON text nested up to the parser's 512 levels: each level is an array or an object
/// whose members (keys biased to the characters where UTF-8 and UTF-16 order part) come in
/// the order the fuzzer picks, so objects arrive out of order at every level. A writer that
/// does more than linear work per level times out here (`fuzz/run.sh` sets `-timeout`).
pub fn arbitrary_deep_text(u: &mut Unstructured<'_>) -> Result<String> {
    const HIGH_KEYS: &[&str] = &["\u{e000}", "😀", "\u{ffff}", "\u{10000}", "a", "", "ｱ", "é"];
    let levels = u.int_in_range(1..=510)?;
    let leaf = arbitrary_string(u).map(|s| quoted(&s))?;
    // Each level reuses one of a few small layouts, so a short input can describe 510 levels.
    let layouts: Vec<(bool, Vec<String>, usize)> = (0..u.int_in_range(1..=4)?)
        .map(|_| {
            let object = u.arbitrary::<bool>()?;
            let mut extra: Vec<String> = (0..u.int_in_range(0..=3)?)
                .map(|_| {
                    if u.ratio(2, 3)? {
                        u.choose(HIGH_KEYS).map(|k| (*k).to_owned())
                    } else {
                        arbitrary_string(u)
                    }
                })
                .collect::<Result<_>>()?;
            // Distinct keys: a repeated one makes every level a duplicate-key error.
            let mut seen = std::collections::BTreeSet::new();
            extra.retain(|k| seen.insert(k.clone()));
            let at = u.int_in_range(0..=extra.len())?;
            Ok((object, extra, at))
        })
        .collect::<Result<_>>()?;
    // Each level's text before and after the level inside it, joined once at the end (a
    // level-by-level rebuild would make the generator itself quadratic in depth).
    let (mut opens, mut closes) = (Vec::with_capacity(levels), Vec::with_capacity(levels));
    for level in 0..levels {
        let (object, extra, at) = &layouts[level % layouts.len()];
        let member = |i: usize, k: &String| {
            if *object { format!("{}:{i}", quoted(k)) } else { quoted(k) }
        };
        let mut open = String::from(if *object { "{" } else { "[" });
        for (i, k) in extra[..*at].iter().enumerate() {
            open.push_str(&member(i, k));
            open.push(',');
        }
        if *object {
            open.push_str(&quoted(&format!("n\u{e000}{level}")));
            open.push(':');
        }
        let mut close = String::new();
        for (i, k) in extra[*at..].iter().enumerate() {
            close.push(',');
            close.push_str(&member(i + at, k));
        }
        close.push(if *object { '}' } else { ']' });
        opens.push(open);
        closes.push(close);
    }
    let mut text: String = opens.iter().rev().map(String::as_str).collect();
    text.push_str(&leaf);
    closes.iter().for_each(|c| text.push_str(c));
    Ok(text)
}

fn quoted(s: &str) -> String {
    let mut out = Vec::new();
    canonical_json::write_jcs_str(s, &mut out);
    String::from_utf8(out).unwrap_or_default()
}
