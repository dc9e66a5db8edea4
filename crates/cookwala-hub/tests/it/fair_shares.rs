//! Issue 22's smaller points, through the router, and the connection limits on a real
//! socket: loopback-only Host under `--no-auth`, event streams per principal, strong ETag
//! comparison, short quotes in errors, precise auth messages, bounded anonymous reports, a
//! slow body, a large head, and a stop that gets through a flood of half-sent requests.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use cookwala_hub::storage::{SqliteStorage, Storage};
use cookwala_hub::{ConnLimits, Hub, HubConfig, app};
use tower::ServiceExt;

use crate::auth::{OWNER, VIEWER, as_, tokens, trusted};
use crate::support::*;

async fn open(config: HubConfig) -> Hub {
    let storage: Arc<dyn Storage> = Arc::new(SqliteStorage::in_memory().unwrap());
    Hub::open(storage, config).await.unwrap()
}

fn with_host(host: Option<&str>, path: &str) -> Request<Body> {
    let mut b = Request::get(path);
    if let Some(h) = host {
        b = b.header("host", h);
    }
    b.body(Body::empty()).unwrap()
}

#[tokio::test]
async fn no_auth_answers_only_requests_addressed_to_a_loopback_name() {
    let hub = open(HubConfig { speed: 0.0, no_auth: true, ..HubConfig::default() }).await;
    let app = app(hub);
    let allowed = [
        "localhost",
        "LOCALHOST:7878",
        "localhost.",
        "127.0.0.1",
        "127.0.0.1:7878",
        "127.9.8.7:80",
        "[::1]",
        "[::1]:7878",
    ];
    for host in allowed {
        let r = call(&app, with_host(Some(host), "/v1/capabilities")).await;
        assert_eq!(r.status, StatusCode::OK, "{host}: {:?}", r.body);
    }
    // No Host at all (HTTP/1.0, in-process clients) is not a browser's request.
    assert_eq!(call(&app, with_host(None, "/v1/capabilities")).await.status, StatusCode::OK);
    let refused = [
        "attacker.example",
        "attacker.example:7878",
        "localhost.attacker.example",
        "127.0.0.1.nip.io",
        "10.0.0.1",
        "[::2]:7878",
        "[::1",
        "localhost:notaport",
        "0.0.0.0:7878",
    ];
    for host in refused {
        let r = call(&app, with_host(Some(host), "/v1/capabilities")).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{host}");
        assert_eq!(r.str("title"), "non-loopback-host", "{host}");
        assert!(r.str("detail").contains("DNS rebinding"), "{:?}", r.body);
    }
    // The issue's attack: a foreign Host starting an execution that claims a person.
    let body = request("ex-rebind-1", "red-lentil-soup", true);
    let req = Request::post("/v1/executions")
        .header("host", "attacker.example")
        .header("origin", "http://attacker.example")
        .header("idempotency-key", "rebind-key-01")
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap();
    assert_eq!(call(&app, req).await.status, StatusCode::FORBIDDEN);
    assert_eq!(
        call(&app, with_host(Some("localhost"), "/v1/executions/ex-rebind-1")).await.status,
        StatusCode::NOT_FOUND
    );

    // With tokens, Host is not checked (a token, not the address, is the proof).
    let app = cookwala_hub::app(hub_in_memory().await);
    let r = call(&app, with_host(Some("hub.example"), "/v1/capabilities")).await;
    assert_eq!(r.status, StatusCode::OK);
}

#[tokio::test]
async fn one_token_cannot_hold_every_event_stream_and_an_owner_always_gets_one() {
    let config = HubConfig {
        speed: 0.0,
        tokens: tokens(),
        trusted_keys: trusted(),
        max_streams: 8,
        ..HubConfig::default()
    };
    let app = app(open(config).await);
    let stream = |token: &str| as_(token, "GET", "/v1/events", None, "");
    // A quarter of the places per token: the viewer gets 2, then a 503 naming the rule.
    let mut held = Vec::new();
    for _ in 0..2 {
        let r = app.clone().oneshot(stream(VIEWER)).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        held.push(r);
    }
    let third = call(&app, stream(VIEWER)).await;
    assert_eq!(third.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(third.str("detail").contains("this token holds 2"), "{:?}", third.body);

    // Every place taken (by other principals): an owner holding none still gets one.
    let app = app_with(1).await;
    let viewer = app.clone().oneshot(stream(VIEWER)).await.unwrap();
    assert_eq!(viewer.status(), StatusCode::OK);
    let cook = call(&app, stream(crate::auth::COOK)).await;
    assert_eq!(cook.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(cook.str("detail").contains("--max-streams"), "{:?}", cook.body);
    let owner = app.clone().oneshot(stream(OWNER)).await.unwrap();
    assert_eq!(owner.status(), StatusCode::OK);
    // ... one, not more.
    assert_eq!(call(&app, stream(OWNER)).await.status, StatusCode::SERVICE_UNAVAILABLE);
    drop((viewer, owner, held));

    async fn app_with(max_streams: usize) -> axum::Router {
        let config = HubConfig {
            speed: 0.0,
            tokens: tokens(),
            trusted_keys: trusted(),
            max_streams,
            ..HubConfig::default()
        };
        cookwala_hub::app(open(config).await)
    }
}

#[tokio::test]
async fn if_match_compares_strongly() {
    let app = app(hub_in_memory().await);
    let body = request("ex-etag-1", "red-lentil-soup", false);
    let started = call(&app, post("/v1/executions", Some("etag-key-001"), &body)).await;
    assert_eq!(started.status, StatusCode::ACCEPTED, "{:?}", started.body);
    let seq = started.seq();
    let resume = |tag: String| {
        let mut req = post("/v1/executions/ex-etag-1/resume", Some("etag-key-002"), "");
        req.headers_mut().insert("if-match", tag.parse().unwrap());
        req
    };
    let weak = call(&app, resume(format!("W/\"{seq}\""))).await;
    assert_eq!(weak.status, StatusCode::PRECONDITION_FAILED, "{:?}", weak.body);
    // The strong tag passes the precondition (and meets the state check: not paused).
    let strong = call(&app, resume(format!("\"{seq}\""))).await;
    assert_eq!(strong.status, StatusCode::CONFLICT, "{:?}", strong.body);
}

#[tokio::test]
async fn errors_quote_at_most_a_short_prefix_and_say_what_is_wrong() {
    let app = app(hub_in_memory().await);
    // A 900 kB number (under the body limit) is not echoed back.
    let digits = "7".repeat(900_000);
    for path in ["/v1/tools/hash", "/v1/executions"] {
        let body = format!(r#"{{"doc":{digits}}}"#);
        let r = call(&app, post(path, Some("quote-key-001"), &body)).await;
        assert!(r.status.is_client_error(), "{path}: {}", r.status);
        assert!(r.raw.len() < 2_000, "{path}: a {}-byte answer", r.raw.len());
    }
    // A long device name in the path is quoted short.
    let long = "d".repeat(5_000);
    let r = call(&app, get(&format!("/devices/{long}/v1/capabilities"))).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert!(r.raw.len() < 1_000, "{}", r.raw.len());

    // Bytes that are not UTF-8 in the path: said so, not "no such device".
    let r = call(&app, get("/v1/executions/%ff")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    assert!(r.str("detail").contains("not UTF-8"), "{:?}", r.body);

    // 401s say which of the three cases it is.
    let none = Request::get("/v1/executions/ex-x").body(Body::empty()).unwrap();
    let r = call(&app, none).await;
    assert!(r.str("detail").contains("a bearer token is required"), "{:?}", r.body);
    let wrong = as_("not-the-token-0123456789", "GET", "/v1/executions/ex-x", None, "");
    let r = call(&app, wrong).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.str("detail").contains("not one this hub accepts"), "{:?}", r.body);
    let basic = Request::get("/v1/executions/ex-x")
        .header("authorization", "Basic dXNlcjpwYXNz")
        .body(Body::empty())
        .unwrap();
    let r = call(&app, basic).await;
    assert!(r.str("detail").contains("not a bearer token"), "{:?}", r.body);
}

#[test]
fn a_token_needs_sixteen_non_space_characters() {
    use cookwala_hub::auth::{Tokens, acceptable_token};
    assert!(acceptable_token("0123456789abcdef"));
    assert!(acceptable_token("0123 4567 89ab cdef"));
    assert!(!acceptable_token(&" ".repeat(16)));
    assert!(!acceptable_token("0123456789abcde \t"));
    assert!(!acceptable_token(" 0123456789abcdef"));
    let doc = canonical_json::parse(
        br#"{"tokens":[{"name":"x","role":"owner","token":"                "}]}"#,
    )
    .unwrap();
    let err = Tokens::parse(&doc).unwrap_err().to_string();
    assert!(err.contains("non-space"), "{err}");
}

#[tokio::test]
async fn anonymous_incident_reports_are_bounded_in_their_extensions() {
    let app = app(hub_in_memory().await);
    let report = |extra: &str| {
        format!(
            r#"{{"core":"0.2.0","kind":"IncidentReport","id":"inc-x","date":"2026-11-30",
            "category":"cw.incident.burn","severity":"low","description":"hot handle"{extra}}}"#
        )
    };
    let anonymous = |body: String, key: &str| {
        Request::post("/v1/incidents")
            .header("content-type", "application/json")
            .header("idempotency-key", key)
            .body(Body::from(body))
            .unwrap()
    };
    let small = report(r#","x-note":"the pan was new""#);
    assert_eq!(call(&app, anonymous(small, "inc-key-0001")).await.status, StatusCode::ACCEPTED);
    // 500 kB of x- content (the issue's case), and 3 kB hidden one level down.
    for (i, extra) in [
        format!(r#","x-blob":"{}""#, "a".repeat(500_000)),
        format!(r#","x-vendor":{{"x-deep":"{}"}}"#, "b".repeat(3_000)),
    ]
    .into_iter()
    .enumerate()
    {
        let r = call(&app, anonymous(report(&extra), &format!("inc-key-010{i}"))).await;
        assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE, "{:?}", r.body);
        assert_eq!(r.str("title"), "report-too-large");
    }
    // With a token, the body limit alone applies.
    let big = report(&format!(r#","x-blob":"{}""#, "a".repeat(20_000)));
    let r = call(&app, post("/v1/incidents", Some("inc-key-0200"), &big)).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
}

// ---- on a real socket

/// Serves `config` on a port-0 listener; returns the address, the hub and the stop sender.
async fn serve(config: HubConfig) -> (SocketAddr, Hub, tokio::sync::oneshot::Sender<()>) {
    let hub = open(config).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(cookwala_hub::serve(hub.clone(), listener, async {
        let _ = rx.await;
    }));
    (addr, hub, tx)
}

/// One request on a fresh connection; the whole answer, read to the end (a generous client
/// timeout keeps a broken hub from hanging the test).
fn exchange(addr: SocketAddr, raw: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(raw).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// True once the hub has closed `s` (EOF or reset), read with a generous timeout.
fn closed_by_hub(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut buf = Vec::new();
    match s.read_to_end(&mut buf) {
        Ok(_) => true,
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_gets_through_a_flood_of_half_sent_requests_from_its_own_address() {
    let limits = ConnLimits {
        max_connections: 64,
        max_per_address: 32,
        header_timeout: Duration::from_secs(2),
        ..ConnLimits::default()
    };
    let (addr, hub, stop_server) = serve(HubConfig { connections: limits, ..config() }).await;
    let body = request("ex-flood-1", "red-lentil-soup", false);
    let started = tokio::task::spawn_blocking(move || {
        exchange(
            addr,
            format!(
                "POST /v1/executions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
                 Authorization: Bearer {TOKEN}\r\nIdempotency-Key: flood-key-01\r\n\
                 Content-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
    })
    .await
    .unwrap();
    assert!(started.starts_with("HTTP/1.1 202"), "{started}");
    hub.advance(120_000).await.unwrap();
    let (stopped, mut flood) = tokio::task::spawn_blocking(move || {
        // 300 half-sent heads, five times the whole budget, from the stop's own address.
        let flood: Vec<TcpStream> = (0..300)
            .filter_map(|i| {
                let mut s = TcpStream::connect(addr).ok()?;
                let _ = write!(s, "GET /v1/capabilities?n={i} HTTP/1.1\r\nHost: x\r\n");
                Some(s)
            })
            .collect();
        let stop = b"POST /v1/executions/ex-flood-1/stop HTTP/1.1\r\nHost: x\r\n\
                     Connection: close\r\nContent-Length: 0\r\n\r\n";
        (exchange(addr, stop), flood)
    })
    .await
    .unwrap();
    assert!(stopped.starts_with("HTTP/1.1 202"), "{stopped}");
    assert!(stopped.contains(r#""state":"stopping""#) || stopped.contains(r#""state":"stopped""#));
    // Every half-sent request ends: given way to newer ones, or timed out.
    let all_closed =
        tokio::task::spawn_blocking(move || flood.iter_mut().all(closed_by_hub)).await.unwrap();
    assert!(all_closed);
    let _ = stop_server.send(());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_body_gets_a_408_and_a_large_head_a_431() {
    let limits = ConnLimits {
        body_timeout: Duration::from_secs(1),
        max_header_bytes: 8192,
        ..ConnLimits::default()
    };
    let (addr, _hub, stop_server) = serve(HubConfig { connections: limits, ..config() }).await;
    let (slow, large, fine) = tokio::task::spawn_blocking(move || {
        // Promises 100 bytes, sends 10, then waits.
        let slow = exchange(
            addr,
            format!(
                "POST /v1/tools/hash HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\
                 Content-Length: 100\r\n\r\n{{\"doc\":1,"
            )
            .as_bytes(),
        );
        let large = exchange(
            addr,
            format!(
                "GET /v1/capabilities HTTP/1.1\r\nHost: x\r\nX-Pad: {}\r\n\r\n",
                "p".repeat(9000)
            )
            .as_bytes(),
        );
        let fine = exchange(
            addr,
            b"GET /v1/capabilities HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        );
        (slow, large, fine)
    })
    .await
    .unwrap();
    assert!(slow.starts_with("HTTP/1.1 408"), "{slow}");
    assert!(slow.contains("request-timeout"), "{slow}");
    assert!(large.starts_with("HTTP/1.1 431"), "{large}");
    assert!(fine.starts_with("HTTP/1.1 200"), "{fine}");
    let _ = stop_server.send(());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_running_executions_and_the_event_stream_carries_the_stop() {
    let (addr, hub, stop_server) = serve(config()).await;
    let app = cookwala_hub::app(hub.clone());
    let body = request("ex-down-1", "red-lentil-soup", false);
    let started = call(&app, post("/v1/executions", Some("down-key-001"), &body)).await;
    assert_eq!(started.status, StatusCode::ACCEPTED, "{:?}", started.body);
    hub.advance(120_000).await.unwrap();
    assert_eq!(call(&app, get("/v1/executions/ex-down-1")).await.str("state"), "running");
    // An event stream open from now on, and a half-sent request.
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(stream, "GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\r\n")
        .unwrap();
    let mut half = TcpStream::connect(addr).unwrap();
    write!(half, "GET /v1/capabilities HTTP/1.1\r\nHost: x\r\n").unwrap();
    // The stream is open (its headers arrived) before the shutdown begins.
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200");

    let _ = stop_server.send(());
    let (events, half_closed) = tokio::task::spawn_blocking(move || {
        stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut out = Vec::new();
        let _ = stream.read_to_end(&mut out);
        (String::from_utf8_lossy(&out).into_owned(), closed_by_hub(&mut half))
    })
    .await
    .unwrap();
    assert!(events.contains(r#""state":"stopped""#), "{events}");
    assert!(events.contains("hub shutdown"), "{events}");
    assert!(half_closed);
    let rec = hub.storage().execution("ex-down-1").unwrap().unwrap();
    assert_eq!((rec.state.as_str(), rec.is_final), ("stopped", true));
    assert!(rec.status.contains(r#""heatOn":false"#), "{}", rec.status);
    assert!(rec.log.is_some_and(|l| l.contains("aborted_safe")));
    assert!(hub.storage().unfinished().unwrap().is_empty());
}

/// The WebSocket stream is an adapter over the same subscription as SSE, so at shutdown it too
/// sends the stored stop before its Close frame. (The old WebSocket loop passed this as well,
/// because the stop's commit woke it before the closing flag did; it checked the flag before
/// reading, so events still unread when the flag was set were lost. The subscription always
/// reads what is stored before it ends.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_sends_the_stop_over_the_websocket_before_closing() {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;

    let (addr, hub, stop_server) = serve(config()).await;
    let app = cookwala_hub::app(hub.clone());
    let body = request("ex-down-ws", "red-lentil-soup", false);
    let started = call(&app, post("/v1/executions", Some("down-key-ws1"), &body)).await;
    assert_eq!(started.status, StatusCode::ACCEPTED, "{:?}", started.body);
    hub.advance(120_000).await.unwrap();
    let mut req = format!("ws://{addr}/v1/events/ws").into_client_request().unwrap();
    req.headers_mut().insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    let (mut socket, _) = tokio_tungstenite::connect_async(req).await.unwrap();

    let _ = stop_server.send(());
    let mut texts = String::new();
    let mut closed = false;
    while let Ok(Some(Ok(msg))) = tokio::time::timeout(Duration::from_secs(60), socket.next()).await
    {
        match msg {
            Message::Text(t) => texts.push_str(&t),
            Message::Close(_) => {
                closed = true;
                break;
            }
            _ => {}
        }
    }
    assert!(closed, "the hub closes the socket");
    assert!(texts.contains(r#""state":"stopped""#), "{texts}");
    assert!(texts.contains("hub shutdown"), "{texts}");
}
