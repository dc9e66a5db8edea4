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
use cookwala_sim::Simulation;

use crate::auth::{Action, Principal, Role};
use crate::error::ApiError;
use crate::hub::{Device, Hub, LiveRun, RunConfig, jcs_text, snapshot};
use crate::storage::{Commit, ExecutionRecord, IdempotencyRecord, NewIncident};

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
        .route("/v1/recalls", get(crate::recalls::list).post(crate::recalls::publish))
        .route("/v1/incidents", post(incident))
        .route("/v1/conformance", get(crate::conformance::conformance))
        .merge(crate::tools::routes())
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

/// The router for `hub`.
pub fn app(hub: Hub) -> Router {
    let config = &hub.inner.config;
    let per_device = device_routes()
        .merge(shared_routes())
        .route_layer(axum::middleware::from_fn_with_state(hub.clone(), known_device));
    let router = Router::new()
        .merge(device_routes())
        .merge(shared_routes())
        .nest("/devices/{device}", per_device)
        .route("/v1/devices", get(devices))
        .route("/openapi.yaml", get(openapi))
        .route("/openapi.json", get(openapi))
        .route("/.well-known/cookwala.json", get(crate::identity::well_known))
        .merge(crate::tools::index_routes())
        .merge(crate::sse::routes())
        .merge(crate::dashboard::routes())
        .fallback(|| async { ApiError::not_found("no such resource") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method-not-allowed",
                "method not allowed",
            )
        })
        .layer(axum::middleware::map_response(crate::limits::problem_413))
        .layer(axum::extract::DefaultBodyLimit::max(config.max_body));
    let router = match crate::limits::cors(&config.cors_origins) {
        Some(cors) => router.layer(cors),
        None => router,
    };
    router.with_state(hub)
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
            Err(_) => return Err(ApiError::not_found("no such device")),
        };
        match params.iter().find(|(k, _)| *k == "device") {
            None => Ok(On(hub.root_device())),
            Some((_, key)) => hub
                .find_device(key)
                .map(On)
                .ok_or_else(|| ApiError::not_found(format!("no device {key} on this hub"))),
        }
    }
}

/// The `{id}` of an execution route (a struct, so the `{device}` of a nested route is ignored).
#[derive(Debug, serde::Deserialize)]
struct ExecPath {
    id: String,
}

/// The device an execution was started on (its stored run configuration; `None` for a record
/// that cannot be read).
fn device_of(rec: &ExecutionRecord) -> Option<String> {
    RunConfig::from_text(&rec.config).map(|r| r.device)
}

/// The 404 for an execution that is not on `device`; it names the device that has it.
fn elsewhere(id: &str, other: Option<&str>, device: &Device) -> ApiError {
    match other {
        Some(d) => ApiError::not_found(format!(
            "execution {id} is not on device {} (it is on {d}: /devices/{d}/v1/executions/{id})",
            device.id
        )),
        None => ApiError::not_found(format!("no execution {id}")),
    }
}

/// The stored execution `id` if it belongs to `device`; a 404 otherwise.
async fn stored_on(hub: &Hub, id: &str, device: &Device) -> Result<ExecutionRecord, ApiError> {
    let lookup = id.to_owned();
    let rec = hub
        .db(move |s| s.execution(&lookup))
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no execution {id}")))?;
    // A record whose run configuration cannot be read cannot be placed: every device
    // serves it rather than none. An execution of a device this hub no longer serves (a
    // restart without its `--bundle`) is read at the root.
    match device_of(&rec) {
        Some(d) if d == device.id => Ok(rec),
        Some(d) if device.root && hub.find_device(&d).is_none() => Ok(rec),
        Some(d) => Err(elsewhere(id, Some(&d), device)),
        None => Ok(rec),
    }
}

pub(crate) fn doc_response(status: StatusCode, body: &Value) -> Response {
    let mut res = (status, jcs_text(body)).into_response();
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(COOKWALA_JSON));
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
    let config = &hub.inner.config;
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
    let config = &hub.inner.config;
    if config.no_auth {
        return Ok(Principal::anonymous(Role::Owner));
    }
    let who = bearer(headers).and_then(|t| config.tokens.find(t)).map(|e| e.principal());
    let Some(who) = who else {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a bearer token is required (Authorization: Bearer <token>)",
        ));
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

/// The 403 for a principal that is not a person asking to act as one.
fn only_a_person(who: &Principal, what: &str) -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden",
        format!(
            "only a person (an owner or cook token) may {what}; the token {:?} has the role {}",
            who.name,
            who.role.as_str()
        ),
    )
}

/// 401 unless the request carries a token that may read.
pub(crate) fn authorize(hub: &Hub, headers: &HeaderMap) -> Result<(), ApiError> {
    authenticate(hub, headers, Action::Read).map(|_| ())
}

/// The `Idempotency-Key` header, checked (8–128 printable characters).
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
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

/// `sha256:<hex>` of the route and the canonical body (raw bytes if the body is not JSON).
pub(crate) fn request_digest(route: &str, body: &[u8]) -> String {
    let mut bytes = route.as_bytes().to_vec();
    bytes.push(b'\n');
    match canonical_json::parse(body).ok().and_then(|v| canonical_json::to_jcs(&v).ok()) {
        Some(canon) => bytes.extend_from_slice(&canon),
        None => bytes.extend_from_slice(body),
    }
    format!("sha256:{}", canonical_json::digest::sha256_hex(&bytes))
}

/// The stored answer for `key`, or a 422 when the key was used for another request.
pub(crate) async fn lookup_key(
    hub: &Hub,
    key: &str,
    digest: &str,
) -> Result<Option<Response>, ApiError> {
    let k = key.to_owned();
    answered(hub.db(move |s| s.idempotency(&k)).await?, digest)
}

/// The stored answer `rec` replayed, a 422 when it answered another request, or `None`.
fn answered(rec: Option<IdempotencyRecord>, digest: &str) -> Result<Option<Response>, ApiError> {
    match rec {
        Some(rec) if rec.digest == digest => Ok(Some(replay(&rec))),
        Some(_) => Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "idempotency-key-reused",
            "this Idempotency-Key was already used with a different request",
        )),
        None => Ok(None),
    }
}

pub(crate) fn idem_record(
    key: &str,
    digest: &str,
    status: StatusCode,
    body: &Value,
) -> IdempotencyRecord {
    IdempotencyRecord {
        key: key.to_owned(),
        digest: digest.to_owned(),
        status: status.as_u16(),
        body: jcs_text(body),
    }
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

fn seed_for(id: &str) -> u64 {
    let hex = canonical_json::digest::sha256_hex(id.as_bytes());
    // 53 bits, so the seed stays a JCS-safe integer wherever the log shows it.
    u64::from_str_radix(hex.get(..16).unwrap_or("1"), 16).unwrap_or(1) & ((1 << 53) - 1)
}

// ---- executions

async fn start(
    State(hub): State<Hub>,
    On(device): On,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let who = authenticate(&hub, &headers, Action::Cook)?;
    let key = who.scoped_key(&require_key(&headers)?);
    let doc = parse_object(&headers, &body)?;
    let digest = request_digest(&format!("POST {}/v1/executions", device.route_prefix()), &body);
    // 1. request fields.
    for field in cookwala::precheck::REQUIRED {
        if doc.get(field).is_none() {
            return Err(ApiError::bad_request(format!("missing {field}")));
        }
    }
    let id = str_field(&doc, "id")?.to_owned();
    if !valid_execution_id(&id) {
        return Err(ApiError::bad_request("id must match ^[A-Za-z0-9][A-Za-z0-9._:-]{2,127}$"));
    }
    let recipe_ref = str_field(&doc, "recipe")?;
    str_field(&doc, "recipeHash")?;
    let requested_by = str_field(&doc, "requestedBy")?;
    if who.role == Role::Agent && who.agent.as_deref() != Some(requested_by) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!(
                "this token speaks for {}; requestedBy is {requested_by}",
                who.agent.as_deref().unwrap_or("no agent")
            ),
        ));
    }
    let body_key = str_field(&doc, "idempotencyKey")?;
    if !(8..=128).contains(&body_key.chars().count()) {
        return Err(ApiError::bad_request("idempotencyKey must be 8 to 128 characters"));
    }
    let human_present = match doc.get("x-hub-human-present") {
        None => false,
        Some(v) => v
            .as_bool()
            .ok_or_else(|| ApiError::bad_request("x-hub-human-present must be a boolean"))?,
    };
    if human_present && !who.is_person() {
        return Err(only_a_person(&who, "say that a person is present (x-hub-human-present)"));
    }
    // 2. version.
    let core = str_field(&doc, "core")?;
    if !core.starts_with("0.2.") {
        let mut e = ApiError::new(
            StatusCode::BAD_REQUEST,
            "unsupported-version",
            format!("core {core}; this hub speaks 0.2.x"),
        );
        e.refusal = Some(RefusalReason::UnsupportedVersion.as_str());
        return Err(e);
    }
    // The rest of the document, with the types the Core schema gives it.
    let report = cookwala::documents::validate(
        &doc,
        Some("ExecuteRequest"),
        cookwala::vocab::Vocabulary::builtin(),
    );
    if !report.is_valid() {
        return Err(ApiError::bad_request(format!(
            "not a valid ExecuteRequest: {}",
            issue_list(&report.errors)
        )));
    }
    // A repeat gets the original answer; a repeat arriving while the original is still being
    // committed waits for it. From here on this request holds the key.
    let key_hold = hold_key(&hub, &key).await;
    // One read for both: the key's stored answer (a holder that finished has stored it before
    // letting go) and whether the id is already stored.
    let (k, lookup) = (key.clone(), id.clone());
    let (previous, stored) =
        hub.db(move |s| Ok((s.idempotency(&k)?, s.execution(&lookup)?.is_some()))).await?;
    if let Some(res) = answered(previous, &digest)? {
        return Ok(res);
    }
    // 3. duplicate id (on any device): stored, live, or being created right now.
    let live = hub.inner.live.lock().await;
    if stored || live.contains_key(&id) || hub.reserved().ids.contains(&id) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "conflict",
            format!("execution {id} already exists"),
        ));
    }
    // 4.–9. prechecks (recipe, hash, recall, mandate, allergens, busy), then the dry run.
    let catalog = &hub.inner.config.catalog;
    let recipe_id = catalog
        .recipe_id(recipe_ref)
        .unwrap_or_else(|| cookwala::precheck::ref_id(recipe_ref))
        .to_owned();
    let recipe = catalog.recipe(&recipe_id).cloned();
    let now_ms = crate::unix_ms();
    let now = cookwala::time::Instant::from_unix(now_ms.div_euclid(1000), 0)
        .ok_or_else(|| ApiError::internal(&"clock out of range"))?;
    let recalls = crate::recalls::blocking(&hub.recalls());
    let empty = Value::Object(Map::new());
    let context = cookwala::precheck::Context {
        request: &doc,
        recipe: recipe.as_ref(),
        recalls: &recalls,
        // An agent's mandate must carry a principal signature the hub can verify; a person's
        // request is checked when the hub has trusted keys to check it with.
        keys: (who.role == Role::Agent || !hub.inner.config.trusted_keys.is_empty())
            .then_some(&hub.inner.config.trusted_keys),
        confirmed: &[],
        busy: live.values().any(|r| r.device == device.id)
            || hub.reserved().devices.get(&device.id).is_some_and(|n| *n > 0),
        now,
    };
    // One decision: prechecks, then the dry run with the limits this device enforces.
    let admission = cookwala::admission::admit(
        cookwala::vocab::Vocabulary::builtin(),
        &cookwala::admission::Request {
            precheck: Some(context),
            recipe: recipe.as_ref().unwrap_or(&empty),
            device: &device.doc,
            pack: catalog.pack(),
            narrowing: device.extra_limits.as_ref(),
            human_present,
            allow_model: true,
            now,
        },
    )
    .map_err(|e| match e {
        cookwala::admission::AdmissionError::Request(why) => ApiError::bad_request(why),
        other => ApiError::internal(&other),
    })?;
    let run = RunConfig {
        recipe: recipe_id.clone(),
        device: device.id.clone(),
        human_present,
        seed: seed_for(&id),
        start_unix_ms: now_ms,
        time_scale: hub.time_scale(),
    };
    let recipe_doc = recipe
        .as_ref()
        .map(|r| hub.inner.recipe_jcs.get(&recipe_id).cloned().unwrap_or_else(|| jcs_text(r)));
    let mut config = cookwala_sim::SimConfig::new(
        recipe.unwrap_or_else(|| Value::Object(Map::new())),
        device.doc.clone(),
    );
    // The device's own pack: the simulator enforces what `/v1/safety-limits` serves.
    config.extra_limits.clone_from(&device.extra_limits);
    config.human_present = human_present;
    config.seed = run.seed;
    config.start_unix_ms = now_ms;
    config.time_scale = hub.time_scale();
    config.pack = Some(catalog.pack().clone());
    config.execution_id = id.clone();
    config.request_id = id.clone();
    // The simulator is built from the admission; it does not decide again.
    config.refusal = admission.refusal().cloned();
    config.plan = Some(admission.plan().to_vec());
    config.faults.clone_from(&hub.inner.config.sim_faults);
    let sim = Simulation::new(config).map_err(|e| ApiError::internal(&e))?;
    // The start answer carries the plan the hub accepted (`x-hub-plan`, as the upstream hub
    // sends it and its clients read it); later statuses do not repeat it.
    let mut status = sim.status();
    if !sim.plan().is_empty()
        && let Some(m) = status.as_object_mut()
    {
        let plan = sim.plan().iter().map(cookwala_sim::PlanStep::to_value).collect();
        m.insert("x-hub-plan".into(), Value::Array(plan));
    }
    let snap = snapshot(&id, &sim);
    let rec = ExecutionRecord {
        id: id.clone(),
        request: jcs_text(&doc),
        config: jcs_text(&run.to_value()),
        status: snap.status,
        seq: snap.seq,
        state: snap.state,
        is_final: snap.is_final,
        log: snap.log,
        recipe_doc,
        device_doc: Some(device.doc_jcs.clone()),
        limits_doc: device.extra_limits_jcs.clone(),
    };
    let idem = idem_record(&key, &digest, StatusCode::ACCEPTED, &status);
    let incidents: Vec<NewIncident> = admission
        .findings
        .iter()
        .map(|f| {
            let mut m = Map::new();
            m.insert("kind".into(), "HubFinding".into());
            m.insert("incident".into(), f.incident.as_str().into());
            m.insert("location".into(), f.location.as_str().into());
            m.insert("action".into(), f.action.as_str().into());
            m.insert("execution".into(), id.as_str().into());
            NewIncident { id: id.clone(), body: jcs_text(&Value::Object(m)) }
        })
        .collect();
    let events = hub.created_events(&id, &device.id, &sim);
    let commit = Commit {
        create: Some(rec),
        idempotency: Some(idem),
        incidents,
        events,
        ..Commit::default()
    };
    // Reserve the id (and the device, for an accepted execution), then commit outside the
    // lock so concurrent starts share one fsync. The rest runs in its own task: a client that
    // hangs up must not leave a stored execution without its simulation.
    let accepted = !sim.is_final();
    {
        let mut r = hub.reserved();
        r.ids.insert(id.clone());
        if accepted {
            *r.devices.entry(device.id.clone()).or_default() += 1;
        }
    }
    drop(live);
    let device_id = device.id.clone();
    let task_hub = hub.clone();
    let finish = tokio::spawn(async move {
        let hub = task_hub;
        let res = hub.commit(commit, false).await;
        let mut live = hub.inner.live.lock().await;
        if res.is_ok() && accepted {
            live.insert(id.clone(), LiveRun { device: device_id.clone(), sim });
        }
        {
            let mut r = hub.reserved();
            r.ids.remove(&id);
            if accepted && let Some(n) = r.devices.get_mut(&device_id) {
                *n = n.saturating_sub(1);
            }
        }
        drop(live);
        drop(key_hold);
        res
    });
    finish.await??;
    Ok(status_response(StatusCode::ACCEPTED, &status))
}

/// Holds an idempotency key while its request is answered; dropping it lets waiting repeats
/// read the stored answer.
pub(crate) struct KeyHold {
    hub: Hub,
    key: String,
}

impl Drop for KeyHold {
    fn drop(&mut self) {
        if let Some(n) = self.hub.reserved().keys.remove(&self.key) {
            n.notify_waiters();
        }
    }
}

/// Takes `key`, waiting while another request holds it (until that request has stored its
/// answer or failed).
async fn hold_key(hub: &Hub, key: &str) -> KeyHold {
    loop {
        let holder = {
            let mut r = hub.reserved();
            let holder = r.keys.get(key).cloned();
            if holder.is_none() {
                r.keys.insert(key.to_owned(), Arc::new(tokio::sync::Notify::new()));
            }
            holder
        };
        let Some(notify) = holder else {
            return KeyHold { hub: hub.clone(), key: key.to_owned() };
        };
        // `notified()` registers at creation, so a release after this point wakes us.
        let woken = notify.notified();
        let still_held = hub.reserved().keys.get(key).is_some_and(|n| Arc::ptr_eq(n, &notify));
        if still_held {
            woken.await;
        }
    }
}

/// The live execution `id` if it runs on `device`: `Ok(None)` when it is not live, a 404 when
/// it runs on another device.
fn live_on<'a>(
    live: &'a mut std::collections::BTreeMap<String, LiveRun>,
    id: &str,
    device: &Device,
) -> Result<Option<&'a mut LiveRun>, ApiError> {
    match live.get_mut(id) {
        Some(run) if run.device != device.id => Err(elsewhere(id, Some(&run.device), device)),
        found => Ok(found),
    }
}

async fn status(
    State(hub): State<Hub>,
    On(device): On,
    headers: HeaderMap,
    Path(ExecPath { id }): Path<ExecPath>,
) -> Result<Response, ApiError> {
    authorize(&hub, &headers)?;
    // A final status never changes: answer from memory when it was read before.
    if let Some((seq, body)) = hub.finals().get(&device.id, &id) {
        return Ok(stored_status_response(seq, body));
    }
    {
        let mut live = hub.inner.live.lock().await;
        if let Some(run) = live_on(&mut live, &id, &device)? {
            return Ok(status_response(StatusCode::OK, &run.status()));
        }
    }
    // A stored status is already JCS: serve its bytes as they are.
    let rec = stored_on(&hub, &id, &device).await?;
    let body = axum::body::Bytes::from(rec.status);
    if rec.is_final {
        hub.finals().put(&device.id, &id, rec.seq, body.clone());
    }
    Ok(stored_status_response(rec.seq, body))
}

fn stored_status_response(seq: u64, body: axum::body::Bytes) -> Response {
    let mut res = (StatusCode::OK, body).into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(COOKWALA_JSON));
    if let Ok(v) = HeaderValue::from_str(&format!("\"{seq}\"")) {
        h.insert(header::ETAG, v);
    }
    res
}

/// Stop: never refused for authorization, no `If-Match`; an `Idempotency-Key` is honoured when
/// sent but its absence does not block a stop. Nor is a stop refused for the device in its
/// path: execution ids are unique across devices, so a stop sent through another device's
/// routes (a client that only knows `/v1`) stops the execution all the same.
async fn stop(
    State(hub): State<Hub>,
    On(device): On,
    headers: HeaderMap,
    Path(ExecPath { id }): Path<ExecPath>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let who = caller(&hub, &headers);
    let key = idempotency_key(&headers).unwrap_or(None).map(|k| who.scoped_key(&k));
    let route = format!("POST {}/v1/executions/{id}/stop", device.route_prefix());
    let digest = request_digest(&route, &body);
    let reason = canonical_json::parse(&body)
        .ok()
        .and_then(|v| v.get("reason").and_then(Value::as_str).map(str::to_owned))
        .filter(|r| !r.is_empty() && r.chars().count() <= 200)
        .unwrap_or_else(|| "requested".to_owned());
    let mut live = hub.inner.live.lock().await;
    if let Some(k) = &key
        && let Some(res) = lookup_key(&hub, k, &digest).await?
    {
        return Ok(res);
    }
    let (status, change) = match live.get_mut(&id) {
        Some(sim) => {
            let (prev, incidents) = (sim.state(), sim.incidents().len());
            let events = sim.stop(&reason);
            (sim.status(), Some(hub.change(&id, sim, prev, &events, incidents)))
        }
        None => {
            let lookup = id.clone();
            match hub.db(move |s| s.execution(&lookup)).await? {
                Some(rec) => (parse_stored(&rec.status)?, None),
                None => return Err(ApiError::not_found(format!("no execution {id}"))),
            }
        }
    };
    let idempotency =
        key.as_deref().map(|k| idem_record(k, &digest, StatusCode::ACCEPTED, &status));
    let commit = match change {
        Some(c) => Commit { idempotency, ..c },
        None => Commit { idempotency, ..Commit::default() },
    };
    hub.commit(commit, true).await?;
    live.retain(|_, sim| !sim.is_final());
    Ok(status_response(StatusCode::ACCEPTED, &status))
}

async fn current_status_stored(hub: &Hub, id: &str, device: &Device) -> Result<Value, ApiError> {
    parse_stored(&stored_on(hub, id, device).await?.status)
}

fn parse_if_match(headers: &HeaderMap) -> Result<String, ApiError> {
    let raw = headers.get(header::IF_MATCH).ok_or_else(|| {
        ApiError::new(
            StatusCode::PRECONDITION_REQUIRED,
            "if-match-required",
            "resume needs If-Match with the seq of the status you saw",
        )
    })?;
    let text = raw.to_str().unwrap_or_default().trim();
    let text = text.strip_prefix("W/").unwrap_or(text);
    Ok(text.trim_matches('"').to_owned())
}

async fn resume(
    State(hub): State<Hub>,
    On(device): On,
    headers: HeaderMap,
    Path(ExecPath { id }): Path<ExecPath>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let who = authenticate(&hub, &headers, Action::Cook)?;
    let key = who.scoped_key(&require_key(&headers)?);
    if !body.is_empty() {
        parse_object(&headers, &body)?;
    }
    let mut live = hub.inner.live.lock().await;
    let current = match live_on(&mut live, &id, &device)? {
        Some(sim) => sim.status(),
        None => current_status_stored(&hub, &id, &device).await?,
    };
    let if_match = parse_if_match(&headers)?;
    let route = format!("POST {}/v1/executions/{id}/resume {if_match}", device.route_prefix());
    let digest = request_digest(&route, &body);
    if let Some(res) = lookup_key(&hub, &key, &digest).await? {
        return Ok(res);
    }
    let seq = current.get("seq").and_then(Value::as_i64).unwrap_or(-1);
    if if_match != seq.to_string() {
        return Err(ApiError::new(
            StatusCode::PRECONDITION_FAILED,
            "precondition-failed",
            format!("seq is {seq}"),
        ));
    }
    let state = current.get("state").and_then(Value::as_str).unwrap_or("unknown").to_owned();
    let Some(sim) = live.get_mut(&id) else {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "wrong-state",
            format!("cannot resume an execution in state {state}"),
        ));
    };
    if sim.state() == cookwala::execution::ExecutionState::NeedsHuman && !who.is_person() {
        return Err(only_a_person(&who, "confirm a human step (resume from needs_human)"));
    }
    let (prev, incidents) = (sim.state(), sim.incidents().len());
    // The answer is the status as it moved to `running`, even when the confirmed step then
    // ended at once (the stored status, and the stream, show what followed).
    let (events, status) = sim
        .resume_by(Some(&who.label()))
        .map_err(|e| ApiError::new(StatusCode::CONFLICT, "wrong-state", e.to_string()))?;
    let change = hub.change(&id, sim, prev, &events, incidents);
    let idempotency = Some(idem_record(&key, &digest, StatusCode::ACCEPTED, &status));
    hub.commit(Commit { idempotency, ..change }, true).await?;
    Ok(status_response(StatusCode::ACCEPTED, &status))
}

async fn log(
    State(hub): State<Hub>,
    On(device): On,
    headers: HeaderMap,
    Path(ExecPath { id }): Path<ExecPath>,
) -> Result<Response, ApiError> {
    authorize(&hub, &headers)?;
    let rec = stored_on(&hub, &id, &device).await?;
    match (&rec.log, rec.is_final) {
        (Some(text), true) => Ok(doc_response(StatusCode::OK, &parse_stored(text)?)),
        _ => Err(ApiError::not_found(format!(
            "execution {id} is {}; the log exists once the execution has ended",
            rec.state
        ))),
    }
}

// ---- catalog and device documents (open)

/// The SafetyLimits the device enforces (the default pack narrowed by its own; see
/// [`crate::catalog`]).
async fn safety_limits(On(device): On) -> Response {
    doc_response(StatusCode::OK, &device.limits)
}

async fn capabilities(State(hub): State<Hub>, On(device): On) -> Response {
    let mut res = doc_response(StatusCode::OK, &device.doc);
    if let Some(ms) = hub.last_heartbeat(&device.id)
        && let Ok(v) = HeaderValue::from_str(&cookwala_sim::rfc3339_ms(ms))
    {
        res.headers_mut().insert("x-hub-last-heartbeat", v);
    }
    res
}

/// `GET /v1/devices` (bearer, read): `{devices: [{id, name, vendor?, root, prefix, busy,
/// active, lastHeartbeat?}]}`, the root device first, then the others by id. `name` is the
/// Capabilities `actor.model` (else the id); `prefix` is where its Core endpoints are.
async fn devices(State(hub): State<Hub>, headers: HeaderMap) -> Result<Response, ApiError> {
    authorize(&hub, &headers)?;
    let live: Vec<(String, String)> = {
        let live = hub.inner.live.lock().await;
        live.iter().map(|(id, run)| (id.clone(), run.device.clone())).collect()
    };
    let root = hub.root_device();
    let others = hub.inner.devices.values().filter(|d| !d.root);
    let list = std::iter::once(&root)
        .chain(others)
        .map(|d| {
            let actor = |k: &str| d.doc.pointer(&format!("/actor/{k}")).and_then(Value::as_str);
            let active: Vec<Value> = live
                .iter()
                .filter(|(_, dev)| *dev == d.id)
                .map(|(id, _)| Value::from(id.as_str()))
                .collect();
            let mut m = Map::new();
            m.insert("id".into(), d.id.as_str().into());
            m.insert("name".into(), actor("model").unwrap_or(&d.id).into());
            if let Some(v) = actor("vendor") {
                m.insert("vendor".into(), v.into());
            }
            m.insert("root".into(), d.root.into());
            m.insert("prefix".into(), format!("/devices/{}/v1", d.id).into());
            m.insert("busy".into(), (!active.is_empty()).into());
            m.insert("active".into(), Value::Array(active));
            if let Some(ms) = hub.last_heartbeat(&d.id) {
                m.insert("lastHeartbeat".into(), cookwala_sim::rfc3339_ms(ms).into());
            }
            Value::Object(m)
        })
        .collect();
    let mut body = Map::new();
    body.insert("devices".into(), Value::Array(list));
    Ok(doc_response(StatusCode::OK, &Value::Object(body)))
}

async fn openapi(State(hub): State<Hub>) -> Response {
    let text = hub.inner.config.spec.clone().unwrap_or_else(|| crate::openapi::OWN_SPEC.to_owned());
    let mut res = (StatusCode::OK, text).into_response();
    // JSON is YAML too: one text serves both paths.
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    res
}

async fn incident(
    State(hub): State<Hub>,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let who = caller(&hub, &headers);
    // Anyone may report, so a caller without a token is counted per address.
    if who.scope == "open" && !hub.inner.config.no_auth {
        let addr = extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map_or(std::net::IpAddr::from([0, 0, 0, 0]), |c| c.0.ip());
        let per_minute = hub.inner.config.incidents_per_minute;
        let admitted = hub
            .inner
            .incident_rate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .admit(addr, crate::unix_ms(), per_minute);
        if !admitted {
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too-many-requests",
                format!("at most {per_minute} incident reports a minute from one address"),
            ));
        }
    }
    let key = who.scoped_key(&require_key(&headers)?);
    let doc = parse_object(&headers, &body)?;
    let digest = request_digest("POST /v1/incidents", &body);
    let report = cookwala::documents::validate(
        &doc,
        Some("IncidentReport"),
        cookwala::vocab::Vocabulary::builtin(),
    );
    if let Some(field) = crate::privacy::personal_field(&doc) {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "personal-data",
            format!("incident reports are anonymous: remove {field}"),
        ));
    }
    if !report.is_valid() {
        return Err(ApiError::bad_request(format!(
            "not a valid IncidentReport: {}",
            issue_list(&report.errors)
        )));
    }
    if let Some(what) = crate::privacy::personal_text(&doc) {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "personal-data",
            format!("incident reports are anonymous: the free text contains {what}"),
        ));
    }
    let _guard = hub.inner.live.lock().await;
    if let Some(res) = lookup_key(&hub, &key, &digest).await? {
        return Ok(res);
    }
    let id = doc.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
    let mut ack = Map::new();
    ack.insert("received".into(), true.into());
    ack.insert("id".into(), id.as_str().into());
    let ack = Value::Object(ack);
    let idem = idem_record(&key, &digest, StatusCode::ACCEPTED, &ack);
    let text = jcs_text(&doc);
    hub.db(move |s| s.add_incident(&id, &text, Some(&idem))).await?;
    Ok(doc_response(StatusCode::ACCEPTED, &ack))
}
