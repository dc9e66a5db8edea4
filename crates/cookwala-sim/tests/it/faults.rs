use cookwala::execution::ExecutionState as S;
use cookwala_sim::physics::Body;
use cookwala_sim::{EventKind, Fault, FaultKind, Priority, Simulation};
use proptest::prelude::*;

use crate::{config, run};

fn with_fault(id: &str, kind: FaultKind) -> Simulation {
    let mut c = config(id);
    c.faults.push(Fault { kind, node: None });
    Simulation::new(c).unwrap()
}

#[test]
fn overheat_on_deep_fry_trips_the_oil_limit() {
    let mut sim = with_fault("chickpea-fritters", FaultKind::Overheat);
    let events = run(&mut sim, 3_600_000);
    assert_eq!(sim.state(), S::Stopped);
    assert!(!sim.heat_on());
    let safety: Vec<_> =
        events.iter().filter(|e| matches!(e.kind, EventKind::Safety { .. })).collect();
    assert_eq!(safety.len(), 1);
    let e = safety[0];
    assert_eq!(e.priority(), Priority::Safety);
    assert_eq!(e.event_type(), "cookwala.safety.limit_fired");
    assert_eq!(e.data().get("action").unwrap().as_str(), Some("heat_off_all"));
    assert_eq!(e.data().get("x-limit").unwrap().as_str(), Some("oil.max_temp"));
    // Heat was cut in the same tick the limit fired.
    let cut = events.iter().find(|x| matches!(x.kind, EventKind::HeatCut { .. })).unwrap();
    assert_eq!(cut.at_ms, e.at_ms);
    // The oil never got far past the limit.
    let oil = sim.trace().sensors.iter().position(|s| s == "cw.sense.oil_temp").unwrap();
    let max =
        sim.trace().points.iter().filter(|p| p.series == oil).map(|p| p.value).fold(0.0, f64::max);
    assert!(max < 205.0, "{max}");
    let log = sim.log().unwrap();
    assert_eq!(log.get("outcome").unwrap().as_str(), Some("aborted_safe"));
    assert_eq!(sim.incidents().len(), 1);
    let inc = &sim.incidents()[0];
    let report = cookwala::documents::validate(
        inc,
        Some("IncidentReport"),
        cookwala::vocab::Vocabulary::builtin(),
    );
    assert!(report.is_valid(), "{report:?}");
}

#[test]
fn overheat_in_water_is_caught_by_the_runaway_guard() {
    let mut sim = with_fault("red-lentil-soup", FaultKind::Overheat);
    run(&mut sim, 3_600_000);
    assert_eq!(sim.state(), S::Stopped);
    let log = sim.log().unwrap();
    let text = format!("{log:?}");
    assert!(text.contains("x-sim.heater_runaway"), "{text}");
    assert!(!sim.heat_on());
}

#[test]
fn sensor_fault_on_deep_fry_fails_safe() {
    let mut sim = with_fault("chickpea-fritters", FaultKind::Sensor);
    run(&mut sim, 3_600_000);
    assert_eq!(sim.state(), S::Failed);
    assert!(!sim.heat_on());
    let log = sim.log().unwrap();
    assert_eq!(log.get("outcome").unwrap().as_str(), Some("failed"));
    assert!(format!("{log:?}").contains("x-sim.sensor_fault"));
}

#[test]
fn sensor_fault_on_boil_falls_back_and_completes() {
    let mut sim = with_fault("red-lentil-soup", FaultKind::Sensor);
    run(&mut sim, 4 * 3_600_000);
    assert_eq!(sim.state(), S::Completed, "{:?}", sim.status());
    let log = sim.log().unwrap();
    let boil = &log.get("steps").unwrap().as_array().unwrap()[1];
    let detail = boil.pointer("/deviation/detail").unwrap().as_str().unwrap();
    assert!(detail.contains("stopped reporting"), "{detail}");
}

#[test]
fn timeout_asks_a_person() {
    let mut sim = with_fault("red-lentil-soup", FaultKind::Timeout);
    run(&mut sim, 3_600_000);
    assert_eq!(sim.state(), S::NeedsHuman);
    assert!(!sim.heat_on(), "heat is off while waiting");
    assert!(
        sim.status().pointer("/humanNeeded/why").unwrap().as_str().unwrap().contains("maxTime")
    );
    sim.resume().unwrap();
    run(&mut sim, 4 * 3_600_000);
    assert_eq!(sim.state(), S::Completed);
    let log = sim.log().unwrap();
    assert_eq!(log.pointer("/steps/1/deviation/kind").unwrap().as_str(), Some("extended_time"));
}

#[test]
fn oven_core_probe_reads() {
    let mut sim = Simulation::new(config("oat-honey-loaf")).unwrap();
    run(&mut sim, 3 * 3_600_000);
    assert_eq!(sim.state(), S::Completed);
    assert!(sim.trace().sensors.contains(&"cw.sense.core_temp".to_owned()));
    assert!(sim.true_temp(Body::Core) > 80.0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    #[test]
    fn faults_and_stops_never_leave_heat_on(
        recipe in 0usize..cookwala_sim::builtin::RECIPES.len(),
        fault in proptest::option::of(0u8..3),
        stop_at in proptest::option::of(0u64..3_000_000),
        pause_at in proptest::option::of(0u64..3_000_000),
        seed in any::<u64>(),
    ) {
        let example = &cookwala_sim::builtin::RECIPES[recipe];
        let mut c = config(example.id);
        c.seed = seed;
        if let Some(f) = fault {
            let kind = [FaultKind::Sensor, FaultKind::Overheat, FaultKind::Timeout][usize::from(f)];
            c.faults.push(Fault { kind, node: None });
        }
        let mut sim = Simulation::new(c).unwrap();
        let mut paused = false;
        let mut events = Vec::new();
        while !sim.is_final() && sim.now_ms() < 6 * 3_600_000 {
            events.extend(sim.advance(5_000));
            if stop_at.is_some_and(|t| sim.now_ms() >= t) {
                events.extend(sim.stop("property test"));
            }
            if !paused
                && pause_at.is_some_and(|t| sim.now_ms() >= t)
                && let Ok(e) = sim.pause()
            {
                events.extend(e);
                paused = true;
                events.extend(sim.advance(20_000));
                if let Ok(e) = sim.resume() {
                    events.extend(e);
                }
            }
            if sim.state() == S::NeedsHuman {
                events.extend(sim.confirm_human().unwrap());
            }
        }
        let mut last = 0;
        for e in &events {
            prop_assert!(e.seq >= last);
            if let EventKind::State { from, to, .. } = &e.kind {
                prop_assert!(cookwala::execution::transition_allowed(*from, *to));
                prop_assert!(e.seq > last);
            }
            last = e.seq;
        }
        prop_assert!(sim.is_final());
        prop_assert!(!sim.heat_on());
        prop_assert!(!sim.motion_on());
        prop_assert!(sim.log().is_some());
    }
}
