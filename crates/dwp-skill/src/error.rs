//! What can go wrong when installing, inspecting or removing the launchers.

use std::path::PathBuf;

/// A refused or failed skill operation; the message says what to do next.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The folder is not the deepworkplan skill (the reason says which sign is missing).
    #[error("{dir} is not the deepworkplan skill: {why}")]
    NotTheSkill {
        /// The folder given.
        dir: PathBuf,
        /// What is missing or wrong.
        why: String,
    },
    /// Launchers are already installed (a manifest exists, or a helper is a launcher).
    #[error("{0}")]
    AlreadyInstalled(String),
    /// Nothing is installed in this folder.
    #[error("no dwp launchers are installed in {0} (nothing to remove)")]
    NotInstalled(PathBuf),
    /// Going on would lose bytes someone wrote (the files are named).
    #[error("{0}")]
    WouldLoseEdits(String),
    /// The backup does not hold what the manifest says (it was changed or removed).
    #[error("{0}")]
    BackupDamaged(String),
    /// The manifest cannot be read.
    #[error("{path}: unreadable install manifest: {why}")]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// The parse or read error.
        why: String,
    },
    /// A file operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A durable write failed (the journal crate's atomic replace).
    #[error(transparent)]
    Write(#[from] journal::Error),
}

impl SkillError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> SkillError {
        SkillError::Io { path: path.into(), source }
    }
}
