//! The kitchen dashboard (`GET /` for browsers): its JSON endpoints through the router, then
//! the page itself in headless Chromium driven over WebDriver (chromedriver), against a port-0
//! hub loaded with the samples' bundle and serving `demo-hob-robot` at the root.
//!
//! The WebDriver client is the few W3C commands the test needs, spoken over a plain loopback
//! TCP connection (`Connection: close`, JSON bodies), so the test adds no dependency. Without
//! `/usr/bin/chromium` and `/usr/bin/chromedriver` (`COOKWALA_CHROMIUM`,
//! `COOKWALA_CHROMEDRIVER` override them) the browser test prints a notice and skips; under CI
//! it fails (`.ci/run` installs Debian's `chromium` and `chromium-driver`). The screenshot is
//! kept at `target/dashboard/screenshot.png`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use canonical_json::Value;
use cookwala_hub::storage::SqliteStorage;
use cookwala_hub::{Catalog, Hub, HubConfig};
use serde_json::{Value as Json, json};

use crate::support::{TOKEN, call, get, hub_in_memory, post, request};

// ---- the JSON side, through the router

#[tokio::test]
async fn root_negotiates_html_for_browsers_and_json_for_clients() {
    let app = cookwala_hub::app(hub_in_memory().await);
    let html = Request::get("/")
        .header("accept", "text/html,application/xhtml+xml,*/*;q=0.8")
        .body(Body::empty())
        .unwrap();
    let page = call(&app, html).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.content_type().starts_with("text/html"), "{}", page.content_type());
    let text = String::from_utf8(page.raw.clone()).unwrap();
    assert!(text.contains("data-testid=\"recalls\""));
    let csp = page.headers.get("content-security-policy").unwrap().to_str().unwrap();
    assert!(csp.contains("default-src 'none'") && csp.contains("connect-src 'self'"), "{csp}");
    // Issue 22: no inline script or style is allowed; they come as files from the hub.
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert!(csp.contains("script-src 'self'") && csp.contains("style-src 'self'"), "{csp}");
    assert!(!text.contains("<script>") && !text.contains("<style"), "inline code on the page");
    let mut everything = text.clone();
    for (path, ty) in [("/dashboard.js", "text/javascript"), ("/dashboard.css", "text/css")] {
        let asset = call(&app, Request::get(path).body(Body::empty()).unwrap()).await;
        assert_eq!(asset.status, StatusCode::OK, "{path}");
        assert!(asset.content_type().starts_with(ty), "{path}: {}", asset.content_type());
        assert_eq!(asset.headers.get("x-content-type-options").unwrap(), "nosniff");
        assert!(text.contains(&format!("\"{path}\"")), "the page does not load {path}");
        everything.push_str(std::str::from_utf8(&asset.raw).unwrap());
    }
    // Nothing the page loads points outside the hub (the SVG namespace is a name, not a load).
    let stripped = everything.replace("http://www.w3.org/2000/svg", "");
    for needle in ["http://", "https://", "//cdn", "@import", "url("] {
        assert!(!stripped.contains(needle), "the page mentions {needle}");
    }
    for accept in [None, Some("*/*"), Some("application/json"), Some("text/html;q=0")] {
        let mut req = Request::get("/");
        if let Some(a) = accept {
            req = req.header("accept", a);
        }
        let index = call(&app, req.body(Body::empty()).unwrap()).await;
        assert_eq!(index.status, StatusCode::OK);
        assert_eq!(index.content_type(), "application/json", "{accept:?}");
        assert!(index.body.get("endpoints").is_some(), "{accept:?}");
        assert_eq!(index.headers.get("vary").unwrap(), "Accept");
    }
}

#[tokio::test]
async fn executions_are_listed_newest_first_with_a_trace_while_live() {
    let hub = hub_in_memory().await;
    let app = cookwala_hub::app(hub.clone());
    let unauth = Request::get("/v1/executions").body(Body::empty()).unwrap();
    assert_eq!(call(&app, unauth).await.status, StatusCode::UNAUTHORIZED);
    let empty = call(&app, get("/v1/executions")).await;
    assert_eq!(empty.status, StatusCode::OK);
    assert_eq!(empty.body.get("executions").and_then(Value::as_array).unwrap().len(), 0);
    for id in ["ex-dash-1", "ex-dash-2"] {
        let started =
            call(&app, post("/v1/executions", Some(id), &request(id, "red-lentil-soup", false)))
                .await;
        assert_eq!(started.status, StatusCode::ACCEPTED, "{:?}", started.body);
        if id == "ex-dash-1" {
            let stop =
                call(&app, post("/v1/executions/ex-dash-1/stop", Some("stop-dash-1"), "{}")).await;
            assert_eq!(stop.status, StatusCode::ACCEPTED);
        }
    }
    hub.advance(60_000).await.unwrap();
    let list = call(&app, get("/v1/executions")).await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(list.content_type(), "application/json");
    let rows = list.body.get("executions").and_then(Value::as_array).unwrap();
    let ids: Vec<&str> = rows.iter().filter_map(|r| r.get("id").and_then(Value::as_str)).collect();
    assert_eq!(ids, ["ex-dash-2", "ex-dash-1"], "{:?}", list.body);
    assert_eq!(rows[1].get("state").and_then(Value::as_str), Some("stopped"));
    assert!(rows[0].get("event").and_then(Value::as_str).unwrap().starts_with("ex-dash-2/"));
    let one = call(&app, get("/v1/executions?limit=1")).await;
    assert_eq!(one.body.get("executions").and_then(Value::as_array).unwrap().len(), 1);
    for bad in ["0", "201", "x"] {
        let r = call(&app, get(&format!("/v1/executions?limit={bad}"))).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}");
    }
    // The trace of the live one: steps with bands, points, and `next` to go on from.
    let trace = call(&app, get("/v1/executions/ex-dash-2/trace")).await;
    assert_eq!(trace.status, StatusCode::OK, "{:?}", trace.body);
    let next = trace.body.get("next").and_then(Value::as_i64).unwrap();
    let points = trace.body.get("points").and_then(Value::as_array).unwrap();
    assert_eq!(usize::try_from(next).unwrap(), points.len());
    let more = call(&app, get(&format!("/v1/executions/ex-dash-2/trace?from={next}"))).await;
    assert_eq!(more.body.get("points").and_then(Value::as_array).unwrap().len(), 0);
    assert!(trace.body.get("steps").and_then(Value::as_array).is_some());
    // An ended execution has no trace (its log says what happened).
    let ended = call(&app, get("/v1/executions/ex-dash-1/trace")).await;
    assert_eq!(ended.status, StatusCode::NOT_FOUND);
}

// ---- the page in a real browser

/// A minimal HTTP/1.1 exchange on a fresh loopback connection: (status, head, body).
fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, String, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let body = body.unwrap_or("");
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    // Read the head, then the body by its length (chromedriver keeps the connection open
    // whatever `Connection: close` says).
    let mut raw = Vec::new();
    let mut buf = [0_u8; 16 * 1024];
    let split = loop {
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "{method} {path}: the connection closed before the head");
        raw.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut rest = raw[split + 4..].to_vec();
    let length = header(&head, "content-length").and_then(|v| v.parse::<usize>().ok());
    let chunked = header(&head, "transfer-encoding").is_some_and(|v| v.contains("chunked"));
    loop {
        let done = match length {
            Some(n) => rest.len() >= n,
            None if chunked => rest.ends_with(b"0\r\n\r\n"),
            None => false,
        };
        if done || method == "HEAD" {
            break;
        }
        let n = s.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        rest.extend_from_slice(&buf[..n]);
    }
    if chunked {
        rest = dechunk(&rest);
    }
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, head, rest)
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = data.windows(2).position(|w| w == b"\r\n") else { return out };
        let size = usize::from_str_radix(std::str::from_utf8(&data[..eol]).unwrap().trim(), 16)
            .unwrap_or(0);
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&data[eol + 2..eol + 2 + size]);
        data = &data[eol + 4 + size..];
    }
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

fn base64_decode(text: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let clean: Vec<u8> =
        text.bytes().filter(|c| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/').collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, c)| acc | (u32::from(val(*c)) << (18 - 6 * i)));
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

/// The W3C element reference key.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A chromedriver process and one browser session in it (both ended on drop).
struct Browser {
    driver: Child,
    addr: SocketAddr,
    session: String,
    profile: tempfile::TempDir,
}

impl Browser {
    fn start(chromium: &str, chromedriver: &str) -> Browser {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not listen on {addr}");
            std::thread::sleep(Duration::from_millis(100));
        }
        let profile = tempfile::tempdir().unwrap();
        let mut browser = Browser { driver, addr, session: String::new(), profile };
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=1280,1200",
            &format!("--user-data-dir={}", browser.profile.path().display()),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
            "goog:loggingPrefs": {"browser": "ALL"},
        }}});
        let value = browser.cmd("POST", "/session", Some(&caps));
        browser.session = value["sessionId"].as_str().unwrap().to_owned();
        browser
    }

    /// One WebDriver command; its `value`.
    fn cmd(&self, method: &str, path: &str, body: Option<&Json>) -> Json {
        let text = body.map(Json::to_string);
        let (status, _, raw) = http(
            self.addr,
            method,
            path,
            &[("Content-Type", "application/json; charset=utf-8")],
            text.as_deref(),
        );
        let reply: Json = serde_json::from_slice(&raw).unwrap();
        assert!(status == 200, "WebDriver {method} {path}: {status} {reply}");
        reply["value"].clone()
    }

    fn at(&self, path: &str) -> String {
        format!("/session/{}{path}", self.session)
    }

    fn goto(&self, url: &str) {
        self.cmd("POST", &self.at("/url"), Some(&json!({"url": url})));
    }

    fn find_all(&self, css: &str) -> Vec<String> {
        let v = self.cmd(
            "POST",
            &self.at("/elements"),
            Some(&json!({"using": "css selector", "value": css})),
        );
        v.as_array()
            .unwrap_or_else(|| panic!("{css}: {v}"))
            .iter()
            .map(|e| e[ELEMENT].as_str().unwrap_or_else(|| panic!("{e}")).to_owned())
            .collect()
    }

    /// Runs `script` in the page; its return value.
    fn js(&self, script: &str) -> Json {
        self.cmd("POST", &self.at("/execute/sync"), Some(&json!({"script": script, "args": []})))
    }

    fn click(&self, element: &str) {
        self.cmd("POST", &self.at(&format!("/element/{element}/click")), Some(&json!({})));
    }

    fn screenshot(&self) -> Vec<u8> {
        base64_decode(self.cmd("GET", &self.at("/screenshot"), None).as_str().unwrap())
    }

    /// The browser's console entries of level SEVERE (chromedriver's log endpoint; empty when
    /// the driver does not offer it).
    fn severe_logs(&self) -> Vec<String> {
        let text = json!({"type": "browser"}).to_string();
        let (status, _, raw) = http(
            self.addr,
            "POST",
            &self.at("/se/log"),
            &[("Content-Type", "application/json")],
            Some(&text),
        );
        if status != 200 {
            eprintln!("notice: chromedriver has no log endpoint ({status})");
            return Vec::new();
        }
        let reply: Json = serde_json::from_slice(&raw).unwrap();
        reply["value"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["level"] == "SEVERE")
            .map(|e| e["message"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// Polls `check` every 100 ms until it answers `Some`, for at most `within`.
    fn wait<T>(
        &self,
        within: Duration,
        what: &str,
        mut check: impl FnMut(&Browser) -> Option<T>,
    ) -> T {
        let deadline = Instant::now() + within;
        loop {
            if let Some(v) = check(self) {
                return v;
            }
            if Instant::now() > deadline {
                let errors = self.js("return window.__cwErrors || []");
                panic!("{what}: not within {within:?} (page errors: {errors})");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `document.querySelector(css)?.getAttribute(name)`.
    fn attr(&self, css: &str, name: &str) -> Option<String> {
        let script = format!(
            "const e = document.querySelector({}); return e ? e.getAttribute({}) : null;",
            Json::from(css),
            Json::from(name)
        );
        self.js(&script).as_str().map(str::to_owned)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                http(self.addr, "DELETE", &format!("/session/{}", self.session), &[], None)
            }));
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// The browser and driver to use, or `None` with a notice (a failure under CI).
fn chromium() -> Option<(String, String)> {
    let pick = |var: &str, default: &str| std::env::var(var).unwrap_or_else(|_| default.to_owned());
    let chromium = pick("COOKWALA_CHROMIUM", "/usr/bin/chromium");
    let driver = pick("COOKWALA_CHROMEDRIVER", "/usr/bin/chromedriver");
    let missing: Vec<&str> = [&chromium, &driver]
        .into_iter()
        .filter(|p| !PathBuf::from(p).is_file())
        .map(String::as_str)
        .collect();
    if missing.is_empty() {
        return Some((chromium, driver));
    }
    assert!(
        !test_support::in_ci(),
        "CI=true but {missing:?} missing: install Debian's chromium and chromium-driver"
    );
    eprintln!("notice: {missing:?} missing; skipping the dashboard browser test");
    None
}

const CORE_STATES: [&str; 10] = [
    "accepted",
    "refused",
    "preparing",
    "running",
    "paused",
    "needs_human",
    "stopping",
    "stopped",
    "completed",
    "failed",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_in_headless_chromium_follows_an_execution_and_stops_it() {
    let Some((chromium, chromedriver)) = chromium() else { return };
    let Some(bundle) = test_support::samples_bundle() else { return };
    let mut catalog = Catalog::builtin();
    catalog.load_bundle(&bundle).unwrap();
    let storage = Arc::new(SqliteStorage::in_memory().unwrap());
    let config = HubConfig {
        speed: 20.0,
        tokens: cookwala_hub::auth::Tokens::owner(TOKEN),
        device_id: "demo-hob-robot".to_owned(),
        catalog,
        ..HubConfig::default()
    };
    let hub = Hub::open(storage, config).await.unwrap();
    crate::support::with_server(hub, move |addr| {
        let origin = format!("http://{addr}");
        let bearer = format!("Bearer {TOKEN}");
        // `GET /` is HTML for a browser.
        let (status, head, _) = http(addr, "GET", "/", &[("Accept", "text/html")], None);
        assert_eq!(status, 200);
        assert!(header(&head, "content-type").unwrap().starts_with("text/html"), "{head}");

        let browser = Browser::start(&chromium, &chromedriver);
        browser.goto(&format!("{origin}/#token={TOKEN}"));
        // The token left the address bar at once (it never goes to the server in a URL).
        let href = browser.js("return location.href");
        assert_eq!(href.as_str(), Some(format!("{origin}/").as_str()));
        let device = "[data-testid=\"device\"][data-device-id=\"demo-hob-robot\"]";
        browser.wait(Duration::from_secs(10), "the demo hob robot's device element", |b| {
            (!b.find_all(device).is_empty()).then_some(())
        });

        // An execution started from outside appears, with a Core state.
        let id = "dash-soup-1";
        let body = request(id, "red-lentil-soup", false);
        let (status, _, raw) = http(
            addr,
            "POST",
            "/v1/executions",
            &[
                ("Authorization", &bearer),
                ("Content-Type", "application/vnd.cookwala+json"),
                ("Idempotency-Key", "dash-soup-1-start"),
            ],
            Some(&body),
        );
        assert_eq!(status, 202, "{}", String::from_utf8_lossy(&raw));
        let started: Json = serde_json::from_slice(&raw).unwrap();
        assert_ne!(started["state"], "refused", "{started}");
        let exec = format!("[data-testid=\"execution\"][data-execution-id=\"{id}\"]");
        let mut seen = Vec::new();
        let first = browser.wait(Duration::from_secs(10), "the execution's element", |b| {
            b.attr(&exec, "data-state")
        });
        assert!(CORE_STATES.contains(&first.as_str()), "{first}");
        seen.push(first);

        // Its chart: a readings line and a band.
        let readings = "[data-testid=\"chart\"] svg polyline[data-readings]";
        let band = "[data-testid=\"chart\"] svg [data-band]";
        browser.wait(Duration::from_secs(20), "the chart's readings and band", |b| {
            if let Some(s) = b.attr(&exec, "data-state")
                && seen.last() != Some(&s)
            {
                seen.push(s);
            }
            (!b.find_all(readings).is_empty() && !b.find_all(band).is_empty()).then_some(())
        });
        // The page follows the hub: the state it shows is the hub's (within a second or two).
        let hub_state = |addr| {
            let (_, _, raw) = http(
                addr,
                "GET",
                &format!("/v1/executions/{id}"),
                &[("Authorization", &bearer)],
                None,
            );
            let v: Json = serde_json::from_slice(&raw).unwrap();
            v["state"].as_str().unwrap().to_owned()
        };
        browser.wait(Duration::from_secs(5), "the page's state to be the hub's", |b| {
            let page = b.attr(&exec, "data-state")?;
            if seen.last() != Some(&page) {
                seen.push(page.clone());
            }
            (page == hub_state(addr)).then_some(())
        });
        assert!(seen.iter().any(|s| s == "running"), "states seen: {seen:?}");
        std::thread::sleep(Duration::from_secs(2));
        let shots = test_support::workspace_root().join("target/dashboard");
        std::fs::create_dir_all(&shots).unwrap();
        std::fs::write(shots.join("screenshot.png"), browser.screenshot()).unwrap();

        // A real click on Stop: the hub reports stopping/stopped within 5 s, the request
        // carried an Idempotency-Key, and the page follows.
        browser.js(
            "window.__cwSent = []; const f = window.fetch; window.fetch = function (u, o) { \
             const h = (o && o.headers) || {}; window.__cwSent.push({url: String(u), \
             method: (o && o.method) || 'GET', key: h['Idempotency-Key'] || null}); \
             return f.apply(this, arguments); }; return true;",
        );
        let stop = browser.find_all(&format!("{exec} [data-testid=\"stop\"]"));
        assert_eq!(stop.len(), 1, "one Stop button in the execution");
        let clicked = Instant::now();
        browser.click(&stop[0]);
        browser.wait(Duration::from_secs(5), "the hub to report stopping or stopped", |_| {
            matches!(hub_state(addr).as_str(), "stopping" | "stopped").then_some(())
        });
        assert!(clicked.elapsed() < Duration::from_secs(5));
        browser.wait(Duration::from_secs(5), "the page to show stopping or stopped", |b| {
            b.attr(&exec, "data-state").filter(|s| s == "stopping" || s == "stopped")
        });
        let sent = browser.js("return window.__cwSent");
        let stop_req = sent
            .as_array()
            .unwrap()
            .iter()
            .find(|r| {
                r["method"] == "POST"
                    && r["url"].as_str().unwrap().ends_with(&format!("/{id}/stop"))
            })
            .unwrap_or_else(|| panic!("no stop request among {sent}"));
        assert!(stop_req["key"].as_str().is_some_and(|k| k.len() >= 8), "{stop_req}");
        browser.wait(Duration::from_secs(5), "the Stop button to go once stopped", |b| {
            let state = b.attr(&exec, "data-state")?;
            (state == "stopped" && b.find_all(&format!("{exec} [data-testid=\"stop\"]")).is_empty())
                .then_some(())
        });
        // The log, once it has ended, and the device no longer busy.
        browser.wait(Duration::from_secs(5), "the log of the stopped execution", |b| {
            (!b.find_all("[data-testid=\"log\"] table").is_empty()).then_some(())
        });
        browser.wait(Duration::from_secs(5), "the device to show idle", |b| {
            b.attr(device, "data-state").filter(|s| s == "idle")
        });
        std::fs::write(shots.join("screenshot-stopped.png"), browser.screenshot()).unwrap();
        // Phone width: one column, the page still whole.
        browser.cmd(
            "POST",
            &browser.at("/window/rect"),
            Some(&json!({"width": 390, "height": 1400})),
        );
        let overflow =
            browser.js("return document.documentElement.scrollWidth - window.innerWidth");
        assert!(overflow.as_i64().unwrap() <= 0, "wider than the phone: {overflow}");
        std::fs::write(shots.join("screenshot-phone.png"), browser.screenshot()).unwrap();

        // Recalls and incidents have their places; no errors; nothing from outside the hub.
        assert!(!browser.find_all("[data-testid=\"recalls\"]").is_empty());
        assert!(!browser.find_all("[data-testid=\"incidents\"]").is_empty());
        let errors = browser.js("return window.__cwErrors");
        assert_eq!(errors, json!([]), "page errors");
        // One 404 is the API's documented answer, not a page error: a trace asked for in the
        // moment the execution ends (between the page's last status and its poll) answers
        // "not running"; the page skips it, but the browser logs every failed load. Seen once
        // in CI; any other console error still fails.
        let severe: Vec<String> = browser
            .severe_logs()
            .into_iter()
            .filter(|line| !(line.contains("/trace?from=") && line.contains("status of 404")))
            .collect();
        assert!(severe.is_empty(), "console errors: {severe:?}");
        let loaded = browser.js("return performance.getEntriesByType('resource').map(e => e.name)");
        for url in loaded.as_array().unwrap() {
            let url = url.as_str().unwrap();
            assert!(url.starts_with(&format!("{origin}/")), "loaded from outside the hub: {url}");
        }
        let weight = http(addr, "GET", "/", &[("Accept", "text/html")], None).2.len();
        eprintln!("notice: dashboard page weight {weight} bytes; states seen {seen:?}");
    })
    .await;
}
