//! `GET /v1/conformance`: the hub's conformance claim and its signed ConformanceReport.
//!
//! The report is built once, at start-up, by running the Core vector files of a conformance
//! folder (`HubConfig::conformance`, the standard's `conformance/`) through
//! `cookwala::conformance`; nothing of the vectors is compiled into the hub. When the folder has
//! a `VECTORS-HASH.txt`, the whole vector set must hash to it (COOKWALA.md §8.2), so the report
//! can only come from the published vectors. The report's `vectorsHash` is the hash of the
//! vectors actually run (the eight Core suites and every profile suite of the folder this build
//! implements), as the schema defines it; `notes` names the published set they belong to. The
//! report's `claim` is the Core class; `/v1/conformance` also lists the profile suites that
//! pass (`profiles`) and adds their conformance classes to `claims`. It is signed with the hub key (`HubConfig::key`), whose
//! KeyRecord `/.well-known/cookwala.json` publishes.
//!
//! Without a folder or without a key there is no report (`null`) and `note` says how to get one.

use std::path::{Path, PathBuf};

use canonical_json::{Map, Value};
use cookwala::conformance::{self, CORE_SUITES, SuiteReport};
use cookwala::signature::{SignedKind, attach};
use cookwala::time::Instant;

use crate::identity::HubKey;

/// The conformance class the hub claims.
pub const CLAIM: &str = "executor";

/// The Core version the vectors belong to (the 0.2.1 signature revision).
const REPORT_CORE: &str = "0.2.1";

/// A conformance folder that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("conformance vectors: {}: {why}", path.display())]
pub struct ConformanceError {
    /// The file or folder at fault.
    pub path: PathBuf,
    /// What is wrong.
    pub why: String,
}

fn fail(path: &Path, why: impl Into<String>) -> ConformanceError {
    ConformanceError { path: path.to_owned(), why: why.into() }
}

/// Builds the `/v1/conformance` body for `config` (runs the vectors on the blocking pool).
pub(crate) async fn claim(
    folder: Option<PathBuf>,
    key: Option<HubKey>,
    device: &Value,
    now_ms: i64,
) -> Result<Value, ConformanceError> {
    let Some(dir) = folder else {
        return Ok(body(
            vec![CLAIM],
            Value::Null,
            "self-declared, no report: start the hub with `cookwala serve --conformance DIR` \
             (DIR = the standard's conformance/ folder) to run the Core vectors at start-up and \
             publish a signed ConformanceReport here"
                .to_owned(),
        ));
    };
    let Some(key) = key else {
        return Ok(body(
            vec![CLAIM],
            Value::Null,
            "self-declared, no report: the hub has no signing key (HubConfig::key), and a \
             ConformanceReport must be signed"
                .to_owned(),
        ));
    };
    let capabilities_hash = canonical_json::digest::document_hash(device).ok();
    let now = Instant::from_unix(now_ms.div_euclid(1000), 0)
        .ok_or_else(|| fail(&dir, "the clock is out of range"))?;
    let at = dir.clone();
    let built = tokio::task::spawn_blocking(move || {
        build_report(&dir, &key, capabilities_hash.as_deref(), now)
    })
    .await
    .map_err(|e| fail(&at, format!("the vectors did not run: {e}")))??;
    let passed: usize = built.suites.iter().map(|s| s.passed).sum();
    let total: usize = built.suites.iter().map(|s| s.total).sum();
    // Every profile suite that passes whole, and the conformance classes they support.
    let passing: Vec<&SuiteReport> =
        built.profiles.iter().filter(|s| s.passed == s.total && s.total > 0).collect();
    let profiles: Vec<Value> =
        passing.iter().map(|s| Value::from(s.suite.trim_start_matches("profiles/"))).collect();
    crate::clock::note(format_args!(
        "cookwala-hub: conformance: {} Core suites, {passed}/{total} vectors passed; {}/{} profile suites passed; signed report at /v1/conformance",
        built.suites.len(),
        passing.len(),
        built.profiles.len()
    ));
    let all_passed = passed == total;
    let note = if all_passed {
        format!(
            "self-declared: the hub ran the {} Core conformance suites ({total} vectors, all \
             passed) at start-up; the report is signed with the hub key published at \
             /.well-known/cookwala.json (check it with `cookwala verify --keys cookwala.json \
             report.json`)",
            built.suites.len()
        )
    } else {
        format!(
            "no claim: {} of {total} Core vectors failed at start-up (see report.suites), and a \
             report that fails a vector of a class may not claim that class",
            total - passed
        )
    };
    let mut claims = if all_passed { vec![CLAIM] } else { Vec::new() };
    for suite in &passing {
        if let Some((_, Some(class))) =
            conformance::PROFILE_SUITES.iter().find(|(name, _)| *name == suite.suite)
        {
            claims.push(class);
        }
    }
    let mut out = body(claims, built.report, note);
    if let Some(m) = out.as_object_mut() {
        m.insert("profiles".into(), Value::Array(profiles));
    }
    Ok(out)
}

fn body(claims: Vec<&str>, report: Value, note: String) -> Value {
    let mut m = Map::new();
    m.insert("claims".into(), Value::Array(claims.into_iter().map(Value::from).collect()));
    m.insert("profiles".into(), Value::Array(Vec::new()));
    m.insert("report".into(), report);
    m.insert("note".into(), note.into());
    Value::Object(m)
}

struct Built {
    report: Value,
    /// The Core suites.
    suites: Vec<SuiteReport>,
    /// The profile suites of the folder this build runs.
    profiles: Vec<SuiteReport>,
}

fn read_json(path: &Path) -> Result<Value, ConformanceError> {
    let bytes = std::fs::read(path).map_err(|e| fail(path, format!("cannot read: {e}")))?;
    canonical_json::parse(&bytes).map_err(|e| fail(path, format!("not valid JSON: {e}")))
}

/// Every vector file of the folder with its suite name: the Core files, then `profiles/*.json`.
fn all_files(dir: &Path) -> Result<Vec<(String, Value)>, ConformanceError> {
    let mut files = Vec::new();
    for suite in CORE_SUITES {
        files.push((suite.to_owned(), read_json(&dir.join(format!("{suite}.json")))?));
    }
    let profiles = dir.join("profiles");
    if profiles.is_dir() {
        let entries = std::fs::read_dir(&profiles)
            .map_err(|e| fail(&profiles, format!("cannot list: {e}")))?;
        let mut found = Vec::new();
        for entry in entries {
            let path = entry.map_err(|e| fail(&profiles, format!("cannot list: {e}")))?.path();
            if path.extension().is_some_and(|x| x == "json")
                && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
            {
                found.push((format!("profiles/{stem}"), path));
            }
        }
        found.sort();
        for (name, path) in found {
            files.push((name, read_json(&path)?));
        }
    }
    Ok(files)
}

fn build_report(
    dir: &Path,
    key: &HubKey,
    capabilities_hash: Option<&str>,
    now: Instant,
) -> Result<Built, ConformanceError> {
    if !dir.is_dir() {
        return Err(fail(dir, "not a folder of conformance vectors"));
    }
    let mut core = Vec::new();
    for suite in CORE_SUITES {
        let path = dir.join(format!("{suite}.json"));
        if !path.is_file() {
            return Err(fail(&path, "missing: a conformance folder holds every Core suite file"));
        }
        core.push((suite.to_owned(), read_json(&path)?));
    }
    // The published identity of the whole set, when the folder carries it.
    let published_file = dir.join("VECTORS-HASH.txt");
    let published = match std::fs::read_to_string(&published_file) {
        Ok(text) => {
            let published = text.trim().to_owned();
            let ours = conformance::vectors_hash(&all_files(dir)?)
                .map_err(|e| fail(dir, e.to_string()))?;
            if ours != published {
                return Err(fail(
                    &published_file,
                    format!("the vectors hash to {ours}, not to the published {published}"),
                ));
            }
            Some(published)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(fail(&published_file, format!("cannot read: {e}"))),
    };
    let mut suites = Vec::new();
    for (name, vectors) in &core {
        let path = dir.join(format!("{name}.json"));
        suites.push(conformance::run_suite(name, vectors).map_err(|e| fail(&path, e.to_string()))?);
    }
    // The profile suites of the folder this build implements.
    let mut run_files = core.clone();
    let mut profiles = Vec::new();
    for (name, vectors) in all_files(dir)? {
        if name.starts_with("profiles/") && conformance::is_supported(&name) {
            profiles.push(
                conformance::run_suite(&name, &vectors).map_err(|e| fail(dir, e.to_string()))?,
            );
            run_files.push((name, vectors));
        }
    }
    let used = conformance::vectors_hash(&run_files).map_err(|e| fail(dir, e.to_string()))?;

    let stamp = now.to_rfc3339();
    let date = stamp.get(..10).unwrap_or(&stamp).to_owned();
    let version = env!("CARGO_PKG_VERSION");
    let mut subject = Map::new();
    subject.insert("name".into(), "cookwala-hub".into());
    subject.insert("vendor".into(), "cookwala-rs".into());
    subject.insert("version".into(), version.into());
    if let Some(h) = capabilities_hash {
        subject.insert("capabilitiesHash".into(), h.into());
    }
    let mut tool = Map::new();
    tool.insert("name".into(), "cookwala-hub".into());
    tool.insert("version".into(), version.into());
    let notes = match &published {
        Some(p) => format!(
            "Run at hub start-up: the {} Core suites and {} profile suites of the published \
             vector set {p} (VECTORS-HASH.txt); the claim is the Core class, the profile \
             classes are listed with /v1/conformance claims.",
            core.len(),
            profiles.len()
        ),
        None => format!(
            "Run at hub start-up: the {} Core suites and {} profile suites of a vector folder \
             without VECTORS-HASH.txt; the claim is the Core class.",
            core.len(),
            profiles.len()
        ),
    };
    let mut report = Map::new();
    report.insert("profile".into(), "0.1.0".into());
    report.insert("kind".into(), "ConformanceReport".into());
    report.insert("id".into(), format!("report-{date}-cookwala-hub").into());
    report.insert("core".into(), REPORT_CORE.into());
    report.insert("claim".into(), CLAIM.into());
    report.insert("subject".into(), Value::Object(subject));
    report.insert(
        "suites".into(),
        Value::Array(suites.iter().chain(&profiles).map(SuiteReport::to_value).collect()),
    );
    report.insert("vectorsHash".into(), used.into());
    report.insert("tool".into(), Value::Object(tool));
    report.insert("date".into(), date.into());
    report.insert("status".into(), "self_declared".into());
    report.insert("notes".into(), notes.into());
    let mut report = Value::Object(report);
    let hash =
        canonical_json::digest::document_hash(&report).map_err(|e| fail(dir, e.to_string()))?;
    if let Some(m) = report.as_object_mut() {
        m.insert("hash".into(), hash.into());
    }
    let report = attach(&report, key.signing_key(), key.kid(), &stamp, SignedKind::Document)
        .map_err(|e| fail(dir, format!("cannot sign the report: {e}")))?;
    Ok(Built { report, suites, profiles })
}
