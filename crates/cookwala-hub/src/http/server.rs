//! The accept loop: every connection has a budget and an end, and a stop always gets through.
//!
//! `axum::serve` runs bare: a connection that never finishes its request head stays open for
//! ever, and a flood of them takes every file descriptor, so that a `POST …/stop` times out
//! at `accept`. Here each connection is served by hyper's own HTTP/1 machinery with hyper's
//! own limits ([`ConnLimits`]):
//!
//! - `header_read_timeout`: the request head must arrive within `--header-timeout`, counted
//!   from the moment the hub waits for it (after accept, or after the previous response);
//! - `max_header_size` / `max_buf_size`: a head larger than `--max-header-bytes` is a 431 and
//!   never buffered further;
//! - the body must arrive within `--body-timeout` (a 408 problem) and be at most `--max-body`
//!   bytes (a 413 problem): it is read here, before the router runs;
//! - a kept-alive connection with no request for `--idle-timeout` is closed.
//!
//! **Why eviction and not a reserved listener.** The connection budget (`--max-connections`
//! overall, `--max-connections-per-address` per client address) is kept below the process's
//! file limit, so `accept` never fails for want of a descriptor. When a new connection finds
//! a budget full, the hub closes the *oldest connection that is not being handled*: one still
//! sending its request head or body, or idle between requests. A connection whose request has
//! fully arrived and is being answered is never closed for another (nor, for [`SEND_GRACE`],
//! one whose answer is going out). A flood of half-sent
//! requests therefore only ever displaces itself, while a stop (which sends its whole request
//! at once) is handled the moment it is read, and this holds when the flood comes from the
//! very address the stop comes from (a browser tab on the same machine; `127.0.0.1` behind a
//! proxy), which a per-address cap alone, or a control listener the attacker can also reach,
//! would not give. The price: an honest client on a slow link can lose a half-sent request to
//! a flood; it retries, as it would after any dropped connection. An answer still going out
//! after [`SEND_GRACE`] gives way too: otherwise a client that asks and never reads could pin
//! its connections, and an event stream so displaced resumes with `Last-Event-ID`.
//!
//! **Shutdown** (see [`run`]): the listener closes, every running execution is stopped safely
//! and the stop committed (heat and motion off, log written, events in the outbox), the event
//! streams end; then connections not being handled close at once and the rest get
//! `--shutdown-grace` to finish their answer.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Request, Response, StatusCode, header};
use axum::response::IntoResponse;
use http_body_util::{BodyExt, Limited};
use hyper::body::{Body as _, Incoming};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tower::ServiceExt;

use crate::http::error::ApiError;
use crate::limits::{ConnLimits, MIN_HEADER_BYTES};
use crate::service::Hub;

/// Serves `hub` on `listener` until `shutdown` resolves, then shuts down safely (see the
/// module docs).
///
/// # Errors
/// None today: accept errors (a full descriptor table, a connection reset before accept) are
/// survived by making room and retrying.
pub(crate) async fn run(
    hub: Hub,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = hub.config().connections.clone();
    let registry = Arc::new(Registry::new(&limits));
    let mut builder = hyper::server::conn::http1::Builder::new();
    let header_bytes = limits.max_header_bytes.max(MIN_HEADER_BYTES);
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_header_size(header_bytes)
        .max_buf_size(header_bytes);
    let shared = Arc::new(Shared {
        router: crate::http::app(hub.clone()),
        registry: registry.clone(),
        max_body: hub.config().max_body,
        limits: limits.clone(),
        builder,
        metrics: hub.metrics(),
    });
    let (closing_tx, closing_rx) = watch::channel(false);
    let mut conns = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    // Over budget with nothing to give way: the new connection is closed.
                    let Some(slot) = registry.admit(peer.ip()) else { continue };
                    let _ = stream.set_nodelay(true);
                    let shared = shared.clone();
                    let closing = closing_rx.clone();
                    conns.spawn(connection(shared, stream, peer, slot, closing));
                }
                Err(_) => {
                    // Out of descriptors (another part of the process holds more than the
                    // budget left over) or a connection reset before accept: make room, then
                    // accept again shortly rather than spin.
                    registry.evict_oldest_idle();
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
        }
    }
    drop(listener);
    // Safety before sockets: running executions are stopped (and the stop committed) while
    // every connection is still open, so their answers and events still go out.
    hub.stop_all("hub shutdown").await;
    hub.close_event_streams();
    closing_tx.send_replace(true);
    let grace = tokio::time::sleep(limits.shutdown_grace);
    tokio::pin!(grace);
    loop {
        tokio::select! {
            () = &mut grace => break,
            next = conns.join_next() => if next.is_none() { break },
        }
    }
    // What is still open after the grace period is closed (its task dropped).
    conns.shutdown().await;
    Ok(())
}

/// What every connection task shares.
struct Shared {
    router: axum::Router,
    registry: Arc<Registry>,
    max_body: usize,
    limits: ConnLimits,
    builder: hyper::server::conn::http1::Builder,
    metrics: Arc<crate::metrics::Metrics>,
}

/// Counts a connection in `cookwala_connections_open` while it lives.
struct OpenConnection(Arc<crate::metrics::Metrics>);

impl OpenConnection {
    fn new(metrics: Arc<crate::metrics::Metrics>) -> OpenConnection {
        metrics.connections.inc();
        OpenConnection(metrics)
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.connections.dec();
    }
}

/// One admitted connection: its id in the registry and what closes it early.
struct Slot {
    id: u64,
    close: Arc<Notify>,
}

async fn connection(
    shared: Arc<Shared>,
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    slot: Slot,
    mut closing: watch::Receiver<bool>,
) {
    let id = slot.id;
    let _open = OpenConnection::new(shared.metrics.clone());
    let svc = {
        let shared = shared.clone();
        hyper::service::service_fn(move |req| handle(shared.clone(), id, peer, req))
    };
    let conn = shared.builder.serve_connection(TokioIo::new(stream), svc).with_upgrades();
    tokio::pin!(conn);
    let mut graceful = false;
    loop {
        let idle_check = shared.registry.idle_deadline(id, shared.limits.idle_timeout);
        tokio::select! {
            _ = conn.as_mut() => break,
            () = slot.close.notified() => break,
            _ = closing.changed(), if !graceful => {
                graceful = true;
                // No answer begun (a head or a body still arriving): closed now, so a half-sent
                // request cannot hold the shutdown open. Otherwise hyper's own graceful
                // shutdown decides, because only hyper knows whether an answer's bytes are
                // still being written: the registry sees an answer as ended once its last
                // frame is handed over, which may sit in the socket buffers of a client that
                // is not reading. Hyper closes a connection with nothing left to write at
                // once, and lets the rest finish within `--shutdown-grace`.
                if shared.registry.never_answered(id) {
                    break;
                }
                conn.as_mut().graceful_shutdown();
            }
            () = tokio::time::sleep_until(idle_check) => {
                if shared.registry.idle_expired(id, shared.limits.idle_timeout) {
                    break;
                }
            }
        }
    }
    shared.registry.release(id);
}

/// One request: its body read within the body timeout and the body limit, then the router.
/// The connection is never evicted while the router answers, nor for [`SEND_GRACE`] while the
/// answer's body goes out.
async fn handle(
    shared: Arc<Shared>,
    id: u64,
    peer: SocketAddr,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    shared.registry.receiving(id);
    let (mut parts, body) = req.into_parts();
    let bytes = if body.is_end_stream() {
        Bytes::new()
    } else {
        let read = Limited::new(body, shared.max_body).collect();
        match tokio::time::timeout(shared.limits.body_timeout, read).await {
            Ok(Ok(collected)) => collected.to_bytes(),
            Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
                return Ok(closing(crate::http::limits::too_large()));
            }
            Ok(Err(_)) => {
                return Ok(closing(ApiError::bad_request("the request body could not be read")));
            }
            Err(_) => {
                return Ok(closing(ApiError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "request-timeout",
                    format!(
                        "the request body did not arrive within {} s (serve --body-timeout)",
                        shared.limits.body_timeout.as_secs()
                    ),
                )));
            }
        }
    };
    let handling = shared.registry.busy(id);
    parts.extensions.insert(ConnectInfo(peer));
    let req = Request::from_parts(parts, Body::from(bytes));
    let res = match shared.router.clone().oneshot(req).await {
        Ok(res) => res,
        Err(never) => match never {},
    };
    // While the response body goes out the connection is still being answered, but only for
    // SEND_GRACE: a client that does not read its answer (or an event stream, which resumes
    // with Last-Event-ID) may then give way like an idle one.
    let sending = handling.sending();
    Ok(res.map(move |b| {
        Body::new(b.map_frame(move |frame| {
            let _still_sending = &sending;
            frame
        }))
    }))
}

/// How long a response body may be going out before its connection can give way to a new one.
const SEND_GRACE: Duration = Duration::from_secs(10);

/// A problem answer after which the connection closes (its request was not read to the end).
fn closing(e: ApiError) -> Response<Body> {
    let mut res = e.into_response();
    res.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    res
}

// ---- the registry

/// The open connections, oldest first, and how many each address holds.
struct Registry {
    max_connections: usize,
    max_per_address: usize,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    next: u64,
    /// By id, which is the accept order: the first entry is the oldest.
    conns: BTreeMap<u64, Entry>,
    per_address: HashMap<IpAddr, usize>,
}

struct Entry {
    addr: IpAddr,
    phase: Phase,
    close: Arc<Notify>,
}

/// Where a connection is. HTTP/1 answers one request at a time, so one phase suffices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for a request head: fresh (`None`; the header timeout governs it), or idle
    /// since the last answer ended.
    Waiting(Option<Instant>),
    /// The head is in; the body is being read.
    Receiving,
    /// The router is answering: never evicted.
    Handling,
    /// The answer's body is going out, since then.
    Sending(Instant),
}

impl Phase {
    /// May this connection be closed to make room for a new one?
    fn gives_way(self) -> bool {
        match self {
            Phase::Waiting(_) | Phase::Receiving => true,
            Phase::Handling => false,
            Phase::Sending(since) => since.elapsed() >= SEND_GRACE,
        }
    }
}

/// Marks a connection as being answered while alive (then idle, when dropped).
struct Busy {
    registry: Arc<Registry>,
    id: u64,
}

impl Busy {
    /// The answer leaves the router: the connection is sending it from now on.
    fn sending(self) -> Busy {
        self.registry.set(self.id, Phase::Sending(Instant::now()));
        self
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.registry.set(self.id, Phase::Waiting(Some(Instant::now())));
    }
}

impl Registry {
    fn new(limits: &ConnLimits) -> Registry {
        Registry {
            max_connections: limits.max_connections.max(1),
            max_per_address: limits.max_per_address.max(1),
            table: Mutex::new(Table::default()),
        }
    }

    /// The table (a poisoned lock is recovered: every update leaves it consistent).
    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A place for a new connection from `addr`, making room by closing the oldest
    /// connection not being handled (from `addr` when its own budget is full); `None` when
    /// every connection in the way is being handled.
    fn admit(&self, addr: IpAddr) -> Option<Slot> {
        let mut t = self.table();
        if t.per_address.get(&addr).copied().unwrap_or(0) >= self.max_per_address
            && !t.evict(Some(addr))
        {
            return None;
        }
        if t.conns.len() >= self.max_connections && !t.evict(None) {
            return None;
        }
        let id = t.next;
        t.next += 1;
        let close = Arc::new(Notify::new());
        t.conns.insert(id, Entry { addr, phase: Phase::Waiting(None), close: close.clone() });
        *t.per_address.entry(addr).or_insert(0) += 1;
        Some(Slot { id, close })
    }

    fn evict_oldest_idle(&self) {
        self.table().evict(None);
    }

    fn release(&self, id: u64) {
        self.table().remove(id);
    }

    fn set(&self, id: u64, phase: Phase) {
        if let Some(e) = self.table().conns.get_mut(&id) {
            e.phase = phase;
        }
    }

    fn receiving(&self, id: u64) {
        self.set(id, Phase::Receiving);
    }

    fn busy(self: &Arc<Self>, id: u64) -> Busy {
        self.set(id, Phase::Handling);
        Busy { registry: self.clone(), id }
    }

    /// Still receiving its first request (or a request's body): no answer has begun on it.
    fn never_answered(&self, id: u64) -> bool {
        self.table()
            .conns
            .get(&id)
            .is_none_or(|e| matches!(e.phase, Phase::Waiting(None) | Phase::Receiving))
    }

    #[cfg(test)]
    fn is_busy(&self, id: u64) -> bool {
        self.table()
            .conns
            .get(&id)
            .is_some_and(|e| matches!(e.phase, Phase::Handling | Phase::Sending(_)))
    }

    fn idle_since(&self, id: u64) -> Option<Instant> {
        match self.table().conns.get(&id).map(|e| e.phase) {
            Some(Phase::Waiting(since)) => since,
            _ => None,
        }
    }

    /// When the connection's idle time runs out (a full period on when it is not idle).
    fn idle_deadline(&self, id: u64, idle: Duration) -> Instant {
        self.idle_since(id).unwrap_or_else(Instant::now) + idle
    }

    fn idle_expired(&self, id: u64, idle: Duration) -> bool {
        self.idle_since(id).is_some_and(|s| s.elapsed() >= idle)
    }

    #[cfg(test)]
    fn open(&self) -> usize {
        self.table().conns.len()
    }
}

impl Table {
    /// Closes the oldest connection (from `addr`, if given) that is not being handled; false
    /// when there is none. The scan is bounded by the budget.
    fn evict(&mut self, addr: Option<IpAddr>) -> bool {
        let victim = self
            .conns
            .iter()
            .find(|(_, e)| e.phase.gives_way() && addr.is_none_or(|a| a == e.addr))
            .map(|(id, _)| *id);
        match victim {
            Some(id) => {
                if let Some(e) = self.remove(id) {
                    e.close.notify_one();
                }
                true
            }
            None => false,
        }
    }

    fn remove(&mut self, id: u64) -> Option<Entry> {
        let e = self.conns.remove(&id)?;
        if let Some(n) = self.per_address.get_mut(&e.addr) {
            *n -= 1;
            if *n == 0 {
                self.per_address.remove(&e.addr);
            }
        }
        Some(e)
    }
}

#[cfg(test)]
mod tests;
