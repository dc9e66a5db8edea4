//! Journal-event validation (`journal_event_errors`, `journal_errors`) and the `OK:` type
//! counts.

use std::collections::{BTreeMap, HashMap, HashSet};

use canonical_json::{Map, Number, Value};

use super::fields::{Kind, closed, field, field_str, int_ge, is_int, is_num, num_lt, str_list};
use super::schema::{
    ADAPTATION_FIELDS, ADAPTATION_KINDS, EVENT_TYPES_V6, EVIDENCE_TYPES, EXECUTING_ACTORS,
    Generation, INTERVENTION_CATEGORIES, JOURNAL_URL_V6, MECHANISMS, TRUST_LABELS,
    event_generation, journal_url_for,
};
use crate::py::{
    is_addon_id, is_criterion_id, is_datetime, is_delegation_id, is_hex64, is_limit_id, is_plan_id,
    is_prefixed_digest, is_task_id, non_blank, repr, repr_opt, repr_str, str_opt, truthy,
};

const ENVELOPE: [&str; 8] = ["schema", "type", "seq", "ts", "plan", "contract_id", "actor", "note"];

fn closed_event(event: &Map, extra: &[&str], errors: &mut Vec<String>) {
    let mut known: Vec<&str> = ENVELOPE.to_vec();
    known.extend_from_slice(extra);
    closed(event, &known, "event", errors);
}

/// The contract's tasks by id with the criteria of their gate intents, built once so that
/// validating a journal of E events against a contract of T tasks costs E + T, not E x T (a
/// search of the task list per `gate_run` did).
#[derive(Debug, Default)]
pub struct TaskIndex<'a> {
    /// Task id -> the canonical text of each gate-intent criterion (first task of an id wins,
    /// as the search did).
    tasks: HashMap<&'a str, HashSet<String>>,
}

impl<'a> TaskIndex<'a> {
    /// The index of `contract`'s tasks (empty without a contract).
    pub fn new(contract: Option<&'a Value>) -> TaskIndex<'a> {
        let mut tasks: HashMap<&'a str, HashSet<String>> = HashMap::new();
        let list = contract.and_then(|c| c.get("tasks")).and_then(Value::as_array);
        for task in list.unwrap_or(&[]) {
            let Some(id) = task.get("id").and_then(Value::as_str) else { continue };
            if tasks.contains_key(id) {
                continue;
            }
            let intents = task.get("gate_intent").and_then(Value::as_array).unwrap_or(&[]);
            let criteria = intents.iter().filter_map(|i| i.get("criterion")).map(key).collect();
            tasks.insert(id, criteria);
        }
        TaskIndex { tasks }
    }
}

/// A JSON value as a set key: its canonical text (equal values, equal keys).
fn key(value: &Value) -> String {
    canonical_json::to_python_compact(value)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// All validation errors of one journal event (`journal_event_errors`).
pub fn journal_event_errors(event: &Value, contract: Option<&Value>) -> Vec<String> {
    journal_event_errors_with(event, contract, &TaskIndex::new(contract))
}

/// [`journal_event_errors`] with the contract's [`TaskIndex`] built once by the caller (for
/// validating many events).
pub fn journal_event_errors_with(
    event: &Value,
    contract: Option<&Value>,
    index: &TaskIndex<'_>,
) -> Vec<String> {
    let mut errors = Vec::new();
    let Some(ev) = event.as_object() else {
        return vec!["journal event: expected a JSON object".to_owned()];
    };
    let expected = contract.map(journal_url_for);
    let generation = event_generation(event);
    let url = ev.get("schema");
    if generation.is_none() || expected.is_some_and(|e| url.and_then(Value::as_str) != Some(e)) {
        errors.push(format!(
            "event.schema: expected {}, found {} - mixed-era records are refused; older plans \
             keep their own tooling (section 9.1)",
            repr_str(expected.unwrap_or(JOURNAL_URL_V6)),
            repr_opt(url)
        ));
        return errors;
    }
    let v7 = generation == Some(Generation::V7);
    let etype = ev.get("type").and_then(Value::as_str);
    let known_type =
        etype.is_some_and(|t| EVENT_TYPES_V6.contains(&t) || (v7 && t == "delegation"));
    let Some(etype) = etype.filter(|_| known_type) else {
        let mut catalog: Vec<&str> = EVENT_TYPES_V6.to_vec();
        if v7 {
            catalog.push("delegation");
        }
        errors.push(format!(
            "event.type: unknown event type {} (closed catalog: {})",
            repr_opt(ev.get("type")),
            catalog.join(", ")
        ));
        return errors;
    };
    // The one seq rule (`event::valid_seq`), which the writer and every reader share.
    match crate::event::valid_seq(ev.get("seq")) {
        Ok(_) => {}
        Err(crate::event::SeqProblem::TooLarge) => errors.push(
            "event.seq: expected an integer >= 1 that fits in 63 bits (at most \
             9223372036854775807)"
                .to_owned(),
        ),
        Err(_) => errors.push("event.seq: expected an integer >= 1".to_owned()),
    }
    if !ev.get("ts").and_then(Value::as_str).is_some_and(is_datetime) {
        errors.push(
            "event.ts: expected an RFC 3339 timestamp (the scheduler's clock, A11)".to_owned(),
        );
    }
    if !is_plan_id(&str_opt(ev.get("plan"))) {
        errors.push("event.plan: expected a PLAN_* identifier".to_owned());
    }
    field(ev, "contract_id", Kind::Hex64, "event", &mut errors, false);
    match ev.get("actor").and_then(Value::as_object) {
        None => errors.push("event.actor: expected an object".to_owned()),
        Some(actor) => {
            closed(actor, &["kind", "identity"], "event.actor", &mut errors);
            if !actor
                .get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| ["helper", "agent", "host_adapter", "human"].contains(&k))
            {
                errors
                    .push("event.actor.kind: expected helper/agent/host_adapter/human".to_owned());
            }
            let ok = actor
                .get("identity")
                .and_then(Value::as_str)
                .is_some_and(|s| non_blank(s) && s.chars().count() <= 100);
            if !ok {
                errors.push(
                    "event.actor.identity: expected a non-empty string (<= 100 chars)".to_owned(),
                );
            }
        }
    }
    if let Some(note) = ev.get("note")
        && note.as_str().is_none_or(|s| s.chars().count() > 500)
    {
        errors.push("event.note: expected a string <= 500 chars".to_owned());
    }
    if !errors.is_empty() {
        return errors;
    }
    if let Some(contract) = contract
        && ev.get("plan") != contract.get("plan")
    {
        errors.push(format!(
            "event.plan: {} does not match the contract plan {} - a journal belongs to one plan",
            str_opt(ev.get("plan")),
            str_opt(contract.get("plan"))
        ));
    }
    match etype {
        "task_start" => v_task_start(ev, &mut errors),
        "approval" => v_approval(ev, &mut errors),
        "gate_run" => v_gate_run(ev, &mut errors, contract.map(|_| index)),
        "observation" => {
            closed_event(ev, &["statement", "trust", "evidence_path"], &mut errors);
            field(ev, "statement", Kind::Str, "event", &mut errors, false);
        }
        "adaptation" => v_adaptation(ev, &mut errors),
        "amendment" => v_amendment(ev, &mut errors),
        "intervention" => v_intervention(ev, &mut errors),
        "resource_sample" => v_resource_sample(ev, &mut errors),
        "control_pair" => v_control_pair(ev, &mut errors),
        "selection" => v_selection(ev, &mut errors),
        "refusal" => v_refusal(ev, &mut errors),
        "view_render" => v_view_render(ev, &mut errors),
        "reconciliation" => {
            closed_event(ev, &["trigger", "editor", "authority"], &mut errors);
            for key in ["trigger", "editor", "authority"] {
                field(ev, key, Kind::Str, "event", &mut errors, false);
            }
        }
        "journal_repair" => {
            closed_event(ev, &["byte_offset", "cause"], &mut errors);
            if !(is_int(ev.get("byte_offset")) && int_ge(ev.get("byte_offset"), 0)) {
                errors.push("event.byte_offset: expected an integer >= 0".to_owned());
            }
            field(ev, "cause", Kind::Str, "event", &mut errors, false);
        }
        _ => v_delegation(ev, &mut errors),
    }
    trust_rules(ev, etype, &mut errors);
    errors
}

fn trust_rules(ev: &Map, etype: &str, errors: &mut Vec<String>) {
    if !EVIDENCE_TYPES.contains(&etype) {
        if ev.contains_key("trust") {
            errors.push(format!(
                "event: trust labels exist only on evidence types ({}), not on {}",
                EVIDENCE_TYPES.join(", "),
                repr_str(etype)
            ));
        }
        return;
    }
    let Some(trust) = ev.get("trust").and_then(Value::as_str).filter(|t| TRUST_LABELS.contains(t))
    else {
        errors.push(format!("event.trust: expected one of {}", TRUST_LABELS.join("/")));
        return;
    };
    if (trust == "observed" || trust == "imported") && !truthy(ev.get("evidence_path")) {
        errors.push(format!(
            "event.evidence_path: required for trust={trust} - evidence must cite a recoverable \
             pointer"
        ));
    }
    let kind = ev.get("actor").and_then(|a| a.get("kind"));
    if trust == "observed"
        && !kind.and_then(Value::as_str).is_some_and(|k| EXECUTING_ACTORS.contains(&k))
    {
        errors.push(format!(
            "event.trust: observed requires a shipped helper or host adapter to have EXECUTED \
             the check, but actor.kind={} only mediates a write - record it as asserted with \
             the mediation named (A1)",
            repr_opt(kind)
        ));
    }
}

fn task_field(ev: &Map, errors: &mut Vec<String>) -> Option<String> {
    let tid = field_str(ev, "task", Kind::StrAny, "event", errors);
    if let Some(t) = tid
        && !is_task_id(t)
    {
        errors.push("event.task: expected a T-* id".to_owned());
    }
    tid.map(str::to_owned)
}

fn fingerprint_errors(fp: Option<&Value>, fpath: &str, errors: &mut Vec<String>) -> Option<String> {
    let Some(fp) = fp.and_then(Value::as_object) else {
        errors.push(format!("{fpath}: expected an object"));
        return None;
    };
    closed(fp, &["revision", "dirty"], fpath, errors);
    field(fp, "revision", Kind::Str, fpath, errors, false);
    match fp.get("dirty").and_then(Value::as_str) {
        Some(d) => Some(d.to_owned()),
        None => {
            errors.push(format!("{fpath}.dirty: expected a string (empty means clean)"));
            None
        }
    }
}

fn v_task_start(ev: &Map, errors: &mut Vec<String>) {
    closed_event(ev, &["task", "fingerprint"], errors);
    task_field(ev, errors);
    if ev.contains_key("fingerprint") {
        fingerprint_errors(ev.get("fingerprint"), "event.fingerprint", errors);
    }
}

fn v_approval(ev: &Map, errors: &mut Vec<String>) {
    closed_event(ev, &["authority", "mechanism", "plan_digest"], errors);
    field(ev, "authority", Kind::Str, "event", errors, false);
    if let Some(m) = field_str(ev, "mechanism", Kind::StrAny, "event", errors)
        && !MECHANISMS.contains(&m)
    {
        errors.push(format!(
            "event.mechanism: unknown value {} - exactly {} exist (D3-2)",
            repr_str(m),
            MECHANISMS.join(" and ")
        ));
    }
    field(ev, "plan_digest", Kind::Hex64, "event", errors, false);
}

fn v_gate_run(ev: &Map, errors: &mut Vec<String>, contract: Option<&TaskIndex<'_>>) {
    closed_event(
        ev,
        &[
            "command",
            "cwd",
            "env",
            "timeout_seconds",
            "exit_code",
            "trust",
            "evidence_path",
            "criterion",
            "task",
        ],
        errors,
    );
    field(ev, "command", Kind::Str, "event", errors, false);
    field(ev, "cwd", Kind::Str, "event", errors, false);
    if ev.get("env").is_some_and(|e| e.as_object().is_none()) {
        errors.push("event.env: expected an object of declared variables".to_owned());
    }
    let timeout = ev.get("timeout_seconds");
    if !is_num(timeout) || !timeout.and_then(Value::as_number).is_some_and(|n| n.to_f64() > 0.0) {
        errors.push("event.timeout_seconds: expected a number > 0".to_owned());
    }
    if !is_int(ev.get("exit_code")) {
        errors.push("event.exit_code: expected an integer".to_owned());
    }
    let criterion = ev.get("criterion");
    if !criterion.and_then(Value::as_str).is_some_and(is_criterion_id) {
        errors.push("event.criterion: expected an AC-* id".to_owned());
    }
    // A gate run is bound to its task at execution, as the pinned upstream validator requires
    // (its v6 fixture carries the task since da57bb9e).
    let tid = task_field(ev, errors);
    if let (Some(contract), Some(tid), Some(criterion)) = (contract, tid, criterion) {
        match contract.tasks.get(tid.as_str()) {
            None => errors
                .push(format!("event.task: {} is not a task of this contract", repr_str(&tid))),
            Some(criteria) => {
                let declared = criteria.contains(&key(criterion));
                if !declared {
                    errors.push(format!(
                        "event.criterion: {} is not declared in task {tid} gate_intent - a gate \
                         run is bound to the declared intent, not linked after the fact",
                        repr(criterion)
                    ));
                }
            }
        }
    }
}

fn id_list_errors(
    ev: &Map,
    key: &str,
    what: &str,
    check: fn(&str) -> bool,
    errors: &mut Vec<String>,
) {
    for r in ev.get(key).and_then(Value::as_array).unwrap_or(&[]) {
        if !r.as_str().is_some_and(check) {
            errors.push(format!("event.{key}: expected {what} ids, got {}", repr(r)));
        }
    }
}

fn v_adaptation(ev: &Map, errors: &mut Vec<String>) {
    let mut fields = ADAPTATION_FIELDS.to_vec();
    fields.extend(["decision", "reason"]);
    closed_event(ev, &fields, errors);
    if !ev.get("kind").and_then(Value::as_str).is_some_and(|k| ADAPTATION_KINDS.contains(&k)) {
        errors.push(format!(
            "event.kind: {} is outside the closed section-3.3 enumeration ({}) - the \
             authorization core refuses it",
            repr_opt(ev.get("kind")),
            ADAPTATION_KINDS.join(", ")
        ));
    }
    if !(is_int(ev.get("trigger_observation")) && int_ge(ev.get("trigger_observation"), 1)) {
        errors.push("event.trigger_observation: expected a journal seq >= 1".to_owned());
    }
    for key in ["evidence_artifact", "hypothesis", "action", "rationale", "authority"] {
        field(ev, key, Kind::Str, "event", errors, false);
    }
    for key in ["affected_tasks", "affected_criteria", "evidence_invalidated", "evidence_preserved"]
    {
        if ev.get(key).and_then(Value::as_array).is_none() {
            errors.push(format!("event.{key}: expected a list"));
        }
    }
    id_list_errors(ev, "affected_tasks", "T-*", is_task_id, errors);
    id_list_errors(ev, "affected_criteria", "AC-*", is_criterion_id, errors);
    if let Some(impact) = ev.get("resource_impact") {
        let ipath = "event.resource_impact";
        match impact.as_object() {
            None => errors.push(format!("{ipath}: expected an object")),
            Some(impact) => {
                closed(impact, &["declared", "unit"], ipath, errors);
                let d = impact.get("declared");
                if !is_num(d) || num_lt(d, 0.0) {
                    errors.push(format!(
                        "{ipath}.declared: expected a number >= 0 (the D2-9a pending \
                         contribution)"
                    ));
                }
                field(impact, "unit", Kind::Str, ipath, errors, false);
            }
        }
    }
    match ev.get("decision").and_then(Value::as_str) {
        Some("authorized") => {}
        Some("refused") => {
            if !truthy(ev.get("reason")) {
                errors.push(
                    "event.reason: required when decision=refused - every refusal carries its \
                     reason (section 5)"
                        .to_owned(),
                );
            }
        }
        _ => errors.push("event.decision: expected authorized/refused".to_owned()),
    }
}

fn v_amendment(ev: &Map, errors: &mut Vec<String>) {
    closed_event(
        ev,
        &[
            "original_criterion",
            "observed_finding",
            "disposition",
            "revised_criterion",
            "reason",
            "authority",
            "affected_tasks",
            "evidence_invalidated",
            "evidence_preserved",
        ],
        errors,
    );
    for key in [
        "original_criterion",
        "observed_finding",
        "disposition",
        "revised_criterion",
        "reason",
        "authority",
    ] {
        field(ev, key, Kind::Str, "event", errors, false);
    }
    for key in ["affected_tasks", "evidence_invalidated", "evidence_preserved"] {
        if ev.get(key).and_then(Value::as_array).is_none() {
            errors.push(format!("event.{key}: expected a list"));
        }
    }
    id_list_errors(ev, "affected_tasks", "T-*", is_task_id, errors);
}

fn v_intervention(ev: &Map, errors: &mut Vec<String>) {
    closed_event(ev, &["category", "description", "question", "resolution"], errors);
    if !ev
        .get("category")
        .and_then(Value::as_str)
        .is_some_and(|c| INTERVENTION_CATEGORIES.contains(&c))
    {
        errors.push(format!(
            "event.category: {} is outside the closed taxonomy ({}; TELEMETRY.md is the source \
             of record, D3-11)",
            repr_opt(ev.get("category")),
            INTERVENTION_CATEGORIES.join(", ")
        ));
    }
    field(ev, "description", Kind::Str, "event", errors, false);
    field(ev, "question", Kind::Str, "event", errors, false);
    field(ev, "resolution", Kind::Str, "event", errors, true);
}

fn v_resource_sample(ev: &Map, errors: &mut Vec<String>) {
    closed_event(ev, &["source", "limit_id", "value", "unit", "trust", "evidence_path"], errors);
    field(ev, "source", Kind::Str, "event", errors, false);
    if let Some(lid) = ev.get("limit_id").filter(|v| !v.is_null())
        && !lid.as_str().is_some_and(is_limit_id)
    {
        errors.push("event.limit_id: expected a lowercase snake_case id".to_owned());
    }
    let value = ev.get("value");
    if !is_num(value) || num_lt(value, 0.0) {
        errors.push(
            "event.value: expected a number >= 0 (missing data is exposed as missing, never \
             imputed or zero-filled)"
                .to_owned(),
        );
    }
    field(ev, "unit", Kind::Str, "event", errors, false);
}

fn v_control_pair(ev: &Map, errors: &mut Vec<String>) {
    closed_event(
        ev,
        &[
            "criterion",
            "check_artifacts",
            "starting_fingerprint",
            "old_leg",
            "new_leg",
            "verdict",
            "trust",
            "evidence_path",
        ],
        errors,
    );
    if !ev.get("criterion").and_then(Value::as_str).is_some_and(is_criterion_id) {
        errors.push("event.criterion: expected an AC-* id".to_owned());
    }
    if !str_list(ev.get("check_artifacts"), "event.check_artifacts", errors, 1) {
        errors.push(
            "event.check_artifacts: a control pair must declare its check artifact paths (D3-4)"
                .to_owned(),
        );
    }
    let dirty =
        fingerprint_errors(ev.get("starting_fingerprint"), "event.starting_fingerprint", errors);
    let mut old_available = None;
    let mut old_outcome = None;
    match ev.get("old_leg").and_then(Value::as_object) {
        None => errors.push("event.old_leg: expected an object".to_owned()),
        Some(old) => {
            closed(old, &["available", "outcome", "log"], "event.old_leg", errors);
            match old.get("available").and_then(Value::as_bool) {
                None => errors.push("event.old_leg.available: expected a boolean".to_owned()),
                Some(true) => {
                    old_available = Some(true);
                    match old.get("outcome").and_then(Value::as_str) {
                        Some(o @ ("PASS" | "FAIL")) => old_outcome = Some(o),
                        _ => errors.push(
                            "event.old_leg.outcome: required and must be PASS/FAIL when \
                             available=true"
                                .to_owned(),
                        ),
                    }
                }
                Some(false) => {
                    old_available = Some(false);
                    if old.contains_key("outcome") {
                        errors.push(
                            "event.old_leg.outcome: an unavailable leg carries NO outcome - \
                             never a synthesized old-tree result"
                                .to_owned(),
                        );
                    }
                }
            }
        }
    }
    let mut new_outcome = None;
    match ev.get("new_leg").and_then(Value::as_object) {
        None => errors.push("event.new_leg: expected an object".to_owned()),
        Some(new) => {
            closed(new, &["outcome", "log"], "event.new_leg", errors);
            match new.get("outcome").and_then(Value::as_str) {
                Some(o @ ("PASS" | "FAIL")) => new_outcome = Some(o),
                _ => errors.push("event.new_leg.outcome: expected PASS/FAIL".to_owned()),
            }
            field(new, "log", Kind::Str, "event.new_leg", errors, false);
        }
    }
    let verdict = ev.get("verdict").and_then(Value::as_str);
    match verdict {
        Some(v @ ("discriminating" | "non_discriminating" | "control_unavailable")) => {
            if let (Some(available), Some(new)) = (old_available, new_outcome) {
                let is_dirty = dirty.as_deref().is_some_and(|d| !d.is_empty());
                let (expected, why) = if is_dirty {
                    (
                        "control_unavailable",
                        "a non-empty dirty component means the old leg cannot be faithfully \
                         materialized (D3-3)",
                    )
                } else if !available {
                    ("control_unavailable", "the old leg is unavailable")
                } else if old_outcome == Some("FAIL") && new == "PASS" {
                    ("discriminating", "(old FAIL, new PASS) is the only discriminating pair")
                } else {
                    (
                        "non_discriminating",
                        "only (old FAIL, new PASS) discriminates; this pair is recorded \
                         non-discriminating and never rounded up (A6/U2)",
                    )
                };
                if v != expected {
                    errors.push(format!(
                        "event.verdict: {} contradicts the legs ({} old / {} new, dirty={}) - \
                         expected {}: {why}",
                        repr_str(v),
                        old_outcome.unwrap_or("None"),
                        new,
                        if is_dirty { "True" } else { "False" },
                        repr_str(expected)
                    ));
                }
            }
        }
        _ => errors.push(
            "event.verdict: expected discriminating/non_discriminating/control_unavailable"
                .to_owned(),
        ),
    }
}

fn v_selection(ev: &Map, errors: &mut Vec<String>) {
    closed_event(ev, &["task", "priority_boost", "aging"], errors);
    task_field(ev, errors);
    match ev.get("priority_boost").and_then(Value::as_bool) {
        None => errors.push("event.priority_boost: expected a boolean".to_owned()),
        Some(true) if !ev.contains_key("aging") => errors.push(
            "event.aging: required when priority_boost=true - the recorded boost names \
             waiting_since_seq and the threshold that fired (A11)"
                .to_owned(),
        ),
        Some(_) => {}
    }
    if let Some(aging) = ev.get("aging") {
        let apath = "event.aging";
        match aging.as_object() {
            None => errors.push(format!("{apath}: expected an object")),
            Some(aging) => {
                closed(aging, &["waiting_since_seq", "threshold"], apath, errors);
                let since = aging.get("waiting_since_seq");
                if !(is_int(since) && int_ge(since, 1)) {
                    errors.push(format!("{apath}.waiting_since_seq: expected a journal seq >= 1"));
                }
                field(aging, "threshold", Kind::Str, apath, errors, false);
            }
        }
    }
}

fn v_refusal(ev: &Map, errors: &mut Vec<String>) {
    closed_event(ev, &["subject", "stage", "reason", "proposal"], errors);
    field(ev, "subject", Kind::Str, "event", errors, false);
    if !ev
        .get("stage")
        .and_then(Value::as_str)
        .is_some_and(|s| ["task_start", "authorize", "dispatch", "gate"].contains(&s))
    {
        errors.push("event.stage: expected task_start/authorize/dispatch/gate".to_owned());
    }
    field(ev, "reason", Kind::Str, "event", errors, false);
    if let Some(p) = ev.get("proposal")
        && !(is_int(Some(p)) && int_ge(Some(p), 1))
    {
        errors.push("event.proposal: expected a journal seq >= 1".to_owned());
    }
}

fn v_view_render(ev: &Map, errors: &mut Vec<String>) {
    closed_event(ev, &["view", "snapshot_digest", "digests"], errors);
    field(ev, "view", Kind::Str, "event", errors, false);
    field(ev, "snapshot_digest", Kind::Hex64, "event", errors, false);
    if let Some(digests) = ev.get("digests") {
        match digests.as_object().filter(|d| !d.is_empty()) {
            None => errors.push(
                "event.digests: expected a non-empty object of view name -> sha256".to_owned(),
            ),
            Some(d) => {
                for (name, digest) in d {
                    if !non_blank(name) {
                        errors
                            .push("event.digests: view names must be non-empty strings".to_owned());
                    }
                    if !digest.as_str().is_some_and(is_hex64) {
                        errors.push(format!(
                            "event.digests[{}]: expected a sha256 hex digest",
                            repr_str(name)
                        ));
                    }
                }
            }
        }
    }
}

fn v_delegation(ev: &Map, errors: &mut Vec<String>) {
    closed_event(
        ev,
        &[
            "task",
            "delegation_id",
            "transport",
            "via",
            "kind",
            "profile",
            "target",
            "worktree",
            "prompt_digest",
            "state",
            "result_path",
            "result_digest",
        ],
        errors,
    );
    task_field(ev, errors);
    if let Some(d) = field_str(ev, "delegation_id", Kind::StrAny, "event", errors)
        && !is_delegation_id(d)
    {
        errors.push("event.delegation_id: expected 1-64 of [A-Za-z0-9._-]".to_owned());
    }
    if !ev
        .get("transport")
        .and_then(Value::as_str)
        .is_some_and(|t| ["headless", "interactive"].contains(&t))
    {
        errors.push("event.transport: expected headless/interactive".to_owned());
    }
    if let Some(v) = field_str(ev, "via", Kind::StrAny, "event", errors)
        && !is_addon_id(v)
    {
        errors.push("event.via: expected an addon key".to_owned());
    }
    let state = ev.get("state").and_then(Value::as_str);
    if !state.is_some_and(|s| ["launched", "completed", "failed", "cancelled"].contains(&s)) {
        errors.push("event.state: expected one of launched/completed/failed/cancelled".to_owned());
    }
    for key in ["kind", "profile", "target"] {
        if let Some(v) = ev.get(key)
            && !v.as_str().is_some_and(|s| !s.is_empty() && s.chars().count() <= 200)
        {
            errors.push(format!("event.{key}: expected a non-empty string (<= 200 chars)"));
        }
    }
    if let Some(w) = ev.get("worktree").filter(|w| !w.is_null())
        && !w.as_str().is_some_and(|s| !s.is_empty() && s.chars().count() <= 300)
    {
        errors
            .push("event.worktree: expected a path string or null (read-only delegate)".to_owned());
    }
    if state == Some("launched") && !ev.contains_key("prompt_digest") {
        errors.push(
            "event.prompt_digest: required on launch (the prompt is recorded by digest before it \
             is relied on)"
                .to_owned(),
        );
    }
    for key in ["prompt_digest", "result_digest"] {
        if let Some(v) = ev.get(key)
            && !v.as_str().is_some_and(is_prefixed_digest)
        {
            errors.push(format!("event.{key}: expected sha256:<64 hex>"));
        }
    }
    if let Some(rp) = ev.get("result_path") {
        let ok = rp.as_str().is_some_and(|s| {
            !s.is_empty() && !s.starts_with('/') && !s.split('/').any(|p| p == "..")
        });
        if !ok {
            errors.push(
                "event.result_path: expected a relative path inside the plan or repository"
                    .to_owned(),
            );
        }
        if !matches!(state, Some("completed" | "failed")) {
            errors.push(
                "event.result_path: only a completed or failed delegation carries a result"
                    .to_owned(),
            );
        }
    }
    if ev.contains_key("trust") || ev.contains_key("evidence_path") {
        errors.push(
            "event: a delegation is not evidence - it carries no trust label and no \
             evidence_path (its result stays asserted until the parent runner observes it)"
                .to_owned(),
        );
    }
}

/// Validates an event sequence: per-event errors plus strictly increasing `seq`.
pub fn journal_errors(events: &[Value], contract: Option<&Value>) -> Vec<String> {
    let mut errors = Vec::new();
    let index = TaskIndex::new(contract);
    let mut previous: Option<(f64, String)> = None;
    for (i, event) in events.iter().enumerate() {
        for err in journal_event_errors_with(event, contract, &index) {
            errors.push(format!("journal line {}: {err}", i + 1));
        }
        if let Some(Value::Number(Number::Int(seq))) = event.get("seq") {
            let text = repr(&Value::Number(Number::Int(seq.clone())));
            let value = seq.to_f64();
            let (prev_value, prev_text) = previous.clone().unwrap_or((0.0, "0".to_owned()));
            let regress = match (seq.as_i64(), prev_text.parse::<i64>()) {
                (Some(a), Ok(b)) => a <= b,
                _ => value <= prev_value,
            };
            if regress {
                errors.push(format!(
                    "journal line {}: seq {text} follows {prev_text} - the journal is \
                     append-only; positions never go backwards",
                    i + 1
                ));
            }
            previous = Some((value, text));
        }
    }
    errors
}

/// Per-type counts in the upstream `OK:` line form: `adaptation x1, approval x1, …`.
pub fn type_counts(events: &[Value]) -> String {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for event in events {
        let key = match event.as_object() {
            Some(o) => str_opt(o.get("type")),
            None => "?".to_owned(),
        };
        *counts.entry(key).or_default() += 1;
    }
    counts.iter().map(|(k, v)| format!("{k} x{v}")).collect::<Vec<_>>().join(", ")
}
