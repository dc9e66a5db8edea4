//! Restart after an unclean stop: nothing acknowledged is lost, nothing is resumed.

use std::sync::Arc;

use axum::http::StatusCode;
use cookwala_hub::storage::{SqliteStorage, Storage};
use cookwala_hub::{Hub, app};

use crate::support::*;

async fn open(dir: &std::path::Path) -> Hub {
    let storage: Arc<dyn Storage> =
        Arc::new(SqliteStorage::open(&dir.join("hub.sqlite3")).unwrap());
    Hub::open(storage, config()).await.unwrap()
}

#[tokio::test]
async fn running_executions_end_safely_after_an_unclean_stop() {
    let dir = tempfile::tempdir().unwrap();
    let soup = request("ex-r-soup", "red-lentil-soup", false);
    let refused_body = request("ex-r-busy", "vegetable-stock", false);
    let (running_seq, refused, now_status) = {
        let hub = open(dir.path()).await;
        let app = app(hub.clone());
        let a = call(&app, post("/v1/executions", Some("key-r-000001"), &soup)).await;
        assert_eq!(a.str("state"), "accepted");
        hub.advance(120_000).await.unwrap();
        let b = call(&app, post("/v1/executions", Some("key-r-000002"), &refused_body)).await;
        assert_eq!(b.str("state"), "refused");
        let inc = axum::http::Request::post("/v1/incidents")
            .header("idempotency-key", "key-r-000003")
            .body(axum::body::Body::from(
                r#"{"core":"0.2.0","kind":"IncidentReport","id":"inc-r","date":"2026-11-30","category":"cw.incident.burn","severity":"low","description":"smoke"}"#,
            ))
            .unwrap();
        assert_eq!(call(&app, inc).await.status, StatusCode::ACCEPTED);
        let now = call(&app, get("/v1/executions/ex-r-soup")).await;
        assert_eq!(now.str("state"), "running");
        // Unclean stop: the hub and its router are dropped without any shutdown.
        drop(app);
        drop(hub);
        (now.seq(), b.raw, now.body)
    };

    let hub = open(dir.path()).await;
    assert_eq!(hub.recovered(), ["ex-r-soup".to_owned()]);
    let app = app(hub.clone());
    let soup_now = call(&app, get("/v1/executions/ex-r-soup")).await;
    assert_eq!(soup_now.status, StatusCode::OK);
    assert_eq!(soup_now.str("state"), "stopped");
    assert!(soup_now.seq() > running_seq);
    // Issue 22: the status tells what the restart did, not what the last step reported.
    let x = |p: &str| soup_now.body.pointer(p).cloned();
    assert_eq!(x("/x-sim/heatOn").and_then(|v| v.as_bool()), Some(false));
    assert_eq!(x("/x-sim/motionOn").and_then(|v| v.as_bool()), Some(false));
    assert_eq!(x("/x-hub/recovered").and_then(|v| v.as_bool()), Some(true));
    assert_eq!(x("/x-hub/recoveredAt"), x("/updatedAt"));
    assert_ne!(x("/updatedAt"), now_status.pointer("/updatedAt").cloned());
    let log = call(&app, get("/v1/executions/ex-r-soup/log")).await;
    assert_eq!(log.status, StatusCode::OK);
    assert_eq!(log.str("outcome"), "aborted_safe");
    // Time passing does not resume it.
    hub.advance(600_000).await.unwrap();
    assert_eq!(call(&app, get("/v1/executions/ex-r-soup")).await.str("state"), "stopped");

    // Retried POSTs get their original answers; nothing is created twice.
    let retry = call(&app, post("/v1/executions", Some("key-r-000001"), &soup)).await;
    assert_eq!(retry.status, StatusCode::ACCEPTED);
    assert_eq!(retry.str("state"), "accepted");
    assert_eq!(retry.headers["idempotent-replayed"], "true");
    let retry = call(&app, post("/v1/executions", Some("key-r-000002"), &refused_body)).await;
    assert_eq!(retry.raw, refused);
    let dup = call(&app, post("/v1/executions", Some("key-r-000009"), &soup)).await;
    assert_eq!(dup.status, StatusCode::CONFLICT);
    assert_eq!(hub.storage().incident_count().unwrap(), 1);
    assert!(hub.storage().unfinished().unwrap().is_empty());
}

/// The recovered log is built from the admission stored with the execution: the pack it ran
/// under, even when the hub restarts with another one (was: decided again against the new
/// pack, issue 24).
#[tokio::test]
async fn a_restart_ends_a_run_under_the_limits_it_was_admitted_with() {
    let dir = tempfile::tempdir().unwrap();
    let soup = request("ex-adm-soup", "red-lentil-soup", false);
    {
        let hub = open(dir.path()).await;
        let app = app(hub.clone());
        let a = call(&app, post("/v1/executions", Some("key-adm-00001"), &soup)).await;
        assert_eq!(a.str("state"), "accepted");
        let rec = hub.storage().execution("ex-adm-soup").unwrap().unwrap();
        let stored = canonical_json::parse(rec.admission.unwrap().as_bytes()).unwrap();
        assert!(stored.pointer("/accepted/plan").is_some(), "{stored:?}");
        assert_eq!(
            stored.pointer("/limits/version"),
            cookwala::limits::default_pack().get("version")
        );
        hub.advance(60_000).await.unwrap();
    }
    // Restart with a pack of another version.
    let mut pack = cookwala::limits::default_pack();
    pack.as_object_mut().unwrap().insert("version".into(), "9.9.9".into());
    let mut config = config();
    config.catalog.set_pack(std::path::Path::new("restart-pack.json"), pack).unwrap();
    let storage: Arc<dyn Storage> =
        Arc::new(SqliteStorage::open(&dir.path().join("hub.sqlite3")).unwrap());
    let hub = Hub::open(storage, config).await.unwrap();
    assert_eq!(hub.recovered(), ["ex-adm-soup".to_owned()]);
    let log = call(&app(hub.clone()), get("/v1/executions/ex-adm-soup/log")).await;
    assert_eq!(log.str("outcome"), "aborted_safe");
    let label = log.body.pointer("/device/safetyLimits").and_then(|v| v.as_str()).unwrap();
    assert!(!label.contains("9.9.9"), "{label}");
    let default = cookwala::limits::default_pack();
    assert!(label.ends_with(default.get("version").unwrap().as_str().unwrap()), "{label}");
}
