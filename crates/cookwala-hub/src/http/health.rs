//! The operators' endpoints: `GET /healthz` (the process answers), `GET /readyz` (it can
//! serve: the store answers; on a shared store its leases are renewed; with a broker, MQTT is
//! connected) — both open, for a load balancer or systemd — and `GET /metrics`, the
//! Prometheus text, with a token that may read. Plus the layer that counts every routed
//! request by route, method and status.

use std::time::Instant;

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use canonical_json::{Map, Value};

use crate::http::authorize;
use crate::http::error::ApiError;
use crate::service::Hub;

/// `/healthz`, `/readyz` and `/metrics`.
pub(super) fn routes() -> Router<Hub> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
}

/// The operators' listener: the same three, `/metrics` without a token.
pub(super) fn operator_routes() -> Router<Hub> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(open_metrics))
}

/// A small JSON answer that no cache keeps.
fn json(status: StatusCode, body: &Value) -> Response {
    let mut res = crate::http::json_response(status, body);
    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

/// `GET /healthz`: 200 `{"status":"ok","version":…}` while the process answers.
async fn healthz() -> Response {
    let mut m = Map::new();
    m.insert("status".into(), "ok".into());
    m.insert("version".into(), env!("CARGO_PKG_VERSION").into());
    json(StatusCode::OK, &Value::Object(m))
}

/// `GET /readyz`: 200 when every check passes, 503 otherwise:
/// `{"ready":bool,"checks":{"store":"ok",…}}`.
async fn readyz(State(hub): State<Hub>) -> Response {
    let r = hub.readiness().await;
    let mut checks = Map::new();
    for (name, outcome) in r.checks {
        checks.insert(name.into(), outcome.into());
    }
    let mut m = Map::new();
    m.insert("ready".into(), r.ready.into());
    m.insert("checks".into(), Value::Object(checks));
    let status = if r.ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    json(status, &Value::Object(m))
}

/// `GET /metrics` (a token that may read): the Prometheus text.
async fn metrics(State(hub): State<Hub>, headers: HeaderMap) -> Result<Response, ApiError> {
    authorize(&hub, &headers)?;
    Ok(open_metrics(State(hub)).await)
}

/// `GET /metrics` on the operators' listener.
async fn open_metrics(State(hub): State<Hub>) -> Response {
    let text = hub.metrics_text().await;
    let mut res = (StatusCode::OK, text).into_response();
    res.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(crate::metrics::CONTENT_TYPE));
    res
}

/// The request's `X-Request-Id` when it is one we can log (1 to 128 characters of
/// `A-Za-z0-9._:-`), else (when `generate`) a new one: the process's start time and a
/// counter, in hex.
fn request_id(headers: &HeaderMap, generate: bool) -> Option<String> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    static BOOT: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    let given = headers.get("x-request-id").and_then(|v| v.to_str().ok()).filter(|v| {
        (1..=128).contains(&v.len())
            && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b))
    });
    match given {
        Some(id) => Some(id.to_owned()),
        None if generate => {
            let boot = *BOOT.get_or_init(crate::clock::unix_ms);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Some(format!("{boot:x}-{n:x}"))
        }
        None => None,
    }
}

/// The path parameter a route pattern names `{name}` (the execution id, the device).
fn param<'a>(route: &str, path: &'a str, name: &str) -> Option<&'a str> {
    let at = route.split('/').position(|seg| seg == name)?;
    path.split('/').nth(at).filter(|v| !v.is_empty())
}

/// What a routed request is counted and logged with, read before it runs.
struct Seen {
    metrics: std::sync::Arc<crate::metrics::Metrics>,
    route: std::sync::Arc<str>,
    method: axum::http::Method,
    id: Option<String>,
    /// The path, kept only when a log writer wants the request's line.
    path: Option<String>,
    began: Instant,
}

/// Counts each routed request (`cookwala_http_requests_total`) and its latency to the
/// answer's head (`cookwala_http_request_duration_seconds`), by the router's pattern, never
/// the raw path; echoes a request id (the client's `X-Request-Id`, or a new one when a log
/// writer is installed) in `X-Request-Id`; and logs the request as an event of target
/// `cookwala_hub::http` with the execution and device it names. No header but the request
/// id, no query and no body is logged: a token cannot reach a log line this way.
///
/// A tower layer rather than `axum::middleware::from_fn`: it runs on every request, and
/// `from_fn` boxes a future and clones the inner service each time (a few µs on the cheapest
/// GETs, measured with `bench/hub.sh`); this one wraps the inner future in place.
#[derive(Clone)]
pub(super) struct CountLayer(pub std::sync::Arc<crate::metrics::Metrics>);

impl<S> tower::Layer<S> for CountLayer {
    type Service = Count<S>;
    fn layer(&self, inner: S) -> Count<S> {
        Count { inner, metrics: self.0.clone() }
    }
}

/// See [`CountLayer`].
#[derive(Clone)]
pub(super) struct Count<S> {
    inner: S,
    metrics: std::sync::Arc<crate::metrics::Metrics>,
}

impl<S> tower::Service<Request> for Count<S>
where
    S: tower::Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future = Counted<S::Future>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let route: std::sync::Arc<str> = req
            .extensions()
            .get::<MatchedPath>()
            .map_or_else(|| "unmatched".into(), |p| p.as_str().into());
        let logged = tracing::enabled!(target: "cookwala_hub::http", tracing::Level::INFO);
        let seen = Seen {
            metrics: self.metrics.clone(),
            route,
            method: req.method().clone(),
            id: request_id(req.headers(), logged),
            path: logged.then(|| req.uri().path().to_owned()),
            began: Instant::now(),
        };
        Counted { inner: self.inner.call(req), seen: Some(seen) }
    }
}

pin_project_lite::pin_project! {
    /// The inner future, then the count, the header and the log line.
    pub(super) struct Counted<F> {
        #[pin]
        inner: F,
        seen: Option<Seen>,
    }
}

impl<F, E> std::future::Future for Counted<F>
where
    F: std::future::Future<Output = Result<Response, E>>,
{
    type Output = Result<Response, E>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = self.project();
        let mut res = match this.inner.poll(cx) {
            std::task::Poll::Pending => return std::task::Poll::Pending,
            std::task::Poll::Ready(Err(e)) => return std::task::Poll::Ready(Err(e)),
            std::task::Poll::Ready(Ok(res)) => res,
        };
        if let Some(seen) = this.seen.take() {
            finish(seen, &mut res);
        }
        std::task::Poll::Ready(Ok(res))
    }
}

/// Counts, answers the request id, and logs.
fn finish(seen: Seen, res: &mut Response) {
    let Seen { metrics, route, method, id, path, began } = seen;
    let seconds = began.elapsed().as_secs_f64();
    let status = res.status().as_u16();
    metrics.request(&route, method.as_str(), status, seconds);
    if let Some(v) = id.as_deref().and_then(|id| HeaderValue::from_str(id).ok()) {
        res.headers_mut().insert("x-request-id", v);
    }
    let (Some(path), Some(id)) = (path, id) else { return };
    let route = &*route;
    tracing::info!(
        target: "cookwala_hub::http",
        request_id = %id,
        method = method.as_str(),
        route = %route,
        status,
        duration_ms = seconds * 1000.0,
        execution = if route.contains("/executions/{id}") {
            param(route, &path, "{id}").unwrap_or_default()
        } else {
            ""
        },
        device = param(route, &path, "{device}").unwrap_or_default(),
        "request"
    );
}
