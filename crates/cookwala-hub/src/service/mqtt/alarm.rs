//! The hub's reaction to a kitchen safety alarm on `cookwala/{KITCHEN}/safety/#`.
//!
//! A message is acted on when it is a CloudEvent whose `type` starts with `cookwala.safety.`,
//! whose `source` is not the hub's own (`/cookwala/hub` or `/cookwala/devices/<served
//! device>`), and whose `data.action` asks for something:
//!
//! - `abort_session`, `evacuate`: every live execution is stopped, each through the same code
//!   path as `POST /v1/executions/{id}/stop` (the hub's own router answers the request), with
//!   an `Idempotency-Key` derived from the alarm's `id`, so a repeated alarm is one stop.
//! - `heat_off_all`: the simulated devices have no heat-only cut, so this is a stop as well
//!   (a stop cuts heat and motion; it is never less safe).
//! - `pause_all`: every `running` execution is paused (heaters and motion to their safe state).
//!
//! `data.zone` is recorded but does not narrow the reaction: the hub's devices declare no
//! zones, so every execution is in every zone.
//!
//! Each reaction is recorded, in one commit, as an IncidentReport and an
//! `x-hub.safety.alarm_handled` event (source `/cookwala/hub`, subject the alarm's zone or
//! `hub`; `data` names the alarm, the action taken, the executions affected and the time it
//! took). An alarm id already handled by this process is applied again (stops and pauses are
//! idempotent; it may be a retained alarm redelivered after a reconnect, and the hazard is
//! still on) but recorded again only when it affected an execution.
//!
//! Malformed messages (not JSON, not an event, an unknown action, larger than
//! [`MAX_ALARM_BYTES`]) are logged and dropped; an empty message (a cleared retained alarm)
//! and events that ask for nothing (`action: none`, `cookwala.safety.cleared`) are ignored.
//! Nothing here can stop the listener.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use canonical_json::{Map, Value};
use rumqttc::v5::mqttbytes::v5::Publish;

use super::MqttConfig;
use crate::service::Hub;
use crate::storage::{Commit, NewIncident, jcs_text};

/// The largest alarm payload read (64 KiB); larger messages are dropped with a note.
pub const MAX_ALARM_BYTES: usize = 64 * 1024;

/// The type of the event recording a reaction.
pub const ALARM_HANDLED: &str = "x-hub.safety.alarm_handled";

/// How many handled alarm ids are remembered.
const SEEN: usize = 256;

/// What an alarm asks the hub to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reaction {
    /// Stop every live execution (`abort_session`, `evacuate`, `heat_off_all`).
    Stop,
    /// Pause every running execution (`pause_all`).
    Pause,
}

/// An alarm the hub acts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alarm {
    /// The CloudEvent `id`.
    pub id: String,
    /// The CloudEvent `type`.
    pub ty: String,
    /// The CloudEvent `source`.
    pub source: String,
    /// `data.action`.
    pub action: String,
    /// `data.zone`, if any.
    pub zone: Option<String>,
    /// The topic it came on.
    pub topic: String,
    /// What the hub does.
    pub reaction: Reaction,
}

/// Why a message is not acted on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Skip {
    /// Nothing to do (an empty message, the hub's own event, `action: none`, not a safety
    /// event): dropped silently.
    Ignored,
    /// A malformed message: dropped with a note saying why.
    Malformed(String),
}

/// Reads one message received on the safety filter; `own_sources` are the hub's sources.
///
/// # Errors
/// The message is not an alarm the hub acts on ([`Skip`]).
pub fn parse(topic: &str, payload: &[u8], own_sources: &[String]) -> Result<Alarm, Skip> {
    if payload.is_empty() {
        return Err(Skip::Ignored);
    }
    if payload.len() > MAX_ALARM_BYTES {
        return Err(Skip::Malformed(format!(
            "{} bytes, more than the {MAX_ALARM_BYTES} read",
            payload.len()
        )));
    }
    let doc = canonical_json::parse(payload)
        .map_err(|e| Skip::Malformed(format!("not a JSON CloudEvent: {e}")))?;
    let field = |k: &str| doc.get(k).and_then(Value::as_str);
    let ty = field("type").ok_or_else(|| Skip::Malformed("no type".to_owned()))?;
    if !ty.starts_with("cookwala.safety.") || ty == "cookwala.safety.cleared" {
        return Err(Skip::Ignored);
    }
    let source = field("source").unwrap_or_default();
    if own_sources.iter().any(|s| s == source) {
        return Err(Skip::Ignored);
    }
    let id = field("id").filter(|i| !i.is_empty());
    let id = id.ok_or_else(|| Skip::Malformed("no id".to_owned()))?;
    let data = doc.get("data").ok_or_else(|| Skip::Malformed("no data".to_owned()))?;
    let action = data.get("action").and_then(Value::as_str);
    let action = action.ok_or_else(|| Skip::Malformed("no data.action".to_owned()))?;
    let reaction = match action {
        "abort_session" | "evacuate" | "heat_off_all" => Reaction::Stop,
        "pause_all" => Reaction::Pause,
        "none" => return Err(Skip::Ignored),
        other => {
            let shown: String = other.chars().take(40).collect();
            return Err(Skip::Malformed(format!("unknown data.action {shown:?}")));
        }
    };
    Ok(Alarm {
        id: id.chars().take(200).collect(),
        ty: ty.chars().take(100).collect(),
        source: source.chars().take(200).collect(),
        action: action.to_owned(),
        zone: data.get("zone").and_then(Value::as_str).map(|z| z.chars().take(100).collect()),
        topic: topic.chars().take(300).collect(),
        reaction,
    })
}

/// Receives the messages of the safety filter (one per hub, across reconnections).
#[derive(Debug)]
pub(crate) struct Listener {
    hub: Hub,
    config: Arc<MqttConfig>,
    own_sources: Arc<Vec<String>>,
    seen: Arc<std::sync::Mutex<VecDeque<String>>>,
}

impl Listener {
    pub(crate) fn new(hub: &Hub, config: Arc<MqttConfig>) -> Listener {
        let mut own = vec![crate::outbox::events::HUB_SOURCE.to_owned()];
        own.extend(hub.inner.devices.keys().map(|d| crate::outbox::events::device_source(d)));
        Listener { hub: hub.clone(), config, own_sources: Arc::new(own), seen: Arc::default() }
    }

    /// Handles one message: an alarm is acted on in its own task (so the connection keeps
    /// being served meanwhile); anything else is dropped.
    pub(crate) fn received(&mut self, p: Publish) {
        let received = Instant::now();
        let topic = String::from_utf8_lossy(&p.topic).into_owned();
        let alarm = match parse(&topic, &p.payload, &self.own_sources) {
            Ok(a) => a,
            Err(Skip::Ignored) => return,
            Err(Skip::Malformed(why)) => {
                let shown: String = topic.chars().take(200).collect();
                crate::clock::note(format_args!(
                    "cookwala-hub: mqtt {}: dropped a message on {shown}: {why}",
                    self.config.cursor_key()
                ));
                return;
            }
        };
        let first = {
            let mut seen = self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if seen.contains(&alarm.id) {
                false
            } else {
                seen.push_back(alarm.id.clone());
                while seen.len() > SEEN {
                    seen.pop_front();
                }
                true
            }
        };
        let hub = self.hub.clone();
        tokio::spawn(async move { react(hub, alarm, received, first).await });
    }
}

/// Applies `alarm` to the live executions and records the reaction.
async fn react(hub: Hub, alarm: Alarm, received: Instant, first: bool) {
    let affected = match alarm.reaction {
        Reaction::Stop => stop_all(&hub, &alarm).await,
        Reaction::Pause => pause_all(&hub, &alarm).await,
    };
    let took_ms = u64::try_from(received.elapsed().as_millis()).unwrap_or(u64::MAX);
    let verb = match alarm.reaction {
        Reaction::Stop => "stopped",
        Reaction::Pause => "paused",
    };
    crate::clock::note(format_args!(
        "cookwala-hub: safety alarm {} ({}, {}) from {}: {verb} {} execution(s) in {took_ms} ms",
        alarm.id,
        alarm.ty,
        alarm.action,
        if alarm.source.is_empty() { "an unnamed source" } else { &alarm.source },
        affected.len()
    ));
    if !first && affected.is_empty() {
        return;
    }
    let now = hub.now_ms();
    let commit = Commit {
        incidents: vec![incident(&alarm, &affected, verb, now)],
        events: vec![crate::outbox::events::to_new(&handled_event(
            &alarm, &affected, took_ms, now,
        ))],
        ..Commit::default()
    };
    if let Err(e) = hub.commit(commit, true).await {
        crate::clock::note(format_args!(
            "cookwala-hub: safety alarm {}: the reaction was not recorded: {}",
            alarm.id, e
        ));
    }
}

/// Stops every live execution in one decision and one commit ([`Hub::stop_every_live`], the
/// stop `POST …/stop` makes: never refused, heat and motion cut); the ids it stopped.
async fn stop_all(hub: &Hub, alarm: &Alarm) -> Vec<String> {
    let reason = format!("safety alarm {} ({}) from {}", alarm.ty, alarm.action, alarm.source);
    let reason: String = reason.chars().take(200).collect();
    match hub.stop_every_live(&reason).await {
        Ok(stopped) => stopped,
        Err(e) => {
            crate::clock::note(format_args!(
                "cookwala-hub: safety alarm {}: the stops were not stored: {e}",
                alarm.id
            ));
            Vec::new()
        }
    }
}

/// Pauses every running execution; the ids it paused.
async fn pause_all(hub: &Hub, alarm: &Alarm) -> Vec<String> {
    let mut held = crate::service::live::lock_live(hub.inner.live.slots()).await;
    let mut commit = Commit::default();
    let mut paused = Vec::new();
    for (id, run) in &mut held {
        if run.state() != cookwala::execution::ExecutionState::Running {
            continue;
        }
        let Ok((change, ())) = hub.apply(id, run, |sim| sim.pause().map(|events| (events, ())))
        else {
            continue;
        };
        commit.absorb(change);
        paused.push(id.clone());
    }
    if let Err(e) = hub.commit(commit, true).await {
        crate::clock::note(format_args!(
            "cookwala-hub: safety alarm {}: pausing was not stored: {}",
            alarm.id, e
        ));
    }
    paused
}

fn incident(alarm: &Alarm, affected: &[String], verb: &str, now_ms: i64) -> NewIncident {
    let stamp = cookwala_sim::rfc3339_ms(now_ms);
    let hash = canonical_json::digest::sha256_hex(alarm.id.as_bytes());
    let id = format!("inc-alarm-{}-{now_ms}", hash.get(..16).unwrap_or(&hash));
    let mut m = Map::new();
    m.insert("core".into(), "0.2.0".into());
    m.insert("kind".into(), "IncidentReport".into());
    m.insert("id".into(), id.as_str().into());
    m.insert("date".into(), stamp.chars().take(10).collect::<String>().into());
    m.insert("category".into(), "cw.incident.other".into());
    m.insert("severity".into(), "high".into());
    m.insert("outcome".into(), "near_miss".into());
    let zone = alarm.zone.as_deref().map(|z| format!(" in zone {z}")).unwrap_or_default();
    let list = if affected.is_empty() { "none".to_owned() } else { affected.join(", ") };
    m.insert(
        "description".into(),
        format!(
            "Kitchen safety alarm {} ({}){zone} received on {}; the hub {verb} {} execution(s): \
             {list}.",
            alarm.ty,
            alarm.action,
            alarm.topic,
            affected.len()
        )
        .chars()
        .take(4000)
        .collect::<String>()
        .into(),
    );
    NewIncident { id, body: jcs_text(&Value::Object(m)) }
}

fn handled_event(alarm: &Alarm, affected: &[String], took_ms: u64, now_ms: i64) -> Value {
    let hash = canonical_json::digest::sha256_hex(alarm.id.as_bytes());
    let subject = alarm.zone.clone().unwrap_or_else(|| "hub".to_owned());
    let mut data = Map::new();
    let mut from = Map::new();
    from.insert("id".into(), alarm.id.as_str().into());
    from.insert("type".into(), alarm.ty.as_str().into());
    from.insert("source".into(), alarm.source.as_str().into());
    from.insert("topic".into(), alarm.topic.as_str().into());
    data.insert("alarm".into(), Value::Object(from));
    data.insert("action".into(), alarm.action.as_str().into());
    if let Some(z) = &alarm.zone {
        data.insert("zone".into(), z.as_str().into());
    }
    data.insert(
        "executions".into(),
        Value::Array(affected.iter().map(|s| Value::from(s.as_str())).collect()),
    );
    data.insert("tookMs".into(), took_ms.into());
    let mut m = Map::new();
    m.insert("specversion".into(), "1.0".into());
    m.insert(
        "id".into(),
        format!("hub/alarm/{}/{now_ms}/safety.alarm_handled", hash.get(..16).unwrap_or(&hash))
            .into(),
    );
    m.insert("source".into(), crate::outbox::events::HUB_SOURCE.into());
    m.insert("type".into(), ALARM_HANDLED.into());
    m.insert("subject".into(), subject.into());
    m.insert("time".into(), cookwala_sim::rfc3339_ms(now_ms).into());
    m.insert("datacontenttype".into(), "application/json".into());
    m.insert("cookwalapriority".into(), "safety".into());
    m.insert("cookwalalatency".into(), "realtime".into());
    m.insert("data".into(), Value::Object(data));
    Value::Object(m)
}
