//! The one error type of the ledger: what an operator sees, with the upstream prefix.

use std::fmt;
use std::path::Path;

/// An operator-visible ledger failure, with the upstream exit code and prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LedgerError {
    /// `ERROR:`, exit 1.
    Failed(String),
    /// `COLLISION:`, exit 2.
    Collision(String),
    /// `REFUSED:`, exit 3 (no approval cites the live contract).
    ApprovalMissing(String),
    /// `REFUSED:`, exit 4 (completion refused).
    CompletionRefused(String),
}

impl LedgerError {
    /// The process exit code upstream uses.
    pub fn exit_code(&self) -> u8 {
        match self {
            LedgerError::Failed(_) => 1,
            LedgerError::Collision(_) => 2,
            LedgerError::ApprovalMissing(_) => 3,
            LedgerError::CompletionRefused(_) => 4,
        }
    }

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

pub(crate) fn journal_err(err: journal::Error) -> LedgerError {
    match err {
        e @ journal::Error::Collision { .. } => LedgerError::Collision(e.to_string()),
        e => fail(e.to_string()),
    }
}
