//! Byte-for-byte interop with the upstream Python helpers, when a copy of the pack is at hand.
//!
//! The upstream pack (`DailybotHQ/deepworkplan-skill`, folder `skills/deepworkplan/`) is not
//! published to PyPI or npm, so these tests are `#[ignore]`d: run them with `--ignored` and
//! `DWP_UPSTREAM_PACK` pointing at a checkout of that folder (and `python3` on the path).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{Scratch, expect, text};

fn upstream() -> PathBuf {
    crate::golden::upstream_pack(&["ledger.py"])
}

fn py(pack: &Path, script: &str, args: &[&str]) -> std::process::Output {
    Command::new("python3").arg(pack.join("shared").join(script)).args(args).output().unwrap()
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type().unwrap().is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

#[test]
#[ignore = "needs an upstream checkout: DWP_UPSTREAM_PACK=/path/to/skills/deepworkplan cargo test -p dwp-cli --test it -- --ignored"]
fn dwp_and_upstream_project_the_same_bytes_and_read_each_others_journals() {
    let pack = upstream();
    let s = Scratch::new();
    s.materialize();
    expect(&s.ledger(&["start", "--task", "T-one"]), 0, "OK");
    expect(
        &s.ledger(&["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""]),
        0,
        "RAN",
    );
    std::fs::write(s.plan().join("REVIEW.txt"), "ok\n").unwrap();
    expect(
        &s.ledger(&[
            "signoff",
            "--criterion",
            "AC-review",
            "--evidence-path",
            "REVIEW.txt",
            "--authority",
            "dev",
        ]),
        0,
        "OK",
    );
    expect(&s.ledger(&["start", "--task", "T-two"]), 0, "OK");
    expect(
        &s.ledger(&["gate", "--task", "T-two", "--criterion", "AC-fail", "--json", "\"false\""]),
        1,
        "RAN: exit 1",
    );
    expect(&s.ledger(&["complete", "--task", "T-two"]), 4, "REFUSED");
    expect(&s.ledger(&["project"]), 0, "OK");
    let ours = std::fs::read(s.plan().join("state.json")).unwrap();

    // Upstream validators accept what dwp wrote.
    let plan = s.plan();
    let journal = plan.join("journal.ndjson");
    let contract = plan.join("contract.json");
    let out = py(
        &pack,
        "contract_v6.py",
        &["validate-journal", journal.to_str().unwrap(), "--contract", contract.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));

    // Upstream's projector over the same journal writes the same bytes.
    let twin = s._tmp.path().join("twin");
    copy_tree(&s.root, &twin);
    let twin_plan = twin.join(".dwp/plans").join(crate::support::PLAN);
    let out = py(&pack, "ledger.py", &["--plan", twin_plan.to_str().unwrap(), "project"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let theirs = std::fs::read(twin_plan.join("state.json")).unwrap();
    assert_eq!(
        text(&ours),
        text(&theirs).replace(twin.to_str().unwrap(), s.root.to_str().unwrap())
    );

    // Upstream continues the dwp plan; dwp continues the upstream-extended journal.
    let out = py(
        &pack,
        "ledger.py",
        &[
            "--plan",
            twin_plan.to_str().unwrap(),
            "gate",
            "--task",
            "T-two",
            "--criterion",
            "AC-fail",
            "--json",
            "\"true\"",
            "--no-reuse",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = crate::dwp(&[
        "ledger",
        "--plan",
        twin_plan.to_str().unwrap(),
        "complete",
        "--task",
        "T-two",
    ]);
    expect(&out, 0, "OK: T-two criteria satisfied: AC-fail");
    let out = crate::dwp(&["ledger", "--plan", twin_plan.to_str().unwrap(), "project"]);
    expect(&out, 0, "OK");
    let ours = std::fs::read(twin_plan.join("state.json")).unwrap();
    let out = py(&pack, "ledger.py", &["--plan", twin_plan.to_str().unwrap(), "project"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&ours), text(&std::fs::read(twin_plan.join("state.json")).unwrap()));
}

/// The inspect listing and the snapshot bytes both implementations print for one plan.
fn views(pack: &Path, plan: &Path) -> (String, String, String, String) {
    let p = plan.to_str().unwrap();
    let ours = crate::dwp(&["ledger", "--plan", p, "inspect"]);
    assert_eq!(ours.status.code(), Some(0), "{}", text(&ours.stderr));
    let theirs = py(pack, "ledger.py", &["--plan", p, "inspect"]);
    assert_eq!(theirs.status.code(), Some(0), "{}", text(&theirs.stderr));
    let out = crate::dwp(&["ledger", "--plan", p, "project"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let ours_state = text(&std::fs::read(plan.join("state.json")).unwrap());
    let out = py(pack, "ledger.py", &["--plan", p, "project"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let theirs_state = text(&std::fs::read(plan.join("state.json")).unwrap());
    (text(&ours.stdout), text(&theirs.stdout), ours_state, theirs_state)
}

fn upstream_accepts_journal(pack: &Path, plan: &Path) {
    let out = py(
        pack,
        "contract_v6.py",
        &[
            "validate-journal",
            plan.join("journal.ndjson").to_str().unwrap(),
            "--contract",
            plan.join("contract.json").to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
}

#[test]
#[ignore = "needs an upstream checkout: DWP_UPSTREAM_PACK=/path/to/skills/deepworkplan cargo test -p dwp-cli --test it -- --ignored"]
fn a_plan_built_by_upstream_continues_under_dwp_and_back() {
    let pack = upstream();
    let s = Scratch::new();
    let plan = s.plan();
    let p = plan.to_str().unwrap().to_owned();
    let up = |args: &[&str]| {
        let mut all = vec!["--plan", p.as_str()];
        all.extend_from_slice(args);
        py(&pack, "ledger.py", &all)
    };
    // Upstream: materialize, start, a passing gate, a signoff, completion.
    let c = s.contract_file();
    let out = up(&["materialize", "--contract", c.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // dwp recognises the upstream materialization as complete (resumed, nothing written).
    let before = std::fs::read(plan.join("journal.ndjson")).unwrap();
    expect(
        &s.ledger(&["materialize", "--contract", c.to_str().unwrap()]),
        0,
        "resumed an interrupted materialization",
    );
    assert_eq!(before, std::fs::read(plan.join("journal.ndjson")).unwrap());
    for args in [
        &["start", "--task", "T-one"][..],
        &["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""],
    ] {
        let out = up(args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    std::fs::write(plan.join("REVIEW.txt"), "ok\n").unwrap();
    let out = up(&[
        "signoff",
        "--criterion",
        "AC-review",
        "--evidence-path",
        "REVIEW.txt",
        "--authority",
        "dev",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // dwp continues: completion of the upstream evidence, a new task, a failing gate.
    expect(&s.ledger(&["complete", "--task", "T-one"]), 0, "OK: T-one criteria satisfied");
    expect(&s.ledger(&["start", "--task", "T-two"]), 0, "OK: task_start T-two at seq 5");
    expect(
        &s.ledger(&["gate", "--task", "T-two", "--criterion", "AC-fail", "--json", "[\"false\"]"]),
        1,
        "RAN: exit 1, seq 6",
    );
    expect(&s.ledger(&["complete", "--task", "T-two"]), 4, "REFUSED: completion of T-two");
    upstream_accepts_journal(&pack, &plan);
    let (ours, theirs, ours_state, theirs_state) = views(&pack, &plan);
    assert_eq!(ours, theirs);
    assert_eq!(ours_state, theirs_state);
    // Back to upstream: the dwp-written refusal and gate are read; a passing run completes.
    let out = up(&[
        "gate",
        "--task",
        "T-two",
        "--criterion",
        "AC-fail",
        "--json",
        "\"true\"",
        "--no-reuse",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = up(&["complete", "--task", "T-two"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // And dwp again: both agree on the final state, byte for byte.
    expect(&s.ledger(&["complete", "--task", "T-two"]), 0, "OK: T-two criteria satisfied");
    upstream_accepts_journal(&pack, &plan);
    let (ours, theirs, ours_state, theirs_state) = views(&pack, &plan);
    assert_eq!(ours, theirs);
    assert_eq!(ours_state, theirs_state);
    assert!(ours_state.contains("\"status\": \"completed\""));
}

/// `updated_at` is the max `ts` over non-provenance events (DWP.md, snapshot), so a
/// `view_render` never moves the snapshot it is anchored to. The 25ecfadf upstream took every
/// event (a divergence dwp kept on purpose); upstream bd935a09 (F-19) excludes provenance too,
/// and the two snapshots are byte-identical.
#[test]
#[ignore = "needs an upstream checkout: DWP_UPSTREAM_PACK=/path/to/skills/deepworkplan cargo test -p dwp-cli --test it -- --ignored"]
fn view_render_does_not_move_updated_at_in_dwp_or_upstream() {
    let pack = upstream();
    let s = Scratch::new();
    s.materialize();
    let plan = s.plan();
    let p = plan.to_str().unwrap();
    let digest = "b".repeat(64);
    let json = format!("{{\"view\":\"progress\",\"snapshot_digest\":\"{digest}\"}}");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let out =
        py(&pack, "ledger.py", &["--plan", p, "append", "--type", "view_render", "--json", &json]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (_, _, ours, theirs) = views(&pack, &plan);
    let events = s.journal();
    let ts = |i: usize| events[i].get("ts").and_then(|t| t.as_str()).unwrap().to_owned();
    assert_ne!(ts(0), ts(1));
    assert!(ours.contains(&format!("\"updated_at\": \"{}\"", ts(0))), "{ours}");
    assert_eq!(ours, theirs);
}
