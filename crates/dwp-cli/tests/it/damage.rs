//! A journal that never loses a line: damage (a bad line that is not a torn final line, a seq
//! that is no journal position) is reported with its position, every writer refuses over it
//! and keeps every byte, `verify` says NOT CONFORMANT, and only the explicit `ledger repair`
//! removes a line, after setting the whole journal aside and recording the removal.

use canonical_json::Value;

use crate::support::{Scratch, expect, text};

const OBS: [&str; 5] = ["append", "--type", "observation", "--trust", "asserted"];

fn observe(s: &Scratch, statement: &str) -> std::process::Output {
    let json = format!("{{\"statement\":\"{statement}\"}}");
    let mut args = OBS.to_vec();
    args.extend(["--json", json.as_str()]);
    s.ledger(&args)
}

fn verify(s: &Scratch) -> std::process::Output {
    crate::dwp(&["verify", s.plan().to_str().unwrap()])
}

/// approval (1), task_start (2), observation (3): the journal of the report.
fn three_events() -> (Scratch, std::path::PathBuf, Vec<String>) {
    let s = Scratch::new();
    s.materialize();
    expect(&s.ledger(&["start", "--task", "T-one"]), 0, "seq 2");
    expect(&observe(&s, "third"), 0, "seq 3");
    let journal = s.plan().join("journal.ndjson");
    let lines = std::fs::read_to_string(&journal).unwrap().lines().map(str::to_owned).collect();
    (s, journal, lines)
}

/// Every writer command, tail-only or full, refuses with exit 1 naming the line, and the
/// journal keeps every byte; the readers refuse too and `verify` names the line.
fn assert_refused_everywhere(s: &Scratch, journal: &std::path::Path, line: u64) {
    let before = std::fs::read(journal).unwrap();
    let needle = format!("journal.ndjson line {line} (byte ");
    for args in [
        &OBS[..],
        &["start", "--task", "T-one"],
        &["project"],
        &["roll"],
        &["complete", "--task", "T-one"],
    ] {
        let mut args = args.to_vec();
        if args[0] == "append" {
            args.extend(["--json", "{\"statement\":\"after damage\"}"]);
        }
        let out = s.ledger(&args);
        expect(&out, 1, &needle);
        expect(&out, 1, "nothing was written");
        assert_eq!(std::fs::read(journal).unwrap(), before, "{args:?} kept every byte");
    }
    expect(&s.ledger(&["inspect"]), 1, &needle);
    let out = verify(s);
    expect(&out, 1, "NOT CONFORMANT");
    expect(&out, 1, &format!("journal line {line} (byte "));
    assert_eq!(std::fs::read(journal).unwrap(), before);
}

/// The shapes of one bad line in the middle: none cuts the valid line after it.
#[test]
fn a_damaged_middle_line_is_refused_by_every_writer_and_never_cut() {
    for bad in ["xyz", "{\"a\":", "{\"schema\": \"https://deepworkplan.com/sch", "\u{1}\u{2}"] {
        let (s, journal, lines) = three_events();
        std::fs::write(&journal, format!("{}\n{bad}\n{}\n", lines[0], lines[2])).unwrap();
        assert_refused_everywhere(&s, &journal, 2);
    }
}

/// A final line that kept its newline, and a complete final event without one whose seq is
/// no position, are damage too: only a torn (unterminated, unparsable) final line is cut.
#[test]
fn a_terminated_bad_final_line_or_a_complete_bad_event_is_damage_not_a_torn_tail() {
    let (s, journal, lines) = three_events();
    std::fs::write(&journal, format!("{}\n{}\n{{\"seq\":3,\n", lines[0], lines[1])).unwrap();
    assert_refused_everywhere(&s, &journal, 3);
    let last = lines[2].replace("\"seq\":3", "\"seq\":1e3");
    std::fs::write(&journal, format!("{}\n{}\n{last}", lines[0], lines[1])).unwrap();
    assert_refused_everywhere(&s, &journal, 3);
}

/// A seq that is no journal position, in the last line or in the middle: 2^63 and more must
/// not read as 0, and -1, 0, 1.5, 1e3, a string, none are refused and flagged.
#[test]
fn a_seq_that_is_no_position_is_flagged_by_verify_and_refused_by_every_writer() {
    let rows = [
        "9223372036854775808",
        "18446744073709551616",
        "-1",
        "0",
        "1.5",
        "1e3",
        "3.0",
        "\"3\"",
        "null",
    ];
    for seq in rows {
        let (s, journal, lines) = three_events();
        let bad = lines[2].replace("\"seq\":3", &format!("\"seq\":{seq}"));
        assert_ne!(bad, lines[2]);
        // As the last line, then in the middle.
        std::fs::write(&journal, format!("{}\n{}\n{bad}\n", lines[0], lines[1])).unwrap();
        assert_refused_everywhere(&s, &journal, 3);
        std::fs::write(&journal, format!("{}\n{bad}\n{}\n", lines[0], lines[2])).unwrap();
        assert_refused_everywhere(&s, &journal, 2);
        let out = verify(&s);
        let all = text(&out.stdout);
        assert!(all.contains("seq is") || all.contains("seq does not fit"), "{seq}: {all}");
    }
    // A seq without any member at all.
    let (s, journal, lines) = three_events();
    let bad = lines[2].replace("\"seq\":3,", "");
    std::fs::write(&journal, format!("{}\n{}\n{bad}\n", lines[0], lines[1])).unwrap();
    assert_refused_everywhere(&s, &journal, 3);
}

/// A reused seq (well formed, but not above the one before) is NOT CONFORMANT.
#[test]
fn a_reused_seq_is_not_conformant() {
    let (s, journal, lines) = three_events();
    expect(&verify(&s), 0, "CONFORMANT");
    let reused = lines[2].replace("\"seq\":3", "\"seq\":2");
    std::fs::write(&journal, format!("{}\n{}\n{reused}\n", lines[0], lines[1])).unwrap();
    let out = verify(&s);
    expect(&out, 1, "NOT CONFORMANT");
    expect(&out, 1, "seq 2 follows 2");
}

/// The explicit repair: refuses to remove a valid event or a line that is not damaged, sets
/// the whole journal aside byte for byte, removes only the named line, records why, and the
/// writer then continues above the highest seq (the lost line's seq is not reused).
#[test]
fn repair_sets_the_journal_aside_removes_only_the_named_line_and_records_it() {
    let (s, journal, lines) = three_events();
    let damaged = format!("{}\nxyz\n{}\n", lines[0], lines[2]);
    std::fs::write(&journal, &damaged).unwrap();
    expect(&s.ledger(&["repair", "--line", "1"]), 1, "line 1 is a valid event");
    expect(&s.ledger(&["repair", "--line", "3"]), 1, "line 3 is a valid event");
    expect(&s.ledger(&["repair", "--line", "9"]), 1, "has no line 9");
    assert_eq!(std::fs::read_to_string(&journal).unwrap(), damaged, "refusals change nothing");
    let out = s.ledger(&["repair", "--line", "2"]);
    expect(&out, 0, "OK: removed damaged line 2 (byte ");
    let aside: Vec<_> = std::fs::read_dir(s.plan())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("journal.ndjson.damaged-"))
        .collect();
    assert_eq!(aside.len(), 1);
    assert_eq!(std::fs::read_to_string(aside[0].path()).unwrap(), damaged, "set aside whole");
    let events = s.journal();
    let types: Vec<_> = events.iter().map(|e| e.get("type").and_then(Value::as_str)).collect();
    assert_eq!(types, [Some("approval"), Some("observation"), Some("journal_repair")]);
    let cause = events[2].get("cause").and_then(Value::as_str).unwrap();
    assert!(cause.contains("line 2 was damaged") && cause.contains("journal.ndjson.damaged-"));
    assert!(!cause.contains("(torn append)"), "{cause}");
    assert_eq!(events[2].get("seq").and_then(Value::as_i64), Some(4));
    expect(&observe(&s, "after the repair"), 0, "seq 5");
    expect(&verify(&s), 0, "CONFORMANT");
}

/// Two damaged lines: naming one refuses (naming the other) and changes nothing; naming both
/// repairs both.
#[test]
fn repair_of_one_line_refuses_while_another_is_damaged() {
    let (s, journal, lines) = three_events();
    let damaged = format!("{}\nxyz\n{}\n{{\"seq\":0}}\n", lines[0], lines[2]);
    std::fs::write(&journal, &damaged).unwrap();
    expect(&s.ledger(&["repair", "--line", "2"]), 1, "line 4 (byte ");
    assert_eq!(std::fs::read_to_string(&journal).unwrap(), damaged);
    expect(&s.ledger(&["repair", "--line", "2", "--line", "4"]), 0, "removed damaged line 4");
    assert_eq!(s.types(), ["approval", "observation", "journal_repair", "journal_repair"]);
}

/// Readers refuse a symlinked journal, as writers do, instead of reading whatever it names.
#[test]
fn readers_refuse_a_symlinked_journal() {
    let s = Scratch::new();
    s.materialize();
    let journal = s.plan().join("journal.ndjson");
    let elsewhere = s._tmp.path().join("elsewhere.ndjson");
    std::fs::rename(&journal, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &journal).unwrap();
    expect(&s.ledger(&["inspect"]), 1, "is a symbolic link — refusing to read through it");
    let out = verify(&s);
    expect(&out, 1, "is a symbolic link");
    expect(&observe(&s, "x"), 1, "is a symbolic link");
    let status = crate::dwp(&["status", "--plan", s.plan().to_str().unwrap()]);
    assert_ne!(status.status.code(), Some(0), "{}", text(&status.stdout));
}

/// An edit in the middle that keeps the journal's length and its last line (seq 2 → 0) is
/// still found by a plain append, whose scan checkpoint would otherwise skip that prefix.
#[test]
fn a_same_length_edit_in_the_middle_is_found_by_a_plain_append() {
    let (s, journal, lines) = three_events();
    expect(&observe(&s, "fourth"), 0, "seq 4");
    let text = std::fs::read_to_string(&journal).unwrap();
    let edited = text.replacen("\"seq\":2,", "\"seq\":0,", 1);
    assert_eq!((edited.len(), edited.lines().last()), (text.len(), text.lines().last()));
    assert!(edited.contains(&lines[0]));
    std::fs::write(&journal, &edited).unwrap();
    assert_refused_everywhere(&s, &journal, 2);
}
