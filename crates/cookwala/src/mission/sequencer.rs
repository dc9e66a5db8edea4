//! The sequencer: the single writer of a mission event log.
//!
//! It assigns `seq` and `prev`, computes the event hash, signs each event with its key (kind
//! `Event`, `signedAt` = the event's `at`, as the reference's `sign_event` does) and appends the
//! event's JCS bytes as one line to an [`EventStore`]. The caller supplies the store: the
//! command line wraps a `journal::Journal` (one durable line per event); [`MemoryEventStore`]
//! serves tests.
//!
//! **`hash_only` mode** (open point 22). The payload goes to an erasable [`PayloadStore`] and the
//! event carries `payloadDigest` = `"sha256:"` + hex(SHA-256(JCS(payload))) instead of `payload`.
//! The digest is the plain JCS hash, with no top-level exclusions (a document hash would leave a
//! payload's own `hash` / `signature` fields unbound) and unsalted: a payload of low entropy can
//! be confirmed by guessing, so a payload that must stay private after erasure should carry its
//! own salt (e.g. a [`crate::disclosure`] value). Erasing a payload never touches the log, so
//! the chain still verifies; [`check_payload`] tells erased payloads from tampered ones.

use std::collections::BTreeMap;

use canonical_json::{Map, Value, WriteError, digest::sha256_prefixed, parse, to_jcs};

use crate::keys::{KeySet, SigningKey};
use crate::signature::{SignError, sign_hash};
use crate::time::parse_timestamp;

use super::{ChainError, ReplayError, checkpoint_hash, event_hash, replay_mission, transitions};

/// The MissionEvent `type` values.
pub const EVENT_TYPES: [&str; 20] = [
    "created",
    "facet_added",
    "view_granted",
    "contribution_offered",
    "contribution_accepted",
    "contribution_rejected",
    "committed",
    "progress",
    "fulfilled",
    "failed",
    "withdrawn",
    "compensated",
    "decision",
    "escalated",
    "approved",
    "state_changed",
    "closed",
    "custom",
    "assessment",
    "reconciled",
];

/// A storage failure, wrapping the backend's error.
#[derive(Debug, thiserror::Error)]
#[error("storage failed: {0}")]
pub struct StoreError(pub Box<dyn std::error::Error + Send + Sync>);

/// Append-only storage of a log's lines (one JCS event per line, no newline).
pub trait EventStore {
    /// Every stored line, in order.
    ///
    /// # Errors
    /// When the backend cannot be read.
    fn load(&mut self) -> Result<Vec<Vec<u8>>, StoreError>;

    /// Appends one line durably.
    ///
    /// # Errors
    /// When the backend cannot write; nothing is appended then.
    fn append(&mut self, line: &[u8]) -> Result<(), StoreError>;
}

/// An in-memory [`EventStore`].
#[derive(Clone, Debug, Default)]
pub struct MemoryEventStore {
    /// The stored lines (public so tests can tamper with them).
    pub lines: Vec<Vec<u8>>,
}

impl EventStore for MemoryEventStore {
    fn load(&mut self) -> Result<Vec<Vec<u8>>, StoreError> {
        Ok(self.lines.clone())
    }

    fn append(&mut self, line: &[u8]) -> Result<(), StoreError> {
        self.lines.push(line.to_vec());
        Ok(())
    }
}

/// Erasable storage of `hash_only` payloads, keyed by `payloadDigest`.
pub trait PayloadStore {
    /// Stores `payload` under `digest`.
    ///
    /// # Errors
    /// When the backend cannot write.
    fn put(&mut self, digest: &str, payload: &Value) -> Result<(), StoreError>;

    /// The payload stored under `digest`, if it has not been erased.
    ///
    /// # Errors
    /// When the backend cannot be read.
    fn get(&self, digest: &str) -> Result<Option<Value>, StoreError>;

    /// Erases the payload under `digest`; returns whether there was one.
    ///
    /// # Errors
    /// When the backend cannot erase.
    fn erase(&mut self, digest: &str) -> Result<bool, StoreError>;
}

/// An in-memory [`PayloadStore`].
#[derive(Clone, Debug, Default)]
pub struct MemoryPayloadStore {
    /// Payloads by digest (public so tests can tamper with them).
    pub payloads: BTreeMap<String, Value>,
}

impl PayloadStore for MemoryPayloadStore {
    fn put(&mut self, digest: &str, payload: &Value) -> Result<(), StoreError> {
        self.payloads.insert(digest.to_owned(), payload.clone());
        Ok(())
    }

    fn get(&self, digest: &str) -> Result<Option<Value>, StoreError> {
        Ok(self.payloads.get(digest).cloned())
    }

    fn erase(&mut self, digest: &str) -> Result<bool, StoreError> {
        Ok(self.payloads.remove(digest).is_some())
    }
}

/// Where payloads live (`eventLog.mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LogMode {
    /// Payloads inline in events.
    Full,
    /// Payloads in a [`PayloadStore`], events carry `payloadDigest`.
    HashOnly,
}

impl LogMode {
    /// The wire name (`full`, `hash_only`).
    pub fn as_str(self) -> &'static str {
        match self {
            LogMode::Full => "full",
            LogMode::HashOnly => "hash_only",
        }
    }
}

/// Who the sequencer is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SequencerConfig {
    /// The mission id every event carries.
    pub mission: String,
    /// The sequencer's actor id (checkpoint `sequencer`).
    pub actor: String,
    /// The key id the sequencer signs with.
    pub kid: String,
}

/// One event to sequence (the sequencer adds `mission`, `seq`, `prev`, `hash`, `signature`).
#[derive(Clone, Debug, PartialEq)]
pub struct EventDraft {
    /// When it happened (a valid timestamp; also the signature's `signedAt`).
    pub at: String,
    /// Who did it.
    pub actor: String,
    /// One of [`EVENT_TYPES`].
    pub event_type: String,
    /// `transition{from, to}` for `state_changed`.
    pub transition: Option<(String, String)>,
    /// The payload.
    pub payload: Option<Value>,
    /// The proposing actor's signature, when the actor is not the sequencer.
    pub proposed_by: Option<Value>,
    /// `x-` extension fields (other names are refused).
    pub extensions: Map,
}

impl EventDraft {
    /// A draft with no transition, payload, proposal or extensions.
    pub fn new(at: &str, actor: &str, event_type: &str) -> EventDraft {
        EventDraft {
            at: at.to_owned(),
            actor: actor.to_owned(),
            event_type: event_type.to_owned(),
            transition: None,
            payload: None,
            proposed_by: None,
            extensions: Map::new(),
        }
    }
}

/// Why the sequencer refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SequencerError {
    /// The storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A stored line is not JSON.
    #[error("stored event {at} is not json: {message}")]
    Parse {
        /// Line index.
        at: usize,
        /// Parser message.
        message: String,
    },
    /// A stored event belongs to another mission.
    #[error("stored event {at} belongs to another mission")]
    ForeignEvent {
        /// Line index.
        at: usize,
    },
    /// A stored event has no signature (a sequencer signs every event).
    #[error("stored event {at} is unsigned")]
    Unsigned {
        /// Line index.
        at: usize,
    },
    /// The stored chain does not verify.
    #[error("stored log does not verify: {0}")]
    Chain(#[from] ChainError),
    /// Signing failed.
    #[error(transparent)]
    Sign(#[from] SignError),
    /// An event cannot be canonicalised.
    #[error("cannot canonicalise event: {0}")]
    Canonical(#[from] WriteError),
    /// `at` is not a valid timestamp.
    #[error("`{0}` is not a valid timestamp")]
    InvalidTimestamp(String),
    /// An unknown event type.
    #[error("unknown event type `{0}`")]
    UnknownEventType(String),
    /// An extension name without the `x-` prefix.
    #[error("extension field `{0}` must start with x-")]
    NotAnExtension(String),
    /// A checkpoint of an empty log.
    #[error("cannot checkpoint an empty log")]
    EmptyLog,
    /// A `state_changed` event the transition table refuses.
    #[error(transparent)]
    Transition(#[from] ReplayError),
}

/// The single writer of one mission log.
#[derive(Debug)]
pub struct Sequencer<S: EventStore, P: PayloadStore = MemoryPayloadStore> {
    config: SequencerConfig,
    key: SigningKey,
    store: S,
    payloads: Option<P>,
    events: Vec<Value>,
    /// actor → role, when transitions are enforced.
    roles: Option<BTreeMap<String, String>>,
    state: String,
}

impl<S: EventStore> Sequencer<S, MemoryPayloadStore> {
    /// Opens a `full` log: loads the stored events and verifies them against `keys` (every
    /// event must belong to the mission, be signed, and chain correctly).
    ///
    /// # Errors
    /// [`SequencerError`] when the store fails or the stored log does not verify.
    pub fn open(
        config: SequencerConfig,
        key: SigningKey,
        store: S,
        keys: &KeySet,
    ) -> Result<Self, SequencerError> {
        Self::open_inner(config, key, store, None, keys)
    }
}

impl<S: EventStore, P: PayloadStore> Sequencer<S, P> {
    /// Opens a `hash_only` log whose payloads live in `payloads` (checks as [`Sequencer::open`]).
    ///
    /// # Errors
    /// As [`Sequencer::open`].
    pub fn open_hash_only(
        config: SequencerConfig,
        key: SigningKey,
        store: S,
        payloads: P,
        keys: &KeySet,
    ) -> Result<Self, SequencerError> {
        Self::open_inner(config, key, store, Some(payloads), keys)
    }

    fn open_inner(
        config: SequencerConfig,
        key: SigningKey,
        mut store: S,
        payloads: Option<P>,
        keys: &KeySet,
    ) -> Result<Self, SequencerError> {
        let mut events = Vec::new();
        for (at, line) in store.load()?.iter().enumerate() {
            let event =
                parse(line).map_err(|e| SequencerError::Parse { at, message: e.to_string() })?;
            if event.get("mission").and_then(Value::as_str) != Some(config.mission.as_str()) {
                return Err(SequencerError::ForeignEvent { at });
            }
            if event.get("signature").is_none() {
                return Err(SequencerError::Unsigned { at });
            }
            events.push(event);
        }
        super::verify_chain(&events, Some(keys))?;
        Ok(Sequencer {
            config,
            key,
            store,
            payloads,
            events,
            roles: None,
            state: transitions::INITIAL.to_owned(),
        })
    }

    /// Enforces the mission transition table on `state_changed` events from now on, with the
    /// given actor → role map (the stored log is replayed to find the current state).
    ///
    /// # Errors
    /// [`SequencerError::Transition`] when the stored log already breaks the table.
    pub fn enforce_transitions(
        &mut self,
        roles: BTreeMap<String, String>,
    ) -> Result<(), SequencerError> {
        self.state = replay_mission(&self.events, &roles)?.state;
        self.roles = Some(roles);
        Ok(())
    }

    /// The log mode.
    pub fn mode(&self) -> LogMode {
        if self.payloads.is_some() { LogMode::HashOnly } else { LogMode::Full }
    }

    /// The events, in order.
    pub fn events(&self) -> &[Value] {
        &self.events
    }

    /// The head hash (`genesis` for an empty log).
    pub fn head(&self) -> String {
        self.events
            .last()
            .and_then(|e| e.get("hash"))
            .and_then(Value::as_str)
            .unwrap_or("genesis")
            .to_owned()
    }

    /// The configuration.
    pub fn config(&self) -> &SequencerConfig {
        &self.config
    }

    /// The payload store (`hash_only` mode).
    pub fn payloads(&self) -> Option<&P> {
        self.payloads.as_ref()
    }

    /// The payload store, for erasure (`hash_only` mode).
    pub fn payloads_mut(&mut self) -> Option<&mut P> {
        self.payloads.as_mut()
    }

    /// The event store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Gives back the stores.
    pub fn into_stores(self) -> (S, Option<P>) {
        (self.store, self.payloads)
    }

    /// Sequences, signs and durably appends one event; returns it.
    ///
    /// In `hash_only` mode the payload is stored first, so a crash leaves at worst an
    /// unreferenced payload, never an event whose payload was never stored.
    ///
    /// # Errors
    /// [`SequencerError`] for an invalid draft, a refused transition or a storage failure
    /// (then nothing was appended).
    pub fn append(&mut self, draft: EventDraft) -> Result<Value, SequencerError> {
        if parse_timestamp(&draft.at).is_err() {
            return Err(SequencerError::InvalidTimestamp(draft.at));
        }
        if !EVENT_TYPES.contains(&draft.event_type.as_str()) {
            return Err(SequencerError::UnknownEventType(draft.event_type));
        }
        if let Some(name) = draft.extensions.keys().find(|k| !k.starts_with("x-")) {
            return Err(SequencerError::NotAnExtension(name.clone()));
        }
        let next_state = match (&self.roles, draft.event_type.as_str(), &draft.transition) {
            (Some(roles), "state_changed", transition) => {
                let seq = i64::try_from(self.events.len()).unwrap_or(i64::MAX);
                let Some((from, to)) = transition else {
                    return Err(ReplayError::Malformed { seq }.into());
                };
                if *from != self.state {
                    let state = self.state.clone();
                    return Err(ReplayError::WrongFrom { seq, from: from.clone(), state }.into());
                }
                let role = roles.get(&draft.actor).map_or("unknown", String::as_str);
                if !transitions::allowed(from, to, role) {
                    return Err(ReplayError::NotAllowed {
                        seq,
                        from: from.clone(),
                        to: to.clone(),
                        role: role.to_owned(),
                    }
                    .into());
                }
                Some(to.clone())
            }
            _ => None,
        };

        let mut event = draft.extensions;
        event.insert("mission".into(), self.config.mission.as_str().into());
        event.insert("seq".into(), Value::from(self.events.len()));
        event.insert("at".into(), draft.at.as_str().into());
        event.insert("actor".into(), draft.actor.into());
        event.insert("type".into(), draft.event_type.into());
        event.insert("prev".into(), self.head().into());
        if let Some((from, to)) = draft.transition {
            let mut t = Map::new();
            t.insert("from".into(), from.into());
            t.insert("to".into(), to.into());
            event.insert("transition".into(), Value::Object(t));
        }
        let mut pending_payload = None;
        if let Some(payload) = draft.payload {
            if self.payloads.is_some() {
                let digest = payload_digest(&payload)?;
                event.insert("payloadDigest".into(), digest.as_str().into());
                pending_payload = Some((digest, payload));
            } else {
                event.insert("payload".into(), payload);
            }
        }
        if let Some(proposal) = draft.proposed_by {
            event.insert("proposedBy".into(), proposal);
        }
        let mut event = Value::Object(event);
        let hash = event_hash(&event)?;
        let signature =
            sign_hash(&hash, &self.key, &self.config.kid, &draft.at, Some(&"Event".into()))?;
        if let Some(map) = event.as_object_mut() {
            map.insert("hash".into(), hash.into());
            map.insert("signature".into(), signature);
        }
        let line = to_jcs(&event)?;
        if let (Some((digest, payload)), Some(store)) = (&pending_payload, self.payloads.as_mut()) {
            store.put(digest, payload)?;
        }
        self.store.append(&line)?;
        self.events.push(event.clone());
        if let Some(state) = next_state {
            self.state = state;
        }
        Ok(event)
    }

    /// A signed checkpoint of the current head: `{mission, seq, head, at, sequencer,
    /// signature}` (kind `Checkpoint`, `signedAt` = `at`). Witnesses add themselves with
    /// [`cosign`].
    ///
    /// # Errors
    /// [`SequencerError::EmptyLog`], or an invalid `at`.
    pub fn checkpoint(&self, at: &str) -> Result<Value, SequencerError> {
        if self.events.is_empty() {
            return Err(SequencerError::EmptyLog);
        }
        let mut cp = Map::new();
        cp.insert("mission".into(), self.config.mission.as_str().into());
        cp.insert("seq".into(), Value::from(self.events.len() - 1));
        cp.insert("head".into(), self.head().into());
        cp.insert("at".into(), at.into());
        cp.insert("sequencer".into(), self.config.actor.as_str().into());
        let mut cp = Value::Object(cp);
        let hash = checkpoint_hash(&cp)?;
        let signature =
            sign_hash(&hash, &self.key, &self.config.kid, at, Some(&"Checkpoint".into()))?;
        if let Some(map) = cp.as_object_mut() {
            map.insert("signature".into(), signature);
        }
        Ok(cp)
    }
}

/// Adds a witness entry `{actor, at, signature}` to a checkpoint (kind `Checkpoint`,
/// `signedAt` = `at`, over the same checkpoint hash the sequencer signed).
///
/// # Errors
/// [`SignError`] for an invalid `at`, a checkpoint that is not an object or not canonicalisable.
pub fn cosign(
    checkpoint: &Value,
    witness_key: &SigningKey,
    kid: &str,
    actor: &str,
    at: &str,
) -> Result<Value, SignError> {
    let hash = checkpoint_hash(checkpoint)?;
    let signature = sign_hash(&hash, witness_key, kid, at, Some(&"Checkpoint".into()))?;
    let mut out = checkpoint.clone();
    let map = out.as_object_mut().ok_or(SignError::NotAnObject)?;
    let mut witness = Map::new();
    witness.insert("actor".into(), actor.into());
    witness.insert("at".into(), at.into());
    witness.insert("signature".into(), signature);
    match map.get_mut("witnesses") {
        Some(Value::Array(list)) => list.push(Value::Object(witness)),
        _ => {
            map.insert("witnesses".into(), Value::Array(vec![Value::Object(witness)]));
        }
    }
    Ok(out)
}

/// The `payloadDigest` of a payload: `sha256:` + hex(SHA-256(JCS(payload))).
///
/// # Errors
/// When the payload cannot be written as JCS.
pub fn payload_digest(payload: &Value) -> Result<String, WriteError> {
    Ok(sha256_prefixed(&to_jcs(payload)?))
}

/// What [`check_payload`] found.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum PayloadCheck {
    /// The event has neither `payload` nor `payloadDigest`.
    None,
    /// The payload is inline (`full` mode).
    Inline,
    /// The stored payload matches the digest.
    Present(Value),
    /// The payload was erased (the event still verifies).
    Erased,
    /// The stored payload does not match the digest.
    Mismatch,
}

/// Looks up and checks a `hash_only` event's payload.
///
/// # Errors
/// When the payload store fails.
pub fn check_payload(
    event: &Value,
    payloads: &impl PayloadStore,
) -> Result<PayloadCheck, StoreError> {
    if event.get("payload").is_some() {
        return Ok(PayloadCheck::Inline);
    }
    let Some(digest) = event.get("payloadDigest").and_then(Value::as_str) else {
        return Ok(PayloadCheck::None);
    };
    Ok(match payloads.get(digest)? {
        None => PayloadCheck::Erased,
        Some(payload) if payload_digest(&payload).ok().as_deref() == Some(digest) => {
            PayloadCheck::Present(payload)
        }
        Some(_) => PayloadCheck::Mismatch,
    })
}
