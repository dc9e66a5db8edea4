//! Integration tests of the `cookwala` crate.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// Key loaders and key files.
mod keys;
/// Property tests: verification never panics.
mod props;
/// The sequencer, checkpoints, witnesses, hash-only mode, forks.
mod sequencer;
/// Signing round trips, tampering, every reason code.
mod signing;
/// The standard's conformance vectors and the vectors hash.
mod vectors;
/// Wycheproof Ed25519 and ECDSA P-256 (P1363) through our raw verify primitive.
mod wycheproof_sets;

use canonical_json::Value;

pub fn json(text: &str) -> Value {
    canonical_json::parse(text.as_bytes()).unwrap()
}
