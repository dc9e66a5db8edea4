//! `dwp status`, `dwp verify` and `dwp new`.

use canonical_json::Value;

use crate::support::{Scratch, expect, text};

fn plan_arg(s: &Scratch) -> String {
    s.plan().to_str().unwrap().to_owned()
}

#[test]
fn status_summarises_tasks_next_and_blockers() {
    let s = Scratch::new();
    s.materialize();
    s.ledger(&["start", "--task", "T-one"]);
    s.ledger(&["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""]);
    let p = plan_arg(&s);
    let out = crate::dwp(&["status", &p]);
    expect(&out, 0, "PLAN_001_demo_plan — revision 1 contract ");
    let body = text(&out.stdout);
    assert!(!body.contains('\x1b'), "no colour off a terminal: {body}");
    for needle in [
        "tasks 0/2 completed, criteria 1/3 satisfied",
        "in_progress T-one One",
        "✓ AC-pass — evidence",
        "✗ AC-review — open (no in-window accepted evidence)",
        "next: T-one",
        "  - T-two: waits for prerequisite T-one",
    ] {
        assert!(body.contains(needle), "{needle:?} in {body}");
    }
    let out = crate::dwp(&["status", &p, "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let doc = canonical_json::parse(&out.stdout).unwrap();
    assert_eq!(doc.pointer("/totals/criteria_satisfied").and_then(Value::as_i64), Some(1));
    assert_eq!(doc.pointer("/tasks/0/status").and_then(Value::as_str), Some("in_progress"));
    assert_eq!(doc.get("approved").and_then(Value::as_bool), Some(true));
    expect(&crate::dwp(&["status", "/nonexistent/plan"]), 1, "ERROR: ");
}

#[test]
fn verify_gives_a_verdict_and_exit_code() {
    let s = Scratch::new();
    s.materialize();
    s.ledger(&["start", "--task", "T-one"]);
    s.ledger(&["project"]);
    let p = plan_arg(&s);
    let out = crate::dwp(&["verify", &p]);
    expect(&out, 0, "Verdict: CONFORMANT");
    let body = text(&out.stdout);
    for needle in [
        "[x] v6 manifest pairs with a v6 contract",
        "[x] journal valid (2 events)",
        "[x] an approval cites the live contract id",
        "[x] state.json agrees with the journal",
        "[x] 0/2 tasks completed (derived from gate evidence)",
    ] {
        assert!(body.contains(needle), "{needle:?} in {body}");
    }
    // A stale snapshot is advisory only.
    s.ledger(&["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""]);
    expect(&crate::dwp(&["verify", &p]), 0, "[~] state.json is stale against the journal");
    // Verify never writes.
    let before = crate::support::tree(&s.plan());
    crate::dwp(&["verify", &p]);
    assert_eq!(crate::support::tree(&s.plan()), before);
    // A torn tail and an agent claiming observed trust are issues.
    let journal = s.plan().join("journal.ndjson");
    let mut raw = std::fs::read_to_string(&journal).unwrap();
    let forged = raw
        .lines()
        .last()
        .unwrap()
        .replace("\"kind\":\"helper\"", "\"kind\":\"agent\"")
        .replace("\"seq\":3", "\"seq\":4");
    raw.push_str(&forged);
    raw.push_str("\n{\"type\":");
    std::fs::write(&journal, raw).unwrap();
    let out = crate::dwp(&["verify", &p]);
    expect(&out, 1, "NOT CONFORMANT — 2 issue(s)");
    assert!(text(&out.stdout).contains("[ ] torn tail at byte "), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("observed requires a shipped helper"),
        "{}",
        text(&out.stdout)
    );
    expect(&crate::dwp(&["verify", "/nonexistent/plan"]), 2, "ERROR: ");
}

#[test]
fn new_allocates_the_next_plan_number() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("plans");
    let d = dir.to_str().unwrap();
    expect(&crate::dwp(&["new", "demo-plan", "--plans-dir", d]), 0, "OK: allocated ");
    assert!(dir.join("PLAN_001_demo_plan").is_dir());
    std::fs::create_dir_all(dir.join("PLAN_007_old_work")).unwrap();
    expect(&crate::dwp(&["new", "next_plan", "--plans-dir", d]), 0, "PLAN_008_next_plan");
    expect(&crate::dwp(&["new", "Bad/Slug", "--plans-dir", d]), 2, "does not make a plan id");
    expect(&crate::dwp(&["new", "a__b", "--plans-dir", d]), 2, "does not make a plan id");
    expect(&crate::dwp(&["new", "../escape_me", "--plans-dir", d]), 2, "does not make a plan id");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 3);
}
