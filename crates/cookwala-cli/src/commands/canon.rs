//! `cookwala canon` and `cookwala hash`.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use canonical_json::{CanonicalizeError, Limits, canonicalize, digest};

use crate::input::{display, read_bytes, read_json};

/// Writes the RFC 8785 bytes of the document (no trailing newline).
///
/// One pass from text to bytes (`canonical_json::canonicalize`): no value tree is built, which
/// is most of the time and memory on large documents. Errors read as before: a parse error is
/// "not valid JSON", a document JCS cannot write names the file.
pub fn canon(path: &Path) -> Result<()> {
    let input = read_bytes(path)?;
    let bytes = match canonicalize(&input, Limits::default()) {
        Ok(bytes) => bytes,
        Err(CanonicalizeError::Parse(e)) => {
            return Err(e).with_context(|| format!("{} is not valid JSON", display(path)));
        }
        Err(CanonicalizeError::Write(e)) => return Err(e).with_context(|| display(path)),
    };
    drop(input);
    let mut out = std::io::stdout().lock();
    out.write_all(&bytes).context("cannot write to stdout")?;
    out.flush().context("cannot write to stdout")
}

/// Prints the `sha256:<hex>` document hash (top-level `hash` and `signature` excluded).
pub fn hash(path: &Path, json: bool) -> Result<()> {
    let value = read_json(path)?;
    let hash = digest::document_hash(&value).with_context(|| display(path))?;
    if json {
        println!("{{\"hash\":\"{hash}\"}}");
    } else {
        println!("{hash}");
    }
    Ok(())
}
