//! Safe by default and bounded per request: no silent open mode, only a person confirms a
//! person, body and stream limits, rate-limited anonymous reports, per-principal idempotency,
//! every route under every device prefix, CORS, wall-clock times, the device maker's pack and
//! the standard's vocabulary.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use canonical_json::Value;
use cookwala_hub::auth::Tokens;
use cookwala_hub::storage::{SqliteStorage, Storage};
use cookwala_hub::{Catalog, Hub, HubConfig, HubError, app};
use tower::ServiceExt;

use crate::auth::{AGENT, COOK, OWNER, as_, hub_with_roles};
use crate::support::*;

async fn open(config: HubConfig) -> Result<Hub, HubError> {
    let storage: Arc<dyn Storage> = Arc::new(SqliteStorage::in_memory().unwrap());
    Hub::open(storage, config).await
}

fn open_post(path: &str, key: Option<&str>, body: &str) -> Request<Body> {
    let mut b = Request::post(path).header("content-type", "application/json");
    if let Some(k) = key {
        b = b.header("idempotency-key", k);
    }
    b.body(Body::from(body.to_owned())).unwrap()
}

fn open_get(path: &str) -> Request<Body> {
    Request::get(path).body(Body::empty()).unwrap()
}

fn assert_problem(r: &Reply, status: StatusCode) {
    assert_eq!(r.status, status, "{:?}", r.body);
    assert_eq!(r.content_type(), "application/problem+json", "{:?}", r.body);
}

#[tokio::test]
async fn a_hub_with_no_token_refuses_to_open_unless_told_it_is_open() {
    let closed = HubConfig { speed: 0.0, tokens: Tokens::new(), ..HubConfig::default() };
    let err = open(closed).await.unwrap_err();
    assert!(matches!(err, HubError::NoAuth), "{err}");
    assert!(err.to_string().contains("--no-auth"), "{err}");

    // --no-auth, said out loud: everything answers without a token.
    let hub = open(HubConfig { speed: 0.0, no_auth: true, ..HubConfig::default() }).await.unwrap();
    let app = app(hub);
    let body = request("ex-open-1", "red-lentil-soup", false);
    let started = call(&app, open_post("/v1/executions", Some("open-key-0001"), &body)).await;
    assert_eq!(started.status, StatusCode::ACCEPTED, "{:?}", started.body);
    let read = call(&app, open_get("/v1/executions/ex-open-1")).await;
    assert_eq!(read.status, StatusCode::OK);
}

#[tokio::test]
async fn no_debug_output_shows_a_token() {
    let config = config();
    let text = format!("{config:?}");
    assert!(!text.contains(TOKEN), "{text}");
}

/// Starts the salad (its knife step needs a person) as the cook and moves it to
/// `needs_human`; returns its seq there.
async fn salad_waiting(hub: &Hub, app: &axum::Router, id: &str) -> i64 {
    let body = request(id, "cucumber-herb-salad", true);
    let r =
        call(app, as_(COOK, "POST", "/v1/executions", Some(&format!("{id}-start")), &body)).await;
    assert_eq!(r.str("state"), "accepted", "{:?}", r.body);
    for _ in 0..120 {
        let now = call(app, as_(COOK, "GET", &format!("/v1/executions/{id}"), None, "")).await;
        if now.str("state") == "needs_human" {
            return now.seq();
        }
        hub.advance(5_000).await.unwrap();
    }
    panic!("the salad never waited for a person");
}

fn resume(token: &str, id: &str, key: &str, seq: i64) -> Request<Body> {
    let mut req = as_(token, "POST", &format!("/v1/executions/{id}/resume"), Some(key), "{}");
    req.headers_mut().insert("if-match", format!("\"{seq}\"").parse().unwrap());
    req
}

#[tokio::test]
async fn only_a_person_confirms_a_human_step_and_the_log_says_who() {
    let hub = hub_with_roles().await;
    let app = app(hub.clone());
    let seq = salad_waiting(&hub, &app, "ex-person-1").await;

    // An agent may not act as the person in the kitchen.
    let r = call(&app, resume(AGENT, "ex-person-1", "agent-resume-01", seq)).await;
    assert_problem(&r, StatusCode::FORBIDDEN);
    assert!(r.str("detail").contains("only a person"), "{:?}", r.body);
    let still = call(&app, as_(COOK, "GET", "/v1/executions/ex-person-1", None, "")).await;
    assert_eq!(still.str("state"), "needs_human");
    assert_eq!(still.seq(), seq);

    // The cook confirms: the answer is `running` at the seq it moved to.
    let r = call(&app, resume(COOK, "ex-person-1", "cook-resume-01", seq)).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
    assert_eq!(r.str("state"), "running");
    assert_eq!(r.seq(), seq + 1);
    assert_eq!(r.headers.get("etag").unwrap(), &format!("\"{}\"", seq + 1));

    // Stop it and read the log: it names the principal that confirmed.
    let r = call(&app, as_(COOK, "POST", "/v1/executions/ex-person-1/stop", None, "{}")).await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    for _ in 0..20 {
        hub.advance(1_000).await.unwrap();
    }
    let log = call(&app, as_(COOK, "GET", "/v1/executions/ex-person-1/log", None, "")).await;
    assert_eq!(log.status, StatusCode::OK, "{:?}", log.body);
    let by = log.body.pointer("/x-confirmedBy/0/by").and_then(Value::as_str);
    assert_eq!(by, Some("cook:tablet"), "{:?}", log.body);
}

#[tokio::test]
async fn an_agent_cannot_say_a_person_is_present() {
    let hub = hub_with_roles().await;
    let app = app(hub);
    let mut req =
        canonical_json::parse(request("ex-ag-h", "red-lentil-soup", true).as_bytes()).unwrap();
    req.as_object_mut().unwrap().insert("requestedBy".into(), "agent:planner-1".into());
    let body = String::from_utf8(canonical_json::to_jcs(&req).unwrap()).unwrap();
    let r = call(&app, as_(AGENT, "POST", "/v1/executions", Some("agent-human-01"), &body)).await;
    assert_problem(&r, StatusCode::FORBIDDEN);
    assert!(r.str("detail").contains("x-hub-human-present"), "{:?}", r.body);
}

#[tokio::test]
async fn a_body_over_the_limit_is_a_413_problem() {
    let hub = open(HubConfig { max_body: 1024, ..config() }).await.unwrap();
    let app = app(hub);
    let big = format!(r#"{{"doc":{{"pad":"{}"}}}}"#, "x".repeat(4096));
    let r = call(&app, open_post("/v1/tools/hash", None, &big)).await;
    assert_problem(&r, StatusCode::PAYLOAD_TOO_LARGE);
    let r = call(&app, post("/v1/executions", Some("big-body-0001"), &big)).await;
    assert_problem(&r, StatusCode::PAYLOAD_TOO_LARGE);
    // Under the limit, the same tool answers.
    let r = call(&app, open_post("/v1/tools/hash", None, r#"{"doc":{"a":1}}"#)).await;
    assert_eq!(r.status, StatusCode::OK);
}

#[tokio::test]
async fn a_huge_multibase_key_is_refused_before_it_is_decoded() {
    let hub = open(HubConfig { max_body: 4 << 20, ..config() }).await.unwrap();
    let app = app(hub);
    // 600 kB of base58: decoding it would cost seconds of CPU (the decode is quadratic).
    let did = format!(
        r##"{{"id":"did:web:evil.example","verificationMethod":[{{"id":"#k","type":"Multikey","publicKeyMultibase":"z{}"}}]}}"##,
        "2".repeat(600_000)
    );
    let body = format!(r#"{{"doc":{{"kind":"Recipe"}},"keys":{did}}}"#);
    let started = std::time::Instant::now();
    let r = call(&app, open_post("/v1/tools/verify", None, &body)).await;
    let took = started.elapsed();
    assert_problem(&r, StatusCode::BAD_REQUEST);
    assert!(r.str("detail").contains("publicKeyMultibase"), "{:?}", r.body);
    eprintln!("hostile multibase refused in {took:?}");

    // Too many keys in one set.
    let many: Vec<String> = (0..300)
        .map(|i| {
            format!(
                r#"{{"kid":"k{i}","alg":"EdDSA","publicKey":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","validFrom":"2026-01-01T00:00:00Z"}}"#
            )
        })
        .collect();
    let body = format!(r#"{{"doc":{{"kind":"Recipe"}},"keys":[{}]}}"#, many.join(","));
    let r = call(&app, open_post("/v1/tools/verify", None, &body)).await;
    assert_problem(&r, StatusCode::BAD_REQUEST);
    assert!(r.str("detail").contains("at most"), "{:?}", r.body);
}

#[tokio::test]
async fn open_event_streams_are_capped() {
    let hub = open(HubConfig { max_streams: 1, ..config() }).await.unwrap();
    let app = app(hub);
    let first = app.clone().oneshot(get("/v1/events")).await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    let second = call(&app, get("/v1/events")).await;
    assert_problem(&second, StatusCode::SERVICE_UNAVAILABLE);
    assert!(second.str("detail").contains("--max-streams"), "{:?}", second.body);
    drop(first);
    let third = app.clone().oneshot(get("/v1/events")).await.unwrap();
    assert_eq!(third.status(), StatusCode::OK);
}

fn report(id: &str) -> String {
    format!(
        r#"{{"core":"0.2.0","kind":"IncidentReport","id":"{id}","date":"2026-11-30",
        "category":"cw.incident.burn","severity":"low","description":"pan handle got hot"}}"#
    )
}

#[tokio::test]
async fn anonymous_incident_reports_are_rate_limited_and_expire() {
    let hub = open(HubConfig { incidents_per_minute: 2, ..config() }).await.unwrap();
    let app = app(hub.clone());
    for i in 0..2 {
        let r = call(
            &app,
            open_post(
                "/v1/incidents",
                Some(&format!("inc-key-{i:04}")),
                &report(&format!("inc-{i}")),
            ),
        )
        .await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
    }
    let r = call(&app, open_post("/v1/incidents", Some("inc-key-0009"), &report("inc-9"))).await;
    assert_problem(&r, StatusCode::TOO_MANY_REQUESTS);
    // A caller with a token is not counted with the anonymous ones.
    let r = call(&app, post("/v1/incidents", Some("inc-key-0010"), &report("inc-10"))).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
    // Retention: reports older than the cut-off go; nothing the hub recorded itself does.
    let storage = hub.storage();
    assert_eq!(storage.incident_count().unwrap(), 3);
    assert_eq!(storage.prune_reports(0).unwrap(), 0);
    assert_eq!(storage.prune_reports(i64::MAX).unwrap(), 3);
    assert_eq!(storage.incident_count().unwrap(), 0);
}

#[tokio::test]
async fn idempotency_keys_belong_to_the_principal_that_used_them() {
    let hub = hub_with_roles().await;
    let app = app(hub);
    let a = request("ex-idem-a", "red-lentil-soup", false);
    let b = request("ex-idem-b", "red-lentil-soup", false);
    let first = call(&app, as_(OWNER, "POST", "/v1/executions", Some("shared-key-01"), &a)).await;
    assert_eq!(first.str("state"), "accepted", "{:?}", first.body);
    // Another principal with the same key: its own request, not a 422 nor someone's answer.
    let other =
        call(&app, as_(COOK, "POST", "/devices/sim-oven/v1/executions", Some("shared-key-01"), &b))
            .await;
    assert_eq!(other.status, StatusCode::ACCEPTED, "{:?}", other.body);
    assert_eq!(other.str("id"), "ex-idem-b");
    assert!(other.headers.get("idempotent-replayed").is_none());
    // The same principal repeating itself gets its original answer.
    let again = call(&app, as_(OWNER, "POST", "/v1/executions", Some("shared-key-01"), &a)).await;
    assert_eq!(again.headers.get("idempotent-replayed").unwrap(), "true");
    assert_eq!(again.str("id"), "ex-idem-a");
}

#[tokio::test]
async fn every_device_prefix_serves_every_per_device_route() {
    let app = app(hub_in_memory().await);
    for path in [
        "/devices/sim-oven/v1/tools/recipes",
        "/devices/sim-oven/v1/tools/recipes/red-lentil-soup",
        "/devices/sim-oven/v1/tools/devices",
        "/devices/sim-oven/v1/tools/vocab/ops",
        "/devices/sim-oven/v1/tools/registry",
        "/devices/sim-oven/v1/recalls",
        "/devices/sim-oven/v1/conformance",
        "/devices/sim-oven/v1/safety-limits",
        "/devices/sim-oven/v1/capabilities",
    ] {
        let r = call(&app, open_get(path)).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {:?}", r.body);
    }
    let r =
        call(&app, open_post("/devices/sim-oven/v1/tools/hash", None, r#"{"doc":{"a":1}}"#)).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let r = call(
        &app,
        open_post("/devices/sim-oven/v1/incidents", Some("dev-inc-0001"), &report("inc-dev")),
    )
    .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
    let r = call(&app, open_get("/devices/no-such-device/v1/tools/recipes")).await;
    assert_problem(&r, StatusCode::NOT_FOUND);
    assert!(r.str("detail").contains("no-such-device"), "{:?}", r.body);
}

#[tokio::test]
async fn cors_preflights_are_answered_for_the_configured_origins() {
    let origin = "http://localhost:5173";
    let hub = open(HubConfig { cors_origins: vec![origin.to_owned()], ..config() }).await.unwrap();
    let app = app(hub);
    let preflight = Request::options("/v1/executions")
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "authorization,content-type,idempotency-key")
        .body(Body::empty())
        .unwrap();
    let r = call(&app, preflight).await;
    assert!(r.status.is_success(), "{}", r.status);
    assert_eq!(r.headers.get("access-control-allow-origin").unwrap(), origin);
    let allowed = r.headers.get("access-control-allow-headers").unwrap().to_str().unwrap();
    for h in ["authorization", "content-type", "idempotency-key", "if-match"] {
        assert!(allowed.contains(h), "{allowed}");
    }
    let mut req = get("/v1/capabilities");
    req.headers_mut().insert("origin", origin.parse().unwrap());
    let r = call(&app, req).await;
    assert_eq!(r.headers.get("access-control-allow-origin").unwrap(), origin);
    let exposed = r.headers.get("access-control-expose-headers").unwrap().to_str().unwrap();
    assert!(exposed.to_ascii_lowercase().contains("etag"), "{exposed}");
    // Another origin gets no grant.
    let mut req = get("/v1/capabilities");
    req.headers_mut().insert("origin", "http://evil.example".parse().unwrap());
    assert!(call(&app, req).await.headers.get("access-control-allow-origin").is_none());
}

fn unix_ms_of(text: &str) -> i64 {
    let t = cookwala::time::parse_timestamp(text).unwrap();
    t.unix_seconds() * 1000
}

#[tokio::test]
async fn document_times_are_wall_clock_at_any_speed() {
    // 200 simulated ms per wall ms; the test moves simulated time itself.
    let hub = open(HubConfig { speed: 200.0, ..config() }).await.unwrap();
    let app = app(hub.clone());
    let before = cookwala_hub::unix_ms();
    let body = request("ex-wall-1", "red-lentil-soup", false);
    call(&app, post("/v1/executions", Some("wall-key-0001"), &body)).await;
    hub.advance(600_000).await.unwrap(); // ten simulated minutes: three wall seconds
    let now = call(&app, get("/v1/executions/ex-wall-1")).await;
    assert_eq!(now.str("state"), "running", "{:?}", now.body);
    let sim_ms = now.body.pointer("/x-sim/simMs").and_then(Value::as_i64).unwrap();
    assert!(sim_ms >= 600_000, "{sim_ms}");
    let updated = unix_ms_of(now.str("updatedAt"));
    assert!(
        updated - before <= 3_000 + 1_000,
        "updatedAt {} is ahead of the wall clock",
        now.str("updatedAt")
    );
    let readings = now.body.pointer("/step/readings").and_then(Value::as_array).unwrap();
    for r in readings {
        let at = unix_ms_of(r.get("at").and_then(Value::as_str).unwrap());
        assert!(at - before <= 4_000, "{r:?}");
    }
    let events = crate::events::outbox(&*hub.storage());
    let last = events.last().unwrap();
    let time = unix_ms_of(last.get("time").and_then(Value::as_str).unwrap());
    assert!(time - before <= 4_000, "{last:?}");
}

#[tokio::test]
async fn the_device_makers_pack_and_the_standards_vocabulary_are_served_as_loaded() {
    let Some(pack_file) =
        test_support::shared("standards/cookwala/profiles/core/safety-limits.default.json")
    else {
        return;
    };
    let Some(vocab) = test_support::shared("standards/cookwala/vocab") else { return };
    let read = |p: &std::path::Path| canonical_json::parse(&std::fs::read(p).unwrap()).unwrap();
    let pack = read(&pack_file);
    let ops = read(&vocab.join("ops.json"));
    let mut catalog = Catalog::builtin();
    catalog.set_pack(&pack_file, pack.clone()).unwrap();
    let hub = open(HubConfig { catalog, vocab_ops: Some(ops.clone()), ..config() }).await.unwrap();
    let app = app(hub);
    let served = call(&app, open_get("/v1/safety-limits")).await;
    assert_eq!(served.body, pack);
    let served = call(&app, open_get("/v1/tools/vocab/ops")).await;
    assert_eq!(served.body, ops);

    // The built-in copy cites the same authority for every number.
    let builtin = cookwala::limits::default_pack();
    let ids = |p: &Value| -> Vec<(String, String)> {
        p.get("limits")
            .and_then(Value::as_array)
            .unwrap()
            .iter()
            .map(|l| {
                let f = |k: &str| l.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
                (f("id"), f("source"))
            })
            .collect()
    };
    assert_eq!(ids(&builtin), ids(&pack));
}

#[tokio::test]
async fn no_builtin_catalog_serves_only_what_was_loaded() {
    let catalog = Catalog::empty();
    assert_eq!(catalog.recipe_names().len(), 0);
    assert_eq!(catalog.device_ids().count(), 0);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("site-hob.json");
    let doc = cookwala_sim::builtin::device("sim-hob-robot").unwrap();
    std::fs::write(&file, canonical_json::to_jcs(&doc).unwrap()).unwrap();
    let mut catalog = Catalog::empty();
    catalog.load_device_dir(dir.path()).unwrap();
    // The same file named again (e.g. `--device FILE` after `--devices DIR`) is that device.
    assert_eq!(catalog.device_from_file(&file), Some("site-hob"));
    let hub = open(HubConfig { catalog, device_id: "site-hob".into(), ..config() }).await.unwrap();
    let r = call(&app(hub), open_get("/v1/tools/recipes")).await;
    assert_eq!(r.body.get("recipes").and_then(Value::as_array).unwrap().len(), 0);
}

/// A clock that always says the same time.
#[derive(Debug)]
struct Fixed(i64);

impl cookwala_hub::Clock for Fixed {
    fn now_ms(&self) -> i64 {
        self.0
    }
}

#[tokio::test]
async fn the_hub_reads_the_time_of_day_from_its_clock() {
    // 2030-01-01T00:00:00Z
    let clock = Arc::new(Fixed(1_893_456_000_000));
    let hub = open(HubConfig { clock, ..config() }).await.unwrap();
    let app = app(hub.clone());
    let body = request("ex-clock-1", "red-lentil-soup", false);
    let r = call(&app, post("/v1/executions", Some("clock-key-0001"), &body)).await;
    assert!(r.str("updatedAt").starts_with("2030-01-01T00:00:00"), "{:?}", r.body);
    let events = crate::events::outbox(&*hub.storage());
    let time = events[0].get("time").and_then(Value::as_str).unwrap();
    assert!(time.starts_with("2030-01-01T00:00:00"), "{time}");
}

/// Issue 22: the open `POST /v1/tools/hash` with an object holding a key outside UTF-8/UTF-16
/// common order at every level, nested to the parser's limit. The writer that rewrote each
/// object after its members doubled the work per level (2^250 here: it would never answer);
/// the hash must also be the one the core computes.
#[tokio::test]
async fn the_hash_tool_is_linear_at_the_depth_limit_with_high_keys_at_every_level() {
    let hub = open(HubConfig { max_body: 1 << 20, ..config() }).await.unwrap();
    let app = app(hub);
    for (levels, emoji) in [(250, "\u{1F600}"), (250, "\u{E000}"), (125, "\u{FFFD}")] {
        let mut doc = String::from("1");
        for i in 0..levels {
            doc = format!(r#"[{{"k{i}":{doc},"{emoji}":{i}}}]"#);
        }
        let body = format!(r#"{{"doc":{{"d":{doc}}}}}"#);
        let r = call(&app, open_post("/v1/tools/hash", None, &body)).await;
        assert_eq!(r.status, StatusCode::OK, "{levels}: {:?}", r.body);
        let parsed = canonical_json::parse(body.as_bytes()).unwrap();
        let want = canonical_json::digest::document_hash(parsed.get("doc").unwrap()).unwrap();
        assert_eq!(r.str("hash"), want, "{levels}");
    }
}

/// Idempotency records are kept `idempotency_retention_hours`, then pruned: a retry after that
/// is a new request, and a start whose id is stored is a 409 — never a second execution. With
/// 0 they are kept.
#[tokio::test]
async fn old_idempotency_records_are_pruned_and_a_late_retry_creates_nothing() {
    // The hub's clock reads a week and a day after the records' real time.
    let later = cookwala_hub::unix_ms() + 8 * 86_400_000;
    for (hours, pruned) in [(24 * 7, 1), (0, 0)] {
        let clock = Arc::new(Fixed(later));
        let config = HubConfig { clock, idempotency_retention_hours: hours, ..config() };
        let hub = open(config).await.unwrap();
        let app = app(hub.clone());
        let body = request("ex-idem-1", "red-lentil-soup", false);
        let first = call(&app, post("/v1/executions", Some("idem-key-0001"), &body)).await;
        assert_eq!(first.str("state"), "accepted");
        let (_, answers) = hub.prune().await.unwrap();
        assert_eq!(answers, pruned, "retention {hours} h");
        let retry = call(&app, post("/v1/executions", Some("idem-key-0001"), &body)).await;
        if pruned == 1 {
            assert_eq!(retry.status, axum::http::StatusCode::CONFLICT, "{:?}", retry.body);
        } else {
            assert_eq!(retry.headers["idempotent-replayed"], "true");
        }
        assert_eq!(
            hub.storage()
                .events_after(0, 100)
                .unwrap()
                .iter()
                .filter(|e| e.ty == "cookwala.execution.accepted")
                .count(),
            1
        );
    }
}
