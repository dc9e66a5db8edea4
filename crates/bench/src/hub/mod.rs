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
mod report;
mod rss;
pub mod simcpu;

pub use report::{records, table};
pub use rss::populate;
use rss::rss_phase;

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
    /// Wall time to store them through `Storage::commit` (one commit each).
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

/// Durable POSTs against hub replicas sharing one store (`cw-bench fleet-load`, driven by
/// `bench/fleet.sh`): `conns` keep-alive connections per replica for `secs` seconds, every
/// POST a fresh execution on the root device (the first is accepted, the rest refused `busy`:
/// one durable commit each — execution row, idempotency record, event). Returns POSTs per
/// second over all replicas and the outcome of each.
///
/// # Errors
/// A load task failed to run, or a replica answered something else than 202.
pub fn fleet_load(
    addrs: &[SocketAddr],
    conns: usize,
    secs: f64,
    prefix: &str,
) -> anyhow::Result<(f64, Vec<Outcome>)> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let plan = Plan {
        connections: conns,
        duration: std::time::Duration::from_secs_f64(secs),
        max_iterations: None,
    };
    let outcomes = rt.block_on(async {
        let mut tasks = Vec::new();
        for (i, addr) in addrs.iter().enumerate() {
            let make = make_start(&format!("{prefix}-r{i}"), false)?;
            let check = expect_states(vec![None]);
            tasks.push(tokio::spawn(load::run(*addr, plan, make, check)));
        }
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await??);
        }
        anyhow::Ok(out)
    })?;
    if let Some(o) = outcomes.iter().find(|o| o.errors > 0) {
        anyhow::bail!("a replica failed requests: {:?}", o.first_error);
    }
    let total: f64 = outcomes.iter().map(Outcome::per_sec).sum();
    Ok((total, outcomes))
}
