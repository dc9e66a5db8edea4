//! The dry run against the upstream sample bundle: 4 recipes × 4 devices × humanPresent.

use canonical_json::Value;
use cookwala::dryrun::{DryRun, Options, RefusalReason, check_node_params, dry_run};
use cookwala::limits::default_pack;
use cookwala::time::parse_timestamp;
use cookwala::vocab::Vocabulary;
use proptest::prelude::*;

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

/// The reference's walk over the pack for one step (its `limit_fires` in pack order), kept here
/// as the model the indexed pack is checked against. The one departure is the library's: `ops`
/// that is not an array names every op.
fn walk(pack: &Value, op: &str, temps: &[(&str, i64)], pressure: Option<i64>) -> Option<String> {
    let vocab = Vocabulary::builtin();
    let medium = vocab.op(op).and_then(|o| o.envelope.as_ref()).map(|e| e.medium.as_str());
    let num = |v: Option<&Value>| v.and_then(Value::as_f64);
    for lim in pack.get("limits")?.as_array()? {
        let applies = lim.get("appliesTo");
        let truthy = |v: &&Value| cookwala::envelope::truthy(v);
        let ops = applies.and_then(|a| a.get("ops")).filter(truthy);
        let med = applies.and_then(|a| a.get("medium")).filter(truthy);
        if let Some(Value::Array(items)) = ops
            && !items.iter().any(|o| o.as_str() == Some(op))
        {
            continue;
        }
        if let Some(m) = med
            && Some(m.as_str().unwrap_or("\u{0}")) != medium
        {
            continue;
        }
        if ops.is_none() && med.is_none() {
            continue;
        }
        let id = lim.get("id").and_then(Value::as_str).unwrap_or("<unnamed>");
        let kind = lim.get("kind").and_then(Value::as_str);
        let unit = lim.get("unit").and_then(Value::as_str);
        if kind == Some("max_temp") && unit == Some("degC") {
            for &(key, t) in temps {
                match num(lim.get("max")) {
                    Some(m) if t as f64 <= m => {}
                    Some(m) => {
                        return Some(format!("{key} {t} °C exceeds local limit {id} ({m} °C)"));
                    }
                    None => return Some(format!("local limit {id} has no numeric max; refusing")),
                }
            }
        }
        if kind == Some("pressure")
            && let (Some(pk), Some(max)) = (pressure, lim.get("max"))
        {
            match num(Some(max)) {
                Some(m) if pk as f64 <= m => {}
                Some(m) => {
                    return Some(format!("pressure {pk} kPa exceeds local limit {id} ({m} kPa)"));
                }
                None => return Some(format!("local limit {id} has no numeric max; refusing")),
            }
        }
    }
    None
}

const OPS: [&str; 8] = [
    "cw.op.fry",
    "cw.op.deep_fry",
    "cw.op.boil",
    "cw.op.heat",
    "cw.op.pressure_cook",
    "cw.op.cut",
    "x-op.a",
    "x-op.b",
];

fn arb_limit() -> impl Strategy<Value = Value> {
    let kind = prop_oneof![Just("max_temp"), Just("pressure"), Just("min_core_temp")];
    let unit = prop_oneof![Just(Some("degC")), Just(Some("kPa")), Just(None)];
    let max = prop_oneof![
        Just(None),
        (0i64..16).prop_map(|m| Some(Value::from(m * 25))),
        Just(Some(Value::from("hot"))),
    ];
    let op = (0..OPS.len()).prop_map(|i| Value::from(OPS[i]));
    let ops = prop_oneof![
        Just(None),
        Just(Some(Value::Array(vec![]))),
        proptest::collection::vec(op, 1..4).prop_map(|v| Some(Value::Array(v))),
        Just(Some(Value::Array(vec![Value::from(5i64), Value::from("cw.op.fry")]))),
        Just(Some(Value::from("cw.op.fry"))),
        Just(Some(Value::from(5i64))),
    ];
    let medium = prop_oneof![
        Just(None),
        Just(Some(Value::from(""))),
        Just(Some(Value::from("oil"))),
        Just(Some(Value::from("water"))),
        Just(Some(Value::from("pan_surface"))),
        Just(Some(Value::from("pressure"))),
        Just(Some(Value::from(7i64))),
    ];
    (0u32..1000, kind, unit, max, ops, medium).prop_map(|(id, kind, unit, max, ops, medium)| {
        let mut lim = canonical_json::Map::new();
        lim.insert("id".into(), Value::from(format!("l{id}")));
        lim.insert("kind".into(), Value::from(kind));
        if let Some(u) = unit {
            lim.insert("unit".into(), Value::from(u));
        }
        if let Some(m) = max {
            lim.insert("max".into(), m);
        }
        let mut applies = canonical_json::Map::new();
        if let Some(o) = ops {
            applies.insert("ops".into(), o);
        }
        if let Some(m) = medium {
            applies.insert("medium".into(), m);
        }
        lim.insert("appliesTo".into(), Value::Object(applies));
        Value::Object(lim)
    })
}

proptest! {
    /// The indexed pack finds the limit the walk stops at, with the walk's text, for every
    /// pack shape the schema allows and several it does not.
    #[test]
    fn the_indexed_pack_agrees_with_the_walk(
        limits in proptest::collection::vec(arb_limit(), 0..16),
        op in 0..OPS.len(),
        temp in proptest::option::of(0i64..15),
        oil in proptest::option::of(0i64..15),
        pressure in proptest::option::of(0i64..4),
    ) {
        // Steps on the limits' own thresholds (multiples of 25), where `>` and `>=` part.
        let (temp, oil) = (temp.map(|t| t * 25), oil.map(|t| t * 25));
        let pressure = pressure.map(|p| p * 50);
        let op = OPS[op];
        let mut params = canonical_json::Map::new();
        let mut temps = Vec::new();
        if let Some(t) = temp {
            params.insert("tempC".into(), Value::from(t));
            temps.push(("tempC", t));
        }
        if let Some(t) = oil {
            params.insert("oilTempC".into(), Value::from(t));
            temps.push(("oilTempC", t));
        }
        if let Some(p) = pressure {
            params.insert("pressureKPa".into(), Value::from(p));
        }
        let mut node = canonical_json::Map::new();
        node.insert("id".into(), Value::from("n0"));
        node.insert("op".into(), Value::from(op));
        node.insert("params".into(), Value::Object(params));
        let node = Value::Object(node);
        let mut pack = canonical_json::Map::new();
        pack.insert("limits".into(), Value::Array(limits));
        let pack = Value::Object(pack);
        let got = check_node_params(Vocabulary::builtin(), op, &node, Some(&pack), 0).unwrap();
        match got {
            // The envelope speaks first; the limits are not reached.
            Some((RefusalReason::EnvelopeOutOfRange, _)) => {}
            Some((RefusalReason::SafetyLimit, detail)) => {
                prop_assert_eq!(Some(detail), walk(&pack, op, &temps, pressure));
            }
            Some((other, detail)) => prop_assert!(false, "{other:?}: {detail}"),
            None => prop_assert_eq!(None, walk(&pack, op, &temps, pressure)),
        }
    }
}

/// `doc` with only its top-level members named in `keep` (a non-object stays as it is).
fn pruned(doc: &Value, keep: &[&str]) -> Value {
    match doc {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| keep.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[test]
fn a_dry_run_reads_only_the_members_it_declares() {
    use cookwala::dryrun::{CAPABILITIES_MEMBERS_READ, RECIPE_MEMBERS_READ};
    // Every (recipe, capabilities) pair the bundle and the standard's dryrun vectors hold, with
    // and without a person present: the result on the pruned documents is the same result.
    let mut pairs: Vec<(Value, Value, Value)> = Vec::new();
    let mut now = None;
    if let Some(b) = bundle() {
        now = b.get("now").cloned();
        let recipes = b.get("recipes").and_then(Value::as_object).unwrap();
        let devices = b.get("devices").and_then(Value::as_object).unwrap();
        for r in recipes.values() {
            for d in devices.values() {
                pairs.push((r.clone(), d.clone(), b.get("safetyLimits").unwrap().clone()));
            }
        }
    }
    if let Some(dir) = test_support::shared("standards/cookwala/conformance") {
        let text = test_support::read(&dir.join("dryrun.json"));
        for case in canonical_json::parse(text.as_bytes()).unwrap().as_array().unwrap() {
            let input = case.get("input").unwrap();
            let r = input.get("recipe").unwrap().clone();
            let d = input.get("capabilities").unwrap().clone();
            pairs.push((r, d, input.get("limits").cloned().unwrap_or_else(default_pack)));
        }
    }
    let now =
        parse_timestamp(now.as_ref().and_then(Value::as_str).unwrap_or("2026-01-01T00:00:00Z"))
            .unwrap();
    let mut compared = 0;
    for (recipe, caps, limits) in &pairs {
        for human_present in [true, false] {
            let options = Options { human_present, allow_model: true, limits: Some(limits), now };
            let full = dry_run(Vocabulary::builtin(), recipe, caps, options);
            let (r, d) =
                (pruned(recipe, RECIPE_MEMBERS_READ), pruned(caps, CAPABILITIES_MEMBERS_READ));
            let options = Options { human_present, allow_model: true, limits: Some(limits), now };
            let lean = dry_run(Vocabulary::builtin(), &r, &d, options);
            let summary = |x: &Result<DryRun<'_>, _>| match x {
                Ok(run) => run.summary(),
                Err(e) => Value::String(format!("{e:?}")),
            };
            assert_eq!(summary(&full), summary(&lean), "{recipe:?} on {caps:?}");
            if let (Ok(a), Ok(b)) = (&full, &lean) {
                assert_eq!(a.warnings, b.warnings);
            }
            compared += 1;
        }
    }
    if test_support::in_ci() {
        assert!(compared >= 2 * (16 + 7), "only {compared} cases compared");
    }
}
