//! PostgreSQL storage for the Cookwala hub: the same [`Storage`] contract as the embedded
//! SQLite store, plus the [`Fleet`] operations that let several stateless hub replicas share
//! one database.
//!
//! **Why a runtime of its own.** The hub calls storage synchronously from its blocking pool.
//! The client (`tokio-postgres`, pooled by `deadpool-postgres`) is async, so this store runs
//! it on a small runtime it owns and hands each call's result back over a channel. A caller
//! on any thread just waits on the channel — nothing here can ever be a "runtime inside a
//! runtime" — and the hub's runtime never runs database I/O.
//!
//! **Durability.** Each [`Storage::commit`] is one PostgreSQL transaction (the database's
//! default `synchronous_commit = on`: flushed to its WAL before the commit returns). Commits
//! that arrive while one is being written join a queue and share the next transaction, each
//! under its own savepoint so a refused write fails alone (the SQLite store's group commit).
//!
//! **Outbox order across replicas.** Positions come from a sequence, which hands numbers out
//! in call order, not commit order: with two writers, position 8 could become visible before
//! 7, and a reader that had seen 8 would skip 7 forever. So a transaction that inserts events
//! first takes a transaction-scoped advisory lock: event-writing transactions commit one at a
//! time, in position order, on every replica. The cost is that these transactions are
//! serialised database-wide; the group commit is what keeps the rate up (the benchmark prints
//! it against the database's own commit ceiling).
//!
//! **Time.** Leases expire by the database's clock (`now()`), so replicas on machines whose
//! clocks disagree still agree on who holds a device.

use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::Duration;

use cookwala_hub::storage::{
    Commit, DeadLetter, ExecutionRecord, Fleet, FleetCommand, IdempotencyRecord, StartReads,
    Storage, StorageError, StoredEvent,
};
use deadpool_postgres::GenericClient;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::error::SqlState;
use tokio_postgres::{NoTls, Row};

mod schema;

pub use schema::SCHEMA_VERSION;

/// Why the store could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The URL is not a PostgreSQL connection string.
    #[error("not a PostgreSQL URL ({0}); expected postgres://USER@HOST:PORT/DATABASE")]
    Url(String),
    /// The runtime or pool could not be built.
    #[error("{0}")]
    Setup(String),
    /// The database could not be reached or migrated.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Settings of a replica.
#[derive(Clone, Debug)]
pub struct PgOptions {
    /// This replica's name (unique among the replicas sharing the database).
    pub replica: String,
    /// How long an unrenewed device lease lasts.
    pub lease: Duration,
    /// Connections in the pool.
    pub pool_size: usize,
    /// Extra trust anchors (DER certificates) for a database reached over TLS
    /// (`sslmode=require` in the URL), next to the public web's roots: a private CA.
    pub tls_roots: Vec<Vec<u8>>,
}

impl Default for PgOptions {
    fn default() -> PgOptions {
        PgOptions {
            replica: "replica".to_owned(),
            lease: Duration::from_secs(10),
            pool_size: 16,
            tls_roots: Vec::new(),
        }
    }
}

/// The PostgreSQL store of one hub replica.
#[derive(Debug)]
pub struct PgStorage {
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
    pool: Pool,
    replica: String,
    lease_ms: u64,
    /// Commits waiting for the next group commit.
    queue: Mutex<Vec<Queued>>,
    /// Held while a group commit is written (one writer per replica).
    writer: Mutex<()>,
}

#[derive(Debug)]
struct Queued {
    commit: Commit,
    result: Arc<Mutex<Option<Result<(), StorageError>>>>,
}

/// A pool or connection error, with its causes (deadpool's own text names none).
fn backend(e: impl std::error::Error) -> StorageError {
    let mut text = format!("postgres: {e}");
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(&format!(": {c}"));
        cause = c.source();
    }
    StorageError::Backend(text)
}

pub(crate) fn pg(e: &tokio_postgres::Error) -> StorageError {
    match e.as_db_error() {
        Some(db) => StorageError::Backend(format!("postgres: {}: {}", db.code().code(), db)),
        None => backend(e),
    }
}

fn now_ms() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn as_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn as_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// The device named by an execution's stored run configuration (`device` of the JCS text).
fn device_of(config: &str) -> String {
    canonical_json::parse(config.as_bytes())
        .ok()
        .and_then(|v| v.get("device").and_then(|d| d.as_str().map(str::to_owned)))
        .unwrap_or_default()
}

impl PgStorage {
    /// Connects to `url` (`postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`; a password may
    /// also come from `PGPASSWORD`) and migrates the schema.
    ///
    /// # Errors
    /// A bad URL, an unreachable database, or a schema newer than this hub.
    pub fn connect(url: &str, options: PgOptions) -> Result<PgStorage, OpenError> {
        let mut config: tokio_postgres::Config =
            url.parse().map_err(|e: tokio_postgres::Error| OpenError::Url(e.to_string()))?;
        if config.get_password().is_none()
            && let Ok(p) = std::env::var("PGPASSWORD")
        {
            config.password(p);
        }
        config.connect_timeout(Duration::from_secs(5));
        config.application_name(format!("cookwala-hub {}", options.replica));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("cookwala-pg")
            .enable_all()
            .build()
            .map_err(|e| OpenError::Setup(e.to_string()))?;
        // TLS when the URL asks for it (`sslmode=require`): rustls (ring), the server's
        // certificate checked against the public roots and `tls_roots`, for the URL's host. The
        // client's default (`prefer`) stays plain: a preferred TLS that then refuses an unknown
        // certificate would break the local setups `prefer` exists for.
        let manager_config = ManagerConfig { recycling_method: RecyclingMethod::Fast };
        let manager = if config.get_ssl_mode() == tokio_postgres::config::SslMode::Require {
            let client =
                cookwala_hub::webhooks::client_tls_config(&options.tls_roots, "--store-ca")
                    .map_err(OpenError::Setup)?;
            let tls = tokio_postgres_rustls::MakeRustlsConnect::new(Arc::unwrap_or_clone(client));
            Manager::from_config(config, tls, manager_config)
        } else {
            Manager::from_config(config, NoTls, manager_config)
        };
        let pool = {
            let _guard = runtime.enter();
            Pool::builder(manager)
                .max_size(options.pool_size.max(2))
                .runtime(deadpool_postgres::Runtime::Tokio1)
                .wait_timeout(Some(Duration::from_secs(10)))
                .create_timeout(Some(Duration::from_secs(5)))
                .recycle_timeout(Some(Duration::from_secs(5)))
                .build()
                .map_err(|e| OpenError::Setup(e.to_string()))?
        };
        let handle = runtime.handle().clone();
        let store = PgStorage {
            runtime: Some(runtime),
            handle,
            pool,
            replica: options.replica,
            lease_ms: u64::try_from(options.lease.as_millis()).unwrap_or(u64::MAX).max(1000),
            queue: Mutex::new(Vec::new()),
            writer: Mutex::new(()),
        };
        let pool = store.pool.clone();
        store.run(async move {
            let mut client = pool.get().await.map_err(backend)?;
            schema::migrate(&mut client).await
        })?;
        Ok(store)
    }

    /// Runs `fut` on the store's runtime and waits for it (from any thread).
    fn run<T, F>(&self, fut: F) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: std::future::Future<Output = Result<T, StorageError>> + Send + 'static,
    {
        let (tx, rx) = mpsc::sync_channel(1);
        self.handle.spawn(async move {
            // The receiver only goes away if the caller did; nothing to tell then.
            let _ = tx.send(fut.await);
        });
        rx.recv().map_err(|_| StorageError::Task("the postgres task ended".to_owned()))?
    }

    /// One query on a pooled connection.
    fn query<T, F>(&self, f: F) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(
                &'c deadpool_postgres::Client,
            ) -> std::pin::Pin<
                Box<dyn std::future::Future<Output = Result<T, StorageError>> + Send + 'c>,
            > + Send
            + 'static,
    {
        let pool = self.pool.clone();
        self.run(async move {
            let client = pool.get().await.map_err(backend)?;
            f(&client).await
        })
    }
}

impl Drop for PgStorage {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which an async caller may not do; let it go in the
        // background instead.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

fn row_to_record(r: &Row) -> Result<ExecutionRecord, StorageError> {
    let get = |e: tokio_postgres::Error| pg(&e);
    Ok(ExecutionRecord {
        id: r.try_get(0).map_err(get)?,
        request: r.try_get(1).map_err(get)?,
        config: r.try_get(2).map_err(get)?,
        status: r.try_get(3).map_err(get)?,
        seq: as_u64(r.try_get(4).map_err(get)?),
        state: r.try_get(5).map_err(get)?,
        is_final: r.try_get(6).map_err(get)?,
        log: r.try_get(7).map_err(get)?,
        recipe_doc: r.try_get(8).map_err(get)?,
        device_doc: r.try_get(9).map_err(get)?,
        limits_doc: r.try_get(10).map_err(get)?,
    })
}

fn row_to_event(r: &Row) -> Result<StoredEvent, StorageError> {
    let get = |e: tokio_postgres::Error| pg(&e);
    Ok(StoredEvent {
        position: as_u64(r.try_get(0).map_err(get)?),
        id: r.try_get(1).map_err(get)?,
        ty: r.try_get(2).map_err(get)?,
        subject: r.try_get(3).map_err(get)?,
        body: r.try_get(4).map_err(get)?,
        created_ms: r.try_get(5).map_err(get)?,
    })
}

/// The prepared statement for `sql`, from the connection's cache (one round trip per
/// statement afterwards instead of two).
async fn stmt(
    c: &impl GenericClient,
    sql: &str,
) -> Result<tokio_postgres::Statement, StorageError> {
    c.prepare_cached(sql).await.map_err(|e| pg(&e))
}

const SELECT: &str = "SELECT id, request, config, status, seq, state, is_final, log, recipe_doc, \
                      device_doc, limits_doc FROM executions";

/// The lock that orders event-writing transactions (any constant the hub owns).
const OUTBOX_LOCK: i64 = 0x636f_6f6b_7761_6c61; // "cookwala"

/// A unique violation becomes [`StorageError::Busy`] (the one-active-execution-per-device
/// index) or [`StorageError::Conflict`]; anything else a backend error.
fn classify(e: &tokio_postgres::Error, device: &str) -> StorageError {
    match e.as_db_error() {
        Some(db) if db.code() == &SqlState::UNIQUE_VIOLATION => {
            if db.constraint() == Some("executions_one_active_per_device") {
                StorageError::Busy(device.to_owned())
            } else {
                StorageError::Conflict(db.message().to_owned())
            }
        }
        _ => pg(e),
    }
}

/// The writes of one commit, inside the caller's (sub)transaction.
async fn write_one(
    tx: &impl GenericClient,
    c: &Commit,
    me: &str,
    lease_ms: i64,
) -> Result<(), StorageError> {
    let now = now_ms();
    if let Some(rec) = &c.create {
        let device = device_of(&rec.config);
        if !rec.is_final {
            // Take the device's lease: free, expired, or already ours.
            let n = tx
                .execute(
                    "INSERT INTO device_leases (device, holder, expires_at)
                     VALUES ($1, $2, now() + make_interval(secs => $3::float8 / 1000.0))
                     ON CONFLICT (device) DO UPDATE SET holder = excluded.holder,
                        expires_at = excluded.expires_at
                     WHERE device_leases.holder = excluded.holder
                        OR device_leases.expires_at < now()",
                    &[&device, &me, &(lease_ms as f64)],
                )
                .await
                .map_err(|e| pg(&e))?;
            if n == 0 {
                return Err(StorageError::Busy(device));
            }
        }
        tx.execute(
            &stmt(
                tx,
                "INSERT INTO executions (id, request, config, status, seq, state, is_final, log,
                created_ms, updated_ms, recipe_doc, device_doc, limits_doc, device, owner)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11, $12, $13, $14)",
            )
            .await?,
            &[
                &rec.id,
                &rec.request,
                &rec.config,
                &rec.status,
                &as_i64(rec.seq),
                &rec.state,
                &rec.is_final,
                &rec.log,
                &now,
                &rec.recipe_doc,
                &rec.device_doc,
                &rec.limits_doc,
                &device,
                &me,
            ],
        )
        .await
        .map_err(|e| classify(&e, &device))?;
    }
    for u in &c.updates {
        // Fenced: only the owner writes, and never over a final status.
        let n = tx
            .execute(
                "UPDATE executions SET status = $2, seq = $3, state = $4, is_final = $5,
                    log = COALESCE($6, log), updated_ms = $7
                 WHERE id = $1 AND owner = $8 AND NOT is_final",
                &[&u.id, &u.status, &as_i64(u.seq), &u.state, &u.is_final, &u.log, &now, &me],
            )
            .await
            .map_err(|e| pg(&e))?;
        if n == 0 {
            return Err(StorageError::Fenced(u.id.clone()));
        }
        if u.is_final {
            tx.execute(
                &stmt(
                    tx,
                    "DELETE FROM device_leases l USING executions e
                 WHERE e.id = $1 AND l.device = e.device AND l.holder = $2",
                )
                .await?,
                &[&u.id, &me],
            )
            .await
            .map_err(|e| pg(&e))?;
        }
    }
    if let Some(idem) = &c.idempotency {
        put_idem(tx, idem, now).await?;
    }
    for inc in &c.incidents {
        tx.execute(&stmt(tx, "INSERT INTO incidents (id, body, received_ms, reported) VALUES ($1, $2, $3, false)").await?,
            &[&inc.id, &inc.body, &now],
        )
        .await
        .map_err(|e| pg(&e))?;
    }
    if let Some(r) = &c.recall {
        tx.execute(
            &stmt(
                tx,
                "INSERT INTO recalls (id, issued_ms, body, received_ms) VALUES ($1, $2, $3, $4)",
            )
            .await?,
            &[&r.id, &r.issued_ms, &r.body, &now],
        )
        .await
        .map_err(|e| classify(&e, ""))?;
    }
    if !c.events.is_empty() {
        let insert = stmt(
            tx,
            "INSERT INTO events (id, type, subject, body, created_ms)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING",
        )
        .await?;
        for e in &c.events {
            tx.execute(&insert, &[&e.id, &e.ty, &e.subject, &e.body, &now])
                .await
                .map_err(|e| pg(&e))?;
        }
    }
    Ok(())
}

async fn put_idem(
    tx: &impl GenericClient,
    idem: &IdempotencyRecord,
    now: i64,
) -> Result<(), StorageError> {
    tx.execute(&stmt(tx, "INSERT INTO idempotency (key, digest, status, body, created_ms) VALUES ($1, $2, $3, $4, $5)").await?,
        &[&idem.key, &idem.digest, &i32::from(idem.status), &idem.body, &now],
    )
    .await
    .map_err(|e| classify(&e, ""))?;
    Ok(())
}

/// Writes `batch` in one transaction; one result per commit. First optimistically, every
/// commit straight into the transaction (the common case: nothing is refused); if one is
/// refused, that attempt is rolled back and the batch written again with a savepoint per
/// commit, so the refused one fails alone. Either way the batch costs one commit (one fsync).
async fn write_batch(
    pool: Pool,
    batch: Vec<Commit>,
    me: String,
    lease_ms: i64,
) -> Vec<Result<(), StorageError>> {
    let n = batch.len();
    let run = async {
        let mut client = pool.get().await.map_err(backend)?;
        let events = batch.iter().any(|c| !c.events.is_empty());
        let tx = client.transaction().await.map_err(|e| pg(&e))?;
        if events {
            tx.execute(&stmt(&tx, "SELECT pg_advisory_xact_lock($1)").await?, &[&OUTBOX_LOCK])
                .await
                .map_err(|e| pg(&e))?;
        }
        let mut refused = false;
        for c in &batch {
            if write_one(&tx, c, &me, lease_ms).await.is_err() {
                refused = true;
                break;
            }
        }
        if !refused {
            tx.commit().await.map_err(|e| pg(&e))?;
            return Ok::<_, StorageError>((0..n).map(|_| Ok(())).collect());
        }
        tx.rollback().await.map_err(|e| pg(&e))?;
        let mut tx = client.transaction().await.map_err(|e| pg(&e))?;
        if events {
            tx.execute(&stmt(&tx, "SELECT pg_advisory_xact_lock($1)").await?, &[&OUTBOX_LOCK])
                .await
                .map_err(|e| pg(&e))?;
        }
        let mut results = Vec::with_capacity(n);
        for c in &batch {
            let sp = tx.savepoint("one_commit").await.map_err(|e| pg(&e))?;
            match write_one(&sp, c, &me, lease_ms).await {
                Ok(()) => {
                    sp.commit().await.map_err(|e| pg(&e))?;
                    results.push(Ok(()));
                }
                Err(e) => {
                    sp.rollback().await.map_err(|e| pg(&e))?;
                    results.push(Err(e));
                }
            }
        }
        tx.commit().await.map_err(|e| pg(&e))?;
        Ok(results)
    };
    match run.await {
        Ok(results) => results,
        Err(e) => {
            let why = e.to_string();
            (0..n).map(|_| Err(StorageError::GroupCommit(why.clone()))).collect()
        }
    }
}

impl Storage for PgStorage {
    fn execution(&self, id: &str) -> Result<Option<ExecutionRecord>, StorageError> {
        let id = id.to_owned();
        self.query(move |c| {
            Box::pin(async move {
                let sql = format!("{SELECT} WHERE id = $1");
                let row = c.query_opt(&stmt(c, &sql).await?, &[&id]).await.map_err(|e| pg(&e))?;
                row.as_ref().map(row_to_record).transpose()
            })
        })
    }

    fn unfinished(&self) -> Result<Vec<ExecutionRecord>, StorageError> {
        self.query(move |c| {
            Box::pin(async move {
                let sql = format!("{SELECT} WHERE NOT is_final ORDER BY created_ms, id");
                let rows = c.query(&stmt(c, &sql).await?, &[]).await.map_err(|e| pg(&e))?;
                rows.iter().map(row_to_record).collect()
            })
        })
    }

    fn idempotency(&self, key: &str) -> Result<Option<IdempotencyRecord>, StorageError> {
        let key = key.to_owned();
        self.query(move |c| {
            Box::pin(async move {
                let row = c
                    .query_opt(
                        "SELECT key, digest, status, body FROM idempotency WHERE key = $1",
                        &[&key],
                    )
                    .await
                    .map_err(|e| pg(&e))?;
                let Some(r) = row else { return Ok(None) };
                let status: i32 = r.try_get(2).map_err(|e| pg(&e))?;
                Ok(Some(IdempotencyRecord {
                    key: r.try_get(0).map_err(|e| pg(&e))?,
                    digest: r.try_get(1).map_err(|e| pg(&e))?,
                    status: u16::try_from(status).unwrap_or(500),
                    body: r.try_get(3).map_err(|e| pg(&e))?,
                }))
            })
        })
    }

    fn add_incident(
        &self,
        id: &str,
        body: &str,
        idem: Option<&IdempotencyRecord>,
    ) -> Result<(), StorageError> {
        let (id, body, idem) = (id.to_owned(), body.to_owned(), idem.cloned());
        let pool = self.pool.clone();
        self.run(async move {
            let mut client = pool.get().await.map_err(backend)?;
            let tx = client.transaction().await.map_err(|e| pg(&e))?;
            let now = now_ms();
            tx.execute(&stmt(&tx, "INSERT INTO incidents (id, body, received_ms, reported) VALUES ($1, $2, $3, true)").await?,
                &[&id, &body, &now],
            )
            .await
            .map_err(|e| pg(&e))?;
            if let Some(idem) = &idem {
                put_idem(&tx, idem, now).await?;
            }
            tx.commit().await.map_err(|e| pg(&e))
        })
    }

    fn incident_count(&self) -> Result<u64, StorageError> {
        self.query(move |c| {
            Box::pin(async move {
                let r = c
                    .query_one(&stmt(c, "SELECT COUNT(*) FROM incidents").await?, &[])
                    .await
                    .map_err(|e| pg(&e))?;
                Ok(as_u64(r.try_get(0).map_err(|e| pg(&e))?))
            })
        })
    }

    fn prune_reports(&self, before_ms: i64) -> Result<u64, StorageError> {
        self.query(move |c| {
            Box::pin(async move {
                c.execute(
                    &stmt(c, "DELETE FROM incidents WHERE reported AND received_ms < $1").await?,
                    &[&before_ms],
                )
                .await
                .map_err(|e| pg(&e))
            })
        })
    }

    fn recalls(&self) -> Result<Vec<String>, StorageError> {
        self.query(move |c| {
            Box::pin(async move {
                let rows = c
                    .query("SELECT body FROM recalls ORDER BY issued_ms, id", &[])
                    .await
                    .map_err(|e| pg(&e))?;
                rows.iter().map(|r| r.try_get(0).map_err(|e| pg(&e))).collect()
            })
        })
    }

    /// Group commit, as in the SQLite store: the commit joins a queue; whichever caller next
    /// holds the writer writes every queued commit in one transaction and hands each caller
    /// its own result.
    fn commit(&self, c: &Commit) -> Result<(), StorageError> {
        if c.is_empty() {
            return Ok(());
        }
        let result = Arc::new(Mutex::new(None));
        self.queue
            .lock()
            .map_err(|_| StorageError::Poisoned)?
            .push(Queued { commit: c.clone(), result: result.clone() });
        let writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(done) = result.lock().map_err(|_| StorageError::Poisoned)?.take() {
            return done;
        }
        let batch = std::mem::take(&mut *self.queue.lock().map_err(|_| StorageError::Poisoned)?);
        let commits: Vec<Commit> = batch.iter().map(|q| q.commit.clone()).collect();
        let (pool, me, lease) = (self.pool.clone(), self.replica.clone(), as_i64(self.lease_ms));
        let outcomes = match self
            .run(async move { Ok(write_batch(pool, commits, me, lease).await) })
        {
            Ok(o) => o,
            Err(e) => batch.iter().map(|_| Err(StorageError::GroupCommit(e.to_string()))).collect(),
        };
        for (q, outcome) in batch.iter().zip(outcomes) {
            if let Ok(mut slot) = q.result.lock() {
                *slot = Some(outcome);
            }
        }
        drop(writer);
        result
            .lock()
            .map_err(|_| StorageError::Poisoned)?
            .take()
            .unwrap_or(Err(StorageError::GroupCommit("lost result".into())))
    }

    fn events_after(&self, after: u64, limit: usize) -> Result<Vec<StoredEvent>, StorageError> {
        let (after, limit) = (as_i64(after), i64::try_from(limit).unwrap_or(i64::MAX));
        self.query(move |c| {
            Box::pin(async move {
                let rows = c
                    .query(
                        "SELECT position, id, type, subject, body, created_ms FROM events
                         WHERE position > $1 ORDER BY position LIMIT $2",
                        &[&after, &limit],
                    )
                    .await
                    .map_err(|e| pg(&e))?;
                rows.iter().map(row_to_event).collect()
            })
        })
    }

    fn event_position(&self, id: &str) -> Result<Option<u64>, StorageError> {
        let id = id.to_owned();
        self.query(move |c| {
            Box::pin(async move {
                let row = c
                    .query_opt("SELECT position FROM events WHERE id = $1", &[&id])
                    .await
                    .map_err(|e| pg(&e))?;
                row.map(|r| r.try_get::<_, i64>(0).map(as_u64).map_err(|e| pg(&e))).transpose()
            })
        })
    }

    fn last_event_position(&self) -> Result<u64, StorageError> {
        self.query(move |c| {
            Box::pin(async move {
                // Committed positions only (in-flight ones are not visible): events commit in
                // position order, so nothing below the maximum is still to come.
                let r = c
                    .query_one("SELECT COALESCE(MAX(position), 0) FROM events", &[])
                    .await
                    .map_err(|e| pg(&e))?;
                Ok(as_u64(r.try_get(0).map_err(|e| pg(&e))?))
            })
        })
    }

    fn webhook_cursor(&self, url: &str) -> Result<Option<u64>, StorageError> {
        let url = url.to_owned();
        self.query(move |c| {
            Box::pin(async move {
                let row = c
                    .query_opt("SELECT position FROM webhook_cursors WHERE url = $1", &[&url])
                    .await
                    .map_err(|e| pg(&e))?;
                row.map(|r| r.try_get::<_, i64>(0).map(as_u64).map_err(|e| pg(&e))).transpose()
            })
        })
    }

    fn set_webhook_cursor(
        &self,
        url: &str,
        position: u64,
        dead: Option<&DeadLetter>,
    ) -> Result<(), StorageError> {
        let (url, position, dead) = (url.to_owned(), as_i64(position), dead.cloned());
        let pool = self.pool.clone();
        self.run(async move {
            let mut client = pool.get().await.map_err(backend)?;
            let tx = client.transaction().await.map_err(|e| pg(&e))?;
            let now = now_ms();
            tx.execute(
                &stmt(
                    &tx,
                    "INSERT INTO webhook_cursors (url, position, updated_ms) VALUES ($1, $2, $3)
                 ON CONFLICT (url) DO UPDATE SET position = excluded.position,
                    updated_ms = excluded.updated_ms",
                )
                .await?,
                &[&url, &position, &now],
            )
            .await
            .map_err(|e| pg(&e))?;
            if let Some(d) = &dead {
                let attempts = i32::try_from(d.attempts).unwrap_or(i32::MAX);
                tx.execute(
                    &stmt(
                        &tx,
                        "INSERT INTO webhook_dead_letters (url, position, event_id, attempts,
                        last_error, dead_ms) VALUES ($1, $2, $3, $4, $5, $6)",
                    )
                    .await?,
                    &[&url, &as_i64(d.position), &d.event_id, &attempts, &d.last_error, &now],
                )
                .await
                .map_err(|e| pg(&e))?;
            }
            tx.commit().await.map_err(|e| pg(&e))
        })
    }

    fn fleet(&self) -> Option<&dyn Fleet> {
        Some(self)
    }
}

impl Fleet for PgStorage {
    fn replica(&self) -> &str {
        &self.replica
    }

    fn lease_ms(&self) -> u64 {
        self.lease_ms
    }

    fn device_busy(&self, device: &str) -> Result<bool, StorageError> {
        let (device, me) = (device.to_owned(), self.replica.clone());
        self.query(move |c| {
            Box::pin(async move {
                let r = c
                    .query_one(
                        "SELECT EXISTS (SELECT 1 FROM executions WHERE device = $1 AND NOT is_final)
                             OR EXISTS (SELECT 1 FROM device_leases WHERE device = $1
                                        AND holder <> $2 AND expires_at > now())",
                        &[&device, &me],
                    )
                    .await
                    .map_err(|e| pg(&e))?;
                r.try_get(0).map_err(|e| pg(&e))
            })
        })
    }

    fn start_reads(&self, key: &str, id: &str, device: &str) -> Result<StartReads, StorageError> {
        let (key, id, device, me) =
            (key.to_owned(), id.to_owned(), device.to_owned(), self.replica.clone());
        self.query(move |c| {
            Box::pin(async move {
                let sql = "SELECT i.digest, i.status, i.body,
                    EXISTS (SELECT 1 FROM executions WHERE id = $2),
                    EXISTS (SELECT 1 FROM executions WHERE device = $3 AND NOT is_final)
                      OR EXISTS (SELECT 1 FROM device_leases WHERE device = $3
                                 AND holder <> $4 AND expires_at > now()),
                    COALESCE((SELECT array_agg(body ORDER BY issued_ms, id) FROM recalls),
                             '{}'::text[])
                    FROM (SELECT 1) one LEFT JOIN idempotency i ON i.key = $1";
                let r = c.query_one(&stmt(c, sql).await?, &[&key, &id, &device, &me]).await;
                let r = r.map_err(|e| pg(&e))?;
                let get = |e: tokio_postgres::Error| pg(&e);
                let digest: Option<String> = r.try_get(0).map_err(get)?;
                let status: Option<i32> = r.try_get(1).map_err(get)?;
                let body: Option<String> = r.try_get(2).map_err(get)?;
                let idempotency = match (digest, status, body) {
                    (Some(digest), Some(status), Some(body)) => Some(IdempotencyRecord {
                        key: key.clone(),
                        digest,
                        status: u16::try_from(status).unwrap_or(500),
                        body,
                    }),
                    _ => None,
                };
                Ok(StartReads {
                    idempotency,
                    stored: r.try_get(3).map_err(get)?,
                    busy: r.try_get(4).map_err(get)?,
                    recalls: r.try_get(5).map_err(get)?,
                })
            })
        })
    }

    fn renew_leases(&self, devices: &[String]) -> Result<Vec<String>, StorageError> {
        let (devices, me, lease) = (devices.to_vec(), self.replica.clone(), self.lease_ms as f64);
        let pool = self.pool.clone();
        self.run(async move {
            let mut client = pool.get().await.map_err(backend)?;
            let tx = client.transaction().await.map_err(|e| pg(&e))?;
            // Renew what covers an execution this replica owns; give up the rest. Both read
            // the stored executions, not the caller's list, so a start being committed right
            // now keeps the lease it just took.
            let held = tx
                .query(
                    "UPDATE device_leases l SET expires_at = now() + make_interval(secs => $2::float8 / 1000.0)
                     WHERE l.holder = $1 AND EXISTS (SELECT 1 FROM executions e
                        WHERE e.device = l.device AND e.owner = $1 AND NOT e.is_final)
                     RETURNING l.device",
                    &[&me, &lease],
                )
                .await
                .map_err(|e| pg(&e))?;
            tx.execute(&stmt(&tx, "DELETE FROM device_leases l WHERE l.holder = $1 AND NOT EXISTS (
                    SELECT 1 FROM executions e
                    WHERE e.device = l.device AND e.owner = $1 AND NOT e.is_final)").await?,
                &[&me],
            )
            .await
            .map_err(|e| pg(&e))?;
            tx.commit().await.map_err(|e| pg(&e))?;
            let held: Vec<String> = held.iter().filter_map(|r| r.try_get(0).ok()).collect();
            Ok(devices.into_iter().filter(|d| !held.contains(d)).collect())
        })
    }

    fn hold_relay(&self) -> Result<bool, StorageError> {
        let (me, lease) = (self.replica.clone(), self.lease_ms as f64);
        self.query(move |c| {
            Box::pin(async move {
                let n = c
                    .execute(
                        "INSERT INTO relay_lease (name, holder, expires_at)
                         VALUES ('outbox', $1, now() + make_interval(secs => $2::float8 / 1000.0))
                         ON CONFLICT (name) DO UPDATE SET holder = excluded.holder,
                            expires_at = excluded.expires_at
                         WHERE relay_lease.holder = excluded.holder
                            OR relay_lease.expires_at < now()",
                        &[&me, &lease],
                    )
                    .await
                    .map_err(|e| pg(&e))?;
                Ok(n == 1)
            })
        })
    }

    fn forget_leases(&self) -> Result<(), StorageError> {
        let me = self.replica.clone();
        self.query(move |c| {
            Box::pin(async move {
                c.execute(&stmt(c, "DELETE FROM device_leases WHERE holder = $1").await?, &[&me])
                    .await
                    .map_err(|e| pg(&e))?;
                c.execute(&stmt(c, "DELETE FROM relay_lease WHERE holder = $1").await?, &[&me])
                    .await
                    .map_err(|e| pg(&e))?;
                Ok(())
            })
        })
    }

    fn claim_orphans(&self) -> Result<Vec<ExecutionRecord>, StorageError> {
        let (me, lease) = (self.replica.clone(), self.lease_ms as f64);
        let pool = self.pool.clone();
        self.run(async move {
            let mut client = pool.get().await.map_err(backend)?;
            let tx = client.transaction().await.map_err(|e| pg(&e))?;
            let rows = tx
                .query(
                    "WITH orphans AS (
                        SELECT e.id FROM executions e
                        WHERE NOT e.is_final AND NOT EXISTS (
                            SELECT 1 FROM device_leases l WHERE l.device = e.device
                            AND l.holder = e.owner AND l.expires_at > now())
                        FOR UPDATE OF e SKIP LOCKED)
                     UPDATE executions x SET owner = $1 FROM orphans o WHERE x.id = o.id
                     RETURNING x.id, x.request, x.config, x.status, x.seq, x.state, x.is_final,
                        x.log, x.recipe_doc, x.device_doc, x.limits_doc",
                    &[&me],
                )
                .await
                .map_err(|e| pg(&e))?;
            // The claimer holds the devices until it has ended what it claimed (its final
            // update gives the lease up), so no other replica claims them again meanwhile.
            tx.execute(
                &stmt(
                    &tx,
                    "INSERT INTO device_leases (device, holder, expires_at)
                 SELECT DISTINCT e.device, $1, now() + make_interval(secs => $2::float8 / 1000.0)
                 FROM executions e WHERE e.owner = $1 AND NOT e.is_final
                 ON CONFLICT (device) DO UPDATE SET holder = excluded.holder,
                    expires_at = excluded.expires_at
                 WHERE device_leases.holder = excluded.holder
                    OR device_leases.expires_at < now()",
                )
                .await?,
                &[&me, &lease],
            )
            .await
            .map_err(|e| pg(&e))?;
            // Housekeeping: long-expired leases and old answered commands.
            tx.execute(
                &stmt(
                    &tx,
                    "DELETE FROM device_leases WHERE expires_at < now() - interval '1 hour'",
                )
                .await?,
                &[],
            )
            .await
            .map_err(|e| pg(&e))?;
            tx.execute(
                &stmt(&tx, "DELETE FROM commands WHERE status IS NOT NULL AND answered_ms < $1")
                    .await?,
                &[&(now_ms() - 3_600_000)],
            )
            .await
            .map_err(|e| pg(&e))?;
            tx.commit().await.map_err(|e| pg(&e))?;
            rows.iter().map(row_to_record).collect()
        })
    }

    fn post_command(&self, cmd: &FleetCommand) -> Result<i64, StorageError> {
        let cmd = cmd.clone();
        self.query(move |c| {
            Box::pin(async move {
                let r = c
                    .query_one(
                        "INSERT INTO commands (execution, kind, payload, created_ms)
                         VALUES ($1, $2, $3, $4) RETURNING id",
                        &[&cmd.execution, &cmd.kind, &cmd.payload, &now_ms()],
                    )
                    .await
                    .map_err(|e| pg(&e))?;
                r.try_get(0).map_err(|e| pg(&e))
            })
        })
    }

    fn pending_commands(&self) -> Result<Vec<(i64, FleetCommand)>, StorageError> {
        let me = self.replica.clone();
        self.query(move |c| {
            Box::pin(async move {
                let rows = c
                    .query(
                        "SELECT c.id, c.execution, c.kind, c.payload FROM commands c
                         JOIN executions e ON e.id = c.execution
                         WHERE c.status IS NULL AND e.owner = $1 ORDER BY c.id",
                        &[&me],
                    )
                    .await
                    .map_err(|e| pg(&e))?;
                rows.iter()
                    .map(|r| {
                        Ok((
                            r.try_get(0).map_err(|e| pg(&e))?,
                            FleetCommand {
                                execution: r.try_get(1).map_err(|e| pg(&e))?,
                                kind: r.try_get(2).map_err(|e| pg(&e))?,
                                payload: r.try_get(3).map_err(|e| pg(&e))?,
                            },
                        ))
                    })
                    .collect()
            })
        })
    }

    fn answer_command(&self, id: i64, status: u16, body: &str) -> Result<(), StorageError> {
        let body = body.to_owned();
        self.query(move |c| {
            Box::pin(async move {
                c.execute(
                    &stmt(
                        c,
                        "UPDATE commands SET status = $2, body = $3, answered_ms = $4
                     WHERE id = $1 AND status IS NULL",
                    )
                    .await?,
                    &[&id, &i32::from(status), &body, &now_ms()],
                )
                .await
                .map_err(|e| pg(&e))?;
                Ok(())
            })
        })
    }

    fn command_answer(&self, id: i64) -> Result<Option<(u16, String)>, StorageError> {
        self.query(move |c| {
            Box::pin(async move {
                let row = c
                    .query_opt(
                        "SELECT status, body FROM commands WHERE id = $1 AND status IS NOT NULL",
                        &[&id],
                    )
                    .await
                    .map_err(|e| pg(&e))?;
                let Some(r) = row else { return Ok(None) };
                let status: i32 = r.try_get(0).map_err(|e| pg(&e))?;
                let body: String = r.try_get(1).map_err(|e| pg(&e))?;
                Ok(Some((u16::try_from(status).unwrap_or(500), body)))
            })
        })
    }
}
