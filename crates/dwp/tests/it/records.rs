//! Pure rules of part 2: control-pair verdicts and closure, review grammar, the scheduler's
//! ready list, and view determinism.

use canonical_json::{Value, parse};
use dwp::{outcomes, scheduler, views};

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

fn approval(seq: i64) -> Value {
    ev(
        seq,
        &format!(
            r#""type":"approval","actor":{{"kind":"human","identity":"dev"}},"authority":"dev","mechanism":"plan_authorship","plan_digest":"{}""#,
            "a".repeat(64)
        ),
    )
}

fn start(seq: i64) -> Value {
    ev(
        seq,
        r#""type":"task_start","actor":{"kind":"agent","identity":"caller"},"task":"T-implement","fingerprint":{"revision":"abc","dirty":""}"#,
    )
}

fn pair(seq: i64, old: &str, new: &str, verdict: &str, trust: &str) -> Value {
    let old_leg = if old.is_empty() {
        r#"{"available":false}"#.to_owned()
    } else {
        format!(r#"{{"available":true,"outcome":"{old}","log":"o.log"}}"#)
    };
    let actor = if trust == "observed" { "helper" } else { "agent" };
    ev(
        seq,
        &format!(
            r#""type":"control_pair","actor":{{"kind":"{actor}","identity":"x"}},"criterion":"AC-one","check_artifacts":["t.sh"],"starting_fingerprint":{{"revision":"abc","dirty":""}},"old_leg":{old_leg},"new_leg":{{"outcome":"{new}","log":"n.log"}},"verdict":"{verdict}","trust":"{trust}","evidence_path":"n.log""#
        ),
    )
}

fn mechanism(events: &[Value]) -> String {
    let c = outcomes::closure(&contract(), events);
    c.pointer("/criteria/0/mechanism").and_then(Value::as_str).unwrap().to_owned()
}

#[test]
fn only_fail_then_pass_discriminates() {
    for (old, new, expected) in [
        (Some(false), true, "discriminating"),
        (Some(true), true, "non_discriminating"),
        (Some(false), false, "non_discriminating"),
        (Some(true), false, "non_discriminating"),
        (None, true, "control_unavailable"),
        (None, false, "control_unavailable"),
    ] {
        assert_eq!(outcomes::verdict(old, new), expected, "{old:?} {new}");
    }
}

#[test]
fn controlled_criteria_close_only_on_an_observed_in_window_discriminating_pair() {
    let base = vec![approval(1), start(2)];
    let cases: &[(&[Value], &str)] = &[
        (&[], "open (no in-window control pair)"),
        (
            &[pair(3, "FAIL", "PASS", "discriminating", "asserted")],
            "open (pair is asserted, not executed - a claim is not behavior)",
        ),
        (
            &[pair(3, "PASS", "PASS", "non_discriminating", "observed")],
            "open (control did not discriminate: non_discriminating)",
        ),
        (
            &[pair(3, "", "PASS", "control_unavailable", "observed")],
            "blocked (control unavailable: the pair proves nothing and never rounds up)",
        ),
        (&[pair(3, "FAIL", "PASS", "discriminating", "observed")], "control_pair"),
        // An asserted claim never poisons a later executed pair.
        (
            &[
                pair(3, "FAIL", "PASS", "discriminating", "asserted"),
                pair(4, "FAIL", "PASS", "discriminating", "observed"),
            ],
            "control_pair",
        ),
    ];
    for (extra, expected) in cases {
        let mut events = base.clone();
        events.extend(extra.iter().cloned());
        assert_eq!(mechanism(&events), *expected);
    }
    // A pair from before the current attempt is out of window.
    let events = vec![
        approval(1),
        start(2),
        pair(3, "FAIL", "PASS", "discriminating", "observed"),
        start(4),
    ];
    assert_eq!(mechanism(&events), "open (no in-window control pair)");
}

#[test]
fn review_grammar_and_blocking() {
    assert_eq!(outcomes::review_statement("clean", None).unwrap(), "REVIEW: clean");
    assert_eq!(
        outcomes::review_statement("error", Some("timeout")).unwrap(),
        "REVIEW: error: timeout"
    );
    assert!(
        outcomes::review_statement("fine", None)
            .unwrap_err()
            .to_string()
            .contains("outside the closed set")
    );
    let obs = |seq: i64, st: &str| {
        ev(
            seq,
            &format!(
                r#""type":"observation","actor":{{"kind":"agent","identity":"a"}},"statement":"{st}","trust":"asserted""#
            ),
        )
    };
    let events = vec![approval(1), obs(2, "REVIEW: critical: leak"), obs(3, "REVIEW: nonsense")];
    let c = outcomes::closure(&contract(), &events);
    assert_eq!(c.pointer("/review/state").and_then(Value::as_str), Some("critical"));
    assert_eq!(c.get("plan_blocked").and_then(Value::as_bool), Some(true));
    let events = vec![approval(1), obs(2, "REVIEW: critical: leak"), obs(3, "REVIEW: clean")];
    let c = outcomes::closure(&contract(), &events);
    assert_eq!(c.get("review_blocks").and_then(Value::as_bool), Some(false));
}

#[test]
fn ready_ranks_by_waiting_then_contract_order() {
    let contract = contract();
    let events = vec![approval(1)];
    let ready = scheduler::ready(&contract, &events);
    assert_eq!(ready.len(), 1);
    assert_eq!(ready[0].get("waiting_since_seq").and_then(Value::as_i64), Some(1));
    assert_eq!(ready[0].get("aging"), Some(&Value::Null));
    // No approval: waiting counts from seq 1.
    assert_eq!(scheduler::ready(&contract, &[]).len(), 1);
    // The decision of a non-object proposal.
    let d = scheduler::authorize(&contract, CID, &events, &Value::Bool(true));
    assert_eq!(d.get("rule").and_then(Value::as_str), Some("proposal-shape"));
    assert!(!scheduler::accepted(&d));
}

#[test]
fn views_are_pure_and_stable() {
    let contract = contract();
    let events = vec![approval(1), start(2)];
    let snap = dwp::projection::snapshot(&contract, CID, &events, &[]);
    for name in views::VIEWS {
        let a = views::render_view(name, &events, &snap).unwrap();
        assert_eq!(Some(a.clone()), views::render_view(name, &events, &snap));
        assert!(a.ends_with('\n'));
    }
    assert!(views::render_view("nope", &events, &snap).is_none());
    let m = views::marker("tasks", CID, &"b".repeat(64), "2026-09-26T00:00:02Z");
    assert_eq!(
        m,
        "<!-- dwp-view: tasks | contract:1111111111111111 | snapshot:bbbbbbbbbbbbbbbb | rendered-at:2026-09-26T00:00:02Z -->"
    );
    assert!(!views::snapshot_stale(&snap, &events));
    let mut more = events.clone();
    more.push(ev(3, r#""type":"view_render","actor":{"kind":"helper","identity":"h"},"view":"tasks","snapshot_digest":"cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc""#));
    assert!(!views::snapshot_stale(&snap, &more), "provenance never makes a snapshot stale");
    more.push(start(4));
    assert!(views::snapshot_stale(&snap, &more));
}

#[test]
fn an_approved_amendment_retires_earlier_control_pairs() {
    let new_id = "2".repeat(64);
    let amendment = ev(
        4,
        &format!(
            r#""type":"amendment","actor":{{"kind":"human","identity":"lead"}},"original_criterion":"AC-one: a","observed_finding":"f","disposition":"revised","revised_criterion":"AC-one: b","reason":"f","authority":"lead","affected_tasks":["T-implement"],"evidence_invalidated":["AC-one"],"evidence_preserved":[],"note":"amendment to revision 2 contract {new_id} | marker""#
        ),
    );
    let base = vec![
        approval(1),
        start(2),
        pair(3, "FAIL", "PASS", "discriminating", "observed"),
        amendment,
    ];
    // Without its approval the amendment invalidates nothing.
    assert_eq!(mechanism(&base), "control_pair");
    let mut approved = base.clone();
    approved.push(ev(
        5,
        &format!(
            r#""type":"approval","actor":{{"kind":"human","identity":"lead"}},"authority":"lead","mechanism":"plan_authorship","plan_digest":"{}""#,
            "a".repeat(64)
        ),
    ));
    if let Some(o) = approved[4].as_object_mut() {
        o.insert("contract_id".to_owned(), Value::from(new_id.as_str()));
    }
    assert_eq!(mechanism(&approved), "open (no in-window control pair)");
}

/// The one seq rule, shared by the writer, the readers and `verify`: a JSON integer from 1 to
/// `i64::MAX`; the raw fast path of the compact parser agrees with the full one on every row.
#[test]
fn one_seq_rule_for_every_reader() {
    use dwp::event::{Compact, SeqProblem, is_record, record, valid_seq};
    let rows: [(&str, Result<i64, SeqProblem>); 12] = [
        ("1", Ok(1)),
        ("9223372036854775807", Ok(i64::MAX)),
        ("9223372036854775808", Err(SeqProblem::TooLarge)),
        ("123456789012345678901234567890", Err(SeqProblem::TooLarge)),
        ("-9223372036854775809", Err(SeqProblem::NotPositive)),
        ("0", Err(SeqProblem::NotPositive)),
        ("-0", Err(SeqProblem::NotPositive)),
        ("-1", Err(SeqProblem::NotPositive)),
        ("1.5", Err(SeqProblem::NotInteger)),
        ("1e3", Err(SeqProblem::NotInteger)),
        ("1.0", Err(SeqProblem::NotInteger)),
        ("\"7\"", Err(SeqProblem::NotInteger)),
    ];
    for (seq, expected) in rows {
        let line = format!("{{\"type\":\"observation\",\"seq\":{seq}}}");
        let value = canonical_json::parse(line.as_bytes()).unwrap();
        assert_eq!(valid_seq(value.get("seq")), expected, "{seq}");
        assert_eq!(Compact::parse(line.as_bytes()).unwrap().checked_seq(), expected, "{seq}");
        assert_eq!(record(line.as_bytes()).is_some(), expected.is_ok(), "{seq}");
        assert_eq!(is_record(line.as_bytes()), expected.is_ok(), "{seq}");
    }
    assert_eq!(valid_seq(None), Err(SeqProblem::Missing));
    for line in ["[1]", "{}", "{\"seq\":1,\"seq\":2}", "{\"seq\":1"] {
        assert!(record(line.as_bytes()).is_none() && !is_record(line.as_bytes()), "{line}");
    }
}

/// Invariant findings read each invariant's latest evaluation from the statement forms
/// `X: pass`, `X: fail`, `X: fail: …` (overlapping `: fail:` included), as a search per
/// invariant would.
#[test]
fn invariant_findings_take_the_latest_evaluation_of_each_id() {
    let contract =
        parse(br#"{"invariants":[{"id":"A"},{"id":"A: fail"},{"id":"B"},{"id":"C"},{"id":"D"}]}"#)
            .unwrap();
    let obs = |seq: i64, st: &str| {
        parse(format!(r#"{{"type":"observation","seq":{seq},"statement":"{st}"}}"#).as_bytes())
            .unwrap()
    };
    let events = [
        obs(1, "B: fail"),
        obs(2, "A: fail: fail: why"),
        obs(3, "B: pass"),
        obs(4, "C: passed"),
        obs(5, "D: pass"),
    ];
    let findings = dwp::projection::invariant_findings(&contract, &events, Some(5));
    assert_eq!(
        findings,
        [
            "A last evaluated at seq 2, before the task start 5",
            "A: fail last evaluated at seq 2, before the task start 5",
            "B last evaluated at seq 3, before the task start 5",
            "C never evaluated",
        ]
    );
}
