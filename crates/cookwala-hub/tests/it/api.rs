//! Router tests (`oneshot`, no network): every status code of the Core API.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use cookwala_hub::app;

use crate::support::*;

#[tokio::test]
async fn start_accepts_and_replays_the_original_response() {
    let hub = hub_in_memory().await;
    let app = app(hub.clone());
    let body = request("ex-soup-1", "red-lentil-soup", false);
    let first = call(&app, post("/v1/executions", Some("key-00000001"), &body)).await;
    assert_eq!(first.status, StatusCode::ACCEPTED, "{:?}", first.body);
    assert_eq!(first.content_type(), "application/vnd.cookwala+json");
    assert_eq!(first.str("state"), "accepted");
    assert_eq!(first.headers["etag"], format!("\"{}\"", first.seq()));

    // Let the execution move on, then repeat the POST: the original answer comes back.
    hub.advance(60_000).await.unwrap();
    let now = call(&app, get("/v1/executions/ex-soup-1")).await;
    assert_eq!(now.status, StatusCode::OK);
    assert!(now.seq() > first.seq());
    assert_eq!(now.headers["etag"], format!("\"{}\"", now.seq()));
    let again = call(&app, post("/v1/executions", Some("key-00000001"), &body)).await;
    assert_eq!(again.status, StatusCode::ACCEPTED);
    assert_eq!(again.raw, first.raw);
    assert_eq!(again.headers["idempotent-replayed"], "true");

    // Same key, different body: 422.
    let other = request("ex-soup-2", "red-lentil-soup", false);
    let reused = call(&app, post("/v1/executions", Some("key-00000001"), &other)).await;
    assert_eq!(reused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(reused.content_type(), "application/problem+json");
    assert_eq!(reused.str("title"), "idempotency-key-reused");

    // Same id, new key: 409.
    let dup = call(&app, post("/v1/executions", Some("key-00000002"), &body)).await;
    assert_eq!(dup.status, StatusCode::CONFLICT);
    assert_eq!(dup.content_type(), "application/problem+json");
}

#[tokio::test]
async fn start_problems_and_refusals() {
    let hub = hub_in_memory().await;
    let app = app(hub);
    let body = request("ex-a-1", "red-lentil-soup", false);

    let missing = call(&app, post("/v1/executions", None, &body)).await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    assert_eq!(missing.str("title"), "missing-idempotency-key");
    let short = call(&app, post("/v1/executions", Some("short"), &body)).await;
    assert_eq!(short.status, StatusCode::BAD_REQUEST);

    let garbage = call(&app, post("/v1/executions", Some("key-garbage-1"), "{not json")).await;
    assert_eq!(garbage.status, StatusCode::BAD_REQUEST);
    assert_eq!(garbage.content_type(), "application/problem+json");
    let dupkeys =
        call(&app, post("/v1/executions", Some("key-garbage-2"), r#"{"id":"a","id":"b"}"#)).await;
    assert_eq!(dupkeys.status, StatusCode::BAD_REQUEST);
    let missing_field =
        call(&app, post("/v1/executions", Some("key-garbage-3"), r#"{"core":"0.2.0"}"#)).await;
    assert_eq!(missing_field.status, StatusCode::BAD_REQUEST);
    assert!(missing_field.str("detail").starts_with("missing"));

    let old = body.replace(r#""core":"0.2.0""#, r#""core":"0.1.0""#);
    let version = call(&app, post("/v1/executions", Some("key-version-1"), &old)).await;
    assert_eq!(version.status, StatusCode::BAD_REQUEST);
    assert_eq!(version.str("title"), "unsupported-version");
    assert_eq!(version.str("refusal"), "unsupported_version");

    // A refusal is a normal 202 answer.
    let bad_hash = body
        .replace("ex-a-1", "ex-a-hash")
        .replace(&recipe_hash("red-lentil-soup"), &format!("sha256:{}", "0".repeat(64)));
    let refused = call(&app, post("/v1/executions", Some("key-hash-0001"), &bad_hash)).await;
    assert_eq!(refused.status, StatusCode::ACCEPTED);
    assert_eq!(refused.str("state"), "refused");
    assert_eq!(
        refused.body.pointer("/refusal/reason").and_then(|v| v.as_str()),
        Some("recipe_hash_mismatch")
    );

    // Deep frying without a person present: refused by the dry run.
    let fry = request("ex-fry-1", "chickpea-fritters", false);
    let refused = call(&app, post("/v1/executions", Some("key-fry-00001"), &fry)).await;
    assert_eq!(refused.status, StatusCode::ACCEPTED);
    assert_eq!(refused.str("state"), "refused");

    // The device is busy while something cooks.
    let ok = call(&app, post("/v1/executions", Some("key-busy-0001"), &body)).await;
    assert_eq!(ok.str("state"), "accepted");
    let second = request("ex-a-2", "vegetable-stock", false);
    let busy = call(&app, post("/v1/executions", Some("key-busy-0002"), &second)).await;
    assert_eq!(busy.body.pointer("/refusal/reason").and_then(|v| v.as_str()), Some("busy"));

    // Wrong media type.
    let req = Request::post("/v1/executions")
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("idempotency-key", "key-media-001")
        .header("content-type", "text/plain")
        .body(Body::from(body.clone()))
        .unwrap();
    assert_eq!(call(&app, req).await.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

#[tokio::test]
async fn auth_is_required_except_on_open_endpoints() {
    let hub = hub_in_memory().await;
    let app = app(hub);
    let anon = |method: &str, path: &str| {
        Request::builder().method(method).uri(path).body(Body::empty()).unwrap()
    };
    for path in ["/v1/executions/x-1", "/v1/executions/x-1/log"] {
        let r = call(&app, anon("GET", path)).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(r.headers["www-authenticate"], "Bearer");
    }
    let wrong = Request::get("/v1/executions/x-1")
        .header("authorization", "Bearer nope")
        .body(Body::empty())
        .unwrap();
    assert_eq!(call(&app, wrong).await.status, StatusCode::UNAUTHORIZED);
    let r = call(&app, anon("POST", "/v1/executions")).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    for path in ["/v1/capabilities", "/v1/safety-limits", "/v1/recalls", "/openapi.yaml"] {
        let r = call(&app, anon("GET", path)).await;
        assert_eq!(r.status, StatusCode::OK, "{path}");
    }
    let r = call(&app, anon("GET", "/v1/recalls")).await;
    assert_eq!(r.body, canonical_json::Value::Array(Vec::new()));
    let r = call(&app, anon("GET", "/v1/capabilities")).await;
    assert_eq!(r.content_type(), "application/vnd.cookwala+json");
    // Stop is open: an unknown id is a 404, not a 401.
    let r = call(&app, anon("POST", "/v1/executions/x-1/stop")).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = call(&app, anon("GET", "/no/such/thing")).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.content_type(), "application/problem+json");
    let r = call(&app, anon("DELETE", "/v1/capabilities")).await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn get_unknown_is_404_and_log_only_after_the_end() {
    let hub = hub_in_memory().await;
    let app = app(hub.clone());
    let r = call(&app, get("/v1/executions/nope-1")).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.content_type(), "application/problem+json");
    assert_eq!(call(&app, get("/v1/executions/nope-1/log")).await.status, StatusCode::NOT_FOUND);

    let body = request("ex-log-1", "red-lentil-soup", false);
    call(&app, post("/v1/executions", Some("key-log-00001"), &body)).await;
    let early = call(&app, get("/v1/executions/ex-log-1/log")).await;
    assert_eq!(early.status, StatusCode::NOT_FOUND);
    assert!(early.str("detail").contains("once the execution has ended"));

    // Run to the end (at most 3 simulated hours).
    for _ in 0..36 {
        hub.advance(300_000).await.unwrap();
    }
    let done = call(&app, get("/v1/executions/ex-log-1")).await;
    assert_eq!(done.str("state"), "completed", "{:?}", done.body);
    let log = call(&app, get("/v1/executions/ex-log-1/log")).await;
    assert_eq!(log.status, StatusCode::OK);
    assert_eq!(log.str("outcome"), "served");
    assert_eq!(log.body.pointer("/consent/dataset").and_then(|v| v.as_str()), Some("none"));
}

#[tokio::test]
async fn stop_is_never_refused_and_is_idempotent() {
    let hub = hub_in_memory().await;
    let app = app(hub.clone());
    let body = request("ex-stop-1", "red-lentil-soup", false);
    call(&app, post("/v1/executions", Some("key-stop-0001"), &body)).await;
    hub.advance(30_000).await.unwrap();
    // No token, no Idempotency-Key: still stops.
    let req = Request::post("/v1/executions/ex-stop-1/stop")
        .body(Body::from(r#"{"reason":"smoke"}"#))
        .unwrap();
    let r = call(&app, req).await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    assert_eq!(r.str("state"), "stopping");
    hub.advance(5_000).await.unwrap();
    let done = call(&app, get("/v1/executions/ex-stop-1")).await;
    assert_eq!(done.str("state"), "stopped");
    let log = call(&app, get("/v1/executions/ex-stop-1/log")).await;
    assert_eq!(log.str("outcome"), "aborted_safe");
    // Stopping a final execution is a 202 with its status, and a keyed stop replays.
    let first =
        call(&app, post("/v1/executions/ex-stop-1/stop", Some("key-stop-0002"), "{}")).await;
    assert_eq!(first.status, StatusCode::ACCEPTED);
    assert_eq!(first.str("state"), "stopped");
    let again =
        call(&app, post("/v1/executions/ex-stop-1/stop", Some("key-stop-0002"), "{}")).await;
    assert_eq!(again.raw, first.raw);
}

#[tokio::test]
async fn resume_needs_if_match() {
    let hub = hub_in_memory().await;
    let app = app(hub.clone());
    // The salad needs a person for its knife step: it waits in needs_human.
    let body = request("ex-salad-1", "cucumber-herb-salad", true);
    let started = call(&app, post("/v1/executions", Some("key-salad-001"), &body)).await;
    assert_eq!(started.status, StatusCode::ACCEPTED, "{:?}", started.body);
    // The hob robot has no blade: the knife step is a person's, so the execution waits.
    let mut state = started.str("state").to_owned();
    for _ in 0..120 {
        if state != "accepted" && state != "preparing" && state != "running" {
            break;
        }
        hub.advance(5_000).await.unwrap();
        state = call(&app, get("/v1/executions/ex-salad-1")).await.str("state").to_owned();
    }
    let now = call(&app, get("/v1/executions/ex-salad-1")).await;
    assert_eq!(state, "needs_human", "{:?}", now.body);
    let seq = now.seq();

    let no_key = call(&app, post("/v1/executions/ex-salad-1/resume", None, "{}")).await;
    assert_eq!(no_key.status, StatusCode::BAD_REQUEST);
    let no_match =
        call(&app, post("/v1/executions/ex-salad-1/resume", Some("key-resume-01"), "{}")).await;
    assert_eq!(no_match.status, StatusCode::PRECONDITION_REQUIRED);
    assert_eq!(no_match.content_type(), "application/problem+json");
    let mut req = post("/v1/executions/ex-salad-1/resume", Some("key-resume-02"), "{}");
    req.headers_mut().insert("if-match", format!("\"{}\"", seq + 7).parse().unwrap());
    let stale = call(&app, req).await;
    assert_eq!(stale.status, StatusCode::PRECONDITION_FAILED);
    assert_eq!(stale.str("detail"), format!("seq is {seq}"));
    let mut req = post("/v1/executions/nope-9/resume", Some("key-resume-03"), "{}");
    req.headers_mut().insert("if-match", "\"1\"".parse().unwrap());
    assert_eq!(call(&app, req).await.status, StatusCode::NOT_FOUND);

    let mut req = post("/v1/executions/ex-salad-1/resume", Some("key-resume-04"), "{}");
    req.headers_mut().insert("if-match", format!("\"{seq}\"").parse().unwrap());
    let r = call(&app, req).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
    assert_eq!(r.str("state"), "running");
    assert!(r.seq() > seq);
    // The same resume again replays; a new key with the old seq is a 412.
    let mut req = post("/v1/executions/ex-salad-1/resume", Some("key-resume-04"), "{}");
    req.headers_mut().insert("if-match", format!("\"{seq}\"").parse().unwrap());
    assert_eq!(call(&app, req).await.raw, r.raw);
    let mut req = post("/v1/executions/ex-salad-1/resume", Some("key-resume-05"), "{}");
    req.headers_mut().insert("if-match", format!("\"{seq}\"").parse().unwrap());
    assert_eq!(call(&app, req).await.status, StatusCode::PRECONDITION_FAILED);
}

#[tokio::test]
async fn resume_in_the_wrong_state_is_409() {
    let hub = hub_in_memory().await;
    let app = app(hub.clone());
    let body = request("ex-run-1", "red-lentil-soup", false);
    let started = call(&app, post("/v1/executions", Some("key-run-0001"), &body)).await;
    let mut req = post("/v1/executions/ex-run-1/resume", Some("key-run-0002"), "{}");
    req.headers_mut().insert("if-match", format!("\"{}\"", started.seq()).parse().unwrap());
    let r = call(&app, req).await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert_eq!(r.str("title"), "wrong-state");
}

fn incident(description: &str) -> String {
    format!(
        r#"{{"core":"0.2.0","kind":"IncidentReport","id":"inc-1","date":"2026-11-30",
        "category":"cw.incident.burn","severity":"low","description":"{description}"}}"#
    )
}

#[tokio::test]
async fn incidents_are_anonymous() {
    let hub = hub_in_memory().await;
    let app = app(hub.clone());
    let anon = |key: Option<&str>, body: String| {
        let mut b =
            Request::post("/v1/incidents").header("content-type", "application/vnd.cookwala+json");
        if let Some(k) = key {
            b = b.header("idempotency-key", k);
        }
        b.body(Body::from(body)).unwrap()
    };
    let ok =
        call(&app, anon(Some("key-inc-00001"), incident("Oil smoked at the end of frying."))).await;
    assert_eq!(ok.status, StatusCode::ACCEPTED, "{:?}", ok.body);
    let again =
        call(&app, anon(Some("key-inc-00001"), incident("Oil smoked at the end of frying."))).await;
    assert_eq!(again.raw, ok.raw);
    assert_eq!(hub.storage().incident_count().unwrap(), 1);

    for text in [
        "Write to jane.doe@example.org for details",
        "My name is Jane and the pan overheated",
        "call 555 123 4567",
    ] {
        let r = call(&app, anon(Some("key-inc-00002"), incident(text))).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{text}");
        assert_eq!(r.str("title"), "personal-data");
    }
    let with_name = incident("fine").replace(r#""kind""#, r#""reporter":"Jane","kind""#);
    let r = call(&app, anon(Some("key-inc-00003"), with_name)).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let r = call(&app, anon(None, incident("fine"))).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r =
        call(&app, anon(Some("key-inc-00004"), r#"{"kind":"IncidentReport"}"#.to_owned())).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(hub.storage().incident_count().unwrap(), 1);
}

#[tokio::test]
async fn tool_endpoints_for_the_sample_client() {
    let hub = hub_in_memory().await;
    let app = app(hub);
    let list = call(&app, get("/v1/tools/recipes")).await;
    assert_eq!(list.status, StatusCode::OK);
    let ids = list.body.get("recipes").and_then(|v| v.as_array()).unwrap();
    assert!(ids.iter().any(|v| v.as_str() == Some("red-lentil-soup")));
    let doc = call(&app, get("/v1/tools/recipes/red-lentil-soup")).await;
    assert_eq!(doc.str("id"), "red-lentil-soup");
    assert_eq!(call(&app, get("/v1/tools/recipes/nope")).await.status, StatusCode::NOT_FOUND);
    let recipe = String::from_utf8(doc.raw.clone()).unwrap();
    let body = format!(r#"{{"recipe":{recipe},"humanPresent":false}}"#);
    let dry = call(&app, post("/v1/tools/dryrun", None, &body)).await;
    assert_eq!(dry.status, StatusCode::OK, "{:?}", dry.body);
    assert_eq!(dry.str("state"), "accepted");
    assert!(dry.body.get("plan").and_then(|v| v.as_array()).is_some_and(|p| !p.is_empty()));
    let bad = call(&app, post("/v1/tools/dryrun", None, r#"{"recipe":7}"#)).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}
