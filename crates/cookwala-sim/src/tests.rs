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
