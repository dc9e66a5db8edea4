//! Idempotency: what an operation answers (fresh or replayed), the records that store those
//! answers, and the per-key hold that makes a repeat wait for the first request's answer.
//!
//! A leaf of `service/`: every operation that takes an `Idempotency-Key` (executions, recalls,
//! incidents, the fleet hand-over) uses it, and it uses none of them, so those files do not
//! import each other for these helpers.

use std::sync::Arc;

use canonical_json::Value;

use crate::service::{Error, Hub};
use crate::storage::{IdempotencyRecord, jcs_text};

/// What an operation answers: a fresh document, or the stored answer of an earlier request
/// with the same idempotency key.
#[derive(Debug)]
pub(crate) enum Answer {
    /// A new answer.
    Fresh(Value),
    /// The stored answer being replayed.
    Replay(IdempotencyRecord),
    /// What the hub replica running the execution answered (a request handed over to it).
    Forwarded {
        /// The HTTP status.
        status: u16,
        /// The body (a status document or a problem).
        body: String,
    },
}

/// An idempotency record answering with `status` and `body`.
pub(crate) fn idem_record(key: &str, digest: &str, status: u16, body: &Value) -> IdempotencyRecord {
    IdempotencyRecord {
        key: key.to_owned(),
        digest: digest.to_owned(),
        status,
        body: jcs_text(body),
    }
}

/// The stored answer `rec` if it answered this request (`digest`), a 422 when it answered
/// another request, or `None`.
pub(crate) fn answered(
    rec: Option<IdempotencyRecord>,
    digest: &str,
) -> Result<Option<IdempotencyRecord>, Error> {
    match rec {
        Some(rec) if rec.digest == digest => Ok(Some(rec)),
        Some(_) => Err(Error::KeyReused),
        None => Ok(None),
    }
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
pub(crate) async fn hold_key(hub: &Hub, key: &str) -> KeyHold {
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
