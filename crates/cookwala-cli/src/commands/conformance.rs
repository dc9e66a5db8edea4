//! `cookwala conformance run`: the standard's vector files against this build.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use canonical_json::{Map, Value};
use cookwala::conformance::{self, CORE_SUITES, RunError, SuiteReport};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

use crate::commands::{batch, rules};
use crate::input::read_json;
use crate::output::compact;

/// One suite to run: its name and file.
#[derive(Debug)]
struct SuiteFile {
    name: String,
    path: PathBuf,
}

/// Every suite file present in `dir`: the Core files, then `profiles/*.json` sorted.
fn discover(dir: &Path) -> Result<Vec<SuiteFile>> {
    if !dir.is_dir() {
        bail!("{} is not a folder of conformance vectors", dir.display());
    }
    let mut suites: Vec<SuiteFile> = CORE_SUITES
        .iter()
        .map(|name| SuiteFile { name: (*name).to_owned(), path: dir.join(format!("{name}.json")) })
        .filter(|s| s.path.is_file())
        .collect();
    let profiles = dir.join("profiles");
    if profiles.is_dir() {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&profiles)
            .with_context(|| format!("cannot list {}", profiles.display()))?
        {
            let path = entry.with_context(|| format!("cannot list {}", profiles.display()))?.path();
            if path.extension().is_some_and(|e| e == "json")
                && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
            {
                found.push(SuiteFile { name: format!("profiles/{stem}"), path });
            }
        }
        found.sort_by(|a, b| a.name.cmp(&b.name));
        suites.extend(found);
    }
    if suites.is_empty() {
        bail!("no vector files found in {}", dir.display());
    }
    Ok(suites)
}

/// Where and how to write a signed ConformanceReport after a run.
#[derive(Debug)]
pub struct ReportArgs {
    /// The report file.
    pub out: PathBuf,
    /// The signing key file (`cookwala keygen`).
    pub key: PathBuf,
    /// The class claimed.
    pub claim: String,
}

/// Runs the selected suites; prints per-suite lines and a total. Returns whether all passed.
/// With `report`, also writes a signed ConformanceReport, but only when every vector passed (a
/// report that fails a vector may not claim a class).
pub fn run(
    dir: &Path,
    selected: &[String],
    json: bool,
    jobs: usize,
    report: Option<&ReportArgs>,
) -> Result<bool> {
    let available = discover(dir)?;
    let suites: Vec<&SuiteFile> = if selected.is_empty() {
        available.iter().collect()
    } else {
        let mut picked = Vec::new();
        for name in selected {
            match available.iter().find(|s| &s.name == name) {
                Some(suite) => picked.push(suite),
                None => bail!(
                    "no suite {name:?} in {} (available: {})",
                    dir.display(),
                    available.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
                ),
            }
        }
        picked
    };
    let loaded: Vec<(String, Value)> =
        suites.iter().map(|s| Ok((s.name.clone(), read_json(&s.path)?))).collect::<Result<_>>()?;
    let total_vectors: usize = loaded.iter().map(|(_, v)| v.as_array().map_or(0, <[_]>::len)).sum();
    let progress = ProgressBar::new(total_vectors as u64);
    progress.set_style(
        ProgressStyle::with_template("{spinner} {msg:24} [{bar:30}] {pos}/{len}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    // Suites are independent: they run on `jobs` workers and are reported in their order, so
    // the output is the same for any number of workers.
    progress.set_message(format!("{} suites", loaded.len()));
    let reports: Vec<SuiteReport> = batch::pool(jobs)?.install(|| {
        loaded
            .par_iter()
            .map(|(name, vectors)| {
                let report = run_one(name, vectors)?;
                progress.inc(report.total as u64);
                Ok(report)
            })
            .collect::<Result<_>>()
    })?;
    progress.finish_and_clear();

    let hash_ok = !selected.is_empty() || check_vectors_hash(dir, &available)?;
    let passed: usize = reports.iter().map(|r| r.passed).sum();
    let failed: usize = reports.iter().map(|r| r.total - r.passed).sum();
    if json {
        let suites: Vec<Value> = reports
            .iter()
            .map(|r| {
                let mut map = Map::new();
                map.insert("suite".into(), r.suite.as_str().into());
                map.insert("total".into(), Value::from(r.total));
                map.insert("passed".into(), Value::from(r.passed));
                map.insert(
                    "failed".into(),
                    Value::Array(r.failed.iter().map(|id| id.as_str().into()).collect()),
                );
                Value::Object(map)
            })
            .collect();
        let mut out = Map::new();
        out.insert("suites".into(), Value::Array(suites));
        out.insert("passed".into(), Value::from(passed));
        out.insert("failed".into(), Value::from(failed));
        println!("{}", compact(&Value::Object(out))?);
    } else {
        for r in &reports {
            println!("{}: {}/{} passed", r.suite, r.passed, r.total);
        }
        println!("{passed} passed, {failed} failed");
    }
    if let Some(args) = report {
        if failed > 0 || !hash_ok {
            eprintln!(
                "error: no report written: {failed} vectors failed or the vectors hash differs, \
                 and a report that fails may not claim {}",
                args.claim
            );
            return Ok(false);
        }
        write_report(&loaded, &reports, args)?;
    }
    Ok(failed == 0 && hash_ok)
}

fn write_report(
    loaded: &[(String, Value)],
    reports: &[SuiteReport],
    args: &ReportArgs,
) -> Result<()> {
    let (kid, key) = crate::commands::keys::load_signing_key(&args.key)?;
    let hash = conformance::vectors_hash(loaded).context("cannot compute the vectors hash")?;
    let now = crate::clock::now_rfc3339();
    let info = conformance::ReportInfo {
        claim: &args.claim,
        tool: "cookwala",
        version: env!("CARGO_PKG_VERSION"),
        date: now.get(..10).unwrap_or(&now),
    };
    let unsigned = conformance::report(reports, &hash, info).context("cannot build the report")?;
    let signed = cookwala::signature::attach(
        &unsigned,
        &key,
        &kid,
        &now,
        cookwala::signature::SignedKind::Document,
    )
    .context("cannot sign the report")?;
    crate::output::emit(&signed, Some(&args.out))?;
    eprintln!("signed report written to {} (kid {kid})", args.out.display());
    Ok(())
}

/// A suite this build cannot run counts every vector as failed (never as skipped).
fn run_one(name: &str, vectors: &Value) -> Result<SuiteReport> {
    match conformance::run_suite(name, vectors) {
        Ok(report) => Ok(report),
        Err(RunError::Unsupported(_)) => {
            let items = vectors.as_array().map(<[_]>::to_vec).unwrap_or_default();
            eprintln!(
                "note: suite {name} is not implemented in this build; its vectors count as failed"
            );
            Ok(SuiteReport {
                suite: name.to_owned(),
                total: items.len(),
                passed: 0,
                failed: items
                    .iter()
                    .map(|v| v.get("id").and_then(Value::as_str).unwrap_or("<no id>").to_owned())
                    .collect(),
            })
        }
        Err(e) => Err(e).with_context(|| format!("suite {name} cannot be run")),
    }
}

/// When every suite ran, the set's identity must match `VECTORS-HASH.txt` (if present).
fn check_vectors_hash(dir: &Path, available: &[SuiteFile]) -> Result<bool> {
    let published = dir.join("VECTORS-HASH.txt");
    let Ok(text) = std::fs::read_to_string(&published) else { return Ok(true) };
    let files: Vec<(String, Value)> = available
        .iter()
        .map(|s| Ok((s.name.clone(), read_json(&s.path)?)))
        .collect::<Result<_>>()?;
    let ours = conformance::vectors_hash(&files).context("cannot compute the vectors hash")?;
    if ours != text.trim() {
        eprintln!(
            "error: vectors hash {ours} differs from {} ({})",
            published.display(),
            text.trim()
        );
        return Ok(false);
    }
    eprintln!("vectors hash matches {}: {ours}", published.display());
    Ok(true)
}

/// Every vector file of `dir` with its suite name.
fn load_all(dir: &Path) -> Result<Vec<(String, Value)>> {
    discover(dir)?.iter().map(|s| Ok((s.name.clone(), read_json(&s.path)?))).collect()
}

/// `cookwala conformance run --vectors DIR --verify-report FILE --keys K`: checks a signed
/// ConformanceReport against the vector files (hash, signature, vectorsHash, counts).
/// Prints `ok` or one problem per line; returns whether the report holds.
pub fn verify_report(dir: &Path, report: &Path, keys: &[PathBuf], json: bool) -> Result<bool> {
    let files = load_all(dir)?;
    let published =
        std::fs::read_to_string(dir.join("VECTORS-HASH.txt")).ok().map(|t| t.trim().to_owned());
    let keys = crate::commands::keys::load_keys(keys)?;
    let doc = read_json(report)?;
    let check = conformance::verify_report(&doc, &keys, &files, published.as_deref());
    if json {
        let mut out = Map::new();
        out.insert("ok".into(), check.is_ok().into());
        out.insert("signature".into(), check.signature.as_str().into());
        out.insert(
            "vectorsHash".into(),
            check.vectors_hash.as_deref().map_or(Value::Null, Value::from),
        );
        out.insert(
            "problems".into(),
            Value::Array(check.problems.iter().map(|p| p.as_str().into()).collect()),
        );
        println!("{}", compact(&Value::Object(out))?);
    } else if check.is_ok() {
        println!("ok");
    } else {
        for p in &check.problems {
            println!("{p}");
        }
    }
    Ok(check.is_ok())
}

/// The `cookwala conformance` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ConformanceCommand {
    /// Run vector files: one line per suite, then `N passed, M failed`
    ///
    /// Without --suite every Core file and every profiles/*.json file is run, and the set's
    /// vectors hash is checked against VECTORS-HASH.txt. A suite this build cannot run counts
    /// as failed, never as skipped.
    Run {
        /// Folder of vector files (the standard's conformance/ folder)
        #[arg(long)]
        vectors: PathBuf,
        /// Run only these suites (repeatable), e.g. hash, ledger, profiles/sensor_trust
        #[arg(long = "suite")]
        suites: Vec<String>,
        /// Print {"suites":[...],"passed","failed"}
        #[arg(long)]
        json: bool,
        /// Check this signed ConformanceReport against the vectors instead of running them:
        /// its hash, its signature (--keys), vectorsHash = the published hash, and counts
        #[arg(long, conflicts_with = "suites")]
        verify_report: Option<PathBuf>,
        /// Key set files for --verify-report (repeatable)
        #[arg(long, requires = "verify_report")]
        keys: Vec<PathBuf>,
        /// Also write a signed ConformanceReport here (only when every vector passes)
        #[arg(long, requires = "key", conflicts_with = "verify_report")]
        report: Option<PathBuf>,
        /// The private key file that signs --report (`cookwala keygen`)
        #[arg(long, requires = "report")]
        key: Option<PathBuf>,
        /// The conformance class the report claims
        #[arg(long, default_value = "verifier", requires = "report")]
        claim: String,
        /// Worker threads, one suite each at a time (default: the cores available); the
        /// output is the same for any N
        #[arg(long, value_name = "N")]
        jobs: Option<std::num::NonZeroUsize>,
    },
}

impl ConformanceCommand {
    /// Runs the subcommand; `Ok(false)` when a vector failed or the report does not hold.
    pub fn run(self) -> Result<bool> {
        match self {
            ConformanceCommand::Run {
                vectors,
                suites,
                json,
                verify_report: check,
                keys,
                report,
                key,
                claim,
                jobs,
            } => {
                let jobs = rules::jobs(jobs);
                match (check, report, key) {
                    (Some(file), _, _) => verify_report(&vectors, &file, &keys, json),
                    (None, Some(out), Some(key)) => {
                        let args = ReportArgs { out, key, claim };
                        run(&vectors, &suites, json, jobs, Some(&args))
                    }
                    (None, _, _) => run(&vectors, &suites, json, jobs, None),
                }
            }
        }
    }
}
