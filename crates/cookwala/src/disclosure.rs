//! Selective disclosure (COOKWALA.md §12).
//!
//! A signed document carries only `{"digest": …}`; the holder sends `salt` and `value` to the
//! parties allowed to see them. `digest = "sha256:" + hex(SHA-256(JCS([salt, value])))`. Salts come
//! from the caller (this crate draws no randomness); [`check_salt`] enforces the schema's rule
//! for newly created disclosures (≥ 22 base64url characters, i.e. ≥ 128 bits).

use canonical_json::{Map, Value, WriteError, digest::sha256_prefixed, to_jcs};

/// Minimum salt length in characters.
pub const MIN_SALT_CHARS: usize = 22;

/// Why a disclosure could not be created.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DisclosureError {
    /// The salt is shorter than 22 characters or not base64url.
    #[error("salt must be at least 22 base64url characters")]
    WeakSalt,
    /// The value cannot be written as JCS.
    #[error("cannot canonicalise the value: {0}")]
    Canonical(#[from] WriteError),
}

/// The digest of `[salt, value]`.
///
/// # Errors
/// When the value cannot be written as JCS.
pub fn digest(salt: &str, value: &Value) -> Result<String, WriteError> {
    let pair = Value::Array(vec![Value::from(salt), value.clone()]);
    Ok(sha256_prefixed(&to_jcs(&pair)?))
}

/// True when `salt` may be used for a new disclosure.
pub fn check_salt(salt: &str) -> bool {
    salt.len() >= MIN_SALT_CHARS
        && salt.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A disclosed copy `{digest, salt, value}`.
///
/// # Errors
/// [`DisclosureError::WeakSalt`] or a value that cannot be canonicalised.
pub fn disclose(value: &Value, salt: &str) -> Result<Value, DisclosureError> {
    if !check_salt(salt) {
        return Err(DisclosureError::WeakSalt);
    }
    let mut map = Map::new();
    map.insert("digest".into(), digest(salt, value)?.into());
    map.insert("salt".into(), salt.into());
    map.insert("value".into(), value.clone());
    Ok(Value::Object(map))
}

/// The undisclosed form `{digest}` of a disclosed copy (other fields dropped).
pub fn redact(disclosed: &Value) -> Option<Value> {
    let digest = disclosed.get("digest")?.clone();
    let mut map = Map::new();
    map.insert("digest".into(), digest);
    Some(Value::Object(map))
}

/// True iff `salt` and `value` are present and the recomputed digest equals `digest` (the
/// reference check; the salt's length is not checked here).
pub fn verify(disclosure: &Value) -> bool {
    let (Some(salt), Some(value), Some(expected)) =
        (disclosure.get("salt"), disclosure.get("value"), disclosure.get("digest"))
    else {
        return false;
    };
    // The reference hashes whatever salt it is given, strings or not.
    let pair = Value::Array(vec![salt.clone(), value.clone()]);
    match to_jcs(&pair) {
        Ok(bytes) => expected.as_str() == Some(sha256_prefixed(&bytes).as_str()),
        Err(_) => false,
    }
}
