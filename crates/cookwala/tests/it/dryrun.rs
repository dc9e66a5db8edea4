//! The dry run against the upstream sample bundle: 4 recipes × 4 devices × humanPresent.

use canonical_json::Value;
use cookwala::dryrun::{DryRun, Options, dry_run};
use cookwala::limits::default_pack;
use cookwala::time::parse_timestamp;
use cookwala::vocab::Vocabulary;

fn bundle() -> Option<Value> {
    let path = test_support::samples_bundle()?;
    Some(canonical_json::parse(test_support::read(&path).as_bytes()).unwrap())
}

fn run<'a>(b: &'a Value, recipe: &str, device: &str, human: bool, limits: &Value) -> DryRun<'a> {
    let now = parse_timestamp(b.get("now").and_then(Value::as_str).unwrap()).unwrap();
    let options = Options { human_present: human, allow_model: true, limits: Some(limits), now };
    let r = b.get("recipes").and_then(|r| r.get(recipe)).unwrap();
    let d = b.get("devices").and_then(|d| d.get(device)).unwrap();
    dry_run(Vocabulary::builtin(), r, d, options).unwrap()
}

#[test]
fn all_32_bundle_dry_runs_reproduce_exactly() {
    let Some(b) = bundle() else { return };
    let expected = b.pointer("/expected/dryRuns").and_then(Value::as_array).unwrap();
    assert_eq!(expected.len(), 32);
    // Our built-in default pack and the bundle's pack agree on every limit that matters.
    for limits in [default_pack(), b.get("safetyLimits").unwrap().clone()] {
        for case in expected {
            let s = |k: &str| case.get(k).and_then(Value::as_str).unwrap();
            let human = case.get("humanPresent").and_then(Value::as_bool).unwrap();
            let got = run(&b, s("recipe"), s("device"), human, &limits);
            let plan: Vec<Value> = got
                .plan
                .iter()
                .map(|r| {
                    Value::Array(vec![r.node.into(), r.by.as_str().into(), r.verified_by.into()])
                })
                .collect();
            let label = format!("{} on {} human={human}", s("recipe"), s("device"));
            assert_eq!(got.state(), s("state"), "{label}");
            let reason = got.refusal.as_ref().map(|r| r.reason.as_str());
            assert_eq!(reason, case.get("reason").and_then(Value::as_str), "{label}");
            let node = got.refusal.as_ref().and_then(|r| r.node.as_deref());
            assert_eq!(node, case.get("node").and_then(Value::as_str), "{label}");
            assert_eq!(Value::Array(plan), *case.get("plan").unwrap(), "{label}");
        }
    }
}

#[test]
fn builtin_default_pack_matches_the_standards_pack() {
    let Some(dir) = test_support::shared("standards/cookwala/profiles/core") else { return };
    let text = test_support::read(&dir.join("safety-limits.default.json"));
    let theirs = canonical_json::parse(text.as_bytes()).unwrap();
    let ours = default_pack();
    for key in ["core", "kind", "id", "version", "status"] {
        assert_eq!(ours.get(key), theirs.get(key), "{key}");
    }
    let a = ours.get("limits").and_then(Value::as_array).unwrap();
    let b = theirs.get("limits").and_then(Value::as_array).unwrap();
    assert_eq!(a.len(), 14);
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        for key in ["id", "kind", "action", "appliesTo", "min", "max", "unit", "holdFor"] {
            let (p, q) = (x.get(key), y.get(key));
            let same = match (p, q) {
                (Some(p), Some(q)) => p.loose_eq(q),
                (None, None) => true,
                _ => false,
            };
            assert!(same, "limit {:?} field {key}: {p:?} vs {q:?}", y.get("id"));
        }
    }
}

#[test]
fn the_dry_run_is_deterministic_and_now_matters_only_for_calibrations() {
    let Some(b) = bundle() else { return };
    let limits = default_pack();
    let first = run(&b, "koshari", "demo-hob-robot", true, &limits);
    for _ in 0..5 {
        assert_eq!(run(&b, "koshari", "demo-hob-robot", true, &limits), first);
    }
}
