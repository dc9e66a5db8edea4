//! The outbox read as a subscription, for every transport that streams events (the SSE and
//! WebSocket endpoints in `http/` are thin adapters over it): a [`Subscription`] reads the
//! stored events after its own position, woken after each commit, and mixes in the live-only
//! ones (heartbeats), so a slow reader misses nothing.
//!
//! It speaks no transport: it yields [`Message`]s (an id for durable events, the type, the JCS
//! body) and each adapter frames them. So the two endpoints cannot drift apart on what they
//! send, in which order, or when they end.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::{broadcast, watch};

use crate::outbox::{Bus, LiveEvent};
use crate::storage::Storage;

/// How many outbox rows one read takes.
const BATCH: usize = 256;

/// Which events a subscription keeps.
#[derive(Clone, Debug, Default)]
pub(crate) struct Filter {
    /// Keep events whose type starts with this (`cookwala.safety.`).
    pub(crate) type_prefix: Option<String>,
    /// Keep events about this execution (or device, for heartbeats).
    pub(crate) subject: Option<String>,
}

impl Filter {
    pub(crate) fn admits(&self, ty: &str, subject: &str) -> bool {
        self.type_prefix.as_deref().is_none_or(|p| ty.starts_with(p))
            && self.subject.as_deref().is_none_or(|s| s == subject)
    }
}

/// One event for a subscriber.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Message {
    /// The event id of a stored event; `None` for a live-only one (a heartbeat), so a client's
    /// resume point always names a durable event.
    pub(crate) id: Option<String>,
    /// The event type.
    pub(crate) ty: String,
    /// The CloudEvent, as the JCS text stored (one line: JCS has no raw newlines).
    pub(crate) body: String,
}

/// An open subscription: where it is in the outbox and what it keeps.
pub(crate) struct Subscription {
    /// Its place among the open streams, freed when the subscription is dropped.
    _slot: crate::limits::StreamSlot,
    storage: Arc<dyn Storage>,
    position: u64,
    filter: Filter,
    queue: VecDeque<Message>,
    committed: watch::Receiver<u64>,
    live: broadcast::Receiver<Arc<LiveEvent>>,
    closing: watch::Receiver<bool>,
}

impl Subscription {
    /// A subscription to the events after outbox `position` that `filter` keeps, holding
    /// `slot` while it is open.
    pub(crate) fn new(
        bus: &Bus,
        storage: Arc<dyn Storage>,
        position: u64,
        filter: Filter,
        slot: crate::limits::StreamSlot,
    ) -> Subscription {
        Subscription {
            _slot: slot,
            storage,
            position,
            filter,
            queue: VecDeque::new(),
            committed: bus.committed(),
            live: bus.live(),
            closing: bus.closing(),
        }
    }

    /// The next message, or `None` when the subscription ends (at shutdown, once the stored
    /// events are sent, or on a storage failure; the client reconnects with its resume point).
    ///
    /// Cancel-safe for a `select!`: a read cut short is read again from the same position.
    pub(crate) async fn next(&mut self) -> Option<Message> {
        loop {
            if let Some(message) = self.queue.pop_front() {
                return Some(message);
            }
            // At shutdown the subscription first sends what is stored (the stops shutdown just
            // committed among it), then ends.
            let closing = *self.closing.borrow();
            // Mark the current commit as seen before reading, so a commit after the read wakes
            // the wait below.
            self.committed.borrow_and_update();
            let after = self.position;
            let rows = crate::outbox::db(&self.storage, move |s| s.events_after(after, BATCH))
                .await
                .ok()?;
            if let Some(last) = rows.last() {
                self.position = last.position;
                for row in rows.into_iter().filter(|r| self.filter.admits(&r.ty, &r.subject)) {
                    self.queue.push_back(Message { id: Some(row.id), ty: row.ty, body: row.body });
                }
                continue;
            }
            if closing {
                return None;
            }
            tokio::select! {
                changed = self.committed.changed() => changed.ok()?,
                live = self.live.recv() => match live {
                    Ok(ev) if self.filter.admits(ev.ty, &ev.subject) => {
                        self.queue.push_back(Message {
                            id: None,
                            ty: ev.ty.to_owned(),
                            body: ev.body.clone(),
                        });
                    }
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
                changed = self.closing.changed() => changed.ok()?,
            }
        }
    }
}
