//! Base64url without padding, the only binary-to-text form Cookwala uses for keys and signatures.

use base64ct::{Base64UrlUnpadded, Encoding};

/// A string that is not unpadded base64url.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid base64url (unpadded) text")]
#[non_exhaustive]
pub struct B64Error;

/// Encodes `bytes` as base64url without padding.
pub fn encode(bytes: &[u8]) -> String {
    Base64UrlUnpadded::encode_string(bytes)
}

/// Decodes base64url without padding.
///
/// The decoder is strict: padding, characters outside `A-Z a-z 0-9 - _` and non-canonical trailing
/// bits are refused (the upstream reference, which uses Python's lenient decoder, would accept some
/// of these; a refused key or signature fails closed as `bad_signature`).
///
/// # Errors
/// [`B64Error`] for anything that is not canonical unpadded base64url.
pub fn decode(text: &str) -> Result<Vec<u8>, B64Error> {
    Base64UrlUnpadded::decode_vec(text).map_err(|_| B64Error)
}
