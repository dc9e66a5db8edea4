//! Integration tests of the `cookwala` crate.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// Strict document types against the standard's schemas.
mod documents;
/// The dry run against the upstream sample bundle; the built-in limits pack.
mod dryrun;
/// Worst shapes at the documented maxima: linear work (issue 22).
mod hostile;
/// Key loaders and key files.
mod keys;
/// Property tests: verification never panics.
mod props;
/// Units, envelopes, sensor trust, prechecks, bad input.
mod rules;
/// The sequencer, checkpoints, witnesses, hash-only mode, forks.
mod sequencer;
/// Signing round trips, tampering, every reason code.
mod signing;
/// The standard's conformance vectors and the vectors hash.
mod vectors;
/// The built-in vocabulary against the standard's files; deprecation.
mod vocab;
/// Wycheproof Ed25519 and ECDSA P-256 (P1363) through our raw verify primitive.
mod wycheproof_sets;

use canonical_json::Value;

pub fn json(text: &str) -> Value {
    canonical_json::parse(text.as_bytes()).unwrap()
}

/// Arbitrary JSON values (shared with the property tests of other modules).
pub fn props_value() -> impl proptest::strategy::Strategy<Value = Value> {
    props::value()
}
