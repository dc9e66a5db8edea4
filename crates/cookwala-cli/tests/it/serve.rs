//! `cookwala serve`: starts on port 0, writes a private token file, answers, stops on SIGTERM.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};

fn http(addr: SocketAddr, raw: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(raw.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn serve_generates_a_private_token_and_shuts_down_gracefully() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let Server { mut child, addr, _stdout } = launch(&data, &["--speed", "1000"]);
    let token_path = data.join("tokens.json");
    let doc = canonical_json::parse(&std::fs::read(&token_path).unwrap()).unwrap();
    assert_eq!(doc.pointer("/tokens/0/role").and_then(|v| v.as_str()), Some("owner"));
    let token = doc.pointer("/tokens/0/token").and_then(|v| v.as_str()).unwrap().to_owned();
    assert!(token.len() >= 32);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&token_path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let key = data.join("hub-key.json");
        assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let caps = http(addr, "GET /v1/capabilities HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(caps.starts_with("HTTP/1.1 200"), "{caps}");
    let anon =
        http(addr, "GET /v1/executions/ex-1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(anon.starts_with("HTTP/1.1 401"), "{anon}");
    let authed = http(
        addr,
        &format!(
            "GET /v1/executions/ex-1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {token}\r\n\r\n"
        ),
    );
    assert!(authed.starts_with("HTTP/1.1 404"), "{authed}");

    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(data.join("hub.sqlite3").exists());
}

#[test]
fn serve_imports_a_legacy_token_and_refuses_a_bad_tokens_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    // A bad tokens file: a clear error naming the file and the entry, exit code non-zero.
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"tokens":[{"name":"x","role":"chef","token":"0123456789abcdefghij"}]}"#,
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cookwala"))
        .args(["serve", "--addr", "127.0.0.1:0", "--tokens"])
        .arg(&bad)
        .arg("--data")
        .arg(&data)
        .env_remove("COOKWALA_HUB_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.json") && err.contains("tokens[0]") && err.contains("chef"), "{err}");
    // A token file from an earlier version becomes the owner entry of the new tokens file.
    std::fs::write(data.join("token"), "legacy-token-0123456789abcdef\n").unwrap();
    let Server { mut child, addr, _stdout } = launch(&data, &[]);
    let authed = http(
        addr,
        "GET /v1/executions/ex-1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer legacy-token-0123456789abcdef\r\n\r\n",
    );
    assert!(authed.starts_with("HTTP/1.1 404"), "{authed}");
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    assert!(child.wait().unwrap().success());
}

/// A `cookwala serve` child that is killed and reaped when it goes out of scope, so a failing
/// assertion does not leave a server running.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        // Already ended (a test waited for it): both calls fail harmlessly.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl std::ops::Deref for Reaped {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for Reaped {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

struct Server {
    child: Reaped,
    addr: SocketAddr,
    _stdout: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

/// `cookwala serve` on port 0 with `--data DATA` and `args`, without the token variable of
/// the environment; returns once it has printed the address it listens on.
fn launch(data: &std::path::Path, args: &[&str]) -> Server {
    launch_with(Command::new(env!("CARGO_BIN_EXE_cookwala")), data, args)
}

/// [`launch`] under an open-file limit of `nofile` (set by the shell before it execs).
fn launch_with_nofile(data: &std::path::Path, args: &[&str], nofile: u32) -> Server {
    let mut sh = Command::new("sh");
    sh.args(["-c", &format!("ulimit -n {nofile} && exec \"$0\" \"$@\"")])
        .arg(env!("CARGO_BIN_EXE_cookwala"));
    launch_with(sh, data, args)
}

fn launch_with(mut command: Command, data: &std::path::Path, args: &[&str]) -> Server {
    let mut child = Reaped(
        command
            .args(["serve", "--addr", "127.0.0.1:0", "--data"])
            .arg(data)
            .args(args)
            .env_remove("COOKWALA_HUB_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr = first
        .rsplit("http://")
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{first}: {e}"));
    Server { child, addr, _stdout: lines }
}

fn start(data: &std::path::Path, speed: &str) -> Server {
    launch(data, &["--token", "kill-test-token-0", "--speed", speed])
}

fn post_execution(addr: SocketAddr, body: &str) -> String {
    http(
        addr,
        &format!(
            "POST /v1/executions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
             Authorization: Bearer kill-test-token-0\r\nIdempotency-Key: kill-key-0001\r\n\
             Content-Type: application/vnd.cookwala+json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    )
}

fn get_authed(addr: SocketAddr, path: &str) -> String {
    http(
        addr,
        &format!(
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer kill-test-token-0\r\n\r\n"
        ),
    )
}

#[test]
fn sigkill_mid_run_then_restart_ends_the_execution_safely() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let recipe = cookwala_sim::builtin::recipe("red-lentil-soup").unwrap();
    let hash = canonical_json::digest::document_hash(&recipe).unwrap();
    let body = format!(
        r#"{{"core":"0.2.0","kind":"ExecuteRequest","id":"ex-kill-1","recipe":"cw:x:red-lentil-soup","recipeHash":"{hash}","requestedBy":"person:cook","idempotencyKey":"ex-kill-1-key"}}"#
    );
    // Real time (speed 1): the soup is still cooking when the process is killed.
    let mut first = start(&data, "1");
    let created = post_execution(first.addr, &body);
    assert!(created.starts_with("HTTP/1.1 202"), "{created}");
    assert!(created.contains(r#""state":"accepted""#), "{created}");
    first.child.kill().unwrap(); // SIGKILL
    first.child.wait().unwrap();

    let mut second = start(&data, "1");
    let status = get_authed(second.addr, "/v1/executions/ex-kill-1");
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert!(status.contains(r#""state":"stopped""#), "{status}");
    let log = get_authed(second.addr, "/v1/executions/ex-kill-1/log");
    assert!(log.contains(r#""outcome":"aborted_safe""#), "{log}");
    // The retried POST gets the original answer; nothing is created twice.
    let retried = post_execution(second.addr, &body);
    assert!(retried.starts_with("HTTP/1.1 202"), "{retried}");
    assert!(retried.contains(r#""state":"accepted""#), "{retried}");
    assert!(retried.to_ascii_lowercase().contains("idempotent-replayed: true"), "{retried}");
    second.child.kill().unwrap();
    second.child.wait().unwrap();
}

fn write_json(path: &std::path::Path, v: &canonical_json::Value) {
    std::fs::write(path, canonical_json::to_jcs(v).unwrap()).unwrap();
}

#[test]
fn serve_loads_a_bundle_folders_and_a_device_file() {
    use canonical_json::{Map, Value};
    let dir = tempfile::tempdir().unwrap();
    let mut soup = cookwala_sim::builtin::recipe("red-lentil-soup").unwrap();
    soup.as_object_mut().unwrap().insert("id".into(), "bundle-soup".into());
    let mut recipes = Map::new();
    recipes.insert("soup".into(), soup);
    let mut devices = Map::new();
    devices.insert("bundle-oven".into(), cookwala_sim::builtin::device("sim-oven").unwrap());
    let mut b = Map::new();
    b.insert("recipes".into(), Value::Object(recipes));
    b.insert("devices".into(), Value::Object(devices));
    let bundle = dir.path().join("bundle.json");
    write_json(&bundle, &Value::Object(b));
    let rdir = dir.path().join("recipes");
    std::fs::create_dir(&rdir).unwrap();
    let mut stock = cookwala_sim::builtin::recipe("vegetable-stock").unwrap();
    stock.as_object_mut().unwrap().insert("id".into(), "folder-stock".into());
    write_json(&rdir.join("folder-stock.cookwala.json"), &stock);
    let arm = dir.path().join("my-arm.json");
    write_json(&arm, &cookwala_sim::builtin::device("sim-counter-arm").unwrap());

    let serve = |extra: &[&std::ffi::OsStr]| {
        Command::new(env!("CARGO_BIN_EXE_cookwala"))
            .args(["serve", "--addr", "127.0.0.1:0", "--token", "kill-test-token-0", "--data"])
            .arg(dir.path().join("data"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut child = Reaped(serve(&[
        "--bundle".as_ref(),
        bundle.as_os_str(),
        "--recipes".as_ref(),
        rdir.as_os_str(),
        "--device".as_ref(),
        arm.as_os_str(),
    ]));
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr: SocketAddr = first.rsplit("http://").next().unwrap().trim().parse().unwrap();
    let banner: Vec<String> = (0..3).map(|_| lines.next().unwrap().unwrap()).collect();
    assert!(banner[0].contains("device my-arm"), "{banner:?}");
    assert!(
        banner[1].contains("store sqlite:") && banner[1].ends_with("hub.sqlite3"),
        "{banner:?}"
    );
    assert!(banner[2].contains("loaded 2 recipe(s) and 2 device(s)"), "{banner:?}");
    // Every served device is listed with its prefix; the root one also at /v1.
    let rest: Vec<String> =
        lines.by_ref().map(|l| l.unwrap()).take_while(|l| !l.contains("Ctrl-C")).collect();
    let row = |id: &str| rest.iter().find(|l| l.trim_start().starts_with(&format!("{id} ")));
    assert!(row("my-arm").unwrap().ends_with("/v1, /devices/my-arm/v1"), "{rest:?}");
    assert!(row("bundle-oven").unwrap().ends_with(" /devices/bundle-oven/v1"), "{rest:?}");
    assert!(row("sim-hob-robot").is_some(), "{rest:?}");
    let caps = http(addr, "GET /v1/capabilities HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(caps.contains("cookwala-rs:sim-counter-arm"), "{caps}");
    let list = get_authed(addr, "/v1/tools/recipes");
    // Listed under the names the upstream hub uses: the bundle key and the file stem.
    assert!(list.contains("\"soup\"") && list.contains("folder-stock"), "{list}");
    assert!(list.contains("red-lentil-soup"), "{list}");
    child.kill().unwrap();
    child.wait().unwrap();

    // --device by a loaded id.
    let mut child = Reaped(serve(&[
        "--bundle".as_ref(),
        bundle.as_os_str(),
        "--device".as_ref(),
        "bundle-oven".as_ref(),
    ]));
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr: SocketAddr = first.rsplit("http://").next().unwrap().trim().parse().unwrap();
    let caps = http(addr, "GET /v1/capabilities HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(caps.contains("cookwala-rs:sim-oven"), "{caps}");
    child.kill().unwrap();
    child.wait().unwrap();

    // Malformed files and unknown devices: exit 1, the file named.
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\"recipes\":").unwrap();
    for (flag, path) in
        [("--bundle", &broken), ("--recipes", &dir.path().to_path_buf()), ("--devices", &rdir)]
    {
        let out = serve(&[flag.as_ref(), path.as_os_str()]).wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{flag}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flag), "{err}");
        assert!(err.contains(".json:"), "{err}");
    }
    let out = serve(&["--device".as_ref(), "no-such-device".as_ref()]).wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown device no-such-device"));
}

fn body(response: &str) -> canonical_json::Value {
    let (_, body) = response.split_once("\r\n\r\n").unwrap();
    canonical_json::parse(body.as_bytes()).unwrap_or_else(|e| panic!("{e}: {response}"))
}

#[test]
fn serve_signs_its_conformance_report_with_the_key_it_publishes() {
    let Some(vectors) = test_support::shared("standards/cookwala/conformance") else { return };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let trusted = vectors.join("keys/report-test-keys.json");
    let run = |data: &std::path::Path| {
        let mut child = Reaped(
            Command::new(env!("CARGO_BIN_EXE_cookwala"))
                .args(["serve", "--addr", "127.0.0.1:0", "--token", "kill-test-token-0", "--data"])
                .arg(data)
                .arg("--conformance")
                .arg(&vectors)
                .arg("--keys")
                .arg(&trusted)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let addr: SocketAddr = first.rsplit("http://").next().unwrap().trim().parse().unwrap();
        let get = |path: &str| {
            body(&http(
                addr,
                &format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
            ))
        };
        let (wk, conformance) = (get("/.well-known/cookwala.json"), get("/v1/conformance"));
        child.kill().unwrap();
        child.wait().unwrap();
        (wk, conformance)
    };
    let (wk, conformance) = run(&data);
    let keys = cookwala::KeySet::from_value(&wk).unwrap();
    let n_trusted = cookwala::KeySet::from_value(
        &canonical_json::parse(std::fs::read(&trusted).unwrap().as_slice()).unwrap(),
    )
    .unwrap()
    .len();
    assert_eq!(keys.len(), 1 + n_trusted);
    let report = conformance.get("report").unwrap();
    let kid = report.pointer("/signature/kid").and_then(canonical_json::Value::as_str).unwrap();
    assert_eq!(keys.records()[0].kid, kid);

    // `cookwala verify --keys` takes the published document as it is.
    let wk_file = dir.path().join("cookwala.json");
    let report_file = dir.path().join("report.json");
    std::fs::write(&wk_file, canonical_json::to_jcs(&wk).unwrap()).unwrap();
    std::fs::write(&report_file, canonical_json::to_jcs(report).unwrap()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cookwala"))
        .arg("verify")
        .arg("--keys")
        .arg(&wk_file)
        .arg(&report_file)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
    assert!(out.status.success());

    // The key file is kept: a restart publishes the same key.
    let (again, _) = run(&data);
    assert_eq!(cookwala::KeySet::from_value(&again).unwrap().records()[0], keys.records()[0]);
}

/// What `serve` refuses before it listens: a hub nobody has a token for, `--no-auth` off
/// loopback, a short `--token`.
#[test]
fn serve_refuses_a_silently_open_hub() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str], tokens: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_cookwala"))
            .args(["serve", "--data"])
            .arg(dir.path().join("data"))
            .arg("--tokens")
            .arg(tokens)
            .args(args)
            .env_remove("COOKWALA_HUB_TOKEN")
            .output()
            .unwrap()
    };
    let empty = dir.path().join("empty-tokens.json");
    std::fs::write(&empty, r#"{"tokens": []}"#).unwrap();
    let out = run(&["--addr", "127.0.0.1:0"], &empty);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--no-auth") && err.contains("--token"), "{err}");

    let out = run(&["--addr", "0.0.0.0:0", "--no-auth"], &empty);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("loopback"), "{err}");

    // Too short, or long enough only in spaces (issue 22).
    for token in ["short-token", "                ", "0123456789abcd  "] {
        let out = run(&["--addr", "127.0.0.1:0", "--token", token], &empty);
        assert_eq!(out.status.code(), Some(1), "{token:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("16 non-space characters"), "{err}");
    }
}

/// `--no-auth` on loopback: a warning in the banner, and what needed a token answers without.
#[test]
fn serve_no_auth_opens_a_loopback_hub_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty-tokens.json");
    std::fs::write(&empty, r#"{"tokens": []}"#).unwrap();
    let tokens = empty.to_str().unwrap();
    let Server { mut child, addr, mut _stdout } =
        launch(&dir.path().join("data"), &["--tokens", tokens, "--no-auth"]);
    let banner: Vec<String> = _stdout.by_ref().take(4).map(|l| l.unwrap()).collect();
    assert!(banner.iter().any(|l| l.contains("WARNING: --no-auth")), "{banner:?}");
    let anon = http(
        addr,
        &format!("GET /v1/devices HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
    );
    assert!(anon.starts_with("HTTP/1.1 200"), "{anon}");
    // A name that is not loopback is refused: what a DNS-rebinding page would send.
    let rebound = http(
        addr,
        "GET /v1/devices HTTP/1.1\r\nHost: attacker.example\r\nConnection: close\r\n\r\n",
    );
    assert!(rebound.starts_with("HTTP/1.1 403"), "{rebound}");
    assert!(rebound.contains("non-loopback-host"), "{rebound}");
    child.kill().unwrap();
    child.wait().unwrap();
}

/// The device maker's pack and the standard's vocabulary, `--no-builtin`, and `--device FILE`
/// naming a file `--devices DIR` already loaded.
#[test]
fn serve_loads_limits_vocab_and_only_the_given_devices() {
    let Some(std_dir) = test_support::shared("standards/cookwala") else { return };
    let dir = tempfile::tempdir().unwrap();
    let devices = dir.path().join("devices");
    std::fs::create_dir(&devices).unwrap();
    let hob = devices.join("site-hob.json");
    write_json(&hob, &cookwala_sim::builtin::device("sim-hob-robot").unwrap());
    let pack = std_dir.join("profiles/core/safety-limits.default.json");
    let vocab = std_dir.join("vocab");
    let Server { mut child, addr, _stdout } = launch(
        &dir.path().join("data"),
        &[
            "--token",
            "limits-test-token-0",
            "--no-builtin",
            "--limits",
            pack.to_str().unwrap(),
            "--vocab",
            vocab.to_str().unwrap(),
            "--devices",
            devices.to_str().unwrap(),
            "--device",
            hob.to_str().unwrap(),
        ],
    );
    let limits =
        body(&http(addr, "GET /v1/safety-limits HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    let want = canonical_json::parse(&std::fs::read(&pack).unwrap()).unwrap();
    assert_eq!(limits, want);
    let ops = body(&http(
        addr,
        "GET /v1/tools/vocab/ops HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    ));
    let want = canonical_json::parse(&std::fs::read(vocab.join("ops.json")).unwrap()).unwrap();
    assert_eq!(ops, want);
    let devs =
        body(&http(addr, "GET /v1/tools/devices HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    let ids: Vec<&String> =
        devs.get("devices").and_then(|d| d.as_object()).unwrap().keys().collect();
    assert_eq!(ids, ["site-hob"]);
    let recipes =
        body(&http(addr, "GET /v1/tools/recipes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    assert_eq!(recipes.get("recipes").and_then(|r| r.as_array()).map(<[_]>::len), Some(0));
    child.kill().unwrap();
    child.wait().unwrap();
}

// ---- issue 22: a stop gets through a flood; SIGTERM makes things safe

/// A soup request for execution `id`.
fn soup(id: &str) -> String {
    let recipe = cookwala_sim::builtin::recipe("red-lentil-soup").unwrap();
    let hash = canonical_json::digest::document_hash(&recipe).unwrap();
    format!(
        r#"{{"core":"0.2.0","kind":"ExecuteRequest","id":"{id}","recipe":"cw:x:red-lentil-soup","recipeHash":"{hash}","requestedBy":"person:cook","idempotencyKey":"{id}-key"}}"#
    )
}

/// Polls the status of `id` until it contains every one of `needles` (a few hundred tries,
/// far more than the hub needs; the last answer is returned either way).
fn status_until(addr: SocketAddr, id: &str, needles: &[&str]) -> String {
    let mut last = String::new();
    for _ in 0..600 {
        last = get_authed(addr, &format!("/v1/executions/{id}"));
        if needles.iter().all(|n| last.contains(n)) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    last
}

/// `n` connections to `addr`, each holding a request head it never finishes.
fn half_sent(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    (0..n)
        .filter_map(|i| {
            let mut s = TcpStream::connect(addr).ok()?;
            let _ = write!(s, "GET /v1/capabilities?n={i} HTTP/1.1\r\nHost: x\r\n");
            Some(s)
        })
        .collect()
}

/// True once the hub has closed `s` (EOF or reset); the read timeout is only a guard.
fn closed_by_hub(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(std::time::Duration::from_secs(90))).unwrap();
    let mut buf = Vec::new();
    match s.read_to_end(&mut buf) {
        Ok(_) => true,
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted
        ),
    }
}

/// The check of issue 22 from outside: under an open-file limit of 128, 300 half-sent
/// requests held open from 127.0.0.1 (the stop's own address), and a running execution is
/// still stopped through the API; then the hub closes every half-sent one.
#[cfg(unix)]
#[test]
fn a_stop_gets_through_300_half_sent_requests_under_a_128_file_limit() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let args = ["--token", "kill-test-token-0", "--speed", "10", "--header-timeout", "3"];
    let Server { child: _child, addr, _stdout } = launch_with_nofile(&data, &args, 128);
    let created = post_execution(addr, &soup("ex-flood-1"));
    assert!(created.starts_with("HTTP/1.1 202"), "{created}");
    let running = status_until(addr, "ex-flood-1", &[r#""state":"running""#]);
    assert!(running.contains(r#""state":"running""#), "{running}");

    let mut flood = half_sent(addr, 300);
    assert!(flood.len() >= 250, "only {} connections opened", flood.len());
    let stop = http(
        addr,
        "POST /v1/executions/ex-flood-1/stop HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
         Content-Length: 0\r\n\r\n",
    );
    assert!(stop.starts_with("HTTP/1.1 202"), "{stop}");
    assert!(stop.contains(r#""state":"stopping""#) || stop.contains(r#""state":"stopped""#));
    let ended = status_until(addr, "ex-flood-1", &[r#""state":"stopped""#]);
    assert!(ended.contains(r#""heatOn":false"#), "{ended}");
    assert!(flood.iter_mut().all(closed_by_hub));
}

/// SIGTERM with a running execution and half-sent requests open: the hub stops the execution
/// (heat off, log written), closes the half-sent requests instead of waiting on them, and
/// exits; the restarted hub finds nothing to recover.
#[cfg(unix)]
#[test]
fn sigterm_stops_running_executions_and_does_not_wait_for_half_sent_requests() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // A long header timeout: only the shutdown itself may close the half-sent requests.
    let args = ["--token", "kill-test-token-0", "--speed", "10", "--header-timeout", "600"];
    let Server { mut child, addr, _stdout } = launch(&data, &args);
    let created = post_execution(addr, &soup("ex-term-1"));
    assert!(created.starts_with("HTTP/1.1 202"), "{created}");
    let running = status_until(addr, "ex-term-1", &[r#""state":"running""#, r#""heatOn":true"#]);
    assert!(running.contains(r#""heatOn":true"#), "{running}");
    let mut held = half_sent(addr, 20);

    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(held.iter_mut().all(closed_by_hub));

    let second = start(&data, "10");
    let ended = get_authed(second.addr, "/v1/executions/ex-term-1");
    assert!(ended.contains(r#""state":"stopped""#), "{ended}");
    assert!(ended.contains(r#""heatOn":false"#), "{ended}");
    // Stopped by the shutdown itself, not by the restart's recovery.
    assert!(!ended.contains(r#""recovered":true"#), "{ended}");
    let log = get_authed(second.addr, "/v1/executions/ex-term-1/log");
    assert!(log.starts_with("HTTP/1.1 200"), "{log}");
}

/// A second signal ends the process at once while the first one's shutdown waits for an
/// answer to go out: a client that pipelines requests for the API description and reads
/// nothing keeps its connection busy, and `--shutdown-grace` is long.
#[cfg(unix)]
#[test]
fn a_second_signal_exits_at_once_while_shutdown_waits_for_an_answer() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Reaped(
        Command::new(env!("CARGO_BIN_EXE_cookwala"))
            .args(["serve", "--addr", "127.0.0.1:0", "--data"])
            .arg(dir.path().join("data"))
            .args(["--token", "kill-test-token-0", "--shutdown-grace", "600"])
            .env_remove("COOKWALA_HUB_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = stdout.next().unwrap().unwrap();
    let addr: SocketAddr = first.rsplit("http://").next().unwrap().trim().parse().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    // Megabytes of answers asked for, none read: the hub's writes block.
    let mut greedy = TcpStream::connect(addr).unwrap();
    let ask = "GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n".repeat(400);
    greedy.write_all(ask.as_bytes()).unwrap();
    // Wait until the hub is stuck writing an answer (on a loaded machine it may not even have
    // read the requests yet; between two pipelined answers the connection is not being
    // answered, and a shutdown may close it): one byte read, then the bytes waiting in our
    // receive queue must stop growing for a second, because both socket buffers are full.
    greedy.set_read_timeout(Some(std::time::Duration::from_secs(120))).unwrap();
    let mut one = [0u8; 1];
    greedy.read_exact(&mut one).unwrap();
    let (mut last, mut same) = (0, 0);
    while same < 10 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let queued = rustix::io::ioctl_fionread(&greedy).unwrap();
        if queued == last { same += 1 } else { (last, same) = (queued, 0) }
    }

    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let said = stderr.find_map(|l| l.ok().filter(|l| l.contains("shutting down"))).unwrap();
    assert!(said.contains("again to exit at once"), "{said}");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    drop(greedy);
}

/// `--log-format json`: every stderr line is one JSON object with a timestamp, level, target
/// and message; a request's line carries its `X-Request-Id` (echoed in the answer) and the
/// execution it names; the accepted and ended events carry execution and device; no line
/// carries the token, whatever the requests sent.
#[test]
fn json_logs_parse_carry_request_and_execution_ids_and_never_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let errors = dir.path().join("stderr.log");
    let mut child = Reaped(
        Command::new(env!("CARGO_BIN_EXE_cookwala"))
            .args(["serve", "--addr", "127.0.0.1:0", "--token", "kill-test-token-0"])
            .args(["--speed", "100000", "--log-format", "json", "--data"])
            .arg(&data)
            .env_remove("COOKWALA_HUB_TOKEN")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&errors).unwrap())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr: SocketAddr = first.rsplit("http://").next().unwrap().trim().parse().unwrap();
    let recipe = cookwala_sim::builtin::recipe("red-lentil-soup").unwrap();
    let hash = canonical_json::digest::document_hash(&recipe).unwrap();
    let body = format!(
        r#"{{"core":"0.2.0","kind":"ExecuteRequest","id":"ex-log-1","recipe":"cw:x:red-lentil-soup","recipeHash":"{hash}","requestedBy":"person:cook","idempotencyKey":"ex-log-1-key"}}"#
    );
    let created = http(
        addr,
        &format!(
            "POST /v1/executions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
             Authorization: Bearer kill-test-token-0\r\nIdempotency-Key: log-key-0001\r\n\
             X-Request-Id: req-log-0001\r\n\
             Content-Type: application/vnd.cookwala+json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    );
    assert!(created.starts_with("HTTP/1.1 202"), "{created}");
    assert!(created.to_ascii_lowercase().contains("x-request-id: req-log-0001"), "{created}");
    // A wrong token and a token in the query: neither may reach a log line.
    let wrong = http(
        addr,
        "GET /v1/executions/ex-log-1?token=kill-test-token-0 HTTP/1.1\r\nHost: x\r\n\
         Connection: close\r\nAuthorization: Bearer kill-test-token-0-wrong\r\n\r\n",
    );
    assert!(wrong.starts_with("HTTP/1.1 401"), "{wrong}");
    // The soup runs to its end at this speed.
    let mut ended = false;
    for _ in 0..200 {
        let s = get_authed(addr, "/v1/executions/ex-log-1");
        if s.contains(r#""state":"completed""#) {
            ended = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(ended, "the soup did not complete");
    let pid = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    assert!(child.wait().unwrap().success());

    let text = std::fs::read_to_string(&errors).unwrap();
    assert!(!text.contains("kill-test-token-0"), "a token reached the log:\n{text}");
    let events: Vec<canonical_json::Value> = text
        .lines()
        .map(|l| canonical_json::parse(l.as_bytes()).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let field = |e: &canonical_json::Value, k: &str| {
        e.get(k).and_then(canonical_json::Value::as_str).unwrap_or_default().to_owned()
    };
    for e in &events {
        for k in ["timestamp", "level", "target", "message"] {
            assert!(!field(e, k).is_empty(), "{k} missing in {e:?}");
        }
    }
    let request = events
        .iter()
        .find(|e| field(e, "request_id") == "req-log-0001")
        .unwrap_or_else(|| panic!("no line for the request in\n{text}"));
    assert_eq!(field(request, "route"), "/v1/executions");
    let named = |msg: &str| {
        events
            .iter()
            .find(|e| field(e, "message") == msg && field(e, "execution") == "ex-log-1")
            .unwrap_or_else(|| panic!("no {msg} line for ex-log-1 in\n{text}"))
    };
    assert_eq!(field(named("accepted"), "device"), "sim-hob-robot");
    assert_eq!(field(named("ended"), "state"), "completed");
    assert!(
        events
            .iter()
            .any(|e| field(e, "route") == "/v1/executions/{id}"
                && field(e, "execution") == "ex-log-1"),
        "{text}"
    );
}

/// `--metrics-addr`: the operators' listener serves `/metrics` and health without a token;
/// the API's `/metrics` still wants one.
#[test]
fn metrics_on_their_own_address_need_no_token_and_the_api_keeps_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Reaped(
        Command::new(env!("CARGO_BIN_EXE_cookwala"))
            .args(["serve", "--addr", "127.0.0.1:0", "--token", "kill-test-token-0"])
            .args(["--metrics-addr", "127.0.0.1:0", "--data"])
            .arg(dir.path().join("data"))
            .env_remove("COOKWALA_HUB_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let lines: Vec<String> = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(|l| l.unwrap())
        .take_while(|l| !l.contains("Ctrl-C"))
        .collect();
    let at = |needle: &str| -> SocketAddr {
        let line = lines.iter().find(|l| l.contains(needle)).unwrap();
        let rest = line.split("http://").nth(1).unwrap();
        rest.split(['/', ' ']).next().unwrap().parse().unwrap()
    };
    let (api, ops) = (at("listening on"), at("metrics at"));
    assert_ne!(api, ops);
    let get = |addr, path: &str| {
        http(addr, &format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
    };
    let m = get(ops, "/metrics");
    assert!(m.starts_with("HTTP/1.1 200") && m.contains("cookwala_devices 3"), "{m}");
    assert!(get(ops, "/readyz").starts_with("HTTP/1.1 200"));
    assert!(get(api, "/metrics").starts_with("HTTP/1.1 401"));
    assert!(get_authed(api, "/metrics").starts_with("HTTP/1.1 200"));
    assert!(get(api, "/healthz").starts_with("HTTP/1.1 200"));
}

/// `--config FILE` alone starts a hub; a flag on the command line wins over the file's key;
/// `--print-config` shows the merge with every secret redacted; a key that is no flag, a
/// token in the file, or a value of the wrong type is a usage error (exit 2) naming it; the
/// shipped `packaging/hub.toml` is a configuration `serve` accepts.
#[test]
fn a_hub_starts_from_a_config_file_alone_and_flags_override_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let tokens = dir.path().join("tokens.json");
    std::fs::write(
        &tokens,
        r#"{"tokens":[{"name":"ops","role":"owner","token":"config-test-token-0001"}]}"#,
    )
    .unwrap();
    let config = dir.path().join("hub.toml");
    std::fs::write(
        &config,
        format!(
            "addr = \"127.0.0.1:0\"\ndata = {data:?}\ntokens = {tokens:?}\nspeed = 250\n\
             heartbeat-secs = 0\nmax-streams = 7\nstore = \"sqlite:{}\"\n\
             webhook = [\"http://127.0.0.1:9/in?sig=s3cret\"]\n",
            data.join("hub.sqlite3").display()
        ),
    )
    .unwrap();
    let serve = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_cookwala"))
            .arg("serve")
            .arg("--config")
            .arg(&config)
            .args(extra)
            .env_remove("COOKWALA_HUB_TOKEN")
            .env("COOKWALA_WEBHOOK_SECRET", "webhook-secret-0001")
            .output()
            .unwrap()
    };
    // --print-config: the merge, the command line's --speed winning; secrets redacted.
    let printed = serve(&["--speed", "3", "--print-config"]);
    assert!(printed.status.success(), "{printed:?}");
    let text = String::from_utf8(printed.stdout).unwrap();
    assert!(text.contains("speed = 3\n"), "{text}");
    assert!(text.contains("max-streams = 7\n"), "{text}");
    assert!(text.contains("http://127.0.0.1:9/in?<redacted>"), "{text}");
    for secret in ["s3cret", "config-test-token-0001", "webhook-secret-0001"] {
        assert!(!text.contains(secret), "{secret} printed:\n{text}");
    }
    // A password in a URL: redacted when printed, and not repeated by the error that
    // refuses it.
    let with_password = dir.path().join("password.toml");
    std::fs::write(
        &with_password,
        "store = \"postgres://hub:pg-pass@db.invalid/cook\"\n\
         webhook = [\"http://user:hook-pass@127.0.0.1:9/in\"]\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_cookwala"))
            .args(["serve", "--config"])
            .arg(&with_password)
            .args(args)
            .env("COOKWALA_WEBHOOK_SECRET", "webhook-secret-0001")
            .output()
            .unwrap()
    };
    let printed = run(&["--print-config"]);
    let text = String::from_utf8_lossy(&printed.stdout).into_owned();
    assert!(text.contains("postgres://hub:<redacted>@db.invalid/cook"), "{text}");
    let refused = run(&["--store", "sqlite::memory:", "--token", "config-test-token-0002"]);
    let err = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(!refused.status.success() && err.contains("credentials"), "{err}");
    for secret in ["pg-pass", "hook-pass"] {
        assert!(!text.contains(secret) && !err.contains(secret), "{secret}: {text}{err}");
    }
    // Usage errors name the key (and the file) and exit 2.
    for (bad, needle) in [
        ("bogus-key = 1\n", "bogus-key"),
        ("token = \"t0123456789\"\n", "token"),
        ("speed = \"fast\"\n", "--speed"),
        ("no-auth = \"yes\"\n", "no-auth"),
        ("addr = [\"a\", \"b\"]\n", "addr"),
    ] {
        let file = dir.path().join("bad.toml");
        std::fs::write(&file, bad).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_cookwala"))
            .args(["serve", "--config"])
            .arg(&file)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains(needle), "{bad}: {err}");
    }
    // A pair the file starts and the command line completes is one configuration; half a
    // pair alone is a usage error.
    let half = dir.path().join("half.toml");
    std::fs::write(&half, "mqtt = \"mqtt://127.0.0.1:1\"\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_cookwala"))
        .args(["serve", "--kitchen", "k1", "--print-config", "--config"])
        .arg(&half)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("kitchen = \"k1\""), "{out:?}");
    for args in [&["--kitchen", "k1"][..], &["--mqtt", "mqtt://127.0.0.1:1"][..]] {
        let out =
            Command::new(env!("CARGO_BIN_EXE_cookwala")).arg("serve").args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("needs --"), "{args:?}: {err}");
    }
    // The shipped default is accepted.
    let shipped = test_support::workspace_root().join("packaging").join("hub.toml");
    let out = Command::new(env!("CARGO_BIN_EXE_cookwala"))
        .args(["serve", "--print-config", "--config"])
        .arg(&shipped)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");

    // A hub from the file alone (with its webhook; nobody listens there).
    let mut child = Reaped(
        Command::new(env!("CARGO_BIN_EXE_cookwala"))
            .arg("serve")
            .arg("--config")
            .arg(&config)
            .env_remove("COOKWALA_HUB_TOKEN")
            .env("COOKWALA_WEBHOOK_SECRET", "webhook-secret-0001")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let addr: SocketAddr = first.rsplit("http://").next().unwrap().trim().parse().unwrap();
    let banner: Vec<String> = (0..2).map(|_| lines.next().unwrap().unwrap()).collect();
    assert!(banner[0].contains("simulated time x250"), "{banner:?}");
    let devices = http(
        addr,
        "GET /v1/devices HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\
         Authorization: Bearer config-test-token-0001\r\n\r\n",
    );
    assert!(devices.starts_with("HTTP/1.1 200"), "{devices}");
    assert!(data.join("hub.sqlite3").exists());
}
