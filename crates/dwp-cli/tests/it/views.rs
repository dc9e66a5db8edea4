//! `dwp views render`: determinism, byte stability with projection, human-edit detection by
//! recorded digest and both reconciliation modes.

use canonical_json::Value;

use crate::support::{Scratch, expect, tree};

fn views(s: &Scratch, args: &[&str]) -> std::process::Output {
    let plan = s.plan();
    let mut all = vec!["views", "--plan", plan.to_str().unwrap()];
    all.extend_from_slice(args);
    crate::dwp(&all)
}

fn started() -> Scratch {
    let s = Scratch::new();
    s.materialize();
    s.ledger(&["start", "--task", "T-one"]);
    s.ledger(&["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""]);
    s
}

#[test]
fn renders_are_deterministic_and_byte_stable() {
    let s = started();
    expect(&views(&s, &["render", "--all"]), 0, "OK: rendered tasks, evidence, audit, completion");
    let first = tree(&s.plan().join("views"));
    assert_eq!(first.len(), 4);
    let tasks = std::fs::read_to_string(s.plan().join("views/tasks.md")).unwrap();
    let state = std::fs::read(s.plan().join("state.json")).unwrap();
    let sha = canonical_json::digest::sha256_hex(&state);
    let marker = tasks.lines().next().unwrap();
    assert!(marker.starts_with("<!-- dwp-view: tasks | contract:"), "{marker}");
    assert!(marker.contains(&format!("| snapshot:{} | rendered-at:", &sha[..16])), "{marker}");
    assert!(
        tasks.contains("| T-one | One | in_progress | 2 |\n| T-two | Two | pending | — |\n"),
        "{tasks}"
    );
    let audit = std::fs::read_to_string(s.plan().join("views/audit.md")).unwrap();
    assert!(audit.contains(dwp::views::NO_REFUSALS));
    let render = s.journal().last().cloned().unwrap();
    assert_eq!(render.get("type").and_then(Value::as_str), Some("view_render"));
    assert_eq!(render.get("view").and_then(Value::as_str), Some("tasks+evidence+audit+completion"));
    assert_eq!(render.get("snapshot_digest").and_then(Value::as_str), Some(sha.as_str()));
    assert_eq!(
        render.pointer("/digests/tasks").and_then(Value::as_str).map(str::to_owned),
        Some(canonical_json::digest::sha256_hex(tasks.as_bytes()))
    );
    // Unchanged records: nothing written, not even provenance.
    let events = s.journal().len();
    expect(
        &views(&s, &["render", "--all"]),
        0,
        "OK: no view changed — records unchanged, nothing written",
    );
    assert_eq!(s.journal().len(), events);
    assert_eq!(tree(&s.plan().join("views")), first);
    // view_render never moves the snapshot: project → render → project is byte-stable.
    expect(&s.ledger(&["project"]), 0, "OK: state.json projected");
    assert_eq!(std::fs::read(s.plan().join("state.json")).unwrap(), state);
    // A new state event re-projects; as upstream (views.py self-test 4), a view that is out of
    // date but byte-for-byte its last recorded render refreshes in place: no divergence and no
    // reconciliation.
    s.ledger(&[
        "gate",
        "--task",
        "T-one",
        "--criterion",
        "AC-pass",
        "--json",
        "\"true\"",
        "--no-reuse",
    ]);
    expect(&views(&s, &["render", "--view", "tasks,evidence"]), 0, "OK: rendered tasks, evidence");
    assert_ne!(std::fs::read(s.plan().join("state.json")).unwrap(), state);
    assert!(!s.types().iter().any(|t| t == "reconciliation"));
    let refreshed = std::fs::read_to_string(s.plan().join("views/tasks.md")).unwrap();
    assert_ne!(refreshed, tasks);
    assert!(refreshed.contains("| T-one | One | in_progress | 2 |"), "{refreshed}");
    // Audit was rendered before the gate and never touched: it refreshes too.
    expect(&views(&s, &["render", "--all"]), 0, "OK: rendered audit, completion");
    // Usage errors.
    expect(
        &views(&s, &["render", "--view", "nope"]),
        2,
        "unknown view 'nope' (choose from tasks, evidence, audit, completion)",
    );
}

#[test]
fn human_edits_are_detected_and_reconciled_once() {
    let s = started();
    expect(&views(&s, &["render"]), 0, "OK: rendered tasks, evidence, audit");
    let target = s.plan().join("views/tasks.md");
    let mut edited = std::fs::read_to_string(&target).unwrap();
    edited.push_str("\nReviewed by the lead.\n");
    std::fs::write(&target, &edited).unwrap();
    let before = tree(&s.plan());
    expect(
        &views(&s, &["render"]),
        5,
        "was human-edited after its last render; refusing to overwrite silently — pass --reconcile human-wins or generated-wins (with --authority)",
    );
    expect(
        &views(&s, &["render", "--reconcile", "human-wins"]),
        1,
        "ERROR: reconciliation requires --authority",
    );
    assert_eq!(tree(&s.plan()), before, "refusals write nothing");

    expect(
        &views(&s, &["render", "--reconcile", "human-wins", "--authority", "lead"]),
        0,
        "OK: rendered tasks (reconciled: human-wins)",
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), edited);
    let generated = std::fs::read_to_string(s.plan().join("views/tasks.generated.md")).unwrap();
    assert!(generated.starts_with("<!-- dwp-view: tasks |"));
    let recon: Vec<Value> = s
        .journal()
        .into_iter()
        .filter(|e| e.get("type").and_then(Value::as_str) == Some("reconciliation"))
        .collect();
    assert_eq!(recon.len(), 1);
    assert_eq!(recon[0].get("trigger").and_then(Value::as_str), Some("generated-view divergence"));
    assert_eq!(
        recon[0].get("editor").and_then(Value::as_str),
        Some("human edit of views/tasks.md")
    );
    assert_eq!(recon[0].get("authority").and_then(Value::as_str), Some("lead"));
    assert_eq!(recon[0].pointer("/actor/kind").and_then(Value::as_str), Some("human"));
    // The human copy still diverges: without a mode it is refused again.
    expect(&views(&s, &["render", "--view", "tasks"]), 5, "DIVERGENCE: ");

    expect(
        &views(
            &s,
            &["render", "--view", "tasks", "--reconcile", "generated-wins", "--authority", "lead"],
        ),
        0,
        "OK: rendered tasks (reconciled: generated-wins)",
    );
    assert_eq!(std::fs::read_to_string(s.plan().join("views/tasks.human.md")).unwrap(), edited);
    let now = std::fs::read_to_string(&target).unwrap();
    assert!(now.starts_with("<!-- dwp-view: tasks |") && !now.contains("Reviewed by the lead"));
    // The reconciliation is a state event, so the view is stale again, but its bytes are the
    // recorded render: it refreshes without a mode and records no new reconciliation.
    let count = |s: &Scratch| s.types().iter().filter(|t| *t == "reconciliation").count();
    let recorded = count(&s);
    expect(&views(&s, &["render", "--view", "tasks"]), 0, "OK: rendered tasks");
    assert_eq!(count(&s), recorded);
    expect(&views(&s, &["render", "--view", "tasks"]), 0, "OK: no view changed");
    // An edit after the refresh is a human edit again, marker or not.
    let mut edited = std::fs::read_to_string(&target).unwrap();
    edited.push_str("\nA second note.\n");
    std::fs::write(&target, &edited).unwrap();
    expect(&views(&s, &["render", "--view", "tasks"]), 5, "DIVERGENCE: ");
    let args =
        ["render", "--view", "tasks", "--reconcile", "generated-wins", "--authority", "lead"];
    expect(&views(&s, &args), 0, "OK: rendered tasks (reconciled: generated-wins)");
    // The same reconciliation (editor, authority, outcome) is recorded only once in a row.
    assert_eq!(count(&s), recorded);
}
