//! Golden interop for `dwp migrate preview|migrate|rollback`: v5 plans of our own (a clean
//! completed task, a completed task whose evidence is gone, a pending task; a non-ASCII title,
//! a torn identity, a lossy status) run through preview, migrate, resume, post-migration work,
//! rollback and every refusal. The upstream `migrate_v6.py` (with `ledger.py` and
//! `contract_v6.py`) ran the same steps once; its normalised stdout, stderr, exit codes and the
//! files it wrote (`PREVIEW.json`, `PHASE.json`, `BACKUP.json`, the synthesized contract, the
//! v6 manifest, journal and snapshot) are committed under `tests/it/golden-migrate/`, and every
//! CI run replays the steps with `dwp` and compares byte for byte after the same
//! normalisation: the scratch path and the wall-clock event timestamps.
//!
//! Regenerate: `DWP_UPSTREAM_PACK=/path/to/skills/deepworkplan tests/it/golden-migrate/regen.sh`.
//! No upstream source is stored here, only its outputs on our inputs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{Tool, text};

impl Tool<'_> {
    /// `helper` is the upstream script; `dwp` runs the matching command group.
    fn migration_step(self, helper: &str, args: &[&str]) -> Output {
        let group = match helper {
            "migrate_v6.py" => "migrate",
            "ledger.py" => "ledger",
            _ => "contract",
        };
        self.command(group, helper).args(args).output().unwrap()
    }
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/golden-migrate")
}

const V5_MANIFEST: &str = "https://deepworkplan.com/schema/plan-manifest/v5.json";

/// One v5 task: `(id, title, status, gates)` with gates as `(command, evidence)`.
type Task<'a> = (u32, &'a str, &'a str, &'a [(&'a str, &'a str)]);

const TASKS: &[Task<'static>] = &[
    (
        1,
        "Clean completed task",
        "completed",
        &[("pnpm run test:clean", "analysis_results/gates/clean.log")],
    ),
    (
        2,
        "Broken evidence task",
        "completed",
        &[("pnpm run test:broken", "analysis_results/gates/gone.log")],
    ),
    (3, "Pending task", "pending", &[]),
];

/// A v5 plan folder (manifest, state, task files, one resolving gate log) under `root`.
fn v5_plan(root: &Path, name: &str, manifest_name: &str, tasks: &[Task<'_>]) {
    let plan = root.join(".dwp/plans").join(name);
    std::fs::create_dir_all(plan.join("analysis_results/gates")).unwrap();
    std::fs::write(plan.join("README.md"), "# Plan\n\n## Goal\n\nFixture plan.\n").unwrap();
    for t in ["1.task_clean.md", "2.task_broken.md", "3.task_pend.md"] {
        std::fs::write(plan.join(t), format!("# {t}\n")).unwrap();
    }
    std::fs::write(plan.join("analysis_results/gates/clean.log"), "ok\n").unwrap();
    let tasks: Vec<String> = tasks
        .iter()
        .map(|(id, title, status, gates)| {
            let gates: Vec<String> = gates
                .iter()
                .map(|(cmd, ev)| {
                    format!(
                        r#"{{"command":"{cmd}","passes":true,"exit_code":0,"evidence":"{ev}"}}"#
                    )
                })
                .collect();
            format!(
                r#"{{"id":{id},"title":"{title}","locator":{{"kind":"file","value":"{id}.task.md"}},"status":"{status}","gates":[{}]}}"#,
                gates.join(",")
            )
        })
        .collect();
    let manifest = format!(
        r#"{{"schema":"{V5_MANIFEST}","spec_version":"5.0.0","name":"{manifest_name}","title":"Migration golden","created_at":"2026-09-01T09:00:00Z","task_count":{n},"plan_format":"full"}}"#,
        n = tasks.len()
    );
    let state = format!(
        r#"{{"schema":"https://deepworkplan.com/schema/plan-state/v5.json","plan":"{name}","updated_at":"2026-09-02T09:00:00Z","status":"in_progress","completed_count":1,"task_count":{n},"format":"full","materialization":"ready","tasks":[{}]}}"#,
        tasks.join(","),
        n = tasks.len()
    );
    std::fs::write(plan.join("manifest.json"), manifest).unwrap();
    std::fs::write(plan.join("state.json"), state).unwrap();
}

/// The files of a plan folder recorded after a step (relative paths).
const MIGRATED: &[&str] = &[
    "migration_v5/PHASE.json",
    "migration_v5/backup/BACKUP.json",
    "contract.json",
    "manifest.json",
    "state.json",
    "journal.ndjson",
];

enum Step {
    /// Run `helper ARGS` (`{P}` is the plan folder) and record its output, then the listed
    /// plan files.
    Run {
        name: &'static str,
        helper: &'static str,
        args: Vec<&'static str>,
        files: &'static [&'static str],
    },
    /// Write a file in the plan folder before the next step.
    Write(&'static str, String),
}

fn steps() -> Vec<Step> {
    let run = |name, helper, args: &[&'static str], files| Step::Run {
        name,
        helper,
        args: args.to_vec(),
        files,
    };
    let mig = "migrate_v6.py";
    vec![
        run(
            "01-migrate-without-preview",
            mig,
            &["--plan", "{P}", "migrate", "--authority", "tester"],
            &[],
        ),
        run("02-rollback-without-marker", mig, &["--plan", "{P}", "rollback"], &[]),
        run("03-preview", mig, &["--plan", "{P}", "preview"], &["migration_v5/PREVIEW.json"]),
        run("04-migrate-without-authority", mig, &["--plan", "{P}", "migrate"], &[]),
        run("05-migrate", mig, &["--plan", "{P}", "migrate", "--authority", "tester"], MIGRATED),
        run(
            "06-migrate-again",
            mig,
            &["--plan", "{P}", "migrate", "--authority", "tester"],
            &["journal.ndjson"],
        ),
        run(
            "07-validate-synthesized",
            "contract_v6.py",
            &["validate-contract", "{P}/contract.json"],
            &[],
        ),
        run(
            "08-validate-synthesized-recorded",
            "contract_v6.py",
            &["validate-contract", "{P}/contract.json", "--recorded"],
            &[],
        ),
        run("09-preview-after-migrate", mig, &["--plan", "{P}", "preview"], &[]),
        run(
            "10-post-migration-append",
            "ledger.py",
            &[
                "--plan",
                "{P}",
                "append",
                "--type",
                "observation",
                "--trust",
                "asserted",
                "--json",
                r#"{"statement": "post-migration work"}"#,
            ],
            &[],
        ),
        run("11-rollback-refused", mig, &["--plan", "{P}", "rollback"], &[]),
        run(
            "12-rollback-force",
            mig,
            &["--plan", "{P}", "rollback", "--force"],
            &[
                "migration_v5/PHASE.json",
                "migration_v5/ROLLED_BACK.json",
                "manifest.json",
                "state.json",
            ],
        ),
        run("13-preview-after-rollback", mig, &["--plan", "{P}", "preview"], &[]),
        run("14-preview-non-ascii-title", mig, &["--plan", "{ACCENT}", "preview"], &[]),
        run("15-preview-torn-identity", mig, &["--plan", "{TORN}", "preview"], &[]),
        run("16-preview-lossy-status", mig, &["--plan", "{LOSSY}", "preview"], &[]),
        run("17-preview-second-plan", mig, &["--plan", "{TWO}", "preview"], &[]),
        Step::Write(
            "{TWO}/migration_v5/PHASE.json",
            r#"{"completed": ["backup"], "source_digest": "x"}"#.to_owned(),
        ),
        run("18-preview-in-flight", mig, &["--plan", "{TWO}", "preview"], &[]),
        run(
            "19-migrate-foreign-marker",
            mig,
            &["--plan", "{TWO}", "migrate", "--authority", "tester"],
            &[],
        ),
        run(
            "20-migrate-missing-plan",
            mig,
            &["--plan", "{ROOT}/.dwp/plans/PLAN_missing_plan", "preview"],
            &[],
        ),
    ]
}

fn run_scenario(tool: Tool<'_>) -> Vec<(String, String)> {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    let ok = Command::new("git").args(["init", "-q", "."]).current_dir(&root).output().unwrap();
    assert!(ok.status.success());
    v5_plan(&root, "PLAN_migrate_one", "PLAN_migrate_one", TASKS);
    v5_plan(&root, "PLAN_migrate_two", "PLAN_migrate_two", TASKS);
    v5_plan(
        &root,
        "PLAN_migrate_accent",
        "PLAN_migrate_accent",
        &[(1, "Café menu", "pending", &[])],
    );
    v5_plan(&root, "PLAN_migrate_torn", "PLAN_other_name", TASKS);
    v5_plan(
        &root,
        "PLAN_migrate_lossy",
        "PLAN_migrate_lossy",
        &[(1, "Mystery", "mysterious", &[])],
    );
    let plans = root.join(".dwp/plans");
    let subst = |a: &str| -> String {
        a.replace("{P}", plans.join("PLAN_migrate_one").to_str().unwrap())
            .replace("{TWO}", plans.join("PLAN_migrate_two").to_str().unwrap())
            .replace("{ACCENT}", plans.join("PLAN_migrate_accent").to_str().unwrap())
            .replace("{TORN}", plans.join("PLAN_migrate_torn").to_str().unwrap())
            .replace("{LOSSY}", plans.join("PLAN_migrate_lossy").to_str().unwrap())
            .replace("{ROOT}", root.to_str().unwrap())
    };
    let norm = |raw: &str| -> String {
        let mut s = raw.to_owned();
        for p in [&root, &tmp.path().to_path_buf()] {
            if let Ok(real) = p.canonicalize() {
                s = s.replace(real.to_str().unwrap(), "<REPO>");
            }
            s = s.replace(p.to_str().unwrap(), "<REPO>");
        }
        crate::golden::replace_timestamps(&s)
    };
    let mut out = Vec::new();
    for step in steps() {
        match step {
            Step::Write(rel, body) => std::fs::write(subst(rel), body).unwrap(),
            Step::Run { name, helper, args, files } => {
                let args: Vec<String> = args.iter().map(|a| subst(a)).collect();
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let o = tool.migration_step(helper, &args);
                let record = format!(
                    "exit: {}\n--- stdout ---\n{}--- stderr ---\n{}",
                    o.status.code().unwrap_or(-1),
                    text(&o.stdout),
                    text(&o.stderr)
                );
                out.push((format!("{name}.out"), norm(&record)));
                for f in files {
                    let body = std::fs::read_to_string(plans.join("PLAN_migrate_one").join(f))
                        .unwrap_or_else(|_| "<absent>\n".to_owned());
                    out.push((format!("{name}__{}", f.replace('/', "__")), norm(&body)));
                }
            }
        }
    }
    out
}

/// With `DWP_GOLDEN_REGEN=1` and `DWP_UPSTREAM_PACK`: run the steps with upstream and rewrite
/// the goldens. With only `DWP_UPSTREAM_PACK`: check the goldens still match upstream.
#[test]
#[ignore = "needs an upstream checkout: DWP_UPSTREAM_PACK=/path/to/skills/deepworkplan cargo test -p dwp-cli --test it -- --ignored"]
fn golden_migrate_matches_upstream_when_the_pack_is_at_hand() {
    let pack = crate::golden::upstream_pack(&["migrate_v6.py", "ledger.py", "contract_v6.py"]);
    crate::golden::regen_or_check(&golden_dir(), &run_scenario(Tool::Upstream(&pack)));
}

/// Always runs: `dwp migrate` on the same steps prints, exits and writes what upstream did.
#[test]
fn dwp_reproduces_the_upstream_migrate_goldens() {
    crate::golden::assert_matches_goldens(&golden_dir(), &run_scenario(Tool::Dwp));
}
