//! SHA-256 digests over the canonical forms.

use sha2::{Digest, Sha256};

use crate::value::Value;
use crate::write::{WriteError, jcs_excluding, to_python_compact};

/// Lowercase hex of SHA-256 over `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// `sha256:` + lowercase hex of SHA-256 over `bytes`.
pub fn sha256_prefixed(bytes: &[u8]) -> String {
    format!("sha256:{}", sha256_hex(bytes))
}

/// Lowercase hex of any byte string.
pub fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out
}

/// A copy of `value` with the named top-level keys removed (non-objects are returned whole).
pub fn without_top_level(value: &Value, keys: &[&str]) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !keys.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `sha256:<hex>` of the JCS bytes of `value` without the named top-level keys.
///
/// # Errors
/// When the value cannot be written as JCS.
pub fn jcs_hash_without(value: &Value, excluded: &[&str]) -> Result<String, WriteError> {
    // Writing the canonical bytes without the excluded keys avoids copying the document; a
    // streaming hasher sink was measured slower than one buffer and one SHA-256 call.
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    jcs_excluding(value, excluded, &mut buf)?;
    Ok(sha256_prefixed(&buf))
}

/// The Cookwala document hash: JCS without the top-level `hash` and `signature`.
///
/// # Errors
/// When the value cannot be written as JCS.
pub fn document_hash(value: &Value) -> Result<String, WriteError> {
    jcs_hash_without(value, &["hash", "signature"])
}

/// Bare lowercase hex of SHA-256 over the compact sorted Python form of `value` without the
/// named top-level keys (the DWP `contract_id` uses `&["contract_id"]`).
///
/// # Errors
/// Values nested deeper than the writer allows.
pub fn python_id_without(value: &Value, excluded: &[&str]) -> Result<String, WriteError> {
    Ok(sha256_hex(&to_python_compact(&without_top_level(value, excluded))?))
}
