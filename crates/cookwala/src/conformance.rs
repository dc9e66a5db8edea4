//! A pure conformance runner over the standard's vector files (COOKWALA.md §8).
//!
//! [`run_vector`] computes a vector's result from its `input`; [`passes`] compares it with
//! `expected` using Python equality (numbers compare numerically, objects need equal key sets).
//! Reading files is the caller's job. The vector-schema validation step of the upstream runner
//! is not done here.
//!
//! Suites are dispatched by name in one `match`; adding a suite is one arm.

use canonical_json::{Map, Value, digest::document_hash, to_jcs};

use crate::keys::{KeyError, KeySet, SigningAlg, SigningKey};
use crate::signature::{SignedKind, verify_signature};
use crate::{disclosure, execution, mission};

/// Why a vector could not be run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// A suite this runner does not implement yet.
    #[error("suite `{0}` is not supported")]
    Unsupported(String),
    /// A vector kind the suite does not know.
    #[error("unknown vector kind `{0}`")]
    UnknownKind(String),
    /// The vector's input is malformed.
    #[error("bad vector input: {0}")]
    BadInput(String),
    /// Keys in the input cannot be loaded.
    #[error("bad keys: {0}")]
    Keys(#[from] KeyError),
}

/// The result of [`run_suite`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuiteReport {
    /// Suite name (file stem; `profiles/<stem>` for profile suites).
    pub suite: String,
    /// Number of vectors.
    pub total: usize,
    /// Number that passed.
    pub passed: usize,
    /// Ids of those that failed (including those that could not be run).
    pub failed: Vec<String>,
}

impl SuiteReport {
    /// The ConformanceReport suite entry `{suite, total, passed, failed?}`.
    pub fn to_value(&self) -> Value {
        let mut map = Map::new();
        map.insert("suite".into(), self.suite.as_str().into());
        map.insert("total".into(), Value::from(self.total));
        map.insert("passed".into(), Value::from(self.passed));
        if !self.failed.is_empty() {
            map.insert(
                "failed".into(),
                Value::Array(self.failed.iter().map(|id| Value::from(id.as_str())).collect()),
            );
        }
        Value::Object(map)
    }
}

/// The Core vector files, by suite name (`<suite>.json` in the vectors folder). Profile suites
/// are `profiles/<stem>` for every file in its `profiles/` subfolder.
pub const CORE_SUITES: [&str; 8] =
    ["hash", "signature", "disclosure", "ledger", "units", "envelope", "dryrun", "transitions"];

/// True when this build can run `suite` (others count as failed, never as skipped).
pub fn is_supported(suite: &str) -> bool {
    matches!(suite, "hash" | "signature" | "disclosure" | "ledger" | "transitions")
}

/// Computes the result of one vector of `suite`.
///
/// # Errors
/// [`RunError::Unsupported`] for suites not implemented; other [`RunError`]s for malformed
/// vectors.
pub fn run_vector(suite: &str, vector: &Value) -> Result<Value, RunError> {
    let input = vector.get("input").ok_or_else(|| bad("vector has no input"))?;
    let kind = vector.get("kind").and_then(Value::as_str).unwrap_or(suite);
    match suite {
        "hash" => run_hash(input),
        "signature" => run_signature(input),
        "disclosure" => Ok(obj([("ok", disclosure::verify(input).into())])),
        "ledger" => run_ledger(input),
        "transitions" => run_transition(kind, input),
        other => Err(RunError::Unsupported(other.to_owned())),
    }
}

/// Python equality of a computed result and the expected one.
pub fn passes(computed: &Value, expected: &Value) -> bool {
    computed.loose_eq(expected)
}

/// Runs every vector of a suite file (a JSON array of vectors).
///
/// # Errors
/// [`RunError::Unsupported`] for suites not implemented, [`RunError::BadInput`] when `vectors` is
/// not an array. A vector that fails to run counts as failed.
pub fn run_suite(suite: &str, vectors: &Value) -> Result<SuiteReport, RunError> {
    let items = vectors.as_array().ok_or_else(|| bad("a suite file is a json array"))?;
    let mut report =
        SuiteReport { suite: suite.to_owned(), total: items.len(), passed: 0, failed: Vec::new() };
    for vector in items {
        let ok = match run_vector(suite, vector) {
            Ok(computed) => vector.get("expected").is_some_and(|e| passes(&computed, e)),
            Err(RunError::Unsupported(s)) => return Err(RunError::Unsupported(s)),
            Err(_) => false,
        };
        if ok {
            report.passed += 1;
        } else {
            let id = vector.get("id").and_then(Value::as_str).unwrap_or("<no id>");
            report.failed.push(id.to_owned());
        }
    }
    Ok(report)
}

/// The identity of a vector set: the document hash of the `[suite, id, expected]` triples of
/// every vector, sorted by (suite, id). `files` pairs each suite name with its file's content.
///
/// # Errors
/// [`RunError::BadInput`] for a file that is not an array of vectors with string ids, or an
/// expected value that cannot be canonicalised.
pub fn vectors_hash(files: &[(String, Value)]) -> Result<String, RunError> {
    let mut triples: Vec<(String, String, Value)> = Vec::new();
    for (suite, content) in files {
        let items = content.as_array().ok_or_else(|| bad("a suite file is a json array"))?;
        for vector in items {
            let id = vector.get("id").and_then(Value::as_str).ok_or_else(|| bad("vector id"))?;
            let expected = vector.get("expected").cloned().unwrap_or(Value::Null);
            triples.push((suite.clone(), id.to_owned(), expected));
        }
    }
    // Rust string order is code point order, as Python's.
    triples.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let list = Value::Array(
        triples.into_iter().map(|(s, id, e)| Value::Array(vec![s.into(), id.into(), e])).collect(),
    );
    document_hash(&list).map_err(|e| bad(&e.to_string()))
}

fn bad(message: &str) -> RunError {
    RunError::BadInput(message.to_owned())
}

fn obj<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

fn field<'a>(input: &'a Value, name: &str) -> Result<&'a Value, RunError> {
    input.get(name).ok_or_else(|| RunError::BadInput(format!("missing `{name}`")))
}

fn str_field<'a>(input: &'a Value, name: &str) -> Result<&'a str, RunError> {
    field(input, name)?.as_str().ok_or_else(|| RunError::BadInput(format!("`{name}` not a string")))
}

fn run_hash(input: &Value) -> Result<Value, RunError> {
    let body = canonical_json::digest::without_top_level(input, &["hash", "signature"]);
    let canonical = to_jcs(&body).map_err(|e| bad(&e.to_string()))?;
    let canonical = String::from_utf8(canonical).map_err(|e| bad(&e.to_string()))?;
    let hash = document_hash(input).map_err(|e| bad(&e.to_string()))?;
    Ok(obj([("canonical", canonical.into()), ("hash", hash.into())]))
}

fn run_signature(input: &Value) -> Result<Value, RunError> {
    if input.get("seed").is_some() {
        let seed = hex_decode(str_field(input, "seed")?)?;
        let message = hex_decode(str_field(input, "messageHex")?)?;
        let key = SigningKey::from_private_bytes(SigningAlg::EdDsa, &seed)?;
        let sig = key.sign_raw(&message);
        return Ok(obj([
            ("publicKey", key.public_key().into()),
            ("signatureHex", canonical_json::digest::hex(&sig).into()),
        ]));
    }
    let keys = KeySet::from_value(field(input, "keys")?)?;
    let verdict = verify_signature(field(input, "document")?, &keys, SignedKind::Document);
    Ok(obj([("ok", verdict.is_ok().into()), ("reason", verdict.reason.as_str().into())]))
}

fn run_ledger(input: &Value) -> Result<Value, RunError> {
    if let Some(checkpoints) = input.get("checkpoints") {
        let pair = checkpoints
            .as_array()
            .filter(|c| c.len() == 2)
            .ok_or_else(|| bad("`checkpoints` must hold two checkpoints"))?;
        let fork = mission::detect_fork(&pair[0], &pair[1]);
        let reason = if fork { "fork_detected" } else { "ok" };
        return Ok(obj([("fork", fork.into()), ("reason", reason.into())]));
    }
    let events = field(input, "events")?.as_array().ok_or_else(|| bad("`events` not an array"))?;
    let keys = KeySet::from_value(field(input, "keys")?)?;
    let chain = mission::verify_chain(events, Some(&keys));
    if let Some(checkpoint) = input.get("checkpoint") {
        if let Err(e) = chain {
            return Ok(obj([("ok", false.into()), ("reason", e.reason().into())]));
        }
        let verdict = mission::verify_checkpoint(events, checkpoint, &keys);
        return Ok(obj([("ok", verdict.is_ok().into()), ("reason", verdict.reason().into())]));
    }
    Ok(match chain {
        Ok(head) => obj([("ok", true.into()), ("reason", "ok".into()), ("head", head.into())]),
        Err(e) => obj([("ok", false.into()), ("reason", e.reason().into())]),
    })
}

fn run_transition(kind: &str, input: &Value) -> Result<Value, RunError> {
    let from = str_field(input, "from")?;
    let to = str_field(input, "to")?;
    let allowed = match kind {
        "execution_transition" => execution::allowed(from, to),
        "mission_transition" => mission::transitions::allowed(from, to, str_field(input, "role")?),
        other => return Err(RunError::UnknownKind(other.to_owned())),
    };
    Ok(obj([("allowed", allowed.into())]))
}

fn hex_decode(text: &str) -> Result<Vec<u8>, RunError> {
    if !text.len().is_multiple_of(2) {
        return Err(bad("odd-length hex"));
    }
    (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| bad("invalid hex"))
        })
        .collect()
}
