use std::path::Path;

use canonical_json::Value;
use cookwala::conformance::{self, RunError, run_suite, run_vector, vectors_hash};

fn load(path: &Path) -> Value {
    canonical_json::parse(test_support::read(path).as_bytes()).unwrap()
}

#[test]
fn implemented_suites_pass_every_vector() {
    let Some(dir) = test_support::shared("standards/cookwala/conformance") else { return };
    let mut total = 0;
    for suite in conformance::CORE_SUITES {
        let report = run_suite(suite, &load(&dir.join(format!("{suite}.json")))).unwrap();
        assert!(report.failed.is_empty(), "{suite}: failed {:?}", report.failed);
        assert_eq!(report.passed, report.total);
        total += report.total;
    }
    assert_eq!(total, 58);
    for (suite, _) in conformance::PROFILE_SUITES {
        let stem = suite.trim_start_matches("profiles/");
        let report = run_suite(suite, &load(&dir.join(format!("profiles/{stem}.json")))).unwrap();
        assert!(report.failed.is_empty(), "{suite}: failed {:?}", report.failed);
        assert!(conformance::is_supported(suite));
        total += report.total;
    }
    assert_eq!(total, 140);
}

#[test]
fn profile_answers_are_the_expected_ones_not_just_equal_shapes() {
    // A result that merely has the right keys must not pass: spot-check a changed answer.
    let Some(dir) = test_support::shared("standards/cookwala/conformance") else { return };
    let vectors = load(&dir.join("profiles/sms.json"));
    let first = &vectors.as_array().unwrap()[0];
    let computed = run_vector("profiles/sms", first).unwrap();
    assert!(conformance::passes(&computed, first.get("expected").unwrap()));
    let mut wrong = first.clone();
    if let Value::Object(m) = &mut wrong {
        m.insert(
            "input".into(),
            canonical_json::parse(br#"{"text":"OFFER 35KG YOGURT C 4C UB0511"}"#).unwrap(),
        );
    }
    let computed = run_vector("profiles/sms", &wrong).unwrap();
    assert!(!conformance::passes(&computed, first.get("expected").unwrap()));
}

#[test]
fn unknown_suites_say_so() {
    let vector =
        canonical_json::parse(br#"{"id":"x","kind":"k","input":{},"expected":{}}"#).unwrap();
    let suite = "profiles/not_a_profile";
    assert_eq!(run_vector(suite, &vector), Err(RunError::Unsupported(suite.into())));
    assert!(!conformance::is_supported(suite));
}

#[test]
fn a_ledger_vector_with_null_keys_does_not_check_signatures() {
    let Some(dir) = test_support::shared("standards/cookwala/conformance") else { return };
    let vectors = load(&dir.join("ledger.json"));
    let valid = vectors
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v.pointer("/expected/head").is_some())
        .expect("the ledger suite has a valid chain");
    let mut unsigned = valid.clone();
    let input =
        unsigned.as_object_mut().unwrap().get_mut("input").unwrap().as_object_mut().unwrap();
    // Break every event signature (the event hash leaves `signature` out): with the keys given
    // the chain fails; with `keys: null` signatures are not checked and it holds.
    let Some(Value::Array(events)) = input.get_mut("events") else { panic!("events") };
    let mut broken = 0;
    for event in events.iter_mut() {
        if let Some(Value::Object(sig)) = event.as_object_mut().unwrap().get_mut("signature") {
            sig.insert("sig".into(), "AAAA".into());
            broken += 1;
        }
    }
    assert!(broken > 0, "the valid chain has signed events");
    let with_keys = run_vector("ledger", &unsigned).unwrap();
    assert_eq!(with_keys.get("ok"), Some(&Value::Bool(false)), "{with_keys:?}");
    let input =
        unsigned.as_object_mut().unwrap().get_mut("input").unwrap().as_object_mut().unwrap();
    input.insert("keys".into(), Value::Null);
    let computed = run_vector("ledger", &unsigned).unwrap();
    assert_eq!(computed.get("ok"), Some(&Value::Bool(true)), "{computed:?}");
    assert_eq!(computed.get("head"), valid.pointer("/expected/head"));
}

#[test]
fn conversions_round_like_python_round6() {
    use cookwala::units::round6;
    // 5e-07 is slightly below 0.0000005 in binary: Python's round(5e-07, 6) is 0.0.
    assert_eq!(round6(5e-7), 0.0);
    // 1/128 = 0.0078125 is an exact tie: ties go to even.
    assert_eq!(round6(0.0078125), 0.007812);
    assert_eq!(round6(0.0234375), 0.023438);
    assert_eq!(round6(-0.0000001), 0.0);
    assert_eq!(round6(2.5), 2.5);
    assert_eq!(round6(1.0000015), 1.000001);
    let v = canonical_json::parse(br#"{"id":"u","kind":"units","input":{"value":5e-07,"unit":"g","to":"g"},"expected":{"value":0.0}}"#).unwrap();
    let computed = run_vector("units", &v).unwrap();
    assert!(conformance::passes(&computed, v.get("expected").unwrap()), "{computed:?}");
}

#[test]
fn vectors_hash_matches_published() {
    let Some(dir) = test_support::shared("standards/cookwala/conformance") else { return };
    let mut files = Vec::new();
    for (sub, prefix) in [("", ""), ("profiles", "profiles/")] {
        let folder = dir.join(sub);
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "json") {
                let stem = path.file_stem().unwrap().to_str().unwrap();
                files.push((format!("{prefix}{stem}"), load(&path)));
            }
        }
    }
    assert_eq!(files.len(), 15);
    let n: usize = files.iter().map(|(_, v)| v.as_array().unwrap().len()).sum();
    assert_eq!(n, 140);
    let published = test_support::read(&dir.join("VECTORS-HASH.txt"));
    assert_eq!(vectors_hash(&files).unwrap(), published.trim());
}
