//! Tokens with roles, and agents under signed mandates.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use canonical_json::Value;
use cookwala::keys::{KeyRecord, KeySet, SigningAlg, SigningKey};
use cookwala::signature::{SignedKind, attach};
use cookwala_hub::auth::{Role, TokenEntry, Tokens, TokensError};
use cookwala_hub::storage::{SqliteStorage, Storage};
use cookwala_hub::{Hub, HubConfig, app};
use rand::SeedableRng;

use crate::support::*;

pub const OWNER: &str = "owner-token-0123456789";
pub const COOK: &str = "cook-token-0123456789";
pub const VIEWER: &str = "viewer-token-0123456789";
pub const AGENT: &str = "agent-token-0123456789";
pub const PRINCIPAL_KID: &str = "did:web:home.example#alex";

pub fn principal_key() -> SigningKey {
    SigningKey::generate(SigningAlg::EdDsa, &mut rand::rngs::StdRng::seed_from_u64(11))
}

pub fn trusted() -> KeySet {
    let key = principal_key();
    let rec = KeyRecord::from_value(&json(&format!(
        r#"{{"kid":"{PRINCIPAL_KID}","alg":"EdDSA","publicKey":"{}","validFrom":"2026-01-01T00:00:00Z"}}"#,
        key.public_key()
    )))
    .unwrap();
    KeySet::from_records(vec![rec])
}

pub fn tokens() -> Tokens {
    let mut t = Tokens::new();
    t.push(TokenEntry::new("owner", Role::Owner, OWNER, None));
    t.push(TokenEntry::new("tablet", Role::Cook, COOK, None));
    t.push(TokenEntry::new("dashboard", Role::Viewer, VIEWER, None));
    t.push(TokenEntry::new("planner", Role::Agent, AGENT, Some("agent:planner-1")));
    t
}

pub async fn hub_with_roles() -> Hub {
    hub_with_roles_on(Arc::new(SqliteStorage::in_memory().unwrap())).await
}

/// A hub with the test tokens and the principal's key trusted, on `storage`.
pub async fn hub_with_roles_on(storage: Arc<dyn Storage>) -> Hub {
    let config =
        HubConfig { speed: 0.0, tokens: tokens(), trusted_keys: trusted(), ..HubConfig::default() };
    Hub::open(storage, config).await.unwrap()
}

pub fn json(text: &str) -> Value {
    canonical_json::parse(text.as_bytes()).unwrap()
}

pub fn as_(token: &str, method: &str, path: &str, key: Option<&str>, body: &str) -> Request<Body> {
    let mut b = Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/vnd.cookwala+json");
    if let Some(k) = key {
        b = b.header("idempotency-key", k);
    }
    b.body(if body.is_empty() { Body::empty() } else { Body::from(body.to_owned()) }).unwrap()
}

/// An ExecuteRequest from `by`, with `mandate` (a JSON object text) when given.
fn agent_request(id: &str, by: &str, mandate: Option<&Value>) -> String {
    let mut req = json(&request(id, "red-lentil-soup", false));
    let m = req.as_object_mut().unwrap();
    m.insert("requestedBy".into(), by.into());
    if let Some(md) = mandate {
        m.insert("mandate".into(), md.clone());
    }
    canonical_json::to_jcs(&req).map(|b| String::from_utf8(b).unwrap()).unwrap()
}

fn mandate(agent: &str, signed_by: Option<(&SigningKey, &str)>) -> Value {
    let m = json(&format!(
        r#"{{"principal":"person:alex","agent":"{agent}","scopes":["start_cooking","stop_cooking"],
            "expires":"2099-01-01T00:00:00Z"}}"#
    ));
    match signed_by {
        Some((key, kid)) => {
            attach(&m, key, kid, "2026-06-01T00:00:00Z", SignedKind::Document).unwrap()
        }
        None => m,
    }
}

#[tokio::test]
async fn roles_decide_what_a_token_may_do() {
    let app = app(hub_with_roles().await);
    let body = request("ex-role-1", "red-lentil-soup", false);
    // No token, an unknown token: 401 problems.
    let none = call(
        &app,
        Request::post("/v1/executions")
            .header("idempotency-key", "key-role-0001")
            .body(Body::from(body.clone()))
            .unwrap(),
    )
    .await;
    assert_eq!(none.status, StatusCode::UNAUTHORIZED);
    assert_eq!(none.content_type(), "application/problem+json");
    let unknown = call(
        &app,
        as_("nope-0123456789abcdef", "POST", "/v1/executions", Some("key-role-0002"), &body),
    )
    .await;
    assert_eq!(unknown.status, StatusCode::UNAUTHORIZED);
    // A viewer reads but may not start: 403.
    let viewer =
        call(&app, as_(VIEWER, "POST", "/v1/executions", Some("key-role-0003"), &body)).await;
    assert_eq!(viewer.status, StatusCode::FORBIDDEN, "{:?}", viewer.body);
    assert_eq!(viewer.str("title"), "forbidden");
    // A cook starts; the viewer then reads the status.
    let cook = call(&app, as_(COOK, "POST", "/v1/executions", Some("key-role-0004"), &body)).await;
    assert_eq!(cook.status, StatusCode::ACCEPTED, "{:?}", cook.body);
    let read = call(&app, as_(VIEWER, "GET", "/v1/executions/ex-role-1", None, "")).await;
    assert_eq!(read.status, StatusCode::OK);
    // The viewer may not resume, but anyone may stop.
    let resume = call(
        &app,
        Request::post("/v1/executions/ex-role-1/resume")
            .header("authorization", format!("Bearer {VIEWER}"))
            .header("idempotency-key", "key-role-0005")
            .header("if-match", read.seq().to_string())
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(resume.status, StatusCode::FORBIDDEN);
    let stop =
        call(&app, Request::post("/v1/executions/ex-role-1/stop").body(Body::from("{}")).unwrap())
            .await;
    assert_eq!(stop.status, StatusCode::ACCEPTED, "{:?}", stop.body);
    assert!(matches!(stop.str("state"), "stopping" | "stopped"), "{:?}", stop.body);
    // Only the owner publishes recalls.
    let recall = call(&app, as_(COOK, "POST", "/v1/recalls", Some("key-role-0006"), "{}")).await;
    assert_eq!(recall.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn agents_need_a_mandate_signed_by_a_trusted_principal() {
    let app = app(hub_with_roles().await);
    let key = principal_key();
    let agent = "agent:planner-1";

    // Speaking for another agent: 403 before anything else.
    let other = agent_request(
        "ex-ag-0",
        "agent:someone-else",
        Some(&mandate(agent, Some((&key, PRINCIPAL_KID)))),
    );
    let res =
        call(&app, as_(AGENT, "POST", "/v1/executions", Some("key-agent-0000"), &other)).await;
    assert_eq!(res.status, StatusCode::FORBIDDEN, "{:?}", res.body);

    // No mandate: refused not_authorized (a refusal is a normal 202 answer).
    let bare = agent_request("ex-ag-1", agent, None);
    let res = call(&app, as_(AGENT, "POST", "/v1/executions", Some("key-agent-0001"), &bare)).await;
    assert_eq!(res.status, StatusCode::ACCEPTED, "{:?}", res.body);
    assert_eq!(res.str("state"), "refused");
    assert_eq!(res.body.pointer("/refusal/reason").and_then(Value::as_str), Some("not_authorized"));

    // Unsigned mandate: refused, the signature is required for agent tokens.
    let unsigned = agent_request("ex-ag-2", agent, Some(&mandate(agent, None)));
    let res =
        call(&app, as_(AGENT, "POST", "/v1/executions", Some("key-agent-0002"), &unsigned)).await;
    assert_eq!(res.body.pointer("/refusal/reason").and_then(Value::as_str), Some("not_authorized"));

    // Signed by a key the hub does not trust: refused.
    let stranger =
        SigningKey::generate(SigningAlg::EdDsa, &mut rand::rngs::StdRng::seed_from_u64(99));
    let forged =
        agent_request("ex-ag-3", agent, Some(&mandate(agent, Some((&stranger, PRINCIPAL_KID)))));
    let res =
        call(&app, as_(AGENT, "POST", "/v1/executions", Some("key-agent-0003"), &forged)).await;
    assert_eq!(res.body.pointer("/refusal/reason").and_then(Value::as_str), Some("not_authorized"));
    assert!(
        res.body.pointer("/refusal/detail").and_then(Value::as_str).unwrap().contains("signature")
    );

    // A mandate for another agent, properly signed: refused.
    let theirs =
        agent_request("ex-ag-4", agent, Some(&mandate("agent:other", Some((&key, PRINCIPAL_KID)))));
    let res =
        call(&app, as_(AGENT, "POST", "/v1/executions", Some("key-agent-0004"), &theirs)).await;
    assert_eq!(res.body.pointer("/refusal/reason").and_then(Value::as_str), Some("not_authorized"));

    // Signed by the trusted principal for this agent: accepted.
    let good = agent_request("ex-ag-5", agent, Some(&mandate(agent, Some((&key, PRINCIPAL_KID)))));
    let res = call(&app, as_(AGENT, "POST", "/v1/executions", Some("key-agent-0005"), &good)).await;
    assert_eq!(res.str("state"), "accepted", "{:?}", res.body);
}

#[test]
fn tokens_files_are_checked() {
    let ok = Tokens::parse(&json(
        r#"{"tokens":[{"name":"o","role":"owner","token":"0123456789abcdefXYZ"},
           {"name":"a","role":"agent","agent":"agent:x","sha256":"5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"}]}"#,
    ))
    .unwrap();
    assert_eq!(ok.entries().len(), 2);
    assert!(ok.find("0123456789abcdefXYZ").is_some_and(|e| e.role == Role::Owner));
    assert!(ok.find("password").is_some_and(|e| e.role == Role::Agent));
    assert!(ok.find("0123456789abcdefXYZ ").is_none());

    let bad = |text: &str| Tokens::parse(&json(text)).unwrap_err();
    assert_eq!(bad(r#"{"toks":[]}"#), TokensError::Shape);
    for (text, needle) in [
        (r#"{"tokens":[{"role":"chef","token":"0123456789abcdefXYZ"}]}"#, "role"),
        (r#"{"tokens":[{"role":"owner","token":"short"}]}"#, "shorter"),
        (r#"{"tokens":[{"role":"owner","sha256":"ABC"}]}"#, "64 lowercase hex"),
        (r#"{"tokens":[{"role":"owner"}]}"#, "exactly one"),
        (r#"{"tokens":[{"role":"agent","token":"0123456789abcdefXYZ"}]}"#, "names its agent"),
        (
            r#"{"tokens":[{"role":"agent","agent":"planner","token":"0123456789abcdefXYZ"}]}"#,
            "names its agent",
        ),
        (r#"{"tokens":[{"role":"owner","token":"0123456789abcdefXYZ","pw":1}]}"#, "unknown field"),
        (
            r#"{"tokens":[{"role":"owner","token":"0123456789abcdefXYZ"},{"role":"cook","token":"0123456789abcdefXYZ"}]}"#,
            "twice",
        ),
    ] {
        let e = bad(text).to_string();
        assert!(e.contains(needle), "{text}: {e}");
    }
    // What `cookwala serve` writes on first start reads back as one owner token.
    let doc = Tokens::owner_document("fresh-token-0123456789");
    let t = Tokens::parse(&doc).unwrap();
    assert!(t.find("fresh-token-0123456789").is_some_and(|e| e.role == Role::Owner));
}
