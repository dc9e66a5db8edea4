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
    // A bad line in the middle: damage, not a torn tail.
    let torn = Damage::Corrupt { byte_offset: 23, cause: TornCause::Unparsable };
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

/// The tail read is linear in the line it reads: an 8 MiB final line (a read that copied the
/// growing tail at every 4 KiB step moved about 8 GB for it) comes back whole, with the blank
/// lines after it skipped and the line before it untouched.
#[test]
fn last_record_reads_a_long_final_line_whole() {
    let (_dir, path) = journal_path();
    let long = format!("{{\"seq\":2,\"pad\":\"{}\"}}", "x".repeat(8 << 20));
    fs::write(&path, format!("{{\"seq\":1}}\n{long}\n  \n\n")).unwrap();
    let (journal, report) = open(&path);
    assert_eq!(report.damage, None);
    let last = journal.last_record().unwrap().unwrap();
    assert_eq!((last.offset, last.line.len()), (10, long.len()));
    assert_eq!(last.line, long.as_bytes());
}

/// A final line over `MAX_LINE` is refused once that many bytes are read, not read whole
/// (the sparse file costs no disk; a validator that accepts anything lets the writer open it).
#[test]
fn last_record_refuses_a_line_over_the_limit() {
    let (_dir, path) = journal_path();
    fs::write(&path, b"{}\n").unwrap();
    let file = fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(3 + journal::MAX_LINE + 1).unwrap();
    drop(file);
    fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| {
            use std::io::Write;
            f.write_all(b"\n")
        })
        .unwrap();
    let options = OpenOptions::new().validator(|_| true);
    let (journal, _) = Journal::open(&path, &options).unwrap();
    // (matched, not unwrapped: a wrongly returned record would print 64 MiB)
    match journal.last_record() {
        Err(journal::Error::LineTooLong { limit: journal::MAX_LINE, .. }) => {}
        Err(other) => panic!("unexpected error {other}"),
        Ok(record) => panic!("read a line of {:?} bytes", record.map(|r| r.line.len())),
    }
}
