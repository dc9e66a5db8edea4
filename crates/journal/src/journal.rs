//! The single writer of one journal file.

use std::fs::{self, File, TryLockError};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::atomic::sync_parent_dir;
use crate::checkpoint::Checkpoint;
use crate::error::{Error, IoContext};
use crate::scan::{self, Damage, Record, ScanReport, Validator};

/// When appended data is made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Durability {
    /// Every [`Journal::append`] / [`Journal::append_batch`] returns only
    /// after `fdatasync` succeeded.
    #[default]
    EveryAppend,
    /// Appends are written but not synced; call [`Journal::sync`] to make
    /// everything written so far durable (group commit across calls).
    /// Dropping the journal syncs on a best-effort basis.
    Batched,
}

/// How [`Journal::open`] opens a journal.
#[derive(Debug, Clone)]
pub struct OpenOptions {
    create: bool,
    durability: Durability,
    validator: Validator,
    lock_wait: std::time::Duration,
    checkpoint: Option<PathBuf>,
}

/// How long [`Journal::open`] waits for the file lock by default.
///
/// A lock can outlive its writer for a moment: a process that forks (to run any child program)
/// shares its open files with the child until the child execs, so a journal its parent has
/// already closed can still be locked for that instant. Waiting briefly absorbs that; a writer
/// that really holds the journal still gets [`Error::Locked`].
pub const DEFAULT_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The longest line [`Journal::last_record`] reads (64 MiB, the size limit of any document the
/// record layers parse): a longer final line is refused rather than read.
pub const MAX_LINE: u64 = 64 << 20;

impl Default for OpenOptions {
    fn default() -> Self {
        Self {
            create: false,
            durability: Durability::default(),
            validator: scan::json_line,
            lock_wait: DEFAULT_LOCK_WAIT,
            checkpoint: None,
        }
    }
}

impl OpenOptions {
    /// The defaults: do not create, [`Durability::EveryAppend`],
    /// [`json_line`](crate::json_line) validator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Create the file (and fsync its directory) if it does not exist.
    #[must_use]
    pub fn create(mut self, create: bool) -> Self {
        self.create = create;
        self
    }

    /// Choose when appends are made durable.
    #[must_use]
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Replace the record validator used by the scan and by appends.
    #[must_use]
    pub fn validator(mut self, validator: Validator) -> Self {
        self.validator = validator;
        self
    }

    /// Keep a scan checkpoint at `path` (`None`: none, the default) and use it, once verified
    /// against the file, to skip re-scanning the prefix it covers: the open then costs the
    /// same on a journal of any length (see the crate notes on the checkpoint). The caller
    /// chooses where it lives (a cache folder, so that the journal's own folder holds only
    /// what its format defines).
    #[must_use]
    pub fn checkpoint(mut self, path: Option<PathBuf>) -> Self {
        self.checkpoint = path;
        self
    }

    /// How long to retry a busy file lock before failing with [`Error::Locked`]
    /// (default [`DEFAULT_LOCK_WAIT`]; zero fails at once).
    #[must_use]
    pub fn lock_wait(mut self, wait: std::time::Duration) -> Self {
        self.lock_wait = wait;
        self
    }
}

/// The exclusive writer of one append-only NDJSON file.
///
/// Holds an exclusive advisory lock on the file until dropped. See the
/// crate documentation for the guarantees.
#[derive(Debug)]
pub struct Journal {
    file: File,
    path: PathBuf,
    /// The size the file must have before the next write.
    end: u64,
    records: u64,
    durability: Durability,
    validator: Validator,
    /// Written but not yet synced data exists (batched mode).
    dirty: bool,
    poisoned: bool,
    /// Where the scan checkpoint lives, when the writer keeps one.
    checkpoint: Option<PathBuf>,
}

impl Journal {
    /// Opens the journal at `path` for appending, locks it, scans it and
    /// repairs what an interrupted append leaves behind.
    ///
    /// The returned report describes the file *before* repair; when it
    /// carries [`Damage`], the file has already been repaired and synced
    /// (the torn final line of [`Damage::TornTail`] cut, or the newline of
    /// [`Damage::MissingNewline`] restored) and the caller should record
    /// the repair, e.g. by appending a repair event. Any other bad line
    /// ([`Damage::Corrupt`]) is refused, and the file is left as it is.
    ///
    /// # Errors
    ///
    /// [`Error::Damaged`] (nothing modified) if a line other than a torn final line is not a
    /// record; [`Error::Locked`] if another `Journal` holds the file;
    /// [`Error::Collision`] if the file changed between scan and repair;
    /// [`Error::Io`] for I/O failures (including a missing file without
    /// [`OpenOptions::create`]).
    pub fn open(
        path: impl AsRef<Path>,
        options: &OpenOptions,
    ) -> Result<(Self, ScanReport), Error> {
        let path = path.as_ref().to_path_buf();
        let file = fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(options.create)
            .open(&path)
            .at(&path)?;
        let deadline = std::time::Instant::now() + options.lock_wait;
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(TryLockError::WouldBlock) => return Err(Error::Locked { path }),
                Err(TryLockError::Error(source)) => return Err(Error::io(path, source)),
            }
        }
        let checkpoint = options.checkpoint.clone();
        // A verified checkpoint lets the scan start where the last one ended.
        let file_len = file.metadata().at(&path)?.len();
        let hint = checkpoint
            .as_deref()
            .and_then(Checkpoint::load)
            .filter(|hint| hint.holds_for(&file, file_len));
        let (skip, skipped) = hint.as_ref().map_or((0, 0), |h| (h.len, h.records));
        (&file).seek(SeekFrom::Start(skip)).at(&path)?;
        let report = scan::scan_reader(BufReader::new(&file), options.validator, |_, _| {})
            .at(&path)?
            .after(skip, skipped);
        if options.create && report.file_len == 0 {
            // The file may just have been created: make its name durable.
            sync_parent_dir(&path)?;
        }
        let mut journal = Self {
            file,
            path,
            end: report.file_len,
            records: report.records,
            durability: options.durability,
            validator: options.validator,
            dirty: false,
            poisoned: false,
            checkpoint,
        };
        journal.check_position()?;
        match report.damage {
            None => {}
            Some(damage @ Damage::Corrupt { byte_offset, .. }) => {
                // Never cut: every line after it may be a valid record. Refuse, name the line.
                (&journal.file).seek(SeekFrom::Start(0)).at(&journal.path)?;
                let line = scan::line_number(&journal.file, byte_offset).at(&journal.path)?;
                return Err(Error::Damaged {
                    path: journal.path.clone(),
                    line,
                    byte_offset,
                    cause: damage.cause(),
                });
            }
            Some(Damage::TornTail { byte_offset, .. }) => {
                journal.file.set_len(byte_offset).at(&journal.path)?;
                journal.file.sync_all().at(&journal.path)?;
                journal.end = byte_offset;
            }
            Some(Damage::MissingNewline { .. }) => {
                journal.write_and_sync(b"\n", 0, Durability::EveryAppend)?;
            }
        }
        if hint.is_none_or(|h| h.len != journal.end) {
            journal.store_checkpoint();
        }
        Ok((journal, report))
    }

    /// Appends one record: `line` plus `\n`, in one write. Returns the byte
    /// offset the line starts at. With [`Durability::EveryAppend`] the
    /// record is durable when this returns.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidLine`] if the line contains `\n`, is blank, is not
    /// UTF-8 or fails the validator; [`Error::Collision`] if the file's
    /// size is not what this writer left it at; [`Error::Poisoned`] after
    /// an earlier failed fsync; [`Error::Io`] if writing or syncing fails
    /// (the partial write is rolled back). Nothing is written on error.
    pub fn append(&mut self, line: &[u8]) -> Result<u64, Error> {
        self.check_line(line)?;
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line);
        buf.push(b'\n');
        self.write_and_sync(&buf, 1, self.durability)
    }

    /// Appends several records with one write and (in
    /// [`Durability::EveryAppend`] mode) one fsync. Returns the byte
    /// offset of the first line; an empty batch writes nothing and returns
    /// the current length. Every line is validated before anything is
    /// written.
    ///
    /// # Errors
    ///
    /// As for [`Journal::append`].
    pub fn append_batch<I>(&mut self, lines: I) -> Result<u64, Error>
    where
        I: IntoIterator,
        I::Item: AsRef<[u8]>,
    {
        let mut buf = Vec::new();
        let mut count = 0;
        for line in lines {
            let line = line.as_ref();
            self.check_line(line)?;
            buf.extend_from_slice(line);
            buf.push(b'\n');
            count += 1;
        }
        if count == 0 {
            return Ok(self.end);
        }
        self.write_and_sync(&buf, count, self.durability)
    }

    /// Makes everything appended so far durable (only does work in
    /// [`Durability::Batched`] mode).
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if the fsync fails, after which the writer is
    /// poisoned; [`Error::Poisoned`] after an earlier failure.
    pub fn sync(&mut self) -> Result<(), Error> {
        self.check_usable()?;
        if self.dirty {
            if let Err(source) = self.file.sync_data() {
                self.poisoned = true;
                return Err(Error::io(&self.path, source));
            }
            self.dirty = false;
        }
        Ok(())
    }

    /// Reads the records this writer knows about (the first [`len`]
    /// bytes) through its locked handle.
    ///
    /// [`len`]: Journal::len
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if reading fails.
    pub fn read_records(&self) -> Result<Vec<Record>, Error> {
        let mut reader = &self.file;
        reader.seek(SeekFrom::Start(0)).at(&self.path)?;
        let (records, _) =
            scan::collect_records(BufReader::new(reader.take(self.end)), self.validator)
                .at(&self.path)?;
        Ok(records)
    }

    /// Visits the records this writer knows about (the first [`len`]
    /// bytes) through its locked handle, in order, with their byte offsets.
    /// The lines are not validated again: they passed the scan on open or
    /// were appended through this writer. Blank lines are skipped, as the
    /// scanner skips them. Stops at the first error `visit` returns.
    ///
    /// [`len`]: Journal::len
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if reading fails (converted into `E`), or `visit`'s
    /// error.
    pub fn for_each_record<E: From<Error>>(
        &self,
        mut visit: impl FnMut(u64, &[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        const CHUNK: usize = 1 << 20;
        let mut file = &self.file;
        file.seek(SeekFrom::Start(0)).at(&self.path)?;
        let mut reader = file.take(self.end);
        // Whole lines are handed out of one buffer; a line longer than it grows it.
        let mut buf = vec![0u8; CHUNK];
        let mut filled = 0;
        let mut base = 0u64;
        loop {
            if filled == buf.len() {
                buf.resize(buf.len() * 2, 0);
            }
            let n = reader.read(&mut buf[filled..]).at(&self.path)?;
            filled += n;
            let mut start = 0;
            while let Some(at) = memchr::memchr(b'\n', &buf[start..filled]) {
                let line = &buf[start..start + at];
                if !scan::is_blank(line) {
                    visit(base + start as u64, line)?;
                }
                start += at + 1;
            }
            if n == 0 {
                let line = &buf[start..filled];
                if !scan::is_blank(line) {
                    visit(base + start as u64, line)?;
                }
                return Ok(());
            }
            buf.copy_within(start..filled, 0);
            base += start as u64;
            filled -= start;
        }
    }

    /// Reads `[from, to)` of the bytes this writer knows about (clamped to the first [`len`])
    /// through its locked handle, handing them to `visit` in order, a chunk at a time (one
    /// buffer of at most 256 KiB, reused): for hashing or copying part of the journal without
    /// holding all of it.
    ///
    /// [`len`]: Journal::len
    ///
    /// # Errors
    ///
    /// [`Error::Io`] if reading fails (converted into `E`), or `visit`'s error.
    pub fn read_chunks<E: From<Error>>(
        &self,
        from: u64,
        to: u64,
        mut visit: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        use std::os::unix::fs::FileExt;
        let to = to.min(self.end);
        let mut buf = vec![0u8; usize::try_from(to.saturating_sub(from)).unwrap_or(0).min(1 << 18)];
        let mut at = from;
        while at < to {
            let want = usize::try_from(to - at).unwrap_or(usize::MAX).min(buf.len());
            let n = self.file.read_at(&mut buf[..want], at).at(&self.path)?;
            if n == 0 {
                return Err(Error::io(&self.path, std::io::ErrorKind::UnexpectedEof.into()).into());
            }
            visit(&buf[..n])?;
            at += n as u64;
        }
        Ok(())
    }

    /// The last record this writer knows about, found by reading backwards from the end of its
    /// first [`len`] bytes, 64 KiB at a time: appending after it must not cost a read of the
    /// whole journal. The chunks of the line are kept as read and joined once, so the work is
    /// linear in the length of the line (and of any blank lines after it), and a line longer
    /// than [`MAX_LINE`] is refused as soon as that many bytes have been read without finding
    /// its start, whatever its length.
    ///
    /// [`len`]: Journal::len
    ///
    /// # Errors
    ///
    /// [`Error::LineTooLong`] for a final line over [`MAX_LINE`]; [`Error::Io`] if reading
    /// fails.
    pub fn last_record(&self) -> Result<Option<Record>, Error> {
        use std::os::unix::fs::FileExt;
        const STEP: u64 = 1 << 16;
        let mut pos = self.end;
        // The candidate line is [.., line_end); `pieces` holds its bytes read so far, last
        // piece first.
        let mut line_end = self.end;
        let mut pieces: Vec<Vec<u8>> = Vec::new();
        let mut chunk = Vec::new();
        loop {
            let step = pos.min(STEP);
            let from = pos - step;
            chunk.resize(usize::try_from(step).unwrap_or(0), 0);
            self.file.read_exact_at(&mut chunk, from).at(&self.path)?;
            // `stop` is where the candidate line ends inside this chunk.
            let mut stop =
                usize::try_from(line_end - from).map_or(chunk.len(), |n| n.min(chunk.len()));
            for nl in memchr::memrchr_iter(b'\n', &chunk[..stop]) {
                let head = &chunk[nl + 1..stop];
                let offset = from + nl as u64 + 1;
                if line_end - offset > MAX_LINE {
                    return Err(Error::LineTooLong { path: self.path.clone(), limit: MAX_LINE });
                }
                if !(scan::is_blank(head) && pieces.iter().all(|p| scan::is_blank(p))) {
                    return Ok(Some(Record { offset, line: join(head, &pieces) }));
                }
                // A blank line (as the scanner skips them): the candidate moves up.
                pieces.clear();
                stop = nl;
                line_end = from + nl as u64;
            }
            if line_end - from > MAX_LINE {
                return Err(Error::LineTooLong { path: self.path.clone(), limit: MAX_LINE });
            }
            if from == 0 {
                let head = &chunk[..stop];
                if scan::is_blank(head) && pieces.iter().all(|p| scan::is_blank(p)) {
                    return Ok(None);
                }
                return Ok(Some(Record { offset: 0, line: join(head, &pieces) }));
            }
            pieces.push(chunk[..stop].to_vec());
            pos = from;
        }
    }

    /// The journal's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's length in bytes as this writer left it.
    pub fn len(&self) -> u64 {
        self.end
    }

    /// True if the journal holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.end == 0
    }

    /// The number of records in the journal.
    pub fn records(&self) -> u64 {
        self.records
    }

    fn check_usable(&self) -> Result<(), Error> {
        if self.poisoned { Err(Error::Poisoned { path: self.path.clone() }) } else { Ok(()) }
    }

    fn check_line(&self, line: &[u8]) -> Result<(), Error> {
        match scan::line_problem(line, self.validator) {
            Some(reason) => Err(Error::InvalidLine { path: self.path.clone(), reason }),
            None => Ok(()),
        }
    }

    /// The position check: the file must be exactly as this writer left it.
    fn check_position(&self) -> Result<(), Error> {
        let found = self.file.metadata().at(&self.path)?.len();
        if found == self.end {
            Ok(())
        } else {
            Err(Error::Collision { path: self.path.clone(), expected: self.end, found })
        }
    }

    /// Writes `buf` (holding `records` records) at the end in one write,
    /// then syncs according to `durability`. Returns the start offset.
    fn write_and_sync(
        &mut self,
        buf: &[u8],
        records: u64,
        durability: Durability,
    ) -> Result<u64, Error> {
        self.check_usable()?;
        self.check_position()?;
        let start = self.end;
        if let Err(source) = (&self.file).write_all(buf) {
            self.roll_back();
            return Err(Error::io(&self.path, source));
        }
        self.dirty = true;
        if durability == Durability::EveryAppend {
            if let Err(source) = self.file.sync_data() {
                // After a failed fsync the page cache cannot be trusted:
                // undo what we can and refuse further writes.
                self.roll_back();
                self.poisoned = true;
                return Err(Error::io(&self.path, source));
            }
            self.dirty = false;
        }
        self.end += buf.len() as u64;
        self.records += records;
        self.store_checkpoint();
        Ok(start)
    }

    /// Records the scan checkpoint for the current length (when this writer keeps one).
    fn store_checkpoint(&self) {
        let Some(path) = &self.checkpoint else { return };
        match self.last_record() {
            Ok(Some(last)) => {
                if let Some(hint) = Checkpoint::of(&self.file, self.end, self.records, last.offset)
                {
                    hint.store(path);
                }
            }
            // Nothing to anchor to: drop any older hint.
            _ => {
                let _ = std::fs::remove_file(path);
            }
        }
    }

    /// Best effort: cut a failed write back to the last good size.
    fn roll_back(&mut self) {
        let restored = self.file.set_len(self.end).and_then(|()| self.file.sync_all());
        if restored.is_err() {
            self.poisoned = true;
        }
    }
}

/// `head` followed by `pieces` in reverse order (they were read backwards).
fn join(head: &[u8], pieces: &[Vec<u8>]) -> Vec<u8> {
    let mut line = Vec::with_capacity(head.len() + pieces.iter().map(Vec::len).sum::<usize>());
    line.extend_from_slice(head);
    for piece in pieces.iter().rev() {
        line.extend_from_slice(piece);
    }
    line
}

impl Drop for Journal {
    fn drop(&mut self) {
        if self.dirty && !self.poisoned {
            // Best effort; call `sync` to observe the error.
            let _ = self.file.sync_data();
        }
    }
}
