//! One real server on port 0.

use std::io::{Read, Write};

use cookwala_hub::{HubConfig, serve};

use crate::support::*;

fn http(addr: std::net::SocketAddr, raw: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(raw.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_on_port_zero_and_shuts_down() {
    let dir = tempfile::tempdir().unwrap();
    let storage = std::sync::Arc::new(
        cookwala_hub::storage::SqliteStorage::open(&dir.path().join("hub.sqlite3")).unwrap(),
    );
    let config = HubConfig {
        speed: 1_000.0,
        tokens: cookwala_hub::auth::Tokens::owner(TOKEN),
        ..HubConfig::default()
    };
    let hub = cookwala_hub::Hub::open(storage, config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(hub, listener, async {
        let _ = rx.await;
    }));
    let body = request("ex-smoke-1", "red-lentil-soup", false);
    let out = tokio::task::spawn_blocking(move || {
        let caps =
            http(addr, "GET /v1/capabilities HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let start = http(
            addr,
            &format!(
                "POST /v1/executions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
                 Authorization: Bearer {TOKEN}\r\nIdempotency-Key: smoke-key-1\r\n\
                 Content-Type: application/vnd.cookwala+json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            ),
        );
        (caps, start)
    })
    .await
    .unwrap();
    assert!(out.0.starts_with("HTTP/1.1 200"), "{}", out.0);
    assert!(out.1.starts_with("HTTP/1.1 202"), "{}", out.1);
    assert!(out.1.to_ascii_lowercase().contains("etag: \"0\""), "{}", out.1);
    tx.send(()).unwrap();
    server.await.unwrap().unwrap();
}
