//! The Cookwala hub: the Core HTTP API on simulated devices, with durable storage.
//!
//! [`Hub::open`] takes a [`storage::Storage`] (SQLite by default) and ends, safely, every
//! execution a previous process left active — the hub never silently resumes cooking.
//! [`app`] builds the axum router; [`Hub::spawn_clock`] moves simulated time at the configured
//! speed; [`serve`] runs both on a listener until a shutdown signal, through an accept loop
//! that bounds every connection ([`ConnLimits`]: timeouts, header bytes, a connection budget
//! in which a stop always gets through) and, at shutdown, stops every running execution before
//! it closes connections.
//!
//! **Devices.** Every device of the catalog is served, each with its own busy state, safety
//! limits and heartbeat: the root paths (`/v1/...`) serve [`HubConfig::device_id`], and
//! `/devices/{id}/v1/...` serves each device (see the `api` module); `GET /v1/devices` lists
//! them. Each execution is stored with the Recipe and Capabilities documents (and the safety
//! limits) it ran with, so a restart ends it safely even without the files that defined them.
//!
//! Beside Core, the hub serves the reference tools (`/v1/tools/*`, `http/tools.rs`), its
//! conformance claim with a ConformanceReport run and signed at start-up ([`conformance`]), and
//! its signing key at `/.well-known/cookwala.json` ([`identity`]).
//!
//! The hub drives each device through the [`executor::Executor`] interface (admit, start, then
//! the run's stop, pause, resume, status, log and events; the in-process simulator is its
//! first implementation). Every mutation of an execution happens under that execution's own
//! lock and is committed (WAL, `synchronous = FULL`) before the lock is released and the
//! response leaves, together with the idempotency record that lets a retried POST get the
//! original answer and the CloudEvents that report it.
//!
//! **Events.** [`events`] maps simulator events to CloudEvents; they are committed to a durable
//! outbox with the change they report, streamed over SSE (`GET /cookwala/v1/events`, resumable
//! with `Last-Event-ID`) and POSTed, signed, to the configured [`webhooks`] at least once, in
//! order. Heartbeats are live only (see the `bus` module).

// Layers call in one direction: `http` → `service` → `outbox` → `storage`; the leaves below
// them (`auth`, `catalog`, `clock`, `conformance`, `executor`, `identity`, `kitchen`, `limits`,
// `openapi`, `privacy`) call none of the layers. The accept loop is `http/server`: everything
// that serves HTTP is under `http/` (clients live where they are used: webhooks in `outbox`,
// calls to a kitchen's devices in `service/remote`).
pub mod auth;
pub mod catalog;
mod clock;
pub mod conformance;
pub mod executor;
mod http;
pub mod identity;
pub mod kitchen;
mod limits;
pub mod metrics;
pub mod openapi;
pub mod outbox;
pub mod privacy;
mod service;
pub mod storage;

pub use catalog::{Catalog, CatalogError};
pub use clock::{Clock, SystemClock, note, unix_ms};
pub use http::{COOKWALA_JSON, app};
pub use identity::HubKey;
pub use limits::{ConnLimits, MIN_HEADER_BYTES};
pub use outbox::webhooks::{Webhook, WebhookPolicy};
pub use outbox::{events, webhooks};
pub use service::mqtt::{self, MqttConfig};
pub use service::{Error as ServiceError, Hub, HubConfig, HubError};

/// Serves `hub` on `listener` until `shutdown` resolves; the simulated clock, the heartbeats
/// and the webhook deliveries run meanwhile. Every connection is bounded by
/// [`HubConfig::connections`] (see [`ConnLimits`]). At shutdown the listener closes, every
/// running execution is stopped safely, the event streams end, and the open connections get
/// [`ConnLimits::shutdown_grace`] to finish (those still sending a request are closed at once).
///
/// # Errors
/// None today (accept errors are survived); the signature keeps room for listener errors.
pub async fn serve(
    hub: Hub,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut tasks: Vec<_> = hub.spawn_clock().into_iter().collect();
    tasks.extend(hub.spawn_heartbeat());
    tasks.extend(hub.spawn_webhooks());
    tasks.extend(hub.spawn_mqtt());
    tasks.extend(hub.spawn_incident_pruning());
    tasks.extend(hub.spawn_fleet());
    tasks.extend(hub.spawn_kitchen_watch());
    let res = http::server::run(hub, listener, shutdown).await;
    for t in tasks {
        t.abort();
    }
    res
}

/// Serves the operators' endpoints — `/metrics`, `/healthz`, `/readyz`, all without a token
/// — on a listener of their own (`serve --metrics-addr`: the address is the access control,
/// e.g. a loopback or private interface a Prometheus reaches), until `shutdown` resolves. The
/// API's listener keeps `/metrics` behind a token either way.
///
/// # Errors
/// The listener fails.
pub async fn serve_operators(
    hub: Hub,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, http::operators_app(hub)).with_graceful_shutdown(shutdown).await
}
