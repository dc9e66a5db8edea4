//! `POST /v1/incidents`: anonymous incident reports, rate-limited per address when sent
//! without a token.

#[allow(clippy::wildcard_imports)]
use super::*;

pub(super) async fn incident(
    State(hub): State<Hub>,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let who = caller(&hub, &headers);
    // Anyone may report, so a caller without a token is counted per address.
    if who.scope == "open" && !hub.config().no_auth {
        let addr = extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map_or(std::net::IpAddr::from([0, 0, 0, 0]), |c| c.0.ip());
        let per_minute = hub.config().incidents_per_minute;
        if !hub.admit_anonymous_report(addr) {
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too-many-requests",
                format!("at most {per_minute} incident reports a minute from one address"),
            ));
        }
    }
    let key = who.scoped_key(&require_key(&headers)?);
    let doc = parse_object(&headers, &body)?;
    if who.scope == "open" {
        crate::http::limits::anonymous_report_size(&doc)?;
    }
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
    Ok(respond(hub.report_incident(key, digest, &doc).await?, StatusCode::ACCEPTED))
}
