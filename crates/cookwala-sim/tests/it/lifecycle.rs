use cookwala::execution::{ExecutionState as S, transition_allowed};
use cookwala_sim::{EventKind, SimConfig, Simulation, builtin};

use crate::{config, run, strings};

#[test]
fn every_builtin_recipe_completes_on_its_device() {
    for example in builtin::RECIPES {
        let mut sim = Simulation::new(config(example.id)).unwrap();
        assert_eq!(sim.state(), S::Accepted, "{}", example.id);
        run(&mut sim, 4 * 3_600_000);
        assert_eq!(sim.state(), S::Completed, "{}: {:?}", example.id, sim.status());
        let log = sim.log().unwrap();
        assert_eq!(log.get("outcome").unwrap().as_str(), Some("served"), "{}", example.id);
        for step in log.get("steps").unwrap().as_array().unwrap() {
            assert_eq!(
                step.get("envelopeOk").unwrap().as_bool(),
                Some(true),
                "{}: {step:?}",
                example.id
            );
        }
        assert!(!sim.heat_on());
        // No limit of the pack fires on our own recipes.
        assert!(
            log.get("safetyEvents").unwrap().as_array().unwrap().is_empty(),
            "{}: {log:?}",
            example.id
        );
        assert!(sim.incidents().is_empty(), "{}", example.id);
        let report = cookwala::documents::validate(
            &log,
            Some("ExecutionLog"),
            cookwala::vocab::Vocabulary::builtin(),
        );
        assert!(report.is_valid(), "{}: {report:?}", example.id);
        let status = sim.status();
        let report = cookwala::documents::validate(
            &status,
            Some("ExecutionStatus"),
            cookwala::vocab::Vocabulary::builtin(),
        );
        assert!(report.is_valid(), "{}: {report:?}", example.id);
    }
}

#[test]
fn transitions_are_legal_and_seq_strictly_increases() {
    let mut sim = Simulation::new(config("red-lentil-soup")).unwrap();
    let events = run(&mut sim, 3_600_000);
    let mut last_seq = 0;
    let mut states = vec![S::Accepted];
    for e in &events {
        assert!(e.seq >= last_seq);
        if let EventKind::State { from, to, .. } = &e.kind {
            assert!(transition_allowed(*from, *to), "{from:?} -> {to:?}");
            assert!(e.seq > last_seq);
            states.push(*to);
        }
        if !matches!(e.kind, EventKind::Reading { .. }) {
            assert!(e.seq > last_seq || last_seq == 0, "{e:?}");
        }
        last_seq = e.seq;
    }
    assert_eq!(states, vec![S::Accepted, S::Preparing, S::Running, S::Completed]);
    assert_eq!(sim.seq(), last_seq);
    assert_eq!(sim.status().get("seq").unwrap().as_i64(), Some(i64::try_from(sim.seq()).unwrap()));
}

#[test]
fn log_only_after_final_and_without_personal_data() {
    let mut sim = Simulation::new(config("garlic-greens")).unwrap();
    assert!(sim.log().is_none());
    sim.advance(60_000);
    assert!(!sim.is_final());
    assert!(sim.log().is_none());
    run(&mut sim, 3_600_000);
    let log = sim.log().unwrap();
    assert_eq!(log.pointer("/consent/dataset").unwrap().as_str(), Some("none"));
    assert_eq!(log.pointer("/privacy/personalData").unwrap().as_str(), Some("none"));
    let mut all = Vec::new();
    strings(&log, &mut all);
    for s in &all {
        for bad in ["requestedBy", "grantedBy", "principal", "email", "name"] {
            assert!(!s.contains(bad), "{s}");
        }
    }
}

#[test]
fn knife_step_goes_to_needs_human_and_resumes_on_confirmation() {
    // The hob robot has no knife: with a person present the dry run gives the cut to them.
    let mut c = SimConfig::new(
        builtin::recipe("cucumber-herb-salad").unwrap(),
        builtin::device("sim-hob-robot").unwrap(),
    );
    c.human_present = true;
    let mut sim = Simulation::new(c).unwrap();
    assert!(sim.plan().iter().any(|p| p.by_human && p.op == "cw.op.cut"));
    run(&mut sim, 600_000);
    assert_eq!(sim.state(), S::NeedsHuman);
    let status = sim.status();
    assert!(status.pointer("/humanNeeded/why").unwrap().as_str().unwrap().contains("cw.op.cut"));
    assert!(!sim.motion_on());
    // Waiting does not change the status, so If-Match stays valid.
    let seq = sim.seq();
    sim.advance(120_000);
    assert_eq!(sim.seq(), seq);
    assert!(sim.pause().is_err());
    sim.confirm_human().unwrap();
    run(&mut sim, 3_600_000);
    assert_eq!(sim.state(), S::Completed);
    let log = sim.log().unwrap();
    let hi = log.get("humanInterventions").unwrap().as_array().unwrap();
    assert_eq!(hi.len(), 1);
    assert_eq!(log.pointer("/steps/1/verifiedBy").unwrap().as_str(), Some("human"));
}

#[test]
fn a_person_step_stopped_before_confirmation_is_not_logged_as_performed() {
    let mut c = SimConfig::new(
        builtin::recipe("cucumber-herb-salad").unwrap(),
        builtin::device("sim-hob-robot").unwrap(),
    );
    c.human_present = true;
    let mut sim = Simulation::new(c).unwrap();
    run(&mut sim, 600_000);
    assert_eq!(sim.state(), S::NeedsHuman);
    let status = sim.status();
    // The reference hub's words, and the device's part of the step is done.
    assert_eq!(
        status.pointer("/humanNeeded/why").unwrap().as_str(),
        Some("a person performs cw.op.cut")
    );
    assert_eq!(status.pointer("/step/progress").unwrap().as_f64(), Some(1.0));
    let ran = status.pointer("/step/node").unwrap().as_str().unwrap().to_owned();
    sim.stop("enough");
    let until = sim.now_ms() + 60_000;
    run(&mut sim, until);
    assert_eq!(sim.state(), S::Stopped);
    let log = sim.log().unwrap();
    let steps = log.pointer("/steps").unwrap().as_array().unwrap();
    assert!(
        steps.iter().all(|s| s.pointer("/node").unwrap().as_str() != Some(ran.as_str())),
        "{log:?}"
    );
    let details = log.pointer("/x-sim/steps").unwrap().as_array().unwrap();
    let last = details.last().unwrap();
    assert_eq!(last.pointer("/node").unwrap().as_str(), Some(ran.as_str()));
    assert_eq!(last.pointer("/performed").unwrap().as_bool(), Some(false));
    assert_eq!(log.pointer("/safetyEvents").unwrap().as_array().map(<[_]>::len), Some(0));
}

#[test]
fn knife_step_without_a_person_is_refused() {
    let mut c = config("cucumber-herb-salad");
    c.human_present = false;
    let mut sim = Simulation::new(c).unwrap();
    assert_eq!(sim.state(), S::Refused);
    assert!(sim.is_final());
    assert_eq!(
        sim.status().pointer("/refusal/reason").unwrap().as_str(),
        Some("needs_human_present")
    );
    assert!(sim.advance(10_000).is_empty());
    assert_eq!(sim.log().unwrap().get("outcome").unwrap().as_str(), Some("refused"));
}

#[test]
fn stop_mid_run_cuts_heat_and_motion_in_time() {
    let mut sim = Simulation::new(config("chickpea-fritters")).unwrap();
    sim.advance(200_000);
    assert_eq!(sim.state(), S::Running);
    assert!(sim.heat_on());
    let requested = sim.now_ms();
    let events = sim.stop("user pressed stop");
    assert_eq!(sim.state(), S::Stopping);
    assert!(matches!(events[0].kind, EventKind::State { to: S::Stopping, .. }));
    assert!(sim.resume().is_err());
    run(&mut sim, 400_000);
    assert_eq!(sim.state(), S::Stopped);
    assert!(!sim.heat_on());
    let log = sim.log().unwrap();
    assert_eq!(log.get("outcome").unwrap().as_str(), Some("aborted_safe"));
    // A stop asked for is not a limit that fired (the reference hub lists none either).
    assert_eq!(log.pointer("/safetyEvents").unwrap().as_array().map(<[_]>::len), Some(0));
    // The step the stop interrupted ran on the device: it is logged, with the stop as deviation.
    let last = log.pointer("/steps").unwrap().as_array().unwrap().last().unwrap();
    assert_eq!(last.pointer("/deviation/kind").and_then(|v| v.as_str()), Some("other"));
    let stop = log.pointer("/x-sim/stop").unwrap();
    assert_eq!(stop.get("reason").unwrap().as_str(), Some("requested"));
    assert!(!format!("{log:?}").contains("user pressed stop"), "caller text stays out of the log");
    assert_eq!(
        stop.get("requestedAtMs").unwrap().as_i64(),
        Some(i64::try_from(requested).unwrap())
    );
    assert!(stop.get("heatCutAfterMs").unwrap().as_i64().unwrap() <= 1_000);
    assert!(stop.get("motionStoppedAfterMs").unwrap().as_i64().unwrap() <= 500);
    assert!(stop.get("heatCutAt").is_some() && stop.get("motionStoppedAt").is_some());
}

#[test]
fn stop_before_start_and_after_end() {
    let mut sim = Simulation::new(config("red-lentil-soup")).unwrap();
    sim.stop("changed my mind");
    assert_eq!(sim.state(), S::Stopped);
    assert_eq!(sim.seq(), 1);
    let seq = sim.seq();
    assert!(sim.stop("again").is_empty());
    assert_eq!(sim.seq(), seq);
    assert!(sim.resume().is_err());
    assert!(sim.confirm_human().is_err());
}

#[test]
fn pause_and_resume() {
    let mut sim = Simulation::new(config("red-lentil-soup")).unwrap();
    sim.advance(30_000);
    sim.pause().unwrap();
    assert_eq!(sim.state(), S::Paused);
    assert!(sim.pause().is_err());
    let seq = sim.seq();
    sim.advance(60_000);
    assert_eq!(sim.seq(), seq, "a paused execution publishes nothing");
    sim.resume().unwrap();
    assert_eq!(sim.state(), S::Running);
    run(&mut sim, 4 * 3_600_000);
    assert_eq!(sim.state(), S::Completed);
}

#[test]
fn same_seed_same_trace_and_different_seed_differs() {
    let go = |seed| {
        let mut c = config("red-lentil-soup");
        c.seed = seed;
        let mut sim = Simulation::new(c).unwrap();
        let events = run(&mut sim, 3_600_000);
        (sim.trace().clone(), sim.log(), events)
    };
    let a = go(42);
    let b = go(42);
    let c = go(43);
    assert_eq!(a.0, b.0);
    assert_eq!(a.1, b.1);
    assert_eq!(a.2, b.2);
    assert_ne!(a.0.points, c.0.points);
}

#[test]
fn sixty_minute_recipe_simulates() {
    let mut sim = Simulation::new(config("vegetable-stock")).unwrap();
    run(&mut sim, 4 * 3_600_000);
    assert_eq!(sim.state(), S::Completed);
    assert!(sim.now_ms() > 3_600_000);
    let simmer = sim.trace().steps.iter().find(|s| s.node == "simmer").unwrap();
    assert!(simmer.end_ms.unwrap() - simmer.start_ms >= 3_600_000);
}

#[test]
fn controller_holds_the_target_inside_the_band() {
    let mut sim = Simulation::new(config("chickpea-fritters")).unwrap();
    run(&mut sim, 3_600_000);
    let log = sim.log().unwrap();
    let fry = log.pointer("/x-sim/steps/1").unwrap();
    assert_eq!(fry.get("check").unwrap().as_str(), Some("ok"), "{fry:?}");
    assert_eq!(fry.get("targetOk").unwrap().as_bool(), Some(true));
    assert!(fry.get("maxC").unwrap().as_f64().unwrap() <= 190.0);
    // The Core summary has one row per temperature sensor read during the step.
    let summary = log.pointer("/steps/1/summary").unwrap().as_array().unwrap();
    let oil = summary
        .iter()
        .find(|r| r.get("sensor").unwrap().as_str() == Some("cw.sense.oil_temp"))
        .unwrap();
    assert!(oil.get("max").unwrap().as_f64().unwrap() <= 190.0);
    assert_eq!(oil.get("unit").unwrap().as_str(), Some("degC"));
}

#[test]
fn extra_limits_only_narrow() {
    // A site pack that tries to "raise" the oil limit only adds a limit; the default still holds.
    let extra = canonical_json::parse(
        br#"{"limits":[{"id":"oil.relaxed","kind":"max_temp","action":"cut_heat","source":"x","appliesTo":{"medium":"oil"},"max":400,"unit":"degC"}]}"#,
    )
    .unwrap();
    let mut c = config("chickpea-fritters");
    c.extra_limits = Some(extra);
    c.faults.push(cookwala_sim::Fault { kind: cookwala_sim::FaultKind::Overheat, node: None });
    let mut sim = Simulation::new(c).unwrap();
    run(&mut sim, 3_600_000);
    let log = sim.log().unwrap();
    let fired: Vec<_> = log
        .get("safetyEvents")
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e.get("limit").and_then(|l| l.as_str()).map(str::to_owned))
        .collect();
    assert!(fired.contains(&"oil.max_temp".to_owned()), "{fired:?}");
}

#[test]
fn builtin_documents_validate_with_our_types() {
    let vocab = cookwala::vocab::Vocabulary::builtin();
    for example in builtin::RECIPES {
        let doc = builtin::recipe(example.id).unwrap();
        let report = cookwala::documents::validate(&doc, Some("Recipe"), vocab);
        assert!(report.is_valid(), "{}: {report:?}", example.id);
        assert_eq!(doc.get("id").unwrap().as_str(), Some(example.id));
    }
    for (id, _) in builtin::DEVICES {
        let doc = builtin::device(id).unwrap();
        let report = cookwala::documents::validate(&doc, Some("Capabilities"), vocab);
        assert!(report.is_valid(), "{id}: {report:?}");
    }
}

#[test]
fn statuses_along_the_way_validate() {
    let vocab = cookwala::vocab::Vocabulary::builtin();
    let mut c = SimConfig::new(
        builtin::recipe("cucumber-herb-salad").unwrap(),
        builtin::device("sim-hob-robot").unwrap(),
    );
    c.human_present = true;
    let mut sim = Simulation::new(c).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    while !sim.is_final() {
        sim.advance(1_000);
        let status = sim.status();
        let report = cookwala::documents::validate(&status, Some("ExecutionStatus"), vocab);
        assert!(report.is_valid(), "{status:?}: {report:?}");
        seen.insert(sim.state().as_str());
        if sim.state() == S::NeedsHuman {
            sim.confirm_human().unwrap();
        }
    }
    assert!(seen.contains("needs_human") && seen.contains("running"));
}

#[test]
fn a_precheck_refusal_starts_refused() {
    let c = config("red-lentil-soup");
    let admission = cookwala::admission::Admission {
        decision: cookwala::admission::Decision::Refused(cookwala::dryrun::Refusal {
            reason: cookwala::dryrun::RefusalReason::Busy,
            node: None,
            detail: "another pot is on this hob".to_owned(),
        }),
        limits: cookwala::limits::default_pack(),
        findings: Vec::new(),
    };
    let sim = Simulation::from_admission(c, &admission).unwrap();
    assert_eq!(sim.state(), S::Refused);
    assert_eq!(sim.status().pointer("/refusal/reason").unwrap().as_str(), Some("busy"));
    assert!(sim.plan().is_empty());
}

/// The admission record round-trips, and a run built from the stored record is the run built
/// from the admission (what a hub does after a restart).
#[test]
fn a_run_is_built_from_its_stored_admission() {
    let c = config("red-lentil-soup");
    let pack = cookwala::limits::default_pack();
    let now = cookwala::time::Instant::from_unix(c.start_unix_ms / 1000, 0).unwrap();
    let request = cookwala::admission::Request {
        precheck: None,
        recipe: &c.recipe,
        device: &c.device,
        pack: &pack,
        narrowing: None,
        human_present: c.human_present,
        allow_model: c.allow_model,
        now,
    };
    let admission = cookwala_sim::admit(&request).unwrap();
    assert!(admission.refusal().is_none());
    let record = canonical_json::to_jcs(&admission.to_value()).unwrap();
    let back = cookwala::admission::Admission::from_value(&canonical_json::parse(&record).unwrap())
        .unwrap();
    assert_eq!(back.decision, admission.decision);
    assert_eq!(back.limits, admission.limits);
    let a = Simulation::from_admission(c.clone(), &admission).unwrap();
    let b = Simulation::from_admission(c, &back).unwrap();
    assert_eq!(a.plan(), b.plan());
    assert_eq!(a.status(), b.status());
    // A record missing its limits is an error naming them, not a run without limits.
    let mut broken = admission.to_value();
    broken.as_object_mut().unwrap().remove("limits");
    let err = cookwala::admission::Admission::from_value(&broken).unwrap_err();
    assert!(err.to_string().contains("limits"), "{err}");
}
