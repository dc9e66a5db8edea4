//! The upstream sample client (`python3 -m cookwala_samples demo --hub …`) against a port-0
//! hub. The package is unpacked in `target/ext/` by `.ci/fetch-ext`; without python3 or the
//! package the test prints a notice and skips (it fails under CI).
//!
//! What it pins today (the built-in catalog, not the samples' bundle): the client completes
//! every call without a transport or protocol error, the tool endpoints answer in the shapes
//! it reads, and the `lentil-note` order, which carries an injected instruction, cooks to
//! completion while the instruction is reported as an untrusted-text finding, never obeyed.
//! (The shakshuka and salad orders need the samples' bundle, which `--bundle` will load.)

use std::sync::Arc;

use canonical_json::Value;
use cookwala_hub::storage::SqliteStorage;
use cookwala_hub::{Hub, HubConfig, serve};

use crate::support::TOKEN;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_sample_demo_runs_against_the_hub() {
    let Some(python) = test_support::tool("python3") else { return };
    let ext = test_support::workspace_root().join("target/ext");
    if !ext.join("cookwala_samples/__main__.py").is_file() {
        assert!(!test_support::in_ci(), "CI=true but {} lacks cookwala_samples", ext.display());
        eprintln!("notice: {} lacks cookwala_samples; skipping", ext.display());
        return;
    }
    let storage = Arc::new(SqliteStorage::in_memory().unwrap());
    let config =
        HubConfig { speed: 100_000.0, token: Some(TOKEN.to_owned()), ..HubConfig::default() };
    let hub = Hub::open(storage, config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(hub, listener, async {
        let _ = rx.await;
    }));
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python)
            .args(["-m", "cookwala_samples", "demo", "--hub"])
            .arg(format!("http://{addr}"))
            .args(["--token", TOKEN, "--format", "json"])
            .env("PYTHONPATH", &ext)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    tx.send(()).unwrap();
    server.await.unwrap().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let report = canonical_json::parse(stdout.as_bytes()).unwrap();
    let runs = report.get("runs").and_then(Value::as_array).unwrap();
    for run in runs {
        let job = run.get("job").and_then(Value::as_str).unwrap_or("?");
        let outcome = run.get("outcome").and_then(Value::as_str).unwrap_or("?");
        let reason = run.pointer("/refusal/reason").and_then(Value::as_str).unwrap_or("-");
        eprintln!("notice: samples demo job {job}: {outcome} ({reason})");
    }
    assert_eq!(runs.len(), 3, "the three fault-free jobs run against a hub");
    let note =
        runs.iter().find(|r| r.get("job").and_then(Value::as_str) == Some("lentil-note")).unwrap();
    // The order with an injected instruction cooks normally; the instruction is only reported.
    assert_eq!(note.get("outcome").and_then(Value::as_str), Some("completed"), "{stdout}");
    let findings = note.get("findings").and_then(Value::as_array).unwrap();
    assert!(findings.iter().any(|f| {
        f.get("incident").and_then(Value::as_str) == Some("cw.incident.untrusted_instruction")
    }));
    // No job ended on a transport or protocol problem.
    assert!(!stdout.contains("unreachable") && !stdout.contains("http-error"), "{stdout}");
}
