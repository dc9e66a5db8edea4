//! `project`: `state.json` from the journal, written atomically
//! ([`journal::atomic_replace`]: temp file, fsync, rename, directory fsync).

use std::fs;
use std::io::Read;

use canonical_json::Value;
use dwp::projection;

use crate::error::{Result, fail, io_fail};
use crate::files::write_pretty;
use crate::writer::Writer;

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

    /// `project` for a writer opened with [`Load::Tail`]: streams archived + live events through
    /// a [`projection::Projector`] instead of holding them, then writes `state.json` atomically.
    /// The bytes are those of [`Writer::project`] on a fully loaded writer.
    ///
    /// # Errors
    /// I/O; a line that is not strict JSON.
    pub fn project_streaming(&self) -> Result<Value> {
        use std::io::BufRead;
        let mut projector = projection::Projector::new();
        for event in self.plan.archived_events()? {
            projector.feed(&event);
        }
        if let Some(journal) = &self.journal {
            let path = self.plan.journal_path();
            let file = fs::File::open(&path).map_err(|e| io_fail(&path, e))?;
            let mut reader = std::io::BufReader::with_capacity(1 << 16, file.take(journal.len()));
            let mut line = Vec::new();
            let mut at = 0usize;
            loop {
                line.clear();
                let n = reader.read_until(b'\n', &mut line).map_err(|e| io_fail(&path, e))?;
                if n == 0 {
                    break;
                }
                if !line.iter().all(u8::is_ascii_whitespace) {
                    let event = canonical_json::parse(&line).map_err(|e| {
                        fail(format!(
                            "journal.ndjson line at byte {at} is not strict JSON ({e}) — no write was made"
                        ))
                    })?;
                    projector.feed(&event);
                }
                at += n;
            }
        }
        let state =
            projector.finish(&self.plan.contract, &self.plan.contract_id, &self.plan.archives());
        write_pretty(&self.plan.dir.join("state.json"), &state)?;
        Ok(state)
    }
}
