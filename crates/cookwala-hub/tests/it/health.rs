//! The operators' endpoints: `/healthz`, `/readyz`, and `/metrics` scraped by a real
//! Prometheus (Debian's `prometheus`, started here on a free loopback port; a failure under CI
//! when it is missing, a notice outside).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use cookwala_hub::{app, serve};

use crate::support::*;

fn get_with(path: &str, token: Option<&str>) -> axum::http::Request<axum::body::Body> {
    let mut b = axum::http::Request::get(path);
    if let Some(t) = token {
        b = b.header("authorization", format!("Bearer {t}"));
    }
    b.body(axum::body::Body::empty()).unwrap()
}

#[tokio::test]
async fn health_is_open_readiness_checks_the_store_and_metrics_need_a_token() {
    let hub = hub_in_memory().await;
    let app = app(hub.clone());
    let health = call(&app, get_with("/healthz", None)).await;
    assert_eq!(health.status, StatusCode::OK);
    assert_eq!(health.str("status"), "ok");
    let ready = call(&app, get_with("/readyz", None)).await;
    assert_eq!(ready.status, StatusCode::OK, "{:?}", ready.body);
    assert_eq!(ready.body.pointer("/checks/store").and_then(|v| v.as_str()), Some("ok"));
    assert_eq!(ready.headers["cache-control"], "no-store");
    // Metrics are not for anyone.
    assert_eq!(call(&app, get_with("/metrics", None)).await.status, StatusCode::UNAUTHORIZED);

    // One accepted (run to its end), one refused busy... then the counters say so.
    let soup = request("ex-m-1", "red-lentil-soup", false);
    let a = call(&app, post("/v1/executions", Some("key-m-000001"), &soup)).await;
    assert_eq!(a.str("state"), "accepted");
    let busy = request("ex-m-2", "red-lentil-soup", false);
    let b = call(&app, post("/v1/executions", Some("key-m-000002"), &busy)).await;
    assert_eq!(b.str("state"), "refused");
    hub.advance(6 * 3_600_000).await.unwrap();
    // A path no route matches, and a method a route does not take.
    assert_eq!(call(&app, get_with("/no/such/path", None)).await.status, StatusCode::NOT_FOUND);
    let wrong = call(&app, post("/healthz", None, "{}")).await;
    assert_eq!(wrong.status, StatusCode::METHOD_NOT_ALLOWED);
    let m = call(&app, get_with("/metrics", Some(TOKEN))).await;
    assert_eq!(m.status, StatusCode::OK);
    assert!(m.content_type().starts_with("application/openmetrics-text"), "{}", m.content_type());
    let text = String::from_utf8(m.raw.to_vec()).unwrap();
    for needle in [
        "cookwala_executions_started_total{device=\"sim-hob-robot\"} 1",
        "cookwala_executions_refused_total{reason=\"busy\"} 1",
        "cookwala_executions_ended_total{state=\"completed\"} 1",
        "cookwala_executions_active 0",
        "cookwala_devices 3",
        "cookwala_http_requests_total{route=\"/v1/executions\",method=\"POST\",status=\"202\"} 2",
        "cookwala_http_request_duration_seconds_count{route=\"/healthz\",method=\"GET\"} 1",
        "cookwala_http_requests_total{route=\"unmatched\",method=\"GET\",status=\"404\"} 1",
        "cookwala_http_requests_total{route=\"/healthz\",method=\"POST\",status=\"405\"} 1",
        "cookwala_store_commit_duration_seconds_count",
    ] {
        assert!(text.contains(needle), "{needle} missing from\n{text}");
    }
    // No token, no request body in the exposition.
    assert!(!text.contains(TOKEN));
    assert!(!text.contains("ex-m-1"));
}

fn prometheus() -> Option<PathBuf> {
    let bin = PathBuf::from("/usr/bin/prometheus");
    if bin.exists() {
        return Some(bin);
    }
    assert!(
        !test_support::in_ci(),
        "CI=true but prometheus is not installed (.ci/run installs the Debian package)"
    );
    eprintln!("notice: prometheus not installed (apt-get install prometheus); skipping");
    None
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A Prometheus of our own; killed when dropped.
struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET path` on loopback `port`; the body.
fn http_get(port: u16, path: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out.split_once("\r\n\r\n")?.1.to_owned())
}

/// The value of an instant query's single series (`None` until it has one).
fn query(port: u16, promql: &str) -> Option<f64> {
    let mut q = String::new();
    for b in promql.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' {
            q.push(b as char);
        } else {
            q.push_str(&format!("%{b:02X}"));
        }
    }
    let body = http_get(port, &format!("/api/v1/query?query={q}"))?;
    // The body may be chunked: the JSON object is between the first `{` and the last `}`.
    let json = body.get(body.find('{')?..=body.rfind('}')?)?;
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let result = v.pointer("/data/result")?.as_array()?;
    let first = result.first()?;
    first.pointer("/value/1")?.as_str()?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_prometheus_scrapes_the_counts_of_executions_and_requests() {
    let Some(bin) = prometheus() else { return };
    let hub = hub_in_memory().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hub_port = listener.local_addr().unwrap().port();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(hub.clone(), listener, async {
        let _ = rx.await;
    }));

    // Two executions run to their end, one refused busy between them.
    let app = app(hub.clone());
    for (i, id) in ["ex-p-1", "ex-p-2"].iter().enumerate() {
        let body = request(id, "red-lentil-soup", false);
        let key = format!("key-p-{i:06}");
        assert_eq!(
            call(&app, post("/v1/executions", Some(&key), &body)).await.str("state"),
            "accepted"
        );
        if i == 0 {
            let busy = request("ex-p-busy", "red-lentil-soup", false);
            let b = call(&app, post("/v1/executions", Some("key-p-busy01"), &busy)).await;
            assert_eq!(b.str("state"), "refused");
        }
        hub.advance(6 * 3_600_000).await.unwrap();
    }

    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: cookwala\n    \
         authorization:\n      credentials: {TOKEN}\n    static_configs:\n      - targets: ['127.0.0.1:{hub_port}']\n"
    );
    std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
    let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
    let child = Command::new(bin)
        .arg(format!("--config.file={}", dir.path().join("prometheus.yml").display()))
        .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let prom = Prometheus { child, port, _dir: dir };

    let found = tokio::task::spawn_blocking(move || {
        let wanted = [
            ("sum(cookwala_executions_started_total)", 2.0),
            ("cookwala_executions_ended_total{state=\"completed\"}", 2.0),
            ("cookwala_executions_refused_total{reason=\"busy\"}", 1.0),
            (
                "sum(cookwala_http_request_duration_seconds_count{route=\"/v1/executions\",method=\"POST\"})",
                3.0,
            ),
            ("up{job=\"cookwala\"}", 1.0),
        ];
        let deadline = Instant::now() + Duration::from_secs(90);
        let mut seen = Vec::new();
        while Instant::now() < deadline {
            seen = wanted.iter().map(|(q, _)| query(prom.port, q)).collect::<Vec<_>>();
            if seen.iter().zip(&wanted).all(|(got, (_, want))| *got == Some(*want)) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        let log = std::fs::read_to_string(prom._dir.path().join("prometheus.log"))
            .unwrap_or_default();
        let tail: String =
            log.lines().rev().take(15).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
        Err(format!("wanted {wanted:?}, Prometheus answered {seen:?}; its log ends:\n{tail}"))
    })
    .await
    .unwrap();
    tx.send(()).unwrap();
    server.await.unwrap().unwrap();
    if let Err(why) = found {
        panic!("{why}");
    }
}
