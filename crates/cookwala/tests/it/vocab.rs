//! The compiled-in vocabulary against the standard's `vocab/` files: every id and number.

use std::collections::BTreeSet;

use canonical_json::Value;
use cookwala::vocab::{Band, Envelope, Op, Vocabulary};

fn load(name: &str) -> Option<Value> {
    let dir = test_support::shared("standards/cookwala/vocab")?;
    Some(canonical_json::parse(test_support::read(&dir.join(name)).as_bytes()).unwrap())
}

fn standard() -> Option<Vocabulary> {
    Some(Vocabulary::from_json(&load("ops.json")?, &load("units.json")?).unwrap())
}

#[test]
fn builtin_vocabulary_equals_the_standards_files() {
    let Some(std_vocab) = standard() else { return };
    let ours = Vocabulary::builtin();
    let ids = |v: &Vocabulary| v.ops().map(|o| o.id.clone()).collect::<BTreeSet<_>>();
    assert_eq!(ids(ours), ids(&std_vocab), "op ids differ");
    assert_eq!(ours.ops().count(), 57);
    for theirs in std_vocab.ops() {
        let mine = ours.op(&theirs.id).unwrap();
        assert_eq!(mine, theirs, "op {} differs", theirs.id);
    }
    assert_eq!(ours.ops().filter(|o| o.envelope.is_some()).count(), 32);
    assert_eq!(
        ours.ops().filter(|o| o.envelope.as_ref().is_some_and(|e| e.temp_c.is_some())).count(),
        27
    );
    let units = |v: &Vocabulary| v.units().cloned().collect::<Vec<_>>();
    assert_eq!(units(ours), units(&std_vocab));
    let heat = |v: &Vocabulary| v.heat_levels().cloned().collect::<Vec<_>>();
    assert_eq!(heat(ours), heat(&std_vocab));
    assert_eq!(ours.sensors(), std_vocab.sensors());
}

#[test]
fn every_number_in_the_ops_file_is_ours() {
    // A second, independent walk over the raw JSON, so a loader bug cannot hide a difference.
    let Some(ops) = load("ops.json") else { return };
    let ours = Vocabulary::builtin();
    for entry in ops.get("entries").and_then(Value::as_array).unwrap() {
        let id = entry.get("id").and_then(Value::as_str).unwrap();
        let mine = ours.op(id).unwrap();
        let env = entry.get("envelope").filter(|e| e.as_object().is_some_and(|m| !m.is_empty()));
        let Some(env) = env else {
            assert!(mine.envelope.is_none(), "{id}");
            continue;
        };
        let e = mine.envelope.as_ref().unwrap();
        for (key, band) in [("tempC", e.temp_c), ("pressureKPa", e.pressure_kpa)] {
            let raw = env.get(key).map(|b| Band {
                min: b.get("min").and_then(Value::as_f64).unwrap(),
                max: b.get("max").and_then(Value::as_f64).unwrap(),
            });
            assert_eq!(raw, band, "{id} {key}");
        }
        assert_eq!(env.get("unattended").and_then(Value::as_bool), Some(e.unattended), "{id}");
        let ladder: Vec<&str> = env
            .get("sensorLadder")
            .and_then(Value::as_array)
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        assert_eq!(ladder, e.ladder(), "{id}");
    }
}

#[test]
fn deprecated_entries_name_their_replacement() {
    let mut vocab = Vocabulary::builtin().clone();
    assert_eq!(vocab.deprecation("cw.op.simmer"), None);
    let old = Op {
        id: "x-acme.op.old_simmer".into(),
        classes: vec![],
        sensors: vec![],
        executable: true,
        envelope: Some(Envelope {
            medium: "water".into(),
            temp_c: Some(Band { min: 85.0, max: 96.0 }),
            pressure_kpa: None,
            agitation: None,
            lid: None,
            sensor_ladder: None,
            attention: None,
            unattended: true,
            hazards: vec![],
        }),
        deprecated: true,
        replaced_by: Some("cw.op.simmer".into()),
    };
    vocab.insert_op(old);
    assert_eq!(
        vocab.deprecation("x-acme.op.old_simmer").as_deref(),
        Some("x-acme.op.old_simmer is deprecated; use cw.op.simmer")
    );
    // The loader reads the marks from JSON.
    let ops = crate::json(
        r#"{"entries":[{"id":"cw.op.a","deprecated":true,"replacedBy":"cw.op.b"},{"id":"cw.op.b"}]}"#,
    );
    let units = crate::json(r#"{"entries":[]}"#);
    let loaded = Vocabulary::from_json(&ops, &units).unwrap();
    assert!(loaded.op("cw.op.a").unwrap().deprecated);
    assert_eq!(
        loaded.deprecation("cw.op.a").as_deref(),
        Some("cw.op.a is deprecated; use cw.op.b")
    );
    // Malformed files name the pointer.
    let bad = crate::json(r#"{"entries":[{"id":"cw.op.a","envelope":{"tempC":{"min":"x"}}}]}"#);
    let err = Vocabulary::from_json(&bad, &units).unwrap_err();
    assert_eq!(err.pointer, "/entries/0/envelope/tempC/min");
}

#[test]
fn validate_and_dry_run_honour_deprecation() {
    let ops = crate::json(
        r#"{"entries":[
          {"id":"cw.op.old_simmer","deprecated":true,"replacedBy":"cw.op.simmer",
           "envelope":{"medium":"water","tempC":{"min":85,"max":96},"sensorLadder":["time"],"unattended":true}},
          {"id":"cw.op.simmer","envelope":{"medium":"water","tempC":{"min":85,"max":96},"sensorLadder":["time"],"unattended":true}}]}"#,
    );
    let vocab = Vocabulary::from_json(&ops, &crate::json(r#"{"entries":[]}"#)).unwrap();
    let recipe = crate::json(
        r#"{"process":{"nodes":[{"id":"n1","op":"cw.op.old_simmer","params":{"tempC":99}}]}}"#,
    );
    let caps = crate::json(r#"{"capabilities":{"ops":[{"op":"cw.op.old_simmer"}]}}"#);
    let options = cookwala::dryrun::Options {
        human_present: false,
        allow_model: true,
        limits: None,
        now: cookwala::time::parse_timestamp("2026-10-05T00:00:00Z").unwrap(),
    };
    let out = cookwala::dryrun::dry_run(&vocab, &recipe, &caps, options).unwrap();
    assert_eq!(out.warnings, ["node n1: cw.op.old_simmer is deprecated; use cw.op.simmer"]);
    // The old id keeps its own meaning: its envelope still refuses 99 °C.
    assert_eq!(out.refusal.unwrap().reason.as_str(), "envelope_out_of_range");
    let report = cookwala::documents::validate(&recipe, Some("Recipe"), &vocab);
    let w: Vec<&str> = report.warnings.iter().map(|w| w.message.as_str()).collect();
    assert!(w.contains(&"cw.op.old_simmer is deprecated; use cw.op.simmer"), "{w:?}");
}
