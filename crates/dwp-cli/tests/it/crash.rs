//! Crash safety: SIGKILL appends at random points; concurrent writers never interleave.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use canonical_json::Value;

use crate::support::{Scratch, expect};

fn append_cmd(s: &Scratch, statement: &str, force: bool) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dwp"));
    cmd.args([
        "ledger",
        "--plan",
        s.plan().to_str().unwrap(),
        "append",
        "--type",
        "observation",
        "--trust",
        "asserted",
        "--json",
    ])
    .arg(format!("{{\"statement\":\"{statement}\"}}"))
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    if force {
        cmd.arg("--force");
    }
    cmd
}

fn acked_seq(stdout: &[u8]) -> Option<i64> {
    String::from_utf8_lossy(stdout)
        .trim()
        .strip_prefix("OK: appended observation seq ")?
        .parse()
        .ok()
}

/// xorshift: a deterministic stream of kill delays.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn sigkilled_appends_never_lose_acknowledged_events() {
    let s = Scratch::new();
    s.materialize();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut acked: Vec<(i64, String)> = Vec::new();
    let mut force = false;
    for i in 0..60 {
        let statement = format!("crash probe {i}");
        let mut child = append_cmd(&s, &statement, force).spawn().unwrap();
        std::thread::sleep(Duration::from_micros(rng.next() % 15_000));
        if i % 10 != 9 {
            let _ = child.kill(); // SIGKILL (every tenth append runs to completion)
        }
        let out = child.wait_with_output().unwrap();
        if let Some(seq) = acked_seq(&out.stdout) {
            acked.push((seq, statement));
        }
        // A kill between the lock's mkdir and its owner.json leaves an ownerless lock, which
        // the journal crate treats as held (a live writer may be in that window): the operator
        // breaks it with --force.
        force = String::from_utf8_lossy(&out.stderr).contains("owner.json missing or unreadable");
        // Occasionally tear the tail by hand too, as a crash mid-write would.
        if i % 15 == 7 {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(s.plan().join("journal.ndjson"))
                .unwrap();
            f.write_all(b"{\"schema\":\"https://deepworkplan.com/sch").unwrap();
        }
        // A killed writer leaves its lock behind; the next writer breaks it (dead pid).
    }
    // One clean writer repairs whatever is left and records it.
    let out = s.ledger(&["project", "--force"]);
    expect(&out, 0, "OK: state.json projected");
    assert!(!acked.is_empty());
    let events = s.journal();
    let seqs: Vec<i64> =
        events.iter().map(|e| e.get("seq").and_then(Value::as_i64).unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "seq strictly increases: {seqs:?}");
    for (seq, statement) in &acked {
        let found =
            events.iter().find(|e| e.get("seq").and_then(Value::as_i64) == Some(*seq)).unwrap();
        assert_eq!(found.get("statement").and_then(Value::as_str), Some(statement.as_str()));
    }
    assert!(
        events
            .iter()
            .filter(|e| e.get("type").and_then(Value::as_str) == Some("journal_repair"))
            .count()
            >= 1
    );
    let contract = s.plan().join("contract.json");
    let journal = s.plan().join("journal.ndjson");
    expect(
        &crate::dwp(&[
            "contract",
            "validate-journal",
            journal.to_str().unwrap(),
            "--contract",
            contract.to_str().unwrap(),
        ]),
        0,
        "journal events valid",
    );
}

#[test]
fn concurrent_writers_never_interleave_or_lose_events() {
    let s = Scratch::new();
    s.materialize();
    let per_writer = 15;
    let results: Vec<Vec<(i64, String)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|w| {
                let s = &s;
                scope.spawn(move || {
                    let mut acked = Vec::new();
                    let deadline = Instant::now() + Duration::from_secs(120);
                    for i in 0..per_writer {
                        let statement = format!("writer {w} event {i}");
                        loop {
                            let out = append_cmd(s, &statement, false).output().unwrap();
                            if let Some(seq) = acked_seq(&out.stdout) {
                                acked.push((seq, statement.clone()));
                                break;
                            }
                            let err = String::from_utf8_lossy(&out.stderr);
                            assert!(err.contains("another writer holds the plan lock"), "{err}");
                            assert!(Instant::now() < deadline, "lock never released");
                            std::thread::sleep(Duration::from_millis(2));
                        }
                    }
                    acked
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let events = s.journal();
    assert_eq!(events.len(), 1 + 2 * per_writer);
    let seqs: BTreeSet<i64> =
        events.iter().map(|e| e.get("seq").and_then(Value::as_i64).unwrap()).collect();
    assert_eq!(seqs.len(), events.len(), "no duplicate seq");
    for (seq, statement) in results.iter().flatten() {
        let found =
            events.iter().find(|e| e.get("seq").and_then(Value::as_i64) == Some(*seq)).unwrap();
        assert_eq!(found.get("statement").and_then(Value::as_str), Some(statement.as_str()));
    }
}
