//! `dwp ledger amend`: the next revision invalidates exactly the changed criteria, resumes
//! interrupted steps, and has nothing to do when re-run.

use canonical_json::Value;

use crate::support::{Scratch, expect, text, tree};

/// The live contract with one edit applied to its JSON text.
fn draft(s: &Scratch, from: &str, to: &str) -> std::path::PathBuf {
    let live = std::fs::read_to_string(s.plan().join("contract.json")).unwrap();
    assert!(live.contains(from), "{from}");
    let path = s.contract_file().with_file_name(format!("draft-{}.json", live.len() + to.len()));
    std::fs::write(&path, live.replacen(from, to, 1)).unwrap();
    path
}

fn amend(s: &Scratch, draft: &std::path::Path, note: &std::path::Path) -> std::process::Output {
    s.ledger(&[
        "amend",
        "--contract",
        draft.to_str().unwrap(),
        "--authority",
        "lead",
        "--note",
        "the review criterion was too vague",
        "--human-note",
        note.to_str().unwrap(),
    ])
}

fn criterion(state: &Value, task: usize, idx: usize) -> Value {
    state.pointer(&format!("/tasks/{task}/criteria/{idx}")).cloned().unwrap()
}

fn project(s: &Scratch) -> Value {
    expect(&s.ledger(&["project"]), 0, "OK: state.json projected");
    canonical_json::parse(&std::fs::read(s.plan().join("state.json")).unwrap()).unwrap()
}

#[test]
fn an_amendment_invalidates_exactly_the_changed_criteria() {
    let s = Scratch::new();
    s.materialize();
    s.ledger(&["start", "--task", "T-one"]);
    s.ledger(&["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""]);
    std::fs::write(s.plan().join("NOTE.txt"), "read\n").unwrap();
    s.ledger(&[
        "signoff",
        "--criterion",
        "AC-review",
        "--evidence-path",
        "NOTE.txt",
        "--authority",
        "dev",
    ]);
    expect(&s.ledger(&["complete", "--task", "T-one"]), 0, "OK: T-one criteria satisfied");
    assert_eq!(project(&s).pointer("/tasks/0/status").and_then(Value::as_str), Some("completed"));
    let manifest = std::fs::read(s.plan().join("manifest.json")).unwrap();
    let r1 = std::fs::read(s.plan().join("contract.json")).unwrap();
    let note = s.plan().join("NOTE.txt");

    // Refusals write nothing but their `refusal` events (issue 30).
    let without_journal = |t: Vec<(std::path::PathBuf, Vec<u8>)>| {
        t.into_iter().filter(|(p, _)| !p.ends_with("journal.ndjson")).collect::<Vec<_>>()
    };
    let before = without_journal(tree(&s.plan()));
    let events_before = s.journal().len();
    let wrong_rev = s.contract_file().with_file_name("wrong-rev.json");
    let live = std::fs::read_to_string(s.plan().join("contract.json")).unwrap();
    let bumped = live.replacen("\"revision\": 1", "\"revision\": 7", 1);
    std::fs::write(&wrong_rev, bumped.replacen("\"statement\": \"s\"", "\"statement\": \"t\"", 1))
        .unwrap();
    expect(
        &amend(&s, &wrong_rev, &note),
        1,
        "amend refused: the draft must be revision 2 with parent ",
    );
    let other_plan = draft(&s, "\"plan\": \"PLAN_001_demo_plan\"", "\"plan\": \"PLAN_002_other\"");
    expect(
        &amend(&s, &other_plan, &note),
        1,
        "amend refused: an amendment keeps the plan and its generation (v6)",
    );
    let review = draft(
        &s,
        "\"observable_check\": \"a human reads it\"",
        "\"observable_check\": \"a human reads and signs it\"",
    );
    let out = s.ledger(&[
        "amend",
        "--contract",
        review.to_str().unwrap(),
        "--authority",
        "lead",
        "--note",
        "n",
    ]);
    expect(&out, 1, "needs an explicit human-authority marker");
    expect(
        &s.ledger(&["amend", "--authority", "lead"]),
        2,
        "amend requires --contract, --authority and --note",
    );
    assert_eq!(without_journal(tree(&s.plan())), before);
    // Three refusals recorded (revision/parent, plan, human marker); the usage error none.
    let added = &s.journal()[events_before..];
    let rules: Vec<&str> = added
        .iter()
        .map(|e| e.get("reason").and_then(Value::as_str).unwrap().split(':').next().unwrap())
        .collect();
    assert_eq!(rules, ["amendment", "amendment", "human-authority"]);
    assert!(added.iter().all(|e| e.get("stage").and_then(Value::as_str) == Some("authorize")));

    let out = amend(&s, &review, &note);
    expect(&out, 0, "OK: amended to revision 2 contract ");
    assert!(
        text(&out.stdout).ends_with("(approval recorded; criteria re-evidenced: AC-review)\n"),
        "{}",
        text(&out.stdout)
    );
    let journal = s.journal();
    let n = journal.len();
    let (amendment, approval) = (&journal[n - 2], &journal[n - 1]);
    assert_eq!(amendment.get("type").and_then(Value::as_str), Some("amendment"));
    let list = |v: &Value, k: &str| -> Vec<String> {
        v.get(k)
            .and_then(Value::as_array)
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(list(amendment, "evidence_invalidated"), ["AC-review"]);
    assert_eq!(list(amendment, "affected_tasks"), ["T-one"]);
    assert_eq!(
        amendment.get("original_criterion").and_then(Value::as_str),
        Some("AC-review: a human reads it")
    );
    assert_eq!(
        amendment.get("revised_criterion").and_then(Value::as_str),
        Some("AC-review: a human reads and signs it")
    );
    assert_eq!(amendment.pointer("/actor/kind").and_then(Value::as_str), Some("human"));
    assert!(
        amendment
            .get("note")
            .and_then(Value::as_str)
            .unwrap()
            .starts_with("amendment to revision 2 contract ")
    );
    assert_eq!(approval.get("type").and_then(Value::as_str), Some("approval"));
    let r2: Value =
        canonical_json::parse(&std::fs::read(s.plan().join("contracts/contract.r2.json")).unwrap())
            .unwrap();
    assert_eq!(approval.get("contract_id"), r2.get("contract_id"));
    assert_eq!(r2.get("revision").and_then(Value::as_i64), Some(2));
    assert_eq!(
        r2.get("parent_contract_id"),
        canonical_json::parse(&r1).unwrap().get("contract_id")
    );
    assert_eq!(std::fs::read(s.plan().join("contracts/contract.r1.json")).unwrap(), r1);
    assert_eq!(
        std::fs::read(s.plan().join("manifest.json")).unwrap(),
        manifest,
        "the pointer is never edited"
    );

    // Exactly AC-review lost its evidence; AC-pass keeps it.
    let state = project(&s);
    assert_eq!(state.get("contract_revision").and_then(Value::as_i64), Some(2));
    assert_eq!(state.pointer("/tasks/0/status").and_then(Value::as_str), Some("in_progress"));
    assert_eq!(criterion(&state, 0, 0).get("satisfied").and_then(Value::as_bool), Some(true));
    assert_eq!(criterion(&state, 0, 1).get("satisfied").and_then(Value::as_bool), Some(false));
    assert_eq!(
        criterion(&state, 0, 1).get("stale_seqs").and_then(Value::as_array).map(<[Value]>::len),
        Some(1)
    );

    // A finished amendment re-run has nothing to do.
    expect(&amend(&s, &review, &note), 0, "already is this draft - nothing to amend");
    assert_eq!(s.journal().len(), n);
}

#[test]
fn interrupted_amendments_resume_at_the_first_missing_step() {
    let s = Scratch::new();
    s.materialize();
    let note = s.contract_file().with_file_name("note.txt");
    std::fs::write(&note, "approved by the lead\n").unwrap();
    let d = draft(&s, "\"observable_check\": \"false\"", "\"observable_check\": \"false; exit 1\"");
    expect(&amend(&s, &d, &note), 0, "criteria re-evidenced: AC-fail)");
    let events = s.journal().len();
    // Crash after the approval, before the switch: the pending file is back.
    let chain = s.plan().join("contracts");
    std::fs::rename(chain.join("contract.r2.json"), chain.join(".contract.r2.json.pending"))
        .unwrap();
    expect(&amend(&s, &d, &note), 0, "OK: amended to revision 2 contract ");
    assert_eq!(s.journal().len(), events, "no step is recorded twice");
    assert!(chain.join("contract.r2.json").is_file());
    assert!(!chain.join(".contract.r2.json.pending").exists());
    // A different draft while another revision is pending is refused.
    std::fs::copy(chain.join("contract.r2.json"), chain.join(".contract.r3.json.pending")).unwrap();
    let live = std::fs::read_to_string(chain.join("contract.r2.json")).unwrap();
    let other = s.contract_file().with_file_name("other.json");
    std::fs::write(
        &other,
        live.replacen("\"observable_check\": \"true\"", "\"observable_check\": \"true; true\"", 1),
    )
    .unwrap();
    expect(&amend(&s, &other, &note), 1, "a different revision 3 is pending (");
}

#[test]
fn an_empty_contracts_folder_left_by_a_crash_still_gets_revision_1() {
    let s = Scratch::new();
    s.materialize();
    let r1 = std::fs::read(s.plan().join("contract.json")).unwrap();
    // Views rendered before the amendment go out of date with it, untouched by anyone.
    expect(
        &crate::dwp(&["views", "--plan", s.plan().to_str().unwrap(), "render", "--all"]),
        0,
        "OK: rendered tasks, evidence, audit, completion",
    );
    // A crash right after the folder was created, before revision 1 was copied into it.
    std::fs::create_dir(s.plan().join("contracts")).unwrap();
    let note = s.contract_file().with_file_name("note.txt");
    std::fs::write(&note, "approved by the lead\n").unwrap();
    let d = draft(&s, "\"observable_check\": \"false\"", "\"observable_check\": \"false; exit 1\"");
    expect(&amend(&s, &d, &note), 0, "OK: amended to revision 2 contract ");
    assert_eq!(std::fs::read(s.plan().join("contracts/contract.r1.json")).unwrap(), r1);
    assert!(s.plan().join("contracts/contract.r2.json").is_file());
    let out = crate::dwp(&["verify", s.plan().to_str().unwrap()]);
    expect(&out, 0, "[x] live contract valid (revision 2; 2 revision(s) checked; ");
    expect(&out, 0, "Verdict: CONFORMANT");
    // The out-of-date views refresh: they are exactly what the last render recorded.
    expect(
        &crate::dwp(&["views", "--plan", s.plan().to_str().unwrap(), "render", "--all"]),
        0,
        "OK: rendered tasks, evidence, audit, completion",
    );
    assert!(!s.types().iter().any(|t| t == "reconciliation"));
}
