//! `dwp <group> self-test`: our own invariants, probed on a scratch plan in a temporary folder.
//!
//! Each command group that upstream gives a `self-test` (contract, ledger, scheduler, outcomes,
//! views, resources) builds a fresh plan outside any repository and drives it through this very
//! binary, so the probes see exactly what a caller sees: exit codes, output lines and the files
//! left behind. Output follows upstream: one `FAIL <probe>[: detail]` line per failed probe,
//! then `self-test: OK (N probes)` (exit 0) or `self-test: FAILED (N probes)` (exit 1); the
//! contract group counts `mutant probes` and the migrator says `migrate self-test`, as upstream.

use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Output};
use std::time::{SystemTime, UNIX_EPOCH};

use canonical_json::Value;

/// The command groups with a self-test.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Group {
    Contract,
    Ledger,
    Scheduler,
    Outcomes,
    Views,
    Resources,
    Context,
    Migrate,
}

const PLAN: &str = "PLAN_900_self_test";

/// Our own self-test contract: T-one (an observed and an asserted criterion) before T-two, an
/// advisory and an enforced limit.
const CONTRACT: &str = r#"{"schema":"https://deepworkplan.com/schema/plan-contract/v6.json","spec_version":"6.0.0","plan":"PLAN_900_self_test","revision":1,"created_at":"2026-01-01T00:00:00Z",
"outcome":{"statement":"self-test","success_definition":"the probes pass","out_of_scope":[]},
"acceptance":{"criteria":[{"id":"AC-pass","statement":"s","observable_check":"true","accepted_evidence":["observed"]},
{"id":"AC-review","statement":"s","observable_check":"a person reads it","accepted_evidence":["asserted"]},
{"id":"AC-later","statement":"s","observable_check":"true","accepted_evidence":["observed"]}]},
"invariants":[],"scope":{"allowed_paths":["src.txt"],"allowed_command_classes":["true","false","sh"],"forbidden_operations":["force-push"]},
"authorization":{"mechanism":"plan_authorship","authority":"self-test","timestamp":"2026-01-01T00:00:00Z","boundaries":"a scratch plan","consent_checkpoints":[]},
"permissions":{"granted":["gate_command_exec"],"not_granted":["network_access"]},"dependencies":[],
"resource_envelope":{"limits":[{"id":"wall_h","limit":1,"unit":"hours","enforcement":"advisory"},{"id":"spend_usd","limit":10,"unit":"USD","enforcement":"enforced","metering_source":"host meter"}]},
"tasks":[{"id":"T-one","title":"One","prerequisites":[],"touched_surface":["src.txt"],"gate_intent":[{"criterion":"AC-pass","check":"true"},{"criterion":"AC-review","check":"read"}]},
{"id":"T-two","title":"Two","prerequisites":["T-one"],"touched_surface":["src.txt"],"gate_intent":[{"criterion":"AC-later","check":"true"}]}]}"#;

/// Runs one group's probes and prints the verdict.
pub(crate) fn run(group: Group) -> ExitCode {
    let mut probes = Probes::default();
    match Scratch::new() {
        Ok(s) => match group {
            Group::Contract => contract(&s, &mut probes),
            Group::Ledger => ledger(&s, &mut probes),
            Group::Scheduler => scheduler(&s, &mut probes),
            Group::Outcomes => outcomes(&s, &mut probes),
            Group::Views => views(&s, &mut probes),
            Group::Resources => resources(&s, &mut probes),
            Group::Context => context(&s, &mut probes),
            Group::Migrate => migrate(&s, &mut probes),
        },
        Err(e) => probes.check("a scratch plan can be created", false, e),
    }
    // Upstream's verdict lines: the migrator names itself, the contract validator counts
    // "mutant probes"; the other helpers print `self-test: OK (N probes)`.
    match group {
        Group::Migrate => probes.finish("migrate self-test", "probes"),
        Group::Contract => probes.finish("self-test", "mutant probes"),
        _ => probes.finish("self-test", "probes"),
    }
}

#[derive(Default)]
struct Probes {
    count: usize,
    failures: Vec<String>,
}

impl Probes {
    fn check(&mut self, label: &str, ok: bool, detail: impl Display) {
        self.count += 1;
        if !ok {
            let detail = detail.to_string();
            self.failures.push(if detail.is_empty() {
                label.to_owned()
            } else {
                format!("{label}: {}", detail.trim_end())
            });
        }
    }

    /// Checks an exit code and a substring of stdout+stderr.
    fn expect(&mut self, label: &str, out: &Run, code: i32, needle: &str) {
        let ok = out.code == code && out.all().contains(needle);
        self.check(label, ok, format_args!("exit {} — {}", out.code, out.all()));
    }

    fn finish(self, label: &str, noun: &str) -> ExitCode {
        for f in &self.failures {
            outln!("FAIL {f}");
        }
        let ok = self.failures.is_empty();
        outln!("{label}: {} ({} {noun})", if ok { "OK" } else { "FAILED" }, self.count);
        if ok { ExitCode::SUCCESS } else { ExitCode::from(crate::exit::FAILED) }
    }
}

/// One finished run of this binary.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    fn json(&self) -> Option<Value> {
        canonical_json::parse(self.stdout.as_bytes()).ok()
    }
}

impl From<std::io::Result<Output>> for Run {
    fn from(out: std::io::Result<Output>) -> Run {
        match out {
            Ok(o) => Run {
                code: o.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            },
            Err(e) => Run { code: -1, stdout: String::new(), stderr: e.to_string() },
        }
    }
}

/// A scratch repository folder (no git) holding one unmaterialized plan; removed on drop.
struct Scratch {
    root: PathBuf,
    plan: PathBuf,
    contract: PathBuf,
    exe: PathBuf,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

impl Scratch {
    fn new() -> std::io::Result<Scratch> {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let root =
            std::env::temp_dir().join(format!("dwp-self-test-{}-{nanos}", std::process::id()));
        let plan = root.join(".dwp/plans").join(PLAN);
        std::fs::create_dir_all(&plan)?;
        std::fs::write(plan.join("README.md"), "# Self-test plan\n")?;
        std::fs::write(root.join("src.txt"), "hello\n")?;
        let contract = root.join("contract.json");
        std::fs::write(&contract, CONTRACT)?;
        let exe = std::env::current_exe()?;
        Ok(Scratch { root, plan, contract, exe })
    }

    fn dwp(&self, args: &[&str]) -> Run {
        Command::new(&self.exe).args(args).current_dir(&self.root).output().into()
    }

    fn p(&self) -> &str {
        self.plan.to_str().unwrap_or_default()
    }

    fn ledger(&self, args: &[&str]) -> Run {
        let mut all = vec!["ledger", "--plan", self.p()];
        all.extend_from_slice(args);
        self.dwp(&all)
    }

    fn group(&self, group: &str, args: &[&str]) -> Run {
        let mut all = vec![group, "--plan", self.p()];
        all.extend_from_slice(args);
        self.dwp(&all)
    }

    fn materialize(&self) -> Run {
        self.ledger(&["materialize", "--contract", self.contract.to_str().unwrap_or_default()])
    }

    fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.plan.join(rel)).unwrap_or_default()
    }

    fn journal(&self) -> Vec<Value> {
        String::from_utf8_lossy(&self.read("journal.ndjson"))
            .lines()
            .filter_map(|l| canonical_json::parse(l.as_bytes()).ok())
            .collect()
    }

    fn types(&self) -> Vec<String> {
        self.journal()
            .iter()
            .map(|e| e.get("type").and_then(Value::as_str).unwrap_or("").to_owned())
            .collect()
    }

    fn write(&self, path: &Path, body: &[u8]) -> bool {
        std::fs::write(path, body).is_ok()
    }
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn contract(s: &Scratch, t: &mut Probes) {
    let file = s.contract.to_str().unwrap_or_default();
    let first = s.dwp(&["contract", "compute-id", file]);
    let second = s.dwp(&["contract", "compute-id", file]);
    let id = first.stdout.trim().to_owned();
    t.check(
        "compute-id prints a 64-hex id, the same on every run",
        first.code == 0 && is_hex64(&id) && first.stdout == second.stdout,
        first.all(),
    );
    t.expect(
        "the self-test contract validates",
        &s.dwp(&["contract", "validate-contract", file]),
        0,
        "OK: v6 contract valid (plan PLAN_900_self_test, revision 1, 3 criteria, 2 tasks",
    );
    let extra = s.root.join("extra.json");
    let widened = CONTRACT.replacen("\"invariants\":[]", "\"invariants\":[],\"mood\":\"fine\"", 1);
    t.check("a mutant can be written", s.write(&extra, widened.as_bytes()), "");
    t.expect(
        "an unknown contract field is refused",
        &s.dwp(&["contract", "validate-contract", extra.to_str().unwrap_or_default()]),
        1,
        "FAIL contract: unexpected field 'mood' (closed object)",
    );
    let stamped = s.root.join("stamped.json");
    let forged = CONTRACT.replacen(
        "\"revision\":1,",
        &format!("\"revision\":1,\"contract_id\":\"{}\",", "0".repeat(64)),
        1,
    );
    t.check("a forged id can be written", s.write(&stamped, forged.as_bytes()), "");
    t.expect(
        "a stamped id that is not the content's hash is refused",
        &s.dwp(&["contract", "validate-contract", stamped.to_str().unwrap_or_default()]),
        1,
        "stamped identity does not match the canonical bytes",
    );
    t.expect("the plan materializes", &s.materialize(), 0, "OK: materialized PLAN_900_self_test");
    let journal = s.plan.join("journal.ndjson");
    let live = s.plan.join("contract.json");
    let (j, c) = (journal.to_str().unwrap_or_default(), live.to_str().unwrap_or_default());
    t.expect(
        "the materialized journal validates against its contract",
        &s.dwp(&["contract", "validate-journal", j, "--contract", c]),
        0,
        "OK: 1 journal events valid (approval x1)",
    );
    // A gate_run that names no task is refused, as the pinned upstream validator does.
    let approval = s.journal().into_iter().next();
    let cid = approval
        .as_ref()
        .and_then(|a| a.get("contract_id"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let taskless = format!(
        "{{\"actor\":{{\"identity\":\"dwp\",\"kind\":\"helper\"}},\"command\":\"true\",\"contract_id\":\"{cid}\",\"criterion\":\"AC-pass\",\"cwd\":\".\",\"evidence_path\":\"x.log\",\"exit_code\":0,\"plan\":\"{PLAN}\",\"schema\":\"https://deepworkplan.com/schema/journal-event/v6.json\",\"seq\":1,\"timeout_seconds\":1,\"trust\":\"observed\",\"ts\":\"2026-01-01T00:00:00Z\",\"type\":\"gate_run\"}}\n"
    );
    let bad = s.root.join("taskless.ndjson");
    t.check("a task-less journal can be written", s.write(&bad, taskless.as_bytes()), "");
    t.expect(
        "a gate_run without its task is refused",
        &s.dwp(&[
            "contract",
            "validate-journal",
            bad.to_str().unwrap_or_default(),
            "--contract",
            c,
        ]),
        1,
        "FAIL journal line 1: event: missing required field 'task'",
    );
}

fn ledger(s: &Scratch, t: &mut Probes) {
    t.expect("the plan materializes", &s.materialize(), 0, "OK: materialized PLAN_900_self_test");
    t.check(
        "materialization writes the contract, the manifest and an approval",
        s.plan.join("contract.json").is_file()
            && s.plan.join("manifest.json").is_file()
            && s.types() == ["approval"],
        format_args!("{:?}", s.types()),
    );
    t.expect("an unknown task is refused", &s.ledger(&["start", "--task", "T-nine"]), 1, "T-nine");
    t.check(
        "the refusal is recorded",
        s.types() == ["approval", "refusal"],
        format_args!("{:?}", s.types()),
    );
    t.expect("a task starts", &s.ledger(&["start", "--task", "T-one"]), 0, "OK: task_start T-one");
    let compound =
        ["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true && true\""];
    t.expect("a compound gate command is refused", &s.ledger(&compound), 1, "shell syntax");
    let gate = ["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""];
    t.expect("a declared gate runs and is observed", &s.ledger(&gate), 0, "RAN: exit 0, seq 5");
    let before = s.journal().len();
    t.expect(
        "completion without every criterion is refused (exit 4)",
        &s.ledger(&["complete", "--task", "T-one"]),
        4,
        "REFUSED:",
    );
    t.check(
        "a refused completion is recorded",
        s.journal().len() == before + 1 && s.types().last().is_some_and(|x| x == "refusal"),
        format_args!("{:?}", s.types()),
    );
    t.check("a review note exists", s.write(&s.plan.join("REVIEW.txt"), b"read\n"), "");
    t.expect(
        "a human sign-off closes an asserted criterion",
        &s.ledger(&[
            "signoff",
            "--criterion",
            "AC-review",
            "--evidence-path",
            "REVIEW.txt",
            "--authority",
            "self-test",
        ]),
        0,
        "OK: signoff AC-review by self-test",
    );
    t.expect(
        "completion is derived from the evidence",
        &s.ledger(&["complete", "--task", "T-one"]),
        0,
        "OK: T-one criteria satisfied: AC-pass, AC-review",
    );
    t.expect("the snapshot projects", &s.ledger(&["project"]), 0, "OK: state.json projected");
    let state = s.read("state.json");
    s.ledger(&["project"]);
    t.check(
        "projection is deterministic (same journal, same bytes)",
        !state.is_empty() && s.read("state.json") == state,
        "",
    );
    let seqs: Vec<i64> = s.journal().iter().map(dwp::projection::seq_of).collect();
    t.check(
        "seq is dense and strictly increasing",
        seqs.iter().enumerate().all(|(i, q)| i64::try_from(i).is_ok_and(|i| i + 1 == *q)),
        format_args!("{seqs:?}"),
    );
    // A torn final line: read-only surfaces name it, the next writer repairs and records it.
    let mut torn = s.read("journal.ndjson");
    torn.extend_from_slice(b"{\"type\":\"observ");
    t.check("a torn tail can be written", s.write(&s.plan.join("journal.ndjson"), &torn), "");
    t.expect("inspect names a torn tail", &s.ledger(&["inspect"]), 0, "TORN TAIL");
    t.expect("the next writer repairs it", &s.ledger(&["project"]), 0, "OK: state.json projected");
    t.check(
        "the repair is recorded and the partial line is gone",
        s.types().last().is_some_and(|x| x == "journal_repair")
            && !String::from_utf8_lossy(&s.read("journal.ndjson")).contains("\"observ\n"),
        format_args!("{:?}", s.types()),
    );
    let last = s.journal().iter().map(dwp::projection::seq_of).max().unwrap_or(0);
    t.expect("the live journal rolls", &s.ledger(&["roll"]), 0, "OK: journal archived to ");
    let note = ["append", "--type", "observation", "--trust", "asserted"];
    let mut args = note.to_vec();
    args.extend(["--json", r#"{"statement":"after the roll"}"#]);
    t.expect(
        "seq continues across a roll",
        &s.ledger(&args),
        0,
        &format!("OK: appended observation seq {}", last + 1),
    );
    t.expect(
        "observed evidence cannot be appended by hand",
        &s.ledger(&[
            "append",
            "--type",
            "observation",
            "--trust",
            "observed",
            "--json",
            r#"{"statement":"trust me"}"#,
        ]),
        1,
        "ERROR:",
    );
}

fn scheduler(s: &Scratch, t: &mut Probes) {
    t.expect("the plan materializes", &s.materialize(), 0, "OK: materialized");
    let ready = s.dwp(&["scheduler", "ready", s.p()]);
    let ids: Vec<String> = ready
        .json()
        .as_ref()
        .and_then(|v| v.pointer("/ready").or(Some(v)))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|r| r.get("task").or_else(|| r.get("id")).and_then(Value::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    t.check(
        "only the task without prerequisites is ready",
        ready.code == 0 && ids == ["T-one"],
        format_args!("{ids:?} — {}", ready.all()),
    );
    let authorize = |task: &str| {
        s.dwp(&[
            "scheduler",
            "authorize",
            s.p(),
            "--json",
            &format!("{{\"type\":\"select\",\"task\":\"{task}\"}}"),
        ])
    };
    let refused = authorize("T-two");
    t.check(
        "selecting a task whose prerequisite is open is refused (exit 10)",
        refused.code == 10,
        refused.all(),
    );
    let accepted = authorize("T-one");
    t.check("selecting a ready task is accepted (exit 0)", accepted.code == 0, accepted.all());
    let before = s.read("journal.ndjson");
    t.check(
        "the scheduler never writes the journal",
        s.read("journal.ndjson") == before && s.types() == ["approval"],
        format_args!("{:?}", s.types()),
    );
    let mut torn = before.clone();
    torn.extend_from_slice(b"{\"seq\":");
    t.check("a torn tail can be written", s.write(&s.plan.join("journal.ndjson"), &torn), "");
    let out = s.dwp(&["scheduler", "ready", s.p()]);
    t.check(
        "the scheduler refuses to decide on a torn journal",
        out.code != 0 && out.all().contains("torn"),
        out.all(),
    );
}

fn outcomes(s: &Scratch, t: &mut Probes) {
    t.expect("the plan materializes", &s.materialize(), 0, "OK: materialized");
    let closure = s.group("outcomes", &["closure"]);
    let doc = closure.json().unwrap_or(Value::Null);
    let criteria = doc.get("criteria").and_then(Value::as_array).map_or(0, <[Value]>::len);
    t.check(
        "closure covers every criterion and closes none without evidence",
        closure.code == 0
            && criteria == 3
            && doc.get("criteria").and_then(Value::as_array).is_some_and(|c| {
                c.iter().all(|x| x.get("satisfied").and_then(Value::as_bool) == Some(false))
            }),
        closure.all(),
    );
    t.expect(
        "a review state outside the closed set is refused",
        &s.group("outcomes", &["review", "--state", "pristine"]),
        1,
        "outside the closed set",
    );
    t.expect(
        "a clean review is recorded",
        &s.group("outcomes", &["review", "--state", "clean"]),
        0,
        "OK: review clean recorded at seq 2",
    );
    let after = s.group("outcomes", &["closure"]).json().unwrap_or(Value::Null);
    t.check(
        "a review state satisfies no criterion",
        after.pointer("/review/state").and_then(Value::as_str) == Some("clean")
            && after.get("criteria").and_then(Value::as_array).is_some_and(|c| {
                c.iter().all(|x| x.get("satisfied").and_then(Value::as_bool) == Some(false))
            }),
        format_args!("{after:?}"),
    );
    let first = s.group("outcomes", &["receipt"]);
    let second = s.group("outcomes", &["receipt"]);
    let receipt = first.json().unwrap_or(Value::Null);
    let sha = receipt.get("receipt_sha256").and_then(Value::as_str).unwrap_or("").to_owned();
    t.check(
        "the receipt is JSON on stdout with its own digest",
        first.code == 0 && is_hex64(&sha) && first.stderr.starts_with("OK: receipt stdout ("),
        first.all(),
    );
    t.check("the receipt is deterministic", first.stdout == second.stdout, second.all());
    t.check(
        "the receipt totals cover every criterion",
        receipt.pointer("/totals/criteria").and_then(Value::as_i64) == Some(3),
        format_args!("{receipt:?}"),
    );
    s.ledger(&["start", "--task", "T-one"]);
    let control = s.group(
        "outcomes",
        &[
            "control",
            "--task",
            "T-one",
            "--criterion",
            "AC-pass",
            "--command",
            "true",
            "--artifact",
            "src.txt",
        ],
    );
    t.check(
        "a criterion without a declared control refuses a pair",
        control.code == 1 && control.all().contains("exempt/undeclared"),
        control.all(),
    );
    let third = s.group("outcomes", &["receipt"]).json().unwrap_or(Value::Null);
    t.check(
        "the receipt changes when the records change",
        third.get("receipt_sha256").and_then(Value::as_str) != Some(sha.as_str()),
        "",
    );
    t.expect(
        "a critical review is recorded",
        &s.group("outcomes", &["review", "--state", "critical", "--finding", "seeded"]),
        0,
        "OK: review critical recorded",
    );
    let blocked = s.group("outcomes", &["closure"]).json().unwrap_or(Value::Null);
    t.check(
        "a critical review blocks the plan",
        blocked.get("plan_blocked").and_then(Value::as_bool) == Some(true),
        format_args!("{blocked:?}"),
    );
}

fn views(s: &Scratch, t: &mut Probes) {
    t.expect("the plan materializes", &s.materialize(), 0, "OK: materialized");
    t.expect(
        "every view renders",
        &s.group("views", &["render", "--all"]),
        0,
        "OK: rendered tasks, evidence, audit, completion",
    );
    let events = s.journal().len();
    let tasks = s.read("views/tasks.md");
    t.expect(
        "a re-render of unchanged records writes nothing",
        &s.group("views", &["render", "--all"]),
        0,
        "OK: no view changed",
    );
    t.check(
        "an unchanged render records no provenance",
        s.journal().len() == events && s.read("views/tasks.md") == tasks,
        "",
    );
    s.ledger(&["start", "--task", "T-one"]);
    t.expect(
        "an out-of-date but untouched view refreshes",
        &s.group("views", &["render", "--view", "tasks"]),
        0,
        "OK: rendered tasks",
    );
    let mut edited = s.read("views/tasks.md");
    edited.extend_from_slice(b"\nA human note.\n");
    t.check("a view can be edited", s.write(&s.plan.join("views/tasks.md"), &edited), "");
    let before = s.read("journal.ndjson");
    t.expect(
        "a human edit is never overwritten silently (exit 5)",
        &s.group("views", &["render", "--view", "tasks"]),
        5,
        "DIVERGENCE:",
    );
    t.check(
        "the refusal writes nothing",
        s.read("journal.ndjson") == before && s.read("views/tasks.md") == edited,
        "",
    );
    t.expect(
        "generated-wins keeps the human copy beside the view",
        &s.group(
            "views",
            &["render", "--view", "tasks", "--reconcile", "generated-wins", "--authority", "me"],
        ),
        0,
        "OK: rendered tasks (reconciled: generated-wins)",
    );
    t.check(
        "the human copy is preserved and the reconciliation recorded",
        s.read("views/tasks.human.md") == edited
            && s.types().iter().filter(|x| *x == "reconciliation").count() == 1,
        format_args!("{:?}", s.types()),
    );
}

fn resources(s: &Scratch, t: &mut Probes) {
    t.expect("the plan materializes", &s.materialize(), 0, "OK: materialized");
    let report = s.group("resources", &["report"]);
    t.check("the report is JSON", report.code == 0 && report.json().is_some(), report.all());
    t.check("nothing is exhausted at first", s.group("resources", &["hold"]).code == 0, "");
    t.expect(
        "an undeclared limit cannot be exhausted",
        &s.group("resources", &["exhaust", "--limit", "nope"]),
        1,
        "nope",
    );
    t.check(
        "an enforced limit can be marked exhausted",
        s.group("resources", &["exhaust", "--limit", "spend_usd"]).code == 0,
        "",
    );
    let hold = s.group("resources", &["hold"]);
    t.check("hold exits 1 while an enforced limit is exhausted", hold.code == 1, hold.all());
    t.check(
        "the limit recovers",
        s.group("resources", &["recover", "--limit", "spend_usd"]).code == 0,
        "",
    );
    let hold = s.group("resources", &["hold"]);
    t.check("hold exits 0 after the recovery", hold.code == 0, hold.all());
    let caps = s.dwp(&["resources", "capabilities", "--caps", "{\"time_travel\":true}"]);
    t.check("an unknown host ability is refused", caps.code != 0, caps.all());
}

fn context(s: &Scratch, t: &mut Probes) {
    t.expect("the plan materializes", &s.materialize(), 0, "OK: materialized");
    let ctx = |args: &[&str]| s.group("context", args);
    t.expect(
        "a task outside the contract is refused, never guessed",
        &ctx(&["manifest", "--task", "T-nine"]),
        1,
        "ERROR: task 'T-nine' is not in the contract",
    );
    t.expect(
        "pruning can never drop a mandatory section",
        &ctx(&["manifest", "--task", "T-one", "--sections", "authorization,repository_rules"]),
        1,
        "the manifest never drops mandatory section(s) acceptance",
    );
    let step = |run: &Run| {
        canonical_json::parse(run.stdout.trim_end().as_bytes())
            .ok()
            .and_then(|d| d.pointer("/next_action/step").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default()
    };
    let first = ctx(&["manifest", "--task", "T-one"]);
    t.check("before the start the ladder names the start", step(&first) == "start", first.all());
    let again = ctx(&["manifest", "--task", "T-one"]);
    t.check("the manifest is deterministic", first.stdout == again.stdout, "");
    let doc = canonical_json::parse(first.stdout.trim_end().as_bytes()).unwrap_or(Value::Null);
    t.check(
        "authorization is carried verbatim",
        doc.pointer("/authorization/contract_authorization/authority").and_then(Value::as_str)
            == Some("self-test")
            && doc.pointer("/authorization/approvals/0/seq").and_then(Value::as_i64) == Some(1),
        format_args!("{doc:?}"),
    );
    t.check(
        "an unmapped surface widens discovery",
        doc.pointer("/touched_surface/widen_discovery").and_then(Value::as_bool) == Some(true),
        "",
    );
    s.ledger(&["start", "--task", "T-one"]);
    s.ledger(&["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"false\""]);
    let run = ctx(&["manifest", "--task", "T-one"]);
    let doc = canonical_json::parse(run.stdout.trim_end().as_bytes()).unwrap_or(Value::Null);
    // `false` is not the check declared for AC-pass: the gate is refused, and the recorded
    // refusal is the dead end.
    let refused = doc.get("dead_ends").and_then(Value::as_array).map_or(0, |d| {
        d.iter().filter(|e| e.get("kind").and_then(Value::as_str) == Some("refusal")).count()
    });
    t.check("a refused gate enters the dead-end digest", refused == 1, run.all());
    t.check("an open criterion asks for evidence", step(&run) == "evidence", run.all());
    let md = ctx(&["manifest", "--task", "T-one", "--md"]);
    t.check(
        "the Markdown form carries the boundary sections",
        md.code == 0
            && md.stdout.contains("## Authorization (carried, never summarized)")
            && md.stdout.contains("## Repository rules")
            && md.stdout.contains("## Dead ends (recorded — do not retry blindly)"),
        md.all(),
    );
    let summary = s.root.join("summary.json");
    let stored = doc.pointer("/freshness/inputs_fingerprint").and_then(Value::as_str).unwrap_or("");
    let body = format!("{{\"inputs_fingerprint\": \"{stored}\"}}");
    t.check("a summary can be stored", s.write(&summary, body.as_bytes()), "");
    let fresh = ctx(&["freshness", "--task", "T-one", "--summary", summary.to_str().unwrap_or("")]);
    t.expect("unchanged inputs are fresh", &fresh, 0, "\"verdict\": \"fresh\"");
    t.check("the surface can change", s.write(&s.root.join("src.txt"), b"changed\n"), "");
    let stale = ctx(&["freshness", "--task", "T-one", "--summary", summary.to_str().unwrap_or("")]);
    t.expect("changed inputs invalidate the summary", &stale, 1, "\"verdict\": \"stale\"");
    t.check("an empty summary can be stored", s.write(&summary, b"{}"), "");
    t.expect(
        "an unattributable summary is refused",
        &ctx(&["freshness", "--task", "T-one", "--summary", summary.to_str().unwrap_or("")]),
        1,
        "an unattributable summary is stale by construction",
    );
    let acct = ctx(&["accounting"]);
    let doc = acct.json().unwrap_or(Value::Null);
    t.check(
        "accounting keeps the four quantities apart, missing as missing",
        doc.pointer("/provider_tokens/status").and_then(Value::as_str) == Some("missing")
            && doc.pointer("/cost_usd/value") == Some(&Value::Null)
            && doc
                .pointer("/instruction_bytes/bytes/manifest_json")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                > 0
            && doc.get("never").is_some(),
        acct.all(),
    );
    t.check("nothing is written into the plan", !s.plan.join("context").exists(), "");
}

/// A v5 plan: a clean completed task, one whose evidence is gone, a pending one.
fn v5_plan(s: &Scratch) -> bool {
    let manifest = format!(
        "{{\"schema\":\"https://deepworkplan.com/schema/plan-manifest/v5.json\",\"spec_version\":\"5.0.0\",\"name\":\"{PLAN}\",\"title\":\"Migration self-test\",\"created_at\":\"2026-09-01T09:00:00Z\",\"task_count\":3}}\n"
    );
    let state = format!(
        "{{\"schema\":\"https://deepworkplan.com/schema/plan-state/v5.json\",\"plan\":\"{PLAN}\",\"updated_at\":\"2026-09-02T09:00:00Z\",\"task_count\":3,\"tasks\":[\
{{\"id\":1,\"title\":\"Clean completed task\",\"status\":\"completed\",\"gates\":[{{\"command\":\"make test\",\"passes\":true,\"exit_code\":0,\"evidence\":\"clean.log\"}}]}},\
{{\"id\":2,\"title\":\"Broken evidence task\",\"status\":\"completed\",\"gates\":[{{\"command\":\"make broken\",\"passes\":true,\"exit_code\":0,\"evidence\":\"gone.log\"}}]}},\
{{\"id\":3,\"title\":\"Pending task\",\"status\":\"pending\",\"gates\":[]}}]}}\n"
    );
    s.write(&s.plan.join("manifest.json"), manifest.as_bytes())
        && s.write(&s.plan.join("state.json"), state.as_bytes())
        && s.write(&s.plan.join("clean.log"), b"ok\n")
}

fn migrate(s: &Scratch, t: &mut Probes) {
    t.check("a v5 plan can be written", v5_plan(s), "");
    let mig = |args: &[&str]| s.group("migrate", args);
    let before = (s.read("manifest.json"), s.read("state.json"));
    t.expect(
        "preview maps clean, broken and pending tasks",
        &mig(&["preview"]),
        0,
        "(3 tasks: 1 imported-closable, 1 re-evidence, 1 pending)",
    );
    t.check(
        "preview leaves the v5 bytes untouched",
        (s.read("manifest.json"), s.read("state.json")) == before,
        "",
    );
    let _ = std::fs::remove_file(s.plan.join("clean.log"));
    t.expect(
        "a changed world between preview and migrate is refused",
        &mig(&["migrate", "--authority", "tester"]),
        1,
        "the v5 world changed since the preview",
    );
    t.check("the evidence can come back", s.write(&s.plan.join("clean.log"), b"ok\n"), "");
    t.expect(
        "migrate without an authority is refused",
        &mig(&["migrate"]),
        1,
        "REFUSED: migrate requires --authority WHO",
    );
    t.expect(
        "migrate runs all five phases",
        &mig(&["migrate", "--authority", "tester"]),
        0,
        "phases backup+contract+manifest+journal+project)",
    );
    let events = s.journal();
    let types = s.types();
    t.check(
        "the journal opens with the pre_authorization approval",
        types.first().is_some_and(|x| x == "approval")
            && events.first().and_then(|e| e.get("mechanism")).and_then(Value::as_str)
                == Some("pre_authorization"),
        format_args!("{types:?}"),
    );
    let trusts: Vec<String> = events
        .iter()
        .filter(|e| e.get("type").and_then(Value::as_str) == Some("gate_run"))
        .map(|e| e.get("trust").and_then(Value::as_str).unwrap_or("").to_owned())
        .collect();
    t.check(
        "gate records are imported or asserted, never observed",
        trusts == ["imported", "asserted"],
        format_args!("{trusts:?}"),
    );
    t.expect(
        "re-running migrate mints nothing",
        &mig(&["migrate", "--authority", "tester"]),
        0,
        "migrated to v6",
    );
    t.check("the rerun is a no-op", s.journal().len() == events.len(), "");
    t.expect("a v6 plan is not previewed again", &mig(&["preview"]), 1, "is already a v6 plan");
    s.ledger(&["start", "--task", "T-03-pending-task"]);
    t.expect(
        "rollback refuses when the journal grew beyond the migration",
        &mig(&["rollback"]),
        1,
        "is not silently deleted; pass --force to discard it deliberately",
    );
    t.expect(
        "rollback --force restores the v5 pair",
        &mig(&["rollback", "--force"]),
        0,
        "WARNING:",
    );
    t.check(
        "the v5 bytes are back and the v6 files gone",
        (s.read("manifest.json"), s.read("state.json")) == before
            && !s.plan.join("contract.json").exists()
            && !s.plan.join("journal.ndjson").exists(),
        "",
    );
    let state =
        String::from_utf8_lossy(&s.read("state.json")).replace("\"pending\"", "\"mysterious\"");
    t.check(
        "a lossy state can be written",
        s.write(&s.plan.join("state.json"), state.as_bytes()),
        "",
    );
    t.expect("a lossy status is refused by name", &mig(&["preview"]), 1, "'mysterious'");
}
