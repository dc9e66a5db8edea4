//! schemathesis (PyPI, installed into `target/ext/venv` by `.ci/fetch-ext`) against a port-0
//! hub serving its own description with the published schemas inlined: no 5xx, every response
//! as described (status, content type, headers, body schema), malformed requests answered
//! with a documented 4xx problem, auth enforced where described. A second run does the same
//! against the standard's own description (`api/core.openapi.yaml`), with the checks its
//! settings file turns off and why.
//!
//! Settings: `tests/schemathesis/schemathesis.toml`. `positive_data_acceptance` is excluded:
//! schema-valid requests are legitimately refused by rules no schema states (an
//! `Idempotency-Key` reused with another body is a 422, a header the transport trims below 8
//! characters is a 400, a duplicate execution id is a 409). The seed is fixed so a CI failure
//! reproduces; `SCHEMATHESIS_SEED` and `SCHEMATHESIS_MAX_EXAMPLES` override it locally.

use std::sync::Arc;

use cookwala_hub::openapi::{OWN_SPEC, bundle, load_schemas};
use cookwala_hub::storage::SqliteStorage;
use cookwala_hub::{Hub, HubConfig};

use crate::support::TOKEN;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_nothing() {
    let Some(schemas) = test_support::shared("standards/cookwala/schemas") else { return };
    let Some(exe) = schemathesis() else { return };
    let spec = canonical_json::parse(OWN_SPEC.as_bytes()).unwrap();
    run(&exe, &spec, &schemas, "schemathesis.toml").await;
}

/// The same against the standard's own description (`api/core.openapi.yaml`, its schemas
/// inlined): the endpoints the standard defines, with its schemas. Settings:
/// `tests/schemathesis/standard.toml`, which says which checks are off and why (the
/// description declares fewer status codes than the prose gives, and puts stop under auth and
/// a required key where the prose says stop is never refused).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_against_the_standards_description_finds_nothing() {
    let Some(schemas) = test_support::shared("standards/cookwala/schemas") else { return };
    let Some(api) = test_support::shared("standards/cookwala/api/core.openapi.yaml") else {
        return;
    };
    let Some(exe) = schemathesis() else { return };
    // YAML to JSON with the PyYAML that schemathesis brings into its venv.
    let python = exe.with_file_name("python");
    let out = std::process::Command::new(python)
        .args([
            "-c",
            "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)",
        ])
        .arg(&api)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let spec = canonical_json::parse(&out.stdout).unwrap();
    run(&exe, &spec, &schemas, "standard.toml").await;
}

/// The schemathesis of `.ci/fetch-ext`, or `None` with a notice outside CI.
fn schemathesis() -> Option<std::path::PathBuf> {
    test_support::ensure_ext();
    let exe = test_support::workspace_root().join("target/ext/venv/bin/schemathesis");
    if !exe.is_file() {
        assert!(!test_support::in_ci(), "CI=true but {} is missing (.ci/fetch-ext)", exe.display());
        eprintln!("notice: {} is missing; run .ci/fetch-ext; skipping", exe.display());
        return None;
    }
    Some(exe)
}

/// Runs schemathesis with `config` (a file in `tests/schemathesis/`) against a port-0 hub that
/// serves `spec` with the schemas of `schemas` inlined.
async fn run(
    exe: &std::path::Path,
    spec: &canonical_json::Value,
    schemas: &std::path::Path,
    config: &str,
) {
    let root = test_support::workspace_root();
    let bundled = bundle(spec, &load_schemas(schemas).unwrap()).unwrap();
    let text = String::from_utf8(canonical_json::to_jcs(&bundled.spec).unwrap()).unwrap();
    let storage = Arc::new(SqliteStorage::in_memory().unwrap());
    let config_hub = HubConfig {
        speed: 1000.0,
        tokens: cookwala_hub::auth::Tokens::owner(TOKEN),
        spec: Some(text),
        ..HubConfig::default()
    };
    let hub = Hub::open(storage, config_hub).await.unwrap();
    let seed = std::env::var("SCHEMATHESIS_SEED").unwrap_or_else(|_| "20261130".into());
    let examples = std::env::var("SCHEMATHESIS_MAX_EXAMPLES").unwrap_or_else(|_| "40".into());
    let config_file = root.join("crates/cookwala-hub/tests/schemathesis").join(config);
    // The hub's own run chooses its checks on the command line; the standard's in its file
    // (per operation), which a --checks option would override.
    let own = config == "schemathesis.toml";
    // schemathesis keeps a cache in its working directory: give it a scratch one.
    let scratch = tempfile::tempdir().unwrap();
    let cwd = scratch.path().to_owned();
    let exe = exe.to_owned();
    let out = crate::support::with_server(hub, move |addr| {
        let mut cmd = std::process::Command::new(exe);
        cmd.current_dir(cwd)
            .arg("--config-file")
            .arg(config_file)
            .arg("--no-color")
            .arg("run")
            .arg(format!("http://{addr}/openapi.yaml"))
            .args(["--url", &format!("http://{addr}")])
            .args(["-H", &format!("Authorization: Bearer {TOKEN}")]);
        if own {
            cmd.args(["--checks", "all", "--exclude-checks", "positive_data_acceptance"]);
        }
        // An event stream never ends; it has tests of its own (events.rs).
        cmd.args(["--exclude-path", "/v1/events"])
            .args(["--max-examples", &examples, "--seed", &seed, "--workers", "1"])
            .env("SCHEMATHESIS_HOOKS", "")
            .output()
            .unwrap()
    })
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "schemathesis ({config}) failed:\n{stdout}\n{stderr}");
    let summary = stdout.lines().rev().take(12).collect::<Vec<_>>();
    eprintln!(
        "schemathesis ({config}): {}",
        summary.into_iter().rev().collect::<Vec<_>>().join("\n")
    );
}
