//! The read paths' one-pass reader and the journal summary: the same events, last seq and
//! snapshot as a full parse, with the summary used only while it matches the journal bytes.

use std::time::SystemTime;

use canonical_json::{Map, Value};
use dwp::event::Tally;
use dwp_ledger::{self as plan, Plan, Writer};

use crate::writer::plan_dir;

/// The journal summary of the plan in `dir` (in the cache folder, never in the plan).
fn summary(dir: &std::path::Path) -> std::path::PathBuf {
    plan::cache_file(&dir.join("journal.ndjson"), "summary").unwrap()
}

fn append(dir: &std::path::Path, statements: &[&str]) {
    let mut writer = Writer::open(Plan::load(dir).unwrap(), false, SystemTime::now()).unwrap();
    for statement in statements {
        let payload = Map::from([("statement".to_owned(), Value::String((*statement).into()))]);
        writer
            .append_raw(
                "observation",
                payload,
                plan::actor("agent", "a"),
                None,
                Some("asserted"),
                None,
            )
            .unwrap();
    }
    writer.close().unwrap();
}

fn project(dir: &std::path::Path) -> Value {
    let writer =
        Writer::open_with(Plan::load(dir).unwrap(), false, SystemTime::now(), plan::Load::Tail)
            .unwrap();
    let state = writer.project_streaming().unwrap();
    writer.close().unwrap();
    state
}

/// What the read paths should see, from a full parse of every line (each kept event cut down
/// to the members the read paths read, as the one-pass reader keeps it).
fn full_tally(dir: &std::path::Path) -> Tally {
    let mut tally = Tally::default();
    for event in plan::read_journal(&dir.join("journal.ndjson")).unwrap().events {
        let Value::Object(map) = event else { panic!("an event that is not an object") };
        let kept = map.into_iter().filter(|(k, _)| dwp::event::FIELDS.contains(&k.as_str()));
        tally.feed_value(&Value::Object(kept.collect()));
    }
    tally
}

fn compact(dir: &std::path::Path) -> (Vec<Value>, i64) {
    let view = plan::read_compact(&dir.join("journal.ndjson"), false).unwrap();
    assert_eq!(view.torn, None);
    (view.kept, view.last_seq)
}

#[test]
fn the_one_pass_reader_sees_what_a_full_parse_sees_with_and_without_a_summary() {
    let (_tmp, dir) = plan_dir();
    append(&dir, &["REVIEW: clean", "plain", "REVIEW: error: flaky"]);
    let full = full_tally(&dir);
    assert_eq!(compact(&dir), (full.kept.clone(), full.last_seq));
    assert!(!summary(&dir).exists(), "read-only readers never write the summary");

    // `project` writes the summary; the snapshot is the full projection's, byte for byte.
    let expected =
        Writer::open(Plan::load(&dir).unwrap(), false, SystemTime::now()).unwrap().snapshot();
    assert_eq!(project(&dir), expected);
    assert!(summary(&dir).exists());
    assert_eq!(project(&dir), expected, "a projection from the summary");
    assert_eq!(compact(&dir), (full.kept.clone(), full.last_seq));

    // Events appended after the summary are read and merged.
    append(&dir, &["REVIEW: critical: tail", "more"]);
    let full = full_tally(&dir);
    assert_eq!(compact(&dir), (full.kept.clone(), full.last_seq));
    let expected =
        Writer::open(Plan::load(&dir).unwrap(), false, SystemTime::now()).unwrap().snapshot();
    assert_eq!(project(&dir), expected);
}

#[test]
fn an_edited_journal_or_summary_is_read_in_full() {
    let (_tmp, dir) = plan_dir();
    append(&dir, &["REVIEW: clean", "plain"]);
    project(&dir);
    let journal = dir.join("journal.ndjson");

    // The journal edited in place, same length: the summary's digest no longer matches.
    let text = std::fs::read_to_string(&journal).unwrap();
    std::fs::write(&journal, text.replace("REVIEW: clean", "REVIEW: error")).unwrap();
    let full = full_tally(&dir);
    assert!(format!("{:?}", full.kept).contains("REVIEW: error"));
    assert_eq!(compact(&dir), (full.kept.clone(), full.last_seq));

    // The summary's own tally edited without its seal: ignored.
    project(&dir);
    let text = std::fs::read_to_string(summary(&dir)).unwrap();
    assert!(text.contains("REVIEW: error"));
    std::fs::write(summary(&dir), text.replace("REVIEW: error", "REVIEW: clean")).unwrap();
    assert_eq!(compact(&dir), (full.kept.clone(), full.last_seq));

    // A torn tail after the covered bytes is still a torn tail.
    project(&dir);
    let len = std::fs::metadata(&journal).unwrap().len();
    let mut file = std::fs::OpenOptions::new().append(true).open(&journal).unwrap();
    std::io::Write::write_all(&mut file, b"{\"seq\":").unwrap();
    let view = plan::read_compact(&journal, true).unwrap();
    assert_eq!(view.torn.map(|(at, _)| at), Some(len));
}
