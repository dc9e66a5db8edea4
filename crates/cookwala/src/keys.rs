//! Key records, key sets and signing keys.
//!
//! A [`KeyRecord`] binds a public key to a key id (`kid`) with a validity window and an optional
//! revocation. Records are kept close to the wire: the timestamps stay as text and are parsed only
//! when a signature is checked, so an unparsable key date yields the reference's
//! `invalid_timestamp` reason at the right step instead of making the whole set unloadable, and
//! an algorithm other than `EdDSA` / `ES256` loads as [`Alg::Other`] so that verification reports
//! `alg_not_supported_by_reference` as the reference does.
//!
//! A [`KeySet`] is an ordered list; lookups return the **first** record whose `kid` matches.
//! Sets load from four shapes (see [`KeySet::from_value`]):
//! - a bare array of KeyRecords;
//! - a discovery document `/.well-known/cookwala.json`, whose `keys` array holds either
//!   KeyRecords or the upstream `catalog.schema.json#/$defs/Discovery` entries
//!   `{kid, kty: "OKP", crv: "Ed25519", x, use?, expires?}`;
//! - a did:web DID document (`verificationMethod[]`);
//! - a capabilities document, under `x-cookwala-keys` (the capabilities schema has no key field
//!   and rejects unknown non-`x-` fields, so the keys ride in an extension field).
//!
//! Keys published without a validity start (JWK discovery entries, DID documents) get
//! [`UNBOUNDED_VALID_FROM`]: such a publication says "this key is current", not since when.
//! A discovery entry's `expires` becomes `validTo`.

use std::sync::OnceLock;

use canonical_json::{Map, Value};
use p256::ecdsa::signature::Signer as _;
use rand::CryptoRng;

use crate::b64;

/// The Ed25519 public key of a record, decoded as `verify_raw` decodes it.
fn decode_ed25519(alg: &Alg, public_key: &str) -> Option<ed25519_dalek::VerifyingKey> {
    if *alg != Alg::EdDsa {
        return None;
    }
    let bytes = b64::decode(public_key).ok()?;
    let bytes = <&[u8; 32]>::try_from(bytes.as_slice()).ok()?;
    ed25519_dalek::VerifyingKey::from_bytes(bytes).ok()
}

/// `validFrom` given to keys whose publication carries no validity start.
pub const UNBOUNDED_VALID_FROM: &str = "0001-01-01T00:00:00Z";

/// The `capabilities` document field that carries the device's KeyRecords.
pub const CAPABILITIES_KEYS_FIELD: &str = "x-cookwala-keys";

/// A signature algorithm name as it appears in KeyRecords and signatures.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Alg {
    /// `EdDSA`: Ed25519.
    EdDsa,
    /// `ES256`: ECDSA over P-256 with SHA-256.
    Es256,
    /// Any other name (loaded so that verification can report it).
    Other(String),
}

impl Alg {
    /// Maps a wire name to an [`Alg`].
    pub fn parse(name: &str) -> Alg {
        match name {
            "EdDSA" => Alg::EdDsa,
            "ES256" => Alg::Es256,
            other => Alg::Other(other.to_owned()),
        }
    }

    /// The wire name.
    pub fn as_str(&self) -> &str {
        match self {
            Alg::EdDsa => "EdDSA",
            Alg::Es256 => "ES256",
            Alg::Other(name) => name,
        }
    }

    /// True for the algorithms this crate verifies (`EdDSA`, `ES256`).
    pub fn is_supported(&self) -> bool {
        matches!(self, Alg::EdDsa | Alg::Es256)
    }
}

/// The algorithms a [`SigningKey`] can have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SigningAlg {
    /// Ed25519.
    EdDsa,
    /// ECDSA P-256 / SHA-256.
    Es256,
}

impl SigningAlg {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            SigningAlg::EdDsa => "EdDSA",
            SigningAlg::Es256 => "ES256",
        }
    }

    /// The signing algorithm named `name`, if supported.
    pub fn parse(name: &str) -> Option<SigningAlg> {
        match name {
            "EdDSA" => Some(SigningAlg::EdDsa),
            "ES256" => Some(SigningAlg::Es256),
            _ => None,
        }
    }
}

impl From<SigningAlg> for Alg {
    fn from(alg: SigningAlg) -> Alg {
        match alg {
            SigningAlg::EdDsa => Alg::EdDsa,
            SigningAlg::Es256 => Alg::Es256,
        }
    }
}

/// Why keys or a key file could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// A record or document is not a JSON object.
    #[error("{0}: not a json object")]
    NotAnObject(&'static str),
    /// A required field is missing.
    #[error("missing field `{0}`")]
    Missing(&'static str),
    /// A field has the wrong JSON type.
    #[error("field `{field}` must be {expected}")]
    WrongType {
        /// The field.
        field: String,
        /// The expected type.
        expected: &'static str,
    },
    /// A field that is neither known nor an `x-` extension.
    #[error("unknown field `{0}` (only x- extensions are allowed)")]
    UnknownField(String),
    /// The value is none of the key-set shapes.
    #[error(
        "not a key set: expected an array of key records, a discovery document, a did document or a capabilities document"
    )]
    NotAKeySet,
    /// A JWK or multibase key that cannot be converted.
    #[error("verification method `{id}`: {problem}")]
    BadVerificationMethod {
        /// The method's id.
        id: String,
        /// What is wrong.
        problem: &'static str,
    },
    /// A private key of the wrong length or out of range.
    #[error("invalid {0} private key")]
    PrivateKey(&'static str),
    /// A key file whose public key does not belong to its private key.
    #[error("key file public key does not match its private key")]
    PublicKeyMismatch,
    /// An algorithm a signing key cannot have.
    #[error("unsupported signing algorithm `{0}`")]
    UnsupportedAlg(String),
    /// More keys than one set may hold ([`MAX_KEYS`]).
    #[error("{0} keys: a key set holds at most {max}", max = MAX_KEYS)]
    TooManyKeys(usize),
}

/// The most keys one key set (a list, a discovery, did or capabilities document) may hold:
/// loading and checking a set costs a bounded time whoever sent it.
pub const MAX_KEYS: usize = 256;

/// The longest `publicKeyMultibase` read: a base58btc multicodec Ed25519 or compressed P-256
/// key is under 50 characters, and base58 decoding costs the square of the length.
pub const MAX_MULTIBASE_LEN: usize = 128;

fn check_count(n: usize) -> Result<(), KeyError> {
    if n > MAX_KEYS { Err(KeyError::TooManyKeys(n)) } else { Ok(()) }
}

/// A public key bound to a key id (`common.schema.json#/$defs/KeyRecord`).
#[derive(Clone, Debug, PartialEq)]
pub struct KeyRecord {
    /// Key id.
    pub kid: String,
    /// Algorithm.
    pub alg: Alg,
    /// Base64url of the raw public key (Ed25519: 32 bytes; ES256: SEC1 point, 65 or 33 bytes).
    pub public_key: String,
    /// Start of validity (timestamp text, parsed when a signature is checked). A record without
    /// one loads, but every signature it would check gets `invalid_timestamp`.
    pub valid_from: Option<String>,
    /// End of validity (inclusive).
    pub valid_to: Option<String>,
    /// Revocation time: signatures made at or after it are refused.
    pub revoked_at: Option<String>,
    /// `compromised`, `superseded` or `retired`; another value is kept (it is informative: the
    /// revocation still applies from `revokedAt`) and reported by [`KeyRecord::warnings`].
    pub revocation_reason: Option<String>,
    /// The actor or organisation the key belongs to.
    pub actor: Option<String>,
    /// The private key lives in hardware.
    pub hardware_backed: Option<bool>,
    /// `x-` extension fields, kept as given.
    pub extensions: Map,
}

const REVOCATION_REASONS: [&str; 3] = ["compromised", "superseded", "retired"];

impl KeyRecord {
    /// Reads a KeyRecord. Unknown fields other than `x-` extensions are refused; `null` optional
    /// fields count as absent. Timestamps and the public key are not checked here (see the module
    /// documentation).
    ///
    /// # Errors
    /// [`KeyError`] for a value that is not a KeyRecord.
    pub fn from_value(value: &Value) -> Result<KeyRecord, KeyError> {
        let map = value.as_object().ok_or(KeyError::NotAnObject("key record"))?;
        let mut extensions = Map::new();
        for (key, field) in map {
            match key.as_str() {
                "kid" | "alg" | "publicKey" | "validFrom" | "validTo" | "revokedAt"
                | "revocationReason" | "actor" | "hardwareBacked" => {}
                other if other.starts_with("x-") => {
                    extensions.insert(key.clone(), field.clone());
                }
                other => return Err(KeyError::UnknownField(other.to_owned())),
            }
        }
        let revocation_reason = opt_str(map, "revocationReason")?;
        let hardware_backed = match map.get("hardwareBacked") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => {
                return Err(KeyError::WrongType {
                    field: "hardwareBacked".into(),
                    expected: "a boolean",
                });
            }
        };
        Ok(KeyRecord {
            kid: req_str(map, "kid")?,
            alg: Alg::parse(&req_str(map, "alg")?),
            public_key: req_str(map, "publicKey")?,
            valid_from: opt_str(map, "validFrom")?,
            valid_to: opt_str(map, "validTo")?,
            revoked_at: opt_str(map, "revokedAt")?,
            revocation_reason,
            actor: opt_str(map, "actor")?,
            hardware_backed,
            extensions,
        })
    }

    /// The record as JSON.
    pub fn to_value(&self) -> Value {
        let mut map = self.extensions.clone();
        map.insert("kid".into(), self.kid.as_str().into());
        map.insert("alg".into(), self.alg.as_str().into());
        map.insert("publicKey".into(), self.public_key.as_str().into());
        let optional = [
            ("validFrom", &self.valid_from),
            ("validTo", &self.valid_to),
            ("revokedAt", &self.revoked_at),
            ("revocationReason", &self.revocation_reason),
            ("actor", &self.actor),
        ];
        for (name, field) in optional {
            if let Some(text) = field {
                map.insert(name.into(), text.as_str().into());
            }
        }
        if let Some(b) = self.hardware_backed {
            map.insert("hardwareBacked".into(), b.into());
        }
        Value::Object(map)
    }
}

impl KeyRecord {
    /// Problems that do not make the record unusable, for the caller to report: a
    /// `revocationReason` outside the schema's values, a missing `validFrom`.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(reason) = &self.revocation_reason
            && !REVOCATION_REASONS.contains(&reason.as_str())
        {
            out.push(format!(
                "key {}: revocationReason {reason:?} is not one of {}; the revocation still applies from revokedAt",
                self.kid,
                REVOCATION_REASONS.join(", ")
            ));
        }
        if self.valid_from.is_none() {
            out.push(format!(
                "key {}: no validFrom; signatures it would check fail with invalid_timestamp",
                self.kid
            ));
        }
        out
    }
}

fn req_str(map: &Map, field: &'static str) -> Result<String, KeyError> {
    match map.get(field) {
        None | Some(Value::Null) => Err(KeyError::Missing(field)),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(KeyError::WrongType { field: field.into(), expected: "a string" }),
    }
}

fn opt_str(map: &Map, field: &'static str) -> Result<Option<String>, KeyError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(KeyError::WrongType { field: field.into(), expected: "a string" }),
    }
}

/// An ordered set of KeyRecords (lookups use the first matching `kid`).
///
/// The set also keeps each Ed25519 public key decoded (base64url, then point decompression, the
/// costly part of a verification after the curve check itself), made on first use from the
/// record's text and dropped whenever records change, so it always says what the records say.
#[derive(Clone, Debug, Default)]
pub struct KeySet {
    records: Vec<KeyRecord>,
    /// `decoded[i]`: the Ed25519 key of `records[i]`, `None` when it is not a usable one.
    decoded: OnceLock<Vec<Option<ed25519_dalek::VerifyingKey>>>,
}

impl PartialEq for KeySet {
    fn eq(&self, other: &KeySet) -> bool {
        self.records == other.records
    }
}

impl KeySet {
    /// An empty set.
    pub fn new() -> KeySet {
        KeySet::default()
    }

    /// A set of the given records, in order.
    pub fn from_records(records: Vec<KeyRecord>) -> KeySet {
        KeySet { records, decoded: OnceLock::new() }
    }

    /// Appends a record (it loses to earlier records with the same `kid`).
    pub fn push(&mut self, record: KeyRecord) {
        self.records.push(record);
        self.decoded = OnceLock::new();
    }

    /// Appends every record of `other`.
    pub fn extend(&mut self, other: KeySet) {
        self.records.extend(other.records);
        self.decoded = OnceLock::new();
    }

    /// The first record whose `kid` equals `kid`.
    pub fn find(&self, kid: &str) -> Option<&KeyRecord> {
        self.records.iter().find(|r| r.kid == kid)
    }

    /// The first record whose `kid` equals `kid`, with its Ed25519 key decoded once per set
    /// (`None` for other algorithms and for keys that do not decode).
    pub(crate) fn find_with_ed25519(
        &self,
        kid: &str,
    ) -> Option<(&KeyRecord, Option<&ed25519_dalek::VerifyingKey>)> {
        let index = self.records.iter().position(|r| r.kid == kid)?;
        let decoded = self.decoded.get_or_init(|| {
            self.records.iter().map(|r| decode_ed25519(&r.alg, &r.public_key)).collect()
        });
        Some((&self.records[index], decoded.get(index).and_then(Option::as_ref)))
    }

    /// The records, in order.
    pub fn records(&self) -> &[KeyRecord] {
        &self.records
    }

    /// The warnings of every record (see [`KeyRecord::warnings`]).
    pub fn warnings(&self) -> Vec<String> {
        self.records.iter().flat_map(KeyRecord::warnings).collect()
    }

    /// The number of records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// True when the set has no records.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The records as a JSON array (the form verifiers cache for offline use).
    pub fn to_value(&self) -> Value {
        Value::Array(self.records.iter().map(KeyRecord::to_value).collect())
    }

    /// Loads any supported shape: an array of KeyRecords, a discovery document (`keys`), a DID
    /// document (`verificationMethod`) or a capabilities document (`x-cookwala-keys`).
    ///
    /// # Errors
    /// [`KeyError::NotAKeySet`] for other shapes, or the error of the matching loader.
    pub fn from_value(value: &Value) -> Result<KeySet, KeyError> {
        match value {
            Value::Array(_) => KeySet::from_records_value(value),
            Value::Object(map) if map.contains_key("verificationMethod") => {
                KeySet::from_did_document(value)
            }
            Value::Object(map) if map.contains_key(CAPABILITIES_KEYS_FIELD) => {
                KeySet::from_capabilities(value)
            }
            Value::Object(map) if map.contains_key("keys") => KeySet::from_well_known(value),
            _ => Err(KeyError::NotAKeySet),
        }
    }

    /// Loads a bare JSON array of KeyRecords.
    ///
    /// # Errors
    /// [`KeyError`] when the value is not an array or a record is invalid.
    pub fn from_records_value(value: &Value) -> Result<KeySet, KeyError> {
        let items = value.as_array().ok_or(KeyError::NotAKeySet)?;
        check_count(items.len())?;
        items.iter().map(KeyRecord::from_value).collect::<Result<_, _>>().map(KeySet::from_records)
    }

    /// Loads `/.well-known/cookwala.json`: its `keys` array may hold KeyRecords or upstream
    /// discovery entries `{kid, kty: "OKP", crv: "Ed25519", x, expires?}`.
    ///
    /// # Errors
    /// [`KeyError`] when `keys` is missing or an entry is neither form.
    pub fn from_well_known(value: &Value) -> Result<KeySet, KeyError> {
        let map = value.as_object().ok_or(KeyError::NotAnObject("discovery document"))?;
        let items = map.get("keys").and_then(Value::as_array).ok_or(KeyError::Missing("keys"))?;
        check_count(items.len())?;
        let mut set = KeySet::new();
        for item in items {
            let entry = item.as_object().ok_or(KeyError::NotAnObject("discovery key"))?;
            if entry.contains_key("kty") && !entry.contains_key("publicKey") {
                let kid = req_str(entry, "kid")?;
                let (alg, public_key) = jwk_public_key(entry, &kid)?;
                set.push(KeyRecord {
                    kid,
                    alg,
                    public_key,
                    valid_from: Some(UNBOUNDED_VALID_FROM.into()),
                    valid_to: opt_str(entry, "expires")?,
                    revoked_at: None,
                    revocation_reason: None,
                    actor: None,
                    hardware_backed: None,
                    extensions: Map::new(),
                });
            } else {
                set.push(KeyRecord::from_value(item)?);
            }
        }
        Ok(set)
    }

    /// Loads a did:web DID document's `verificationMethod[]`.
    ///
    /// Each method's `id` is the `kid` (a relative `#frag` is resolved against the document
    /// `id`); `controller` (or the document `id`) becomes `actor`; `validFrom` is
    /// [`UNBOUNDED_VALID_FROM`]. Supported: `publicKeyJwk` `{kty: OKP, crv: Ed25519, x}` and
    /// `{kty: EC, crv: P-256, x, y}`, and `publicKeyMultibase` for Ed25519 (`z6Mk…`) and
    /// P-256 (`zDn…`). Methods of other key types are skipped.
    ///
    /// # Errors
    /// [`KeyError`] for a malformed document or a malformed supported method.
    pub fn from_did_document(value: &Value) -> Result<KeySet, KeyError> {
        let map = value.as_object().ok_or(KeyError::NotAnObject("did document"))?;
        let doc_id = opt_str(map, "id")?;
        let methods = map
            .get("verificationMethod")
            .and_then(Value::as_array)
            .ok_or(KeyError::Missing("verificationMethod"))?;
        check_count(methods.len())?;
        let mut set = KeySet::new();
        for method in methods {
            let vm = method.as_object().ok_or(KeyError::NotAnObject("verification method"))?;
            let raw_id = req_str(vm, "id")?;
            let kid = match (&doc_id, raw_id.starts_with('#')) {
                (Some(base), true) => format!("{base}{raw_id}"),
                _ => raw_id,
            };
            let converted = if let Some(jwk) = vm.get("publicKeyJwk") {
                let jwk = jwk.as_object().ok_or(KeyError::NotAnObject("publicKeyJwk"))?;
                match (
                    jwk.get("kty").and_then(Value::as_str),
                    jwk.get("crv").and_then(Value::as_str),
                ) {
                    (Some("OKP"), Some("Ed25519")) | (Some("EC"), Some("P-256")) => {
                        Some(jwk_public_key(jwk, &kid)?)
                    }
                    _ => None,
                }
            } else if let Some(mb) = vm.get("publicKeyMultibase") {
                let text = mb.as_str().ok_or(KeyError::WrongType {
                    field: "publicKeyMultibase".into(),
                    expected: "a string",
                })?;
                multibase_public_key(text, &kid)?
            } else {
                None
            };
            if let Some((alg, public_key)) = converted {
                let actor = opt_str(vm, "controller")?.or_else(|| doc_id.clone());
                set.push(KeyRecord {
                    kid,
                    alg,
                    public_key,
                    valid_from: Some(UNBOUNDED_VALID_FROM.into()),
                    valid_to: None,
                    revoked_at: None,
                    revocation_reason: None,
                    actor,
                    hardware_backed: None,
                    extensions: Map::new(),
                });
            }
        }
        Ok(set)
    }

    /// Loads the KeyRecords a capabilities document lists under `x-cookwala-keys`.
    ///
    /// # Errors
    /// [`KeyError`] when the field is missing or holds invalid records.
    pub fn from_capabilities(value: &Value) -> Result<KeySet, KeyError> {
        let map = value.as_object().ok_or(KeyError::NotAnObject("capabilities document"))?;
        let keys =
            map.get(CAPABILITIES_KEYS_FIELD).ok_or(KeyError::Missing(CAPABILITIES_KEYS_FIELD))?;
        KeySet::from_records_value(keys)
    }
}

impl FromIterator<KeyRecord> for KeySet {
    fn from_iter<I: IntoIterator<Item = KeyRecord>>(iter: I) -> KeySet {
        KeySet::from_records(iter.into_iter().collect())
    }
}

fn bad(id: &str, problem: &'static str) -> KeyError {
    KeyError::BadVerificationMethod { id: id.to_owned(), problem }
}

/// `(alg, base64url publicKey)` of an OKP/Ed25519 or EC/P-256 JWK.
fn jwk_public_key(jwk: &Map, id: &str) -> Result<(Alg, String), KeyError> {
    let field = |name: &str| {
        jwk.get(name)
            .and_then(Value::as_str)
            .and_then(|s| b64::decode(s).ok())
            .ok_or_else(|| bad(id, "jwk coordinate missing or not base64url"))
    };
    match (jwk.get("kty").and_then(Value::as_str), jwk.get("crv").and_then(Value::as_str)) {
        (Some("OKP"), Some("Ed25519")) => {
            let x = field("x")?;
            if x.len() != 32 {
                return Err(bad(id, "ed25519 key must be 32 bytes"));
            }
            Ok((Alg::EdDsa, b64::encode(&x)))
        }
        (Some("EC"), Some("P-256")) => {
            let (x, y) = (field("x")?, field("y")?);
            if x.len() != 32 || y.len() != 32 {
                return Err(bad(id, "p-256 coordinates must be 32 bytes"));
            }
            let mut point = Vec::with_capacity(65);
            point.push(4);
            point.extend_from_slice(&x);
            point.extend_from_slice(&y);
            Ok((Alg::Es256, b64::encode(&point)))
        }
        _ => Err(bad(id, "unsupported jwk (need OKP/Ed25519 or EC/P-256)")),
    }
}

/// `(alg, base64url publicKey)` of a multibase (`z` = base58btc) multicodec key, or `None` for
/// key types other than Ed25519 / P-256.
fn multibase_public_key(text: &str, id: &str) -> Result<Option<(Alg, String)>, KeyError> {
    let encoded = text.strip_prefix('z').ok_or_else(|| bad(id, "multibase must be base58btc"))?;
    if encoded.len() > MAX_MULTIBASE_LEN {
        return Err(bad(id, "publicKeyMultibase is longer than any supported key"));
    }
    let bytes = base58_decode(encoded).ok_or_else(|| bad(id, "invalid base58btc"))?;
    match bytes.as_slice() {
        [0xed, 0x01, key @ ..] if key.len() == 32 => Ok(Some((Alg::EdDsa, b64::encode(key)))),
        [0xed, 0x01, ..] => Err(bad(id, "ed25519 key must be 32 bytes")),
        [0x80, 0x24, key @ ..] if key.len() == 33 => Ok(Some((Alg::Es256, b64::encode(key)))),
        [0x80, 0x24, ..] => Err(bad(id, "p-256 key must be 33 bytes (compressed)")),
        _ => Ok(None),
    }
}

fn base58_decode(text: &str) -> Option<Vec<u8>> {
    const ALPHABET: &[u8; 58] = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
    let mut out: Vec<u8> = Vec::new(); // little-endian base-256 digits
    for c in text.bytes() {
        let mut carry = u32::try_from(ALPHABET.iter().position(|&a| a == c)?).ok()?;
        for digit in &mut out {
            carry += u32::from(*digit) * 58;
            *digit = (carry & 0xff) as u8;
            carry >>= 8;
        }
        while carry > 0 {
            out.push((carry & 0xff) as u8);
            carry >>= 8;
        }
    }
    let zeros = text.bytes().take_while(|&c| c == b'1').count();
    out.extend(std::iter::repeat_n(0, zeros));
    out.reverse();
    Some(out)
}

/// A private signing key.
#[derive(Clone)]
pub enum SigningKey {
    /// Ed25519.
    Ed25519(ed25519_dalek::SigningKey),
    /// ECDSA P-256.
    Es256(p256::ecdsa::SigningKey),
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the private part.
        f.debug_struct("SigningKey")
            .field("alg", &self.alg().as_str())
            .field("publicKey", &self.public_key())
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A fresh key from `rng`.
    pub fn generate<R: CryptoRng + ?Sized>(alg: SigningAlg, rng: &mut R) -> SigningKey {
        match alg {
            SigningAlg::EdDsa => SigningKey::Ed25519(ed25519_dalek::SigningKey::generate(rng)),
            SigningAlg::Es256 => {
                use p256::elliptic_curve::Generate as _;
                SigningKey::Es256(p256::ecdsa::SigningKey::generate_from_rng(rng))
            }
        }
    }

    /// A key from its raw private bytes: the 32-byte Ed25519 seed, or the 32-byte big-endian
    /// P-256 scalar.
    ///
    /// # Errors
    /// [`KeyError::PrivateKey`] for a wrong length or an out-of-range scalar.
    pub fn from_private_bytes(alg: SigningAlg, bytes: &[u8]) -> Result<SigningKey, KeyError> {
        match alg {
            SigningAlg::EdDsa => {
                let seed: [u8; 32] =
                    bytes.try_into().map_err(|_| KeyError::PrivateKey("ed25519"))?;
                Ok(SigningKey::Ed25519(ed25519_dalek::SigningKey::from_bytes(&seed)))
            }
            SigningAlg::Es256 => p256::ecdsa::SigningKey::from_slice(bytes)
                .map(SigningKey::Es256)
                .map_err(|_| KeyError::PrivateKey("p-256")),
        }
    }

    /// The algorithm.
    pub fn alg(&self) -> SigningAlg {
        match self {
            SigningKey::Ed25519(_) => SigningAlg::EdDsa,
            SigningKey::Es256(_) => SigningAlg::Es256,
        }
    }

    /// The raw private bytes (Ed25519 seed or P-256 scalar), 32 bytes.
    pub fn private_bytes(&self) -> Vec<u8> {
        match self {
            SigningKey::Ed25519(k) => k.to_bytes().to_vec(),
            SigningKey::Es256(k) => k.to_bytes().to_vec(),
        }
    }

    /// The raw public key: 32 bytes (Ed25519) or the 65-byte uncompressed SEC1 point (ES256).
    pub fn public_key_bytes(&self) -> Vec<u8> {
        match self {
            SigningKey::Ed25519(k) => k.verifying_key().to_bytes().to_vec(),
            SigningKey::Es256(k) => k.verifying_key().to_sec1_point(false).as_bytes().to_vec(),
        }
    }

    /// Base64url of [`SigningKey::public_key_bytes`] (the KeyRecord `publicKey`).
    pub fn public_key(&self) -> String {
        b64::encode(&self.public_key_bytes())
    }

    /// Signs raw bytes: 64 bytes (Ed25519, or ES256 `r‖s` with RFC 6979 nonces).
    pub fn sign_raw(&self, message: &[u8]) -> Vec<u8> {
        match self {
            SigningKey::Ed25519(k) => ed25519_dalek::Signer::sign(k, message).to_bytes().to_vec(),
            SigningKey::Es256(k) => {
                let sig: p256::ecdsa::Signature = k.sign(message);
                sig.to_bytes().to_vec()
            }
        }
    }

    /// A KeyRecord for this key.
    pub fn key_record(&self, kid: &str, valid_from: &str) -> KeyRecord {
        KeyRecord {
            kid: kid.to_owned(),
            alg: self.alg().into(),
            public_key: self.public_key(),
            valid_from: Some(valid_from.to_owned()),
            valid_to: None,
            revoked_at: None,
            revocation_reason: None,
            actor: None,
            hardware_backed: None,
            extensions: Map::new(),
        }
    }

    /// The key file: `{"kid", "alg", "privateKey", "publicKey"}` (keys base64url, unpadded).
    pub fn to_key_file(&self, kid: &str) -> Value {
        let mut map = Map::new();
        map.insert("kid".into(), kid.into());
        map.insert("alg".into(), self.alg().as_str().into());
        map.insert("privateKey".into(), b64::encode(&self.private_bytes()).into());
        map.insert("publicKey".into(), self.public_key().into());
        Value::Object(map)
    }

    /// Reads a key file written by [`SigningKey::to_key_file`]; returns `(kid, key)`. A
    /// `publicKey`, when present, must match the private key (a compressed ES256 point is
    /// accepted).
    ///
    /// # Errors
    /// [`KeyError`] for a malformed file or mismatching public key.
    pub fn from_key_file(value: &Value) -> Result<(String, SigningKey), KeyError> {
        let map = value.as_object().ok_or(KeyError::NotAnObject("key file"))?;
        let kid = req_str(map, "kid")?;
        let alg_name = req_str(map, "alg")?;
        let alg = SigningAlg::parse(&alg_name).ok_or(KeyError::UnsupportedAlg(alg_name))?;
        let private = b64::decode(&req_str(map, "privateKey")?)
            .map_err(|_| KeyError::PrivateKey(alg.as_str()))?;
        let key = SigningKey::from_private_bytes(alg, &private)?;
        if let Some(public) = opt_str(map, "publicKey")? {
            let bytes = b64::decode(&public).map_err(|_| KeyError::PublicKeyMismatch)?;
            let matches = match &key {
                SigningKey::Ed25519(_) => bytes == key.public_key_bytes(),
                SigningKey::Es256(k) => {
                    bytes == key.public_key_bytes()
                        || bytes == k.verifying_key().to_sec1_point(true).as_bytes()
                }
            };
            if !matches {
                return Err(KeyError::PublicKeyMismatch);
            }
        }
        Ok((kid, key))
    }
}
