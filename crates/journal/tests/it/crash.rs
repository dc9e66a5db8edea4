//! Crash test: a child process appends and acknowledges records until it
//! is killed with SIGKILL; after every kill the journal must hold every
//! acknowledged record, in order, exactly once, and nothing else but
//! possibly a torn tail.
//!
//! The child is this very test binary, re-executed with a filter selecting
//! [`crash_child`] and the journal path in [`CHILD_ENV`]. It acknowledges
//! record `n` by writing `ack:<n>` to its stdout (a pipe) only after
//! `append` returned. Record `n` always has the content [`line_for`]`(n)`,
//! so any loss, duplicate, reordering or corruption is visible.

use std::fs;
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::Duration;

use journal::{
    CAUSE_MISSING_NEWLINE, CAUSE_UNDECODABLE, CAUSE_UNPARSABLE, Damage, Journal, OpenOptions,
    json_line, scan,
};

/// Journal path for the child; unset in normal test runs.
const CHILD_ENV: &str = "JOURNAL_CRASH_CHILD";
/// First record number the child appends.
const START_ENV: &str = "JOURNAL_CRASH_START";
/// Records per `append_batch` call (1 = plain `append`).
const BATCH_ENV: &str = "JOURNAL_CRASH_BATCH";
/// How many records the child appends before exiting on its own.
const LIMIT_ENV: &str = "JOURNAL_CRASH_LIMIT";

const ROUNDS: u64 = 30;

/// The one valid content of record `n`: varying length, checkable.
fn line_for(n: u64) -> String {
    let pad_len = usize::try_from(n.wrapping_mul(2_654_435_761) % 181).unwrap();
    let pad_char = char::from(b'a' + u8::try_from(n % 26).unwrap());
    format!("{{\"n\":{n},\"pad\":\"{}\"}}", pad_char.to_string().repeat(pad_len))
}

fn env_u64(name: &str) -> u64 {
    std::env::var(name).unwrap().parse().unwrap()
}

/// The child side; does nothing unless [`CHILD_ENV`] is set.
#[test]
fn crash_child() {
    let Ok(path) = std::env::var(CHILD_ENV) else { return };
    let (start, batch, limit) = (env_u64(START_ENV), env_u64(BATCH_ENV), env_u64(LIMIT_ENV));
    let (mut journal, _) = Journal::open(&path, &OpenOptions::new().create(true)).unwrap();
    // bypasses the test harness's output capture: straight to the pipe
    let mut out = std::io::stdout().lock();
    let mut n = start;
    while n < start + limit {
        let count = batch.min(start + limit - n);
        if count == 1 {
            journal.append(line_for(n).as_bytes()).unwrap();
        } else {
            journal.append_batch((n..n + count).map(line_for)).unwrap();
        }
        for acked in n..n + count {
            writeln!(out, "ack:{acked}").unwrap();
        }
        out.flush().unwrap();
        n += count;
    }
}

/// xorshift64: deterministic delays and choices without a `rand` dependency.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

/// Runs one child from record `start`; kills it after `kill_after` unless
/// it is `None`. Returns the acknowledged record numbers.
fn run_child(
    path: &Path,
    start: u64,
    batch: u64,
    limit: u64,
    kill_after: Option<Duration>,
) -> Vec<u64> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["crash::crash_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, path)
        .env(START_ENV, start.to_string())
        .env(BATCH_ENV, batch.to_string())
        .env(LIMIT_ENV, limit.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = thread::spawn(move || {
        let mut output = Vec::new();
        stdout.read_to_end(&mut output).unwrap();
        output
    });
    if let Some(delay) = kill_after {
        thread::sleep(delay);
        child.kill().unwrap(); // SIGKILL; fine if it already exited
    }
    let status = child.wait().unwrap();
    let output = reader.join().unwrap();
    let text = String::from_utf8(output).unwrap();
    // only complete lines; the harness may print before the first ack
    let complete = &text[..text.rfind('\n').map_or(0, |end| end + 1)];
    let acks: Vec<u64> = complete
        .lines()
        .filter_map(|line| line.split_once("ack:"))
        .map(|(_, n)| n.parse().unwrap())
        .collect();
    let expected: Vec<u64> = (start..start + acks.len() as u64).collect();
    assert_eq!(acks, expected, "acknowledgements out of order");
    match (status.signal(), status.success()) {
        (Some(9), _) => assert!(kill_after.is_some()),
        (None, true) => assert_eq!(acks.len() as u64, limit, "child exited early"),
        _ => panic!("crash child failed: {status}; output:\n{text}"),
    }
    acks
}

/// Opens (repairing) and checks the whole journal: records `0..count` with
/// exactly their content, in order, and every acknowledged record present.
/// Returns the record count and the damage found.
fn verify(path: &Path, acked_through: Option<u64>) -> (u64, Option<Damage>) {
    let before = fs::read(path).unwrap();
    let (journal, report) = Journal::open(path, &OpenOptions::new()).unwrap();
    let records = journal.read_records().unwrap();
    drop(journal);
    for (n, record) in (0u64..).zip(&records) {
        assert_eq!(record.line, line_for(n).as_bytes(), "record {n}");
        let value: serde_json::Value = serde_json::from_slice(&record.line).unwrap();
        assert_eq!(value["n"], n);
    }
    let count = records.len() as u64;
    if let Some(acked) = acked_through {
        assert!(count > acked, "acknowledged record {acked} lost ({count} records)");
    }
    let after = fs::read(path).unwrap();
    let good_len = usize::try_from(report.good_len).unwrap();
    match report.damage {
        None => assert_eq!(after, before),
        Some(Damage::TornTail { byte_offset, .. }) => {
            assert_eq!(byte_offset, report.good_len);
            assert_eq!(after, before[..good_len]);
        }
        Some(Damage::MissingNewline { .. }) => {
            assert_eq!(after, [&before[..], b"\n"].concat());
        }
        Some(other) => panic!("unexpected damage {other:?}"),
    }
    (count, report.damage)
}

#[test]
fn sigkill_never_loses_acknowledged_appends() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.ndjson");
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut next = 0u64; // records in the journal = next record number
    let mut acked_through: Option<u64> = None;
    let mut injected = 0;

    for round in 0..ROUNDS {
        let batch = if round % 3 == 2 { 2 + rng.below(3) } else { 1 };
        let delay = Duration::from_millis(3 + rng.below(100));
        let acks = run_child(&path, next, batch, 1_000_000, Some(delay));
        if let Some(&last) = acks.last() {
            acked_through = Some(last);
        }
        // a kill leaves at most a torn tail (which `verify` checks is cut
        // off exactly); every acknowledged record survives
        let (count, _) = verify(&path, acked_through);
        assert!(count >= next, "records lost: {count} < {next}");
        next = count;

        // simulate a torn write of record `next` the kill could have left
        let kind = round % 4;
        if kind == 0 {
            continue;
        }
        injected += 1;
        let full = line_for(next);
        let cut = 1 + usize::try_from(rng.below(full.len() as u64 - 1)).unwrap();
        let fragment = match kind {
            1 => full.as_bytes()[..cut].to_vec(),
            2 => [&full.as_bytes()[..cut], b"\xff\xfe"].concat(),
            _ => full.as_bytes().to_vec(), // complete record, newline lost
        };
        let len_before = fs::metadata(&path).unwrap().len();
        let mut file = fs::OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(&fragment).unwrap();
        drop(file);
        let bytes = fs::read(&path).unwrap();
        let report = scan(&path, json_line).unwrap();
        assert_eq!(fs::read(&path).unwrap(), bytes, "scan must not modify");
        let damage = report.damage.unwrap();
        let expected_cause = match kind {
            1 => CAUSE_UNPARSABLE,
            2 => CAUSE_UNDECODABLE,
            _ => CAUSE_MISSING_NEWLINE,
        };
        assert_eq!(damage.cause(), expected_cause);
        if kind == 3 {
            // reported where the newline goes: the end of the file
            let byte_offset = len_before + fragment.len() as u64;
            assert_eq!(damage, Damage::MissingNewline { byte_offset });
            next += 1;
        } else {
            // reported where the torn line starts: the old end of the file
            let discarded_bytes = fragment.len() as u64;
            assert!(matches!(
                damage,
                Damage::TornTail { byte_offset, discarded_bytes: d, .. }
                    if byte_offset == len_before && d == discarded_bytes
            ));
        }
        // half the time repair here; otherwise the next child repairs, and
        // the next `verify` proves it did (a leftover fragment would end
        // the good prefix and lose the child's acknowledged records)
        if round % 2 == 0 {
            let (count, repaired) = verify(&path, acked_through);
            assert_eq!((count, repaired), (next, Some(damage)));
        }
    }
    // a final unkilled child proves children really append (no vacuous pass)
    let acks = run_child(&path, next, 1, 25, None);
    assert_eq!(acks.len(), 25);
    let (count, damage) = verify(&path, acks.last().copied());
    assert_eq!((count, damage), (next + 25, None));
    assert!(injected >= ROUNDS / 2);
}
