//! Every refusal is itself recorded (issue 30): each request a writer refuses by a plan rule
//! appends exactly one `refusal` event and exits with the code it exited with before; a
//! damaged or locked journal gains nothing; `verify` checks each refusal; `status` and the
//! views show a task's refusals beside it.

use canonical_json::Value;

use crate::support::{Scratch, expect, text};

/// One refused request: its arguments, its exit code, the recorded rule (`None`: upstream's
/// own refusal form, no rule prefix) and subject.
struct Case {
    args: &'static [&'static str],
    code: i32,
    rule: Option<&'static str>,
    subject: &'static str,
}

const fn case(
    args: &'static [&'static str],
    code: i32,
    rule: Option<&'static str>,
    subject: &'static str,
) -> Case {
    Case { args, code, rule, subject }
}

/// The table of issue 30, then others of each rule class.
const CASES: &[Case] = &[
    case(&["complete", "--task", "T-one"], 4, None, "T-one"),
    case(
        &["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"ls\""],
        1,
        Some("command-class"),
        "T-one",
    ),
    case(&["start", "--task", "T-nope"], 1, Some("unknown-id"), "T-nope"),
    case(
        &[
            "signoff",
            "--criterion",
            "AC-nope",
            "--evidence-path",
            "REVIEW.txt",
            "--authority",
            "dev",
        ],
        1,
        Some("unknown-id"),
        "AC-nope",
    ),
    case(&["append", "--type", "bogus", "--json", "{}"], 1, Some("event-catalog"), "bogus"),
    case(
        &["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true && true\""],
        1,
        Some("shell-syntax"),
        "T-one",
    ),
    case(
        &[
            "signoff",
            "--criterion",
            "AC-review",
            "--evidence-path",
            "/etc/passwd",
            "--authority",
            "dev",
        ],
        1,
        Some("evidence-path"),
        "AC-review",
    ),
    // Unknown ids.
    case(
        &["gate", "--task", "T-nope", "--criterion", "AC-pass", "--json", "\"true\""],
        1,
        Some("unknown-id"),
        "T-nope",
    ),
    case(&["complete", "--task", "T-nope"], 1, Some("unknown-id"), "T-nope"),
    // Gate intent, attempt window, classes, binding.
    case(&["gate", "--task", "T-one", "--json", "\"true\""], 1, Some("gate-intent"), "T-one"),
    case(
        &["gate", "--task", "T-one", "--criterion", "AC-fail", "--json", "\"true\""],
        1,
        Some("gate-intent"),
        "T-one",
    ),
    case(
        &["gate", "--task", "T-two", "--criterion", "AC-fail", "--json", "\"false\""],
        1,
        Some("task-window"),
        "T-two",
    ),
    case(
        &["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"./true\""],
        1,
        Some("command-class"),
        "T-one",
    ),
    case(
        &["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"false\""],
        1,
        Some("criterion-binding"),
        "T-one",
    ),
    // Prerequisites (the standard's start rule).
    case(&["start", "--task", "T-two"], 1, Some("prerequisite"), "T-two"),
    // Sign-off rules.
    case(
        &[
            "signoff",
            "--criterion",
            "AC-pass",
            "--evidence-path",
            "REVIEW.txt",
            "--authority",
            "dev",
        ],
        1,
        Some("signoff"),
        "AC-pass",
    ),
    case(
        &[
            "signoff",
            "--criterion",
            "AC-review",
            "--evidence-path",
            "REVIEW.txt",
            "--authority",
            " ",
        ],
        1,
        Some("signoff"),
        "AC-review",
    ),
    case(
        &[
            "signoff",
            "--criterion",
            "AC-review",
            "--evidence-path",
            "REVIEW.txt",
            "--authority",
            "dev",
            "--task",
            "T-two",
        ],
        1,
        Some("signoff"),
        "T-two",
    ),
    // Evidence rules and the mint rules of a raw append.
    case(
        &[
            "signoff",
            "--criterion",
            "AC-review",
            "--evidence-path",
            "../../../../etc/hostname",
            "--authority",
            "dev",
        ],
        1,
        Some("evidence-path"),
        "AC-review",
    ),
    case(
        &[
            "append",
            "--type",
            "observation",
            "--trust",
            "imported",
            "--evidence-path",
            "/proc/self/environ",
            "--json",
            "{\"statement\":\"x\"}",
        ],
        1,
        Some("evidence-path"),
        "observation",
    ),
    case(&["append", "--type", "gate_run", "--json", "{}"], 1, Some("mint-rule"), "gate_run"),
    case(
        &[
            "append",
            "--type",
            "observation",
            "--trust",
            "observed",
            "--evidence-path",
            "REVIEW.txt",
            "--json",
            "{\"statement\":\"x\"}",
        ],
        1,
        Some("mint-rule"),
        "observation",
    ),
    case(
        &["append", "--type", "observation", "--json", "{\"statement\":\"x\",\"admin\":true}"],
        1,
        Some("event-catalog"),
        "observation",
    ),
    // Permissions: a human actor needs a human-authority marker.
    case(
        &[
            "append",
            "--type",
            "observation",
            "--trust",
            "asserted",
            "--actor-kind",
            "human",
            "--json",
            "{\"statement\":\"x\"}",
        ],
        1,
        Some("human-authority"),
        "observation",
    ),
];

fn started() -> Scratch {
    let s = Scratch::new();
    s.materialize();
    expect(&s.ledger(&["start", "--task", "T-one"]), 0, "OK");
    std::fs::write(s.plan().join("REVIEW.txt"), "read\n").unwrap();
    s
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

#[test]
fn every_refused_request_appends_exactly_one_refusal_and_keeps_its_exit_code() {
    let s = started();
    for c in CASES {
        let before = s.journal();
        let out = s.ledger(c.args);
        let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(c.code), "{:?}: {all}", c.args);
        let after = s.journal();
        assert_eq!(after[..before.len()], before[..], "{:?}: history unchanged", c.args);
        let added = &after[before.len()..];
        assert_eq!(added.len(), 1, "{:?}: one event, got {added:?}", c.args);
        let r = &added[0];
        assert_eq!(str_at(r, "type"), "refusal", "{:?}", c.args);
        assert_eq!(str_at(r, "subject"), c.subject, "{:?}", c.args);
        assert_eq!(r.pointer("/actor/kind").and_then(Value::as_str), Some("helper"));
        assert!(r.get("evidence_path").is_none(), "a refusal never cites the refused path");
        match c.rule {
            Some(rule) => {
                assert!(str_at(r, "reason").starts_with(&format!("{rule}: ")), "{r:?}");
                let note = str_at(r, "note");
                assert!(
                    note.starts_with(&format!(
                        "request: ledger {}; rule: {rule}; value: ",
                        c.args[0]
                    )),
                    "{note}"
                );
                assert!(note.chars().count() <= 500);
            }
            None => assert!(r.get("note").is_none(), "upstream's own form: {r:?}"),
        }
    }
    // Each recorded refusal validates against the standard's journal-event schema itself.
    if let Some(file) = test_support::shared("standards/dwp/schema/journal-event-v6.schema.json") {
        let schema: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&schema)
            .unwrap();
        let raw = std::fs::read_to_string(s.plan().join("journal.ndjson")).unwrap();
        let refusals: Vec<serde_json::Value> = raw
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|e| e["type"] == "refusal")
            .collect();
        assert_eq!(refusals.len(), CASES.len());
        for event in &refusals {
            let errors: Vec<String> = validator.iter_errors(event).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{event}: {errors:?}");
        }
        // The check can fail: a stage outside the enum does not validate.
        let mut bad = refusals[0].clone();
        bad["stage"] = serde_json::json!("later");
        assert!(!validator.is_valid(&bad));
    }
    // The journal is still valid under the live contract, and `verify` finds each refusal
    // well-formed.
    let p = s.plan();
    let out = crate::dwp(&["verify", p.to_str().unwrap()]);
    let all = text(&out.stdout);
    assert!(
        all.contains(&format!("[x] {} refusal(s) recorded, each well-formed", CASES.len())),
        "{all}"
    );
    assert!(all.contains("[x] every cited path"), "{all}");
}

/// A refusal quotes the offending value up to 200 bytes and records a longer one as its
/// digest and size (the subject too); nothing of it is cut to a misleading prefix.
#[test]
fn an_oversized_value_is_recorded_as_a_digest_and_size() {
    let s = started();
    let huge = format!("T-{}", "a".repeat(100_000));
    expect(&s.ledger(&["start", "--task", &huge]), 1, "is not in the contract");
    let r = s.journal().pop().unwrap();
    let digest = canonical_json::digest::sha256_hex(huge.as_bytes());
    let expected = format!("sha256:{digest} (100002 bytes)");
    assert_eq!(str_at(&r, "subject"), expected);
    assert_eq!(
        str_at(&r, "note"),
        format!("request: ledger start; rule: unknown-id; value: {expected}")
    );
    assert!(str_at(&r, "reason").chars().count() < 400);
    let short = "T-x'y";
    expect(&s.ledger(&["start", "--task", short]), 1, "is not in the contract");
    let r = s.journal().pop().unwrap();
    assert_eq!(str_at(&r, "note"), "request: ledger start; rule: unknown-id; value: \"T-x'y\"");
}

/// Nothing may be appended to a journal that is damaged or locked: those refusals reach the
/// operator only. Usage errors (before a plan is read) are not recorded either.
#[test]
fn a_damaged_or_locked_journal_gains_nothing() {
    let s = started();
    let journal = s.plan().join("journal.ndjson");
    let request =
        ["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true && true\""];
    // Locked by a live writer (this test process).
    let lock = s.plan().join(".ledger.lock");
    std::fs::create_dir(&lock).unwrap();
    let owner = format!(
        "{{\"epoch_ts\":{},\"host\":\"h\",\"identity\":\"dwp-ledger/6.0 pid:{}\",\"pid\":{},\"ts\":\"2026-11-30T00:00:00Z\"}}",
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64(),
        std::process::id(),
        std::process::id()
    );
    std::fs::write(lock.join("owner.json"), owner).unwrap();
    let before = std::fs::read(&journal).unwrap();
    let out = s.ledger(&request);
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(before, std::fs::read(&journal).unwrap(), "{}", text(&out.stderr));
    std::fs::remove_dir_all(&lock).unwrap();
    // A line that is not strict JSON (a duplicate key): the writer refuses before anything is
    // appended.
    let mut damaged = before.clone();
    damaged.extend_from_slice(b"{\"type\":\"observation\",\"type\":\"x\"}\n");
    std::fs::write(&journal, &damaged).unwrap();
    let out = s.ledger(&request);
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(damaged, std::fs::read(&journal).unwrap(), "{}", text(&out.stderr));
    std::fs::write(&journal, &before).unwrap();
    // A usage error: the plan is never read.
    expect(&s.ledger(&["gate", "--task", "T-one", "--json", "true x"]), 2, "gate --json must be");
    assert_eq!(before, std::fs::read(&journal).unwrap());
}

/// `dwp verify` fails a refusal that is not well-formed.
#[test]
fn verify_checks_each_refusal() {
    let s = started();
    expect(&s.ledger(&["start", "--task", "T-nope"]), 1, "ERROR");
    let journal = s.plan().join("journal.ndjson");
    let raw = std::fs::read_to_string(&journal).unwrap();
    let p = s.plan();
    expect(
        &crate::dwp(&["verify", p.to_str().unwrap()]),
        0,
        "[x] 1 refusal(s) recorded, each well-formed",
    );
    // The rule in the note is not a rule, and the reason does not name it.
    let forged = raw.replace("rule: unknown-id", "rule: made-up");
    std::fs::write(&journal, forged).unwrap();
    let out = crate::dwp(&["verify", p.to_str().unwrap()]);
    expect(
        &out,
        1,
        "1 malformed refusal(s); first: seq 3: refusal note does not name a request, a known rule and a value",
    );
}

/// `dwp status` (text and JSON) and the tasks view show a task's refusals beside it.
#[test]
fn status_and_the_tasks_view_show_refusals_beside_their_task() {
    let s = started();
    for _ in 0..7 {
        expect(
            &s.ledger(&["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"ls\""]),
            1,
            "outside the contract declared command classes",
        );
    }
    let p = s.plan();
    let out = crate::dwp(&["status", p.to_str().unwrap()]);
    let body = text(&out.stdout);
    let t1 = body.find("T-one").unwrap();
    let t2 = body.find("T-two").unwrap();
    let shown = body.find("7 refusal(s) recorded").unwrap();
    assert!(t1 < shown && shown < t2, "{body}");
    assert!(body.contains("seq 9: command-class: gate command 'ls'"), "{body}");
    let out = crate::dwp(&["status", p.to_str().unwrap(), "--json"]);
    let doc = canonical_json::parse(text(&out.stdout).trim_end().as_bytes()).unwrap();
    assert_eq!(doc.pointer("/tasks/0/refusals_total").and_then(Value::as_i64), Some(7));
    let shown = doc.pointer("/tasks/0/refusals").and_then(Value::as_array).unwrap();
    assert_eq!(shown.len(), dwp::status::REFUSALS_SHOWN);
    assert!(doc.pointer("/tasks/1/refusals").is_none());
    expect(&crate::dwp(&["views", "--plan", p.to_str().unwrap(), "render"]), 0, "");
    let tasks = std::fs::read_to_string(p.join("views/tasks.md")).unwrap();
    assert!(tasks.contains("- T-one: 7 refusal(s), the last at seq 9"), "{tasks}");
}

/// Refusals that record nothing because the plan itself is in doubt or not there yet: `start`
/// on a plan whose manifest pointer names no revision of its contract, and `materialize` of a
/// contract with an id no command line could name (a 1 MiB task id).
#[test]
fn a_damaged_manifest_or_an_unnameable_id_writes_nothing() {
    let s = Scratch::new();
    s.materialize();
    let manifest = s.plan().join("manifest.json");
    let good = std::fs::read_to_string(&manifest).unwrap();
    let before = crate::support::tree(&s.plan());
    for garbage in ["\"zz\"", "null", &format!("\"{}\"", "0".repeat(64))] {
        let doc = canonical_json::parse(good.as_bytes()).unwrap();
        let id = doc.pointer("/contract/id").and_then(Value::as_str).unwrap();
        std::fs::write(&manifest, good.replace(&format!("\"{id}\""), garbage)).unwrap();
        let after_edit = crate::support::tree(&s.plan());
        let out = s.ledger(&["start", "--task", "T-one"]);
        expect(&out, 1, "is no revision of this plan's contract");
        assert_eq!(after_edit, crate::support::tree(&s.plan()), "{garbage}: nothing written");
    }
    std::fs::write(&manifest, &good).unwrap();
    assert_eq!(before, crate::support::tree(&s.plan()));
    expect(&s.ledger(&["start", "--task", "T-one"]), 0, "OK: task_start T-one");

    let fresh = Scratch::new();
    let huge = format!("T-{}", "a".repeat(1 << 20));
    let contract = crate::support::CONTRACT.replace("\"T-two\"", &format!("\"{huge}\""));
    std::fs::write(fresh.contract_file(), contract).unwrap();
    let before = crate::support::tree(&fresh.plan());
    let c = fresh.contract_file();
    let out = fresh.ledger(&["materialize", "--contract", c.to_str().unwrap()]);
    expect(&out, 1, "a task id of 1048578 bytes (sha256:");
    assert!(text(&out.stderr).len() < 1000, "the id is not echoed");
    assert_eq!(before, crate::support::tree(&fresh.plan()));
}
