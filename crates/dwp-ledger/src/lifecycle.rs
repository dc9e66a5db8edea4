//! A task's attempt: `start` (with the git fingerprint), a human `signoff`, and `complete`
//! (a pure check over the projection that records each refusal).

use canonical_json::Value;
use dwp::gate::{self, SIGNOFF_COMMAND};
use dwp::projection;

use crate::error::{LedgerError, Result, fail};
use crate::evidence::check_evidence_path;
use crate::files::hash_file;
use crate::git::git;
use crate::values::{actor, int, obj, s};
use crate::writer::{AppendRequest, Writer};

impl Writer {
    /// `start`: a `task_start` with the git fingerprint, idempotent on an unchanged world.
    ///
    /// # Errors
    /// Unknown task, missing approval (recorded, exit 3), I/O.
    pub fn start_task(&mut self, task_id: &str, who: Value) -> Result<Value> {
        self.task(task_id)?;
        let root = self.plan.repo_root();
        let (revision, ok) = git(&["rev-parse", "HEAD"], &root);
        let (dirty, _) = git(&["status", "--porcelain"], &root);
        let revision = if ok && !revision.is_empty() { revision } else { "none".to_owned() };
        let payload = obj([
            ("task", s(task_id)),
            ("fingerprint", Value::Object(obj([("revision", s(&revision)), ("dirty", s(&dirty))]))),
        ]);
        self.append(AppendRequest {
            etype: "task_start".to_owned(),
            payload,
            actor: who,
            note: None,
            idempotent: true,
            trust: None,
            evidence_path: None,
        })
    }

    /// `signoff`: a human, asserted `gate_run` bound to the criterion's owning task.
    ///
    /// # Errors
    /// The upstream refusals (none is recorded).
    pub fn signoff(
        &mut self,
        criterion: &str,
        evidence_path: Option<&str>,
        authority: Option<&str>,
        task: Option<&str>,
    ) -> Result<Value> {
        let (authority, evidence_path) =
            gate::signoff_claim(&self.plan.contract, criterion, authority, evidence_path)
                .map_err(fail)?;
        let resolved = check_evidence_path(&self.plan, Some(evidence_path))?;
        let task_id =
            gate::signoff_task(&self.plan.contract, &self.events, criterion, task).map_err(fail)?;
        let marker: String = hash_file(&resolved).unwrap_or_default().chars().take(16).collect();
        let payload = obj([
            ("command", s(SIGNOFF_COMMAND)),
            ("cwd", s(".")),
            ("timeout_seconds", int(1)),
            ("exit_code", int(0)),
            ("criterion", s(criterion)),
            ("task", s(&task_id)),
        ]);
        let note = format!("human sign-off: asserted, never executed; evidence sha256:{marker}");
        self.append_raw(
            "gate_run",
            payload,
            actor("human", &authority),
            Some(&note),
            Some("asserted"),
            Some(evidence_path),
        )
    }

    /// `complete`: a pure check that records each refusal.
    ///
    /// # Errors
    /// Completion refused (recorded, exit 4), unknown task.
    pub fn complete_task(&mut self, task_id: &str) -> Result<Vec<Value>> {
        self.task(task_id)?;
        let open: Vec<String> = projection::delegations(&self.events, Some(task_id))
            .into_iter()
            .filter(|(_, e)| e.get("state").and_then(Value::as_str) == Some("launched"))
            .map(|(id, _)| id)
            .collect();
        if !open.is_empty() {
            let list = open.join(", ");
            self.refuse_gate(
                task_id,
                &format!("delegation(s) still open: {list} — collect or cancel them first"),
            )?;
            return Err(LedgerError::CompletionRefused(format!(
                "completion of {task_id} refused: delegation(s) {list} still open — collect or \
                 cancel them first"
            )));
        }
        let start = projection::task_start_seq_of(&self.events, task_id);
        let unverified = projection::invariant_findings(&self.plan.contract, &self.events, start);
        if !unverified.is_empty() {
            let list = unverified.join("; ");
            self.refuse_gate(
                task_id,
                &format!("invariant(s) not verified for this attempt: {list}"),
            )?;
            return Err(LedgerError::CompletionRefused(format!(
                "completion of {task_id} refused: {list} — every declared invariant is \
                 plan-scoped and is evaluated at or after the task's start before it closes: \
                 record an observation \"INV-<id>: pass\" (or \"INV-<id>: fail: <reason>\") \
                 (spec/V6_LIFECYCLE.md section 4, F-03)"
            )));
        }
        let states = projection::criterion_states(&self.plan.contract, &self.events, task_id)
            .unwrap_or_default();
        let missing: Vec<String> = states
            .iter()
            .filter(|st| st.get("satisfied").and_then(Value::as_bool) != Some(true))
            .map(|st| dwp::py::str_opt(st.get("criterion")))
            .collect();
        if !missing.is_empty() {
            self.refuse_gate(
                task_id,
                &format!("criteria without in-window accepted evidence: {}", missing.join(", ")),
            )?;
            return Err(LedgerError::CompletionRefused(format!(
                "completion of {task_id} refused: {} criterion(s) lack in-window accepted \
                 evidence (zero-test control)",
                missing.len()
            )));
        }
        Ok(states)
    }

    fn refuse_gate(&mut self, task_id: &str, reason: &str) -> Result<()> {
        self.append_raw(
            "refusal",
            obj([("subject", s(task_id)), ("stage", s("gate")), ("reason", s(reason))]),
            self.helper(),
            None,
            None,
            None,
        )
        .map(|_| ())
    }
}
