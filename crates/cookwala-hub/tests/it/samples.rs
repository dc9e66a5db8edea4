//! The upstream sample client (`python3 -m cookwala_samples demo --hub …`) against a port-0
//! hub loaded with the samples' own `bundle.json` (recipes and devices), serving the bundle's
//! `demo-hob-robot` at the root. The package is unpacked in `target/ext/` by `.ci/fetch-ext`;
//! without python3 or the package the test prints a notice and skips (it fails under CI).
//!
//! The client's offline demo (its own simulated kitchen) is the oracle: every job it sends to a
//! hub (the fault-free ones) must end against our hub as it ends offline, job by job (outcome,
//! refusal reason and the gate that refused, untrusted-text findings).

use std::sync::Arc;

use canonical_json::Value;
use cookwala_hub::storage::SqliteStorage;
use cookwala_hub::{Catalog, Hub, HubConfig};

use crate::support::TOKEN;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_sample_demo_runs_against_the_hub() {
    let Some(python) = test_support::tool("python3") else { return };
    test_support::ensure_ext();
    let ext = test_support::workspace_root().join("target/ext");
    if !ext.join("cookwala_samples/__main__.py").is_file() {
        assert!(!test_support::in_ci(), "CI=true but {} lacks cookwala_samples", ext.display());
        eprintln!("notice: {} lacks cookwala_samples; skipping", ext.display());
        return;
    }
    let mut catalog = Catalog::builtin();
    let (recipes, devices) =
        catalog.load_bundle(&ext.join("cookwala_samples/data/bundle.json")).unwrap();
    assert_eq!(recipes.len(), 4, "{recipes:?}");
    assert_eq!(devices.len(), 4, "{devices:?}");
    let storage = Arc::new(SqliteStorage::in_memory().unwrap());
    let config = HubConfig {
        speed: 100_000.0,
        tokens: cookwala_hub::auth::Tokens::owner(TOKEN),
        device_id: "demo-hob-robot".to_owned(),
        catalog,
        ..HubConfig::default()
    };
    let hub = Hub::open(storage, config).await.unwrap();
    let store = hub.storage();
    let out = crate::support::with_server(hub, move |addr| {
        std::process::Command::new(python)
            .args(["-m", "cookwala_samples", "demo", "--hub"])
            .arg(format!("http://{addr}"))
            .args(["--token", TOKEN, "--format", "json"])
            .env("PYTHONPATH", &ext)
            .output()
            .unwrap()
    })
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let online = jobs(&stdout);

    let python = test_support::tool("python3").unwrap();
    let offline = std::process::Command::new(python)
        .args(["-m", "cookwala_samples", "demo", "--format", "json"])
        .env("PYTHONPATH", test_support::workspace_root().join("target/ext"))
        .env_remove("COOKWALA_HUB_TOKEN")
        .output()
        .unwrap();
    let offline_out = String::from_utf8_lossy(&offline.stdout);
    assert!(offline.status.success(), "{offline_out}");
    let offline = jobs(&offline_out);

    // The hub run is the offline demo minus the fault-injected jobs.
    let sent: Vec<&str> = online.iter().map(|j| j.job.as_str()).collect();
    assert_eq!(sent, ["shakshuka", "salata", "lentil-note"], "{stdout}");
    for hub_job in &online {
        let want = offline.iter().find(|j| j.job == hub_job.job).unwrap();
        eprintln!("notice: samples demo job {}: offline {want:?} / hub {hub_job:?}", hub_job.job);
        assert_eq!(hub_job, want, "job {} differs\n{stdout}", hub_job.job);
    }
    // What the issue names, spelled out.
    let by = |id: &str| online.iter().find(|j| j.job == id).unwrap();
    assert_eq!(by("shakshuka").outcome, "refused");
    assert_eq!(by("shakshuka").refusal.as_deref(), Some("allergen_block/planner"));
    assert_eq!(by("salata").outcome, "completed");
    assert_eq!(by("lentil-note").outcome, "completed");
    assert_eq!(by("lentil-note").findings, ["cw.incident.untrusted_instruction"]);
    // The hub itself logged the injected instruction as an incident (and cooked normally).
    assert!(store.incident_count().unwrap() >= 1);
    // The client's monitor saw no illegal transition, seq regression or out-of-envelope reading.
    let summary = canonical_json::parse(stdout.as_bytes()).unwrap();
    assert_eq!(summary.pointer("/summary/anomalies").and_then(Value::as_i64), Some(0), "{stdout}");
    // No job ended on a transport or protocol problem.
    assert!(!stdout.contains("unreachable") && !stdout.contains("http-error"), "{stdout}");
}

/// One job of a samples demo report, reduced to what must agree between runs.
#[derive(Debug, PartialEq, Eq)]
struct JobEnd {
    job: String,
    outcome: String,
    /// The recipe the planner picked.
    recipe: Option<String>,
    /// `served`, `discard`, `not_served` or `not_cooked` (a refusal).
    disposition: Option<String>,
    /// `reason/gate` of a refusal.
    refusal: Option<String>,
    /// Incident codes of the gate findings, sorted.
    findings: Vec<String>,
}

fn jobs(report: &str) -> Vec<JobEnd> {
    let report = canonical_json::parse(report.as_bytes()).unwrap();
    let s = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_owned);
    report
        .get("runs")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|run| {
            let mut findings: Vec<String> = run
                .get("findings")
                .and_then(Value::as_array)
                .unwrap_or_default()
                .iter()
                .filter_map(|f| s(f, "/incident"))
                .collect();
            findings.sort();
            JobEnd {
                job: s(run, "/job").unwrap(),
                outcome: s(run, "/outcome").unwrap(),
                recipe: s(run, "/recipe"),
                disposition: s(run, "/disposition"),
                refusal: s(run, "/refusal/reason").map(|r| {
                    format!("{r}/{}", s(run, "/refusal/gate").unwrap_or_else(|| "-".to_owned()))
                }),
                findings,
            }
        })
        .collect()
}

/// Every call the samples' `HubClient` makes, without a token, against a hub opened with
/// `no_auth` (what `serve --no-auth` builds): none of them meets a 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_samples_hub_client_works_without_a_token_under_no_auth() {
    let Some(python) = test_support::tool("python3") else { return };
    test_support::ensure_ext();
    let ext = test_support::workspace_root().join("target/ext");
    if !ext.join("cookwala_samples/clients.py").is_file() {
        assert!(!test_support::in_ci(), "CI=true but {} lacks cookwala_samples", ext.display());
        eprintln!("notice: {} lacks cookwala_samples; skipping", ext.display());
        return;
    }
    let mut catalog = Catalog::builtin();
    catalog.load_bundle(&ext.join("cookwala_samples/data/bundle.json")).unwrap();
    let config = HubConfig {
        // Slow enough that the salad is still cooking when the stop arrives, however loaded
        // the machine is (the stop itself takes a simulated second).
        speed: 20.0,
        no_auth: true,
        tokens: cookwala_hub::auth::Tokens::new(),
        device_id: "demo-hob-robot".to_owned(),
        catalog,
        ..HubConfig::default()
    };
    let hub = Hub::open(Arc::new(SqliteStorage::in_memory().unwrap()), config).await.unwrap();
    // Our own script over the client's public methods; each prints one line.
    let script = r#"
import json, sys, uuid
from cookwala_samples.clients import HubClient
from cookwala_samples.data import load_bundle
c = HubClient(sys.argv[1], token=None, poll_s=0.05)
bundle = load_bundle()
caps = c.capabilities(); print("capabilities", caps["kind"] if "kind" in caps else caps["actor"]["id"])
print("safety_limits", c.safety_limits()["id"])
print("recalls", type(c.recalls()).__name__)
recipe = bundle["recipes"]["salata-baladi"]
print("dry_run", c.dry_run(recipe, human_present=True)["state"])
from cookwala_samples.jcs import doc_hash
req = {"core": "0.2.0", "kind": "ExecuteRequest", "id": "py-" + uuid.uuid4().hex[:8],
       "recipe": "cw:samples:" + recipe["id"], "recipeHash": doc_hash(recipe),
       "requestedBy": "person:cook", "idempotencyKey": "py-key-" + uuid.uuid4().hex[:8]}
st = c.start_execution(req, human_present=True); print("start_execution", st["state"])
st = c.get_execution(req["id"]); print("get_execution", st["state"])
st = c.stop_execution(req["id"]); print("stop_execution", st["state"])
for _ in range(200):
    st = c.get_execution(req["id"])
    if st["state"] == "stopped": break
    c.advance()
print("final", st["state"])
print("execution_log", c.execution_log(req["id"])["outcome"])
inc = {"core": "0.2.0", "kind": "IncidentReport", "id": "inc-py", "date": "2026-11-30",
       "category": "cw.incident.burn", "severity": "low", "description": "hot handle"}
print("report_incident", c.report_incident(inc)["received"])
"#;
    let out = crate::support::with_server(hub, move |addr| {
        std::process::Command::new(python)
            .args(["-c", script, &format!("http://{addr}")])
            .env("PYTHONPATH", &ext)
            .env_remove("COOKWALA_HUB_TOKEN")
            .output()
            .unwrap()
    })
    .await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for line in [
        "safety_limits cookwala-default",
        "recalls list",
        "dry_run accepted",
        "start_execution accepted",
        "final stopped",
        "execution_log aborted_safe",
        "report_incident True",
    ] {
        assert!(stdout.lines().any(|l| l == line), "missing {line:?} in\n{stdout}\n{stderr}");
    }
    let stop = stdout.lines().find(|l| l.starts_with("stop_execution ")).unwrap_or_default();
    assert!(matches!(stop, "stop_execution stopping" | "stop_execution stopped"), "{stdout}");
}
