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
    self, EventDraft, EventStore, PayloadCheck, PayloadStore, Sequencer, SequencerConfig,
    StoreError,
};

use crate::clock::now_rfc3339;
use crate::commands::keys::{load_keys, load_signing_key};
use crate::input::read_json;
use crate::output::{compact, emit};

/// A journal as the sequencer's [`EventStore`]: one durable line per event.
#[derive(Debug)]
pub struct JournalStore(pub journal::Journal);

impl EventStore for JournalStore {
    fn load(&mut self) -> Result<Vec<Vec<u8>>, StoreError> {
        let records = self.0.read_records().map_err(|e| StoreError(Box::new(e)))?;
        Ok(records.into_iter().map(|r| r.line).collect())
    }

    fn append(&mut self, line: &[u8]) -> Result<(), StoreError> {
        self.0.append(line).map(|_| ()).map_err(|e| StoreError(Box::new(e)))
    }
}

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
#[derive(Debug, clap::Args)]
pub struct SequencerArgs {
    /// The log file (NDJSON, one JCS event per line; created if missing)
    #[arg(long)]
    pub log: PathBuf,
    /// The sequencer's private key file
    #[arg(long)]
    pub key: PathBuf,
    /// Key id (default: the key file's kid)
    #[arg(long)]
    pub kid: Option<String>,
    /// Mission id every event carries
    #[arg(long)]
    pub mission: String,
    /// The sequencer's actor id (default: the kid)
    #[arg(long)]
    pub sequencer: Option<String>,
    /// hash_only mode: keep payloads in this folder and only their digests in the log
    #[arg(long)]
    pub payloads: Option<PathBuf>,
}

/// A sequencer over either payload mode, so commands need not care.
enum AnySequencer {
    Full(Sequencer<JournalStore>),
    HashOnly(Sequencer<JournalStore, DirPayloadStore>),
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
        None => AnySequencer::Full(
            Sequencer::open(config, key, JournalStore(journal), &keys).with_context(context)?,
        ),
        Some(dir) => AnySequencer::HashOnly(
            Sequencer::open_hash_only(
                config,
                key,
                JournalStore(journal),
                DirPayloadStore::open(dir)?,
                &keys,
            )
            .with_context(context)?,
        ),
    })
}

/// `cookwala log append`.
#[derive(Debug, clap::Args)]
pub struct AppendArgs {
    #[command(flatten)]
    pub seq: SequencerArgs,
    /// Event type: created, progress, state_changed, committed, closed, ...
    #[arg(long = "type")]
    pub event_type: String,
    /// Who did it (default: the sequencer)
    #[arg(long)]
    pub actor: Option<String>,
    /// Payload as JSON text
    #[arg(long)]
    pub payload: Option<String>,
    /// For state_changed: the state left
    #[arg(long, requires = "to")]
    pub from: Option<String>,
    /// For state_changed: the state entered
    #[arg(long, requires = "from")]
    pub to: Option<String>,
    /// When it happened (RFC 3339; default: now)
    #[arg(long)]
    pub at: Option<String>,
    /// Print the whole event as JSON
    #[arg(long)]
    pub json: bool,
}

/// Sequences one event and prints it.
pub fn append(event: AppendArgs) -> Result<()> {
    let payload = match event.payload {
        Some(text) => Some(
            canonical_json::parse(text.as_bytes())
                .map_err(|e| anyhow::anyhow!("--payload is not JSON: {e}"))?,
        ),
        None => None,
    };
    let mut sequencer = open_sequencer(&event.seq)?;
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
    draft.payload = payload;
    draft.transition = event.from.zip(event.to);
    let sequenced = match &mut sequencer {
        AnySequencer::Full(s) => s.append(draft),
        AnySequencer::HashOnly(s) => s.append(draft),
    }
    .context("the sequencer refused the event")?;
    if event.json {
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

/// The `cookwala log` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum LogCommand {
    /// Sequence and sign one event (seq, prev and hash are assigned by the sequencer)
    Append(AppendArgs),
    /// Issue a checkpoint of the current head, signed by the sequencer
    Checkpoint {
        #[command(flatten)]
        seq: SequencerArgs,
        /// Checkpoint time (RFC 3339; default: now)
        #[arg(long)]
        at: Option<String>,
        /// Write here instead of stdout
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
    /// Add a witness signature to a checkpoint
    Cosign {
        /// The witness's private key file
        #[arg(long)]
        key: PathBuf,
        /// Key id (default: the key file's kid)
        #[arg(long)]
        kid: Option<String>,
        /// The witness's actor id
        #[arg(long)]
        actor: String,
        /// Witness time (RFC 3339; default: now)
        #[arg(long)]
        at: Option<String>,
        /// Write here instead of stdout
        #[arg(long, short)]
        out: Option<PathBuf>,
        /// The checkpoint file
        checkpoint: PathBuf,
    },
    /// Verify a log: seq, prev links, hashes, signatures; optionally a checkpoint and payloads
    ///
    /// Prints `ok <head>` or a reason such as hash_mismatch_at_2, head_mismatch or
    /// no_independent_witness. A torn final line is reported and the complete events verified.
    Verify {
        /// The log file
        #[arg(long)]
        log: PathBuf,
        /// Key set files (repeatable); without keys, signatures are not checked
        #[arg(long)]
        keys: Vec<PathBuf>,
        /// A checkpoint to verify against the log (needs an independent witness)
        #[arg(long)]
        checkpoint: Option<PathBuf>,
        /// hash_only payload folder: check every stored payload against its digest
        #[arg(long)]
        payloads: Option<PathBuf>,
        /// Print a JSON result
        #[arg(long)]
        json: bool,
    },
    /// Erase a hash_only payload (the log keeps verifying)
    Erase {
        /// The payload folder
        #[arg(long)]
        payloads: PathBuf,
        /// The payloadDigest to erase
        digest: String,
    },
    /// Compare two checkpoints of one mission: same seq, different head is a fork
    Fork {
        /// Print {"fork","reason"}
        #[arg(long)]
        json: bool,
        /// First checkpoint
        a: PathBuf,
        /// Second checkpoint
        b: PathBuf,
    },
}

impl LogCommand {
    /// Runs the subcommand; `Ok(false)` when a check failed or a fork was found.
    pub fn run(self) -> Result<bool> {
        match self {
            LogCommand::Append(args) => append(args).map(|()| true),
            LogCommand::Checkpoint { seq, at, out } => {
                checkpoint(&seq, at, out.as_deref()).map(|()| true)
            }
            LogCommand::Cosign { key, kid, actor, at, out, checkpoint } => {
                cosign(&key, kid, &actor, at, &checkpoint, out.as_deref()).map(|()| true)
            }
            LogCommand::Verify { log, keys, checkpoint, payloads, json } => {
                verify(&log, &keys, checkpoint.as_deref(), payloads.as_deref(), json)
            }
            LogCommand::Erase { payloads, digest } => erase(&payloads, &digest).map(|()| true),
            LogCommand::Fork { json, a, b } => fork(&a, &b, json).map(|fork| !fork),
        }
    }
}
