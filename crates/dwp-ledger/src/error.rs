//! The one error type of the ledger: what an operator sees, with the upstream prefix.

use std::fmt;
use std::path::Path;

/// An operator-visible ledger failure, with the upstream prefix (the exit codes are the
/// binary's: `dwp-cli`'s `exit` module).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LedgerError {
    /// `ERROR:`.
    Failed(String),
    /// `COLLISION:`: the journal changed behind this writer.
    Collision(String),
    /// `REFUSED:`: no approval cites the live contract.
    ApprovalMissing(String),
    /// `REFUSED:`: completion refused.
    CompletionRefused(String),
}

impl LedgerError {
    /// The output prefix (`ERROR`, `COLLISION`, `REFUSED`).
    pub fn prefix(&self) -> &'static str {
        match self {
            LedgerError::Failed(_) => "ERROR",
            LedgerError::Collision(_) => "COLLISION",
            LedgerError::ApprovalMissing(_) | LedgerError::CompletionRefused(_) => "REFUSED",
        }
    }
}

impl fmt::Display for LedgerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LedgerError::Failed(m)
            | LedgerError::Collision(m)
            | LedgerError::ApprovalMissing(m)
            | LedgerError::CompletionRefused(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for LedgerError {}

pub(crate) type Result<T> = std::result::Result<T, LedgerError>;

pub(crate) fn fail(msg: impl Into<String>) -> LedgerError {
    LedgerError::Failed(msg.into())
}

pub(crate) fn io_fail(path: &Path, err: impl fmt::Display) -> LedgerError {
    fail(format!("{}: {err}", path.display()))
}

impl From<journal::Error> for LedgerError {
    fn from(err: journal::Error) -> LedgerError {
        journal_err(err)
    }
}

pub(crate) fn journal_err(err: journal::Error) -> LedgerError {
    match err {
        e @ journal::Error::Collision { .. } => LedgerError::Collision(e.to_string()),
        e => fail(e.to_string()),
    }
}
