//! Read-only views of the live journal (never repaired here: repair belongs to the writer).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use canonical_json::Value;
use dwp::projection::seq_of;
use journal::Damage;

use crate::error::{Result, fail, io_fail};
use crate::summary;

/// A journal line is a record when it is strict JSON (duplicate keys and non-finite numbers
/// refused), as the writer requires.
pub(crate) fn strict(line: &[u8]) -> Option<Value> {
    canonical_json::parse(line).ok()
}

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

/// Reads the live journal without repairing it (the journal crate's typed reader with the
/// strict parser: the torn-tail and framing rules are `journal::scan`'s).
///
/// # Errors
/// I/O failures other than a missing file.
pub fn read_journal(path: &Path) -> Result<JournalView> {
    let mut view = JournalView::default();
    let report = match journal::read_typed(path, strict, |_, event| view.events.push(event)) {
        Ok(report) => report,
        Err(e) if e.is_not_found() => return Ok(JournalView::default()),
        Err(e) => return Err(fail(e.to_string())),
    };
    match report.damage {
        Some(d @ Damage::TornTail { .. }) => view.torn = Some((d.byte_offset(), d.cause())),
        Some(Damage::MissingNewline { .. }) => view.framing = true,
        _ => {}
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
    // One snapshot, read twice: the header needs the count before the first event.
    let report =
        journal::read_typed_from(&raw[..], strict, |_, _| {}).map_err(|e| io_fail(path, e))?;
    let torn = match report.damage {
        Some(d @ Damage::TornTail { .. }) => Some((d.byte_offset(), d.cause())),
        _ => None,
    };
    let count = usize::try_from(report.records).unwrap_or(usize::MAX);
    visit(JournalItem::Header { count, torn });
    let good = usize::try_from(report.good_len).unwrap_or(usize::MAX).min(raw.len());
    journal::read_typed_from(&raw[..good], strict, |_, event| visit(JournalItem::Event(&event)))
        .map_err(|e| io_fail(path, e))?;
    Ok(())
}

/// The live journal as a read path keeps it: the events it decides on, the last seq of all.
#[derive(Clone, Debug, Default)]
pub struct CompactView {
    /// The kept events ([`dwp::event::keeps`]), each an object of its
    /// [`dwp::event::FIELDS`], in journal order.
    pub kept: Vec<Value>,
    /// The highest seq over every complete event (as [`seq_of`] reads it).
    pub last_seq: i64,
    /// `(byte_offset, cause)` of the first bad line.
    pub torn: Option<(u64, &'static str)>,
    /// sha256 (lowercase hex) of the journal bytes (`None` without a journal, or when not asked
    /// for).
    pub sha256: Option<String>,
}

/// Reads the live journal once, without repairing it or writing anything: every line is
/// checked as strictly as [`read_journal`] checks it (the same torn tail), but only the events
/// some read path decides on are built ([`dwp::event::Tally`]), and the bytes a matching
/// journal summary covers are only hashed (see `summary`). Large journals are checked on
/// `summary::read_threads` threads.
///
/// # Errors
/// I/O failures other than a missing file.
pub fn read_compact(path: &Path, digest: bool) -> Result<CompactView> {
    let file = match fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(CompactView::default()),
        Err(e) => return Err(io_fail(path, e)),
    };
    let len = file.metadata().map_err(|e| io_fail(path, e))?.len();
    let read = |from: u64, to: u64, visit: &mut dyn FnMut(&[u8])| {
        summary::file_chunks(&file, path, from, to, visit)
    };
    let cache = summary::cache_file(path, "summary");
    let live = summary::tally_live(len, &read, cache.as_deref(), digest)?;
    let torn = match live.report.damage {
        Some(d @ Damage::TornTail { .. }) => Some((d.byte_offset(), d.cause())),
        _ => None,
    };
    Ok(CompactView {
        kept: live.tally.kept,
        last_seq: live.tally.last_seq,
        torn,
        sha256: digest.then_some(live.sha256),
    })
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
