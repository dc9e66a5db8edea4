//! Golden interop for `dwp ledger delegate launch|observe|collect|cancel`: one v7 plan built
//! by `dwp` in the scratch repository of `support.rs`, an addon descriptor in a scratch pack's
//! `addons/` (upstream reads it there; `dwp` via `DWP_ADDONS_DIR`), and steps that exercise
//! the usage errors, every launch refusal in upstream's order, collect/cancel refusals, a
//! read-only delegate whose tree moved, and the `observe` listing. The upstream `ledger.py`
//! ran the same steps once; its normalised stdout, stderr, exit codes and the journal events
//! it wrote are committed under `tests/it/golden-delegate/`, and every CI run replays the
//! steps with `dwp` and compares byte for byte after the same normalisation (`golden.rs`).
//!
//! Regenerate: `DWP_UPSTREAM_PACK=/path/to/skills/deepworkplan tests/it/golden-delegate/regen.sh`.
//! No upstream source is stored here, only its outputs on our inputs.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::golden::Normaliser;
use crate::support::{Scratch, Tool, text};

/// The scratch pack: `<tmp>/pack/addons/kit/addon.json` (and, for upstream, `shared/`
/// linking the upstream helpers so that their `../addons` is this folder).
fn pack_dir(s: &Scratch) -> PathBuf {
    s._tmp.path().join("pack")
}

impl Tool<'_> {
    fn delegate(self, s: &Scratch, plan: &Path, args: &[&str]) -> Output {
        let pack = pack_dir(s);
        // Upstream runs the scratch pack's helpers, whose `../addons` is the scratch pack.
        let tool = if let Tool::Upstream(_) = self { Tool::Upstream(&pack) } else { Tool::Dwp };
        let mut c = tool.command("ledger", "ledger.py");
        c.env("HOME", s._tmp.path().join("home"))
            .env_remove("DWP_ADDONS_DIR")
            .arg("--plan")
            .arg(plan)
            .arg("delegate")
            .args(args)
            .current_dir(&s.root);
        if let Tool::Dwp = self {
            c.env("DWP_ADDONS_DIR", pack.join("addons"));
        }
        c.output().unwrap()
    }
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/golden-delegate")
}

const DESCRIPTOR: &str = r#"{"schema":"https://deepworkplan.com/schema/addon-descriptor/v1.json","key":"kit","detect":{"paths":["src.txt"]},"provides_abilities":["subagents"],"requires_grants":["agent_delegation"],"transport":"headless"}"#;

/// The `support.rs` contract as v7 with the `agent_delegation` grant and a third,
/// `parallel_safe` task.
fn contract(v7: bool) -> String {
    let mut out = crate::support::CONTRACT.to_owned();
    if !v7 {
        return out;
    }
    let pairs = [
        ("plan-contract/v6.json", "plan-contract/v7.json"),
        (
            r#""granted":["gate_command_exec"]"#,
            r#""granted":["gate_command_exec","agent_delegation"]"#,
        ),
        (
            r#""gate_intent":[{"criterion":"AC-fail","check":"false"}]}]"#,
            r#""gate_intent":[{"criterion":"AC-fail","check":"false"}]},
{"id":"T-three","title":"Three","prerequisites":[],"parallel_safe":true,"touched_surface":["src.txt"],"gate_intent":[{"criterion":"AC-fail","check":"false"}]}]"#,
        ),
    ];
    for (from, to) in pairs {
        assert!(out.contains(from), "{from}");
        out = out.replacen(from, to, 1);
    }
    out
}

enum Step {
    /// A `dwp ledger` command building the plan (not recorded).
    Ledger(&'static [&'static str]),
    /// Write a file (relative to the scratch temp dir).
    Write(&'static str, &'static str),
    /// A delegate command run by `dwp` to build the plan (not recorded). Upstream's launch
    /// of a string `via` needs `config.ID_SAFE_RE`, which the upstream `config.py` lacks, so
    /// launches that pass the `via` check are built by `dwp` and only their effects compared.
    Build(&'static [&'static str]),
    /// A delegate command whose output is recorded under `name`.
    Delegate(&'static str, &'static [&'static str]),
}

const RO: &str = r#"{"via":"kit","transport":"headless","worktree":null,"prompt_digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","delegation_id":"d1","kind":"review"}"#;

fn steps() -> Vec<Step> {
    use Step::{Build as B, Delegate as D, Ledger as L, Write as W};
    vec![
        D("01-no-op", &[]),
        D("02-bad-op", &["teleport", "--task", "T-one"]),
        D("03-no-task", &["launch", "--json", RO]),
        D("04-unknown-task", &["launch", "--task", "T-nine", "--json", RO]),
        D("05-not-started", &["launch", "--task", "T-one", "--json", RO]),
        D("06-observe-empty", &["observe"]),
        L(&["start", "--task", "T-one"]),
        D(
            "07-not-parallel-safe",
            &[
                "launch",
                "--task",
                "T-one",
                "--json",
                r#"{"via":"kit","transport":"headless","worktree":"../wt"}"#,
            ],
        ),
        D("08-not-an-object", &["launch", "--task", "T-one", "--json", "[1]"]),
        D("09-via-missing", &["launch", "--task", "T-one", "--json", r#"{"worktree":null}"#]),
        W("repo/.dwp/config.json", "{\"addons\": {\"kit\": {\"enabled\": true}}}\n"),
        B(&["launch", "--task", "T-one", "--json", RO]),
        D("10-observe", &["observe"]),
        D(
            "11-collect-no-state",
            &["collect", "--task", "T-one", "--json", r#"{"delegation_id":"d1"}"#],
        ),
        D(
            "12-collect-unknown",
            &[
                "collect",
                "--task",
                "T-one",
                "--json",
                r#"{"delegation_id":"d9","state":"completed"}"#,
            ],
        ),
        D(
            "13-collect-other-task",
            &[
                "collect",
                "--task",
                "T-two",
                "--json",
                r#"{"delegation_id":"d1","state":"completed"}"#,
            ],
        ),
        D(
            "14-collect-bad-path",
            &[
                "collect",
                "--task",
                "T-one",
                "--json",
                r#"{"delegation_id":"d1","state":"completed","result_path":"../x"}"#,
            ],
        ),
        W("repo/.dwp/plans/PLAN_001_demo_plan/out.txt", "result\n"),
        D(
            "15-collect",
            &[
                "collect",
                "--task",
                "T-one",
                "--json",
                r#"{"delegation_id":"d1","state":"completed","result_path":"out.txt","note":"done"}"#,
            ],
        ),
        D(
            "16-cancel-finished",
            &["cancel", "--task", "T-one", "--json", r#"{"delegation_id":"d1"}"#],
        ),
        L(&["start", "--task", "T-three"]),
        B(&[
            "launch",
            "--task",
            "T-three",
            "--json",
            r#"{"via":"kit","transport":"headless","worktree":"../wt","delegation_id":"d2","target":"x","prompt_digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}"#,
        ]),
        B(&[
            "launch",
            "--task",
            "T-three",
            "--json",
            r#"{"via":"kit","transport":"headless","worktree":null,"delegation_id":"d3","note":"look","prompt_digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}"#,
        ]),
        W("repo/src.txt", "changed\n"),
        D(
            "17-cancel-tree-moved",
            &["cancel", "--task", "T-three", "--json", r#"{"delegation_id":"d3"}"#],
        ),
        D("18-cancel", &["cancel", "--task", "T-three", "--json", r#"{"delegation_id":"d2"}"#]),
        D("19-observe-task", &["observe", "--task", "T-three"]),
    ]
}

/// The journal events after materialization, without their clock and identity fields.
fn journal_tail(plan: &Path, from: usize) -> String {
    let raw = std::fs::read_to_string(plan.join("journal.ndjson")).unwrap();
    let mut out = String::new();
    for line in raw.lines().skip(from) {
        let mut v = canonical_json::parse(line.as_bytes()).unwrap();
        if let canonical_json::Value::Object(m) = &mut v {
            for k in ["ts", "prev_hash", "hash", "event_hash", "prev"] {
                m.remove(k);
            }
        }
        let bytes = canonical_json::to_python_compact(&v).unwrap();
        out.push_str(&mask_tree(&String::from_utf8_lossy(&bytes)));
        out.push('\n');
    }
    out
}

/// The tree fingerprint of a read-only launch hashes the scratch commit (its time differs
/// per run). Upstream collecting `d1` against `dwp`'s recorded fingerprint proves both
/// compute it alike; the goldens keep only its shape.
fn mask_tree(line: &str) -> String {
    const MARK: &str = "read-only tree ";
    let Some(at) = line.find(MARK) else { return line.to_owned() };
    let start = at + MARK.len();
    let end = start + line[start..].find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(0);
    format!("{}<TREE_FP>{}", &line[..start], &line[end..])
}

/// Runs the steps and returns `(golden file name, normalised content)` pairs.
fn run_scenario(tool: Tool<'_>) -> Vec<(String, String)> {
    let s = Scratch::new();
    std::fs::write(s.contract_file(), contract(true)).unwrap();
    let pack = pack_dir(&s);
    std::fs::create_dir_all(pack.join("addons/kit")).unwrap();
    std::fs::create_dir_all(s._tmp.path().join("home")).unwrap();
    std::fs::write(pack.join("addons/kit/addon.json"), DESCRIPTOR).unwrap();
    if let Tool::Upstream(up) = tool {
        std::fs::create_dir_all(pack.join("shared")).unwrap();
        for e in std::fs::read_dir(up.join("shared")).unwrap().flatten() {
            std::os::unix::fs::symlink(e.path(), pack.join("shared").join(e.file_name())).unwrap();
        }
    }
    s.materialize();
    let plan = s.plan();
    let base = std::fs::read_to_string(plan.join("journal.ndjson")).unwrap().lines().count();
    let norm = Normaliser::for_scratch(&s);
    let mut out = Vec::new();
    let record = |o: &Output| {
        norm.apply(&format!(
            "exit: {}\n--- stdout ---\n{}--- stderr ---\n{}",
            o.status.code().unwrap_or(-1),
            text(&o.stdout),
            text(&o.stderr)
        ))
    };
    for step in steps() {
        match step {
            Step::Ledger(args) => {
                let o = s.ledger(args);
                assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o.stderr));
            }
            Step::Build(args) => {
                let o = Tool::Dwp.delegate(&s, &plan, args);
                assert_eq!(
                    o.status.code(),
                    Some(0),
                    "{args:?}: {}{}",
                    text(&o.stdout),
                    text(&o.stderr)
                );
            }
            Step::Write(rel, body) => std::fs::write(s._tmp.path().join(rel), body).unwrap(),
            Step::Delegate(name, args) => {
                let o = tool.delegate(&s, &plan, args);
                out.push((format!("{name}.out"), record(&o)));
            }
        }
    }
    out.push(("20-journal.out".to_owned(), norm.apply(&journal_tail(&plan, base))));
    // A v6 plan refuses (and records the refusal).
    let v6 = Scratch::new();
    std::fs::create_dir_all(pack_dir(&v6).join("addons")).unwrap();
    if let Tool::Upstream(up) = tool {
        std::fs::create_dir_all(pack_dir(&v6).join("shared")).unwrap();
        for e in std::fs::read_dir(up.join("shared")).unwrap().flatten() {
            std::os::unix::fs::symlink(e.path(), pack_dir(&v6).join("shared").join(e.file_name()))
                .unwrap();
        }
    }
    v6.materialize();
    let base = std::fs::read_to_string(v6.plan().join("journal.ndjson")).unwrap().lines().count();
    let o = tool.delegate(&v6, &v6.plan(), &["launch", "--task", "T-one", "--json", RO]);
    let n6 = Normaliser::for_scratch(&v6);
    out.push((
        "21-v6-plan.out".to_owned(),
        n6.apply(&format!(
            "exit: {}\n--- stdout ---\n{}--- stderr ---\n{}--- journal ---\n{}",
            o.status.code().unwrap_or(-1),
            text(&o.stdout),
            text(&o.stderr),
            journal_tail(&v6.plan(), base)
        )),
    ));
    out
}

/// With `DWP_GOLDEN_REGEN=1` and `DWP_UPSTREAM_PACK`: run the steps with upstream and rewrite
/// the goldens. With only `DWP_UPSTREAM_PACK`: check the goldens still match upstream.
#[test]
#[ignore = "needs an upstream checkout: DWP_UPSTREAM_PACK=/path/to/skills/deepworkplan cargo test -p dwp-cli --test it -- --ignored"]
fn golden_delegate_matches_upstream_when_the_pack_is_at_hand() {
    let pack =
        crate::golden::upstream_pack(&["ledger.py", "config.py", "resources.py", "contract_v6.py"]);
    crate::golden::regen_or_check(&golden_dir(), &run_scenario(Tool::Upstream(&pack)));
}

/// Always runs: `dwp ledger delegate` on the same steps prints, exits and records as
/// upstream did.
#[test]
fn dwp_reproduces_the_upstream_delegate_goldens() {
    crate::golden::assert_matches_goldens(&golden_dir(), &run_scenario(Tool::Dwp));
}
