//! The ledger end to end in a scratch git repository: materialize, approval gate, passing
//! and failing gates, reuse, sign-off, completion, projection, roll, export.

use canonical_json::Value;

use crate::support::{Scratch, expect, text};

#[test]
fn a_small_plan_runs_end_to_end() {
    let s = Scratch::new();
    let c = s.contract_file();
    let c = c.to_str().unwrap();

    // task_start before materialization: no contract yet.
    expect(
        &s.ledger(&["start", "--task", "T-one"]),
        1,
        "ERROR: no contract.json and no contracts/ chain in",
    );
    expect(
        &s.ledger(&["materialize", "--contract", c]),
        0,
        "OK: materialized PLAN_001_demo_plan contract ",
    );
    expect(
        &s.ledger(&["materialize", "--contract", c]),
        0,
        "(manifest, contract, approval seq 1) — resumed an interrupted materialization",
    );
    let manifest = std::fs::read_to_string(s.plan().join("manifest.json")).unwrap();
    assert!(manifest.starts_with("{\n  \"contract\": {\n    \"id\": \""), "{manifest}");
    assert!(
        manifest.ends_with(
            "\"schema\": \"https://deepworkplan.com/schema/plan-manifest/v6.json\"\n}\n"
        )
    );

    expect(
        &s.ledger(&["start", "--task", "T-one"]),
        0,
        "OK: task_start T-one at seq 2 (starting fingerprint ",
    );
    expect(&s.ledger(&["start", "--task", "T-one"]), 0, "OK: task_start T-one at seq 2 (");
    expect(
        &s.ledger(&["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""]),
        0,
        "RAN: exit 0, seq 3 (fingerprint ",
    );
    expect(
        &s.ledger(&["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""]),
        0,
        "REUSED: exit 0 (fingerprint ",
    );
    expect(
        &s.ledger(&["reuse", "--task", "T-one", "--json", "\"true\"", "--criterion", "AC-pass"]),
        0,
        "EVIDENCE exit 0 log gates/T-one/003-true.log seq 3",
    );
    expect(
        &s.ledger(&["gate", "--task", "T-one", "--json", "\"true\""]),
        1,
        "gate runs require a criterion from the task gate_intent",
    );
    expect(
        &s.ledger(&["gate", "--task", "T-one", "--criterion", "AC-fail", "--json", "\"true\""]),
        1,
        "criterion 'AC-fail' is not declared in task T-one gate_intent ['AC-pass', 'AC-review']",
    );
    expect(
        &s.ledger(&["gate", "--task", "T-two", "--criterion", "AC-fail", "--json", "\"false\""]),
        1,
        "gate refused for T-two: the task has no task_start",
    );
    expect(
        &s.ledger(&["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"rm -rf x\""]),
        1,
        "gate command 'rm' is outside the contract declared command classes ['false', 'sh', 'sleep', 'true']",
    );
    expect(
        &s.ledger(&["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "{}"]),
        2,
        "gate --json must be a JSON string",
    );

    // Completion is refused (and recorded) until the sign-off lands.
    expect(
        &s.ledger(&["complete", "--task", "T-one"]),
        4,
        "REFUSED: completion of T-one refused: 1 criterion(s) lack in-window accepted evidence (zero-test control)",
    );
    std::fs::write(s.plan().join("REVIEW_NOTE.md.txt"), "reviewed\n").unwrap();
    expect(
        &s.ledger(&[
            "signoff",
            "--criterion",
            "AC-pass",
            "--evidence-path",
            "REVIEW_NOTE.md.txt",
            "--authority",
            "dev",
        ]),
        1,
        "signoff refused: AC-pass accepts only observed",
    );
    expect(
        &s.ledger(&[
            "signoff",
            "--criterion",
            "AC-review",
            "--evidence-path",
            "nope.txt",
            "--authority",
            "dev",
        ]),
        1,
        "evidence_path 'nope.txt' does not resolve inside the plan or the repository",
    );
    expect(
        &s.ledger(&[
            "signoff",
            "--criterion",
            "AC-review",
            "--evidence-path",
            "REVIEW_NOTE.md.txt",
            "--authority",
            "dev",
        ]),
        0,
        // Six refusals are recorded before it (issue 30): four gates, two sign-offs.
        "OK: signoff AC-review by dev at seq 11 (asserted: a human claim, never executed)",
    );
    let before = s.journal().len();
    expect(
        &s.ledger(&["complete", "--task", "T-one"]),
        0,
        "OK: T-one criteria satisfied: AC-pass, AC-review",
    );
    assert_eq!(s.journal().len(), before, "a successful completion writes nothing");

    // A failing gate; the declared program missing from PATH (nothing ran, nothing recorded);
    // the declared program exiting 127 (recorded); a timeout that ends the whole process group.
    // The declared check of AC-fail is `false`, so the other outcomes come from programs named
    // `false` on PATH (outside the repository), the way a real check behaves.
    expect(&s.ledger(&["start", "--task", "T-two"]), 0, "at seq 12");
    let fail = ["gate", "--task", "T-two", "--criterion", "AC-fail", "--json", "[\"false\"]"];
    expect(&s.ledger(&fail), 1, "RAN: exit 1, seq 13");
    let before = s.journal().len();
    let rerun: Vec<&str> = fail.iter().copied().chain(["--no-reuse"]).collect();
    let exit127 = crate::gates::fake_programs(&s, "bin127", &[("false", "exit 127")]);
    expect(&crate::gates::ledger_on_path(&s, &exit127, &rerun), 1, "RAN: exit 127, seq 14");
    let empty = crate::gates::fake_programs(&s, "empty", &[]);
    let missing = crate::gates::ledger_only_path(&s, &empty, &rerun);
    expect(
        &missing,
        1,
        "ERROR: gate command not found: ['false'] — no event is recorded for a command that never ran",
    );
    assert_eq!(s.journal().len(), before + 1);
    let slow = crate::gates::fake_programs(&s, "slow", &[("false", "sleep 30 & sleep 30; wait")]);
    let mut timed = rerun.clone();
    timed.extend(["--timeout", "1"]);
    let t0 = std::time::Instant::now();
    expect(&crate::gates::ledger_on_path(&s, &slow, &timed), 1, "RAN: exit 124, seq 15");
    assert!(t0.elapsed().as_secs() < 20, "the whole process group is killed");
    let log = std::fs::read_to_string(s.plan().join("gates/T-two/015-false.log")).unwrap();
    assert_eq!(
        log,
        "$ ['false']\n\n--- stdout ---\n\n--- stderr ---\ntimeout after 1.0s\n--- exit 124 ---\n"
    );
    let log = std::fs::read_to_string(s.plan().join("gates/T-two/013-false.log")).unwrap();
    assert_eq!(log, "$ ['false']\n\n--- stdout ---\n\n--- stderr ---\n\n--- exit 1 ---\n");
    expect(
        &s.ledger(&["complete", "--task", "T-two"]),
        4,
        "REFUSED: completion of T-two refused: 1 criterion(s) lack in-window accepted evidence",
    );

    // Mint rules.
    expect(
        &s.ledger(&["append", "--type", "gate_run", "--json", "{}"]),
        1,
        "gate_run records are produced only by the gate executor (ledger.py gate)",
    );
    expect(
        &s.ledger(&[
            "append",
            "--type",
            "observation",
            "--json",
            "{\"statement\":\"x\"}",
            "--trust",
            "observed",
            "--evidence-path",
            "REVIEW_NOTE.md.txt",
        ]),
        1,
        "trust=observed is minted only by execution",
    );
    expect(
        &s.ledger(&[
            "append",
            "--type",
            "observation",
            "--json",
            "{\"statement\":\"x\",\"trust\":\"observed\",\"evidence_path\":\"REVIEW_NOTE.md.txt\"}",
            "--actor-kind",
            "helper",
        ]),
        1,
        "trust=observed is minted only by execution",
    );
    expect(
        &s.ledger(&[
            "append",
            "--type",
            "observation",
            "--json",
            "{\"statement\":\"x\"}",
            "--actor-kind",
            "human",
        ]),
        1,
        "--actor-kind human needs an explicit human-authority marker",
    );
    expect(
        &s.ledger(&[
            "append",
            "--type",
            "observation",
            "--json",
            "{\"statement\":\"INV-x: pass\"}",
            "--trust",
            "asserted",
        ]),
        0,
        "OK: appended observation seq 21",
    );

    // Projection: deterministic, byte-stable, and agrees with the journal.
    expect(&s.ledger(&["project"]), 0, "OK: state.json projected (2 tasks, 5 types)");
    let first = std::fs::read(s.plan().join("state.json")).unwrap();
    expect(&s.ledger(&["project"]), 0, "OK: state.json projected");
    assert_eq!(first, std::fs::read(s.plan().join("state.json")).unwrap());
    let state = canonical_json::parse(&first).unwrap();
    let tasks = state.get("tasks").and_then(Value::as_array).unwrap();
    assert_eq!(tasks[0].get("status").and_then(Value::as_str), Some("completed"));
    assert_eq!(tasks[1].get("status").and_then(Value::as_str), Some("in_progress"));
    let crit = &tasks[1].get("criteria").and_then(Value::as_array).unwrap()[0];
    assert_eq!(
        text(&canonical_json::to_python_compact(crit).unwrap()),
        r#"{"criterion":"AC-fail","satisfied":false,"stale_seqs":[],"started_seq":12}"#
    );

    // Every written event validates against the live contract.
    let contract = s.plan().join("contract.json");
    let journal = s.plan().join("journal.ndjson");
    expect(
        &crate::dwp(&[
            "contract",
            "validate-journal",
            journal.to_str().unwrap(),
            "--contract",
            contract.to_str().unwrap(),
        ]),
        0,
        "OK: 21 journal events valid",
    );
    let r = "refusal";
    let expected = [
        "approval",
        "task_start",
        "gate_run",
        r, // gate without a criterion
        r, // criterion outside the task's gate_intent
        r, // task not started
        r, // command outside the classes
        r, // completion
        r, // sign-off of an observed-only criterion
        r, // sign-off evidence that does not resolve
        "gate_run",
        "task_start",
        "gate_run",
        "gate_run",
        "gate_run",
        r, // completion
        r, // append gate_run
        r, // append observed
        r, // append observed in the payload
        r, // human actor without a marker
        "observation",
    ];
    assert_eq!(s.types(), expected);
}

#[test]
fn task_start_without_approval_is_refused_and_recorded() {
    let s = Scratch::new();
    s.materialize();
    // Drop the approval: a hand-copied contract with no approval citing it.
    std::fs::write(s.plan().join("journal.ndjson"), "").unwrap();
    let out = s.ledger(&["start", "--task", "T-one"]);
    expect(
        &out,
        3,
        "REFUSED: task_start refused: no approval event cites the live contract_id — record the materialization-time approval first",
    );
    let events = s.journal();
    assert_eq!(s.types(), ["refusal"]);
    let reason = events[0].get("reason").and_then(Value::as_str).unwrap();
    assert!(reason.starts_with("no approval event cites the live contract_id "), "{reason}");
    assert_eq!(events[0].get("stage").and_then(Value::as_str), Some("task_start"));
}

#[test]
fn roll_keeps_history_and_seq_and_export_carries_evidence() {
    let s = Scratch::new();
    s.materialize();
    expect(&s.ledger(&["start", "--task", "T-one"]), 0, "seq 2");
    expect(
        &s.ledger(&["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""]),
        0,
        "RAN: exit 0, seq 3",
    );
    expect(&s.ledger(&["roll"]), 0, "OK: journal archived to ");
    assert!(s.plan().join("journal-archive-000001-000003.ndjson").is_file());
    expect(&s.ledger(&["roll"]), 1, "ERROR: nothing to roll: the live journal is empty");
    // The archived approval still binds; a replayed start dedups against the archive.
    expect(&s.ledger(&["start", "--task", "T-one"]), 0, "OK: task_start T-one at seq 2");
    expect(
        &s.ledger(&[
            "append",
            "--type",
            "observation",
            "--json",
            "{\"statement\":\"after roll\"}",
            "--trust",
            "asserted",
        ]),
        0,
        "OK: appended observation seq 4",
    );
    expect(&s.ledger(&["project"]), 0, "OK");
    let state = std::fs::read_to_string(s.plan().join("state.json")).unwrap();
    assert!(state.contains("\"archives\": [\n    {\n      \"file\": \"journal-archive-000001-000003.ndjson\",\n      \"first_seq\": 1,\n      \"last_seq\": 3\n    }\n  ]"), "{state}");
    expect(&s.ledger(&["inspect"]), 0, "plan PLAN_001_demo_plan contract ");
    let out = s.ledger(&["inspect"]);
    assert!(
        text(&out.stdout).ends_with("(1 events)\n   4 observation \n"),
        "{}",
        text(&out.stdout)
    );

    let obs = "{\"statement\":\"see log\",\"evidence_path\":\"analysis_results/gone.log\"}";
    expect(
        &s.ledger(&["append", "--type", "observation", "--json", obs, "--trust", "asserted"]),
        0,
        "OK: appended observation seq 5",
    );
    let dest = s._tmp.path().join("bundle");
    expect(&s.ledger(&["export", "--dest", dest.to_str().unwrap()]), 0, "OK: exported ");
    let manifest =
        canonical_json::parse(&std::fs::read(dest.join("EXPORT_MANIFEST.json")).unwrap()).unwrap();
    let files = manifest.get("files").and_then(Value::as_object).unwrap();
    for f in [
        "journal.ndjson",
        "state.json",
        "contract.json",
        "journal-archive-000001-000003.ndjson",
        "evidence.jsonl",
        "gates/T-one/003-true.log",
    ] {
        let digest = files
            .get(f)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{f} missing from {files:?}"));
        let bytes = std::fs::read(dest.join(f)).unwrap();
        assert_eq!(digest, canonical_json::digest::sha256_hex(&bytes));
    }
    assert_eq!(
        manifest
            .get("missing_evidence")
            .map(|m| text(&canonical_json::to_python_compact(m).unwrap())),
        Some(r#"["analysis_results/gone.log"]"#.to_owned())
    );
    assert!(!std::fs::read(dest.join("EXPORT_MANIFEST.json")).unwrap().ends_with(b"\n"));
}

#[test]
fn the_lock_refuses_a_live_writer_and_force_breaks_it() {
    let s = Scratch::new();
    s.materialize();
    let lock = s.plan().join(".ledger.lock");
    std::fs::create_dir(&lock).unwrap();
    let owner = format!(
        "{{\"epoch_ts\":{},\"host\":\"h\",\"identity\":\"dwp-ledger/6.0 pid:{}\",\"pid\":{},\"ts\":\"2026-11-30T00:00:00Z\"}}",
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64(),
        std::process::id(),
        std::process::id()
    );
    std::fs::write(lock.join("owner.json"), owner).unwrap();
    // The writer waits (bounded by --lock-wait) for a live holder, then refuses.
    let out = s.ledger(&["project", "--lock-wait", "0.3"]);
    expect(&out, 1, "ERROR: another writer holds the plan lock: dwp-ledger/6.0 pid:");
    expect(&out, 1, "waited 0.3 s for it");
    expect(&s.ledger(&["project", "--force"]), 0, "OK: state.json projected");
    assert!(!lock.exists());
}

#[test]
fn torn_tail_and_lost_newline_are_repaired_and_recorded() {
    let s = Scratch::new();
    s.materialize();
    let journal = s.plan().join("journal.ndjson");
    let mut raw = std::fs::read(&journal).unwrap();
    let good = raw.len();
    raw.extend_from_slice(b"{\"schema\": \"https://deepworkplan.com/schema/journa");
    std::fs::write(&journal, &raw).unwrap();
    expect(&s.ledger(&["inspect"]), 0, "(1 events; TORN TAIL)");
    expect(&s.ledger(&["project"]), 0, "OK");
    let events = s.journal();
    assert_eq!(s.types(), ["approval", "journal_repair"]);
    assert_eq!(events[1].get("byte_offset").and_then(Value::as_i64), Some(good as i64));
    assert_eq!(
        events[1].get("cause").and_then(Value::as_str),
        Some("final line does not parse (torn append)")
    );
    // Framing: the final event is complete but lost its newline.
    let mut raw = std::fs::read(&journal).unwrap();
    raw.pop();
    std::fs::write(&journal, &raw).unwrap();
    expect(&s.ledger(&["project"]), 0, "OK");
    let events = s.journal();
    assert_eq!(events.len(), 3);
    assert_eq!(
        events[2].get("cause").and_then(Value::as_str),
        Some("final event complete, framing newline restored after an interrupted append")
    );
    expect(&s.ledger(&["project"]), 0, "OK");
    assert_eq!(s.journal().len(), 3, "a second open is stable");
}

/// The files dwp writes are byte-identical to Python's own `json.dumps` of their content
/// (`indent=2` + newline for state/manifest/contract; compact sorted lines for the journal and
/// the evidence cache) — the formatting half of "state.json byte-identical to upstream".
#[test]
fn written_files_match_python_json_dumps_byte_for_byte() {
    let Some(python) = test_support::tool("python3") else { return };
    let s = Scratch::new();
    s.materialize();
    expect(&s.ledger(&["start", "--task", "T-one"]), 0, "OK");
    // The declared check `true`, found on PATH as a program that prints non-ASCII output.
    let bin = crate::gates::fake_programs(
        &s,
        "unicode",
        &[("true", "printf 'caf\u{e9} \\360\\237\\230\\200\r\\n'")],
    );
    let gate = ["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""];
    expect(&crate::gates::ledger_on_path(&s, &bin, &gate), 0, "RAN: exit 0, seq 3");
    let again: Vec<&str> = gate.iter().copied().chain(["--no-reuse"]).collect();
    expect(&s.ledger(&again), 0, "RAN");
    expect(
        &s.ledger(&[
            "append",
            "--type",
            "observation",
            "--json",
            "{\"statement\":\"caf\u{e9} \u{1f600} \\u0007 0.1 1e-7\"}",
            "--trust",
            "asserted",
            "--note",
            "ünïcode",
        ]),
        0,
        "OK",
    );
    expect(
        &s.ledger(&[
            "append",
            "--type",
            "resource_sample",
            "--json",
            "{\"source\":\"m\",\"value\":1e-07,\"unit\":\"hours\",\"limit_id\":\"wall_h\"}",
            "--trust",
            "asserted",
        ]),
        0,
        "OK",
    );
    expect(&s.ledger(&["project"]), 0, "OK");
    let script = r#"
import json, sys
plan = sys.argv[1]
for name in ("state.json", "manifest.json", "contract.json"):
    raw = open(plan + "/" + name, "rb").read()
    want = (json.dumps(json.loads(raw), sort_keys=True, indent=2) + "\n").encode()
    assert raw == want, (name, raw[:200], want[:200])
for name in ("journal.ndjson", "evidence.jsonl"):
    for line in open(plan + "/" + name, "rb").read().splitlines():
        want = json.dumps(json.loads(line), sort_keys=True, separators=(",", ":")).encode()
        assert line == want, (name, line, want)
print("python agrees")
"#;
    let out =
        std::process::Command::new(python).arg("-c").arg(script).arg(s.plan()).output().unwrap();
    assert!(out.status.success(), "{}{}", text(&out.stdout), text(&out.stderr));
    let state = std::fs::read_to_string(s.plan().join("state.json")).unwrap();
    assert!(state.contains("\"value\": 1e-07"), "{state}");
}

#[test]
fn a_v7_plan_writes_v7_records_and_refuses_raw_delegations() {
    let Some(contract) = test_support::shared("standards/dwp/fixtures/v7/contract-minimal-v7.json")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let plan = tmp.path().join("PLAN_v7_fixture_minimal");
    std::fs::create_dir_all(&plan).unwrap();
    std::fs::write(plan.join("README.md"), "# v7\n").unwrap();
    let p = plan.to_str().unwrap();
    let out = crate::dwp(&[
        "ledger",
        "--plan",
        p,
        "materialize",
        "--contract",
        contract.to_str().unwrap(),
    ]);
    expect(
        &out,
        0,
        "OK: materialized PLAN_v7_fixture_minimal contract c7969f00e742 (manifest, contract, approval seq 1)",
    );
    let manifest = std::fs::read_to_string(plan.join("manifest.json")).unwrap();
    assert!(
        manifest.contains("\"schema\": \"https://deepworkplan.com/schema/plan-manifest/v7.json\"")
    );
    assert_eq!(dwp_ledger::detect_generation(&plan), dwp_ledger::FolderGeneration::V7);
    let out = crate::dwp(&["ledger", "--plan", p, "start", "--task", "T-publish-schemas"]);
    expect(&out, 0, "OK: task_start T-publish-schemas at seq 2 (starting fingerprint none, clean)");
    let out =
        crate::dwp(&["ledger", "--plan", p, "append", "--type", "delegation", "--json", "{}"]);
    expect(&out, 1, "delegation records are produced only by `ledger.py delegate`");
    let out = crate::dwp(&["ledger", "--plan", p, "complete", "--task", "T-publish-schemas"]);
    expect(&out, 4, "REFUSED: completion of T-publish-schemas refused");
    let journal = std::fs::read_to_string(plan.join("journal.ndjson")).unwrap();
    // approval, the refused raw delegation, the refused completion (both recorded)
    assert_eq!(journal.lines().count(), 4);
    assert!(journal.lines().all(|l| {
        l.contains("\"schema\":\"https://deepworkplan.com/schema/journal-event/v7.json\"")
    }));
    assert!(journal.lines().last().unwrap().contains("\"identity\":\"dwp-ledger/7.0\""));
}

#[test]
fn human_actors_need_a_marker_and_reuse_reports_misses() {
    let s = Scratch::new();
    s.materialize();
    let note = s._tmp.path().join("human-note.md");
    std::fs::write(&note, "I, dev, approve this observation.\n").unwrap();
    let out = s.ledger(&[
        "append",
        "--type",
        "observation",
        "--json",
        "{\"statement\":\"reviewed\"}",
        "--trust",
        "asserted",
        "--actor-kind",
        "human",
        "--actor-identity",
        "dev",
        "--human-note",
        note.to_str().unwrap(),
    ]);
    expect(&out, 0, "OK: appended observation seq 2");
    let last = s.journal().pop().unwrap();
    let recorded = last.get("note").and_then(Value::as_str).unwrap();
    assert!(
        recorded.starts_with(&format!("human authority marker: note {} sha256:", note.display())),
        "{recorded}"
    );
    let out = s.ledger(&[
        "append",
        "--type",
        "observation",
        "--json",
        "{}",
        "--actor-kind",
        "human",
        "--human-note",
        "/nonexistent/note.md",
    ]);
    expect(&out, 1, "--human-note '/nonexistent/note.md' is not a file");
    expect(&s.ledger(&["start", "--task", "T-one"]), 0, "OK");
    let out = s.ledger(&["reuse", "--task", "T-one", "--json", "\"true\""]);
    expect(&out, 1, "NO EVIDENCE for fingerprint ");
    expect(&s.ledger(&["start"]), 2, "start requires --task");
    expect(&s.ledger(&["append", "--type", "observation"]), 2, "append requires --type and --json");
    expect(&crate::dwp(&["ledger", "project"]), 2, "usage:");
}

/// A plain `append` loads only the tail, yet still repairs first (recorded) and continues the
/// seq above the repair; a corrupt middle line is not repaired: the append refuses and writes
/// nothing (see `damage.rs`).
#[test]
fn a_tail_only_append_repairs_before_it_writes() {
    let s = Scratch::new();
    s.materialize();
    let journal = s.plan().join("journal.ndjson");
    let obs = ["append", "--type", "observation", "--trust", "asserted", "--json"];
    let mut raw = std::fs::read(&journal).unwrap();
    raw.extend_from_slice(b"{\"torn");
    std::fs::write(&journal, &raw).unwrap();
    let mut args = obs.to_vec();
    args.push("{\"statement\":\"after a torn tail\"}");
    expect(&s.ledger(&args), 0, "OK: appended observation seq 3");
    raw = std::fs::read(&journal).unwrap();
    raw.pop();
    std::fs::write(&journal, &raw).unwrap();
    expect(&s.ledger(&args), 0, "OK: appended observation seq 5");
    assert_eq!(
        s.types(),
        ["approval", "journal_repair", "observation", "journal_repair", "observation"]
    );
    let text = std::fs::read_to_string(&journal).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let damaged = format!("{}\n{{corrupt\n{}\n", lines[0], lines[2]);
    std::fs::write(&journal, &damaged).unwrap();
    expect(&s.ledger(&args), 1, "journal.ndjson line 2 (byte ");
    assert_eq!(std::fs::read_to_string(&journal).unwrap(), damaged, "every byte kept");
}

/// `project` streams the journal; its bytes equal the pure projection over every event.
#[test]
fn the_streaming_projection_equals_the_full_one() {
    let s = Scratch::new();
    s.materialize();
    expect(&s.ledger(&["start", "--task", "T-one"]), 0, "OK");
    expect(
        &s.ledger(&["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""]),
        0,
        "RAN",
    );
    for json in [
        r#"{"source":"m","limit_id":"wall_h","value":0.5,"unit":"hours"}"#,
        r#"{"source":"m","limit_id":"wall_h","value":0.75,"unit":"hours"}"#,
    ] {
        let args = ["append", "--type", "resource_sample", "--trust", "asserted", "--json", json];
        expect(&s.ledger(&args), 0, "OK");
    }
    let q = r#"{"category":"new_authority","description":"d","question":"may we?"}"#;
    expect(&s.ledger(&["append", "--type", "intervention", "--json", q]), 0, "OK");
    expect(&s.ledger(&["roll"]), 0, "OK");
    // T-two starts once its prerequisite T-one has closed.
    std::fs::write(s.plan().join("REVIEW.txt"), "read\n").unwrap();
    let signoff = ["signoff", "--criterion", "AC-review", "--evidence-path", "REVIEW.txt"];
    let signoff: Vec<&str> = signoff.iter().copied().chain(["--authority", "dev"]).collect();
    expect(&s.ledger(&signoff), 0, "OK");
    expect(&s.ledger(&["start", "--task", "T-two"]), 0, "OK");
    expect(
        &s.ledger(&["gate", "--task", "T-two", "--criterion", "AC-fail", "--json", "\"false\""]),
        1,
        "RAN",
    );
    expect(&s.ledger(&["project"]), 0, "OK: state.json projected (2 tasks, 5 types)");
    let plan = dwp_ledger::Plan::load(&s.plan()).unwrap();
    let mut events = plan.archived_events().unwrap();
    events.extend(s.journal());
    let full =
        dwp::projection::snapshot(&plan.contract, &plan.contract_id, &events, &plan.archives());
    let written = canonical_json::parse(&std::fs::read(s.plan().join("state.json")).unwrap());
    assert_eq!(written.unwrap(), full);
    assert!(full.get("archives").is_some() && full.get("checkpoint").is_some_and(|c| !c.is_null()));
}
