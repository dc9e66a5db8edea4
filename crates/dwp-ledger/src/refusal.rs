//! Recording a refused request ([`dwp::refusal`]) before the refusal is reported.
//!
//! Every writer operation that refuses a request by a plan rule calls [`Writer::refused`] with
//! the refusal and the error it reports today: the `refusal` event is appended (by the helper,
//! through the one validated append path) and the same error comes back, so the exit code does
//! not change. Nothing is recorded where nothing may be appended: a writer exists only once
//! the plan lock is held and the journal has been read whole, so a damaged, locked or
//! unreadable journal refuses before any of this runs.

use canonical_json::Value;
use dwp::refusal::{Refusal, Rule, Stage};

use crate::error::LedgerError;
use crate::writer::Writer;

impl Writer {
    /// The contract entry of `task_id`, or the unknown-id refusal of `request` at `stage`,
    /// recorded.
    pub(crate) fn known_task(
        &mut self,
        request: &'static str,
        stage: Stage,
        task_id: &str,
    ) -> Result<Value, LedgerError> {
        self.task(task_id).map_err(|err| {
            let r = refusal(request, stage, Rule::UnknownId, task_id, task_id, &err.to_string());
            self.refused(&r, err)
        })
    }

    /// Appends the `refusal` event for `refusal` and returns `err` (the error the request
    /// reports). When the event itself cannot be appended, `err` keeps its kind (and so its
    /// exit code) and says why nothing was recorded.
    pub fn refused(&mut self, refusal: &Refusal, err: LedgerError) -> LedgerError {
        let note = refusal.note();
        let helper = self.helper();
        match self.append_raw("refusal", refusal.payload(), helper, Some(&note), None, None) {
            Ok(_) => err,
            Err(why) => with_suffix(err, &format!(" (the refusal could not be recorded: {why})")),
        }
    }
}

/// A refusal of `request` at `stage` by `rule`, about `subject`, quoting `value`.
pub(crate) fn refusal(
    request: &'static str,
    stage: Stage,
    rule: Rule,
    subject: &str,
    value: &str,
    message: &str,
) -> Refusal {
    Refusal {
        request,
        stage,
        rule,
        subject: subject.to_owned(),
        value: value.to_owned(),
        message: message.to_owned(),
    }
}

fn with_suffix(err: LedgerError, suffix: &str) -> LedgerError {
    match err {
        LedgerError::Failed(m) => LedgerError::Failed(m + suffix),
        LedgerError::Collision(m) => LedgerError::Collision(m + suffix),
        LedgerError::ApprovalMissing(m) => LedgerError::ApprovalMissing(m + suffix),
        LedgerError::CompletionRefused(m) => LedgerError::CompletionRefused(m + suffix),
    }
}
