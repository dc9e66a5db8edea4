//! Events: produced for every change, committed with it, valid CloudEvents, SSE, webhooks.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::http::StatusCode;
use canonical_json::Value;
use cookwala_hub::storage::{Commit, NewEvent, SqliteStorage, Storage};
use cookwala_hub::{Hub, HubConfig, app};

use crate::support::*;

/// The outbox, parsed.
pub fn outbox(storage: &dyn Storage) -> Vec<Value> {
    storage
        .events_after(0, 100_000)
        .unwrap()
        .iter()
        .map(|e| canonical_json::parse(e.body.as_bytes()).unwrap())
        .collect()
}

pub fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn seq(v: &Value) -> i64 {
    v.get("cookwalaseq").and_then(Value::as_i64).unwrap()
}

/// Advances simulated time until `id` is final; its final status.
pub async fn run_to_end(hub: &Hub, id: &str) -> Reply {
    let app = app(hub.clone());
    for _ in 0..1_000 {
        let now = call(&app, get(&format!("/v1/executions/{id}"))).await;
        if ["completed", "stopped", "failed", "refused"].contains(&now.str("state")) {
            return now;
        }
        hub.advance(60_000).await.unwrap();
    }
    panic!("{id} did not end");
}

pub async fn start(hub: &Hub, id: &str, recipe: &str) -> Reply {
    let app = app(hub.clone());
    let res = call(
        &app,
        post("/v1/executions", Some(&format!("{id}-idem")), &request(id, recipe, false)),
    )
    .await;
    assert_eq!(res.status, StatusCode::ACCEPTED);
    res
}

#[tokio::test]
async fn a_full_run_is_reported_from_accepted_to_completed() {
    let hub = hub_in_memory().await;
    start(&hub, "ex-ev-1", "red-lentil-soup").await;
    let end = run_to_end(&hub, "ex-ev-1").await;
    assert_eq!(end.str("state"), "completed");
    let events = outbox(&*hub.storage());
    let types: Vec<&str> = events.iter().map(|e| s(e, "type")).collect();
    assert_eq!(types.first(), Some(&"cookwala.execution.accepted"));
    assert_eq!(types.last(), Some(&"cookwala.execution.completed"));
    for ty in ["cookwala.execution.state_changed", "cookwala.execution.step"] {
        assert!(types.contains(&ty), "{types:?}");
    }
    // Each state the execution went through is reported once, in order.
    let states: Vec<&str> = events
        .iter()
        .filter(|e| s(e, "type") != "cookwala.execution.step")
        .map(|e| e.pointer("/data/state").and_then(Value::as_str).unwrap())
        .collect();
    assert_eq!(states, ["accepted", "preparing", "running", "completed"]);
    let seqs: Vec<i64> = events.iter().map(seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert_eq!(seqs.last(), Some(&end.seq()));
    // The accepted event's data is the status the POST answered.
    assert_eq!(events[0].pointer("/data/seq").and_then(Value::as_i64), Some(0));
    assert!(events.iter().all(|e| s(e, "subject") == "ex-ev-1"));
}

#[tokio::test]
async fn events_are_committed_with_the_change_they_report() {
    let hub = hub_in_memory().await;
    let app = app(hub.clone());
    let accepted = start(&hub, "ex-ev-2", "red-lentil-soup").await;
    let events = outbox(&*hub.storage());
    assert_eq!(events.len(), 1);
    // The start answer adds the accepted plan (`x-hub-plan`); the status is the same.
    let mut answered = accepted.body.clone();
    let plan = answered.as_object_mut().unwrap().remove("x-hub-plan").unwrap();
    assert!(!plan.as_array().unwrap().is_empty());
    assert_eq!(events[0].get("data"), Some(&answered));
    hub.advance(120_000).await.unwrap();
    let running = call(&app, get("/v1/executions/ex-ev-2")).await;
    let last = outbox(&*hub.storage()).pop().unwrap();
    assert!(seq(&last) <= running.seq());

    // A stop: the answered status has its state_changed event in the outbox already.
    let stop = call(&app, post("/v1/executions/ex-ev-2/stop", Some("stop-ev-2-key"), "{}")).await;
    assert_eq!(stop.str("state"), "stopping");
    let id = format!("ex-ev-2/{}/execution.state_changed", stop.seq());
    let pos = hub.storage().event_position(&id).unwrap();
    assert!(pos.is_some(), "{id} is not in the outbox");
    // A retried stop replays the answer and adds no event.
    let before = hub.storage().last_event_position().unwrap();
    call(&app, post("/v1/executions/ex-ev-2/stop", Some("stop-ev-2-key"), "{}")).await;
    assert_eq!(hub.storage().last_event_position().unwrap(), before);
    let end = run_to_end(&hub, "ex-ev-2").await;
    assert_eq!(end.str("state"), "stopped");
    let last = outbox(&*hub.storage()).pop().unwrap();
    assert_eq!(s(&last, "type"), "cookwala.execution.state_changed");
    assert_eq!(last.pointer("/data/state").and_then(Value::as_str), Some("stopped"));
    assert_eq!(seq(&last), end.seq());
}

#[test]
fn a_failed_commit_writes_none_of_its_events() {
    let s = SqliteStorage::in_memory().unwrap();
    let event = |id: &str| NewEvent {
        id: id.to_owned(),
        ty: "cookwala.execution.accepted".to_owned(),
        subject: "ex-1".to_owned(),
        body: "{}".to_owned(),
    };
    let rec = cookwala_hub::storage::ExecutionRecord {
        id: "ex-1".to_owned(),
        request: "{}".to_owned(),
        config: "{}".to_owned(),
        status: "{}".to_owned(),
        seq: 0,
        state: "accepted".to_owned(),
        is_final: false,
        log: None,
        recipe_doc: None,
        device_doc: None,
        limits_doc: None,
        admission: None,
    };
    let first = Commit { create: Some(rec.clone()), events: vec![event("a")], ..Commit::default() };
    s.commit(&first).unwrap();
    // The same execution again: the insert fails, and the event must not be stored either.
    let again = Commit { create: Some(rec), events: vec![event("b")], ..Commit::default() };
    assert!(s.commit(&again).is_err());
    assert_eq!(s.event_position("b").unwrap(), None);
    // A re-emitted id is skipped, not duplicated; positions keep increasing.
    s.commit(&Commit { events: vec![event("a"), event("c")], ..Commit::default() }).unwrap();
    let rows = s.events_after(0, 10).unwrap();
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["a", "c"]);
    assert!(rows[0].position < rows[1].position);
    assert_eq!(s.last_event_position().unwrap(), rows[1].position);
    assert_eq!(s.events_after(rows[0].position, 10).unwrap().len(), 1);
    assert_eq!(s.events_after(0, 1).unwrap().len(), 1);
}

fn recall_doc(id: &str) -> Value {
    let text = format!(
        r#"{{"core":"0.2.0","kind":"Recall","id":"{id}","issuedAt":"2026-03-01T09:00:00Z",
        "issuer":"cw:auth","targets":[{{"ref":"cw:cookwala-rs:red-lentil-soup"}}],
        "severity":"high","reason":"food_safety","action":"block"}}"#
    );
    canonical_json::parse(text.as_bytes()).unwrap()
}

fn overheat_config() -> HubConfig {
    HubConfig {
        sim_faults: vec![cookwala_sim::Fault {
            kind: cookwala_sim::FaultKind::Overheat,
            node: None,
        }],
        ..config()
    }
}

#[tokio::test]
async fn a_fired_safety_limit_is_a_safety_event_and_an_incident() {
    let storage: Arc<dyn Storage> = Arc::new(SqliteStorage::in_memory().unwrap());
    let hub = Hub::open(storage.clone(), overheat_config()).await.unwrap();
    start(&hub, "ex-ev-hot", "red-lentil-soup").await;
    assert_eq!(storage.incident_count().unwrap(), 0);
    let end = run_to_end(&hub, "ex-ev-hot").await;
    assert_eq!(end.str("state"), "stopped");
    let events = outbox(&*storage);
    let safety: Vec<&Value> =
        events.iter().filter(|e| s(e, "type") == "cookwala.safety.limit_fired").collect();
    assert_eq!(safety.len(), 1, "{events:?}");
    let e = safety[0];
    assert_eq!(s(e, "cookwalapriority"), "safety");
    assert_eq!(s(e, "cookwalalatency"), "local_safety");
    assert_eq!(e.pointer("/data/action").and_then(Value::as_str), Some("heat_off_all"));
    assert_eq!(e.pointer("/data/level").and_then(Value::as_str), Some("alarm"));
    assert_eq!(e.pointer("/data/x-limit").and_then(Value::as_str), Some("x-sim.heater_runaway"));
    // The safety action is followed by the stop it caused.
    let after: Vec<&str> = events
        .iter()
        .skip_while(|x| s(x, "type") != "cookwala.safety.limit_fired")
        .filter_map(|x| x.pointer("/data/state").and_then(Value::as_str))
        .collect();
    assert_eq!(after.last(), Some(&"stopped"));
    assert!(after.contains(&"stopping"));
    assert_eq!(storage.incident_count().unwrap(), 1);
}

#[tokio::test]
async fn recovery_after_a_restart_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.sqlite3");
    let seq_before = {
        let storage: Arc<dyn Storage> = Arc::new(SqliteStorage::open(&path).unwrap());
        let hub = Hub::open(storage, config()).await.unwrap();
        start(&hub, "ex-ev-r", "red-lentil-soup").await;
        hub.advance(120_000).await.unwrap();
        let app = app(hub.clone());
        call(&app, get("/v1/executions/ex-ev-r")).await.seq()
    };
    let storage: Arc<dyn Storage> = Arc::new(SqliteStorage::open(&path).unwrap());
    let hub = Hub::open(storage.clone(), config()).await.unwrap();
    assert_eq!(hub.recovered(), ["ex-ev-r".to_owned()]);
    let events = outbox(&*storage);
    let tail: Vec<(i64, &str)> = events[events.len() - 2..]
        .iter()
        .map(|e| (seq(e), e.pointer("/data/state").and_then(Value::as_str).unwrap()))
        .collect();
    assert_eq!(tail, [(seq_before + 1, "stopping"), (seq_before + 2, "stopped")]);
    let app = app(hub.clone());
    assert_eq!(call(&app, get("/v1/executions/ex-ev-r")).await.seq(), seq_before + 2);
}

#[tokio::test]
async fn recalls_are_published_once_and_heartbeats_are_live_only() {
    let hub = hub_in_memory().await;
    let recall = recall_doc("rc-ev-1");
    hub.publish_recall_event(&recall).await.unwrap();
    hub.publish_recall_event(&recall).await.unwrap();
    let events = outbox(&*hub.storage());
    assert_eq!(events.len(), 1);
    assert_eq!(s(&events[0], "type"), "cookwala.recall.published");
    assert_eq!(events[0].get("data"), Some(&recall));

    let app = app(hub.clone());
    let caps = call(&app, get("/v1/capabilities")).await;
    assert!(caps.headers.get("x-hub-last-heartbeat").is_none());
    let hb = hub.heartbeat().await;
    assert_eq!(s(&hb, "type"), "cookwala.device.heartbeat");
    assert_eq!(hb.pointer("/data/status").and_then(Value::as_str), Some("idle"));
    assert_eq!(outbox(&*hub.storage()).len(), 1, "heartbeats are not stored");
    assert!(hub.last_heartbeat("sim-hob-robot").is_some());
    let caps = call(&app, get("/v1/capabilities")).await;
    let stamp = caps.headers["x-hub-last-heartbeat"].to_str().unwrap();
    assert!(cookwala::time::parse_timestamp(stamp).is_ok(), "{stamp}");
    start(&hub, "ex-ev-hb", "red-lentil-soup").await;
    let hb = hub.heartbeat().await;
    assert_eq!(hb.pointer("/data/status").and_then(Value::as_str), Some("busy"));
    assert_eq!(hb.pointer("/data/activeExecutions/0").and_then(Value::as_str), Some("ex-ev-hb"));
}

#[tokio::test]
async fn unknown_last_event_id_is_a_problem_and_auth_is_required() {
    let hub = hub_in_memory().await;
    let app = app(hub.clone());
    let mut req = get("/cookwala/v1/events");
    req.headers_mut().insert("last-event-id", "no-such-event".parse().unwrap());
    let res = call(&app, req).await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    assert_eq!(res.content_type(), "application/problem+json");
    assert_eq!(res.str("title"), "unknown-event-id");
    let res = call(&app, get("/v1/events?after=no-such-event")).await;
    assert_eq!(res.str("title"), "unknown-event-id");
    let anonymous = axum::http::Request::get("/v1/events").body(axum::body::Body::empty()).unwrap();
    assert_eq!(call(&app, anonymous).await.status, StatusCode::UNAUTHORIZED);
}

#[test]
fn a_version_1_database_is_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.sqlite3");
    let conn = rusqlite::Connection::open(&path).unwrap();
    // The schema version 1 hubs wrote.
    conn.execute_batch(
        "CREATE TABLE executions (id TEXT PRIMARY KEY, request TEXT NOT NULL, config TEXT NOT NULL,
            status TEXT NOT NULL, seq INTEGER NOT NULL, state TEXT NOT NULL,
            is_final INTEGER NOT NULL, log TEXT, created_ms INTEGER NOT NULL,
            updated_ms INTEGER NOT NULL);
         CREATE INDEX executions_unfinished ON executions(is_final, created_ms);
         CREATE TABLE idempotency (key TEXT PRIMARY KEY, digest TEXT NOT NULL,
            status INTEGER NOT NULL, body TEXT NOT NULL, created_ms INTEGER NOT NULL);
         CREATE TABLE incidents (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL,
            body TEXT NOT NULL, received_ms INTEGER NOT NULL);
         INSERT INTO executions VALUES ('ex-old', '{}', '{}', '{\"seq\":4}', 4, 'completed', 1,
            '{}', 1, 1);
         PRAGMA user_version = 1;",
    )
    .unwrap();
    drop(conn);
    let s = SqliteStorage::open(&path).unwrap();
    assert_eq!(s.execution("ex-old").unwrap().unwrap().seq, 4);
    assert_eq!(s.last_event_position().unwrap(), 0);
    assert_eq!(s.webhook_cursor("http://h/").unwrap(), None);
    s.set_webhook_cursor("http://h/", 0, None).unwrap();
    assert_eq!(s.webhook_cursor("http://h/").unwrap(), Some(0));
    drop(s);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, cookwala_hub::storage::SCHEMA_VERSION);
}

/// The event schema, with the standard's other schemas for its `$ref`s.
fn event_validator(dir: &std::path::Path) -> jsonschema::Validator {
    let mut schemas: Vec<(String, serde_json::Value)> = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.to_string_lossy().ends_with(".schema.json") {
            let v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            schemas.push((v["$id"].as_str().unwrap().to_owned(), v));
        }
    }
    let base = "https://cookwala.ai/v1/schemas/";
    // Schema files the folder refers to but does not ship get permissive stubs.
    let mut missing: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (_, schema) in &schemas {
        refs(schema, &mut |r| {
            let (doc, frag) = r.split_once('#').unwrap_or((r, ""));
            let id = format!("{base}{doc}");
            if doc.is_empty() || doc.contains("://") || schemas.iter().any(|(i, _)| *i == id) {
                return;
            }
            let defs = missing.entry(id).or_default();
            if let Some(name) = frag.strip_prefix("/$defs/") {
                defs.push(name.to_owned());
            }
        });
    }
    for (id, defs) in missing {
        let defs: serde_json::Map<String, serde_json::Value> =
            defs.into_iter().map(|d| (d, serde_json::json!({}))).collect();
        schemas.push((id.clone(), serde_json::json!({ "$id": id, "$defs": defs })));
    }
    let mut registry = jsonschema::Registry::new();
    for (id, schema) in &schemas {
        registry = registry.add(id.as_str(), schema).unwrap();
    }
    let registry = registry.prepare().unwrap();
    let root = serde_json::json!({ "$ref": format!("{base}event.schema.json") });
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .with_registry(&registry)
        .should_validate_formats(true)
        .with_format("date-time", |s: &str| cookwala::time::parse_timestamp(s).is_ok())
        .build(&root)
        .unwrap()
}

fn refs(v: &serde_json::Value, f: &mut impl FnMut(&str)) {
    match v {
        serde_json::Value::Object(m) => {
            if let Some(serde_json::Value::String(r)) = m.get("$ref") {
                f(r);
            }
            m.values().for_each(|x| refs(x, f));
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| refs(x, f)),
        _ => {}
    }
}

#[tokio::test]
async fn every_event_of_simulated_runs_validates_against_the_event_schema() {
    let Some(dir) = test_support::shared("standards/cookwala/schemas") else { return };
    let validator = event_validator(&dir);

    let mut events: Vec<Value> = Vec::new();
    // A completed run, a refused start (busy), a stopped run and a recall.
    let hub = hub_in_memory().await;
    let app = app(hub.clone());
    start(&hub, "ex-sc-1", "red-lentil-soup").await;
    let busy = start(&hub, "ex-sc-busy", "vegetable-stock").await;
    assert_eq!(busy.str("state"), "refused");
    run_to_end(&hub, "ex-sc-1").await;
    start(&hub, "ex-sc-2", "vegetable-stock").await;
    hub.advance(300_000).await.unwrap();
    call(&app, post("/v1/executions/ex-sc-2/stop", Some("stop-sc-2-key"), r#"{"reason":"test"}"#))
        .await;
    run_to_end(&hub, "ex-sc-2").await;
    let recall = recall_doc("rc-sc");
    hub.publish_recall_event(&recall).await.unwrap();
    events.extend(outbox(&*hub.storage()));
    events.push(hub.heartbeat().await);
    // A run where a safety limit fires.
    let hot =
        Hub::open(Arc::new(SqliteStorage::in_memory().unwrap()), overheat_config()).await.unwrap();
    start(&hot, "ex-sc-hot", "red-lentil-soup").await;
    run_to_end(&hot, "ex-sc-hot").await;
    events.extend(outbox(&*hot.storage()));

    let mut seen = BTreeMap::new();
    for e in &events {
        *seen.entry(s(e, "type").to_owned()).or_insert(0) += 1;
        let bytes = canonical_json::to_jcs(e).unwrap();
        let instance: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&instance)
            .map(|x| format!("{} {x}", x.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{} {}: {errors:?}", s(e, "type"), s(e, "id"));
    }
    for ty in [
        "cookwala.execution.accepted",
        "cookwala.execution.refused",
        "cookwala.execution.state_changed",
        "cookwala.execution.step",
        "cookwala.execution.completed",
        "cookwala.safety.limit_fired",
        "cookwala.recall.published",
        "cookwala.device.heartbeat",
    ] {
        assert!(seen.contains_key(ty), "no {ty} in {seen:?}");
    }
    // The validator does reject a safety event without priority.
    let mut bad =
        events.iter().find(|e| s(e, "type") == "cookwala.safety.limit_fired").unwrap().clone();
    bad.as_object_mut().unwrap().remove("cookwalapriority");
    let instance: serde_json::Value =
        serde_json::from_slice(&canonical_json::to_jcs(&bad).unwrap()).unwrap();
    assert!(!validator.is_valid(&instance));
}
