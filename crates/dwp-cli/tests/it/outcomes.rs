//! `dwp outcomes`: control pairs in a seeded-bug repository, closure mechanisms, the receipt
//! and review observations.

use canonical_json::Value;

use crate::support::{Scratch, expect, text};

/// The demo plan with AC-pass declared as a regression-controlled criterion.
fn controlled() -> Scratch {
    let s = Scratch::new();
    let contract = std::fs::read_to_string(s.contract_file()).unwrap().replace(
        r#"{"id":"AC-pass","statement":"s","observable_check":"true","accepted_evidence":["observed"]}"#,
        r#"{"id":"AC-pass","statement":"s","observable_check":"true","accepted_evidence":["observed"],"control":{"kind":"regression","rationale":"the seeded bug must be caught"}}"#,
    );
    std::fs::write(s.contract_file(), contract).unwrap();
    s.materialize();
    s
}

fn outcomes(s: &Scratch, args: &[&str]) -> std::process::Output {
    let plan = s.plan();
    let mut all = vec!["outcomes", "--plan", plan.to_str().unwrap()];
    all.extend_from_slice(args);
    crate::dwp(&all)
}

fn control(s: &Scratch, script: &str) -> std::process::Output {
    outcomes(
        s,
        &[
            "control",
            "--task",
            "T-one",
            "--criterion",
            "AC-pass",
            "--command",
            &format!("sh {script}"),
            "--artifact",
            script,
        ],
    )
}

fn closure_of(s: &Scratch, criterion: &str) -> Value {
    let out = outcomes(s, &["closure"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = canonical_json::parse(&out.stdout).unwrap();
    doc.get("criteria")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .find(|c| c.get("criterion").and_then(Value::as_str) == Some(criterion))
        .cloned()
        .unwrap()
}

fn mechanism(s: &Scratch, criterion: &str) -> String {
    closure_of(s, criterion).get("mechanism").and_then(Value::as_str).unwrap().to_owned()
}

#[test]
fn a_seeded_bug_gives_a_discriminating_pair_and_pass_pass_does_not() {
    let s = controlled();
    expect(
        &control(&s, "check.sh"),
        1,
        "control pair refused for T-one: the task has no task_start",
    );
    // The buggy revision is committed; the attempt starts clean on it.
    expect(&s.ledger(&["start", "--task", "T-one"]), 0, "clean)");
    assert_eq!(mechanism(&s, "AC-pass"), "open (no in-window control pair)");
    // The fix and its check (the check is a new artifact: copied into the old leg).
    std::fs::write(s.root.join("src.txt"), "fixed\n").unwrap();
    std::fs::write(s.root.join("check.sh"), "grep -q fixed src.txt\n").unwrap();
    std::fs::write(s.root.join("always.sh"), "test -f src.txt\n").unwrap();

    // (PASS, PASS) proves nothing: non-discriminating, never rounded up.
    expect(
        &control(&s, "always.sh"),
        0,
        "OK: control pair verdict non_discriminating (old PASS / new PASS",
    );
    assert_eq!(mechanism(&s, "AC-pass"), "open (control did not discriminate: non_discriminating)");

    let out = control(&s, "check.sh");
    expect(&out, 0, "OK: control pair verdict discriminating (old FAIL / new PASS");
    let pair = s.journal().last().cloned().unwrap();
    assert_eq!(pair.get("type").and_then(Value::as_str), Some("control_pair"));
    assert_eq!(pair.pointer("/actor/kind").and_then(Value::as_str), Some("helper"));
    assert_eq!(pair.get("trust").and_then(Value::as_str), Some("observed"));
    assert_eq!(pair.pointer("/old_leg/outcome").and_then(Value::as_str), Some("FAIL"));
    assert_eq!(pair.pointer("/new_leg/outcome").and_then(Value::as_str), Some("PASS"));
    let old_log = pair.pointer("/old_leg/log").and_then(Value::as_str).unwrap();
    assert_eq!(pair.get("evidence_path").and_then(Value::as_str), Some(old_log));
    assert!(old_log.ends_with("-control-AC-pass-old.log"), "{old_log}");
    let log = std::fs::read_to_string(s.plan().join(old_log)).unwrap();
    assert!(log.starts_with("$ sh check.sh (cwd "), "{log}");
    assert!(log.contains("old-leg)"), "{log}");
    // The worktree is gone.
    let list = std::process::Command::new("git")
        .args(["worktree", "list"])
        .current_dir(&s.root)
        .output()
        .unwrap();
    assert_eq!(text(&list.stdout).lines().count(), 1, "{}", text(&list.stdout));

    let c = closure_of(&s, "AC-pass");
    assert_eq!(c.get("mechanism").and_then(Value::as_str), Some("control_pair"));
    assert_eq!(c.get("satisfied").and_then(Value::as_bool), Some(true));
    assert_eq!(c.get("control_kind").and_then(Value::as_str), Some("regression"));
}

#[test]
fn a_dirty_start_is_unavailable_and_blocks_closure() {
    let s = controlled();
    std::fs::write(s.root.join("src.txt"), "half-done\n").unwrap();
    expect(&s.ledger(&["start", "--task", "T-one"]), 0, "dirty: 1 path(s)");
    std::fs::write(s.root.join("src.txt"), "fixed\n").unwrap();
    std::fs::write(s.root.join("check.sh"), "grep -q fixed src.txt\n").unwrap();
    expect(
        &control(&s, "check.sh"),
        0,
        "OK: control pair verdict control_unavailable (starting fingerprint carries a dirty component - the old leg cannot be faithfully materialized (D3-3))",
    );
    let pair = s.journal().last().cloned().unwrap();
    assert_eq!(pair.pointer("/old_leg/available").and_then(Value::as_bool), Some(false));
    assert!(pair.pointer("/old_leg/outcome").is_none());
    assert!(pair.get("evidence_path").and_then(Value::as_str).unwrap().ends_with("-new.log"));
    assert_eq!(
        mechanism(&s, "AC-pass"),
        "blocked (control unavailable: the pair proves nothing and never rounds up)"
    );
    let out = outcomes(&s, &["closure"]);
    let doc = canonical_json::parse(&out.stdout).unwrap();
    assert_eq!(doc.get("plan_blocked").and_then(Value::as_bool), Some(true));
}

#[test]
fn control_refusals_record_nothing() {
    let s = controlled();
    s.ledger(&["start", "--task", "T-one"]);
    std::fs::write(s.root.join("check.sh"), "true\n").unwrap();
    let before = s.journal().len();
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &[
                "control",
                "--task",
                "T-one",
                "--criterion",
                "AC-review",
                "--command",
                "sh check.sh",
                "--artifact",
                "check.sh",
            ],
            1,
            "ERROR: control pair refused: criterion AC-review declares control kind None - exempt/undeclared criteria close on ordinary accepted evidence",
        ),
        (
            &[
                "control",
                "--task",
                "T-one",
                "--criterion",
                "AC-fail",
                "--command",
                "sh check.sh",
                "--artifact",
                "check.sh",
            ],
            1,
            "criterion 'AC-fail' is not declared in task T-one gate_intent ['AC-pass', 'AC-review']",
        ),
        (
            &[
                "control",
                "--task",
                "T-one",
                "--criterion",
                "AC-pass",
                "--command",
                "sh check.sh",
                "--artifact",
                "missing.sh",
            ],
            1,
            "control artifact 'missing.sh' does not resolve to a file inside the repository",
        ),
        (
            &[
                "control",
                "--task",
                "T-one",
                "--criterion",
                "AC-pass",
                "--command",
                "rm -rf /",
                "--artifact",
                "check.sh",
            ],
            1,
            "control command 'rm' is outside the contract declared command classes",
        ),
        (
            &["control", "--task", "T-one", "--criterion", "AC-pass", "--command", "sh check.sh"],
            2,
            "usage: dwp outcomes",
        ),
        (
            &["review", "--state", "great"],
            1,
            "ERROR: review state 'great' outside the closed set clean/critical/missing/error/incomplete",
        ),
    ];
    for (args, code, needle) in cases {
        expect(&outcomes(&s, args), *code, needle);
    }
    assert_eq!(s.journal().len(), before);
}

#[test]
fn closure_mechanisms_reviews_and_the_receipt() {
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
    assert_eq!(mechanism(&s, "AC-pass"), "evidence");
    assert_eq!(mechanism(&s, "AC-review"), "signoff");
    assert_eq!(mechanism(&s, "AC-fail"), "open (no in-window accepted evidence)");
    let c = closure_of(&s, "AC-pass");
    assert_eq!(c.get("control_kind").and_then(Value::as_str), Some("none"));
    assert_eq!(c.get("via_seq").and_then(Value::as_i64), Some(3));
    // A reconciliation naming a criterion without amendment authority blocks it.
    let recon = r#"{"trigger":"AC-fail disputed","editor":"human edit","authority":"lead"}"#;
    expect(
        &s.ledger(&[
            "append",
            "--type",
            "reconciliation",
            "--json",
            recon,
            "--actor-kind",
            "human",
            "--actor-identity",
            "lead",
            "--human-note",
            s.plan().join("NOTE.txt").to_str().unwrap(),
        ]),
        0,
        "OK: appended reconciliation",
    );
    assert_eq!(
        mechanism(&s, "AC-fail"),
        "blocked (reconciliation without amendment authority never closes evidence)"
    );
    // --task filters.
    let out = outcomes(&s, &["closure", "--task", "T-two"]);
    let doc = canonical_json::parse(&out.stdout).unwrap();
    assert_eq!(doc.get("criteria").and_then(Value::as_array).map(<[Value]>::len), Some(1));

    expect(
        &outcomes(&s, &["review", "--state", "critical", "--finding", "unsafe cast"]),
        0,
        "OK: review critical recorded at seq 6",
    );
    let last = s.journal().last().cloned().unwrap();
    assert_eq!(
        last.get("statement").and_then(Value::as_str),
        Some("REVIEW: critical: unsafe cast")
    );
    assert_eq!(last.get("trust").and_then(Value::as_str), Some("asserted"));
    assert_eq!(last.pointer("/actor/identity").and_then(Value::as_str), Some("dwp outcomes.py"));
    let out = outcomes(&s, &["closure"]);
    let doc = canonical_json::parse(&out.stdout).unwrap();
    assert_eq!(doc.pointer("/review/state").and_then(Value::as_str), Some("critical"));
    assert_eq!(doc.pointer("/review/finding").and_then(Value::as_str), Some("unsafe cast"));
    assert_eq!(doc.get("review_blocks").and_then(Value::as_bool), Some(true));

    // The receipt: read-only, deterministic, self-digesting.
    let before = crate::support::tree(&s.plan());
    // Without --out, stdout is the receipt document alone and the summary goes to stderr.
    let out = outcomes(&s, &["receipt", "--evaluator", "fresh"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).starts_with("OK: receipt stdout (2/3 satisfied, 1 blocked) sha256 "),
        "{}",
        text(&out.stderr)
    );
    let printed = canonical_json::parse(&out.stdout).unwrap();
    assert_eq!(printed.pointer("/totals/criteria").and_then(Value::as_i64), Some(3));
    let printed_sha = printed.get("receipt_sha256").and_then(Value::as_str).unwrap().to_owned();
    assert!(text(&out.stderr).contains(&format!("sha256 {}", &printed_sha[..16])));
    // The body is upstream's `json.dumps(doc, sort_keys=True, indent=2)` plus a newline.
    let mut expected =
        canonical_json::to_python(&printed, canonical_json::PyFormat::PRETTY).unwrap();
    expected.push(b'\n');
    assert_eq!(out.stdout, expected);
    let fresh = s.contract_file().with_file_name("r/receipt-fresh.json");
    let out = outcomes(&s, &["receipt", "--evaluator", "fresh", "--out", fresh.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let doc = canonical_json::parse(&std::fs::read(&fresh).unwrap()).unwrap();
    assert_eq!(doc.pointer("/evaluator/used").and_then(Value::as_str), Some("local"));
    assert!(
        doc.pointer("/evaluator/fallback")
            .and_then(Value::as_str)
            .unwrap()
            .contains("never claimed as fresh")
    );
    assert!(
        doc.pointer("/evaluator/caveat")
            .and_then(Value::as_str)
            .unwrap()
            .contains("never as independence evidence")
    );
    assert_eq!(doc.pointer("/rendered_from/last_seq").and_then(Value::as_i64), Some(6));
    assert_eq!(doc.pointer("/rendered_from/snapshot"), Some(&Value::Null));
    let journal = std::fs::read(s.plan().join("journal.ndjson")).unwrap();
    assert_eq!(
        doc.pointer("/rendered_from/journal_sha256").and_then(Value::as_str).map(str::to_owned),
        Some(canonical_json::digest::sha256_hex(&journal))
    );
    let sha = doc.get("receipt_sha256").and_then(Value::as_str).unwrap().to_owned();
    let body = canonical_json::to_python(
        &canonical_json::digest::without_top_level(&doc, &["receipt_sha256"]),
        canonical_json::PyFormat::PRETTY,
    )
    .unwrap();
    assert_eq!(sha, canonical_json::digest::sha256_hex(&body));
    assert_eq!(crate::support::tree(&s.plan()), before, "the receipt writes nothing");
    let again =
        outcomes(&s, &["receipt", "--evaluator", "fresh", "--out", fresh.to_str().unwrap()]);
    assert_eq!(again.stdout, out.stdout);
    assert_eq!(canonical_json::parse(&std::fs::read(&fresh).unwrap()).unwrap(), doc);
    let file = s.contract_file().with_file_name("r/receipt.json");
    let out = outcomes(&s, &["receipt", "--out", file.to_str().unwrap()]);
    expect(&out, 0, "OK: receipt ");
    assert!(text(&out.stdout).contains("(2/3 satisfied, 1 blocked)"));
    let saved = canonical_json::parse(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(saved.pointer("/evaluator/used").and_then(Value::as_str), Some("local"));
}

#[test]
fn a_non_git_host_answers_control_unavailable_before_the_command_class() {
    let s = controlled();
    // The plan now lives outside any git repository.
    let plain = s._tmp.path().join("plain");
    std::fs::create_dir_all(plain.join(".dwp/plans")).unwrap();
    let plan = plain.join(".dwp/plans").join(crate::support::PLAN);
    std::fs::rename(s.plan(), &plan).unwrap();
    let p = plan.to_str().unwrap();
    expect(
        &crate::dwp(&["ledger", "--plan", p, "start", "--task", "T-one"]),
        0,
        "OK: task_start T-one",
    );
    // `echo` is no declared command class and the artifact does not exist: neither matters when
    // there is no starting revision to build the old leg from.
    let out = crate::dwp(&[
        "outcomes",
        "--plan",
        p,
        "control",
        "--task",
        "T-one",
        "--criterion",
        "AC-pass",
        "--command",
        "true",
        "--artifact",
        "anything.txt",
    ]);
    expect(&out, 0, "OK: control pair verdict control_unavailable (");
    expect(&out, 0, "non-git host");
}

#[test]
fn a_hostile_starting_revision_is_an_error_not_a_panic() {
    let s = controlled();
    std::fs::write(s.root.join("check.sh"), "true\n").unwrap();
    // A raw append records any fingerprint a caller gives it.
    let out = s.ledger(&[
        "append",
        "--type",
        "task_start",
        "--json",
        r#"{"task":"T-one","fingerprint":{"revision":"ééééééééééééééé","dirty":""}}"#,
    ]);
    expect(&out, 0, "OK: appended task_start");
    let out = control(&s, "check.sh");
    expect(&out, 1, "ERROR: git worktree add at éééééééééééé failed");
    assert!(!text(&out.stderr).contains("panicked"), "{}", text(&out.stderr));
}
