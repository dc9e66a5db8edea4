//! What the HTTP layer reads from the hub: its configuration and documents, event
//! subscriptions, stored event positions, the dashboard's list, and an execution's status
//! (with the cache of final statuses). `Inner` is private to `service/`, so these methods are
//! the way in: `http/` never touches the hub's locks or its storage.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use canonical_json::Value;

use crate::outbox::subscription::{Filter, Subscription};
use crate::service::executions::stored_on;
use crate::service::{Device, Error, Hub, HubConfig};
use crate::storage::{Storage, StorageError, StoredEvent};

/// The most outbox events `GET /v1/executions` reads back.
pub const MAX_SCAN: u64 = 16_384;

/// An execution's status as the hub has it.
#[derive(Debug)]
pub(crate) enum StatusView {
    /// Live here: the current status document.
    Live(Value),
    /// Stored (final, or run elsewhere): the seq and the stored JCS bytes, served as they are.
    Stored {
        /// The status `seq`.
        seq: u64,
        /// The stored status (JCS).
        body: Bytes,
    },
}

impl Hub {
    /// The configuration the hub was opened with.
    pub(crate) fn config(&self) -> &HubConfig {
        &self.inner.config
    }

    /// The id of the root device.
    pub(crate) fn device_id(&self) -> &str {
        &self.inner.device_id
    }

    /// The conformance claim built at start-up.
    pub(crate) fn conformance(&self) -> &Value {
        &self.inner.conformance
    }

    /// Every served device, by id.
    pub(crate) fn devices(&self) -> &BTreeMap<String, Arc<Device>> {
        &self.inner.devices
    }

    /// A subscription to the outbox after `position`, holding one of the open-stream places
    /// of `who`.
    ///
    /// # Errors
    /// `who` holds its share of places already, or every place is taken.
    pub(crate) fn subscribe(
        &self,
        who: &crate::auth::Principal,
        position: u64,
        filter: Filter,
    ) -> Result<Subscription, crate::limits::StreamRefused> {
        let slot = self.inner.streams.take(who, self.inner.config.max_streams)?;
        Ok(Subscription::new(&self.inner.bus, self.inner.storage.clone(), position, filter, slot))
    }

    /// Counts one incident report sent without a token from `addr`; false when the address is
    /// over `--incidents-per-minute`.
    pub(crate) fn admit_anonymous_report(&self, addr: std::net::IpAddr) -> bool {
        let per_minute = self.inner.config.incidents_per_minute;
        let now = self.now_ms();
        self.inner
            .incident_rate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .admit(addr, now, per_minute)
    }

    /// The outbox position of the stored event `id`, if it is stored.
    ///
    /// # Errors
    /// The storage fails.
    pub(crate) async fn event_position(&self, id: &str) -> Result<Option<u64>, Error> {
        let lookup = id.to_owned();
        self.db(move |s| s.event_position(&lookup)).await
    }

    /// The position of the newest stored event.
    ///
    /// # Errors
    /// The storage fails.
    pub(crate) async fn last_event_position(&self) -> Result<u64, Error> {
        self.db(|s| s.last_event_position()).await
    }

    /// The newest execution-creating events, newest first (see [`recent_created`]).
    ///
    /// # Errors
    /// The storage fails.
    pub(crate) async fn recent_created(&self, limit: usize) -> Result<Vec<StoredEvent>, Error> {
        self.db(move |s| recent_created(s, limit)).await
    }

    /// The stored statuses of `ids` (one storage call), skipping ids not stored or whose
    /// status does not parse.
    ///
    /// # Errors
    /// The storage fails.
    pub(crate) async fn stored_statuses(
        &self,
        ids: Vec<String>,
    ) -> Result<std::collections::HashMap<String, Value>, Error> {
        self.db(move |s| {
            let mut out = std::collections::HashMap::new();
            for id in ids {
                if let Some(rec) = s.execution(&id)?
                    && let Ok(status) = canonical_json::parse(rec.status.as_bytes())
                {
                    out.insert(id, status);
                }
            }
            Ok(out)
        })
        .await
    }

    /// The status of `id` on `device`: from the cache of final statuses, live, or stored (a
    /// final one read from storage is cached: it never changes).
    ///
    /// # Errors
    /// No such execution, or it is another device's (404); the storage fails.
    pub(crate) async fn status_of(&self, id: &str, device: &Device) -> Result<StatusView, Error> {
        if let Some((seq, body)) = self.finals().get(&device.id, id) {
            return Ok(StatusView::Stored { seq, body });
        }
        if let Some(status) = self.live_status(id, device).await? {
            return Ok(StatusView::Live(status));
        }
        let rec = stored_on(self, id, device).await?;
        let body = Bytes::from(rec.status);
        if rec.is_final {
            self.finals().put(&device.id, id, rec.seq, body.clone());
        }
        Ok(StatusView::Stored { seq: rec.seq, body })
    }
}

/// Types of the event that reports a new execution.
fn is_created(ty: &str) -> bool {
    ty == crate::outbox::events::ACCEPTED || ty == crate::outbox::events::REFUSED
}

/// The execution-creating events among the newest outbox events, newest first: at most
/// `limit`, looking back over at most [`MAX_SCAN`] events (a window that doubles from 1024
/// until it holds `limit` of them).
pub(super) fn recent_created(
    s: &dyn Storage,
    limit: usize,
) -> Result<Vec<StoredEvent>, StorageError> {
    let mut hi = s.last_event_position()?;
    let (mut span, mut scanned) = (1024_u64, 0_u64);
    let mut found = Vec::new();
    while hi > 0 && found.len() < limit && scanned < MAX_SCAN {
        let lo = hi.saturating_sub(span.min(MAX_SCAN - scanned));
        let mut chunk = Vec::new();
        let mut pos = lo;
        'read: while pos < hi {
            let rows = s.events_after(pos, 256)?;
            if rows.is_empty() {
                break;
            }
            for row in rows {
                if row.position > hi {
                    break 'read;
                }
                pos = row.position;
                if is_created(&row.ty) {
                    chunk.push(row);
                }
            }
        }
        found.extend(chunk.into_iter().rev());
        scanned += hi - lo;
        hi = lo;
        span = span.saturating_mul(2);
    }
    found.truncate(limit);
    Ok(found)
}
