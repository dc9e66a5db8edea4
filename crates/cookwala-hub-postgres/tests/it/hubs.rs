//! Two hubs in one process on one PostgreSQL database, driven through their routers with the
//! clock moved by hand: a resume that reaches the replica not running the execution is handed
//! to the one that does, which checks it (If-Match, the seq) and answers as if it had received
//! it; its idempotency record then answers a retry on either replica.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use canonical_json::Value;
use cookwala_hub::storage::Storage;
use cookwala_hub::{Hub, HubConfig};
use cookwala_hub_postgres::{PgOptions, PgStorage};
use http_body_util::BodyExt;
use test_support::postgres::PgCluster;
use tower::ServiceExt;

const TOKEN: &str = "fleet-hub-token-01";

async fn hub(url: &str, replica: &str) -> Hub {
    let options = PgOptions {
        replica: replica.to_owned(),
        lease: Duration::from_secs(10),
        pool_size: 4,
        tls_roots: Vec::new(),
    };
    let url = url.to_owned();
    let storage: Arc<dyn Storage> = Arc::new(
        tokio::task::spawn_blocking(move || PgStorage::connect(&url, options))
            .await
            .unwrap()
            .unwrap(),
    );
    let config = HubConfig {
        speed: 0.0,
        tokens: cookwala_hub::auth::Tokens::owner(TOKEN),
        ..HubConfig::default()
    };
    Hub::open(storage, config).await.unwrap()
}

struct Reply {
    status: StatusCode,
    body: Value,
    raw: Vec<u8>,
}

async fn call(
    app: &Router,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &str,
) -> Reply {
    let mut b = Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/vnd.cookwala+json");
    for (k, v) in headers {
        b = b.header(*k, v);
    }
    let res = app.clone().oneshot(b.body(Body::from(body.to_owned())).unwrap()).await.unwrap();
    let status = res.status();
    let raw = res.into_body().collect().await.unwrap().to_bytes().to_vec();
    let body = canonical_json::parse(&raw).unwrap_or(Value::Null);
    Reply { status, body, raw }
}

fn salad(id: &str) -> String {
    let recipe = cookwala_sim::builtin::recipe("cucumber-herb-salad").unwrap();
    let hash = canonical_json::digest::document_hash(&recipe).unwrap();
    format!(
        r#"{{"core":"0.2.0","kind":"ExecuteRequest","id":"{id}","recipe":"cw:cookwala-rs:cucumber-herb-salad","recipeHash":"{hash}","requestedBy":"person:cook","idempotencyKey":"{id}-key","x-hub-human-present":true}}"#
    )
}

fn state(r: &Reply) -> &str {
    r.body.get("state").and_then(Value::as_str).unwrap_or("?")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_through_the_other_replica_is_checked_and_answered_by_the_owner() {
    let Some(cluster) = tokio::task::spawn_blocking(PgCluster::start).await.unwrap() else {
        return;
    };
    let url = cluster.url();
    let (a, b) = (hub(&url, "hub-a").await, hub(&url, "hub-b").await);
    let _loops = (a.spawn_fleet(), b.spawn_fleet());
    let (app_a, app_b) = (cookwala_hub::app(a.clone()), cookwala_hub::app(b.clone()));

    let key = |k: &str| ("idempotency-key", k.to_owned());
    let started =
        call(&app_a, "POST", "/v1/executions", &[key("ex-s1-key")], &salad("ex-s1")).await;
    assert_eq!((started.status, state(&started)), (StatusCode::ACCEPTED, "accepted"));
    // A runs it to the knife step, which waits for a person.
    let mut now = started;
    for _ in 0..120 {
        if state(&now) == "needs_human" {
            break;
        }
        a.advance(5_000).await.unwrap();
        now = call(&app_b, "GET", "/v1/executions/ex-s1", &[], "").await;
    }
    assert_eq!(state(&now), "needs_human", "{:?}", now.body);
    let seq = now.body.get("seq").and_then(Value::as_i64).unwrap();

    // Through B: the owner answers the missing If-Match (428) and a stale seq (412).
    let r = call(&app_b, "POST", "/v1/executions/ex-s1/resume", &[key("key-resume-1")], "{}").await;
    assert_eq!(r.status, StatusCode::PRECONDITION_REQUIRED, "{:?}", r.body);
    let stale = [key("key-resume-2"), ("if-match", format!("\"{}\"", seq + 3))];
    let r = call(&app_b, "POST", "/v1/executions/ex-s1/resume", &stale, "{}").await;
    assert_eq!(r.status, StatusCode::PRECONDITION_FAILED);
    assert_eq!(
        r.body.get("detail").and_then(Value::as_str),
        Some(format!("seq is {seq}").as_str())
    );
    // The right seq: A resumes it (its simulation moves on), and B answers what A did.
    let ok = [key("key-resume-3"), ("if-match", format!("\"{seq}\""))];
    let r = call(&app_b, "POST", "/v1/executions/ex-s1/resume", &ok, "{}").await;
    assert_eq!((r.status, state(&r)), (StatusCode::ACCEPTED, "running"), "{:?}", r.body);
    assert!(r.body.get("seq").and_then(Value::as_i64).unwrap() > seq);
    a.advance(1_000).await.unwrap();
    let on_a = call(&app_a, "GET", "/v1/executions/ex-s1", &[], "").await;
    assert_ne!(state(&on_a), "needs_human");
    // The same resume retried on A replays the answer B gave.
    let again = call(&app_a, "POST", "/v1/executions/ex-s1/resume", &ok, "{}").await;
    assert_eq!(again.raw, r.raw);
    // A stop through B ends it on A.
    let stop = call(&app_b, "POST", "/v1/executions/ex-s1/stop", &[], "{}").await;
    assert_eq!(stop.status, StatusCode::ACCEPTED, "{:?}", stop.body);
    assert!(matches!(state(&stop), "stopping" | "stopped"), "{:?}", stop.body);
    drop(cluster);
}

/// `/readyz` on a replica: ready with the database up and its leases renewed, 503 naming the
/// store while the database is stopped, ready again once it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_follows_the_database() {
    let Some(cluster) = tokio::task::spawn_blocking(PgCluster::start).await.unwrap() else {
        return;
    };
    let a = hub(&cluster.url(), "hub-ready").await;
    let _fleet = a.spawn_fleet();
    let app = cookwala_hub::app(a.clone());
    let ready = |app: Router| async move {
        let r = call(&app, "GET", "/readyz", &[], "").await;
        (r.status, r.body)
    };
    // The fleet loop renews the leases at once.
    let mut now = ready(app.clone()).await;
    for _ in 0..100 {
        if now.0 == StatusCode::OK {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        now = ready(app.clone()).await;
    }
    assert_eq!(now.0, StatusCode::OK, "{:?}", now.1);
    assert_eq!(now.1.pointer("/checks/store").and_then(Value::as_str), Some("ok"));
    assert_eq!(now.1.pointer("/checks/leases").and_then(Value::as_str), Some("ok"));

    let cluster = tokio::task::spawn_blocking(move || {
        cluster.stop();
        cluster
    })
    .await
    .unwrap();
    let down = ready(app.clone()).await;
    assert_eq!(down.0, StatusCode::SERVICE_UNAVAILABLE, "{:?}", down.1);
    assert_eq!(down.1.get("ready").and_then(Value::as_bool), Some(false));
    assert_eq!(down.1.pointer("/checks/store").and_then(Value::as_str), Some("unavailable"));

    let _cluster = tokio::task::spawn_blocking(move || {
        let mut c = cluster;
        c.start_server();
        c
    })
    .await
    .unwrap();
    let mut back = ready(app.clone()).await;
    for _ in 0..300 {
        if back.0 == StatusCode::OK {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        back = ready(app.clone()).await;
    }
    assert_eq!(back.0, StatusCode::OK, "{:?}", back.1);
}
