//! Recall rules the service applies: when a recall was issued, and which ones block.

use canonical_json::Value;

/// An RFC 3339 date-time in Unix milliseconds (`None` if it is not one).
pub(crate) fn timestamp_ms(text: &str) -> Option<i64> {
    let t = cookwala::time::parse_timestamp(text).ok()?;
    t.unix_seconds().checked_mul(1000)?.checked_add(i64::from(t.subsec_nanos() / 1_000_000))
}

/// A recall's `issuedAt` in Unix milliseconds.
pub(crate) fn issued_ms(recall: &Value) -> Option<i64> {
    timestamp_ms(recall.get("issuedAt")?.as_str()?)
}

/// The recalls that block new executions (every action but `warn`).
pub(crate) fn blocking(all: &[Value]) -> Vec<Value> {
    all.iter()
        .filter(|r| r.get("action").and_then(Value::as_str) != Some("warn"))
        .cloned()
        .collect()
}
