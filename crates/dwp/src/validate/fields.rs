//! Field checks shared by the contract and the journal-event validators.

use std::collections::BTreeSet;

use canonical_json::{Map, Number, Value};

use crate::py::{self, is_datetime, is_hex64, non_blank, repr_str};

pub(super) fn is_num(v: Option<&Value>) -> bool {
    matches!(v, Some(Value::Number(_)))
}

pub(super) fn is_int(v: Option<&Value>) -> bool {
    matches!(v, Some(Value::Number(Number::Int(_))))
}

pub(super) fn num_lt(v: Option<&Value>, floor: f64) -> bool {
    v.and_then(Value::as_number).is_some_and(|n| n.to_f64() < floor)
}

pub(super) fn int_ge(v: Option<&Value>, floor: i64) -> bool {
    match v {
        Some(Value::Number(Number::Int(i))) => match i.as_i64() {
            Some(x) => x >= floor,
            None => i.to_f64() > 0.0,
        },
        _ => false,
    }
}

pub(super) fn str_list(
    value: Option<&Value>,
    path: &str,
    errors: &mut Vec<String>,
    minimum: usize,
) -> bool {
    let items = match value.and_then(Value::as_array) {
        Some(items) if items.len() >= minimum => items,
        _ => {
            errors.push(format!(
                "{path}: expected a list with at least {minimum} entr{}",
                if minimum == 1 { "y" } else { "ies" }
            ));
            return false;
        }
    };
    for (i, item) in items.iter().enumerate() {
        if !item.as_str().is_some_and(non_blank) {
            errors.push(format!("{path}[{i}]: expected a non-empty string"));
            return false;
        }
    }
    true
}

#[derive(Clone, Copy)]
pub(super) enum Kind {
    Str,
    StrAny,
    DateTime,
    Hex64,
}

pub(super) fn field<'a>(
    doc: &'a Map,
    key: &str,
    kind: Kind,
    path: &str,
    errors: &mut Vec<String>,
    optional: bool,
) -> Option<&'a Value> {
    let Some(value) = doc.get(key) else {
        if !optional {
            errors.push(format!("{path}: missing required field {}", repr_str(key)));
        }
        return None;
    };
    let s = value.as_str();
    let (ok, what) = match kind {
        Kind::Str => (s.is_some_and(non_blank), "expected a non-empty string"),
        Kind::StrAny => (s.is_some(), "expected a string"),
        Kind::DateTime => (s.is_some_and(is_datetime), "expected an RFC 3339 timestamp"),
        Kind::Hex64 => {
            (s.is_some_and(is_hex64), "expected a 64-character lowercase sha256 hex digest")
        }
    };
    if !ok {
        errors.push(format!("{path}.{key}: {what}"));
        return None;
    }
    Some(value)
}

pub(super) fn field_str<'a>(
    doc: &'a Map,
    key: &str,
    kind: Kind,
    path: &str,
    errors: &mut Vec<String>,
) -> Option<&'a str> {
    field(doc, key, kind, path, errors, false).and_then(Value::as_str)
}

pub(super) fn closed(obj: &Map, known: &[&str], path: &str, errors: &mut Vec<String>) {
    for key in obj.keys() {
        if !known.contains(&key.as_str()) {
            errors.push(format!("{path}: unexpected field {} (closed object)", repr_str(key)));
        }
    }
}

pub(super) fn dup_by_str(items: &[Value]) -> bool {
    let set: BTreeSet<String> = items.iter().map(py::str_of).collect();
    set.len() != items.len()
}
