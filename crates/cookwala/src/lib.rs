//! Cookwala Core 0.2.1 as a pure library: integrity, vocabulary, units, documents, the dry-run and
//! refusal engine, keys, signatures, selective disclosure, mission event logs, state machines and
//! the conformance runner.
//!
//! Cookwala documents are hashed over RFC 8785 (JCS) canonical JSON and signed over a small
//! signing header (RFC-0012). Every byte this crate hashes or signs comes from
//! [`canonical_json::to_jcs`]; nothing here serialises JSON any other way for a digest.
//!
//! The main pieces:
//! - [`b64`] and [`time`]: base64url without padding, and the reference timestamp rule turned
//!   into comparable UTC [`time::Instant`]s.
//! - [`keys`]: [`keys::KeyRecord`], [`keys::KeySet`] (first matching `kid` wins; loaders for key
//!   arrays, `/.well-known/cookwala.json`, did:web documents and capabilities documents) and
//!   [`keys::SigningKey`] (Ed25519 and ES256, key files).
//! - [`signature`]: signing and the one ordered verification path shared by documents, events and
//!   checkpoints, with the reference's reason codes ([`signature::Reason`]).
//! - [`disclosure`]: salted digests of disclosed values.
//! - [`mission`]: event and checkpoint hashes, chain / checkpoint verification, fork detection,
//!   replay over the mission transition table, and a [`mission::Sequencer`] that writes signed
//!   logs (optionally `hash_only`, with erasable payloads).
//! - [`execution`]: the execution state machine.
//! - [`documents`]: strict document kinds (unknown fields rejected except `x-`, the version
//!   gate, JSON pointers in every error) and the JSON Schemas generated from them.
//! - [`vocab`]: the compiled-in vocabulary (ops and envelopes, heat levels, units, sensors) and a
//!   loader for the standard's JSON files; [`units`]: conversion, quantities, money.
//! - [`envelope`]: trace checks, ladder choice, sensor trust and plausibility; [`dryrun`]: the
//!   reference dry run; [`limits`]: the built-in default SafetyLimits pack; [`precheck`]: the
//!   executor's checks before the dry run.
//! - [`migrate`]: 0.1 → 0.2 migration; [`logs`]: execution-log privacy and dataset export.
//! - [`conformance`]: runs the standard's vector files (Core and every profile suite), computes
//!   their `vectors_hash` and checks signed ConformanceReports.
//! - The profiles, one module each: [`certification`] (RFC-0010), [`household`] (RFC-0001
//!   disclosure policy), [`federation`] (RFC-0006), [`registry`] (RFC-0002), [`signal`]
//!   (RFC-0007) and [`sms`] (RFC-0003, the humanitarian SMS grammar), with [`humanitarian`]
//!   (rule-pack checks of offers, handovers and distributions).
//!
//! **Key design decision: the upstream reference is the algorithm.** Where the standard's prose
//! is loose, the reference library (`tools/cookwala_ref.py`) decides: check order, reason
//! strings, comparison edges (a key is revoked *at* `revokedAt`, still valid *at* `validTo`) and
//! what is deliberately not checked (unsigned events in a chain, witness independence by `kid`).
//! We depart from it only to fail closed where it would crash, and to verify ES256, which it
//! lacks: `publicKey` is the base64url SEC1 point (65-byte uncompressed, 33-byte compressed
//! accepted), `sig` the base64url 64-byte `r‖s`, high-S accepted.
//!
//! **Purity.** No file I/O, no clock, no randomness: times, RNGs and storage
//! ([`mission::EventStore`], [`mission::PayloadStore`]) are passed in; the command line adapts
//! a `journal::Journal` to an [`mission::EventStore`].

pub mod admission;
pub mod b64;
pub mod certification;
pub mod conformance;
pub mod disclosure;
pub mod documents;
pub mod dryrun;
pub mod envelope;
pub mod execution;
pub mod federation;
pub mod household;
pub mod humanitarian;
pub mod keys;
pub mod limits;
pub mod logs;
pub mod migrate;
pub mod mission;
pub mod precheck;
pub mod registry;
pub mod signal;
pub mod signature;
pub mod sms;
pub mod time;
pub mod units;
pub mod vocab;

pub use keys::{Alg, KeyRecord, KeySet, SigningAlg, SigningKey};
pub use signature::{Reason, SignedKind, Verdict, attach, sign, verify_signature};

#[cfg(test)]
mod tests;
