//! The single journal writer of one plan: the plan lock, the journal crate's file lock and
//! repair, and the append path where every event is validated against the live contract
//! ([`dwp::validate::journal_event_errors`]) before it is written.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use canonical_json::{Map, Value};
use dwp::projection::{self, seq_of};
use dwp::py::repr_str;
use dwp::validate;
use journal::{Damage, Journal, OpenOptions, lockdir::LockDir};

use crate::error::{LedgerError, Result, fail, journal_err};
use crate::files::{refuse_symlink, timestamp};
use crate::plan::{EVIDENCE_NAME, JOURNAL_NAME, LOCK_IDENTITY, Plan};
use crate::reader::DamagedLine;
use crate::values::{actor, int, obj, s};

/// How long a writer waits for the plan lock by default: long enough for a queue of writers
/// that merely overlap (each holds the lock for one fsynced append, a few milliseconds) to
/// drain, short enough that a hung holder is reported while someone is still watching.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(30);

/// The lock wait of this process, in milliseconds ([`set_lock_wait`]).
static LOCK_WAIT_MS: AtomicU64 = AtomicU64::new(30_000);

/// Sets how long every writer this process opens waits for the plan lock (`dwp ledger
/// --lock-wait SECS`; zero fails at once, as upstream does). The default is
/// [`DEFAULT_LOCK_WAIT`].
pub fn set_lock_wait(wait: Duration) {
    LOCK_WAIT_MS.store(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// The lock wait [`set_lock_wait`] set.
pub fn lock_wait() -> Duration {
    Duration::from_millis(LOCK_WAIT_MS.load(Ordering::Relaxed))
}

/// A mint-rule-checked append request from `ledger append`.
#[derive(Clone, Debug)]
pub struct AppendRequest {
    /// Event type.
    pub etype: String,
    /// Payload object.
    pub payload: Map,
    /// Actor object.
    pub actor: Value,
    /// Optional note.
    pub note: Option<String>,
    /// Deduplicate on content.
    pub idempotent: bool,
    /// `--trust`.
    pub trust: Option<String>,
    /// `--evidence-path`.
    pub evidence_path: Option<String>,
}

/// What [`Writer::repair_lines`] did.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RepairReport {
    /// The removed lines, as they were.
    pub lines: Vec<DamagedLine>,
    /// The copy of the whole journal from before the repair.
    pub set_aside: std::path::PathBuf,
    /// Its sha256.
    pub sha256: String,
}

/// The single journal writer of one plan (holds the cooperative lock).
#[derive(Debug)]
pub struct Writer {
    /// The plan.
    pub plan: Plan,
    pub(crate) lock: Option<LockDir>,
    pub(crate) journal: Option<Journal>,
    /// Archived + live events.
    pub events: Vec<Value>,
    pub(crate) seq_floor: i64,
    /// The last live seq when events were not loaded ([`Load::Tail`]).
    pub(crate) tail_seq: i64,
    pub(crate) now: SystemTime,
}

/// How much of the journal a writer loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// Archived + live events (needed for approval checks, dedup, gates, projection).
    Full,
    /// Only the last live event's seq: enough for a plain append.
    Tail,
}

impl Writer {
    /// Takes the lock, opens the journal, repairs a torn tail or lost newline (each repair is
    /// recorded as a `journal_repair` event) and loads archived + live events.
    ///
    /// # Errors
    /// Lock held (unless `force`), I/O, corrupt journal lines.
    pub fn open(plan: Plan, force: bool, now: SystemTime) -> Result<Writer> {
        Writer::open_with(plan, force, now, Load::Full)
    }

    /// [`Writer::open`] loading only what `load` asks for.
    ///
    /// # Errors
    /// As for [`Writer::open`].
    pub fn open_with(plan: Plan, force: bool, now: SystemTime, load: Load) -> Result<Writer> {
        let lock = Writer::lock(&plan, force, now)?;
        Writer::open_locked(plan, lock, now, load)
    }

    /// Takes the plan lock (after refusing symlinked plan files).
    fn lock(plan: &Plan, force: bool, now: SystemTime) -> Result<LockDir> {
        for name in [JOURNAL_NAME, EVIDENCE_NAME, "state.json", "gates", ".ledger.lock"] {
            refuse_symlink(&plan.dir.join(name))?;
        }
        let identity = format!("{LOCK_IDENTITY} pid:{}", std::process::id());
        let wait = lock_wait();
        LockDir::acquire_within(journal::lockdir::lock_path(&plan.dir), &identity, now, force, wait)
            .map_err(|e| match e {
                journal::Error::LockHeld { identity, started_ts, .. } => fail(format!(
                    "another writer holds the plan lock: {identity} (started {started_ts}); \
                     waited {:.1} s for it (--lock-wait SECS sets the wait); nothing was \
                     written; use --force only after verifying that writer is dead",
                    wait.as_secs_f64()
                )),
                e => journal_err(e),
            })
    }

    /// [`Writer::open_with`] under a plan lock already held.
    fn open_locked(plan: Plan, lock: LockDir, now: SystemTime, load: Load) -> Result<Writer> {
        let mut writer = Writer {
            seq_floor: plan.archive_top_seq(),
            plan,
            lock: Some(lock),
            journal: None,
            events: Vec::new(),
            tail_seq: 0,
            now,
        };
        let path = writer.plan.journal_path();
        let mut damage = None;
        if path.exists() {
            // A plain append checks only what earlier opens have not (the verified checkpoint).
            // ("checkpoint-v2": hints written since the scan checks the seq rule too; an older
            // hint may cover a line that rule refuses.)
            let checkpoint = (load == Load::Tail)
                .then(|| crate::summary::cache_file(&path, "checkpoint-v2"))
                .flatten();
            // The journal crate scans with the one journal-line rule (`dwp::event::record`), so a
            // line with a bad seq is damage the open refuses, like a line that does not parse.
            let options =
                OpenOptions::new().checkpoint(checkpoint).validator(dwp::event::is_record);
            let (journal, report) = Journal::open(&path, &options).map_err(|e| match e {
                journal::Error::Damaged { byte_offset, cause, .. } => {
                    DamagedLine::describe_file(&path, byte_offset, cause).refusal()
                }
                e => journal_err(e),
            })?;
            if load == Load::Tail {
                // The crate's scan (from its checkpoint) has checked and repaired the file: a
                // plain append needs only the last event's seq, read from the end of the file.
                if let Some(last) = journal.last_record().map_err(journal_err)? {
                    let event = dwp::event::record(&last.line).ok_or_else(|| {
                        DamagedLine::describe(&last.line, 0, journal::CAUSE_REJECTED).refusal()
                    })?;
                    writer.tail_seq = seq_of(&event);
                }
                writer.journal = Some(journal);
                return writer.record_damage(report.damage);
            }
            // The journal crate has scanned and repaired the file and we hold both locks: walk
            // its records once and parse each line strictly.
            let mut live = Vec::with_capacity(usize::try_from(journal.records()).unwrap_or(0));
            journal.for_each_record(|at, line| {
                live.push(parse_strict(at, line)?);
                Ok::<(), LedgerError>(())
            })?;
            writer.events = writer.plan.archived_events()?;
            writer.events.extend(live);
            writer.journal = Some(journal);
            damage = report.damage;
        } else if load == Load::Full {
            writer.events = writer.plan.archived_events()?;
        }
        writer.record_damage(damage)
    }

    /// `ledger repair --line N …`: the explicit, recorded repair of damaged journal lines (the
    /// damage no writer repairs on its own). Under the plan lock: every named line must be a
    /// line the journal rule refuses (a valid record is never removed); the whole journal is
    /// first copied, byte for byte, to `journal.ndjson.damaged-<time>` beside it (fsynced);
    /// then the journal is replaced atomically by itself without exactly those lines, and one
    /// `journal_repair` event per removed line records its line, byte offset, what was wrong
    /// and where the original bytes are. If the journal would still hold a damaged line, the
    /// repair refuses before changing anything, naming it.
    ///
    /// # Errors
    /// The lock; no such damaged line; a named line that is a valid record; another damaged
    /// line left; a set-aside file that already exists; I/O.
    pub fn repair_lines(
        plan: Plan,
        lines: &[u64],
        force: bool,
        now: SystemTime,
    ) -> Result<(Writer, RepairReport)> {
        let lock = Writer::lock(&plan, force, now)?;
        let path = plan.journal_path();
        let raw = std::fs::read(&path).map_err(|e| crate::error::io_fail(&path, e))?;
        let mut wanted: Vec<u64> = lines.to_vec();
        wanted.sort_unstable();
        wanted.dedup();
        // Every line of the file, with its range, in one pass.
        let mut starts = vec![0usize];
        starts.extend(
            raw.iter()
                .enumerate()
                .filter(|&(at, b)| *b == b'\n' && at + 1 < raw.len())
                .map(|(at, _)| at + 1),
        );
        let mut removed = Vec::new();
        for &n in &wanted {
            let Some(&start) = usize::try_from(n).ok().and_then(|n| starts.get(n.wrapping_sub(1)))
            else {
                return Err(fail(format!(
                    "journal.ndjson has no line {n} ({} lines); nothing was changed",
                    starts.len()
                )));
            };
            let end =
                starts.get(usize::try_from(n).unwrap_or(usize::MAX)).copied().unwrap_or(raw.len());
            let text = &raw[start..end];
            let body = text.strip_suffix(b"\n").unwrap_or(text);
            if std::str::from_utf8(body).is_ok() && dwp::event::is_record(body) {
                return Err(fail(format!(
                    "journal.ndjson line {n} is a valid event; a repair never removes one \
                     (nothing was changed)"
                )));
            }
            if body.iter().all(u8::is_ascii_whitespace) {
                return Err(fail(format!(
                    "journal.ndjson line {n} is blank, not damaged (nothing was changed)"
                )));
            }
            let damaged =
                DamagedLine::describe(&raw, start as u64, journal::CAUSE_DAMAGED_UNPARSABLE);
            removed.push((start, end, damaged));
        }
        if removed.is_empty() {
            return Err(fail("repair needs --line N (the damaged line `dwp verify` names)"));
        }
        let mut kept = Vec::with_capacity(raw.len());
        let mut at = 0;
        for (start, end, _) in &removed {
            kept.extend_from_slice(&raw[at..*start]);
            at = *end;
        }
        kept.extend_from_slice(&raw[at..]);
        let after = journal::scan_slice(&kept, |_, text| dwp::event::is_record(text.as_bytes()));
        if let Some(d @ journal::Damage::Corrupt { .. }) = after.damage {
            // Name it in the file's own numbering: removed lines before it shift it.
            let mut original = d.byte_offset();
            for (start, end, _) in &removed {
                if (*start as u64) <= original {
                    original += (end - start) as u64;
                }
            }
            let other = DamagedLine::describe(&raw, original, d.cause());
            return Err(fail(format!(
                "journal.ndjson line {} (byte {}) is damaged too ({}); name every damaged line \
                 in one repair (--line {} as well) — nothing was changed",
                other.line, other.byte_offset, other.reason, other.line
            )));
        }
        let sha256 = canonical_json::digest::sha256_hex(&raw);
        let stamp: String = timestamp(now).chars().filter(char::is_ascii_alphanumeric).collect();
        let side = plan.dir.join(format!("{JOURNAL_NAME}.damaged-{stamp}"));
        if std::fs::symlink_metadata(&side).is_ok() {
            return Err(fail(format!(
                "{} already exists; nothing was changed (retry in a second)",
                side.display()
            )));
        }
        journal::atomic_replace(&side, &raw).map_err(journal_err)?;
        journal::atomic_replace(&path, &kept).map_err(journal_err)?;
        let mut writer = Writer::open_locked(plan, lock, now, Load::Full)?;
        let side_name =
            side.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        for (_, _, damaged) in &removed {
            writer.append_raw(
                "journal_repair",
                obj([
                    ("byte_offset", int(i64::try_from(damaged.byte_offset).unwrap_or(i64::MAX))),
                    (
                        "cause",
                        s(&format!(
                            "line {} was damaged ({}); removed by `dwp ledger repair` at an \
                             operator's request; the journal before the repair is kept \
                             byte for byte as {side_name} (sha256 {sha256})",
                            damaged.line, damaged.reason
                        )),
                    ),
                ]),
                writer.helper(),
                Some("explicit repair: only the named damaged lines were removed; every valid event was kept"),
                None,
                None,
            )?;
        }
        let report = RepairReport {
            lines: removed.into_iter().map(|(_, _, d)| d).collect(),
            set_aside: side,
            sha256,
        };
        Ok((writer, report))
    }

    /// Records the repair the journal crate made on open (if any) as a `journal_repair` event.
    fn record_damage(mut self, damage: Option<Damage>) -> Result<Writer> {
        let writer = &mut self;
        match damage {
            None => {}
            Some(d @ Damage::TornTail { .. }) => {
                writer.append_raw(
                    "journal_repair",
                    obj([("byte_offset", int(d.byte_offset() as i64)), ("cause", s(d.cause()))]),
                    writer.helper(),
                    Some("torn tail truncated; the append-only rule binds complete events only"),
                    None,
                    None,
                )?;
            }
            Some(d) => {
                writer.append_raw(
                    "journal_repair",
                    obj([("byte_offset", int(d.byte_offset() as i64)), ("cause", s(d.cause()))]),
                    writer.helper(),
                    Some("complete events are durable; only the framing byte was missing"),
                    None,
                    None,
                )?;
            }
        }
        Ok(self)
    }

    /// Releases the lock.
    ///
    /// Every event this writer appended is durable before this is called, so a release that
    /// finds the lock directory no longer ours ([`journal::Error::LockLost`]: broken by a
    /// `--force` elsewhere, or displaced in the instant a stale lock was being broken) is *not*
    /// a failure: reporting one would tell the caller its event was not written when it was,
    /// and a retry would record it twice. The directory is then left to its new holder.
    ///
    /// # Errors
    /// Removing our own lock directory failed (I/O).
    pub fn close(mut self) -> Result<()> {
        drop(self.journal.take());
        if let Some(lock) = self.lock.take() {
            match lock.release() {
                Ok(()) | Err(journal::Error::LockLost { .. }) => {}
                Err(e) => return Err(journal_err(e)),
            }
        }
        Ok(())
    }

    pub(crate) fn helper(&self) -> Value {
        actor("helper", self.plan.generation.ledger_identity())
    }

    /// The highest seq on record (archives included).
    pub fn last_seq(&self) -> i64 {
        self.events.iter().map(seq_of).max().unwrap_or(0).max(self.seq_floor).max(self.tail_seq)
    }

    /// The seq the next event takes.
    ///
    /// # Errors
    /// The last seq on record is already `i64::MAX`: no further event can be numbered.
    pub fn next_seq(&self) -> Result<i64> {
        let last = self.last_seq();
        last.checked_add(1).ok_or_else(|| {
            fail(format!(
                "the journal's last seq is {last}, the largest integer a seq can hold: no \
                 further event can be numbered (nothing written)"
            ))
        })
    }

    /// Builds, validates against the live contract, and durably appends one event.
    ///
    /// # Errors
    /// An invalid event (nothing written), a collision, I/O.
    pub fn append_raw(
        &mut self,
        etype: &str,
        payload: Map,
        actor: Value,
        note: Option<&str>,
        trust: Option<&str>,
        evidence_path: Option<&str>,
    ) -> Result<Value> {
        self.append_with(etype, payload, actor, note, trust, evidence_path, None)
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn append_with(
        &mut self,
        etype: &str,
        payload: Map,
        actor: Value,
        note: Option<&str>,
        trust: Option<&str>,
        evidence_path: Option<&str>,
        contract_override: Option<&str>,
    ) -> Result<Value> {
        let mut event = payload;
        event.insert("schema".into(), s(self.plan.generation.journal_url()));
        event.insert("type".into(), s(etype));
        event.insert("seq".into(), int(self.next_seq()?));
        event.insert("ts".into(), s(&timestamp(self.now)));
        event.insert("plan".into(), self.plan.contract.get("plan").cloned().unwrap_or(Value::Null));
        event.insert("contract_id".into(), s(contract_override.unwrap_or(&self.plan.contract_id)));
        event.insert("actor".into(), actor);
        if let Some(note) = note {
            event.insert("note".into(), s(note));
        }
        if let Some(trust) = trust {
            event.insert("trust".into(), s(trust));
        }
        if let Some(path) = evidence_path {
            event.insert("evidence_path".into(), s(path));
        }
        let event = Value::Object(event);
        if let Some(first) =
            validate::journal_event_errors(&event, Some(&self.plan.contract)).into_iter().next()
        {
            return Err(fail(format!("refusing to append an invalid {etype} event: {first}")));
        }
        let line = canonical_json::to_python_compact(&event).map_err(|e| fail(e.to_string()))?;
        if self.journal.is_none() {
            let (journal, _) =
                Journal::open(self.plan.journal_path(), &OpenOptions::new().create(true))
                    .map_err(journal_err)?;
            self.journal = Some(journal);
        }
        if let Some(journal) = self.journal.as_mut() {
            journal.append(&line).map_err(journal_err)?;
        }
        self.events.push(event.clone());
        Ok(event)
    }

    /// The contract entry of `task_id`.
    pub(crate) fn task(&self, task_id: &str) -> Result<Value> {
        projection::find_task(&self.plan.contract, task_id)
            .cloned()
            .ok_or_else(|| fail(format!("task {} is not in the contract", repr_str(task_id))))
    }
}

/// One journal line the writer holds, parsed strictly with the one journal-line rule (the
/// writer refuses to go on otherwise).
pub(crate) fn parse_strict(at: u64, line: &[u8]) -> Result<Value> {
    let event = canonical_json::parse(line).map_err(|e| strict_error(at, &e))?;
    match dwp::event::record_problem(&event) {
        None => Ok(event),
        Some(problem) => {
            Err(fail(format!("journal.ndjson line at byte {at}: {problem} — no write was made")))
        }
    }
}

/// The refusal for a journal line at byte `at` that is not strict JSON.
pub(crate) fn strict_error(at: u64, e: &canonical_json::ParseError) -> LedgerError {
    fail(format!("journal.ndjson line at byte {at} is not strict JSON ({e}) — no write was made"))
}

impl Drop for Writer {
    fn drop(&mut self) {
        drop(self.journal.take());
        if let Some(lock) = self.lock.take() {
            let _ = lock.release();
        }
    }
}
