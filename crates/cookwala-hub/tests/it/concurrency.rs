//! Many clients at once: a retried POST never creates twice, every acknowledged execution is
//! stored, a stop storm ends in one safe stop.

use axum::http::StatusCode;
use cookwala_hub::app;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_post_from_many_clients_creates_one_execution() {
    let hub = hub_in_memory().await;
    let app = app(hub.clone());
    let body = request("ex-storm-1", "red-lentil-soup", false);
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..40 {
        let (app, body) = (app.clone(), body.clone());
        tasks.spawn(async move {
            call(&app, post("/v1/executions", Some("key-storm-0001"), &body)).await
        });
    }
    let mut bodies = Vec::new();
    while let Some(r) = tasks.join_next().await {
        let r = r.unwrap();
        assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
        bodies.push(r.raw);
    }
    assert!(bodies.windows(2).all(|w| w[0] == w[1]), "every client gets the same answer");
    let stored = hub.storage().execution("ex-storm-1").unwrap().unwrap();
    assert_eq!(stored.state, "accepted");
    // Exactly one accepted event for it: the execution was created once.
    let events = hub.storage().events_after(0, 10_000).unwrap();
    let accepted = events
        .iter()
        .filter(|e| e.subject == "ex-storm-1" && e.ty == "cookwala.execution.accepted")
        .count();
    assert_eq!(accepted, 1);

    // A storm of stops, some with keys, some without: one safe stop, every answer a 202.
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..30 {
        let app = app.clone();
        tasks.spawn(async move {
            let key = format!("key-stop-{i:04}");
            let req = if i % 2 == 0 {
                post("/v1/executions/ex-storm-1/stop", Some(&key), r#"{"reason":"storm"}"#)
            } else {
                post("/v1/executions/ex-storm-1/stop", None, "")
            };
            call(&app, req).await
        });
    }
    while let Some(r) = tasks.join_next().await {
        let r = r.unwrap();
        assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
        assert!(matches!(r.str("state"), "stopping" | "stopped"), "{:?}", r.body);
    }
    hub.advance(5_000).await.unwrap();
    let end = call(&app, get("/v1/executions/ex-storm-1")).await;
    assert_eq!(end.str("state"), "stopped");
    let events = hub.storage().events_after(0, 10_000).unwrap();
    let stopped = events
        .iter()
        .filter(|e| e.subject == "ex-storm-1" && e.body.contains("\"state\":\"stopped\""))
        .count();
    assert_eq!(stopped, 1, "one transition to stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_acknowledged_post_is_stored() {
    let hub = hub_in_memory().await;
    let app = app(hub.clone());
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..50 {
        let app = app.clone();
        tasks.spawn(async move {
            let id = format!("ex-many-{i:03}");
            let body = request(&id, "vegetable-stock", false);
            let r =
                call(&app, post("/v1/executions", Some(&format!("key-many-{i:04}")), &body)).await;
            (id, r)
        });
    }
    let mut accepted = 0;
    while let Some(r) = tasks.join_next().await {
        let (id, r) = r.unwrap();
        assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
        // One device: the first is accepted, the others are refused busy — all are stored.
        match r.str("state") {
            "accepted" => accepted += 1,
            "refused" => assert_eq!(
                r.body.pointer("/refusal/reason").and_then(canonical_json::Value::as_str),
                Some("busy")
            ),
            other => panic!("{other}"),
        }
        let stored = hub.storage().execution(&id).unwrap().unwrap();
        assert_eq!(stored.seq, u64::try_from(r.seq()).unwrap());
    }
    assert_eq!(accepted, 1);
}
