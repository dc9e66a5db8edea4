//! Run-time enforcement of every SafetyLimits kind of the effective pack.

use canonical_json::{Map, Value};
use cookwala::execution::ExecutionState as S;
use cookwala_sim::{EventKind, SimConfig, SimEvent, Simulation, builtin};

use crate::{config, run};

fn json(text: &str) -> Value {
    canonical_json::parse(text.as_bytes()).unwrap()
}

/// A built-in device with extra ops and `x-sim` settings.
fn device(id: &str, ops: &[&str], x_sim: &[(&str, f64)]) -> Value {
    let mut d = builtin::device(id).unwrap();
    let m = d.as_object_mut().unwrap();
    let Some(Value::Object(caps)) = m.get_mut("capabilities") else { panic!() };
    let Some(Value::Array(list)) = caps.get_mut("ops") else { panic!() };
    for op in ops {
        let mut row = Map::new();
        row.insert("op".into(), (*op).into());
        list.push(Value::Object(row));
    }
    let Some(Value::Object(x)) = m.get_mut("x-sim") else { panic!() };
    for (k, v) in x_sim {
        x.insert((*k).into(), canonical_json::Finite::new(*v).unwrap().into());
    }
    d
}

/// A small recipe with the given nodes (JSON text of the `nodes` array).
fn recipe(id: &str, nodes: &str) -> Value {
    json(&format!(
        r#"{{"cookwala":"0.2.0","id":"{id}","revision":1,"verification":{{"level":"V0"}},
        "dish":{{"names":{{"en":"Test"}}}},"yield":{{"servings":2}},
        "ingredients":[{{"ref":"food","ingredientId":"cw.ing.water","qty":{{"value":1,"unit":"l"}}}}],
        "process":{{"nodes":{nodes},"edges":"implicit-from-inputs"}},
        "safety":{{"hazards":[],"allergens":{{"eu14":[],"us9":[],"mayContain":[]}},
        "supervision":{{"default":"unattended_ok"}},"abort":{{"steps":["heat_off"]}}}},
        "license":"CC0-1.0"}}"#
    ))
}

fn pack(limits: &str) -> Value {
    json(&format!(r#"{{"limits":{limits}}}"#))
}

fn safety(events: &[SimEvent]) -> Vec<&SimEvent> {
    events.iter().filter(|e| matches!(e.kind, EventKind::Safety { .. })).collect()
}

fn limit_of(e: &SimEvent) -> (&str, &str) {
    match &e.kind {
        EventKind::Safety { limit, action, .. } => (limit, action),
        _ => panic!("{e:?}"),
    }
}

/// The log's Core `safetyEvents` as `(limit, action, node)`.
fn logged(sim: &Simulation) -> Vec<(String, String, Option<String>)> {
    let log = sim.log().unwrap();
    log.get("safetyEvents")
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let s = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_owned);
            (s("limit").unwrap(), s("action").unwrap(), s("node"))
        })
        .collect()
}

fn valid(doc: &Value, kind: &str) {
    let report =
        cookwala::documents::validate(doc, Some(kind), cookwala::vocab::Vocabulary::builtin());
    assert!(report.is_valid(), "{kind}: {report:?}\n{doc:?}");
}

/// Runs until the state is `state` (or final, or `limit_ms`).
fn run_until(sim: &mut Simulation, state: S, limit_ms: u64) -> Vec<SimEvent> {
    let mut events = Vec::new();
    while !sim.is_final() && sim.state() != state && sim.now_ms() < limit_ms {
        events.extend(sim.advance(1_000));
    }
    events
}

fn step_started(events: &[SimEvent], node: &str) -> u64 {
    events
        .iter()
        .find(|e| matches!(&e.kind, EventKind::StepStarted { node: n, .. } if n == node))
        .unwrap()
        .at_ms
}

// ---- min_core_temp

#[test]
fn roast_chicken_reaches_the_poultry_minimum_and_completes() {
    let mut sim = Simulation::new(config("roast-chicken-thighs")).unwrap();
    let events = run(&mut sim, 3 * 3_600_000);
    assert_eq!(sim.state(), S::Completed, "{:?}", sim.status());
    assert!(safety(&events).is_empty());
    assert!(sim.incidents().is_empty());
    let log = sim.log().unwrap();
    let roast = &log.get("steps").unwrap().as_array().unwrap()[0];
    let core = roast
        .get("summary")
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r.get("sensor").unwrap().as_str() == Some("cw.sense.core_temp"))
        .unwrap();
    assert!(core.get("end").unwrap().as_f64().unwrap() >= 74.0, "{core:?}");
}

/// The built-in chicken with its roast cut short: it ends as soon as the oven is in its band,
/// with no core cue.
fn undercooked_chicken() -> SimConfig {
    let mut c = config("roast-chicken-thighs");
    let Some(Value::Object(process)) = c.recipe.as_object_mut().unwrap().get_mut("process") else {
        panic!()
    };
    let Some(Value::Array(nodes)) = process.get_mut("nodes") else { panic!() };
    let roast = nodes[0].as_object_mut().unwrap();
    roast.insert(
        "until".into(),
        json(r#"{"minTime":"PT0S","nominalTime":"PT10S","maxTime":"PT30M"}"#),
    );
    c
}

#[test]
fn undercooked_poultry_asks_a_person_when_the_roast_ends() {
    let mut sim = Simulation::new(undercooked_chicken()).unwrap();
    let events = run_until(&mut sim, S::NeedsHuman, 3_600_000);
    assert_eq!(sim.state(), S::NeedsHuman);
    let fired = safety(&events);
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert_eq!(limit_of(fired[0]), ("core.poultry", "ask_human"));
    // It fired as the roast ended: the roast has not been closed, and heat is off meanwhile.
    assert!(!events.iter().any(|e| matches!(&e.kind, EventKind::StepEnded { .. })));
    assert!(!sim.heat_on());
    let status = sim.status();
    valid(&status, "ExecutionStatus");
    let why = status.pointer("/humanNeeded/why").unwrap().as_str().unwrap();
    assert!(why.contains("core.poultry") && why.contains("74 °C"), "{why}");
    assert!(why.contains("cw.sense.core_temp") && why.contains("node roast"), "{why}");
    let EventKind::Safety { value: Some(core), .. } = fired[0].kind else { panic!() };
    assert!(core < 74.0 && why.contains(&format!("{core:.1} °C")), "{core} {why}");
    assert!(status.get("eta").is_none(), "no estimate while a person is needed");
    assert_eq!(sim.incidents().len(), 1);
    let inc = &sim.incidents()[0];
    valid(inc, "IncidentReport");
    assert_eq!(inc.get("category").unwrap().as_str(), Some("cw.incident.undercooked"));
    assert_eq!(inc.pointer("/safetyLimitsFired/0").unwrap().as_str(), Some("core.poultry"));
    // Waiting changes nothing observable.
    let seq = sim.seq();
    sim.advance(120_000);
    assert_eq!(sim.seq(), seq);
    // The person confirms: the roast closes, the rest runs, the dish is served.
    sim.confirm_human().unwrap();
    run(&mut sim, 3_600_000);
    assert_eq!(sim.state(), S::Completed, "{:?}", sim.status());
    assert_eq!(
        logged(&sim),
        vec![("core.poultry".into(), "ask_human".into(), Some("roast".into()))]
    );
    let log = sim.log().unwrap();
    valid(&log, "ExecutionLog");
    assert_eq!(log.get("humanInterventions").unwrap().as_array().unwrap().len(), 1);
    assert_eq!(log.get("steps").unwrap().as_array().unwrap().len(), 2);
}

#[test]
fn limit_firing_is_deterministic_for_a_seed() {
    let go = || {
        let mut c = undercooked_chicken();
        c.seed = 99;
        let mut sim = Simulation::new(c).unwrap();
        let mut events = run_until(&mut sim, S::NeedsHuman, 3_600_000);
        events.extend(sim.confirm_human().unwrap());
        events.extend(run(&mut sim, 3_600_000));
        (events, sim.log(), sim.incidents().to_vec())
    };
    let (a, b) = (go(), go());
    assert!(!safety(&a.0).is_empty());
    assert_eq!(a, b);
}

#[test]
fn a_dish_without_a_core_reading_asks_before_it_is_served() {
    let mut c = config("cucumber-herb-salad");
    c.recipe.as_object_mut().unwrap().insert("x-foodClass".into(), "poultry".into());
    let mut sim = Simulation::new(c).unwrap();
    let events = run_until(&mut sim, S::NeedsHuman, 3_600_000);
    assert_eq!(sim.state(), S::NeedsHuman);
    assert_eq!(limit_of(safety(&events)[0]), ("core.poultry", "ask_human"));
    let why = sim.status().pointer("/humanNeeded/why").unwrap().as_str().unwrap().to_owned();
    assert!(why.contains("no sensor reads the product core") && why.contains("served"), "{why}");
    // Every step already ran.
    let ended = events.iter().filter(|e| matches!(e.kind, EventKind::StepEnded { .. })).count();
    assert_eq!(ended, sim.plan().len());
    sim.confirm_human().unwrap();
    assert_eq!(sim.state(), S::Completed);
    assert_eq!(logged(&sim), vec![("core.poultry".into(), "ask_human".into(), None)]);
    valid(&sim.log().unwrap(), "ExecutionLog");
}

#[test]
fn a_declared_dish_that_is_hot_enough_is_served() {
    // Reheated leftovers must reach 74 °C: the soup ends near 90 °C.
    let mut c = config("red-lentil-soup");
    c.recipe.as_object_mut().unwrap().insert("x-foodClass".into(), "leftovers".into());
    let mut sim = Simulation::new(c).unwrap();
    let events = run(&mut sim, 4 * 3_600_000);
    assert_eq!(sim.state(), S::Completed);
    assert!(safety(&events).is_empty());
}

#[test]
fn a_core_limit_that_refuses_start_refuses_before_anything_heats() {
    let mut c = config("roast-chicken-thighs");
    c.extra_limits = Some(pack(
        r#"[{"id":"site.poultry","kind":"min_core_temp","action":"refuse_start","source":"x",
            "appliesTo":{"foodClass":"poultry"},"min":80,"unit":"degC"}]"#,
    ));
    let sim = Simulation::new(c).unwrap();
    assert_eq!(sim.state(), S::Refused);
    let refusal = sim.refusal().unwrap();
    assert_eq!(refusal.reason.as_str(), "safety_limit");
    assert_eq!(refusal.node.as_deref(), Some("roast"));
    assert!(refusal.detail.contains("site.poultry"), "{}", refusal.detail);
}

#[test]
fn an_alert_core_limit_is_recorded_and_the_dish_is_served() {
    // A site pack asks for more than the recipe's cue reaches: an alert, and the cook goes on.
    let mut c = config("roast-chicken-thighs");
    c.extra_limits = Some(pack(
        r#"[{"id":"site.poultry","kind":"min_core_temp","action":"alert","source":"x",
            "appliesTo":{"foodClass":"poultry","ops":["cw.op.roast"]},"min":150,"unit":"degC"}]"#,
    ));
    let mut sim = Simulation::new(c).unwrap();
    let events = run(&mut sim, 3 * 3_600_000);
    assert_eq!(sim.state(), S::Completed);
    let fired = safety(&events);
    assert_eq!(fired.len(), 1);
    assert_eq!(limit_of(fired[0]), ("site.poultry", "alert"));
    assert_eq!(logged(&sim), vec![("site.poultry".into(), "alert".into(), Some("roast".into()))]);
    assert_eq!(sim.incidents().len(), 1);
}

// ---- time_temp

fn hold_recipe(nominal: &str) -> Value {
    recipe(
        "hold-test",
        &format!(
            r#"[{{"id":"hold","op":"cw.op.hold","inputs":["food"],"output":"held","params":{{"tempC":70}},
                "until":{{"nominalTime":"{nominal}","maxTime":"PT5H"}}}}]"#
        ),
    )
}

#[test]
fn hot_holding_below_sixty_for_two_hours_alerts_and_goes_on() {
    // A hob too weak to hold: the food never reaches 60 °C.
    let dev = device("sim-hob-robot", &["cw.op.hold"], &[("hobPowerW", 15.0)]);
    let mut sim = Simulation::new(SimConfig::new(hold_recipe("PT3H"), dev)).unwrap();
    let mut events = Vec::new();
    while safety(&events).is_empty() && sim.now_ms() < 4 * 3_600_000 {
        events.extend(sim.advance(1_000));
    }
    let fired = safety(&events);
    assert_eq!(fired.len(), 1, "{:?}", sim.status());
    assert_eq!(limit_of(fired[0]), ("hold.hot", "alert"));
    let after = fired[0].at_ms - step_started(&events, "hold");
    assert!((7_200_000..=7_201_000).contains(&after), "{after}");
    assert_eq!(fired[0].data().get("action").unwrap().as_str(), Some("none"));
    // An alert: the execution goes on.
    assert_eq!(sim.state(), S::Running);
    sim.advance(60_000);
    assert_eq!(sim.state(), S::Running);
    assert_eq!(sim.incidents().len(), 1);
    let inc = &sim.incidents()[0];
    valid(inc, "IncidentReport");
    assert_eq!(inc.get("category").unwrap().as_str(), Some("cw.incident.time_temperature"));
    sim.stop("enough");
    run(&mut sim, 5 * 3_600_000);
    let rows = logged(&sim);
    assert_eq!(rows[0], ("hold.hot".into(), "alert".into(), Some("hold".into())));
}

#[test]
fn hot_holding_at_temperature_never_alerts() {
    let dev = device("sim-hob-robot", &["cw.op.hold"], &[]);
    let mut sim = Simulation::new(SimConfig::new(hold_recipe("PT3H"), dev)).unwrap();
    let events = run(&mut sim, 5 * 3_600_000);
    assert_eq!(sim.state(), S::Completed, "{:?}", sim.status());
    assert!(safety(&events).is_empty());
    assert!(sim.now_ms() > 3 * 3_600_000);
}

#[test]
fn a_site_hold_limit_can_only_be_stricter() {
    // Narrowing adds a stricter rule; the default one still holds.
    let dev = device("sim-hob-robot", &["cw.op.hold"], &[]);
    let mut c = SimConfig::new(hold_recipe("PT1H"), dev);
    c.extra_limits = Some(pack(
        r#"[{"id":"site.hold","kind":"time_temp","action":"ask_human","source":"x",
            "appliesTo":{"ops":["cw.op.hold"]},"min":80,"unit":"degC","holdFor":"PT10M"}]"#,
    ));
    let mut sim = Simulation::new(c).unwrap();
    let events = run_until(&mut sim, S::NeedsHuman, 3_600_000);
    assert_eq!(sim.state(), S::NeedsHuman);
    assert_eq!(limit_of(safety(&events)[0]), ("site.hold", "ask_human"));
    let after = safety(&events)[0].at_ms - step_started(&events, "hold");
    assert!((600_000..=601_000).contains(&after), "{after}");
}

fn cooling_recipe(cool_for: &str) -> Value {
    recipe(
        "cool-test",
        &format!(
            r#"[{{"id":"boil","op":"cw.op.boil","inputs":["food"],"output":"hot","params":{{"tempC":100}},
                 "until":{{"all":[{{"sensor":"cw.sense.liquid_temp","gte":98}}],"maxTime":"PT20M"}}}},
               {{"id":"cool","op":"cw.op.cool","inputs":["hot"],"output":"cooled","params":{{"method":"room"}},
                 "until":{{"nominalTime":"{cool_for}"}}}}]"#
        ),
    )
}

#[test]
fn cooling_that_misses_the_first_stage_alerts() {
    // Room cooling in a lidded pot never gets below 21 °C in a 22 °C kitchen.
    let dev = device("sim-hob-robot", &["cw.op.cool"], &[]);
    let mut sim = Simulation::new(SimConfig::new(cooling_recipe("PT4H"), dev)).unwrap();
    let events = run(&mut sim, 6 * 3_600_000);
    assert_eq!(sim.state(), S::Completed, "an alert does not stop the execution");
    let fired = safety(&events);
    assert_eq!(fired.len(), 1);
    assert_eq!(limit_of(fired[0]), ("cool.two_stage", "alert"));
    let after = fired[0].at_ms - step_started(&events, "cool");
    assert!(after > 2 * 3_600_000 && after < 3 * 3_600_000, "{after}");
    let EventKind::Safety { detail, .. } = &fired[0].kind else { panic!() };
    assert!(detail.contains("21 °C within 2 h"), "{detail}");
    assert_eq!(logged(&sim), vec![("cool.two_stage".into(), "alert".into(), Some("cool".into()))]);
}

#[test]
fn cooling_within_its_deadline_never_alerts() {
    let dev = device("sim-hob-robot", &["cw.op.cool"], &[]);
    let mut sim = Simulation::new(SimConfig::new(cooling_recipe("PT90M"), dev)).unwrap();
    let events = run(&mut sim, 4 * 3_600_000);
    assert_eq!(sim.state(), S::Completed);
    assert!(safety(&events).is_empty());
}

// ---- pressure, stop budget, unknown kinds

#[test]
fn pressure_cooking_is_refused_for_want_of_a_pressure_model() {
    let dev = device("sim-hob-robot", &["cw.op.pressure_cook"], &[]);
    let r = recipe(
        "pressure-test",
        r#"[{"id":"cook","op":"cw.op.pressure_cook","inputs":["food"],"output":"done",
             "params":{"pressureKPa":80,"tempC":115},"until":{"nominalTime":"PT10M"}}]"#,
    );
    // The dry run alone accepts it (the ladder falls back to the liquid sensor).
    let now = cookwala::time::Instant::from_unix(1_767_225_600, 0).unwrap();
    let pack = cookwala::limits::default_pack();
    let options = cookwala::dryrun::Options {
        human_present: false,
        allow_model: true,
        limits: Some(&pack),
        now,
    };
    let dry = cookwala::dryrun::dry_run(cookwala::vocab::Vocabulary::builtin(), &r, &dev, options)
        .unwrap();
    assert!(dry.refusal.is_none(), "{:?}", dry.refusal);
    let mut sim = Simulation::new(SimConfig::new(r, dev)).unwrap();
    assert_eq!(sim.state(), S::Refused);
    let refusal = sim.refusal().unwrap();
    assert_eq!(refusal.reason.as_str(), "safety_limit");
    assert_eq!(refusal.node.as_deref(), Some("cook"));
    assert!(refusal.detail.contains("pressure.max"), "{}", refusal.detail);
    assert!(refusal.detail.contains("no pressure model"), "{}", refusal.detail);
    assert!(sim.advance(60_000).is_empty());
    assert!(!sim.heat_on());
    valid(&sim.status(), "ExecutionStatus");
}

#[test]
fn limits_it_cannot_enforce_refuse_the_start() {
    let cases = [
        (
            r#"[{"id":"site.humidity","kind":"max_humidity","action":"alert","source":"x","max":80}]"#,
            "max_humidity",
        ),
        (
            r#"[{"id":"site.oil","kind":"max_temp","action":"shout","source":"x","appliesTo":{"medium":"oil"},"max":150}]"#,
            "shout",
        ),
        (
            r#"[{"id":"site.oil.f","kind":"max_temp","action":"cut_heat","source":"x","appliesTo":{"medium":"oil"},"max":350,"unit":"degF"}]"#,
            "degF",
        ),
        (
            r#"[{"id":"site.core","kind":"min_core_temp","action":"ask_human","source":"x"}]"#,
            "no min",
        ),
        (
            r#"[{"id":"site.hold","kind":"time_temp","action":"alert","source":"x","min":60}]"#,
            "holdFor",
        ),
        (
            r#"[{"id":"site.stop","kind":"stop","action":"stop_all","source":"x","max":0.05,"unit":"s"}]"#,
            "site.stop",
        ),
    ];
    for (limits, needle) in cases {
        let mut c = config("red-lentil-soup");
        c.extra_limits = Some(pack(limits));
        let mut sim = Simulation::new(c).unwrap();
        assert_eq!(sim.state(), S::Refused, "{limits}");
        let refusal = sim.refusal().unwrap();
        assert_eq!(refusal.reason.as_str(), "safety_limit");
        assert!(refusal.detail.contains(needle), "{needle}: {}", refusal.detail);
        let status = sim.status();
        valid(&status, "ExecutionStatus");
        assert_eq!(status.pointer("/refusal/reason").unwrap().as_str(), Some("safety_limit"));
        assert!(sim.advance(10_000).is_empty());
        assert_eq!(sim.log().unwrap().get("outcome").unwrap().as_str(), Some("refused"));
    }
    // A known kind that only narrows runs as usual.
    let mut c = config("red-lentil-soup");
    c.extra_limits = Some(pack(
        r#"[{"id":"site.stop","kind":"stop","action":"stop_all","source":"x","max":0.4,"unit":"s"}]"#,
    ));
    let mut sim = Simulation::new(c).unwrap();
    run(&mut sim, 4 * 3_600_000);
    assert_eq!(sim.state(), S::Completed);
}

#[test]
fn a_stop_motion_limit_stops_motion_at_once() {
    let mut c = config("chickpea-fritters");
    c.extra_limits = Some(pack(
        r#"[{"id":"site.pan","kind":"max_temp","action":"stop_motion","source":"x",
            "appliesTo":{"medium":"pan_surface"},"max":150,"unit":"degC"}]"#,
    ));
    let mut sim = Simulation::new(c).unwrap();
    let events = run(&mut sim, 3_600_000);
    assert_eq!(sim.state(), S::Stopped);
    let fired = safety(&events);
    assert_eq!(limit_of(fired[0]), ("site.pan", "stop_motion"));
    let stopped =
        events.iter().find(|e| matches!(e.kind, EventKind::MotionStopped { .. })).unwrap();
    assert_eq!(stopped.at_ms, fired[0].at_ms);
    assert_eq!(fired[0].data().get("action").unwrap().as_str(), Some("abort_session"));
    assert_eq!(sim.log().unwrap().get("outcome").unwrap().as_str(), Some("aborted_safe"));
    assert_eq!(sim.incidents().len(), 1);
}

// ---- eta

#[test]
fn eta_is_published_while_running_and_absent_when_final() {
    let mut sim = Simulation::new(config("cucumber-herb-salad")).unwrap();
    let ms = |s: &Value, k: &str| {
        let text = s.get(k).unwrap().as_str().unwrap();
        let t = cookwala::time::parse_timestamp(text).unwrap();
        t.unix_seconds() * 1000 + i64::from(t.subsec_nanos() / 1_000_000)
    };
    assert!(sim.status().get("eta").is_some(), "accepted has an estimate");
    let mut first = None;
    let mut seen = 0;
    while !sim.is_final() {
        sim.advance(1_000);
        let status = sim.status();
        if sim.state() != S::Running {
            continue;
        }
        let eta = ms(&status, "eta");
        assert!(eta >= ms(&status, "updatedAt"));
        // Every step of this recipe is timed, so the estimate holds from the first running
        // status to the end.
        let first = *first.get_or_insert(eta);
        assert!((eta - first).abs() <= 1_000, "{eta} vs {first}");
        seen += 1;
    }
    assert!(seen > 10);
    assert_eq!(sim.state(), S::Completed);
    let status = sim.status();
    assert!(status.get("eta").is_none());
    let ended = ms(&status, "updatedAt");
    assert!((ended - first.unwrap()).abs() <= 1_000, "{ended} vs {first:?}");
}

// ---- SafetyData

fn safety_data_validator() -> Option<jsonschema::Validator> {
    let dir = test_support::shared("standards/cookwala/schemas")?;
    let mut registry = jsonschema::Registry::new();
    let mut ids = Vec::new();
    for name in ["event.schema.json", "common.schema.json"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
        let id = schema.get("$id").unwrap().as_str().unwrap().to_owned();
        registry = registry.add(id.as_str(), schema.clone()).unwrap();
        ids.push(id);
    }
    // The event schema refers to schemas the folder does not ship; SafetyData uses none.
    for missing in ["session.schema.json", "inventory.schema.json"] {
        let id = ids[0].replace("event.schema.json", missing);
        registry = registry.add(id.as_str(), serde_json::json!({ "$id": id })).unwrap();
    }
    let registry = registry.prepare().unwrap();
    let root = serde_json::json!({ "$ref": format!("{}#/$defs/SafetyData", ids[0]) });
    Some(
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .with_registry(&registry)
            .build(&root)
            .unwrap(),
    )
}

#[test]
fn safety_event_data_is_schema_safety_data() {
    let Some(validator) = safety_data_validator() else { return };
    let mut all = Vec::new();
    // cut_heat (the oil limit under a stuck relay), ask_human and alert.
    let mut c = config("chickpea-fritters");
    c.faults.push(cookwala_sim::Fault { kind: cookwala_sim::FaultKind::Overheat, node: None });
    let mut sim = Simulation::new(c).unwrap();
    all.extend(run(&mut sim, 3_600_000));
    let mut sim = Simulation::new(undercooked_chicken()).unwrap();
    all.extend(run_until(&mut sim, S::NeedsHuman, 3_600_000));
    let mut c = config("roast-chicken-thighs");
    c.extra_limits = Some(pack(
        r#"[{"id":"site.poultry","kind":"min_core_temp","action":"alert","source":"x",
            "appliesTo":{"foodClass":"poultry"},"min":150}]"#,
    ));
    let mut sim = Simulation::new(c).unwrap();
    all.extend(run(&mut sim, 3 * 3_600_000));
    let fired = safety(&all);
    let actions: std::collections::BTreeSet<_> = fired.iter().map(|e| limit_of(e).1).collect();
    assert_eq!(actions.len(), 3, "{actions:?}");
    for e in fired {
        let data = e.data();
        let text = canonical_json::to_python_compact(&data).unwrap();
        let instance: serde_json::Value = serde_json::from_slice(&text).unwrap();
        let errors: Vec<String> = validator.iter_errors(&instance).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{instance}: {errors:?}");
        assert_eq!(data.get("x-limit").unwrap().as_str(), Some(limit_of(e).0));
        assert!(data.get("limit").is_none() && data.get("detail").is_none());
    }
    // The validator does reject the old shape.
    let old =
        serde_json::json!({"level": "alarm", "action": "heat_off_all", "limit": "oil.max_temp"});
    assert!(!validator.is_valid(&old));
}
