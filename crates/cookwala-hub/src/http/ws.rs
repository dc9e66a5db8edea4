//! `GET /cookwala/v1/events/ws` (also `/v1/events/ws`): the event outbox over a WebSocket.
//!
//! A thin adapter over [`crate::outbox::subscription`], like the SSE stream: the same
//! CloudEvents, one JSON text frame each (the stored JCS bytes), with the same filters
//! (`?type=<prefix>`, `?subject=<id>`) and the same resume point (`Last-Event-ID`, else
//! `?after=<event id>`: every stored event after it, then live; an unknown id is a 400
//! `unknown-event-id` problem before the upgrade; without either, the events committed after
//! the connection). Heartbeats come as they happen, live only.
//!
//! **Auth** as SSE (a bearer token that may read), or, for browsers, which cannot set headers
//! on a WebSocket, `?access_token=<token>`. The stream counts against the same open-stream cap
//! (`serve --max-streams`) and ends when the client closes it or the hub shuts down (after the
//! stored events, the stops shutdown committed among them, are sent, as over SSE); frames
//! from the client are read only to notice a close.

use std::collections::HashMap;

use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::routing::get;

use crate::http::error::ApiError;
use crate::outbox::subscription::Subscription;
use crate::service::Hub;

/// The WebSocket routes (merged into [`crate::http::app`]).
pub(crate) fn routes() -> Router<Hub> {
    Router::new().route("/v1/events/ws", get(events)).route("/cookwala/v1/events/ws", get(events))
}

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
    let (start, filter) = super::events::resume_point(&hub, &headers, &query).await?;
    // The client sends nothing but control frames: its messages are kept small.
    let upgrade = upgrade.max_message_size(64 * 1024).max_frame_size(64 * 1024);
    let subscription = hub.subscribe(&who, start, filter)?;
    Ok(upgrade.on_upgrade(move |socket| stream(socket, subscription)))
}

/// Sends the subscription's messages, one text frame each, until the client or the hub ends
/// it (the hub's end, a shutdown, comes after the stored events are sent, as over SSE).
async fn stream(mut socket: WebSocket, mut subscription: Subscription) {
    loop {
        tokio::select! {
            message = subscription.next() => match message {
                Some(m) => {
                    if socket.send(Message::Text(m.body.into())).await.is_err() {
                        return;
                    }
                }
                None => {
                    let _ = socket.send(Message::Close(None)).await;
                    return;
                }
            },
            msg = socket.recv() => match msg {
                Some(Ok(Message::Close(_)) | Err(_)) | None => return,
                Some(Ok(_)) => {}
            },
        }
    }
}
