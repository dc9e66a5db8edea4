//! Read-only access to a plan's records for the read-only helpers (scheduler, outcomes,
//! status, verify): archived + live events without taking the lock or repairing anything.

use canonical_json::Value;

use crate::error::{Result, fail};
use crate::plan::Plan;
use crate::reader::read_journal;

/// Archived + live events. A torn live tail is an error: read-only readers never repair.
///
/// # Errors
/// I/O, a corrupt archive, or a torn tail (`journal has a torn tail at byte N (…)`).
pub fn load_events(plan: &Plan) -> Result<Vec<Value>> {
    let view = read_journal(&plan.journal_path())?;
    if let Some((at, cause)) = view.torn {
        return Err(fail(format!(
            "journal has a torn tail at byte {at} ({cause}) — open the writer once to repair it \
             (any writing ledger command records the repair), then retry"
        )));
    }
    let mut events = plan.archived_events()?;
    events.extend(view.events);
    Ok(events)
}

/// [`load_events`] for a read path: archived events whole, then the live events the read paths
/// decide on ([`crate::read_compact`]), with the highest seq over all events and the sha256 of
/// the live journal bytes (`None` without a journal), from one read.
///
/// # Errors
/// As [`load_events`].
pub fn load_compact(plan: &Plan) -> Result<(Vec<Value>, i64, Option<String>)> {
    let view = crate::reader::read_compact(&plan.journal_path(), true)?;
    if let Some((at, cause)) = view.torn {
        return Err(fail(format!(
            "journal has a torn tail at byte {at} ({cause}) — open the writer once to repair it \
             (any writing ledger command records the repair), then retry"
        )));
    }
    let mut events = plan.archived_events()?;
    let last = events.iter().map(dwp::projection::seq_of).max().unwrap_or(0).max(view.last_seq);
    events.extend(view.kept);
    Ok((events, last, view.sha256))
}

/// Lowercase sha256 hex of the live journal bytes, or `None` when there is no journal.
pub fn journal_sha256(plan: &Plan) -> Option<String> {
    std::fs::read(plan.journal_path()).ok().map(|b| canonical_json::digest::sha256_hex(&b))
}

/// Lowercase sha256 hex of `state.json`, or `None` when it does not exist.
pub fn snapshot_sha256(plan: &Plan) -> Option<String> {
    crate::files::hash_file(&plan.dir.join("state.json"))
}
