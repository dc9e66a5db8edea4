//! Execution-log privacy and dataset export (COOKWALA.md §2.6).
//!
//! An ExecutionLog carries no personal data: `privacy.personalData` must be `"none"`, and this
//! is validated (with the whole strict ExecutionLog type), not assumed. [`export`] releases only
//! logs whose consent allows the requested dataset (`research_only` takes logs consented to
//! `research_only` or `open`; `open` takes only `open`), drops logs whose consent was withdrawn
//! (`consent.withdrawnAt` or `consent.x-withdrawnAt` set), and says what it left out and why.
//!
//! Every released log is scrubbed: `x-` extension fields are removed at every level (their
//! content is unvalidated and could carry household, health or religious data), disclosures keep
//! only their `digest` (a value travels only as a selective disclosure to a permitted party),
//! the now-invalid `signature` is removed, and for `open` datasets `consent.grantedBy` is removed
//! and every time is coarsened to the day (`YYYY-MM-DDT00:00:00Z`, `privacy.timePrecision: day`).

use canonical_json::Value;

use crate::documents::validate;
use crate::time::{Instant, parse_timestamp};
use crate::vocab::Vocabulary;

/// The dataset being built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dataset {
    /// Shared with researchers under agreement.
    ResearchOnly,
    /// Published openly.
    Open,
}

impl Dataset {
    /// Parses `research_only` or `open`.
    pub fn parse(text: &str) -> Option<Dataset> {
        match text {
            "research_only" => Some(Dataset::ResearchOnly),
            "open" => Some(Dataset::Open),
            _ => None,
        }
    }

    /// True when a log consented to `consent` may go into this dataset.
    pub fn admits(self, consent: &str) -> bool {
        match self {
            Dataset::ResearchOnly => matches!(consent, "research_only" | "open"),
            Dataset::Open => consent == "open",
        }
    }
}

/// The result of [`export`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Export {
    /// Released (scrubbed) logs, in input order.
    pub released: Vec<Value>,
    /// `(label, reason)` for every log left out.
    pub left_out: Vec<(String, String)>,
}

/// Selects and scrubs logs for a dataset. `logs` pairs a label (e.g. a file name) with a log.
pub fn export(logs: &[(String, Value)], dataset: Dataset, since: Option<Instant>) -> Export {
    let mut out = Export::default();
    for (label, log) in logs {
        match admit(log, dataset, since) {
            Ok(()) => out.released.push(scrub(log, dataset)),
            Err(reason) => out.left_out.push((label.clone(), reason)),
        }
    }
    out
}

fn admit(log: &Value, dataset: Dataset, since: Option<Instant>) -> Result<(), String> {
    let report = validate(log, Some("ExecutionLog"), Vocabulary::builtin());
    if let Some(e) = report.errors.first() {
        let more = report.errors.len() - 1;
        let tail = if more > 0 { format!(" (and {more} more)") } else { String::new() };
        return Err(format!("not a valid ExecutionLog: {}: {}{tail}", e.pointer, e.message));
    }
    let consent = log.pointer("/consent/dataset").and_then(Value::as_str).unwrap_or("none");
    let withdrawn = ["withdrawnAt", "x-withdrawnAt"]
        .iter()
        .any(|k| log.get("consent").and_then(|c| c.get(k)).is_some_and(|v| !v.is_null()));
    if withdrawn {
        return Err("consent withdrawn".into());
    }
    if !dataset.admits(consent) {
        return Err(format!("consent is {consent}"));
    }
    if let Some(since) = since {
        let started = log.get("startedAt").and_then(Value::as_str).map(parse_timestamp);
        match started {
            Some(Ok(t)) if t >= since => {}
            Some(Ok(_)) => return Err("started before --since".into()),
            _ => return Err("startedAt cannot be read".into()),
        }
    }
    Ok(())
}

const TIME_KEYS: &[&str] = &["startedAt", "endedAt", "at", "grantedAt", "updatedAt"];

fn to_day(text: &str) -> Option<String> {
    let t = parse_timestamp(text).ok()?;
    let day = t.to_rfc3339();
    Some(format!("{}T00:00:00Z", day.get(..10)?))
}

fn scrub_value(v: &mut Value, coarsen: bool) {
    match v {
        Value::Array(items) => items.iter_mut().for_each(|x| scrub_value(x, coarsen)),
        Value::Object(m) => {
            m.retain(|k, _| !k.starts_with("x-"));
            if m.contains_key("digest") && (m.contains_key("salt") || m.contains_key("value")) {
                m.remove("salt");
                m.remove("value");
            }
            for (k, x) in m.iter_mut() {
                if coarsen
                    && TIME_KEYS.contains(&k.as_str())
                    && let Value::String(s) = x
                    && let Some(day) = to_day(s)
                {
                    *x = Value::String(day);
                } else {
                    scrub_value(x, coarsen);
                }
            }
        }
        _ => {}
    }
}

fn scrub(log: &Value, dataset: Dataset) -> Value {
    let mut out = log.clone();
    let open = dataset == Dataset::Open;
    scrub_value(&mut out, open);
    if let Some(m) = out.as_object_mut() {
        m.remove("signature");
        if open {
            if let Some(Value::Object(c)) = m.get_mut("consent") {
                c.remove("grantedBy");
            }
            if let Some(Value::Object(p)) = m.get_mut("privacy") {
                p.insert("timePrecision".into(), "day".into());
            }
        }
    }
    out
}
