//! PostgreSQL storage for the Cookwala hub: the same [`Storage`](cookwala_hub::storage::Storage) contract as the embedded
//! SQLite store, plus the [`Fleet`](cookwala_hub::storage::Fleet) operations that let several stateless hub replicas share
//! one database.
//!
//! **Why a runtime of its own.** The hub calls storage synchronously from its blocking pool.
//! The client (`tokio-postgres`, pooled by `deadpool-postgres`) is async, so this store runs
//! it on a small runtime it owns and hands each call's result back over a channel. A caller
//! on any thread just waits on the channel — nothing here can ever be a "runtime inside a
//! runtime" — and the hub's runtime never runs database I/O.
//!
//! **Durability.** Each [`Storage::commit`](cookwala_hub::storage::Storage::commit) is one PostgreSQL transaction (the database's
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
//!
//! **Files.** This file opens the store and owns its runtime; `storage` implements the hub's
//! `Storage` contract, `fleet` the `Fleet` operations, `write` the group commit they share,
//! `rows` the row decoding and the statement cache, `schema` the migrations.

use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use cookwala_hub::storage::{Commit, StorageError};
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::NoTls;

mod fleet;
mod rows;
mod schema;
mod storage;
mod write;

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
pub(crate) struct Queued {
    commit: Commit,
    result: Arc<Mutex<Option<Result<(), StorageError>>>>,
}

/// A pool or connection error, with its causes (deadpool's own text names none).
pub(crate) fn backend(e: impl std::error::Error) -> StorageError {
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

pub(crate) fn now_ms() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

pub(crate) fn as_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

pub(crate) fn as_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// The device named by an execution's stored run configuration (`device` of the JCS text).
pub(crate) fn device_of(config: &str) -> String {
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
