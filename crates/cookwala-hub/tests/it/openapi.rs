//! The served API description: our own, and bundled with the published schemas.

use canonical_json::Value;
use cookwala_hub::openapi::{OWN_SPEC, SCHEMA_BASE, bundle, load_schemas};

use crate::support::*;

fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "$ref"
                    && let Some(s) = x.as_str()
                {
                    out.push(s);
                }
                refs(x, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

#[test]
fn own_description_is_json_and_names_every_route_it_serves() {
    let spec = canonical_json::parse(OWN_SPEC.as_bytes()).unwrap();
    let paths = spec.get("paths").and_then(Value::as_object).unwrap();
    for p in [
        "/v1/executions",
        "/v1/executions/{id}",
        "/v1/executions/{id}/stop",
        "/v1/executions/{id}/resume",
        "/v1/executions/{id}/log",
        "/v1/safety-limits",
        "/v1/capabilities",
        "/v1/recalls",
        "/v1/incidents",
        "/v1/devices",
        "/devices/{device}/v1/executions",
        "/devices/{device}/v1/executions/{id}",
        "/devices/{device}/v1/executions/{id}/stop",
        "/devices/{device}/v1/executions/{id}/resume",
        "/devices/{device}/v1/executions/{id}/log",
        "/devices/{device}/v1/safety-limits",
        "/devices/{device}/v1/capabilities",
    ] {
        assert!(paths.contains_key(p), "{p}");
    }
    // An unknown device is a 404 on every device route.
    for (p, item) in paths.iter().filter(|(p, _)| p.starts_with("/devices/{device}/")) {
        for (method, op) in item.as_object().unwrap() {
            assert!(op.pointer("/responses/404").is_some(), "{method} {p}");
        }
    }
    let mut all = Vec::new();
    refs(&spec, &mut all);
    for r in all {
        assert!(r.starts_with('#') || r.starts_with(SCHEMA_BASE), "{r}");
        if let Some(local) = r.strip_prefix('#') {
            assert!(spec.pointer(local).is_some(), "dangling {r}");
        }
    }
}

#[test]
fn bundling_inlines_the_published_schemas() {
    let Some(dir) = test_support::shared("standards/cookwala/schemas") else { return };
    let schemas = load_schemas(&dir).unwrap();
    let spec = canonical_json::parse(OWN_SPEC.as_bytes()).unwrap();
    let bundled = bundle(&spec, &schemas).unwrap();
    assert!(bundled.missing.is_empty(), "{:?}", bundled.missing);
    let mut all = Vec::new();
    refs(&bundled.spec, &mut all);
    assert!(all.len() > 50, "{}", all.len());
    for r in &all {
        let local = r.strip_prefix('#').unwrap_or_else(|| panic!("not local: {r}"));
        assert!(bundled.spec.pointer(local).is_some(), "dangling {r}");
    }
    let components =
        bundled.spec.pointer("/components/schemas").and_then(Value::as_object).unwrap();
    for name in [
        "core.ExecuteRequest",
        "core.ExecutionStatus",
        "core.Recall",
        "capabilities",
        "common.DateTime",
    ] {
        assert!(components.contains_key(name), "{name}");
    }
    // The serving route hands the configured text out unchanged.
    let text = String::from_utf8(canonical_json::to_jcs(&bundled.spec).unwrap()).unwrap();
    let config = cookwala_hub::HubConfig { spec: Some(text.clone()), ..config() };
    let storage = std::sync::Arc::new(cookwala_hub::storage::SqliteStorage::in_memory().unwrap());
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(async {
        let hub = cookwala_hub::Hub::open(storage, config).await.unwrap();
        let app = cookwala_hub::app(hub);
        let res = call(&app, get("/openapi.yaml")).await;
        assert_eq!(res.raw, text.as_bytes());
    });
}
