//! Worst shapes at the documented maxima (issue 22): a recipe and a device each the size of
//! the hub's 1 MiB body. Planning a long chain searched the recipe's nodes once per plan row,
//! and a probe listed thousands of times was read and searched per copy every tick: quadratic
//! work that CI's time limit catches (no timed assertion here).

use cookwala_sim::{SimConfig, Simulation, builtin};

use crate::config;

const BODY_LIMIT: usize = 1 << 20;

#[test]
fn a_body_limit_chain_of_steps_is_planned_once() {
    // A chain of ops no device performs but a person may: every node becomes a plan row.
    let n = BODY_LIMIT / 64;
    let nodes: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"id":"node-{i:06}","op":"x-op.stir","assignableTo":"human"}}"#))
        .collect();
    let recipe = canonical_json::parse(
        format!(
            r#"{{"core":"0.2.1","kind":"Recipe","id":"chain","revision":1,"process":{{"nodes":[{}]}}}}"#,
            nodes.join(",")
        )
        .as_bytes(),
    )
    .unwrap();
    let example = &builtin::RECIPES[0];
    let mut c = SimConfig::new(recipe, builtin::device(example.device).unwrap());
    c.human_present = true;
    let sim = Simulation::new(c).unwrap();
    assert!(sim.refusal().is_none(), "{:?}", sim.refusal());
    assert_eq!(sim.plan().len(), n);
}

#[test]
fn a_probe_listed_a_body_limit_of_times_counts_once() {
    let example = &builtin::RECIPES[0];
    let mut c = config(example.id);
    let mut device = c.device.clone();
    let probe = canonical_json::parse(
        br#"{"sensor":"cw.sense.pan_surface_temp","accuracy":1.0,"calibratedAt":"2026-01-01T00:00:00Z"}"#,
    )
    .unwrap();
    let copies = BODY_LIMIT / 96;
    if let Some(canonical_json::Value::Object(caps)) =
        device.as_object_mut().and_then(|d| d.get_mut("capabilities"))
    {
        caps.insert("sensors".into(), canonical_json::Value::Array(vec![probe; copies]));
    }
    c.device = device;
    let mut sim = Simulation::new(c).unwrap();
    // A few minutes of cooking: each tick reads the probe once, not once per copy.
    let events = crate::run(&mut sim, 120_000);
    let readings = events.iter().filter(|e| format!("{e:?}").contains("Reading")).count();
    assert!(readings <= 240, "{readings} readings in 120 simulated seconds");
    assert!(sim.trace().sensors.len() <= 1);
}
