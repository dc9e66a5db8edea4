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
use crate::files::{normalize, safe_relative};
use crate::plan::{EVIDENCE_NAME, Plan};

/// Where an evidence pointer leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Located {
    /// An existing path inside the plan folder or the repository (after symlinks).
    Inside(PathBuf),
    /// Outside both (by an absolute path, by `..`, or by a symlink), or not a path at all.
    Outside,
    /// A path inside both roots, lexically, that does not exist.
    Missing,
}

/// Locates `pointer` against the plan folder and the repository root. Absolute pointers and
/// relative ones alike must resolve, after every symlink, under one of the two roots: the
/// upstream helper accepts any absolute path that is a file (`/etc/passwd`, `/proc/self/environ`),
/// which would hash and export files from anywhere on the machine.
pub(crate) fn locate(plan_dir: &Path, repo_root: &Path, pointer: &str) -> Located {
    let roots: Vec<PathBuf> =
        [plan_dir, repo_root].iter().filter_map(|r| r.canonicalize().ok()).collect();
    let inside = |real: &Path| roots.iter().any(|r| real.starts_with(r));
    let p = Path::new(pointer);
    if pointer.is_empty() || pointer.contains('\0') {
        return Located::Outside;
    }
    let candidates: Vec<PathBuf> = if p.is_absolute() {
        vec![p.to_path_buf()]
    } else if safe_relative(pointer) {
        vec![plan_dir.join(p), repo_root.join(p)]
    } else {
        return Located::Outside;
    };
    let mut outside = false;
    for full in candidates {
        match full.canonicalize() {
            Ok(real) if inside(&real) => return Located::Inside(full),
            Ok(_) => outside = true,
            // A path that does not exist: outside when its lexical form already leaves the
            // roots (an absolute pointer elsewhere), else merely missing.
            Err(_) => {
                let lexical = normalize(&full).unwrap_or_default();
                let lexical_roots = [plan_dir, repo_root].map(|r| normalize(r).unwrap_or_default());
                if !lexical_roots.iter().any(|r| lexical.starts_with(r)) {
                    outside = true;
                }
            }
        }
    }
    if outside { Located::Outside } else { Located::Missing }
}

/// Resolves an evidence pointer to an existing file inside the plan folder or the repository.
pub(crate) fn resolve_evidence(plan: &Plan, pointer: &str) -> Option<PathBuf> {
    match locate(&plan.dir, &plan.repo_root(), pointer) {
        Located::Inside(found) if found.is_file() => Some(found),
        _ => None,
    }
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
