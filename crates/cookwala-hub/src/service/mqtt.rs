//! The kitchen event bus over MQTT 5 (the standard's `api/events.asyncapi.yaml`): the hub
//! publishes every outbox CloudEvent to the kitchen's broker and listens for safety alarms.
//!
//! **Publishing** works like a webhook (see [`crate::webhooks`]): one task reads the durable
//! outbox after a durable cursor (the webhook cursor table, keyed `mqtt://HOST:PORT/KITCHEN`),
//! publishes each event — the stored JCS bytes, CloudEvents structured mode, MQTT 5
//! `content-type: application/cloudevents+json` — and moves the cursor only once the broker has
//! acknowledged the whole batch (PUBACK for QoS 1, PUBCOMP for QoS 2). A lost connection drops
//! the batch; the next connection publishes again from the cursor, so delivery is at least
//! once and, as one connection publishes in outbox order, in order per subject. Receivers
//! deduplicate by the CloudEvent `id`. A cursor never seen starts at the end of the outbox.
//!
//! **Topics** are `cookwala/{KITCHEN}/{category}/{subject}`: `category` is the second segment
//! of the event type (`cookwala.<category>.<name>`), `subject` the event's `subject` (`hub`
//! when it has none); `+`, `#`, `/` and NUL inside a segment become `_`, and an empty segment
//! is `_`.
//!
//! **QoS by category** ([`qos_for`]): `safety` 2; `task`, `lease`, `handoff`, `ccp` 1 (the
//! AsyncAPI's table); of the hub's own categories, which the AsyncAPI does not list,
//! `execution` (`cookwala.execution.*`, the hub's task lifecycle: losing a `stopped` is not
//! acceptable) and `recall` (`cookwala.recall.published`, a published recall must arrive) are
//! QoS 1, and `device` (`cookwala.device.heartbeat`, live only, stale a moment later) is QoS 0
//! like telemetry and every other category. Heartbeats are not in the outbox: they are
//! published as they happen, while connected, and never replayed.
//!
//! **Retained safety.** A `cookwala.safety.*` event that reports a hazard (`data.action` other
//! than `none`) is retained, so a participant that joins later learns it. It is cleared (an
//! empty retained message on its topic) when the hazard is over: when the execution it is
//! about reaches a final state (the clear follows the final `state_changed`/`completed`).
//!
//! **Listening**: see [`alarm`]. The hub subscribes to `cookwala/{KITCHEN}/safety/#` (no-local,
//! so the broker does not echo its own publications; `source` is checked too) and reacts to
//! `data.action`.
//!
//! **Broker trouble** never stops the hub: it starts and serves HTTP while the broker is down,
//! reconnects with a doubling backoff ([`MqttConfig::first_retry`] to
//! [`MqttConfig::max_retry`]), and delivers from its cursor once connected.
//!
//! **Bounded memory.** The hub asks the broker for packets of at most [`MAX_PACKET`] bytes
//! (MQTT 5 Maximum Packet Size: the broker drops larger ones for this client), and an alarm
//! payload beyond [`alarm::MAX_ALARM_BYTES`] is dropped with a note. At most one batch
//! ([`BATCH`] events) is in flight. An event larger than the broker's own Maximum Packet Size
//! is skipped with a note (it would fail every connection and block the ones after it).

pub mod alarm;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use canonical_json::Value;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{
    ConnectProperties, Filter, LastWill, LastWillProperties, Packet, PublishProperties,
};
use rumqttc::v5::{AsyncClient, Event, EventLoop, MqttOptions};
use rumqttc::{Outgoing, TlsConfiguration, Transport};
use tokio::sync::broadcast;

use crate::kitchen::Announce;
use crate::service::Hub;

/// The largest MQTT packet the hub accepts from the broker (256 KiB).
pub const MAX_PACKET: u32 = 256 * 1024;

/// How many outbox events one batch publishes before waiting for the acknowledgements.
pub const BATCH: usize = 64;

/// Where the kitchen's broker is and who the hub is on it. `Debug` never shows the password.
#[derive(Clone, PartialEq, Eq)]
pub struct MqttConfig {
    /// `mqtts://` (TLS through rustls, the public web's roots plus `--webhook-ca`).
    pub tls: bool,
    /// The broker's host name or address.
    pub host: String,
    /// The broker's port (default 1883, 8883 for `mqtts://`).
    pub port: u16,
    /// The MQTT user name.
    pub username: Option<String>,
    /// The MQTT password.
    pub password: Option<String>,
    /// The kitchen id (`cookwala/{KITCHEN}/…`).
    pub kitchen: String,
    /// The wait after the first failed connection (then doubled after each failure).
    pub first_retry: Duration,
    /// The longest wait between two connection attempts.
    pub max_retry: Duration,
}

impl fmt::Debug for MqttConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MqttConfig")
            .field("url", &self.cursor_key())
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}

/// Why an `--mqtt` URL or kitchen id cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MqttError {
    /// The URL is not `mqtt://[USER[:PASS]@]HOST[:PORT]` or `mqtts://…`.
    #[error("the broker URL {url:?} cannot be used: {why}")]
    Url {
        /// The URL without its password.
        url: String,
        /// Why.
        why: String,
    },
    /// The kitchen id is empty or holds `+`, `#`, `/` or a control character.
    #[error(
        "the kitchen id {0:?} cannot be a topic segment (it must be non-empty, without +, #, / \
         or control characters)"
    )]
    Kitchen(String),
}

impl MqttConfig {
    /// Parses `mqtt://[USER[:PASS]@]HOST[:PORT]` (or `mqtts://`) for `kitchen`; a trailing `/`
    /// is accepted, any other path is refused. Percent-escapes in the user and password are
    /// decoded.
    ///
    /// # Errors
    /// The URL or the kitchen id cannot be used.
    pub fn parse(url: &str, kitchen: &str) -> Result<MqttConfig, MqttError> {
        let fail = |why: &str| MqttError::Url {
            url: crate::privacy::redact_url(url),
            why: why.to_owned(),
        };
        let (tls, rest) = if let Some(r) = url.strip_prefix("mqtt://") {
            (false, r)
        } else if let Some(r) = url.strip_prefix("mqtts://") {
            (true, r)
        } else {
            return Err(fail("it must start with mqtt:// or mqtts://"));
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#']) {
            return Err(fail("a path or query is not supported"));
        }
        let (userinfo, hostport) = match rest.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, rest),
        };
        let (username, password) = match userinfo {
            Some(u) => {
                let (user, pass) = match u.split_once(':') {
                    Some((user, pass)) => (user, Some(pass)),
                    None => (u, None),
                };
                let user = percent_decode(user).ok_or_else(|| fail("bad %-escape"))?;
                let pass = match pass {
                    Some(p) => Some(percent_decode(p).ok_or_else(|| fail("bad %-escape"))?),
                    None => None,
                };
                (Some(user).filter(|u| !u.is_empty()), pass)
            }
            None => (None, None),
        };
        let (host, port) = split_host_port(hostport).ok_or_else(|| fail("bad host or port"))?;
        if host.is_empty() {
            return Err(fail("the URL has no host"));
        }
        check_kitchen(kitchen)?;
        Ok(MqttConfig {
            tls,
            host,
            port: port.unwrap_or(if tls { 8883 } else { 1883 }),
            username,
            password,
            kitchen: kitchen.to_owned(),
            first_retry: Duration::from_secs(1),
            max_retry: Duration::from_secs(30),
        })
    }

    /// The key of the hub's durable cursor for this broker and kitchen (in the webhook cursor
    /// table): `mqtt://HOST:PORT/KITCHEN` (`mqtts://` for TLS), never the credentials.
    pub fn cursor_key(&self) -> String {
        let scheme = if self.tls { "mqtts" } else { "mqtt" };
        let host =
            if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        format!("{scheme}://{host}:{}/{}", self.port, self.kitchen)
    }

    /// The filter the hub listens on: `cookwala/{KITCHEN}/safety/#`.
    pub fn safety_filter(&self) -> String {
        format!("cookwala/{}/safety/#", self.kitchen)
    }

    /// The devices' announcements and heartbeats: `cookwala/{KITCHEN}/device/+`.
    pub fn device_filter(&self) -> String {
        format!("cookwala/{}/device/+", self.kitchen)
    }

    /// The devices' execution events: `cookwala/{KITCHEN}/execution/+`.
    pub fn execution_filter(&self) -> String {
        format!("cookwala/{}/execution/+", self.kitchen)
    }
}

fn check_kitchen(kitchen: &str) -> Result<(), MqttError> {
    if kitchen.is_empty()
        || kitchen.contains(['+', '#', '/'])
        || kitchen.chars().any(char::is_control)
    {
        return Err(MqttError::Kitchen(kitchen.to_owned()));
    }
    Ok(())
}

/// The URL without the password (for messages).
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn split_host_port(s: &str) -> Option<(String, Option<u16>)> {
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p.parse().ok()?),
            None if after.is_empty() => None,
            None => return None,
        };
        return Some((host.to_owned(), port));
    }
    match s.rsplit_once(':') {
        Some((host, port)) => Some((host.to_owned(), Some(port.parse().ok()?))),
        None => Some((s.to_owned(), None)),
    }
}

/// One topic segment: `+`, `#`, `/` and NUL become `_`; an empty segment is `_`.
pub fn segment(s: &str) -> String {
    if s.is_empty() {
        return "_".to_owned();
    }
    s.chars().map(|c| if matches!(c, '+' | '#' | '/' | '\0') { '_' } else { c }).collect()
}

/// The category of an event type: its second segment (`cookwala.<category>.<name>`), or
/// `other` when it has none.
pub fn category(ty: &str) -> &str {
    ty.split('.').nth(1).filter(|c| !c.is_empty()).unwrap_or("other")
}

/// The topic of an event: `cookwala/{kitchen}/{category}/{subject}` (`hub` without a subject).
pub fn topic(kitchen: &str, ty: &str, subject: &str) -> String {
    let subject = if subject.is_empty() { "hub" } else { subject };
    format!("cookwala/{}/{}/{}", segment(kitchen), segment(category(ty)), segment(subject))
}

/// The QoS of a category (0, 1 or 2): see the module documentation for the choices.
pub fn qos_for(category: &str) -> u8 {
    match category {
        "safety" => 2,
        "task" | "lease" | "handoff" | "ccp" | "execution" | "recall" => 1,
        _ => 0,
    }
}

fn qos(level: u8) -> QoS {
    match level {
        2 => QoS::ExactlyOnce,
        1 => QoS::AtLeastOnce,
        _ => QoS::AtMostOnce,
    }
}

/// What to publish for one outbox event: its topic, QoS and retain flag, and the topic to
/// clear after it (the safety topic of an execution that reached a final state).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The topic.
    pub topic: String,
    /// 0, 1 or 2.
    pub qos: u8,
    /// Retained (a safety event reporting a hazard).
    pub retain: bool,
    /// A retained safety topic to clear with an empty retained message after this event.
    pub clear: Option<String>,
}

/// The [`Plan`] for an event of type `ty` about `subject` whose body is `body`.
pub fn plan(kitchen: &str, ty: &str, subject: &str, body: &str) -> Plan {
    let cat = category(ty);
    let doc = canonical_json::parse(body.as_bytes()).ok();
    let data = |key: &str| {
        doc.as_ref()
            .and_then(|d| d.get("data"))
            .and_then(|d| d.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let retain = ty.starts_with("cookwala.safety.")
        && data("action").is_some_and(|a| a != "none")
        && ty != "cookwala.safety.cleared";
    let ended = ty.starts_with("cookwala.execution.")
        && data("state")
            .and_then(|s| cookwala::execution::ExecutionState::parse(&s))
            .is_some_and(cookwala::execution::ExecutionState::is_final);
    let clear = ended.then(|| topic(kitchen, "cookwala.safety.x", subject));
    Plan { topic: topic(kitchen, ty, subject), qos: qos_for(cat), retain, clear }
}

impl Hub {
    /// Starts the MQTT task when [`crate::HubConfig::mqtt`] names a broker.
    pub fn spawn_mqtt(&self) -> Option<tokio::task::JoinHandle<()>> {
        let config = Arc::new(self.inner.config.mqtt.clone()?);
        Some(tokio::spawn(run(self.clone(), config)))
    }
}

/// Connects, publishes and listens until the hub stops; reconnects with backoff.
async fn run(hub: Hub, config: Arc<MqttConfig>) {
    let key = config.cursor_key();
    // A cursor never seen starts at the end of the outbox (like a new webhook).
    loop {
        let k = key.clone();
        let init = hub
            .db(move |s| {
                if s.webhook_cursor(&k)?.is_none() {
                    s.set_webhook_cursor(&k, s.last_event_position()?, None)?;
                }
                Ok(())
            })
            .await;
        if init.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let tls = if config.tls {
        match crate::outbox::webhooks::tls_config(&hub.inner.config.webhook_roots) {
            Ok(t) => Some(t),
            Err(e) => {
                crate::clock::note(format_args!("cookwala-hub: mqtt {key}: not started: {e}"));
                return;
            }
        }
    } else {
        None
    };
    let mut listener = alarm::Listener::new(&hub, config.clone());
    // A device comes back quickly: its announcement and its final events are due.
    let max_retry = if hub.inner.announce.is_some() {
        config.max_retry.min(DEVICE_MAX_RETRY)
    } else {
        config.max_retry
    };
    let mut wait = config.first_retry.min(max_retry);
    let mut failures = 0u32;
    loop {
        let connected = session(&hub, &config, &key, tls.clone(), &mut listener).await;
        hub.inner.mqtt_connected.store(false, std::sync::atomic::Ordering::Relaxed);
        let why = match connected {
            Ok(()) => return,
            Err(Failure::AfterConnect(why)) => {
                wait = config.first_retry;
                failures = 0;
                why
            }
            Err(Failure::Connect(why)) => why,
        };
        if failures == 0 {
            crate::clock::note(format_args!(
                "cookwala-hub: mqtt {key}: {why}; reconnecting (every {max_retry:?} at most)"
            ));
        }
        failures = failures.saturating_add(1);
        tokio::time::sleep(wait).await;
        wait = wait.saturating_mul(2).min(max_retry);
    }
}

/// The longest wait between two connection attempts of a device process.
pub const DEVICE_MAX_RETRY: Duration = Duration::from_secs(2);

enum Failure {
    /// No connection was made.
    Connect(String),
    /// The connection was made, then lost.
    AfterConnect(String),
}

fn options(
    config: &MqttConfig,
    tls: Option<Arc<tokio_rustls::rustls::ClientConfig>>,
    device: Option<(&Announce, i64)>,
) -> MqttOptions {
    let name = match device {
        Some((a, _)) => format!("cookwala-device-{}-{}", config.kitchen, a.device),
        None => format!("cookwala-hub-{}", config.kitchen),
    };
    let client_id: String = name.chars().filter(|c| c.is_ascii_graphic()).take(128).collect();
    let mut opts = MqttOptions::new(client_id, config.host.clone(), config.port);
    // A device's session is watched more closely: the broker publishes its will within 1.5
    // keep-alive periods of a connection that went silent (at once for one that closed).
    opts.set_keep_alive(Duration::from_secs(if device.is_some() { 5 } else { 15 }));
    if let Some((a, now_ms)) = device {
        let will = crate::outbox::events::offline_will(a, now_ms);
        let props = LastWillProperties {
            delay_interval: None,
            payload_format_indicator: Some(1),
            message_expiry_interval: None,
            content_type: Some("application/cloudevents+json".to_owned()),
            response_topic: None,
            correlation_data: None,
            user_properties: Vec::new(),
        };
        opts.set_last_will(LastWill::new(
            topic(&config.kitchen, crate::kitchen::OFFLINE, &a.device),
            crate::storage::jcs_text(&will).into_bytes(),
            QoS::AtLeastOnce,
            true,
            Some(props),
        ));
    }
    opts.set_clean_start(true);
    opts.set_connection_timeout(5);
    opts.set_request_channel_capacity(4 * BATCH);
    let mut props = ConnectProperties::new();
    props.max_packet_size = Some(MAX_PACKET);
    opts.set_connect_properties(props);
    opts.set_max_packet_size(Some(MAX_PACKET));
    if let Some(user) = &config.username {
        opts.set_credentials(user.clone(), config.password.clone().unwrap_or_default());
    }
    if let Some(tls) = tls {
        opts.set_transport(Transport::tls_with_config(TlsConfiguration::Rustls(tls)));
    }
    opts
}

/// The batch being published: the cursor it moves to once every message is acknowledged.
#[derive(Debug)]
struct Batch {
    last: u64,
    /// PUBACKs and PUBCOMPs still expected.
    acks: usize,
}

/// One connection: publishes the outbox from the cursor, forwards heartbeats and hands safety
/// messages to the listener until the connection fails (or the hub shuts down: `Ok`).
async fn session(
    hub: &Hub,
    config: &MqttConfig,
    key: &str,
    tls: Option<Arc<tokio_rustls::rustls::ClientConfig>>,
    listener: &mut alarm::Listener,
) -> Result<(), Failure> {
    let announce = hub.inner.announce.as_ref();
    let device = announce.map(|a| (a, hub.now_ms()));
    let (client, mut events) = AsyncClient::new(options(config, tls, device), 4 * BATCH);
    let broker_max = connect(&mut events).await.map_err(Failure::Connect)?;
    let lost = |e: String| Failure::AfterConnect(e);
    crate::clock::note(format_args!("cookwala-hub: mqtt {key}: connected"));
    hub.inner.mqtt_connected.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut filters = vec![Filter::new(config.safety_filter(), QoS::ExactlyOnce)];
    if hub.inner.coordinator.is_some() {
        filters.push(Filter::new(config.device_filter(), QoS::AtLeastOnce));
        filters.push(Filter::new(config.execution_filter(), QoS::AtLeastOnce));
    }
    for f in &mut filters {
        f.nolocal = true;
    }
    client.try_subscribe_many(filters).map_err(|e| lost(format!("subscribe: {e}")))?;
    if let Some(a) = announce {
        // Born again on every connection: the retained `online` replaces the will the broker
        // may have published for an earlier session.
        let online = crate::outbox::events::online(a, hub.now_ms());
        let props = cloudevent_properties();
        client
            .try_publish_with_properties(
                topic(&config.kitchen, crate::kitchen::ONLINE, &a.device),
                QoS::AtLeastOnce,
                true,
                crate::storage::jcs_text(&online).into_bytes(),
                props,
            )
            .map_err(|e| lost(format!("publish: {e}")))?;
        crate::clock::note(format_args!(
            "cookwala-hub: mqtt {key}: device {} online at {}",
            a.device, a.base_url
        ));
    }
    let device_prefix = format!("cookwala/{}/device/", segment(&config.kitchen));
    let execution_prefix = format!("cookwala/{}/execution/", segment(&config.kitchen));
    let bus = &hub.inner.bus;
    let mut committed = bus.committed();
    let mut live = bus.live();
    let mut closing = bus.closing();
    let mut batch: Option<Batch> = None;
    // QoS 0 publishes not yet written to the connection (outbox events and heartbeats).
    let mut unsent_qos0 = 0usize;
    loop {
        if batch.is_none() {
            committed.borrow_and_update();
            let k = key.to_owned();
            // In a fleet, one replica (the relay) publishes the shared outbox.
            let rows = if hub.relays() {
                hub.db(move |s| {
                    let cursor = s.webhook_cursor(&k)?.unwrap_or(0);
                    s.events_after(cursor, BATCH)
                })
                .await
                .map_err(|_| lost("the outbox cannot be read".to_owned()))?
            } else {
                Vec::new()
            };
            if let Some(last) = rows.last().map(|r| r.position) {
                let mut acks = 0;
                for row in &rows {
                    let p = plan(&config.kitchen, &row.ty, &row.subject, &row.body);
                    // An event the broker would refuse would fail every connection: skipped.
                    let size = row.body.len() + p.topic.len() + 128;
                    if broker_max.is_some_and(|max| size > max as usize) {
                        crate::clock::note(format_args!(
                            "cookwala-hub: mqtt {key}: event {} ({size} bytes) is larger than the \
                             broker accepts; not published",
                            row.id
                        ));
                        continue;
                    }
                    let props = cloudevent_properties();
                    client
                        .try_publish_with_properties(
                            p.topic,
                            qos(p.qos),
                            p.retain,
                            row.body.clone().into_bytes(),
                            props,
                        )
                        .map_err(|e| lost(format!("publish: {e}")))?;
                    if p.qos == 0 {
                        unsent_qos0 += 1;
                    } else {
                        acks += 1;
                    }
                    if let Some(clear) = p.clear {
                        client
                            .try_publish(clear, QoS::ExactlyOnce, true, Vec::new())
                            .map_err(|e| lost(format!("publish: {e}")))?;
                        acks += 1;
                    }
                }
                batch = Some(Batch { last, acks });
            }
        }
        if let Some(b) = &batch
            && b.acks == 0
            && unsent_qos0 == 0
        {
            let (k, last) = (key.to_owned(), b.last);
            loop {
                let k = k.clone();
                match hub.db(move |s| s.set_webhook_cursor(&k, last, None)).await {
                    Ok(()) => break,
                    Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
                }
            }
            batch = None;
            continue;
        }
        tokio::select! {
            ev = events.poll() => match ev {
                Ok(Event::Incoming(Packet::Publish(p))) => {
                    let t = String::from_utf8_lossy(&p.topic).into_owned();
                    if t.starts_with(&device_prefix) {
                        if let Some(change) = hub.device_message(&t, &p.payload) {
                            let hub = hub.clone();
                            tokio::spawn(async move { hub.apply_change(change).await });
                        }
                    } else if t.starts_with(&execution_prefix) {
                        hub.execution_message(&t, &p.payload);
                    } else {
                        listener.received(p);
                    }
                }
                Ok(Event::Incoming(Packet::PubAck(_) | Packet::PubComp(_))) => {
                    if let Some(b) = &mut batch {
                        b.acks = b.acks.saturating_sub(1);
                    }
                }
                Ok(Event::Outgoing(Outgoing::Publish(0))) => {
                    unsent_qos0 = unsent_qos0.saturating_sub(1);
                }
                Ok(Event::Incoming(Packet::Disconnect(d))) => {
                    return Err(lost(format!("the broker disconnected ({:?})", d.reason_code)));
                }
                Ok(_) => {}
                Err(e) => return Err(lost(e.to_string())),
            },
            changed = committed.changed(), if batch.is_none() => {
                if changed.is_err() {
                    return Ok(());
                }
            }
            hb = live.recv() => match hb {
                Ok(ev) => {
                    // Live-only events (heartbeats) go out once, at QoS 0, never replayed.
                    let t = topic(&config.kitchen, ev.ty, &ev.subject);
                    client
                        .try_publish(t, QoS::AtMostOnce, false, ev.body.clone().into_bytes())
                        .map_err(|e| lost(format!("publish: {e}")))?;
                    unsent_qos0 += 1;
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            },
            _ = closing.changed() => {
                let _ = client.try_disconnect();
                return Ok(());
            }
        }
    }
}

/// CloudEvents structured mode: `content-type: application/cloudevents+json`, UTF-8 payload.
fn cloudevent_properties() -> PublishProperties {
    PublishProperties {
        content_type: Some("application/cloudevents+json".to_owned()),
        payload_format_indicator: Some(1),
        ..PublishProperties::default()
    }
}

/// Polls until the broker accepts the connection; the largest packet it accepts, if it says.
async fn connect(events: &mut EventLoop) -> Result<Option<u32>, String> {
    loop {
        match events.poll().await {
            Ok(Event::Incoming(Packet::ConnAck(ack))) => {
                return Ok(ack.properties.and_then(|p| p.max_packet_size));
            }
            Ok(_) => {}
            Err(e) => return Err(format!("cannot connect: {e}")),
        }
    }
}

#[cfg(test)]
mod tests;
