//! The write path: one group commit, each commit under its own savepoint, events in
//! position order across replicas.

use cookwala_hub::storage::{Commit, IdempotencyRecord, StorageError};
use deadpool_postgres::{GenericClient, Pool};
use tokio_postgres::error::SqlState;

use crate::rows::stmt;
use crate::{as_i64, backend, device_of, now_ms, pg};

/// The lock that orders event-writing transactions (any constant the hub owns).
pub(crate) const OUTBOX_LOCK: i64 = 0x636f_6f6b_7761_6c61; // "cookwala"

/// A unique violation becomes [`StorageError::Busy`] (the one-active-execution-per-device
/// index) or [`StorageError::Conflict`]; anything else a backend error.
pub(crate) fn classify(e: &tokio_postgres::Error, device: &str) -> StorageError {
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
pub(crate) async fn write_one(
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
                created_ms, updated_ms, recipe_doc, device_doc, limits_doc, device, owner,
                admission)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11, $12, $13, $14, $15)",
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
                &rec.admission,
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
                &[
                    &u.id,
                    &u.status,
                    &as_i64(u.seq),
                    &u.state.as_str(),
                    &u.is_final,
                    &u.log,
                    &now,
                    &me,
                ],
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

pub(crate) async fn put_idem(
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
pub(crate) async fn write_batch(
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
