//! The plan lock under contention: concurrent `ledger append` processes with no extra flag
//! wait for each other (bounded), an append either fails before writing or reports success,
//! and writers killed while holding the lock are broken out of it, so seqs stay 1..n with no
//! gap or duplicate.

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use canonical_json::Value;

use crate::support::Scratch;

fn append(s: &Scratch, statement: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dwp"));
    cmd.args(["ledger", "--plan", s.plan().to_str().unwrap(), "append", "--type", "observation"])
        .args(["--trust", "asserted", "--json"])
        .arg(format!("{{\"statement\":\"{statement}\"}}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Starts a writer and SIGKILLs it while it holds the plan lock (seen in `owner.json`);
/// returns whether it was caught holding it (it may also finish first).
fn kill_while_holding(s: &Scratch, statement: &str) -> bool {
    let owner = s.plan().join(".ledger.lock").join("owner.json");
    let mut child: Child = append(s, statement).spawn().unwrap();
    let needle = format!("\"pid\":{}", child.id());
    let deadline = Instant::now() + Duration::from_secs(60);
    let held = loop {
        if std::fs::read_to_string(&owner).is_ok_and(|o| o.contains(&needle)) {
            break true;
        }
        if child.try_wait().unwrap().is_some() || Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(Duration::from_micros(100));
    };
    child.kill().unwrap_or(());
    // Reaped at once: a zombie would still count as a live process.
    child.wait().unwrap();
    held && std::fs::read_to_string(&owner).is_ok_and(|o| o.contains(&needle))
}

#[test]
fn concurrent_appends_wait_and_killed_holders_are_broken() {
    const WRITERS: usize = 8;
    const EACH: usize = 12;
    let s = Scratch::new();
    s.materialize();
    let (results, killed_holders) = std::thread::scope(|scope| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let s = &s;
                scope.spawn(move || {
                    (0..EACH)
                        .map(|i| {
                            let statement = format!("writer {w} append {i}");
                            let out = append(s, &statement).output().unwrap();
                            (statement, out)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let s = &s;
        let killer = scope.spawn(move || {
            let mut caught = 0;
            for v in 0..60 {
                caught += usize::from(kill_while_holding(s, &format!("victim {v}")));
                if caught >= 3 {
                    break;
                }
            }
            caught
        });
        let results: Vec<_> = writers.into_iter().flat_map(|h| h.join().unwrap()).collect();
        (results, killer.join().unwrap())
    });
    assert!(killed_holders >= 1, "no writer was killed while holding the lock");
    // A killed holder leaves its lock behind; the next writer breaks it (dead pid).
    let after = append(&s, "after the kills").output().unwrap();
    assert!(after.status.success(), "{}", String::from_utf8_lossy(&after.stderr));

    let events = s.journal();
    let seqs: Vec<i64> =
        events.iter().map(|e| e.get("seq").and_then(Value::as_i64).unwrap()).collect();
    let expected: Vec<i64> = (1..=i64::try_from(events.len()).unwrap()).collect();
    assert_eq!(seqs, expected, "seqs are 1..n with no gap or duplicate");
    let by_statement: BTreeMap<&str, i64> = events
        .iter()
        .filter_map(|e| Some((e.get("statement")?.as_str()?, e.get("seq")?.as_i64()?)))
        .collect();
    let mut refused = 0;
    for (statement, out) in &results {
        let stdout = String::from_utf8_lossy(&out.stdout);
        if out.status.success() {
            let seq: i64 = stdout
                .trim()
                .strip_prefix("OK: appended observation seq ")
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{stdout}"));
            assert_eq!(by_statement.get(statement.as_str()), Some(&seq), "{statement}");
        } else {
            refused += 1;
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!by_statement.contains_key(statement.as_str()), "failed but written: {stderr}");
        }
    }
    assert!(refused * 20 < results.len(), "{refused} of {} appends refused", results.len());
}
