//! A plain `Instant` harness: calibrate an iteration count, then take the median of several runs.

use std::time::{Duration, Instant};

use serde_json::json;

/// How long to measure.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Target wall time of one run (the iteration count is calibrated to reach it).
    pub run_secs: f64,
    /// Number of timed runs; the median is reported.
    pub runs: usize,
}

impl Config {
    /// About 1.5 s per measurement: 5 runs of 0.3 s.
    pub const DEFAULT: Config = Config { run_secs: 0.3, runs: 5 };
    /// One tiny iteration: for smoke tests only, the numbers mean nothing.
    pub const SMOKE: Config = Config { run_secs: 0.0, runs: 1 };
}

/// The outcome of one measurement.
#[derive(Clone, Debug)]
pub struct Sample {
    /// Iterations per timed run.
    pub iters: u64,
    /// Seconds per iteration of each run, sorted ascending.
    pub secs_per_iter: Vec<f64>,
}

impl Sample {
    /// Median seconds per iteration.
    pub fn median(&self) -> f64 {
        let n = self.secs_per_iter.len();
        match n {
            0 => f64::NAN,
            _ if n % 2 == 1 => self.secs_per_iter[n / 2],
            _ => (self.secs_per_iter[n / 2 - 1] + self.secs_per_iter[n / 2]) / 2.0,
        }
    }
}

/// Times `f` (one call = one iteration) and returns the per-iteration times of `config.runs` runs.
pub fn measure(config: Config, mut f: impl FnMut()) -> Sample {
    // Warm up and calibrate: grow the iteration count until one batch takes a tenth of a run.
    let mut iters: u64 = 1;
    let calibrate_to = config.run_secs / 10.0;
    loop {
        let elapsed = time_batch(iters, &mut f);
        let secs = elapsed.as_secs_f64();
        if secs >= calibrate_to || iters >= 1 << 40 {
            let per_iter = secs / iters as f64;
            if per_iter > 0.0 {
                let wanted = (config.run_secs / per_iter).ceil();
                iters = if wanted.is_finite() && wanted >= 1.0 { wanted as u64 } else { 1 };
            }
            break;
        }
        iters = iters.saturating_mul(if secs * 100.0 < calibrate_to { 10 } else { 2 });
    }
    let mut secs_per_iter: Vec<f64> = (0..config.runs.max(1))
        .map(|_| time_batch(iters, &mut f).as_secs_f64() / iters as f64)
        .collect();
    secs_per_iter.sort_by(f64::total_cmp);
    Sample { iters, secs_per_iter }
}

/// Measures several closures whose *ratio* to the first matters: each is calibrated on its own,
/// then every run times one batch of each in turn, so a machine that speeds up or slows down
/// during the measurement moves all of them alike. Returns, per closure, its sample and the
/// median over runs of its time divided by the first closure's time in the same run.
pub fn measure_interleaved(config: Config, fs: &mut [&mut dyn FnMut()]) -> Vec<(Sample, f64)> {
    let iters: Vec<u64> =
        fs.iter_mut().map(|f| measure(Config { runs: 1, ..config }, f).iters).collect();
    let mut runs: Vec<Vec<f64>> = vec![Vec::new(); fs.len()];
    for _ in 0..config.runs.max(1) {
        for ((f, &iters), times) in fs.iter_mut().zip(&iters).zip(runs.iter_mut()) {
            times.push(time_batch(iters, f).as_secs_f64() / iters as f64);
        }
    }
    let first = runs.first().cloned().unwrap_or_default();
    runs.into_iter()
        .zip(iters)
        .map(|(mut secs_per_iter, iters)| {
            let mut ratios: Vec<f64> =
                secs_per_iter.iter().zip(&first).map(|(x, base)| x / base).collect();
            ratios.sort_by(f64::total_cmp);
            secs_per_iter.sort_by(f64::total_cmp);
            let ratio = Sample { iters, secs_per_iter: ratios }.median();
            (Sample { iters, secs_per_iter }, ratio)
        })
        .collect()
}

fn time_batch(iters: u64, f: &mut impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        f();
    }
    start.elapsed()
}

/// What one iteration processes, for the throughput figures.
#[derive(Clone, Debug)]
pub struct Work<'a> {
    /// Document set (or fixture) name.
    pub set: &'a str,
    /// Implementation (`ours`, `serde_json`, `ed25519-dalek`, ...).
    pub implementation: &'a str,
    /// Operation (`hash`, `parse+hash`, `to_vec`, `verify`, ...).
    pub op: &'a str,
    /// Documents (or operations) per iteration.
    pub docs: usize,
    /// Canonical bytes per iteration (the MB/s denominator).
    pub bytes: usize,
}

/// The JSON line `cw-bench` prints for one measurement (same shape as `bench/py_jcs.py`).
pub fn record(work: &Work<'_>, sample: &Sample) -> serde_json::Value {
    let median = sample.median();
    let docs_per_s = work.docs as f64 / median;
    let mb_per_s = work.bytes as f64 / median / 1e6;
    json!({
        "set": work.set,
        "impl": work.implementation,
        "op": work.op,
        "docs": work.docs,
        "bytes": work.bytes,
        "iters": sample.iters,
        "runs": sample.secs_per_iter.len(),
        "median_s": median,
        "min_s": sample.secs_per_iter.first().copied().unwrap_or(f64::NAN),
        "max_s": sample.secs_per_iter.last().copied().unwrap_or(f64::NAN),
        "docs_per_s": docs_per_s,
        "mb_per_s": mb_per_s,
    })
}
