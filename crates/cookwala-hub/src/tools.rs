//! The upstream reference hub's tool endpoints the `cookwala-samples` client calls (not Core):
//! `GET /v1/tools/recipes`, `GET /v1/tools/recipes/{id}`, `POST /v1/tools/dryrun`.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use canonical_json::{Map, Value};

use crate::api::{authorize, doc_response, parse_object};
use crate::error::ApiError;
use crate::hub::Hub;

/// The tool routes (merged into [`crate::app`]).
pub(crate) fn routes() -> Router<Hub> {
    Router::new()
        .route("/v1/tools/recipes", get(recipes))
        .route("/v1/tools/recipes/{id}", get(recipe))
        .route("/v1/tools/dryrun", post(dryrun))
}

async fn recipes(State(hub): State<Hub>, headers: HeaderMap) -> Result<Response, ApiError> {
    authorize(&hub, &headers)?;
    let ids = hub.inner.config.catalog.recipe_ids();
    let mut m = Map::new();
    m.insert("recipes".into(), Value::Array(ids.into_iter().map(Value::from).collect()));
    Ok(doc_response(StatusCode::OK, &Value::Object(m)))
}

async fn recipe(
    State(hub): State<Hub>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    authorize(&hub, &headers)?;
    let doc = hub
        .inner
        .config
        .catalog
        .recipe(&id)
        .cloned()
        .ok_or_else(|| ApiError::not_found(format!("no recipe {id}")))?;
    Ok(doc_response(StatusCode::OK, &doc))
}

/// `{recipe, device?, humanPresent?, allowModel?}` → the dry run `{state, plan, refusal?}`
/// with the hub's SafetyLimits (`device` defaults to the served device).
async fn dryrun(
    State(hub): State<Hub>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    authorize(&hub, &headers)?;
    let args = parse_object(&headers, &body)?;
    let recipe = match args.get("recipe") {
        Some(Value::Object(_)) => args.get("recipe").cloned(),
        Some(Value::String(id)) => hub.inner.config.catalog.recipe(id).cloned(),
        _ => None,
    }
    .ok_or_else(|| {
        ApiError::bad_request("recipe must be a Recipe document or a known recipe id")
    })?;
    let device = match args.get("device") {
        None | Some(Value::Null) => hub.inner.device.clone(),
        Some(d @ Value::Object(_)) => d.clone(),
        Some(Value::String(id)) => hub
            .inner
            .config
            .catalog
            .device(id)
            .cloned()
            .ok_or_else(|| ApiError::bad_request(format!("no device {id}")))?,
        Some(_) => return Err(ApiError::bad_request("device must be a Capabilities document")),
    };
    let flag = |key: &str, default: bool| match args.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => {
            v.as_bool().ok_or_else(|| ApiError::bad_request(format!("{key} must be a boolean")))
        }
    };
    let human_present = flag("humanPresent", false)?;
    let allow_model = flag("allowModel", true)?;
    let limits = cookwala::limits::default_pack();
    let now_ms = crate::unix_ms();
    let now = cookwala::time::Instant::from_unix(now_ms.div_euclid(1000), 0)
        .ok_or_else(|| ApiError::internal(&"clock out of range"))?;
    let options =
        cookwala::dryrun::Options { human_present, allow_model, limits: Some(&limits), now };
    let vocab = cookwala::vocab::Vocabulary::builtin();
    let dry = cookwala::dryrun::dry_run(vocab, &recipe, &device, options)
        .map_err(|e| ApiError::bad_request(format!("cannot dry-run: {e}")))?;
    Ok(doc_response(StatusCode::OK, &dry.to_value()))
}
