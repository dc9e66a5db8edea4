//! The hub's [`Storage`] contract on PostgreSQL.

use std::sync::{Arc, Mutex, PoisonError};

use cookwala_hub::storage::{
    Commit, DeadLetter, ExecutionRecord, Fleet, IdempotencyRecord, Storage, StorageError,
    StoredEvent,
};
use deadpool_postgres::GenericClient;

use crate::rows::{SELECT, row_to_event, row_to_record, stmt};
use crate::write::{put_idem, write_batch};
use crate::{PgStorage, Queued, as_i64, as_u64, backend, now_ms, pg};

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

    fn prune_idempotency(&self, before_ms: i64) -> Result<u64, StorageError> {
        self.query(move |c| {
            Box::pin(async move {
                c.execute(
                    &stmt(c, "DELETE FROM idempotency WHERE created_ms < $1").await?,
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
