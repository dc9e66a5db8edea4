//! Core 0.2.1 signatures (RFC-0012): signing headers, signing, and the one verification path.
//!
//! A signature covers the JCS bytes of the signing header
//! `{"alg", "hash", "kid", "kind"?, "signedAt"}`, where `hash` is the document, event or
//! checkpoint hash and `kind` is present only when truthy (open point 2: we follow the
//! reference). Events sign with kind `Event`, checkpoints with `Checkpoint`, other documents with
//! their own `kind` field ([`SignedKind`]).
//!
//! [`verify_signature`] runs the reference's ordered checks (COOKWALA.md §4.2); the first failure
//! wins. Differences from the reference, all of which fail closed:
//! - `ES256` is verified (P-256, SHA-256, signature `r‖s`, public key a SEC1 point, high-S
//!   accepted); `alg_not_supported_by_reference` is reported only for other algorithms.
//! - A `signature` that is not an object counts as `unsigned` (the reference would crash).
//! - A document that cannot be written as JCS (an integer beyond 2^53 − 1) has no hash, so its
//!   signature is `bad_signature` (the reference would crash).
//! - Base64url is decoded strictly (see [`crate::b64::decode`]).
//!
//! Comparisons (open point 12): a key is unusable before `validFrom`, usable exactly at
//! `validTo`, and revoked from `revokedAt` itself on (`signedAt >= revokedAt`).

use canonical_json::digest::{document_hash, jcs_hash_without};
use canonical_json::{Map, Value, WriteError, write_jcs, write_jcs_str};

use crate::b64;
pub(crate) use crate::envelope::truthy;
use crate::keys::{Alg, KeyRecord, KeySet, SigningKey};
use crate::time::{Instant, parse_timestamp};

/// The top-level fields a mission event hash leaves out.
pub const EVENT_HASH_EXCLUDES: [&str; 3] = ["hash", "signature", "proposedBy"];
/// The top-level fields a mission checkpoint hash leaves out.
pub const CHECKPOINT_HASH_EXCLUDES: [&str; 2] = ["signature", "witnesses"];

/// The hash of a MissionEvent (also `crate::mission::event_hash`).
///
/// # Errors
/// When the event cannot be written as JCS.
pub fn event_hash(event: &Value) -> Result<String, WriteError> {
    jcs_hash_without(event, &EVENT_HASH_EXCLUDES)
}

/// The hash of a Checkpoint (also `crate::mission::checkpoint_hash`).
///
/// # Errors
/// When the checkpoint cannot be written as JCS.
pub fn checkpoint_hash(checkpoint: &Value) -> Result<String, WriteError> {
    jcs_hash_without(checkpoint, &CHECKPOINT_HASH_EXCLUDES)
}

/// What is being signed, which decides the hash and the header's `kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SignedKind {
    /// A document: document hash; `kind` = the document's `kind` when truthy.
    Document,
    /// A mission log event: event hash (also drops `proposedBy`); `kind` = `Event`.
    Event,
    /// A mission checkpoint: hash without `signature` and `witnesses`; `kind` = `Checkpoint`.
    Checkpoint,
}

impl SignedKind {
    /// The hash this kind signs over.
    ///
    /// # Errors
    /// When the document cannot be written as JCS.
    pub fn hash(self, doc: &Value) -> Result<String, WriteError> {
        match self {
            SignedKind::Document => document_hash(doc),
            SignedKind::Event => event_hash(doc),
            SignedKind::Checkpoint => checkpoint_hash(doc),
        }
    }

    /// The header `kind` for `doc` (`None` when it is left out).
    pub fn header_kind(self, doc: &Value) -> Option<Value> {
        match self {
            SignedKind::Document => doc.get("kind").filter(|k| truthy(k)).cloned(),
            SignedKind::Event => Some(Value::from("Event")),
            SignedKind::Checkpoint => Some(Value::from("Checkpoint")),
        }
    }
}

/// The outcome of a verification (COOKWALA.md §4.2), in check order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// The signature verifies.
    Ok,
    /// No signature.
    Unsigned,
    /// No `signedAt`.
    UnsignedTime,
    /// No KeyRecord with the signature's `kid`.
    UnknownKey,
    /// The record's `alg` differs from the signature's.
    AlgMismatch,
    /// An algorithm other than `EdDSA` and `ES256`.
    AlgNotSupportedByReference,
    /// `signedAt` or a key date is not a valid timestamp.
    InvalidTimestamp,
    /// `signedAt` before `validFrom` or after `validTo`.
    KeyNotValidAtSigningTime,
    /// `signedAt` at or after `revokedAt`.
    KeyRevoked,
    /// The cryptographic check fails (or key / signature bytes are malformed).
    BadSignature,
}

impl Reason {
    /// The wire reason code.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Ok => "ok",
            Reason::Unsigned => "unsigned",
            Reason::UnsignedTime => "unsigned_time",
            Reason::UnknownKey => "unknown_key",
            Reason::AlgMismatch => "alg_mismatch",
            Reason::AlgNotSupportedByReference => "alg_not_supported_by_reference",
            Reason::InvalidTimestamp => "invalid_timestamp",
            Reason::KeyNotValidAtSigningTime => "key_not_valid_at_signing_time",
            Reason::KeyRevoked => "key_revoked",
            Reason::BadSignature => "bad_signature",
        }
    }

    /// True for [`Reason::Ok`].
    pub fn is_ok(self) -> bool {
        self == Reason::Ok
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result of [`verify_signature`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Verdict {
    /// Why it passed or failed.
    pub reason: Reason,
}

impl Verdict {
    /// True when the signature verifies.
    pub fn is_ok(self) -> bool {
        self.reason.is_ok()
    }
}

/// Signing failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SignError {
    /// The document (or header) cannot be written as JCS.
    #[error("cannot canonicalise: {0}")]
    Canonical(#[from] WriteError),
    /// `signedAt` is not a valid timestamp.
    #[error("signedAt `{0}` is not a valid timestamp")]
    SignedAt(String),
    /// [`attach`] needs an object.
    #[error("only a json object can carry a signature")]
    NotAnObject,
}

/// The JCS bytes of the signing header — what a signature covers.
///
/// # Errors
/// When the header cannot be written as JCS (only a non-JSON-safe `kind` could cause this).
pub fn signing_input(
    hash: &str,
    kid: &str,
    alg: &str,
    signed_at: &str,
    kind: Option<&Value>,
) -> Result<Vec<u8>, WriteError> {
    // The header's members written in place, in JCS key order (alg < hash < kid < kind <
    // signedAt, ASCII keys): no map is built for five members on every verification.
    let mut out = Vec::with_capacity(96 + alg.len() + hash.len() + kid.len() + signed_at.len());
    out.extend_from_slice(b"{\"alg\":");
    write_jcs_str(alg, &mut out);
    out.extend_from_slice(b",\"hash\":");
    write_jcs_str(hash, &mut out);
    out.extend_from_slice(b",\"kid\":");
    write_jcs_str(kid, &mut out);
    if let Some(kind) = kind.filter(|k| truthy(k)) {
        out.extend_from_slice(b",\"kind\":");
        write_jcs(kind, &mut out)?;
    }
    out.extend_from_slice(b",\"signedAt\":");
    write_jcs_str(signed_at, &mut out);
    out.push(b'}');
    Ok(out)
}

/// Signs a hash: returns the Signature object `{alg, kid, sig, signedAt}`.
///
/// # Errors
/// [`SignError::SignedAt`] for an invalid `signed_at`.
pub fn sign_hash(
    hash: &str,
    key: &SigningKey,
    kid: &str,
    signed_at: &str,
    kind: Option<&Value>,
) -> Result<Value, SignError> {
    parse_timestamp(signed_at).map_err(|_| SignError::SignedAt(signed_at.to_owned()))?;
    let alg = key.alg().as_str();
    let input = signing_input(hash, kid, alg, signed_at, kind)?;
    let mut sig = Map::new();
    sig.insert("alg".into(), alg.into());
    sig.insert("kid".into(), kid.into());
    sig.insert("sig".into(), b64::encode(&key.sign_raw(&input)).into());
    sig.insert("signedAt".into(), signed_at.into());
    Ok(Value::Object(sig))
}

/// Signs `doc` as `kind`: returns the Signature object.
///
/// # Errors
/// [`SignError`] for an invalid `signed_at` or a document that cannot be canonicalised.
pub fn sign(
    doc: &Value,
    key: &SigningKey,
    kid: &str,
    signed_at: &str,
    kind: SignedKind,
) -> Result<Value, SignError> {
    let hash = kind.hash(doc)?;
    sign_hash(&hash, key, kid, signed_at, kind.header_kind(doc).as_ref())
}

/// Returns `doc` with its `signature` set (replacing any earlier one).
///
/// # Errors
/// As [`sign`], plus [`SignError::NotAnObject`].
pub fn attach(
    doc: &Value,
    key: &SigningKey,
    kid: &str,
    signed_at: &str,
    kind: SignedKind,
) -> Result<Value, SignError> {
    let signature = sign(doc, key, kid, signed_at, kind)?;
    let mut out = doc.clone();
    let map = out.as_object_mut().ok_or(SignError::NotAnObject)?;
    map.insert("signature".into(), signature);
    Ok(out)
}

/// Verifies `doc["signature"]` as `kind` against `keys` (the current time plays no role).
pub fn verify_signature(doc: &Value, keys: &KeySet, kind: SignedKind) -> Verdict {
    let hash = kind.hash(doc).ok();
    let header_kind = kind.header_kind(doc);
    verify_inner(hash.as_deref(), doc.get("signature"), keys, header_kind.as_ref())
}

/// Verifies a detached Signature object over a known hash.
pub fn verify_hash(
    hash: &str,
    signature: Option<&Value>,
    keys: &KeySet,
    kind: Option<&Value>,
) -> Verdict {
    verify_inner(Some(hash), signature, keys, kind)
}

/// `hash` is `None` when the signed object has no canonical form.
pub(crate) fn verify_inner(
    hash: Option<&str>,
    signature: Option<&Value>,
    keys: &KeySet,
    kind: Option<&Value>,
) -> Verdict {
    Verdict { reason: check(hash, signature, keys, kind) }
}

fn check(
    hash: Option<&str>,
    signature: Option<&Value>,
    keys: &KeySet,
    kind: Option<&Value>,
) -> Reason {
    // 1. unsigned (missing, falsy, or not an object).
    let Some(sig) = signature.filter(|s| truthy(s)).and_then(Value::as_object) else {
        return Reason::Unsigned;
    };
    // 2. unsigned_time.
    let Some(signed_at) = sig.get("signedAt").filter(|s| truthy(s)) else {
        return Reason::UnsignedTime;
    };
    // 3. unknown_key: the first record with an equal kid.
    let Some(kid) = sig.get("kid").and_then(Value::as_str) else {
        return Reason::UnknownKey;
    };
    let Some((record, ed25519)) = keys.find_with_ed25519(kid) else {
        return Reason::UnknownKey;
    };
    // 4. alg_mismatch.
    let Some(alg) = sig.get("alg").and_then(Value::as_str).filter(|a| *a == record.alg.as_str())
    else {
        return Reason::AlgMismatch;
    };
    // 5. algorithms we cannot verify.
    if !record.alg.is_supported() {
        return Reason::AlgNotSupportedByReference;
    }
    // 6. signedAt must parse.
    let Some(signed_at) = signed_at.as_str() else {
        return Reason::InvalidTimestamp;
    };
    let Ok(when) = parse_timestamp(signed_at) else {
        return Reason::InvalidTimestamp;
    };
    // 7–9. validity window and revocation, key dates parsed lazily in the reference's order.
    if let Err(reason) = check_window(record, when) {
        return reason;
    }
    // 10. the cryptographic check.
    let (Some(hash), Some(sig_text)) = (hash, sig.get("sig").and_then(Value::as_str)) else {
        return Reason::BadSignature;
    };
    let Ok(input) = signing_input(hash, kid, alg, signed_at, kind) else {
        return Reason::BadSignature;
    };
    // Ed25519: the key set decoded the public key once; the rest is `verify_raw`'s check.
    if record.alg == Alg::EdDsa {
        let Some(key) = ed25519 else { return Reason::BadSignature };
        let Ok(sig) = b64::decode(sig_text) else { return Reason::BadSignature };
        let Ok(sig) = ed25519_dalek::Signature::from_slice(&sig) else {
            return Reason::BadSignature;
        };
        return if key.verify_strict(&input, &sig).is_ok() {
            Reason::Ok
        } else {
            Reason::BadSignature
        };
    }
    let (Ok(public), Ok(sig_bytes)) = (b64::decode(&record.public_key), b64::decode(sig_text))
    else {
        return Reason::BadSignature;
    };
    if verify_raw(&record.alg, &public, &input, &sig_bytes) {
        Reason::Ok
    } else {
        Reason::BadSignature
    }
}

fn check_window(record: &KeyRecord, when: Instant) -> Result<(), Reason> {
    let parse = |text: &str| parse_timestamp(text).map_err(|_| Reason::InvalidTimestamp);
    let valid_from = record.valid_from.as_deref().ok_or(Reason::InvalidTimestamp)?;
    if when < parse(valid_from)? {
        return Err(Reason::KeyNotValidAtSigningTime);
    }
    if let Some(valid_to) = record.valid_to.as_deref().filter(|s| !s.is_empty())
        && when > parse(valid_to)?
    {
        return Err(Reason::KeyNotValidAtSigningTime);
    }
    if let Some(revoked_at) = record.revoked_at.as_deref().filter(|s| !s.is_empty())
        && when >= parse(revoked_at)?
    {
        return Err(Reason::KeyRevoked);
    }
    Ok(())
}

/// Verifies raw `message` bytes against a raw public key — the cryptographic primitive.
///
/// - `EdDSA`: 32-byte key, 64-byte signature, `verify_strict` (rejects small-order keys and
///   non-canonical encodings).
/// - `ES256`: SEC1 point (65-byte uncompressed or 33-byte compressed), 64-byte `r‖s` signature
///   over SHA-256(message); high-S signatures are accepted.
/// - Any other algorithm: `false`.
pub fn verify_raw(alg: &Alg, public_key: &[u8], message: &[u8], signature: &[u8]) -> bool {
    match alg {
        Alg::EdDsa => {
            let Ok(public) = <&[u8; 32]>::try_from(public_key) else {
                return false;
            };
            let Ok(key) = ed25519_dalek::VerifyingKey::from_bytes(public) else {
                return false;
            };
            let Ok(sig) = ed25519_dalek::Signature::from_slice(signature) else {
                return false;
            };
            key.verify_strict(message, &sig).is_ok()
        }
        Alg::Es256 => {
            use p256::ecdsa::signature::Verifier as _;
            if public_key.len() != 65 && public_key.len() != 33 {
                return false;
            }
            let Ok(key) = p256::ecdsa::VerifyingKey::from_sec1_bytes(public_key) else {
                return false;
            };
            let Ok(sig) = p256::ecdsa::Signature::from_slice(signature) else {
                return false;
            };
            key.verify(message, &sig).is_ok()
        }
        Alg::Other(_) => false,
    }
}
