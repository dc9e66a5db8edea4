//! What [`crate::Simulation::advance`] reports: state changes, steps, readings, safety actions.

use canonical_json::{Map, Value};
use cookwala::execution::ExecutionState;

use crate::num;

/// CloudEvents `cookwalapriority`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priority {
    /// A safety action (a limit fired, heat cut).
    Safety,
    /// A state change.
    High,
    /// Step progress.
    Normal,
    /// Telemetry.
    Low,
}

impl Priority {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Safety => "safety",
            Priority::High => "high",
            Priority::Normal => "normal",
            Priority::Low => "low",
        }
    }
}

/// One observable happening, stamped with simulated time and the status `seq` it produced (or,
/// for readings, the `seq` current when it was taken).
#[derive(Clone, Debug, PartialEq)]
pub struct SimEvent {
    /// Simulated milliseconds since the start.
    pub at_ms: u64,
    /// The status `seq` after the event.
    pub seq: u64,
    /// What happened.
    pub kind: EventKind,
}

/// The kinds of [`SimEvent`].
#[derive(Clone, Debug, PartialEq)]
pub enum EventKind {
    /// A lifecycle transition; `why` is set when a person is needed.
    State {
        /// Previous state.
        from: ExecutionState,
        /// New state.
        to: ExecutionState,
        /// Why a person is needed (for `needs_human`), or why it stopped.
        why: Option<String>,
    },
    /// A step began.
    StepStarted {
        /// Node id.
        node: String,
        /// Op id.
        op: String,
        /// A person performs it.
        by_human: bool,
    },
    /// A step ended.
    StepEnded {
        /// Node id.
        node: String,
        /// Op id.
        op: String,
        /// The medium stayed in its envelope once reached.
        envelope_ok: bool,
    },
    /// Progress and readings were published.
    Progress {
        /// Node id.
        node: String,
        /// 0..1.
        progress: f64,
    },
    /// A sensor reading (1 Hz per declared temperature sensor).
    Reading {
        /// Sensor id.
        sensor: String,
        /// Value.
        value: f64,
        /// Unit (`degC`).
        unit: &'static str,
    },
    /// A safety limit or guard fired, or a sensor failed.
    Safety {
        /// The limit id (`oil.max_temp`, `x-sim.heater_runaway`, `x-sim.sensor_fault`, …).
        limit: String,
        /// The limit's action (`cut_heat`, `stop_all`, `ask_human`, `alert`).
        action: String,
        /// `warning`, `alarm` or `emergency`.
        level: &'static str,
        /// The offending value, if any.
        value: Option<f64>,
        /// A sentence for people.
        detail: String,
    },
    /// All heaters were switched off by a stop or a safety action.
    HeatCut {
        /// Why.
        reason: String,
    },
    /// All motion was stopped by a stop or a safety action.
    MotionStopped {
        /// Why.
        reason: String,
    },
}

/// The SafetyData `action` (what every participant must do) for a limit's action: `cut_heat`
/// → `heat_off_all`; `stop_all`, `stop_motion` and `refuse_start` (each ends the execution) →
/// `abort_session`; `ask_human` → `pause_all`; `alert` → `none`.
pub fn safety_data_action(limit_action: &str) -> &'static str {
    match limit_action {
        "cut_heat" => "heat_off_all",
        "stop_all" | "stop_motion" | "refuse_start" => "abort_session",
        "ask_human" => "pause_all",
        _ => "none",
    }
}

impl SimEvent {
    /// The CloudEvents `type`.
    pub fn event_type(&self) -> &'static str {
        match &self.kind {
            EventKind::State { to: ExecutionState::Completed, .. } => {
                "cookwala.execution.completed"
            }
            EventKind::State { to: ExecutionState::Refused, .. } => "cookwala.execution.refused",
            EventKind::State { .. } => "cookwala.execution.state_changed",
            EventKind::StepStarted { .. }
            | EventKind::StepEnded { .. }
            | EventKind::Progress { .. } => "cookwala.execution.step",
            EventKind::Reading { .. } => "x-cookwala-rs.reading",
            EventKind::Safety { .. } => "cookwala.safety.limit_fired",
            EventKind::HeatCut { .. } => "x-cookwala-rs.heat_cut",
            EventKind::MotionStopped { .. } => "x-cookwala-rs.motion_stopped",
        }
    }

    /// The CloudEvents `cookwalapriority`.
    pub fn priority(&self) -> Priority {
        match &self.kind {
            EventKind::Safety { .. }
            | EventKind::HeatCut { .. }
            | EventKind::MotionStopped { .. } => Priority::Safety,
            EventKind::State { .. } => Priority::High,
            EventKind::StepStarted { .. } | EventKind::StepEnded { .. } => Priority::Normal,
            EventKind::Progress { .. } | EventKind::Reading { .. } => Priority::Low,
        }
    }

    /// The CloudEvents `cookwalalatency`: safety actions are reported after the device did them.
    pub fn latency(&self) -> &'static str {
        match self.priority() {
            Priority::Safety => "local_safety",
            Priority::High | Priority::Normal => "interactive",
            Priority::Low => "background",
        }
    }

    /// The CloudEvents `data` object. For safety events, a SafetyData: `level`, `action` (see
    /// [`safety_data_action`]), `reading{value, unit}` when there is a value, and
    /// `x-limit`, `x-limitAction`, `x-detail`.
    pub fn data(&self) -> Value {
        let mut m = Map::new();
        match &self.kind {
            EventKind::State { from, to, why } => {
                m.insert("from".into(), from.as_str().into());
                m.insert("state".into(), to.as_str().into());
                if let Some(w) = why {
                    m.insert("why".into(), w.as_str().into());
                }
            }
            EventKind::StepStarted { node, op, by_human } => {
                m.insert("node".into(), node.as_str().into());
                m.insert("op".into(), op.as_str().into());
                m.insert("phase".into(), "started".into());
                m.insert("by".into(), if *by_human { "human" } else { "device" }.into());
            }
            EventKind::StepEnded { node, op, envelope_ok } => {
                m.insert("node".into(), node.as_str().into());
                m.insert("op".into(), op.as_str().into());
                m.insert("phase".into(), "ended".into());
                m.insert("envelopeOk".into(), (*envelope_ok).into());
            }
            EventKind::Progress { node, progress } => {
                m.insert("node".into(), node.as_str().into());
                m.insert("phase".into(), "progress".into());
                m.insert("progress".into(), num(*progress));
            }
            EventKind::Reading { sensor, value, unit } => {
                m.insert("sensor".into(), sensor.as_str().into());
                m.insert("value".into(), num(*value));
                m.insert("unit".into(), (*unit).into());
            }
            EventKind::Safety { limit, action, level, value, detail } => {
                // SafetyData: `level` and `action` (the response asked of every participant),
                // an optional `reading`, and everything else under `x-` names.
                m.insert("level".into(), (*level).into());
                m.insert("action".into(), safety_data_action(action).into());
                if let Some(v) = value {
                    let mut reading = Map::new();
                    reading.insert("value".into(), num(*v));
                    reading.insert("unit".into(), "degC".into());
                    m.insert("reading".into(), Value::Object(reading));
                }
                m.insert("x-limit".into(), limit.as_str().into());
                m.insert("x-limitAction".into(), action.as_str().into());
                m.insert("x-detail".into(), detail.as_str().into());
            }
            EventKind::HeatCut { reason } | EventKind::MotionStopped { reason } => {
                m.insert("reason".into(), reason.as_str().into());
            }
        }
        Value::Object(m)
    }
}
