//! `cookwala serve --store postgres://…`: hub replicas on one PostgreSQL database (a cluster
//! the test starts itself, `test_support::postgres`), each a real `cookwala serve` process.
//! Reads through any replica, `busy` and idempotency across replicas, stop and resume handed
//! to the replica running the execution, SIGKILL failover, a database restart.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use canonical_json::Value;
use test_support::postgres::PgCluster;

const TOKEN: &str = "fleet-test-token-0";

struct Replica {
    child: std::process::Child,
    addr: SocketAddr,
    _stdout: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `cookwala serve` replica on `url` with `--lease-secs 3`, at real-time speed.
fn replica(data: &Path, url: &str, name: &str) -> Replica {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cookwala"))
        .args(["serve", "--addr", "127.0.0.1:0", "--data"])
        .arg(data)
        .args(["--store", url, "--lease-secs", "3", "--replica", name, "--token", TOKEN])
        .args(["--speed", "1", "--heartbeat-secs", "0"])
        .env_remove("COOKWALA_HUB_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr = first.rsplit("http://").next().unwrap().trim().parse().unwrap();
    Replica { child, addr, _stdout: lines }
}

struct Reply {
    code: u16,
    head: String,
    body: Value,
}

fn request(addr: SocketAddr, method: &str, path: &str, headers: &str, body: &str) -> Reply {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/vnd.cookwala+json\r\nContent-Length: {}\r\n{headers}\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let code = head.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    // Bodies are short JSON documents (Content-Length, no chunking).
    let body = canonical_json::parse(body.as_bytes()).unwrap_or(Value::Null);
    Reply { code, head: head.to_ascii_lowercase(), body }
}

fn start_body(id: &str) -> String {
    let recipe = cookwala_sim::builtin::recipe("red-lentil-soup").unwrap();
    let hash = canonical_json::digest::document_hash(&recipe).unwrap();
    format!(
        r#"{{"core":"0.2.0","kind":"ExecuteRequest","id":"{id}","recipe":"cw:x:red-lentil-soup","recipeHash":"{hash}","requestedBy":"person:cook","idempotencyKey":"{id}-key"}}"#
    )
}

fn start(addr: SocketAddr, id: &str) -> Reply {
    request(
        addr,
        "POST",
        "/v1/executions",
        &format!("Idempotency-Key: {id}-key\r\n"),
        &start_body(id),
    )
}

fn get(addr: SocketAddr, path: &str) -> Reply {
    request(addr, "GET", path, "", "")
}

fn state(r: &Reply) -> &str {
    r.body.get("state").and_then(Value::as_str).unwrap_or("?")
}

fn reason(r: &Reply) -> Option<&str> {
    r.body.pointer("/refusal/reason").and_then(Value::as_str)
}

/// Reads `subject`'s events from the SSE stream of `addr` (in a thread) until an event
/// contains `until`, for at most 30 s; returns the CloudEvents read.
fn sse_until(addr: SocketAddr, subject: &str, until: &str) -> std::thread::JoinHandle<Vec<Value>> {
    let (subject, until) = (subject.to_owned(), until.to_owned());
    std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(
            s,
            "GET /cookwala/v1/events?subject={subject} HTTP/1.1\r\nHost: x\r\n\
             Authorization: Bearer {TOKEN}\r\nAccept: text/event-stream\r\n\r\n"
        )
        .unwrap();
        let mut events = Vec::new();
        for line in BufReader::new(s).lines() {
            let Ok(line) = line else { break };
            if let Some(data) = line.strip_prefix("data:") {
                let Ok(v) = canonical_json::parse(data.trim().as_bytes()) else { continue };
                events.push(v);
                if data.contains(&until) {
                    break;
                }
            }
        }
        events
    })
}

/// Polls `f` every 100 ms until it returns `Some`, for at most `secs` seconds.
fn wait_for<T>(secs: u64, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(secs) {
        if let Some(v) = f() {
            return Some(v);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

#[test]
fn replicas_share_executions_busy_idempotency_stop_and_survive_a_database_restart() {
    let Some(mut cluster) = PgCluster::start() else { return };
    let url = cluster.url();
    let dir = tempfile::tempdir().unwrap();
    let a = replica(&dir.path().join("a"), &url, "replica-a");
    let b = replica(&dir.path().join("b"), &url, "replica-b");

    // B's event stream, opened before anything happens, follows what A commits.
    let stream = sse_until(b.addr, "ex-f1", "\"stopped\"");
    std::thread::sleep(Duration::from_millis(300));

    // An execution started through A reads the same through B.
    let started = start(a.addr, "ex-f1");
    assert_eq!((started.code, state(&started)), (202, "accepted"), "{:?}", started.body);
    let via_b = get(b.addr, "/v1/executions/ex-f1");
    let via_a = get(a.addr, "/v1/executions/ex-f1");
    assert_eq!(via_b.code, 200);
    assert_eq!(via_b.body.get("id"), via_a.body.get("id"));
    assert_eq!(via_b.body.get("request"), started.body.get("request"));

    // While it runs (on A), a start for the same device through B is refused busy.
    let other = start(b.addr, "ex-f2");
    assert_eq!((other.code, state(&other), reason(&other)), (202, "refused", Some("busy")));
    // A retried POST answered by the other replica gets the original answer.
    let retried = start(b.addr, "ex-f1");
    assert_eq!((retried.code, state(&retried)), (202, "accepted"));
    assert!(retried.head.contains("idempotent-replayed: true"), "{}", retried.head);
    assert_eq!(retried.body, started.body);

    // A stop sent to B is handed to A, which runs the execution; the device is free after.
    let stop = request(b.addr, "POST", "/v1/executions/ex-f1/stop", "", r#"{"reason":"test"}"#);
    assert_eq!(stop.code, 202, "{:?}", stop.body);
    assert!(matches!(state(&stop), "stopping" | "stopped"), "{:?}", stop.body);
    let stopped = wait_for(20, || {
        let r = get(a.addr, "/v1/executions/ex-f1");
        (state(&r) == "stopped").then_some(r)
    });
    assert!(stopped.is_some(), "the stop handed over reached the running replica");
    let log = get(b.addr, "/v1/executions/ex-f1/log");
    assert_eq!(log.code, 200);
    // B's stream showed every event of the execution A ran, in order, through `stopped`.
    let events = stream.join().unwrap();
    let seqs: Vec<i64> =
        events.iter().filter_map(|e| e.get("cookwalaseq").and_then(Value::as_i64)).collect();
    assert!(seqs.len() >= 2, "{events:?}");
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order: {seqs:?}");
    let first = events.first().and_then(|e| e.pointer("/data/state")).and_then(Value::as_str);
    assert_eq!(first, Some("accepted"), "{events:?}");

    // Two concurrent starts for one device through both replicas: one accepted, one busy.
    let (ra, rb) = std::thread::scope(|s| {
        let ta = s.spawn(|| start(a.addr, "ex-race-a"));
        let tb = s.spawn(|| start(b.addr, "ex-race-b"));
        (ta.join().unwrap(), tb.join().unwrap())
    });
    let mut outcomes = [(state(&ra), reason(&ra)), (state(&rb), reason(&rb))];
    outcomes.sort();
    assert_eq!(
        outcomes,
        [("accepted", None), ("refused", Some("busy"))],
        "{:?} {:?}",
        ra.body,
        rb.body
    );
    let winner =
        if state(&ra) == "accepted" { ("ex-race-a", b.addr) } else { ("ex-race-b", a.addr) };
    // Stopped through the replica that did not accept it.
    let stop = request(winner.1, "POST", &format!("/v1/executions/{}/stop", winner.0), "", "{}");
    assert_eq!(stop.code, 202, "{:?}", stop.body);

    // 20 alternating starts: every one readable, with the same state, through both.
    for i in 0..20 {
        let via = if i % 2 == 0 { a.addr } else { b.addr };
        let id = format!("ex-alt-{i}");
        let r = start(via, &id);
        assert_eq!(r.code, 202, "{id}: {:?}", r.body);
        let (x, y) = (
            get(a.addr, &format!("/v1/executions/{id}")),
            get(b.addr, &format!("/v1/executions/{id}")),
        );
        assert_eq!((x.code, y.code), (200, 200), "{id}");
        assert_eq!(x.body.get("id"), y.body.get("id"));
        if state(&r) == "accepted" {
            let stop = request(via, "POST", &format!("/v1/executions/{id}/stop"), "", "{}");
            assert_eq!(stop.code, 202);
        }
    }

    // The database restarts (as after a crash): both replicas answer again once it is back,
    // and nothing acknowledged is lost.
    cluster.restart();
    for r in [&a, &b] {
        let back = wait_for(30, || {
            let x = get(r.addr, "/v1/executions/ex-alt-19");
            (x.code == 200).then_some(x)
        });
        assert!(back.is_some(), "a replica serves again after the database restart");
    }
    let again = start(b.addr, "ex-after-restart");
    assert_eq!(again.code, 202, "{:?}", again.body);
}

#[test]
fn a_replica_killed_mid_run_loses_its_device_and_the_execution_ends_safely_elsewhere() {
    let Some(cluster) = PgCluster::start() else { return };
    let url = cluster.url();
    let dir = tempfile::tempdir().unwrap();
    let mut a = replica(&dir.path().join("a"), &url, "replica-a");
    let b = replica(&dir.path().join("b"), &url, "replica-b");

    let started = start(a.addr, "ex-kill");
    assert_eq!(state(&started), "accepted", "{:?}", started.body);
    assert_eq!(reason(&start(b.addr, "ex-kill-2")), Some("busy"));
    a.child.kill().unwrap(); // SIGKILL
    a.child.wait().unwrap();
    let t = Instant::now();
    let ended = wait_for(20, || {
        let r = get(b.addr, "/v1/executions/ex-kill");
        (state(&r) == "stopped").then_some(r)
    });
    let ended = ended.expect("the other replica ends the execution within 20 s");
    eprintln!("failover took {:?}", t.elapsed());
    let seq = ended.body.get("seq").and_then(Value::as_i64).unwrap_or(0);
    assert!(seq > started.body.get("seq").and_then(Value::as_i64).unwrap_or(0));
    let log = get(b.addr, "/v1/executions/ex-kill/log");
    assert_eq!(log.body.get("outcome").and_then(Value::as_str), Some("aborted_safe"));
    let why = log.body.pointer("/x-hub/why").and_then(Value::as_str).unwrap_or("");
    assert!(why.contains("another replica ended it safely"), "{why}");
    // Never resumed, never run twice: it stays stopped, and the device takes a new execution.
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(state(&get(b.addr, "/v1/executions/ex-kill")), "stopped");
    let next = start(b.addr, "ex-next");
    assert_eq!((next.code, state(&next)), (202, "accepted"), "{:?}", next.body);
    // The acknowledged POST stays readable (and replayable) from the surviving replica.
    let replay = start(b.addr, "ex-kill");
    assert!(replay.head.contains("idempotent-replayed: true"));
    assert_eq!(replay.body, started.body);
}

#[test]
fn a_store_url_the_hub_cannot_use_is_refused_with_what_it_expects() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let base = ["serve", "--addr", "127.0.0.1:0", "--data", data, "--token", TOKEN];
    let out = crate::cookwala(dir.path(), &[&base[..], &["--store", "mysql://x@y/z"]].concat());
    assert_ne!(out.status.code(), Some(0));
    assert!(
        crate::stderr(&out).contains("expected postgres://USER@HOST:PORT/DATABASE"),
        "{}",
        crate::stderr(&out)
    );
    let pg = ["--store", "postgres://u:secret@127.0.0.1:1/db", "--lease-secs", "0"];
    let out = crate::cookwala(dir.path(), &[&base[..], &pg[..]].concat());
    assert!(crate::stderr(&out).contains("--lease-secs must be between 1 and 3600"));
    // An unreachable database: a clear error that never shows the password.
    let pg = ["--store", "postgres://u:secret@127.0.0.1:1/db"];
    let out = crate::cookwala(dir.path(), &[&base[..], &pg[..]].concat());
    assert_ne!(out.status.code(), Some(0));
    let err = crate::stderr(&out);
    assert!(err.contains("opening the PostgreSQL store postgres://u:***@127.0.0.1:1/db"), "{err}");
    assert!(!err.contains("secret"), "{err}");
}
