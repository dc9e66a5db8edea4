//! `/devices/{id}/v1/…` for a device of the kitchen that lives in a process of its own: the
//! hub answers for it, so a client sees one hub whether a device is in-process or remote.
//!
//! The hub authenticates its client with its own tokens and rules — starting and resuming
//! need a token that may cook (an agent's `requestedBy` must be its own, and only a person
//! may say one is present), reading an execution needs a token that may read, and a stop, the
//! capabilities and the safety limits are open as they are for in-process devices — then calls
//! the device with the kitchen's device token (see [`crate::service::remote`] for the bounds
//! of that call). The client's `Idempotency-Key` goes on scoped to the client (a digest of the
//! scoped key), so two clients' keys never meet at the device.
//!
//! A device that is offline answers 503 `device-unreachable`, naming since when and why, and
//! for an execution the last state and seq the device reported (never a state made up); one
//! that fails to answer, 502 `device-unreachable`. Only the Core device routes are forwarded;
//! the tools, recalls, incident reports and the conformance claim under the device's prefix
//! are the hub's own.

use axum::extract::{RawPathParams, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use canonical_json::Value;
use sha2::{Digest, Sha256};

use crate::auth::{Action, Role};
use crate::http::error::ApiError;
use crate::http::{authenticate, caller, idempotency_key, require_key};
use crate::service::Hub;
use crate::service::remote::{CallError, percent_segment};

/// What a forwarded request may do, by its method and path (below `/devices/{id}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Start,
    Stop,
    Resume,
    Read,
    Open,
}

fn route(method: &Method, path: &str) -> Option<Route> {
    let rest = path.strip_prefix("/v1/")?;
    let parts: Vec<&str> = rest.split('/').collect();
    match (method, parts.as_slice()) {
        (&Method::POST, ["executions"]) => Some(Route::Start),
        (&Method::POST, ["executions", _, "stop"]) => Some(Route::Stop),
        (&Method::POST, ["executions", _, "resume"]) => Some(Route::Resume),
        (&Method::GET, ["executions", _] | ["executions", _, "log"]) => Some(Route::Read),
        (&Method::GET, ["capabilities" | "safety-limits"]) => Some(Route::Open),
        _ => None,
    }
}

/// The route layer of `/devices/{device}/…`: a kitchen device's Core routes are forwarded,
/// everything else goes on to the hub's own handlers.
pub(crate) async fn remote_or_local(
    State(hub): State<Hub>,
    params: RawPathParams,
    req: Request,
    next: Next,
) -> Response {
    let device = params.iter().find(|(k, _)| *k == "device").map(|(_, v)| v.to_owned());
    let Some(device) = device.filter(|d| hub.is_remote(d)) else { return next.run(req).await };
    let path = req.uri().path().to_owned();
    let Some(kind) = route(req.method(), &path) else { return next.run(req).await };
    match forward(&hub, &device, kind, req).await {
        Ok(r) | Err(r) => r,
    }
}

async fn forward(hub: &Hub, device: &str, kind: Route, req: Request) -> Result<Response, Response> {
    let (parts, body) = req.into_parts();
    let headers = &parts.headers;
    let mut out = HeaderMap::new();
    for h in [header::CONTENT_TYPE, header::ACCEPT, header::IF_MATCH] {
        if let Some(v) = headers.get(&h) {
            out.insert(h, v.clone());
        }
    }
    let scoped = |who: &crate::auth::Principal, key: &str| {
        let digest = Sha256::digest(who.scoped_key(key).as_bytes());
        let hex: String = digest.iter().take(20).map(|b| format!("{b:02x}")).collect();
        HeaderValue::from_str(&format!("hub-{hex}")).ok()
    };
    let max_body = hub.config().max_body;
    let body = axum::body::to_bytes(body, max_body)
        .await
        .map_err(|_| crate::http::limits::too_large().into_response())?;
    match kind {
        Route::Start | Route::Resume => {
            let who =
                authenticate(hub, headers, Action::Cook).map_err(IntoResponse::into_response)?;
            let key = require_key(headers).map_err(IntoResponse::into_response)?;
            if kind == Route::Start
                && let Ok(doc) = canonical_json::parse(&body)
            {
                let by = doc.get("requestedBy").and_then(Value::as_str);
                if who.role == Role::Agent && who.agent.as_deref() != by {
                    return Err(ApiError::new(
                        StatusCode::FORBIDDEN,
                        "forbidden",
                        format!(
                            "this token speaks for {}; requestedBy is {}",
                            who.agent.as_deref().unwrap_or("no agent"),
                            by.unwrap_or("missing")
                        ),
                    )
                    .into_response());
                }
                if doc.get("x-hub-human-present") == Some(&Value::Bool(true)) && !who.is_person() {
                    let e = crate::service::executions::only_a_person(
                        &who,
                        "say that a person is present (x-hub-human-present)",
                    );
                    return Err(ApiError::from(e).into_response());
                }
            }
            if let Some(v) = scoped(&who, &key) {
                out.insert("idempotency-key", v);
            }
        }
        Route::Stop => {
            let who = caller(hub, headers);
            if let Ok(Some(key)) = idempotency_key(headers)
                && let Some(v) = scoped(&who, &key)
            {
                out.insert("idempotency-key", v);
            }
        }
        Route::Read => {
            authenticate(hub, headers, Action::Read).map_err(IntoResponse::into_response)?;
        }
        Route::Open => {}
    }
    let exec = parts.uri.path().split('/').nth(3).map(str::to_owned);
    let view = hub.remote_view(device).ok_or_else(|| {
        ApiError::not_found(format!("no device {} on this hub", crate::http::error::quote(device)))
            .into_response()
    })?;
    if !view.online {
        let mut detail = format!(
            "device {device} is unreachable: offline since {} ({})",
            cookwala_sim::rfc3339_ms(view.since_ms),
            view.offline_reason.unwrap_or("unknown")
        );
        if let Some(a) = exec.as_deref().and_then(|e| view.active.iter().find(|a| a.id == e)) {
            detail.push_str(&format!(
                "; execution {} was {} (seq {}) when it was last heard; the device is asked \
                 again when it is back",
                a.id, a.state, a.seq
            ));
        }
        let mut res = ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "device-unreachable", detail)
            .into_response();
        res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        return Err(res);
    }
    // The target as the client sent it (below the prefix): it was a valid request target then.
    let path_and_query = parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
    let reply = hub
        .call_device(device, parts.method.clone(), &path_and_query, out, body)
        .await
        .map_err(|e| {
            let status = match e {
                CallError::Busy(_) => StatusCode::SERVICE_UNAVAILABLE,
                CallError::Failed(_) => StatusCode::BAD_GATEWAY,
            };
            ApiError::new(status, "device-unreachable", format!("device {device}: {e}"))
                .into_response()
        })?;
    match kind {
        Route::Start if reply.status.is_success() => hub.note_started(device, &reply.body),
        Route::Read | Route::Stop | Route::Resume
            if reply.status.is_success() && !parts.uri.path().ends_with("/log") =>
        {
            hub.note_status(device, &reply.body);
        }
        _ => {}
    }
    let mut res = (reply.status, reply.body).into_response();
    for h in [header::CONTENT_TYPE, header::ETAG, header::RETRY_AFTER] {
        if let Some(v) = reply.headers.get(&h) {
            res.headers_mut().insert(h, v.clone());
        }
    }
    if let Some(loc) = reply.headers.get(header::LOCATION).and_then(|v| v.to_str().ok())
        && let Ok(v) = HeaderValue::from_str(&format!("/devices/{}{loc}", percent_segment(device)))
    {
        res.headers_mut().insert(header::LOCATION, v);
    }
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_core_device_routes_are_forwarded() {
        assert_eq!(route(&Method::POST, "/v1/executions"), Some(Route::Start));
        assert_eq!(route(&Method::POST, "/v1/executions/e1/stop"), Some(Route::Stop));
        assert_eq!(route(&Method::POST, "/v1/executions/e1/resume"), Some(Route::Resume));
        assert_eq!(route(&Method::GET, "/v1/executions/e1"), Some(Route::Read));
        assert_eq!(route(&Method::GET, "/v1/executions/e1/log"), Some(Route::Read));
        assert_eq!(route(&Method::GET, "/v1/capabilities"), Some(Route::Open));
        assert_eq!(route(&Method::GET, "/v1/tools/validate"), None);
        assert_eq!(route(&Method::DELETE, "/v1/executions/e1"), None);
        assert_eq!(route(&Method::GET, "/v1/executions/e1/log/x"), None);
    }
}
