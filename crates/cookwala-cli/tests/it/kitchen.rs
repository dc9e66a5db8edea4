//! A kitchen of processes: a real Mosquitto (started here, `test_support::mosquitto`), a
//! `cookwala serve` hub coordinating, and `cookwala device` processes, each started, killed
//! and restarted for real. An observer subscribed to `cookwala/K/#` records the bus.
//!
//! Latencies are printed, not asserted (no timed assertions): each wait has a generous
//! deadline only so that a broken build fails instead of hanging.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use canonical_json::Value;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::mqttbytes::v5::Packet;
use rumqttc::v5::{Client, Event, MqttOptions};
use test_support::mosquitto::Broker;

const HUB_TOKEN: &str = "kitchen-hub-token-0";
const DEVICE_TOKEN: &str = "kitchen-device-token-0";
const KITCHEN: &str = "K";
const WAIT: Duration = Duration::from_secs(60);

/// A process of ours, killed when dropped.
struct Proc {
    child: Child,
    addr: SocketAddr,
    _stdout: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    fn start(args: &[&str]) -> Proc {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cookwala"))
            .args(args)
            .env_remove("COOKWALA_HUB_TOKEN")
            .env_remove("COOKWALA_DEVICE_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let addr = first.rsplit("http://").next().unwrap().trim().parse().unwrap();
        Proc { child, addr, _stdout: lines }
    }

    fn signal(&self, sig: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_raw(i32::try_from(self.child.id()).unwrap()).unwrap();
        rustix::process::kill_process(pid, sig).unwrap();
    }

    fn kill(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

/// A hub coordinating the kitchen: its catalog has none of the samples' devices, so every
/// `/devices/demo-…` request it answers is forwarded.
fn hub(broker: &Broker, data: &Path) -> Proc {
    let data = data.to_str().unwrap();
    Proc::start(&[
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--data",
        data,
        "--token",
        HUB_TOKEN,
        "--mqtt",
        &broker.url(),
        "--kitchen",
        KITCHEN,
        "--device-token",
        DEVICE_TOKEN,
        "--speed",
        "1",
    ])
}

fn device(broker_url: &str, id: &str, data: &Path, bundle: &Path, addr: &str) -> Proc {
    Proc::start(&[
        "device",
        "--device",
        id,
        "--bundle",
        bundle.to_str().unwrap(),
        "--addr",
        addr,
        "--data",
        data.to_str().unwrap(),
        "--token",
        DEVICE_TOKEN,
        "--mqtt",
        broker_url,
        "--kitchen",
        KITCHEN,
        "--heartbeat-secs",
        "1",
    ])
}

struct Reply {
    code: u16,
    body: Value,
}

fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: &str,
    extra: &str,
    body: &str,
) -> Reply {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/vnd.cookwala+json\r\nContent-Length: {}\r\n{extra}\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let code = raw.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let text = raw.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let body = canonical_json::parse(text.as_bytes()).unwrap_or(Value::Null);
    Reply { code, body }
}

fn get(addr: SocketAddr, path: &str, token: &str) -> Reply {
    request(addr, "GET", path, token, "", "")
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

fn seq(v: &Value) -> i64 {
    v.get("seq").and_then(Value::as_i64).unwrap_or(-1)
}

/// Starts `recipe` of the samples' bundle as execution `id` at `base` (a hub path prefix).
fn start(hub: SocketAddr, prefix: &str, bundle: &Path, recipe: &str, id: &str) -> Reply {
    let b = canonical_json::parse(&std::fs::read(bundle).unwrap()).unwrap();
    let r = b.pointer(&format!("/recipes/{recipe}")).unwrap();
    let hash = canonical_json::digest::document_hash(r).unwrap();
    let body = format!(
        r#"{{"core":"0.2.0","kind":"ExecuteRequest","id":"{id}","recipe":"{}","recipeHash":"{hash}","requestedBy":"person:cook","idempotencyKey":"key-{id}","x-hub-human-present":true}}"#,
        s(r, "/id")
    );
    request(
        hub,
        "POST",
        &format!("{prefix}/v1/executions"),
        HUB_TOKEN,
        &format!("Idempotency-Key: key-{id}\r\n"),
        &body,
    )
}

fn wait_until<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> (T, Duration) {
    let began = Instant::now();
    loop {
        if let Some(v) = f() {
            return (v, began.elapsed());
        }
        assert!(began.elapsed() < WAIT, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The hub's `GET /v1/devices` entry for `id`.
fn listed(hub: SocketAddr, id: &str) -> Option<Value> {
    let r = get(hub, "/v1/devices", HUB_TOKEN);
    let Some(Value::Array(list)) = r.body.get("devices") else { return None };
    list.iter().find(|d| s(d, "/id") == id && s(d, "/origin") == "kitchen").cloned()
}

fn online(hub: SocketAddr, id: &str) -> Option<bool> {
    listed(hub, id).and_then(|d| d.get("online").and_then(Value::as_bool))
}

/// Everything published on `cookwala/K/#` since it started (it resubscribes after a broker
/// restart).
struct Observer {
    seen: Arc<Mutex<Vec<(String, Value)>>>,
    stop: Arc<AtomicBool>,
}

impl Observer {
    fn start(port: u16) -> Observer {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen2, stop2) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut opts = MqttOptions::new("kitchen-test-observer", "127.0.0.1", port);
            opts.set_keep_alive(Duration::from_secs(5));
            let (client, mut conn) = Client::new(opts, 64);
            for ev in conn.iter() {
                if stop2.load(Ordering::Relaxed) {
                    return;
                }
                match ev {
                    Ok(Event::Incoming(Packet::ConnAck(_))) => {
                        let _ =
                            client.try_subscribe(format!("cookwala/{KITCHEN}/#"), QoS::AtLeastOnce);
                    }
                    Ok(Event::Incoming(Packet::Publish(p))) => {
                        let topic = String::from_utf8_lossy(&p.topic).into_owned();
                        let doc = canonical_json::parse(&p.payload).unwrap_or(Value::Null);
                        seen2.lock().unwrap().push((topic, doc));
                    }
                    Ok(_) => {}
                    Err(_) => std::thread::sleep(Duration::from_millis(100)),
                }
            }
        });
        Observer { seen, stop }
    }

    /// The first event seen so far matching `f`.
    fn find(&self, f: impl Fn(&str, &Value) -> bool) -> Option<Value> {
        self.seen.lock().unwrap().iter().find(|(t, v)| f(t, v)).map(|(_, v)| v.clone())
    }

    fn count(&self, f: impl Fn(&str, &Value) -> bool) -> usize {
        self.seen.lock().unwrap().iter().filter(|(t, v)| f(t, v)).count()
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn setup() -> Option<(Broker, PathBuf, tempfile::TempDir)> {
    let bundle = test_support::samples_bundle()?;
    let broker = Broker::start()?;
    Some((broker, bundle, tempfile::tempdir().unwrap()))
}

/// Waits until execution `id` is `running` on the device (read through the hub).
fn running(hub: SocketAddr, prefix: &str, id: &str) {
    wait_until(&format!("{id} running"), || {
        let r = get(hub, &format!("{prefix}/v1/executions/{id}"), HUB_TOKEN);
        (s(&r.body, "/state") == "running").then_some(())
    });
}

#[test]
fn a_kitchen_of_processes_finds_watches_hands_off_and_stops_locally() {
    let Some((mut broker, bundle, dir)) = setup() else { return };
    let observer = Observer::start(broker.port());
    let mut hub = hub(&broker, &dir.path().join("hub"));
    let began = Instant::now();
    let mut hob =
        device(&broker.url(), "demo-hob-robot", &dir.path().join("hob"), &bundle, "127.0.0.1:0");
    let hob_addr = hob.addr.to_string();
    let basic = device(
        &broker.url(),
        "demo-hob-robot-basic",
        &dir.path().join("basic"),
        &bundle,
        "127.0.0.1:0",
    );
    // Discovery: both listed online by the hub.
    wait_until("both devices online", || {
        (online(hub.addr, "demo-hob-robot")? && online(hub.addr, "demo-hob-robot-basic")?)
            .then_some(())
    });
    eprintln!(
        "discovery: both devices listed online {:?} after the devices started",
        began.elapsed()
    );

    // Proxying: started through the hub, the same (id, state, seq) from the device's own API.
    let r = start(hub.addr, "/devices/demo-hob-robot", &bundle, "shakshuka", "kx-1");
    assert!(r.code == 201 || r.code == 202, "{} {:?}", r.code, r.body);
    assert_eq!(s(&r.body, "/id"), "kx-1");
    let (pair, _) = wait_until("the hub and the device agree", || {
        let via_hub = get(hub.addr, "/devices/demo-hob-robot/v1/executions/kx-1", HUB_TOKEN).body;
        let own = get(hob.addr, "/v1/executions/kx-1", DEVICE_TOKEN).body;
        let key = |v: &Value| (s(v, "/id").to_owned(), s(v, "/state").to_owned(), seq(v));
        (key(&via_hub) == key(&own) && seq(&own) >= 0).then(|| key(&own))
    });
    eprintln!("proxy: hub and device both read {pair:?}");
    // The device's token is the hub's business: a client's own token does not reach it.
    assert_eq!(get(hob.addr, "/v1/executions/kx-1", HUB_TOKEN).code, 401);
    assert_eq!(
        get(hub.addr, "/devices/demo-hob-robot/v1/executions/kx-1", "wrong-token-000000").code,
        401
    );
    running(hub.addr, "/devices/demo-hob-robot", "kx-1");
    // While it runs: telemetry on its topic, heartbeats naming the execution and its step.
    let (reading, _) = wait_until("a telemetry reading", || {
        observer.find(|t, v| {
            t == format!("cookwala/{KITCHEN}/telemetry/demo-hob-robot")
                && s(v, "/data/taskId") == "kx-1"
        })
    });
    assert_eq!(s(&reading, "/type"), "cookwala.telemetry.reading");
    assert!(matches!(reading.pointer("/data/readings"), Some(Value::Array(r)) if !r.is_empty()));
    wait_until("a heartbeat with the execution", || {
        observer.find(|_, v| {
            s(v, "/type") == "cookwala.device.heartbeat"
                && s(v, "/data/x-executions/0/id") == "kx-1"
                && !s(v, "/data/x-executions/0/node").is_empty()
        })
    });

    // SIGKILL mid-run: offline (the will), the hand-off on the bus.
    let killed = Instant::now();
    hob.kill();
    let (_, t_listed) = wait_until("the hub lists the hob offline", || {
        (online(hub.addr, "demo-hob-robot") == Some(false)).then_some(())
    });
    let (offline, t_offline) = wait_until("cookwala.device.offline on the bus", || {
        observer.find(|t, v| {
            t == format!("cookwala/{KITCHEN}/device/demo-hob-robot")
                && s(v, "/type") == "cookwala.device.offline"
        })
    });
    let (handoff, t_handoff) = wait_until("cookwala.handoff.proposed on the bus", || {
        observer.find(|_, v| {
            s(v, "/type") == "cookwala.handoff.proposed" && s(v, "/data/executionId") == "kx-1"
        })
    });
    eprintln!(
        "SIGKILL → listed offline {t_listed:?}, offline on the bus {t_offline:?}, hand-off {t_handoff:?} (from the kill: {:?})",
        killed.elapsed()
    );
    assert_eq!(s(&offline, "/data/reason"), "session_lost");
    assert_eq!(s(&handoff, "/data/from"), "device:demo-hob-robot");
    assert_eq!(s(&handoff, "/data/offlineReason"), "will");
    assert!(matches!(handoff.pointer("/data/step/hazards"), Some(Value::Array(_))), "{handoff:?}");
    let (notify, _) = wait_until("cookwala.notify.request on the bus", || {
        observer.find(|t, v| {
            t == format!("cookwala/{KITCHEN}/notify/household") && s(v, "/data/relatesTo") == "kx-1"
        })
    });
    assert_eq!(s(&notify, "/type"), "cookwala.notify.request");
    // The status through the hub says the device is unreachable; it invents no state.
    let r = get(hub.addr, "/devices/demo-hob-robot/v1/executions/kx-1", HUB_TOKEN);
    assert_eq!(r.code, 503, "{:?}", r.body);
    assert_eq!(s(&r.body, "/title"), "device-unreachable");
    assert!(r.body.get("state").is_none());

    // Restarted on its data folder: online again; the execution ended safely.
    let restarted = Instant::now();
    let hob = device(&broker.url(), "demo-hob-robot", &dir.path().join("hob"), &bundle, &hob_addr);
    let (_, t_back) =
        wait_until("the hob online again", || online(hub.addr, "demo-hob-robot")?.then_some(()));
    eprintln!(
        "restart → online again {t_back:?} after the device started ({:?} with its start)",
        restarted.elapsed()
    );
    for (addr, path, token) in [
        (hob.addr, "/v1/executions/kx-1", DEVICE_TOKEN),
        (hub.addr, "/devices/demo-hob-robot/v1/executions/kx-1", HUB_TOKEN),
    ] {
        let st = get(addr, path, token);
        assert_eq!(s(&st.body, "/state"), "stopped", "{path}: {:?}", st.body);
        let log = get(addr, &format!("{path}/log"), token);
        assert_eq!(s(&log.body, "/outcome"), "aborted_safe", "{path}/log: {:?}", log.body);
    }

    // The other device: broker and hub gone, the stop button still stops it.
    let r = start(hub.addr, "/devices/demo-hob-robot-basic", &bundle, "shakshuka", "kx-2");
    assert!(r.code == 201 || r.code == 202, "{} {:?}", r.code, r.body);
    running(hub.addr, "/devices/demo-hob-robot-basic", "kx-2");
    hub.kill();
    broker.kill();
    basic.signal(rustix::process::Signal::USR1);
    let (log, _) = wait_until("kx-2 ended on the device", || {
        let log = get(basic.addr, "/v1/executions/kx-2/log", DEVICE_TOKEN);
        (log.code == 200).then_some(log.body)
    });
    assert_eq!(s(&log, "/outcome"), "aborted_safe");
    let at = |k: &str| {
        let t = s(&log, &format!("/x-localStop/{k}"));
        cookwala::time::parse_timestamp(t)
            .unwrap_or_else(|e| panic!("x-localStop.{k} {t:?}: {e:?}"))
    };
    let (req, motion, heat) = (at("requestedAt"), at("motionStoppedAt"), at("heatOffAt"));
    let unix_ms = |t: cookwala::time::Instant| {
        t.unix_seconds() * 1000 + i64::from(t.subsec_nanos() / 1_000_000)
    };
    let ms = |a: &cookwala::time::Instant, b: &cookwala::time::Instant| unix_ms(*b) - unix_ms(*a);
    eprintln!(
        "local stop: motion {} ms, heat {} ms after the request (device time)",
        ms(&req, &motion),
        ms(&req, &heat)
    );
    assert!((0..=500).contains(&ms(&req, &motion)), "{log:?}");
    assert!((0..=1000).contains(&ms(&req, &heat)), "{log:?}");

    // The broker back: the device announces itself and its final event reaches the bus.
    let basic_online = |t: &str, v: &Value| {
        t == format!("cookwala/{KITCHEN}/device/demo-hob-robot-basic")
            && s(v, "/type") == "cookwala.device.online"
    };
    let before = observer.count(basic_online);
    broker.up();
    let (_, t_online) = wait_until("the basic device online again on the bus", || {
        (observer.count(basic_online) > before).then_some(())
    });
    let (_, t_final) = wait_until("kx-2's final event on the bus", || {
        observer.find(|_, v| s(v, "/subject") == "kx-2" && s(v, "/data/state") == "stopped")
    });
    eprintln!("broker back → online {t_online:?}, final event {t_final:?}");
}

/// Publishes raw messages as a second client of the broker (an attacker on the bus).
fn publish_raw(port: u16, messages: &[(String, Vec<u8>)]) {
    let mut opts = MqttOptions::new("kitchen-test-intruder", "127.0.0.1", port);
    opts.set_max_packet_size(Some(1 << 20));
    let (client, mut conn) = Client::new(opts, 64);
    for (topic, payload) in messages {
        client.publish(topic.clone(), QoS::AtLeastOnce, false, payload.clone()).unwrap();
    }
    let mut acked = 0;
    for ev in conn.iter() {
        match ev {
            Ok(Event::Incoming(Packet::PubAck(_))) => {
                acked += 1;
                if acked == messages.len() {
                    break;
                }
            }
            Ok(_) => {}
            Err(e) => panic!("intruder: {e}"),
        }
    }
    let _ = client.disconnect();
}

#[test]
fn spoofed_and_malformed_messages_on_the_bus_are_refused() {
    let Some((broker, bundle, dir)) = setup() else { return };
    let hub = hub(&broker, &dir.path().join("hub"));
    let hob =
        device(&broker.url(), "demo-hob-robot", &dir.path().join("hob"), &bundle, "127.0.0.1:0");
    let (genuine, _) = wait_until("the hob online", || {
        listed(hub.addr, "demo-hob-robot").filter(|d| d.get("online") == Some(&Value::Bool(true)))
    });
    let topic = format!("cookwala/{KITCHEN}/device/demo-hob-robot");
    let event = |ty: &str, id: &str, device: &str, instance: &str, url: &str| {
        format!(
            r#"{{"specversion":"1.0","id":"{id}","source":"/cookwala/devices/{device}","type":"{ty}","time":"2026-01-01T00:00:00Z","data":{{"device":"{device}","instance":"{instance}","baseUrl":"{url}","heartbeatSecs":1}}}}"#
        )
        .into_bytes()
    };
    let mut big = b"{\"pad\":\"".to_vec();
    big.resize(100 * 1024, b'x');
    big.extend_from_slice(b"\"}");
    publish_raw(
        broker.port(),
        &[
            // A second process claiming the id, pointing the hub elsewhere.
            (
                topic.clone(),
                event(
                    "cookwala.device.online",
                    "evil-1",
                    "demo-hob-robot",
                    "evil",
                    "http://127.0.0.1:9",
                ),
            ),
            (
                topic.clone(),
                event(
                    "cookwala.device.heartbeat",
                    "evil-2",
                    "demo-hob-robot",
                    "evil",
                    "http://127.0.0.1:9",
                ),
            ),
            // Its forged death.
            (
                topic.clone(),
                event(
                    "cookwala.device.offline",
                    "evil-3",
                    "demo-hob-robot",
                    "evil",
                    "http://127.0.0.1:9",
                ),
            ),
            // Another device's announcement on this device's topic.
            (
                topic.clone(),
                event("cookwala.device.online", "evil-4", "demo-oven", "x", "http://127.0.0.1:9"),
            ),
            (topic.clone(), b"not json at all".to_vec()),
            (topic.clone(), vec![0xff, 0xfe, 0x00]),
            (topic.clone(), big),
            (format!("cookwala/{KITCHEN}/execution/kx"), b"{\"id\":1}".to_vec()),
        ],
    );
    // A heartbeat of the genuine device after all of them: they were all handled by then.
    std::thread::sleep(Duration::from_millis(2500));
    let now = listed(hub.addr, "demo-hob-robot").unwrap();
    assert_eq!(now.get("online"), Some(&Value::Bool(true)), "{now:?}");
    assert_eq!(s(&now, "/instance"), s(&genuine, "/instance"));
    assert_eq!(s(&now, "/baseUrl"), format!("http://{}", hob.addr));
    assert!(listed(hub.addr, "demo-oven").is_none(), "an announcement on another's topic");
    // The hub still forwards to the genuine device.
    let caps = get(hub.addr, "/devices/demo-hob-robot/v1/capabilities", HUB_TOKEN);
    assert_eq!(caps.code, 200, "{:?}", caps.body);
}

/// A TCP relay between a device and the broker, to cut one device's connection alone.
struct Relay {
    port: u16,
    cut: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    fn start(to: u16) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::new(Mutex::new(Vec::new()));
        let (cut2, open2) = (cut.clone(), open.clone());
        std::thread::spawn(move || {
            for inbound in listener.incoming() {
                let Ok(inbound) = inbound else { continue };
                if cut2.load(Ordering::SeqCst) {
                    continue;
                }
                let Ok(outbound) = TcpStream::connect(("127.0.0.1", to)) else { continue };
                let mut list = open2.lock().unwrap();
                list.push(inbound.try_clone().unwrap());
                list.push(outbound.try_clone().unwrap());
                for (mut a, mut b) in [
                    (inbound.try_clone().unwrap(), outbound.try_clone().unwrap()),
                    (outbound, inbound),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut a, &mut b);
                        let _ = b.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Relay { port, cut, open }
    }

    /// Closes every relayed connection and refuses new ones until [`Relay::restore`].
    fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for s in self.open.lock().unwrap().drain(..) {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }

    fn restore(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

#[test]
fn a_silent_device_and_a_cut_connection_are_offline_until_they_are_back() {
    let Some((broker, bundle, dir)) = setup() else { return };
    let hub = hub(&broker, &dir.path().join("hub"));
    let relay = Relay::start(broker.port());
    let hob = device(
        &format!("mqtt://127.0.0.1:{}", relay.port),
        "demo-hob-robot",
        &dir.path().join("hob"),
        &bundle,
        "127.0.0.1:0",
    );
    wait_until("the hob online", || online(hub.addr, "demo-hob-robot")?.then_some(()));

    // Frozen (its connection open, nothing sent): three missed heartbeats.
    hob.signal(rustix::process::Signal::STOP);
    let (why, t) = wait_until("the frozen hob offline", || {
        listed(hub.addr, "demo-hob-robot").filter(|d| d.get("online") == Some(&Value::Bool(false)))
    });
    eprintln!("frozen → offline after {t:?} ({})", s(&why, "/offlineReason"));
    hob.signal(rustix::process::Signal::CONT);
    let (_, t) =
        wait_until("the thawed hob online", || online(hub.addr, "demo-hob-robot")?.then_some(()));
    eprintln!("thawed → online after {t:?}");

    // Its broker connection cut: the broker publishes its will.
    relay.cut();
    let (why, t) = wait_until("the cut hob offline", || {
        listed(hub.addr, "demo-hob-robot").filter(|d| d.get("online") == Some(&Value::Bool(false)))
    });
    eprintln!("cut → offline after {t:?} ({})", s(&why, "/offlineReason"));
    assert_eq!(s(&why, "/offlineReason"), "will");
    // Its own API still answers: the device runs on without the bus.
    assert_eq!(get(hob.addr, "/v1/capabilities", DEVICE_TOKEN).code, 200);
    relay.restore();
    let (_, t) = wait_until("the reconnected hob online", || {
        online(hub.addr, "demo-hob-robot")?.then_some(())
    });
    eprintln!("restored → online after {t:?}");
}
