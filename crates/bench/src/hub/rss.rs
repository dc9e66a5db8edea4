//! The RSS phase: executions stored through the public `Storage` trait, then the hub's
//! resident memory idle, after reading them all, and after accepted POSTs on a fast clock.

use super::*;

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
            admission: None,
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
        storage.commit(&cookwala_hub::storage::Commit {
            create: Some(rec),
            idempotency: Some(idem),
            ..cookwala_hub::storage::Commit::default()
        })?;
    }
    Ok(())
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|it| it.flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum())
        .unwrap_or(0)
}

pub(super) fn rss_phase(
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
