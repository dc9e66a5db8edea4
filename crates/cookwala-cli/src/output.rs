//! Writing documents and files.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use canonical_json::{PyFormat, Value, to_python};

/// A document as readable JSON: sorted keys, two-space indent, UTF-8 kept, final newline.
pub fn pretty(value: &Value) -> Result<Vec<u8>> {
    let mut bytes = to_python(value, PyFormat { indent: Some(2), keep_unicode: true })
        .context("cannot serialise the document")?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Compact one-line JSON (for `--json` output), UTF-8 kept.
pub fn compact(value: &Value) -> Result<String> {
    let bytes = to_python(value, PyFormat { indent: None, keep_unicode: true })
        .context("cannot serialise the result")?;
    String::from_utf8(bytes).context("serialised JSON is not UTF-8")
}

/// Writes a document to `out` (a file, atomically) or to stdout when `out` is `None`.
pub fn emit(value: &Value, out: Option<&Path>) -> Result<()> {
    let bytes = pretty(value)?;
    match out {
        Some(path) => journal::atomic_replace(path, &bytes)
            .with_context(|| format!("cannot write {}", path.display())),
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(&bytes).context("cannot write to stdout")?;
            stdout.flush().context("cannot write to stdout")
        }
    }
}

/// Creates a new file that must not exist yet, readable only by the owner on Unix.
pub fn create_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path).with_context(|| {
        format!("cannot create {} (refusing to overwrite an existing key)", path.display())
    })?;
    file.write_all(bytes).with_context(|| format!("cannot write {}", path.display()))?;
    file.sync_all().with_context(|| format!("cannot sync {}", path.display()))
}
