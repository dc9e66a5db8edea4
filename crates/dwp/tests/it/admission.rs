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
    use dwp::refusal::Rule;
    let contract = contract();
    let task = dwp::projection::find_task(&contract, "T-implement").unwrap().clone();
    let admit = |criterion, started, command: &str| {
        gate::admit(
            &contract,
            "T-implement",
            &task,
            criterion,
            started,
            gate::Command::Text(command),
        )
    };
    let ok = admit(Some("AC-one"), true, "true").unwrap();
    assert_eq!((ok.criterion, ok.argv), ("AC-one", vec!["true".to_owned()]));
    let argv = ["true".to_owned()];
    let ok = gate::admit(
        &contract,
        "T-implement",
        &task,
        Some("AC-one"),
        true,
        gate::Command::Argv(&argv),
    );
    assert_eq!(ok.unwrap().argv, argv);
    // (criterion, started, command) → the rule and the start of its message.
    let refused: &[(Option<&str>, bool, &str, Rule, &str)] = &[
        (None, true, "true", Rule::GateIntent, "gate runs require a criterion"),
        (Some("AC-two"), true, "true", Rule::GateIntent, "criterion 'AC-two'"),
        (
            Some("AC-one"),
            false,
            "true",
            Rule::TaskWindow,
            "gate refused for T-implement: the task has no task_start",
        ),
        (
            Some("AC-one"),
            true,
            "make test",
            Rule::CommandClass,
            "gate command 'make' is outside the contract declared command classes ['true']",
        ),
        // Upstream compares the basename; a path-qualified program is never the class.
        (
            Some("AC-one"),
            true,
            "/usr/bin/true --quiet",
            Rule::CommandClass,
            "gate command program '/usr/bin/true'",
        ),
        (Some("AC-one"), true, "./true", Rule::CommandClass, "gate command program './true'"),
        (
            Some("AC-one"),
            true,
            "true && touch X",
            Rule::ShellSyntax,
            "gate command 'true && touch X' refused",
        ),
        (Some("AC-one"), true, "true $(touch X)", Rule::ShellSyntax, "gate command"),
        (Some("AC-one"), true, "true\ntouch X", Rule::ShellSyntax, "gate command"),
        (
            Some("AC-one"),
            true,
            "true 'open",
            Rule::ShellSyntax,
            "gate command \"true 'open\" does not parse",
        ),
        // The check declared for AC-one is `true`: another argv is not it.
        (
            Some("AC-one"),
            true,
            "true --quiet",
            Rule::CriterionBinding,
            "gate command 'true --quiet' is not the check 'true'",
        ),
    ];
    for (criterion, started, command, rule, start) in refused {
        let r = admit(*criterion, *started, command).unwrap_err();
        assert_eq!(r.rule, *rule, "{command:?}: {}", r.message);
        assert!(r.message.starts_with(start), "{command:?}: {}", r.message);
    }
}

/// The control-pair executor asks the same rules through `admit_command`: only the words of
/// the messages differ. A line break between a shell's words would be dropped by the word
/// splitter (and read as a separator by a shell), so it is refused; inside the quoted `-c`
/// script it is the script's own.
#[test]
fn the_control_executor_shares_the_command_rules() {
    use dwp::refusal::Rule;
    let contract = value(r#"{"scope":{"allowed_command_classes":["true","sh"]}}"#);
    let task = value(r#"{"gate_intent":[{"criterion":"AC-one","check":"a human reads it"}]}"#);
    let admit = |command: &str| {
        gate::admit_command(
            &contract,
            "T-x",
            &task,
            "AC-one",
            gate::Command::Text(command),
            gate::Executor::Control,
        )
    };
    let words = |w: &[&str]| w.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
    assert_eq!(admit("sh check.sh"), Ok(words(&["sh", "check.sh"])));
    assert_eq!(admit("sh -c 'true\ntrue'"), Ok(words(&["sh", "-c", "true\ntrue"])));
    let refused: &[(&str, Rule, &str)] = &[
        (
            "sh check.sh\ntouch X",
            Rule::ShellSyntax,
            "control command 'sh check.sh\\ntouch X' refused",
        ),
        ("sh -c 'true'\ntouch X", Rule::ShellSyntax, "control command"),
        ("sh check.sh\r\ntouch X", Rule::ShellSyntax, "control command"),
        ("ls", Rule::CommandClass, "control command 'ls' is outside the contract declared"),
        ("./true", Rule::CommandClass, "control command program './true'"),
    ];
    for (command, rule, start) in refused {
        let r = admit(command).unwrap_err();
        assert_eq!(r.rule, *rule, "{command:?}: {}", r.message);
        assert!(r.message.starts_with(start), "{command:?}: {}", r.message);
    }
    let r = admit("true && touch X").unwrap_err();
    assert!(r.message.contains("each control leg runs one program without a shell"), "{r:?}");
    assert!(r.message.contains("run sh -c '…'"), "{r:?}");
    let none = value(r#"{"scope":{"allowed_command_classes":[]}}"#);
    let r = gate::admit_command(
        &none,
        "T-x",
        &task,
        "AC-one",
        gate::Command::Text("true"),
        gate::Executor::Control,
    )
    .unwrap_err();
    assert!(r.message.starts_with("control pair refused: contract declared no command classes"));
}

#[test]
fn a_declared_check_binds_when_its_program_is_a_class() {
    let classes = ["true".to_owned(), "make".to_owned()];
    let task = |check: &str| {
        value(&format!(r#"{{"gate_intent":[{{"criterion":"AC-one","check":{check:?}}}]}}"#))
    };
    let cases: &[(&str, Option<&[&str]>)] = &[
        ("true", Some(&["true"])),
        ("make test -k 'a b'", Some(&["make", "test", "-k", "a b"])),
        // The contract validator reads a check's head by basename; so does the binding.
        ("/usr/bin/make test", Some(&["/usr/bin/make", "test"])),
        // A description, an unparseable check, or another program binds nothing.
        ("a human reads it", None),
        ("make 'open", None),
        ("cargo test", None),
    ];
    for (check, argv) in cases {
        let bound = gate::declared_check(&task(check), "AC-one", &classes);
        let expected = argv.map(|a| a.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>());
        assert_eq!(bound, expected, "{check}");
    }
    assert_eq!(gate::declared_check(&task("true"), "AC-two", &classes), None);
}

#[test]
fn a_refusal_is_laid_out_for_the_schema_and_checked_back() {
    use dwp::refusal::{Refusal, Rule, Stage, refusal_errors};
    let r = Refusal {
        request: "ledger gate",
        stage: Stage::Gate,
        rule: Rule::ShellSyntax,
        subject: "T-one".to_owned(),
        value: "x".repeat(201),
        message: "m".repeat(400),
    };
    let mut event = r.payload();
    assert_eq!(event.get("stage").and_then(Value::as_str), Some("gate"));
    let reason = event.get("reason").and_then(Value::as_str).unwrap().to_owned();
    assert!(reason.starts_with("shell-syntax: mmm") && reason.ends_with('…'));
    assert_eq!(reason.chars().count(), "shell-syntax: ".len() + 300 + 1);
    let note = r.note();
    assert!(note.starts_with("request: ledger gate; rule: shell-syntax; value: sha256:"));
    assert!(note.ends_with(" (201 bytes)"));
    event.insert("note".into(), Value::String(note));
    event.insert("type".into(), Value::String("refusal".into()));
    assert_eq!(refusal_errors(&Value::Object(event.clone())), Vec::<String>::new());
    event.insert("reason".into(), Value::String("prerequisite: not the rule".into()));
    assert_eq!(
        refusal_errors(&Value::Object(event.clone())),
        ["refusal reason does not name its rule shell-syntax"]
    );
    event.insert("stage".into(), Value::String("later".into()));
    event.insert("note".into(), Value::String("request: x; rule: nope; value: 'v'".into()));
    assert_eq!(refusal_errors(&Value::Object(event)).len(), 2);
    // Upstream's own form (no note) is well-formed too.
    let upstream = value(r#"{"type":"refusal","subject":"T-one","stage":"gate","reason":"r"}"#);
    assert!(refusal_errors(&upstream).is_empty());
    assert_eq!(
        dwp::refusal::subject(""),
        format!("sha256:{} (0 bytes)", canonical_json::digest::sha256_hex(b""))
    );
    assert_eq!(dwp::refusal::bounded("it's"), "\"it's\"");
}

#[test]
fn a_signoff_needs_an_asserted_criterion_an_authority_and_its_owning_task() {
    let contract = contract();
    // AC-one accepts only observed evidence
    let refused = gate::signoff_claim(&contract, "AC-one", Some("dev"), Some("r.md"));
    assert!(refused.unwrap_err().message.contains("accepts only observed"));
    let unknown = gate::signoff_claim(&contract, "AC-x", Some("dev"), None).unwrap_err();
    assert!(unknown.message.contains("'AC-x'"));
    assert_eq!(unknown.rule, dwp::refusal::Rule::UnknownId);
    let owner = gate::signoff_task(&contract, &[], "AC-one", None);
    assert!(owner.unwrap_err().message.contains("T-implement has not started"));
    let wrong = gate::signoff_task(&contract, &[], "AC-one", Some("T-other"));
    assert_eq!(
        wrong.unwrap_err().message,
        "signoff refused: AC-one is declared by T-implement, not T-other"
    );
    let none = gate::signoff_task(&contract, &[], "AC-x", None);
    assert!(none.unwrap_err().message.contains("no task gate_intent declares AC-x"));
}

#[test]
fn a_tasks_refusals_include_its_delegation_refusals_and_show_the_last_few() {
    let refusal = |seq: usize, subject: &str| {
        value(&format!(
            r#"{{"type":"refusal","seq":{seq},"subject":"{subject}","stage":"gate","reason":"r{seq}"}}"#
        ))
    };
    let mut events: Vec<Value> = (1..=7).map(|n| refusal(n, "T-one")).collect();
    events.push(refusal(8, "delegate T-one"));
    events.push(refusal(9, "T-two"));
    events.push(refusal(10, "delegate T-one-more"));
    let (shown, total) = dwp::status::task_refusals(&events, "T-one");
    assert_eq!(total, 8);
    let seqs: Vec<i64> =
        shown.iter().filter_map(|r| r.get("seq").and_then(Value::as_i64)).collect();
    assert_eq!(seqs, [4, 5, 6, 7, 8]);
    assert_eq!(dwp::status::task_refusals(&events, "T-two").1, 1);
    assert_eq!(dwp::status::task_refusals(&events, "T-three").1, 0);
}
