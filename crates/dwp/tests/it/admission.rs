//! What an append may mint and what a gate admits (`dwp::mint`, `dwp::gate`).

use canonical_json::{Map, Value, parse};
use dwp::{gate, mint};

const CID: &str = "1111111111111111111111111111111111111111111111111111111111111111";

fn contract() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/it/data/baseline-contract.json"
    ))
    .unwrap();
    parse(text.as_bytes()).unwrap()
}

fn value(text: &str) -> Value {
    parse(text.as_bytes()).unwrap()
}

fn map(text: &str) -> Map {
    value(text).as_object().unwrap().clone()
}

#[test]
fn raw_appends_cannot_mint_gate_runs_delegations_or_observed_claims() {
    let agent = value(r#"{"kind":"agent","identity":"a"}"#);
    let meter = value(r#"{"kind":"host_adapter","identity":"m"}"#);
    assert!(mint::raw_append_refusal("gate_run", None, &agent).unwrap().starts_with("gate_run"));
    assert!(
        mint::raw_append_refusal("delegation", None, &agent).unwrap().starts_with("delegation")
    );
    let observed = Some("observed");
    assert!(mint::raw_append_refusal("observation", observed, &agent).is_some());
    assert!(mint::raw_append_refusal("resource_sample", observed, &agent).is_some());
    assert_eq!(mint::raw_append_refusal("resource_sample", observed, &meter), None);
    assert_eq!(mint::raw_append_refusal("observation", Some("asserted"), &agent), None);
    // a trust smuggled inside the payload counts like the flag; the flag wins
    let payload = map(r#"{"trust":"observed","evidence_path":"x.log"}"#);
    assert_eq!(mint::claimed(None, &payload, "trust"), Some("observed"));
    assert_eq!(mint::claimed(Some("asserted"), &payload, "trust"), Some("asserted"));
    assert!(mint::cites_evidence(Some("imported")) && !mint::cites_evidence(Some("asserted")));
    assert!(mint::needs_approval("task_start") && !mint::needs_approval("observation"));
}

#[test]
fn the_approval_gate_and_duplicates_are_read_from_the_events() {
    let approval = value(&format!(
        r#"{{"type":"approval","seq":3,"contract_id":"{CID}","actor":{{"kind":"human","identity":"dev"}}}}"#
    ));
    let note = value(&format!(
        r#"{{"type":"observation","seq":4,"contract_id":"{CID}","actor":{{"kind":"agent","identity":"a"}},"note":"n","text":"t"}}"#
    ));
    let events = [approval, note];
    assert_eq!(mint::approval_seq(&events, CID), Some(3));
    assert_eq!(mint::approval_seq(&events, "other"), None);
    assert_eq!(
        mint::approval_refusal_reason(CID),
        "no approval event cites the live contract_id 111111111111"
    );
    let agent = value(r#"{"kind":"agent","identity":"a"}"#);
    let same = mint::duplicate_of(&events, "observation", &map(r#"{"text":"t"}"#), &agent, CID);
    assert_eq!(same.map(dwp::projection::seq_of), Some(4));
    assert!(
        mint::duplicate_of(&events, "observation", &map(r#"{"text":"u"}"#), &agent, CID).is_none()
    );
}

#[test]
fn a_gate_is_admitted_for_a_declared_criterion_in_a_started_task_with_an_allowed_command() {
    let contract = contract();
    let task = dwp::projection::find_task(&contract, "T-implement").unwrap().clone();
    let admit = |criterion, started, command| {
        gate::admit(&contract, "T-implement", &task, criterion, started, command)
    };
    assert_eq!(admit(Some("AC-one"), true, "/usr/bin/true --quiet"), Ok("AC-one"));
    assert!(admit(None, true, "true").unwrap_err().starts_with("gate runs require a criterion"));
    assert!(admit(Some("AC-two"), true, "true").unwrap_err().starts_with("criterion 'AC-two'"));
    assert!(admit(Some("AC-one"), false, "true").unwrap_err().contains("has no task_start"));
    assert_eq!(
        admit(Some("AC-one"), true, "make test").unwrap_err(),
        "gate command 'make' is outside the contract declared command classes ['true']"
    );
}

#[test]
fn a_signoff_needs_an_asserted_criterion_an_authority_and_its_owning_task() {
    let contract = contract();
    // AC-one accepts only observed evidence
    let refused = gate::signoff_claim(&contract, "AC-one", Some("dev"), Some("r.md"));
    assert!(refused.unwrap_err().contains("accepts only observed"));
    assert!(
        gate::signoff_claim(&contract, "AC-x", Some("dev"), None).unwrap_err().contains("'AC-x'")
    );
    let owner = gate::signoff_task(&contract, &[], "AC-one", None);
    assert!(owner.unwrap_err().contains("T-implement has not started"));
    let wrong = gate::signoff_task(&contract, &[], "AC-one", Some("T-other"));
    assert_eq!(
        wrong.unwrap_err(),
        "signoff refused: AC-one is declared by T-implement, not T-other"
    );
    let none = gate::signoff_task(&contract, &[], "AC-x", None);
    assert!(none.unwrap_err().contains("no task gate_intent declares AC-x"));
}
