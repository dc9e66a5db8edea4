//! schemathesis (PyPI, installed into `target/ext/venv` by `.ci/fetch-ext`) against a port-0
//! hub serving its own description with the published schemas inlined: no 5xx, every response
//! as described (status, content type, headers, body schema), malformed requests answered
//! with a documented 4xx problem, auth enforced where described.
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
    test_support::ensure_ext();
    let root = test_support::workspace_root();
    let exe = root.join("target/ext/venv/bin/schemathesis");
    if !exe.is_file() {
        assert!(!test_support::in_ci(), "CI=true but {} is missing (.ci/fetch-ext)", exe.display());
        eprintln!("notice: {} is missing; run .ci/fetch-ext; skipping", exe.display());
        return;
    }
    let spec = canonical_json::parse(OWN_SPEC.as_bytes()).unwrap();
    let bundled = bundle(&spec, &load_schemas(&schemas).unwrap()).unwrap();
    let text = String::from_utf8(canonical_json::to_jcs(&bundled.spec).unwrap()).unwrap();
    let storage = Arc::new(SqliteStorage::in_memory().unwrap());
    let config = HubConfig {
        speed: 1000.0,
        tokens: cookwala_hub::auth::Tokens::owner(TOKEN),
        spec: Some(text),
        ..HubConfig::default()
    };
    let hub = Hub::open(storage, config).await.unwrap();
    let seed = std::env::var("SCHEMATHESIS_SEED").unwrap_or_else(|_| "20261130".into());
    let examples = std::env::var("SCHEMATHESIS_MAX_EXAMPLES").unwrap_or_else(|_| "40".into());
    let config_file = root.join("crates/cookwala-hub/tests/schemathesis/schemathesis.toml");
    // schemathesis keeps a cache in its working directory: give it a scratch one.
    let scratch = tempfile::tempdir().unwrap();
    let cwd = scratch.path().to_owned();
    let out = crate::support::with_server(hub, move |addr| {
        std::process::Command::new(exe)
            .current_dir(cwd)
            .arg("--config-file")
            .arg(config_file)
            .arg("--no-color")
            .arg("run")
            .arg(format!("http://{addr}/openapi.yaml"))
            .args(["--url", &format!("http://{addr}")])
            .args(["-H", &format!("Authorization: Bearer {TOKEN}")])
            .args(["--checks", "all", "--exclude-checks", "positive_data_acceptance"])
            // An event stream never ends; it has tests of its own (events.rs).
            .args(["--exclude-path", "/v1/events"])
            .args(["--max-examples", &examples, "--seed", &seed, "--workers", "1"])
            .env("SCHEMATHESIS_HOOKS", "")
            .output()
            .unwrap()
    })
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "schemathesis failed:\n{stdout}\n{stderr}");
    let summary = stdout.lines().rev().take(12).collect::<Vec<_>>();
    eprintln!("schemathesis: {}", summary.into_iter().rev().collect::<Vec<_>>().join("\n"));
}
