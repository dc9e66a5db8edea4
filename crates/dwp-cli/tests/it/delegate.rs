//! v7 delegation: every launch refusal recorded with exit 5, addon-provided abilities, result
//! digests, read-only delegates, and completion waiting for open delegations.

use canonical_json::Value;

use crate::support::{Scratch, expect};

fn v7(grant: bool) -> Scratch {
    let s = Scratch::new();
    let mut c = std::fs::read_to_string(s.contract_file())
        .unwrap()
        .replace("plan-contract/v6.json", "plan-contract/v7.json");
    if grant {
        c = c.replace(
            r#""granted":["gate_command_exec"]"#,
            r#""granted":["gate_command_exec","agent_delegation"]"#,
        );
    }
    std::fs::write(s.contract_file(), c).unwrap();
    s.materialize();
    s
}

fn launch(s: &Scratch, json: &str, caps: &str) -> std::process::Output {
    s.ledger(&["delegate", "launch", "--task", "T-one", "--json", json, "--caps", caps])
}

const READ_ONLY: &str = r#"{"via":"kit","transport":"headless","worktree":null,"prompt_digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","delegation_id":"d1"}"#;

fn install_addon(s: &Scratch) {
    let dir = s.root.join(".dwp/addons/kit");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("detect.sh"), "echo '{\"interface\": 1}'\n").unwrap();
    std::fs::write(
        dir.join("addon.json"),
        r#"{"schema":"https://deepworkplan.com/schema/addon-descriptor/v1.json","key":"kit","product":{"repo":"Example/kit","tag":"v1.0.0","interface":1},"detect":{"command":"sh .dwp/addons/kit/detect.sh","interface_from":"json:interface"},"provides_abilities":["subagents"],"requires_grants":["agent_delegation"],"transport":"headless"}"#,
    )
    .unwrap();
    std::fs::write(s.root.join(".dwp/config.json"), r#"{"addons":{"kit":{"enabled":true}}}"#)
        .unwrap();
}

fn refusals(s: &Scratch) -> usize {
    s.journal().iter().filter(|e| e.get("type").and_then(Value::as_str) == Some("refusal")).count()
}

#[test]
fn launch_refusals_are_recorded_and_exit_5() {
    let v6 = Scratch::new();
    v6.materialize();
    expect(
        &launch(&v6, READ_ONLY, "{}"),
        5,
        "REFUSED: delegation refused: this plan is v6 - only v7 plans record delegation",
    );
    assert_eq!(refusals(&v6), 1);
    let last = v6.journal().last().cloned().unwrap();
    assert_eq!(last.get("subject").and_then(Value::as_str), Some("delegate T-one"));
    assert_eq!(last.get("stage").and_then(Value::as_str), Some("dispatch"));

    expect(&launch(&v7(false), READ_ONLY, "{}"), 5, "the contract does not grant agent_delegation");

    let s = v7(true);
    expect(
        &launch(&s, READ_ONLY, "{}"),
        5,
        "the task has not started - start it before delegating",
    );
    s.ledger(&["start", "--task", "T-one"]);
    let writable = READ_ONLY.replace(r#""worktree":null"#, r#""worktree":"../wt""#);
    expect(
        &launch(&s, &writable, "{}"),
        5,
        "the task is not marked parallel_safe by create and the delegate is not read-only (worktree null)",
    );
    expect(&launch(&s, READ_ONLY, "{}"), 5, "via 'kit' is not a valid in-pack addon (");
    install_addon(&s);
    std::fs::write(s.root.join(".dwp/config.json"), r#"{"addons":{}}"#).unwrap();
    expect(
        &launch(&s, READ_ONLY, "{}"),
        5,
        "addon kit is not enabled and detected with a compatible interface (effective subagents sources: none)",
    );
    // A host claim never substitutes for the addon.
    expect(
        &launch(&s, READ_ONLY, r#"{"subagents":true}"#),
        5,
        "(effective subagents sources: host)",
    );
    let interactive = READ_ONLY.replace("headless", "interactive");
    expect(
        &launch(&s, &interactive, "{}"),
        5,
        "addon kit carries transport 'headless', not 'interactive'",
    );
    assert_eq!(refusals(&s), 6);
    expect(
        &s.ledger(&["delegate", "launch", "--json", READ_ONLY]),
        2,
        "delegate launch requires --task",
    );
}

#[test]
fn a_delegation_launches_collects_and_never_satisfies_a_criterion() {
    let s = v7(true);
    s.ledger(&["start", "--task", "T-one"]);
    install_addon(&s);
    expect(
        &launch(&s, READ_ONLY, "{}"),
        0,
        "OK: delegation d1 launched at seq 3 (asserted until a gate observes the result)",
    );
    let ev = s.journal().last().cloned().unwrap();
    assert_eq!(ev.get("type").and_then(Value::as_str), Some("delegation"));
    assert!(ev.get("prompt_digest").and_then(Value::as_str).unwrap().starts_with("sha256:"));
    assert!(ev.get("note").and_then(Value::as_str).unwrap().starts_with("read-only tree "));
    assert_eq!(ev.get("worktree"), Some(&Value::Null));
    expect(&launch(&s, READ_ONLY, "{}"), 5, "delegation_id d1 already recorded");
    expect(&s.ledger(&["delegate", "observe", "--task", "T-one"]), 0, "\"delegation_id\": \"d1\",");

    // A read-only delegate that changed the tree fails.
    let d2 = READ_ONLY.replace("\"d1\"", "\"d2\"");
    expect(&launch(&s, &d2, "{}"), 0, "OK: delegation d2 launched");
    std::fs::write(s.root.join("src.txt"), "touched\n").unwrap();
    expect(
        &s.ledger(&[
            "delegate",
            "cancel",
            "--task",
            "T-one",
            "--json",
            r#"{"delegation_id":"d2"}"#,
        ]),
        5,
        "delegation d2 was launched read-only but the working tree changed — recorded failed, not cancelled",
    );
    std::fs::write(s.root.join("src.txt"), "hello\n").unwrap();

    // Completion waits for open delegations; a delegation never satisfies a criterion.
    s.ledger(&["gate", "--task", "T-one", "--criterion", "AC-pass", "--json", "\"true\""]);
    std::fs::write(s.plan().join("NOTE.txt"), "read\n").unwrap();
    s.ledger(&[
        "signoff",
        "--criterion",
        "AC-review",
        "--evidence-path",
        "NOTE.txt",
        "--authority",
        "dev",
    ]);
    expect(&s.ledger(&["complete", "--task", "T-one"]), 4, "still open");

    std::fs::write(s.plan().join("result.md"), "summary\n").unwrap();
    let collect = r#"{"delegation_id":"d1","state":"completed","result_path":"result.md"}"#;
    expect(
        &s.ledger(&["delegate", "collect", "--task", "T-one", "--json", collect]),
        0,
        "OK: delegation d1 completed",
    );
    let ev = s.journal().last().cloned().unwrap();
    assert_eq!(
        ev.get("result_digest").and_then(Value::as_str).map(str::to_owned),
        Some(canonical_json::digest::sha256_prefixed(b"summary\n"))
    );
    expect(
        &s.ledger(&[
            "delegate",
            "cancel",
            "--task",
            "T-one",
            "--json",
            r#"{"delegation_id":"d1"}"#,
        ]),
        5,
        "delegation d1 is already completed",
    );
    expect(
        &s.ledger(&[
            "delegate",
            "cancel",
            "--task",
            "T-one",
            "--json",
            r#"{"delegation_id":"zz"}"#,
        ]),
        5,
        "no launched delegation 'zz' for this task",
    );
    expect(&s.ledger(&["complete", "--task", "T-one"]), 0, "OK: T-one criteria satisfied");
}

#[test]
fn addon_abilities_feed_the_routing_posture() {
    let s = v7(true);
    let plan = s.plan();
    let p = plan.to_str().unwrap();
    let routing = |extra: &[&str]| {
        let mut args = vec!["resources", "--plan", p, "routing"];
        args.extend_from_slice(extra);
        let out = crate::dwp(&args);
        assert_eq!(out.status.code(), Some(0));
        canonical_json::parse(&out.stdout).unwrap()
    };
    assert_eq!(
        routing(&[]).pointer("/parallel/posture").and_then(Value::as_str),
        Some("sequential_only")
    );
    install_addon(&s);
    let doc = routing(&[]);
    assert_eq!(
        doc.pointer("/parallel/posture").and_then(Value::as_str),
        Some("parallel_authorized")
    );
    assert_eq!(
        doc.pointer("/ability_sources/subagents/0").and_then(Value::as_str),
        Some("addon:kit")
    );
    assert_eq!(
        routing(&["--host-only"]).pointer("/parallel/posture").and_then(Value::as_str),
        Some("sequential_only")
    );
    // A pinned interface the product does not report contributes nothing (one warning).
    std::fs::write(s.root.join(".dwp/addons/kit/detect.sh"), "echo '{\"interface\": 2}'\n")
        .unwrap();
    let out = crate::dwp(&["resources", "--plan", p, "abilities"]);
    expect(
        &out,
        0,
        "WARNING: addon kit: enabled but contributes nothing — unknown interface major 2 (pinned 1)",
    );
}

/// Upstream parity (`resources.effective_abilities`, `config.descriptor_errors`): an addon's
/// `requires_grants` is checked against the grant vocabulary only; effective abilities do not
/// read the contract, so an ability counts even when the contract lacks a required grant. The
/// grant side is enforced where a plan acts: `routing` names the missing grant and
/// `delegate launch` refuses without `agent_delegation` (recorded, exit 5).
#[test]
fn required_grants_do_not_filter_abilities_but_gate_routing_and_launch() {
    let s = v7(false);
    install_addon(&s);
    let dir = s.root.join(".dwp/addons/meter");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("detect.sh"), "echo '{\"interface\": 1}'\n").unwrap();
    std::fs::write(
        dir.join("addon.json"),
        r#"{"key":"meter","product":{"repo":"Example/meter","tag":"v1.0.0","interface":1},"detect":{"command":"sh .dwp/addons/meter/detect.sh","interface_from":"json:interface"},"provides_abilities":["meter_spend"],"requires_grants":["host_adapter_metering","network_access"]}"#,
    )
    .unwrap();
    std::fs::write(
        s.root.join(".dwp/config.json"),
        r#"{"addons":{"kit":{"enabled":true},"meter":{"enabled":true}}}"#,
    )
    .unwrap();
    let plan = s.plan();
    let p = plan.to_str().unwrap();
    let json = |args: &[&str]| {
        let mut all = vec!["resources", "--plan", p];
        all.extend_from_slice(args);
        let out = crate::dwp(&all);
        assert_eq!(out.status.code(), Some(0), "{}", crate::support::text(&out.stderr));
        assert_eq!(crate::support::text(&out.stderr), "");
        canonical_json::parse(&out.stdout).unwrap()
    };
    let abilities = json(&["abilities"]);
    for (ability, source) in [("subagents", "addon:kit"), ("meter_spend", "addon:meter")] {
        assert_eq!(
            abilities.pointer(&format!("/abilities/{ability}")).and_then(Value::as_bool),
            Some(true),
            "{ability}: {abilities:?}"
        );
        assert_eq!(
            abilities.pointer(&format!("/sources/{ability}/0")).and_then(Value::as_str),
            Some(source)
        );
    }
    let routing = json(&["routing"]);
    assert_eq!(
        routing.pointer("/parallel/posture").and_then(Value::as_str),
        Some("sequential_only")
    );
    let missing = routing.pointer("/parallel/missing").cloned().unwrap();
    assert_eq!(missing, canonical_json::parse(br#"["contract grant agent_delegation"]"#).unwrap());
    assert_eq!(
        routing.pointer("/ability_sources/subagents/0").and_then(Value::as_str),
        Some("addon:kit")
    );
    s.ledger(&["start", "--task", "T-one"]);
    let before = refusals(&s);
    expect(&launch(&s, READ_ONLY, "{}"), 5, "the contract does not grant agent_delegation");
    assert_eq!(refusals(&s), before + 1);
}

/// herdr declares `regex:<pattern>`: the first group of the first match in the detect output
/// is the interface major (as upstream `config._read_interface`).
#[test]
fn an_addon_interface_can_be_read_by_a_regex() {
    let s = v7(true);
    let plan = s.plan();
    let p = plan.to_str().unwrap();
    install_addon(&s);
    let descriptor = s.root.join(".dwp/addons/kit/addon.json");
    let text = std::fs::read_to_string(&descriptor).unwrap();
    std::fs::write(
        &descriptor,
        text.replace(r#""json:interface""#, r#""regex:interface v(\\d+)\\.""#),
    )
    .unwrap();
    std::fs::write(s.root.join(".dwp/addons/kit/detect.sh"), "echo 'kit 3.1 (interface v1.4)'\n")
        .unwrap();
    let abilities = || crate::dwp(&["resources", "--plan", p, "abilities"]);
    let out = abilities();
    assert_eq!(out.status.code(), Some(0));
    let all = format!("{}{}", crate::support::text(&out.stdout), crate::support::text(&out.stderr));
    assert!(!all.contains("contributes nothing"), "{all}");
    let routing = crate::dwp(&["resources", "--plan", p, "routing"]);
    let doc = canonical_json::parse(&routing.stdout).unwrap();
    assert_eq!(
        doc.pointer("/ability_sources/subagents/0").and_then(Value::as_str),
        Some("addon:kit")
    );
    // Another major, or no match at all, contributes nothing.
    std::fs::write(s.root.join(".dwp/addons/kit/detect.sh"), "echo 'interface v2.0'\n").unwrap();
    expect(&abilities(), 0, "unknown interface major 2 (pinned 1)");
    std::fs::write(s.root.join(".dwp/addons/kit/detect.sh"), "echo 'no version here'\n").unwrap();
    expect(&abilities(), 0, "interface unreadable; treated as not available");
}
