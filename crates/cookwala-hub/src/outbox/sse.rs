//! The outbox read as a stream, for Server-Sent Events (and any transport that streams): a
//! [`Stream`] reads the stored events after its own position, woken after each commit, and
//! mixes in the live-only ones (heartbeats), so a slow reader misses nothing.

use std::collections::VecDeque;
use std::sync::Arc;

use axum::response::sse::Event;
use tokio::sync::{broadcast, watch};

use crate::outbox::LiveEvent;
use crate::storage::Storage;

/// How many outbox rows one read takes.
const BATCH: usize = 256;

#[derive(Clone, Debug, Default)]
pub(crate) struct Filter {
    pub(crate) type_prefix: Option<String>,
    pub(crate) subject: Option<String>,
}

impl Filter {
    pub(crate) fn admits(&self, ty: &str, subject: &str) -> bool {
        self.type_prefix.as_deref().is_none_or(|p| ty.starts_with(p))
            && self.subject.as_deref().is_none_or(|s| s == subject)
    }
}

/// An open event stream: where it is in the outbox and what it keeps.
pub(crate) struct Stream {
    /// Its place among the open streams, freed when the stream is dropped.
    pub(crate) _slot: crate::limits::StreamSlot,
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) position: u64,
    pub(crate) filter: Filter,
    pub(crate) queue: VecDeque<Event>,
    pub(crate) committed: watch::Receiver<u64>,
    pub(crate) live: broadcast::Receiver<Arc<LiveEvent>>,
    pub(crate) closing: watch::Receiver<bool>,
}

/// True when `s` can go on an SSE field line (axum refuses newlines and NUL there).
fn one_line(s: &str) -> bool {
    !s.contains(['\n', '\r', '\0'])
}

impl Stream {
    /// The next message, or `None` when the stream ends (at shutdown, once the stored events
    /// are sent, or on a storage failure; the client reconnects with its `Last-Event-ID`).
    pub(crate) async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(event) = self.queue.pop_front() {
                return Some(event);
            }
            // At shutdown the stream first sends what is stored (the stops shutdown just
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
                    let mut event = Event::default();
                    if one_line(&row.id) {
                        event = event.id(row.id);
                    }
                    if one_line(&row.ty) {
                        event = event.event(row.ty);
                    }
                    self.queue.push_back(event.data(row.body));
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
                        self.queue.push_back(Event::default().event(ev.ty).data(ev.body.as_str()));
                    }
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
                changed = self.closing.changed() => changed.ok()?,
            }
        }
    }
}
