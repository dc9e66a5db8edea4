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

use crate::kitchen::{self, Active, Announce, OfflineReason};
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

/// `e` with its `id` replaced (events whose id is not `<subject>/<seq>/<type>`).
fn with_id(mut e: Value, id: String) -> Value {
    if let Some(m) = e.as_object_mut() {
        m.insert("id".into(), id.into());
    }
    e
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
    /// A device process on the kitchen bus: its announcement (so a hub that missed the
    /// `online` learns it from any heartbeat) and its executions in detail (`x-executions`:
    /// id, state, seq, step and the step's hazards, which a hub needs once the device is lost).
    pub process: Option<(&'a Announce, &'a [Value])>,
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
    if let Some((announce, executions)) = h.process {
        data.extend(announce.to_data());
        data.insert("x-executions".into(), Value::Array(executions.to_vec()));
    }
    let e = envelope(
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
    with_id(e, format!("{}/heartbeat/{}/{}", h.device, h.boot, h.n))
}

/// A device's `cookwala.device.online` (retained on its device topic): `data` is its
/// [`Announce`]. The id names the instance, so a redelivered copy is one event.
pub fn online(a: &Announce, now_ms: i64) -> Value {
    device_event(kitchen::ONLINE, a, a.to_data(), now_ms, "online")
}

/// The `cookwala.device.offline` a device leaves as its MQTT will (the broker publishes it,
/// retained, when the device's session dies): `data` is its [`Announce`] and `reason`
/// `session_lost`. Its `time` is when the will was set (the broker cannot stamp it).
pub fn offline_will(a: &Announce, now_ms: i64) -> Value {
    let mut data = a.to_data();
    data.insert("reason".into(), "session_lost".into());
    device_event(kitchen::OFFLINE, a, data, now_ms, "offline")
}

fn device_event(ty: &str, a: &Announce, data: Map, now_ms: i64, what: &str) -> Value {
    let e = envelope(
        Attrs {
            ty,
            source: device_source(&a.device),
            subject: &a.device,
            seq: None,
            time: cookwala_sim::rfc3339_ms(now_ms),
            priority: "high",
            latency: "interactive",
        },
        Value::Object(data),
    );
    with_id(e, format!("{}/{what}/{}", a.device, a.instance))
}

/// A `cookwala.telemetry.reading` of `device` for execution `exec`: `data` is a
/// TelemetryData (`taskId`, `readings` of `{sensor, value, unit}`, the time of each under
/// `x-at`). Live only, like heartbeats. `n` numbers it within this process (`boot`).
pub fn telemetry(
    device: &str,
    exec: &str,
    readings: &[Value],
    now_ms: i64,
    boot: i64,
    n: u64,
) -> Value {
    let readings = readings
        .iter()
        .filter_map(|r| {
            let mut m = Map::new();
            m.insert("sensor".into(), r.get("sensor")?.clone());
            m.insert("value".into(), r.get("value")?.clone());
            if let Some(u) = r.get("unit") {
                m.insert("unit".into(), u.clone());
            }
            if let Some(t) = r.get("at") {
                m.insert("x-at".into(), t.clone());
            }
            Some(Value::Object(m))
        })
        .collect();
    let mut data = Map::new();
    data.insert("taskId".into(), exec.into());
    data.insert("readings".into(), Value::Array(readings));
    let e = envelope(
        Attrs {
            ty: kitchen::TELEMETRY,
            source: device_source(device),
            subject: device,
            seq: None,
            time: cookwala_sim::rfc3339_ms(now_ms),
            priority: "low",
            latency: "realtime",
        },
        Value::Object(data),
    );
    with_id(e, format!("{device}/telemetry/{boot}/{n}"))
}

/// What a coordinating hub knows of an execution on a device it lost.
#[derive(Clone, Copy, Debug)]
pub struct Lost<'a> {
    /// The device.
    pub device: &'a str,
    /// The life of the device that ended.
    pub instance: &'a str,
    /// Why it is offline.
    pub reason: OfflineReason,
    /// The execution as last reported.
    pub active: &'a Active,
    /// When the hub decided it was lost (Unix ms).
    pub now_ms: i64,
    /// When the device was last heard (Unix ms).
    pub last_seen_ms: i64,
}

/// The person the hub hands a lost device's execution to, and the audience it notifies.
pub const RESPONSIBLE: &str = "human:primary";
/// Who else is told.
pub const HOUSEHOLD: &str = "role:household";

/// A `cookwala.handoff.proposed` (subject: the execution) from the lost device to the person
/// responsible: the step it was on, with its hazards, and the last state the device reported.
/// The hub does not know whether the heat is on: the device is unreachable.
pub fn handoff_proposed(l: &Lost<'_>) -> Value {
    let a = l.active;
    let mut data = Map::new();
    data.insert("executionId".into(), a.id.as_str().into());
    data.insert("from".into(), format!("device:{}", l.device).into());
    data.insert("to".into(), RESPONSIBLE.into());
    data.insert("reason".into(), "device_offline".into());
    data.insert("offlineReason".into(), l.reason.as_str().into());
    data.insert("lastState".into(), a.state.as_str().into());
    data.insert("lastSeq".into(), a.seq.into());
    data.insert("lastSeenAt".into(), cookwala_sim::rfc3339_ms(l.last_seen_ms).into());
    let mut step = Map::new();
    if let Some(n) = &a.node {
        step.insert("node".into(), n.as_str().into());
    }
    if let Some(o) = &a.op {
        step.insert("op".into(), o.as_str().into());
    }
    step.insert("hazards".into(), Value::Array(a.hazards.clone()));
    data.insert("step".into(), Value::Object(step));
    lost_event(l, kitchen::HANDOFF_PROPOSED, &a.id, data)
}

/// The hub's event about a lost device's execution: safety priority, its id the execution,
/// the type and the lost instance (one per loss, however often it is written).
fn lost_event(l: &Lost<'_>, ty: &str, subject: &str, data: Map) -> Value {
    let e = envelope(
        Attrs {
            ty,
            source: HUB_SOURCE.to_owned(),
            subject,
            seq: None,
            time: cookwala_sim::rfc3339_ms(l.now_ms),
            priority: "safety",
            latency: "interactive",
        },
        Value::Object(data),
    );
    let name = ty.strip_prefix("cookwala.").unwrap_or(ty);
    with_id(e, format!("{}/{name}/{}", l.active.id, l.instance))
}

/// The `cookwala.notify.request` (subject `household`, so topic `notify/household`) that
/// goes with [`handoff_proposed`]: urgency `time_critical` (a device that may be heating is
/// out of reach), the message in English, `relatesTo` the execution.
pub fn notify_lost(l: &Lost<'_>) -> Value {
    let a = l.active;
    let mut data = Map::new();
    data.insert(
        "audience".into(),
        Value::Array(vec![Value::from(RESPONSIBLE), Value::from(HOUSEHOLD)]),
    );
    data.insert("urgency".into(), "time_critical".into());
    let step = a.op.as_deref().or(a.node.as_deref()).unwrap_or("a step");
    let mut msg = Map::new();
    msg.insert(
        "en".into(),
        format!(
            "The device {} stopped answering while running {} ({step}). Check it in person: it \
             may still be heating.",
            l.device, a.id
        )
        .into(),
    );
    data.insert("message".into(), Value::Object(msg));
    data.insert("relatesTo".into(), a.id.as_str().into());
    lost_event(l, kitchen::NOTIFY_REQUEST, "household", data)
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
    let e = envelope(
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
    with_id(e, format!("{subject}/recall.published/{short}"))
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
