//! The request limits that answer in HTTP: the body limit's problem document (413, for axum's
//! plain-text rejection too), the size of an incident report sent without a token, and CORS.
//! The counted limits (open streams, report rate, connections) are state and sit in
//! `crate::limits`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::http::error::ApiError;

/// Turns the body-limit rejection (axum's plain-text 413) into a problem document.
pub(crate) async fn problem_413(res: Response) -> Response {
    let plain = res.status() == StatusCode::PAYLOAD_TOO_LARGE
        && res
            .headers()
            .get(header::CONTENT_TYPE)
            .is_none_or(|v| v != HeaderValue::from_static("application/problem+json"));
    if !plain {
        return res;
    }
    too_large().into_response()
}

/// The 413 problem for a body over `--max-body`.
pub(crate) fn too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload-too-large",
        "the request body is larger than this hub accepts (serve --max-body BYTES)",
    )
}

/// The most bytes (JCS) an incident report sent without a token may take.
pub(crate) const MAX_ANONYMOUS_REPORT: usize = 16 * 1024;

/// The most bytes (JCS, keys included) its `x-` members may take together, at any depth.
pub(crate) const MAX_ANONYMOUS_EXTENSIONS: usize = 2 * 1024;

/// A 413 problem for an anonymous incident report over [`MAX_ANONYMOUS_REPORT`], or whose
/// `x-` content is over [`MAX_ANONYMOUS_EXTENSIONS`]. Anyone may post one, ten a minute per
/// address, kept for the retention period: without a bound a stranger could store the body
/// limit each time. One pass over the document (an `x-` member is measured, not entered).
///
/// # Errors
/// The 413 problem.
pub(crate) fn anonymous_report_size(doc: &canonical_json::Value) -> Result<(), ApiError> {
    fn extensions(v: &canonical_json::Value) -> usize {
        use canonical_json::Value;
        match v {
            Value::Object(m) => m
                .iter()
                .map(
                    |(k, v)| {
                        if k.starts_with("x-") { k.len() + jcs_len(v) } else { extensions(v) }
                    },
                )
                .sum(),
            Value::Array(a) => a.iter().map(extensions).sum(),
            _ => 0,
        }
    }
    fn jcs_len(v: &canonical_json::Value) -> usize {
        canonical_json::to_jcs(v).map_or(usize::MAX, |b| b.len())
    }
    let total = jcs_len(doc);
    let ext = extensions(doc);
    if total > MAX_ANONYMOUS_REPORT || ext > MAX_ANONYMOUS_EXTENSIONS {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "report-too-large",
            format!(
                "an incident report sent without a token may take {MAX_ANONYMOUS_REPORT} bytes, \
                 {MAX_ANONYMOUS_EXTENSIONS} of them in x- members (this one: {total}, {ext}); \
                 send a token to report more"
            ),
        ));
    }
    Ok(())
}

/// The CORS layer for `origins` (`*` allows any origin); `None` when no origin is allowed.
/// Preflights are answered for the Core methods and the headers clients send; `ETag` is
/// exposed so a browser client can send it back in `If-Match`.
pub(crate) fn cors(origins: &[String]) -> Option<tower_http::cors::CorsLayer> {
    use axum::http::{HeaderName, Method};
    use tower_http::cors::{AllowOrigin, CorsLayer};
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST, Method::OPTIONS])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                HeaderName::from_static("idempotency-key"),
                header::IF_MATCH,
                HeaderName::from_static("last-event-id"),
            ])
            .expose_headers([header::ETAG, HeaderName::from_static("idempotent-replayed")])
            .max_age(std::time::Duration::from_secs(600)),
    )
}
