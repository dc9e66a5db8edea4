//! The read-only scheduler (upstream `scheduler.py`): the deterministic ready list, starvation
//! boosts, and `authorize`, which decides a `select`/`adapt` proposal under the contract's
//! scheduling limits and resource envelope.
//!
//! Every function is pure over (contract, events, proposal). A decision is a JSON object:
//! `{"decision": "accept", …}` or `{"decision": "refuse", "rule": …, "reason": …}`. The caller
//! records the matching `selection` / `adaptation` / `refusal` events; nothing here writes.

use std::collections::BTreeSet;

use canonical_json::{Map, Value};

use crate::projection::{self, criterion_states, seq_of, task_complete};
use crate::py::repr_str;
use crate::validate;

/// Default `scheduling.starvation_threshold_events`.
pub const DEFAULT_STARVATION: i64 = 50;
/// Default `scheduling.max_adaptations_per_task`.
pub const DEFAULT_MAX_ADAPTATIONS: i64 = 3;
/// Default `scheduling.max_retries_per_gate`.
pub const DEFAULT_MAX_RETRIES: i64 = 2;
/// The actor identity of the events `authorize` builds.
pub const SCHEDULER_IDENTITY: &str = "dwp-scheduler/6.0";
/// Proposal fields an `adapt` proposal may carry besides `type` (the adaptation shape minus
/// the scheduler's own `decision`/`reason`). Nothing here can carry criterion content.
pub const ADAPT_FIELDS: [&str; 12] = [
    "kind",
    "trigger_observation",
    "evidence_artifact",
    "hypothesis",
    "action",
    "rationale",
    "affected_tasks",
    "affected_criteria",
    "authority",
    "evidence_invalidated",
    "evidence_preserved",
    "resource_impact",
];

fn str_field<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn type_is(event: &Value, etype: &str) -> bool {
    str_field(event, "type") == Some(etype)
}

fn obj<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

fn scheduling_limit(contract: &Value, key: &str, default: i64) -> i64 {
    contract.get("scheduling").and_then(|s| s.get(key)).and_then(Value::as_i64).unwrap_or(default)
}

fn tasks(contract: &Value) -> &[Value] {
    contract.get("tasks").and_then(Value::as_array).unwrap_or(&[])
}

fn prerequisites(task: &Value) -> Vec<&str> {
    task.get("prerequisites")
        .and_then(Value::as_array)
        .unwrap_or(&[])
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

fn satisfied(state: &Value) -> bool {
    state.get("satisfied").and_then(Value::as_bool) == Some(true)
}

/// A refusal decision.
pub fn refuse(rule: &str, reason: impl Into<String>) -> Value {
    obj([("decision", "refuse".into()), ("rule", rule.into()), ("reason", reason.into().into())])
}

/// True for an accept decision.
pub fn accepted(decision: &Value) -> bool {
    str_field(decision, "decision") == Some("accept")
}

/// The deterministic ready list: `[{task, waiting_since_seq, waiting_events, rank,
/// priority_boost, aging}]` in rank order.
pub fn ready(contract: &Value, events: &[Value]) -> Vec<Value> {
    let last = events.iter().map(seq_of).max().unwrap_or(0);
    let approval_seq = events.iter().filter(|e| type_is(e, "approval")).map(seq_of).max();
    let threshold = scheduling_limit(contract, "starvation_threshold_events", DEFAULT_STARVATION);
    let mut rows: Vec<(i64, usize, String, i64)> = Vec::new();
    // One satisfaction pass per task, shared by the completion and prerequisite checks.
    let states: std::collections::HashMap<&str, Vec<Value>> = tasks(contract)
        .iter()
        .filter_map(|t| str_field(t, "id"))
        .map(|id| (id, criterion_states(contract, events, id).unwrap_or_default()))
        .collect();
    let empty = Vec::new();
    for (index, task) in tasks(contract).iter().enumerate() {
        let Some(id) = str_field(task, "id") else { continue };
        if states.get(id).is_some_and(|s| s.iter().all(satisfied)) {
            continue;
        }
        let mut since = approval_seq.unwrap_or(1).max(1);
        let mut open = false;
        for pre in prerequisites(task) {
            for state in states.get(pre).unwrap_or(&empty) {
                if satisfied(state) {
                    since = since.max(state.get("via_seq").and_then(Value::as_i64).unwrap_or(0));
                } else {
                    open = true;
                }
            }
        }
        if open {
            continue;
        }
        rows.push((last - since, index, id.to_owned(), since));
    }
    rows.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    rows.into_iter()
        .enumerate()
        .map(|(i, (waiting, _, task, since))| {
            let boost = waiting >= threshold;
            let aging = if boost {
                obj([
                    ("waiting_since_seq", since.into()),
                    ("threshold", threshold.to_string().into()),
                ])
            } else {
                Value::Null
            };
            obj([
                ("task", task.into()),
                ("waiting_since_seq", since.into()),
                ("waiting_events", waiting.into()),
                ("rank", (i + 1).into()),
                ("priority_boost", boost.into()),
                ("aging", aging),
            ])
        })
        .collect()
}

/// The ready-to-append `selection` payloads of the boosted ready entries.
pub fn boosts(contract: &Value, events: &[Value]) -> Vec<Value> {
    ready(contract, events)
        .into_iter()
        .filter(|r| r.get("priority_boost").and_then(Value::as_bool) == Some(true))
        .map(|r| {
            obj([
                ("task", r.get("task").cloned().unwrap_or(Value::Null)),
                ("priority_boost", true.into()),
                ("aging", r.get("aging").cloned().unwrap_or(Value::Null)),
            ])
        })
        .collect()
}

/// The plan-wide invariant reference position: the latest `task_start`, else the latest
/// `approval`.
fn invariant_reference(events: &[Value]) -> Option<i64> {
    events
        .iter()
        .filter(|e| type_is(e, "task_start"))
        .map(seq_of)
        .max()
        .or_else(|| events.iter().filter(|e| type_is(e, "approval")).map(seq_of).max())
}

fn invariant_refusal(contract: &Value, events: &[Value]) -> Option<Value> {
    let reference = invariant_reference(events);
    for inv in contract.get("invariants").and_then(Value::as_array).unwrap_or(&[]) {
        let Some(iid) = str_field(inv, "id") else { continue };
        let pass = format!("{iid}: pass");
        let fail = format!("{iid}: fail");
        let fail_prefix = format!("{iid}: fail:");
        let latest = events.iter().rev().find(|e| {
            type_is(e, "observation")
                && str_field(e, "statement")
                    .is_some_and(|st| st == pass || st == fail || st.starts_with(&fail_prefix))
        });
        match latest {
            None => {
                return Some(refuse(
                    "invariant-unevaluated",
                    format!("{iid} was never evaluated - record `{iid}: pass` before dispatch"),
                ));
            }
            Some(e) if reference.is_some_and(|r| seq_of(e) < r) => {
                return Some(refuse(
                    "invariant-stale",
                    format!(
                        "{iid} last evaluated at seq {}, before the reference position {} - \
                         re-evaluate it",
                        seq_of(e),
                        reference.unwrap_or(0)
                    ),
                ));
            }
            Some(e) if str_field(e, "statement") != Some(pass.as_str()) => {
                return Some(refuse(
                    "invariant-failed",
                    format!(
                        "{iid} failed (seq {}): {}",
                        seq_of(e),
                        str_field(e, "statement").unwrap_or("")
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    None
}

fn number(v: Option<&Value>) -> f64 {
    v.and_then(Value::as_f64).unwrap_or(0.0)
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 { format!("{}", x as i64) } else { format!("{x}") }
}

fn authorized_adaptations(events: &[Value]) -> impl Iterator<Item = &Value> {
    events
        .iter()
        .filter(|e| type_is(e, "adaptation") && str_field(e, "decision") == Some("authorized"))
}

fn envelope_refusal(contract: &Value, events: &[Value], own: Option<&Value>) -> Option<Value> {
    let limits = contract
        .get("resource_envelope")
        .and_then(|r| r.get("limits"))
        .and_then(Value::as_array)
        .unwrap_or(&[]);
    for limit in limits {
        if str_field(limit, "enforcement") != Some("enforced") {
            continue;
        }
        let id = str_field(limit, "id").unwrap_or("");
        let unit = limit.get("unit");
        let cap = number(limit.get("limit"));
        let sample = events.iter().rev().find(|e| {
            type_is(e, "resource_sample")
                && str_field(e, "limit_id") == Some(id)
                && str_field(e, "trust") == Some("observed")
        });
        let spent = number(sample.and_then(|e| e.get("value")));
        let impacts = authorized_adaptations(events)
            .filter_map(|e| e.get("resource_impact"))
            .chain(own)
            .filter(|i| i.get("unit") == unit)
            .map(|i| number(i.get("declared")))
            .filter(|d| *d > 0.0);
        let pending: f64 = impacts.sum();
        if spent + pending > cap {
            let unmetered = if sample.is_none() {
                " [limit unmetered: no observed sample on record]"
            } else {
                ""
            };
            return Some(refuse(
                "envelope-exceeded",
                format!(
                    "limit {}: commit-plus-pending {} + {} exceeds {} {}{unmetered}",
                    repr_str(id),
                    fmt_num(spent),
                    fmt_num(pending),
                    fmt_num(cap),
                    crate::py::str_opt(unit)
                ),
            ));
        }
    }
    None
}

fn str_list(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array).unwrap_or(&[]).iter().filter_map(Value::as_str).collect()
}

/// Decides a proposal against the live contract and the journal (archived + live events).
pub fn authorize(contract: &Value, contract_id: &str, events: &[Value], proposal: &Value) -> Value {
    let Some(prop) = proposal.as_object() else {
        return refuse("proposal-shape", "the proposal must be a JSON object");
    };
    let ptype = prop.get("type").and_then(Value::as_str);
    if !matches!(ptype, Some("select" | "adapt")) {
        return refuse(
            "proposal-type",
            format!(
                "proposal type {} is not one of select/adapt",
                crate::py::repr_opt(prop.get("type"))
            ),
        );
    }
    if let Some(first) = validate::contract_errors(contract, None).into_iter().next() {
        return refuse("contract-invalid", format!("the live contract is invalid: {first}"));
    }
    if let Some(first) = validate::journal_errors(events, Some(contract)).into_iter().next() {
        return refuse(
            "record-invalid",
            format!("the journal carries an invalid record - dispatch stops: {first}"),
        );
    }
    let approved = events
        .iter()
        .any(|e| type_is(e, "approval") && str_field(e, "contract_id") == Some(contract_id));
    if !approved {
        return refuse(
            "approval-missing",
            format!(
                "no approval cites the live contract {} - nothing is dispatched without one",
                &contract_id[..contract_id.len().min(12)]
            ),
        );
    }
    if let Some(refusal) = invariant_refusal(contract, events) {
        return refusal;
    }
    let mut checks: Vec<Value> = [
        "proposal-shape",
        "proposal-type",
        "contract-invalid",
        "record-invalid",
        "approval-missing",
        "invariants",
    ]
    .into_iter()
    .map(Value::from)
    .collect();
    if ptype == Some("select") {
        if let Some(extra) = prop.keys().find(|k| !["type", "task"].contains(&k.as_str())) {
            return refuse(
                "proposal-shape",
                format!(
                    "a select proposal carries only type and task (unexpected {})",
                    repr_str(extra)
                ),
            );
        }
        if let Some(r) = envelope_refusal(contract, events, None) {
            return r;
        }
        checks.push("envelope".into());
        return authorize_select(contract, events, prop, checks);
    }
    if let Some(extra) =
        prop.keys().find(|k| k.as_str() != "type" && !ADAPT_FIELDS.contains(&k.as_str()))
    {
        return refuse(
            "proposal-shape",
            format!(
                "field {} is outside the adaptation shape - no proposal may carry criterion \
                 content, scope or permissions",
                repr_str(extra)
            ),
        );
    }
    if let Some(r) = envelope_refusal(contract, events, prop.get("resource_impact")) {
        return r;
    }
    checks.push("envelope".into());
    authorize_adapt(contract, contract_id, events, prop, checks)
}

fn authorize_select(
    contract: &Value,
    events: &[Value],
    prop: &Map,
    mut checks: Vec<Value>,
) -> Value {
    let task_id = prop.get("task").and_then(Value::as_str).unwrap_or("");
    let Some(task) = projection::find_task(contract, task_id) else {
        return refuse(
            "unknown-task",
            format!("task {} is not in the contract", crate::py::repr_opt(prop.get("task"))),
        );
    };
    if task_complete(contract, events, task_id) {
        return refuse(
            "task-complete",
            format!("{task_id} is complete - every criterion has in-window accepted evidence"),
        );
    }
    for pre in prerequisites(task) {
        let states = criterion_states(contract, events, pre).unwrap_or_default();
        if let Some(open) = states.iter().find(|s| !satisfied(s)) {
            return refuse(
                "prerequisite-open",
                format!(
                    "prerequisite {pre} has an open criterion {} (stale evidence does not count)",
                    crate::py::str_opt(open.get("criterion"))
                ),
            );
        }
    }
    let surface: BTreeSet<&str> = str_list(task.get("touched_surface")).into_iter().collect();
    for other in tasks(contract) {
        let Some(oid) = str_field(other, "id") else { continue };
        if oid == task_id
            || projection::task_start_seq_of(events, oid).is_none()
            || task_complete(contract, events, oid)
        {
            continue;
        }
        let shared: Vec<&str> = str_list(other.get("touched_surface"))
            .into_iter()
            .filter(|p| surface.contains(p))
            .collect();
        if !shared.is_empty() {
            return refuse(
                "surface-serialization",
                format!(
                    "{task_id} touches {} which started task {oid} is still changing - \
                     overlapping surfaces run one at a time",
                    shared.join(", ")
                ),
            );
        }
    }
    checks.extend(
        ["unknown-task", "task-complete", "prerequisite-open", "surface-serialization"]
            .into_iter()
            .map(Value::from),
    );
    obj([
        ("decision", "accept".into()),
        ("type", "select".into()),
        ("task", task_id.into()),
        ("checks", Value::Array(checks)),
    ])
}

fn authorize_adapt(
    contract: &Value,
    contract_id: &str,
    events: &[Value],
    prop: &Map,
    mut checks: Vec<Value>,
) -> Value {
    let last = events.iter().max_by_key(|e| seq_of(e));
    let mut event: Map = prop
        .iter()
        .filter(|(k, _)| k.as_str() != "type")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    event.insert("decision".to_owned(), "authorized".into());
    let generation = validate::contract_generation(contract).unwrap_or(validate::Generation::V6);
    event.insert("schema".to_owned(), generation.journal_url().into());
    event.insert("type".to_owned(), "adaptation".into());
    event.insert("seq".to_owned(), (last.map_or(0, seq_of) + 1).into());
    event.insert(
        "ts".to_owned(),
        last.and_then(|e| e.get("ts")).cloned().unwrap_or_else(|| "1970-01-01T00:00:00Z".into()),
    );
    event.insert("plan".to_owned(), contract.get("plan").cloned().unwrap_or(Value::Null));
    event.insert("contract_id".to_owned(), contract_id.into());
    event.insert(
        "actor".to_owned(),
        obj([("kind", "agent".into()), ("identity", SCHEDULER_IDENTITY.into())]),
    );
    let event = Value::Object(event);
    if let Some(first) = validate::journal_event_errors(&event, Some(contract)).into_iter().next() {
        return refuse("adaptation-shape", first);
    }
    let affected_tasks = str_list(event.get("affected_tasks"));
    let affected_criteria = str_list(event.get("affected_criteria"));
    let max_adapt = scheduling_limit(contract, "max_adaptations_per_task", DEFAULT_MAX_ADAPTATIONS);
    for t in &affected_tasks {
        let count = authorized_adaptations(events)
            .filter(|e| str_list(e.get("affected_tasks")).contains(t))
            .count();
        if i64::try_from(count).unwrap_or(i64::MAX) >= max_adapt {
            return refuse(
                "adaptation-cap",
                format!(
                    "{t} already has {count} authorized adaptation(s) (max_adaptations_per_task \
                     {max_adapt}) - a loop beyond the cap needs an amendment, not another \
                     adaptation"
                ),
            );
        }
    }
    checks.push("adaptation-cap".into());
    if str_field(&event, "kind") == Some("retry") {
        let max_retries = scheduling_limit(contract, "max_retries_per_gate", DEFAULT_MAX_RETRIES);
        let shares = |e: &Value| {
            str_list(e.get("affected_criteria")).iter().any(|c| affected_criteria.contains(c))
        };
        let retries = authorized_adaptations(events)
            .filter(|e| str_field(e, "kind") == Some("retry") && shares(e))
            .count();
        if i64::try_from(retries).unwrap_or(i64::MAX) >= max_retries {
            return refuse(
                "retry-cap",
                format!(
                    "{retries} authorized retr{} already share criteria {} \
                     (max_retries_per_gate {max_retries})",
                    if retries == 1 { "y" } else { "ies" },
                    affected_criteria.join(", ")
                ),
            );
        }
        let last_run = events
            .iter()
            .filter(|e| {
                type_is(e, "gate_run")
                    && str_field(e, "criterion").is_some_and(|c| affected_criteria.contains(&c))
            })
            .map(seq_of)
            .max();
        let trigger = event.get("trigger_observation").and_then(Value::as_i64).unwrap_or(0);
        if let Some(run) = last_run.filter(|r| trigger <= *r) {
            return refuse(
                "blind-retry",
                format!(
                    "trigger_observation {trigger} is not after the last gate_run {run} on \
                     {} - a retry must cite a new observation",
                    affected_criteria.join(", ")
                ),
            );
        }
        checks.extend(["retry-cap", "blind-retry"].into_iter().map(Value::from));
    }
    obj([
        ("decision", "accept".into()),
        ("type", "adapt".into()),
        ("event", event),
        ("checks", Value::Array(checks)),
    ])
}
