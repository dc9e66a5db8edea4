//! The disk side of the v6 context manifest (upstream `context_manifest.py`): touched-surface
//! hashes, the run fingerprints of the reuse cache and evidence-pointer resolution, fed to the
//! pure [`dwp::context_manifest`]. Read-only: no lock, no write.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use canonical_json::Value;
use dwp::context_manifest::{self as rules, ContextError, Inputs, SurfaceHashes};

use crate::error::LedgerError;
use crate::files::hash_file;
use crate::plan::{EVIDENCE_NAME, Plan};
use crate::records;

/// Why a context command failed (`ERROR:`, exit 1 either way).
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A refusal of the manifest rules.
    Context(ContextError),
    /// The records could not be read.
    Ledger(LedgerError),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Context(e) => e.fmt(f),
            Error::Ledger(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

impl From<ContextError> for Error {
    fn from(e: ContextError) -> Error {
        Error::Context(e)
    }
}

impl From<LedgerError> for Error {
    fn from(e: LedgerError) -> Error {
        Error::Ledger(e)
    }
}

type Result<T> = std::result::Result<T, Error>;

fn walk(dir: &Path, root: &Path, out: &mut SurfaceHashes) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let is_link = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
        if path.is_dir() && !is_link {
            walk(&path, root, out);
        } else if path.is_dir() {
            // A symlinked directory is listed as an entry (os.walk does not descend into it).
            continue;
        } else {
            let rel = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().into_owned();
            out.insert(rel, hash_file(&path));
        }
    }
}

/// Per-file content hashes of a task's declared touched surface; a directory expands to its
/// files, a missing entry hashes to `None`.
///
/// # Errors
/// The task is not in the contract.
pub fn surface_hashes(plan: &Plan, task: &str) -> Result<SurfaceHashes> {
    let root = plan.repo_root();
    let declared = rules::task_of(&plan.contract, task)?;
    let mut files = SurfaceHashes::new();
    for rel in rules::surface_entries(declared) {
        let path =
            if Path::new(&rel).is_absolute() { PathBuf::from(&rel) } else { root.join(&rel) };
        if path.is_dir() {
            walk(&path, &root, &mut files);
        } else {
            files.insert(rel.clone(), hash_file(&path));
        }
    }
    Ok(files)
}

/// `seq` → run fingerprint from `evidence.jsonl` (corrupt lines are skipped).
pub fn run_fingerprints(plan: &Plan) -> BTreeMap<i64, Value> {
    let mut found = BTreeMap::new();
    let Ok(text) = fs::read_to_string(plan.dir.join(EVIDENCE_NAME)) else { return found };
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let Ok(rec) = canonical_json::parse(line.as_bytes()) else { continue };
        if let Some(seq) = rec.get("seq").and_then(Value::as_i64).filter(|s| *s != 0) {
            found.insert(seq, rec.get("fingerprint").cloned().unwrap_or(Value::Null));
        }
    }
    found
}

/// Derives one task's manifest from the plan on disk.
///
/// # Errors
/// Unreadable records, an unknown task, a pruned mandatory section.
pub fn manifest(plan: &Plan, task: &str, sections: Option<&[String]>) -> Result<Value> {
    let events = records::load_events(plan)?;
    let files = surface_hashes(plan, task)?;
    let fps = run_fingerprints(plan);
    let root = plan.repo_root();
    let resolves = |p: &str| {
        plan.dir.join(p).is_file() || (!Path::new(p).is_absolute() && root.join(p).is_file())
    };
    let inputs = Inputs {
        contract: &plan.contract,
        contract_id: &plan.contract_id,
        events: &events,
        files: &files,
        run_fingerprints: &fps,
        pointer_resolves: &resolves,
    };
    Ok(rules::manifest(&inputs, task, sections)?)
}

/// Compares a stored summary with the task's current inputs fingerprint.
///
/// # Errors
/// An unknown task or a summary without a fingerprint.
pub fn freshness(plan: &Plan, task: &str, summary: &Value) -> Result<Value> {
    // The summary is judged first: an unattributable one is stale whatever the task.
    if !dwp::py::truthy(summary.get("inputs_fingerprint")) {
        return Err(ContextError::Unattributable.into());
    }
    let files = surface_hashes(plan, task)?;
    let current = rules::inputs_fingerprint(&plan.contract_id, &files);
    Ok(rules::freshness(summary, &current)?)
}

/// The four cost quantities; the measured instruction bytes are the first task's manifest.
/// Bundle paths are taken as given (relative to the working directory).
///
/// # Errors
/// Unreadable records, a contract without tasks.
pub fn accounting(plan: &Plan, bundle: &[String]) -> Result<Value> {
    let events = records::load_events(plan)?;
    let first = plan
        .contract
        .get("tasks")
        .and_then(Value::as_array)
        .and_then(|t| t.first())
        .and_then(|t| t.get("id"))
        .and_then(Value::as_str)
        .ok_or(ContextError::NoTasks)?
        .to_owned();
    let doc = manifest(plan, &first, None)?;
    let size =
        canonical_json::to_python(&doc, canonical_json::PyFormat::PRETTY).map_or(0, |b| b.len());
    let sizes: Vec<(String, Option<u64>)> = bundle
        .iter()
        .map(|rel| {
            let meta = fs::metadata(rel).ok().filter(fs::Metadata::is_file);
            (rel.clone(), meta.map(|m| m.len()))
        })
        .collect();
    Ok(rules::accounting(&events, size, &sizes))
}
