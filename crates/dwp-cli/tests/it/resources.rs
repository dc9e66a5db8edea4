//! `dwp resources`: effective modes, exhaustion holds, settlement and routing.

use canonical_json::Value;

use crate::support::{Scratch, expect, text};

fn res(s: &Scratch, args: &[&str]) -> std::process::Output {
    let plan = s.plan();
    let mut all = vec!["resources", "--plan", plan.to_str().unwrap()];
    all.extend_from_slice(args);
    crate::dwp(&all)
}

fn metered() -> Scratch {
    let s = Scratch::new();
    let contract = std::fs::read_to_string(s.contract_file()).unwrap().replace(
        r#""limits":[{"id":"wall_h","limit":1,"unit":"hours","enforcement":"advisory"}]"#,
        r#""limits":[{"id":"wall_h","limit":1,"unit":"hours","enforcement":"advisory"},{"id":"spend_usd","limit":10,"reserve":2,"unit":"USD","enforcement":"enforced","metering_source":"host meter"},{"id":"gate_retries","limit":3,"unit":"retries","enforcement":"enforced","metering_source":"journal"},{"id":"vibes","limit":1,"unit":"vibes","enforcement":"enforced","metering_source":"none"}]"#,
    );
    std::fs::write(s.contract_file(), contract).unwrap();
    s.materialize();
    s
}

fn modes(out: &std::process::Output) -> Vec<(String, String)> {
    let doc =
        canonical_json::parse(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)));
    doc.get("limits")
        .and_then(Value::as_array)
        .unwrap()
        .iter()
        .map(|r| {
            let f = |k: &str| r.get(k).and_then(Value::as_str).unwrap().to_owned();
            (f("limit_id"), f("effective_mode"))
        })
        .collect()
}

#[test]
fn report_names_each_limits_honest_mode() {
    let s = metered();
    let out = res(&s, &["report"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let m = modes(&out);
    assert_eq!(m[0].1, "advisory (declared advisory)");
    assert!(
        m[1].1.starts_with("advisory (host cannot meter: no meter_spend capability"),
        "{}",
        m[1].1
    );
    assert_eq!(m[2].1, "enforced (journal-computed counter)");
    assert!(m[3].1.starts_with("advisory (counter family unknown for unit 'vibes'"), "{}", m[3].1);
    let doc = canonical_json::parse(&out.stdout).unwrap();
    assert_eq!(doc.pointer("/limits/1/dispatch_ceiling").and_then(Value::as_f64), Some(8.0));
    assert_eq!(doc.pointer("/unsupported_counters/0").and_then(Value::as_str), Some("vibes"));
    let out = res(&s, &["report", "--caps", r#"{"meter_spend":true}"#]);
    assert!(modes(&out)[1].1.starts_with("enforced-pending-only (unmetered spend"));
    expect(
        &res(&s, &["report", "--caps", r#"{"time_travel":true}"#]),
        1,
        "ERROR: unknown host capability 'time_travel'",
    );
    expect(
        &crate::dwp(&["resources", "capabilities", "--caps", r#"{"subagents":1}"#]),
        0,
        "\"subagents\": true",
    );
}

#[test]
fn exhaustion_holds_until_recovered_and_settlements_happen_once() {
    let s = metered();
    expect(&res(&s, &["hold"]), 0, "OK: no resource hold");
    expect(
        &res(&s, &["exhaust", "--limit", "nope"]),
        1,
        "ERROR: limit 'nope' is not declared in the contract",
    );
    expect(
        &res(&s, &["exhaust", "--limit", "spend_usd", "--detail", "over budget"]),
        0,
        "OK: exhaustion recorded at seq 2",
    );
    expect(&res(&s, &["hold"]), 1, "HOLD: limit spend_usd (via seq 2) over budget");
    // Advisory limits never hold dispatch.
    expect(&res(&s, &["exhaust", "--limit", "wall_h"]), 0, "OK: exhaustion recorded at seq 3");
    expect(&res(&s, &["recover", "--limit", "spend_usd"]), 0, "OK: recovery recorded at seq 4");
    expect(&res(&s, &["hold"]), 0, "OK: no resource hold");
    let last = s.journal().last().cloned().unwrap();
    assert_eq!(last.get("statement").and_then(Value::as_str), Some("LIMIT: recovered spend_usd"));
    assert_eq!(last.get("trust").and_then(Value::as_str), Some("asserted"));

    expect(
        &res(&s, &["settle", "--key", "seq-9", "--disposition", "released"]),
        0,
        "OK: settlement recorded at seq 5",
    );
    expect(
        &res(&s, &["settle", "--key", "seq-9", "--disposition", "released"]),
        0,
        "OK: settlement recorded at seq 5",
    );
    expect(
        &res(&s, &["settle", "--key", "seq-9", "--disposition", "committed"]),
        1,
        "already settled as 'released' — settling again as 'committed' is the double-charge ambiguity",
    );
    expect(
        &res(&s, &["settle", "--key", "seq-9", "--disposition", "lost"]),
        1,
        "disposition 'lost' outside released/committed",
    );
    expect(&res(&s, &["settle", "--key", "seq-9"]), 2, "usage: dwp resources");
    assert_eq!(s.journal().len(), 5);
}

#[test]
fn routing_names_the_missing_side() {
    let s = metered();
    let out = res(&s, &["routing", "--caps", r#"{"subagents":true}"#]);
    let doc = canonical_json::parse(&out.stdout).unwrap();
    assert_eq!(doc.pointer("/model/posture").and_then(Value::as_str), Some("fixed_model"));
    assert_eq!(
        doc.pointer("/model/missing/0").and_then(Value::as_str),
        Some("contract grant model_routing")
    );
    assert_eq!(
        doc.pointer("/model/missing/1").and_then(Value::as_str),
        Some("host capability model_routing")
    );
    assert_eq!(doc.pointer("/parallel/posture").and_then(Value::as_str), Some("sequential_only"));
    assert_eq!(
        doc.pointer("/parallel/missing/0").and_then(Value::as_str),
        Some("contract grant agent_delegation")
    );
    assert_eq!(
        doc.pointer("/parallel/missing").and_then(Value::as_array).map(<[Value]>::len),
        Some(1)
    );
}
