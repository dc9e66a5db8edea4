//! The Core HTTP API (`api/core.openapi.yaml`) as an axum router.
//!
//! **Devices.** Every device of the catalog is served. The device-specific Core endpoints
//! (`executions`, `executions/{id}`, `…/stop`, `…/resume`, `…/log`, `safety-limits`,
//! `capabilities`) are served at the root for the root device ([`crate::HubConfig::device_id`])
//! and under `/devices/{device}/…` for every device (the root one included): one set of
//! handlers, which take the device from the route ([`On`]). An execution belongs to the device
//! it was started on: the others answer 404 for it (an ended execution of a device the hub no
//! longer serves is read at the root). Execution ids and idempotency keys are global; a device
//! is busy while one of its own executions is live. `GET /v1/devices` lists the devices.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::RawPathParamsRejection;
use axum::extract::{FromRequestParts, Path, RawPathParams, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use canonical_json::{Map, Value};
use cookwala::dryrun::RefusalReason;

use crate::auth::{Action, Principal, Role};
use crate::http::error::ApiError;

pub(crate) mod catalog;
mod dashboard;
mod documents;
pub mod error;
pub(crate) mod events;
mod executions;
mod health;
mod incidents;
pub(crate) mod limits;
mod problem;
mod proxy;
pub(crate) mod recalls;
pub(crate) mod server;
pub(crate) mod tools;
mod ws;
use crate::service::executions::{Start, only_a_person, stored_on};
use crate::service::idempotency::{Answer, request_digest};
use crate::service::reads::StatusView;
use crate::service::{Device, Hub};
use crate::storage::IdempotencyRecord;
use crate::storage::jcs_text;

use documents::{capabilities, devices, openapi, safety_limits};
use executions::{log, resume, start, status, stop};
use incidents::incident;

/// The media type of Cookwala bodies.
pub const COOKWALA_JSON: &str = "application/vnd.cookwala+json";

/// The device-specific Core routes; [`On`] picks the device.
fn device_routes() -> Router<Hub> {
    Router::new()
        .route("/v1/executions", post(start))
        .route("/v1/executions/{id}", get(status))
        .route("/v1/executions/{id}/stop", post(stop))
        .route("/v1/executions/{id}/resume", post(resume))
        .route("/v1/executions/{id}/log", get(log))
        .route("/v1/safety-limits", get(safety_limits))
        .route("/v1/capabilities", get(capabilities))
}

/// The per-device routes that are not Core's execution routes: the tools, recalls, incident
/// reports and the conformance claim answer under every device prefix too, so a client made
/// for one device (a base URL of `/devices/{id}`) finds everything it uses.
fn shared_routes() -> Router<Hub> {
    Router::new()
        .route("/v1/recalls", get(crate::http::recalls::list).post(crate::http::recalls::publish))
        .route("/v1/incidents", post(incident))
        .route("/v1/conformance", get(catalog::conformance))
        .merge(crate::http::tools::routes())
}

/// A 404 problem for a `/devices/{device}/…` path naming no device of this hub, before any
/// handler runs.
async fn known_device(
    On(_device): On,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    next.run(req).await
}

/// The operators' router (see [`crate::serve_operators`]): open `/metrics`, `/healthz`,
/// `/readyz`.
pub(crate) fn operators_app(hub: Hub) -> Router {
    health::operator_routes().with_state(hub)
}

/// The router for `hub`.
pub fn app(hub: Hub) -> Router {
    let config = &hub.config();
    let per_device = device_routes()
        .merge(shared_routes())
        .route_layer(axum::middleware::from_fn_with_state(hub.clone(), known_device))
        .route_layer(axum::middleware::from_fn_with_state(hub.clone(), proxy::remote_or_local));
    let router = Router::new()
        .merge(device_routes())
        .merge(shared_routes())
        .nest("/devices/{device}", per_device)
        .route("/v1/devices", get(devices))
        .route("/openapi.yaml", get(openapi))
        .route("/openapi.json", get(openapi))
        .route("/.well-known/cookwala.json", get(catalog::well_known))
        .merge(dashboard::index_routes())
        .merge(events::routes())
        .merge(ws::routes())
        .merge(dashboard::routes())
        .merge(health::routes())
        .route_layer(health::CountLayer(hub.metrics()))
        // A path no route matches is counted too (as `unmatched`): the route layer above only
        // sees matched routes.
        .fallback_service(
            axum::routing::any(|| async { ApiError::not_found("no such resource") })
                .layer(health::CountLayer(hub.metrics())),
        )
        .method_not_allowed_fallback(axum::handler::Handler::layer(
            || async {
                ApiError::new(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "method-not-allowed",
                    "method not allowed",
                )
            },
            health::CountLayer(hub.metrics()),
        ))
        .layer(axum::middleware::map_response(limits::problem_413))
        .layer(axum::extract::DefaultBodyLimit::max(config.max_body));
    let router = if config.no_auth {
        router.layer(axum::middleware::from_fn(loopback_host))
    } else {
        router
    };
    let router = match limits::cors(&config.cors_origins) {
        Some(cors) => router.layer(cors),
        None => router,
    };
    router.with_state(hub)
}

/// Under `--no-auth`, a request whose `Host` is not a loopback name or address is refused
/// (403 `non-loopback-host`).
///
/// Why: `--no-auth` trusts whoever reaches the loopback port, and a web page can reach it.
/// With DNS rebinding, a page at `attacker.example` gets its name re-pointed at 127.0.0.1,
/// and the browser, which thinks it is talking to `attacker.example`, sends the page's
/// requests (same-origin, so CORS never asks) to the hub, with `Host: attacker.example`. A
/// hub that answers only `localhost`, `127.0.0.0/8` and `[::1]` (any port) cannot be driven
/// that way. A request without `Host` (HTTP/1.0, tests) is not a browser's and passes.
async fn loopback_host(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let host = req.headers().get(header::HOST).map(|h| h.to_str().unwrap_or("\u{fffd}"));
    match host {
        Some(h) if !is_loopback_host(h) => ApiError::new(
            StatusCode::FORBIDDEN,
            "non-loopback-host",
            format!(
                "this hub runs with --no-auth and answers only requests addressed to a loopback \
                 name (localhost, 127.0.0.1, [::1]); Host {} is not one (a page elsewhere could \
                 otherwise reach it through DNS rebinding)",
                crate::http::error::quote(h)
            ),
        )
        .into_response(),
        _ => next.run(req).await,
    }
}

/// `localhost`, an address in `127.0.0.0/8` or `[::1]`, each with or without a port.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((v6, port)) if port.is_empty() || valid_port(port) => {
                return v6.parse::<std::net::Ipv6Addr>().is_ok_and(|a| a.is_loopback());
            }
            _ => return false,
        },
        None => match host.rsplit_once(':') {
            Some((name, port)) if valid_port(port) => name,
            Some(_) => return false,
            None => host,
        },
    };
    let name = name.strip_suffix('.').unwrap_or(name);
    name.eq_ignore_ascii_case("localhost")
        || name.parse::<std::net::Ipv4Addr>().is_ok_and(|a| a.is_loopback())
}

fn valid_port(port: &str) -> bool {
    port.strip_prefix(':').is_some_and(|p| p.parse::<u16>().is_ok())
        || (!port.starts_with(':') && port.parse::<u16>().is_ok())
}

// ---- helpers

/// The device a request is for: the `{device}` of `/devices/{device}/…` (a catalog id or
/// alias; an unknown one is a 404 problem), else the root device.
pub(crate) struct On(pub Arc<Device>);

impl FromRequestParts<Hub> for On {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, hub: &Hub) -> Result<On, ApiError> {
        let params = match RawPathParams::from_request_parts(parts, hub).await {
            Ok(p) => p,
            Err(RawPathParamsRejection::MissingPathParams(_)) => return Ok(On(hub.root_device())),
            Err(_) => {
                return Err(ApiError::bad_request(
                    "the path holds percent-encoded bytes that are not UTF-8",
                ));
            }
        };
        match params.iter().find(|(k, _)| *k == "device") {
            None => Ok(On(hub.root_device())),
            // A kitchen device of its own process: its Core routes were forwarded (see
            // `proxy`); the hub's own routes under its prefix answer as the root device's.
            Some((_, key)) if hub.find_device(key).is_none() && hub.is_remote(key) => {
                Ok(On(hub.root_device()))
            }
            Some((_, key)) => hub.find_device(key).map(On).ok_or_else(|| {
                ApiError::not_found(format!(
                    "no device {} on this hub",
                    crate::http::error::quote(key)
                ))
            }),
        }
    }
}

/// The `{id}` of an execution route (a struct, so the `{device}` of a nested route is ignored).
#[derive(Debug, serde::Deserialize)]
struct ExecPath {
    id: String,
}

pub(crate) fn doc_response(status: StatusCode, body: &Value) -> Response {
    let mut res = (status, jcs_text(body)).into_response();
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(COOKWALA_JSON));
    res
}

/// A JSON answer that is not a Cookwala document (`application/json`): the index, the
/// well-known document and the dashboard's lists.
pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut res = (status, jcs_text(body)).into_response();
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    res
}

fn status_response(code: StatusCode, status: &Value) -> Response {
    let mut res = doc_response(code, status);
    if let Some(seq) = status.get("seq").and_then(Value::as_i64)
        && let Ok(v) = HeaderValue::from_str(&format!("\"{seq}\""))
    {
        res.headers_mut().insert(header::ETAG, v);
    }
    res
}

fn replay(rec: &IdempotencyRecord) -> Response {
    let code = StatusCode::from_u16(rec.status).unwrap_or(StatusCode::ACCEPTED);
    let mut res = (code, rec.body.clone()).into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(COOKWALA_JSON));
    h.insert("idempotent-replayed", HeaderValue::from_static("true"));
    if let Ok(v) = canonical_json::parse(rec.body.as_bytes())
        && let Some(seq) = v.get("seq").and_then(Value::as_i64)
        && let Ok(etag) = HeaderValue::from_str(&format!("\"{seq}\""))
    {
        h.insert(header::ETAG, etag);
    }
    res
}

/// The bearer token of a request, if it carries one.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// The principal of a request that may carry a token but need not (open endpoints): its
/// token's principal when it carries a known one, else an anonymous caller.
pub(crate) fn caller(hub: &Hub, headers: &HeaderMap) -> Principal {
    let config = &hub.config();
    if config.no_auth {
        return Principal::anonymous(Role::Owner);
    }
    bearer(headers)
        .and_then(|t| config.tokens.find(t))
        .map_or_else(|| Principal::anonymous(Role::Viewer), crate::auth::TokenEntry::principal)
}

/// Who sent the request, if they may perform `action`: 401 without a known bearer token, 403
/// when the token's role does not allow it. Under `--no-auth` (and only then), everyone is an
/// anonymous owner.
pub(crate) fn authenticate(
    hub: &Hub,
    headers: &HeaderMap,
    action: Action,
) -> Result<Principal, ApiError> {
    let config = &hub.config();
    if config.no_auth {
        return Ok(Principal::anonymous(Role::Owner));
    }
    let who = bearer(headers).and_then(|t| config.tokens.find(t)).map(|e| e.principal());
    let Some(who) = who else {
        let why = match (headers.get(header::AUTHORIZATION), bearer(headers)) {
            (None, _) => "a bearer token is required (Authorization: Bearer <token>)",
            (Some(_), None) => {
                "the Authorization header is not a bearer token (send Bearer <token>)"
            }
            (Some(_), Some(_)) => "the bearer token is not one this hub accepts",
        };
        return Err(ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", why));
    };
    if !who.role.allows(action) {
        let what = match action {
            Action::Read => "read",
            Action::Cook => "start or resume executions",
            Action::Admin => "change the hub's catalog",
        };
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!(
                "the token {:?} has the role {}, which may not {what}",
                who.name,
                who.role.as_str()
            ),
        ));
    }
    Ok(who)
}

/// 401 unless the request carries a token that may read.
pub(crate) fn authorize(hub: &Hub, headers: &HeaderMap) -> Result<(), ApiError> {
    authenticate(hub, headers, Action::Read).map(|_| ())
}

/// The `Idempotency-Key` header, checked (8–128 printable characters).
pub(crate) fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(raw) = headers.get("idempotency-key") else { return Ok(None) };
    let key = raw.to_str().ok().map(str::trim).unwrap_or_default();
    let n = key.chars().count();
    if !(8..=128).contains(&n) || key.chars().any(|c| c.is_control()) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "missing-idempotency-key",
            "Idempotency-Key must be 8 to 128 printable characters",
        ));
    }
    Ok(Some(key.to_owned()))
}

pub(crate) fn require_key(headers: &HeaderMap) -> Result<String, ApiError> {
    idempotency_key(headers)?.ok_or_else(|| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "missing-idempotency-key",
            "the Idempotency-Key header (8 to 128 characters) is required on every POST",
        )
    })
}

fn check_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(ct) = headers.get(header::CONTENT_TYPE) else { return Ok(()) };
    let ct = ct.to_str().unwrap_or_default().to_ascii_lowercase();
    let base = ct.split(';').next().unwrap_or_default().trim();
    if base.is_empty() || base == "application/json" || base == COOKWALA_JSON {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            format!("send {COOKWALA_JSON} or application/json"),
        ))
    }
}

/// Parses a JSON object body strictly (duplicate keys refused).
pub(crate) fn parse_object(headers: &HeaderMap, body: &[u8]) -> Result<Value, ApiError> {
    check_content_type(headers)?;
    let doc = canonical_json::parse(body)
        .map_err(|e| ApiError::bad_request(format!("body is not valid JSON: {e}")))?;
    if doc.as_object().is_none() {
        return Err(ApiError::bad_request("body must be a JSON object"));
    }
    Ok(doc)
}

/// The response for an operation's answer: `code` with the document (and its `ETag`), or
/// the stored answer replayed.
pub(crate) fn respond(answer: Answer, code: StatusCode) -> Response {
    match answer {
        Answer::Fresh(doc) => status_response(code, &doc),
        Answer::Replay(rec) => replay(&rec),
        Answer::Forwarded { status, body } => forwarded(status, body),
    }
}

/// The answer another hub replica gave to a request handed over to it.
fn forwarded(status: u16, body: String) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let etag = canonical_json::parse(body.as_bytes())
        .ok()
        .and_then(|v| v.get("seq").and_then(Value::as_i64))
        .and_then(|seq| HeaderValue::from_str(&format!("\"{seq}\"")).ok());
    let mut res = (code, body).into_response();
    let h = res.headers_mut();
    let ty = if code.is_success() { COOKWALA_JSON } else { crate::http::error::PROBLEM_JSON };
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ty));
    if let Some(etag) = etag.filter(|_| code.is_success()) {
        h.insert(header::ETAG, etag);
    }
    res
}

/// The first few validation issues, `pointer message; …`.
pub(crate) fn issue_list(issues: &[cookwala::documents::Issue]) -> String {
    let list: Vec<String> = issues
        .iter()
        .take(5)
        .map(|i| format!("{} {}", if i.pointer.is_empty() { "/" } else { &i.pointer }, i.message))
        .collect();
    list.join("; ")
}

fn parse_stored(text: &str) -> Result<Value, ApiError> {
    canonical_json::parse(text.as_bytes()).map_err(|e| ApiError::internal(&e))
}

fn str_field<'a>(doc: &'a Value, key: &str) -> Result<&'a str, ApiError> {
    doc.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::bad_request(format!("{key} must be a string")))
}

fn valid_execution_id(id: &str) -> bool {
    let mut chars = id.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    let len = id.len();
    first_ok
        && (3..=128).contains(&len)
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'))
}
