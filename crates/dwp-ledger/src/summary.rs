//! The journal summary: a cache of what the read paths take from the live journal, checked
//! against the journal's bytes before it is used.
//!
//! `ledger project`, `scheduler ready` and `outcomes receipt` each need the same few things
//! from the live journal: every line checked as strict JSON, the last seq, the per-type
//! positions and the handful of events they decide on ([`dwp::event::Tally`]). Reading them
//! means walking every byte of every line. The summary (a file in the cache folder,
//! [`cache_file`]) records that tally for the first `len` bytes of the journal together with the
//! sha256 of exactly those bytes. A reader hashes the journal's first `len` bytes (several
//! times cheaper than checking them as JSON) and uses the summary only when the digest
//! matches; the bytes after `len` (events appended since) are checked and tallied as usual and
//! merged in. Any edit to the covered bytes, a truncation, a rolled journal or a damaged or
//! hand-edited summary changes or breaks the comparison (the summary also carries a seal, a
//! sha256 over its own fields, so an edit of the tally itself is caught too), and the whole
//! journal is read instead: the summary is never trusted, only confirmed.
//!
//! Only `ledger project` writes it (it holds the plan lock and has just read everything); the
//! read-only helpers only use it. It is written with a rename and not fsynced: a lost or torn
//! summary costs one full read, nothing else.

use std::fs;
use std::path::{Path, PathBuf};

use canonical_json::{Map, Value};
use dwp::event::{Compact, Tally};
use journal::ScanReport;
use sha2::{Digest, Sha256};

use crate::error::{Result, io_fail};

// Version 2: summaries written since a line needs a valid seq to be a record (a version-1
// summary may cover a line the rule now refuses, so it is not trusted).
const SCHEMA: &str = "dwp-journal-summary/2";

/// Where a cache about the journal at `journal` lives: `<cache>/<key>.<kind>`, the cache folder
/// being `$DWP_CACHE_DIR`, else `$XDG_CACHE_HOME/dwp`, else `$HOME/.cache/dwp`, and the key the
/// first 32 hex digits of the sha256 of the journal's absolute path. `None` when no folder is
/// known (then nothing is cached). The caches stay out of the plan folder, which holds exactly
/// the files the DWP format defines; each is checked against the journal before it is used, so
/// a cache left behind by a moved or rewritten plan is simply not used.
pub fn cache_file(journal: &Path, kind: &str) -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let folder = var("DWP_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("dwp")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("dwp")))?;
    let absolute = std::path::absolute(journal).ok()?;
    let key = canonical_json::digest::sha256_hex(absolute.as_os_str().as_encoded_bytes());
    Some(folder.join(format!("{}.{kind}", key.get(..32)?)))
}

/// What a read of the live journal found.
#[derive(Debug)]
pub(crate) struct Live {
    /// The tally of the good prefix.
    pub(crate) tally: Tally,
    /// The scan report (offsets are the journal's).
    pub(crate) report: ScanReport,
    /// sha256 (lowercase hex) of all the bytes read (empty when it was not asked for).
    pub(crate) sha256: String,
    /// The summary was missing, stale or did not match: a new one would differ.
    pub(crate) outdated: bool,
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The seal over a summary's own content: any edit of the length, count, digest or tally
/// that does not also recompute it is caught on load.
fn seal(len: usize, records: u64, sha256: &str, tally: &Tally) -> Option<String> {
    let tally = canonical_json::to_python_compact(&tally.to_value()).ok()?;
    let mut hasher = Sha256::new();
    hasher.update(format!("{SCHEMA} {len} {records} {sha256} ").as_bytes());
    hasher.update(&tally);
    Some(hex(&hasher.finalize()))
}

/// A summary read from `path`: the covered length, its digest, its record count and tally.
fn load(path: &Path) -> Option<(usize, String, u64, Tally)> {
    let doc = canonical_json::parse(&fs::read(path).ok()?).ok()?;
    if doc.str_at("schema") != Some(SCHEMA) {
        return None;
    }
    let len = usize::try_from(doc.get("len")?.as_i64()?).ok()?;
    let sha256 = doc.str_at("sha256")?.to_owned();
    let records = u64::try_from(doc.get("records")?.as_i64()?).ok()?;
    let tally = Tally::from_value(doc.get("tally")?)?;
    if doc.str_at("seal")? != seal(len, records, &sha256, &tally)? {
        return None;
    }
    Some((len, sha256, records, tally))
}

/// How many threads check a journal of `len` bytes: one below 1 MiB, else the available
/// parallelism (at most four).
pub(crate) fn read_threads(len: usize) -> usize {
    if len < 1 << 20 {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get).min(4)
}

/// Reads `[from, to)` of the live journal, a chunk at a time, into the visitor.
pub(crate) type ReadChunks<'r> = &'r dyn Fn(u64, u64, &mut dyn FnMut(&[u8])) -> Result<()>;

/// `[from, to)` of `file`, a chunk at a time (one 256 KiB buffer).
pub(crate) fn file_chunks(
    file: &fs::File,
    path: &Path,
    from: u64,
    to: u64,
    visit: &mut dyn FnMut(&[u8]),
) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; usize::try_from(to.saturating_sub(from)).unwrap_or(0).min(1 << 18)];
    let mut at = from;
    while at < to {
        let want = usize::try_from(to - at).unwrap_or(usize::MAX).min(buf.len());
        match file.read_at(&mut buf[..want], at) {
            Ok(0) => {
                return Err(io_fail(path, std::io::Error::from(std::io::ErrorKind::UnexpectedEof)));
            }
            Ok(n) => {
                visit(&buf[..n]);
                at += n as u64;
            }
            Err(e) => return Err(io_fail(path, e)),
        }
    }
    Ok(())
}

/// Tallies the `len` bytes of the live journal that `read` hands out (its summary, if any, at
/// `summary`): the bytes a matching summary covers are only hashed, a chunk at a time; each
/// line after them is checked strictly (a line that is not strict JSON ends the good prefix, as
/// in [`journal::scan_slice`]), on [`read_threads`] threads when there are many. Without
/// `digest`, only the bytes a summary claims to cover are hashed (to check it), and
/// [`Live::sha256`] is empty.
///
/// # Errors
/// What `read` reports.
pub(crate) fn tally_live(
    len: u64,
    read: ReadChunks<'_>,
    summary: Option<&Path>,
    digest: bool,
) -> Result<Live> {
    let mut hasher = Sha256::new();
    let mut cached = None;
    if let Some((covered, digest, records, tally)) = summary.and_then(load)
        && covered > 0
        && covered as u64 <= len
    {
        let mut last = 0u8;
        read(0, covered as u64, &mut |chunk| {
            hasher.update(chunk);
            last = chunk.last().copied().unwrap_or(last);
        })?;
        if last == b'\n' && hex(&hasher.clone().finalize()) == digest {
            cached = Some((covered as u64, records, tally));
        } else {
            hasher = Sha256::new();
        }
    }
    let outdated = cached.is_none();
    let (start, records, mut tally) = cached.unwrap_or((0, 0, Tally::default()));
    let mut rest = Vec::with_capacity(usize::try_from(len - start).unwrap_or(0));
    read(start, len, &mut |chunk| rest.extend_from_slice(chunk))?;
    let rest = &rest[..];
    let (report, parts, sha256) = std::thread::scope(|scope| {
        // Hashing what is left runs beside the check (unless nobody needs the digest).
        let digest = digest.then(|| {
            scope.spawn(move || {
                hasher.update(rest);
                hex(&hasher.finalize())
            })
        });
        let (report, parts) = journal::scan_slice_parallel(
            rest,
            read_threads(rest.len()),
            Tally::default,
            |tally, _, line| match Compact::parse_text(line) {
                // The one journal-line rule (`dwp::event::record`): strict JSON, a valid seq.
                Ok(event) if event.is_record() => {
                    tally.feed(&event);
                    true
                }
                _ => false,
            },
        );
        let sha256 = digest
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .unwrap_or_default();
        (report, parts, sha256)
    });
    for part in parts {
        tally.merge(part);
    }
    let outdated = outdated || !rest.is_empty();
    Ok(Live { tally, report: report.after(start, records), sha256, outdated })
}

/// Writes the summary of a journal read whole and clean (`live` of `len` bytes ending with a
/// newline): temp file and rename, no fsync. Failures are ignored (the next read is a full one).
pub(crate) fn store(summary: Option<&Path>, live: &Live, len: u64) {
    let Some(summary) = summary else { return };
    if live.report.damage.is_some() || !live.outdated || live.sha256.is_empty() {
        return;
    }
    let records = live.report.records;
    let Ok(len) = usize::try_from(len) else { return };
    let Some(seal) = seal(len, records, &live.sha256, &live.tally) else { return };
    let doc = Value::Object(Map::from([
        ("schema".to_owned(), SCHEMA.into()),
        ("len".to_owned(), len.into()),
        ("sha256".to_owned(), live.sha256.as_str().into()),
        ("records".to_owned(), records.into()),
        ("tally".to_owned(), live.tally.to_value()),
        ("seal".to_owned(), seal.into()),
    ]));
    let Ok(text) = canonical_json::to_python_compact(&doc) else { return };
    let mut tmp = summary.as_os_str().to_owned();
    tmp.push(format!(".tmp-{}", std::process::id()));
    if let Some(parent) = summary.parent() {
        let _ = fs::create_dir_all(parent);
    }
    if fs::write(&tmp, text).is_ok() && fs::rename(&tmp, summary).is_err() {
        let _ = fs::remove_file(&tmp);
    }
}
