//! `project`: `state.json` from the journal, written atomically
//! ([`journal::atomic_replace`]: temp file, fsync, rename, directory fsync).

use canonical_json::Value;
use dwp::projection;

use crate::error::{LedgerError, Result};
use crate::files::write_pretty;
use crate::writer::{Writer, parse_strict};

impl Writer {
    /// The snapshot this writer would project.
    pub fn snapshot(&self) -> Value {
        projection::snapshot(
            &self.plan.contract,
            &self.plan.contract_id,
            &self.events,
            &self.plan.archives(),
        )
    }

    /// `project`: writes `state.json` atomically.
    ///
    /// # Errors
    /// I/O.
    pub fn project(&self) -> Result<Value> {
        let state = self.snapshot();
        write_pretty(&self.plan.dir.join("state.json"), &state)?;
        Ok(state)
    }

    /// `project` for a writer opened with [`Load::Tail`](crate::Load::Tail): streams archived + live events through
    /// a [`projection::Projector`] instead of holding them, then writes `state.json` atomically.
    /// The bytes are those of [`Writer::project`] on a fully loaded writer.
    ///
    /// # Errors
    /// I/O; a line that is not strict JSON.
    pub fn project_streaming(&self) -> Result<Value> {
        let mut projector = projection::Projector::new();
        for event in self.plan.archived_events()? {
            projector.feed(&event);
        }
        if let Some(journal) = &self.journal {
            journal.for_each_record(|at, line| {
                projector.feed(&parse_strict(at, line)?);
                Ok::<(), LedgerError>(())
            })?;
        }
        let state =
            projector.finish(&self.plan.contract, &self.plan.contract_id, &self.plan.archives());
        write_pretty(&self.plan.dir.join("state.json"), &state)?;
        Ok(state)
    }
}
