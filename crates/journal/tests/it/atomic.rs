//! `atomic_replace`.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use journal::{Error, atomic_replace};

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn replaces_content_and_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.json");
    atomic_replace(&path, b"{\"v\":1}\n").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"{\"v\":1}\n");
    atomic_replace(&path, b"{\"v\":2,\"longer\":true}\n").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"{\"v\":2,\"longer\":true}\n");
    atomic_replace(&path, b"").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"");
    assert_eq!(names(dir.path()), ["state.json"]);
}

#[test]
fn keeps_the_targets_permissions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.json");
    fs::write(&path, b"old").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    atomic_replace(&path, b"new").unwrap();
    assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640);
    assert_eq!(fs::read(&path).unwrap(), b"new");
}

#[test]
fn failure_names_the_path_and_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    // the target is a non-empty directory: rename must fail
    let path = dir.path().join("occupied");
    fs::create_dir(&path).unwrap();
    fs::write(path.join("inside"), b"x").unwrap();
    let error = atomic_replace(&path, b"data").unwrap_err();
    assert!(matches!(&error, Error::Io { path: at, .. } if *at == path), "{error}");
    assert_eq!(names(dir.path()), ["occupied"]);

    let missing_dir = dir.path().join("no-such-dir").join("state.json");
    let error = atomic_replace(&missing_dir, b"data").unwrap_err();
    assert!(error.is_not_found(), "{error}");

    let error = atomic_replace("/", b"data").unwrap_err();
    assert!(error.to_string().contains("path has no file name"), "{error}");
}

#[test]
fn append_synced_creates_then_appends() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("evidence.jsonl");
    journal::append_synced(&path, b"{\"a\":1}\n").unwrap();
    journal::append_synced(&path, b"{\"b\":2}\n").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"{\"a\":1}\n{\"b\":2}\n");
    let missing = dir.path().join("no-such-dir").join("evidence.jsonl");
    let err = journal::append_synced(&missing, b"x\n").unwrap_err();
    assert!(err.is_not_found(), "{err}");
    assert_eq!(err.path(), missing);
}
