//! Reading documents from files or standard input, with a size limit.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail};
use canonical_json::{Limits, Value};

/// Largest document any command reads (64 MiB), so hostile input cannot exhaust memory.
pub const MAX_INPUT_BYTES: usize = canonical_json::DEFAULT_MAX_BYTES;

/// Reads `path` (or standard input for `-`) into memory, refusing inputs over the limit.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let limit = MAX_INPUT_BYTES as u64 + 1;
    if path == Path::new("-") {
        std::io::stdin().lock().take(limit).read_to_end(&mut bytes).context("cannot read stdin")?;
    } else {
        let file =
            std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        // `take` hides the file's size from `read_to_end`: reserve it here (one allocation
        // instead of a doubling series on large documents).
        if let Ok(meta) = file.metadata() {
            bytes.reserve(usize::try_from(meta.len().min(limit)).unwrap_or(0));
        }
        file.take(limit)
            .read_to_end(&mut bytes)
            .with_context(|| format!("cannot read {}", path.display()))?;
    }
    if bytes.len() > MAX_INPUT_BYTES {
        bail!("{}: input larger than {MAX_INPUT_BYTES} bytes", display(path));
    }
    Ok(bytes)
}

/// Reads and strictly parses one JSON document.
pub fn read_json(path: &Path) -> Result<Value> {
    let bytes = read_bytes(path)?;
    canonical_json::parse_with(&bytes, Limits::default())
        .with_context(|| format!("{} is not valid JSON", display(path)))
}

/// A path for messages (`-` reads as standard input).
pub fn display(path: &Path) -> String {
    if path == Path::new("-") { "<stdin>".to_owned() } else { path.display().to_string() }
}
