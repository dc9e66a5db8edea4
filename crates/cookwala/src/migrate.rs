//! Migration of 0.1 documents to 0.2 (COOKWALA.md §13).
//!
//! Steps, each recorded as a [`Change`] naming a JSON pointer:
//! 1. °F → °C: quantities and comparisons with `unit` `degF`/`F`/`°F` (value, bounds and
//!    absolute tolerances), and `…TempF` / `tempF` fields renamed to `…TempC` / `tempC`.
//!    Values are rounded to 0.1 °C.
//! 2. Relative tolerances on temperatures become `toleranceAbs` (|value| × tolerance).
//! 3. Money amounts given as numbers become decimal strings.
//! 4. Fields the 0.2 document type does not know are renamed to `x-<name>` (or, with
//!    [`Unknown::Report`], left in place and only reported).
//! 5. The version becomes `0.2.0` (`cookwala` or `core`), and a stale `hash` / `signature`
//!    is dropped (the document must be re-hashed and re-signed).
//!
//! Nothing is guessed: a temperature that is not a number is reported and left alone.

use canonical_json::{Finite, Map, Value};

use crate::documents::{KINDS, Shape, Ty, detect_kind};
use crate::units::amount_from_float;

/// What to do with unknown fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unknown {
    /// Rename to `x-<name>`.
    Rename,
    /// Leave and report.
    Report,
}

/// One change (or a problem left for a person).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// JSON pointer (in the input document).
    pub pointer: String,
    /// What was done.
    pub what: String,
}

/// Migrates `doc` (of `kind`, or its detected kind). Returns the 0.2 document and the changes.
pub fn migrate(doc: &Value, kind: Option<&str>, unknown: Unknown) -> (Value, Vec<Change>) {
    let mut changes = Vec::new();
    let mut out = doc.clone();
    temperatures(&mut out, "", &mut changes);
    money(&mut out, "", &mut changes);
    let kind = kind.or_else(|| detect_kind(doc));
    if let Some((_, shape, _)) = kind.and_then(|k| KINDS.iter().find(|(n, _, _)| *n == k)) {
        unknown_fields(&mut out, &Ty::Obj(shape), "", unknown, &mut changes);
    }
    if let Some(m) = out.as_object_mut() {
        for field in ["cookwala", "core"] {
            if let Some(Value::String(v)) = m.get(field)
                && v.starts_with("0.1.")
            {
                changes.push(Change {
                    pointer: format!("/{field}"),
                    what: format!("version {v} → 0.2.0"),
                });
                m.insert(field.into(), "0.2.0".into());
            }
        }
        if !changes.is_empty() {
            for field in ["hash", "signature"] {
                if m.remove(field).is_some() {
                    changes.push(Change {
                        pointer: format!("/{field}"),
                        what: format!("removed the stale {field}: re-hash and re-sign"),
                    });
                }
            }
        }
    }
    (out, changes)
}

fn num(x: f64) -> Value {
    Finite::new(x).map_or(Value::Null, Value::from)
}

fn f_to_c(f: f64) -> f64 {
    ((f - 32.0) * 5.0 / 9.0 * 10.0).round() / 10.0
}

fn is_fahrenheit(unit: Option<&Value>) -> bool {
    matches!(unit.and_then(Value::as_str), Some("degF" | "F" | "°F" | "fahrenheit"))
}

fn is_celsius(unit: Option<&Value>) -> bool {
    matches!(unit.and_then(Value::as_str), Some("degC" | "C" | "°C"))
}

fn esc(k: &str) -> String {
    k.replace('~', "~0").replace('/', "~1")
}

fn temperatures(v: &mut Value, at: &str, changes: &mut Vec<Change>) {
    match v {
        Value::Array(items) => {
            for (i, x) in items.iter_mut().enumerate() {
                temperatures(x, &format!("{at}/{i}"), changes);
            }
        }
        Value::Object(m) => {
            if is_fahrenheit(m.get("unit")) {
                for key in ["value", "gte", "lte", "min", "max"] {
                    convert_abs(m, key, at, changes);
                }
                if let Some(Value::Array(b)) = m.get_mut("between") {
                    for (i, x) in b.iter_mut().enumerate() {
                        if let Some(f) = x.as_f64() {
                            *x = num(f_to_c(f));
                            changes.push(Change {
                                pointer: format!("{at}/between/{i}"),
                                what: format!("{f} °F → {} °C", f_to_c(f)),
                            });
                        }
                    }
                }
                if let Some(t) = m.get("toleranceAbs").and_then(Value::as_f64) {
                    let c = (t * 5.0 / 9.0 * 10.0).round() / 10.0;
                    m.insert("toleranceAbs".into(), num(c));
                    changes.push(Change {
                        pointer: format!("{at}/toleranceAbs"),
                        what: format!("absolute tolerance {t} °F → {c} °C"),
                    });
                }
                m.insert("unit".into(), "degC".into());
                changes
                    .push(Change { pointer: format!("{at}/unit"), what: "unit → degC".into() });
            }
            if is_celsius(m.get("unit"))
                && let Some(Value::Number(rel)) = m.get("tolerance").cloned()
            {
                let base = m.get("value").and_then(Value::as_f64).unwrap_or(0.0).abs();
                let abs = (base * rel.to_f64() * 10.0).round() / 10.0;
                m.remove("tolerance");
                m.insert("toleranceAbs".into(), num(abs));
                changes.push(Change {
                    pointer: format!("{at}/tolerance"),
                    what: format!(
                        "relative tolerance {} on a temperature → toleranceAbs {abs}",
                        rel.to_f64()
                    ),
                });
            }
            let renames: Vec<String> = m
                .keys()
                .filter(|k| k.ends_with("TempF") || k.as_str() == "tempF")
                .cloned()
                .collect();
            for key in renames {
                let new_key = format!("{}C", &key[..key.len() - 1]);
                let ptr = format!("{at}/{}", esc(&key));
                match m.get(&key).and_then(Value::as_f64) {
                    Some(f) if !m.contains_key(&new_key) => {
                        m.remove(&key);
                        m.insert(new_key.clone(), num(f_to_c(f)));
                        changes.push(Change {
                            pointer: ptr,
                            what: format!("{key} {f} °F → {new_key} {} °C", f_to_c(f)),
                        });
                    }
                    _ => changes.push(Change {
                        pointer: ptr,
                        what: format!("left alone: {key} is not a number or {new_key} exists"),
                    }),
                }
            }
            for (k, x) in m.iter_mut() {
                temperatures(x, &format!("{at}/{}", esc(k)), changes);
            }
        }
        _ => {}
    }
}

fn convert_abs(m: &mut Map, key: &str, at: &str, changes: &mut Vec<Change>) {
    match m.get(key) {
        Some(Value::Number(n)) => {
            let f = n.to_f64();
            m.insert(key.into(), num(f_to_c(f)));
            changes.push(Change {
                pointer: format!("{at}/{key}"),
                what: format!("{f} °F → {} °C", f_to_c(f)),
            });
        }
        Some(Value::Object(_)) | None => {}
        Some(_) => changes.push(Change {
            pointer: format!("{at}/{key}"),
            what: "left alone: a °F value that is not a number".into(),
        }),
    }
}

fn money(v: &mut Value, at: &str, changes: &mut Vec<Change>) {
    match v {
        Value::Array(items) => {
            for (i, x) in items.iter_mut().enumerate() {
                money(x, &format!("{at}/{i}"), changes);
            }
        }
        Value::Object(m) => {
            let is_money = m.get("currency").and_then(Value::as_str).is_some();
            if is_money && let Some(Value::Number(n)) = m.get("amount").cloned() {
                let ptr = format!("{at}/amount");
                match amount_from_float(n.to_f64()) {
                    Some(text) => {
                        changes.push(Change {
                            pointer: ptr,
                            what: format!("money {} → \"{text}\"", n.to_f64()),
                        });
                        m.insert("amount".into(), text.into());
                    }
                    None => changes.push(Change {
                        pointer: ptr,
                        what: "left alone: amount out of range for a decimal string".into(),
                    }),
                }
            }
            for (k, x) in m.iter_mut() {
                money(x, &format!("{at}/{}", esc(k)), changes);
            }
        }
        _ => {}
    }
}

fn unknown_fields(v: &mut Value, ty: &Ty, at: &str, mode: Unknown, changes: &mut Vec<Change>) {
    match (ty, v) {
        (Ty::Obj(shape), Value::Object(m)) => fix_object(m, shape, at, mode, changes),
        (Ty::Arr(item, _), Value::Array(items)) => {
            for (i, x) in items.iter_mut().enumerate() {
                unknown_fields(x, item, &format!("{at}/{i}"), mode, changes);
            }
        }
        _ => {}
    }
}

fn fix_object(m: &mut Map, shape: &Shape, at: &str, mode: Unknown, changes: &mut Vec<Change>) {
    let unknown: Vec<String> = m
        .keys()
        .filter(|k| !k.starts_with("x-") && !shape.fields.iter().any(|(n, _, _)| n == *k))
        .cloned()
        .collect();
    for key in unknown {
        let ptr = format!("{at}/{}", esc(&key));
        let new_key = format!("x-{key}");
        if mode == Unknown::Report || m.contains_key(&new_key) {
            changes.push(Change {
                pointer: ptr,
                what: format!("unknown field {key} (left in place)"),
            });
            continue;
        }
        if let Some(x) = m.remove(&key) {
            m.insert(new_key.clone(), x);
            changes
                .push(Change { pointer: ptr, what: format!("unknown field renamed to {new_key}") });
        }
    }
    for (name, ty, _) in shape.fields {
        if let Some(x) = m.get_mut(*name) {
            unknown_fields(x, ty, &format!("{at}/{}", esc(name)), mode, changes);
        }
    }
}
