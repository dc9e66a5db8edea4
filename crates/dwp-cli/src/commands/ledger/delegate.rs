//! `dwp ledger --plan DIR delegate launch|observe|collect|cancel --task T [--json OBJ]
//! [--caps JSON]` (v7 delegation). Refusals are recorded and exit 5 with
//! `REFUSED: delegation refused: …`.

use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

use crate::exit;
use canonical_json::Value;
use clap::Args;
use dwp_ledger::delegate::{AbilityEnv, DelegateError, LaunchRequest};
use dwp_ledger::{self as plan, LedgerError, Plan, Writer};

#[derive(Debug, Args)]
pub(crate) struct DelegateArgs {
    /// launch | observe | collect | cancel
    op: Option<String>,
    /// The task
    #[arg(long)]
    task: Option<String>,
    /// launch: {via, transport, worktree?, prompt_digest?, kind?, profile?, target?,
    /// delegation_id?, note?}; collect: {delegation_id, state, result_path?, note?};
    /// cancel: {delegation_id, note?}
    #[arg(long)]
    json: Option<String>,
    /// Declared host abilities (JSON object)
    #[arg(long, default_value = "{}")]
    caps: String,
    /// Actor kind of the delegation event
    #[arg(long = "actor-kind", default_value = "agent")]
    actor_kind: String,
    /// Actor identity of the delegation event
    #[arg(long = "actor-identity", default_value = "caller")]
    actor_identity: String,
}

fn failed(m: impl std::fmt::Display) -> LedgerError {
    LedgerError::Failed(m.to_string())
}

/// Python's `json.dumps(v, sort_keys=True, indent=2)` for the observe listing.
fn observe_listing(rows: Vec<Value>) -> Result<String, LedgerError> {
    let bytes = canonical_json::to_python(&Value::Array(rows), canonical_json::PyFormat::PRETTY)
        .map_err(failed)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

pub(crate) fn run(
    plan_arg: &Path,
    force: bool,
    args: DelegateArgs,
) -> Result<ExitCode, LedgerError> {
    let op = args.op.as_deref().unwrap_or("");
    if !["launch", "observe", "collect", "cancel"].contains(&op) {
        outln!("delegate requires launch|observe|collect|cancel");
        return Ok(ExitCode::from(exit::USAGE));
    }
    if op == "observe" {
        let dir = plan::find_plan_dir(plan_arg)?;
        let loaded = Plan::load(&dir)?;
        let events = plan::records::load_events(&loaded)?;
        let task = args.task.as_deref().filter(|t| !t.is_empty());
        let mut order: Vec<String> = Vec::new();
        let mut latest: std::collections::HashMap<String, Value> = std::collections::HashMap::new();
        for e in &events {
            if e.get("type").and_then(Value::as_str) != Some("delegation") {
                continue;
            }
            if task.is_some() && e.get("task").and_then(Value::as_str) != task {
                continue;
            }
            let id =
                canonical_json::to_python_compact(e.get("delegation_id").unwrap_or(&Value::Null))
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .map_err(failed)?;
            if !latest.contains_key(&id) {
                order.push(id.clone());
            }
            latest.insert(id, e.clone());
        }
        let rows: Vec<Value> = order
            .iter()
            .filter_map(|id| latest.get(id))
            .map(|e| {
                let mut m = canonical_json::Map::new();
                for k in
                    ["delegation_id", "task", "state", "transport", "via", "seq", "result_path"]
                {
                    m.insert(k.to_owned(), e.get(k).cloned().unwrap_or(Value::Null));
                }
                Value::Object(m)
            })
            .collect();
        outln!("{}", observe_listing(rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    let Some(task) = args.task.filter(|t| !t.is_empty()) else {
        outln!("delegate {op} requires --task");
        return Ok(ExitCode::from(exit::USAGE));
    };
    let dir = plan::find_plan_dir(plan_arg)?;
    let loaded = Plan::load(&dir)?;
    let env = AbilityEnv::for_repo(&loaded.repo_root());
    let mut writer = Writer::open(loaded, force, SystemTime::now())?;
    let spec = match canonical_json::parse(args.json.as_deref().unwrap_or("{}").as_bytes()) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(failed("delegate --json must be a JSON object")),
        Err(e) => Err(failed(format!("delegate --json is not valid JSON: {e}"))),
    };
    let spec = match spec {
        Ok(m) => m,
        Err(e) => {
            writer.close()?;
            return Err(e);
        }
    };
    let caps = canonical_json::parse(args.caps.as_bytes())
        .map_err(|e| failed(format!("--caps: {e}")))
        .and_then(|d| dwp::resources::host_capabilities(&d).map_err(failed));
    let caps = match caps {
        Ok(c) => c,
        Err(e) => {
            writer.close()?;
            return Err(e);
        }
    };
    let actor = plan::actor(&args.actor_kind, &args.actor_identity);
    let result = match op {
        "launch" => writer.delegate_launch(&LaunchRequest {
            task: task.clone(),
            spec,
            caps,
            env,
            actor,
            now: SystemTime::now(),
        }),
        _ => writer.delegate_finish(&task, &spec, op == "cancel", actor),
    };
    writer.close()?;
    match result {
        Ok(event) => {
            outln!(
                "OK: delegation {} {} at seq {} (asserted until a gate observes the result)",
                dwp::py::str_opt(event.get("delegation_id")),
                dwp::py::str_opt(event.get("state")),
                dwp::projection::seq_of(&event)
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(DelegateError::Refused(m)) => {
            outln!("REFUSED: delegation refused: {m}");
            Ok(ExitCode::from(exit::DELEGATION_REFUSED))
        }
        Err(DelegateError::Ledger(e)) => Err(e),
        Err(e) => Err(failed(e)),
    }
}
