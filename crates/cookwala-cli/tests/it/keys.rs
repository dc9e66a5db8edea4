use std::path::Path;

use canonical_json::Value;

use crate::{assert_exit, cookwala, stdout};

fn keygen(dir: &Path, alg: &str, kid: &str, valid_from: &str) {
    let out = cookwala(
        dir,
        &["keygen", "--alg", alg, "--kid", kid, "--out", "keys", "--valid-from", valid_from],
    );
    assert_exit(&out, 0);
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

fn verify(dir: &Path, keys: &str, doc: &str) -> (i32, String) {
    let out = cookwala(dir, &["verify", "--keys", keys, doc]);
    (out.status.code().unwrap(), stdout(&out).trim().to_owned())
}

const DOC: &str = r#"{"core":"0.2.0","kind":"Recall","id":"r-1","note":"ünïcödé"}"#;

#[test]
fn keygen_sign_verify_round_trip_for_both_algorithms() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "doc.json", DOC);
    for (alg, kid) in [("EdDSA", "did:web:a.example#k1"), ("ES256", "p256-key")] {
        keygen(d, alg, kid, "2026-01-01T00:00:00Z");
        let stem = kid.replace([':', '#'], "_");
        let out = cookwala(
            d,
            &[
                "sign",
                "--key",
                &format!("keys/{stem}.key.json"),
                "--signed-at",
                "2026-06-01T00:00:00Z",
                "-o",
                &format!("{stem}.signed.json"),
                "doc.json",
            ],
        );
        assert_exit(&out, 0);
        let signed = std::fs::read(d.join(format!("{stem}.signed.json"))).unwrap();
        let signed = canonical_json::parse(&signed).unwrap();
        let sig = signed.get("signature").unwrap();
        assert_eq!(sig.get("alg").and_then(Value::as_str), Some(alg));
        assert_eq!(sig.get("kid").and_then(Value::as_str), Some(kid));
        let keys = format!("keys/{stem}.pub.json");
        let signed_name = format!("{stem}.signed.json");
        assert_eq!(verify(d, &keys, &signed_name), (0, "ok".into()));
        // Unsigned input and a key set without the kid.
        assert_eq!(verify(d, &keys, "doc.json"), (1, "unsigned".into()));
        let other = if alg == "EdDSA" {
            "keys/p256-key.pub.json"
        } else {
            "keys/did_web_a.example_k1.pub.json"
        };
        if d.join(other).exists() {
            assert_eq!(verify(d, other, &signed_name), (1, "unknown_key".into()));
        }
    }
}

#[test]
fn every_cli_reachable_reason_code() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "doc.json", DOC);
    keygen(d, "EdDSA", "k1", "2026-01-01T00:00:00Z");
    let sign = |at: &str, out: &str| {
        let res = cookwala(
            d,
            &["sign", "--key", "keys/k1.key.json", "--signed-at", at, "-o", out, "doc.json"],
        );
        assert_exit(&res, 0);
    };
    sign("2026-06-01T00:00:00Z", "ok.json");
    sign("2025-06-01T00:00:00Z", "early.json");
    assert_eq!(
        verify(d, "keys/k1.pub.json", "early.json"),
        (1, "key_not_valid_at_signing_time".into())
    );

    // Tamper with the body: bad_signature.
    let text = std::fs::read_to_string(d.join("ok.json")).unwrap();
    write(d, "tampered.json", &text.replace("r-1", "r-2"));
    assert_eq!(verify(d, "keys/k1.pub.json", "tampered.json"), (1, "bad_signature".into()));

    // Revoke the key before the signing time: key_revoked; after it: still ok.
    let keys = std::fs::read_to_string(d.join("keys/k1.pub.json")).unwrap();
    let revoked = keys.replace(
        "\"validFrom\"",
        "\"revokedAt\": \"2026-03-01T00:00:00Z\",\n      \"revocationReason\": \"compromised\",\n      \"validFrom\"",
    );
    assert_ne!(revoked, keys);
    write(d, "revoked.json", &revoked);
    assert_eq!(verify(d, "revoked.json", "ok.json"), (1, "key_revoked".into()));
    write(d, "later.json", &revoked.replace("2026-03-01", "2026-09-01"));
    assert_eq!(verify(d, "later.json", "ok.json"), (0, "ok".into()));

    // Declared alg differs from the key record: alg_mismatch.
    write(d, "es.json", &keys.replace("\"EdDSA\"", "\"ES256\""));
    assert_eq!(verify(d, "es.json", "ok.json"), (1, "alg_mismatch".into()));

    // Missing signedAt: unsigned_time.
    let signed = std::fs::read_to_string(d.join("ok.json")).unwrap();
    let no_time: Value = {
        let mut v = canonical_json::parse(signed.as_bytes()).unwrap();
        let sig = v.as_object_mut().unwrap().get_mut("signature").unwrap();
        sig.as_object_mut().unwrap().remove("signedAt");
        v
    };
    write(d, "notime.json", &String::from_utf8(canonical_json::to_jcs(&no_time).unwrap()).unwrap());
    assert_eq!(verify(d, "keys/k1.pub.json", "notime.json"), (1, "unsigned_time".into()));

    // JSON output carries the verdict and the signature's identity.
    let out = cookwala(d, &["verify", "--json", "--keys", "keys/k1.pub.json", "ok.json"]);
    assert_exit(&out, 0);
    let result = canonical_json::parse(stdout(&out).as_bytes()).unwrap();
    assert_eq!(result.get("reason").and_then(Value::as_str), Some("ok"));
    assert_eq!(result.get("kid").and_then(Value::as_str), Some("k1"));
}

#[test]
fn keygen_never_overwrites_and_refuses_bad_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    keygen(d, "EdDSA", "k1", "2026-01-01T00:00:00Z");
    let before = std::fs::read(d.join("keys/k1.key.json")).unwrap();
    let out = cookwala(d, &["keygen", "--kid", "k1", "--out", "keys"]);
    assert_exit(&out, 1);
    assert_eq!(std::fs::read(d.join("keys/k1.key.json")).unwrap(), before);
    assert_exit(
        &cookwala(d, &["keygen", "--kid", "k2", "--out", "keys", "--valid-from", "yesterday"]),
        1,
    );
    assert_exit(&cookwala(d, &["keygen", "--alg", "RS256", "--kid", "k3", "--out", "keys"]), 2);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(d.join("keys/k1.key.json")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn disclosure_make_verify_redact() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = cookwala(
        d,
        &[
            "disclose",
            "make",
            "--value",
            r#"{"diet":"low_sodium","person":"diner-2"}"#,
            "--salt",
            "q1w2e3r4t5y6u7i8o9p0aa",
            "-o",
            "d.json",
        ],
    );
    assert_exit(&out, 0);
    let disclosed = canonical_json::parse(&std::fs::read(d.join("d.json")).unwrap()).unwrap();
    // The standard's worked example (COOKWALA.md §12) starts with this digest.
    let digest = disclosed.get("digest").and_then(Value::as_str).unwrap();
    assert!(digest.starts_with("sha256:f5a0a70c"), "{digest}");
    let out = cookwala(d, &["disclose", "verify", "d.json"]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "ok\n");
    let out = cookwala(d, &["disclose", "redact", "d.json"]);
    assert_exit(&out, 0);
    std::fs::write(d.join("r.json"), &out.stdout).unwrap();
    let out = cookwala(d, &["disclose", "verify", "r.json"]);
    assert_exit(&out, 1);
    assert_eq!(stdout(&out), "not_disclosed\n");
    let text = std::fs::read_to_string(d.join("d.json")).unwrap();
    std::fs::write(d.join("bad.json"), text.replace("low_sodium", "no_sodium")).unwrap();
    let out = cookwala(d, &["disclose", "verify", "bad.json"]);
    assert_eq!(stdout(&out), "digest_mismatch\n");
    // A short salt is refused when creating a disclosure.
    let out = cookwala(d, &["disclose", "make", "--value", "1", "--salt", "short"]);
    assert_exit(&out, 1);
}
