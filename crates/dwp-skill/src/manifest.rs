//! The record of one install, `<skill>/.dwp-skill/manifest.json`.
//!
//! It is what `status` and `remove` compare the folder with: for each replaced helper, the
//! sha256 of the original (its backup must still hash to it) and of the launcher written in its
//! place, and the original's file mode. A format string versions it; unknown fields are kept
//! out on purpose (a manifest is only ever written by `install`).

use serde::{Deserialize, Serialize};

/// The manifest's format identifier.
pub const FORMAT: &str = "dwp-skill-install/1";

/// What `install` did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// [`FORMAT`].
    pub format: String,
    /// The skill's version at install time (`SKILL.md`).
    pub skill_version: String,
    /// The `dwp` the launchers run (absolute path).
    pub dwp_bin: String,
    /// The version of the `dwp` that installed them.
    pub dwp_version: String,
    /// The replaced helpers, in name order.
    pub replaced: Vec<Replaced>,
    /// The helpers `dwp` does not cover, left as they were.
    pub kept: Vec<String>,
}

/// One helper that a launcher replaced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replaced {
    /// Its file name in `shared/`.
    pub name: String,
    /// The `dwp` subcommand the launcher runs.
    pub runs: String,
    /// `sha256:<hex>` of the original (and of its backup).
    pub original_sha256: String,
    /// `sha256:<hex>` of the launcher as written.
    pub launcher_sha256: String,
    /// The original's permission bits (restored with it).
    pub mode: u32,
}

/// `sha256:<hex>` of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", canonical_json::digest::sha256_hex(bytes))
}
