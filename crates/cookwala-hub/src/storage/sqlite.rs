//! The SQLite store: the embedded default (one file, one process).
//!
//! **Durability.** SQLite in WAL mode with `synchronous = FULL`: every committed transaction is
//! fsynced to the WAL before `commit` returns, so a response the hub has sent (an acknowledged
//! execution, idempotency record or incident) survives a power loss, not only a process crash.
//! Each write path is one transaction, so an execution and the idempotency record that
//! acknowledges it are stored together or not at all. Outbox positions come from one writer
//! (the connection mutex), so they are committed in increasing order.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};

use super::{
    Commit, DeadLetter, ExecutionRecord, IdempotencyRecord, StatusUpdate, Storage, StorageError,
    StoredEvent,
};

/// The schema version this hub writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 6;

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
    // 5 -> 6: the admission each execution was started from (NULL in older rows).
    "ALTER TABLE executions ADD COLUMN admission TEXT;",
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
            return Err(StorageError::TooNew(version, known));
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
            created_ms, updated_ms, recipe_doc, device_doc, limits_doc, admission)
            VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?10, ?11, ?12, ?13)",
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
        rec.limits_doc,
        rec.admission
    ])?;
    Ok(())
}

fn apply_update(tx: &rusqlite::Connection, u: &StatusUpdate) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "UPDATE executions SET status = ?2, seq = ?3, state = ?4, is_final = ?5,
            log = COALESCE(?6, log), updated_ms = ?7 WHERE id = ?1",
    )?
    .execute(params![
        u.id,
        u.status,
        seq_i64(u.seq),
        u.state.as_str(),
        u.is_final,
        u.log,
        now_ms()
    ])?;
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
        admission: r.get(11)?,
    })
}

const SELECT: &str = "SELECT id, request, config, status, seq, state, is_final, log,
    recipe_doc, device_doc, limits_doc, admission FROM executions";

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

    fn prune_idempotency(&self, before_ms: i64) -> Result<u64, StorageError> {
        let conn = self.conn.lock()?;
        let n =
            conn.execute("DELETE FROM idempotency WHERE created_ms < ?1", params![before_ms])?;
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
