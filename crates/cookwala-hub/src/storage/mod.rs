//! Durable storage behind a small trait, with two stores: SQLite here ([`SqliteStorage`], the
//! embedded default) and PostgreSQL in the `cookwala-hub-postgres` crate (a fleet: several hub
//! replicas on one database, see [`Fleet`]).
//!
//! The trait is synchronous and object-safe: the hub calls it from
//! `tokio::task::spawn_blocking`, so a blocking backend never stalls the runtime.
//!
//! **One write API.** Every change goes through [`Storage::commit`]: an execution created or
//! updated, the idempotency record answering the request, incidents, a recall and the events
//! reporting the change are one transaction, so an acknowledged change always has its events
//! and a crash never leaves an event for a change that was not stored.
//!
//! **Outbox.** Every CloudEvent the hub emits durably is a row of the `events` table. Positions
//! are committed in increasing order — a reader that follows "everything after position P"
//! never skips a row. SQLite has one writer; PostgreSQL serialises the transactions that insert
//! events (a transaction-scoped advisory lock). SSE subscribers and webhook deliveries read the
//! outbox; webhooks keep a durable cursor per URL.

use std::sync::PoisonError;

mod fleet;
mod sqlite;

pub use fleet::{Fleet, FleetCommand, StartReads};
pub use sqlite::{SCHEMA_VERSION, SqliteStorage};

/// A storage failure (the hub answers 500 and logs it).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// The database reported an error.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// Another backend (PostgreSQL) reported an error, or cannot be reached.
    #[error("{0}")]
    Backend(String),
    /// The database was written by a newer hub.
    #[error("schema version {0} is newer than this hub understands ({1})")]
    TooNew(i64, i64),
    /// The device already runs an execution (on this or another replica), or another replica
    /// holds its lease: a new execution on it must be refused `busy`.
    #[error("device {0} is busy")]
    Busy(String),
    /// This replica no longer owns the execution: its lease expired and another replica took
    /// it over (and ended it safely). Nothing of the write was stored.
    #[error("execution {0} is owned by another replica now")]
    Fenced(String),
    /// Another thread panicked while holding the connection.
    #[error("storage lock poisoned")]
    Poisoned,
    /// A row with this key already exists (a unique constraint refused the write).
    #[error("already stored: {0}")]
    Conflict(String),
    /// The group commit this write was part of failed as a whole (nothing of it was stored).
    #[error("group commit failed: {0}")]
    GroupCommit(String),
    /// The blocking task that ran the call failed.
    #[error("storage task: {0}")]
    Task(String),
}

impl<T> From<PoisonError<T>> for StorageError {
    fn from(_: PoisonError<T>) -> StorageError {
        StorageError::Poisoned
    }
}

/// One stored execution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecutionRecord {
    /// ExecutionStatus `id` (= ExecuteRequest `id`).
    pub id: String,
    /// The ExecuteRequest as received (JCS text).
    pub request: String,
    /// What the hub needs to rebuild the simulation (JCS text; see `hub::RunConfig`).
    pub config: String,
    /// The current ExecutionStatus (JCS text).
    pub status: String,
    /// The status `seq`.
    pub seq: u64,
    /// The status `state`.
    pub state: String,
    /// True once the state is final.
    pub is_final: bool,
    /// The ExecutionLog (JCS text), once final.
    pub log: Option<String>,
    /// The Recipe document the execution ran (JCS text); `None` for rows written before schema
    /// 4 (the hub then looks the recipe up in its catalog) and for a recipe the hub did not
    /// know (the execution was refused).
    pub recipe_doc: Option<String>,
    /// The Capabilities document of the device it ran on (JCS text); `None` for rows written
    /// before schema 4.
    pub device_doc: Option<String>,
    /// The SafetyLimits that narrowed the default pack on that device (JCS text; the
    /// simulator's `extra_limits`); `None` when nothing narrowed it. Read only when
    /// [`ExecutionRecord::device_doc`] is stored: an older row takes the catalog's.
    pub limits_doc: Option<String>,
    /// The admission it was started from (JCS text of
    /// [`cookwala::admission::Admission::to_value`]: the plan or the refusal, and the effective
    /// limits); `None` for rows written before schema 6. A restart builds the ended run's log
    /// from it rather than deciding again against the current pack.
    pub admission: Option<String>,
}

impl ExecutionRecord {
    /// The stored state as the standard's enum (`None` for a name the standard does not have:
    /// an unreadable row, which recovery treats as active).
    pub fn execution_state(&self) -> Option<cookwala::execution::ExecutionState> {
        cookwala::execution::ExecutionState::parse(&self.state)
    }
}

/// A new status for a stored execution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusUpdate {
    /// The execution id.
    pub id: String,
    /// The ExecutionStatus (JCS text).
    pub status: String,
    /// The status `seq`.
    pub seq: u64,
    /// The status `state` (stored as its wire name).
    pub state: cookwala::execution::ExecutionState,
    /// True once the state is final.
    pub is_final: bool,
    /// The ExecutionLog (JCS text), once final.
    pub log: Option<String>,
}

/// A stored answer to a POST with an `Idempotency-Key`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyRecord {
    /// The key.
    pub key: String,
    /// `sha256:<hex>` of the method, path and canonical body.
    pub digest: String,
    /// The HTTP status of the original answer.
    pub status: u16,
    /// The original response body.
    pub body: String,
}

/// An event to append to the outbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewEvent {
    /// The CloudEvent `id` (unique; a second event with the same id is ignored).
    pub id: String,
    /// The CloudEvent `type`.
    pub ty: String,
    /// The CloudEvent `subject` (empty when the event has none).
    pub subject: String,
    /// The CloudEvent as JCS text.
    pub body: String,
}

/// An event read back from the outbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEvent {
    /// The outbox position (strictly increasing, never reused).
    pub position: u64,
    /// The CloudEvent `id`.
    pub id: String,
    /// The CloudEvent `type`.
    pub ty: String,
    /// The CloudEvent `subject` (empty when the event has none).
    pub subject: String,
    /// The CloudEvent as JCS text (the exact bytes SSE and webhooks send).
    pub body: String,
    /// When the row was committed (Unix milliseconds).
    pub created_ms: i64,
}

/// A new incident report (an IncidentReport document as JCS text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewIncident {
    /// The report's `id` (or the execution it concerns, for hub findings).
    pub id: String,
    /// The document (JCS text).
    pub body: String,
}

/// Everything one change of the hub writes, committed as one transaction by
/// [`Storage::commit`]: an execution created or updated, the idempotency record answering the
/// request, incident reports, and the events reporting the change.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Commit {
    /// A new execution.
    pub create: Option<ExecutionRecord>,
    /// New statuses of stored executions.
    pub updates: Vec<StatusUpdate>,
    /// The idempotency record answering the request that made the change.
    pub idempotency: Option<IdempotencyRecord>,
    /// Incident reports.
    pub incidents: Vec<NewIncident>,
    /// Events for the outbox, in order.
    pub events: Vec<NewEvent>,
    /// A recall to publish (its id must not be stored yet).
    pub recall: Option<NewRecall>,
}

/// A recall to store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewRecall {
    /// The Recall `id`.
    pub id: String,
    /// Its `issuedAt`, in Unix milliseconds (the feed's order).
    pub issued_ms: i64,
    /// The Recall (JCS text).
    pub body: String,
}

impl Commit {
    /// True when there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.create.is_none()
            && self.updates.is_empty()
            && self.idempotency.is_none()
            && self.incidents.is_empty()
            && self.events.is_empty()
            && self.recall.is_none()
    }

    /// Adds everything in `other` (its idempotency record, when it has one, replaces ours).
    pub fn absorb(&mut self, other: Commit) {
        if other.create.is_some() {
            self.create = other.create;
        }
        self.updates.extend(other.updates);
        if other.idempotency.is_some() {
            self.idempotency = other.idempotency;
        }
        self.incidents.extend(other.incidents);
        self.events.extend(other.events);
        if other.recall.is_some() {
            self.recall = other.recall;
        }
    }
}

/// An event a webhook gave up on after its retry window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadLetter {
    /// The outbox position of the event.
    pub position: u64,
    /// The CloudEvent `id`.
    pub event_id: String,
    /// Delivery attempts made.
    pub attempts: u32,
    /// The last failure (an HTTP status or a connection error).
    pub last_error: String,
}

/// The storage the hub needs. Every method is one durable transaction.
pub trait Storage: Send + Sync + std::fmt::Debug {
    /// One execution.
    ///
    /// # Errors
    /// Any backend failure.
    fn execution(&self, id: &str) -> Result<Option<ExecutionRecord>, StorageError>;

    /// Every execution that is not final, oldest first.
    ///
    /// # Errors
    /// Any backend failure.
    fn unfinished(&self) -> Result<Vec<ExecutionRecord>, StorageError>;

    /// The idempotency record for `key`.
    ///
    /// # Errors
    /// Any backend failure.
    fn idempotency(&self, key: &str) -> Result<Option<IdempotencyRecord>, StorageError>;

    /// Stores an incident report and the idempotency record answering it.
    ///
    /// # Errors
    /// Any backend failure.
    fn add_incident(
        &self,
        id: &str,
        body: &str,
        idem: Option<&IdempotencyRecord>,
    ) -> Result<(), StorageError>;

    /// Number of stored incidents.
    ///
    /// # Errors
    /// Any backend failure.
    fn incident_count(&self) -> Result<u64, StorageError>;

    /// Deletes the incident reports clients posted (never what the hub recorded itself)
    /// received before `before_ms`; returns how many.
    ///
    /// # Errors
    /// Any backend failure.
    fn prune_reports(&self, before_ms: i64) -> Result<u64, StorageError>;

    /// Deletes the idempotency records stored before `before_ms`; returns how many.
    ///
    /// # Errors
    /// Any backend failure.
    fn prune_idempotency(&self, before_ms: i64) -> Result<u64, StorageError>;

    /// Every stored recall (JCS text), oldest `issuedAt` first (ties by id).
    ///
    /// # Errors
    /// Any backend failure.
    fn recalls(&self) -> Result<Vec<String>, StorageError>;
    /// Writes everything in `commit` as one transaction: the execution created or updated, the
    /// idempotency record, the incidents, and the events appended to the outbox in order (an
    /// event whose `id` is already stored is skipped, so a re-emission deduplicates). Nothing
    /// is written if any part fails.
    ///
    /// # Errors
    /// Any backend failure (including an execution id or idempotency key that already exists).
    fn commit(&self, commit: &Commit) -> Result<(), StorageError>;

    /// Up to `limit` outbox events with a position greater than `after`, in position order.
    ///
    /// # Errors
    /// Any backend failure.
    fn events_after(&self, after: u64, limit: usize) -> Result<Vec<StoredEvent>, StorageError>;

    /// The outbox position of the event `id`, if stored.
    ///
    /// # Errors
    /// Any backend failure.
    fn event_position(&self, id: &str) -> Result<Option<u64>, StorageError>;

    /// The end of the outbox: no event is stored after it, and the newest event is at or
    /// before it (0 when the outbox is empty). A store may answer a high-water mark above the
    /// newest event (SQLite's counter survives pruned or rolled-back rows).
    ///
    /// # Errors
    /// Any backend failure.
    fn last_event_position(&self) -> Result<u64, StorageError>;

    /// The durable delivery cursor of the webhook `url`: the position of the last event it has
    /// dealt with (delivered or dead-lettered); `None` for a webhook never seen.
    ///
    /// # Errors
    /// Any backend failure.
    fn webhook_cursor(&self, url: &str) -> Result<Option<u64>, StorageError>;

    /// Moves the cursor of the webhook `url` to `position` and, atomically with it, records the
    /// event it gave up on (`dead`), if any.
    ///
    /// # Errors
    /// Any backend failure.
    fn set_webhook_cursor(
        &self,
        url: &str,
        position: u64,
        dead: Option<&DeadLetter>,
    ) -> Result<(), StorageError>;

    /// The fleet operations when several hub replicas share this store (`None`: one process
    /// owns it, as with SQLite).
    fn fleet(&self) -> Option<&dyn Fleet> {
        None
    }
}

/// The JCS text of `v`; a value JCS cannot write (an integer beyond 2^53) falls back to the
/// compact sorted form, which keeps it exact, so nothing is ever stored empty.
pub fn jcs_text(v: &canonical_json::Value) -> String {
    canonical_json::to_jcs(v)
        .or_else(|_| canonical_json::to_python_compact(v))
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_else(|| "null".to_owned())
}
