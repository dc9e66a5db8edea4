//! Delivery over real sockets: SSE on a port-0 hub, webhooks to a port-0 receiver.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Request, StatusCode};
use canonical_json::Value;
use cookwala_hub::storage::SqliteStorage;
use cookwala_hub::{Hub, HubConfig, Webhook, WebhookPolicy};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;

use crate::events::{outbox, run_to_end, s, start};
use crate::support::*;

/// A generous bound so a broken test fails instead of hanging; never a timing assertion.
const PATIENCE: Duration = Duration::from_secs(120);

struct Server {
    addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn serve(hub: Hub) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(cookwala_hub::serve(hub, listener, async {
        let _ = rx.await;
    }));
    Server { addr, stop, task }
}

impl Server {
    /// Stops the server; it must finish even with event streams open.
    async fn shut_down(self) {
        self.stop.send(()).unwrap();
        tokio::time::timeout(PATIENCE, self.task).await.unwrap().unwrap().unwrap();
    }
}

#[derive(Debug, Default, PartialEq)]
struct Msg {
    id: Option<String>,
    event: String,
    data: String,
}

struct SseClient {
    body: hyper::body::Incoming,
    buf: String,
}

async fn sse(addr: SocketAddr, path: &str, last: Option<&str>) -> Result<SseClient, StatusCode> {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(conn);
    let mut req = Request::get(path)
        .header("host", addr.to_string())
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("accept", "text/event-stream");
    if let Some(id) = last {
        req = req.header("last-event-id", id);
    }
    let res = sender.send_request(req.body(Empty::<Bytes>::new()).unwrap()).await.unwrap();
    if res.status() != StatusCode::OK {
        return Err(res.status());
    }
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    Ok(SseClient { body: res.into_body(), buf: String::new() })
}

impl SseClient {
    /// The next message (comment-only blocks, the keep-alives, are skipped).
    async fn next(&mut self) -> Msg {
        tokio::time::timeout(PATIENCE, self.read()).await.expect("no SSE message")
    }

    async fn read(&mut self) -> Msg {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                let mut msg = Msg::default();
                let mut fields = false;
                for line in block.lines() {
                    let field = |name: &str| {
                        line.strip_prefix(name).map(|v| v.strip_prefix(' ').unwrap_or(v).to_owned())
                    };
                    if let Some(v) = field("id:") {
                        msg.id = Some(v);
                    } else if let Some(v) = field("event:") {
                        msg.event = v;
                    } else if let Some(v) = field("data:") {
                        msg.data.push_str(&v);
                    } else {
                        assert!(line.is_empty() || line.starts_with(':'), "SSE line {line:?}");
                        continue;
                    }
                    fields = true;
                }
                if fields {
                    return msg;
                }
                continue;
            }
            let frame = self.body.frame().await.expect("the stream ended").unwrap();
            if let Ok(data) = frame.into_data() {
                self.buf.push_str(std::str::from_utf8(&data).unwrap());
            }
        }
    }
}

fn ids(events: &[Value]) -> Vec<String> {
    events.iter().map(|e| s(e, "id").to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_streams_events_and_resumes_after_last_event_id() {
    let config = HubConfig { heartbeat: Duration::ZERO, ..config() };
    let hub = Hub::open(Arc::new(SqliteStorage::in_memory().unwrap()), config).await.unwrap();
    let server = serve(hub.clone()).await;
    let storage = hub.storage();

    // Live: a client connected before the run gets its events, exactly as stored.
    let mut first = sse(server.addr, "/cookwala/v1/events", None).await.unwrap();
    start(&hub, "ex-sse-1", "red-lentil-soup").await;
    hub.advance(120_000).await.unwrap();
    let seen = storage.events_after(0, 1000).unwrap();
    assert!(seen.len() >= 3, "{seen:?}");
    for row in &seen {
        let msg = first.next().await;
        assert_eq!(msg.id.as_deref(), Some(row.id.as_str()));
        assert_eq!(msg.event, row.ty);
        assert_eq!(msg.data, row.body);
    }
    let last_seen = seen.last().unwrap().id.clone();
    drop(first);

    // Disconnected while the run ends; a reconnect with Last-Event-ID gets exactly the rest.
    run_to_end(&hub, "ex-sse-1").await;
    let all = outbox(&*storage);
    let missed = &all[seen.len()..];
    assert!(!missed.is_empty());
    let mut again = sse(server.addr, "/v1/events", Some(&last_seen)).await.unwrap();
    for e in missed {
        assert_eq!(again.next().await.id.as_deref(), Some(s(e, "id")));
    }
    // Then live: a heartbeat (no id: it is not stored), then the next stored event, no repeats.
    hub.heartbeat().await;
    let hb = again.next().await;
    assert_eq!((hb.id, hb.event.as_str()), (None, "cookwala.device.heartbeat"));
    start(&hub, "ex-sse-2", "vegetable-stock").await;
    let next = again.next().await;
    assert_eq!(next.id.as_deref(), Some("ex-sse-2/0/execution.accepted"));
    assert_eq!(next.event, "cookwala.execution.accepted");

    // Filters, resuming from the first event.
    let first_id = s(&all[0], "id").to_owned();
    let path = format!("/v1/events?type=cookwala.execution.completed&after={first_id}");
    let mut completed = sse(server.addr, &path, None).await.unwrap();
    assert_eq!(completed.next().await.id.unwrap(), s(all.last().unwrap(), "id"));
    let path = format!("/v1/events?subject=ex-sse-2&after={first_id}");
    let mut other = sse(server.addr, &path, None).await.unwrap();
    assert_eq!(other.next().await.id.as_deref(), Some("ex-sse-2/0/execution.accepted"));
    assert_eq!(
        sse(server.addr, "/v1/events", Some("ex-sse-1/999/nope")).await.err(),
        Some(StatusCode::BAD_REQUEST)
    );

    // Shutdown ends the open streams instead of waiting for the clients.
    server.shut_down().await;
    drop((again, completed, other));
}

/// A webhook receiver: fails the first `fail_first` attempts, refuses while `refuse` is set,
/// records what it accepts.
#[derive(Default)]
struct Receiver {
    fail_first: AtomicUsize,
    refuse: AtomicBool,
    attempts: AtomicUsize,
    got: Mutex<Vec<(HeaderMap, Bytes)>>,
}

async fn receive(State(r): State<Arc<Receiver>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    r.attempts.fetch_add(1, Ordering::SeqCst);
    if r.fail_first.load(Ordering::SeqCst) > 0 {
        r.fail_first.fetch_sub(1, Ordering::SeqCst);
        return StatusCode::INTERNAL_SERVER_ERROR;
    }
    if r.refuse.load(Ordering::SeqCst) {
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    r.got.lock().unwrap().push((headers, body));
    StatusCode::NO_CONTENT
}

async fn receiver() -> (Arc<Receiver>, SocketAddr) {
    let r = Arc::new(Receiver::default());
    let app =
        axum::Router::new().route("/hook", axum::routing::post(receive)).with_state(r.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (r, addr)
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let waited = tokio::time::timeout(PATIENCE, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "gave up waiting for {what}");
}

const SECRET: &str = "webhook-test-secret";

fn webhook_config(url: &str, give_up_after: Duration) -> HubConfig {
    HubConfig {
        webhooks: vec![Webhook { url: url.to_owned(), secret: SECRET.to_owned() }],
        webhook_policy: WebhookPolicy {
            first_retry: Duration::from_millis(5),
            max_retry: Duration::from_millis(40),
            give_up_after,
            timeout: Duration::from_secs(30),
        },
        heartbeat: Duration::ZERO,
        ..config()
    }
}

async fn open(path: &Path, config: HubConfig) -> Hub {
    Hub::open(Arc::new(SqliteStorage::open(path).unwrap()), config).await.unwrap()
}

fn delivered_ids(r: &Receiver) -> Vec<String> {
    r.got.lock().unwrap().iter().map(|(h, _)| h["ce-id"].to_str().unwrap().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_get_every_event_in_order_signed_across_failures_and_a_restart() {
    let (rx, raddr) = receiver().await;
    let url = format!("http://{raddr}/hook");
    let config = webhook_config(&url, Duration::from_secs(3600));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.sqlite3");

    // 1. The receiver fails the first three attempts; every event still arrives, in order.
    rx.fail_first.store(3, Ordering::SeqCst);
    let hub = open(&path, config.clone()).await;
    let server = serve(hub.clone()).await;
    start(&hub, "ex-wh-1", "red-lentil-soup").await;
    run_to_end(&hub, "ex-wh-1").await;
    let stored = hub.storage().events_after(0, 10_000).unwrap();
    wait_for("the first run's events", || rx.got.lock().unwrap().len() >= stored.len()).await;
    {
        let got = rx.got.lock().unwrap();
        assert_eq!(got.len(), stored.len());
        for ((headers, body), row) in got.iter().zip(&stored) {
            assert_eq!(body.as_ref(), row.body.as_bytes());
            assert_eq!(headers["ce-id"], row.id.as_str());
            assert_eq!(headers["content-type"], "application/cloudevents+json");
            let mac = cookwala_hub::webhooks::hmac_sha256(SECRET.as_bytes(), body);
            let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(headers["x-cookwala-signature"], format!("sha256={hex}").as_str());
        }
    }
    assert_eq!(rx.attempts.load(Ordering::SeqCst), stored.len() + 3);
    let delivered = stored.len();

    // 2. The receiver goes down; a new run's events wait; the hub stops.
    rx.refuse.store(true, Ordering::SeqCst);
    start(&hub, "ex-wh-2", "vegetable-stock").await;
    hub.advance(120_000).await.unwrap();
    let tried = delivered + 3;
    wait_for("a refused attempt", || rx.attempts.load(Ordering::SeqCst) > tried).await;
    server.shut_down().await;
    let cursor = hub.storage().webhook_cursor(&url).unwrap();
    assert_eq!(cursor, Some(stored.last().unwrap().position));

    // The shutdown stopped the execution itself (more events, not yet delivered).
    let rec = hub.storage().execution("ex-wh-2").unwrap().unwrap();
    assert_eq!((rec.state.as_str(), rec.is_final), ("stopped", true));
    drop(hub);

    // 3. A new process on the same file: nothing is left to recover, the receiver is back,
    // and delivery resumes after the cursor: nothing lost, nothing repeated.
    let hub = open(&path, config).await;
    assert!(hub.recovered().is_empty());
    rx.refuse.store(false, Ordering::SeqCst);
    let server = serve(hub.clone()).await;
    let all = outbox(&*hub.storage());
    assert!(all.len() > delivered);
    wait_for("every event", || rx.got.lock().unwrap().len() >= all.len()).await;
    assert_eq!(delivered_ids(&rx), ids(&all));
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_gives_up_on_an_event_after_its_window_and_moves_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.sqlite3");
    // Events from before the webhook was configured are not sent to it.
    {
        let hub = open(&path, config()).await;
        start(&hub, "ex-dl-0", "vegetable-stock").await;
        run_to_end(&hub, "ex-dl-0").await;
    }
    // Nothing listens on this port any more: every attempt fails.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let url = format!("http://{dead}/hook");
    let hub = open(&path, webhook_config(&url, Duration::ZERO)).await;
    let storage = hub.storage();
    let before = storage.last_event_position().unwrap();
    assert!(before > 0);
    assert_eq!(storage.webhook_cursor(&url).unwrap(), Some(before));
    let tasks = hub.spawn_webhooks();
    assert_eq!(tasks.len(), 1);
    start(&hub, "ex-dl-1", "red-lentil-soup").await;
    hub.advance(120_000).await.unwrap();
    let last = storage.last_event_position().unwrap();
    let s2 = storage.clone();
    wait_for("the cursor to pass every event", move || {
        s2.webhook_cursor(&url).unwrap() == Some(last)
    })
    .await;
    for t in tasks {
        t.abort();
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    let dead: i64 =
        conn.query_row("SELECT COUNT(*) FROM webhook_dead_letters", [], |r| r.get(0)).unwrap();
    let expected = storage.events_after(before, 10_000).unwrap().len();
    assert_eq!(usize::try_from(dead).unwrap(), expected);
}

/// An HTTPS receiver with a certificate for `localhost` from its own CA-less self-signed key:
/// records each body it gets and answers 204. Returns the bodies, its port and the
/// certificate (DER) a client must trust.
async fn tls_receiver() -> (Arc<Mutex<Vec<String>>>, Arc<AtomicUsize>, u16, Vec<u8>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::rustls;
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert_der = certified.cert.der().to_vec();
    let key_der =
        rustls::pki_types::PrivateKeyDer::try_from(certified.signing_key.serialize_der()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![rustls::pki_types::CertificateDer::from(cert_der.clone())], key_der)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let got = Arc::new(Mutex::new(Vec::new()));
    let connections = Arc::new(AtomicUsize::new(0));
    let (sink, seen) = (got.clone(), connections.clone());
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            seen.fetch_add(1, Ordering::SeqCst);
            let (acceptor, sink) = (acceptor.clone(), sink.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let n = tls.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).into_owned();
                    let Some((head, body)) = text.split_once("\r\n\r\n") else { continue };
                    let len: usize = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap())
                        })
                        .unwrap_or(0);
                    if body.len() < len {
                        continue;
                    }
                    sink.lock().unwrap().push(body.to_owned());
                    let _ = tls
                        .write_all(b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n")
                        .await;
                    let _ = tls.shutdown().await;
                    return;
                }
            });
        }
    });
    (got, connections, port, cert_der)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_webhooks_are_delivered_over_tls_to_a_trusted_receiver_only() {
    let (got, connections, port, cert) = tls_receiver().await;
    let url = format!("https://localhost:{port}/hook");
    let dir = tempfile::tempdir().unwrap();
    // Trusted through --webhook-ca: every event arrives, in order.
    let config = HubConfig {
        webhook_roots: vec![cert.clone()],
        ..webhook_config(&url, Duration::from_secs(3600))
    };
    let hub = open(&dir.path().join("a.sqlite3"), config).await;
    let tasks = hub.spawn_webhooks();
    start(&hub, "ex-tls-1", "red-lentil-soup").await;
    run_to_end(&hub, "ex-tls-1").await;
    let want = ids(&outbox(&*hub.storage()));
    wait_for("every event over TLS", || got.lock().unwrap().len() >= want.len()).await;
    let bodies = got.lock().unwrap().clone();
    let ids_got: Vec<String> = bodies
        .iter()
        .map(|b| {
            canonical_json::parse(b.as_bytes())
                .unwrap()
                .get("id")
                .and_then(Value::as_str)
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(ids_got, want);
    for t in tasks {
        t.abort();
    }

    // Without the receiver's certificate among the roots, nothing is sent in clear or
    // delivered: the attempt fails and is retried.
    let before = got.lock().unwrap().len();
    let tried = connections.load(Ordering::SeqCst);
    let hub =
        open(&dir.path().join("b.sqlite3"), webhook_config(&url, Duration::from_secs(3600))).await;
    let tasks = hub.spawn_webhooks();
    start(&hub, "ex-tls-2", "red-lentil-soup").await;
    wait_for("attempts to the untrusted receiver", || {
        connections.load(Ordering::SeqCst) >= tried + 2
    })
    .await;
    assert_eq!(got.lock().unwrap().len(), before);
    for t in tasks {
        t.abort();
    }
}
