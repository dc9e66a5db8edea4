//! What bounds the cost of one request: the body limit's problem document, the cap on open
//! event streams, and the per-address rate of unauthenticated incident reports.
//!
//! Each limit answers with a problem document (413, 503, 429), never a dropped connection.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

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
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload-too-large",
        "the request body is larger than this hub accepts (serve --max-body BYTES)",
    )
    .into_response()
}

/// One open event stream; dropping it frees its place.
#[derive(Debug)]
pub(crate) struct StreamSlot(Arc<AtomicUsize>);

impl StreamSlot {
    /// A place among at most `max` open streams, or a 503 problem when all are taken.
    pub(crate) fn take(open: &Arc<AtomicUsize>, max: usize) -> Result<StreamSlot, ApiError> {
        let taken =
            open.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max).then_some(n + 1));
        match taken {
            Ok(_) => Ok(StreamSlot(open.clone())),
            Err(_) => Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "too-many-streams",
                format!("{max} event streams are open already (serve --max-streams N)"),
            )),
        }
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Counts per client address within one minute (fixed windows; the map is cleared each
/// minute, so it holds at most one minute's addresses).
#[derive(Debug, Default)]
pub(crate) struct RateWindow {
    minute: i64,
    counts: HashMap<IpAddr, u32>,
}

impl RateWindow {
    /// Counts one request from `addr` at `now_ms`; false when it is over `per_minute`.
    pub(crate) fn admit(&mut self, addr: IpAddr, now_ms: i64, per_minute: u32) -> bool {
        let minute = now_ms.div_euclid(60_000);
        if minute != self.minute {
            self.minute = minute;
            self.counts.clear();
        }
        let n = self.counts.entry(addr).or_insert(0);
        if *n >= per_minute {
            return false;
        }
        *n += 1;
        true
    }
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
