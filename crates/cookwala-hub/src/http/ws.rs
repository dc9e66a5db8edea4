//! `GET /cookwala/v1/events/ws` (also `/v1/events/ws`): the event outbox over a WebSocket.
//!
//! The same CloudEvents as the SSE stream (see [`crate::outbox::sse`]), one JSON text frame each (the
//! stored JCS bytes), with the same filters (`?type=<prefix>`, `?subject=<id>`) and the same
//! resume point (`Last-Event-ID`, else `?after=<event id>`: every stored event after it, then
//! live; an unknown id is a 400 `unknown-event-id` problem before the upgrade; without either,
//! the events committed after the connection). Heartbeats come as they happen, live only.
//!
//! **Auth** as SSE (a bearer token that may read), or, for browsers, which cannot set headers
//! on a WebSocket, `?access_token=<token>`. The stream counts against the same open-stream cap
//! (`serve --max-streams`) and ends when the hub shuts down or the client closes it; frames
//! from the client are read only to notice a close.

use std::collections::HashMap;

use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::routing::get;
use tokio::sync::broadcast;

use crate::error::ApiError;
use crate::outbox::sse::Filter;
use crate::service::Hub;

/// The WebSocket routes (merged into [`crate::http::app`]).
pub(crate) fn routes() -> Router<Hub> {
    Router::new().route("/v1/events/ws", get(events)).route("/cookwala/v1/events/ws", get(events))
}

/// How many outbox rows one read takes.
const BATCH: usize = 256;

async fn events(
    State(hub): State<Hub>,
    mut headers: HeaderMap,
    query: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
    upgrade: Result<WebSocketUpgrade, axum::extract::ws::rejection::WebSocketUpgradeRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::bad_request(format!("query: {e}")))?;
    if !headers.contains_key(header::AUTHORIZATION)
        && let Some(token) = query.get("access_token").filter(|t| !t.is_empty())
        && let Ok(v) = HeaderValue::from_str(&format!("Bearer {token}"))
    {
        headers.insert(header::AUTHORIZATION, v);
    }
    let who = crate::http::authenticate(&hub, &headers, crate::auth::Action::Read)?;
    let upgrade = upgrade.map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad-request",
            format!("not a WebSocket upgrade: {e}"),
        )
    })?;
    let slot = hub.inner.streams.take(&who, hub.inner.config.max_streams)?;
    let (start, filter) = super::events::resume_point(&hub, &headers, &query).await?;
    // The client sends nothing but control frames: its messages are kept small.
    let upgrade = upgrade.max_message_size(64 * 1024).max_frame_size(64 * 1024);
    Ok(upgrade.on_upgrade(move |socket| async move {
        let _slot = slot;
        stream(hub, socket, start, filter).await;
    }))
}

/// Sends the outbox after `position`, then live, until the client or the hub ends it.
async fn stream(hub: Hub, mut socket: WebSocket, mut position: u64, filter: Filter) {
    let bus = &hub.inner.bus;
    let mut committed = bus.committed();
    let mut live = bus.live();
    let mut closing = bus.closing();
    loop {
        if *closing.borrow() {
            let _ = socket.send(Message::Close(None)).await;
            return;
        }
        committed.borrow_and_update();
        let after = position;
        let Ok(rows) = hub.db(move |s| s.events_after(after, BATCH)).await else {
            let _ = socket.send(Message::Close(None)).await;
            return;
        };
        if let Some(last) = rows.last() {
            position = last.position;
            for row in rows.into_iter().filter(|r| filter.admits(&r.ty, &r.subject)) {
                if socket.send(Message::Text(row.body.into())).await.is_err() {
                    return;
                }
            }
            continue;
        }
        tokio::select! {
            changed = committed.changed() => if changed.is_err() { return },
            ev = live.recv() => match ev {
                Ok(ev) if filter.admits(ev.ty, &ev.subject) => {
                    if socket.send(Message::Text(ev.body.clone().into())).await.is_err() {
                        return;
                    }
                }
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            },
            msg = socket.recv() => match msg {
                Some(Ok(Message::Close(_)) | Err(_)) | None => return,
                Some(Ok(_)) => {}
            },
            _ = closing.changed() => {
                let _ = socket.send(Message::Close(None)).await;
                return;
            }
        }
    }
}
