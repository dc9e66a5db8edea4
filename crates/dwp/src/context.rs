//! The per-task context manifest (`dwp context`): what an executing agent reads instead of
//! replaying the journal as conversation. Pure over (contract, events, digests).
//!
//! Sections (all mandatory): `plan`, `task`, `freshness`, `criteria`, `invariants`,
//! `next_action` (the first rung of a fixed ladder that applies) and `dead_ends` (the latest
//! failed runs and refusals of the task, at most [`DEAD_END_LIMIT`]).

use canonical_json::{Map, Value};

use crate::outcomes::closure;
use crate::projection::{self, seq_of};

/// The manifest schema tag.
pub const CONTEXT_TYPE: &str = "dwp-context-manifest";
/// At most this many dead ends are carried.
pub const DEAD_END_LIMIT: usize = 50;

/// The next action for a task: the first rung of the ladder that applies.
///
/// 1. no approval cites the live contract → `approve`;
/// 2. a prerequisite is incomplete → `wait`;
/// 3. no `task_start` → `start`;
/// 4. a declared invariant is unverified for this attempt → `evaluate-invariant`;
/// 5. an open criterion → `gate` (with its declared check);
/// 6. otherwise → `complete`.
pub fn next_action(contract: &Value, contract_id: &str, events: &[Value], task: &Value) -> Value {
    let id = task.str_at("id").unwrap_or("");
    let approved = events.iter().any(|e| {
        e.str_at("type") == Some("approval") && e.str_at("contract_id") == Some(contract_id)
    });
    if !approved {
        return Value::object([
            ("action", "approve".into()),
            ("detail", "no approval cites the live contract".into()),
        ]);
    }
    for pre in task.get("prerequisites").and_then(Value::as_array).unwrap_or(&[]) {
        if let Some(pre) = pre.as_str()
            && !projection::task_complete(contract, events, pre)
        {
            return Value::object([
                ("action", "wait".into()),
                ("detail", format!("prerequisite {pre} is incomplete").into()),
            ]);
        }
    }
    let start = projection::task_start_seq_of(events, id);
    if start.is_none() {
        return Value::object([
            ("action", "start".into()),
            ("detail", format!("dwp ledger start --task {id}").into()),
        ]);
    }
    if let Some(f) = projection::invariant_findings(contract, events, start).into_iter().next() {
        return Value::object([("action", "evaluate-invariant".into()), ("detail", f.into())]);
    }
    let states = projection::criterion_states(contract, events, id).unwrap_or_default();
    for intent in task.get("gate_intent").and_then(Value::as_array).unwrap_or(&[]) {
        let cid = intent.get("criterion");
        let open = states.iter().any(|s| {
            s.get("criterion") == cid && s.get("satisfied").and_then(Value::as_bool) != Some(true)
        });
        if open {
            return Value::object([
                ("action", "gate".into()),
                ("criterion", cid.cloned().unwrap_or(Value::Null)),
                ("check", intent.get("check").cloned().unwrap_or(Value::Null)),
                (
                    "detail",
                    "run the declared check through the gate runner; stale evidence is run again, never reused"
                        .into(),
                ),
            ]);
        }
    }
    Value::object([
        ("action", "complete".into()),
        ("detail", format!("dwp ledger complete --task {id}").into()),
    ])
}

/// The latest failed gate runs, failing control pairs and refusals of a task (oldest first).
pub fn dead_ends(events: &[Value], task: &str, criteria: &[&str]) -> Vec<Value> {
    let mut out: Vec<Value> = events
        .iter()
        .filter_map(|e| {
            let etype = e.str_at("type")?;
            let summary = match etype {
                "gate_run"
                    if e.str_at("task") == Some(task)
                        && e.get("exit_code").and_then(Value::as_i64) != Some(0) =>
                {
                    format!(
                        "{} exited {} on {}",
                        e.str_at("command").unwrap_or(""),
                        crate::py::str_opt(e.get("exit_code")),
                        e.str_at("criterion").unwrap_or("")
                    )
                }
                "control_pair"
                    if e.str_at("criterion").is_some_and(|c| criteria.contains(&c))
                        && e.str_at("verdict") != Some("discriminating") =>
                {
                    format!(
                        "control pair on {} was {}",
                        e.str_at("criterion").unwrap_or(""),
                        e.str_at("verdict").unwrap_or("")
                    )
                }
                "refusal" if e.str_at("subject").is_some_and(|s| s.contains(task)) => format!(
                    "refused at {}: {}",
                    e.str_at("stage").unwrap_or(""),
                    e.str_at("reason").unwrap_or("")
                ),
                _ => return None,
            };
            Some(Value::object([
                ("seq", seq_of(e).into()),
                ("type", etype.into()),
                ("summary", summary.chars().take(300).collect::<String>().into()),
                ("evidence_path", e.get("evidence_path").cloned().unwrap_or(Value::Null)),
            ]))
        })
        .collect();
    let skip = out.len().saturating_sub(DEAD_END_LIMIT);
    out.drain(..skip);
    out
}

/// The context manifest of one task, or `None` for a task not in the contract.
pub fn manifest(
    contract: &Value,
    contract_id: &str,
    events: &[Value],
    task_id: &str,
    journal_sha256: Option<&str>,
) -> Option<Value> {
    let task = projection::find_task(contract, task_id)?;
    let crit_ids: Vec<&str> =
        projection::intent_criteria(task).iter().filter_map(|c| c.as_str()).collect();
    let closed = closure(contract, events);
    let criteria: Vec<Value> = closed
        .get("criteria")
        .and_then(Value::as_array)
        .unwrap_or(&[])
        .iter()
        .filter(|c| c.str_at("criterion").is_some_and(|id| crit_ids.contains(&id)))
        .cloned()
        .collect();
    let start = projection::task_start_seq_of(events, task_id);
    let mut doc = Map::new();
    for (k, v) in [
        ("type", Value::from(CONTEXT_TYPE)),
        (
            "plan",
            Value::object([
                ("plan", contract.get("plan").cloned().unwrap_or(Value::Null)),
                ("contract_id", contract_id.into()),
                ("revision", contract.get("revision").cloned().unwrap_or_else(|| 1i64.into())),
                ("outcome", contract.pointer("/outcome/statement").cloned().unwrap_or(Value::Null)),
            ]),
        ),
        (
            "task",
            Value::object([
                ("id", task_id.into()),
                ("title", task.get("title").cloned().unwrap_or(Value::Null)),
                ("status", projection::task_status(contract, events, task_id).into()),
                ("started_seq", start.map_or(Value::Null, Value::from)),
                ("touched_surface", task.get("touched_surface").cloned().unwrap_or(Value::Null)),
                ("prerequisites", task.get("prerequisites").cloned().unwrap_or(Value::Null)),
            ]),
        ),
        (
            "freshness",
            Value::object([
                ("last_seq", events.iter().map(seq_of).max().unwrap_or(0).into()),
                ("journal_sha256", journal_sha256.map_or(Value::Null, Value::from)),
            ]),
        ),
        ("criteria", Value::Array(criteria)),
        (
            "invariants",
            Value::Array(
                projection::invariant_findings(contract, events, start)
                    .into_iter()
                    .map(Value::from)
                    .collect(),
            ),
        ),
        ("next_action", next_action(contract, contract_id, events, task)),
        ("dead_ends", Value::Array(dead_ends(events, task_id, &crit_ids))),
    ] {
        doc.insert(k.to_owned(), v);
    }
    Some(Value::Object(doc))
}

/// True when a manifest was written from the journal as it is now.
pub fn is_fresh(manifest: &Value, last_seq: i64, journal_sha256: Option<&str>) -> bool {
    manifest.pointer("/freshness/last_seq").and_then(Value::as_i64) == Some(last_seq)
        && manifest.pointer("/freshness/journal_sha256").and_then(Value::as_str) == journal_sha256
}
