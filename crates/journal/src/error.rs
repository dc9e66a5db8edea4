//! The crate's error type.

use std::io;
use std::path::{Path, PathBuf};

/// Everything that can go wrong in this crate.
///
/// Every variant names the file or directory it concerns; see
/// [`Error::path`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O operation on `path` failed.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file or directory the operation was about.
        path: PathBuf,
        /// The underlying operating-system error (shown in the message, so it is not also
        /// exposed as `source()`, which would print it twice in error chains).
        error: io::Error,
    },

    /// Another open [`Journal`](crate::Journal), in this or another
    /// process, holds the exclusive lock on the journal file.
    #[error("{}: journal is locked by another writer", path.display())]
    Locked {
        /// The journal file.
        path: PathBuf,
    },

    /// The journal's size is not what this writer expects: somebody wrote
    /// to (or truncated) the file without holding the lock. Nothing was
    /// written.
    #[error(
        "journal changed size behind this writer (expected {expected} bytes, found {found}) — another writer bypassed the lock; this session refuses to append rather than interleave histories"
    )]
    Collision {
        /// The journal file.
        path: PathBuf,
        /// The size this writer last left the file at.
        expected: u64,
        /// The size the file actually has.
        found: u64,
    },

    /// [`Journal::append`](crate::Journal::append) refused a line that
    /// the scanner would not accept as a record. Nothing was written.
    #[error("{}: refusing to append an invalid line: {reason}", path.display())]
    InvalidLine {
        /// The journal file.
        path: PathBuf,
        /// Why the line was refused.
        reason: &'static str,
    },

    /// An earlier fsync failed, so the writer can no longer tell what is
    /// durable; reopen the journal to rescan and repair it.
    #[error(
        "{}: journal writer is unusable after a failed fsync; reopen the journal to rescan it",
        path.display()
    )]
    Poisoned {
        /// The journal file.
        path: PathBuf,
    },

    /// A line that is not a record and not a torn final line ([`Damage::Corrupt`]): no writer
    /// cuts it, because every line after it may be a valid record. Nothing was modified.
    ///
    /// [`Damage::Corrupt`]: crate::Damage::Corrupt
    #[error(
        "{}: line {line} (byte {byte_offset}) is damaged: {cause}; it is not the torn final line an interrupted append leaves, so nothing was cut and nothing was written",
        path.display()
    )]
    Damaged {
        /// The journal file.
        path: PathBuf,
        /// The damaged line's 1-based line number.
        line: u64,
        /// Where the damaged line starts.
        byte_offset: u64,
        /// Why it is not a record ([`Damage::cause`](crate::Damage::cause)).
        cause: &'static str,
    },

    /// [`Journal::last_record`](crate::Journal::last_record) met a final line longer than
    /// `limit` bytes and refused to read it.
    #[error("{}: the last line is longer than {limit} bytes; refusing to read it", path.display())]
    LineTooLong {
        /// The journal file.
        path: PathBuf,
        /// The limit ([`MAX_LINE`](crate::MAX_LINE)).
        limit: u64,
    },

    /// A live writer holds the cooperative plan lock directory.
    #[error(
        "another writer holds the plan lock: {identity} (started {started_ts}); use --force only after verifying that writer is dead"
    )]
    LockHeld {
        /// The lock directory.
        path: PathBuf,
        /// The holder's identity from `owner.json`, or a placeholder when
        /// it cannot be read.
        identity: String,
        /// The holder's `ts` from `owner.json`, or the directory's mtime
        /// when `owner.json` cannot be read.
        started_ts: String,
    },

    /// The lock directory kept reappearing while stale locks were broken.
    #[error("{}: could not acquire the plan lock", path.display())]
    LockContended {
        /// The lock directory.
        path: PathBuf,
    },

    /// At release time the lock directory no longer carried this holder's
    /// `owner.json` (it was broken and possibly retaken); it was left alone.
    #[error("{}: plan lock was taken over by another writer before release", path.display())]
    LockLost {
        /// The lock directory.
        path: PathBuf,
    },
}

impl Error {
    /// Wraps an I/O error with the path it concerns.
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io { path: path.into(), error: source }
    }

    /// The file or directory the error concerns.
    pub fn path(&self) -> &Path {
        match self {
            Self::Io { path, .. }
            | Self::Locked { path }
            | Self::Collision { path, .. }
            | Self::InvalidLine { path, .. }
            | Self::Poisoned { path }
            | Self::Damaged { path, .. }
            | Self::LineTooLong { path, .. }
            | Self::LockHeld { path, .. }
            | Self::LockContended { path }
            | Self::LockLost { path } => path,
        }
    }

    /// True for an I/O error whose kind is [`io::ErrorKind::NotFound`],
    /// e.g. reading a journal that was never created.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Io { error, .. } if error.kind() == io::ErrorKind::NotFound)
    }
}

/// Attaches a path to `io::Result`s.
pub(crate) trait IoContext<T> {
    /// Converts the error into [`Error::Io`] for `path`.
    fn at(self, path: &Path) -> Result<T, Error>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn at(self, path: &Path) -> Result<T, Error> {
        self.map_err(|source| Error::io(path, source))
    }
}
