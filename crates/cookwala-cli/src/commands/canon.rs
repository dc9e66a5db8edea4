//! `cookwala canon` and `cookwala hash`.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use canonical_json::{CanonicalizeError, Limits, canonicalize, canonicalize_into_split, digest};

use crate::input::{Bytes, display, huge_buffer, large_file_size, read_json, read_large};

/// Writes the RFC 8785 bytes of the document (no trailing newline).
///
/// One pass from text to bytes (`canonical_json::canonicalize`): no value tree is built, which
/// is most of the time and memory on large documents. A large document is read into, and
/// written from, [`huge_buffer`] memory: page faults otherwise cost as much as the pass itself.
/// Errors read as before: a parse error is "not valid JSON", a document JCS cannot write
/// names the file.
pub fn canon(path: &Path) -> Result<()> {
    // A large file's output buffer is prepared on a second thread while the file is read
    // (populating it is a few milliseconds the pass would otherwise wait for).
    let (input, prepared) = std::thread::scope(|scope| {
        let prepared = large_file_size(path)
            .map(|len| scope.spawn(move || huge_buffer(len.saturating_add(4096))));
        let input = read_large(path);
        (input, prepared.and_then(|thread| thread.join().ok()).and_then(Result::ok))
    });
    let input = input?;
    let failed = |e: CanonicalizeError| match e {
        CanonicalizeError::Parse(e) => {
            Err::<(), _>(e).with_context(|| format!("{} is not valid JSON", display(path)))
        }
        CanonicalizeError::Write(e) => Err(e).with_context(|| display(path)),
    };
    // Canonical bytes are the input less its whitespace, unless numbers grow (`1e20`): when
    // they do not fit (or the file changed size meanwhile), the ordinary path below writes them.
    // A long array in it is written by every core (`canonicalize_into_split`): the parts stay
    // where each thread wrote them and go out one write each.
    if let (Bytes::Mapped(_), Some(mut out)) = (&input, prepared) {
        let jobs = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        match canonicalize_into_split(&input, Limits::default(), &mut out, jobs) {
            Ok(Some(ranges)) => {
                drop(input);
                let parts = ranges.into_iter().map(|r| out.get(r).unwrap_or_default());
                return write_stdout(parts).context("cannot write to stdout");
            }
            Ok(None) => {}
            Err(e) => return failed(e),
        }
    }
    let bytes = match canonicalize(&input, Limits::default()) {
        Ok(bytes) => bytes,
        Err(e) => return failed(e),
    };
    drop(input);
    write_stdout([bytes.as_slice()]).context("cannot write to stdout")
}

/// Writes `parts` to standard output, each in one go. Stdout is line-buffered, and a line
/// writer searches the whole of a large write for its last newline first; on Unix the bytes go
/// to a duplicate of the descriptor instead (stdout's buffer is empty here).
fn write_stdout<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd;
        let stdout = std::io::stdout();
        let mut lock = stdout.lock();
        lock.flush()?;
        let mut file = std::fs::File::from(lock.as_fd().try_clone_to_owned()?);
        parts.into_iter().try_for_each(|bytes| file.write_all(bytes))
    }
    #[cfg(not(unix))]
    {
        let mut out = std::io::stdout().lock();
        parts.into_iter().try_for_each(|bytes| out.write_all(bytes))?;
        out.flush()
    }
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
