//! What bounds the cost of one request: the body limit's problem document, the caps on open
//! event streams (overall and per principal), and the per-address rate of unauthenticated incident reports.
//!
//! The connection limits ([`ConnLimits`]) are kept here too and enforced by the accept loop.
//!
//! Each request limit answers with a problem document (408, 413, 503, 429; hyper answers 431
//! for an oversized head); only a connection over the connection budget is closed unanswered.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

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

/// The open event streams (SSE and WebSocket), counted overall and per principal.
///
/// One principal holds at most a quarter of `--max-streams` (at least one), so a viewer token
/// cannot take every place; and an owner who holds no stream gets one even when every place
/// is taken, from a small reserve ([`OWNER_RESERVE`]), so the person who runs the hub can
/// always watch it.
#[derive(Debug, Default)]
pub(crate) struct StreamSlots {
    open: std::sync::Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    total: usize,
    by_principal: HashMap<String, usize>,
}

/// Places beyond `--max-streams` kept for owners holding no stream.
pub(crate) const OWNER_RESERVE: usize = 4;

/// One open event stream; dropping it frees its place.
#[derive(Debug)]
pub(crate) struct StreamSlot {
    slots: Arc<StreamSlots>,
    scope: String,
}

impl StreamSlots {
    /// The counts (a poisoned lock is recovered: every update leaves them consistent).
    fn open(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A place for one more stream of `who` among at most `max`, or a 503 problem.
    pub(crate) fn take(
        self: &Arc<Self>,
        who: &crate::auth::Principal,
        max: usize,
    ) -> Result<StreamSlot, ApiError> {
        let mut open = self.open();
        let mine = open.by_principal.get(&who.scope).copied().unwrap_or(0);
        let per_principal = (max / 4).max(1);
        if mine >= per_principal {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "too-many-streams",
                format!(
                    "this token holds {mine} event streams already, the most one token may \
                     (a quarter of serve --max-streams N)"
                ),
            ));
        }
        let owner_reserve =
            who.role == crate::auth::Role::Owner && mine == 0 && open.total < max + OWNER_RESERVE;
        if open.total >= max && !owner_reserve {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "too-many-streams",
                format!("{max} event streams are open already (serve --max-streams N)"),
            ));
        }
        open.total += 1;
        *open.by_principal.entry(who.scope.clone()).or_insert(0) += 1;
        Ok(StreamSlot { slots: self.clone(), scope: who.scope.clone() })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.slots.open();
        open.total = open.total.saturating_sub(1);
        if let Some(n) = open.by_principal.get_mut(&self.scope) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.by_principal.remove(&self.scope);
            }
        }
    }
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

/// What bounds a connection (enforced by the accept loop, `src/server.rs`): how long its parts may take, how large its head may be, and how
/// many connections are open at once (`cookwala serve` flags of the same names).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnLimits {
    /// Connections open at once (`--max-connections`); keep it below the file limit.
    pub max_connections: usize,
    /// Connections open at once from one client address (`--max-connections-per-address`).
    pub max_per_address: usize,
    /// Time for a request head to arrive, from when the hub waits for it (`--header-timeout`).
    pub header_timeout: std::time::Duration,
    /// Time for a request body to arrive once its head is in (`--body-timeout`).
    pub body_timeout: std::time::Duration,
    /// Time a kept-alive connection may wait for its next request (`--idle-timeout`). The
    /// header timeout also runs during that wait, so the shorter of the two applies.
    pub idle_timeout: std::time::Duration,
    /// The largest request head, start line included (`--max-header-bytes`; at least 8192).
    pub max_header_bytes: usize,
    /// Time connections get to finish their answer at shutdown (`--shutdown-grace`).
    pub shutdown_grace: std::time::Duration,
}

impl Default for ConnLimits {
    fn default() -> ConnLimits {
        ConnLimits {
            max_connections: 512,
            max_per_address: 128,
            header_timeout: std::time::Duration::from_secs(10),
            body_timeout: std::time::Duration::from_secs(30),
            idle_timeout: std::time::Duration::from_secs(5),
            max_header_bytes: 16 * 1024,
            shutdown_grace: std::time::Duration::from_secs(5),
        }
    }
}

/// hyper refuses a read buffer below this many bytes.
pub const MIN_HEADER_BYTES: usize = 8192;
