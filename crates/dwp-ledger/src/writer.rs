//! The single journal writer of one plan: the plan lock, the journal crate's file lock and
//! repair, and the append path where every event is validated against the live contract
//! ([`dwp::validate::journal_event_errors`]) before it is written.

use std::time::SystemTime;

use canonical_json::{Map, Value};
use dwp::projection::{self, seq_of};
use dwp::py::repr_str;
use dwp::validate;
use journal::{Damage, Journal, OpenOptions, lockdir::LockDir};

use crate::error::{LedgerError, Result, fail, journal_err};
use crate::files::{refuse_symlink, timestamp};
use crate::plan::{EVIDENCE_NAME, JOURNAL_NAME, LOCK_IDENTITY, Plan};
use crate::values::{actor, int, obj, s};

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
        for name in [JOURNAL_NAME, EVIDENCE_NAME, "state.json", "gates", ".ledger.lock"] {
            refuse_symlink(&plan.dir.join(name))?;
        }
        let identity = format!("{LOCK_IDENTITY} pid:{}", std::process::id());
        let lock = LockDir::acquire(journal::lockdir::lock_path(&plan.dir), &identity, now, force)
            .map_err(journal_err)?;
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
            let checkpoint = (load == Load::Tail)
                .then(|| crate::summary::cache_file(&path, "checkpoint"))
                .flatten();
            let options = OpenOptions::new().checkpoint(checkpoint);
            let (journal, report) = Journal::open(&path, &options).map_err(journal_err)?;
            if load == Load::Tail {
                // The crate's scan (from its checkpoint) has checked and repaired the file: a
                // plain append needs only the last event's seq, read from the end of the file.
                if let Some(last) = journal.last_record().map_err(journal_err)? {
                    writer.tail_seq = seq_of(&canonical_json::parse(&last.line).map_err(|e| {
                        fail(format!(
                            "journal.ndjson last line is not strict JSON ({e}) — no write was made"
                        ))
                    })?);
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
    /// # Errors
    /// The lock was taken over by someone else.
    pub fn close(mut self) -> Result<()> {
        drop(self.journal.take());
        if let Some(lock) = self.lock.take() {
            lock.release().map_err(journal_err)?;
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

/// One journal line the writer holds, parsed strictly (the writer refuses to go on otherwise).
pub(crate) fn parse_strict(at: u64, line: &[u8]) -> Result<Value> {
    canonical_json::parse(line).map_err(|e| strict_error(at, &e))
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
