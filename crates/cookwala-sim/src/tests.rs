#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

#[test]
fn rfc3339_formats_milliseconds() {
    assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(rfc3339_ms(1_767_225_600_250), "2026-01-01T00:00:00.250Z");
    assert_eq!(rfc3339_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
}

#[test]
fn durations_parse() {
    assert_eq!(steps::duration_ms("PT15M"), Some(900_000));
    assert_eq!(steps::duration_ms("PT1H30M"), Some(5_400_000));
    assert_eq!(steps::duration_ms("PT0.5S"), Some(500));
    assert_eq!(steps::duration_ms("P1D"), Some(86_400_000));
    assert_eq!(steps::duration_ms("15M"), None);
    assert_eq!(steps::duration_ms("PT5X"), None);
}

#[test]
fn rng_is_seeded_and_spread() {
    let mut a = Rng::new(7);
    let mut b = Rng::new(7);
    let mut c = Rng::new(8);
    let xs: Vec<u64> = (0..5).map(|_| a.next_u64()).collect();
    let ys: Vec<u64> = (0..5).map(|_| b.next_u64()).collect();
    let zs: Vec<u64> = (0..5).map(|_| c.next_u64()).collect();
    assert_eq!(xs, ys);
    assert_ne!(xs, zs);
    let mut r = Rng::new(0);
    let n = 20_000;
    let samples: Vec<f64> = (0..n).map(|_| r.normal(1.0)).collect();
    let mean = samples.iter().sum::<f64>() / f64::from(n);
    let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / f64::from(n);
    assert!(mean.abs() < 0.05, "{mean}");
    assert!((var - 1.0).abs() < 0.05, "{var}");
}

#[test]
fn water_clamps_at_boiling_and_evaporates() {
    let mut p = physics::Plant::new(physics::PlantSpec::default());
    for _ in 0..20_000 {
        p.step(0.1, 2000.0, 0.0);
    }
    assert!((p.contents - 100.0).abs() < 1e-9);
    assert!(p.mass_kg < 1.5);
}

#[test]
fn a_probe_in_the_pot_reads_the_pot_and_the_oven_does_not_reach_it() {
    let mut p = physics::Plant::new(physics::PlantSpec::default());
    p.core_in_contents = true;
    // Ten minutes of a simmering pot: the probe follows the soup, whatever the oven does.
    for _ in 0..6_000 {
        p.step(0.1, 900.0, 1e9);
    }
    assert!(p.contents > 80.0, "{}", p.contents);
    // It lags a heating pot by about a minute of its rise, never more.
    assert!(p.core > 70.0 && p.core <= p.contents, "core {} contents {}", p.core, p.contents);
    // The oven air around it is far hotter; the probe in the pot does not see it.
    assert!(p.oven > p.core + 50.0, "oven {} core {}", p.oven, p.core);
}

#[test]
fn oven_reaches_baking_heat_with_limited_power() {
    let mut p = physics::Plant::new(physics::PlantSpec::default());
    for _ in 0..6_000 {
        p.step(0.1, 0.0, 1e9);
    }
    assert!(p.oven > 150.0 && p.oven < 400.0, "{}", p.oven);
    assert!(p.oven_w <= p.spec.oven_power_w);
    assert!(p.core <= 99.0);
}

#[test]
fn builtins_parse() {
    for e in builtin::RECIPES {
        assert!(builtin::recipe(e.id).is_some(), "{}", e.id);
        assert!(builtin::device(e.device).is_some(), "{}", e.device);
    }
    assert!(builtin::device(builtin::DEFAULT_DEVICE).is_some());
}

#[test]
fn simulation_can_move_between_threads() {
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<Simulation>();
}

#[test]
fn every_limit_of_the_default_pack_has_a_place() {
    let parsed = limits::parse(&cookwala::limits::default_pack()).unwrap();
    let ids = |v: Vec<&str>| v.into_iter().map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        parsed.max.iter().map(|l| l.id.clone()).collect::<Vec<_>>(),
        ids(vec!["oil.max_temp", "pan.max_surface"])
    );
    assert_eq!(
        parsed.core.iter().map(|l| l.id.clone()).collect::<Vec<_>>(),
        ids(vec!["core.poultry", "core.ground_meat", "core.egg_dishes", "core.reheat"])
    );
    let rules: Vec<_> = parsed.time_temp.iter().map(|l| (l.id.as_str(), l.rule)).collect();
    assert_eq!(
        rules,
        vec![
            ("hold.hot", limits::TimeTempRule::Below { min: 60.0, hold_ms: 7_200_000 }),
            ("cool.two_stage", limits::TimeTempRule::TwoStageCooling),
        ]
    );
    assert_eq!(parsed.pressure.len(), 1);
    assert_eq!(parsed.stop.len(), 1);
    assert_eq!(parsed.stop[0].max_ms, Some(500.0));
    // The standard's own copy of the pack sorts the same way.
    let Some(dir) = test_support::shared("standards/cookwala/profiles/core") else { return };
    let text = std::fs::read(dir.join("safety-limits.default.json")).unwrap();
    let theirs = limits::parse(&canonical_json::parse(&text).unwrap()).unwrap();
    assert_eq!(theirs.max.len() + theirs.core.len() + theirs.time_temp.len(), 8);
    assert_eq!(theirs.pressure.len() + theirs.stop.len(), 2);
}

#[test]
fn food_classes_are_read_from_a_string_or_a_list() {
    let one = canonical_json::parse(br#"{"x-foodClass":"poultry"}"#).unwrap();
    let two = canonical_json::parse(br#"{"x-foodClass":["egg_dish","leftovers"]}"#).unwrap();
    assert_eq!(limits::food_classes(Some(&one)), vec!["poultry".to_owned()]);
    assert_eq!(limits::food_classes(Some(&two)).len(), 2);
    assert!(limits::food_classes(None).is_empty());
}
