//! The operators' endpoints: `GET /healthz` (the process answers), `GET /readyz` (it can
//! serve: the store answers; on a shared store its leases are renewed; with a broker, MQTT is
//! connected) — both open, for a load balancer or systemd — and `GET /metrics`, the
//! Prometheus text, with a token that may read. Plus the layer that counts every routed
//! request by route, method and status.

use std::time::Instant;

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
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
    let text = hub.metrics_text().await;
    let mut res = (StatusCode::OK, text).into_response();
    res.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(crate::metrics::CONTENT_TYPE));
    Ok(res)
}

/// Counts each routed request (`cookwala_http_requests_total`) and its latency to the
/// answer's head (`cookwala_http_request_duration_seconds`), by the router's pattern, never
/// the raw path.
pub(super) async fn count(State(hub): State<Hub>, req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = req.method().as_str().to_owned();
    let began = Instant::now();
    let res = next.run(req).await;
    hub.metrics().request(&route, &method, res.status().as_u16(), began.elapsed().as_secs_f64());
    res
}
