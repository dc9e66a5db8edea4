//! The Core HTTP API (`api/core.openapi.yaml`) as an axum router.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use canonical_json::{Map, Value};
use cookwala::dryrun::RefusalReason;
use cookwala_sim::Simulation;

use crate::auth::{Action, Principal, Role};
use crate::error::ApiError;
use crate::hub::{Hub, RunConfig, jcs_text, snapshot};
use crate::storage::{Commit, ExecutionRecord, IdempotencyRecord, NewIncident};

/// The media type of Cookwala bodies.
pub const COOKWALA_JSON: &str = "application/vnd.cookwala+json";

/// The router for `hub`.
pub fn app(hub: Hub) -> Router {
    Router::new()
        .route("/v1/executions", post(start))
        .route("/v1/executions/{id}", get(status))
        .route("/v1/executions/{id}/stop", post(stop))
        .route("/v1/executions/{id}/resume", post(resume))
        .route("/v1/executions/{id}/log", get(log))
        .route("/v1/safety-limits", get(safety_limits))
        .route("/v1/capabilities", get(capabilities))
        .route("/v1/recalls", get(crate::recalls::list).post(crate::recalls::publish))
        .route("/v1/incidents", post(incident))
        .route("/openapi.yaml", get(openapi))
        .route("/openapi.json", get(openapi))
        .route("/v1/conformance", get(crate::conformance::conformance))
        .route("/.well-known/cookwala.json", get(crate::identity::well_known))
        .merge(crate::tools::routes())
        .merge(crate::sse::routes())
        .fallback(|| async { ApiError::not_found("no such resource") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method-not-allowed",
                "method not allowed",
            )
        })
        .with_state(hub)
}

// ---- helpers

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

/// Who sent the request, if they may perform `action`: 401 without a known bearer token, 403
/// when the token's role does not allow it. With auth off, everyone is an anonymous owner.
pub(crate) fn authenticate(
    hub: &Hub,
    headers: &HeaderMap,
    action: Action,
) -> Result<Principal, ApiError> {
    let config = &hub.inner.config;
    if config.token.is_none() && config.tokens.is_empty() {
        return Ok(Principal { name: "anonymous".into(), role: Role::Owner, agent: None });
    }
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|t| !t.is_empty());
    let who = given.and_then(|t| {
        let owner = config
            .token
            .as_deref()
            .is_some_and(|o| crate::auth::constant_time_eq(t.as_bytes(), o.as_bytes()));
        if owner {
            return Some(Principal { name: "owner".into(), role: Role::Owner, agent: None });
        }
        config.tokens.find(t).map(|e| Principal {
            name: e.name.clone(),
            role: e.role,
            agent: e.agent.clone(),
        })
    });
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
    match hub.db(move |s| s.idempotency(&k)).await? {
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
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let who = authenticate(&hub, &headers, Action::Cook)?;
    let key = require_key(&headers)?;
    let doc = parse_object(&headers, &body)?;
    let digest = request_digest("POST /v1/executions", &body);
    let mut live = hub.inner.live.lock().await;
    if let Some(res) = lookup_key(&hub, &key, &digest).await? {
        return Ok(res);
    }
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
    // 3. duplicate id.
    let lookup = id.clone();
    if live.contains_key(&id) || hub.db(move |s| s.execution(&lookup)).await?.is_some() {
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
    let outcome = cookwala::precheck::precheck(&cookwala::precheck::Context {
        request: &doc,
        recipe: recipe.as_ref(),
        recalls: &recalls,
        // An agent's mandate must carry a principal signature the hub can verify; a person's
        // request is checked when the hub has trusted keys to check it with.
        keys: (who.role == Role::Agent || !hub.inner.config.trusted_keys.is_empty())
            .then_some(&hub.inner.config.trusted_keys),
        confirmed: &[],
        busy: !live.is_empty(),
        now,
    })
    .map_err(ApiError::bad_request)?;
    let run = RunConfig {
        recipe: recipe_id.clone(),
        device: hub.inner.device_id.clone(),
        human_present,
        seed: seed_for(&id),
        start_unix_ms: now_ms,
    };
    let mut config = cookwala_sim::SimConfig::new(
        recipe.unwrap_or_else(|| Value::Object(Map::new())),
        hub.inner.device.clone(),
    );
    config.human_present = human_present;
    config.seed = run.seed;
    config.start_unix_ms = now_ms;
    config.execution_id = id.clone();
    config.request_id = id.clone();
    config.refusal = outcome.refusal;
    config.faults.clone_from(&hub.inner.config.sim_faults);
    let sim = Simulation::new(config).map_err(|e| ApiError::internal(&e))?;
    let status = sim.status();
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
    };
    let idem = idem_record(&key, &digest, StatusCode::ACCEPTED, &status);
    let incidents: Vec<NewIncident> = outcome
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
    let events = hub.created_events(&id, &sim);
    let commit = Commit {
        create: Some(rec),
        idempotency: Some(idem),
        incidents,
        events,
        ..Commit::default()
    };
    hub.commit(commit, false).await?;
    if !sim.is_final() {
        live.insert(id, sim);
    }
    Ok(status_response(StatusCode::ACCEPTED, &status))
}

async fn current_status(hub: &Hub, id: &str) -> Result<Value, ApiError> {
    {
        let live = hub.inner.live.lock().await;
        if let Some(sim) = live.get(id) {
            return Ok(sim.status());
        }
    }
    let lookup = id.to_owned();
    match hub.db(move |s| s.execution(&lookup)).await? {
        Some(rec) => parse_stored(&rec.status),
        None => Err(ApiError::not_found(format!("no execution {id}"))),
    }
}

async fn status(
    State(hub): State<Hub>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    authorize(&hub, &headers)?;
    Ok(status_response(StatusCode::OK, &current_status(&hub, &id).await?))
}

/// Stop: never refused for authorization, no `If-Match`; an `Idempotency-Key` is honoured when
/// sent but its absence does not block a stop.
async fn stop(
    State(hub): State<Hub>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let key = idempotency_key(&headers).unwrap_or(None);
    let digest = request_digest(&format!("POST /v1/executions/{id}/stop"), &body);
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
        None => (current_status_stored(&hub, &id).await?, None),
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

async fn current_status_stored(hub: &Hub, id: &str) -> Result<Value, ApiError> {
    let lookup = id.to_owned();
    match hub.db(move |s| s.execution(&lookup)).await? {
        Some(rec) => parse_stored(&rec.status),
        None => Err(ApiError::not_found(format!("no execution {id}"))),
    }
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
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    authenticate(&hub, &headers, Action::Cook)?;
    let key = require_key(&headers)?;
    if !body.is_empty() {
        parse_object(&headers, &body)?;
    }
    let mut live = hub.inner.live.lock().await;
    let current = match live.get(&id) {
        Some(sim) => sim.status(),
        None => current_status_stored(&hub, &id).await?,
    };
    let if_match = parse_if_match(&headers)?;
    let digest = request_digest(&format!("POST /v1/executions/{id}/resume {if_match}"), &body);
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
    let (prev, incidents) = (sim.state(), sim.incidents().len());
    let events = sim
        .resume()
        .map_err(|e| ApiError::new(StatusCode::CONFLICT, "wrong-state", e.to_string()))?;
    let status = sim.status();
    let change = hub.change(&id, sim, prev, &events, incidents);
    let idempotency = Some(idem_record(&key, &digest, StatusCode::ACCEPTED, &status));
    hub.commit(Commit { idempotency, ..change }, true).await?;
    Ok(status_response(StatusCode::ACCEPTED, &status))
}

async fn log(
    State(hub): State<Hub>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    authorize(&hub, &headers)?;
    let lookup = id.clone();
    let rec = hub
        .db(move |s| s.execution(&lookup))
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no execution {id}")))?;
    match (&rec.log, rec.is_final) {
        (Some(text), true) => Ok(doc_response(StatusCode::OK, &parse_stored(text)?)),
        _ => Err(ApiError::not_found(format!(
            "execution {id} is {}; the log exists once the execution has ended",
            rec.state
        ))),
    }
}

// ---- catalog and device documents (open)

async fn safety_limits() -> Response {
    doc_response(StatusCode::OK, &cookwala::limits::default_pack())
}

async fn capabilities(State(hub): State<Hub>) -> Response {
    let mut res = doc_response(StatusCode::OK, &hub.inner.device);
    if let Some(ms) = hub.last_heartbeat(&hub.inner.device_id)
        && let Ok(v) = HeaderValue::from_str(&cookwala_sim::rfc3339_ms(ms))
    {
        res.headers_mut().insert("x-hub-last-heartbeat", v);
    }
    res
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
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let key = require_key(&headers)?;
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
