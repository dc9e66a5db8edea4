//! The kitchen event bus against a real Mosquitto: each test starts its own broker (a generated
//! config on a free loopback port in a temp dir) and kills it at the end. Without mosquitto
//! the tests print a notice and pass, except under `CI=true`, where they fail.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use canonical_json::Value;
use cookwala_hub::storage::{SqliteStorage, Storage};
use cookwala_hub::{Hub, HubConfig, MqttConfig, app};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::{Filter, Packet};
use rumqttc::v5::{AsyncClient, Event, MqttOptions};
use test_support::mosquitto::Broker;
use tokio::sync::mpsc;

use crate::events::{outbox, run_to_end, s, start};
use crate::support::*;

/// A message a test client received.
#[derive(Clone, Debug)]
struct Msg {
    topic: String,
    qos: u8,
    retain: bool,
    payload: Vec<u8>,
    content_type: Option<String>,
}

impl Msg {
    /// The payload as JSON (`null` when it is not: other clients publish garbage too).
    fn doc(&self) -> Value {
        canonical_json::parse(&self.payload).unwrap_or(Value::Null)
    }
}

/// A second MQTT client subscribed to `filter` (QoS 2, retain as published); with
/// `persistent`, its session outlives disconnections and broker restarts.
struct Sub {
    rx: mpsc::UnboundedReceiver<Msg>,
    task: tokio::task::JoinHandle<()>,
    got: Vec<Msg>,
}

impl Drop for Sub {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn subscribe(port: u16, id: &str, filter: &str, persistent: bool) -> Sub {
    let mut opts = MqttOptions::new(id, "127.0.0.1", port);
    // Larger than rumqttc's 10 KiB default: a test publishes a 100 kB message.
    opts.set_max_packet_size(Some(1 << 20));
    opts.set_clean_start(!persistent);
    if persistent {
        opts.set_session_expiry_interval(Some(3600));
    }
    let (client, mut events) = AsyncClient::new(opts, 64);
    let (tx, rx) = mpsc::unbounded_channel();
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    let filter = filter.to_owned();
    let task = tokio::spawn(async move {
        let mut ready = Some(ready_tx);
        loop {
            match events.poll().await {
                Ok(Event::Incoming(Packet::ConnAck(_))) => {
                    let mut f = Filter::new(filter.clone(), QoS::ExactlyOnce);
                    f.preserve_retain = true;
                    client.subscribe_many([f]).await.unwrap();
                }
                Ok(Event::Incoming(Packet::SubAck(_))) => {
                    if let Some(r) = ready.take() {
                        let _ = r.send(());
                    }
                }
                Ok(Event::Incoming(Packet::Publish(p))) => {
                    let msg = Msg {
                        topic: String::from_utf8_lossy(&p.topic).into_owned(),
                        qos: p.qos as u8,
                        retain: p.retain,
                        payload: p.payload.to_vec(),
                        content_type: p.properties.and_then(|p| p.content_type),
                    };
                    if tx.send(msg).is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(10), ready_rx).await.unwrap().unwrap();
    Sub { rx, task, got: Vec::new() }
}

impl Sub {
    /// Receives until `done` holds for what was received (10 s at most); everything so far.
    async fn until(&mut self, what: &str, done: impl Fn(&[Msg]) -> bool) -> &[Msg] {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !done(&self.got) {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(m)) => self.got.push(m),
                _ => panic!("timed out waiting for {what}; got {:#?}", self.got),
            }
        }
        &self.got
    }

    /// Receives for `wait`; everything so far.
    async fn drain(&mut self, wait: Duration) -> &[Msg] {
        let deadline = tokio::time::Instant::now() + wait;
        while let Ok(Some(m)) = tokio::time::timeout_at(deadline, self.rx.recv()).await {
            self.got.push(m);
        }
        &self.got
    }
}

/// The ids of the non-empty messages, first occurrences only, in arrival order.
fn ids(msgs: &[Msg]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    msgs.iter()
        .filter(|m| !m.payload.is_empty())
        .map(|m| s(&m.doc(), "id").to_owned())
        .filter(|id| seen.insert(id.clone()))
        .collect()
}

fn bus(broker: &Broker, kitchen: &str) -> MqttConfig {
    let mut c = MqttConfig::parse(&broker.url(), kitchen).unwrap();
    c.first_retry = Duration::from_millis(100);
    c.max_retry = Duration::from_millis(400);
    c
}

async fn hub_with(config: HubConfig) -> (Hub, Arc<dyn Storage>) {
    let storage: Arc<dyn Storage> = Arc::new(SqliteStorage::in_memory().unwrap());
    (Hub::open(storage.clone(), config).await.unwrap(), storage)
}

/// The stored events about `subject`, in outbox order.
fn stored(storage: &dyn Storage, subject: &str) -> Vec<(String, String)> {
    storage
        .events_after(0, 100_000)
        .unwrap()
        .into_iter()
        .filter(|e| e.subject == subject)
        .map(|e| (e.id, e.body))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_execution_is_published_under_its_topics_with_its_qos() {
    let Some(broker) = Broker::start() else { return };
    let mut sub = subscribe(broker.port(), "t-watch-1", "cookwala/k1/#", false).await;
    let (hub, storage) = hub_with(HubConfig { mqtt: Some(bus(&broker, "k1")), ..config() }).await;
    let task = hub.spawn_mqtt().unwrap();
    start(&hub, "ex-mq-1", "red-lentil-soup").await;
    assert_eq!(run_to_end(&hub, "ex-mq-1").await.str("state"), "completed");
    let expected = stored(&*storage, "ex-mq-1");
    let last = expected.last().unwrap().0.clone();
    let clear = "cookwala/k1/safety/ex-mq-1";
    let got = sub
        .until("the whole execution and the safety clear", |m| {
            ids(m).contains(&last) && m.iter().any(|x| x.topic == clear)
        })
        .await;
    let events: Vec<&Msg> = got.iter().filter(|m| !m.payload.is_empty()).collect();
    // Every event, in outbox order, once, as the stored bytes.
    let bodies: Vec<&str> =
        events.iter().map(|m| std::str::from_utf8(&m.payload).unwrap()).collect();
    let want: Vec<&str> = expected.iter().map(|(_, b)| b.as_str()).collect();
    assert_eq!(bodies, want);
    for m in &events {
        assert_eq!(m.topic, "cookwala/k1/execution/ex-mq-1");
        assert_eq!(m.qos, 1, "{}", m.topic);
        assert!(!m.retain);
        assert_eq!(m.content_type.as_deref(), Some("application/cloudevents+json"));
    }
    let types: Vec<String> = events.iter().map(|m| s(&m.doc(), "type").to_owned()).collect();
    assert_eq!(types.first().unwrap(), "cookwala.execution.accepted");
    assert_eq!(types.last().unwrap(), "cookwala.execution.completed");
    // The execution ended: its safety topic is cleared (an empty retained message).
    let cleared = got.iter().find(|m| m.topic == clear).unwrap();
    assert!(cleared.payload.is_empty() && cleared.retain && cleared.qos == 2);
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_safety_event_is_retained_until_its_execution_ends() {
    let Some(broker) = Broker::start() else { return };
    let mut sub = subscribe(broker.port(), "t-watch-2", "cookwala/k1/safety/#", false).await;
    let config = HubConfig {
        mqtt: Some(bus(&broker, "k1")),
        sim_faults: vec![cookwala_sim::Fault {
            kind: cookwala_sim::FaultKind::Overheat,
            node: None,
        }],
        ..config()
    };
    let (hub, storage) = hub_with(config).await;
    let task = hub.spawn_mqtt().unwrap();
    start(&hub, "ex-mq-hot", "red-lentil-soup").await;
    // Advance until the limit fires; the execution is then stopping, not yet stopped.
    let app = app(hub.clone());
    let fired =
        |st: &dyn Storage| outbox(st).iter().any(|e| s(e, "type") == "cookwala.safety.limit_fired");
    for _ in 0..100_000 {
        if fired(&*storage) {
            break;
        }
        hub.advance(100).await.unwrap();
    }
    assert!(fired(&*storage));
    let state = call(&app, get("/v1/executions/ex-mq-hot")).await.str("state").to_owned();
    let topic = "cookwala/k1/safety/ex-mq-hot";
    let got = sub.until("the safety event", |m| m.iter().any(|x| x.topic == topic)).await;
    let alarm = got.iter().find(|m| m.topic == topic).unwrap();
    assert_eq!((alarm.qos, alarm.retain), (2, true));
    assert_eq!(s(&alarm.doc(), "type"), "cookwala.safety.limit_fired");
    assert_eq!(alarm.doc().pointer("/data/action").and_then(Value::as_str), Some("heat_off_all"));
    if state == "stopping" {
        // A participant that joins now still learns the hazard.
        let mut late = subscribe(broker.port(), "t-late-1", topic, false).await;
        let got = late.until("the retained hazard", |m| !m.is_empty()).await;
        assert!(got[0].retain && s(&got[0].doc(), "type") == "cookwala.safety.limit_fired");
    } else {
        eprintln!("note: the limit fired and the execution ended in one clock step ({state})");
    }
    assert_eq!(run_to_end(&hub, "ex-mq-hot").await.str("state"), "stopped");
    let got = sub.until("the clear", |m| m.iter().any(|x| x.payload.is_empty())).await;
    let clear = got.iter().find(|m| m.payload.is_empty()).unwrap();
    assert_eq!((clear.topic.as_str(), clear.retain), (topic, true));
    // After the clear, a new participant gets no retained hazard.
    let mut later = subscribe(broker.port(), "t-late-2", topic, false).await;
    assert!(later.drain(Duration::from_millis(500)).await.is_empty());
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abort_session_alarm_from_another_client_stops_a_running_execution() {
    let Some(broker) = Broker::start() else { return };
    let mut sub = subscribe(broker.port(), "t-watch-3", "cookwala/k3/#", false).await;
    let config = HubConfig { mqtt: Some(bus(&broker, "k3")), speed: 60.0, ..config() };
    let (hub, storage) = hub_with(config).await;
    let tasks = [hub.spawn_mqtt().unwrap(), hub.spawn_clock().unwrap()];
    start(&hub, "ex-mq-alarm", "red-lentil-soup").await;
    let app = app(hub.clone());
    // Running, and the hub is on the bus (it subscribes before it publishes).
    sub.until("the execution running", |m| {
        m.iter().any(|x| {
            !x.payload.is_empty()
                && x.doc().pointer("/data/state").and_then(Value::as_str) == Some("running")
        })
    })
    .await;
    assert_eq!(call(&app, get("/v1/executions/ex-mq-alarm")).await.str("state"), "running");
    let incidents = storage.incident_count().unwrap();

    // Another participant: a smoke detector.
    let (detector, mut det_events) =
        AsyncClient::new(MqttOptions::new("t-smoke-1", "127.0.0.1", broker.port()), 16);
    let driver = tokio::spawn(async move { while det_events.poll().await.is_ok() {} });
    // Malformed messages are dropped, never fatal.
    detector
        .publish("cookwala/k3/safety/kitchen", QoS::AtLeastOnce, false, "{not json")
        .await
        .unwrap();
    detector
        .publish("cookwala/k3/safety/kitchen", QoS::AtLeastOnce, false, vec![b'x'; 100_000])
        .await
        .unwrap();
    let alarm = r#"{"specversion":"1.0","id":"smoke-1/42","source":"/kitchen/smoke-1",
        "type":"cookwala.safety.smoke","time":"2026-12-01T23:00:00Z","cookwalapriority":"safety",
        "data":{"level":"alarm","action":"abort_session","zone":"kitchen"}}"#;
    let sent = Instant::now();
    detector.publish("cookwala/k3/safety/kitchen", QoS::ExactlyOnce, false, alarm).await.unwrap();
    let latency = loop {
        let state = call(&app, get("/v1/executions/ex-mq-alarm")).await.str("state").to_owned();
        if state == "stopped" {
            break sent.elapsed();
        }
        assert!(sent.elapsed() < Duration::from_secs(5), "still {state}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    eprintln!("alarm -> stopped (heat off) latency: {} ms", latency.as_millis());
    assert!(latency < Duration::from_secs(2), "{latency:?}");
    // The stop went through the stop route, with the alarm as its reason.
    let events = outbox(&*storage);
    let stopping = events
        .iter()
        .find(|e| e.pointer("/data/state").and_then(Value::as_str) == Some("stopping"))
        .unwrap();
    let why = stopping.pointer("/data/x-hub-event/why").and_then(Value::as_str).unwrap();
    assert!(why.contains("cookwala.safety.smoke") && why.contains("abort_session"), "{why}");
    // The reaction is an incident and an event.
    let deadline = Instant::now() + Duration::from_secs(5);
    let handled = loop {
        let found =
            outbox(&*storage).into_iter().find(|e| s(e, "type") == "x-hub.safety.alarm_handled");
        if let Some(e) = found {
            break e;
        }
        assert!(Instant::now() < deadline, "no alarm_handled event");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(handled.pointer("/data/alarm/id").and_then(Value::as_str), Some("smoke-1/42"));
    let stopped = handled.pointer("/data/executions").unwrap().as_array().unwrap();
    assert_eq!(stopped, &[Value::from("ex-mq-alarm")]);
    assert_eq!(storage.incident_count().unwrap(), incidents + 1);
    // The reaction is published too (QoS 2, not retained: it asks nothing of anyone).
    let got = sub
        .until("the reaction", |m| {
            m.iter().any(|x| {
                !x.payload.is_empty() && s(&x.doc(), "type") == "x-hub.safety.alarm_handled"
            })
        })
        .await;
    let r = got
        .iter()
        .find(|x| !x.payload.is_empty() && s(&x.doc(), "type") == "x-hub.safety.alarm_handled")
        .unwrap();
    assert_eq!((r.topic.as_str(), r.qos, r.retain), ("cookwala/k3/safety/kitchen", 2, false));
    driver.abort();
    for t in tasks {
        t.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_made_while_the_broker_is_down_are_delivered_once_it_is_up() {
    let Some(mut broker) = Broker::start() else { return };
    // A participant with a session that survives the broker's restarts.
    let mut sub = subscribe(broker.port(), "t-watch-4", "cookwala/k4/execution/#", true).await;
    broker.down();
    // The hub starts while the broker is down, and serves.
    let (hub, storage) = hub_with(HubConfig { mqtt: Some(bus(&broker, "k4")), ..config() }).await;
    let task = hub.spawn_mqtt().unwrap();
    let app = app(hub.clone());
    start(&hub, "ex-mq-down", "red-lentil-soup").await;
    hub.advance(120_000).await.unwrap();
    assert_eq!(call(&app, get("/v1/capabilities")).await.status, 200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    broker.up();
    let first: Vec<String> =
        stored(&*storage, "ex-mq-down").into_iter().map(|(id, _)| id).collect();
    sub.until("the events made while the broker was down", |m| {
        let got = ids(m);
        first.iter().all(|id| got.contains(id))
    })
    .await;
    // Killed and restarted mid-run: nothing the outbox holds is lost.
    broker.down();
    assert_eq!(run_to_end(&hub, "ex-mq-down").await.str("state"), "completed");
    tokio::time::sleep(Duration::from_millis(300)).await;
    broker.up();
    let all: Vec<String> = stored(&*storage, "ex-mq-down").into_iter().map(|(id, _)| id).collect();
    assert!(all.len() > first.len());
    let got = sub
        .until("every event", |m| {
            let got = ids(m);
            all.iter().all(|id| got.contains(id))
        })
        .await;
    // In order per subject (first occurrences; a resent event may come twice).
    assert_eq!(ids(got), all);
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_all_alarm_pauses_and_a_retained_alarm_reaches_a_hub_that_connects_later() {
    let Some(broker) = Broker::start() else { return };
    let mut sub = subscribe(broker.port(), "t-watch-5", "cookwala/k5/execution/#", false).await;
    // The alarm is already on the broker (retained) when the hub connects.
    let (detector, mut det_events) =
        AsyncClient::new(MqttOptions::new("t-presence-1", "127.0.0.1", broker.port()), 16);
    let driver = tokio::spawn(async move { while det_events.poll().await.is_ok() {} });
    let config = HubConfig { mqtt: Some(bus(&broker, "k5")), speed: 60.0, ..config() };
    let (hub, storage) = hub_with(config).await;
    let clock = hub.spawn_clock().unwrap();
    start(&hub, "ex-mq-pause", "red-lentil-soup").await;
    let app = app(hub.clone());
    let deadline = Instant::now() + Duration::from_secs(10);
    while call(&app, get("/v1/executions/ex-mq-pause")).await.str("state") != "running" {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let alarm = r#"{"specversion":"1.0","id":"child-1/7","source":"/kitchen/camera-1",
        "type":"cookwala.safety.child_or_pet_in_zone","time":"2026-12-01T23:00:00Z",
        "cookwalapriority":"safety","data":{"level":"warning","action":"pause_all"}}"#;
    detector.publish("cookwala/k5/safety/hob", QoS::ExactlyOnce, true, alarm).await.unwrap();
    let mqtt = hub.spawn_mqtt().unwrap();
    sub.until("the pause", |m| {
        m.iter().any(|x| x.doc().pointer("/data/state").and_then(Value::as_str) == Some("paused"))
    })
    .await;
    assert_eq!(call(&app, get("/v1/executions/ex-mq-pause")).await.str("state"), "paused");
    let deadline = Instant::now() + Duration::from_secs(5);
    while storage.incident_count().unwrap() == 0 {
        assert!(Instant::now() < deadline, "no incident recorded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let handled: Vec<Value> = outbox(&*storage)
        .into_iter()
        .filter(|e| s(e, "type") == "x-hub.safety.alarm_handled")
        .collect();
    assert_eq!(handled.len(), 1);
    assert_eq!(handled[0].pointer("/data/action").and_then(Value::as_str), Some("pause_all"));
    // Clean up the retained alarm.
    detector.publish("cookwala/k5/safety/hob", QoS::ExactlyOnce, true, Vec::new()).await.unwrap();
    driver.abort();
    mqtt.abort();
    clock.abort();
}
