//! The hub benchmark (`cw-bench hub`, driven by `bench/hub.sh`).
//!
//! Everything runs on loopback in one run, so the hub and its ceilings see the same machine:
//!
//! 1. **Simulation CPU** ([`simcpu`]): each built-in recipe start to end, CPU ms per simulated
//!    hour.
//! 2. **Load** ([`load`]): the hub binary (`cookwala serve`) as a child process on a fresh data
//!    directory, next to a bare axum server (`cw-bench bare-serve`, also a child process)
//!    answering the same paths with the hub's own response bytes. Scenarios: GET capabilities,
//!    GET status of a stored (final) and of a live execution, POST /v1/executions refused
//!    `busy` after every precheck (one durable commit each), and POST /v1/executions accepted
//!    followed by a stop that ends it at once (two durable commits per iteration).
//! 3. **SQLite ceilings** ([`ceiling::sqlite_commits`]), measured right before the durable POSTs
//!    (and the 1-row one again right after them): durable commits (WAL, `synchronous = FULL`)
//!    next to the hub's data, one row per commit and `batch` rows per commit (the group-commit
//!    ceiling).
//! 4. **RSS** with `rss_executions` completed executions stored (through the public `Storage`
//!    trait, one transaction each), idle and after reading every status and log over HTTP,
//!    then accepted POSTs on a fast clock (executions finish by themselves).
//!
//! Nothing here asserts on time; the numbers are reported, with the targets, and the raw
//! records are written as JSON lines.

pub mod ceiling;
pub mod child;
pub mod load;
pub mod simcpu;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

use crate::hub::ceiling::{BareBodies, Canned, Commits};
use crate::hub::child::Server;
use crate::hub::load::{CheckFn, Conn, MakeFn, Outcome, Plan, Reply};

/// The bearer token the benchmark's hubs run with.
pub const TOKEN: &str = "cw-bench-token-0123456789";

/// The recipe every POST names (a hob recipe that needs nobody present).
pub const RECIPE: &str = "red-lentil-soup";

/// The database file `cookwala serve` keeps in its data directory.
pub const HUB_DB: &str = "hub.sqlite3";

/// The clock speed of the load hub: simulated time all but stands still, so an accepted
/// execution stays `accepted` (live, the device busy) until it is stopped.
pub const FROZEN_SPEED: &str = "0.000001";

/// The clock speed of the RSS hub: an execution runs to its end within one clock step.
pub const FAST_SPEED: &str = "1000000";

/// What to run.
#[derive(Clone, Debug)]
pub struct Options {
    /// The `cookwala` binary (its `serve` command is the hub under test).
    pub hub_bin: PathBuf,
    /// Where the temporary data directories go (the disk under test).
    pub work: PathBuf,
    /// Connections per GET / refused-POST scenario.
    pub connections: usize,
    /// Seconds per scenario.
    pub secs: f64,
    /// Warm-up seconds before each scenario (not counted).
    pub warmup_secs: f64,
    /// Seconds per SQLite ceiling.
    pub ceiling_secs: f64,
    /// Rows per commit of the group-commit ceiling.
    pub batch_rows: usize,
    /// Payload bytes per ceiling row.
    pub row_bytes: usize,
    /// Completed executions stored before the RSS measurement.
    pub rss_executions: usize,
    /// Runs per recipe for the simulation CPU (the fastest is kept).
    pub sim_runs: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            hub_bin: PathBuf::from("target/release/cookwala"),
            work: std::env::temp_dir(),
            connections: 16,
            secs: 5.0,
            warmup_secs: 1.0,
            ceiling_secs: 5.0,
            batch_rows: 32,
            row_bytes: 2048,
            rss_executions: 10_000,
            sim_runs: 5,
        }
    }
}

fn progress(line: std::fmt::Arguments<'_>) {
    eprintln!("cw-bench hub: {line}");
}

/// An ExecuteRequest for [`RECIPE`] (its `idempotencyKey` field is `key`).
pub fn execute_request(id: &str, key: &str) -> anyhow::Result<String> {
    let recipe = cookwala_sim::builtin::recipe(RECIPE).context("built-in recipe")?;
    let hash = canonical_json::digest::document_hash(&recipe)?;
    Ok(format!(
        r#"{{"core":"0.2.0","kind":"ExecuteRequest","id":"{id}","recipe":"cw:cookwala-rs:{RECIPE}","recipeHash":"{hash}","requestedBy":"person:bench","idempotencyKey":"{key}","x-hub-human-present":false}}"#
    ))
}

fn state_of(reply: &Reply) -> &'static str {
    for state in ["accepted", "refused", "stopped", "completed", "running", "preparing"] {
        let needle = format!("\"state\":\"{state}\"");
        if reply.body.windows(needle.len()).any(|w| w == needle.as_bytes()) {
            return state;
        }
    }
    "other"
}

/// Checks that a reply has `status` and labels it `ok`.
pub fn expect_status(status: u16) -> CheckFn {
    Arc::new(move |_, r: &Reply| {
        if r.status == status {
            Ok("ok")
        } else {
            Err(format!(
                "HTTP {} (wanted {status}): {}",
                r.status,
                String::from_utf8_lossy(&r.body)
            ))
        }
    })
}

/// Checks 202 replies and labels them by the execution state; `wanted[idx]` is the state the
/// `idx`-th request of an iteration must reach (`None`: any state).
pub fn expect_states(wanted: Vec<Option<&'static str>>) -> CheckFn {
    Arc::new(move |idx, r: &Reply| {
        let state = state_of(r);
        let want = wanted.get(idx).copied().flatten();
        if r.status != 202 || want.is_some_and(|w| w != state) {
            return Err(format!(
                "HTTP {} state {state} (wanted 202 {}): {}",
                r.status,
                want.unwrap_or("any"),
                String::from_utf8_lossy(&r.body)
            ));
        }
        Ok(state)
    })
}

/// One GET per iteration.
pub fn make_get(path: &str, token: Option<&str>) -> MakeFn {
    let req = load::get(path, token);
    Arc::new(move |_| vec![req.clone()])
}

/// One POST /v1/executions per iteration with a fresh id and `Idempotency-Key`
/// (`{prefix}-{n}`); with `stop`, a POST .../stop of the same execution follows.
pub fn make_start(prefix: &str, stop: bool) -> anyhow::Result<MakeFn> {
    // Fail early if the request cannot be built.
    execute_request("probe-id", "probe-key")?;
    let prefix = prefix.to_owned();
    let next = Arc::new(AtomicU64::new(0));
    Ok(Arc::new(move |_| {
        let n = next.fetch_add(1, Ordering::Relaxed);
        let id = format!("{prefix}-{n:08}");
        let key = format!("{id}-key");
        let body = execute_request(&id, &key).unwrap_or_default();
        let mut reqs = vec![load::post("/v1/executions", Some(TOKEN), Some(&key), &body)];
        if stop {
            reqs.push(load::post(
                &format!("/v1/executions/{id}/stop"),
                Some(TOKEN),
                Some(&format!("{id}-stop")),
                r#"{"reason":"bench"}"#,
            ));
        }
        reqs
    }))
}

/// A measured scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// What was measured.
    pub name: String,
    /// `hub` or `bare`.
    pub server: &'static str,
    /// Connections used.
    pub connections: usize,
    /// The load outcome.
    pub outcome: Outcome,
    /// CPU seconds the server process used during the run.
    pub server_cpu_s: f64,
    /// CPU seconds the load generator (this process) used during the run.
    pub gen_cpu_s: f64,
}

impl Scenario {
    fn record(&self) -> serde_json::Value {
        let o = &self.outcome;
        json!({
            "kind": "load", "scenario": self.name, "server": self.server,
            "connections": self.connections, "secs": o.elapsed.as_secs_f64(),
            "iterations": o.iterations, "requests": o.requests, "errors": o.errors,
            "first_error": o.first_error, "labels": o.labels,
            "per_s": o.per_sec(), "p50_ms": o.quantile_ms(0.5), "p99_ms": o.quantile_ms(0.99),
            "server_cpu_s": self.server_cpu_s, "gen_cpu_s": self.gen_cpu_s,
        })
    }
}

fn process_cpu_s() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// Runs one scenario (after a warm-up) against `server`.
///
/// # Errors
/// The load generator could not run.
#[allow(clippy::too_many_arguments)]
fn scenario(
    rt: &tokio::runtime::Runtime,
    name: &str,
    label: &'static str,
    server: &Server,
    connections: usize,
    opts: &Options,
    make: MakeFn,
    check: CheckFn,
) -> anyhow::Result<Scenario> {
    if opts.warmup_secs > 0.0 {
        let warm = Plan {
            connections,
            duration: Duration::from_secs_f64(opts.warmup_secs),
            max_iterations: None,
        };
        rt.block_on(load::run(server.addr, warm, make.clone(), check.clone()))?;
    }
    let plan =
        Plan { connections, duration: Duration::from_secs_f64(opts.secs), max_iterations: None };
    let (s0, g0) = (server.cpu_secs()?, process_cpu_s());
    let outcome = rt.block_on(load::run(server.addr, plan, make, check))?;
    let (s1, g1) = (server.cpu_secs()?, process_cpu_s());
    let s = Scenario {
        name: name.to_owned(),
        server: label,
        connections,
        outcome,
        server_cpu_s: s1 - s0,
        gen_cpu_s: g1 - g0,
    };
    progress(format_args!(
        "{name} [{label}, {connections} conn]: {:.0}/s, p50 {:.3} ms, p99 {:.3} ms, {} errors{}",
        s.outcome.per_sec(),
        s.outcome.quantile_ms(0.5),
        s.outcome.quantile_ms(0.99),
        s.outcome.errors,
        s.outcome.first_error.as_deref().map(|e| format!(" (first: {e})")).unwrap_or_default()
    ));
    Ok(s)
}

/// Sends one request on a fresh connection.
async fn one(addr: SocketAddr, request: Vec<u8>) -> anyhow::Result<Reply> {
    let mut c = Conn::connect(addr).await?;
    Ok(c.send(&request).await?)
}

fn one_ok(
    rt: &tokio::runtime::Runtime,
    addr: SocketAddr,
    request: Vec<u8>,
    status: u16,
) -> anyhow::Result<Reply> {
    let reply = rt.block_on(one(addr, request))?;
    if reply.status != status {
        bail!(
            "setup request: HTTP {} (wanted {status}): {}",
            reply.status,
            String::from_utf8_lossy(&reply.body)
        );
    }
    Ok(reply)
}

fn canned(reply: &Reply) -> Canned {
    Canned {
        body: axum::body::Bytes::from(reply.body.clone()),
        etag: reply.header("etag").map(str::to_owned),
    }
}

/// Starts `cookwala serve` on `data` at `speed`.
///
/// # Errors
/// The hub does not start.
pub fn spawn_hub(opts: &Options, data: &Path, speed: &str, name: &str) -> anyhow::Result<Server> {
    let mut cmd = Command::new(&opts.hub_bin);
    cmd.arg("serve")
        .args(["--addr", "127.0.0.1:0", "--token", TOKEN, "--speed", speed])
        .arg("--data")
        .arg(data);
    Server::spawn(name, cmd, &data.with_extension("stderr.log"))
}

/// Everything one run measured.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Simulation cost per recipe.
    pub sims: Vec<simcpu::SimCost>,
    /// SQLite ceilings (1 row per commit first).
    pub commits: Vec<Commits>,
    /// Load scenarios.
    pub scenarios: Vec<Scenario>,
    /// The RSS phase.
    pub rss: Option<RssReport>,
    /// The options used.
    pub connections: usize,
}

/// The RSS phase.
#[derive(Clone, Debug)]
pub struct RssReport {
    /// Executions stored.
    pub executions: usize,
    /// Wall time to store them through `Storage::create_execution` (one commit each).
    pub store_secs: f64,
    /// Bytes of the database (and WAL) after storing.
    pub db_bytes: u64,
    /// (VmRSS, VmHWM) KiB right after start.
    pub idle_kib: (u64, u64),
    /// (VmRSS, VmHWM) KiB after reading every status and log.
    pub after_reads_kib: (u64, u64),
    /// (VmRSS, VmHWM) KiB after the accepted-POST run on the fast clock.
    pub after_posts_kib: (u64, u64),
    /// The status+log sweep.
    pub sweep: Scenario,
    /// Accepted POSTs on the fast clock.
    pub clocked: Scenario,
}

/// Runs everything and returns the numbers (progress goes to stderr).
///
/// # Errors
/// A server does not start, a setup request fails, or SQLite fails.
pub fn run(opts: &Options) -> anyhow::Result<Report> {
    if !opts.hub_bin.is_file() {
        bail!(
            "no hub binary at {} (cargo build --release -p cookwala-cli)",
            opts.hub_bin.display()
        );
    }
    std::fs::create_dir_all(&opts.work)?;
    let tmp = tempfile::Builder::new().prefix("cw-hub-bench.").tempdir_in(&opts.work)?;
    let mut report = Report { connections: opts.connections, ..Report::default() };

    progress(format_args!("simulation CPU, {} run(s) per recipe", opts.sim_runs));
    report.sims = simcpu::measure_all(opts.sim_runs)?;

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    (report.scenarios, report.commits) = load_phase(opts, &rt, tmp.path())?;
    report.rss = Some(rss_phase(opts, &rt, tmp.path())?);
    Ok(report)
}

/// One SQLite ceiling run in `dir` (`when` labels it in the report).
fn commit_ceiling(
    opts: &Options,
    dir: &Path,
    rows: usize,
    when: &'static str,
) -> anyhow::Result<Commits> {
    progress(format_args!(
        "SQLite durable commits, {rows} row(s) per commit, {:.1} s in {} ({when})",
        opts.ceiling_secs,
        dir.display()
    ));
    let cpu0 = process_cpu_s();
    let mut c = ceiling::sqlite_commits(
        dir,
        rows,
        opts.row_bytes,
        Duration::from_secs_f64(opts.ceiling_secs),
        None,
    )?;
    c.cpu_s = process_cpu_s() - cpu0;
    c.when = when;
    progress(format_args!(
        "  {:.0} commits/s, {:.0} rows/s, p50 {:.3} ms, p99 {:.3} ms, {:.0} us CPU per commit",
        c.commits_per_sec(),
        c.rows_per_sec(),
        c.quantile_ms(0.5),
        c.quantile_ms(0.99),
        c.cpu_us_per_commit()
    ));
    Ok(c)
}

fn load_phase(
    opts: &Options,
    rt: &tokio::runtime::Runtime,
    tmp: &Path,
) -> anyhow::Result<(Vec<Scenario>, Vec<Commits>)> {
    let data = tmp.join("hub-load");
    progress(format_args!(
        "starting {} serve (speed {FROZEN_SPEED}) on {}",
        opts.hub_bin.display(),
        data.display()
    ));
    let hub = spawn_hub(opts, &data, FROZEN_SPEED, "hub")?;
    let addr = hub.addr;

    // A stored (final) execution, and a live one that keeps the device busy.
    let start = |id: &str| -> anyhow::Result<Reply> {
        let key = format!("{id}-key");
        let req =
            load::post("/v1/executions", Some(TOKEN), Some(&key), &execute_request(id, &key)?);
        one_ok(rt, addr, req, 202)
    };
    let stop = |id: &str| -> anyhow::Result<Reply> {
        let req = load::post(
            &format!("/v1/executions/{id}/stop"),
            Some(TOKEN),
            Some(&format!("{id}-stop")),
            r#"{"reason":"bench"}"#,
        );
        one_ok(rt, addr, req, 202)
    };
    start("setup-stored")?;
    stop("setup-stored")?;
    let live = start("setup-live")?;
    if state_of(&live) != "accepted" {
        bail!("setup: the live execution is {}, not accepted", state_of(&live));
    }
    let caps = one_ok(rt, addr, load::get("/v1/capabilities", None), 200)?;
    let stored = one_ok(rt, addr, load::get("/v1/executions/setup-stored", Some(TOKEN)), 200)?;
    let live = one_ok(rt, addr, load::get("/v1/executions/setup-live", Some(TOKEN)), 200)?;

    let bodies = BareBodies {
        capabilities: canned(&caps),
        statuses: [
            ("setup-stored".to_owned(), canned(&stored)),
            ("setup-live".to_owned(), canned(&live)),
        ]
        .into_iter()
        .collect(),
    };
    let bodies_file = tmp.join("bare-bodies.json");
    std::fs::write(&bodies_file, serde_json::to_vec(&bodies.to_json())?)?;
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.arg("bare-serve").arg(&bodies_file);
    let bare = Server::spawn("bare axum", cmd, &tmp.join("bare.stderr.log"))?;
    // The bare server must answer byte for byte what the hub answered.
    for (path, want) in [
        ("/v1/capabilities", &caps),
        ("/v1/executions/setup-stored", &stored),
        ("/v1/executions/setup-live", &live),
    ] {
        let got = one_ok(rt, bare.addr, load::get(path, None), 200)?;
        if got.body != want.body || got.header("etag") != want.header("etag") {
            bail!("the bare server's {path} differs from the hub's");
        }
    }

    let n = opts.connections;
    let mut out = Vec::new();
    let gets = [
        ("GET /v1/capabilities", "/v1/capabilities"),
        ("GET /v1/executions/{id} (stored, final)", "/v1/executions/setup-stored"),
        ("GET /v1/executions/{id} (live)", "/v1/executions/setup-live"),
    ];
    for (name, path) in gets {
        out.push(scenario(
            rt,
            name,
            "hub",
            &hub,
            n,
            opts,
            make_get(path, Some(TOKEN)),
            expect_status(200),
        )?);
        out.push(scenario(
            rt,
            name,
            "bare",
            &bare,
            n,
            opts,
            make_get(path, None),
            expect_status(200),
        )?);
    }
    drop(bare);

    // The commit ceilings right before the durable POSTs (and the 1-row one again right
    // after them): the disk is shared, so its rate drifts with whatever else runs.
    let ceilings_dir = tmp.join("ceilings");
    std::fs::create_dir_all(&ceilings_dir)?;
    let mut commits = vec![
        commit_ceiling(opts, &ceilings_dir.join("before-1"), 1, "before the POSTs")?,
        commit_ceiling(
            opts,
            &ceilings_dir.join("before-n"),
            opts.batch_rows.max(2),
            "before the POSTs",
        )?,
    ];

    // Every POST passes every precheck and is refused `busy` (the live execution holds the
    // device): a 202 with a stored refused execution and its idempotency record, one commit.
    out.push(scenario(
        rt,
        "POST /v1/executions (refused busy)",
        "hub",
        &hub,
        n,
        opts,
        make_start("busy", false)?,
        expect_states(vec![Some("refused")]),
    )?);
    // The same with one connection: the service time of one refused POST, nothing queued.
    out.push(scenario(
        rt,
        "POST /v1/executions (refused busy)",
        "hub",
        &hub,
        1,
        opts,
        make_start("busy1", false)?,
        expect_states(vec![Some("refused")]),
    )?);
    stop("setup-live")?;
    // Accepted, then stopped at once so the single device is free for the next one: one
    // connection (a second would only collect `busy` refusals); the start is timed.
    out.push(scenario(
        rt,
        "POST /v1/executions (accepted; + stop)",
        "hub",
        &hub,
        1,
        opts,
        make_start("acc", true)?,
        expect_states(vec![Some("accepted"), Some("stopped")]),
    )?);
    let (rss, hwm) = hub.rss_kib()?;
    progress(format_args!("load hub RSS {rss} KiB (peak {hwm} KiB)"));
    drop(hub);
    commits.push(commit_ceiling(opts, &ceilings_dir.join("after-1"), 1, "after the POSTs")?);
    Ok((out, commits))
}

/// Stores `n` completed executions of [`RECIPE`] in `data/hub.sqlite3` through the public
/// `Storage` trait (one transaction each, as the hub writes them).
///
/// # Errors
/// The simulation or the storage fails.
pub fn populate(data: &Path, n: usize) -> anyhow::Result<()> {
    use cookwala_hub::storage::{ExecutionRecord, IdempotencyRecord, SqliteStorage, Storage};
    const PLACEHOLDER: &str = "rss-00000000";
    let device = cookwala_sim::builtin::DEFAULT_DEVICE;
    let recipe = cookwala_sim::builtin::recipe(RECIPE).context("built-in recipe")?;
    let mut config = cookwala_sim::SimConfig::new(
        recipe,
        cookwala_sim::builtin::device(device).context("built-in device")?,
    );
    config.execution_id = PLACEHOLDER.to_owned();
    config.request_id = PLACEHOLDER.to_owned();
    let mut sim = cookwala_sim::Simulation::new(config).map_err(|e| anyhow::anyhow!("{e}"))?;
    while !sim.is_final() {
        sim.advance(3_600_000);
    }
    let text = |v: &canonical_json::Value| -> anyhow::Result<String> {
        Ok(String::from_utf8(canonical_json::to_jcs(v)?)?)
    };
    let status = text(&sim.status())?;
    let log = text(&sim.log().context("final log")?)?;
    // The hub stores the documents each execution ran with.
    let recipe_doc = text(&cookwala_sim::builtin::recipe(RECIPE).context("built-in recipe")?)?;
    let device_doc = text(&cookwala_sim::builtin::device(device).context("built-in device")?)?;
    let request = execute_request(PLACEHOLDER, &format!("{PLACEHOLDER}-key"))?;
    let run_config = format!(
        r#"{{"device":"{device}","humanPresent":false,"recipe":"{RECIPE}","seed":"1","startUnixMs":1767225600000}}"#
    );
    std::fs::create_dir_all(data)?;
    let storage = SqliteStorage::open(&data.join(HUB_DB))?;
    for i in 0..n {
        let id = format!("rss-{i:08}");
        let rec = ExecutionRecord {
            id: id.clone(),
            request: request.replace(PLACEHOLDER, &id),
            config: run_config.clone(),
            status: status.replace(PLACEHOLDER, &id),
            seq: sim.seq(),
            state: sim.state().as_str().to_owned(),
            is_final: true,
            log: Some(log.replace(PLACEHOLDER, &id)),
            recipe_doc: Some(recipe_doc.clone()),
            device_doc: Some(device_doc.clone()),
            limits_doc: None,
        };
        let idem = IdempotencyRecord {
            key: format!("{id}-key"),
            digest: format!(
                "sha256:{}",
                canonical_json::digest::sha256_hex(rec.request.as_bytes())
            ),
            status: 202,
            body: rec.status.clone(),
        };
        storage.create_execution(&rec, Some(&idem))?;
    }
    Ok(())
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|it| it.flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum())
        .unwrap_or(0)
}

fn rss_phase(
    opts: &Options,
    rt: &tokio::runtime::Runtime,
    tmp: &Path,
) -> anyhow::Result<RssReport> {
    let data = tmp.join("hub-rss");
    let n = opts.rss_executions;
    progress(format_args!("storing {n} completed executions in {}", data.display()));
    let t0 = Instant::now();
    populate(&data, n)?;
    let store_secs = t0.elapsed().as_secs_f64();
    let db_bytes = dir_bytes(&data);
    progress(format_args!(
        "  {store_secs:.1} s ({:.0}/s), {:.1} MiB on disk",
        n as f64 / store_secs,
        db_bytes as f64 / 1048576.0
    ));
    let hub = spawn_hub(opts, &data, FAST_SPEED, "hub (fast clock)")?;
    // Let the clock and the runtime settle.
    std::thread::sleep(Duration::from_millis(500));
    let idle_kib = hub.rss_kib()?;

    // Read every stored status and log once.
    let next = Arc::new(AtomicU64::new(0));
    let total = n.max(1) as u64;
    let make: MakeFn = Arc::new(move |_| {
        let i = next.fetch_add(1, Ordering::Relaxed) % total;
        vec![
            load::get(&format!("/v1/executions/rss-{i:08}"), Some(TOKEN)),
            load::get(&format!("/v1/executions/rss-{i:08}/log"), Some(TOKEN)),
        ]
    });
    let sweep_plan = Plan {
        connections: opts.connections.min(8),
        duration: Duration::from_secs(600),
        max_iterations: Some(total),
    };
    let (s0, g0) = (hub.cpu_secs()?, process_cpu_s());
    let sweep_out = rt.block_on(load::run(hub.addr, sweep_plan, make, expect_status(200)))?;
    let sweep = Scenario {
        name: format!("GET status + log of each of {n} stored"),
        server: "hub",
        connections: sweep_plan.connections,
        outcome: sweep_out,
        server_cpu_s: hub.cpu_secs()? - s0,
        gen_cpu_s: process_cpu_s() - g0,
    };
    let after_reads_kib = hub.rss_kib()?;
    progress(format_args!(
        "RSS idle {} KiB, after reading all {} KiB (peak {} KiB); sweep {:.0} iterations/s, {} errors",
        idle_kib.0,
        after_reads_kib.0,
        after_reads_kib.1,
        sweep.outcome.per_sec(),
        sweep.outcome.errors
    ));

    // Accepted executions on a fast clock: each runs to its end on the next clock step.
    let clocked = scenario(
        rt,
        "POST /v1/executions (fast clock, accepted or busy)",
        "hub",
        &hub,
        4,
        &Options { warmup_secs: 0.0, ..opts.clone() },
        make_start("clk", false)?,
        expect_states(vec![None]),
    )?;
    let after_posts_kib = hub.rss_kib()?;
    drop(hub);
    Ok(RssReport {
        executions: n,
        store_secs,
        db_bytes,
        idle_kib,
        after_reads_kib,
        after_posts_kib,
        sweep,
        clocked,
    })
}

/// The raw records, one JSON object each.
pub fn records(report: &Report) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for s in &report.sims {
        out.push(json!({
            "kind": "sim", "recipe": s.recipe, "device": s.device, "final_state": s.final_state,
            "simulated_ms": s.simulated_ms, "cpu_ns": s.cpu_ns, "wall_ns": s.wall_ns,
            "runs": s.runs, "cpu_ms_per_sim_hour": s.cpu_ms_per_sim_hour(),
        }));
    }
    for c in &report.commits {
        out.push(json!({
            "kind": "sqlite", "when": c.when, "rows_per_commit": c.rows_per_commit, "row_bytes": c.row_bytes,
            "commits": c.commits, "secs": c.elapsed.as_secs_f64(),
            "commits_per_s": c.commits_per_sec(), "rows_per_s": c.rows_per_sec(),
            "p50_ms": c.quantile_ms(0.5), "p99_ms": c.quantile_ms(0.99), "cpu_s": c.cpu_s,
        }));
    }
    for s in &report.scenarios {
        out.push(s.record());
    }
    if let Some(r) = &report.rss {
        out.push(json!({
            "kind": "rss", "executions": r.executions, "store_secs": r.store_secs,
            "db_bytes": r.db_bytes, "idle_kib": [r.idle_kib.0, r.idle_kib.1],
            "after_reads_kib": [r.after_reads_kib.0, r.after_reads_kib.1],
            "after_posts_kib": [r.after_posts_kib.0, r.after_posts_kib.1],
        }));
        out.push(r.sweep.record());
        out.push(r.clocked.record());
    }
    out
}

fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".to_owned();
    }
    if x >= 100.0 {
        let whole = x.round() as u64;
        let digits = whole.to_string();
        let mut out = String::new();
        for (i, ch) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(ch);
        }
        out
    } else {
        format!("{x:.3}").trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

fn target_line(out: &mut String, label: &str, value: Option<f64>, ok: bool, shown: &str) {
    let status = match value {
        None => "n/a ",
        Some(_) if ok => "MET ",
        Some(_) => "MISS",
    };
    out.push_str(&format!("  [{status}] {label:<66} {shown:>14}\n"));
}

/// The human-readable table (the same layout as `bench/run.sh`).
pub fn table(report: &Report) -> String {
    let mut t = String::new();
    // The run with the most connections (the refused POST also runs with one).
    let find = |name: &str, server: &str| {
        report
            .scenarios
            .iter()
            .filter(|s| s.name == name && s.server == server)
            .max_by_key(|s| s.connections)
    };
    t.push_str(&format!(
        "\nHub load on loopback (hub = `cookwala serve`, bare = axum returning the hub's bytes;\n\
         one load-generator thread, keep-alive, {} connections unless shown; latency of the\n\
         timed request; CPU = cores busy (CPU s per s), srv us/req = server CPU per request)\n",
        report.connections
    ));
    t.push_str(&format!(
        "  {:<44} {:<6} {:>5} {:>10} {:>8} {:>8} {:>6} {:>7} {:>10} {:>7}\n",
        "scenario",
        "server",
        "conn",
        "req/s",
        "p50 ms",
        "p99 ms",
        "errors",
        "srv CPU",
        "srv us/req",
        "gen CPU"
    ));
    let mut rows: Vec<&Scenario> = report.scenarios.iter().collect();
    if let Some(r) = &report.rss {
        rows.push(&r.sweep);
        rows.push(&r.clocked);
    }
    for s in rows {
        let o = &s.outcome;
        let secs = o.elapsed.as_secs_f64().max(1e-9);
        t.push_str(&format!(
            "  {:<44} {:<6} {:>5} {:>10} {:>8} {:>8} {:>6} {:>7.2} {:>10} {:>7.2}\n",
            s.name,
            s.server,
            s.connections,
            fmt_num(o.per_sec()),
            fmt_num(o.quantile_ms(0.5)),
            fmt_num(o.quantile_ms(0.99)),
            o.errors,
            s.server_cpu_s / secs,
            fmt_num(s.server_cpu_s * 1e6 / (o.requests.max(1) as f64)),
            s.gen_cpu_s / secs,
        ));
        let labels: Vec<String> = o
            .labels
            .iter()
            .filter(|(l, _)| **l != "ok")
            .map(|(l, n)| format!("{l} {:.0}/s", *n as f64 / secs))
            .collect();
        if !labels.is_empty() {
            t.push_str(&format!("      replies: {}\n", labels.join(", ")));
        }
        if let Some(e) = &o.first_error {
            t.push_str(&format!(
                "      first error: {}\n",
                e.chars().take(160).collect::<String>()
            ));
        }
    }

    t.push_str(&format!(
        "\nSQLite durable commits on the hub's disk (WAL, synchronous=FULL, one connection,\n\
         {}-byte rows)\n",
        report.commits.first().map_or(0, |c| c.row_bytes)
    ));
    t.push_str(&format!(
        "  {:<34} {:>10} {:>10} {:>8} {:>8} {:>14}\n",
        "rows per commit", "commits/s", "rows/s", "p50 ms", "p99 ms", "CPU us/commit"
    ));
    for c in &report.commits {
        t.push_str(&format!(
            "  {:<34} {:>10} {:>10} {:>8} {:>8} {:>14}\n",
            format!("{} ({})", c.rows_per_commit, c.when),
            fmt_num(c.commits_per_sec()),
            fmt_num(c.rows_per_sec()),
            fmt_num(c.quantile_ms(0.5)),
            fmt_num(c.quantile_ms(0.99)),
            fmt_num(c.cpu_us_per_commit()),
        ));
    }

    if let Some(r) = &report.rss {
        t.push_str(&format!(
            "\nHub RSS with {} completed executions stored ({:.1} MiB database; stored through\n\
             Storage::create_execution in {:.1} s = {} executions/s, one commit each)\n",
            r.executions,
            r.db_bytes as f64 / 1048576.0,
            r.store_secs,
            fmt_num(r.executions as f64 / r.store_secs.max(1e-9)),
        ));
        for (label, (rss, hwm)) in [
            ("idle after start", r.idle_kib),
            ("after reading every status and log", r.after_reads_kib),
            ("after the fast-clock POST run", r.after_posts_kib),
        ] {
            t.push_str(&format!(
                "  {label:<40} VmRSS {:>7.1} MiB   peak {:>7.1} MiB\n",
                rss as f64 / 1024.0,
                hwm as f64 / 1024.0
            ));
        }
    }

    t.push_str(&format!(
        "\nSimulation CPU, start to end (steps of {} s simulated; fastest of runs)\n",
        simcpu::STEP_MS / 1000
    ));
    t.push_str(&format!(
        "  {:<22} {:<16} {:<10} {:>9} {:>9} {:>14}\n",
        "recipe", "device", "final", "sim min", "CPU ms", "CPU ms/sim h"
    ));
    for s in &report.sims {
        t.push_str(&format!(
            "  {:<22} {:<16} {:<10} {:>9.1} {:>9.3} {:>14.3}\n",
            s.recipe,
            s.device,
            s.final_state,
            s.simulated_ms as f64 / 60_000.0,
            s.cpu_ns as f64 / 1e6,
            s.cpu_ms_per_sim_hour()
        ));
    }

    t.push_str("\nTargets (reported, never enforced)\n");
    for (name, short) in [
        ("GET /v1/capabilities", "GET capabilities"),
        ("GET /v1/executions/{id} (stored, final)", "GET status (stored)"),
        ("GET /v1/executions/{id} (live)", "GET status (live)"),
    ] {
        let ratio = match (find(name, "hub"), find(name, "bare")) {
            (Some(h), Some(b)) if h.outcome.per_sec() > 0.0 => {
                Some(b.outcome.per_sec() / h.outcome.per_sec())
            }
            _ => None,
        };
        let shown = ratio.map_or("n/a".to_owned(), |r| format!("bare/hub {r:.2}x"));
        target_line(
            &mut t,
            &format!("{short}: req/s within 2x of the bare handler"),
            ratio,
            ratio.is_some_and(|r| r <= 2.0),
            &shown,
        );
    }
    // The 1-row ceiling: the mean of the runs before and after the POSTs.
    let singles: Vec<f64> = report
        .commits
        .iter()
        .filter(|c| c.rows_per_commit == 1)
        .map(Commits::commits_per_sec)
        .collect();
    let single = (!singles.is_empty()).then(|| singles.iter().sum::<f64>() / singles.len() as f64);
    let batch = report.commits.iter().find(|c| c.rows_per_commit > 1);
    let batched = batch.map(Commits::rows_per_sec);
    for (name, short, commits_per) in [
        ("POST /v1/executions (refused busy)", "durable POST (refused busy, 1 commit)", 1.0),
        (
            "POST /v1/executions (accepted; + stop)",
            "durable POST (accepted + stop, 2 commits)",
            2.0,
        ),
    ] {
        let rate = find(name, "hub").map(|s| s.outcome.per_sec());
        let ratio = rate.zip(single).map(|(r, c)| r / c);
        let shown = ratio.map_or("n/a".to_owned(), |r| format!("{:.0}%", r * 100.0));
        target_line(
            &mut t,
            &format!("{short} >= 50% of 1-row commit ceiling"),
            ratio,
            ratio.is_some_and(|r| r >= 0.5),
            &shown,
        );
        let commit_ratio = rate.zip(single).map(|(r, c)| r * commits_per / c);
        if commits_per > 1.0 {
            let shown = commit_ratio.map_or("n/a".to_owned(), |r| format!("{:.0}%", r * 100.0));
            target_line(
                &mut t,
                "  (its commits/s vs the 1-row commit ceiling)",
                commit_ratio,
                commit_ratio.is_some_and(|r| r >= 0.5),
                &shown,
            );
        }
        let vs_batch = rate.zip(batched).map(|(r, c)| r / c);
        let shown = vs_batch.map_or("n/a".to_owned(), |r| format!("{:.1}%", r * 100.0));
        target_line(
            &mut t,
            &format!(
                "  (vs the {}-row group-commit ceiling, rows/s)",
                batch.map_or(0, |c| c.rows_per_commit)
            ),
            vs_batch,
            vs_batch.is_some_and(|r| r >= 0.5),
            &shown,
        );
    }
    if let Some(r) = &report.rss {
        let peak = r.after_reads_kib.0.max(r.after_reads_kib.1).max(r.after_posts_kib.1);
        let mib = peak as f64 / 1024.0;
        target_line(
            &mut t,
            &format!("hub RSS < 100 MiB with {} stored executions (peak)", r.executions),
            Some(mib),
            mib < 100.0,
            &format!("{mib:.1} MiB"),
        );
    }
    let worst = report
        .sims
        .iter()
        .map(simcpu::SimCost::cpu_ms_per_sim_hour)
        .fold(None, |acc: Option<f64>, x| Some(acc.map_or(x, |a| a.max(x))));
    target_line(
        &mut t,
        "60-minute recipe simulates in < 20 ms CPU (worst recipe, per sim hour)",
        worst,
        worst.is_some_and(|w| w < 20.0),
        &worst.map_or("n/a".to_owned(), |w| format!("{w:.2} ms")),
    );
    t
}

/// `cw-bench bare-serve BODIES.json`: serves [`ceiling::bare_app`] on 127.0.0.1:0 with a
/// multi-thread runtime (as `cookwala serve` does) until killed, after printing its address.
///
/// # Errors
/// The bodies file or the listener fails.
pub fn bare_serve(bodies: &Path) -> anyhow::Result<()> {
    let text = std::fs::read(bodies).with_context(|| format!("reading {}", bodies.display()))?;
    let bodies = BareBodies::from_json(&serde_json::from_slice(&text)?)?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            writeln!(out, "bare axum listening on http://{addr}")?;
            out.flush()?;
        }
        axum::serve(listener, ceiling::bare_app(bodies)).await?;
        anyhow::Ok(())
    })
}
