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
    let report =
        run_suite("profiles/sensor_trust", &load(&dir.join("profiles/sensor_trust.json"))).unwrap();
    assert!(report.failed.is_empty(), "sensor_trust: failed {:?}", report.failed);
    assert_eq!(report.total, 9);
}

#[test]
fn unimplemented_suites_say_so() {
    let Some(dir) = test_support::shared("standards/cookwala/conformance") else { return };
    for suite in ["profiles/sms", "profiles/registry"] {
        let vectors = load(&dir.join(format!("{suite}.json")));
        let first = &vectors.as_array().unwrap()[0];
        assert_eq!(run_vector(suite, first), Err(RunError::Unsupported(suite.into())));
        assert!(matches!(run_suite(suite, &vectors), Err(RunError::Unsupported(_))));
        assert!(!conformance::is_supported(suite));
    }
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
