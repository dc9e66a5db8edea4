//! The kitchen's devices as a coordinating hub sees them on the bus: who announced itself,
//! who is alive, what each runs, and who is lost.
//!
//! A device process (`cookwala device`) announces itself with a retained
//! `cookwala.device.online` on `cookwala/{K}/device/{id}`, leaves an MQTT will that makes the
//! broker publish a retained `cookwala.device.offline` there when its session dies, and sends
//! `cookwala.device.heartbeat` every `heartbeatSecs` — the birth and death certificates of
//! Sparkplug B, in CloudEvents. Each of the three carries the device's `instance`: a name of
//! that process's life, so a late will of an earlier life, or a message from a second process
//! claiming an id that is online, is told apart from the device that holds it.
//!
//! [`Kitchen`] is the pure core of that: no clock (the caller passes `now_ms`), no I/O. It
//! turns messages into [`Change`]s (a device came online, came back, went offline) and
//! refuses what it cannot use with a [`Refused`] reason the caller logs. The rules:
//!
//! - **Online** when an `online` (or a heartbeat carrying the same announcement) arrives for an
//!   id that is unknown or offline. An `online` for an id that is online under another
//!   instance is refused as a spoof; the same instance again (a retained copy redelivered) is
//!   no change.
//! - **Offline** when the will of the instance online arrives, or when
//!   [`MISSED_HEARTBEATS`] heartbeat periods pass without a word from it — whichever is first.
//!   A will naming another instance is stale and ignored.
//! - **Executions**: what each device runs comes from its heartbeats (`x-executions`: id,
//!   state, seq, step and the step's hazards) and from its execution events on
//!   `cookwala/{K}/execution/+`, deduplicated by CloudEvent `id` and ordered by `cookwalaseq`
//!   (an event older than what is known is ignored). A device that comes back is
//!   authoritative: its first heartbeat replaces the list.
//!
//! Bounds: a message above [`MAX_MESSAGE`] bytes is refused before it is parsed; at most
//! [`MAX_DEVICES`] devices and [`MAX_ACTIVE`] executions per device are tracked; the ids
//! already seen are a window of [`SEEN_IDS`].

use std::collections::{BTreeMap, HashSet, VecDeque};

use canonical_json::{Map, Value};
use cookwala::execution::ExecutionState;

/// `cookwala.device.online`.
pub const ONLINE: &str = "cookwala.device.online";
/// `cookwala.device.offline`.
pub const OFFLINE: &str = "cookwala.device.offline";
/// `cookwala.device.heartbeat`.
pub const HEARTBEAT: &str = "cookwala.device.heartbeat";
/// `cookwala.handoff.proposed`.
pub const HANDOFF_PROPOSED: &str = "cookwala.handoff.proposed";
/// `cookwala.notify.request`.
pub const NOTIFY_REQUEST: &str = "cookwala.notify.request";
/// `cookwala.telemetry.reading`.
pub const TELEMETRY: &str = "cookwala.telemetry.reading";

/// Heartbeat periods without a word before a device is offline.
pub const MISSED_HEARTBEATS: u32 = 3;
/// The largest device or execution message read (64 KiB).
pub const MAX_MESSAGE: usize = 64 * 1024;
/// The most devices tracked (an announcement beyond it is refused).
pub const MAX_DEVICES: usize = 4096;
/// The most executions tracked per device.
pub const MAX_ACTIVE: usize = 256;
/// How many event ids are remembered for deduplication.
pub const SEEN_IDS: usize = 4096;
/// The longest heartbeat period accepted (an hour).
pub const MAX_HEARTBEAT_SECS: u64 = 3600;

/// How a process runs as one device of the kitchen (`cookwala device`; see
/// [`crate::HubConfig::device_mode`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceMode {
    /// The base URL of its API as the hub reaches it (`http://HOST:PORT`).
    pub base_url: String,
    /// This process's life: unique per start (e.g. the start time and the process id).
    pub instance: String,
}

/// What a device announces: who it is in this life, and where its API is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Announce {
    /// The device id.
    pub device: String,
    /// This process's life (a will or heartbeat naming another is not from it).
    pub instance: String,
    /// The base URL of its Core API (`http://HOST:PORT`).
    pub base_url: String,
    /// The hash of its Capabilities document.
    pub capabilities_hash: Option<String>,
    /// Its heartbeat period in ms.
    pub heartbeat_ms: u64,
}

impl Announce {
    /// The `data` of an `online` or `offline` event (and the announcement part of a
    /// heartbeat's).
    pub fn to_data(&self) -> Map {
        let mut m = Map::new();
        m.insert("device".into(), self.device.as_str().into());
        m.insert("instance".into(), self.instance.as_str().into());
        m.insert("baseUrl".into(), self.base_url.as_str().into());
        if let Some(h) = &self.capabilities_hash {
            m.insert("capabilitiesHash".into(), h.as_str().into());
        }
        m.insert("heartbeatSecs".into(), (self.heartbeat_ms / 1000).max(1).into());
        m
    }

    /// Reads an announcement from an event's `data`.
    ///
    /// # Errors
    /// A field is missing or unusable.
    pub fn from_data(data: &Value) -> Result<Announce, Refused> {
        let s = |k: &'static str| {
            data.get(k)
                .and_then(Value::as_str)
                .filter(|v| !v.is_empty() && v.len() <= 512)
                .ok_or(Refused::Field(k))
        };
        let device = s("device")?.to_owned();
        let instance = s("instance")?.to_owned();
        let base_url = s("baseUrl")?;
        if !usable_base_url(base_url) {
            return Err(Refused::Field("baseUrl"));
        }
        let secs = data
            .get("heartbeatSecs")
            .and_then(Value::as_i64)
            .and_then(|n| u64::try_from(n).ok())
            .filter(|n| (1..=MAX_HEARTBEAT_SECS).contains(n))
            .ok_or(Refused::Field("heartbeatSecs"))?;
        Ok(Announce {
            device,
            instance,
            base_url: base_url.trim_end_matches('/').to_owned(),
            capabilities_hash: data
                .get("capabilitiesHash")
                .and_then(Value::as_str)
                .map(str::to_owned),
            heartbeat_ms: secs * 1000,
        })
    }
}

/// `http://HOST[:PORT]` (or `https://`), with no user info, query or fragment: the only URLs
/// the hub will send the kitchen's device token to.
pub fn usable_base_url(url: &str) -> bool {
    let rest = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://"));
    rest.is_some_and(|r| {
        let host = r.split('/').next().unwrap_or_default();
        !host.is_empty()
            && !r.contains(['@', '?', '#', ' ', '\\'])
            && !r.chars().any(char::is_control)
    })
}

/// The hazards of step `node` of `recipe`: the recipe's `safety.hazards` objects the node's
/// `hazards` refer to (none when it refers to none).
pub fn step_hazards(recipe: &Value, node: &str) -> Vec<Value> {
    let Some(Value::Array(nodes)) = recipe.pointer("/process/nodes") else { return Vec::new() };
    let Some(Value::Array(refs)) = nodes
        .iter()
        .find(|n| n.get("id").and_then(Value::as_str) == Some(node))
        .and_then(|n| n.get("hazards"))
    else {
        return Vec::new();
    };
    let Some(Value::Array(all)) = recipe.pointer("/safety/hazards") else { return Vec::new() };
    refs.iter()
        .filter_map(Value::as_str)
        .filter_map(|r| all.iter().find(|h| h.get("id").and_then(Value::as_str) == Some(r)))
        .take(64)
        .cloned()
        .collect()
}

/// An execution a device runs, as last reported.
#[derive(Clone, Debug, PartialEq)]
pub struct Active {
    /// The execution id.
    pub id: String,
    /// Its state.
    pub state: String,
    /// Its `seq`.
    pub seq: u64,
    /// The step's node, if known.
    pub node: Option<String>,
    /// The step's op, if known.
    pub op: Option<String>,
    /// The step's hazards (the recipe's Hazard objects), if known.
    pub hazards: Vec<Value>,
}

impl Active {
    /// Reads one entry of a heartbeat's `x-executions` (or a bare id).
    fn from_value(v: &Value) -> Option<Active> {
        if let Some(id) = v.as_str() {
            return Some(Active::new(id, "running", 0));
        }
        let id = v.get("id")?.as_str()?;
        let mut a = Active::new(
            id,
            v.get("state").and_then(Value::as_str).unwrap_or("running"),
            v.get("seq").and_then(Value::as_i64).and_then(|n| u64::try_from(n).ok()).unwrap_or(0),
        );
        a.node = v.get("node").and_then(Value::as_str).map(str::to_owned);
        a.op = v.get("op").and_then(Value::as_str).map(str::to_owned);
        if let Some(Value::Array(h)) = v.get("hazards") {
            a.hazards = h.iter().take(64).cloned().collect();
        }
        Some(a)
    }

    /// An execution known by its id, state and seq only.
    pub fn new(id: &str, state: &str, seq: u64) -> Active {
        Active {
            id: id.to_owned(),
            state: state.to_owned(),
            seq,
            node: None,
            op: None,
            hazards: Vec::new(),
        }
    }

    /// The entry of a heartbeat's `x-executions`.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("id".into(), self.id.as_str().into());
        m.insert("state".into(), self.state.as_str().into());
        m.insert("seq".into(), self.seq.into());
        if let Some(n) = &self.node {
            m.insert("node".into(), n.as_str().into());
        }
        if let Some(o) = &self.op {
            m.insert("op".into(), o.as_str().into());
        }
        m.insert("hazards".into(), Value::Array(self.hazards.clone()));
        Value::Object(m)
    }
}

/// Why a device was marked offline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OfflineReason {
    /// Its will arrived (the broker saw its session die).
    Will,
    /// [`MISSED_HEARTBEATS`] heartbeat periods passed without a word.
    MissedHeartbeats,
}

impl OfflineReason {
    /// `will` or `missed_heartbeats`.
    pub fn as_str(self) -> &'static str {
        match self {
            OfflineReason::Will => "will",
            OfflineReason::MissedHeartbeats => "missed_heartbeats",
        }
    }
}

/// One device of the kitchen.
#[derive(Clone, Debug, PartialEq)]
pub struct Remote {
    /// Its latest accepted announcement.
    pub announce: Announce,
    /// True while it is online.
    pub online: bool,
    /// When it last sent a heartbeat (Unix ms), if ever.
    pub last_heartbeat_ms: Option<i64>,
    /// When it last said anything accepted (Unix ms).
    pub last_seen_ms: i64,
    /// When it went online or offline last (Unix ms).
    pub since_ms: i64,
    /// Why it is offline (while offline).
    pub offline_reason: Option<OfflineReason>,
    /// What it runs (or ran when it was lost), by execution id.
    pub active: BTreeMap<String, Active>,
}

/// What a message or the passing of time changed.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// A device is online: new (`back` false) or after being offline (`back` true). `was`
    /// holds what the hub knew it to run when it was lost (to be asked of the device).
    Online {
        /// The device.
        device: String,
        /// It was known and offline before.
        back: bool,
        /// The executions it was running when it was lost.
        was: Vec<Active>,
    },
    /// A device is offline; `active` is what it was running.
    Offline {
        /// The device.
        device: String,
        /// Why.
        reason: OfflineReason,
        /// Its instance (the life that ended).
        instance: String,
        /// What it was running.
        active: Vec<Active>,
        /// When it was last heard (Unix ms).
        last_seen_ms: i64,
    },
}

/// Why a message is not used (the caller logs it; nothing here is fatal).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Larger than [`MAX_MESSAGE`].
    #[error("{0} bytes is larger than the {MAX_MESSAGE} accepted")]
    TooLarge(usize),
    /// Not a JSON CloudEvent.
    #[error("not a JSON CloudEvent")]
    NotEvent,
    /// A field is missing or unusable.
    #[error("its {0} is missing or unusable")]
    Field(&'static str),
    /// The event's device is not the topic's.
    #[error("it names device {named:?} on the topic of {topic:?}")]
    WrongTopic {
        /// The topic's device.
        topic: String,
        /// The event's.
        named: String,
    },
    /// A second process claims an id that is online under another instance.
    #[error(
        "device {device:?} is online as instance {online:?}; a message from instance {claimed:?} \
         is refused (a second process claiming its id)"
    )]
    Spoofed {
        /// The device.
        device: String,
        /// The instance online.
        online: String,
        /// The instance claimed.
        claimed: String,
    },
    /// A will or event of an earlier life, or of a device not known.
    #[error("stale: {0}")]
    Stale(String),
    /// Already seen (delivery is at least once).
    #[error("a duplicate of event {0:?}")]
    Duplicate(String),
    /// Too many devices or executions.
    #[error("{0}")]
    Full(&'static str),
}

/// The devices of one kitchen (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct Kitchen {
    devices: BTreeMap<String, Remote>,
    seen: VecDeque<String>,
    seen_set: HashSet<String>,
}

fn parse_event(payload: &[u8]) -> Result<Value, Refused> {
    if payload.len() > MAX_MESSAGE {
        return Err(Refused::TooLarge(payload.len()));
    }
    let v = canonical_json::parse(payload).map_err(|_| Refused::NotEvent)?;
    for k in ["id", "type", "source"] {
        if v.get(k).and_then(Value::as_str).is_none_or(str::is_empty) {
            return Err(Refused::NotEvent);
        }
    }
    if !matches!(v.get("data"), Some(Value::Object(_))) {
        return Err(Refused::NotEvent);
    }
    Ok(v)
}

fn text<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or_default()
}

impl Kitchen {
    /// No devices yet.
    pub fn new() -> Kitchen {
        Kitchen::default()
    }

    /// The device `id`, if it ever announced itself.
    pub fn get(&self, id: &str) -> Option<&Remote> {
        self.devices.get(id)
    }

    /// Every device, by id.
    pub fn devices(&self) -> impl Iterator<Item = &Remote> {
        self.devices.values()
    }

    /// True when `id` was seen before (and remembers it); keeps the window bounded.
    fn seen_before(&mut self, id: &str) -> bool {
        if self.seen_set.contains(id) {
            return true;
        }
        if self.seen.len() >= SEEN_IDS
            && let Some(old) = self.seen.pop_front()
        {
            self.seen_set.remove(&old);
        }
        self.seen.push_back(id.to_owned());
        self.seen_set.insert(id.to_owned());
        false
    }

    /// A message on `cookwala/{K}/device/{topic_device}`. An empty payload (a retained message
    /// cleared) is no change.
    ///
    /// # Errors
    /// The message is refused (see [`Refused`]).
    pub fn device_message(
        &mut self,
        topic_device: &str,
        payload: &[u8],
        now_ms: i64,
    ) -> Result<Option<Change>, Refused> {
        if payload.is_empty() {
            return Ok(None);
        }
        let ev = parse_event(payload)?;
        let data = ev.get("data").cloned().unwrap_or(Value::Null);
        let named = text(&data, "device");
        if named != topic_device {
            return Err(Refused::WrongTopic {
                topic: topic_device.to_owned(),
                named: named.to_owned(),
            });
        }
        match text(&ev, "type") {
            ONLINE => self.online(Announce::from_data(&data)?, None, now_ms),
            HEARTBEAT => self.heartbeat(&data, now_ms),
            OFFLINE => self.offline_message(&data, now_ms),
            _ => {
                // fault, capabilities_changed, …: a sign of life from the instance online.
                let instance = text(&data, "instance");
                self.alive(topic_device, instance, now_ms)?;
                Ok(None)
            }
        }
    }

    /// A sign of life of `instance` of `device`.
    fn alive(&mut self, device: &str, instance: &str, now_ms: i64) -> Result<(), Refused> {
        match self.devices.get_mut(device) {
            Some(d) if d.online && d.announce.instance == instance => {
                d.last_seen_ms = now_ms;
                Ok(())
            }
            Some(d) if d.online => Err(Refused::Spoofed {
                device: device.to_owned(),
                online: d.announce.instance.clone(),
                claimed: instance.to_owned(),
            }),
            _ => Err(Refused::Stale(format!("device {device:?} is not online"))),
        }
    }

    fn online(
        &mut self,
        a: Announce,
        active: Option<Vec<Active>>,
        now_ms: i64,
    ) -> Result<Option<Change>, Refused> {
        let id = a.device.clone();
        match self.devices.get_mut(&id) {
            Some(d) if d.online && d.announce.instance == a.instance => {
                d.last_seen_ms = now_ms;
                if let Some(active) = active {
                    d.active = by_id(active);
                }
                Ok(None)
            }
            Some(d) if d.online => Err(Refused::Spoofed {
                device: id,
                online: d.announce.instance.clone(),
                claimed: a.instance,
            }),
            Some(d) => {
                let was: Vec<Active> = d.active.values().cloned().collect();
                d.announce = a;
                d.online = true;
                d.last_seen_ms = now_ms;
                d.since_ms = now_ms;
                d.offline_reason = None;
                if let Some(active) = active {
                    d.active = by_id(active);
                }
                Ok(Some(Change::Online { device: id, back: true, was }))
            }
            None => {
                if self.devices.len() >= MAX_DEVICES {
                    return Err(Refused::Full("the kitchen has as many devices as tracked"));
                }
                let remote = Remote {
                    announce: a,
                    online: true,
                    last_heartbeat_ms: None,
                    last_seen_ms: now_ms,
                    since_ms: now_ms,
                    offline_reason: None,
                    active: active.map(by_id).unwrap_or_default(),
                };
                self.devices.insert(id.clone(), remote);
                Ok(Some(Change::Online { device: id, back: false, was: Vec::new() }))
            }
        }
    }

    fn heartbeat(&mut self, data: &Value, now_ms: i64) -> Result<Option<Change>, Refused> {
        let a = Announce::from_data(data)?;
        let active: Vec<Active> = match data.get("x-executions").or(data.get("activeExecutions")) {
            Some(Value::Array(list)) => {
                list.iter().take(MAX_ACTIVE).filter_map(Active::from_value).collect()
            }
            _ => Vec::new(),
        };
        let device = a.device.clone();
        let change = self.online(a, Some(active), now_ms)?;
        if let Some(d) = self.devices.get_mut(&device) {
            d.last_heartbeat_ms = Some(now_ms);
        }
        Ok(change)
    }

    fn offline_message(&mut self, data: &Value, now_ms: i64) -> Result<Option<Change>, Refused> {
        let a = Announce::from_data(data)?;
        match self.devices.get_mut(&a.device) {
            Some(d) if d.online && d.announce.instance == a.instance => {
                Ok(Some(go_offline(d, OfflineReason::Will, now_ms)))
            }
            Some(_) => Err(Refused::Stale(format!(
                "the will of instance {:?} of {:?}, not the one online",
                a.instance, a.device
            ))),
            None => {
                // A retained will of a device this hub never saw online: known, offline.
                if self.devices.len() >= MAX_DEVICES {
                    return Err(Refused::Full("the kitchen has as many devices as tracked"));
                }
                let id = a.device.clone();
                self.devices.insert(
                    id,
                    Remote {
                        announce: a,
                        online: false,
                        last_heartbeat_ms: None,
                        last_seen_ms: now_ms,
                        since_ms: now_ms,
                        offline_reason: Some(OfflineReason::Will),
                        active: BTreeMap::new(),
                    },
                );
                Ok(None)
            }
        }
    }

    /// An execution event of a device (on `cookwala/{K}/execution/+`): deduplicated by `id`,
    /// ordered by `cookwalaseq`; updates what the device runs. Returns the device it is about.
    ///
    /// # Errors
    /// Refused (not an event, a duplicate, older than what is known, not a known device's).
    pub fn execution_event(&mut self, payload: &[u8], now_ms: i64) -> Result<String, Refused> {
        let ev = parse_event(payload)?;
        let device = text(&ev, "source").strip_prefix("/cookwala/devices/").unwrap_or_default();
        let Some(d) = self.devices.get(device) else {
            return Err(Refused::Stale(format!(
                "no device of the kitchen sent {}",
                text(&ev, "id")
            )));
        };
        let device = d.announce.device.clone();
        let id = text(&ev, "id").to_owned();
        if self.seen_before(&id) {
            return Err(Refused::Duplicate(id));
        }
        let exec = text(&ev, "subject").to_owned();
        let seq = ev
            .get("cookwalaseq")
            .and_then(Value::as_i64)
            .and_then(|n| u64::try_from(n).ok())
            .ok_or(Refused::Field("cookwalaseq"))?;
        let data = ev.get("data").cloned().unwrap_or(Value::Null);
        let Some(d) = self.devices.get_mut(&device) else { return Ok(device) };
        if d.online {
            d.last_seen_ms = now_ms;
        }
        let state = data.get("state").and_then(Value::as_str);
        let known = d.active.get(&exec).map(|a| a.seq);
        if known.is_some_and(|k| seq <= k) {
            return Err(Refused::Stale(format!("{id}: seq {seq} is not after what is known")));
        }
        let is_final = state.and_then(ExecutionState::parse).is_some_and(ExecutionState::is_final);
        if is_final {
            d.active.remove(&exec);
            return Ok(device);
        }
        if known.is_none() && d.active.len() >= MAX_ACTIVE {
            return Err(Refused::Full("the device runs as many executions as tracked"));
        }
        let entry =
            d.active.entry(exec.clone()).or_insert_with(|| Active::new(&exec, "accepted", 0));
        entry.seq = seq;
        if let Some(s) = state {
            s.clone_into(&mut entry.state);
        }
        if let Some(node) = data.get("node").or(data.pointer("/step/node")).and_then(Value::as_str)
        {
            if entry.node.as_deref() != Some(node) {
                entry.hazards.clear();
                entry.op = None;
            }
            entry.node = Some(node.to_owned());
        }
        Ok(device)
    }

    /// An execution the hub started on `device` (through its API): known at once, before its
    /// events arrive.
    pub fn started(&mut self, device: &str, active: Active) {
        if let Some(d) = self.devices.get_mut(device)
            && (d.active.len() < MAX_ACTIVE || d.active.contains_key(&active.id))
        {
            let keep = d.active.get(&active.id).is_some_and(|a| a.seq >= active.seq);
            if !keep {
                d.active.insert(active.id.clone(), active);
            }
        }
    }

    /// What the device said of one of its executions (a status read through the hub):
    /// forgotten once final.
    pub fn status(&mut self, device: &str, exec: &str, state: &str, seq: u64) {
        let Some(d) = self.devices.get_mut(device) else { return };
        let is_final = ExecutionState::parse(state).is_some_and(ExecutionState::is_final);
        if is_final {
            d.active.remove(exec);
        } else if let Some(a) = d.active.get_mut(exec)
            && seq >= a.seq
        {
            a.seq = seq;
            state.clone_into(&mut a.state);
        }
    }

    /// Devices silent for [`MISSED_HEARTBEATS`] periods go offline.
    pub fn expire(&mut self, now_ms: i64) -> Vec<Change> {
        self.devices
            .values_mut()
            .filter(|d| d.online && now_ms >= deadline(d))
            .map(|d| go_offline(d, OfflineReason::MissedHeartbeats, now_ms))
            .collect()
    }

    /// When the next device goes offline if nothing is heard from it (Unix ms).
    pub fn next_deadline(&self) -> Option<i64> {
        self.devices.values().filter(|d| d.online).map(deadline).min()
    }
}

fn deadline(d: &Remote) -> i64 {
    let period = i64::try_from(d.announce.heartbeat_ms).unwrap_or(i64::MAX / 8);
    d.last_seen_ms.saturating_add(period.saturating_mul(i64::from(MISSED_HEARTBEATS)))
}

fn go_offline(d: &mut Remote, reason: OfflineReason, now_ms: i64) -> Change {
    let last_seen_ms = d.last_seen_ms;
    d.online = false;
    d.since_ms = now_ms;
    d.offline_reason = Some(reason);
    Change::Offline {
        device: d.announce.device.clone(),
        reason,
        instance: d.announce.instance.clone(),
        active: d.active.values().cloned().collect(),
        last_seen_ms,
    }
}

fn by_id(list: Vec<Active>) -> BTreeMap<String, Active> {
    list.into_iter().map(|a| (a.id.clone(), a)).collect()
}

#[cfg(test)]
mod tests;
