//! The recall feed: signed publication, `?since=`, blocking new executions, stopping running
//! ones, persistence.

use std::sync::Arc;

use axum::http::StatusCode;
use canonical_json::Value;
use cookwala::keys::SigningKey;
use cookwala::signature::{SignedKind, attach};
use cookwala_hub::app;
use cookwala_hub::storage::SqliteStorage;

use crate::auth::{OWNER, PRINCIPAL_KID, as_, hub_with_roles_on, json, principal_key};
use crate::support::*;

fn recall(id: &str, issued: &str, recipe: &str, action: &str, key: Option<&SigningKey>) -> String {
    let doc = json(&format!(
        r#"{{"core":"0.2.0","kind":"Recall","id":"{id}","issuedAt":"{issued}","issuer":"catalog.example",
            "targets":[{{"ref":"cw:cookwala-rs:{recipe}","allRevisions":true}}],"severity":"high",
            "reason":"food_safety","action":"{action}","detail":"test recall"}}"#
    ));
    let doc = match key {
        Some(k) => attach(&doc, k, PRINCIPAL_KID, issued, SignedKind::Document).unwrap(),
        None => doc,
    };
    String::from_utf8(canonical_json::to_jcs(&doc).unwrap()).unwrap()
}

fn ids(list: &Value) -> Vec<&str> {
    list.as_array().unwrap().iter().map(|r| r.get("id").and_then(Value::as_str).unwrap()).collect()
}

#[tokio::test]
async fn recalls_are_signed_listed_since_and_persist() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("hub.sqlite3");
    let key = principal_key();
    {
        let hub = hub_with_roles_on(Arc::new(SqliteStorage::open(&db).unwrap())).await;
        let app = app(hub);
        // Unsigned, or signed by an unknown key: 422, nothing stored.
        let unsigned = recall("rc-1", "2026-03-01T00:00:00Z", "red-lentil-soup", "warn", None);
        let res =
            call(&app, as_(OWNER, "POST", "/v1/recalls", Some("key-recall-01"), &unsigned)).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{:?}", res.body);
        let stranger = SigningKey::generate(
            cookwala::keys::SigningAlg::EdDsa,
            &mut <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(5),
        );
        let forged =
            recall("rc-1", "2026-03-01T00:00:00Z", "red-lentil-soup", "warn", Some(&stranger));
        let res =
            call(&app, as_(OWNER, "POST", "/v1/recalls", Some("key-recall-02"), &forged)).await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY, "{:?}", res.body);
        assert_eq!(res.str("title"), "unverified-signature");
        // Tampered after signing: 422.
        let signed = recall("rc-1", "2026-03-01T00:00:00Z", "red-lentil-soup", "warn", Some(&key));
        let tampered = signed.replace("test recall", "changed");
        let res =
            call(&app, as_(OWNER, "POST", "/v1/recalls", Some("key-recall-03"), &tampered)).await;
        assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
        // Good ones, published out of order.
        for (i, (id, at)) in
            [("rc-2", "2026-05-01T00:00:00Z"), ("rc-1", "2026-03-01T00:00:00Z")].iter().enumerate()
        {
            let doc = recall(id, at, "red-lentil-soup", "warn", Some(&key));
            let k = format!("key-recall-1{i}");
            let res = call(&app, as_(OWNER, "POST", "/v1/recalls", Some(&k), &doc)).await;
            assert_eq!(res.status, StatusCode::CREATED, "{:?}", res.body);
            // The same key again: the original answer.
            let again = call(&app, as_(OWNER, "POST", "/v1/recalls", Some(&k), &doc)).await;
            assert_eq!(again.raw, res.raw);
        }
        // The same id with other content: 409; the same content under a new key: 200.
        let other = recall("rc-1", "2026-03-02T00:00:00Z", "red-lentil-soup", "warn", Some(&key));
        let res =
            call(&app, as_(OWNER, "POST", "/v1/recalls", Some("key-recall-20"), &other)).await;
        assert_eq!(res.status, StatusCode::CONFLICT);
        let same = recall("rc-1", "2026-03-01T00:00:00Z", "red-lentil-soup", "warn", Some(&key));
        let res = call(&app, as_(OWNER, "POST", "/v1/recalls", Some("key-recall-21"), &same)).await;
        assert_eq!(res.status, StatusCode::OK);
    }
    // After a restart: oldest first, `since` filters, a bad `since` is a 400 problem.
    let hub = hub_with_roles_on(Arc::new(SqliteStorage::open(&db).unwrap())).await;
    let app = app(hub);
    let all = call(&app, as_("", "GET", "/v1/recalls", None, "")).await;
    assert_eq!(all.status, StatusCode::OK);
    assert_eq!(ids(&all.body), ["rc-1", "rc-2"]);
    let later =
        call(&app, as_("", "GET", "/v1/recalls?since=2026-04-01T00:00:00Z", None, "")).await;
    assert_eq!(ids(&later.body), ["rc-2"]);
    let exact =
        call(&app, as_("", "GET", "/v1/recalls?since=2026-03-01T01:00:00%2B01:00", None, "")).await;
    assert_eq!(ids(&exact.body), ["rc-1", "rc-2"]);
    for bad in ["since=yesterday", "since=null&since=null", "since=2026-13-01T00:00:00Z"] {
        let res = call(&app, as_("", "GET", &format!("/v1/recalls?{bad}"), None, "")).await;
        assert_eq!(res.status, StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(res.content_type(), "application/problem+json");
    }
}

#[tokio::test]
async fn block_refuses_new_executions_and_block_and_stop_running_stops_them() {
    let hub = hub_with_roles_on(Arc::new(SqliteStorage::in_memory().unwrap())).await;
    let app = app(hub.clone());
    let key = principal_key();
    // A warn recall does not block.
    let warn = recall("rc-w", "2026-03-01T00:00:00Z", "red-lentil-soup", "warn", Some(&key));
    let res = call(&app, as_(OWNER, "POST", "/v1/recalls", Some("key-warn-0001"), &warn)).await;
    assert_eq!(res.status, StatusCode::CREATED);
    let body = request("ex-rc-1", "red-lentil-soup", true);
    let res = call(&app, as_(OWNER, "POST", "/v1/executions", Some("key-exec-0001"), &body)).await;
    assert_eq!(res.str("state"), "accepted", "{:?}", res.body);
    hub.advance(120_000).await.unwrap();
    let running = call(&app, as_(OWNER, "GET", "/v1/executions/ex-rc-1", None, "")).await;
    assert!(!matches!(running.str("state"), "stopped" | "completed"), "{:?}", running.body);

    // block_and_stop_running stops it safely and is listed in the answer.
    let stop = recall(
        "rc-s",
        "2026-03-02T00:00:00Z",
        "red-lentil-soup",
        "block_and_stop_running",
        Some(&key),
    );
    let res = call(&app, as_(OWNER, "POST", "/v1/recalls", Some("key-stop-0001"), &stop)).await;
    assert_eq!(res.status, StatusCode::CREATED, "{:?}", res.body);
    assert_eq!(res.body.get("stopped").unwrap().as_array().unwrap().len(), 1);
    hub.advance(10_000).await.unwrap();
    let after = call(&app, as_(OWNER, "GET", "/v1/executions/ex-rc-1", None, "")).await;
    assert_eq!(after.str("state"), "stopped", "{:?}", after.body);
    assert!(after.seq() > running.seq());
    let log = call(&app, as_(OWNER, "GET", "/v1/executions/ex-rc-1/log", None, "")).await;
    assert_eq!(log.str("outcome"), "aborted_safe", "{:?}", log.body);
    // The outbox says so: the recall, and the execution going to stopping in the same commit.
    let events = hub.storage().events_after(0, 10_000).unwrap();
    let recall_at = events.iter().rposition(|e| e.ty == "cookwala.recall.published").unwrap();
    let stopping = events
        .iter()
        .position(|e| {
            e.subject == "ex-rc-1"
                && e.ty == "cookwala.execution.state_changed"
                && e.body.contains("\"state\":\"stopping\"")
        })
        .unwrap();
    assert_eq!(events[recall_at].subject, "rc-s", "{:?}", events[recall_at]);
    assert!(stopping < recall_at);

    // And new executions of that recipe are refused recipe_recalled.
    let again = request("ex-rc-2", "red-lentil-soup", true);
    let res = call(&app, as_(OWNER, "POST", "/v1/executions", Some("key-exec-0002"), &again)).await;
    assert_eq!(res.str("state"), "refused");
    assert_eq!(
        res.body.pointer("/refusal/reason").and_then(Value::as_str),
        Some("recipe_recalled")
    );
}

/// A `block_and_stop_running` recall racing starts of the recipe it covers: whatever the
/// interleaving, every start is either refused or accepted *and* stopped by the recall —
/// none is accepted and left running (the window of issue 24: a start decided before the
/// recall but stored after it).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_recall_racing_starts_lets_none_run_on() {
    let key = principal_key();
    for round in 0..60 {
        let hub = hub_with_roles_on(Arc::new(SqliteStorage::in_memory().unwrap())).await;
        let app = app(hub.clone());
        let barrier = Arc::new(tokio::sync::Barrier::new(7));
        let mut starts = tokio::task::JoinSet::new();
        for i in 0..6 {
            let (app, barrier) = (app.clone(), barrier.clone());
            starts.spawn(async move {
                let id = format!("ex-race-{i}");
                let body = request(&id, "red-lentil-soup", true);
                let k = format!("key-race-{i:04}");
                barrier.wait().await;
                let res = call(&app, as_(OWNER, "POST", "/v1/executions", Some(&k), &body)).await;
                (id, res)
            });
        }
        let doc = recall(
            "rc-race",
            "2026-03-02T00:00:00Z",
            "red-lentil-soup",
            "block_and_stop_running",
            Some(&key),
        );
        barrier.wait().await;
        let published =
            call(&app, as_(OWNER, "POST", "/v1/recalls", Some("key-rc-race-01"), &doc)).await;
        assert_eq!(published.status, StatusCode::CREATED, "{:?}", published.body);
        let stopped: Vec<String> = published
            .body
            .get("stopped")
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect();
        while let Some(done) = starts.join_next().await {
            let (id, res) = done.unwrap();
            assert_eq!(res.status, StatusCode::ACCEPTED, "{:?}", res.body);
            if res.str("state") == "accepted" {
                assert!(
                    stopped.contains(&id),
                    "round {round}: {id} was accepted and the recall did not stop it ({stopped:?})"
                );
            }
            let now =
                call(&app, as_(OWNER, "GET", &format!("/v1/executions/{id}"), None, "")).await;
            assert!(
                matches!(now.str("state"), "refused" | "stopping" | "stopped"),
                "round {round}: {id} is {:?}",
                now.body
            );
        }
    }
}
