//! Control pairs, receipts and review observations on disk (upstream `outcomes.py` and
//! `Writer.run_control`). The decisions themselves are [`dwp::outcomes`].

use std::fs;
use std::path::{Path, PathBuf};

use canonical_json::Value;
use dwp::outcomes::{self as rules, CONTROL_KINDS, OUTCOMES_IDENTITY, ReceiptSources};
use dwp::projection;
use dwp::py::repr_str;

use crate::command::{GateCommand, RunResult, run_command};
use crate::error::{Result, fail, io_fail};
use crate::files::refuse_symlink;
use crate::git::git;
use crate::plan::Plan;
use crate::records;
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
    /// The check, run by a shell in each leg.
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

fn run_leg(cmd: &str, cwd: &Path, timeout: f64, log_path: &Path, rel: &str) -> Result<Leg> {
    let run = run_command(&GateCommand::Shell(cmd.to_owned()), cwd, timeout)?;
    let (code, out, err) = match run {
        RunResult::Finished { code, stdout, stderr } => (code, stdout, stderr),
        RunResult::TimedOut { stdout } => (124, stdout, format!("timeout after {timeout}s")),
        RunResult::NotFound => (127, String::new(), "command not found".to_owned()),
    };
    let log = format!(
        "$ {cmd} (cwd {})\n\n--- stdout ---\n{out}\n--- stderr ---\n{err}\n--- exit {code} ---\n",
        cwd.display()
    );
    fs::write(log_path, log).map_err(|e| io_fail(log_path, e))?;
    Ok(Leg { pass: code == 0, log: rel.to_owned() })
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

impl Writer {
    /// `outcomes control`: runs the old leg at the task's starting revision (a detached git
    /// worktree with the declared artifacts copied in) and the new leg in the repo, then
    /// records an observed `control_pair`.
    ///
    /// # Errors
    /// The upstream refusals (nothing recorded), a missing artifact, I/O.
    pub fn run_control(&mut self, req: &ControlRequest) -> Result<ControlOutcome> {
        let task = self.task(&req.task)?;
        let intents: Vec<&str> =
            projection::intent_criteria(&task).into_iter().filter_map(Value::as_str).collect();
        if !intents.contains(&req.criterion.as_str()) {
            let mut sorted: Vec<String> = intents.iter().map(|c| repr_str(c)).collect();
            sorted.sort();
            return Err(fail(format!(
                "criterion {} is not declared in task {} gate_intent [{}]",
                repr_str(&req.criterion),
                req.task,
                sorted.join(", ")
            )));
        }
        let kind = rules::control_kind(&self.plan.contract, &req.criterion);
        if !kind.is_some_and(|k| CONTROL_KINDS.contains(&k)) {
            return Err(fail(format!(
                "control pair refused: criterion {} declares control kind {} - exempt/undeclared \
                 criteria close on ordinary accepted evidence with the recorded reason, never on \
                 a pair",
                req.criterion,
                kind.map_or_else(|| "None".to_owned(), repr_str)
            )));
        }
        let Some(start) = self
            .events
            .iter()
            .filter(|e| {
                e.get("type").and_then(Value::as_str) == Some("task_start")
                    && e.get("task").and_then(Value::as_str) == Some(req.task.as_str())
            })
            .max_by_key(|e| projection::seq_of(e))
            .cloned()
        else {
            return Err(fail(format!(
                "control pair refused for {}: the task has no task_start — the old leg is \
                 rebuilt from the starting fingerprint of an attempt",
                req.task
            )));
        };
        let fingerprint = start.get("fingerprint").cloned();
        let revision = fingerprint
            .as_ref()
            .and_then(|f| f.get("revision"))
            .and_then(Value::as_str)
            .unwrap_or("none")
            .to_owned();
        let dirty = fingerprint
            .as_ref()
            .and_then(|f| f.get("dirty"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        // A host with no starting revision (not a git repository, or an attempt recorded
        // without a fingerprint) has no old leg to run: the verdict is control_unavailable, decided
        // before the command class and the artifacts are looked at (as upstream).
        let root = self.plan.repo_root();
        if fingerprint.is_some() && revision != "none" {
            let head = req.command.split_whitespace().next().unwrap_or("");
            let base = head.rsplit('/').next().unwrap_or(head);
            let declared: Vec<&str> = self
                .plan
                .contract
                .pointer("/scope/allowed_command_classes")
                .and_then(Value::as_array)
                .unwrap_or(&[])
                .iter()
                .filter_map(Value::as_str)
                .collect();
            if !declared.contains(&base) {
                let mut sorted: Vec<String> = declared.iter().map(|c| repr_str(c)).collect();
                sorted.sort();
                return Err(fail(format!(
                    "control command {} is outside the contract declared command classes [{}]",
                    repr_str(head),
                    sorted.join(", ")
                )));
            }
        }
        let runs_old_leg = fingerprint.is_some() && revision != "none";
        for a in &req.artifacts {
            if !crate::files::safe_relative(a) || (runs_old_leg && !root.join(a).is_file()) {
                return Err(fail(format!(
                    "control artifact {} does not resolve to a file inside the repository",
                    repr_str(a)
                )));
            }
        }
        let log_dir = self.plan.dir.join("gates").join(&req.task);
        refuse_symlink(&log_dir)?;
        fs::create_dir_all(&log_dir).map_err(|e| io_fail(&log_dir, e))?;
        let nnn = format!("{:03}", self.next_seq()?);
        let old_name = format!("{nnn}-control-{}-old.log", req.criterion);
        let new_name = format!("{nnn}-control-{}-new.log", req.criterion);
        let old_rel = format!("gates/{}/{old_name}", req.task);
        let new_rel = format!("gates/{}/{new_name}", req.task);

        let unavailable = if fingerprint.is_none() {
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
                Some(self.old_leg(req, &root, &revision, &log_dir.join(&old_name), &old_rel)?)
            }
        };
        let new = run_leg(&req.command, &root, req.timeout, &log_dir.join(&new_name), &new_rel)?;
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
        let note: String = reason.chars().take(500).collect();
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

    fn old_leg(
        &self,
        req: &ControlRequest,
        root: &Path,
        revision: &str,
        log_path: &Path,
        rel: &str,
    ) -> Result<Leg> {
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
        let leg = run_leg(&req.command, &tree.tree, req.timeout, log_path, rel);
        drop(tree);
        leg
    }
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
