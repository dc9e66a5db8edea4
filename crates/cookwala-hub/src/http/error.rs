//! The one HTTP error type: every failure becomes an RFC 9457 `application/problem+json`.
//!
//! Under `http/`, with the rest of what speaks HTTP; public as `cookwala_hub::error`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use canonical_json::{Map, Value};

use crate::storage::StorageError;

/// The media type of problem documents.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// The longest problem detail, in characters; longer ones are cut and end in `…`.
pub const MAX_DETAIL_CHARS: usize = 400;

/// At most the first [`QUOTE_CHARS`] characters of `input`, for a message that quotes what
/// it rejects (`…` marks a cut).
pub fn quote(input: &str) -> String {
    match input.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("{}…", &input[..cut]),
        None => input.to_owned(),
    }
}

/// How many characters of a rejected input a message quotes.
pub const QUOTE_CHARS: usize = 64;

/// An HTTP problem: status, a short slug `title`, a human `detail`, an optional refusal code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The slug (`invalid-request`, `not-found`, …); also the last segment of `type`.
    pub title: &'static str,
    /// What went wrong.
    pub detail: Option<String>,
    /// A RefusalReason code, when the problem is a refusal (`unsupported_version`).
    pub refusal: Option<&'static str>,
}

impl ApiError {
    /// A problem with a detail, cut to [`MAX_DETAIL_CHARS`] characters: a detail may quote
    /// what it rejects (a parser's message quotes the bad number), and a problem must stay
    /// small whatever the input was.
    pub fn new(status: StatusCode, title: &'static str, detail: impl Into<String>) -> ApiError {
        let mut detail = detail.into();
        if let Some((cut, _)) = detail.char_indices().nth(MAX_DETAIL_CHARS) {
            detail.truncate(cut);
            detail.push('…');
        }
        ApiError { status, title, detail: Some(detail), refusal: None }
    }

    /// 400 `invalid-request`.
    pub fn bad_request(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid-request", detail)
    }

    /// 404 `not-found`.
    pub fn not_found(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "not-found", detail)
    }

    /// 428 `if-match-required`: a resume without the seq the caller saw.
    pub fn if_match_required() -> ApiError {
        ApiError::new(
            StatusCode::PRECONDITION_REQUIRED,
            "if-match-required",
            "resume needs If-Match with the seq of the status you saw",
        )
    }

    /// 500 with a generic detail; the cause is written to stderr, never to the client.
    pub fn internal(cause: &dyn std::fmt::Display) -> ApiError {
        crate::clock::note(format_args!("cookwala-hub: internal error: {cause}"));
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "internal error")
    }

    /// The problem document.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), format!("https://cookwala.ai/errors/{}", self.title).into());
        m.insert("title".into(), self.title.into());
        if let Some(d) = &self.detail {
            m.insert("detail".into(), d.as_str().into());
        }
        if let Some(r) = self.refusal {
            m.insert("refusal".into(), r.into());
        }
        m.insert("status".into(), u64::from(self.status.as_u16()).into());
        Value::Object(m)
    }

    /// The problem document's bytes (JCS).
    pub fn body(&self) -> Vec<u8> {
        canonical_json::to_jcs(&self.to_value()).unwrap_or_default()
    }
}

impl From<StorageError> for ApiError {
    fn from(e: StorageError) -> ApiError {
        match e {
            StorageError::Conflict(what) => {
                ApiError::new(StatusCode::CONFLICT, "conflict", format!("already stored: {what}"))
            }
            StorageError::Busy(device) => ApiError::new(
                StatusCode::CONFLICT,
                "device-busy",
                format!("device {device} runs another execution"),
            ),
            StorageError::Fenced(id) => ApiError::new(
                StatusCode::CONFLICT,
                "taken-over",
                format!("execution {id} was taken over by another hub replica and ended safely"),
            ),
            e => ApiError::internal(&e),
        }
    }
}

impl From<tokio::task::JoinError> for ApiError {
    fn from(e: tokio::task::JoinError) -> ApiError {
        ApiError::internal(&e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut res = (self.status, self.body()).into_response();
        res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        if self.status == StatusCode::UNAUTHORIZED {
            res.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        res
    }
}
