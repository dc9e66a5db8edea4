//! Mission-profile event logs (COOKWALA.md §2.8, §11): hashes, chain and checkpoint verification,
//! fork detection, replay, and a [`Sequencer`] that writes such logs.
//!
//! Verification follows the reference exactly, including what it does not check (open point 10):
//! unsigned events are accepted even when keys are given, the signer is never matched against the
//! sequencer or the actor, and witness independence is judged by `kid` alone. Hash exclusions
//! follow the reference (open point 9): events drop `hash`, `signature` and `proposedBy`;
//! checkpoints drop `signature` and `witnesses` and keep a `hash` field if one is present.

mod sequencer;
pub mod transitions;

use std::collections::BTreeMap;

use canonical_json::Value;

use crate::keys::KeySet;
use crate::signature::{Reason, truthy, verify_inner};

// The hashes are defined beside the signatures that cover them; re-exported here as before.
pub use crate::signature::{
    CHECKPOINT_HASH_EXCLUDES, EVENT_HASH_EXCLUDES, checkpoint_hash, event_hash,
};

pub use sequencer::{
    EVENT_TYPES, EventDraft, EventStore, LogMode, MemoryEventStore, MemoryPayloadStore,
    PayloadCheck, PayloadStore, Sequencer, SequencerConfig, SequencerError, StoreError,
    check_payload, cosign, payload_digest,
};

/// Why a chain does not verify.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChainFault {
    /// `seq` is not the event's index.
    SeqGap,
    /// `prev` is not `genesis` (first event) or the previous event's `hash`.
    BrokenLink,
    /// `hash` is not the recomputed event hash.
    HashMismatch,
    /// A present signature does not verify (kind `Event`).
    Signature(Reason),
}

/// A chain failure at event `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error("{}", self.reason())]
pub struct ChainError {
    /// Index of the offending event.
    pub at: usize,
    /// What is wrong with it.
    pub fault: ChainFault,
}

impl ChainError {
    /// The reference reason string, e.g. `hash_mismatch_at_1`, `key_revoked_at_2`.
    pub fn reason(&self) -> String {
        let what = match self.fault {
            ChainFault::SeqGap => "seq_gap",
            ChainFault::BrokenLink => "broken_link",
            ChainFault::HashMismatch => "hash_mismatch",
            ChainFault::Signature(reason) => reason.as_str(),
        };
        format!("{what}_at_{}", self.at)
    }
}

/// Verifies a log: for each event in order, `seq` = index, `prev` links, `hash` recomputes, and
/// (when `keys` is given) a present signature verifies over the event's hash with kind `Event`.
/// Returns the head hash (`genesis` for an empty log).
///
/// # Errors
/// The first failing event and why.
pub fn verify_chain(events: &[Value], keys: Option<&KeySet>) -> Result<String, ChainError> {
    let event_kind = Value::from("Event");
    let mut prev = String::from("genesis");
    for (i, event) in events.iter().enumerate() {
        let fail = |fault| Err(ChainError { at: i, fault });
        let seq_ok = event.get("seq").is_some_and(|s| s.loose_eq(&Value::from(i)));
        if !seq_ok {
            return fail(ChainFault::SeqGap);
        }
        if event.get("prev").and_then(Value::as_str) != Some(prev.as_str()) {
            return fail(ChainFault::BrokenLink);
        }
        let Some(hash) = event.get("hash").and_then(Value::as_str) else {
            return fail(ChainFault::HashMismatch);
        };
        if event_hash(event).ok().as_deref() != Some(hash) {
            return fail(ChainFault::HashMismatch);
        }
        if let Some(keys) = keys
            && let Some(signature) = event.get("signature").filter(|s| truthy(s))
        {
            let verdict = verify_inner(Some(hash), Some(signature), keys, Some(&event_kind));
            if !verdict.is_ok() {
                return fail(ChainFault::Signature(verdict.reason));
            }
        }
        prev = hash.to_owned();
    }
    Ok(prev)
}

/// The outcome of [`verify_checkpoint`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CheckpointVerdict {
    /// Valid and independently witnessed.
    Ok,
    /// `seq` is outside the log or the event there has another hash.
    HeadMismatch,
    /// The sequencer's signature fails.
    Sequencer(Reason),
    /// A witness signature fails.
    Witness(Reason),
    /// No witness signs with a `kid` other than the sequencer's.
    NoIndependentWitness,
}

impl CheckpointVerdict {
    /// True for [`CheckpointVerdict::Ok`].
    pub fn is_ok(self) -> bool {
        self == CheckpointVerdict::Ok
    }

    /// The reference reason string (`ok`, `head_mismatch`, `sequencer_<r>`, `witness_<r>`,
    /// `no_independent_witness`).
    pub fn reason(self) -> String {
        match self {
            CheckpointVerdict::Ok => "ok".into(),
            CheckpointVerdict::HeadMismatch => "head_mismatch".into(),
            CheckpointVerdict::Sequencer(r) => format!("sequencer_{}", r.as_str()),
            CheckpointVerdict::Witness(r) => format!("witness_{}", r.as_str()),
            CheckpointVerdict::NoIndependentWitness => "no_independent_witness".into(),
        }
    }
}

/// Verifies a checkpoint against a log (the log itself is not re-verified here; run
/// [`verify_chain`] first, as the conformance runner does).
pub fn verify_checkpoint(events: &[Value], checkpoint: &Value, keys: &KeySet) -> CheckpointVerdict {
    let head_ok = checkpoint
        .get("seq")
        .and_then(Value::as_i64)
        .and_then(|seq| usize::try_from(seq).ok())
        .and_then(|seq| events.get(seq))
        .and_then(|event| event.get("hash"))
        .is_some_and(|hash| Some(hash) == checkpoint.get("head"));
    if !head_ok {
        return CheckpointVerdict::HeadMismatch;
    }
    let hash = checkpoint_hash(checkpoint).ok();
    let kind = Value::from("Checkpoint");
    let sequencer_sig = checkpoint.get("signature");
    let verdict = verify_inner(hash.as_deref(), sequencer_sig, keys, Some(&kind));
    if !verdict.is_ok() {
        return CheckpointVerdict::Sequencer(verdict.reason);
    }
    let sequencer_kid = sequencer_sig.and_then(|s| s.get("kid"));
    let mut independent = false;
    let witnesses = checkpoint.get("witnesses").and_then(Value::as_array).unwrap_or_default();
    for witness in witnesses {
        let signature = witness.get("signature");
        let verdict = verify_inner(hash.as_deref(), signature, keys, Some(&kind));
        if !verdict.is_ok() {
            return CheckpointVerdict::Witness(verdict.reason);
        }
        if signature.and_then(|s| s.get("kid")) != sequencer_kid {
            independent = true;
        }
    }
    if independent { CheckpointVerdict::Ok } else { CheckpointVerdict::NoIndependentWitness }
}

/// True when two checkpoints of one log (same `mission`, or `log` when `mission` is absent)
/// at the same `seq` carry different heads: proof of a fork or a rewrite (`fork_detected`).
pub fn detect_fork(a: &Value, b: &Value) -> bool {
    let log_of = |cp: &Value| match cp.get("mission") {
        Some(mission) => Some(mission.clone()),
        None => cp.get("log").cloned(),
    };
    let eq = |x: Option<&Value>, y: Option<&Value>| match (x, y) {
        (Some(x), Some(y)) => x.loose_eq(y),
        (None, None) => true,
        _ => false,
    };
    a.as_object().is_some()
        && b.as_object().is_some()
        && eq(log_of(a).as_ref(), log_of(b).as_ref())
        && eq(a.get("seq"), b.get("seq"))
        && !eq(a.get("head"), b.get("head"))
}

/// The state projected by [`replay_mission`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MissionProjection {
    /// The current state.
    pub state: String,
    /// `(seq, new state)` for each applied `state_changed` event.
    pub history: Vec<(i64, String)>,
    /// The last event's `seq`.
    pub head_seq: Option<i64>,
}

/// Why a replay stopped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// A `state_changed` event without a usable `transition{from, to}`.
    #[error("event {seq}: state_changed without transition from/to")]
    Malformed {
        /// The event's seq.
        seq: i64,
    },
    /// The event's `from` is not the current state.
    #[error("event {seq}: from {from} but state is {state}")]
    WrongFrom {
        /// The event's seq.
        seq: i64,
        /// Its `from`.
        from: String,
        /// The projected state.
        state: String,
    },
    /// The pair is not legal or the actor's role may not make it.
    #[error("event {seq}: {from} -> {to} not allowed for role {role}")]
    NotAllowed {
        /// The event's seq.
        seq: i64,
        /// Source state.
        from: String,
        /// Target state.
        to: String,
        /// The actor's role (`unknown` when the map has none).
        role: String,
    },
}

/// Projects a (verified) log's state from its `state_changed` events, checking each against the
/// transition table with the role the caller assigns to the event's actor.
///
/// # Errors
/// [`ReplayError`] for the first illegal transition.
pub fn replay_mission(
    events: &[Value],
    roles: &BTreeMap<String, String>,
) -> Result<MissionProjection, ReplayError> {
    let mut state = transitions::INITIAL.to_owned();
    let mut history = Vec::new();
    for event in events {
        if event.get("type").and_then(Value::as_str) != Some("state_changed") {
            continue;
        }
        let seq = event.get("seq").and_then(Value::as_i64).unwrap_or(-1);
        let transition = event.get("transition");
        let (Some(from), Some(to)) = (
            transition.and_then(|t| t.get("from")).and_then(Value::as_str),
            transition.and_then(|t| t.get("to")).and_then(Value::as_str),
        ) else {
            return Err(ReplayError::Malformed { seq });
        };
        if from != state {
            return Err(ReplayError::WrongFrom { seq, from: from.into(), state });
        }
        let role = event
            .get("actor")
            .and_then(Value::as_str)
            .and_then(|actor| roles.get(actor))
            .map_or("unknown", String::as_str);
        if !transitions::allowed(from, to, role) {
            return Err(ReplayError::NotAllowed {
                seq,
                from: from.into(),
                to: to.into(),
                role: role.into(),
            });
        }
        state = to.to_owned();
        history.push((seq, state.clone()));
    }
    let head_seq = events.last().and_then(|e| e.get("seq")).and_then(Value::as_i64);
    Ok(MissionProjection { state, history, head_seq })
}
