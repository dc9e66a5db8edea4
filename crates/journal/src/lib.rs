//! Append-only NDJSON journals that survive crashes, plus the small file
//! protocols that go with them.
//!
//! # Purpose
//!
//! DWP plans keep their history in `journal.ndjson` and Cookwala missions
//! keep event logs in the same shape: one complete JSON value per line,
//! appended and never rewritten. This crate owns the byte-level discipline
//! of such files so the record layers above it only deal in events:
//!
//! * [`Journal`] is the single writer of one journal file. Opening it takes
//!   an exclusive advisory lock, scans the file, repairs the damage an
//!   interrupted append can leave behind, and hands back a [`ScanReport`]
//!   so the caller can record the repair (DWP appends a `journal_repair`
//!   event). [`Journal::append`] writes one line and returns once it is
//!   durable; [`Journal::append_batch`] writes several lines with one write
//!   and one fsync (group commit).
//! * [`OpenOptions::checkpoint`] keeps a verified scan checkpoint (in a
//!   file the caller names), so that opening a writer to append one line
//!   does not re-scan everything earlier opens already scanned.
//! * [`scan`], [`read_records`], the typed reader [`read_typed`] and
//!   [`scan_slice`] (a journal already in memory, lines borrowed from it) are
//!   the read-only side: they report the same damage but never modify the
//!   file. [`Journal::for_each_record`] and [`Journal::last_record`] read
//!   what an open writer holds (the last record from the tail of the file,
//!   without reading the rest).
//! * [`lockdir::LockDir`] implements the cooperative `.ledger.lock/`
//!   directory protocol of the upstream Python DWP tools, so Rust and
//!   Python writers exclude each other.
//! * [`atomic_replace`] replaces a projection file such as `state.json`
//!   with temp file + fsync + rename + directory fsync.
//! * [`append_synced`] appends to a plain side file (DWP's
//!   `evidence.jsonl` reuse cache) with one write + fsync, and fsyncs the
//!   directory when it creates the file.
//!
//! # Key design decisions
//!
//! **Upstream-compatible scanning, stricter repair.** The scanner reads
//! lines as the Python ledger's `read_journal` does: lines are split on `\n`;
//! lines that are empty or consist only of ASCII whitespace are skipped (they
//! are neither records nor damage); every other line must be valid UTF-8 and
//! accepted by the [`Validator`] (by default: parses as JSON). Scanning stops
//! at the first bad line. What happens next is where this crate departs from
//! upstream, which truncates at the first bad line wherever it is and so
//! deletes every valid line after a corrupt one. Here only a *torn final
//! line* is repairable ([`Damage::TornTail`]): it has no `\n` after it (every
//! writer writes the newline last, in the same write, so an interrupted append
//! cannot leave one) and it is not a complete JSON value (or not UTF-8).
//! Cutting it discards that line and nothing else; its cause texts are
//! upstream's, byte for byte ([`CAUSE_UNDECODABLE`], [`CAUSE_UNPARSABLE`]).
//! Any other bad line — one in the middle, a final line that kept its
//! newline, a complete JSON line the validator refuses — is
//! [`Damage::Corrupt`]: readers report it with its position, and
//! [`Journal::open`] refuses with [`Error::Damaged`] (line number and byte
//! offset) without touching the file, so that a person decides what the line
//! was. A file whose last line is complete but lacks its trailing newline is
//! *not* torn: the event is kept and only the framing newline is restored
//! ([`Damage::MissingNewline`], [`CAUSE_MISSING_NEWLINE`]).
//!
//! **Repair belongs to the writer, reporting to the caller.** [`scan`] never
//! modifies anything. [`Journal::open`] repairs what an interrupted append
//! leaves (cut the torn final line, or append the missing newline, then fsync) and returns the damage
//! it found instead of writing its own repair record, because what such a
//! record looks like is the caller's schema.
//!
//! **Two independent guards against a second writer.** The journal handle
//! holds an exclusive `flock` ([`std::fs::File::try_lock`]) for its whole
//! lifetime, which excludes other `Journal`s. Writers that bypass the lock
//! (editors, older tools) are caught by the *position check*: before every
//! write the writer compares the file's size with the size it expects and
//! refuses with [`Error::Collision`] instead of interleaving histories.
//!
//! **One write per append.** A line and its newline go to the kernel in a
//! single `write_all` on an `O_APPEND` handle, followed by `fdatasync`
//! (unless [`Durability::Batched`] is chosen). A failed write is rolled back
//! by truncating to the last good size; after a failed fsync the writer is
//! poisoned ([`Error::Poisoned`]) because the page cache can no longer be
//! trusted, and must be reopened (which rescans and repairs).
//!
//! **A checkpoint is a hint, checked before it is trusted.** With
//! [`OpenOptions::checkpoint`] the writer records, after each open and
//! append, how long the cleanly scanned prefix is, how many records it holds
//! and the sha256 of its final line. The next open uses it only if the file
//! is at least that long and that line (preceded by a newline) still hashes
//! to the recorded digest, and the file has not been written to since (its
//! inode and status-change time are the recorded ones); then only the bytes
//! after the prefix are scanned. Anything else (no hint, a torn or edited
//! hint, another tool's append, an edit anywhere, a truncated or replaced
//! journal) means a full scan and a fresh hint, so a damaged line in the
//! prefix is always found. The hint is written with a rename but never
//! fsynced: losing it costs one full scan.
//!
//! **Appends are validated.** [`Journal::append`] refuses lines the scanner
//! would reject (newlines, blank lines, invalid UTF-8, validator failures),
//! because one bad line would make the next open discard everything written
//! after it.
//!
//! **No unsafe, no clocks inside.** Process liveness uses
//! `rustix::process::test_kill_process`; lock staleness is computed from a
//! caller-supplied `now`, so tests can simulate time. UTC timestamps are
//! formatted by a small civil-from-days routine ([`utc_timestamp`]) rather
//! than a date crate.

#![warn(missing_docs)]

mod append;
mod atomic;
mod checkpoint;
mod error;
mod journal;
pub mod lockdir;
mod scan;
mod time;

pub use append::append_synced;
pub use atomic::atomic_replace;
pub use error::Error;
pub use journal::{DEFAULT_LOCK_WAIT, Durability, Journal, MAX_LINE, OpenOptions};
pub use scan::{
    CAUSE_DAMAGED_UNDECODABLE, CAUSE_DAMAGED_UNPARSABLE, CAUSE_MISSING_NEWLINE, CAUSE_REJECTED,
    CAUSE_UNDECODABLE, CAUSE_UNPARSABLE, Damage, Record, ScanReport, TornCause, Validator,
    json_line, line_number, read_records, read_typed, read_typed_from, scan, scan_slice,
    scan_slice_parallel,
};
pub use time::utc_timestamp;

#[cfg(test)]
mod tests;
