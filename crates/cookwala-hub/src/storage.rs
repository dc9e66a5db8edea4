//! Durable storage behind a small trait, with an SQLite implementation.
//!
//! The trait is synchronous and object-safe: the hub calls it from
//! `tokio::task::spawn_blocking`, so a blocking backend (SQLite) never stalls the runtime, and a
//! PostgreSQL backend can implement the same write paths later.
//!
//! **Durability.** SQLite in WAL mode with `synchronous = FULL`: every committed transaction is
//! fsynced to the WAL before `commit` returns, so a response the hub has sent (an acknowledged
//! execution, idempotency record or incident) survives a power loss, not only a process crash.
//! Each write path is one transaction, so an execution and the idempotency record that
//! acknowledges it are stored together or not at all.
//!
//! **Outbox.** Every CloudEvent the hub emits durably is a row of the `events` table, written by
//! [`Storage::commit`] in the same transaction as the execution change it reports (creation,
//! status update, idempotency record, incidents). An acknowledged change therefore always has
//! its events, and a crash never leaves an event for a change that was not stored. Positions
//! come from one writer (the connection mutex), so they are committed in increasing order and a
//! reader that follows "everything after position P" never skips a row (a backend with
//! concurrent writers must keep that property, e.g. by serialising outbox inserts). SSE
//! subscribers and webhook deliveries read the outbox; webhooks keep a durable cursor per URL.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::{Connection, OptionalExtension, params};

/// A storage failure (the hub answers 500 and logs it).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// The database reported an error.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The database was written by a newer hub.
    #[error("schema version {0} is newer than this hub understands ({SCHEMA_VERSION})")]
    TooNew(i64),
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
    /// The status `state`.
    pub state: String,
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

    /// The position of the newest outbox event (0 when the outbox is empty).
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
}

/// The schema version this hub writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 5;

const MIGRATIONS: &[&str] = &[
    // 0 -> 1
    "CREATE TABLE executions (
        id TEXT PRIMARY KEY,
        request TEXT NOT NULL,
        config TEXT NOT NULL,
        status TEXT NOT NULL,
        seq INTEGER NOT NULL,
        state TEXT NOT NULL,
        is_final INTEGER NOT NULL,
        log TEXT,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL
     );
     CREATE INDEX executions_unfinished ON executions(is_final, created_ms);
     CREATE TABLE idempotency (
        key TEXT PRIMARY KEY,
        digest TEXT NOT NULL,
        status INTEGER NOT NULL,
        body TEXT NOT NULL,
        created_ms INTEGER NOT NULL
     );
     CREATE TABLE incidents (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL,
        body TEXT NOT NULL,
        received_ms INTEGER NOT NULL
     );",
    // 1 -> 2: the event outbox and the webhook cursors.
    "CREATE TABLE events (
        position INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        type TEXT NOT NULL,
        subject TEXT NOT NULL,
        body TEXT NOT NULL,
        created_ms INTEGER NOT NULL
     );
     CREATE TABLE webhook_cursors (
        url TEXT PRIMARY KEY,
        position INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL
     );
     CREATE TABLE webhook_dead_letters (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        url TEXT NOT NULL,
        position INTEGER NOT NULL,
        event_id TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        last_error TEXT NOT NULL,
        dead_ms INTEGER NOT NULL
     );",
    // 2 -> 3: the recall feed.
    "CREATE TABLE recalls (
        id TEXT PRIMARY KEY,
        issued_ms INTEGER NOT NULL,
        body TEXT NOT NULL,
        received_ms INTEGER NOT NULL
     );
     CREATE INDEX recalls_issued ON recalls(issued_ms, id);",
    // 3 -> 4: the documents each execution ran with (NULL in older rows).
    "ALTER TABLE executions ADD COLUMN recipe_doc TEXT;
     ALTER TABLE executions ADD COLUMN device_doc TEXT;
     ALTER TABLE executions ADD COLUMN limits_doc TEXT;",
    // 4 -> 5: incident reports posted by clients (kept for a retention period) apart from
    // what the hub itself recorded.
    "ALTER TABLE incidents ADD COLUMN reported INTEGER NOT NULL DEFAULT 0;
     CREATE INDEX incidents_reported ON incidents(reported, received_ms);",
];

/// SQLite storage (one connection behind a mutex; WAL, `synchronous = FULL`).
#[derive(Debug)]
pub struct SqliteStorage {
    conn: Mutex<Connection>,
    /// Commits waiting for the next group commit (see [`SqliteStorage`]'s `commit`).
    queue: Mutex<Vec<Queued>>,
}

/// A commit waiting in the queue, and where its result goes.
#[derive(Debug)]
struct Queued {
    commit: Commit,
    result: Arc<Mutex<Option<Result<(), StorageError>>>>,
}

fn now_ms() -> i64 {
    crate::clock::unix_ms()
}

impl SqliteStorage {
    /// Opens (creating if needed) `path` and migrates the schema.
    ///
    /// # Errors
    /// The file cannot be opened, or its schema is newer than this hub.
    pub fn open(path: &Path) -> Result<SqliteStorage, StorageError> {
        SqliteStorage::init(Connection::open(path)?)
    }

    /// An in-memory database (tests).
    ///
    /// # Errors
    /// SQLite cannot allocate it.
    pub fn in_memory() -> Result<SqliteStorage, StorageError> {
        SqliteStorage::init(Connection::open_in_memory()?)
    }

    fn init(mut conn: Connection) -> Result<SqliteStorage, StorageError> {
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        // `journal_mode` answers with the mode it set; in-memory databases answer `memory`.
        let _mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")?;
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        let known = i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX);
        if version > known {
            return Err(StorageError::TooNew(version));
        }
        let tx = conn.transaction()?;
        for (idx, sql) in MIGRATIONS.iter().enumerate() {
            let target = i64::try_from(idx).unwrap_or(i64::MAX) + 1;
            if target > version {
                tx.execute_batch(sql)?;
                tx.pragma_update(None, "user_version", target)?;
            }
        }
        tx.commit()?;
        Ok(SqliteStorage { conn: Mutex::new(conn), queue: Mutex::new(Vec::new()) })
    }
}

fn put_idem(tx: &rusqlite::Connection, idem: &IdempotencyRecord) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO idempotency (key, digest, status, body, created_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![idem.key, idem.digest, idem.status, idem.body, now_ms()])?;
    Ok(())
}

fn insert_execution(tx: &rusqlite::Connection, rec: &ExecutionRecord) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO executions (id, request, config, status, seq, state, is_final, log,
            created_ms, updated_ms, recipe_doc, device_doc, limits_doc)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?10, ?11, ?12)",
    )?
    .execute(params![
        rec.id,
        rec.request,
        rec.config,
        rec.status,
        seq_i64(rec.seq),
        rec.state,
        rec.is_final,
        rec.log,
        now_ms(),
        rec.recipe_doc,
        rec.device_doc,
        rec.limits_doc
    ])?;
    Ok(())
}

fn apply_update(tx: &rusqlite::Connection, u: &StatusUpdate) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "UPDATE executions SET status = ?2, seq = ?3, state = ?4, is_final = ?5,
            log = COALESCE(?6, log), updated_ms = ?7 WHERE id = ?1",
    )?
    .execute(params![u.id, u.status, seq_i64(u.seq), u.state, u.is_final, u.log, now_ms()])?;
    Ok(())
}

/// Writes `batch` in one transaction, each commit under a savepoint; returns one result per
/// commit (all errors when the transaction as a whole fails).
fn write_batch(conn: &mut Connection, batch: &[Queued]) -> Vec<Result<(), StorageError>> {
    let run = |conn: &mut Connection| -> Result<Vec<Result<(), StorageError>>, rusqlite::Error> {
        let mut tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let mut results = Vec::with_capacity(batch.len());
        for q in batch {
            let mut sp = tx.savepoint()?;
            match write_one(&sp, &q.commit) {
                Ok(()) => {
                    sp.commit()?;
                    results.push(Ok(()));
                }
                Err(e) => {
                    sp.rollback()?;
                    drop(sp);
                    results.push(Err(classify(e)));
                }
            }
        }
        tx.commit()?;
        Ok(results)
    };
    match run(conn) {
        Ok(results) => results,
        Err(e) => {
            let why = e.to_string();
            batch.iter().map(|_| Err(StorageError::GroupCommit(why.clone()))).collect()
        }
    }
}

/// A unique-constraint failure is a [`StorageError::Conflict`]; anything else stays SQLite's.
fn classify(e: rusqlite::Error) -> StorageError {
    match &e {
        rusqlite::Error::SqliteFailure(f, msg)
            if f.code == rusqlite::ErrorCode::ConstraintViolation =>
        {
            StorageError::Conflict(msg.clone().unwrap_or_else(|| e.to_string()))
        }
        _ => StorageError::Sqlite(e),
    }
}

/// The writes of one commit (inside the caller's transaction).
fn write_one(tx: &rusqlite::Connection, c: &Commit) -> rusqlite::Result<()> {
    if let Some(rec) = &c.create {
        insert_execution(tx, rec)?;
    }
    for u in &c.updates {
        apply_update(tx, u)?;
    }
    if let Some(idem) = &c.idempotency {
        put_idem(tx, idem)?;
    }
    for inc in &c.incidents {
        insert_incident(tx, &inc.id, &inc.body)?;
    }
    if let Some(r) = &c.recall {
        tx.prepare_cached(
            "INSERT INTO recalls (id, issued_ms, body, received_ms) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![r.id, r.issued_ms, r.body, now_ms()])?;
    }
    if !c.events.is_empty() {
        let now = now_ms();
        let mut stmt = tx.prepare_cached(
            "INSERT OR IGNORE INTO events (id, type, subject, body, created_ms)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for e in &c.events {
            stmt.execute(params![e.id, e.ty, e.subject, e.body, now])?;
        }
    }
    Ok(())
}

fn insert_incident(tx: &rusqlite::Connection, id: &str, body: &str) -> rusqlite::Result<()> {
    tx.prepare_cached("INSERT INTO incidents (id, body, received_ms) VALUES (?1, ?2, ?3)")?
        .execute(params![id, body, now_ms()])?;
    Ok(())
}

fn row_to_event(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredEvent> {
    let position: i64 = r.get(0)?;
    Ok(StoredEvent {
        position: u64::try_from(position).unwrap_or(0),
        id: r.get(1)?,
        ty: r.get(2)?,
        subject: r.get(3)?,
        body: r.get(4)?,
        created_ms: r.get(5)?,
    })
}

fn row_to_record(r: &rusqlite::Row<'_>) -> rusqlite::Result<ExecutionRecord> {
    let seq: i64 = r.get(4)?;
    Ok(ExecutionRecord {
        id: r.get(0)?,
        request: r.get(1)?,
        config: r.get(2)?,
        status: r.get(3)?,
        seq: u64::try_from(seq).unwrap_or(0),
        state: r.get(5)?,
        is_final: r.get(6)?,
        log: r.get(7)?,
        recipe_doc: r.get(8)?,
        device_doc: r.get(9)?,
        limits_doc: r.get(10)?,
    })
}

const SELECT: &str = "SELECT id, request, config, status, seq, state, is_final, log,
    recipe_doc, device_doc, limits_doc FROM executions";

fn seq_i64(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

impl Storage for SqliteStorage {
    fn execution(&self, id: &str) -> Result<Option<ExecutionRecord>, StorageError> {
        let conn = self.conn.lock()?;
        let sql = format!("{SELECT} WHERE id = ?1");
        Ok(conn.query_row(&sql, params![id], row_to_record).optional()?)
    }

    fn unfinished(&self) -> Result<Vec<ExecutionRecord>, StorageError> {
        let conn = self.conn.lock()?;
        let sql = format!("{SELECT} WHERE is_final = 0 ORDER BY created_ms, id");
        let mut stmt = conn.prepare(&sql)?;
        let rows = stmt.query_map([], row_to_record)?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    fn idempotency(&self, key: &str) -> Result<Option<IdempotencyRecord>, StorageError> {
        let conn = self.conn.lock()?;
        Ok(conn
            .query_row(
                "SELECT key, digest, status, body FROM idempotency WHERE key = ?1",
                params![key],
                |r| {
                    Ok(IdempotencyRecord {
                        key: r.get(0)?,
                        digest: r.get(1)?,
                        status: r.get(2)?,
                        body: r.get(3)?,
                    })
                },
            )
            .optional()?)
    }

    fn add_incident(
        &self,
        id: &str,
        body: &str,
        idem: Option<&IdempotencyRecord>,
    ) -> Result<(), StorageError> {
        let mut conn = self.conn.lock()?;
        let tx = conn.transaction()?;
        tx.execute(
            "INSERT INTO incidents (id, body, received_ms, reported) VALUES (?1, ?2, ?3, 1)",
            params![id, body, now_ms()],
        )?;
        if let Some(idem) = idem {
            put_idem(&tx, idem)?;
        }
        tx.commit()?;
        Ok(())
    }

    fn prune_reports(&self, before_ms: i64) -> Result<u64, StorageError> {
        let conn = self.conn.lock()?;
        let n = conn.execute(
            "DELETE FROM incidents WHERE reported = 1 AND received_ms < ?1",
            params![before_ms],
        )?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    fn incident_count(&self) -> Result<u64, StorageError> {
        let conn = self.conn.lock()?;
        let n: i64 = conn.query_row("SELECT COUNT(*) FROM incidents", [], |r| r.get(0))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    fn recalls(&self) -> Result<Vec<String>, StorageError> {
        let conn = self.conn.lock()?;
        let mut stmt = conn.prepare("SELECT body FROM recalls ORDER BY issued_ms, id")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<Result<Vec<String>, _>>()?)
    }

    /// Group commit: the commit joins a queue; whichever caller next holds the connection
    /// writes every queued commit in one transaction (one fsync), each under its own
    /// savepoint so a refused write (a duplicate key) fails alone, and hands every caller its
    /// own result before it lets the connection go. A caller whose commit was written by
    /// another finds its result as soon as it gets the connection. Commits that arrive while a
    /// transaction is being synced therefore share the next sync.
    fn commit(&self, c: &Commit) -> Result<(), StorageError> {
        if c.is_empty() {
            return Ok(());
        }
        let result = Arc::new(Mutex::new(None));
        self.queue.lock()?.push(Queued { commit: c.clone(), result: result.clone() });
        let mut conn = self.conn.lock()?;
        if let Some(done) = result.lock()?.take() {
            return done;
        }
        let batch = std::mem::take(&mut *self.queue.lock()?);
        let outcomes = write_batch(&mut conn, &batch);
        for (q, outcome) in batch.iter().zip(outcomes) {
            *q.result.lock()? = Some(outcome);
        }
        drop(conn);
        result.lock()?.take().unwrap_or(Err(StorageError::GroupCommit("lost result".into())))
    }

    fn events_after(&self, after: u64, limit: usize) -> Result<Vec<StoredEvent>, StorageError> {
        let conn = self.conn.lock()?;
        let mut stmt = conn.prepare_cached(
            "SELECT position, id, type, subject, body, created_ms FROM events
             WHERE position > ?1 ORDER BY position LIMIT ?2",
        )?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = stmt.query_map(params![seq_i64(after), limit], row_to_event)?;
        Ok(rows.collect::<Result<Vec<_>, _>>()?)
    }

    fn event_position(&self, id: &str) -> Result<Option<u64>, StorageError> {
        let conn = self.conn.lock()?;
        let pos: Option<i64> = conn
            .query_row("SELECT position FROM events WHERE id = ?1", params![id], |r| r.get(0))
            .optional()?;
        Ok(pos.map(|p| u64::try_from(p).unwrap_or(0)))
    }

    fn last_event_position(&self) -> Result<u64, StorageError> {
        let conn = self.conn.lock()?;
        // The AUTOINCREMENT high-water mark survives even if old rows are ever pruned.
        let pos: Option<i64> = conn
            .query_row("SELECT seq FROM sqlite_sequence WHERE name = 'events'", [], |r| r.get(0))
            .optional()?;
        Ok(pos.map_or(0, |p| u64::try_from(p).unwrap_or(0)))
    }

    fn webhook_cursor(&self, url: &str) -> Result<Option<u64>, StorageError> {
        let conn = self.conn.lock()?;
        let pos: Option<i64> = conn
            .query_row("SELECT position FROM webhook_cursors WHERE url = ?1", params![url], |r| {
                r.get(0)
            })
            .optional()?;
        Ok(pos.map(|p| u64::try_from(p).unwrap_or(0)))
    }

    fn set_webhook_cursor(
        &self,
        url: &str,
        position: u64,
        dead: Option<&DeadLetter>,
    ) -> Result<(), StorageError> {
        let mut conn = self.conn.lock()?;
        let tx = conn.transaction()?;
        let now = now_ms();
        tx.execute(
            "INSERT INTO webhook_cursors (url, position, updated_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT(url) DO UPDATE SET position = excluded.position,
                updated_ms = excluded.updated_ms",
            params![url, seq_i64(position), now],
        )?;
        if let Some(d) = dead {
            tx.execute(
                "INSERT INTO webhook_dead_letters (url, position, event_id, attempts, last_error,
                    dead_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![url, seq_i64(d.position), d.event_id, d.attempts, d.last_error, now],
            )?;
        }
        tx.commit()?;
        Ok(())
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
