//! The ledger side of the mint rules: `append` asks [`dwp::mint`] what may be recorded, then
//! resolves evidence, records an approval refusal, deduplicates and writes.

use std::path::Path;

use canonical_json::Value;
use dwp::mint;
use dwp::py::repr_str;

use crate::error::{LedgerError, Result, fail};
use crate::evidence::check_evidence_path;
use crate::files::hash_file;
use crate::values::{obj, s};
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
        if let Some(refusal) = mint::raw_append_refusal(etype, trust, &req.actor) {
            return Err(fail(refusal));
        }
        if mint::cites_evidence(trust) {
            let evidence =
                mint::claimed(req.evidence_path.as_deref(), &req.payload, "evidence_path");
            check_evidence_path(&self.plan, evidence)?;
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
        self.append_raw(
            etype,
            req.payload,
            req.actor,
            req.note.as_deref(),
            req.trust.as_deref(),
            req.evidence_path.as_deref(),
        )
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
