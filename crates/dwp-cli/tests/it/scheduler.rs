//! `dwp scheduler`: ready list, boosts, proposal decisions (data-driven), and static vs
//! adaptive schedules giving identical evidence sets.

use std::collections::BTreeSet;

use canonical_json::Value;

use crate::support::{Scratch, expect, text};

fn sched(s: &Scratch, args: &[&str]) -> std::process::Output {
    let plan = s.plan();
    let mut all = vec!["scheduler", args[0], plan.to_str().unwrap()];
    all.extend_from_slice(&args[1..]);
    crate::dwp(&all)
}

fn json_out(out: &std::process::Output) -> Value {
    canonical_json::parse(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)))
}

const RETRY: &str = r#"{"type":"adapt","kind":"retry","trigger_observation":TRIGGER,"evidence_artifact":"gates/T-two/log","hypothesis":"flaky","action":"rerun","rationale":"new observation","affected_tasks":["T-two"],"affected_criteria":["AC-fail"],"authority":"dev","evidence_invalidated":[],"evidence_preserved":[]}"#;

#[test]
fn ready_and_boosts_follow_contract_order_prerequisites_and_starvation() {
    let s = Scratch::new();
    // An unmaterialized plan has no contract: the named `contract-invalid` refusal, exit 10.
    expect(&sched(&s, &["ready"]), 10, "nothing schedules: no contract.json and no contracts/");
    // Starvation after 3 events so the boost is observable in a small journal.
    let contract = std::fs::read_to_string(s.contract_file()).unwrap().replace(
        r#""dependencies":[],"#,
        r#""dependencies":[],"scheduling":{"starvation_threshold_events":3},"#,
    );
    std::fs::write(s.contract_file(), contract).unwrap();
    s.materialize();
    let ready = json_out(&sched(&s, &["ready"]));
    let list = ready.as_array().unwrap();
    assert_eq!(list.len(), 1, "T-two waits for T-one: {ready:?}");
    assert_eq!(list[0].get("task").and_then(Value::as_str), Some("T-one"));
    assert_eq!(list[0].get("rank").and_then(Value::as_i64), Some(1));
    assert_eq!(list[0].get("waiting_since_seq").and_then(Value::as_i64), Some(1));
    assert_eq!(json_out(&sched(&s, &["boosts"])).as_array().map(<[Value]>::len), Some(0));
    for _ in 0..3 {
        let out = s.ledger(&[
            "append",
            "--type",
            "observation",
            "--json",
            r#"{"statement":"note","trust":"asserted"}"#,
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let ready = json_out(&sched(&s, &["ready"]));
    let first = &ready.as_array().unwrap()[0];
    assert_eq!(first.get("waiting_events").and_then(Value::as_i64), Some(3));
    assert_eq!(first.get("priority_boost").and_then(Value::as_bool), Some(true));
    let boosts = json_out(&sched(&s, &["boosts"]));
    let b = &boosts.as_array().unwrap()[0];
    assert_eq!(b.pointer("/aging/threshold").and_then(Value::as_str), Some("3"));
    assert_eq!(b.pointer("/aging/waiting_since_seq").and_then(Value::as_i64), Some(1));
    // A boost payload is ready to append as a selection.
    let payload = String::from_utf8(canonical_json::to_python_compact(b).unwrap()).unwrap();
    expect(
        &s.ledger(&["append", "--type", "selection", "--json", &payload]),
        0,
        "OK: appended selection seq 5",
    );
}

#[test]
fn authorize_decides_each_proposal_with_its_rule() {
    let s = Scratch::new();
    s.materialize();
    // (proposal, exit code, rule or accept type)
    let cases: &[(&str, i32, &str)] = &[
        ("[1]", 10, "proposal-shape"),
        (r#"{"type":"delete","task":"T-one"}"#, 10, "proposal-type"),
        (r#"{"type":"select","task":"T-nine"}"#, 10, "unknown-task"),
        (r#"{"type":"select","task":"T-two"}"#, 10, "prerequisite-open"),
        (r#"{"type":"select","task":"T-one","scope":["/"]}"#, 10, "proposal-shape"),
        (r#"{"type":"select","task":"T-one"}"#, 0, "select"),
        (
            r#"{"type":"adapt","kind":"split","revised_criterion":"weaker","trigger_observation":1}"#,
            10,
            "proposal-shape",
        ),
        (
            r#"{"type":"adapt","kind":"delete_requirement","trigger_observation":1,"evidence_artifact":"a","hypothesis":"h","action":"a","rationale":"r","affected_tasks":["T-one"],"affected_criteria":["AC-pass"],"authority":"dev","evidence_invalidated":[],"evidence_preserved":[]}"#,
            10,
            "adaptation-shape",
        ),
        (
            r#"{"type":"adapt","kind":"reorder","trigger_observation":1,"evidence_artifact":"a","hypothesis":"h","action":"a","rationale":"r","affected_tasks":["T-one"],"affected_criteria":[],"authority":"dev","evidence_invalidated":[],"evidence_preserved":[]}"#,
            0,
            "adapt",
        ),
    ];
    for (proposal, code, rule) in cases {
        let out = sched(&s, &["authorize", "--json", proposal]);
        assert_eq!(out.status.code(), Some(*code), "{proposal}: {}", text(&out.stdout));
        let decision = json_out(&out);
        if *code == 0 {
            assert_eq!(decision.get("decision").and_then(Value::as_str), Some("accept"));
            assert_eq!(decision.get("type").and_then(Value::as_str), Some(*rule), "{proposal}");
        } else {
            assert_eq!(decision.get("decision").and_then(Value::as_str), Some("refuse"));
            assert_eq!(decision.get("rule").and_then(Value::as_str), Some(*rule), "{proposal}");
            assert!(decision.get("reason").and_then(Value::as_str).is_some_and(|r| !r.is_empty()));
        }
    }
    // --file - reads stdin; a missing proposal is a usage error.
    let file = s.contract_file().with_file_name("proposal.json");
    std::fs::write(&file, r#"{"type":"select","task":"T-one"}"#).unwrap();
    expect(&sched(&s, &["authorize", "--file", file.to_str().unwrap()]), 0, "\"accept\"");
    // A missing or unparsable proposal is an error (exit 1), not a refusal.
    expect(&sched(&s, &["authorize"]), 1, "error: pass a proposal with --json or --file");
    // The parse error speaks Python's decoder wording and position (upstream `json.loads`).
    let bad: &[(&str, &str)] = &[
        ("not json", "Expecting value: line 1 column 1 (char 0)"),
        (r#"{"a": tru}"#, "Expecting value: line 1 column 7 (char 6)"),
        ("[1] x", "Extra data: line 1 column 5 (char 4)"),
        (
            r#"{"a":1,}"#,
            "Expecting property name enclosed in double quotes: line 1 column 8 (char 7)",
        ),
        (r#"{"a" 1}"#, "Expecting ':' delimiter: line 1 column 6 (char 5)"),
        (r#"{"a":1 "b":2}"#, "Expecting ',' delimiter: line 1 column 8 (char 7)"),
        ("[1 2]", "Expecting ',' delimiter: line 1 column 4 (char 3)"),
        ("{\n  ", "Expecting property name enclosed in double quotes: line 2 column 3 (char 4)"),
    ];
    for (proposal, message) in bad {
        let out = sched(&s, &["authorize", "--json", proposal]);
        assert_eq!(out.status.code(), Some(1), "{proposal}");
        assert_eq!(text(&out.stdout), "");
        assert_eq!(
            text(&out.stderr),
            format!("error: proposal does not parse as JSON: {message}\n")
        );
    }
    // The scheduler never writes.
    assert_eq!(s.types(), ["approval"]);
}

#[test]
fn authorize_enforces_invariants_envelope_caps_and_blind_retries() {
    let s = Scratch::new();
    let contract = std::fs::read_to_string(s.contract_file())
        .unwrap()
        .replace(r#""invariants":[]"#, r#""invariants":[{"id":"INV-clean","statement":"tree builds"}]"#)
        .replace(
            r#""limits":[{"id":"wall_h","limit":1,"unit":"hours","enforcement":"advisory"}]"#,
            r#""limits":[{"id":"spend_usd","limit":5,"unit":"usd","enforcement":"enforced","metering_source":"host"}]"#,
        )
        .replace(
            r#""dependencies":[],"#,
            r#""dependencies":[],"scheduling":{"max_retries_per_gate":1},"#,
        );
    std::fs::write(s.contract_file(), contract).unwrap();
    s.materialize();
    let select = r#"{"type":"select","task":"T-one"}"#;
    let rule = |out: &std::process::Output| {
        json_out(out).get("rule").and_then(Value::as_str).map(str::to_owned)
    };
    let out = sched(&s, &["authorize", "--json", select]);
    assert_eq!(
        (out.status.code(), rule(&out).as_deref()),
        (Some(10), Some("invariant-unevaluated"))
    );
    let inv = |st: &str| {
        let json = format!(r#"{{"statement":"INV-clean: {st}","trust":"asserted"}}"#);
        let out = s.ledger(&["append", "--type", "observation", "--json", &json]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    };
    inv("fail: broken build");
    let out = sched(&s, &["authorize", "--json", select]);
    assert_eq!(rule(&out).as_deref(), Some("invariant-failed"));
    inv("pass");
    expect(&sched(&s, &["authorize", "--json", select]), 0, "\"accept\"");
    // A pending impact beyond the limit is refused, and names the unmetered limit.
    let costly = RETRY.replace("TRIGGER", "3").replace(
        r#""evidence_preserved":[]"#,
        r#""evidence_preserved":[],"resource_impact":{"declared":6,"unit":"usd"}"#,
    );
    let out = sched(&s, &["authorize", "--json", &costly]);
    assert_eq!(rule(&out).as_deref(), Some("envelope-exceeded"), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("commit-plus-pending"));
    assert!(text(&out.stdout).contains("[limit unmetered: no observed sample on record]"));
    // Start both tasks' world: T-one needs a start before invariants go stale.
    s.ledger(&["start", "--task", "T-one"]);
    let out = sched(&s, &["authorize", "--json", select]);
    assert_eq!(rule(&out).as_deref(), Some("invariant-stale"));
    inv("pass");
    // A retry citing an observation no newer than the last run on the criterion is blind.
    s.ledger(&["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""]);
    let last = s.journal().len();
    let blind =
        RETRY.replace("TRIGGER", "2").replace("T-two", "T-one").replace("AC-fail", "AC-pass");
    let out = sched(&s, &["authorize", "--json", &blind]);
    assert_eq!(rule(&out).as_deref(), Some("blind-retry"), "{}", text(&out.stdout));
    inv("pass");
    let fresh = RETRY
        .replace("TRIGGER", &(last + 1).to_string())
        .replace("T-two", "T-one")
        .replace("AC-fail", "AC-pass");
    let out = sched(&s, &["authorize", "--json", &fresh]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    // Record the authorized retry; the next one hits the cap of 1.
    let event = json_out(&out).get("event").cloned().unwrap();
    let payload = canonical_json::digest::without_top_level(
        &event,
        &["schema", "type", "seq", "ts", "plan", "contract_id", "actor", "note"],
    );
    let payload = String::from_utf8(canonical_json::to_python_compact(&payload).unwrap()).unwrap();
    expect(
        &s.ledger(&["append", "--type", "adaptation", "--json", &payload]),
        0,
        "OK: appended adaptation",
    );
    inv("pass");
    let again = RETRY
        .replace("TRIGGER", &(last + 4).to_string())
        .replace("T-two", "T-one")
        .replace("AC-fail", "AC-pass");
    let out = sched(&s, &["authorize", "--json", &again]);
    assert_eq!(rule(&out).as_deref(), Some("retry-cap"), "{}", text(&out.stdout));
}

/// The evidence a run produced: (task, criterion, command, exit code) of every gate_run.
fn evidence(s: &Scratch) -> BTreeSet<(String, String, String, i64)> {
    s.journal()
        .iter()
        .filter(|e| e.get("type").and_then(Value::as_str) == Some("gate_run"))
        .map(|e| {
            let f = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
            (
                f("task"),
                f("criterion"),
                f("command"),
                e.get("exit_code").and_then(Value::as_i64).unwrap(),
            )
        })
        .collect()
}

fn run_schedule(adaptive: bool) -> BTreeSet<(String, String, String, i64)> {
    let s = Scratch::new();
    s.materialize();
    if adaptive {
        let reorder = r#"{"type":"adapt","kind":"reorder","trigger_observation":1,"evidence_artifact":"README.md","hypothesis":"T-one first is cheaper","action":"run T-one before anything else","rationale":"ordering only","affected_tasks":["T-one"],"affected_criteria":[],"authority":"dev","evidence_invalidated":[],"evidence_preserved":[]}"#;
        let out = sched(&s, &["authorize", "--json", reorder]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
        let event = json_out(&out).get("event").cloned().unwrap();
        let payload = canonical_json::digest::without_top_level(
            &event,
            &["schema", "type", "seq", "ts", "plan", "contract_id", "actor", "note"],
        );
        let payload =
            String::from_utf8(canonical_json::to_python_compact(&payload).unwrap()).unwrap();
        expect(&s.ledger(&["append", "--type", "adaptation", "--json", &payload]), 0, "OK");
    }
    // Dispatch whatever `ready` ranks first until nothing is ready.
    for _ in 0..4 {
        let ready = json_out(&sched(&s, &["ready"]));
        let Some(next) = ready.as_array().unwrap().first() else { break };
        let task = next.get("task").and_then(Value::as_str).unwrap().to_owned();
        let select = format!(r#"{{"type":"select","task":"{task}"}}"#);
        expect(&sched(&s, &["authorize", "--json", &select]), 0, "\"accept\"");
        s.ledger(&["start", "--task", &task]);
        if task == "T-one" {
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
        } else {
            // The declared check `false`, passing here: a program of that name on PATH.
            let pass = crate::gates::fake_programs(&s, "pass", &[("false", "exit 0")]);
            let gate = ["gate", "--task", "T-two", "--criterion", "AC-fail", "--json", "\"false\""];
            crate::gates::ledger_on_path(&s, &pass, &gate);
        }
    }
    evidence(&s)
}

#[test]
fn static_and_adaptive_schedules_give_identical_evidence_sets() {
    let fixed = run_schedule(false);
    assert_eq!(fixed.len(), 3, "{fixed:?}");
    assert_eq!(fixed, run_schedule(true));
}
