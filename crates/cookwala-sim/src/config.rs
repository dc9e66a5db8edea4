//! Simulation inputs: the documents, the plan, faults and the clock mapping.

use canonical_json::Value;

pub use cookwala::admission::PlanStep;

/// Delay from a stop request to all motion stopped (ms); the budget is 500 ms. (Here, not in
/// `sim`, because admission's start check reads it too: see `crate::admit`.)
pub const MOTION_STOP_MS: u64 = 100;

/// A fault to inject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// The step's temperature sensor stops reporting 5 s into the step.
    Sensor,
    /// The heater relay sticks on at full power from the start of the step.
    Overheat,
    /// The step's completion cue never arrives, so it runs into its `maxTime`.
    Timeout,
}

impl FaultKind {
    /// `sensor`, `overheat` or `timeout`.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Sensor => "sensor",
            FaultKind::Overheat => "overheat",
            FaultKind::Timeout => "timeout",
        }
    }

    /// Parses [`FaultKind::as_str`] (also `sensor_fault`).
    pub fn parse(text: &str) -> Option<FaultKind> {
        match text {
            "sensor" | "sensor_fault" => Some(FaultKind::Sensor),
            "overheat" => Some(FaultKind::Overheat),
            "timeout" => Some(FaultKind::Timeout),
            _ => None,
        }
    }
}

/// A fault and the step it hits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// What goes wrong.
    pub kind: FaultKind,
    /// The node; `None` picks the first device step with a temperature band (for `timeout`,
    /// the first device step when no step is heated).
    pub node: Option<String>,
}

/// Everything a [`crate::Simulation`] starts from.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// The Recipe document.
    pub recipe: Value,
    /// The device's Capabilities document (`x-sim` tunes the physics).
    pub device: Value,
    /// Extra SafetyLimits to add to the built-in default pack. They can only narrow: the
    /// effective pack is [`cookwala::limits::narrow`]`(default_pack, extra)`.
    pub extra_limits: Option<Value>,
    /// A person is present in the kitchen.
    pub human_present: bool,
    /// The `model` rung may be used.
    pub allow_model: bool,
    /// The noise seed.
    pub seed: u64,
    /// Faults to inject.
    pub faults: Vec<Fault>,
    /// The wall-clock time of simulated time 0, in milliseconds since the Unix epoch
    /// (timestamps are this plus simulated ms).
    pub start_unix_ms: i64,
    /// ExecutionStatus `id`.
    pub execution_id: String,
    /// ExecutionStatus `request` (the ExecuteRequest id).
    pub request_id: String,
    /// Simulated milliseconds per wall-clock millisecond (the hub's `--speed`; 1 when the
    /// simulation is its own clock). Every time a document says (`updatedAt`, `eta`, readings'
    /// `at`, the log's `startedAt`/`endedAt`) is wall-clock time: `start_unix_ms` plus
    /// simulated ms divided by this. Simulated elapsed time stays in `x-sim`.
    pub time_scale: f64,
    /// The SafetyLimits pack the executor enforces (the device maker's, `serve --limits`);
    /// `None` is the built-in default pack. `extra_limits` can only narrow it.
    pub pack: Option<Value>,
    /// How often (simulated ms) a running execution publishes readings and progress, each a
    /// new `seq`. Paused or waiting executions publish nothing, so `If-Match` stays stable.
    pub publish_every_ms: u64,
}

impl SimConfig {
    /// Defaults: nobody present, model allowed, seed 1, no faults, start 2026-01-01T00:00:00Z,
    /// ids `sim-1` / `sim-1-request`, dry run here, publish every 5 s.
    pub fn new(recipe: Value, device: Value) -> SimConfig {
        SimConfig {
            recipe,
            device,
            extra_limits: None,
            human_present: false,
            allow_model: true,
            seed: 1,
            faults: Vec::new(),
            start_unix_ms: 1_767_225_600_000,
            time_scale: 1.0,
            pack: None,
            execution_id: "sim-1".to_owned(),
            request_id: "sim-1-request".to_owned(),
            publish_every_ms: 5_000,
        }
    }
}
