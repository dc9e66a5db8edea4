//! The typed reader and the writer's record lookups.

use std::fs;

use journal::{Damage, Journal, OpenOptions, Record, TornCause, json_line, read_typed, scan};

use crate::support::{journal_path, open};

/// A toy parser: the line's `seq` digits as a number (`{"seq":N}` only).
fn seq(line: &[u8]) -> Option<u64> {
    std::str::from_utf8(line).ok()?.strip_prefix("{\"seq\":")?.strip_suffix('}')?.parse().ok()
}

#[test]
fn the_typed_reader_parses_each_record_once_and_reports_the_scanners_damage() {
    let (_dir, path) = journal_path();
    let bytes = b"{\"seq\":1}\n  \n{\"seq\":2}\n{\"seq\":\n{\"seq\":4}\n";
    fs::write(&path, bytes).unwrap();
    let mut seen = Vec::new();
    let report = read_typed(&path, seq, |offset, value| seen.push((offset, value))).unwrap();
    assert_eq!(seen, [(0, 1), (13, 2)]);
    let torn = Damage::TornTail {
        byte_offset: 23,
        cause: TornCause::Unparsable,
        discarded_bytes: bytes.len() as u64 - 23,
    };
    assert_eq!((report.records, report.good_len, report.damage), (2, 23, Some(torn)));
    // the same report as a scan whose validator is the parser
    fn validator(line: &[u8]) -> bool {
        seq(line).is_some()
    }
    assert_eq!(scan(&path, validator).unwrap(), report);
    assert_eq!(fs::read(&path).unwrap(), bytes, "the reader never repairs");
}

#[test]
fn the_typed_reader_keeps_a_final_record_without_its_newline() {
    let (_dir, path) = journal_path();
    fs::write(&path, b"{\"seq\":1}\n{\"seq\":2}").unwrap();
    let mut seen = Vec::new();
    let report = read_typed(&path, seq, |_, value| seen.push(value)).unwrap();
    assert_eq!(seen, [1, 2]);
    assert_eq!(report.damage, Some(Damage::MissingNewline { byte_offset: 19 }));
    assert!(
        read_typed(path.with_extension("gone"), seq, |_, _: u64| {}).unwrap_err().is_not_found()
    );
}

#[test]
fn a_writer_visits_its_records_and_finds_the_last_one_from_the_tail() {
    let (_dir, path) = journal_path();
    let (mut journal, _) =
        Journal::open(&path, &OpenOptions::new().create(true).validator(json_line)).unwrap();
    assert_eq!(journal.last_record().unwrap(), None);
    let long = format!("{{\"seq\":1,\"pad\":\"{}\"}}", "x".repeat(10_000));
    journal.append(long.as_bytes()).unwrap();
    assert_eq!(
        journal.last_record().unwrap(),
        Some(Record { offset: 0, line: long.clone().into_bytes() })
    );
    journal.append(b"{\"seq\":2}").unwrap();
    let at = long.len() as u64 + 1;
    assert_eq!(
        journal.last_record().unwrap(),
        Some(Record { offset: at, line: b"{\"seq\":2}".to_vec() })
    );
    drop(journal);
    // blank lines after the last record are not records
    crate::support::append_raw(&path, b"   \n\n");
    let (journal, report) = open(&path);
    assert_eq!(report.damage, None);
    assert_eq!(journal.last_record().unwrap().map(|r| r.offset), Some(at));
    let mut offsets = Vec::new();
    journal
        .for_each_record(|offset, line| {
            offsets.push((offset, line.len()));
            Ok::<(), journal::Error>(())
        })
        .unwrap();
    assert_eq!(offsets, [(0, long.len()), (at, 9)]);
    // `visit`'s error stops the walk
    let mut calls = 0;
    let stopped = journal.for_each_record(|_, _| {
        calls += 1;
        Err(journal::Error::Locked { path: path.clone() })
    });
    assert!(stopped.is_err());
    assert_eq!(calls, 1);
}
