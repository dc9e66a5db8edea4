#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use canonical_json::Value;
use cookwala::execution::ExecutionState as S;
use cookwala_sim::{EventKind, SimConfig, SimEvent, Simulation};

use super::*;

const EXE: Execution<'static> = Execution {
    id: "ex-1",
    request: "ex-1",
    device: "sim-hob-robot",
    start_unix_ms: 0,
    time_scale: 1.0,
};

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn seq(v: &Value) -> i64 {
    v.get("cookwalaseq").and_then(Value::as_i64).unwrap()
}

fn soup() -> Simulation {
    let recipe = cookwala_sim::builtin::recipe("red-lentil-soup").unwrap();
    let device = cookwala_sim::builtin::device("sim-hob-robot").unwrap();
    let mut config = SimConfig::new(recipe, device);
    config.execution_id = "ex-1".to_owned();
    config.request_id = "ex-1".to_owned();
    config.start_unix_ms = 1_767_225_600_000;
    Simulation::new(config).unwrap()
}

/// Runs `sim` to its end in clock steps of `step_ms`, mapping each batch like the hub does.
fn run(sim: &mut Simulation, step_ms: u64) -> Vec<Value> {
    let exe = Execution { start_unix_ms: sim.start_unix_ms(), ..EXE };
    let mut gate = ProgressGate::default();
    let mut out = vec![created(&exe, &sim.status())];
    for _ in 0..100_000 {
        if sim.is_final() {
            break;
        }
        let prev = sim.state();
        let events = sim.advance(step_ms);
        out.extend(from_sim(&exe, prev, &events, &mut gate));
    }
    assert!(sim.is_final());
    out
}

#[test]
fn a_run_maps_to_accepted_steps_state_changes_and_completed() {
    let mut sim = soup();
    let events = run(&mut sim, 60_000);
    let types: Vec<&str> = events.iter().map(|e| s(e, "type")).collect();
    assert_eq!(types.first(), Some(&ACCEPTED));
    assert_eq!(types.last(), Some(&COMPLETED));
    assert!(types.contains(&STATE_CHANGED));
    assert!(types.contains(&STEP));
    // cookwalaseq strictly increases, and the last one is the final status seq.
    let seqs: Vec<i64> = events.iter().map(seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    assert_eq!(*seqs.last().unwrap(), i64::try_from(sim.seq()).unwrap());
    for e in &events {
        assert_eq!(s(e, "specversion"), "1.0");
        assert_eq!(s(e, "source"), "/cookwala/devices/sim-hob-robot");
        assert_eq!(s(e, "subject"), "ex-1");
        assert_eq!(s(e, "cookwalalatency"), "interactive");
        assert_eq!(s(e, "id"), event_id("ex-1", u64::try_from(seq(e)).unwrap(), s(e, "type")));
        let data = e.get("data").unwrap();
        assert_eq!(data.get("seq"), e.get("cookwalaseq"));
        assert_eq!(s(data, "kind"), "ExecutionStatus");
        assert_eq!(s(data, "updatedAt"), s(e, "time"));
    }
    // The completed event's data is the status at the final seq (same state and time).
    let last = events.last().unwrap().get("data").unwrap();
    assert_eq!(s(last, "state"), "completed");
    assert_eq!(s(last, "updatedAt"), s(&sim.status(), "updatedAt"));
}

#[test]
fn the_mapping_does_not_depend_on_the_clock_step() {
    let (mut a, mut b) = (soup(), soup());
    let coarse: Vec<String> = run(&mut a, 600_000).iter().map(|e| s(e, "id").to_owned()).collect();
    let fine: Vec<String> = run(&mut b, 700).iter().map(|e| s(e, "id").to_owned()).collect();
    assert_eq!(coarse, fine);
}

#[test]
fn progress_is_reported_per_quarter_of_a_step() {
    let mut sim = soup();
    let events = run(&mut sim, 5_000);
    let progress: Vec<(&str, f64)> = events
        .iter()
        .filter(|e| {
            e.pointer("/data/x-hub-event/phase").and_then(Value::as_str) == Some("progress")
        })
        .map(|e| {
            let step = e.pointer("/data/step").unwrap();
            (s(step, "node"), step.get("progress").and_then(Value::as_f64).unwrap())
        })
        .collect();
    assert!(!progress.is_empty());
    // At most four per node (25, 50, 75, 100 %), and never below a quarter.
    let mut nodes: Vec<&str> = progress.iter().map(|p| p.0).collect();
    nodes.dedup();
    for node in nodes {
        let n = progress.iter().filter(|p| p.0 == node).count();
        assert!(n <= 4, "{node}: {n}");
    }
    assert!(progress.iter().all(|p| p.1 >= 0.25), "{progress:?}");
    // Far fewer than the simulator's publications (one per 5 simulated seconds).
    assert!(progress.len() * 10 < usize::try_from(sim.seq()).unwrap());
}

#[test]
fn a_stop_maps_to_state_changes_with_the_callers_reason() {
    let mut sim = soup();
    let exe = Execution { start_unix_ms: sim.start_unix_ms(), ..EXE };
    let mut gate = ProgressGate::default();
    sim.advance(120_000);
    let prev = sim.state();
    let stop = from_sim(&exe, prev, &sim.stop("smoke alarm"), &mut gate);
    assert_eq!(stop.len(), 1);
    assert_eq!(stop[0].pointer("/data/state").unwrap().as_str(), Some("stopping"));
    assert_eq!(stop[0].pointer("/data/x-hub-event/from").unwrap().as_str(), Some(prev.as_str()));
    assert_eq!(stop[0].pointer("/data/x-hub-event/why").unwrap().as_str(), Some("smoke alarm"));
    let rest = from_sim(&exe, sim.state(), &sim.advance(5_000), &mut gate);
    let last = rest.last().unwrap();
    assert_eq!(s(last, "type"), STATE_CHANGED);
    assert_eq!(last.pointer("/data/state").unwrap().as_str(), Some("stopped"));
}

#[test]
fn safety_events_carry_safety_data() {
    let ev = SimEvent {
        at_ms: 1_500,
        seq: 7,
        kind: EventKind::Safety {
            limit: "oil.max_temp".to_owned(),
            action: "cut_heat".to_owned(),
            level: "alarm",
            value: Some(201.26),
            detail: "too hot".to_owned(),
        },
    };
    let mut gate = ProgressGate::default();
    let out = from_sim(&EXE, S::Running, &[ev], &mut gate);
    assert_eq!(out.len(), 1);
    let e = &out[0];
    assert_eq!(s(e, "type"), LIMIT_FIRED);
    assert_eq!(s(e, "cookwalapriority"), "safety");
    assert_eq!(s(e, "cookwalalatency"), "local_safety");
    assert_eq!(s(e, "time"), "1970-01-01T00:00:01.500Z");
    assert_eq!(s(e, "id"), "ex-1/7/safety.limit_fired");
    let data = e.get("data").unwrap();
    let keys: Vec<&str> = data.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["action", "level", "reading", "x-detail", "x-limit", "x-limitAction"]);
    assert_eq!(s(data, "action"), "heat_off_all");
    assert_eq!(s(data, "level"), "alarm");
    assert_eq!(data.pointer("/reading/value").and_then(Value::as_f64), Some(201.3));
    assert_eq!(safety_action("stop_all"), "abort_session");
    assert_eq!(safety_action("ask_human"), "pause_all");
    assert_eq!(safety_action("alert"), "none");
}

#[test]
fn readings_and_heat_cut_notices_are_not_events() {
    let kinds = [
        EventKind::Reading { sensor: "cw.sense.oil_temp".to_owned(), value: 20.0, unit: "degC" },
        EventKind::HeatCut { reason: "stop".to_owned() },
        EventKind::MotionStopped { reason: "stop".to_owned() },
    ];
    let evs: Vec<SimEvent> =
        kinds.into_iter().map(|kind| SimEvent { at_ms: 0, seq: 1, kind }).collect();
    assert!(from_sim(&EXE, S::Running, &evs, &mut ProgressGate::default()).is_empty());
}

#[test]
fn a_refused_execution_is_one_refused_event_with_the_status() {
    let status = canonical_json::parse(
        br#"{"core":"0.2.0","kind":"ExecutionStatus","id":"ex-1","request":"ex-1","state":"refused","seq":0,"updatedAt":"2026-01-01T00:00:00.000Z","refusal":{"reason":"busy"}}"#,
    )
    .unwrap();
    let e = created(&EXE, &status);
    assert_eq!(s(&e, "type"), REFUSED);
    assert_eq!(s(&e, "id"), "ex-1/0/execution.refused");
    assert_eq!(e.get("data"), Some(&status));
    assert_eq!(s(&e, "time"), "2026-01-01T00:00:00.000Z");
}

#[test]
fn heartbeats_and_recalls() {
    let active = vec!["ex-1".to_owned()];
    let hb = heartbeat(&Heartbeat {
        device: "sim-hob-robot",
        boot: 5,
        n: 2,
        now_ms: 0,
        active: &active,
        uptime_ms: 61_000,
        sim_clock_ms: 3_660_000,
        process: None,
    });
    assert_eq!(s(&hb, "type"), HEARTBEAT);
    assert_eq!(s(&hb, "id"), "sim-hob-robot/heartbeat/5/2");
    assert_eq!(s(&hb, "cookwalalatency"), "background");
    assert!(hb.get("cookwalaseq").is_none());
    assert_eq!(hb.pointer("/data/status").unwrap().as_str(), Some("busy"));
    assert_eq!(hb.pointer("/data/uptimeS").unwrap().as_i64(), Some(61));

    let doc = canonical_json::parse(
        br#"{"kind":"Recall","id":"rc-1","issuedAt":"2026-02-01T10:00:00Z"}"#,
    )
    .unwrap();
    let a = recall(&doc, 0);
    assert_eq!(a, recall(&doc, 99), "the same recall is the same event");
    assert_eq!(s(&a, "time"), "2026-02-01T10:00:00Z");
    assert_eq!(s(&a, "source"), HUB_SOURCE);
    assert!(s(&a, "id").starts_with("rc-1/recall.published/"));
    let revised = canonical_json::parse(
        br#"{"kind":"Recall","id":"rc-1","issuedAt":"2026-02-02T10:00:00Z"}"#,
    )
    .unwrap();
    assert_ne!(s(&recall(&revised, 0), "id"), s(&a, "id"));
}

#[test]
fn new_events_take_their_columns_from_the_document() {
    let e = heartbeat(&Heartbeat {
        device: "d",
        boot: 0,
        n: 0,
        now_ms: 0,
        active: &[],
        uptime_ms: 0,
        sim_clock_ms: 0,
        process: None,
    });
    let row = to_new(&e);
    assert_eq!(
        (row.id.as_str(), row.ty.as_str(), row.subject.as_str()),
        ("d/heartbeat/0/0", HEARTBEAT, "d")
    );
    assert_eq!(canonical_json::parse(row.body.as_bytes()).unwrap(), e);
    assert!(!row.body.contains('\n'));
}
