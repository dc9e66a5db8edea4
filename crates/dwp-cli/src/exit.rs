//! The process exit codes of `dwp`, in one place (the upstream helpers' codes).
//!
//! `contract`: 0 success, 1 a failed check or unreadable input, 2 a usage error. `ledger`: 0
//! ok, 1 `ERROR:`, 2 usage or `COLLISION:`, 3 `REFUSED:` (approval missing), 4 `REFUSED:`
//! (completion), 5 a refused delegation. The part-2 commands (`outcomes`, `views`, `resume`)
//! report any ledger failure other than a collision as 1; `views` reports a human edit as 5;
//! the scheduler reports a refused proposal as 10.

use std::process::ExitCode;

use dwp_ledger::LedgerError;

/// A failed check, unreadable input, or `ERROR:`.
pub(crate) const FAILED: u8 = 1;
/// A usage error (the upstream message on stdout).
pub(crate) const USAGE: u8 = 2;
/// `COLLISION:`: another writer changed the journal.
pub(crate) const COLLISION: u8 = 2;
/// `REFUSED:`: no approval cites the live contract.
pub(crate) const APPROVAL_MISSING: u8 = 3;
/// `REFUSED:`: completion refused.
pub(crate) const COMPLETION_REFUSED: u8 = 4;
/// `ledger delegate`: the delegation gate refused (recorded).
pub(crate) const DELEGATION_REFUSED: u8 = 5;
/// `views`: a human-edited view would be overwritten.
pub(crate) const HUMAN_EDIT: u8 = 5;
/// The scheduler refused: a proposal not authorized, or a contract that does not validate.
pub(crate) const SCHEDULER_REFUSED: u8 = 10;

/// A usage error: the upstream message on stdout, exit 2.
pub(crate) fn usage(msg: &str) -> ExitCode {
    println!("{msg}");
    ExitCode::from(USAGE)
}

/// The code of a `dwp ledger` failure.
pub(crate) fn ledger(err: &LedgerError) -> u8 {
    match err {
        LedgerError::Collision(_) => COLLISION,
        LedgerError::ApprovalMissing(_) => APPROVAL_MISSING,
        LedgerError::CompletionRefused(_) => COMPLETION_REFUSED,
        _ => FAILED,
    }
}

/// The code of a ledger failure in the part-2 commands: a collision, else a plain failure.
pub(crate) fn ledger_edge(err: &LedgerError) -> u8 {
    if matches!(err, LedgerError::Collision(_)) { COLLISION } else { FAILED }
}
