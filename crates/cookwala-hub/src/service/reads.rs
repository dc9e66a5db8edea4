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

/// What `/readyz` reports: each check and whether all passed.
#[derive(Debug)]
pub(crate) struct Readiness {
    /// Every check passed.
    pub ready: bool,
    /// Each check's name and outcome (`ok`, or a short reason), in a stable order.
    pub checks: Vec<(&'static str, String)>,
}

impl Hub {
    /// The hub's metrics (what `http/server` counts connections in).
    pub(crate) fn metrics(&self) -> Arc<crate::metrics::Metrics> {
        self.inner.metrics.clone()
    }

    /// The Prometheus text of `/metrics`: the gauges that mirror state are read now (the live
    /// executions, devices, streams, the outbox position and how far each transport is
    /// behind it, the leases held), then everything is encoded.
    pub(crate) async fn metrics_text(&self) -> String {
        let m = &self.inner.metrics;
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        m.active.set(count(self.inner.live.len()));
        m.devices.set(count(self.inner.devices.len()));
        m.streams.set(count(self.inner.streams.open_count()));
        m.leases.set(if self.in_fleet() { count(self.inner.live.busy_devices().len()) } else { 0 });
        // Where each transport is, from its durable cursor (a store that does not answer
        // leaves these as they were).
        let hooks: Vec<String> = self.inner.config.webhooks.iter().map(|w| w.url.clone()).collect();
        let mqtt = self.inner.config.mqtt.as_ref().map(|c| c.cursor_key());
        let read = self
            .db(move |s| {
                let last = s.last_event_position()?;
                let mut slowest: Option<u64> = None;
                for url in &hooks {
                    let at = s.webhook_cursor(url)?.unwrap_or(0);
                    slowest = Some(slowest.map_or(at, |v| v.min(at)));
                }
                let mqtt = match &mqtt {
                    Some(k) => Some(s.webhook_cursor(k)?.unwrap_or(last)),
                    None => None,
                };
                Ok((last, slowest, mqtt))
            })
            .await;
        if let Ok((last, webhook, mqtt)) = read {
            let gauge = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
            m.outbox_position.set(gauge(last));
            for (transport, at) in [("webhook", webhook), ("mqtt", mqtt)] {
                if let Some(at) = at {
                    let labels = crate::metrics::TransportLabels { transport: transport.into() };
                    m.pending.get_or_create(&labels).set(gauge(last.saturating_sub(at)));
                }
            }
        }
        m.encode()
    }

    /// Whether this hub can serve: the store answers (a read through the same path every
    /// request takes, so migrations are done and the connection works), on a shared store
    /// this replica renewed its device leases within one lease period, and with `--mqtt` the
    /// broker session is connected.
    pub(crate) async fn readiness(&self) -> Readiness {
        use std::sync::atomic::Ordering;
        let mut checks = Vec::new();
        let store = match self.db(|s| s.last_event_position()).await {
            Ok(_) => "ok".to_owned(),
            // The error's text may name the store's address: it stays in the hub's own log.
            Err(e) => {
                crate::clock::note(format_args!("cookwala-hub: readiness: the store: {e}"));
                "unavailable".to_owned()
            }
        };
        checks.push(("store", store));
        if let Some(lease_ms) = self.inner.storage.fleet().map(|f| f.lease_ms()) {
            let renewed = self.inner.leases_renewed_ms.load(Ordering::Relaxed);
            let age = self.now_ms().saturating_sub(renewed);
            let fresh = renewed > 0 && age <= i64::try_from(lease_ms).unwrap_or(i64::MAX);
            checks.push(("leases", if fresh { "ok".into() } else { "not renewed".into() }));
        }
        if self.inner.config.mqtt.is_some() {
            let up = self.inner.mqtt_connected.load(Ordering::Relaxed);
            checks.push(("mqtt", if up { "ok".into() } else { "disconnected".into() }));
        }
        Readiness { ready: checks.iter().all(|(_, v)| v == "ok"), checks }
    }
}
