//! The [`Fleet`] operations: leases, failover, the relay lease and forwarded commands.

use cookwala_hub::storage::{
    ExecutionRecord, Fleet, FleetCommand, IdempotencyRecord, StartReads, StorageError,
};
use deadpool_postgres::GenericClient;

use crate::rows::{row_to_record, stmt};
use crate::{PgStorage, backend, now_ms, pg};

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
                        x.log, x.recipe_doc, x.device_doc, x.limits_doc, x.admission",
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
