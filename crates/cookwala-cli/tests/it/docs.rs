//! `validate`, `schema export|bundle`, `migrate` and `logs export`.

use canonical_json::Value;
use test_support::shared;

use crate::{assert_exit, cookwala, stderr, stdout};

fn parse(text: &str) -> Value {
    canonical_json::parse(text.trim().as_bytes()).unwrap()
}

#[test]
fn validate_names_pointers_and_gates_versions() {
    let dir = tempfile::tempdir().unwrap();
    let good = r#"{"core":"0.2.1","kind":"StopRequest","execution":"ex-1","requestedBy":"u","x-note":"ignored"}"#;
    let bad = r#"{"core":"0.2.1","kind":"StopRequest","execution":"ex-1","requestedBy":"u","because":"x"}"#;
    let future = r#"{"core":"0.3.0","kind":"StopRequest","execution":"ex-1","requestedBy":"u"}"#;
    std::fs::write(dir.path().join("good.json"), good).unwrap();
    std::fs::write(dir.path().join("bad.json"), bad).unwrap();
    std::fs::write(dir.path().join("future.json"), future).unwrap();
    let out = cookwala(dir.path(), &["validate", "good.json"]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "good.json: valid StopRequest\n");
    let out = cookwala(dir.path(), &["validate", "bad.json", "--json"]);
    assert_exit(&out, 1);
    let r = parse(&stdout(&out));
    assert_eq!(r.pointer("/errors/0/pointer").and_then(Value::as_str), Some("/because"));
    assert_eq!(r.pointer("/errors/0/code").and_then(Value::as_str), Some("unknown_field"));
    let out = cookwala(dir.path(), &["validate", "future.json", "--json"]);
    assert_exit(&out, 1);
    assert_eq!(
        parse(&stdout(&out)).pointer("/errors/0/code").and_then(Value::as_str),
        Some("unsupported_version")
    );
    let out = cookwala(dir.path(), &["validate", "good.json", "--kind", "Nope"]);
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("unknown kind"));
    let Some(root) = shared("standards/cookwala") else { return };
    for file in [
        "examples/salata-baladi.cookwala.json",
        "examples/core/recall.json",
        "profiles/core/safety-limits.default.json",
    ] {
        let path = root.join(file);
        let out = cookwala(dir.path(), &["validate", path.to_str().unwrap()]);
        assert_exit(&out, 0);
    }
}

#[test]
fn schema_export_and_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let out = cookwala(dir.path(), &["schema", "export", "s"]);
    assert_exit(&out, 0);
    let recipe = parse(&std::fs::read_to_string(dir.path().join("s/Recipe.schema.json")).unwrap());
    assert_eq!(
        recipe.get("$schema").and_then(Value::as_str),
        Some("https://json-schema.org/draft/2020-12/schema")
    );
    let out = cookwala(dir.path(), &["schema", "bundle", "--from", "s", "--out", "b.json"]);
    assert_exit(&out, 0);
    let b = parse(&std::fs::read_to_string(dir.path().join("b.json")).unwrap());
    assert_eq!(b.get("kind").and_then(Value::as_str), Some("SchemaBundle"));
    assert_eq!(b.get("schemas").and_then(Value::as_object).unwrap().len(), 14);
    // The bundle hash is over Python's sort_keys/ensure_ascii=False compact form of `schemas`.
    let schemas = b.get("schemas").unwrap();
    let bytes = canonical_json::to_python(
        schemas,
        canonical_json::PyFormat { indent: None, keep_unicode: true },
    )
    .unwrap();
    assert_eq!(
        b.get("sha256").and_then(Value::as_str),
        Some(canonical_json::digest::sha256_hex(&bytes).as_str())
    );
    let Some(standard) = shared("standards/cookwala/schemas") else { return };
    let out = cookwala(
        dir.path(),
        &["schema", "bundle", "--from", standard.to_str().unwrap(), "--out", "std.json"],
    );
    assert_exit(&out, 0);
    assert!(stdout(&out).starts_with("8 schemas, sha256 "), "{}", stdout(&out));
}

#[test]
fn migrate_reports_every_change_and_the_result_validates() {
    let dir = tempfile::tempdir().unwrap();
    let old = r#"{"cookwala":"0.1.0","id":"old-soup","revision":1,"verification":{"level":"V0"},"dish":{"names":{"en":"Soup"}},"yield":{"servings":2},
"ingredients":[{"ref":"w","ingredientId":"cw.ing.water","qty":{"value":1,"unit":"l"}}],
"equipment":[],"process":{"nodes":[{"id":"n1","op":"cw.op.simmer","params":{"tempF":194},"until":{"sensor":"cw.sense.liquid_temp","target":{"value":200,"unit":"degF","tolerance":0.02}},"color":"red"}]},
"safety":{"hazards":[],"allergens":{"eu14":[]},"supervision":{"default":"unattended_ok"},"abort":{"steps":[]}},"text":{},"license":"CC0-1.0","cost":{"total":{"amount":3.5,"currency":"EUR"}},"hash":"sha256:00"}"#;
    std::fs::write(dir.path().join("old.json"), old).unwrap();
    let out = cookwala(dir.path(), &["validate", "old.json"]);
    assert_exit(&out, 1);
    let out = cookwala(dir.path(), &["migrate", "old.json", "-o", "new.json"]);
    assert_exit(&out, 0);
    let log = stderr(&out);
    for needle in [
        "/process/nodes/0/params/tempF: tempF 194 °F → tempC 90 °C",
        "/process/nodes/0/until/target/tolerance: relative tolerance 0.02",
        "/cost/total/amount: money 3.5 → \"3.5\"",
        "/process/nodes/0/color: unknown field renamed to x-color",
        "/cookwala: version 0.1.0 → 0.2.0",
        "/hash: removed the stale hash",
    ] {
        assert!(log.contains(needle), "{needle} missing from:\n{log}");
    }
    let out = cookwala(dir.path(), &["validate", "new.json"]);
    assert_exit(&out, 0);
    let out = cookwala(dir.path(), &["migrate", "old.json", "--report-unknown", "--json"]);
    assert_exit(&out, 0);
    let r = parse(&stdout(&out));
    assert!(r.pointer("/document/process/nodes/0/color").is_some());
}

fn log(id: &str, dataset: &str, extra: &str) -> String {
    format!(
        r#"{{"core":"0.2.0","kind":"ExecutionLog","id":"{id}","recipe":"cw:cookwala.ai:soup",
        "recipeHash":"sha256:{}","device":{{"vendor":"v","model":"m"}},
        "startedAt":"2026-10-05T18:42:10Z","endedAt":"2026-10-05T19:30:00+02:00","outcome":"served",
        "steps":[{{"node":"n1","op":"cw.op.boil","verifiedBy":"sensor","envelopeOk":true,"startedAt":"2026-10-05T18:43:00Z"}}],
        "consent":{{"dataset":"{dataset}","grantedBy":"hh-7","withdrawable":true{extra}}},
        "privacy":{{"personalData":"none","timePrecision":"minute"}},"x-household":{{"diet":"halal"}}}}"#,
        "a".repeat(64)
    )
}

#[test]
fn logs_export_releases_only_consented_private_logs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("open.json"), log("log-1", "open", "")).unwrap();
    std::fs::write(dir.path().join("research.json"), log("log-2", "research_only", "")).unwrap();
    std::fs::write(dir.path().join("none.json"), log("log-3", "none", "")).unwrap();
    std::fs::write(
        dir.path().join("gone.json"),
        log("log-4", "open", r#","x-withdrawnAt":"2026-10-06T00:00:00Z""#),
    )
    .unwrap();
    let personal =
        log("log-5", "open", "").replace(r#""personalData":"none""#, r#""personalData":"some""#);
    std::fs::write(dir.path().join("personal.json"), personal).unwrap();
    let files = ["open.json", "research.json", "none.json", "gone.json", "personal.json"];
    let mut args = vec!["logs", "export", "--consent", "open", "--out", "open.ndjson", "--json"];
    args.extend(files);
    let out = cookwala(dir.path(), &args);
    assert_exit(&out, 0);
    let r = parse(&stdout(&out));
    assert_eq!(r.get("released").and_then(Value::as_i64), Some(1));
    let reasons: Vec<&str> = r
        .get("leftOut")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|x| x.get("reason").and_then(Value::as_str).unwrap())
        .collect();
    assert_eq!(reasons[0], "consent is research_only");
    assert_eq!(reasons[1], "consent is none");
    assert_eq!(reasons[2], "consent withdrawn");
    assert!(
        reasons[3].starts_with("not a valid ExecutionLog: /privacy/personalData"),
        "{}",
        reasons[3]
    );
    let text = std::fs::read_to_string(dir.path().join("open.ndjson")).unwrap();
    let released = parse(&text);
    assert_eq!(released.get("startedAt").and_then(Value::as_str), Some("2026-10-05T00:00:00Z"));
    assert_eq!(released.get("endedAt").and_then(Value::as_str), Some("2026-10-05T00:00:00Z"));
    assert_eq!(
        released.pointer("/steps/0/startedAt").and_then(Value::as_str),
        Some("2026-10-05T00:00:00Z")
    );
    assert_eq!(released.pointer("/privacy/timePrecision").and_then(Value::as_str), Some("day"));
    assert!(released.get("x-household").is_none());
    assert!(released.pointer("/consent/grantedBy").is_none());
    let mut args = vec![
        "logs",
        "export",
        "--consent",
        "research_only",
        "--since",
        "2026-10-01T00:00:00Z",
        "--out",
        "r.ndjson",
    ];
    args.extend(files);
    let out = cookwala(dir.path(), &args);
    assert_exit(&out, 0);
    assert!(stdout(&out).starts_with("released 2 log(s)"), "{}", stdout(&out));
    let text = std::fs::read_to_string(dir.path().join("r.ndjson")).unwrap();
    assert!(text.contains("18:42:10"), "research_only keeps full times");
}
