//! Read-only views of the live journal (never repaired here: repair belongs to the writer).

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::Path;

use canonical_json::Value;
use dwp::projection::seq_of;

use crate::error::{Result, io_fail};

/// The live journal as a read-only reader sees it: events, a torn tail, a missing newline.
#[derive(Clone, Debug, Default)]
pub struct JournalView {
    /// Parsed complete events (up to the first bad line).
    pub events: Vec<Value>,
    /// `(byte_offset, cause)` of the first bad line.
    pub torn: Option<(u64, &'static str)>,
    /// The final line parsed but lacks its newline.
    pub framing: bool,
}

/// Reads the live journal without repairing it.
///
/// # Errors
/// I/O failures other than a missing file.
pub fn read_journal(path: &Path) -> Result<JournalView> {
    let raw = match fs::read(path) {
        Ok(raw) => raw,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(JournalView::default()),
        Err(e) => return Err(io_fail(path, e)),
    };
    let mut view = JournalView::default();
    let mut offset = 0u64;
    for line in raw.split(|b| *b == b'\n') {
        let len = line.len() as u64 + 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            offset += len;
            continue;
        }
        if std::str::from_utf8(line).is_err() {
            view.torn = Some((offset, journal::CAUSE_UNDECODABLE));
            break;
        }
        match canonical_json::parse(line) {
            Ok(event) => view.events.push(event),
            Err(_) => {
                view.torn = Some((offset, journal::CAUSE_UNPARSABLE));
                break;
            }
        }
        offset += len;
    }
    if view.torn.is_none() && !raw.is_empty() && !raw.ends_with(b"\n") {
        view.framing = true;
    }
    Ok(view)
}

/// What [`stream_journal`] reports, in order: one header, then each complete event.
#[derive(Debug)]
pub enum JournalItem<'a> {
    /// The number of complete events and the torn tail (`byte_offset`, cause), if any.
    Header {
        /// Complete events.
        count: usize,
        /// The first bad line.
        torn: Option<(u64, &'static str)>,
    },
    /// One complete event.
    Event(&'a Value),
}

/// Streams the live journal without repairing it or holding every event in memory: returns
/// the complete-event count and the torn tail (if any), then calls `visit` for each complete
/// event in order. Memory stays at the file size plus one event.
///
/// # Errors
/// I/O failures other than a missing file.
pub fn stream_journal(path: &Path, mut visit: impl FnMut(JournalItem<'_>)) -> Result<()> {
    let raw = match fs::read(path) {
        Ok(raw) => raw,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(io_fail(path, e)),
    };
    let mut offset = 0u64;
    let mut good_end = 0usize;
    let mut count = 0usize;
    let mut torn = None;
    for line in raw.split(|b| *b == b'\n') {
        let len = line.len() as u64 + 1;
        if !line.iter().all(u8::is_ascii_whitespace) {
            if std::str::from_utf8(line).is_err() {
                torn = Some((offset, journal::CAUSE_UNDECODABLE));
                break;
            }
            if canonical_json::parse(line).is_err() {
                torn = Some((offset, journal::CAUSE_UNPARSABLE));
                break;
            }
            count += 1;
        }
        offset += len;
        good_end = usize::try_from(offset).unwrap_or(usize::MAX).min(raw.len());
    }
    visit(JournalItem::Header { count, torn });
    for line in raw[..good_end].split(|b| *b == b'\n') {
        if let Ok(event) = canonical_json::parse(line) {
            visit(JournalItem::Event(&event));
        }
    }
    Ok(())
}

/// Counts per type, for callers that want them.
pub fn type_positions(events: &[Value]) -> BTreeMap<String, i64> {
    let mut m = BTreeMap::new();
    for e in events {
        if let Some(t) = e.get("type").and_then(Value::as_str) {
            m.insert(t.to_owned(), seq_of(e));
        }
    }
    m
}

/// The last non-blank line of the first `len` bytes of `path`, read backwards from the end in
/// 4 KiB steps (a plain append must not cost a read of the whole journal).
pub(crate) fn last_line(path: &Path, len: u64) -> Result<Option<Vec<u8>>> {
    use std::io::{Seek, SeekFrom};
    let mut file = fs::File::open(path).map_err(|e| io_fail(path, e))?;
    let mut tail: Vec<u8> = Vec::new();
    let mut pos = len;
    loop {
        let trimmed = tail.iter().rposition(|b| !b.is_ascii_whitespace());
        if let Some(end) = trimmed
            && let Some(start) = tail[..end].iter().rposition(|b| *b == b'\n')
        {
            return Ok(Some(tail[start + 1..=end].to_vec()));
        }
        if pos == 0 {
            return Ok(trimmed.map(|end| tail[..=end].to_vec()));
        }
        let step = pos.min(4096);
        pos -= step;
        let mut chunk = vec![0u8; usize::try_from(step).unwrap_or(4096)];
        file.seek(SeekFrom::Start(pos)).map_err(|e| io_fail(path, e))?;
        file.read_exact(&mut chunk).map_err(|e| io_fail(path, e))?;
        chunk.extend_from_slice(&tail);
        tail = chunk;
    }
}
