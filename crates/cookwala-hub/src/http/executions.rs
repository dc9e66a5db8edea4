//! The execution routes: start, status, stop, resume and log (device-specific; see
//! [`super::On`]).

#[allow(clippy::wildcard_imports)]
use super::*;

// ---- executions

pub(super) async fn start(
    State(hub): State<Hub>,
    On(device): On,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let who = authenticate(&hub, &headers, Action::Cook)?;
    if hub.is_closing() {
        // Shutdown stops every execution; one started now would be stopped at once.
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting-down",
            "the hub is shutting down; start the execution after it restarts",
        ));
    }
    let key = who.scoped_key(&require_key(&headers)?);
    let doc = parse_object(&headers, &body)?;
    let digest = request_digest(&format!("POST {}/v1/executions", device.route_prefix()), &body);
    // 1. request fields: the prechecks' own first check, answered before any other.
    cookwala::precheck::required_fields(&doc).map_err(|e| ApiError::bad_request(e.to_string()))?;
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
        return Err(
            only_a_person(&who, "say that a person is present (x-hub-human-present)").into()
        );
    }
    // 2. version.
    let core = str_field(&doc, "core")?;
    if !cookwala::precheck::version_supported(core) {
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
    let answer = hub
        .start(Start {
            who: &who,
            device: &device,
            key,
            digest,
            doc: &doc,
            id,
            recipe_ref,
            human_present,
        })
        .await?;
    Ok(respond(answer, StatusCode::ACCEPTED))
}

pub(super) async fn status(
    State(hub): State<Hub>,
    On(device): On,
    headers: HeaderMap,
    Path(ExecPath { id }): Path<ExecPath>,
) -> Result<Response, ApiError> {
    authorize(&hub, &headers)?;
    // A stored status is already JCS: its bytes are served as they are (a final one from the
    // hub's memory once read: it never changes).
    Ok(match hub.status_of(&id, &device).await? {
        StatusView::Live(status) => status_response(StatusCode::OK, &status),
        StatusView::Stored { seq, body } => stored_status_response(seq, body),
    })
}

pub(super) fn stored_status_response(seq: u64, body: axum::body::Bytes) -> Response {
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
pub(super) async fn stop(
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
    let key = key.map(|k| (k, digest));
    Ok(respond(hub.stop(&id, &reason, key).await?, StatusCode::ACCEPTED))
}

/// The seq `If-Match` names (`None` without the header: the service answers 428 once it knows
/// the execution exists, so an unknown one is still a 404).
pub(super) fn parse_if_match(headers: &HeaderMap) -> Option<String> {
    let raw = headers.get(header::IF_MATCH)?;
    let text = raw.to_str().unwrap_or_default().trim();
    // If-Match compares strongly (RFC 9110 §13.1.1): a weak tag never matches. It is kept
    // whole, so it cannot equal a seq and the resume is a 412.
    if text.starts_with("W/") {
        return Some(text.to_owned());
    }
    Some(text.trim_matches('"').to_owned())
}

pub(super) async fn resume(
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
    let if_match = parse_if_match(&headers);
    let answer = hub.resume(&who, &device, &id, key, if_match, &body).await?;
    Ok(respond(answer, StatusCode::ACCEPTED))
}

pub(super) async fn log(
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
