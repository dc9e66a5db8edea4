//! The tool endpoints, `/v1/conformance`, `/.well-known/cookwala.json` and the index. Every
//! expected answer is computed here with the library, independently of the hub.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use canonical_json::digest::document_hash;
use canonical_json::{Map, Value};
use cookwala::keys::{KeySet, SigningAlg, SigningKey};
use cookwala::signature::{SignedKind, attach, verify_signature};
use cookwala::vocab::Vocabulary;
use cookwala_hub::storage::SqliteStorage;
use cookwala_hub::{Catalog, Hub, HubConfig, HubError, HubKey, app};

use crate::support::*;

const KID: &str = "did:web:test.example#k1";

fn test_key(byte: u8) -> SigningKey {
    SigningKey::from_private_bytes(SigningAlg::EdDsa, &[byte; 32]).unwrap()
}

fn hub_key() -> HubKey {
    HubKey::new("cookwala-hub:test#hub-key", test_key(9), "2025-01-01T00:00:00Z").unwrap()
}

async fn open(config: HubConfig) -> Result<Hub, HubError> {
    Hub::open(Arc::new(SqliteStorage::in_memory().unwrap()), config).await
}

async fn app_with(config: HubConfig) -> Router {
    app(open(config).await.unwrap())
}

async fn default_app() -> Router {
    app_with(config()).await
}

fn json(v: &Value) -> String {
    String::from_utf8(canonical_json::to_jcs(v).unwrap()).unwrap()
}

fn parse(text: &str) -> Value {
    canonical_json::parse(text.as_bytes()).unwrap()
}

fn soup() -> Value {
    cookwala_sim::builtin::recipe("red-lentil-soup").unwrap()
}

async fn tool(app: &Router, name: &str, body: &Value) -> Reply {
    call(app, post(&format!("/v1/tools/{name}"), None, &json(body))).await
}

/// A 4xx problem whose detail names `needle`.
fn assert_problem(r: &Reply, status: StatusCode, needle: &str) {
    assert_eq!(r.status, status, "{:?}", r.body);
    assert_eq!(r.content_type(), "application/problem+json");
    assert!(r.str("detail").contains(needle), "detail lacks {needle:?}: {:?}", r.body);
}

fn open_get(path: &str) -> Request<Body> {
    Request::get(path).body(Body::empty()).unwrap()
}

#[tokio::test]
async fn hash_is_the_document_hash_cookwala_hash_prints() {
    let app = default_app().await;
    let mut doc = soup();
    // `hash` and `signature` are outside the hash, as for `cookwala hash`.
    doc.as_object_mut().unwrap().insert("hash".into(), "sha256:whatever".into());
    let r = tool(&app, "hash", &parse(&format!(r#"{{"doc":{}}}"#, json(&doc)))).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.content_type(), cookwala_hub::COOKWALA_JSON);
    assert_eq!(r.str("hash"), document_hash(&soup()).unwrap());
    assert_eq!(r.str("hash"), recipe_hash("red-lentil-soup"));

    assert_problem(&tool(&app, "hash", &parse("{}")).await, StatusCode::BAD_REQUEST, "doc");
    let big = call(&app, post("/v1/tools/hash", None, r#"{"doc":{"n":18014398509481984}}"#)).await;
    assert_problem(&big, StatusCode::BAD_REQUEST, "canonicalised");
    let not_json = call(&app, post("/v1/tools/hash", None, "{\"doc\":")).await;
    assert_problem(&not_json, StatusCode::BAD_REQUEST, "JSON");
    let array = call(&app, post("/v1/tools/hash", None, "[1]")).await;
    assert_problem(&array, StatusCode::BAD_REQUEST, "object");
}

#[tokio::test]
async fn verify_gives_the_reason_codes_of_cookwala_verify() {
    let app = default_app().await;
    let key = test_key(7);
    let signed = attach(&soup(), &key, KID, "2026-01-01T00:00:00Z", SignedKind::Document).unwrap();
    let record = key.key_record(KID, "2025-01-01T00:00:00Z");
    let keys = KeySet::from_records(vec![record.clone()]);
    let mut tampered = signed.clone();
    tampered.as_object_mut().unwrap().insert("id".into(), "other-soup".into());
    let mut revoked = record.clone();
    revoked.revoked_at = Some("2025-06-01T00:00:00Z".into());
    let revoked = KeySet::from_records(vec![revoked]);
    let cases = [
        (&signed, &keys, "ok"),
        (&tampered, &keys, "bad_signature"),
        (&signed, &KeySet::new(), "unknown_key"),
        (&signed, &revoked, "key_revoked"),
        (&soup(), &keys, "unsigned"),
    ];
    for (doc, keys, want) in cases {
        // The library's verdict, computed here, is the oracle.
        assert_eq!(verify_signature(doc, keys, SignedKind::Document).reason.as_str(), want);
        let mut body = Map::new();
        body.insert("doc".into(), doc.clone());
        body.insert("keys".into(), keys.to_value());
        let r = tool(&app, "verify", &Value::Object(body)).await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        assert_eq!(r.str("reason"), want);
        assert_eq!(r.body.get("ok").and_then(Value::as_bool), Some(want == "ok"));
    }
    // A well-known document works as the key set too.
    let wk = parse(&format!(
        r#"{{"doc":{},"keys":{{"keys":{}}}}}"#,
        json(&signed),
        json(&keys.to_value())
    ));
    assert_eq!(tool(&app, "verify", &wk).await.str("reason"), "ok");

    let bad_keys = parse(&format!(r#"{{"doc":{},"keys":"nope"}}"#, json(&signed)));
    assert_problem(&tool(&app, "verify", &bad_keys).await, StatusCode::BAD_REQUEST, "keys");
    let bad_record = parse(&format!(r#"{{"doc":{},"keys":[{{"kid":"x"}}]}}"#, json(&signed)));
    assert_problem(&tool(&app, "verify", &bad_record).await, StatusCode::BAD_REQUEST, "keys");
    let bad_kind = parse(&format!(r#"{{"doc":{},"keys":[],"kind":"memo"}}"#, json(&signed)));
    assert_problem(&tool(&app, "verify", &bad_kind).await, StatusCode::BAD_REQUEST, "kind");
    assert_problem(&tool(&app, "verify", &parse("{}")).await, StatusCode::BAD_REQUEST, "doc");
}

#[tokio::test]
async fn verify_without_keys_uses_the_keys_the_hub_publishes() {
    let app = app_with(HubConfig { key: Some(hub_key()), ..config() }).await;
    let k = hub_key();
    let signed =
        attach(&soup(), k.signing_key(), k.kid(), "2026-01-01T00:00:00Z", SignedKind::Document)
            .unwrap();
    let r = tool(&app, "verify", &parse(&format!(r#"{{"doc":{}}}"#, json(&signed)))).await;
    assert_eq!(r.str("reason"), "ok", "{:?}", r.body);
    // Signed before the hub key's validFrom.
    let early =
        attach(&soup(), k.signing_key(), k.kid(), "2024-01-01T00:00:00Z", SignedKind::Document)
            .unwrap();
    let r = tool(&app, "verify", &parse(&format!(r#"{{"doc":{}}}"#, json(&early)))).await;
    assert_eq!(r.str("reason"), "key_not_valid_at_signing_time", "{:?}", r.body);
}

fn local_dry_run(recipe: &Value, device: &Value, human: bool) -> Value {
    let limits = cookwala::limits::default_pack();
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let now = cookwala::time::Instant::from_unix(secs.as_secs() as i64, 0).unwrap();
    let options = cookwala::dryrun::Options {
        human_present: human,
        allow_model: true,
        limits: Some(&limits),
        now,
    };
    cookwala::dryrun::dry_run(Vocabulary::builtin(), recipe, device, options).unwrap().to_value()
}

#[tokio::test]
async fn dryrun_takes_the_sdk_shape_with_ids_or_documents() {
    let app = default_app().await;
    let device = cookwala_sim::builtin::device("sim-hob-robot").unwrap();
    for human in [false, true] {
        let want = local_dry_run(&soup(), &device, human);
        let by_id = parse(&format!(
            r#"{{"recipeId":"red-lentil-soup","deviceId":"sim-hob-robot","humanPresent":{human},"allowModel":true}}"#
        ));
        let r = tool(&app, "dryrun", &by_id).await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        assert_eq!(r.body, want, "by id, human={human}");
        let mut by_doc = Map::new();
        by_doc.insert("recipe".into(), soup());
        by_doc.insert("device".into(), device.clone());
        by_doc.insert("humanPresent".into(), human.into());
        assert_eq!(tool(&app, "dryrun", &Value::Object(by_doc)).await.body, want, "by document");
    }
    // The SDK sends `deviceId: null` when it has no device: the served device.
    let r = tool(&app, "dryrun", &parse(r#"{"recipeId":"red-lentil-soup","deviceId":null}"#)).await;
    assert_eq!(r.body, local_dry_run(&soup(), &device, false));
    assert!(matches!(r.str("state"), "accepted" | "refused"));

    let both = parse(r#"{"recipe":"red-lentil-soup","recipeId":"red-lentil-soup"}"#);
    assert_problem(&tool(&app, "dryrun", &both).await, StatusCode::BAD_REQUEST, "not both");
    let unknown = parse(r#"{"recipeId":"no-such-dish"}"#);
    assert_problem(&tool(&app, "dryrun", &unknown).await, StatusCode::BAD_REQUEST, "recipeId");
    let unknown_dev = parse(r#"{"recipeId":"red-lentil-soup","deviceId":"toaster"}"#);
    assert_problem(&tool(&app, "dryrun", &unknown_dev).await, StatusCode::BAD_REQUEST, "deviceId");
    let typed = parse(r#"{"recipeId":"red-lentil-soup","humanPresent":"yes"}"#);
    assert_problem(&tool(&app, "dryrun", &typed).await, StatusCode::BAD_REQUEST, "humanPresent");
    let number = parse(r#"{"recipeId":5}"#);
    assert_problem(&tool(&app, "dryrun", &number).await, StatusCode::BAD_REQUEST, "recipeId");
    assert_problem(&tool(&app, "dryrun", &parse("{}")).await, StatusCode::BAD_REQUEST, "recipe");
}

#[tokio::test]
async fn envelope_judges_a_trace() {
    let app = default_app().await;
    let vocab = Vocabulary::builtin();
    let cases = [
        ("cw.op.simmer", vec![40.0, 70.0, 88.0, 90.0, 91.0], Some((90.0, 2.0)), 0.0),
        ("cw.op.simmer", vec![40.0, 88.0, 99.5], None, 0.0),
        ("cw.op.boil", vec![60.0, 90.0, 95.0], None, 1500.0),
        ("cw.op.mix", vec![20.0], None, 0.0),
    ];
    let mut reasons = BTreeSet::new();
    for (op, temps, target, altitude) in cases {
        let want = cookwala::envelope::check_envelope(
            vocab,
            op,
            &temps,
            target.map(|(value, tolerance)| cookwala::envelope::Target { value, tolerance }),
            altitude,
        )
        .unwrap()
        .to_value();
        reasons.insert(want.get("reason").and_then(Value::as_str).unwrap().to_owned());
        let trace: Vec<String> =
            temps.iter().enumerate().map(|(t, c)| format!(r#"{{"t":{t},"tempC":{c}}}"#)).collect();
        let target = target.map_or(String::new(), |(v, tol)| {
            format!(r#","target":{{"value":{v},"tolerance":{tol}}}"#)
        });
        let body = format!(
            r#"{{"op":"{op}","trace":[{}]{target},"altitudeM":{altitude}}}"#,
            trace.join(",")
        );
        let r = tool(&app, "envelope", &parse(&body)).await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        assert_eq!(r.body, want, "{body}");
    }
    // The cases cover several verdicts, not one.
    assert!(reasons.len() >= 3, "{reasons:?}");

    let bad = [
        (r#"{"trace":[]}"#, "op"),
        (r#"{"op":"cw.op.simmer"}"#, "trace"),
        (r#"{"op":"cw.op.simmer","trace":{}}"#, "trace"),
        (r#"{"op":"cw.op.simmer","trace":[{"t":0,"tempC":"hot"}]}"#, "trace/0/tempC"),
        (r#"{"op":"cw.op.simmer","trace":[],"target":{"tolerance":1}}"#, "target.value"),
        (r#"{"op":"cw.op.simmer","trace":[],"altitudeM":"high"}"#, "altitudeM"),
        (r#"{"op":"cw.op.levitate","trace":[]}"#, "op"),
    ];
    for (body, needle) in bad {
        assert_problem(
            &tool(&app, "envelope", &parse(body)).await,
            StatusCode::BAD_REQUEST,
            needle,
        );
    }
}

#[tokio::test]
async fn convert_and_its_refusals() {
    let app = default_app().await;
    let vocab = Vocabulary::builtin();
    for (value, unit, to, density) in [(2.0, "tbsp", "ml", None), (1.0, "cup", "g", Some(0.53))] {
        let want = cookwala::units::round6(
            cookwala::units::convert(vocab, value, unit, to, density).unwrap(),
        );
        let density = density.map_or(String::new(), |d| format!(r#","densityGPerMl":{d}"#));
        let body = format!(r#"{{"value":{value},"unit":"{unit}","to":"{to}"{density}}}"#);
        let r = tool(&app, "convert", &parse(&body)).await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        assert_eq!(r.body.get("value").and_then(Value::as_f64), Some(want));
        assert_eq!(r.str("unit"), to);
    }
    let needs = tool(&app, "convert", &parse(r#"{"value":1,"unit":"cup","to":"g"}"#)).await;
    assert_problem(&needs, StatusCode::BAD_REQUEST, "needs_density");
    let bad = [
        (r#"{"value":"1","unit":"cup","to":"ml"}"#, "value"),
        (r#"{"value":1,"to":"ml"}"#, "unit"),
        (r#"{"value":1,"unit":"cup","to":7}"#, "to"),
        (r#"{"value":1,"unit":"cup","to":"g","densityGPerMl":true}"#, "densityGPerMl"),
        (r#"{"value":1,"unit":"cup","to":"g","densityGPerMl":-1}"#, "bad_number"),
    ];
    for (body, needle) in bad {
        assert_problem(&tool(&app, "convert", &parse(body)).await, StatusCode::BAD_REQUEST, needle);
    }
}

#[tokio::test]
async fn ladder_picks_the_rung_the_library_picks() {
    let app = default_app().await;
    let vocab = Vocabulary::builtin();
    let cases: [(&str, &[&str], bool, bool); 5] = [
        ("cw.op.simmer", &["cw.sense.liquid_temp"], true, false),
        ("cw.op.simmer", &[], false, false),
        ("cw.op.deep_fry", &[], true, true),
        ("cw.op.cut", &[], true, true),
        ("cw.op.unknown", &[], true, false),
    ];
    let mut seen = BTreeSet::new();
    for (op, sensors, allow_model, human) in cases {
        let set: BTreeSet<String> = sensors.iter().map(|s| (*s).to_owned()).collect();
        let want = cookwala::envelope::ladder_choice(vocab, op, &set, allow_model, human)
            .map_or(Value::Null, Value::from);
        seen.insert(json(&want));
        let sensors: Vec<String> = sensors.iter().map(|s| format!("\"{s}\"")).collect();
        let body = format!(
            r#"{{"op":"{op}","sensors":[{}],"allowModel":{allow_model},"humanPresent":{human}}}"#,
            sensors.join(",")
        );
        let r = tool(&app, "ladder", &parse(&body)).await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        assert_eq!(r.body, want, "{body}");
    }
    // Deep frying without an oil thermometer has no rung: null.
    assert!(seen.contains("null"), "{seen:?}");
    assert!(seen.len() >= 3, "{seen:?}");
    let bad = [(r#"{"sensors":[]}"#, "op"), (r#"{"op":"cw.op.boil","sensors":"x"}"#, "sensors")];
    for (body, needle) in bad {
        assert_problem(&tool(&app, "ladder", &parse(body)).await, StatusCode::BAD_REQUEST, needle);
    }
}

#[tokio::test]
async fn validate_maps_upstream_schema_names_to_our_kinds() {
    let app = default_app().await;
    let ok =
        tool(&app, "validate", &parse(&format!(r#"{{"kind":"recipe","doc":{}}}"#, json(&soup()))))
            .await;
    assert_eq!(ok.status, StatusCode::OK, "{:?}", ok.body);
    assert_eq!(ok.body.get("ok").and_then(Value::as_bool), Some(true), "{:?}", ok.body);
    assert_eq!(ok.str("kind"), "Recipe");

    let mut broken = soup();
    broken.as_object_mut().unwrap().remove("dish");
    let want = cookwala::documents::validate(&broken, Some("Recipe"), Vocabulary::builtin());
    assert!(!want.is_valid());
    let r =
        tool(&app, "validate", &parse(&format!(r#"{{"kind":"recipe","doc":{}}}"#, json(&broken))))
            .await;
    assert_eq!(r.body.get("ok").and_then(Value::as_bool), Some(false));
    let errors = r.body.get("errors").and_then(Value::as_array).unwrap();
    assert_eq!(errors.len(), want.errors.len());
    assert!(errors.iter().any(|e| e.as_str().unwrap().contains("dish")), "{errors:?}");

    // `core` holds several kinds: the document's own kind picks one.
    let request = parse(&request("ex-validate-1", "red-lentil-soup", false));
    let r =
        tool(&app, "validate", &parse(&format!(r#"{{"kind":"core","doc":{}}}"#, json(&request))))
            .await;
    assert_eq!(r.str("kind"), "ExecuteRequest", "{:?}", r.body);
    assert_eq!(r.body.get("ok").and_then(Value::as_bool), Some(true), "{:?}", r.body);
    // Our own kind names work too.
    let r = tool(
        &app,
        "validate",
        &parse(&format!(r#"{{"kind":"Capabilities","doc":{}}}"#, json(&soup()))),
    )
    .await;
    assert_eq!(r.body.get("ok").and_then(Value::as_bool), Some(false));

    let unnamed = tool(&app, "validate", &parse(r#"{"kind":"core","doc":{"a":1}}"#)).await;
    assert_problem(&unnamed, StatusCode::BAD_REQUEST, "ExecuteRequest");
    let unknown = tool(&app, "validate", &parse(r#"{"kind":"humanitarian","doc":{}}"#)).await;
    assert_problem(&unknown, StatusCode::BAD_REQUEST, "recipe, capabilities, core");
    assert_problem(
        &tool(&app, "validate", &parse(r#"{"kind":"recipe"}"#)).await,
        StatusCode::BAD_REQUEST,
        "doc",
    );
    assert_problem(
        &tool(&app, "validate", &parse(r#"{"kind":1,"doc":{}}"#)).await,
        StatusCode::BAD_REQUEST,
        "kind",
    );
}

#[tokio::test]
async fn unknown_tools_are_404_and_tools_are_open() {
    let app = default_app().await;
    assert_problem(
        &tool(&app, "frobnicate", &parse("{}")).await,
        StatusCode::NOT_FOUND,
        "frobnicate",
    );
    // The tools change nothing: they answer without a token, like capabilities.
    let doc = r#"{"doc":{"a":1}}"#;
    let req = Request::post("/v1/tools/hash").body(Body::from(doc)).unwrap();
    let r = call(&app, req).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert!(r.str("hash").starts_with("sha256:"));
    let req = Request::post("/v1/tools/frobnicate").body(Body::from("{}")).unwrap();
    assert_eq!(call(&app, req).await.status, StatusCode::NOT_FOUND);
    for path in [
        "/v1/tools/devices",
        "/v1/tools/vocab/ops",
        "/v1/tools/registry",
        "/v1/tools/recipes",
        "/v1/tools/recipes/red-lentil-soup",
    ] {
        assert_eq!(call(&app, open_get(path)).await.status, StatusCode::OK, "{path}");
    }
}

#[tokio::test]
async fn devices_vocabulary_and_registry_shapes() {
    let app = default_app().await;
    let catalog = Catalog::builtin();

    let r = call(&app, get("/v1/tools/devices")).await;
    let devices = r.body.get("devices").and_then(Value::as_object).unwrap();
    let ids: Vec<&str> = catalog.device_ids().collect();
    assert_eq!(devices.keys().map(String::as_str).collect::<Vec<_>>(), ids);
    for id in ids {
        assert_eq!(devices.get(id), catalog.device(id), "{id}");
    }

    // The served vocabulary reads back into exactly the hub's vocabulary.
    let r = call(&app, get("/v1/tools/vocab/ops")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.str("name"), "ops");
    let reread = Vocabulary::from_json(&r.body, &parse(r#"{"entries":[]}"#)).unwrap();
    let builtin = Vocabulary::builtin();
    assert_eq!(reread.op_count(), builtin.op_count());
    assert!(builtin.op_count() >= 50);
    for op in builtin.ops() {
        assert_eq!(reread.op(&op.id), Some(op), "{}", op.id);
    }

    let r = call(&app, get("/v1/tools/registry")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.str("note").starts_with("Pointers only"), "{:?}", r.body);
    assert_eq!(r.str("registry"), "local.cookwala-hub");
    let entries = r.body.get("entries").and_then(Value::as_array).unwrap();
    // Every entry has an RFC-0002 name and, when it has a version, an exact one.
    for e in entries {
        let name = e.get("name").and_then(Value::as_str).unwrap();
        assert_eq!(cookwala::registry::check_name(name), Ok(()), "{name}");
        if let Some(v) = e.get("version").and_then(Value::as_str) {
            assert_eq!(cookwala::registry::check_version(v), Ok(()), "{name} {v}");
        }
    }
    let of = |kind: &str| -> Vec<&Value> {
        entries.iter().filter(|e| e.get("kind").and_then(Value::as_str) == Some(kind)).collect()
    };
    let recipes = of("recipe");
    assert_eq!(recipes.len(), catalog.recipe_ids().count());
    for e in recipes {
        let id = e.get("id").and_then(Value::as_str).unwrap();
        let name = e.get("name").and_then(Value::as_str).unwrap();
        assert_eq!(name, format!("local.cookwala-hub/{id}"));
        let want = document_hash(catalog.recipe(id).unwrap()).unwrap();
        assert_eq!(e.get("hash").and_then(Value::as_str), Some(want.as_str()), "{id}");
        assert_eq!(
            e.get("url").and_then(Value::as_str),
            Some(format!("/v1/tools/recipes/{id}").as_str())
        );
    }
    let served: Vec<&Value> =
        of("capabilities").into_iter().filter(|e| e.get("served").is_some()).collect();
    assert_eq!(served.len(), 1);
    assert_eq!(
        served[0].get("id").and_then(Value::as_str),
        Some(cookwala_sim::builtin::DEFAULT_DEVICE)
    );
    assert_eq!(of("safety_limits").len(), 1);
}

#[tokio::test]
async fn index_is_open_and_lists_the_tools() {
    let app = default_app().await;
    for path in ["/", "/v1"] {
        let r = call(&app, open_get(path)).await;
        assert_eq!(r.status, StatusCode::OK, "{path}");
        assert_eq!(r.str("core"), "0.2.0");
        assert_eq!(r.str("device"), cookwala_sim::builtin::DEFAULT_DEVICE);
        let tools = r.body.get("tools").and_then(Value::as_array).unwrap();
        assert!(tools.iter().any(|t| t.as_str() == Some("dryrun")));
        assert!(tools.iter().any(|t| t.as_str() == Some("sms")));
        assert!(tools.iter().any(|t| t.as_str() == Some("constraints")));
        assert!(tools.iter().any(|t| t.as_str() == Some("humanitarian")));
    }
}

#[tokio::test]
async fn well_known_publishes_the_hub_key_then_the_trusted_ones() {
    let trusted = KeySet::from_records(vec![test_key(3).key_record(KID, "2025-01-01T00:00:00Z")]);
    let app =
        app_with(HubConfig { key: Some(hub_key()), trusted_keys: trusted.clone(), ..config() })
            .await;
    let r = call(&app, open_get("/.well-known/cookwala.json")).await;
    assert_eq!(r.status, StatusCode::OK);
    // What `cookwala verify --keys FILE` does with the file.
    let keys = KeySet::from_value(&r.body).unwrap();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys.records()[0], hub_key().record());
    assert_eq!(keys.records()[0].public_key, test_key(9).public_key());
    assert_eq!(&keys.records()[1], &trusted.records()[0]);

    let bare = default_app().await;
    let r = call(&bare, open_get("/.well-known/cookwala.json")).await;
    assert!(KeySet::from_value(&r.body).unwrap().is_empty());
}

#[test]
fn the_hub_key_file_is_created_once_private_and_readable_by_cookwala_sign() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub-key.json");
    let (first, created) = HubKey::load_or_create(&path, || test_key(5)).unwrap();
    assert!(created);
    assert!(first.kid().starts_with("cookwala-hub:") && first.kid().ends_with("#hub-key"));
    assert!(cookwala::time::is_timestamp(first.valid_from()));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let (again, created) =
        HubKey::load_or_create(&path, || panic!("an existing key is never replaced")).unwrap();
    assert!(!created);
    assert_eq!(again.record(), first.record());
    // The file is a `cookwala keygen` key file (usable with `cookwala sign --key`).
    let (kid, key) = SigningKey::from_key_file(&parse(&test_support::read(&path))).unwrap();
    assert_eq!((kid.as_str(), key.public_key()), (first.kid(), test_key(5).public_key()));

    std::fs::write(&path, "{\"kid\":").unwrap();
    let e = HubKey::load_or_create(&path, || test_key(5)).unwrap_err();
    assert_eq!(e.file, path);
    assert!(e.why.contains("JSON"), "{e}");
}

/// Every vector file of `dir` (Core, then `profiles/` sorted), read here.
fn all_files(dir: &Path) -> Vec<(String, Value)> {
    let mut files = core_files(dir);
    let mut stems: Vec<String> = std::fs::read_dir(dir.join("profiles"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| p.file_stem().unwrap().to_str().unwrap().to_owned())
        .collect();
    stems.sort();
    for stem in stems {
        let path = dir.join(format!("profiles/{stem}.json"));
        files.push((format!("profiles/{stem}"), parse(&test_support::read(&path))));
    }
    files
}

/// The Core vector files of `dir`, read here (the oracle for `vectorsHash`).
fn core_files(dir: &Path) -> Vec<(String, Value)> {
    cookwala::conformance::CORE_SUITES
        .iter()
        .map(|s| ((*s).to_owned(), parse(&test_support::read(&dir.join(format!("{s}.json"))))))
        .collect()
}

#[tokio::test]
async fn conformance_report_is_run_at_start_signed_and_verifiable() {
    let Some(vectors) = test_support::shared("standards/cookwala/conformance") else { return };
    let app = app_with(HubConfig {
        key: Some(hub_key()),
        conformance: Some(vectors.clone()),
        ..config()
    })
    .await;
    let r = call(&app, open_get("/v1/conformance")).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(
        r.body.get("claims"),
        Some(&parse(r#"["executor","household","registry","supply"]"#)),
        "{:?}",
        r.body
    );
    assert_eq!(
        r.body.get("profiles"),
        Some(&parse(
            r#"["certifications","disclosure_policy","federation","registry","sensor_trust","signal","sms"]"#
        )),
        "{:?}",
        r.body
    );
    let report = r.body.get("report").unwrap();
    assert_eq!(report.get("kind").and_then(Value::as_str), Some("ConformanceReport"));
    assert_eq!(report.get("claim").and_then(Value::as_str), Some("executor"));
    let suites = report.get("suites").and_then(Value::as_array).unwrap();
    let names: Vec<&str> =
        suites.iter().map(|s| s.get("suite").and_then(Value::as_str).unwrap()).collect();
    assert_eq!(names[..8], cookwala::conformance::CORE_SUITES);
    assert_eq!(names.len(), 15, "{names:?}");
    for (s, (_, file)) in suites.iter().zip(all_files(&vectors)) {
        let total = file.as_array().unwrap().len() as i64;
        assert!(total > 0);
        assert_eq!(s.get("total").and_then(Value::as_i64), Some(total), "{s:?}");
        assert_eq!(s.get("passed").and_then(Value::as_i64), Some(total), "{s:?}");
        assert!(s.get("failed").is_none());
    }
    // Every suite of the folder ran, so vectorsHash is the published hash itself.
    let used = cookwala::conformance::vectors_hash(&all_files(&vectors)).unwrap();
    assert_eq!(report.get("vectorsHash").and_then(Value::as_str), Some(used.as_str()));
    let published = test_support::read(&vectors.join("VECTORS-HASH.txt"));
    assert_eq!(used, published.trim());
    assert!(report.get("notes").and_then(Value::as_str).unwrap().contains(published.trim()));
    assert_eq!(
        report.get("hash").and_then(Value::as_str),
        Some(document_hash(report).unwrap().as_str())
    );

    // Verified with the keys the hub publishes, as `cookwala verify --keys` would.
    let wk = call(&app, open_get("/.well-known/cookwala.json")).await;
    let keys = KeySet::from_value(&wk.body).unwrap();
    assert_eq!(verify_signature(report, &keys, SignedKind::Document).reason.as_str(), "ok");
    // And as `cookwala conformance run --verify-report` checks it: hash, signature,
    // vectorsHash against the published one, counts.
    let check = cookwala::conformance::verify_report(
        report,
        &keys,
        &all_files(&vectors),
        Some(published.trim()),
    );
    assert!(check.is_ok(), "{:?}", check.problems);
    let mut forged = report.clone();
    forged.as_object_mut().unwrap().insert("claim".into(), "verifier".into());
    assert_eq!(
        verify_signature(&forged, &keys, SignedKind::Document).reason.as_str(),
        "bad_signature"
    );
}

#[tokio::test]
async fn without_vectors_or_key_there_is_no_report() {
    let app = default_app().await;
    let r = call(&app, open_get("/v1/conformance")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body.get("report"), Some(&Value::Null));
    assert_eq!(r.body.get("claims"), Some(&parse(r#"["executor"]"#)));
    assert!(r.str("note").contains("--conformance"), "{:?}", r.body);

    let dir = tempfile::tempdir().unwrap();
    let app = app_with(HubConfig { conformance: Some(dir.path().to_owned()), ..config() }).await;
    let r = call(&app, open_get("/v1/conformance")).await;
    assert_eq!(r.body.get("report"), Some(&Value::Null));
    assert!(r.str("note").contains("signing key"), "{:?}", r.body);
}

fn copy_core(from: &Path, to: &Path) {
    for s in cookwala::conformance::CORE_SUITES {
        std::fs::copy(from.join(format!("{s}.json")), to.join(format!("{s}.json"))).unwrap();
    }
}

#[tokio::test]
async fn a_broken_vector_folder_stops_the_hub_or_loses_the_claim() {
    let with = |dir: &Path| HubConfig {
        key: Some(hub_key()),
        conformance: Some(dir.to_owned()),
        ..config()
    };
    let empty = tempfile::tempdir().unwrap();
    let e = open(with(empty.path())).await.unwrap_err();
    assert!(matches!(e, HubError::Conformance(_)), "{e}");
    assert!(e.to_string().contains("hash.json"), "{e}");

    let Some(vectors) = test_support::shared("standards/cookwala/conformance") else { return };
    // A changed expected value no longer matches the published VECTORS-HASH.txt: no start.
    let changed = tempfile::tempdir().unwrap();
    copy_core(&vectors, changed.path());
    std::fs::copy(vectors.join("VECTORS-HASH.txt"), changed.path().join("VECTORS-HASH.txt"))
        .unwrap();
    let units = changed.path().join("units.json");
    let Value::Array(mut items) = parse(&test_support::read(&units)) else { panic!("units.json") };
    let first = items[0].as_object_mut().unwrap();
    first.insert("expected".into(), parse(r#"{"value":-1}"#));
    let id = first.get("id").and_then(Value::as_str).unwrap().to_owned();
    std::fs::write(&units, json(&Value::Array(items))).unwrap();
    let e = open(with(changed.path())).await.unwrap_err();
    assert!(e.to_string().contains("VECTORS-HASH.txt"), "{e}");

    // Without a published hash the hub starts, reports the failure and claims nothing.
    std::fs::remove_file(changed.path().join("VECTORS-HASH.txt")).unwrap();
    let app = app(open(with(changed.path())).await.unwrap());
    let r = call(&app, open_get("/v1/conformance")).await;
    assert_eq!(r.body.get("claims"), Some(&parse("[]")), "{:?}", r.body);
    let units_suite = r.body.pointer("/report/suites/4").unwrap();
    assert_eq!(units_suite.get("suite").and_then(Value::as_str), Some("units"));
    assert_eq!(units_suite.get("failed"), Some(&Value::Array(vec![id.as_str().into()])));
}

/// Every expected dry run of the upstream sample bundle, through `/v1/tools/dryrun` with the
/// SDK's `{recipeId, deviceId}` shape on a hub that loaded the bundle.
#[tokio::test]
async fn dryrun_reproduces_the_sample_bundle_expectations() {
    let Some(path) = test_support::samples_bundle() else { return };
    let bundle = parse(&test_support::read(&path));
    let mut catalog = Catalog::builtin();
    catalog.load_bundle(&path).unwrap();
    let app = app_with(HubConfig { catalog, ..config() }).await;
    let expected = bundle.pointer("/expected/dryRuns").and_then(Value::as_array).unwrap();
    assert_eq!(expected.len(), 32);
    for case in expected {
        let s = |k: &str| case.get(k).and_then(Value::as_str).unwrap();
        let human = case.get("humanPresent").and_then(Value::as_bool).unwrap();
        let body = format!(
            r#"{{"recipeId":"{}","deviceId":"{}","humanPresent":{human},"allowModel":true}}"#,
            s("recipe"),
            s("device")
        );
        let r = tool(&app, "dryrun", &parse(&body)).await;
        assert_eq!(r.status, StatusCode::OK, "{body}: {:?}", r.body);
        assert_eq!(r.str("state"), s("state"), "{body}");
        assert_eq!(
            r.body.pointer("/refusal/reason"),
            case.get("reason").filter(|v| !v.is_null()),
            "{body}"
        );
        assert_eq!(
            r.body.pointer("/refusal/node"),
            case.get("node").filter(|v| !v.is_null()),
            "{body}"
        );
        let plan: Vec<Value> = r
            .body
            .get("plan")
            .and_then(Value::as_array)
            .unwrap()
            .iter()
            .map(|row| {
                Value::Array(
                    ["node", "by", "verifiedBy"]
                        .iter()
                        .map(|k| row.get(k).cloned().unwrap())
                        .collect(),
                )
            })
            .collect();
        assert_eq!(Some(&Value::Array(plan)), case.get("plan"), "{body}");
    }
}

/// The profile vectors of `stem`, or `None` (with a notice) outside CI.
fn profile_vectors(stem: &str) -> Option<Vec<Value>> {
    let dir = test_support::shared("standards/cookwala/conformance/profiles")?;
    let file = parse(&test_support::read(&dir.join(format!("{stem}.json"))));
    Some(file.as_array().unwrap().to_vec())
}

#[tokio::test]
async fn sms_answers_every_vector_with_findings_when_parsed() {
    let Some(vectors) = profile_vectors("sms") else { return };
    let app = default_app().await;
    for v in &vectors {
        let id = v.get("id").and_then(Value::as_str).unwrap();
        let r = tool(&app, "sms", v.get("input").unwrap()).await;
        assert_eq!(r.status, StatusCode::OK, "{id}: {:?}", r.body);
        let expected = v.get("expected").unwrap();
        let ok = expected.get("ok").and_then(Value::as_bool).unwrap();
        // The profile's answer, plus findings[] on a parsed message (the SDKs' shape).
        let mut got = r.body.clone();
        let findings = got.as_object_mut().unwrap().remove("findings");
        assert_eq!(findings.is_some(), ok, "{id}");
        assert!(got.loose_eq(expected), "{id}: {got:?}");
    }
    let r = tool(&app, "sms", &parse(r#"{"text":"OFFER 18KG COOKED RICE TRAYS H T52C"}"#)).await;
    assert_eq!(r.body.get("findings"), Some(&parse(r#"["safety.hot_hold_min"]"#)));
    assert_problem(
        &tool(&app, "sms", &parse(r#"{"text":5}"#)).await,
        StatusCode::BAD_REQUEST,
        "text",
    );
    assert_problem(&tool(&app, "sms", &parse("{}")).await, StatusCode::BAD_REQUEST, "text");
}

#[tokio::test]
async fn constraints_answer_every_disclosure_policy_vector() {
    let Some(vectors) = profile_vectors("disclosure_policy") else { return };
    let app = default_app().await;
    for v in &vectors {
        let id = v.get("id").and_then(Value::as_str).unwrap();
        let input = v.get("input").unwrap();
        // The SDKs send {facets, role, consents?}.
        let mut body = Map::new();
        body.insert("facets".into(), input.get("facets").unwrap().clone());
        body.insert("role".into(), input.get("recipientRole").unwrap().clone());
        if let Some(c) = input.get("consents") {
            body.insert("consents".into(), c.clone());
        }
        let r = tool(&app, "constraints", &Value::Object(body)).await;
        assert_eq!(r.status, StatusCode::OK, "{id}: {:?}", r.body);
        assert!(r.body.loose_eq(v.get("expected").unwrap()), "{id}: {:?}", r.body);
    }
    let bad = [
        (r#"{"role":"grocer"}"#, "facets"),
        (r#"{"facets":{},"role":"grocer"}"#, "facets"),
        (r#"{"facets":[1],"role":"grocer"}"#, "facets/0"),
        (r#"{"facets":[]}"#, "role"),
        (r#"{"facets":[],"role":"landlord"}"#, "landlord"),
        (r#"{"facets":[],"role":"grocer","consents":[{"scope":{}}]}"#, "consents/0"),
    ];
    for (body, needle) in bad {
        assert_problem(
            &tool(&app, "constraints", &parse(body)).await,
            StatusCode::BAD_REQUEST,
            needle,
        );
    }
}

#[tokio::test]
async fn humanitarian_checks_documents_against_the_rule_pack() {
    let app = default_app().await;
    let body = parse(
        r#"{"docs":[
            {"kind":"Offer","id":"of-1","at":"2026-11-05T10:00:00Z",
             "items":[{"lineId":"1","storage":"chilled"},{"lineId":"2","storage":"hot_held"}],
             "readings":[{"lineId":"1","tempC":4},{"lineId":"2","tempC":52}]},
            {"kind":"Distribution","id":"d-1","menu":{"perPersonDay":{"energyKcal":2300,"sodiumMg":2600}}}
        ]}"#,
    );
    let r = tool(&app, "humanitarian", &body).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(
        r.body,
        parse(
            r#"{"results":[
            {"id":"of-1","kind":"Offer","findings":[{"rule":"safety.hot_hold_min","severity":"block","detail":"line 2: 52 °C"}]},
            {"id":"d-1","kind":"Distribution","findings":[{"rule":"nutrition.sodium_per_day","severity":"warn","detail":"perPersonDay: 2600 mg"}]}
        ]}"#
        )
    );
    let bad = [
        (r#"{}"#, "docs"),
        (r#"{"docs":[1]}"#, "docs/0"),
        (r#"{"docs":[],"packs":["sphere-full"]}"#, "sphere-full"),
        (r#"{"docs":[{"items":[{"lineId":"1","storage":"chilled"}]}]}"#, "docs/0"),
    ];
    for (body, needle) in bad {
        assert_problem(
            &tool(&app, "humanitarian", &parse(body)).await,
            StatusCode::BAD_REQUEST,
            needle,
        );
    }
}
