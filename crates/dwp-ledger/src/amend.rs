//! `ledger amend`: the next contract revision through a pending file, the `amendment` event
//! naming the criteria whose evidence it invalidates, a new `approval`, then the live-contract
//! switch. Every step is resumable; a finished amendment re-run has nothing to do.

use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::path::Path;
use std::time::SystemTime;

use canonical_json::{Map, Value};
use dwp::contract::{contract_id, revision_content_bytes};
use dwp::refusal::{Rule, Stage};
use dwp::validate::{self, contract_generation};

use crate::error::{LedgerError, Result, fail, io_fail};
use crate::files::{read_json_named, refuse_symlink, write_pretty};
use crate::plan::{Plan, plan_markdown_digest};
use crate::refusal::refusal;
use crate::values::{actor, obj, s};
use crate::writer::Writer;

/// An amendment request (the human marker is obtained by the caller).
#[derive(Clone, Debug)]
pub struct AmendRequest {
    /// The revised contract draft.
    pub draft: Value,
    /// The human authority.
    pub authority: String,
    /// The reason.
    pub note: String,
    /// The human authority marker (`--human-note` digest or TTY confirmation).
    pub marker: String,
    /// The approval mechanism (default: the live contract's).
    pub mechanism: Option<String>,
}

/// What `amend` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AmendOutcome {
    /// The live contract now is revision `revision`.
    Amended {
        /// The new revision.
        revision: i64,
        /// The new contract id.
        contract_id: String,
        /// Criteria whose earlier evidence no longer counts.
        invalidated: Vec<String>,
    },
    /// The live contract already is the draft.
    Nothing {
        /// The live revision.
        revision: i64,
        /// The live contract id.
        contract_id: String,
    },
}

fn id12(id: &str) -> &str {
    dwp::py::head(id, 12)
}

fn criteria_of(contract: &Value) -> Vec<(String, &Value)> {
    contract
        .pointer("/acceptance/criteria")
        .and_then(Value::as_array)
        .unwrap_or(&[])
        .iter()
        .filter_map(|c| c.get("id").and_then(Value::as_str).map(|id| (id.to_owned(), c)))
        .collect()
}

/// `{criterion: {(task, check)}}` over the gate intents.
fn intents_of(contract: &Value) -> HashMap<String, BTreeSet<(String, String)>> {
    let mut out: HashMap<String, BTreeSet<(String, String)>> = HashMap::new();
    for task in contract.get("tasks").and_then(Value::as_array).unwrap_or(&[]) {
        let tid = task.get("id").and_then(Value::as_str).unwrap_or("");
        for intent in task.get("gate_intent").and_then(Value::as_array).unwrap_or(&[]) {
            let (Some(c), Some(check)) = (
                intent.get("criterion").and_then(Value::as_str),
                intent.get("check").and_then(Value::as_str),
            ) else {
                continue;
            };
            out.entry(c.to_owned()).or_default().insert((tid.to_owned(), check.to_owned()));
        }
    }
    out
}

/// The criteria whose definition or gate intent differs, in (old, then new) contract order.
pub fn changed_criteria(old: &Value, new: &Value) -> Vec<String> {
    let old_c = criteria_of(old);
    let new_c = criteria_of(new);
    let (old_i, new_i) = (intents_of(old), intents_of(new));
    let mut ids: Vec<String> = old_c.iter().map(|(id, _)| id.clone()).collect();
    for (id, _) in &new_c {
        if !ids.contains(id) {
            ids.push(id.clone());
        }
    }
    ids.into_iter()
        .filter(|id| {
            let a = old_c.iter().find(|(i, _)| i == id).map(|(_, c)| *c);
            let b = new_c.iter().find(|(i, _)| i == id).map(|(_, c)| *c);
            a != b || old_i.get(id) != new_i.get(id)
        })
        .collect()
}

fn statement_of(contract: &Value, id: &str, missing: &str) -> String {
    criteria_of(contract)
        .into_iter()
        .find(|(i, _)| i == id)
        .map(|(_, c)| {
            format!("{id}: {}", c.get("observable_check").and_then(Value::as_str).unwrap_or(""))
        })
        .unwrap_or_else(|| format!("{id}: {missing}"))
}

fn clip(text: String, max: usize) -> String {
    if text.chars().count() <= max { text } else { text.chars().take(max).collect() }
}

fn affected_tasks(old: &Value, new: &Value, changed: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for contract in [old, new] {
        for task in contract.get("tasks").and_then(Value::as_array).unwrap_or(&[]) {
            let Some(tid) = task.get("id").and_then(Value::as_str) else { continue };
            let hit = dwp::projection::intent_criteria(task)
                .iter()
                .any(|c| c.as_str().is_some_and(|c| changed.iter().any(|x| x == c)));
            if hit && !out.iter().any(|t| t == tid) {
                out.push(tid.to_owned());
            }
        }
    }
    out
}

/// Whether `contracts/` holds any revision file (a `.json` not hidden, so not a pending draft).
fn holds_a_revision(dir: &Path) -> Result<bool> {
    Ok(fs::read_dir(dir).map_err(|e| io_fail(dir, e))?.flatten().any(|e| {
        let n = e.file_name();
        let n = n.to_string_lossy();
        n.ends_with(".json") && !n.starts_with('.')
    }))
}

/// Every recorded revision, keyed by id (for chain checking).
fn chain_of(plan: &Plan) -> Result<HashMap<String, Value>> {
    let mut chain = HashMap::new();
    let dir = plan.dir.join("contracts");
    let mut paths = vec![plan.dir.join("contract.json")];
    if dir.is_dir() {
        for e in fs::read_dir(&dir).map_err(|e| io_fail(&dir, e))?.flatten() {
            let p = e.path();
            if p.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                n.ends_with(".json") && !n.starts_with('.')
            }) {
                paths.push(p);
            }
        }
    }
    for p in paths.into_iter().filter(|p| p.is_file()) {
        let doc = read_json_named(&p)?;
        let id = contract_id(&doc).map_err(|e| fail(e.to_string()))?;
        chain.insert(id, doc);
    }
    Ok(chain)
}

/// Runs (or resumes) an amendment of the plan at `plan_dir`.
///
/// # Errors
/// The upstream refusals (each recorded as a `refusal` event at stage `authorize`, nothing
/// else written), lock, journal and I/O failures.
pub fn amend(plan_dir: &Path, req: &AmendRequest, now: SystemTime) -> Result<AmendOutcome> {
    match amend_checked(plan_dir, req, now) {
        // Every refusal of the draft comes before the writer is opened (the amendment's own
        // steps follow it); record it under the plan lock, then report it unchanged.
        Err(LedgerError::Failed(message))
            if message.starts_with("amend refused") || message.starts_with("mechanism ") =>
        {
            let err = LedgerError::Failed(message.clone());
            let Ok(plan) = Plan::load(plan_dir) else { return Err(err) };
            let mut writer = Writer::open(plan, false, now)?;
            let draft = canonical_json::to_python_compact(&req.draft)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            let r = refusal(
                "ledger amend",
                Stage::Authorize,
                Rule::Amendment,
                "amendment",
                &draft,
                &message,
            );
            let err = writer.refused(&r, err);
            writer.close()?;
            Err(err)
        }
        other => other,
    }
}

fn amend_checked(plan_dir: &Path, req: &AmendRequest, now: SystemTime) -> Result<AmendOutcome> {
    let plan = Plan::load(plan_dir)?;
    let live = plan.contract.clone();
    let live_rev = live.get("revision").and_then(Value::as_i64).unwrap_or(1);
    let Some(draft_obj) = req.draft.as_object() else {
        return Err(fail("amend refused: the draft must be a JSON object"));
    };
    let mut draft: Map = draft_obj.clone();
    draft.remove("contract_id");
    // Re-running a finished amendment: the live contract already is this draft.
    let same_substance = |a: &Value, b: &Value| matches!((revision_content_bytes(a), revision_content_bytes(b)), (Ok(x), Ok(y)) if x == y);
    if same_substance(&Value::Object(draft.clone()), &live) {
        return Ok(AmendOutcome::Nothing { revision: live_rev, contract_id: plan.contract_id });
    }
    let next = live_rev + 1;
    let rev = draft.get("revision").and_then(Value::as_i64);
    let parent = draft.get("parent_contract_id").and_then(Value::as_str);
    let live_parent = live.get("parent_contract_id").and_then(Value::as_str);
    let rev_ok = rev.is_none_or(|r| r == next || r == live_rev);
    let parent_ok = parent.is_none_or(|p| p == plan.contract_id || Some(p) == live_parent);
    if !rev_ok || !parent_ok {
        return Err(fail(format!(
            "amend refused: the draft must be revision {next} with parent {} (or omit both to \
             have them derived) - got revision {}, parent {}",
            id12(&plan.contract_id),
            rev.map_or_else(|| "None".to_owned(), |r| r.to_string()),
            parent.map_or("None", id12)
        )));
    }
    let generation = plan.generation;
    if draft.get("plan") != live.get("plan")
        || contract_generation(&Value::Object(draft.clone())) != Some(generation)
    {
        return Err(fail(format!(
            "amend refused: an amendment keeps the plan and its generation ({})",
            generation.label()
        )));
    }
    draft.insert("revision".to_owned(), next.into());
    draft.insert("parent_contract_id".to_owned(), s(&plan.contract_id));
    let draft = Value::Object(draft);
    let chain = chain_of(&plan)?;
    let mut warnings = Vec::new();
    let errors = {
        let e = validate::contract_errors(&draft, Some(&chain));
        if !e.is_empty() {
            e
        } else {
            let c = validate::closure_errors(&draft, &mut warnings);
            if c.is_empty() { validate::gate_command_errors(&draft) } else { c }
        }
    };
    if let Some(first) = errors.into_iter().next() {
        return Err(fail(format!("amend refused: contract invalid: {first}")));
    }
    let new_id = contract_id(&draft).map_err(|e| fail(e.to_string()))?;
    let mut stamped = draft.clone();
    if let Some(o) = stamped.as_object_mut() {
        o.insert("contract_id".to_owned(), s(&new_id));
    }
    let contracts = plan.dir.join("contracts");
    refuse_symlink(&contracts)?;
    let pending = contracts.join(format!(".contract.r{next}.json.pending"));
    if pending.is_file() {
        let staged = read_json_named(&pending)?;
        let staged_id = staged.get("contract_id").and_then(Value::as_str).unwrap_or("");
        if staged_id != new_id {
            return Err(fail(format!(
                "amend refused: a different revision {next} is pending ({}) - resume it with \
                 its own draft first",
                id12(staged_id)
            )));
        }
    }
    let changed = changed_criteria(&live, &draft);
    let mechanism = req
        .mechanism
        .clone()
        .or_else(|| {
            live.pointer("/authorization/mechanism").and_then(Value::as_str).map(str::to_owned)
        })
        .unwrap_or_else(|| "plan_authorship".to_owned());
    if !validate::MECHANISMS.contains(&mechanism.as_str()) {
        return Err(fail(format!(
            "mechanism {} outside {} (D3-2: exactly two exist)",
            dwp::py::repr_str(&mechanism),
            validate::MECHANISMS.join(" and ")
        )));
    }
    let digest = plan_markdown_digest(&plan.dir)?;
    // Step 1: the chain exists, starting with revision 1 byte for byte. A crash may have left
    // the folder without any revision in it: the copy is then still owed (and atomic, so a
    // second crash never leaves half a revision 1).
    fs::create_dir_all(&contracts).map_err(|e| io_fail(&contracts, e))?;
    let single = plan.dir.join("contract.json");
    let r1 = contracts.join("contract.r1.json");
    if !r1.is_file() && single.is_file() && !holds_a_revision(&contracts)? {
        let bytes = fs::read(&single).map_err(|e| io_fail(&single, e))?;
        journal::atomic_replace(&r1, &bytes).map_err(|e| io_fail(&r1, e))?;
    }
    // Step 2: stage the stamped draft.
    if !pending.is_file() {
        write_pretty(&pending, &stamped)?;
    }
    let mut writer = Writer::open(plan, false, now)?;
    let tag = format!("amendment to revision {next} contract {new_id}");
    let human = actor("human", &req.authority);
    // Step 3: the amendment.
    let amended = writer.events.iter().any(|e| {
        e.get("type").and_then(Value::as_str) == Some("amendment")
            && e.get("note").and_then(Value::as_str).is_some_and(|n| n.contains(&tag))
    });
    if !amended {
        let (original, revised) = if changed.is_empty() {
            ("no criterion changed".to_owned(), "no criterion changed".to_owned())
        } else {
            (
                changed
                    .iter()
                    .map(|c| statement_of(&live, c, "absent"))
                    .collect::<Vec<_>>()
                    .join("; "),
                changed
                    .iter()
                    .map(|c| statement_of(&draft, c, "removed"))
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        };
        let list = |v: &[String]| Value::Array(v.iter().map(|x| s(x)).collect());
        let payload = obj([
            ("original_criterion", s(&clip(original, 2000))),
            ("observed_finding", s(&req.note)),
            ("disposition", s("revised")),
            ("revised_criterion", s(&clip(revised, 2000))),
            ("reason", s(&req.note)),
            ("authority", s(&req.authority)),
            ("affected_tasks", list(&affected_tasks(&live, &draft, &changed))),
            ("evidence_invalidated", list(&changed)),
            ("evidence_preserved", Value::Array(Vec::new())),
        ]);
        let note = clip(format!("{tag} | {}", req.marker), 500);
        writer.append_raw("amendment", payload, human.clone(), Some(&note), None, None)?;
    }
    // Step 4: the approval of the new contract.
    let approved = writer.events.iter().any(|e| {
        e.get("type").and_then(Value::as_str) == Some("approval")
            && e.get("contract_id").and_then(Value::as_str) == Some(new_id.as_str())
    });
    if !approved {
        let payload = obj([
            ("authority", s(&req.authority)),
            ("mechanism", s(&mechanism)),
            ("plan_digest", s(&digest)),
        ]);
        let note = clip(format!("approves revision {next} ({}) | {}", req.note, req.marker), 500);
        writer.append_with("approval", payload, human, Some(&note), None, None, Some(&new_id))?;
    }
    // Step 5: the live-contract switch.
    let live_path = writer.plan.dir.join("contracts").join(format!("contract.r{next}.json"));
    fs::rename(&pending, &live_path).map_err(|e| io_fail(&live_path, e))?;
    writer.close()?;
    Ok(AmendOutcome::Amended { revision: next, contract_id: new_id, invalidated: changed })
}
