use canonical_json::Value;
use test_support::shared;

use crate::{assert_exit, cookwala, stderr, stdout};

const CORE_INTEGRITY: [&str; 5] = ["hash", "signature", "disclosure", "ledger", "transitions"];
const CORE_ALL: [&str; 8] =
    ["hash", "signature", "disclosure", "ledger", "units", "envelope", "dryrun", "transitions"];

#[test]
fn integrity_suites_pass_on_the_standards_vectors() {
    let Some(vectors) = shared("standards/cookwala/conformance") else { return };
    let dir = tempfile::tempdir().unwrap();
    let v = vectors.to_str().unwrap();
    let mut args = vec!["conformance", "run", "--vectors", v];
    for suite in CORE_INTEGRITY {
        args.extend(["--suite", suite]);
    }
    let out = cookwala(dir.path(), &args);
    assert_exit(&out, 0);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "hash: 4/4 passed",
            "signature: 8/8 passed",
            "disclosure: 2/2 passed",
            "ledger: 7/7 passed",
            "transitions: 11/11 passed",
            "32 passed, 0 failed"
        ]
    );
    args.push("--json");
    let out = cookwala(dir.path(), &args);
    assert_exit(&out, 0);
    let report = canonical_json::parse(stdout(&out).trim().as_bytes()).unwrap();
    assert_eq!(report.get("passed").and_then(Value::as_i64), Some(32));
    assert_eq!(report.get("failed").and_then(Value::as_i64), Some(0));
    let suites = report.get("suites").and_then(Value::as_array).unwrap();
    assert_eq!(suites.len(), 5);
    for s in suites {
        let keys: Vec<&String> = s.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["failed", "passed", "suite", "total"]);
    }
}

#[test]
fn every_core_suite_and_sensor_trust_pass_and_the_vectors_hash_is_checked() {
    let Some(vectors) = shared("standards/cookwala/conformance") else { return };
    let dir = tempfile::tempdir().unwrap();
    let v = vectors.to_str().unwrap();
    let mut args = vec!["conformance", "run", "--vectors", v];
    for suite in CORE_ALL.iter().chain(["profiles/sensor_trust"].iter()) {
        args.extend(["--suite", suite]);
    }
    let out = cookwala(dir.path(), &args);
    assert_exit(&out, 0);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            "hash: 4/4 passed",
            "signature: 8/8 passed",
            "disclosure: 2/2 passed",
            "ledger: 7/7 passed",
            "units: 5/5 passed",
            "envelope: 14/14 passed",
            "dryrun: 7/7 passed",
            "transitions: 11/11 passed",
            "profiles/sensor_trust: 9/9 passed",
            "67 passed, 0 failed"
        ]
    );

    // The whole folder: every Core suite and every profile suite pass, and the set's hash is
    // the published one.
    let out = cookwala(dir.path(), &["conformance", "run", "--vectors", v]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    for line in &lines[..9] {
        assert!(text.lines().any(|l| l == *line), "{line} missing from:\n{text}");
    }
    for line in [
        "profiles/certifications: 11/11 passed",
        "profiles/disclosure_policy: 8/8 passed",
        "profiles/federation: 3/3 passed",
        "profiles/registry: 19/19 passed",
        "profiles/signal: 8/8 passed",
        "profiles/sms: 24/24 passed",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing from:\n{text}");
    }
    assert_eq!(text.lines().last(), Some("140 passed, 0 failed"));
    assert!(stderr(&out).contains("vectors hash matches"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("not implemented"), "{}", stderr(&out));
}

/// A signed ConformanceReport over the whole set, made with the CLI's own commands.
fn signed_report(
    dir: &std::path::Path,
    vectors: &str,
    edit: impl FnOnce(&mut canonical_json::Map),
) {
    let out = cookwala(dir, &["conformance", "run", "--vectors", vectors, "--json"]);
    assert_exit(&out, 0);
    let run = canonical_json::parse(stdout(&out).trim().as_bytes()).unwrap();
    let suites: Vec<Value> = run
        .get("suites")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|s| {
            let mut m = s.as_object().unwrap().clone();
            m.remove("failed");
            Value::Object(m)
        })
        .collect();
    let published =
        std::fs::read_to_string(std::path::Path::new(vectors).join("VECTORS-HASH.txt")).unwrap();
    let mut m = canonical_json::Map::new();
    m.insert("profile".into(), "0.1.0".into());
    m.insert("kind".into(), "ConformanceReport".into());
    m.insert("claim".into(), "verifier".into());
    m.insert("suites".into(), Value::Array(suites));
    m.insert("vectorsHash".into(), published.trim().into());
    m.insert(
        "tool".into(),
        canonical_json::parse(br#"{"name":"cookwala","version":"test"}"#).unwrap(),
    );
    m.insert("date".into(), "2026-12-01".into());
    m.insert("status".into(), "self_declared".into());
    edit(&mut m);
    let mut report = Value::Object(m);
    let hash = canonical_json::digest::document_hash(&report).unwrap();
    report.as_object_mut().unwrap().insert("hash".into(), hash.into());
    std::fs::write(dir.join("unsigned.json"), canonical_json::to_jcs(&report).unwrap()).unwrap();
    let out = cookwala(
        dir,
        &[
            "keygen",
            "--kid",
            "did:web:example.test#r",
            "--out",
            "keys",
            "--valid-from",
            "2026-01-01T00:00:00Z",
        ],
    );
    assert_exit(&out, 0);
    let key = std::fs::read_dir(dir.join("keys"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".key.json"))
        .unwrap();
    let key = key.to_str().unwrap().to_owned();
    let out = cookwala(
        dir,
        &[
            "sign",
            "--key",
            &key,
            "--signed-at",
            "2026-12-01T00:00:00Z",
            "-o",
            "report.json",
            "unsigned.json",
        ],
    );
    assert_exit(&out, 0);
}

fn public_keys(dir: &std::path::Path) -> String {
    std::fs::read_dir(dir.join("keys"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".pub.json"))
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned()
}

#[test]
fn verify_report_checks_signature_hash_and_counts() {
    let Some(vectors) = shared("standards/cookwala/conformance") else { return };
    let v = vectors.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    signed_report(dir.path(), v, |_| {});
    let keys = public_keys(dir.path());
    let check =
        ["conformance", "run", "--vectors", v, "--verify-report", "report.json", "--keys", &keys];
    let out = cookwala(dir.path(), &check);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out).trim(), "ok");

    // A report whose counts lie (one vector fewer in sms) fails, even when properly signed.
    let lying = tempfile::tempdir().unwrap();
    signed_report(lying.path(), v, |m| {
        let Some(Value::Array(suites)) = m.get_mut("suites") else { panic!("suites") };
        for s in suites {
            let o = s.as_object_mut().unwrap();
            if o.get("suite").and_then(Value::as_str) == Some("profiles/sms") {
                o.insert("total".into(), Value::from(23u64));
                o.insert("passed".into(), Value::from(23u64));
            }
        }
    });
    let keys = public_keys(lying.path());
    let check = [
        "conformance",
        "run",
        "--vectors",
        v,
        "--verify-report",
        "report.json",
        "--keys",
        &keys,
        "--json",
    ];
    let out = cookwala(lying.path(), &check);
    assert_exit(&out, 1);
    assert!(
        stdout(&out).contains("suite profiles/sms: total Some(23), the file has 24"),
        "{}",
        stdout(&out)
    );

    // Signed by another key: the signature check fails.
    let other = tempfile::tempdir().unwrap();
    signed_report(other.path(), v, |_| {});
    let wrong_keys = public_keys(other.path());
    let check = [
        "conformance",
        "run",
        "--vectors",
        v,
        "--verify-report",
        "report.json",
        "--keys",
        &wrong_keys,
    ];
    let out = cookwala(dir.path(), &check);
    assert_exit(&out, 1);
    assert!(stdout(&out).contains("signature: bad_signature"), "{}", stdout(&out));

    // An edited report no longer matches its hash.
    let text = std::fs::read_to_string(dir.path().join("report.json")).unwrap();
    std::fs::write(dir.path().join("edited.json"), text.replacen("self_declared", "certified", 1))
        .unwrap();
    let check = [
        "conformance",
        "run",
        "--vectors",
        v,
        "--verify-report",
        "edited.json",
        "--keys",
        &public_keys(dir.path()),
    ];
    let out = cookwala(dir.path(), &check);
    assert_exit(&out, 1);
    assert!(stdout(&out).contains("is not the report's document hash"), "{}", stdout(&out));
}

#[test]
fn a_changed_vector_fails_and_an_unknown_suite_is_an_error() {
    let Some(vectors) = shared("standards/cookwala/conformance") else { return };
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(vectors.join("hash.json")).unwrap();
    let tampered = text.replacen("sha256:2d5e01a318d0", "sha256:0d5e01a318d0", 1);
    assert_ne!(text, tampered);
    std::fs::create_dir(dir.path().join("v")).unwrap();
    std::fs::write(dir.path().join("v/hash.json"), tampered).unwrap();
    let out = cookwala(dir.path(), &["conformance", "run", "--vectors", "v", "--json"]);
    assert_exit(&out, 1);
    let report = canonical_json::parse(stdout(&out).trim().as_bytes()).unwrap();
    let failed = report.pointer("/suites/0/failed/0").and_then(Value::as_str);
    assert_eq!(failed, Some("hash-rfc8785-example"));
    let out = cookwala(dir.path(), &["conformance", "run", "--vectors", "v", "--suite", "nope"]);
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("no suite \"nope\""));
}

#[test]
fn run_writes_a_signed_report_that_verify_report_accepts() {
    let Some(vectors) = shared("standards/cookwala/conformance") else { return };
    let v = vectors.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = cookwala(
        dir.path(),
        &[
            "keygen",
            "--kid",
            "did:web:example.test#r",
            "--out",
            "keys",
            "--valid-from",
            "2026-01-01T00:00:00Z",
        ],
    );
    assert_exit(&out, 0);
    let key = std::fs::read_dir(dir.path().join("keys"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".key.json"))
        .unwrap();
    let key = key.to_str().unwrap();
    let out = cookwala(
        dir.path(),
        &["conformance", "run", "--vectors", v, "--report", "r.json", "--key", key],
    );
    assert_exit(&out, 0);
    assert!(stderr(&out).contains("signed report written to r.json"), "{}", stderr(&out));
    let report = canonical_json::parse(&std::fs::read(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(report.get("claim").and_then(Value::as_str), Some("verifier"));
    let published = std::fs::read_to_string(vectors.join("VECTORS-HASH.txt")).unwrap();
    assert_eq!(report.get("vectorsHash").and_then(Value::as_str), Some(published.trim()));
    let keys = public_keys(dir.path());
    let out = cookwala(
        dir.path(),
        &[
            "conformance",
            "run",
            "--vectors",
            v,
            "--verify-report",
            "r.json",
            "--keys",
            &keys,
            "--json",
        ],
    );
    assert_exit(&out, 0);
    let check = canonical_json::parse(stdout(&out).trim().as_bytes()).unwrap();
    assert_eq!(check.get("ok"), Some(&Value::Bool(true)), "{check:?}");
    assert_eq!(check.get("signature").and_then(Value::as_str), Some("ok"));

    // A failing run writes no report.
    let text = std::fs::read_to_string(vectors.join("hash.json")).unwrap();
    let tampered = text.replacen("sha256:2d5e01a318d0", "sha256:0d5e01a318d0", 1);
    std::fs::create_dir(dir.path().join("v")).unwrap();
    std::fs::write(dir.path().join("v/hash.json"), tampered).unwrap();
    let out = cookwala(
        dir.path(),
        &["conformance", "run", "--vectors", "v", "--report", "bad.json", "--key", key],
    );
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("no report written"), "{}", stderr(&out));
    assert!(!dir.path().join("bad.json").exists());
    // --report needs --key.
    let out = cookwala(dir.path(), &["conformance", "run", "--vectors", v, "--report", "x.json"]);
    assert_exit(&out, 2);
}

/// Suites run on workers and are reported in their order: one worker and several print the
/// same bytes, in text and in JSON.
#[test]
fn any_number_of_workers_prints_the_same_bytes() {
    let Some(vectors) = shared("standards/cookwala/conformance") else { return };
    let dir = tempfile::tempdir().unwrap();
    let v = vectors.to_str().unwrap();
    for json in [false, true] {
        let outs: Vec<String> = ["1", "2", "8"]
            .iter()
            .map(|jobs| {
                let mut args = vec!["conformance", "run", "--vectors", v, "--jobs", jobs];
                if json {
                    args.push("--json");
                }
                let out = cookwala(dir.path(), &args);
                assert_exit(&out, 0);
                stdout(&out)
            })
            .collect();
        assert!(outs[0].contains("passed"), "{}", outs[0]);
        assert_eq!(outs[0], outs[1]);
        assert_eq!(outs[0], outs[2]);
    }
}
