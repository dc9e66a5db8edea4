//! Unit tests for the crate's internals.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::scan::{Damage, ScanReport, TornCause, line_problem, scan_reader};
use crate::time::unix_seconds;
use crate::{Error, json_line, utc_timestamp};

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

fn scan_bytes(bytes: &[u8]) -> (Vec<(u64, Vec<u8>)>, ScanReport) {
    let mut seen = Vec::new();
    let report =
        scan_reader(bytes, json_line, |offset, line| seen.push((offset, line.to_vec()))).unwrap();
    (seen, report)
}

#[test]
fn utc_timestamp_known_instants() {
    assert_eq!(utc_timestamp(UNIX_EPOCH), "1970-01-01T00:00:00Z");
    assert_eq!(utc_timestamp(at(951_782_400)), "2000-02-29T00:00:00Z");
    assert_eq!(utc_timestamp(at(1_709_251_199)), "2024-02-29T23:59:59Z");
    assert_eq!(utc_timestamp(at(1_714_000_000)), "2024-04-24T23:06:40Z");
    assert_eq!(utc_timestamp(at(4_107_542_400)), "2100-03-01T00:00:00Z");
    assert_eq!(utc_timestamp(at(253_402_300_799)), "9999-12-31T23:59:59Z");
    // sub-second parts are dropped, never rounded up
    assert_eq!(utc_timestamp(at(59) + Duration::from_millis(999)), "1970-01-01T00:00:59Z");
}

#[test]
fn utc_timestamp_before_the_epoch_rounds_down() {
    assert_eq!(utc_timestamp(UNIX_EPOCH - Duration::from_millis(1)), "1969-12-31T23:59:59Z");
    assert_eq!(unix_seconds(UNIX_EPOCH - Duration::from_secs(1)), -1);
    assert_eq!(unix_seconds(UNIX_EPOCH - Duration::from_millis(1500)), -2);
    assert_eq!(
        utc_timestamp(UNIX_EPOCH - Duration::from_secs(86_400 * 365)),
        "1969-01-01T00:00:00Z"
    );
}

#[test]
fn json_line_accepts_any_single_json_value() {
    for good in [&b"{}"[..], b"[1,2]", b"1", b"\"x\"", b"null", b"  {\"a\":1}  ", b"{\"a\":1}\r"] {
        assert!(json_line(good), "{}", String::from_utf8_lossy(good));
    }
    for bad in [&b""[..], b"{", b"{\"a\":1", b"{} {}", b"{\"a\":1}x", b"NaN", b"{'a':1}"] {
        assert!(!json_line(bad), "{}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn line_problem_mirrors_the_scanner() {
    assert_eq!(line_problem(b"{}", json_line), None);
    assert_eq!(line_problem(b"{}\n{}", json_line), Some("line contains a newline"));
    assert_eq!(line_problem(b"", json_line), Some("line is empty or whitespace only"));
    assert_eq!(line_problem(b" \t\x0b\x0c\r", json_line), Some("line is empty or whitespace only"));
    assert_eq!(line_problem(b"\"\xff\"", json_line), Some("line is not valid UTF-8"));
    assert_eq!(line_problem(b"{\"a\"", json_line), Some("line is rejected by the validator"));
}

#[test]
fn scan_of_empty_input_is_clean() {
    let (seen, report) = scan_bytes(b"");
    assert!(seen.is_empty());
    assert_eq!(report, ScanReport { records: 0, good_len: 0, file_len: 0, damage: None });
}

#[test]
fn scan_reports_offsets_and_skips_blank_lines_like_upstream() {
    let input = b"{\"a\":1}\n\n  \t\n{\"b\":2}\n\x0b\n[3]\n";
    let (seen, report) = scan_bytes(input);
    let offsets: Vec<u64> = seen.iter().map(|(offset, _)| *offset).collect();
    assert_eq!(offsets, [0, 13, 23]);
    assert_eq!(seen[1].1, b"{\"b\":2}");
    let len = input.len() as u64;
    assert_eq!(report, ScanReport { records: 3, good_len: len, file_len: len, damage: None });
}

#[test]
fn a_bad_middle_line_is_corrupt_not_torn() {
    let input = b"{\"a\":1}\n{\"b\":\n{\"c\":3}\n";
    let (seen, report) = scan_bytes(input);
    assert_eq!(seen.len(), 1);
    assert_eq!(report.records, 1);
    assert_eq!(report.good_len, 8);
    assert_eq!(report.file_len, input.len() as u64);
    assert_eq!(
        report.damage,
        Some(Damage::Corrupt { byte_offset: 8, cause: TornCause::Unparsable })
    );
}

/// The torn/corrupt decision, one row per shape: (tail after a good line, torn?, cause).
#[test]
fn only_an_unterminated_unparsable_final_line_is_torn() {
    let rows: [(&[u8], bool, TornCause); 6] = [
        (b"{\"b\":", true, TornCause::Unparsable),
        (b"{\"b\":\n", false, TornCause::Unparsable),
        (b"\xc3\x28", true, TornCause::Undecodable),
        (b"\xc3\x28\n", false, TornCause::Undecodable),
        (b"xyz\n{}\n", false, TornCause::Unparsable),
        (b"xyz\n{", false, TornCause::Unparsable),
    ];
    for (tail, torn, cause) in rows {
        let input = [&b"{}\n"[..], tail].concat();
        let (_, report) = scan_bytes(&input);
        let expected = if torn {
            Damage::TornTail { byte_offset: 3, cause, discarded_bytes: tail.len() as u64 }
        } else {
            Damage::Corrupt { byte_offset: 3, cause }
        };
        assert_eq!(report.damage, Some(expected), "{:?}", String::from_utf8_lossy(tail));
    }
}

#[test]
fn a_json_line_the_validator_refuses_is_rejected_even_when_final_and_unterminated() {
    let no_sevens: crate::Validator = |line| !line.contains(&b'7');
    let report = scan_reader(&b"{}\n{\"seq\":7}"[..], no_sevens, |_, _| {}).unwrap();
    assert_eq!(report.damage, Some(Damage::Corrupt { byte_offset: 3, cause: TornCause::Rejected }));
    // Not JSON at all and unterminated: a torn append, whatever the validator.
    let report = scan_reader(&b"{}\n{\"seq\":7"[..], no_sevens, |_, _| {}).unwrap();
    assert!(matches!(report.damage, Some(Damage::TornTail { .. })), "{report:?}");
}

#[test]
fn line_number_counts_newlines_before_the_offset() {
    let input = b"a\n\nb\nc\n";
    assert_eq!(crate::line_number(&input[..], 0).unwrap(), 1);
    assert_eq!(crate::line_number(&input[..], 3).unwrap(), 3);
    assert_eq!(crate::line_number(&input[..], 5).unwrap(), 4);
}

#[test]
fn scan_checks_utf8_before_the_validator() {
    // accepts everything, so only the UTF-8 check can reject
    let report = scan_reader(&b"ok\n\xc3\x28"[..], |_| true, |_, _| {}).unwrap();
    assert_eq!(
        report.damage,
        Some(Damage::TornTail {
            byte_offset: 3,
            cause: TornCause::Undecodable,
            discarded_bytes: 2
        })
    );
}

#[test]
fn scan_treats_a_blank_unterminated_tail_as_missing_newline_like_upstream() {
    // Python: torn is None and raw does not end with b'\n' => framing.
    let (_, report) = scan_bytes(b"{}\n  ");
    assert_eq!(report.records, 1);
    assert_eq!(report.damage, Some(Damage::MissingNewline { byte_offset: 5 }));
}

#[test]
fn damage_exposes_upstream_cause_texts() {
    let torn = |cause| Damage::TornTail { byte_offset: 7, cause, discarded_bytes: 1 };
    assert_eq!(torn(TornCause::Undecodable).cause(), "undecodable bytes in final line");
    assert_eq!(torn(TornCause::Unparsable).cause(), "final line does not parse (torn append)");
    let missing = Damage::MissingNewline { byte_offset: 9 };
    assert_eq!(
        missing.cause(),
        "final event complete, framing newline restored after an interrupted append"
    );
    assert_eq!((torn(TornCause::Unparsable).byte_offset(), missing.byte_offset()), (7, 9));
    assert_eq!(TornCause::Undecodable.to_string(), "undecodable bytes in final line");
}

#[test]
fn error_messages() {
    let path = PathBuf::from("/plan/journal.ndjson");
    let collision = Error::Collision { path: path.clone(), expected: 10, found: 25 };
    assert_eq!(
        collision.to_string(),
        "journal changed size behind this writer (expected 10 bytes, found 25) — another writer bypassed the lock; this session refuses to append rather than interleave histories"
    );
    let held = Error::LockHeld {
        path: path.clone(),
        identity: "dwp-ledger/6.0 pid:7".to_owned(),
        started_ts: "2024-04-24T23:06:40Z".to_owned(),
    };
    assert_eq!(
        held.to_string(),
        "another writer holds the plan lock: dwp-ledger/6.0 pid:7 (started 2024-04-24T23:06:40Z); use --force only after verifying that writer is dead"
    );
    let io = Error::Io { path: path.clone(), error: std::io::Error::other("disk on fire") };
    assert_eq!(io.to_string(), "/plan/journal.ndjson: disk on fire");
    assert_eq!(io.path(), path);
    assert!(!io.is_not_found());
    let locked = Error::Locked { path: path.clone() };
    assert_eq!(locked.to_string(), "/plan/journal.ndjson: journal is locked by another writer");
    let not_found = Error::io(&path, std::io::ErrorKind::NotFound.into());
    assert!(not_found.is_not_found());
}

/// Rename-then-verify: a lock is removed only if it still holds the owner that was judged
/// stale; a lock that changed hands meanwhile is put back untouched, and nothing is left aside.
#[test]
fn breaking_a_lock_removes_only_the_owner_that_was_judged() {
    use crate::lockdir::{OWNER_FILE, break_if_unchanged, lock_path};
    let plan = tempfile::tempdir().unwrap();
    let dir = lock_path(plan.path());
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join(OWNER_FILE), b"{\"pid\":2}").unwrap();
    // Judged from the previous holder's file: the new holder's lock is put back.
    assert!(!break_if_unchanged(&dir, Some(b"{\"pid\":1}")).unwrap());
    assert_eq!(std::fs::read(dir.join(OWNER_FILE)).unwrap(), b"{\"pid\":2}");
    // Judged without an owner file while one now exists: put back too.
    assert!(!break_if_unchanged(&dir, None).unwrap());
    assert!(dir.join(OWNER_FILE).exists());
    // The very owner judged: removed.
    assert!(break_if_unchanged(&dir, Some(b"{\"pid\":2}")).unwrap());
    assert!(!dir.exists());
    // Already gone: nothing to break.
    assert!(!break_if_unchanged(&dir, Some(b"{\"pid\":2}")).unwrap());
    let left: Vec<_> = std::fs::read_dir(plan.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}
