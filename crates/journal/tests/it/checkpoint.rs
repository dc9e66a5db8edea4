//! The scan checkpoint: used only once verified, rebuilt when stale or tampered; and the
//! in-memory scanners (`scan_slice`, `scan_slice_parallel`) against the file scanner.

use std::fs;

use journal::{
    Damage, Journal, OpenOptions, ScanReport, json_line, scan, scan_slice, scan_slice_parallel,
};

use crate::support::{append_raw, journal_path};

fn checkpointed_at(path: &std::path::Path) -> OpenOptions {
    OpenOptions::new().create(true).checkpoint(Some(hint_path(path)))
}

/// The checkpoint of the journal at `path` (a cache folder beside it, for the tests).
fn hint_path(path: &std::path::Path) -> std::path::PathBuf {
    path.with_file_name("cache").join("journal.checkpoint")
}

/// A journal of `n` records written through a checkpointing writer.
fn written(n: u64) -> (tempfile::TempDir, std::path::PathBuf) {
    let (dir, path) = journal_path();
    let (mut journal, _) = Journal::open(&path, &checkpointed_at(&path)).unwrap();
    for i in 0..n {
        journal.append(format!("{{\"seq\":{i}}}").as_bytes()).unwrap();
    }
    (dir, path)
}

#[test]
fn appends_keep_a_checkpoint_of_the_whole_file() {
    let (_dir, path) = written(3);
    let hint = fs::read_to_string(hint_path(&path)).unwrap();
    let len = fs::metadata(&path).unwrap().len();
    let words: Vec<&str> = hint.split_whitespace().collect();
    assert_eq!(words[0], "journal-checkpoint-v2");
    assert_eq!(words[1], len.to_string());
    assert_eq!(words[2], "3");
    // The anchor is the last line.
    let last_line_start = fs::read(&path).unwrap()[..len as usize - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |at| at + 1);
    assert_eq!(words[3], last_line_start.to_string());
}

/// The hint is used while the file is untouched since it was written (its record count is
/// taken as is), and not after any write: a same-length edit of a middle line that keeps the
/// last line is found by the next writer, which refuses.
#[test]
fn a_checkpoint_is_used_until_the_file_is_written_to() {
    let (_dir, path) = written(4);
    let hint = fs::read_to_string(hint_path(&path)).unwrap();
    let mut words: Vec<String> = hint.split_whitespace().map(str::to_owned).collect();
    words[2] = "99".to_owned();
    fs::write(hint_path(&path), words.join(" ") + "\n").unwrap();
    let (journal, _) = Journal::open(&path, &checkpointed_at(&path)).unwrap();
    assert_eq!(journal.records(), 99, "an untouched file: the hint is taken as is");
    drop(journal);
    fs::write(hint_path(&path), &hint).unwrap();
    // Same length, same last line, a bad seq in the middle: only the stamp tells.
    let bytes = fs::read(&path).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    let second = text.find("\n").unwrap() + 1;
    let mut edited = bytes.clone();
    edited[second] = b'x';
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &edited))
        .unwrap();
    assert_eq!(fs::metadata(&path).unwrap().len(), bytes.len() as u64);
    let error = Journal::open(&path, &checkpointed_at(&path)).unwrap_err();
    assert!(matches!(error, journal::Error::Damaged { line: 2, .. }), "{error}");
}

#[test]
fn a_verified_checkpoint_reports_what_a_full_scan_reports() {
    let (_dir, path) = written(5);
    // Another writer appended (a good line and a torn one) after the checkpoint.
    append_raw(&path, b"{\"seq\":5}\n{\"seq\":");
    let full = scan(&path, json_line).unwrap();
    let (journal, report) = Journal::open(&path, &checkpointed_at(&path)).unwrap();
    assert_eq!(report, full);
    assert_eq!(journal.records(), 6);
    assert!(matches!(report.damage, Some(Damage::TornTail { .. })));
    // Repaired, and the checkpoint now covers the repaired file.
    drop(journal);
    let (_, again) = Journal::open(&path, &checkpointed_at(&path)).unwrap();
    assert_eq!((again.records, again.damage), (6, None));
}

#[test]
fn a_stale_or_tampered_checkpoint_is_not_used() {
    let (_dir, path) = written(4);
    let bytes = fs::read(&path).unwrap();
    // The covered prefix's last line edited in place (same length): its digest no longer
    // matches, so the whole file is scanned and the damage found.
    let mut edited = bytes.clone();
    let last = edited.len() - 3;
    edited[last] = b'x';
    fs::write(&path, &edited).unwrap();
    let full = scan(&path, json_line).unwrap();
    assert!(matches!(full.damage, Some(Damage::Corrupt { .. })), "{full:?}");
    let error = Journal::open(&path, &checkpointed_at(&path)).unwrap_err();
    assert!(
        matches!(error, journal::Error::Damaged { line: 4, byte_offset, .. }
            if Some(byte_offset) == full.damage.map(|d| d.byte_offset())),
        "{error}"
    );
    assert_eq!(fs::read(&path).unwrap(), edited, "a damaged journal is never cut");

    // A truncated journal: the hint covers more than the file holds.
    let (_dir2, path2) = written(4);
    let hint = fs::read(hint_path(&path2)).unwrap();
    fs::write(&path2, b"{\"seq\":0}\n").unwrap();
    fs::write(hint_path(&path2), &hint).unwrap();
    let (journal, report) = Journal::open(&path2, &checkpointed_at(&path2)).unwrap();
    assert_eq!((report.records, report.damage), (1, None));
    assert_eq!(journal.records(), 1);
    drop(journal);

    // A hand-edited hint (wrong digest, garbage) is ignored.
    let anchor = "0".repeat(64);
    for text in
        [format!("journal-checkpoint-v1 10 7 0 {anchor}\n"), "garbage".into(), String::new()]
    {
        fs::write(hint_path(&path2), text).unwrap();
        assert_eq!(journal_open_records(&path2), 1);
    }
}

fn journal_open_records(path: &std::path::Path) -> u64 {
    Journal::open(path, &checkpointed_at(path)).unwrap().1.records
}

#[test]
fn without_the_option_no_checkpoint_is_written_or_read() {
    let (_dir, path) = journal_path();
    let (mut journal, _) = Journal::open(&path, &OpenOptions::new().create(true)).unwrap();
    journal.append(b"{}").unwrap();
    assert!(!hint_path(&path).exists());
}

fn slice_report(bytes: &[u8]) -> ScanReport {
    scan_slice(bytes, |_, line| json_line(line.as_bytes()))
}

#[test]
fn the_slice_scanners_report_what_the_file_scanner_reports() {
    let (_dir, path) = journal_path();
    let cases: [&[u8]; 7] = [
        b"",
        b"{}\n[1]\n",
        b"{}\n  \n[1]",
        b"{}\n{\"a\":\n[1]\n",
        b"{}\n\xff\n",
        b"\n\n{}\n",
        b"{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n{\"d\":4}\n{\"e\":5\n{\"f\":6}\n",
    ];
    for bytes in cases {
        fs::write(&path, bytes).unwrap();
        let file = scan(&path, json_line).unwrap();
        assert_eq!(slice_report(bytes), file, "{:?}", String::from_utf8_lossy(bytes));
        for parts in 1..5 {
            let (report, accs) = scan_slice_parallel(bytes, parts, Vec::new, |seen, at, line| {
                let ok = json_line(line.as_bytes());
                if ok {
                    seen.push(at);
                }
                ok
            });
            assert_eq!(report, file, "{parts} parts: {:?}", String::from_utf8_lossy(bytes));
            let offsets: Vec<u64> = accs.into_iter().flatten().collect();
            let mut expected = Vec::new();
            scan_slice(bytes, |at, line| {
                let ok = json_line(line.as_bytes());
                if ok {
                    expected.push(at);
                }
                ok
            });
            assert_eq!(offsets, expected, "{parts} parts");
        }
    }
}
