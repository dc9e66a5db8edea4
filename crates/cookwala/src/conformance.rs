//! A pure conformance runner over the standard's vector files (COOKWALA.md §8).
//!
//! [`run_vector`] computes a vector's result from its `input`; [`passes`] compares it with
//! `expected` using Python equality (numbers compare numerically, objects need equal key sets).
//! Reading files is the caller's job. The vector-schema validation step of the upstream runner
//! is not done here.
//!
//! Suites are dispatched by name in one `match`; adding a suite is one arm.

use canonical_json::{Map, Value, digest::document_hash, to_jcs};

use crate::envelope::{self, Target};
use crate::keys::{KeyError, KeySet, SigningAlg, SigningKey};
use crate::signature::{SignedKind, verify_signature};
use crate::time::parse_timestamp;
use crate::vocab::Vocabulary;
use crate::{
    certification, disclosure, dryrun, execution, federation, household, mission, registry, signal,
    sms, units,
};

/// The instant used for vectors that give no `now` (none of them has a calibration date, so
/// the result does not depend on it; COOKWALA.md open point 12).
pub const VECTOR_NOW: &str = "2026-10-05T00:00:00Z";

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
    matches!(
        suite,
        "hash"
            | "signature"
            | "disclosure"
            | "ledger"
            | "transitions"
            | "units"
            | "envelope"
            | "dryrun"
            | "profiles/sensor_trust"
            | "profiles/certifications"
            | "profiles/disclosure_policy"
            | "profiles/federation"
            | "profiles/registry"
            | "profiles/signal"
            | "profiles/sms"
    )
}

/// The profile suites this build runs, with the ConformanceReport `claim` each supports (see
/// COOKWALA.md §8.3; `None` for suites that belong to no claimable class on their own — `sms`
/// is only part of the humanitarian levels, which also need rule packs this build lacks).
pub const PROFILE_SUITES: [(&str, Option<&str>); 7] = [
    ("profiles/certifications", None),
    ("profiles/disclosure_policy", Some("household")),
    ("profiles/federation", None),
    ("profiles/registry", Some("registry")),
    ("profiles/sensor_trust", None),
    ("profiles/signal", Some("supply")),
    ("profiles/sms", None),
];

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
        "disclosure" => Ok(Value::object([("ok", disclosure::verify(input).into())])),
        "ledger" => run_ledger(input),
        "transitions" => run_transition(kind, input),
        "units" => run_units(input),
        "envelope" => run_envelope(input),
        "dryrun" => run_dryrun(input),
        "profiles/sensor_trust" => run_sensor_trust(kind, input),
        "profiles/certifications" => run_certification(kind, input),
        "profiles/disclosure_policy" => run_disclosure_policy(input),
        "profiles/federation" => run_federation(input),
        "profiles/registry" => run_registry(kind, input),
        "profiles/signal" => {
            let reasons = signal::check(field(input, "signal")?, signal::Policy::default());
            let codes = reasons.iter().map(|r| Value::from(r.code())).collect();
            Ok(Value::object([("ok", reasons.is_empty().into()), ("reasons", Value::Array(codes))]))
        }
        "profiles/sms" => {
            let text = input.get("text").and_then(Value::as_str).unwrap_or("");
            Ok(sms::result_value(&sms::parse(text)))
        }
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
    Ok(Value::object([("canonical", canonical.into()), ("hash", hash.into())]))
}

fn run_signature(input: &Value) -> Result<Value, RunError> {
    if input.get("seed").is_some() {
        let seed = hex_decode(str_field(input, "seed")?)?;
        let message = hex_decode(str_field(input, "messageHex")?)?;
        let key = SigningKey::from_private_bytes(SigningAlg::EdDsa, &seed)?;
        let sig = key.sign_raw(&message);
        return Ok(Value::object([
            ("publicKey", key.public_key().into()),
            ("signatureHex", canonical_json::digest::hex(&sig).into()),
        ]));
    }
    let keys = KeySet::from_value(field(input, "keys")?)?;
    let verdict = verify_signature(field(input, "document")?, &keys, SignedKind::Document);
    Ok(Value::object([("ok", verdict.is_ok().into()), ("reason", verdict.reason.as_str().into())]))
}

fn run_ledger(input: &Value) -> Result<Value, RunError> {
    if let Some(checkpoints) = input.get("checkpoints") {
        let pair = checkpoints
            .as_array()
            .filter(|c| c.len() == 2)
            .ok_or_else(|| bad("`checkpoints` must hold two checkpoints"))?;
        let fork = mission::detect_fork(&pair[0], &pair[1]);
        let reason = if fork { "fork_detected" } else { "ok" };
        return Ok(Value::object([("fork", fork.into()), ("reason", reason.into())]));
    }
    let events = field(input, "events")?.as_array().ok_or_else(|| bad("`events` not an array"))?;
    // `keys: null` (or no keys) means signatures are not checked (the reference's
    // `verify_chain(events, None)`); a checkpoint then has no key to verify against.
    let keys = match input.get("keys") {
        None | Some(Value::Null) => None,
        Some(k) => Some(KeySet::from_value(k)?),
    };
    let chain = mission::verify_chain(events, keys.as_ref());
    if let Some(checkpoint) = input.get("checkpoint") {
        if let Err(e) = chain {
            return Ok(Value::object([("ok", false.into()), ("reason", e.reason().into())]));
        }
        let verdict = mission::verify_checkpoint(events, checkpoint, &keys.unwrap_or_default());
        return Ok(Value::object([
            ("ok", verdict.is_ok().into()),
            ("reason", verdict.reason().into()),
        ]));
    }
    Ok(match chain {
        Ok(head) => {
            Value::object([("ok", true.into()), ("reason", "ok".into()), ("head", head.into())])
        }
        Err(e) => Value::object([("ok", false.into()), ("reason", e.reason().into())]),
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
    Ok(Value::object([("allowed", allowed.into())]))
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

fn num(v: &Value, what: &str) -> Result<f64, RunError> {
    envelope::finite(v).ok_or_else(|| RunError::BadInput(format!("`{what}` is not a number")))
}

fn float_value(x: f64) -> Value {
    canonical_json::Finite::new(x).map_or(Value::Null, Value::from)
}

fn run_units(input: &Value) -> Result<Value, RunError> {
    if let Some(q) = input.get("quantity") {
        let ok = units::quantity_problems(q, "").is_empty();
        return Ok(Value::object([("schemaValid", ok.into())]));
    }
    let value = num(field(input, "value")?, "value")?;
    let density = match input.get("density") {
        None | Some(Value::Null) => None,
        Some(d) => Some(num(d, "density")?),
    };
    let vocab = Vocabulary::builtin();
    match units::convert(vocab, value, str_field(input, "unit")?, str_field(input, "to")?, density)
    {
        Ok(x) => Ok(Value::object([("value", float_value(units::round6(x)))])),
        Err(e) => Ok(Value::object([("error", e.code().into())])),
    }
}

/// `{t, tempC}` readings to temperatures.
pub fn trace_temps(readings: &Value) -> Result<Vec<f64>, RunError> {
    let items = readings.as_array().ok_or_else(|| bad("`readings` is not an array"))?;
    items
        .iter()
        .enumerate()
        .map(|(i, r)| {
            r.get("tempC")
                .and_then(envelope::finite)
                .ok_or_else(|| RunError::BadInput(format!("readings/{i}/tempC is not a number")))
        })
        .collect()
}

/// `{value, tolerance?}` (or null) to a [`Target`].
pub fn trace_target(target: Option<&Value>) -> Result<Option<Target>, RunError> {
    match target {
        None | Some(Value::Null) => Ok(None),
        Some(t) => Ok(Some(Target {
            value: num(field(t, "value")?, "target.value")?,
            tolerance: match t.get("tolerance") {
                None => 0.0,
                Some(x) => num(x, "target.tolerance")?,
            },
        })),
    }
}

fn run_envelope(input: &Value) -> Result<Value, RunError> {
    let vocab = Vocabulary::builtin();
    let op = str_field(input, "op")?;
    if let Some(sensors) = input.get("sensors") {
        let set = sensors
            .as_array()
            .ok_or_else(|| bad("`sensors` is not an array"))?
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        let allow_model = input.get("allowModel").and_then(Value::as_bool).unwrap_or(true);
        let human = input.get("humanPresent").and_then(Value::as_bool).unwrap_or(false);
        let choice = envelope::ladder_choice(vocab, op, &set, allow_model, human);
        return Ok(Value::object([("choice", choice.map_or(Value::Null, Value::from))]));
    }
    let temps = trace_temps(field(input, "readings")?)?;
    let target = trace_target(input.get("target"))?;
    let altitude = match input.get("altitudeM") {
        None | Some(Value::Null) => 0.0,
        Some(a) => num(a, "altitudeM")?,
    };
    let verdict = envelope::check_envelope(vocab, op, &temps, target, altitude)
        .map_err(|e| bad(&e.to_string()))?;
    Ok(verdict.to_value())
}

fn vector_now(input: &Value) -> Result<crate::time::Instant, RunError> {
    let text = input.get("now").and_then(Value::as_str).unwrap_or(VECTOR_NOW);
    parse_timestamp(text).map_err(|_| bad("invalid_timestamp"))
}

fn run_dryrun(input: &Value) -> Result<Value, RunError> {
    let vocab = Vocabulary::builtin();
    let limits = input.get("limits").filter(|l| !l.is_null());
    let options = dryrun::Options {
        human_present: input.get("humanPresent").and_then(Value::as_bool).unwrap_or(false),
        allow_model: input.get("allowModel").and_then(Value::as_bool).unwrap_or(true),
        limits,
        now: vector_now(input)?,
    };
    let result =
        dryrun::dry_run(vocab, field(input, "recipe")?, field(input, "capabilities")?, options)
            .map_err(|e| bad(&e.to_string()))?;
    let reason = result.refusal.as_ref().map_or(Value::Null, |r| r.reason.as_str().into());
    let by = Value::Array(result.plan.iter().map(|r| r.by.as_str().into()).collect());
    Ok(Value::object([("state", result.state().into()), ("reason", reason), ("by", by)]))
}

fn run_sensor_trust(kind: &str, input: &Value) -> Result<Value, RunError> {
    match kind {
        "sensor_trust" => {
            let now = vector_now(input)?;
            let sensors = envelope::trusted_sensors(field(input, "capabilities")?, now);
            let allow_model = input.get("allowModel").and_then(Value::as_bool).unwrap_or(true);
            let human = input.get("humanPresent").and_then(Value::as_bool).unwrap_or(false);
            let choice = envelope::ladder_choice(
                Vocabulary::builtin(),
                str_field(input, "op")?,
                &sensors,
                allow_model,
                human,
            );
            Ok(Value::object([("choice", choice.map_or(Value::Null, Value::from))]))
        }
        "plausibility" => {
            let readings = field(input, "readings")?.as_array().ok_or_else(|| bad("readings"))?;
            let sensors = input.get("sensors").and_then(Value::as_array).unwrap_or_default();
            let p = envelope::check_plausibility(readings, sensors, 1.0);
            Ok(Value::object([("ok", p.ok.into()), ("reason", p.reason.into())]))
        }
        other => Err(RunError::UnknownKind(other.to_owned())),
    }
}

fn vector_subject(input: &Value) -> Option<&str> {
    input.get("subjectHash").and_then(Value::as_str)
}

fn run_certification(kind: &str, input: &Value) -> Result<Value, RunError> {
    let keys = KeySet::from_value(field(input, "keys")?)?;
    let now = vector_now(input)?;
    match kind {
        "certification" => {
            let reason = certification::verify(
                field(input, "certification")?,
                &keys,
                now,
                vector_subject(input),
            );
            Ok(Value::object([("ok", reason.is_ok().into()), ("reason", reason.as_str().into())]))
        }
        "certification_set" => {
            let certs = field(input, "certifications")?
                .as_array()
                .ok_or_else(|| bad("`certifications` is not an array"))?;
            Ok(certification::current(certs, &keys, now, vector_subject(input)).to_value())
        }
        other => Err(RunError::UnknownKind(other.to_owned())),
    }
}

fn run_disclosure_policy(input: &Value) -> Result<Value, RunError> {
    let facets =
        field(input, "facets")?.as_array().ok_or_else(|| bad("`facets` is not an array"))?;
    let ids: Vec<&str> = facets
        .iter()
        .map(|f| {
            f.get("facet").and_then(Value::as_str).ok_or_else(|| bad("facet without `facet` id"))
        })
        .collect::<Result<_, _>>()?;
    let consents = match input.get("consents") {
        None | Some(Value::Null) => Vec::new(),
        Some(c) => c
            .as_array()
            .ok_or_else(|| bad("`consents` is not an array"))?
            .iter()
            .map(|g| household::ConsentGrant::from_value(g).map_err(|e| bad(&e.to_string())))
            .collect::<Result<_, _>>()?,
    };
    let derivation = household::derive(
        &household::Facets::builtin(),
        &household::Roles::builtin(),
        &ids,
        str_field(input, "recipientRole")?,
        &consents,
    );
    Ok(derivation.to_value())
}

fn run_federation(input: &Value) -> Result<Value, RunError> {
    let keys = KeySet::from_value(field(input, "keys")?)?;
    let reason = federation::verify_relayed(field(input, "document")?, &keys);
    Ok(Value::object([("ok", reason.is_ok().into()), ("reason", reason.as_str().into())]))
}

fn run_registry(kind: &str, input: &Value) -> Result<Value, RunError> {
    match kind {
        "registry_name" => {
            let result = match input.get("name").and_then(Value::as_str) {
                Some(name) => registry::check_name(name),
                None => Err(registry::NameProblem::Length),
            };
            let reason = result.map_or_else(registry::NameProblem::code, |()| "ok");
            Ok(Value::object([("valid", result.is_ok().into()), ("reason", reason.into())]))
        }
        "registry_version" => {
            let Some(version) = input.get("version").and_then(Value::as_str) else {
                return Ok(Value::object([
                    ("exact", false.into()),
                    ("reason", "not_a_string".into()),
                ]));
            };
            let result = registry::check_version(version);
            let reason = result.map_or_else(registry::VersionProblem::code, |()| "ok");
            Ok(Value::object([("exact", result.is_ok().into()), ("reason", reason.into())]))
        }
        other => Err(RunError::UnknownKind(other.to_owned())),
    }
}

/// What a ConformanceReport says about who ran it.
#[derive(Clone, Copy, Debug)]
pub struct ReportInfo<'a> {
    /// The conformance class claimed (`verifier`, `executor`, …).
    pub claim: &'a str,
    /// The tool's name.
    pub tool: &'a str,
    /// The tool's version.
    pub version: &'a str,
    /// The day it ran (`YYYY-MM-DD`).
    pub date: &'a str,
}

/// An unsigned ConformanceReport (COOKWALA.md §8.3) for `suites` run from the files whose
/// vectors hash is `vectors_hash`, with its `hash` set; sign it with
/// [`crate::signature::attach`].
///
/// # Errors
/// [`RunError::BadInput`] when the report cannot be hashed.
pub fn report(
    suites: &[SuiteReport],
    vectors_hash: &str,
    info: ReportInfo<'_>,
) -> Result<Value, RunError> {
    let mut tool = Map::new();
    tool.insert("name".into(), info.tool.into());
    tool.insert("version".into(), info.version.into());
    let mut m = Map::new();
    m.insert("profile".into(), "0.1.0".into());
    m.insert("kind".into(), "ConformanceReport".into());
    m.insert("claim".into(), info.claim.into());
    m.insert("suites".into(), Value::Array(suites.iter().map(SuiteReport::to_value).collect()));
    m.insert("vectorsHash".into(), vectors_hash.into());
    m.insert("tool".into(), Value::Object(tool));
    m.insert("date".into(), info.date.into());
    m.insert("status".into(), "self_declared".into());
    let mut doc = Value::Object(m);
    let hash = document_hash(&doc).map_err(|e| bad(&e.to_string()))?;
    if let Some(m) = doc.as_object_mut() {
        m.insert("hash".into(), hash.into());
    }
    Ok(doc)
}

/// The outcome of [`verify_report`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportCheck {
    /// The report signature's verification reason.
    pub signature: crate::signature::Reason,
    /// The vectors hash of the suites the report lists, recomputed from the files.
    pub vectors_hash: Option<String>,
    /// Everything wrong with the report, in check order; empty when it holds.
    pub problems: Vec<String>,
}

impl ReportCheck {
    /// True when the report holds.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Checks a signed ConformanceReport (COOKWALA.md §8.3) against the vector files it claims
/// to have run:
///
/// 1. the fields a report needs (`profile`, `claim`, `suites`, `vectorsHash`, `tool`, `date`,
///    `status`, `hash`, `signature`);
/// 2. `hash` is the report's document hash, and the signature verifies with `keys`;
/// 3. `vectorsHash` is the hash of the listed suites' files; when every file of `files` is
///    listed it must also equal `published` (the set's `VECTORS-HASH.txt`);
/// 4. counts: each listed suite exists in `files`, once; `total` is its number of vectors,
///    `passed + |failed| = total`, and each failed id is one of its vectors;
/// 5. a report that claims a class lists no failures.
pub fn verify_report(
    report: &Value,
    keys: &KeySet,
    files: &[(String, Value)],
    published: Option<&str>,
) -> ReportCheck {
    let mut problems = Vec::new();
    for name in
        ["profile", "claim", "suites", "vectorsHash", "tool", "date", "status", "hash", "signature"]
    {
        if report.get(name).is_none_or(Value::is_null) {
            problems.push(format!("missing `{name}`"));
        }
    }
    match (report.get("hash").and_then(Value::as_str), document_hash(report)) {
        (Some(stated), Ok(ours)) if stated != ours => {
            problems.push(format!("hash {stated} is not the report's document hash {ours}"));
        }
        (_, Err(e)) => problems.push(format!("the report cannot be hashed: {e}")),
        _ => {}
    }
    let signature = verify_signature(report, keys, SignedKind::Document).reason;
    if !signature.is_ok() {
        problems.push(format!("signature: {}", signature.as_str()));
    }
    let suites = report.get("suites").and_then(Value::as_array).unwrap_or_default();
    let mut listed: Vec<(String, Value)> = Vec::new();
    let mut any_failed = false;
    for (i, entry) in suites.iter().enumerate() {
        let Some(name) = entry.get("suite").and_then(Value::as_str) else {
            problems.push(format!("suites/{i}: no `suite` name"));
            continue;
        };
        if listed.iter().any(|(n, _)| n == name) {
            problems.push(format!("suite {name} is listed twice"));
            continue;
        }
        let Some((_, content)) = files.iter().find(|(n, _)| n == name) else {
            problems.push(format!("suite {name} is not in the vector set"));
            continue;
        };
        listed.push((name.to_owned(), content.clone()));
        let ids: Vec<&str> = content
            .as_array()
            .unwrap_or_default()
            .iter()
            .filter_map(|v| v.get("id").and_then(Value::as_str))
            .collect();
        let total = entry.get("total").and_then(Value::as_i64);
        let passed = entry.get("passed").and_then(Value::as_i64);
        let failed: Vec<&str> = entry
            .get("failed")
            .and_then(Value::as_array)
            .unwrap_or_default()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        any_failed |= !failed.is_empty();
        if total != i64::try_from(ids.len()).ok() {
            problems.push(format!("suite {name}: total {total:?}, the file has {}", ids.len()));
        }
        match (total, passed) {
            (Some(t), Some(p)) if p >= 0 && i64::try_from(failed.len()).ok() == Some(t - p) => {}
            _ => problems.push(format!(
                "suite {name}: passed {passed:?} and {} failed do not add up to total {total:?}",
                failed.len()
            )),
        }
        any_failed |= matches!((total, passed), (Some(t), Some(p)) if p < t);
        for id in &failed {
            if !ids.contains(id) {
                problems.push(format!("suite {name}: failed id {id} is not one of its vectors"));
            }
        }
    }
    let ours = if listed.is_empty() { None } else { vectors_hash(&listed).ok() };
    let stated = report.get("vectorsHash").and_then(Value::as_str);
    match (&ours, stated) {
        (Some(ours), Some(stated)) if ours != stated => problems
            .push(format!("vectorsHash {stated} is not the hash of the listed suites ({ours})")),
        (None, _) => problems.push("no suite of the vector set is listed".to_owned()),
        _ => {}
    }
    if let (Some(ours), Some(published)) = (&ours, published)
        && listed.len() == files.len()
        && ours != published
    {
        problems.push(format!("the vectors hash {ours} is not the published {published}"));
    }
    let claims = report.get("claim").and_then(Value::as_str).is_some_and(|c| !c.is_empty());
    if claims && any_failed {
        problems.push("a report that lists failures may not claim a class".to_owned());
    }
    ReportCheck { signature, vectors_hash: ours, problems }
}
