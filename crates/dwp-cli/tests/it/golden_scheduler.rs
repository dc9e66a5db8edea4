//! Golden interop for `dwp scheduler authorize|ready|boosts`: one plan built by `dwp` in the
//! scratch repository of `support.rs`, with proposals that exercise every refusal rule, the
//! accepted `select` and `adapt` shapes, and a starvation boost. The upstream `scheduler.py`
//! ran the same steps once; its normalised stdout, stderr and exit codes are committed under
//! `tests/it/golden-scheduler/`, and every CI run replays the steps with `dwp` and compares
//! byte for byte after the same normalisation (`golden.rs`).
//!
//! Regenerate: `DWP_UPSTREAM_PACK=/path/to/skills/deepworkplan tests/it/golden-scheduler/regen.sh`.
//! No upstream source is stored here, only its outputs on our inputs.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::golden::Normaliser;
use crate::support::{Scratch, Tool, text};

impl Tool<'_> {
    /// `dwp scheduler CMD PLAN ARGS` or `python3 <pack>/shared/scheduler.py CMD PLAN ARGS`.
    fn scheduler(self, cmd: &str, plan: &Path, args: &[&str]) -> Output {
        self.command("scheduler", "scheduler.py").arg(cmd).arg(plan).args(args).output().unwrap()
    }
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/golden-scheduler")
}

/// The `support.rs` contract plus an invariant, an enforced USD limit, tight scheduling caps
/// and a third task whose surface overlaps `T-one`'s.
fn contract() -> String {
    let c = crate::support::CONTRACT;
    let pairs = [
        (r#""invariants":[]"#, r#""invariants":[{"id":"INV-clean","statement":"tree builds"}]"#),
        (
            r#""limits":[{"id":"wall_h","limit":1,"unit":"hours","enforcement":"advisory"}]"#,
            r#""limits":[{"id":"wall_h","limit":1,"unit":"hours","enforcement":"advisory"},
{"id":"spend_usd","limit":5,"unit":"USD","enforcement":"enforced","metering_source":"host meter"}]"#,
        ),
        (
            r#""dependencies":[],"#,
            r#""dependencies":[],"scheduling":{"starvation_threshold_events":4,"max_adaptations_per_task":2,"max_retries_per_gate":1},"#,
        ),
        (
            r#""gate_intent":[{"criterion":"AC-fail","check":"false"}]}]"#,
            r#""gate_intent":[{"criterion":"AC-fail","check":"false"}]},
{"id":"T-three","title":"Three","prerequisites":[],"touched_surface":["src.txt"],"gate_intent":[{"criterion":"AC-fail","check":"false"}]}]"#,
        ),
    ];
    let mut out = c.to_owned();
    for (from, to) in pairs {
        assert!(out.contains(from), "{from}");
        out = out.replacen(from, to, 1);
    }
    out
}

/// An adapt proposal: the adaptation shape with `kind`, trigger, tasks, criteria and extra
/// top-level JSON members spliced in.
fn adapt(kind: &str, trigger: i64, task: &str, criteria: &str, extra: &str) -> String {
    format!(
        r#"{{"type":"adapt","kind":"{kind}","trigger_observation":{trigger},"evidence_artifact":"gates/log","hypothesis":"h","action":"a","rationale":"r","affected_tasks":["{task}"],"affected_criteria":[{criteria}],"authority":"dev","evidence_invalidated":[],"evidence_preserved":[]{extra}}}"#
    )
}

/// An `adaptation` payload as the writer would record an authorized one.
fn recorded(kind: &str, trigger: i64, task: &str, criteria: &str) -> String {
    adapt(kind, trigger, task, criteria, r#","decision":"authorized","reason":"authorized""#)
        .replacen(r#""type":"adapt","#, "", 1)
}

enum Step {
    /// A `dwp ledger` command building the plan (not recorded).
    Ledger(Vec<String>),
    /// Overwrite a plan file (relative path, bytes).
    Write(&'static str, &'static str),
    /// A scheduler command whose output is recorded under `name`.
    Sched { name: &'static str, cmd: &'static str, args: Vec<String> },
    /// The same on a tampered copy of the journal, restored afterwards.
    Tampered { name: &'static str, how: Tamper, cmd: &'static str, args: Vec<String> },
}

#[derive(Clone, Copy)]
enum Tamper {
    /// Drop the `approval` record.
    DropApproval,
    /// Append a well-formed line that is not a valid journal event.
    AppendInvalid,
    /// Append half a line (a torn tail).
    Torn,
}

fn tamper(journal: &str, how: Tamper) -> String {
    match how {
        Tamper::DropApproval => journal
            .lines()
            .filter(|l| !l.contains("\"type\":\"approval\""))
            .map(|l| format!("{l}\n"))
            .collect(),
        Tamper::AppendInvalid => {
            let n = journal.lines().count() + 1;
            format!("{journal}{{\"seq\":{n},\"type\":\"teleport\"}}\n")
        }
        Tamper::Torn => format!("{journal}{{\"seq\": 99, \"ty"),
    }
}

fn steps(s: &Scratch) -> Vec<Step> {
    let l = |args: &[&str]| Step::Ledger(args.iter().map(|a| a.to_string()).collect());
    let sc = |name, cmd, args: &[&str]| Step::Sched {
        name,
        cmd,
        args: args.iter().map(|a| a.to_string()).collect(),
    };
    let tampered = |name, how, cmd, args: &[&str]| Step::Tampered {
        name,
        how,
        cmd,
        args: args.iter().map(|a| a.to_string()).collect(),
    };
    let authorize = |name, proposal: &str| sc(name, "authorize", &["--json", proposal]);
    let inv = |verdict: &str| {
        let json = format!(r#"{{"statement":"INV-clean: {verdict}"}}"#);
        l(&["append", "--type", "observation", "--trust", "asserted", "--json", &json])
    };
    let c = s.contract_file().to_string_lossy().into_owned();
    let select = r#"{"type":"select","task":"T-one"}"#;
    let reorder = adapt("reorder", 1, "T-one", "", "");
    let sample = |value: &str| {
        let json =
            format!(r#"{{"source":"meter","limit_id":"spend_usd","value":{value},"unit":"USD"}}"#);
        let mut args: Vec<String> = [
            "append",
            "--type",
            "resource_sample",
            "--trust",
            "observed",
            "--actor-kind",
            "host_adapter",
            "--actor-identity",
            "meter",
            "--evidence-path",
            "analysis_results/meter.json",
            "--json",
        ]
        .iter()
        .map(|a| a.to_string())
        .collect();
        args.push(json);
        Step::Ledger(args)
    };
    vec![
        sc("01-ready-unmaterialized", "ready", &[]),
        sc("02-authorize-unmaterialized", "authorize", &["--json", select]),
        l(&["materialize", "--contract", &c]),
        sc("03-ready", "ready", &[]),
        sc("04-boosts", "boosts", &[]),
        authorize("05-not-an-object", "[1]"),
        authorize("06-not-json", "{\"type\": "),
        sc("07-no-proposal", "authorize", &[]),
        authorize("08-unknown-type", r#"{"type":"teleport","task":"T-one"}"#),
        authorize("09-no-type", r#"{"task":"T-one"}"#),
        authorize("10-invariant-unevaluated", select),
        inv("fail: broken build"),
        authorize("11-invariant-failed", select),
        inv("fail"),
        authorize("12-invariant-failed-bare", select),
        inv("pass"),
        authorize("13-unknown-task", r#"{"type":"select","task":"T-nine"}"#),
        authorize("14-unknown-task-not-string", r#"{"type":"select","task":7}"#),
        authorize("15-prerequisite-open", r#"{"type":"select","task":"T-two"}"#),
        authorize(
            "16-select-extra-fields",
            r#"{"type":"select","task":"T-one","scope":["/"],"acceptance":1}"#,
        ),
        authorize("17-select-accept", select),
        authorize(
            "18-adapt-extra-fields",
            &adapt("split", 1, "T-one", "", r#","revised_criterion":"weaker","scope":[]"#),
        ),
        authorize(
            "19-adapt-bad-kind",
            &adapt("delete_requirement", 1, "T-one", r#""AC-pass""#, ""),
        ),
        authorize("20-adapt-missing-fields", r#"{"type":"adapt","kind":"split"}"#),
        authorize(
            "21-envelope-unmetered",
            &adapt(
                "change_strategy",
                1,
                "T-one",
                "",
                r#","resource_impact":{"declared":6,"unit":"USD"}"#,
            ),
        ),
        authorize("22-adapt-accept", &reorder),
        authorize(
            "23-adapt-accept-impact",
            &adapt("insert", 1, "T-one", "", r#","resource_impact":{"declared":1.5,"unit":"USD"}"#),
        ),
        Step::Write("analysis_results/meter.json", "{\"spend_usd\": 4}\n"),
        sample("4"),
        authorize(
            "24-envelope-metered",
            &adapt("split", 1, "T-one", "", r#","resource_impact":{"declared":2,"unit":"USD"}"#),
        ),
        l(&["start", "--task", "T-one"]),
        authorize("25-invariant-stale", r#"{"type":"select","task":"T-three"}"#),
        inv("pass"),
        authorize("26-surface-serialization", r#"{"type":"select","task":"T-three"}"#),
        l(&["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""]),
        authorize("27-blind-retry", &adapt("retry", 2, "T-one", r#""AC-pass""#, "")),
        authorize("28-retry-accept", &adapt("retry", 9, "T-one", r#""AC-pass""#, "")),
        l(&[
            "append",
            "--type",
            "adaptation",
            "--json",
            &recorded("retry", 9, "T-one", r#""AC-pass""#),
        ]),
        inv("pass"),
        authorize("29-retry-cap", &adapt("retry", 12, "T-one", r#""AC-pass""#, "")),
        l(&["append", "--type", "adaptation", "--json", &recorded("reorder", 9, "T-one", "")]),
        authorize("30-adaptation-cap", &adapt("change_strategy", 12, "T-one", "", "")),
        authorize("31-select-in-progress-accept", select),
        sc("32-ready-boosted", "ready", &[]),
        sc("33-boosts", "boosts", &[]),
        Step::Write("REVIEW.txt", "reviewed\n"),
        l(&[
            "signoff",
            "--criterion",
            "AC-review",
            "--evidence-path",
            "REVIEW.txt",
            "--authority",
            "dev",
        ]),
        authorize("34-task-complete", select),
        authorize("35-select-after-prerequisite", r#"{"type":"select","task":"T-two"}"#),
        sc("36-ready-after-complete", "ready", &[]),
        tampered("37-approval-missing", Tamper::DropApproval, "authorize", &["--json", select]),
        tampered("38-record-invalid", Tamper::AppendInvalid, "authorize", &["--json", select]),
        tampered("39-torn-tail", Tamper::Torn, "ready", &[]),
        tampered("40-torn-tail-authorize", Tamper::Torn, "authorize", &["--json", select]),
    ]
}

/// Runs the steps and returns `(golden file name, normalised content)` pairs.
fn run_scenario(tool: Tool<'_>) -> Vec<(String, String)> {
    let s = Scratch::new();
    std::fs::write(s.contract_file(), contract()).unwrap();
    let plan = s.plan();
    std::fs::create_dir_all(plan.join("analysis_results")).unwrap();
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
    for step in steps(&s) {
        match step {
            Step::Ledger(args) => {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let o = s.ledger(&args);
                assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o.stderr));
            }
            Step::Write(rel, body) => std::fs::write(plan.join(rel), body).unwrap(),
            Step::Sched { name, cmd, args } => {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let o = tool.scheduler(cmd, &plan, &args);
                out.push((format!("{name}.out"), record(&o)));
            }
            Step::Tampered { name, how, cmd, args } => {
                let path = plan.join("journal.ndjson");
                let original = std::fs::read_to_string(&path).unwrap();
                std::fs::write(&path, tamper(&original, how)).unwrap();
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let o = tool.scheduler(cmd, &plan, &args);
                std::fs::write(&path, original).unwrap();
                out.push((format!("{name}.out"), record(&o)));
            }
        }
    }
    // A wrong plan folder is an error, not a refusal.
    let o = tool.scheduler("ready", &s.root.join("no-such-plan"), &[]);
    out.push(("41-no-plan.out".to_owned(), record(&o)));
    out
}

/// With `DWP_GOLDEN_REGEN=1` and `DWP_UPSTREAM_PACK`: run the steps with upstream and rewrite
/// the goldens. With only `DWP_UPSTREAM_PACK`: check the goldens still match upstream.
#[test]
#[ignore = "needs an upstream checkout: DWP_UPSTREAM_PACK=/path/to/skills/deepworkplan cargo test -p dwp-cli --test it -- --ignored"]
fn golden_scheduler_matches_upstream_when_the_pack_is_at_hand() {
    let pack = crate::golden::upstream_pack(&["scheduler.py", "ledger.py", "contract_v6.py"]);
    crate::golden::regen_or_check(&golden_dir(), &run_scenario(Tool::Upstream(&pack)));
}

/// Always runs: `dwp scheduler` on the same steps prints and exits as upstream did.
#[test]
fn dwp_reproduces_the_upstream_scheduler_goldens() {
    crate::golden::assert_matches_goldens(&golden_dir(), &run_scenario(Tool::Dwp));
}
