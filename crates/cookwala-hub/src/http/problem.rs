//! The one place a service failure becomes a problem document: [`service::Error`] to
//! [`ApiError`] (status, `type`, title, detail). Handlers use `?` on service calls and get
//! this mapping; the fleet loop gets it as [`problem_parts`] when it is spawned, so a request
//! handed over to another replica answers with the same bytes as one answered here.

use axum::http::StatusCode;

use crate::http::error::ApiError;
use crate::service;

impl From<service::Error> for ApiError {
    fn from(e: service::Error) -> ApiError {
        use service::Error as E;
        match e {
            E::NoExecution { id } => ApiError::not_found(format!("no execution {id}")),
            E::OnOtherDevice { id, device, other } => ApiError::not_found(format!(
                "execution {id} is not on device {device} (it is on {other}: \
                 /devices/{other}/v1/executions/{id})"
            )),
            E::DeviceNotServed => ApiError::not_found("the device is not served by this replica"),
            // The upstream hub's and samples' words (issue 28): the id is the request's own.
            E::ExecutionExists { .. } => {
                ApiError::new(StatusCode::CONFLICT, "conflict", "execution id already exists")
            }
            E::RecallExists { id } => ApiError::new(
                StatusCode::CONFLICT,
                "conflict",
                format!("recall {id} is already published with other content; publish a new id"),
            ),
            E::NotResumable { state } => ApiError::new(
                StatusCode::CONFLICT,
                "wrong-state",
                format!("cannot resume an execution in state {state}"),
            ),
            E::WrongState(why) => ApiError::new(StatusCode::CONFLICT, "wrong-state", why),
            E::StaleSeq { seq } => ApiError::new(
                StatusCode::PRECONDITION_FAILED,
                "precondition-failed",
                format!("seq is {seq}"),
            ),
            E::IfMatchRequired => ApiError::if_match_required(),
            E::KeyReused => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "idempotency-key-reused",
                "this Idempotency-Key was already used with a different request",
            ),
            E::OnlyAPerson { name, role, what } => ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!(
                    "only a person (an owner or cook token) may {what}; the token {name:?} has \
                     the role {role}"
                ),
            ),
            E::InvalidRequest(why) | E::BadCommand(why) => ApiError::bad_request(why),
            E::ReplicaUnavailable { id } => ApiError::new(
                StatusCode::GATEWAY_TIMEOUT,
                "replica-unavailable",
                format!(
                    "the hub replica running execution {id} did not answer; if it is gone, the \
                     execution is ended safely once its device lease expires"
                ),
            ),
            E::Storage(e) => e.into(),
            E::Internal(cause) => ApiError::internal(&cause),
        }
    }
}

impl service::Hub {
    /// Starts the fleet loop (nothing when the store is not shared): it keeps this replica's
    /// device leases, ends the executions of a replica that died, runs the stops and resumes
    /// other replicas hand over, and wakes the event streams when another replica commits.
    ///
    /// Defined here, beside the mapping it passes in, so that `service/` needs no `http/`.
    pub fn spawn_fleet(&self) -> Option<tokio::task::JoinHandle<()>> {
        self.spawn_fleet_with(problem_parts)
    }
}

impl From<crate::limits::StreamRefused> for ApiError {
    fn from(e: crate::limits::StreamRefused) -> ApiError {
        use crate::limits::StreamRefused as R;
        let detail = match e {
            R::TokenShare { mine } => format!(
                "this token holds {mine} event streams already, the most one token may \
                 (a quarter of serve --max-streams N)"
            ),
            R::Full { max } => {
                format!("{max} event streams are open already (serve --max-streams N)")
            }
        };
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "too-many-streams", detail)
    }
}

/// A service failure as the status and body a handed-over request answers with.
fn problem_parts(e: service::Error) -> (u16, String) {
    let e = ApiError::from(e);
    (e.status.as_u16(), String::from_utf8_lossy(&e.body()).into_owned())
}
