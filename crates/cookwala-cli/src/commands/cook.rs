//! `cookwala cook`: one execution on the simulator, with live progress and a plot.
//!
//! The recipe (a built-in id or a file) is dry-run on the device first; a refusal is printed
//! and exits 1 before anything heats. Then the `cookwala-sim` executor runs it on simulated
//! time — as fast as possible, or `--speed N` times real time (only this command sleeps; the
//! simulator never reads a clock). A person marked present (`--human-present`) does the steps
//! the plan gives them and confirms a timed-out step after half a simulated minute; with nobody
//! present such a wait ends in a safe stop.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use canonical_json::{Map, Value};
use cookwala::execution::ExecutionState;
use cookwala_sim::{EventKind, Fault, FaultKind, SimConfig, SimEvent, Simulation, Trace, builtin};

use crate::input::read_json;
use crate::output::pretty;

/// Cook a recipe on the simulator: dry run, then live progress, a log and a plot
///
/// RECIPE is a built-in id (red-lentil-soup, vegetable-stock, chickpea-fritters,
/// garlic-greens, oat-honey-loaf, cucumber-herb-salad) or a file. The device defaults to the
/// recipe's built-in device, else the hob robot. Exit 0 when the execution completes.
#[derive(Debug, clap::Args)]
pub struct CookArgs {
    /// Built-in recipe id or recipe file
    pub recipe: String,
    /// Built-in device id (sim-hob-robot, sim-oven, sim-counter-arm) or capabilities file
    #[arg(long)]
    pub device: Option<String>,
    /// A person stays in the kitchen (needed for hot oil, open pans and blades)
    #[arg(long)]
    pub human_present: bool,
    /// Run N times real time (default: as fast as possible)
    #[arg(long)]
    pub speed: Option<f64>,
    /// Sensor-noise seed (same seed, same run)
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Inject a fault into the first heated step: sensor, overheat or timeout
    #[arg(long, value_parser = parse_fault)]
    pub fault: Option<FaultKind>,
    /// Write an SVG plot of every reading against its envelope band
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Print the final status, log and incidents as JSON
    #[arg(long)]
    pub json: bool,
}

const CHUNK_MS: u64 = 1_000;
const HUMAN_DELAY_MS: u64 = 30_000;
const NOBODY_WAIT_MS: u64 = 600_000;
const LIMIT_MS: u64 = 24 * 3_600_000;

fn load(what: &str, id_or_file: &str, builtin: fn(&str) -> Option<Value>) -> Result<Value> {
    if let Some(doc) = builtin(id_or_file) {
        return Ok(doc);
    }
    let path = Path::new(id_or_file);
    if !path.exists() {
        anyhow::bail!("{what} {id_or_file:?} is neither a built-in id nor a file");
    }
    read_json(path)
}

/// Runs `cookwala cook`; `Ok(true)` when the execution completed.
pub fn run(args: &CookArgs) -> Result<bool> {
    let recipe = load("recipe", &args.recipe, builtin::recipe)?;
    let device_id = match &args.device {
        Some(d) => d.clone(),
        None => {
            builtin::example(&args.recipe).map_or(builtin::DEFAULT_DEVICE, |e| e.device).to_owned()
        }
    };
    let device = load("device", &device_id, builtin::device)?;
    let mut config = SimConfig::new(recipe, device);
    config.human_present = args.human_present;
    config.seed = args.seed;
    config.faults = args.fault.map(|kind| Fault { kind, node: None }).into_iter().collect();
    config.start_unix_ms =
        i64::try_from(crate::clock::unix_now()).unwrap_or(0).saturating_mul(1000);
    config.execution_id = format!("cook-{}", args.seed);
    config.request_id = format!("cook-{}-request", args.seed);
    let mut sim = Simulation::new(config).context("cannot simulate this recipe")?;

    if let Some(refusal) = sim.refusal() {
        if args.json {
            print_json(&sim)?;
        } else {
            let node = refusal.node.as_deref().map(|n| format!(" at node {n}")).unwrap_or_default();
            println!("refused: {}{node}: {}", refusal.reason.as_str(), refusal.detail);
            if refusal.reason.as_str() == "needs_human_present" && !args.human_present {
                println!("hint: pass --human-present if someone stays in the kitchen");
            }
        }
        return Ok(false);
    }

    let live = !args.json && std::io::stdout().is_terminal();
    let mut view = View { live, quiet: args.json, line_open: false, last_print_ms: 0 };
    view.plan(&sim, &device_id);
    let mut waiting_since: Option<u64> = None;
    while !sim.is_final() && sim.now_ms() < LIMIT_MS {
        let events = sim.advance(CHUNK_MS);
        view.events(&sim, &events);
        if sim.state() == ExecutionState::NeedsHuman {
            let since = *waiting_since.get_or_insert(sim.now_ms());
            let waited = sim.now_ms() - since;
            if args.human_present && waited >= HUMAN_DELAY_MS {
                view.say("a person confirms");
                let events = sim.confirm_human().context("confirm")?;
                view.events(&sim, &events);
                waiting_since = None;
            } else if !args.human_present && waited >= NOBODY_WAIT_MS {
                view.say("nobody came to help: stopping safely");
                let events = sim.stop("nobody present to help");
                view.events(&sim, &events);
                waiting_since = None;
            }
        }
        if let Some(speed) = args.speed
            && speed > 0.0
        {
            std::thread::sleep(Duration::from_secs_f64(CHUNK_MS as f64 / 1000.0 / speed));
        }
    }
    if !sim.is_final() {
        view.say("simulated day limit reached: stopping safely");
        let events = sim.stop("simulation time limit");
        view.events(&sim, &events);
        while !sim.is_final() {
            let events = sim.advance(CHUNK_MS);
            view.events(&sim, &events);
        }
    }
    view.close();
    if let Some(path) = &args.plot {
        let svg = plot_svg(sim.trace(), &args.recipe);
        journal::atomic_replace(path, svg.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        if !args.json {
            println!("plot: {}", path.display());
        }
    }
    if args.json {
        print_json(&sim)?;
    } else if let Some(log) = sim.log() {
        let outcome = log.get("outcome").and_then(Value::as_str).unwrap_or("?");
        let kwh = log.get("energyKwh").and_then(Value::as_f64).unwrap_or(0.0);
        #[allow(clippy::cast_precision_loss)]
        let minutes = sim.now_ms() as f64 / 60_000.0;
        println!(
            "{}: outcome {outcome}, {minutes:.1} simulated min, {kwh:.2} kWh, seq {}",
            sim.state().as_str(),
            sim.seq()
        );
    }
    Ok(sim.state() == ExecutionState::Completed)
}

fn print_json(sim: &Simulation) -> Result<()> {
    let mut m = Map::new();
    m.insert("status".into(), sim.status());
    m.insert("log".into(), sim.log().unwrap_or(Value::Null));
    m.insert("incidents".into(), Value::Array(sim.incidents().to_vec()));
    let bytes = pretty(&Value::Object(m))?;
    let mut out = std::io::stdout().lock();
    out.write_all(&bytes).context("cannot write to stdout")?;
    out.flush().context("cannot write to stdout")
}

struct View {
    live: bool,
    quiet: bool,
    line_open: bool,
    last_print_ms: u64,
}

fn clock(ms: u64) -> String {
    let s = ms / 1000;
    format!("{:02}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

impl View {
    fn plan(&mut self, sim: &Simulation, device: &str) {
        if self.quiet {
            return;
        }
        println!("cooking on {device}: {} steps", sim.plan().len());
        for row in sim.plan() {
            let by = if row.by_human { "person" } else { "device" };
            println!("  {:<12} {:<18} {by:<6} verified by {}", row.node, row.op, row.verified_by);
        }
    }

    fn say(&mut self, text: &str) {
        if self.quiet {
            return;
        }
        if self.line_open {
            println!();
            self.line_open = false;
        }
        println!("{text}");
    }

    fn events(&mut self, sim: &Simulation, events: &[SimEvent]) {
        if self.quiet {
            return;
        }
        for e in events {
            let t = clock(e.at_ms);
            match &e.kind {
                EventKind::State { to, why, .. } => {
                    let why = why.as_deref().map(|w| format!(" ({w})")).unwrap_or_default();
                    self.say(&format!("{t} state {}{why}", to.as_str()));
                }
                EventKind::StepStarted { node, op, by_human } => {
                    let by = if *by_human { " by a person" } else { "" };
                    self.say(&format!("{t} step {node} ({op}) started{by}"));
                }
                EventKind::StepEnded { node, envelope_ok, .. } => {
                    let ok = if *envelope_ok { "in envelope" } else { "ENVELOPE NOT KEPT" };
                    self.say(&format!("{t} step {node} done, {ok}"));
                }
                EventKind::Safety { limit, action, detail, .. } => {
                    self.say(&format!("{t} SAFETY {limit} -> {action}: {detail}"));
                }
                EventKind::HeatCut { reason } => self.say(&format!("{t} heat cut ({reason})")),
                EventKind::MotionStopped { reason } => {
                    self.say(&format!("{t} motion stopped ({reason})"));
                }
                EventKind::Progress { .. } | EventKind::Reading { .. } => {}
            }
        }
        let step_every = if self.live { 1_000 } else { 60_000 };
        if sim.state() == ExecutionState::Running && sim.now_ms() >= self.last_print_ms + step_every
        {
            self.last_print_ms = sim.now_ms();
            let line = progress_line(sim);
            if self.live {
                print!("\r\x1b[2K{line}");
                let _ = std::io::stdout().flush();
                self.line_open = true;
            } else {
                println!("{line}");
            }
        }
    }

    fn close(&mut self) {
        if self.line_open {
            println!();
            self.line_open = false;
        }
    }
}

fn progress_line(sim: &Simulation) -> String {
    let status = sim.status();
    let t = clock(sim.now_ms());
    let Some(step) = status.get("step") else { return format!("{t} {}", sim.state().as_str()) };
    let node = step.get("node").and_then(Value::as_str).unwrap_or("?");
    let progress = step.get("progress").and_then(Value::as_f64).unwrap_or(0.0) * 100.0;
    let mut line = format!("{t} {:<8} {node:<10} {progress:>3.0}%", sim.state().as_str());
    let trace = sim.trace();
    if let Some(current) = trace.steps.last()
        && let Some((lo, hi)) = current.band
    {
        let row = sim.plan().iter().find(|r| r.node == current.node);
        let rung = row.and_then(|r| r.rung.as_deref());
        let series = rung
            .and_then(|r| trace.sensors.iter().position(|s| s == r))
            .or_else(|| trace.points.last().map(|p| p.series));
        if let Some(series) = series
            && let Some(p) = trace.points.iter().rev().find(|p| p.series == series)
        {
            let medium = current.medium.as_deref().unwrap_or("medium");
            let mark = if p.value >= lo && p.value <= hi { "in band" } else { "outside" };
            line.push_str(&format!(
                "  {medium} {:.1} °C  band {lo:.0}–{hi:.0} °C ({mark})",
                p.value
            ));
        }
    }
    line
}

const COLOURS: [&str; 6] = ["#d62728", "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b"];

fn esc(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// An SVG of every reading against each step's envelope band (hand-written, no dependencies).
pub fn plot_svg(trace: &Trace, title: &str) -> String {
    let (w, h) = (960.0_f64, 460.0_f64);
    let (left, right, top, bottom) = (60.0, 180.0, 40.0, 50.0);
    let pw = w - left - right;
    let ph = h - top - bottom;
    #[allow(clippy::cast_precision_loss)]
    let t_end = trace
        .steps
        .iter()
        .filter_map(|s| s.end_ms)
        .chain(trace.points.iter().map(|p| p.t_ms))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let mut y_max = trace.points.iter().map(|p| p.value).fold(50.0, f64::max);
    for s in &trace.steps {
        if let Some((_, hi)) = s.band {
            y_max = y_max.max(hi);
        }
    }
    let y_max = (y_max / 50.0).ceil() * 50.0;
    let x = |t: f64| left + pw * t / t_end;
    let y = |v: f64| top + ph * (1.0 - (v / y_max).clamp(-0.1, 1.1));
    let mut svg = String::new();
    svg.push_str(&format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"12\">\n"
    ));
    svg.push_str(&format!("<rect width=\"{w}\" height=\"{h}\" fill=\"white\"/>\n"));
    svg.push_str(&format!(
        "<text x=\"{left}\" y=\"22\" font-size=\"15\">{} — readings against each step's envelope band</text>\n",
        esc(title)
    ));
    // Bands and step boundaries.
    for s in &trace.steps {
        #[allow(clippy::cast_precision_loss)]
        let (x0, x1) = (x(s.start_ms as f64), x(s.end_ms.map_or(t_end, |e| e as f64)));
        if let Some((lo, hi)) = s.band {
            svg.push_str(&format!(
                "<rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#2ca02c\" fill-opacity=\"0.15\" stroke=\"#2ca02c\" stroke-opacity=\"0.5\"><title>{} band {lo}–{hi} °C</title></rect>\n",
                y(hi),
                (x1 - x0).max(0.5),
                (y(lo) - y(hi)).max(0.5),
                esc(&s.node)
            ));
            if let Some(target) = s.target {
                svg.push_str(&format!(
                    "<line x1=\"{x0:.1}\" x2=\"{x1:.1}\" y1=\"{0:.1}\" y2=\"{0:.1}\" stroke=\"#2ca02c\" stroke-dasharray=\"4 3\"/>\n",
                    y(target)
                ));
            }
        }
        svg.push_str(&format!(
            "<line x1=\"{x0:.1}\" x2=\"{x0:.1}\" y1=\"{top}\" y2=\"{:.1}\" stroke=\"#999\" stroke-dasharray=\"2 3\"/>\n<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#555\">{}</text>\n",
            top + ph,
            x0 + 3.0,
            top + 12.0,
            esc(&s.node)
        ));
    }
    // Axes.
    svg.push_str(&format!(
        "<line x1=\"{left}\" x2=\"{left}\" y1=\"{top}\" y2=\"{0}\" stroke=\"black\"/>\n<line x1=\"{left}\" x2=\"{1}\" y1=\"{0}\" y2=\"{0}\" stroke=\"black\"/>\n",
        top + ph,
        left + pw
    ));
    let mut v = 0.0;
    while v <= y_max {
        svg.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{v:.0}</text>\n",
            left - 6.0,
            y(v) + 4.0
        ));
        v += 50.0;
    }
    svg.push_str(&format!(
        "<text x=\"14\" y=\"{:.1}\" transform=\"rotate(-90 14 {:.1})\">°C</text>\n",
        top + ph / 2.0,
        top + ph / 2.0
    ));
    let minutes = t_end / 60_000.0;
    let step_min = if minutes > 120.0 {
        30.0
    } else if minutes > 30.0 {
        10.0
    } else {
        5.0
    };
    let mut m = 0.0;
    while m <= minutes {
        svg.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{m:.0}</text>\n",
            x(m * 60_000.0),
            top + ph + 18.0
        ));
        m += step_min;
    }
    svg.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">simulated minutes</text>\n",
        left + pw / 2.0,
        h - 10.0
    ));
    // Series, thinned to at most ~1500 points each.
    for (i, sensor) in trace.sensors.iter().enumerate() {
        let pts: Vec<_> = trace.points.iter().filter(|p| p.series == i).collect();
        if pts.is_empty() {
            continue;
        }
        let stride = pts.len().div_ceil(1500).max(1);
        let colour = COLOURS[i % COLOURS.len()];
        let coords: Vec<String> = pts
            .iter()
            .step_by(stride)
            .map(|p| {
                #[allow(clippy::cast_precision_loss)]
                let t = p.t_ms as f64;
                format!("{:.1},{:.1}", x(t), y(p.value))
            })
            .collect();
        svg.push_str(&format!(
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.4\" points=\"{}\"/>\n",
            coords.join(" ")
        ));
        #[allow(clippy::cast_precision_loss)]
        let ly = top + 10.0 + 18.0 * i as f64;
        svg.push_str(&format!(
            "<line x1=\"{0:.1}\" x2=\"{1:.1}\" y1=\"{ly:.1}\" y2=\"{ly:.1}\" stroke=\"{colour}\" stroke-width=\"3\"/><text x=\"{2:.1}\" y=\"{3:.1}\">{4}</text>\n",
            left + pw + 10.0,
            left + pw + 30.0,
            left + pw + 36.0,
            ly + 4.0,
            esc(sensor.trim_start_matches("cw.sense."))
        ));
    }
    svg.push_str("</svg>\n");
    svg
}

/// `--fault` values.
pub fn parse_fault(text: &str) -> Result<FaultKind, String> {
    FaultKind::parse(text)
        .ok_or_else(|| format!("unknown fault {text:?} (sensor, overheat, timeout)"))
}
