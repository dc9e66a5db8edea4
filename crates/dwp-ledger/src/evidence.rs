//! Evidence paths and the gate reuse cache (`evidence.jsonl`).
//!
//! An evidence pointer resolves inside the plan folder or the repository (never outside them,
//! by `..` or by symlink); the cache is appended one line per observed gate run.

use std::fs;
use std::path::{Path, PathBuf};

use canonical_json::Value;
use dwp::projection::{self, seq_of};
use dwp::py::repr_str;

use crate::error::{Result, fail};
use crate::files::safe_relative;
use crate::plan::{EVIDENCE_NAME, Plan};

/// Resolves an evidence pointer: absolute as given, else under the plan dir or repo root.
/// Relative pointers may not escape those roots (by `..` or by symlink).
pub(crate) fn resolve_evidence(plan: &Plan, pointer: &str) -> Option<PathBuf> {
    let p = Path::new(pointer);
    if p.is_absolute() {
        return p.is_file().then(|| p.to_path_buf());
    }
    if !safe_relative(pointer) {
        return None;
    }
    for base in [plan.dir.clone(), plan.repo_root()] {
        let full = base.join(p);
        if full.is_file()
            && let (Ok(real), Ok(real_base)) = (full.canonicalize(), base.canonicalize())
            && real.starts_with(&real_base)
        {
            return Some(full);
        }
    }
    None
}

/// The resolved artifact an `observed`/`imported` record (or a sign-off) cites.
///
/// # Errors
/// No pointer, or one that does not resolve inside the plan or the repository.
pub(crate) fn check_evidence_path(plan: &Plan, pointer: Option<&str>) -> Result<PathBuf> {
    let Some(pointer) = pointer.filter(|p| !p.is_empty()) else {
        return Err(fail(
            "trust=observed requires evidence_path — a recoverable pointer, never a bare claim",
        ));
    };
    resolve_evidence(plan, pointer).ok_or_else(|| {
        fail(format!(
            "evidence_path {} does not resolve inside the plan or the repository — \
             observed/imported records must cite an artifact that exists",
            repr_str(pointer)
        ))
    })
}

/// A cached result in `evidence.jsonl` for an exact fingerprint match of the same (task,
/// criterion) whose `gate_run` is on record in the task's evidence window.
pub(crate) fn lookup(
    plan: &Plan,
    events: &[Value],
    fingerprint: &str,
    task: &str,
    criterion: Option<&str>,
) -> Option<Value> {
    let raw = fs::read(plan.dir.join(EVIDENCE_NAME)).ok()?;
    let start = projection::task_start_seq_of(events, task);
    for line in raw.split(|b| *b == b'\n') {
        let Ok(rec) = canonical_json::parse(line) else { continue };
        if rec.get("fingerprint").and_then(Value::as_str) != Some(fingerprint)
            || rec.get("task").and_then(Value::as_str) != Some(task)
            || criterion.is_some_and(|c| rec.get("criterion").and_then(Value::as_str) != Some(c))
        {
            continue;
        }
        let in_record = events.iter().any(|e| {
            e.get("type").and_then(Value::as_str) == Some("gate_run")
                && e.get("seq").is_some()
                && e.get("seq") == rec.get("seq")
                && start.is_none_or(|st| seq_of(e) >= st)
        });
        if in_record {
            return Some(rec);
        }
    }
    None
}

/// Appends one cache line to `evidence.jsonl`, durably: one write, then `fdatasync`, and the
/// plan folder fsynced when the file is created ([`journal::append_synced`]).
pub(crate) fn append_record(path: &Path, bytes: &[u8]) -> Result<()> {
    journal::append_synced(path, bytes).map_err(|e| fail(e.to_string()))
}
