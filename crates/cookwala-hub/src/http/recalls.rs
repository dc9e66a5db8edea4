//! The recall feed: signed recalls published to the hub, listed with `?since=`, refusing new
//! executions of what they cover, and stopping running ones when they say so.
//!
//! - `GET /v1/recalls[?since=<date-time>]` (open): the stored recalls issued at or after
//!   `since`, oldest first. A `since` that is not an RFC 3339 date-time is a 400 problem.
//! - `POST /v1/recalls` (owner token, `Idempotency-Key`): publishes one Recall. It must be a
//!   valid Recall document whose signature verifies against the hub's trusted keys (`--keys`);
//!   anything else is refused with a problem and stored nowhere. A recall id is published
//!   once: the same document again answers 200 with the stored copy, another document under
//!   the same id is a 409.
//! - Recalls with `action` `block` or `block_and_stop_running` make the prechecks refuse new
//!   executions of the recipes they cover (`recipe_recalled`); `warn` recalls are listed and
//!   never block. A `block_and_stop_running` recall also stops, safely, every running
//!   execution of a covered recipe (the stop reason names the recall).

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use canonical_json::Value;
use cookwala::signature::{SignedKind, verify_signature};

use crate::auth::Action;
use crate::http::error::ApiError;
use crate::http::{authenticate, doc_response, parse_object, request_digest, require_key, respond};
use crate::service::Hub;
use crate::service::recalls::{issued_ms, timestamp_ms};

/// `?since=`.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct Since {
    since: Option<String>,
}

pub(crate) async fn list(
    State(hub): State<Hub>,
    query: Result<Query<Since>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(q) = query.map_err(|e| ApiError::bad_request(format!("query: {e}")))?;
    let since = match q.since.as_deref() {
        None => None,
        Some(text) => Some(timestamp_ms(text).ok_or_else(|| {
            ApiError::bad_request(format!(
                "since must be an RFC 3339 date-time such as 2026-01-31T12:00:00Z, not {text:?}"
            ))
        })?),
    };
    let all = hub.recalls();
    let list: Vec<Value> = all
        .into_iter()
        .filter(|r| since.is_none_or(|s| issued_ms(r).is_some_and(|at| at >= s)))
        .collect();
    Ok(doc_response(StatusCode::OK, &Value::Array(list)))
}

pub(crate) async fn publish(
    State(hub): State<Hub>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    authenticate(&hub, &headers, Action::Admin)?;
    let key = require_key(&headers)?;
    let doc = parse_object(&headers, &body)?;
    let digest = request_digest("POST /v1/recalls", &body);
    let report =
        cookwala::documents::validate(&doc, Some("Recall"), cookwala::vocab::Vocabulary::builtin());
    if !report.is_valid() {
        let issues: Vec<String> = report
            .errors
            .iter()
            .take(5)
            .map(|i| {
                format!("{} {}", if i.pointer.is_empty() { "/" } else { &i.pointer }, i.message)
            })
            .collect();
        return Err(ApiError::bad_request(format!("not a valid Recall: {}", issues.join("; "))));
    }
    let verdict = verify_signature(&doc, &hub.config().trusted_keys, SignedKind::Document);
    if !verdict.is_ok() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "unverified-signature",
            format!(
                "the recall's signature does not verify against the hub's trusted keys (--keys): {}",
                verdict.reason.as_str()
            ),
        ));
    }
    let id = doc.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
    let issued = issued_ms(&doc)
        .ok_or_else(|| ApiError::bad_request("issuedAt must be an RFC 3339 date-time"))?;
    match hub.publish_recall(key, digest, doc, id, issued).await? {
        (true, answer) => Ok(respond(answer, StatusCode::CREATED)),
        (false, answer) => Ok(respond(answer, StatusCode::OK)),
    }
}
