//! `GET /cookwala/v1/events` (also `/v1/events`): the event outbox as Server-Sent Events.
//!
//! Each outbox event is one message `id: <event id>`, `event: <type>`, `data: <JCS CloudEvent>`
//! (JCS has no raw newlines, so `data` is one line). Heartbeats, which are live only (see
//! [`crate::bus`]), come without an `id:` line, so a client's `Last-Event-ID` always names a
//! durable event. A comment line is sent every 15 s when nothing else is.
//!
//! **Resuming.** With a `Last-Event-ID` header (else `?after=<event id>`) the stream replays
//! every stored event after that one, then continues live; without either it starts with the
//! events committed after the connection. An id the outbox does not hold is refused with 400
//! `unknown-event-id` (a problem document) rather than replayed from the start, so a client
//! whose position is lost learns it and can re-read the execution statuses.
//!
//! **Filters.** `?type=<prefix>` keeps events whose type starts with the prefix
//! (`cookwala.safety.`); `?subject=<id>` keeps one execution (or the device, for heartbeats).
//!
//! The stream is a thin adapter over [`crate::outbox::subscription`], which reads the outbox
//! after its own position, woken after each commit, so a slow client misses nothing. It needs the bearer token like the other non-open endpoints, and
//! ends when the hub shuts down.

use std::collections::HashMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::http::error::ApiError;
use crate::outbox::subscription::{Filter, Message};
use crate::service::Hub;

/// The event routes (merged into [`crate::http::app`]).
pub(crate) fn routes() -> Router<Hub> {
    Router::new().route("/v1/events", get(events)).route("/cookwala/v1/events", get(events))
}

async fn events(
    State(hub): State<Hub>,
    headers: HeaderMap,
    query: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let who = crate::http::authenticate(&hub, &headers, crate::auth::Action::Read)?;
    let Query(query) = query.map_err(|e| ApiError::bad_request(format!("query: {e}")))?;
    let (start, filter) = resume_point(&hub, &headers, &query).await?;
    let subscription = hub.subscribe(&who, start, filter)?;
    let stream = futures_util::stream::unfold(subscription, |mut sub| async move {
        let message = sub.next().await?;
        Some((Ok::<Event, Infallible>(sse_event(message)), sub))
    });
    let keep_alive = KeepAlive::new().interval(Duration::from_secs(15)).text("keep-alive");
    Ok(Sse::new(stream).keep_alive(keep_alive).into_response())
}

/// True when `s` can go on an SSE field line (axum refuses newlines and NUL there).
fn one_line(s: &str) -> bool {
    !s.contains(['\n', '\r', '\0'])
}

/// One SSE message: `id:` (stored events only), `event:` and `data:` lines.
fn sse_event(message: Message) -> Event {
    let mut event = Event::default();
    if let Some(id) = message.id.filter(|id| one_line(id)) {
        event = event.id(id);
    }
    if one_line(&message.ty) {
        event = event.event(message.ty);
    }
    event.data(message.body)
}

/// Where a stream starts and what it keeps: after the event named by `Last-Event-ID` (else
/// `?after=`), or at the end of the outbox; `?type=` and `?subject=` filter. Shared by the SSE
/// and WebSocket streams.
///
/// # Errors
/// A 400 problem for an event id the outbox does not hold; the storage fails.
pub(super) async fn resume_point(
    hub: &Hub,
    headers: &HeaderMap,
    query: &HashMap<String, String>,
) -> Result<(u64, Filter), ApiError> {
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .or_else(|| query.get("after").filter(|v| !v.is_empty()).cloned());
    let start = match last {
        Some(id) => hub.event_position(&id).await?.ok_or_else(|| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "unknown-event-id",
                format!(
                    "no stored event has the id {}; reconnect without Last-Event-ID or \
                         ?after=",
                    crate::http::error::quote(&id)
                ),
            )
        })?,
        None => hub.last_event_position().await?,
    };
    let filter = Filter {
        type_prefix: query.get("type").filter(|v| !v.is_empty()).cloned(),
        subject: query.get("subject").filter(|v| !v.is_empty()).cloned(),
    };
    Ok((start, filter))
}
