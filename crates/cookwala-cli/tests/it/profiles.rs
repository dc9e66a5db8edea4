use std::path::Path;

use canonical_json::Value;
use test_support::shared;

use crate::{assert_exit, cookwala, cookwala_in, stderr, stdout};

fn vectors(name: &str) -> Option<Vec<Value>> {
    let dir = shared("standards/cookwala/conformance/profiles")?;
    let text = std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap();
    Some(canonical_json::parse(text.as_bytes()).unwrap().as_array().unwrap().to_vec())
}

fn parse_line(text: &str) -> Value {
    canonical_json::parse(text.trim().as_bytes()).unwrap()
}

fn write(dir: &Path, name: &str, value: &Value) -> String {
    std::fs::write(dir.join(name), canonical_json::to_jcs(value).unwrap()).unwrap();
    name.to_owned()
}

/// Every key of `expected` has the same value in `got` (the CLI adds `findings`).
fn assert_includes(got: &Value, expected: &Value, id: &str) {
    for (key, want) in expected.as_object().unwrap() {
        let have = got.get(key).unwrap_or(&Value::Null);
        assert!(have.loose_eq(want), "{id}: {key}: got {have:?}, want {want:?}");
    }
}

#[test]
fn sms_parse_answers_every_vector() {
    let Some(vectors) = vectors("sms") else { return };
    let dir = tempfile::tempdir().unwrap();
    for v in &vectors {
        let id = v.get("id").and_then(Value::as_str).unwrap();
        let text = v.pointer("/input/text").and_then(Value::as_str).unwrap();
        let expected = v.get("expected").unwrap();
        // Through standard input, so empty and odd messages arrive unchanged.
        let out = cookwala_in(dir.path(), &["sms", "parse", "--json", "-"], text.as_bytes());
        if text.trim().is_empty() {
            assert_exit(&out, 1);
            assert!(stderr(&out).contains("no message"), "{id}");
            continue;
        }
        let ok = expected.get("ok").and_then(Value::as_bool).unwrap();
        assert_exit(&out, if ok { 0 } else { 1 });
        let got = parse_line(&stdout(&out));
        assert_includes(&got, expected, id);
        assert_eq!(got.get("findings").is_some(), ok, "{id}: findings only on a parsed message");
    }
}

#[test]
fn sms_parse_prints_findings_and_errors_for_people() {
    let dir = tempfile::tempdir().unwrap();
    let out = cookwala(dir.path(), &["sms", "parse", "OFFER", "36KG", "YOGURT", "A"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.starts_with("OFFER "), "{text}");
    assert!(text.contains("storage=ambient"), "{text}");
    assert!(text.contains("finding: safety.storage_class_mismatch"), "{text}");
    let out = cookwala(dir.path(), &["sms", "parse", "OFFER", "36KG", "YOGURT", "C", "UB3213"]);
    assert_exit(&out, 1);
    assert!(stdout(&out).starts_with("error: bad_date"), "{}", stdout(&out));
}

#[test]
fn constraints_answer_every_disclosure_policy_vector() {
    let Some(vectors) = vectors("disclosure_policy") else { return };
    let dir = tempfile::tempdir().unwrap();
    for v in &vectors {
        let id = v.get("id").and_then(Value::as_str).unwrap();
        let input = v.get("input").unwrap();
        let facets = write(dir.path(), "facets.json", input.get("facets").unwrap());
        let role = input.get("recipientRole").and_then(Value::as_str).unwrap();
        let mut args = vec!["constraints", "--facets", &facets, "--role", role, "--json"];
        let consents;
        if let Some(c) = input.get("consents") {
            consents = write(dir.path(), "consents.json", c);
            args.extend(["--consents", &consents]);
        }
        let out = cookwala(dir.path(), &args);
        assert_exit(&out, 0);
        let got = parse_line(&stdout(&out));
        assert!(got.loose_eq(v.get("expected").unwrap()), "{id}: {got:?}");
    }
}

#[test]
fn constraints_take_ids_and_refuse_unknown_roles() {
    let dir = tempfile::tempdir().unwrap();
    let facets = "cw.facet.household.health.allergies,cw.facet.space.layout";
    let out = cookwala(dir.path(), &["constraints", "--facets", facets, "--role", "grocer"]);
    assert_exit(&out, 0);
    assert_eq!(
        stdout(&out).lines().collect::<Vec<_>>(),
        [
            "constraint allergen_block (from cw.facet.household.health.allergies)",
            "constraint labeling_required (from cw.facet.household.health.allergies)",
            "withheld cw.facet.space.layout: never_travels",
        ]
    );
    let out = cookwala(dir.path(), &["constraints", "--facets", facets, "--role", "landlord"]);
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("unknown recipient role \"landlord\""), "{}", stderr(&out));
}

#[test]
fn certify_answers_every_certification_vector() {
    let Some(vectors) = vectors("certifications") else { return };
    let dir = tempfile::tempdir().unwrap();
    for v in &vectors {
        let id = v.get("id").and_then(Value::as_str).unwrap();
        let input = v.get("input").unwrap();
        let expected = v.get("expected").unwrap();
        let keys = write(dir.path(), "keys.json", input.get("keys").unwrap());
        let now = input.get("now").and_then(Value::as_str).unwrap();
        let mut args = vec!["certify"];
        let doc;
        if v.get("kind").and_then(Value::as_str) == Some("certification") {
            doc = write(dir.path(), "cert.json", input.get("certification").unwrap());
            args.push("verify");
        } else {
            doc = write(dir.path(), "certs.json", input.get("certifications").unwrap());
            args.push("pick");
        }
        args.extend(["--keys", &keys, "--now", now, "--json"]);
        if let Some(h) = input.get("subjectHash").and_then(Value::as_str) {
            args.extend(["--subject-hash", h]);
        }
        args.push(&doc);
        let out = cookwala(dir.path(), &args);
        let got = parse_line(&stdout(&out));
        assert_includes(&got, expected, id);
        let holds = expected.get("ok").and_then(Value::as_bool).unwrap_or_else(|| {
            !expected.get("current").and_then(Value::as_array).unwrap().is_empty()
        });
        assert_exit(&out, if holds { 0 } else { 1 });
    }
}

#[test]
fn registry_answers_every_vector_and_compares_versions() {
    let Some(vectors) = vectors("registry") else { return };
    let dir = tempfile::tempdir().unwrap();
    for v in &vectors {
        let id = v.get("id").and_then(Value::as_str).unwrap();
        let expected = v.get("expected").unwrap();
        let (verb, arg) = match v.get("kind").and_then(Value::as_str).unwrap() {
            "registry_name" => ("name", v.pointer("/input/name")),
            _ => ("version", v.pointer("/input/version")),
        };
        let arg = arg.and_then(Value::as_str).unwrap();
        let out = cookwala(dir.path(), &["registry", verb, "--json", "--", arg]);
        let got = parse_line(&stdout(&out));
        assert!(got.loose_eq(expected), "{id}: {got:?}");
        let ok = got.get("valid").or(got.get("exact")).and_then(Value::as_bool).unwrap();
        assert_exit(&out, if ok { 0 } else { 1 });
    }
    let out = cookwala(dir.path(), &["registry", "compare", "1.0.0-rc.1", "1.0.0"]);
    assert_exit(&out, 0);
    assert_eq!(
        stdout(&out).trim(),
        "1.0.0-rc.1 < 1.0.0 (compatible for a consumer pinned to 1.0.0-rc.1)"
    );
    let out = cookwala(dir.path(), &["registry", "compare", "--json", "1.4.2", "2.0.0"]);
    assert_exit(&out, 0);
    let got = parse_line(&stdout(&out));
    assert_eq!(got.get("order").and_then(Value::as_i64), Some(-1));
    assert_eq!(got.get("compatible"), Some(&Value::Bool(false)));
    let out = cookwala(dir.path(), &["registry", "compare", "1.4.2", "^1.4"]);
    assert_exit(&out, 1);
    assert_eq!(stdout(&out).trim(), "^1.4: range_not_allowed");
}

#[test]
fn signal_check_answers_every_vector() {
    let Some(vectors) = vectors("signal") else { return };
    let dir = tempfile::tempdir().unwrap();
    for v in &vectors {
        let id = v.get("id").and_then(Value::as_str).unwrap();
        let file = write(dir.path(), "signal.json", v.pointer("/input/signal").unwrap());
        let out = cookwala(dir.path(), &["signal", "check", "--json", &file]);
        let got = parse_line(&stdout(&out));
        let expected = v.get("expected").unwrap();
        assert!(got.loose_eq(expected), "{id}: {got:?}");
        let ok = expected.get("ok").and_then(Value::as_bool).unwrap();
        assert_exit(&out, if ok { 0 } else { 1 });
    }
}

#[test]
fn verify_relayed_answers_the_federation_vectors_and_refuses_a_relay_key() {
    let Some(vectors) = vectors("federation") else { return };
    let dir = tempfile::tempdir().unwrap();
    for v in &vectors {
        let id = v.get("id").and_then(Value::as_str).unwrap();
        let doc = write(dir.path(), "doc.json", v.pointer("/input/document").unwrap());
        let keys = write(dir.path(), "keys.json", v.pointer("/input/keys").unwrap());
        let out = cookwala(dir.path(), &["verify", "--relayed", "--json", "--keys", &keys, &doc]);
        let got = parse_line(&stdout(&out));
        assert_includes(&got, v.get("expected").unwrap(), id);
    }
    // The mirror's re-signed copy, with the mirror's key trusted too: plain verification says
    // ok, the federation rule does not (the key's actor is not the issuer).
    let forged = &vectors[1];
    let doc = write(dir.path(), "doc.json", forged.pointer("/input/document").unwrap());
    let keys = write(dir.path(), "keys.json", vectors[0].pointer("/input/keys").unwrap());
    let out = cookwala(dir.path(), &["verify", "--keys", &keys, &doc]);
    assert_exit(&out, 0);
    let out = cookwala(dir.path(), &["verify", "--relayed", "--keys", &keys, &doc]);
    assert_exit(&out, 1);
    assert_eq!(stdout(&out).trim(), "not_issuer_key");
}

#[test]
fn an_unknown_revocation_reason_is_a_warning_not_a_lost_key_set() {
    let dir = tempfile::tempdir().unwrap();
    let out = cookwala(
        dir.path(),
        &[
            "keygen",
            "--kid",
            "did:web:a.example#k",
            "--out",
            "k",
            "--valid-from",
            "2026-01-01T00:00:00Z",
        ],
    );
    assert_exit(&out, 0);
    let find = |suffix: &str| {
        std::fs::read_dir(dir.path().join("k"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().ends_with(suffix))
            .unwrap()
    };
    let (key, public) = (find(".key.json"), find(".pub.json"));
    let text = std::fs::read_to_string(&public).unwrap();
    let edited = text.replacen(
        "\"validFrom\"",
        "\"revokedAt\": \"2026-06-01T00:00:00Z\", \"revocationReason\": \"key_compromise\", \"validFrom\"",
        1,
    );
    assert_ne!(text, edited);
    std::fs::write(&public, edited).unwrap();
    std::fs::write(dir.path().join("doc.json"), br#"{"kind":"Recall","id":"r"}"#).unwrap();
    let key = key.to_str().unwrap();
    let public = public.to_str().unwrap();
    for (at, want, code) in
        [("2026-03-01T00:00:00Z", "ok", 0), ("2026-07-01T00:00:00Z", "key_revoked", 1)]
    {
        let out = cookwala(
            dir.path(),
            &["sign", "--key", key, "--signed-at", at, "-o", "s.json", "doc.json"],
        );
        assert_exit(&out, 0);
        let out = cookwala(dir.path(), &["verify", "--keys", public, "s.json"]);
        assert_exit(&out, code);
        assert_eq!(stdout(&out).trim(), want);
        assert!(
            stderr(&out).contains("warning:") && stderr(&out).contains("key_compromise"),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn humanitarian_check_reports_blocks_and_warnings() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("offer.json"),
        br#"{"kind":"Offer","id":"of-1","at":"2026-11-05T10:00:00Z","items":[{"lineId":"1","storage":"chilled","allergens":["unknown"]}],"readings":[{"lineId":"1","tempC":3}]}"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("dist.json"),
        br#"{"kind":"Distribution","id":"d-1","menu":{"perPersonDay":{"energyKcal":2300,"fruitVegG":250}}}"#,
    )
    .unwrap();
    let out = cookwala(dir.path(), &["humanitarian", "check", "dist.json"]);
    assert_exit(&out, 0);
    assert_eq!(
        stdout(&out).lines().collect::<Vec<_>>(),
        [
            "dist.json: Distribution, 0 block, 1 warn",
            "  WARN nutrition.fruit_veg: perPersonDay: 250 g"
        ]
    );
    let out = cookwala(dir.path(), &["humanitarian", "check", "--json", "offer.json", "dist.json"]);
    assert_exit(&out, 1);
    let first = parse_line(stdout(&out).lines().next().unwrap());
    assert_eq!(
        first.pointer("/findings/0/rule").and_then(Value::as_str),
        Some("safety.allergen_unlabelled")
    );
    // A pack file replaces the default: an empty pack finds nothing.
    std::fs::write(dir.path().join("pack.json"), br#"{"id":"none","rules":[]}"#).unwrap();
    let out = cookwala(dir.path(), &["humanitarian", "check", "--pack", "pack.json", "offer.json"]);
    assert_exit(&out, 0);
    std::fs::write(dir.path().join("bad.json"), br#"{"rules":[{"id":"x"}]}"#).unwrap();
    let out = cookwala(dir.path(), &["humanitarian", "check", "--pack", "bad.json", "offer.json"]);
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("is not a rule pack"), "{}", stderr(&out));
}
