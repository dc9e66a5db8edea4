//! `cookwala canon` and `cookwala hash`.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use canonical_json::{digest, to_jcs};

use crate::input::{display, read_json};

/// Writes the RFC 8785 bytes of the document (no trailing newline).
pub fn canon(path: &Path) -> Result<()> {
    let value = read_json(path)?;
    let bytes = to_jcs(&value).with_context(|| display(path))?;
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
