//! The JSON value model shared by every crate that hashes or signs.

use std::collections::BTreeMap;
use std::fmt;

/// An object: keys are unique and kept in UTF-8 byte order (= Unicode code point order).
///
/// Each writer re-orders keys as its format requires (JCS sorts by UTF-16 code units).
pub type Map = BTreeMap<String, Value>;

/// A parsed JSON value.
///
/// Integers and floats are kept apart (`16` is not `16.0`), and integers of any size are kept
/// exactly, because both standards hash bytes that depend on those distinctions.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, integer or float.
    Number(Number),
    /// A string (always valid Unicode: lone surrogates are rejected by the parser).
    String(String),
    /// An array.
    Array(Vec<Value>),
    /// An object.
    Object(Map),
}

/// A JSON number, as written: an integer (no fraction, no exponent) or a float.
#[derive(Clone, Debug, PartialEq)]
pub enum Number {
    /// An integer that was written without fraction or exponent.
    Int(Integer),
    /// A finite float (written with a fraction or an exponent).
    Float(Finite),
}

/// An exact integer of any size.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Integer {
    /// Fits in an `i64`.
    Small(i64),
    /// Larger than `i64`: kept as canonical decimal text (optional `-`, no leading zeros).
    Big(BigDecimalText),
}

/// Canonical decimal text of an integer outside the `i64` range.
///
/// Invariant: matches `-?[1-9][0-9]*` and does not fit in an `i64`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BigDecimalText(String);

/// A finite `f64` (never NaN or infinite).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Finite(f64);

impl Finite {
    /// Wraps `value` if it is finite.
    pub fn new(value: f64) -> Option<Finite> {
        value.is_finite().then_some(Finite(value))
    }

    /// The wrapped value.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl BigDecimalText {
    /// Checks the text form of an integer too large for `i64`.
    pub fn new(text: &str) -> Option<BigDecimalText> {
        let digits = text.strip_prefix('-').unwrap_or(text);
        let well_formed = !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && !(digits.len() > 1 && digits.starts_with('0'));
        (well_formed && text.parse::<i64>().is_err()).then(|| BigDecimalText(text.to_owned()))
    }

    /// The decimal text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True for a negative value.
    pub fn is_negative(&self) -> bool {
        self.0.starts_with('-')
    }
}

impl Integer {
    /// Parses canonical or non-canonical decimal integer text (`-0` becomes `0`).
    pub fn from_decimal(text: &str) -> Option<Integer> {
        if let Ok(n) = text.parse::<i64>() {
            return Some(Integer::Small(n));
        }
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let trimmed = digits.trim_start_matches('0');
        if trimmed.is_empty() {
            return Some(Integer::Small(0));
        }
        let canonical = if negative { format!("-{trimmed}") } else { trimmed.to_owned() };
        match canonical.parse::<i64>() {
            Ok(n) => Some(Integer::Small(n)),
            Err(_) => BigDecimalText::new(&canonical).map(Integer::Big),
        }
    }

    /// The value as `i64`, if it fits.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Integer::Small(n) => Some(*n),
            Integer::Big(_) => None,
        }
    }

    /// The value as the nearest `f64` (big integers round).
    pub fn to_f64(&self) -> f64 {
        match self {
            // Rounding to the nearest double is the intended conversion here.
            #[allow(clippy::cast_precision_loss)]
            Integer::Small(n) => *n as f64,
            Integer::Big(text) => text.as_str().parse::<f64>().unwrap_or(f64::NAN),
        }
    }
}

impl fmt::Display for Integer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Integer::Small(n) => write!(f, "{n}"),
            Integer::Big(text) => f.write_str(text.as_str()),
        }
    }
}

impl Number {
    /// The value as `f64` (integers convert, big ones round).
    pub fn to_f64(&self) -> f64 {
        match self {
            Number::Int(i) => i.to_f64(),
            Number::Float(x) => x.get(),
        }
    }

    /// The value as `i64` when it is an integer that fits.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Number::Int(i) => i.as_i64(),
            Number::Float(_) => None,
        }
    }

    /// Numeric equality as Python compares numbers: `30 == 30.0`.
    pub fn numeric_eq(&self, other: &Number) -> bool {
        match (self, other) {
            (Number::Int(a), Number::Int(b)) => a == b,
            _ => self.to_f64() == other.to_f64(),
        }
    }
}

impl Value {
    /// The object map, if this is an object.
    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    /// The mutable object map, if this is an object.
    pub fn as_object_mut(&mut self) -> Option<&mut Map> {
        match self {
            Value::Object(map) => Some(map),
            _ => None,
        }
    }

    /// The elements, if this is an array.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The text, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The number, if this is one.
    pub fn as_number(&self) -> Option<&Number> {
        match self {
            Value::Number(n) => Some(n),
            _ => None,
        }
    }

    /// The value as `f64` if it is a number (integer or float).
    pub fn as_f64(&self) -> Option<f64> {
        self.as_number().map(Number::to_f64)
    }

    /// The value as `i64` if it is an integer that fits.
    pub fn as_i64(&self) -> Option<i64> {
        self.as_number().and_then(Number::as_i64)
    }

    /// True for `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Looks up `key` when this is an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_object().and_then(|map| map.get(key))
    }

    /// The string at `key` of an object (`None` when absent or not a string).
    pub fn str_at(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Value::as_str)
    }

    /// The integer at `key` of an object, if it fits an `i64`.
    pub fn i64_at(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(Value::as_i64)
    }

    /// The boolean at `key` of an object.
    pub fn bool_at(&self, key: &str) -> Option<bool> {
        self.get(key).and_then(Value::as_bool)
    }

    /// The array at `key` of an object.
    pub fn array_at(&self, key: &str) -> Option<&[Value]> {
        self.get(key).and_then(Value::as_array)
    }

    /// An object built from `(key, value)` pairs (a later pair replaces an earlier one with
    /// the same key).
    pub fn object<const N: usize>(pairs: [(&str, Value); N]) -> Value {
        Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    }

    /// Looks up a JSON pointer (RFC 6901), e.g. `/process/nodes/0/op`.
    pub fn pointer(&self, pointer: &str) -> Option<&Value> {
        if pointer.is_empty() {
            return Some(self);
        }
        let rest = pointer.strip_prefix('/')?;
        let mut target = self;
        for token in rest.split('/') {
            let token = token.replace("~1", "/").replace("~0", "~");
            target = match target {
                Value::Object(map) => map.get(&token)?,
                Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(target)
    }

    /// A short name of the value's JSON type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(Number::Int(_)) => "integer",
            Value::Number(Number::Float(_)) => "number",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        }
    }

    /// Equality with Python semantics: numbers compare numerically (`1 == 1.0`), objects need
    /// equal key sets, arrays equal lengths.
    pub fn loose_eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Number(a), Value::Number(b)) => a.numeric_eq(b),
            (Value::Array(a), Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.loose_eq(y))
            }
            (Value::Object(a), Value::Object(b)) => {
                a.len() == b.len() && a.iter().all(|(k, v)| b.get(k).is_some_and(|w| v.loose_eq(w)))
            }
            _ => self == other,
        }
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Number(Number::Int(Integer::Small(n)))
    }
}

impl From<u32> for Value {
    fn from(n: u32) -> Value {
        Value::from(i64::from(n))
    }
}

impl From<u64> for Value {
    fn from(n: u64) -> Value {
        match i64::try_from(n) {
            Ok(small) => Value::from(small),
            Err(_) => match BigDecimalText::new(&n.to_string()) {
                Some(big) => Value::Number(Number::Int(Integer::Big(big))),
                None => Value::Null,
            },
        }
    }
}

impl From<usize> for Value {
    fn from(n: usize) -> Value {
        Value::from(n as u64)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s)
    }
}

impl From<Vec<Value>> for Value {
    fn from(items: Vec<Value>) -> Value {
        Value::Array(items)
    }
}

impl From<Map> for Value {
    fn from(map: Map) -> Value {
        Value::Object(map)
    }
}

impl From<Finite> for Value {
    fn from(x: Finite) -> Value {
        Value::Number(Number::Float(x))
    }
}

impl<K: Into<String>> FromIterator<(K, Value)> for Value {
    fn from_iter<I: IntoIterator<Item = (K, Value)>>(iter: I) -> Value {
        Value::Object(iter.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}
