//! Damage detection on open and its repair.

use std::fs;

use journal::{
    CAUSE_MISSING_NEWLINE, CAUSE_UNDECODABLE, CAUSE_UNPARSABLE, Damage, Journal, OpenOptions,
    TornCause, json_line, read_records, scan,
};

use journal::Error;

use crate::support::{journal_path, open};

const GOOD: &[u8] = b"{\"seq\":1,\"type\":\"init\"}\n{\"seq\":2,\"type\":\"task_start\"}\n";

/// Writes `GOOD` + `tail`, opens for writing and checks the torn tail was
/// cut off at exactly `GOOD.len()` with `cause`.
fn assert_torn_tail_repaired(tail: &[u8], cause: TornCause, cause_text: &str) {
    let (_dir, path) = journal_path();
    fs::write(&path, [GOOD, tail].concat()).unwrap();
    let (mut journal, report) = open(&path);
    let good_len = GOOD.len() as u64;
    assert_eq!(report.records, 2);
    assert_eq!(report.good_len, good_len);
    assert_eq!(report.file_len, good_len + tail.len() as u64);
    let damage = report.damage.unwrap();
    assert_eq!(
        damage,
        Damage::TornTail { byte_offset: good_len, cause, discarded_bytes: tail.len() as u64 }
    );
    assert_eq!(damage.cause(), cause_text);
    assert_eq!(damage.byte_offset(), good_len);
    assert_eq!(fs::read(&path).unwrap(), GOOD);
    assert_eq!((journal.len(), journal.records()), (good_len, 2));

    // the writer continues right after the good prefix
    assert_eq!(journal.append(b"{\"seq\":3,\"type\":\"journal_repair\"}").unwrap(), good_len);
    drop(journal);
    let (_, report) = open(&path);
    assert_eq!((report.records, report.damage), (3, None));
}

#[test]
fn garbage_tail_is_truncated() {
    assert_torn_tail_repaired(b"garbage \x01 not json", TornCause::Unparsable, CAUSE_UNPARSABLE);
}

#[test]
fn partial_json_tail_is_truncated() {
    assert_torn_tail_repaired(b"{\"seq\":3,\"type\":\"ga", TornCause::Unparsable, CAUSE_UNPARSABLE);
}

#[test]
fn invalid_utf8_tail_is_truncated() {
    assert_torn_tail_repaired(
        b"{\"seq\":3,\"note\":\"\xe2\x82",
        TornCause::Undecodable,
        CAUSE_UNDECODABLE,
    );
}

#[test]
fn cause_texts_are_upstreams() {
    assert_eq!(CAUSE_UNDECODABLE, "undecodable bytes in final line");
    assert_eq!(CAUSE_UNPARSABLE, "final line does not parse (torn append)");
    assert_eq!(
        CAUSE_MISSING_NEWLINE,
        "final event complete, framing newline restored after an interrupted append"
    );
}

/// Writes `GOOD` + `bad` + `later`, and checks the writer refuses naming line 3 and its byte
/// offset, while the file keeps every byte; a reader reports the same damage.
fn assert_damage_refused(bad: &[u8], later: &[u8], cause: TornCause) {
    let (_dir, path) = journal_path();
    let contents = [GOOD, bad, later].concat();
    fs::write(&path, &contents).unwrap();
    let error = Journal::open(&path, &OpenOptions::new()).unwrap_err();
    let at = GOOD.len() as u64;
    match &error {
        Error::Damaged { line, byte_offset, cause: text, .. } => {
            assert_eq!((*line, *byte_offset), (3, at), "{error}");
            assert_eq!(*text, Damage::Corrupt { byte_offset: at, cause }.cause());
        }
        other => panic!("expected Damaged, got {other:?}"),
    }
    assert!(error.to_string().contains("line 3 (byte "), "{error}");
    assert_eq!(fs::read(&path).unwrap(), contents, "every byte kept");
    let report = scan(&path, json_line).unwrap();
    assert_eq!(report.damage, Some(Damage::Corrupt { byte_offset: at, cause }));
    assert_eq!(report.records, 2);
}

/// One bad line in the middle never deletes the valid lines after it (upstream truncates
/// there, losing them): the writer refuses and the file keeps every byte.
#[test]
fn a_corrupt_middle_line_is_refused_and_every_byte_kept() {
    let later = b"{\"seq\":4}\n{\"seq\":5}\n";
    assert_damage_refused(b"{\"seq\":3 CORRUPT\n", later, TornCause::Unparsable);
    assert_damage_refused(b"xyz\n", later, TornCause::Unparsable);
    assert_damage_refused(b"{\"a\":\n", later, TornCause::Unparsable);
    assert_damage_refused(b"\xff\xfe\n", later, TornCause::Undecodable);
}

/// A final line that kept its newline was written whole: not a torn append, so damage.
#[test]
fn a_terminated_bad_final_line_is_damage_not_a_torn_tail() {
    assert_damage_refused(b"{\"seq\":3,\n", b"", TornCause::Unparsable);
    assert_damage_refused(b"\xff\xfe\xfd\n", b"", TornCause::Undecodable);
}

#[test]
fn missing_final_newline_is_restored_and_the_record_kept() {
    let (_dir, path) = journal_path();
    let last = b"{\"seq\":3,\"type\":\"gate_run\"}";
    let contents = [GOOD, last].concat();
    fs::write(&path, &contents).unwrap();
    let (mut journal, report) = open(&path);
    let len = contents.len() as u64;
    assert_eq!(report.records, 3);
    assert_eq!(report.good_len, len);
    let damage = report.damage.unwrap();
    assert_eq!(damage, Damage::MissingNewline { byte_offset: len });
    assert_eq!(damage.cause(), CAUSE_MISSING_NEWLINE);
    assert_eq!(fs::read(&path).unwrap(), [&contents[..], b"\n"].concat());
    assert_eq!((journal.len(), journal.records()), (len + 1, 3));
    assert_eq!(journal.read_records().unwrap()[2].line, last);
    assert_eq!(journal.append(b"{\"seq\":4}").unwrap(), len + 1);
    drop(journal);
    let (_, report) = open(&path);
    assert_eq!((report.records, report.damage), (4, None));
}

#[test]
fn blank_lines_are_skipped_not_damage() {
    let (_dir, path) = journal_path();
    let contents = b"\n{\"seq\":1}\n   \n\r\n{\"seq\":2}\n\n";
    fs::write(&path, contents).unwrap();
    let (mut journal, report) = open(&path);
    assert_eq!((report.records, report.damage), (2, None));
    assert_eq!(report.good_len, contents.len() as u64);
    let offsets: Vec<u64> = journal.read_records().unwrap().iter().map(|r| r.offset).collect();
    assert_eq!(offsets, [1, 17]);
    journal.append(b"{\"seq\":3}").unwrap();
    assert_eq!(fs::read(&path).unwrap(), [&contents[..], b"{\"seq\":3}\n"].concat());
}

#[test]
fn scan_and_read_records_report_damage_without_repairing() {
    let (_dir, path) = journal_path();
    let contents = [GOOD, b"{\"seq\":3,"].concat();
    fs::write(&path, &contents).unwrap();
    let report = scan(&path, json_line).unwrap();
    assert_eq!(report.records, 2);
    assert_eq!(report.damage.map(|damage| damage.cause()), Some(CAUSE_UNPARSABLE));
    let (records, again) = read_records(&path, json_line).unwrap();
    assert_eq!(again, report);
    assert_eq!(records.len(), 2);
    assert_eq!(records[1].line, b"{\"seq\":2,\"type\":\"task_start\"}");
    assert_eq!(fs::read(&path).unwrap(), contents);

    let unterminated = b"{\"seq\":1}";
    fs::write(&path, unterminated).unwrap();
    let report = scan(&path, json_line).unwrap();
    assert_eq!(report.damage, Some(Damage::MissingNewline { byte_offset: 9 }));
    assert_eq!(fs::read(&path).unwrap(), unterminated);
}

#[test]
fn repair_is_durable_and_idempotent() {
    let (_dir, path) = journal_path();
    fs::write(&path, [GOOD, b"{\"torn"].concat()).unwrap();
    drop(Journal::open(&path, &OpenOptions::new()).unwrap());
    let (_, report) = Journal::open(&path, &OpenOptions::new()).unwrap();
    assert_eq!((report.records, report.damage), (2, None));
    assert_eq!(fs::read(&path).unwrap(), GOOD);
}
