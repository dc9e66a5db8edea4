//! The executor: lifecycle, controller, safety monitor, stop handling, status, log and trace.

use std::sync::Arc;

use canonical_json::{Map, Value};
use cookwala::dryrun::{DryRunError, Refusal};
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

mod controller;
mod lifecycle;
mod monitor;
mod report;

/// The simulator's physics step (ms).
pub const TICK_MS: u64 = 100;
/// Sensor sampling period (ms).
pub const SAMPLE_MS: u64 = 1_000;
pub use crate::config::MOTION_STOP_MS;
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
    /// Admission could not decide.
    #[error("admission: {0}")]
    Admission(String),
    /// An accepted admission this executor cannot enforce (see [`Simulation::from_admission`]).
    #[error("cannot enforce the admitted limits: {0}")]
    CannotEnforce(String),
    /// The Core state table has no move from `from` to `to`.
    #[error("no transition from {from} to {to}")]
    IllegalTransition {
        /// The current state.
        from: &'static str,
        /// The state asked for.
        to: &'static str,
    },
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

/// The `x-sim.stop.reason` of a stop from the device's own control.
pub const LOCAL_STOP: &str = "local";

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
    /// Moves the simulator's own logic asked for that the state table refused (`from->to`).
    rejected_transitions: Vec<String>,
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
    /// Prepares an execution straight from documents: [`crate::admit`] (the dry run with the
    /// effective limits, and what this executor cannot enforce; no prechecks), then
    /// [`Simulation::from_admission`]. Starts in `accepted`, or `refused` (final) with the
    /// refusal.
    ///
    /// # Errors
    /// [`SimError::DryRun`] when the documents cannot be read at all; [`SimError::Clock`] for a
    /// start time the calendar cannot represent.
    pub fn new(config: SimConfig) -> Result<Simulation, SimError> {
        let pack = config.pack.clone().unwrap_or_else(cookwala::limits::default_pack);
        let now =
            Instant::from_unix(config.start_unix_ms.div_euclid(1000), 0).ok_or(SimError::Clock)?;
        let request = cookwala::admission::Request {
            precheck: None,
            recipe: &config.recipe,
            device: &config.device,
            pack: &pack,
            narrowing: config.extra_limits.as_ref(),
            human_present: config.human_present,
            allow_model: config.allow_model,
            now,
        };
        let admission = crate::admit(&request).map_err(|e| match e {
            cookwala::admission::AdmissionError::DryRun(d) => SimError::DryRun(d),
            other => SimError::Admission(other.to_string()),
        })?;
        Simulation::from_admission(config, &admission)
    }

    /// Builds the run admission decided: its plan (or its refusal: the execution starts
    /// `refused`, final) under its effective limits. The one way a run is built: a hub calls
    /// it with the admission it made and stored, and again with the stored one after a
    /// restart; this never decides again. `config.pack` and `config.extra_limits` are not
    /// read (the limits are the admission's).
    ///
    /// # Errors
    /// [`SimError::Clock`] for a start time the calendar cannot represent;
    /// [`SimError::CannotEnforce`] for an accepted admission whose limits this executor cannot
    /// enforce (one not made by [`crate::admit`], e.g. a record from another version).
    pub fn from_admission(
        config: SimConfig,
        admission: &cookwala::admission::Admission,
    ) -> Result<Simulation, SimError> {
        let vocab = Vocabulary::builtin();
        let limits_doc = &admission.limits;
        let start_secs = config.start_unix_ms.div_euclid(1000);
        let now = Instant::from_unix(start_secs, 0).ok_or(SimError::Clock)?;
        let plan = admission.plan().to_vec();
        let refusal = admission.refusal().cloned();
        let parsed = match (limits::parse(limits_doc), &refusal) {
            (Ok(l), _) => l,
            (Err(_), Some(_)) => limits::Limits::default(),
            (Err(detail), None) => return Err(SimError::CannotEnforce(detail)),
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
        // One sensor per id (the first listed): a device listing one probe thousands of times
        // made every tick read, search and summarise each copy against the others (issue 22).
        let mut seen = std::collections::HashSet::new();
        let sensors = config
            .device
            .pointer("/capabilities/sensors")
            .and_then(Value::as_array)
            .unwrap_or_default()
            .iter()
            .filter_map(|s| {
                let id = s.get("sensor")?.as_str()?;
                if !seen.insert(id) {
                    return None;
                }
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
        let limits = parsed;
        let specs: Vec<Arc<StepSpec>> = steps::build(vocab, &config.recipe, &plan, spec.altitude_m)
            .into_iter()
            .map(Arc::new)
            .collect();
        let recipe_classes = limits::food_classes(Some(&config.recipe));
        if refusal.is_none()
            && let Some(r) = limits::start_check(&limits, &specs, &recipe_classes, MOTION_STOP_MS)
        {
            return Err(SimError::CannotEnforce(r.detail));
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
            rejected_transitions: Vec::new(),
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
        self.stop_as("requested", reason)
    }

    /// A stop from the device's own control (the button on the appliance), which needs no
    /// network: [`Simulation::stop`] recorded as `local`, so the log carries `x-localStop`
    /// (`requestedAt`, `motionStoppedAt`, `heatOffAt`) beside `x-sim.stop`.
    pub fn stop_local(&mut self) -> Vec<SimEvent> {
        self.stop_as(LOCAL_STOP, "stopped on the device (local stop control)")
    }

    fn stop_as(&mut self, origin: &str, reason: &str) -> Vec<SimEvent> {
        let mut out = Vec::new();
        match self.state {
            S::Accepted => {
                self.stop = Some(StopRecord {
                    reason: origin.to_owned(),
                    requested_ms: self.now_ms,
                    heat_cut_ms: Some(self.now_ms),
                    motion_stopped_ms: Some(self.now_ms),
                });
                self.heat_cut = true;
                self.set_state(S::Stopped, Some(reason.to_owned()), &mut out);
                self.finish("aborted_safe");
            }
            S::Preparing | S::Running | S::Paused | S::NeedsHuman => {
                self.begin_stopping(origin, "aborted_safe", &mut out);
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
        self.transition(S::Paused, None, &mut out)?;
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
                self.transition(S::Running, None, &mut out)?;
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
        self.transition(S::Running, None, &mut out)?;
        let moved = self.status();
        if std::mem::take(&mut self.pending_completion) {
            self.next_step(self.specs.len(), &mut out);
            return Ok((out, moved));
        }
        let finish_step = self.step.as_ref().is_some_and(|r| r.waiting_human);
        if finish_step {
            if let Some(run) = self.step.as_mut() {
                run.verified_by = "human".to_owned();
                // A step a person performs is done once confirmed (it is logged as performed).
                if performed {
                    run.waiting_human = false;
                }
            }
            self.end_step(&mut out);
        }
        Ok((out, moved))
    }

    fn wrong(&self, action: &'static str) -> SimError {
        SimError::WrongState { action, state: self.state.as_str() }
    }
}
