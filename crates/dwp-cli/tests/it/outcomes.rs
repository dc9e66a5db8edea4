//! `dwp outcomes`: control pairs in a seeded-bug repository, closure mechanisms, the receipt
//! and review observations.

use canonical_json::Value;

use crate::support::{Scratch, expect, text};

/// The demo plan with AC-pass declared as a regression-controlled criterion whose check (in
/// T-one's `gate_intent`) is `sh check.sh`: a control pair runs exactly that argv.
fn controlled() -> Scratch {
    let s = Scratch::new();
    let contract = std::fs::read_to_string(s.contract_file())
        .unwrap()
        .replace(
            r#"{"id":"AC-pass","statement":"s","observable_check":"true","accepted_evidence":["observed"]}"#,
            r#"{"id":"AC-pass","statement":"s","observable_check":"sh check.sh","accepted_evidence":["observed"],"control":{"kind":"regression","rationale":"the seeded bug must be caught"}}"#,
        )
        .replace(
            r#"{"criterion":"AC-pass","check":"true"}"#,
            r#"{"criterion":"AC-pass","check":"sh check.sh"}"#,
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

/// A control pair of AC-pass running `command` with the artifact `check.sh`.
fn control_with(s: &Scratch, command: &str) -> std::process::Output {
    outcomes(
        s,
        &[
            "control",
            "--task",
            "T-one",
            "--criterion",
            "AC-pass",
            "--command",
            command,
            "--artifact",
            "check.sh",
        ],
    )
}

/// A control pair of AC-pass running its declared check, `sh check.sh`.
fn control(s: &Scratch) -> std::process::Output {
    control_with(s, "sh check.sh")
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Every journal event that breaks the standard's journal-event schema (v6, the demo plan's),
/// with its errors; empty when the standard's files are not at hand.
fn schema_errors(s: &Scratch) -> Vec<String> {
    let Some(file) = test_support::shared("standards/dwp/schema/journal-event-v6.schema.json")
    else {
        return Vec::new();
    };
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let validator =
        jsonschema::options().with_draft(jsonschema::Draft::Draft202012).build(&schema).unwrap();
    let raw = std::fs::read_to_string(s.plan().join("journal.ndjson")).unwrap();
    raw.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .flat_map(|e| {
            let errors: Vec<String> =
                validator.iter_errors(&e).map(|err| format!("{e}: {err}")).collect();
            errors
        })
        .collect()
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
    expect(&control(&s), 1, "control pair refused for T-one: the task has no task_start");
    assert_eq!(
        str_at(&s.journal().pop().unwrap(), "reason").split(':').next(),
        Some("task-window")
    );
    // The buggy revision is committed; the attempt starts clean on it.
    expect(&s.ledger(&["start", "--task", "T-one"]), 0, "clean)");
    assert_eq!(mechanism(&s, "AC-pass"), "open (no in-window control pair)");
    // The fix, and a check that passes either way (the check is a new artifact: copied into
    // the old leg).
    std::fs::write(s.root.join("src.txt"), "fixed\n").unwrap();
    std::fs::write(s.root.join("check.sh"), "test -f src.txt\n").unwrap();

    // (PASS, PASS) proves nothing: non-discriminating, never rounded up.
    expect(&control(&s), 0, "OK: control pair verdict non_discriminating (old PASS / new PASS");
    assert_eq!(mechanism(&s, "AC-pass"), "open (control did not discriminate: non_discriminating)");

    // The check that catches the seeded bug.
    std::fs::write(s.root.join("check.sh"), "grep -q fixed src.txt\n").unwrap();
    let out = control(&s);
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
    // The exact argv both legs ran is in the event too (the schema has no command field).
    assert!(str_at(&pair, "note").ends_with("; command: 'sh check.sh'"), "{pair:?}");
    assert_eq!(schema_errors(&s), Vec::<String>::new());
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
        &control(&s),
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

/// Each control-pair request refused by a plan rule leaves exactly one `refusal` (request
/// `outcomes control`, the rule named) and exits 1 as before; usage errors and a review state
/// outside the closed set are refused before the plan is opened and leave nothing.
#[test]
fn control_refusals_are_recorded() {
    let s = controlled();
    s.ledger(&["start", "--task", "T-one"]);
    std::fs::write(s.root.join("check.sh"), "true\n").unwrap();
    let control_of = |criterion: &'static str, command: &'static str, artifact: &'static str| {
        vec![
            "control",
            "--task",
            "T-one",
            "--criterion",
            criterion,
            "--command",
            command,
            "--artifact",
            artifact,
        ]
    };
    // (arguments, exit code, message, recorded rule).
    let cases: Vec<(Vec<&str>, i32, &str, Option<&str>)> = vec![
        (
            control_of("AC-review", "sh check.sh", "check.sh"),
            1,
            "ERROR: control pair refused: criterion AC-review declares control kind None - exempt/undeclared criteria close on ordinary accepted evidence",
            Some("control-kind"),
        ),
        (
            control_of("AC-fail", "sh check.sh", "check.sh"),
            1,
            "ERROR: control pair refused: criterion 'AC-fail' is not declared in task T-one gate_intent ['AC-pass', 'AC-review']",
            Some("gate-intent"),
        ),
        (
            control_of("AC-pass", "sh check.sh", "missing.sh"),
            1,
            "control artifact 'missing.sh' does not resolve to a file inside the repository",
            Some("evidence-path"),
        ),
        (
            control_of("AC-pass", "sh check.sh", "../outside.sh"),
            1,
            "control artifact '../outside.sh' does not resolve to a file inside the repository",
            Some("evidence-path"),
        ),
        (
            control_of("AC-pass", "rm -rf /", "check.sh"),
            1,
            "control command 'rm' is outside the contract declared command classes",
            Some("command-class"),
        ),
        (
            control_of("AC-pass", "./sh check.sh", "check.sh"),
            1,
            "control command program './sh' is not a declared command class",
            Some("command-class"),
        ),
        (
            control_of("AC-pass", "sh other.sh", "check.sh"),
            1,
            "control command 'sh other.sh' is not the check 'sh check.sh' that task T-one declares for AC-pass",
            Some("criterion-binding"),
        ),
        (
            vec![
                "control",
                "--task",
                "T-nope",
                "--criterion",
                "AC-pass",
                "--command",
                "sh check.sh",
                "--artifact",
                "check.sh",
            ],
            1,
            "ERROR: task 'T-nope' is not in the contract",
            Some("unknown-id"),
        ),
        (
            vec![
                "control",
                "--task",
                "T-one",
                "--criterion",
                "AC-pass",
                "--command",
                "sh check.sh",
            ],
            2,
            "usage: dwp outcomes",
            None,
        ),
        (
            vec!["review", "--state", "great"],
            1,
            "ERROR: review state 'great' outside the closed set clean/critical/missing/error/incomplete",
            None,
        ),
    ];
    for (args, code, needle, rule) in &cases {
        let before = s.journal().len();
        expect(&outcomes(&s, args), *code, needle);
        let added = &s.journal()[before..];
        match rule {
            None => assert!(added.is_empty(), "{args:?} recorded {added:?}"),
            Some(rule) => {
                assert_eq!(added.len(), 1, "{args:?}: exactly one event, the refusal");
                let r = &added[0];
                assert_eq!(str_at(r, "type"), "refusal");
                assert_eq!(str_at(r, "stage"), "gate");
                assert!(str_at(r, "reason").starts_with(&format!("{rule}: ")), "{r:?}");
                let note = format!("request: outcomes control; rule: {rule}; value: ");
                assert!(str_at(r, "note").starts_with(&note), "{r:?}");
            }
        }
    }
    assert!(s.types().iter().all(|t| t != "control_pair"));
    assert_eq!(schema_errors(&s), Vec::<String>::new());
    let out = crate::dwp(&["verify", s.plan().to_str().unwrap()]);
    let recorded = cases.iter().filter(|c| c.3.is_some()).count();
    assert!(
        text(&out.stdout)
            .contains(&format!("[x] {recorded} refusal(s) recorded, each well-formed")),
        "{}",
        text(&out.stdout)
    );
}

/// Each compound command of issue 23 given as a control pair's command is refused before
/// either leg runs: no file `X` (every one of them creates it when a shell reads it), no log,
/// no pair, and exactly one `refusal` naming the rule.
#[test]
fn compound_control_commands_are_refused_recorded_and_never_run() {
    let s = controlled();
    expect(&s.ledger(&["start", "--task", "T-one"]), 0, "clean)");
    std::fs::write(s.root.join("check.sh"), "true\n").unwrap();
    let cases: &[(&str, &str)] = &[
        ("true && touch X", "shell-syntax"),
        ("true $(touch X)", "shell-syntax"),
        ("true `touch X`", "shell-syntax"),
        ("true | touch X", "shell-syntax"),
        ("true > X", "shell-syntax"),
        ("false || touch X", "shell-syntax"),
        ("  true ; touch X", "shell-syntax"),
        ("true\ntouch X", "shell-syntax"),
        ("sh check.sh ; touch X", "shell-syntax"),
        ("sh check.sh && touch X", "shell-syntax"),
        ("sh check.sh > X", "shell-syntax"),
        ("sh check.sh\ntouch X", "shell-syntax"),
        ("sh check.sh 'unterminated", "shell-syntax"),
        // A declared shell's -c script is shell syntax by design, so it is held to the check.
        ("sh -c 'touch X'", "criterion-binding"),
        ("touch X", "command-class"),
    ];
    for (command, rule) in cases {
        let before = s.journal().len();
        let out = control_with(&s, command);
        expect(&out, 1, "ERROR: control command ");
        assert!(!s.root.join("X").exists(), "{command:?} ran a second command");
        let added = &s.journal()[before..];
        assert_eq!(added.len(), 1, "{command:?}: exactly one event, the refusal");
        let r = &added[0];
        assert_eq!(str_at(r, "type"), "refusal");
        assert_eq!(str_at(r, "subject"), "T-one");
        assert!(str_at(r, "reason").starts_with(&format!("{rule}: ")), "{command:?}: {r:?}");
        assert!(
            str_at(r, "note").starts_with(&format!("request: outcomes control; rule: {rule}; ")),
            "{r:?}"
        );
    }
    assert!(!s.plan().join("gates/T-one").exists(), "no leg ran, no log was written");
    assert!(s.types().iter().all(|t| t != "control_pair"));
}

/// Both legs execute the argv directly: an executable of one's own named `sh` in the repository
/// (and first on PATH) is never what runs, where a shell reading `sh check.sh` would run it.
#[test]
fn control_legs_run_the_argv_without_a_shell() {
    use std::os::unix::fs::PermissionsExt;
    let s = controlled();
    expect(&s.ledger(&["start", "--task", "T-one"]), 0, "clean)");
    let own = s.root.join("sh");
    std::fs::write(&own, "#!/bin/sh\ntouch X\n").unwrap();
    std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(s.root.join("src.txt"), "fixed\n").unwrap();
    std::fs::write(s.root.join("check.sh"), "grep -q fixed src.txt\n").unwrap();
    let plan = s.plan();
    let path = format!("{}:{}", s.root.display(), std::env::var("PATH").unwrap_or_default());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dwp"))
        .args(["outcomes", "--plan", plan.to_str().unwrap()])
        .args(["control", "--task", "T-one", "--criterion", "AC-pass"])
        .args(["--command", "sh check.sh", "--artifact", "check.sh"])
        .env("PATH", path)
        .output()
        .unwrap();
    expect(&out, 0, "OK: control pair verdict discriminating (old FAIL / new PASS");
    assert!(!s.root.join("X").exists(), "the repository's own `sh` ran");
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
fn a_non_git_host_answers_control_unavailable_but_still_admits_the_command() {
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
    let control = |command: &str| {
        crate::dwp(&[
            "outcomes",
            "--plan",
            p,
            "control",
            "--task",
            "T-one",
            "--criterion",
            "AC-pass",
            "--command",
            command,
            "--artifact",
            "anything.txt",
        ])
    };
    // The new leg still runs, so the command is admitted as everywhere: shell syntax is
    // refused (and recorded) even with no old leg to build.
    let out = control("sh check.sh && touch X");
    expect(&out, 1, "ERROR: control command 'sh check.sh && touch X' refused");
    assert!(!plain.join("X").exists() && !s.root.join("X").exists());
    // The artifact does not exist: that does not matter when there is no starting revision to
    // build the old leg from.
    let out = control("sh check.sh");
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
    let out = control(&s);
    expect(&out, 1, "ERROR: git worktree add at éééééééééééé failed");
    assert!(!text(&out.stderr).contains("panicked"), "{}", text(&out.stderr));
}
