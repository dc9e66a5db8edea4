//! CloudEvents 1.0 (structured JSON, `schemas/event.schema.json`) for what the hub reports: the
//! pure mapping from simulator events, new executions, heartbeats and recalls to event documents.
//!
//! No I/O and no clock here: callers pass the times. The hub commits execution events to the
//! outbox together with the change they report (see [`crate::storage::Commit`]).
//!
//! **Attributes.** `specversion` `1.0`; `source` `/cookwala/devices/<device id>` (the hub's own
//! events: `/cookwala/hub`); `subject` the execution id (the device id for heartbeats, the recall
//! id for recalls); `time` the simulated wall-clock time of the change (the status `updatedAt`);
//! `datacontenttype` `application/json`; `cookwalaseq` the ExecutionStatus `seq` the event
//! belongs to; `cookwalapriority` from the simulator (`safety` for limits, `high` for state
//! changes, `normal` for steps, `low` for progress and heartbeats); `cookwalalatency`
//! `local_safety` for safety events (they report what the device already did), `interactive`
//! for the other execution events, `background` for heartbeats.
//!
//! **Ids.** `<subject>/<seq>/<type without "cookwala.">`, so a re-emission of the same change
//! has the same id and the outbox deduplicates it. The simulator increments `seq` before every
//! event the hub keeps, so no two kept events of one execution share a `seq`; the type is in
//! the id all the same.
//!
//! **Data.** Execution events carry an ExecutionStatus as of their `seq`. The event that
//! reports a new execution carries the full status (it is the status of `seq` 0); later events
//! carry the status's required fields (`core`, `kind`, `id`, `request`, `state`, `seq`,
//! `updatedAt`), plus `humanNeeded` in `needs_human`, a `step` `{node, op}` or
//! `{node, progress}` for step events, and an `x-hub-event` extension: `{from, why}` for state
//! changes, `{phase: started | ended | progress, by, envelopeOk}` for steps. (The full status of
//! an intermediate `seq` is never materialised by the simulator, which may move several `seq`s
//! in one clock step; the full current status is at `GET /v1/executions/{id}`.) Safety events
//! carry a SafetyData: `level`, `action` (`heat_off_all` for `cut_heat`, `abort_session` for
//! `stop_all`, `pause_all` for `ask_human`, else `none`), `reading` `{value, unit}` when a
//! value tripped the limit, and `x-limit`, `x-limitAction`, `x-detail`.
//!
//! **What is left out.** Sensor readings (1 Hz per sensor) are not events: they are in the
//! status's `step.readings`. The heat-cut and motion-stop notices are not separate events: the
//! limit's `action` and the following `state_changed` say it. Progress publications (every 5
//! simulated seconds) are rate-limited by [`ProgressGate`] to the quarters of each step, so
//! `cookwalaseq` is strictly increasing per subject but not dense.

use std::collections::BTreeMap;

use canonical_json::{Map, Value};
use cookwala::execution::ExecutionState;
use cookwala_sim::{EventKind, SimEvent};

use crate::storage::NewEvent;

/// `cookwala.execution.accepted`.
pub const ACCEPTED: &str = "cookwala.execution.accepted";
/// `cookwala.execution.refused`.
pub const REFUSED: &str = "cookwala.execution.refused";
/// `cookwala.execution.state_changed`.
pub const STATE_CHANGED: &str = "cookwala.execution.state_changed";
/// `cookwala.execution.step`.
pub const STEP: &str = "cookwala.execution.step";
/// `cookwala.execution.completed`.
pub const COMPLETED: &str = "cookwala.execution.completed";
/// `cookwala.safety.limit_fired`.
pub const LIMIT_FIRED: &str = "cookwala.safety.limit_fired";
/// `cookwala.recall.published`.
pub const RECALL_PUBLISHED: &str = "cookwala.recall.published";
/// `cookwala.device.heartbeat`.
pub const HEARTBEAT: &str = "cookwala.device.heartbeat";

/// The `source` of the hub's own events (recalls).
pub const HUB_SOURCE: &str = "/cookwala/hub";

/// The `source` of a device's events.
pub fn device_source(device: &str) -> String {
    format!("/cookwala/devices/{device}")
}

/// The deterministic event id: `<subject>/<seq>/<type without "cookwala.">`.
pub fn event_id(subject: &str, seq: u64, ty: &str) -> String {
    format!("{subject}/{seq}/{}", ty.strip_prefix("cookwala.").unwrap_or(ty))
}

/// What is fixed for one execution's events.
#[derive(Clone, Copy, Debug)]
pub struct Execution<'a> {
    /// The execution id (the `subject`).
    pub id: &'a str,
    /// The ExecuteRequest id (`request` of the status).
    pub request: &'a str,
    /// The device id (the `source`).
    pub device: &'a str,
    /// The wall-clock time simulated time 0 maps to.
    pub start_unix_ms: i64,
    /// Simulated ms per wall ms: an event `at_ms` into the simulation happened at
    /// `start_unix_ms + at_ms / time_scale` (wall-clock time, like every document time).
    pub time_scale: f64,
}

/// Rate-limits progress events: one per quarter of a step (25, 50, 75 and 100 %).
#[derive(Clone, Debug, Default)]
pub struct ProgressGate {
    last: BTreeMap<String, (String, u8)>,
}

impl ProgressGate {
    fn started(&mut self, subject: &str, node: &str) {
        self.last.insert(subject.to_owned(), (node.to_owned(), 0));
    }

    /// True when `progress` of `node` reached a quarter not reported yet.
    fn admit(&mut self, subject: &str, node: &str, progress: f64) -> bool {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let quarter = (progress.clamp(0.0, 1.0) * 4.0).floor() as u8;
        let entry = self.last.entry(subject.to_owned()).or_insert_with(|| (node.to_owned(), 0));
        if entry.0 != node {
            *entry = (node.to_owned(), 0);
        }
        if quarter > entry.1 {
            entry.1 = quarter;
            true
        } else {
            false
        }
    }

    /// Forgets an execution (it ended).
    pub fn forget(&mut self, subject: &str) {
        self.last.remove(subject);
    }
}

struct Attrs<'a> {
    ty: &'a str,
    source: String,
    subject: &'a str,
    seq: Option<u64>,
    time: String,
    priority: &'static str,
    latency: &'static str,
}

fn envelope(a: Attrs<'_>, data: Value) -> Value {
    let mut m = Map::new();
    m.insert("specversion".into(), "1.0".into());
    let id = match a.seq {
        Some(seq) => event_id(a.subject, seq, a.ty),
        None => format!("{}/{}", a.subject, a.ty.strip_prefix("cookwala.").unwrap_or(a.ty)),
    };
    m.insert("id".into(), id.into());
    m.insert("source".into(), a.source.into());
    m.insert("type".into(), a.ty.into());
    m.insert("subject".into(), a.subject.into());
    m.insert("time".into(), a.time.into());
    m.insert("datacontenttype".into(), "application/json".into());
    if let Some(seq) = a.seq {
        m.insert("cookwalaseq".into(), seq.into());
    }
    m.insert("cookwalapriority".into(), a.priority.into());
    m.insert("cookwalalatency".into(), a.latency.into());
    m.insert("data".into(), data);
    Value::Object(m)
}

/// The required fields of an ExecutionStatus as of `seq`.
fn status_at(exe: &Execution<'_>, state: &str, seq: u64, time: &str) -> Map {
    let mut m = Map::new();
    m.insert("core".into(), "0.2.0".into());
    m.insert("kind".into(), "ExecutionStatus".into());
    m.insert("id".into(), exe.id.into());
    m.insert("request".into(), exe.request.into());
    m.insert("state".into(), state.into());
    m.insert("seq".into(), seq.into());
    m.insert("updatedAt".into(), time.into());
    m
}

/// The event reporting a new execution, from its first status: `accepted`, or `refused`
/// when the execution was refused at creation. `data` is the full status.
pub fn created(exe: &Execution<'_>, status: &Value) -> Value {
    let refused = status.get("state").and_then(Value::as_str) == Some("refused");
    let seq = status.get("seq").and_then(Value::as_i64).and_then(|n| u64::try_from(n).ok());
    let seq = seq.unwrap_or(0);
    let time = status.get("updatedAt").and_then(Value::as_str).unwrap_or_default().to_owned();
    envelope(
        Attrs {
            ty: if refused { REFUSED } else { ACCEPTED },
            source: device_source(exe.device),
            subject: exe.id,
            seq: Some(seq),
            time,
            priority: "high",
            latency: "interactive",
        },
        status.clone(),
    )
}

/// A `state_changed` (or `completed`) event for a transition the hub made itself (restart
/// recovery), at `time`.
pub fn transition(
    exe: &Execution<'_>,
    from: &str,
    to: &str,
    seq: u64,
    time: &str,
    why: Option<&str>,
) -> Value {
    let mut data = status_at(exe, to, seq, time);
    let mut x = Map::new();
    x.insert("from".into(), from.into());
    if let Some(w) = why {
        x.insert("why".into(), w.into());
    }
    data.insert("x-hub-event".into(), Value::Object(x));
    let ty = if to == "completed" { COMPLETED } else { STATE_CHANGED };
    envelope(
        Attrs {
            ty,
            source: device_source(exe.device),
            subject: exe.id,
            seq: Some(seq),
            time: time.to_owned(),
            priority: "high",
            latency: "interactive",
        },
        Value::Object(data),
    )
}

/// The events for one batch of simulator events of `exe` (from `advance`, `stop`, `resume`, …);
/// `state` is the execution's state before the batch. Readings and the heat-cut and
/// motion-stop notices are skipped; progress is rate-limited by `gate`.
pub fn from_sim(
    exe: &Execution<'_>,
    mut state: ExecutionState,
    events: &[SimEvent],
    gate: &mut ProgressGate,
) -> Vec<Value> {
    let mut out = Vec::new();
    for ev in events {
        let time = cookwala_sim::rfc3339_ms(cookwala_sim::wall_unix_ms(
            exe.start_unix_ms,
            exe.time_scale,
            ev.at_ms,
        ));
        match &ev.kind {
            EventKind::State { from, to, why } => {
                state = *to;
                let mut e = transition(exe, from.as_str(), to.as_str(), ev.seq, &time, None);
                let data = e.as_object_mut().and_then(|m| m.get_mut("data"));
                if let Some(data) = data.and_then(Value::as_object_mut) {
                    if *to == ExecutionState::NeedsHuman {
                        let mut h = Map::new();
                        let text = why.as_deref().unwrap_or("a person is needed");
                        h.insert("why".into(), text.chars().take(300).collect::<String>().into());
                        data.insert("humanNeeded".into(), Value::Object(h));
                    }
                    if let (Some(w), Some(Value::Object(x))) = (why, data.get_mut("x-hub-event")) {
                        x.insert("why".into(), w.as_str().into());
                    }
                }
                if to.is_final() {
                    gate.forget(exe.id);
                }
                out.push(e);
            }
            EventKind::StepStarted { node, op, by_human } => {
                gate.started(exe.id, node);
                let mut step = Map::new();
                step.insert("node".into(), node.as_str().into());
                step.insert("op".into(), op.as_str().into());
                let mut x = Map::new();
                x.insert("phase".into(), "started".into());
                x.insert("by".into(), if *by_human { "human" } else { "device" }.into());
                out.push(step_event(exe, state, ev, &time, step, x));
            }
            EventKind::StepEnded { node, op, envelope_ok } => {
                let mut step = Map::new();
                step.insert("node".into(), node.as_str().into());
                step.insert("op".into(), op.as_str().into());
                let mut x = Map::new();
                x.insert("phase".into(), "ended".into());
                x.insert("envelopeOk".into(), (*envelope_ok).into());
                out.push(step_event(exe, state, ev, &time, step, x));
            }
            EventKind::Progress { node, progress } => {
                if !gate.admit(exe.id, node, *progress) {
                    continue;
                }
                let mut step = Map::new();
                step.insert("node".into(), node.as_str().into());
                if let Some(p) = ev.data().get("progress") {
                    step.insert("progress".into(), p.clone());
                }
                let mut x = Map::new();
                x.insert("phase".into(), "progress".into());
                out.push(step_event(exe, state, ev, &time, step, x));
            }
            EventKind::Safety { limit, action, level, value, detail } => {
                out.push(safety_event(exe, ev.seq, time, limit, action, level, *value, detail));
            }
            EventKind::Reading { .. }
            | EventKind::HeatCut { .. }
            | EventKind::MotionStopped { .. } => {}
        }
    }
    out
}

fn step_event(
    exe: &Execution<'_>,
    state: ExecutionState,
    ev: &SimEvent,
    time: &str,
    step: Map,
    x: Map,
) -> Value {
    let mut data = status_at(exe, state.as_str(), ev.seq, time);
    data.insert("step".into(), Value::Object(step));
    data.insert("x-hub-event".into(), Value::Object(x));
    envelope(
        Attrs {
            ty: STEP,
            source: device_source(exe.device),
            subject: exe.id,
            seq: Some(ev.seq),
            time: time.to_owned(),
            priority: ev.priority().as_str(),
            latency: "interactive",
        },
        Value::Object(data),
    )
}

/// The SafetyData `action` every participant must take for a limit's local action (the
/// simulator's mapping, so the event and the simulator never disagree).
pub fn safety_action(limit_action: &str) -> &'static str {
    cookwala_sim::safety_data_action(limit_action)
}

#[allow(clippy::too_many_arguments)]
fn safety_event(
    exe: &Execution<'_>,
    seq: u64,
    time: String,
    limit: &str,
    action: &str,
    level: &str,
    value: Option<f64>,
    detail: &str,
) -> Value {
    let mut data = Map::new();
    data.insert("level".into(), level.into());
    data.insert("action".into(), safety_action(action).into());
    if let Some(v) = value.and_then(|v| canonical_json::Finite::new((v * 10.0).round() / 10.0)) {
        let mut reading = Map::new();
        reading.insert("value".into(), Value::from(v));
        reading.insert("unit".into(), "degC".into());
        data.insert("reading".into(), Value::Object(reading));
    }
    data.insert("x-limit".into(), limit.into());
    data.insert("x-limitAction".into(), action.into());
    data.insert("x-detail".into(), detail.into());
    envelope(
        Attrs {
            ty: LIMIT_FIRED,
            source: device_source(exe.device),
            subject: exe.id,
            seq: Some(seq),
            time,
            priority: "safety",
            latency: "local_safety",
        },
        Value::Object(data),
    )
}

/// What a heartbeat reports.
#[derive(Clone, Debug)]
pub struct Heartbeat<'a> {
    /// The device id (the `subject`).
    pub device: &'a str,
    /// A number unique to this hub process (its start time in Unix ms), for the id.
    pub boot: i64,
    /// The heartbeat's number since the hub started.
    pub n: u64,
    /// Wall-clock time of the heartbeat (Unix ms).
    pub now_ms: i64,
    /// Ids of the executions that are not final.
    pub active: &'a [String],
    /// Real milliseconds since the hub started.
    pub uptime_ms: u64,
    /// Simulated milliseconds the hub's clock has moved since it started.
    pub sim_clock_ms: u64,
}

/// A `cookwala.device.heartbeat`: `data` is `{device, status: idle | busy, activeExecutions,
/// uptimeS, simClockMs}`. Not deduplicated across processes: the id holds the hub's boot time.
pub fn heartbeat(h: &Heartbeat<'_>) -> Value {
    let mut data = Map::new();
    data.insert("device".into(), h.device.into());
    data.insert("status".into(), if h.active.is_empty() { "idle" } else { "busy" }.into());
    data.insert(
        "activeExecutions".into(),
        Value::Array(h.active.iter().map(|s| Value::from(s.as_str())).collect()),
    );
    data.insert("uptimeS".into(), (h.uptime_ms / 1000).into());
    data.insert("simClockMs".into(), h.sim_clock_ms.into());
    let mut e = envelope(
        Attrs {
            ty: HEARTBEAT,
            source: device_source(h.device),
            subject: h.device,
            seq: None,
            time: cookwala_sim::rfc3339_ms(h.now_ms),
            priority: "low",
            latency: "background",
        },
        Value::Object(data),
    );
    if let Some(m) = e.as_object_mut() {
        m.insert("id".into(), format!("{}/heartbeat/{}/{}", h.device, h.boot, h.n).into());
    }
    e
}

/// A `cookwala.recall.published` for a Recall document: `subject` the recall id, `time` its
/// `issuedAt` (else `now_ms`), `data` the document. The id carries the document hash, so
/// publishing the same recall twice is one event and a revised recall is a new one.
pub fn recall(recall: &Value, now_ms: i64) -> Value {
    let subject = recall.get("id").and_then(Value::as_str).unwrap_or("recall");
    let hash = canonical_json::digest::document_hash(recall).unwrap_or_default();
    let short = hash.strip_prefix("sha256:").unwrap_or(&hash).get(..16).unwrap_or("0");
    let time = recall
        .get("issuedAt")
        .and_then(Value::as_str)
        .filter(|t| cookwala::time::parse_timestamp(t).is_ok())
        .map_or_else(|| cookwala_sim::rfc3339_ms(now_ms), str::to_owned);
    let mut e = envelope(
        Attrs {
            ty: RECALL_PUBLISHED,
            source: HUB_SOURCE.to_owned(),
            subject,
            seq: None,
            time,
            priority: "high",
            latency: "interactive",
        },
        recall.clone(),
    );
    if let Some(m) = e.as_object_mut() {
        m.insert("id".into(), format!("{subject}/recall.published/{short}").into());
    }
    e
}

/// The outbox row for an event document.
pub fn to_new(event: &Value) -> NewEvent {
    let s = |k: &str| event.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    NewEvent {
        id: s("id"),
        ty: s("type"),
        subject: s("subject"),
        body: crate::storage::jcs_text(event),
    }
}

#[cfg(test)]
mod tests;
