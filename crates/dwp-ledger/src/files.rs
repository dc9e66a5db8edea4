//! File helpers shared by every part of the ledger: hashing, the atomic pretty write, the
//! symlink refusal, named JSON reads and path checks.

use std::fs;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

use canonical_json::Value;

use crate::error::{Result, fail, io_fail};

/// `time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())` for `now`.
pub fn timestamp(now: SystemTime) -> String {
    journal::utc_timestamp(now)
}

/// Lowercase sha256 hex of a file, or `None` when it is not a readable regular file.
pub fn hash_file(path: &Path) -> Option<String> {
    if !path.is_file() {
        return None;
    }
    fs::read(path).ok().map(|b| canonical_json::digest::sha256_hex(&b))
}

/// Writes `doc` in the `indent=2` + newline file form, atomically.
pub fn write_pretty(path: &Path, doc: &Value) -> Result<()> {
    let bytes = canonical_json::to_python_pretty(doc).map_err(|e| io_fail(path, e))?;
    journal::atomic_replace(path, &bytes).map_err(|e| fail(e.to_string()))
}

/// Refuses to write through a symbolic link: a plan's records never leave the plan folder.
///
/// # Errors
/// `path` is a symlink.
pub fn refuse_symlink(path: &Path) -> Result<()> {
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(fail(format!(
            "{} is a symbolic link — refusing to write through it (a plan's records never leave \
             the plan folder); nothing was written",
            path.display()
        )));
    }
    Ok(())
}

/// Reads and parses a JSON file, refusing a corrupt one by name (nothing is written).
pub fn read_json_named(path: &Path) -> Result<Value> {
    let bytes = fs::read(path).map_err(|e| io_fail(path, e))?;
    canonical_json::parse(&bytes).map_err(|e| {
        fail(format!(
            "{} is corrupt (not valid JSON: {e}) — no write was made; restore the contract or \
             roll back before continuing",
            path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        ))
    })
}

/// A relative path without `..`, root or prefix components.
pub fn safe_relative(p: &str) -> bool {
    let path = Path::new(p);
    !p.is_empty()
        && path.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// Lexically normalizes `..` and `.` away (no filesystem access).
pub(crate) fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Some(out)
}
