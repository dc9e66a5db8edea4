//! Projection semantics: evidence windows, restarts, invalidation, determinism.

use canonical_json::{Value, parse, to_python_pretty};
use dwp::projection::{criterion_states, invariant_findings, snapshot, task_status};

const CID: &str = "1111111111111111111111111111111111111111111111111111111111111111";

fn contract() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/it/data/baseline-contract.json"
    ))
    .unwrap();
    parse(text.as_bytes()).unwrap()
}

fn ev(seq: i64, body: &str) -> Value {
    let text = format!(
        r#"{{"schema":"https://deepworkplan.com/schema/journal-event/v6.json","seq":{seq},"ts":"2026-09-26T00:00:{seq:02}Z","plan":"PLAN_rust_port_baseline","contract_id":"{CID}",{body}}}"#
    );
    parse(text.as_bytes()).unwrap()
}

fn gate(seq: i64, exit: i64) -> Value {
    ev(
        seq,
        &format!(
            r#""type":"gate_run","actor":{{"kind":"helper","identity":"dwp-ledger/6.0"}},"command":"true","cwd":"/r","timeout_seconds":600,"exit_code":{exit},"task":"T-implement","criterion":"AC-one","trust":"observed","evidence_path":"gates/T-implement/{seq:03}-true.log""#
        ),
    )
}

fn start(seq: i64) -> Value {
    ev(
        seq,
        r#""type":"task_start","actor":{"kind":"agent","identity":"caller"},"task":"T-implement""#,
    )
}

#[test]
fn a_restart_reopens_the_window_and_reports_stale_seqs() {
    let c = contract();
    let events = vec![
        ev(
            1,
            r#""type":"approval","actor":{"kind":"human","identity":"dev"},"authority":"dev","mechanism":"plan_authorship","plan_digest":"2222222222222222222222222222222222222222222222222222222222222222""#,
        ),
        start(2),
        gate(3, 0),
    ];
    assert_eq!(task_status(&c, &events, "T-implement"), "completed");
    let mut restarted = events.clone();
    restarted.push(start(4));
    assert_eq!(task_status(&c, &restarted, "T-implement"), "in_progress");
    let states = criterion_states(&c, &restarted, "T-implement").unwrap();
    assert_eq!(states[0].get("stale_seqs").unwrap(), &parse(b"[3]").unwrap());
    assert_eq!(states[0].get("started_seq").and_then(Value::as_i64), Some(4));
    restarted.push(gate(5, 1));
    assert_eq!(task_status(&c, &restarted, "T-implement"), "in_progress");
    restarted.push(gate(6, 0));
    let states = criterion_states(&c, &restarted, "T-implement").unwrap();
    assert_eq!(states[0].get("via_seq").and_then(Value::as_i64), Some(6));
}

#[test]
fn an_approved_amendment_invalidates_earlier_evidence() {
    let c = contract();
    let new_id = "3333333333333333333333333333333333333333333333333333333333333333";
    let mut events = vec![start(1), gate(2, 0)];
    events.push(ev(3, &format!(r#""type":"amendment","actor":{{"kind":"human","identity":"dev"}},"note":"amendment to revision 2 contract {new_id} | marker","original_criterion":"a","observed_finding":"b","disposition":"revised","revised_criterion":"c","reason":"d","authority":"dev","affected_tasks":["T-implement"],"evidence_invalidated":["AC-one"],"evidence_preserved":[]"#)));
    // Not yet approved: nothing is invalidated.
    assert_eq!(task_status(&c, &events, "T-implement"), "completed");
    let mut approval = ev(
        4,
        r#""type":"approval","actor":{"kind":"human","identity":"dev"},"authority":"dev","mechanism":"plan_authorship","plan_digest":"2222222222222222222222222222222222222222222222222222222222222222""#,
    );
    approval.as_object_mut().unwrap().insert("contract_id".into(), Value::String(new_id.into()));
    events.push(approval);
    assert_eq!(task_status(&c, &events, "T-implement"), "in_progress");
}

#[test]
fn invariants_must_pass_after_the_task_start() {
    let c = contract();
    let obs = |seq: i64, st: &str| {
        ev(
            seq,
            &format!(
                r#""type":"observation","actor":{{"kind":"agent","identity":"a"}},"statement":"{st}","trust":"asserted""#
            ),
        )
    };
    assert_eq!(
        invariant_findings(&c, &[], Some(1)),
        vec!["INV-closed-objects never evaluated".to_owned()]
    );
    let events = vec![obs(1, "INV-closed-objects: pass"), start(2)];
    assert_eq!(
        invariant_findings(&c, &events, Some(2)),
        vec!["INV-closed-objects last evaluated at seq 1, before the task start 2".to_owned()]
    );
    let events = vec![start(1), obs(2, "INV-closed-objects: fail: broke")];
    assert_eq!(
        invariant_findings(&c, &events, Some(1)),
        vec!["INV-closed-objects failed (seq 2)".to_owned()]
    );
    let events = vec![start(1), obs(2, "INV-closed-objects: pass")];
    assert!(invariant_findings(&c, &events, Some(1)).is_empty());
}

#[test]
fn snapshot_bytes_are_deterministic_and_ignore_view_renders() {
    let c = contract();
    let mut events = vec![start(1), gate(2, 0)];
    let a = to_python_pretty(&snapshot(&c, CID, &events, &[])).unwrap();
    let b = to_python_pretty(&snapshot(&c, CID, &events, &[])).unwrap();
    assert_eq!(a, b);
    events.push(ev(3, r#""type":"view_render","actor":{"kind":"helper","identity":"views"},"view":"tasks","snapshot_digest":"4444444444444444444444444444444444444444444444444444444444444444""#));
    let c2 = to_python_pretty(&snapshot(&c, CID, &events, &[])).unwrap();
    assert_eq!(a, c2, "view_render is provenance only");
    let text = String::from_utf8(a).unwrap();
    assert!(
        text.starts_with("{\n  \"blocker\": null,\n  \"checkpoint\": null,\n  \"contract_id\": "),
        "{text}"
    );
    assert!(text.contains("\"updated_at\": \"2026-09-26T00:00:02Z\""));
    assert!(text.ends_with("}\n"));
}
