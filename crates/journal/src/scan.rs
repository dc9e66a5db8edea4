//! Read-only scanning: finding the good prefix of a journal and describing
//! the damage after it.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use crate::error::{Error, IoContext};

/// Decides whether one line (without its `\n`, already known to be valid
/// UTF-8) is a record. See [`json_line`] for the default.
pub type Validator = fn(&[u8]) -> bool;

/// The default [`Validator`]: the line parses as one JSON value (any type,
/// surrounding whitespace allowed), as Python's `json.loads` would accept.
///
/// Known divergences from Python, all rejecting more: `NaN`/`Infinity`
/// literals, lone UTF-16 surrogate escapes and nesting deeper than 128
/// levels do not parse here.
pub fn json_line(line: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(line).is_ok()
}

/// Cause text of a torn tail whose first bad line is not valid UTF-8.
pub const CAUSE_UNDECODABLE: &str = "undecodable bytes in final line";
/// Cause text of a torn tail whose first bad line does not validate.
pub const CAUSE_UNPARSABLE: &str = "final line does not parse (torn append)";
/// Cause text of damage: a line that is not valid UTF-8 and is not a torn final line.
pub const CAUSE_DAMAGED_UNDECODABLE: &str =
    "undecodable bytes in a complete line (damage, not a torn append)";
/// Cause text of damage: a line that does not parse and is not a torn final line.
pub const CAUSE_DAMAGED_UNPARSABLE: &str =
    "a complete line does not parse (damage, not a torn append)";
/// Cause text of damage: a line that parses as JSON but the validator refuses.
pub const CAUSE_REJECTED: &str = "a line parses but is not a valid record";
/// Cause text of a final record that lost its framing newline.
pub const CAUSE_MISSING_NEWLINE: &str =
    "final event complete, framing newline restored after an interrupted append";

/// Why a line ended the good prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TornCause {
    /// The line is not valid UTF-8 ([`CAUSE_UNDECODABLE`]).
    Undecodable,
    /// The line is not JSON at all (or, with a custom validator, the validator rejected it
    /// and it does not parse as JSON either) ([`CAUSE_UNPARSABLE`]).
    Unparsable,
    /// The line parses as JSON but the validator refuses it (say, a DWP event whose `seq` is
    /// not a positive integer). Never a torn append: it is only ever [`Damage::Corrupt`].
    Rejected,
}

impl TornCause {
    /// The upstream cause text for this cause.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Undecodable => CAUSE_UNDECODABLE,
            Self::Unparsable => CAUSE_UNPARSABLE,
            Self::Rejected => CAUSE_REJECTED,
        }
    }
}

impl fmt::Display for TornCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Damage found after the good prefix of a journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Damage {
    /// The final line, torn by a crash mid-append: it has no `\n` after it and it is not
    /// JSON (or not UTF-8). It is not part of the journal; the writer truncates the file at
    /// `byte_offset`, which discards exactly this line and nothing else.
    TornTail {
        /// Where the bad line starts (= the length after repair).
        byte_offset: u64,
        /// Why the line is bad.
        cause: TornCause,
        /// How many bytes from `byte_offset` to the end of the file are
        /// discarded by the repair.
        discarded_bytes: u64,
    },
    /// Every line is a record but the file does not end with `\n`; the
    /// writer appends the newline and keeps the final record.
    MissingNewline {
        /// The file length before the newline is restored (where it goes).
        byte_offset: u64,
    },
    /// A line that is not a record and is *not* a torn final line: a line in the middle, a
    /// final line that still has its `\n` (every writer puts the newline last, so a crash
    /// cannot leave one behind a partial line), or a complete JSON line the validator refuses.
    /// Nothing is repaired: [`Journal::open`](crate::Journal::open) refuses with
    /// [`Error::Damaged`](crate::Error::Damaged) and readers report it, so no valid line after
    /// it is ever cut. [`line_number`] gives its 1-based line number.
    Corrupt {
        /// Where the bad line starts.
        byte_offset: u64,
        /// Why the line is bad.
        cause: TornCause,
    },
}

impl Damage {
    /// The byte offset the damage is reported at (what DWP records in its
    /// `journal_repair` event).
    pub fn byte_offset(&self) -> u64 {
        match *self {
            Self::TornTail { byte_offset, .. }
            | Self::MissingNewline { byte_offset }
            | Self::Corrupt { byte_offset, .. } => byte_offset,
        }
    }

    /// The upstream cause text (what DWP records in its `journal_repair`
    /// event).
    pub fn cause(&self) -> &'static str {
        match *self {
            Self::TornTail { cause, .. } => cause.as_str(),
            Self::MissingNewline { .. } => CAUSE_MISSING_NEWLINE,
            Self::Corrupt { cause: TornCause::Undecodable, .. } => CAUSE_DAMAGED_UNDECODABLE,
            Self::Corrupt { cause: TornCause::Unparsable, .. } => CAUSE_DAMAGED_UNPARSABLE,
            Self::Corrupt { cause: TornCause::Rejected, .. } => CAUSE_REJECTED,
        }
    }

    /// True for damage no writer repairs ([`Damage::Corrupt`]).
    pub fn is_corrupt(&self) -> bool {
        matches!(self, Self::Corrupt { .. })
    }
}

/// The 1-based line number of the line starting at `byte_offset` in `reader` (one plus the
/// newlines before it): for reporting [`Damage::Corrupt`] by line, computed only when there
/// is damage to report.
///
/// # Errors
///
/// Reading `reader` failed.
pub fn line_number(reader: impl Read, byte_offset: u64) -> io::Result<u64> {
    let mut reader = reader.take(byte_offset);
    let mut buf = vec![0u8; 1 << 16];
    let mut lines = 1u64;
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            return Ok(lines);
        }
        lines += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
    }
}

/// What a scan found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ScanReport {
    /// Number of records in the good prefix (blank lines are not counted).
    pub records: u64,
    /// Length in bytes of the good prefix: everything before the first bad
    /// line, including skipped blank lines.
    pub good_len: u64,
    /// Length in bytes of the whole file as scanned.
    pub file_len: u64,
    /// The damage after the good prefix, if any.
    pub damage: Option<Damage>,
}

impl ScanReport {
    /// The report of a scan that started `skip` bytes (holding `records` records) into the
    /// file, as a report on the whole file: offsets and lengths moved by `skip`, `records`
    /// added.
    #[must_use]
    pub fn after(self, skip: u64, records: u64) -> ScanReport {
        let damage = self.damage.map(|d| match d {
            Damage::TornTail { byte_offset, cause, discarded_bytes } => {
                Damage::TornTail { byte_offset: byte_offset + skip, cause, discarded_bytes }
            }
            Damage::MissingNewline { byte_offset } => {
                Damage::MissingNewline { byte_offset: byte_offset + skip }
            }
            Damage::Corrupt { byte_offset, cause } => {
                Damage::Corrupt { byte_offset: byte_offset + skip, cause }
            }
        });
        ScanReport {
            records: self.records + records,
            good_len: self.good_len + skip,
            file_len: self.file_len + skip,
            damage,
        }
    }
}

/// One record of a journal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Record {
    /// Byte offset of the line's first byte in the file.
    pub offset: u64,
    /// The line, without its trailing `\n`.
    pub line: Vec<u8>,
}

/// Scans the journal at `path` without modifying it.
///
/// # Errors
///
/// [`Error::Io`] if the file cannot be opened or read (a missing file is
/// reported as such, see [`Error::is_not_found`]).
pub fn scan(path: impl AsRef<Path>, validator: Validator) -> Result<ScanReport, Error> {
    let path = path.as_ref();
    let file = File::open(path).at(path)?;
    scan_reader(BufReader::new(file), validator, |_, _| {}).at(path)
}

/// Reads the records of the good prefix of the journal at `path`, without
/// modifying it, together with the scan report.
///
/// # Errors
///
/// As for [`scan`].
pub fn read_records(
    path: impl AsRef<Path>,
    validator: Validator,
) -> Result<(Vec<Record>, ScanReport), Error> {
    let path = path.as_ref();
    let file = File::open(path).at(path)?;
    collect_records(BufReader::new(file), validator).at(path)
}

/// The typed reader: reads the good prefix of the journal at `path`
/// without modifying it, parsing each line once with `parse` and handing
/// `visit` the byte offset and the value of every record, in order.
///
/// `parse` is the validator: a line it refuses (`None`) ends the good
/// prefix exactly as a line [`scan`]'s validator rejects would
/// ([`TornCause::Unparsable`]), so the torn-tail and framing rules are the
/// scanner's and the returned report is the one [`scan`] would give with
/// `parse(line).is_some()` as its validator.
///
/// # Errors
///
/// As for [`scan`].
pub fn read_typed<T>(
    path: impl AsRef<Path>,
    parse: impl FnMut(&[u8]) -> Option<T>,
    mut visit: impl FnMut(u64, T),
) -> Result<ScanReport, Error> {
    let path = path.as_ref();
    let file = File::open(path).at(path)?;
    scan_parsed(BufReader::new(file), parse, |offset, _, value| visit(offset, value)).at(path)
}

/// [`read_typed`] over any reader (an in-memory snapshot of a journal, a
/// prefix of a file); the report describes what `reader` yielded.
///
/// # Errors
///
/// Reading `reader` failed.
pub fn read_typed_from<T>(
    reader: impl BufRead,
    parse: impl FnMut(&[u8]) -> Option<T>,
    mut visit: impl FnMut(u64, T),
) -> io::Result<ScanReport> {
    scan_parsed(reader, parse, |offset, _, value| visit(offset, value))
}

/// The scanner over bytes already in memory (a whole journal read at once): `on_line(offset,
/// line)` decides whether each line (valid UTF-8, not blank, without its `\n`) is a record,
/// and may use it in the same call, borrowing from `bytes`. The torn-tail and framing rules and
/// the report are [`scan`]'s, with `on_line` as the validator: a line it refuses ends the good
/// prefix and is never offered again.
pub fn scan_slice<'a>(
    bytes: &'a [u8],
    mut on_line: impl FnMut(u64, &'a str) -> bool,
) -> ScanReport {
    let part = scan_part(bytes, 0, bytes.len(), &mut on_line);
    merge_parts(bytes.len(), [part])
}

/// [`scan_slice`] over `parts` stretches of `bytes` on as many threads (split at line starts),
/// for work that is bound by what `on_line` does with each line. Each stretch has its own
/// accumulator (`init()`), which `on_line` updates; the report is [`scan_slice`]'s and the
/// accumulators come back in file order, up to and including the stretch holding the first
/// refused line (whose accumulator saw only the lines before it): exactly what one pass in
/// order would have accumulated, split at the stretch boundaries.
pub fn scan_slice_parallel<'a, A: Send>(
    bytes: &'a [u8],
    parts: usize,
    init: impl Fn() -> A + Sync,
    on_line: impl Fn(&mut A, u64, &'a str) -> bool + Sync,
) -> (ScanReport, Vec<A>) {
    let mut bounds = vec![0];
    for k in 1..parts.max(1) {
        let guess = bytes.len() / parts * k;
        let floor = bounds.last().copied().unwrap_or(0).max(guess);
        // The next line start at or after the guess.
        let start = match bytes.get(floor.saturating_sub(1)..) {
            Some(rest) if floor > 0 => memchr::memchr(b'\n', rest).map(|at| floor + at),
            _ => None,
        };
        match start {
            Some(start) if start < bytes.len() => bounds.push(start),
            _ => break,
        }
    }
    bounds.push(bytes.len());
    let run = |from: usize, to: usize| {
        let mut acc = init();
        let part = scan_part(bytes, from, to, &mut |offset, line| on_line(&mut acc, offset, line));
        (part, acc)
    };
    let done: Vec<(Part, A)> = std::thread::scope(|scope| {
        let spawned: Vec<_> = bounds
            .windows(2)
            .skip(1)
            .map(|w| {
                let (from, to) = (w[0], w[1]);
                scope.spawn(move || run(from, to))
            })
            .collect();
        let mut done = vec![run(0, bounds.get(1).copied().unwrap_or(bytes.len()))];
        for handle in spawned {
            match handle.join() {
                Ok(part) => done.push(part),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        done
    });
    let torn_at = done.iter().position(|(part, _)| part.torn.is_some());
    let kept = torn_at.map_or(done.len(), |at| at + 1);
    let (parts, accs): (Vec<Part>, Vec<A>) = done.into_iter().take(kept).unzip();
    (merge_parts(bytes.len(), parts), accs)
}

/// What one stretch of a scan found.
struct Part {
    records: u64,
    /// Where the scan of the stretch stopped (its end, or the refused line).
    end: usize,
    torn: Option<BadLine>,
    ends_with_newline: bool,
}

fn scan_part<'a>(
    bytes: &'a [u8],
    from: usize,
    to: usize,
    on_line: &mut impl FnMut(u64, &'a str) -> bool,
) -> Part {
    let mut offset = from;
    let mut records = 0u64;
    let mut ends_with_newline = true;
    while offset < to {
        let rest = &bytes[offset..to];
        let (line, n, framed) = match memchr::memchr(b'\n', rest) {
            Some(at) => (&rest[..at], at + 1, true),
            None => (rest, rest.len(), false),
        };
        if !is_blank(line) {
            let bad = match std::str::from_utf8(line) {
                Err(_) => Some(BadLine::classify(line, framed, false)),
                Ok(text) if !on_line(offset as u64, text) => {
                    Some(BadLine::classify(line, framed, true))
                }
                Ok(_) => None,
            };
            if bad.is_some() {
                return Part { records, end: offset, torn: bad, ends_with_newline };
            }
            records += 1;
        }
        offset += n;
        ends_with_newline = framed;
    }
    Part { records, end: offset, torn: None, ends_with_newline }
}

/// The report of stretches scanned in order (the last one ends the scan).
fn merge_parts(len: usize, parts: impl IntoIterator<Item = Part>) -> ScanReport {
    let mut records = 0;
    let mut good_len = 0;
    let mut torn = None;
    let mut ends_with_newline = true;
    for part in parts {
        records += part.records;
        good_len = part.end;
        ends_with_newline = part.ends_with_newline;
        if part.torn.is_some() {
            torn = part.torn;
            break;
        }
    }
    let (good_len, file_len) = (good_len as u64, len as u64);
    let damage = match torn {
        Some(bad) => Some(bad.damage(good_len, file_len - good_len)),
        None if !ends_with_newline => Some(Damage::MissingNewline { byte_offset: good_len }),
        None => None,
    };
    ScanReport { records, good_len, file_len, damage }
}

/// Scans `reader` collecting every record.
pub(crate) fn collect_records(
    reader: impl BufRead,
    validator: Validator,
) -> io::Result<(Vec<Record>, ScanReport)> {
    let mut records = Vec::new();
    let report = scan_reader(reader, validator, |offset, line| {
        records.push(Record { offset, line: line.to_vec() });
    })?;
    Ok((records, report))
}

/// Python's `bytes.strip()` whitespace: blank lines are skipped upstream.
pub(crate) fn is_blank(line: &[u8]) -> bool {
    line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c'))
}

/// Why a line may not be appended, or `None` if the scanner accepts it.
pub(crate) fn line_problem(line: &[u8], validator: Validator) -> Option<&'static str> {
    if line.contains(&b'\n') {
        Some("line contains a newline")
    } else if is_blank(line) {
        Some("line is empty or whitespace only")
    } else if std::str::from_utf8(line).is_err() {
        Some("line is not valid UTF-8")
    } else if !validator(line) {
        Some("line is rejected by the validator")
    } else {
        None
    }
}

/// The scanner: calls `on_record(offset, line)` for every record of the
/// good prefix and reports what it found. Reads `reader` to its end.
pub(crate) fn scan_reader(
    reader: impl BufRead,
    validator: Validator,
    mut on_record: impl FnMut(u64, &[u8]),
) -> io::Result<ScanReport> {
    scan_parsed(
        reader,
        |line| validator(line).then_some(()),
        |offset, line, ()| {
            on_record(offset, line);
        },
    )
}

/// The scanner proper, with a parser in place of the validator: a line
/// (valid UTF-8, not blank) is a record when `parse` returns `Some`, and
/// `on_record(offset, line, value)` gets what it returned, so each line is
/// parsed exactly once. Reads `reader` to its end.
pub(crate) fn scan_parsed<T>(
    mut reader: impl BufRead,
    mut parse: impl FnMut(&[u8]) -> Option<T>,
    mut on_record: impl FnMut(u64, &[u8], T),
) -> io::Result<ScanReport> {
    let mut buf = Vec::new();
    let mut offset = 0u64;
    let mut records = 0u64;
    let mut ends_with_newline = true;
    let mut torn = None;
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        let framed = buf.last() == Some(&b'\n');
        let line = if framed { &buf[..n - 1] } else { &buf[..] };
        if !is_blank(line) {
            let parsed = if std::str::from_utf8(line).is_err() {
                Err(BadLine::classify(line, framed, false))
            } else {
                parse(line).ok_or_else(|| BadLine::classify(line, framed, true))
            };
            match parsed {
                Ok(value) => on_record(offset, line, value),
                Err(bad) => {
                    torn = Some((bad, n as u64));
                    break;
                }
            }
            records += 1;
        }
        offset += n as u64;
        ends_with_newline = framed;
    }
    let (file_len, damage) = match torn {
        Some((bad, bad_line_len)) => {
            let rest = io::copy(&mut reader, &mut io::sink())?;
            let discarded_bytes = bad_line_len + rest;
            (offset + discarded_bytes, Some(bad.damage(offset, discarded_bytes)))
        }
        None if !ends_with_newline => {
            (offset, Some(Damage::MissingNewline { byte_offset: offset }))
        }
        None => (offset, None),
    };
    Ok(ScanReport { records, good_len: offset, file_len, damage })
}

/// The first line that is not a record, as the scan classifies it.
#[derive(Debug, Clone, Copy)]
struct BadLine {
    cause: TornCause,
    /// The torn final line of an interrupted append (the only kind a writer may cut).
    torn: bool,
}

impl BadLine {
    /// A line is a torn append only when nothing follows it (no `\n`: every writer writes the
    /// newline last, in the same write) and it is not a complete JSON value (or not UTF-8).
    /// Anything else is damage: a line in the middle, a terminated final line, or a complete
    /// JSON line the validator refuses.
    fn classify(line: &[u8], framed: bool, utf8: bool) -> BadLine {
        let cause = if !utf8 {
            TornCause::Undecodable
        } else if json_line(line) {
            TornCause::Rejected
        } else {
            TornCause::Unparsable
        };
        BadLine { cause, torn: !framed && cause != TornCause::Rejected }
    }

    fn damage(self, byte_offset: u64, discarded_bytes: u64) -> Damage {
        if self.torn {
            Damage::TornTail { byte_offset, cause: self.cause, discarded_bytes }
        } else {
            Damage::Corrupt { byte_offset, cause: self.cause }
        }
    }
}
