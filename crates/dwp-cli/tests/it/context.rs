//! `dwp context` (per-task manifest, next-action ladder, dead ends, freshness) and
//! `dwp resume` (fixed recovery order; stale fingerprints are evidence to run again).

use canonical_json::Value;

use crate::support::{Scratch, expect, text};

fn ctx(s: &Scratch, args: &[&str]) -> std::process::Output {
    let plan = s.plan();
    let mut all = vec!["context", "--plan", plan.to_str().unwrap()];
    all.extend_from_slice(args);
    crate::dwp(&all)
}

fn manifest(s: &Scratch, task: &str) -> Value {
    canonical_json::parse(&std::fs::read(s.plan().join(format!("context/{task}.json"))).unwrap())
        .unwrap()
}

#[test]
fn the_context_manifest_follows_the_next_action_ladder() {
    let s = Scratch::new();
    s.materialize();
    expect(&ctx(&s, &["--task", "T-two"]), 0, "(next: wait;");
    expect(&ctx(&s, &["--task", "T-one"]), 0, "(next: start;");
    s.ledger(&["start", "--task", "T-one"]);
    // The declared check `true`, failing: a program named `true` on PATH that exits 1 (a gate
    // runs only the check its task declares for the criterion).
    let failing = crate::gates::fake_programs(&s, "failing", &[("true", "exit 1")]);
    let gate =
        ["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\"", "--no-reuse"];
    crate::gates::ledger_on_path(&s, &failing, &gate);
    expect(
        &ctx(&s, &["--task", "T-one"]),
        0,
        "OK: context manifest context/T-one.json (next: gate AC-pass; 1 dead end(s); seq 3)",
    );
    let m = manifest(&s, "T-one");
    for key in ["plan", "task", "freshness", "criteria", "invariants", "next_action", "dead_ends"] {
        assert!(m.get(key).is_some(), "mandatory section {key}");
    }
    assert_eq!(m.pointer("/next_action/check").and_then(Value::as_str), Some("true"));
    assert_eq!(
        m.pointer("/dead_ends/0/summary").and_then(Value::as_str),
        Some("true exited 1 on AC-pass")
    );
    assert_eq!(m.pointer("/task/status").and_then(Value::as_str), Some("in_progress"));
    expect(&ctx(&s, &["--task", "T-one", "--check"]), 0, "OK: context/T-one.json is fresh (seq 3)");
    s.ledger(&gate);
    expect(
        &ctx(&s, &["--task", "T-one", "--check"]),
        1,
        "STALE: context/T-one.json was written at seq 3 - the journal is at seq 4",
    );
    expect(&ctx(&s, &["--task", "T-one"]), 0, "(next: gate AC-review;");
    // The dead-end digest keeps at most 50 entries.
    for _ in 0..55 {
        crate::gates::ledger_on_path(&s, &failing, &gate);
    }
    expect(&ctx(&s, &["--task", "T-one"]), 0, "50 dead end(s)");
    expect(&ctx(&s, &["--task", "T-nine"]), 1, "ERROR: task 'T-nine' is not in the contract");
    expect(&ctx(&s, &["--task", "../x"]), 1, "ERROR: task '../x' is not in the contract");
    expect(&crate::dwp(&["context"]), 2, "usage: dwp context");
}

#[test]
fn resume_recovers_in_order_and_never_reuses_stale_evidence() {
    let s = Scratch::new();
    s.materialize();
    s.ledger(&["start", "--task", "T-one"]);
    s.ledger(&["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""]);
    let plan = s.plan();
    let p = plan.to_str().unwrap();
    let out = crate::dwp(&["resume", "--plan", p, "--authority", "lead"]);
    expect(&out, 0, "OK: resumed PLAN_001_demo_plan (0 criterion(s) to run again)");
    let body = text(&out.stdout);
    let order: Vec<usize> = ["inspect:", "validate: OK", "project:", "render:"]
        .iter()
        .map(|k| body.find(k).unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{body}");
    assert!(plan.join("views/tasks.md").is_file());
    // The touched surface changed: the recorded evidence is stale and must run again.
    std::fs::write(s.root.join("src.txt"), "changed\n").unwrap();
    expect(
        &crate::dwp(&["resume", "--plan", p, "--authority", "lead"]),
        0,
        "RE-RUN: T-one AC-pass (evidence seq 3 was recorded under another fingerprint - invalidated, never reused)",
    );
    // Unlike `dwp views render` (upstream: a stale marker-carrying view needs a reconcile
    // mode), resume refreshes a stale view whose bytes are the last recorded render.
    let tasks = plan.join("views/tasks.md");
    let before = std::fs::read_to_string(&tasks).unwrap();
    s.ledger(&["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""]);
    let recons = |s: &Scratch| s.types().iter().filter(|t| *t == "reconciliation").count();
    let out = crate::dwp(&["resume", "--plan", p, "--authority", "lead"]);
    expect(&out, 0, "render: tasks, evidence, audit\n");
    assert_ne!(std::fs::read_to_string(&tasks).unwrap(), before);
    assert_eq!(recons(&s), 0);
    assert!(!plan.join("views/tasks.generated.md").exists());
    // A human-edited view is kept and the reconciliation recorded under the authority.
    let mut edited = std::fs::read_to_string(&tasks).unwrap();
    edited.push_str("note\n");
    std::fs::write(&tasks, &edited).unwrap();
    s.ledger(&["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""]);
    expect(
        &crate::dwp(&["resume", "--plan", p, "--authority", "lead"]),
        0,
        "tasks (reconciled: human-wins)",
    );
    assert_eq!(std::fs::read_to_string(&tasks).unwrap(), edited);
    assert!(
        s.journal().iter().any(|e| e.get("type").and_then(Value::as_str) == Some("reconciliation")
            && e.get("authority").and_then(Value::as_str) == Some("lead"))
    );
    // Torn tail: repaired and recorded by the writer during inspect.
    let journal = plan.join("journal.ndjson");
    let mut raw = std::fs::read(&journal).unwrap();
    raw.extend_from_slice(b"{\"type\":\"obs");
    std::fs::write(&journal, raw).unwrap();
    expect(&crate::dwp(&["resume", "--plan", p, "--authority", "lead"]), 0, "torn tail at byte ");
    assert!(s.types().contains(&"journal_repair".to_owned()));
    expect(&crate::dwp(&["resume", "--plan", p]), 2, "usage: dwp resume");
}

/// Upstream `context_manifest.py`'s shape: `manifest` (JSON or `--md`), `freshness`,
/// `accounting`; read-only.
#[test]
fn the_upstream_manifest_freshness_and_accounting() {
    let s = Scratch::new();
    s.materialize();
    s.ledger(&["start", "--task", "T-one"]);
    s.ledger(&["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""]);
    let mut before = crate::support::tree(&s.plan());

    let out = ctx(&s, &["manifest", "--task", "T-one"]);
    expect(&out, 0, "\"derived_by\": \"dwp context_manifest.py\"");
    let stdout = text(&out.stdout);
    // `print(json.dumps(doc, sort_keys=True, indent=2) + "\n")`.
    assert!(stdout.ends_with("}\n\n"), "{stdout:?}");
    let doc = canonical_json::parse(stdout.trim_end().as_bytes()).unwrap();
    let keys: Vec<&str> = doc.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "acceptance",
            "as_of",
            "authorization",
            "contract_id",
            "contract_revision",
            "dead_ends",
            "derived_by",
            "evidence",
            "freshness",
            "history_triggers",
            "next_action",
            "plan",
            "repository_rules",
            "schema",
            "task",
            "touched_surface",
        ]
    );
    assert_eq!(doc.pointer("/next_action/step").and_then(Value::as_str), Some("evidence"));
    assert_eq!(doc.pointer("/evidence/0/pointer_resolves"), Some(&Value::Bool(true)));
    assert_eq!(doc.pointer("/as_of/last_seq").and_then(Value::as_i64), Some(3));
    // The inputs fingerprint is sha256 over Python's compact sorted {contract_id, files}.
    let cid = doc.get("contract_id").and_then(Value::as_str).unwrap();
    let src = canonical_json::digest::sha256_hex(&std::fs::read(s.root.join("src.txt")).unwrap());
    let body = format!("{{\"contract_id\":\"{cid}\",\"files\":{{\"src.txt\":\"{src}\"}}}}");
    assert_eq!(
        doc.pointer("/freshness/inputs_fingerprint").and_then(Value::as_str),
        Some(canonical_json::digest::sha256_hex(body.as_bytes()).as_str())
    );
    // The failed gate of T-two is a dead end of the plan, with its log as the cause. (T-two
    // starts once its prerequisite T-one has closed: the sign-off closes it.)
    assert_eq!(crate::support::tree(&s.plan()), before, "context commands write nothing");
    std::fs::write(s.plan().join("REVIEW.txt"), "read\n").unwrap();
    let signoff = ["signoff", "--criterion", "AC-review", "--evidence-path", "REVIEW.txt"];
    let signoff: Vec<&str> = signoff.iter().copied().chain(["--authority", "dev"]).collect();
    expect(&s.ledger(&signoff), 0, "OK");
    expect(&s.ledger(&["start", "--task", "T-two"]), 0, "OK");
    s.ledger(&["gate", "--task", "T-two", "--criterion", "AC-fail", "--json", "\"false\""]);
    before = crate::support::tree(&s.plan());
    let t2 = ctx(&s, &["manifest", "--task", "T-two"]);
    let doc2 = canonical_json::parse(text(&t2.stdout).trim_end().as_bytes()).unwrap();
    assert_eq!(doc2.pointer("/dead_ends/0/kind").and_then(Value::as_str), Some("failed_gate"));
    assert_eq!(
        doc2.pointer("/dead_ends/0/cause").and_then(Value::as_str),
        Some("gates/T-two/006-false.log")
    );

    let kept = ctx(
        &s,
        &[
            "manifest",
            "--task",
            "T-one",
            "--sections",
            "authorization, repository_rules,acceptance",
        ],
    );
    assert!(!text(&kept.stdout).contains("history_triggers"));
    expect(
        &ctx(&s, &["manifest", "--task", "T-one", "--sections", "acceptance"]),
        1,
        "ERROR: the manifest never drops mandatory section(s) authorization, repository_rules - context pruning cannot hide the acceptance or authorization boundary",
    );
    expect(
        &ctx(&s, &["manifest", "--task", "T-nope"]),
        1,
        "ERROR: task 'T-nope' is not in the contract - the manifest never guesses a task the plan did not declare",
    );
    expect(&ctx(&s, &["manifest"]), 2, "manifest requires --task");

    let file = s._tmp.path().join("out/m.md");
    let md = ctx(&s, &["manifest", "--task", "T-one", "--md", "--out", file.to_str().unwrap()]);
    let md_text = text(&md.stdout);
    assert!(md_text.starts_with("# Context manifest — PLAN_001_demo_plan / T-one\n\n"));
    assert!(md_text.contains("\n- AC-pass: satisfied (evidence)\n"), "{md_text}");
    assert_eq!(format!("{}\n", std::fs::read_to_string(&file).unwrap()), md_text);

    let summary = s._tmp.path().join("summary.json");
    let fp = doc.pointer("/freshness/inputs_fingerprint").and_then(Value::as_str).unwrap();
    std::fs::write(&summary, format!("{{\"inputs_fingerprint\": \"{fp}\"}}")).unwrap();
    let fresh = |s: &Scratch| {
        ctx(s, &["freshness", "--task", "T-one", "--summary", summary.to_str().unwrap()])
    };
    expect(&fresh(&s), 0, "\"verdict\": \"fresh\"");
    std::fs::write(s.root.join("src.txt"), "changed\n").unwrap();
    expect(&fresh(&s), 1, "\"reason\": \"inputs changed since the summary was derived");
    expect(
        &ctx(&s, &["freshness", "--task", "T-one"]),
        2,
        "freshness requires --task and --summary",
    );

    let acct = ctx(&s, &["accounting", "--bundle", "no-such-file.md"]);
    let doc = canonical_json::parse(&acct.stdout).unwrap();
    assert_eq!(doc.pointer("/provider_tokens/status").and_then(Value::as_str), Some("missing"));
    assert_eq!(doc.pointer("/instruction_bytes/bytes/no-such-file.md"), Some(&Value::Null));
    assert!(doc.pointer("/wall_clock_hours/value").is_some_and(|v| v.as_f64().is_some()));
    std::fs::write(s.root.join("src.txt"), "hello\n").unwrap();
    assert_eq!(crate::support::tree(&s.plan()), before, "context commands write nothing");
}

/// As upstream `context_manifest.py`: an unknown command prints the usage on stdout and exits
/// 2 once the plan folder resolves; a plan folder that does not resolve is `ERROR:` (exit 1).
#[test]
fn an_unknown_context_command_prints_the_usage() {
    let s = Scratch::new();
    s.materialize();
    let out = ctx(&s, &["summarize", "--task", "T-one"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("usage: dwp context --plan DIR {manifest"));
    assert_eq!(text(&out.stderr), "");
    let out = crate::dwp(&["context", "--plan", "/nonexistent/PLAN_x", "summarize"]);
    expect(&out, 1, "ERROR: no plan directory found at '/nonexistent/PLAN_x'");
}
