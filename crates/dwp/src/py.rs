//! Small Python-compatibility helpers for message texts and identifier patterns.
//!
//! The upstream messages embed values with Python's `%r` (`repr`) and `%s` (`str`), and its
//! identifier checks use `re.match` with `$`, which also matches just before a final newline.
//! These helpers reproduce both so our messages and verdicts agree with upstream.

use canonical_json::{Integer, Number, Value, python_float_repr};

/// Python `repr` of a string.
pub fn repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || (0x7f..0xa1).contains(&(c as u32)) || c == '\u{ad}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() || matches!(c as u32, 0x2028 | 0x2029 | 0xfeff) => {
                if (c as u32) <= 0xffff {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

fn number_text(n: &Number) -> String {
    match n {
        Number::Int(Integer::Small(i)) => i.to_string(),
        Number::Int(Integer::Big(b)) => b.as_str().to_owned(),
        Number::Float(f) => python_float_repr(f.get()),
    }
}

/// Python `repr` of a JSON value (objects in key order).
pub fn repr(v: &Value) -> String {
    match v {
        Value::Null => "None".to_owned(),
        Value::Bool(true) => "True".to_owned(),
        Value::Bool(false) => "False".to_owned(),
        Value::Number(n) => number_text(n),
        Value::String(s) => repr_str(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(repr).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Object(map) => {
            let parts: Vec<String> =
                map.iter().map(|(k, v)| format!("{}: {}", repr_str(k), repr(v))).collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

/// Python `repr` of an optional value (`None` when absent).
pub fn repr_opt(v: Option<&Value>) -> String {
    v.map_or_else(|| "None".to_owned(), repr)
}

/// Python `str` of a JSON value.
pub fn str_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => repr(other),
    }
}

/// Python `str` of an optional value (`None` when absent).
pub fn str_opt(v: Option<&Value>) -> String {
    v.map_or_else(|| "None".to_owned(), str_of)
}

/// Python `s[:n]`: the first `n` characters (never splits a UTF-8 sequence, so a short form
/// of a hostile identifier cannot panic).
pub fn head(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(at, _)| &s[..at])
}

/// Python truthiness.
pub fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.to_f64() != 0.0,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

/// Python `str.isspace` for one character.
fn py_space(c: char) -> bool {
    c.is_whitespace() || matches!(c as u32, 0x1c..=0x1f)
}

/// Python `s.strip()` is non-empty.
pub fn non_blank(s: &str) -> bool {
    s.chars().any(|c| !py_space(c))
}

/// `re.match(pattern_with_dollar, s)`: the matcher sees `s`, or `s` without one final `\n`.
pub fn full_match(s: &str, matcher: impl Fn(&str) -> bool) -> bool {
    matcher(s) || s.strip_suffix('\n').is_some_and(&matcher)
}

fn lower_alnum(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// `^<prefix>[a-z0-9]+(-[a-z0-9]+)*$`.
fn slug_id(s: &str, prefix: &str) -> bool {
    full_match(s, |s| s.strip_prefix(prefix).is_some_and(|rest| rest.split('-').all(lower_alnum)))
}

/// Task id `T-…`.
pub fn is_task_id(s: &str) -> bool {
    slug_id(s, "T-")
}

/// Criterion id `AC-…`.
pub fn is_criterion_id(s: &str) -> bool {
    slug_id(s, "AC-")
}

/// Invariant id `INV-…`.
pub fn is_invariant_id(s: &str) -> bool {
    slug_id(s, "INV-")
}

/// Runtime plan id `^PLAN_(?:[0-9]{3,}_)?[a-z0-9]+(?:_[a-z0-9]+){1,4}$`.
pub fn is_plan_id(s: &str) -> bool {
    full_match(s, |s| {
        let Some(rest) = s.strip_prefix("PLAN_") else { return false };
        let parts: Vec<&str> = rest.split('_').collect();
        if !parts.iter().all(|p| lower_alnum(p)) {
            return false;
        }
        let plain = (2..=5).contains(&parts.len());
        let numbered = parts.len() >= 3
            && parts[0].len() >= 3
            && parts[0].bytes().all(|b| b.is_ascii_digit())
            && (2..=5).contains(&(parts.len() - 1));
        plain || numbered
    })
}

/// 64 lowercase hex digits.
pub fn is_hex64(s: &str) -> bool {
    full_match(s, |s| {
        s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// `^sha256:[0-9a-f]{64}$`.
pub fn is_prefixed_digest(s: &str) -> bool {
    full_match(s, |s| s.strip_prefix("sha256:").is_some_and(|h| h.len() == 64 && is_hex64(h)))
}

/// Limit id `^[a-z][a-z0-9_]*$`.
pub fn is_limit_id(s: &str) -> bool {
    full_match(s, |s| {
        let mut bytes = s.bytes();
        bytes.next().is_some_and(|b| b.is_ascii_lowercase())
            && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    })
}

/// Delegation id `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`.
pub fn is_delegation_id(s: &str) -> bool {
    full_match(s, |s| {
        let mut bytes = s.bytes();
        s.len() <= 64
            && bytes.next().is_some_and(|b| b.is_ascii_alphanumeric())
            && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    })
}

/// Addon key `^[a-z][a-z0-9-]{0,63}$`.
pub fn is_addon_id(s: &str) -> bool {
    full_match(s, |s| {
        let mut bytes = s.bytes();
        s.len() <= 64
            && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
            && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    })
}

/// `^\d+\.\d+\.\d+$` (ASCII digits).
pub fn is_dotted_version(s: &str) -> bool {
    full_match(s, |s| {
        let parts: Vec<&str> = s.split('.').collect();
        parts.len() == 3
            && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// RFC 3339 as upstream checks it:
/// `^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$`.
pub fn is_datetime(s: &str) -> bool {
    full_match(s, |s| {
        let b = s.as_bytes();
        let digits =
            |r: std::ops::Range<usize>| b.get(r).is_some_and(|x| x.iter().all(u8::is_ascii_digit));
        if b.len() < 20
            || !digits(0..4)
            || b[4] != b'-'
            || !digits(5..7)
            || b[7] != b'-'
            || !digits(8..10)
            || !matches!(b[10], b'T' | b't' | b' ')
            || !digits(11..13)
            || b[13] != b':'
            || !digits(14..16)
            || b[16] != b':'
            || !digits(17..19)
        {
            return false;
        }
        let mut i = 19;
        if b[i] == b'.' {
            let start = i + 1;
            i = start;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i == start {
                return false;
            }
        }
        let tail = &b[i..];
        match tail {
            [b'Z' | b'z'] => true,
            [b'+' | b'-', h1, h2, b':', m1, m2] => {
                [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit())
            }
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_follow_python_re() {
        assert!(is_plan_id("PLAN_v6_contract_fixture"));
        assert!(is_plan_id("PLAN_001_demo_plan"));
        assert!(is_plan_id("PLAN_001_a_b_c_d_e"));
        assert!(!is_plan_id("PLAN_single"));
        assert!(!is_plan_id("PLAN_a_b_c_d_e_f"));
        assert!(!is_plan_id("PLAN_../x"));
        assert!(is_task_id("T-a-b1"));
        assert!(is_task_id("T-a\n"));
        assert!(!is_task_id("T-a--b"));
        assert!(!is_task_id("T-"));
        assert!(is_datetime("2026-09-26T20:00:01Z"));
        assert!(is_datetime("2026-09-26 20:00:01.5+02:00"));
        assert!(!is_datetime("2026-09-26T20:00:01"));
        assert_eq!(repr_str("it's"), "\"it's\"");
        assert_eq!(repr_str("a\nb"), "'a\\nb'");
        assert_eq!(head("0123456789abcdef", 12), "0123456789ab");
        assert_eq!(head("ééééééééééééé", 12), "éééééééééééé");
        assert_eq!(head("short", 12), "short");
    }
}
