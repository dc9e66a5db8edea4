//! Byte-for-byte interop with the upstream Python helpers, when a copy of the pack is at hand.
//!
//! The upstream pack (`DailybotHQ/deepworkplan-skill`, folder `skills/deepworkplan/`) is not
//! published to PyPI or npm, so this test runs only when `DWP_UPSTREAM_PACK` points at a
//! checkout of that folder (and `python3` exists); otherwise it prints a notice and passes.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{Scratch, expect, text};

fn upstream() -> Option<PathBuf> {
    let Some(pack) = std::env::var_os("DWP_UPSTREAM_PACK").map(PathBuf::from) else {
        eprintln!(
            "notice: DWP_UPSTREAM_PACK not set; skipping the upstream byte-for-byte comparison"
        );
        return None;
    };
    if !pack.join("shared/ledger.py").is_file() {
        eprintln!("notice: {} has no shared/ledger.py; skipping", pack.display());
        return None;
    }
    Some(pack)
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
fn dwp_and_upstream_project_the_same_bytes_and_read_each_others_journals() {
    let Some(pack) = upstream() else { return };
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
