//! The executor: lifecycle, controller, safety monitor, stop handling, status, log and trace.

use std::sync::Arc;

use canonical_json::{Map, Value};
use cookwala::dryrun::{DryRunError, Options, Refusal, RefusalReason};
use cookwala::envelope::Target;
use cookwala::execution::{ExecutionState as S, ExecutionState, transition_allowed};
use cookwala::time::Instant;
use cookwala::vocab::Vocabulary;

use crate::config::{FaultKind, PlanStep, SimConfig};
use crate::events::{EventKind, SimEvent};
use crate::limits::{self, Limits, TimeTempRule};
use crate::physics::{Body, Contents, Plant, PlantSpec};
use crate::rng::Rng;
use crate::steps::{self, Heater, StepSpec};
use crate::trace::{Trace, TracePoint, TraceStep};
use crate::{num, rfc3339_ms, wall_unix_ms};

/// The simulator's physics step (ms).
pub const TICK_MS: u64 = 100;
/// Sensor sampling period (ms).
pub const SAMPLE_MS: u64 = 1_000;
/// Delay from a stop request to all motion stopped (ms); the budget is 500 ms.
pub const MOTION_STOP_MS: u64 = 100;
/// Delay from a stop request to all heaters off (ms); the budget is 1 s.
pub const HEAT_CUT_MS: u64 = 200;
const SENSOR_FAULT_AFTER_MS: u64 = 5_000;
const STALE_MS: u64 = 3_000;
const RUNAWAY_DETECT_MS: u64 = 240_000;
const PREPARE_MS: u64 = 2_000;
const TARGET_TOLERANCE_C: f64 = 5.0;
/// Warm-up ends when the medium first comes this close to its target.
const SETTLE_C: f64 = 1.0;

/// Why an action was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// The recipe or device could not be read by the dry run.
    #[error("dry run: {0}")]
    DryRun(#[from] DryRunError),
    /// The action is not allowed in the current state (an HTTP hub answers 409).
    #[error("cannot {action} an execution in state {state}")]
    WrongState {
        /// What was asked.
        action: &'static str,
        /// The state it is in.
        state: &'static str,
    },
    /// The start time is out of range.
    #[error("start time out of range")]
    Clock,
}

#[derive(Clone, Debug)]
struct SensorSpec {
    id: String,
    body: Option<Body>,
    sd: f64,
    trusted: bool,
    faulted: bool,
    latest: Option<(u64, f64)>,
}

/// The step index and pan contents a list of `(limit index, body watched)` was worked out for.
type MaxScope = (usize, Contents, Vec<(usize, Body)>);

#[derive(Clone, Debug)]
struct StepRun {
    idx: usize,
    started_ms: u64,
    run_ms: u64,
    hold_ms: u64,
    reached: bool,
    reached_after_ms: Option<u64>,
    cmp_since: Vec<Option<u64>>,
    temps: Vec<f64>,
    settled_at: Option<usize>,
    verified_by: String,
    /// (Core deviation kind, detail).
    deviation: Option<(&'static str, String)>,
    timed_out: bool,
    block_done: bool,
    sensor_fault_at: Option<u64>,
    sensor_lost: bool,
    waiting_human: bool,
    /// The step's `min_core_temp` limits were checked at its end (a person who confirms after
    /// an `ask_human` is not asked again).
    core_checked: bool,
}

#[derive(Clone, Debug)]
struct StopRecord {
    reason: String,
    requested_ms: u64,
    heat_cut_ms: Option<u64>,
    motion_stopped_ms: Option<u64>,
}

/// One simulated execution on one simulated device. See the crate documentation.
#[derive(Clone, Debug)]
pub struct Simulation {
    vocab: &'static Vocabulary,
    recipe_id: String,
    recipe_hash: String,
    servings: Option<f64>,
    device_vendor: String,
    device_model: String,
    capabilities_hash: Option<String>,
    limits_label: String,
    execution_id: String,
    request_id: String,
    start_unix_ms: i64,
    /// Simulated ms per wall ms (see [`SimConfig::time_scale`]).
    time_scale: f64,
    human_present: bool,
    allow_model: bool,
    publish_every_ms: u64,
    seed: u64,
    plan: Vec<PlanStep>,
    specs: Vec<Arc<StepSpec>>,
    refusal: Option<Refusal>,
    faults: Vec<(usize, FaultKind)>,
    limits: Limits,
    fired: Vec<String>,
    /// For each plan step, the index of the sensor its ladder rung names (if the device has it).
    rung_sensor: Vec<Option<usize>>,
    /// The max-temperature limits that apply, with the body each watches, for the step index
    /// and pan contents they were worked out for (they change only when a step starts).
    max_scope: Option<MaxScope>,
    /// The recipe's top-level `x-foodClass` (the finished dish).
    recipe_classes: Vec<String>,
    /// `eta_after[i]`: the nominal time (ms) of the steps after step `i`.
    eta_after: Vec<u64>,
    /// The dish's `min_core_temp` limits were checked before completing.
    completion_checked: bool,
    /// Waiting for a person to confirm the dish before completing.
    pending_completion: bool,
    /// The index of the step that runs now or next.
    next_idx: usize,
    sensors: Vec<SensorSpec>,
    has_motion: bool,
    plant: Plant,
    rng: Rng,
    state: ExecutionState,
    seq: u64,
    now_ms: u64,
    carry_ms: u64,
    updated_ms: u64,
    prepare_until: u64,
    last_publish_ms: u64,
    step: Option<StepRun>,
    human_why: Option<String>,
    heat_cut: bool,
    motion_on: bool,
    runaway: Option<Heater>,
    runaway_mismatch_ms: u64,
    stop: Option<StopRecord>,
    pending_outcome: &'static str,
    log_steps: Vec<Value>,
    safety_events: Vec<Value>,
    safety_details: Vec<Value>,
    step_details: Vec<Value>,
    human_interventions: Vec<Value>,
    /// Who confirmed each human step, when the caller said (`x-confirmedBy` in the log).
    confirmations: Vec<Value>,
    incidents: Vec<Value>,
    trace: Trace,
    status: Value,
    log: Option<Value>,
}

fn sensor_body(id: &str) -> Option<Body> {
    match id {
        "cw.sense.pan_surface_temp" => Some(Body::Pan),
        "cw.sense.liquid_temp" | "cw.sense.oil_temp" | "cw.sense.product_temp" => {
            Some(Body::Contents)
        }
        "cw.sense.oven_temp" | "cw.sense.grill_temp" => Some(Body::OvenAir),
        "cw.sense.core_temp" => Some(Body::Core),
        _ => None,
    }
}

fn text(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(str::to_owned)
}

impl Simulation {
    /// Prepares an execution: runs the dry run (unless `config.plan` is given) with the
    /// effective limits, and starts in `accepted` — or `refused` (final) with the refusal.
    ///
    /// # Errors
    /// [`SimError::DryRun`] when the documents cannot be read at all; [`SimError::Clock`] for a
    /// start time the calendar cannot represent.
    pub fn new(config: SimConfig) -> Result<Simulation, SimError> {
        let vocab = Vocabulary::builtin();
        let pack = config.pack.clone().unwrap_or_else(cookwala::limits::default_pack);
        let limits_doc = match &config.extra_limits {
            Some(extra) => cookwala::limits::narrow(&pack, extra),
            None => pack,
        };
        // Every limit of the pack must have a place where it is enforced; one that has none
        // (an unknown kind, a missing bound) refuses the start rather than being ignored.
        let parsed = limits::parse(&limits_doc);
        let start_secs = config.start_unix_ms.div_euclid(1000);
        let now = Instant::from_unix(start_secs, 0).ok_or(SimError::Clock)?;
        let (plan, mut refusal) = match (config.refusal.clone(), config.plan.clone(), &parsed) {
            (Some(refusal), _, _) => (Vec::new(), Some(refusal)),
            (None, _, Err(detail)) => (
                Vec::new(),
                Some(Refusal {
                    reason: RefusalReason::SafetyLimit,
                    node: None,
                    detail: detail.clone(),
                }),
            ),
            (None, Some(plan), Ok(_)) => (plan, None),
            (None, None, Ok(_)) => {
                let options = Options {
                    human_present: config.human_present,
                    allow_model: config.allow_model,
                    limits: Some(&limits_doc),
                    now,
                };
                let dry =
                    cookwala::dryrun::dry_run(vocab, &config.recipe, &config.device, options)?;
                (PlanStep::from_dry_run(&dry), dry.refusal.clone())
            }
        };
        let x = config.device.get("x-sim");
        let xf = |k: &str, d: f64| x.and_then(|m| m.get(k)).and_then(Value::as_f64).unwrap_or(d);
        let defaults = PlantSpec::default();
        let spec = PlantSpec {
            hob_power_w: xf("hobPowerW", defaults.hob_power_w),
            oven_power_w: xf("ovenPowerW", defaults.oven_power_w),
            pan_c: xf("panHeatCapacityJPerK", defaults.pan_c),
            altitude_m: config
                .device
                .pointer("/location/altitudeM")
                .and_then(Value::as_f64)
                .unwrap_or(0.0),
        };
        let has_motion = x.and_then(|m| m.get("motion")).and_then(Value::as_bool).unwrap_or(true);
        let trusted = cookwala::envelope::trusted_sensors(&config.device, now);
        let sensors = config
            .device
            .pointer("/capabilities/sensors")
            .and_then(Value::as_array)
            .unwrap_or_default()
            .iter()
            .filter_map(|s| {
                let id = s.get("sensor")?.as_str()?;
                let acc = s.get("accuracy").and_then(Value::as_f64).unwrap_or(1.0).abs();
                Some(SensorSpec {
                    id: id.to_owned(),
                    body: sensor_body(id),
                    sd: (acc / 2.0).max(0.05),
                    trusted: trusted.contains(id),
                    faulted: false,
                    latest: None,
                })
            })
            .collect::<Vec<_>>();
        let limits = parsed.unwrap_or_default();
        let specs: Vec<Arc<StepSpec>> = steps::build(vocab, &config.recipe, &plan, spec.altitude_m)
            .into_iter()
            .map(Arc::new)
            .collect();
        let recipe_classes = limits::food_classes(Some(&config.recipe));
        if refusal.is_none() {
            refusal = limits::start_check(&limits, &specs, &recipe_classes, MOTION_STOP_MS);
        }
        let mut eta_after = vec![0; specs.len()];
        for i in (0..specs.len().saturating_sub(1)).rev() {
            eta_after[i] = eta_after[i + 1] + specs[i + 1].duration_ms;
        }
        let default_hot = specs.iter().position(|s| !s.row.by_human && s.thermal.is_some());
        let default_any = default_hot.or_else(|| specs.iter().position(|s| !s.row.by_human));
        let faults = config
            .faults
            .iter()
            .filter_map(|f| {
                let idx = match &f.node {
                    Some(node) => specs.iter().position(|s| &s.row.node == node),
                    None if f.kind == FaultKind::Timeout => default_any,
                    None => default_hot.or(default_any),
                }?;
                Some((idx, f.kind))
            })
            .collect();
        let actor = config.device.get("actor");
        let mut trace = Trace::default();
        for s in sensors.iter().filter(|s| s.body.is_some()) {
            trace.sensors.push(s.id.clone());
        }
        let refused = refusal.is_some();
        let mut sim = Simulation {
            vocab,
            recipe_id: text(config.recipe.get("id")).unwrap_or_else(|| "unknown".to_owned()),
            recipe_hash: canonical_json::digest::document_hash(&config.recipe)
                .unwrap_or_else(|_| format!("sha256:{}", "0".repeat(64))),
            servings: config.recipe.pointer("/yield/servings").and_then(Value::as_f64),
            device_vendor: text(actor.and_then(|a| a.get("vendor")))
                .unwrap_or_else(|| "unknown".to_owned()),
            device_model: text(actor.and_then(|a| a.get("model")))
                .unwrap_or_else(|| "unknown".to_owned()),
            capabilities_hash: canonical_json::digest::document_hash(&config.device).ok(),
            limits_label: format!(
                "{}@{}",
                limits_doc.get("id").and_then(Value::as_str).unwrap_or("unknown"),
                limits_doc.get("version").and_then(Value::as_str).unwrap_or("0")
            ),
            execution_id: config.execution_id,
            request_id: config.request_id,
            start_unix_ms: config.start_unix_ms,
            time_scale: if config.time_scale.is_finite() && config.time_scale > 0.0 {
                config.time_scale
            } else {
                1.0
            },
            human_present: config.human_present,
            allow_model: config.allow_model,
            publish_every_ms: config.publish_every_ms.max(TICK_MS),
            seed: config.seed,
            plan,
            specs,
            refusal,
            faults,
            limits,
            fired: Vec::new(),
            rung_sensor: Vec::new(),
            max_scope: None,
            recipe_classes,
            eta_after,
            completion_checked: false,
            pending_completion: false,
            next_idx: 0,
            sensors,
            has_motion,
            plant: Plant::new(spec),
            rng: Rng::new(config.seed),
            state: if refused { S::Refused } else { S::Accepted },
            seq: 0,
            now_ms: 0,
            carry_ms: 0,
            updated_ms: 0,
            prepare_until: 0,
            last_publish_ms: 0,
            step: None,
            human_why: None,
            heat_cut: false,
            motion_on: false,
            runaway: None,
            runaway_mismatch_ms: 0,
            stop: None,
            pending_outcome: "aborted_safe",
            log_steps: Vec::new(),
            safety_events: Vec::new(),
            safety_details: Vec::new(),
            step_details: Vec::new(),
            human_interventions: Vec::new(),
            confirmations: Vec::new(),
            incidents: Vec::new(),
            trace,
            status: Value::Null,
            log: None,
        };
        sim.rung_sensor = sim
            .specs
            .iter()
            .map(|spec| {
                let rung = spec.row.rung.as_deref()?;
                sim.sensors.iter().position(|s| s.id == rung)
            })
            .collect();
        if refused {
            sim.pending_outcome = "refused";
            sim.build_log();
        }
        sim.publish();
        Ok(sim)
    }

    // ---- accessors

    /// The current state.
    pub fn state(&self) -> ExecutionState {
        self.state
    }

    /// The status `seq`.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Simulated milliseconds since the start.
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// The wall-clock start (milliseconds since the Unix epoch) that simulated time 0 maps to;
    /// an event at `at_ms` happened at [`Simulation::wall_unix_ms`]`(at_ms)`.
    pub fn start_unix_ms(&self) -> i64 {
        self.start_unix_ms
    }

    /// Simulated ms per wall-clock ms.
    pub fn time_scale(&self) -> f64 {
        self.time_scale
    }

    /// The wall-clock time (ms since the Unix epoch) of simulated time `at_ms`.
    pub fn wall_unix_ms(&self, at_ms: u64) -> i64 {
        wall_unix_ms(self.start_unix_ms, self.time_scale, at_ms)
    }

    /// True in `refused`, `stopped`, `completed` and `failed`.
    pub fn is_final(&self) -> bool {
        self.state.is_final()
    }

    /// The plan being executed.
    pub fn plan(&self) -> &[PlanStep] {
        &self.plan
    }

    /// The dry-run refusal, when the execution was refused.
    pub fn refusal(&self) -> Option<&Refusal> {
        self.refusal.as_ref()
    }

    /// True while any heater may draw power (commanded or stuck).
    pub fn heat_on(&self) -> bool {
        !self.heat_cut
            && (self.plant.hob_w > 0.0 || self.plant.oven_w > 0.0 || self.runaway.is_some())
    }

    /// True while the device moves.
    pub fn motion_on(&self) -> bool {
        self.motion_on
    }

    /// The ExecutionStatus document as of the current `seq`.
    pub fn status(&self) -> Value {
        self.status.clone()
    }

    /// The ExecutionLog, only once the execution is final.
    pub fn log(&self) -> Option<Value> {
        if self.is_final() { self.log.clone() } else { None }
    }

    /// Anonymous IncidentReport documents for safety actions taken so far.
    pub fn incidents(&self) -> &[Value] {
        &self.incidents
    }

    /// Every reading taken, with each step's envelope band, for plotting.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// The true temperature of a body (for tests and plots; the executor itself only uses
    /// readings and its model).
    pub fn true_temp(&self, body: Body) -> f64 {
        self.plant.temp(body)
    }

    // ---- commands

    /// Advances simulated time by `dt_ms` (in 100 ms ticks; a remainder is carried over).
    pub fn advance(&mut self, dt_ms: u64) -> Vec<SimEvent> {
        let mut out = Vec::new();
        self.carry_ms += dt_ms;
        while self.carry_ms >= TICK_MS {
            self.carry_ms -= TICK_MS;
            if self.is_final() {
                self.now_ms += TICK_MS;
                continue;
            }
            self.tick(&mut out);
        }
        out
    }

    /// Requests a stop. Never refused: from `accepted` it stops at once; from an active state
    /// it enters `stopping`, then motion stops within [`MOTION_STOP_MS`] and heat is cut within
    /// [`HEAT_CUT_MS`] of simulated time, then `stopped`. In `stopping` or a final state it
    /// does nothing.
    pub fn stop(&mut self, reason: &str) -> Vec<SimEvent> {
        let mut out = Vec::new();
        match self.state {
            S::Accepted => {
                self.stop = Some(StopRecord {
                    reason: "requested".to_owned(),
                    requested_ms: self.now_ms,
                    heat_cut_ms: Some(self.now_ms),
                    motion_stopped_ms: Some(self.now_ms),
                });
                self.heat_cut = true;
                self.set_state(S::Stopped, Some(reason.to_owned()), &mut out);
                self.finish("aborted_safe");
            }
            S::Preparing | S::Running | S::Paused | S::NeedsHuman => {
                self.begin_stopping("requested", "aborted_safe", &mut out);
                // The caller's words go to the event only, never into the log.
                if let Some(SimEvent { kind: EventKind::State { why, .. }, .. }) = out.last_mut() {
                    *why = Some(reason.to_owned());
                }
            }
            _ => {}
        }
        out
    }

    /// Pauses a running execution: heaters and motion go to their safe state and the step clock
    /// stops.
    ///
    /// # Errors
    /// [`SimError::WrongState`] unless `running`.
    pub fn pause(&mut self) -> Result<Vec<SimEvent>, SimError> {
        if self.state != S::Running {
            return Err(self.wrong("pause"));
        }
        let mut out = Vec::new();
        self.motion_on = false;
        self.set_state(S::Paused, None, &mut out);
        Ok(out)
    }

    /// Resumes from `paused`, or from `needs_human` (the same as [`Simulation::confirm_human`]).
    ///
    /// # Errors
    /// [`SimError::WrongState`] in any other state.
    pub fn resume(&mut self) -> Result<Vec<SimEvent>, SimError> {
        self.resume_by(None).map(|(events, _)| events)
    }

    /// [`Simulation::resume`] on behalf of `by` (the principal the log names for a human
    /// confirmation), also returning the status as it was when the execution moved to
    /// `running` — what a resume answers, even when the confirmed step then ends at once.
    ///
    /// # Errors
    /// [`SimError::WrongState`] unless `paused` or `needs_human`.
    pub fn resume_by(&mut self, by: Option<&str>) -> Result<(Vec<SimEvent>, Value), SimError> {
        match self.state {
            S::Paused => {
                let mut out = Vec::new();
                self.set_state(S::Running, None, &mut out);
                Ok((out, self.status()))
            }
            S::NeedsHuman => self.confirm_human_as(by),
            _ => Err(self.wrong("resume")),
        }
    }

    /// A person confirms: the step they performed (or the step that timed out) is done, or the
    /// condition they were asked to check is fine.
    ///
    /// # Errors
    /// [`SimError::WrongState`] unless `needs_human`.
    pub fn confirm_human(&mut self) -> Result<Vec<SimEvent>, SimError> {
        self.confirm_human_as(None).map(|(events, _)| events)
    }

    fn confirm_human_as(&mut self, by: Option<&str>) -> Result<(Vec<SimEvent>, Value), SimError> {
        if self.state != S::NeedsHuman {
            return Err(self.wrong("confirm"));
        }
        let mut out = Vec::new();
        let at = self.stamp(self.now_ms);
        let mut record = Map::new();
        record.insert("at".into(), at.as_str().into());
        if let Some(who) = by {
            let mut c = Map::new();
            c.insert("at".into(), at.as_str().into());
            c.insert("by".into(), who.into());
            self.confirmations.push(Value::Object(c));
        }
        let performed = self.step.as_ref().is_some_and(|r| self.specs[r.idx].row.by_human);
        record.insert("kind".into(), if performed { "assist" } else { "confirm" }.into());
        self.human_interventions.push(Value::Object(record));
        self.human_why = None;
        self.set_state(S::Running, None, &mut out);
        let moved = self.status();
        if std::mem::take(&mut self.pending_completion) {
            self.next_step(self.specs.len(), &mut out);
            return Ok((out, moved));
        }
        let finish_step = self.step.as_ref().is_some_and(|r| r.waiting_human);
        if finish_step {
            if let Some(run) = self.step.as_mut() {
                run.verified_by = "human".to_owned();
            }
            self.end_step(&mut out);
        }
        Ok((out, moved))
    }

    fn wrong(&self, action: &'static str) -> SimError {
        SimError::WrongState { action, state: self.state.as_str() }
    }

    // ---- the tick

    fn tick(&mut self, out: &mut Vec<SimEvent>) {
        self.now_ms += TICK_MS;
        let dt = TICK_MS as f64 / 1000.0;
        // 1. Lifecycle moves that do not depend on physics.
        match self.state {
            S::Accepted => {
                self.set_state(S::Preparing, None, out);
                self.prepare_until = self.now_ms + PREPARE_MS;
            }
            S::Preparing if self.now_ms >= self.prepare_until => self.next_step(0, out),
            _ => {}
        }
        // 2. Heater commands and physics.
        let (mut hob, mut oven) = self.control();
        if let Some(heater) = self.runaway {
            match heater {
                Heater::Hob => {
                    if hob < self.plant.spec.hob_power_w * 0.5 {
                        self.runaway_mismatch_ms += TICK_MS;
                    }
                    hob = self.plant.spec.hob_power_w;
                }
                Heater::Oven => {
                    if oven < self.plant.spec.oven_power_w * 0.5 {
                        self.runaway_mismatch_ms += TICK_MS;
                    }
                    oven = self.plant.spec.oven_power_w;
                }
            }
        }
        if self.heat_cut {
            hob = 0.0;
            oven = 0.0;
        }
        self.plant.step(dt, hob, oven);
        // 3. Sensors.
        if self.now_ms.is_multiple_of(SAMPLE_MS) {
            self.sample(out);
        }
        // 4. Safety monitor (independent of the controller).
        self.monitor(out);
        // 5. Step logic.
        match self.state {
            S::Running => self.step_logic(out),
            S::Stopping => self.stopping_logic(out),
            _ => {}
        }
        // 6. Telemetry publication.
        if self.state == S::Running
            && self.now_ms >= self.last_publish_ms + self.publish_every_ms
            && let Some(run) = &self.step
        {
            let node = self.specs[run.idx].row.node.clone();
            let progress = self.progress();
            self.bump();
            self.last_publish_ms = self.now_ms;
            out.push(self.event(EventKind::Progress { node, progress }));
        }
    }

    fn control(&mut self) -> (f64, f64) {
        if self.state != S::Running || self.heat_cut {
            return (0.0, 0.0);
        }
        let Some(run) = &self.step else { return (0.0, 0.0) };
        let spec = &self.specs[run.idx];
        let Some(th) = &spec.thermal else { return (0.0, 0.0) };
        if spec.row.by_human {
            return (0.0, 0.0);
        }
        let (measured, _) = self.measure(th.body, run.idx);
        let mut setpoint = th.target;
        if th.contents == Some(crate::physics::Contents::Water)
            && th.target >= self.plant.boiling_point() - 0.5
        {
            // Keep a gentle rolling boil: aim a little above the boiling point.
            setpoint = self.plant.boiling_point() + 2.0;
        }
        let p = &self.plant;
        let ctrl = if th.body == Body::Contents {
            let c = p.contents_c();
            let excess = p.pan - p.contents - p.steady_pan_offset(setpoint);
            measured + excess * p.spec.pan_c / (p.spec.pan_c + c)
        } else {
            measured
        };
        let loss = match th.body {
            Body::Pan => p.loss_at(Body::Pan, setpoint) + p.loss_at(Body::Contents, setpoint) * 0.3,
            body => p.loss_at(body, setpoint),
        };
        let pmax = match th.heater {
            Heater::Hob => p.spec.hob_power_w,
            Heater::Oven => p.spec.oven_power_w,
        };
        let power = (loss + pmax / 15.0 * (setpoint - ctrl)).clamp(0.0, pmax);
        match th.heater {
            Heater::Hob => (power, 0.0),
            Heater::Oven => (0.0, power),
        }
    }

    /// The executor's view of a body: a fresh reading from a healthy sensor (the step's rung
    /// first), else the model.
    fn measure(&self, body: Body, idx: usize) -> (f64, &'static str) {
        let fresh = |s: &SensorSpec| {
            s.body == Some(body)
                && !s.faulted
                && s.latest.is_some_and(|(t, _)| self.now_ms.saturating_sub(t) <= 2_500)
        };
        let rung = self.rung_sensor.get(idx).copied().flatten();
        let pick = rung
            .and_then(|i| self.sensors.get(i))
            .filter(|s| fresh(s))
            .or_else(|| self.sensors.iter().find(|s| fresh(s)));
        match pick.and_then(|s| s.latest) {
            Some((_, v)) => (v, "sensor"),
            None => (self.plant.temp(body), "model"),
        }
    }

    fn sample(&mut self, out: &mut Vec<SimEvent>) {
        let step = self.step.as_ref().map(|r| r.idx);
        for i in 0..self.sensors.len() {
            let Some(body) = self.sensors[i].body else { continue };
            if self.sensors[i].faulted {
                continue;
            }
            let noise = self.rng.normal(self.sensors[i].sd);
            let value = ((self.plant.temp(body) + noise) * 100.0).round() / 100.0;
            self.sensors[i].latest = Some((self.now_ms, value));
            let series = self.trace.sensors.iter().position(|s| *s == self.sensors[i].id);
            if let Some(series) = series {
                self.trace.points.push(TracePoint { t_ms: self.now_ms, series, value, step });
            }
            out.push(self.event(EventKind::Reading {
                sensor: self.sensors[i].id.clone(),
                value,
                unit: "degC",
            }));
        }
    }

    fn monitor(&mut self, out: &mut Vec<SimEvent>) {
        if self.is_final() {
            return;
        }
        let op = self.step.as_ref().map(|r| self.specs[r.idx].row.op.as_str());
        let idx = self.step.as_ref().map_or(usize::MAX, |r| r.idx);
        let thermal = self.step.as_ref().and_then(|r| self.specs[r.idx].thermal.as_ref());
        // Which limits apply, and to which body, depends only on the step and the pan's
        // contents: work it out when either changes, not every tick.
        let kind = self.plant.kind;
        if self.max_scope.as_ref().is_none_or(|(i, k, _)| *i != idx || *k != kind) {
            let mut applies = Vec::new();
            for (li, limit) in self.limits.max.iter().enumerate() {
                let scope = &limit.scope;
                if scope.medium.is_none() && scope.ops.is_empty() {
                    continue;
                }
                if !scope.ops.is_empty() && !op.is_some_and(|o| scope.op_matches(o)) {
                    continue;
                }
                let body = match scope.medium.as_deref() {
                    Some("pan_surface") => Body::Pan,
                    Some("oil") if kind == Contents::Oil => Body::Contents,
                    Some("water" | "steam") if kind == Contents::Water => Body::Contents,
                    Some("air" | "radiant") => Body::OvenAir,
                    Some(m) => match thermal {
                        Some(th) if th.medium == m => th.body,
                        _ => continue,
                    },
                    None => match thermal {
                        Some(th) => th.body,
                        None => continue,
                    },
                };
                applies.push((li, body));
            }
            self.max_scope = Some((idx, kind, applies));
        }
        let mut trip = None;
        let applies = self.max_scope.as_ref().map(|(_, _, a)| a.as_slice()).unwrap_or_default();
        for &(li, body) in applies {
            let limit = &self.limits.max[li];
            if self.fired.contains(&limit.id) {
                continue;
            }
            let (value, _) = self.measure(body, idx);
            if value > limit.max {
                trip = Some((limit.id.clone(), limit.action.clone(), value, limit.max));
                break;
            }
        }
        if let Some((id, action, value, max)) = trip {
            self.fired.push(id.clone());
            let detail = format!("{value:.1} °C is above the local limit {id} ({max} °C)");
            self.safety_action(&id, &action, Some(value), detail, out);
            return;
        }
        if self.monitor_time_temp(out) {
            return;
        }
        if self.runaway.is_some() && self.runaway_mismatch_ms >= RUNAWAY_DETECT_MS && !self.heat_cut
        {
            let detail = "a heater draws full power while the controller asks for less".to_owned();
            self.safety_action("x-sim.heater_runaway", "cut_heat", None, detail, out);
        }
    }

    /// Time-temperature limits: time out of the band summed over the steps each covers, and the
    /// two-stage cooling rule. Returns true when one fired.
    fn monitor_time_temp(&mut self, out: &mut Vec<SimEvent>) -> bool {
        if !matches!(self.state, S::Running | S::Paused | S::NeedsHuman) {
            return false;
        }
        let Some(run) = &self.step else { return false };
        let idx = run.idx;
        let spec = Arc::clone(&self.specs[idx]);
        if spec.row.by_human {
            return false;
        }
        let (op, medium) = (spec.row.op.as_str(), spec.envelope_medium.as_deref());
        let now = self.now_ms;
        let mut value = None;
        let mut trip = None;
        for i in 0..self.limits.time_temp.len() {
            let limit = &self.limits.time_temp[i];
            if self.fired.contains(&limit.id) || !limit.scope.covers(op, medium) {
                continue;
            }
            let v = *value.get_or_insert_with(|| self.product_temp(&spec, idx));
            let limit = &mut self.limits.time_temp[i];
            let detail = match limit.rule {
                TimeTempRule::Below { min, hold_ms } => {
                    if v < min {
                        limit.out_ms += TICK_MS;
                    }
                    (limit.out_ms > hold_ms).then(|| {
                        format!(
                            "{op} at node {}: below {min} °C for more than {} min in total \
                             (now {v:.1} °C)",
                            spec.row.node,
                            hold_ms / 60_000
                        )
                    })
                }
                TimeTempRule::Above { max, hold_ms } => {
                    if v > max {
                        limit.out_ms += TICK_MS;
                    }
                    (limit.out_ms > hold_ms).then(|| {
                        format!(
                            "{op} at node {}: above {max} °C for more than {} min in total \
                             (now {v:.1} °C)",
                            spec.row.node,
                            hold_ms / 60_000
                        )
                    })
                }
                TimeTempRule::TwoStageCooling => {
                    if limit.cool_start_ms.is_none() && v <= limits::COOL_START_C {
                        limit.cool_start_ms = Some(now);
                    }
                    if v <= limits::COOL_STAGE1_C {
                        limit.stage1_done = true;
                    }
                    let elapsed = limit.cool_start_ms.map(|t| now - t);
                    match elapsed {
                        Some(e) if !limit.stage1_done && e > limits::COOL_STAGE1_MS => {
                            Some(format!(
                                "{op} at node {}: not below {} °C within 2 h of reaching {} °C \
                                 (now {v:.1} °C)",
                                spec.row.node,
                                limits::COOL_STAGE1_C,
                                limits::COOL_START_C
                            ))
                        }
                        Some(e) if v > limits::COOL_STAGE2_C && e > limits::COOL_TOTAL_MS => {
                            Some(format!(
                                "{op} at node {}: not below {} °C within 6 h of reaching {} °C \
                                 (now {v:.1} °C)",
                                spec.row.node,
                                limits::COOL_STAGE2_C,
                                limits::COOL_START_C
                            ))
                        }
                        _ => None,
                    }
                }
            };
            if let Some(detail) = detail {
                trip = Some((limit.id.clone(), limit.action.clone(), v, detail));
                break;
            }
        }
        let Some((id, action, v, detail)) = trip else { return false };
        self.fired.push(id.clone());
        self.safety_action(&id, &action, Some(v), detail, out);
        true
    }

    /// The product's temperature for a time-temperature limit: the step's medium when it has a
    /// thermal envelope, else the core probe, else the pan's contents (sensor, else model).
    fn product_temp(&self, spec: &StepSpec, idx: usize) -> f64 {
        if let Some(th) = &spec.thermal {
            return self.measure(th.body, idx).0;
        }
        let probe = self.sensors.iter().any(|s| s.body == Some(Body::Core) && !s.faulted);
        let body = if probe { Body::Core } else { Body::Contents };
        self.measure(body, idx).0
    }

    /// A sensor reading of the product core for a `min_core_temp` check: the core probe, else
    /// (when the pan holds the product itself, not frying oil) a liquid or product sensor. No
    /// model: `None` when no sensor reads it.
    fn core_reading(&self, spec: Option<&StepSpec>) -> Option<(f64, String)> {
        let fresh = |s: &&SensorSpec| {
            !s.faulted && s.latest.is_some_and(|(t, _)| self.now_ms.saturating_sub(t) <= 2_500)
        };
        let read = |s: &SensorSpec| s.latest.map(|(_, v)| (v, s.id.clone()));
        if let Some(s) = self.sensors.iter().filter(fresh).find(|s| s.body == Some(Body::Core)) {
            return read(s);
        }
        let contents_is_product = match spec.and_then(|s| s.thermal.as_ref()) {
            Some(th) => th.body == Body::Contents && th.contents != Some(Contents::Oil),
            None => self.plant.kind != Contents::Oil,
        };
        if !contents_is_product {
            return None;
        }
        self.sensors
            .iter()
            .filter(fresh)
            .find(|s| s.body == Some(Body::Contents) && s.id != "cw.sense.oil_temp")
            .and_then(read)
    }

    /// Checks the `min_core_temp` limits that cover the current step's end (`dish` false) or
    /// the finished dish (`dish` true). Returns true when one fired with an action that holds
    /// the execution (anything but `alert`).
    fn check_core(&mut self, dish: bool, out: &mut Vec<SimEvent>) -> bool {
        let spec = if dish {
            None
        } else {
            match &self.step {
                Some(run) => Some(Arc::clone(&self.specs[run.idx])),
                None => return false,
            }
        };
        let mut covering: Vec<_> = self
            .limits
            .core
            .iter()
            .filter(|l| match &spec {
                Some(s) => l.covers_step(&s.row.op, &s.food_classes, &self.recipe_classes),
                None => l.covers_dish(&self.recipe_classes),
            })
            .cloned()
            .collect();
        if covering.is_empty() {
            return false;
        }
        // The strictest first.
        covering.sort_by(|a, b| b.min.total_cmp(&a.min));
        let reading = self.core_reading(spec.as_deref());
        let Some(limit) =
            covering.into_iter().find(|l| reading.as_ref().is_none_or(|r| r.0 < l.min))
        else {
            return false;
        };
        let class =
            limit.scope.food_class.as_deref().map_or_else(String::new, |c| format!(" for {c}"));
        let place = match &spec {
            Some(s) => format!("at the end of node {} ({})", s.row.node, s.row.op),
            None => "before the dish is served".to_owned(),
        };
        let detail = match &reading {
            Some((v, sensor)) => format!(
                "product core {v:.1} °C ({sensor}) is below the {} °C minimum{class} {place}",
                limit.min
            ),
            None => format!(
                "no sensor reads the product core, so the {} °C minimum{class} cannot be \
                 verified {place}",
                limit.min
            ),
        };
        self.safety_action(&limit.id, &limit.action, reading.map(|r| r.0), detail, out);
        limit.action != "alert"
    }

    /// Carries out a limit's action: `alert` records it and goes on, `ask_human` waits for a
    /// person, `cut_heat` / `stop_motion` / `stop_all` (and `refuse_start`, which can only
    /// refuse before the start, so fired mid-run it stops everything) stop the execution.
    fn safety_action(
        &mut self,
        id: &str,
        action: &str,
        value: Option<f64>,
        detail: String,
        out: &mut Vec<SimEvent>,
    ) {
        let level = match action {
            "stop_all" | "refuse_start" => "emergency",
            "cut_heat" | "stop_motion" => "alarm",
            _ => "warning",
        };
        let node = self.step.as_ref().map(|r| self.specs[r.idx].row.node.clone());
        self.record_safety(id, action, level, node.as_deref(), value, &detail);
        let stops = matches!(action, "cut_heat" | "stop_all" | "stop_motion" | "refuse_start");
        if matches!(action, "cut_heat" | "stop_all" | "refuse_start") {
            self.cut_heat(&format!("safety limit {id}"), out);
        }
        if matches!(action, "stop_all" | "stop_motion" | "refuse_start") {
            self.motion_on = false;
        }
        // Every limit of the pack that fires is an incident; our own guards only when they stop.
        if stops || !id.starts_with("x-sim.") {
            self.record_incident(id, action, &detail);
        }
        self.bump();
        out.push(self.event(EventKind::Safety {
            limit: id.to_owned(),
            action: action.to_owned(),
            level,
            value,
            detail: detail.clone(),
        }));
        if stops {
            let reason = format!("safety_limit {id}");
            self.begin_stopping(&reason, "aborted_safe", out);
            if action != "cut_heat" {
                self.stop_motion(&reason, out);
            }
        } else if action == "ask_human" && matches!(self.state, S::Running | S::Preparing) {
            self.motion_on = false;
            if let Some(run) = self.step.as_mut() {
                run.waiting_human = run.waiting_human || run.core_checked;
            }
            self.human_why = Some(format!("safety limit {id}: {detail}"));
            self.set_state(S::NeedsHuman, self.human_why.clone(), out);
        }
    }

    /// Appends a Core `safetyEvents` row `{at, limit, action, node}` and, in `x-sim`, the
    /// details the Core row has no room for.
    fn record_safety(
        &mut self,
        id: &str,
        action: &str,
        level: &str,
        node: Option<&str>,
        value: Option<f64>,
        detail: &str,
    ) {
        let at = self.stamp(self.now_ms);
        let mut rec = Map::new();
        rec.insert("at".into(), at.as_str().into());
        rec.insert("limit".into(), id.into());
        rec.insert("action".into(), action.into());
        if let Some(n) = node {
            rec.insert("node".into(), n.into());
        }
        self.safety_events.push(Value::Object(rec));
        let mut x = Map::new();
        x.insert("at".into(), at.into());
        x.insert("atMs".into(), self.now_ms.into());
        x.insert("limit".into(), id.into());
        x.insert("level".into(), level.into());
        if let Some(v) = value {
            x.insert("value".into(), num(v));
            x.insert("unit".into(), "degC".into());
        }
        x.insert("detail".into(), detail.into());
        self.safety_details.push(Value::Object(x));
    }

    fn record_incident(&mut self, id: &str, action: &str, detail: &str) {
        let n = self.incidents.len() + 1;
        let date: String = self.stamp(self.now_ms).chars().take(10).collect();
        let mut m = Map::new();
        m.insert("core".into(), "0.2.0".into());
        m.insert("kind".into(), "IncidentReport".into());
        m.insert("id".into(), format!("inc-{}-{n}", self.execution_id).into());
        m.insert("date".into(), date.into());
        let category = if self.limits.core.iter().any(|l| l.id == id) {
            "cw.incident.undercooked"
        } else if self.limits.time_temp.iter().any(|l| l.id == id) {
            "cw.incident.time_temperature"
        } else if self.limits.max.iter().any(|l| l.id == id) || id == "x-sim.heater_runaway" {
            "cw.incident.overheat"
        } else {
            "cw.incident.other"
        };
        let (severity, then) = match action {
            "cut_heat" => ("medium", "Heat was cut and the execution stopped."),
            "stop_motion" => ("medium", "Motion was stopped and the execution stopped."),
            "stop_all" | "refuse_start" => {
                ("medium", "Heat and motion were cut and the execution stopped.")
            }
            "ask_human" => ("low", "The execution waited for a person to check."),
            _ => ("low", "An alert was raised and the execution went on."),
        };
        m.insert("category".into(), category.into());
        m.insert("severity".into(), severity.into());
        m.insert("outcome".into(), "near_miss".into());
        m.insert("description".into(), format!("Simulated executor: {detail}. {then}").into());
        if let Some(run) = &self.step {
            m.insert("op".into(), self.specs[run.idx].row.op.as_str().into());
        }
        m.insert("deviceModel".into(), self.device_model.as_str().into());
        m.insert("recipe".into(), self.recipe_id.as_str().into());
        m.insert("safetyLimitsFired".into(), Value::Array(vec![id.into()]));
        self.incidents.push(Value::Object(m));
    }

    fn cut_heat(&mut self, reason: &str, out: &mut Vec<SimEvent>) {
        let first = !self.heat_cut;
        self.heat_cut = true;
        self.runaway = None;
        if let Some(stop) = self.stop.as_mut()
            && stop.heat_cut_ms.is_none()
        {
            stop.heat_cut_ms = Some(self.now_ms);
        }
        if first {
            out.push(self.event(EventKind::HeatCut { reason: reason.to_owned() }));
        }
    }

    fn stop_motion(&mut self, reason: &str, out: &mut Vec<SimEvent>) {
        self.motion_on = false;
        if let Some(stop) = self.stop.as_mut()
            && stop.motion_stopped_ms.is_none()
        {
            stop.motion_stopped_ms = Some(self.now_ms);
            out.push(self.event(EventKind::MotionStopped { reason: reason.to_owned() }));
        }
    }

    fn begin_stopping(&mut self, reason: &str, outcome: &'static str, out: &mut Vec<SimEvent>) {
        if !transition_allowed(self.state, S::Stopping) {
            return;
        }
        self.pending_outcome = outcome;
        self.stop = Some(StopRecord {
            reason: reason.to_owned(),
            requested_ms: self.now_ms,
            heat_cut_ms: self.heat_cut.then_some(self.now_ms),
            motion_stopped_ms: None,
        });
        self.set_state(S::Stopping, Some(reason.to_owned()), out);
    }

    fn stopping_logic(&mut self, out: &mut Vec<SimEvent>) {
        let Some(stop) = &self.stop else { return };
        let (requested, reason) = (stop.requested_ms, stop.reason.clone());
        let elapsed = self.now_ms - requested;
        if elapsed >= MOTION_STOP_MS {
            self.stop_motion(&reason, out);
        }
        if elapsed >= HEAT_CUT_MS {
            self.cut_heat(&reason, out);
        }
        let done = self
            .stop
            .as_ref()
            .is_some_and(|s| s.heat_cut_ms.is_some() && s.motion_stopped_ms.is_some());
        if done {
            self.close_step(Some(("other", format!("stopped: {reason}"))), out);
            self.set_state(S::Stopped, None, out);
            self.finish(self.pending_outcome);
        }
    }

    // ---- steps

    fn next_step(&mut self, idx: usize, out: &mut Vec<SimEvent>) {
        self.next_idx = idx;
        if idx >= self.specs.len() {
            if !std::mem::replace(&mut self.completion_checked, true) && self.check_core(true, out)
            {
                self.pending_completion = self.state == S::NeedsHuman;
                return;
            }
            self.motion_on = false;
            self.heat_cut = true;
            self.runaway = None;
            if self.state == S::Preparing {
                self.set_state(S::Running, None, out);
            }
            self.set_state(S::Completed, None, out);
            self.finish("served");
            return;
        }
        let spec = &self.specs[idx];
        let by_human = spec.row.by_human;
        let run = StepRun {
            idx,
            started_ms: self.now_ms,
            run_ms: 0,
            hold_ms: 0,
            reached: false,
            reached_after_ms: None,
            cmp_since: vec![None; spec.comparisons.len()],
            temps: Vec::new(),
            settled_at: None,
            verified_by: spec.row.verified_by.clone(),
            deviation: None,
            timed_out: false,
            block_done: false,
            sensor_fault_at: None,
            sensor_lost: false,
            waiting_human: by_human,
            core_checked: false,
        };
        if let (Some(th), false) = (&spec.thermal, by_human) {
            if let Some(kind) = th.contents {
                self.plant.fill(kind);
            }
            self.plant.lid = th.lid;
            self.plant.core_in_contents = th.heater == crate::steps::Heater::Hob;
        }
        let (node, op) = (spec.row.node.clone(), spec.row.op.clone());
        let band = spec.thermal.as_ref().map(|t| (t.band.min, t.band.max));
        let target = spec.thermal.as_ref().map(|t| t.target);
        let medium = spec.thermal.as_ref().map(|t| t.medium.clone());
        self.motion_on = self.has_motion && spec.motion;
        self.step = Some(run);
        for &(fidx, kind) in &self.faults {
            if fidx != idx {
                continue;
            }
            if let Some(run) = self.step.as_mut() {
                match kind {
                    FaultKind::Sensor => {
                        run.sensor_fault_at = Some(self.now_ms + SENSOR_FAULT_AFTER_MS)
                    }
                    FaultKind::Timeout => run.block_done = true,
                    FaultKind::Overheat => {}
                }
            }
            if kind == FaultKind::Overheat {
                let heater = self.specs[idx].thermal.as_ref().map_or(Heater::Hob, |t| t.heater);
                self.runaway = Some(heater);
            }
        }
        self.trace.steps.push(TraceStep {
            node: node.clone(),
            op: op.clone(),
            start_ms: self.now_ms,
            end_ms: None,
            band,
            target,
            medium,
        });
        if by_human {
            let why = format!("a person performs {op} (node {node})");
            self.human_why = Some(why.clone());
            self.motion_on = false;
            self.set_state(S::NeedsHuman, Some(why), out);
        } else if self.state == S::Preparing {
            self.set_state(S::Running, None, out);
        }
        self.bump();
        self.last_publish_ms = self.now_ms;
        out.push(self.event(EventKind::StepStarted { node, op, by_human }));
    }

    fn step_logic(&mut self, out: &mut Vec<SimEvent>) {
        let Some(run) = self.step.as_ref() else { return };
        let idx = run.idx;
        let spec = Arc::clone(&self.specs[idx]);
        if spec.row.by_human {
            return;
        }
        // Injected sensor fault.
        if let Some(at) = run.sensor_fault_at
            && self.now_ms >= at
        {
            let victim = spec
                .row
                .rung
                .clone()
                .filter(|r| self.sensors.iter().any(|s| &s.id == r && s.body.is_some()))
                .or_else(|| {
                    let body = spec.thermal.as_ref()?.body;
                    self.sensors.iter().find(|s| s.body == Some(body)).map(|s| s.id.clone())
                });
            if let Some(v) = victim
                && let Some(s) = self.sensors.iter_mut().find(|s| s.id == v)
            {
                s.faulted = true;
            }
            if let Some(r) = self.step.as_mut() {
                r.sensor_fault_at = None;
            }
        }
        // Fault detection on the verifying sensor.
        if spec.row.verified_by == "sensor"
            && let Some(rung) = spec.row.rung.as_deref()
            && let Some(s) = self.sensors.iter().find(|s| s.id == rung && s.body.is_some())
        {
            let last = s.latest.map_or(self.step.as_ref().map_or(0, |r| r.started_ms), |(t, _)| t);
            let current = self.step.as_ref().is_some_and(|r| !r.sensor_lost);
            if current && self.now_ms.saturating_sub(last) >= STALE_MS && s.faulted {
                self.sensor_lost(rung, &spec, out);
                if self.state != S::Running {
                    return;
                }
            }
        }
        let Some(run) = self.step.as_mut() else { return };
        run.run_ms += TICK_MS;
        let sampling = self.now_ms.is_multiple_of(SAMPLE_MS);
        if let Some(th) = &spec.thermal {
            let body = th.body;
            let (value, _) = self.measure(body, idx);
            let Some(run) = self.step.as_mut() else { return };
            if sampling {
                if run.settled_at.is_none() && (value - th.target).abs() <= SETTLE_C {
                    run.settled_at = Some(run.temps.len());
                }
                run.temps.push(value);
            }
            if !run.reached && th.band.contains(value) {
                run.reached = true;
                run.reached_after_ms = Some(run.run_ms);
            }
            if run.reached {
                run.hold_ms += TICK_MS;
            }
        }
        // Comparisons.
        let mut cmp_ok = true;
        for (i, c) in spec.comparisons.iter().enumerate() {
            let value = self.comparison_value(&c.sensor, idx);
            let Some(run) = self.step.as_mut() else { return };
            let now_ok =
                value.is_some_and(|v| c.gte.is_none_or(|g| v >= g) && c.lte.is_none_or(|l| v <= l));
            if now_ok {
                let since = *run.cmp_since[i].get_or_insert(self.now_ms);
                if self.now_ms - since < c.hold_ms {
                    cmp_ok = false;
                }
            } else {
                run.cmp_since[i] = None;
                cmp_ok = false;
            }
        }
        let Some(run) = self.step.as_mut() else { return };
        let done = !run.block_done
            && cmp_ok
            && run.run_ms >= spec.min_ms
            && match &spec.thermal {
                Some(_) => run.reached && run.hold_ms >= spec.duration_ms,
                None => run.run_ms >= spec.duration_ms,
            };
        if done {
            self.end_step(out);
            return;
        }
        if run.run_ms >= spec.max_ms && !run.timed_out {
            run.timed_out = true;
            let why = format!(
                "{} (node {}) reached its maxTime without its completion cue",
                spec.row.op, spec.row.node
            );
            run.deviation = Some(("extended_time", "ran past maxTime".to_owned()));
            match spec.on_timeout.as_str() {
                "abort_safe" => self.begin_stopping("timeout", "aborted_safe", out),
                "extend" | "retry" => {
                    // One extension of half the planned time, then ask a person.
                    if let Some(s) = self.specs.get_mut(idx) {
                        let s = Arc::make_mut(s);
                        s.max_ms += s.duration_ms / 2 + 60_000;
                    }
                    if let Some(r) = self.step.as_mut() {
                        r.timed_out = false;
                        r.deviation =
                            Some(("extended_time", "ran past maxTime; extended once".to_owned()));
                    }
                    if let Some(s) = self.specs.get_mut(idx) {
                        Arc::make_mut(s).on_timeout = "ask_human".to_owned();
                    }
                }
                _ => {
                    if let Some(r) = self.step.as_mut() {
                        r.waiting_human = true;
                    }
                    self.motion_on = false;
                    self.human_why = Some(why.clone());
                    self.set_state(S::NeedsHuman, Some(why), out);
                }
            }
        }
    }

    fn comparison_value(&self, sensor: &str, idx: usize) -> Option<f64> {
        match self.sensors.iter().find(|s| s.id == sensor) {
            Some(s) if s.body.is_some() && !s.faulted => s.latest.map(|(_, v)| v),
            Some(s) if s.body.is_some() => s.body.map(|b| self.measure(b, idx).0),
            _ => sensor_body(sensor).map(|b| self.plant.temp(b)),
        }
    }

    fn sensor_lost(&mut self, sensor: &str, spec: &StepSpec, out: &mut Vec<SimEvent>) {
        if let Some(run) = self.step.as_mut() {
            run.sensor_lost = true;
        }
        let fallback = spec.ladder.iter().find(|rung| match rung.as_str() {
            "model" => self.allow_model,
            "time" => true,
            "human" => self.human_present,
            other => self
                .sensors
                .iter()
                .any(|s| s.id == *other && s.trusted && !s.faulted && other != sensor),
        });
        match fallback.cloned() {
            Some(rung) => {
                let verified = if rung.starts_with("cw.") || rung.starts_with("x-") {
                    "sensor".to_owned()
                } else {
                    rung.clone()
                };
                if let Some(run) = self.step.as_mut() {
                    run.verified_by = verified;
                    run.deviation = Some((
                        "other",
                        format!("sensor {sensor} stopped reporting; verified by {rung}"),
                    ));
                }
                let detail = format!("sensor {sensor} stopped reporting; falling back to {rung}");
                self.safety_action("x-sim.sensor_fault", "alert", None, detail, out);
            }
            None => {
                let detail = format!(
                    "sensor {sensor} stopped reporting and {} has no other rung",
                    spec.row.op
                );
                let node = spec.row.node.clone();
                self.record_safety(
                    "x-sim.sensor_fault",
                    "cut_heat",
                    "alarm",
                    Some(&node),
                    None,
                    &detail,
                );
                self.stop = Some(StopRecord {
                    reason: "sensor_fault".to_owned(),
                    requested_ms: self.now_ms,
                    heat_cut_ms: None,
                    motion_stopped_ms: None,
                });
                self.cut_heat("sensor fault", out);
                self.stop_motion("sensor fault", out);
                if let Some(run) = self.step.as_mut() {
                    run.deviation = Some(("other", format!("sensor {sensor} lost")));
                }
                self.bump();
                out.push(self.event(EventKind::Safety {
                    limit: "x-sim.sensor_fault".to_owned(),
                    action: "cut_heat".to_owned(),
                    level: "alarm",
                    value: None,
                    detail,
                }));
                self.close_step(None, out);
                self.set_state(S::Failed, Some("sensor fault".to_owned()), out);
                self.finish("failed");
            }
        }
    }

    fn progress(&self) -> f64 {
        let Some(run) = &self.step else { return 0.0 };
        let spec = &self.specs[run.idx];
        let elapsed = if spec.thermal.is_some() { run.hold_ms } else { run.run_ms };
        if spec.duration_ms == 0 {
            return if run.reached { 1.0 } else { 0.0 };
        }
        #[allow(clippy::cast_precision_loss)]
        let p = elapsed as f64 / spec.duration_ms as f64;
        (p.clamp(0.0, 1.0) * 100.0).round() / 100.0
    }

    /// Writes the log row for the current step (if any) and clears it.
    fn close_step(&mut self, deviation: Option<(&'static str, String)>, out: &mut Vec<SimEvent>) {
        let Some(run) = self.step.take() else { return };
        self.next_idx = run.idx + 1;
        let spec = &self.specs[run.idx];
        let mut summary = Vec::new();
        let mut details = Map::new();
        details.insert("node".into(), spec.row.node.as_str().into());
        let trace_idx = self.trace.steps.len().checked_sub(1);
        for (series, sensor) in self.trace.sensors.iter().enumerate() {
            let mut values = self
                .trace
                .points
                .iter()
                .rev()
                .take_while(|p| p.step == trace_idx)
                .filter(|p| p.series == series)
                .map(|p| p.value);
            let Some(end) = values.next() else { continue };
            let (lo, hi) = values.fold((end, end), |(lo, hi), v| (lo.min(v), hi.max(v)));
            let mut m = Map::new();
            m.insert("sensor".into(), sensor.as_str().into());
            m.insert("unit".into(), "degC".into());
            m.insert("min".into(), num(lo));
            m.insert("max".into(), num(hi));
            m.insert("end".into(), num(end));
            summary.push(Value::Object(m));
        }
        let mut envelope_ok = true;
        if let Some(th) = &spec.thermal
            && !spec.row.by_human
        {
            let target = Some(Target { value: th.target, tolerance: TARGET_TOLERANCE_C });
            // Warm-up lasts until the medium first comes within `SETTLE_C` of the target: a step that
            // starts with the medium still moving (heat stored in the pan after a boil) is not
            // judged on that transient.
            let judged = &run.temps[run.settled_at.unwrap_or(0)..];
            let verdict = cookwala::envelope::check_envelope(
                self.vocab,
                &spec.row.op,
                judged,
                target,
                self.plant.spec.altitude_m,
            );
            let m = &mut details;
            m.insert("medium".into(), th.medium.as_str().into());
            let mut band = Map::new();
            band.insert("min".into(), num(th.band.min));
            band.insert("max".into(), num(th.band.max));
            m.insert("bandC".into(), Value::Object(band));
            m.insert("targetC".into(), num(th.target));
            if let Ok(v) = &verdict {
                envelope_ok = v.envelope_ok;
                m.insert("check".into(), v.reason.into());
                if let Some(t) = v.target_ok {
                    m.insert("targetOk".into(), t.into());
                }
            }
            let lo = run.temps.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = run.temps.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if lo.is_finite() && hi.is_finite() {
                m.insert("minC".into(), num(lo));
                m.insert("maxC".into(), num(hi));
            }
            if let Some(r) = run.reached_after_ms {
                #[allow(clippy::cast_precision_loss)]
                m.insert("reachedAfterS".into(), num(r as f64 / 1000.0));
            }
            #[allow(clippy::cast_precision_loss)]
            m.insert("heldS".into(), num(run.hold_ms as f64 / 1000.0));
            m.insert("lid".into(), th.lid.into());
        }
        #[allow(clippy::cast_precision_loss)]
        details.insert("durationS".into(), num((self.now_ms - run.started_ms) as f64 / 1000.0));
        details.insert("by".into(), if spec.row.by_human { "human" } else { "device" }.into());
        self.step_details.push(Value::Object(details));
        let mut row = Map::new();
        row.insert("node".into(), spec.row.node.as_str().into());
        row.insert("op".into(), spec.row.op.as_str().into());
        row.insert("verifiedBy".into(), run.verified_by.as_str().into());
        row.insert("envelopeOk".into(), envelope_ok.into());
        row.insert("startedAt".into(), self.stamp(run.started_ms).into());
        row.insert("endedAt".into(), self.stamp(self.now_ms).into());
        row.insert("summary".into(), Value::Array(summary));
        if let Some((kind, detail)) = deviation.or(run.deviation) {
            let mut d = Map::new();
            d.insert("kind".into(), kind.into());
            d.insert("detail".into(), detail.chars().take(300).collect::<String>().into());
            row.insert("deviation".into(), Value::Object(d));
        }
        self.log_steps.push(Value::Object(row));
        if let Some(t) = self.trace.steps.last_mut() {
            t.end_ms = Some(self.now_ms);
        }
        let (node, op) = (spec.row.node.clone(), spec.row.op.clone());
        self.bump();
        out.push(self.event(EventKind::StepEnded { node, op, envelope_ok }));
    }

    fn end_step(&mut self, out: &mut Vec<SimEvent>) {
        // A device step that cooks a product covered by a `min_core_temp` limit ends only with
        // its core at the minimum (or after the limit's action).
        let check =
            self.step.as_mut().is_some_and(|r| !std::mem::replace(&mut r.core_checked, true));
        let by_human = self.step.as_ref().is_some_and(|r| self.specs[r.idx].row.by_human);
        if check && !by_human && self.check_core(false, out) {
            return;
        }
        let next = self.step.as_ref().map_or(0, |r| r.idx + 1);
        self.close_step(None, out);
        self.next_step(next, out);
    }

    // ---- bookkeeping

    fn set_state(&mut self, to: ExecutionState, why: Option<String>, out: &mut Vec<SimEvent>) {
        let from = self.state;
        if !transition_allowed(from, to) {
            return;
        }
        self.state = to;
        if to != S::NeedsHuman {
            self.human_why = None;
        }
        if to.is_final() {
            self.motion_on = false;
            self.heat_cut = true;
            self.runaway = None;
        }
        self.bump();
        out.push(self.event(EventKind::State { from, to, why }));
    }

    fn event(&self, kind: EventKind) -> SimEvent {
        SimEvent { at_ms: self.now_ms, seq: self.seq, kind }
    }

    fn stamp(&self, ms: u64) -> String {
        rfc3339_ms(self.wall_unix_ms(ms))
    }

    /// Increments `seq` and rebuilds the published status.
    fn bump(&mut self) {
        self.seq += 1;
        self.updated_ms = self.now_ms;
        self.publish();
    }

    fn publish(&mut self) {
        let mut m = Map::new();
        m.insert("core".into(), "0.2.0".into());
        m.insert("kind".into(), "ExecutionStatus".into());
        m.insert("id".into(), self.execution_id.as_str().into());
        m.insert("request".into(), self.request_id.as_str().into());
        m.insert("state".into(), self.state.as_str().into());
        m.insert("seq".into(), self.seq.into());
        m.insert("updatedAt".into(), self.stamp(self.updated_ms).into());
        if let Some(run) = &self.step {
            let spec = &self.specs[run.idx];
            let mut s = Map::new();
            s.insert("node".into(), spec.row.node.as_str().into());
            s.insert("op".into(), spec.row.op.as_str().into());
            s.insert("startedAt".into(), self.stamp(run.started_ms).into());
            s.insert("progress".into(), num(self.progress()));
            s.insert("verifiedBy".into(), run.verified_by.as_str().into());
            let readings: Vec<Value> = self
                .sensors
                .iter()
                .filter(|x| x.body.is_some() && !x.faulted)
                .filter_map(|x| {
                    let (t, v) = x.latest?;
                    let mut r = Map::new();
                    r.insert("sensor".into(), x.id.as_str().into());
                    r.insert("value".into(), num(v));
                    r.insert("unit".into(), "degC".into());
                    r.insert("at".into(), self.stamp(t).into());
                    Some(Value::Object(r))
                })
                .collect();
            s.insert("readings".into(), Value::Array(readings));
            m.insert("step".into(), Value::Object(s));
        }
        if let Some(eta) = self.eta_ms() {
            m.insert("eta".into(), self.stamp(eta).into());
        }
        if let Some(r) = &self.refusal {
            let mut refusal = r.to_value();
            if let Some(o) = refusal.as_object_mut()
                && let Some(Value::String(d)) = o.get_mut("detail")
                && d.chars().count() > 500
            {
                *d = d.chars().take(500).collect();
            }
            m.insert("refusal".into(), refusal);
        }
        if self.state == S::NeedsHuman {
            let mut h = Map::new();
            let why = self.human_why.as_deref().unwrap_or("a person is needed");
            let why: String = why.chars().take(300).collect();
            h.insert("why".into(), why.into());
            m.insert("humanNeeded".into(), Value::Object(h));
        }
        let mut x = Map::new();
        x.insert("simMs".into(), self.now_ms.into());
        x.insert("heatOn".into(), self.heat_on().into());
        x.insert("motionOn".into(), self.motion_on.into());
        m.insert("x-sim".into(), Value::Object(x));
        self.status = Value::Object(m);
    }

    /// The estimated end (simulated ms) while the execution moves on by itself: now, plus what
    /// is left of the current step's nominal time (its time in band, for a heated step), plus
    /// the nominal time of every later step. Warm-up is not predicted, so the estimate moves
    /// later while a step heats up. `None` when final, paused, waiting for a person or stopping.
    fn eta_ms(&self) -> Option<u64> {
        let after = |i: usize| {
            self.specs
                .get(i)
                .map_or(0, |s| s.duration_ms + self.eta_after.get(i).copied().unwrap_or(0))
        };
        match (self.state, &self.step) {
            (S::Running, Some(run)) => {
                let spec = &self.specs[run.idx];
                let done = if spec.thermal.is_some() { run.hold_ms } else { run.run_ms };
                let left = spec.duration_ms.saturating_sub(done);
                Some(self.now_ms + left + self.eta_after.get(run.idx).copied().unwrap_or(0))
            }
            (S::Running, None) => Some(self.now_ms + after(self.next_idx)),
            (S::Accepted, _) => Some(self.now_ms + TICK_MS + PREPARE_MS + after(0)),
            (S::Preparing, _) => Some(self.prepare_until.max(self.now_ms) + after(self.next_idx)),
            _ => None,
        }
    }

    fn finish(&mut self, outcome: &'static str) {
        self.pending_outcome = outcome;
        self.build_log();
        self.publish();
    }

    fn build_log(&mut self) {
        let mut m = Map::new();
        m.insert("core".into(), "0.2.0".into());
        m.insert("kind".into(), "ExecutionLog".into());
        m.insert("id".into(), format!("log-{}", self.execution_id).into());
        m.insert("recipe".into(), self.recipe_id.as_str().into());
        m.insert("recipeHash".into(), self.recipe_hash.as_str().into());
        let mut device = Map::new();
        device.insert("vendor".into(), self.device_vendor.as_str().into());
        device.insert("model".into(), self.device_model.as_str().into());
        device
            .insert("firmware".into(), concat!("cookwala-sim ", env!("CARGO_PKG_VERSION")).into());
        if let Some(h) = &self.capabilities_hash {
            device.insert("capabilitiesHash".into(), h.as_str().into());
        }
        device.insert("safetyLimits".into(), self.limits_label.as_str().into());
        m.insert("device".into(), Value::Object(device));
        m.insert("startedAt".into(), self.stamp(0).into());
        m.insert("endedAt".into(), self.stamp(self.now_ms).into());
        m.insert("outcome".into(), self.pending_outcome.into());
        if let Some(s) = self.servings {
            m.insert("servings".into(), num(s));
        }
        m.insert("steps".into(), Value::Array(self.log_steps.clone()));
        let mut safety = self.safety_events.clone();
        let mut x = Map::new();
        if let Some(stop) = &self.stop {
            let mut core = Map::new();
            core.insert("at".into(), self.stamp(stop.requested_ms).into());
            core.insert("limit".into(), "stop.local".into());
            core.insert("action".into(), "stop_all".into());
            safety.push(Value::Object(core));
            let mut r = Map::new();
            r.insert("reason".into(), stop.reason.as_str().into());
            r.insert("requestedAt".into(), self.stamp(stop.requested_ms).into());
            r.insert("requestedAtMs".into(), stop.requested_ms.into());
            if let Some(t) = stop.heat_cut_ms {
                r.insert("heatCutAt".into(), self.stamp(t).into());
                r.insert("heatCutAfterMs".into(), t.saturating_sub(stop.requested_ms).into());
            }
            if let Some(t) = stop.motion_stopped_ms {
                r.insert("motionStoppedAt".into(), self.stamp(t).into());
                r.insert("motionStoppedAfterMs".into(), t.saturating_sub(stop.requested_ms).into());
            }
            x.insert("stop".into(), Value::Object(r));
        }
        m.insert("safetyEvents".into(), Value::Array(safety));
        m.insert("humanInterventions".into(), Value::Array(self.human_interventions.clone()));
        if !self.confirmations.is_empty() {
            m.insert("x-confirmedBy".into(), Value::Array(self.confirmations.clone()));
        }
        m.insert("energyKwh".into(), num(self.plant.energy_j / 3.6e6));
        let mut consent = Map::new();
        consent.insert("dataset".into(), "none".into());
        consent.insert("withdrawable".into(), true.into());
        m.insert("consent".into(), Value::Object(consent));
        let mut privacy = Map::new();
        privacy.insert("personalData".into(), "none".into());
        m.insert("privacy".into(), Value::Object(privacy));
        x.insert("seed".into(), self.seed.into());
        x.insert("steps".into(), Value::Array(self.step_details.clone()));
        x.insert("safety".into(), Value::Array(self.safety_details.clone()));
        x.insert("simulatedMs".into(), self.now_ms.into());
        x.insert("heatOnAtEnd".into(), self.heat_on().into());
        m.insert("x-sim".into(), Value::Object(x));
        self.log = Some(Value::Object(m));
    }
}
