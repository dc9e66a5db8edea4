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

/// Inputs from this size on are read into [`huge_buffer`] memory by [`read_large`].
const LARGE_INPUT_BYTES: u64 = 4 << 20;

/// A document's bytes, on the heap or in [`huge_buffer`] memory.
pub enum Bytes {
    /// Standard input, or a small file.
    Heap(Vec<u8>),
    /// A large regular file.
    Mapped(memmap2::MmapMut),
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Heap(bytes) => bytes,
            Bytes::Mapped(map) => map,
        }
    }
}

/// [`read_bytes`] for commands that read one large document once (`canon`): a regular file of
/// 4 MiB or more is read into [`huge_buffer`] memory instead of the heap.
pub fn read_large(path: &Path) -> Result<Bytes> {
    if path == Path::new("-") {
        return read_bytes(path).map(Bytes::Heap);
    }
    let mut file =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let Some(len) = file.metadata().ok().and_then(|meta| large_size(&meta)) else {
        return read_bytes(path).map(Bytes::Heap);
    };
    let mut map = huge_buffer(len).context("cannot allocate memory for the document")?;
    file.read_exact(&mut map).with_context(|| format!("cannot read {}", path.display()))?;
    // A file that grew while it was read is read again the ordinary way (with the limit).
    if file.read(&mut [0u8; 1]).with_context(|| format!("cannot read {}", path.display()))? != 0 {
        return read_bytes(path).map(Bytes::Heap);
    }
    Ok(Bytes::Mapped(map))
}

/// The size of `path` when [`read_large`] would read it into [`huge_buffer`] memory.
pub fn large_file_size(path: &Path) -> Option<usize> {
    std::fs::metadata(path).ok().and_then(|meta| large_size(&meta))
}

fn large_size(meta: &std::fs::Metadata) -> Option<usize> {
    let large =
        meta.is_file() && (LARGE_INPUT_BYTES..=MAX_INPUT_BYTES as u64).contains(&meta.len());
    large.then(|| usize::try_from(meta.len()).ok()).flatten()
}

/// `len` bytes of zeroed anonymous memory, on Linux advised to transparent huge pages and
/// populated in one call. A large buffer from the heap is faulted in a 4 KiB page at a time,
/// and on a virtual machine those faults cost more than the work done on the bytes: about
/// 15 ms for a 25 MB document read into a `Vec`, 5 ms this way. Where huge pages or
/// populating are not available the advice is ignored and the memory is ordinary.
pub fn huge_buffer(len: usize) -> std::io::Result<memmap2::MmapMut> {
    let map = memmap2::MmapOptions::new().len(len.max(1)).map_anon()?;
    #[cfg(target_os = "linux")]
    {
        // Both are hints: refusal (an old kernel, THP disabled) changes speed, not results.
        let _ = map.advise(memmap2::Advice::HugePage);
        let _ = map.advise(memmap2::Advice::PopulateWrite);
    }
    Ok(map)
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
