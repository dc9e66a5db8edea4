//! `dwp contract validate-contract` / `validate-journal`: output lines and exit codes.

use test_support::shared;

use crate::dwp;
use crate::support::{expect, text};

#[test]
fn both_fixture_contracts_validate() {
    let Some(v6) = shared("standards/dwp/fixtures/v6/contract-minimal.json") else { return };
    let Some(v7) = shared("standards/dwp/fixtures/v7/contract-minimal-v7.json") else { return };
    // The v6 fixture predates the draft-only gate-command check: as a draft it fails, as a
    // recorded contract it validates with WARN lines (upstream behaviour).
    let out = dwp(&["contract", "validate-contract", v6.to_str().unwrap()]);
    expect(
        &out,
        1,
        "FAIL contract.tasks: T-publish-schemas AC-valid-contract-shape check 'jsonschema Draft 2020-12 accepts the fixture document' starts with 'jsonschema'",
    );
    let out = dwp(&["contract", "validate-contract", "--recorded", v6.to_str().unwrap()]);
    expect(
        &out,
        0,
        "OK: v6 contract valid (plan PLAN_v6_contract_fixture, revision 1, 3 criteria, 2 tasks, contract_id 1ce682d409b7fc34813498a0b53765a40e11bb22c5e7a531d7b4a705d376cd5c)",
    );
    assert!(text(&out.stdout).starts_with(
        "WARN contract.acceptance: AC-prose-only-criterion is declared by no task gate_intent"
    ));
    let out = dwp(&["contract", "validate-contract", v7.to_str().unwrap()]);
    expect(
        &out,
        0,
        "OK: v7 contract valid (plan PLAN_v7_fixture_minimal, revision 1, 3 criteria, 2 tasks, contract_id c7969f00e7422e0567ed492442f90f1909c14e40d2d354fb2aa099f801304e9f)",
    );
}

#[test]
fn both_fixture_journals_validate_and_generations_never_mix() {
    let base = "standards/dwp/fixtures";
    let Some(old_v6j) = shared(&format!("{base}/v6/journal-events.ndjson")) else { return };
    // The upstream fixture at da57bb9e (see crates/dwp/tests/it/data/README.md).
    let v6j = std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../dwp/tests/it/data/journal-events-v6.ndjson"
    ));
    let Some(v6c) = shared(&format!("{base}/v6/contract-minimal.json")) else { return };
    let Some(v7j) = shared(&format!("{base}/v7/journal-delegation-v7.ndjson")) else { return };
    let Some(v7c) = shared(&format!("{base}/v7/contract-minimal-v7.json")) else { return };
    let (v6j, v6c, v7j, v7c) = (
        v6j.to_str().unwrap(),
        v6c.to_str().unwrap(),
        v7j.to_str().unwrap(),
        v7c.to_str().unwrap(),
    );
    let out = dwp(&["contract", "validate-journal", v6j, "--contract", v6c]);
    expect(
        &out,
        0,
        "OK: 14 journal events valid (adaptation x1, amendment x1, approval x1, control_pair x1, gate_run x1, intervention x1, journal_repair x1, observation x1, reconciliation x1, refusal x1, resource_sample x1, selection x1, task_start x1, view_render x1)",
    );
    // The older shared copy records a gate_run without its task: refused, as upstream does.
    let out = dwp(&["contract", "validate-journal", old_v6j.to_str().unwrap(), "--contract", v6c]);
    expect(&out, 1, "FAIL journal line 3: event: missing required field 'task'");
    let out = dwp(&["contract", "validate-journal", v7j, "--contract", v7c]);
    expect(&out, 0, "OK: 4 journal events valid (approval x1, delegation x2, task_start x1)");
    let out = dwp(&["contract", "validate-journal", v7j, "--contract", v6c]);
    expect(
        &out,
        1,
        "FAIL journal line 1: event.schema: expected 'https://deepworkplan.com/schema/journal-event/v6.json', found 'https://deepworkplan.com/schema/journal-event/v7.json' - mixed-era records are refused",
    );
    // A journal mixing generations is refused even without a contract.
    let dir = tempfile::tempdir().unwrap();
    let mixed = dir.path().join("mixed.ndjson");
    let mut body = std::fs::read_to_string(v6j).unwrap();
    body.push_str(
        &std::fs::read_to_string(v7j)
            .unwrap()
            .replace("\"seq\":1,", "\"seq\":15,")
            .replace("\"seq\":2,", "\"seq\":16,")
            .replace("\"seq\":3,", "\"seq\":17,")
            .replace("\"seq\":4,", "\"seq\":18,"),
    );
    std::fs::write(&mixed, body).unwrap();
    let out = dwp(&["contract", "validate-journal", mixed.to_str().unwrap(), "--contract", v6c]);
    expect(&out, 1, "FAIL journal line 15: event.schema");
}

#[test]
fn usage_and_unreadable_input_exit_codes() {
    expect(&dwp(&["contract", "validate-contract"]), 2, "");
    expect(&dwp(&["contract", "validate-journal"]), 2, "");
    expect(&dwp(&["contract", "validate-contract", "/nonexistent/c.json"]), 1, "ERROR:");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("j.ndjson");
    std::fs::write(&bad, "{\"a\":1}\n{torn\n").unwrap();
    expect(
        &dwp(&["contract", "validate-journal", bad.to_str().unwrap()]),
        1,
        "journal line 2 does not parse",
    );
    let c = dir.path().join("c.json");
    std::fs::write(&c, crate::support::CONTRACT.replace("\"revision\":1", "\"revision\":2"))
        .unwrap();
    expect(
        &dwp(&["contract", "validate-contract", c.to_str().unwrap()]),
        1,
        "FAIL contract.parent_contract_id: required for revision 2 - a revision must cite the contract it replaces",
    );
}
