//! The upstream hub's own API scenarios (issue 28), run against `cookwala serve` as the upstream
//! runner sets its hub up: the samples bundle's recipes and its counter arm (`robot-arm`) at the
//! root, `--no-builtin`, the standard's `--limits` and `--vocab`, `--no-auth` (the upstream
//! client sends no token) and `--speed 200`.
//!
//! The steps are data (`scenarios/upstream.json`, from amado2k5/cookwala at the commits it
//! names); this file is our own runner for them, with the upstream client's mapping of each
//! operation to a request. Every expectation must hold, except the ones listed in
//! `scenarios/divergences.json`, each with the reason our hub answers otherwise; a listed
//! divergence that no longer differs fails too, so the list stays true.
//!
//! Three changes to the data, all written here: an agent's request without a mandate gets one
//! with `start_cooking` (the standard requires a mandate of an agent: ours refuses
//! `not_authorized` without one), and a mandate whose `expires` has passed (the upstream files
//! date from October 2026) one that has not, as the run did;
//! `$file` paths under `examples/core/` resolve to the standard's copies (and the example
//! incident report, which the standard's folder lacks, to `scenarios/incident.json`).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use canonical_json::{Map, Value};

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/scenarios")
}

fn load(name: &str) -> Value {
    canonical_json::parse(test_support::read(&here().join(name)).as_bytes()).unwrap()
}

/// An HTTP/1.1 exchange on its own connection; (status, body as JSON or `null`).
fn exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: Option<&Value>,
) -> (u16, Value) {
    let bytes = body.map(|b| canonical_json::to_jcs(b).unwrap()).unwrap_or_default();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\
         Accept: application/json, application/problem+json\r\n"
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if body.is_some() {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            bytes.len()
        ));
    }
    head.push_str("\r\n");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&bytes).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a response head");
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let status: u16 = head.split(' ').nth(1).and_then(|c| c.parse().ok()).expect("a status");
    let mut payload = raw[split + 4..].to_vec();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        payload = dechunk(&payload);
    }
    let value = if payload.is_empty() {
        Value::Null
    } else {
        canonical_json::parse(&payload).unwrap_or_else(|e| {
            panic!("{method} {path}: {e}: {}", String::from_utf8_lossy(&payload))
        })
    };
    (status, value)
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(end) = data.windows(2).position(|w| w == b"\r\n") else { return out };
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&data[..end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&data[end + 2..end + 2 + size]);
        data = &data[end + 2 + size + 2..];
    }
}

/// A path as the upstream runner reads it: `a.b[2].c`, `length` of an array, object or string.
fn pick<'a>(mut v: Option<&'a Value>, path: &str, len: &'a mut Option<Value>) -> Option<&'a Value> {
    let parts: Vec<String> =
        path.replace(']', "").replace('[', ".").split('.').map(str::to_owned).collect();
    for part in &parts {
        let cur = v?;
        if part == "length" {
            let n = match cur {
                Value::Array(a) => a.len(),
                Value::Object(o) => o.len(),
                Value::String(s) => s.chars().count(),
                _ => return None,
            };
            *len = Some(Value::from(n));
            return len.as_ref();
        }
        v = match (part.parse::<usize>(), cur) {
            (Ok(i), Value::Array(a)) => a.get(i),
            _ => cur.get(part),
        };
    }
    v
}

/// Equality as Python compares JSON values: numbers by value (1 == 1.0).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => a.as_f64() == b.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// A `$file` of the upstream repository: the standard's copy, else an example recipe from the
/// samples bundle (`examples/<name>.cookwala.json`), else the suite's own copy.
fn file(file: &str, shared: &Path, bundle: &Value) -> Result<Value, String> {
    let name = file.rsplit('/').next().unwrap();
    let standard = shared.join(file);
    if standard.is_file() {
        return Ok(canonical_json::parse(test_support::read(&standard).as_bytes()).unwrap());
    }
    if let Some(recipe) = name.strip_suffix(".cookwala.json") {
        // A recipe the bundle lacks is a setup difference, reported as its step's answer.
        return bundle
            .get("recipes")
            .and_then(|r| r.get(recipe))
            .cloned()
            .ok_or_else(|| format!("{file}: not among the samples bundle's recipes"));
    }
    Ok(canonical_json::parse(test_support::read(&here().join(name)).as_bytes()).unwrap())
}

fn resolve(
    v: &Value,
    vars: &BTreeMap<String, Value>,
    shared: &Path,
    bundle: &Value,
) -> Result<Value, String> {
    if let Some(path) = v.get("$file").and_then(Value::as_str) {
        let doc = file(path, shared, bundle)?;
        let mut len = None;
        return Ok(match v.get("path").and_then(Value::as_str) {
            Some(p) => pick(Some(&doc), p, &mut len).cloned().unwrap_or(Value::Null),
            None => doc,
        });
    }
    if let Some(var) = v.get("$var").and_then(Value::as_str) {
        let base = vars.get(var).unwrap_or_else(|| panic!("no saved {var}"));
        let mut len = None;
        return Ok(match v.get("path").and_then(Value::as_str) {
            Some(p) => pick(Some(base), p, &mut len).cloned().unwrap_or(Value::Null),
            None => base.clone(),
        });
    }
    Ok(v.clone())
}

/// A request as the run sent it: an agent's request carries a mandate (the standard
/// requires one; the upstream hub reads one only when sent), and no mandate has expired.
fn with_mandate(mut request: Value) -> Value {
    let Some(o) = request.as_object_mut() else { return request };
    let agent = o.get("requestedBy").and_then(Value::as_str).unwrap_or_default().to_owned();
    if agent.starts_with("agent:") && !o.contains_key("mandate") {
        let mut m = Map::new();
        m.insert("principal".into(), "person:scenario-runner".into());
        m.insert("agent".into(), agent.into());
        m.insert("scopes".into(), Value::Array(vec!["start_cooking".into()]));
        m.insert("expires".into(), "2099-12-31T23:59:59Z".into());
        o.insert("mandate".into(), Value::Object(m));
    }
    if let Some(Value::Object(m)) = o.get_mut("mandate")
        && m.get("expires").and_then(Value::as_str).is_some_and(|e| e < "2027")
    {
        m.insert("expires".into(), "2099-12-31T23:59:59Z".into());
    }
    request
}

/// One step's request, as the upstream client sends it; problems of a start, stop or resume
/// are the step's answer, any other problem a failure.
fn call(addr: SocketAddr, op: &str, args: &Map) -> Result<Value, String> {
    let arg = |k: &str| args.get(k).cloned().unwrap_or(Value::Null);
    let id = || arg("id").as_str().unwrap_or_default().to_owned();
    let key = |k: String| vec![("Idempotency-Key", k)];
    let fresh = || format!("scenario-{:016x}", rand_u64());
    let (status, body) = match op {
        "capabilities" => exchange(addr, "GET", "/v1/capabilities", &[], None),
        "safetyLimits" => exchange(addr, "GET", "/v1/safety-limits", &[], None),
        "recalls" => exchange(addr, "GET", "/v1/recalls", &[], None),
        "conformance" => exchange(addr, "GET", "/v1/conformance", &[], None),
        "verify" => {
            let mut m = Map::new();
            m.insert("doc".into(), arg("doc"));
            let keys = arg("keys");
            m.insert("keys".into(), if keys.is_null() { Value::Array(Vec::new()) } else { keys });
            exchange(addr, "POST", "/v1/tools/verify", &[], Some(&Value::Object(m)))
        }
        "getRecipe" => exchange(addr, "GET", &format!("/v1/tools/recipes/{}", id()), &[], None),
        "listRecipes" => exchange(addr, "GET", "/v1/tools/recipes", &[], None),
        "getDevices" => exchange(addr, "GET", "/v1/tools/devices", &[], None),
        "getOps" => exchange(addr, "GET", "/v1/tools/vocab/ops", &[], None),
        "hash" => {
            let mut m = Map::new();
            m.insert("doc".into(), arg("doc"));
            exchange(addr, "POST", "/v1/tools/hash", &[], Some(&Value::Object(m)))
        }
        "startExecution" => {
            let mut request = with_mandate(arg("request"));
            if let (Some(o), Some(h)) = (request.as_object_mut(), arg("humanPresent").as_bool()) {
                o.insert("x-hub-human-present".into(), h.into());
            }
            let k = arg("idempotencyKey").as_str().map_or_else(fresh, str::to_owned);
            exchange(addr, "POST", "/v1/executions", &key(k), Some(&request))
        }
        "getExecution" => exchange(addr, "GET", &format!("/v1/executions/{}", id()), &[], None),
        "stopExecution" => {
            let mut m = Map::new();
            let reason = arg("reason");
            m.insert("reason".into(), if reason.is_null() { "requested".into() } else { reason });
            exchange(
                addr,
                "POST",
                &format!("/v1/executions/{}/stop", id()),
                &key(fresh()),
                Some(&Value::Object(m)),
            )
        }
        "resumeExecution" => {
            let seq = arg("seq").as_f64().map_or_else(String::new, |s| format!("{s}"));
            let mut h = key(fresh());
            h.push(("If-Match", seq));
            exchange(
                addr,
                "POST",
                &format!("/v1/executions/{}/resume", id()),
                &h,
                Some(&Value::Object(Map::new())),
            )
        }
        "executionLog" => exchange(addr, "GET", &format!("/v1/executions/{}/log", id()), &[], None),
        "reportIncident" => {
            exchange(addr, "POST", "/v1/incidents", &key(fresh()), Some(&arg("doc")))
        }
        other => return Err(format!("the runner has no operation {other}")),
    };
    if status >= 400 && !matches!(op, "startExecution" | "stopExecution" | "resumeExecution") {
        return Err(format!(
            "{op}: {status} {}",
            String::from_utf8_lossy(&canonical_json::to_jcs(&body).unwrap())
        ));
    }
    Ok(body)
}

fn rand_u64() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed) ^ u64::from(std::process::id()) << 32
}

/// What differs from an expectation: `(scenario, step, path)` → (got, wanted).
type Differences = BTreeMap<(String, u64, String), (String, String)>;

fn run(addr: SocketAddr, scenario: &Value, shared: &Path, bundle: &Value, out: &mut Differences) {
    let sid = scenario.get("id").and_then(Value::as_str).unwrap().to_owned();
    let mut vars = BTreeMap::new();
    let steps = scenario.get("steps").and_then(Value::as_array).unwrap();
    for (i, step) in steps.iter().enumerate() {
        let n = i as u64 + 1;
        let op = step.get("op").and_then(Value::as_str).unwrap();
        let expect = step.get("expect").and_then(Value::as_object).cloned().unwrap_or_default();
        let mut differ = |path: &str, got: Option<&Value>, want: &Value| {
            if !got.is_some_and(|g| same(g, want)) {
                let show = |v: Option<&Value>| {
                    v.map_or("(absent)".to_owned(), |v| {
                        String::from_utf8_lossy(&canonical_json::to_jcs(v).unwrap()).into_owned()
                    })
                };
                out.insert((sid.clone(), n, path.to_owned()), (show(got), show(Some(want))));
            }
        };
        match op {
            "wait" => {
                let secs = step.get("seconds").and_then(Value::as_f64).unwrap_or(1.0);
                std::thread::sleep(Duration::from_secs_f64(secs));
            }
            "assert" => {
                for (path, want) in &expect {
                    let (var, sub) = path.split_once('.').unwrap_or((path, ""));
                    let mut len = None;
                    let got = if sub.is_empty() {
                        vars.get(var)
                    } else {
                        pick(vars.get(var), sub, &mut len)
                    };
                    differ(path, got, want);
                }
            }
            _ => {
                let args: Result<Map, String> = step
                    .get("args")
                    .and_then(Value::as_object)
                    .map(|a| {
                        a.iter()
                            .map(|(k, v)| Ok((k.clone(), resolve(v, &vars, shared, bundle)?)))
                            .collect()
                    })
                    .unwrap_or_else(|| Ok(Map::new()));
                let answer = match args.and_then(|args| call(addr, op, &args)) {
                    Ok(v) => v,
                    Err(e) => {
                        out.insert(
                            (sid.clone(), n, "(answer)".to_owned()),
                            (e, "an answer".to_owned()),
                        );
                        continue;
                    }
                };
                for (path, want) in &expect {
                    let mut len = None;
                    differ(path, pick(Some(&answer), path, &mut len), want);
                }
                if let Some(save) = step.get("save").and_then(Value::as_str) {
                    vars.insert(save.to_owned(), answer);
                }
            }
        }
    }
}

/// A `cookwala serve` set up as the upstream runner's hub, killed when dropped.
struct Hub {
    child: std::process::Child,
    addr: SocketAddr,
    _data: tempfile::TempDir,
    _stdout: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl Hub {
    fn start(standard: &Path, bundle: &Path) -> Hub {
        let data = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_cookwala"))
            .args(["serve", "--addr", "127.0.0.1:0", "--no-auth", "--no-builtin", "--speed", "200"])
            .args(["--device", "robot-arm", "--heartbeat-secs", "0"])
            .arg("--data")
            .arg(data.path())
            .arg("--bundle")
            .arg(bundle)
            .arg("--limits")
            .arg(standard.join("profiles/core/safety-limits.default.json"))
            .arg("--vocab")
            .arg(standard.join("vocab"))
            .env_remove("COOKWALA_HUB_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let addr = first.rsplit("http://").next().unwrap().trim().parse().unwrap();
        Hub { child, addr, _data: data, _stdout: lines }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_upstream_hubs_scenarios_pass_or_differ_as_documented() {
    let Some(standard) = test_support::shared("standards/cookwala") else { return };
    let Some(bundle) = test_support::samples_bundle() else { return };
    let samples = canonical_json::parse(test_support::read(&bundle).as_bytes()).unwrap();
    let suite = load("upstream.json");
    let scenarios = suite.get("scenarios").and_then(Value::as_array).unwrap();
    // Each scenario on a hub of its own, all at once: our hub runs one execution per device at
    // a time (a second start is refused `busy`), where the upstream hub keeps no such rule and
    // its runner leaves each scenario's execution waiting for a person.
    let mut found = Differences::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = scenarios
            .iter()
            .map(|sc| {
                let (standard, bundle, samples) = (&standard, &bundle, &samples);
                s.spawn(move || {
                    let hub = Hub::start(standard, bundle);
                    let mut out = Differences::new();
                    run(hub.addr, sc, standard, samples, &mut out);
                    out
                })
            })
            .collect();
        for h in handles {
            found.extend(h.join().unwrap());
        }
    });

    let listed = load("divergences.json");
    let mut documented = Differences::new();
    for d in listed.get("divergences").and_then(Value::as_array).unwrap() {
        let s = |k: &str| {
            d.get(k).and_then(Value::as_str).unwrap_or_else(|| panic!("{k} in {d:?}")).to_owned()
        };
        assert!(!s("why").is_empty());
        let step = d.get("step").and_then(Value::as_f64).unwrap() as u64;
        documented.insert((s("scenario"), step, s("path")), (String::new(), String::new()));
    }
    let mut report = String::new();
    let undocumented: Vec<_> = found.iter().filter(|(k, _)| !documented.contains_key(*k)).collect();
    let stale: Vec<_> = documented.keys().filter(|k| !found.contains_key(*k)).collect();
    for ((sc, step, path), (got, want)) in &found {
        report.push_str(&format!("{sc} step {step} {path}: ours {got}, upstream {want}\n"));
    }
    let passed = scenarios
        .iter()
        .filter(|sc| {
            let id = sc.get("id").and_then(Value::as_str).unwrap();
            !found.keys().any(|(s, _, _)| s == id)
        })
        .count();
    eprintln!(
        "notice: upstream scenarios: {passed}/{} as upstream; differences:\n{report}",
        scenarios.len()
    );
    assert!(
        undocumented.is_empty(),
        "differences not in divergences.json: {undocumented:?}\n{report}"
    );
    assert!(stale.is_empty(), "divergences.json lists what no longer differs: {stale:?}\n{report}");
}
