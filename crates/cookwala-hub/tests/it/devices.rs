//! Several devices per hub: `/devices/{device}/v1/...`, busy per device, cross-device 404s,
//! `GET /v1/devices`, per-device heartbeats, capabilities and safety limits (narrowed by a
//! bundle or a device's own pack, and enforced by the simulation), and restart recovery from
//! the documents stored with each execution.

use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::http::StatusCode;
use canonical_json::{Map, Value};
use cookwala_hub::storage::{SqliteStorage, Storage};
use cookwala_hub::{Catalog, Hub, HubConfig, app};

use crate::events::{outbox, s};
use crate::support::*;

/// Starts `recipe` (built-in) at `prefix` (`""`: the root device).
async fn start_at(app: &Router, prefix: &str, id: &str, recipe: &str, human: bool) -> Reply {
    let path = format!("{prefix}/v1/executions");
    let res =
        call(app, post(&path, Some(&format!("{id}-idem")), &request(id, recipe, human))).await;
    assert_eq!(res.status, StatusCode::ACCEPTED, "{id}: {:?}", res.body);
    res
}

fn refusal(r: &Reply) -> Option<&str> {
    r.body.pointer("/refusal/reason").and_then(Value::as_str)
}

async fn run_all_to_end(hub: &Hub, paths: &[&str]) -> Vec<Reply> {
    let app = app(hub.clone());
    for _ in 0..1_000 {
        let mut now = Vec::new();
        for p in paths {
            now.push(call(&app, get(p)).await);
        }
        if now.iter().all(|r| ["completed", "stopped", "failed"].contains(&r.str("state"))) {
            return now;
        }
        hub.advance(60_000).await.unwrap();
    }
    panic!("{paths:?} did not end");
}

#[tokio::test]
async fn two_devices_cook_at_once_and_busy_is_per_device() {
    let hub = hub_in_memory().await;
    let app = app(hub.clone());
    let soup = start_at(&app, "", "ex-d-soup", "red-lentil-soup", false).await;
    assert_eq!(soup.str("state"), "accepted");
    let loaf = start_at(&app, "/devices/sim-oven", "ex-d-loaf", "oat-honey-loaf", false).await;
    assert_eq!(loaf.str("state"), "accepted", "the oven is not busy with the hob's soup");
    // Each device is busy with its own execution; the hob is the same device at both paths.
    let hob_busy =
        start_at(&app, "/devices/sim-hob-robot", "ex-d-stock", "vegetable-stock", false).await;
    assert_eq!(refusal(&hob_busy), Some("busy"));
    let oven_busy =
        start_at(&app, "/devices/sim-oven", "ex-d-loaf2", "oat-honey-loaf", false).await;
    assert_eq!(refusal(&oven_busy), Some("busy"));
    let arm =
        start_at(&app, "/devices/sim-counter-arm", "ex-d-salad", "cucumber-herb-salad", true).await;
    assert_ne!(refusal(&arm), Some("busy"), "{:?}", arm.body);

    hub.advance(120_000).await.unwrap();
    let soup_now = call(&app, get("/v1/executions/ex-d-soup")).await;
    let loaf_now = call(&app, get("/devices/sim-oven/v1/executions/ex-d-loaf")).await;
    assert_eq!((soup_now.str("state"), loaf_now.str("state")), ("running", "running"));

    let list = call(&app, get("/v1/devices")).await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(list.content_type(), "application/vnd.cookwala+json");
    let devices = list.body.get("devices").and_then(Value::as_array).unwrap();
    let ids: Vec<&str> = devices.iter().map(|d| s(d, "id")).collect();
    assert_eq!(ids, ["sim-hob-robot", "sim-counter-arm", "sim-oven"], "root first, then by id");
    let hob = &devices[0];
    assert_eq!(hob.get("root"), Some(&Value::from(true)));
    assert_eq!(s(hob, "prefix"), "/devices/sim-hob-robot/v1");
    assert_eq!(hob.get("busy"), Some(&Value::from(true)));
    assert_eq!(hob.get("active"), Some(&Value::Array(vec!["ex-d-soup".into()])));
    assert!(!s(hob, "name").is_empty());
    assert!(hob.get("lastHeartbeat").is_none());
    let oven = &devices[2];
    assert_eq!(oven.get("root"), Some(&Value::from(false)));
    assert_eq!(oven.get("active"), Some(&Value::Array(vec!["ex-d-loaf".into()])));

    // Events name the device each execution runs on.
    let events = outbox(&*hub.storage());
    let source = |subject: &str| -> Vec<&str> {
        let mut all: Vec<&str> =
            events.iter().filter(|e| s(e, "subject") == subject).map(|e| s(e, "source")).collect();
        all.dedup();
        all
    };
    assert_eq!(source("ex-d-soup"), ["/cookwala/devices/sim-hob-robot"]);
    assert_eq!(source("ex-d-loaf"), ["/cookwala/devices/sim-oven"]);

    // Heartbeats: one per device, each with its own executions.
    let beats = hub.heartbeats().await;
    let subjects: Vec<&str> = beats.iter().map(|b| s(b, "subject")).collect();
    assert_eq!(subjects, ["sim-hob-robot", "sim-counter-arm", "sim-oven"]);
    assert_eq!(s(&beats[2], "source"), "/cookwala/devices/sim-oven");
    assert_eq!(
        beats[2].pointer("/data/activeExecutions"),
        Some(&Value::Array(vec!["ex-d-loaf".into()]))
    );
    assert_eq!(beats[2].pointer("/data/status").and_then(Value::as_str), Some("busy"));
    let list = call(&app, get("/v1/devices")).await;
    let devices = list.body.get("devices").and_then(Value::as_array).unwrap();
    assert!(devices.iter().all(|d| d.get("lastHeartbeat").is_some()), "{devices:?}");
    let oven_caps = call(&app, get("/devices/sim-oven/v1/capabilities")).await;
    assert!(oven_caps.headers.get("x-hub-last-heartbeat").is_some());

    let ends = run_all_to_end(
        &hub,
        &["/v1/executions/ex-d-soup", "/devices/sim-oven/v1/executions/ex-d-loaf"],
    )
    .await;
    assert_eq!((ends[0].str("state"), ends[1].str("state")), ("completed", "completed"));
    let log = call(&app, get("/devices/sim-oven/v1/executions/ex-d-loaf/log")).await;
    assert_eq!(log.status, StatusCode::OK);
    assert_eq!(log.str("recipe"), "oat-honey-loaf");
    let list = call(&app, get("/v1/devices")).await;
    let devices = list.body.get("devices").and_then(Value::as_array).unwrap();
    assert!(devices.iter().all(|d| d.get("busy") == Some(&Value::from(false))));
}

#[tokio::test]
async fn an_execution_is_served_only_by_its_own_device() {
    let hub = hub_in_memory().await;
    let app = app(hub.clone());
    start_at(&app, "/devices/sim-oven", "ex-x-loaf", "oat-honey-loaf", false).await;
    start_at(&app, "", "ex-x-soup", "red-lentil-soup", false).await;
    hub.advance(60_000).await.unwrap();

    for path in [
        "/v1/executions/ex-x-loaf",
        "/devices/sim-hob-robot/v1/executions/ex-x-loaf",
        "/devices/sim-oven/v1/executions/ex-x-soup",
        "/devices/sim-counter-arm/v1/executions/ex-x-soup/log",
        "/v1/executions/ex-x-loaf/log",
    ] {
        let res = call(&app, get(path)).await;
        assert_eq!(res.status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(res.content_type(), "application/problem+json", "{path}");
    }
    let wrong = call(&app, get("/v1/executions/ex-x-loaf")).await;
    assert!(wrong.str("detail").contains("/devices/sim-oven/"), "{:?}", wrong.body);
    // Resume through another device does nothing.
    let mut resume =
        post("/devices/sim-hob-robot/v1/executions/ex-x-loaf/resume", Some("resume-x-01"), "");
    resume.headers_mut().insert("if-match", "\"1\"".parse().unwrap());
    assert_eq!(call(&app, resume).await.status, StatusCode::NOT_FOUND);
    let loaf = call(&app, get("/devices/sim-oven/v1/executions/ex-x-loaf")).await;
    assert_eq!(loaf.status, StatusCode::OK);
    assert_ne!(loaf.str("state"), "stopped");

    // Ids are unique across devices.
    let dup = call(
        &app,
        post(
            "/devices/sim-counter-arm/v1/executions",
            Some("dup-x-00001"),
            &request("ex-x-loaf", "cucumber-herb-salad", true),
        ),
    )
    .await;
    assert_eq!(dup.status, StatusCode::CONFLICT);
    // An Idempotency-Key names one request: the same body on another device is not a replay.
    let again = call(
        &app,
        post(
            "/devices/sim-counter-arm/v1/executions",
            Some("ex-x-soup-idem"),
            &request("ex-x-soup", "red-lentil-soup", false),
        ),
    )
    .await;
    assert_eq!(again.status, StatusCode::UNPROCESSABLE_ENTITY);

    // Unknown devices.
    for path in ["/devices/no-such-device/v1/capabilities", "/devices/nope/v1/executions/ex-x-soup"]
    {
        let res = call(&app, get(path)).await;
        assert_eq!(res.status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(res.content_type(), "application/problem+json");
    }
    let res = call(
        &app,
        post(
            "/devices/nope/v1/executions",
            Some("nope-x-0001"),
            &request("ex-x-n", "red-lentil-soup", false),
        ),
    )
    .await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    assert!(hub.storage().execution("ex-x-n").unwrap().is_none());

    // A stop is never refused for its path: the oven's execution stops through the root,
    // and the hob's soup goes on.
    let stop = call(&app, post("/v1/executions/ex-x-loaf/stop", Some("stop-x-0001"), "{}")).await;
    assert_eq!(stop.status, StatusCode::ACCEPTED);
    assert_eq!(stop.str("id"), "ex-x-loaf");
    let end = run_all_to_end(&hub, &["/devices/sim-oven/v1/executions/ex-x-loaf"]).await;
    assert_eq!(end[0].str("state"), "stopped");
    assert_eq!(call(&app, get("/v1/executions/ex-x-soup")).await.str("state"), "running");
    let stop = call(&app, post("/devices/sim-oven/v1/executions/no-such/stop", None, "")).await;
    assert_eq!(stop.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_root_device_answers_the_same_at_both_paths() {
    let hub = hub_in_memory().await;
    let app = app(hub.clone());
    for (root, nested) in [
        ("/v1/capabilities", "/devices/sim-hob-robot/v1/capabilities"),
        ("/v1/safety-limits", "/devices/sim-hob-robot/v1/safety-limits"),
    ] {
        let (a, b) = (call(&app, get(root)).await, call(&app, get(nested)).await);
        assert_eq!((a.status, b.status), (StatusCode::OK, StatusCode::OK));
        assert_eq!(a.raw, b.raw, "{root}");
        assert_eq!(a.content_type(), b.content_type());
    }
    let limits = call(&app, get("/v1/safety-limits")).await;
    assert_eq!(limits.body, cookwala::limits::default_pack());
    let oven = call(&app, get("/devices/sim-oven/v1/capabilities")).await;
    assert_eq!(oven.body, cookwala_sim::builtin::device("sim-oven").unwrap());
    assert_ne!(oven.raw, call(&app, get("/v1/capabilities")).await.raw);

    // A POST at the root and its retry under the root device's prefix are one request.
    let body = request("ex-root-1", "red-lentil-soup", false);
    let first = call(&app, post("/v1/executions", Some("root-key-0001"), &body)).await;
    assert_eq!(first.status, StatusCode::ACCEPTED);
    let retry =
        call(&app, post("/devices/sim-hob-robot/v1/executions", Some("root-key-0001"), &body))
            .await;
    assert_eq!(retry.status, StatusCode::ACCEPTED);
    assert_eq!(retry.headers["idempotent-replayed"], "true");
    assert_eq!(retry.raw, first.raw);
    let nested = call(&app, get("/devices/sim-hob-robot/v1/executions/ex-root-1")).await;
    let root = call(&app, get("/v1/executions/ex-root-1")).await;
    assert_eq!(
        (nested.raw, nested.headers["etag"].clone()),
        (root.raw, root.headers["etag"].clone())
    );

    // /v1/devices needs a token.
    let anon = axum::http::Request::get("/v1/devices").body(axum::body::Body::empty()).unwrap();
    assert_eq!(call(&app, anon).await.status, StatusCode::UNAUTHORIZED);
}

/// A SafetyLimit row.
fn limit(id: &str, max: i64, message: &str) -> Value {
    let text = format!(
        r#"{{"id":"{id}","kind":"max_temp","action":"cut_heat","source":"site safety case",
        "message":"{message}","appliesTo":{{"medium":"oil","ops":["cw.op.fry","cw.op.deep_fry"]}},
        "max":{max},"unit":"degC"}}"#
    );
    canonical_json::parse(text.as_bytes()).unwrap()
}

fn pack(id: &str, limits: Vec<Value>) -> Value {
    let mut m = Map::new();
    m.insert("core".into(), "0.2.0".into());
    m.insert("kind".into(), "SafetyLimits".into());
    m.insert("id".into(), id.into());
    m.insert("version".into(), "1.0.0".into());
    m.insert("limits".into(), Value::Array(limits));
    m.insert("disclaimer".into(), "Test limits.".into());
    Value::Object(m)
}

fn hob_named(model: &str) -> Value {
    let mut doc = cookwala_sim::builtin::device("sim-hob-robot").unwrap();
    let actor = doc.as_object_mut().unwrap().get_mut("actor").unwrap();
    actor.as_object_mut().unwrap().insert("model".into(), model.into());
    doc
}

fn write_json(path: &Path, v: &Value) {
    std::fs::write(path, canonical_json::to_jcs(v).unwrap()).unwrap();
}

#[tokio::test]
async fn a_narrower_bundle_limit_is_served_and_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("bundle.json");
    // The bundle's pack: a narrower oil limit under its own id, a looser one under the default
    // id (it cannot widen anything), and a repeat of a default limit in other words (dropped).
    let mut default_oil = limit("oil.max_temp", 200, "Same limit, other words.");
    default_oil.as_object_mut().unwrap().insert("source".into(), "copied".into());
    let site = pack(
        "site-limits",
        vec![
            limit("oil.site_max", 150, "Site rule: oil stays below 150 degC."),
            limit("oil.max_temp", 250, "A looser limit changes nothing."),
            default_oil,
        ],
    );
    let mut doc = Map::new();
    doc.insert("recipes".into(), Value::Object(Map::new()));
    let mut devices = Map::new();
    devices.insert("site-hob".into(), hob_named("Site hob"));
    doc.insert("devices".into(), Value::Object(devices));
    doc.insert("safetyLimits".into(), site);
    write_json(&bundle, &Value::Object(doc));

    let mut catalog = Catalog::builtin();
    catalog.load_bundle(&bundle).unwrap();
    // A device file with its own pack narrows that device only.
    let mut own = hob_named("Own-pack hob");
    own.as_object_mut()
        .unwrap()
        .insert("x-safetyLimits".into(), pack("own", vec![limit("oil.own_max", 160, "Own rule.")]));
    catalog.add_device(Path::new("own-hob.json"), "own-hob", own).unwrap();
    let served = catalog.safety_limits("site-hob").unwrap();
    assert_eq!(catalog.safety_limits("sim-hob-robot").unwrap(), cookwala::limits::default_pack());

    let hub =
        Hub::open(Arc::new(SqliteStorage::in_memory().unwrap()), HubConfig { catalog, ..config() })
            .await
            .unwrap();
    let app = app(hub.clone());

    // (a) Served: the default pack plus the two new limits, for that device only.
    let site_limits = call(&app, get("/devices/site-hob/v1/safety-limits")).await;
    assert_eq!(site_limits.status, StatusCode::OK);
    assert_eq!(site_limits.body, served);
    let rows = site_limits.body.get("limits").and_then(Value::as_array).unwrap();
    let default_rows =
        cookwala::limits::default_pack().get("limits").unwrap().as_array().unwrap().len();
    assert_eq!(rows.len(), default_rows + 2, "{rows:?}");
    let max_of = |id: &str| -> Vec<i64> {
        rows.iter()
            .filter(|r| s(r, "id") == id)
            .filter_map(|r| r.get("max").and_then(Value::as_i64))
            .collect()
    };
    assert_eq!(max_of("oil.site_max"), [150]);
    assert_eq!(max_of("oil.max_temp"), [200, 250], "the default 200 stays");
    let report = cookwala::documents::validate(
        &site_limits.body,
        Some("SafetyLimits"),
        cookwala::vocab::Vocabulary::builtin(),
    );
    assert!(report.is_valid(), "{:?}", report.errors);
    let own_limits = call(&app, get("/devices/own-hob/v1/safety-limits")).await;
    let own_rows = own_limits.body.get("limits").and_then(Value::as_array).unwrap();
    assert!(own_rows.iter().any(|r| s(r, "id") == "oil.own_max"));
    assert!(!own_rows.iter().any(|r| s(r, "id") == "oil.site_max"));
    let root_limits = call(&app, get("/v1/safety-limits")).await;
    assert_eq!(root_limits.body, cookwala::limits::default_pack());

    // (b) Enforced: frying at 175 degC is refused on the site hob by the narrower limit, on
    // the own-pack hob by its own, and accepted on the built-in hob.
    let site = start_at(&app, "/devices/site-hob", "ex-l-site", "chickpea-fritters", true).await;
    assert_eq!(refusal(&site), Some("safety_limit"), "{:?}", site.body);
    let own = start_at(&app, "/devices/own-hob", "ex-l-own", "chickpea-fritters", true).await;
    assert_eq!(refusal(&own), Some("safety_limit"), "{:?}", own.body);
    let plain = start_at(&app, "", "ex-l-plain", "chickpea-fritters", true).await;
    assert_eq!(plain.str("state"), "accepted", "{:?}", plain.body);
    // The dry-run tool checks a catalog device with the limits it enforces.
    let dry = call(
        &app,
        post(
            "/v1/tools/dryrun",
            None,
            r#"{"recipeId":"chickpea-fritters","deviceId":"site-hob","humanPresent":true}"#,
        ),
    )
    .await;
    assert_eq!(dry.status, StatusCode::OK, "{:?}", dry.body);
    assert_eq!(dry.body.pointer("/refusal/reason").and_then(Value::as_str), Some("safety_limit"));

    // A request cannot widen them: an x- field naming limits is ignored.
    let mut req =
        canonical_json::parse(request("ex-l-wide", "chickpea-fritters", true).as_bytes()).unwrap();
    req.as_object_mut()
        .unwrap()
        .insert("x-safetyLimits".into(), pack("wide", vec![limit("oil.site_max", 400, "wider")]));
    let body = String::from_utf8(canonical_json::to_jcs(&req).unwrap()).unwrap();
    let wide =
        call(&app, post("/devices/site-hob/v1/executions", Some("wide-l-0001"), &body)).await;
    assert_eq!(refusal(&wide), Some("safety_limit"), "{:?}", wide.body);

    // A malformed bundle pack refuses the bundle.
    let bad = dir.path().join("bad.json");
    let mut doc = Map::new();
    doc.insert("recipes".into(), Value::Object(Map::new()));
    doc.insert("devices".into(), Value::Object(Map::new()));
    doc.insert("safetyLimits".into(), Value::from("none"));
    write_json(&bad, &Value::Object(doc));
    let err = Catalog::builtin().load_bundle(&bad).unwrap_err();
    assert!(err.why.contains("safetyLimits"), "{err}");
}

#[tokio::test]
async fn the_samples_bundle_pack_narrows_nothing() {
    let Some(bundle) = test_support::samples_bundle() else { return };
    let mut catalog = Catalog::builtin();
    let (_, devices) = catalog.load_bundle(&bundle).unwrap();
    assert!(!devices.is_empty());
    for d in &devices {
        assert!(catalog.device_limits(d).is_none(), "{d}");
        assert_eq!(catalog.safety_limits(d).unwrap(), cookwala::limits::default_pack());
    }
}

fn authored_recipe() -> Value {
    let mut doc = cookwala_sim::builtin::recipe("red-lentil-soup").unwrap();
    let m = doc.as_object_mut().unwrap();
    m.insert("id".into(), "stored-soup".into());
    doc
}

fn request_for(id: &str, recipe: &Value) -> String {
    let hash = canonical_json::digest::document_hash(recipe).unwrap();
    format!(
        r#"{{"core":"0.2.0","kind":"ExecuteRequest","id":"{id}","recipe":"cw:cookwala-rs:stored-soup",
        "recipeHash":"{hash}","requestedBy":"person:cook","idempotencyKey":"{id}-key"}}"#
    )
}

async fn open_file(path: &Path, config: HubConfig) -> Hub {
    let storage: Arc<dyn Storage> = Arc::new(SqliteStorage::open(path).unwrap());
    Hub::open(storage, config).await.unwrap()
}

#[tokio::test]
async fn a_restart_without_the_bundle_ends_executions_from_their_stored_documents() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.sqlite3");
    let recipe = authored_recipe();
    let device = hob_named("Site hob");
    let mut catalog = Catalog::builtin();
    catalog.add_recipe(Path::new("stored-soup.json"), recipe.clone(), None).unwrap();
    catalog.add_device(Path::new("site-hob.json"), "site-hob", device.clone()).unwrap();
    {
        let hub = open_file(&path, HubConfig { catalog, ..config() }).await;
        let app = app(hub.clone());
        let body = request_for("ex-s-1", &recipe);
        let res =
            call(&app, post("/devices/site-hob/v1/executions", Some("stored-key-01"), &body)).await;
        assert_eq!(res.str("state"), "accepted", "{:?}", res.body);
        hub.advance(120_000).await.unwrap();
        let now = call(&app, get("/devices/site-hob/v1/executions/ex-s-1")).await;
        assert_eq!(now.str("state"), "running");
        let rec = hub.storage().execution("ex-s-1").unwrap().unwrap();
        assert_eq!(canonical_json::parse(rec.recipe_doc.unwrap().as_bytes()).unwrap(), recipe);
        // Unclean stop.
    }
    // Only the built-in catalog now: neither the recipe nor the device is known.
    let hub = open_file(&path, config()).await;
    assert_eq!(hub.recovered(), ["ex-s-1".to_owned()]);
    let app = app(hub.clone());
    let log = call(&app, get("/v1/executions/ex-s-1/log")).await;
    assert_eq!(log.status, StatusCode::OK, "{:?}", log.body);
    assert_eq!(log.str("outcome"), "aborted_safe");
    assert_eq!(log.str("recipe"), "stored-soup");
    assert_eq!(log.str("recipeHash"), canonical_json::digest::document_hash(&recipe).unwrap());
    assert_eq!(log.body.pointer("/device/model").and_then(Value::as_str), Some("Site hob"));
    assert_eq!(
        log.body.pointer("/device/capabilitiesHash").and_then(Value::as_str),
        Some(canonical_json::digest::document_hash(&device).unwrap().as_str())
    );
    let events = outbox(&*hub.storage());
    let last = events.last().unwrap();
    assert_eq!(last.pointer("/data/state").and_then(Value::as_str), Some("stopped"));
    assert_eq!(s(last, "source"), "/cookwala/devices/site-hob");
    assert!(hub.storage().unfinished().unwrap().is_empty());
}

#[tokio::test]
async fn a_row_from_before_schema_4_falls_back_to_the_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.sqlite3");
    {
        let hub = open_file(&path, config()).await;
        let app = app(hub.clone());
        start_at(&app, "", "ex-o-1", "red-lentil-soup", false).await;
        hub.advance(120_000).await.unwrap();
    }
    // Make the database what a schema-3 hub left: no document columns.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "ALTER TABLE executions DROP COLUMN recipe_doc;
         ALTER TABLE executions DROP COLUMN device_doc;
         ALTER TABLE executions DROP COLUMN limits_doc;
         DROP INDEX incidents_reported;
         ALTER TABLE incidents DROP COLUMN reported;
         ALTER TABLE executions DROP COLUMN admission;
         PRAGMA user_version = 3;",
    )
    .unwrap();
    drop(conn);
    let hub = open_file(&path, config()).await;
    assert_eq!(hub.recovered(), ["ex-o-1".to_owned()]);
    let rec = hub.storage().execution("ex-o-1").unwrap().unwrap();
    assert_eq!((rec.recipe_doc, rec.device_doc), (None, None));
    let app = app(hub.clone());
    let log = call(&app, get("/v1/executions/ex-o-1/log")).await;
    assert_eq!(log.status, StatusCode::OK);
    assert_eq!(log.str("outcome"), "aborted_safe");
    assert_eq!(log.str("recipe"), "red-lentil-soup");
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, cookwala_hub::storage::SCHEMA_VERSION);
}
