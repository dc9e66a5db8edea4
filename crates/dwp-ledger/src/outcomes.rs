//! Control pairs, receipts and review observations on disk (upstream `outcomes.py` and
//! `Writer.run_control`). The decisions themselves are [`dwp::outcomes`].
//!
//! The control-pair executor is the second path that mints observed evidence, so it admits
//! its command exactly as the gate runner does ([`dwp::gate::admit_command`], one copy of the
//! rules), runs the admitted argv without a shell in both legs, and records each refusal by a
//! plan rule as one `refusal` event (request `outcomes control`). Upstream (`ledger.py
//! run_control`) checks no command class at all, hands a string to `shell=True`, and records
//! none of its refusals.

use std::fs;
use std::path::{Path, PathBuf};

use canonical_json::Value;
use dwp::gate;
use dwp::outcomes::{self as rules, CONTROL_KINDS, OUTCOMES_IDENTITY, ReceiptSources};
use dwp::projection;
use dwp::py::repr_str;
use dwp::refusal::{Rule, Stage};

use crate::command::{GateCommand, RunResult, resolve_program, run_command};
use crate::error::{Result, fail, io_fail};
use crate::files::refuse_symlink;
use crate::git::git;
use crate::plan::Plan;
use crate::records;
use crate::refusal::refusal;
use crate::values::{actor, obj, s};
use crate::writer::Writer;

/// The D3-3 reason for a dirty start.
pub const DIRTY_REASON: &str = "starting fingerprint carries a dirty component - the old leg \
    cannot be faithfully materialized (D3-3)";

/// What a recorded control pair says.
#[derive(Clone, Debug)]
pub struct ControlOutcome {
    /// `discriminating`, `non_discriminating` or `control_unavailable`.
    pub verdict: String,
    /// Why (also the event note).
    pub reason: String,
    /// The `control_pair` seq.
    pub seq: i64,
}

/// A control-pair request.
#[derive(Clone, Debug)]
pub struct ControlRequest {
    /// The task.
    pub task: String,
    /// The controlled criterion.
    pub criterion: String,
    /// The check as given: admitted by the gate's rules, split into words and executed without
    /// a shell in each leg.
    pub command: String,
    /// Files copied from the working tree into the old leg (relative to the repo root).
    pub artifacts: Vec<String>,
    /// Seconds per leg.
    pub timeout: f64,
}

struct Leg {
    pass: bool,
    log: String,
}

/// Runs one leg: the admitted `argv` with its program resolved to `program`, directly (no
/// shell), in `cwd`; the log names the argv as admitted. `None` when the program cannot be
/// started (nothing ran, no log is written).
fn run_leg(
    argv: &[String],
    program: &Path,
    cwd: &Path,
    timeout: f64,
    log_path: &Path,
    rel: &str,
) -> Result<Option<Leg>> {
    let mut exec = argv.to_vec();
    if let Some(first) = exec.first_mut() {
        *first = program.to_string_lossy().into_owned();
    }
    let run = run_command(&GateCommand::Argv(exec), cwd, timeout)?;
    let (code, out, err) = match run {
        RunResult::Finished { code, stdout, stderr } => (code, stdout, stderr),
        RunResult::TimedOut { stdout } => (124, stdout, format!("timeout after {timeout}s")),
        RunResult::NotFound => return Ok(None),
    };
    let log = format!(
        "$ {} (cwd {})\n\n--- stdout ---\n{out}\n--- stderr ---\n{err}\n--- exit {code} ---\n",
        gate::shown(argv),
        cwd.display()
    );
    fs::write(log_path, log).map_err(|e| io_fail(log_path, e))?;
    Ok(Some(Leg { pass: code == 0, log: rel.to_owned() }))
}

/// The executable a leg runs in `cwd`: a bare program is looked up on `PATH` outside the
/// repository `root` (the same lookup as a gate's, so the old leg's tree cannot shadow it
/// either); a path-qualified program (admitted only because a class names that exact path) is
/// taken relative to the leg's own tree, so the old leg runs the program of the starting
/// revision.
fn leg_program(program: &str, root: &Path, cwd: &Path) -> Option<PathBuf> {
    if program.contains('/') {
        resolve_program(program, cwd)
    } else {
        resolve_program(program, root)
    }
}

/// Removes a detached worktree and its scratch directory (always attempted).
struct OldTree {
    root: PathBuf,
    scratch: PathBuf,
    tree: PathBuf,
}

impl Drop for OldTree {
    fn drop(&mut self) {
        let tree = self.tree.to_string_lossy().into_owned();
        let _ = git(&["worktree", "remove", "--force", &tree], &self.root);
        let _ = fs::remove_dir_all(&self.scratch);
        let _ = git(&["worktree", "prune"], &self.root);
    }
}

fn scratch_dir() -> Result<PathBuf> {
    let base = std::env::temp_dir();
    for attempt in 0..100u32 {
        let name = format!("dwp-control-{}-{attempt}", std::process::id());
        let dir = base.join(name);
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_fail(&dir, e)),
        }
    }
    Err(fail("could not create a scratch directory for the old leg"))
}

/// The request name a control pair's refusals record.
const REQUEST: &str = "outcomes control";

impl Writer {
    /// `outcomes control`: runs the old leg at the task's starting revision (a detached git
    /// worktree with the declared artifacts copied in) and the new leg in the repo, then
    /// records an observed `control_pair`.
    ///
    /// The command is admitted by the gate's rules ([`gate::admit_command`]: a declared class
    /// as written, no shell syntax outside a declared shell's `-c` script, the criterion's
    /// declared check when it has one), always, even where no old leg can run, because the
    /// new leg runs it; both legs execute the admitted argv directly, and the logs and the
    /// event's note name it exactly.
    ///
    /// # Errors
    /// A refused request, recorded as one `refusal` event first (unknown task, criterion
    /// outside the task's intent, a criterion without a control kind, no task start, command
    /// class, shell syntax, criterion binding, an artifact outside the repository); a program
    /// not found (nothing ran, nothing recorded); I/O.
    pub fn run_control(&mut self, req: &ControlRequest) -> Result<ControlOutcome> {
        let task = self.known_task(REQUEST, Stage::Gate, &req.task)?;
        let argv = match self.admit_control(req, &task) {
            Ok(argv) => argv,
            Err((rule, value, message)) => {
                let r = refusal(REQUEST, Stage::Gate, rule, &req.task, &value, &message);
                return Err(self.refused(&r, fail(message)));
            }
        };
        let start = self.latest_start(&req.task);
        let fingerprint = start.as_ref().and_then(|e| e.get("fingerprint")).cloned();
        let field = |key: &str, default: &str| {
            fingerprint
                .as_ref()
                .and_then(|f| f.get(key))
                .and_then(Value::as_str)
                .unwrap_or(default)
                .to_owned()
        };
        let revision = field("revision", "none");
        let dirty = field("dirty", "");
        // A host with no starting revision (not a git repository, or an attempt recorded
        // without a fingerprint) has no old leg to run: the verdict is control_unavailable, and
        // the artifacts, which only travel to the old leg, need not exist (as upstream); they
        // must still be relative paths that stay inside the repository.
        let root = self.plan.repo_root();
        let runs_old_leg = fingerprint.is_some() && revision != "none";
        if let Some(bad) = req.artifacts.iter().find(|a| !artifact_inside(a, &root, runs_old_leg)) {
            let message = format!(
                "control artifact {} does not resolve to a file inside the repository",
                repr_str(bad)
            );
            let r = refusal(REQUEST, Stage::Gate, Rule::Evidence, &req.task, bad, &message);
            return Err(self.refused(&r, fail(message)));
        }
        // Resolved before anything runs or is written: a program that is not there is an
        // environment failure, not a plan rule, and leaves no trace (as a gate's).
        let program = argv.first().map_or("", String::as_str);
        let Some(new_program) = leg_program(program, &root, &root) else {
            return Err(fail(format!(
                "control command not found: {} — no event is recorded for a check that never ran",
                repr_str(&gate::shown(&argv))
            )));
        };
        let log_dir = self.plan.dir.join("gates").join(&req.task);
        refuse_symlink(&log_dir)?;
        fs::create_dir_all(&log_dir).map_err(|e| io_fail(&log_dir, e))?;
        let nnn = format!("{:03}", self.next_seq()?);
        let old_name = format!("{nnn}-control-{}-old.log", req.criterion);
        let new_name = format!("{nnn}-control-{}-new.log", req.criterion);
        let old_rel = format!("gates/{}/{old_name}", req.task);
        let new_rel = format!("gates/{}/{new_name}", req.task);

        let mut unavailable = if fingerprint.is_none() {
            Some(
                "the attempt recorded no starting fingerprint - the old leg cannot be \
                 materialized from a guess",
            )
        } else if revision == "none" {
            Some(
                "the attempt started on a non-git host - an old leg cannot be materialized from \
                 a fingerprint alone",
            )
        } else if !dirty.trim().is_empty() {
            Some(DIRTY_REASON)
        } else {
            None
        };
        let old = match unavailable {
            Some(_) => None,
            None => {
                self.old_leg(req, &argv, &root, &revision, &log_dir.join(&old_name), &old_rel)?
            }
        };
        if unavailable.is_none() && old.is_none() {
            unavailable = Some(OLD_PROGRAM_MISSING);
        }
        let Some(new) =
            run_leg(&argv, &new_program, &root, req.timeout, &log_dir.join(&new_name), &new_rel)?
        else {
            return Err(fail(format!(
                "control command could not start: {} — no event is recorded for a check that \
                 never ran",
                repr_str(&gate::shown(&argv))
            )));
        };
        let verdict = rules::verdict(old.as_ref().map(|l| l.pass), new.pass);
        let outcome = |pass: bool| if pass { "PASS" } else { "FAIL" };
        let reason = match (&old, unavailable) {
            (_, Some(why)) => why.to_owned(),
            (Some(o), None) => format!(
                "old {} / new {}: {}",
                outcome(o.pass),
                outcome(new.pass),
                if verdict == "discriminating" {
                    "the check fails before the change and passes after it"
                } else {
                    "only (old FAIL, new PASS) discriminates - never rounded up"
                }
            ),
            (None, None) => "the old leg is unavailable".to_owned(),
        };
        let old_leg = match &old {
            Some(o) => Value::Object(obj([
                ("available", Value::Bool(true)),
                ("outcome", s(outcome(o.pass))),
                ("log", s(&o.log)),
            ])),
            None => Value::Object(obj([("available", Value::Bool(false))])),
        };
        let payload = obj([
            ("criterion", s(&req.criterion)),
            ("check_artifacts", Value::Array(req.artifacts.iter().map(|a| s(a)).collect())),
            (
                "starting_fingerprint",
                Value::Object(obj([("revision", s(&revision)), ("dirty", s(&dirty))])),
            ),
            ("old_leg", old_leg),
            (
                "new_leg",
                Value::Object(obj([("outcome", s(outcome(new.pass))), ("log", s(&new.log))])),
            ),
            ("verdict", s(verdict)),
        ]);
        let evidence = old.as_ref().map_or(new_rel.as_str(), |o| o.log.as_str()).to_owned();
        // The schema gives a control_pair no command field: the note carries the exact argv
        // (quoted, or its digest and size when long) after the reason, within the 500 limit.
        let note = control_note(&reason, &argv);
        let event = self.append_raw(
            "control_pair",
            payload,
            self.helper(),
            Some(&note),
            Some("observed"),
            Some(&evidence),
        )?;
        Ok(ControlOutcome { verdict: verdict.to_owned(), reason, seq: projection::seq_of(&event) })
    }

    /// The checks of a control-pair request before anything runs, in upstream's order (the
    /// criterion is in the task's intent, it declares a control kind, the task has started),
    /// then the gate's command rules. Returns the argv both legs execute, or the rule broken,
    /// the offending value and the message.
    fn admit_control(
        &self,
        req: &ControlRequest,
        task: &Value,
    ) -> std::result::Result<Vec<String>, (Rule, String, String)> {
        let intents: Vec<&str> =
            projection::intent_criteria(task).into_iter().filter_map(Value::as_str).collect();
        if !intents.contains(&req.criterion.as_str()) {
            let mut sorted: Vec<String> = intents.iter().map(|c| repr_str(c)).collect();
            sorted.sort();
            return Err((
                Rule::GateIntent,
                req.criterion.clone(),
                format!(
                    "control pair refused: criterion {} is not declared in task {} gate_intent \
                     [{}]",
                    repr_str(&req.criterion),
                    req.task,
                    sorted.join(", ")
                ),
            ));
        }
        let kind = rules::control_kind(&self.plan.contract, &req.criterion);
        if !kind.is_some_and(|k| CONTROL_KINDS.contains(&k)) {
            return Err((
                Rule::ControlKind,
                req.criterion.clone(),
                format!(
                    "control pair refused: criterion {} declares control kind {} - \
                     exempt/undeclared criteria close on ordinary accepted evidence with the \
                     recorded reason, never on a pair",
                    req.criterion,
                    kind.map_or_else(|| "None".to_owned(), repr_str)
                ),
            ));
        }
        if self.latest_start(&req.task).is_none() {
            return Err((
                Rule::TaskWindow,
                req.task.clone(),
                format!(
                    "control pair refused for {}: the task has no task_start — the old leg is \
                     rebuilt from the starting fingerprint of an attempt",
                    req.task
                ),
            ));
        }
        gate::admit_command(
            &self.plan.contract,
            &req.task,
            task,
            &req.criterion,
            gate::Command::Text(&req.command),
            gate::Executor::Control,
        )
        .map_err(|r| (r.rule, req.command.clone(), r.message))
    }

    /// The task's latest `task_start` (the attempt whose fingerprint the old leg rebuilds).
    fn latest_start(&self, task: &str) -> Option<Value> {
        self.events
            .iter()
            .filter(|e| {
                e.get("type").and_then(Value::as_str) == Some("task_start")
                    && e.get("task").and_then(Value::as_str) == Some(task)
            })
            .max_by_key(|e| projection::seq_of(e))
            .cloned()
    }

    /// The old leg; `None` when its program is not found in the old tree (a path-qualified
    /// class that did not exist at the starting revision): the leg is unavailable, never a
    /// synthesized FAIL.
    fn old_leg(
        &self,
        req: &ControlRequest,
        argv: &[String],
        root: &Path,
        revision: &str,
        log_path: &Path,
        rel: &str,
    ) -> Result<Option<Leg>> {
        let scratch = scratch_dir()?;
        let tree_path = scratch.join("old-leg");
        let tree = OldTree { root: root.to_path_buf(), scratch, tree: tree_path.clone() };
        let tree_arg = tree_path.to_string_lossy().into_owned();
        let (out, ok) = git(&["worktree", "add", "--detach", &tree_arg, revision], root);
        if !ok {
            return Err(fail(format!(
                "git worktree add at {} failed: {out}",
                dwp::py::head(revision, 12)
            )));
        }
        for a in &req.artifacts {
            let dest = tree.tree.join(a);
            if let Some(parent) = dest.parent() {
                fs::create_dir_all(parent).map_err(|e| io_fail(parent, e))?;
            }
            fs::copy(root.join(a), &dest).map_err(|e| io_fail(&dest, e))?;
        }
        let program = argv.first().map_or("", String::as_str);
        let leg = match leg_program(program, root, &tree.tree) {
            Some(exe) => run_leg(argv, &exe, &tree.tree, req.timeout, log_path, rel),
            None => Ok(None),
        };
        drop(tree);
        leg
    }
}

/// The reason when the old tree has no program to run.
const OLD_PROGRAM_MISSING: &str = "the old leg's program is not found at the starting revision \
    - an old leg that never ran has no outcome";

/// Whether a control artifact is a relative path that stays inside the repository and, when
/// the old leg runs (`must_exist`), names a regular file there after symlinks.
fn artifact_inside(artifact: &str, root: &Path, must_exist: bool) -> bool {
    if !crate::files::safe_relative(artifact) {
        return false;
    }
    if !must_exist {
        return true;
    }
    let path = root.join(artifact);
    match (path.canonicalize(), root.canonicalize()) {
        (Ok(real), Ok(real_root)) => real.starts_with(real_root) && real.is_file(),
        _ => false,
    }
}

/// A control pair's note: the reason, then the exact argv both legs ran.
fn control_note(reason: &str, argv: &[String]) -> String {
    let note = format!("{reason}; command: {}", dwp::refusal::bounded(&gate::shown(argv)));
    note.chars().take(500).collect()
}

/// `outcomes review`: one asserted `REVIEW: <state>[: finding]` observation.
///
/// # Errors
/// A state outside the closed set (nothing written), lock/I/O failures.
pub fn record_review(writer: &mut Writer, state: &str, finding: Option<&str>) -> Result<Value> {
    let statement = rules::review_statement(state, finding).map_err(|e| fail(e.to_string()))?;
    writer.append_raw(
        "observation",
        obj([("statement", s(&statement))]),
        actor("agent", OUTCOMES_IDENTITY),
        None,
        Some("asserted"),
        None,
    )
}

/// `outcomes receipt`: recomputed from the records (read-only, no lock).
///
/// # Errors
/// Unreadable or torn records.
pub fn receipt(plan: &Plan, evaluator: &str) -> Result<Value> {
    // One read: the events the receipt decides on, the last seq, the journal digest.
    let (events, last_seq, journal_sha256) = records::load_compact(plan)?;
    let fresh = std::env::var("DWP_FRESH_EVALUATOR")
        .is_ok_and(|v| !v.is_empty() && !["0", "no", "false"].contains(&v.to_lowercase().as_str()));
    let src = ReceiptSources {
        journal_sha256,
        snapshot_sha256: records::snapshot_sha256(plan),
        evaluator: evaluator.to_owned(),
        fresh_supported: fresh,
        last_seq: Some(last_seq),
    };
    let doc = rules::receipt(&plan.contract, &plan.contract_id, &events, &src)
        .map_err(|e| fail(e.to_string()));
    // The caller exits right after: leave the parsed events to the OS.
    std::mem::forget(events);
    doc
}
