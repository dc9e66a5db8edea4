//! Relayed documents (RFC-0006, the `federation` profile).
//!
//! Hubs mirror each other's recalls and catalogs. A relayed document is trusted because of its
//! issuer's signature, never because of the relay: the relay's provenance travels outside the
//! signed body (in the feed entry), the body stays byte for byte the issuer's, and a relay that
//! re-signs or edits it proves nothing.
//!
//! [`verify_relayed`] is the Core signature check plus one federation rule: when the document
//! names its `issuer` and the signing KeyRecord names its `actor`, they must be the same, so a
//! mirror's key that a verifier happens to trust cannot stand in for the issuer's
//! (`not_issuer_key`). Relay metadata (`x-relay`) left inside a body is not stripped: it changes
//! the hash, and the signature then fails, as it should.

use canonical_json::Value;

use crate::keys::KeySet;
use crate::signature::{Reason, SignedKind, verify_signature};

/// Why a relayed document is not the issuer's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelayReason {
    /// The Core signature check's reason (`Ok` when it holds).
    Signature(Reason),
    /// The signature verifies, but with a key whose actor is not the document's issuer.
    NotIssuerKey,
}

impl RelayReason {
    /// The reason code.
    pub fn as_str(self) -> &'static str {
        match self {
            RelayReason::Signature(r) => r.as_str(),
            RelayReason::NotIssuerKey => "not_issuer_key",
        }
    }

    /// True when the document is the issuer's.
    pub fn is_ok(self) -> bool {
        self == RelayReason::Signature(Reason::Ok)
    }
}

/// Verifies a document received through another hub against its issuer's keys.
pub fn verify_relayed(document: &Value, keys: &KeySet) -> RelayReason {
    let verdict = verify_signature(document, keys, SignedKind::Document);
    if !verdict.is_ok() {
        return RelayReason::Signature(verdict.reason);
    }
    let issuer = document.get("issuer").and_then(Value::as_str);
    let actor = document
        .get("signature")
        .and_then(|s| s.get("kid"))
        .and_then(Value::as_str)
        .and_then(|kid| keys.find(kid))
        .and_then(|record| record.actor.as_deref());
    match (issuer, actor) {
        (Some(issuer), Some(actor)) if issuer != actor => RelayReason::NotIssuerKey,
        _ => RelayReason::Signature(Reason::Ok),
    }
}
