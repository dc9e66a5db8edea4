//! Signed webhooks: every outbox event, in order, at least once, to each configured URL.
//!
//! One task per webhook reads the outbox after the webhook's durable cursor and POSTs each event
//! (the exact stored JCS bytes) with `content-type: application/cloudevents+json`, `ce-id`, and
//! `X-Cookwala-Signature: sha256=<lowercase hex HMAC-SHA256(secret, body)>`. A 2xx answer moves
//! the cursor (one committed row, so a restart resumes after the last acknowledged event);
//! anything else — another status, a refused connection, a timeout — is retried after
//! [`WebhookPolicy::first_retry`], doubling up to [`WebhookPolicy::max_retry`]. An event still
//! failing [`WebhookPolicy::give_up_after`] after its first failure (24 h by default) is
//! recorded as dead-lettered (`webhook_dead_letters`), a note is logged, and delivery moves on.
//! The retry window is measured within one process: a restart starts it again.
//!
//! Receivers must deduplicate by `ce-id` (the CloudEvent `id`): an event whose acknowledgement
//! was lost, or whose cursor move did not commit before a crash, is sent again.
//!
//! `https://` URLs are delivered over TLS (rustls with the ring provider; the public web's
//! roots from `webpki-roots`, plus any roots the hub is given with `--webhook-ca`, for a
//! receiver with a private CA); a certificate that does not verify is a failed attempt,
//! retried like any other, never a silent downgrade. `http://` is plain, for loopback or a
//! trusted LAN.

use std::fmt;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderValue, Request, StatusCode, Uri, header};
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use sha2::{Digest, Sha256};

use crate::storage::{DeadLetter, StoredEvent};

/// A webhook: where to POST events and the secret that signs them. `Debug` never shows the
/// secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Webhook {
    /// `http://host[:port]/path`.
    pub url: String,
    /// The HMAC-SHA256 key for `X-Cookwala-Signature`.
    pub secret: String,
}

impl fmt::Debug for Webhook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Webhook").field("url", &self.url).field("secret", &"<redacted>").finish()
    }
}

/// How webhook deliveries are retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WebhookPolicy {
    /// The wait after the first failure (then doubled after each failure).
    pub first_retry: Duration,
    /// The longest wait between two attempts.
    pub max_retry: Duration,
    /// How long after its first failure an event is given up (dead-lettered).
    pub give_up_after: Duration,
    /// The limit for one attempt (connect, send, response head).
    pub timeout: Duration,
}

impl Default for WebhookPolicy {
    /// 1 s doubling to 5 min, for 24 h; 10 s per attempt.
    fn default() -> WebhookPolicy {
        WebhookPolicy {
            first_retry: Duration::from_secs(1),
            max_retry: Duration::from_secs(300),
            give_up_after: Duration::from_secs(24 * 3600),
            timeout: Duration::from_secs(10),
        }
    }
}

/// HMAC-SHA256 (RFC 2104) of `msg` under `key`.
pub fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| k.map(|b| b ^ byte);
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(msg).finalize();
    let outer = Sha256::new().chain_update(pad(0x5c)).chain_update(inner).finalize();
    let mut out = [0u8; 32];
    out.copy_from_slice(&outer);
    out
}

/// The `X-Cookwala-Signature` value for `body`: `sha256=<lowercase hex HMAC>`.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let mac = hmac_sha256(secret.as_bytes(), body);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256=");
    for b in mac {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Where a webhook's requests go.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    /// `https://`.
    pub(crate) tls: bool,
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) authority: String,
    pub(crate) path: String,
}

pub(crate) fn target(url: &str) -> Result<Target, String> {
    let uri: Uri = url.parse().map_err(|e| format!("not a URL: {e}"))?;
    let tls = match uri.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        _ => return Err("the URL must start with http:// or https://".to_owned()),
    };
    let authority = uri.authority().ok_or("the URL has no host")?;
    if authority.as_str().contains('@') {
        return Err("credentials in the URL are not supported".to_owned());
    }
    let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_owned();
    if host.is_empty() {
        return Err("the URL has no host".to_owned());
    }
    Ok(Target {
        tls,
        host,
        port: authority.port_u16().unwrap_or(if tls { 443 } else { 80 }),
        authority: authority.as_str().to_owned(),
        path: uri.path_and_query().map_or("/", |p| p.as_str()).to_owned(),
    })
}

/// The TLS client configuration for `https://` webhooks: the public roots and `extra_roots`
/// (DER certificates).
///
/// # Errors
/// An extra root is not a usable certificate.
pub(crate) fn tls_config(
    extra_roots: &[Vec<u8>],
) -> Result<std::sync::Arc<tokio_rustls::rustls::ClientConfig>, String> {
    client_tls_config(extra_roots, "--webhook-ca")
}

/// A TLS client configuration (rustls, ring provider) trusting the public web's roots and
/// `extra_roots` (DER; a private CA). `option` names where the extra roots came from, for the
/// error. Shared by the webhooks and the PostgreSQL store.
///
/// # Errors
/// An extra root is not a usable certificate.
pub fn client_tls_config(
    extra_roots: &[Vec<u8>],
    option: &str,
) -> Result<std::sync::Arc<tokio_rustls::rustls::ClientConfig>, String> {
    use tokio_rustls::rustls;
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for der in extra_roots {
        roots
            .add(rustls::pki_types::CertificateDer::from(der.clone()))
            .map_err(|e| format!("a {option} certificate cannot be used: {e}"))?;
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(std::sync::Arc::new(config))
}

/// Reads PEM certificates (`-----BEGIN CERTIFICATE-----` blocks) as DER.
///
/// # Errors
/// The text holds no certificate, or a block is not valid base64.
pub fn pem_certificates(text: &str) -> Result<Vec<Vec<u8>>, String> {
    use tokio_rustls::rustls::pki_types::CertificateDer;
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    let certs: Vec<Vec<u8>> = CertificateDer::pem_slice_iter(text.as_bytes())
        .map(|c| c.map(|c| c.to_vec()).map_err(|e| format!("not a PEM certificate: {e:?}")))
        .collect::<Result<_, _>>()?;
    if certs.is_empty() {
        return Err("no certificate (-----BEGIN CERTIFICATE-----) in the file".to_owned());
    }
    Ok(certs)
}

/// Checks every webhook: an `http://` or `https://` URL, a non-empty secret, no URL twice.
pub(crate) fn check(hooks: &[Webhook]) -> Result<(), (String, String)> {
    for (i, hook) in hooks.iter().enumerate() {
        let fail = |why: String| (hook.url.clone(), why);
        target(&hook.url).map_err(fail)?;
        if hook.secret.is_empty() {
            return Err(fail("the secret is empty".to_owned()));
        }
        if hooks[..i].iter().any(|h| h.url == hook.url) {
            return Err(fail("configured twice".to_owned()));
        }
    }
    Ok(())
}

const BATCH: usize = 64;

/// Delivers every outbox event after the webhook's cursor, forever: woken by `committed`.
pub(crate) async fn deliver_all(
    storage: std::sync::Arc<dyn crate::storage::Storage>,
    mut committed: tokio::sync::watch::Receiver<u64>,
    hook: Webhook,
    target: Target,
    policy: WebhookPolicy,
    tls: Tls,
    relay: std::sync::Arc<std::sync::atomic::AtomicBool>,
) {
    loop {
        committed.borrow_and_update();
        // In a fleet, only the replica holding the relay lease delivers (see `service::fleet`).
        if !relay.load(std::sync::atomic::Ordering::Acquire) {
            if committed.changed().await.is_err() {
                return;
            }
            continue;
        }
        let url = hook.url.clone();
        let next = crate::outbox::db(&storage, move |s| {
            let cursor = s.webhook_cursor(&url)?.unwrap_or(0);
            s.events_after(cursor, BATCH)
        })
        .await;
        let events = match next {
            Ok(events) => events,
            Err(_) => {
                // The storage failed (already logged): try again shortly.
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if events.is_empty() {
            if committed.changed().await.is_err() {
                return;
            }
            continue;
        }
        for event in events {
            let dead = deliver(&hook, &target, &tls, &policy, &event).await;
            loop {
                let (url, position, dead) = (hook.url.clone(), event.position, dead.clone());
                let set = move |s: &dyn crate::storage::Storage| {
                    s.set_webhook_cursor(&url, position, dead.as_ref())
                };
                match crate::outbox::db(&storage, set).await {
                    Ok(()) => break,
                    Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
                }
            }
        }
    }
}

/// Delivers one event, retrying until a 2xx or the policy gives up (then the dead letter).
async fn deliver(
    hook: &Webhook,
    target: &Target,
    tls: &Tls,
    policy: &WebhookPolicy,
    event: &StoredEvent,
) -> Option<DeadLetter> {
    let signature = signature(&hook.secret, event.body.as_bytes());
    let mut wait = policy.first_retry;
    let mut first_failure = None;
    let mut attempts = 0u32;
    loop {
        attempts = attempts.saturating_add(1);
        let attempt = post(target, tls, event, &signature);
        let why = match tokio::time::timeout(policy.timeout, attempt).await {
            Ok(Ok(status)) if status.is_success() => return None,
            Ok(Ok(status)) => format!("HTTP {}", status.as_u16()),
            Ok(Err(e)) => e,
            Err(_) => "timed out".to_owned(),
        };
        let since = *first_failure.get_or_insert_with(tokio::time::Instant::now);
        if attempts == 1 {
            crate::clock::note(format_args!(
                "cookwala-hub: webhook {}: event {} not delivered ({why}); retrying",
                crate::privacy::redact_url(&hook.url),
                event.id
            ));
        }
        if since.elapsed() >= policy.give_up_after {
            crate::clock::note(format_args!(
                "cookwala-hub: webhook {}: gave up on event {} after {attempts} attempts \
                 ({why}); dead-lettered, moving on",
                crate::privacy::redact_url(&hook.url),
                event.id
            ));
            return Some(DeadLetter {
                position: event.position,
                event_id: event.id.clone(),
                attempts,
                last_error: why,
            });
        }
        tokio::time::sleep(wait).await;
        wait = wait.saturating_mul(2).min(policy.max_retry);
    }
}

/// One POST on a fresh HTTP/1.1 connection (over TLS for `https://`); the response status.
async fn post(
    target: &Target,
    tls: &Tls,
    event: &StoredEvent,
    signature: &str,
) -> Result<StatusCode, String> {
    let stream = tokio::net::TcpStream::connect((target.host.as_str(), target.port))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    if target.tls {
        let name = tokio_rustls::rustls::pki_types::ServerName::try_from(target.host.clone())
            .map_err(|e| format!("TLS server name: {e}"))?;
        let stream = tokio_rustls::TlsConnector::from(tls.clone())
            .connect(name, stream)
            .await
            .map_err(|e| format!("TLS: {e}"))?;
        return send(TokioIo::new(stream), target, event, signature).await;
    }
    send(TokioIo::new(stream), target, event, signature).await
}

/// The TLS client configuration webhook deliveries share.
pub(crate) type Tls = std::sync::Arc<tokio_rustls::rustls::ClientConfig>;

async fn send<I>(
    io: I,
    target: &Target,
    event: &StoredEvent,
    signature: &str,
) -> Result<StatusCode, String>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(io).await.map_err(|e| format!("handshake: {e}"))?;
    let driver = tokio::spawn(conn);
    let mut req = Request::post(target.path.as_str())
        .header(header::HOST, target.authority.as_str())
        .header(header::CONTENT_TYPE, "application/cloudevents+json")
        .header(header::USER_AGENT, "cookwala-hub")
        .header("x-cookwala-signature", signature)
        .body(Full::new(Bytes::from(event.body.clone())))
        .map_err(|e| format!("request: {e}"))?;
    // An id that is not a valid header value is still in the body.
    if let Ok(id) = HeaderValue::from_str(&event.id) {
        req.headers_mut().insert("ce-id", id);
    }
    let res = sender.send_request(req).await.map_err(|e| format!("send: {e}"));
    driver.abort();
    Ok(res?.status())
}

#[cfg(test)]
mod tests;
