use canonical_json::{Map, Number, Value};
use cookwala::keys::KeySet;
use cookwala::mission::{detect_fork, verify_chain, verify_checkpoint};
use cookwala::signature::{SignedKind, verify_signature};
use proptest::prelude::*;

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter_map("finite", canonical_json::Finite::new)
            .prop_map(|f| Value::Number(Number::Float(f))),
        "[a-zA-Z0-9_:#+. -]{0,24}".prop_map(Value::from),
        prop_oneof![
            Just("EdDSA"),
            Just("ES256"),
            Just("k"),
            Just("2026-01-01T00:00:00Z"),
            Just("2025-01-01T00:00:00+01:00"),
            Just("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"),
        ]
        .prop_map(Value::from),
    ]
}

pub fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 6, |inner| {
        let keys = prop_oneof![
            Just("kid".to_owned()),
            Just("alg".to_owned()),
            Just("sig".to_owned()),
            Just("signedAt".to_owned()),
            Just("publicKey".to_owned()),
            Just("validFrom".to_owned()),
            Just("validTo".to_owned()),
            Just("revokedAt".to_owned()),
            Just("signature".to_owned()),
            Just("kind".to_owned()),
            Just("seq".to_owned()),
            Just("head".to_owned()),
            Just("witnesses".to_owned()),
            "[a-z]{1,6}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(keys, inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map>())),
        ]
    })
}

proptest! {
    #[test]
    fn verification_never_panics(doc in value(), sig in value(), keys in value(), events in prop::collection::vec(value(), 0..3)) {
        let mut doc = doc;
        if let Some(map) = doc.as_object_mut() {
            map.insert("signature".into(), sig);
        }
        let set = KeySet::from_value(&keys).unwrap_or_default();
        for kind in [SignedKind::Document, SignedKind::Event, SignedKind::Checkpoint] {
            let _ = verify_signature(&doc, &set, kind);
        }
        let _ = verify_chain(&events, Some(&set));
        let _ = verify_checkpoint(&events, &doc, &set);
        let _ = detect_fork(&doc, &keys);
        let _ = cookwala::disclosure::verify(&doc);
        for suite in ["hash", "signature", "disclosure", "ledger", "transitions", "units"] {
            let _ = cookwala::conformance::run_vector(suite, &doc);
        }
    }

    #[test]
    fn arbitrary_key_records_never_panic(record in value(), sig in value()) {
        let keys = Value::Array(vec![record]);
        if let Ok(set) = KeySet::from_value(&keys) {
            let mut doc = Map::new();
            doc.insert("signature".into(), sig);
            let _ = verify_signature(&Value::Object(doc), &set, SignedKind::Document);
        }
    }
}

/// Words the SMS grammar knows, mixed with arbitrary text.
fn sms_text() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        Just("OFFER".to_owned()),
        Just("FARM".to_owned()),
        Just("CLAIM".to_owned()),
        Just("HAND".to_owned()),
        Just("DIST".to_owned()),
        Just("MENU".to_owned()),
        Just("REJ".to_owned()),
        Just("MEALS".to_owned()),
        Just("PEOPLE".to_owned()),
        "[0-9٠-٩۰-۹]{1,4}(KG|C)?".prop_map(|s| s),
        "(T|UB|BB|HV|KCAL|FV)-?[0-9.]{0,5}C?".prop_map(|s| s),
        "[A-Za-z]{1,6}".prop_map(|s| s),
        ".{0,4}".prop_map(|s| s),
    ];
    prop::collection::vec(word, 0..8).prop_map(|w| w.join(" "))
}

proptest! {
    /// The signing header written in place is the JCS of the header object, for any member
    /// texts (escapes, non-ASCII) and any `kind`, truthy or not.
    #[test]
    fn signing_input_is_the_jcs_of_the_header(
        hash in "\\PC{0,12}",
        kid in "\\PC{0,12}",
        alg in "\\PC{0,6}",
        signed_at in "[\"\\\\\u{0}-\u{1f}a-z\u{e9}\u{e000}\u{1f600}]{0,8}",
        kind in prop::option::of(value()),
    ) {
        let mut header = Map::new();
        header.insert("alg".into(), alg.as_str().into());
        header.insert("hash".into(), hash.as_str().into());
        header.insert("kid".into(), kid.as_str().into());
        header.insert("signedAt".into(), signed_at.as_str().into());
        if let Some(kind) = kind.as_ref().filter(|k| cookwala::envelope::truthy(k)) {
            header.insert("kind".into(), kind.clone());
        }
        let expected = canonical_json::to_jcs(&Value::Object(header));
        let ours = cookwala::signature::signing_input(&hash, &kid, &alg, &signed_at, kind.as_ref());
        prop_assert_eq!(ours, expected);
    }
}

proptest! {
    #[test]
    fn sms_parsing_never_panics_and_always_has_a_wire_shape(text in sms_text()) {
        let parsed = cookwala::sms::parse(&text);
        let value = cookwala::sms::result_value(&parsed);
        prop_assert_eq!(value.get("ok").and_then(Value::as_bool), Some(parsed.is_ok()));
        if let Ok(cmd) = &parsed {
            let _ = cookwala::sms::storage_findings(cmd);
            prop_assert!(value.get("command").is_some());
        } else {
            prop_assert!(value.get("error").and_then(Value::as_str).is_some());
        }
    }

    #[test]
    fn profile_checks_never_panic_on_arbitrary_documents(doc in value(), other in value()) {
        let _ = cookwala::signal::check(&doc, cookwala::signal::Policy::default());
        let _ = cookwala::humanitarian::check(&doc, &cookwala::humanitarian::RulePack::who_codex_basic());
        let _ = cookwala::household::ConsentGrant::from_value(&doc);
        let _ = cookwala::humanitarian::RulePack::from_value(&doc);
        let now = cookwala::time::parse_timestamp("2026-10-05T00:00:00Z").unwrap();
        let keys = KeySet::from_value(&other).unwrap_or_default();
        let _ = cookwala::certification::verify(&doc, &keys, now, None);
        let _ = cookwala::certification::current(&[doc.clone(), other.clone()], &keys, now, Some("x"));
        let _ = cookwala::federation::verify_relayed(&doc, &keys);
    }
}
