//! Read-only views of the live journal (never repaired here: repair belongs to the writer).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use canonical_json::Value;
use dwp::projection::seq_of;
use journal::Damage;

use crate::error::{LedgerError, Result, fail, io_fail};
use crate::summary;

/// A journal line is a record when it is strict JSON (duplicate keys and non-finite numbers
/// refused), an object, with a valid seq: [`dwp::event::record`], the one rule the writer,
/// every reader and `verify` share.
pub(crate) fn strict(line: &[u8]) -> Option<Value> {
    dwp::event::record(line)
}

/// A journal line that is not a record and is not a torn final line: damage no command
/// repairs on its own (see `journal::Damage::Corrupt`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DamagedLine {
    /// Its 1-based line number.
    pub line: u64,
    /// Where it starts.
    pub byte_offset: u64,
    /// What is wrong with it (the parser's complaint, or the seq rule it breaks).
    pub reason: String,
}

impl DamagedLine {
    /// The refusal every command gives over this damage (nothing written, nothing read past it).
    pub fn refusal(&self) -> LedgerError {
        fail(format!(
            "journal.ndjson line {} (byte {}) is damaged: {}. It is not the torn final line an \
             interrupted append leaves, so nothing cuts it and nothing was written. Keep the \
             file; once you know what the line was, run `dwp ledger --plan DIR repair --line {}` \
             (it sets the whole file aside, removes only that line and records a \
             journal_repair event)",
            self.line, self.byte_offset, self.reason, self.line
        ))
    }

    /// Describes the damage a scan of `bytes` (the whole journal, or its first bytes up to
    /// at least the end of the damaged line) reported at `byte_offset`.
    pub(crate) fn describe(bytes: &[u8], byte_offset: u64, cause: &str) -> DamagedLine {
        let at = usize::try_from(byte_offset).unwrap_or(usize::MAX).min(bytes.len());
        let line = journal::line_number(&bytes[..at], byte_offset).unwrap_or(0);
        let rest = &bytes[at..];
        let text = memchr_line(rest);
        let reason = match canonical_json::parse(text) {
            Err(e) => format!("{cause} ({e})"),
            Ok(event) => match dwp::event::record_problem(&event) {
                Some(problem) => {
                    let seq = event.get("seq").map(dwp::py::repr).unwrap_or_default();
                    if seq.is_empty() { problem.to_string() } else { format!("{problem} ({seq})") }
                }
                None => cause.to_owned(),
            },
        };
        DamagedLine { line, byte_offset, reason }
    }

    /// [`DamagedLine::describe`] reading the line from the file at `path`.
    pub(crate) fn describe_file(path: &Path, byte_offset: u64, cause: &str) -> DamagedLine {
        use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
        let line_no =
            fs::File::open(path).and_then(|f| journal::line_number(f, byte_offset)).unwrap_or(0);
        let mut text = Vec::new();
        if let Ok(mut file) = fs::File::open(path)
            && file.seek(SeekFrom::Start(byte_offset)).is_ok()
        {
            let _ = BufReader::new(file.take(journal::MAX_LINE)).read_until(b'\n', &mut text);
        }
        let too_long = text.len() as u64 >= journal::MAX_LINE && text.last() != Some(&b'\n');
        let mut damaged = DamagedLine::describe(&text, 0, cause);
        if too_long {
            damaged.reason = format!(
                "the line is longer than the {} MiB limit of a journal line",
                journal::MAX_LINE >> 20
            );
        }
        damaged.line = line_no;
        damaged.byte_offset = byte_offset;
        damaged
    }
}

/// The first line of `bytes`, without its newline.
fn memchr_line(bytes: &[u8]) -> &[u8] {
    bytes.split(|b| *b == b'\n').next().unwrap_or(bytes)
}

/// The live journal as a read-only reader sees it: events, a torn tail, a missing newline.
#[derive(Clone, Debug, Default)]
pub struct JournalView {
    /// Parsed complete events (up to the first bad line).
    pub events: Vec<Value>,
    /// `(byte_offset, cause)` of a torn final line.
    pub torn: Option<(u64, &'static str)>,
    /// The final line parsed but lacks its newline.
    pub framing: bool,
    /// A damaged line (only [`inspect_journal`] returns a view with one).
    pub damaged: Option<DamagedLine>,
}

/// Reads the live journal without repairing it (the journal crate's typed reader with the
/// strict parser: the torn-tail and framing rules are `journal::scan`'s). A symlinked
/// `journal.ndjson` is refused, as the writer refuses it.
///
/// # Errors
/// I/O failures other than a missing file; a symlink; a damaged line
/// ([`DamagedLine::refusal`]).
pub fn read_journal(path: &Path) -> Result<JournalView> {
    let view = inspect_journal(path)?;
    match &view.damaged {
        Some(damaged) => Err(damaged.refusal()),
        None => Ok(view),
    }
}

/// [`read_journal`] that reports a damaged line in the view (with the events before it)
/// instead of refusing: for `verify`, which lists what it finds.
///
/// # Errors
/// I/O failures other than a missing file; a symlink.
pub fn inspect_journal(path: &Path) -> Result<JournalView> {
    refuse_symlink_read(path)?;
    let mut view = JournalView::default();
    let report = match journal::read_typed(path, strict, |_, event| view.events.push(event)) {
        Ok(report) => report,
        Err(e) if e.is_not_found() => return Ok(JournalView::default()),
        Err(e) => return Err(fail(e.to_string())),
    };
    match report.damage {
        Some(d @ Damage::TornTail { .. }) => view.torn = Some((d.byte_offset(), d.cause())),
        Some(Damage::MissingNewline { .. }) => view.framing = true,
        Some(d) => {
            view.damaged = Some(DamagedLine::describe_file(path, d.byte_offset(), d.cause()));
        }
        None => {}
    }
    Ok(view)
}

/// Readers refuse a symlinked journal as the writer does: a plan's records never come from
/// outside the plan folder (a link to `/etc/passwd` would otherwise read as a torn journal).
pub(crate) fn refuse_symlink_read(path: &Path) -> Result<()> {
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(fail(format!(
            "{} is a symbolic link — refusing to read through it (a plan's records never come \
             from outside the plan folder); replace it with the journal itself",
            path.display()
        )));
    }
    Ok(())
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
/// I/O failures other than a missing file; a symlink; a damaged line.
pub fn stream_journal(path: &Path, mut visit: impl FnMut(JournalItem<'_>)) -> Result<()> {
    refuse_symlink_read(path)?;
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
        Some(d @ Damage::Corrupt { .. }) => {
            return Err(DamagedLine::describe(&raw, d.byte_offset(), d.cause()).refusal());
        }
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
/// I/O failures other than a missing file; a symlink; a damaged line.
pub fn read_compact(path: &Path, digest: bool) -> Result<CompactView> {
    refuse_symlink_read(path)?;
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
        Some(d @ Damage::Corrupt { .. }) => {
            return Err(DamagedLine::describe_file(path, d.byte_offset(), d.cause()).refusal());
        }
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
