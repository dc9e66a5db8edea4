//! The scan checkpoint: a verified hint that the first bytes of a journal were already scanned.
//!
//! Opening a writer scans the whole file, which makes one append cost a read of the whole
//! journal. With [`OpenOptions::checkpoint`](crate::OpenOptions::checkpoint) the writer keeps,
//! in a file the caller names, how long the file was when it was last scanned
//! clean, how many records that prefix holds, and the offset and sha256 of its final line (the
//! *anchor*). On the next open the hint is checked against the file before it is used: the file
//! must be at least that long, the anchor must start right after a newline and end with one,
//! its bytes must hash to the recorded digest, and the file's *stamp* (inode and status-change
//! time, which the kernel moves on every write and no user call can set back) must be the one
//! recorded. Only then is the prefix skipped and the scan resumes where the hint ends. A
//! missing, unreadable, stale or tampered hint fails one of the checks and the whole file is
//! scanned, after which a fresh hint is written.
//!
//! The stamp means that any write the hint's own writer did not make (another tool's append, an
//! edit in the middle that keeps the file's length and its final line, a replaced file) costs
//! the next open a full scan: the hint saves work only between a writer's own appends, and never
//! hides an edit. (Version 1 hints had no stamp and resumed after other writers' appends, which
//! let such an edit pass; they are no longer read.)
//!
//! The hint is never fsynced: losing it, or finding it torn after a crash, costs one full scan
//! and nothing else, because it is verified before use.

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use sha2::{Digest, Sha256};

/// The hint's first word (its format version).
// Version 2 adds the file's stamp (inode and change time).
const MAGIC: &str = "journal-checkpoint-v2";
/// Anchors longer than this are not trusted to be a line (the file is scanned instead).
const MAX_ANCHOR: u64 = 1 << 24;

/// What a writer remembers about the prefix it scanned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    /// The scanned prefix: `[0, len)`, complete lines only.
    pub(crate) len: u64,
    /// Records in the prefix.
    pub(crate) records: u64,
    /// Where the prefix's final line starts.
    pub(crate) anchor: u64,
    /// sha256 (lowercase hex) of `[anchor, len)`.
    pub(crate) digest: String,
    /// The file's inode and status-change time when the hint was written ([`stamp`]).
    pub(crate) stamp: String,
}

/// The file's identity and last change: `inode:ctime_sec.ctime_nsec`. The kernel moves the
/// change time on every write and metadata change and no user call can set it back, so any
/// write since the hint was stored (an edit in the middle that keeps the length and the last
/// line included) makes the hint unusable.
pub(crate) fn stamp(file: &File) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata().ok()?;
    Some(format!("{}:{}.{:09}", meta.ino(), meta.ctime(), meta.ctime_nsec()))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

impl Checkpoint {
    /// The hint for a file whose first `len` bytes hold `records` records, the last line of
    /// which starts at `anchor`; `None` for an empty prefix or an unreadable anchor.
    pub(crate) fn of(file: &File, len: u64, records: u64, anchor: u64) -> Option<Checkpoint> {
        let bytes = read_range(file, anchor, len)?;
        let digest = hex(&Sha256::digest(&bytes));
        let stamp = stamp(file)?;
        (len > 0).then_some(Checkpoint { len, records, anchor, digest, stamp })
    }

    /// Reads the hint at `path`; `None` when it is missing or malformed.
    pub(crate) fn load(path: &Path) -> Option<Checkpoint> {
        let text = fs::read_to_string(path).ok()?;
        let mut words = text.split_ascii_whitespace();
        if words.next()? != MAGIC {
            return None;
        }
        let len = words.next()?.parse().ok()?;
        let records = words.next()?.parse().ok()?;
        let anchor = words.next()?.parse().ok()?;
        let digest = words.next()?.to_owned();
        let stamp = words.next()?.to_owned();
        let well_formed = digest.len() == 64
            && digest.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            && words.next().is_none();
        well_formed.then_some(Checkpoint { len, records, anchor, digest, stamp })
    }

    /// True when the hint describes a prefix of `file` (`file_len` bytes long).
    pub(crate) fn holds_for(&self, file: &File, file_len: u64) -> bool {
        if self.len == 0 || self.len > file_len || self.anchor >= self.len {
            return false;
        }
        if self.len - self.anchor > MAX_ANCHOR {
            return false;
        }
        // Written to since (by anyone): the prefix may have changed too.
        if stamp(file).as_deref() != Some(self.stamp.as_str()) {
            return false;
        }
        // The anchor plus the newline before it (when it is not the first line).
        let from = self.anchor.saturating_sub(1);
        let Some(bytes) = read_range(file, from, self.len) else { return false };
        let (before, line) =
            if self.anchor == 0 { (None, &bytes[..]) } else { (bytes.first(), &bytes[1..]) };
        if before.is_some_and(|b| *b != b'\n') || line.last() != Some(&b'\n') {
            return false;
        }
        hex(&Sha256::digest(line)) == self.digest
    }

    /// Writes the hint (temp file and rename, no fsync: see the module notes). Failures are
    /// ignored: a missing hint only costs the next open a full scan.
    pub(crate) fn store(&self, path: &Path) {
        let text = format!(
            "{MAGIC} {} {} {} {} {}\n",
            self.len, self.records, self.anchor, self.digest, self.stamp
        );
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(format!(".tmp-{}", std::process::id()));
        if let Some(parent) = path.parent() {
            let _ = fs::create_dir_all(parent);
        }
        if fs::write(&tmp, text).is_ok() && fs::rename(&tmp, path).is_err() {
            let _ = fs::remove_file(&tmp);
        }
    }
}

/// `[from, to)` of `file`, or `None` when it cannot be read whole.
fn read_range(mut file: &File, from: u64, to: u64) -> Option<Vec<u8>> {
    let mut bytes = vec![0u8; usize::try_from(to.checked_sub(from)?).ok()?];
    file.seek(SeekFrom::Start(from)).ok()?;
    file.read_exact(&mut bytes).ok()?;
    Some(bytes)
}
