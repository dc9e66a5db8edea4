//! CPU time to simulate each built-in recipe from start to end with `cookwala_sim`.
//!
//! One run = `Simulation::new` (the dry run included) on the recipe's own device, then
//! `advance` in steps of [`STEP_MS`] of simulated time, confirming at once whenever the
//! execution waits for a person (a person at the stove), until the state is final, then the
//! final status and log (what the hub stores). The time is the calling thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`), so nothing else running on the machine is counted.

use std::time::Instant;

use anyhow::Context;
use cookwala_sim::builtin::{self, Example};
use cookwala_sim::{SimConfig, Simulation};
use rustix::time::{ClockId, clock_gettime};

/// Simulated milliseconds per `advance` call (one minute).
pub const STEP_MS: u64 = 60_000;

/// A safety bound on simulated time (two days) so a recipe that never ends cannot hang the
/// bench.
const MAX_SIM_MS: u64 = 48 * 3_600_000;

/// What one recipe costs.
#[derive(Clone, Debug)]
pub struct SimCost {
    /// The recipe id.
    pub recipe: &'static str,
    /// The device it ran on.
    pub device: &'static str,
    /// The final state (`completed`, ...).
    pub final_state: String,
    /// Simulated milliseconds from start to the final state.
    pub simulated_ms: u64,
    /// CPU nanoseconds of the fastest run (start to end, log included).
    pub cpu_ns: u64,
    /// Wall nanoseconds of that run.
    pub wall_ns: u64,
    /// Runs taken (the minimum is reported).
    pub runs: usize,
}

impl SimCost {
    /// CPU milliseconds per simulated hour.
    pub fn cpu_ms_per_sim_hour(&self) -> f64 {
        let hours = self.simulated_ms as f64 / 3_600_000.0;
        if hours > 0.0 { self.cpu_ns as f64 / 1e6 / hours } else { f64::NAN }
    }
}

fn thread_cpu_ns() -> u64 {
    let t = clock_gettime(ClockId::ThreadCPUTime);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

fn run_once(example: &Example) -> anyhow::Result<(String, u64)> {
    let recipe = builtin::recipe(example.id).context("built-in recipe")?;
    let device = builtin::device(example.device).context("built-in device")?;
    let mut config = SimConfig::new(recipe, device);
    config.human_present = example.human_present;
    let mut sim = Simulation::new(config).map_err(|e| anyhow::anyhow!("{}: {e}", example.id))?;
    while !sim.is_final() && sim.now_ms() < MAX_SIM_MS {
        sim.advance(STEP_MS);
        if sim.state().as_str() == "needs_human" {
            sim.confirm_human().map_err(|e| anyhow::anyhow!("{}: {e}", example.id))?;
        }
    }
    std::hint::black_box((sim.status(), sim.log()));
    Ok((sim.state().as_str().to_owned(), sim.now_ms()))
}

/// Simulates `example` `runs` times and keeps the fastest run.
///
/// # Errors
/// The recipe or its device is missing, or the simulation refuses to start.
pub fn measure(example: &Example, runs: usize) -> anyhow::Result<SimCost> {
    let mut best: Option<(u64, u64)> = None;
    let mut last = (String::new(), 0);
    for _ in 0..runs.max(1) {
        let (cpu0, wall0) = (thread_cpu_ns(), Instant::now());
        last = run_once(example)?;
        let cpu = thread_cpu_ns().saturating_sub(cpu0);
        let wall = u64::try_from(wall0.elapsed().as_nanos()).unwrap_or(u64::MAX);
        if best.is_none_or(|(c, _)| cpu < c) {
            best = Some((cpu, wall));
        }
    }
    let (cpu_ns, wall_ns) = best.unwrap_or_default();
    Ok(SimCost {
        recipe: example.id,
        device: example.device,
        final_state: last.0,
        simulated_ms: last.1,
        cpu_ns,
        wall_ns,
        runs: runs.max(1),
    })
}

/// Every built-in recipe.
///
/// # Errors
/// See [`measure`].
pub fn measure_all(runs: usize) -> anyhow::Result<Vec<SimCost>> {
    builtin::RECIPES.iter().map(|e| measure(e, runs)).collect()
}
