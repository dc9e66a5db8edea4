//! `dwp migrate`: a v5 plan previewed, migrated and continued under v6; a second plan rolled
//! back byte for byte; stale previews and lossy inputs refused.

use std::path::{Path, PathBuf};

use canonical_json::Value;

use crate::support::{expect, text, tree};

const MANIFEST: &str = r#"{"schema":"https://deepworkplan.com/schema/plan-manifest/v5.json","spec_version":"5.0.0","name":"NAME","archetype":"feature","rigor":"standard","created_at":"2026-01-02T03:04:05Z","task_count":3}
"#;

const STATE: &str = r##"{"schema":"https://deepworkplan.com/schema/plan-state/v5.json","plan":"NAME","updated_at":"2026-01-03T00:00:00Z","status":"in_progress","completed_count":2,"task_count":3,"format":"lite","materialization":"ready","tasks":[
{"id":1,"locator":{"kind":"inline","value":"#task-1"},"title":"Parse the input","status":"completed","gates":[{"command":"cargo test","passes":true,"last_run":"2026-01-02T10:00:00Z","exit_code":0,"evidence":"evidence/t1.log"}]},
{"id":2,"locator":{"kind":"inline","value":"#task-2"},"title":"Write the report!","status":"completed","gates":[{"command":"make report","passes":true,"last_run":"2026-01-02T11:00:00Z","exit_code":0,"evidence":"tests passed"}]},
{"id":3,"locator":{"kind":"inline","value":"#task-3"},"title":"Ship it","status":"pending","gates":[]}]}
"##;

struct V5 {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl V5 {
    fn new(names: &[&str]) -> V5 {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        for name in names {
            let dir = root.join(".dwp/plans").join(name);
            std::fs::create_dir_all(dir.join("evidence")).unwrap();
            std::fs::write(dir.join("manifest.json"), MANIFEST.replace("NAME", name)).unwrap();
            std::fs::write(dir.join("state.json"), STATE.replace("NAME", name)).unwrap();
            std::fs::write(dir.join("evidence/t1.log"), "42 passed\n").unwrap();
        }
        std::fs::write(root.join(".gitignore"), ".dwp/\n").unwrap();
        let ok = std::process::Command::new("git")
            .args(["init", "-q", "."])
            .current_dir(&root)
            .output()
            .unwrap();
        assert!(ok.status.success());
        V5 { _tmp: tmp, root }
    }

    fn plan(&self, name: &str) -> PathBuf {
        self.root.join(".dwp/plans").join(name)
    }
}

fn migrate(plan: &Path, args: &[&str]) -> std::process::Output {
    let p = plan.to_str().unwrap();
    let mut all = vec!["migrate", "--plan", p];
    all.extend_from_slice(args);
    crate::dwp(&all)
}

fn ledger(plan: &Path, args: &[&str]) -> std::process::Output {
    let p = plan.to_str().unwrap();
    let mut all = vec!["ledger", "--plan", p];
    all.extend_from_slice(args);
    crate::dwp(&all)
}

fn journal(plan: &Path) -> Vec<Value> {
    std::fs::read_to_string(plan.join("journal.ndjson"))
        .unwrap()
        .lines()
        .map(|l| canonical_json::parse(l.as_bytes()).unwrap())
        .collect()
}

#[test]
fn a_v5_plan_migrates_and_continues_under_v6() {
    let v5 = V5::new(&["PLAN_old_work"]);
    let plan = v5.plan("PLAN_old_work");
    expect(
        &migrate(&plan, &["migrate", "--authority", "lead"]),
        1,
        "REFUSED: no preview on record - run preview first",
    );
    let before = tree(&plan);
    expect(
        &migrate(&plan, &["preview"]),
        0,
        "OK: preview for PLAN_old_work (3 tasks: 1 imported-closable, 1 re-evidence, 1 pending) - contract ",
    );
    // The preview changes no v5 bytes.
    let after: Vec<_> = tree(&plan)
        .into_iter()
        .filter(|(p, _)| !p.to_string_lossy().contains("migration_v5"))
        .collect();
    assert_eq!(after, before);
    let preview =
        canonical_json::parse(&std::fs::read(plan.join("migration_v5/PREVIEW.json")).unwrap())
            .unwrap();
    assert_eq!(preview.get("type").and_then(Value::as_str), Some("dwp-migration-preview"));
    let row = |i: usize, k: &str| {
        preview
            .pointer(&format!("/task_mapping/{i}/{k}"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    assert_eq!(row(0, "v6_id").as_deref(), Some("T-01-parse-the-input"));
    assert_eq!(row(0, "criterion").as_deref(), Some("AC-t01-parse-the-input"));
    assert_eq!(row(0, "class").as_deref(), Some("imported"));
    assert_eq!(row(1, "v6_id").as_deref(), Some("T-02-write-the-report"));
    assert_eq!(row(1, "class").as_deref(), Some("re_evidence"));
    assert_eq!(row(2, "class").as_deref(), Some("pending"));
    assert_eq!(
        preview.pointer("/task_mapping/1/gates/0/import_as").and_then(Value::as_str),
        Some("asserted")
    );

    expect(&migrate(&plan, &["migrate"]), 1, "REFUSED: migrate requires --authority WHO");
    let out = migrate(&plan, &["migrate", "--authority", "lead"]);
    expect(&out, 0, "OK: PLAN_old_work migrated to v6 (contract ");
    expect(&out, 0, ", phases backup+contract+manifest+journal+project)");
    expect(
        &out,
        0,
        "    re-evidence criteria blocked until their gates re-run under v6: AC-t02-write-the-report",
    );
    expect(
        &migrate(&plan, &["migrate", "--authority", "lead"]),
        0,
        ", phases backup+contract+manifest+journal+project)",
    );
    expect(
        &migrate(&plan, &["preview"]),
        1,
        "REFUSED: PLAN_old_work is already a v6 plan (v6 manifest or contract.json present)",
    );
    let events = journal(&plan);
    let types: Vec<&str> =
        events.iter().map(|e| e.get("type").and_then(Value::as_str).unwrap()).collect();
    assert_eq!(
        types,
        ["approval", "task_start", "gate_run", "task_start", "gate_run", "observation"]
    );
    assert_eq!(events[0].get("mechanism").and_then(Value::as_str), Some("pre_authorization"));
    assert_eq!(events[2].get("trust").and_then(Value::as_str), Some("imported"));
    assert_eq!(events[4].get("trust").and_then(Value::as_str), Some("asserted"));
    assert!(
        events[2]
            .get("note")
            .and_then(Value::as_str)
            .unwrap()
            .starts_with("migrated: v5 PLAN_old_work task 1 gate 1 (source digest ")
    );
    assert_eq!(
        events[5].get("evidence_path").and_then(Value::as_str),
        Some("migration_v5/PREVIEW.json")
    );
    let manifest =
        canonical_json::parse(&std::fs::read(plan.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(
        manifest.get("schema").and_then(Value::as_str),
        Some("https://deepworkplan.com/schema/plan-manifest/v6.json")
    );
    expect(&crate::dwp(&["verify", plan.to_str().unwrap()]), 0, "Verdict: CONFORMANT");
    let state = canonical_json::parse(&std::fs::read(plan.join("state.json")).unwrap()).unwrap();
    let status = |i: usize| {
        state.pointer(&format!("/tasks/{i}/status")).and_then(Value::as_str).map(str::to_owned)
    };
    assert_eq!(
        (status(0).as_deref(), status(1).as_deref(), status(2).as_deref()),
        (Some("completed"), Some("in_progress"), Some("pending"))
    );

    // Continue under v6: re-evidence task 2 with an observed gate, then complete it.
    expect(
        &ledger(
            &plan,
            &[
                "gate",
                "--task",
                "T-02-write-the-report",
                "--criterion",
                "AC-t02-write-the-report",
                "--json",
                "\"true\"",
            ],
        ),
        0,
        "RAN: exit 0, seq 7",
    );
    expect(
        &ledger(&plan, &["complete", "--task", "T-02-write-the-report"]),
        0,
        "OK: T-02-write-the-report criteria satisfied",
    );
    expect(&ledger(&plan, &["start", "--task", "T-03-ship-it"]), 0, "OK: task_start T-03-ship-it");
    // Post-migration work is never silently discarded.
    expect(
        &migrate(&plan, &["rollback"]),
        1,
        "post-migration v6 work is real history and is not silently deleted; pass --force to discard it deliberately",
    );
}

#[test]
fn a_second_plan_rolls_back_byte_identically() {
    let v5 = V5::new(&["PLAN_first_work", "PLAN_second_work"]);
    let plan = v5.plan("PLAN_second_work");
    let original = tree(&plan);
    expect(&migrate(&plan, &["preview"]), 0, "preview written to migration_v5/PREVIEW.json");
    expect(
        &migrate(&plan, &["migrate", "--authority", "lead"]),
        0,
        "OK: PLAN_second_work migrated to v6",
    );
    assert!(plan.join("contract.json").is_file());
    expect(
        &migrate(&plan, &["rollback"]),
        0,
        "OK: PLAN_second_work rolled back to v5 (manifest and state restored byte-identically; contract.json and the journal removed)",
    );
    let restored: Vec<_> = tree(&plan)
        .into_iter()
        .filter(|(p, _)| !p.to_string_lossy().contains("migration_v5"))
        .collect();
    assert_eq!(restored, original);
    assert!(plan.join("migration_v5/ROLLED_BACK.json").is_file());
    // The other plan was never touched.
    assert!(!v5.plan("PLAN_first_work").join("migration_v5").exists());
}

#[test]
fn stale_previews_lossy_inputs_and_v6_plans_are_refused() {
    let v5 = V5::new(&["PLAN_stale_work", "PLAN_gone_work", "PLAN_lossy_work"]);
    let stale = v5.plan("PLAN_stale_work");
    expect(&migrate(&stale, &["preview"]), 0, "OK");
    let state = std::fs::read_to_string(stale.join("state.json")).unwrap();
    std::fs::write(stale.join("state.json"), state.replace("Ship it", "Ship it now")).unwrap();
    expect(
        &migrate(&stale, &["migrate", "--authority", "lead"]),
        1,
        "REFUSED: the v5 records changed since the preview (digest ",
    );

    let gone = v5.plan("PLAN_gone_work");
    expect(&migrate(&gone, &["preview"]), 0, "OK");
    std::fs::remove_file(gone.join("evidence/t1.log")).unwrap();
    expect(
        &migrate(&gone, &["migrate", "--authority", "lead"]),
        1,
        "REFUSED: the v5 world changed since the preview",
    );
    assert!(!gone.join("contract.json").exists());

    let lossy = v5.plan("PLAN_lossy_work");
    let good = std::fs::read_to_string(lossy.join("state.json")).unwrap();
    for (from, to, needle) in [
        (
            r#""status":"pending""#,
            r#""status":"parked""#,
            "task 3 carries status 'parked' outside pending/in_progress/completed - the v5 status axis is the thing migration maps",
        ),
        (r#""id":2,"#, r#""id":"two","#, "task 'two' has a non-integer id - unmappable"),
        (
            r#""passes":true,"last_run":"2026-01-02T10"#,
            r#""passes":"yes","last_run":"2026-01-02T10"#,
            "task 1 gate 1 carries passes='yes' - not a boolean; unmappable",
        ),
        (
            r#""task_count":3"#,
            r#""task_count":4"#,
            "state.json task_count 4 disagrees with 3 task records - a torn state is lossy",
        ),
        (
            r#""updated_at":"2026-01-03T00:00:00Z""#,
            r#""updated_at":"yesterday""#,
            "state.json updated_at 'yesterday' is missing or malformed - it is the deterministic anchor",
        ),
    ] {
        std::fs::write(lossy.join("state.json"), good.replacen(from, to, 1)).unwrap();
        let out = migrate(&lossy, &["preview"]);
        expect(&out, 1, needle);
        assert!(text(&out.stderr).starts_with("REFUSED: "));
    }
    std::fs::write(lossy.join("state.json"), &good).unwrap();
    expect(
        &migrate(&stale, &["rollback"]),
        1,
        "REFUSED: no migration marker - nothing to roll back",
    );
    // A torn identity is named.
    let manifest = std::fs::read_to_string(lossy.join("manifest.json")).unwrap();
    std::fs::write(lossy.join("manifest.json"), manifest.replace("PLAN_lossy_work", "PLAN_x_y"))
        .unwrap();
    expect(
        &migrate(&lossy, &["preview"]),
        1,
        "REFUSED: manifest name 'PLAN_x_y' does not match the plan folder 'PLAN_lossy_work'",
    );
    std::fs::write(lossy.join("manifest.json"), &manifest).unwrap();
}

#[test]
fn preview_refuses_while_a_migration_is_in_progress() {
    let v5 = V5::new(&["PLAN_busy_work"]);
    let plan = v5.plan("PLAN_busy_work");
    expect(&migrate(&plan, &["preview"]), 0, "OK: preview for PLAN_busy_work");
    // An interrupted migration: only the backup phase is on record.
    std::fs::write(
        plan.join("migration_v5/PHASE.json"),
        r#"{"completed": ["backup"], "type": "dwp-migration-phase"}"#,
    )
    .unwrap();
    let before = tree(&plan);
    expect(
        &migrate(&plan, &["preview"]),
        1,
        "REFUSED: a migration is in progress or done (phases: backup) - resume it with migrate, or rollback first",
    );
    assert_eq!(tree(&plan), before);
    // A rolled-back marker no longer blocks a fresh preview.
    std::fs::write(
        plan.join("migration_v5/PHASE.json"),
        r#"{"completed": ["backup"], "rolled_back": true, "type": "dwp-migration-phase"}"#,
    )
    .unwrap();
    expect(&migrate(&plan, &["preview"]), 0, "OK: preview for PLAN_busy_work");
}

fn read_doc(path: &Path) -> Value {
    canonical_json::parse(&std::fs::read(path).unwrap()).unwrap()
}

/// The files of upstream `migrate_v6.py`: the source digest over the v5 pair, the synthesized
/// contract, `PHASE.json`, `backup/BACKUP.json`, and a rollback that keeps the marker.
#[test]
fn the_migration_files_follow_upstream() {
    let v5 = V5::new(&["PLAN_file_work", "PLAN_cafe_work"]);
    let plan = v5.plan("PLAN_file_work");
    let manifest = read_doc(&plan.join("manifest.json"));
    let state = read_doc(&plan.join("state.json"));
    expect(&migrate(&plan, &["preview"]), 0, "OK: preview for PLAN_file_work");
    let preview = read_doc(&plan.join("migration_v5/PREVIEW.json"));
    let pair = canonical_json::to_python_compact(&Value::Object(
        [("manifest".to_owned(), manifest), ("state".to_owned(), state)].into_iter().collect(),
    ))
    .unwrap();
    let digest = canonical_json::digest::sha256_hex(&pair);
    assert_eq!(preview.get("source_digest").and_then(Value::as_str), Some(digest.as_str()));
    assert_eq!(
        preview.pointer("/task_mapping/1/reasons/0").and_then(Value::as_str),
        Some("gate 1 evidence 'tests passed' does not resolve")
    );
    expect(&migrate(&plan, &["migrate", "--authority", "lead"]), 0, "migrated to v6");
    let contract = read_doc(&plan.join("contract.json"));
    let at = |p: &str| contract.pointer(p).and_then(Value::as_str).map(str::to_owned);
    assert_eq!(
        at("/outcome/statement").as_deref(),
        Some("Migrated from v5 plan PLAN_file_work: PLAN_file_work")
    );
    assert_eq!(at("/tasks/0/gate_intent/0/check").as_deref(), Some("cargo test"));
    assert_eq!(
        at("/tasks/2/gate_intent/0/check").as_deref(),
        Some("v5 task record README.md (no gate recorded)")
    );
    assert_eq!(at("/tasks/1/prerequisites/0").as_deref(), Some("T-01-parse-the-input"));
    assert_eq!(at("/authorization/mechanism").as_deref(), Some("pre_authorization"));
    assert_eq!(
        contract.pointer("/permissions/not_granted").and_then(Value::as_array).map(<[Value]>::len),
        Some(dwp::validate::CAPABILITIES.len())
    );
    let phase = read_doc(&plan.join("migration_v5/PHASE.json"));
    assert_eq!(
        phase.get("completed"),
        Some(
            &canonical_json::parse(br#"["backup","contract","manifest","journal","project"]"#)
                .unwrap()
        )
    );
    assert_eq!(phase.get("journal_events").and_then(Value::as_i64), Some(6));
    assert_eq!(phase.get("authority").and_then(Value::as_str), Some("lead"));
    assert_eq!(phase.get("contract_id"), contract.get("contract_id"));
    let backup = read_doc(&plan.join("migration_v5/backup/BACKUP.json"));
    assert_eq!(backup.as_object().map(|m| m.len()), Some(2));
    let gate = journal(&plan)
        .into_iter()
        .find(|e| e.get("type").and_then(Value::as_str) == Some("gate_run"))
        .unwrap();
    assert_eq!(gate.get("timeout_seconds").and_then(Value::as_i64), Some(600));
    assert_eq!(
        gate.get("cwd").and_then(Value::as_str).map(std::path::PathBuf::from),
        Some(std::fs::canonicalize(&v5.root).unwrap())
    );
    // Post-migration work is discarded only with --force, and said so.
    ledger(&plan, &["start", "--task", "T-03-ship-it"]);
    let out = migrate(&plan, &["rollback", "--force"]);
    expect(&out, 0, "WARNING: the journal carries 7 events, 1 more than the migration minted");
    expect(&out, 0, "OK: PLAN_file_work rolled back to v5");
    let phase = read_doc(&plan.join("migration_v5/PHASE.json"));
    assert_eq!(phase.get("rolled_back"), Some(&Value::Bool(true)));
    // A rolled-back plan previews and migrates again.
    expect(&migrate(&plan, &["preview"]), 0, "OK: preview for PLAN_file_work");
    expect(&migrate(&plan, &["migrate", "--authority", "lead"]), 0, "migrated to v6");
    assert!(plan.join("contract.json").is_file());

    // A title outside ASCII makes an id the contract refuses: the preview says so up front.
    let cafe = v5.plan("PLAN_cafe_work");
    let state = std::fs::read_to_string(cafe.join("state.json")).unwrap();
    std::fs::write(cafe.join("state.json"), state.replace("Ship it", "Ship the café")).unwrap();
    let out = migrate(&cafe, &["preview"]);
    expect(&out, 1, "REFUSED: the synthesized contract does not validate: ");
    expect(&out, 1, "refusing to preview a plan whose migration could never complete");
    assert!(!cafe.join("migration_v5").exists());
}

/// `--plan` resolves as upstream `ledger.find_plan_dir` does: a missing folder is
/// `ERROR: no plan directory found at '…'` (exit 1), a file inside a `PLAN_*` folder names it.
#[test]
fn the_plan_argument_resolves_as_upstream() {
    let out = crate::dwp(&["migrate", "--plan", "/nonexistent/PLAN_x", "preview"]);
    expect(&out, 1, "ERROR: no plan directory found at '/nonexistent/PLAN_x'");
    assert_eq!(text(&out.stdout), "");
    let v5 = V5::new(&["PLAN_by_file"]);
    let state = v5.root.join(".dwp/plans/PLAN_by_file/state.json");
    expect(
        &crate::dwp(&["migrate", "--plan", state.to_str().unwrap(), "preview"]),
        0,
        "OK: preview for PLAN_by_file (3 tasks:",
    );
}
