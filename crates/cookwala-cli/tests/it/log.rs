use std::path::Path;

use canonical_json::Value;

use crate::{assert_exit, cookwala, stderr, stdout};

fn setup(d: &Path) {
    for (alg, kid) in [("EdDSA", "seq"), ("ES256", "wit")] {
        let out = cookwala(
            d,
            &[
                "keygen",
                "--alg",
                alg,
                "--kid",
                kid,
                "--out",
                "k",
                "--valid-from",
                "2026-01-01T00:00:00Z",
            ],
        );
        assert_exit(&out, 0);
    }
}

fn append(d: &Path, extra: &[&str]) -> std::process::Output {
    let mut args =
        vec!["log", "append", "--log", "m.ndjson", "--key", "k/seq.key.json", "--mission", "m1"];
    args.extend_from_slice(extra);
    cookwala(d, &args)
}

fn verify(d: &Path, extra: &[&str]) -> (i32, String) {
    let mut args = vec![
        "log",
        "verify",
        "--log",
        "m.ndjson",
        "--keys",
        "k/seq.pub.json",
        "--keys",
        "k/wit.pub.json",
    ];
    args.extend_from_slice(extra);
    let out = cookwala(d, &args);
    (out.status.code().unwrap(), stdout(&out).trim().to_owned())
}

#[test]
fn sequence_checkpoint_witness_and_detect_rewrites() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    let at = ["--at", "2026-06-01T10:00:00Z"];
    assert_exit(
        &append(d, &[&["--type", "created", "--payload", r#"{"dish":"soup"}"#], &at[..]].concat()),
        0,
    );
    assert_exit(
        &append(
            d,
            &[&["--type", "state_changed", "--from", "draft", "--to", "open"], &at[..]].concat(),
        ),
        0,
    );
    let out =
        append(d, &[&["--type", "progress", "--actor", "robot-1", "--json"], &at[..]].concat());
    assert_exit(&out, 0);
    let event = canonical_json::parse(stdout(&out).trim().as_bytes()).unwrap();
    assert_eq!(event.get("seq").and_then(Value::as_i64), Some(2));
    assert_eq!(event.get("actor").and_then(Value::as_str), Some("robot-1"));

    let (code, text) = verify(d, &[]);
    assert_eq!(code, 0);
    assert!(text.starts_with("ok sha256:"), "{text}");

    let cp = [
        "log",
        "checkpoint",
        "--log",
        "m.ndjson",
        "--key",
        "k/seq.key.json",
        "--mission",
        "m1",
        "--at",
        "2026-06-01T11:00:00Z",
        "-o",
        "cp.json",
    ];
    assert_exit(&cookwala(d, &cp), 0);
    assert_eq!(verify(d, &["--checkpoint", "cp.json"]), (1, "no_independent_witness".into()));
    // The sequencer witnessing itself is not independent.
    let self_witness = [
        "log",
        "cosign",
        "--key",
        "k/seq.key.json",
        "--actor",
        "seq",
        "-o",
        "cp-self.json",
        "cp.json",
    ];
    assert_exit(&cookwala(d, &self_witness), 0);
    assert_eq!(verify(d, &["--checkpoint", "cp-self.json"]), (1, "no_independent_witness".into()));
    let cosign = [
        "log",
        "cosign",
        "--key",
        "k/wit.key.json",
        "--actor",
        "witness.example",
        "--at",
        "2026-06-01T11:05:00Z",
        "-o",
        "cp2.json",
        "cp.json",
    ];
    assert_exit(&cookwala(d, &cosign), 0);
    assert_eq!(verify(d, &["--checkpoint", "cp2.json"]).0, 0);

    // Rewriting a stored event is caught on verify and refused by the sequencer.
    let log = std::fs::read_to_string(d.join("m.ndjson")).unwrap();
    std::fs::write(d.join("m.ndjson"), log.replace("robot-1", "robot-2")).unwrap();
    assert_eq!(verify(d, &[]), (1, "hash_mismatch_at_2".into()));
    let out = append(d, &["--type", "progress"]);
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("cannot be continued"), "{}", stderr(&out));
}

#[test]
fn torn_tail_is_reported_by_verify_and_repaired_by_the_sequencer() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    assert_exit(&append(d, &["--type", "created"]), 0);
    let mut log = std::fs::read(d.join("m.ndjson")).unwrap();
    let good_len = log.len();
    log.extend_from_slice(br#"{"mission":"m1","seq":1,"#);
    std::fs::write(d.join("m.ndjson"), &log).unwrap();
    let out = cookwala(d, &["log", "verify", "--log", "m.ndjson"]);
    assert_exit(&out, 0);
    assert!(stderr(&out).contains(&format!("TORN TAIL at byte {good_len}")), "{}", stderr(&out));
    // verify is read-only: the torn bytes are still there.
    assert_eq!(std::fs::read(d.join("m.ndjson")).unwrap().len(), log.len());
    let out = append(d, &["--type", "progress"]);
    assert_exit(&out, 0);
    assert!(stderr(&out).contains(&format!("repaired at byte {good_len}")));
    assert_eq!(stdout(&out).split_whitespace().nth(1), Some("1"));
    assert_eq!(verify(d, &[]).0, 0);
}

#[test]
fn hash_only_payloads_can_be_erased_without_breaking_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    let out = append(
        d,
        &[
            "--type",
            "created",
            "--payload",
            r#"{"guest":"diner-2","diet":"halal"}"#,
            "--payloads",
            "pl",
            "--json",
        ],
    );
    assert_exit(&out, 0);
    let event = canonical_json::parse(stdout(&out).trim().as_bytes()).unwrap();
    assert!(event.get("payload").is_none());
    let digest = event.get("payloadDigest").and_then(Value::as_str).unwrap().to_owned();
    let log_text = std::fs::read_to_string(d.join("m.ndjson")).unwrap();
    assert!(!log_text.contains("diner-2"), "the log must not hold the payload");
    let json_verify = |d: &Path| {
        let out = cookwala(
            d,
            &[
                "log",
                "verify",
                "--log",
                "m.ndjson",
                "--keys",
                "k/seq.pub.json",
                "--payloads",
                "pl",
                "--json",
            ],
        );
        (out.status.code().unwrap(), canonical_json::parse(stdout(&out).trim().as_bytes()).unwrap())
    };
    let (code, result) = json_verify(d);
    assert_eq!(code, 0);
    assert_eq!(result.get("payloadsPresent").and_then(Value::as_i64), Some(1));
    // A forged payload is caught.
    let hex = digest.strip_prefix("sha256:").unwrap();
    let payload_path = d.join("pl").join(format!("{hex}.json"));
    std::fs::write(&payload_path, br#"{"guest":"someone-else","diet":"halal"}"#).unwrap();
    let (code, result) = json_verify(d);
    assert_eq!(code, 1);
    assert_eq!(result.get("reason").and_then(Value::as_str), Some("payload_mismatch_at_0"));
    // Erasure keeps the chain valid.
    let out = cookwala(d, &["log", "erase", "--payloads", "pl", &digest]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "erased\n");
    let (code, result) = json_verify(d);
    assert_eq!(code, 0);
    assert_eq!(result.get("payloadsErased").and_then(Value::as_i64), Some(1));
    // A hostile digest never becomes a path.
    let out = cookwala(d, &["log", "erase", "--payloads", "pl", "sha256:../../../etc/passwd"]);
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("malformed payload digest"));
}

#[test]
fn fork_detection_between_two_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = r#"{"mission":"m1","seq":3,"head":"sha256:aa"}"#;
    std::fs::write(d.join("a.json"), a).unwrap();
    std::fs::write(d.join("b.json"), a.replace("aa", "bb")).unwrap();
    let out = cookwala(d, &["log", "fork", "a.json", "b.json"]);
    assert_exit(&out, 1);
    assert_eq!(stdout(&out), "fork_detected\n");
    let out = cookwala(d, &["log", "fork", "a.json", "a.json"]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "no_fork\n");
}
