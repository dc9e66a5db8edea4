//! The kitchen dashboard: one HTML page (`dashboard/index.html`, with its style and script in
//! `dashboard/dashboard.css` and `dashboard/dashboard.js`, all embedded in the binary) served
//! at `GET /` to clients that ask for `text/html`, and the two read-only endpoints it needs
//! beside Core's.
//!
//! - `GET /` with `Accept: text/html`: the page (no CDN, no fonts: it works offline, and its
//!   `Content-Security-Policy` lets it reach nothing but the hub). Every other `Accept` gets
//!   the JSON index as before (`crate::http::tools`).
//! - `GET /dashboard.css`, `GET /dashboard.js`: its style and script, served as files so the
//!   policy allows scripts and styles from `'self'` only, never inline ones: markup that ever
//!   slipped into the page (an execution id, a device name) could not run.
//! - `GET /v1/executions[?limit=N]` (bearer, read): the executions the hub knows, newest first,
//!   at most `limit` (default 50, at most 200): `{executions: [{id, device, state, seq,
//!   updatedAt, createdAt, recipe?, humanNeeded?, event}]}`. It is read from the newest part
//!   of the event outbox (the `accepted`/`refused` event of each execution; `event` is its id,
//!   from which `GET /cookwala/v1/events?after=` replays), looking back at most
//!   `MAX_SCAN` (16,384) events, plus every live execution however old.
//! - `GET /v1/executions/{id}/trace[?from=N]` (bearer, read): a live execution's readings
//!   against each step's envelope band (the data of `cookwala cook --plot`): `{id, device,
//!   state, seq, sensors, steps: [{node, op, startMs, endMs, bandC?, targetC?, medium?}],
//!   points: [[t, series, value]], next}`, the points from index `from` on (`next` is where
//!   the next call starts). 404 once the execution has ended: its log is then at
//!   `GET /v1/executions/{id}/log`.
//!
//! Both are open to any token that may read, and change nothing.

use std::collections::{HashMap, HashSet};

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use canonical_json::{Map, Value};

use crate::http::error::ApiError;
use crate::http::tools::index;
use crate::http::{authorize, json_response};
use crate::service::Hub;
use crate::storage::StoredEvent;

/// The page, embedded at build time.
pub const PAGE: &str = include_str!("dashboard/index.html");

/// The page's style sheet.
pub const STYLE: &str = include_str!("dashboard/dashboard.css");

/// The page's script.
pub const SCRIPT: &str = include_str!("dashboard/dashboard.js");

/// The default and the largest `limit` of `GET /v1/executions`.
const DEFAULT_LIMIT: usize = 50;
const MAX_LIMIT: usize = 200;

/// What the page may load: only the hub itself, and no inline script or style.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// The dashboard's API routes (merged into [`crate::http::app`]).
pub(crate) fn routes() -> Router<Hub> {
    Router::new()
        .route("/v1/executions", get(list))
        .route("/v1/executions/{id}/trace", get(trace))
        .route("/dashboard.css", get(|| async { asset(STYLE, "text/css; charset=utf-8") }))
        .route("/dashboard.js", get(|| async { asset(SCRIPT, "text/javascript; charset=utf-8") }))
}

/// The page's style or script, with the same protective headers as the page.
fn asset(text: &'static str, ty: &'static str) -> Response {
    let mut res = (StatusCode::OK, text).into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ty));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    res
}

/// The index at `/` (the page or the JSON index) and `/v1` (the JSON index).
pub(crate) fn index_routes() -> Router<Hub> {
    Router::new().route("/", get(root)).route("/v1", get(index))
}

/// True when the client prefers HTML: its `Accept` names `text/html` (browsers do; `curl` and
/// the SDKs send `*/*` or a JSON type, and keep getting JSON).
pub fn wants_html(headers: &HeaderMap) -> bool {
    headers.get_all(header::ACCEPT).iter().filter_map(|v| v.to_str().ok()).any(|v| {
        v.split(',').any(|part| {
            let mut it = part.split(';');
            let ty = it.next().unwrap_or_default().trim();
            let refused = it.any(|p| matches!(p.trim(), "q=0" | "q=0.0" | "q=0.00" | "q=0.000"));
            ty.eq_ignore_ascii_case("text/html") && !refused
        })
    })
}

/// `GET /`: the page for browsers, the JSON index for everyone else.
pub(crate) async fn root(State(hub): State<Hub>, headers: HeaderMap) -> Response {
    let mut res = if wants_html(&headers) { page() } else { index(State(hub)).await };
    res.headers_mut().insert(header::VARY, HeaderValue::from_static("Accept"));
    res
}

/// The page with headers that keep it to the hub.
pub fn page() -> Response {
    let mut res = (StatusCode::OK, PAGE).into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

#[derive(Debug, Default, serde::Deserialize)]
struct ListQuery {
    limit: Option<String>,
}

#[derive(Debug, Default, serde::Deserialize)]
struct TraceQuery {
    from: Option<String>,
}

#[derive(Debug, serde::Deserialize)]
struct TracePath {
    id: String,
}

/// One row of the list, from an execution's status.
fn row(id: &str, device: &str, status: &Value, created: Option<&StoredEvent>) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), id.into());
    m.insert("device".into(), device.into());
    for key in ["state", "seq", "updatedAt", "humanNeeded", "refusal"] {
        if let Some(v) = status.get(key) {
            m.insert(key.into(), v.clone());
        }
    }
    if let Some(ev) = created {
        m.insert("event".into(), ev.id.as_str().into());
        m.insert("createdAt".into(), cookwala_sim::rfc3339_ms(ev.created_ms).into());
    }
    Value::Object(m)
}

/// The device of an execution-creating event (its `source` `/cookwala/devices/<id>`).
fn device_of(ev: &StoredEvent) -> Option<String> {
    let doc = canonical_json::parse(ev.body.as_bytes()).ok()?;
    let source = doc.get("source")?.as_str()?;
    source.strip_prefix("/cookwala/devices/").map(str::to_owned)
}

/// `GET /v1/executions`.
async fn list(
    State(hub): State<Hub>,
    headers: HeaderMap,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    authorize(&hub, &headers)?;
    let Query(q) = query.map_err(|e| ApiError::bad_request(format!("query: {e}")))?;
    let limit = match q.limit.as_deref() {
        None => DEFAULT_LIMIT,
        Some(text) => match text.parse::<usize>() {
            Ok(n) if (1..=MAX_LIMIT).contains(&n) => n,
            _ => {
                return Err(ApiError::bad_request(format!(
                    "limit must be a whole number from 1 to {MAX_LIMIT}, not {text:?}"
                )));
            }
        },
    };
    // The live executions first (they are the newest or still matter), from memory.
    let live = hub.live_statuses().await;
    let created = hub.recent_created(limit).await?;
    let live_ids: HashSet<String> = live.iter().map(|(id, _, _)| id.clone()).collect();
    let stored_ids: Vec<String> = created
        .iter()
        .filter(|ev| !live_ids.contains(&ev.subject))
        .map(|ev| ev.subject.clone())
        .collect();
    let stored = hub.stored_statuses(stored_ids).await?;
    let by_subject: HashMap<&str, &StoredEvent> =
        created.iter().map(|ev| (ev.subject.as_str(), ev)).collect();
    let mut rows: Vec<Value> = Vec::new();
    let mut seen = HashSet::new();
    // Newest first: the order of the outbox, with live executions older than the window in
    // front of them.
    for (id, device, status) in &live {
        if !by_subject.contains_key(id.as_str()) && seen.insert(id.clone()) {
            rows.push(row(id, device, status, None));
        }
    }
    for ev in &created {
        if !seen.insert(ev.subject.clone()) {
            continue;
        }
        let device = device_of(ev).unwrap_or_default();
        if let Some((_, dev, status)) = live.iter().find(|(id, _, _)| *id == ev.subject) {
            rows.push(row(&ev.subject, dev, status, Some(ev)));
        } else if let Some(status) = stored.get(&ev.subject) {
            rows.push(row(&ev.subject, &device, status, Some(ev)));
        }
    }
    rows.truncate(limit);
    let mut body = Map::new();
    body.insert("executions".into(), Value::Array(rows));
    Ok(json_response(StatusCode::OK, &Value::Object(body)))
}

/// `GET /v1/executions/{id}/trace`.
async fn trace(
    State(hub): State<Hub>,
    headers: HeaderMap,
    Path(TracePath { id }): Path<TracePath>,
    query: Result<Query<TraceQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    authorize(&hub, &headers)?;
    let Query(q) = query.map_err(|e| ApiError::bad_request(format!("query: {e}")))?;
    let from = match q.from.as_deref() {
        None => 0,
        Some(text) => text.parse::<usize>().map_err(|_| {
            ApiError::bad_request(format!("from must be a whole number, not {text:?}"))
        })?,
    };
    let Some((device, status, mut doc)) = hub.live_trace(&id).await else {
        return Err(ApiError::not_found(format!(
            "execution {id} is not running; once it has ended its log is at \
             /v1/executions/{id}/log"
        )));
    };
    let mut next = 0_usize;
    if let Some(Value::Array(points)) = doc.as_object_mut().and_then(|m| m.get_mut("points")) {
        next = points.len();
        points.drain(..from.min(next));
    }
    if let Some(m) = doc.as_object_mut() {
        m.insert("id".into(), id.as_str().into());
        m.insert("device".into(), device.into());
        for key in ["state", "seq"] {
            if let Some(v) = status.get(key) {
                m.insert(key.into(), v.clone());
            }
        }
        m.insert("next".into(), next.into());
    }
    Ok(json_response(StatusCode::OK, &doc))
}
