//! The read-only scheduler (upstream `scheduler.py`): the deterministic ready list, starvation
//! boosts, and `authorize`, which decides a `select`/`adapt` proposal under the contract's
//! scheduling limits and resource envelope.
//!
//! Every function is pure over (contract, events, proposal). A decision is a JSON object:
//! `{"decision": "accept", …}` or `{"decision": "refuse", "rule": …, "reason": …}`. The caller
//! records the matching `selection` / `adaptation` / `refusal` events; nothing here writes.

use std::collections::BTreeSet;

use canonical_json::{Map, Value};

use crate::projection::{self, seq_of};
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
pub use crate::validate::ADAPTATION_FIELDS as ADAPT_FIELDS;

fn type_is(event: &Value, etype: &str) -> bool {
    event.str_at("type") == Some(etype)
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
    Value::object([
        ("decision", "refuse".into()),
        ("rule", rule.into()),
        ("reason", reason.into().into()),
    ])
}

/// True for an accept decision.
pub fn accepted(decision: &Value) -> bool {
    decision.str_at("decision") == Some("accept")
}

/// The event types [`ready`] reads (satisfaction, starts, approvals, invalidation); the
/// journal's last seq is the only thing it takes from the others ([`ready_at`]).
pub const READY_TYPES: [&str; 4] = ["task_start", "gate_run", "approval", "amendment"];

/// The deterministic ready list: `[{task, waiting_since_seq, waiting_events, rank,
/// priority_boost, aging}]` in rank order.
pub fn ready(contract: &Value, events: &[Value]) -> Vec<Value> {
    ready_at(contract, events, events.iter().map(seq_of).max().unwrap_or(0))
}

/// [`ready`] over only the events of [`READY_TYPES`] (any superset gives the same list), with
/// `last`, the journal's highest seq over all events.
pub fn ready_at(contract: &Value, events: &[Value], last: i64) -> Vec<Value> {
    let approval_seq = events.iter().filter(|e| type_is(e, "approval")).map(seq_of).max();
    let threshold = scheduling_limit(contract, "starvation_threshold_events", DEFAULT_STARVATION);
    let mut rows: Vec<(i64, usize, String, i64)> = Vec::new();
    // One satisfaction pass per task, shared by the completion and prerequisite checks, from
    // one index of the events (a search of the events per task was tasks x events).
    let progress = projection::Progress::new(contract, events);
    let states: std::collections::HashMap<&str, Vec<Value>> = tasks(contract)
        .iter()
        .filter_map(|t| t.str_at("id"))
        .map(|id| (id, progress.criterion_states(id).unwrap_or_default()))
        .collect();
    let empty = Vec::new();
    for (index, task) in tasks(contract).iter().enumerate() {
        let Some(id) = task.str_at("id") else { continue };
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
                Value::object([
                    ("waiting_since_seq", since.into()),
                    ("threshold", threshold.to_string().into()),
                ])
            } else {
                Value::Null
            };
            Value::object([
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
            Value::object([
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
    let reference = invariant_reference(events).unwrap_or(0);
    for inv in contract.get("invariants").and_then(Value::as_array).unwrap_or(&[]) {
        let Some(iid) = inv.str_at("id") else { continue };
        let head = format!("{iid}: ");
        // The latest grammar-matching evaluation (ties go to the later record).
        let mut latest: Option<(i64, bool)> = None;
        for e in events.iter().filter(|e| type_is(e, "observation")) {
            let Some(verdict) = e.str_at("statement").and_then(|st| st.strip_prefix(&head)) else {
                continue;
            };
            let pass = match verdict {
                "pass" => true,
                v if v == "fail" || v.starts_with("fail:") => false,
                _ => continue,
            };
            let seq = seq_of(e);
            if latest.is_none_or(|(s, _)| seq >= s) {
                latest = Some((seq, pass));
            }
        }
        match latest {
            None => {
                return Some(refuse(
                    "invariant-unevaluated",
                    format!(
                        "invariant {iid} is declared but never evaluated \u{2014} a declared \
                         boundary is verified before dispatch, never assumed (D3-6): record an \
                         observation \"{iid}: pass\" first"
                    ),
                ));
            }
            Some((seq, _)) if seq < reference => {
                return Some(refuse(
                    "invariant-stale",
                    format!(
                        "invariant {iid} was last evaluated at seq {seq}, before the current \
                         reference position {reference} \u{2014} re-evaluate at or after the \
                         position before proposing more work (D3-6)"
                    ),
                ));
            }
            Some((seq, false)) => {
                return Some(refuse(
                    "invariant-failed",
                    format!(
                        "invariant {iid} failed (observation at seq {seq}): invariant breaches \
                         are stops, never scheduling inputs \u{2014} repair and re-evaluate \
                         before proposing more work (D3-6)"
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    None
}

/// A positive declared impact (`resource_impact.declared`, a number but not a bool).
fn declared(impact: &Value) -> Option<f64> {
    impact.get("declared").and_then(Value::as_f64).filter(|d| *d > 0.0)
}

fn authorized_adaptations(events: &[Value]) -> impl Iterator<Item = &Value> {
    events.iter().filter(|e| type_is(e, "adaptation") && e.str_at("decision") == Some("authorized"))
}

fn envelope_refusal(contract: &Value, events: &[Value], own: Option<&Value>) -> Option<Value> {
    let limits = contract
        .get("resource_envelope")
        .and_then(|r| r.get("limits"))
        .and_then(Value::as_array)
        .unwrap_or(&[]);
    for limit in limits {
        if limit.str_at("enforcement") != Some("enforced") {
            continue;
        }
        let id = limit.str_at("id").unwrap_or("");
        let unit = limit.get("unit");
        // The latest observed sample (ties go to the later record).
        let mut sample: Option<&Value> = None;
        for e in events.iter().filter(|e| {
            type_is(e, "resource_sample")
                && e.str_at("limit_id") == Some(id)
                && e.str_at("trust") == Some("observed")
        }) {
            if sample.is_none_or(|s| seq_of(e) >= seq_of(s)) {
                sample = Some(e);
            }
        }
        let spent = sample.and_then(|e| e.get("value"));
        let mut pending = 0.0_f64;
        let impacts = authorized_adaptations(events)
            .filter_map(|e| e.get("resource_impact"))
            .chain(own.filter(|o| o.as_object().is_some()));
        for impact in impacts {
            if let Some(d) = declared(impact).filter(|_| impact.get("unit") == unit) {
                pending += d;
            }
        }
        let cap = limit.get("limit").and_then(Value::as_f64).unwrap_or(0.0);
        if spent.and_then(Value::as_f64).unwrap_or(0.0) + pending > cap {
            let unmetered = if spent.is_none() {
                " [limit unmetered: no observed sample on record]"
            } else {
                ""
            };
            return Some(refuse(
                "envelope-exceeded",
                format!(
                    "enforced limit {} would be exceeded: {} + {} pending > {} {} (A5 \
                     commit-plus-pending){unmetered}",
                    repr_str(id),
                    spent.map_or_else(|| "0.0".to_owned(), crate::py::str_of),
                    canonical_json::python_float_repr(pending),
                    crate::py::str_opt(limit.get("limit")),
                    crate::py::str_opt(unit)
                ),
            ));
        }
    }
    None
}

/// Python `repr` of a sorted list of strings (`['a', 'b']`).
fn sorted_repr<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let set: BTreeSet<&str> = items.into_iter().collect();
    let parts: Vec<String> = set.into_iter().map(repr_str).collect();
    format!("[{}]", parts.join(", "))
}

fn str_list(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array).unwrap_or(&[]).iter().filter_map(Value::as_str).collect()
}

/// Decides a proposal against the live contract and the journal (archived + live events).
pub fn authorize(contract: &Value, contract_id: &str, events: &[Value], proposal: &Value) -> Value {
    let Some(prop) = proposal.as_object() else {
        return refuse("proposal-shape", "a proposal is a JSON object");
    };
    let ptype = prop.get("type").and_then(Value::as_str);
    if !matches!(ptype, Some("select" | "adapt")) {
        return refuse(
            "proposal-type",
            format!(
                "unknown proposal type {} \u{2014} the closed set is select/adapt (RFC section 5)",
                crate::py::repr_opt(prop.get("type"))
            ),
        );
    }
    if let Some(first) = validate::contract_errors(contract, None).into_iter().next() {
        return refuse(
            "contract-invalid",
            format!("the contract does not validate, so nothing schedules: {first}"),
        );
    }
    let journal_errors = if events.is_empty() {
        Vec::new()
    } else {
        validate::journal_errors(events, Some(contract))
    };
    if let Some(first) = journal_errors.into_iter().next() {
        return refuse(
            "record-invalid",
            format!(
                "the journal record does not validate, so nothing schedules (tampered or \
                 corrupt records stop dispatch): {first}"
            ),
        );
    }
    let approved = events
        .iter()
        .any(|e| type_is(e, "approval") && e.str_at("contract_id") == Some(contract_id));
    if !approved {
        return refuse(
            "approval-missing",
            format!(
                "no approval event cites the live contract_id {} \u{2014} materialization \
                 approval precedes every proposal (D3-7/D2-3)",
                contract_id.get(..12).unwrap_or(contract_id)
            ),
        );
    }
    if let Some(refusal) = invariant_refusal(contract, events) {
        return refusal;
    }
    let own = if ptype == Some("adapt") { prop.get("resource_impact") } else { None };
    if let Some(r) = envelope_refusal(contract, events, own) {
        return r;
    }
    if ptype == Some("select") {
        return authorize_select(contract, events, prop);
    }
    authorize_adapt(contract, contract_id, events, prop)
}

fn authorize_select(contract: &Value, events: &[Value], prop: &Map) -> Value {
    let extra: Vec<&str> =
        prop.keys().map(String::as_str).filter(|k| !["type", "task"].contains(k)).collect();
    if !extra.is_empty() {
        return refuse(
            "proposal-shape",
            format!(
                "select takes {}, found extra field(s) {}",
                sorted_repr(["type", "task"]),
                sorted_repr(extra)
            ),
        );
    }
    let task_id = prop.get("task").and_then(Value::as_str).unwrap_or("");
    let Some(task) = prop.get("task").and_then(|_| projection::find_task(contract, task_id)) else {
        return refuse(
            "unknown-task",
            format!("task {} is not in the contract", crate::py::repr_opt(prop.get("task"))),
        );
    };
    let progress = projection::Progress::new(contract, events);
    if progress.task_complete(task_id) {
        return refuse(
            "task-complete",
            format!(
                "task {task_id} is already complete \u{2014} completed work never re-selects; \
                 new work on the same surface is a new task or a revision"
            ),
        );
    }
    for pre in prerequisites(task) {
        if !progress.task_complete(pre) {
            return refuse(
                "prerequisite-open",
                format!(
                    "prerequisite {pre} of {task_id} is not complete (a prerequisite whose \
                     criteria carry only stale evidence is not complete \u{2014} deferral \
                     disguised as completion is refused here)"
                ),
            );
        }
    }
    let surface: BTreeSet<&str> = str_list(task.get("touched_surface")).into_iter().collect();
    for other in tasks(contract) {
        let Some(oid) = other.str_at("id") else { continue };
        if oid == task_id || progress.started(oid).is_none() || progress.task_complete(oid) {
            continue;
        }
        let shared: BTreeSet<&str> = str_list(other.get("touched_surface"))
            .into_iter()
            .filter(|p| surface.contains(p))
            .collect();
        if !shared.is_empty() {
            return refuse(
                "surface-serialization",
                format!(
                    "touched-surface overlap with in-progress {oid} ({}): intra-plan \
                     parallelism on overlapping surfaces is serialized (A8); independent \
                     in-scope work stays selectable",
                    shared.into_iter().collect::<Vec<_>>().join(", ")
                ),
            );
        }
    }
    let checks = [
        "contract",
        "approval",
        "invariants",
        "envelope",
        "prerequisites",
        "surface-serialization",
    ];
    Value::object([
        ("decision", "accept".into()),
        ("type", "select".into()),
        ("task", task_id.into()),
        ("checks", Value::Array(checks.into_iter().map(Value::from).collect())),
    ])
}

fn authorize_adapt(contract: &Value, contract_id: &str, events: &[Value], prop: &Map) -> Value {
    let extra: Vec<&str> = prop
        .keys()
        .map(String::as_str)
        .filter(|k| *k != "type" && !ADAPT_FIELDS.contains(k))
        .collect();
    if !extra.is_empty() {
        return refuse(
            "proposal-shape",
            format!(
                "adapt takes the adaptation shape, found extra field(s) {} \u{2014} criterion \
                 content never rides a proposal (discarded requirements are refused)",
                sorted_repr(extra)
            ),
        );
    }
    let last_seq = events.iter().map(seq_of).max().unwrap_or(0);
    let last_ts = events.iter().filter_map(|e| e.str_at("ts")).filter(|t| !t.is_empty()).max();
    let mut event: Map = prop
        .iter()
        .filter(|(k, _)| k.as_str() != "type")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let generation = validate::contract_generation(contract).unwrap_or(validate::Generation::V6);
    event.insert("schema".to_owned(), generation.journal_url().into());
    event.insert("type".to_owned(), "adaptation".into());
    // A journal already at `i64::MAX` leaves no seq: the proposal fails validation by name.
    event.insert("seq".to_owned(), last_seq.checked_add(1).map_or(Value::Null, Value::from));
    event.insert("ts".to_owned(), last_ts.unwrap_or("1970-01-01T00:00:00Z").into());
    event.insert("plan".to_owned(), contract.get("plan").cloned().unwrap_or(Value::Null));
    event.insert("contract_id".to_owned(), contract_id.into());
    event.insert(
        "actor".to_owned(),
        Value::object([("kind", "agent".into()), ("identity", SCHEDULER_IDENTITY.into())]),
    );
    event.insert("decision".to_owned(), "authorized".into());
    let event = Value::Object(event);
    if let Some(first) = validate::journal_event_errors(&event, Some(contract)).into_iter().next() {
        return refuse(
            "adaptation-shape",
            format!(
                "the proposal is not a valid adaptation event: {first} (closed section-3.3 \
                 enumeration; an adaptation never carries criterion content \u{2014} weakening \
                 acceptance is an amendment with recorded authority)"
            ),
        );
    }
    let affected: BTreeSet<&str> = str_list(prop.get("affected_tasks")).into_iter().collect();
    let max_adapt = scheduling_limit(contract, "max_adaptations_per_task", DEFAULT_MAX_ADAPTATIONS);
    for t in &affected {
        let count = authorized_adaptations(events)
            .filter(|e| str_list(e.get("affected_tasks")).contains(t))
            .count();
        if i64::try_from(count).unwrap_or(i64::MAX) >= max_adapt {
            return refuse(
                "adaptation-cap",
                format!(
                    "task {t} already carries {count} authorized adaptation(s); the \
                     contract-declared cap is {max_adapt} (bounded adaptation \u{2014} loops \
                     terminate)"
                ),
            );
        }
    }
    if event.str_at("kind") == Some("retry") {
        let criteria: BTreeSet<&str> =
            str_list(prop.get("affected_criteria")).into_iter().collect();
        let max_retries = scheduling_limit(contract, "max_retries_per_gate", DEFAULT_MAX_RETRIES);
        let shares =
            |e: &Value| str_list(e.get("affected_criteria")).iter().any(|c| criteria.contains(c));
        let retries = authorized_adaptations(events)
            .filter(|e| e.str_at("kind") == Some("retry") && shares(e))
            .count();
        if i64::try_from(retries).unwrap_or(i64::MAX) >= max_retries {
            return refuse(
                "retry-cap",
                format!(
                    "{retries} authorized retry adaptation(s) already touch these criteria; \
                     max_retries_per_gate is {max_retries}"
                ),
            );
        }
        let last_attempt = events
            .iter()
            .filter(|e| {
                type_is(e, "gate_run")
                    && e.str_at("criterion").is_some_and(|c| criteria.contains(c))
            })
            .map(seq_of)
            .max()
            .unwrap_or(0);
        let trigger = prop.get("trigger_observation").and_then(Value::as_i64).unwrap_or(0);
        if last_attempt != 0 && trigger <= last_attempt {
            return refuse(
                "blind-retry",
                format!(
                    "the trigger observation (seq {trigger}) does not postdate the last \
                     attempt on these criteria (seq {last_attempt}) \u{2014} a retry needs a new \
                     observation explaining what changed; no-progress retries are refused"
                ),
            );
        }
    }
    let checks = [
        "contract",
        "approval",
        "invariants",
        "envelope",
        "adaptation-shape",
        "caps",
        "blind-retry",
    ];
    Value::object([
        ("decision", "accept".into()),
        ("type", "adapt".into()),
        ("event", event),
        ("checks", Value::Array(checks.into_iter().map(Value::from).collect())),
    ])
}
