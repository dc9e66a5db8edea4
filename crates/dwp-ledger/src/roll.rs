//! `roll`: the live journal becomes an archive segment; seq continues above it.

use std::fs;
use std::path::PathBuf;

use dwp::projection::seq_of;

use crate::error::{Result, fail, io_fail};
use crate::reader::read_journal;
use crate::writer::Writer;

impl Writer {
    /// `roll`: archives the live journal; seq continues above it; re-projects.
    ///
    /// # Errors
    /// Nothing to roll, I/O.
    pub fn roll(&mut self) -> Result<PathBuf> {
        let path = self.plan.journal_path();
        if !path.exists() {
            return Err(fail("nothing to roll"));
        }
        let live = read_journal(&path)?.events;
        if live.is_empty() {
            return Err(fail("nothing to roll: the live journal is empty"));
        }
        // Divergence (DWP.md §19.10): the archive is named after the live segment's own first
        // seq, so consecutive archives never overlap.
        let first = seq_of(&live[0]);
        let last = self.last_seq();
        if last <= self.seq_floor {
            return Err(fail(format!(
                "nothing to roll: live events are all retired above seq {}",
                self.seq_floor
            )));
        }
        let name = format!("journal-archive-{first:06}-{last:06}.ndjson");
        let archive = self.plan.dir.join(&name);
        let bytes = fs::read(&path).map_err(|e| io_fail(&path, e))?;
        journal::atomic_replace(&archive, &bytes).map_err(|e| fail(e.to_string()))?;
        drop(self.journal.take());
        journal::atomic_replace(&path, b"").map_err(|e| fail(e.to_string()))?;
        self.seq_floor = last;
        self.project()?;
        Ok(archive)
    }
}
