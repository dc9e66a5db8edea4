//! `dwp <group> self-test`: every group that upstream gives a self-test probes our own
//! invariants on a scratch plan and reports `self-test: OK (N probes)`.

use crate::support::{expect, text};

#[test]
fn every_group_self_test_passes() {
    for group in ["contract", "ledger", "scheduler", "outcomes", "views", "resources", "context"] {
        let out = crate::dwp(&[group, "self-test"]);
        expect(&out, 0, "self-test: OK (");
        let stdout = text(&out.stdout);
        assert!(!stdout.contains("FAIL"), "{group}: {stdout}");
        assert_eq!(stdout.lines().count(), 1, "{group}: {stdout}");
    }
    // Upstream's contract validator counts mutant probes (`contract_v6.py` bd935a09).
    let out = crate::dwp(&["contract", "self-test"]);
    assert!(text(&out.stdout).starts_with("self-test: OK ("), "{}", text(&out.stdout));
    assert!(text(&out.stdout).ends_with(" mutant probes)\n"), "{}", text(&out.stdout));
    // Upstream's migrator names itself in its verdict line.
    let out = crate::dwp(&["migrate", "self-test"]);
    expect(&out, 0, "migrate self-test: OK (");
    assert_eq!(text(&out.stdout).lines().count(), 1, "{}", text(&out.stdout));
}

#[test]
fn a_self_test_needs_no_plan_and_leaves_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dwp"))
        .args(["ledger", "self-test"])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    expect(&out, 0, "self-test: OK (");
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}
