//! Small builders for the JSON values the ledger records.

use canonical_json::{Map, Number, Value};

pub(crate) fn s(text: &str) -> Value {
    Value::String(text.to_owned())
}

pub(crate) fn int(n: i64) -> Value {
    Value::Number(Number::Int(canonical_json::Integer::Small(n)))
}

pub(crate) fn obj<const N: usize>(pairs: [(&str, Value); N]) -> Map {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// An actor `{kind, identity}`.
pub fn actor(kind: &str, identity: &str) -> Value {
    Value::Object(obj([("kind", s(kind)), ("identity", s(identity))]))
}
