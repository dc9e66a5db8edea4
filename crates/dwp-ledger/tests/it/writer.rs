//! The writer in-process: collision detection, validation before write, generation detection.

use std::io::Write;
use std::time::SystemTime;

use canonical_json::{Map, Value};
use dwp_ledger::{self as plan, FolderGeneration, LedgerError, Plan, Writer};

const CONTRACT: &str = include_str!("data/baseline-contract.json");

pub(crate) fn plan_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("PLAN_rust_port_baseline");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("README.md"), "# plan\n").unwrap();
    let c = tmp.path().join("c.json");
    std::fs::write(&c, CONTRACT).unwrap();
    plan::materialize(&dir, &c, "dev", "plan_authorship", None, SystemTime::now()).unwrap();
    (tmp, dir)
}

fn observation() -> Map {
    Map::from([("statement".to_owned(), Value::String("x".into()))])
}

#[test]
fn a_journal_that_grew_behind_the_writer_is_a_collision() {
    let (_tmp, dir) = plan_dir();
    let mut writer = Writer::open(Plan::load(&dir).unwrap(), false, SystemTime::now()).unwrap();
    let mut f = std::fs::OpenOptions::new().append(true).open(dir.join("journal.ndjson")).unwrap();
    f.write_all(b"{}\n").unwrap();
    let err = writer
        .append_raw(
            "observation",
            observation(),
            plan::actor("agent", "a"),
            None,
            Some("asserted"),
            None,
        )
        .unwrap_err();
    assert_eq!(err.prefix(), "COLLISION");
    assert!(
        matches!(&err, LedgerError::Collision(m) if m.starts_with("journal changed size behind this writer (expected ")),
        "{err}"
    );
}

#[test]
fn an_invalid_event_is_refused_before_anything_is_written() {
    let (_tmp, dir) = plan_dir();
    let before = std::fs::read(dir.join("journal.ndjson")).unwrap();
    let mut writer = Writer::open(Plan::load(&dir).unwrap(), false, SystemTime::now()).unwrap();
    let err = writer
        .append_raw(
            "observation",
            observation(),
            plan::actor("agent", "a"),
            None,
            Some("observed"),
            Some("x.log"),
        )
        .unwrap_err();
    assert!(err.to_string().starts_with("refusing to append an invalid observation event: event.trust: observed requires a shipped helper"), "{err}");
    writer.close().unwrap();
    assert_eq!(before, std::fs::read(dir.join("journal.ndjson")).unwrap());
    assert!(!dir.join(".ledger.lock").exists());
}

#[test]
fn generations_are_detected_from_files_only() {
    let (_tmp, dir) = plan_dir();
    assert_eq!(plan::detect_generation(&dir), FolderGeneration::V6);
    let empty = tempfile::tempdir().unwrap();
    assert_eq!(plan::detect_generation(empty.path()), FolderGeneration::Unknown);
    std::fs::write(
        empty.path().join("manifest.json"),
        r#"{"schema":"https://deepworkplan.com/schema/plan-manifest/v2.json"}"#,
    )
    .unwrap();
    assert_eq!(plan::detect_generation(empty.path()), FolderGeneration::Legacy);
}

#[test]
fn slugs_and_commands_follow_upstream() {
    assert_eq!(plan::gate_slug("cargo test -p dwp --all"), "cargo-test--p-dwp---all");
    assert_eq!(plan::gate_slug("!!!"), "");
    assert_eq!(plan::gate_slug(&"a ".repeat(40)), "a-a-a-a-a-a-a-a-a-a-a-a-a-a-a-a-a-a-a-a");
    assert_eq!(plan::GateCommand::parse("\"  \""), None);
    assert_eq!(plan::GateCommand::parse("[]"), None);
    assert_eq!(plan::GateCommand::parse("[\"a\", \"b\"]").unwrap().joined(), "a b");
}

#[test]
fn a_corrupt_archive_segment_is_named_with_the_parsers_complaint() {
    let (_tmp, dir) = plan_dir();
    let journal = std::fs::read(dir.join("journal.ndjson")).unwrap();
    let bad = b"{\"seq\":2,";
    let archive = [&journal[..], b" \n", bad, b"\n"].concat();
    std::fs::write(dir.join("journal-archive-000001-000002.ndjson"), archive).unwrap();
    let loaded = Plan::load(&dir).unwrap();
    let err = loaded.archived_events().unwrap_err().to_string();
    let why = canonical_json::parse(bad).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "archive segment journal-archive-000001-000002.ndjson is corrupt ({why}) — archived \
             history is never repaired in place; restore the exported copy"
        )
    );
    // a segment whose last line lost its newline is still whole
    std::fs::write(dir.join("journal-archive-000001-000002.ndjson"), journal.trim_ascii_end())
        .unwrap();
    assert_eq!(loaded.archived_events().unwrap().len(), 1);
}
