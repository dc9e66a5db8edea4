//! The reference tool endpoints (not Core): the same functions as the `cookwala` CLI, over HTTP,
//! in the request and response shapes of the upstream reference hub and its SDKs.
//!
//! - `GET /` and `/v1`: an index (open).
//! - `GET /v1/tools/recipes`, `/v1/tools/recipes/{id}`, `/v1/tools/devices`,
//!   `/v1/tools/vocab/ops`, `/v1/tools/registry`.
//! - `POST /v1/tools/{tool}` for `hash`, `verify`, `dryrun`, `envelope`, `convert`, `ladder`,
//!   `validate`, `sms` and `humanitarian` (RFC-0003) and `constraints` (RFC-0001); any other
//!   name answers 404.
//!
//! The tools are open, like capabilities: they compute over what the request sends and what
//! the catalog holds, and change nothing. Arguments are checked field by field: a missing or
//! mistyped field is a 400 problem naming it, never a 500.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use canonical_json::{Finite, Map, Value};
use cookwala::documents::{self, KINDS};
use cookwala::signature::SignedKind;
use cookwala::vocab::{Band, Op, Vocabulary};

use crate::http::catalog::{CORE_API_VERSION, published_keys};
use crate::http::error::ApiError;
use crate::http::{doc_response, json_response, parse_object};
use crate::service::Hub;

/// The tools `POST /v1/tools/{tool}` runs.
pub const TOOLS: [&str; 10] = [
    "hash",
    "verify",
    "dryrun",
    "envelope",
    "convert",
    "ladder",
    "validate",
    "sms",
    "constraints",
    "humanitarian",
];

/// Upstream tools of profiles this hub does not implement (501).
pub const NOT_IMPLEMENTED: [&str; 0] = [];

/// The tool routes (merged into [`crate::http::app`]).
pub(crate) fn routes() -> Router<Hub> {
    Router::new()
        .route("/v1/tools/recipes", get(recipes))
        .route("/v1/tools/recipes/{id}", get(recipe))
        .route("/v1/tools/devices", get(devices))
        .route("/v1/tools/vocab/ops", get(vocab_ops))
        .route("/v1/tools/registry", get(registry))
        .route("/v1/tools/{tool}", post(tool))
}

/// The `{id}` of `/v1/tools/recipes/{id}` (a struct, so the `{device}` of a nested route is
/// ignored).
#[derive(Debug, serde::Deserialize)]
struct RecipePath {
    id: String,
}

/// The `{tool}` of `/v1/tools/{tool}`.
#[derive(Debug, serde::Deserialize)]
struct ToolPath {
    tool: String,
}

/// `GET /v1` (and `GET /` for clients that do not ask for HTML): the JSON index.
pub(crate) async fn index(State(hub): State<Hub>) -> Response {
    let list = |items: &[&str]| Value::Array(items.iter().map(|s| Value::from(*s)).collect());
    let mut m = Map::new();
    m.insert("name".into(), "Cookwala hub (cookwala-rs)".into());
    m.insert("version".into(), env!("CARGO_PKG_VERSION").into());
    m.insert("core".into(), CORE_API_VERSION.into());
    m.insert("device".into(), hub.device_id().into());
    m.insert(
        "endpoints".into(),
        list(&[
            "/v1/capabilities",
            "/v1/safety-limits",
            "/v1/executions",
            "/v1/recalls",
            "/v1/incidents",
            "/v1/conformance",
            "/v1/tools/*",
            "/openapi.yaml",
            "/.well-known/cookwala.json",
        ]),
    );
    m.insert("tools".into(), list(&TOOLS));
    m.insert("notImplemented".into(), list(&NOT_IMPLEMENTED));
    json_response(StatusCode::OK, &Value::Object(m))
}

// ---- catalog views

async fn recipes(State(hub): State<Hub>) -> Result<Response, ApiError> {
    // Listed under the names the upstream hub uses (bundle key or file stem); the ids are
    // accepted at `/v1/tools/recipes/{id}` too.
    let names = hub.config().catalog.recipe_names();
    let mut m = Map::new();
    m.insert("recipes".into(), Value::Array(names.into_iter().map(Value::from).collect()));
    Ok(doc_response(StatusCode::OK, &Value::Object(m)))
}

async fn recipe(
    State(hub): State<Hub>,
    Path(RecipePath { id }): Path<RecipePath>,
) -> Result<Response, ApiError> {
    let doc = hub
        .config()
        .catalog
        .recipe(&id)
        .cloned()
        .ok_or_else(|| ApiError::not_found(format!("no recipe {id}")))?;
    Ok(doc_response(StatusCode::OK, &doc))
}

/// `{devices: {id: capabilities}}`: every device of the catalog.
async fn devices(State(hub): State<Hub>) -> Result<Response, ApiError> {
    let catalog = &hub.config().catalog;
    let devices: Map = catalog
        .device_ids()
        .filter_map(|id| catalog.device(id).map(|d| (id.to_owned(), d.clone())))
        .collect();
    let mut m = Map::new();
    m.insert("devices".into(), Value::Object(devices));
    Ok(doc_response(StatusCode::OK, &Value::Object(m)))
}

/// The operation vocabulary the hub plans with, in the shape of the standard's `vocab/ops.json`.
async fn vocab_ops(State(hub): State<Hub>) -> Result<Response, ApiError> {
    // The standard's file as it was loaded (`serve --vocab`), in its own order; else the
    // compiled-in vocabulary in the same shape.
    match &hub.config().vocab_ops {
        Some(doc) => Ok(doc_response(StatusCode::OK, doc)),
        None => Ok(doc_response(StatusCode::OK, &ops_document(Vocabulary::builtin()))),
    }
}

/// `{name: "ops", version, entries}` with what the vocabulary holds for each op (ids,
/// classes, sensors, envelope, deprecation); labels, definitions and parameter schemas are
/// not part of the compiled-in vocabulary. `Vocabulary::from_json` reads it back.
fn ops_document(vocab: &Vocabulary) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), "ops".into());
    m.insert("version".into(), CORE_API_VERSION.into());
    m.insert("entries".into(), Value::Array(vocab.ops().map(op_value).collect()));
    m.insert(
        "x-note".into(),
        "the compiled-in vocabulary of this hub: ids, classes, sensors and envelopes as in the \
         standard's vocab/ops.json, without labels, definitions or params schemas"
            .into(),
    );
    Value::Object(m)
}

fn number(x: f64) -> Value {
    Finite::new(x).map_or(Value::Null, Value::from)
}

fn band_value(b: Band) -> Value {
    let mut m = Map::new();
    m.insert("min".into(), number(b.min));
    m.insert("max".into(), number(b.max));
    Value::Object(m)
}

fn strings(items: &[String]) -> Value {
    Value::Array(items.iter().map(|s| Value::from(s.as_str())).collect())
}

fn op_value(op: &Op) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), op.id.as_str().into());
    m.insert("classes".into(), strings(&op.classes));
    m.insert("sensors".into(), strings(&op.sensors));
    m.insert("executable".into(), op.executable.into());
    if let Some(env) = &op.envelope {
        let mut e = Map::new();
        if !env.medium.is_empty() {
            e.insert("medium".into(), env.medium.as_str().into());
        }
        if let Some(b) = env.temp_c {
            e.insert("tempC".into(), band_value(b));
        }
        if let Some(b) = env.pressure_kpa {
            e.insert("pressureKPa".into(), band_value(b));
        }
        for (key, field) in
            [("agitation", &env.agitation), ("lid", &env.lid), ("attention", &env.attention)]
        {
            if let Some(text) = field {
                e.insert(key.into(), text.as_str().into());
            }
        }
        if let Some(ladder) = &env.sensor_ladder {
            e.insert("sensorLadder".into(), strings(ladder));
        }
        e.insert("unattended".into(), env.unattended.into());
        if !env.hazards.is_empty() {
            e.insert("hazards".into(), strings(&env.hazards));
        }
        m.insert("envelope".into(), Value::Object(e));
    }
    if op.deprecated {
        m.insert("deprecated".into(), true.into());
    }
    if let Some(r) = &op.replaced_by {
        m.insert("replacedBy".into(), r.as_str().into());
    }
    Value::Object(m)
}

/// The RFC-0002 namespace the hub names its catalog entries under.
pub const REGISTRY_NAMESPACE: &str = "local.cookwala-hub";

/// An RFC-0002 registry name for a catalog id (`<namespace>/<id>`, lower case, other
/// characters replaced by `-`); `None` when even that is not a valid name.
pub fn registry_name(id: &str) -> Option<String> {
    let local: String = id
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' })
        .collect();
    let name = format!("{REGISTRY_NAMESPACE}/{local}");
    cookwala::registry::check_name(&name).is_ok().then_some(name)
}

/// The value of `v` when it is an exact semantic version (RFC-0002).
fn exact_version(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str).filter(|v| cookwala::registry::check_version(v).is_ok())
}

/// The hub's catalog as an RFC-0002 registry listing: every recipe, device and the safety
/// limits it serves, named `local.cookwala-hub/<id>`, with the exact version a document
/// declares (none when it declares no exact semver), `id` (the catalog id the other tools
/// take) and `hash`, the Cookwala document hash a client puts in `recipeHash`.
async fn registry(State(hub): State<Hub>) -> Result<Response, ApiError> {
    let catalog = &hub.config().catalog;
    let entry = |kind: &str, id: &str, url: String, doc: &Value| {
        let mut e = Map::new();
        e.insert("kind".into(), kind.into());
        if let Some(name) = registry_name(id) {
            e.insert("name".into(), name.into());
        }
        e.insert("id".into(), id.into());
        if let Some(v) = exact_version(doc.get("version")) {
            e.insert("version".into(), v.into());
        }
        if let Some(v) = exact_version(doc.get("cookwala").or_else(|| doc.get("core"))) {
            e.insert("coreVersion".into(), v.into());
        }
        e.insert("status".into(), "active".into());
        e.insert("url".into(), url.into());
        if let Ok(h) = canonical_json::digest::document_hash(doc) {
            e.insert("hash".into(), h.into());
        }
        e
    };
    let mut entries = Vec::new();
    for id in catalog.recipe_ids() {
        if let Some(doc) = catalog.recipe(id) {
            entries.push(Value::Object(entry(
                "recipe",
                id,
                format!("/v1/tools/recipes/{id}"),
                doc,
            )));
        }
    }
    for id in catalog.device_ids() {
        if let Some(doc) = catalog.device(id) {
            let mut e = entry("capabilities", id, "/v1/tools/devices".to_owned(), doc);
            if id == hub.device_id() {
                e.insert("url".into(), "/v1/capabilities".into());
                e.insert("served".into(), true.into());
            }
            entries.push(Value::Object(e));
        }
    }
    // The pack `/v1/safety-limits` serves: the root device's.
    let limits = hub.root_device().limits.clone();
    let name = limits.get("id").and_then(Value::as_str).unwrap_or("safety-limits").to_owned();
    entries.push(Value::Object(entry("safety_limits", &name, "/v1/safety-limits".into(), &limits)));
    let mut m = Map::new();
    m.insert("cookwala".into(), CORE_API_VERSION.into());
    m.insert("registry".into(), REGISTRY_NAMESPACE.into());
    m.insert(
        "note".into(),
        "Pointers only: the recipes, devices and safety limits this hub holds, named under \
         local.cookwala-hub (RFC-0002: lower-case names, exact versions). Nothing here is \
         verified by a registry operator; hash is the document hash (the ExecuteRequest \
         recipeHash) and id the catalog id the other tools take."
            .into(),
    );
    m.insert("entries".into(), Value::Array(entries));
    Ok(doc_response(StatusCode::OK, &Value::Object(m)))
}

// ---- POST tools

async fn tool(
    State(hub): State<Hub>,
    headers: HeaderMap,
    Path(ToolPath { tool: name }): Path<ToolPath>,
    body: Bytes,
) -> Result<Response, ApiError> {
    if NOT_IMPLEMENTED.contains(&name.as_str()) {
        return Err(ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "not-implemented",
            format!(
                "the {name} tool needs the humanitarian rule packs, which this hub does not \
                 implement (it serves Core, sms and constraints)"
            ),
        ));
    }
    if !TOOLS.contains(&name.as_str()) {
        return Err(ApiError::not_found(format!(
            "unknown tool {name}; the tools are {} (see /v1)",
            TOOLS.join(", ")
        )));
    }
    let args = parse_object(&headers, &body)?;
    let out = match name.as_str() {
        "hash" => hash(&args)?,
        "verify" => verify(&hub, &args)?,
        "dryrun" => dryrun(&hub, &args)?,
        "envelope" => envelope(&args)?,
        "convert" => convert(&args)?,
        "ladder" => ladder(&args)?,
        "sms" => sms(&args)?,
        "constraints" => constraints(&args)?,
        "humanitarian" => humanitarian(&args)?,
        _ => validate(&args)?,
    };
    Ok(doc_response(StatusCode::OK, &out))
}

// ---- argument helpers

fn present<'a>(args: &'a Value, key: &str) -> Option<&'a Value> {
    args.get(key).filter(|v| !v.is_null())
}

fn required<'a>(args: &'a Value, key: &str) -> Result<&'a Value, ApiError> {
    present(args, key).ok_or_else(|| ApiError::bad_request(format!("missing {key}")))
}

fn required_str<'a>(args: &'a Value, key: &str) -> Result<&'a str, ApiError> {
    required(args, key)?
        .as_str()
        .ok_or_else(|| ApiError::bad_request(format!("{key} must be a string")))
}

fn flag(args: &Value, key: &str, default: bool) -> Result<bool, ApiError> {
    match present(args, key) {
        None => Ok(default),
        Some(v) => {
            v.as_bool().ok_or_else(|| ApiError::bad_request(format!("{key} must be a boolean")))
        }
    }
}

/// A JSON number (never a boolean or a numeric string) that is finite as `f64`.
fn finite_number(v: &Value) -> Option<f64> {
    v.as_f64().filter(|x| x.is_finite())
}

fn finite(v: &Value, key: &str) -> Result<f64, ApiError> {
    finite_number(v).ok_or_else(|| ApiError::bad_request(format!("{key} must be a finite number")))
}

fn optional_number(args: &Value, key: &str) -> Result<Option<f64>, ApiError> {
    present(args, key).map(|v| finite(v, key)).transpose()
}

// ---- the tools

/// `{doc}` → `{hash}`: the document hash (`cookwala hash`: JCS without top-level `hash` and
/// `signature`).
fn hash(args: &Value) -> Result<Value, ApiError> {
    let doc = required(args, "doc")?;
    let hash = canonical_json::digest::document_hash(doc)
        .map_err(|e| ApiError::bad_request(format!("doc cannot be canonicalised: {e}")))?;
    Ok(Value::object([("hash", hash.into())]))
}

/// `{doc, keys?, kind?}` → `{ok, reason}` with the reason codes `cookwala verify` prints.
/// `keys` is a KeyRecord list (or any key-set shape `cookwala verify --keys` reads); without
/// it, the keys the hub publishes. `kind` is `document` (default), `event` or `checkpoint`.
fn verify(hub: &Hub, args: &Value) -> Result<Value, ApiError> {
    let doc = required(args, "doc")?;
    let keys = match present(args, "keys") {
        None => published_keys(hub),
        Some(v) => cookwala::KeySet::from_value(v)
            .map_err(|e| ApiError::bad_request(format!("keys: {e}")))?,
    };
    let kind = match present(args, "kind").map(|v| v.as_str()) {
        None | Some(Some("document")) => SignedKind::Document,
        Some(Some("event")) => SignedKind::Event,
        Some(Some("checkpoint")) => SignedKind::Checkpoint,
        Some(_) => {
            return Err(ApiError::bad_request("kind must be document, event or checkpoint"));
        }
    };
    let verdict = cookwala::signature::verify_signature(doc, &keys, kind);
    Ok(Value::object([("ok", verdict.is_ok().into()), ("reason", verdict.reason.as_str().into())]))
}

/// A document given in full (`doc_key`) or by catalog id (`id_key`); a string under `doc_key`
/// is also taken as an id. `None` when neither is given.
fn doc_or_id(
    args: &Value,
    doc_key: &str,
    id_key: &str,
    lookup: impl Fn(&str) -> Option<Value>,
    what: &str,
) -> Result<Option<Value>, ApiError> {
    let by_id = |key: &str, id: &str| {
        lookup(id).ok_or_else(|| {
            ApiError::bad_request(format!("{key}: no {what} {id} in this hub's catalog"))
        })
    };
    match (present(args, doc_key), present(args, id_key)) {
        (Some(_), Some(_)) => {
            Err(ApiError::bad_request(format!("give {doc_key} or {id_key}, not both")))
        }
        (Some(d @ Value::Object(_)), None) => Ok(Some(d.clone())),
        (Some(Value::String(id)), None) => by_id(doc_key, id).map(Some),
        (Some(_), None) => {
            Err(ApiError::bad_request(format!("{doc_key} must be a document (a JSON object)")))
        }
        (None, Some(Value::String(id))) => by_id(id_key, id).map(Some),
        (None, Some(_)) => Err(ApiError::bad_request(format!("{id_key} must be a string"))),
        (None, None) => Ok(None),
    }
}

/// `{recipe | recipeId, device | deviceId, humanPresent?, allowModel?}` → the dry run
/// `{state, plan, refusal?}` with the SafetyLimits the device enforces (the default pack for a
/// device sent as a document); the device defaults to the one served at the root.
fn dryrun(hub: &Hub, args: &Value) -> Result<Value, ApiError> {
    let catalog = &hub.config().catalog;
    let recipe = doc_or_id(args, "recipe", "recipeId", |id| catalog.recipe(id).cloned(), "recipe")?
        .ok_or_else(|| ApiError::bad_request("missing recipe or recipeId"))?;
    let device = doc_or_id(args, "device", "deviceId", |id| catalog.device(id).cloned(), "device")?;
    // A catalog device (named, or the root one) is checked with the limits it enforces; a
    // device sent as a document with the default pack.
    let named = [present(args, "device"), present(args, "deviceId")]
        .into_iter()
        .flatten()
        .find_map(Value::as_str);
    let (device, limits) = match (device, named) {
        (None, _) => {
            let root = hub.root_device();
            (root.doc.clone(), root.limits.clone())
        }
        (Some(doc), Some(id)) => {
            (doc, catalog.safety_limits(id).unwrap_or_else(|| catalog.pack().clone()))
        }
        (Some(doc), None) => (doc, catalog.pack().clone()),
    };
    let human_present = flag(args, "humanPresent", false)?;
    let allow_model = flag(args, "allowModel", true)?;
    let now = cookwala::time::Instant::from_unix(hub.now_ms().div_euclid(1000), 0)
        .ok_or_else(|| ApiError::internal(&"clock out of range"))?;
    let options =
        cookwala::dryrun::Options { human_present, allow_model, limits: Some(&limits), now };
    let dry = cookwala::dryrun::dry_run(Vocabulary::builtin(), &recipe, &device, options)
        .map_err(|e| ApiError::bad_request(format!("cannot dry-run: {e}")))?;
    Ok(dry.to_value())
}

/// `{op, trace: [{t, tempC}], target?: {value, tolerance?}, altitudeM?}` →
/// `{envelopeOk, targetOk, reason}`.
fn envelope(args: &Value) -> Result<Value, ApiError> {
    let op = required_str(args, "op")?;
    let trace = required(args, "trace")?
        .as_array()
        .ok_or_else(|| ApiError::bad_request("trace must be an array of {t, tempC}"))?;
    let temps = trace
        .iter()
        .enumerate()
        .map(|(i, r)| {
            r.get("tempC")
                .and_then(finite_number)
                .ok_or_else(|| ApiError::bad_request(format!("trace/{i}/tempC must be a number")))
        })
        .collect::<Result<Vec<f64>, ApiError>>()?;
    let target = match present(args, "target") {
        None => None,
        Some(t) if t.as_object().is_some() => Some(cookwala::envelope::Target {
            value: finite(
                required(t, "value").map_err(|_| missing("target.value"))?,
                "target.value",
            )?,
            tolerance: match present(t, "tolerance") {
                None => 0.0,
                Some(x) => finite(x, "target.tolerance")?,
            },
        }),
        Some(_) => return Err(ApiError::bad_request("target must be {value, tolerance?}")),
    };
    let altitude = optional_number(args, "altitudeM")?.unwrap_or(0.0);
    let verdict =
        cookwala::envelope::check_envelope(Vocabulary::builtin(), op, &temps, target, altitude)
            .map_err(|e| ApiError::bad_request(format!("op: {e}")))?;
    Ok(verdict.to_value())
}

fn missing(key: &str) -> ApiError {
    ApiError::bad_request(format!("missing {key}"))
}

/// `{value, unit, to, densityGPerMl?}` → `{value, unit}`, rounded to 6 decimals as
/// `cookwala convert` prints it; a conversion that cannot be made is a 400 with its reason
/// code (`needs_density`, `incompatible_units`, `bad_number`).
fn convert(args: &Value) -> Result<Value, ApiError> {
    let value = finite(required(args, "value")?, "value")?;
    let unit = required_str(args, "unit")?;
    let to = required_str(args, "to")?;
    let density = optional_number(args, "densityGPerMl")?;
    let vocab = Vocabulary::builtin();
    let x = cookwala::units::convert(vocab, value, unit, to, density).map_err(|e| {
        let hint = if e.code() == "needs_density" {
            format!(": {unit} -> {to} is volume <-> mass, send densityGPerMl")
        } else {
            format!(": {e}")
        };
        ApiError::bad_request(format!("{}{hint}", e.code()))
    })?;
    let mut out = Map::new();
    out.insert("value".into(), number(cookwala::units::round6(x)));
    out.insert("unit".into(), to.into());
    let warnings: Vec<Value> =
        [unit, to].iter().filter_map(|id| vocab.deprecation(id)).map(Value::from).collect();
    if !warnings.is_empty() {
        out.insert("warnings".into(), Value::Array(warnings));
    }
    Ok(Value::Object(out))
}

/// `{op, sensors?, allowModel?, humanPresent?}` → the rung chosen, or `null`.
fn ladder(args: &Value) -> Result<Value, ApiError> {
    let op = required_str(args, "op")?;
    let sensors = match present(args, "sensors") {
        None => Default::default(),
        Some(v) => v
            .as_array()
            .and_then(|items| {
                items.iter().map(|s| s.as_str().map(str::to_owned)).collect::<Option<_>>()
            })
            .ok_or_else(|| ApiError::bad_request("sensors must be an array of sensor ids"))?,
    };
    let allow_model = flag(args, "allowModel", true)?;
    let human_present = flag(args, "humanPresent", false)?;
    let choice = cookwala::envelope::ladder_choice(
        Vocabulary::builtin(),
        op,
        &sensors,
        allow_model,
        human_present,
    );
    Ok(choice.map_or(Value::Null, Value::from))
}

/// Upstream schema names and the document kinds of ours each one covers.
const SCHEMAS: [(&str, &[&str]); 5] = [
    ("recipe", &["Recipe"]),
    ("capabilities", &["Capabilities"]),
    (
        "core",
        &[
            "SafetyLimits",
            "Recall",
            "IncidentReport",
            "ExecuteRequest",
            "ExecutionStatus",
            "StopRequest",
            "ExecutionLog",
        ],
    ),
    ("common", &["KeyRecord", "AgentMandate", "Disclosure"]),
    ("mission", &["MissionEvent", "Checkpoint"]),
];

/// The kind to validate `doc` as: one of ours by name, or an upstream schema name (a schema
/// with several kinds takes the one the document names or is recognised as).
fn validation_kind(kind: &str, doc: &Value) -> Result<&'static str, ApiError> {
    if let Some((name, _, _)) = KINDS.iter().find(|(n, _, _)| *n == kind) {
        return Ok(name);
    }
    let Some((schema, kinds)) = SCHEMAS.iter().find(|(s, _)| *s == kind) else {
        let schemas: Vec<&str> = SCHEMAS.iter().map(|(s, _)| *s).collect();
        let ours: Vec<&str> = KINDS.iter().map(|(n, _, _)| *n).collect();
        return Err(ApiError::bad_request(format!(
            "kind: unknown kind {kind}; use a schema name ({}) or a document kind ({})",
            schemas.join(", "),
            ours.join(", ")
        )));
    };
    if let [only] = kinds {
        return Ok(only);
    }
    let named = doc.get("kind").and_then(Value::as_str).or_else(|| documents::detect_kind(doc));
    match named.and_then(|n| kinds.iter().find(|k| **k == n)) {
        Some(k) => Ok(k),
        None => Err(ApiError::bad_request(format!(
            "kind: {schema} holds several document kinds; this hub validates {} (named by the \
             document's kind field or recognised by its fields)",
            kinds.join(", ")
        ))),
    }
}

/// `{kind?, doc}` → `{ok, errors[], warnings[], kind}` with our typed validator (`cookwala
/// validate`); errors are `pointer: message (code)` strings.
fn validate(args: &Value) -> Result<Value, ApiError> {
    let doc = required(args, "doc")?;
    let kind = match present(args, "kind") {
        None => None,
        Some(Value::String(k)) => Some(validation_kind(k, doc)?),
        Some(_) => return Err(ApiError::bad_request("kind must be a string")),
    };
    let report = documents::validate(doc, kind, Vocabulary::builtin());
    let lines = |issues: &[documents::Issue]| {
        Value::Array(
            issues
                .iter()
                .map(|i| {
                    let p = if i.pointer.is_empty() { "/" } else { &i.pointer };
                    Value::from(format!("{p}: {} ({})", i.message, i.code))
                })
                .collect(),
        )
    };
    Ok(Value::object([
        ("ok", report.is_valid().into()),
        ("errors", lines(&report.errors)),
        ("warnings", lines(&report.warnings)),
        ("kind", report.kind.as_str().into()),
    ]))
}

/// `{text}` → the parsed message in the profile's shape (`{ok: true, command, …}` or
/// `{ok: false, error}`), plus the gateway's `findings[]` when it parsed (RFC-0003).
fn sms(args: &Value) -> Result<Value, ApiError> {
    let text = required_str(args, "text")?;
    let parsed = cookwala::sms::parse(text);
    let mut out = cookwala::sms::result_value(&parsed);
    if let (Ok(cmd), Some(m)) = (&parsed, out.as_object_mut()) {
        let findings = cookwala::sms::storage_findings(cmd).into_iter().map(Value::from).collect();
        m.insert("findings".into(), Value::Array(findings));
    }
    Ok(out)
}

/// `{facets: [{facet, value?}], role, consents?}` → `{constraints, disclosed, withheld}`
/// (RFC-0001). Facets may also be given as bare ids; raw values are never echoed.
fn constraints(args: &Value) -> Result<Value, ApiError> {
    use cookwala::household::{ConsentGrant, Facets, Roles, derive};
    let facets = required(args, "facets")?
        .as_array()
        .ok_or_else(|| ApiError::bad_request("facets must be an array"))?;
    let ids = facets
        .iter()
        .enumerate()
        .map(|(i, f)| {
            f.as_str().or_else(|| f.get("facet").and_then(Value::as_str)).ok_or_else(|| {
                ApiError::bad_request(format!("facets/{i} must be {{\"facet\": id}} or an id"))
            })
        })
        .collect::<Result<Vec<&str>, _>>()?;
    let role = required_str(args, "role")?;
    let roles = Roles::builtin();
    if !roles.names().any(|r| r == role) {
        let known: Vec<&str> = roles.names().collect();
        return Err(ApiError::bad_request(format!(
            "role {role:?} is not a recipient role ({})",
            known.join(", ")
        )));
    }
    let consents = match present(args, "consents") {
        None => Vec::new(),
        Some(v) => v
            .as_array()
            .ok_or_else(|| ApiError::bad_request("consents must be an array"))?
            .iter()
            .enumerate()
            .map(|(i, g)| {
                ConsentGrant::from_value(g)
                    .map_err(|e| ApiError::bad_request(format!("consents/{i}: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    Ok(derive(&Facets::builtin(), &roles, &ids, role, &consents).to_value())
}

/// `{docs: [...], packs?: [ids]}` → `{results: [{id, kind, findings: [{rule, severity,
/// detail}]}]}`: each document checked against the merged rule packs (default
/// `who-codex-basic`, the only pack built in).
fn humanitarian(args: &Value) -> Result<Value, ApiError> {
    use cookwala::humanitarian::{RulePack, check};
    let docs = required(args, "docs")?
        .as_array()
        .ok_or_else(|| ApiError::bad_request("docs must be an array"))?;
    let packs = match present(args, "packs") {
        None => vec![RulePack::who_codex_basic()],
        Some(v) => v
            .as_array()
            .ok_or_else(|| ApiError::bad_request("packs must be an array of pack ids"))?
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let id = p
                    .as_str()
                    .ok_or_else(|| ApiError::bad_request(format!("packs/{i} must be a string")))?;
                RulePack::builtin(id).ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "packs/{i}: {id:?} is not a rule pack of this hub (who-codex-basic)"
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    // A pack named twice is merged once: a body naming one pack a hundred thousand times makes
    // one merge of one pack (and a short merged id), not a hundred thousand.
    let mut packs = packs;
    let mut named = std::collections::HashSet::new();
    packs.retain(|p| named.insert(p.id.clone()));
    let pack = RulePack::merge(&packs);
    let mut results = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        if doc.as_object().is_none() {
            return Err(ApiError::bad_request(format!("docs/{i} must be an object")));
        }
        let findings =
            check(doc, &pack).map_err(|e| ApiError::bad_request(format!("docs/{i}: {e}")))?;
        let mut m = Map::new();
        m.insert("id".into(), doc.get("id").cloned().unwrap_or(Value::Null));
        m.insert("kind".into(), doc.get("kind").cloned().unwrap_or(Value::Null));
        m.insert("findings".into(), Value::Array(findings.iter().map(|f| f.to_value()).collect()));
        results.push(Value::Object(m));
    }
    Ok(Value::object([("results", Value::Array(results))]))
}
