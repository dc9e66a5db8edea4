//! The PostgreSQL schema and its versioned migrations (the SQLite store's tables, plus the
//! fleet's: who owns each execution, device leases, commands between replicas).

use deadpool_postgres::Client;

use cookwala_hub::storage::StorageError;

use crate::pg;

/// The schema version this hub writes (`cookwala_schema.version`).
pub const SCHEMA_VERSION: i64 = 2;

/// Migration `i` moves the schema from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[
    // 0 -> 1
    "CREATE TABLE executions (
        id TEXT PRIMARY KEY,
        request TEXT NOT NULL,
        config TEXT NOT NULL,
        status TEXT NOT NULL,
        seq BIGINT NOT NULL,
        state TEXT NOT NULL,
        is_final BOOLEAN NOT NULL,
        log TEXT,
        created_ms BIGINT NOT NULL,
        updated_ms BIGINT NOT NULL,
        recipe_doc TEXT,
        device_doc TEXT,
        limits_doc TEXT,
        device TEXT NOT NULL,
        owner TEXT NOT NULL
     );
     CREATE INDEX executions_unfinished ON executions (is_final, created_ms);
     CREATE UNIQUE INDEX executions_one_active_per_device ON executions (device)
        WHERE NOT is_final;
     CREATE TABLE idempotency (
        key TEXT PRIMARY KEY,
        digest TEXT NOT NULL,
        status INTEGER NOT NULL,
        body TEXT NOT NULL,
        created_ms BIGINT NOT NULL
     );
     CREATE TABLE incidents (
        seq BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL,
        body TEXT NOT NULL,
        received_ms BIGINT NOT NULL,
        reported BOOLEAN NOT NULL DEFAULT false
     );
     CREATE INDEX incidents_reported ON incidents (reported, received_ms);
     CREATE TABLE events (
        position BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        type TEXT NOT NULL,
        subject TEXT NOT NULL,
        body TEXT NOT NULL,
        created_ms BIGINT NOT NULL
     );
     CREATE TABLE webhook_cursors (
        url TEXT PRIMARY KEY,
        position BIGINT NOT NULL,
        updated_ms BIGINT NOT NULL
     );
     CREATE TABLE webhook_dead_letters (
        seq BIGSERIAL PRIMARY KEY,
        url TEXT NOT NULL,
        position BIGINT NOT NULL,
        event_id TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        last_error TEXT NOT NULL,
        dead_ms BIGINT NOT NULL
     );
     CREATE TABLE recalls (
        id TEXT PRIMARY KEY,
        issued_ms BIGINT NOT NULL,
        body TEXT NOT NULL,
        received_ms BIGINT NOT NULL
     );
     CREATE INDEX recalls_issued ON recalls (issued_ms, id);
     CREATE TABLE device_leases (
        device TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL
     );
     CREATE TABLE relay_lease (
        name TEXT PRIMARY KEY,
        holder TEXT NOT NULL,
        expires_at TIMESTAMPTZ NOT NULL
     );
     CREATE TABLE commands (
        id BIGSERIAL PRIMARY KEY,
        execution TEXT NOT NULL,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_ms BIGINT NOT NULL,
        status INTEGER,
        body TEXT,
        answered_ms BIGINT
     );
     CREATE INDEX commands_open ON commands (execution) WHERE status IS NULL;",
    // 1 -> 2: the admission each execution was started from (NULL in older rows).
    "ALTER TABLE executions ADD COLUMN admission TEXT;",
];

/// The lock replicas starting together take while one of them migrates.
const MIGRATION_LOCK: i64 = 0x636f_6f6b_6d69_6772; // "cookmigr"

/// Brings the schema to [`SCHEMA_VERSION`], one transaction per migration.
pub(crate) async fn migrate(client: &mut Client) -> Result<(), StorageError> {
    let tx = client.transaction().await.map_err(|e| pg(&e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await.map_err(|e| pg(&e))?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS cookwala_schema (version BIGINT NOT NULL)")
        .await
        .map_err(|e| pg(&e))?;
    let row = tx.query_opt("SELECT version FROM cookwala_schema", &[]).await.map_err(|e| pg(&e))?;
    let version: i64 = match row {
        Some(r) => r.try_get(0).map_err(|e| pg(&e))?,
        None => {
            tx.execute("INSERT INTO cookwala_schema (version) VALUES (0)", &[])
                .await
                .map_err(|e| pg(&e))?;
            0
        }
    };
    let known = i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX);
    if version > known {
        return Err(StorageError::TooNew(version, known));
    }
    for (idx, sql) in MIGRATIONS.iter().enumerate() {
        let target = i64::try_from(idx).unwrap_or(i64::MAX) + 1;
        if target > version {
            tx.batch_execute(sql).await.map_err(|e| pg(&e))?;
            tx.execute("UPDATE cookwala_schema SET version = $1", &[&target])
                .await
                .map_err(|e| pg(&e))?;
        }
    }
    tx.commit().await.map_err(|e| pg(&e))
}
