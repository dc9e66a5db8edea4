//! Certifications (RFC-0010, the `certifications` profile).
//!
//! A Certification is a detached, signed statement by an authority (a halal board, a
//! plant-based society) that one revision of a recipe meets a standard. It names its subject by
//! hash, so a new revision needs a new certification, and it can be re-issued: within one
//! authority and scheme the newest document wins ([`current`]).
//!
//! [`verify`] checks, in the profile's order (COOKWALA.md §4.3), the first failure winning:
//! `not_a_certification`; the signature reasons of Core (`unsigned`, `unknown_key`,
//! `bad_signature`, `key_revoked`, …) against the authority's KeyRecords; `subject_mismatch`
//! when the verifier holds another subject hash; then at `now`: `revoked` (status `revoked` and
//! `now ≥ revokedAt`, or no `revokedAt`), `suspended`, `not_yet_valid` (before `validFrom`),
//! `expired` (after `validUntil`). A date that cannot be read is `invalid_timestamp`, never an
//! open end.
//!
//! Time is a parameter: nothing here reads a clock.

use canonical_json::{Map, Value};

use crate::keys::KeySet;
use crate::signature::{Reason, SignedKind, verify_signature};
use crate::time::{Instant, parse_timestamp};

/// Why a certification does not hold (or `Ok`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CertReason {
    /// It holds.
    Ok,
    /// `kind` is not `Certification`.
    NotACertification,
    /// The signature fails with this Core reason.
    Signature(Reason),
    /// The certified subject hash is not the one the verifier holds.
    SubjectMismatch,
    /// Revoked at `now`.
    Revoked,
    /// Suspended.
    Suspended,
    /// `now` is before `validFrom`.
    NotYetValid,
    /// `now` is after `validUntil`.
    Expired,
    /// A validity or revocation date that cannot be read.
    InvalidTimestamp,
    /// Older than another valid document of the same authority and scheme (sets only).
    Superseded,
}

impl CertReason {
    /// The profile's reason code.
    pub fn as_str(self) -> &'static str {
        match self {
            CertReason::Ok => "ok",
            CertReason::NotACertification => "not_a_certification",
            CertReason::Signature(r) => r.as_str(),
            CertReason::SubjectMismatch => "subject_mismatch",
            CertReason::Revoked => "revoked",
            CertReason::Suspended => "suspended",
            CertReason::NotYetValid => "not_yet_valid",
            CertReason::Expired => "expired",
            CertReason::InvalidTimestamp => "invalid_timestamp",
            CertReason::Superseded => "superseded",
        }
    }

    /// True for [`CertReason::Ok`].
    pub fn is_ok(self) -> bool {
        self == CertReason::Ok
    }
}

/// Verifies one certification at `now`; with `subject_hash`, also that it certifies that subject.
pub fn verify(cert: &Value, keys: &KeySet, now: Instant, subject_hash: Option<&str>) -> CertReason {
    if cert.get("kind").and_then(Value::as_str) != Some("Certification") {
        return CertReason::NotACertification;
    }
    let verdict = verify_signature(cert, keys, SignedKind::Document);
    if !verdict.is_ok() {
        return CertReason::Signature(verdict.reason);
    }
    if let Some(expected) = subject_hash
        && !expected.is_empty()
        && cert.get("subject").and_then(|s| s.get("hash")).and_then(Value::as_str) != Some(expected)
    {
        return CertReason::SubjectMismatch;
    }
    match window(cert, now) {
        Ok(reason) | Err(reason) => reason,
    }
}

/// A date field: absent (or empty) is `None`, unreadable is an error.
fn date(cert: &Value, field: &str) -> Result<Option<Instant>, CertReason> {
    match cert.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(v) => v
            .as_str()
            .and_then(|s| parse_timestamp(s).ok())
            .map(Some)
            .ok_or(CertReason::InvalidTimestamp),
    }
}

fn window(cert: &Value, now: Instant) -> Result<CertReason, CertReason> {
    match cert.get("status").and_then(Value::as_str) {
        Some("revoked") => match date(cert, "revokedAt")? {
            Some(at) if now < at => {}
            _ => return Ok(CertReason::Revoked),
        },
        Some("suspended") => return Ok(CertReason::Suspended),
        _ => {}
    }
    if date(cert, "validFrom")?.is_some_and(|from| now < from) {
        return Ok(CertReason::NotYetValid);
    }
    if date(cert, "validUntil")?.is_some_and(|until| now > until) {
        return Ok(CertReason::Expired);
    }
    Ok(CertReason::Ok)
}

/// The certifications of a set that hold, and why the others do not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CurrentSet {
    /// Ids that hold, sorted.
    pub current: Vec<String>,
    /// Id → reason for the others (`superseded` for older valid documents), sorted by id.
    pub rejected: Vec<(String, CertReason)>,
}

impl CurrentSet {
    /// The profile's wire shape `{current: [ids], rejected: {id: reason}}`.
    pub fn to_value(&self) -> Value {
        let rejected: Map =
            self.rejected.iter().map(|(id, r)| (id.clone(), Value::from(r.as_str()))).collect();
        let mut m = Map::new();
        m.insert(
            "current".into(),
            Value::Array(self.current.iter().map(|id| id.as_str().into()).collect()),
        );
        m.insert("rejected".into(), Value::Object(rejected));
        Value::Object(m)
    }
}

/// Picks, per (`authority.id`, `scheme`), the valid certification with the newest `issuedAt`
/// (on a tie, the later one in the input); older valid ones are `superseded`. Several
/// authorities certifying the same subject all count.
pub fn current(
    certs: &[Value],
    keys: &KeySet,
    now: Instant,
    subject_hash: Option<&str>,
) -> CurrentSet {
    let id_of = |c: &Value| c.get("id").and_then(Value::as_str).unwrap_or("").to_owned();
    let mut rejected: Vec<(String, CertReason)> = Vec::new();
    // (authority, scheme) → valid members in input order.
    type Group<'a> = ((Option<String>, Option<String>), Vec<&'a Value>);
    let mut groups: Vec<Group<'_>> = Vec::new();
    for cert in certs {
        let reason = verify(cert, keys, now, subject_hash);
        if !reason.is_ok() {
            rejected.push((id_of(cert), reason));
            continue;
        }
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        let key = (text(cert.get("authority").and_then(|a| a.get("id"))), text(cert.get("scheme")));
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(cert),
            None => groups.push((key, vec![cert])),
        }
    }
    let mut current = Vec::new();
    for (_, mut members) in groups {
        let issued = |c: &Value| c.get("issuedAt").and_then(Value::as_str).unwrap_or("").to_owned();
        // Stable: equal issuedAt keeps input order, so the later one wins.
        members.sort_by_key(|c| issued(c));
        if let Some((newest, older)) = members.split_last() {
            current.push(id_of(newest));
            rejected.extend(older.iter().map(|c| (id_of(c), CertReason::Superseded)));
        }
    }
    current.sort();
    rejected.sort_by(|a, b| a.0.cmp(&b.0));
    rejected.dedup_by(|a, b| a.0 == b.0);
    CurrentSet { current, rejected }
}
