//! Puts `dwp` behind the deepworkplan skill's helper scripts, and takes it out again.
//!
//! People who run Deep Work Plans rarely call `dwp` themselves: their agent follows the
//! skill's instructions, which run `python3 <skill>/shared/ledger.py …`, `scheduler.py`,
//! `contract_v6.py` and the rest. This crate makes the switch to `dwp` a file operation on the
//! skill folder that can be undone exactly:
//!
//! * [`identify`] decides whether a folder is the skill (its `SKILL.md` names `deepworkplan` and
//!   a version, and `shared/` holds the records-layer helpers) — a pure function over what was
//!   read;
//! * [`launcher`] writes the small Python file that takes a helper's place: run as a script it
//!   `exec`s `dwp <subcommand>` with the same arguments (so the working directory, the
//!   standard streams and the exit code are `dwp`'s own), and imported as a module it loads
//!   the original helper from the backup, so a test or tool that imports a helper still gets
//!   upstream's code;
//! * [`manifest`] is the record of an install: for each helper, the digest of the original,
//!   of the launcher written in its place, and its file mode;
//! * [`ops`] does the I/O: [`install`], [`status`] and [`remove`].
//!
//! # The one rule: never lose a byte the user wrote
//!
//! The originals are copied into `<skill>/.dwp-skill/originals/` and the manifest written, all
//! synced and renamed into place in one step, before any helper is touched. `remove` puts each
//! original back only where the file is still exactly the launcher it wrote (or missing); a
//! helper whose bytes are neither the launcher nor the original was changed since — an edit by
//! hand, or a newer skill release — and `remove` refuses before it changes anything, naming the
//! file. `install` refuses a folder that already holds an install (or a launcher without its
//! backup), so a second install can never back a launcher up as if it were the original.

mod error;
pub mod identify;
pub mod launcher;
pub mod manifest;
pub mod ops;

pub use error::SkillError;
pub use identify::{COVERED, Helper, SkillInfo};
pub use manifest::Manifest;
pub use ops::{HelperState, InstallReport, RemoveReport, StatusReport, install, remove, status};

/// The folder, inside the skill, that holds the backups and the manifest.
pub const BACKUP_DIR: &str = ".dwp-skill";

#[cfg(test)]
mod tests;
