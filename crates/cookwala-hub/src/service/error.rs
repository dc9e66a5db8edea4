//! What a service operation can fail with, in the service's own words.
//!
//! The service does not speak HTTP: it says *what* went wrong (no such execution, a reused
//! idempotency key, a stale seq, the storage failed), and `http/problem.rs` alone turns that
//! into a problem document with its status, `type`, title and detail. So the mapping is in one
//! place, a new transport (the next issue's device processes) maps the same enum its own way,
//! and a test of the service can match on a variant instead of a status code and a slug.

use crate::storage::StorageError;

/// A service operation's failure.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// No execution with this id is stored (or live).
    NoExecution {
        /// The execution id asked for.
        id: String,
    },
    /// The execution is on another device than the one the request named.
    OnOtherDevice {
        /// The execution id.
        id: String,
        /// The device the request named.
        device: String,
        /// The device the execution is on.
        other: String,
    },
    /// A handed-over request names a device this replica does not serve.
    DeviceNotServed,
    /// An execution with this id exists already (stored, live, or being created).
    ExecutionExists {
        /// The execution id.
        id: String,
    },
    /// A recall with this id is published already, with other content.
    RecallExists {
        /// The recall id.
        id: String,
    },
    /// A resume of an execution that is not in a state that resumes.
    NotResumable {
        /// The state it is in.
        state: String,
    },
    /// The simulator refused the transition (its own words).
    WrongState(String),
    /// `If-Match` names another seq than the current one.
    StaleSeq {
        /// The current seq.
        seq: i64,
    },
    /// A resume without the seq the caller saw (`If-Match`).
    IfMatchRequired,
    /// The idempotency key was used before with a different request.
    KeyReused,
    /// Only a person (an owner or cook token) may do this.
    OnlyAPerson {
        /// The token's name.
        name: String,
        /// The token's role.
        role: String,
        /// What was asked (`confirm a human step (...)`).
        what: String,
    },
    /// The request cannot be admitted as sent (admission's own words).
    InvalidRequest(String),
    /// A handed-over command the receiving replica cannot read.
    BadCommand(String),
    /// The replica running the execution did not answer a handed-over request in time.
    ReplicaUnavailable {
        /// The execution id.
        id: String,
    },
    /// The storage failed, or refused a write (a conflict, a busy device, a fenced run).
    Storage(StorageError),
    /// Something that should not happen (a stored document that does not parse, a task that
    /// panicked); the cause is for the log, never for the client.
    Internal(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::NoExecution { id } => write!(f, "no execution {id}"),
            Error::OnOtherDevice { id, device, other } => {
                write!(f, "execution {id} is not on device {device} (it is on {other})")
            }
            Error::DeviceNotServed => f.write_str("the device is not served by this replica"),
            Error::ExecutionExists { id } => write!(f, "execution {id} already exists"),
            Error::RecallExists { id } => write!(f, "recall {id} is already published"),
            Error::NotResumable { state } => {
                write!(f, "cannot resume an execution in state {state}")
            }
            Error::WrongState(why) | Error::InvalidRequest(why) | Error::BadCommand(why) => {
                f.write_str(why)
            }
            Error::StaleSeq { seq } => write!(f, "seq is {seq}"),
            Error::IfMatchRequired => f.write_str("resume needs If-Match"),
            Error::KeyReused => f.write_str("idempotency key reused with a different request"),
            Error::OnlyAPerson { what, .. } => write!(f, "only a person may {what}"),
            Error::ReplicaUnavailable { id } => {
                write!(f, "the replica running execution {id} did not answer")
            }
            Error::Storage(e) => write!(f, "storage: {e}"),
            Error::Internal(cause) => write!(f, "internal error: {cause}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<StorageError> for Error {
    fn from(e: StorageError) -> Error {
        Error::Storage(e)
    }
}

impl From<tokio::task::JoinError> for Error {
    fn from(e: tokio::task::JoinError) -> Error {
        Error::Internal(e.to_string())
    }
}

impl Error {
    /// An internal failure with its cause (for the log).
    pub(crate) fn internal(cause: &dyn std::fmt::Display) -> Error {
        Error::Internal(cause.to_string())
    }
}
