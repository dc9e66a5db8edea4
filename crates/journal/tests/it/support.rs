//! Shared helpers.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use journal::{Journal, OpenOptions, ScanReport};
use tempfile::TempDir;

/// A fresh temp dir and the path of `journal.ndjson` inside it.
pub fn journal_path() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.ndjson");
    (dir, path)
}

/// Opens (creating) with default options.
pub fn open(path: &Path) -> (Journal, ScanReport) {
    Journal::open(path, &OpenOptions::new().create(true)).unwrap()
}

/// Appends raw bytes with a plain append handle, bypassing any lock.
pub fn append_raw(path: &Path, bytes: &[u8]) {
    let mut file = fs::OpenOptions::new().append(true).create(true).open(path).unwrap();
    file.write_all(bytes).unwrap();
}
