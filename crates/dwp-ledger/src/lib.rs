//! The file layer of a plan: folder layout, generation detection, the journal writer and the
//! gate runner (upstream `ledger.py`'s `PlanRecords`, `CooperativeLock` and `Writer`).
//!
//! Everything that touches files, git or processes lives here; the rules themselves are the
//! pure functions of [`dwp::validate`] and [`dwp::projection`]. The wall clock is passed
//! in (`now`) so callers and tests decide what time it is.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use canonical_json::{Map, Number, Value};
use journal::{Damage, Journal, OpenOptions, lockdir::LockDir};

use dwp::contract::contract_id;
use dwp::projection::{self, Archive, seq_of};
use dwp::py::repr_str;
use dwp::validate::{self, Generation, MECHANISMS, contract_generation};

pub mod amend;
pub mod context;
pub mod delegate;
pub mod migrate;
pub mod outcomes;
pub mod records;
pub mod verify;
pub mod views;

/// The journal file name.
pub const JOURNAL_NAME: &str = "journal.ndjson";
/// The gate reuse cache.
pub const EVIDENCE_NAME: &str = "evidence.jsonl";
/// The command a human sign-off records.
pub const SIGNOFF_COMMAND: &str = "signoff (asserted, not executed)";
/// v6 manifest URL.
pub const MANIFEST_URL_V6: &str = "https://deepworkplan.com/schema/plan-manifest/v6.json";
/// v7 manifest URL.
pub const MANIFEST_URL_V7: &str = "https://deepworkplan.com/schema/plan-manifest/v7.json";
/// The lock identity prefix (upstream always uses the 6.0 string for the lock).
pub const LOCK_IDENTITY: &str = "dwp-ledger/6.0";

/// An operator-visible ledger failure, with the upstream exit code and prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LedgerError {
    /// `ERROR:`, exit 1.
    Failed(String),
    /// `COLLISION:`, exit 2.
    Collision(String),
    /// `REFUSED:`, exit 3 (no approval cites the live contract).
    ApprovalMissing(String),
    /// `REFUSED:`, exit 4 (completion refused).
    CompletionRefused(String),
}

impl LedgerError {
    /// The process exit code upstream uses.
    pub fn exit_code(&self) -> u8 {
        match self {
            LedgerError::Failed(_) => 1,
            LedgerError::Collision(_) => 2,
            LedgerError::ApprovalMissing(_) => 3,
            LedgerError::CompletionRefused(_) => 4,
        }
    }

    /// The output prefix (`ERROR`, `COLLISION`, `REFUSED`).
    pub fn prefix(&self) -> &'static str {
        match self {
            LedgerError::Failed(_) => "ERROR",
            LedgerError::Collision(_) => "COLLISION",
            LedgerError::ApprovalMissing(_) | LedgerError::CompletionRefused(_) => "REFUSED",
        }
    }
}

impl fmt::Display for LedgerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LedgerError::Failed(m)
            | LedgerError::Collision(m)
            | LedgerError::ApprovalMissing(m)
            | LedgerError::CompletionRefused(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for LedgerError {}

type Result<T> = std::result::Result<T, LedgerError>;

fn fail(msg: impl Into<String>) -> LedgerError {
    LedgerError::Failed(msg.into())
}

fn io_fail(path: &Path, err: impl fmt::Display) -> LedgerError {
    fail(format!("{}: {err}", path.display()))
}

fn journal_err(err: journal::Error) -> LedgerError {
    match err {
        e @ journal::Error::Collision { .. } => LedgerError::Collision(e.to_string()),
        e => fail(e.to_string()),
    }
}

fn s(text: &str) -> Value {
    Value::String(text.to_owned())
}

fn int(n: i64) -> Value {
    Value::Number(Number::Int(canonical_json::Integer::Small(n)))
}

fn obj<const N: usize>(pairs: [(&str, Value); N]) -> Map {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// An actor `{kind, identity}`.
pub fn actor(kind: &str, identity: &str) -> Value {
    Value::Object(obj([("kind", s(kind)), ("identity", s(identity))]))
}

/// `time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())` for `now`.
pub fn timestamp(now: SystemTime) -> String {
    journal::utc_timestamp(now)
}

/// Lowercase sha256 hex of a file, or `None` when it is not a readable regular file.
pub fn hash_file(path: &Path) -> Option<String> {
    if !path.is_file() {
        return None;
    }
    fs::read(path).ok().map(|b| canonical_json::digest::sha256_hex(&b))
}

/// Writes `doc` in the `indent=2` + newline file form, atomically.
pub fn write_pretty(path: &Path, doc: &Value) -> Result<()> {
    let bytes = canonical_json::to_python_pretty(doc).map_err(|e| io_fail(path, e))?;
    journal::atomic_replace(path, &bytes).map_err(|e| fail(e.to_string()))
}

/// Refuses to write through a symbolic link: a plan's records never leave the plan folder.
///
/// # Errors
/// `path` is a symlink.
pub fn refuse_symlink(path: &Path) -> Result<()> {
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(fail(format!(
            "{} is a symbolic link — refusing to write through it (a plan's records never leave \
             the plan folder); nothing was written",
            path.display()
        )));
    }
    Ok(())
}

/// Reads and parses a JSON file, refusing a corrupt one by name (nothing is written).
pub fn read_json_named(path: &Path) -> Result<Value> {
    let bytes = fs::read(path).map_err(|e| io_fail(path, e))?;
    canonical_json::parse(&bytes).map_err(|e| {
        fail(format!(
            "{} is corrupt (not valid JSON: {e}) — no write was made; restore the contract or \
             roll back before continuing",
            path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        ))
    })
}

/// Accepts a plan directory, or a file directly inside a `PLAN_*` folder.
pub fn find_plan_dir(path: &Path) -> Result<PathBuf> {
    let abs = std::path::absolute(path).map_err(|e| io_fail(path, e))?;
    if abs.is_dir() {
        return Ok(abs);
    }
    if abs.is_file()
        && let Some(parent) = abs.parent()
        && parent.file_name().is_some_and(|n| n.to_string_lossy().starts_with("PLAN_"))
    {
        return Ok(parent.to_path_buf());
    }
    Err(fail(format!("no plan directory found at {}", repr_str(&abs.to_string_lossy()))))
}

/// The repository root: the directory holding `.dwp/` when the plan sits in
/// `.dwp/plans/<PLAN>`, else the plan folder's parent.
pub fn repo_root(plan_dir: &Path) -> PathBuf {
    let parent = plan_dir.parent().unwrap_or(plan_dir);
    let grand = parent.parent().unwrap_or(parent);
    if grand.file_name().is_some_and(|n| n == ".dwp") {
        return grand.parent().unwrap_or(grand).to_path_buf();
    }
    parent.to_path_buf()
}

/// The digest of the plan markdown an approval cites.
pub fn plan_markdown_digest(plan_dir: &Path) -> Result<String> {
    let mut names: Vec<PathBuf> = fs::read_dir(plan_dir)
        .map_err(|e| io_fail(plan_dir, e))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md") && p.is_file())
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(fail(format!(
            "no plan markdown (*.md) in {} — the materialization-time approval digests the \
             plan the authority approved; a folder with no markdown is not approvable",
            plan_dir.display()
        )));
    }
    let mut all = Vec::new();
    for name in names {
        all.extend(fs::read(&name).map_err(|e| io_fail(&name, e))?);
    }
    Ok(canonical_json::digest::sha256_hex(&all))
}

/// What kind of plan folder this is (upstream `V6_LIFECYCLE.md` §1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FolderGeneration {
    /// A v1/v2/v5 plan (manifest + state); v6 commands never touch it.
    Legacy,
    /// A v6 plan.
    V6,
    /// A v7 plan.
    V7,
    /// Neither: no manifest pointer, no contract, no chain.
    Unknown,
}

/// Detects a folder's generation without writing anything.
pub fn detect_generation(plan_dir: &Path) -> FolderGeneration {
    let contract_like =
        plan_dir.join("contract.json").is_file() || plan_dir.join("contracts").is_dir();
    let manifest =
        fs::read(plan_dir.join("manifest.json")).ok().and_then(|b| canonical_json::parse(&b).ok());
    let pointer = manifest
        .as_ref()
        .and_then(|m| m.get("contract"))
        .and_then(|c| c.get("path"))
        .and_then(Value::as_str)
        .is_some_and(|p| safe_relative(p) && plan_dir.join(p).is_file());
    if contract_like || pointer {
        return match Plan::load(plan_dir).map(|p| p.generation) {
            Ok(Generation::V7) => FolderGeneration::V7,
            _ => FolderGeneration::V6,
        };
    }
    let url = manifest.as_ref().and_then(|m| m.get("schema")).and_then(Value::as_str).unwrap_or("");
    if ["v1", "v2", "v5"]
        .iter()
        .any(|v| url == format!("https://deepworkplan.com/schema/plan-manifest/{v}.json"))
    {
        return FolderGeneration::Legacy;
    }
    FolderGeneration::Unknown
}

/// A relative path without `..`, root or prefix components.
pub fn safe_relative(p: &str) -> bool {
    let path = Path::new(p);
    !p.is_empty()
        && path.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// One loaded plan: its folder and live contract.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Absolute plan folder.
    pub dir: PathBuf,
    /// The live contract.
    pub contract: Value,
    /// The live contract id (stamped, else computed).
    pub contract_id: String,
    /// The contract's generation.
    pub generation: Generation,
}

impl Plan {
    /// Loads the live contract: highest `revision` under `contracts/`, else `contract.json`.
    ///
    /// # Errors
    /// A corrupt contract (by name), a foreign generation, or an invalid contract.
    pub fn load(dir: &Path) -> Result<Plan> {
        let chain = dir.join("contracts");
        let mut best: Option<(i64, Value)> = None;
        if chain.is_dir() {
            let mut names: Vec<PathBuf> = fs::read_dir(&chain)
                .map_err(|e| io_fail(&chain, e))?
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().ends_with(".json")))
                .collect();
            names.sort();
            for path in names {
                let doc = read_json_named(&path)?;
                let Some(rev) = doc.get("revision").and_then(Value::as_i64) else { continue };
                if best.as_ref().is_none_or(|(b, _)| rev > *b) {
                    best = Some((rev, doc));
                }
            }
        }
        let contract = match best {
            Some((_, doc)) => doc,
            None => {
                let single = dir.join("contract.json");
                if !single.is_file() {
                    return Err(fail(format!(
                        "no contract.json and no contracts/ chain in {}",
                        dir.display()
                    )));
                }
                read_json_named(&single)?
            }
        };
        let Some(generation) = contract_generation(&contract) else {
            return Err(fail(format!(
                "the v6 ledger serves v6 contracts only (and their v7 superset); older plans \
                 keep their recorded tooling (RFC 9.1): found {}",
                dwp::py::repr_opt(contract.get("schema"))
            )));
        };
        if let Some(first) = validate::contract_errors(&contract, None).into_iter().next() {
            return Err(fail(format!("contract invalid: {first}")));
        }
        let contract_id = match contract.get("contract_id").and_then(Value::as_str) {
            Some(id) if !id.is_empty() => id.to_owned(),
            _ => contract_id(&contract).map_err(|e| fail(e.to_string()))?,
        };
        Ok(Plan { dir: dir.to_path_buf(), contract, contract_id, generation })
    }

    /// The live journal path.
    pub fn journal_path(&self) -> PathBuf {
        self.dir.join(JOURNAL_NAME)
    }

    /// Archive segments beside the plan, oldest first.
    pub fn archives(&self) -> Vec<Archive> {
        let mut found: Vec<Archive> = fs::read_dir(&self.dir)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .filter_map(|e| Archive::from_name(&e.file_name().to_string_lossy()))
                    .collect()
            })
            .unwrap_or_default();
        found.sort_by(|a, b| a.file.cmp(&b.file));
        found
    }

    /// The events of every archive segment, in seq order.
    ///
    /// # Errors
    /// A corrupt segment (archives are never repaired in place).
    pub fn archived_events(&self) -> Result<Vec<Value>> {
        let mut events = Vec::new();
        for archive in self.archives() {
            let path = self.dir.join(&archive.file);
            let raw = fs::read(&path).map_err(|e| io_fail(&path, e))?;
            for line in raw.split(|b| *b == b'\n') {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let event = canonical_json::parse(line).map_err(|e| {
                    fail(format!(
                        "archive segment {} is corrupt ({e}) — archived history is never \
                         repaired in place; restore the exported copy",
                        archive.file
                    ))
                })?;
                events.push(event);
            }
        }
        events.sort_by_key(seq_of);
        Ok(events)
    }

    /// The highest seq any archive retired.
    pub fn archive_top_seq(&self) -> i64 {
        self.archives()
            .iter()
            .map(|a| i64::try_from(a.last_seq).unwrap_or(i64::MAX))
            .max()
            .unwrap_or(0)
    }

    /// The repository root of this plan.
    pub fn repo_root(&self) -> PathBuf {
        repo_root(&self.dir)
    }
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
    lock: Option<LockDir>,
    journal: Option<Journal>,
    /// Archived + live events.
    pub events: Vec<Value>,
    seq_floor: i64,
    /// The last live seq when events were not loaded ([`Load::Tail`]).
    tail_seq: i64,
    now: SystemTime,
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
            let (journal, report) =
                Journal::open(&path, &OpenOptions::new()).map_err(journal_err)?;
            if load == Load::Tail {
                // The crate's scan has checked (and repaired) every line: a plain append needs
                // only the last event's seq, read from the end of the file.
                if let Some(line) = last_line(&path, journal.len())? {
                    writer.tail_seq = seq_of(&canonical_json::parse(&line).map_err(|e| {
                        fail(format!(
                            "journal.ndjson last line is not strict JSON ({e}) — no write was made"
                        ))
                    })?);
                }
                writer.journal = Some(journal);
                return writer.record_damage(report.damage);
            }
            // The journal crate has scanned and repaired the file and we hold both locks: read
            // the good prefix once and parse each line (the crate's own record reader would
            // validate every line a second time).
            let mut raw = fs::read(&path).map_err(|e| io_fail(&path, e))?;
            raw.truncate(usize::try_from(journal.len()).unwrap_or(usize::MAX));
            let mut records = Vec::new();
            let mut offset = 0usize;
            for line in raw.split(|b| *b == b'\n') {
                if !line.iter().all(u8::is_ascii_whitespace) {
                    records.push((offset, line));
                }
                offset += line.len() + 1;
            }
            let parse = |(at, line): &(usize, &[u8])| {
                canonical_json::parse(line).map_err(|e| {
                    fail(format!(
                        "journal.ndjson line at byte {at} is not strict JSON ({e}) — no write was made"
                    ))
                })
            };
            let mut live = Vec::with_capacity(records.len());
            for record in &records {
                live.push(parse(record)?);
            }
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

    fn helper(&self) -> Value {
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
    fn append_with(
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

    fn has_approval(&self) -> bool {
        self.events.iter().any(|e| {
            e.get("type").and_then(Value::as_str) == Some("approval")
                && e.get("contract_id").and_then(Value::as_str)
                    == Some(self.plan.contract_id.as_str())
        })
    }

    fn require_approval(&mut self) -> Result<()> {
        if self.has_approval() {
            return Ok(());
        }
        let cid12: String = self.plan.contract_id.chars().take(12).collect();
        self.append_raw(
            "refusal",
            obj([
                ("subject", s("task_start")),
                ("stage", s("task_start")),
                ("reason", s(&format!("no approval event cites the live contract_id {cid12}"))),
            ]),
            self.helper(),
            None,
            None,
            None,
        )?;
        Err(LedgerError::ApprovalMissing(
            "task_start refused: no approval event cites the live contract_id — record the \
             materialization-time approval first (mechanism: plan_authorship or \
             pre_authorization)"
                .to_owned(),
        ))
    }

    /// Resolves an evidence pointer: absolute as given, else under the plan dir or repo root.
    /// Relative pointers may not escape those roots (by `..` or by symlink).
    fn resolve_evidence(&self, pointer: &str) -> Option<PathBuf> {
        let p = Path::new(pointer);
        if p.is_absolute() {
            return p.is_file().then(|| p.to_path_buf());
        }
        if !safe_relative(pointer) {
            return None;
        }
        for base in [self.plan.dir.clone(), self.plan.repo_root()] {
            let full = base.join(p);
            if full.is_file()
                && let (Ok(real), Ok(real_base)) = (full.canonicalize(), base.canonicalize())
                && real.starts_with(&real_base)
            {
                return Some(full);
            }
        }
        None
    }

    fn check_evidence_path(&self, pointer: Option<&str>) -> Result<PathBuf> {
        let Some(pointer) = pointer.filter(|p| !p.is_empty()) else {
            return Err(fail(
                "trust=observed requires evidence_path — a recoverable pointer, never a bare claim",
            ));
        };
        self.resolve_evidence(pointer).ok_or_else(|| {
            fail(format!(
                "evidence_path {} does not resolve inside the plan or the repository — \
                 observed/imported records must cite an artifact that exists",
                repr_str(pointer)
            ))
        })
    }

    /// `append`: mint rules, approval gate, idempotence, then the write.
    ///
    /// # Errors
    /// Mint-rule refusals, missing approval (recorded), invalid event, collision.
    pub fn append(&mut self, req: AppendRequest) -> Result<Value> {
        let etype = req.etype.as_str();
        if etype == "gate_run" {
            return Err(fail(
                "gate_run records are produced only by the gate executor (ledger.py gate) — a \
                 mediated write can never be observed evidence (A1)",
            ));
        }
        if etype == "delegation" {
            return Err(fail(
                "delegation records are produced only by `ledger.py delegate` (its gate: v7 \
                 contract, agent_delegation grant, parallel_safe marker, enabled transport addon) \
                 — a raw append cannot bypass it (V7_CONTRACT.md section 3)",
            ));
        }
        // Divergence (DWP.md §19.4): a `trust` smuggled inside the payload is subject to the
        // same mint rules as `--trust`.
        let payload_trust = req.payload.get("trust").and_then(Value::as_str).map(str::to_owned);
        let payload_evidence =
            req.payload.get("evidence_path").and_then(Value::as_str).map(str::to_owned);
        let trust = req.trust.clone().or(payload_trust);
        let evidence = req.evidence_path.clone().or(payload_evidence);
        if trust.as_deref() == Some("observed") {
            if etype != "resource_sample" {
                return Err(fail(
                    "trust=observed is minted only by execution: the gate executor for gate_run \
                     records, or host-adapter metering for resource_sample records. Record this \
                     as asserted with the mediation named (A1)",
                ));
            }
            if req.actor.get("kind").and_then(Value::as_str) != Some("host_adapter") {
                return Err(fail(
                    "observed resource samples require a host_adapter actor that read the meter \
                     — agent/helper writers record asserted",
                ));
            }
        }
        if matches!(trust.as_deref(), Some("observed" | "imported")) {
            self.check_evidence_path(evidence.as_deref())?;
        }
        if etype == "task_start" {
            self.require_approval()?;
        }
        if req.idempotent {
            let key = projection::content_key(
                &s(etype),
                &Value::Object(req.payload.clone()),
                Some(&req.actor),
                &s(&self.plan.contract_id),
            );
            for prior in &self.events {
                let k = projection::content_key(
                    prior.get("type").unwrap_or(&Value::Null),
                    &projection::payload_of(prior),
                    prior.get("actor"),
                    prior.get("contract_id").unwrap_or(&Value::Null),
                );
                if k == key {
                    return Ok(prior.clone());
                }
            }
        }
        self.append_raw(
            etype,
            req.payload,
            req.actor,
            req.note.as_deref(),
            req.trust.as_deref(),
            req.evidence_path.as_deref(),
        )
    }

    fn task(&self, task_id: &str) -> Result<Value> {
        projection::find_task(&self.plan.contract, task_id)
            .cloned()
            .ok_or_else(|| fail(format!("task {} is not in the contract", repr_str(task_id))))
    }

    /// `start`: a `task_start` with the git fingerprint, idempotent on an unchanged world.
    ///
    /// # Errors
    /// Unknown task, missing approval (recorded, exit 3), I/O.
    pub fn start_task(&mut self, task_id: &str, who: Value) -> Result<Value> {
        self.task(task_id)?;
        let root = self.plan.repo_root();
        let (revision, ok) = git(&["rev-parse", "HEAD"], &root);
        let (dirty, _) = git(&["status", "--porcelain"], &root);
        let revision = if ok && !revision.is_empty() { revision } else { "none".to_owned() };
        let payload = obj([
            ("task", s(task_id)),
            ("fingerprint", Value::Object(obj([("revision", s(&revision)), ("dirty", s(&dirty))]))),
        ]);
        self.append(AppendRequest {
            etype: "task_start".to_owned(),
            payload,
            actor: who,
            note: None,
            idempotent: true,
            trust: None,
            evidence_path: None,
        })
    }

    /// `signoff`: a human, asserted `gate_run` bound to the criterion's owning task.
    ///
    /// # Errors
    /// The upstream refusals (none is recorded).
    pub fn signoff(
        &mut self,
        criterion: &str,
        evidence_path: Option<&str>,
        authority: Option<&str>,
        task: Option<&str>,
    ) -> Result<Value> {
        let crit = self
            .plan
            .contract
            .get("acceptance")
            .and_then(|a| a.get("criteria"))
            .and_then(Value::as_array)
            .and_then(|cs| {
                cs.iter().find(|c| c.get("id").and_then(Value::as_str) == Some(criterion))
            })
            .cloned()
            .ok_or_else(|| {
                fail(format!(
                    "signoff refused: {} is not a criterion of this contract",
                    repr_str(criterion)
                ))
            })?;
        let accepted: Vec<&str> = crit
            .get("accepted_evidence")
            .and_then(Value::as_array)
            .unwrap_or(&[])
            .iter()
            .filter_map(Value::as_str)
            .collect();
        if !accepted.contains(&"asserted") {
            return Err(fail(format!(
                "signoff refused: {criterion} accepts only {} - a sign-off is asserted evidence \
                 and can never close it; run its gate (ledger.py gate)",
                accepted.join("/")
            )));
        }
        let authority = authority.unwrap_or("").trim().to_owned();
        if authority.is_empty() || authority.chars().count() > 100 {
            return Err(fail(
                "signoff requires --authority: who signs, as a non-empty name (<= 100 chars)",
            ));
        }
        let Some(evidence_path) = evidence_path.filter(|p| !p.is_empty()) else {
            return Err(fail(
                "signoff requires --evidence-path: the artifact the sign-off rests on (a review \
                 note, an approval record)",
            ));
        };
        let resolved = self.check_evidence_path(Some(evidence_path))?;
        let owners: Vec<String> = self
            .plan
            .contract
            .get("tasks")
            .and_then(Value::as_array)
            .unwrap_or(&[])
            .iter()
            .filter(|t| {
                t.get("gate_intent").and_then(Value::as_array).is_some_and(|gi| {
                    gi.iter().any(|i| i.get("criterion").and_then(Value::as_str) == Some(criterion))
                })
            })
            .filter_map(|t| t.get("id").and_then(Value::as_str).map(str::to_owned))
            .collect();
        if owners.is_empty() {
            return Err(fail(format!(
                "signoff refused: no task gate_intent declares {criterion} - a sign-off is bound \
                 to the task that owns the criterion (amend the contract to declare it; until \
                 then it closes only by reconciliation with amendment authority)"
            )));
        }
        let task_id = task.map_or_else(|| owners[0].clone(), str::to_owned);
        if !owners.contains(&task_id) {
            return Err(fail(format!(
                "signoff refused: {criterion} is declared by {}, not {task_id}",
                owners.join(", ")
            )));
        }
        if projection::task_start_seq_of(&self.events, &task_id).is_none() {
            return Err(fail(format!(
                "signoff refused: {task_id} has not started - a sign-off counts only inside the \
                 task's evidence window (ledger.py start)"
            )));
        }
        let marker: String = hash_file(&resolved).unwrap_or_default().chars().take(16).collect();
        let payload = obj([
            ("command", s(SIGNOFF_COMMAND)),
            ("cwd", s(".")),
            ("timeout_seconds", int(1)),
            ("exit_code", int(0)),
            ("criterion", s(criterion)),
            ("task", s(&task_id)),
        ]);
        let note = format!("human sign-off: asserted, never executed; evidence sha256:{marker}");
        self.append_raw(
            "gate_run",
            payload,
            actor("human", &authority),
            Some(&note),
            Some("asserted"),
            Some(evidence_path),
        )
    }

    /// `complete`: a pure check that records each refusal.
    ///
    /// # Errors
    /// Completion refused (recorded, exit 4), unknown task.
    pub fn complete_task(&mut self, task_id: &str) -> Result<Vec<Value>> {
        self.task(task_id)?;
        let open: Vec<String> = projection::delegations(&self.events, Some(task_id))
            .into_iter()
            .filter(|(_, e)| e.get("state").and_then(Value::as_str) == Some("launched"))
            .map(|(id, _)| id)
            .collect();
        if !open.is_empty() {
            let list = open.join(", ");
            self.refuse_gate(
                task_id,
                &format!("delegation(s) still open: {list} — collect or cancel them first"),
            )?;
            return Err(LedgerError::CompletionRefused(format!(
                "completion of {task_id} refused: delegation(s) {list} still open — collect or \
                 cancel them first"
            )));
        }
        let start = projection::task_start_seq_of(&self.events, task_id);
        let unverified = projection::invariant_findings(&self.plan.contract, &self.events, start);
        if !unverified.is_empty() {
            let list = unverified.join("; ");
            self.refuse_gate(
                task_id,
                &format!("invariant(s) not verified for this attempt: {list}"),
            )?;
            return Err(LedgerError::CompletionRefused(format!(
                "completion of {task_id} refused: {list} — every declared invariant is \
                 plan-scoped and is evaluated at or after the task's start before it closes: \
                 record an observation \"INV-<id>: pass\" (or \"INV-<id>: fail: <reason>\") \
                 (spec/V6_LIFECYCLE.md section 4, F-03)"
            )));
        }
        let states = projection::criterion_states(&self.plan.contract, &self.events, task_id)
            .unwrap_or_default();
        let missing: Vec<String> = states
            .iter()
            .filter(|st| st.get("satisfied").and_then(Value::as_bool) != Some(true))
            .map(|st| dwp::py::str_opt(st.get("criterion")))
            .collect();
        if !missing.is_empty() {
            self.refuse_gate(
                task_id,
                &format!("criteria without in-window accepted evidence: {}", missing.join(", ")),
            )?;
            return Err(LedgerError::CompletionRefused(format!(
                "completion of {task_id} refused: {} criterion(s) lack in-window accepted \
                 evidence (zero-test control)",
                missing.len()
            )));
        }
        Ok(states)
    }

    fn refuse_gate(&mut self, task_id: &str, reason: &str) -> Result<()> {
        self.append_raw(
            "refusal",
            obj([("subject", s(task_id)), ("stage", s("gate")), ("reason", s(reason))]),
            self.helper(),
            None,
            None,
            None,
        )
        .map(|_| ())
    }

    /// The snapshot this writer would project.
    pub fn snapshot(&self) -> Value {
        projection::snapshot(
            &self.plan.contract,
            &self.plan.contract_id,
            &self.events,
            &self.plan.archives(),
        )
    }

    /// `project`: writes `state.json` atomically.
    ///
    /// # Errors
    /// I/O.
    pub fn project(&self) -> Result<Value> {
        let state = self.snapshot();
        write_pretty(&self.plan.dir.join("state.json"), &state)?;
        Ok(state)
    }

    /// `project` for a writer opened with [`Load::Tail`]: streams archived + live events through
    /// a [`projection::Projector`] instead of holding them, then writes `state.json` atomically.
    /// The bytes are those of [`Writer::project`] on a fully loaded writer.
    ///
    /// # Errors
    /// I/O; a line that is not strict JSON.
    pub fn project_streaming(&self) -> Result<Value> {
        use std::io::BufRead;
        let mut projector = projection::Projector::new();
        for event in self.plan.archived_events()? {
            projector.feed(&event);
        }
        if let Some(journal) = &self.journal {
            let path = self.plan.journal_path();
            let file = fs::File::open(&path).map_err(|e| io_fail(&path, e))?;
            let mut reader = std::io::BufReader::with_capacity(1 << 16, file.take(journal.len()));
            let mut line = Vec::new();
            let mut at = 0usize;
            loop {
                line.clear();
                let n = reader.read_until(b'\n', &mut line).map_err(|e| io_fail(&path, e))?;
                if n == 0 {
                    break;
                }
                if !line.iter().all(u8::is_ascii_whitespace) {
                    let event = canonical_json::parse(&line).map_err(|e| {
                        fail(format!(
                            "journal.ndjson line at byte {at} is not strict JSON ({e}) — no write was made"
                        ))
                    })?;
                    projector.feed(&event);
                }
                at += n;
            }
        }
        let state =
            projector.finish(&self.plan.contract, &self.plan.contract_id, &self.plan.archives());
        write_pretty(&self.plan.dir.join("state.json"), &state)?;
        Ok(state)
    }

    /// `roll`: archives the live journal; seq continues above it; re-projects.
    ///
    /// # Errors
    /// Nothing to roll, I/O.
    pub fn roll(&mut self) -> Result<PathBuf> {
        let path = self.plan.journal_path();
        if !path.exists() {
            return Err(fail("nothing to roll"));
        }
        let live = read_journal(&path)?.events;
        if live.is_empty() {
            return Err(fail("nothing to roll: the live journal is empty"));
        }
        // Divergence (DWP.md §19.10): the archive is named after the live segment's own first
        // seq, so consecutive archives never overlap.
        let first = seq_of(&live[0]);
        let last = self.last_seq();
        if last <= self.seq_floor {
            return Err(fail(format!(
                "nothing to roll: live events are all retired above seq {}",
                self.seq_floor
            )));
        }
        let name = format!("journal-archive-{first:06}-{last:06}.ndjson");
        let archive = self.plan.dir.join(&name);
        let bytes = fs::read(&path).map_err(|e| io_fail(&path, e))?;
        journal::atomic_replace(&archive, &bytes).map_err(|e| fail(e.to_string()))?;
        drop(self.journal.take());
        journal::atomic_replace(&path, b"").map_err(|e| fail(e.to_string()))?;
        self.seq_floor = last;
        self.project()?;
        Ok(archive)
    }

    /// `export --dest DIR`: journal, snapshot, contracts, archives, cache, gate logs and cited
    /// evidence, with `EXPORT_MANIFEST.json`.
    ///
    /// # Errors
    /// I/O.
    pub fn export(&self, dest: &Path) -> Result<Value> {
        fs::create_dir_all(dest).map_err(|e| io_fail(dest, e))?;
        let dir = &self.plan.dir;
        let mut sources: Vec<PathBuf> = vec![self.plan.journal_path(), dir.join("state.json")];
        let chain = dir.join("contracts");
        if chain.is_dir() {
            let mut names: Vec<PathBuf> = fs::read_dir(&chain)
                .map_err(|e| io_fail(&chain, e))?
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().ends_with(".json")))
                .collect();
            names.sort();
            sources.extend(names);
        }
        sources.push(dir.join("contract.json"));
        for a in self.plan.archives() {
            sources.push(dir.join(a.file));
        }
        sources.push(dir.join(EVIDENCE_NAME));
        let mut cited: Vec<String> = self
            .events
            .iter()
            .filter_map(|e| e.get("evidence_path").and_then(Value::as_str))
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
            .collect();
        if let Ok(snap) = read_json_named(&dir.join("state.json")) {
            for t in snap.get("tasks").and_then(Value::as_array).unwrap_or(&[]) {
                for c in t.get("criteria").and_then(Value::as_array).unwrap_or(&[]) {
                    if let Some(p) =
                        c.get("evidence_path").and_then(Value::as_str).filter(|p| !p.is_empty())
                    {
                        cited.push(p.to_owned());
                    }
                }
            }
        }
        cited.sort();
        cited.dedup();
        let mut missing = Vec::new();
        let mut outside: Vec<(String, PathBuf)> = Vec::new();
        for pointer in cited {
            match self.resolve_evidence(&pointer) {
                Some(found) if found.starts_with(dir) => {
                    if !sources.contains(&found) {
                        sources.push(found);
                    }
                }
                // Divergence (DWP.md §19.9): evidence outside the plan folder is copied under
                // `repo/<relpath>` inside the bundle, never to a path escaping it.
                Some(found) => outside.push((pointer, found)),
                None => missing.push(s(&pointer)),
            }
        }
        let gates = dir.join("gates");
        if gates.is_dir() {
            let mut logs = Vec::new();
            walk_files(&gates, &mut logs);
            logs.sort();
            sources.extend(logs);
        }
        let mut files = Map::new();
        let mut copy = |src: &Path, rel: &str| -> Result<()> {
            if !src.is_file() {
                return Ok(());
            }
            let raw = fs::read(src).map_err(|e| io_fail(src, e))?;
            let target = dest.join(rel);
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent).map_err(|e| io_fail(parent, e))?;
            }
            fs::write(&target, &raw).map_err(|e| io_fail(&target, e))?;
            files.insert(rel.to_owned(), s(&canonical_json::digest::sha256_hex(&raw)));
            Ok(())
        };
        for src in &sources {
            let Ok(rel) = src.strip_prefix(dir) else { continue };
            copy(src, &rel.to_string_lossy())?;
        }
        for (pointer, found) in &outside {
            let rel = if Path::new(pointer).is_absolute() {
                format!(
                    "external/{}",
                    found.file_name().map(|n| n.to_string_lossy()).unwrap_or_default()
                )
            } else {
                format!("repo/{pointer}")
            };
            copy(found, &rel)?;
        }
        let mut manifest = obj([
            ("exported_by", s(LOCK_IDENTITY)),
            ("plan", self.plan.contract.get("plan").cloned().unwrap_or(Value::Null)),
            ("contract_id", s(&self.plan.contract_id)),
            ("files", Value::Object(files)),
        ]);
        if !missing.is_empty() {
            manifest.insert("missing_evidence".into(), Value::Array(missing));
        }
        let manifest = Value::Object(manifest);
        let mut bytes =
            canonical_json::to_python_pretty(&manifest).map_err(|e| fail(e.to_string()))?;
        bytes.pop();
        let path = dest.join("EXPORT_MANIFEST.json");
        fs::write(&path, bytes).map_err(|e| io_fail(&path, e))?;
        Ok(manifest)
    }

    // ------------------------------------------------------------ gates

    /// The reuse fingerprint of a gate (see DWP.md §6.3; ours names `dwp` as the toolchain, so
    /// it never matches a Python-computed one — §19.14).
    pub fn fingerprint(
        &self,
        task_id: &str,
        command: &Value,
        selection: Option<&str>,
    ) -> Result<String> {
        let task = self.task(task_id)?;
        let root = self.plan.repo_root();
        let root_real = root.canonicalize().unwrap_or_else(|_| root.clone());
        let mut files = Map::new();
        for rel in task
            .get("touched_surface")
            .and_then(Value::as_array)
            .unwrap_or(&[])
            .iter()
            .filter_map(Value::as_str)
        {
            let path =
                if Path::new(rel).is_absolute() { PathBuf::from(rel) } else { root.join(rel) };
            let literal: String = rel.split(['*', '?', '[']).next().unwrap_or(rel).to_owned();
            let literal_path = if Path::new(&literal).is_absolute() {
                PathBuf::from(&literal)
            } else {
                root.join(&literal)
            };
            let inside = normalize(&literal_path)
                .is_some_and(|p| p.canonicalize().unwrap_or(p).starts_with(&root_real));
            if !inside {
                files.insert(rel.to_owned(), s("outside-repository"));
                continue;
            }
            let glob = rel.contains(['*', '?', '[']);
            let target = if glob {
                literal_path.parent().map(Path::to_path_buf).unwrap_or(literal_path)
            } else {
                path
            };
            files.insert(rel.to_owned(), hash_surface(&target).map_or(Value::Null, |h| s(&h)));
        }
        let env_keys = [
            "PATH",
            "LANG",
            "LC_ALL",
            "PYTHONDONTWRITEBYTECODE",
            "TERM",
            "VIRTUAL_ENV",
            "PYTHONPATH",
        ];
        let mut env: Map = env_keys
            .iter()
            .map(|k| ((*k).to_owned(), s(&std::env::var(k).unwrap_or_default())))
            .collect();
        env.insert("interpreter".into(), s("dwp"));
        let payload = Value::Object(obj([
            ("command", command.clone()),
            (
                "cwd",
                s(&root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()),
            ),
            ("env", Value::Object(env)),
            (
                "toolchain",
                Value::Object(obj([
                    ("dwp", s(env!("CARGO_PKG_VERSION"))),
                    ("platform", s(std::env::consts::OS)),
                ])),
            ),
            ("selection", s(selection.unwrap_or(""))),
            ("files", Value::Object(files)),
            ("tree", tree_state(&root)),
        ]));
        let bytes = canonical_json::to_python_compact(&payload).map_err(|e| fail(e.to_string()))?;
        Ok(canonical_json::digest::sha256_hex(&bytes))
    }

    /// A cached result for an exact fingerprint match of the same (task, criterion), still in
    /// the task's evidence window.
    pub fn evidence_lookup(
        &self,
        fingerprint: &str,
        task: &str,
        criterion: Option<&str>,
    ) -> Option<Value> {
        let raw = fs::read(self.plan.dir.join(EVIDENCE_NAME)).ok()?;
        let start = projection::task_start_seq_of(&self.events, task);
        for line in raw.split(|b| *b == b'\n') {
            let Ok(rec) = canonical_json::parse(line) else { continue };
            if rec.get("fingerprint").and_then(Value::as_str) != Some(fingerprint)
                || rec.get("task").and_then(Value::as_str) != Some(task)
                || criterion
                    .is_some_and(|c| rec.get("criterion").and_then(Value::as_str) != Some(c))
            {
                continue;
            }
            let in_record = self.events.iter().any(|e| {
                e.get("type").and_then(Value::as_str) == Some("gate_run")
                    && e.get("seq").is_some()
                    && e.get("seq") == rec.get("seq")
                    && start.is_none_or(|st| seq_of(e) >= st)
            });
            if in_record {
                return Some(rec);
            }
        }
        None
    }

    /// `gate`: runs a declared check and records an observed `gate_run`.
    ///
    /// # Errors
    /// The upstream preconditions (not recorded), a missing argv binary, collision, I/O.
    pub fn run_gate(&mut self, req: &GateRequest) -> Result<GateOutcome> {
        let task = self.task(&req.task)?;
        let intents: Vec<String> = projection::intent_criteria(&task)
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        let Some(criterion) = req.criterion.as_deref().filter(|c| !c.is_empty()) else {
            return Err(fail(
                "gate runs require a criterion from the task gate_intent — \"some command exited \
                 0\" is not acceptance evidence",
            ));
        };
        if !intents.iter().any(|c| c == criterion) {
            let mut sorted: Vec<String> = intents.iter().map(|c| repr_str(c)).collect();
            sorted.sort();
            return Err(fail(format!(
                "criterion {} is not declared in task {} gate_intent [{}] — the linkage cannot \
                 be chosen after the run",
                repr_str(criterion),
                req.task,
                sorted.join(", ")
            )));
        }
        if projection::task_start_seq_of(&self.events, &req.task).is_none() {
            return Err(fail(format!(
                "gate refused for {}: the task has no task_start — observed evidence is only \
                 recorded inside a task attempt, never before it",
                req.task
            )));
        }
        let declared: Vec<String> = self
            .plan
            .contract
            .get("scope")
            .and_then(|sc| sc.get("allowed_command_classes"))
            .and_then(Value::as_array)
            .unwrap_or(&[])
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        if declared.is_empty() {
            return Err(fail(
                "gate refused: contract declared no command classes (empty allowlist is \
                 undeclared, not unrestricted)",
            ));
        }
        let joined = req.command.joined();
        let head = joined.split_whitespace().next().unwrap_or("").to_owned();
        let base = head.rsplit('/').next().unwrap_or(&head).to_owned();
        if !declared.contains(&base) {
            let mut sorted: Vec<String> = declared.iter().map(|c| repr_str(c)).collect();
            sorted.sort();
            return Err(fail(format!(
                "gate command {} is outside the contract declared command classes [{}]",
                repr_str(&head),
                sorted.join(", ")
            )));
        }
        let command_value = req.command.to_value();
        let fp = self.fingerprint(&req.task, &command_value, req.selection.as_deref())?;
        if req.reuse
            && let Some(prior) = self.evidence_lookup(&fp, &req.task, Some(criterion))
        {
            return Ok(GateOutcome {
                reused: true,
                fingerprint: fp,
                exit_code: prior.get("exit_code").and_then(Value::as_i64).unwrap_or(1),
                log: dwp::py::str_opt(prior.get("log")),
                seq: prior.get("seq").and_then(Value::as_i64),
            });
        }
        let root = self.plan.repo_root();
        let log_dir = self.plan.dir.join("gates").join(&req.task);
        refuse_symlink(&log_dir)?;
        fs::create_dir_all(&log_dir).map_err(|e| io_fail(&log_dir, e))?;
        let slug = gate_slug(&joined);
        let log_name =
            format!("{:03}-{}.log", self.next_seq()?, if slug.is_empty() { "gate" } else { &slug });
        let log_path = log_dir.join(&log_name);
        let run = run_command(&req.command, &root, req.timeout.seconds())?;
        let (exit_code, out, err) = match run {
            RunResult::Finished { code, stdout, stderr } => (code, stdout, stderr),
            RunResult::TimedOut { stdout } => {
                (124, stdout, format!("timeout after {}s", req.timeout.text()))
            }
            RunResult::NotFound => {
                return Err(fail(format!(
                    "gate command not found: {} — no event is recorded for a command that never ran",
                    dwp::py::repr(&command_value)
                )));
            }
        };
        let log = format!(
            "$ {}\n\n--- stdout ---\n{out}\n--- stderr ---\n{err}\n--- exit {exit_code} ---\n",
            dwp::py::str_of(&command_value)
        );
        fs::write(&log_path, log).map_err(|e| io_fail(&log_path, e))?;
        let rel_log = format!("gates/{}/{log_name}", req.task);
        let cwd = std::path::absolute(&root).unwrap_or(root);
        let payload = obj([
            ("command", s(&joined)),
            ("cwd", s(&cwd.to_string_lossy())),
            ("timeout_seconds", req.timeout.to_value()),
            ("exit_code", int(exit_code)),
            ("task", s(&req.task)),
            ("criterion", s(criterion)),
        ]);
        let event = self.append_raw(
            "gate_run",
            payload,
            self.helper(),
            None,
            Some("observed"),
            Some(&rel_log),
        )?;
        let seq = seq_of(&event);
        let cache = Value::Object(obj([
            ("fingerprint", s(&fp)),
            ("task", s(&req.task)),
            ("criterion", s(criterion)),
            ("exit_code", int(exit_code)),
            ("log", s(&rel_log)),
            ("seq", int(seq)),
            ("ts", event.get("ts").cloned().unwrap_or(Value::Null)),
        ]));
        let mut line =
            canonical_json::to_python_compact(&cache).map_err(|e| fail(e.to_string()))?;
        line.push(b'\n');
        let cache_path = self.plan.dir.join(EVIDENCE_NAME);
        append_bytes(&cache_path, &line)?;
        Ok(GateOutcome { reused: false, fingerprint: fp, exit_code, log: rel_log, seq: Some(seq) })
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        drop(self.journal.take());
        if let Some(lock) = self.lock.take() {
            let _ = lock.release();
        }
    }
}

/// The last non-blank line of the first `len` bytes of `path`, read backwards from the end in
/// 4 KiB steps (a plain append must not cost a read of the whole journal).
fn last_line(path: &Path, len: u64) -> Result<Option<Vec<u8>>> {
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

fn append_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| io_fail(path, e))?;
    f.write_all(bytes).map_err(|e| io_fail(path, e))
}

fn walk_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for entry in rd.filter_map(|e| e.ok()) {
        let path = entry.path();
        let Ok(ft) = entry.file_type() else { continue };
        if ft.is_dir() {
            walk_files(&path, out);
        } else if ft.is_file() {
            out.push(path);
        }
    }
}

/// Lexically normalizes `..` and `.` away (no filesystem access).
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Some(out)
}

fn hash_surface(path: &Path) -> Option<String> {
    if path.is_file() {
        return hash_file(path);
    }
    if !path.is_dir() {
        return None;
    }
    let mut members: Vec<(String, String)> = Vec::new();
    fn walk(base: &Path, dir: &Path, members: &mut Vec<(String, String)>) {
        let Ok(rd) = fs::read_dir(dir) else { return };
        let mut entries: Vec<_> = rd.filter_map(|e| e.ok()).collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let rel = path
                .strip_prefix(base)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            let Ok(ft) = entry.file_type() else { continue };
            if ft.is_symlink() {
                let target = fs::read_link(&path)
                    .map(|t| t.to_string_lossy().into_owned())
                    .unwrap_or_default();
                members.push((rel, format!("link:{target}")));
            } else if ft.is_dir() {
                if [".git", "__pycache__", ".ledger.lock"].contains(&name.as_str()) {
                    continue;
                }
                walk(base, &path, members);
            } else if ft.is_file() {
                members.push((rel, hash_file(&path).unwrap_or_default()));
            }
        }
    }
    walk(path, path, &mut members);
    if members.is_empty() {
        return None;
    }
    let mut bytes = Vec::new();
    for (rel, value) in members {
        bytes.extend(rel.as_bytes());
        bytes.push(0);
        bytes.extend(value.as_bytes());
        bytes.push(b'\n');
    }
    Some(canonical_json::digest::sha256_hex(&bytes))
}

/// Runs `git ARGS` in `cwd`: (trimmed stdout, success).
pub fn git(args: &[&str], cwd: &Path) -> (String, bool) {
    match Command::new("git").args(args).current_dir(cwd).stdin(Stdio::null()).output() {
        Ok(out) => (String::from_utf8_lossy(&out.stdout).trim().to_owned(), out.status.success()),
        Err(_) => (String::new(), false),
    }
}

fn tree_state(root: &Path) -> Value {
    let (head, ok) = git(&["rev-parse", "HEAD"], root);
    if !ok {
        return Value::Null;
    }
    let Ok(out) = Command::new("git")
        .args(["status", "--porcelain", "-z", "--untracked-files=all"])
        .current_dir(root)
        .stdin(Stdio::null())
        .output()
    else {
        return Value::Null;
    };
    if !out.status.success() {
        return Value::Null;
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let entries: Vec<&str> = text.split('\0').collect();
    let mut changed: Vec<(String, String, Option<String>)> = Vec::new();
    let mut i = 0;
    while i < entries.len() {
        let entry = entries[i];
        i += 1;
        if entry.len() < 4 {
            continue;
        }
        let (code, rel) = (&entry[..2], &entry[3..]);
        if code.starts_with(['R', 'C']) {
            i += 1;
        }
        let full = root.join(rel);
        let digest = if full.is_symlink() { None } else { hash_file(&full) };
        changed.push((code.to_owned(), rel.to_owned(), digest));
    }
    changed.sort();
    Value::Object(obj([
        ("head", s(&head)),
        (
            "changed",
            Value::Array(
                changed
                    .into_iter()
                    .map(|(c, r, d)| {
                        Value::Array(vec![s(&c), s(&r), d.map_or(Value::Null, |d| s(&d))])
                    })
                    .collect(),
            ),
        ),
    ]))
}

/// `re.sub(r'[^A-Za-z0-9._-]+', '-', cmd)[:40].strip('-')`.
pub fn gate_slug(command: &str) -> String {
    let mut out = String::new();
    let mut in_run = false;
    for c in command.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('-');
            in_run = true;
        }
    }
    let cut: String = out.chars().take(40).collect();
    cut.trim_matches('-').to_owned()
}

/// A gate command: a shell string or an argv array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateCommand {
    /// Run by `/bin/sh -c`.
    Shell(String),
    /// Executed directly.
    Argv(Vec<String>),
}

impl GateCommand {
    /// Parses `--json`: a non-blank JSON string or a non-empty array of non-blank strings.
    pub fn parse(raw: &str) -> Option<GateCommand> {
        match canonical_json::parse(raw.as_bytes()).ok()? {
            Value::String(text) if dwp::py::non_blank(&text) => Some(GateCommand::Shell(text)),
            Value::Array(items) if !items.is_empty() => items
                .iter()
                .map(|i| i.as_str().filter(|t| dwp::py::non_blank(t)).map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .map(GateCommand::Argv),
            _ => None,
        }
    }

    /// The command as recorded (argv joined with spaces).
    pub fn joined(&self) -> String {
        match self {
            GateCommand::Shell(text) => text.clone(),
            GateCommand::Argv(argv) => argv.join(" "),
        }
    }

    /// The command as parsed (string or list).
    pub fn to_value(&self) -> Value {
        match self {
            GateCommand::Shell(text) => s(text),
            GateCommand::Argv(argv) => Value::Array(argv.iter().map(|a| s(a)).collect()),
        }
    }
}

/// A gate timeout as the user wrote it (`--timeout 5` records `5.0`, the default `600`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Timeout {
    /// The default, an integer 600.
    Default,
    /// `--timeout S` (a float, as argparse parses it).
    Given(f64),
}

impl Timeout {
    fn seconds(self) -> f64 {
        match self {
            Timeout::Default => 600.0,
            Timeout::Given(s) => s,
        }
    }

    fn text(self) -> String {
        match self {
            Timeout::Default => "600".to_owned(),
            Timeout::Given(s) => canonical_json::python_float_repr(s),
        }
    }

    fn to_value(self) -> Value {
        match self {
            Timeout::Default => int(600),
            Timeout::Given(secs) => canonical_json::Finite::new(secs)
                .map_or_else(|| int(600), |f| Value::Number(Number::Float(f))),
        }
    }
}

/// A `gate` request.
#[derive(Clone, Debug)]
pub struct GateRequest {
    /// Task id.
    pub task: String,
    /// Criterion id.
    pub criterion: Option<String>,
    /// The command.
    pub command: GateCommand,
    /// Timeout.
    pub timeout: Timeout,
    /// `--selection`.
    pub selection: Option<String>,
    /// Reuse cached evidence (not `--no-reuse`).
    pub reuse: bool,
}

/// What a gate did.
#[derive(Clone, Debug)]
pub struct GateOutcome {
    /// Replayed from the cache.
    pub reused: bool,
    /// The fingerprint.
    pub fingerprint: String,
    /// Exit code.
    pub exit_code: i64,
    /// Log path relative to the plan.
    pub log: String,
    /// The `gate_run` seq.
    pub seq: Option<i64>,
}

enum RunResult {
    Finished { code: i64, stdout: String, stderr: String },
    TimedOut { stdout: String },
    NotFound,
}

/// Python text-mode decoding: lossy UTF-8 with universal newlines.
fn text_mode(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).replace("\r\n", "\n").replace('\r', "\n")
}

fn run_command(command: &GateCommand, cwd: &Path, timeout: f64) -> Result<RunResult> {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use wait_timeout::ChildExt;
    let mut cmd = match command {
        GateCommand::Shell(text) => {
            let mut c = Command::new("/bin/sh");
            c.arg("-c").arg(text);
            c
        }
        GateCommand::Argv(argv) => {
            let Some((program, rest)) = argv.split_first() else {
                return Ok(RunResult::NotFound);
            };
            let mut c = Command::new(program);
            c.args(rest);
            c
        }
    };
    cmd.current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(RunResult::NotFound),
        Err(e) => return Err(fail(format!("gate command could not start: {e}"))),
    };
    let pump = |stream: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut s) = stream {
                let _ = s.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out_thread = pump(child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let err_thread = pump(child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let limit = Duration::try_from_secs_f64(timeout.max(0.0)).unwrap_or(Duration::from_secs(600));
    let status = child.wait_timeout(limit).map_err(|e| fail(format!("gate wait failed: {e}")))?;
    match status {
        Some(status) => {
            // Descendants that outlive the shell keep the pipes open; end the group.
            kill_group(child.id());
            let stdout = out_thread.join().unwrap_or_default();
            let stderr = err_thread.join().unwrap_or_default();
            let code =
                status.code().map_or_else(|| -i64::from(status.signal().unwrap_or(0)), i64::from);
            Ok(RunResult::Finished { code, stdout: text_mode(&stdout), stderr: text_mode(&stderr) })
        }
        None => {
            kill_group(child.id());
            let _ = child.wait();
            let stdout = out_thread.join().unwrap_or_default();
            let _ = err_thread.join();
            Ok(RunResult::TimedOut { stdout: text_mode(&stdout) })
        }
    }
}

fn kill_group(pid: u32) {
    if let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// Materializes a plan: manifest → stamped contract → approval, each step resumable.
///
/// Returns `(plan, contract_id, approval_seq, resumed)`.
///
/// # Errors
/// The upstream refusals (nothing is written before the failing step).
pub fn materialize(
    plan_dir: &Path,
    contract_file: &Path,
    authority: &str,
    mechanism: &str,
    note: Option<&str>,
    now: SystemTime,
) -> Result<(String, String, i64, bool)> {
    if !MECHANISMS.contains(&mechanism) {
        return Err(fail(format!(
            "mechanism {} outside {} (D3-2: exactly two exist)",
            repr_str(mechanism),
            MECHANISMS.join(" and ")
        )));
    }
    let bytes = fs::read(contract_file).map_err(|e| io_fail(contract_file, e))?;
    let mut contract = canonical_json::parse(&bytes)
        .map_err(|e| fail(format!("{} is not valid JSON: {e}", contract_file.display())))?;
    if let Some(o) = contract.as_object_mut() {
        o.remove("contract_id");
    }
    let mut warnings = Vec::new();
    let errors = {
        let e = validate::contract_errors(&contract, None);
        if !e.is_empty() {
            e
        } else {
            let c = validate::closure_errors(&contract, &mut warnings);
            if c.is_empty() { validate::gate_command_errors(&contract) } else { c }
        }
    };
    if let Some(first) = errors.into_iter().next() {
        return Err(fail(format!("contract invalid: {first}")));
    }
    let folder = plan_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let plan_name = contract.get("plan").and_then(Value::as_str).unwrap_or("").to_owned();
    if plan_name != folder {
        return Err(fail(format!(
            "contract plan {} does not match the plan folder {} — the manifest asserts the \
             folder identity; materializing a mismatched contract would record the wrong plan",
            dwp::py::repr_opt(contract.get("plan")),
            repr_str(&folder)
        )));
    }
    let cid = contract_id(&contract).map_err(|e| fail(e.to_string()))?;
    let digest = plan_markdown_digest(plan_dir)?;
    let generation = contract_generation(&contract).unwrap_or(Generation::V6);
    let manifest_url = match generation {
        Generation::V6 => MANIFEST_URL_V6,
        Generation::V7 => MANIFEST_URL_V7,
    };
    let manifest_path = plan_dir.join("manifest.json");
    if manifest_path.exists() {
        let existing = read_json_named(&manifest_path)?;
        if existing.get("schema").and_then(Value::as_str) != Some(manifest_url) {
            return Err(fail(format!(
                "manifest.json is {} — a different generation. v1/v2/v5 manifests belong to \
                 their recorded lifecycle and are never rewritten (RFC 9.2)",
                dwp::py::repr_opt(existing.get("schema"))
            )));
        }
        let pointer = existing.get("contract").and_then(|c| c.get("id"));
        if pointer.and_then(Value::as_str) != Some(cid.as_str()) {
            return Err(fail(format!(
                "manifest contract pointer {} does not match this contract {} — never rewrite \
                 a pointer; amend through refine (the revision chain)",
                dwp::py::repr_opt(pointer),
                repr_str(&cid)
            )));
        }
    }
    for name in ["manifest.json", "contract.json", "contracts", JOURNAL_NAME] {
        refuse_symlink(&plan_dir.join(name))?;
    }
    let chain = plan_dir.join("contracts");
    if chain.is_dir() {
        return Err(fail(
            "a contracts/ revision chain exists — the contract is owned by amendments from here \
             on; materialization never rewrites it",
        ));
    }
    let contract_path = plan_dir.join("contract.json");
    let existing_contract =
        if contract_path.exists() { Some(read_json_named(&contract_path)?) } else { None };
    if let Some(stamped) = &existing_contract
        && stamped.get("contract_id").and_then(Value::as_str) != Some(cid.as_str())
    {
        return Err(fail(format!(
            "contract.json already carries {}; this contract is {} — a materialization never \
             rewrites a contract, that is a revision (refine amendment path)",
            dwp::py::repr_opt(stamped.get("contract_id")),
            repr_str(&cid)
        )));
    }
    if !manifest_path.exists() {
        let manifest = Value::Object(obj([
            ("schema", s(manifest_url)),
            ("plan", s(&plan_name)),
            ("contract", Value::Object(obj([("id", s(&cid)), ("path", s("contract.json"))]))),
        ]));
        write_pretty(&manifest_path, &manifest)?;
    }
    if existing_contract.is_none() {
        let mut stamped = contract.clone();
        if let Some(o) = stamped.as_object_mut() {
            o.insert("contract_id".into(), s(&cid));
        }
        write_pretty(&contract_path, &stamped)?;
    }
    let plan = Plan::load(plan_dir)?;
    let mut writer = Writer::open(plan, false, now)?;
    let prior = writer
        .events
        .iter()
        .find(|e| {
            e.get("type").and_then(Value::as_str) == Some("approval")
                && e.get("contract_id").and_then(Value::as_str) == Some(cid.as_str())
        })
        .map(seq_of);
    let result = match prior {
        Some(seq) => (plan_name, cid, seq, true),
        None => {
            let event = writer.append(AppendRequest {
                etype: "approval".to_owned(),
                payload: obj([
                    ("authority", s(authority)),
                    ("mechanism", s(mechanism)),
                    ("plan_digest", s(&digest)),
                ]),
                actor: actor("human", authority),
                note: note.map(str::to_owned),
                idempotent: true,
                trust: None,
                evidence_path: None,
            })?;
            (plan_name, cid, seq_of(&event), false)
        }
    };
    writer.close()?;
    Ok(result)
}

/// A human-authority marker from `--human-note FILE`.
///
/// # Errors
/// The note is not a file.
pub fn human_note_marker(note: &Path) -> Result<String> {
    if !note.is_file() {
        return Err(fail(format!(
            "--human-note {} is not a file - the marker is the note the human wrote",
            repr_str(&note.to_string_lossy())
        )));
    }
    let digest: String = hash_file(note).unwrap_or_default().chars().take(16).collect();
    Ok(format!("human authority marker: note {} sha256:{digest}", note.display()))
}

/// The refusal when neither a note nor a TTY confirmation is available.
pub fn human_marker_missing() -> LedgerError {
    fail(
        "--actor-kind human needs an explicit human-authority marker: --human-note PATH (the \
         note the human wrote) or an interactive confirmation on a terminal (F-20). An agent \
         records its own claims with --actor-kind agent",
    )
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
