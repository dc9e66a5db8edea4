//! `cookwala log`: mission event logs (sequence, checkpoint, witness, verify).
//!
//! The log is a journal file (one JCS event per line) written by a single sequencer; the
//! journal crate supplies the lock, the size check before each append, fsync and torn-tail
//! repair. In `hash_only` mode payloads live in a separate folder (one file per digest) that
//! can be erased without breaking the chain.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use canonical_json::{Map, Value};
use cookwala::keys::{KeySet, UNBOUNDED_VALID_FROM};
use cookwala::mission::{
    self, EventDraft, PayloadCheck, PayloadStore, Sequencer, SequencerConfig, StoreError,
};

use crate::clock::now_rfc3339;
use crate::commands::keys::{load_keys, load_signing_key};
use crate::input::read_json;
use crate::output::{compact, emit};

/// A [`PayloadStore`] in a folder: `<dir>/<hex>.json` per `sha256:<hex>` digest.
#[derive(Debug)]
pub struct DirPayloadStore {
    dir: PathBuf,
}

impl DirPayloadStore {
    /// Uses (and creates) `dir`.
    pub fn open(dir: &Path) -> Result<DirPayloadStore> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(DirPayloadStore { dir: dir.to_path_buf() })
    }

    /// The file for a digest; only well-formed digests map to a path, so a hostile digest
    /// cannot name a file outside the folder.
    fn path(&self, digest: &str) -> Result<PathBuf, StoreError> {
        let hex = digest.strip_prefix("sha256:").filter(|h| {
            h.len() == 64 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
        match hex {
            Some(hex) => Ok(self.dir.join(format!("{hex}.json"))),
            None => Err(store_error(format!("malformed payload digest {digest:?}"))),
        }
    }
}

fn store_error(message: String) -> StoreError {
    StoreError(message.into())
}

impl PayloadStore for DirPayloadStore {
    fn put(&mut self, digest: &str, payload: &Value) -> Result<(), StoreError> {
        let path = self.path(digest)?;
        let bytes = canonical_json::to_jcs(payload).map_err(|e| store_error(e.to_string()))?;
        journal::atomic_replace(&path, &bytes).map_err(|e| StoreError(Box::new(e)))
    }

    fn get(&self, digest: &str) -> Result<Option<Value>, StoreError> {
        let path = self.path(digest)?;
        match std::fs::read(&path) {
            Ok(bytes) => canonical_json::parse(&bytes)
                .map(Some)
                .map_err(|e| store_error(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(store_error(format!("{}: {e}", path.display()))),
        }
    }

    fn erase(&mut self, digest: &str) -> Result<bool, StoreError> {
        let path = self.path(digest)?;
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(store_error(format!("{}: {e}", path.display()))),
        }
    }
}

/// The sequencer side of a log command.
#[derive(Debug)]
pub struct SequencerArgs {
    pub log: PathBuf,
    pub key: PathBuf,
    pub kid: Option<String>,
    pub mission: String,
    pub sequencer: Option<String>,
    pub payloads: Option<PathBuf>,
}

/// A sequencer over either payload mode, so commands need not care.
enum AnySequencer {
    Full(Sequencer<journal::Journal>),
    HashOnly(Sequencer<journal::Journal, DirPayloadStore>),
}

fn open_sequencer(args: &SequencerArgs) -> Result<AnySequencer> {
    let (file_kid, key) = load_signing_key(&args.key)?;
    let kid = args.kid.clone().unwrap_or(file_kid);
    let keys = KeySet::from_records(vec![key.key_record(&kid, UNBOUNDED_VALID_FROM)]);
    let config = SequencerConfig {
        mission: args.mission.clone(),
        actor: args.sequencer.clone().unwrap_or_else(|| kid.clone()),
        kid,
    };
    let options = journal::OpenOptions::new().create(true);
    let (journal, report) = journal::Journal::open(&args.log, &options)
        .with_context(|| format!("cannot open the log {}", args.log.display()))?;
    if let Some(damage) = report.damage {
        eprintln!(
            "warning: {}: repaired at byte {}: {}",
            args.log.display(),
            damage.byte_offset(),
            damage.cause()
        );
    }
    let context = || format!("{} cannot be continued", args.log.display());
    Ok(match &args.payloads {
        None => {
            AnySequencer::Full(Sequencer::open(config, key, journal, &keys).with_context(context)?)
        }
        Some(dir) => AnySequencer::HashOnly(
            Sequencer::open_hash_only(config, key, journal, DirPayloadStore::open(dir)?, &keys)
                .with_context(context)?,
        ),
    })
}

/// The event side of `log append`.
#[derive(Debug)]
pub struct EventArgs {
    pub actor: Option<String>,
    pub event_type: String,
    pub payload: Option<Value>,
    pub transition: Option<(String, String)>,
    pub at: Option<String>,
}

/// Sequences one event and prints it.
pub fn append(seq: &SequencerArgs, event: EventArgs, json: bool) -> Result<()> {
    let mut sequencer = open_sequencer(seq)?;
    let at = event.at.unwrap_or_else(now_rfc3339);
    let sequencer_actor = match &sequencer {
        AnySequencer::Full(s) => s.config().actor.clone(),
        AnySequencer::HashOnly(s) => s.config().actor.clone(),
    };
    let actor = event.actor.unwrap_or(sequencer_actor);
    if actor.trim().is_empty() {
        bail!("--actor must not be empty");
    }
    let mut draft = EventDraft::new(&at, &actor, &event.event_type);
    draft.payload = event.payload;
    draft.transition = event.transition;
    let sequenced = match &mut sequencer {
        AnySequencer::Full(s) => s.append(draft),
        AnySequencer::HashOnly(s) => s.append(draft),
    }
    .context("the sequencer refused the event")?;
    if json {
        println!("{}", compact(&sequenced)?);
    } else {
        let seq_no = sequenced.get("seq").and_then(Value::as_i64).unwrap_or(-1);
        let hash = sequenced.get("hash").and_then(Value::as_str).unwrap_or("");
        println!("seq {seq_no} {hash}");
    }
    Ok(())
}

/// Issues a signed checkpoint of the current head.
pub fn checkpoint(seq: &SequencerArgs, at: Option<String>, out: Option<&Path>) -> Result<()> {
    let sequencer = open_sequencer(seq)?;
    let at = at.unwrap_or_else(now_rfc3339);
    let cp = match &sequencer {
        AnySequencer::Full(s) => s.checkpoint(&at),
        AnySequencer::HashOnly(s) => s.checkpoint(&at),
    }
    .context("cannot checkpoint")?;
    emit(&cp, out)
}

/// Adds a witness signature to a checkpoint.
pub fn cosign(
    key: &Path,
    kid: Option<String>,
    actor: &str,
    at: Option<String>,
    checkpoint: &Path,
    out: Option<&Path>,
) -> Result<()> {
    let (file_kid, key) = load_signing_key(key)?;
    let kid = kid.unwrap_or(file_kid);
    let at = at.unwrap_or_else(now_rfc3339);
    let cp = read_json(checkpoint)?;
    let signed = mission::cosign(&cp, &key, &kid, actor, &at).context("cannot cosign")?;
    emit(&signed, out)
}

/// Reads a log file (read-only: a torn tail is reported, never repaired here).
pub fn read_events(log: &Path) -> Result<Vec<Value>> {
    let (records, report) = journal::read_records(log, journal::json_line)
        .with_context(|| format!("cannot read the log {}", log.display()))?;
    if let Some(damage) = report.damage {
        eprintln!(
            "warning: {}: TORN TAIL at byte {}: {} (verifying the complete events before it)",
            log.display(),
            damage.byte_offset(),
            damage.cause()
        );
    }
    records
        .iter()
        .enumerate()
        .map(|(i, r)| {
            canonical_json::parse(&r.line)
                .with_context(|| format!("{}: event {i} is not strict JSON", log.display()))
        })
        .collect()
}

/// Verifies a log (and optionally a checkpoint and stored payloads). Returns whether it is ok.
pub fn verify(
    log: &Path,
    keys: &[PathBuf],
    checkpoint: Option<&Path>,
    payloads: Option<&Path>,
    json: bool,
) -> Result<bool> {
    let events = read_events(log)?;
    let keys = load_keys(keys)?;
    let keys_opt = (!keys.is_empty()).then_some(&keys);
    let mut result = Map::new();
    result.insert("events".into(), Value::from(events.len()));
    let reason = match mission::verify_chain(&events, keys_opt) {
        Err(e) => e.reason(),
        Ok(head) => {
            result.insert("head".into(), head.as_str().into());
            let mut reason = "ok".to_owned();
            if let Some(dir) = payloads {
                let store = DirPayloadStore::open(dir)?;
                let (mut present, mut erased) = (0usize, 0usize);
                for (i, event) in events.iter().enumerate() {
                    match mission::check_payload(event, &store)? {
                        PayloadCheck::Present(_) => present += 1,
                        PayloadCheck::Erased => erased += 1,
                        PayloadCheck::Mismatch => {
                            reason = format!("payload_mismatch_at_{i}");
                            break;
                        }
                        _ => {}
                    }
                }
                result.insert("payloadsPresent".into(), Value::from(present));
                result.insert("payloadsErased".into(), Value::from(erased));
            }
            if reason == "ok"
                && let Some(cp_path) = checkpoint
            {
                let cp = read_json(cp_path)?;
                reason = mission::verify_checkpoint(&events, &cp, &keys).reason();
            }
            reason
        }
    };
    let ok = reason == "ok";
    if json {
        result.insert("ok".into(), ok.into());
        result.insert("reason".into(), reason.as_str().into());
        println!("{}", compact(&Value::Object(result))?);
    } else if let (true, Some(head)) = (ok, result.get("head").and_then(Value::as_str)) {
        println!("ok {head}");
    } else {
        println!("{reason}");
    }
    Ok(ok)
}

/// Erases a `hash_only` payload; the chain still verifies afterwards.
pub fn erase(payloads: &Path, digest: &str) -> Result<()> {
    let mut store = DirPayloadStore::open(payloads)?;
    let existed = store.erase(digest).map_err(|e| anyhow::anyhow!("{e}"))?;
    println!("{}", if existed { "erased" } else { "absent" });
    Ok(())
}

/// Compares two checkpoints of the same log. Returns whether they fork.
pub fn fork(a: &Path, b: &Path, json: bool) -> Result<bool> {
    let (a, b) = (read_json(a)?, read_json(b)?);
    let fork = mission::detect_fork(&a, &b);
    let reason = if fork { "fork_detected" } else { "no_fork" };
    if json {
        let mut map = Map::new();
        map.insert("fork".into(), fork.into());
        map.insert("reason".into(), reason.into());
        println!("{}", compact(&Value::Object(map))?);
    } else {
        println!("{reason}");
    }
    Ok(fork)
}
