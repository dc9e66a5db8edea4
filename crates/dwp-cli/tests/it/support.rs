//! A scratch git repository holding one small plan under `.dwp/plans/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub(crate) const PLAN: &str = "PLAN_001_demo_plan";

/// Which implementation runs a step of an upstream comparison: `dwp`, or the upstream helpers
/// of a skill pack (`<pack>/shared/*.py`). Each comparison adds its own way of calling it.
#[derive(Clone, Copy)]
pub(crate) enum Tool<'a> {
    Dwp,
    Upstream(&'a Path),
}

impl Tool<'_> {
    /// `dwp GROUP`, or `python3 <pack>/shared/SCRIPT` (writing no bytecode into the pack),
    /// ready for the step's arguments.
    pub(crate) fn command(self, group: &str, script: &str) -> Command {
        match self {
            Tool::Dwp => {
                let mut c = Command::new(env!("CARGO_BIN_EXE_dwp"));
                c.arg(group);
                c
            }
            Tool::Upstream(pack) => {
                let mut c = Command::new("python3");
                c.arg(pack.join("shared").join(script)).env("PYTHONDONTWRITEBYTECODE", "1");
                c
            }
        }
    }
}

pub(crate) const CONTRACT: &str = r#"{"schema":"https://deepworkplan.com/schema/plan-contract/v6.json","spec_version":"6.0.0","plan":"PLAN_001_demo_plan","revision":1,"created_at":"2026-11-30T00:00:00Z",
"outcome":{"statement":"demo","success_definition":"gates pass","out_of_scope":[]},
"acceptance":{"criteria":[{"id":"AC-pass","statement":"s","observable_check":"true","accepted_evidence":["observed"]},
{"id":"AC-fail","statement":"s","observable_check":"false","accepted_evidence":["observed"]},
{"id":"AC-review","statement":"s","observable_check":"a human reads it","accepted_evidence":["asserted"]}]},
"invariants":[],"scope":{"allowed_paths":["src.txt"],"allowed_command_classes":["true","false","sh","sleep"],"forbidden_operations":["force-push"]},
"authorization":{"mechanism":"plan_authorship","authority":"dev","timestamp":"2026-11-30T00:00:00Z","boundaries":"demo","consent_checkpoints":[]},
"permissions":{"granted":["gate_command_exec"],"not_granted":["network_access"]},"dependencies":[],
"resource_envelope":{"limits":[{"id":"wall_h","limit":1,"unit":"hours","enforcement":"advisory"}]},
"tasks":[{"id":"T-one","title":"One","prerequisites":[],"touched_surface":["src.txt"],"gate_intent":[{"criterion":"AC-pass","check":"true"},{"criterion":"AC-review","check":"read"}]},
{"id":"T-two","title":"Two","prerequisites":["T-one"],"touched_surface":["src.txt"],"gate_intent":[{"criterion":"AC-fail","check":"false"}]}]}"#;

/// A scratch repository; removed on drop.
pub(crate) struct Scratch {
    pub(crate) _tmp: tempfile::TempDir,
    pub(crate) root: PathBuf,
}

impl Scratch {
    /// A git repository with one commit and an unmaterialized plan folder (README only).
    pub(crate) fn new() -> Scratch {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        std::fs::create_dir_all(root.join(".dwp/plans").join(PLAN)).unwrap();
        std::fs::write(root.join(".gitignore"), ".dwp/\n").unwrap();
        std::fs::write(root.join("src.txt"), "hello\n").unwrap();
        std::fs::write(root.join(".dwp/plans").join(PLAN).join("README.md"), "# Demo plan\n")
            .unwrap();
        std::fs::write(tmp.path().join("contract.json"), CONTRACT).unwrap();
        for args in [
            &["init", "-q", "."][..],
            &["-c", "user.email=t@example.com", "-c", "user.name=t", "add", "."],
            &["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "init"],
        ] {
            let ok = Command::new("git").args(args).current_dir(&root).output().unwrap();
            assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
        }
        Scratch { _tmp: tmp, root }
    }

    pub(crate) fn plan(&self) -> PathBuf {
        self.root.join(".dwp/plans").join(PLAN)
    }

    pub(crate) fn contract_file(&self) -> PathBuf {
        self._tmp.path().join("contract.json")
    }

    /// `dwp ledger --plan <plan> ARGS`.
    pub(crate) fn ledger(&self, args: &[&str]) -> Output {
        let plan = self.plan();
        let mut all = vec!["ledger", "--plan", plan.to_str().unwrap()];
        all.extend_from_slice(args);
        crate::dwp(&all)
    }

    pub(crate) fn materialize(&self) {
        let c = self.contract_file();
        let out = self.ledger(&["materialize", "--contract", c.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }

    pub(crate) fn journal(&self) -> Vec<canonical_json::Value> {
        let raw = std::fs::read_to_string(self.plan().join("journal.ndjson")).unwrap_or_default();
        raw.lines().map(|l| canonical_json::parse(l.as_bytes()).unwrap()).collect()
    }

    pub(crate) fn types(&self) -> Vec<String> {
        self.journal()
            .iter()
            .map(|e| e.get("type").and_then(|t| t.as_str()).unwrap().to_owned())
            .collect()
    }
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts an exit code and a substring of stdout+stderr.
#[track_caller]
pub(crate) fn expect(out: &Output, code: i32, needle: &str) {
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(code), "{all}");
    assert!(all.contains(needle), "expected {needle:?} in {all}");
}

/// Every file under `dir` with its bytes (for "nothing was written" checks).
pub(crate) fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    fn walk(d: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        let Ok(rd) = std::fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    walk(dir, &mut out);
    out.sort();
    out
}
