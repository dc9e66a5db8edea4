//! Appending, locking and the position check.

use std::fs;

use journal::{Durability, Error, Journal, OpenOptions, Record, json_line, read_records, scan};

use crate::support::{append_raw, journal_path, open};

#[test]
fn append_then_reopen_round_trips() {
    let (_dir, path) = journal_path();
    let lines: [&[u8]; 3] = [b"{\"seq\":1}", b"{\"seq\":2,\"note\":\"caf\xc3\xa9\"}", b"[true]"];
    {
        let (mut journal, report) = open(&path);
        assert_eq!((report.records, report.file_len, report.damage), (0, 0, None));
        assert!(journal.is_empty());
        let mut expected_offset = 0;
        for line in lines {
            assert_eq!(journal.append(line).unwrap(), expected_offset);
            expected_offset += line.len() as u64 + 1;
        }
        assert_eq!(journal.len(), expected_offset);
        assert_eq!(journal.records(), 3);
        assert_eq!(fs::metadata(&path).unwrap().len(), expected_offset);
    }
    let mut expected = Vec::new();
    for line in lines {
        expected.extend_from_slice(line);
        expected.push(b'\n');
    }
    assert_eq!(fs::read(&path).unwrap(), expected);

    let (journal, report) = open(&path);
    assert_eq!(report.records, 3);
    assert_eq!(report.good_len, expected.len() as u64);
    assert_eq!(report.damage, None);
    assert_eq!(journal.records(), 3);
    let records = journal.read_records().unwrap();
    let want: Vec<Record> = vec![
        Record { offset: 0, line: lines[0].to_vec() },
        Record { offset: 10, line: lines[1].to_vec() },
        Record { offset: 10 + lines[1].len() as u64 + 1, line: lines[2].to_vec() },
    ];
    assert_eq!(records, want);
    let (read_only, read_report) = read_records(&path, json_line).unwrap();
    assert_eq!(read_only, want);
    assert_eq!(read_report, report);
}

#[test]
fn open_without_create_reports_the_missing_file() {
    let (_dir, path) = journal_path();
    let error = Journal::open(&path, &OpenOptions::new()).unwrap_err();
    assert!(error.is_not_found(), "{error}");
    assert_eq!(error.path(), path);
    assert!(error.to_string().starts_with(&format!("{}: ", path.display())));
    assert!(scan(&path, json_line).unwrap_err().is_not_found());
    assert!(!path.exists());
}

#[test]
fn batch_append_writes_every_line_once() {
    let (_dir, path) = journal_path();
    let (mut journal, _) = open(&path);
    journal.append(b"{\"n\":0}").unwrap();
    let start = journal.append_batch(["{\"n\":1}", "{\"n\":2}", "{\"n\":3}"]).unwrap();
    assert_eq!(start, 8);
    assert_eq!(journal.records(), 4);
    assert_eq!(journal.append_batch(Vec::<Vec<u8>>::new()).unwrap(), 32);
    assert_eq!(journal.len(), 32);
    assert_eq!(fs::read(&path).unwrap(), b"{\"n\":0}\n{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n");

    // one bad line refuses the whole batch
    let error = journal.append_batch(["{\"n\":4}", "{\"n\":"]).unwrap_err();
    assert!(matches!(error, Error::InvalidLine { .. }), "{error}");
    assert_eq!(journal.len(), 32);
    assert_eq!(fs::metadata(&path).unwrap().len(), 32);
    assert_eq!(journal.records(), 4);
}

#[test]
fn invalid_lines_are_refused_and_nothing_is_written() {
    let (_dir, path) = journal_path();
    let (mut journal, _) = open(&path);
    journal.append(b"{}").unwrap();
    let cases: [(&[u8], &str); 5] = [
        (b"", "line is empty or whitespace only"),
        (b"  \t", "line is empty or whitespace only"),
        (b"{}\n{}", "line contains a newline"),
        (b"\"\xff\"", "line is not valid UTF-8"),
        (b"{\"torn\":", "line is rejected by the validator"),
    ];
    for (line, reason) in cases {
        let error = journal.append(line).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("{}: refusing to append an invalid line: {reason}", path.display())
        );
    }
    assert_eq!(fs::read(&path).unwrap(), b"{}\n");
    assert_eq!(journal.records(), 1);
}

#[test]
fn custom_validator_governs_scan_and_append() {
    fn objects_only(line: &[u8]) -> bool {
        line.starts_with(b"{") && json_line(line)
    }
    let (_dir, path) = journal_path();
    let options = OpenOptions::new().create(true).validator(objects_only);
    let (mut journal, _) = Journal::open(&path, &options).unwrap();
    journal.append(b"{\"ok\":1}").unwrap();
    assert!(matches!(journal.append(b"[1]"), Err(Error::InvalidLine { .. })));
    drop(journal);
    append_raw(&path, b"[2]\n");
    // the default validator accepts the array, the custom one does not
    assert_eq!(scan(&path, json_line).unwrap().damage, None);
    // ... and a complete JSON line it refuses is damage: refused, never cut.
    let report = scan(&path, objects_only).unwrap();
    assert_eq!(
        report.damage,
        Some(journal::Damage::Corrupt { byte_offset: 9, cause: journal::TornCause::Rejected })
    );
    let error = Journal::open(&path, &options).unwrap_err();
    assert!(matches!(error, Error::Damaged { line: 2, byte_offset: 9, .. }), "{error}");
    assert_eq!(fs::read(&path).unwrap(), b"{\"ok\":1}\n[2]\n");
}

#[test]
fn second_writer_is_refused_while_the_first_holds_the_lock() {
    let (_dir, path) = journal_path();
    let (mut first, _) = open(&path);
    first.append(b"{\"who\":\"first\"}").unwrap();
    let quick = OpenOptions::new().lock_wait(std::time::Duration::from_millis(50));
    let error = Journal::open(&path, &quick).unwrap_err();
    assert!(matches!(&error, Error::Locked { path: locked } if *locked == path), "{error}");
    assert_eq!(
        error.to_string(),
        format!("{}: journal is locked by another writer", path.display())
    );
    // the refused open did not disturb the holder
    first.append(b"{\"who\":\"first again\"}").unwrap();
    drop(first);
    let (second, report) = open(&path);
    assert_eq!((report.records, second.records()), (2, 2));
}

#[test]
fn a_write_behind_the_writers_back_is_a_collision_and_nothing_is_written() {
    let (_dir, path) = journal_path();
    let (mut journal, _) = open(&path);
    journal.append(b"{\"seq\":1}").unwrap();
    let expected = journal.len();
    append_raw(&path, b"{\"seq\":\"intruder\"}\n");
    let found = fs::metadata(&path).unwrap().len();
    let before = fs::read(&path).unwrap();

    let error = journal.append(b"{\"seq\":2}").unwrap_err();
    match &error {
        Error::Collision { path: at, expected: e, found: f } => {
            assert_eq!((at, *e, *f), (&path, expected, found));
        }
        other => panic!("expected a collision, got {other}"),
    }
    assert_eq!(
        error.to_string(),
        format!(
            "journal changed size behind this writer (expected {expected} bytes, found {found}) — another writer bypassed the lock; this session refuses to append rather than interleave histories"
        )
    );
    assert_eq!(fs::read(&path).unwrap(), before);
    // still refused: the writer never adopts a foreign size
    assert!(matches!(journal.append_batch(["{}"]), Err(Error::Collision { .. })));
    assert_eq!(fs::read(&path).unwrap(), before);
    assert_eq!((journal.len(), journal.records()), (expected, 1));
}

#[test]
fn truncation_behind_the_writers_back_is_a_collision() {
    let (_dir, path) = journal_path();
    let (mut journal, _) = open(&path);
    journal.append(b"{\"seq\":1}").unwrap();
    journal.append(b"{\"seq\":2}").unwrap();
    fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(3).unwrap();
    let error = journal.append(b"{\"seq\":3}").unwrap_err();
    assert!(matches!(error, Error::Collision { expected: 20, found: 3, .. }), "{error}");
    assert_eq!(fs::metadata(&path).unwrap().len(), 3);
}

#[test]
fn batched_durability_keeps_everything_after_sync() {
    let (_dir, path) = journal_path();
    let options = OpenOptions::new().create(true).durability(Durability::Batched);
    let (mut journal, _) = Journal::open(&path, &options).unwrap();
    for n in 0..200 {
        journal.append(format!("{{\"n\":{n}}}").as_bytes()).unwrap();
    }
    journal.append_batch(["{\"n\":200}", "{\"n\":201}"]).unwrap();
    journal.sync().unwrap();
    journal.sync().unwrap();
    assert_eq!(journal.records(), 202);
    drop(journal);
    let (journal, report) = open(&path);
    assert_eq!((report.records, report.damage), (202, None));
    let records = journal.read_records().unwrap();
    assert_eq!(records[201].line, b"{\"n\":201}");
}

#[test]
fn a_lock_released_while_waiting_is_taken() {
    let (_dir, path) = journal_path();
    let (first, _) = open(&path);
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(100));
        drop(first);
    });
    // The default wait (2 s) outlasts the holder, as it outlasts a forked child's copy of a
    // closed journal's descriptor.
    let (second, _) = Journal::open(&path, &OpenOptions::new()).unwrap();
    releaser.join().unwrap();
    drop(second);
}
