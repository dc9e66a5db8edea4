//! Rows to records, and the statement cache.

use cookwala_hub::storage::{ExecutionRecord, StorageError, StoredEvent};
use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use crate::{as_u64, pg};

pub(crate) fn row_to_record(r: &Row) -> Result<ExecutionRecord, StorageError> {
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
        admission: r.try_get(11).map_err(get)?,
    })
}

pub(crate) fn row_to_event(r: &Row) -> Result<StoredEvent, StorageError> {
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
pub(crate) async fn stmt(
    c: &impl GenericClient,
    sql: &str,
) -> Result<tokio_postgres::Statement, StorageError> {
    c.prepare_cached(sql).await.map_err(|e| pg(&e))
}

pub(crate) const SELECT: &str = "SELECT id, request, config, status, seq, state, is_final, log, recipe_doc, \
                      device_doc, limits_doc, admission FROM executions";
