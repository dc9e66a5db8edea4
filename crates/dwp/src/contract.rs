//! Contract identity (`contract_id`) and revision substance.

use std::fmt;

use canonical_json::{Value, WriteError, digest, to_python_compact};

/// Fields that are chain bookkeeping rather than substance.
pub const CHAIN_FIELDS: [&str; 3] = ["contract_id", "parent_contract_id", "revision"];

/// Why an identity could not be computed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdError {
    /// The contract document is not a JSON object.
    NotAnObject,
    /// The document cannot be written in the canonical form.
    Write(WriteError),
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdError::NotAnObject => write!(f, "contract: expected a JSON object"),
            IdError::Write(e) => write!(f, "contract: {e}"),
        }
    }
}

impl std::error::Error for IdError {}

/// The `contract_id` of a contract: bare lowercase hex SHA-256 of the compact sorted Python
/// form of the document without its top-level `contract_id`.
///
/// # Errors
/// A document that is not an object, or one nested beyond the writer's depth limit.
pub fn contract_id(doc: &Value) -> Result<String, IdError> {
    if doc.as_object().is_none() {
        return Err(IdError::NotAnObject);
    }
    digest::python_id_without(doc, &["contract_id"]).map_err(IdError::Write)
}

/// The canonical bytes of a contract with the chain fields stripped: two revisions with equal
/// substance bytes differ only in bookkeeping.
///
/// # Errors
/// A document nested beyond the writer's depth limit.
pub fn revision_content_bytes(doc: &Value) -> Result<Vec<u8>, IdError> {
    to_python_compact(&digest::without_top_level(doc, &CHAIN_FIELDS)).map_err(IdError::Write)
}
