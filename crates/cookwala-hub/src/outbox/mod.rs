//! The hub's event plumbing: committing changes with their events, waking subscribers, and
//! heartbeats.
//!
//! Every durable event goes through [`Hub::commit`]: one storage transaction holds the change
//! and its events, and only after the commit are SSE streams and webhook tasks woken (a
//! `watch` counter). Subscribers never take events from the notification itself — they read
//! the outbox after their own position — so a slow or lagging subscriber skips nothing.
//!
//! **Heartbeats are live only.** A `cookwala.device.heartbeat` says "the device is alive now";
//! replayed or retried an hour later it says nothing true, and writing one every 30 s to the
//! outbox would need pruning and would fill webhook queues with stale liveness. So heartbeats
//! go to the SSE subscribers connected at that moment (a `broadcast` channel; a lagging
//! subscriber just misses some), are sent without an SSE `id:` line so a client's
//! `Last-Event-ID` keeps naming the last durable event, and are not sent to webhooks. The hub
//! records the time of the last heartbeat per device ([`Hub::last_heartbeat`], the
//! `x-hub-last-heartbeat` header of `GET /v1/capabilities` and `lastHeartbeat` in
//! `GET /v1/devices`). Every served device has its own heartbeat (`subject` and `source` name
//! it, `activeExecutions` lists the executions live on it).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::{broadcast, watch};

pub mod events;
pub(crate) mod subscription;
pub mod webhooks;

use crate::outbox::events::ProgressGate;
use crate::storage::{NewEvent, NewIncident};

/// A live-only event for the SSE subscribers connected now.
#[derive(Debug)]
pub(crate) struct LiveEvent {
    pub ty: &'static str,
    pub subject: String,
    pub body: String,
}

/// The event state of a hub (one per [`Hub`]).
#[derive(Debug)]
pub(crate) struct Bus {
    /// Incremented after every commit that added events.
    pub(crate) committed: watch::Sender<u64>,
    /// Live-only events (heartbeats).
    pub(crate) live: broadcast::Sender<Arc<LiveEvent>>,
    /// Set at shutdown: open event streams end.
    pub(crate) closing: watch::Sender<bool>,
    /// Progress rate limit per execution.
    pub(crate) gate: Mutex<ProgressGate>,
    /// Events and incidents of in-memory changes whose commit failed; they go out first with
    /// the next commit (event ids deduplicate).
    pub(crate) pending: Mutex<(Vec<NewEvent>, Vec<NewIncident>)>,
    /// Held shared by every commit, and alone by a commit that carries `pending` (so no later
    /// event of an execution lands before its earlier ones that a failure left behind).
    pub(crate) retry_gate: tokio::sync::RwLock<()>,
    pub(crate) started: Instant,
    pub(crate) boot_ms: i64,
    pub(crate) sim_clock_ms: AtomicU64,
    pub(crate) heartbeats: AtomicU64,
    pub(crate) last_heartbeat: Mutex<BTreeMap<String, i64>>,
}

impl Bus {
    /// A bus for a hub that starts at `now_ms`.
    pub(crate) fn new(now_ms: i64) -> Bus {
        Bus {
            committed: watch::Sender::new(0),
            live: broadcast::Sender::new(64),
            closing: watch::Sender::new(false),
            gate: Mutex::new(ProgressGate::default()),
            pending: Mutex::new((Vec::new(), Vec::new())),
            retry_gate: tokio::sync::RwLock::new(()),
            started: Instant::now(),
            boot_ms: now_ms,
            sim_clock_ms: AtomicU64::new(0),
            heartbeats: AtomicU64::new(0),
            last_heartbeat: Mutex::new(BTreeMap::new()),
        }
    }

    /// A receiver that changes after every commit with events.
    pub(crate) fn committed(&self) -> watch::Receiver<u64> {
        self.committed.subscribe()
    }

    /// Live-only events from now on.
    pub(crate) fn live(&self) -> broadcast::Receiver<Arc<LiveEvent>> {
        self.live.subscribe()
    }

    /// A receiver that turns `true` at shutdown.
    pub(crate) fn closing(&self) -> watch::Receiver<bool> {
        self.closing.subscribe()
    }

    /// Counts simulated time the hub's clock moved.
    pub(crate) fn clock_moved(&self, dt_ms: u64) {
        self.sim_clock_ms.fetch_add(dt_ms, Ordering::Relaxed);
    }
}

/// Runs a storage call on the blocking pool.
pub(crate) async fn db<T, F>(
    storage: &std::sync::Arc<dyn crate::storage::Storage>,
    f: F,
) -> Result<T, crate::storage::StorageError>
where
    T: Send + 'static,
    F: FnOnce(&dyn crate::storage::Storage) -> Result<T, crate::storage::StorageError>
        + Send
        + 'static,
{
    let s = storage.clone();
    tokio::task::spawn_blocking(move || f(&*s))
        .await
        .map_err(|e| crate::storage::StorageError::Task(e.to_string()))?
}
