//! The open catalog documents: the conformance claim and the well-known keys.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use canonical_json::{Map, Value};
use cookwala::keys::KeySet;

use crate::http::{doc_response, json_response};
use crate::service::Hub;

/// The Core API version the hub speaks (the well-known document, the index and the tools name it).
pub const CORE_API_VERSION: &str = "0.2.0";

/// `GET /v1/conformance` (open): the claim built at start-up.
pub(crate) async fn conformance(State(hub): State<Hub>) -> Response {
    doc_response(StatusCode::OK, hub.conformance())
}

/// The keys the hub publishes: its own record first, then the trusted ones.
pub(crate) fn published_keys(hub: &Hub) -> KeySet {
    let config = &hub.config();
    let mut keys = KeySet::new();
    if let Some(k) = &config.key {
        keys.push(k.record());
    }
    keys.extend(config.trusted_keys.clone());
    keys
}

/// `GET /.well-known/cookwala.json` (open).
pub(crate) async fn well_known(State(hub): State<Hub>) -> Response {
    let mut m = Map::new();
    m.insert("name".into(), "Cookwala hub (cookwala-rs)".into());
    m.insert("core".into(), CORE_API_VERSION.into());
    m.insert("keys".into(), published_keys(&hub).to_value());
    m.insert("conformance".into(), "/v1/conformance".into());
    json_response(StatusCode::OK, &Value::Object(m))
}
