//! What a gate admits (upstream `ledger.py gate` and `signoff` preconditions).
//!
//! A gate run is admitted only for a criterion its task declares, inside a started task
//! attempt, with a command whose class the contract allows; a human sign-off only for a
//! criterion that accepts asserted evidence, by a named authority, bound to the task that owns
//! the criterion. Running the command, resolving the evidence file and writing the records are
//! `dwp-ledger`'s part. Each refusal is the upstream text.

use canonical_json::Value;

use crate::projection;
use crate::py::repr_str;

/// The command a human sign-off records.
pub const SIGNOFF_COMMAND: &str = "signoff (asserted, not executed)";

/// Admits a gate run of `command` (as recorded: argv joined with spaces) for `criterion` of
/// task `task_id` (`task` is its contract entry; `started`: the task has a `task_start`).
/// Returns the admitted criterion.
///
/// # Errors
/// The upstream refusal text (nothing is recorded for it).
pub fn admit<'a>(
    contract: &Value,
    task_id: &str,
    task: &Value,
    criterion: Option<&'a str>,
    started: bool,
    joined: &str,
) -> Result<&'a str, String> {
    let intents: Vec<String> = projection::intent_criteria(task)
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    let Some(criterion) = criterion.filter(|c| !c.is_empty()) else {
        return Err(String::from(
            "gate runs require a criterion from the task gate_intent — \"some command exited \
             0\" is not acceptance evidence",
        ));
    };
    if !intents.iter().any(|c| c == criterion) {
        let mut sorted: Vec<String> = intents.iter().map(|c| repr_str(c)).collect();
        sorted.sort();
        return Err(format!(
            "criterion {} is not declared in task {} gate_intent [{}] — the linkage cannot \
             be chosen after the run",
            repr_str(criterion),
            task_id,
            sorted.join(", ")
        ));
    }
    if !started {
        return Err(format!(
            "gate refused for {}: the task has no task_start — observed evidence is only \
             recorded inside a task attempt, never before it",
            task_id
        ));
    }
    let declared: Vec<String> = contract
        .get("scope")
        .and_then(|sc| sc.get("allowed_command_classes"))
        .and_then(Value::as_array)
        .unwrap_or(&[])
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    if declared.is_empty() {
        return Err(String::from(
            "gate refused: contract declared no command classes (empty allowlist is \
             undeclared, not unrestricted)",
        ));
    }
    let head = joined.split_whitespace().next().unwrap_or("").to_owned();
    let base = head.rsplit('/').next().unwrap_or(&head).to_owned();
    if !declared.contains(&base) {
        let mut sorted: Vec<String> = declared.iter().map(|c| repr_str(c)).collect();
        sorted.sort();
        return Err(format!(
            "gate command {} is outside the contract declared command classes [{}]",
            repr_str(&head),
            sorted.join(", ")
        ));
    }
    Ok(criterion)
}

/// The checks of a sign-off before its evidence is resolved: the criterion accepts asserted
/// evidence, the authority is named, an evidence pointer is given. Returns the trimmed
/// authority and the pointer.
///
/// # Errors
/// The upstream refusal text.
pub fn signoff_claim<'a>(
    contract: &Value,
    criterion: &str,
    authority: Option<&str>,
    evidence_path: Option<&'a str>,
) -> Result<(String, &'a str), String> {
    let crit = contract
        .get("acceptance")
        .and_then(|a| a.get("criteria"))
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c.get("id").and_then(Value::as_str) == Some(criterion)))
        .cloned()
        .ok_or_else(|| {
            format!("signoff refused: {} is not a criterion of this contract", repr_str(criterion))
        })?;
    let accepted: Vec<&str> = crit
        .get("accepted_evidence")
        .and_then(Value::as_array)
        .unwrap_or(&[])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if !accepted.contains(&"asserted") {
        return Err(format!(
            "signoff refused: {criterion} accepts only {} - a sign-off is asserted evidence \
             and can never close it; run its gate (ledger.py gate)",
            accepted.join("/")
        ));
    }
    let authority = authority.unwrap_or("").trim().to_owned();
    if authority.is_empty() || authority.chars().count() > 100 {
        return Err(String::from(
            "signoff requires --authority: who signs, as a non-empty name (<= 100 chars)",
        ));
    }
    let Some(evidence_path) = evidence_path.filter(|p| !p.is_empty()) else {
        return Err(String::from(
            "signoff requires --evidence-path: the artifact the sign-off rests on (a review \
             note, an approval record)",
        ));
    };
    Ok((authority, evidence_path))
}

/// The task a sign-off of `criterion` is bound to: `task` if given, else the first task whose
/// `gate_intent` declares the criterion; the task must own the criterion and have started.
///
/// # Errors
/// The upstream refusal text.
pub fn signoff_task(
    contract: &Value,
    events: &[Value],
    criterion: &str,
    task: Option<&str>,
) -> Result<String, String> {
    let owners: Vec<String> = contract
        .get("tasks")
        .and_then(Value::as_array)
        .unwrap_or(&[])
        .iter()
        .filter(|t| {
            t.get("gate_intent").and_then(Value::as_array).is_some_and(|gi| {
                gi.iter().any(|i| i.get("criterion").and_then(Value::as_str) == Some(criterion))
            })
        })
        .filter_map(|t| t.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect();
    if owners.is_empty() {
        return Err(format!(
            "signoff refused: no task gate_intent declares {criterion} - a sign-off is bound \
             to the task that owns the criterion (amend the contract to declare it; until \
             then it closes only by reconciliation with amendment authority)"
        ));
    }
    let task_id = task.map_or_else(|| owners[0].clone(), str::to_owned);
    if !owners.contains(&task_id) {
        return Err(format!(
            "signoff refused: {criterion} is declared by {}, not {task_id}",
            owners.join(", ")
        ));
    }
    if projection::task_start_seq_of(events, &task_id).is_none() {
        return Err(format!(
            "signoff refused: {task_id} has not started - a sign-off counts only inside the \
             task's evidence window (ledger.py start)"
        ));
    }
    Ok(task_id)
}
