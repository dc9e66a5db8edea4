//! `dwp ledger --plan DIR delegate launch|observe|collect|cancel --task T [--json OBJ]
//! [--caps JSON]` (v7 delegation). Refusals are recorded and exit 5 with
//! `REFUSED: delegation refused: …`.

// Output never panics on a closed pipe (`dwp … | head`): a failed write is ignored.
macro_rules! println {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

use canonical_json::Value;
use clap::{Args, ValueEnum};
use dwp_ledger::delegate::{AbilityEnv, DelegateError, LaunchRequest, effective_abilities};
use dwp_ledger::{self as plan, LedgerError, Plan, Writer};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Action {
    Launch,
    Observe,
    Collect,
    Cancel,
}

#[derive(Debug, Args)]
pub(crate) struct DelegateArgs {
    /// launch | observe | collect | cancel
    #[arg(value_enum)]
    action: Action,
    /// The task
    #[arg(long)]
    task: Option<String>,
    /// launch: {via, transport, worktree, prompt|prompt_digest, kind?, profile?, target?,
    /// delegation_id?}; collect: {delegation_id, state, result_path?}; cancel: {delegation_id}
    #[arg(long)]
    json: Option<String>,
    /// Declared host abilities (JSON object)
    #[arg(long, default_value = "{}")]
    caps: String,
}

fn failed(m: impl std::fmt::Display) -> LedgerError {
    LedgerError::Failed(m.to_string())
}

pub(crate) fn run(
    plan_arg: &Path,
    force: bool,
    args: DelegateArgs,
) -> Result<ExitCode, LedgerError> {
    let Some(task) = args.task else {
        println!("delegate requires --task");
        return Ok(ExitCode::from(2));
    };
    let dir = plan::find_plan_dir(plan_arg)?;
    if let Action::Observe = args.action {
        let loaded = Plan::load(&dir)?;
        let events = plan::records::load_events(&loaded)?;
        let latest = dwp::projection::delegations(&events, Some(&task));
        if latest.is_empty() {
            println!("no delegations for {task}");
        }
        for (id, e) in latest {
            println!(
                "{id} {} via {} (seq {})",
                dwp::py::str_opt(e.get("state")),
                dwp::py::str_opt(e.get("via")),
                dwp::projection::seq_of(e)
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let spec = match args.json.as_deref().map(|j| canonical_json::parse(j.as_bytes())) {
        Some(Ok(Value::Object(m))) => m,
        Some(Ok(_)) | None => {
            println!("delegate {:?} requires --json OBJECT", args.action);
            return Ok(ExitCode::from(2));
        }
        Some(Err(e)) => return Err(failed(format!("delegate --json is not valid JSON: {e}"))),
    };
    let declared =
        canonical_json::parse(args.caps.as_bytes()).map_err(|e| failed(format!("--caps: {e}")))?;
    let caps = dwp::resources::host_capabilities(&declared).map_err(failed)?;
    let loaded = Plan::load(&dir)?;
    let env = AbilityEnv::for_repo(&loaded.repo_root());
    let mut writer = Writer::open(loaded, force, SystemTime::now())?;
    let id = spec.get("delegation_id").and_then(Value::as_str).unwrap_or("").to_owned();
    let result = match args.action {
        Action::Launch => {
            let effective = effective_abilities(&caps, &env);
            for w in &effective.warnings {
                eprintln!("WARNING: {w}");
            }
            writer.delegate_launch(&LaunchRequest {
                task: task.clone(),
                spec,
                effective,
                now: SystemTime::now(),
            })
        }
        Action::Collect => {
            let state = spec.get("state").and_then(Value::as_str).unwrap_or("");
            if !["completed", "failed"].contains(&state) {
                writer.close()?;
                println!("delegate collect requires state completed|failed");
                return Ok(ExitCode::from(2));
            }
            let rp = spec.get("result_path").and_then(Value::as_str);
            writer.delegate_finish(&task, &id, state, rp)
        }
        Action::Cancel => writer.delegate_finish(&task, &id, "cancelled", None),
        Action::Observe => return Ok(ExitCode::SUCCESS),
    };
    writer.close()?;
    match result {
        Ok(event) => {
            println!(
                "OK: delegation {} {} at seq {}",
                dwp::py::str_opt(event.get("delegation_id")),
                dwp::py::str_opt(event.get("state")),
                dwp::projection::seq_of(&event)
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(DelegateError::Refused(m)) => {
            eprintln!("REFUSED: delegation refused: {m}");
            Ok(ExitCode::from(5))
        }
        Err(DelegateError::Ledger(e)) => Err(e),
        Err(e) => Err(failed(e)),
    }
}
