//! The catalog: built-ins plus a samples-style bundle, folders and device files; malformed
//! files are refused with an error naming them; loaded documents are served and cooked.

use std::path::Path;

use axum::http::StatusCode;
use canonical_json::{Map, Value};
use cookwala_hub::storage::{SqliteStorage, Storage};
use cookwala_hub::{Catalog, Hub, HubConfig, app};

use crate::support::*;

/// A built-in document with another id (recipes) under a new key.
fn renamed_recipe(builtin: &str, id: &str) -> Value {
    let mut doc = cookwala_sim::builtin::recipe(builtin).unwrap();
    doc.as_object_mut().unwrap().insert("id".into(), id.into());
    doc
}

fn write(path: &Path, v: &Value) {
    std::fs::write(path, canonical_json::to_jcs(v).unwrap()).unwrap();
}

fn bundle() -> Value {
    let mut recipes = Map::new();
    recipes.insert("soup".into(), renamed_recipe("red-lentil-soup", "bundle-soup"));
    let mut devices = Map::new();
    devices.insert("bundle-hob".into(), cookwala_sim::builtin::device("sim-hob-robot").unwrap());
    let mut m = Map::new();
    m.insert("recipes".into(), Value::Object(recipes));
    m.insert("devices".into(), Value::Object(devices));
    Value::Object(m)
}

#[test]
fn loads_bundles_folders_and_device_files() {
    let dir = tempfile::tempdir().unwrap();
    let b = dir.path().join("bundle.json");
    write(&b, &bundle());
    let mut c = Catalog::builtin();
    let (r, d) = c.load_bundle(&b).unwrap();
    assert_eq!((r, d), (vec!["bundle-soup".to_owned()], vec!["bundle-hob".to_owned()]));
    // By id, bundle key and global reference.
    for key in ["bundle-soup", "soup", "cw:example.org:bundle-soup"] {
        assert_eq!(c.recipe_id(key), Some("bundle-soup"), "{key}");
    }
    assert!(c.device("bundle-hob").is_some());
    assert_eq!(c.device_id("cookwala-rs:sim-oven"), Some("sim-oven"));

    let recipes = dir.path().join("recipes");
    std::fs::create_dir(&recipes).unwrap();
    write(&recipes.join("stock2.cookwala.json"), &renamed_recipe("vegetable-stock", "stock-two"));
    assert_eq!(c.load_recipe_dir(&recipes).unwrap(), ["stock-two"]);
    assert_eq!(c.recipe_id("stock2"), Some("stock-two"));
    let devices = dir.path().join("devices");
    std::fs::create_dir(&devices).unwrap();
    write(&devices.join("oven-2.json"), &cookwala_sim::builtin::device("sim-oven").unwrap());
    assert_eq!(c.load_device_dir(&devices).unwrap(), ["oven-2"]);

    // The same documents again: duplicates are refused, naming the file.
    let e = c.load_recipe_dir(&recipes).unwrap_err();
    assert!(e.to_string().contains("stock2.cookwala.json"), "{e}");
    assert!(e.to_string().contains("already defined"), "{e}");
}

#[test]
fn malformed_files_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bad_json = dir.path().join("broken.json");
    std::fs::write(&bad_json, "{\"recipes\":").unwrap();
    let e = Catalog::builtin().load_bundle(&bad_json).unwrap_err();
    assert_eq!(e.file, bad_json);
    assert!(e.to_string().starts_with(&bad_json.display().to_string()), "{e}");
    assert!(e.why.contains("not valid JSON"), "{e}");

    let not_bundle = dir.path().join("not-bundle.json");
    std::fs::write(&not_bundle, r#"{"recipes":{}}"#).unwrap();
    let e = Catalog::builtin().load_bundle(&not_bundle).unwrap_err();
    assert!(e.why.contains("\"devices\""), "{e}");

    let mut b = bundle();
    let recipes = b.as_object_mut().unwrap().get_mut("recipes").unwrap();
    recipes
        .as_object_mut()
        .unwrap()
        .get_mut("soup")
        .unwrap()
        .as_object_mut()
        .unwrap()
        .remove("dish");
    let invalid = dir.path().join("invalid.json");
    write(&invalid, &b);
    let e = Catalog::builtin().load_bundle(&invalid).unwrap_err();
    assert!(e.why.starts_with("recipes.soup: not a valid Recipe"), "{e}");

    let recipes = dir.path().join("r");
    std::fs::create_dir(&recipes).unwrap();
    std::fs::write(recipes.join("a.json"), "[1,2]").unwrap();
    let e = Catalog::builtin().load_recipe_dir(&recipes).unwrap_err();
    assert_eq!(e.file, recipes.join("a.json"));
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert!(Catalog::builtin().load_device_dir(&empty).unwrap_err().why.contains("no .json"));
    let missing = dir.path().join("missing.json");
    assert_eq!(Catalog::builtin().load_device_file(&missing).unwrap_err().file, missing);
}

#[tokio::test]
async fn loaded_recipes_are_served_and_cooked_on_a_loaded_device() {
    let dir = tempfile::tempdir().unwrap();
    let b = dir.path().join("bundle.json");
    write(&b, &bundle());
    let mut catalog = Catalog::builtin();
    catalog.load_bundle(&b).unwrap();
    let storage: std::sync::Arc<dyn Storage> =
        std::sync::Arc::new(SqliteStorage::in_memory().unwrap());
    let hub_config = HubConfig { device_id: "bundle-hob".to_owned(), catalog, ..config() };
    let hub = Hub::open(storage, hub_config).await.unwrap();
    let app = app(hub.clone());

    let list = call(&app, get("/v1/tools/recipes")).await;
    let ids = list.body.get("recipes").and_then(Value::as_array).unwrap();
    // Listed under its bundle key, as the upstream hub names recipes; the id finds it too.
    assert!(ids.iter().any(|v| v.as_str() == Some("soup")), "{:?}", list.body);
    assert!(!ids.iter().any(|v| v.as_str() == Some("bundle-soup")), "{:?}", list.body);
    let by_id = call(&app, get("/v1/tools/recipes/bundle-soup")).await;
    assert_eq!(by_id.str("id"), "bundle-soup");
    assert!(ids.iter().any(|v| v.as_str() == Some("red-lentil-soup")));
    let doc = call(&app, get("/v1/tools/recipes/soup")).await;
    assert_eq!(doc.str("id"), "bundle-soup");
    let hash = canonical_json::digest::document_hash(&doc.body).unwrap();

    let body = format!(
        r#"{{"core":"0.2.0","kind":"ExecuteRequest","id":"ex-bundle-1","recipe":"cw:example.org:bundle-soup",
        "recipeHash":"{hash}","requestedBy":"person:cook","idempotencyKey":"ex-bundle-1-key"}}"#
    );
    let started = call(&app, post("/v1/executions", Some("key-bundle-01"), &body)).await;
    assert_eq!(started.status, StatusCode::ACCEPTED, "{:?}", started.body);
    assert_eq!(started.str("state"), "accepted", "{:?}", started.body);
    for _ in 0..36 {
        hub.advance(300_000).await.unwrap();
    }
    let done = call(&app, get("/v1/executions/ex-bundle-1")).await;
    assert_eq!(done.str("state"), "completed", "{:?}", done.body);

    let dry =
        call(&app, post("/v1/tools/dryrun", None, r#"{"recipe":"soup","device":"bundle-hob"}"#))
            .await;
    assert_eq!(dry.str("state"), "accepted", "{:?}", dry.body);
    let unknown = Hub::open(
        std::sync::Arc::new(SqliteStorage::in_memory().unwrap()),
        HubConfig { device_id: "nope".to_owned(), ..config() },
    )
    .await;
    assert!(matches!(unknown, Err(cookwala_hub::HubError::UnknownDevice(_))));
}
