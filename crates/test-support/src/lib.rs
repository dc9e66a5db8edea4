//! Helpers for integration tests: locating `../shared`, external tools, and scratch data.
//!
//! Interop suites read the standards' data files from `../shared` beside the checkout. In CI
//! (`CI=true`) a missing folder or tool is a loud failure; elsewhere the test prints a notice
//! and skips, so a contributor without the folder can still run the rest.

#![allow(clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// True when running under CI (`CI=true` or `CI=1`).
pub fn in_ci() -> bool {
    matches!(std::env::var("CI").as_deref(), Ok("true" | "1" | "TRUE" | "True"))
}

/// The workspace root (the folder holding the virtual manifest).
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.ancestors().nth(2).map(Path::to_path_buf).unwrap_or_else(|| manifest.to_path_buf())
}

/// `../shared/<sub>` next to the workspace, or `None` (with a notice) outside CI.
///
/// The location can be overridden with `COOKWALA_SHARED_DIR`.
///
/// # Panics
/// Under CI when the folder is missing: interop suites must not skip there.
pub fn shared(sub: &str) -> Option<PathBuf> {
    let base = std::env::var_os("COOKWALA_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("..").join("shared"));
    let path = base.join(sub);
    if path.exists() {
        return Some(path);
    }
    if in_ci() {
        panic!("CI=true but {} is missing: interop suites cannot run", path.display());
    }
    eprintln!("notice: {} not found; skipping this interop test", path.display());
    None
}

/// Checks that an external program runs (`PROGRAM --version`), or `None` with a notice.
///
/// # Panics
/// Under CI when the program is missing.
pub fn tool(program: &str) -> Option<PathBuf> {
    let ok = Command::new(program).arg("--version").output().is_ok_and(|o| o.status.success());
    if ok {
        return Some(PathBuf::from(program));
    }
    if in_ci() {
        panic!("CI=true but `{program}` is not available: this interop test cannot run");
    }
    eprintln!("notice: `{program}` not available; skipping this test");
    None
}

/// Reads a file to a string, panicking with the path on failure (tests only).
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The upstream sample bundle (`cookwala_samples/data/bundle.json` from the PyPI package
/// `cookwala-samples` 0.3.0), fetched by `.ci/fetch-ext` into `target/ext/`, or the file named
/// by `COOKWALA_SAMPLES_BUNDLE`. `None` with a notice outside CI when it is missing.
///
/// # Panics
/// Under CI when the bundle is missing.
pub fn samples_bundle() -> Option<PathBuf> {
    ensure_ext();
    let path = std::env::var_os("COOKWALA_SAMPLES_BUNDLE")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/ext/cookwala_samples/data/bundle.json"));
    if path.is_file() {
        return Some(path);
    }
    if in_ci() {
        panic!("CI=true but {} is missing: run .ci/fetch-ext", path.display());
    }
    eprintln!("notice: {} not found (run .ci/fetch-ext); skipping", path.display());
    None
}

/// Runs `.ci/fetch-ext` once per test process, so `cargo test` on a fresh clone fetches the
/// external test data (PyPI: the upstream sample package, Python `jsonschema`) by itself. The
/// script is idempotent and serialises concurrent runs with a lock; a failure (no network) is
/// reported by the tests that need the data.
pub fn ensure_ext() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let script = workspace_root().join(".ci/fetch-ext");
        match Command::new("bash").arg(&script).output() {
            Ok(out) if out.status.success() => {}
            Ok(out) => eprintln!(
                "notice: {} failed: {}",
                script.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            Err(e) => eprintln!("notice: cannot run {}: {e}", script.display()),
        }
    });
}
pub mod mosquitto;
pub mod postgres;
