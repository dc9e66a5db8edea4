//! The ledger side of the mint rules: `append` asks [`dwp::mint`] what may be recorded, then
//! resolves evidence, records an approval refusal, deduplicates and writes.

use std::path::Path;

use canonical_json::Value;
use dwp::py::repr_str;
use dwp::refusal::{Rule, Stage};
use dwp::{mint, projection};

use crate::error::{LedgerError, Result, fail};
use crate::evidence::check_evidence_path;
use crate::files::hash_file;
use crate::refusal::refusal;
use crate::values::{obj, s};

/// The start of the append path's message for an event the schema or contract refuses
/// (`Writer::append_with`).
const INVALID_EVENT: &str = "refusing to append an invalid ";
use crate::writer::{AppendRequest, Writer};

impl Writer {
    /// Records a `refusal` and refuses when no approval cites the live contract.
    fn require_approval(&mut self) -> Result<()> {
        if mint::approval_seq(&self.events, &self.plan.contract_id).is_some() {
            return Ok(());
        }
        self.append_raw(
            "refusal",
            obj([
                ("subject", s("task_start")),
                ("stage", s("task_start")),
                ("reason", s(&mint::approval_refusal_reason(&self.plan.contract_id))),
            ]),
            self.helper(),
            None,
            None,
            None,
        )?;
        Err(LedgerError::ApprovalMissing(mint::APPROVAL_MISSING.to_owned()))
    }

    /// `append`: mint rules, approval gate, idempotence, then the write.
    ///
    /// # Errors
    /// Mint-rule refusals, missing approval (recorded), invalid event, collision.
    pub fn append(&mut self, req: AppendRequest) -> Result<Value> {
        let etype = req.etype.as_str();
        let trust = mint::claimed(req.trust.as_deref(), &req.payload, "trust");
        let subject = req
            .payload
            .get("task")
            .and_then(Value::as_str)
            .filter(|t| projection::find_task(&self.plan.contract, t).is_some())
            .unwrap_or(etype)
            .to_owned();
        if let Some(message) = mint::raw_append_refusal(etype, trust, &req.actor) {
            let value = if matches!(etype, "gate_run" | "delegation") {
                etype
            } else {
                trust.unwrap_or(etype)
            };
            let r = refusal("ledger append", Stage::Gate, Rule::MintRule, &subject, value, message);
            return Err(self.refused(&r, fail(message)));
        }
        if mint::cites_evidence(trust) {
            let evidence =
                mint::claimed(req.evidence_path.as_deref(), &req.payload, "evidence_path");
            if let Err(err) = check_evidence_path(&self.plan, evidence) {
                let value = evidence.unwrap_or("");
                let r = refusal(
                    "ledger append",
                    Stage::Gate,
                    Rule::Evidence,
                    &subject,
                    value,
                    &err.to_string(),
                );
                return Err(self.refused(&r, err));
            }
        }
        if mint::needs_approval(etype) {
            self.require_approval()?;
        }
        if req.idempotent
            && let Some(prior) = mint::duplicate_of(
                &self.events,
                etype,
                &req.payload,
                &req.actor,
                &self.plan.contract_id,
            )
        {
            return Ok(prior.clone());
        }
        let payload_text = canonical_json::to_python_compact(&Value::Object(req.payload.clone()))
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        match self.append_raw(
            etype,
            req.payload,
            req.actor,
            req.note.as_deref(),
            req.trust.as_deref(),
            req.evidence_path.as_deref(),
        ) {
            // The one append path validates every event against the journal-event schema and
            // the live contract; for a request, that refusal is the catalog rule's.
            Err(LedgerError::Failed(message)) if message.starts_with(INVALID_EVENT) => {
                let known = dwp::validate::EVENT_TYPES_V6.contains(&etype) || etype == "delegation";
                let value = if known { payload_text } else { etype.to_owned() };
                let r = refusal(
                    "ledger append",
                    Stage::Gate,
                    Rule::Catalog,
                    &subject,
                    &value,
                    &message,
                );
                Err(self.refused(&r, LedgerError::Failed(message)))
            }
            other => other,
        }
    }

    /// Records the refusal of `request` by a human actor (`identity`) that carries no
    /// human-authority marker (`--human-note` or a terminal confirmation) and returns `err`.
    pub fn refuse_human_marker(
        &mut self,
        request: &'static str,
        subject: &str,
        identity: &str,
        err: LedgerError,
    ) -> LedgerError {
        let stage = if request == "ledger amend" { Stage::Authorize } else { Stage::Gate };
        let r = refusal(request, stage, Rule::HumanAuthority, subject, identity, &err.to_string());
        self.refused(&r, err)
    }
}

/// A human-authority marker from `--human-note FILE`.
///
/// # Errors
/// The note is not a file.
pub fn human_note_marker(note: &Path) -> Result<String> {
    if !note.is_file() {
        return Err(fail(format!(
            "--human-note {} is not a file - the marker is the note the human wrote",
            repr_str(&note.to_string_lossy())
        )));
    }
    let digest: String = hash_file(note).unwrap_or_default().chars().take(16).collect();
    Ok(format!("human authority marker: note {} sha256:{digest}", note.display()))
}

/// The refusal when neither a note nor a TTY confirmation is available.
pub fn human_marker_missing() -> LedgerError {
    fail(
        "--actor-kind human needs an explicit human-authority marker: --human-note PATH (the \
         note the human wrote) or an interactive confirmation on a terminal (F-20). An agent \
         records its own claims with --actor-kind agent",
    )
}
