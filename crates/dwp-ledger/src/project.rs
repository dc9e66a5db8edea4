//! `project`: `state.json` from the journal, written atomically
//! ([`journal::atomic_replace`]: temp file, fsync, rename, directory fsync).

use canonical_json::Value;
use dwp::projection;
use journal::Damage;

use crate::error::{Result, fail, journal_err};
use crate::files::write_pretty;
use crate::summary;
use crate::writer::{Writer, strict_error};

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
            // One read: the bytes a matching summary covers are hashed, the rest checked
            // strictly (in stretches on as many threads), keeping only what the snapshot reads.
            let read = |from: u64, to: u64, visit: &mut dyn FnMut(&[u8])| {
                journal
                    .read_chunks(from, to, |chunk| {
                        visit(chunk);
                        Ok::<(), journal::Error>(())
                    })
                    .map_err(journal_err)
            };
            let path = summary::cache_file(journal.path(), "summary");
            let live = summary::tally_live(journal.len(), &read, path.as_deref(), true)?;
            if let Some(
                Damage::TornTail { byte_offset, .. } | Damage::Corrupt { byte_offset, .. },
            ) = live.report.damage
            {
                // The journal crate's scan took the line for JSON; it is not strict JSON.
                let mut line = Vec::new();
                read(byte_offset, journal.len(), &mut |chunk| line.extend_from_slice(chunk))?;
                let line = line.split(|b| *b == b'\n').next().unwrap_or_default();
                return Err(match canonical_json::parse(line) {
                    Err(e) => strict_error(byte_offset, &e),
                    Ok(_) => {
                        fail(format!("journal.ndjson line at byte {byte_offset} is unreadable"))
                    }
                });
            }
            summary::store(path.as_deref(), &live, journal.len());
            projector.merge(live.tally);
        }
        let state =
            projector.finish(&self.plan.contract, &self.plan.contract_id, &self.plan.archives());
        write_pretty(&self.plan.dir.join("state.json"), &state)?;
        Ok(state)
    }
}
