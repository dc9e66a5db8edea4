//! The event stream over a WebSocket: the same CloudEvents as SSE, resumable, with a query
//! token for browsers.

use std::time::Duration;

use canonical_json::Value;
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::events::{run_to_end, s, start};
use crate::support::*;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn open(url: &str, headers: &[(&str, &str)]) -> Result<Socket, u16> {
    let mut req = url.into_client_request().unwrap();
    for (k, v) in headers {
        let name = axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap();
        req.headers_mut().insert(name, v.parse().unwrap());
    }
    match tokio_tungstenite::connect_async(req).await {
        Ok((socket, _)) => Ok(socket),
        Err(tokio_tungstenite::tungstenite::Error::Http(res)) => Err(res.status().as_u16()),
        Err(e) => panic!("{e}"),
    }
}

/// The next `n` text frames, as event ids.
async fn next_ids(socket: &mut Socket, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    while out.len() < n {
        let msg = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("a frame within 10 s")
            .unwrap()
            .unwrap();
        if let Message::Text(text) = msg {
            let doc: Value = canonical_json::parse(text.as_bytes()).unwrap();
            out.push(s(&doc, "id").to_owned());
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_websocket_streams_the_outbox_with_filters_and_resume() {
    let hub = hub_in_memory().await;
    let storage = hub.storage();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(cookwala_hub::serve(hub.clone(), listener, async {
        let _ = stop_rx.await;
    }));
    let base = format!("ws://{addr}/cookwala/v1/events/ws");

    // No token: refused before the upgrade; a bad resume point too.
    assert_eq!(open(&base, &[]).await.err(), Some(401));
    let unknown = format!("{base}?after=nope&access_token={TOKEN}");
    assert_eq!(open(&unknown, &[]).await.err(), Some(400));

    // Live: a browser-style client (token in the query) sees what is committed after it.
    let mut live =
        open(&format!("{base}?subject=ex-ws-1&access_token={TOKEN}"), &[]).await.unwrap();
    start(&hub, "ex-ws-1", "red-lentil-soup").await;
    run_to_end(&hub, "ex-ws-1").await;
    let all: Vec<String> = storage
        .events_after(0, 10_000)
        .unwrap()
        .into_iter()
        .filter(|e| e.subject == "ex-ws-1")
        .map(|e| e.id)
        .collect();
    assert_eq!(next_ids(&mut live, all.len()).await, all);

    // Resume with Last-Event-ID (header auth): everything after it, in order.
    let mid = &all[all.len() / 2];
    let bearer = format!("Bearer {TOKEN}");
    let mut resumed =
        open(&base, &[("authorization", &bearer), ("last-event-id", mid)]).await.unwrap();
    let rest = &all[all.len() / 2 + 1..];
    assert_eq!(next_ids(&mut resumed, rest.len()).await, rest);
    // ?after= and a type filter, on the short path.
    let url = format!(
        "ws://{addr}/v1/events/ws?after={}&type=cookwala.execution.state_changed&access_token={TOKEN}",
        all[0]
    );
    let mut filtered = open(&url, &[]).await.unwrap();
    let changes: Vec<String> = storage
        .events_after(0, 10_000)
        .unwrap()
        .into_iter()
        .filter(|e| e.ty == "cookwala.execution.state_changed")
        .map(|e| e.id)
        .collect();
    assert_eq!(next_ids(&mut filtered, changes.len()).await, changes);

    // The client closes; the server ends.
    live.send(Message::Close(None)).await.unwrap();
    drop((live, resumed, filtered));
    stop_tx.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), server).await.unwrap().unwrap().unwrap();
}
