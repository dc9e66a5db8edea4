//! The hub as the kitchen's coordinator: the devices announced on the bus (see
//! [`crate::kitchen`] for the rules), what the hub does when one is lost or comes back, and
//! the calls it makes to a device's own API.
//!
//! **Lost.** When [`Kitchen`] says a device went offline, the hub publishes nothing in its
//! name (the broker already published its will, or nothing at all if it only fell silent).
//! It records the loss and, for every execution it knew the device to run, commits a
//! `cookwala.handoff.proposed` (the step and its hazards, handed to the person responsible)
//! and a `cookwala.notify.request` to the outbox, so they reach the bus, the event stream and
//! the webhooks, at least once and in order. Reads of that device's executions through the
//! hub answer 503 `device-unreachable` with the last state the device reported: the hub never
//! makes a state up.
//!
//! **Back.** When the device is online again, it is the authority: its first heartbeat
//! replaces what the hub knew it to run, and the hub asks it for each execution it had when
//! it was lost (a restarted device has ended them safely; the answer says so).
//!
//! **Calls to a device** ([`Hub::call_device`]) are bounded, so a device that answers slowly
//! or with garbage cannot hold a hub task or lock: each has [`CALL_TIMEOUT`] in all, an
//! answer above [`MAX_ANSWER`] bytes is refused, and at most [`CALLS_PER_DEVICE`] run at once
//! per device (a stop has a budget of its own, [`STOPS_PER_DEVICE`], so it gets through while
//! other calls wait). No lock is held across a call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use canonical_json::Value;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use tokio::sync::Semaphore;

use crate::kitchen::{Active, Change, Kitchen, Refused};
use crate::outbox::events;
use crate::service::Hub;
use crate::storage::Commit;

/// The longest a call to a device may take, connection included.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer read from a device (8 MiB: an ExecutionLog of a long recipe fits).
pub const MAX_ANSWER: usize = 8 << 20;
/// Calls to one device at once (beyond: 503, try again).
pub const CALLS_PER_DEVICE: usize = 32;
/// Stops to one device at once, beside [`CALLS_PER_DEVICE`].
pub const STOPS_PER_DEVICE: usize = 8;

/// The coordinator's state (in [`super::Inner::coordinator`]).
#[derive(Debug, Default)]
pub(crate) struct Coordinator {
    kitchen: Mutex<Kitchen>,
    /// Wakes the watcher when a deadline may have moved (a device announced itself).
    changed: tokio::sync::Notify,
    /// Call budgets per device.
    budgets: Mutex<HashMap<String, Budget>>,
}

/// One device's call budgets: any call, and stops beside them.
#[derive(Debug, Clone)]
struct Budget {
    calls: Arc<Semaphore>,
    stops: Arc<Semaphore>,
}

/// What the hub knows of a device of the kitchen, for a request about it.
#[derive(Clone, Debug)]
pub(crate) struct RemoteView {
    pub base_url: String,
    pub online: bool,
    pub since_ms: i64,
    pub offline_reason: Option<&'static str>,
    pub active: Vec<Active>,
}

/// A device's answer.
#[derive(Debug)]
pub(crate) struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// Why a call to a device failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallError {
    /// Too many calls to it at once.
    #[error("{0} calls to this device are under way; try again")]
    Busy(usize),
    /// It did not answer, or not usefully.
    #[error("{0}")]
    Failed(String),
}

impl Coordinator {
    fn kitchen(&self) -> MutexGuard<'_, Kitchen> {
        self.kitchen.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Hub {
    fn coordinator(&self) -> Option<&Coordinator> {
        self.inner.coordinator.as_ref()
    }

    /// The device `id` of the kitchen, when one announced itself on the bus.
    pub(crate) fn remote_view(&self, id: &str) -> Option<RemoteView> {
        let c = self.coordinator()?;
        let k = c.kitchen();
        let d = k.get(id)?;
        Some(RemoteView {
            base_url: d.announce.base_url.clone(),
            online: d.online,
            since_ms: d.since_ms,
            offline_reason: d.offline_reason.map(crate::kitchen::OfflineReason::as_str),
            active: d.active.values().cloned().collect(),
        })
    }

    /// True when `id` names a device announced on the bus (it then shadows an in-process
    /// device of the same id: requests go to the device itself).
    pub(crate) fn is_remote(&self, id: &str) -> bool {
        self.coordinator().is_some_and(|c| c.kitchen().get(id).is_some())
    }

    /// The kitchen's devices for `GET /v1/devices`: one object each (id, base URL, online,
    /// since, last heartbeat, executions).
    pub(crate) fn remote_list(&self) -> Vec<crate::kitchen::Remote> {
        self.coordinator().map(|c| c.kitchen().devices().cloned().collect()).unwrap_or_default()
    }

    /// A message on `cookwala/{K}/device/{id}`: applied to the kitchen at once (so messages
    /// take effect in the order they arrive); what it changed is returned for
    /// [`Hub::apply_change`], which may wait for storage.
    pub(crate) fn device_message(&self, topic: &str, payload: &[u8]) -> Option<Change> {
        let c = self.coordinator()?;
        let device = topic.rsplit('/').next().unwrap_or_default();
        let now = self.now_ms();
        let res = c.kitchen().device_message(device, payload, now);
        c.changed.notify_one();
        match res {
            Ok(change) => change,
            Err(why) => {
                refused(topic, &why);
                None
            }
        }
    }

    /// A message on `cookwala/{K}/execution/{id}` (a device's execution event).
    pub(crate) fn execution_message(&self, topic: &str, payload: &[u8]) {
        let Some(c) = self.coordinator() else { return };
        let now = self.now_ms();
        let res = c.kitchen().execution_event(payload, now);
        match res {
            Ok(_) | Err(Refused::Duplicate(_) | Refused::Stale(_)) => {}
            Err(why) => refused(topic, &why),
        }
    }

    /// Reports a change and acts on it (see the module documentation).
    pub(crate) async fn apply_change(&self, change: Change) {
        match change {
            Change::Online { device, back, was } => {
                let url = self.remote_view(&device).map(|v| v.base_url).unwrap_or_default();
                crate::clock::note(format_args!(
                    "cookwala-hub: kitchen device {device} is online at {url}{}",
                    if back { " again" } else { "" }
                ));
                tracing::info!(target: "cookwala_hub", device, url, back, "device online");
                if !was.is_empty() {
                    let hub = self.clone();
                    tokio::spawn(async move { hub.reconcile(&device, &was).await });
                }
            }
            Change::Offline { device, reason, instance, active, last_seen_ms } => {
                crate::clock::note(format_args!(
                    "cookwala-hub: kitchen device {device} is offline ({}); {} execution(s) \
                     handed to a person",
                    reason.as_str(),
                    active.len()
                ));
                tracing::warn!(
                    target: "cookwala_hub",
                    device,
                    reason = reason.as_str(),
                    executions = active.len(),
                    "device offline"
                );
                let now_ms = self.now_ms();
                let mut commit = Commit::default();
                for a in &active {
                    let lost = events::Lost {
                        device: &device,
                        instance: &instance,
                        reason,
                        active: a,
                        now_ms,
                        last_seen_ms,
                    };
                    commit.events.push(events::to_new(&events::handoff_proposed(&lost)));
                    commit.events.push(events::to_new(&events::notify_lost(&lost)));
                }
                if let Err(e) = self.commit(commit, true).await {
                    crate::clock::note(format_args!(
                        "cookwala-hub: the hand-off of {device}'s executions is not stored yet \
                         ({e}); it goes with the next commit"
                    ));
                }
            }
        }
    }

    /// Asks a device that came back for each execution it ran when it was lost: its answer
    /// replaces what the hub knew.
    async fn reconcile(&self, device: &str, was: &[Active]) {
        for a in was {
            let path = format!("/v1/executions/{}", percent_segment(&a.id));
            match self.call_device(device, Method::GET, &path, HeaderMap::new(), Bytes::new()).await
            {
                Ok(r) if r.status == StatusCode::OK => self.note_status(device, &r.body),
                Ok(r) => crate::clock::note(format_args!(
                    "cookwala-hub: kitchen device {device} answered {} for execution {}",
                    r.status, a.id
                )),
                Err(e) => crate::clock::note(format_args!(
                    "cookwala-hub: asking kitchen device {device} for execution {}: {e}",
                    a.id
                )),
            }
        }
    }

    /// Takes an ExecutionStatus a device answered as what it runs.
    pub(crate) fn note_status(&self, device: &str, body: &[u8]) {
        let Some(c) = self.coordinator() else { return };
        let Ok(doc) = canonical_json::parse(body) else { return };
        let (Some(id), Some(state)) =
            (doc.get("id").and_then(Value::as_str), doc.get("state").and_then(Value::as_str))
        else {
            return;
        };
        let seq = doc.get("seq").and_then(Value::as_i64).and_then(|n| u64::try_from(n).ok());
        c.kitchen().status(device, id, state, seq.unwrap_or(0));
    }

    /// An execution started on `device` through the hub (its 201 body).
    pub(crate) fn note_started(&self, device: &str, body: &[u8]) {
        let Some(c) = self.coordinator() else { return };
        let Ok(doc) = canonical_json::parse(body) else { return };
        let Some(id) = doc.get("id").and_then(Value::as_str) else { return };
        let state = doc.get("state").and_then(Value::as_str).unwrap_or("accepted");
        let seq = doc.get("seq").and_then(Value::as_i64).and_then(|n| u64::try_from(n).ok());
        let final_ = cookwala::execution::ExecutionState::parse(state)
            .is_some_and(cookwala::execution::ExecutionState::is_final);
        if !final_ {
            c.kitchen().started(device, Active::new(id, state, seq.unwrap_or(0)));
        }
    }

    /// Starts the task that marks silent devices offline at their deadline (a timer to the
    /// earliest deadline, woken when a device announces itself; no polling of every device).
    pub fn spawn_kitchen_watch(&self) -> Option<tokio::task::JoinHandle<()>> {
        self.coordinator()?;
        let hub = self.clone();
        Some(tokio::spawn(async move {
            let Some(c) = hub.coordinator() else { return };
            loop {
                let next = c.kitchen().next_deadline();
                let wait = next.map(|at| {
                    let ms = at.saturating_sub(hub.now_ms()).max(0);
                    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
                });
                let changed = c.changed.notified();
                match wait {
                    Some(w) => {
                        tokio::select! {
                            () = tokio::time::sleep(w) => {}
                            () = changed => continue,
                        }
                    }
                    None => {
                        changed.await;
                        continue;
                    }
                }
                let now = hub.now_ms();
                let changes = c.kitchen().expire(now);
                for change in changes {
                    hub.apply_change(change).await;
                }
            }
        }))
    }

    fn budget(&self, device: &str) -> Option<Budget> {
        let c = self.coordinator()?;
        let mut b = c.budgets.lock().unwrap_or_else(PoisonError::into_inner);
        Some(
            b.entry(device.to_owned())
                .or_insert_with(|| Budget {
                    calls: Arc::new(Semaphore::new(CALLS_PER_DEVICE)),
                    stops: Arc::new(Semaphore::new(STOPS_PER_DEVICE)),
                })
                .clone(),
        )
    }

    /// Calls `METHOD base_url + path` on the kitchen device `device` with the kitchen's device
    /// token, within the bounds of the module documentation.
    ///
    /// # Errors
    /// Too many calls at once, or the device did not answer usefully.
    pub(crate) async fn call_device(
        &self,
        device: &str,
        method: Method,
        path: &str,
        mut headers: HeaderMap,
        body: Bytes,
    ) -> Result<Reply, CallError> {
        let view = self
            .remote_view(device)
            .ok_or_else(|| CallError::Failed(format!("no kitchen device {device}")))?;
        let b = self.budget(device).ok_or_else(|| CallError::Failed("no kitchen".to_owned()))?;
        let is_stop = method == Method::POST && path.ends_with("/stop");
        let budget = if is_stop { b.stops } else { b.calls };
        let _permit = budget.try_acquire_owned().map_err(|_| {
            CallError::Busy(if is_stop { STOPS_PER_DEVICE } else { CALLS_PER_DEVICE })
        })?;
        if let Some(token) = &self.inner.config.device_token
            && let Ok(v) = HeaderValue::from_str(&format!("Bearer {}", token.expose()))
        {
            headers.insert(header::AUTHORIZATION, v);
        }
        let url = format!("{}{path}", view.base_url);
        let tls = if url.starts_with("https://") {
            Some(
                crate::outbox::webhooks::tls_config(&self.inner.config.webhook_roots)
                    .map_err(CallError::Failed)?,
            )
        } else {
            None
        };
        match tokio::time::timeout(CALL_TIMEOUT, call(&url, method, headers, body, tls)).await {
            Ok(r) => r.map_err(CallError::Failed),
            Err(_) => {
                Err(CallError::Failed(format!("no answer within {} s", CALL_TIMEOUT.as_secs())))
            }
        }
    }
}

fn refused(topic: &str, why: &Refused) {
    crate::clock::note(format_args!("cookwala-hub: kitchen bus: {topic}: refused: {why}"));
    tracing::warn!(target: "cookwala_hub", topic, why = %why, "kitchen message refused");
}

/// `s` as one path segment (every byte but unreserved ones percent-encoded).
pub(crate) fn percent_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b':') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One request on a fresh HTTP/1.1 connection (TLS for `https://`).
async fn call(
    url: &str,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
    tls: Option<crate::outbox::webhooks::Tls>,
) -> Result<Reply, String> {
    let target = crate::outbox::webhooks::target(url)?;
    let stream = tokio::net::TcpStream::connect((target.host.as_str(), target.port))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let mut req = Request::builder()
        .method(method)
        .uri(target.path.as_str())
        .body(Full::new(body))
        .map_err(|e| format!("request: {e}"))?;
    *req.headers_mut() = headers;
    let host = HeaderValue::from_str(&target.authority).map_err(|e| format!("host: {e}"))?;
    req.headers_mut().insert(header::HOST, host);
    req.headers_mut().insert(header::USER_AGENT, HeaderValue::from_static("cookwala-hub"));
    match tls {
        Some(tls) => {
            let name = tokio_rustls::rustls::pki_types::ServerName::try_from(target.host.clone())
                .map_err(|e| format!("TLS server name: {e}"))?;
            let stream = tokio_rustls::TlsConnector::from(tls)
                .connect(name, stream)
                .await
                .map_err(|e| format!("TLS: {e}"))?;
            exchange(TokioIo::new(stream), req).await
        }
        None => exchange(TokioIo::new(stream), req).await,
    }
}

async fn exchange<I>(io: I, req: Request<Full<Bytes>>) -> Result<Reply, String>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(io).await.map_err(|e| format!("handshake: {e}"))?;
    let driver = tokio::spawn(conn);
    let res = sender.send_request(req).await.map_err(|e| format!("send: {e}"));
    let out = match res {
        Ok(res) => {
            let (parts, body) = res.into_parts();
            match Limited::new(body, MAX_ANSWER).collect().await {
                Ok(b) => {
                    Ok(Reply { status: parts.status, headers: parts.headers, body: b.to_bytes() })
                }
                Err(e) => Err(format!("reading the answer: {e}")),
            }
        }
        Err(e) => Err(e),
    };
    driver.abort();
    out
}
